"""Partition calls with environment contexts, partition values, dynamic partitions of a
transaction, notifications, client-fired events and partition marking."""

from __future__ import annotations

from tests.conformance.builders import cols, database, partition, table
from tests.conformance.harness import scenario
from tests.support.client import ttypes as T

DB = "cfev_db"


def values(resp):
    return [r.row for r in resp.partitionValues]


def part_summary(p):
    return (p.dbName, p.tableName, p.values, p.sd.location if p.sd else None,
            sorted((p.parameters or {}).keys()))


@scenario
def partitions_with_environment_context(c, rec):
    env = T.EnvironmentContext({"k": "v"})
    rec.call("create_database", database(DB))
    t = table(DB, "pt", partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    rec.call("append_partition_with_environment_context", DB, "pt", ["2024-01-01", "1"], env,
             transform=part_summary)
    rec.call("append_partition_with_environment_context", DB.upper(), "PT", ["2024-01-01", "2"], None,
             transform=part_summary, label="append_partition_with_environment_context no context")
    rec.call("append_partition_with_environment_context", DB, "pt", ["2024-01-01", "1"], env,
             msg=True, label="append_partition_with_environment_context again")
    rec.call("append_partition_with_environment_context", DB, "pt", ["2024-01-01"], env,
             msg=True, label="append_partition_with_environment_context too few values")
    rec.call("append_partition_with_environment_context", DB, "missing", ["a", "1"], env,
             msg=True, label="append_partition_with_environment_context missing table")
    rec.call("append_partition_with_environment_context", "cfev_nodb", "pt", ["a", "1"], env,
             msg=True, label="append_partition_with_environment_context missing db")
    rec.call("append_partition_by_name_with_environment_context", DB, "pt",
             "ds=2024-01-02/hr=3", env, transform=part_summary)
    rec.call("append_partition_by_name_with_environment_context", DB, "pt",
             "ds=a%2Fb/hr=4", T.EnvironmentContext({}), transform=part_summary,
             label="append_partition_by_name_with_environment_context escaped")
    rec.call("append_partition_by_name_with_environment_context", DB, " Pt",
             "ds=2024-01-03/hr=5", env, transform=part_summary,
             label="append_partition_by_name_with_environment_context other case")
    rec.call("append_partition_by_name_with_environment_context", DB, "pt",
             "ds=2024-01-02/hr=3", env, msg=True,
             label="append_partition_by_name_with_environment_context again")
    rec.call("append_partition_by_name_with_environment_context", DB, "pt", "ds=x", env,
             msg=True, label="append_partition_by_name_with_environment_context incomplete")
    rec.call("append_partition_by_name_with_environment_context", DB, "missing", "ds=x/hr=1",
             env, msg=True, label="append_partition_by_name_with_environment_context missing table")
    rec.call("get_partition_names", DB, "pt", -1)
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "ds=2024-01-02/hr=3",
             True, env)
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "ds=2024-01-02/hr=3",
             True, env, msg=True, label="drop_partition_by_name_with_environment_context again")
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "ds=a%2Fb/hr=4",
             False, None, label="drop_partition_by_name_with_environment_context escaped")
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "hr=1", True, env,
             msg=True, label="drop_partition_by_name_with_environment_context incomplete")
    rec.call("drop_partition_by_name_with_environment_context", DB, "missing", "ds=a/hr=1",
             True, env, msg=True,
             label="drop_partition_by_name_with_environment_context missing table")
    rec.call("get_partition_names", DB, "pt", -1, label="get_partition_names after drops")
    rec.call("drop_database", DB, True, True)


@scenario
def partition_values(c, rec):
    db = "cfpv_db"
    FS, R = T.FieldSchema, T.PartitionValuesRequest
    rec.call("create_database", database(db))
    t = table(db, "p3", partition_keys=cols("ds string", "mid string", "hr int"))
    rec.call("create_table", t)
    # added in name order: without DISTINCT, HMS answers in storage order
    for v in [["a", "m", "1"], ["a", "m", "2"], ["a", "q=r", "1"], ["b", "x/y", "2"],
              ["c", "", "3"]]:
        rec.call("add_partition", partition(t, v), transform=lambda p: p.values)
    rec.call("create_table", table(db, "flat"))
    rec.call("create_table", table(db, "one", partition_keys=cols("ds string")))
    for v in ["b", "a", "b2"]:
        rec.call("add_partition", partition(T.Table(**vars(table(db, "one", partition_keys=cols(
            "ds string")))), [v]), transform=lambda p: p.values)
    cases = [
        ("ds", R(db, "p3", [FS("ds", "string")])),
        ("mid (escaped names)", R(db, "p3", [FS("mid", "string")])),
        ("hr", R(db, "p3", [FS("hr", "int")])),
        ("hr, ds", R(db, "p3", [FS("hr", "int"), FS("ds", "string")])),
        ("ds, ds", R(db, "p3", [FS("ds", "string"), FS("ds", "string")])),
        ("mid, hr", R(db, "p3", [FS("mid", "string"), FS("hr", "int")])),
        ("upper-case key", R(db, "p3", [FS("DS", "string")])),
        ("regex key d.", R(db, "p3", [FS("d.", "string")])),
        ("regex key m.*", R(db, "p3", [FS("m.*", "string")])),
        ("unknown last key", R(db, "p3", [FS("ds", "string"), FS("zz", "string")])),
        ("not distinct", R(db, "p3", [FS("mid", "string")], applyDistinct=False)),
        ("not distinct max 2", R(db, "p3", [FS("mid", "string")], applyDistinct=False, maxParts=2)),
        ("distinct max 2", R(db, "p3", [FS("ds", "string")], maxParts=2)),
        ("max 0", R(db, "p3", [FS("ds", "string")], maxParts=0)),
        ("descending ignored", R(db, "p3", [FS("ds", "string")], ascending=False)),
        ("order ignored", R(db, "p3", [FS("ds", "string"), FS("hr", "int")],
                            partitionOrder=[FS("hr", "int")], ascending=False)),
        ("single key table", R(db, "one", [FS("ds", "string")])),
        ("single key table other name", R(db, "one", [FS("x", "string")])),
        ("filter", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'")),
        ("filter descending", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'",
                                ascending=False)),
        ("filter max 2", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'", maxParts=2)),
        ("filter max 2 descending", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'",
                                      maxParts=2, ascending=False)),
        ("filter max 0", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'", maxParts=0)),
        ("filter on a name", R(db, "p3", [FS("ds", "string")], filter="mid = 'x/y'")),
        ("filter int", R(db, "p3", [FS("ds", "string")], filter="hr > 1")),
        ("filter int max 1", R(db, "p3", [FS("ds", "string")], filter="hr > 1", maxParts=1)),
        ("filter int max 1 descending", R(db, "p3", [FS("ds", "string")], filter="hr > 1",
                                          maxParts=1, ascending=False)),
        ("filter int max 0", R(db, "p3", [FS("ds", "string")], filter="hr > 1", maxParts=0)),
        ("filter int max 65536 (a Java short 0)", R(db, "p3", [FS("ds", "string")],
                                                    filter="hr > 1", maxParts=65536)),
        ("filter int max 65537", R(db, "p3", [FS("ds", "string")], filter="hr > 1",
                                   maxParts=65537)),
        ("filter string max 65537", R(db, "p3", [FS("ds", "string")], filter="ds > 'a'",
                                      maxParts=65537)),
        ("empty filter", R(db, "p3", [FS("ds", "string")], filter="")),
        ("filter missing table", R(db, "nope", [FS("ds", "string")], filter="ds = 'a'")),
        ("bad filter missing db", R("cfpv_nodb", "p3", [FS("ds", "string")], filter="bad =")),
        ("upper-case names", R(db.upper(), "P3", [FS("ds", "string")])),
    ]
    for label, req in cases:
        rec.call("get_partition_values", req, transform=values, label=f"get_partition_values {label}")
    errors = [
        ("unknown key", R(db, "p3", [FS("nope", "string")]), 105),
        ("filter unknown key", R(db, "p3", [FS("ds", "string")], filter="nope = 1"), True),
        ("filter syntax", R(db, "p3", [FS("ds", "string")], filter="ds = "), True),
        ("no keys", R(db, "p3", []), True),
        ("no keys with filter", R(db, "p3", [], filter="ds = 'a'"), True),
        ("unpartitioned", R(db, "flat", [FS("ds", "string")]), True),
        ("unpartitioned filter", R(db, "flat", [FS("ds", "string")], filter="ds = 'a'"), True),
        ("missing table", R(db, "nope", [FS("ds", "string")]), True),
        ("missing db", R("cfpv_nodb", "p3", [FS("ds", "string")]), True),
        ("bad regex key", R(db, "p3", [FS("(", "string")]), 73),
    ]
    for label, req, msg in errors:
        rec.call("get_partition_values", req, transform=values, msg=msg,
                 label=f"get_partition_values {label}")
    rec.call("get_partition_values", None, msg=True, label="get_partition_values null request")
    rec.call("drop_database", db, True, True)
