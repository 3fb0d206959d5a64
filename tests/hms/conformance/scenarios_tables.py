"""Table calls: create (managed/external/view), lookups, listings, schema, alter, drop."""

from __future__ import annotations

import os

from tests.hms.conformance.builders import cols, database, partition, table, view
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T


def table_names(tables):
    """get_table_objects_by_name order is unspecified: compare the set of names and objects."""
    return sorted(tables, key=lambda t: t.tableName)


@scenario
def tables_create_get(c, rec):
    rec.call("create_database", database("cft_db"))
    rec.call("create_table", table("cft_db", "managed", cols("id int", "name string", "Mixed double"),
                                   parameters={"p": "1", "comment": "a table"}))
    rec.call("get_table", "cft_db", "managed")
    rec.call("get_table", "CFT_DB", "MANAGED", label="get_table upper case")
    rec.note("managed dir created", os.path.isdir(f"{rec.proc.warehouse}/cft_db.db/managed"))
    rec.call("create_table", table("cft_db", "managed"), msg=True)
    rec.call("create_table", table("cft_db", "MANAGED"), label="create_table existing, upper case")
    rec.call("create_table", table("cft_missing_db", "t"), msg=True)
    rec.call("create_table", table("cft_db", "bad name"), msg=True)
    rec.call("create_table", table("cft_db", "bad-name"), msg=True)
    rec.call("create_table", table("cft_db", "badtype", cols("id intt")), msg=True)
    bad_col = table("cft_db", "badcol")
    bad_col.sd.cols = [T.FieldSchema("bad col", "int", None)]
    rec.call("create_table", bad_col, label="create_table column name with space", msg=True)
    rec.call("create_table", table("cft_db", "dupcol", cols("a int", "a string")),
             label="create_table duplicate column (Derby constraint message)")
    rec.call("create_table", table("cft_db", "complex", cols(
        "m map<string,array<struct<a:int,b:string>>>", "d decimal(10,2)", "v varchar(20)",
        "ts timestamp", "dt date", "bin binary", "c char(3)", "u uniontype<int,string>")))
    rec.call("get_table", "cft_db", "complex")
    rec.call("create_table", table("cft_db", "MixedCaseName", cols("UpperCol int")))
    rec.call("get_table", "cft_db", "mixedcasename")
    ext = table("cft_db", "ext", table_type="EXTERNAL_TABLE", location=rec.scratch("ext"))
    rec.call("create_table", ext)
    rec.call("get_table", "cft_db", "ext")
    rec.note("external dir created", os.path.isdir(rec.scratch("ext")))
    rec.call("create_table", view("cft_db", "v1", "select id from cft_db.managed", cols("id int")))
    rec.call("get_table", "cft_db", "v1")
    rec.call("create_table", table("cft_db", "nolocation_external", table_type="EXTERNAL_TABLE"))
    rec.call("get_table", "cft_db", "nolocation_external")
    rec.call("create_table", table("cft_db", "ext_flag_only", parameters={"EXTERNAL": "TRUE"}))
    rec.call("get_table", "cft_db", "ext_flag_only")
    t = table("cft_db", "with_env")
    rec.call("create_table_with_environment_context", t, T.EnvironmentContext({"k": "v"}))
    rec.call("get_table", "cft_db", "with_env")


@scenario
def tables_missing(c, rec):
    rec.call("create_database", database("cfm_db"))
    rec.call("get_table", "cfm_db", "nope", msg=True)
    rec.call("get_table", "cfm_nodb", "nope", msg=True)
    rec.call("get_table_req", T.GetTableRequest("cfm_db", "nope"), msg=True)
    rec.call("get_fields", "cfm_db", "nope", msg=True)
    rec.call("get_schema", "cfm_db", "nope", msg=True)
    rec.call("get_tables", "cfm_nodb", "*")
    rec.call("get_all_tables", "cfm_nodb")
    rec.call("get_table_objects_by_name", "cfm_nodb", ["a"], msg=True)
    rec.call("get_table_objects_by_name", "cfm_db", ["a", "b"])
    rec.call("get_table_objects_by_name_req", T.GetTablesRequest("cfm_nodb", ["a"]), msg=True)
    rec.call("drop_table", "cfm_db", "nope", True, msg=True)
    rec.call("drop_table", "cfm_nodb", "nope", True, msg=True)
    rec.call("alter_table", "cfm_db", "nope", table("cfm_db", "nope"), msg=True)
    rec.call("get_partitions", "cfm_db", "nope", -1)
    rec.call("get_partition_names", "cfm_db", "nope", -1)
    rec.call("add_partition", partition(table("cfm_db", "nope", partition_keys=cols("ds string")),
                                        ["x"]), msg=True)


@scenario
def tables_lookup_and_listing(c, rec):
    rec.call("create_database", database("cfl_db"))
    rec.call("create_database", database("cfl_other"))
    rec.call("create_table", table("cfl_db", "t1", parameters={"comment": "first table"}))
    rec.call("create_table", table("cfl_db", "t2"))
    rec.call("create_table", table("cfl_db", "x1", table_type="EXTERNAL_TABLE",
                                   location=rec.scratch("x1")))
    rec.call("create_table", view("cfl_db", "v1", "select 1", cols("c int")))
    rec.call("create_table", table("cfl_other", "t1"))
    rec.call("get_table_req", T.GetTableRequest("cfl_db", "t1"))
    rec.call("get_table_objects_by_name", "cfl_db", ["t1", "x1", "missing", "T2"],
             transform=table_names)
    rec.call("get_table_objects_by_name_req", T.GetTablesRequest("cfl_db", ["t2", "v1"]),
             transform=lambda r: table_names(r.tables))
    rec.call("get_table_objects_by_name", "cfl_db", [])
    for pattern in ["*", "t*", "t1|v*", "T*", "*1", "t?", "t.", "nothing*", ""]:
        rec.call("get_tables", "cfl_db", pattern, unordered=True)
    rec.call("get_all_tables", "cfl_db", unordered=True)
    for kind in ["MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW", "INDEX_TABLE", "bogus"]:
        rec.call("get_tables_by_type", "cfl_db", "*", kind, unordered=True)
    rec.call("get_tables_by_type", "cfl_db", "t*", "MANAGED_TABLE", unordered=True)
    rec.call("get_table_meta", "cfl_*", "*", [], unordered=True)
    rec.call("get_table_meta", "cfl_db", "t*", ["MANAGED_TABLE"], unordered=True)
    rec.call("get_table_meta", "cfl_db|cfl_other", "t1", [], unordered=True)
    rec.call("get_table_meta", "cfl_db", "*", ["VIRTUAL_VIEW", "EXTERNAL_TABLE"], unordered=True)
    rec.call("get_table_meta", "cfl_nodb", "*", [], unordered=True)


@scenario
def tables_schema(c, rec):
    rec.call("create_database", database("cfs_db"))
    t = table("cfs_db", "pt", cols("a string", "b int"), partition_keys=cols("ds string", "hr int"))
    t.sd.cols[0].comment = "column a"
    rec.call("create_table", t)
    rec.call("get_fields", "cfs_db", "pt")
    rec.call("get_schema", "cfs_db", "pt")
    env = T.EnvironmentContext({"x": "y"})
    rec.call("get_fields_with_environment_context", "cfs_db", "pt", env)
    rec.call("get_schema_with_environment_context", "cfs_db", "pt", env)
    rec.call("get_fields", "cfs_db", "PT", label="get_fields upper case")
    rec.call("get_fields", "cfs_db", "pt.a", label="get_fields dotted name", msg=True)
    rec.call("create_table", view("cfs_db", "v", "select a from pt", cols("a string")))
    rec.call("get_schema", "cfs_db", "v")


@scenario
def tables_alter(c, rec):
    rec.call("create_database", database("cfa2_db"))
    rec.call("create_database", database("cfa2_dest"))
    base = table("cfa2_db", "pt", cols("a string"), partition_keys=cols("ds string"))
    rec.call("create_table", base)
    rec.call("add_partitions", [partition(base, ["2024-01-01"]), partition(base, ["2024-01-02"])])
    t = rec.call("get_table", "cfa2_db", "pt")
    t.sd.cols.append(T.FieldSchema("b", "int", "added"))
    t.parameters["new"] = "param"
    rec.call("alter_table", "cfa2_db", "pt", t, label="alter_table add column")
    rec.call("get_table", "cfa2_db", "pt")
    rec.call("get_partition", "cfa2_db", "pt", ["2024-01-01"], label="partition sd after alter_table")
    t2 = rec.call("get_table", "cfa2_db", "pt")
    t2.partitionKeys = cols("ds string", "hr int")
    rec.call("alter_table", "cfa2_db", "pt", t2, label="alter_table change partition keys", msg=True)
    t3 = rec.call("get_table", "cfa2_db", "pt")
    t3.partitionKeys = cols("day string")
    rec.call("alter_table", "cfa2_db", "pt", t3, label="alter_table rename partition key", msg=True)
    t4 = rec.call("get_table", "cfa2_db", "pt")
    t4.sd.cols = cols("a string", "b int", "c intt")
    rec.call("alter_table", "cfa2_db", "pt", t4, label="alter_table invalid column type", msg=True)
    rec.call("create_table", table("cfa2_db", "other"))
    t5 = rec.call("get_table", "cfa2_db", "pt")
    t5.tableName = "other"
    rec.call("alter_table", "cfa2_db", "pt", t5, label="alter_table rename onto existing", msg=True)
    t6 = rec.call("get_table", "cfa2_db", "pt")
    t6.tableName = "bad name"
    rec.call("alter_table", "cfa2_db", "pt", t6, label="alter_table rename invalid", msg=True)
    t7 = rec.call("get_table", "cfa2_db", "pt")
    t7.tableName = "PT_Renamed"
    rec.call("alter_table", "cfa2_db", "pt", t7, label="alter_table rename")
    rec.call("get_table", "cfa2_db", "pt")
    rec.call("get_table", "cfa2_db", "pt_renamed")
    rec.call("get_partitions", "cfa2_db", "pt_renamed", -1)
    rec.call("get_partition_names", "cfa2_db", "pt", -1)
    rec.note("old dir after rename", os.path.isdir(f"{rec.proc.warehouse}/cfa2_db.db/pt"))
    rec.note("new dir after rename", os.path.isdir(f"{rec.proc.warehouse}/cfa2_db.db/pt_renamed"))
    t8 = rec.call("get_table", "cfa2_db", "pt_renamed")
    t8.dbName = "cfa2_dest"
    rec.call("alter_table", "cfa2_db", "pt_renamed", t8, label="alter_table move to other db")
    rec.call("get_table", "cfa2_dest", "pt_renamed")
    rec.call("get_partitions", "cfa2_dest", "pt_renamed", -1)
    t9 = rec.call("get_table", "cfa2_dest", "pt_renamed")
    t9.dbName = "cfa2_nodb"
    rec.call("alter_table", "cfa2_dest", "pt_renamed", t9, label="alter_table move to missing db",
             msg=True)
    ext = table("cfa2_db", "ext", table_type="EXTERNAL_TABLE", location=rec.scratch("ext"))
    rec.call("create_table", ext)
    e = rec.call("get_table", "cfa2_db", "ext")
    e.tableName = "ext2"
    rec.call("alter_table_with_environment_context", "cfa2_db", "ext", e,
             T.EnvironmentContext({"CASCADE": "false"}), label="rename external table")
    rec.call("get_table", "cfa2_db", "ext2")
    o = rec.call("get_table", "cfa2_db", "other")
    o.tableType = "EXTERNAL_TABLE"
    o.parameters["EXTERNAL"] = "TRUE"
    rec.call("alter_table_with_cascade", "cfa2_db", "other", o, True, label="make table external")
    rec.call("get_table", "cfa2_db", "other")


@scenario
def tables_drop(c, rec):
    rec.call("create_database", database("cfdr_db"))
    wh = f"{rec.proc.warehouse}/cfdr_db.db"
    rec.call("create_table", table("cfdr_db", "keep_data"))
    rec.call("create_table", table("cfdr_db", "delete_data"))
    rec.call("create_table", table("cfdr_db", "ext", table_type="EXTERNAL_TABLE",
                                   location=rec.scratch("ext")))
    pt = table("cfdr_db", "pt", partition_keys=cols("ds string"))
    rec.call("create_table", pt)
    rec.call("add_partition", partition(pt, ["a"]))
    rec.call("drop_table", "cfdr_db", "keep_data", False)
    rec.note("dir kept (deleteData=False)", os.path.isdir(f"{wh}/keep_data"))
    rec.call("drop_table", "cfdr_db", "delete_data", True)
    rec.note("dir deleted (deleteData=True)", os.path.isdir(f"{wh}/delete_data"))
    rec.call("drop_table", "cfdr_db", "ext", True)
    rec.note("external dir kept", os.path.isdir(rec.scratch("ext")))
    rec.call("drop_table_with_environment_context", "cfdr_db", "pt", True, T.EnvironmentContext({}))
    rec.call("get_partition", "cfdr_db", "pt", ["a"], msg=True)
    rec.note("partitioned dir deleted", os.path.isdir(f"{wh}/pt"))
    rec.call("get_table", "cfdr_db", "keep_data")
    rec.call("drop_table", "cfdr_db", "keep_data", True, msg=True)
    rec.call("get_all_tables", "cfdr_db")
    rec.call("create_table", table("cfdr_db", "keep_data"), label="recreate over kept dir")
    rec.call("get_table", "cfdr_db", "keep_data")
