"""Issue 3's flow with real Spark sessions: a job on the port bound to ``dev`` adds a partition
and a column; a session on main sees none of it; ``shop@dev`` reaches the same state from
main's port; commit, diff and merge (the CLI) bring main to it; a conflicting change on both
branches is reported with its table and field, and ``--strategy`` resolves it.

It runs over the embedded store (data in a local warehouse) and over a real lakeFS
(``lakefs://REPO``, :mod:`tests.support.lakefs`), where Spark writes the tables' files through
lakeFS's S3 gateway (``s3a://REPO/<ref>/warehouse/...``, hadoop-aws from Maven Central,
:mod:`hms_proxy.tools.spark_s3`): the branch holds both the catalog and the data, lakeFS's diff shows
the data objects, one lakeFS merge commit publishes both, and a partition rewritten on both
branches is a data conflict."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hms_proxy.tools.metastores import start_proxy
from kvmodel.store import open_store
from tests.support.client import wait_served
from tests.support import spark_runs
from tests.support.process import REPO_ROOT

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
RUNNER = Path(__file__).resolve().parent / "runner.py"


def spark(workdir: Path, uri: str, name: str, statements: list) -> list[dict]:
    """Run statements in a fresh Spark session against ``uri``; the results, by statement."""
    run = workdir / name
    run.mkdir(parents=True, exist_ok=True)
    (run / "statements.json").write_text(json.dumps(statements))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    warehouse = _SPARK.get("warehouse") or str(workdir / "warehouse")
    cmd = [sys.executable, str(RUNNER), "--uri", uri, "--warehouse", warehouse,
           "--statements", str(run / "statements.json"), "--output", str(run / "out.jsonl")]
    for key, value in _SPARK.items():
        if key != "warehouse":
            cmd += ["--conf", f"{key}={value}"]
    done = spark_runs.run(cmd, cwd=run, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(line)["result"] for line in (run / "out.jsonl").read_text().splitlines()]


def rows(result: dict):
    assert "rows" in result, result
    return result["rows"]


_ENV: dict = {}  # the store's environment (LAKEFS_* for the lakeFS backend)
_SPARK: dict = {}  # Spark settings of the sessions (the s3a file system over lakeFS)


def cli(store, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store", str(store)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **_ENV))


def serve(workdir: Path, store, *extra: str):
    if "://" in str(store):  # the repository's own warehouse, at the ref served
        return start_proxy(workdir, *extra, store=store, cwd=REPO_ROOT, warehouse=False,
                           env=dict(os.environ, **_ENV))
    return start_proxy(workdir, *extra, store=store, cwd=REPO_ROOT)


@pytest.fixture(params=["local", "lakefs"])
def store(request, tmp_path):
    """The store the flow runs over: a path, or ``lakefs://REPO`` of the real lakeFS of the
    session with Spark's files going through its S3 gateway."""
    _ENV.clear()
    _SPARK.clear()
    if request.param == "local":
        yield tmp_path / "store"
        return
    import lakefs_sdk  # noqa: F401

    from hms_proxy.tools import spark_s3
    from tests.support.lakefs import new_repository, real_lakefs

    lakefs = real_lakefs()
    repo = new_repository("flow")
    _ENV.update(lakefs.env())
    _SPARK.update(spark_s3.spark_conf(lakefs.endpoint, lakefs.access_key_id,
                                      lakefs.secret_access_key))
    # Spark gives new databases a location under its warehouse: the repository's, on main
    # (stored ref-free, so a database made on main is under dev's warehouse on dev)
    _SPARK["warehouse"] = f"s3a://{repo}/main/warehouse"
    yield f"lakefs://{repo}"
    _ENV.clear()
    _SPARK.clear()


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

    proc = serve(tmp_path / "s1", store, "--bind", "0=dev")
    dev_uri = f"thrift://127.0.0.1:{proc.ref_port('dev')}"
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

        lake = _lakefs(store)
        if lake is not None:  # the data went to dev through the S3 gateway, not to main
            data = lake.data_diff("main", "dev")
            assert any(p.startswith("warehouse/shop.db/orders/ds=2024-01-02/") and
                       p.endswith(".parquet") for p in data), data
            main_before, dev_head = lake.head("main"), lake.head("dev")
        merged = cli(store, "merge", "dev", "main")
        assert merged.returncode == 0, merged.stdout + merged.stderr
        if lake is not None:  # ONE lakeFS merge commit moved catalog and data together
            head = lake.commit(lake.head("main"))
            assert head.parents == [main_before, dev_head], head
            assert lake.data_diff("main", "dev") == []
            assert lake.data_diff(main_before, "main")  # the data files arrived with it
        # the CLI's merge is another process's change: the server sees it within its bound
        wait_served(proc, lambda c: len(c.get_partition_names("shop", "orders", -1)) == 2,
                    what="main's server sees the merged partition")

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
        from hms_proxy.thrift.gen.hive_metastore import ttypes
        from kvmodel import catalog, codec

        with check.read("main") as view:
            table = codec.decode(ttypes.Table, view.get(catalog.table_key("shop", "orders")))
        assert table.parameters["owner_team"] == "growth"
        assert "discount" in [c.name for c in table.sd.cols]
    finally:
        check.close()
    if _lakefs(store) is not None:
        _data_conflict(tmp_path, store)


class _Lake:
    """lakeFS's own view of the flow's repository (lakefs-sdk)."""

    def __init__(self, repo: str):
        from tests.support.lakefs import real_lakefs

        self.repo, self.server = repo, real_lakefs()

    def head(self, branch: str) -> str:
        import lakefs_sdk

        with self.server.sdk() as client:
            return lakefs_sdk.BranchesApi(client).get_branch(self.repo, branch).commit_id

    def commit(self, commit_id: str):
        import lakefs_sdk

        with self.server.sdk() as client:
            return lakefs_sdk.CommitsApi(client).get_commit(self.repo, commit_id)

    def data_diff(self, left: str, right: str) -> list[str]:
        """Paths of the data objects (not the catalog's ``_hms*``) that differ."""
        import lakefs_sdk

        out, after = [], ""
        with self.server.sdk() as client:
            api = lakefs_sdk.RefsApi(client)
            while True:
                page = api.diff_refs(self.repo, left, right, after=after, amount=1000)
                out += [d.path for d in page.results if d.path_type == "object"
                        and not d.path.startswith("_hms")]
                if not page.pagination.has_more:
                    return sorted(out)
                after = page.pagination.next_offset


def _lakefs(store) -> _Lake | None:
    return _Lake(str(store).removeprefix("lakefs://")) if str(store).startswith("lakefs://") \
        else None


def _data_conflict(tmp_path: Path, store) -> None:
    """Both branches rewrite one partition's files: the merge reports a data conflict (lakeFS's)
    and moves neither catalog nor data."""
    assert cli(store, "branch", "create", "redo", "--from", "main").returncode == 0
    proc = serve(tmp_path / "s2", store, "--bind", "0=redo")
    try:
        spark(tmp_path, f"thrift://127.0.0.1:{proc.ref_port('redo')}", "redo-rewrite", [
            "INSERT OVERWRITE TABLE shop.orders PARTITION (ds='2024-01-01') "
            "VALUES (1, 11.0, NULL)"])
        spark(tmp_path, proc.uri, "main-rewrite", [
            "INSERT OVERWRITE TABLE shop.orders PARTITION (ds='2024-01-01') "
            "VALUES (1, 12.0, NULL)"])
    finally:
        proc.stop()
    assert cli(store, "commit", "redo", "-m", "redo day 1").returncode == 0
    assert cli(store, "commit", "main", "-m", "fix day 1").returncode == 0
    lake = _lakefs(store)
    before = lake.head("main")
    conflict = cli(store, "merge", "redo", "main", "--json")
    assert conflict.returncode == 1, conflict.stdout + conflict.stderr
    report = json.loads(conflict.stdout)
    kinds = {c.get("kind") for c in report["conflicts"]}
    assert "data" in kinds, report
    assert any("ds=2024-01-01" in json.dumps(c) for c in report["conflicts"]
               if c.get("kind") == "data"), report
    assert lake.head("main") == before
