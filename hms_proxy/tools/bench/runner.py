"""``hms-proxy bench``: our server side by side with another metastore, timed from a JVM client.

The timing client is ``java/HmsBench.java`` (compiled with ``javac`` on first use against
PySpark's jars): the generated ``ThriftHiveMetastore.Client`` of hive-metastore-2.3.10 over
libthrift's buffered ``TSocket`` and ``TBinaryProtocol``, the way Spark and Trino call. A Python
client would spend longer decoding large answers than a fast server spends producing them.

Every operation runs on a fresh database and table on each side, in interleaved rounds
(target, then against, then target...), after a warm-up; the table reports medians.
"""
from __future__ import annotations

import datetime
import json
import os
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hms_proxy.tools import lakefs_local, metastores
from hms_proxy.tools.bench.report import figure, load_average, logger, machine_info, write_outputs

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "HmsBench.java"
TABLE = "events"
EXTRA_TABLES = 20
CHUNK = 1000

# (key, label, tier, goal): tier picks the default iteration count; goal is the speed-up asked for.
OPERATIONS = [
    ("get_table", "get_table", "point", 10.0),
    ("get_database", "get_database", "point", 3.0),
    ("get_partition", "get_partition", "point", 3.0),
    ("get_partition_names", "get_partition_names (all {n})", "fast", 3.0),
    ("get_partitions", "get_partitions (all {n})", "heavy", 3.0),
    ("get_partitions_after_write", "get_partitions (all {n}), right after a write", "heavy", 3.0),
    ("get_partitions_by_filter_1pct", "get_partitions_by_filter (1%: ds = ...)", "fast", 3.0),
    ("get_partitions_by_filter_range", "get_partitions_by_filter (range: 10 of 100 ds)", "heavy", 3.0),
    ("get_partitions_by_names", "get_partitions_by_names ({m})", "fast", 3.0),
    ("alter_partition", "alter_partition", "point", 3.0),
    ("get_all_tables", "get_all_tables ({t} tables)", "point", 3.0),
]
ADD_GOAL = 50.0
THROUGHPUT_GOAL = 3.0
# Single-object calls take well under a millisecond on a fast server, where a JVM client that
# has not warmed up (JIT) would time itself: they get hundreds of warm-up calls, on both sides.
DEFAULT_ITERATIONS = {"point": 200, "fast": 30, "heavy": 5}
DEFAULT_WARMUP = {"point": 300, "fast": 10, "heavy": 1}


log = logger("bench")


# --- servers --------------------------------------------------------------------------


def parse_uri(uri: str) -> tuple[str, int]:
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    rest = rest.split(",")[0].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"expected thrift://HOST:PORT, got {uri!r}")
    return host, int(port)


# --- the JVM client -------------------------------------------------------------------


def compile_client() -> Path:
    """Compile HmsBench.java once per source and jar set; returns the classes directory."""
    try:
        return metastores.compile_java(JAVA_SOURCE, "hms-proxy bench's JVM client")
    except RuntimeError as exc:
        raise SystemExit(f"hms-proxy bench: {exc}") from None


class JavaClient:
    """The HmsBench process: one command per line in, one JSON object per line out."""

    def __init__(self, classes: Path, log_path: Path, jvm_options: list[str] = (),
                 env: dict | None = None):
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            ["java", "-Xmx2g", *jvm_options, "-cp",
             f"{classes}{os.pathsep}{metastores.classpath()}", "HmsBench"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
            text=True, encoding="utf-8", bufsize=1, start_new_session=True)

    def call(self, *args) -> dict:
        line = "\t".join(str(a) for a in args)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the bench JVM exited ({self.proc.poll()}) during: {args[0]}")
        return json.loads(reply)

    def must(self, *args) -> dict:
        reply = self.call(*args)
        if not reply.get("ok"):
            raise BenchError(f"{args[0]} {' '.join(map(str, args[1:2]))}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


class BenchError(RuntimeError):
    pass


# --- the run --------------------------------------------------------------------------


@dataclass
class Row:
    key: str
    label: str
    unit: str  # "ms" (lower is better) or "calls/s" (higher is better)
    goal: float
    target: list[float] = field(default_factory=list)
    against: list[float] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def median(self, side: str) -> float | None:
        values = getattr(self, side)
        return statistics.median(values) if values and side not in self.errors else None

    @property
    def ratio(self) -> float | None:
        t, a = self.median("target"), self.median("against")
        if t is None or a is None or t <= 0 or a <= 0:
            return None
        return a / t if self.unit == "ms" else t / a

    @property
    def met(self) -> bool | None:
        r = self.ratio
        return None if r is None else r >= self.goal

    def as_dict(self) -> dict:
        return {"operation": self.key, "label": self.label, "unit": self.unit, "goal": self.goal,
                "target_median": self.median("target"), "against_median": self.median("against"),
                "ratio": self.ratio, "met": self.met, "target_samples": self.target,
                "against_samples": self.against, "errors": self.errors}


def command_line(args) -> str:
    """The ``hms-proxy bench`` invocation that reproduces this run."""
    parts = ["hms-proxy", "bench"]
    if args.start_proxy:
        parts.append("--start-proxy")
        if getattr(args, "start_lakefs", False):
            parts.append("--start-lakefs")
            if getattr(args, "lakefs_batch_delay", None) is not None:
                parts += ["--lakefs-batch-delay", args.lakefs_batch_delay]
        elif getattr(args, "proxy_store", None):
            parts += ["--proxy-store", args.proxy_store]
    elif args.target:
        parts += ["--target", args.target]
    if args.start_oracle:
        parts.append("--start-oracle")
    elif args.against:
        parts += ["--against", args.against]
    if getattr(args, "kerberos", None):
        parts += ["--kerberos", args.kerberos]
    parts += ["--partitions", str(args.partitions)]
    defaults = {"iterations": None, "warmup": None, "clients": 8, "duration": 3.0,
                "throughput_rounds": 3}
    for name, default in defaults.items():
        value = getattr(args, name)
        if value != default:
            parts += ["--" + name.replace("_", "-"), f"{value:g}" if isinstance(value, float) else str(value)]
    return " ".join(parts)


def _sides(has_against: bool) -> list[str]:
    return ["target", "against"] if has_against else ["target"]


def run_bench(args) -> dict:
    started = time.monotonic()
    load_start = load_average()
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    n = args.partitions
    if n < 1:
        raise SystemExit("--partitions must be at least 1")
    workroot = Path(tempfile.mkdtemp(prefix="hms-proxy-bench-"))
    servers: list[metastores.MetastoreProcess] = []
    cleanup: list = []
    client: JavaClient | None = None
    uris: dict[str, str] = {}
    started_by_us: set[str] = set()
    realm = None
    try:
        log("compiling the JVM client (cached after the first run)")
        classes = compile_client()
        if getattr(args, "kerberos", None):
            if not (args.start_proxy and (args.start_oracle or not args.against)):
                raise SystemExit("hms-proxy bench --kerberos makes a realm of its own: give "
                                 "--start-proxy (and --start-oracle), not --target/--against")
            from hms_proxy.tools.bench import kerberized
            realm = kerberized.start(workroot, args.kerberos)
            cleanup.append(realm.kdc.stop)
            log(f"KDC of realm {realm.kdc.realm} on 127.0.0.1:{realm.kdc.port}; "
                f"hadoop.rpc.protection={args.kerberos} ({kerberized.QOP[args.kerberos]})")
        if args.start_proxy:
            log("starting our server")
            options = _proxy_store(args, cleanup)
            extra: list[str] = []
            if realm is not None:
                extra = realm.proxy_args()
                options["env"] = realm.server_env(options.get("env"))
                options["ask"] = realm.ask
            servers.append(metastores.start_proxy(workroot / "proxy", "--log-level", "WARNING",
                                                  *extra, **options))
            uris["target"] = servers[-1].uri
            started_by_us.add("target")
        elif args.target:
            uris["target"] = args.target
        else:
            raise SystemExit("give --target thrift://HOST:PORT or --start-proxy")
        if args.start_oracle:
            log("starting the stock HMS 2.3.10")
            stock = {} if realm is None else realm.stock_options(workroot / "oracle")
            servers.append(metastores.start_stock_hms(workroot / "oracle", heap="2g",
                                                      timeout=180.0, **stock))
            uris["against"] = servers[-1].uri
            started_by_us.add("against")
        elif args.against:
            uris["against"] = args.against
        for server in servers:
            log(f"{server.name} ready after {server.startup_seconds:.1f}s (log: {server.log_path})")
        sides = _sides("against" in uris)
        run_id = datetime.datetime.now().strftime("%Y%m%d_%H%M%S") + "_" + secrets.token_hex(3)
        client = JavaClient(classes, workroot / "bench-client.log",
                            *(() if realm is None else
                              (realm.client_jvm_options(), realm.client_env())))
        for side in sides:
            host, port = parse_uri(uris[side])
            client.must("connect", side, host, port, f"hms_bench_{run_id}_{side}", TABLE, n)
        rows = _measure(client, sides, args)
        if not args.keep:
            for side in sides:
                if side not in started_by_us:
                    log(f"dropping the bench database on {side}")
                    reply = client.call("cleanup", side)
                    if not reply.get("ok"):
                        log(f"cleanup on {side} failed: {reply.get('error')}")
        return {
            "command": command_line(args),
            "date": date,
            "target": uris.get("target"), "against": uris.get("against"),
            "started": sorted(started_by_us),
            "partitions": n, "clients": args.clients,
            "kerberos": getattr(args, "kerberos", None),
            "machine": {**machine_info(java=True), "load_average_start": load_start,
                        "load_average_end": load_average()},
            "seconds": round(time.monotonic() - started, 1),
            "rows": [r.as_dict() for r in rows],
            "_rows": rows,
        }
    finally:
        if client is not None:
            client.close()
        for server in servers:
            server.stop()
        for stop in cleanup:
            stop()
        if args.keep:
            log(f"kept the work directory {workroot}")
        else:
            shutil.rmtree(workroot, ignore_errors=True)


def _proxy_store(args, cleanup: list) -> dict:
    """start_proxy's options for --proxy-store / --start-lakefs."""
    if getattr(args, "start_lakefs", False):
        try:
            lakefs = lakefs_local.start_lakefs(
                batch_delay=getattr(args, "lakefs_batch_delay", None))
        except RuntimeError as exc:
            raise SystemExit(f"hms-proxy bench: --start-lakefs: {str(exc).splitlines()[0]}")
        cleanup.append(lakefs.stop)
        lakefs.create_repository("bench")
        log(f"lakeFS {lakefs_local.DEFAULT_VERSION} at {lakefs.endpoint}, repository bench")
        return {"store": "lakefs://bench", "warehouse": False,
                "env": dict(os.environ, **lakefs.env())}
    if getattr(args, "proxy_store", None):
        url = args.proxy_store
        return {"store": url, "warehouse": False} if "://" in url else {"store": url}
    return {}


def _measure(client: JavaClient, sides: list[str], args) -> list[Row]:
    n = args.partitions
    rows: list[Row] = []
    t0 = time.monotonic()

    # Setup: database, table, extra tables; then the partitions in add_partitions calls of up
    # to 1,000, alternating sides, each call timed: that is the add_partitions row.
    for side in sides:
        reply = client.must("create", side, EXTRA_TABLES)
        log(f"{side}: created database, table and {EXTRA_TABLES} other tables in {reply['ms']:.0f} ms")
    chunk = min(CHUNK, n)
    add = Row("add_partitions", f"add_partitions ({chunk} per call)", "ms", ADD_GOAL)
    chunks = [(start, min(chunk, n - start)) for start in range(0, n, chunk)]
    for i, (start, count) in enumerate(chunks):
        parts = []
        for side in sides:
            if side in add.errors:
                continue
            reply = client.call("addchunk", side, start, count)
            if not reply.get("ok"):
                add.errors[side] = reply.get("error", "?")
                log(f"{side}: add_partitions failed: {add.errors[side]}")
                continue
            if count == chunk:
                getattr(add, side).append(reply["ms"])
            parts.append(f"{side} {reply['ms'] / 1000:.2f}s")
        log(f"setup: add_partitions {i + 1}/{len(chunks)} ({count} partitions): {', '.join(parts)}")
    rows.append(add)
    if len(add.errors) == len(sides):
        raise BenchError(f"add_partitions failed everywhere: {add.errors}")

    for key, label, tier, goal in OPERATIONS:
        iters = args.iterations or DEFAULT_ITERATIONS[tier]
        warmup = args.warmup if args.warmup is not None else DEFAULT_WARMUP[tier]
        row = Row(key, label.format(n=n, m=min(100, n), t=EXTRA_TABLES + 1), "ms", goal)
        reply = client.must("bench", key, warmup, iters, *sides)
        for side in sides:
            getattr(row, side).extend(reply["samples"].get(side, []))
        row.errors.update(reply.get("errors", {}))
        rows.append(row)
        log(_progress(row, sides))

    row = Row("get_table_throughput", f"get_table throughput, {args.clients} clients", "calls/s",
              THROUGHPUT_GOAL)
    for r in range(args.throughput_rounds):
        for side in sides:
            if side in row.errors:
                continue
            reply = client.call("throughput", args.duration, args.clients, side)
            if reply.get("ok"):
                getattr(row, side).append(round(reply["per_second"], 1))
            else:
                row.errors[side] = reply.get("error", "?")
    rows.append(row)
    log(_progress(row, sides))
    log(f"measured in {time.monotonic() - t0:.0f}s")
    return rows


def _progress(row: Row, sides: list[str]) -> str:
    parts = []
    for side in sides:
        if side in row.errors:
            parts.append(f"{side} ERROR {row.errors[side]}")
        else:
            parts.append(f"{side} {figure(row.median(side), row.unit)}")
    return f"{row.label}: " + ", ".join(parts)


# --- reporting ------------------------------------------------------------------------






def render_table(result: dict) -> str:
    rows: list[Row] = result["_rows"]
    has_against = result.get("against") is not None
    head = ["Operation", "Target (median)"]
    if has_against:
        head += ["Against (median)", "Ratio", "Goal", "Met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for row in rows:
        cells = [row.label, _cell(row, "target")]
        if has_against:
            r = row.ratio
            met = row.met
            cells += [_cell(row, "against"), "—" if r is None else f"{r:.1f}x", f"≥{row.goal:g}x",
                      "—" if met is None else ("pass" if met else "MISS")]
        lines.append("| " + " | ".join(cells) + " |")
    notes = []
    for row in rows:
        for side, err in row.errors.items():
            notes.append(f"- {row.label} on {side}: {err}")
    if notes:
        lines += ["", "Errors:", *notes]
    return "\n".join(lines)


def _cell(row: Row, side: str) -> str:
    if side in row.errors:
        return "ERROR"
    return figure(row.median(side), row.unit)


def render_markdown(result: dict) -> str:
    m = result["machine"]
    out = [
        f"Command: `{result['command']}`",
        "",
        f"- date (start): {result['date']}",
        f"- target: {result['target']}" + (" (started by the bench)" if "target" in result["started"] else ""),
        f"- against: {result['against']}" + (" (started by the bench)" if "against" in result["started"] else ""),
        f"- partitions: {result['partitions']}, throughput clients: {result['clients']}",
        *([f"- Kerberos: both sides Kerberized, hadoop.rpc.protection={result['kerberos']}"]
          if result.get("kerberos") else []),
        f"- machine: {m.get('nproc')} CPUs ({m.get('cpu', '?')}), {m.get('ram_gb', '?')} GB RAM, "
        f"{m.get('java')}, Python {m.get('python')}, {m.get('platform')}",
        f"- load average (1, 5, 15 min) at start {m.get('load_average_start')}, "
        f"at end {m.get('load_average_end')}",
        f"- wall time: {result['seconds']} s",
        "",
        render_table(result),
        "",
        "Ratio = how many times faster the target is (against/target for latencies, "
        "target/against for throughput).",
    ]
    return "\n".join(out) + "\n"


def cmd_bench(args) -> int:
    try:
        result = run_bench(args)
    except RuntimeError as exc:  # a missing JDK or PySpark, a server that did not start
        raise SystemExit(f"hms-proxy bench: {exc}") from None
    table = render_table(result)
    print(table, flush=True)
    write_outputs(args, {k: v for k, v in result.items() if not k.startswith("_")},
                  lambda: render_markdown(result), log)
    errors = any(row.errors for row in result["_rows"])
    return 1 if errors and args.strict else 0
