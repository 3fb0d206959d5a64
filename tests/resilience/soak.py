"""A soak: Spark-like traffic against one server for a long time, its memory sampled.

``--clients`` threads, each on its own connection (``set_ugi`` first, as Hive's client does),
loop over what a Spark job asks a metastore: get_database, get_table, partition names, a
partition filter, partitions by name, ``add_partitions`` of a new day and ``drop_partition``
of the oldest (a rolling window: the catalog stays the same size), ``alter_partition``
(statistics), a temporary table created and dropped, locks taken and released. The server's
RSS, threads and descriptors are sampled every ``--every`` seconds; the summary gives them at
the start, after warm-up (the first tenth), at the peak and at the end, and the RSS slope
after warm-up (least squares, MiB per hour).

    python -m tests.resilience.soak --minutes 60        # docs/resilience.md
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.tools import metastores
from tests.resilience.workload import DB, partitions, table
from tests.support.client import connect
from tests.support.wait import DEADLINE

WINDOW = 200  # days kept per table


def _client_loop(server, n: int, stop: threading.Event, counts: list, errors: list,
                 pause: float = 0.0):
    try:
        _client_calls(server, n, stop, counts, errors, pause)
    except BaseException as exc:  # noqa: BLE001 - counted and reported (the client stopped)
        errors.append(f"client {n} stopped: {type(exc).__name__}: {exc}")


def _client_calls(server, n: int, stop: threading.Event, counts: list, errors: list,
                  pause: float):
    rng = random.Random(n)
    tbl = f"events_{n}"
    day = 0
    with connect(server, timeout=60) as c:
        c.set_ugi(f"spark{n}", ["data"])
        c.create_table(table(tbl))
        c.add_partitions(partitions(tbl, [f"d{d:06d}" for d in range(WINDOW)]))
        day = WINDOW
        while not stop.is_set():
            try:
                c.get_database(DB)
                c.get_table(DB, tbl)
                names = c.get_partition_names(DB, tbl, -1)
                lo = f"d{max(0, day - 20):06d}"
                c.get_partitions_by_filter(DB, tbl, f"p >= '{lo}'", -1)
                c.get_partitions_by_names(DB, tbl, rng.sample(names, min(10, len(names))))
                c.add_partitions(partitions(tbl, [f"d{day:06d}"]))
                c.drop_partition(DB, tbl, [f"d{day - WINDOW:06d}"], True)
                day += 1
                part = c.get_partition(DB, tbl, [f"d{day - 1:06d}"])
                part.parameters["numRows"] = str(rng.randint(1, 10 ** 6))
                c.alter_partition(DB, tbl, part)
                if rng.random() < 0.1:
                    tmp = f"tmp_{n}_{day}"
                    c.create_table(table(tmp))
                    c.drop_table(DB, tmp, True)
                if rng.random() < 0.1:
                    lock = c.lock(T.LockRequest([T.LockComponent(
                        T.LockType.SHARED_READ, T.LockLevel.TABLE, DB, tbl)], user="u",
                        hostname="h"))
                    c.unlock(T.UnlockRequest(lock.lockid))
                counts[n] += 1
                if pause:
                    stop.wait(pause)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors.append(f"client {n}: {type(exc).__name__}: {exc}")
                if len(errors) > 100:
                    return


def _slope(points) -> float | None:
    """Least-squares slope of (seconds, MiB), in MiB per hour."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    if not var:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / var * 3600


def run(seconds: float, clients: int = 4, every: float = 10.0, out=print,
        server_args: tuple = (), pause: float = 0.0) -> dict:
    import psutil

    with tempfile.TemporaryDirectory(prefix="hms-soak-") as tmp:
        server = metastores.start_proxy(Path(tmp) / "server", "--log-level", "WARNING",
                                        *server_args)
        try:
            with connect(server) as c:
                c.create_database(T.Database(DB, "", None, {}))
            proc = psutil.Process(server.popen.pid)
            stop = threading.Event()
            counts = [0] * clients
            errors: list[str] = []
            threads = [threading.Thread(target=_client_loop, args=(server, i, stop, counts,
                                                                   errors, pause), daemon=True)
                       for i in range(clients)]
            started = time.monotonic()
            for t in threads:
                t.start()
            samples = []
            while time.monotonic() - started < seconds:
                time.sleep(every)
                now = time.monotonic() - started
                samples.append({"t": round(now, 1), "rss_mib": round(
                    proc.memory_info().rss / 2**20, 1), "threads": proc.num_threads(),
                    "fds": proc.num_fds(), "loops": sum(counts)})
                out(f"{now / 60:6.1f} min: RSS {samples[-1]['rss_mib']} MiB, threads "
                    f"{samples[-1]['threads']}, fds {samples[-1]['fds']}, "
                    f"{samples[-1]['loops']:,} client loops, {len(errors)} errors")
            stop.set()
            for t in threads:
                t.join(DEADLINE)
            stuck = sum(t.is_alive() for t in threads)
            if stuck:
                errors.append(f"{stuck} clients still in a call {DEADLINE:g} s after the end")
            warm = samples[max(0, len(samples) // 10)] if samples else None
            after = [(s["t"], s["rss_mib"]) for s in samples[len(samples) // 10:]]
            return {"seconds": seconds, "clients": clients, "loops": sum(counts),
                    "loops_per_client": list(counts),
                    "calls": sum(counts) * 9, "errors": errors[:10],
                    "error_count": len(errors),
                    "rss_start_mib": samples[0]["rss_mib"] if samples else None,
                    "rss_warm_mib": warm["rss_mib"] if warm else None,
                    "rss_peak_mib": max(s["rss_mib"] for s in samples) if samples else None,
                    "rss_end_mib": samples[-1]["rss_mib"] if samples else None,
                    "rss_slope_mib_per_hour": _slope(after),
                    "threads_end": samples[-1]["threads"] if samples else None,
                    "fds_end": samples[-1]["fds"] if samples else None,
                    "samples": samples}
        finally:
            server.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.resilience.soak",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    p.add_argument("--pause", type=float, default=0.05,
                   help="seconds each client waits between loops (default 0.05)")
    p.add_argument("--cache-size", default=None,
                   help="the server's --cache-size (default: the server's default, 256m)")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    extra = ("--cache-size", args.cache_size) if args.cache_size else ()
    res = run(args.minutes * 60, args.clients, args.every, server_args=extra,
              pause=args.pause)
    slope = res["rss_slope_mib_per_hour"]
    print(f"{args.minutes:g} min, {args.clients} clients (pause {args.pause:g} s), "
          f"{res['loops']:,} loops "
          f"(~{res['calls']:,} calls), {res['error_count']} errors; RSS {res['rss_start_mib']} "
          f"MiB at the first sample, {res['rss_warm_mib']} after warm-up, peak "
          f"{res['rss_peak_mib']}, end {res['rss_end_mib']}; slope after warm-up "
          f"{slope if slope is None else round(slope, 2)} MiB/hour; threads "
          f"{res['threads_end']}, fds {res['fds_end']} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0 if not res["error_count"] else 1


if __name__ == "__main__":
    sys.exit(main())
