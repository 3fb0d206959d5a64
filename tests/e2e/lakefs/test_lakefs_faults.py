"""Our server over a real lakeFS that stops answering, dies and comes back (faults made on the
real process: SIGSTOP, SIGKILL, a restart on the same port and directory; no test double).

A read is served from the branch state the server refreshed less than a second ago
(``stale_after``), so it is answered for that second; after it, a call meeting a hung lakeFS
fails within seconds with a MetaException naming lakeFS, well before a client's own timeout
(Trino's is 10 s), and a dead lakeFS fails calls at once. A write always needs lakeFS. When
lakeFS is back the same server answers again, with nothing acknowledged lost.
"""
from __future__ import annotations

import os
import signal
import time

import lakefs_sdk  # noqa: F401
import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from hms_proxy.tools import lakefs_local  # noqa: E402
from tests.support.client import connect  # noqa: E402
from tests.support.process import REPO_ROOT  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
STALE = 1.2  # seconds: past LakeFSStore.stale_after (1 s at the default refresh)


@pytest.fixture
def stack(tmp_path):
    lakefs = lakefs_local.start_lakefs(tmp_path / "lakefs")
    lakefs.create_repository("faults")
    env = dict(os.environ, **lakefs.env(), PYTHONPATH=str(REPO_ROOT))
    server = start_proxy(tmp_path / "hms", "--autocommit", store="lakefs://faults",
                         warehouse=False, env=env)
    holder = {"lakefs": lakefs, "server": server, "dir": tmp_path / "lakefs"}
    try:
        yield holder
    finally:
        server.stop()
        holder["lakefs"].stop()


def table(name: str) -> T.Table:
    sd = T.StorageDescriptor(cols=[T.FieldSchema("id", "bigint", None)], location=None,
                             inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                             outputFormat="org.apache.hadoop.hive.ql.io."
                                          "HiveIgnoreKeyTextOutputFormat",
                             serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy."
                                                         "LazySimpleSerDe", {}))
    return T.Table(name, "shop", "ann", 0, 0, 0, sd, [], {}, None, None, "MANAGED_TABLE")


def failing(call, *args):
    """(the MetaException raised, seconds it took)."""
    started = time.monotonic()
    with pytest.raises(T.MetaException) as info:
        call(*args)
    return info.value, time.monotonic() - started


def test_a_hung_lakefs_fails_calls_within_seconds_and_recovers(stack):
    lakefs = stack["lakefs"]
    with connect(stack["server"]) as client:
        client.create_database(T.Database("shop", "", None, {}))
        client.create_table(table("before"))
        os.killpg(lakefs.pid, signal.SIGSTOP)  # accepts connections, answers nothing
        try:
            exc, took = failing(client.create_table, table("during"))
            assert "lakeFS" in exc.message and took < 10, (exc.message, took)
            time.sleep(STALE)  # the branch state read before the fault is no longer used
            exc, took = failing(client.get_table, "shop", "nope")
            assert "lakeFS" in exc.message and took < 10, (exc.message, took)
        finally:
            os.killpg(lakefs.pid, signal.SIGCONT)
        # the same server answers again; what was acknowledged is there
        deadline = time.monotonic() + 30
        while True:
            try:
                assert client.get_table("shop", "before").tableName == "before"
                break
            except T.MetaException:
                assert time.monotonic() < deadline
                time.sleep(0.5)
        client.create_table(table("after"))
        names = set(client.get_all_tables("shop"))
        # the write that timed out is indeterminate, as any timed-out write: whole or absent
        assert {"before", "after"} <= names <= {"before", "after", "during"}


def test_a_dead_lakefs_fails_calls_at_once_and_a_restarted_one_is_used_again(stack):
    lakefs = stack["lakefs"]
    with connect(stack["server"]) as client:
        client.create_database(T.Database("shop", "", None, {}))
        client.create_table(table("kept"))
        os.killpg(lakefs.pid, signal.SIGKILL)
        lakefs.proc.wait()
        exc, took = failing(client.create_table, table("lost"))
        assert "lakeFS" in exc.message and took < 5
        time.sleep(STALE)  # the branch state read before the fault is no longer used
        exc, took = failing(client.get_table, "shop", "kept")
        assert "lakeFS is not reachable" in exc.message and took < 5, (exc.message, took)
        # lakeFS back on the same port and directory: no restart of our server
        stack["lakefs"] = lakefs_local.start_lakefs(stack["dir"], port=lakefs.port)
        assert client.get_table("shop", "kept").tableName == "kept"
        assert "lost" not in client.get_all_tables("shop")
        client.create_table(table("later"))
        assert set(client.get_all_tables("shop")) == {"kept", "later"}


def test_a_slow_lakefs_slows_writes_but_loses_nothing_and_reads_go_on(stack):
    """Latency injected into the real lakeFS: it is stopped for 0.3 s in every 0.5 s
    (SIGSTOP/SIGCONT), so its calls take up to 0.3 s longer. Writes wait for it within their
    timeout and all succeed; reads keep answering; everything acknowledged is there."""
    import threading

    lakefs = stack["lakefs"]
    stop = threading.Event()

    def stutter():
        while not stop.is_set():
            os.killpg(lakefs.pid, signal.SIGSTOP)
            time.sleep(0.3)
            os.killpg(lakefs.pid, signal.SIGCONT)
            time.sleep(0.2)

    with connect(stack["server"]) as client:
        client.create_database(T.Database("shop", "", None, {}))
        thread = threading.Thread(target=stutter, daemon=True)
        thread.start()
        made, slowest = [], 0.0
        try:
            for i in range(20):
                started = time.monotonic()
                client.create_table(table(f"t{i}"))
                slowest = max(slowest, time.monotonic() - started)
                made.append(f"t{i}")
                assert client.get_table("shop", f"t{i}").tableName == f"t{i}"
        finally:
            stop.set()
            thread.join(5)
            os.killpg(lakefs.pid, signal.SIGCONT)
        assert slowest < 8, slowest  # within lakeFS's read timeout: waited, not failed
        assert set(client.get_all_tables("shop")) == set(made)
