"""Partition specs (add_partitions_pspec, get_partitions_pspec, get_part_specs_by_filter) and
partition exchange (exchange_partition, exchange_partitions)."""

from __future__ import annotations

import copy
import os

from tests.hms.conformance.builders import cols, database, partition, sd, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

DB = "cfps_db"
GROUPING = "hive.hcatalog.partition.spec.grouping.enabled"
DUP = len("Partition already exists:")
BELONG = len("Partition does not belong to target table cfps_db.pt:")


def shared_spec(db, tbl, sd_, rel_paths, values, parameters=None, create_time=0):
    parts = [T.PartitionWithoutSD(values=v, createTime=create_time, lastAccessTime=0,
                                  relativePath=r, parameters=copy.deepcopy(parameters))
             for v, r in zip(values, rel_paths)]
    return T.PartitionSpec(dbName=db, tableName=tbl, rootPath=sd_.location if sd_ else None,
                           sharedSDPartitionSpec=T.PartitionSpecWithSharedSD(partitions=parts,
                                                                             sd=sd_))


def list_spec(db, tbl, parts, root=None):
    return T.PartitionSpec(dbName=db, tableName=tbl, rootPath=root,
                           partitionList=T.PartitionListComposingSpec(partitions=parts))


def part_view(p):
    """A partition as the recordings compare it (times normalised by the harness)."""
    return {"values": p.values, "db": p.dbName, "table": p.tableName, "createTime": p.createTime,
            "lastAccessTime": p.lastAccessTime, "location": p.sd.location if p.sd else None,
            "inputFormat": p.sd.inputFormat if p.sd else None,
            "parameters": dict(p.parameters) if p.parameters is not None else None}


def parts_of(result):
    return [part_view(p) for p in result] if result is not None else None


def spec_view(specs):
    """PartitionSpecs in short: names, root, and the partitions of either shape."""
    if specs is None:
        return None
    out = []
    for s in specs:
        view = {"db": s.dbName, "table": s.tableName, "root": s.rootPath, "catName": s.catName}
        if s.partitionList is not None:
            view["list"] = parts_of(s.partitionList.partitions)
        if s.sharedSDPartitionSpec is not None:
            shared = s.sharedSDPartitionSpec
            view["sd"] = shared.sd
            view["shared"] = [{"values": p.values, "createTime": p.createTime,
                               "lastAccessTime": p.lastAccessTime, "relativePath": p.relativePath,
                               "parameters": p.parameters, "privileges": p.privileges}
                              for p in shared.partitions or []]
        out.append(view)
    return out


def _dir(rec, *parts):
    return os.path.isdir(os.path.join(str(rec.proc.warehouse), *parts))


@scenario
def pspec_add(c, rec):
    rec.call("create_database", database(DB))
    t = table(DB, "pt", cols("a string"), partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    loc = c.get_table(DB, "pt").sd.location
    rec.call("add_partitions_pspec", [], label="add_partitions_pspec empty list")

    shared_sd = sd(t.sd.cols, loc)
    spec = shared_spec(DB, "pt", shared_sd, ["/ds=a/hr=1", "/ds=a/hr=2"], [["a", "1"], ["a", "2"]],
                       parameters={"k": "v"})
    rec.call("add_partitions_pspec", [spec], label="add_partitions_pspec shared sd")
    rec.note("shared sd dir made", _dir(rec, f"{DB}.db", "pt", "ds=a", "hr=1"))
    rec.call("get_partitions", DB, "pt", -1, transform=parts_of)

    spec = list_spec(DB, "pt", [partition(t, ["b", "1"], parameters={"x": "y"}),
                                partition(t, ["b", "2"])])
    rec.call("add_partitions_pspec", [spec], label="add_partitions_pspec partition list")
    rec.note("list dir made", _dir(rec, f"{DB}.db", "pt", "ds=b", "hr=2"))

    composite = [shared_spec(DB, "pt", sd(t.sd.cols, loc), ["/ds=c/hr=1"], [["c", "1"]]),
                 list_spec(DB, "pt", [partition(t, ["c", "2"])])]
    rec.call("add_partitions_pspec", composite, label="add_partitions_pspec shared + list")

    # no parameters, a create time, no relative path, an unqualified location
    spec = shared_spec(DB, "pt", sd(t.sd.cols, loc), ["/ds=d/hr=1"], [["d", "1"]],
                       parameters=None, create_time=12345)
    spec.sharedSDPartitionSpec.partitions[0].lastAccessTime = 77
    rec.call("add_partitions_pspec", [spec], label="add_partitions_pspec no parameters, set times")
    spec = shared_spec(DB, "pt", sd(t.sd.cols, rec.scratch("noslash")), [None], [["d", "2"]])
    rec.call("add_partitions_pspec", [spec], label="add_partitions_pspec null relative path")
    spec = shared_spec(DB, "pt", sd(t.sd.cols, "file://" + rec.scratch("triple")), ["/x"],
                       [["d", "3"]], parameters={})
    rec.call("add_partitions_pspec", [spec], label="add_partitions_pspec file:// location")
    rec.call("get_partitions", DB, "pt", -1, transform=parts_of, label="get_partitions after adds")

    # bad input
    rec.call("add_partitions_pspec", [shared_spec(DB, "pt", sd(t.sd.cols, loc), ["/ds=a/hr=1"],
                                                  [["a", "1"]])],
             label="add_partitions_pspec existing partition", msg=DUP)
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [partition(t, ["e", "1"]),
                                                           partition(t, ["e", "1"])])],
             label="add_partitions_pspec duplicate in list", msg=48)
    rec.call("add_partitions_pspec", [shared_spec(DB, "pt", sd(t.sd.cols, loc),
                                                  ["/ds=e/hr=2", "/ds=e/hr=2b"],
                                                  [["e", "2"], ["e", "2"]])],
             label="add_partitions_pspec duplicate in shared sd", msg=48)
    rec.call("get_partition_names", DB, "pt", -1, label="names after duplicates")
    other = partition(t, ["e", "3"])
    other.tableName = "other"
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [partition(t, ["e", "4"]), other])],
             label="add_partitions_pspec partition of another table", msg=BELONG)
    upper = partition(t, ["e", "5"])
    upper.dbName = DB.upper()
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [upper])],
             label="add_partitions_pspec partition db in other case", msg=BELONG)
    rec.call("add_partitions_pspec", [shared_spec(DB.upper(), "PT", sd(t.sd.cols, loc),
                                                  ["/ds=f/hr=1"], [["f", "1"]])],
             label="add_partitions_pspec spec names upper case")
    t2 = table(DB, "pt2", cols("a string"), partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t2)
    mixed = [shared_spec(DB, "pt", sd(t.sd.cols, loc), ["/ds=g/hr=1"], [["g", "1"]]),
             shared_spec(DB, "pt2", sd(t.sd.cols, loc), ["/ds=g/hr=2"], [["g", "2"]])]
    rec.call("add_partitions_pspec", mixed, label="add_partitions_pspec specs of two tables",
             msg=BELONG)
    mixed = [list_spec(DB, "pt", [partition(t, ["g", "3"])]),
             list_spec(DB, "pt2", [partition(t2, ["g", "4"])])]
    rec.call("add_partitions_pspec", mixed, label="add_partitions_pspec list specs of two tables",
             msg=BELONG)
    rec.call("get_partition_names", DB, "pt", -1, label="names after mismatches")
    rec.call("get_partition_names", DB, "pt2", -1, label="names of pt2 after mismatches")
    rec.call("add_partitions_pspec", [list_spec(DB, "missing", [partition(t, ["h", "1"])])],
             label="add_partitions_pspec missing table", msg=True)
    rec.call("add_partitions_pspec", [list_spec("cfps_nodb", "pt", [partition(t, ["h", "1"])])],
             label="add_partitions_pspec missing database", msg=True)
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [partition(t, ["h"])])],
             label="add_partitions_pspec too few values", msg=True)
    no_sd = partition(t, ["h", "2"])
    no_sd.sd = None
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [no_sd])],
             label="add_partitions_pspec partition without sd", msg=True)
    rec.call("add_partitions_pspec", [T.PartitionSpec(dbName=DB, tableName="pt", rootPath=loc)],
             label="add_partitions_pspec spec without partitions")
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", None)],
             label="add_partitions_pspec list spec with null list")
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [])],
             label="add_partitions_pspec list spec with empty list")
    rec.call("add_partitions_pspec", [shared_spec(DB, "pt", None, ["/ds=h/hr=3"], [["h", "3"]])],
             label="add_partitions_pspec shared spec without sd")
    rec.call("add_partitions_pspec", [list_spec(None, "pt", [partition(t, ["h", "4"])])],
             label="add_partitions_pspec null db name")
    no_values = partition(t, ["h", "5"])
    no_values.values = None
    rec.call("add_partitions_pspec", [list_spec(DB, "pt", [no_values])],
             label="add_partitions_pspec partition without values", msg=True)
    rec.call("add_partitions_pspec", [shared_spec(DB, "pt", sd(t.sd.cols, loc), ["/x"], [None])],
             label="add_partitions_pspec shared partition without values", msg=True)
    rec.call("add_partitions_pspec", [shared_spec(DB, "pt", sd(t.sd.cols, loc), ["/x"],
                                                  [["h", "notanint"]])],
             label="add_partitions_pspec non-int value for int key")
    rec.call("get_partition_names", DB, "pt", -1, label="names at the end")
    rec.call("get_partitions_pspec", None, "pt", -1, label="get_partitions_pspec null db",
             msg=True, transform=spec_view)
    rec.call("get_partitions_pspec", DB, None, -1, label="get_partitions_pspec null table",
             msg=True, transform=spec_view)
    rec.call("get_part_specs_by_filter", None, "pt", "", -1,
             label="get_part_specs_by_filter null db", msg=True, transform=spec_view)
    rec.call("get_part_specs_by_filter", DB, None, "", -1,
             label="get_part_specs_by_filter null table", msg=True, transform=spec_view)
    rec.call("drop_database", DB, True, True)


@scenario
def pspec_get(c, rec):
    db = DB + "_get"
    rec.call("create_database", database(db))
    t = table(db, "pt", cols("a string"), partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    rec.call("get_partitions_pspec", db, "pt", -1, label="get_partitions_pspec no partitions",
             transform=spec_view)
    for vals in (["a", "1"], ["a", "2"], ["b", "1"]):
        rec.call("add_partition", partition(t, vals, parameters={"p": vals[0]}))
    rec.call("add_partition", partition(t, ["c", "1"], location=rec.scratch("outside")))
    for max_parts in (-1, 0, 1, 2, 32767, 32768, 65536, 65537, -2):
        rec.call("get_partitions_pspec", db, "pt", max_parts, transform=spec_view)
    rec.call("get_partitions_pspec", db.upper(), "PT", -1, label="get_partitions_pspec upper case",
             transform=spec_view)
    rec.call("get_partitions_pspec", db, "missing", -1, label="get_partitions_pspec missing table",
             msg=True, transform=spec_view)
    rec.call("get_partitions_pspec", "cfps_nodb", "pt", -1,
             label="get_partitions_pspec missing database", msg=True, transform=spec_view)

    rec.call("get_part_specs_by_filter", db, "pt", "ds = \"a\"", -1, transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", "ds = \"a\"", 1, transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", "hr > 1", -1, transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", "", -1, label="get_part_specs_by_filter empty",
             transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", None, -1, label="get_part_specs_by_filter null",
             transform=spec_view)
    rec.call("get_part_specs_by_filter", db.upper(), "PT", "ds = \"b\"", -1,
             label="get_part_specs_by_filter upper case", transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", "ds = ", -1,
             label="get_part_specs_by_filter bad filter", msg=len("Error parsing partition filter"),
             transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", "zz = \"a\"", -1,
             label="get_part_specs_by_filter unknown key", msg=True, transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "missing", "ds = \"a\"", -1,
             label="get_part_specs_by_filter missing table", msg=True, transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "pt", "ds = \"a\"", 65536,
             label="get_part_specs_by_filter 65536", transform=spec_view)

    # grouping by storage descriptor
    g = table(db, "gt", cols("a string"), partition_keys=cols("ds string"),
              parameters={GROUPING: "TRUE"})
    rec.call("create_table", g)
    rec.call("get_partitions_pspec", db, "gt", -1, label="grouped, no partitions",
             transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "gt", "ds = \"zz\"", -1,
             label="grouped by filter, no match", transform=spec_view)
    for v in ("a", "b", "c"):
        rec.call("add_partition", partition(g, [v], parameters={"p": v}))
    orc = partition(g, ["d"])
    orc.sd.inputFormat = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
    rec.call("add_partition", orc)
    wide = partition(g, ["e"])
    wide.sd.cols = cols("a string", "b int")
    rec.call("add_partition", wide)
    rec.call("add_partition", partition(g, ["f"], location=rec.scratch("g_outside")))
    serde = partition(g, ["g"])
    serde.sd.serdeInfo.serializationLib = "org.apache.hadoop.hive.serde2.OpenCSVSerde"
    serde.sd.serdeInfo.parameters = {"separatorChar": ","}
    rec.call("add_partition", serde)
    rec.call("get_partitions_pspec", db, "gt", -1, label="grouped")
    rec.call("get_partitions_pspec", db, "gt", 2, label="grouped, max 2", transform=spec_view)
    rec.call("get_part_specs_by_filter", db, "gt", "ds > \"b\"", -1, label="grouped by filter",
             transform=spec_view)
    rec.call("drop_database", db, True, True)


@scenario
def pspec_grouped_many(c, rec):
    """Many storage-descriptor groups: HMS lists them in its hash map's order."""
    db = DB + "_many"
    rec.call("create_database", database(db))
    g = table(db, "gt", cols("a string"), partition_keys=cols("ds string"),
              parameters={GROUPING: "true"})
    rec.call("create_table", g)
    for i in range(20):
        p = partition(g, [f"v{i:02d}"])
        p.sd.inputFormat = f"com.example.Format{i % 15}"
        p.sd.cols = cols("a string") if i % 2 else cols("a string", f"c{i} int")
        c.add_partition(p)
    rec.call("get_partitions_pspec", db, "gt", -1, label="grouped many", transform=spec_view)
    rec.call("drop_database", db, True, True)


@scenario
def exchange_partitions(c, rec):
    """HMS 2.3 leaves its transaction open when exchange_partitions fails before moving
    anything (missing table, other schema, a spec naming no key), so the writes that follow on
    the connection stay uncommitted until a later failure rolls them all back: those failures
    come last here, each followed by one that rolls back (no partition to move)."""
    db, db2 = DB + "_x", DB + "_x2"
    rec.call("create_database", database(db))
    rec.call("create_database", database(db2))
    keys = cols("ds string", "hr int")
    src = table(db, "src", cols("a string"), partition_keys=keys)
    dst = table(db, "dst", cols("a string"), partition_keys=keys)
    rec.call("create_table", src)
    rec.call("create_table", dst)
    for vals in (["a", "1"], ["a", "2"], ["b", "1"], ["c", "1"], ["d", "1"], ["e", "1"],
                 ["g", "3"]):
        rec.call("add_partition", partition(src, vals, parameters={"p": "".join(vals)}),
                 transform=part_view)
    rec.call("exchange_partition", {"ds": "a"}, db, "src", db, "dst",
             label="exchange_partition ds=a")
    rec.call("get_partition_names", db, "src", -1)
    rec.call("get_partitions", db, "dst", -1, transform=parts_of)
    rec.note("src dir ds=a gone", _dir(rec, f"{db}.db", "src", "ds=a"))
    rec.note("dst dir ds=a/hr=2 made", _dir(rec, f"{db}.db", "dst", "ds=a", "hr=2"))
    rec.call("exchange_partitions", {"ds": "b", "hr": "1"}, db, "src", db, "dst",
             transform=parts_of, label="exchange_partitions ds=b/hr=1")
    rec.note("dst dir ds=b/hr=1 made", _dir(rec, f"{db}.db", "dst", "ds=b", "hr=1"))
    rec.note("src dir ds=b kept", _dir(rec, f"{db}.db", "src", "ds=b"))
    rec.call("exchange_partitions", {"ds": "c", "hr": "1", "other": "x"}, db.upper(), "SRC", db,
             "dst", transform=parts_of, label="exchange_partitions upper-case source, extra key")
    other = table(db2, "dst", cols("a string"), partition_keys=keys)
    rec.call("create_table", other)
    rec.call("exchange_partitions", {"ds": "e"}, db, "src", db2.upper(), "DST",
             transform=parts_of, label="exchange_partitions to another database")
    rec.call("get_partitions", db2, "dst", -1, transform=parts_of)
    commented = table(db, "commented", cols("a string"), partition_keys=keys)
    commented.sd.cols[0].comment = "a comment"
    rec.call("create_table", commented)
    rec.call("exchange_partitions", {"ds": "d"}, db, "src", db, "commented", transform=parts_of,
             label="exchange_partitions column comments differ")

    # failures that roll back
    rec.call("exchange_partitions", {"ds": "zz"}, db, "src", db, "dst", transform=parts_of,
             label="exchange_partitions no matching partition", msg=True)
    rec.call("exchange_partitions", {"ds": "zz", "hr": "9"}, db, "src", db, "dst",
             transform=parts_of, label="exchange_partitions no matching partition, two keys",
             msg=True)
    rec.call("add_partition", partition(src, ["a", "1"]), transform=part_view)
    rec.call("exchange_partitions", {"ds": "a", "hr": "1"}, db, "src", db, "dst",
             transform=parts_of, label="exchange_partitions onto an existing partition")
    rec.note("src dir ds=a/hr=1 kept", _dir(rec, f"{db}.db", "src", "ds=a", "hr=1"))
    rec.call("exchange_partitions", {"hr": "3"}, db, "src", db, "dst", transform=parts_of,
             label="exchange_partitions second key only", msg=True)
    rec.call("get_partition_names", db, "src", -1, label="src names")
    rec.call("get_partition_names", db, "dst", -1, label="dst names")

    # failures that leave HMS's transaction open, each followed by one that rolls back
    rec.call("create_table", table(db, "cols", cols("a int"), partition_keys=keys))
    rec.call("create_table", table(db, "keys", cols("a string"), partition_keys=cols("ds string")))
    failures = [
        ("different columns", {"ds": "g"}, db, "src", db, "cols", True),
        ("different partition keys", {"ds": "g"}, db, "src", db, "keys", True),
        ("missing source", {"ds": "g"}, db, "missing", db, "dst", True),
        ("missing destination", {"ds": "g"}, db, "src", db, "missing", True),
        ("missing database", {"ds": "g"}, "cfps_nodb", "src", db, "dst", True),
        ("upper-case key", {"DS": "g"}, db, "src", db, "dst", True),
        ("empty spec", {}, db, "src", db, "dst", True),
    ]
    for what, spec, sdb, stbl, ddb, dtbl, msg in failures:
        rec.call("exchange_partitions", spec, sdb, stbl, ddb, dtbl, transform=parts_of,
                 label=f"exchange_partitions {what}", msg=msg)
        rec.call("exchange_partitions", {"ds": "zz"}, db, "src", db, "dst",
                 label="exchange_partitions rollback", msg=True)
    rec.call("exchange_partition", {"ds": "g"}, db, "missing", db, "dst",
             label="exchange_partition missing source", msg=True)
    rec.call("exchange_partitions", None, db, "src", db, "dst",
             label="exchange_partitions null spec", msg=True)
    rec.call("exchange_partitions", {"ds": "zz"}, db, "src", db, "dst",
             label="exchange_partitions rollback", msg=True)
    rec.call("exchange_partitions", {"ds": "g"}, None, "src", db, "dst",
             label="exchange_partitions null source db", msg=True)
    rec.call("exchange_partitions", {"ds": "zz"}, db, "src", db, "dst",
             label="exchange_partitions rollback", msg=True)
    rec.call("exchange_partitions", {"ds": "zz"}, db, "src", db, "dst",
             label="exchange_partitions rollback", msg=True)
    rec.call("get_partition_names", db, "src", -1, label="src names at the end")
    rec.call("get_partition_names", db, "dst", -1, label="dst names at the end")
    rec.call("get_partition_names", db, "commented", -1, label="commented names at the end")
    rec.call("drop_database", db, True, True)
    rec.call("drop_database", db2, True, True)


@scenario
def pspec_add_parameters(c, rec):
    """What a shared-SD partition keeps of its parameters and what HMS adds to them."""
    db = DB + "_params"
    rec.call("create_database", database(db))
    t = table(db, "pt", cols("a string"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    loc = c.get_table(db, "pt").sd.location
    for i, (params, n) in enumerate([({"k": "v"}, 1), ({}, 2), ({"k": "v"}, 2), ({}, 1),
                                     ({"numFiles": "1"}, 1)]):
        vals = [[f"p{i}x{j}"] for j in range(n)]
        spec = shared_spec(db, "pt", sd(t.sd.cols, loc), [f"/ds={v[0]}" for v in vals], vals,
                           parameters=params)
        rec.call("add_partitions_pspec", [spec])
    os.makedirs(loc.replace("file:", "") + "/ds=pre", exist_ok=True)
    with open(loc.replace("file:", "") + "/ds=pre/f.txt", "w") as fh:
        fh.write("hello")
    spec = shared_spec(db, "pt", sd(t.sd.cols, loc), ["/ds=pre"], [["pre"]], parameters={"k": "v"})
    rec.call("add_partitions_pspec", [spec])
    spec = list_spec(db, "pt", [partition(t, ["pre2"], location=loc + "/ds=pre")])
    rec.call("add_partitions_pspec", [spec])
    spec = shared_spec(db, "pt", sd(t.sd.cols, loc), ["/ds=pre"], [["pre3"]], parameters={})
    rec.call("add_partitions_pspec", [spec])
    spec = shared_spec(db, "pt", sd(t.sd.cols, loc), ["/ds=pre"], [["pre4"]],
                       parameters={"numFiles": "7", "totalSize": "9"})
    rec.call("add_partitions_pspec", [spec])
    rec.call("get_partitions", db, "pt", -1, transform=parts_of)
    rec.call("drop_database", db, True, True)


@scenario
def pspec_partition_level_privileges(c, rec):
    """A table with PARTITION_LEVEL_PRIVILEGE=TRUE gives its table grants to each partition it
    gets, whether added by a shared-SD spec or moved in by exchange_partition."""
    db = DB + "_priv"
    user, grant = "cfps_user", T.PrivilegeGrantInfo("SELECT", 0, "admin", T.PrincipalType.USER,
                                                    False)

    def grants_of(values, tbl):
        ref = T.HiveObjectRef(T.HiveObjectType.PARTITION, db, tbl, values, None)
        got = c.list_privileges(user, T.PrincipalType.USER, ref)
        return sorted((p.hiveObject.objectName, p.hiveObject.partValues, p.grantInfo.privilege,
                       p.grantInfo.grantor) for p in got)

    rec.call("create_database", database(db))
    keys = cols("ds string")
    src = table(db, "src", cols("a string"), partition_keys=keys)
    dst = table(db, "dst", cols("a string"), partition_keys=keys,
                parameters={"PARTITION_LEVEL_PRIVILEGE": "TRUE"})
    rec.call("create_table", src)
    rec.call("create_table", dst)
    rec.call("grant_privileges", T.PrivilegeBag([T.HiveObjectPrivilege(
        T.HiveObjectRef(T.HiveObjectType.TABLE, db, "dst", None, None), user,
        T.PrincipalType.USER, grant)]))
    shared = sd(cols("a string"), f"{rec.scratch('pl')}/dst")
    rec.call("add_partitions_pspec", [shared_spec(db, "dst", shared, ["/ds=s1"], [["s1"]])])
    rec.note("shared-SD partition grants", grants_of(["s1"], "dst"))
    rec.call("add_partition", partition(src, ["x"]), transform=part_view)
    rec.call("exchange_partition", {"ds": "x"}, db, "src", db, "dst")
    rec.note("exchanged partition grants", grants_of(["x"], "dst"))
    rec.call("drop_table", db, "src", True)
    rec.call("drop_table", db, "dst", True)
    rec.call("drop_database", db, True, True)
