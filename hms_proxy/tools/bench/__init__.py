"""``hms-proxy bench``: time our server against another metastore (by default the stock HMS 2.3.10).

``register(subparsers)`` adds the sub-command to the ``hms-proxy`` argument parser; the work is
in :mod:`hms_proxy.tools.bench.runner` and the JVM timing client in ``java/HmsBench.java``.
``hms-proxy bench versioning`` (an optional mode, :mod:`hms_proxy.tools.bench.versioning`) times the
versioning engine directly on a store instead.
"""
from __future__ import annotations

import argparse


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``bench`` to an argparse sub-parsers object; returns the new parser."""
    from hms_proxy.tools import lakefs_local  # light: the standard library only

    p = subparsers.add_parser(
        "bench", help="benchmark a metastore against another (e.g. the stock HMS 2.3.10)",
        description="Time HMS calls on a target metastore and, side by side in interleaved "
                    "rounds, on another one, from a JVM client (hive-metastore-2.3.10's Thrift "
                    "client, as Spark and Trino use). Needs java and javac (JDK 17) and pyspark "
                    "(for its jars). Reproduce the published figures with: "
                    "hms-proxy bench --start-proxy --start-oracle --partitions 10000")
    p.add_argument("--target", metavar="thrift://HOST:PORT", help="the metastore under test")
    p.add_argument("--against", metavar="thrift://HOST:PORT",
                   help="the metastore to compare with (optional)")
    p.add_argument("--start-proxy", action="store_true",
                   help="start our server on a temporary store as the target, stop it afterwards")
    p.add_argument("--proxy-store", default=None, metavar="STORE",
                   help="with --start-proxy: the store it serves (default a fresh local one), "
                        "e.g. lakefs://REPO with LAKEFS_ENDPOINT, LAKEFS_ACCESS_KEY_ID and "
                        "LAKEFS_SECRET_ACCESS_KEY set")
    p.add_argument("--start-lakefs", action="store_true",
                   help="with --start-proxy: serve a fresh repository of a real lakeFS that the "
                        "bench starts on a loopback port (built once from its Go module, "
                        "hms_proxy/tools/lakefs_local.py; local KV and blocks)")
    p.add_argument("--lakefs-batch-delay", type=lakefs_local.duration_arg, default=None,
                   metavar="DURATION",
                   help="with --start-lakefs: " + lakefs_local.BATCH_DELAY_HELP)
    p.add_argument("--start-oracle", action="store_true",
                   help="start the stock HMS 2.3.10 (PySpark's jars, embedded Derby) in a temporary "
                        "directory as the --against side, stop it afterwards")
    p.add_argument("--kerberos", choices=("authentication", "integrity", "privacy"),
                   default=None, metavar="PROTECTION",
                   help="with --start-proxy and --start-oracle: both Kerberized in a realm the "
                        "bench makes (an MIT KDC on loopback), hadoop.rpc.protection set to "
                        "PROTECTION (authentication, integrity, or privacy: auth-conf, every "
                        "frame encrypted); the JVM client logs in from a ticket")
    p.add_argument("--partitions", type=int, default=10_000,
                   help="partitions in the benchmark table (default 10000)")
    p.add_argument("--iterations", type=int, default=None,
                   help="timed calls per operation and side (default 200 for single-object calls, "
                        "30 for listings, 5 for get_partitions and the range filter)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed calls per operation and side first (default 300 for single-object "
                        "calls, 10 for listings, 1 for heavy ones)")
    p.add_argument("--clients", type=int, default=8,
                   help="concurrent connections for the get_table throughput test (default 8)")
    p.add_argument("--duration", type=float, default=3.0,
                   help="seconds per throughput round (default 3)")
    p.add_argument("--throughput-rounds", type=int, default=3,
                   help="throughput rounds per side, alternating (default 3)")
    p.add_argument("--json", metavar="FILE", help="write every sample and the medians as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results table as Markdown")
    p.add_argument("--keep", action="store_true",
                   help="keep the bench databases and the temporary work directory")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if any operation failed on any side")
    p.set_defaults(func=_cmd_bench)
    # An optional mode: `hms-proxy bench versioning ...` parses the rest with its own options
    # (and func); plain `hms-proxy bench --target ...` is unchanged.
    from hms_proxy.tools.bench import (  # light: heavy imports
        hive4_bench,
        iceberg_merge,
        importing,
        per_test,
        plans,
        rest_bench,
        stats_bench,
        throughput,
        versioning,  # inside
        visibility,
        writes,
    )

    modes = p.add_subparsers(dest="bench_mode",
                             metavar="{versioning,import,stats,plans,throughput,visibility,per-test,hive4,rest,"
                                     "iceberg-merge,writes}",
                             title="modes (optional)")
    throughput.register(modes)
    visibility.register(modes)
    versioning.register(modes)
    importing.register(modes)
    stats_bench.register(modes)
    plans.register(modes)
    per_test.register(modes)
    hive4_bench.register(modes)
    rest_bench.register(modes)
    iceberg_merge.register(modes)
    writes.register(modes)
    return p


def _cmd_bench(args) -> int:
    from hms_proxy.tools.bench.runner import (
        cmd_bench,  # late: keeps `hms-proxy serve` start-up light
    )

    return cmd_bench(args)
