"""Aggregating partition column statistics into one, as ``get_aggr_stats_for`` answers.

HMS 2.3 (without bit vectors and with ``hive.metastore.stats.ndv.tuner`` = 0) takes the
smallest low value, the largest high value, the sum of null counts, the largest distinct
count and the largest max length, with an average length weighted evenly. When statistics
exist for fewer partitions than were asked for, HMS extrapolates; we do not (documented in
docs/compatibility.md).
"""
from __future__ import annotations

import copy


def _min(values):
    vals = [v for v in values if v is not None]
    return min(vals, key=_key) if vals else None


def _max(values):
    vals = [v for v in values if v is not None]
    return max(vals, key=_key) if vals else None


def _key(v):
    # Decimal structs compare by their unscaled value and scale.
    if hasattr(v, "unscaled") and hasattr(v, "scale"):
        return int.from_bytes(v.unscaled, "big", signed=True) / (10 ** v.scale)
    if hasattr(v, "daysSinceEpoch"):
        return v.daysSinceEpoch
    return v


def _sum(values):
    return sum(v or 0 for v in values)


def aggregate_column(objs, parts_requested, t):
    """One ColumnStatisticsObj summarising the same column across partitions."""
    first = objs[0]
    data = first.statsData
    kind = next(f[2] for f in data.thrift_spec if f is not None and getattr(data, f[2]) is not None)
    members = [getattr(o.statsData, kind) for o in objs if getattr(o.statsData, kind) is not None]
    agg = copy.deepcopy(members[0])
    agg.numNulls = _sum(m.numNulls for m in members)
    if hasattr(agg, "numDVs"):
        agg.numDVs = max(m.numDVs or 0 for m in members)
    if hasattr(agg, "lowValue"):
        agg.lowValue = _min(m.lowValue for m in members)
        agg.highValue = _max(m.highValue for m in members)
    if hasattr(agg, "maxColLen"):
        agg.maxColLen = max(m.maxColLen or 0 for m in members)
        agg.avgColLen = sum(m.avgColLen or 0.0 for m in members) / len(members)
    if hasattr(agg, "numTrues"):
        agg.numTrues = _sum(m.numTrues for m in members)
        agg.numFalses = _sum(m.numFalses for m in members)
    if hasattr(agg, "bitVectors"):
        agg.bitVectors = None
    out = t.ColumnStatisticsData()
    setattr(out, kind, agg)
    return t.ColumnStatisticsObj(colName=first.colName, colType=first.colType, statsData=out)
