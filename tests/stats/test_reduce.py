"""Table-level statistics by reduction (stats/reduce.py), checked against the same statistics
computed with pyarrow/numpy over the union of every partition's raw rows.

The partition sets are built here from raw rows with pyarrow, exactly per stats/layout.py
(the compute job is not needed): statistics, frequencies (a row group per column),
histograms (equal-width over each partition's min/max, padded with nulls) and HyperLogLog
sketches over Spark's xxhash64.
"""
from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hms_proxy.hms.javafmt import double_to_string
from stats import arrow_compute, layout, reduce
from stats.sets import open_sets

BINS = 50
SCHEMA = [("id", "bigint"), ("k", "int"), ("name", "string"), ("x", "double"),
          ("flag", "boolean"), ("d", "date"), ("z", "double")]
ARROW = {"bigint": pa.int64(), "int": pa.int32(), "string": pa.string(), "double": pa.float64(),
         "boolean": pa.bool_(), "date": pa.date32()}


# --- a partition set from raw rows, per layout ---------------------------------------------------
def text(value, hive_type):
    if value is None:
        return None
    if hive_type == "boolean":
        return "true" if value else "false"
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, float):  # Spark's CAST(double AS STRING), Java's Double.toString
        return double_to_string(value)
    return str(value)


def numbers(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    col = col.drop_null()
    if pa.types.is_date(col.type):
        col = col.cast(pa.int32())
    return np.asarray(col.cast(pa.float64()), dtype=np.float64)


def histogram(values: np.ndarray, bins: int):
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        return [{"lower": lo, "upper": hi, "count": int(values.size)}]
    counts, edges = np.histogram(values, bins=bins, range=(lo, hi))
    return [{"lower": float(edges[i]), "upper": float(edges[i + 1]), "count": int(counts[i])}
            for i in range(bins)]


def write_partition_set(root, partition: str, data: pa.Table, schema=SCHEMA,
                        bins: int = BINS) -> str:
    path = layout.set_dir(str(root), partition, layout.new_set_id())
    arrow_compute.write_files(arrow_compute.compute_set(data, schema, bins=bins,
                                                        exact_quantiles=True), path)
    return path


# --- data ---------------------------------------------------------------------------------------------
def with_nulls(rng, values: list, rate: float) -> list:
    mask = rng.random(len(values)) < rate
    return [None if m else v for v, m in zip(values, mask)]


def make_partitions(seed=7, sizes=(20_000, 35_000, 40_000, 25_000), overlap=5_000):
    """Raw rows of each partition: ``id`` distinct within a partition, ``overlap`` ids shared
    with the next one (~105k distinct in all); skewed ints and strings; doubles whose mean moves
    between partitions; ``z`` all null in the first partition."""
    rng = np.random.default_rng(seed)
    parts, start = [], 0
    epoch = datetime.date(1970, 1, 1)
    for p, n in enumerate(sizes):
        ids = np.arange(start, start + n, dtype=np.int64)
        start += n - overlap
        k = rng.zipf(1.3, n) % 700
        names = [f"v{int(v)}" * (1 + int(v) % 3) for v in rng.zipf(1.2, n) % 3000]
        x = rng.normal(10.0 * p, 1.0 + p, n)
        z = [None] * n if p == 0 else list(rng.exponential(3.0, n))
        parts.append(pa.table({
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(with_nulls(rng, [int(v) for v in k], 0.05), pa.int32()),
            "name": pa.array(with_nulls(rng, names, 0.1), pa.string()),
            "x": pa.array(with_nulls(rng, list(x), 0.02), pa.float64()),
            "flag": pa.array(with_nulls(rng, list(rng.random(n) < 0.3 + 0.1 * p), 0.1),
                             pa.bool_()),
            "d": pa.array(with_nulls(rng, [epoch + datetime.timedelta(days=int(v))
                                           for v in rng.integers(18000 + 30 * (p % 10), 18400, n)],
                                     0.03), pa.date32()),
            "z": pa.array(z, pa.float64()),
        }))
    return parts


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("reduce") / "table"
    parts = make_partitions()
    sets = [write_partition_set(root, f"p={i}", t) for i, t in enumerate(parts)]
    return sets, parts, pa.concat_tables(parts)


# --- tests -----------------------------------------------------------------------------------------
def test_spark_xxhash64_and_hll_primitives():
    # Spark's documented example: xxhash64('Spark', array(123), 2) = 5602566077635097486
    h = reduce.xxhash64_bytes(b"Spark")
    h = int(reduce.xxhash64_int(np.array([123]), seed=h)[0])
    h = int(reduce.xxhash64_int(np.array([2]), seed=h)[0])
    assert (h - (1 << 64) if h >= 1 << 63 else h) == 5602566077635097486
    assert int(reduce.xxhash64_long(np.array([-5]))[0]) == reduce.xxhash64_bytes(
        (-5).to_bytes(8, "little", signed=True))
    # small range (linear counting) and merge = register-wise max
    a = reduce.hll_registers(reduce.xxhash64_long(np.arange(0, 60)))
    b = reduce.hll_registers(reduce.xxhash64_long(np.arange(30, 90)))
    assert reduce.hll_estimate(a) == 60
    assert np.array_equal(reduce.hll_merge(a, b), np.maximum(a, b))
    assert abs(reduce.hll_estimate(reduce.hll_merge(a.tobytes(), b.tobytes())) - 90) <= 1
    assert reduce.hll_estimate(np.zeros(4096, np.uint8)) == 0


def test_rebin_splits_proportionally_and_keeps_totals():
    src = (np.array([0.0, 10.0]), np.array([10.0, 20.0]), np.array([100, 50]))
    counts = reduce.rebin([src], 0.0, 20.0, 4)
    assert counts.tolist() == [50, 50, 25, 25]
    # a zero-width bin (all values equal) goes whole to the bin holding its value; last closed
    point = (np.array([20.0]), np.array([20.0]), np.array([7]))
    counts = reduce.rebin([src, point], 0.0, 20.0, 3)
    assert counts.sum() == 157 and counts[-1] >= 7
    assert reduce.rebin([point], 20.0, 20.0, 10).tolist() == [7]


def test_reduced_statistics_equal_the_union(dataset):
    sets, parts, union = dataset
    table = reduce.reduce_statistics(sets, bins=BINS)
    assert table.schema == layout.STATISTICS_SCHEMA
    got = {r["column"]: r for r in table.to_pylist()}
    assert list(got) == [name for name, _ in SCHEMA]
    for name, hive_type in SCHEMA:
        col, row = union.column(name), got[name]
        valid = col.drop_null()
        assert row["type"] == hive_type
        assert row["count"] == len(union) and row["null_count"] == col.null_count, name
        # distinct: HLL within 3% (a few hundred values: linear counting, closer still)
        truth = pc.count_distinct(col).as_py()
        assert row["distinct_exact"] is False
        assert abs(row["distinct_count"] - truth) <= 0.03 * truth, (name, row["distinct_count"],
                                                                    truth)
        assert row["min"] == text(pc.min(valid).as_py(), hive_type), name
        assert row["max"] == text(pc.max(valid).as_py(), hive_type), name
        if layout.is_numeric(hive_type):
            nums = numbers(col)
            assert row["min_value"] == nums.min() and row["max_value"] == nums.max()
            assert row["mean"] == pytest.approx(nums.mean(), rel=1e-12)
            assert row["stddev"] == pytest.approx(nums.std(), rel=1e-10), name
            if hive_type == "date":  # no sum for dates (as the compute job)
                assert row["sum"] is None
            else:
                assert row["sum"] == pytest.approx(nums.sum(), rel=1e-12)
            assert row["percentiles_exact"] is False
        else:
            assert row["mean"] is row["stddev"] is row["min_value"] is None
        if hive_type == "string":
            lengths = np.asarray(pc.utf8_length(valid))
            assert row["avg_length"] == pytest.approx(lengths.mean(), rel=1e-12)
            assert row["max_length"] == lengths.max()
        if hive_type == "boolean":
            trues = int(pc.sum(valid.cast(pa.int64())).as_py())
            assert (row["true_count"], row["false_count"]) == (trues, len(valid) - trues)
    assert got["id"]["distinct_count"] > 100_000  # the 100k-distinct HLL case
    assert pc.count_distinct(union.column("id")).as_py() == 105_000


def test_rebinned_histograms_and_percentiles(dataset):
    sets, parts, union = dataset
    hists = reduce.reduce_histograms(sets, bins=BINS)
    assert set(hists) == {"id", "k", "x", "d", "z"}
    opened = open_sets(sets)
    for name, (edges, counts) in hists.items():
        nums = numbers(union.column(name))
        assert counts.sum() == nums.size, name
        assert edges[0] == nums.min() and edges[-1] == nums.max() and len(counts) == BINS
        truth, _ = np.histogram(nums, bins=BINS, range=(nums.min(), nums.max()))
        # documented tolerance: the counts of partition bins straddling a grid bin's edges
        # (values inside them may fall either side), plus one for the integer rounding
        src = [h for h in (s.histogram(name) for s in opened) if h is not None]
        lows = np.concatenate([h[0] for h in src])
        ups = np.concatenate([h[1] for h in src])
        cnt = np.concatenate([h[2] for h in src])
        eps = 1e-9 * (edges[-1] - edges[0])
        for j in range(BINS):
            lo, hi = edges[j], edges[j + 1]
            straddle = (lows < lo + eps) & (ups > lo - eps) | (lows < hi + eps) & (ups > hi - eps)
            straddle &= ups > lows
            tol = int(cnt[straddle].sum()) + 1
            assert abs(int(counts[j]) - int(truth[j])) <= tol, (name, j, counts[j], truth[j], tol)
        # percentiles from the merged histogram: within two grid bins of the true ones
        width = (edges[-1] - edges[0]) / BINS
        got = reduce.histogram_percentiles(edges, counts, layout.PERCENTILES)
        for p, value in zip(layout.PERCENTILES, got):
            assert abs(value - np.percentile(nums, p)) <= 2 * width, (name, p)
    # the statistics use the same percentiles
    row = {r["column"]: r for r in reduce.reduce_statistics(sets, bins=BINS).to_pylist()}["x"]
    edges, counts = hists["x"]
    assert row["p50"] == reduce.histogram_percentiles(edges, counts, [50])[0]


def test_histograms_table_layout(dataset):
    sets, _, _ = dataset
    hists = reduce.reduce_histograms(sets, bins=BINS)
    table = reduce.histograms_table(hists, [n for n, _ in SCHEMA])
    assert table.column_names == ["id", "k", "x", "d", "z"]
    assert table.schema.field("x").type == layout.BIN and len(table) == BINS
    first = table.column("x")[0].as_py()
    assert first["lower"] == hists["x"][0][0]


def test_single_partition_keeps_its_own_values(tmp_path):
    part = make_partitions(sizes=(3_000,))[0]
    path = write_partition_set(tmp_path / "t", layout.UNPARTITIONED, part)
    row = {r["column"]: r for r in reduce.reduce_statistics([path]).to_pylist()}
    own = {r["column"]: r for r in pq.read_table(os.path.join(path, layout.STATISTICS)).to_pylist()}
    for name in ("id", "k", "x"):
        assert row[name]["distinct_count"] == own[name]["distinct_count"]
        assert row[name]["distinct_exact"] is True
        assert row[name]["p25"] == own[name]["p25"] and row[name]["percentiles_exact"] is True


def test_sets_of_different_schemas_are_refused(tmp_path):
    a = write_partition_set(tmp_path / "t", "p=1", make_partitions(sizes=(100,))[0])
    b_data = make_partitions(sizes=(100,))[0].drop_columns(["z"])
    b = write_partition_set(tmp_path / "t", "p=2", b_data, schema=SCHEMA[:-1])
    with pytest.raises(ValueError, match="share its schema"):
        reduce.reduce_statistics([a, b])


def test_user_defined_statistics_reduce_by_their_rule(tmp_path):
    """A user-defined statistic registered with ``reduce=`` carries its rule in the set
    (field metadata), so the table level combines it from the partitions' values alone; one
    without a rule is null at the table level."""
    from stats.compute import Statistic

    stats = [Statistic("total", fn=lambda a: pc.sum(a).as_py(), reduce="sum"),
             Statistic("top", fn=lambda a: pc.max(a).as_py(), reduce="max"),
             Statistic("low", fn=lambda a: pc.min(a).as_py(), reduce="min"),
             Statistic("avg", fn=lambda a: pc.mean(a).as_py(), reduce="mean"),
             Statistic("kurt", fn=lambda a: 1.5)]
    rng = np.random.default_rng(3)
    parts = [pa.table({"v": pa.array(with_nulls(rng, list(rng.normal(k, 2, n)), 0.1))})
             for k, n in ((0, 300), (5, 500), (-3, 200))]
    paths = []
    for i, data in enumerate(parts):
        path = layout.set_dir(str(tmp_path), f"p={i}", layout.new_set_id())
        arrow_compute.write_files(arrow_compute.compute_set(data, [("v", "double")], bins=10,
                                                            py_statistics=stats), path)
        paths.append(path)
    schema = pq.read_schema(os.path.join(paths[0], layout.STATISTICS))
    assert schema.field("udf_total").metadata == {b"reduce": b"sum"}
    assert schema.field("udf_kurt").metadata is None
    table = reduce.reduce_statistics(paths, bins=10)
    row = table.to_pylist()[0]
    union = pa.concat_tables(parts).column("v")
    assert row["udf_total"] == pytest.approx(pc.sum(union).as_py(), rel=1e-12)
    assert row["udf_top"] == pc.max(union).as_py() and row["udf_low"] == pc.min(union).as_py()
    assert row["udf_avg"] == pytest.approx(pc.mean(union).as_py(), rel=1e-12)
    assert row["udf_kurt"] is None
    assert table.schema.field("udf_avg").metadata == {b"reduce": b"mean"}  # reducible again
    single = reduce.reduce_statistics(paths[:1], bins=10).to_pylist()[0]
    assert single["udf_kurt"] == 1.5
