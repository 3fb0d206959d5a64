"""``hms-proxy bench writes``: write throughput from many client processes at once, for the
stock HMS 2.3.10 and our server on the embedded store and on a real lakeFS, in one run.

Each writer is a process of its own with hmsclient's Thrift client (as Python jobs connect),
and calls one write at a time for ``--duration`` seconds, all writers starting together:

* ``add``: ``add_partition`` of one new partition a call, each writer to a table of its own
  (Spark jobs adding their partitions);
* ``alter``: ``alter_partition`` of a partition of one shared table of 100 (streaming jobs
  committing into one table).

For each server and each count of ``--writers`` the figure is the writes acknowledged per
second by all writers together. lakeFS runs with its defaults, and with the settings
docs/lakefs.md recommends (``--lakefs-batch-delay 0``) when ``--tuned`` is given. Two of our
servers over one repository are measured two ways: ``lakefs-2`` splits the N writers between
them (the same clients, spread), ``lakefs-2x`` gives each server N writers of its own (2N in
all, as two jobs' worth of clients each pointed at its own server). The writers run on the
same machine as the servers and take their share of its CPUs.

``--uncommitted N`` first gives each lakeFS-backed server's branch N partitions that no commit
has taken yet (``add_partitions`` of ``--per-call`` at a time, from 8 clients): a busy branch
between two commits, whose staged changes and write log every write is made over. The stock
HMS and the embedded store have no such state and are measured as they are.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from hms_proxy.tools import lakefs_local, metastores
from hms_proxy.tools.bench.report import counts, load_average, logger, machine_info, write_outputs

log = logger("writes")
SHARED_PARTITIONS = 100


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "writes", help="writes per second from 1..N client processes: stock HMS, embedded, "
                       "lakeFS",
        description="Time add_partition (a table per writer) and alter_partition (one shared "
                    "table) calls per second from N client processes at once, against the "
                    "stock HMS 2.3.10 and our server on the embedded store and on a real "
                    "lakeFS (its defaults; with --tuned also its recommended settings).")
    p.add_argument("--writers", default="1,8,32", metavar="N,M,...",
                   help="client process counts (default 1,8,32)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="seconds each count of writers writes (default 10)")
    p.add_argument("--modes", default="add,alter", metavar="add,alter",
                   help="add: add_partition to a table per writer; alter: alter_partition of "
                        "one shared table (default both)")
    p.add_argument("--servers", default="stock,embedded,lakefs", metavar="NAME,...",
                   help="stock, embedded, lakefs, lakefs-2 (two of our servers over one "
                        "repository, the N writers split between them), lakefs-2x (the same "
                        "two servers, N writers each); default stock, embedded, lakefs")
    p.add_argument("--tuned", action="store_true",
                   help="also lakeFS with the recommended settings (batch delay 0)")
    p.add_argument("--uncommitted", type=int, default=0, metavar="N",
                   help="first add N partitions to a table of their own on each lakeFS-backed "
                        "server, not committed: every timed write is made over them "
                        "(default 0)")
    p.add_argument("--per-call", type=int, default=1000, metavar="B",
                   help="partitions per add_partitions call of --uncommitted (default 1000; "
                        "1 makes a write log of N entries)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    p.set_defaults(func=cmd_writes)


def _names(text: str, allowed: tuple[str, ...], option: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise SystemExit(f"{option} takes some of {', '.join(allowed)}, not {text!r}")
    return names


def _client(host: str, port: int):
    from hmsclient import hmsclient

    client = hmsclient.HMSClient(host=host, port=port)
    client.open()
    return client


def _table(T, db: str, name: str):
    sd = T.StorageDescriptor(
        [T.FieldSchema("x", "int", None)], None, "org.apache.hadoop.mapred.TextInputFormat",
        "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat", False, -1,
        T.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", {}), [], [], {})
    return T.Table(name, db, "bench", 0, 0, 0, sd, [T.FieldSchema("p", "string", None)], {},
                   None, None, "MANAGED_TABLE")


def _partition(T, table, value: str):
    sd = table.sd.__class__(**table.sd.__dict__)
    sd.location = None
    return T.Partition([value], table.dbName, table.tableName, 0, 0, sd, {})


def _writer(host: str, port: int, mode: str, db: str, w: int, ready, start, duration: float,
            out) -> None:
    """One writer process: connects, says it is ``ready``, waits for ``start``, then writes for
    ``duration`` seconds; puts (acknowledged writes, errors, first error) on ``out``."""
    from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore
    from hmsclient.genthrift.hive_metastore import ttypes as T

    done = errors = 0
    first = None
    try:
        client = _client(host, port)
        table = client.get_table(db, f"w{w}" if mode == "add" else "shared")
        parts = [] if mode == "add" else client.get_partitions(db, "shared", -1)
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        ready.put(w)
        out.put((0, 1, f"{type(exc).__name__}: {exc}"))
        return
    ready.put(w)
    start.wait()
    end = time.monotonic() + duration
    i = 0
    while time.monotonic() < end and errors < 100:
        try:
            if mode == "add":  # the Thrift call itself (hmsclient's helper takes values)
                ThriftHiveMetastore.Client.add_partition(client, _partition(T, table,
                                                                            f"{i:07d}"))
            else:
                part = parts[(w * 7 + i) % len(parts)]
                part.parameters = {"writer": str(w), "n": str(i)}
                client.alter_partition(db, "shared", part)
            done += 1
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors += 1
            first = first or f"{type(exc).__name__}: {exc}"
        i += 1
    try:
        client.close()
    except Exception:  # noqa: BLE001 - the figures are taken
        pass
    out.put((done, errors, first))


def _prepare(server, mode: str, db: str, writers: int) -> None:
    from hmsclient.genthrift.hive_metastore import ttypes as T

    client = _client(server.host, server.port)
    try:
        client.create_database(T.Database(db, "", None, {}))
        if mode == "add":
            for w in range(writers):
                client.create_table(_table(T, db, f"w{w}"))
        else:
            table = _table(T, db, "shared")
            client.create_table(table)
            table = client.get_table(db, "shared")
            client.add_partitions([_partition(T, table, f"{i:03d}")
                                   for i in range(SHARED_PARTITIONS)])
    finally:
        client.close()


BACKLOG_CLIENTS = 8


def _backlog(server, n: int, per_call: int) -> float:
    """``n`` partitions added to ``backlog.t`` through ``server``, ``per_call`` a call, from
    :data:`BACKLOG_CLIENTS` clients at once; the seconds it took."""
    from hmsclient.genthrift.hive_metastore import ttypes as T

    target = getattr(server, "servers", [server])[0]
    began = time.monotonic()
    client = _client(target.host, target.port)
    try:
        client.create_database(T.Database("backlog", "", None, {}))
        client.create_table(_table(T, "backlog", "t"))
        table = client.get_table("backlog", "t")
    finally:
        client.close()
    calls = [range(i, min(n, i + per_call)) for i in range(0, n, per_call)]
    failed: list = []

    def add(k: int) -> None:
        try:
            c = _client(target.host, target.port)
            try:
                for values in calls[k::BACKLOG_CLIENTS]:
                    c.add_partitions([_partition(T, table, f"{i:07d}") for i in values])
            finally:
                c.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            failed.append(exc)

    threads = [threading.Thread(target=add, args=(k,)) for k in range(BACKLOG_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise SystemExit(f"--uncommitted: adding the partitions failed: {failed[0]}")
    return time.monotonic() - began


class _Servers:
    """Several servers over one store, each writer connected to one of them in turn; with
    ``per_server`` each server gets the count of writers asked for (so many times it in all)."""

    def __init__(self, servers: list, per_server: bool = False):
        self.servers = servers
        self.per_server = per_server
        self.host, self.port = servers[0].host, servers[0].port

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def _seen_everywhere(targets: list, mode: str, db: str, writers: int) -> None:
    """Wait until every server reads what the first one made (another server's writes are
    seen within its staleness bound, 1 s)."""
    names = [f"w{w}" for w in range(writers)] if mode == "add" else ["shared"]
    deadline = time.monotonic() + 30
    for target in targets[1:]:
        client = _client(target.host, target.port)
        try:
            while set(names) - set(client.get_all_tables(db) if db in
                                   client.get_all_databases() else []):
                if time.monotonic() > deadline:
                    raise SystemExit(f"server {target.port} did not see {db} within 30 s")
                time.sleep(0.1)
        finally:
            client.close()


def _measure(server, mode: str, writers: int, duration: float, tag: str) -> dict:
    db = f"w_{mode}_{writers}_{tag}"
    targets = getattr(server, "servers", [server])
    if getattr(server, "per_server", False):
        writers *= len(targets)
    _prepare(server, mode, db, writers)
    _seen_everywhere(targets, mode, db, writers)
    ctx = multiprocessing.get_context("spawn")
    out, ready, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_writer, args=(targets[w % len(targets)].host,
                                               targets[w % len(targets)].port, mode, db, w,
                                               ready, start, duration, out))
             for w in range(writers)]
    for p in procs:
        p.start()
    for _ in procs:  # every writer connected before any writes
        ready.get(timeout=300)
    start.set()
    results = [out.get(timeout=duration + 300) for _ in procs]
    for p in procs:
        p.join(30)
    done = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    first = next((r[2] for r in results if r[2]), None)
    return {"writes": done, "errors": errors, "first_error": first, "clients": writers,
            "per_second": round(done / duration, 1)}


def run(args) -> dict:
    sizes = counts(args.writers, "--writers", "1,8,32")
    modes = _names(args.modes, ("add", "alter"), "--modes")
    kinds = _names(args.servers, ("stock", "embedded", "lakefs", "lakefs-2", "lakefs-2x"),
                   "--servers")
    if args.uncommitted < 0 or args.per_call < 1:
        raise SystemExit("--uncommitted takes 0 or more partitions, --per-call 1 or more")
    work = Path(tempfile.mkdtemp(prefix="hms-proxy-writes-"))
    started, lakes = {}, []
    load_start = load_average()
    try:
        quiet = ["--log-level", "WARNING"]
        if "stock" in kinds:
            log("starting the stock HMS 2.3.10")
            started["stock HMS 2.3.10 (Derby)"] = metastores.start_stock_hms(
                work / "stock", heap="2g", timeout=180.0)
        if "embedded" in kinds:
            started["ours, embedded"] = metastores.start_proxy(work / "embedded", *quiet)
        if "lakefs" in kinds:
            settings = [("lakeFS defaults", None)] + (
                [("lakeFS batch delay 0", "0")] if args.tuned else [])
            for label, delay in settings:
                log(f"starting lakeFS ({label})")
                lake = lakefs_local.start_lakefs(work / f"lakefs-{len(lakes)}",
                                                 batch_delay=delay)
                lakes.append(lake)
                lake.create_repository("bench")
                started[f"ours, {label}"] = metastores.start_proxy(
                    work / f"on-lakefs-{len(lakes)}", *quiet, store="lakefs://bench",
                    warehouse=False, env=dict(os.environ, **lake.env()))
        for kind, label, per_server in (
                ("lakefs-2", "ours, 2 servers, lakeFS defaults", False),
                ("lakefs-2x", "ours, 2 servers x N writers, lakeFS defaults", True)):
            if kind not in kinds:  # two servers over one repository (a lakeFS of their own)
                continue
            log(f"starting lakeFS (its defaults) for two servers ({kind})")
            lake = lakefs_local.start_lakefs(work / f"lakefs-{len(lakes)}")
            lakes.append(lake)
            repo = f"bench{len(lakes)}"
            lake.create_repository(repo)
            env = dict(os.environ, **lake.env())
            started[label] = _Servers([
                metastores.start_proxy(work / f"{kind}-{i}", *quiet, store=f"lakefs://{repo}",
                                       warehouse=False, env=env) for i in range(2)],
                per_server=per_server)
        backlog = {}
        for name, server in started.items():
            if args.uncommitted and "lakeFS" in name:
                log(f"adding {args.uncommitted:,} uncommitted partitions on {name}")
                took = backlog[name] = round(_backlog(server, args.uncommitted,
                                                      args.per_call), 1)
                log(f"  in {took:,.1f} s")
        rows = []
        for mode in modes:
            for n in sizes:
                for name, server in started.items():
                    log(f"{mode}: {n} writer{'s' if n > 1 else ''} on {name}")
                    figure = _measure(server, mode, n, args.duration, str(len(rows)))
                    rows.append({"mode": mode, "writers": n, "server": name, **figure})
                    log(f"  {figure['per_second']:,.1f} writes/s, {figure['errors']} errors")
        return {"command": "hms-proxy bench writes " + _argv(args),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "duration": args.duration, "rows": rows, "uncommitted": backlog,
                "lakefs": lakefs_local.DEFAULT_VERSION if lakes else None,
                "machine": {**machine_info(java="stock" in kinds),
                            "load_average_start": load_start,
                            "load_average_end": load_average()}}
    finally:
        for server in started.values():
            server.stop()
        for lake in lakes:
            lake.stop()
        shutil.rmtree(work, ignore_errors=True)


def _argv(args) -> str:
    parts = ["--writers", args.writers, "--duration", f"{args.duration:g}", "--modes",
             args.modes, "--servers", args.servers]
    if args.tuned:
        parts.append("--tuned")
    if args.uncommitted:
        parts += ["--uncommitted", str(args.uncommitted), "--per-call", str(args.per_call)]
    return " ".join(parts)


def table(result: dict) -> str:
    servers = list(dict.fromkeys(r["server"] for r in result["rows"]))
    stock = next((s for s in servers if s.startswith("stock")), None)
    lines = ["| write | writers | " + " | ".join(servers) + " |",
             "|---|---:|" + "---:|" * len(servers)]
    by = {(r["mode"], r["writers"], r["server"]): r for r in result["rows"]}
    for mode, n in dict.fromkeys((r["mode"], r["writers"]) for r in result["rows"]):
        cells = []
        for s in servers:
            r = by.get((mode, n, s))
            if r is None:
                cells.append("-")
                continue
            text = f"{r['per_second']:,.1f}"
            one = by.get((mode, 1, s))
            if n > 1 and one and one["per_second"]:
                text += f" ({r['per_second'] / one['per_second']:.1f}x 1 writer"
                base = by.get((mode, n, stock)) if stock and s != stock else None
                if base and base["per_second"]:
                    text += f", {r['per_second'] / base['per_second']:.1f}x stock"
                one_server = by.get((mode, n, "ours, lakeFS defaults"))
                if "2 servers" in s and one_server and one_server["per_second"]:
                    text += f", {r['per_second'] / one_server['per_second']:.2f}x one server"
                text += ")"
            if r["errors"]:
                text += f", {r['errors']} errors"
            cells.append(text)
        name = "add_partition (a table each)" if mode == "add" else "alter_partition (one table)"
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cmd_writes(args) -> int:
    result = run(args)
    text = table(result)
    print(text)
    errors = [r for r in result["rows"] if r["first_error"]]
    for r in errors:
        print(f"{r['server']}, {r['mode']} x{r['writers']}: first error: {r['first_error']}")
    print(f"machine: {result['machine']}")
    write_outputs(args, result, f"`{result['command']}`, {result['date']}\n\n{text}\n")
    return 0


__all__ = ["register", "run", "cmd_writes", "table"]
