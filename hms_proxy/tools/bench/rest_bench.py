"""``hms-proxy bench rest``: the Iceberg REST catalog of ``serve --rest-port`` beside Iceberg's
own reference server (``RESTCatalogServer`` of iceberg-open-api 1.10.0: a JDBC catalog on
in-memory SQLite with Hadoop's file IO, :mod:`hms_proxy.tools.iceberg_rest_local`), in one run.

Both start fresh; through each, pyiceberg's ``RestCatalog`` (default settings) makes a table with
``--snapshots`` appends (a table with a history, as users' tables have: its metadata file grows
with it). Then, in rounds that alternate the side going first:

- loadTable through pyiceberg's ``load_table`` (what users run: the client parses the metadata
  too) and as one raw ``GET`` on a kept-alive connection (the server's own latency);
- a commit setting one table property (the catalog's work of a commit, no data file) as one
  raw ``POST`` (the server's own latency) and through pyiceberg (a transaction), and an
  ``append`` of one row through pyiceberg (a data file, a manifest and a manifest list written
  by the client, then the commit: the client's work is most of it, the same on both sides);
- loadTable throughput: ``--clients`` processes each sending raw ``GET`` requests for
  ``--duration`` seconds, requests per second summed.

Reported: medians, and reference / ours (higher is better for us), against the goals of the
issue: loadTable 3x, commits 2x.
"""
from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from hms_proxy.tools import metastores
from hms_proxy.tools.bench.report import (
    figure,
    load_average,
    logger,
    machine_info,
    write_outputs,
)

GOALS = {"loadTable (pyiceberg)": 3.0, "loadTable (raw GET)": 3.0,
         "commit: set a property (raw POST)": 2.0, "commit: set a property (pyiceberg)": 2.0,
         "commit: append 1 row (pyiceberg)": 2.0,
         "loadTable throughput": 3.0}
log = logger("bench rest")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "rest", help="the Iceberg REST catalog, ours vs Iceberg's reference server",
        description="Start our server with --rest-port and Iceberg's reference REST server "
                    "(iceberg-open-api 1.10.0 from Maven Central, Java 17), make a table with "
                    "a history through pyiceberg's RestCatalog on each, and time loadTable, "
                    "commits and 8-client loadTable throughput on both in alternating rounds.")
    p.add_argument("--snapshots", type=int, default=50,
                   help="appends made to the bench table before timing (default 50)")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    p.add_argument("--loads", type=int, default=100,
                   help="loadTable calls per round and side (default 100)")
    p.add_argument("--commits", type=int, default=10,
                   help="commits of each kind per round and side (default 10)")
    p.add_argument("--clients", type=int, default=8,
                   help="processes of the throughput test (default 8)")
    p.add_argument("--duration", type=float, default=3.0,
                   help="seconds per throughput round (default 3)")
    p.add_argument("--json", metavar="FILE", help="write every sample and the medians as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results table as Markdown")
    p.set_defaults(func=cmd_rest)


def _catalog(uri: str, warehouse: str):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("bench", uri=uri, warehouse=warehouse)


def _row(i: int):
    import pyarrow as pa
    return pa.table({"id": pa.array([i], pa.int64()), "v": pa.array([f"v{i}"])})


class Side:
    def __init__(self, name: str, uri: str, warehouse: str, snapshots: int):
        self.name, self.uri = name, uri
        self.catalog = _catalog(uri, warehouse)
        self.catalog.create_namespace("bench")
        table = self.catalog.create_table("bench.t", schema=_row(0).schema)
        for i in range(snapshots):
            table.append(_row(i))
        prefix = self.catalog.properties.get("prefix")
        self.path = (f"/v1/{prefix}" if prefix else "/v1") + "/namespaces/bench/tables/t"
        parts = urlsplit(uri)
        self.host, self.port = parts.hostname, parts.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.table = self.catalog.load_table("bench.t")
        self.count = 0

    def get(self) -> int:
        self.conn.request("GET", self.path)
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"{self.name}: loadTable answered {response.status}: {body[:200]}")
        return len(body)

    def commit_raw(self) -> None:
        self.count += 1
        body = json.dumps({
            "requirements": [{"type": "assert-table-uuid",
                              "uuid": str(self.table.metadata.table_uuid)}],
            "updates": [{"action": "set-properties", "updates": {"raw": str(self.count)}}]})
        self.conn.request("POST", self.path, body=body,
                          headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        answer = response.read()
        if response.status != 200:
            raise RuntimeError(f"{self.name}: commit answered {response.status}: {answer[:200]}")

    def load_pyiceberg(self) -> None:
        self.catalog.load_table("bench.t")

    def commit_property(self) -> None:
        self.count += 1
        with self.table.transaction() as txn:
            txn.set_properties(bench=str(self.count))

    def commit_append(self) -> None:
        self.count += 1
        self.table.append(_row(self.count))


def _timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _hammer(host: str, port: int, path: str, duration: float, ready, go, queue) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("GET", path)  # connected and answered once before the clock starts
    conn.getresponse().read()
    ready.put(1)
    go.wait()
    done, until = 0, time.perf_counter() + duration
    while time.perf_counter() < until:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        done += 1
    queue.put(done)


def _throughput(side: Side, clients: int, duration: float) -> float:
    """Requests per second of ``clients`` processes, all started and connected before any
    is timed."""
    ctx = multiprocessing.get_context("spawn")
    ready, queue, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_hammer,
                         args=(side.host, side.port, side.path, duration, ready, go, queue))
             for _ in range(clients)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=120)
    go.set()
    total = sum(queue.get(timeout=duration + 120) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    return total / duration


def run(args) -> dict:
    from hms_proxy.tools import iceberg_rest_local

    load_start = load_average()
    work = Path(tempfile.mkdtemp(prefix="hms-proxy-bench-rest-"))
    started = time.monotonic()
    servers = []
    try:
        log("starting our server and Iceberg's reference REST server")
        ours_proc = metastores.start_proxy(work / "proxy", "--rest-port", "0",
                                           "--log-level", "WARNING")
        servers.append(ours_proc)
        ours_uri = f"http://127.0.0.1:{ours_proc.announced_port('rest')}"
        reference = iceberg_rest_local.start_reference_server(work / "reference")
        servers.append(reference)
        log(f"a table of {args.snapshots} snapshots on each")
        sides = [Side("hms-proxy", ours_uri, "main", args.snapshots),
                 Side("Iceberg reference", reference.uri, "bench", args.snapshots)]
        sizes = {s.name: s.get() for s in sides}
        ops = {"loadTable (pyiceberg)": ("load_pyiceberg", args.loads),
               "loadTable (raw GET)": ("get", args.loads),
               "commit: set a property (raw POST)": ("commit_raw", args.commits),
               "commit: set a property (pyiceberg)": ("commit_property", args.commits),
               "commit: append 1 row (pyiceberg)": ("commit_append", args.commits)}
        samples = {op: {s.name: [] for s in sides} for op in ops}
        for side in sides:  # warm-up: the JVM's JIT, our caches
            _timed(side.get, 300)
            _timed(side.load_pyiceberg, 20)
            _timed(side.commit_property, 5)
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else list(reversed(sides))
            log(f"round {r + 1} of {args.rounds}")
            for op, (method, n) in ops.items():
                for side in order:
                    samples[op][side.name] += _timed(getattr(side, method), n)
        rates = {s.name: [] for s in sides}
        for r in range(min(args.rounds, 3)):
            for side in (sides if r % 2 == 0 else list(reversed(sides))):
                rates[side.name].append(_throughput(side, args.clients, args.duration))
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    ours, ref = "hms-proxy", "Iceberg reference"
    rows = []
    for op, by_side in samples.items():
        o, f = statistics.median(by_side[ours]), statistics.median(by_side[ref])
        rows.append({"op": op, "calls": len(by_side[ours]), "ours": round(o, 3),
                     "reference": round(f, 3), "ratio": round(f / o, 2), "goal": GOALS[op],
                     "met": f / o >= GOALS[op], "unit": "ms"})
    o, f = statistics.median(rates[ours]), statistics.median(rates[ref])
    rows.append({"op": "loadTable throughput", "calls": f"{args.clients} clients",
                 "ours": round(o), "reference": round(f), "ratio": round(o / f, 2),
                 "goal": GOALS["loadTable throughput"],
                 "met": o / f >= GOALS["loadTable throughput"],
                 "unit": "calls/s"})
    return {"command": f"hms-proxy bench rest --snapshots {args.snapshots} --rounds "
                       f"{args.rounds} --loads {args.loads} --commits {args.commits} "
                       f"--clients {args.clients} --duration {args.duration:g}",
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "metadata_bytes": sizes, "seconds": round(time.monotonic() - started, 1),
            "rows": rows, "samples": samples, "rates": rates,
            "machine": {**machine_info(java=True), "load_average_start": load_start,
                        "load_average_end": load_average()}}


def table(result: dict) -> str:
    lines = ["| operation | calls a side | Iceberg reference | hms-proxy | reference / ours "
             "| goal |",
             "|---|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        unit = r["unit"]
        lines.append(f"| {r['op']} | {r['calls']} | {figure(r['reference'], unit)} | "
                     f"{figure(r['ours'], unit)} | {figure(r['ratio'], 'x')} | "
                     f"{r['goal']:g}x {'met' if r['met'] else 'NOT met'} |")
    return "\n".join(lines)


def cmd_rest(args: argparse.Namespace) -> int:
    if min(args.snapshots, args.rounds, args.loads, args.commits, args.clients) < 1:
        raise SystemExit("hms-proxy bench rest: every count must be at least 1")
    result = run(args)
    text = table(result)
    print(text)
    print(f"metadata file: {result['metadata_bytes']} bytes; machine: {result['machine']}")
    write_outputs(args, result, f"`{result['command']}`, {result['date']}\n\n{text}\n", log)
    return 0


__all__ = ["register", "run", "cmd_rest"]
