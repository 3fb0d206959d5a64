"""Partition calls: add (single/bulk/req), lookups, listings, filters, alter, rename, drop, names.

Partition listings are compared in the order HMS returns them (by partition name).
"""

from __future__ import annotations

import os

from tests.hms.conformance.builders import cols, database, partition, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

DUP = len("Partition already exists:")  # then a Java toString() of the request
PARSE = len("Error parsing partition filter")  # then ANTLR internals


def names_of(parts):
    return [p.values for p in parts] if parts is not None else None


def values_and_location(p):
    return (p.values, p.sd.location)


@scenario
def partitions_add_get(c, rec):
    rec.call("create_database", database("cfp_db"))
    t = table("cfp_db", "pt", cols("a string"), partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["2024-01-01", "1"], parameters={"k": "v"}))
    rec.note("partition dir created", os.path.isdir(f"{rec.proc.warehouse}/cfp_db.db/pt/ds=2024-01-01/hr=1"))
    rec.call("add_partition", partition(t, ["2024-01-01", "1"]), label="add_partition duplicate", msg=DUP)
    rec.call("add_partition", partition(t, ["2024-01-01"]), label="add_partition too few values", msg=True)
    rec.call("add_partition", partition(t, ["2024-01-01", "1", "x"]), label="add_partition too many values", msg=True)
    rec.call("add_partition", partition(t, ["2024-01-01", "notanint"]), label="add_partition non-int value for int key")
    no_sd = partition(t, ["2024-01-09", "9"])
    no_sd.sd = None
    rec.call("add_partition", no_sd, label="add_partition without sd (HMS: NPE)")
    rec.call("add_partition", partition(t, ["2024-01-01", "2"], location=rec.scratch("custom")),
             label="add_partition custom location")
    rec.call("add_partition_with_environment_context", partition(t, ["2024-01-01", "3"]),
             T.EnvironmentContext({"k": "v"}))
    rec.call("add_partitions", [partition(t, ["2024-01-02", "1"]), partition(t, ["2024-01-02", "2"])])
    rec.call("add_partitions", [], label="add_partitions empty list")
    rec.call("add_partitions", [partition(t, ["2024-01-03", "1"]), partition(t, ["2024-01-01", "1"])],
             label="add_partitions with one duplicate", msg=DUP)
    rec.call("get_partition_names", "cfp_db", "pt", -1, label="names after failed bulk add")
    rec.call("add_partitions", [partition(t, ["2024-01-04", "1"]), partition(t, ["2024-01-04", "1"])],
             label="add_partitions duplicate within request", msg=48)
    req = T.AddPartitionsRequest("cfp_db", "pt", [partition(t, ["2024-01-01", "1"]),
                                                  partition(t, ["2024-01-05", "1"])], True, True)
    rec.call("add_partitions_req", req, label="add_partitions_req ifNotExists needResult")
    req = T.AddPartitionsRequest("cfp_db", "pt", [partition(t, ["2024-01-06", "1"])], True, False)
    rec.call("add_partitions_req", req, label="add_partitions_req needResult=False")
    req = T.AddPartitionsRequest("cfp_db", "pt", [partition(t, ["2024-01-01", "1"])], False, True)
    rec.call("add_partitions_req", req, label="add_partitions_req duplicate, ifNotExists=False", msg=DUP)
    other = partition(t, ["2024-01-07", "1"])
    other.tableName = "other"
    req = T.AddPartitionsRequest("cfp_db", "pt", [other], False, True)
    rec.call("add_partitions_req", req, label="add_partitions_req partition of another table", msg=49)
    rec.call("get_partition", "cfp_db", "pt", ["2024-01-01", "1"])
    rec.call("get_partition", "cfp_db", "pt", ["2024-01-01", "2"])
    rec.call("get_partition", "cfp_db", "pt", ["2099-01-01", "1"], msg=True)
    rec.call("get_partition", "cfp_db", "pt", ["2024-01-01"], label="get_partition too few values", msg=True)
    rec.call("get_partition_by_name", "cfp_db", "pt", "ds=2024-01-01/hr=1")
    rec.call("get_partition_by_name", "cfp_db", "pt", "ds=2099-01-01/hr=1", msg=True)
    rec.call("get_partition_by_name", "cfp_db", "pt", "hr=1/ds=2024-01-01", msg=True)
    rec.call("get_partition_by_name", "cfp_db", "pt", "garbage", msg=True)
    rec.call("get_partitions", "cfp_db", "pt", -1)
    rec.call("get_partitions", "cfp_db", "pt", 2, transform=names_of)
    rec.call("get_partitions", "cfp_db", "pt", 0, transform=names_of)
    rec.call("get_partition_names", "cfp_db", "pt", -1)
    rec.call("get_partition_names", "cfp_db", "pt", 3)
    # HMS's get_partitions_ps(_names) run a JDOQL query without ordering: order unspecified.
    rec.call("get_partitions_ps", "cfp_db", "pt", ["2024-01-01"], -1, transform=names_of, unordered=True)
    rec.call("get_partitions_ps", "cfp_db", "pt", ["2024-01-02", "1"], -1, transform=names_of)
    rec.call("get_partitions_ps", "cfp_db", "pt", ["", "1"], -1, transform=names_of, unordered=True)
    rec.call("get_partitions_ps", "cfp_db", "pt", ["2024-01-01"], 1, transform=len,
             label="get_partitions_ps max_parts=1 (count only: which one is unspecified)")
    rec.call("get_partitions_ps", "cfp_db", "pt", ["a", "b", "c"], -1, msg=True)
    rec.call("get_partition_names_ps", "cfp_db", "pt", ["2024-01-01"], -1, unordered=True)
    rec.call("get_partition_names_ps", "cfp_db", "pt", ["", "2"], -1, unordered=True)
    rec.call("get_partition_names_ps", "cfp_db", "pt", [], -1)
    rec.call("get_partitions_by_names", "cfp_db", "pt",
             ["ds=2024-01-02/hr=2", "ds=2024-01-01/hr=1", "ds=2099-01-01/hr=1"], transform=names_of)
    rec.call("get_partitions_by_names", "cfp_db", "pt", [])
    rec.call("append_partition", "cfp_db", "pt", ["2024-02-01", "1"])
    rec.call("append_partition", "cfp_db", "pt", ["2024-02-01", "1"], label="append_partition duplicate",
             msg=DUP)
    rec.call("append_partition_by_name", "cfp_db", "pt", "ds=2024-02-02/hr=5")
    rec.call("get_partition_names", "cfp_db", "pt", -1, label="names at end")


@scenario
def partitions_special_values(c, rec):
    rec.call("create_database", database("cfv_db"))
    t = table("cfv_db", "sv", cols("a string"), partition_keys=cols("k string", "n string"))
    rec.call("create_table", t)
    values = ["a/b", "x=y", "50%", "café", "with space", "colon:hash#", "quote'\"", "UPPER"]
    for v in values:
        rec.call("add_partition", partition(t, [v, "1"]), label=f"add_partition {v!r}",
                 transform=values_and_location)
    rec.call("get_partition_names", "cfv_db", "sv", -1)
    rec.call("get_partitions", "cfv_db", "sv", -1, transform=lambda ps: [values_and_location(p) for p in ps])
    rec.call("get_partition", "cfv_db", "sv", ["a/b", "1"], transform=lambda p: p.values)
    rec.call("get_partition_by_name", "cfv_db", "sv", "k=a%2Fb/n=1", transform=lambda p: p.values)
    rec.call("get_partition_by_name", "cfv_db", "sv", "k=x%3Dy/n=1", transform=lambda p: p.values)
    rec.call("get_partition_by_name", "cfv_db", "sv", "k=caf\u00e9/n=1", transform=lambda p: p.values)
    rec.call("get_partition_by_name", "cfv_db", "sv", "k=with space/n=1", transform=lambda p: p.values)
    rec.call("get_partitions_by_names", "cfv_db", "sv", ["k=50%25/n=1", "k=UPPER/n=1"], transform=names_of)
    rec.call("get_partitions_ps", "cfv_db", "sv", ["a/b"], -1, transform=names_of, unordered=True)
    rec.call("get_partitions_by_filter", "cfv_db", "sv", 'k = "a/b"', -1, transform=names_of)
    rec.call("get_partitions_by_filter", "cfv_db", "sv", 'k = "café"', -1, transform=names_of)
    rec.call("add_partition", partition(t, ["", "1"]), label="add_partition empty value",
             transform=values_and_location, msg=True)
    rec.call("get_partition_names", "cfv_db", "sv", -1, label="names with an empty value")
    rec.call("get_partition", "cfv_db", "sv", ["", "1"], transform=values_and_location)
    rec.call("get_partitions_by_filter", "cfv_db", "sv", 'k = ""', -1, transform=names_of)
    rec.call("partition_name_has_valid_characters", ["a/b", "1"], True)
    rec.call("partition_name_has_valid_characters", ["ok", "1"], False)
    for name in ["ds=2024-01-01/hr=1", "k=a%2Fb/n=x%3Dy", "k=caf%C3%A9", "a=1/a=2", "k=", "=v",
                 "novalue", "", "k=v/", "/k=v", "K=V", "k=a=b", "k=with space/n=%"]:
        rec.call("partition_name_to_vals", name, label=f"partition_name_to_vals({name!r})", msg=True)
        rec.call("partition_name_to_spec", name, label=f"partition_name_to_spec({name!r})", msg=True)


@scenario
def partitions_filter(c, rec):
    rec.call("create_database", database("cff_db"))
    t = table("cff_db", "ft", cols("a string", "b int"),
              partition_keys=cols("region string", "year int", "ds string"))
    rec.call("create_table", t)
    grid = [["us", "2020", "2020-01-01"], ["us", "2021", "2021-06-01"], ["eu", "2021", "2021-01-01"],
            ["eu", "2022", "2022-03-01"], ["asia", "2019", "2019-12-31"], ["us", "9", "0009-01-01"],
            ["u_s", "2021", "2021-07-01"]]
    rec.call("add_partitions", [partition(t, v) for v in grid])
    filters = [
        'region = "us"', "region = 'us'", 'region <> "us"', 'region != "us"',
        "year = 2021", "year > 2020", "year >= 2021", "year < 2021", "year <= 2020",
        'year > "2020"', "year = '2021'", 'region > "eu"', 'ds >= "2021-01-01"', 'ds < "2021"',
        'region LIKE "u.*"', 'region LIKE "u%"', 'region LIKE "u_s"', 'region like "e.*"',
        'region = "us" AND year = 2021', 'region = "eu" OR year = 2019',
        '(region = "us" OR region = "eu") AND year > 2020', 'region = "us" and (year = 2020 or year = 9)',
        "year > 10", "year < 100", 'region = "US"', "",
        "2021 = year", '"us" = region', "year = 2021.0", "year = -1", 'region = "nope"',
        "year BETWEEN 2020 AND 2021", 'region BETWEEN "eu" AND "us"', "year BETWEEN 1 AND 3",
    ]
    for f in filters:
        rec.call("get_partitions_by_filter", "cff_db", "ft", f, -1, transform=names_of,
                 label=f"get_partitions_by_filter({f!r})")
        rec.call("get_num_partitions_by_filter", "cff_db", "ft", f, label=f"get_num_partitions_by_filter({f!r})")
    rec.call("get_partitions_by_filter", "cff_db", "ft", 'region = "us"', 1, transform=names_of,
             label="get_partitions_by_filter max_parts=1")
    for bad in ['region ==', 'region = us', 'a = "x"', 'nocol = 1', 'region = "us" AND', '(year = 1',
                "region IN ('us')", 'region = "us" ; drop', 'NOT region = "us"']:
        rec.call("get_partitions_by_filter", "cff_db", "ft", bad, -1, transform=names_of,
                 label=f"get_partitions_by_filter invalid {bad!r}", msg=PARSE)
        rec.call("get_num_partitions_by_filter", "cff_db", "ft", bad,
                 label=f"get_num_partitions_by_filter invalid {bad!r}", msg=PARSE)
    rec.call("get_partitions_by_filter", "cff_db", "missing", 'region = "us"', -1, msg=True)


@scenario
def partitions_alter_rename(c, rec):
    rec.call("create_database", database("cfr_db"))
    t = table("cfr_db", "pt", cols("a string"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("add_partitions", [partition(t, [v]) for v in ["a", "b", "c", "d"]])
    p = rec.call("get_partition", "cfr_db", "pt", ["a"])
    p.parameters["note"] = "altered"
    p.sd.location = "file:" + rec.scratch("moved_a")
    rec.call("alter_partition", "cfr_db", "pt", p)
    rec.call("get_partition", "cfr_db", "pt", ["a"])
    missing = partition(t, ["zzz"])
    rec.call("alter_partition", "cfr_db", "pt", missing, label="alter_partition missing", msg=True)
    ps = rec.call("get_partitions_by_names", "cfr_db", "pt", ["ds=b", "ds=c"])
    for q in ps:
        q.parameters["bulk"] = "yes"
    rec.call("alter_partitions", "cfr_db", "pt", ps)
    rec.call("get_partitions", "cfr_db", "pt", -1, transform=lambda ps: [(x.values, x.parameters) for x in ps])
    rec.call("alter_partitions", "cfr_db", "pt", [missing], label="alter_partitions missing", msg=True)
    env = T.EnvironmentContext({"k": "v"})
    d = rec.call("get_partition", "cfr_db", "pt", ["d"])
    d.parameters["env"] = "1"
    rec.call("alter_partition_with_environment_context", "cfr_db", "pt", d, env)
    rec.call("alter_partitions_with_environment_context", "cfr_db", "pt", [d], env)
    b = rec.call("get_partition", "cfr_db", "pt", ["b"])
    b.values = ["b2"]
    rec.call("rename_partition", "cfr_db", "pt", ["b"], b)
    rec.call("get_partition", "cfr_db", "pt", ["b2"])
    rec.call("get_partition", "cfr_db", "pt", ["b"], msg=True)
    rec.note("renamed partition dir", os.path.isdir(f"{rec.proc.warehouse}/cfr_db.db/pt/ds=b2"))
    c2 = rec.call("get_partition", "cfr_db", "pt", ["c"])
    c2.values = ["d"]
    rec.call("rename_partition", "cfr_db", "pt", ["c"], c2, label="rename_partition onto existing", msg=True)
    c3 = rec.call("get_partition", "cfr_db", "pt", ["c"])
    c3.values = ["c2"]
    rec.call("rename_partition", "cfr_db", "pt", ["nope"], c3, label="rename_partition missing", msg=True)
    rec.call("get_partition_names", "cfr_db", "pt", -1)
    rec.call("get_partition", "cfr_db", "pt", ["d"], transform=lambda p: p.parameters,
             label="parameters after alter with environment context")


@scenario
def partitions_rename_statistics(c, rec):
    """What a rename does to a partition's statistics: HMS 2.3 drops its column statistics
    (no longer valid) and recounts the quick statistics of a managed table's partition at its
    new place before moving the files there (so they read as none); an external table's
    partition keeps its place and its parameters."""
    rec.call("create_database", database("cfs_db"))
    for kind in ("MANAGED_TABLE", "EXTERNAL_TABLE"):
        name = kind[:3].lower()
        loc = rec.scratch(name) if kind == "EXTERNAL_TABLE" else None
        t = table("cfs_db", name, cols("id bigint"), partition_keys=cols("ds string"),
                  table_type=kind, location=loc)
        rec.call("create_table", t)
        part = rec.call("add_partition", partition(t, ["a"]))
        with open(part.sd.location.removeprefix("file:") + "/f.txt", "w") as f:
            f.write("1\n")
        stats = T.ColumnStatistics(
            T.ColumnStatisticsDesc(False, "cfs_db", name, "ds=a"),
            [T.ColumnStatisticsObj("id", "bigint", T.ColumnStatisticsData(
                longStats=T.LongColumnStatsData(1, 5, 0, 3)))])
        rec.call("update_partition_column_statistics", stats)
        renamed = rec.call("get_partition", "cfs_db", name, ["a"])
        renamed.values, renamed.parameters = ["z"], {}
        rec.call("rename_partition", "cfs_db", name, ["a"], renamed, label=f"{name}: rename")
        rec.call("get_partition", "cfs_db", name, ["z"], label=f"{name}: renamed parameters",
                 transform=lambda p: {k: v for k, v in p.parameters.items()
                                      if k != "transient_lastDdlTime"})
        rec.call("get_partitions_statistics_req",
                 T.PartitionsStatsRequest("cfs_db", name, ["id"], ["ds=a", "ds=z"]),
                 label=f"{name}: column statistics after the rename")
        altered = rec.call("get_partition", "cfs_db", name, ["z"])
        altered.parameters.update(numFiles="7", totalSize="0")  # not what the old one had
        rec.call("alter_partitions", "cfs_db", name, [altered],
                 label=f"{name}: altered with other quick statistics")
        rec.call("get_partition", "cfs_db", name, ["z"], label=f"{name}: recounted",
                 transform=lambda p: {k: v for k, v in p.parameters.items()
                                      if k != "transient_lastDdlTime"})


@scenario
def tables_rename_locations(c, rec):
    """A managed table made at a location of its own stays there when renamed (HMS: "treated
    like an external table"); one at its default place moves; a rename sending no location
    fails as HMS's comparison of the two does."""
    rec.call("create_database", database("cfn_db"))
    own = rec.scratch("own_place")
    rec.call("create_table", table("cfn_db", "placed", cols("a string"), location=own))
    t = rec.call("get_table", "cfn_db", "placed")
    t.tableName = "placed2"
    rec.call("alter_table", "cfn_db", "placed", t)
    rec.call("get_table", "cfn_db", "placed2", transform=lambda t: t.sd.location == "file:" + own,
             label="still at its own location")
    rec.note("its directory kept", os.path.isdir(own))
    rec.call("create_table", table("cfn_db", "homed", cols("a string")))
    t = rec.call("get_table", "cfn_db", "homed")
    t.tableName = "homed2"
    rec.call("alter_table", "cfn_db", "homed", t)
    rec.note("moved to its new name", os.path.isdir(f"{rec.proc.warehouse}/cfn_db.db/homed2"))
    t = rec.call("get_table", "cfn_db", "homed2")
    t.tableName, t.sd.location = "homed3", None
    rec.call("alter_table", "cfn_db", "homed2", t, label="rename without a location", msg=True)
    parted = rec.scratch("own_parted")
    t = table("cfn_db", "parted", cols("a string"), partition_keys=cols("ds string"),
              location=parted)
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["a"]))
    renamed = rec.call("get_partition", "cfn_db", "parted", ["a"])
    renamed.values = ["b"]
    rec.call("rename_partition", "cfn_db", "parted", ["a"], renamed)
    rec.call("get_partition", "cfn_db", "parted", ["b"], label="renamed under its table's place",
             transform=lambda p: p.sd.location == f"file:{parted}/ds=b")


@scenario
def partitions_drop(c, rec):
    rec.call("create_database", database("cfq_db"))
    t = table("cfq_db", "pt", cols("a string"), partition_keys=cols("ds string", "hr string"))
    rec.call("create_table", t)
    vals = [["a", "1"], ["a", "2"], ["b", "1"], ["b", "2"], ["c", "1"], ["c", "2"], ["d", "1"]]
    rec.call("add_partitions", [partition(t, v) for v in vals])
    wh = f"{rec.proc.warehouse}/cfq_db.db/pt"
    rec.call("drop_partition", "cfq_db", "pt", ["a", "1"], True)
    rec.note("dir deleted", os.path.isdir(f"{wh}/ds=a/hr=1"))
    rec.call("drop_partition", "cfq_db", "pt", ["a", "1"], True, label="drop_partition again", msg=True)
    rec.call("drop_partition", "cfq_db", "pt", ["a"], True, label="drop_partition partial values", msg=True)
    rec.call("drop_partition", "cfq_db", "pt", ["a", "2"], False)
    rec.note("dir kept", os.path.isdir(f"{wh}/ds=a/hr=2"))
    rec.call("drop_partition_by_name", "cfq_db", "pt", "ds=b/hr=1", True)
    rec.call("drop_partition_by_name", "cfq_db", "pt", "ds=b/hr=1", True, label="drop_partition_by_name again",
             msg=True)
    rec.call("drop_partition_by_name", "cfq_db", "pt", "bogus", True, msg=True)
    rec.call("drop_partition_with_environment_context", "cfq_db", "pt", ["b", "2"], True,
             T.EnvironmentContext({}))
    req = T.DropPartitionsRequest("cfq_db", "pt", T.RequestPartsSpec(names=["ds=c/hr=1", "ds=c/hr=2"]),
                                  True, True, None, None, True)
    rec.call("drop_partitions_req", req, transform=lambda r: names_of(r.partitions),
             label="drop_partitions_req by names needResult")
    req = T.DropPartitionsRequest("cfq_db", "pt", T.RequestPartsSpec(names=["ds=d/hr=1", "ds=zz/hr=1"]),
                                  True, False, None, None, True)
    rec.call("drop_partitions_req", req, label="drop_partitions_req missing, ifExists=False", msg=True)
    rec.call("get_partition_names", "cfq_db", "pt", -1)
    req = T.DropPartitionsRequest("cfq_db", "pt", T.RequestPartsSpec(names=["ds=zz/hr=1"]),
                                  True, True, None, None, False)
    rec.call("drop_partitions_req", req, label="drop_partitions_req missing, ifExists=True, no result")
    req = T.DropPartitionsRequest("cfq_db", "pt", T.RequestPartsSpec(names=["ds=d/hr=1"]),
                                  True, True, None, None, False)
    rec.call("drop_partitions_req", req, label="drop_partitions_req needResult=False")
    req = T.DropPartitionsRequest("cfq_db", "missing", T.RequestPartsSpec(names=["ds=d/hr=1"]),
                                  True, True, None, None, True)
    rec.call("drop_partitions_req", req, label="drop_partitions_req missing table", msg=True)
    rec.call("get_partition_names", "cfq_db", "pt", -1, label="names at end")
