"""Limits that protect the server (issue 7): the partition request limit (against the stock HMS
with the same setting), the response size cap, idle connection reaping, the per-client
connection cap, and listings streamed in bounded memory.

Each test talks to real server processes over real sockets; threads, descriptors and memory are
read from the server process itself (psutil).
"""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import psutil
import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from hms_proxy.thrift.replies import RawStream, write_stream_reply
from hms_proxy.tools.bench import listing_memory
from hms_proxy.tools.bench.listing_memory import DB, TABLE
from hms_proxy.tools.metastores import MetastoreProcess, free_port, start_stock_hms
from tests.hms.conformance.builders import cols, database, partition, table
from tests.hms.conformance.harness import LiveClient, Recorder, diff
from tests.support.oracle import ORACLE_PROPERTIES
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy
from tests.support.wait import DEADLINE, eventually, wait_until

pytestmark = pytest.mark.timeout(600)

# With --cache-size 0 (a 4 MiB budget) a listing of these is streamed; with the default cache
# (a 32 MiB budget) it is read into a list and cached.
PARTS = 6000
LIMIT_KEY = "hive.metastore.limit.partition.request"


def limit_message(requested: int, tbl: str, limit: int) -> str:
    return (f"Number of partitions scanned (={requested}) on table '{tbl}' exceeds limit "
            f"(={limit}). This is controlled on the metastore server by {LIMIT_KEY}.")


def too_large_message(method: str, size: int, limit: int) -> str:
    return (f"The answer to {method} would take {size} bytes, more than this metastore sends in "
            f"one response ({limit} bytes, serve --max-response-size): narrow the request (a "
            "partition filter, max_parts, or fewer names)")


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """A store holding bench.huge with PARTS partitions, all of ``item`` bytes."""
    path = tmp_path_factory.mktemp("big") / "store"
    built = listing_memory.build_store(path, PARTS)
    return path, built["partition_bytes"]


@contextmanager
def serving(workdir, *args, **options):
    proc = start_proxy(workdir, *args, **options)
    try:
        yield proc
    finally:
        proc.stop()


@contextmanager
def serving_framed(workdir, *args, store=None):
    """Our server with the framed transport (which start_proxy's readiness probe, a buffered
    client, cannot tell ready)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = workdir / "framed.log"
    cmd = [sys.executable, "-m", "hms_proxy.cli", "serve", "--store",
           str(store or workdir / "store"), "--host", "127.0.0.1", "--port", str(port),
           "--transport", "framed", *args]
    with open(log_path, "ab") as log:
        popen = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    proc = MetastoreProcess("framed", "127.0.0.1", port, workdir / "warehouse", log_path, popen,
                            workdir)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with client(proc, framed=True, timeout_ms=2000) as c:
                    c.get_all_databases()
                break
            except Exception:  # noqa: BLE001 - not ready yet
                if time.monotonic() > deadline or popen.poll() is not None:
                    raise
                time.sleep(0.3)
        yield proc
    finally:
        proc.stop()


@contextmanager
def client(proc, framed: bool = False, timeout_ms: int = 60_000, source: str | None = None):
    sock = TSocket.TSocket(proc.host, proc.port)
    sock.setTimeout(timeout_ms)
    if source is not None:  # connect from another loopback address
        raw = socket.create_connection((proc.host, proc.port), timeout=timeout_ms / 1000,
                                       source_address=(source, 0))
        sock.setHandle(raw)
    transport = (TTransport.TFramedTransport if framed else TTransport.TBufferedTransport)(sock)
    if source is None:
        transport.open()
    try:
        c = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))
        c.raw_socket = sock.handle  # to see the server close the connection (closed_by_server)
        yield c
    finally:
        transport.close()


def threads(proc) -> int:
    return psutil.Process(proc.popen.pid).num_threads()


def fds(proc) -> int:
    return psutil.Process(proc.popen.pid).num_fds()


def connections(proc) -> list:
    """The server's accepted connections still open (their sockets, in the server process)."""
    return [k for k in psutil.Process(proc.popen.pid).net_connections("tcp")
            if k.laddr.port == proc.port and k.status != psutil.CONN_LISTEN]


def baseline(proc, sources=(None,) * 4) -> tuple[int, int]:
    """The server's threads and descriptors at rest, once a connection from each of
    ``sources`` (None: the default address) has been served at once (each leaves a pooled
    store connection, i.e. descriptors, behind)."""
    # the start-up probe's connection closed: its thread is no part of the baseline
    wait_until(lambda: not connections(proc), what="the start-up probe's connection closed")
    base_threads = threads(proc)

    def served() -> bool:
        try:
            with contextlib.ExitStack() as stack:
                for source in sources:
                    stack.enter_context(client(proc, source=source)).get_all_databases()
            return True
        except TTransport.TTransportException:
            # under --max-connections-per-client the start-up probe's connection may still be
            # counted for a moment after it closed (its thread ends after the close)
            return False
    wait_until(served, what="a connection from each source served at once")
    at_rest(proc, base_threads, 1 << 30)  # their threads ended
    return base_threads, fds(proc)


def admitted(proc, stack: contextlib.ExitStack, n: int) -> list:
    """``n`` clients from the default address, each served once; the server may still count
    connections that closed a moment ago (it counts them until it has read their end), so this
    tries again until they are released."""
    def attempt() -> list | None:
        opened = contextlib.ExitStack()
        try:
            clients = [opened.enter_context(client(proc)) for _ in range(n)]
            for c in clients:
                c.get_all_databases()
        except TTransport.TTransportException:
            opened.close()
            return None
        stack.enter_context(opened)
        return clients
    return wait_until(attempt, what=f"{n} connections admitted (earlier ones released)")


def at_rest(proc, base_threads: int, base_fds: int) -> tuple[int, int]:
    """Threads and descriptors once they are back at (or under) their baseline; fails if they
    never are: a thread or a descriptor was left over."""
    def check() -> tuple[int, int]:
        now_threads, now_fds = threads(proc), fds(proc)
        assert now_threads <= base_threads and now_fds <= base_fds, \
            (now_threads, base_threads, now_fds, base_fds)
        return now_threads, now_fds
    return eventually(check)


def assert_at_rest(proc, base_threads: int, base_fds: int) -> None:
    """No thread and no descriptor left over."""
    at_rest(proc, base_threads, base_fds)


def closed_by_server(s: socket.socket, timeout: float = DEADLINE) -> bool:
    """True when the server closes the connection (EOF or reset) within ``timeout``; what it
    sends before is read and dropped."""
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def log_text(proc) -> str:
    return proc.log_path.read_text(errors="replace")


# --- the partition request limit ----------------------------------------------------------------

def partition_limit_scenario(c, rec):
    """Every call HMS 2.3.10 limits (and some it does not), under a limit of 3."""
    values = lambda ps: [p.values for p in ps]  # noqa: E731
    rec.call("create_database", database("lim_db"))
    t = table("lim_db", "pt", cols("a string"), partition_keys=cols("p string"))
    rec.call("create_table", t)
    rec.call("add_partitions", [partition(t, [v]) for v in "abcde"])
    rec.call("create_table", table("lim_db", "flat", cols("a string")))
    for m in (-1, 0, 2, 3, 4, 10, -5):  # max_parts wins when not negative, whatever is found
        rec.call("get_partitions", "lim_db", "pt", m, msg=True, transform=values)
    rec.call("get_partitions", "LIM_DB", "PT", -1, msg=True, transform=values)
    rec.call("get_partitions", "lim_db", "flat", -1, msg=True, transform=values)
    rec.call("get_partitions", "lim_db", "flat", 5, msg=True, transform=values)
    for db, tbl, m in (("lim_db", "nope", -1), ("nodb", "nope", -1), ("lim_db", "nope", 2)):
        rec.call("get_partitions", db, tbl, m, msg=True)
    for m in (-1, 2, 4):
        rec.call("get_partitions_with_auth", "lim_db", "pt", m, "u", ["g"], msg=True,
                 transform=values)
    rec.call("get_partitions_with_auth", "lim_db", "PT", 1, None, None, msg=True, transform=len)
    for db, tbl in (("lim_db", "nope"), ("LIM_DB", "NOPE"), ("nodb", "nope")):
        rec.call("get_partitions_with_auth", db, tbl, -1, "u", ["g"], msg=True)
        rec.call("get_partitions_with_auth", db, tbl, 2, None, None, msg=True)
        rec.call("get_num_partitions_by_filter", db, tbl, "", msg=True)
        rec.call("get_num_partitions_by_filter", db, tbl, "p > 'a'", msg=True)
        rec.call("get_num_partitions_by_filter", db, tbl, "p >", msg=True)
    for f, m in (("p > 'c'", -1), ("p > 'a'", -1), ("p > 'a'", 2), ("p > 'd'", 5), ("", -1),
                 ("p >", -1), ("q = 'a'", -1), ("p > 1", -1), ("p = 'zz'", 4)):
        rec.call("get_partitions_by_filter", "lim_db", "pt", f, m, msg=True, transform=values)
    rec.call("get_partitions_by_filter", "lim_db", "nope", "p > 'a'", -1, msg=True)
    rec.call("get_partitions_by_filter", "lim_db", "nope", "p > 'a'", 2, msg=True)
    # not limited
    rec.call("get_num_partitions_by_filter", "lim_db", "pt", "p > 'a'", msg=True)
    rec.call("get_partition_names", "lim_db", "pt", -1, msg=True)
    rec.call("get_partition_names", "lim_db", "pt", 10, msg=True)
    rec.call("get_partitions_ps", "lim_db", "pt", [""], -1, msg=True,
             transform=lambda ps: sorted(p.values for p in ps))
    rec.call("get_partitions_ps_with_auth", "lim_db", "pt", [""], -1, "u", ["g"], msg=True,
             transform=lambda ps: sorted(p.values for p in ps))
    rec.call("get_partition_names_ps", "lim_db", "pt", [""], -1, msg=True, unordered=True)
    rec.call("get_partitions_by_names", "lim_db", "pt", [f"p={v}" for v in "abcde"], msg=True,
             transform=values)
    rec.call("get_partition_values",
             ttypes.PartitionValuesRequest("lim_db", "pt", cols("p string")), msg=True,
             transform=lambda r: len(r.partitionValues))
    # the partition-spec listings go through the limited calls, max_parts cast to a short
    for m in (-1, 2, 70000, 65539):
        rec.call("get_partitions_pspec", "LIM_DB", "PT", m, msg=True, transform=len)
    for m in (-1, 2, 65539):
        rec.call("get_part_specs_by_filter", "LIM_DB", "PT", "p > 'a'", m, msg=True, transform=len)
    rec.call("get_part_specs_by_filter", "lim_db", "nope", "p > 'a'", -1, msg=True)
    rec.call("get_partitions_pspec", "lim_db", "nope", -1, msg=True)
    rec.call("get_config_value", LIMIT_KEY, "x", msg=True)


@pytest.mark.oracle
def test_partition_request_limit_matches_the_oracle(tmp_path):
    oracle = start_stock_hms(tmp_path / "oracle",
                             extra_properties={**ORACLE_PROPERTIES, LIMIT_KEY: "3"})
    try:
        with serving(tmp_path / "proxy", "--limit-partition-request", "3") as proxy:
            recordings = []
            for proc in (oracle, proxy):
                with Recorder(proc, "partition_request_limit") as rec:
                    partition_limit_scenario(LiveClient(rec), rec)
                recordings.append(rec)
    finally:
        oracle.stop()
    expected, actual = recordings
    refused = [e for e in expected.entries if "exceeds limit" in str(e.outcome)]
    assert len(refused) >= 10  # the scenario does exercise the limit
    assert expected.lines() == actual.lines(), diff(expected, actual)


def test_partition_request_limit_on_streamed_listings(big_store, tmp_path):
    """--conf sets the limit as well; a listing over it is refused before anything is sent,
    the stream read for it is closed (the same connection goes on), and one within it is
    streamed whole."""
    path, _ = big_store
    with serving(tmp_path, "--cache-size", "0", "--conf", f"{LIMIT_KEY}=5000",
                 "--log-level", "DEBUG", store=path) as proc:
        with client(proc) as c:
            assert c.get_config_value(LIMIT_KEY, "-1") == "5000"
            for call in (lambda: c.get_partitions(DB, TABLE, -1),
                         lambda: c.get_partitions_with_auth(DB, TABLE, -1, "u", ["g"])):
                with pytest.raises(ttypes.MetaException) as err:
                    call()
                assert err.value.message == limit_message(PARTS, TABLE, 5000)
            with pytest.raises(ttypes.MetaException) as err:
                c.get_partitions(DB, TABLE.upper(), 5001)
            assert err.value.message == limit_message(5001, TABLE.upper(), 5000)
            parts = c.get_partitions(DB, TABLE, 5000)
            assert len(parts) == 5000
            assert parts[-1].values == list(listing_memory.partition_values(4999))
            assert len(c.get_partition_names(DB, TABLE, -1)) == PARTS  # not limited
        assert "streaming 5000 partitions of bench.huge" in log_text(proc)
    # the option wins over --conf
    with serving(tmp_path / "both", "--conf", f"{LIMIT_KEY}=10", "--limit-partition-request",
                 "-1", store=path) as proc:
        with client(proc) as c:
            assert c.get_config_value(LIMIT_KEY, "x") == "-1"
            assert len(c.get_partitions(DB, TABLE, 20)) == 20


def test_a_bad_partition_limit_stops_the_server_at_start(tmp_path):
    with pytest.raises(RuntimeError, match="must be an integer"):
        start_proxy(tmp_path, "--conf", f"{LIMIT_KEY}=many", timeout=30)


# --- streamed listings ------------------------------------------------------------------------

def test_streamed_listing_is_the_listing(big_store, tmp_path):
    """The same partitions, in the same order, whether listed from the cache or streamed, over
    either transport; max_parts, with_auth, a qualified database name and the partitions'
    names (read without holding the partitions) too."""
    path, _ = big_store
    with serving(tmp_path / "cached", store=path) as cached, \
            serving(tmp_path / "streamed", "--cache-size", "0", "--log-level", "DEBUG",
                    store=path) as streamed, \
            serving_framed(tmp_path / "framed", "--cache-size", "0", store=path) as framed:
        with client(cached) as c:
            want = c.get_partitions(DB, TABLE, -1)
            want_qualified = c.get_partitions(f"{DB}@main", TABLE, -1)
            want_names = c.get_partition_names(DB, TABLE, -1)
        assert len(want) == PARTS and want_qualified[0].dbName == f"{DB}@main"
        assert [p.values for p in want] == [list(listing_memory.partition_values(i))
                                            for i in range(PARTS)]
        for proc, framed_ in ((streamed, False), (framed, True)):
            with client(proc, framed=framed_) as c:
                assert c.get_partitions(DB, TABLE, -1) == want
                assert c.get_partitions(DB, TABLE, 5500) == want[:5500]  # streamed too
                assert c.get_partitions(DB, TABLE, 7) == want[:7]
                assert c.get_partitions_with_auth(DB, TABLE, -1, "u", ["g"]) == want
                assert c.get_partitions(f"{DB}@main", TABLE, -1) == want_qualified
                assert c.get_partition_names(DB, TABLE, -1) == want_names
                assert c.get_partition_names(DB, TABLE, 5500) == want_names[:5500]
                assert c.get_table(DB, TABLE).tableName == TABLE  # the connection goes on
        log = log_text(streamed)
        assert f"streaming {PARTS} partitions of bench.huge" in log
        assert "streaming 5500 partitions of bench.huge" in log
        assert "streaming 7 partitions" not in log  # small answers are lists


def test_a_stream_to_a_transport_without_chunks_is_one_buffer():
    """A transport that cannot send pieces (here a memory buffer) gets the whole reply."""
    from thrift.Thrift import TMessageType

    from hms_proxy.thrift.replies import message_header
    from kvmodel import codec

    parts = [ttypes.Partition(values=[str(i)], dbName="d", tableName="t") for i in range(5)]
    data = [codec.encode(p) for p in parts]
    closed = []
    stream = RawStream(len(data), sum(map(len, data)), iter(data), lambda: closed.append(1))
    buf = TTransport.TMemoryBuffer()
    write_stream_reply(buf, message_header("get_partitions", TMessageType.REPLY, 7), stream)
    stream.close()
    proto = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(buf.getvalue()))
    assert proto.readMessageBegin() == ("get_partitions", TMessageType.REPLY, 7)
    result = ThriftHiveMetastore.get_partitions_result()
    result.read(proto)
    assert result.success == parts and closed == [1]


# --- the response size cap ------------------------------------------------------------------------

def test_replies_over_the_size_cap_are_refused(big_store, tmp_path):
    path, item = big_store
    cap = 1 << 20
    everything = 9 + PARTS * item  # list field and header, the partitions, the result's stop
    for name, extra in (("cached", ()), ("streamed", ("--cache-size", "0"))):
        with serving(tmp_path / name, "--max-response-size", "1m", *extra, store=path) as proc:
            base_threads, base_fds = baseline(proc)
            with client(proc) as c, client(proc) as bystander:
                refused_replies(c, bystander, item, everything, cap)
            assert_at_rest(proc, base_threads, base_fds)
        assert "refused a reply of" in log_text(proc)


def refused_replies(c, bystander, item, everything, cap):
    assert len(c.get_partitions(DB, TABLE, 100)) == 100
    with pytest.raises(ttypes.MetaException) as err:
        c.get_partitions(DB, TABLE, -1)
    assert err.value.message == too_large_message("get_partitions", everything, cap)
    with pytest.raises(ttypes.MetaException) as err:
        c.get_partitions_with_auth(DB, TABLE, -1, "u", ["g"])
    assert err.value.message == too_large_message("get_partitions_with_auth",
                                                  everything, cap)
    with pytest.raises(ttypes.MetaException) as err:  # decoded structs, encoded whole
        c.get_partitions_pspec(DB, TABLE, -1)
    assert err.value.message.startswith("The answer to get_partitions_pspec would take ")
    assert len(c.get_partition_names(DB, TABLE, -1)) == PARTS  # ~130 KB: sent
    n = cap // item - 1
    assert len(c.get_partitions(DB, TABLE, n)) == n  # just under the cap
    assert bystander.get_table(DB, TABLE).tableName == TABLE


# --- idle connections -----------------------------------------------------------------------------

def test_idle_connections_are_closed_and_calls_in_flight_are_not(big_store, tmp_path):
    path, item = big_store
    with serving(tmp_path, "--idle-timeout", "0.5", "--cache-size", "0", store=path) as proc:
        base_threads, base_fds = baseline(proc)
        # a connection that never calls, and one that called once, are closed after 0.5 s
        # (not sooner: the silent one is seen closed no less than that after it was opened)
        silent = socket.create_connection((proc.host, proc.port), timeout=10)
        started = time.monotonic()
        with client(proc) as once:
            once.get_all_databases()
            assert closed_by_server(silent)
            assert time.monotonic() - started >= 0.4
            assert closed_by_server(once.raw_socket)
            with pytest.raises(TTransport.TTransportException):
                once.get_all_databases()
        silent.close()
        # one calling every 0.05 s for 2 s (four times the timeout) is served throughout
        with client(proc) as busy:
            for _ in range(40):
                assert "default" in busy.get_all_databases()
                time.sleep(0.05)
        # A reply read slowly arrives whole: the server cannot have written its last byte
        # before the client read all but what the socket buffers hold (4 MiB + 32 KiB here),
        # and the client reaches that point well after the timeout.
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.connect((proc.host, proc.port))
        s.settimeout(30)
        s.sendall(listing_memory.get_partitions_message(DB, TABLE))
        expected = len(b"get_partitions") + 12 + 8 + PARTS * item + 1
        buffers = (4 << 20) + (64 << 10)
        got, started, writing_until = 0, time.monotonic(), None
        while got < expected:
            chunk = s.recv(16384)
            assert chunk, f"closed after {got} of {expected} bytes"
            got += len(chunk)
            if writing_until is None and got >= expected - buffers:
                writing_until = time.monotonic() - started
            time.sleep(0.015)
        assert writing_until > 0.75, writing_until  # the server was writing past the timeout
        assert closed_by_server(s)  # and then idle
        s.close()
        assert_at_rest(proc, base_threads, base_fds)
    assert "no call for 0.5 s (serve --idle-timeout)" in log_text(proc)


def test_idle_timeout_with_the_framed_transport(tmp_path):
    with serving_framed(tmp_path, "--idle-timeout", "0.5") as proc:
        with client(proc, framed=True) as c:
            for _ in range(20):  # a call every 0.05 s for 1 s (twice the timeout): served
                assert "default" in c.get_all_databases()
                time.sleep(0.05)
            assert closed_by_server(c.raw_socket)  # then no call: closed
            with pytest.raises(TTransport.TTransportException):
                c.get_all_databases()
    assert "no call for 0.5 s (serve --idle-timeout)" in log_text(proc)


# --- connections per client -----------------------------------------------------------------------

def test_connections_per_client_are_capped(tmp_path):
    with serving(tmp_path, "--max-connections-per-client", "2") as proc:
        base_threads, base_fds = baseline(proc, (None, None, "127.0.0.2"))
        with contextlib.ExitStack() as stack:
            # the baseline's connections count until the server has read their end
            a, b = admitted(proc, stack, 2)
            for _ in range(5):  # a third from the same address is closed at once, each time
                s = socket.create_connection((proc.host, proc.port), timeout=10)
                assert closed_by_server(s)
                s.close()
            with client(proc, source="127.0.0.2") as other:  # another client is served
                assert "default" in other.get_all_databases()
            assert "default" in a.get_all_databases() and "default" in b.get_all_databases()
        # once they are closed, their client connects again
        with contextlib.ExitStack() as stack:
            assert all(c.get_all_databases() for c in admitted(proc, stack, 2))
        assert_at_rest(proc, base_threads, base_fds)
    log = log_text(proc)
    assert log.count("connections open from 127.0.0.1 (--max-connections-per-client)") >= 5


# --- bounded memory -------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_huge_listing_takes_less_memory_than_twice_its_size(tmp_path):
    """get_partitions of 200,000 partitions (~170 MiB): the server's RSS grows by less than
    twice the reply (``python -m hms_proxy.tools.bench.listing_memory`` runs this at 1,000,000)."""
    result = listing_memory.measure(tmp_path / "store", 200_000, tmp_path / "server")
    assert result["count"] == 200_000
    assert result["rss_growth"] < 2 * result["reply_bytes"], result
    # in fact far less: what is read is sent in chunks, never gathered
    assert result["rss_growth"] < result["reply_bytes"] / 2, result
