"""``hms-proxy bench per-test``: what a fresh catalog costs each test.

Three ways a test suite gives each test the same seeded catalog (a database ``shop`` with a
partitioned table of ``--partitions`` partitions, their directories holding a file each, and
an unpartitioned table), each timed per test:

- **a branch** of hms-proxy, as the pytest plugin makes it (``hms_proxy.pytest_plugin``): over
  the HTTP API, create the branch from the seed's tag with its own warehouse (locations moved,
  files linked), commit that, open a Thrift port on it, point the session's port at it; after
  the test close the port and delete the branch. Also shown without the warehouse copy (what a
  branch costs on lakeFS, where the branch carries the data).
- **dropping and recreating the seed's databases on the stock HMS 2.3.10**: ``drop_database
  (cascade, deleteData)``, then the seed again through Thrift (database, tables,
  ``add_partitions``) and its files.
- **a fresh Derby metastore inside Spark**: a new PySpark process (a JVM holds one embedded
  Derby metastore) whose SparkSession creates the seed with SQL, then stops.

Clients: the plugin's own HTTP calls, hmsclient (as Python suites reach HMS), PySpark with its
defaults. Figures: the median per test, the mean, and the ratio to the branch.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from hms_proxy.tools import metastores
from hms_proxy.tools.bench.report import figure, load_average, logger, machine_info, write_outputs

log = logger("per-test")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "per-test", help="a fresh seeded catalog per test: an hms-proxy branch, the stock HMS's "
                         "drop and recreate, a fresh Derby metastore in Spark",
        description="Time what giving each test the same seeded catalog costs: a branch of "
                    "hms-proxy (as its pytest plugin makes it), dropping and recreating the "
                    "seed on the stock HMS 2.3.10, and a fresh Derby metastore inside Spark.")
    p.add_argument("--tests", type=int, default=50,
                   help="tests timed for the branch and the stock HMS (default 50)")
    p.add_argument("--derby-tests", type=int, default=3,
                   help="tests timed for the fresh Derby metastore (default 3: ~20 s each)")
    p.add_argument("--partitions", type=int, default=100,
                   help="partitions of the seed's partitioned table (default 100)")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.set_defaults(func=cmd_per_test)


# --- the seed ---------------------------------------------------------------------------------
def _sd(T, location: str | None, cols):
    return T.StorageDescriptor(
        cols, location, "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", False, -1,
        T.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
        [], [], {})


def seed(client, warehouse: Path, partitions: int) -> None:
    """The seed through Thrift, its files written: what a suite's seed step does."""
    from hmsclient.genthrift.hive_metastore import ttypes as T

    db_dir = warehouse / "shop.db"
    client.create_database(T.Database("shop", "", f"file:{db_dir}", {}))
    cols = [T.FieldSchema("id", "int", None), T.FieldSchema("amount", "double", None)]
    orders = db_dir / "orders"
    client.create_table(T.Table("orders", "shop", "bench", 0, 0, 0, _sd(T, f"file:{orders}", cols),
                                [T.FieldSchema("ds", "string", None)], {}, None, None,
                                "MANAGED_TABLE"))
    parts = []
    for i in range(partitions):
        where = orders / f"ds=d{i:04d}"
        where.mkdir(parents=True, exist_ok=True)
        (where / "part-0.parquet").write_bytes(b"PAR1" + b"\0" * 512 + b"PAR1")
        parts.append(T.Partition([f"d{i:04d}"], "shop", "orders", 0, 0,
                                 _sd(T, f"file:{where}", cols), {}))
    for i in range(0, len(parts), 1000):
        client.add_partitions(parts[i:i + 1000])
    customers = db_dir / "customers"
    customers.mkdir(parents=True, exist_ok=True)
    (customers / "part-0.parquet").write_bytes(b"PAR1" + b"\0" * 512 + b"PAR1")
    client.create_table(T.Table("customers", "shop", "bench", 0, 0, 0,
                                _sd(T, f"file:{customers}", cols), [], {}, None, None,
                                "MANAGED_TABLE"))


def _client(host: str, port: int):
    from hmsclient import hmsclient

    client = hmsclient.HMSClient(host=host, port=port)
    client.open()
    return client


def _stats(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "median_ms": statistics.median(ms), "mean_ms": statistics.fmean(ms),
            "min_ms": min(ms), "max_ms": max(ms)}


# --- the three ways ---------------------------------------------------------------------------
def time_branches(work: Path, tests: int, partitions: int) -> dict:
    """Branches of a seed through our server's HTTP API, with and without a warehouse copy."""
    from hms_proxy.pytest_plugin import Metastore

    server = metastores.start_proxy(work / "proxy", "--http-port", "0", "--log-level",
                                    "WARNING", warehouse=work / "proxy" / "warehouse")
    try:
        meta = Metastore(server.uri, f"http://127.0.0.1:{server.announced_port('http')}",
                         work / "proxy")
        meta.create_branch("seed", "main")
        port, _ = meta.listen("seed")
        client = _client(server.host, port)
        try:
            seed(client, server.warehouse, partitions)
        finally:
            client.close()
        meta.commit("seed", "the seed")
        meta.tag("seeded", "seed")
        moving, _ = meta.listen("seed")  # the session's port, pointed at each test's branch
        out = {}
        for label, own_files in (("branch", True), ("branch_no_copy", False)):
            times = []
            for i in range(tests):
                started = time.perf_counter()
                branch = meta.branch(f"t-{label}-{i}", "seeded", own_files)
                meta.point(moving, branch.name)
                meta.drop(branch)
                times.append(time.perf_counter() - started)
            out[label] = _stats(times)
            log(f"{label}: median {figure(out[label]['median_ms'])}")
        return out
    finally:
        server.stop()


def time_stock_drop_recreate(work: Path, tests: int, partitions: int) -> dict:
    from hmsclient.genthrift.hive_metastore import ttypes as T

    hms = metastores.start_stock_hms(work / "hms")
    try:
        client = _client(hms.host, hms.port)
        try:
            seed(client, hms.warehouse, partitions)
            times = []
            for _ in range(tests):
                started = time.perf_counter()
                client.drop_database("shop", True, True)
                seed(client, hms.warehouse, partitions)
                times.append(time.perf_counter() - started)
            try:
                client.get_database("shop")
            except T.NoSuchObjectException:
                raise SystemExit("the stock HMS lost the seed") from None
        finally:
            client.close()
        out = _stats(times)
        log(f"stock HMS drop and recreate: median {figure(out['median_ms'])}")
        return out
    finally:
        hms.stop()


DERBY_JOB = textwrap.dedent("""
    import sys, time
    from pyspark.sql import SparkSession
    work, partitions = sys.argv[1], int(sys.argv[2])
    spark = (SparkSession.builder.master("local[1]").appName("derby-per-test")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.warehouse.dir", work + "/warehouse")
             .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                     "jdbc:derby:;databaseName=" + work + "/metastore_db;create=true")
             .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + work)
             .enableHiveSupport().getOrCreate())
    spark.sql("CREATE DATABASE shop")
    spark.sql("CREATE TABLE shop.orders (id INT, amount DOUBLE) PARTITIONED BY (ds STRING) "
              "STORED AS PARQUET")
    specs = " ".join("PARTITION (ds='d%04d')" % i for i in range(partitions))
    spark.sql("ALTER TABLE shop.orders ADD " + specs)
    spark.sql("CREATE TABLE shop.customers (id INT, amount DOUBLE) STORED AS PARQUET")
    spark.sql("INSERT INTO shop.customers VALUES (1, 1.0)")
    spark.stop()
""")


def time_fresh_derby(work: Path, tests: int, partitions: int) -> dict:
    job = work / "derby_job.py"
    job.write_text(DERBY_JOB)
    times = []
    for i in range(tests):
        where = work / f"derby-{i}"
        where.mkdir(parents=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(job), str(where), str(partitions)],
                              cwd=where, capture_output=True, text=True,
                              env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"the Derby job failed:\n{done.stderr[-3000:]}")
        shutil.rmtree(where, ignore_errors=True)
    out = _stats(times)
    log(f"fresh Derby metastore in Spark: median {figure(out['median_ms'])}")
    return out


def run(args) -> dict:
    if args.tests < 1 or args.derby_tests < 1 or args.partitions < 1:
        raise SystemExit("hms-proxy bench per-test: --tests, --derby-tests and --partitions "
                         "must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="hms-bench-per-test-"))
    load_start = load_average()
    try:
        branches = time_branches(work, args.tests, args.partitions)
        stock = time_stock_drop_recreate(work, args.tests, args.partitions)
        derby = time_fresh_derby(work, args.derby_tests, args.partitions)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"command": "hms-proxy bench per-test"
            + (f" --tests {args.tests}" if args.tests != 50 else "")
            + (f" --derby-tests {args.derby_tests}" if args.derby_tests != 3 else "")
            + (f" --partitions {args.partitions}" if args.partitions != 100 else ""),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "partitions": args.partitions, **branches, "stock_drop_recreate": stock,
            "fresh_derby": derby,
            "machine": {**machine_info(java=True), "load_average_start": load_start,
                        "load_average_end": load_average()}}


def markdown(result: dict) -> str:
    base = result["branch"]["median_ms"]
    rows = [
        ("an hms-proxy branch with its own files (the plugin on the embedded store)", "branch"),
        ("an hms-proxy branch alone (on lakeFS the branch carries the files)", "branch_no_copy"),
        ("the stock HMS 2.3.10: drop the seed's database, create the seed again",
         "stock_drop_recreate"),
        ("a fresh Derby metastore inside Spark (a new PySpark process)", "fresh_derby"),
    ]
    lines = ["| Per test | tests timed | median | mean | vs a branch |", "|---|---:|---:|---:|---:|"]
    for label, key in rows:
        r = result[key]
        lines.append(f"| {label} | {r['n']} | {figure(r['median_ms'])} | "
                     f"{figure(r['mean_ms'])} | {r['median_ms'] / base:,.1f}x |")
    return "\n".join(lines) + "\n"


def cmd_per_test(args) -> int:
    result = run(args)
    table = markdown(result)
    print(table)
    write_outputs(args, result, table)
    return 0
