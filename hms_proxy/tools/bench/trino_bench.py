"""Trino's planning and query times with the stock HMS 2.3.10 and with us, on the same data.

    .venv/bin/python -m hms_proxy.tools.bench.trino_bench [--rounds 7] [--partitions 1000]
                                                    [--markdown FILE] [--json FILE]

One real Trino (hms_proxy/tools/trino_local.py: 476 from Maven Central on a Java 24+ JDK) with a Hive
catalog per metastore, Trino's default catalog settings (no metastore cache) except the
partitions per writer its CTAS of ``--partitions`` partitions needs. The same tables are made
in each catalog (tpch's tiny orders: a table of 5 partitions and one of ``--partitions``, then
ANALYZE), then every query runs ``--rounds`` times per side, the sides alternating, after one
untimed run. Reported: medians of Trino's own analysis + planning time (the phases that call
the metastore) and elapsed time of the query (from its REST API); the JSON also has the wall
time the Python client saw.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from hms_proxy.tools import metastores, trino_local
from hms_proxy.tools.bench.report import logger, write_outputs

QUERIES = [
    ("count, 1 of 5 partitions", "SELECT count(*) FROM orders WHERE ds = '1-URGENT'"),
    ("count, all {n} partitions", "SELECT count(*) FROM events"),
    ("count, 1 of {n} partitions", "SELECT count(*) FROM events WHERE p = '7'"),
    ("aggregate, 3 of {n} partitions",
     "SELECT p, sum(totalprice) FROM events WHERE p IN ('1', '2', '3') GROUP BY p"),
    ("join planned with statistics (EXPLAIN)",
     "EXPLAIN SELECT o.ds, count(*) FROM events e JOIN orders o ON e.orderkey = o.orderkey "
     "WHERE e.p = '7' GROUP BY o.ds"),
    ("SHOW STATS, {n} partitions", "SHOW STATS FOR events"),
    ("DESCRIBE", "DESCRIBE events"),
    ("information_schema.columns",
     "SELECT table_name, column_name FROM information_schema.columns "
     "WHERE table_schema = 'bench'"),
]
_UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3, "d": 86400e3}


log = logger("trino-bench")


def millis(duration: str) -> float:
    """Trino's duration text ("12.34ms", "1.20s") in milliseconds."""
    m = re.fullmatch(r"([0-9.]+)\s*([a-z]+)", duration.strip())
    if not m or m.group(2) not in _UNITS:
        raise ValueError(f"not a duration: {duration!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def run(trino, catalog: str, sql: str) -> dict:
    started = time.perf_counter()
    with trino.connect(catalog=catalog, schema="bench") as conn:
        cur = conn.cursor()
        cur.execute(sql)
        cur.fetchall()
        query_id = cur.query_id
    wall = (time.perf_counter() - started) * 1000
    req = urllib.request.Request(f"{trino.url}/v1/query/{query_id}",
                                 headers={"X-Trino-User": "hms"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        stats = json.load(resp)["queryStats"]
    # the metastore is called while Trino analyses the query (tables, columns) and plans it
    # (partitions, statistics): those two phases are what a faster metastore shortens
    analysis, planning = millis(stats.get("analysisTime", "0ms")), millis(stats["planningTime"])
    return {"wall_ms": wall, "analysis_ms": analysis, "planning_ms": planning,
            "prepare_ms": analysis + planning, "elapsed_ms": millis(stats["elapsedTime"])}


def setup(trino, catalog: str, partitions: int) -> float:
    started = time.perf_counter()
    for sql in [
        "CREATE SCHEMA bench",
        "CREATE TABLE bench.orders WITH (format = 'PARQUET', partitioned_by = ARRAY['ds']) AS "
        "SELECT orderkey, custkey, totalprice, orderdate, orderpriority AS ds "
        "FROM tpch.tiny.orders",
        "CREATE TABLE bench.events WITH (format = 'PARQUET', partitioned_by = ARRAY['p']) AS "
        f"SELECT orderkey, custkey, totalprice, CAST(orderkey % {partitions} AS varchar) AS p "
        "FROM tpch.tiny.orders",
        "ANALYZE bench.orders",
        "ANALYZE bench.events",
    ]:
        trino.execute(sql, catalog=catalog)
    return time.perf_counter() - started


def median(samples: list[dict], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def markdown(result: dict) -> str:
    sides = result["sides"]
    lines = [
        f"Trino {result['trino']} ({result['java']}), one coordinator, Hive catalogs with "
        f"Trino's defaults (no metastore cache); {result['rounds']} rounds per query and "
        f"side, alternating, after one untimed run; medians in ms. Setup (CTAS of "
        f"{result['partitions']} + 5 partitions and ANALYZE): "
        + ", ".join(f"{s} {result['setup_s'][s]:.1f} s" for s in sides) + ".",
        "",
        "| query | " + " | ".join(f"analysis+planning {s}" for s in sides) + " | "
        + " | ".join(f"elapsed {s}" for s in sides) + " | elapsed ratio |",
        "|---|" + "---:|" * (2 * len(sides) + 1),
    ]
    for label, per_side in result["queries"].items():
        plan = [f"{per_side[s]['prepare_ms']:.0f}" for s in sides]
        elapsed = [f"{per_side[s]['elapsed_ms']:.0f}" for s in sides]
        ratio = per_side[sides[0]]["elapsed_ms"] / max(per_side[sides[1]]["elapsed_ms"], 1e-9)
        lines.append(f"| {label} | " + " | ".join(plan) + " | " + " | ".join(elapsed)
                     + f" | {ratio:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hms_proxy.tools.bench.trino_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--markdown", metavar="FILE")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="trino-bench-"))
    servers = []
    try:
        log("starting Trino, the stock HMS 2.3.10 and hms-proxy")
        trino = trino_local.start_trino(work / "trino")
        servers.append(trino)
        trino.execute("CREATE CATALOG tpch USING tpch")
        stock = metastores.start_stock_hms(work / "stock")
        servers.append(stock)
        proxy = metastores.start_proxy(work / "proxy")
        servers.append(proxy)
        extra = {"hive.max-partitions-per-writers": str(max(args.partitions, 100))}
        sides = {"stock HMS": stock, "hms-proxy": proxy}
        catalogs = {}
        setup_s = {}
        for i, (side, server) in enumerate(sides.items()):
            catalogs[side] = f"side{i}"
            trino.add_catalog(catalogs[side], trino_local.hive_catalog(server.uri, extra=extra))
            log(f"{side}: creating the tables")
            setup_s[side] = setup(trino, catalogs[side], args.partitions)
        results: dict = {}
        for label, sql in QUERIES:
            label = label.format(n=args.partitions)
            samples = {side: [] for side in sides}
            for side in sides:
                run(trino, catalogs[side], sql)  # untimed
            for _ in range(args.rounds):
                for side in sides:
                    samples[side].append(run(trino, catalogs[side], sql))
            results[label] = {side: {k: median(s, k) for k in s[0]} | {"samples": s}
                              for side, s in samples.items()}
            log(label + ": " + ", ".join(
                f"{side} analysis+planning {results[label][side]['prepare_ms']:.0f} ms, elapsed "
                f"{results[label][side]['elapsed_ms']:.0f} ms" for side in sides))
        java = f"Java {trino_local.java_major(trino.install.java)}"
        result = {"trino": trino.version, "java": java, "rounds": args.rounds,
                  "partitions": args.partitions, "sides": list(sides), "setup_s": setup_s,
                  "queries": results}
        text = markdown(result)
        print(text)
        write_outputs(args, result, text)
        return 0
    finally:
        for server in reversed(servers):
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
