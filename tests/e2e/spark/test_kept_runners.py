"""The JVMs kept for the tests' Spark runs (:mod:`tests.support.spark_runs`) give each run what
a fresh process would: the metastore of its own ``--uri``, none of the earlier run's settings,
databases or session state."""
from __future__ import annotations

import json
import os
import sys

import pytest

from tests.support import spark_runs
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def _run(tmp_path, name: str, uri: str, statements: list, **env) -> list[dict]:
    work = tmp_path / name
    work.mkdir()
    (work / "statements.json").write_text(json.dumps(statements))
    done = spark_runs.run([sys.executable, str(spark_runs.RUNNER), "--uri", uri, "--warehouse",
                           str(work / "warehouse"), "--statements", "statements.json",
                           "--output", "out.jsonl"], cwd=work, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT),
                                   PYSPARK_PYTHON=sys.executable, **env))
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line)["result"] for line in (work / "out.jsonl").read_text().splitlines()]


def test_each_run_is_a_fresh_session_against_its_own_metastore(tmp_path):
    a = start_proxy(tmp_path / "a")
    b = start_proxy(tmp_path / "b")
    try:
        first = _run(tmp_path, "one", a.uri, [
            "CREATE DATABASE only_a", "USE only_a", "SET spark.sql.shuffle.partitions=7",
            "CREATE TEMPORARY VIEW v AS SELECT 1 AS x"])
        assert all("rows" in r for r in first), first
        second = _run(tmp_path, "two", b.uri, [
            "SHOW DATABASES", "SELECT current_database()", "SET spark.sql.shuffle.partitions",
            "SHOW VIEWS"])
        assert second[0]["rows"] == [["default"]]  # b's metastore, not a's
        assert second[1]["rows"] == [["default"]]
        assert second[2]["rows"] == [["spark.sql.shuffle.partitions", "2"]]  # the runner's own
        assert second[3]["rows"] == []
        third = _run(tmp_path, "three", a.uri, ["SHOW DATABASES"])
        assert third[0]["rows"] == [["default"], ["only_a"]]
    finally:
        a.stop()
        b.stop()


def test_a_runner_that_dies_is_replaced(tmp_path):
    a = start_proxy(tmp_path / "a")
    try:
        _run(tmp_path, "one", a.uri, ["SELECT 1"])
        with spark_runs._lock:
            kept = [r for pool in spark_runs._idle.values() for r in pool]
        for runner in kept:
            runner.kill()
        assert _run(tmp_path, "two", a.uri, ["SELECT 2"])[0]["rows"] == [[2]]
    finally:
        a.stop()


def test_idle_runners_beyond_the_limit_are_stopped(tmp_path, monkeypatch):
    """Runners of two kinds (another environment) and a limit of one: the older is stopped."""
    monkeypatch.setattr(spark_runs, "KEPT", 1)
    spark_runs.close_all()
    a = start_proxy(tmp_path / "a")
    try:
        _run(tmp_path, "one", a.uri, ["SELECT 1"], TZ="UTC")
        with spark_runs._lock:
            [first] = [r for pool in spark_runs._idle.values() for r in pool]
        _run(tmp_path, "two", a.uri, ["SELECT 2"], TZ="Etc/UTC")
        with spark_runs._lock:
            kept = [r for pool in spark_runs._idle.values() for r in pool]
        assert len(kept) == 1 and kept[0] is not first
        assert not first.alive()
    finally:
        a.stop()
