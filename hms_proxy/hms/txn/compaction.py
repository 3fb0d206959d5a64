"""Compaction requests (compact, compact2, show_compact), as HMS 2.3's TxnHandler answers them.

The queue (HMS's COMPACTION_QUEUE) is part of the transaction state of hms_proxy/hms/txn/transactions.py
(:class:`~hms_proxy.hms.txn.transactions.Compaction` rows, ids from ``new_compaction_id``): in process, or in
Redis with ``serve --redis``, shared by every server like the locks -- not versioned with the
catalog, as HMS keeps it beside the catalog too. No compactor runs here (none runs in the stock
HMS either, ``hive.compactor.initiator.on=false`` and no worker threads): entries stay
"initiated".

What the stock HMS 2.3.10 does, and so what this does (tests/hms/conformance/scenarios_compaction.py):

- nothing is checked against the catalog: a request for a database, table or partition that
  does not exist is queued; names are kept as given (not lower-cased);
- a request for a database, table and partition (or none) that already has an entry queued
  (initiated or working) is not queued again: the answer is that entry's id and state with
  ``accepted=False``; otherwise it gets the next id (1, 2, ...), "initiated", accepted;
- ``compact`` is ``compact2`` without the answer; ``show_compact`` lists the queue by id
  (dbname, tablename, partitionname, type, state, runAs, id; no worker, start or job id),
  whatever the request;
- a request without dbname, tablename or a known type fails reading it: TApplicationException
  PROTOCOL_ERROR "Required field 'x' is unset! Struct:CompactionRequest(...)"; a null request
  is an internal error;
- HMS builds its SQL by pasting the strings in: a value with a lone ``'`` breaks the statement
  and a doubled ``''`` stands for one quote; a database, table or run-as name longer than 128
  characters (UTF-16 units), a partition name longer than 767, or properties whose
  StringableMap text is longer than 2048 fail like Derby does, unless the excess is only
  blanks, which Derby cuts off; blanks at the end do not count when comparing to queued
  entries. These failures are internal errors (compact2 declares no exception) and use no id.

Drops clean the queue as HMS 2.3's AcidEventListener has TxnHandler.cleanupRecords do
(:func:`forget_database`, :func:`forget_table`, :func:`forget_partitions`, called by the drop
calls once the catalog write is committed; ``TxnManager.cleanup_records`` does the work, the
transaction components included): a dropped database takes every entry of its name, a
dropped transactional table (parameter ``transactional`` equal to ``true`` in any case) every
entry of the table, a dropped partition of one the entries of its name
(``Warehouse.makePartName``). Names are matched as stored in the catalog (lower case) against
the entries' names as given (so ``CFCQ_DB``'s entries outlive the database ``cfcq_db``), blanks
at the end not counting. As in HMS, the listener also runs when the drop fails after the object
was found: ``drop_database`` of a database that is not empty and ``drop_partitions_req`` missing
some partitions clean the queue of the database and of the partitions found (HMS's listener
also runs for a refused ``drop_table`` of a transactional index table; ours does not). A drop
refused before it finds its object (or on a protected branch) cleans nothing. The queue is not
versioned: a drop on any branch cleans it (HMS has one catalog). Of the other tables HMS
cleans, COMPLETED_COMPACTIONS stays empty without a compactor, and TXN_COMPONENTS and
COMPLETED_TXN_COMPONENTS are the components of the transactions in hms_proxy/hms/txn/transactions.py.
"""
from __future__ import annotations

from thrift.Thrift import TApplicationException

from hms_proxy.hms import javafmt
from hms_proxy.hms.family import Family
from hms_proxy.hms.names import make_part_name
from hms_proxy.hms.txn.derby import fit, sql_string
from hms_proxy.hms.txn.transactions import Compaction, shared_manager
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel import codec

INITIATED, WORKING = "i", "w"
STATE_NAMES = {INITIATED: "initiated", WORKING: "working"}
TYPES = (T.CompactionType.MINOR, T.CompactionType.MAJOR)
# COMPACTION_QUEUE column widths (TxnDbUtil.prepDb)
MAX_DB, MAX_TABLE, MAX_PARTITION, MAX_RUN_AS, MAX_PROPERTIES = 128, 128, 767, 128, 2048


class CompactionQueue:
    """The compaction queue over a transaction state (``TxnState`` or ``RedisTxnState``)."""

    def __init__(self, state):
        self.state = state

    def compact(self, rqst) -> tuple[int, str, bool]:
        """TxnHandler.compact: (id, state name, accepted)."""
        if rqst is None:
            raise errors.InternalError("compact: no request")
        check_required(rqst)
        db, table = sql_string(rqst.dbname), sql_string(rqst.tablename)
        partition = None if rqst.partitionname is None else sql_string(rqst.partitionname)
        with self.state.session() as s:
            for row in s.compactions.values():
                if (row.state in (INITIATED, WORKING) and _same(row.db, db)
                        and _same(row.table, table)
                        and (row.partition is None if partition is None
                             else row.partition is not None and _same(row.partition, partition))):
                    return row.id, STATE_NAMES[row.state], False
            run_as = None if rqst.runas is None else sql_string(rqst.runas)
            properties = None
            if rqst.properties is not None:
                properties = sql_string(stringable_map(rqst.properties))
            values = (fit(db, MAX_DB), fit(table, MAX_TABLE),
                      None if partition is None else fit(partition, MAX_PARTITION),
                      None if run_as is None else fit(run_as, MAX_RUN_AS),
                      None if properties is None else fit(properties, MAX_PROPERTIES))
            cid = s.new_compaction_id()
            s.compactions[cid] = Compaction(cid, values[0], values[1], values[2], rqst.type,
                                            INITIATED, values[3], values[4])
            return cid, STATE_NAMES[INITIATED], True

    def show(self) -> list:
        with self.state.session() as s:
            rows = sorted(s.compactions.values(), key=lambda row: row.id)
        return [T.ShowCompactResponseElement(
            dbname=r.db, tablename=r.table, partitionname=r.partition, type=r.type,
            state=STATE_NAMES.get(r.state, r.state), runAs=r.run_as, hadoopJobId=None, id=r.id)
            for r in rows]


def forget_database(env, db: str) -> None:
    """A database was dropped (or its drop failed once it was found, as in HMS)."""
    shared_manager(env).cleanup_records(db)


def forget_table(env, table) -> None:
    """A table was dropped: a transactional one takes its entries along."""
    if is_transactional(table):
        shared_manager(env).cleanup_records(table.dbName, table.tableName)


def forget_partitions(env, table, dropped) -> None:
    """Partitions (their stored bytes) of ``table`` were dropped: for a transactional table,
    the entries of their names go."""
    if not dropped or not is_transactional(table):
        return
    keys = [k.name for k in table.partitionKeys or []]
    names = [make_part_name(keys, codec.decode(T.Partition, data).values) for data in dropped]
    shared_manager(env).cleanup_records(table.dbName, table.tableName, names)



# --- what the Java side does with the request -------------------------------------------------


class CompactionCalls(Family):
    # HMS's AcidEventListener: a dropped transactional object's queue entries go
    CASCADES = {"table_dropped": forget_table, "partitions_dropped": forget_partitions,
                "database_dropped": forget_database}

    def __init__(self, env):
        super().__init__(env)
        self.queue = CompactionQueue(shared_manager(env).state)

    def compact(self, ctx, rqst):
        self.queue.compact(rqst)

    def compact2(self, ctx, rqst):
        cid, state, accepted = self.queue.compact(rqst)
        return T.CompactionResponse(id=cid, state=state, accepted=accepted)

    def show_compact(self, ctx, rqst):
        return T.ShowCompactResponse(compacts=self.queue.show())


# --- drops: HMS's AcidEventListener --------------------------------------------------------
def is_transactional(table) -> bool:
    """TxnUtils.isAcidTable (2.3): the ``transactional`` parameter is ``true``, any case."""
    value = (table.parameters or {}).get("transactional")
    return isinstance(value, str) and value.lower() == "true"


def check_required(rqst) -> None:
    """CompactionRequest.validate(), run as HMS reads the request."""
    for name in ("dbname", "tablename", "type"):
        value = getattr(rqst, name)
        if value is None or (name == "type" and value not in TYPES):
            raise TApplicationException(
                TApplicationException.PROTOCOL_ERROR,
                f"Required field '{name}' is unset! Struct:{java_request_string(rqst)}")


def java_request_string(rqst) -> str:
    """CompactionRequest.toString() (Thrift's generated Java)."""
    parts = [f"dbname:{_jstr(rqst.dbname)}", f"tablename:{_jstr(rqst.tablename)}"]
    if rqst.partitionname is not None:
        parts.append(f"partitionname:{rqst.partitionname}")
    parts.append(f"type:{T.CompactionType._VALUES_TO_NAMES.get(rqst.type, 'null')}")
    if rqst.runas is not None:
        parts.append(f"runas:{rqst.runas}")
    if rqst.properties is not None:
        parts.append("properties:{" + ", ".join(
            f"{k}={v}" for k, v in javafmt.thrift_map_order(rqst.properties)) + "}")
    return f"CompactionRequest({', '.join(parts)})"


def _jstr(value) -> str:
    return "null" if value is None else value


def stringable_map(mapping: dict) -> str:
    """HMS's StringableMap.toString(): ``<size>:`` then ``<len>:<key><len>:<value>`` each."""
    out = [f"{len(mapping)}:"]
    for key, value in javafmt.thrift_map_order(mapping):
        for text in (key, value):
            text = text or ""
            out.append(f"{javafmt.string_length(text)}:{text}")
    return "".join(out)


def _same(stored: str, given: str) -> bool:
    """Derby's VARCHAR equality: trailing blanks do not count."""
    return stored.rstrip(" ") == given.rstrip(" ")
