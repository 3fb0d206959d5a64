"""Table-level statistics by reduction of partition statistics sets, never re-reading data.

Each partition's set (:mod:`stats.layout`) already holds every summary of its rows; the table's
are derived from them:

* counts, null counts, sums, true/false counts: sums; min/max: the extreme partition value
  (compared as numbers where ``min_value``/``max_value`` are given, else as text);
  maximum length: the maximum; average length: weighted by non-null counts.
* mean and population standard deviation, exactly: each partition contributes (n, mean, M2 =
  n * stddev^2) and pairs combine with Chan et al.'s parallel formula
  ``M2 = M2a + M2b + delta^2 * na * nb / n``.
* distinct counts: the HyperLogLog sketches merged register-wise (maximum) and estimated with
  the standard estimator and its small/large range corrections; exact instead when the merged
  frequencies give it (discrete columns, :mod:`stats.frequencies`), or with a single partition.
* histograms: re-binned onto one equal-width grid of ``bins`` bins over the global min/max
  (:func:`rebin`). **Assumption**: the values of a partition bin are spread uniformly over it,
  so a bin's count is split between the grid bins it overlaps in proportion to the overlap.
  A grid bin's count is then exact up to the counts of the partition bins straddling its
  edges (plus one for integer rounding); totals are always exact.
* percentiles: read off the merged histogram by linear interpolation within a bin, hence
  ``percentiles_exact`` false (with a single partition its own percentiles are kept).
"""
from __future__ import annotations

import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stats import files, layout
from stats import frequencies as freq
from stats.sets import PartitionSet, open_sets  # noqa: F401 - PartitionSet: stats.reduce's name too

# Spark's xxhash64 and the HyperLogLog sketches live in stats.sketch (names kept here).
from stats.sketch import (  # noqa: E402,F401
    SEED,
    hll_estimate,
    hll_merge,
    hll_registers,
    spark_xxhash64,
    xxhash64_bytes,
    xxhash64_int,
    xxhash64_long,
)


# --- histograms -----------------------------------------------------------------------------------
def grid_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """Edges of ``bins`` equal-width bins over [lo, hi] (one bin when lo == hi)."""
    if hi <= lo:
        return np.array([lo, hi], dtype=np.float64)
    edges = lo + (hi - lo) * np.arange(bins + 1, dtype=np.float64) / bins
    edges[-1] = hi
    return edges


def rebin(histograms, lo: float, hi: float, bins: int) -> np.ndarray:
    """Merge histograms ((lower, upper, count) arrays each) onto ``bins`` equal-width bins
    over [lo, hi] (the last one closed), as int64 counts summing exactly to the input total.

    Assumes values are uniform within each source bin: its count is split between the grid bins
    it overlaps in proportion to the overlap (a zero-width bin goes whole to the grid bin holding
    its value). Counts are rounded from the cumulative distribution, so each grid bin is within
    1 of the proportional split and the total is exact.
    """
    lows = np.concatenate([h[0] for h in histograms]) if histograms else np.zeros(0)
    ups = np.concatenate([h[1] for h in histograms]) if histograms else np.zeros(0)
    counts = np.concatenate([h[2] for h in histograms]).astype(np.float64) if histograms \
        else np.zeros(0)
    keep = counts > 0
    lows, ups, counts = lows[keep], ups[keep], counts[keep]
    edges = grid_edges(lo, hi, bins)
    nbins = len(edges) - 1
    total = int(counts.sum())
    if nbins == 1:
        return np.array([total], dtype=np.int64)
    width = (hi - lo) / nbins
    point = ups <= lows
    # zero-width bins: a jump of their count at their value
    jumps = np.zeros(nbins, dtype=np.float64)
    if point.any():
        idx = np.clip(np.floor((lows[point] - lo) / width), 0, nbins - 1).astype(np.int64)
        np.add.at(jumps, idx, counts[point])
    # the others: a piecewise-linear cumulative distribution, evaluated at the grid's edges
    lw, up, c = lows[~point], ups[~point], counts[~point]
    spread = np.zeros(nbins, dtype=np.float64)
    if c.size:
        slope = c / (up - lw)
        xs = np.concatenate([lw, up])
        ds = np.concatenate([slope, -slope])
        order = np.argsort(xs, kind="stable")
        xs, ds = xs[order], ds[order]
        run = np.cumsum(ds)  # slope right of each breakpoint
        cdf = np.concatenate([[0.0], np.cumsum(run[:-1] * np.diff(xs))])
        at = np.interp(edges, xs, cdf, left=0.0, right=float(c.sum()))
        spread = np.diff(at)
    cumulative = np.concatenate([[0.0], np.cumsum(spread + jumps)])
    cumulative = np.rint(cumulative * (total / cumulative[-1]) if cumulative[-1] else cumulative)
    cumulative[-1] = total
    return np.maximum(np.diff(cumulative), 0).astype(np.int64)


def histogram_percentiles(edges: np.ndarray, counts: np.ndarray, percents) -> list[float | None]:
    """Percentiles of a histogram, interpolating linearly within the bin holding each rank."""
    total = int(counts.sum())
    if total == 0:
        return [None for _ in percents]
    cum = np.concatenate([[0], np.cumsum(counts)])
    out = []
    for p in percents:
        target = p / 100.0 * total
        j = int(np.searchsorted(cum, target, side="left"))
        j = min(max(j, 1), len(counts))
        while j < len(counts) and counts[j - 1] == 0:
            j += 1
        inside = counts[j - 1]
        frac = 0.0 if inside == 0 else min(max((target - cum[j - 1]) / inside, 0.0), 1.0)
        out.append(float(edges[j - 1] + frac * (edges[j] - edges[j - 1])))
    return out


def reduce_histograms(sets, bins: int = layout.DEFAULT_BINS, columns=None) -> dict:
    """{column: (edges, counts)} re-binned over the global min/max of each numeric column."""
    sets = open_sets(sets)
    if not sets:
        return {}
    rows = [s.rows() for s in sets]
    numeric = [n for n, r in rows[0].items() if layout.is_numeric(r["type"] or "")
               and (columns is None or n in columns)]
    for s in sets:
        s.load_histograms(numeric)
    out = {}
    for name, first in rows[0].items():
        if columns is not None and name not in columns:
            continue
        if not layout.is_numeric(first["type"] or ""):
            continue
        lo = [r[name]["min_value"] for r in rows if r[name]["min_value"] is not None]
        hi = [r[name]["max_value"] for r in rows if r[name]["max_value"] is not None]
        if not lo or not hi:
            continue
        hists = [h for h in (s.histogram(name) for s in sets) if h is not None]
        if not hists:
            continue
        g_lo, g_hi = min(lo), max(hi)
        out[name] = (grid_edges(g_lo, g_hi, bins), rebin(hists, g_lo, g_hi, bins))
    return out


def histograms_table(histograms: dict, columns_order) -> pa.Table:
    """histograms.parquet of re-binned histograms (struct column per numeric column)."""
    names = [c for c in columns_order if c in histograms]
    if not names:
        return pa.table({})
    nrows = max(len(histograms[c][1]) for c in names)
    arrays = []
    for c in names:
        edges, counts = histograms[c]
        items = [{"lower": float(edges[i]), "upper": float(edges[i + 1]),
                  "count": int(counts[i])} for i in range(len(counts))]
        items += [None] * (nrows - len(items))
        arrays.append(pa.array(items, type=layout.BIN))
    return pa.Table.from_arrays(arrays, names=names)


# --- the reduction --------------------------------------------------------------------------------
def _combine_moments(parts):
    """Chan's parallel combination of (n, mean, M2) triples -> (n, mean, M2)."""
    n, mean, m2 = 0, 0.0, 0.0
    for nb, mb, m2b in parts:
        if not nb:
            continue
        if n == 0:
            n, mean, m2 = nb, mb, m2b
            continue
        total = n + nb
        delta = mb - mean
        mean = mean + delta * nb / total
        m2 = m2 + m2b + delta * delta * n * nb / total
        n = total
    return n, mean, m2


def _sum(values):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _extreme(rows, name, pick):
    """min (pick=min) or max of text/number over partitions: (text, number)."""
    key_num, key_txt = ("min_value", "min") if pick is min else ("max_value", "max")
    numbered = [(r[key_num], r[key_txt]) for r in rows if r[key_num] is not None]
    if numbered:
        number, text = pick(numbered, key=lambda t: t[0])
        return text, number
    texts = [r[key_txt] for r in rows if r[key_txt] is not None]
    return (pick(texts) if texts else None), None


def reduce_statistics(sets, bins: int = layout.DEFAULT_BINS, frequencies=None,
                      histograms: dict | None = None, columns=None) -> pa.Table:
    """Table-level statistics.parquet (STATISTICS_SCHEMA) from partition statistics sets
    (directories or :class:`PartitionSet`). ``frequencies``: a
    :class:`stats.frequencies.FrequencyResult` giving exact distinct counts of its columns;
    ``histograms``: :func:`reduce_histograms`' result, when already computed; ``columns``:
    only these columns (table order kept; only their histograms are read)."""
    sets = open_sets(sets)
    if not sets:
        return layout.STATISTICS_SCHEMA.empty_table()
    rows = [s.rows() for s in sets]
    order = [r for r in sets[0].statistics.column("column").to_pylist()]
    for s, r in zip(sets, rows):
        if list(r) != order:
            raise ValueError(f"statistics set {s.path} has other columns than {sets[0].path}: "
                             "sets of one table must share its schema")
    if histograms is None:
        histograms = reduce_histograms(sets, bins, columns)
    exact = frequencies.distinct_counts() if frequencies is not None else {}
    single = len(sets) == 1
    udfs = [f for f in sets[0].statistics.schema if f.name.startswith("udf_")]
    out = []
    for name in order:
        if columns is not None and name not in columns:
            continue
        parts = [r[name] for r in rows]
        ctype = parts[0]["type"]
        count = _sum(p["count"] for p in parts) or 0
        nulls = _sum(p["null_count"] for p in parts) or 0
        nonnull = count - nulls
        row = {"column": name, "type": ctype, "count": count, "null_count": nulls}
        # distinct
        if name in exact:
            row["distinct_count"], row["distinct_exact"] = exact[name], True
        elif nonnull == 0:
            row["distinct_count"], row["distinct_exact"] = 0, True
        elif single:
            row["distinct_count"] = parts[0]["distinct_count"]
            row["distinct_exact"] = parts[0]["distinct_exact"]
        else:
            sketches = [s.sketches.get(name) for s in sets]
            partial = [s for s, p in zip(sketches, parts) if (p["count"] or 0) > (p["null_count"] or 0)]
            if partial and all(s is not None for s in partial):
                estimate = hll_estimate(hll_merge(*partial))
                floor = max((p["distinct_count"] or 0) for p in parts if p["distinct_exact"])\
                    if any(p["distinct_exact"] for p in parts) else 1
                row["distinct_count"] = int(min(max(estimate, floor, 1), nonnull))
            else:
                row["distinct_count"] = None
            row["distinct_exact"] = False
        # extremes
        row["min"], row["min_value"] = _extreme(parts, name, min)
        row["max"], row["max_value"] = _extreme(parts, name, max)
        # moments
        moments = [((p["count"] or 0) - (p["null_count"] or 0), p["mean"],
                    ((p["stddev"] or 0.0) ** 2) * ((p["count"] or 0) - (p["null_count"] or 0)))
                   for p in parts if p["mean"] is not None]
        if moments:
            n, mean, m2 = _combine_moments(moments)
            row["mean"] = mean if n else None
            row["stddev"] = math.sqrt(max(m2, 0.0) / n) if n else None
        else:
            row["mean"] = row["stddev"] = None
        row["sum"] = _sum(p["sum"] for p in parts)
        lengths = [(p["avg_length"], (p["count"] or 0) - (p["null_count"] or 0)) for p in parts
                   if p["avg_length"] is not None]
        weight = sum(w for _, w in lengths)
        row["avg_length"] = (sum(a * w for a, w in lengths) / weight) if weight else (
            lengths[0][0] if lengths else None)
        maxes = [p["max_length"] for p in parts if p["max_length"] is not None]
        row["max_length"] = max(maxes) if maxes else None
        row["true_count"] = _sum(p["true_count"] for p in parts)
        row["false_count"] = _sum(p["false_count"] for p in parts)
        # percentiles
        names = [layout.percentile_name(p) for p in layout.PERCENTILES]
        if single:
            row["percentiles_exact"] = parts[0]["percentiles_exact"]
            for pn in names:
                row[pn] = parts[0][pn]
        elif name in histograms:
            edges, counts = histograms[name]
            for pn, v in zip(names, histogram_percentiles(edges, counts, layout.PERCENTILES)):
                row[pn] = v
            row["percentiles_exact"] = False
        else:
            row["percentiles_exact"] = None
            for pn in names:
                row[pn] = None
        for udf in udfs:
            row[udf.name] = parts[0].get(udf.name) if single else _reduce_udf(udf, parts)
        out.append(row)
    schema = layout.STATISTICS_SCHEMA
    for udf in udfs:
        schema = schema.append(udf)
    return pa.Table.from_pylist(out, schema=schema)


def _reduce_udf(udf: pa.Field, parts: list[dict]) -> float | None:
    """A user-defined statistic of the table from its partitions' values, by the rule its
    field names (``layout.udf_field``); None without one, or without values."""
    rule = (udf.metadata or {}).get(b"reduce", b"").decode()
    values = [(p.get(udf.name), (p["count"] or 0) - (p["null_count"] or 0)) for p in parts]
    values = [(v, n) for v, n in values if v is not None and not math.isnan(v)]
    if not rule or not values:
        return None
    if rule == "sum":
        return math.fsum(v for v, _ in values)
    if rule == "min":
        return min(v for v, _ in values)
    if rule == "max":
        return max(v for v, _ in values)
    weight = sum(n for _, n in values)
    return math.fsum(v * n for v, n in values) / weight if weight else None


# --- the table-level set ------------------------------------------------------------------------
def reduce_sketches(sets) -> pa.Table:
    """sketches.parquet of the table: each column's partition sketches merged."""
    sets = open_sets(sets)
    if not sets:
        return layout.SKETCHES_SCHEMA.empty_table()
    out = []
    for name in sets[0].statistics.column("column").to_pylist():
        found = [s.sketches[name] for s in sets if name in s.sketches]
        if found:
            out.append({"column": name, "hll": hll_merge(*found).tobytes()})
    return pa.Table.from_pylist(out, schema=layout.SKETCHES_SCHEMA)


def write_table_set(table_location: str, sets, *, bins: int = layout.DEFAULT_BINS,
                    redis=None, redis_url: str | None = None, distributions: bool = False,
                    set_id: str | None = None, **frequency_options) -> str:
    """Reduce partition sets into the table's own set, written like a partition's under
    ``<table location>/_stats/_table_/<set id>/`` (never changed afterwards; any location
    :func:`stats.files.write_set_files` writes: local, lakeFS, S3); returns its path.

    frequencies.parquet holds a row group per column; its schema metadata lists, as JSON, the
    ``partitions`` (names) and ``partition_sets`` (paths), in the order of the optional
    per-partition distributions (:func:`stats.frequencies.partitions_holding`), which
    ``distributions=True`` adds as :data:`stats.frequencies.DENSE` /
    :data:`stats.frequencies.SPARSE` columns) and the ``duplicates_only`` columns (scenario 1:
    only values occurring more than once are listed, every other value occurs once).
    ``frequency_options``: passed to :func:`stats.frequencies.table_frequencies`."""
    import json

    sets = open_sets(sets)
    result = freq.table_frequencies(sets, redis=redis, redis_url=redis_url, **frequency_options)
    histograms = reduce_histograms(sets, bins)
    statistics = reduce_statistics(sets, bins, frequencies=result, histograms=histograms)
    order = statistics.column("column").to_pylist()
    path = layout.set_dir(table_location, layout.TABLE_LEVEL, set_id or layout.new_set_id())
    table = result.table
    if distributions:
        table = freq.partition_distributions(sets, table)
    meta = {b"partitions": json.dumps([s.partition for s in sets]).encode(),
            b"partition_sets": json.dumps([s.path for s in sets]).encode(),
            b"duplicates_only": json.dumps(result.duplicates_only()).encode()}
    top_only = [c for c, r in sets[0].rows().items()  # listed by no partition in full
                if layout.is_discrete(r["type"] or "") and c not in result.reports]
    if top_only:
        meta[layout.TOP_ONLY.encode()] = json.dumps(top_only).encode()
    schema = table.schema.with_metadata(meta)

    def write(local: str) -> None:
        os.makedirs(local)
        pq.write_table(statistics, os.path.join(local, layout.STATISTICS))
        with pq.ParquetWriter(os.path.join(local, layout.FREQUENCIES), schema) as writer:
            for name in order:
                if name in result.reports:
                    part = table.filter(pc.equal(table["column"], name))
                    writer.write_table(part.replace_schema_metadata(meta),
                                       row_group_size=max(len(part), 1))
        pq.write_table(histograms_table(histograms, order),
                       os.path.join(local, layout.HISTOGRAMS))
        pq.write_table(reduce_sketches(sets), os.path.join(local, layout.SKETCHES))

    return files.write_set_files(path, write)
