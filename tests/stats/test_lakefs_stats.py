"""Statistics on a lakeFS store, against the real lakeFS of the session: Spark writes a table's
files through lakeFS's S3 gateway, ``stats compute`` (its Spark job given the gateway by itself)
writes the sets beside them in the repository, and ``stats show`` and our server's statistics
calls read them back from lakeFS at the ref asked."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lakefs_sdk
import pyspark  # noqa: F401
import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from hms_proxy.tools import spark_s3  # noqa: E402
from tests.support.client import connect  # noqa: E402
from tests.support.lakefs import new_repository, real_lakefs  # noqa: E402
from tests.support.process import REPO_ROOT  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]
RUNNER = REPO_ROOT / "tests" / "e2e" / "spark" / "runner.py"


def test_stats_computed_on_lakefs_are_read_back_from_it(tmp_path):
    lakefs = real_lakefs()
    repo = new_repository("stats")
    env = dict(os.environ, **lakefs.env(), PYTHONPATH=str(REPO_ROOT), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable)
    server = start_proxy(tmp_path / "hms", store=f"lakefs://{repo}", warehouse=False, env=env)
    try:
        statements = tmp_path / "statements.json"
        statements.write_text(json.dumps([
            "CREATE TABLE t (id INT, v STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET",
            "INSERT INTO t PARTITION (ds='a') SELECT id, cast(id % 7 AS STRING) FROM range(1000)",
            "INSERT INTO t PARTITION (ds='b') SELECT id, cast(id % 3 AS STRING) FROM range(500)",
        ]))
        cmd = [sys.executable, str(RUNNER), "--uri", server.uri,
               "--warehouse", f"s3a://{repo}/main/warehouse", "--statements", str(statements),
               "--output", str(tmp_path / "out.jsonl")]
        for key, value in spark_s3.spark_conf(lakefs.endpoint, lakefs.access_key_id,
                                              lakefs.secret_access_key).items():
            cmd += ["--conf", f"{key}={value}"]
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results = [json.loads(line)["result"] for line in
                   Path(tmp_path / "out.jsonl").read_text().splitlines()]
        assert all("rows" in r for r in results), results

        def cli(*args):
            return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store",
                                   f"lakefs://{repo}"], cwd=REPO_ROOT, env=env,
                                  capture_output=True, text=True, timeout=600)

        assert cli("commit", "main", "-m", "t").returncode == 0
        computed = cli("stats", "compute", "default.t", "--no-progress")  # no s3a --conf given
        assert computed.returncode == 0, computed.stderr[-3000:]
        shown = cli("stats", "show", "default.t", "--partition", "ds=a", "--json")
        assert shown.returncode == 0, shown.stderr[-3000:]
        report = json.loads(shown.stdout)
        assert _count(report, "id") == 1000, report
        # the sets are objects of the repository, on main, beside the data
        with lakefs.sdk() as client:
            listed = lakefs_sdk.ObjectsApi(client).list_objects(
                repo, "main", prefix="warehouse/t/_stats/", amount=100).results
        assert any(o.path.endswith("/statistics.parquet") for o in listed), \
            [o.path for o in listed]
        # served by our server from lakeFS, as Trino and Hive ask
        with connect(server) as client:
            req = T.PartitionsStatsRequest(dbName="default", tblName="t", colNames=["id", "v"],
                                           partNames=["ds=a", "ds=b"])
            stats = client.get_partitions_statistics_req(req).partStats
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
