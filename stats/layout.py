"""Where computed statistics live and what their three parquet files hold.

One *statistics set* describes one partition (an unpartitioned table is one partition named
``_``) at one moment. It is written once into an immutable directory beside the data and never
changed afterwards; the catalog holds a pointer to it (``db/<db>/table/<tbl>/stats/<part>``)::

    <table location>/_stats/<partition name or _>/<set id>/
        statistics.parquet    a row per table column (table order), a column per statistic
        frequencies.parquet   column, value, frequency: discrete columns, every value
        histograms.parquet    a struct column per numeric/date/timestamp column, a row per bin
        sketches.parquet      column, hll: mergeable distinct-count sketches

The schemas below are the contract between the compute job (:mod:`stats.compute`), the
table-level reduction (:mod:`stats.reduce`), the HMS statistics calls and the query API.
"""
from __future__ import annotations

import uuid

from kvmodel.catalog import table_key

STATS_DIR = "_stats"
UNPARTITIONED = "_"  # the partition name of an unpartitioned table's statistics set
TABLE_LEVEL = "_table_"  # the partition name of a table's set reduced from its partitions' sets
STATISTICS = "statistics.parquet"
FREQUENCIES = "frequencies.parquet"
HISTOGRAMS = "histograms.parquet"
SKETCHES = "sketches.parquet"
FILES = (STATISTICS, FREQUENCIES, HISTOGRAMS, SKETCHES)

DEFAULT_BINS = 1000
PERCENTILES = (1, 5, 25, 50, 75, 95, 99)  # columns p01 ... p99
HLL_PRECISION = 12  # 4,096 one-byte registers; standard error 1.04 / sqrt(4096) = 1.6%
# A discrete column with more distinct values than this in one set (a key, an id) keeps in
# frequencies.parquet only its values occurring more than once, the TOP_FREQUENCIES most frequent:
# a list of every value would be as large as the data and go through the Spark driver. Its exact
# distinct count stays in statistics.parquet.
FREQUENCY_LIMIT = 1_000_000
TOP_FREQUENCIES = 10_000
# such columns, as a JSON list in frequencies.parquet's schema metadata (and the key of that list
# in a set's tables as the engines give them)
TOP_ONLY = "top_only"

# Hive column types whose every value is listed in frequencies.parquet.
DISCRETE_TYPES = ("string", "varchar", "char", "boolean", "tinyint", "smallint", "int",
                  "bigint", "date")
# Hive column types that get a histogram (dates as days since the epoch, timestamps as
# microseconds since the epoch).
NUMERIC_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "date",
                 "timestamp")


UDF_REDUCTIONS = ("sum", "min", "max", "mean")  # how a user-defined statistic reduces


def udf_field(name: str, reduce: str | None = None):
    """The statistics.parquet column of user-defined statistic ``name``: ``udf_<name>``, a
    double; its field metadata ``reduce`` (one of :data:`UDF_REDUCTIONS`) tells the table-level
    reduction how partitions' values combine (``mean``: weighted by non-null values); without
    it the table level leaves the statistic null."""
    import pyarrow as pa

    return pa.field(f"udf_{name}", pa.float64(),
                    metadata={"reduce": reduce} if reduce else None)


def base_type(hive_type: str) -> str:
    """``decimal(10,2)`` -> ``decimal``, ``varchar(20)`` -> ``varchar``."""
    return hive_type.split("(", 1)[0].strip().lower()


def is_discrete(hive_type: str) -> bool:
    return base_type(hive_type) in DISCRETE_TYPES


def is_numeric(hive_type: str) -> bool:
    return base_type(hive_type) in NUMERIC_TYPES


def percentile_name(p: int) -> str:
    return f"p{p:02d}"


def _schemas() -> dict:
    """The pyarrow schemas, built on first use: the server imports this module for paths and
    pointers and must not need pyarrow for that."""
    import pyarrow as pa

    schemas: dict = {}
    # statistics.parquet: one row per table column, in table order. Values not defined for a
    # column's type are null (mean of a string column...). min/max are Hive's text form of the
    # value (what a `SELECT CAST(min(c) AS STRING)` shows); min_value/max_value and the percentiles
    # are numbers for numeric, date (days) and timestamp (microseconds) columns. User-defined
    # statistics are appended as extra float64 columns named `udf_<name>`.
    schemas['STATISTICS_SCHEMA'] = pa.schema([
        ("column", pa.string()),
        ("type", pa.string()),
        ("count", pa.int64()),           # rows, nulls included
        ("null_count", pa.int64()),
        ("distinct_count", pa.int64()),
        ("distinct_exact", pa.bool_()),  # false: estimated from the sketch
        ("min", pa.string()),
        ("max", pa.string()),
        ("min_value", pa.float64()),
        ("max_value", pa.float64()),
        ("mean", pa.float64()),
        ("stddev", pa.float64()),        # population standard deviation
        ("sum", pa.float64()),
        ("avg_length", pa.float64()),    # strings and binaries, in characters / bytes
        ("max_length", pa.int64()),
        ("true_count", pa.int64()),      # booleans
        ("false_count", pa.int64()),
        ("percentiles_exact", pa.bool_()),
    ] + [(percentile_name(p), pa.float64()) for p in PERCENTILES])

    # frequencies.parquet: every value of each discrete column with its number of rows (nulls are
    # not values: see null_count), ordered by column (table order), then decreasing frequency, then
    # value. Values are Hive's text form. A row group per column, so one column's top N is a
    # contiguous prefix of one row group.
    schemas['FREQUENCIES_SCHEMA'] = pa.schema([
        ("column", pa.string()),
        ("value", pa.string()),
        ("frequency", pa.int64()),
    ])

    # histograms.parquet: one column per numeric column, named like it, of this struct; one row per
    # bin, by increasing lower bound. Bins are equal-width over [min_value, max_value], the last
    # one closed; a column with fewer bins (all values equal: one bin) is padded with nulls.
    schemas['BIN'] = pa.struct([("lower", pa.float64()), ("upper", pa.float64()), ("count", pa.int64())])

    # sketches.parquet: a HyperLogLog per column (2**HLL_PRECISION one-byte registers over
    # Spark's xxhash64 of the value, seed 42: register = top HLL_PRECISION bits, rank = leading
    # zeros of the remaining bits + 1). Merging two sketches is the register-wise maximum.
    schemas['SKETCHES_SCHEMA'] = pa.schema([
        ("column", pa.string()),
        ("hll", pa.binary()),
    ])
    return schemas


_SCHEMAS: dict = {}


def __getattr__(name: str):
    """``STATISTICS_SCHEMA``, ``FREQUENCIES_SCHEMA``, ``BIN``, ``SKETCHES_SCHEMA`` (PEP 562)."""
    if name in ("STATISTICS_SCHEMA", "FREQUENCIES_SCHEMA", "BIN", "SKETCHES_SCHEMA"):
        if not _SCHEMAS:
            _SCHEMAS.update(_schemas())
        return _SCHEMAS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def new_set_id() -> str:
    """A fresh statistics-set directory name (never reused: sets are immutable)."""
    return uuid.uuid4().hex


def set_dir(table_location: str, partition: str, set_id: str) -> str:
    """``<table location>/_stats/<partition>/<set id>`` (partition: Hive's escaped name)."""
    return f"{table_location.rstrip('/')}/{STATS_DIR}/{partition or UNPARTITIONED}/{set_id}"


# --- the catalog's pointer to a set ------------------------------------------------------------
def pointer_key(db: str, tbl: str, partition: str | None) -> str:
    """``db/<db>/table/<tbl>/stats/<partition or _>`` (a table item: dropped and renamed with
    the table)."""
    return f"{table_key(db, tbl)}/stats/{partition or UNPARTITIONED}"


def schema_fingerprint(columns) -> str:
    """What a set's statistics depend on in the schema: column names and types, in order
    (``columns``: FieldSchema-like objects or (name, type) pairs)."""
    import hashlib

    pairs = [(c.name, c.type) if hasattr(c, "name") else tuple(c) for c in columns]
    text = "\n".join(f"{name.lower()}:{ctype.lower()}" for name, ctype in pairs)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_pointer(set_path: str, commit: str | None, schema: str, rows: int,
                 data: str = "") -> bytes:
    """The catalog value: JSON (canonical: sorted keys, no spaces) naming the set, the commit
    and schema fingerprint it was computed at, its row count and a fingerprint of the data it
    read (``data``: location and file counts of the partition)."""
    import json
    import time

    return json.dumps({"set": set_path, "commit": commit, "schema": schema, "rows": rows,
                       "data": data, "computed": int(time.time())},
                      sort_keys=True, separators=(",", ":")).encode()


def data_bytes(pointer: dict) -> int | None:
    """``bytes=`` of a pointer's data fingerprint: the size of the data files its set was
    computed over (a partitioned table's ``_table_`` set: its partitions' in all)."""
    for part in str(pointer.get("data") or "").split("|"):
        name, _, value = part.partition("=")
        if name == "bytes" and value.isdigit():
            return int(value)
    return None


def read_pointer(value: bytes | None) -> dict | None:
    import json

    return None if value is None else json.loads(value)


# --- writing, laid out for partial reads (stats.query) -----------------------------------------
STATISTICS_ROW_GROUP = 1024  # rows (table columns) per row group of statistics.parquet
FREQUENCY_PAGE_SIZE = 8 << 10  # bytes per data page of frequencies.parquet


def write_statistics(table, path: str) -> None:
    """Write statistics.parquet in row groups of :data:`STATISTICS_ROW_GROUP` rows: one group
    up to 1,024 columns (smaller groups only grow the file and slow lookups: names in table
    order give row-group statistics nothing to prune on), only the requested columns' groups
    read for wider tables (a row's group follows from its column's position in the table)."""
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=STATISTICS_ROW_GROUP)


def frequencies_writer(path: str, schema=None):
    """A ParquetWriter for frequencies.parquet (write one table per column, as its own row
    group): small data pages and no dictionary for ``value`` (a dictionary page would hold
    every value and be read before the first row), so a top N reads the leading pages only."""
    import pyarrow.parquet as pq

    return pq.ParquetWriter(path, schema if schema is not None else __getattr__(
        "FREQUENCIES_SCHEMA"), use_dictionary=["column"], data_page_size=FREQUENCY_PAGE_SIZE)
