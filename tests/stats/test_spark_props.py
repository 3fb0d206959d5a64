"""stats.spark_props: the parameters Spark's optimizer reads, built from a statistics set's rows.

The histogram's bytes are checked against Spark's own reader in tests/e2e/spark/
test_served_statistics.py; here the format is decoded by an independent reader written from
lz4-java's block layout, and xxHash32 is checked on the reference vectors of its author.
"""
from __future__ import annotations

import base64
import struct

import pytest

from stats import spark_props as sp


@pytest.mark.parametrize("data, seed, expected", [
    (b"", 0, 0x02CC5D05),
    (b"a", 0, 0x550D7456),
    (b"abc", 0, 0x32D153FF),
    (b"Nobody inspects the spammish repetition", 0, 0xE2293B2F),
    (b"", 1, 0x0B2CB792),
])
def test_xxh32_reference_vectors(data, seed, expected):
    assert sp.xxh32(data, seed) == expected


def decode_stream(text: str) -> bytes:
    """An independent reader of lz4-java's block stream, raw blocks only."""
    raw = base64.b64decode(text)
    out = b""
    pos = 0
    while True:
        assert raw[pos:pos + 8] == b"LZ4Block"
        token = raw[pos + 8]
        stored, original, check = struct.unpack_from("<iii", raw, pos + 9)
        pos += 21
        if original == 0:
            assert stored == 0 and check == 0 and pos == len(raw)
            return out
        assert token & 0xF0 == 0x10 and stored == original  # raw
        block = raw[pos:pos + stored]
        assert sp.xxh32(block, 0x9747B28C) & 0x0FFFFFFF == check
        out += block
        pos += stored


def decode_histogram(text: str):
    data = decode_stream(text)
    height, n = struct.unpack_from(">di", data, 0)
    lo = struct.unpack_from(f">{n}d", data, 12)
    hi = struct.unpack_from(f">{n}d", data, 12 + 8 * n)
    ndv = struct.unpack_from(f">{n}q", data, 12 + 16 * n)
    assert struct.unpack_from(">i", data, 12 + 24 * n) == (-1,)
    assert len(data) == 16 + 24 * n
    return height, list(zip(lo, hi, ndv))


def test_histogram_round_trips_and_spans_blocks():
    bins = [(float(i), float(i + 1), i + 1) for i in range(3000)]  # 72 KB: two blocks
    height, back = decode_histogram(sp.histogram_property(12.5, bins))
    assert height == 12.5 and back == bins


def test_equi_height_bins_hold_equal_shares():
    # skewed: most values in the first equal-width bin
    width = [(0.0, 10.0, 900), (10.0, 20.0, 50), (20.0, 30.0, 0), (30.0, 40.0, 50)]
    height, bins = sp.equi_height(width, distinct=400, integral=False, nbins=10)
    assert height == 100.0 and len(bins) == 10
    assert bins[0][0] == 0.0 and bins[-1][1] == 40.0
    assert all(a[1] == b[0] for a, b in zip(bins, bins[1:]))
    assert all(lo <= hi for lo, hi, _ in bins)
    assert [round(hi, 6) for _, hi, _ in bins[:9]] == [round(10 * k / 9, 6) for k in range(1, 9)] \
        + [10.0]  # the first nine share the dense bin
    # a bin's distinct count is the column's shared by covered width, capped by its height
    assert all(1 <= ndv <= 100 for _, _, ndv in bins)
    assert sp.equi_height([], 5, False) is None
    assert sp.equi_height([(1.0, 1.0, 7)], 1, True) == (1.0, [(1.0, 1.0, 1)] * 7)


def test_integral_bins_never_count_more_values_than_fit():
    height, bins = sp.equi_height([(0.0, 3.0, 3000)], distinct=3000, integral=True, nbins=3)
    assert height == 1000.0
    for lo, hi, ndv in bins:
        assert ndv <= max(1, int(hi) - int(-(-lo // 1)) + 1)


ROW = {"column": "x", "type": "double", "count": 10, "null_count": 1, "distinct_count": 8,
       "min": "0.5", "max": "99.25", "min_value": 0.5, "max_value": 99.25}


@pytest.mark.parametrize("hive_type, row, expected", [
    ("bigint", {"count": 5, "null_count": 0, "distinct_count": 5, "min": "1", "max": "5"},
     {"min": "1", "max": "5", "avgLen": "8", "maxLen": "8"}),
    ("int", {"count": 5, "null_count": 2, "distinct_count": 3, "min_value": -3.0,
             "max_value": 7.0}, {"min": "-3", "max": "7", "avgLen": "4", "nullCount": "2"}),
    ("decimal(10,2)", {"count": 2, "null_count": 0, "distinct_count": 2, "min": "0.00",
                       "max": "2857.00"}, {"min": "0.00", "max": "2857.00", "avgLen": "8"}),
    ("decimal(38,6)", {"count": 2, "null_count": 0, "distinct_count": 2, "min": "1",
                       "max": "2"}, {"avgLen": "16", "maxLen": "16"}),
    ("date", {"count": 2, "null_count": 0, "distinct_count": 2, "min": "2024-01-01",
              "max": "2024-10-26"}, {"min": "2024-01-01", "max": "2024-10-26", "avgLen": "4"}),
    ("timestamp", {"count": 2, "null_count": 0, "distinct_count": 2,
                   "min_value": 1_700_000_000_000_000.0, "max_value": 1_700_019_999_123_456.0},
     {"min": "2023-11-14 22:13:20.000000", "max": "2023-11-15 03:46:39.123456"}),
    ("boolean", {"count": 3, "null_count": 0, "distinct_count": 2, "true_count": 1,
                 "false_count": 2}, {"min": "false", "max": "true", "avgLen": "1"}),
    ("boolean", {"count": 3, "null_count": 0, "distinct_count": 1, "true_count": 3,
                 "false_count": 0}, {"min": "true", "max": "true"}),
    ("string", {"count": 3, "null_count": 1, "distinct_count": 2, "min": "a", "max": "zz",
                "avg_length": 2.2, "max_length": 3}, {"avgLen": "3", "maxLen": "3"}),
    ("varchar(10)", {"count": 3, "null_count": 3, "distinct_count": 0},
     {"avgLen": "20", "maxLen": "20", "nullCount": "3", "distinctCount": "0"}),
])
def test_column_stats_as_spark_writes_them(hive_type, row, expected):
    out = sp.column_stats(hive_type, row)
    assert out["version"] == "2"
    for key, value in expected.items():
        assert out[key] == value, key
    if sp.base_type(hive_type) in ("string", "varchar"):
        assert "min" not in out and "max" not in out  # Spark keeps none for strings


def test_complex_columns_get_nothing_and_histograms_only_numbers():
    assert sp.column_stats("array<int>", ROW) == {}
    assert sp.column_stats("struct<a:int>", ROW) == {}
    with_bins = sp.column_stats("double", ROW, [(0.5, 50.0, 5), (50.0, 99.25, 4)])
    height, bins = decode_histogram(with_bins["histogram"])
    assert height == 1.0 and len(bins) == 9
    assert "histogram" not in sp.column_stats("string", dict(ROW, type="string"),
                                              [(0.5, 50.0, 5)])


def test_spark_column_names_come_from_the_spark_schema():
    schema = '{"type":"struct","fields":[{"name":"userId","type":"integer"},{"name":"x"}]}'
    assert sp.spark_column_names({"spark.sql.sources.schema": schema}) == \
        {"userid": "userId", "x": "x"}
    parts = {"spark.sql.sources.schema.numParts": "2",
             "spark.sql.sources.schema.part.0": schema[:20],
             "spark.sql.sources.schema.part.1": schema[20:]}
    assert sp.spark_column_names(parts) == {"userid": "userId", "x": "x"}
    assert sp.spark_column_names({"spark.sql.sources.schema.numParts": "2",
                                  "spark.sql.sources.schema.part.0": schema}) == {}
    assert sp.spark_column_names({"spark.sql.sources.schema": "{not json"}) == {}
    assert sp.spark_column_names(None) == {}


def test_own_columns_are_those_with_a_version():
    params = {"spark.sql.statistics.colStats.userId.version": "2",
              "spark.sql.statistics.colStats.userId.min": "0",
              "spark.sql.statistics.colStats.x.min": "1", "numRows": "3"}
    assert sp.own_columns(params) == {"userid"}


def test_integral_bins_have_whole_bounds_and_exact_distinct_counts():
    # values 0..9, 100 rows each, in 1,000 equal-width bins over [0, 9]: one value per
    # non-empty bin (what the compute job writes for a small-range integer column)
    width = 9 / 1000
    bins = [(v / width // 1 * width, v / width // 1 * width + width, 100) for v in range(10)]
    height, out = sp.equi_height(bins, distinct=10, integral=True, nbins=25)
    assert height == 40.0
    assert all(lo == int(lo) and hi == int(hi) for lo, hi, _ in out)
    # a value's 100 rows fill two or three bins [v, v]: Spark's equality estimate finds them
    assert sum(1 for lo, hi, _ in out if lo == hi == 7.0) >= 2
    for k, (lo, hi, ndv) in enumerate(out):
        inside = [v for v in range(10) if (lo <= v if k == 0 else lo < v) and v <= hi]
        assert ndv == (1 if lo == hi else max(1, len(inside))), (lo, hi, ndv)
