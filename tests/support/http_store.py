"""A store for the HTTP API's tests, built without Spark: real HMS structs under the catalog's
keys (the builders of ``tests/kvmodel/test_versioning.py``) and statistics sets written with
pyarrow exactly per ``stats/layout.py`` (``tests/stats/test_query.py``'s writer).

main: databases default and shop, table shop.orders (partitioned by ds; ds=1..3, sets for ds=1 and ds=2),
shop.flat (unpartitioned, with a set), tag v1. Branch dev: column ``discount`` added to
orders, partitions ds=4..6 added, ds=3 dropped, orders' property ``owner_team=growth`` (main
has ``finance``: a conflict), table shop.events added. Branch scratch (to delete), protected
branch prod, branch dirty (uncommitted changes), branch narrow (orders without column flag: a
merge into prod is vetoed by the built-in safe_schema_evolution hook).
"""
from __future__ import annotations

from pathlib import Path

from kvmodel import catalog as K
from kvmodel import codec
from kvmodel.store.local import LocalStore
from stats import layout
from tests.kvmodel.test_versioning import database, partition, table, write
from tests.stats.test_query import COLUMNS, DATA, pointer, write_set


def build(root: Path) -> Path:
    """The store at ``root/store`` (returned)."""
    root.mkdir(parents=True, exist_ok=True)
    store_path = root / "store"
    store = LocalStore(store_path)
    try:
        loc = f"file:{root}/orders"
        sets = {p: write_set(loc, p, d) for p, d in DATA.items()}
        flat_loc = f"file:{root}/flat"
        flat_set = write_set(flat_loc, None, DATA["ds=1"])
        flat = table("flat", columns=COLUMNS, location=flat_loc)
        flat.partitionKeys = []
        write(store, "main", {
            K.db_key("default"): database("default"),  # (serve adds it to a branch lacking it)
            K.db_key("shop"): database(description="the shop"),
            K.table_key("shop", "orders"): table(columns=COLUMNS, location=loc,
                                                 params={"owner_team": "core"}),
            K.table_key("shop", "flat"): flat,
            **{K.part_key("shop", "orders", f"ds={d}"): partition(str(d)) for d in (1, 2, 3)},
            **{layout.pointer_key("shop", "orders", p): pointer(s) for p, s in sets.items()},
            layout.pointer_key("shop", "flat", None): pointer(flat_set),
        }, "seed: shop.orders, shop.flat")
        store.create_tag("v1", "main")
        for name in ("dev", "scratch", "prod", "dirty"):
            store.create_branch(name, "main")
        store.set_branch_protection("prod", True)
        dev_orders = table(columns=COLUMNS + (("discount", "double"),), location=loc,
                           params={"owner_team": "growth"})
        write(store, "dev", {
            K.table_key("shop", "orders"): dev_orders,
            **{K.part_key("shop", "orders", f"ds={d}"): partition(str(d)) for d in (4, 5, 6)},
            K.part_key("shop", "orders", "ds=3"): None,
            K.table_key("shop", "events"): table("events", columns=(("id", "bigint"),)),
        }, "dev: discount column, days 4-6")
        write(store, "main", {K.table_key("shop", "orders"): table(
            columns=COLUMNS, location=loc, params={"owner_team": "finance"})},
            "main: finance owns orders")
        store.create_branch("narrow", "main")
        write(store, "narrow", {K.table_key("shop", "orders"): table(
            columns=COLUMNS[:-1], location=loc, params={"owner_team": "finance"})},
            "narrow: drop column flag")
        with store.write("dirty") as txn:
            txn.put(K.db_key("staged"), codec.encode(database("staged")))
    finally:
        store.close()
    return store_path
