"""Statistics sets computed with pyarrow/numpy in one process, no Spark: the path of the table
formats read into Arrow (:mod:`stats.compute.formats`: Iceberg through pyiceberg, Delta through
``deltalake``) and of the tests' reference sets.

:func:`compute_set` turns the rows of one partition (a ``pyarrow.Table``) into the four tables
of a statistics set, column by column through :func:`stats.columns.column_statistics` (the
same code the Spark job's tasks run, so the sets mix in reductions); :func:`write_set` writes
them with the layout's writers into a fresh immutable directory.
"""
from __future__ import annotations

import datetime
import decimal
import json
import os

import numpy as np
import pyarrow as pa

from hms_proxy.hms.javafmt import double_to_string
from stats import layout


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
    if isinstance(value, float):
        return double_to_string(value)
    return str(value)


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


def compute_set(table: pa.Table, columns, bins: int = layout.DEFAULT_BINS,
                exact_quantiles: bool = False, py_statistics=()) -> dict[str, pa.Table]:
    """The set of one partition's rows: ``{layout.STATISTICS: ..., layout.FREQUENCIES: [a
    table per discrete column], layout.HISTOGRAMS: ..., layout.SKETCHES: ...}`` (frequencies
    as a list, one table per row group; :func:`write_files` writes them), computed column by
    column by :func:`stats.columns.column_statistics` (percentiles are always exact there:
    ``exact_quantiles`` is accepted for the callers that pass it). ``columns``: (name, Hive
    type) pairs, table order; a column missing from ``table`` counts as all null."""
    from stats.columns import assemble, column_statistics

    results = []
    for name, hive_type in columns:
        if name in table.column_names:
            col = table.column(name)
        else:
            col = pa.nulls(table.num_rows)
        results.append(column_statistics(name, hive_type, col, bins, py_statistics))
    return assemble(columns, results, py_statistics)


def write_files(tables: dict, directory: str) -> None:
    """The four files of a set (as :func:`compute_set` returns it) into ``directory``."""
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    layout.write_statistics(tables[layout.STATISTICS],
                            os.path.join(directory, layout.STATISTICS))
    top_only = tables.get(layout.TOP_ONLY) or []
    schema = layout.FREQUENCIES_SCHEMA if not top_only else \
        layout.FREQUENCIES_SCHEMA.with_metadata({layout.TOP_ONLY: json.dumps(top_only)})
    with layout.frequencies_writer(os.path.join(directory, layout.FREQUENCIES),
                                   schema) as writer:
        for t in tables[layout.FREQUENCIES]:  # a row group per column
            writer.write_table(t, row_group_size=max(t.num_rows, 1))
    pq.write_table(tables[layout.HISTOGRAMS], os.path.join(directory, layout.HISTOGRAMS))
    pq.write_table(tables[layout.SKETCHES], os.path.join(directory, layout.SKETCHES))


def write_set(tables: dict, table_location: str, partition: str) -> str:
    """Write a set into a fresh immutable ``<location>/_stats/<partition>/<id>/`` at any location
    :func:`stats.files.locate` reaches (local: through a hidden temporary directory renamed into
    place; lakeFS, S3...: an object per file); returns its path as a location."""
    from stats import files

    target = layout.set_dir(table_location, partition, layout.new_set_id())
    return files.write_set_files(target, lambda directory: write_files(tables, directory))


__all__ = ["compute_set", "write_files", "write_set", "text", "numbers"]
