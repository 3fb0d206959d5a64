"""Write ids of HMS 3+/4: what an ACID table's writers and readers agree on.

A Hive 3/4 writer of a transactional table asks ``allocate_table_write_ids`` for the table's
next write id within its transaction and names its delta directories after it
(``delta_0000005_0000005``); a reader asks ``get_valid_write_ids`` which write ids of the table
its snapshot of transactions may see (those of committed transactions). HMS keeps them in two
tables, NEXT_WRITE_ID (per table name: the next id) and TXN_TO_WRITE_ID (transaction, table ->
write id); here they are :class:`~hms_proxy.hms.txn.transactions.TableWriteIds` in the
transaction state (in process, or in Redis with ``serve --redis``, like the transactions they
belong to), by table name and for every branch at once: two branches writing one table never
get the same write id, so their delta directories never collide.

What the stock HMS 4.0.1 does, and so what this does (compared call by call in
``tests/hms/test_write_ids.py``):

- allocation lower-cases the names and does not look the table up; every transaction must be
  open (else an internal error); a transaction keeps its write id (asking again answers it), a
  request mixing transactions that have one with ones that do not fails; new ids are handed out
  in transaction order;
- ``get_valid_write_ids`` takes the names as given (``db.table``); the snapshot of transactions
  is the client's ``validTxnList`` (Hive's ``ValidReadTxnList`` text, ranges included), or the
  one of the transaction that got ``writeId``, or the current one; the answer's high-water mark
  is the highest write id of a transaction in the snapshot, the open and aborted ones below are
  listed, and when no committed write is among them only the lowest is kept (HMS 4's answer
  for a table whose committed writes were cleaned up);
- ``seed_write_id`` and ``get_max_allocated_table_write_id`` take the names as given too;
  a seed of a table that has write ids fails with HMS's duplicate-key MetaException;
- dropping a transactional table or a database forgets its write ids; renaming a table (any
  table) carries them to the new name.

One addition: a table's first write id here is above every write id its data directories
already name (``base_N``, ``delta_N_M``, ``delete_delta_N_M`` under a local location), so that
a server restarted without Redis (its in-process state gone) or a table dropped on another
branch never hands out a write id whose directory exists. TXN_TO_WRITE_ID rows of committed
transactions older than every open or aborted one are cleaned once a table has more than
:data:`MAX_WRITE_ID_ROWS`, as HMS's housekeeper does.
"""
from __future__ import annotations

import os
import re
from typing import Callable

from hms_proxy.hms.family import Family, lower
from hms_proxy.hms.txn.transactions import (
    ABORTED,
    COMMITTED,
    OPEN,
    TableWriteIds,
    TxnManager,
    shared_manager,
)
from hms_proxy.hms.warehouse import local_path
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes as T

LONG_MAX = (1 << 63) - 1
MAX_WRITE_ID_ROWS = 100_000  # TXN_TO_WRITE_ID rows of one table before old ones are cleaned
_ACID_DIR = re.compile(r"^(?:base|delta|delete_delta)_(\d+)(?:_(\d+))?(?:_v\d+|_\d+)*$")
SCAN_LIMIT = 100_000  # directories looked at when finding the write ids a table's data names


# --- the Java side: a request's text in errors, its required fields ------------------------------
def _java(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_java(v) for v in value) + "]"
    return str(value)


def java_struct(name: str, fields: list[tuple[str, object, bool]]) -> str:
    """Thrift's Java ``toString`` of a struct: ``fields`` are (name, value, printed), a
    required field always printed, an optional one when set."""
    return f"{name}(" + ", ".join(f"{f}:{_java(v)}" for f, v, shown in fields if shown) + ")"


def require(name: str, fields: list[tuple[str, object, bool]], required: tuple[str, ...]):
    """The check Thrift's Java reader makes of required fields: PROTOCOL_ERROR naming the
    first one unset, with the struct as read."""
    from thrift.Thrift import TApplicationException

    values = {f: v for f, v, _ in fields}
    for field in required:
        if values.get(field) is None:
            raise TApplicationException(
                TApplicationException.PROTOCOL_ERROR,
                f"Required field '{field}' is unset! Struct:{java_struct(name, fields)}")


def _allocate_fields(rqst) -> list:
    return [("dbName", rqst.dbName, True), ("tableName", rqst.tableName, True),
            ("txnIds", rqst.txnIds, rqst.txnIds is not None),
            ("replPolicy", rqst.replPolicy, rqst.replPolicy is not None),
            ("srcTxnToWriteIdList", rqst.srcTxnToWriteIdList,
             rqst.srcTxnToWriteIdList is not None),
            ("reallocate", rqst.reallocate, rqst.reallocate is not None)]


# --- snapshots of transactions (Hive's ValidReadTxnList) ----------------------------------------
class ValidTxns:
    """Which transactions a snapshot sees: those up to ``hwm`` that are not exceptions (open
    or aborted ones)."""

    def __init__(self, hwm: int, exceptions: list[int], aborted: set[int]):
        self.hwm = hwm
        self.exceptions = set(exceptions)
        self.aborted = aborted

    def valid(self, txnid: int) -> bool:
        return txnid <= self.hwm and txnid not in self.exceptions

    def is_aborted(self, txnid: int) -> bool:
        return txnid in self.aborted


def _java_split(text: str, sep: str) -> list[str]:
    """Java's ``String.split``: trailing empty strings dropped."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _parse_long(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text) or not -(1 << 63) <= int(text) <= LONG_MAX:
        raise errors.InternalError(f'For input string: "{text}"')
    return int(text)


def _ids(text: str) -> list[int]:
    """A list of ids as ``ValidReadTxnList`` writes it: ``1,4,7`` or ranges ``1-3``."""
    out: list[int] = []
    for item in _java_split(text, ","):
        if "-" in item[1:]:
            low, high = item.split("-", 1) if not item.startswith("-") else (item, "")
            first, last = _parse_long(low), _parse_long(high)
            if last - first > 1_000_000:
                raise errors.InternalError("validTxnList: a range of more than a million ids")
            out.extend(range(first, last + 1))
        else:
            out.append(_parse_long(item))
    return out


def parse_valid_txns(text: str) -> ValidTxns:
    """``hwm:minOpen:open,...:aborted,...`` (Hive's ``ValidReadTxnList.writeToString``); an
    empty text sees every transaction."""
    if text == "":
        return ValidTxns(LONG_MAX, [], set())
    values = _java_split(text, ":")
    if len(values) < 2:
        raise errors.InternalError(f"Index 1 out of bounds for length {len(values)}")
    hwm = _parse_long(values[0])
    _parse_long(values[1])  # the lowest open one: checked, not needed
    opened = _ids(values[2]) if len(values) > 2 and values[2] else []
    aborted = _ids(values[3]) if len(values) > 3 and values[3] else []
    return ValidTxns(hwm, opened + aborted, set(aborted))


def current_snapshot(s, current: int) -> ValidTxns:
    """TxnCommonUtils.createValidReadTxnList of the current transactions, as seen by
    ``current`` (0: by none): the transactions from ``current`` on are not seen."""
    hwm = s.txn_high_water_mark()
    listed = sorted(t.id for t in s.txns.values() if t.state != COMMITTED)
    if current > 0:
        hwm = min(current, hwm)
        listed = [t for t in listed if t < current]
    return ValidTxns(hwm, listed, {t for t in listed if s.txns[t].state == ABORTED})


# --- the write ids ----------------------------------------------------------------------------
def table_write_ids(rows: TableWriteIds | None, snapshot: ValidTxns, name: str):
    """GetValidWriteIdsForTable of HMS 4: one table's valid write ids under ``snapshot``."""
    txns = rows.txns if rows is not None else {}
    under = [w for t, w in txns.items() if t <= snapshot.hwm]
    hwm = max(under) if under else 0
    if hwm <= 0:
        hwm = rows.next - 1 if rows is not None and rows.next is not None else 0
    invalid: list[int] = []
    aborted_at: list[int] = []
    min_open = LONG_MAX
    committed_seen = False
    for writeid, txnid in sorted((w, t) for t, w in txns.items() if w <= hwm):
        if snapshot.valid(txnid):
            committed_seen = True
            continue
        invalid.append(writeid)
        if snapshot.is_aborted(txnid):
            aborted_at.append(len(invalid) - 1)
        else:
            min_open = min(min_open, writeid)
    if not committed_seen:  # HMS 4: only the lowest invalid write id is kept, as the mark
        first = invalid[0] if invalid else None
        invalid, aborted_at = [], []
        if first is not None:
            invalid, hwm = [first], first
            if first != min_open:
                aborted_at = [0]
    bits = bytearray()
    for i in aborted_at:
        while len(bits) <= i // 8:
            bits.append(0)
        bits[i // 8] |= 1 << (i % 8)
    return T.TableValidWriteIds(fullTableName=name, writeIdHighWaterMark=hwm,
                                invalidWriteIds=invalid, abortedBits=bytes(bits),
                                minOpenWriteId=min_open if min_open < LONG_MAX else None)


def _split_name(name) -> tuple[str, str]:
    """TxnUtils.getDbTableName: ``db.table`` (what follows a second dot is ignored)."""
    parts = _java_split(name if name is not None else "", ".")
    if len(parts) < 2:
        raise errors.InternalError(f"Index 1 out of bounds for length {len(parts)}")
    return parts[0], parts[1]


def highest_write_id_in(location: str | None) -> int:
    """The highest write id the ACID directories under a local ``location`` name (0 if none,
    or if the location is not local): ``base_N``, ``delta_N_M``, ``delete_delta_N_M``."""
    root = local_path(location)
    if not root or not os.path.isdir(root):
        return 0
    highest, seen = 0, 0
    for path, dirs, _files in os.walk(root):
        for name in dirs:
            match = _ACID_DIR.match(name)
            if match:
                highest = max(highest, *(int(g) for g in match.groups() if g))
        dirs[:] = [d for d in dirs if not _ACID_DIR.match(d)]  # deltas hold no deltas
        seen += len(dirs)
        if seen > SCAN_LIMIT:
            break
    return highest


class WriteIds:
    """The write-id calls over a :class:`TxnManager`'s state."""

    def __init__(self, manager: TxnManager):
        self.manager = manager

    def allocate(self, db: str, table: str, txn_ids: list[int],
                 floor: Callable[[], int] = lambda: 0, describe: str = "") -> list[tuple]:
        """HMS 4's allocateTableWriteIds: [(txn id, write id)] in transaction order.
        ``floor()`` is the highest write id the table's data already names (asked only for a
        table without write ids here)."""
        if txn_ids is None:
            raise errors.InternalError("allocate_table_write_ids: no txnIds")
        if not txn_ids:
            raise errors.InternalError("The IN list is empty!")
        key = (db.lower(), table.lower())
        with self.manager.session() as (s, now):
            rows = s.write_ids.get(key)
            fresh = rows is None or rows.next is None
        lowest = floor() if fresh else 0  # looked for outside the state's lock
        with self.manager.session() as (s, now):
            opened = {t for t in txn_ids if (x := s.txns.get(t)) is not None and x.state == OPEN}
            if len(opened) != len(txn_ids):  # one not open, unknown, or named twice
                raise errors.InternalError(
                    f"Write ID allocation failed on {key[0]}.{key[1]} as not all input txns in "
                    "open state or read-only")
            rows = s.write_ids.get(key)
            ordered = sorted(txn_ids)
            if rows is not None:
                have = [t for t in ordered if t in rows.txns]
                if len(have) == len(ordered):  # asked again: the same answer
                    return [(t, rows.txns[t]) for t in ordered]
                if have:
                    raise errors.MetaError(_duplicate_row("allocateTableWriteIds", describe,
                                                          "TXN_TO_WRITE_ID", "TBL_TO_TXN_ID_IDX"))
            if rows is None:
                rows = s.write_ids[key] = TableWriteIds(None)
            if rows.next is None:
                rows.next = max(max(rows.txns.values(), default=0), lowest) + 1
            first = rows.next
            rows.next += len(ordered)
            for offset, txnid in enumerate(ordered):
                rows.txns[txnid] = first + offset
                s.txns[txnid].wrote = True  # an abort keeps it listed: its deltas stay unseen
            if len(rows.txns) > MAX_WRITE_ID_ROWS:
                _clean(s, rows)
            return [(t, rows.txns[t]) for t in ordered]

    def valid(self, full_names: list[str], valid_txn_list: str | None,
              write_id: int | None) -> list:
        """HMS 4's getValidWriteIds."""
        if not full_names:
            raise errors.InternalError("get_valid_write_ids: no table names")
        with self.manager.session() as (s, now):
            if valid_txn_list is not None:
                snapshot = parse_valid_txns(valid_txn_list)
            elif write_id is not None:
                db, table = _split_name(full_names[0])
                rows = s.write_ids.get((db, table))
                owner = next((t for t, w in (rows.txns.items() if rows else ()) if w == write_id),
                             None)
                if owner is None:
                    raise errors.MetaError(f"invalid write id {write_id} for table {db}.{table}")
                snapshot = current_snapshot(s, owner)
            else:
                snapshot = current_snapshot(s, 0)
            return [table_write_ids(s.write_ids.get(_split_name(name)), snapshot, name)
                    for name in full_names]

    def max_allocated(self, db: str, table: str) -> int:
        with self.manager.session() as (s, now):
            rows = s.write_ids.get((db, table))
            return rows.next - 1 if rows is not None and rows.next is not None else 0

    def seed(self, db: str, table: str, seed: int, describe: str) -> None:
        with self.manager.session() as (s, now):
            rows = s.write_ids.get((db, table))
            if rows is not None and rows.next is not None:
                raise errors.MetaError(_duplicate_row("seedWriteId", describe, "NEXT_WRITE_ID",
                                                      "NEXT_WRITE_ID_IDX"))
            if rows is None:
                rows = s.write_ids[(db, table)] = TableWriteIds(None)
            rows.next = seed + 1

    def seed_txn(self, seed: int) -> None:
        with self.manager.session() as (s, now):
            if seed <= s.txn_high_water_mark():
                raise errors.InternalError(
                    f"Invalid txnId seed {seed}, the highWaterMark is {s.txn_high_water_mark()}")
            s.seed_txn_ids(seed)

    def renamed(self, old: tuple[str, str], new: tuple[str, str]) -> None:
        """TxnHandler.onRename: a renamed table's write ids go with it."""
        old, new = (old[0].lower(), old[1].lower()), (new[0].lower(), new[1].lower())
        if old == new:
            return
        with self.manager.session() as (s, now):
            rows = s.write_ids.pop(old, None)
            if rows is not None:
                s.write_ids[new] = rows


def _duplicate_row(function: str, describe: str, table: str, index: str) -> str:
    """The MetaException HMS 4 gives when its insert meets an existing row."""
    statement = {
        "TXN_TO_WRITE_ID": 'INSERT INTO "TXN_TO_WRITE_ID" ("T2W_TXNID",  "T2W_DATABASE", '
                           '"T2W_TABLE", "T2W_WRITEID") VALUES (?, ?, ?, ?)',
        "NEXT_WRITE_ID": 'INSERT INTO "NEXT_WRITE_ID" ("NWI_DATABASE", "NWI_TABLE", "NWI_NEXT") '
                         'VALUES (?, ?, ?)'}[table]
    cause = ("The statement was aborted because it would have caused a duplicate key value in "
             f"a unique or primary key constraint or unique index identified by '{index}' "
             f"defined on '{table}'.")
    nested = ("java.sql.BatchUpdateException" if table == "TXN_TO_WRITE_ID" else
              "org.apache.derby.shared.common.error.DerbySQLIntegrityConstraintViolationException")
    return (f"Failed to execute function: {function}({describe}), details:"
            f"PreparedStatementCallback; SQL [{statement}]; {cause}; nested exception is "
            f"{nested}: {cause}")


def _clean(s, rows: TableWriteIds) -> None:
    """HMS's housekeeper (cleanTxnToWriteIdTable): the rows of transactions older than every
    open or aborted one are not needed to tell a snapshot what it may see."""
    uncommitted = [t.id for t in s.txns.values() if t.state in (OPEN, ABORTED)]
    below = min(uncommitted, default=s.txn_high_water_mark() + 1)
    for txnid in [t for t in rows.txns if t < below]:
        del rows.txns[txnid]


class WriteIdCalls(Family):
    """The Thrift calls of HMS 3+/4's write ids."""

    CASCADES = {"table_moved": lambda env, old, new: WriteIds(shared_manager(env)).renamed(
        (old.dbName, old.tableName), (new.dbName, new.tableName))}

    def __init__(self, env):
        super().__init__(env)
        self.ids = WriteIds(shared_manager(env))

    def allocate_table_write_ids(self, ctx, rqst):
        fields = _allocate_fields(rqst)
        require("AllocateTableWriteIdsRequest", fields, ("dbName", "tableName"))

        def floor() -> int:
            with self.reading(ctx) as cat:
                table = cat.table(lower(rqst.dbName), lower(rqst.tableName))
            location = table.sd.location if table is not None and table.sd else None
            return highest_write_id_in(location)

        pairs = self.ids.allocate(rqst.dbName, rqst.tableName, rqst.txnIds, floor,
                                  java_struct("AllocateTableWriteIdsRequest", fields))
        return T.AllocateTableWriteIdsResponse(
            txnToWriteIds=[T.TxnToWriteId(txnId=t, writeId=w) for t, w in pairs])

    def get_valid_write_ids(self, ctx, rqst):
        fields = [("fullTableNames", rqst.fullTableNames, True),
                  ("validTxnList", rqst.validTxnList, rqst.validTxnList is not None),
                  ("writeId", rqst.writeId, rqst.writeId is not None)]
        require("GetValidWriteIdsRequest", fields, ("fullTableNames",))
        return T.GetValidWriteIdsResponse(
            tblValidWriteIds=self.ids.valid(rqst.fullTableNames, rqst.validTxnList, rqst.writeId))

    def get_max_allocated_table_write_id(self, ctx, rqst):
        require("MaxAllocatedTableWriteIdRequest",
                [("dbName", rqst.dbName, True), ("tableName", rqst.tableName, True)],
                ("dbName", "tableName"))
        return T.MaxAllocatedTableWriteIdResponse(
            maxWriteId=self.ids.max_allocated(rqst.dbName, rqst.tableName))

    def seed_write_id(self, ctx, rqst):
        fields = [("dbName", rqst.dbName, True), ("tableName", rqst.tableName, True),
                  ("seedWriteId", rqst.seedWriteId, True)]
        require("SeedTableWriteIdsRequest", fields, ("dbName", "tableName", "seedWriteId"))
        self.ids.seed(rqst.dbName, rqst.tableName, rqst.seedWriteId,
                      java_struct("SeedTableWriteIdsRequest", fields))

    def seed_txn_id(self, ctx, rqst):
        require("SeedTxnIdRequest", [("seedTxnId", rqst.seedTxnId, True)], ("seedTxnId",))
        self.ids.seed_txn(rqst.seedTxnId)
