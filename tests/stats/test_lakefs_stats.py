"""Statistics on a lakeFS store, against the real lakeFS of the session: Spark writes a table's
files through lakeFS's S3 gateway, ``stats compute`` (its Spark job given the gateway by itself)
writes the sets beside them in the repository, and ``stats show`` and our server's statistics
calls read them back from lakeFS at the ref asked. Then the branch flow: computed on dev (the
table-level set too), merged into main with the data and the catalog, recomputed, and
``stats expire`` deleting the sets no branch names any more, while an older commit still reads
its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import lakefs_sdk
import pyspark  # noqa: F401
import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from hms_proxy.tools import spark_s3  # noqa: E402
from tests.support.client import connect, wait_served  # noqa: E402
from tests.support.lakefs import new_repository, past_staleness_bound, real_lakefs  # noqa: E402
from tests.support import spark_runs  # noqa: E402
from tests.support.process import REPO_ROOT  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]
RUNNER = REPO_ROOT / "tests" / "e2e" / "spark" / "runner.py"


def _env(lakefs) -> dict:
    """The environment of our server, the command line and Spark: lakeFS's settings."""
    return dict(os.environ, **lakefs.env(), PYTHONPATH=str(REPO_ROOT),
                SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)


def _cli(repo: str, env: dict, *args) -> subprocess.CompletedProcess:
    """``hms-proxy ARGS --store lakefs://REPO``."""
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store",
                           f"lakefs://{repo}"], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def _spark_writes(tmp_path, server, lakefs, repo: str, env: dict, statements: list) -> list:
    """The statements run by Spark on our server, its tables' files written on main through
    lakeFS's S3 gateway; one result per statement."""
    path = tmp_path / "statements.json"
    path.write_text(json.dumps(statements))
    cmd = [sys.executable, str(RUNNER), "--uri", server.uri,
           "--warehouse", f"s3a://{repo}/main/warehouse", "--statements", str(path),
           "--output", str(tmp_path / "out.jsonl")]
    for key, value in spark_s3.spark_conf(lakefs.endpoint, lakefs.access_key_id,
                                          lakefs.secret_access_key).items():
        cmd += ["--conf", f"{key}={value}"]
    done = spark_runs.run(cmd, cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line)["result"] for line in
            Path(tmp_path / "out.jsonl").read_text().splitlines()]


def _objects(lakefs, repo: str, ref: str, prefix: str) -> list[str]:
    """The paths of the repository's objects under ``prefix`` at ``ref``."""
    with lakefs.sdk() as client:
        listed = lakefs_sdk.ObjectsApi(client).list_objects(
            repo, ref, prefix=prefix, amount=1000).results
    return sorted(o.path for o in listed)


def test_stats_computed_on_lakefs_are_read_back_from_it(tmp_path):
    lakefs = real_lakefs()
    repo = new_repository("stats")
    env = _env(lakefs)
    server = start_proxy(tmp_path / "hms", store=f"lakefs://{repo}", warehouse=False, env=env)
    try:
        results = _spark_writes(tmp_path, server, lakefs, repo, env, [
            "CREATE TABLE t (id INT, v STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET",
            "INSERT INTO t PARTITION (ds='a') SELECT id, cast(id % 7 AS STRING) FROM range(1000)",
            "INSERT INTO t PARTITION (ds='b') SELECT id, cast(id % 3 AS STRING) FROM range(500)",
        ])
        assert all("rows" in r for r in results), results

        def cli(*args):
            return _cli(repo, env, *args)

        assert cli("commit", "main", "-m", "t").returncode == 0
        computed = cli("stats", "compute", "default.t", "--no-progress")  # no s3a --conf given
        assert computed.returncode == 0, computed.stderr[-3000:]
        shown = cli("stats", "show", "default.t", "--partition", "ds=a", "--json")
        assert shown.returncode == 0, shown.stderr[-3000:]
        report = json.loads(shown.stdout)
        assert _count(report, "id") == 1000, report
        # the sets are objects of the repository, on main, beside the data
        listed = _objects(lakefs, repo, "main", "warehouse/t/_stats/")
        assert any(path.endswith("/statistics.parquet") for path in listed), listed
        # served by our server from lakeFS, as Trino and Hive ask (once it sees what another
        # process, the CLI, wrote: within its bound)
        req = T.PartitionsStatsRequest(dbName="default", tblName="t", colNames=["id", "v"],
                                       partNames=["ds=a", "ds=b"])
        stats = wait_served(server, lambda c: c.get_partitions_statistics_req(req).partStats,
                            what="the server sees the statistics the CLI computed")
        by = {p: {o.colName: o.statsData for o in objs} for p, objs in stats.items()}
        assert by["ds=a"]["id"].longStats.numNulls == 0
        assert by["ds=a"]["id"].longStats.highValue == 999
        assert by["ds=b"]["id"].longStats.highValue == 499
        assert by["ds=a"]["v"].stringStats.numDVs == 7
        assert by["ds=b"]["v"].stringStats.numDVs == 3
    finally:
        server.stop()


def _count(report, column):
    """The row count of ``column`` in ``stats show --json``."""
    rows = report.get("summary") or []
    for row in rows:
        if row.get("column") == column:
            return row.get("count")
    return None


def test_stats_on_a_branch_merge_with_the_data_and_expire_on_lakefs(tmp_path):
    lakefs = real_lakefs()
    repo = new_repository("stx")
    env = _env(lakefs)
    server = start_proxy(tmp_path / "hms", store=f"lakefs://{repo}", warehouse=False, env=env)

    def cli(*args, check=True):
        done = _cli(repo, env, *args)
        assert not check or done.returncode == 0, (args, done.stdout[-2000:],
                                                   done.stderr[-3000:])
        return done

    def objects(ref, prefix):
        return _objects(lakefs, repo, ref, prefix)

    def sets(ref, part):
        return sorted({p.rsplit("/", 1)[0] for p in objects(ref, f"warehouse/u/_stats/{part}/")})

    def table_stats(db):
        with connect(server) as client:
            return client.get_table_statistics_req(T.TableStatsRequest(
                dbName=db, tblName="u", colNames=["id"])).tableStats

    try:
        _spark_writes(tmp_path, server, lakefs, repo, env, [
            "CREATE TABLE u (id INT, v STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET",
            "INSERT INTO u PARTITION (ds='a') SELECT id, cast(id % 7 AS STRING) FROM range(300)",
            "INSERT INTO u PARTITION (ds='b') SELECT id, cast(id % 3 AS STRING) FROM range(200)",
        ])
        cli("commit", "main", "-m", "u")
        cli("branch", "create", "dev", "--from", "main")

        # computed on dev: partition sets and the table-level one, objects on dev only
        computed = cli("stats", "compute", "default.u", "--ref", "dev", "--no-progress")
        assert "table-level statistics reduced from 2 of 2" in computed.stdout, computed.stdout
        cli("commit", "dev", "-m", "statistics of u")
        first = {part: sets("dev", part) for part in ("ds=a", "ds=b", "_table_")}
        assert all(len(found) == 1 for found in first.values()), first
        assert objects("main", "warehouse/u/_stats/") == []
        assert table_stats("default") == []
        dev_stats = table_stats("default@dev")
        assert [s.statsData.longStats.highValue for s in dev_stats] == [299]

        # merged: main has the data, the pointers and the sets together
        cli("merge", "dev", "main")
        assert {part: sets("main", part) for part in first} == first
        # the CLI's merge is another process's change: the server sees it within its bound
        wait_served(server, lambda c: table_stats("default") != [],
                    what="the server sees the merged statistics on main")
        assert [s.statsData.longStats.highValue for s in table_stats("default")] == [299]
        shown = json.loads(cli("stats", "show", "default.u", "--json").stdout)
        assert _count(shown, "id") == 500, shown
        cli("tag", "create", "computed-once", "main")
        old_ref = "computed-once"

        # recomputed on dev and merged: the first sets are named by no branch any more
        cli("stats", "compute", "default.u", "--ref", "dev", "--no-progress")
        cli("commit", "dev", "-m", "statistics of u, again")
        cli("merge", "dev", "main")
        dry = json.loads(cli("stats", "expire", "--min-age", "0", "--dry-run", "--json").stdout)
        assert sorted(dry["deleted"]) == sorted(
            f"lakefs://{repo}/{branch}/{path}" for branch in ("dev", "main")
            for found in first.values() for path in found), dry
        assert dry["commits"] == {}
        assert sets("dev", "ds=a") != first["ds=a"] and len(sets("dev", "ds=a")) == 2

        expired = json.loads(cli("stats", "expire", "--min-age", "0", "--json").stdout)
        past_staleness_bound(time.monotonic())  # the same statistics, from other sets
        assert sorted(expired["commits"]) == ["dev", "main"], expired
        assert expired["uncommitted"] == [] and expired["protected"] == []
        for branch in ("dev", "main"):
            for part in first:
                left = sets(branch, part)
                assert len(left) == 1 and left != first[part], (branch, part, left)
        # the new sets still serve; the commit before still reads its own, from lakeFS
        assert [s.statsData.longStats.highValue for s in table_stats("default")] == [299]
        old = json.loads(cli("stats", "show", "default.u", "--ref", old_ref, "--json").stdout)
        assert _count(old, "id") == 500, old
        again = json.loads(cli("stats", "expire", "--min-age", "0", "--json").stdout)
        assert again["deleted"] == [] and again["commits"] == {}
    finally:
        server.stop()


def test_iceberg_and_delta_sets_are_written_into_the_repository(tmp_path):
    """Iceberg (pyiceberg) and Delta (deltalake) tables whose files are in the repository, read
    through lakeFS's S3 gateway: stats compute (no Spark) reads them there and writes their
    partition and whole-table sets beside them."""
    pytest.importorskip("pyiceberg")
    deltalake = pytest.importorskip("deltalake")
    import pyarrow as pa
    from pyiceberg.catalog.hive import HiveCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    lakefs = real_lakefs()
    repo = new_repository("stf")
    env = _env(lakefs)
    server = start_proxy(tmp_path / "hms", store=f"lakefs://{repo}", warehouse=False, env=env)
    data = pa.table({"id": pa.array(range(600), pa.int64()),
                     "cat": pa.array(["a", "b", "c"] * 200)})
    try:
        catalog = HiveCatalog("hms", uri=server.uri, **{
            "s3.endpoint": lakefs.endpoint, "s3.region": "us-east-1",
            "s3.access-key-id": lakefs.access_key_id,
            "s3.secret-access-key": lakefs.secret_access_key})
        catalog.create_namespace("lake", {"location": f"s3a://{repo}/main/wh/lake.db"})
        schema = Schema(NestedField(1, "id", LongType(), required=False),
                        NestedField(2, "cat", StringType(), required=False))
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000,
                                            transform=IdentityTransform(), name="cat"))
        catalog.create_table("lake.ice", schema=schema, partition_spec=spec).append(data)

        location = f"s3a://{repo}/main/wh/lake.db/dl"
        deltalake.write_deltalake(location, data, partition_by=["cat"], storage_options={
            "AWS_ENDPOINT_URL": lakefs.endpoint, "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": lakefs.access_key_id,
            "AWS_SECRET_ACCESS_KEY": lakefs.secret_access_key, "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true"})
        sd = T.StorageDescriptor(
            cols=[T.FieldSchema("col", "array<string>", "from deserializer")],
            location=location, inputFormat="org.apache.hadoop.mapred.SequenceFileInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
            serdeInfo=T.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy."
                                                   "LazySimpleSerDe",
                                  parameters={"path": location, "serialization.format": "1"}),
            parameters={}, bucketCols=[], sortCols=[], numBuckets=-1, compressed=False)
        with connect(server) as client:
            client.create_table(T.Table(
                tableName="dl", dbName="lake", owner="test", sd=sd, partitionKeys=[],
                tableType="EXTERNAL_TABLE",
                parameters={"EXTERNAL": "TRUE", "spark.sql.sources.provider": "delta"}))

        for table in ("ice", "dl"):
            done = _cli(repo, env, "stats", "compute", f"lake.{table}", "--no-progress")
            assert done.returncode == 0, done.stderr[-3000:]
            assert "reduced from 3 of 3" in done.stdout, done.stdout
            listed = _objects(lakefs, repo, "main", f"wh/lake.db/{table}/_stats/")
            dirs = {path.split("/_stats/", 1)[1].rsplit("/", 2)[0] for path in listed
                    if path.endswith("/statistics.parquet")}
            assert dirs == {"cat=a", "cat=b", "cat=c", "_table_"}, listed
            shown = _cli(repo, env, "stats", "show", f"lake.{table}", "--json")
            assert shown.returncode == 0, shown.stderr[-3000:]
            assert _count(json.loads(shown.stdout), "id") == 600, shown.stdout
        # the whole table's set, read back from lakeFS by the server (a Delta table's columns
        # in the metastore are Spark's placeholder: nothing to ask for there); written by
        # another process, the CLI, so seen within the server's bound
        got = wait_served(server, lambda client: client.get_table_statistics_req(
            T.TableStatsRequest(dbName="lake", tblName="ice", colNames=["id"])).tableStats,
            what="the server sees the statistics the CLI computed")
        assert [(s.statsData.longStats.lowValue, s.statsData.longStats.highValue,
                 s.statsData.longStats.numDVs) for s in got] == [(0, 599, 600)]
    finally:
        server.stop()
