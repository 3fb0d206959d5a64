"""A malformed, hostile or vanishing client never takes the server down, leaks or loses data.

Each test talks to a real server subprocess over a real socket; memory and threads are read
from the server process itself (psutil).
"""
from __future__ import annotations

import os
import random
import signal
import socket
import struct
import threading
import time

import psutil
import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from tests.support.proxy import start_proxy
from tests.support.wait import DEADLINE, wait_until

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = start_proxy(tmp_path_factory.mktemp("robust"))
    yield proc
    proc.stop()


class Client:
    """Our generated client over a buffered transport, closed on exit."""

    def __init__(self, proc, timeout_ms=30_000):
        sock = TSocket.TSocket(proc.host, proc.port)
        sock.setTimeout(timeout_ms)
        self.transport = TTransport.TBufferedTransport(sock)
        self.transport.open()
        self.client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(self.transport))

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.transport.close()


def make_table(c, db, tbl, keys=("ds",)):
    cols = [ttypes.FieldSchema(f"c{i}", "string", None) for i in range(5)]
    sd = ttypes.StorageDescriptor(
        cols=cols, inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=ttypes.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"))
    c.create_table(ttypes.Table(tableName=tbl, dbName=db, sd=sd, tableType="EXTERNAL_TABLE",
                                parameters={"EXTERNAL": "TRUE"},
                                partitionKeys=[ttypes.FieldSchema(k, "string", None) for k in keys]))
    return sd


def partition(db, tbl, sd, value):
    return ttypes.Partition(dbName=db, tableName=tbl, values=[value], sd=sd)


def rss(proc) -> int:
    return psutil.Process(proc.popen.pid).memory_info().rss


def threads(proc) -> int:
    return psutil.Process(proc.popen.pid).num_threads()


def raw_socket(proc) -> socket.socket:
    s = socket.create_connection((proc.host, proc.port), timeout=10)
    return s


def call_header(name: str, seqid: int = 1) -> bytes:
    version = TBinaryProtocol.TBinaryProtocol.VERSION_1 | TMessageType.CALL
    return struct.pack("!iI", version, len(name)) + name.encode() + struct.pack("!i", seqid)


def connections(proc) -> list:
    """The server's accepted connections still open (their sockets, in the server process)."""
    return [k for k in psutil.Process(proc.popen.pid).net_connections("tcp")
            if k.laddr.port == proc.port and k.status != psutil.CONN_LISTEN]


def closed_by_server(s: socket.socket, timeout: float = DEADLINE) -> bool:
    """True when the server closes the connection (EOF or reset) within ``timeout``."""
    s.settimeout(timeout)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def assert_serving(proc):
    """The server still answers a normal client."""
    with Client(proc) as c:
        assert "default" in c.get_all_databases()


# --- malformed input --------------------------------------------------------------------

def test_garbage_bytes_close_that_connection_only(server):
    with Client(server) as bystander:
        bystander.get_all_databases()
        rng = random.Random(7)
        for _ in range(20):
            s = raw_socket(server)
            s.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096))))
            s.shutdown(socket.SHUT_WR)
            assert closed_by_server(s)
            s.close()
        assert "default" in bystander.get_all_databases()


def test_truncated_message_is_dropped(server):
    s = raw_socket(server)
    s.sendall(call_header("get_database")[:-2])
    s.close()
    s = raw_socket(server)
    # A complete header, a string field announcing 100 bytes, then only 3 of them.
    s.sendall(call_header("get_database") + b"\x0b\x00\x01" + struct.pack("!i", 100) + b"abc")
    s.shutdown(socket.SHUT_WR)
    assert closed_by_server(s)
    s.close()
    assert_serving(server)


def test_huge_declared_list_closes_connection_with_bounded_memory(server):
    before = rss(server)
    s = raw_socket(server)
    # get_partitions_by_names(db_name=1, tbl_name=2, names=3: list<string>) declaring 2**31-1
    body = (b"\x0b\x00\x01" + struct.pack("!i", 1) + b"d"
            + b"\x0b\x00\x02" + struct.pack("!i", 1) + b"t"
            + b"\x0f\x00\x03" + b"\x0b" + struct.pack("!i", 2_000_000_000))
    s.sendall(call_header("get_partitions_by_names") + body + b"x" * 1000)
    assert closed_by_server(s)
    s.close()
    assert rss(server) - before < 64 * 1024 * 1024
    assert_serving(server)


def test_one_gigabyte_string_length_is_refused_before_allocation(server):
    before = rss(server)
    s = raw_socket(server)
    s.sendall(call_header("get_database") + b"\x0b\x00\x01" + struct.pack("!i", 1 << 30) + b"y" * 4096)
    assert closed_by_server(s)
    s.close()
    assert rss(server) - before < 64 * 1024 * 1024
    assert_serving(server)


def test_message_over_the_size_limit_is_refused(tmp_path):
    proc = start_proxy(tmp_path, "--max-message-size", "64k")
    try:
        before = rss(proc)
        s = raw_socket(proc)
        # A legal string of 1 MiB: every length is fine, but the message is 16x the limit.
        payload = call_header("get_database") + b"\x0b\x00\x01" + struct.pack("!i", 1 << 20)
        s.sendall(payload)
        try:
            s.sendall(b"z" * (1 << 20))
        except OSError:
            pass
        assert closed_by_server(s)
        s.close()
        assert rss(proc) - before < 64 * 1024 * 1024
        assert_serving(proc)
    finally:
        proc.stop()


def test_unknown_method_answers_unknown_method_and_keeps_the_connection(server):
    with Client(server) as c:
        proto = c._oprot
        proto.writeMessageBegin("no_such_method", TMessageType.CALL, 1)
        proto.writeStructBegin("args")
        proto.writeFieldStop()
        proto.writeStructEnd()
        proto.writeMessageEnd()
        proto.trans.flush()
        name, mtype, seqid = c._iprot.readMessageBegin()
        assert mtype == TMessageType.EXCEPTION and name == "no_such_method"
        exc = TApplicationException()
        exc.read(c._iprot)
        c._iprot.readMessageEnd()
        assert exc.type == TApplicationException.UNKNOWN_METHOD
        assert "Invalid method name: 'no_such_method'" in exc.message
        assert "default" in c.get_all_databases()


def test_vanishing_clients_leak_no_threads_or_descriptors(server):
    with Client(server) as c:
        c.create_database(ttypes.Database(name="vanish", parameters={}))
        sd = make_table(c, "vanish", "t")
        c.add_partitions([partition("vanish", "t", sd, f"v{i}") for i in range(2000)])
    # every connection so far closed by the server: their threads are no part of the baseline
    wait_until(lambda: not connections(server), what="the server's connections closed")
    base_threads = threads(server)
    base_fds = psutil.Process(server.popen.pid).num_fds()

    def burst():
        for i in range(50):
            s = raw_socket(server)
            # Ask for 2,000 partitions and leave before reading the answer.
            body = (b"\x0b\x00\x01" + struct.pack("!i", 6) + b"vanish"
                    + b"\x0b\x00\x02" + struct.pack("!i", 1) + b"t"
                    + b"\x06\x00\x03" + struct.pack("!h", -1) + b"\x00")
            s.sendall(call_header("get_partitions") + body)
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        # the server accepts connections in order: once a later client is answered, every
        # vanished one has been accepted (a loaded machine may still hold some in the backlog)
        with Client(server) as c:
            c.get_all_databases()
        wait_until(lambda: threads(server) <= base_threads,
                   what=f"the server back at its {base_threads} threads")
        return psutil.Process(server.popen.pid).num_fds()

    # SQLite connections are pooled (MAX_IDLE_CONNECTIONS idle at most, a few descriptors
    # each): however many clients come and go, descriptors stay under that bound.
    from kvmodel.store.local import MAX_IDLE_CONNECTIONS

    bound = base_fds + 3 * MAX_IDLE_CONNECTIONS + 16
    for _ in range(4):
        assert burst() <= bound
        assert threads(server) <= base_threads
    assert_serving(server)


# --- concurrency and durability ------------------------------------------------------------

def test_twenty_concurrent_clients_lose_no_write(server):
    with Client(server) as c:
        c.create_database(ttypes.Database(name="conc", parameters={}))
        sd = make_table(c, "conc", "shared")
    errors: list[BaseException] = []
    per_client = 30

    def work(n):
        try:
            with Client(server) as c:
                for i in range(per_client):
                    c.add_partition(partition("conc", "shared", sd, f"c{n}_{i}"))
                    if i % 3 == 0:
                        c.get_partitions("conc", "shared", -1)
                        c.get_table("conc", "shared")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(20)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=240)
    assert not any(w.is_alive() for w in workers), "a client is stuck (deadlock?)"
    assert not errors, errors[:3]
    with Client(server) as c:
        names = c.get_partition_names("conc", "shared", -1)
    assert len(names) == 20 * per_client
    assert set(names) == {f"ds=c{n}_{i}" for n in range(20) for i in range(per_client)}


def test_kill_dash_nine_loses_no_acknowledged_write(tmp_path):
    acknowledged: list[str] = []
    rng = random.Random(11)
    store_dir = tmp_path
    proc = start_proxy(store_dir)
    with Client(proc) as c:
        c.create_database(ttypes.Database(name="crash", parameters={}))
        sd = make_table(c, "crash", "t")
    try:
        for round_ in range(3):
            killed = threading.Event()
            acked_now: list[str] = []  # this round's
            failures: list[tuple[bool, BaseException]] = []  # (after the kill?, what)

            def writer():
                try:
                    with Client(proc, timeout_ms=int(DEADLINE * 1000)) as c:
                        i = 0
                        while True:
                            value = f"r{round_}_{i}"
                            c.add_partition(partition("crash", "t", sd, value))
                            acked_now.append(value)
                            i += 1
                except BaseException as exc:  # noqa: BLE001 - judged below
                    failures.append((killed.is_set(), exc))

            t = threading.Thread(target=writer)
            t.start()
            # some writes acknowledged, then the kill at a random moment of the ones that follow
            wait_until(lambda: acked_now or failures, what="a write acknowledged")
            assert not failures, f"the writer failed before the kill: {failures[0][1]!r}"
            time.sleep(rng.random())
            killed.set()
            os.killpg(proc.popen.pid, signal.SIGKILL)
            proc.popen.wait(DEADLINE)
            t.join(DEADLINE)
            assert not t.is_alive(), "the writer still waits for an answer from a killed server"
            # what the writer may see of a killed server: a socket error or an end of file (TSocket
            # makes either a TTransportException), and nothing before the kill
            assert [type(exc) for _, exc in failures] == [TTransport.TTransportException], failures
            assert failures[0][0], f"the writer failed before the kill: {failures[0][1]!r}"
            assert acked_now, "no write was acknowledged before the kill"
            acknowledged += acked_now
            proc.stop()
            proc = _restart(proc, store_dir)
            with Client(proc) as c:
                present = set(c.get_partition_names("crash", "t", -1))
            missing = [v for v in acknowledged if f"ds={v}" not in present]
            assert not missing, f"acknowledged writes lost after kill -9: {missing[:5]}"
    finally:
        proc.stop()


def _restart(old, store_dir):
    """A new server on the same store (a fresh port; the old one may linger in TIME_WAIT)."""
    return start_proxy(store_dir, name="proxy-restart")


def test_sigterm_shuts_down_cleanly(tmp_path):
    proc = start_proxy(tmp_path)
    with Client(proc) as c:
        c.get_all_databases()
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(20) == 0
    proc.stop()


def _framed_client(host, port):
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(10_000)
    transport = TTransport.TFramedTransport(sock)
    transport.open()
    return transport, ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))


def test_framed_transport_serves_and_bounds_frames(tmp_path):
    import subprocess
    import sys

    from tests.support.process import REPO_ROOT, free_port

    port = free_port()
    log = open(tmp_path / "framed.log", "wb")
    popen = subprocess.Popen(
        [sys.executable, "-m", "hms_proxy.cli", "serve", "--store", str(tmp_path / "store"),
         "--port", str(port), "--transport", "framed", "--max-message-size", "1m"],
        cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                transport, client = _framed_client("127.0.0.1", port)
                break
            except Exception:  # noqa: BLE001 - not listening yet
                if time.monotonic() > deadline or popen.poll() is not None:
                    raise
                time.sleep(0.3)
        client.create_database(ttypes.Database(name="framed", parameters={"k": "v"}))
        assert client.get_database("framed").parameters == {"k": "v"}
        transport.close()
        before = psutil.Process(popen.pid).memory_info().rss
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(struct.pack("!i", 1 << 30) + b"x" * 1024)  # a frame of 1 GiB announced
        assert closed_by_server(s)
        s.close()
        assert psutil.Process(popen.pid).memory_info().rss - before < 64 * 1024 * 1024
        transport, client = _framed_client("127.0.0.1", port)
        assert "framed" in client.get_all_databases()
        transport.close()
    finally:
        popen.terminate()
        popen.wait(20)
        log.close()
