"""Behaviour specific to the embedded backend: processes, threads, crashes, cost, formats.

No timing assertions: cost is measured by counting work (rows written to ``ranges``, ranges
decoded via ``store.stats``), which does not depend on the machine.
"""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kvmodel.cache import LRUCache
from kvmodel.errors import NothingToCommit, StoreCorrupt, StoreError
from kvmodel.store import open_store, ranges
from kvmodel.store.local import LocalStore

REPO = Path(__file__).resolve().parents[2]


def _child(script: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _count(store: LocalStore, table: str) -> int:
    with sqlite3.connect(store.db_path) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- crash durability -----------------------------------------------------------------------
WRITER = r"""
import sys
from kvmodel.store.local import LocalStore
store = LocalStore(sys.argv[1])
i = int(sys.argv[2])
while True:
    with store.write("main") as txn:
        for part in ("a", "b", "c"):
            txn.put(f"k{i:08d}/{part}", b"%d" % i)
    print(f"w {i}", flush=True)
    if i % 40 == 0:
        print(f"c {store.commit('main', f'at {i}').id}", flush=True)
    i += 1
"""


def test_kill_9_loses_no_acknowledged_write(tmp_path):
    path = tmp_path / "store"
    rng = random.Random(1234)
    acked: set[int] = set()
    commits: list[str] = []
    for round_no in range(4):
        target = rng.randint(20, 300)
        lines = []
        with _child(WRITER, str(path), str(round_no * 1_000_000)) as proc:
            while len(lines) < target:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                lines.append(line)
            time.sleep(rng.random() / 50)  # land the kill anywhere: mid-write, mid-commit...
            os.kill(proc.pid, signal.SIGKILL)
            lines += proc.stdout.readlines()  # acknowledged before the kill, still in the pipe
        assert proc.returncode == -signal.SIGKILL
        for line in lines:
            if line.endswith("\n"):
                kind, value = line.split()
                if kind == "w":
                    acked.add(int(value))
                else:
                    commits.append(value)

    store = LocalStore(path)
    try:
        with store.read("main") as view:
            present: dict[int, set[str]] = {}
            for key, value in view.scan("k"):
                n, part = key[1:].split("/")
                assert value == b"%d" % int(n)
                present.setdefault(int(n), set()).add(part)
        assert acked <= set(present), sorted(acked - set(present))[:10]
        assert all(parts == {"a", "b", "c"} for parts in present.values())  # all-or-nothing
        history = {c.id for c in store.log("main")}
        assert set(commits) <= history and len(commits) >= 4
        with sqlite3.connect(store.db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        store.close()


# --- several processes, several threads ------------------------------------------------------
PARALLEL_WRITER = r"""
import sys
from kvmodel.errors import NothingToCommit
from kvmodel.store.local import LocalStore
store = LocalStore(sys.argv[1])
name = sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()  # both processes start writing together
for i in range(300):
    with store.write("main") as txn:
        txn.put(f"{name}/{i:04d}/x", b"x")
        txn.put(f"{name}/{i:04d}/y", b"y")
    if i % 30 == 29:
        try:
            store.commit("main", f"{name} {i}")
        except NothingToCommit:
            pass
print("done", flush=True)
"""


def test_two_processes_write_the_same_new_store(tmp_path):
    path = tmp_path / "fresh"  # both processes race to create it
    procs = [_child(PARALLEL_WRITER, str(path), name) for name in ("p1", "p2")]
    for proc in procs:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
    for proc in procs:
        with proc:
            out, err = proc.communicate("go\n", timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    store = LocalStore(path)
    try:
        with store.read("main") as view:
            keys = [k for k, _ in view.scan()]
        assert len(keys) == 2 * 300 * 2
        roots = [c for c in store.log("main") if not c.parents]
        assert len(roots) == 1 and roots[0].message == "Repository created"
        assert [b.name for b in store.list_branches()] == ["main"]
    finally:
        store.close()


def test_eight_threads_write_and_read_consistently(local_store):
    store = local_store
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(40):
                with store.write("main") as txn:
                    txn.put(f"t{n}/{i:03d}/a", b"%d" % i)
                    txn.put(f"t{n}/{i:03d}/b", b"%d" % i)
                with store.read("main") as view:
                    seen = dict(view.scan())
                for key, value in seen.items():
                    if key.endswith("/a"):
                        assert seen[key[:-1] + "b"] == value  # never half a transaction
                assert seen[f"t{n}/{i:03d}/a"] == b"%d" % i  # reads see one's own writes
                if i % 10 == 9:
                    try:
                        store.commit("main", f"t{n} {i}")
                    except NothingToCommit:
                        pass
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with store.read("main") as view:
        assert len(list(view.scan())) == 8 * 40 * 2


def test_a_read_view_is_a_snapshot(local_store):
    store = local_store
    with store.write("main") as txn:
        txn.put("a", b"1")
    with store.read("main") as view:
        def other_thread():
            with store.write("main") as txn:
                txn.put("a", b"2")
                txn.put("b", b"2")
            store.commit("main", "moved")
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert view.get("a") == b"1" and view.get("b") is None
        assert dict(view.scan()) == {"a": b"1"}
    with store.read("main") as view:
        assert dict(view.scan()) == {"a": b"2", "b": b"2"}


def test_nested_transactions_on_one_thread(local_store):
    store = local_store
    with store.write("main") as txn:
        txn.put("a", b"1")
        with store.read("main") as view:  # joins the open write transaction
            assert view.get("a") == b"1"
    with store.read("main"):
        with pytest.raises(StoreError):
            with store.write("main"):
                pass


# --- cost grows with the change, not with the store ------------------------------------------
def test_commit_branch_and_diff_cost_on_a_large_store(tmp_path):
    path = tmp_path / "store"
    store = LocalStore(path)
    with store.write("main") as txn:
        for i in range(20_000):
            txn.put(f"db/d/table/t{i // 1000:02d}/part/p={i:05d}", b"value %d" % i)
    c1 = store.commit("main", "bulk")
    ranges_after_bulk = _count(store, "ranges")
    assert ranges_after_bulk > 50  # the tree really is many ranges

    with store.write("main") as txn:
        txn.put("db/d/table/t07/part/p=07500", b"changed")
    c2 = store.commit("main", "one key")
    assert _count(store, "ranges") - ranges_after_bulk <= 3

    before = (_count(store, "ranges"), _count(store, "metaranges"))
    store.create_branch("dev", "main")
    store.create_tag("v1", "main")
    assert (_count(store, "ranges"), _count(store, "metaranges")) == before
    store.close()

    cold = LocalStore(path)  # empty caches: every range read is counted
    try:
        assert [d.key for d in cold.diff(c1.id, c2.id)] == ["db/d/table/t07/part/p=07500"]
        assert cold.stats["ranges_decoded"] <= 4

        decoded = cold.stats["ranges_decoded"]
        with cold.read(c1.id) as view:
            assert view.get("db/d/table/t13/part/p=13013") == b"value 13013"
            hit = view.first("db/d/table/t18/")
            assert hit == ("db/d/table/t18/part/p=18000", b"value 18000")
            assert len(list(view.scan("db/d/table/t19/part/p=19990"))) == 10
        assert cold.stats["ranges_decoded"] - decoded <= 4

        decoded = cold.stats["ranges_decoded"]
        with cold.write("dev") as txn:
            txn.put("db/d/table/t03/part/p=03333", b"dev")
        cold.commit("dev", "one key on dev")
        assert cold.stats["ranges_decoded"] - decoded <= 3
        assert cold.stats["ranges_written"] <= 3
    finally:
        cold.close()


def test_incremental_trees_equal_trees_built_from_scratch():
    """Content-defined chunking: however a key set was reached, its ranges are the same."""
    rng = random.Random(7)
    stored: dict[bytes, ranges.Range] = {}

    def load(range_id):
        return stored[range_id]

    def build(base, changes):
        builder = ranges.apply_changes(base, sorted(changes.items()), load)
        for range_id, _, decoded in builder.new_ranges:
            stored[range_id] = decoded
        return builder

    truth: dict[str, bytes] = {}
    tree = ranges.EMPTY
    for step in range(40):
        changes: dict[str, bytes | None] = {}
        for _ in range(rng.choice([1, 5, 50, 800])):
            key = f"k{rng.randrange(20_000):05d}"
            changes[key] = None if rng.random() < 0.3 else b"v%d" % rng.randrange(5)
        builder = build(tree, changes)
        tree = builder.out
        truth.update(changes)
        truth = {k: v for k, v in truth.items() if v is not None}
        scratch = ranges.apply_changes(ranges.EMPTY, sorted(truth.items()), load).out
        assert tree.ids == scratch.ids, step
        assert list(ranges.iter_tree(tree, "", None, load)) == sorted(truth.items())
        if len(changes) == 1 and len(tree) > 10:
            assert len(builder.new_ranges) <= 2  # a one-key change rewrites about one range
    assert len(tree) > 20


def test_range_boundaries_respect_bounds():
    items = [(f"key{i:06d}", b"x" * 100) for i in range(20_000)]
    tree = ranges.apply_changes(ranges.EMPTY, items, lambda _id: None).out
    assert sum(tree.counts) == 20_000
    assert all(ranges.MIN_ENTRIES <= c <= ranges.MAX_ENTRIES for c in tree.counts[:-1])
    big = [(f"k{i:03d}", b"y" * 100_000) for i in range(30)]
    builder = ranges.apply_changes(ranges.EMPTY, big, lambda _id: None)
    assert all(len(blob) < ranges.MAX_BYTES + 200_000 for _, blob, _ in builder.new_ranges)
    assert len(builder.out) >= 30 * 100_000 // ranges.MAX_BYTES


def test_range_and_metarange_formats_round_trip():
    keys = ["", "a", "é", "\U0001F600", "a\x00b"]
    values = [b"", b"\x00", b"x" * 1000, b"v", b"w"]
    blob = ranges.encode_range([k.encode() for k in keys], values)
    decoded = ranges.decode_range(blob)
    assert (decoded.keys, decoded.values, decoded.size) == (keys, values, len(blob))
    mr = ranges.Metarange(["a", "c"], ["b", "\U0001F600"], [b"1" * 32, b"2" * 32], [3, 4])
    back = ranges.Metarange.decode(mr.encode())
    assert (back.firsts, back.lasts, back.ids, back.counts, back.id) == (
        mr.firsts, mr.lasts, mr.ids, mr.counts, mr.id)
    with pytest.raises(StoreCorrupt):
        ranges.decode_range(b"PICKLE" + blob)
    with pytest.raises(StoreCorrupt):
        ranges.decode_range(blob + b"trailing")


def test_range_cache_is_bounded():
    cache = LRUCache(max_weight=100)
    for i in range(50):
        cache.put(i, str(i), 10)
    assert cache.get(0) is None and cache.get(49) == "49"
    assert sum(cache.get(i) is not None for i in range(50)) == 10


# --- opening ----------------------------------------------------------------------------------
def test_open_store_paths_and_urls(tmp_path):
    for target in (tmp_path / "a", str(tmp_path / "b"), f"file://{tmp_path / 'c'}"):
        store = open_store(target)
        try:
            assert isinstance(store, LocalStore) and store.db_path.exists()
        finally:
            store.close()
    for bad in ("lakefs://repo/main", "s3://bucket/x", "file://otherhost/x", ""):
        with pytest.raises(ValueError):
            open_store(bad)


def test_reopen_keeps_everything_and_uses_wal(tmp_path):
    store = LocalStore(tmp_path / "s", synchronous="FULL")
    with store.write("main") as txn:
        txn.put("staged", b"s")
    store.create_tag("t", "main")
    store.close()
    with pytest.raises(StoreError):
        store.resolve("main")
    again = LocalStore(tmp_path / "s")
    try:
        with again.read("main") as view:
            assert view.get("staged") == b"s"
        assert [t.name for t in again.list_tags()] == ["t"]
        assert len(list(again.log("main"))) == 1
    finally:
        again.close()
    with sqlite3.connect(tmp_path / "s" / "store.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(ValueError):
        LocalStore(tmp_path / "s", synchronous="SOMETIMES")


def test_equal_trees_share_a_metarange(local_store):
    store = local_store

    def commit(changes):
        with store.write("main") as txn:
            for k, v in changes.items():
                txn.put(k, v)
        return store.commit("main", "c")

    c1 = commit({f"k{i:04d}": b"v" for i in range(1000)})
    c2 = commit({"k0500": b"changed"})
    c3 = commit({"k0500": b"v"})
    assert c3.metarange == c1.metarange != c2.metarange


def test_released_connections_are_reused_by_later_threads(tmp_path):
    """A server calls release_thread as each connection's thread ends: later threads reuse
    the connection, so descriptors do not grow with the number of threads."""
    import threading

    import psutil

    store = LocalStore(tmp_path / "s")
    with store.write("main") as txn:
        txn.put("k", b"v")
    me = psutil.Process()

    def work():
        assert store.get("main", "k") == b"v"
        store.release_thread()

    # SQLite keeps one descriptor of a closed connection for reuse while others hold locks
    # on the file: take the baseline after a first thread.
    t = threading.Thread(target=work)
    t.start()
    t.join()
    before = me.num_fds()
    for _ in range(30):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert me.num_fds() <= before
    store.close()


def test_new_stores_use_large_pages(tmp_path):
    store = LocalStore(tmp_path / "s")
    conn = sqlite3.connect(tmp_path / "s" / "store.db")
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    conn.close()
    store.close()
