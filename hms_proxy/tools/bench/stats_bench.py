"""``hms-proxy bench stats``: how fast computed statistics are served, reduced and computed.

Builds statistics sets with pyarrow as :mod:`stats.layout` describes them (realistic values:
every statistic filled for its column type, 1,000-bin histograms, HyperLogLog sketches of
random hashes), points a store at them, starts ``hms-proxy serve`` over that store
(:func:`hms_proxy.tools.metastores.start_proxy`) and measures:

1. **lookup**: 10 columns' statistics of one partition of a ``--columns`` (1,000) column table,
   (a) read directly from the set's ``statistics.parquet``: :func:`stats.serving.read_rows`
   without a cache (the parquet read each time, as a cold server does) and, when it exists,
   :mod:`stats.query`'s ``summary(columns, partition=...)``, (b)
   ``get_partitions_statistics_req`` for those 10 columns through the server, warm (the server
   caches a set's rows). Target: at most 10 ms.
2. **table level**: 10 columns of a ``--table-columns`` (20) column table of ``--partitions``
   (1,000) partitions: :func:`stats.reduce.reduce_statistics` with ``columns=`` over fresh
   (unread) sets, :mod:`stats.query`'s table-level ``summary(columns)`` reduced on the fly and
   from the reduced ``_table_`` set, and through the server ``get_table_statistics_req`` (answered from the
   reduced ``_table_`` set) and ``get_aggr_stats_for`` over every partition. Target: at most
   100 ms.
3. **size** of ``statistics.parquet`` of the ``--columns`` table as the compute job writes it
   (pyarrow defaults) and with :func:`stats.layout.write_statistics`, with the other writer
   settings tried. Target: under 200 KB.
4. **compute**: :func:`stats.compute.compute` on a ``--rows`` (10,000,000) row, 20-column
   table vs Spark's own ``ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS`` on the same
   data in the same session. Target: within 2x. ``--skip-compute`` leaves it out.

``--stock-hms`` also starts the stock HMS 2.3.10 and times its ``get_table_statistics_req`` for
the same 10 columns of a table whose statistics a client wrote (update_table_column_statistics).

Progress goes to stderr, the table to stdout. Medians and p95 are of ``--runs`` warm runs.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics as pystats
import tempfile
import time
from pathlib import Path

from hms_proxy.hms.importer import open_client
from hms_proxy.hms.warehouse import local_path
from hms_proxy.thrift.gen.hive_metastore import ttypes as t
from hms_proxy.tools.bench.importing import storage_descriptor
from hms_proxy.tools.bench.report import logger, write_outputs
from hms_proxy.tools.metastores import start_proxy, start_stock_hms
from kvmodel.locations import open_catalog_store
from stats import compute, layout, query

DB = "bench_stats"
WIDE = "wide"      # item 1 and 3: --columns columns, one partition
NARROW = "narrow"  # item 2: --table-columns columns, --partitions partitions
FLAT = "flat"      # item 4: the compute job's table
LOOKUP = 10        # columns looked up

# A realistic mix of column types, cycled through a table's columns.
TYPES = ("bigint", "double", "string", "int", "date", "decimal(12,2)", "timestamp", "string",
         "boolean", "varchar(64)", "double", "bigint")
TARGETS_MS = {"lookup": 10.0, "table": 100.0}
SIZE_TARGET = 200 * 1024
COMPUTE_TARGET = 2.0


log = logger("bench stats")


def register(modes) -> argparse.ArgumentParser:
    """Add ``stats`` to the sub-parsers of ``hms-proxy bench``."""
    p = modes.add_parser(
        "stats", help="time computed statistics: lookups, table-level reduction, size, compute",
        description="Build statistics sets with pyarrow, serve them from a started hms-proxy "
                    "and time: 10 columns of one partition of a 1,000-column table, 10 columns "
                    "of a 1,000-partition table (reduction and server), the size of a "
                    "1,000-column statistics.parquet, and the compute job against Spark's "
                    "ANALYZE TABLE. Reproduce the published figures with: "
                    "hms-proxy bench stats --rows 10000000")
    p.add_argument("--columns", type=int, default=1000,
                   help="columns of the wide table (lookup and size; default 1000)")
    p.add_argument("--partitions", type=int, default=1000,
                   help="partitions of the table-level test (default 1000)")
    p.add_argument("--table-columns", type=int, default=20,
                   help="columns of the table-level test's table (default 20)")
    p.add_argument("--runs", type=int, default=200,
                   help="timed runs of each lookup (default 200; the reduction: runs / 20, at "
                        "least 3)")
    p.add_argument("--rows", type=int, default=10_000_000,
                   help="rows of the compute job's table (default 10000000)")
    p.add_argument("--master", default="local[2]", help="Spark master of item 4 (default local[2])")
    p.add_argument("--skip-compute", action="store_true",
                   help="leave out item 4 (the compute job vs ANALYZE TABLE; needs pyspark)")
    p.add_argument("--stock-hms", action="store_true",
                   help="also time the stock HMS 2.3.10's get_table_statistics_req for the same "
                        "10 columns (client-written statistics)")
    p.add_argument("--workdir", metavar="DIR",
                   help="work directory (store, sets, logs); default: a temporary directory, "
                        "deleted afterwards unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--seed", type=int, default=5, help="random seed of the values (default 5)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results as Markdown")
    p.set_defaults(func=cmd_stats_bench)
    return p


# --- realistic statistics rows ------------------------------------------------------------------
def column_defs(n: int, prefix: str = "c") -> list[tuple[str, str]]:
    return [(f"{prefix}{i:04d}_{TYPES[i % len(TYPES)].split('(')[0]}", TYPES[i % len(TYPES)])
            for i in range(n)]


def _word(rng: random.Random, lo: int, hi: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_0123456789")
                   for _ in range(rng.randint(lo, hi)))


def stat_row(name: str, hive_type: str, rows: int, rng: random.Random) -> dict:
    """A statistics.parquet row with every statistic of its type filled, values consistent
    (min <= percentiles <= max, nulls + values = rows)."""

    kind = layout.base_type(hive_type)
    nulls = int(rows * rng.choice((0.0, 0.0, 0.001, 0.02, 0.3)))
    nonnull = rows - nulls
    row = dict.fromkeys(layout.STATISTICS_SCHEMA.names)
    row.update(column=name, type=hive_type, count=rows, null_count=nulls)
    if kind == "boolean":
        trues = rng.randint(0, nonnull)
        row.update(distinct_count=(trues > 0) + (nonnull - trues > 0), distinct_exact=True,
                   min="false" if nonnull - trues else "true", max="true" if trues else "false",
                   true_count=trues, false_count=nonnull - trues)
        return row
    if kind in ("string", "varchar", "char"):
        lo, hi = sorted((_word(rng, 3, 20), _word(rng, 3, 20)))
        avg = rng.uniform(4, 40)
        row.update(distinct_count=min(nonnull, rng.randint(1, 100_000)), distinct_exact=True,
                   min=lo, max=hi, avg_length=avg, max_length=int(avg * rng.uniform(1.5, 4)))
        return row
    if kind == "date":
        lo = rng.randint(17_000, 19_000)
        hi = lo + rng.randint(1, 1500)
    elif kind == "timestamp":
        lo = rng.randint(1_500_000_000, 1_700_000_000) * 1_000_000 + rng.randint(0, 999_999)
        hi = lo + rng.randint(1, 10**8) * 1_000_000
    elif kind in ("int", "bigint", "tinyint", "smallint"):
        lo = rng.randint(-10**6, 10**6) if kind == "int" else rng.randint(-10**12, 10**12)
        hi = lo + rng.randint(1, 10**6)
    else:
        lo = round(rng.uniform(-1e6, 1e6), 2)
        hi = round(lo + rng.uniform(1, 1e6), 2)
    mean = rng.uniform(lo, hi)
    pcts = sorted(rng.uniform(lo, hi) for _ in layout.PERCENTILES)
    if kind == "date":
        import datetime

        text = [str(datetime.date(1970, 1, 1) + datetime.timedelta(days=v)) for v in (lo, hi)]
    elif kind == "timestamp":
        import datetime

        text = [str(datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=v))
                for v in (lo, hi)]
    elif kind == "decimal":
        text = [f"{lo:.2f}", f"{hi:.2f}"]
    else:
        text = [repr(lo) if isinstance(lo, float) else str(lo),
                repr(hi) if isinstance(hi, float) else str(hi)]
    exact = kind in layout.DISCRETE_TYPES
    row.update(distinct_count=min(nonnull, rng.randint(1, 1_000_000)), distinct_exact=exact,
               min=text[0], max=text[1], min_value=float(lo), max_value=float(hi), mean=mean,
               stddev=(hi - lo) / rng.uniform(3, 8),
               sum=None if kind in ("date", "timestamp") else mean * nonnull,
               percentiles_exact=False)
    for p, v in zip(layout.PERCENTILES, pcts):
        row[layout.percentile_name(p)] = v
    return row


def statistics_table(columns, rows: int, rng: random.Random):
    import pyarrow as pa

    return pa.Table.from_pylist([stat_row(n, t, rows, rng) for n, t in columns],
                                schema=layout.STATISTICS_SCHEMA)


def _write_statistics(table, path: str) -> None:
    """layout.write_statistics when the layout has it (the contract's writer settings), else
    pyarrow's defaults, as the compute job writes."""

    writer = getattr(layout, "write_statistics", None)
    if writer is not None:
        writer(table, path)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, path)


def write_set(location: str, partition: str, columns, rows: int, rng: random.Random,
              np_rng, full: bool) -> str:
    """One statistics set; ``full``: histograms (DEFAULT_BINS bins) and sketches too, else
    empty companion files. Returns its path."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from stats import layout, reduce

    path = layout.set_dir(location, partition, layout.new_set_id())
    local = local_path(path)
    os.makedirs(local)
    stats = statistics_table(columns, rows, rng)
    _write_statistics(stats, os.path.join(local, layout.STATISTICS))
    pq.write_table(layout.FREQUENCIES_SCHEMA.empty_table(), os.path.join(local, layout.FREQUENCIES))
    numeric = [(n, t) for n, t in columns if layout.is_numeric(t)]
    if not full:
        pq.write_table(pa.schema([(n, layout.BIN) for n, _ in numeric]).empty_table(),
                       os.path.join(local, layout.HISTOGRAMS))
        pq.write_table(layout.SKETCHES_SCHEMA.empty_table(), os.path.join(local, layout.SKETCHES))
        return path
    srows = {r["column"]: r for r in stats.to_pylist()}
    bins = layout.DEFAULT_BINS
    arrays = []
    for name, _ in numeric:
        r = srows[name]
        edges = np.linspace(r["min_value"], r["max_value"], bins + 1)
        nonnull = r["count"] - r["null_count"]
        counts = np_rng.multinomial(nonnull, np.full(bins, 1.0 / bins)).astype(np.int64)
        arrays.append(pa.StructArray.from_arrays(
            [pa.array(edges[:-1]), pa.array(edges[1:]), pa.array(counts)],
            fields=list(layout.BIN)))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema([(n, layout.BIN)
                                                                   for n, _ in numeric])),
                   os.path.join(local, layout.HISTOGRAMS))
    sketches = []
    for name, _ in columns:
        n = max(1, min(srows[name]["distinct_count"] or 1, 3000))
        hashes = np_rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64,
                                 endpoint=True)
        sketches.append({"column": name, "hll": reduce.hll_registers(hashes).tobytes()})
    pq.write_table(pa.Table.from_pylist(sketches, schema=layout.SKETCHES_SCHEMA),
                   os.path.join(local, layout.SKETCHES))
    return path


# --- the catalog ------------------------------------------------------------------------------
def _table(t, name: str, columns, location_root: str | None = None, partitioned: bool = True):

    cols = [t.FieldSchema(n, ht, None) for n, ht in columns]
    keys = [t.FieldSchema("ds", "string", None)] if partitioned else []
    return t.Table(tableName=name, dbName=DB, owner="bench", createTime=0, lastAccessTime=0,
                   retention=0, sd=storage_descriptor(t, None, cols), partitionKeys=keys, parameters={},
                   tableType="MANAGED_TABLE")


def _partitions(t, tbl, names: list[str]):
    import copy

    out = []
    for name in names:
        sd = copy.deepcopy(tbl.sd)
        sd.location = f"{tbl.sd.location.rstrip('/')}/{name}"
        out.append(t.Partition(values=[name.split("=", 1)[1]], dbName=DB, tableName=tbl.tableName,
                               createTime=0, lastAccessTime=0, sd=sd, parameters={}))
    return out


def _timed(fn, runs: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def _summary(samples: list[float]) -> dict:
    if not samples:
        return {"median_ms": None, "p95_ms": None, "runs": 0}
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"median_ms": round(pystats.median(ordered), 3), "p95_ms": round(p95, 3),
            "runs": len(samples), "first_ms": round(samples[0], 3)}


# --- the run ----------------------------------------------------------------------------------
def cmd_stats_bench(args) -> int:
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="hms-bench-stats-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args, work)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(text_table(result))
    write_outputs(args, result, lambda: markdown(result))
    return 0


def run(args, work: Path) -> dict:
    import numpy as np

    from stats import layout, reduce, serving

    rng, np_rng = random.Random(args.seed), np.random.default_rng(args.seed)
    load = os.getloadavg()
    result: dict = {"command": "hms-proxy bench stats " + " ".join(_argv(args)),
                    "machine": {"cpus": os.cpu_count(), "load_before": [round(x, 2) for x in load]},
                    "rows": [], "notes": []}
    rows = result["rows"]
    store_path = work / "store"
    log(f"starting hms-proxy over {store_path}")
    server = start_proxy(work / "server", store=store_path, cwd=Path(__file__).resolve().parents[3])
    try:
        with open_client(server.uri) as client:
            client.create_database(t.Database(DB, "", None, {}))
            wide_cols = column_defs(args.columns)
            narrow_cols = column_defs(args.table_columns, prefix="n")
            client.create_table(_table(t, WIDE, wide_cols))
            wide = client.get_table(DB, WIDE)
            client.add_partitions(_partitions(t, wide, ["ds=2024-01-01"]))
            client.create_table(_table(t, NARROW, narrow_cols))
            narrow = client.get_table(DB, NARROW)
            names = [f"ds=p{i:05d}" for i in range(args.partitions)]
            for i in range(0, len(names), 1000):
                client.add_partitions(_partitions(t, narrow, names[i:i + 1000]))
        # the sets
        log(f"writing a {args.columns}-column set and {args.partitions} sets of "
            f"{args.table_columns} columns")
        wide_set = write_set(wide.sd.location, "ds=2024-01-01", wide_cols, 1_000_000, rng,
                             np_rng, full=False)
        t0 = time.perf_counter()
        narrow_sets = [write_set(narrow.sd.location, n, narrow_cols, rng.randint(10_000, 2_000_000),
                                 rng, np_rng, full=True) for n in names]
        log(f"  {len(narrow_sets)} sets in {time.perf_counter() - t0:.1f} s")
        lookup_wide = [n for n, _ in wide_cols][:: max(1, args.columns // LOOKUP)][:LOOKUP]
        lookup_narrow = [n for n, _ in narrow_cols][:LOOKUP]
        reduced = reduce.reduce_statistics(narrow_sets)
        table_set = layout.set_dir(narrow.sd.location, layout.TABLE_LEVEL, layout.new_set_id())
        os.makedirs(local_path(table_set))
        _write_statistics(reduced, os.path.join(local_path(table_set), layout.STATISTICS))
        store = open_catalog_store(str(store_path))
        try:
            fp_w = layout.schema_fingerprint(wide_cols)
            fp_n = layout.schema_fingerprint(narrow_cols)
            pointers = [(layout.pointer_key(DB, WIDE, "ds=2024-01-01"),
                         layout.make_pointer(wide_set, None, fp_w, 1_000_000))]
            pointers += [(layout.pointer_key(DB, NARROW, n), layout.make_pointer(s, None, fp_n, 1))
                         for n, s in zip(names, narrow_sets)]
            pointers.append((layout.pointer_key(DB, NARROW, layout.TABLE_LEVEL),
                             layout.make_pointer(table_set, None, fp_n, 1)))
            with store.write("main") as txn:
                txn.put_many(pointers)
        finally:
            store.close()

        # 1. lookup
        log(f"1. lookup of {LOOKUP} columns of one partition of the {args.columns}-column table")
        direct = _timed(lambda: serving.read_rows(wide_set, lookup_wide), args.runs)
        rows.append(_row("lookup_direct", f"{LOOKUP} columns of 1 partition, {args.columns}-column "
                         "set: statistics.parquet read (stats.serving.read_rows, no cache)",
                         direct, TARGETS_MS["lookup"]))
        wide_q, narrow_q, narrow_q_reduce = _query_tables(store_path)
        q = _timed(lambda: wide_q.summary(lookup_wide, partition="ds=2024-01-01"), args.runs)
        rows.append(_row("lookup_query", f"{LOOKUP} columns of 1 partition, {args.columns}-"
                         "column set: stats.query summary(columns, partition)", q,
                         TARGETS_MS["lookup"]))
        with open_client(server.uri) as client:
            req = t.PartitionsStatsRequest(DB, WIDE, lookup_wide, ["ds=2024-01-01"])
            answer = client.get_partitions_statistics_req(req)
            served = len(answer.partStats.get("ds=2024-01-01", []))
            assert served == len(lookup_wide), f"served {served} of {len(lookup_wide)} columns"
            samples = _timed(lambda: client.get_partitions_statistics_req(req), args.runs)
        rows.append(_row("lookup_server", f"get_partitions_statistics_req, {LOOKUP} columns of "
                         f"1 partition, {args.columns}-column table (warm)", samples,
                         TARGETS_MS["lookup"]))

        # 2. table level
        log(f"2. table-level statistics of {LOOKUP} columns over {args.partitions} partitions")
        reps = max(3, args.runs // 20)
        red = _timed(lambda: reduce.reduce_statistics(narrow_sets, columns=lookup_narrow), reps,
                     warmup=1)
        rows.append(_row("table_reduce", f"reduce_statistics(columns={LOOKUP}) over "
                         f"{args.partitions} partition sets (unread sets each run)", red,
                         TARGETS_MS["table"]))
        q = _timed(lambda: narrow_q_reduce.summary(lookup_narrow), reps, warmup=1)
        rows.append(_row("table_query_reduce", f"stats.query summary({LOOKUP} columns), "
                         f"table level reduced on the fly over {args.partitions} sets", q,
                         TARGETS_MS["table"]))
        q = _timed(lambda: narrow_q.summary(lookup_narrow), args.runs)
        rows.append(_row("table_query_set", f"stats.query summary({LOOKUP} columns), table "
                         "level from the reduced _table_ set", q, TARGETS_MS["table"]))
        with open_client(server.uri) as client:
            req = t.TableStatsRequest(DB, NARROW, lookup_narrow)
            got = client.get_table_statistics_req(req)
            assert len(got.tableStats) == len(lookup_narrow), got
            samples = _timed(lambda: client.get_table_statistics_req(req), args.runs)
            rows.append(_row("table_server", f"get_table_statistics_req, {LOOKUP} columns, "
                             f"{args.partitions}-partition table (reduced _table_ set, warm)",
                             samples, TARGETS_MS["table"]))
            areq = t.PartitionsStatsRequest(DB, NARROW, lookup_narrow, names)
            t0 = time.perf_counter()
            aggr = client.get_aggr_stats_for(areq)
            cold = (time.perf_counter() - t0) * 1000.0
            assert aggr.partsFound == len(names), aggr.partsFound
            samples = _timed(lambda: client.get_aggr_stats_for(areq), max(3, args.runs // 10),
                             warmup=1)
            row = _row("table_aggr", f"get_aggr_stats_for, {LOOKUP} columns over "
                       f"{args.partitions} partitions (warm)", samples, TARGETS_MS["table"])
            row["cold_ms"] = round(cold, 3)
            rows.append(row)

        # 3. size
        log(f"3. size of a {args.columns}-column statistics.parquet")
        result["size"] = sizes(statistics_table(wide_cols, 1_000_000, random.Random(args.seed)),
                               work / "sizes")

        # stock HMS
        if args.stock_hms:
            rows.append(stock_row(work, narrow_cols, lookup_narrow, args.runs))
        else:
            result["notes"].append("stock HMS not timed (--stock-hms)")
    finally:
        server.stop()

    # 4. compute
    if args.skip_compute:
        result["notes"].append("4. compute vs ANALYZE TABLE skipped (--skip-compute)")
    else:
        why = _compute_unavailable()
        if why:
            result["notes"].append(f"4. compute vs ANALYZE TABLE skipped: {why}")
            log(f"4. skipped: {why}")
        else:
            result["compute"] = compute_vs_analyze(args, work)
    result["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


def _argv(args) -> list[str]:
    out = []
    for flag in ("columns", "partitions", "table_columns", "runs", "rows"):
        out += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for flag in ("skip_compute", "stock_hms"):
        if getattr(args, flag):
            out.append(f"--{flag.replace('_', '-')}")
    return out


def _row(key: str, label: str, samples: list[float], target: float | None) -> dict:
    s = _summary(samples)
    met = None if target is None or s["median_ms"] is None else s["median_ms"] <= target
    return {"operation": key, "label": label, **s, "target_ms": target, "met": met}


def _query_tables(store_path: Path):
    """stats.query's TableStats of the wide table, of the narrow one, and of the narrow one
    without its ``_table_`` pointer (reduced on the fly)."""
    import dataclasses

    wide = query.open_table(str(store_path), f"{DB}.{WIDE}")
    narrow = query.open_table(str(store_path), f"{DB}.{NARROW}")
    pointers = {k: v for k, v in narrow.pointers.items() if k != layout.TABLE_LEVEL}
    return wide, narrow, dataclasses.replace(narrow, pointers=pointers)


def _compute_unavailable() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    try:
        from stats import compute
    except ImportError as exc:
        return f"stats.compute cannot be imported ({exc})"
    if not callable(getattr(compute, "compute", None)):
        return "stats.compute has no compute() entry point"
    return None


# --- 3. size ------------------------------------------------------------------------------------
def sizes(table, directory: Path) -> dict:
    """statistics.parquet's size written with each setting; the largest column chunks of the
    default file."""
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    variants = {
        "pyarrow defaults (snappy, dictionary, statistics)": {},
        "no column statistics": {"write_statistics": False},
        "no dictionary": {"use_dictionary": False},
        "no dictionary, no statistics": {"use_dictionary": False, "write_statistics": False},
        "zstd": {"compression": "zstd"},
        "zstd, no dictionary, no statistics": {"compression": "zstd", "use_dictionary": False,
                                               "write_statistics": False},
        "page index": {"write_page_index": True},
    }
    out: dict = {"columns": table.num_rows, "variants": {}}
    for label, options in variants.items():
        path = directory / f"{len(out['variants'])}.parquet"
        pq.write_table(table, path, **options)
        out["variants"][label] = path.stat().st_size
    default = directory / "0.parquet"
    meta = pq.ParquetFile(default).metadata
    chunks = []
    for i in range(meta.num_columns):
        c = meta.row_group(0).column(i)
        chunks.append((c.path_in_schema, c.total_compressed_size))
    out["footer_bytes"] = meta.serialized_size
    out["largest_chunks"] = sorted(chunks, key=lambda x: -x[1])[:5]
    writer = getattr(layout, "write_statistics", None)
    if writer is not None:
        path = directory / "layout.parquet"
        writer(table, str(path))
        out["layout.write_statistics"] = path.stat().st_size
    out["bytes"] = out.get("layout.write_statistics",
                           out["variants"]["pyarrow defaults (snappy, dictionary, statistics)"])
    out["target_bytes"] = SIZE_TARGET
    out["met"] = out["bytes"] < SIZE_TARGET
    return out


# --- stock HMS ----------------------------------------------------------------------------------
def stock_row(work: Path, columns, lookup: list[str], runs: int) -> dict:

    log("starting the stock HMS 2.3.10")
    hms = start_stock_hms(work / "stock")
    try:
        with open_client(hms.uri) as client:
            client.create_database(t.Database(DB, "", None, {}))
            tbl = _table(t, "flat", columns, partitioned=False)
            client.create_table(tbl)
            rng = random.Random(1)
            objs = []
            for name, htype in columns:
                if htype in ("bigint", "int"):
                    data = t.ColumnStatisticsData(longStats=t.LongColumnStatsData(
                        rng.randint(-100, 0), rng.randint(1, 100), rng.randint(0, 9),
                        rng.randint(1, 100)))
                elif htype == "double":
                    data = t.ColumnStatisticsData(doubleStats=t.DoubleColumnStatsData(
                        -1.5, 2.5, 0, 10))
                elif htype == "boolean":
                    data = t.ColumnStatisticsData(booleanStats=t.BooleanColumnStatsData(3, 4, 1))
                elif htype.startswith(("string", "varchar")):
                    data = t.ColumnStatisticsData(stringStats=t.StringColumnStatsData(
                        40, 12.5, 1, 30))
                else:
                    continue
                objs.append(t.ColumnStatisticsObj(name, htype, data))
            desc = t.ColumnStatisticsDesc(True, DB, "flat", None, int(time.time()))
            client.update_table_column_statistics(t.ColumnStatistics(desc, objs))
            have = [o.colName for o in objs]
            wanted = [c for c in lookup if c in have] + [c for c in have if c not in lookup]
            wanted = wanted[:LOOKUP]
            req = t.TableStatsRequest(DB, "flat", wanted)
            assert len(client.get_table_statistics_req(req).tableStats) == len(wanted)
            samples = _timed(lambda: client.get_table_statistics_req(req), runs, warmup=50)
            client.drop_database(DB, True, True)
        return _row("stock_table", f"stock HMS 2.3.10: get_table_statistics_req, {len(wanted)} "
                    "columns (client-written statistics, Derby, warm)", samples, None)
    finally:
        hms.stop()


# --- 4. compute vs ANALYZE TABLE ----------------------------------------------------------------
COMPUTE_COLUMNS = [
    ("id", "bigint", "id"),
    ("k_int", "int", "CAST(id % 1000 AS INT)"),
    ("k_small", "int", "CAST(id % 7 AS INT)"),
    ("amount", "double", "CAST(id % 100003 AS DOUBLE) * 0.37"),
    ("ratio", "double", "rand(1)"),
    ("price", "decimal(12,2)", "CAST((id % 50021) * 1.25 AS DECIMAL(12,2))"),
    ("qty", "bigint", "id % 5003"),
    ("country", "string", "concat('c', CAST(id % 200 AS STRING))"),
    ("city", "string", "concat('city_', CAST(id % 5000 AS STRING))"),
    ("status", "string", "CASE WHEN id % 3 = 0 THEN 'open' WHEN id % 3 = 1 THEN 'done' "
                         "ELSE NULL END"),
    ("flag", "boolean", "id % 2 = 0"),
    ("day", "date", "date_add(DATE'2020-01-01', CAST(id % 1500 AS INT))"),
    ("ts", "timestamp", "CAST(1600000000 + id % 86400000 AS TIMESTAMP)"),
    ("score", "double", "CASE WHEN id % 10 = 0 THEN NULL ELSE sqrt(id % 9973) END"),
    ("bucket", "int", "CAST(hash(id) % 64 AS INT)"),
    ("user_id", "bigint", "hash(id * 31) % 1000000"),
    ("channel", "string", "concat('ch', CAST(id % 12 AS STRING))"),
    ("weight", "float", "CAST(id % 997 AS FLOAT) / 7"),
    ("tiny", "tinyint", "CAST(id % 100 AS TINYINT)"),
    ("note", "varchar(32)", "CAST(concat('n', CAST(id % 40000 AS STRING)) AS VARCHAR(32))"),
]


def compute_vs_analyze(args, work: Path) -> dict:

    log(f"4. compute job vs ANALYZE TABLE on {args.rows:,} rows x {len(COMPUTE_COLUMNS)} columns")
    store_path = work / "compute-store"
    server = start_proxy(work / "compute-server", store=store_path,
                         cwd=Path(__file__).resolve().parents[3])
    spark = None
    store = None
    try:
        spark = compute.build_session(server.uri, args.master, workdir=str(work / "spark"))
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
        cols = ", ".join(f"{n} {ht.upper()}" for n, ht, _ in COMPUTE_COLUMNS)
        spark.sql(f"CREATE TABLE {DB}.{FLAT} ({cols}) STORED AS PARQUET")
        select = ", ".join(f"{expr} AS {n}" for n, _, expr in COMPUTE_COLUMNS)
        t0 = time.perf_counter()
        spark.sql(f"INSERT INTO {DB}.{FLAT} SELECT {select} FROM range({args.rows})")
        load_s = time.perf_counter() - t0
        log(f"  data written in {load_s:.1f} s")
        store = open_catalog_store(str(store_path))
        store.commit("main", "bench stats table", author="bench")
        # the same data read once by each, so the file cache is warm for both
        spark.sql(f"SELECT count(*) FROM {DB}.{FLAT}").collect()
        load = os.getloadavg()
        t0 = time.perf_counter()
        spark.sql(f"ANALYZE TABLE {DB}.{FLAT} COMPUTE STATISTICS FOR ALL COLUMNS")
        analyze_s = time.perf_counter() - t0
        log(f"  ANALYZE TABLE: {analyze_s:.1f} s")
        t0 = time.perf_counter()
        res = compute.compute(spark, server.uri, store, DB, FLAT, store_path=str(store_path))
        compute_s = time.perf_counter() - t0
        log(f"  stats compute: {compute_s:.1f} s")
        ratio = compute_s / analyze_s if analyze_s else None
        return {"rows": args.rows, "columns": len(COMPUTE_COLUMNS), "master": args.master,
                "data_write_s": round(load_s, 2), "analyze_s": round(analyze_s, 2),
                "compute_s": round(compute_s, 2), "ratio": round(ratio, 2) if ratio else None,
                "target_ratio": COMPUTE_TARGET,
                "met": ratio is not None and ratio <= COMPUTE_TARGET,
                "rows_computed": sum(res.rows.values()),
                "load_at_start": [round(x, 2) for x in load]}
    finally:
        if store is not None:
            store.close()
        if spark is not None:
            spark.stop()
        server.stop()


# --- output ---------------------------------------------------------------------------------------
def _fmt(v, unit="") -> str:
    return "-" if v is None else f"{v:.2f}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _met(v) -> str:
    return "-" if v is None else "yes" if v else "NO"


def text_table(result: dict) -> str:
    lines = [f"{'Operation':<96} {'Median ms':>10} {'p95 ms':>9} {'Target':>7} Met"]
    for r in result["rows"]:
        lines.append(f"{r['label']:<96} {_fmt(r['median_ms']):>10} {_fmt(r['p95_ms']):>9} "
                     f"{_fmt(r['target_ms']):>7} {_met(r['met'])}")
    size = result.get("size")
    if size:
        lines.append(f"statistics.parquet of a {size['columns']}-column table: {size['bytes']:,} "
                     f"bytes (target < {size['target_bytes']:,}) {_met(size['met'])}")
        for label, b in size["variants"].items():
            lines.append(f"  {label}: {b:,} bytes")
        if "layout.write_statistics" in size:
            lines.append(f"  stats.layout.write_statistics: {size['layout.write_statistics']:,} bytes")
    comp = result.get("compute")
    if comp:
        lines.append(f"compute job {comp['compute_s']} s vs ANALYZE TABLE {comp['analyze_s']} s on "
                     f"{comp['rows']:,} rows x {comp['columns']} columns: {comp['ratio']}x "
                     f"(target <= {comp['target_ratio']}x) {_met(comp['met'])}")
    for note in result["notes"]:
        lines.append(f"note: {note}")
    m = result["machine"]
    lines.append(f"machine: {m['cpus']} CPUs, load average {m['load_before']} before, "
                 f"{m.get('load_after')} after")
    return "\n".join(lines)


def markdown(result: dict) -> str:
    out = [f"`{result['command']}`", "",
           "| Operation | Median (ms) | p95 (ms) | Target (ms) | Met |", "|---|---|---|---|---|"]
    for r in result["rows"]:
        out.append(f"| {r['label']} | {_fmt(r['median_ms'])} | {_fmt(r['p95_ms'])} | "
                   f"{_fmt(r['target_ms'])} | {_met(r['met'])} |")
    out.append("")
    out.append(text_table({"rows": [], "notes": result["notes"], "size": result.get("size"),
                           "compute": result.get("compute"), "machine": result["machine"]})
               .split("\n", 1)[1])
    return "\n".join(out) + "\n"
