"""Contextual diff, 3-way merge and revert (kvmodel.versioning), on every backend.

Catalogs are built from real HMS structs encoded with ``codec.encode`` under the key helpers of
``kvmodel.catalog``; only the public store contract is used.
"""
from __future__ import annotations

import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel import catalog as K
from kvmodel import codec
from kvmodel.entities import FIELDS, ancestors, parse_key
from kvmodel.store.errors import HeadMoved, NothingToCommit, ReadOnlyRef
from kvmodel.versioning import (
    DirtyBranch,
    EntityChange,
    FieldChange,
    MergeConflict,
    diff_refs,
    merge_refs,
    revert_commit,
)


# --- builders -------------------------------------------------------------------------------
def cols(*spec):
    return [T.FieldSchema(name=n, type=t, comment=None) for n, t in spec]


def table(name="orders", db="shop", columns=(("id", "bigint"), ("price", "double")),
          params=None, location=None, **kw):
    sd = T.StorageDescriptor(
        cols=cols(*columns), location=location or f"s3://wh/{db}.db/{name}",
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=T.SerDeInfo(serializationLib="parquet.serde", parameters={"a": "1"}),
        numBuckets=-1, parameters={})
    t = T.Table(tableName=name, dbName=db, owner="alice", createTime=1, lastAccessTime=0,
                sd=sd, partitionKeys=cols(("ds", "string")), tableType="EXTERNAL_TABLE",
                parameters=dict(params or {"transient_lastDdlTime": "1"}))
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def partition(ds, tbl="orders", db="shop", params=None):
    sd = T.StorageDescriptor(cols=cols(("id", "bigint"), ("price", "double")),
                             location=f"s3://wh/{db}.db/{tbl}/ds={ds}",
                             serdeInfo=T.SerDeInfo(serializationLib="parquet.serde"))
    return T.Partition(values=[ds], dbName=db, tableName=tbl, createTime=1, sd=sd,
                       parameters=dict(params or {}))


def database(name="shop", **kw):
    return T.Database(name=name, locationUri=f"s3://wh/{name}.db", parameters={}, **kw)


def function(name="f1", db="shop", cls="com.example.F1"):
    return T.Function(functionName=name, dbName=db, className=cls, ownerName="alice",
                      resourceUris=[T.ResourceUri(resourceType=1, uri="s3://jars/f.jar")])


def colstats(col="price", low=1.0):
    desc = T.ColumnStatisticsDesc(isTblLevel=True, dbName="shop", tableName="orders",
                                  lastAnalyzed=5)
    data = T.ColumnStatisticsData(doubleStats=T.DoubleColumnStatsData(
        lowValue=low, highValue=9.0, numNulls=0, numDVs=3))
    return T.ColumnStatistics(statsDesc=desc, statsObj=[
        T.ColumnStatisticsObj(colName=col, colType="double", statsData=data)])


def pkey(ds, tbl="orders", db="shop"):
    return K.part_key(db, tbl, f"ds={ds}")


TBL = K.table_key("shop", "orders")
DB = K.db_key("shop")


def write(store, branch, changes: dict, msg="c"):
    """Stage ``{key: struct | bytes | None}`` on ``branch`` and commit it."""
    with store.write(branch) as txn:
        for key, value in changes.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value if isinstance(value, bytes) else codec.encode(value))
    return store.commit(branch, msg)


def get(store, ref, key, cls=T.Table):
    data = store.get(ref, key)
    return None if data is None else codec.decode(cls, data)


def contents(store, ref):
    with store.read(ref) as view:
        return dict(view.scan())


@pytest.fixture
def shop(store):
    """main: database shop, table orders with two partitions, a function; branch dev from it."""
    write(store, "main", {DB: database(), TBL: table(), pkey("1"): partition("1"),
                          pkey("2"): partition("2"), K.func_key("shop", "f1"): function()},
          "seed")
    store.create_branch("dev", "main")
    return store


# --- keys -----------------------------------------------------------------------------------
@pytest.mark.parametrize("key, kind, path", [
    ("db/shop", "database", ("shop",)),
    ("db/shop/fn/f1", "function", ("shop", "f1")),
    ("db/shop/table/orders", "table", ("shop", "orders")),
    ("db/shop/table/orders/part/ds=1", "partition", ("shop", "orders", "ds=1")),
    ("db/shop/table/orders/part/ds=1/hr=2", "partition", ("shop", "orders", "ds=1/hr=2")),
    ("db/shop/table/orders/colstats/price", "table_column_stats", ("shop", "orders", "price")),
    ("db/shop/table/orders/partstats/ds=1/hr=2/price", "partition_column_stats",
     ("shop", "orders", "ds=1/hr=2", "price")),
    ("role/admin", "role", ("admin",)),
    ("grant/x/y", "other", ("grant/x/y",)),
    ("db/shop/table/orders/stats/ds=1", "table_item", ("shop", "orders", "stats/ds=1")),
    ("db/shop/priv/USER/alice/ALL/bob", "database_item", ("shop", "priv/USER/alice/ALL/bob")),
    ("db/shop/table/orders/part/", "other", ("db/shop/table/orders/part/",)),
])
def test_parse_key(key, kind, path):
    assert parse_key(key) == (kind, path)


def test_ancestors():
    assert ancestors("db/s/table/t/partstats/ds=1/c") == ["db/s", "db/s/table/t",
                                                          "db/s/table/t/part/ds=1"]
    assert ancestors("db/s/table/t/part/ds=1") == ["db/s", "db/s/table/t"]
    assert ancestors("db/s") == [] and ancestors("role/r") == []


def test_every_struct_attribute_is_a_field():
    for kind, fields in FIELDS.items():
        names = [f.name for f in fields]
        assert len(names) == len(set(names)), kind


# --- diff -----------------------------------------------------------------------------------
def _set_sd(attr, value):
    return lambda t: setattr(t.sd, attr, value)


@pytest.mark.parametrize("mutate, expected", [
    (_set_sd("location", "s3://new"),
     [FieldChange("location", "s3://wh/shop.db/orders", "s3://new")]),
    (_set_sd("inputFormat", "TextInputFormat"),
     [FieldChange("inputFormat", "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                  "TextInputFormat")]),
    (_set_sd("outputFormat", "TextOut"),
     [FieldChange("outputFormat",
                  "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", "TextOut")]),
    (lambda t: t.sd.serdeInfo.parameters.update(a="2"),
     [FieldChange("serde", {"serializationLib": "parquet.serde", "parameters": {"a": "1"}},
                  {"serializationLib": "parquet.serde", "parameters": {"a": "2"}})]),
    (lambda t: setattr(t, "tableType", "MANAGED_TABLE"),
     [FieldChange("tableType", "EXTERNAL_TABLE", "MANAGED_TABLE")]),
    (lambda t: setattr(t, "owner", "bob"), [FieldChange("owner", "alice", "bob")]),
    (lambda t: setattr(t, "viewOriginalText", "select 1"),
     [FieldChange("viewText", None, "select 1")]),
    (lambda t: t.partitionKeys.append(T.FieldSchema("hr", "int")),
     [FieldChange("partitionKeys", [{"name": "ds", "type": "string"}],
                  [{"name": "ds", "type": "string"}, {"name": "hr", "type": "int"}])]),
    (lambda t: t.parameters.update(owner_team="data", transient_lastDdlTime="99"),
     [FieldChange("parameters.owner_team", None, "data")]),
    (lambda t: t.parameters.pop("transient_lastDdlTime"), []),
    (lambda t: t.sd.cols.append(T.FieldSchema("qty", "int")),
     [FieldChange("columns.added", None, {"qty": "int"})]),
    (lambda t: t.sd.cols.pop(0), [FieldChange("columns.dropped", {"id": "bigint"}, None)]),
    (lambda t: setattr(t.sd.cols[1], "type", "decimal(10,2)"),
     [FieldChange("columns.retyped", {"price": "double"}, {"price": "decimal(10,2)"})]),
    (lambda t: t.sd.cols.reverse(),
     [FieldChange("columns.reordered", ["id", "price"], ["price", "id"])]),
    (lambda t: setattr(t.sd.cols[0], "comment", "key"),
     [FieldChange("columns.comment", {"id": None}, {"id": "key"})]),
    (_set_sd("numBuckets", 8), [FieldChange("numBuckets", -1, 8)]),
    (lambda t: setattr(t, "lastAccessTime", 77), []),
])
def test_diff_of_a_modified_table_names_the_fields(shop, mutate, expected):
    t = table()
    mutate(t)
    write(shop, "dev", {TBL: t})
    report = diff_refs(shop, "main", "dev")
    assert report.changes == [EntityChange("table", ("shop", "orders"), "modified",
                                           tuple(expected), TBL)]


@pytest.mark.parametrize("key, value, kind, path", [
    (K.table_key("shop", "items"), table("items"), "table", ("shop", "items")),
    (K.db_key("web"), database("web"), "database", ("web",)),
    (K.func_key("shop", "f2"), function("f2"), "function", ("shop", "f2")),
    (pkey("3"), partition("3"), "partition", ("shop", "orders", "ds=3")),
    (K.table_colstats_key("shop", "orders", "price"), colstats(), "table_column_stats",
     ("shop", "orders", "price")),
    (K.role_key("admin"), T.Role(roleName="admin", ownerName="alice"), "role", ("admin",)),
])
def test_diff_of_added_and_removed_entities(shop, key, value, kind, path):
    write(shop, "dev", {key: value})
    assert diff_refs(shop, "main", "dev").changes == [EntityChange(kind, path, "added", (), key)]
    assert diff_refs(shop, "dev", "main").changes == [
        EntityChange(kind, path, "removed", (), key)]


@pytest.mark.parametrize("key, before, after, expected", [
    (pkey("1"), partition("1"), partition("1", params={"numRows": "5"}),
     [FieldChange("parameters.numRows", None, "5")]),
    (DB, database(), database(description="shop data", ownerName="bob"),
     [FieldChange("description", None, "shop data"), FieldChange("owner", None, "bob")]),
    (K.func_key("shop", "f1"), function(), function(cls="com.example.G"),
     [FieldChange("className", "com.example.F1", "com.example.G")]),
])
def test_diff_of_other_kinds(shop, key, before, after, expected):
    write(shop, "dev", {key: after})
    [change] = diff_refs(shop, "main", "dev").changes
    assert change.change == "modified" and list(change.fields) == expected


def test_diff_includes_staged_writes_and_honours_prefix(shop):
    with shop.write("dev") as txn:
        txn.put(pkey("9"), codec.encode(partition("9")))
        txn.put(K.func_key("shop", "f2"), codec.encode(function("f2")))
    report = diff_refs(shop, "main", "dev", prefix=K.part_prefix("shop", "orders"))
    assert [c.key for c in report.changes] == [pkey("9")]


def test_partition_rollup_and_json(shop):
    write(shop, "dev", {pkey("3"): partition("3"), pkey("4"): partition("4"), pkey("1"): None,
                        pkey("2"): partition("2", params={"x": "1"}),
                        K.table_key("shop", "items"): table("items"),
                        K.part_key("shop", "items", "ds=1"): partition("1", tbl="items")})
    report = diff_refs(shop, "main", "dev")
    assert report.partition_rollup() == {
        ("shop", "items"): {"added": 1, "removed": 0, "modified": 0},
        ("shop", "orders"): {"added": 2, "removed": 1, "modified": 1}}
    js = report.to_json()
    assert js["left"] == "main" and js["right"] == "dev" and len(js["changes"]) == 6
    assert {"db": "shop", "table": "orders", "added": 2, "removed": 1,
            "modified": 1} in js["partitions"]
    assert js["changes"][0]["path"] == ["shop", "items"]
    import json
    json.dumps(js)


# --- merge: clean -----------------------------------------------------------------------------
def test_different_partitions_of_one_table_merge_cleanly(shop):
    write(shop, "dev", {pkey("3"): partition("3")})
    m = write(shop, "main", {pkey("4"): partition("4")})
    d = shop.resolve("dev").commit
    result = merge_refs(shop, "dev", "main", author="me")
    assert result.conflicts == [] and result.resolved_by is None
    assert [c.key for c in result.applied] == [pkey("3")]
    assert result.commit.parents == (m.id, d) and result.base == shop.merge_base(m.id, d)
    assert result.commit.message == "Merge 'dev' into 'main'" and result.commit.author == "me"
    assert shop.resolve("main").commit == result.commit.id
    assert {pkey(x) for x in "1234"} <= set(contents(shop, "main"))
    assert [(c.key, c.change) for c in diff_refs(shop, "dev", "main").changes] == [
        (pkey("4"), "added")]


def test_merging_the_same_source_twice_is_a_no_op(shop):
    write(shop, "dev", {pkey("3"): partition("3")})
    write(shop, "main", {pkey("4"): partition("4")})
    first = merge_refs(shop, "dev", "main")
    head = shop.resolve("main").commit
    again = merge_refs(shop, "dev", "main")
    assert first.commit is not None
    assert again.commit is None and again.applied == [] and again.conflicts == []
    assert shop.resolve("main").commit == head


def test_merge_of_a_source_without_new_commits_writes_nothing(shop):
    write(shop, "main", {pkey("4"): partition("4")})
    head = shop.resolve("main").commit
    assert merge_refs(shop, "dev", "main").commit is None
    assert shop.resolve("main").commit == head


def test_identical_changes_on_both_sides_do_not_conflict(shop):
    write(shop, "dev", {pkey("3"): partition("3"), pkey("1"): None})
    write(shop, "main", {pkey("3"): partition("3"), pkey("1"): None})
    result = merge_refs(shop, "dev", "main")
    assert result.conflicts == [] and result.applied == [] and result.commit is not None


def test_column_added_on_one_side_parameter_on_the_other(shop):
    write(shop, "dev", {TBL: table(columns=(("id", "bigint"), ("price", "double"),
                                             ("qty", "int")))})
    write(shop, "main", {TBL: table(params={"transient_lastDdlTime": "1", "team": "data"})})
    result = merge_refs(shop, "dev", "main")
    assert result.conflicts == []
    merged = get(shop, "main", TBL)
    assert [c.name for c in merged.sd.cols] == ["id", "price", "qty"]
    assert merged.parameters["team"] == "data"
    [change] = result.applied
    assert change.fields == (FieldChange("columns.added", None, {"qty": "int"}),)
    assert shop.get("main", TBL) == codec.encode(merged)  # canonical bytes


@pytest.mark.parametrize("base, src, dst, merged", [
    # both append columns: the destination's first, then the source's
    (["a", "b"], ["a", "b", "s"], ["a", "b", "d"], ["a", "b", "d", "s"]),
    # source inserts in the middle, destination appends
    (["a", "b"], ["a", "s", "b"], ["a", "b", "d"], ["a", "s", "b", "d"]),
    # source reorders, destination appends
    (["a", "b", "c"], ["c", "a", "b"], ["a", "b", "c", "d"], ["c", "a", "b", "d"]),
    # source drops one, destination drops another
    (["a", "b", "c"], ["a", "c"], ["a", "b"], ["a"]),
    # source adds at the front, destination drops
    (["a", "b"], ["s", "a", "b"], ["a"], ["s", "a"]),
])
def test_column_lists_merge_by_position(shop, base, src, dst, merged):
    def t(names):
        return table(columns=tuple((n, "string") for n in names))
    write(shop, "main", {TBL: t(base)})
    shop.delete_branch("dev")
    shop.create_branch("dev", "main")
    write(shop, "dev", {TBL: t(src)})
    write(shop, "main", {TBL: t(dst)})
    result = merge_refs(shop, "dev", "main")
    assert result.conflicts == []
    assert [c.name for c in get(shop, "main", TBL).sd.cols] == merged


def test_volatile_fields_never_conflict(shop):
    write(shop, "dev", {TBL: table(params={"transient_lastDdlTime": "5", "x": "1"},
                                   lastAccessTime=9)})
    write(shop, "main", {TBL: table(params={"transient_lastDdlTime": "7", "y": "1"},
                                    lastAccessTime=3)})
    result = merge_refs(shop, "dev", "main")
    assert result.conflicts == []
    merged = get(shop, "main", TBL)
    assert merged.parameters == {"transient_lastDdlTime": "7", "x": "1", "y": "1"}
    assert merged.lastAccessTime == 9


# --- merge: conflicts -------------------------------------------------------------------------
def test_same_parameter_set_differently_is_value_differs(shop):
    write(shop, "dev", {TBL: table(params={"team": "web"}), pkey("3"): partition("3")})
    write(shop, "main", {TBL: table(params={"team": "data"})})
    head = shop.resolve("main").commit
    with pytest.raises(MergeConflict) as info:
        merge_refs(shop, "dev", "main")
    result = info.value.result
    assert shop.resolve("main").commit == head and result.commit is None
    [c] = result.conflicts
    assert (c.type, c.kind, c.path, c.fields, c.source, c.dest, c.key) == (
        "VALUE_DIFFERS", "table", ("shop", "orders"), ("parameters.team",), "web", "data", TBL)
    assert result.to_json()["conflicts"][0]["path"] == ["shop", "orders"]


@pytest.mark.parametrize("strategy, team, loc", [
    ("source-wins", "web", "s3://src"), ("dest-wins", "data", "s3://src")])
def test_strategies_resolve_conflicting_fields_and_keep_the_rest(shop, strategy, team, loc):
    write(shop, "dev", {TBL: table(params={"team": "web"}, location="s3://src")})
    write(shop, "main", {TBL: table(params={"team": "data"})})
    result = merge_refs(shop, "dev", "main", strategy=strategy)
    assert result.resolved_by == strategy and len(result.conflicts) == 1
    merged = get(shop, "main", TBL)
    assert merged.parameters["team"] == team and merged.sd.location == loc


def test_same_column_changed_differently(shop):
    write(shop, "dev", {TBL: table(columns=(("id", "bigint"), ("price", "decimal(10,2)")))})
    write(shop, "main", {TBL: table(columns=(("id", "bigint"), ("price", "float")))})
    result = merge_refs(shop, "dev", "main", dry_run=True)
    [c] = result.conflicts
    assert (c.type, c.fields) == ("COLUMN_CHANGED_BOTH", ("columns.price",))
    assert c.source["type"] == "decimal(10,2)" and c.dest["type"] == "float"
    merge_refs(shop, "dev", "main", strategy="source-wins")
    assert get(shop, "main", TBL).sd.cols[1].type == "decimal(10,2)"


@pytest.mark.parametrize("src_change, dst_change, ctype", [
    ({pkey("1"): partition("1", params={"x": "1"})}, {pkey("1"): None}, "MODIFIED_AND_DROPPED"),
    ({pkey("1"): None}, {pkey("1"): partition("1", params={"x": "1"})}, "DROPPED_AND_MODIFIED"),
    ({K.func_key("shop", "f1"): function(cls="G")}, {K.func_key("shop", "f1"): None},
     "MODIFIED_AND_DROPPED"),
    ({pkey("3"): partition("3", params={"a": "1"})},
     {pkey("3"): partition("3", params={"a": "2"})}, "ADDED_DIFFERENTLY"),
])
@pytest.mark.parametrize("strategy", ["fail", "source-wins", "dest-wins"])
def test_entity_conflicts(shop, src_change, dst_change, ctype, strategy):
    write(shop, "dev", src_change)
    write(shop, "main", dst_change)
    [key] = src_change
    source_value = shop.get("dev", key)
    dest_value = shop.get("main", key)
    if strategy == "fail":
        with pytest.raises(MergeConflict) as info:
            merge_refs(shop, "dev", "main")
        [c] = info.value.result.conflicts
        assert (c.type, c.key, c.path) == (ctype, key, parse_key(key)[1])
        assert shop.get("main", key) == dest_value
        return
    result = merge_refs(shop, "dev", "main", strategy=strategy)
    assert [c.type for c in result.conflicts] == [ctype]
    expected = source_value if strategy == "source-wins" else dest_value
    assert shop.get("main", key) == expected


def test_partitions_added_to_a_table_the_destination_dropped(shop):
    write(shop, "dev", {pkey("3"): partition("3"), pkey("4"): partition("4")})
    write(shop, "main", {TBL: None, pkey("1"): None, pkey("2"): None})
    with pytest.raises(MergeConflict) as info:
        merge_refs(shop, "dev", "main")
    [c] = info.value.result.conflicts
    assert (c.type, c.kind, c.path, c.key) == ("PARENT_DROPPED", "table", ("shop", "orders"), TBL)
    assert c.source == {"added": 2, "modified": 0, "keys": [pkey("3"), pkey("4")]}
    assert c.dest is None
    merge_refs(shop, "dev", "main", strategy="dest-wins")
    assert [k for k in contents(shop, "main") if k.startswith(TBL)] == []


def test_source_wins_restores_a_dropped_table_with_its_partitions(shop):
    write(shop, "dev", {pkey("3"): partition("3")})
    write(shop, "main", {TBL: None, pkey("1"): None, pkey("2"): None})
    result = merge_refs(shop, "dev", "main", strategy="source-wins")
    assert [c.type for c in result.conflicts] == ["PARENT_DROPPED"]
    assert {k for k in contents(shop, "main") if k.startswith(TBL)} == {
        TBL, pkey("1"), pkey("2"), pkey("3")}


def test_partitions_added_to_a_table_the_source_dropped(shop):
    write(shop, "dev", {TBL: None, pkey("1"): None, pkey("2"): None})
    write(shop, "main", {pkey("3"): partition("3")})
    with pytest.raises(MergeConflict) as info:
        merge_refs(shop, "dev", "main")
    [c] = info.value.result.conflicts
    assert (c.type, c.key, c.source) == ("PARENT_DROPPED", TBL, None)
    assert c.dest["keys"] == [pkey("3")]
    merge_refs(shop, "dev", "main", strategy="source-wins")
    assert [k for k in contents(shop, "main") if k.startswith(TBL)] == []


def test_table_modified_where_the_other_side_dropped_it(shop):
    write(shop, "dev", {TBL: table(owner="bob"), pkey("3"): partition("3")})
    write(shop, "main", {TBL: None, pkey("1"): None, pkey("2"): None})
    result = merge_refs(shop, "dev", "main", dry_run=True)
    [c] = result.conflicts
    assert (c.type, c.fields, c.source, c.dest) == ("MODIFIED_AND_DROPPED", ("owner",),
                                                    {"owner": "bob"}, None)


def test_tables_added_to_a_database_the_other_side_dropped(shop):
    write(shop, "dev", {K.table_key("shop", "items"): table("items")})
    write(shop, "main", {DB: None, TBL: None, pkey("1"): None, pkey("2"): None,
                         K.func_key("shop", "f1"): None})
    result = merge_refs(shop, "dev", "main", dry_run=True)
    [c] = result.conflicts
    assert (c.type, c.kind, c.key) == ("PARENT_DROPPED", "database", DB)


def test_statistics_added_for_a_partition_the_other_side_dropped(shop):
    write(shop, "dev", {K.part_colstats_prefix("shop", "orders", "ds=1") + "price": colstats()})
    write(shop, "main", {pkey("1"): None})
    result = merge_refs(shop, "dev", "main", dry_run=True)
    [c] = result.conflicts
    assert (c.type, c.kind, c.key) == ("PARENT_DROPPED", "partition", pkey("1"))


def test_table_items_added_under_a_table_the_other_side_dropped(shop):
    """A grant (an opaque value in the table's subtree) added to a table the destination
    dropped is a conflict on the table, not an orphan that a new table of that name inherits."""
    write(shop, "dev", {TBL + "/priv/table/USER/alice/SELECT/bob": b"grant"})
    write(shop, "main", {TBL: None, pkey("1"): None, pkey("2"): None})
    result = merge_refs(shop, "dev", "main", dry_run=True)
    [c] = result.conflicts
    assert (c.type, c.kind, c.key) == ("PARENT_DROPPED", "table", TBL)


def test_unrelated_drops_and_changes_merge(shop):
    write(shop, "dev", {pkey("1"): None, K.func_key("shop", "f1"): function(cls="G")})
    write(shop, "main", {pkey("2"): partition("2", params={"n": "1"}),
                         K.table_key("shop", "items"): table("items")})
    result = merge_refs(shop, "dev", "main")
    assert result.conflicts == []
    keys = set(contents(shop, "main"))
    assert pkey("1") not in keys and K.table_key("shop", "items") in keys
    assert get(shop, "main", K.func_key("shop", "f1"), T.Function).className == "G"


# --- merge: dry run, dirty branches, moved heads, bad arguments --------------------------------
def test_dry_run_writes_nothing(shop):
    write(shop, "dev", {pkey("3"): partition("3")})
    head = shop.resolve("main").commit
    result = merge_refs(shop, "dev", "main", dry_run=True)
    assert result.commit is None and [c.key for c in result.applied] == [pkey("3")]
    assert shop.resolve("main").commit == head and shop.get("main", pkey("3")) is None


def test_dirty_destination_is_refused(shop):
    write(shop, "dev", {pkey("3"): partition("3")})
    with shop.write("main") as txn:
        txn.put("x", b"1")
    with pytest.raises(DirtyBranch):
        merge_refs(shop, "dev", "main")
    with pytest.raises(DirtyBranch):
        revert_commit(shop, "main", shop.resolve("main").commit)


def test_source_staging_is_not_merged(shop):
    write(shop, "dev", {pkey("3"): partition("3")})
    with shop.write("dev") as txn:
        txn.put(pkey("5"), codec.encode(partition("5")))
    merge_refs(shop, "dev", "main")
    assert shop.get("main", pkey("3")) is not None and shop.get("main", pkey("5")) is None


def test_head_moved_during_merge(shop, monkeypatch):
    write(shop, "dev", {pkey("3"): partition("3")})
    original = shop.commit_snapshot

    def racing(branch, *args, **kwargs):  # another writer commits to main just before us
        write(shop, "main", {pkey("9"): partition("9")})
        return original(branch, *args, **kwargs)
    monkeypatch.setattr(shop, "commit_snapshot", racing)
    with pytest.raises(HeadMoved):
        merge_refs(shop, "dev", "main")
    assert shop.get("main", pkey("3")) is None


def test_merge_into_a_tag_or_with_an_unknown_strategy(shop):
    shop.create_tag("v1", "main")
    with pytest.raises(ReadOnlyRef):
        merge_refs(shop, "dev", "v1")
    with pytest.raises(ValueError):
        merge_refs(shop, "dev", "main", strategy="ours")


# --- revert -----------------------------------------------------------------------------------
def test_revert_restores_the_previous_state(shop):
    before = contents(shop, "main")
    bad = write(shop, "main", {pkey("1"): None, pkey("3"): partition("3"),
                               TBL: table(owner="mallory")}, "bad change")
    later = write(shop, "main", {pkey("4"): partition("4")}, "later")
    rev = revert_commit(shop, "main", bad.id, author="me")
    assert rev.parents == (later.id,) and rev.message == f"Revert {bad.id[:12]}: bad change"
    after = contents(shop, "main")
    assert after.pop(pkey("4")) and after == before
    with pytest.raises(NothingToCommit):
        revert_commit(shop, "main", bad.id)


def test_revert_conflicts_with_later_changes(shop):
    bad = write(shop, "main", {TBL: table(params={"team": "a"})})
    write(shop, "main", {TBL: table(params={"team": "b"})})
    head = shop.resolve("main").commit
    with pytest.raises(MergeConflict) as info:
        revert_commit(shop, "main", bad.id)
    assert [c.type for c in info.value.result.conflicts] == ["VALUE_DIFFERS"]
    assert shop.resolve("main").commit == head


def test_table_dropped_by_the_source_and_altered_by_the_destination(shop):
    write(shop, "dev", {TBL: None, pkey("1"): None, pkey("2"): None})
    write(shop, "main", {TBL: table(owner="bob")})
    result = merge_refs(shop, "dev", "main", strategy="dest-wins")
    [c] = result.conflicts
    assert (c.type, c.fields, c.source, c.dest) == ("DROPPED_AND_MODIFIED", ("owner",), None,
                                                    {"owner": "bob"})
    assert {k for k in contents(shop, "main") if k.startswith(TBL)} == {TBL, pkey("1"), pkey("2")}


def test_merge_result_is_json(shop):
    import json
    write(shop, "dev", {TBL: table(params={"team": "web"}), pkey("3"): partition("3")})
    write(shop, "main", {TBL: table(params={"team": "data"})})
    result = merge_refs(shop, "dev", "main", strategy="source-wins", message="m",
                        metadata={"ticket": "3"})
    js = json.loads(json.dumps(result.to_json()))
    assert js["commit"] == result.commit.id and js["resolved_by"] == "source-wins"
    assert [a["key"] for a in js["applied"]] == [TBL, pkey("3")]
    assert js["applied"][0]["fields"] == [{"field": "parameters.team", "before": "data",
                                           "after": "web"}]
    assert result.commit.message == "m" and result.commit.metadata == {"ticket": "3"}
