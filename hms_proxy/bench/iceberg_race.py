"""pyiceberg racing writers: N writers append K small batches each to ONE Iceberg table through
pyiceberg's HiveCatalog, retrying on CommitFailedException, against our server and the stock
HMS 2.3.10 in the same run; prints the wall time per side, the retries and the ratio.

    .venv/bin/python -m hms_proxy.bench.iceberg_race [--writers 8] [--batches 5]

Each writer has its own HiveCatalog (its own Thrift connection). A commit is pyiceberg's:
lock(EXCLUSIVE on the table), get_table, write the new metadata file, alter_table with the new
``metadata_location``, unlock; a writer whose base snapshot is stale gets CommitFailedException,
reloads the table and appends again. ``run_race`` is also what tests/integration/test_pyiceberg.py
runs (without timing asserts); it checks every (writer, batch) arrived exactly once.
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hms_proxy import metastores


# pyiceberg polls a WAITING lock with wait_exponential(multiplier=2, min, max): every wait is
# at least 2 s unless max is lower, so with the defaults (max 60 s, 4 checks) a writer that
# finds the table locked sleeps 2 + 4 + 8 s and then gives up. The race polls every 50 ms
# instead (see docs/benchmarks.md); --pyiceberg-lock-defaults restores pyiceberg's settings.
RACE_LOCK_PROPERTIES = {
    "lock-check-min-wait-time": "0.01",
    "lock-check-max-wait-time": "0.05",
    "lock-check-retries": "400",
}
ROWS_PER_BATCH = 10
# pyiceberg (0.12) also retries a failed commit inside append(), sleeping 100, 200, 400, 800 ms;
# the race turns that off so that its own loop (reload, append again, 0-20 ms jitter) is the
# only retry and every CommitFailedException is counted.
RACE_TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}


class _LockWaits(logging.Handler):
    """Counts pyiceberg's "Wait on lock" warnings: check_lock calls that found the lock WAITING."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        if record.getMessage().startswith("Wait on lock"):
            self.count += 1


@dataclass
class RaceResult:
    side: str
    writers: int
    batches: int
    wall_seconds: float
    commits: int
    retries: int                      # CommitFailedException caught and retried
    retries_per_writer: list[int]
    lock_waits: int = 0               # check_lock answers WAITING (pyiceberg polls again)
    counts: dict = field(default_factory=dict)   # (writer, batch) -> rows seen
    duplicates: int = 0               # (writer, batch, seq) seen more than once
    missing: list = field(default_factory=list)  # (writer, batch) not (fully) there
    snapshots: int = 0
    errors: list = field(default_factory=list)   # writers that gave up

    @property
    def exactly_once(self) -> bool:
        return not self.missing and not self.duplicates and not self.errors


def catalog(uri: str, warehouse: Path | str, **props: str):
    from pyiceberg.catalog.hive import HiveCatalog
    return HiveCatalog("hms", uri=uri, warehouse=f"file://{warehouse}", **props)


def make_batch(writer: int, batch: int, rows: int = ROWS_PER_BATCH):
    import pyarrow as pa
    return pa.table({"writer": pa.array([writer] * rows, pa.int32()),
                     "batch": pa.array([batch] * rows, pa.int32()),
                     "seq": pa.array(range(rows), pa.int32())})


def create_race_table(uri: str, warehouse: Path, namespace: str, table: str = "race",
                      lock_properties: dict | None = None):
    """The namespace (located in ``warehouse``) and an empty table with the race's schema."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, NestedField

    cat = catalog(uri, warehouse, **(lock_properties or {}))
    cat.create_namespace(namespace, {"location": f"file://{warehouse}/{namespace}.db"})
    schema = Schema(NestedField(1, "writer", IntegerType(), required=False),
                    NestedField(2, "batch", IntegerType(), required=False),
                    NestedField(3, "seq", IntegerType(), required=False))
    return cat.create_table(f"{namespace}.{table}", schema=schema, properties=RACE_TABLE_PROPERTIES)


def run_race(uri: str, warehouse: Path | str, namespace: str, *, side: str = "",
             writers: int = 8, batches: int = 5, max_retries: int = 50, jitter: float = 0.02,
             table: str = "race", lock_properties: dict | None = None) -> RaceResult:
    """Create ``namespace.table``, race ``writers`` threads appending ``batches`` batches each,
    then read the table back and count what arrived."""
    from pyiceberg.exceptions import CommitFailedException

    warehouse = Path(warehouse)
    props = RACE_LOCK_PROPERTIES if lock_properties is None else lock_properties
    ident = f"{namespace}.{table}"
    create_race_table(uri, warehouse, namespace, table, props)
    start = threading.Barrier(writers + 1)
    retries = [0] * writers
    errors: list = []

    def writer(w: int) -> None:
        try:
            cat = catalog(uri, warehouse, **props)
            tbl = cat.load_table(ident)
        except BaseException as exc:  # noqa: BLE001 - reported, the barrier must not hang
            errors.append((w, "setup", repr(exc)))
            start.abort()
            return
        try:
            start.wait()
        except threading.BrokenBarrierError:
            return
        rng = random.Random(w)
        try:
            for b in range(batches):
                data = make_batch(w, b)
                for attempt in range(max_retries + 1):
                    try:
                        tbl.append(data)
                        break
                    except CommitFailedException:
                        if attempt == max_retries:
                            raise
                        retries[w] += 1
                        time.sleep(rng.uniform(0, jitter))
                        tbl = cat.load_table(ident)
        except BaseException as exc:  # noqa: BLE001 - reported in the result
            errors.append((w, "append", repr(exc)))

    waits = _LockWaits()
    hive_log = logging.getLogger("pyiceberg.catalog.hive")
    hive_log.addHandler(waits)
    threads = [threading.Thread(target=writer, args=(w,), name=f"writer-{w}") for w in range(writers)]
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    hive_log.removeHandler(waits)

    final = catalog(uri, warehouse, **props).load_table(ident)
    rows = final.scan().to_arrow()
    triples = list(zip(rows.column("writer").to_pylist(), rows.column("batch").to_pylist(),
                       rows.column("seq").to_pylist()))
    per_triple = Counter(triples)
    counts = Counter((w, b) for w, b, _ in triples)
    missing = [(w, b) for w in range(writers) for b in range(batches)
               if counts.get((w, b), 0) != ROWS_PER_BATCH or
               any(per_triple.get((w, b, s), 0) < 1 for s in range(ROWS_PER_BATCH))]
    return RaceResult(side=side, writers=writers, batches=batches, wall_seconds=wall,
                      commits=writers * batches, retries=sum(retries),
                      retries_per_writer=retries, lock_waits=waits.count, counts={f"{w},{b}": n for (w, b), n in counts.items()},
                      duplicates=sum(n - 1 for n in per_triple.values() if n > 1),
                      missing=missing, snapshots=len(final.metadata.snapshots), errors=errors)


# --- the stock HMS with its lock tables -------------------------------------------------------

def start_stock(workdir: Path) -> metastores.MetastoreProcess:
    return metastores.start_stock_hms(workdir, with_transactions=True)


# --- the program ------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hms_proxy.bench.iceberg_race", description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--max-retries", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=1, help="races per side (fresh table each)")
    ap.add_argument("--pyiceberg-lock-defaults", action="store_true",
                    help="poll WAITING locks with pyiceberg's defaults (2 s, 4 s, 8 s, then fail)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    logging.getLogger("pyiceberg").propagate = False   # the waits are counted, not printed
    lock_props = {} if args.pyiceberg_lock_defaults else RACE_LOCK_PROPERTIES

    work = Path(tempfile.mkdtemp(prefix="iceberg-race-"))
    procs: dict[str, metastores.MetastoreProcess] = {}
    results: dict[str, list[RaceResult]] = {"proxy": [], "stock": []}
    try:
        print("starting our server and the stock HMS 2.3.10 ...", file=sys.stderr)
        procs["proxy"] = metastores.start_proxy(work / "proxy", cwd=work)
        procs["stock"] = start_stock(work / "stock")
        for r in range(args.rounds):
            for side in ("stock", "proxy"):
                warehouse = work / f"iceberg-{side}"
                warehouse.mkdir(exist_ok=True)
                res = run_race(procs[side].uri, warehouse, f"race_{r}", side=side,
                               writers=args.writers, batches=args.batches,
                               max_retries=args.max_retries, lock_properties=lock_props)
                results[side].append(res)
                print(f"round {r + 1} {side:5}: {res.wall_seconds:7.2f} s, {res.retries:3d} retries, "
                      f"{res.lock_waits:3d} lock waits, "
                      f"{res.snapshots} snapshots, exactly once: {res.exactly_once}"
                      + (f", errors: {res.errors}" if res.errors else ""), file=sys.stderr)
    finally:
        for p in procs.values():
            p.stop()

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    print(f"pyiceberg racing writers: {args.writers} writers x {args.batches} batches of "
          f"{ROWS_PER_BATCH} rows, one table, lock poll "
          f"{'pyiceberg defaults' if args.pyiceberg_lock_defaults else '50 ms'}")
    print(f"{'side':<6} {'wall s':>8} {'retries':>8} {'lock waits':>11} {'snapshots':>10} {'exactly once':>13}")
    for side in ("stock", "proxy"):
        for res in results[side]:
            print(f"{side:<6} {res.wall_seconds:8.2f} {res.retries:8d} {res.lock_waits:11d} {res.snapshots:10d} "
                  f"{str(res.exactly_once):>13}")
    ok = all(r.exactly_once for rs in results.values() for r in rs)
    if results["stock"] and results["proxy"]:
        s = med([r.wall_seconds for r in results["stock"]])
        p = med([r.wall_seconds for r in results["proxy"]])
        print(f"median wall: stock {s:.2f} s, ours {p:.2f} s; ratio {s / p:.2f}x "
              f"(target >= 2x: {'met' if s / p >= 2 else 'missed'})")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {side: [asdict(r) for r in rs] for side, rs in results.items()}, indent=1, default=str))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
