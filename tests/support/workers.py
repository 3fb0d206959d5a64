"""The workers of ``hms-proxy serve --processes N`` (one port, SO_REUSEPORT): which ones
listen, and clients known to be connected to each, so that a test of what workers share can
prove that a writer and a reader were answered by different processes."""
from __future__ import annotations

from contextlib import ExitStack

import psutil
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from tests.support.wait import wait_until


def listening(server, port: int) -> list[psutil.Process]:
    """The supervisor's workers that listen on ``port``."""
    found = []
    for child in psutil.Process(server.popen.pid).children():
        try:
            if any(k.status == psutil.CONN_LISTEN and k.laddr.port == port
                   for k in child.net_connections()):
                found.append(child)
        except psutil.NoSuchProcess:  # a worker that exited (a test killed it)
            pass
    return found


def workers(server, port: int | None = None, count: int = 2) -> list[psutil.Process]:
    """The supervisor's ``count`` workers, once all of them listen on ``port`` (default the
    Thrift one)."""
    port = server.port if port is None else port

    def all_listening() -> list:
        found = listening(server, port)
        return found if len(found) == count else []
    return wait_until(all_listening, interval=0.2,
                      what=f"{count} workers listening on port {port}")


def clients_on_each_worker(server, stack: ExitStack,
                           count: int = 2) -> dict[int, ThriftHiveMetastore.Client]:
    """One client connected to each worker, by worker pid (new connections until every worker
    has one; the kernel spreads them). The connections close with ``stack``."""
    pids = {w.pid for w in workers(server, count=count)}
    found: dict[int, ThriftHiveMetastore.Client] = {}
    for _ in range(64 * count):
        sock = TSocket.TSocket(server.host, server.port)
        sock.setTimeout(60_000)
        transport = TTransport.TBufferedTransport(sock)
        transport.open()
        stack.callback(transport.close)
        client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
        client.get_all_databases()  # accepted by a worker, which now holds the connection
        local = sock.handle.getsockname()[1]
        for pid in pids - set(found):
            if any(c.raddr and c.raddr.port == local
                   for c in psutil.Process(pid).net_connections()):
                found[pid] = client
        if len(found) == len(pids):
            return found
    raise AssertionError(f"connections did not reach every worker: {sorted(found)} of "
                         f"{sorted(pids)}")
