"""``hms-proxy stats compute`` end to end: Spark reads tables through our server, and every
statistic of every column of every partition is checked against values computed independently
with pyarrow (``pyarrow.dataset`` over the same data files) and plain Python.

One Spark session (in this process) creates and fills the tables through our server and runs
the job's Python API (with user-defined statistics); the CLI runs once as a subprocess (its own
Spark and server) for ``--partitions``, ``--exact-quantiles`` and ``--bins``.

The job's default engine (``stats.compute.engine``: Spark tasks computing whole columns with pyarrow)
gives exact percentiles and distinct counts; the SQL engine (``--engine sql``, also what the
Arrow engine hands too-large partitions to) gives approximate percentiles by default and
sketch estimates above ``--exact-distinct-limit``. Both are checked against the same
references, and their sets against each other.

Independent references: histograms assign a value to the bin ``k`` with ``edges[k] <= v <
edges[k+1]`` (the last bin closed), edges as ``numpy.linspace`` — what ``numpy.histogram``
gives; exact percentiles are ``numpy.percentile(method="linear")`` (rank ``p * (n - 1)``,
interpolated), which Spark's ``percentile`` computes too; approximate ones must lie between the
values at ranks ``(p -/+ 0.001) * (n - 1)`` (accuracy 10,000: a rank error under n/10,000).
"""
from __future__ import annotations

import bisect
import datetime
import decimal
import math
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc  # noqa: E402
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pyspark  # noqa: F401
import pytest

from kvmodel.store import open_store  # noqa: E402
from stats import compute, layout  # noqa: E402
from stats.sets import PartitionSet
from tests.support.process import REPO_ROOT  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

DB = "stats_t"
COLUMNS = [("i", "int"), ("b", "bigint"), ("d", "double"), ("m", "decimal(10,2)"),
           ("s", "string"), ("f", "boolean"), ("dt", "date"), ("ts", "timestamp"),
           ("r", "double")]
PARTS = {"2024-01-01": (0, 1000), "2024-01-02": (5000, 500), "2024-01-03": (9000, 60)}
FLAT_ROWS = 100_000


def select_rows(offset: int, rows: int, distinct_b: bool = False) -> str:
    b = "id * 7919 + 13" if distinct_b else "(id % 4000) * 1000003 - 5"
    return f"""
    SELECT
      CASE WHEN id % 17 = 0 THEN NULL ELSE CAST(id % 97 - 40 AS INT) END,
      {b},
      CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id AS DOUBLE) * 0.37 - 100.25 END,
      CAST((id % 301) * 1.25 - 50 AS DECIMAL(10,2)),
      CASE WHEN id % 13 = 0 THEN NULL
           WHEN id % 3 = 0 THEN concat('é', CAST(id % 7 AS STRING), '日本')
           ELSE concat('v', CAST(id % 23 AS STRING)) END,
      CASE WHEN id % 19 = 0 THEN NULL ELSE id % 3 = 0 END,
      date_add(DATE'2020-01-01', CAST(id % 400 AS INT)),
      CASE WHEN id % 29 = 0 THEN NULL
           ELSE timestamp_micros(1700000000000000 + id * 1234567) END,
      CASE WHEN id >= 9000 AND id < 10000 THEN NULL
           WHEN id % 7 = 0 THEN CAST('NaN' AS DOUBLE)
           WHEN id % 5 = 0 THEN NULL ELSE CAST(id % 50 AS DOUBLE) / 4 END
    FROM range({offset}, {offset + rows})"""


def kurtosis(values: list[float]) -> float | None:
    """Spark's kurtosis: the excess kurtosis of the population moments."""
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    m2 = math.fsum((v - mean) ** 2 for v in values) / n
    m4 = math.fsum((v - mean) ** 4 for v in values) / n
    return None if m2 == 0 else m4 / (m2 * m2) - 3


def value_range(arr) -> float | None:
    """A Python statistic: max - min of the column's numeric value."""
    arr = arr.drop_null()
    if len(arr) == 0:
        return None
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(lo, datetime.datetime):
        return (hi - lo) / datetime.timedelta(microseconds=1)
    if isinstance(lo, datetime.date):
        return float((hi - lo).days)
    return float(hi) - float(lo)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    work = tmp_path_factory.mktemp("stats-compute")
    store_path = work / "store"
    server = start_proxy(work / "server", store=store_path)
    spark = None
    try:
        spark = compute.build_session(server.uri, "local[2]", workdir=str(work / "spark"))
        spark.sql(f"CREATE DATABASE {DB}")
        cols = ", ".join(f"{n} {t.upper()}" for n, t in COLUMNS)
        spark.sql(f"CREATE TABLE {DB}.events ({cols}) PARTITIONED BY (ds STRING) "
                  "STORED AS PARQUET")
        spark.sql(f"CREATE TABLE {DB}.flat ({cols}) STORED AS PARQUET")
        for ds, (offset, rows) in PARTS.items():
            spark.sql(f"INSERT INTO {DB}.events PARTITION (ds='{ds}') "
                      + select_rows(offset, rows))
        spark.sql(f"INSERT INTO {DB}.flat " + select_rows(0, FLAT_ROWS, distinct_b=True))
        store = open_store(str(store_path))
        setup = store.commit("main", "tables and data", author="test")
        compute.register_statistic("kurt", "kurtosis({value})")
        compute.register_statistic("range", value_range)
        try:
            events = compute.compute(spark, server.uri, store, DB, "events",
                                     store_path=str(store_path))
            flat = compute.compute(spark, server.uri, store, DB, "flat",
                                   options=compute.Options(exact_quantiles=True,
                                                           exact_distinct_limit=0, bins=200),
                                   store_path=str(store_path))
        finally:
            compute.unregister_statistic("kurt")
            compute.unregister_statistic("range")
        yield {"work": work, "store_path": store_path, "store": store, "server": server,
               "setup": setup, "events": events, "flat": flat, "spark": spark}
        store.close()
    finally:
        if spark is not None:
            spark.stop()
        server.stop()


def cli(*args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", "stats", "compute", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


# --- independent references ------------------------------------------------------------------
def local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def partition_data(set_path: str) -> pa.Table:
    """The data files of the partition a set describes, read by pyarrow."""
    stats_dir = local(set_path).split(f"/{layout.STATS_DIR}/")[0]
    part = local(set_path).split(f"/{layout.STATS_DIR}/")[1].rsplit("/", 1)[0]
    data_dir = stats_dir if part == layout.UNPARTITIONED else os.path.join(stats_dir, part)
    return pads.dataset(data_dir, format="parquet").to_table()


def numeric(v, htype: str):
    if v is None:
        return None
    base = layout.base_type(htype)
    if base == "date":
        return float((v - datetime.date(1970, 1, 1)).days)
    if base == "timestamp":
        return float((v - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1))
    return float(v)


def text(v, htype: str) -> str | None:
    if v is None:
        return None
    base = layout.base_type(htype)
    if base == "boolean":
        return "true" if v else "false"
    if base == "timestamp":
        out = v.strftime("%Y-%m-%d %H:%M:%S")
        return out + (f".{v.microsecond:06d}".rstrip("0") if v.microsecond else "")
    if base == "date":
        return v.isoformat()
    return str(v)


def linear_percentile(sorted_values: list[float], p: float) -> float:
    pos = p * (len(sorted_values) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def approx(a, b, rel=1e-9, abs_=1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def check_set(set_path: str, *, exact_quantiles: bool, bins: int, exact_distinct: bool,
              udfs: bool) -> dict:
    """Every statistic of every column of one set against pyarrow on its data files
    (``exact_quantiles``, ``exact_distinct``: what the set must say it holds)."""
    directory = local(set_path)
    assert sorted(os.listdir(directory)) == sorted(layout.FILES)
    data = partition_data(set_path)
    stats = pq.read_table(os.path.join(directory, layout.STATISTICS))
    expected_schema = layout.STATISTICS_SCHEMA
    if udfs:
        expected_schema = expected_schema.append(pa.field("udf_kurt", pa.float64())).append(
            pa.field("udf_range", pa.float64()))
    assert stats.schema.equals(expected_schema), stats.schema
    rows = stats.to_pylist()
    assert [(r["column"], r["type"]) for r in rows] == COLUMNS
    sketches = {r["column"]: r["hll"] for r in
                pq.read_table(os.path.join(directory, layout.SKETCHES)).to_pylist()}
    hist = pq.read_table(os.path.join(directory, layout.HISTOGRAMS))
    freq_file = pq.ParquetFile(os.path.join(directory, layout.FREQUENCIES))
    assert freq_file.schema_arrow.equals(layout.FREQUENCIES_SCHEMA)
    freq = freq_file.read().to_pylist()
    n = data.num_rows
    for row, (name, htype) in zip(rows, COLUMNS):
        where = f"{set_path} column {name}"
        arr = data.column(name)
        base = layout.base_type(htype)
        # NaN is a value (counted, distinct) but no number (out of min/max, mean...)
        values = [v for v in arr.to_pylist() if v is not None and v == v]
        assert row["count"] == n, where
        assert row["null_count"] == arr.null_count, where
        distinct = pc.count_distinct(arr, mode="only_valid").as_py()
        # the sketch
        estimate = compute.hll_estimate(sketches[name])
        assert abs(estimate - distinct) <= max(0.03 * distinct, 2), (where, estimate, distinct)
        if layout.is_discrete(htype) or exact_distinct:
            assert (row["distinct_count"], row["distinct_exact"]) == (distinct, True), where
        else:
            assert (row["distinct_count"], row["distinct_exact"]) == (estimate, False), where
        if not values:  # an all-null column (here: r in ds=2024-01-03)
            assert arr.null_count == n and row["distinct_count"] == 0, where
            for key in ("min", "max", "min_value", "max_value", "mean", "stddev", "sum", "p50"):
                assert row[key] is None, (where, key)
            assert row["distinct_exact"] is True, where
            assert [b for b in hist.column(name).to_pylist() if b is not None] == [], where
            assert [r for r in freq if r["column"] == name] == [], where
            continue
        lo, hi = min(values), max(values)
        if base == "double":
            assert float(row["min"]) == lo and float(row["max"]) == hi, where
        else:
            assert (row["min"], row["max"]) == (text(lo, htype), text(hi, htype)), where
        if layout.is_numeric(htype):
            nums = sorted(numeric(v, htype) for v in values)
            assert (row["min_value"], row["max_value"]) == (nums[0], nums[-1]), where
            mean = math.fsum(nums) / len(nums)
            assert approx(row["mean"], mean), (where, row["mean"], mean)
            sd = math.sqrt(math.fsum((v - mean) ** 2 for v in nums) / len(nums))
            assert approx(row["stddev"], sd, rel=1e-7), (where, row["stddev"], sd)
            if base in ("date", "timestamp"):
                assert row["sum"] is None, where
            else:
                exact_sum = sum(decimal.Decimal(str(v)) for v in values) if base == "decimal" \
                    else math.fsum(values)
                assert approx(row["sum"], float(exact_sum)), where
            assert row["percentiles_exact"] is exact_quantiles, where
            for p in layout.PERCENTILES:
                got = row[layout.percentile_name(p)]
                if exact_quantiles:
                    assert approx(got, linear_percentile(nums, p / 100)), (where, p, got)
                else:
                    lo_rank = max(0, math.floor((p / 100 - 0.001) * (len(nums) - 1)))
                    hi_rank = min(len(nums) - 1, math.ceil((p / 100 + 0.001) * (len(nums) - 1)))
                    assert nums[lo_rank] <= got <= nums[hi_rank], (where, p, got)
            if udfs:
                assert approx(row["udf_kurt"], kurtosis(nums), rel=1e-6), where
                assert approx(row["udf_range"], nums[-1] - nums[0]), where
            check_histogram(hist.column(name).to_pylist(), nums, bins, where)
        else:
            for key in ("min_value", "max_value", "mean", "stddev", "sum", "p50"):
                assert row[key] is None, (where, key)
            assert name not in hist.column_names
            if udfs:
                assert row["udf_kurt"] is None and row["udf_range"] is None, where
        if base == "string":
            lengths = pc.utf8_length(arr.drop_null())
            assert approx(row["avg_length"], pc.mean(lengths).as_py()), where
            assert row["max_length"] == pc.max(lengths).as_py(), where
        else:
            assert row["avg_length"] is None and row["max_length"] is None, where
        if base == "boolean":
            assert row["true_count"] == sum(1 for v in values if v), where
            assert row["false_count"] == sum(1 for v in values if not v), where
        else:
            assert row["true_count"] is None and row["false_count"] is None, where
        got_freq = [(r["value"], r["frequency"]) for r in freq if r["column"] == name]
        if layout.is_discrete(htype):
            counts = pc.value_counts(arr.drop_null()).to_pylist()
            want = sorted(((text(c["values"], htype), c["counts"]) for c in counts),
                          key=lambda vc: (-vc[1], vc[0].encode()))
            assert got_freq == want, where
        else:
            assert got_freq == [], where
    # frequencies: by column in table order, a row group per column
    order = [c for c, _ in COLUMNS]
    seen = [r["column"] for r in freq]
    assert seen == sorted(seen, key=order.index)
    groups = [freq_file.read_row_group(g).column("column").unique().to_pylist()
              for g in range(freq_file.num_row_groups)]
    assert groups == [[c] for c, t in COLUMNS if layout.is_discrete(t)]
    return {r["column"]: r for r in rows}


def check_histogram(bins_read: list, nums: list[float], nbins: int, where: str) -> None:
    lo, hi = nums[0], nums[-1]
    used = [b for b in bins_read if b is not None]
    assert all(b is None for b in bins_read[len(used):]), where
    if lo == hi:
        assert used == [{"lower": lo, "upper": hi, "count": len(nums)}], where
        return
    step = (hi - lo) / nbins
    edges = [k * step + lo for k in range(nbins)] + [hi]  # numpy.linspace(lo, hi, nbins + 1)
    counts = [0] * nbins
    for v in nums:
        counts[min(bisect.bisect_right(edges, v) - 1, nbins - 1)] += 1
    assert [(b["lower"], b["upper"]) for b in used] == list(zip(edges, edges[1:])), where
    assert [b["count"] for b in used] == counts, where
    assert len(bins_read) == nbins, where


# --- the tests -------------------------------------------------------------------------------
def test_partitioned_table_every_statistic(env):
    result = env["events"]
    assert sorted(result.sets) == [f"ds={ds}" for ds in sorted(PARTS)]
    for name, path in result.sets.items():
        assert f"/{layout.STATS_DIR}/{name}/" in path
        check_set(path, exact_quantiles=True, bins=layout.DEFAULT_BINS, exact_distinct=True,
                  udfs=True)
        assert result.rows[name] == PARTS[name.split("=", 1)[1]][1]


def test_unpartitioned_table_exact_quantiles_and_sketches(env):
    result = env["flat"]
    assert list(result.sets) == [layout.UNPARTITIONED]
    path = result.sets[layout.UNPARTITIONED]
    assert f"/{layout.STATS_DIR}/_/" in path
    rows = check_set(path, exact_quantiles=True, bins=200, exact_distinct=True, udfs=True)
    # the 100,000-distinct column: the sketch within 3% (exact here: a discrete column)
    assert rows["b"]["distinct_count"] == FLAT_ROWS
    sketch = {r["column"]: r["hll"]
              for r in pq.read_table(os.path.join(local(path), layout.SKETCHES)).to_pylist()}
    assert abs(compute.hll_estimate(sketch["b"]) - FLAT_ROWS) <= 0.03 * FLAT_ROWS


def test_sketches_merge_across_partitions(env):
    sets = env["events"].sets.values()
    merged = compute.hll_merge(*[
        {r["column"]: r["hll"] for r in pq.read_table(
            os.path.join(local(p), layout.SKETCHES)).to_pylist()}["b"] for p in sets])
    data = pa.concat_tables([partition_data(p).select(["b"]) for p in sets])
    distinct = pc.count_distinct(data.column("b")).as_py()
    assert abs(compute.hll_estimate(merged) - distinct) <= 0.03 * distinct


def test_sketch_registers_match_an_independent_xxhash64(env):
    """Every register of every sketch equals what Spark's xxhash64 (seed 42), re-implemented
    in Python by stats.reduce, gives for the partition's values."""
    import numpy  # noqa: F401

    from stats import reduce as red

    for path in [*env["events"].sets.values(), env["flat"].sets["_"]]:
        data = partition_data(path)
        sketches = {r["column"]: r["hll"] for r in
                    pq.read_table(os.path.join(local(path), layout.SKETCHES)).to_pylist()}
        assert list(sketches) == [c for c, _ in COLUMNS]
        for name, htype in COLUMNS:
            regs = red.hll_registers(red.spark_xxhash64(data.column(name), htype))
            assert bytes(regs) == sketches[name], (path, name)


def test_stats_directory_is_not_data(env):
    """``_stats`` inside an unpartitioned table's directory is hidden from Spark's reads."""
    assert env["spark"].table(f"{DB}.flat").count() == FLAT_ROWS


def test_pointers_recorded_in_one_commit(env):
    store, setup = env["store"], env["setup"]
    result = env["events"]
    commit = result.recorded
    assert commit is not None and commit.parents == (setup.id,)
    assert commit.message == f"stats compute {DB}.events (3 partitions)"
    changed = [e.key for e in store.diff(setup.id, commit.id)]
    assert changed == sorted(layout.pointer_key(DB, "events", p)
                             for p in [*result.sets, layout.TABLE_LEVEL])
    fingerprint = layout.schema_fingerprint(COLUMNS)
    for part, path in result.sets.items():
        pointer = layout.read_pointer(store.get("main", layout.pointer_key(DB, "events", part)))
        assert pointer["set"] == path and pointer["commit"] == setup.id
        assert pointer["schema"] == fingerprint and pointer["rows"] == result.rows[part]
        assert pointer["data"].startswith(path.split(f"/{layout.STATS_DIR}/")[0] + f"/{part}|files=")
    flat = layout.read_pointer(store.get("main", layout.pointer_key(DB, "flat", None)))
    assert flat["set"] == env["flat"].sets["_"] and flat["rows"] == FLAT_ROWS
    assert env["flat"].recorded.parents == (commit.id,)
    assert env["flat"].table_level is None
    assert store.get("main", layout.pointer_key(DB, "flat", layout.TABLE_LEVEL)) is None
    assert list(store.staged("main")) == []


def test_table_level_set_reduced_from_the_partition_sets(env):
    """The ``_table_`` set recorded with the partition pointers is the reduction of their
    sets, and the server answers table-level statistics from it."""
    from hms_proxy.hms.importer import open_client
    from hms_proxy.thrift.gen.hive_metastore import ttypes as T
    from stats import frequencies, reduce, serving

    store, result = env["store"], env["events"]
    level = result.table_level
    assert level.used == sorted(result.sets) and level.stale == level.missing == []
    assert level.rows == sum(result.rows.values())
    pointer = layout.read_pointer(store.get(result.recorded.id, layout.pointer_key(
        DB, "events", layout.TABLE_LEVEL)))
    assert pointer["set"] == level.set and f"/{layout.STATS_DIR}/{layout.TABLE_LEVEL}/" in level.set
    assert pointer["schema"] == layout.schema_fingerprint(COLUMNS)
    assert pointer["commit"] == env["setup"].id and pointer["rows"] == level.rows
    sets = [PartitionSet(local(result.sets[p]), p) for p in sorted(result.sets)]
    want = reduce.reduce_statistics(sets, frequencies=frequencies.table_frequencies(sets))
    got = pq.read_table(os.path.join(local(level.set), layout.STATISTICS))
    assert got.to_pylist() == want.to_pylist()
    rows = {r["column"]: r for r in want.to_pylist()}
    names = [n for n, _ in COLUMNS]
    with open_client(env["server"].uri) as client:
        served = client.get_table_statistics_req(T.TableStatsRequest(DB, "events", names))
    by_name = {o.colName: o for o in served.tableStats}
    assert sorted(by_name) == sorted(names)
    for name, htype in COLUMNS:
        assert by_name[name].statsData == serving.to_stats_data(htype, rows[name], T), name


def test_cli_partition_filter_exact_quantiles(env):
    store = env["store"]
    before = {p: store.get("main", layout.pointer_key(DB, "events", p))
              for p in env["events"].sets}
    done = cli(f"{DB}.events", "--partitions", "ds >= '2024-01-02'", "--exact-quantiles",
               "--bins", "50", "--store", str(env["store_path"]), "--author", "carol")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 partitions" in done.stderr
    assert f"stats compute {DB}.events (2 partitions" in done.stdout
    assert "table-level statistics reduced from 3 of 3 partitions' sets" in done.stdout
    head = store.log("main", limit=1)
    commit = next(iter(head))
    assert commit.author == "carol"
    assert commit.message == f"stats compute {DB}.events (2 partitions)"
    after = {p: store.get("main", layout.pointer_key(DB, "events", p)) for p in before}
    assert after["ds=2024-01-01"] == before["ds=2024-01-01"]
    for part in ("ds=2024-01-02", "ds=2024-01-03"):
        assert after[part] != before[part]
        pointer = layout.read_pointer(after[part])
        check_set(pointer["set"], exact_quantiles=True, bins=50, exact_distinct=True,
                  udfs=False)


def test_cli_missing_table_and_bad_ref(env):
    done = cli(f"{DB}.nope", "--store", str(env["store_path"]),
               "--metastore", env["server"].uri, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == f"hms-proxy: error: table {DB}.nope does not exist at ref main"
    done = cli(f"{DB}.events", "--ref", "nobranch", "--store", str(env["store_path"]),
               "--metastore", env["server"].uri, timeout=60)
    assert done.returncode == 1 and "nobranch" in done.stderr, done.stderr
    done = cli("no_dot", "--store", str(env["store_path"]), timeout=60)
    assert done.returncode == 2 and "DB.TABLE" in done.stderr, done.stderr
    env["store"].create_tag("s1tag", "main")
    done = cli(f"{DB}.events", "--ref", "s1tag", "--store", str(env["store_path"]),
               "--metastore", env["server"].uri, timeout=60)
    assert done.returncode == 2 and "is not a branch" in done.stderr, done.stderr


def test_uncommitted_table_changes_keep_the_pointers_uncommitted(env):
    """On a branch where the table has uncommitted changes, the pointers are staged beside
    them (a ``db@ref`` name picks the branch); the branch's head and main do not move."""
    store, spark = env["store"], env["spark"]
    store.create_branch("s1dev", "main")
    head = store.resolve("s1dev").commit
    spark.sql(f"ALTER TABLE `{DB}@s1dev`.events SET TBLPROPERTIES ('reviewed'='no')")
    result = compute.compute(spark, env["server"].uri, store, DB, "events", ref="s1dev",
                             partition_filter="ds = '2024-01-03'",
                             options=compute.Options(bins=10), store_path=str(env["store_path"]))
    assert result.recorded is None and list(result.sets) == ["ds=2024-01-03"]
    key = layout.pointer_key(DB, "events", "ds=2024-01-03")
    assert {e.key for e in store.staged("s1dev")} == {
        f"db/{DB}/table/events", key, layout.pointer_key(DB, "events", layout.TABLE_LEVEL)}
    assert store.resolve("s1dev").commit == head
    pointer = layout.read_pointer(store.get("s1dev", key))
    assert pointer["commit"] == head and pointer["set"] == result.sets["ds=2024-01-03"]
    assert store.get("main", key) != store.get("s1dev", key)
    check_set(pointer["set"], exact_quantiles=True, bins=10, exact_distinct=True, udfs=False)


def test_default_bins_match_the_layout():
    assert compute.DEFAULT_BINS == layout.DEFAULT_BINS


@pytest.mark.parametrize("fmt", ["ORC", "TEXTFILE"])
def test_orc_and_text_tables_give_the_same_statistics(env, fmt):
    """Hive tables in ORC and text read through Spark like parquet ones: a copy of one
    partition's rows stored as ORC / text gets the statistics, frequencies and histograms of
    the parquet partition (approximate percentiles and the partition's user-defined
    statistics aside)."""
    spark, ds = env["spark"], "2024-01-02"
    name = f"copy_{fmt.lower()}"
    cols = ", ".join(n for n, _ in COLUMNS)
    spark.sql(f"CREATE TABLE {DB}.{name} STORED AS {fmt} AS "
              f"SELECT {cols} FROM {DB}.events WHERE ds = '{ds}'")
    result = compute.compute(spark, env["server"].uri, env["store"], DB, name,
                             store_path=str(env["store_path"]))
    copy_dir, part_dir = local(result.sets[layout.UNPARTITIONED]), \
        local(env["events"].sets[f"ds={ds}"])
    skipped = {layout.percentile_name(p) for p in layout.PERCENTILES}

    def rows(directory):
        table = pq.read_table(os.path.join(directory, layout.STATISTICS)).to_pylist()
        return [{k: v for k, v in r.items() if k not in skipped and not k.startswith("udf_")}
                for r in table]

    assert rows(copy_dir) == rows(part_dir)
    for name_ in (layout.FREQUENCIES, layout.HISTOGRAMS, layout.SKETCHES):
        assert pq.read_table(os.path.join(copy_dir, name_)).equals(
            pq.read_table(os.path.join(part_dir, name_))), name_


def _set_tables(path: str) -> dict:
    return {name: pq.read_table(os.path.join(local(path), name)) for name in layout.FILES}


def test_sql_engine_every_statistic_and_the_same_sets(env):
    """``--engine sql`` (Spark aggregations only): every statistic against the references,
    approximate percentiles flagged as such, sketch estimates above the exact-distinct limit;
    and, but for percentiles, the very sets the Arrow engine wrote."""
    store, spark = env["store"], env["spark"]
    store.create_branch("s1sql", "main")
    compute.register_statistic("kurt", "kurtosis({value})")
    compute.register_statistic("range", value_range)
    try:
        events = compute.compute(spark, env["server"].uri, store, DB, "events", ref="s1sql",
                                 options=compute.Options(engine="sql"),
                                 store_path=str(env["store_path"]))
        flat = compute.compute(spark, env["server"].uri, store, DB, "flat", ref="s1sql",
                               options=compute.Options(engine="sql", exact_quantiles=True,
                                                       exact_distinct_limit=0, bins=200),
                               store_path=str(env["store_path"]))
    finally:
        compute.unregister_statistic("kurt")
        compute.unregister_statistic("range")
    skipped = {"percentiles_exact", *(layout.percentile_name(p) for p in layout.PERCENTILES)}
    for name, path in events.sets.items():
        check_set(path, exact_quantiles=False, bins=layout.DEFAULT_BINS, exact_distinct=True,
                  udfs=True)
        arrow, sql = _set_tables(env["events"].sets[name]), _set_tables(path)
        for file in (layout.FREQUENCIES, layout.HISTOGRAMS, layout.SKETCHES):
            assert sql[file].equals(arrow[file]), (name, file)
        for a, b in zip(sql[layout.STATISTICS].to_pylist(), arrow[layout.STATISTICS].to_pylist(),
                        strict=True):
            for key in a:
                if key in skipped:
                    continue
                if isinstance(a[key], float):  # moments summed in another order
                    assert approx(a[key], b[key], rel=1e-7), (name, a["column"], key)
                else:
                    assert a[key] == b[key], (name, a["column"], key)
    check_set(flat.sets[layout.UNPARTITIONED], exact_quantiles=True, bins=200,
              exact_distinct=False, udfs=True)


def test_sql_engine_lists_only_the_top_values_of_varied_columns(env, monkeypatch):
    """A discrete column with more distinct values than layout.FREQUENCY_LIMIT (here 200: the
    bigint b and the date dt of the two larger partitions) is counted exactly in Spark and only
    its TOP_FREQUENCIES (here 50) most frequent repeated values are collected: the very rows of
    the Arrow engine's complete list, cut the same way; its sketch and histogram unchanged. The
    table level takes their distinct counts from the sketches."""
    monkeypatch.setattr(layout, "FREQUENCY_LIMIT", 200)
    monkeypatch.setattr(layout, "TOP_FREQUENCIES", 50)
    store, spark = env["store"], env["spark"]
    store.create_branch("s1top", "main")
    result = compute.compute(spark, env["server"].uri, store, DB, "events", ref="s1top",
                             options=compute.Options(engine="sql"),
                             store_path=str(env["store_path"]))
    cut = set()
    for name, path in result.sets.items():
        full, top = PartitionSet(local(env["events"].sets[name])), PartitionSet(local(path))
        full_rows, top_rows = full.rows(), top.rows()
        for column, htype in COLUMNS:
            assert top_rows[column]["distinct_count"] == full_rows[column]["distinct_count"]
            if not layout.is_discrete(htype):
                continue
            complete = full.frequencies(column)
            if full_rows[column]["distinct_count"] > 200:
                cut.add((name, column))
                repeated = complete.filter(pc.greater(complete["frequency"], 1))
                assert top.frequencies(column).equals(repeated.slice(0, 50)), (name, column)
                assert top.distinct_values(column) < top_rows[column]["distinct_count"]
            else:
                assert top.frequencies(column).equals(complete), (name, column)
        for file in (layout.HISTOGRAMS, layout.SKETCHES):
            assert _set_tables(path)[file].equals(_set_tables(env["events"].sets[name])[file])
    assert cut == {(p, c) for p in ("ds=2024-01-01", "ds=2024-01-02") for c in ("b", "dt")}
    level = PartitionSet(local(result.table_level.set)).rows()
    exact = PartitionSet(local(env["events"].table_level.set)).rows()
    for column in ("b", "dt"):
        assert not level[column]["distinct_exact"]
        assert abs(level[column]["distinct_count"] - exact[column]["distinct_count"]) <= \
            0.05 * exact[column]["distinct_count"]
    assert level["s"] == {k: v for k, v in exact["s"].items() if not k.startswith("udf_")}


def test_partition_too_large_for_a_task_goes_to_the_sql_engine(env):
    """A partition with more values than ``task_values`` is computed by the SQL engine (its
    approximate percentiles say so); the others stay with the Arrow tasks."""
    store, spark = env["store"], env["spark"]
    store.create_branch("s1big", "main")
    result = compute.compute(spark, env["server"].uri, store, DB, "events", ref="s1big",
                             options=compute.Options(task_values=800),
                             store_path=str(env["store_path"]))
    flags = {}
    for name, path in result.sets.items():
        rows = pq.read_table(os.path.join(local(path), layout.STATISTICS)).to_pylist()
        flags[name] = {r["percentiles_exact"] for r in rows if r["percentiles_exact"] is not None}
        big = result.rows[name] > 800
        check_set(path, exact_quantiles=not big, bins=layout.DEFAULT_BINS, exact_distinct=True,
                  udfs=False)
    assert flags == {"ds=2024-01-01": {False}, "ds=2024-01-02": {True}, "ds=2024-01-03": {True}}
