"""``hms-proxy bench visibility``: two of our servers over one lakeFS repository and branch; how
long after one acknowledges a write the other shows it, and whether the writer's own client
always reads it back.

A real lakeFS is started (``hms_proxy/tools/lakefs_local.py``, built once), with one fresh
repository; two servers serve it (``serve --store lakefs://REPO``, default settings unless
``--refresh`` is given). A Thrift client (hmsclient's, as Python users connect) on server A
alters a table parameter to a new value ``--writes`` times; right after each acknowledgement
it reads the table back through A (read-your-writes), and a second client polls server B
until B shows the value (every ``--poll-ms``). The figures are the delay from A's
acknowledgement to B's first answer with the value: median, 99th percentile and worst.
"""
from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hms_proxy.tools import lakefs_local, metastores
from hms_proxy.tools.bench.report import figure, load_average, logger, machine_info, write_outputs

log = logger("visibility")
DB, TABLE = "vis", "t"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "visibility", help="two servers over one lakeFS branch: how soon each sees the other's "
                           "writes",
        description="Start a real lakeFS and two of our servers over one repository; write "
                    "through one, and time how long the other takes to show each write.")
    p.add_argument("--writes", type=int, default=1000, help="writes to time (default 1000)")
    p.add_argument("--poll-ms", type=float, default=2.0,
                   help="how often the reader asks server B (default every 2 ms)")
    p.add_argument("--refresh", type=float, default=None, metavar="SECONDS",
                   help="the servers' --lakefs-refresh (default: theirs, 0.25)")
    p.add_argument("--lakefs-batch-delay", type=lakefs_local.duration_arg, default=None,
                   metavar="DURATION",
                   help=lakefs_local.BATCH_DELAY_HELP)
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.set_defaults(func=cmd_visibility)


def _client(server):
    from hmsclient import hmsclient

    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    return client


def run(args) -> dict:
    from hmsclient.genthrift.hive_metastore import ttypes as T

    if args.writes < 1:
        raise SystemExit("--writes must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="hms-proxy-visibility-"))
    lakefs = servers = None
    clients = []
    load_start = load_average()
    try:
        log("starting lakeFS")
        lakefs = lakefs_local.start_lakefs(work / "lakefs", batch_delay=args.lakefs_batch_delay)
        lakefs.create_repository("vis")
        env = dict(os.environ, **lakefs.env())
        extra = ["--log-level", "WARNING"]
        if args.refresh is not None:
            extra += ["--lakefs-refresh", str(args.refresh)]
        servers = [metastores.start_proxy(work / name, *extra, store="lakefs://vis",
                                          warehouse=False, env=env, name=name)
                   for name in ("a", "b")]
        writer, reader = _client(servers[0]), _client(servers[1])
        clients += [writer, reader]
        writer.create_database(T.Database(DB, "", None, {}))
        cols = [T.FieldSchema("x", "int", None)]
        sd = T.StorageDescriptor(cols, None, "org.apache.hadoop.mapred.TextInputFormat",
                                 "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                                 False, -1, T.SerDeInfo(
                                     None, "org.apache.hadoop.hive.serde2.lazy."
                                     "LazySimpleSerDe", {}), [], [], {})
        writer.create_table(T.Table(TABLE, DB, "bench", 0, 0, 0, sd, [], {"n": "0"}, None,
                                    None, "MANAGED_TABLE"))
        delays, own_misses = [], 0
        poll = args.poll_ms / 1000
        deadline = time.monotonic() + 30
        while True:  # the table itself, created through A, shown by B
            try:
                reader.get_table(DB, TABLE)
                break
            except T.NoSuchObjectException:
                if time.monotonic() > deadline:
                    raise SystemExit("server B never showed the table created through A")
                time.sleep(poll)
        log(f"{args.writes} writes through server A, read back through A and B")
        for i in range(1, args.writes + 1):
            table = writer.get_table(DB, TABLE)
            table.parameters["n"] = str(i)
            writer.alter_table(DB, TABLE, table)
            acked = time.monotonic()
            if writer.get_table(DB, TABLE).parameters.get("n") != str(i):
                own_misses += 1
            while reader.get_table(DB, TABLE).parameters.get("n") != str(i):
                if time.monotonic() - acked > 30:
                    raise SystemExit(f"server B never showed write {i} within 30 s")
                time.sleep(poll)
            delays.append((time.monotonic() - acked) * 1000)
            if i % 100 == 0:
                log(f"{i} writes: worst so far {max(delays):.0f} ms")
        ordered = sorted(delays)
        return {
            "command": "hms-proxy bench visibility" + (
                f" --writes {args.writes}" if args.writes != 1000 else "") + (
                f" --refresh {args.refresh:g}" if args.refresh is not None else ""),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "lakefs": lakefs_local.DEFAULT_VERSION, "writes": args.writes,
            "refresh": args.refresh, "poll_ms": args.poll_ms,
            "median_ms": statistics.median(ordered),
            "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "worst_ms": ordered[-1], "own_writes_not_read_back": own_misses,
            "machine": {**machine_info(), "load_average_start": load_start,
                        "load_average_end": load_average()},
        }
    finally:
        for c in clients:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing after a failure
                pass
        for server in servers or []:
            server.stop()
        if lakefs is not None:
            lakefs.stop()
        shutil.rmtree(work, ignore_errors=True)


def cmd_visibility(args) -> int:
    result = run(args)
    print(f"{result['writes']} writes acknowledged by server A, shown by server B after: "
          f"median {figure(result['median_ms'])}, p99 {figure(result['p99_ms'])}, worst "
          f"{figure(result['worst_ms'])}; read back through A at once: "
          f"{result['writes'] - result['own_writes_not_read_back']} of {result['writes']}")
    write_outputs(args, result)
    return 0
