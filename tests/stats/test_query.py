"""The query API (stats/query.py) and ``hms-proxy stats show``.

Statistics sets are written with pyarrow exactly per stats/layout.py (values computed here from
the data), pointers go into an embedded store; no Spark.
"""
from __future__ import annotations

import io
import json
import math
import os
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hms_proxy import cli
from hms_proxy.cli import stats as cli_stats
from hms_proxy.hms.warehouse import local_path
from kvmodel import catalog as K
from kvmodel.store.local import LocalStore
from stats import layout, query, reduce
from tests.kvmodel.test_versioning import database, partition, table, write

COLUMNS = (("id", "bigint"), ("name", "string"), ("price", "double"), ("day", "date"),
           ("flag", "boolean"))
BINS = 4


# --- sets written from data, as the compute job does -------------------------------------------
def stat_row(name, htype, values):
    present = [v for v in values if v is not None]
    row = dict.fromkeys(layout.STATISTICS_SCHEMA.names)
    row.update(column=name, type=htype, count=len(values), null_count=len(values) - len(present),
               distinct_count=len(set(present)), distinct_exact=True)
    if not present:
        return row
    if htype == "boolean":
        row.update(true_count=sum(1 for v in present if v), false_count=sum(1 for v in present
                                                                            if not v))
        return row
    if htype == "string":
        row.update(min=min(present), max=max(present),
                   avg_length=sum(len(v) for v in present) / len(present),
                   max_length=max(len(v) for v in present))
        return row
    nums = np.array(present, dtype=np.float64)
    text = str if htype != "date" else (lambda d: str(np.datetime64(int(d), "D")))
    row.update(min=text(min(present)), max=text(max(present)), min_value=float(nums.min()),
               max_value=float(nums.max()), mean=float(nums.mean()), stddev=float(nums.std()),
               sum=float(nums.sum()), percentiles_exact=True)
    for p in layout.PERCENTILES:
        row[layout.percentile_name(p)] = float(np.percentile(nums, p))
    return row


def write_set(location, part, data: dict, types=COLUMNS, freq_page=None):
    """All four files of one set for ``data`` ({column: values}); returns the set path."""
    path = layout.set_dir(location, part, layout.new_set_id())
    local = local_path(path)
    os.makedirs(local)
    rows = [stat_row(n, t, data[n]) for n, t in types]
    layout.write_statistics(pa.Table.from_pylist(rows, schema=layout.STATISTICS_SCHEMA),
                            os.path.join(local, layout.STATISTICS))
    with layout.frequencies_writer(os.path.join(local, layout.FREQUENCIES)) as w:
        for n, t in types:
            if not layout.is_discrete(t):
                continue
            text = {"boolean": lambda v: str(v).lower(),
                    "date": lambda v: str(np.datetime64(int(v), "D"))}.get(t, str)
            counts = Counter(text(v) for v in data[n] if v is not None)
            items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            part_t = pa.table({"column": [n] * len(items), "value": [k for k, _ in items],
                               "frequency": [c for _, c in items]},
                              schema=layout.FREQUENCIES_SCHEMA)
            w.write_table(part_t, row_group_size=max(len(items), 1))
    hists = {}
    for n, t in types:
        if layout.is_numeric(t):
            vals = np.array([v for v in data[n] if v is not None], dtype=np.float64)
            counts, edges = np.histogram(vals, bins=BINS)
            hists[n] = [{"lower": float(edges[i]), "upper": float(edges[i + 1]),
                         "count": int(counts[i])} for i in range(BINS)]
    pq.write_table(pa.table({n: pa.array(b, layout.BIN) for n, b in hists.items()}),
                   os.path.join(local, layout.HISTOGRAMS), row_group_size=2)
    sketches = [{"column": n, "hll": reduce.hll_registers(reduce.spark_xxhash64(
        [v for v in data[n] if v is not None], t)).tobytes()} for n, t in types]
    pq.write_table(pa.Table.from_pylist(sketches, schema=layout.SKETCHES_SCHEMA),
                   os.path.join(local, layout.SKETCHES))
    return path


def pointer(path, columns=COLUMNS, **extra) -> bytes:
    value = json.loads(layout.make_pointer(path, None, layout.schema_fingerprint(columns), 1))
    value.update(extra)
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


DATA = {
    "ds=1": {"id": [1, 2, 3, 4, None], "name": ["a", "b", "a", "c", "a"],
             "price": [1.0, 2.5, 2.5, 10.0, 4.0], "day": [18262, 18263, 18263, 18270, None],
             "flag": [True, False, True, None, True]},
    "ds=2": {"id": [5, 6, 7], "name": ["b", "b", "d"], "price": [20.0, 30.0, None],
             "day": [18300, 18301, 18302], "flag": [False, False, True]},
}


@pytest.fixture
def shop(tmp_path):
    """shop.orders (partitioned by ds; ds=1, ds=2, ds=3 without statistics), sets for ds=1 and
    ds=2 on main; shop.flat (unpartitioned) with a set."""
    store = LocalStore(tmp_path / "store")
    loc = f"file:{tmp_path}/orders"
    sets = {p: write_set(loc, p, d) for p, d in DATA.items()}
    flat_loc = f"file:{tmp_path}/flat"
    flat_set = write_set(flat_loc, None, DATA["ds=1"])
    flat = table("flat", columns=COLUMNS, location=flat_loc)
    flat.partitionKeys = []
    write(store, "main", {
        K.db_key("shop"): database(),
        K.table_key("shop", "orders"): table(columns=COLUMNS, location=loc),
        K.table_key("shop", "flat"): flat,
        **{K.part_key("shop", "orders", f"ds={d}"): partition(str(d)) for d in (1, 2, 3)},
        **{layout.pointer_key("shop", "orders", p): pointer(s) for p, s in sets.items()},
        layout.pointer_key("shop", "flat", None): pointer(flat_set),
    }, "seed")
    yield store, tmp_path, sets
    store.close()


def values(t, col):
    return t.column(col).to_pylist()


# --- summary -----------------------------------------------------------------------------------
def test_partition_summary_reads_one_row_group(shop):
    store, _, sets = shop
    ts = query.open_table(store, "shop.orders")
    assert ts.partitions() == ["ds=1", "ds=2"]
    s = ts.summary(["price", "ID"], partition="ds=1")
    assert values(s, "column") == ["price", "id"]  # requested order
    assert values(s, "count") == [5, 5] and values(s, "null_count") == [0, 1]
    assert values(s, "mean")[0] == pytest.approx(np.mean(DATA["ds=1"]["price"]))
    assert values(s, "stddev")[0] == pytest.approx(np.std(DATA["ds=1"]["price"]))
    assert values(s, "min") == ["1.0", "1"] and values(s, "max") == ["10.0", "4"]
    assert s.schema == layout.STATISTICS_SCHEMA
    (read,) = ts.reads
    assert read.file.endswith("ds=1/" + os.path.basename(sets["ds=1"]) + "/statistics.parquet")
    assert read.row_groups == [0]
    # k=v,k=v form and every column
    assert values(ts.summary(partition="ds=2"), "column") == [c for c, _ in COLUMNS]


def test_table_level_reduced_on_the_fly(shop):
    store, _, _ = shop
    ts = query.open_table(store, "shop.orders")
    assert ts.pointer() is None and ts.source().startswith("reduced from 2")
    s = ts.summary(["price", "id", "name", "flag"])
    rows = {r["column"]: r for r in s.to_pylist()}
    prices = [v for d in DATA.values() for v in d["price"] if v is not None]
    assert rows["price"]["count"] == 8 and rows["price"]["null_count"] == 1
    assert rows["price"]["mean"] == pytest.approx(np.mean(prices))
    assert rows["price"]["stddev"] == pytest.approx(np.std(prices))
    assert rows["price"]["min_value"] == 1.0 and rows["price"]["max_value"] == 30.0
    assert rows["id"]["sum"] == 28.0
    assert rows["name"]["distinct_count"] == 4 and rows["name"]["distinct_exact"] is False
    assert rows["flag"]["true_count"] == 4 and rows["flag"]["false_count"] == 3
    # ds=3 has no set: the reduction does not cover the table
    assert ts.is_stale()
    # only the requested rows of each set and their sketches were read
    stat_reads = [r for r in ts.reads if r.file.endswith(layout.STATISTICS)]
    assert len(stat_reads) == 2 and all(r.row_groups == [0] for r in stat_reads)
    sketch_reads = [r for r in ts.reads if r.file.endswith(layout.SKETCHES)]
    assert [(r.columns, r.rows) for r in sketch_reads] == [(["column"], 5), (None, 5)] * 2


def test_table_level_set_when_its_pointer_exists(shop):
    store, tmp_path, _ = shop
    whole = {c: DATA["ds=1"][c] + DATA["ds=2"][c] for c, _ in COLUMNS}
    path = write_set(f"file:{tmp_path}/orders", layout.TABLE_LEVEL, whole)
    write(store, "main", {layout.pointer_key("shop", "orders", layout.TABLE_LEVEL):
                          pointer(path)})
    ts = query.open_table(store, "shop.orders")
    assert ts.source() == path and not ts.is_stale()
    row = ts.summary(["name"]).to_pylist()[0]
    assert row["distinct_count"] == 4 and row["distinct_exact"] is True
    assert [r.file.rsplit("/", 1)[0] for r in ts.reads] == [path]


def test_unpartitioned_table(shop):
    store, _, _ = shop
    ts = query.open_table(store, "shop.flat")
    assert ts.partitions() == ["_"] and not ts.is_stale()
    assert values(ts.summary(["day"]), "min") == ["2020-01-01"]
    assert values(ts.summary(["day"], partition="_"), "max") == ["2020-01-09"]


def wide(store, tmp_path, n=2500, stale=False):
    cols = tuple((f"c{i:04d}", "bigint") for i in range(n))
    loc = f"file:{tmp_path}/wide"
    path = write_set(loc, None, {c: [i, i + 1, None] for i, (c, _) in enumerate(cols)}, cols)
    t = table("wide", columns=cols, location=loc)
    t.partitionKeys = []
    write(store, "main", {K.table_key("shop", "wide"): t, layout.pointer_key(
        "shop", "wide", None): pointer(path, cols[:-1] if stale else cols)})
    return path


def test_summary_of_a_wide_table_reads_only_the_row_groups_of_its_columns(shop):
    store, tmp_path, _ = shop
    path = wide(store, tmp_path)
    meta = pq.ParquetFile(local_path(path) + "/" + layout.STATISTICS).metadata
    assert meta.num_row_groups == 3  # 2500 rows by STATISTICS_ROW_GROUP
    ts = query.open_table(store, "shop.wide")
    s = ts.summary(["c2400", "c0003"])
    assert values(s, "min") == ["2400", "3"]
    assert [(r.row_groups, r.columns) for r in ts.reads] == [([0, 2], None)]
    assert ts.reads[0].rows == 1024 + (2500 - 2048)


def test_summary_of_a_stale_set_looks_rows_up_by_name(shop):
    store, tmp_path, _ = shop
    wide(store, tmp_path, stale=True)
    ts = query.open_table(store, "shop.wide")
    assert ts.is_stale()
    assert values(ts.summary(["c1030"]), "max") == ["1031"]
    assert [(r.row_groups, r.columns) for r in ts.reads] == [(None, ["column"]), ([1], None)]


# --- top ---------------------------------------------------------------------------------------
def test_top_of_a_partition_and_the_table(shop):
    store, _, _ = shop
    ts = query.open_table(store, "shop.orders")
    t = ts.top("name", 2, partition="ds=1")
    assert t.to_pylist() == [{"value": "a", "frequency": 3}, {"value": "b", "frequency": 1}]
    # a row group per discrete column: id, name, day, flag
    assert ts.reads[-1].columns == ["value", "frequency"] and ts.reads[-1].row_groups == [1]
    assert ts.reads[-1].rows == 2
    assert ts.top("flag", 5, partition="ds=1").to_pylist() == [
        {"value": "true", "frequency": 3}, {"value": "false", "frequency": 1}]
    # table level, summed over the partitions' sets
    assert ts.top("name", 3).to_pylist() == [
        {"value": "a", "frequency": 3}, {"value": "b", "frequency": 3},
        {"value": "c", "frequency": 1}]
    assert ts.top("name", 0, partition="ds=2").num_rows == 0


class Counting(io.RawIOBase):
    """A file that counts the bytes read through it."""

    def __init__(self, path, log):
        self.f, self.log = open(path, "rb"), log

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        return self.f.seek(offset, whence)

    def tell(self):
        return self.f.tell()

    def readinto(self, buf):
        n = self.f.readinto(buf)
        self.log[self.f.name] = self.log.get(self.f.name, 0) + n
        return n

    def close(self):
        self.f.close()
        super().close()


@pytest.fixture
def counting(monkeypatch):
    log: dict = {}
    real = query._source
    monkeypatch.setattr(query, "_source", lambda path: Counting(real(path), log))
    return log


def test_top_n_reads_a_prefix_of_one_column(shop, counting):
    store, tmp_path, _ = shop
    n = 100_000
    cols = (("id", "bigint"), ("name", "string"))
    loc = f"file:{tmp_path}/big"
    names = [f"value-{i:07d}" for i in range(n) for _ in range(1 + (i < 3))]
    path = write_set(loc, None, {"id": list(range(len(names))), "name": names}, cols)
    t = table("big", columns=cols, location=loc)
    t.partitionKeys = []
    write(store, "main", {K.table_key("shop", "big"): t,
                          layout.pointer_key("shop", "big", None): pointer(path, cols)})
    ts = query.open_table(store, "shop.big")
    top = ts.top("name", 5)
    assert values(top, "frequency") == [2, 2, 2, 1, 1]
    assert values(top, "value")[:4] == ["value-0000000", "value-0000001", "value-0000002",
                                        "value-0000003"]
    (read,) = ts.reads
    assert read.rows == 5 and read.columns == ["value", "frequency"]
    file = local_path(path) + "/" + layout.FREQUENCIES
    size = os.path.getsize(file)
    assert size > 800_000
    # the footer read-ahead (64 KB) and the first pages of two column chunks
    assert counting[file] < 120_000, (counting[file], size)


# --- histograms --------------------------------------------------------------------------------
def test_histogram_range_reads_one_column_of_overlapping_row_groups(shop):
    store, _, sets = shop
    ts = query.open_table(store, "shop.orders")
    full = ts.histogram("price", partition="ds=1")
    counts, edges = np.histogram(DATA["ds=1"]["price"], bins=BINS)
    assert values(full, "count") == counts.tolist()
    assert values(full, "lower") == pytest.approx(edges[:-1].tolist())
    assert ts.reads[-1].columns == ["price"] and ts.reads[-1].row_groups == [0, 1]
    # [1, 3] overlaps only the first bin (1 .. 3.25), in row group 0 of 2 rows each
    part = ts.histogram("price", 1, 3, partition="ds=1")
    assert values(part, "count") == [3] and values(part, "upper") == [pytest.approx(3.25)]
    assert ts.reads[-1].row_groups == [0]
    assert ts.histogram("price", 100, None, partition="ds=1").num_rows == 0
    # dates take ISO bounds (days since the epoch)
    days = ts.histogram("day", "2020-01-09", None, partition="ds=1")
    assert values(days, "upper")[-1] == 18270.0


def test_histogram_of_the_table_rebins_the_partitions(shop):
    store, _, _ = shop
    ts = query.open_table(store, "shop.orders")
    h = ts.histogram("price")
    assert sum(values(h, "count")) == 7  # non-null prices
    assert values(h, "lower")[0] == 1.0 and values(h, "upper")[-1] == 30.0
    assert len(h) == BINS
    hist_reads = [r for r in ts.reads if r.file.endswith(layout.HISTOGRAMS)]
    assert [r.columns for r in hist_reads] == [["price"], ["price"]]


# --- refs, staleness, errors -------------------------------------------------------------------
def test_refs_and_staleness(shop):
    store, tmp_path, _ = shop
    store.create_tag("before", "main")
    other = write_set(f"file:{tmp_path}/orders", "ds=1", DATA["ds=2"])
    changed = (("id", "bigint"), ("name", "string"), ("price", "double"), ("day", "date"),
               ("flag", "boolean"), ("extra", "int"))
    write(store, "main", {
        layout.pointer_key("shop", "orders", "ds=1"): pointer(other),
        K.table_key("shop", "orders"): table(columns=changed,
                                             location=f"file:{tmp_path}/orders")})
    before = query.open_table(store, "shop.orders", ref="before")
    assert values(before.summary(["id"], "ds=1"), "count") == [5]
    assert not before.is_stale("ds=1")
    now = query.open_table(store, "shop.orders")
    assert values(now.summary(["id"], "ds=1"), "count") == [3]
    assert now.is_stale("ds=1")  # the schema changed since
    with pytest.raises(query.QueryError, match="no row for column"):
        now.summary(["extra"], "ds=1")
    marked = json.loads(pointer(other))
    marked["stale"] = True
    write(store, "main", {layout.pointer_key("shop", "orders", "ds=2"):
                          json.dumps(marked).encode()})
    assert query.open_table(store, "shop.orders", ref="before").is_stale("ds=2") is False
    assert query.open_table(store, "shop.orders").is_stale("ds=2") is True


@pytest.mark.parametrize("call, message", [
    (lambda ts: ts.summary(["nope"]), "no column 'nope' in shop.orders"),
    (lambda ts: ts.summary(partition="ds=9"), "no partition 'ds=9' in shop.orders"),
    (lambda ts: ts.summary(partition="ds=3"), "partition ds=3 of shop.orders has no statistics"),
    (lambda ts: ts.top("price", 3), r"column price \(double\) has no frequencies"),
    (lambda ts: ts.histogram("name"), r"column name \(string\) has no histogram"),
    (lambda ts: ts.histogram("price", 5, 1), "empty range"),
])
def test_errors(shop, call, message):
    store, _, _ = shop
    with pytest.raises(query.QueryError, match=message):
        call(query.open_table(store, "shop.orders"))


def test_open_errors(shop, tmp_path):
    store, _, _ = shop
    with pytest.raises(query.QueryError, match="no table shop.nope at main"):
        query.open_table(store, "shop.nope")
    with pytest.raises(query.QueryError, match="no ref 'nope'"):
        query.open_table(store, "shop.orders", ref="nope")
    with pytest.raises(query.QueryError, match="expected DB.TABLE"):
        query.open_table(store, "orders")
    with pytest.raises(query.QueryError, match="no store at"):
        query.open_table(tmp_path / "elsewhere", "shop.orders")


def test_missing_files_are_an_error_not_a_traceback(shop):
    store, _, sets = shop
    os.remove(local_path(sets["ds=1"]) + "/" + layout.STATISTICS)
    with pytest.raises(query.QueryError, match="is missing"):
        query.open_table(store, "shop.orders").summary(partition="ds=1")


# --- the command -------------------------------------------------------------------------------
def show(capsys, shop, *argv):
    store, tmp_path, _ = shop
    store.close()  # the command opens the store itself
    args = cli.build_parser().parse_args(["stats", "show", *argv, "--store",
                                          str(tmp_path / "store")])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_text(shop, capsys):
    code, out, err = show(capsys, shop, "shop.orders", "--partition", "ds=1",
                          "--columns", "name,price", "--top", "2", "--histogram", "price",
                          "--range", "1:3")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("shop.orders @ main (") and "ds=1: file:" in lines[0]
    assert lines[1].split()[:6] == ["column", "type", "count", "nulls", "distinct", "min"]
    assert lines[3].split()[:5] == ["name", "string", "5", "0", "3"]
    assert lines[4].split()[:5] == ["price", "double", "5", "0", "4"]
    assert "avg_len" in lines[1]  # a string column has lengths
    assert "top 2 of name:" in out and "a      3" in out
    assert "histogram of price over [1, 3]: 1 bin(s)" in out


def test_cli_json(shop, capsys):
    code, out, err = show(capsys, shop, "shop.orders", "--columns", "name,price,day",
                          "--top", "1", "--histogram", "day", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["table"] == "shop.orders" and doc["partition"] is None
    assert doc["source"] == "reduced from 2 of 3 partitions' sets" and doc["stale"] is True
    assert [r["column"] for r in doc["summary"]] == ["name", "price", "day"]
    assert doc["summary"][1]["count"] == 8
    assert doc["top"] == {"name": {"values": [{"value": "a", "frequency": 3}],
                                   "duplicates_only": False},
                          "day": {"values": [{"value": "2020-01-02", "frequency": 2}],
                                  "duplicates_only": False}}
    assert doc["histogram"]["column"] == "day" and len(doc["histogram"]["bins"]) == BINS
    assert all(not (isinstance(v, float) and math.isnan(v)) for r in doc["summary"]
               for v in r.values())


def test_cli_plot(shop, capsys, tmp_path):
    import matplotlib  # noqa: F401
    png = tmp_path / "out.png"
    code, out, err = show(capsys, shop, "shop.orders", "--partition", "ds=1", "--columns",
                          "name,price,flag", "--top", "3", "--plot", str(png))
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert f"plot written to {png}" in out


@pytest.mark.parametrize("argv, message", [
    (["shop.nope"], "no table shop.nope at main"),
    (["shop.orders", "--columns", "id,nope"], "no column 'nope' in shop.orders"),
    (["shop.orders", "--partition", "ds=7"], "no partition 'ds=7' in shop.orders"),
    (["shop.orders", "--ref", "nope"], "no ref 'nope'"),
    (["shop.orders", "--histogram", "name"], "has no histogram"),
    (["shop.orders", "--range", "1:2"], "--range needs --histogram"),
])
def test_cli_errors(shop, capsys, argv, message):
    code, out, err = show(capsys, shop, *argv)
    assert code == 1 and out == ""
    assert err.startswith("hms-proxy: error: ") and message in err
    assert "Traceback" not in err


def test_cli_range_bounds(shop, capsys):
    code, out, err = show(capsys, shop, "shop.orders", "--partition", "ds=1", "--columns", "day",
                          "--histogram", "day", "--range", "2020-01-05T00:00:00:", "--json")
    assert code == 0, err
    assert json.loads(out)["histogram"]["range"] == ["2020-01-05T00:00:00", None]
    assert [b["upper"] for b in json.loads(out)["histogram"]["bins"]] == [18266.0, 18268.0,
                                                                          18270.0]
    assert cli_stats.parse_range(":5", "double") == (None, "5")
    assert cli_stats.parse_range("2024-01-01 10:00:2024-01-02", "timestamp") == ("2024-01-01 10:00",
                                                                        "2024-01-02")


def test_cli_without_a_store(capsys, tmp_path):
    args = cli.build_parser().parse_args(["stats", "show", "shop.orders", "--store",
                                          str(tmp_path / "none")])
    assert args.func(args) == 2
    assert capsys.readouterr().err == f"hms-proxy: error: no store at {tmp_path / 'none'}\n"


def test_top_of_a_table_set_listing_duplicates_only(shop, capsys):
    """A _table_ set whose frequencies of `name` went through the Bloom filter (scenario 1):
    only the values occurring more than once are listed."""
    store, tmp_path, _ = shop
    whole = {c: DATA["ds=1"][c] + DATA["ds=2"][c] for c, _ in COLUMNS}
    path = write_set(f"file:{tmp_path}/orders", layout.TABLE_LEVEL, whole)
    file = local_path(path) + "/" + layout.FREQUENCIES
    t = pq.read_table(file)
    meta = {b"duplicates_only": json.dumps(["name"]).encode()}
    with layout.frequencies_writer(file, t.schema.with_metadata(meta)) as w:
        for c in ("id", "name", "day", "flag"):
            part = t.filter(pc.equal(t["column"], c))
            w.write_table(part.replace_schema_metadata(meta), row_group_size=len(part))
    write(store, "main", {layout.pointer_key("shop", "orders", layout.TABLE_LEVEL):
                          pointer(path)})
    ts = query.open_table(store, "shop.orders")
    top = ts.top("name", 10)
    assert top.schema.metadata[b"duplicates_only"] == b"true"
    assert ts.top("flag", 1).schema.metadata[b"duplicates_only"] == b"false"
    code, out, err = show(capsys, shop, "shop.orders", "--columns", "name", "--top", "2")
    assert code == 0, err
    assert "top 2 of name (only values occurring more than once; every other value occurs " \
           "once):" in out
