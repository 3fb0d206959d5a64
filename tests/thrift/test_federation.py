"""Federation (``serve --upstream``): databases we do not hold are served by the upstream, a
stock HMS 2.3.10 filled by Spark SQL (the session fixture ``spark_filled_hms``, see
tests/support/upstream.py).

Two servers of ours over fresh stores: ``fed`` reaches the upstream through a TCP relay of
this test (so that the upstream can "die", hang and come back without restarting a JVM) and
refuses writes to upstream databases; ``fed_w`` reaches it directly with ``--upstream-writes``.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import types

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift import federation
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.tools.metastores import free_port, start_proxy
from tests.support import upstream as up
from tests.support.process import REPO_ROOT
from tests.support.wait import wait_until

pytestmark = pytest.mark.timeout(300)

# seconds: how long the tests' clients wait for an answer. Far beyond anything the server
# may wait for a dead or stalled upstream (connecting 2 s, a forwarded call UPSTREAM_TIMEOUT,
# a merged listing 2 s): a call held back
# longer fails with a transport error instead of its answer.
PROMPT = 30.0
UPSTREAM_TIMEOUT = 2.0  # fed's --upstream-timeout
PATIENT_TIMEOUT = 300.0  # fed_patient's: a call waits on a stalled upstream until released
OURS = "fed_ours"


class Conn:
    def __init__(self, host, port, timeout=PROMPT):
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(timeout * 1000)
        self.transport = TTransport.TBufferedTransport(sock)
        self.transport.open()
        self.client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(self.transport))

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.transport.close()


def connect(proc):
    return Conn(proc.host, proc.port)


class Relay:
    """A TCP relay to the upstream: ``down()`` closes it (nobody listens on its port),
    ``hang()`` keeps connections open but passes nothing (a stalled upstream), ``up()``
    restores it on the same port (and passes on what was held back). ``held`` counts the
    bytes received and held back since ``hang()``: a call that reached the stalled upstream."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.port = free_port()
        self.mode = "up"
        self.held = 0
        self.accepted = 0  # connections relayed
        self._listener = None
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self.up()

    @property
    def uri(self):
        return f"thrift://127.0.0.1:{self.port}"

    def up(self):
        self.mode = "up"
        if self._listener is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self.port))
            sock.listen(64)
            sock.settimeout(0.1)
            self._listener = sock
            self._acceptor = threading.Thread(target=self._accept, args=(sock,), daemon=True)
            self._acceptor.start()

    def down(self):
        self.mode = "down"
        listener, self._listener = self._listener, None
        if listener is not None:
            self._acceptor.join()  # it closes the listener: the port is free afterwards
        self._close_all()

    def hang(self):
        self.up()
        self.held = 0
        self.mode = "hang"

    def _close_all(self):
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, listener):
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            client.settimeout(None)
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks += [client, server]
                self.accepted += 1
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()
        listener.close()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.mode == "hang":
                    with self._lock:
                        self.held += len(data)
                while self.mode == "hang":
                    time.sleep(0.05)
                if self.mode == "down":
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.down()


@pytest.fixture(scope="module")
def upstream(spark_filled_hms):
    return spark_filled_hms


@pytest.fixture(scope="module")
def relay(upstream):
    r = Relay(upstream.host, upstream.port)
    yield r
    r.close()


def _with_ours(proc):
    with connect(proc) as c:
        c.create_database(T.Database(name=OURS, parameters={}))
        c.create_table(table(OURS, "orders"))
        c.add_partition(T.Partition(dbName=OURS, tableName="orders", values=["2024-01-01"],
                                    sd=SD))
    return proc


@pytest.fixture(scope="module")
def fed(tmp_path_factory, relay):
    proc = _with_ours(start_proxy(tmp_path_factory.mktemp("fed"), "--upstream", relay.uri,
                                  "--upstream-timeout", str(UPSTREAM_TIMEOUT), cwd=REPO_ROOT))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def fed_patient(tmp_path_factory, relay):
    """As ``fed``, with an upstream timeout longer than any test: a call held at the stalled
    upstream waits until the relay passes it on."""
    proc = _with_ours(start_proxy(tmp_path_factory.mktemp("fed_patient"), "--upstream",
                                  relay.uri, "--upstream-timeout", str(PATIENT_TIMEOUT),
                                  cwd=REPO_ROOT))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def fed_w(tmp_path_factory, upstream):
    proc = start_proxy(tmp_path_factory.mktemp("fed_w"), "--upstream", upstream.uri,
                       "--upstream-writes", cwd=REPO_ROOT)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def direct(upstream):
    conn = Conn(upstream.host, upstream.port)
    yield conn.client
    conn.transport.close()


SD = T.StorageDescriptor(cols=[T.FieldSchema("x", "string", None)],
                         serdeInfo=T.SerDeInfo(parameters={}), parameters={})


def table(db, name):
    return T.Table(tableName=name, dbName=db, sd=SD, tableType="EXTERNAL_TABLE",
                   parameters={"EXTERNAL": "TRUE"}, partitionKeys=[T.FieldSchema("ds", "string", None)])


def outcome(fn, *args):
    """(value) or (exception class, message): what a call answers."""
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # noqa: BLE001
        return (type(exc).__name__, getattr(exc, "message", str(exc)))


# --- without servers --------------------------------------------------------------------------

def test_the_databases_a_call_names():
    part = T.Partition(dbName="a", tableName="t", values=["1"])
    assert federation.databases_named("add_partitions", ("new_parts",), [[part, part]]) == ["a", "a"]
    assert federation.databases_named("alter_table", ("dbname", "tbl_name", "new_tbl"),
                                      ["a", "t", T.Table(dbName="b")]) == ["a", "b"]
    assert federation.databases_named("get_database", ("name",), ["a"]) == ["a"]
    assert federation.databases_named("get_config_value", ("name", "defaultValue"), ["x", "y"]) == []
    req = T.PartitionsByExprRequest(dbName="a", tblName="t", expr=b"")
    assert federation.databases_named("get_partitions_by_expr", ("req",), [req]) == ["a"]


def test_the_breaker_backs_off_and_closes(monkeypatch):
    now = [1000.0]  # the breaker's clock, moved by the test
    monkeypatch.setattr(federation, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    breaker = federation.Breaker(first=0.2, most=0.4)
    assert breaker.before_call() is False
    assert breaker.failure("refused") == 0.2
    with pytest.raises(federation._Pending):
        breaker.before_call()
    now[0] += 0.15
    with pytest.raises(federation._Pending):
        breaker.before_call()  # still cooling down
    now[0] += 0.1
    assert breaker.before_call() is True  # the one retry
    with pytest.raises(federation._Pending):
        breaker.before_call()  # the others keep failing fast meanwhile
    assert breaker.failure("refused") == 0.4
    assert breaker.failure("refused") == 0.4
    now[0] += 0.35
    with pytest.raises(federation._Pending):
        breaker.before_call()  # the cooldown doubled
    now[0] += 0.1
    assert breaker.before_call() is True
    assert breaker.success() is True and breaker.before_call() is False


def test_a_timed_out_call_is_not_tried_again(upstream):
    """A forwarded read on a pooled connection that the upstream dropped is tried once more on
    a new one (a restarted upstream); one that timed out is not: the upstream is slow, and the
    call has waited its --upstream-timeout (it would wait it twice)."""
    relay = Relay(upstream.host, upstream.port)
    client = federation.Upstream(relay.uri, timeout=1.0)
    try:
        assert up.DB in client.call("get_all_databases", [])  # a pooled connection now
        relay.hang()
        before = relay.accepted
        with pytest.raises(federation.Unreachable, match="no answer within 1s"):
            client.call("get_database", [up.DB])
        assert relay.accepted == before  # no new connection: not tried again
    finally:
        client.close()
        relay.close()


def test_a_dropped_pooled_connection_is_tried_again_afresh(upstream):
    relay = Relay(upstream.host, upstream.port)
    client = federation.Upstream(relay.uri, timeout=30.0)
    try:
        assert up.DB in client.call("get_all_databases", [])
        relay.down()  # the pooled connection closed, as by a restarted upstream
        relay.up()
        before = relay.accepted
        assert client.call("get_database", [up.DB]).name == up.DB
        assert relay.accepted == before + 1
    finally:
        client.close()
        relay.close()


def test_upstream_uris():
    assert federation.parse_uri("thrift://old-hms:9084") == ("old-hms", 9084)
    assert federation.parse_uri("old-hms") == ("old-hms", 9083)
    with pytest.raises(ValueError):
        federation.parse_uri("http://old-hms:9083")


def test_a_bad_upstream_uri_stops_the_start(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "serve", "--store",
                           str(tmp_path / "store"), "--port", "0", "--upstream",
                           "http://old-hms:9083"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "--upstream" in proc.stderr and "thrift://" in proc.stderr


# --- reads -------------------------------------------------------------------------------------

READS = [
    ("get_database", up.DB), ("get_database", up.OTHER_DB),
    ("get_all_tables", up.DB), ("get_tables", up.DB, "e*"),
    ("get_tables_by_type", up.DB, "*", "VIRTUAL_VIEW"),
    ("get_table", up.DB, up.PARTITIONED), ("get_table", up.DB, up.DATASOURCE),
    ("get_table", up.DB, up.VIEW), ("get_table", up.DB, "missing"),
    ("get_table_objects_by_name", up.DB, [up.PARTITIONED, up.UNPARTITIONED]),
    ("get_table_req", T.GetTableRequest(dbName=up.DB, tblName=up.UNPARTITIONED)),
    ("get_fields", up.DB, up.PARTITIONED), ("get_schema", up.DB, up.PARTITIONED),
    ("get_partition_names", up.DB, up.PARTITIONED, -1),
    ("get_partitions", up.DB, up.PARTITIONED, -1),
    ("get_partitions_ps", up.DB, up.PARTITIONED, ["eu west"], -1),
    ("get_partitions_by_filter", up.DB, up.PARTITIONED, "region = \"a=b\"", -1),
    ("get_partition", up.DB, up.PARTITIONED, ["a=b", "2024/01/02"]),
    ("get_partition_by_name", up.DB, up.PARTITIONED, "region=eu west/ds=2024-01-01"),
    ("get_partition", up.DB, up.PARTITIONED, ["nope", "nope"]),
    ("get_partitions_by_names", up.DB, up.PARTITIONED, ["region=us/ds=2024-01-03"]),
    ("get_table_column_statistics", up.DB, up.UNPARTITIONED, "v"),
    ("get_table_statistics_req", T.TableStatsRequest(dbName=up.DB, tblName=up.PARTITIONED,
                                                     colNames=["id", "amount"])),
    ("get_partitions_statistics_req", T.PartitionsStatsRequest(
        dbName=up.DB, tblName=up.PARTITIONED, colNames=["id", "name"],
        partNames=["region=eu west/ds=2024-01-01", "region=a%3Db/ds=2024%2F01%2F02"])),
    ("get_function", up.DB, up.FUNCTION), ("get_functions", up.DB, "*"),
    ("get_all_tables", up.OTHER_DB), ("get_partition_names", up.OTHER_DB, "metrics", -1),
    ("get_table", "no_such_db_anywhere", "t"), ("get_database", "no_such_db_anywhere"),
    # a method we do not serve, forwarded for an upstream database (the expression is junk)
    ("get_partitions_by_expr", T.PartitionsByExprRequest(dbName=up.DB, tblName=up.PARTITIONED,
                                                         expr=b"junk")),
]
FAILING_READS = ("get_table", "get_partition", "get_database", "get_partitions_by_expr")


def test_reads_of_upstream_databases_equal_the_upstream(fed, direct):
    with connect(fed) as c:
        for name, *args in READS:
            ours, theirs = outcome(getattr(c, name), *args), outcome(getattr(direct, name), *args)
            assert ours == theirs, (name, args)
            if name not in FAILING_READS:
                assert ours[0] == "ok", (name, args, ours)


def test_listings_merge_both_catalogs(fed, direct):
    with connect(fed) as c:
        upstream_dbs = direct.get_all_databases()
        assert {up.DB, up.OTHER_DB} <= set(upstream_dbs)
        merged = c.get_all_databases()
        assert merged == sorted(set(upstream_dbs) | {"default", OURS})
        assert c.get_databases("up_*|fed_*") == sorted(
            set(direct.get_databases("up_*|fed_*")) | {OURS})
        # default is ours (a name in both catalogs is ours): its location is our warehouse
        assert c.get_database("default").locationUri.startswith(f"file:{fed.warehouse}")
        # table metadata and functions of all databases: ours and the upstream's
        meta = c.get_table_meta("up_*|fed_*", "*", None)
        expected = direct.get_table_meta("up_*|fed_*", "*", None) + [
            T.TableMeta(dbName=OURS, tableName="orders", tableType="EXTERNAL_TABLE")]
        assert meta == sorted(expected, key=lambda m: (m.dbName, m.tableName))
        assert {(m.dbName, m.tableName) for m in meta} >= {(up.DB, up.VIEW), (OURS, "orders")}
        functions = c.get_all_functions().functions
        assert functions == sorted(direct.get_all_functions().functions,
                                   key=lambda f: (f.dbName, f.functionName))
        assert (up.DB, up.FUNCTION) in {(f.dbName, f.functionName) for f in functions}


def test_our_databases_are_ours(fed, direct):
    with connect(fed) as c:
        assert c.get_partition_names(OURS, "orders", -1) == ["ds=2024-01-01"]
        c.add_partition(T.Partition(dbName=OURS, tableName="orders", values=["2024-01-02"], sd=SD))
        assert c.get_partition_names(OURS, "orders", -1) == ["ds=2024-01-01", "ds=2024-01-02"]
        assert outcome(direct.get_database, OURS)[0] == "NoSuchObjectException"
        # a qualified name is ours only: the upstream's database is not found on a ref
        assert outcome(c.get_database, f"{up.DB}@main")[0] == "NoSuchObjectException"
        assert c.get_database(f"{OURS}@main").name == f"{OURS}@main"
        # what we do not serve stays unknown for our databases
        kind, message = outcome(c.get_partitions_by_expr, T.PartitionsByExprRequest(
            dbName=OURS, tblName="orders", expr=b"junk"))
        assert kind == "TApplicationException" and "get_partitions_by_expr" in message
        # one call cannot span the two catalogs
        moved = c.get_table(OURS, "orders")
        moved.dbName = up.DB
        kind, message = outcome(c.alter_table, OURS, "orders", moved)
        assert kind == "MetaException" and "upstream metastore" in message


def test_writes_to_upstream_databases_are_refused_by_default(fed, direct):
    before = direct.get_table(up.DB, up.UNPARTITIONED)
    with connect(fed) as c:
        writes = [
            (c.create_table, table(up.DB, "fed_new")),
            (c.drop_table, up.DB, up.UNPARTITIONED, False),
            (c.alter_table, up.DB, up.UNPARTITIONED, before),
            (c.add_partition, T.Partition(dbName=up.DB, tableName=up.PARTITIONED,
                                          values=["x", "y"], sd=SD)),
            (c.drop_database, up.OTHER_DB, False, True),
        ]
        for fn, *args in writes:
            kind, message = outcome(fn, *args)
            assert kind == "MetaException", (fn, kind, message)
            assert "upstream metastore" in message and "--upstream-writes" in message
    assert direct.get_table(up.DB, up.UNPARTITIONED) == before
    assert "fed_new" not in direct.get_all_tables(up.DB)
    assert up.OTHER_DB in direct.get_all_databases()


def test_writes_reach_the_upstream_with_upstream_writes(fed_w, direct):
    db = "fed_h6_writes"
    direct.create_database(T.Database(name=db, parameters={}))
    try:
        with connect(fed_w) as c:
            c.create_table(table(db, "t"))
            c.add_partition(T.Partition(dbName=db, tableName="t", values=["a"], sd=SD))
            changed = c.get_table(db, "t")
            changed.parameters["owner_note"] = "via proxy"
            c.alter_table(db, "t", changed)
            assert direct.get_partition_names(db, "t", -1) == ["ds=a"]
            assert direct.get_table(db, "t").parameters["owner_note"] == "via proxy"
            assert c.get_table(db, "t") == direct.get_table(db, "t")
            # the upstream's own errors come back as they are
            assert outcome(c.create_table, table(db, "t")) == outcome(direct.create_table,
                                                                     table(db, "t"))
            # a database created through us is ours, even with --upstream-writes
            c.create_database(T.Database(name="fed_w_local", parameters={}))
            assert outcome(direct.get_database, "fed_w_local")[0] == "NoSuchObjectException"
            c.drop_table(db, "t", False)
            assert direct.get_all_tables(db) == []
            c.drop_database(db, False, False)
        assert db not in direct.get_all_databases()
    finally:
        if db in direct.get_all_databases():
            direct.drop_database(db, False, True)


def timed(fn, *args):
    started = time.monotonic()
    result = outcome(fn, *args)
    return result, time.monotonic() - started


def check_degraded(c, relay):
    """Upstream calls fail with MetaException 'unreachable', ours answer; every call within
    the client's PROMPT (a call held back longer fails with a transport error)."""
    for _ in range(3):
        kind, message = outcome(c.get_table, up.DB, up.PARTITIONED)
        assert kind == "MetaException" and "unreachable" in message and relay.uri in message
        kind, value = outcome(c.get_all_databases)
        assert kind == "ok" and value == ["default", OURS], value
        kind, value = outcome(c.get_partition_names, OURS, "orders", -1)
        assert kind == "ok" and value[0] == "ds=2024-01-01", value
        kind, value = outcome(c.get_table, OURS, "orders")
        assert kind == "ok", value
    name = f"t{time.monotonic_ns()}"
    kind, value = outcome(c.create_table, table(OURS, name))
    assert kind == "ok", value


def wait_recovered(c, direct):
    """The upstream's databases are served again once the breaker lets a call through (its
    cooldown is at most 8 s)."""
    def served():
        kind, value = outcome(c.get_table, up.DB, up.PARTITIONED)
        return value if kind == "ok" else None

    served_table = wait_until(served, interval=0.5, what="the upstream's table served again")
    assert served_table == direct.get_table(up.DB, up.PARTITIONED)
    assert c.get_all_databases() == sorted(set(direct.get_all_databases()) | {"default", OURS})


def test_a_dead_or_stalled_upstream_fails_its_databases_only(fed, fed_patient, relay, direct):
    with connect(fed) as c:
        assert c.get_table(up.DB, up.PARTITIONED) == direct.get_table(up.DB, up.PARTITIONED)
        relay.down()  # an upstream restart unnoticed: the pooled connections are dead
        relay.up()
        assert c.get_table(up.DB, up.PARTITIONED) == direct.get_table(up.DB, up.PARTITIONED)
        relay.down()  # nobody listens on the upstream's port
        check_degraded(c, relay)
        relay.up()
        wait_recovered(c, direct)
        log = fed.log_path.read_text()
        assert f"upstream metastore {relay.uri} unreachable" in log
        assert "get_all_databases answers this catalog's objects only" in log
        assert f"upstream metastore {relay.uri} is reachable again" in log
        relay.hang()  # connections accepted, nothing answered
        # a call waiting on the hanging upstream holds up nobody else: on fed_patient, it
        # waits until the relay passes it on, whatever the machine's load
        waiting = {}

        def wait_upstream():
            try:
                with connect(fed_patient) as other_client:
                    waiting["r"] = outcome(other_client.get_partition_names, up.DB,
                                           up.PARTITIONED, -1)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                waiting["error"] = exc

        other = threading.Thread(target=wait_upstream, daemon=True)
        other.start()
        try:
            wait_until(lambda: relay.held, what="the call reached the stalled upstream")
            with connect(fed_patient) as patient:
                assert patient.get_partition_names(OURS, "orders", -1) == ["ds=2024-01-01"]
            assert other.is_alive() and waiting == {}  # answered while the other waits
        finally:
            relay.up()  # the upstream answers: the held call too
        other.join(PROMPT)
        assert not other.is_alive()
        assert waiting["r"] == ("ok", direct.get_partition_names(up.DB, up.PARTITIONED, -1))
        # fed gives up on the stalled upstream after its timeout
        relay.hang()
        (kind, message), took = timed(c.get_partition_names, up.DB, up.PARTITIONED, -1)
        assert kind == "MetaException" and "no answer within" in message, message
        assert took > UPSTREAM_TIMEOUT - 0.5  # it waited for the timeout
        check_degraded(c, relay)
        relay.up()
        wait_recovered(c, direct)


# --- Spark ------------------------------------------------------------------------------------

SPARK = [
    {"sql": f"SELECT region, ds, count(*), sum(amount) FROM {up.DB}.{up.PARTITIONED} "
            "GROUP BY region, ds ORDER BY region, ds"},
    {"sql": f"SELECT id, name FROM {up.DB}.{up.PARTITIONED} "
            "WHERE region = 'eu west' AND ds = '2024-01-02'"},
    {"sql": f"SELECT id, name, city FROM {up.DB}.{up.DATASOURCE} ORDER BY id"},
    "CREATE DATABASE fed_spark",
    f"CREATE TABLE fed_spark.copy STORED AS PARQUET AS SELECT * FROM {up.DB}.{up.UNPARTITIONED}",
    {"sql": f"SELECT c.k, c.v, p.v FROM fed_spark.copy c JOIN {up.DB}.{up.UNPARTITIONED} p "
            "ON c.k = p.k ORDER BY c.k"},
    {"sql": "SHOW DATABASES", "sort": True},
]


def test_spark_reads_upstream_tables_through_us(tmp_path, fed_w, direct):
    work = tmp_path / "spark"
    work.mkdir()
    (work / "statements.json").write_text(json.dumps(SPARK))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
    with open(work / "runner.log", "wb") as log:
        proc = subprocess.run(
            [sys.executable, str(up.RUNNER), "--uri", fed_w.uri, "--warehouse",
             str(fed_w.warehouse), "--statements", str(work / "statements.json"),
             "--output", str(work / "results.jsonl")],
            cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            timeout=240)
    results = [json.loads(line)["result"] for line in
               (work / "results.jsonl").read_text().splitlines() if line.strip()]
    assert proc.returncode == 0 and len(results) == len(SPARK), \
        (work / "runner.log").read_text()[-3000:]
    rows = [r.get("rows", r) for r in results]
    assert rows[0] == [["a=b", "2024/01/02", 2, 4.5], ["eu west", "2024-01-01", 2, 4.0],
                       ["eu west", "2024-01-02", 1, 3.5]]
    assert rows[1] == [[3, "carl"]]
    assert rows[2] == [[1, "anna", "Oslo"], [2, "bob", "Rome"]]
    assert rows[3] == [] and rows[4] == []
    assert rows[5] == [["a", 1, 1], ["b", 2, 2], ["c", None, None]]
    # the table Spark created lives in our store, not upstream
    assert outcome(direct.get_database, "fed_spark")[0] == "NoSuchObjectException"
    with connect(fed_w) as c:
        assert rows[6] == [[d] for d in c.get_all_databases()]
        assert {"default", "fed_spark", up.DB, up.OTHER_DB} <= set(c.get_all_databases())
        assert c.get_table("fed_spark", "copy").sd.location.startswith(f"file:{fed_w.warehouse}")
