"""``hms-proxy stats reduce``: the table-level set of a partitioned table (re)built from the
partition sets its pointers name, no Spark. Sets are written with pyarrow as in
tests/stats/test_query.py; pointers go into an embedded store."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from hms_proxy import cli
from hms_proxy.hms.warehouse import local_path
from kvmodel import catalog as K
from kvmodel.store.local import LocalStore
from stats import frequencies, layout, query, reduce
from stats.sets import PartitionSet
from tests.kvmodel.test_versioning import database, partition, table, write
from tests.stats.test_query import COLUMNS, DATA, pointer, write_set


@pytest.fixture
def shop(tmp_path):
    """shop.orders partitioned by ds: ds=1 and ds=2 with current sets, ds=3 without one, ds=4
    with a set a merge marked stale; shop.flat unpartitioned; shop.bare without sets."""
    store = LocalStore(tmp_path / "store")
    loc = f"file:{tmp_path}/orders"
    sets = {p: write_set(loc, p, d) for p, d in DATA.items()}
    sets["ds=4"] = write_set(loc, "ds=4", DATA["ds=2"])
    flat = table("flat", columns=COLUMNS, location=f"file:{tmp_path}/flat")
    flat.partitionKeys = []
    write(store, "main", {
        K.db_key("shop"): database(),
        K.table_key("shop", "orders"): table(columns=COLUMNS, location=loc),
        K.table_key("shop", "bare"): table("bare", columns=COLUMNS,
                                           location=f"file:{tmp_path}/bare"),
        K.table_key("shop", "flat"): flat,
        **{K.part_key("shop", "orders", f"ds={d}"): partition(str(d)) for d in (1, 2, 3, 4)},
        K.part_key("shop", "bare", "ds=1"): partition("1", tbl="bare"),
        **{layout.pointer_key("shop", "orders", p): pointer(s) for p, s in sets.items()
           if p != "ds=4"},
        layout.pointer_key("shop", "orders", "ds=4"): pointer(sets["ds=4"], stale=True),
    }, "seed")
    store.close()
    yield str(tmp_path / "store"), sets


def run(capsys, *argv):
    code = cli.main(["stats", "reduce", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def table_pointer(path, ref="main"):
    store = LocalStore(path)
    try:
        return layout.read_pointer(store.get(ref, layout.pointer_key("shop", "orders",
                                                                     layout.TABLE_LEVEL))), \
            next(iter(store.log(ref, limit=1)))
    finally:
        store.close()


def expected(set_paths):
    sets = [PartitionSet(local_path(p)) for p in set_paths]
    return reduce.reduce_statistics(sets, frequencies=frequencies.table_frequencies(sets))


def test_reduce_builds_the_table_level_from_current_sets(shop, capsys):
    path, sets = shop
    code, out, err = run(capsys, "shop.orders", "--store", path, "--author", "dora")
    assert code == 0, err
    assert "stats reduce shop.orders" in out
    assert ("table-level statistics reduced from 2 of 4 partitions' sets (2 rows); "
            "1 stale skipped: ds=4; 1 without statistics: ds=3") in out
    tp, commit = table_pointer(path)
    assert commit.message == "stats reduce shop.orders (2 partitions)" and commit.author == "dora"
    assert tp["set"].startswith(sets["ds=1"].split("/_stats/")[0] + "/_stats/_table_/")
    assert tp["schema"] == layout.schema_fingerprint(COLUMNS)
    got = pq.read_table(local_path(tp["set"]) + "/" + layout.STATISTICS)
    assert got.to_pylist() == expected([sets["ds=1"], sets["ds=2"]]).to_pylist()
    ts = query.open_table(path, "shop.orders")
    assert ts.source() == tp["set"] and not ts.is_stale()


def test_reduce_again_after_a_partition_is_dropped(shop, capsys):
    path, sets = shop
    assert run(capsys, "shop.orders", "--store", path)[0] == 0
    first, _ = table_pointer(path)
    store = LocalStore(path)
    try:
        write(store, "main", {K.part_key("shop", "orders", "ds=2"): None}, "drop ds=2")
    finally:
        store.close()
    code, out, err = run(capsys, "shop.orders", "--store", path, "--bins", "3")
    assert code == 0, err
    assert "reduced from 1 of 3 partitions' sets" in out
    second, _ = table_pointer(path)
    assert second["set"] != first["set"]
    got = pq.read_table(local_path(second["set"]) + "/" + layout.STATISTICS)
    assert got.to_pylist() == expected([sets["ds=1"]]).to_pylist()


def test_reduce_errors(shop, capsys):
    path, _ = shop
    code, _, err = run(capsys, "shop.bare", "--store", path)
    assert code == 1 and err.strip() == ("hms-proxy: error: table-level statistics not "
                                         "written: no partition of shop.bare has a current "
                                         "statistics set")
    code, _, err = run(capsys, "shop.flat", "--store", path)
    assert code == 2 and "shop.flat is not partitioned" in err
    code, _, err = run(capsys, "shop.nope", "--store", path)
    assert code == 1 and err.startswith("hms-proxy: error: no table shop.nope")
    code, _, err = run(capsys, "shop.orders", "--store", path, "--ref", "nobranch")
    assert code == 1 and "nobranch" in err
    code, _, err = run(capsys, "orders", "--store", path)
    assert code == 2 and "DB.TABLE" in err
    code, _, err = run(capsys, "shop.orders", "--store", path, "--redis",
                       "redis://127.0.0.1:1/0")
    assert code == 2 and err.startswith("hms-proxy: error: "), err
    assert table_pointer(path)[0] is None


def test_distributions_answer_which_partitions_hold_a_value(shop, capsys):
    """``stats reduce --distributions`` records, per value of each discrete column, the
    partitions holding it; ``stats show --holding COL=VALUE`` answers from them."""
    import json

    path, _ = shop
    code, out, err = run(capsys, "shop.orders", "--store", path)
    assert code == 0, err
    code = cli.main(["stats", "show", "shop.orders", "--store", path, "--holding", "name=b"])
    out, err = capsys.readouterr()
    assert code == 1 and "without per-partition distributions" in err and "--distributions" in err
    code, out, err = run(capsys, "shop.orders", "--store", path, "--distributions")
    assert code == 0, err
    ts = query.open_table(path, "shop.orders")
    # name: a a b a c a in ds=1 (nulls aside), b b d in ds=2
    assert ts.holding("name", "b") == {"ds=1": 1, "ds=2": 2}
    assert ts.holding("name", "a") == {"ds=1": 3}
    assert ts.holding("name", "zzz") == {}
    assert ts.holding("id", "6") == {"ds=2": 1}
    with pytest.raises(query.QueryError, match="not a discrete column"):
        ts.holding("price", "2.5")
    code = cli.main(["stats", "show", "shop.orders", "--store", path, "--holding", "name=b",
                     "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["partitions"] == {"ds=1": 1, "ds=2": 2}
    code = cli.main(["stats", "show", "shop.orders", "--store", path, "--holding", "name=a"])
    out, err = capsys.readouterr()
    assert code == 0 and "ds=1" in out and "ds=2" not in out
    code = cli.main(["stats", "show", "shop.orders", "--store", path, "--holding", "nameb"])
    out, err = capsys.readouterr()
    assert code == 1 and "COL=VALUE" in err
