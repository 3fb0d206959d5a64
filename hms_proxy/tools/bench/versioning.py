"""``hms-proxy bench versioning``: the versioning engine's costs on a large store, no server.

Builds (or reuses) a store of N partitions over T tables committed on ``main``, and a small one of
``--small`` partitions over the same T tables, then times on each, directly through
:class:`kvmodel.store.contract.VersionedStore` and :mod:`kvmodel.versioning`:

* branch creation;
* a commit of 100 changed partitions, two ways: 100 consecutive partitions of one table (what an
  ``INSERT OVERWRITE`` of one day writes) and 100 partitions at random over all tables;
* the diff (``diff_refs``) of the two commits around each of those;
* the merge (``merge_refs``) of a branch that added 1,000 partitions (a new day in 10 tables)
  into a branch that moved on meanwhile (a real 3-way merge, no conflicts);
* each of commit, diff and merge at N keys against the same change on the small store: the
  cost should follow the change, not the size of the store;
* a point read at a commit ``--history`` commits old against the same read at the head, warm
  (the old tree already in the process's cache) and cold (a freshly opened store).

Every figure is the median of ``--repeat`` repetitions (point reads: ``--reads`` samples).
Progress goes to stderr, the table to stdout.
"""
from __future__ import annotations

import argparse
import datetime
import random
import secrets
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.tools import lakefs_local
from hms_proxy.tools.bench.report import figure, logger, machine_info, write_outputs
from kvmodel import catalog, codec
from kvmodel.catalog import part_key
from kvmodel.locations import open_catalog_store
from kvmodel.versioning import diff_refs, merge_refs

DB = "bench"
COLUMNS = 10
BUILD_CHUNK = 20_000         # partitions staged per write transaction while building
CHANGE = 100                 # partitions per measured commit / diff
MERGE_TABLES, MERGE_PER_TABLE = 10, 100   # the merge adds a new day of 100 partitions to 10 tables
FIRST_DAY = datetime.date(2024, 1, 1)
LAYOUT = "v1"                # bump when the generated content changes (a reused store must match)

TARGETS = {  # key -> (label, target, unit) ; unit "ms" (at most) or "x" (ratio, at most)
    "branch": ("branch creation", 5.0, "ms"),
    "commit_contiguous": ("commit of 100 changed partitions (one table, consecutive)", 50.0, "ms"),
    "commit_scattered": ("commit of 100 changed partitions (random, all tables)", 50.0, "ms"),
    "diff_contiguous": ("diff_refs of 2 commits 100 partitions apart (one table)", 20.0, "ms"),
    "diff_scattered": ("diff_refs of 2 commits 100 partitions apart (random)", 20.0, "ms"),
    "merge": ("merge_refs of {adds} partition adds (no conflicts)", 200.0, "ms"),
    "commit_ratio": ("commit (one table): {big} vs {small} keys", 1.5, "x"),
    "diff_ratio": ("diff (one table): {big} vs {small} keys", 1.5, "x"),
    "merge_ratio": ("merge: {big} vs {small} keys", 1.5, "x"),
    "commit_one": ("commit of 1 changed partition (the history commits)", None, "ms"),
    "read_head": ("read a partition at the head commit (warm)", None, "ms"),
    "read_old": ("read a partition {h} commits old (warm)", None, "ms"),
    "read_ratio": ("read {h} commits old vs at the head (warm)", 2.0, "x"),
    "read_branch": ("read a partition at the branch (name)", None, "ms"),
    "read_ancestry": ("read a partition at branch~{h}", None, "ms"),
    "read_cold_head": ("read at the head commit, freshly opened store", None, "ms"),
    "read_cold_old": ("read {h} commits old, freshly opened store", None, "ms"),
    "read_cold_ratio": ("read {h} commits old vs at the head (cold)", 2.0, "x"),
}


log = logger("bench versioning")


# --- the command line -----------------------------------------------------------------------
def register(modes) -> argparse.ArgumentParser:
    """Add ``versioning`` to the sub-parsers of ``hms-proxy bench``."""
    p = modes.add_parser(
        "versioning", help="time branch, commit, diff, merge and history reads on a large store",
        description="Time the versioning engine directly on a store (no server): branch "
                    "creation, commits, diffs and merges on a store of --partitions partitions "
                    "against the same changes on a store of --small partitions, and point reads "
                    "at an old commit against the head. Reproduce the published figures with: "
                    "hms-proxy bench versioning")
    p.add_argument("--store", metavar="DIR",
                   help="directory for the two stores (DIR/large, DIR/small); kept afterwards, "
                        "and a store already built there with the same sizes is reused "
                        "(default: a temporary directory, deleted afterwards unless --keep)")
    p.add_argument("--partitions", type=int, default=1_000_000,
                   help="partitions in the large store (default 1000000)")
    p.add_argument("--tables", type=int, default=100,
                   help="tables the partitions are spread over (default 100)")
    p.add_argument("--small", type=int, default=10_000,
                   help="partitions in the small store the ratios compare with (default 10000)")
    p.add_argument("--history", type=int, default=1000,
                   help="commits made before the old-vs-head read test (default 1000)")
    p.add_argument("--repeat", type=int, default=7,
                   help="repetitions of each branch/commit/diff/merge measurement (default 7)")
    p.add_argument("--reads", type=int, default=200,
                   help="samples of each warm point read (default 200)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--json", metavar="FILE", help="write every sample and the medians as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the results table as Markdown")
    p.add_argument("--keep", action="store_true", help="keep the temporary store directory")
    p.add_argument("--start-lakefs", action="store_true",
                   help="measure lakeFS stores instead: build and start a local lakeFS (its "
                        "data in DIR/lakefs with --store, kept and reused like the embedded "
                        "stores) and build the two stores as its repositories 'large' and "
                        "'small', committing every 20,000 partitions so that an interrupted "
                        "build resumes")
    p.add_argument("--lakefs-range-entries", type=int, default=None, metavar="N",
                   help="with --start-lakefs: lakeFS's committed.permanent."
                        "range_raggedness_entries (mean entries per range; lakeFS's default "
                        "50,000, its 20 MB range cap cutting first with our entries); the "
                        "repositories keep the ranges they were built with")
    p.add_argument("--lakefs-batch-delay", type=lakefs_local.duration_arg, default=None,
                   metavar="DURATION",
                   help="with --start-lakefs: " + lakefs_local.BATCH_DELAY_HELP)
    p.set_defaults(func=cmd_versioning)
    return p


# --- generated content ----------------------------------------------------------------------
def table_name(t: int) -> str:
    return f"tbl_{t:04d}"


class Generator:
    """Spark-like partitions: ``ds`` (a day) and ``hr``, each with its own storage descriptor
    (10 commented columns, Parquet, its location) and Spark's statistics parameters."""

    def __init__(self, partitions: int, tables: int):

        self.t = ttypes
        self.partitions, self.tables = partitions, tables
        self.per_table = [partitions // tables + (1 if i < partitions % tables else 0)
                          for i in range(tables)]
        self.hours = [max(1, -(-n // 100)) for n in self.per_table]  # 100 days per table
        self.cols = [ttypes.FieldSchema(f"col_{c:02d}", typ, f"column {c} of the bench table, "
                                        f"as loaded by the nightly job ({typ})")
                     for c, typ in enumerate(["bigint", "string", "double", "timestamp",
                                              "decimal(18,4)", "struct<a:int,b:string>",
                                              "map<string,string>", "array<string>", "int",
                                              "boolean"])]

    def part_name(self, t: int, i: int) -> tuple[str, str, str]:
        day, hr = divmod(i, self.hours[t])
        ds = (FIRST_DAY + datetime.timedelta(days=day)).isoformat()
        return ds, str(hr), f"ds={ds}/hr={hr}"

    def key(self, t: int, i: int) -> str:

        return part_key(DB, table_name(t), self.part_name(t, i)[2])

    def partition(self, t: int, i: int, version: int = 0) -> tuple[str, bytes]:

        t_ = self.t
        ds, hr, name = self.part_name(t, i)
        tbl = table_name(t)
        rows = 1_000_000 + 7919 * i + version
        sd = t_.StorageDescriptor(
            cols=self.cols,
            location=f"s3a://bench-warehouse/{DB}.db/{tbl}/{name}",
            inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            compressed=False, numBuckets=-1,
            serdeInfo=t_.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde."
                                         "ParquetHiveSerDe", {"serialization.format": "1"}),
            bucketCols=[], sortCols=[], parameters={},
            skewedInfo=t_.SkewedInfo([], [], {}), storedAsSubDirectories=False)
        part = t_.Partition(
            values=[ds, hr], dbName=DB, tableName=tbl, createTime=1_700_000_000 + i,
            lastAccessTime=0, sd=sd,
            parameters={"numFiles": str(4 + i % 7), "totalSize": str(rows * 37),
                        "numRows": str(rows), "rawDataSize": str(rows * 120),
                        "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}',
                        "transient_lastDdlTime": str(1_700_000_000 + i + version),
                        "spark.sql.statistics.numRows": str(rows),
                        "spark.sql.statistics.totalSize": str(rows * 37),
                        "spark.sql.create.version": "3.5.1",
                        "bench.version": str(version)})
        return catalog.part_key(DB, tbl, name), codec.encode(part)

    def catalog_entries(self) -> list[tuple[str, bytes]]:
        """The database and the tables."""

        t_ = self.t
        out = [(catalog.db_key(DB), codec.encode(t_.Database(
            DB, "versioning bench", f"s3a://bench-warehouse/{DB}.db", {}, ownerName="bench",
            ownerType=t_.PrincipalType.USER)))]
        for t in range(self.tables):
            tbl = table_name(t)
            sd = t_.StorageDescriptor(
                self.cols, f"s3a://bench-warehouse/{DB}.db/{tbl}",
                "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", False, -1,
                t_.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                             {"serialization.format": "1"}), [], [], {},
                t_.SkewedInfo([], [], {}), False)
            table = t_.Table(tbl, DB, "bench", 1_700_000_000, 0, 0, sd,
                             [t_.FieldSchema("ds", "string"), t_.FieldSchema("hr", "int")],
                             {"spark.sql.sources.provider": "parquet", "EXTERNAL": "TRUE"},
                             None, None, "EXTERNAL_TABLE")
            out.append((catalog.table_key(DB, tbl), codec.encode(table)))
        return out


# --- building ---------------------------------------------------------------------------------
def _fingerprint(partitions: int, tables: int) -> dict[str, str]:
    return {"bench": "versioning", "layout": LAYOUT, "partitions": str(partitions),
            "tables": str(tables)}


def build_store(location, gen: Generator, commit_chunks: bool = False,
                options: dict | None = None) -> dict:
    """Open the store at ``location``, building its content on ``main`` unless a previous run
    already did. Returns the build's timings.

    ``commit_chunks`` (lakeFS): commit each transaction of :data:`BUILD_CHUNK` partitions, the
    commit's metadata counting the partitions built so far, so that a build stopped midway
    resumes where it stopped; the embedded store stages everything and commits once.
    ``options``: what :func:`open_catalog_store` passes to a lakeFS store."""

    store = open_catalog_store(location, **(options or {}))
    fp = _fingerprint(gen.partitions, gen.tables)
    head = store.get_commit(store.resolve("main").commit)
    if head.metadata == fp:
        log(f"{location}: reusing the store built by an earlier run")
        return {"store": store, "reused": True, "seconds": None}
    done = 0
    partial = dict(head.metadata or {})
    if commit_chunks and partial.pop("built", None) is not None and partial == fp:
        done = int(head.metadata["built"])
        log(f"{location}: resuming the build after {done:,} partitions")
    elif head.parents:
        raise SystemExit(f"hms-proxy bench versioning: {location} holds another store; "
                         "use an empty directory")
    log(f"{location}: building {gen.partitions:,} partitions over {gen.tables} tables")
    t0 = time.perf_counter()
    staged = 0
    value_bytes = 0
    gen_s = 0.0
    commit_s = 0.0
    if not done:
        with store.write("main") as txn:
            txn.put_many(gen.catalog_entries())
    batch: list[tuple[str, bytes]] = []

    def flush():
        nonlocal batch, commit_s
        batch.sort()
        with store.write("main") as txn:
            txn.put_many(batch)
        batch = []
        if commit_chunks:
            c0 = time.perf_counter()
            store.commit("main", f"versioning bench: {staged} of {gen.partitions} partitions",
                         "bench", {**fp, "built": str(staged)})
            commit_s += time.perf_counter() - c0

    seen = 0
    for t in range(gen.tables):
        for i in range(gen.per_table[t]):
            seen += 1
            if seen <= done:
                continue
            g0 = time.perf_counter()
            kv = gen.partition(t, i)
            gen_s += time.perf_counter() - g0
            batch.append(kv)
            value_bytes += len(kv[1])
            staged += 1
            if len(batch) >= BUILD_CHUNK:
                flush()
                if staged % (BUILD_CHUNK * (1 if commit_chunks else 10)) == 0:
                    log(f"  staged {done + staged:,} partitions "
                        f"({time.perf_counter() - t0:.0f} s)")
    if batch:
        flush()
    t1 = time.perf_counter()
    log(f"  staged {done + staged:,} partitions in {t1 - t0:.1f} s; committing")
    store.commit("main", f"versioning bench: {gen.partitions} partitions over {gen.tables} "
                         "tables", "bench", fp, allow_empty=commit_chunks)
    t2 = time.perf_counter()
    commit_s += t2 - t1
    log(f"  committed in {t2 - t1:.1f} s")
    return {"store": store, "reused": False, "seconds": round(t2 - t0, 2),
            "stage_seconds": round(t2 - t0 - commit_s, 2), "generate_seconds": round(gen_s, 2),
            "commit_seconds": round(commit_s, 2), "partitions": staged, "resumed_after": done,
            "chunk_commits": commit_chunks, "mean_value_bytes": round(value_bytes / max(staged, 1))}


def _db_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("store.db*"))


# --- measurements -------------------------------------------------------------------------------
def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return _ms(time.perf_counter() - t0), out


@dataclass
class Scale:
    """The branch/commit/diff/merge samples on one store."""

    name: str
    gen: Generator
    samples: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, ms: float) -> None:
        self.samples.setdefault(key, []).append(ms)

    def median(self, key: str) -> float | None:
        s = self.samples.get(key)
        return statistics.median(s) if s else None


def measure_changes(store, gen: Generator, scale: Scale, run: str, repeat: int,
                    rng: random.Random) -> None:

    # branch creation: a new branch at main's head each time
    for r in range(repeat):
        ms, _ = _timed(lambda: store.create_branch(f"{run}-branch-{r}", "main"))
        scale.add("branch", ms)
    log(f"  [{scale.name}] branch creation: median {scale.median('branch'):.2f} ms")

    # commits of 100 changed partitions, and the diffs of the commits around them
    work = f"{run}-work"
    store.create_branch(work, "main")
    for variant in ("contiguous", "scattered"):
        for r in range(repeat):
            version = 1 + r + (0 if variant == "contiguous" else repeat)
            if variant == "contiguous":
                t = (r * 7) % gen.tables
                n = gen.per_table[t]
                start = rng.randrange(max(n - CHANGE, 0) + 1)
                picks = [(t, i) for i in range(start, min(start + CHANGE, n))]
            else:
                population = gen.partitions
                picks = []
                for idx in rng.sample(range(population), min(CHANGE, population)):
                    t = idx % gen.tables
                    picks.append((t, min(idx // gen.tables, gen.per_table[t] - 1)))
            items = sorted(gen.partition(t, i, version) for t, i in set(picks))
            before = store.resolve(work).commit
            with store.write(work) as txn:
                txn.put_many(items)
            ms, commit = _timed(lambda: store.commit(work, f"{variant} change {r}", "bench"))
            scale.add(f"commit_{variant}", ms)
            ms, report = _timed(lambda: diff_refs(store, before, commit.id))
            if len(report.changes) != len(items):
                raise RuntimeError(f"diff found {len(report.changes)} changes, expected "
                                   f"{len(items)}")
            scale.add(f"diff_{variant}", ms)
        log(f"  [{scale.name}] commit of 100 ({variant}): median "
            f"{scale.median(f'commit_{variant}'):.1f} ms; diff: median "
            f"{scale.median(f'diff_{variant}'):.1f} ms")

    # merge: a branch adds a new day (100 partitions) to 10 tables while the destination moves on
    dest = f"{run}-dest"
    store.create_branch(dest, "main")
    tables = min(MERGE_TABLES, gen.tables)
    for r in range(repeat):
        src = f"{run}-src-{r}"
        store.create_branch(src, dest)
        day = (FIRST_DAY + datetime.timedelta(days=1000 + r)).isoformat()
        adds = []
        for j in range(tables):
            t = (r * tables + j) % gen.tables
            key, value = gen.partition(t, 0, 0)
            part = codec.decode(gen.t.Partition, value)
            for hr in range(MERGE_PER_TABLE):
                name = f"ds={day}/hr={hr}"
                part.values = [day, str(hr)]
                part.sd.location = f"s3a://bench-warehouse/{DB}.db/{table_name(t)}/{name}"
                adds.append((catalog.part_key(DB, table_name(t), name), codec.encode(part)))
        adds.sort()
        with store.write(src) as txn:
            txn.put_many(adds)
        store.commit(src, f"add {len(adds)} partitions", "bench")
        # the destination moves on meanwhile: one partition altered elsewhere
        t = (r * tables + tables) % gen.tables
        with store.write(dest) as txn:
            txn.put_many([gen.partition(t, 1 % gen.per_table[t], 10_000 + r)])
        store.commit(dest, f"alter a partition {r}", "bench")
        ms, result = _timed(lambda: merge_refs(store, src, dest, author="bench"))
        if result.commit is None or result.conflicts or len(result.applied) != len(adds):
            raise RuntimeError(f"merge applied {len(result.applied)} changes with "
                               f"{len(result.conflicts)} conflicts, expected {len(adds)} adds")
        scale.add("merge", ms)
    log(f"  [{scale.name}] merge of {tables * MERGE_PER_TABLE} adds: median "
        f"{scale.median('merge'):.1f} ms")


def measure_history(location, store, gen: Generator, run: str, history: int, reads: int,
                    repeat: int, rng: random.Random, options: dict | None = None
                    ) -> dict[str, list[float]]:
    """``history`` one-partition commits on a branch, then point reads at the oldest of them
    and at the head. Reads use partitions no history commit touched (same value both sides)."""

    samples: dict[str, list[float]] = {"commit_one": []}
    branch = f"{run}-hist"
    store.create_branch(branch, "main")
    old = store.resolve(branch).commit
    touched = set()
    t0 = time.perf_counter()
    for h in range(history):
        t = rng.randrange(gen.tables)
        i = rng.randrange(gen.per_table[t])
        touched.add((t, i))
        with store.write(branch) as txn:
            txn.put_many([gen.partition(t, i, 20_000 + h)])
        ms, _ = _timed(lambda: store.commit(branch, f"history {h}", "bench"))
        samples["commit_one"].append(ms)
        if (h + 1) % 250 == 0:
            log(f"  history: {h + 1} commits ({time.perf_counter() - t0:.0f} s)")
    head = store.resolve(branch).commit
    expr = f"{branch}~{history}"
    if store.resolve(expr).commit != old:
        raise RuntimeError(f"{expr} is not the history's first commit")

    def pick() -> str:
        while True:
            t = rng.randrange(gen.tables)
            i = rng.randrange(gen.per_table[t])
            if (t, i) not in touched:
                return gen.key(t, i)

    cases = [("read_head", head), ("read_old", old), ("read_branch", branch),
             ("read_ancestry", expr)]
    for key, _ in cases:
        samples[key] = []
    for ref in (head, old, branch, expr):  # warm-up: each tree's index in the cache
        store.get(ref, pick())
    for _ in range(reads):
        k = pick()
        order = cases[:]
        rng.shuffle(order)  # interleaved, in random order
        for name, ref in order:
            ms, value = _timed(lambda: store.get(ref, k))
            if value is None:
                raise RuntimeError(f"{k} missing at {ref}")
            samples[name].append(ms)

    # cold: a freshly opened store per read (empty caches; the OS page cache stays warm)
    samples["read_cold_head"], samples["read_cold_old"] = [], []
    for _ in range(repeat):
        k = pick()
        for name, ref in (("read_cold_head", head), ("read_cold_old", old)):
            fresh = open_catalog_store(location, **(options or {}))
            try:
                ms, value = _timed(lambda: fresh.get(ref, k))
            finally:
                fresh.close()
            if value is None:
                raise RuntimeError(f"{k} missing at {ref}")
            samples[name].append(ms)
    return samples


# --- the run ---------------------------------------------------------------------------------------


def command_line(args) -> str:
    parts = ["hms-proxy", "bench", "versioning"]
    defaults = {"partitions": 1_000_000, "tables": 100, "small": 10_000, "history": 1000,
                "repeat": 7, "reads": 200, "seed": 1}
    for name, default in defaults.items():
        value = getattr(args, name)
        if value != default:
            parts += [f"--{name}", str(value)]
    if args.store:
        parts += ["--store", args.store]
    if getattr(args, "start_lakefs", False):
        parts.append("--start-lakefs")
    if getattr(args, "lakefs_range_entries", None):
        parts += ["--lakefs-range-entries", str(args.lakefs_range_entries)]
    if getattr(args, "lakefs_batch_delay", None) is not None:
        parts += ["--lakefs-batch-delay", args.lakefs_batch_delay]
    return " ".join(parts)


def _start_lakefs(root: Path, cleanup: list, range_entries: int | None = None,
                  batch_delay: str | None = None) -> dict:
    """A local lakeFS with its data under ``root/lakefs`` and the repositories 'large' and
    'small' (made unless an earlier run did): the stores' locations, by name."""
    try:
        lakefs = lakefs_local.start_lakefs(workdir=root / "lakefs", range_entries=range_entries,
                                           batch_delay=batch_delay)
    except (OSError, RuntimeError) as exc:
        raise SystemExit(f"hms-proxy bench versioning: --start-lakefs: "
                         f"{str(exc).splitlines()[0]}") from None
    cleanup.append(lakefs.stop)
    existing = lakefs.repositories()
    for name in ("large", "small"):
        if name not in existing:
            lakefs.create_repository(name)
    log(f"lakeFS {lakefs_local.DEFAULT_VERSION} at {lakefs.endpoint}, data in {root / 'lakefs'}")
    from kvmodel.store.lakefs import LakeFSConfig

    config = LakeFSConfig(lakefs.api_url, lakefs.access_key_id, lakefs.secret_access_key)
    return {"large": "lakefs://large", "small": "lakefs://small",
            "lakefs": lakefs_local.DEFAULT_VERSION, "options": {"config": config}}


def run(args) -> dict:
    for name in ("partitions", "tables", "small", "history", "repeat", "reads"):
        if getattr(args, name) < 1:
            raise SystemExit(f"hms-proxy bench versioning: --{name} must be at least 1")
    if args.partitions < args.tables or args.small < args.tables:
        raise SystemExit("hms-proxy bench versioning: --partitions and --small need at least "
                         "one partition per table")
    started = time.time()
    load_start = machine_info().get("load_average")
    temp = args.store is None
    root = Path(tempfile.mkdtemp(prefix="hms-bench-versioning-")) if temp else Path(args.store)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    run_id = "bench-" + secrets.token_hex(3)
    stores = []
    cleanup: list = []
    on_lakefs = getattr(args, "start_lakefs", False)
    try:
        locations = (_start_lakefs(root, cleanup, getattr(args, "lakefs_range_entries", None),
                                   getattr(args, "lakefs_batch_delay", None))
                     if on_lakefs else {"large": root / "large", "small": root / "small"})
        big_gen, small_gen = (Generator(args.partitions, args.tables),
                              Generator(args.small, args.tables))
        builds = {}
        options = locations.get("options")
        big = build_store(locations["large"], big_gen, on_lakefs, options)
        stores.append(big["store"])
        small = build_store(locations["small"], small_gen, on_lakefs, options)
        stores.append(small["store"])
        builds["large"] = {k: v for k, v in big.items() if k != "store"}
        builds["small"] = {k: v for k, v in small.items() if k != "store"}
        big_scale = Scale("large", big_gen)
        small_scale = Scale("small", small_gen)
        log(f"measuring on the large store ({args.partitions:,} partitions)")
        measure_changes(big["store"], big_gen, big_scale, run_id, args.repeat, rng)
        log(f"measuring on the small store ({args.small:,} partitions)")
        measure_changes(small["store"], small_gen, small_scale, run_id, args.repeat, rng)
        log(f"history: {args.history} one-partition commits on the large store")
        history = measure_history(locations["large"], big["store"], big_gen, run_id, args.history,
                                  args.reads, args.repeat, rng, options)
        for name, store in (("large", big["store"]), ("small", small["store"])):
            builds[name]["db_bytes"] = None if on_lakefs else _db_bytes(root / name)
            builds[name]["ranges"] = store.range_count(store.resolve("main").commit) \
                if hasattr(store, "range_count") else None
    finally:
        for store in stores:
            store.close()
        for stop in reversed(cleanup):
            stop()
        if temp and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif temp:
            log(f"kept the stores in {root}")

    rows = []

    def label(key):
        return TARGETS[key][0].format(big=f"{args.partitions:,}", small=f"{args.small:,}",
                                      h=f"{args.history:,}",
                                      adds=f"{min(MERGE_TABLES, args.tables) * MERGE_PER_TABLE:,}")

    def add(key, value, samples=None, small_samples=None):
        _, target, unit = TARGETS[key]
        if on_lakefs and unit == "ms":
            target = None  # the embedded store's targets; on lakeFS only the ratios have one
        met = None if target is None or value is None else value <= target
        row = {"operation": key, "label": label(key), "value": value, "unit": unit,
               "target": target, "met": met}
        if samples is not None:
            row["samples"] = [round(s, 4) for s in samples]
        if small_samples is not None:
            row["small_samples"] = [round(s, 4) for s in small_samples]
        rows.append(row)

    def ratio(a, b):
        return None if a is None or not b else a / b

    for key in ("branch", "commit_contiguous", "commit_scattered", "diff_contiguous",
                "diff_scattered", "merge"):
        add(key, big_scale.median(key), big_scale.samples[key], small_scale.samples[key])
    for key, op in (("commit_ratio", "commit_contiguous"), ("diff_ratio", "diff_contiguous"),
                    ("merge_ratio", "merge")):
        add(key, ratio(big_scale.median(op), small_scale.median(op)))
    med = {k: statistics.median(v) for k, v in history.items()}
    add("commit_one", med["commit_one"], history["commit_one"])
    add("read_head", med["read_head"], history["read_head"])
    add("read_old", med["read_old"], history["read_old"])
    add("read_ratio", ratio(med["read_old"], med["read_head"]))
    add("read_branch", med["read_branch"], history["read_branch"])
    add("read_ancestry", med["read_ancestry"], history["read_ancestry"])
    add("read_cold_head", med["read_cold_head"], history["read_cold_head"])
    add("read_cold_old", med["read_cold_old"], history["read_cold_old"])
    add("read_cold_ratio", ratio(med["read_cold_old"], med["read_cold_head"]))
    small_medians = {k: small_scale.median(k) for k in small_scale.samples}
    return {
        "command": command_line(args),
        "date": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "seconds": round(time.time() - started, 1),
        "machine": {**machine_info(), "load_average_start": load_start},
        "partitions": args.partitions, "tables": args.tables, "small": args.small,
        "history": args.history, "repeat": args.repeat, "reads": args.reads, "seed": args.seed,
        "store": f"lakeFS {locations['lakefs']}" if on_lakefs else "embedded",
        "builds": builds, "rows": rows, "small_medians": small_medians,
    }


# --- output -----------------------------------------------------------------------------------------

def render_table(result: dict) -> str:
    lines = ["| Operation | Measured (median) | Target | Met |", "|---|---:|---:|---:|"]
    for row in result["rows"]:
        target = "—" if row["target"] is None else (
            f"≤ {row['target']:g}x" if row["unit"] == "x" else f"≤ {row['target']:g} ms")
        met = "—" if row["met"] is None else ("pass" if row["met"] else "MISS")
        lines.append(f"| {row['label']} | {figure(row['value'], row['unit'])} | {target} | {met} |")
    return "\n".join(lines)


def _build_line(name: str, b: dict) -> str:
    size = (f", store files (database and WAL) {b['db_bytes'] / 2**30:.2f} GiB"
            if b.get("db_bytes") else "")
    ranges = f", {b['ranges']:,} ranges on main" if b.get("ranges") else ""
    if b.get("reused"):
        return f"- {name} store: reused from an earlier run{ranges}{size}"
    resumed = (f" (resumed after {b['resumed_after']:,} built by an earlier run)"
               if b.get("resumed_after") else "")
    commits = (f"each committed, commits {b['commit_seconds']} s in all" if b.get("chunk_commits")
               else f"then one commit in {b['commit_seconds']} s")
    return (f"- {name} store: {b['partitions']:,} partitions{resumed} of "
            f"{b['mean_value_bytes']:,} bytes on average built in {b['seconds']} s: staged with "
            f"put_many in transactions of {BUILD_CHUNK:,} in {b['stage_seconds']} s (of which "
            f"generating and encoding {b['generate_seconds']} s), {commits}{ranges}{size}")


def render_markdown(result: dict) -> str:
    m = result["machine"]
    out = [
        f"Command: `{result['command']}`",
        "",
        f"- date (start): {result['date']}, wall time {result['seconds']} s",
        f"- store: {result.get('store', 'embedded')}"
        + ("; the absolute targets are the embedded store's, only the ratios have one here"
           if result.get("store", "embedded") != "embedded" else ""),
        f"- machine: {m.get('nproc')} CPUs ({m.get('cpu', '?')}), {m.get('ram_gb', '?')} GB RAM, "
        f"Python {m.get('python')}, SQLite {m.get('sqlite', '?')}, {m.get('platform')}",
        f"- load average (1, 5, 15 min) at start {m.get('load_average_start')}, at end "
        f"{m.get('load_average')}",
        _build_line("large", result["builds"]["large"]),
        _build_line("small", result["builds"]["small"]),
        f"- medians of {result['repeat']} repetitions ({result['reads']} samples for warm reads, "
        f"{result['history']:,} history commits)",
        "",
        render_table(result),
    ]
    return "\n".join(out) + "\n"


def cmd_versioning(args) -> int:
    try:
        result = run(args)
    except RuntimeError as exc:
        raise SystemExit(f"hms-proxy bench versioning: {exc}") from None
    print(render_table(result), flush=True)
    write_outputs(args, result, lambda: render_markdown(result), log)
    return 0
