"""Behaviour specific to the embedded backend: processes, threads, crashes, cost, formats.

No timing assertions: cost is measured by counting work (rows written to ``ranges``, ranges
decoded via ``store.stats``), which does not depend on the machine.
"""
from __future__ import annotations

import hashlib
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

from kvmodel.store import open_store, ranges
from kvmodel.store.cache import LRUCache
from kvmodel.store.errors import NothingToCommit, StoreCorrupt, StoreError
from kvmodel.store.local import LocalStore

REPO = Path(__file__).resolve().parents[3]


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
from kvmodel.store.errors import NothingToCommit
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
    nodes_after_bulk = _count(store, "index_nodes")
    assert ranges_after_bulk > 50  # the tree really is many ranges

    with store.write("main") as txn:
        txn.put("db/d/table/t07/part/p=07500", b"changed")
    c2 = store.commit("main", "one key")
    assert _count(store, "ranges") - ranges_after_bulk <= 3
    assert _count(store, "index_nodes") - nodes_after_bulk <= 2

    before = (_count(store, "ranges"), _count(store, "index_nodes"), _count(store, "metaranges"))
    store.create_branch("dev", "main")
    store.create_tag("v1", "main")
    assert (_count(store, "ranges"), _count(store, "index_nodes"),
            _count(store, "metaranges")) == before
    store.close()

    cold = LocalStore(path)  # empty caches: every range and node read is counted
    try:
        assert [d.key for d in cold.diff(c1.id, c2.id)] == ["db/d/table/t07/part/p=07500"]
        assert cold.stats["ranges_decoded"] <= 4
        assert cold.stats["nodes_decoded"] <= 2

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
        assert cold.stats["nodes_written"] <= 2 and cold.stats["metaranges_written"] == 1
    finally:
        cold.close()


def test_one_key_commit_cost_is_constant_at_scale(tmp_path):
    """200,000 keys of 1 KB (~8,000 ranges, ~40 index nodes): a one-key commit writes one or
    two ranges, one or two index nodes and a root of a few KB; a diff reads as little."""
    store = LocalStore(tmp_path / "store", cache_bytes=1 << 20)
    filler = b"x" * 1000
    for lo in range(0, 200_000, 50_000):
        with store.write("main") as txn:
            txn.put_many([(f"t{i % 100:02d}/p={i:06d}", filler) for i in range(lo, lo + 50_000)])
    base = store.commit("main", "bulk")
    tree = store._tree(store._thread_conn().conn, base.id)
    assert len(tree) > 5_000 and len(tree.ids) > 20
    root_bytes = len(tree.encode())
    assert root_bytes < len(tree) * 4  # a few bytes of root per range: the index is a tree

    rng = random.Random(3)
    commits = [base]
    for n in range(10):
        key = f"t{rng.randrange(100):02d}/p={rng.randrange(200_000):06d}"
        with store.write("main") as txn:
            txn.put(key, b"changed %d" % n)
        before = dict(store.stats)
        commits.append(store.commit("main", f"one key {n}"))
        written = {k: store.stats[k] - before[k] for k in store.stats}
        assert written["ranges_written"] <= 3, written
        assert written["nodes_written"] <= 2, written
        assert written["metaranges_written"] == 1, written
        head = store._tree(store._thread_conn().conn, commits[-1].id)
        assert len(head.encode()) <= root_bytes + 200
    store.close()

    cold = LocalStore(tmp_path / "store")
    try:
        diff = list(cold.diff(commits[4].id, commits[5].id))
        assert len(diff) == 1
        assert cold.stats["ranges_decoded"] <= 4 and cold.stats["nodes_decoded"] <= 2
    finally:
        cold.close()


@pytest.mark.parametrize("small_nodes", [False, True])
def test_incremental_trees_equal_trees_built_from_scratch(monkeypatch, small_nodes):
    """Content-defined chunking: however a key set was reached, its ranges and index nodes are
    the same (with small nodes, the node level is exercised across many nodes)."""
    if small_nodes:
        monkeypatch.setattr(ranges, "NODE_MIN_ENTRIES", 2)
        monkeypatch.setattr(ranges, "NODE_BOUNDARY_MASK", 3)
        monkeypatch.setattr(ranges, "NODE_MAX_ENTRIES", 8)
    rng = random.Random(7)
    src = ranges.MemorySource()

    truth: dict[str, bytes] = {}
    tree = ranges.EMPTY
    for step in range(40):
        changes: dict[str, bytes | None] = {}
        for _ in range(rng.choice([1, 5, 50, 800])):
            key = f"k{rng.randrange(20_000):05d}"
            size = rng.choice([2, 2, 300, 3000])
            changes[key] = None if rng.random() < 0.3 else b"v%d" % rng.randrange(5) * size
        builder = src.keep(ranges.apply_changes(tree, sorted(changes.items()), src))
        tree = builder.out
        truth.update(changes)
        truth = {k: v for k, v in truth.items() if v is not None}
        scratch = ranges.apply_changes(ranges.EMPTY, sorted(truth.items()), src).out
        assert tree.ids == scratch.ids and tree.id == scratch.id, step
        assert list(ranges.iter_tree(tree, "", None, src)) == sorted(truth.items())
        if len(changes) == 1 and len(tree) > 10:
            assert len(builder.new_ranges) <= 3  # a one-key change rewrites about one range
            assert len(builder.new_nodes) <= 2
    assert len(tree) > 20
    if small_nodes:
        assert len(tree.ids) > 10


def test_tree_reads_and_diffs_across_many_nodes(monkeypatch):
    monkeypatch.setattr(ranges, "NODE_MIN_ENTRIES", 2)
    monkeypatch.setattr(ranges, "NODE_BOUNDARY_MASK", 3)
    src = ranges.MemorySource()
    items = {f"k{i:05d}": b"v" * (i % 500) for i in range(0, 20_000, 2)}
    left = src.keep(ranges.apply_changes(ranges.EMPTY, sorted(items.items()), src)).out
    assert len(left.ids) > 20
    changes = {"k00000": None, "k00001": b"new", "k09999": b"odd", "k10000": b"changed",
               "k19998": None, "k20001": b"last"}
    right = src.keep(ranges.apply_changes(left, sorted(changes.items()), src)).out
    after = {**items, **changes}
    after = {k: v for k, v in after.items() if v is not None}
    for key in ("k00000", "k00001", "k00002", "k09999", "k10000", "k10001", "k20001", "a", "z"):
        assert ranges.lookup(right, key, src) == after.get(key), key
        assert ranges.lookup(left, key, src) == items.get(key), key
    assert list(ranges.iter_tree(right, "k05000", "k05100", src)) == sorted(
        (k, v) for k, v in after.items() if "k05000" <= k < "k05100")
    expected = [(k, items.get(k), after.get(k)) for k in sorted(set(items) | set(after))
                if items.get(k) != after.get(k)]
    assert list(ranges.diff_trees(left, right, load=src)) == expected
    assert list(ranges.diff_trees(left, right, "k05", "k15", load=src)) == [
        e for e in expected if "k05" <= e[0] < "k15"]
    assert list(ranges.diff_trees(right, right, load=src)) == []


def test_range_boundaries_respect_bounds():
    def weight(k, v):
        return max(len(k) + len(v) + 8, ranges.ENTRY_FLOOR)

    for value_size in (10, 100, 1900):
        items = [(f"key{i:06d}", b"x" * value_size) for i in range(20_000)]
        builder = ranges.apply_changes(ranges.EMPTY, items, ranges.MemorySource())
        assert builder.out.key_count == 20_000
        sizes = []
        for _, blob, rng in builder.new_ranges[:-1]:
            w = sum(weight(k, v) for k, v in zip(rng.keys, rng.values))
            assert w >= ranges.MIN_BYTES and len(rng.keys) <= ranges.MAX_ENTRIES
            assert len(blob) < ranges.MAX_BYTES + value_size + 100
            sizes.append(len(blob))
        if value_size == 1900:  # large entries: ranges of ~16-32 KiB, not ~140 entries
            assert 16 * 1024 <= sum(sizes) / len(sizes) <= 32 * 1024
    big = [(f"k{i:03d}", b"y" * 100_000) for i in range(30)]
    builder = ranges.apply_changes(ranges.EMPTY, big, ranges.MemorySource())
    assert len(builder.out) == 30  # an entry over MAX_BYTES is a range of its own


def test_range_node_and_root_formats_round_trip():
    keys = ["", "a", "é", "\U0001F600", "a\x00b"]
    values = [b"", b"\x00", b"x" * 1000, b"v", b"w"]
    blob = ranges.encode_range([k.encode() for k in keys], values)
    decoded = ranges.decode_range(blob)
    assert (decoded.keys, decoded.values, decoded.size) == (keys, values, len(blob))
    node = ranges.IndexNode(["a", "c"], ["b", "\U0001F600"], [b"1" * 32, b"2" * 32], [3, 4])
    back = ranges.IndexNode.decode(node.encode())
    assert (back.firsts, back.lasts, back.ids, back.counts, back.id) == (
        node.firsts, node.lasts, node.ids, node.counts, node.id)
    mr = ranges.Metarange(["a", "c"], ["b", "é"], [b"3" * 32, b"4" * 32], [3, 4], [1, 2])
    back = ranges.Metarange.decode(mr.encode())
    assert (back.firsts, back.lasts, back.ids, back.counts, back.nranges, back.id) == (
        mr.firsts, mr.lasts, mr.ids, mr.counts, mr.nranges, mr.id)
    assert len(back) == 3 and back.key_count == 7
    with pytest.raises(StoreCorrupt):
        ranges.decode_range(b"PICKLE" + blob)
    with pytest.raises(StoreCorrupt):
        ranges.decode_range(blob + b"trailing")
    with pytest.raises(StoreCorrupt):
        ranges.IndexNode.decode(mr.encode())
    with pytest.raises(StoreCorrupt):
        ranges.Metarange.decode(node.encode())


def test_stores_with_flat_metaranges_still_open(tmp_path):
    """A store written before the two-level index: commits point at flat ``KVM1`` metaranges
    listing every range. It reads, diffs and takes new commits (written the new way)."""
    path = tmp_path / "store"
    store = LocalStore(path)
    items = {f"k{i:05d}": b"value %d" % i for i in range(30_000)}
    with store.write("main") as txn:
        txn.put_many(list(items.items()))
    new_format = store.commit("main", "bulk")
    store.create_branch("keep", "main")
    store.close()

    # Rewrite every commit's root as the flat metarange the old code wrote.
    src = ranges.MemorySource()
    flat_of = {}
    with sqlite3.connect(path / "store.db") as conn:
        src.nodes.update((i, ranges.IndexNode.decode(d))
                         for i, d in conn.execute("SELECT id, data FROM index_nodes"))
        for mr_id, data in conn.execute("SELECT id, data FROM metaranges").fetchall():
            root = ranges.Metarange.decode(data)
            entries = [[], [], [], []]
            for node_id in root.ids:
                node = src.nodes[node_id]
                for col, values in zip(entries, (node.firsts, node.lasts, node.ids, node.counts)):
                    col.extend(values)
            flat = ranges.encode_legacy(*entries)
            flat_of[mr_id] = hashlib.sha256(flat).digest()
            conn.execute("INSERT INTO metaranges VALUES (?, ?)", (flat_of[mr_id], flat))
        for commit_id, mr_id in conn.execute("SELECT id, metarange FROM commits").fetchall():
            conn.execute("UPDATE commits SET metarange = ? WHERE id = ?",
                         (flat_of[mr_id], commit_id))
        conn.execute("DELETE FROM index_nodes")
        conn.execute("DELETE FROM metaranges WHERE substr(data, 1, 4) != X'4B564D31'")

    old = LocalStore(path)
    try:
        assert old.get_commit(new_format.id).metarange == flat_of[
            bytes.fromhex(new_format.metarange)].hex()
        with old.read("main") as view:
            assert view.get("k12345") == b"value 12345" and view.get("k99999") is None
            assert dict(view.scan()) == items
        with old.write("main") as txn:
            txn.put("k12345", b"changed")
            txn.delete("k00007")
        c2 = old.commit("main", "on a flat base")
        assert old.stats["nodes_written"] > 1  # the base's nodes, written once
        with old.write("main") as txn:
            txn.put("k20000", b"again")
        c3 = old.commit("main", "on a two-level base")
        assert [d.key for d in old.diff("keep", c2.id)] == ["k00007", "k12345"]
        assert [d.key for d in old.diff(c2.id, c3.id)] == ["k20000"]
    finally:
        old.close()
    again = LocalStore(path)
    try:
        with sqlite3.connect(path / "store.db") as conn:
            (data,) = conn.execute("SELECT data FROM metaranges WHERE id = ?",
                                   (bytes.fromhex(c3.metarange),)).fetchone()
        assert data[:4] == b"KVT1"
        with again.read("main") as view:
            expected = {**items, "k12345": b"changed", "k20000": b"again"}
            del expected["k00007"]
            assert dict(view.scan()) == expected
        with again.read("keep") as view:
            assert dict(view.scan()) == items
        assert [d.key for d in again.diff("keep", "main")] == ["k00007", "k12345", "k20000"]
    finally:
        again.close()


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
