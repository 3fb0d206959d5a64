"""Statistics-set pointers across commits, schema changes, merges and reverts (embedded store).

Pointers are inherited by later commits; a schema change makes them stale (computed on read);
merges never conflict on them (kvmodel/merge.py: merge_stats_pointer).
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hms_proxy.hms.warehouse import local_path
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel.catalog import CatalogReader
from kvmodel.store.local import LocalStore
from kvmodel.versioning import merge_refs, revert_commit
from stats import layout, serving
from tests.kvmodel.test_versioning import DB, TBL, cols, database, partition, pkey, table, write

PART_PTR = layout.pointer_key("shop", "orders", "ds=1")
TABLE_PTR = layout.pointer_key("shop", "orders", None)
COLS = (("id", "bigint"), ("price", "double"))


def pointer(set_id: str, computed: int = 100, columns=COLS, **extra) -> bytes:
    value = {"set": f"file:/wh/shop.db/orders/_stats/ds=1/{set_id}", "commit": None,
             "schema": layout.schema_fingerprint(columns), "rows": 3, "data": "",
             "computed": computed, **extra}
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def read(store, ref, key=PART_PTR):
    value = store.get(ref, key)
    return None if value is None else json.loads(value)


@pytest.fixture
def shop(tmp_path):
    """main: database shop, table orders (ds=1, ds=2) and a pointer for ds=1; branch dev."""
    store = LocalStore(tmp_path / "store")
    write(store, "main", {DB: database(), TBL: table(), pkey("1"): partition("1"),
                          pkey("2"): partition("2"), PART_PTR: pointer("base")}, "seed")
    store.create_branch("dev", "main")
    yield store
    store.close()


def moved(ds="1", location=None, **params):
    """Partition ds with its data moved: a new location, or new file statistics."""
    p = partition(ds, params={"numFiles": "1", **params})
    if location:
        p.sd.location = location
    return p


# --- inheritance and staleness -------------------------------------------------------------
def test_later_commits_and_branches_inherit_pointers(shop):
    first = shop.resolve("main").commit
    write(shop, "main", {pkey("3"): partition("3")}, "another partition")
    write(shop, "main", {DB: database(description="x")}, "database changed")
    shop.create_branch("later", "main")
    for ref in (first, "main", "main~1", "dev", "later"):
        assert read(shop, ref)["set"].endswith("/base")
    tbl = T.Table()
    tbl.sd = T.StorageDescriptor(cols=cols(*COLS))
    assert not serving.is_stale(read(shop, "main"), tbl)


def write_set(location, part, rows):
    path = layout.set_dir(location, part, layout.new_set_id())
    os.makedirs(local_path(path))
    full = [dict(dict.fromkeys(layout.STATISTICS_SCHEMA.names), **r) for r in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=layout.STATISTICS_SCHEMA),
                   os.path.join(local_path(path), layout.STATISTICS))
    return path


class _Env:
    cache = None


def served(store, ref, part, columns):
    with store.read(ref) as view:
        reader = CatalogReader(view, T)
        objs, _ = serving.served_objects(_Env(), T, reader, reader.table("shop", "orders"),
                                         part, columns)
    return objs


def test_a_schema_change_makes_pointers_stale(shop, tmp_path):
    path = write_set(f"file:{tmp_path}/orders", "ds=1", [
        {"column": "id", "type": "bigint", "null_count": 0, "distinct_count": 3, "min": "1",
         "max": "3"},
        {"column": "price", "type": "double", "null_count": 0, "distinct_count": 2,
         "min_value": 1.0, "max_value": 2.0}])
    write(shop, "main", {PART_PTR: pointer("x", set=path)}, "computed")
    assert sorted(served(shop, "main", "ds=1", ["id", "price"])) == ["id", "price"]
    computed_at = shop.resolve("main").commit

    # a column added: stale, but the columns that kept name and type are still served
    write(shop, "main", {TBL: table(columns=COLS + (("qty", "int"),))}, "add column")
    tbl = T.Table(sd=T.StorageDescriptor(cols=cols(*COLS, ("qty", "int"))))
    assert serving.is_stale(read(shop, "main"), tbl)
    assert sorted(served(shop, "main", "ds=1", ["id", "price", "qty"])) == ["id", "price"]

    # a column retyped: that column is no longer served; the old commit still serves it
    write(shop, "main", {TBL: table(columns=(("id", "string"), ("price", "double")))}, "retype")
    assert sorted(served(shop, "main", "ds=1", ["id", "price"])) == ["price"]
    assert sorted(served(shop, computed_at, "ds=1", ["id", "price"])) == ["id", "price"]

    # a column dropped: not served (it is not a column any more)
    write(shop, "main", {TBL: table(columns=(("price", "double"),))}, "drop column")
    assert sorted(served(shop, "main", "ds=1", ["id", "price"])) == ["price"]


# --- merges ----------------------------------------------------------------------------------
def test_one_side_changed_the_pointer(shop):
    write(shop, "dev", {PART_PTR: pointer("dev")})
    write(shop, "main", {pkey("2"): moved("2")})
    merge_refs(shop, "dev", "main")
    assert read(shop, "main")["set"].endswith("/dev")


@pytest.mark.parametrize("dev_part, main_part, winner", [
    (moved(location="s3://wh/elsewhere"), None, "dev"),        # source's data moved
    (None, moved(numRows="7"), "main"),                         # dest's data moved
    (moved(totalSize="10"), None, "dev"),
    (None, None, "stale"),                                      # neither moved
    (moved(location="s3://wh/x"), moved(numRows="7"), "stale"),  # both moved
])
def test_both_sides_changed_the_pointer(shop, dev_part, main_part, winner):
    write(shop, "dev", {PART_PTR: pointer("dev", computed=300),
                        **({pkey("1"): dev_part} if dev_part else {})})
    write(shop, "main", {PART_PTR: pointer("main", computed=200),
                         **({pkey("1"): main_part} if main_part else {})})
    result = merge_refs(shop, "dev", "main")  # strategy "fail": no conflict
    assert not result.conflicts
    merged = read(shop, "main")
    if winner == "stale":
        assert merged["stale"] is True and merged["set"].endswith("/dev")  # computed later
        tbl = T.Table(sd=T.StorageDescriptor(cols=cols(*COLS)))
        assert serving.is_stale(merged, tbl)
        assert served(shop, "main", "ds=1", ["id", "price"]) == {}
    else:
        assert "stale" not in merged and merged["set"].endswith("/" + winner)


def test_pointers_added_on_both_sides_of_an_unpartitioned_table(shop):
    params = {"transient_lastDdlTime": "1"}
    write(shop, "dev", {TABLE_PTR: pointer("dev"),
                        TBL: table(params={**params, "totalSize": "99"})})
    write(shop, "main", {TABLE_PTR: pointer("main")})
    merge_refs(shop, "dev", "main")
    assert read(shop, "main", TABLE_PTR)["set"].endswith("/dev")


def test_pointer_deleted_on_one_side_changed_on_the_other(shop):
    write(shop, "dev", {PART_PTR: None, pkey("1"): moved(location="s3://wh/new")})
    write(shop, "main", {PART_PTR: pointer("main")})
    merge_refs(shop, "dev", "main")
    assert read(shop, "main") is None  # dev's data moved: its deletion wins


def test_pointer_changed_under_a_table_the_other_side_dropped(shop):
    write(shop, "dev", {PART_PTR: pointer("dev"), TABLE_PTR: pointer("new")})
    write(shop, "main", {TBL: None, pkey("1"): None, pkey("2"): None, PART_PTR: None})
    result = merge_refs(shop, "dev", "main")
    assert not result.conflicts
    assert read(shop, "main") is None and read(shop, "main", TABLE_PTR) is None
    assert shop.get("main", TBL) is None


def test_pointer_added_under_a_table_the_source_dropped(shop):
    write(shop, "dev", {TBL: None, pkey("1"): None, pkey("2"): None, PART_PTR: None})
    write(shop, "main", {TABLE_PTR: pointer("main"), PART_PTR: pointer("main2")})
    result = merge_refs(shop, "dev", "main")
    assert not result.conflicts
    with shop.read("main") as view:
        assert list(view.scan_prefix(TBL)) == []  # no orphan pointer left behind


def test_revert_never_conflicts_on_pointers(shop):
    write(shop, "main", {PART_PTR: pointer("second", computed=200)})
    second = shop.resolve("main").commit
    write(shop, "main", {PART_PTR: pointer("third", computed=300)})
    revert_commit(shop, "main", second)  # both changed since: no data moved, marked stale
    merged = read(shop, "main")
    assert merged["stale"] is True and merged["set"].endswith("/third")


def test_reduced_table_set_follows_the_partitions_data(shop):
    """A partitioned table's ``_table_`` set (reduced from its partitions' sets): the side on
    which any partition's data moved wins."""
    key = layout.pointer_key("shop", "orders", "_table_")
    write(shop, "main", {key: pointer("base")})
    shop.delete_branch("dev")
    shop.create_branch("dev", "main")
    write(shop, "dev", {key: pointer("dev", computed=50), pkey("2"): moved("2", numRows="9")})
    write(shop, "main", {key: pointer("main", computed=900)})
    merge_refs(shop, "dev", "main")
    assert read(shop, "main", key)["set"].endswith("/dev")


# --- partition drops and renames -------------------------------------------------------------
def test_partition_drop_and_rename_take_the_pointer_along(shop, tmp_path):
    """A dropped partition takes its pointer along (a partition re-created under that name
    must not be served the old data's statistics); a renamed one keeps it (same data)."""
    from hms_proxy.hms.family import Env
    from hms_proxy.hms.handler import connect
    from hms_proxy.hms.partitions import PartitionCalls
    from hms_proxy.hms.warehouse import Warehouse
    from hms_proxy.thrift.processor import CallContext

    calls = PartitionCalls(connect(Env(store=shop, warehouse=Warehouse(str(tmp_path / "wh")))))
    ctx = CallContext(ref="main")
    with shop.write("main") as txn:
        txn.put(layout.pointer_key("shop", "orders", "ds=2"), pointer("two"))
    renamed = partition("9")
    calls.rename_partition(ctx, "shop", "orders", ["1"], renamed)
    assert read(shop, "main", PART_PTR) is None
    assert read(shop, "main", layout.pointer_key("shop", "orders", "ds=9"))["set"].endswith("/base")
    calls.drop_partition(ctx, "shop", "orders", ["2"], False)
    assert read(shop, "main", layout.pointer_key("shop", "orders", "ds=2")) is None
