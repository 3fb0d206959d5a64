"""add_dynamic_partitions and what a transaction's components change (committed and aborted
transactions that wrote), over both transaction states: in process and in Redis."""
from __future__ import annotations

import itertools

import pytest

from hms_proxy.hms.txn.transactions import COMMITTED, RedisTxnState, TxnManager
from hms_proxy.thrift import errors

_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
def m(request):
    if request.param == "memory":
        return TxnManager()
    url = request.getfixturevalue("redis_url")
    return TxnManager(state=RedisTxnState(url, prefix=f"adp{next(_prefixes)}:"))


def rows(*parts, op="i"):
    return lambda: [["db", "t", p, op] for p in parts]


def test_components_are_recorded_and_kept_on_commit(m):
    a, b = m.open_txns(2, "u", "h")
    m.add_dynamic_partitions(a, rows("ds=1", "ds=2"))
    m.add_dynamic_partitions(a, rows("ds=3", op="u"))
    with m.state.session() as s:
        txn = s.txns[a]
        assert txn.wrote
        assert [list(c) for c in txn.components] == [
            ["db", "t", "ds=1", "i"], ["db", "t", "ds=2", "i"], ["db", "t", "ds=3", "u"]]
    m.commit_txn(a)
    m.commit_txn(a)  # a retry: succeeds, as in HMS
    with m.state.session() as s:
        assert s.txns[a].state == COMMITTED
    for call in (lambda: m.abort_txn(a), lambda: m.heartbeat(None, a),
                 lambda: m.add_dynamic_partitions(a, rows("x"))):
        with pytest.raises(errors.NoSuchTxn, match=f"Transaction txnid:{a} is already committed."):
            call()
    hwm, listed, low = m.get_open_txns()
    assert a not in listed and b in listed and low == b
    assert [i.id for i in m.get_open_txns_info()[1]] == [b]
    assert m.heartbeat_txn_range(a, a) == (set(), {a})


def test_without_components_a_commit_forgets_the_txn(m):
    (a,) = m.open_txns(1, "u", "h")
    m.commit_txn(a)
    with pytest.raises(errors.NoSuchTxn, match=f"No such transaction txnid:{a}$"):
        m.add_dynamic_partitions(a, rows("x"))


def test_failures(m):
    a, b = m.open_txns(2, "u", "h")
    with pytest.raises(errors.NoSuchTxn, match="No such transaction txnid:999"):
        m.add_dynamic_partitions(999, rows("x"))
    m.abort_txn(b)
    with pytest.raises(errors.TxnAborted, match=f"Transaction txnid:{b} already aborted"):
        m.add_dynamic_partitions(b, rows("x"))

    def failing():
        raise errors.InternalError("bad row")
    with pytest.raises(errors.InternalError):
        m.add_dynamic_partitions(a, failing)
    with m.state.session() as s:
        assert not s.txns[a].wrote and s.txns[a].components == []


def test_an_aborted_txn_with_components_stays_listed(m):
    (a,) = m.open_txns(1, "u", "h")
    m.add_dynamic_partitions(a, rows("ds=1", op="s"))
    m.abort_txn(a)
    m.reap()
    assert a in m.get_open_txns()[1]
