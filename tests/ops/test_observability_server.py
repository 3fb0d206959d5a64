"""Observability of a real server process: ``serve --metrics-port`` scraped over HTTP before
and after calls (exact counter deltas, errors by exception, histograms, connections,
autocommit commits), ``--log-format json`` read line by line from the server's log (a line
per catalog write at INFO, reads only at DEBUG), and ``hms-proxy doctor`` against a healthy
server, a dead port and a lakeFS repository (the lakeFS REST API test double)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime

import pytest
from thrift.Thrift import TApplicationException
from thrift.transport import TTransport

from tests.support.client import Client, open_protocol
from tests.support.client import ttypes as T
from tests.support.process import REPO_ROOT, free_port
from tests.support.proxy import start_proxy
from tests.support.wait import eventually, wait_until

pytestmark = pytest.mark.timeout(300)


def with_metrics_url(proc):
    """``proc`` (started with ``--metrics-port 0``: the server picks a free port, so no other
    process can take it first) with ``metrics_url``, from the line the server prints."""
    def announced():
        found = re.findall(r"^hms-proxy metrics on (http://\S+):(\d+)/metrics$",
                           proc.log_path.read_text(errors="replace"), re.M)
        return found and f"{found[-1][0]}:{found[-1][1]}"

    proc.metrics_url = wait_until(announced, what="the server's metrics port")
    return proc


@pytest.fixture(scope="module")
def info_server(tmp_path_factory):
    """JSON logs at INFO, metrics, every write committed."""
    proc = with_metrics_url(start_proxy(tmp_path_factory.mktemp("obs-info"), "--metrics-port",
                                        "0", "--autocommit", "--log-format", "json"))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def debug_server(tmp_path_factory):
    """JSON logs at DEBUG, metrics, at most 2 connections."""
    proc = with_metrics_url(start_proxy(tmp_path_factory.mktemp("obs-debug"), "--metrics-port",
                                        "0", "--log-format", "json", "--log-level", "DEBUG",
                                        "--max-connections", "2"))
    yield proc
    proc.stop()


class Session:
    """A client connection; ``local`` is its address as the server names its peer."""

    def __init__(self, proc, user: str | None = None):
        self._cm = open_protocol(proc.host, proc.port, timeout=30)
        protocol = self._cm.__enter__()
        self.client = Client(protocol)
        host, port = protocol.trans._TBufferedTransport__trans.handle.getsockname()[:2]
        self.local = f"{host}:{port}"
        if user is not None:
            self.client.set_ugi(user, [])

    def close(self):
        self._cm.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- scraping -------------------------------------------------------------------------------
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(proc) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(proc.metrics_url + "/metrics", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(_LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def settled(proc, check=None) -> dict[tuple[str, frozenset], float]:
    """A scrape that counts every call answered so far (and, with ``check``, a function that
    asserts on the samples, one that passes it: counters only grow, so ``check`` asserts that
    they reached what the test expects, and the test then that they are exactly that).

    A call is counted on its connection's thread just after its reply is sent, so a client
    may hold its answer before the count; but that thread counts it before it reads the
    connection's next call, and closes the connection (and counts it closed) only after that.
    Once the clients closed their connections, no connection open means every call of theirs
    is counted: a scrape after the one that saw none is complete (a scrape reads the calls
    before the connections)."""
    wait_until(lambda: value(scrape(proc), "hms_connections_open") == 0,
               what="no client connection open")

    def complete():
        samples = scrape(proc)
        if check is not None:
            check(samples)
        return samples

    return eventually(complete)


# --- metrics --------------------------------------------------------------------------------
def test_calls_and_errors_are_counted_exactly(info_server):
    before = settled(info_server)
    with Session(info_server, "alice") as s:
        for _ in range(3):
            s.client.get_database("default")
        with pytest.raises(T.NoSuchObjectException):
            s.client.get_database("no_such_db")
        s.client.get_all_databases()
        with pytest.raises(TApplicationException) as app:  # fb303 getCounter of a null key
            s.client.getCounter(None)
        assert app.value.type == TApplicationException.INTERNAL_ERROR
    expected = {
        ("hms_calls_total", frozenset({("method", "get_database")})): 4,
        ("hms_calls_total", frozenset({("method", "get_all_databases")})): 1,
        ("hms_calls_total", frozenset({("method", "set_ugi")})): 1,
        ("hms_calls_total", frozenset({("method", "getCounter")})): 1,
        ("hms_call_errors_total", frozenset({("method", "get_database"),
                                             ("exception", "NoSuchObjectException")})): 1,
        ("hms_call_errors_total", frozenset({("method", "getCounter"),
                                             ("exception", "InternalError")})): 1,
    }

    def changes(samples, *names):
        return {k: v - before.get(k, 0) for k, v in samples.items()
                if k[0] in names and v != before.get(k, 0)}

    def reached(samples):
        got = changes(samples, "hms_calls_total", "hms_call_errors_total")
        assert all(got.get(k, 0) >= n for k, n in expected.items()), got

    after = settled(info_server, reached)  # each count reached its delta: now none may differ
    assert changes(after, "hms_calls_total", "hms_call_errors_total") == expected
    assert value(after, "hms_call_duration_seconds_count", method="get_database") - \
        value(before, "hms_call_duration_seconds_count", method="get_database") == 4
    assert value(after, "hms_call_duration_seconds_sum", method="get_database") > \
        value(before, "hms_call_duration_seconds_sum", method="get_database")


def test_histograms_are_consistent(info_server):
    with Session(info_server) as s:
        s.client.get_all_databases()
    samples = settled(info_server)
    methods = {dict(labels)["method"] for name, labels in samples if name == "hms_calls_total"}
    assert {"get_all_databases", "get_database"} <= methods
    for method in methods:
        count = value(samples, "hms_call_duration_seconds_count", method=method)
        assert count == value(samples, "hms_calls_total", method=method)
        buckets = sorted(
            (float("inf") if dict(labels)["le"] == "+Inf" else float(dict(labels)["le"]), v)
            for (name, labels), v in samples.items()
            if name == "hms_call_duration_seconds_bucket" and dict(labels)["method"] == method)
        assert len(buckets) == 17 and buckets[0][0] == 0.0001 and buckets[-2][0] == 10.0
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), f"{method}: buckets not cumulative"
        assert counts[-1] == count
        assert value(samples, "hms_call_duration_seconds_sum", method=method) >= 0


def test_autocommit_commits_are_counted(info_server):
    before = settled(info_server)
    with Session(info_server, "alice") as s:
        s.client.create_database(T.Database("obs_commits", "", None, {}))
        with pytest.raises(T.AlreadyExistsException):
            s.client.create_database(T.Database("obs_commits", "", None, {}))
        s.client.alter_database("obs_commits", T.Database("obs_commits", "", None, {"k": "v"}))
        s.client.drop_database("obs_commits", True, True)
    def reached(samples):
        assert value(samples, "hms_commits_total") - value(before, "hms_commits_total") >= 3

    after = settled(info_server, reached)
    assert value(after, "hms_commits_total") - value(before, "hms_commits_total") == 3
    assert value(after, "hms_merges_total") == 0
    assert value(after, "hms_call_errors_total", method="create_database",
                 exception="AlreadyExistsException") - \
        value(before, "hms_call_errors_total", method="create_database",
              exception="AlreadyExistsException") == 1
    assert value(after, "hms_branches") == 1
    assert value(after, "hms_store_up") == 1
    assert value(after, "hms_store_size_bytes", file="store.db") > 0


def test_open_connections_go_up_and_down(info_server):
    wait_until(lambda: value(scrape(info_server), "hms_connections_open") == 0,
               what="no connection open")
    before = scrape(info_server)
    sessions = [Session(info_server) for _ in range(3)]
    try:
        for s in sessions:
            s.client.getStatus()  # answered: the connection is being served
        during = scrape(info_server)
        assert value(during, "hms_connections_open") == 3
        assert value(during, "hms_connections_accepted_total") - \
            value(before, "hms_connections_accepted_total") == 3
    finally:
        for s in sessions:
            s.close()
    wait_until(lambda: value(scrape(info_server), "hms_connections_open") == 0,
               what="no connection open")


def test_refused_connections_are_counted(debug_server):
    wait_until(lambda: value(scrape(debug_server), "hms_connections_open") == 0,
               what="no connection open")
    before = scrape(debug_server)
    sessions = [Session(debug_server) for _ in range(2)]
    try:
        for s in sessions:
            s.client.getStatus()
        with pytest.raises((TTransport.TTransportException, OSError)):
            with Session(debug_server) as third:  # over --max-connections 2: closed at once
                third.client.getStatus()
        wait_until(lambda: value(scrape(debug_server), "hms_connections_refused_total")
                   - value(before, "hms_connections_refused_total") >= 1,
                   what="the third connection counted as refused")
        assert value(scrape(debug_server), "hms_connections_refused_total") - \
            value(before, "hms_connections_refused_total") == 1
        assert value(scrape(debug_server), "hms_connections_open") == 2
    finally:
        for s in sessions:
            s.close()


def test_process_store_and_cache_figures(info_server):
    samples = scrape(info_server)
    assert value(samples, "process_resident_memory_bytes") > 10 << 20
    assert value(samples, "hms_uptime_seconds") > 0
    assert value(samples, "process_start_time_seconds") <= time.time()
    assert value(samples, "hms_cache_capacity_bytes") == 256 << 20
    assert any(name == "hms_build_info" for name, _ in samples)


def test_healthz(info_server):
    with urllib.request.urlopen(info_server.metrics_url + "/healthz", timeout=10) as resp:
        assert resp.status == 200
        assert resp.read().decode().startswith("ok main ")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(info_server.metrics_url + "/nothing", timeout=10)
    assert err.value.code == 404


# --- JSON logs ------------------------------------------------------------------------------
def log_lines(proc, offset: int) -> list[dict]:
    """The server's JSON log lines after byte ``offset`` (its stdout lines excepted)."""
    text = proc.log_path.read_bytes()[offset:].decode()
    out = []
    for line in text.splitlines():
        if line.startswith("hms-proxy listening") or line.startswith("hms-proxy metrics"):
            continue
        out.append(json.loads(line))  # every other line is JSON
    return out


def call_lines(proc, offset: int, peer: str) -> list[dict]:
    """The call lines of client ``peer``, whose connection the client closed: a call's line is
    written (and flushed) on the connection's thread with its count, before that thread reads
    the next call and long before it closes the connection (see :func:`settled`)."""
    settled(proc)
    return [r for r in log_lines(proc, offset)
            if r["logger"] == "hms_proxy.calls" and r.get("peer") == peer]


def test_json_logs_have_one_line_per_write_at_info(info_server):
    offset = info_server.log_path.stat().st_size
    with Session(info_server, "bob") as s:
        s.client.get_database("default")
        s.client.get_all_databases()
        s.client.create_database(T.Database("obs_logs", "", None, {}))
        with pytest.raises(T.AlreadyExistsException):
            s.client.create_database(T.Database("obs_logs", "", None, {}))
        with pytest.raises(T.NoSuchObjectException):
            s.client.get_table("obs_logs", "missing")
        s.client.get_tables("obs_logs", "*")
        s.client.drop_database("obs_logs", True, True)
        peer = s.local
    lines = call_lines(info_server, offset, peer)
    assert [(r["method"], r["outcome"]) for r in lines] == [
        ("create_database", "ok"), ("create_database", "AlreadyExistsException"),
        ("drop_database", "ok")]
    for r in lines:
        assert r["level"] == "INFO" and r["write"] is True
        assert r["user"] == "bob" and r["peer"] == peer and r["ref"] == "main"
        assert r["object"] == "obs_logs"
        assert isinstance(r["duration_ms"], float) and r["duration_ms"] > 0
        assert r["message"].startswith(f"{r['method']} obs_logs user=bob peer={peer} ref=main ")
        datetime.fromisoformat(r["time"].replace("Z", "+00:00"))
    # every line of the log is JSON, the server's own lines too
    assert all({"time", "level", "logger", "message"} <= set(r) for r in log_lines(info_server, 0))


def test_json_logs_at_debug_show_every_call_once(debug_server):
    offset = debug_server.log_path.stat().st_size
    with Session(debug_server, "carol") as s:
        s.client.get_database("default")
        s.client.get_all_databases()
        s.client.create_database(T.Database("obs_debug", "", None, {}))
        with pytest.raises(T.NoSuchObjectException):
            s.client.get_database("obs_nothing")
        peer = s.local
    lines = call_lines(debug_server, offset, peer)
    assert [(r["method"], r["level"], r["outcome"]) for r in lines] == [
        ("set_ugi", "DEBUG", "ok"), ("get_database", "DEBUG", "ok"),
        ("get_all_databases", "DEBUG", "ok"), ("create_database", "INFO", "ok"),
        ("get_database", "DEBUG", "NoSuchObjectException")]
    # set_ugi's own line comes after it: its user is known
    assert [r["user"] for r in lines] == ["carol"] * 5


# --- doctor ---------------------------------------------------------------------------------
def doctor(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", "doctor", *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env=env)


def test_doctor_passes_on_a_healthy_deployment(info_server):
    out = doctor("--store", str(info_server.workdir / "store"),
                 "--metastore", info_server.uri, "--metrics", info_server.metrics_url)
    assert out.returncode == 0, out.stdout + out.stderr
    status = {line[6:15].strip(): line[:4].strip() for line in out.stdout.splitlines()
              if line[:4].strip() in ("OK", "WARN", "FAIL")}
    assert status["store"] == status["refs"] == status["metastore"] == "OK", out.stdout
    assert status["metrics"] == "OK", out.stdout
    assert status["versions"] in ("OK", "WARN")  # WARN: no Java for the statistics job
    assert "quick_check ok" in out.stdout and "getStatus ALIVE" in out.stdout
    assert re.search(r"^\s+main\s+[0-9a-f]{12}\s", out.stdout, re.M), out.stdout
    assert out.stdout.rstrip().endswith("all passed")


def test_doctor_names_the_failing_checks_of_a_dead_deployment(tmp_path):
    dead_thrift, dead_http = free_port(), free_port()
    out = doctor("--metastore", f"thrift://127.0.0.1:{dead_thrift}",
                 "--metrics", f"http://127.0.0.1:{dead_http}")
    assert out.returncode == 1
    assert re.search(r"^FAIL\s+metastore\s+thrift://127\.0\.0\.1:\d+: ", out.stdout, re.M)
    assert re.search(r"^FAIL\s+metrics\s+", out.stdout, re.M)
    assert "2 failed (metastore, metrics)" in out.stdout
    out = doctor("--store", str(tmp_path / "nothing"), "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["ok"] is False and report["failed"] == ["store"]
    assert "no store at" in report["checks"][1]["detail"]


def test_doctor_checks_a_lakefs_repository(tmp_path):
    import lakefs_sdk  # noqa: F401

    from tests.support.lakefs import new_repository, real_lakefs

    lakefs = real_lakefs()
    repo = new_repository("doctor")
    env = dict(os.environ, **lakefs.env(), PYTHONPATH=str(REPO_ROOT))
    out = doctor("--store", f"lakefs://{repo}", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(rf"^OK\s+store\s+lakefs://{repo}: lakeFS repository reachable", out.stdout,
                     re.M), out.stdout
    assert re.search(r"^OK\s+refs\s+1 branch ", out.stdout, re.M), out.stdout
    out = doctor("--store", f"lakefs://{repo}", env={**env, "LAKEFS_SECRET_ACCESS_KEY": "wrong"})
    assert out.returncode == 1
    assert re.search(rf"^FAIL\s+store\s+lakefs://{repo}: ", out.stdout, re.M), out.stdout


def test_metrics_of_a_server_over_lakefs(tmp_path):
    import lakefs_sdk  # noqa: F401

    from tests.support.lakefs import new_repository, real_lakefs

    lakefs = real_lakefs()
    repo = new_repository("metrics")
    env = dict(os.environ, **lakefs.env(), PYTHONPATH=str(REPO_ROOT))
    # (no --autocommit: over lakeFS its commit waits for the branch lock that the write
    # transaction around it holds)
    proc = start_proxy(tmp_path, "--metrics-port", "0",
                       store=f"lakefs://{repo}", warehouse=False, env=env)
    try:
        with_metrics_url(proc)
        before = settled(proc)
        with Session(proc, "dana") as s:
            s.client.create_database(T.Database("lake_db", "", None, {}))
            s.client.get_database("lake_db")

        def reached(samples):
            assert value(samples, "hms_calls_total", method="get_database") >= 1

        after = settled(proc, reached)
        assert value(after, "hms_calls_total", method="create_database") == 1
        # (the only commit is the server's own, of the default database it created at start)
        assert value(after, "hms_commits_total") == value(before, "hms_commits_total") <= 1
        assert value(after, "hms_lakefs_requests_total") > \
            value(before, "hms_lakefs_requests_total") > 0
        assert value(after, "hms_branches") == 1 and value(after, "hms_store_up") == 1
        assert not any(name == "hms_store_size_bytes" for name, _ in after)
        with urllib.request.urlopen(proc.metrics_url + "/healthz", timeout=10) as resp:
            assert resp.status == 200
    finally:
        proc.stop()
