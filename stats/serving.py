"""Column statistics served to planners from computed statistics sets.

The HMS statistics calls (``get_table_column_statistics``, ``get_partition_column_statistics``,
``get_table_statistics_req``, ``get_partitions_statistics_req``, ``get_aggr_stats_for``) answer
a column from the set the catalog points at (:mod:`stats.layout`) when no client wrote
statistics for it:

* **client-written statistics win.** A column with statistics written through
  ``update_*_column_statistics`` / ``set_aggr_stats_for`` is answered from them exactly as
  before; a computed set only fills the columns that have none (per column, per partition).
  Deleting client statistics makes the computed ones visible again.
* **where:** table level from the pointer ``db/<db>/table/<tbl>/stats/_`` (an unpartitioned
  table's set; for a partitioned table, ``.../stats/_table_``, the set reduced from its
  partitions' by :mod:`stats.reduce`), partition level from ``.../stats/<partition name>``.
* **what:** the row of ``statistics.parquet`` for the column, as the ColumnStatisticsData kind
  HMS uses for the column's Hive type: Long (tinyint, smallint, int, bigint; timestamp in
  seconds since the epoch, the kind HMS 2.3 gives timestamps), Double (float, double), Decimal,
  Date, String (string, varchar, char), Boolean, Binary; other types are not served. The fields
  are those HMS fills: numNulls, numDVs, low/high values, maxColLen/avgColLen,
  numTrues/numFalses. The descriptor's ``lastAnalyzed`` is the pointer's ``computed`` time.
* **staleness:** a pointer marked ``"stale": true`` (a merge that could not tell which side's
  statistics are right) is never served. A set whose schema fingerprint differs from the
  table's current columns is stale (:func:`is_stale`) but still serves the columns that kept
  their name and type (the set records each column's type); columns that are gone or changed
  type are not served.

Sets are immutable, so their rows are cached by set path and column in the server's LRU cache;
a lookup reads only the requested columns' rows and only the fields served.
"""
from __future__ import annotations

import datetime
import functools
import logging
import math

from hms_proxy.hms.aggregate import decimal_struct, to_flat
from stats import files, layout

log = logging.getLogger(__name__)

# The statistics.parquet columns the HMS calls need (a projection: nothing else is read).
SERVED_FIELDS = ("column", "type", "count", "null_count", "distinct_count", "min", "max",
                 "min_value", "max_value", "avg_length", "max_length", "true_count",
                 "false_count")
_ABSENT = ("absent",)  # cached: the set has no row for this column
_ROW_WEIGHT = 400
_EPOCH = datetime.date(1970, 1, 1)
TABLE_LEVEL = getattr(layout, "TABLE_LEVEL", "_table_")


# --- pointers ---------------------------------------------------------------------------------
def is_stale(pointer: dict | None, table) -> bool:
    """Whether a pointer's set no longer describes the table as it is: marked stale by a merge,
    or computed for other columns (names/types/order: its schema fingerprint differs from that
    of ``table``'s current columns)."""
    if not pointer:
        return True
    if pointer.get("stale"):
        return True
    return pointer.get("schema") != table_fingerprint(table)


def _columns(table):
    return list((table.sd.cols if table is not None and table.sd is not None else None) or [])


def table_fingerprint(table) -> str:
    """``layout.schema_fingerprint`` of the table's current columns (remembered: a call
    over 1,000 partitions asks 1,000 times)."""
    return _fingerprint(tuple((c.name, c.type) for c in _columns(table)))


@functools.lru_cache(maxsize=1024)
def _fingerprint(columns: tuple) -> str:
    return layout.schema_fingerprint(columns)


@functools.lru_cache(maxsize=16384)
def _parse_pointer(raw: bytes):
    try:
        pointer = layout.read_pointer(raw)
    except ValueError:
        return None
    return pointer if isinstance(pointer, dict) and pointer.get("set") else None


def read_pointer(reader, db: str, tbl: str, partition: str | None) -> dict | None:
    """The pointer of a partition's set (``partition`` None: the table's ``_`` set), or None
    when there is none or it is not a pointer."""
    raw = reader.raw(layout.pointer_key(db, tbl, partition))
    if raw is None:
        return None
    pointer = _parse_pointer(bytes(raw))
    return None if pointer is None else _pinned(pointer, reader)


def _pinned(pointer: dict, reader) -> dict:
    """The pointer with a ref-free lakeFS set path read at the reader's ref."""

    out = dict(pointer)
    out["set"] = files.at_ref(out["set"], getattr(reader, "view", None))
    return out


# --- reading a set -----------------------------------------------------------------------------
def _open(set_path: str, name: str):
    """(filesystem or None, path) of one file of a set."""

    return files.locate(set_path.rstrip("/") + "/" + name)


def read_rows(set_path: str, columns: list[str], cache=None) -> dict[str, dict]:
    """``{column: statistics row}`` for those of ``columns`` the set has: a projection of
    :data:`SERVED_FIELDS`, filtered to the requested rows; rows are cached by set path."""
    out: dict[str, dict] = {}
    missing = []
    for col in dict.fromkeys(columns):
        hit = cache.get(("stats-set-row", set_path, col)) if cache is not None else None
        if hit is None:
            missing.append(col)
        elif hit is not _ABSENT:
            out[col] = hit
    if not missing:
        return out
    import pyarrow.parquet as pq

    filesystem, path = _open(set_path, layout.STATISTICS)
    table = pq.read_table(path, columns=list(SERVED_FIELDS), filesystem=filesystem,
                          filters=[("column", "in", missing)])
    found = {}
    for row in table.to_pylist():
        name = (row.get("column") or "").lower()
        if name in missing and name not in found:
            found[name] = row
    for col in missing:
        row = found.get(col)
        if row is not None:
            out[col] = row
        if cache is not None:
            cache.put(("stats-set-row", set_path, col), _ABSENT if row is None else row,
                      _ROW_WEIGHT)
    return out


# --- statistics rows as HMS structs -------------------------------------------------------------
def _norm_type(hive_type: str | None) -> str:
    return "".join((hive_type or "").lower().split())


def _int(text, number):
    if text is not None:
        try:
            return int(str(text).strip())
        except ValueError:
            pass
    if number is None or not math.isfinite(number):
        return None
    return int(number)


def _float(number):
    return None if number is None or math.isnan(number) else float(number)


def _date_days(text, number):
    if text is not None:
        try:
            return (datetime.date.fromisoformat(str(text).strip()[:10]) - _EPOCH).days
        except ValueError:
            pass
    return _int(None, number)


def _timestamp_seconds(number):
    return None if number is None or not math.isfinite(number) else int(number // 1_000_000)


def _decimal(text, number, t):
    from stats.spark_props import decimal_text

    value = decimal_text(text, number)
    return None if value is None else decimal_struct(value, t)


def to_stats_data(hive_type: str, row: dict, t):
    """The ColumnStatisticsData HMS would hold for a column of ``hive_type`` with the
    statistics of ``row`` (a statistics.parquet row); None for types HMS keeps none for."""
    kind = layout.base_type(hive_type or "")
    nulls = row.get("null_count") or 0
    ndv = row.get("distinct_count") or 0
    lo, hi = row.get("min"), row.get("max")
    lo_n, hi_n = row.get("min_value"), row.get("max_value")
    data = t.ColumnStatisticsData()
    if kind in ("tinyint", "smallint", "int", "bigint"):
        data.longStats = t.LongColumnStatsData(lowValue=_int(lo, lo_n), highValue=_int(hi, hi_n),
                                               numNulls=nulls, numDVs=ndv)
    elif kind == "timestamp":
        data.longStats = t.LongColumnStatsData(lowValue=_timestamp_seconds(lo_n),
                                               highValue=_timestamp_seconds(hi_n),
                                               numNulls=nulls, numDVs=ndv)
    elif kind in ("float", "double"):
        data.doubleStats = t.DoubleColumnStatsData(lowValue=_float(lo_n), highValue=_float(hi_n),
                                                   numNulls=nulls, numDVs=ndv)
    elif kind == "decimal":
        data.decimalStats = t.DecimalColumnStatsData(lowValue=_decimal(lo, lo_n, t),
                                                     highValue=_decimal(hi, hi_n, t),
                                                     numNulls=nulls, numDVs=ndv)
    elif kind == "date":
        lo_d, hi_d = _date_days(lo, lo_n), _date_days(hi, hi_n)
        data.dateStats = t.DateColumnStatsData(
            lowValue=None if lo_d is None else t.Date(lo_d),
            highValue=None if hi_d is None else t.Date(hi_d), numNulls=nulls, numDVs=ndv)
    elif kind in ("string", "varchar", "char"):
        data.stringStats = t.StringColumnStatsData(
            maxColLen=row.get("max_length") or 0, avgColLen=_float(row.get("avg_length")) or 0.0,
            numNulls=nulls, numDVs=ndv)
    elif kind == "boolean":
        data.booleanStats = t.BooleanColumnStatsData(numTrues=row.get("true_count") or 0,
                                                     numFalses=row.get("false_count") or 0,
                                                     numNulls=nulls)
    elif kind == "binary":
        data.binaryStats = t.BinaryColumnStatsData(
            maxColLen=row.get("max_length") or 0, avgColLen=_float(row.get("avg_length")) or 0.0,
            numNulls=nulls)
    else:
        return None
    return data


def served_objects(env, t, reader, table, partition: str | None,
                   columns: list[str]) -> tuple[dict, int | None]:
    """``({column: ColumnStatisticsObj}, lastAnalyzed)`` computed statistics of ``columns``
    (lower-case names) of one partition (``partition`` None: the table level, the ``_`` set),
    for the columns the set may serve. Never raises for a missing or unreadable set (it
    serves nothing then, and logs why). The ``statsData`` structs are shared with the cache
    (sets never change): read them, do not modify them."""
    data, stamp = served_data(env, t, reader, table, partition, columns)
    types = {c.name.lower(): c.type for c in _columns(table)}
    return {col: t.ColumnStatisticsObj(colName=col, colType=types[col], statsData=d)
            for col, d in data.items()}, stamp


def served_flats_many(env, t, reader, table, partitions: list[str],
                      columns: list[str]) -> list[dict]:
    """For each of ``partitions`` (existing, canonical names) ``{column: (column type, flat
    row)}``: what :func:`served_objects` serves, as :func:`hms_proxy.hms.aggregate.to_flat` rows
    (``get_aggr_stats_for`` aggregates these). The pointers come in one multi-get, the table's
    shape is worked out once, and a set's flat rows for these columns and column types come
    from the cache in one lookup (the dicts are shared: read them, do not modify them)."""

    raws = reader.view.get_many([layout.pointer_key(table.dbName, table.tableName, p)
                                 for p in partitions])
    shape = _Shape.of(table)
    cache = getattr(env, "cache", None)
    wanted = tuple(c for c in dict.fromkeys(columns) if c in shape.types)
    request = (shape.fingerprint, wanted)
    out = []
    for partition, raw in zip(partitions, raws):
        pointer = None if raw is None else _parse_pointer(bytes(raw))
        if pointer is None or pointer.get("stale"):
            out.append({})
            continue
        pointer = _pinned(pointer, reader)
        key = ("stats-set-flats", pointer["set"], pointer.get("schema"), request)
        flats = cache.get(key) if cache is not None else None
        if flats is None:
            data = _served(env, t, table, partition, pointer, wanted, shape)
            flats = {col: (shape.types[col], to_flat(d)) for col, d in data.items()}
            if cache is not None and data:  # (an unreadable set is tried again next time)
                cache.put(key, flats, _ROW_WEIGHT * max(1, len(flats)))
        out.append(dict(flats))
    return out


class _Shape:
    """What serving needs of a table's columns, worked out once per call."""
    __slots__ = ("types", "norm", "fingerprint")

    def __init__(self, table):
        cols = _columns(table)
        self.types = {c.name.lower(): c.type for c in cols}
        self.norm = {name: _norm_type(ctype) for name, ctype in self.types.items()}
        self.fingerprint = table_fingerprint(table)

    @classmethod
    def of(cls, table):
        return cls(table)


def served_data(env, t, reader, table, partition: str | None,
                columns: list[str]) -> tuple[dict, int | None]:
    """``({column: ColumnStatisticsData}, lastAnalyzed)``, see :func:`served_objects`."""
    pointer = read_pointer(reader, table.dbName, table.tableName, partition)
    if pointer is None and partition is None and table.partitionKeys:
        # a partitioned table's own set, reduced from its partitions' (stats.reduce)
        pointer = read_pointer(reader, table.dbName, table.tableName, TABLE_LEVEL)
    if pointer is None:
        return {}, None
    data = _served(env, t, table, partition, pointer, columns, _Shape.of(table))
    if not data:
        return {}, None
    try:
        stamp = int(pointer.get("computed")) if pointer.get("computed") is not None else None
    except (TypeError, ValueError):
        stamp = None
    return data, stamp


def _served(env, t, table, partition, pointer: dict, columns, shape: "_Shape") -> dict:
    """``{column: ColumnStatisticsData}`` a pointer's set serves for ``columns``."""
    if pointer.get("stale"):
        return {}
    types = shape.types
    wanted = [c for c in dict.fromkeys(columns) if c in types]
    if not wanted:
        return {}
    fresh = pointer.get("schema") == shape.fingerprint
    cache = getattr(env, "cache", None)
    out = {}
    unknown = []
    set_path = pointer["set"]
    for col in wanted:  # sets are immutable: their structs are cached by set, column, type
        norm = shape.norm[col]
        hit = cache.get(("stats-set-data", set_path, col, norm)) if cache is not None else None
        if hit is None:
            unknown.append(col)
        elif hit is not _ABSENT and (fresh or hit[0] == norm):
            out[col] = hit[1]
    try:
        rows = read_rows(set_path, unknown, cache) if unknown else {}
    except Exception as exc:  # a set that is gone or unreadable: nothing to serve
        log.warning("statistics set %s of %s.%s (%s) not readable: %s", set_path,
                    table.dbName, table.tableName, partition or layout.UNPARTITIONED, exc)
        return {}
    for col in unknown:
        row = rows.get(col)
        data = None if row is None else to_stats_data(types[col], row, t)
        if cache is not None:
            cache.put(("stats-set-data", set_path, col, shape.norm[col]),
                      _ABSENT if data is None else (_norm_type(row.get("type")), data),
                      _ROW_WEIGHT)
        if data is None:
            continue
        if not fresh and _norm_type(row.get("type")) != shape.norm[col]:
            continue  # the column changed type since the set was computed
        out[col] = data
    return {col: out[col] for col in wanted if col in out}


def column_statistics(env, t, reader, table, partition: str | None, columns: list[str]):
    """A ColumnStatistics (descriptor and objects, in ``columns`` order) of the computed
    statistics of one partition or of the table; None when there are none."""
    objs, stamp = served_objects(env, t, reader, table, partition, columns)
    if not objs:
        return None
    desc = t.ColumnStatisticsDesc(isTblLevel=partition is None, dbName=table.dbName,
                                  tableName=table.tableName, partName=partition,
                                  lastAnalyzed=stamp)
    return t.ColumnStatistics(statsDesc=desc, statsObj=[objs[c] for c in columns if c in objs])


# --- a renamed table keeps its pointers ----------------------------------------------------------
def _relocated(value: bytes, old_location: str | None, new_location: str | None) -> bytes:
    """A pointer whose set lay under the table's old location, pointed at the new one (a
    managed table's rename moves its directory, ``_stats`` included)."""
    import json

    if not old_location or not new_location or old_location == new_location:
        return value
    try:
        pointer = json.loads(value)
    except ValueError:
        return value
    old_root, new_root = old_location.rstrip("/"), new_location.rstrip("/")
    path = pointer.get("set") if isinstance(pointer, dict) else None
    if not isinstance(path, str) or not path.startswith(old_root + "/"):
        return value
    pointer["set"] = new_root + path[len(old_root):]
    return json.dumps(pointer, sort_keys=True, separators=(",", ":")).encode()


def rename_pointers(cat, old, new) -> None:
    """After a table rename (the ``table_renamed`` cascade of hms_proxy/hms/cascades.py,
    declared by the column statistics family): the pointers follow the table to its new name (and location)."""
    old_root = layout.pointer_key(old.dbName, old.tableName, "x")[:-1]
    new_root = layout.pointer_key(new.dbName, new.tableName, "x")[:-1]
    old_loc = old.sd.location if old.sd is not None else None
    new_loc = new.sd.location if new.sd is not None else None
    for key, value in list(cat.view.scan_prefix(old_root)):
        cat.view.put(new_root + key[len(old_root):], _relocated(value, old_loc, new_loc))



# --- Spark's statistics parameters (stats.spark_props) ---------------------------------------
def read_width_bins(set_path: str, columns: list[str], cache=None) -> dict[str, list]:
    """``{column: [(lower, upper, count)]}``: the equal-width bins of those of ``columns``
    (lower-case) that histograms.parquet has, cached by set and column."""
    out: dict[str, list] = {}
    missing = []
    for col in dict.fromkeys(columns):
        hit = cache.get(("stats-set-bins", set_path, col)) if cache is not None else None
        if hit is None:
            missing.append(col)
        elif hit is not _ABSENT:
            out[col] = hit
    if not missing:
        return out
    import pyarrow.parquet as pq

    filesystem, path = _open(set_path, layout.HISTOGRAMS)
    names = {n.lower(): n for n in pq.read_schema(
        path if filesystem is None else filesystem.open_input_file(path)).names}
    present = [names[c] for c in missing if c in names]
    table = pq.read_table(path, columns=present, filesystem=filesystem) if present else None
    for col in missing:
        bins = None
        if table is not None and col in names and names[col] in table.column_names:
            bins = [(b["lower"], b["upper"], b["count"]) for b in
                    table.column(names[col]).to_pylist() if b is not None]
        if bins:
            out[col] = bins
        if cache is not None:
            cache.put(("stats-set-bins", set_path, col), bins or _ABSENT,
                      _ROW_WEIGHT + 24 * len(bins or ()))
    return out


def table_pointer(reader, table, partition: str | None) -> dict | None:
    """The pointer that serves ``partition`` of ``table`` (None: the table level, the ``_``
    set, or a partitioned table's ``_table_`` set)."""
    pointer = read_pointer(reader, table.dbName, table.tableName, partition)
    if pointer is None and partition is None and table.partitionKeys:
        pointer = read_pointer(reader, table.dbName, table.tableName, TABLE_LEVEL)
    return pointer


def spark_properties(env, reader, table, partition: str | None, pointer: dict | None = None,
                     size: int | None = None) -> dict[str, str]:
    """The parameters :mod:`stats.spark_props` derives from the set serving ``partition`` of
    ``table`` (None: the table level): ``spark.sql.statistics.*``, with column statistics for
    the columns the set may serve (as :func:`_served`: none of a dropped or retyped column),
    and Hive's ``numRows``. ``size``: the data's bytes when the set does not record them (the
    object's ``totalSize``); without either no ``spark.sql.statistics.*`` key is given (Spark
    requires ``totalSize`` with them). {} when no current set serves it. Cached by set, schema
    and Spark column names (the dict is shared: do not modify it)."""
    from stats import spark_props

    if pointer is None:
        pointer = table_pointer(reader, table, partition)
    if pointer is None or pointer.get("stale"):
        return {}
    shape = _Shape.of(table)
    names = spark_props.spark_column_names(table.parameters)
    cache = getattr(env, "cache", None)
    key = ("stats-spark-props", pointer["set"], shape.fingerprint, pointer.get("schema"),
           tuple(sorted(names.items())), size)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return hit
    out: dict[str, str] = {}
    rows_count = pointer.get("rows")
    bytes_ = layout.data_bytes(pointer)
    if bytes_ is None:
        bytes_ = size
    if rows_count is not None:
        out["numRows"] = str(int(rows_count))
    if bytes_ is not None:
        out[spark_props.TOTAL_SIZE] = str(int(bytes_))
        if rows_count is not None:
            out[spark_props.NUM_ROWS] = str(int(rows_count))
        fresh = pointer.get("schema") == shape.fingerprint
        wanted = [c for c in shape.types if spark_props.supported(shape.types[c])]
        try:
            rows = read_rows(pointer["set"], wanted, cache) if wanted else {}
            numeric = [c for c in wanted if c in rows and layout.is_numeric(shape.types[c])]
            bins = read_width_bins(pointer["set"], numeric, cache) if numeric else {}
        except Exception as exc:  # a set that is gone or unreadable: its counts only
            log.warning("statistics set %s of %s.%s (%s) not readable: %s", pointer["set"],
                        table.dbName, table.tableName, partition or layout.UNPARTITIONED, exc)
            rows, bins = {}, {}
        for col in wanted:
            row = rows.get(col)
            if row is None or (not fresh and _norm_type(row.get("type")) != shape.norm[col]):
                continue
            spark_name = names.get(col, col)
            for stat, text in spark_props.column_stats(shape.types[col], row,
                                                       bins.get(col)).items():
                out[spark_props.column_key(spark_name, stat)] = text
    if cache is not None:
        cache.put(key, out, _ROW_WEIGHT + sum(len(k) + len(v) for k, v in out.items()))
    return out
