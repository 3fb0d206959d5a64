"""Compaction requests: compact, compact2 and show_compact.

The queue is global and never emptied on the oracle (no compactor runs): the scenarios use
database names starting with "cfcq", listings are filtered to them, and ids are recorded
relative to the scenario's first one. A request missing a required field makes the stock HMS
lose its place in the connection's byte stream (the next call on it fails), so each such
request is the last call of a scenario of its own.
"""

from __future__ import annotations

import copy

from tests.conformance.builders import cols, database, partition, table
from tests.conformance.harness import scenario
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
    # not cfcq_db: HMS drops its entries with the database in compaction_queue, we keep them
    ids = Ids("cfcq_bad", "cfcq_a", "cfcq_ddd")
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


# --- requests missing a required field: each the last call on its connection ----------------
@scenario
def compaction_without_dbname(c, rec):
    rec.call("compact2", request(None, "t", "p=1", MINOR), msg=True)


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
