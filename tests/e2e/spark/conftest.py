"""Fixtures for the Spark end-to-end suite: run the statement list once per side.

Each side (the stock HMS oracle and our proxy) gets its own runner (tests/e2e/spark/runner.py),
because a Spark session holds one metastore client configuration: a JVM kept for the test
process (tests.support.spark_runs), or a process of its own for another Hive client version.
The two run concurrently; results are cached per module and also written to
tests/.artifacts/spark/<side>.jsonl for inspection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest

from tests.e2e.spark.statements import all_items
from tests.support import spark_runs as kept_runners
from tests.support.process import REPO_ROOT

RUNNER = Path(__file__).resolve().parent / "runner.py"
ARTIFACTS = REPO_ROOT / "tests" / ".artifacts" / "spark"
RUNNER_TIMEOUT = 600.0


class SideRun:
    """One runner subprocess against one metastore, and its recorded results."""

    def __init__(self, name: str, metastore, workdir: Path, items: list[dict],
                 conf: dict | None = None, env: dict | None = None):
        self.name = name
        self.conf = dict(conf or {})
        self.env = dict(env or {})  # over this process's (a Kerberos ticket cache; None: unset)
        self.metastore = metastore
        self.workdir = workdir
        self.warehouse = workdir / "spark-warehouse"
        self.warehouse.mkdir(parents=True, exist_ok=True)
        self.statements_path = workdir / "statements.json"
        self.statements_path.write_text(json.dumps(items))
        self.output_path = workdir / "results.jsonl"
        self.log_path = workdir / "runner.log"
        self.results: list[dict] = []
        self.seconds = 0.0
        self.returncode = None
        self._thread = None
        self._started = 0.0

    def through_first_statement(self, timeout: float = 900.0) -> None:
        """Until the runner has recorded its first statement's result, or ended."""
        deadline = time.monotonic() + timeout
        while self.returncode is None and time.monotonic() < deadline:
            try:
                if self.output_path.stat().st_size > 0:
                    return
            except OSError:
                pass
            time.sleep(0.2)

    def start(self) -> None:
        cmd = [sys.executable, str(RUNNER), "--uri", self.metastore.uri,
               "--warehouse", str(self.warehouse), "--statements", str(self.statements_path),
               "--output", str(self.output_path)]
        for key, value in self.conf.items():
            cmd += ["--conf", f"{key}={value}"]
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
        for key, value in self.env.items():  # None: not set
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        self._started = time.monotonic()

        def run() -> None:
            # cwd = the work dir, so stray files (derby.log, spark-warehouse) never land in the
            # repo; a kept JVM when the settings allow (tests.support.spark_runs)
            try:
                done = kept_runners.run(cmd, cwd=self.workdir, env=env, timeout=RUNNER_TIMEOUT)
                self.returncode, log = done.returncode, (done.stdout or "") + done.stderr
            except subprocess.TimeoutExpired as exc:
                self.returncode, log = -9, f"timed out after {exc.timeout} s\n"
            except BaseException:  # noqa: BLE001 - reported by the test, with the log
                self.returncode, log = -1, traceback.format_exc()
            self.log_path.write_text(log)

        self._thread = threading.Thread(target=run, name=f"spark-{self.name}")
        self._thread.start()

    def wait(self) -> None:
        try:
            self._thread.join()
        finally:
            self.seconds = time.monotonic() - self._started
        if self.output_path.exists():
            self.results = [json.loads(line) for line in self.output_path.read_text().splitlines()
                            if line.strip()]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"{self.name}.jsonl").write_text(
            self.output_path.read_text() if self.output_path.exists() else "")
        (ARTIFACTS / f"{self.name}-runner.log").write_bytes(self.log_path.read_bytes())
        (ARTIFACTS / f"{self.name}-dirs.json").write_text(json.dumps({
            "spark_warehouse": str(self.warehouse), "spark_workdir": str(self.workdir),
            "hms_warehouse": str(self.metastore.warehouse), "hms_workdir": str(self.metastore.workdir),
            "hms_log": str(self.metastore.log_path)}, indent=1))

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def run_sides(metastores: dict, tmp_path_factory, conf: dict | None = None,
              suffix: str = "", env: dict | None = None) -> dict[str, SideRun]:
    """Every statement through a runner per metastore (``{"oracle": ..., "proxy": ...}``), the
    runners at once; fails the test when one does not get through them all. ``conf``: Spark
    settings of both runners; ``suffix``: of their names (artifact files); ``env``: their
    environment over this process's (a value None unsets)."""
    items = all_items()
    runs = {name: SideRun(f"{name}{suffix}", ms, tmp_path_factory.mktemp(f"spark{suffix}-{name}"),
                          items, conf, env)
            for name, ms in metastores.items()}
    order = list(runs.values())
    if (conf or {}).get("spark.sql.hive.metastore.jars") == "maven":
        # Spark fetches that client's jars with Ivy into one directory of the user's
        # (~/.ivy2.5.2/jars, whatever spark.jars.ivy says): two runners fetching at once, in
        # this test or another worker's, copy over each other's files ("size of source file
        # ... differs from size of dest file"). One runner at a time gets through its first
        # statement (the fetch), then the others start.
        import fcntl

        from hms_proxy.tools.lakefs_local import cache_root

        cache_root().mkdir(parents=True, exist_ok=True)
        with open(cache_root() / "spark-ivy.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            order[0].start()
            order[0].through_first_statement()
    else:
        order[0].start()
    for run in order[1:]:
        run.start()
    for run in runs.values():
        run.wait()
    for run in runs.values():
        if run.returncode != 0 or len(run.results) != len(items):
            pytest.fail(f"the Spark runner against the {run.name} exited with {run.returncode} after "
                        f"{len(run.results)}/{len(items)} statements; log tail:\n{run.log_tail()}",
                        pytrace=False)
    return runs


@pytest.fixture(scope="module")
def spark_runs(request, tmp_path_factory):
    """{"oracle": SideRun, "proxy": SideRun}, both having run every statement."""
    proxy = request.getfixturevalue("proxy")  # first: skips before starting the oracle
    oracle = request.getfixturevalue("oracle")
    return run_sides({"oracle": oracle, "proxy": proxy}, tmp_path_factory)


def kerberized_sides(realm, stock, tmp_path_factory, protection: str, suffix: str,
                     client_conf: dict | None = None) -> dict[str, SideRun]:
    """:func:`run_sides` over Kerberos: ours started Kerberized in ``realm`` with
    ``protection`` as hadoop.rpc.protection, beside ``stock`` (Kerberized alike by the
    caller); Spark logged in from alice's ticket cache (:func:`tests.support.kerberos.
    spark_settings`), with ``client_conf`` besides (a Hive client of another version). Fails
    the test when ours did not see alice as the caller."""
    from tests.support.kerberos import QOP_OF, ready_as, spark_settings
    from tests.support.proxy import start_proxy

    conf, env = spark_settings(realm, tmp_path_factory.mktemp(f"spark{suffix}-conf"),
                               protection)
    conf.update(client_conf or {})
    ours = start_proxy(tmp_path_factory.mktemp(f"proxy{suffix}"),
                       *realm.server_args("--rpc-protection", protection),
                       env=realm.server_env(), ask=ready_as(realm, qop=QOP_OF[protection]))
    try:
        runs = run_sides({"oracle": stock, "proxy": ours}, tmp_path_factory, conf,
                         suffix=suffix, env=env)
        assert "user=alice" in ours.log_path.read_text()  # the principal, not set_ugi's
    finally:
        ours.stop()
    return runs
