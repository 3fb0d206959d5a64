"""The embedded backend: one SQLite database (WAL mode) holding refs, staging and ranges.

Why SQLite: it is in the standard library, ACID, and several processes (a server and CLI
commands) may open the same file at once. Every write runs in ``BEGIN IMMEDIATE`` (writers queue
on the lock instead of failing on upgrade), every read view in one read transaction (a consistent
snapshot of refs and staging). With ``synchronous=NORMAL`` in WAL mode a returned transaction
survives a ``kill -9`` of the process; only an OS crash or power loss may drop the last ones.

Connections are per thread (``threading.local``): sqlite3 connections must not be shared between
threads mid-transaction, and a threaded server needs concurrent readers. Nested ``read``/``write``
contexts on one thread join the thread's open transaction.

Committed trees live in ``ranges``/``index_nodes``/``metaranges`` (see
:mod:`kvmodel.store.ranges`): ranges, index nodes and roots are stored once by content id;
decoded ones, and commits, are cached in-process by id, since they never change.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kvmodel.store import ranges
from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import (
    Branch,
    BranchName,
    Commit,
    CommitID,
    DiffEntry,
    Key,
    ReadView,
    RefExpr,
    ResolvedRef,
    Tag,
    TagName,
    Value,
    VersionedStore,
    WriteTxn,
    prefix_end,
)
from kvmodel.store.errors import (
    HeadMoved,
    InvalidRef,
    NothingToCommit,
    ProtectedRef,
    ReadOnlyRef,
    RefExists,
    RefNotFound,
    StoreCorrupt,
    StoreError,
)
from kvmodel.store.refs import (
    is_commit_prefix,
    iter_log,
    merge_base,
    parse_ref,
    validate_name,
    walk_ancestry,
)

SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refs (
    name TEXT PRIMARY KEY,              -- branches and tags share one namespace
    kind TEXT NOT NULL CHECK (kind IN ('branch', 'tag')),
    commit_id TEXT NOT NULL,
    protected INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0  -- bumped by every change to a branch's content
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS commits (
    id TEXT PRIMARY KEY, parents TEXT NOT NULL, message TEXT NOT NULL, author TEXT NOT NULL,
    created REAL NOT NULL, metadata TEXT NOT NULL, metarange BLOB NOT NULL,
    generation INTEGER NOT NULL         -- 1 + max(parents'): kept for merge-base pruning
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS staging (
    branch TEXT NOT NULL, key TEXT NOT NULL, value BLOB,  -- value NULL: tombstone
    PRIMARY KEY (branch, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ranges (id BLOB PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS metaranges (id BLOB PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS index_nodes (id BLOB PRIMARY KEY, data BLOB NOT NULL);
"""
_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
BUSY_TIMEOUT_S = 30.0
MAX_IDLE_CONNECTIONS = 32
PAGE_SIZE = 16384


class _ThreadConn:
    """A thread's connection and its transaction nesting state."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.depth = 0
        self.writing = False


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"keys are str, not {type(key).__name__}")
    return key


def _check_value(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"values are bytes, not {type(value).__name__}")


def _overlay(staged: Iterator[tuple[str, bytes | None]], committed: Iterator[tuple[str, bytes]],
             ) -> Iterator[tuple[str, bytes]]:
    """Merge staging over committed entries: staging wins, a tombstone hides the key."""
    s, c = next(staged, None), next(committed, None)
    while s is not None or c is not None:
        if c is None or (s is not None and s[0] <= c[0]):
            if c is not None and c[0] == s[0]:
                c = next(committed, None)
            if s[1] is not None:
                yield s
            s = next(staged, None)
        else:
            yield c
            c = next(committed, None)


class _View(ReadView):
    """A read view: the tree of ``ref.commit``, overlaid with the branch's staging if any."""

    def __init__(self, store: LocalStore, conn: sqlite3.Connection, ref: ResolvedRef,
                 tree: ranges.Metarange, version: int = 0):
        self.ref = ref
        self._store = store
        self._conn = conn
        self._tree = tree
        self._open = True
        self._dirty = False
        self.token = (("branch", ref.branch, ref.commit, version) if ref.branch is not None
                      else ("commit", ref.commit))

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError("this view's transaction has ended")

    def get(self, key: Key) -> Value | None:
        self._check_open()
        _check_key(key)
        if self.ref.branch is not None:
            row = self._conn.execute("SELECT value FROM staging WHERE branch = ? AND key = ?",
                                     (self.ref.branch, key)).fetchone()
            if row is not None:
                return row[0]
        return ranges.lookup(self._tree, key, self._store._src)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        """Staged rows of all the keys in a few queries, then the tree for the rest."""
        self._check_open()
        staged: dict[str, bytes | None] = {}
        if self.ref.branch is not None:
            for i in range(0, len(keys), 500):
                chunk = [_check_key(k) for k in keys[i:i + 500]]
                marks = ",".join("?" * len(chunk))
                staged.update(self._conn.execute(
                    f"SELECT key, value FROM staging WHERE branch = ? AND key IN ({marks})",
                    (self.ref.branch, *chunk)).fetchall())
        load = self._store._src
        return [staged[k] if k in staged else ranges.lookup(self._tree, k, load) for k in keys]

    def scan(self, start: Key = "", end: Key | None = None) -> Iterator[tuple[Key, Value]]:
        self._check_open()
        _check_key(start)
        committed = ranges.iter_tree(self._tree, start, end, self._store._src)
        if self.ref.branch is None:
            return committed
        return _overlay(self._staging(start, end), committed)

    def _staging(self, start: str, end: str | None) -> Iterator[tuple[str, bytes | None]]:
        """Staged rows in ``[start, end)``, fetched in growing pages so that no cursor stays
        open across calls (and an abandoned scan costs one small query)."""
        page, op, lo = 64, ">=", start
        while True:
            sql = f"SELECT key, value FROM staging WHERE branch = ? AND key {op} ?"
            args: tuple = (self.ref.branch, lo)
            if end is not None:
                sql += " AND key < ?"
                args += (end,)
            rows = self._conn.execute(sql + f" ORDER BY key LIMIT {page}", args).fetchall()
            yield from rows
            if len(rows) < page:
                return
            page, op, lo = min(page * 4, 4096), ">", rows[-1][0]


class _Write(_View, WriteTxn):
    """A write transaction: puts and tombstones go to the branch's staging rows."""

    def put(self, key: Key, value: Value) -> None:
        self._check_open()
        self._dirty = True
        self._conn.execute(
            "INSERT INTO staging (branch, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (branch, key) DO UPDATE SET value = excluded.value",
            (self.ref.branch, _check_key(key), _check_value(value)))

    def put_many(self, items: list[tuple[Key, Value]]) -> None:
        self._check_open()
        self._dirty = True
        self._conn.executemany(
            "INSERT INTO staging (branch, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (branch, key) DO UPDATE SET value = excluded.value",
            [(self.ref.branch, _check_key(k), _check_value(v)) for k, v in items])

    def delete(self, key: Key) -> None:
        self._check_open()
        _check_key(key)
        self._dirty = True
        if ranges.lookup(self._tree, key, self._store._src) is None:
            # Absent in the head commit: dropping any staged value is enough, no tombstone.
            self._conn.execute("DELETE FROM staging WHERE branch = ? AND key = ?",
                               (self.ref.branch, key))
        else:
            self._conn.execute(
                "INSERT INTO staging (branch, key, value) VALUES (?, ?, NULL) "
                "ON CONFLICT (branch, key) DO UPDATE SET value = NULL", (self.ref.branch, key))


class LocalStore(VersionedStore):
    """A :class:`VersionedStore` in ``<path>/store.db``.

    Args:
        path: the store directory (created if missing).
        synchronous: SQLite's ``synchronous`` pragma; NORMAL survives process crashes, FULL
            also survives power loss at the cost of an fsync per transaction.
        cache_bytes: bound of the in-process cache of decoded ranges.
    """

    def __init__(self, path: str | os.PathLike, *, synchronous: str = "NORMAL",
                 cache_bytes: int = 64 << 20):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.db_path = self.path / "store.db"
        self._synchronous = str(synchronous).upper()
        if self._synchronous not in _SYNC_MODES:
            raise ValueError(f"synchronous must be one of {_SYNC_MODES}, not {synchronous!r}")
        self._local = threading.local()
        self._all_conns: weakref.WeakSet[_ThreadConn] = weakref.WeakSet()
        self._idle: list[_ThreadConn] = []  # connections released by finished threads
        self._lock = threading.Lock()
        self._closed = False
        self._ranges = LRUCache(cache_bytes)
        self._nodes = LRUCache(max(cache_bytes // 4, 1 << 20))
        self._metaranges = LRUCache(max(cache_bytes // 16, 1 << 20))
        self._commits = LRUCache(20_000)  # weight 1 per commit
        self._src = ranges.Source(self._load_range, self._load_node)
        self.stats = {"ranges_decoded": 0, "ranges_written": 0, "nodes_decoded": 0,
                      "nodes_written": 0, "metaranges_decoded": 0, "metaranges_written": 0}
        self._initialise()

    # --- connections and transactions ----------------------------------------------------
    def _thread_conn(self) -> _ThreadConn:
        tc = getattr(self._local, "tc", None)
        if tc is None:
            if self._closed:
                raise StoreError("the store is closed")
            with self._lock:
                if self._idle:
                    tc = self._local.tc = self._idle.pop()
                    return tc
            conn = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            tc = self._local.tc = _ThreadConn(conn)
            with self._lock:
                self._all_conns.add(tc)
        return tc

    @contextmanager
    def _txn(self, write: bool) -> Iterator[sqlite3.Connection]:
        """A transaction on this thread's connection; nested calls join the open one."""
        tc = self._thread_conn()
        if tc.depth:
            if write and not tc.writing:
                raise StoreError("cannot write inside a read view on the same thread")
            tc.depth += 1
            try:
                yield tc.conn
            finally:
                tc.depth -= 1
            return
        tc.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        tc.depth, tc.writing = 1, write
        try:
            yield tc.conn
            tc.conn.execute("COMMIT")
        except BaseException:
            if tc.conn.in_transaction:  # SQLite may already have rolled back (disk full...)
                tc.conn.execute("ROLLBACK")
            raise
        finally:
            tc.depth, tc.writing = 0, False

    def _initialise(self) -> None:
        conn = self._thread_conn().conn
        # Catalog values are a few KB (a partition with its columns): with 16 KiB pages they
        # stay in the b-tree instead of overflow pages (scans 3x faster, files half the size).
        # Only a new, empty database takes it; an existing one keeps its page size.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:  # switching to WAL needs a moment alone with the file
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if mode.lower() != "wal":
            raise StoreError(f"{self.db_path}: cannot switch to WAL mode (got {mode})")
        with self._txn(write=True) as conn:
            for statement in _SCHEMA.split(";"):  # executescript() would COMMIT first
                if statement.strip():
                    conn.execute(statement)
            columns = {r[1] for r in conn.execute("PRAGMA table_info(refs)")}
            if "version" not in columns:  # a store created before branch versions existed
                conn.execute("ALTER TABLE refs ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is not None:
                if row[0] != SCHEMA_VERSION:
                    raise StoreCorrupt(f"{self.db_path}: schema {row[0]}, expected "
                                       f"{SCHEMA_VERSION}")
                return
            conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            root = self._new_commit(conn, [], ranges.EMPTY, "Repository created", "", {})
            conn.execute("INSERT INTO refs (name, kind, commit_id) VALUES ('main', 'branch', ?)",
                         (root.id,))

    def release_thread(self) -> None:
        """Hand this thread's connection to the idle pool for the next thread (a server
        calls it as each client connection ends). Connections are reused rather than
        closed: closing one while others hold WAL locks makes SQLite park its descriptor."""
        tc = getattr(self._local, "tc", None)
        if tc is None or tc.depth:
            return
        self._local.tc = None
        with self._lock:
            if len(self._idle) < MAX_IDLE_CONNECTIONS and not self._closed:
                self._idle.append(tc)
                return
            self._all_conns.discard(tc)
        tc.conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for tc in list(self._all_conns):
                tc.conn.close()
            self._all_conns.clear()
            self._idle.clear()
        self._local = threading.local()
        self._ranges.clear()
        self._nodes.clear()
        self._metaranges.clear()
        self._commits.clear()

    def __enter__(self) -> LocalStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- immutable objects, cached by id ----------------------------------------------------
    def _load_range(self, range_id: bytes) -> ranges.Range:
        rng = self._ranges.get(range_id)
        if rng is None:
            row = self._thread_conn().conn.execute(
                "SELECT data FROM ranges WHERE id = ?", (range_id,)).fetchone()
            if row is None:
                raise StoreCorrupt(f"range {range_id.hex()} is missing")
            rng = ranges.decode_range(row[0])
            self.stats["ranges_decoded"] += 1
            self._ranges.put(range_id, rng, rng.size)
        return rng

    def _load_node(self, node_id: bytes) -> ranges.IndexNode:
        node = self._nodes.get(node_id)
        if node is None:
            row = self._thread_conn().conn.execute(
                "SELECT data FROM index_nodes WHERE id = ?", (node_id,)).fetchone()
            if row is None:
                raise StoreCorrupt(f"index node {node_id.hex()} is missing")
            node = ranges.IndexNode.decode(row[0])
            self.stats["nodes_decoded"] += 1
            self._nodes.put(node_id, node, len(row[0]))
        return node

    def range_count(self, commit_id: CommitID) -> int:
        """How many ranges the commit's tree has (what the versioning benchmark reports)."""
        return len(self._tree(self._thread_conn().conn, commit_id))

    def _tree(self, conn: sqlite3.Connection, commit_id: CommitID) -> ranges.Metarange:
        mr_id = bytes.fromhex(self.get_commit(commit_id).metarange)
        mr = self._metaranges.get(mr_id)
        if mr is None:
            row = conn.execute("SELECT data FROM metaranges WHERE id = ?", (mr_id,)).fetchone()
            if row is None:
                raise StoreCorrupt(f"metarange {mr_id.hex()} is missing")
            mr = ranges.Metarange.decode(row[0])
            self.stats["metaranges_decoded"] += 1
            self._metaranges.put(mr_id, mr, len(row[0]))
        return mr

    def get_commit(self, commit_id: CommitID) -> Commit:
        commit = self._commits.get(commit_id)
        if commit is not None:
            return commit
        row = self._thread_conn().conn.execute(
            "SELECT id, parents, message, author, created, metadata, metarange FROM commits "
            "WHERE id = ?", (commit_id,)).fetchone()
        if row is None:
            raise RefNotFound(f"no commit {commit_id!r}")
        commit = Commit(row[0], tuple(json.loads(row[1])), row[2], row[3], row[4],
                        json.loads(row[5]), row[6].hex())
        self._commits.put(commit_id, commit, 1)
        return commit

    def _write_tree(self, conn: sqlite3.Connection, base: ranges.Metarange,
                    changes: list[tuple[str, bytes | None]]) -> ranges.Metarange:
        """Apply sorted changes to ``base``, storing the new ranges, index nodes and root."""
        if not changes:
            return base
        builder = ranges.apply_changes(base, changes, self._src)
        for range_id, blob, decoded in builder.new_ranges:
            cur = conn.execute("INSERT OR IGNORE INTO ranges (id, data) VALUES (?, ?)",
                               (range_id, blob))
            self.stats["ranges_written"] += cur.rowcount
            self._ranges.put(range_id, decoded, decoded.size)
        for node_id, blob, node in builder.new_nodes:
            cur = conn.execute("INSERT OR IGNORE INTO index_nodes (id, data) VALUES (?, ?)",
                               (node_id, blob))
            self.stats["nodes_written"] += cur.rowcount
            self._nodes.put(node_id, node, len(blob))
        mr = builder.out
        if mr.id != base.id:
            cur = conn.execute("INSERT OR IGNORE INTO metaranges (id, data) VALUES (?, ?)",
                               (mr.id, mr.encode()))
            self.stats["metaranges_written"] += cur.rowcount
            self._metaranges.put(mr.id, mr, len(mr.encode()))
        return mr

    def _new_commit(self, conn: sqlite3.Connection, parents: list[CommitID],
                    tree: ranges.Metarange, message: str, author: str,
                    metadata: dict[str, str]) -> Commit:
        """Insert a commit. Its time is never before a parent's, so log order is topological."""
        parent_commits = [self.get_commit(p) for p in parents]
        created = max([time.time()] + [p.created + 1e-6 for p in parent_commits])
        generation = 1 + max((self._generation(conn, p) for p in parents), default=0)
        metadata = {str(k): str(v) for k, v in sorted((metadata or {}).items())}
        body = json.dumps({"parents": parents, "metarange": tree.id.hex(), "message": message,
                           "author": author, "created": created, "metadata": metadata},
                          sort_keys=True, separators=(",", ":"))
        commit = Commit(hashlib.sha256(body.encode()).hexdigest(), tuple(parents), message,
                        author, created, metadata, tree.id.hex())
        if tree is ranges.EMPTY or len(tree) == 0:
            conn.execute("INSERT OR IGNORE INTO metaranges (id, data) VALUES (?, ?)",
                         (tree.id, tree.encode()))
        conn.execute("INSERT OR IGNORE INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (commit.id, json.dumps(parents), message, author, created,
                      json.dumps(metadata), tree.id, generation))
        return commit

    @staticmethod
    def _generation(conn: sqlite3.Connection, commit_id: CommitID) -> int:
        return conn.execute("SELECT generation FROM commits WHERE id = ?",
                            (commit_id,)).fetchone()[0]

    # --- refs --------------------------------------------------------------------------------
    def _resolve(self, conn: sqlite3.Connection, expr: RefExpr) -> ResolvedRef:
        return self._resolve_versioned(conn, expr)[0]

    def _resolve_versioned(self, conn: sqlite3.Connection,
                           expr: RefExpr) -> tuple[ResolvedRef, int]:
        """The resolved ref and the branch's content version (0 for other refs)."""
        parsed = parse_ref(expr)
        row = conn.execute("SELECT kind, commit_id, version FROM refs WHERE name = ?",
                           (parsed.base,)).fetchone()
        version = 0
        if row is not None:
            kind, commit_id, version = row
        elif is_commit_prefix(parsed.base):
            kind, commit_id = "commit", self._commit_by_prefix(conn, parsed.base.lower())
        else:
            raise RefNotFound(f"no branch, tag or commit {parsed.base!r}")
        commit_id = walk_ancestry(commit_id, parsed.hops, self.get_commit, expr)
        plain = parsed.plain
        return ResolvedRef(expr, commit_id, parsed.base if plain and kind == "branch" else None,
                           parsed.base if plain and kind == "tag" else None), version

    @staticmethod
    def _commit_by_prefix(conn: sqlite3.Connection, prefix: str) -> CommitID:
        rows = conn.execute("SELECT id FROM commits WHERE id >= ? AND id < ? ORDER BY id LIMIT 2",
                            (prefix, prefix + "g")).fetchall()
        if not rows:
            raise RefNotFound(f"no branch, tag or commit {prefix!r}")
        if len(rows) > 1:
            raise InvalidRef(f"commit prefix {prefix!r} is ambiguous")
        return rows[0][0]

    def _branch(self, conn: sqlite3.Connection, name: BranchName) -> tuple[CommitID, bool]:
        row = conn.execute("SELECT commit_id, protected FROM refs WHERE name = ? AND kind = "
                           "'branch'", (name,)).fetchone()
        if row is None:
            raise RefNotFound(f"no branch {name!r}")
        return row[0], bool(row[1])

    def resolve(self, ref: RefExpr) -> ResolvedRef:
        with self._txn(write=False) as conn:
            return self._resolve(conn, ref)

    def _create_ref(self, kind: str, name: str, source: RefExpr) -> CommitID:
        validate_name(name)
        with self._txn(write=True) as conn:
            commit_id = self._resolve(conn, source).commit
            existing = conn.execute("SELECT kind FROM refs WHERE name = ?", (name,)).fetchone()
            if existing is not None:
                raise RefExists(f"a {existing[0]} named {name!r} already exists")
            conn.execute("INSERT INTO refs (name, kind, commit_id) VALUES (?, ?, ?)",
                         (name, kind, commit_id))
        return commit_id

    def create_branch(self, name: BranchName, source: RefExpr) -> Branch:
        return Branch(name, self._create_ref("branch", name, source))

    def delete_branch(self, name: BranchName) -> None:
        with self._txn(write=True) as conn:
            if self._branch(conn, name)[1]:
                raise ProtectedRef(f"branch {name!r} is protected")
            conn.execute("DELETE FROM refs WHERE name = ?", (name,))
            conn.execute("DELETE FROM staging WHERE branch = ?", (name,))

    def get_branch(self, name: BranchName) -> Branch | None:
        row = self._thread_conn().conn.execute(
            "SELECT commit_id, protected FROM refs WHERE name = ? AND kind = 'branch'",
            (name,)).fetchone()
        return None if row is None else Branch(name, row[0], bool(row[1]))

    def list_branches(self) -> list[Branch]:
        rows = self._thread_conn().conn.execute(
            "SELECT name, commit_id, protected FROM refs WHERE kind = 'branch' ORDER BY name")
        return [Branch(name, head, bool(p)) for name, head, p in rows.fetchall()]

    def set_branch_protection(self, name: BranchName, protected: bool) -> None:
        with self._txn(write=True) as conn:
            self._branch(conn, name)
            conn.execute("UPDATE refs SET protected = ? WHERE name = ?", (int(protected), name))

    def create_tag(self, name: TagName, ref: RefExpr) -> Tag:
        return Tag(name, self._create_ref("tag", name, ref))

    def delete_tag(self, name: TagName) -> None:
        with self._txn(write=True) as conn:
            if conn.execute("DELETE FROM refs WHERE name = ? AND kind = 'tag'",
                            (name,)).rowcount == 0:
                raise RefNotFound(f"no tag {name!r}")

    def list_tags(self) -> list[Tag]:
        rows = self._thread_conn().conn.execute(
            "SELECT name, commit_id FROM refs WHERE kind = 'tag' ORDER BY name")
        return [Tag(name, commit_id) for name, commit_id in rows.fetchall()]

    # --- reads and writes ---------------------------------------------------------------------
    def get(self, ref: RefExpr, key: Key) -> Value | None:
        """One statement reads the ref and the staged row together (one implicit snapshot);
        the committed tree it points at is immutable, so no transaction is needed."""
        tc = self._thread_conn()
        parsed = parse_ref(ref)
        if tc.depth or not parsed.plain:
            return super().get(ref, key)
        row = tc.conn.execute(
            "SELECT r.kind, r.commit_id, s.key, s.value FROM refs r LEFT JOIN staging s "
            "ON s.branch = r.name AND s.key = ? WHERE r.name = ?",
            (_check_key(key), parsed.base)).fetchone()
        if row is None:
            return super().get(ref, key)
        kind, commit_id, staged_key, staged_value = row
        if kind == "branch" and staged_key is not None:
            return staged_value
        return ranges.lookup(self._tree(tc.conn, commit_id), key, self._src)

    def token(self, ref: RefExpr) -> object:
        """One statement for a plain branch or tag name."""
        tc = self._thread_conn()
        parsed = parse_ref(ref)
        if tc.depth or not parsed.plain:
            return super().token(ref)
        row = tc.conn.execute("SELECT kind, commit_id, version FROM refs WHERE name = ?",
                              (parsed.base,)).fetchone()
        if row is None:
            return super().token(ref)
        kind, commit_id, version = row
        return ("branch", parsed.base, commit_id, version) if kind == "branch" \
            else ("commit", commit_id)

    @contextmanager
    def read(self, ref: RefExpr) -> Iterator[ReadView]:
        with self._txn(write=False) as conn:
            resolved, version = self._resolve_versioned(conn, ref)
            view = _View(self, conn, resolved, self._tree(conn, resolved.commit), version)
            try:
                yield view
            finally:
                view._open = False

    @contextmanager
    def write(self, branch: BranchName) -> Iterator[WriteTxn]:
        with self._txn(write=True) as conn:
            resolved = self._resolve(conn, branch)
            if resolved.branch is None:
                raise ReadOnlyRef(f"{branch!r} is not a branch; only branches can be written")
            txn = _Write(self, conn, resolved, self._tree(conn, resolved.commit))
            try:
                yield txn
                if txn._dirty:
                    self._bump(conn, resolved.branch)
            finally:
                txn._open = False

    @staticmethod
    def _bump(conn: sqlite3.Connection, branch: BranchName) -> None:
        """A branch's content changed: readers' tokens must change with it."""
        conn.execute("UPDATE refs SET version = version + 1 WHERE name = ?", (branch,))

    # --- commits -------------------------------------------------------------------------------
    def commit(self, branch: BranchName, message: str, author: str = "",
               metadata: dict[str, str] | None = None, expected_head: CommitID | None = None,
               allow_empty: bool = False) -> Commit:
        with self._txn(write=True) as conn:
            head, _ = self._branch(conn, branch)
            if expected_head is not None and expected_head != head:
                raise HeadMoved(f"branch {branch!r} is at {head[:12]}, not {expected_head[:12]}")
            base = self._tree(conn, head)
            changes = conn.execute("SELECT key, value FROM staging WHERE branch = ? ORDER BY key",
                                   (branch,)).fetchall()
            tree = self._write_tree(conn, base, changes)
            if tree.id == base.id and not allow_empty:
                raise NothingToCommit(f"branch {branch!r} has no changes to commit")
            commit = self._new_commit(conn, [head], tree, message, author, metadata or {})
            conn.execute("UPDATE refs SET commit_id = ? WHERE name = ?", (commit.id, branch))
            conn.execute("DELETE FROM staging WHERE branch = ?", (branch,))
            self._bump(conn, branch)
        return commit

    def commit_snapshot(self, branch: BranchName, parents: list[CommitID],
                        changes: Iterator[tuple[Key, Value | None]], message: str,
                        author: str = "", metadata: dict[str, str] | None = None,
                        expected_head: CommitID | None = None) -> Commit:
        latest: dict[str, bytes | None] = {}
        for key, value in changes:
            latest[_check_key(key)] = None if value is None else _check_value(value)
        with self._txn(write=True) as conn:
            head, _ = self._branch(conn, branch)
            if expected_head is not None and expected_head != head:
                raise HeadMoved(f"branch {branch!r} is at {head[:12]}, not {expected_head[:12]}")
            parents = list(parents)
            base = self._tree(conn, parents[0]) if parents else ranges.EMPTY
            for p in parents[1:]:
                self.get_commit(p)
            tree = self._write_tree(conn, base, sorted(latest.items()))
            commit = self._new_commit(conn, parents, tree, message, author, metadata or {})
            conn.execute("UPDATE refs SET commit_id = ? WHERE name = ?", (commit.id, branch))
        return commit

    def log(self, ref: RefExpr, limit: int | None = None) -> Iterator[Commit]:
        return iter_log(self.resolve(ref).commit, self.get_commit, limit)

    def merge_base(self, a: RefExpr, b: RefExpr) -> CommitID | None:
        with self._txn(write=False) as conn:
            ca, cb = self._resolve(conn, a).commit, self._resolve(conn, b).commit
        return merge_base(ca, cb, self.get_commit)

    def diff(self, left: RefExpr, right: RefExpr, prefix: Key = "") -> Iterator[DiffEntry]:
        end = prefix_end(prefix)
        with self._txn(write=False) as conn:
            views = []
            for expr in (left, right):
                ref = self._resolve(conn, expr)
                views.append(_View(self, conn, ref, self._tree(conn, ref.commit)))
            lview, rview = views
            changed = {k: (lv, rv) for k, lv, rv in ranges.diff_trees(
                lview._tree, rview._tree, prefix, end, self._src)}
            staged_keys = set()
            for view in views:
                if view.ref.branch is not None:
                    staged_keys.update(k for k, _ in view._staging(prefix, end))
            for key in staged_keys:
                changed[key] = (lview.get(key), rview.get(key))
        return iter([DiffEntry(k, changed[k][0], changed[k][1]) for k in sorted(changed)
                      if changed[k][0] != changed[k][1]])

    def staged(self, branch: BranchName) -> Iterator[DiffEntry]:
        with self._txn(write=False) as conn:
            head, _ = self._branch(conn, branch)
            tree = self._tree(conn, head)
            rows = conn.execute("SELECT key, value FROM staging WHERE branch = ? ORDER BY key",
                                (branch,)).fetchall()
            out = []
            for key, value in rows:
                committed = ranges.lookup(tree, key, self._src)
                if committed != value:
                    out.append(DiffEntry(key, committed, value))
        return iter(out)

    def reset(self, branch: BranchName) -> int:
        with self._txn(write=True) as conn:
            if self._branch(conn, branch)[1]:
                raise ProtectedRef(f"branch {branch!r} is protected")
            dropped = conn.execute("DELETE FROM staging WHERE branch = ?", (branch,)).rowcount
            if dropped:
                self._bump(conn, branch)
            return dropped
