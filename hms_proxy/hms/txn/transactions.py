"""Locks and transactions: HMS 2.3's TxnHandler (what DbTxnManager talks to), in process.

:class:`TxnState` is all the state (transactions, lock rows, the two id counters) and nothing
else, in process; :class:`RedisTxnState` is the same state in Redis, shared by every server
process started with ``serve --redis URL``. Both hand out the state by ``session()``, during
which the caller has it to itself (a mutex in process; in Redis a global lock, SET NX PX with a
token, around loading the state and writing back what changed, checked and released by one Lua
script). :class:`TxnManager` is the logic, every public method in one session, whichever state
it runs over; :class:`TxnCalls` is the family serving the Thrift calls from a manager shared by
all connections (:func:`shared_manager`). The state also holds HMS's compaction queue
(:class:`Compaction` rows), which hms_proxy/hms/txn/compaction.py serves.

What HMS 2.3.10 does, and so what this does (checked against the stock HMS, see
``tests/hms/conformance`` and ``tests/hms/test_txns.py``):

- transaction ids and lock ids count from 1; ``open_txns`` opens at most
  ``hive.txn.max.open.batch`` (1000) at once; a committed transaction is forgotten (committing
  or aborting it again is ``NoSuchTxnException``), an aborted one is kept and listed by
  ``get_open_txns`` (readers must keep ignoring what it wrote) until it is known to have
  written nothing, when the reaper drops it like HMS's compactor does;
- a lock request is a list of components (database, table or partition), enqueued WAITING and
  then checked: each component looks at the locks *in front of it* -- rows of requests with
  an id up to its own, ordered acquired first, then by type (SHARED_READ, SHARED_WRITE,
  EXCLUSIVE), then by id -- from the nearest backwards, and HMS's ``jumpTable`` says whether to
  acquire, wait or keep looking. One waiting component rolls the whole request back to
  WAITING (all or nothing) and records what blocked it; ``check_lock`` checks again.
  One deliberate difference: HMS 2.3 looks only at requests with an id up to the checked one,
  so a waiting EXCLUSIVE lock is granted although a later SHARED_READ request passed it and
  holds its lock (the oracle does that). Here the locks in front also include every acquired
  lock, as Hive 4 does, so conflicting locks are never held together;
  ``TxnManager(hms23_lock_scan=True)`` restores HMS 2.3's exact behaviour;
- locks of one transaction never conflict with each other, nor components of one request
  without a transaction; a database SHARED_READ does not conflict with a table EXCLUSIVE;
- names are compared as given (HMS 2.3 does not lower-case them here);
- ``unlock`` of an unknown lock succeeds; a transaction's acquired locks are released only by
  its commit or abort (``TxnOpenException``);
- a lock without a transaction that is not heartbeated (``heartbeat``, ``check_lock``) within
  ``hive.txn.timeout`` is released, an open transaction not heartbeated is aborted; checked
  lazily on each call and by a daemon reaper thread (with Redis, in whichever process calls).
"""
from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from thrift.protocol import fastbinary
from thrift.Thrift import TType

from hms_proxy.hms.family import Family
from hms_proxy.hms.txn.derby import fit, sql_string
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.thrift.replies import Raw

DEFAULT_TIMEOUT = 300.0  # hive.txn.timeout
DEFAULT_MAX_OPEN_BATCH = 1000  # hive.txn.max.open.batch
MAX_HEARTBEAT_RANGE = 1_000_000  # HMS has no limit; a bigger range would exhaust our memory
REAP_INTERVAL = 5.0

OPEN, ABORTED = "o", "a"            # TXNS.TXN_STATE
COMMITTED = "c"  # not in TXNS: a committed txn that wrote (COMPLETED_TXN_COMPONENTS rows)
ACQUIRED, WAITING = "a", "w"        # HIVE_LOCKS.HL_LOCK_STATE

SR, SW, EX = T.LockType.SHARED_READ, T.LockType.SHARED_WRITE, T.LockType.EXCLUSIVE
_TYPE_RANK = {SR: 0, SW: 1, EX: 2}  # TxnHandler.LockTypeComparator: more restrictive last

ACQUIRE, WAIT, KEEP_LOOKING = "acquire", "wait", "keep_looking"
# TxnHandler.jumpTable[desired type][type of the lock in front][its state]
JUMP_TABLE = {
    SR: {SR: {ACQUIRED: ACQUIRE, WAITING: KEEP_LOOKING},
         SW: {ACQUIRED: ACQUIRE, WAITING: KEEP_LOOKING},
         EX: {ACQUIRED: WAIT, WAITING: WAIT}},
    SW: {SR: {ACQUIRED: KEEP_LOOKING, WAITING: KEEP_LOOKING},
         SW: {ACQUIRED: WAIT, WAITING: WAIT},
         EX: {ACQUIRED: WAIT, WAITING: WAIT}},
    EX: {SR: {ACQUIRED: WAIT, WAITING: WAIT},
         SW: {ACQUIRED: WAIT, WAITING: WAIT},
         EX: {ACQUIRED: WAIT, WAITING: WAIT}},
}

_WRITE_OPS = {T.DataOperationType.INSERT, T.DataOperationType.UPDATE,
              T.DataOperationType.DELETE, T.DataOperationType.UNSET, None}


# --- errors with HMS's wording (JavaUtils.txnIdToString / lockIdToString) ----------------------
def no_such_txn(txnid: int) -> errors.HMSError:
    return errors.NoSuchTxn(f"No such transaction txnid:{txnid}")


def txn_aborted(txnid: int) -> errors.HMSError:
    return errors.TxnAborted(f"Transaction txnid:{txnid} already aborted")


def already_committed(txnid: int) -> errors.HMSError:
    return errors.NoSuchTxn(f"Transaction txnid:{txnid} is already committed.")


def parse_timeout(value, default: float = DEFAULT_TIMEOUT) -> float:
    """A HiveConf time in seconds: ``300``, ``300s``, ``5m``, ``300000ms``, ``1h``, ``1d``."""
    if value is None or str(value).strip() == "":
        return default
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|msec|s|sec|m|min|h|hour|d|day)?s?\s*",
                         str(value).lower())
    if match is None:
        raise ValueError(f"invalid hive.txn.timeout: {value!r}")
    scale = {None: 1, "ms": 0.001, "msec": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60,
             "h": 3600, "hour": 3600, "d": 86400, "day": 86400}[match.group(2)]
    return float(match.group(1)) * scale


# --- the state --------------------------------------------------------------------------------
@dataclass
class Txn:
    id: int
    state: str
    user: str | None
    host: str | None
    started: int          # ms
    last_heartbeat: int   # ms
    wrote: bool = False   # HMS would have TXN_COMPONENTS rows for it
    aborted_at: int = 0   # ms
    # TXN_COMPONENTS rows added by add_dynamic_partitions: [db, table, partition, op char]
    components: list = field(default_factory=list)


@dataclass
class LockRow:
    """One component of a lock request (a HIVE_LOCKS row)."""

    ext_id: int
    int_id: int
    txnid: int            # 0 without a transaction
    db: str | None
    table: str | None
    partition: str | None
    type: int
    state: str
    last_heartbeat: int   # ms; 0 for a transaction's lock until heartbeated by lock id
    acquired_at: int | None
    user: str | None
    host: str | None
    agent_info: str | None
    blocked_by: tuple[int, int] | None = None

    @property
    def is_db_lock(self) -> bool:
        return self.db is not None and self.table is None and self.partition is None

    @property
    def is_table_lock(self) -> bool:
        return self.db is not None and self.table is not None and self.partition is None

    def describe(self) -> str:
        """TxnHandler.LockInfo.toString."""
        state = {ACQUIRED: "ACQUIRED", WAITING: "WAITING"}[self.state]
        return (f"lockid:{self.ext_id} intLockId:{self.int_id} txnid:{self.txnid} "
                f"db:{_j(self.db)} table:{_j(self.table)} partition:{_j(self.partition)} "
                f"state:{state} type:{T.LockType._VALUES_TO_NAMES[self.type]}")


def _j(value) -> str:
    return "null" if value is None else str(value)


def _derby_eq(stored: str | None, given: str) -> bool:
    """``column = 'given'`` in Derby: NULL matches nothing, blanks at the end do not count."""
    return stored is not None and stored.rstrip(" ") == given.rstrip(" ")


@dataclass
class Compaction:
    """One COMPACTION_QUEUE row (hms_proxy/hms/txn/compaction.py enqueues and lists them)."""

    id: int
    db: str
    table: str
    partition: str | None
    type: int             # CompactionType
    state: str            # CQ_STATE: "i" (initiated) -- nothing here works on the queue
    run_as: str | None
    properties: str | None  # CQ_TBLPROPERTIES, as HMS's StringableMap writes it


@dataclass
class TableWriteIds:
    """The write ids of one table name (HMS 3+): its NEXT_WRITE_ID row (``next``, None when
    there is none: a table with TXN_TO_WRITE_ID rows only after a cleanup) and its
    TXN_TO_WRITE_ID rows (transaction id -> write id)."""

    next: int | None
    txns: dict[int, int] = field(default_factory=dict)


@dataclass
class TxnState:
    """Everything the manager knows: the TXNS and HIVE_LOCKS tables and the id counters, in
    process.

    The interface the manager uses (:class:`RedisTxnState` hands out an object with the same
    one): ``session()`` gives the state to one caller at a time; in it, ``txns`` and ``locks``
    are plain dicts, ``new_txn_ids``/``new_lock_id`` hand out ids, ``txn_high_water_mark`` is
    the last transaction id handed out; ``compactions`` (the compaction queue) and
    ``new_compaction_id`` serve hms_proxy/hms/txn/compaction.py; ``write_ids`` (HMS 3+'s
    NEXT_WRITE_ID and TXN_TO_WRITE_ID, by ``(db, table)``) and ``seed_txn_ids`` serve
    hms_proxy/hms/txn/writeids.py."""

    next_txn_id: int = 1
    next_lock_id: int = 1
    txns: dict[int, Txn] = field(default_factory=dict)
    locks: dict[int, list[LockRow]] = field(default_factory=dict)  # by lock id, increasing
    next_compaction_id: int = 1
    compactions: dict[int, Compaction] = field(default_factory=dict)  # the compaction queue
    write_ids: dict[tuple[str, str], "TableWriteIds"] = field(default_factory=dict)
    _mutex: Any = field(default_factory=threading.RLock, repr=False, compare=False)

    @contextmanager
    def session(self):
        with self._mutex:
            yield self

    def new_txn_ids(self, count: int) -> list[int]:
        ids = list(range(self.next_txn_id, self.next_txn_id + count))
        self.next_txn_id += count
        return ids

    def new_lock_id(self) -> int:
        self.next_lock_id += 1
        return self.next_lock_id - 1

    def txn_high_water_mark(self) -> int:
        return self.next_txn_id - 1

    def new_compaction_id(self) -> int:
        self.next_compaction_id += 1
        return self.next_compaction_id - 1

    def seed_txn_ids(self, first: int) -> None:
        """The next transaction opened gets id ``first``."""
        self.next_txn_id = first


# --- the state in Redis -----------------------------------------------------------------------
DEFAULT_REDIS_PREFIX = "hms-proxy:txn:"
REDIS_LEASE = 30.0      # seconds the global lock is held at most (an operation takes ms)
REDIS_WAIT = 60.0       # seconds to wait for the global lock before failing the call

# Write back what the session changed and release the global lock, only if it still holds it.
_REDIS_COMMIT = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local ops = cjson.decode(ARGV[2])
for i = 1, #ops[1], 2 do redis.call('hset', KEYS[2], ops[1][i], ops[1][i + 1]) end
for _, id in ipairs(ops[2]) do redis.call('hdel', KEYS[2], id) end
for i = 1, #ops[3], 2 do redis.call('hset', KEYS[3], ops[3][i], ops[3][i + 1]) end
for _, id in ipairs(ops[4]) do redis.call('hdel', KEYS[3], id) end
for i = 1, #ops[5], 2 do redis.call('hset', KEYS[4], ops[5][i], ops[5][i + 1]) end
for _, id in ipairs(ops[6]) do redis.call('hdel', KEYS[4], id) end
for i = 1, #ops[7], 2 do redis.call('hset', KEYS[5], ops[7][i], ops[7][i + 1]) end
for _, id in ipairs(ops[8]) do redis.call('hdel', KEYS[5], id) end
redis.call('del', KEYS[1])
return 1
"""
_REDIS_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def _dump_txn(txn: Txn) -> str:
    return json.dumps(dataclasses.astuple(txn), separators=(",", ":"))


def _load_txn(raw: str) -> Txn:
    return Txn(*json.loads(raw))


def _dump_rows(rows: list[LockRow]) -> str:
    return json.dumps([dataclasses.astuple(r) for r in rows], separators=(",", ":"))


def _dump_compaction(row: Compaction) -> str:
    return json.dumps(dataclasses.astuple(row), separators=(",", ":"))


def _dump_write_ids(row: TableWriteIds) -> str:
    return json.dumps([row.next, sorted(row.txns.items())], separators=(",", ":"))


def _load_write_ids(raw: str) -> TableWriteIds:
    nxt, pairs = json.loads(raw)
    return TableWriteIds(nxt, {int(t): int(w) for t, w in pairs})


def _load_rows(raw: str) -> list[LockRow]:
    rows = [LockRow(*values) for values in json.loads(raw)]
    for row in rows:
        if row.blocked_by is not None:
            row.blocked_by = tuple(row.blocked_by)
    return rows


class _RedisView:
    """The state of one session over Redis: the tables loaded, the counters in Redis."""

    def __init__(self, owner: "RedisTxnState", raw_txns: dict, raw_locks: dict):
        self._owner = owner
        self.raw_txns = {int(k): v for k, v in raw_txns.items()}
        self.raw_locks = {int(k): v for k, v in raw_locks.items()}
        self.txns = {k: _load_txn(self.raw_txns[k]) for k in sorted(self.raw_txns)}
        self.locks = {k: _load_rows(self.raw_locks[k]) for k in sorted(self.raw_locks)}
        self._compactions: dict[int, Compaction] | None = None
        self.raw_compactions: dict[int, str] = {}
        self._write_ids: dict[tuple[str, str], TableWriteIds] | None = None
        self.raw_write_ids: dict[tuple[str, str], str] = {}

    def new_txn_ids(self, count: int) -> list[int]:
        if count <= 0:
            return []
        last = self._owner.redis.incrby(self._owner.key_next_txn, count)
        return list(range(last - count + 1, last + 1))

    def new_lock_id(self) -> int:
        return self._owner.redis.incr(self._owner.key_next_lock)

    def txn_high_water_mark(self) -> int:
        return int(self._owner.redis.get(self._owner.key_next_txn) or 0)

    @property
    def compactions(self) -> dict[int, Compaction]:
        """The compaction queue, loaded on first use in the session (lock calls never pay
        for it)."""
        if self._compactions is None:
            raw = self._owner.redis.hgetall(self._owner.key_compactions)
            self.raw_compactions = {int(k): v for k, v in raw.items()}
            self._compactions = {k: Compaction(*json.loads(self.raw_compactions[k]))
                                 for k in sorted(self.raw_compactions)}
        return self._compactions

    def new_compaction_id(self) -> int:
        return self._owner.redis.incr(self._owner.key_next_compaction)

    def seed_txn_ids(self, first: int) -> None:
        self._owner.redis.set(self._owner.key_next_txn, first - 1)

    @property
    def write_ids(self) -> dict[tuple[str, str], TableWriteIds]:
        """The write ids by table name, loaded on first use in the session."""
        if self._write_ids is None:
            raw = self._owner.redis.hgetall(self._owner.key_write_ids)
            self.raw_write_ids = {tuple(json.loads(k)): v for k, v in raw.items()}
            self._write_ids = {k: _load_write_ids(v) for k, v in self.raw_write_ids.items()}
        return self._write_ids

    def changes(self) -> list:
        """For each of the transactions, the lock requests, the compaction queue and the write
        ids (the last two when loaded): [fields and values to set], [fields to delete]."""
        out = []
        tables = [(self.txns, self.raw_txns, _dump_txn, str),
                  (self.locks, self.raw_locks, _dump_rows, str),
                  (self._compactions, self.raw_compactions, _dump_compaction, str),
                  (self._write_ids, self.raw_write_ids, _dump_write_ids,
                   lambda key: json.dumps(list(key)))]
        for table, raw, dump, field_of in tables:
            sets, dels = [], []
            if table is not None:
                for key, value in table.items():
                    text = dump(value)
                    if raw.get(key) != text:
                        sets += [field_of(key), text]
                dels = [field_of(key) for key in raw if key not in table]
            out += [sets, dels]
        return out


class RedisTxnState:
    """The manager's state in Redis, shared by every process using the same Redis and prefix.

    Keys: ``<prefix>txns`` (hash: txn id -> JSON of a :class:`Txn`), ``<prefix>locks`` (hash:
    lock id -> JSON of its rows), ``<prefix>compactions`` (hash: compaction id -> JSON of a
    :class:`Compaction`, loaded only by sessions that use the queue), ``<prefix>write_ids``
    (hash: JSON ``[db, table]`` -> JSON of a :class:`TableWriteIds`, loaded likewise),
    ``<prefix>next_txn``,
    ``<prefix>next_lock`` and ``<prefix>next_compaction`` (the last id handed out, by INCR),
    ``<prefix>mutex`` (the global lock). A session takes the global lock (SET NX PX with a
    random token), loads the transactions and locks, lets the manager work on plain objects
    and writes back the changed entries in one Lua script that first checks the token: a
    process that lost its lease (stalled longer than ``lease`` seconds) fails its call instead
    of overwriting another's work. Threads of one process queue on a local mutex first."""

    def __init__(self, url: str | None = None, *, client=None,
                 prefix: str = DEFAULT_REDIS_PREFIX, lease: float = REDIS_LEASE,
                 wait: float = REDIS_WAIT):
        if client is None:
            import redis

            client = redis.Redis.from_url(url, decode_responses=True)
        self.redis = client
        self.url = url
        self.lease_ms = max(1, int(lease * 1000))
        self.wait = wait
        self.key_mutex = prefix + "mutex"
        self.key_txns = prefix + "txns"
        self.key_locks = prefix + "locks"
        self.key_next_txn = prefix + "next_txn"
        self.key_next_lock = prefix + "next_lock"
        self.key_compactions = prefix + "compactions"
        self.key_next_compaction = prefix + "next_compaction"
        self.key_write_ids = prefix + "write_ids"
        self._commit = client.register_script(_REDIS_COMMIT)
        self._release = client.register_script(_REDIS_RELEASE)
        self._local = threading.RLock()
        self._current = threading.local()

    def _acquire(self) -> str:
        token = uuid.uuid4().hex
        deadline = time.monotonic() + self.wait
        pause = 0.0005
        while not self.redis.set(self.key_mutex, token, nx=True, px=self.lease_ms):
            if time.monotonic() > deadline:
                raise errors.MetaError(f"Timed out waiting {self.wait:g}s for the lock "
                                       f"table lock in Redis ({self.key_mutex})")
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return token

    @contextmanager
    def session(self):
        view = getattr(self._current, "view", None)
        if view is not None:  # nested in this thread's session
            yield view
            return
        with self._local:
            token = self._acquire()
            try:
                pipe = self.redis.pipeline(transaction=False)
                pipe.hgetall(self.key_txns)
                pipe.hgetall(self.key_locks)
                raw_txns, raw_locks = pipe.execute()
                view = _RedisView(self, raw_txns, raw_locks)
            except BaseException:
                self._release(keys=[self.key_mutex], args=[token])
                raise
            self._current.view = view
            try:
                yield view
            finally:
                # written back even when the operation failed, as in process: what it did
                # before failing (reaping, an id used) stays done
                self._current.view = None
                done = self._commit(keys=[self.key_mutex, self.key_txns, self.key_locks,
                                          self.key_compactions, self.key_write_ids],
                                    args=[token, json.dumps(view.changes())])
                if not done:
                    raise errors.MetaError("Lost the lock table lock in Redis (held longer "
                                           f"than {self.lease_ms} ms); nothing was changed")

    def clear(self) -> None:
        """Forget every transaction and lock (tests)."""
        self.redis.delete(self.key_mutex, self.key_txns, self.key_locks, self.key_next_txn,
                          self.key_next_lock, self.key_compactions, self.key_next_compaction,
                          self.key_write_ids)


def _sort_key(row: LockRow, state: str):
    """TxnHandler.LockInfoComparator: acquired first, then by type, then by ids."""
    return (state != ACQUIRED, _TYPE_RANK[row.type], row.ext_id, row.int_id)


def _overlaps(a: LockRow, b: LockRow) -> bool:
    if a.db != b.db:
        return False
    if a.table is not None and b.table is not None and a.table != b.table:
        return False
    if a.partition is not None and b.partition is not None and a.partition != b.partition:
        return False
    return True


def _ignore_conflict(desired: LockRow, existing: LockRow) -> bool:
    """TxnHandler.ignoreConflict."""
    return ((desired.is_db_lock and desired.type == SR
             and existing.is_table_lock and existing.type == EX)
            or (existing.is_db_lock and existing.type == SR
                and desired.is_table_lock and desired.type == EX)
            or (desired.txnid != 0 and desired.txnid == existing.txnid)
            or (desired.txnid == 0 and desired.ext_id == existing.ext_id))


def _writes(component) -> bool:
    """Whether HMS 2.3 records the component in TXN_COMPONENTS (so the txn 'wrote')."""
    if component.isAcid is False:
        return False
    if component.operationType in _WRITE_OPS:
        return not component.isDynamicPartitionWrite
    return False


class TxnManager:
    """HMS 2.3's TxnHandler over a :class:`TxnState` or a :class:`RedisTxnState`; thread-safe
    (and, over Redis, safe across processes)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT,
                 clock: Callable[[], float] = time.time,
                 max_open_batch: int = DEFAULT_MAX_OPEN_BATCH,
                 state: TxnState | RedisTxnState | None = None, hms23_lock_scan: bool = False,
                 lock_wait: float = 0.0):
        self.timeout = float(timeout)
        # seconds lock() and check_lock() hold a WAITING answer back for the lock to be granted
        # (0: answer at once, as HMS does); see :meth:`_await_grant`
        self.lock_wait = max(0.0, float(lock_wait))
        self._released = threading.Condition(threading.Lock())
        self._releases = 0  # bumped (under _released) whenever a session removed locks
        self.hms23_lock_scan = hms23_lock_scan
        self.clock = clock
        self.max_open_batch = max_open_batch
        self.state = state if state is not None else TxnState()
        self._mutex = threading.RLock()
        self._reaper: threading.Thread | None = None

    @classmethod
    def from_conf(cls, conf: dict, **kwargs) -> "TxnManager":
        return cls(timeout=parse_timeout(conf.get("hive.txn.timeout")),
                   max_open_batch=int(conf.get("hive.txn.max.open.batch", DEFAULT_MAX_OPEN_BATCH)),
                   **kwargs)

    def _now(self) -> int:
        return int(self.clock() * 1000)

    @contextmanager
    def _session(self):
        """The state to this call alone, timed-out locks and transactions already reaped:
        (state, now in ms)."""
        with self.state.session() as s:
            held = len(s.locks)
            try:
                now = self._now()
                self._time_out(s, now)
                yield s, now
            finally:
                freed = len(s.locks) < held
        if freed:  # unlock, commit, abort, a timeout: a waiting lock may be granted now
            with self._released:
                self._releases += 1
                self._released.notify_all()

    def session(self):
        """:meth:`_session` for the other users of the state (hms_proxy/hms/txn/writeids.py):
        (state, now in ms), the state to this caller alone."""
        return self._session()

    # --- timeouts ---------------------------------------------------------------------------
    def reap(self) -> None:
        """Release timed-out locks, abort timed-out transactions, forget aborted transactions
        that wrote nothing (HMS's housekeeper and compactor cleaner)."""
        with self._session():
            pass

    def _time_out(self, s, now: int) -> None:
        limit = now - int(self.timeout * 1000)
        for ext_id in [e for e, rows in s.locks.items()
                       if rows[0].txnid == 0 and rows[0].last_heartbeat < limit]:
            del s.locks[ext_id]
        for txn in [t for t in s.txns.values() if t.state == OPEN and t.last_heartbeat < limit]:
            self._abort(s, txn, now)
        for txn in [t for t in s.txns.values()
                    if t.state == ABORTED and not t.wrote and t.aborted_at < limit]:
            del s.txns[txn.id]

    def ensure_reaper(self, interval: float = REAP_INTERVAL) -> None:
        """Start the daemon thread reaping every ``interval`` seconds (once); it ends with the
        manager."""
        if self._reaper is not None:
            return
        with self._mutex:
            if self._reaper is not None:
                return
            ref = weakref.ref(self)

            def run():
                while True:
                    time.sleep(interval)
                    manager = ref()
                    if manager is None:
                        return
                    try:
                        manager.reap()
                    except Exception:  # pragma: no cover - never kill the reaper
                        pass
                    del manager

            self._reaper = threading.Thread(target=run, name="hms-txn-reaper", daemon=True)
            self._reaper.start()

    # --- transactions -----------------------------------------------------------------------
    @staticmethod
    def _require_open(s, txnid: int) -> Txn:
        """TxnHandler.ensureValidTxn for a transaction that must be open."""
        txn = s.txns.get(txnid)
        if txn is None:
            raise no_such_txn(txnid)
        if txn.state == ABORTED:
            raise txn_aborted(txnid)
        if txn.state == COMMITTED:
            raise already_committed(txnid)
        return txn

    def _abort(self, s, txn: Txn, now: int) -> None:
        txn.state = ABORTED
        txn.aborted_at = now
        self._release_txn_locks(s, txn.id)

    @staticmethod
    def _release_txn_locks(s, txnid: int) -> None:
        for ext_id in [e for e, rows in s.locks.items() if rows[0].txnid == txnid]:
            del s.locks[ext_id]

    def open_txns(self, num_txns: int, user: str | None, host: str | None) -> list[int]:
        with self._session() as (s, now):
            count = max(0, min(int(num_txns or 0), self.max_open_batch))
            ids = s.new_txn_ids(count)
            for txnid in ids:
                s.txns[txnid] = Txn(txnid, OPEN, user, host, now, now)
            return ids

    def commit_txn(self, txnid: int) -> None:
        with self._session() as (s, now):
            known = s.txns.get(txnid)
            if known is not None and known.state == COMMITTED:
                return  # HMS: a commit again of a txn that wrote is a retry, and succeeds
            txn = self._require_open(s, txnid)
            self._release_txn_locks(s, txnid)
            if txn.wrote:  # HMS keeps its components (COMPLETED_TXN_COMPONENTS)
                txn.state = COMMITTED
            else:
                del s.txns[txnid]

    def abort_txn(self, txnid: int) -> None:
        with self._session() as (s, now):
            txn = s.txns.get(txnid)
            if txn is None:
                raise no_such_txn(txnid)
            if txn.state == COMMITTED:
                raise already_committed(txnid)
            if txn.state == OPEN:
                self._abort(s, txn, now)

    def abort_txns(self, txnids) -> None:
        """Aborts the open ones, ignores the rest (HMS only logs them)."""
        with self._session() as (s, now):
            for txnid in txnids:
                txn = s.txns.get(txnid)
                if txn is not None and txn.state == OPEN:
                    self._abort(s, txn, now)

    def get_open_txns(self):
        """(high water mark, ids of open and aborted txns, lowest open id or None)."""
        return self.get_open_txns_with_aborted()[:3]

    def get_open_txns_with_aborted(self):
        """:meth:`get_open_txns` and the ids of the aborted ones."""
        with self._session() as (s, now):
            opened = [t.id for t in s.txns.values() if t.state == OPEN]
            return (s.txn_high_water_mark(),
                    {t.id for t in s.txns.values() if t.state != COMMITTED},
                    (min(opened) if opened else None),
                    {t.id for t in s.txns.values() if t.state == ABORTED})

    def get_open_txns_info(self):
        with self._session() as (s, now):
            infos = [T.TxnInfo(id=t.id,
                               state=T.TxnState.OPEN if t.state == OPEN else T.TxnState.ABORTED,
                               user=t.user, hostname=t.host, startedTime=t.started,
                               lastHeartbeatTime=t.last_heartbeat)
                     for t in sorted(s.txns.values(), key=lambda t: t.id)
                     if t.state != COMMITTED]
            return s.txn_high_water_mark(), infos

    def heartbeat(self, lockid: int | None, txnid: int | None) -> None:
        with self._session() as (s, now):
            if lockid:
                rows = s.locks.get(lockid)
                if rows is None:
                    raise errors.NoSuchLock(f"No such lock: lockid:{lockid}")
                for row in rows:
                    row.last_heartbeat = now
            if txnid:
                self._require_open(s, txnid).last_heartbeat = now

    def add_dynamic_partitions(self, txnid: int, rows_of: Callable[[], list]) -> None:
        """TxnHandler.addDynamicPartitions: the partitions a dynamic-partition write of an
        open transaction touched become its components (TXN_COMPONENTS rows ``[db, table,
        partition, operation]`` from ``rows_of()``, which may fail once the transaction is
        known to be open), so that it counts as having written: an abort keeps it listed, a
        commit keeps it as committed ("is already committed" afterwards)."""
        with self._session() as (s, now):
            txn = self._require_open(s, txnid)
            rows = rows_of()
            txn.components.extend(rows)
            txn.wrote = True

    def cleanup_records(self, db: str, table: str | None = None, partitions=None) -> None:
        """TxnHandler.cleanupRecords, as HMS's AcidEventListener calls it for a dropped
        database, transactional table or partitions (names) of one: their COMPACTION_QUEUE
        entries, the components (TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS) naming them and, for
        a table or a database, HMS 3+'s write ids (NEXT_WRITE_ID, TXN_TO_WRITE_ID) go,
        matched as Derby compares (exact case, blanks at the end not counting). A transaction
        left without components wrote nothing: a committed one is forgotten (HMS finds no
        trace of it), an aborted one is reaped like one that never wrote."""
        def named(row_db, row_table, row_partition) -> bool:
            return (_derby_eq(row_db, db)
                    and (table is None or _derby_eq(row_table, table))
                    and (partitions is None
                         or any(_derby_eq(row_partition, p) for p in partitions)))

        with self._session() as (s, now):
            for cid in [cid for cid, row in s.compactions.items()
                        if named(row.db, row.table, row.partition)]:
                del s.compactions[cid]
            if partitions is None:  # HMS 3+: the write ids of the table (or the database) go
                for key in [k for k in s.write_ids if named(k[0], k[1], None)]:
                    del s.write_ids[key]
            for txn in list(s.txns.values()):
                kept = [c for c in txn.components if not named(c[0], c[1], c[2])]
                if len(kept) == len(txn.components):
                    continue
                txn.components = kept
                if not kept and not any(txn.id in rows.txns for rows in s.write_ids.values()):
                    txn.wrote = False
                    if txn.state == COMMITTED:
                        del s.txns[txn.id]

    def heartbeat_txn_range(self, low: int, high: int):
        """(aborted ids, unknown ids) in [low, high]; the open ones are heartbeated."""
        if low is None or high is None or high < low:
            raise errors.InternalError("heartbeat_txn_range: max < min")
        if high - low + 1 > MAX_HEARTBEAT_RANGE:
            raise errors.MetaError(f"heartbeat_txn_range: more than {MAX_HEARTBEAT_RANGE} "
                                   f"transactions in one call")
        with self._session() as (s, now):
            aborted, nosuch = set(), set()
            txns = s.txns
            for txnid in range(low, high + 1):
                txn = txns.get(txnid)
                if txn is None or txn.state == COMMITTED:
                    nosuch.add(txnid)
                elif txn.state == ABORTED:
                    aborted.add(txnid)
                else:
                    txn.last_heartbeat = now
            return aborted, nosuch

    # --- locks ------------------------------------------------------------------------------
    def lock(self, components, txnid: int | None, user: str | None, host: str | None,
             agent_info: str | None = "Unknown") -> tuple[int, int]:
        """Enqueue a lock request and check it: (lock id, LockState)."""
        if components is None or any(c is None or c.type not in _TYPE_RANK for c in components):
            raise errors.InternalError("lock: a request needs components with a lock type")
        txnid = txnid or 0
        with self._session() as (s, now):
            if txnid:
                txn = self._require_open(s, txnid)
                written = [c for c in components if _writes(c)]
                if written:  # its TXN_COMPONENTS rows (cleanup_records removes them)
                    txn.wrote = True
                    txn.components.extend(
                        [c.dbname, c.tablename, c.partitionname,
                         _ADP_OPS.get(c.operationType) or "u"] for c in written)
            ext_id = s.new_lock_id()
            if not components:
                # HMS enqueues (and commits) the empty request, then fails checking it
                raise errors.InternalError("lock: a request without components")
            s.locks[ext_id] = [
                LockRow(ext_id, i, txnid, c.dbname, c.tablename, c.partitionname, c.type,
                        WAITING, 0 if txnid else now, None, user, host, agent_info)
                for i, c in enumerate(components, start=1)]
            with self._released:
                seen = self._releases
            state = self._check(s, ext_id, now)
        if state == T.LockState.WAITING and self.lock_wait:
            state = self._await_grant(ext_id, seen)
        return ext_id, state

    def check_lock(self, lockid: int) -> int:
        with self._released:
            seen = self._releases
        state = self._check_lock(lockid)
        if state == T.LockState.WAITING and self.lock_wait:
            state = self._await_grant(lockid, seen)
        return state

    def _await_grant(self, lockid: int, seen: int) -> int:
        """Hold a WAITING answer back up to ``lock_wait`` seconds, checking the lock again
        each time a lock is released here (and every :data:`LOCK_RECHECK` seconds, for
        releases by other processes sharing the state in Redis): ACQUIRED the moment the lock
        is granted, else WAITING, as HMS would have answered at once.

        HMS answers WAITING at once and the client sleeps before asking again (pyiceberg:
        0.1 s doubling to its max; Iceberg's Java client 50 ms to 5 s; Hive's DbLockManager
        alike), so a contended lock sits unused between the holder's unlock and the next
        check. Granted here, the lock passes to the next waiter within milliseconds, in the
        same order (HMS's: by lock id). The wait is well under every client's socket timeout,
        and the state is never locked while waiting."""
        deadline = time.monotonic() + self.lock_wait
        state = T.LockState.WAITING
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return state
            with self._released:
                if self._releases == seen:
                    self._released.wait(min(left, LOCK_RECHECK))
                seen = self._releases
            state = self._check_lock(lockid)  # unlocked meanwhile: HMS's NoSuchLock, as then
            if state != T.LockState.WAITING:
                return state

    def _check_lock(self, lockid: int) -> int:
        with self._session() as (s, now):
            rows = s.locks.get(lockid)
            if rows is None:
                raise errors.NoSuchLock(f"No such lock lockid:{lockid}")
            if rows[0].txnid:
                self._require_open(s, rows[0].txnid).last_heartbeat = now
            else:
                for row in rows:
                    row.last_heartbeat = now
            return self._check(s, lockid, now)

    def _check(self, s, ext_id: int, now: int) -> int:
        """TxnHandler.checkLock: all components acquired, or none (WAITING)."""
        mine = s.locks[ext_id]
        before = {id(row): (row.state, row.acquired_at, row.blocked_by) for row in mine}
        candidates = sorted(
            ((row, row.state) for e, rows in s.locks.items() for row in rows
             if e <= ext_id or (row.state == ACQUIRED and not self.hms23_lock_scan)),
            key=lambda pair: _sort_key(*pair))
        position = {id(row): i for i, (row, _) in enumerate(candidates)}
        for row in mine:
            if before[id(row)][0] == ACQUIRED:
                continue
            for other, other_state in reversed(candidates[:position[id(row)]]):
                if not _overlaps(row, other):
                    continue
                action = JUMP_TABLE[row.type][other.type][other_state]
                if action == KEEP_LOOKING:
                    continue
                if action == WAIT and not _ignore_conflict(row, other):
                    for undo in mine:  # roll back what this check acquired
                        undo.state, undo.acquired_at, undo.blocked_by = before[id(undo)]
                    row.blocked_by = (other.ext_id, other.int_id)
                    return T.LockState.WAITING
                break  # ACQUIRE, or a conflict HMS ignores
            # acquired: passed a lock in front, or nothing in front of it to pass
            row.state, row.acquired_at, row.blocked_by = ACQUIRED, now, None
        return T.LockState.ACQUIRED

    def unlock(self, lockid: int) -> None:
        with self._session() as (s, now):
            rows = s.locks.get(lockid)
            if rows is None:
                return  # HMS: idempotent
            kept = [r for r in rows if not (r.txnid == 0 or r.state == WAITING)]
            if len(kept) == len(rows):
                raise errors.TxnOpen("Unlocking locks associated with transaction not "
                                     f"permitted.  {rows[0].describe()}")
            if kept:
                s.locks[lockid] = kept
            else:
                del s.locks[lockid]

    def show_locks(self, dbname=None, tablename=None, partname=None) -> list:
        with self._session() as (s, now):
            rows = [row for rows in s.locks.values() for row in rows
                    if (not dbname or row.db == dbname)
                    and (not tablename or row.table == tablename)
                    and (not partname or row.partition == partname)]
            rows.sort(key=lambda row: _sort_key(row, row.state))
            return [T.ShowLocksResponseElement(
                lockid=r.ext_id, dbname=r.db, tablename=r.table, partname=r.partition,
                state=T.LockState.ACQUIRED if r.state == ACQUIRED else T.LockState.WAITING,
                type=r.type, txnid=r.txnid, lastheartbeat=r.last_heartbeat,
                acquiredat=r.acquired_at, user=r.user, hostname=r.host, heartbeatCount=0,
                agentInfo=r.agent_info,
                blockedByExtId=r.blocked_by[0] if r.blocked_by else None,
                blockedByIntId=r.blocked_by[1] if r.blocked_by else None,
                lockIdInternal=r.int_id) for r in rows]


LOCK_RECHECK = 0.05  # seconds between checks of a held-back lock when no release is seen
DEFAULT_LOCK_WAIT = 1.0  # serve --lock-wait


def shared_manager(env) -> TxnManager:
    """The server's one manager (kept on its :class:`~hms_proxy.hms.family.Env`), so that the
    families using the transaction state (locks and transactions, the compaction queue) share
    it: in process, or in Redis with ``serve --redis``."""
    manager = env.__dict__.get("_txn_manager")
    if manager is None:
        url = getattr(env, "redis_url", None)
        state = None
        if url:
            state = RedisTxnState(url)
            state.redis.ping()  # an unreachable Redis fails the start, not the first lock
        manager = env.__dict__["_txn_manager"] = TxnManager.from_conf(
            env.conf, state=state, lock_wait=getattr(env, "lock_wait", DEFAULT_LOCK_WAIT))
    return manager


# GetOpenTxnsResponse.open_txns is a set<i64> in HMS 2.3 and a list<i64> from 3.0 on (its id
# is the same, 2; docs/compatibility.md, "Hive 3.x and 4.x clients"), and 3.0 added the required
# abortedBits (4). A Thrift reader skips a field whose wire type is not the one it declares, so
# an answer carrying field 2 twice, as a set and then as a list, is read by each generation as
# its own; a 2.3 reader skips field 4 too.
_OPEN_TXNS_AS_LIST = (None, None, (2, TType.LIST, "open_txns", (TType.I64, None, False), None))


class _OpenTxnsList:
    __slots__ = ("open_txns",)
    thrift_spec = _OPEN_TXNS_AS_LIST

    def __init__(self, open_txns):
        self.open_txns = open_txns


def aborted_bits(ids: list[int], aborted: set[int]) -> bytes:
    """Java's ``BitSet.toByteArray`` of the positions of the aborted ids in ``ids``."""
    bits = bytearray()
    for i, txn in enumerate(ids):
        if txn in aborted:
            while len(bits) <= i // 8:
                bits.append(0)
            bits[i // 8] |= 1 << (i % 8)
    return bytes(bits)


def open_txns_in_both_forms(hwm: int, ids, low: int | None, aborted) -> Raw:
    """The snapshot of the transactions as HMS 2.3 and HMS 3+/4 answer it, in one struct: the
    ids ascending (open and aborted, as both do), the aborted ones marked in abortedBits."""
    ordered = sorted(ids)
    full = T.GetOpenTxnsResponse(txn_high_water_mark=hwm, open_txns=set(ordered),
                                 min_open_txn=low, abortedBits=aborted_bits(ordered, aborted))
    both = fastbinary.encode_binary(full, [T.GetOpenTxnsResponse,
                                           T.GetOpenTxnsResponse.thrift_spec])
    as_list = fastbinary.encode_binary(_OpenTxnsList(ordered),
                                       [_OpenTxnsList, _OpenTxnsList.thrift_spec])
    return Raw(both[:-1] + as_list)  # without the first stop byte: one struct, field 2 twice


class TxnCalls(Family):
    """The Thrift calls of HMS 2.3's transaction and lock API."""

    def __init__(self, env):
        super().__init__(env)
        self.manager = shared_manager(env)

    def _m(self) -> TxnManager:
        self.manager.ensure_reaper()
        return self.manager

    def open_txns(self, ctx, rqst):
        ids = self._m().open_txns(rqst.num_txns, rqst.user, rqst.hostname)
        return T.OpenTxnsResponse(txn_ids=ids)

    def get_open_txns(self, ctx):
        """HMS 2.3's answer to a 2.3 client; to a newer one also its own form of the answer
        (:func:`open_txns_in_both_forms`)."""
        hwm, ids, low, aborted = self._m().get_open_txns_with_aborted()
        if not dialect.since(dialect.HIVE31):
            return T.GetOpenTxnsResponse(txn_high_water_mark=hwm, open_txns=ids,
                                         min_open_txn=low)
        return open_txns_in_both_forms(hwm, ids, low, aborted)

    def get_open_txns_req(self, ctx, getOpenTxnsRequest):
        """Hive 3.1+/4's snapshot of the transactions. Every transaction here is of the default
        type, so the types a client excludes (read-only, ...) exclude none."""
        return open_txns_in_both_forms(*self._m().get_open_txns_with_aborted())

    def get_open_txns_info(self, ctx):
        hwm, infos = self._m().get_open_txns_info()
        return T.GetOpenTxnsInfoResponse(txn_high_water_mark=hwm, open_txns=infos)

    def commit_txn(self, ctx, rqst):
        self._m().commit_txn(rqst.txnid)

    def add_dynamic_partitions(self, ctx, rqst):
        """Checked as HMS reads and runs it: required fields (PROTOCOL_ERROR), the
        transaction, the operation type, then the values as HMS's SQL takes them (quotes
        pasted in, Derby's column widths: internal errors)."""
        if rqst is None:
            raise errors.InternalError("add_dynamic_partitions: no request")
        _check_adp_required(rqst)
        op = _ADP_OPS.get(rqst.operationType, "u")  # an unknown enum value reads as unset

        def rows():
            if op is None:
                raise errors.InternalError("add_dynamic_partitions: unexpected operation type")
            db, table = fit(sql_string(rqst.dbname), 128), fit(sql_string(rqst.tablename), 128)
            return [[db, table, fit(sql_string(p), 767), op] for p in rqst.partitionnames]

        self._m().add_dynamic_partitions(rqst.txnid, rows)

    def abort_txn(self, ctx, rqst):
        self._m().abort_txn(rqst.txnid)

    def abort_txns(self, ctx, rqst):
        if rqst.txn_ids is None:
            raise errors.InternalError("abort_txns: no txn_ids")
        self._m().abort_txns(rqst.txn_ids)

    def heartbeat(self, ctx, ids):
        self._m().heartbeat(ids.lockid, ids.txnid)

    def heartbeat_txn_range(self, ctx, txns):
        aborted, nosuch = self._m().heartbeat_txn_range(txns.min, txns.max)
        return T.HeartbeatTxnRangeResponse(aborted=aborted, nosuch=nosuch)

    def lock(self, ctx, rqst):
        lockid, state = self._m().lock(rqst.component, rqst.txnid, rqst.user, rqst.hostname,
                                       rqst.agentInfo)
        return T.LockResponse(lockid=lockid, state=state)

    def check_lock(self, ctx, rqst):
        return T.LockResponse(lockid=rqst.lockid, state=self._m().check_lock(rqst.lockid))

    def unlock(self, ctx, rqst):
        self._m().unlock(rqst.lockid)

    def show_locks(self, ctx, rqst):
        return T.ShowLocksResponse(locks=self._m().show_locks(rqst.dbname, rqst.tablename,
                                                              rqst.partname))


# DataOperationType -> TC_OPERATION_TYPE; UNSET and NO_TXN fail in HMS's conversion
_ADP_OPS = {T.DataOperationType.SELECT: "s", T.DataOperationType.INSERT: "i",
            T.DataOperationType.UPDATE: "u", T.DataOperationType.DELETE: "d",
            T.DataOperationType.UNSET: None, T.DataOperationType.NO_TXN: None}


def _check_adp_required(rqst) -> None:
    """AddDynamicPartitions.validate(), run as HMS reads the request."""
    from thrift.Thrift import TApplicationException

    for name in ("txnid", "dbname", "tablename", "partitionnames"):
        if getattr(rqst, name) is None:
            def text(value):
                return "null" if value is None else str(value)
            parts = [f"txnid:{rqst.txnid or 0}", f"dbname:{text(rqst.dbname)}",
                     f"tablename:{text(rqst.tablename)}",
                     "partitionnames:" + ("null" if rqst.partitionnames is None else
                                          "[" + ", ".join(map(text, rqst.partitionnames)) + "]")]
            op = T.DataOperationType._VALUES_TO_NAMES.get(
                T.DataOperationType.UNSET if rqst.operationType is None else rqst.operationType)
            if op is not None:
                parts.append(f"operationType:{op}")
            raise TApplicationException(
                TApplicationException.PROTOCOL_ERROR,
                f"Required field '{name}' is unset! Struct:AddDynamicPartitions({', '.join(parts)})")
