"""The SQL engine: one partition's statistics computed by Spark SQL passes (summary,
distribution), written as a set, and the Spark session of a job (:mod:`stats.compute`)."""
from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass

from hms_proxy.hms.warehouse import local_path
from stats.compute.model import (
    _KIND_DISTINCT,
    _KIND_FREQ,
    _KIND_HIST,
    _KIND_HLL,
    FREQUENCY_COLLECT_LIMIT,
    LOCAL_DRIVER_MEMORY,
    STRING_TYPES,
    ComputeError,
    Options,
    Partition,
    Statistic,
    TableInfo,
    _is_complex,
    hll_estimate,
    layout,
    log,
    pa,
    pc,
    quote,
    registered_statistics,
    value_sql,
)


def _summary_exprs(columns, options: Options, stats: list[Statistic]):
    """(aliased Spark columns, how to read each row back)."""
    from pyspark.sql import functions as F

    exprs = [F.count(F.lit(1)).alias("rows")]
    fractions = ", ".join(f"{p / 100!r}" for p in layout.PERCENTILES)
    for i, (name, htype) in enumerate(columns):
        c, base = F.col(quote(name)), layout.base_type(htype)
        exprs.append(F.count(c).alias(f"nn_{i}"))
        if _is_complex(htype):
            continue
        if base in ("float", "double"):  # NaN: counted, but out of min/max, mean, sum...
            c = F.when(~F.isnan(c), c)
        exprs.append(F.min(c).cast("string").alias(f"min_{i}"))
        exprs.append(F.max(c).cast("string").alias(f"max_{i}"))
        vsql = value_sql(name, htype)
        if vsql is not None:
            v = F.expr(vsql)
            exprs += [F.min(v).alias(f"minv_{i}"), F.max(v).alias(f"maxv_{i}"),
                      F.stddev_pop(v).alias(f"sd_{i}")]
            if base in ("date", "timestamp"):
                exprs.append(F.avg(v).alias(f"mean_{i}"))
            else:  # exact for integers and decimals, then a double
                exprs.append(F.avg(c).cast("double").alias(f"mean_{i}"))
                exprs.append(F.sum(c).cast("double").alias(f"sum_{i}"))
            if options.exact_quantiles:
                pct = f"percentile({vsql}, array({fractions}))"
            else:
                pct = f"approx_percentile({vsql}, array({fractions}), {options.accuracy})"
            exprs.append(F.expr(pct).alias(f"pct_{i}"))
        if layout.is_discrete(htype):  # decides whether its frequencies are all kept
            exprs.append(F.approx_count_distinct(c).alias(f"ad_{i}"))
        if base in STRING_TYPES:
            exprs += [F.avg(F.length(c)).alias(f"avglen_{i}"),
                      F.max(F.length(c)).alias(f"maxlen_{i}")]
        elif base == "binary":
            exprs += [F.avg(F.octet_length(c)).alias(f"avglen_{i}"),
                      F.max(F.octet_length(c)).alias(f"maxlen_{i}")]
        elif base == "boolean":
            exprs += [F.count_if(c).alias(f"true_{i}"), F.count_if(~c).alias(f"false_{i}")]
        for stat in stats:
            if stat.sql is not None and stat.applies(htype):
                text = stat.sql.format(col=quote(name), value=vsql or quote(name))
                exprs.append(F.expr(text).cast("double").alias(f"udf_{stat.name}_{i}"))
    return exprs


def _register_rank(c):
    """(register, rank) of a value's HyperLogLog update: ``xxhash64(value)`` (seed 42), the
    top HLL_PRECISION bits, leading zeros of the other bits + 1."""
    from pyspark.sql import functions as F

    p = layout.HLL_PRECISION
    h = F.xxhash64(c)
    rank = F.least(F.lit(64) - F.length(F.bin(F.shiftleft(h, p))), F.lit(64 - p)) + 1
    return F.shiftrightunsigned(h, 64 - p).cast("int"), rank.cast("int")


# --- one partition -----------------------------------------------------------------------------
@dataclass
class PartitionResult:
    partition: Partition
    rows: int
    tables: dict  # the set's tables, as stats.columns.assemble gives them


def partition_frame(spark, info: TableInfo, part: Partition):
    """The rows of one partition, read through the metastore (Spark prunes to it)."""
    from pyspark.sql import functions as F

    df = spark.table(info.spark_name)
    for (key, ktype), value in zip(info.partition_keys, part.values):
        col = F.col(quote(key))
        if value == "__HIVE_DEFAULT_PARTITION__":
            df = df.where(col.isNull())
        else:
            df = df.where(col == F.lit(value).cast(df.schema[key].dataType))
    return df.select(*[quote(name) for name, _ in info.columns])


def compute_partition(spark, info: TableInfo, part: Partition, options: Options,
                      stats: list[Statistic] | None = None) -> PartitionResult:
    stats = registered_statistics() if stats is None else stats
    columns = info.columns
    df = partition_frame(spark, info, part)
    started = time.monotonic()
    summary = df.agg(*_summary_exprs(columns, options, stats)).collect()[0].asDict()
    rows = summary["rows"]
    log.debug("%s %s: summary pass, %d rows, %.2fs", info.display, part.name, rows,
              time.monotonic() - started)

    # the distribution pass: frequencies, sketches, histogram bins and, in a cheap partition,
    # the exact distinct counts of the columns without frequencies
    cheap = rows <= options.exact_distinct_limit
    ranges = {}
    for i, (name, htype) in enumerate(columns):
        lo, hi = summary.get(f"minv_{i}"), summary.get(f"maxv_{i}")
        if layout.is_numeric(htype) and lo is not None and math.isfinite(hi - lo):
            ranges[i] = (lo, hi)  # (no histogram over an infinite range)
    freq_tables: list[pa.Table] = []
    registers: dict[int, bytearray] = {}
    bins: dict[int, dict[int, int]] = {}
    distinct: dict[int, int] = {}
    if cheap:  # columns without values have no entries: 0 distinct
        distinct = {i: 0 for i, (_, t) in enumerate(columns)
                    if not layout.is_discrete(t) and not t.lower().startswith("map")}
    # discrete columns too varied to list every value (layout.FREQUENCY_LIMIT, estimated with a
    # 5% error): counted exactly in Spark, only their most frequent repeated values collected
    top_only = {i for i, (_, t) in enumerate(columns) if layout.is_discrete(t)
                and (summary.get(f"ad_{i}") or 0) > 0.9 * layout.FREQUENCY_LIMIT}
    distinct.update({i: 0 for i in top_only})

    def update(i, register, rank):
        regs = registers.setdefault(i, bytearray(1 << layout.HLL_PRECISION))
        regs[register] = max(regs[register], rank)

    if rows:
        small, freqs = _distribution_pass(df, columns, ranges, options.bins, cheap, rows,
                                          top_only)
        for kind, i, nkey, n, groups, rank in zip(
                *[small.column(c).to_pylist() for c in ("kind", "col", "nkey", "n", "groups",
                                                         "rank")]):
            if kind == _KIND_HIST:
                bins.setdefault(i, {})[nkey] = n
            else:
                update(i, nkey, rank)
                if kind == _KIND_DISTINCT:
                    distinct[i] += groups
        for freq in freqs:
            regs = freq.group_by(["col", "nkey"]).aggregate([("rank", "max")])
            for i, register, rank in zip(*[regs.column(c).to_pylist()
                                           for c in ("col", "nkey", "rank_max")]):
                update(i, register, rank)
            hist = freq.filter(pc.is_valid(freq.column("bin")))
            if hist.num_rows:
                hist = hist.group_by(["col", "bin"]).aggregate([("n", "sum")])
                for i, k, n in zip(*[hist.column(c).to_pylist()
                                     for c in ("col", "bin", "n_sum")]):
                    bins.setdefault(i, {})[k] = n
            freq_tables += _frequency_tables(freq)
    freq_tables.sort(key=lambda t: t.column("col")[0].as_py())
    for t in freq_tables:
        if t.column("col")[0].as_py() not in top_only:
            distinct[t.column("col")[0].as_py()] = t.num_rows
    log.debug("%s %s: distribution pass, %.2fs", info.display, part.name,
              time.monotonic() - started)

    # Python statistics, on the driver
    py_values: dict[tuple[str, int], float | None] = {}
    py_stats = [s for s in stats if s.fn is not None]
    wanted = [i for i, (_, t) in enumerate(columns) if any(s.applies(t) for s in py_stats)]
    if wanted:
        data = df.select(*[quote(columns[i][0]) for i in wanted]).toArrow()
        for pos, i in enumerate(wanted):
            arr = data.column(pos).combine_chunks()
            for s in py_stats:
                if s.applies(columns[i][1]):
                    result = s.fn(arr)
                    py_values[(s.name, i)] = None if result is None else float(result)

    log.debug("%s %s: computed in %.2fs", info.display, part.name, time.monotonic() - started)
    statistics = _statistics_table(columns, summary, distinct, registers, stats, py_values,
                                   options)
    histograms = _histograms_table(columns, ranges, bins, options.bins)
    sketches = pa.Table.from_pylist(
        [{"column": name, "hll": bytes(registers.get(i, bytes(1 << layout.HLL_PRECISION)))}
         for i, (name, htype) in enumerate(columns) if not htype.lower().startswith("map")],
        schema=layout.SKETCHES_SCHEMA)
    frequencies = []
    for t in freq_tables:
        name = columns[t.column("col")[0].as_py()][0]
        frequencies.append(pa.Table.from_arrays(
            [pa.array([name] * t.num_rows, pa.string()), t.column("value").cast(pa.string()),
             t.column("frequency").cast(pa.int64())], schema=layout.FREQUENCIES_SCHEMA))
    top_names = [columns[i][0] for i in sorted(top_only)]
    return PartitionResult(part, rows, {layout.STATISTICS: statistics,
                                        layout.FREQUENCIES: frequencies,
                                        layout.HISTOGRAMS: histograms,
                                        layout.SKETCHES: sketches,
                                        layout.TOP_ONLY: top_names})


def sql_statistics(spark, info: TableInfo, part: Partition,
                   stats: list[Statistic]) -> dict[tuple[str, int], float | None]:
    """The user-defined statistics given as SQL aggregates, of one partition: one Spark
    aggregation; ``{(statistic name, column position): value}``."""
    from pyspark.sql import functions as F

    exprs, keys = [], []
    for i, (name, htype) in enumerate(info.columns):
        vsql = value_sql(name, htype)
        for stat in stats:
            if stat.sql is not None and stat.applies(htype) and not _is_complex(htype):
                text = stat.sql.format(col=quote(name), value=vsql or quote(name))
                exprs.append(F.expr(text).cast("double").alias(f"udf_{len(keys)}"))
                keys.append((stat.name, i))
    if not exprs:
        return {}
    row = partition_frame(spark, info, part).agg(*exprs).collect()[0]
    return {key: row[f"udf_{n}"] for n, key in enumerate(keys)}


def _bin_index(v, lo: float, hi: float, bins: int):
    """The bin of a numeric value ``v`` (null for null) as numpy.histogram assigns it: ``(v -
    lo) * (bins / (hi - lo))`` truncated, the maximum in the last bin, then corrected by one
    against the edges."""
    from pyspark.sql import functions as F

    if hi == lo:
        return F.when(v.isNotNull(), F.lit(0))
    norm = bins / (hi - lo)
    step = (hi - lo) / bins
    raw = F.floor((v - F.lit(lo)) * F.lit(norm)).cast("int")
    raw = F.when(raw >= bins, F.lit(bins - 1)).otherwise(raw)

    def edge(k):
        return F.when(k >= bins, F.lit(hi)).otherwise(k.cast("double") * F.lit(step) + F.lit(lo))

    dec = F.when(v < edge(raw), raw - 1).otherwise(raw)
    return F.when((v >= edge(dec + 1)) & (dec != bins - 1), dec + 1).otherwise(dec)


def _distribution_pass(df, columns, ranges, bins, cheap, rows, top_only=frozenset()):
    """The distribution pass: (the hll, histogram and distinct rows, [frequency tables]) as
    Arrow. Each column is grouped by its typed value (``count`` per value; in a partition that
    is not cheap, a column without frequencies is taken row by row instead); the value groups
    give the frequencies (collected with their sketch update and histogram bin), the sketch
    registers (``max`` rank per register), the bins (``sum`` of the counts per bin) and the
    exact distinct counts (the number of groups). The small results of all columns come from
    one aggregation, the frequencies from another (column by column when large). A discrete
    column in ``top_only`` is taken like a non-discrete one of a cheap partition (exact distinct
    count, sketch and bins from its value groups, in Spark), and only its
    :data:`layout.TOP_FREQUENCIES` most frequent values occurring more than once are collected."""
    from functools import reduce

    from pyspark.sql import functions as F

    small_parts, freq_parts = [], []
    for i, (name, htype) in enumerate(columns):
        if htype.lower().startswith("map"):
            continue  # (no sketch, no distinct count, no histogram)
        c = F.col(quote(name))
        discrete = layout.is_discrete(htype)
        values = df.select(c).where(c.isNotNull())
        if discrete or cheap:
            values = values.groupBy(c).agg(F.count(F.lit(1)).alias("n"))
        else:
            values = values.select(c, F.lit(1).cast("long").alias("n"))
        register, rank = _register_rank(c)
        if i in ranges:
            index = _bin_index(F.expr(value_sql(name, htype)), *ranges[i], bins).cast("int")
        else:
            index = F.lit(None).cast("int")
        if i in top_only:
            freq_parts.append(values.where(F.col("n") > 1).select(
                F.lit(_KIND_FREQ).alias("kind"), F.lit(i).alias("col"),
                c.cast("string").alias("skey"), register.alias("nkey"), rank.alias("rank"),
                F.col("n").cast("long").alias("n"), F.lit(None).cast("int").alias("bin"))
                .orderBy(F.col("n").desc(), F.col("skey")).limit(layout.TOP_FREQUENCIES))
        elif discrete:
            freq_parts.append(values.select(
                F.lit(_KIND_FREQ).alias("kind"), F.lit(i).alias("col"),
                c.cast("string").alias("skey"), register.alias("nkey"), rank.alias("rank"),
                F.col("n").cast("long").alias("n"), index.alias("bin")))
            continue
        entries = [F.struct(F.lit(_KIND_DISTINCT if cheap or discrete else _KIND_HLL)
                            .alias("kind"),
                            F.lit(i).alias("col"), register.alias("nkey"),
                            rank.cast("long").alias("val"))]
        if i in ranges:
            entries.append(F.when(index.isNotNull(), F.struct(
                F.lit(_KIND_HIST).alias("kind"), F.lit(i).alias("col"), index.alias("nkey"),
                F.col("n").cast("long").alias("val"))))
        small_parts.append(values.select(
            F.inline(F.filter(F.array(*entries), lambda e: e.isNotNull()))))
    if small_parts:
        small = (reduce(lambda a, b: a.unionAll(b), small_parts)
                 .groupBy("kind", "col", "nkey")
                 .agg(F.sum("val").alias("n"), F.count(F.lit(1)).alias("groups"),
                      F.max("val").alias("rank"))
                 .toArrow())
    else:
        small = pa.table({k: pa.array([], pa.int64())
                          for k in ("kind", "col", "nkey", "n", "groups", "rank")})
    if not freq_parts:
        return small, []
    if rows * len(freq_parts) <= FREQUENCY_COLLECT_LIMIT:
        return small, [reduce(lambda a, b: a.unionAll(b), freq_parts).toArrow()]
    return small, [part.toArrow() for part in freq_parts]  # large: one column at a time


def _frequency_tables(freq: pa.Table) -> list[pa.Table]:
    """Per discrete column with values (table order), its frequencies by decreasing count,
    then value: tables of ``col``, ``value``, ``frequency``."""
    if freq.num_rows == 0:
        return []
    freq = pa.table({"col": freq.column("col"), "value": freq.column("skey"),
                     "frequency": freq.column("n")})
    freq = freq.sort_by([("col", "ascending"), ("frequency", "descending"),
                         ("value", "ascending")])
    cols = freq.column("col").to_pylist()
    out, start = [], 0
    for end in range(1, len(cols) + 1):
        if end == len(cols) or cols[end] != cols[start]:
            out.append(freq.slice(start, end - start))
            start = end
    return out


def _statistics_table(columns, summary, distinct, registers, stats, py_values, options):
    rows = summary["rows"]
    records = []
    for i, (name, htype) in enumerate(columns):
        base = layout.base_type(htype)
        nn = summary[f"nn_{i}"]
        rec = {"column": name, "type": htype, "count": rows, "null_count": rows - nn}
        if i in distinct:
            rec["distinct_count"], rec["distinct_exact"] = distinct[i], True
        elif i in registers or (nn == 0 and not htype.lower().startswith("map")):
            regs = bytes(registers.get(i, bytes(1 << layout.HLL_PRECISION)))
            rec["distinct_count"], rec["distinct_exact"] = hll_estimate(regs), nn == 0
        for key, field_ in (("min", "min"), ("max", "max"), ("minv", "min_value"),
                            ("maxv", "max_value"), ("mean", "mean"), ("sd", "stddev"),
                            ("sum", "sum"), ("avglen", "avg_length"), ("maxlen", "max_length"),
                            ("true", "true_count"), ("false", "false_count")):
            if f"{key}_{i}" in summary:
                rec[field_] = summary[f"{key}_{i}"]
        if base == "boolean":
            rec.setdefault("true_count", 0)
        pct = summary.get(f"pct_{i}")
        if f"pct_{i}" in summary:
            rec["percentiles_exact"] = options.exact_quantiles
            for p, v in zip(layout.PERCENTILES, pct or [None] * len(layout.PERCENTILES)):
                rec[layout.percentile_name(p)] = None if v is None else float(v)
        for stat in stats:
            if stat.sql is not None and f"udf_{stat.name}_{i}" in summary:
                rec[f"udf_{stat.name}"] = summary[f"udf_{stat.name}_{i}"]
            elif stat.fn is not None and (stat.name, i) in py_values:
                rec[f"udf_{stat.name}"] = py_values[(stat.name, i)]
        records.append(rec)
    schema = layout.STATISTICS_SCHEMA
    for stat in stats:
        schema = schema.append(stat.field)
    return pa.Table.from_pylist(records, schema=schema)


def _histograms_table(columns, ranges, bins, nbins) -> pa.Table:
    """A struct column per numeric column, a row per bin (padded with nulls)."""
    numeric = [(i, name) for i, (name, htype) in enumerate(columns) if layout.is_numeric(htype)]
    per_column = {}
    for i, name in numeric:
        if i not in ranges:
            per_column[name] = []
            continue
        lo, hi = ranges[i]
        counts = bins.get(i, {})
        if hi == lo:
            per_column[name] = [{"lower": lo, "upper": hi, "count": counts.get(0, 0)}]
        else:
            from stats.columns import hist_edges

            edges = hist_edges(lo, hi, nbins)
            per_column[name] = [{"lower": edges[k], "upper": edges[k + 1],
                                 "count": counts.get(k, 0)} for k in range(nbins)]
    height = max((len(v) for v in per_column.values()), default=0)
    arrays = [pa.array(v + [None] * (height - len(v)), type=layout.BIN)
              for v in per_column.values()]
    return pa.Table.from_arrays(arrays, schema=pa.schema(
        [pa.field(name, layout.BIN) for name in per_column]))


# --- writing -----------------------------------------------------------------------------------
def _write_files(result: PartitionResult, directory: str) -> None:
    from stats.arrow_compute import write_files

    write_files(result.tables, directory)


def write_set(spark, info: TableInfo, result: PartitionResult) -> str:
    """Write the set into a fresh immutable directory; returns its path (as a location)."""
    set_id = layout.new_set_id()
    target = layout.set_dir(info.location, result.partition.name, set_id)
    if local_path(target) is not None:
        from stats import files

        return files.write_set_files(target, lambda directory: _write_files(result, directory))
    # another scheme: through the session's Hadoop file system
    with tempfile.TemporaryDirectory(prefix="hms-stats-") as tmp:
        _write_files(result, tmp)
        try:
            jvm = spark._jvm
            conf = spark._jsc.hadoopConfiguration()
            dest = jvm.org.apache.hadoop.fs.Path(target)
            staging = jvm.org.apache.hadoop.fs.Path(
                f"{target.rsplit('/', 1)[0]}/.{set_id}.tmp")
            fs = dest.getFileSystem(conf)
            fs.mkdirs(staging)
            for name in layout.FILES:
                fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(
                    "file://" + os.path.join(tmp, name)), staging)
            if not fs.rename(staging, dest):
                raise ComputeError(f"cannot rename {staging} to {target}")
        except ComputeError:
            raise
        except Exception as exc:  # noqa: BLE001 - Py4J errors carry the Java message
            raise ComputeError(f"cannot write statistics to {target} through Hadoop: "
                               f"{str(exc).splitlines()[0]}") from None
    return target


def data_fingerprint(spark, location: str) -> str:
    """``<location>|files=N|bytes=B|mtime=T`` over the partition's data files (hidden names,
    ``_`` or ``.`` first, skipped: ``_stats`` is not data)."""
    files = size = mtime = 0
    local = local_path(location)
    if local is not None:
        for dirpath, dirnames, filenames in os.walk(local):
            dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
            for f in filenames:
                if f.startswith(("_", ".")):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, f))
                except OSError:
                    continue
                files, size = files + 1, size + st.st_size
                mtime = max(mtime, int(st.st_mtime * 1000))
    elif spark is not None:
        try:
            jpath = spark._jvm.org.apache.hadoop.fs.Path(location)
            fs = jpath.getFileSystem(spark._jsc.hadoopConfiguration())
            for st in fs.listStatus(jpath):
                name = st.getPath().getName()
                if st.isFile() and not name.startswith(("_", ".")):
                    files, size = files + 1, size + st.getLen()
                    mtime = max(mtime, st.getModificationTime())
        except Exception:  # noqa: BLE001 - a missing directory: no data
            pass
    return f"{location}|files={files}|bytes={size}|mtime={mtime}"



def build_session(uri: str, master: str = "local[2]", conf: dict | None = None,
                  workdir: str | None = None):
    """A Spark session with Hive support over the metastore at ``uri``."""
    from pyspark.sql import SparkSession

    workdir = workdir or tempfile.mkdtemp(prefix="hms-stats-spark-")
    builder = (SparkSession.builder.master(master).appName("hms-proxy stats compute")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.hadoop.hive.metastore.uris", uri)
               .config("spark.sql.warehouse.dir", os.path.join(workdir, "warehouse"))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={workdir}"))
    if master.startswith("local"):  # one JVM does everything: Spark's 1g default spills early
        builder = (builder.config("spark.sql.shuffle.partitions", "4")
                   .config("spark.driver.memory", LOCAL_DRIVER_MEMORY))
        # the Python tasks (stats.compute.engine) import stats, pyarrow and numpy: this interpreter's
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
