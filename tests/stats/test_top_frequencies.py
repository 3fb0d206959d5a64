"""A discrete column with too many distinct values to list (a key, an id: layout.FREQUENCY_LIMIT)
keeps only its most frequent repeated values in frequencies.parquet, with its exact distinct
count; the table level then takes its distinct count from the merged sketches and lists no
frequencies for it, instead of failing or holding every value. (The Spark SQL engine's side:
tests/stats/test_compute.py::test_sql_engine_lists_only_the_top_values_of_varied_columns.)"""
from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa
import pytest

from stats import arrow_compute, layout, reduce
from stats.sets import PartitionSet

COLUMNS = [("id", "bigint"), ("code", "string"), ("small", "int")]


@pytest.fixture
def limits(monkeypatch):
    monkeypatch.setattr(layout, "FREQUENCY_LIMIT", 100)
    monkeypatch.setattr(layout, "TOP_FREQUENCIES", 5)


def data(start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    ids[:30] = start  # one value 30 times ...
    ids[30:40] = start + 1  # ... one 10 times, then every other value once
    codes = [f"c{(i * 7) % 300}" for i in range(rows)]  # 300 values, most twice
    return pa.table({"id": ids, "code": codes, "small": (np.arange(rows) % 9).astype(np.int32)})


def expected_top(values: list, top: int) -> list[tuple[str, int]]:
    counts = collections.Counter(str(v) for v in values)
    repeated = [(v, c) for v, c in counts.items() if c > 1]
    return sorted(repeated, key=lambda vc: (-vc[1], vc[0]))[:top]


def write(tmp_path, name: str, table: pa.Table) -> PartitionSet:
    path = tmp_path / "_stats" / name / "s1"
    arrow_compute.write_files(arrow_compute.compute_set(table, COLUMNS), str(path))
    return PartitionSet(str(path), name)


def test_a_varied_column_keeps_its_top_repeated_values_and_its_exact_distinct_count(
        tmp_path, limits):
    table = data(0, 600)
    pset = write(tmp_path, "p=1", table)
    rows = pset.rows()
    assert rows["id"]["distinct_count"] == 600 - 40 + 2 and rows["id"]["distinct_exact"]
    assert rows["code"]["distinct_count"] == 300
    got = {c: list(zip(*[pset.frequencies(c).column(k).to_pylist()
                         for k in ("value", "frequency")])) for c, _ in COLUMNS}
    assert got["id"] == [("0", 30), ("1", 10)]
    assert got["code"] == expected_top(table.column("code").to_pylist(), 5)
    assert len(got["small"]) == 9  # below the limit: every value
    assert pset.distinct_values("id") < rows["id"]["distinct_count"]
    assert pset.distinct_values("code") < rows["code"]["distinct_count"]
    assert pset.top_only("id") and pset.top_only("code") and not pset.top_only("small")
    assert pset.distinct_values("small") == rows["small"]["distinct_count"]


def test_the_table_level_of_varied_columns_comes_from_the_sketches(tmp_path, limits):
    sets = [write(tmp_path, "p=1", data(0, 600)), write(tmp_path, "p=2", data(10_000, 400))]
    path = reduce.write_table_set(str(tmp_path), sets)
    level = PartitionSet(path.removeprefix("file:"), "_table_")
    rows = level.rows()
    true_ids = (600 - 40 + 2) + (400 - 40 + 2)
    assert not rows["id"]["distinct_exact"]
    assert abs(rows["id"]["distinct_count"] - true_ids) <= 0.06 * true_ids
    assert not rows["code"]["distinct_exact"]
    assert abs(rows["code"]["distinct_count"] - 300) <= 0.06 * 300
    assert rows["small"]["distinct_exact"] and rows["small"]["distinct_count"] == 9
    assert len(level.frequencies("id")) == 0 and len(level.frequencies("code")) == 0
    assert level.top_only("id") and level.top_only("code") and not level.top_only("small")
    assert len(level.frequencies("small")) == 9
