"""Computed statistics as the table and partition parameters Spark's optimizer reads.

Spark's Hive catalog never calls the metastore's column-statistics methods: it builds a table's
and a partition's statistics from their parameters alone (``HiveExternalCatalog``'s
``statsFromProperties``), Spark's own when it wrote them with ``ANALYZE``:

* ``spark.sql.statistics.totalSize`` (bytes; required whenever any key below is there),
  ``spark.sql.statistics.numRows``;
* per column, ``spark.sql.statistics.colStats.<column>.<stat>`` with ``version`` = ``2``,
  ``distinctCount``, ``nullCount``, ``min``, ``max`` (numbers, booleans, dates
  ``yyyy-MM-dd``, timestamps ``yyyy-MM-dd HH:mm:ss.SSSSSS`` in UTC; none for strings and
  binaries), ``avgLen``, ``maxLen`` and ``histogram``: an equi-height histogram serialised as
  Spark's ``HistogramSerializer`` does (height, bin count, every bin's low, high and distinct
  count, big-endian, then -1, in an lz4-java ``LZ4BlockOutputStream`` stream, base64).

This module turns a statistics set's rows (:data:`stats.serving.SERVED_FIELDS`) and equal-width
bins (``histograms.parquet``) into those parameters. The equi-height bins are derived from the
equal-width ones (values assumed uniform within an equal-width bin; a bin's distinct count is
the column's, shared out by the width of the non-empty equal-width bins the bin covers), so
they are an estimate, like the ones Spark's own ``percentile_approx`` gives. Integral columns
(and dates) get whole-number bounds, and when their equal-width bins are narrower than 1 (a
range of fewer values than bins) exact distinct counts per bin. The LZ4 stream
holds the bytes uncompressed (lz4-java's "raw" blocks, which its reader accepts like
compressed ones): no compression library is needed to serve them.

Pure Python, no pyarrow: the server imports it on every table read.
"""
from __future__ import annotations

import base64
import bisect
import datetime
import json
import math
import struct

PREFIX = "spark.sql.statistics."
TOTAL_SIZE = PREFIX + "totalSize"
NUM_ROWS = PREFIX + "numRows"
COL_PREFIX = PREFIX + "colStats."
VERSION = "2"
HISTOGRAM_BINS = 254  # spark.sql.statistics.histogram.numBins's default

# Spark's defaultSize of the fixed-width types (avgLen and maxLen of such a column)
_FIXED = {"tinyint": 1, "smallint": 2, "int": 4, "integer": 4, "bigint": 8, "float": 4,
          "double": 8, "boolean": 1, "date": 4, "timestamp": 8}
_INTEGRAL = ("tinyint", "smallint", "int", "integer", "bigint")
_HISTOGRAM_TYPES = _INTEGRAL + ("float", "double", "decimal", "date", "timestamp")
_TEXT = ("string", "varchar", "char", "binary")
_EPOCH = datetime.datetime(1970, 1, 1)


# --- lz4-java's block stream, raw blocks --------------------------------------------------------
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (the hash lz4-java's block stream checks its blocks with)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1, v2 = (seed + _P1 + _P2) & _M, (seed + _P2) & _M
        v3, v4 = seed & _M, (seed - _P1) & _M
        limit = n - 16
        while i <= limit:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M, 13) * _P1) & _M
            v2 = (_rotl((v2 + b * _P2) & _M, 13) * _P1) & _M
            v3 = (_rotl((v3 + c * _P2) & _M, 13) * _P1) & _M
            v4 = (_rotl((v4 + d * _P2) & _M, 13) * _P1) & _M
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * _P3) & _M, 17) * _P4) & _M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M, 11) * _P1) & _M
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h


_MAGIC = b"LZ4Block"
_RAW = 0x10
_BLOCK = 1 << 16          # LZ4BlockOutputStream's default block size
_LEVEL = 16 - 10          # log2(block size) - COMPRESSION_LEVEL_BASE
_SEED = 0x9747B28C        # its default checksum's seed
_HEADER = struct.Struct("<iii")


def lz4_block_stream(payload: bytes) -> bytes:
    """``payload`` as lz4-java's ``LZ4BlockOutputStream`` writes it, in raw blocks: per block
    the magic, a token (method and level), the stored and original lengths and the block's
    xxHash32 (28 bits), then the bytes; an empty block ends the stream."""
    out = bytearray()
    token = bytes([_RAW | _LEVEL])
    for i in range(0, len(payload), _BLOCK):
        block = payload[i:i + _BLOCK]
        out += _MAGIC + token + _HEADER.pack(len(block), len(block),
                                             xxh32(block, _SEED) & 0x0FFFFFFF) + block
    out += _MAGIC + token + _HEADER.pack(0, 0, 0)
    return bytes(out)


def histogram_property(height: float, bins: list[tuple[float, float, int]]) -> str:
    """The ``histogram`` statistic: Spark's ``HistogramSerializer`` format."""
    n = len(bins)
    payload = struct.pack(f">di{n}d{n}d{n}qi", height, n, *(b[0] for b in bins),
                          *(b[1] for b in bins), *(int(b[2]) for b in bins), -1)
    return base64.b64encode(lz4_block_stream(payload)).decode("ascii")


# --- equi-height bins from equal-width ones -------------------------------------------------------
def equi_height(width_bins: list[tuple[float, float, int]], distinct: int, integral: bool,
                nbins: int = HISTOGRAM_BINS) -> tuple[float, list[tuple[float, float, int]]] | None:
    """(height, [(lo, hi, distinct count)]) of ``nbins`` bins holding the same number of
    values each, estimated from equal-width ``(lower, upper, count)`` bins in increasing order
    (values uniform within a bin); None when there is nothing to bin."""
    width_bins = [(float(lo), float(hi), int(c)) for lo, hi, c in width_bins
                  if c and lo is not None and hi is not None and math.isfinite(lo)
                  and math.isfinite(hi)]
    total = sum(c for _, _, c in width_bins)
    if not width_bins or total <= 0 or nbins < 1:
        return None
    nbins = min(nbins, total)
    height = total / nbins
    occupied = sum(hi - lo for lo, hi, _ in width_bins)

    def at(rank: float) -> float:
        """The value below which ``rank`` of the values lie."""
        seen = 0.0
        for lo, hi, c in width_bins:
            if seen + c >= rank:
                return lo + (hi - lo) * max(0.0, rank - seen) / c
            seen += c
        return width_bins[-1][1]

    def covered(lo: float, hi: float) -> float:
        return sum(max(0.0, min(hi, b_hi) - max(lo, b_lo)) for b_lo, b_hi, _ in width_bins)

    edges = [width_bins[0][0]] + [at(height * k) for k in range(1, nbins)] + [width_bins[-1][1]]
    values = None
    if integral:
        # values are whole numbers: so are the bounds (a value's rows spread over several
        # bins give bins [v, v], as Spark's own); bins narrower than 1 hold one value each,
        # which gives the bins' distinct counts exactly
        edges = [float(math.floor(e + 0.5)) for e in edges]
        if all(hi - lo < 1 for lo, hi, _ in width_bins):
            values = sorted({math.ceil(lo) for lo, _, _ in width_bins})
    out = []
    cap_rows = max(1, math.ceil(height))
    for k in range(nbins):
        lo, hi = edges[k], max(edges[k], edges[k + 1])
        if lo == hi:
            ndv = 1
        elif values is not None:  # the values in (lo, hi], the first bin [lo, hi]
            ndv = (bisect.bisect_right(values, hi)
                   - (bisect.bisect_left(values, lo) if k == 0 else
                      bisect.bisect_right(values, lo)))
        elif occupied > 0:
            ndv = distinct * covered(lo, hi) / occupied
        else:  # every value equal
            ndv = 1
        cap = cap_rows
        if integral:
            cap = min(cap, max(1, math.floor(hi) - math.ceil(lo) + 1))
        out.append((lo, hi, int(min(cap, max(1, round(ndv))))))
    return height, out


# --- a column's parameters ------------------------------------------------------------------------
def base_type(hive_type: str) -> str:
    return (hive_type or "").split("(", 1)[0].strip().lower()


def _decimal_size(hive_type: str) -> int:
    inner = hive_type.partition("(")[2].rstrip(")").split(",")[0].strip()
    try:
        precision = int(inner) if inner else 10
    except ValueError:
        precision = 10
    return 8 if precision <= 18 else 16


def _timestamp_text(micros: float) -> str:
    stamp = _EPOCH + datetime.timedelta(microseconds=int(micros))
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond:06d}"


def _number_text(text, number, integral: bool) -> str | None:
    if text is not None:
        candidate = str(text).strip()
        try:
            float(candidate)
            if integral:
                int(candidate)
            return candidate
        except ValueError:
            pass
    if number is None or not math.isfinite(number):
        return None
    return str(int(number)) if integral else repr(float(number))


def decimal_text(text, number) -> str | None:
    """The first of ``text`` and ``number`` that reads as a decimal, as text; None if neither."""
    from decimal import Decimal, InvalidOperation

    for value in (text, None if number is None or not math.isfinite(number) else repr(number)):
        if value is None:
            continue
        try:
            Decimal(str(value).strip())
        except InvalidOperation:
            continue
        return str(value).strip()
    return None


def _date_text(text, number) -> str | None:
    if text is not None:
        try:
            return datetime.date.fromisoformat(str(text).strip()[:10]).isoformat()
        except ValueError:
            pass
    if number is None or not math.isfinite(number):
        return None
    return (datetime.date(1970, 1, 1) + datetime.timedelta(days=int(number))).isoformat()


def supported(hive_type: str) -> bool:
    """Whether Spark keeps column statistics for a column of ``hive_type`` (atomic types:
    not arrays, maps, structs or unions)."""
    kind = base_type(hive_type)
    return kind in _FIXED or kind in _TEXT or kind == "decimal"


def column_stats(hive_type: str, row: dict, width_bins=None,
                 nbins: int = HISTOGRAM_BINS) -> dict[str, str]:
    """``{stat: text}`` of one column as Spark's ``CatalogColumnStat.toMap`` writes them,
    from a statistics.parquet row; {} for a type Spark keeps no statistics for."""
    if not supported(hive_type):
        return {}
    kind = base_type(hive_type)
    count = row.get("count")
    nulls = int(row.get("null_count") or 0)
    out = {"version": VERSION}
    if row.get("distinct_count") is not None:
        out["distinctCount"] = str(int(row["distinct_count"]))
    out["nullCount"] = str(nulls)
    lo = hi = None
    if kind in _INTEGRAL or kind in ("float", "double"):
        integral = kind in _INTEGRAL
        lo = _number_text(row.get("min"), row.get("min_value"), integral)
        hi = _number_text(row.get("max"), row.get("max_value"), integral)
    elif kind == "decimal":
        lo = decimal_text(row.get("min"), row.get("min_value"))
        hi = decimal_text(row.get("max"), row.get("max_value"))
    elif kind == "date":
        lo = _date_text(row.get("min"), row.get("min_value"))
        hi = _date_text(row.get("max"), row.get("max_value"))
    elif kind == "timestamp":
        lo, hi = row.get("min_value"), row.get("max_value")
        lo = None if lo is None or not math.isfinite(lo) else _timestamp_text(lo)
        hi = None if hi is None or not math.isfinite(hi) else _timestamp_text(hi)
    elif kind == "boolean":
        trues, falses = row.get("true_count"), row.get("false_count")
        if trues or falses:
            lo = "false" if falses else "true"
            hi = "true" if trues else "false"
    if lo is not None and hi is not None:
        out["min"], out["max"] = lo, hi
    if kind in _TEXT:
        avg, longest = row.get("avg_length"), row.get("max_length")
        if count is not None and count == nulls:
            avg = longest = 100 if kind == "binary" else 20  # Spark's defaultSize
        if avg is not None and math.isfinite(avg):
            out["avgLen"] = str(int(math.ceil(avg)))
        if longest is not None:
            out["maxLen"] = str(int(longest))
    else:
        size = _decimal_size(hive_type) if kind == "decimal" else _FIXED[kind]
        out["avgLen"] = out["maxLen"] = str(size)
    if width_bins and kind in _HISTOGRAM_TYPES and out.get("distinctCount"):
        made = equi_height(width_bins, int(out["distinctCount"]), kind in _INTEGRAL + ("date",),
                           nbins)
        if made is not None:
            out["histogram"] = histogram_property(*made)
    return out


def column_key(column: str, stat: str) -> str:
    return f"{COL_PREFIX}{column}.{stat}"


def spark_column_names(parameters: dict | None) -> dict[str, str]:
    """``{lower-case name: name}`` of the columns as Spark knows them: a data source table's
    schema (``spark.sql.sources.schema`` or its ``.part.N`` pieces) keeps their case, which
    Spark matches statistics by; {} when the table has no Spark schema."""
    params = parameters or {}
    text = params.get("spark.sql.sources.schema")
    if text is None:
        try:
            parts = int(params.get("spark.sql.sources.schema.numParts", ""))
        except ValueError:
            return {}
        pieces = [params.get(f"spark.sql.sources.schema.part.{i}") for i in range(parts)]
        if any(p is None for p in pieces):
            return {}
        text = "".join(pieces)
    try:
        schema = json.loads(text)
        return {f["name"].lower(): f["name"] for f in schema.get("fields", [])
                if isinstance(f, dict) and isinstance(f.get("name"), str)}
    except (ValueError, AttributeError, TypeError):
        return {}


def own_columns(parameters: dict | None) -> set[str]:
    """Lower-case names of the columns whose statistics are stored in ``parameters`` (Spark's
    own, from ``ANALYZE``)."""
    out = set()
    suffix = ".version"
    for key in parameters or {}:
        if key.startswith(COL_PREFIX) and key.endswith(suffix):
            out.add(key[len(COL_PREFIX):-len(suffix)].lower())
    return out
