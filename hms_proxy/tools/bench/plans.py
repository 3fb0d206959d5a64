"""``hms-proxy bench plans``: a Spark join's plan and wall time before and after ``stats compute``.

Spark's optimizer plans with the statistics in table parameters (:mod:`stats.spark_props`),
which the server serves from computed sets. This bench shows what that changes for a user:

1. our server over a fresh store, and a Spark session (``local[2]``) that writes two Parquet
   tables: ``sales`` (``--rows`` rows, a customer id and an amount) and ``customers``
   (``--customers`` rows, a region out of 100, a segment and a long random name, so that the
   table is well above Spark's 10 MB broadcast threshold; 1,000,000 make 36 MB of Parquet);
2. a new Spark session (its own process, Spark's defaults plus ``spark.sql.cbo.enabled=true``)
   runs ``EXPLAIN COST`` and then, ``--runs`` times, a join of the two with a selective filter
   on ``customers`` (one region of 100): without statistics Spark cannot tell the filter keeps
   1% of the customers, and joins by sort-merge, shuffling ``sales``;
3. ``hms-proxy stats compute`` of both tables (no ``ANALYZE``);
4. the same new session again: with the row count and the distinct count of ``region`` Spark
   estimates the filtered customers at a few hundred KB and broadcasts them.

Prints the plans' join operators, their estimates and the wall times; ``--json`` and
``--markdown`` keep them. ``--no-cbo`` runs both sessions with Spark's defaults only (cost-based
optimisation off): statistics then give sizes, not selectivities.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hms_proxy.tools.bench.report import logger, machine_info, write_outputs

DB = "bench_plans"
QUERY = (f"SELECT c.segment, count(*) AS orders, round(sum(s.amount), 2) AS amount "
         f"FROM {DB}.sales s JOIN {DB}.customers c ON s.cust = c.id "
         f"WHERE c.region = 7 GROUP BY c.segment ORDER BY c.segment")
CBO = {"spark.sql.cbo.enabled": "true"}
JOINS = ("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin",
         "CartesianProduct")

log = logger("bench plans")


def register(modes) -> argparse.ArgumentParser:
    """Add ``plans`` to the sub-parsers of ``hms-proxy bench``."""
    p = modes.add_parser(
        "plans", help="a Spark join's plan and time before and after hms-proxy stats compute",
        description="Write two Parquet tables through our server with Spark, run a join with a "
                    "selective filter in a new Spark session (cost-based optimisation on), "
                    "compute statistics with hms-proxy stats compute (no ANALYZE), run it "
                    "again in a new session: the join operators, estimates and wall times. "
                    "Reproduce the published figures with: hms-proxy bench plans")
    p.add_argument("--rows", type=int, default=20_000_000,
                   help="rows of the sales table (default 20000000)")
    p.add_argument("--customers", type=int, default=1_000_000,
                   help="rows of the customers table (default 1000000)")
    p.add_argument("--runs", type=int, default=3,
                   help="timed runs of the query per session, after one untimed (default 3)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--no-cbo", dest="cbo", action="store_false",
                   help="both sessions with Spark's defaults only (spark.sql.cbo.enabled off)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting of both query sessions (repeatable), e.g. "
                        "spark.sql.autoBroadcastJoinThreshold=BYTES to see the plan change at "
                        "a small --customers")
    p.add_argument("--workdir", metavar="DIR",
                   help="work directory, kept (default: a temporary one, deleted afterwards)")
    p.add_argument("--json", metavar="FILE", help="write the plans and timings as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results as Markdown")
    p.set_defaults(func=cmd_plans)
    return p


# --- one new Spark session (a process of its own) -------------------------------------------
def session_main(argv=None) -> int:
    """``python -m hms_proxy.tools.bench.plans URI WAREHOUSE MASTER RUNS CONF_JSON``: EXPLAIN COST
    and timed runs of :data:`QUERY`, one JSON line on stdout."""
    uri, warehouse, master, runs, conf = argv if argv is not None else sys.argv[1:]
    from stats import compute

    started = time.perf_counter()
    spark = compute.build_session(uri, master, conf=json.loads(conf), workdir=warehouse)
    session_s = time.perf_counter() - started
    try:
        plan = spark.sql("EXPLAIN COST " + QUERY).collect()[0][0]
        physical = spark.sql("EXPLAIN " + QUERY).collect()[0][0]
        rows = spark.sql(QUERY).collect()  # untimed: reads the files into the page cache
        seconds = []
        for _ in range(int(runs)):
            t0 = time.perf_counter()
            again = spark.sql(QUERY).collect()
            seconds.append(time.perf_counter() - t0)
            if again != rows:
                raise SystemExit("the query's answer changed between runs")
    finally:
        spark.stop()
    print(json.dumps({"cost": plan, "physical": physical, "seconds": seconds,
                      "answer": [list(r) for r in rows], "session_s": session_s}))
    return 0


def run_session(uri: str, work: Path, name: str, master: str, runs: int, conf: dict) -> dict:
    warehouse = work / name
    warehouse.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "hms_proxy.tools.bench.plans", uri,
                           str(warehouse), master, str(runs), json.dumps(conf)],
                          capture_output=True, text=True, timeout=3600,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    if proc.returncode != 0:
        raise RuntimeError(f"the {name} session failed: {proc.stderr.strip()[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(describe(out["cost"], out["physical"]))
    return out


def describe(cost: str, physical: str) -> dict:
    """The join operators of the physical plan and the optimizer's estimate for ``customers``
    after its filter (from EXPLAIN COST's optimized plan)."""
    joins = [j for j in JOINS if j in physical]
    estimate = None
    optimized = cost.split("== Physical Plan ==")[0]
    lines = optimized.splitlines()
    for i, line in enumerate(lines):
        if line.strip().lstrip("+- :").startswith("Filter") and \
                any("customers" in later for later in lines[i + 1:i + 3]):
            found = re.search(r"Statistics\((.*)\)", line)
            estimate = found.group(1) if found else None
            break
    return {"joins": joins, "customers_estimate": estimate,
            "exchanges": physical.count("Exchange hashpartitioning")}


# --- the run ---------------------------------------------------------------------------------
def write_tables(spark, rows: int, customers: int) -> dict:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    t0 = time.perf_counter()
    (spark.range(rows).selectExpr(f"id * 7919 % {customers} AS cust",
                                  "round(rand(1) * 100, 2) AS amount")
     .write.format("parquet").saveAsTable(f"{DB}.sales"))
    (spark.range(customers).selectExpr("id", "CAST(id % 100 AS INT) AS region",
                                       "concat('segment-', id % 7) AS segment",
                                       "concat('customer ', md5(CAST(id AS STRING))) AS name")
     .write.format("parquet").saveAsTable(f"{DB}.customers"))
    return {"write_s": round(time.perf_counter() - t0, 1)}


def _size(spark, table: str) -> int:
    """Bytes of the table's data files (as HMS counts them: hidden files left out)."""
    from hms_proxy.hms.warehouse import quick_stats

    rows = spark.sql(f"DESCRIBE FORMATTED {DB}.{table}").collect()
    location = next(r[1] for r in rows if (r[0] or "").strip() == "Location")
    return quick_stats(location)[1]


def run(args, work: Path) -> dict:
    from hms_proxy.tools.metastores import start_proxy
    from kvmodel.locations import open_catalog_store
    from stats import compute

    started = time.time()
    load_start = machine_info().get("load_average")
    store_path = work / "store"
    server = start_proxy(work / "server", store=store_path,
                         cwd=Path(__file__).resolve().parents[3])
    spark = store = None
    conf = {**(dict(CBO) if args.cbo else {}), **settings(args.conf)}
    try:
        log(f"hms-proxy at {server.uri}; writing {args.rows:,} sales and {args.customers:,} "
            "customers")
        spark = compute.build_session(server.uri, args.master, workdir=str(work / "spark"))
        written = write_tables(spark, args.rows, args.customers)
        store = open_catalog_store(str(store_path))
        store.commit("main", "bench plans: tables and data", author="bench")
        sizes = {name: _size(spark, name) for name in ("sales", "customers")}
        log(f"  written in {written['write_s']} s; files: sales {sizes['sales'] / 2**20:.1f} MiB, "
            f"customers {sizes['customers'] / 2**20:.1f} MiB")
        spark.stop()
        spark = None
        log("a new session, no statistics")
        before = run_session(server.uri, work, "before", args.master, args.runs, conf)
        log(f"  {before['joins']}, median {statistics.median(before['seconds']):.1f} s")
        spark = compute.build_session(server.uri, args.master, workdir=str(work / "spark"))
        t0 = time.perf_counter()
        for table in ("sales", "customers"):
            compute.compute(spark, server.uri, store, DB, table, store_path=str(store_path))
        compute_s = time.perf_counter() - t0
        spark.stop()
        spark = None
        log(f"stats compute of both tables: {compute_s:.0f} s; a new session")
        after = run_session(server.uri, work, "after", args.master, args.runs, conf)
        log(f"  {after['joins']}, median {statistics.median(after['seconds']):.1f} s")
        if after["answer"] != before["answer"]:
            raise RuntimeError("the query's answer changed with statistics")
    finally:
        if store is not None:
            store.close()
        if spark is not None:
            spark.stop()
        server.stop()
    return {
        "command": command_line(args),
        "date": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "seconds": round(time.time() - started, 1),
        "machine": {**machine_info(), "load_average_start": load_start},
        "rows": args.rows, "customers": args.customers, "runs": args.runs,
        "master": args.master, "cbo": args.cbo, "conf": settings(args.conf), "query": QUERY,
        "sizes": sizes,
        "write_s": written["write_s"], "compute_s": round(compute_s, 1),
        "before": before, "after": after,
    }


def command_line(args) -> str:
    parts = ["hms-proxy", "bench", "plans"]
    for name, default in (("rows", 20_000_000), ("customers", 1_000_000), ("runs", 3),
                          ("master", "local[2]")):
        if getattr(args, name) != default:
            parts += [f"--{name}", str(getattr(args, name))]
    if not args.cbo:
        parts.append("--no-cbo")
    for item in args.conf:
        parts += ["--conf", item]
    return " ".join(parts)


def settings(items: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` items as a dict; SystemExit on one without ``=``."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"hms-proxy bench plans: --conf takes KEY=VALUE, not {item!r}")
        out[key.strip()] = value
    return out


def render_table(result: dict) -> str:
    lines = ["| | before `stats compute` | after |", "|---|---|---|"]
    b, a = result["before"], result["after"]
    lines.append(f"| join | {', '.join(b['joins']) or '—'} | {', '.join(a['joins']) or '—'} |")
    lines.append(f"| shuffles (hash exchanges) | {b['exchanges']} | {a['exchanges']} |")
    lines.append(f"| estimate of the filtered customers | {b['customers_estimate'] or '—'} | "
                 f"{a['customers_estimate'] or '—'} |")
    lines.append(f"| wall time, median of {result['runs']} | "
                 f"{statistics.median(b['seconds']):.2f} s | "
                 f"{statistics.median(a['seconds']):.2f} s |")
    lines.append(f"| wall times | {', '.join(f'{s:.2f}' for s in b['seconds'])} s | "
                 f"{', '.join(f'{s:.2f}' for s in a['seconds'])} s |")
    return "\n".join(lines)


def render_markdown(result: dict) -> str:
    m = result["machine"]
    return "\n".join([
        f"Command: `{result['command']}`",
        "",
        f"- date (start): {result['date']}, wall time {result['seconds']} s",
        f"- machine: {m.get('nproc')} CPUs, {m.get('ram_gb', '?')} GB RAM, Python "
        f"{m.get('python')}; load average at start {m.get('load_average_start')}, at end "
        f"{m.get('load_average')}",
        f"- data: sales {result['rows']:,} rows ({result['sizes']['sales'] / 2**20:.1f} MiB of "
        f"Parquet), customers {result['customers']:,} rows "
        f"({result['sizes']['customers'] / 2**20:.1f} MiB), written in {result['write_s']} s; "
        f"`stats compute` of both in {result['compute_s']} s",
        f"- sessions: Spark {result['master']}, defaults"
        + (" plus `spark.sql.cbo.enabled=true`" if result["cbo"] else "")
        + "".join(f", `{k}={v}`" for k, v in (result.get("conf") or {}).items()),
        f"- query: `{result['query']}`",
        "",
        render_table(result),
        "",
    ])


def cmd_plans(args) -> int:
    for name in ("rows", "customers", "runs"):
        if getattr(args, name) < 1:
            raise SystemExit(f"hms-proxy bench plans: --{name} must be at least 1")
    settings(args.conf)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="hms-bench-plans-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args, work)
    except RuntimeError as exc:
        raise SystemExit(f"hms-proxy bench plans: {exc}") from None
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(render_table(result), flush=True)
    write_outputs(args, result, lambda: render_markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(session_main())
