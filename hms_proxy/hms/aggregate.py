"""Column statistics as HMS keeps them, and their aggregation across partitions.

HMS 2.3 stores a column's statistics as one flat row (low/high values for longs, doubles and
decimals, null and distinct counts, lengths, true/false counts) whatever kind the client sent,
merges an update into the old row field by field, and on read builds the kind that the row's
*column type* calls for. Clients see the consequences (an update of the wrong kind keeps the
old type), so we keep the same flat model: :func:`to_flat` and :func:`from_flat`.

``get_aggr_stats_for`` follows HMS's direct-SQL aggregation: min of lows, max of highs, sum of
nulls and true/false counts, max of distinct counts (``hive.metastore.stats.ndv.tuner`` = 0)
capped by the value range for integral types, max of lengths; and when only some of the
requested partitions have statistics for a column (at least two), HMS's linear extrapolation
over the position of each partition in the request.
"""
from __future__ import annotations

from decimal import Decimal as PyDecimal

FIELDS = ("longLow", "longHigh", "doubleLow", "doubleHigh", "decimalLow", "decimalHigh",
          "numNulls", "numDVs", "avgColLen", "maxColLen", "numTrues", "numFalses")
LONG_TYPES = ("bigint", "int", "smallint", "tinyint", "timestamp")
JAVA_LONG_MAX = (1 << 63) - 1


def _decimal_text(dec) -> str | None:
    if dec is None:
        return None
    unscaled = int.from_bytes(dec.unscaled, "big", signed=True)
    return str(PyDecimal(unscaled).scaleb(-dec.scale))


def decimal_struct(text, t):
    if text is None:
        return None
    value = PyDecimal(str(text))
    sign, digits, exponent = value.as_tuple()
    scale = max(-exponent, 0)
    unscaled = int(value.scaleb(scale))
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return t.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=scale)


def to_flat(data) -> dict:
    """The flat row HMS writes for a ColumnStatisticsData union (absent fields are None)."""
    flat = dict.fromkeys(FIELDS)
    if data.booleanStats is not None:
        s = data.booleanStats
        flat.update(numTrues=s.numTrues, numFalses=s.numFalses, numNulls=s.numNulls)
    elif data.longStats is not None:
        s = data.longStats
        flat.update(numNulls=s.numNulls, numDVs=s.numDVs, longLow=s.lowValue, longHigh=s.highValue)
    elif data.doubleStats is not None:
        s = data.doubleStats
        flat.update(numNulls=s.numNulls, numDVs=s.numDVs, doubleLow=s.lowValue,
                    doubleHigh=s.highValue)
    elif data.decimalStats is not None:
        s = data.decimalStats
        flat.update(numNulls=s.numNulls, numDVs=s.numDVs, decimalLow=_decimal_text(s.lowValue),
                    decimalHigh=_decimal_text(s.highValue))
    elif data.stringStats is not None:
        s = data.stringStats
        flat.update(numNulls=s.numNulls, numDVs=s.numDVs, avgColLen=s.avgColLen,
                    maxColLen=s.maxColLen)
    elif data.binaryStats is not None:
        s = data.binaryStats
        flat.update(numNulls=s.numNulls, avgColLen=s.avgColLen, maxColLen=s.maxColLen)
    elif data.dateStats is not None:
        s = data.dateStats
        flat.update(numNulls=s.numNulls, numDVs=s.numDVs,
                    longLow=s.lowValue.daysSinceEpoch if s.lowValue else None,
                    longHigh=s.highValue.daysSinceEpoch if s.highValue else None)
    return flat


def merge_flat(old: dict, new: dict) -> dict:
    """HMS's setFieldsIntoOldStats: every field the update carries replaces the old one."""
    return {k: new[k] if new.get(k) is not None else old.get(k) for k in FIELDS}


def from_flat(col_type: str, flat: dict, t, ndv: int | None = None):
    """The ColumnStatisticsData HMS builds from a flat row for a column of ``col_type``."""
    kind = (col_type or "").lower()
    data = t.ColumnStatisticsData()
    dvs = flat.get("numDVs") if ndv is None else ndv
    if kind == "boolean":
        data.booleanStats = t.BooleanColumnStatsData(
            numTrues=flat["numTrues"], numFalses=flat["numFalses"], numNulls=flat["numNulls"])
    elif kind == "string" or kind.startswith(("varchar", "char")):
        data.stringStats = t.StringColumnStatsData(
            maxColLen=flat["maxColLen"], avgColLen=flat["avgColLen"], numNulls=flat["numNulls"],
            numDVs=dvs)
    elif kind == "binary":
        data.binaryStats = t.BinaryColumnStatsData(
            maxColLen=flat["maxColLen"], avgColLen=flat["avgColLen"], numNulls=flat["numNulls"])
    elif kind in LONG_TYPES:
        data.longStats = t.LongColumnStatsData(
            lowValue=flat["longLow"], highValue=flat["longHigh"], numNulls=flat["numNulls"],
            numDVs=dvs)
    elif kind in ("double", "float"):
        data.doubleStats = t.DoubleColumnStatsData(
            lowValue=flat["doubleLow"], highValue=flat["doubleHigh"], numNulls=flat["numNulls"],
            numDVs=dvs)
    elif kind.startswith("decimal"):
        data.decimalStats = t.DecimalColumnStatsData(
            lowValue=decimal_struct(flat["decimalLow"], t),
            highValue=decimal_struct(flat["decimalHigh"], t),
            numNulls=flat["numNulls"], numDVs=dvs)
    elif kind == "date":
        data.dateStats = t.DateColumnStatsData(
            lowValue=None if flat["longLow"] is None else t.Date(flat["longLow"]),
            highValue=None if flat["longHigh"] is None else t.Date(flat["longHigh"]),
            numNulls=flat["numNulls"], numDVs=dvs)
    return data


# --- aggregation ----------------------------------------------------------------------------

_MIN, _MAX, _SUM = "min", "max", "sum"
AGGREGATES = {"longLow": _MIN, "longHigh": _MAX, "doubleLow": _MIN, "doubleHigh": _MAX,
              "decimalLow": _MIN, "decimalHigh": _MAX, "numNulls": _SUM, "numDVs": _MAX,
              "avgColLen": _MAX, "maxColLen": _MAX, "numTrues": _SUM, "numFalses": _SUM}
_FLOATING = {"doubleLow", "doubleHigh", "avgColLen"}
_DECIMAL = {"decimalLow", "decimalHigh"}


def _sort_key(field):
    if field in _DECIMAL:
        return lambda v: PyDecimal(v)
    return lambda v: v


def _java_div(a: int, b: int) -> int:
    """Java's long division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _simple(rows: list[dict], field: str):
    values = [r[field] for r in rows if r[field] is not None]
    if not values:
        return None
    how = AGGREGATES[field]
    if how == _SUM:
        return sum(values)
    key = _sort_key(field)
    return min(values, key=key) if how == _MIN else max(values, key=key)


def _extrapolate(rows: list[tuple[int, dict]], field: str, last_index: int):
    """HMS's LinearExtrapolatePartStatus for a min or max field. ``rows`` pairs each
    partition's position in the request with its flat row."""
    # ORDER BY the field, NULLs last (Derby), then the row with the smallest and the largest.
    key = _sort_key(field)
    ordered = sorted(rows, key=lambda r: (r[1][field] is None,
                                          key(r[1][field]) if r[1][field] is not None else 0))
    (min_ind, lo_row), (max_ind, hi_row) = ordered[0], ordered[-1]
    lo, hi = lo_row[field], hi_row[field]
    if lo is None or hi is None:
        return None
    if min_ind == max_ind:
        return lo
    floating = field in _FLOATING or field in _DECIMAL
    lo_n = float(PyDecimal(lo)) if field in _DECIMAL else lo
    hi_n = float(PyDecimal(hi)) if field in _DECIMAL else hi

    def scale(delta, num, den):
        return delta * num / den if floating else _java_div(delta * num, den)

    if AGGREGATES[field] == _MAX:
        if min_ind < max_ind:
            value = lo_n + scale(hi_n - lo_n, last_index - min_ind, max_ind - min_ind)
        else:
            value = lo_n + scale(hi_n - lo_n, min_ind, min_ind - max_ind)
    else:
        if min_ind < max_ind:
            value = hi_n - scale(hi_n - lo_n, max_ind, max_ind - min_ind)
        else:
            value = hi_n - scale(hi_n - lo_n, last_index - max_ind, min_ind - max_ind)
    return repr(float(value)) if field in _DECIMAL else value


def aggregate(col_name: str, col_type: str, found: list[tuple[int, dict]], requested: int, t):
    """One ColumnStatisticsObj for a column over the requested partitions.

    ``found``: (position of the partition in the request, its flat row) for the partitions
    that have statistics for this column; ``requested``: how many partitions were asked for.
    """
    rows = [r for _, r in found]
    if len(found) == requested or len(found) < 2:
        flat = {f: _simple(rows, f) for f in FIELDS}
    else:
        flat = {}
        for field in FIELDS:
            if AGGREGATES[field] == _SUM:
                total = _simple(rows, field)
                flat[field] = None if total is None else \
                    _java_div(int(total), len(found)) * requested
            else:
                flat[field] = _extrapolate(found, field, requested - 1)
    ndv = _estimate_ndv(col_type, flat)
    return t.ColumnStatisticsObj(colName=col_name, colType=col_type,
                                 statsData=from_flat(col_type, flat, t, ndv=ndv))


def _estimate_ndv(col_type: str, flat: dict) -> int | None:
    """The lower bound (the largest partition NDV, ndv tuner 0), capped by the value range
    for integral and date columns, as HMS's fillColumnStatisticsData does."""
    lower = flat.get("numDVs")
    if lower is None:
        return None
    kind = (col_type or "").lower()
    if kind in LONG_TYPES or kind == "date":
        lo, hi = flat.get("longLow"), flat.get("longHigh")
        if lo is not None and hi is not None:
            return min(int(lower), int(hi) - int(lo) + 1)
    return int(lower)
