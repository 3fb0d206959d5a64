"""What a statistics computation works on: the table and its partitions, the options, the
user-defined statistics, HyperLogLog helpers, and the errors (:mod:`stats.compute`)."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from hms_proxy.hms.names import make_part_name
from hms_proxy.thrift.gen.hive_metastore import ttypes


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
DEFAULT_TASK_VALUES = 200_000_000  # stats.compute.engine: values one task may hold, else the SQL engine
LOCAL_DRIVER_MEMORY = "2g"  # a local master's (driver = executor) memory; --conf overrides
STRING_TYPES = ("string", "varchar", "char")
COMPLEX_PREFIXES = ("array", "map", "struct", "uniontype")
_KIND_FREQ, _KIND_HLL, _KIND_HIST, _KIND_DISTINCT = 0, 1, 2, 3


def file_format(input_format: str | None, serde: str | None, provider: str | None) -> str | None:
    """"parquet" or "orc" when pyarrow reads the partition's files itself, else None."""
    text = " ".join(x.lower() for x in (input_format, serde, provider) if x)
    if provider and provider.lower() not in ("parquet", "orc", "hive"):
        return None
    if "parquet" in text:
        return "parquet"
    if "orc" in text:
        return "orc"
    return None


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
    file_format: str | None = None  # "parquet" / "orc": pyarrow reads the files (stats.compute.engine)


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

    def format_of(psd):
        serde = psd.serdeInfo.serializationLib if psd.serdeInfo is not None else None
        return file_format(psd.inputFormat, serde, provider)

    if not info.partition_keys:
        if partition_filter:
            raise ComputeError(f"{db}.{tbl} is not partitioned: --partitions does not apply", 2)
        info.partitions = [Partition(layout.UNPARTITIONED, [], sd.location, format_of(sd))]
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
                                         format_of(p.sd if p.sd is not None else sd)))
    info.partitions.sort(key=lambda p: p.name)
    return info


# --- column expressions ------------------------------------------------------------------------
def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _is_complex(hive_type: str) -> bool:
    return hive_type.strip().lower().startswith(COMPLEX_PREFIXES)


def value_sql(name: str, hive_type: str) -> str | None:
    """The SQL of a column's numeric value (a double), or None when it has none."""
    base = layout.base_type(hive_type)
    if base == "date":
        return f"CAST(unix_date({quote(name)}) AS DOUBLE)"
    if base == "timestamp":
        return f"CAST(unix_micros({quote(name)}) AS DOUBLE)"
    if base in ("float", "double"):  # NaN is a value, but no number: left out
        return f"CAST(CASE WHEN isnan({quote(name)}) THEN NULL ELSE {quote(name)} END AS DOUBLE)"
    if base in layout.NUMERIC_TYPES:
        return f"CAST({quote(name)} AS DOUBLE)"
    return None


ENGINES = ("arrow", "sql")


@dataclass
class Options:
    bins: int = DEFAULT_BINS
    exact_quantiles: bool = False  # the SQL engine's percentiles (the Arrow engine's are exact)
    exact_distinct_limit: int = DEFAULT_EXACT_DISTINCT_LIMIT  # the SQL engine's
    accuracy: int = DEFAULT_ACCURACY  # the SQL engine's approx_percentile
    engine: str = "arrow"  # "arrow": stats.compute.engine; "sql": compute_partition for every partition
    task_values: int = DEFAULT_TASK_VALUES  # values a task of the Arrow engine may hold


@dataclass
class ComputeResult:
    table: str
    ref: str
    commit: str  # the ref's commit the statistics were computed at
    sets: dict[str, str]  # partition name -> set directory
    rows: dict[str, int]
    recorded: object = None  # the pointers' commit, None when staged
    table_level: object = None  # a partitioned table's _table_ set (stats.compute.pointers.TableLevel)
    statistics_file: str | None = None  # an Iceberg table's Puffin NDV file (stats.compute.puffin)
