"""``hms-proxy bench hive4``: the bench's operations through Hive 4's own client library, on our
server and on the stock HMS 4.0.1, in one run.

The client is ``java/Hive4Bench.java`` on ``HiveMetaStoreClient`` of hive-standalone-metastore
4.0.1 with its default settings (what Hive 4, Impala, Flink and Kyuubi embed): it calls the HMS 4
request forms (``get_table_req``, ``get_database_req``, ``get_partitions_by_names_req``,
``fetch_partition_names_req``...), where ``hms-proxy bench`` times the raw 2.3 Thrift calls. Both
servers are started here on fresh stores (ours on the embedded store, the stock 4.0.1 on Derby,
:mod:`hms_proxy.tools.hive4_local`); the table is filled through each with ``add_partitions`` of
500 partitions (each call timed; the stock 4.0.1 on Derby fails on 1,000 in one call), then every operation runs in rounds that alternate the side
going first. Reported: medians, and stock / ours (higher is better for us), against the same
goals as the 2.3 bench (3x, add_partitions 10x).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from hms_proxy.tools import metastores
from hms_proxy.tools.bench.report import (
    figure,
    load_average,
    logger,
    machine_info,
    write_outputs,
)

SOURCE = Path(__file__).resolve().parent / "java" / "Hive4Bench.java"
GOALS = {"add_partitions": 10.0}  # every other operation: 3x
log = logger("bench hive4")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "hive4", help="the bench through Hive 4's HiveMetaStoreClient, ours vs the stock 4.0.1",
        description="Start our server and the stock HMS 4.0.1 (Maven Central's jars, Derby), "
                    "fill a partitioned table through Hive 4's own metastore client "
                    "(HiveMetaStoreClient 4.0.1, default settings) on each, and time its "
                    "operations on both in alternating rounds. Needs java, javac (JDK 17) and "
                    "mvn (the 4.0.1 jars are resolved once into ~/.cache/hms-proxy).")
    p.add_argument("--partitions", type=int, default=10_000,
                   help="partitions of the bench table (default 10000)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiplies the calls per operation (1: 100 single-object calls, 20 "
                        "listings, 5 full listings a side)")
    p.add_argument("--chunk", type=int, default=500,
                   help="partitions per add_partitions call (default 500: the stock 4.0.1 on "
                        "Derby fails on 1,000 in one call, in its direct-SQL insert)")
    p.add_argument("--json", metavar="FILE", help="write every sample and the medians as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results table as Markdown")
    p.set_defaults(func=cmd_hive4)


def run(args) -> dict:
    from hms_proxy.tools.hive4_local import ensure_hive4, start_stock_hms4

    if args.partitions < 1 or args.chunk < 1:
        raise SystemExit("--partitions and --chunk must be at least 1")
    load_start = load_average()
    lib = ensure_hive4() / "lib"
    try:
        classes = metastores.compile_java(SOURCE, "hms-proxy bench hive4's JVM client", lib)
    except RuntimeError as exc:
        raise SystemExit(f"hms-proxy bench hive4: {exc}") from None
    work = Path(tempfile.mkdtemp(prefix="hms-proxy-bench-hive4-"))
    servers = []
    started = time.monotonic()
    try:
        log("starting our server and the stock HMS 4.0.1")
        ours = metastores.start_proxy(work / "proxy", "--log-level", "WARNING")
        servers.append(ours)
        stock = start_stock_hms4(work / "stock")
        servers.append(stock)
        log(f"timing through HiveMetaStoreClient 4.0.1 ({args.partitions} partitions)")
        done = subprocess.run(
            ["java", "-Xmx2g", "-cp", f"{classes}{os.pathsep}{lib}/*", "Hive4Bench",
             f"hms-proxy={ours.uri}", f"stock HMS 4.0.1={stock.uri}", "--",
             str(args.partitions), f"{args.scale:g}", str(args.chunk)],
            capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"hms-proxy bench hive4: the client failed:\n{done.stderr[-3000:]}")
        data = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for op, sides in data["ops"].items():
        ours_ms = statistics.median(sides["hms-proxy"])
        stock_ms = statistics.median(sides["stock HMS 4.0.1"])
        goal = GOALS.get(op, 3.0)
        rows.append({"op": op, "calls": len(sides["hms-proxy"]), "ours_ms": round(ours_ms, 3),
                     "stock_ms": round(stock_ms, 3), "ratio": round(stock_ms / ours_ms, 2),
                     "goal": goal, "met": stock_ms / ours_ms >= goal, "samples": sides})
    return {"command": f"hms-proxy bench hive4 --partitions {args.partitions} "
                       f"--scale {args.scale:g} --chunk {args.chunk}",
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "partitions": args.partitions,
            "seconds": round(time.monotonic() - started, 1), "rows": rows,
            "errors": data.get("errors", {}),
            "machine": {**machine_info(java=True), "load_average_start": load_start,
                        "load_average_end": load_average()}}


def table(result: dict) -> str:
    lines = ["| operation (HiveMetaStoreClient 4.0.1) | calls a side | stock HMS 4.0.1 | "
             "hms-proxy | stock / ours | goal |", "|---|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['op']} | {r['calls']} | {figure(r['stock_ms'])} | "
                     f"{figure(r['ours_ms'])} | {figure(r['ratio'], 'x')} | "
                     f"{r['goal']:g}x {'met' if r['met'] else 'NOT met'} |")
    for op, error in result["errors"].items():
        lines.append(f"| {op} | failed: {error} | | | | |")
    return "\n".join(lines)


def cmd_hive4(args: argparse.Namespace) -> int:
    result = run(args)
    text = table(result)
    print(text)
    print(f"machine: {result['machine']}")
    write_outputs(args, {k: v for k, v in result.items()},
                  f"`{result['command']}`, {result['date']}\n\n{text}\n", log)
    return 1 if result["errors"] else 0


__all__ = ["register", "run", "cmd_hive4"]
