"""The Arrow engine's pieces without Spark (``stats/compute/engine.py``, ``stats/columns.py``,
``stats/sketch.py``): a unit's direct read of Parquet and ORC files, the retries it asks for,
the planning of units, and the vectorized hashing against the one-value-at-a-time XXH64.
Spark runs them end to end in ``test_compute.py``."""
from __future__ import annotations

import datetime
import decimal
import os
import random

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest

from hms_proxy.hms.javafmt import double_to_string  # noqa: E402
from stats import arrow_compute, layout, sketch  # noqa: E402
from stats.compute import (  # noqa: E402
    Partition,
    TableInfo,
    engine,  # noqa: E402
)

COLUMNS = [("id", "bigint"), ("name", "string"), ("amount", "decimal(12,2)"),
           ("ts", "timestamp"), ("added", "int")]


def _rows(start: int, n: int) -> dict:
    return {
        "ID": pa.array(range(start, start + n), pa.int32()),  # another case, a narrower type
        "name": pa.array([None if i % 7 == 0 else f"n{i % 13}" for i in range(start, start + n)]),
        "amount": pa.array([decimal.Decimal(i % 50) / 4 for i in range(start, start + n)],
                           pa.decimal128(12, 2)),
        "ts": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i * 37)
                        for i in range(start, start + n)], pa.timestamp("ns")),
    }


def _reference(tables: list[pa.Table]) -> dict:
    """The set pyarrow computes over the same rows in one table (the column added later is
    null in the files that lack it)."""
    data = {"id": [], "name": [], "amount": [], "ts": [], "added": []}
    for t in tables:
        n = t.num_rows
        data["id"] += t.column("ID").cast(pa.int64()).to_pylist()
        data["name"] += t.column("name").to_pylist()
        data["amount"] += t.column("amount").to_pylist()
        data["ts"] += t.column("ts").cast(pa.timestamp("us")).to_pylist()
        data["added"] += t.column("added").to_pylist() if "added" in t.column_names else [None] * n
    table = pa.table({"id": pa.array(data["id"], pa.int64()), "name": pa.array(data["name"]),
                      "amount": pa.array(data["amount"], pa.decimal128(12, 2)),
                      "ts": pa.array(data["ts"], pa.timestamp("us")),
                      "added": pa.array(data["added"], pa.int32())})
    return arrow_compute.compute_set(table, COLUMNS, bins=20)


def _unit_set(outcome) -> dict:
    from stats.columns import assemble

    results = [r for _, r in sorted(outcome.results, key=lambda item: item[0])]
    return assemble(COLUMNS, results)


def _same(got: dict, want: dict) -> None:
    assert got[layout.STATISTICS].to_pylist() == want[layout.STATISTICS].to_pylist()
    assert [t.to_pylist() for t in got[layout.FREQUENCIES]] == \
        [t.to_pylist() for t in want[layout.FREQUENCIES]]
    assert got[layout.HISTOGRAMS].equals(want[layout.HISTOGRAMS])
    assert got[layout.SKETCHES].equals(want[layout.SKETCHES])


def _settings(**kw):
    return engine.Settings(bins=kw.get("bins", 20), task_values=kw.get("task_values", 10 ** 8),
                           table_columns=len(COLUMNS))


def test_direct_parquet_read_matches_one_table(tmp_path):
    first = pa.table(_rows(0, 500))
    second = pa.table({**_rows(500, 300), "added": pa.array(range(300), pa.int32())})
    pq.write_table(first, tmp_path / "part-0.parquet")
    pq.write_table(second, tmp_path / "part-1.parquet", row_group_size=100)
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0.parquet.crc").write_text("x")
    files = engine.data_files(f"file://{tmp_path}")
    assert [os.path.basename(f) for f in files] == ["part-0.parquet", "part-1.parquet"]
    unit = engine.Unit(0, [(i, n, t) for i, (n, t) in enumerate(COLUMNS)], files, "parquet")
    outcome = engine.run_unit(unit, _settings())
    assert outcome.retry is None and outcome.rows == 800
    _same(_unit_set(outcome), _reference([first, second]))


def test_direct_orc_read_by_position(tmp_path):
    """Hive's ORC files name their columns _col0, _col1...: matched by position."""
    rows = _rows(0, 400)
    table = pa.table({f"_col{i}": rows[k] for i, k in enumerate(["ID", "name", "amount", "ts"])})
    orc.write_table(table, tmp_path / "000000_0")
    unit = engine.Unit(0, [(i, n, t) for i, (n, t) in enumerate(COLUMNS)],
                       engine.data_files(str(tmp_path)), "orc")
    outcome = engine.run_unit(unit, _settings())
    assert outcome.retry is None and outcome.rows == 400
    _same(_unit_set(outcome), _reference([pa.table(rows)]))


def test_unreadable_and_too_large_units_are_retried(tmp_path):
    pq.write_table(pa.table(_rows(0, 50)), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    cols = [(0, "id", "bigint")]
    bad = engine.run_unit(engine.Unit(3, cols, engine.data_files(str(tmp_path)), "parquet"),
                          _settings())
    assert (bad.part, bad.retry, bad.results) == (3, "read", [])
    assert bad.reason
    os.remove(tmp_path / "b.parquet")
    big = engine.run_unit(engine.Unit(0, cols, engine.data_files(str(tmp_path)), "parquet"),
                          _settings(task_values=49))
    assert big.retry == "large" and "50 rows" in big.reason
    # a type the column cannot take: Spark's reader decides
    pq.write_table(pa.table({"id": pa.array(["x"])}), tmp_path / "c.parquet")
    cast = engine.run_unit(engine.Unit(0, cols, engine.data_files(str(tmp_path)), "parquet"),
                           _settings())
    assert cast.retry == "read"


def test_data_files_and_formats(tmp_path):
    assert engine.data_files(str(tmp_path / "missing")) == []
    assert engine.data_files("s3a://bucket/table") is None
    (tmp_path / "sub").mkdir()
    assert engine.data_files(str(tmp_path)) is None  # Spark lists nested directories
    (tmp_path / "sub").rmdir()
    (tmp_path / "_stats").mkdir()
    assert engine.data_files(str(tmp_path)) == []
    parquet = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
    orc_in = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
    text = "org.apache.hadoop.mapred.TextInputFormat"
    assert engine.file_format(parquet, None, None) == "parquet"
    assert engine.file_format(orc_in, None, "orc") == "orc"
    assert engine.file_format(text, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                              None) is None
    assert engine.file_format("org.apache.hadoop.mapred.SequenceFileInputFormat", None,
                              "csv") is None
    assert engine.file_format(parquet, None, "delta") is None


def test_plan_splits_columns_over_the_cores():
    cols = [(f"c{i}", t) for i, t in enumerate(["string", "bigint", "int", "double"] * 5)]
    parts = [Partition(f"p={i}", [str(i)], f"/nowhere/p={i}") for i in range(3)]
    info = TableInfo("db", "t", "main", "`db@main`.`t`", cols, [("p", "string")], "/nowhere",
                     parts)
    one = engine.plan(info, [0], parallelism=2, formats={})
    assert len(one) == 8  # UNITS_PER_CORE * cores for one partition
    assert sorted(c for u in one for c in u.columns) == [(i, n, t) for i, (n, t) in
                                                          enumerate(cols)]
    assert all(u.fmt is None and u.files is None for u in one)  # not parquet/orc: Spark reads
    many = engine.plan(info, [0, 1, 2], parallelism=2, formats={0: "parquet"})
    assert {u.part for u in many} == {0, 1, 2} and len(many) == 9
    assert all(u.fmt == "parquet" and u.files == [] for u in many if u.part == 0)
    wide = engine.plan(info, list(range(3)) * 6, parallelism=2, formats={})
    assert len(wide) == 18  # one unit a partition when a wave has enough partitions


# --- hashing -------------------------------------------------------------------------------------
def test_vectorized_xxhash64_of_bytes_equals_the_scalar_one():
    rng = random.Random(7)
    values = ["".join(rng.choice("ab\u00e9\u65e5\x00Z9") for _ in range(rng.randint(0, 90)))
              for _ in range(3000)]
    arr = pa.array(values)
    want = [sketch.xxhash64_bytes(v.encode()) for v in values]
    assert [int(h) for h in sketch.xxhash64_binary(arr)] == want
    assert [int(h) for h in sketch.xxhash64_binary(arr.slice(11, 200))] == want[11:211]
    assert [int(h) for h in sketch.xxhash64_binary(arr.cast(pa.large_string()))] == want
    raw = [v.encode() for v in values[:100]]
    assert [int(h) for h in sketch.xxhash64_binary(pa.array(raw, pa.binary()))] == want[:100]


def test_hll_registers_equal_a_plain_computation():
    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 2 ** 63, 50_000, dtype=np.int64).view(np.uint64)
    hashes[:3] = [0, 1, 1 << 52]
    p = layout.HLL_PRECISION
    want = np.zeros(1 << p, np.uint8)
    for h in hashes.tolist():
        rest = (h << p) & ((1 << 64) - 1)
        rank = min(64 - rest.bit_length() if rest else 64, 64 - p) + 1
        want[h >> (64 - p)] = max(want[h >> (64 - p)], rank)
    assert np.array_equal(sketch.hll_registers(hashes), want)


def test_wide_decimals_hash_like_java_big_integers():
    # BigInteger.toByteArray(): the shortest two's complement
    assert sketch._java_bytes(0) == b"\x00" and sketch._java_bytes(-1) == b"\xff"
    assert sketch._java_bytes(-128) == b"\x80" and sketch._java_bytes(128) == b"\x00\x80"
    assert sketch._java_bytes(255) == b"\x00\xff" and sketch._java_bytes(-129) == b"\xff\x7f"
    arr = pa.array([decimal.Decimal("-1.28"), decimal.Decimal("12345678901234567890.12")],
                   pa.decimal128(30, 2))
    got = sketch.spark_xxhash64(arr, "decimal(30,2)")
    assert [int(h) for h in got] == [sketch.xxhash64_bytes(b"\x80"), sketch.xxhash64_bytes(
        (1234567890123456789012).to_bytes(9, "big", signed=True))]


def test_doubles_print_as_spark_casts_them():
    """Values Spark 4's ``CAST(x AS STRING)`` was seen printing (Java's Double.toString)."""
    seen = {0.37: "0.37", 100.0: "100.0", 1e7: "1.0E7", 9999999.0: "9999999.0",
            0.001: "0.001", 0.00099: "9.9E-4", 1e21: "1.0E21",
            123456789.123: "1.23456789123E8", 1 / 3: "0.3333333333333333", -0.5: "-0.5",
            1.7976931348623157e308: "1.7976931348623157E308", 0.0: "0.0",
            float("nan"): "NaN", float("-inf"): "-Infinity"}
    for value, text in seen.items():
        assert double_to_string(value) == text, value
    floats = {1 / 7: "0.14285715", 1e7: "1.0E7", 1e-5: "1.0E-5", 16777216: "1.6777216E7"}
    for value, text in floats.items():
        assert double_to_string(float(np.float32(value)), single=True) == text, value


def test_register_statistic_checks_its_reduction_rule():
    from stats import compute

    with pytest.raises(ValueError, match="reduce is one of sum, min, max, mean"):
        compute.register_statistic("bad", "sum({value})", reduce="median")
    try:
        stat = compute.register_statistic("tot", "sum({value})", reduce="sum")
        assert stat.field.metadata == {b"reduce": b"sum"}
    finally:
        compute.unregister_statistic("tot")
