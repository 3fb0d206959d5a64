"""Statistics sets computed with pyarrow/numpy, no Spark: the path of the table formats read
into Arrow (:mod:`stats.formats`: Iceberg through pyiceberg, Delta through ``deltalake``) and
of the tests' reference sets.

:func:`compute_set` turns the rows of one partition (a ``pyarrow.Table``) into the four tables
of a statistics set, exactly per :mod:`stats.layout`: a statistics row per column (exact
distinct counts; percentiles exact, ``numpy.percentile`` linear, with ``exact_quantiles``, else
pyarrow's t-digest), every value of each discrete column with its frequency (decreasing, then
value), equal-width histograms over [min, max] as ``numpy.histogram`` bins them (one bin when
all values are equal), and HyperLogLog sketches over Spark's xxhash64 (:mod:`stats.reduce`), so
the sets mix with the Spark job's in reductions. :func:`write_set` writes them with the layout's
writers. Values: numbers for tinyint ... decimal, days since the epoch for dates, microseconds
for timestamps; NaN is a value but no number (as in the Spark job). Complex columns get counts
only.
"""
from __future__ import annotations

import datetime
import decimal
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stats import layout

_COMPLEX = ("array", "map", "struct", "uniontype")


def text(value, hive_type: str) -> str | None:
    """Hive's text form of a value (``CAST(v AS STRING)``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        out = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.microsecond:
            out += f".{value.microsecond:06d}".rstrip("0")
        return out
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value) if isinstance(value, float) else str(value)


def numbers(col) -> np.ndarray:
    """The non-null numeric values of a column as doubles (dates: days, timestamps: µs since
    the epoch), NaN left out."""
    col = col.drop_null()
    if pa.types.is_date(col.type):
        col = col.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_timestamp(col.type):
        col = col.cast(pa.timestamp("us", tz=col.type.tz)).cast(pa.int64())
    out = np.asarray(col.cast(pa.float64()), dtype=np.float64)
    return out[~np.isnan(out)]


def histogram(values: np.ndarray, bins: int) -> list[dict]:
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        return [{"lower": lo, "upper": hi, "count": int(values.size)}]
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return []
    counts, edges = np.histogram(values, bins=bins, range=(lo, hi))
    return [{"lower": float(edges[i]), "upper": float(edges[i + 1]), "count": int(counts[i])}
            for i in range(bins)]


def _percentiles(nums: np.ndarray, exact: bool) -> list[float]:
    if exact:
        return [float(np.percentile(nums, p)) for p in layout.PERCENTILES]
    q = pc.tdigest(pa.array(nums), q=[p / 100 for p in layout.PERCENTILES])
    return [float(v) for v in q.to_pylist()]


def _column_set(name: str, hive_type: str, col, bins: int, exact_quantiles: bool):
    """(statistics row, frequencies table or None, histogram or None, sketch bytes)."""
    from stats import reduce

    base = layout.base_type(hive_type)
    row = dict.fromkeys(layout.STATISTICS_SCHEMA.names)
    row.update(column=name, type=hive_type, count=len(col), null_count=col.null_count)
    if base.startswith(_COMPLEX):
        return row, None, None, None
    valid = col.drop_null()
    row.update(distinct_count=pc.count_distinct(valid).as_py() if len(valid) else 0,
               distinct_exact=True)
    if len(valid):
        lo, hi = pc.min_max(valid).values()
        row["min"], row["max"] = text(lo.as_py(), hive_type), text(hi.as_py(), hive_type)
    hist = None
    if layout.is_numeric(hive_type):
        nums = numbers(col)
        if nums.size:
            row.update(min_value=float(nums.min()), max_value=float(nums.max()),
                       mean=float(nums.mean()), stddev=float(nums.std()),
                       percentiles_exact=bool(exact_quantiles))
            if base not in ("date", "timestamp"):
                row["sum"] = float(nums.sum())
            for p, v in zip(layout.PERCENTILES, _percentiles(nums, exact_quantiles)):
                row[layout.percentile_name(p)] = v
            hist = histogram(nums, bins)
        else:
            hist = []
    if base in ("string", "varchar", "char", "binary") and len(valid):
        lengths = np.asarray(pc.utf8_length(valid) if base != "binary"
                             else pc.binary_length(valid))
        row.update(avg_length=float(lengths.mean()), max_length=int(lengths.max()))
    if base == "boolean":
        trues = int(pc.sum(valid.cast(pa.int64())).as_py() or 0)
        row.update(true_count=trues, false_count=len(valid) - trues)
    freq = None
    if layout.is_discrete(hive_type) and len(valid):
        values = pa.array([text(v, hive_type) for v in valid.to_pylist()], pa.string())
        counts = pa.table({"value": values}).group_by("value").aggregate(
            [("value", "count")]).rename_columns(["value", "frequency"])
        counts = counts.sort_by([("frequency", "descending"), ("value", "ascending")])
        freq = pa.table({"column": pa.array([name] * len(counts), pa.string()),
                         "value": counts["value"],
                         "frequency": counts["frequency"].cast(pa.int64())},
                        schema=layout.FREQUENCIES_SCHEMA)
    if pa.types.is_dictionary(valid.type):
        valid = valid.cast(valid.type.value_type)
    sketch = reduce.hll_registers(reduce.spark_xxhash64(valid, hive_type)).tobytes()
    return row, freq, hist, sketch


def compute_set(table: pa.Table, columns, bins: int = layout.DEFAULT_BINS,
                exact_quantiles: bool = False) -> dict[str, pa.Table]:
    """The set of one partition's rows: ``{layout.STATISTICS: ..., layout.FREQUENCIES: [a
    table per discrete column], layout.HISTOGRAMS: ..., layout.SKETCHES: ...}`` (frequencies
    as a list, one table per row group; :func:`write_set` writes them). ``columns``: (name,
    Hive type) pairs, table order; a column missing from ``table`` counts as all null."""
    stats_rows, freq_tables, hists, sketches = [], [], {}, []
    for name, hive_type in columns:
        if name in table.column_names:
            col = table.column(name)
        else:
            col = pa.chunked_array([pa.nulls(table.num_rows)])
        row, freq, hist, sketch = _column_set(name, hive_type, col, bins, exact_quantiles)
        stats_rows.append(row)
        if freq is not None:
            freq_tables.append(freq)
        if hist is not None:
            hists[name] = hist
        if sketch is not None:
            sketches.append({"column": name, "hll": sketch})
    height = max((len(h) for h in hists.values()), default=0)
    histograms = pa.Table.from_arrays(
        [pa.array(h + [None] * (height - len(h)), layout.BIN) for h in hists.values()],
        schema=pa.schema([pa.field(c, layout.BIN) for c in hists]))
    return {layout.STATISTICS: pa.Table.from_pylist(stats_rows, schema=layout.STATISTICS_SCHEMA),
            layout.FREQUENCIES: freq_tables,
            layout.HISTOGRAMS: histograms,
            layout.SKETCHES: pa.Table.from_pylist(sketches, schema=layout.SKETCHES_SCHEMA)}


def write_files(tables: dict, directory: str) -> None:
    """The four files of a set (as :func:`compute_set` returns it) into ``directory``."""
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    layout.write_statistics(tables[layout.STATISTICS],
                            os.path.join(directory, layout.STATISTICS))
    with layout.frequencies_writer(os.path.join(directory, layout.FREQUENCIES)) as writer:
        for t in tables[layout.FREQUENCIES]:  # a row group per column
            writer.write_table(t, row_group_size=max(t.num_rows, 1))
    pq.write_table(tables[layout.HISTOGRAMS], os.path.join(directory, layout.HISTOGRAMS))
    pq.write_table(tables[layout.SKETCHES], os.path.join(directory, layout.SKETCHES))


def write_set(tables: dict, table_location: str, partition: str) -> str:
    """Write a set into a fresh immutable ``<location>/_stats/<partition>/<id>/`` (through a
    hidden temporary directory renamed into place); returns its path as a location. Local
    (``file:`` or plain path) locations only."""
    from urllib.parse import unquote, urlparse

    set_id = layout.new_set_id()
    target = layout.set_dir(table_location, partition, set_id)
    parsed = urlparse(target)
    if parsed.scheme == "file":
        local = unquote(parsed.path)
    elif not parsed.scheme or len(parsed.scheme) == 1:
        local = target
    else:
        raise ValueError(f"cannot write statistics to {target}: only local (file:) locations "
                         "are written without Spark")
    parent = os.path.dirname(local)
    tmp = os.path.join(parent, f".{set_id}.tmp")
    try:
        write_files(tables, tmp)
        os.rename(tmp, local)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


__all__ = ["compute_set", "write_files", "write_set", "text", "numbers", "histogram"]
