"""``hms-proxy bench import``: how long ``hms-proxy import`` takes on a large upstream HMS.

Starts a stock HMS 2.3.10 (PySpark's jars, Derby; or uses ``--upstream``), fills it with one
external table of ``--partitions`` partitions (``ds``/``hr``, 10 columns, each partition with its
own location and parameters; ``add_partitions`` in batches of 1,000), then times, into a fresh
store:

* the first import (everything is new);
* a re-import with nothing changed upstream (nothing is committed);
* a re-import after ``--change`` partitions were added upstream (a commit of just those).

Progress goes to stderr, the table to stdout.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from hms_proxy.hms.importer import import_metastore, open_client
from hms_proxy.thrift.gen.hive_metastore import ttypes as t
from hms_proxy.tools.bench.report import logger, machine_info, write_outputs
from hms_proxy.tools.metastores import start_stock_hms
from kvmodel.locations import open_catalog_store

DB = "bench_import"
TABLE = "events"
BATCH = 1000
HOURS = 24


log = logger("bench import")


def register(modes) -> argparse.ArgumentParser:
    """Add ``import`` to the sub-parsers of ``hms-proxy bench``."""
    p = modes.add_parser(
        "import", help="time hms-proxy import from a stock HMS holding a large table",
        description="Fill a stock HMS 2.3.10 with one table of --partitions partitions and time "
                    "hms-proxy import into a fresh store: the first import, a re-import with "
                    "nothing changed and one after --change partitions were added. Reproduce "
                    "the published figure with: hms-proxy bench import --partitions 100000")
    p.add_argument("--partitions", type=int, default=100_000,
                   help="partitions in the upstream table (default 100000)")
    p.add_argument("--change", type=int, default=1000,
                   help="partitions added upstream before the last re-import (default 1000)")
    p.add_argument("--upstream", metavar="thrift://HOST:PORT",
                   help="use this metastore instead of starting one (filled unless it already "
                        f"holds {DB}.{TABLE} with --partitions partitions)")
    p.add_argument("--workdir", metavar="DIR",
                   help="work directory (the stock HMS's Derby and warehouse, the store); "
                        "default: a temporary directory, deleted afterwards unless --keep")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory and leave the started HMS running "
                        "(its URI is printed)")
    p.add_argument("--heap", default="2g", help="heap of the started stock HMS (default 2g)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results as Markdown")
    p.set_defaults(func=cmd_import_bench)
    return p


# --- the upstream ----------------------------------------------------------------------------
def connect(uri: str, timeout: float = 600.0):

    return open_client(uri, timeout)


def storage_descriptor(t, location: str, cols):
    return t.StorageDescriptor(
        cols=cols, location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        compressed=False, numBuckets=-1,
        serdeInfo=t.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                              {"serialization.format": "1"}),
        bucketCols=[], sortCols=[], parameters={},
        skewedInfo=t.SkewedInfo([], [], {}), storedAsSubDirectories=False)


COLUMNS = [("id", "bigint"), ("name", "string"), ("amount", "double"), ("ts", "timestamp"),
           ("price", "decimal(18,4)"), ("attrs", "map<string,string>"), ("tags", "array<string>"),
           ("qty", "int"), ("ok", "boolean"), ("note", "string")]


def partition_values(i: int) -> list[str]:
    import datetime

    day, hr = divmod(i, HOURS)
    return [(datetime.date(2020, 1, 1) + datetime.timedelta(days=day)).isoformat(), str(hr)]


def fill(uri: str, warehouse: str, partitions: int, start: int = 0) -> float:
    """Create the bench table (when missing) and add partitions ``start``..``partitions-1``;
    returns the seconds spent."""

    began = time.monotonic()
    cols = [t.FieldSchema(n, typ, f"{n} column") for n, typ in COLUMNS]
    root = f"file:{warehouse.rstrip('/')}/{DB}.db/{TABLE}"
    with connect(uri) as client:
        if DB not in client.get_all_databases():
            client.create_database(t.Database(DB, "import bench",
                                              f"file:{warehouse.rstrip('/')}/{DB}.db", {}))
        if TABLE not in client.get_all_tables(DB):
            client.create_table(t.Table(
                TABLE, DB, "bench", 0, 0, 0, storage_descriptor(t, root, cols),
                [t.FieldSchema("ds", "string"), t.FieldSchema("hr", "int")],
                {"EXTERNAL": "TRUE", "spark.sql.sources.provider": "parquet"},
                None, None, "EXTERNAL_TABLE"))
        for first in range(start, partitions, BATCH):
            parts = []
            for i in range(first, min(first + BATCH, partitions)):
                values = partition_values(i)
                parts.append(t.Partition(
                    values=values, dbName=DB, tableName=TABLE,
                    sd=storage_descriptor(t, f"{root}/ds={values[0]}/hr={values[1]}", cols),
                    parameters={"numRows": str(1000 + i), "rawDataSize": str(120_000 + i),
                                "spark.sql.statistics.numRows": str(1000 + i)}))
            client.add_partitions(parts)
            done = min(first + BATCH, partitions)
            if (done - start) % (BATCH * 10) == 0 or done == partitions:
                log(f"filled {done:,}/{partitions:,} partitions "
                    f"({time.monotonic() - began:.0f} s)")
    return time.monotonic() - began


def count_partitions(uri: str) -> int:
    with connect(uri) as client:
        if DB not in client.get_all_databases() or TABLE not in client.get_all_tables(DB):
            return 0
        return len(client.get_partition_names(DB, TABLE, -1))


# --- the run ---------------------------------------------------------------------------------
def _import(store_path: Path, uri: str, label: str) -> dict:

    store = open_catalog_store(str(store_path))
    try:
        began = time.monotonic()
        result = import_metastore(store, uri, branch="main", databases=[DB],
                                  message=f"bench import: {label}", author="bench",
                                  progress=None)
        seconds = time.monotonic() - began
    finally:
        store.close()
    log(f"{label}: {seconds:.2f} s, {result.summary()}")
    return {"label": label, "seconds": round(seconds, 3), "changed_keys": result.changed_keys,
            "commit": result.commit.id if result.commit else None,
            "phases": {k: round(v, 3) for k, v in result.timings.items()}}


def run(args) -> dict:

    if args.partitions < 1 or args.change < 0:
        raise SystemExit("hms-proxy bench import: --partitions must be at least 1, --change >= 0")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="hms-bench-import-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    hms = None
    load_start = list(os.getloadavg())
    result = {"partitions": args.partitions, "change": args.change,
              "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    try:
        if args.upstream:
            uri, warehouse = args.upstream, str(workdir / "warehouse")
        else:
            log(f"starting a stock HMS in {workdir / 'hms'}")
            hms = start_stock_hms(workdir / "hms", heap=args.heap)
            uri, warehouse = hms.uri, str(hms.warehouse)
            log(f"stock HMS at {uri}")
        have = count_partitions(uri)
        if have > args.partitions:
            raise SystemExit(f"hms-proxy bench import: {uri} already holds {have:,} partitions "
                             f"in {DB}.{TABLE}, more than --partitions")
        if have < args.partitions:
            log(f"filling {DB}.{TABLE} with {args.partitions - have:,} partitions "
                f"(batches of {BATCH:,})")
            result["fill_seconds"] = round(fill(uri, warehouse, args.partitions, have), 1)
        store_path = workdir / f"store-{os.getpid()}"
        shutil.rmtree(store_path, ignore_errors=True)
        open_catalog_store(str(store_path)).close()
        runs = [_import(store_path, uri, f"first import of {args.partitions:,} partitions"),
                _import(store_path, uri, "re-import, nothing changed")]
        if args.change:
            fill(uri, warehouse, args.partitions + args.change, args.partitions)
            runs.append(_import(store_path, uri, f"re-import after {args.change:,} partitions "
                                                 "were added upstream"))
            with connect(uri) as client:  # back to --partitions, for the next run
                names = client.get_partition_names(DB, TABLE, -1)
                extra = set(names) - {f"ds={v[0]}/hr={v[1]}" for v in
                                      map(partition_values, range(args.partitions))}
                for name in sorted(extra):
                    client.drop_partition_by_name(DB, TABLE, name, False)
        result["runs"] = runs
        result["store_bytes"] = sum(f.stat().st_size for f in store_path.iterdir() if f.is_file())
        shutil.rmtree(store_path, ignore_errors=True)
    finally:
        result["machine"] = machine_info()
        result["machine"]["load_average_start"] = [round(x, 2) for x in load_start]
        if hms is not None:
            if args.keep:
                log(f"left the stock HMS running at {hms.uri} (pid {hms.popen.pid}); "
                    f"reuse it with --upstream {hms.uri}")
            else:
                hms.stop()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def render_table(result: dict) -> str:
    lines = [f"{'run':<58} {'seconds':>9} {'keys':>9}"]
    for r in result["runs"]:
        lines.append(f"{r['label']:<58} {r['seconds']:>9.2f} {r['changed_keys']:>9,}")
    return "\n".join(lines)


def render_markdown(result: dict) -> str:
    m = result["machine"]
    out = [f"Command: `hms-proxy bench import --partitions {result['partitions']}`", "",
           f"- date (start): {result['date']}",
           f"- machine: {m.get('nproc')} CPUs ({m.get('cpu', '?')}), {m.get('ram_gb', '?')} GB "
           f"RAM, Python {m.get('python')}, SQLite {m.get('sqlite', '?')}",
           f"- load average at start {m.get('load_average_start')}, at end "
           f"{m.get('load_average')}"]
    if "fill_seconds" in result:
        out.append(f"- filling the stock HMS (add_partitions, batches of {BATCH:,}): "
                   f"{result['fill_seconds']} s")
    out += ["", "| run | seconds | keys committed |", "|---|---:|---:|"]
    for r in result["runs"]:
        out.append(f"| {r['label']} | {r['seconds']:.2f} | {r['changed_keys']:,} |")
    first = result["runs"][0].get("phases")
    if first:
        out += ["", "Phases of the first import (s): "
                + ", ".join(f"{k} {v}" for k, v in first.items())]
    return "\n".join(out) + "\n"


def cmd_import_bench(args) -> int:
    result = run(args)
    print(render_table(result), flush=True)
    write_outputs(args, result, lambda: render_markdown(result))
    return 0
