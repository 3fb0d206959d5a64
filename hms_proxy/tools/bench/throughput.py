"""``hms-proxy bench throughput``: get_table calls per second from many clients, for our server
run as 1, 2, ... processes (``serve --processes N``) and for the stock HMS 2.3.10, in one run.

Each server gets a fresh store holding the bench table (created through the server by the JVM
client, ``java/HmsBench.java``); ``--clients`` connections then call get_table in a loop for
``--duration`` seconds, and that is repeated ``--rounds`` times, the servers taking turns
(1 process, 2 processes, ..., the stock HMS, then again), so that a change of the machine's
load spreads over all of them. The table reports each one's median calls per second, its
ratio to one process and to the stock HMS. The client runs on the same machine and takes
its share of the CPUs (on 2 CPUs, a part of one).
"""
from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hms_proxy.tools import metastores
from hms_proxy.tools.bench.report import counts, load_average, machine_info, write_outputs
from hms_proxy.tools.bench.runner import JavaClient, compile_client, log

TABLE = "events"
PARTITIONS = 10


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "throughput", help="get_table throughput of 1..N server processes and the stock HMS",
        description="Time get_table calls per second from many concurrent clients for our "
                    "server run as each of --processes (serve --processes N, one fresh "
                    "embedded store each, locks in an embedded Redis) and for the stock HMS "
                    "2.3.10, taking turns, from the JVM client.")
    p.add_argument("--processes", default="1,2,3", metavar="N,M,...",
                   help="process counts to run our server with (default 1,2,3)")
    p.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    p.add_argument("--duration", type=float, default=5.0, help="seconds per round (default 5)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per server (default 3)")
    p.add_argument("--no-stock-hms", action="store_true", help="leave out the stock HMS")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    p.set_defaults(func=cmd_throughput)


def run(args) -> dict:
    sizes = counts(args.processes, "--processes", "1,2,3")
    work = Path(tempfile.mkdtemp(prefix="hms-proxy-throughput-"))
    servers = {}
    client = None
    load_start = load_average()
    try:
        classes = compile_client()
        for n in sizes:
            name = f"proxy x{n}"
            extra = ["--log-level", "WARNING"] + (["--processes", str(n)] if n > 1 else [])
            log(f"starting our server with {n} process{'es' if n > 1 else ''}")
            servers[name] = metastores.start_proxy(work / f"p{n}", *extra)
        if not args.no_stock_hms:
            log("starting the stock HMS 2.3.10")
            servers["stock HMS"] = metastores.start_stock_hms(work / "oracle", heap="2g",
                                                              timeout=180.0)
        client = JavaClient(classes, work / "bench-client.log")
        run_id = secrets.token_hex(3)
        for i, (name, server) in enumerate(servers.items()):
            client.must("connect", f"s{i}", server.host, server.port, f"tp_{run_id}_{i}", TABLE,
                        PARTITIONS)
            client.must("create", f"s{i}", 0)
        samples: dict[str, list[float]] = {name: [] for name in servers}
        for r in range(args.rounds):
            for i, name in enumerate(servers):
                reply = client.must("throughput", args.duration, args.clients, f"s{i}")
                samples[name].append(round(reply["per_second"], 1))
                log(f"round {r + 1}: {name}: {reply['per_second']:,.0f} calls/s")
        medians = {name: statistics.median(v) for name, v in samples.items()}
        one = medians.get("proxy x1")
        stock = medians.get("stock HMS")
        rows = [{"server": name, "samples": samples[name], "median": medians[name],
                 "vs_one_process": round(medians[name] / one, 2) if one else None,
                 "vs_stock_hms": round(medians[name] / stock, 2) if stock else None}
                for name in servers]
        return {"command": "hms-proxy bench throughput " + _argv(args),
                "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "clients": args.clients,
                "duration": args.duration, "rounds": args.rounds, "rows": rows,
                "machine": {**machine_info(java=True), "load_average_start": load_start,
                            "load_average_end": load_average()}}
    finally:
        if client is not None:
            client.close()
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def _argv(args) -> str:
    parts = ["--processes", args.processes, "--clients", str(args.clients), "--duration",
             f"{args.duration:g}", "--rounds", str(args.rounds)]
    if args.no_stock_hms:
        parts.append("--no-stock-hms")
    return " ".join(parts)


def table(result: dict) -> str:
    lines = [f"| server | get_table calls/s, {result['clients']} clients (median) | rounds | "
             "vs 1 process | vs stock HMS |", "|---|---:|---|---:|---:|"]
    for row in result["rows"]:
        lines.append(f"| {row['server']} | {row['median']:,.0f} | "
                     f"{', '.join(f'{s:,.0f}' for s in row['samples'])} | "
                     f"{row['vs_one_process'] or '-'} | {row['vs_stock_hms'] or '-'} |")
    return "\n".join(lines)


def cmd_throughput(args: argparse.Namespace) -> int:
    result = run(args)
    text = table(result)
    print(text)
    print(f"machine: {result['machine']}")
    write_outputs(args, result, f"`{result['command']}`, {result['date']}\n\n{text}\n")
    return 0


__all__ = ["register", "run", "cmd_throughput"]
