"""Indexes (HMS 2.3; removed in Hive 3): add with its index table, get, list, alter, drop."""

from __future__ import annotations

import os

from tests.hms.conformance.builders import cols, database, sd, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

DB = "cfidx_db"
HANDLER = "org.apache.hadoop.hive.ql.index.compact.CompactIndexHandler"


def index_table_name(tbl, name, db=DB):
    return f"{db}__{tbl}_{name}__"


def index(name, tbl, columns=("id int",), db=DB, index_table=None, params=None,
          deferred=True):
    return T.Index(indexName=name, indexHandlerClass=HANDLER, dbName=db, origTableName=tbl,
                   createTime=0, lastAccessTime=0,
                   indexTableName=index_table or index_table_name(tbl, name, db),
                   sd=sd(cols(*columns)), parameters=dict(params or {}),
                   deferredRebuild=deferred)


def index_table(name, tbl, columns=("id int",), db=DB):
    return table(db, index_table_name(tbl, name, db),
                 cols(*columns, "_bucketname string", "_offsets array<bigint>"),
                 table_type="INDEX_TABLE")


def names(items):
    return sorted(i.indexName for i in items)


@scenario
def indexes_life_cycle(c, rec):
    rec.call("create_database", database(DB))
    rec.call("create_table", table(DB, "base", cols("id int", "name string", "v double")))
    rec.call("get_index_names", DB, "base", -1, label="get_index_names none yet")
    rec.call("get_indexes", DB, "base", -1, label="get_indexes none yet")
    rec.call("add_index", index("idx1", "base"), index_table("idx1", "base"))
    rec.call("get_index_by_name", DB, "base", "idx1")
    rec.call("get_index_by_name", DB.upper(), "BASE", "IDX1", label="get_index_by_name upper case")
    rec.call("get_table", DB, index_table_name("base", "idx1"), label="the index table")
    rec.note("index table directory created",
             os.path.isdir(f"{rec.proc.warehouse}/{DB}.db/{index_table_name('base', 'idx1')}"))
    rec.call("get_all_tables", DB, unordered=True)
    rec.call("get_tables_by_type", DB, "*", "INDEX_TABLE", unordered=True)
    rec.call("get_table_meta", DB, "*", ["INDEX_TABLE"], unordered=True)
    rec.call("add_index", index("idx2", "base", ("name string",), params={"k": "v"}),
             index_table("idx2", "base", ("name string",)), label="add_index second")
    rec.call("add_index", index("Idx3", "base", deferred=False), index_table("Idx3", "base"),
             label="add_index mixed-case name")
    rec.call("get_index_names", DB, "base", -1)
    rec.call("get_index_names", DB, "base", 1, label="get_index_names max 1")
    rec.call("get_index_names", DB, "base", 0, label="get_index_names max 0")
    rec.call("get_index_names", DB.upper(), "Base", -1, label="get_index_names upper case")
    rec.call("get_indexes", DB, "base", -1, transform=names)
    rec.call("get_indexes", DB, "base", 1, transform=names, label="get_indexes max 1")
    rec.call("get_indexes", DB, "base", -1, transform=lambda xs: sorted(
        (x.indexName, x.deferredRebuild, x.indexTableName, sorted(x.parameters)) for x in xs),
        label="get_indexes fields")
    rec.call("get_index_by_name", DB, "base", "idx3", label="get_index_by_name mixed-case index")
    # failures
    rec.call("add_index", index("idx1", "base"), index_table("idx1b", "base"),
             label="add_index duplicate", msg=22)
    rec.call("add_index", index("idx9", "nosuch"), index_table("idx9", "nosuch"),
             label="add_index missing table", msg=True)
    rec.call("add_index", index("idx9", "base", db="cfidx_nodb"), None,
             label="add_index missing database", msg=True)
    rec.call("add_index", index("idx9", "base", index_table=index_table_name("base", "idx1")),
             index_table("idx1", "base"), label="add_index index table exists", msg=True)
    rec.call("add_index", index("idx8", "base"), None, label="add_index without index table")
    rec.call("get_index_by_name", DB, "base", "idx8", label="after add_index without table",
             msg=True)
    nosd = index("idx7", "base")
    nosd.sd = None
    rec.call("add_index", nosd, index_table("idx7", "base"), label="add_index without sd")
    rec.call("get_index_by_name", DB, "base", "idx7", label="after add_index without sd",
             msg=True)
    rec.call("get_table", DB, index_table_name("base", "idx7"), label="index table after no sd",
             msg=True)
    rec.call("add_index", index(None, "base"), index_table("idxnull", "base"),
             label="add_index null name", msg=True)
    rec.call("add_index", None, None, label="add_index null", msg=True)
    long_name = "l" * 130
    rec.call("add_index", index(long_name, "base", index_table=index_table_name("base", "long")),
             index_table("long", "base"), label="add_index 130-character name", msg=True)
    rec.call("get_index_names", DB, "base", -1, label="names after a long name")
    bad = index_table("idx6", "base")
    bad.tableName = "bad name"
    rec.call("add_index", index("idx6", "base", index_table="bad name"), bad,
             label="add_index invalid index table", msg=True)
    rec.call("get_index_by_name", DB, "base", "idx6", label="after invalid index table", msg=True)
    rec.call("get_index_by_name", DB, "base", "nosuch", label="get_index_by_name missing", msg=True)
    rec.call("get_index_by_name", DB, "nosuch", "idx1", label="get_index_by_name missing table",
             msg=True)
    rec.call("get_index_by_name", DB.upper(), "Base", "NoSuch",
             label="get_index_by_name missing, upper case", msg=True)
    rec.call("drop_index_by_name", DB.upper(), "Base", "NoSuch", True,
             label="drop_index_by_name missing, upper case", msg=True)
    rec.call("get_index_by_name", None, "base", "idx1", label="get_index_by_name null db",
             msg=True)
    rec.call("get_index_by_name", DB, "base", None, label="get_index_by_name null name",
             msg=True)
    rec.call("get_index_by_name", DB, "nosuch", None,
             label="get_index_by_name null name, missing table", msg=True)
    rec.call("drop_index_by_name", DB, "base", None, True, label="drop_index_by_name null name",
             msg=True)
    rec.call("get_index_names", DB, "nosuch", -1, label="get_index_names missing table")
    rec.call("get_indexes", DB, "nosuch", -1, label="get_indexes missing table")
    rec.call("get_indexes", "cfidx_nodb", "base", -1, label="get_indexes missing database")
    rec.call("get_index_names", None, "base", -1, label="get_index_names null db", msg=True)
    # alter
    changed = index("idx2", "base", ("name string",), params={"k": "changed", "n": "1"})
    rec.call("alter_index", DB, "base", "idx2", changed)
    rec.call("get_index_by_name", DB, "base", "idx2", label="after alter_index")
    other = index("idx_other_name", "base", ("v double",), params={"x": "y"})
    other.indexHandlerClass = "other.Handler"
    rec.call("alter_index", DB, "base", "idx2", other, label="alter_index other fields")
    rec.call("get_index_by_name", DB, "base", "idx2", label="after alter_index other fields")
    rec.call("alter_index", DB, "base", "nosuch", changed, label="alter_index missing", msg=True)
    rec.call("alter_index", DB, "base", "idx2", None, label="alter_index null", msg=True)
    nosd = index("idx2", "base")
    nosd.sd = None
    rec.call("alter_index", DB, "base", "idx2", nosd, label="alter_index without sd", msg=True)
    gone = index("idx2", "base", index_table="nosuch_table")
    rec.call("alter_index", DB, "base", "idx2", gone, label="alter_index missing index table",
             msg=True)
    # drops
    rec.call("drop_table", DB, index_table_name("base", "idx1"), True,
             label="drop_table of an index table", msg=True)
    rec.call("drop_index_by_name", DB, "base", "idx1", True, label="drop_index deleteData")
    rec.note("index table directory after drop with data",
             os.path.isdir(f"{rec.proc.warehouse}/{DB}.db/{index_table_name('base', 'idx1')}"))
    rec.call("get_table", DB, index_table_name("base", "idx1"), label="index table after drop",
             msg=True)
    rec.call("drop_index_by_name", DB, "base", "idx2", False, label="drop_index keep data")
    rec.note("index table directory after drop without data",
             os.path.isdir(f"{rec.proc.warehouse}/{DB}.db/{index_table_name('base', 'idx2')}"))
    rec.call("drop_index_by_name", DB, "base", "idx2", False, label="drop_index again", msg=True)
    rec.call("drop_index_by_name", DB, "nosuch", "idx2", False, label="drop_index missing table",
             msg=True)
    rec.call("drop_index_by_name", DB, "BASE", "IDX3", False, label="drop_index upper case")
    rec.call("get_index_names", DB, "base", -1, label="names after drops")
    rec.call("get_all_tables", DB, unordered=True, label="tables after index drops")
    # a rename of the base table carries its indexes; dropping it drops them
    rec.call("add_index", index("idx4", "base"), index_table("idx4", "base"))
    base = c.get_table(DB, "base")
    base.tableName = "base2"
    rec.call("alter_table", DB, "base", base, label="rename base table")
    rec.call("get_index_names", DB, "base2", -1, label="names after rename")
    rec.call("get_index_by_name", DB, "base2", "idx4", label="index after rename")
    rec.call("get_index_names", DB, "base", -1, label="old name after rename")
    itab = c.get_table(DB, index_table_name("base", "idx4"))
    itab.tableName = "cfidx_renamed_idx4"
    rec.call("alter_table", DB, index_table_name("base", "idx4"), itab,
             label="rename the index table")
    rec.call("get_index_by_name", DB, "base2", "idx4", transform=lambda i: i.indexTableName,
             label="index table name after its rename")
    rec.call("drop_table", DB, "base2", True, label="drop base table")
    rec.call("get_all_tables", DB, unordered=True, label="tables after base dropped")
    rec.note("index table directory after base dropped",
             os.path.isdir(f"{rec.proc.warehouse}/{DB}.db/{index_table_name('base', 'idx4')}"))
    rec.call("get_index_names", DB, "base2", -1, label="names after base dropped")
    # the index table left by the null-name add cannot be dropped as such: make it a table
    left = c.get_table(DB, index_table_name("base", "idxnull"))
    left.tableType = "MANAGED_TABLE"
    rec.call("alter_table", DB, left.tableName, left, label="index table made a plain table")
    rec.call("drop_table", DB, left.tableName, True, label="drop the left-over index table")
    rec.call("drop_database", DB, True, True)
