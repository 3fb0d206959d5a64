"""Every statistic of one column, from its values in Arrow: the core of a statistics set.

:func:`column_statistics` turns one partition's values of one column (a pyarrow array, nulls
included) into its row of ``statistics.parquet``, its frequencies, its histogram bins and its
HyperLogLog sketch, exactly per :mod:`stats.layout`; :func:`assemble` puts the columns of a
partition together into the four tables of a set. The compute job's Arrow tasks
(:mod:`stats.compute.engine`), the Iceberg/Delta path (:mod:`stats.compute.formats`) and the tests' reference
sets all go through here, so every set is computed the same way.

How, and why it is fast: a numeric column is turned into *keys* whose order is the values'
order and whose equality is the values' equality (int64 for integers, dates as days,
timestamps as microseconds, decimals of up to 18 digits as their unscaled long; doubles with
``-0.0`` as ``0.0`` and one NaN), sorted once with numpy, and cut into distinct values with
their counts. Everything then follows from the sorted values without another pass over the
rows: exact distinct counts, min/max, exact percentiles (``numpy.percentile``'s linear
interpolation between the two closest ranks), equal-width histograms over [min, max] counted
by binary search of the edges (``numpy.linspace`` edges, a value ``v`` in bin ``k`` when
``edges[k] <= v < edges[k+1]``, the last bin closed: what ``numpy.histogram`` assigns), the
frequencies of discrete columns, and the sketch (only distinct values are hashed). Strings and
binaries are counted by pyarrow's hash ``value_counts``. Means and standard deviations are
population moments over the numeric values (integers and decimals summed exactly); NaN is a
value (counted, distinct, sketched) but no number (left out of min/max, moments, percentiles
and histograms); a range with an infinite end gets no histogram. Complex columns (array, map,
struct) get their counts only.

Numeric values (``min_value``, ``max_value``, moments, percentiles, histograms) are doubles:
the number for tinyint ... decimal (a decimal as ``unscaled / 10**scale``, as Spark converts
it), days since the epoch for dates, microseconds since the epoch for timestamps (UTC). The
text of ``min``/``max`` and of frequency values is Spark's ``CAST(v AS STRING)``.
"""
from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hms_proxy.hms.javafmt import double_to_string
from stats import layout, sketch

COMPLEX_PREFIXES = ("array", "map", "struct", "uniontype")
STRING_TYPES = ("string", "varchar", "char")
_EPOCH = datetime.datetime(1970, 1, 1)


@dataclass
class ColumnStatistics:
    """One column's part of a set."""
    row: dict  # its statistics.parquet row (user-defined statistics as udf_<name>)
    frequencies: pa.Table | None  # FREQUENCIES_SCHEMA rows, discrete columns with values
    histogram: list[dict] | None  # bins (numeric columns; [] when there is no histogram)
    sketch: bytes | None  # HyperLogLog registers (None for complex columns)
    top_only: bool = False  # frequencies: the most frequent values only (layout.FREQUENCY_LIMIT)


def hist_edges(lo: float, hi: float, bins: int) -> list[float]:
    """numpy.linspace(lo, hi, bins + 1): ``i * step + lo``, the last edge ``hi`` exactly."""
    step = (hi - lo) / bins
    return [i * step + lo for i in range(bins)] + [hi]


def is_complex(hive_type: str) -> bool:
    return hive_type.strip().lower().startswith(COMPLEX_PREFIXES)


# --- text as Spark casts it --------------------------------------------------------------------
def timestamp_text(micros: int) -> str:
    value = _EPOCH + datetime.timedelta(microseconds=int(micros))
    out = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.year < 1000:
        out = f"{value.year:04d}" + out[len(str(value.year)):]
    if value.microsecond:
        out += f".{value.microsecond:06d}".rstrip("0")
    return out


def date_text(days: int) -> str:
    return (datetime.date(1970, 1, 1) + datetime.timedelta(days=int(days))).isoformat()


def decimal_text(unscaled: int, scale: int) -> str:
    return str(decimal.Decimal(int(unscaled)).scaleb(-scale))


# --- keys: order and equality of the values as numbers ----------------------------------------
@dataclass
class _Keys:
    keys: np.ndarray  # sortable, equal where the values are equal (NaN: one value, sorted last)
    numbers: callable  # keys -> doubles (the numeric values)
    text: callable  # one key -> Spark's text of the value
    hashes: callable  # distinct keys -> Spark's xxhash64 of the values


def _keys(valid: pa.Array, hive_type: str) -> _Keys | None:
    base = layout.base_type(hive_type)
    t = valid.type
    if base in ("tinyint", "smallint", "int", "bigint") and pa.types.is_integer(t):
        keys = np.asarray(valid.cast(pa.int64()))
        hash_fn = sketch.xxhash64_long if base == "bigint" else sketch.xxhash64_int
        return _Keys(keys, lambda k: k.astype(np.float64), lambda k: str(int(k)), hash_fn)
    if base == "date" and (pa.types.is_date(t) or pa.types.is_timestamp(t)):
        days = valid.cast(pa.date32()) if not pa.types.is_date32(t) else valid
        keys = np.asarray(days.cast(pa.int32())).astype(np.int64)
        return _Keys(keys, lambda k: k.astype(np.float64), date_text, sketch.xxhash64_int)
    if base == "timestamp" and pa.types.is_timestamp(t):
        micros = valid.cast(pa.timestamp("us", tz=t.tz), safe=False).cast(pa.int64())
        return _Keys(np.asarray(micros), lambda k: k.astype(np.float64), timestamp_text,
                     sketch.xxhash64_long)
    if base in ("float", "double") and pa.types.is_floating(t):
        single = base == "float"
        keys = sketch.canonical_doubles(np.asarray(valid.cast(pa.float64())))
        if single:
            def hashes(k):
                f = k.astype(np.float32)
                bits = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32))
                return sketch.xxhash64_int(bits)
        else:
            def hashes(k):
                return sketch.xxhash64_long(k.view(np.int64))
        return _Keys(keys, lambda k: k, lambda k: double_to_string(float(k), single), hashes)
    if base == "decimal" and pa.types.is_decimal(t) and t.precision <= 18:
        scale = t.scale
        valid = valid.cast(pa.decimal128(t.precision, scale))
        return _Keys(sketch.decimal_unscaled(valid),
                     lambda k: k.astype(np.float64) / float(10 ** scale),
                     lambda k: decimal_text(int(k), scale), sketch.xxhash64_long)
    return None


def _distinct(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, their counts) of sorted keys without NaN."""
    if sorted_keys.size == 0:
        return sorted_keys, np.zeros(0, dtype=np.int64)
    starts = np.concatenate(([0], np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1))
    counts = np.diff(np.append(starts, sorted_keys.size))
    return sorted_keys[starts], counts


def _exact_sum(keys: np.ndarray) -> int:
    """The exact sum of int64 keys (two partial sums that cannot overflow)."""
    high = np.sum(keys >> 32, dtype=np.int64)
    low = np.sum(keys & 0xFFFFFFFF, dtype=np.int64)
    return int(high) * (1 << 32) + int(low)


def _percentiles(values: np.ndarray, cumulative: np.ndarray) -> list[float]:
    """numpy.percentile(method="linear") of the multiset of sorted distinct ``values`` with
    ``cumulative`` counts."""
    n = int(cumulative[-1])
    out = []
    for p in layout.PERCENTILES:
        rank = p / 100 * (n - 1)
        below = int(np.floor(rank))
        above = min(below + 1, n - 1)
        a = float(values[np.searchsorted(cumulative, below, side="right")])
        b = float(values[np.searchsorted(cumulative, above, side="right")])
        t = rank - below
        out.append(a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t))
    return out


def _histogram(values: np.ndarray, cumulative: np.ndarray, bins: int) -> list[dict]:
    lo, hi = float(values[0]), float(values[-1])
    n = int(cumulative[-1])
    if lo == hi:
        return [{"lower": lo, "upper": hi, "count": n}]
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return []
    edges = hist_edges(lo, hi, bins)
    starts = np.searchsorted(values, np.asarray(edges[:-1]), side="left")
    before = np.concatenate(([0], cumulative))[np.append(starts, values.size)]
    counts = np.diff(before)
    return [{"lower": edges[k], "upper": edges[k + 1], "count": int(counts[k])}
            for k in range(bins)]


def kept_frequencies(counts: np.ndarray) -> np.ndarray | None:
    """Indices (ascending) of the values that may be kept in a set's frequencies: None (all of
    them) up to :data:`layout.FREQUENCY_LIMIT` distinct values; beyond, those occurring more
    than once as often as the :data:`layout.TOP_FREQUENCIES`-th most frequent or more (ties
    kept: :func:`_frequency_table` orders them by value and keeps that many)."""
    if counts.size <= layout.FREQUENCY_LIMIT:
        return None
    repeated = np.flatnonzero(counts > 1)
    if repeated.size > layout.TOP_FREQUENCIES:
        kth = np.partition(counts[repeated], -layout.TOP_FREQUENCIES)[-layout.TOP_FREQUENCIES]
        repeated = repeated[counts[repeated] >= kth]
    return repeated


def _frequencies(name: str, counts: np.ndarray, texts) -> tuple[pa.Table, bool]:
    """(the frequencies a set keeps of a column, whether only the top ones): ``texts(indices)``
    gives the text of the values at those indices (None: all of them)."""
    keep = kept_frequencies(counts)
    if keep is None:
        return _frequency_table(name, texts(None), counts), False
    return _frequency_table(name, texts(keep), counts[keep], layout.TOP_FREQUENCIES), True


def _frequency_table(name: str, values: pa.Array, counts: np.ndarray,
                     top: int | None = None) -> pa.Table:
    """Frequencies by decreasing count, then value (Spark's binary order of the text); the
    first ``top`` only, when given."""
    table = pa.table({"value": values, "frequency": pa.array(counts, pa.int64())})
    table = table.sort_by([("frequency", "descending"), ("value", "ascending")])
    if top is not None:
        table = table.slice(0, top)
    return pa.table({"column": pa.array([name] * table.num_rows, pa.string()),
                     "value": table.column("value"), "frequency": table.column("frequency")},
                    schema=layout.FREQUENCIES_SCHEMA)


# --- one column ----------------------------------------------------------------------------------
def column_statistics(name: str, hive_type: str, col, bins: int = layout.DEFAULT_BINS,
                      py_statistics=()) -> ColumnStatistics:
    """The statistics of one column's values (``col``: a pyarrow Array or ChunkedArray with
    its nulls). ``py_statistics``: user-defined statistics with a Python function
    (:class:`stats.compute.Statistic`), given the whole column."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    base = layout.base_type(hive_type)
    row = dict.fromkeys(layout.STATISTICS_SCHEMA.names)
    row.update(column=name, type=hive_type, count=len(col), null_count=col.null_count)
    for stat in py_statistics:
        if stat.fn is not None and stat.applies(hive_type):
            value = stat.fn(col)
            row[f"udf_{stat.name}"] = None if value is None else float(value)
    if is_complex(hive_type):
        return ColumnStatistics(row, None, None, None)
    valid = col.drop_null() if col.null_count else col
    numeric = layout.is_numeric(hive_type)
    if len(valid) == 0:
        row.update(distinct_count=0, distinct_exact=True)
        if base == "boolean":
            row.update(true_count=0, false_count=0)
        return ColumnStatistics(row, None, [] if numeric else None,
                                bytes(1 << layout.HLL_PRECISION))
    keys = _keys(valid, hive_type)
    if keys is not None:
        return _numeric(name, hive_type, row, keys, bins)
    return _by_value(name, hive_type, row, valid, bins)


def _numeric(name, hive_type, row, keys: _Keys, bins) -> ColumnStatistics:
    base = layout.base_type(hive_type)
    ordered = np.sort(keys.keys)
    nans = int(np.count_nonzero(np.isnan(ordered))) if ordered.dtype.kind == "f" else 0
    if nans:
        ordered = ordered[:ordered.size - nans]  # (sorted last)
    distinct, counts = _distinct(ordered)
    hashes = keys.hashes(distinct)
    if nans:
        hashes = np.append(hashes, keys.hashes(np.array([np.nan])))
    row.update(distinct_count=int(distinct.size) + (1 if nans else 0), distinct_exact=True)
    histogram: list[dict] = []
    frequencies, top_only = None, False
    if distinct.size:
        values = keys.numbers(distinct)
        cumulative = np.cumsum(counts)
        n = int(cumulative[-1])
        row["min"], row["max"] = keys.text(distinct[0]), keys.text(distinct[-1])
        row.update(min_value=float(values[0]), max_value=float(values[-1]),
                   percentiles_exact=True)
        if base in ("tinyint", "smallint", "int", "bigint", "decimal"):
            total = _exact_sum(ordered)
            if base == "decimal":
                scale = layout_scale(hive_type)
                exact = decimal.Decimal(total).scaleb(-scale)
                row["sum"], row["mean"] = float(exact), float(exact / n)
            else:
                row["sum"], row["mean"] = float(total), float(decimal.Decimal(total) / n)
        else:
            mean = float(np.dot(values, counts) / n) if distinct.size < ordered.size else \
                float(np.mean(values))
            row["mean"] = mean
            if base in ("float", "double"):
                row["sum"] = float(np.sum(keys.numbers(ordered)))
        with np.errstate(over="ignore", invalid="ignore"):
            deviations = values - row["mean"]
            row["stddev"] = float(np.sqrt(np.dot(deviations * deviations, counts) / n))
        for p, v in zip(layout.PERCENTILES, _percentiles(values, cumulative)):
            row[layout.percentile_name(p)] = v
        histogram = _histogram(values, cumulative, bins)
        if layout.is_discrete(hive_type):
            frequencies, top_only = _frequencies(name, counts, lambda keep: _texts(
                distinct if keep is None else distinct[keep], keys, hive_type))
    return ColumnStatistics(row, frequencies, histogram,
                            sketch.hll_registers(hashes).tobytes(), top_only)


def layout_scale(hive_type: str) -> int:
    """The scale of ``decimal(p,s)`` (0 for a bare ``decimal``)."""
    inside = hive_type.partition("(")[2].rstrip(") ")
    parts = [p.strip() for p in inside.split(",")] if inside else []
    return int(parts[1]) if len(parts) == 2 else 0


def _texts(distinct: np.ndarray, keys: _Keys, hive_type: str) -> pa.Array:
    base = layout.base_type(hive_type)
    if base == "date":
        return pa.array(distinct.astype(np.int32), pa.date32()).cast(pa.string())
    return pa.array(distinct).cast(pa.string())  # integers


def _by_value(name, hive_type, row, valid: pa.Array, bins) -> ColumnStatistics:
    """Strings, binaries, booleans, wide decimals: counted by value with pyarrow."""
    base = layout.base_type(hive_type)
    counted = pc.value_counts(valid)
    distinct, counts = counted.field("values"), np.asarray(counted.field("counts"))
    row.update(distinct_count=len(distinct), distinct_exact=True)
    lo, hi = pc.min_max(distinct).values()
    frequencies, top_only = None, False
    histogram = None
    if base == "boolean":
        trues = int(counts[np.asarray(distinct.fill_null(False))].sum())
        row.update(true_count=trues, false_count=len(valid) - trues)
        row["min"], row["max"] = ("true" if lo.as_py() else "false",
                                  "true" if hi.as_py() else "false")
        text = distinct.cast(pa.string())
        hashes = sketch.xxhash64_int(np.asarray(distinct.cast(pa.int8())))
    elif base in STRING_TYPES or base == "binary":
        if pa.types.is_binary(distinct.type) or pa.types.is_large_binary(distinct.type):
            lengths = np.asarray(pc.binary_length(distinct))
            text = None
            row["min"] = lo.as_py().decode("utf-8", "replace")
            row["max"] = hi.as_py().decode("utf-8", "replace")
        else:
            if base == "binary":
                lengths = np.asarray(pc.binary_length(distinct))
            else:
                lengths = np.asarray(pc.utf8_length(distinct))
            text = distinct.cast(pa.string())
            row["min"], row["max"] = lo.as_py(), hi.as_py()
        row.update(avg_length=float(np.dot(lengths, counts) / len(valid)),
                   max_length=int(lengths.max()))
        hashes = sketch.xxhash64_binary(distinct)
    else:  # a decimal of more than 18 digits (or a type read as something unexpected)
        order = pc.sort_indices(distinct)
        distinct, counts = distinct.take(order), counts[np.asarray(order)]
        row["min"], row["max"] = _plain_text(distinct[0].as_py()), \
            _plain_text(distinct[-1].as_py())
        text = None
        hashes = sketch.spark_xxhash64(distinct, hive_type)
        if layout.is_numeric(hive_type):
            values = np.array([float(v) for v in distinct.to_pylist()])
            cumulative = np.cumsum(counts)
            n = int(cumulative[-1])
            exact = sum((v * c for v, c in zip(distinct.to_pylist(), counts.tolist())),
                        decimal.Decimal(0))
            row.update(min_value=float(values[0]), max_value=float(values[-1]),
                       sum=float(exact), mean=float(exact / n), percentiles_exact=True)
            deviations = values - row["mean"]
            row["stddev"] = float(np.sqrt(np.dot(deviations * deviations, counts) / n))
            for p, v in zip(layout.PERCENTILES, _percentiles(values, cumulative)):
                row[layout.percentile_name(p)] = v
            histogram = _histogram(values, cumulative, bins)
    if layout.is_discrete(hive_type) and text is not None:
        frequencies, top_only = _frequencies(
            name, counts, lambda keep: text if keep is None else text.take(pa.array(keep)))
    return ColumnStatistics(row, frequencies, histogram,
                            sketch.hll_registers(hashes).tobytes(), top_only)


def _plain_text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# --- a partition's set ------------------------------------------------------------------------------
def assemble(columns, results: list[ColumnStatistics], statistics=()) -> dict:
    """The four tables of a set from its columns' statistics, in table order:
    ``{layout.STATISTICS: table, layout.FREQUENCIES: [a table per discrete column with
    values], layout.HISTOGRAMS: table, layout.SKETCHES: table}``. ``statistics``: the
    user-defined statistics (:class:`stats.compute.Statistic`), a ``udf_<name>`` column each."""
    schema = layout.STATISTICS_SCHEMA
    for stat in statistics:
        schema = schema.append(stat.field)
    statistics = pa.Table.from_pylist([r.row for r in results], schema=schema)
    frequencies = [r.frequencies for r in results if r.frequencies is not None
                   and r.frequencies.num_rows]
    hists = {name: r.histogram for (name, _), r in zip(columns, results)
             if r.histogram is not None}
    height = max((len(h) for h in hists.values()), default=0)
    histograms = pa.Table.from_arrays(
        [pa.array(h + [None] * (height - len(h)), layout.BIN) for h in hists.values()],
        schema=pa.schema([pa.field(c, layout.BIN) for c in hists]))
    sketches = pa.Table.from_pylist(
        [{"column": name, "hll": r.sketch} for (name, _), r in zip(columns, results)
         if r.sketch is not None], schema=layout.SKETCHES_SCHEMA)
    return {layout.STATISTICS: statistics, layout.FREQUENCIES: frequencies,
            layout.HISTOGRAMS: histograms, layout.SKETCHES: sketches,
            layout.TOP_ONLY: [name for (name, _), r in zip(columns, results) if r.top_only]}


__all__ = ["ColumnStatistics", "column_statistics", "assemble", "hist_edges", "is_complex",
           "timestamp_text", "date_text", "decimal_text"]
