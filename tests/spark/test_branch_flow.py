"""Issue 3's flow with real Spark sessions: a job on the port bound to ``dev`` adds a partition
and a column; a session on main sees none of it; ``shop@dev`` reaches the same state from
main's port; commit, diff and merge (the CLI) bring main to it; a conflicting change on both
branches is reported with its table and field, and ``--strategy`` resolves it.

It runs over the embedded store and over the lakeFS backend (``lakefs://REPO``) against
:class:`tests.support.lakefs_double.LakeFSDouble`, the in-process **test double** of lakeFS's
REST API (the data stays in a local warehouse there: the double has no S3 gateway)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hms_proxy.metastores import free_port, start_proxy
from kvmodel.store import open_store
from tests.support.process import REPO_ROOT

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
RUNNER = Path(__file__).resolve().parent / "runner.py"


def spark(workdir: Path, uri: str, name: str, statements: list) -> list[dict]:
    """Run statements in a fresh Spark session against ``uri``; the results, by statement."""
    run = workdir / name
    run.mkdir(parents=True, exist_ok=True)
    (run / "statements.json").write_text(json.dumps(statements))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, str(RUNNER), "--uri", uri, "--warehouse", str(workdir / "warehouse"),
           "--statements", str(run / "statements.json"), "--output", str(run / "out.jsonl")]
    done = subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(line)["result"] for line in (run / "out.jsonl").read_text().splitlines()]


def rows(result: dict):
    assert "rows" in result, result
    return result["rows"]


_ENV: dict = {}  # the store's environment (LAKEFS_* for the lakeFS backend)


def cli(store, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store", str(store)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **_ENV))


def serve(workdir: Path, store, *extra: str):
    if "://" in str(store):
        return start_proxy(workdir, *extra, store=store, cwd=REPO_ROOT,
                           warehouse=workdir.parent / "warehouse", env=dict(os.environ, **_ENV))
    return start_proxy(workdir, *extra, store=store, cwd=REPO_ROOT)


@pytest.fixture(params=["local", "lakefs-double", "lakefs"])
def store(request, tmp_path):
    """The store the flow runs over: a path, ``lakefs://REPO`` of the lakeFS test double, or
    of a real lakeFS (testcontainers; skipped without a Docker engine)."""
    _ENV.clear()
    if request.param == "local":
        yield tmp_path / "store"
        return
    pytest.importorskip("lakefs_sdk")
    if request.param == "lakefs":
        import uuid

        from tests.store.conftest import real_lakefs
        from tests.support.lakefs_container import create_repository

        endpoint, key, secret = real_lakefs()
        repo = f"flow{uuid.uuid4().hex[:12]}"
        create_repository(endpoint, key, secret, repo)
        _ENV.update(LAKEFS_ENDPOINT=endpoint, LAKEFS_ACCESS_KEY_ID=key,
                    LAKEFS_SECRET_ACCESS_KEY=secret)
        yield f"lakefs://{repo}"
        _ENV.clear()
        return
    from tests.support.lakefs_double import LakeFSDouble

    with LakeFSDouble(access_key_id="AKIASPARKFLOW", secret_access_key="flow") as double:
        double.create_repository("flow", default_branch="main")
        _ENV.update(LAKEFS_ENDPOINT=double.endpoint, LAKEFS_ACCESS_KEY_ID="AKIASPARKFLOW",
                    LAKEFS_SECRET_ACCESS_KEY="flow")
        yield "lakefs://flow"
    _ENV.clear()


def columns(describe_rows) -> list[str]:
    """Column names from DESCRIBE output (up to the partition information)."""
    out = []
    for name, *_ in describe_rows:
        if not name or name.startswith("#"):
            break
        out.append(name)
    return out


def test_branch_write_review_merge_with_spark(tmp_path, store):
    setup = serve(tmp_path / "s0", store)
    try:
        results = spark(tmp_path, setup.uri, "setup", [
            "CREATE DATABASE shop",
            "CREATE TABLE shop.orders (id INT, amount DOUBLE) PARTITIONED BY (ds STRING) "
            "STORED AS PARQUET",
            "INSERT INTO shop.orders PARTITION (ds='2024-01-01') VALUES (1, 10.0)",
        ])
        assert all("rows" in r for r in results), results
    finally:
        setup.stop()
    assert cli(store, "commit", "main", "-m", "orders, day 1").returncode == 0
    assert cli(store, "branch", "create", "dev", "--from", "main").returncode == 0

    dev_port = free_port()
    proc = serve(tmp_path / "s1", store, "--bind", f"{dev_port}=dev")
    dev_uri = f"thrift://127.0.0.1:{dev_port}"
    try:
        dev = spark(tmp_path, dev_uri, "dev-job", [
            "INSERT INTO shop.orders PARTITION (ds='2024-01-02') VALUES (2, 20.0)",
            "ALTER TABLE shop.orders ADD COLUMNS (discount DOUBLE)",
            "SHOW PARTITIONS shop.orders",
        ])
        assert rows(dev[2]) == [["ds=2024-01-01"], ["ds=2024-01-02"]]

        main = spark(tmp_path, proc.uri, "main-view", [
            "SHOW PARTITIONS shop.orders",
            "DESCRIBE shop.orders",
            "SELECT count(*) FROM shop.orders",
            "SHOW PARTITIONS `shop@dev`.orders",
            "DESCRIBE `shop@dev`.orders",
            "SELECT id, amount FROM `shop@dev`.orders ORDER BY id",
        ])
        assert rows(main[0]) == [["ds=2024-01-01"]]
        assert "discount" not in columns(rows(main[1]))
        assert rows(main[2]) == [[1]]
        assert rows(main[3]) == [["ds=2024-01-01"], ["ds=2024-01-02"]]
        assert "discount" in columns(rows(main[4]))
        assert rows(main[5]) == [[1, 10.0], [2, 20.0]]

        assert cli(store, "commit", "dev", "-m", "day 2 and a discount column").returncode == 0
        diff = cli(store, "diff", "main", "dev", "--json")
        assert diff.returncode == 0, diff.stderr
        report = json.loads(diff.stdout)
        table_changes = [c for c in report["changes"]
                         if c["kind"] == "table" and c["path"] == ["shop", "orders"]]
        assert table_changes and any("discount" in json.dumps(f) for f in table_changes[0]["fields"])
        assert {"db": "shop", "table": "orders"}.items() <= next(
            p for p in report["partitions"] if p["table"] == "orders").items()
        assert next(p for p in report["partitions"] if p["table"] == "orders")["added"] == 1
        human = cli(store, "diff", "main", "dev").stdout
        assert "shop.orders" in human and "discount" in human

        merged = cli(store, "merge", "dev", "main")
        assert merged.returncode == 0, merged.stdout + merged.stderr

        # Both branches now change one property differently, each through Spark.
        with ThreadPoolExecutor(2) as pool:
            after_main, after_dev = pool.map(lambda args: spark(tmp_path, *args), [
                (proc.uri, "main-after-merge", [
                    "SHOW PARTITIONS shop.orders",
                    "DESCRIBE shop.orders",
                    "SELECT id, amount FROM shop.orders ORDER BY id",
                    "ALTER TABLE shop.orders SET TBLPROPERTIES ('owner_team' = 'finance')",
                ]),
                (dev_uri, "dev-change", [
                    "ALTER TABLE shop.orders SET TBLPROPERTIES ('owner_team' = 'growth')",
                ]),
            ])
        assert rows(after_main[0]) == [["ds=2024-01-01"], ["ds=2024-01-02"]]
        assert "discount" in columns(rows(after_main[1]))
        assert rows(after_main[2]) == [[1, 10.0], [2, 20.0]]
        assert "rows" in after_main[3] and "rows" in after_dev[0], (after_main, after_dev)
    finally:
        proc.stop()

    assert cli(store, "commit", "main", "-m", "finance owns orders").returncode == 0
    assert cli(store, "commit", "dev", "-m", "growth owns orders").returncode == 0
    conflict = cli(store, "merge", "dev", "main")
    assert conflict.returncode == 1
    assert "shop.orders" in conflict.stdout and "parameters.owner_team" in conflict.stdout
    resolved = cli(store, "merge", "dev", "main", "--strategy", "source-wins")
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    old_env = {k: os.environ.get(k) for k in _ENV}
    os.environ.update(_ENV)
    try:
        check = open_store(store)
    finally:
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        from hms_proxy.gen.hive_metastore import ttypes
        from kvmodel import catalog, codec

        with check.read("main") as view:
            table = codec.decode(ttypes.Table, view.get(catalog.table_key("shop", "orders")))
        assert table.parameters["owner_team"] == "growth"
        assert "discount" in [c.name for c in table.sd.cols]
    finally:
        check.close()
