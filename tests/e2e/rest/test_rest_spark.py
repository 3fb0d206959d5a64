"""Spark with Iceberg's runtime (PySpark 4.1.4 and iceberg-spark-runtime-4.1 1.12.0, in an
environment of their own: hms_proxy/tools/spark_iceberg.py) on both doors of one catalog:
its REST catalog (``type=rest``, the warehouse a ref) and its Thrift interface (``type=hive``,
a port bound to the ref). The issue's scenario: pyiceberg writes through REST on dev while Spark
reads the same table through Thrift on dev; ``hms-proxy merge dev main`` makes the new snapshot
visible on main through both protocols at once; main never saw it before."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from hms_proxy.tools import spark_iceberg
from tests.e2e.rest.conftest import start_rest_server
from tests.support.iceberg import named_paths
from tests.support.process import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def spark_env():
    """The module's Spark: one JVM, a new session per run (spark_iceberg.KeptSpark)."""
    if shutil.which("java") is None:
        pytest.skip("no java: Spark runs on the JVM")
    try:
        spark_iceberg.ensure()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"Spark with Iceberg's runtime could not be set up: {exc}")
    kept = spark_iceberg.KeptSpark()
    yield kept
    kept.close()


def rows(result):
    assert "error" not in result, result["error"]
    return result["rows"]


def feature_and_main(server) -> dict[str, str]:
    """Spark's REST catalogs ``rest_f`` (branch feature) and ``rest_main`` on ``server``."""
    return {**spark_iceberg.catalog_conf("rest_f", "rest", server.rest_uri, "feature"),
            **spark_iceberg.catalog_conf("rest_main", "rest", server.rest_uri, "main")}


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
        got = spark_env.run_sql([
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
        ], catalogs)
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
        after = spark_env.run_sql([q.format("hv_main"), q.format("rest_main"),
                                       "SELECT count(*) FROM rest_main.shop.made"],
                                      catalogs)
        assert rows(after[0]) == [[2], [3], [4]] and rows(after[1]) == [[2], [3], [4]]
        assert rows(after[2]) == [[3]]
        assert ids(server.rest("main").load_table("shop.events")) == [2, 3, 4]
        assert ids(server.hive().load_table("shop.events")) == [2, 3, 4]
    finally:
        server.proc.stop()


def test_spark_appends_on_two_branches_merge_in_icebergs_terms(spark_env, tmp_path):
    """Iceberg's Java writer (Spark's INSERT through REST) appends on a branch and on main; the
    merge replays the branch's append on main's current snapshot: every row, through Spark and
    pyiceberg, and main's earlier snapshot still reads as it was."""
    server = start_rest_server(tmp_path / "srv", "--autocommit")
    try:
        main = server.rest("main")
        main.create_namespace("sales")
        data = pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]})
        main.create_table("sales.t", schema=data.schema).append(data)
        server.cli("branch", "create", "feature", "--from", "main")
        catalogs = feature_and_main(server)
        got = spark_env.run_sql([
            "INSERT INTO rest_f.sales.t VALUES (2, 'b'), (3, 'c')",
            "INSERT INTO rest_f.sales.t VALUES (4, 'd')",
            "INSERT INTO rest_main.sales.t VALUES (10, 'x')"], catalogs)
        for result in got:
            rows(result)
        before = main.load_table("sales.t").current_snapshot().snapshot_id
        merged = server.cli("merge", "feature", "main")
        assert "2 snapshots replayed (append" in merged.stdout, merged.stdout
        after = spark_env.run_sql(["SELECT id FROM rest_main.sales.t ORDER BY id"],
                                      catalogs)
        assert rows(after[0]) == [[1], [2], [3], [4], [10]]
        table = server.rest("main").load_table("sales.t")
        assert ids(table) == [1, 2, 3, 4, 10]
        assert sorted(table.scan(snapshot_id=before).to_arrow().column("id").to_pylist()) \
            == [1, 10]
    finally:
        server.proc.stop()


def test_spark_deletes_on_a_branch_merge_with_appends_to_other_partitions(spark_env,
                                                                         tmp_path):
    """Iceberg's Java writer deletes on a branch (a whole partition: a delete of its files;
    rows of another, merge-on-read: a position delete file) while main appends to a third
    partition: the merge replays the deletes on main's snapshot; a delete of a partition main
    appended to is a conflict naming it."""
    server = start_rest_server(tmp_path / "srv", "--autocommit")
    try:
        catalogs = feature_and_main(server)
        made = spark_env.run_sql([
            "CREATE NAMESPACE rest_main.sales",
            "CREATE TABLE rest_main.sales.t (id bigint, day string) USING iceberg "
            "PARTITIONED BY (day) TBLPROPERTIES ('write.delete.mode'='merge-on-read')",
            "INSERT INTO rest_main.sales.t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'c')",
        ], catalogs)
        for result in made:
            rows(result)
        server.cli("branch", "create", "feature", "--from", "main")
        got = spark_env.run_sql([
            "DELETE FROM rest_f.sales.t WHERE day = 'a'",
            "DELETE FROM rest_f.sales.t WHERE id = 3",
            "INSERT INTO rest_main.sales.t VALUES (10, 'b')",
        ], catalogs)
        for result in got:
            rows(result)
        ops = [s.summary.operation.value
               for s in server.rest("feature").load_table("sales.t").snapshots()]
        assert ops[-2:] == ["delete", "delete"], ops
        merged = server.cli("merge", "feature", "main")
        assert "2 snapshots replayed (delete" in merged.stdout, merged.stdout
        assert ids(server.rest("main").load_table("sales.t")) == [2, 4, 10]
        after = spark_env.run_sql([
            "SELECT id FROM rest_main.sales.t ORDER BY id",
            "DELETE FROM rest_main.sales.t WHERE day = 'b'",
            "INSERT INTO rest_f.sales.t VALUES (11, 'b')",
        ], catalogs)
        assert rows(after[0]) == [[2], [4], [10]]
        rows(after[1])
        rows(after[2])
        done = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "merge", "feature",
                               "main", "--store", str(server.store)], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "ICEBERG_CONFLICT" in done.stdout and "partition day=b" in done.stdout, \
            done.stdout
        assert "adds files to it" in done.stdout
        assert ids(server.rest("main").load_table("sales.t")) == [4]  # nothing written
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
            plan = rows(spark_env.run_sql(query, conf)[1])[0][0]
            return next(line for line in plan.splitlines() if "Filter" in line)

        assert "rowCount=100)" in filter_estimate()  # no column statistics yet
        server.cli("stats", "compute", "shop.items", "--metastore", server.thrift_uri,
                   "--no-progress")
        assert "rowCount=8)" in filter_estimate()
    finally:
        server.proc.stop()


def test_spark_on_lakefs_rest_on_dev_thrift_reads_lakefs_merges(spark_env, tmp_path):
    """The issue's scenario over a real lakeFS: pyiceberg appends through REST on dev (a branch
    lakeFS's API made) while Spark reads the table through Thrift on dev (a second server over
    the same repository, ``serve --ref dev``) and writes through REST on dev; main sees none of
    it through either door until lakeFS's own merge, then all of it through both. Files go
    through lakeFS's S3 gateway with Iceberg's S3FileIO: through REST the client brings the
    lakeFS keys and /v1/config the rest; through Thrift every setting is the client's. Then dev
    is deleted with lakeFS's API: main's table, its manifests written by pyiceberg and by
    Iceberg's Java writer anchored on main by the lakeFS action's hooks, still reads and takes
    Spark's insert."""
    from hms_proxy.tools.metastores import start_proxy
    from tests.e2e.rest.conftest import start_lakefs_rest_server
    from tests.support.lakefs import LakeFSApi
    from tests.support.wait import wait_until

    server = start_lakefs_rest_server(tmp_path / "hms", "sparkrest", "--autocommit",
                                      "--http-port", "0", "--lakefs-hooks", "self")
    lakefs, repo = server.lakefs, server.repo
    on_dev = None
    s3 = {**server.keys, "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
          "s3.endpoint": lakefs.endpoint, "s3.path-style-access": "true",
          "client.region": "us-east-1", "s3.chunked-encoding-enabled": "false"}
    try:
        main = server.rest("main")
        main.create_namespace("lake")
        data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})
        main.create_table("lake.t", schema=data.schema).append(data)
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            api.branch("dev", "main")
            on_dev = start_proxy(tmp_path / "hms-dev", "--ref", "dev", store=server.store,
                                 warehouse=False, env=server.env)
            catalogs = {
                **spark_iceberg.catalog_conf("hv_dev", "hive", on_dev.uri, extra=s3),
                **spark_iceberg.catalog_conf("hv_main", "hive", server.thrift_uri, extra=s3),
                **spark_iceberg.catalog_conf("rest_dev", "rest", server.rest_uri, "dev",
                                             server.keys),
                **spark_iceberg.catalog_conf("rest_main", "rest", server.rest_uri, "main",
                                             server.keys)}
            server.rest("dev").load_table("lake.t").append(
                pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))
            # the dev server sees the other server's commits within its staleness bound
            from pyiceberg.catalog.hive import HiveCatalog

            hive_dev = HiveCatalog("dev", uri=on_dev.uri, **server.keys,
                                   **{"s3.endpoint": lakefs.endpoint, "s3.region": "us-east-1"})
            wait_until(lambda: len(hive_dev.load_table("lake.t").scan().to_arrow()) == 3,
                       what="pyiceberg's REST append on dev, through the dev server")
            q = "SELECT id FROM {}.lake.t ORDER BY id"
            got = spark_env.run_sql([
                q.format("hv_dev"), q.format("hv_main"), q.format("rest_main"),
                "INSERT INTO rest_dev.lake.t VALUES (4, 'd')"], catalogs)
            assert rows(got[0]) == [[1], [2], [3]]  # pyiceberg's REST append, through Thrift
            assert rows(got[1]) == [[1], [2]] and rows(got[2]) == [[1], [2]]
            rows(got[3])
            wait_until(lambda: len(hive_dev.load_table("lake.t").scan().to_arrow()) == 4,
                       what="Spark's REST insert on dev, through the dev server")
            got = spark_env.run_sql([q.format("hv_dev"), q.format("hv_main")], catalogs)
            assert rows(got[0]) == [[1], [2], [3], [4]] and rows(got[1]) == [[1], [2]]
            data_dir = "warehouse/lake.db/t/data"
            assert len(api.data_files("dev", data_dir)) == \
                len(api.data_files("main", data_dir)) + 2  # the branch's files on it only
            api.merge("dev", "main")
        # the server sees lakeFS's merge within its staleness bound
        wait_until(lambda: len(main.load_table("lake.t").scan().to_arrow()) == 4,
                   what="main after the lakeFS merge")
        after = spark_env.run_sql([q.format("hv_main"), q.format("rest_main")], catalogs)
        assert rows(after[0]) == [[1], [2], [3], [4]] == rows(after[1])
        on_dev.stop()
        on_dev = None
        with lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("dev")  # pre-delete-branch anchors main
        assert not any(f"/{repo}/dev/" in p for p in named_paths(main.load_table("lake.t")))
        after = spark_env.run_sql([
            q.format("hv_main"), "INSERT INTO rest_main.lake.t VALUES (5, 'e')",
            q.format("rest_main")], catalogs)
        assert rows(after[0]) == [[1], [2], [3], [4]]
        assert rows(after[2]) == [[1], [2], [3], [4], [5]]
    finally:
        if on_dev is not None:
            on_dev.stop()
        server.proc.stop()


def test_spark_position_deletes_on_a_lakefs_branch_still_delete_after_it_goes(spark_env,
                                                                            tmp_path):
    """Merge-on-read deletes (Iceberg's position delete files, which name the data files they
    delete from by path; in format 3 deletion vectors, Puffin blobs that name them too) on a
    lakeFS branch: after ``hms-proxy merge`` and the branch deleted with lakeFS's API, the rows
    they deleted stay deleted on main, read by Spark and by pyiceberg: the delete files are
    anchored with the data files they name."""
    from tests.e2e.rest.conftest import start_lakefs_rest_server
    from tests.support.lakefs import LakeFSApi

    server = start_lakefs_rest_server(tmp_path / "hms", "posdel", "--autocommit")
    lakefs, repo = server.lakefs, server.repo
    s3 = {"io-impl": "org.apache.iceberg.aws.s3.S3FileIO", "s3.endpoint": lakefs.endpoint,
          "s3.path-style-access": "true", "client.region": "us-east-1",
          "s3.chunked-encoding-enabled": "false"}
    try:
        catalogs = {
            **spark_iceberg.catalog_conf("rest_dev", "rest", server.rest_uri, "dev",
                                         {**server.keys, **s3}),
            **spark_iceberg.catalog_conf("rest_main", "rest", server.rest_uri, "main",
                                         {**server.keys, **s3})}
        made = spark_env.run_sql([
            "CREATE NAMESPACE rest_main.lake",
            "CREATE TABLE rest_main.lake.t (id bigint, v string) USING iceberg "
            "TBLPROPERTIES ('write.delete.mode'='merge-on-read', "
            "'write.update.mode'='merge-on-read')",
            "INSERT INTO rest_main.lake.t VALUES (1, 'a'), (2, 'b')",
            "CREATE TABLE rest_main.lake.v3 (id bigint, v string) USING iceberg "
            "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')",
            "INSERT INTO rest_main.lake.v3 VALUES (1, 'a'), (2, 'b')"], catalogs)
        for result in made:
            rows(result)
        with lakefs.sdk() as client:
            LakeFSApi(client, repo).branch("dev", "main")
        got = spark_env.run_sql([
            "INSERT INTO rest_dev.lake.t VALUES (3, 'c'), (4, 'd')",
            "DELETE FROM rest_dev.lake.t WHERE id IN (1, 3)",
            "SELECT id FROM rest_dev.lake.t ORDER BY id",
            "INSERT INTO rest_dev.lake.v3 VALUES (3, 'c'), (4, 'd')",
            "DELETE FROM rest_dev.lake.v3 WHERE id IN (1, 3)",
            "SELECT id FROM rest_dev.lake.v3 ORDER BY id"], catalogs)
        for result in got[:2] + got[3:5]:
            rows(result)
        assert rows(got[2]) == rows(got[5]) == [[2], [4]]
        table = server.rest("dev").load_table("lake.t")
        assert table.current_snapshot().summary["added-position-delete-files"] in ("1", "2")
        assert any(f"/{repo}/dev/" in p for p in _vector_paths(server.rest("dev"), "lake.v3"))
        server.cli("merge", "dev", "main")
        with lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("dev")
        table = server.rest("main").load_table("lake.t")
        assert not any(f"/{repo}/dev/" in p for p in named_paths(table))
        assert ids(table) == [2, 4]
        vectors = server.rest("main").load_table("lake.v3")
        assert not any(f"/{repo}/dev/" in p for p in named_paths(vectors))
        named = _vector_paths(server.rest("main"), "lake.v3")
        assert len(named) == 2 and not any(f"/{repo}/dev/" in p for p in named), named
        after = spark_env.run_sql(["SELECT id FROM rest_main.lake.t ORDER BY id",
                                       "SELECT id FROM rest_main.lake.v3 ORDER BY id"],
                                      catalogs)
        assert rows(after[0]) == rows(after[1]) == [[2], [4]]
    finally:
        server.proc.stop()


def _vector_paths(catalog, name: str) -> list[str]:
    """The data files the deletion vectors of a format 3 table name in their Puffin files
    (each blob's ``referenced-data-file``), read with pyiceberg."""
    from pyiceberg.table.puffin import PuffinFile

    table = catalog.load_table(name)
    out = []
    for manifest in table.current_snapshot().manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io):
            if entry.data_file.file_format.name == "PUFFIN":
                with table.io.new_input(entry.data_file.file_path).open() as stream:
                    puffin = PuffinFile(stream.read())
                out += [b.properties["referenced-data-file"] for b in puffin.footer.blobs]
    return sorted(set(out))


def test_spark_format_version_3_tables_commit_and_merge(spark_env, tmp_path):
    """Iceberg format version 3 (Iceberg 1.12's Spark runtime): a table created, written and
    deleted from (a deletion vector) through REST; appends on a branch and on main merged in
    Iceberg's terms with row lineage kept as the spec requires: every row has its own
    ``_row_id``, and ``next-row-id`` is past all of them."""
    server = start_rest_server(tmp_path / "srv", "--autocommit")
    try:
        catalogs = feature_and_main(server)
        made = spark_env.run_sql([
            "CREATE NAMESPACE rest_main.v3",
            "CREATE TABLE rest_main.v3.t (id bigint, day string) USING iceberg "
            "PARTITIONED BY (day) TBLPROPERTIES ('format-version'='3')",
            "INSERT INTO rest_main.v3.t VALUES (1, 'a'), (2, 'b'), (3, 'b')",
            "DELETE FROM rest_main.v3.t WHERE id = 3",
            "SELECT id FROM rest_main.v3.t ORDER BY id",
        ], catalogs)
        for result in made[:4]:
            rows(result)
        assert rows(made[4]) == [[1], [2]]
        table = server.rest("main").load_table("v3.t")
        assert table.metadata.format_version == 3
        server.cli("branch", "create", "feature", "--from", "main")
        got = spark_env.run_sql([
            "INSERT INTO rest_f.v3.t VALUES (4, 'a'), (5, 'c')",
            "INSERT INTO rest_main.v3.t VALUES (10, 'b')",
        ], catalogs)
        for result in got:
            rows(result)
        merged = server.cli("merge", "feature", "main")
        assert "1 snapshot replayed (append" in merged.stdout, merged.stdout
        after = spark_env.run_sql([
            "SELECT id FROM rest_main.v3.t ORDER BY id",
            "SELECT id, _row_id FROM rest_main.v3.t ORDER BY id",
            "INSERT INTO rest_main.v3.t VALUES (11, 'c')",
            "SELECT count(*), count(DISTINCT _row_id) FROM rest_main.v3.t",
        ], catalogs)
        assert rows(after[0]) == [[1], [2], [4], [5], [10]]
        row_ids = [r[1] for r in rows(after[1])]
        assert None not in row_ids and len(set(row_ids)) == 5, rows(after[1])
        rows(after[2])
        assert rows(after[3]) == [[6, 6]]
        metadata = server.rest("main").load_table("v3.t").metadata
        assert metadata.format_version == 3 and metadata.next_row_id > max(row_ids)
    finally:
        server.proc.stop()


@pytest.mark.parametrize("merge", ["lakefs", "hms-proxy"])
def test_spark_through_thrift_on_a_lakefs_branch_merged_and_deleted(spark_env, tmp_path, merge):
    """Spark's Iceberg catalog of type ``hive`` (Iceberg's own HiveTableOperations: it reads
    and writes the metadata files itself) on a server bound to a lakeFS branch: an insert, a
    delete, a schema change and an update on dev land on dev only (the server moves what the
    writer put under main, the table's inherited location); a lakeFS commit, then lakeFS's
    merge or ``hms-proxy merge``; the branch deleted with lakeFS's API: main reads every row,
    time-travels to its earlier snapshots and takes Spark's insert."""
    import lakefs_sdk

    from tests.e2e.rest.conftest import (commit_and_merge_dev_into_main,
                                          start_lakefs_rest_server,
                                          table_on_main_merged_into_dev)
    from tests.support.lakefs import LakeFSApi
    from tests.support.wait import wait_until

    server = start_lakefs_rest_server(tmp_path / "hms", "sparkhive", "--http-port", "0",
                                      "--lakefs-hooks", "self", "--bind", "0=dev",
                                      branches=("dev",))
    lakefs, repo = server.lakefs, server.repo
    s3 = {**server.keys, "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
          "s3.endpoint": lakefs.endpoint, "s3.path-style-access": "true",
          "client.region": "us-east-1", "s3.chunked-encoding-enabled": "false"}
    try:
        main = server.rest("main")
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            before = table_on_main_merged_into_dev(server, api)
            dev_uri = f"thrift://127.0.0.1:{server.proc.ref_port('dev')}"
            catalogs = {**spark_iceberg.catalog_conf("hv_dev", "hive", dev_uri, extra=s3),
                        **spark_iceberg.catalog_conf("hv_main", "hive", server.thrift_uri,
                                                     extra=s3)}
            got = spark_env.run_sql([
                "INSERT INTO hv_dev.lake.t VALUES (4, 'd')",
                "DELETE FROM hv_dev.lake.t WHERE id = 1",
                "ALTER TABLE hv_dev.lake.t ADD COLUMN qty int",
                "UPDATE hv_dev.lake.t SET qty = 7 WHERE id = 4",
                "SELECT id, v, qty FROM hv_dev.lake.t ORDER BY id",
                "SELECT id FROM hv_main.lake.t ORDER BY id",
            ], catalogs)
            for result in got[:4]:
                rows(result)
            assert rows(got[4]) == [[2, "b", None], [3, "c", None], [4, "d", 7]]
            assert rows(got[5]) == [[1], [2], [3]]
            staged_main = [d.path for d in lakefs_sdk.BranchesApi(client).diff_branch(
                repo, "main").results]
            assert not any("lake.db/t" in p for p in staged_main), staged_main
            commit_and_merge_dev_into_main(server, api, merge, "Spark's writes")
        wait_until(lambda: sorted(main.load_table("lake.t").scan().to_arrow()
                                  .column("id").to_pylist()) == [2, 3, 4],
                   what=f"main after the {merge} merge")
        with lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("dev")  # the pre-delete hook anchors main
        table = server.rest("main").load_table("lake.t")
        assert not any(f"/{repo}/dev/" in p for p in named_paths(table))
        assert ids(table) == [2, 3, 4]
        for snapshot_id in before:
            assert sorted(table.scan(snapshot_id=snapshot_id).to_arrow().column("id")
                          .to_pylist()) == [1, 2, 3]
        after = spark_env.run_sql([
            "INSERT INTO hv_main.lake.t VALUES (5, 'e', 1)",
            "SELECT id, qty FROM hv_main.lake.t ORDER BY id"], catalogs)
        rows(after[0])
        assert rows(after[1]) == [[2, None], [3, None], [4, 7], [5, 1]]
    finally:
        server.proc.stop()
