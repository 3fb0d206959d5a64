"""HMS 3+/4's write ids (hms_proxy/hms/txn/writeids.py): the calls a Hive 3/4 writer and reader
of an ACID table make, compared call by call with the stock HMS 4.0.1 running its transaction
tables; then what we add (write ids above those the data already names) and the state over
Redis."""
from __future__ import annotations

import itertools
from contextlib import ExitStack, contextmanager

import pytest
from thrift.Thrift import TType

from hms_proxy.hms.txn.transactions import RedisTxnState, TxnManager
from hms_proxy.hms.txn.writeids import WriteIds, highest_write_id_in, parse_valid_txns
from hms_proxy.thrift import errors
from tests.support.client import connect
from tests.support.client import ttypes as T

ORC = "org.apache.hadoop.hive.ql.io.orc."
CAPS = ["HIVEFULLACIDREAD", "HIVEFULLACIDWRITE", "HIVEMANAGEDINSERTREAD",
        "HIVEMANAGEDINSERTWRITE", "EXTWRITE", "EXTREAD"]
INSERT_ONLY = {"transactional": "true", "transactional_properties": "insert_only"}


def _table(name: str, params: dict) -> T.Table:
    sd = T.StorageDescriptor(
        cols=[T.FieldSchema("x", "int", "")], inputFormat=ORC + "OrcInputFormat",
        outputFormat=ORC + "OrcOutputFormat", compressed=False, numBuckets=-1,
        serdeInfo=T.SerDeInfo("s", ORC + "OrcSerde", {}), bucketCols=[], sortCols=[],
        parameters={})
    return T.Table(tableName=name, dbName="w", owner="me", createTime=0, lastAccessTime=0,
                   retention=0, sd=sd, partitionKeys=[], parameters=dict(params),
                   tableType="MANAGED_TABLE", catName="hive")


def _steps(c):
    """(label, call) in order; ``c`` is the connection of the moment."""
    def alloc(table, ids, db="w"):
        return lambda: c().allocate_table_write_ids(
            T.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=ids))

    def valid(names, vtl=None, write_id=None):
        return lambda: c().get_valid_write_ids(T.GetValidWriteIdsRequest(
            fullTableNames=names, validTxnList=vtl, writeId=write_id))

    def most(table, db="w"):
        return lambda: c().get_max_allocated_table_write_id(
            T.MaxAllocatedTableWriteIdRequest(dbName=db, tableName=table))

    def seed(table, value, db="w"):
        return lambda: c().seed_write_id(
            T.SeedTableWriteIdsRequest(dbName=db, tableName=table, seedWriteId=value))

    def create(name, params):
        return lambda: c().create_table_req(T.CreateTableRequest(
            table=_table(name, params), processorCapabilities=CAPS, processorIdentifier="t"))

    yield "create w", lambda: c().create_database(
        T.Database(name="w", description="", locationUri=None, parameters={}))
    yield "create io", create("io", INSERT_ONLY)
    yield "create io2", create("io2", INSERT_ONLY)
    yield "open 6", lambda: c().open_txns(T.OpenTxnRequest(num_txns=6, user="me", hostname="h"))
    a, b, d, e, f, g = 1, 2, 3, 4, 5, 6
    yield "out of order", alloc("io", [b, a])
    yield "again", alloc("io", [a])
    yield "again both", alloc("io", [b, a])
    yield "partly allocated", alloc("io", [a, d])
    yield "next two", alloc("io", [d, e])
    yield "upper case names", alloc("IO", [f], db="W")
    yield "no such table", alloc("nope", [b])
    yield "no such database", alloc("nope", [b], db="nodb")
    yield "unknown txn", alloc("io", [999])
    yield "txn twice", alloc("io2", [g, g])
    yield "no txns", alloc("io", [])
    yield "txns unset", alloc("io", None)
    yield "db unset", alloc("io", [g], db=None)
    yield "max io", most("io")
    yield "max upper case", most("IO", db="W")
    yield "max no such", most("nope2")
    yield "max db unset", most("io", db=None)
    snapshot = "6:1:1,3,5,6:"
    yield "valid all open", valid(["w.io", "w.nope", "W.IO", "w.io.extra", ".io"], snapshot)
    yield "valid ranges", valid(["w.io"], "6:1:1-3,5:4")
    yield "valid everything", valid(["w.io"], "")
    yield "valid two fields", valid(["w.io"], "6:1")
    yield "valid one field", valid(["w.io"], "6")
    yield "valid garbage", valid(["w.io"], "garbage")
    yield "valid no dot", valid(["wio"], "")
    yield "valid now", valid(["w.io", "w.io2"])
    yield "valid of write id 2", valid(["w.io"], write_id=2)
    yield "valid of write id 99", valid(["w.io"], write_id=99)
    yield "valid names unset", valid(None, "")
    yield "commit a", lambda: c().commit_txn(T.CommitTxnRequest(txnid=a))
    yield "commit a again", lambda: c().commit_txn(T.CommitTxnRequest(txnid=a))
    yield "abort b", lambda: c().abort_txn(T.AbortTxnRequest(txnid=b))
    yield "valid after", valid(["w.io"])
    yield "valid after, client's", valid(["w.io"], "6:3:3,4,5,6:2")
    yield "alloc committed", alloc("io", [a])
    yield "alloc aborted", alloc("io", [b])
    yield "open txns info", lambda: [(t.id, t.state) for t in c().get_open_txns_info().open_txns]
    yield "seed io", seed("io", 100)
    yield "seed io2", seed("io2", 100)
    yield "max io2", most("io2")
    yield "alloc io2", alloc("io2", [g])
    yield "seed negative", seed("s", -5)
    yield "max negative", most("s")
    yield "valid negative", valid(["w.s"], "")
    yield "seed upper case", seed("S2", 7, db="W")
    yield "max s2", most("s2")
    yield "max S2", most("S2", db="W")
    yield "seed table unset", seed(None, 7)
    yield "seed txn below", lambda: c().seed_txn_id(T.SeedTxnIdRequest(seedTxnId=6))
    yield "seed txn", lambda: c().seed_txn_id(T.SeedTxnIdRequest(seedTxnId=50))
    yield "open after seed", lambda: c().open_txns(
        T.OpenTxnRequest(num_txns=1, user="me", hostname="h"))
    yield "rename io2", lambda: c().alter_table_req(T.AlterTableRequest(
        catName="hive", dbName="w", tableName="io2", table=_table("io3", INSERT_ONLY),
        processorCapabilities=CAPS, processorIdentifier="t"))
    yield "max io3", most("io3")
    yield "max io2 renamed", most("io2")
    yield "drop io", lambda: c().drop_table("w", "io", True)
    yield "max io dropped", most("io")
    yield "drop w", lambda: c().drop_database("w", True, True)
    yield "max nope after", most("nope")


def _answer(call):
    try:
        return ("ok", call())
    except errors.HMSError as e:  # pragma: no cover - never raised by a client
        raise AssertionError(e)
    except Exception as e:  # what the client got
        kind = getattr(e, "type", None)
        message = getattr(e, "message", None) or str(e)
        return ("error", type(e).__name__, kind, message)


def _replay(server) -> list:
    """Each step's answer; a connection the server closed (after a protocol error, as Thrift's
    Java server does) is opened again and the step's call made on it."""
    out = []
    with _connection(server) as holder:
        for label, call in _steps(lambda: holder[0]):
            answer = _answer(call)
            if answer[0] == "error" and answer[1] == "TTransportException":
                holder.reopen()
                answer = _answer(call)
            out.append((label, answer))
    return out


@contextmanager
def _connection(server):
    """[client], with ``reopen()`` for a new connection once the server closed this one (a
    connection that has spoken 2.3 only is not served write ids: dialect.AFTER_31)."""
    class Holder(list):
        def reopen(self):
            self.opened.close()
            self.opened = ExitStack()
            self[0] = self.opened.enter_context(connect(server))
            self[0].get_catalogs()  # as a Hive 3/4 client's connection has spoken before

    holder = Holder([None])
    holder.opened = ExitStack()
    holder[0] = holder.opened.enter_context(connect(server))
    try:
        yield holder
    finally:
        holder.opened.close()


def _on_fresh_servers(tmp_path, run) -> tuple:
    """``run(server)`` on a fresh stock HMS 4.0.1 with its transaction tables, then on a fresh
    server of ours: (stock's answers, ours)."""
    from hms_proxy.tools.hive4_local import start_stock_hms4
    from tests.support.proxy import start_proxy

    answers = []
    for start in (lambda: start_stock_hms4(tmp_path / "stock-hms-4.0.1", with_transactions=True),
                  lambda: start_proxy(tmp_path / "ours")):
        server = start()
        try:
            answers.append(run(server))
        finally:
            server.stop()
    return tuple(answers)


@pytest.mark.oracle
@pytest.mark.timeout(600)
def test_write_id_calls_answer_as_the_stock_hms_4(tmp_path):

    theirs, ours = _on_fresh_servers(tmp_path, _replay)
    answers = dict(theirs)
    # what the stock HMS answered, pinned where it says something about the semantics
    assert answers["out of order"][1].txnToWriteIds == [T.TxnToWriteId(1, 1), T.TxnToWriteId(2, 2)]
    assert answers["partly allocated"][0] == "error"
    assert answers["again"][1].txnToWriteIds == [T.TxnToWriteId(1, 1)]
    differ = [f"{label}: stock {stock_answer!r} / ours {our_answer!r}"
              for (label, stock_answer), (_, our_answer) in zip(theirs, ours)
              if stock_answer != our_answer]
    assert len(theirs) == len(ours)
    assert not differ, "\n".join(differ)


# --- without the oracle: the state in process and in Redis ------------------------------------
_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
def make(request):
    """A fresh TxnManager over the state under test (twice the same Redis prefix: two servers)."""
    if request.param == "memory":
        state = TxnManager()
        return lambda: state
    url = request.getfixturevalue("redis_url")
    prefix = f"wid{next(_prefixes)}:"
    return lambda: TxnManager(state=RedisTxnState(url, prefix=prefix))


def test_allocation_is_shared_and_survives_in_the_state(make):
    one, two = WriteIds(make()), WriteIds(make())
    a, b = one.manager.open_txns(2, "u", "h")
    assert one.allocate("db", "t", [a]) == [(a, 1)]
    assert two.allocate("DB", "T", [b]) == [(b, 2)]  # the other server sees the first id
    assert two.allocate("db", "t", [a]) == [(a, 1)]
    two.manager.abort_txn(b)
    two.manager.commit_txn(a)
    (answer,) = one.valid(["db.t"], None, None)
    assert (answer.writeIdHighWaterMark, answer.invalidWriteIds, answer.abortedBits) == \
        (2, [2], b"\x01")
    assert one.max_allocated("db", "t") == 2


def test_an_aborted_writer_stays_aborted(make):
    """Its delta must stay unseen: an aborted transaction that got a write id is never
    forgotten by the reaper, as one that wrote nothing is."""
    clock = [1_000.0]
    manager = make()
    manager.clock = lambda: clock[0]
    ids = WriteIds(manager)
    a, b = manager.open_txns(2, "u", "h")
    ids.allocate("db", "t", [a])
    manager.abort_txn(a)
    manager.abort_txn(b)
    clock[0] += 10 * manager.timeout
    manager.reap()
    hwm, listed, low, aborted = manager.get_open_txns_with_aborted()
    assert a in aborted and b not in listed


def test_drops_and_renames_take_the_write_ids_along(make):
    manager = make()
    ids = WriteIds(manager)
    (a,) = manager.open_txns(1, "u", "h")
    ids.allocate("db", "t", [a])
    ids.allocate("db", "u", [a])
    ids.renamed(("db", "t"), ("db", "t2"))
    assert (ids.max_allocated("db", "t"), ids.max_allocated("db", "t2")) == (0, 1)
    manager.cleanup_records("db", "t2")
    assert ids.max_allocated("db", "t2") == 0
    manager.cleanup_records("db")
    assert ids.max_allocated("db", "u") == 0
    manager.abort_txn(a)  # it still holds its write ids' place: listed as aborted
    assert a in manager.get_open_txns_with_aborted()[3]


def test_first_write_id_is_above_the_ones_the_data_names(tmp_path, make):
    """A server restarted without Redis forgets its write ids; the table's directories do
    not: its next writer gets an id no directory has."""
    table = tmp_path / "t"
    for name in ("delta_0000003_0000003_0000", "delete_delta_0000007_0000007",
                 "p=1/base_0000009", "p=1/base_0000009/delta_0000050_0000050", "other_12"):
        (table / name).mkdir(parents=True)
    assert highest_write_id_in(table.as_uri()) == 9
    assert highest_write_id_in(str(tmp_path / "missing")) == 0
    assert highest_write_id_in("s3a://bucket/t") == 0
    ids = WriteIds(make())
    (a,) = ids.manager.open_txns(1, "u", "h")
    assert ids.allocate("db", "t", [a], floor=lambda: highest_write_id_in(table.as_uri())) \
        == [(a, 10)]


def test_valid_txn_lists_as_hive_writes_them():
    seen = parse_valid_txns("10:2:2,5-7:3")
    assert [seen.valid(t) for t in range(1, 12)] == \
        [True, False, False, True, False, False, False, True, True, True, False]
    assert seen.is_aborted(3) and not seen.is_aborted(2)
    with pytest.raises(errors.InternalError):
        parse_valid_txns("10:x")
    with pytest.raises(errors.InternalError):
        parse_valid_txns("10:1:1-99999999999")


def test_a_2_3_connection_is_answered_as_hms_2_3(proxy):
    """As the stock HMS 2.3 answers: the method is unknown to a connection that has spoken
    2.3 only; once it asked for a database the 4.x way, it is served."""
    from thrift.Thrift import TApplicationException

    rqst = T.MaxAllocatedTableWriteIdRequest(dbName="default", tableName="never_written_23")
    with connect(proxy) as c:
        c.get_all_databases()
        with pytest.raises(TApplicationException) as e:
            c.get_max_allocated_table_write_id(rqst)
        assert e.value.type == TApplicationException.UNKNOWN_METHOD
        assert e.value.message == "Invalid method name: 'get_max_allocated_table_write_id'"
    with connect(proxy) as c:
        c.get_database_req(T.GetDatabaseRequest(name="default", catalogName="hive"))
        assert c.get_max_allocated_table_write_id(rqst).maxWriteId == 0


# --- add_dynamic_partitions in Hive 3's layout (hms_proxy/thrift/layouts.py) ---------------------
class _ADP3:
    """AddDynamicPartitions as Hive 3+ lays it out: writeid inserted at 2."""
    thrift_spec = (None, (1, TType.I64, "txnid", None, None),
                   (2, TType.I64, "writeid", None, None),
                   (3, TType.STRING, "dbname", "UTF8", None),
                   (4, TType.STRING, "tablename", "UTF8", None),
                   (5, TType.LIST, "partitionnames", (TType.STRING, "UTF8", False), None),
                   (6, TType.I32, "operationType", None, None))

    def __init__(self, **kw):
        for _, _, name, _, _ in self.thrift_spec[1:]:
            setattr(self, name, kw.get(name))


class _ADP3Args:
    thrift_spec = (None, (1, TType.STRUCT, "rqst", [_ADP3, _ADP3.thrift_spec], None))

    def __init__(self, rqst):
        self.rqst = rqst


def _send_adp3(c, **fields):
    from thrift.protocol import fastbinary
    from thrift.Thrift import TMessageType

    c._oprot.writeMessageBegin("add_dynamic_partitions", TMessageType.CALL, 0)
    c._oprot.trans.write(fastbinary.encode_binary(_ADP3Args(_ADP3(**fields)),
                                                  [_ADP3Args, _ADP3Args.thrift_spec]))
    c._oprot.writeMessageEnd()
    c._oprot.trans.flush()
    return c.recv_add_dynamic_partitions()


def _dynamic_partitions_of_a_3x_client(server) -> list:
    out = []
    with connect(server) as c:
        c.get_catalogs()
        a, b = c.open_txns(T.OpenTxnRequest(num_txns=2, user="me", hostname="h")).txn_ids
        c.allocate_table_write_ids(T.AllocateTableWriteIdsRequest(
            dbName="default", tableName="t", txnIds=[a, b]))
        c.abort_txn(T.AbortTxnRequest(txnid=b))
        for label, txnid in (("open", a), ("aborted", b), ("unknown", 999)):
            out.append((label, _answer(lambda: _send_adp3(
                c, txnid=txnid, writeid=1, dbname="default", tablename="t",
                partitionnames=["p=1", "p=2"], operationType=T.DataOperationType.INSERT))))
        out.append(("commit", _answer(lambda: c.commit_txn(T.CommitTxnRequest(txnid=a)))))
        out.append(("commit again", _answer(lambda: c.commit_txn(T.CommitTxnRequest(txnid=a)))))
    return out


@pytest.mark.oracle
@pytest.mark.timeout(600)
def test_a_3x_clients_dynamic_partitions_are_read_as_the_stock_hms_4_reads_them(tmp_path):
    """Before, its request read in 2.3's layout lost its names (a protocol error). Both servers
    fresh: the transaction ids are in the answers."""

    theirs, ours = _on_fresh_servers(tmp_path, _dynamic_partitions_of_a_3x_client)
    assert theirs[0] == ("open", ("ok", None))
    assert theirs[2] == ("unknown", ("error", "NoSuchTxnException", None,
                                     "No such transaction txnid:999"))
    assert ours == theirs


def test_min_client_generation_serves_every_connection_as_hive_3(tmp_path):
    """``serve --min-client-generation 3.1``: a fresh connection is served write ids at once
    (Trino's are all fresh), and gets both forms of get_open_txns."""
    from tests.support.proxy import start_proxy

    server = start_proxy(tmp_path / "s", "--min-client-generation", "3.1")
    try:
        with connect(server) as c:
            assert c.get_max_allocated_table_write_id(
                T.MaxAllocatedTableWriteIdRequest(dbName="default", tableName="t")).maxWriteId == 0
    finally:
        server.stop()
