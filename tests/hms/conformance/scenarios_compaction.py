"""Compaction requests: compact, compact2 and show_compact.

The queue is global and never worked on by the oracle (no compactor runs; drops clean it,
see compaction_cleaned_by_drops): the scenarios use database names starting with "cfcq",
listings are filtered to them, and ids are recorded relative to the scenario's first one. A request missing a required field makes the stock HMS
lose its place in the connection's byte stream (the next call on it fails), so each such
request is the last call of a scenario of its own.
"""

from __future__ import annotations

import copy

from tests.hms.conformance.builders import cols, database, partition, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

DB = "cfcq_db"
MINOR, MAJOR = T.CompactionType.MINOR, T.CompactionType.MAJOR
EMOJI = "\U0001F600"  # two UTF-16 units


def request(db, tbl, part=None, type_=MAJOR, runas=None, properties=None):
    return T.CompactionRequest(dbname=db, tablename=tbl, partitionname=part, type=type_,
                               runas=runas, properties=properties)


class Ids:
    """Compaction ids relative to the first one answered."""

    def __init__(self, *prefixes):
        self.base = None
        self.prefixes = prefixes or ("cfcq",)

    def rel(self, cid):
        if self.base is None:
            self.base = cid
        return cid - self.base

    def response(self, r):
        return (self.rel(r.id), r.state, r.accepted)

    def listing(self, r):
        mine = []
        for e in r.compacts:
            if (e.dbname or "").lower().startswith(self.prefixes):
                e = copy.copy(e)
                e.id = self.rel(e.id)
                mine.append(e)
        return mine

    def rows(self, r):
        """The listing as (id, dbname, tablename, partitionname)."""
        return [(e.id, e.dbname, e.tablename, e.partitionname) for e in self.listing(r)]


@scenario
def compaction_queue(c, rec):
    ids = Ids()
    rec.call("create_database", database(DB))
    tbl = table(DB, "events", partition_keys=cols("ds string"))
    rec.call("create_table", tbl)
    rec.call("add_partition", partition(tbl, ["2024-01-01"]))
    rec.call("compact2", request(DB, "events"), transform=ids.response)
    rec.call("show_compact", T.ShowCompactRequest(), transform=ids.listing)
    rec.call("compact2", request(DB, "events", type_=MINOR), transform=ids.response,
             label="compact2 again (queued already)")
    rec.call("compact2", request(DB, "events", "ds=2024-01-01", MINOR, "alice",
                                 {"compactor.mapreduce.map.memory.mb": "2048", "k": "v"}),
             transform=ids.response, label="compact2 a partition, runas and properties")
    rec.call("compact2", request(DB, "events", "ds=2024-01-01", MAJOR, "bob"),
             transform=ids.response, label="compact2 the partition again")
    rec.call("compact", request(DB, "events", "ds=2099-12-31"), label="compact missing partition")
    rec.call("compact", request(DB, "events", "ds=2099-12-31", MINOR),
             label="compact missing partition again")
    rec.call("compact2", request(DB, "nosuchtable"), transform=ids.response,
             label="compact2 missing table")
    rec.call("compact2", request("cfcq_nosuchdb", "t", "p=1"), transform=ids.response,
             label="compact2 missing database")
    rec.call("compact2", request("CFCQ_DB", "Events"), transform=ids.response,
             label="compact2 names in other case")
    rec.call("compact2", request(DB, "events", ""), transform=ids.response,
             label="compact2 empty partition name")
    rec.call("compact2", request(DB, "events", "", MINOR, "", {}), transform=ids.response,
             label="compact2 empty partition name again")
    rec.call("show_compact", T.ShowCompactRequest(), transform=ids.listing)
    rec.call("show_compact", None, transform=ids.listing, label="show_compact null request")
    rec.call("drop_database", DB, True, True)


@scenario
def compaction_bad_requests(c, rec):
    ids = Ids("cfcq_bad", "cfcq_a", "cfcq_ddd", "cfcq_db")
    db = "cfcq_bad"
    rec.call("compact2", request(db, "t"), transform=ids.response, label="compact2 first")
    rec.call("compact2", None, msg=True, label="compact2 null request")
    rec.call("compact", None, msg=True, label="compact null request")
    # HMS pastes the strings into its SQL
    rec.call("compact2", request("cfcq_a'b", "t"), msg=True, label="compact2 quote in dbname")
    rec.call("compact2", request(db, "t'"), msg=True, label="compact2 quote in tablename")
    rec.call("compact2", request(db, "t", "p='x"), msg=True, label="compact2 quote in partition")
    rec.call("compact2", request(db, "t2", runas="o'neil"), msg=True,
             label="compact2 quote in runas")
    rec.call("compact2", request(db, "t", runas="o'neil"), transform=ids.response,
             label="compact2 quote in runas, queued already")
    rec.call("compact2", request(db, "t2", properties={"it's": "x"}), msg=True,
             label="compact2 quote in properties")
    rec.call("compact2", request("cfcq_a''b", "t"), transform=ids.response,
             label="compact2 doubled quote")
    rec.call("compact2", request("cfcq_a''b", "t", type_=MINOR), transform=ids.response,
             label="compact2 doubled quote again")
    # Derby's column widths
    rec.call("compact2", request("cfcq_" + "d" * 124, "t"), msg=True,
             label="compact2 dbname of 129")
    rec.call("compact2", request("cfcq_" + "d" * 123, "t"), transform=ids.response,
             label="compact2 dbname of 128")
    rec.call("compact2", request(db, "t" * 129), msg=True, label="compact2 tablename of 129")
    rec.call("compact2", request(db, "b" * 120 + " " * 20), transform=ids.response,
             label="compact2 trailing blanks beyond the width")
    rec.call("compact2", request(db, "b" * 120 + " "), transform=ids.response,
             label="compact2 other trailing blanks")
    rec.call("compact2", request(db, "t", "p" * 768), msg=True, label="compact2 partition of 768")
    rec.call("compact2", request(db, "t", "p" * 767), transform=ids.response,
             label="compact2 partition of 767")
    rec.call("compact2", request(db, "t", "r1", runas="r" * 129), msg=True,
             label="compact2 runas of 129")
    rec.call("compact2", request(db, "t", "r2", runas=EMOJI * 65), msg=True,
             label="compact2 runas of 130 UTF-16 units")
    rec.call("compact2", request(db, "t", "r3", runas="\u00e9" * 128), transform=ids.response,
             label="compact2 runas of 128")
    rec.call("compact2", request(db, "t", "p1", properties={"k": "v" * 2039}), msg=True,
             label="compact2 properties of 2049")
    rec.call("compact2", request(db, "t", "p2", properties={"k": "v" * 2038}),
             transform=ids.response, label="compact2 properties of 2048")
    rec.call("compact2", request(db, "t", "p3", properties={"a": "1", "b": "2", "": ""}),
             transform=ids.response, label="compact2 properties with an empty key")
    rec.call("show_compact", T.ShowCompactRequest(), transform=ids.listing)


# --- requests missing a required field: the connection's next call fails --------------------
@scenario
def compaction_without_dbname(c, rec):
    rec.call("compact2", request(None, "t", "p=1", MINOR), msg=True)
    rec.call("show_compact", T.ShowCompactRequest(), transform=lambda r: None,
             label="show_compact on the same connection")
    rec.call("show_compact", T.ShowCompactRequest(), transform=lambda r: None,
             label="show_compact on a new connection")


@scenario
def compaction_without_tablename(c, rec):
    rec.call("compact", request("cfcq_db", None, None, MAJOR, "alice"), msg=True)


@scenario
def compaction_without_type(c, rec):
    rec.call("compact2", request("cfcq_db", "t", "p=1", None), msg=True)


@scenario
def compaction_unknown_type(c, rec):
    rec.call("compact2", request("cfcq_db", "t", None, 7, "bob", {"x": "y"}), msg=True)


@scenario
def compaction_without_dbname_with_properties(c, rec):
    """The message shows the properties in the order of Java's HashMap."""
    props = {"compactor.mapreduce.map.memory.mb": "2048", "a": "1", "zz": "", "Key": "v",
             "tblprops.orc.compress": "SNAPPY", "\u00e9t\u00e9": "x"}
    rec.call("compact2", request(None, None, "ds=1", MAJOR, "carol", props), msg=True)


# --- drops: HMS's AcidEventListener cleans the queue (TxnHandler.cleanupRecords) -------------
DROP_DB = "cfcq_drop"


def acid_table(db, name, partition_keys=None, transactional="true"):
    """A table HMS 2.3 accepts as transactional: ORC, bucketed."""
    tbl = table(db, name, cols("id bigint"), partition_keys=partition_keys,
                parameters={"transactional": transactional})
    tbl.sd.inputFormat = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
    tbl.sd.outputFormat = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
    tbl.sd.serdeInfo.serializationLib = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
    tbl.sd.numBuckets = 2
    tbl.sd.bucketCols = ["id"]
    return tbl


@scenario
def compaction_cleaned_by_drops(c, rec):
    ids = Ids(DROP_DB)
    show = T.ShowCompactRequest()

    def queue(*requests):
        for args in requests:
            rec.call("compact2", request(*args), transform=ids.response)

    rec.call("create_database", database(DROP_DB))
    acid = acid_table(DROP_DB, "acid", cols("ds string"))
    plain = table(DROP_DB, "plain", cols("id bigint"), partition_keys=cols("ds string"))
    rec.call("create_table", acid)
    rec.call("create_table", plain)
    for values in (["1"], ["2"], ["3"], ["4"], ["5"], ["a/b"]):
        rec.call("add_partition", partition(acid, values))
    rec.call("add_partition", partition(plain, ["1"]))
    queue((DROP_DB, "acid"), (DROP_DB, "acid", "ds=1"), (DROP_DB, "acid", "DS=1"),
          (DROP_DB, "ACID", "ds=1"), (DROP_DB.upper(), "acid", "ds=1"), (DROP_DB, "acid", "ds=2"),
          (DROP_DB, "acid", "ds=3"), (DROP_DB, "acid", "ds=a%2Fb"), (DROP_DB, "acid", "ds=a/b"),
          (DROP_DB, "acid", "ds=4"), (DROP_DB, "acid", "ds=5 "), (DROP_DB, "acid ", "ds=5x"),
          (DROP_DB, "plain", "ds=1"), (DROP_DB, "plain"), (DROP_DB + " ", "plain", "ds=9"),
          (DROP_DB, "ghost", "ds=1"))
    rec.call("show_compact", show, transform=ids.listing, label="show_compact queued")
    rec.call("drop_partition", DROP_DB, "acid", ["x"], False, label="drop_partition missing x")
    # a partition of a transactional table: its entries go
    rec.call("drop_partition", DROP_DB, "acid", ["1"], False)
    rec.call("show_compact", show, transform=ids.rows, label="after drop_partition")
    rec.call("drop_partition_by_name", DROP_DB, "ACID", "ds=2", False)
    rec.call("drop_partition_with_environment_context", DROP_DB, "acid", ["9"], False,
             T.EnvironmentContext({}), label="drop_partition missing")
    rec.call("show_compact", show, transform=ids.rows, label="after drop_partition_by_name")
    # by request: the partitions found go even when the drop fails for a missing one
    rec.call("drop_partitions_req", T.DropPartitionsRequest(
        DROP_DB, "acid", T.RequestPartsSpec(names=["ds=3", "ds=9"]), deleteData=False,
        ifExists=False), label="drop_partitions_req with a missing partition")
    rec.call("show_compact", show, transform=ids.rows, label="after the failed request")
    rec.call("drop_partition_by_name_with_environment_context", DROP_DB, "acid", "ds=5", False,
             T.EnvironmentContext({}))
    rec.call("show_compact", show, transform=ids.rows, label="after dropping ds=5")
    rec.call("drop_partitions_req", T.DropPartitionsRequest(
        DROP_DB, "acid", T.RequestPartsSpec(names=["ds=a%2Fb", "ds=4"]), deleteData=False,
        needResult=False), transform=lambda r: r.partitions)
    rec.call("show_compact", show, transform=ids.rows, label="after drop_partitions_req")
    # not a transactional table: nothing goes
    rec.call("drop_partition", DROP_DB, "plain", ["1"], False)
    rec.call("drop_table", DROP_DB, "plain", False)
    rec.call("show_compact", show, transform=ids.rows, label="after dropping plain")
    # a transactional table: all its entries go
    rec.call("drop_table_with_environment_context", DROP_DB, "acid", False,
             T.EnvironmentContext({}))
    rec.call("show_compact", show, transform=ids.rows, label="after drop_table")
    rec.call("drop_table", DROP_DB, "acid", False, label="drop_table again")
    # the value of "transactional" is read in any case
    rec.call("create_table", acid_table(DROP_DB, "acid2", transactional="TRUE"))
    flagged = acid_table(DROP_DB, "notacid", transactional="false")
    rec.call("create_table", flagged)
    queue((DROP_DB, "acid2"), (DROP_DB, "acid2", "ds=1"), (DROP_DB, "notacid"))
    rec.call("drop_table", DROP_DB, "acid2", True)
    rec.call("drop_table", DROP_DB, "notacid", True)
    rec.call("show_compact", show, transform=ids.rows, label="after dropping acid2, notacid")
    # a database: all its entries go, even when the drop fails because it is not empty
    rec.call("create_table", table(DROP_DB, "keep", cols("id bigint")))
    queue((DROP_DB, "keep"), (DROP_DB, "other", "x=1"))
    rec.call("drop_database", DROP_DB, False, False, label="drop_database not empty")
    rec.call("show_compact", show, transform=ids.rows, label="after the failed drop_database")
    queue((DROP_DB, "keep"), (DROP_DB + "  ", "x"))
    rec.call("drop_database", DROP_DB.upper(), True, True)
    rec.call("show_compact", show, transform=ids.rows, label="after drop_database")
    rec.call("drop_database", DROP_DB, True, True, label="drop_database again")
    rec.call("show_compact", show, transform=ids.rows, label="after the missing database")


@scenario
def compaction_drops_clean_txn_components(c, rec):
    """Drops clean TXN_COMPONENTS and COMPLETED_TXN_COMPONENTS too: a committed transaction
    whose components all went is unknown afterwards."""
    db = "cfcq_txc"
    O, L = T.DataOperationType, T.LockType
    rec.call("create_database", database(db))
    acid = acid_table(db, "acid", cols("ds string"))
    rec.call("create_table", acid)
    for values in (["1"], ["2"]):
        rec.call("add_partition", partition(acid, values))
    rec.call("create_table", acid_table(db, "whole"))
    rec.call("create_table", table(db, "plain", cols("id bigint")))
    opened = c.open_txns(T.OpenTxnRequest(7, "alice", "host"))
    a, b, d, e, f, g, h = opened.txn_ids
    names = {a: "a", b: "b", d: "d", e: "e", f: "f", g: "g", h: "h"}

    def write(txn, dbname, tbl=None, part=None, op=O.INSERT, dynamic=None):
        level = (T.LockLevel.DB if tbl is None else T.LockLevel.TABLE if part is None
                 else T.LockLevel.PARTITION)
        comp = T.LockComponent(L.SHARED_WRITE, level, dbname, tbl, part, operationType=op,
                               isAcid=True, isDynamicPartitionWrite=dynamic)
        rec.call("lock", T.LockRequest([comp], txn, "alice", "host"),
                 transform=lambda r: r.state, label=f"lock for {names[txn]}")

    def probe(label):
        """heartbeat each: open (ok), committed with components, or unknown."""
        seen = []
        for txn in (a, b, d, e, f, g, h):
            try:
                c.heartbeat(T.HeartbeatRequest(None, txn))
                seen.append((names[txn], "ok"))
            except (T.NoSuchTxnException, T.TxnAbortedException) as exc:
                seen.append((names[txn], type(exc).__name__,
                             exc.message.replace(str(txn), "<id>")))
        rec.note(label, seen)

    # a: a dynamic-partition write of ds=1 and ds=2; b: a write of table whole; d: of the
    # database; e: of the database by another spelling; f: of plain; g: ds=1 by lock, still
    # open; h: nothing (a read)
    write(a, db, "acid", dynamic=True)
    rec.call("add_dynamic_partitions", T.AddDynamicPartitions(a, db, "acid", ["ds=1", "ds=2"],
                                                              O.INSERT))
    write(b, db, "whole", op=O.UPDATE)
    write(d, db)
    write(e, db.upper(), "whole")
    write(f, db, "plain")
    write(g, db, "acid", "ds=1")
    write(h, db, "whole", op=O.SELECT)
    for txn in (a, b, d, e, f, h):
        rec.call("commit_txn", T.CommitTxnRequest(txn), label=f"commit {names[txn]}")
    probe("heartbeat each after the commits")
    rec.call("drop_partition", db, "acid", ["1"], False)
    probe("heartbeat each after dropping ds=1")
    rec.call("commit_txn", T.CommitTxnRequest(g), label="commit g")
    rec.call("abort_txn", T.AbortTxnRequest(g), msg=len("No such transaction txnid:"),
             label="abort g after its commit")
    rec.call("drop_partitions_req", T.DropPartitionsRequest(
        db, "acid", T.RequestPartsSpec(names=["ds=2"])), transform=lambda r: len(r.partitions))
    probe("heartbeat each after dropping ds=2")
    rec.call("drop_table", db, "plain", False)
    rec.call("drop_table", db, "whole", False)
    probe("heartbeat each after dropping the tables")
    rec.call("drop_database", db, True, True)
    probe("heartbeat each after dropping the database")


@scenario
def compaction_cleaned_by_exchange(c, rec):
    """exchange_partition fires a drop event for the source partitions: a transactional
    source table's queued entries for them go."""
    db = "cfcq_exch"
    ids = Ids(db)
    rec.call("create_database", database(db))
    src = acid_table(db, "src", cols("ds string"))
    dst = acid_table(db, "dst", cols("ds string"))
    rec.call("create_table", src)
    rec.call("create_table", dst)
    for values in (["1"], ["2"]):
        rec.call("add_partition", partition(src, values))
    for args in ((db, "src", "ds=1"), (db, "src", "ds=2"), (db, "dst", "ds=1"), (db, "src")):
        rec.call("compact2", request(*args), transform=ids.response)
    rec.call("exchange_partition", {"ds": "1"}, db, "src", db, "dst")
    rec.call("show_compact", T.ShowCompactRequest(), transform=ids.rows,
             label="after exchange_partition")
    rec.call("drop_table", db, "src", True)
    rec.call("drop_table", db, "dst", True)
    rec.call("drop_database", db, True, True)
    rec.call("show_compact", T.ShowCompactRequest(), transform=ids.rows, label="after the drops")
