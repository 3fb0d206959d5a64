"""pyiceberg racing writers: N writers append K small batches each to ONE Iceberg table through
pyiceberg's HiveCatalog, retrying on CommitFailedException, against our server and the stock
HMS 2.3.10 in the same run; prints the wall time per side, the retries and the ratio.

    .venv/bin/python -m hms_proxy.tools.bench.iceberg_race [--writers 8] [--batches 5]

Each writer has its own HiveCatalog (its own Thrift connection). A commit is pyiceberg's:
lock(EXCLUSIVE on the table), get_table, write the new metadata file, alter_table with the new
``metadata_location``, unlock; a writer whose base snapshot is stale gets CommitFailedException,
reloads the table and appends again. ``run_race`` is also what tests/e2e/pyiceberg/test_pyiceberg.py
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

from hms_proxy.tools import metastores

# What users run (the default): pyiceberg's own commit retries (``commit.retry.*`` untouched:
# 4 retries inside append(), sleeping 100, 200, 400, 800 ms plus jitter, refreshing the table
# in between) and lock checks as a user tunes them for a busy table: pyiceberg polls a WAITING
# lock with wait_exponential(multiplier=2, min, max), so with max 0.5 s every poll sleeps 0.5 s,
# up to 60 polls. Each writer appends one batch of one row.
USER_LOCK_PROPERTIES = {
    "lock-check-min-wait-time": "0.05",
    "lock-check-max-wait-time": "0.5",
    "lock-check-retries": "60",
}
USER_TABLE_PROPERTIES: dict[str, str] = {}
# The tuned configuration of earlier measurements (--tuned): polls every 10-50 ms, and
# pyiceberg's in-append retries off so that the race's own loop (reload, append again, 0-20 ms
# jitter) is the only retry and every CommitFailedException is counted; 5 batches of 10 rows.
RACE_LOCK_PROPERTIES = {
    "lock-check-min-wait-time": "0.01",
    "lock-check-max-wait-time": "0.05",
    "lock-check-retries": "400",
}
RACE_TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}
ROWS_PER_BATCH = 10


class _LockWaits(logging.Handler):
    """Counts pyiceberg's "Wait on lock" warnings: check_lock calls that found the lock WAITING."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        if record.getMessage().startswith("Wait on lock"):
            self.count += 1


class _Calls:
    """Per writer thread: what its commits spent where, from pyiceberg's Thrift client calls
    (lock, check_lock, alter_table, unlock) and its retry log lines."""

    def __init__(self):
        self.by_thread: dict[str, dict] = {}
        self._lock = threading.Lock()

    def row(self) -> dict:
        name = threading.current_thread().name
        with self._lock:
            return self.by_thread.setdefault(name, {
                "attempts": 0, "waiting_answers": 0, "lock_wait_s": 0.0, "acquired": 0,
                "lock_failed": 0, "altered": 0, "backoff_s": 0.0, "backoffs": 0})

    def patch(self):
        """Wrap pyiceberg's generated client class; returns the undo."""
        from hive_metastore.ttypes import LockState
        from pyiceberg.catalog import hive

        client = hive.Client
        saved = {n: getattr(client, n) for n in ("lock", "check_lock", "unlock",
                                                  "alter_table_with_environment_context")}
        calls = self
        local = threading.local()

        def lock(this, rqst):
            row = calls.row()
            row["attempts"] += 1
            local.asked = time.perf_counter()
            resp = saved["lock"](this, rqst)
            if resp.state == LockState.ACQUIRED:  # maybe after the server held it back
                row["acquired"] += 1
                row["lock_wait_s"] += time.perf_counter() - local.asked
            elif resp.state == LockState.WAITING:
                row["waiting_answers"] += 1
            return resp

        def check_lock(this, rqst):
            row = calls.row()
            resp = saved["check_lock"](this, rqst)
            if resp.state == LockState.ACQUIRED:
                row["acquired"] += 1
                row["lock_wait_s"] += time.perf_counter() - local.asked
            elif resp.state == LockState.WAITING:
                row["waiting_answers"] += 1
            return resp

        def unlock(this, rqst):
            return saved["unlock"](this, rqst)

        def alter(this, *a, **kw):
            out = saved["alter_table_with_environment_context"](this, *a, **kw)
            calls.row()["altered"] += 1
            return out

        client.lock, client.check_lock, client.unlock = lock, check_lock, unlock
        client.alter_table_with_environment_context = alter

        def undo():
            for n, f in saved.items():
                setattr(client, n, f)
        return undo


class _RetryLog(logging.Handler):
    """pyiceberg's "Commit failed due to a concurrent update, retrying (i/n) in N ms": the
    backoff sleeps of its in-append retries, per thread."""

    def __init__(self, calls: _Calls):
        super().__init__(logging.WARNING)
        self.calls = calls

    def emit(self, record):
        text = record.getMessage()
        if text.startswith("Commit failed due to a concurrent update"):
            row = self.calls.row()
            row["backoffs"] += 1
            try:
                row["backoff_s"] += float(text.rsplit(" in ", 1)[1].split()[0]) / 1000
            except (IndexError, ValueError):
                pass


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
    rows: int = ROWS_PER_BATCH                   # rows per batch
    per_writer: dict = field(default_factory=dict)  # writer -> where its time went (_Calls)

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
                      lock_properties: dict | None = None, table_properties: dict | None = None):
    """The namespace (located in ``warehouse``) and an empty table with the race's schema."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, NestedField

    cat = catalog(uri, warehouse, **(lock_properties or {}))
    cat.create_namespace(namespace, {"location": f"file://{warehouse}/{namespace}.db"})
    schema = Schema(NestedField(1, "writer", IntegerType(), required=False),
                    NestedField(2, "batch", IntegerType(), required=False),
                    NestedField(3, "seq", IntegerType(), required=False))
    return cat.create_table(f"{namespace}.{table}", schema=schema,
                            properties=RACE_TABLE_PROPERTIES if table_properties is None
                            else table_properties)


def run_race(uri: str, warehouse: Path | str, namespace: str, *, side: str = "",
             writers: int = 8, batches: int = 5, max_retries: int = 50, jitter: float = 0.02,
             table: str = "race", lock_properties: dict | None = None,
             table_properties: dict | None = None, rows: int = ROWS_PER_BATCH) -> RaceResult:
    """Create ``namespace.table``, race ``writers`` threads appending ``batches`` batches of
    ``rows`` rows each, then read the table back and count what arrived. Lock and table
    properties default to the tuned configuration (RACE_*); USER_* is what users run."""
    from pyiceberg.exceptions import CommitFailedException

    warehouse = Path(warehouse)
    props = RACE_LOCK_PROPERTIES if lock_properties is None else lock_properties
    ident = f"{namespace}.{table}"
    create_race_table(uri, warehouse, namespace, table, props, table_properties)
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
                data = make_batch(w, b, rows)
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
    calls = _Calls()
    retry_log = _RetryLog(calls)
    table_log = logging.getLogger("pyiceberg.table")
    table_log.addHandler(retry_log)
    undo = calls.patch()
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
    table_log.removeHandler(retry_log)
    undo()

    final = catalog(uri, warehouse, **props).load_table(ident)
    read = final.scan().to_arrow()
    triples = list(zip(read.column("writer").to_pylist(), read.column("batch").to_pylist(),
                       read.column("seq").to_pylist()))
    per_triple = Counter(triples)
    counts = Counter((w, b) for w, b, _ in triples)
    missing = [(w, b) for w in range(writers) for b in range(batches)
               if counts.get((w, b), 0) != rows or
               any(per_triple.get((w, b, s), 0) < 1 for s in range(rows))]
    per_writer = {}
    for name, row in sorted(calls.by_thread.items()):
        if name.startswith("writer-"):
            w = int(name.split("-")[1])
            row = dict(row, outer_retries=retries[w], lock_wait_s=round(row["lock_wait_s"], 3),
                       backoff_s=round(row["backoff_s"], 3))
            row["conflicts"] = row["acquired"] - row["altered"]  # held the lock, base stale
            per_writer[w] = row
    return RaceResult(side=side, writers=writers, batches=batches, wall_seconds=wall,
                      commits=writers * batches, retries=sum(retries),
                      retries_per_writer=retries, lock_waits=waits.count, counts={f"{w},{b}": n for (w, b), n in counts.items()},
                      duplicates=sum(n - 1 for n in per_triple.values() if n > 1),
                      missing=missing, snapshots=len(final.metadata.snapshots), errors=errors,
                      rows=rows, per_writer=per_writer)


# --- the stock HMS with its lock tables -------------------------------------------------------

def start_stock(workdir: Path) -> metastores.MetastoreProcess:
    return metastores.start_stock_hms(workdir, with_transactions=True)


# --- the program ------------------------------------------------------------------------------

CONFIGS = {
    # name: (lock properties, table properties, batches per writer, rows per batch)
    "users": (USER_LOCK_PROPERTIES, USER_TABLE_PROPERTIES, 1, 1),
    "tuned": (RACE_LOCK_PROPERTIES, RACE_TABLE_PROPERTIES, 5, ROWS_PER_BATCH),
}


def _med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def _where(res: RaceResult) -> str:
    """Where one race's time went, summed over its writers."""
    tot = Counter()
    for row in res.per_writer.values():
        tot.update({k: v for k, v in row.items() if isinstance(v, (int, float))})
    return (f"attempts {tot['attempts']}, WAITING answers {tot['waiting_answers']}, "
            f"lock wait {tot['lock_wait_s']:.1f} s, conflicts {tot['conflicts']}, "
            f"pyiceberg backoffs {tot['backoffs']} ({tot['backoff_s']:.1f} s), "
            f"outer retries {tot['outer_retries']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hms_proxy.tools.bench.iceberg_race",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="users",
                    help="users (default): pyiceberg's commit retries, lock checks 0.05-0.5 s "
                         "x 60, one row per writer; tuned: the race's own retries only, "
                         "lock checks every 10-50 ms, 5 batches of 10 rows")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--batches", type=int, default=None, help="per writer (default: the config's)")
    ap.add_argument("--rows", type=int, default=None, help="per batch (default: the config's)")
    ap.add_argument("--max-retries", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5, help="races per side, interleaved "
                    "(fresh table each; default 5)")
    ap.add_argument("--proxy-arg", action="append", default=[],
                    help="an option for our server (repeat), e.g. --proxy-arg=--lock-wait=0")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    logging.getLogger("pyiceberg").propagate = False   # the waits are counted, not printed
    lock_props, table_props, batches, rows = CONFIGS[args.config]
    batches = args.batches or batches
    rows = args.rows or rows

    work = Path(tempfile.mkdtemp(prefix="iceberg-race-"))
    procs: dict[str, metastores.MetastoreProcess] = {}
    results: dict[str, list[RaceResult]] = {"proxy": [], "stock": []}
    try:
        print("starting our server and the stock HMS 2.3.10 ...", file=sys.stderr)
        procs["proxy"] = metastores.start_proxy(work / "proxy", *args.proxy_arg, cwd=work)
        procs["stock"] = start_stock(work / "stock")
        for r in range(args.rounds):
            order = ("stock", "proxy") if r % 2 == 0 else ("proxy", "stock")
            for side in order:
                warehouse = work / f"iceberg-{side}"
                warehouse.mkdir(exist_ok=True)
                res = run_race(procs[side].uri, warehouse, f"race_{r}", side=side,
                               writers=args.writers, batches=batches, rows=rows,
                               max_retries=args.max_retries, lock_properties=lock_props,
                               table_properties=table_props)
                results[side].append(res)
                print(f"round {r + 1} {side:5}: {res.wall_seconds:7.2f} s, exactly once: "
                      f"{res.exactly_once}; {_where(res)}"
                      + (f", errors: {res.errors}" if res.errors else ""), file=sys.stderr)
    finally:
        for p in procs.values():
            p.stop()

    print(f"pyiceberg racing writers ({args.config}): {args.writers} writers x {batches} "
          f"batch(es) of {rows} row(s), one table; lock properties {lock_props}, table "
          f"properties {table_props or 'pyiceberg defaults'}")
    print(f"{'side':<6} {'round':>5} {'wall s':>8}  where the time went")
    for side in ("stock", "proxy"):
        for i, res in enumerate(results[side], 1):
            print(f"{side:<6} {i:5d} {res.wall_seconds:8.2f}  {_where(res)}"
                  + ("" if res.exactly_once else "  NOT EXACTLY ONCE"))
    ok = all(r.exactly_once for rs in results.values() for r in rs)
    if results["stock"] and results["proxy"]:
        st = _med([r.wall_seconds for r in results["stock"]])
        pr = _med([r.wall_seconds for r in results["proxy"]])
        print(f"median wall: stock {st:.2f} s, ours {pr:.2f} s; ratio {st / pr:.2f}x "
              f"(target >= 2x: {'met' if st / pr >= 2 else 'missed'})")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {side: [asdict(r) for r in rs] for side, rs in results.items()}, indent=1, default=str))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
