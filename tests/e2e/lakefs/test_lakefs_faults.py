"""Our server over a real lakeFS that stops answering, dies and comes back (faults made on the
real process: SIGSTOP, SIGKILL, a restart on the same port and directory; no test double).

A read is served from the branch state the server refreshed less than a second ago
(``stale_after``), so it is answered for that second; after it, a call meeting a hung lakeFS
fails after the store's read timeout with a MetaException naming lakeFS (the default, 8 s,
is below a client's own timeout: Trino's is 10 s), and a dead lakeFS fails calls at once,
without waiting for any timeout. A write always needs lakeFS. When lakeFS is back the same
server answers again, with nothing acknowledged lost.

The hung case runs with a read timeout of 3 s (``HMS_LAKEFS_READ_TIMEOUT``) and checks that
the call failed because that timeout ran out: no sooner, and long before a client would give
up. Bounds on a call's time are kept only where the bound is the feature, with margins a
machine running two test suites at once keeps.
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
from tests.support.wait import wait_until  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
STALE = 1.2  # seconds: past LakeFSStore.stale_after (1 s at the default refresh)


HUNG_READ_TIMEOUT = 3.0  # seconds: the hung test's lakeFS read timeout


@pytest.fixture
def stack(request, tmp_path):
    """A lakeFS of the test's own (so it can be stopped and killed) and our server over it;
    ``@pytest.mark.read_timeout(S)`` sets the server's lakeFS read timeout."""
    lakefs = lakefs_local.start_lakefs(tmp_path / "lakefs")
    lakefs.create_repository("faults")
    env = dict(os.environ, **lakefs.env(), PYTHONPATH=str(REPO_ROOT))
    marker = request.node.get_closest_marker("read_timeout")
    if marker is not None:
        env["HMS_LAKEFS_READ_TIMEOUT"] = str(marker.args[0])
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


def test_the_default_read_timeout_is_below_the_clients_own():
    """What a hung lakeFS costs a call by default: the read timeout, under Trino's 10 s
    metastore timeout, so a client gets the server's MetaException rather than its own
    time-out (the hung test below shows the call takes that timeout)."""
    import kvmodel.store.lakefs as lakefs_store

    if "HMS_LAKEFS_READ_TIMEOUT" not in os.environ:
        assert lakefs_store.READ_TIMEOUT == 8.0
    assert lakefs_store.READ_TIMEOUT < 10.0


@pytest.mark.read_timeout(HUNG_READ_TIMEOUT)
def test_a_hung_lakefs_fails_calls_after_the_read_timeout_and_recovers(stack):
    lakefs = stack["lakefs"]
    with connect(stack["server"]) as client:
        client.create_database(T.Database("shop", "", None, {}))
        client.create_table(table("before"))
        os.killpg(lakefs.pid, signal.SIGSTOP)  # accepts connections, answers nothing
        try:
            exc, took = failing(client.create_table, table("during"))
            # failed by the read timeout running out: not sooner, and not left hanging
            assert "lakeFS" in exc.message, exc.message
            assert HUNG_READ_TIMEOUT <= took < HUNG_READ_TIMEOUT + 30, took
            time.sleep(STALE)  # the branch state read before the fault is no longer used
            exc, took = failing(client.get_table, "shop", "nope")
            assert "lakeFS" in exc.message, exc.message
            assert took < 2 * HUNG_READ_TIMEOUT + 30, took  # a refresh waited for, then its own
        finally:
            os.killpg(lakefs.pid, signal.SIGCONT)
        # the same server answers again; what was acknowledged is there
        def answers():
            try:
                return client.get_table("shop", "before").tableName == "before"
            except T.MetaException:  # lakeFS is still catching up
                return False
        wait_until(answers, what="the server answers again once lakeFS is back")
        client.create_table(table("after"))
        names = set(client.get_all_tables("shop"))
        # the write that timed out is indeterminate, as any timed-out write: whole or absent
        assert {"before", "after"} <= names <= {"before", "after", "during"}


def test_a_dead_lakefs_fails_calls_at_once_and_a_restarted_one_is_used_again(stack):
    """At once: a refused connection is retried twice (0.2 s, then 0.4 s) and the call fails,
    with no read timeout (8 s here) waited."""
    import kvmodel.store.lakefs as lakefs_store

    lakefs = stack["lakefs"]
    with connect(stack["server"]) as client:
        client.create_database(T.Database("shop", "", None, {}))
        client.create_table(table("kept"))
        os.killpg(lakefs.pid, signal.SIGKILL)
        lakefs.proc.wait()
        exc, took = failing(client.create_table, table("lost"))
        assert "lakeFS" in exc.message, exc.message
        assert took < lakefs_store.READ_TIMEOUT, took
        time.sleep(STALE)  # the branch state read before the fault is no longer used
        exc, took = failing(client.get_table, "shop", "kept")
        assert "lakeFS is not reachable" in exc.message, exc.message
        assert took < lakefs_store.READ_TIMEOUT, took
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
        made = []
        try:
            for i in range(20):  # each one waited for lakeFS within its timeout, not failed
                client.create_table(table(f"t{i}"))
                made.append(f"t{i}")
                assert client.get_table("shop", f"t{i}").tableName == f"t{i}"
        finally:
            stop.set()
            thread.join(60)
            assert not thread.is_alive()
            os.killpg(lakefs.pid, signal.SIGCONT)
        assert set(client.get_all_tables("shop")) == set(made)
