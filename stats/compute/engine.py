"""The compute job's Arrow engine: Spark tasks that compute whole columns in Arrow.

The work of a ``stats compute`` run is cut into *units*: one partition's values of a group of
its columns. Each unit is one Spark task; in it, Python reads the unit's columns, one column
at a time, and computes every statistic of that column in one go
(:func:`stats.columns.column_statistics`: one sort of the values, everything else from the
sorted values), and sends back only the results (a statistics row, the frequencies, the
histogram bins, the sketch). The driver puts a partition's columns together into its set.
All the partitions of a run go through one Spark job per *wave* of partitions, so a table of
many partitions keeps every core busy, and a partition's columns are split into enough groups
that one partition alone does too.

Where a unit's values come from, fastest first:

1. **its data files, read by pyarrow in the task** when the partition is stored as Parquet or
   ORC at a local (``file:``) location and the master is local: the files Hive and Spark read (the partition
   directory's files, hidden ``_``/``.`` names left out), columns matched by name as Spark
   matches them (case-insensitive; ORC files with Hive's positional ``_colN`` names by
   position), a column missing from a file read as nulls, values cast to the column's type;
2. **Spark's own reader** otherwise (text, Avro, other file systems, or when the direct read
   fails, e.g. a file whose column type cannot be cast), through ``mapInArrow`` over the
   partition's rows read through the metastore (one task per unit: ``coalesce(1)``);
3. **the SQL engine** (:func:`stats.compute.compute_partition`, Spark aggregations that need
   no column in memory) for a partition with more values than a task may hold
   (``Options.task_values``, default 200,000,000: a direct read holds one column of the
   partition at a time, Spark's reader the unit's columns together).

A unit's statistics therefore hold one column of one partition in a Python worker's memory at
a time on the direct path (about 8 bytes a value, plus the sorted copy). Percentiles and distinct counts are
always exact here (``Options.exact_quantiles`` and ``exact_distinct_limit`` only matter to the
SQL engine). User-defined statistics with a Python function run in the tasks, over the whole
column; those given as SQL aggregates run as one Spark aggregation per partition.

The task code must be importable by Spark's Python workers: on a local master they run this
interpreter; on a cluster the ``stats`` and ``hms_proxy`` packages are shipped to the
executors (``addPyFile``), which need pyarrow and numpy installed.
"""
from __future__ import annotations

import logging
import os
import pickle
import re
import time
from dataclasses import dataclass, field

from hms_proxy.hms.warehouse import local_path
from stats import layout
from stats.compute.model import file_format, quote
from stats.compute.spark import compute_partition, partition_frame
from stats.compute.spark import sql_statistics as run_sql

log = logging.getLogger("stats.compute.engine")

UNITS_PER_CORE = 4  # units per core when a wave has few partitions (Spark balances them)
PARTITIONS_PER_CORE = 8  # partitions per core in a wave
_POSITIONAL = re.compile(r"_col(\d+)$")


class TooLarge(Exception):
    """A unit's partition has more rows than a task may hold."""


@dataclass
class Unit:
    """One Spark task: some columns of one partition."""
    part: int  # index into TableInfo.partitions
    columns: list[tuple[int, str, str]]  # (position in the table, name, Hive type)
    files: list[str] | None = None  # the data files, for a direct read
    fmt: str | None = None  # "parquet" | "orc" for a direct read


@dataclass
class Settings:
    """What every task needs (pickled into it)."""
    bins: int
    task_values: int
    py_statistics: list = field(default_factory=list)
    table_columns: int = 0  # the table's data columns (positional ORC names)


@dataclass
class Outcome:
    """A unit's answer: its columns' statistics, or why it must be computed another way."""
    part: int
    results: list = field(default_factory=list)  # (position, ColumnStatistics)
    rows: int = 0
    retry: str | None = None  # "read": with Spark's reader; "large": with the SQL engine
    reason: str = ""


# --- Arrow types of Hive types --------------------------------------------------------------------
def arrow_type(hive_type: str):
    """The Arrow type values of ``hive_type`` are cast to (None: read as stored)."""
    import pyarrow as pa

    from stats.columns import is_complex, layout_scale

    base = layout.base_type(hive_type)
    simple = {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
              "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(),
              "string": pa.string(), "varchar": pa.string(), "char": pa.string(),
              "binary": pa.binary(), "boolean": pa.bool_(), "date": pa.date32(),
              "timestamp": pa.timestamp("us")}
    if base == "decimal":
        inside = hive_type.partition("(")[2].rstrip(") ")
        precision = int(inside.split(",")[0]) if inside else 10
        return pa.decimal128(precision, layout_scale(hive_type))
    if is_complex(hive_type):
        return None
    return simple.get(base)


def _conform(array, hive_type: str):
    """Values read from a file, as the column's type (timestamps as UTC microseconds)."""
    import pyarrow as pa

    target = arrow_type(hive_type)
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if target is None or array.type == target:
        return array
    if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target):
        return array.cast(pa.timestamp("us", tz=array.type.tz), safe=False).cast(target)
    if pa.types.is_large_string(array.type) and pa.types.is_string(target):
        return array.cast(target)
    return array.cast(target)  # ArrowInvalid when it cannot: the unit is retried by Spark


# --- reading a unit's columns in the task -----------------------------------------------------------
def _match(names: list[str], column: str, position: int) -> int | None:
    """The index of a table column among a file's column names (Spark: case-insensitive;
    Hive's ORC files name columns ``_col0``, ``_col1``... by position)."""
    lowered = [n.lower() for n in names]
    if column.lower() in lowered:
        return lowered.index(column.lower())
    if names and all(_POSITIONAL.match(n) for n in names):
        for i, n in enumerate(names):
            if int(_POSITIONAL.match(n).group(1)) == position:
                return i
    return None


class _ParquetFiles:
    def __init__(self, files):
        import pyarrow.parquet as pq

        self.handles = [pq.ParquetFile(f) for f in files]
        self.rows = sum(h.metadata.num_rows for h in self.handles)

    def column(self, name: str, position: int, hive_type: str):
        import pyarrow as pa

        chunks = []
        for h in self.handles:
            names = h.schema_arrow.names
            index = _match(names, name, position)
            n = h.metadata.num_rows
            if index is None:
                chunks.append(pa.nulls(n, arrow_type(hive_type) or pa.null()))
                continue
            col = h.read(columns=[names[index]], use_threads=False).column(0)
            chunks.extend(_conform(c, hive_type) for c in col.chunks)
        return _chunked(chunks, hive_type)


class _OrcFiles:
    def __init__(self, files):
        from pyarrow import orc

        self.handles = [orc.ORCFile(f) for f in files]
        self.rows = sum(h.nrows for h in self.handles)

    def column(self, name: str, position: int, hive_type: str):
        import pyarrow as pa

        chunks = []
        for h in self.handles:
            names = h.schema.names
            index = _match(names, name, position)
            if index is None:
                chunks.append(pa.nulls(h.nrows, arrow_type(hive_type) or pa.null()))
                continue
            col = h.read(columns=[names[index]]).column(0)
            chunks.extend(_conform(c, hive_type) for c in col.chunks)
        return _chunked(chunks, hive_type)


def _chunked(chunks, hive_type):
    import pyarrow as pa

    chunks = [c for c in chunks if len(c)]
    target = arrow_type(hive_type)
    if not chunks:
        return pa.chunked_array([], type=target or pa.null())
    if len({c.type for c in chunks}) > 1:  # e.g. nulls of a file without the column
        chunks = [c.cast(chunks[0].type) if pa.types.is_null(c.type) else c for c in chunks]
    return pa.chunked_array(chunks)


def run_unit(unit: Unit, settings: Settings) -> Outcome:
    """A direct unit, in a Spark task: read its files' columns one at a time and compute."""
    from stats.columns import column_statistics

    outcome = Outcome(unit.part)
    try:
        files = (_ParquetFiles if unit.fmt == "parquet" else _OrcFiles)(unit.files)
        outcome.rows = files.rows
        if files.rows > settings.task_values:
            return Outcome(unit.part, retry="large",
                           reason=f"{files.rows:,} rows (more than {settings.task_values:,})")
        values = []
        for position, name, hive_type in unit.columns:
            values.append((position, name, hive_type,
                           files.column(name, position, hive_type)))
    except Exception as exc:  # noqa: BLE001 - any unreadable file: Spark's reader decides
        return Outcome(unit.part, retry="read",
                       reason=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    for position, name, hive_type, col in values:
        outcome.results.append((position, column_statistics(
            name, hive_type, col, settings.bins, settings.py_statistics)))
    return outcome


def spark_unit_function(unit: Unit, settings: Settings):
    """The ``mapInArrow`` function of a unit read by Spark: gathers the partition's batches
    (up to ``task_values`` values), computes its columns and yields one row: the pickled
    :class:`Outcome`."""
    def compute(batches):
        import pyarrow as pa

        from stats.columns import column_statistics

        gathered, rows = [], 0
        outcome = Outcome(unit.part)
        for batch in batches:
            rows += batch.num_rows
            if rows * len(unit.columns) > settings.task_values:
                outcome = Outcome(unit.part, retry="large",
                                  reason=f"more than {settings.task_values:,} values")
                break
            gathered.append(batch)
        if outcome.retry is None:
            outcome.rows = rows
            for i, (position, name, hive_type) in enumerate(unit.columns):
                chunks = [b.column(i) for b in gathered if b.num_rows]
                col = pa.chunked_array(chunks) if chunks else \
                    pa.nulls(0, arrow_type(hive_type) or pa.null())
                outcome.results.append((position, column_statistics(
                    name, hive_type, col, settings.bins, settings.py_statistics)))
        yield pa.RecordBatch.from_pydict({"outcome": [pickle.dumps(outcome)]},
                                         schema=pa.schema([("outcome", pa.binary())]))
    return compute


# --- planning ---------------------------------------------------------------------------------------
def data_files(location: str) -> list[str] | None:
    """A local partition directory's data files (hidden ``_``/``.`` names left out), or None
    when Spark has to list it (another file system, or sub-directories)."""

    path = local_path(location)
    if path is None:
        return None
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    files = []
    for entry in entries:
        if entry.name.startswith(("_", ".")):
            continue
        if entry.is_dir():
            return None
        files.append(entry.path)
    return files



def _weight(hive_type: str) -> int:

    base = layout.base_type(hive_type)
    if base in ("string", "varchar", "char", "binary"):
        return 3
    if base in ("bigint", "double", "timestamp", "decimal"):
        return 2
    return 1


def plan(info, part_indexes: list[int], parallelism: int, formats: dict) -> list[Unit]:
    """Units of a wave: each partition's columns in groups, enough groups overall for
    ``UNITS_PER_CORE`` units a core, balanced by a rough cost of each type."""
    columns = [(i, name, htype) for i, (name, htype) in enumerate(info.columns)]
    if not columns:
        return []
    wanted = max(1, -(-UNITS_PER_CORE * parallelism // max(1, len(part_indexes))))
    groups = min(len(columns), wanted)
    units = []
    for p in part_indexes:
        part = info.partitions[p]
        fmt = formats.get(p)
        files = data_files(part.location) if fmt else None
        if files is None:  # Spark reads it: one scan of the partition per group
            fmt = None
        loads = [0] * groups
        members: list[list] = [[] for _ in range(groups)]
        for col in sorted(columns, key=lambda c: -_weight(c[2])):
            g = loads.index(min(loads))
            loads[g] += _weight(col[2])
            members[g].append(col)
        for cols in members:
            if cols:
                units.append(Unit(p, sorted(cols), files, fmt))
    return units


# --- running ----------------------------------------------------------------------------------------
def ship_code(spark) -> None:
    """On a cluster, send the ``stats`` and ``hms_proxy`` packages to the executors (once)."""
    import tempfile
    import zipfile

    if getattr(ship_code, "_shipped", None) is spark or \
            spark.sparkContext.master.startswith("local"):
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(tempfile.mkdtemp(prefix="hms-stats-code-"), "hms_stats_code.zip")
    with zipfile.ZipFile(path, "w") as zf:
        for package in ("stats", "hms_proxy"):
            for dirpath, dirnames, filenames in os.walk(os.path.join(root, package)):
                dirnames[:] = [d for d in dirnames if d != "__pycache__"]
                for f in filenames:
                    if f.endswith(".py"):
                        full = os.path.join(dirpath, f)
                        zf.write(full, os.path.relpath(full, root))
    spark.sparkContext.addPyFile(path)
    ship_code._shipped = spark


def run_direct(spark, units: list[Unit], settings: Settings) -> list[Outcome]:
    if not units:
        return []
    sc = spark.sparkContext
    rdd = sc.parallelize(list(enumerate(units)), len(units))
    answers = rdd.map(lambda item: (item[0], run_unit(item[1], settings))).collect()
    return [outcome for _, outcome in sorted(answers, key=lambda a: a[0])]


def run_with_spark_reader(spark, info, units: list[Unit], settings: Settings) -> list[Outcome]:
    """Units whose rows Spark reads (``mapInArrow``, one task per unit)."""
    from functools import reduce


    if not units:
        return []
    frames = []
    for unit in units:
        df = partition_frame(spark, info, info.partitions[unit.part])
        df = df.select(*[quote(name) for _, name, _ in unit.columns]).coalesce(1)
        frames.append(df.mapInArrow(spark_unit_function(unit, settings), "outcome binary"))
    rows = reduce(lambda a, b: a.unionAll(b), frames).collect()
    return [pickle.loads(row.outcome) for row in rows]


def compute_sets(spark, info, options, statistics):
    """Compute the sets of ``info.partitions``: yields ``(partition index, rows, tables)``
    (:func:`stats.columns.assemble`'s tables) partition by partition, wave by wave."""
    from stats import columns as col_stats

    ship_code(spark)
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    py_statistics = [s for s in statistics if s.fn is not None]
    sql_statistics = [s for s in statistics if s.sql is not None]
    settings = Settings(options.bins, options.task_values, py_statistics, len(info.columns))
    # pyarrow reads local files in the tasks only where the tasks run on this machine
    local = spark.sparkContext.master.startswith("local")
    formats = {i: p.file_format for i, p in enumerate(info.partitions)} if local else {}
    per_wave = PARTITIONS_PER_CORE * parallelism
    indexes = list(range(len(info.partitions)))
    for start in range(0, len(indexes), per_wave):
        wave = indexes[start:start + per_wave]
        started = time.monotonic()
        units = plan(info, wave, parallelism, formats)
        direct = [u for u in units if u.fmt is not None]
        outcomes = run_direct(spark, direct, settings)
        again = [u for u, o in zip(direct, outcomes) if o.retry == "read"]
        for u, o in zip(direct, outcomes):
            if o.retry == "read":
                log.info("%s %s: read by Spark (%s)", info.display,
                         info.partitions[u.part].name, o.reason)
        outcomes = [o for o in outcomes if o.retry != "read"]
        spark_units = [u for u in units if u.fmt is None] + again
        outcomes += run_with_spark_reader(spark, info, spark_units, settings)
        large = {o.part for o in outcomes if o.retry == "large"}
        by_part: dict[int, list] = {p: [] for p in wave}
        rows: dict[int, int] = {}
        for o in outcomes:
            if o.part in large:
                continue
            by_part[o.part].extend(o.results)
            rows[o.part] = o.rows
        log.debug("%s: wave of %d partitions, %d units (%d direct), %.2fs", info.display,
                  len(wave), len(units), len(direct) - len(again), time.monotonic() - started)
        for p in wave:
            part = info.partitions[p]
            if p in large:
                log.info("%s %s: too large for a task, computed by the SQL engine",
                         info.display, part.name)
                result = compute_partition(spark, info, part, options, statistics)
                yield p, result.rows, result.tables
                continue
            results = [r for _, r in sorted(by_part[p], key=lambda item: item[0])]
            if sql_statistics:

                values = run_sql(spark, info, part, sql_statistics)
                for i, r in enumerate(results):
                    for stat in sql_statistics:
                        if (stat.name, i) in values:
                            r.row[f"udf_{stat.name}"] = values[(stat.name, i)]
            yield p, rows.get(p, 0), col_stats.assemble(info.columns, results, statistics)


__all__ = ["compute_sets", "plan", "run_unit", "data_files", "file_format", "arrow_type",
           "Unit", "Settings", "Outcome"]
