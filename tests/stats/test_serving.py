"""Column statistics served from computed statistics sets (stats/serving.py).

The same numbers go into the stock HMS (the oracle) through update_*_column_statistics and
into our store as statistics sets (parquet files per stats/layout.py) and catalog pointers;
the five HMS statistics calls must answer the same on both servers.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from thrift.Thrift import TApplicationException, TException

from hms_proxy.hms.warehouse import local_path
from kvmodel.store import open_store
from kvmodel.store.cache import LRUCache
from stats import layout, serving
from tests.hms.conformance.builders import cols, database, partition, table
from tests.support.client import connect
from tests.support.client import ttypes as T

DB = "s3sv_db"


# --- writing sets and pointers, as the compute job does ---------------------------------------
def stat_row(column, type_, **values):
    row = dict.fromkeys(layout.STATISTICS_SCHEMA.names)
    row.update(column=column, type=type_, **values)
    return row


def write_set(location: str, partition_name: str | None, rows: list[dict]) -> str:
    """A statistics set (all four files) under the table location; returns its path."""
    set_path = layout.set_dir(location, partition_name, layout.new_set_id())
    local = local_path(set_path)
    os.makedirs(local)
    pq.write_table(pa.Table.from_pylist(rows, schema=layout.STATISTICS_SCHEMA),
                   os.path.join(local, layout.STATISTICS))
    pq.write_table(layout.FREQUENCIES_SCHEMA.empty_table(),
                   os.path.join(local, layout.FREQUENCIES))
    numeric = [r["column"] for r in rows if layout.is_numeric(r["type"])]
    pq.write_table(pa.schema([(c, layout.BIN) for c in numeric]).empty_table(),
                   os.path.join(local, layout.HISTOGRAMS))
    pq.write_table(layout.SKETCHES_SCHEMA.empty_table(), os.path.join(local, layout.SKETCHES))
    return set_path


def put_pointer(store, tbl: T.Table, partition_name: str | None, set_path: str, *,
                schema_cols=None, stale: bool = False) -> int:
    """Point the catalog (branch main, staged) at a set; returns its computed time."""
    import json

    value = layout.make_pointer(set_path, None,
                                layout.schema_fingerprint(schema_cols or tbl.sd.cols),
                                rows=10, data="")
    if stale:
        pointer = json.loads(value)
        pointer["stale"] = True
        value = json.dumps(pointer, sort_keys=True, separators=(",", ":")).encode()
    with store.write("main") as txn:
        txn.put(layout.pointer_key(tbl.dbName, tbl.tableName, partition_name), value)
    return layout.read_pointer(value)["computed"]


# --- the numbers -----------------------------------------------------------------------------
FLAT_COLS = cols("ti tinyint", "i int", "l bigint", "d double", "f float", "dec decimal(10,2)",
                 "dt date", "s string", "v varchar(20)", "c char(5)", "flag boolean",
                 "bin binary", "nostats string")

FLAT_ROWS = [
    stat_row("ti", "tinyint", count=10, null_count=0, distinct_count=4, min="-3", max="7",
             min_value=-3.0, max_value=7.0),
    stat_row("i", "int", count=10, null_count=1, distinct_count=9, min="1", max="100",
             min_value=1.0, max_value=100.0),
    stat_row("l", "bigint", count=10, null_count=2, distinct_count=8,
             min="-9007199254740993", max="9007199254740993",
             min_value=-9007199254740992.0, max_value=9007199254740992.0),
    stat_row("d", "double", count=10, null_count=0, distinct_count=10, min="-1.5", max="2.25",
             min_value=-1.5, max_value=2.25),
    stat_row("f", "float", count=10, null_count=3, distinct_count=5, min="0.5", max="8.0",
             min_value=0.5, max_value=8.0),
    stat_row("dec", "decimal(10,2)", count=10, null_count=1, distinct_count=6, min="1.50",
             max="99.99", min_value=1.5, max_value=99.99),
    stat_row("dt", "date", count=10, null_count=0, distinct_count=3, min="2020-01-01",
             max="2021-06-30", min_value=18262.0, max_value=18808.0),
    stat_row("s", "string", count=10, null_count=4, distinct_count=5, min="a", max="zz",
             avg_length=3.5, max_length=12),
    stat_row("v", "varchar(20)", count=10, null_count=0, distinct_count=2, min="x", max="y",
             avg_length=1.0, max_length=1),
    stat_row("c", "char(5)", count=10, null_count=0, distinct_count=1, min="abcde",
             max="abcde", avg_length=5.0, max_length=5),
    stat_row("flag", "boolean", count=10, null_count=1, distinct_count=2, true_count=6,
             false_count=3),
    stat_row("bin", "binary", count=10, null_count=2, avg_length=8.5, max_length=16),
]


def dec(text):
    from hms_proxy.hms.aggregate import decimal_struct

    return decimal_struct(text, T)


def obj(name, type_, **kind):
    (attr, value), = kind.items()
    return T.ColumnStatisticsObj(colName=name, colType=type_,
                                 statsData=T.ColumnStatisticsData(**{attr: value}))


# What a client would write for the same numbers (built by hand, not by stats.serving).
FLAT_OBJS = [
    obj("ti", "tinyint", longStats=T.LongColumnStatsData(-3, 7, 0, 4)),
    obj("i", "int", longStats=T.LongColumnStatsData(1, 100, 1, 9)),
    obj("l", "bigint", longStats=T.LongColumnStatsData(-9007199254740993, 9007199254740993,
                                                        2, 8)),
    obj("d", "double", doubleStats=T.DoubleColumnStatsData(-1.5, 2.25, 0, 10)),
    obj("f", "float", doubleStats=T.DoubleColumnStatsData(0.5, 8.0, 3, 5)),
    obj("dec", "decimal(10,2)", decimalStats=T.DecimalColumnStatsData(dec("1.50"), dec("99.99"),
                                                                       1, 6)),
    obj("dt", "date", dateStats=T.DateColumnStatsData(T.Date(18262), T.Date(18808), 0, 3)),
    obj("s", "string", stringStats=T.StringColumnStatsData(12, 3.5, 4, 5)),
    obj("v", "varchar(20)", stringStats=T.StringColumnStatsData(1, 1.0, 0, 2)),
    obj("c", "char(5)", stringStats=T.StringColumnStatsData(5, 5.0, 0, 1)),
    obj("flag", "boolean", booleanStats=T.BooleanColumnStatsData(6, 3, 1)),
    obj("bin", "binary", binaryStats=T.BinaryColumnStatsData(16, 8.5, 2)),
]
# Client-written on both servers for `s` (the computed row above differs: the client wins).
CLIENT_S = obj("s", "string", stringStats=T.StringColumnStatsData(40, 20.25, 1, 2))

PT_COLS = cols("id bigint", "name string", "score double", "day date")
PT_PARTS = ["d1", "d2", "d3", "d4"]
# partition -> rows of its set (d4 has none: extrapolation in get_aggr_stats_for). No two
# partitions tie on a statistic: HMS extrapolates from the first and last rows of an ORDER BY
# that statistic, and Derby orders ties as it likes.
PT_ROWS = {
    "d1": [stat_row("id", "bigint", count=5, null_count=0, distinct_count=5, min="1", max="5",
                    min_value=1.0, max_value=5.0),
           stat_row("name", "string", count=5, null_count=1, distinct_count=4, min="a",
                    max="d", avg_length=2.5, max_length=4),
           stat_row("score", "double", count=5, null_count=0, distinct_count=5, min="0.5",
                    max="4.5", min_value=0.5, max_value=4.5),
           stat_row("day", "date", count=5, null_count=0, distinct_count=2, min="2024-01-01",
                    max="2024-01-02", min_value=19723.0, max_value=19724.0)],
    "d2": [stat_row("id", "bigint", count=7, null_count=2, distinct_count=6, min="10",
                    max="40", min_value=10.0, max_value=40.0),
           stat_row("name", "string", count=7, null_count=0, distinct_count=7, min="e",
                    max="k", avg_length=6.0, max_length=9),
           stat_row("score", "double", count=7, null_count=1, distinct_count=6, min="-2.0",
                    max="8.0", min_value=-2.0, max_value=8.0),
           stat_row("day", "date", count=7, null_count=3, distinct_count=1, min="2024-02-01",
                    max="2024-02-01", min_value=19754.0, max_value=19754.0)],
    "d3": [stat_row("id", "bigint", count=3, null_count=0, distinct_count=3, min="100",
                    max="300", min_value=100.0, max_value=300.0),
           stat_row("score", "double", count=3, null_count=0, distinct_count=1, min="1.0",
                    max="1.0", min_value=1.0, max_value=1.0)],
}
PT_OBJS = {
    "d1": [obj("id", "bigint", longStats=T.LongColumnStatsData(1, 5, 0, 5)),
           obj("name", "string", stringStats=T.StringColumnStatsData(4, 2.5, 1, 4)),
           obj("score", "double", doubleStats=T.DoubleColumnStatsData(0.5, 4.5, 0, 5)),
           obj("day", "date", dateStats=T.DateColumnStatsData(T.Date(19723), T.Date(19724),
                                                                0, 2))],
    "d2": [obj("id", "bigint", longStats=T.LongColumnStatsData(10, 40, 2, 6)),
           obj("name", "string", stringStats=T.StringColumnStatsData(9, 6.0, 0, 7)),
           obj("score", "double", doubleStats=T.DoubleColumnStatsData(-2.0, 8.0, 1, 6)),
           obj("day", "date", dateStats=T.DateColumnStatsData(T.Date(19754), T.Date(19754),
                                                                3, 1))],
    "d3": [obj("id", "bigint", longStats=T.LongColumnStatsData(100, 300, 0, 3)),
           obj("score", "double", doubleStats=T.DoubleColumnStatsData(1.0, 1.0, 0, 1))],
}
CLIENT_D3_NAME = obj("name", "string", stringStats=T.StringColumnStatsData(3, 1.5, 0, 3))


def _stats(tbl, part_name, stamp, objs):
    desc = T.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=DB,
                                  tableName=tbl, partName=part_name, lastAnalyzed=stamp)
    return T.ColumnStatistics(statsDesc=desc, statsObj=list(objs))


# --- the two servers -----------------------------------------------------------------------
def _create(client):
    try:
        client.drop_database(DB, True, True)
    except TException:
        pass
    client.create_database(database(DB))
    client.create_table(table(DB, "flat", FLAT_COLS))
    pt = table(DB, "pt", PT_COLS, partition_keys=cols("ds string"))
    client.create_table(pt)
    client.add_partitions([partition(pt, [d]) for d in PT_PARTS])
    client.update_table_column_statistics(_stats("flat", None, 1700000000, [CLIENT_S]))
    client.update_partition_column_statistics(_stats("pt", "ds=d3", 1700000000,
                                                     [CLIENT_D3_NAME]))


def _setup_proxy(client, store) -> dict:
    """Tables, client statistics, and the computed sets with their pointers; returns the
    pointers' computed times."""
    _create(client)
    stamps = {}
    flat = client.get_table(DB, "flat")
    stamps[None] = put_pointer(store, flat, None, write_set(flat.sd.location, None, FLAT_ROWS))
    pt = client.get_table(DB, "pt")
    for d, rows in PT_ROWS.items():
        name = f"ds={d}"
        stamps[name] = put_pointer(store, pt, name, write_set(pt.sd.location, name, rows))
    return stamps


def _setup_oracle(client, stamps):
    _create(client)
    client.update_table_column_statistics(
        _stats("flat", None, stamps[None], [o for o in FLAT_OBJS if o.colName != "s"]))
    for d, objs in PT_OBJS.items():
        name = f"ds={d}"
        client.update_partition_column_statistics(_stats("pt", name, stamps[name], objs))


def _answers(client, stamps: list) -> list:
    """What the five calls answer, normalised (objects sorted by column; the descriptors'
    lastAnalyzed go to ``stamps``)."""
    def call(fn, *args):
        try:
            result = fn(*args)
        except TApplicationException as exc:
            return ("TApplicationException", exc.type)
        except TException as exc:
            return (type(exc).__name__, getattr(exc, "message", None))
        if isinstance(result, T.ColumnStatistics):  # HMS stamps the time of the update
            desc = result.statsDesc
            stamps.extend((desc.partName, o.colName, desc.lastAnalyzed) for o in result.statsObj)
            result.statsDesc.lastAnalyzed = "<time>"
        return result

    def by_col(objs):
        return sorted(objs or [], key=lambda o: o.colName)

    out = []
    for c in [c.name for c in FLAT_COLS] + ["nocol"]:
        out.append(("table col", c, call(client.get_table_column_statistics, DB, "flat", c)))
    every = [c.name for c in FLAT_COLS] + ["nocol"]
    res = call(client.get_table_statistics_req, T.TableStatsRequest(DB, "flat", every))
    out.append(("table req", by_col(res.tableStats) if hasattr(res, "tableStats") else res))
    for d in PT_PARTS + ["zz"]:
        for c in ["id", "name", "score", "day", "nocol"]:
            out.append(("part col", d, c, call(client.get_partition_column_statistics, DB, "pt",
                                                 f"ds={d}", c)))
    names = ["id", "name", "score", "day"]
    for parts in (PT_PARTS + ["zz"], ["d1", "d2"], ["d2", "d3", "d4"], ["d1", "d2", "d3"],
                  ["d4"]):
        pnames = [f"ds={d}" for d in parts]
        res = call(client.get_partitions_statistics_req,
                   T.PartitionsStatsRequest(DB, "pt", names, pnames))
        out.append(("parts req", parts, {k: by_col(v) for k, v in res.partStats.items()}
                    if hasattr(res, "partStats") else res))
        res = call(client.get_aggr_stats_for, T.PartitionsStatsRequest(DB, "pt", names, pnames))
        out.append(("aggr", parts, (by_col(res.colStats), res.partsFound)
                    if hasattr(res, "colStats") else res))
    res = call(client.get_table_statistics_req, T.TableStatsRequest(DB, "pt", names))
    out.append(("partitioned table req", by_col(res.tableStats)))
    return out


def fresh_database(client, db: str) -> None:
    """``db`` created empty (dropped first, with its tables, when a run left it behind)."""
    try:
        client.drop_database(db, True, True)
    except TException:
        pass
    client.create_database(database(db))


def _store_of(proc):
    return open_store(Path(proc.workdir) / "store")


@pytest.mark.oracle
def test_served_statistics_match_the_oracle(oracle, proxy):
    started = int(time.time())
    store = _store_of(proxy)
    try:
        with connect(proxy) as client:
            stamps = _setup_proxy(client, store)
            ours = _answers(client, our_stamps := [])
        with connect(oracle) as client:
            _setup_oracle(client, stamps)
            theirs = _answers(client, [])
            client.drop_database(DB, True, True)
        with connect(proxy) as client:
            client.drop_database(DB, True, True)
    finally:
        store.close()
    assert len(ours) == len(theirs)
    differ = [f"{mine[:-1]}:\n  ours {mine[-1]}\n  HMS  {hms[-1]}"
              for mine, hms in zip(ours, theirs) if mine != hms]
    assert not differ, "\n".join(differ)
    # HMS stamps lastAnalyzed with the time of the update; a computed set's is the time the
    # pointer says it was computed
    client_written = {(None, "s"), ("ds=d3", "name")}
    assert our_stamps and all((stamp >= started) if (part, col) in client_written
                              else stamp == stamps[part]
                              for part, col, stamp in our_stamps)
    # something was served at all (not two empty answers)
    served = dict((a[1], a[2]) for a in ours if a[0] == "table col")
    assert served["l"].statsObj[0].statsData.longStats.lowValue == -9007199254740993
    assert served["s"].statsObj[0].statsData.stringStats.maxColLen == 40  # the client's


# --- staleness and caching (our server alone) ------------------------------------------------
def test_stale_sets(proxy):
    store = _store_of(proxy)
    db = "s3sv_stale"
    try:
        with connect(proxy) as client:
            fresh_database(client, db)
            client.create_table(table(db, "t", cols("id bigint", "name string", "x int")))
            t = client.get_table(db, "t")
            # computed when `id` was an int and `gone` existed: a different schema
            old = cols("id int", "name string", "gone double", "x int")
            rows = [stat_row("id", "int", null_count=0, distinct_count=3, min="1", max="3"),
                    stat_row("name", "string", null_count=0, distinct_count=2, avg_length=1.0,
                             max_length=1),
                    stat_row("gone", "double", null_count=0, distinct_count=1, min_value=1.0,
                             max_value=1.0),
                    stat_row("x", "INT", null_count=1, distinct_count=1, min="5", max="5")]
            path = write_set(t.sd.location, None, rows)
            pointer = {"set": path, "schema": layout.schema_fingerprint(old)}
            assert serving.is_stale(pointer, t)
            assert not serving.is_stale({"set": path,
                                         "schema": layout.schema_fingerprint(t.sd.cols)}, t)
            assert serving.is_stale({"set": path, "stale": True,
                                     "schema": layout.schema_fingerprint(t.sd.cols)}, t)
            put_pointer(store, t, None, path, schema_cols=old)
            res = client.get_table_statistics_req(
                T.TableStatsRequest(db, "t", ["id", "name", "gone", "x"]))
            assert [o.colName for o in res.tableStats] == ["name", "x"]
            assert res.tableStats[1].statsData.longStats.lowValue == 5
            # a pointer a merge marked stale serves nothing
            put_pointer(store, t, None, path, stale=True)
            res = client.get_table_statistics_req(
                T.TableStatsRequest(db, "t", ["id", "name", "x"]))
            assert res.tableStats == []
            # a set that is gone serves nothing either (and does not fail the call)
            put_pointer(store, t, None, path.replace(layout.STATS_DIR, "_nothing_here"))
            res = client.get_table_statistics_req(T.TableStatsRequest(db, "t", ["id"]))
            assert res.tableStats == []
            client.drop_database(db, True, True)
    finally:
        store.close()


def test_rows_are_read_once_per_set_and_column(tmp_path):
    path = write_set(str(tmp_path / "tbl"), None, FLAT_ROWS)
    cache = LRUCache(1 << 20)
    rows = serving.read_rows(path, ["i", "s", "absent"], cache)
    assert sorted(rows) == ["i", "s"]
    assert set(rows["i"]) == set(serving.SERVED_FIELDS)  # a projection
    os.remove(os.path.join(local_path(path), layout.STATISTICS))
    again = serving.read_rows(path, ["s", "absent", "i"], cache)  # from the cache alone
    assert again == rows
    with pytest.raises(OSError):
        serving.read_rows(path, ["l"], cache)


def test_types_mapping():
    row = stat_row("ts", "timestamp", null_count=1, distinct_count=2,
                   min_value=1_600_000_000_500_000.0, max_value=1_700_000_000_000_000.0)
    data = serving.to_stats_data("timestamp", row, T)
    assert (data.longStats.lowValue, data.longStats.highValue) == (1600000000, 1700000000)
    assert serving.to_stats_data("array<int>", row, T) is None
    empty = stat_row("s", "string", null_count=5, distinct_count=0)  # all nulls
    data = serving.to_stats_data("varchar(3)", empty, T)
    assert data.stringStats == T.StringColumnStatsData(0, 0.0, 5, 0)


def test_partitioned_table_level_from_the_reduced_set(proxy):
    """A partitioned table's table-level statistics: its ``_table_`` set (stats.reduce)."""
    store = _store_of(proxy)
    db = "s3sv_reduced"
    try:
        with connect(proxy) as client:
            fresh_database(client, db)
            client.create_table(table(db, "t", cols("id bigint"), partition_keys=cols("ds string")))
            t = client.get_table(db, "t")
            rows = [stat_row("id", "bigint", null_count=0, distinct_count=9, min="1", max="9")]
            stamp = put_pointer(store, t, serving.TABLE_LEVEL,
                                write_set(t.sd.location, serving.TABLE_LEVEL, rows))
            got = client.get_table_column_statistics(db, "t", "id")
            assert got.statsDesc == T.ColumnStatisticsDesc(True, db, "t", None, stamp)
            assert got.statsObj[0].statsData.longStats == T.LongColumnStatsData(1, 9, 0, 9)
            res = client.get_table_statistics_req(T.TableStatsRequest(db, "t", ["id"]))
            assert res.tableStats == got.statsObj
            client.drop_database(db, True, True)
    finally:
        store.close()


def test_a_renamed_table_keeps_its_statistics(proxy):
    """Pointers follow a rename; a managed table's directory moves, its sets with it."""
    store = _store_of(proxy)
    db = "s3sv_rename"
    try:
        with connect(proxy) as client:
            fresh_database(client, db)
            client.create_table(table(db, "t", cols("id bigint")))
            t = client.get_table(db, "t")
            rows = [stat_row("id", "bigint", null_count=0, distinct_count=2, min="1", max="2")]
            put_pointer(store, t, None, write_set(t.sd.location, None, rows))
            t.tableName = "renamed"
            client.alter_table(db, "t", t)
            moved = client.get_table(db, "renamed")
            assert moved.sd.location != t.sd.location
            with store.read("main") as view:
                pointer = layout.read_pointer(view.get(layout.pointer_key(db, "renamed", None)))
                assert view.get(layout.pointer_key(db, "t", None)) is None
            assert pointer["set"].startswith(moved.sd.location + "/_stats/_/")
            assert os.path.isdir(local_path(pointer["set"]))
            res = client.get_table_statistics_req(T.TableStatsRequest(db, "renamed", ["id"]))
            assert res.tableStats[0].statsData.longStats == T.LongColumnStatsData(1, 2, 0, 2)
            client.drop_database(db, True, True)
    finally:
        store.close()


# --- statistics in the parameters of tables and partitions (hms_proxy/hms/served_props.py) --
def test_partitions_are_answered_with_spark_statistics_never_stored(proxy):
    """The set's statistics ride in the partition's parameters in every listing call, the
    stored partition does not hold them, and writing back what was read stores nothing of
    them; a client's own differing values are stored whole, column by column, and win."""
    import json

    store = _store_of(proxy)
    db, stats = "s3sv_props", "spark.sql.statistics."
    try:
        with connect(proxy) as client:
            fresh_database(client, db)
            client.create_table(table(db, "t", cols("a int", "s string", "m map<string,int>"),
                                      partition_keys=cols("ds string")))
            t = client.get_table(db, "t")
            client.add_partition(partition(t, ["1"]))
            rows = [stat_row("a", "int", count=10, null_count=1, distinct_count=9, min="1",
                             max="100", min_value=1.0, max_value=100.0),
                    stat_row("s", "string", count=10, null_count=0, distinct_count=5,
                             avg_length=3.5, max_length=12),
                    stat_row("m", "map<string,int>", count=10, null_count=0)]
            path = write_set(t.sd.location + "/ds=1", "ds=1", rows)
            pointer = json.loads(layout.make_pointer(
                path, None, layout.schema_fingerprint(t.sd.cols), rows=10,
                data="x|files=1|bytes=777|mtime=0"))
            with store.write("main") as txn:
                txn.put(layout.pointer_key(db, "t", "ds=1"),
                        json.dumps(pointer, sort_keys=True).encode())

            answers = [client.get_partition(db, "t", ["1"]),
                       client.get_partition_by_name(db, "t", "ds=1"),
                       client.get_partitions(db, "t", -1)[0],
                       client.get_partitions_by_names(db, "t", ["ds=1"])[0],
                       client.get_partitions_by_filter(db, "t", "ds = '1'", -1)[0],
                       client.get_partitions_ps(db, "t", ["1"], -1)[0]]
            for got in answers:
                p = got.parameters
                assert (p[stats + "totalSize"], p[stats + "numRows"], p["numRows"]) == \
                    ("777", "10", "10")
                assert p[stats + "colStats.a.distinctCount"] == "9"
                assert p[stats + "colStats.a.min"] == "1" and p[stats + "colStats.a.max"] == "100"
                assert p[stats + "colStats.s.avgLen"] == "4"
                assert not [k for k in p if ".colStats.m." in k]  # complex: none, as Spark
            table_answer = client.get_table(db, "t").parameters  # no table-level set
            assert not [k for k in table_answer if k.startswith(stats)]

            def stored():
                from hms_proxy.thrift.gen.hive_metastore import ttypes
                from kvmodel import codec

                raw = store.get("main", f"db/{db}/table/t/part/ds=1")
                return codec.decode(ttypes.Partition, raw).parameters

            assert not [k for k in stored() if k.startswith(stats) or k == "numRows"]
            # written back as read (Hive, Trino, Spark's ALTER): nothing of it is stored
            echo = client.get_partition(db, "t", ["1"])
            echo.parameters["team"] = "ads"
            client.alter_partition(db, "t", echo)
            assert stored()["team"] == "ads"
            assert not [k for k in stored() if k.startswith(stats) or k == "numRows"]
            # a client's own statistics of a: stored whole (this group differs), and answered
            mine = client.get_partition(db, "t", ["1"])
            mine.parameters[stats + "colStats.a.distinctCount"] = "42"
            client.alter_partition(db, "t", mine)
            own = stored()
            assert own[stats + "colStats.a.distinctCount"] == "42"
            assert own[stats + "colStats.a.version"] == "2"
            assert not [k for k in own if ".colStats.s." in k]
            p = client.get_partition(db, "t", ["1"]).parameters
            assert p[stats + "colStats.a.distinctCount"] == "42"
            assert p[stats + "colStats.s.distinctCount"] == "5"
            client.drop_database(db, True, True)
    finally:
        store.close()
