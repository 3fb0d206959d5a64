"""Spark with Iceberg's runtime (PySpark 4.1.4 and iceberg-spark-runtime-4.1 1.12.0, in an
environment of their own: hms_proxy/tools/spark_iceberg.py) on both doors of one catalog:
its REST catalog (``type=rest``, the warehouse a ref) and its Thrift interface (``type=hive``,
a port bound to the ref). The issue's scenario: pyiceberg writes through REST on dev while Spark
reads the same table through Thrift on dev; ``hms-proxy merge dev main`` makes the new snapshot
visible on main through both protocols at once; main never saw it before."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from hms_proxy.tools import spark_iceberg
from tests.e2e.rest.conftest import start_rest_server

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def spark_env():
    if shutil.which("java") is None:
        pytest.skip("no java: Spark runs on the JVM")
    try:
        return spark_iceberg.ensure()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"Spark with Iceberg's runtime could not be set up: {exc}")


def rows(result):
    assert "error" not in result, result["error"]
    return result["rows"]


def ids(table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_rest_on_dev_spark_through_thrift_then_merged(spark_env, tmp_path):
    work = tmp_path / "srv"
    first = start_rest_server(work, "--autocommit")
    try:
        main = first.rest("main")
        main.create_namespace("shop")
        data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})
        main.create_table("shop.events", schema=data.schema).append(data)
        first.cli("branch", "create", "dev", "--from", "main")
    finally:
        first.proc.stop()
    server = start_rest_server(work, "--autocommit", "--bind", "0=dev")
    try:
        dev_thrift = f"thrift://127.0.0.1:{server.proc.ref_port('dev')}"
        catalogs = {
            **spark_iceberg.catalog_conf("hv_dev", "hive", dev_thrift),
            **spark_iceberg.catalog_conf("hv_main", "hive", server.thrift_uri),
            **spark_iceberg.catalog_conf("rest_dev", "rest", server.rest_uri, "dev"),
            **spark_iceberg.catalog_conf("rest_main", "rest", server.rest_uri, "main"),
        }
        # pyiceberg writes through REST on dev
        dev = server.rest("dev")
        dev.load_table("shop.events").append(
            pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))
        q = "SELECT id FROM {}.shop.events ORDER BY id"
        got = spark_iceberg.run_sql([
            q.format("hv_dev"),                                   # 0: Thrift on dev
            q.format("hv_main"),                                  # 1: Thrift on main
            q.format("rest_main"),                                # 2: REST on main
            "INSERT INTO rest_dev.shop.events VALUES (4, 'd')",   # 3: Spark writes on dev
            "UPDATE rest_dev.shop.events SET v = 'B' WHERE id = 2",
            "DELETE FROM rest_dev.shop.events WHERE id = 1",
            "ALTER TABLE rest_dev.shop.events ADD COLUMN qty int",
            "MERGE INTO rest_dev.shop.events t USING (SELECT 4 AS id, 'D' AS v, 1 AS qty) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v, qty = s.qty",
            "SELECT id, v, qty FROM hv_dev.shop.events ORDER BY id",  # 8: seen through Thrift
            "CREATE TABLE rest_dev.shop.made USING iceberg AS SELECT id FROM "
            "rest_dev.shop.events",
            "SELECT count(*) FROM hv_dev.shop.made",               # 10
            q.format("hv_main"),                                  # 11: main never saw it
        ], catalogs, workdir=tmp_path)
        assert rows(got[0]) == [[1], [2], [3]]
        assert rows(got[1]) == [[1], [2]] and rows(got[2]) == [[1], [2]]
        for result in got[3:8]:
            rows(result)
        assert rows(got[8]) == [[2, "B", None], [3, "c", None], [4, "D", 1]]
        rows(got[9])
        assert rows(got[10]) == [[3]]
        assert rows(got[11]) == [[1], [2]]
        assert ids(server.rest("main").load_table("shop.events")) == [1, 2]
        server.cli("merge", "dev", "main")
        after = spark_iceberg.run_sql([q.format("hv_main"), q.format("rest_main"),
                                       "SELECT count(*) FROM rest_main.shop.made"],
                                      catalogs, workdir=tmp_path)
        assert rows(after[0]) == [[2], [3], [4]] and rows(after[1]) == [[2], [3], [4]]
        assert rows(after[2]) == [[3]]
        assert ids(server.rest("main").load_table("shop.events")) == [2, 3, 4]
        assert ids(server.hive().load_table("shop.events")) == [2, 3, 4]
    finally:
        server.proc.stop()


def test_spark_optimizer_reads_the_ndv_of_stats_compute(spark_env, tmp_path):
    """Spark's Iceberg source reports the ``ndv`` of the Puffin file ``stats compute`` sets to
    Spark's cost-based optimizer (``spark.sql.cbo.enabled``; Iceberg's
    ``spark.sql.iceberg.report-column-stats``, on by default): an equality filter on a column
    of 13 distinct values over 100 rows is estimated at 100 rows before, at 100/13 after."""
    server = start_rest_server(tmp_path / "srv", "--autocommit")
    try:
        rest = server.rest()
        rest.create_namespace("shop")
        n = 100
        data = pa.table({"id": pa.array(range(n), pa.int64()),
                         "name": pa.array([f"n{i % 13}" for i in range(n)])})
        rest.create_table("shop.items", schema=data.schema).append(data)
        query = ["SET spark.sql.cbo.enabled=true",
                 "EXPLAIN COST SELECT * FROM sx.shop.items WHERE name = 'n1'"]
        conf = spark_iceberg.catalog_conf("sx", "rest", server.rest_uri, "main")

        def filter_estimate() -> str:
            plan = rows(spark_iceberg.run_sql(query, conf)[1])[0][0]
            return next(line for line in plan.splitlines() if "Filter" in line)

        assert "rowCount=100)" in filter_estimate()  # no column statistics yet
        server.cli("stats", "compute", "shop.items", "--metastore", server.thrift_uri,
                   "--no-progress")
        assert "rowCount=8)" in filter_estimate()
    finally:
        server.proc.stop()


def test_spark_on_the_rest_catalog_over_lakefs_branch_merged_by_lakefs(spark_env, tmp_path):
    """Spark through the REST catalog over a real lakeFS (Iceberg's S3FileIO through the S3
    gateway: the client brings the lakeFS keys, /v1/config the rest): writes on main and on a
    branch lakeFS's API made; main sees the branch's rows after lakeFS's own merge only."""
    from tests.e2e.rest.conftest import start_lakefs_rest_server
    from tests.support.lakefs import LakeFSApi
    from tests.support.wait import wait_until

    server = start_lakefs_rest_server(tmp_path / "hms", "sparkrest", "--autocommit")
    lakefs, repo = server.lakefs, server.repo

    def on(name: str, warehouse: str) -> dict:
        return spark_iceberg.catalog_conf(name, "rest", server.rest_uri, warehouse, server.keys)

    try:
        results = spark_iceberg.run_sql([
            "CREATE NAMESPACE lm.lake",
            "CREATE TABLE lm.lake.t (id bigint, v string) USING iceberg",
            "INSERT INTO lm.lake.t VALUES (1, 'a'), (2, 'b')",
            "SELECT id FROM lm.lake.t ORDER BY id"], on("lm", "main"))
        assert rows(results[3]) == [[1], [2]]
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            api.branch("dev", "main")
            results = spark_iceberg.run_sql([
                "INSERT INTO ld.lake.t VALUES (3, 'c')",
                "SELECT id FROM ld.lake.t ORDER BY id",
                "SELECT id FROM lm.lake.t ORDER BY id"], {**on("lm", "main"), **on("ld", "dev")})
            assert rows(results[1]) == [[1], [2], [3]]
            assert rows(results[2]) == [[1], [2]]  # main never saw it
            data = "warehouse/lake.db/t/data"
            assert len(api.data_files("dev", data)) == len(api.data_files("main", data)) + 1
            api.merge("dev", "main")
        # the server sees lakeFS's merge within its staleness bound
        wait_until(lambda: len(server.rest("main").load_table("lake.t").scan().to_arrow()) == 3,
                   what="main after the lakeFS merge")
        results = spark_iceberg.run_sql(["SELECT id FROM lm.lake.t ORDER BY id"],
                                        on("lm", "main"))
        assert rows(results[0]) == [[1], [2], [3]]
    finally:
        server.proc.stop()
