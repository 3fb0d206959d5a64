"""The VersionedStore contract, run against every backend (see ``conftest.BACKENDS``).

Only the public contract is used here: no SQL, no backend internals, so a lakeFS backend runs
the same suite unchanged. Backend-specific behaviour (processes, crashes, cost) lives in
``test_local.py``.
"""
from __future__ import annotations

import pytest

from kvmodel.store.contract import DiffEntry, VersionedStore
from kvmodel.store.errors import (
    DirtyBranch,
    HeadMoved,
    InvalidRef,
    NothingToCommit,
    ProtectedRef,
    ReadOnlyRef,
    RefExists,
    RefNotFound,
    StoreError,
)


# --- helpers -------------------------------------------------------------------------------
def stage(store: VersionedStore, branch: str, changes: dict[str, bytes | None]) -> None:
    with store.write(branch) as txn:
        for key, value in changes.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value)


def commit(store: VersionedStore, branch: str, changes: dict[str, bytes | None], msg="c"):
    stage(store, branch, changes)
    return store.commit(branch, msg)


def contents(store: VersionedStore, ref: str, start="", end=None) -> dict[str, bytes]:
    with store.read(ref) as view:
        return dict(view.scan(start, end))


def diff(store, left, right, prefix=""):
    return [(d.key, d.left, d.right) for d in store.diff(left, right, prefix)]


KEYS = {"a": b"1", "b": b"2", "ba": b"3", "bb": b"4", "c": b"5"}


# --- a fresh store ---------------------------------------------------------------------------
def test_fresh_store_has_main_with_initial_commit(store):
    [main] = store.list_branches()
    assert (main.name, main.protected) == ("main", False)
    [root] = list(store.log("main"))
    assert root.id == main.head and root.parents == () and root.message == "Repository created"
    assert store.get_commit(root.id) == root
    assert contents(store, "main") == {} and list(store.staged("main")) == []
    assert store.list_tags() == []


# --- put / get / delete ---------------------------------------------------------------------
@pytest.mark.parametrize("ops, expected", [
    ([("put", "k", b"v")], {"k": b"v"}),
    ([("put", "k", b"v"), ("put", "k", b"w")], {"k": b"w"}),
    ([("put", "k", b"v"), ("del", "k")], {}),
    ([("del", "absent")], {}),
    ([("put", "k", b"")], {"k": b""}),
    ([("put", "", b"empty key")], {"": b"empty key"}),
    ([("put", "a", b"1"), ("put", "b", b"2"), ("del", "a"), ("put", "a", b"3")],
     {"a": b"3", "b": b"2"}),
])
@pytest.mark.parametrize("committed", [False, True], ids=["staged", "committed"])
def test_put_get_delete(store, ops, expected, committed):
    with store.write("main") as txn:
        for op in ops:
            if op[0] == "put":
                txn.put(op[1], op[2])
            else:
                txn.delete(op[1])
    if committed:
        store.commit("main", "ops", allow_empty=True)
    with store.read("main") as view:
        assert dict(view.scan()) == expected
        for key, value in expected.items():
            assert view.get(key) == value
        assert view.get("never-written") is None
        assert view.get_many(sorted(expected) + ["zz"]) == [expected[k] for k in
                                                             sorted(expected)] + [None]


@pytest.mark.parametrize("committed_first", [True, False])
def test_delete_of_a_committed_key_is_a_staged_tombstone(store, committed_first):
    commit(store, "main", {"a": b"1", "b": b"2"})
    stage(store, "main", {"a": None})
    assert contents(store, "main") == {"b": b"2"}
    assert [(d.key, d.kind) for d in store.staged("main")] == [("a", "removed")]
    store.commit("main", "delete a")
    assert contents(store, "main") == {"b": b"2"}


# --- scan -----------------------------------------------------------------------------------
@pytest.mark.parametrize("start, end, expected", [
    ("", None, ["a", "b", "ba", "bb", "c"]),
    ("b", None, ["b", "ba", "bb", "c"]),
    ("b", "c", ["b", "ba", "bb"]),
    ("b", "bb", ["b", "ba"]),
    ("ba", "ba", []),
    ("bz", "c", []),
    ("a0", "b0", ["b"]),
    ("d", None, []),
    ("", "a", []),
])
@pytest.mark.parametrize("layout", ["staged", "committed", "mixed"])
def test_scan_bounds(store, start, end, expected, layout):
    if layout == "committed":
        commit(store, "main", KEYS)
    elif layout == "mixed":
        commit(store, "main", {k: v for k, v in KEYS.items() if k in ("a", "bb")})
        stage(store, "main", {k: v for k, v in KEYS.items() if k not in ("a", "bb")})
    else:
        stage(store, "main", KEYS)
    with store.read("main") as view:
        assert [k for k, _ in view.scan(start, end)] == expected
        assert all(v == KEYS[k] for k, v in view.scan(start, end))


@pytest.mark.parametrize("prefix, expected", [
    ("b", ["b", "ba", "bb"]), ("ba", ["ba"]), ("x", []), ("", ["a", "b", "ba", "bb", "c"]),
])
def test_scan_prefix_and_first(store, prefix, expected):
    commit(store, "main", KEYS)
    with store.read("main") as view:
        assert [k for k, _ in view.scan_prefix(prefix)] == expected
        first = view.first(prefix)
        assert (first[0] if first else None) == next(
            (k for k in sorted(KEYS) if k >= prefix), None)


def test_seek_by_rescan_skips_subtrees(store):
    """The catalog lists tables by scanning, then re-scanning past each table's subtree."""
    data = {}
    for t in range(20):
        data[f"db/x/table/t{t:02d}"] = b"T"
        for p in range(50):
            data[f"db/x/table/t{t:02d}/part/p={p:03d}"] = b"P"
    commit(store, "main", {k: v for k, v in data.items() if "t1" not in k})
    stage(store, "main", {k: v for k, v in data.items() if "t1" in k})
    tables = []
    with store.read("main") as view:
        start = "db/x/table/"
        while True:
            hit = view.first(start, "db/x/table0")
            if hit is None:
                break
            tables.append(hit[0])
            start = hit[0] + "/\U0010ffff"  # past the table's subtree
    assert tables == [f"db/x/table/t{t:02d}" for t in range(20)]


def test_scan_iterators_are_independent(store):
    commit(store, "main", {f"k{i:03d}": b"v" for i in range(300)})
    stage(store, "main", {f"k{i:03d}x": b"s" for i in range(0, 300, 7)})
    with store.read("main") as view:
        it1 = view.scan("k100")
        it2 = view.scan("k200")
        a = [next(it1) for _ in range(5)]
        b = [next(it2) for _ in range(5)]
        assert [k for k, _ in a] == ["k100", "k101", "k102", "k103", "k104"]
        assert [k for k, _ in b] == ["k200", "k201", "k202", "k203", "k203x"]
        assert len(list(view.scan())) == 300 + 43


def test_unicode_keys_sort_by_code_point(store):
    keys = ["z", "a", "é", "\u4e2d", "\U0001F600", "\uffff", "A", "a\x00", "ab", "\x7f", "~"]
    expected = sorted(keys)  # Python compares str by code point
    assert expected.index("\uffff") < expected.index("\U0001F600")
    stage(store, "main", {k: k.encode() for k in keys[:5]})
    store.commit("main", "some")
    stage(store, "main", {k: k.encode() for k in keys[5:]})
    with store.read("main") as view:
        assert [k for k, _ in view.scan()] == expected
        assert [k for k, _ in view.scan("\u4e2d")] == [k for k in expected if k >= "\u4e2d"]
    store.commit("main", "rest")
    assert list(contents(store, "main")) == expected


# --- write transactions ----------------------------------------------------------------------
def test_write_txn_sees_its_own_writes_and_commits_on_exit(store):
    commit(store, "main", {"a": b"1", "b": b"2"})
    with store.write("main") as txn:
        txn.put("c", b"3")
        txn.delete("a")
        assert txn.get("c") == b"3" and txn.get("a") is None
        assert dict(txn.scan()) == {"b": b"2", "c": b"3"}
    assert contents(store, "main") == {"b": b"2", "c": b"3"}


def test_write_txn_rolls_back_on_exception(store):
    commit(store, "main", {"a": b"1"})
    with pytest.raises(RuntimeError):
        with store.write("main") as txn:
            txn.put("b", b"2")
            txn.delete("a")
            raise RuntimeError("boom")
    assert contents(store, "main") == {"a": b"1"}
    assert list(store.staged("main")) == []


def test_delete_prefix(store):
    commit(store, "main", {"t/1": b"", "t/2": b"", "u": b""})
    with store.write("main") as txn:
        txn.put("t/3", b"")
        assert txn.delete_prefix("t/") == 3
    assert contents(store, "main") == {"u": b""}


@pytest.mark.parametrize("target, error", [
    ("nope", RefNotFound), ("v1", ReadOnlyRef), ("main~1", ReadOnlyRef), ("main^", ReadOnlyRef),
    ("COMMIT", ReadOnlyRef),
])
def test_write_refuses_anything_but_a_branch(store, target, error):
    c = commit(store, "main", {"a": b"1"})
    store.create_tag("v1", "main")
    with pytest.raises(error):
        with store.write(c.id if target == "COMMIT" else target):
            pass


def test_read_of_unknown_ref(store):
    with pytest.raises(RefNotFound):
        with store.read("nope"):
            pass


# --- staging visibility ---------------------------------------------------------------------
def test_staging_is_visible_only_on_its_branch(store):
    c1 = commit(store, "main", {"a": b"1"})
    store.create_branch("dev", "main")
    store.create_tag("v1", "main")
    stage(store, "main", {"a": b"2", "b": b"staged"})
    assert contents(store, "main") == {"a": b"2", "b": b"staged"}
    for ref in ("dev", "v1", c1.id, c1.id[:10]):
        assert contents(store, ref) == {"a": b"1"}, ref
    assert [(d.key, d.left, d.right) for d in store.staged("main")] == [
        ("a", b"1", b"2"), ("b", None, b"staged")]
    assert list(store.staged("dev")) == []


def test_staged_reports_only_real_differences(store):
    commit(store, "main", {"a": b"1", "b": b"2"})
    stage(store, "main", {"a": b"1", "ghost": None, "b": b"3", "new": b"n"})
    stage(store, "main", {"tmp": b"x"})
    stage(store, "main", {"tmp": None})
    assert [(d.key, d.kind) for d in store.staged("main")] == [("b", "changed"), ("new", "added")]


def test_no_op_staging_is_nothing_to_commit(store):
    commit(store, "main", {"a": b"1"})
    stage(store, "main", {"a": b"1", "ghost": None})
    with pytest.raises(NothingToCommit):
        store.commit("main", "nothing")


# --- commits and log ------------------------------------------------------------------------
def test_commit_log_and_get_commit(store):
    root = store.resolve("main").commit
    c1 = commit(store, "main", {"a": b"1"}, "first")
    stage(store, "main", {"b": b"2"})
    c2 = store.commit("main", "second", author="ann", metadata={"why": "test", "n": "2"})
    assert c2.parents == (c1.id,) and c1.parents == (root,)
    assert (c2.message, c2.author, c2.metadata) == ("second", "ann", {"why": "test", "n": "2"})
    assert c2.created >= c1.created
    assert store.get_commit(c2.id) == c2
    assert store.resolve("main").commit == c2.id
    assert [c.id for c in store.log("main")] == [c2.id, c1.id, root]
    assert [c.id for c in store.log("main", limit=2)] == [c2.id, c1.id]
    assert [c.id for c in store.log(c1.id)] == [c1.id, root]
    assert list(store.staged("main")) == []
    assert contents(store, c1.id) == {"a": b"1"}
    assert contents(store, c2.id) == {"a": b"1", "b": b"2"}


def test_commit_ids_are_distinct_and_hex(store):
    ids = {commit(store, "main", {"k": bytes([i])}).id for i in range(5)}
    assert len(ids) == 5
    assert all(len(i) == 64 and int(i, 16) >= 0 for i in ids)


def test_get_commit_unknown(store):
    with pytest.raises(RefNotFound):
        store.get_commit("0" * 64)


def test_nothing_to_commit_and_allow_empty(store):
    with pytest.raises(NothingToCommit):
        store.commit("main", "empty")
    commit(store, "main", {"a": b"1"})  # (lakeFS's first commit has no metarange at all)
    with pytest.raises(NothingToCommit):
        store.commit("main", "empty")
    head = store.resolve("main").commit
    c = store.commit("main", "empty", allow_empty=True)
    assert c.parents == (head,) and c.metarange == store.get_commit(head).metarange


@pytest.mark.parametrize("call", ["commit", "staged", "reset", "delete_branch",
                                  "set_branch_protection"])
def test_branch_operations_on_unknown_branch(store, call):
    args = {"commit": ("nope", "m"), "set_branch_protection": ("nope", True)}.get(call, ("nope",))
    with pytest.raises(RefNotFound):
        result = getattr(store, call)(*args)
        list(result or [])


def test_expected_head_compare_and_swap(store):
    root = store.resolve("main").commit
    c1 = commit(store, "main", {"a": b"1"})
    stage(store, "main", {"a": b"2"})
    with pytest.raises(HeadMoved):
        store.commit("main", "stale", expected_head=root)
    assert contents(store, "main") == {"a": b"2"}  # staging kept after the failed CAS
    c2 = store.commit("main", "ok", expected_head=c1.id)
    assert c2.parents == (c1.id,)


def test_log_of_a_merge_lists_each_commit_once(store):
    base = commit(store, "main", {"a": b"1"})
    store.create_branch("dev", "main")
    m1 = commit(store, "main", {"m": b"1"})
    d1 = commit(store, "dev", {"d": b"1"})
    d2 = commit(store, "dev", {"d": b"2"})
    merge = store.commit_snapshot("main", [m1.id, d2.id], iter([("d", b"2")]), "merge dev")
    ids = [c.id for c in store.log("main")]
    assert len(ids) == len(set(ids)) == 6
    assert ids[0] == merge.id and ids[-1] == store.get_commit(base.id).parents[0]
    assert ids.index(d2.id) < ids.index(d1.id) < ids.index(base.id)
    assert ids.index(m1.id) < ids.index(base.id)
    created = [c.created for c in store.log("main")]
    assert created == sorted(created, reverse=True)


# --- refs: tags, branches, names ------------------------------------------------------------
def test_tags(store):
    c1 = commit(store, "main", {"a": b"1"})
    tag = store.create_tag("v1.0", "main")
    assert tag.commit == c1.id and store.list_tags() == [tag]
    commit(store, "main", {"a": b"2"})
    assert contents(store, "v1.0") == {"a": b"1"}
    ref = store.resolve("v1.0")
    assert (ref.tag, ref.branch, ref.writable) == ("v1.0", None, False)
    with pytest.raises(RefExists):
        store.create_tag("v1.0", "main")
    store.delete_tag("v1.0")
    assert store.list_tags() == []
    with pytest.raises(RefNotFound):
        store.delete_tag("v1.0")
    with pytest.raises(RefNotFound):
        store.delete_tag("main")


def test_branches_and_tags_share_one_namespace(store):
    store.create_branch("dev", "main")
    store.create_tag("v1", "main")
    with pytest.raises(RefExists):
        store.create_tag("dev", "main")
    with pytest.raises(RefExists):
        store.create_branch("v1", "main")
    with pytest.raises(RefExists):
        store.create_branch("main", "dev")


@pytest.mark.parametrize("source", ["branch", "tag", "commit", "prefix", "ancestry"])
def test_create_branch_from(store, source):
    c1 = commit(store, "main", {"a": b"1"})
    c2 = commit(store, "main", {"b": b"2"})
    store.create_tag("t", c1.id)
    stage(store, "main", {"staged": b"not carried over"})
    expr, expected = {"branch": ("main", c2), "tag": ("t", c1), "commit": (c1.id, c1),
                      "prefix": (c2.id[:8], c2), "ancestry": ("main~1", c1)}[source]
    branch = store.create_branch("new", expr)
    assert branch.head == expected.id and not branch.protected
    assert contents(store, "new") == contents(store, expected.id)
    assert list(store.staged("new")) == []
    assert [b.name for b in store.list_branches()] == ["main", "new"]


def test_create_branch_from_unknown_source(store):
    with pytest.raises(RefNotFound):
        store.create_branch("dev", "nope")
    assert [b.name for b in store.list_branches()] == ["main"]


@pytest.mark.parametrize("name", ["", "-x", ".x", "_x", "a..b", "a b", "a/b", "a~1", "a^",
                                  "é", "x" * 257, "a:b", "a\n"])
def test_invalid_names(store, name):
    with pytest.raises(InvalidRef):
        store.create_branch(name, "main")
    with pytest.raises(InvalidRef):
        store.create_tag(name, "main")


@pytest.mark.parametrize("name", ["a", "A", "0", "feature-1", "v1.0.2", "a_b", "x" * 256])
def test_valid_names(store, name):
    assert store.create_tag(name, "main").name == name
    assert store.resolve(name).tag == name
    store.delete_tag(name)
    if not store.branch_name_valid(name):  # a backend may be stricter (lakeFS: no dots)
        with pytest.raises(InvalidRef):
            store.create_branch(name, "main")
        return
    assert store.create_branch(name, "main").name == name
    assert store.resolve(name).branch == name


@pytest.mark.parametrize("expr", ["main~x", "main~1~", "~1", "main^^x", "ma in"])
def test_invalid_expressions(store, expr):
    with pytest.raises((InvalidRef, RefNotFound)):
        store.resolve(expr)


def test_delete_branch_and_protection(store):
    store.create_branch("dev", "main")
    stage(store, "dev", {"a": b"1"})
    store.set_branch_protection("dev", True)
    assert [b.protected for b in store.list_branches()] == [True, False]
    with pytest.raises(ProtectedRef):
        store.delete_branch("dev")
    with pytest.raises(ProtectedRef):
        store.reset("dev")
    store.set_branch_protection("dev", False)
    store.delete_branch("dev")
    assert [b.name for b in store.list_branches()] == ["main"]
    with pytest.raises(RefNotFound):
        store.delete_branch("dev")
    store.create_branch("dev", "main")  # the old staging died with the old branch
    assert contents(store, "dev") == {} and list(store.staged("dev")) == []


def test_reset_drops_staging(store):
    commit(store, "main", {"a": b"1"})
    stage(store, "main", {"a": b"2", "b": b"3"})
    assert store.reset("main") == 2
    assert contents(store, "main") == {"a": b"1"}
    assert store.reset("main") == 0


# --- ref expressions ------------------------------------------------------------------------
def test_ancestry_expressions(store):
    root = store.resolve("main").commit
    c1 = commit(store, "main", {"a": b"1"})
    store.create_branch("dev", "main")
    c2 = commit(store, "main", {"a": b"2"})
    d1 = commit(store, "dev", {"d": b"1"})
    m = store.commit_snapshot("main", [c2.id, d1.id], iter([("d", b"1")]), "merge")
    c3 = commit(store, "main", {"a": b"3"})
    store.create_tag("t", "main")
    cases = {
        "main": c3.id, "main~0": c3.id, "main^0": c3.id, "main~1": m.id, "main^": m.id,
        "main^1": m.id, "main~2": c2.id, "main^^": c2.id, "main~3": c1.id, "main~4": root,
        "main~1^2": d1.id, "main^^2": d1.id, "main~1^2~1": c1.id, "t~1^2": d1.id,
        f"{c3.id}~2": c2.id, f"{c3.id[:7]}^": m.id,
    }
    for expr, expected in cases.items():
        ref = store.resolve(expr)
        assert ref.commit == expected, expr
        assert ref.branch == ("main" if expr == "main" else None), expr
    assert contents(store, "main~2") == {"a": b"2"}
    for expr in ("main~5", "main^3", "main~1^3", "dev^2"):
        with pytest.raises(RefNotFound):
            store.resolve(expr)


def test_commit_id_and_prefix_resolution(store):
    c1 = commit(store, "main", {"a": b"1"})
    for expr in (c1.id, c1.id[:6], c1.id[:20], c1.id.upper()[:12]):
        ref = store.resolve(expr)
        assert (ref.commit, ref.branch, ref.tag) == (c1.id, None, None), expr
    with pytest.raises(RefNotFound):
        store.resolve(c1.id[:5])  # too short to be a commit prefix
    with pytest.raises(RefNotFound):
        store.resolve("f" * 64 if not c1.id.startswith("f") else "0" * 64)


def test_branch_names_win_over_commit_prefixes(store):
    c1 = commit(store, "main", {"a": b"1"})
    commit(store, "main", {"a": b"2"})
    store.create_branch(c1.id[:8], "main")
    assert store.resolve(c1.id[:8]).branch == c1.id[:8]
    assert store.resolve(c1.id[:9]).commit == c1.id


# --- merge base -----------------------------------------------------------------------------
def test_merge_base_linear(store):
    root = store.resolve("main").commit
    c1 = commit(store, "main", {"a": b"1"})
    c2 = commit(store, "main", {"a": b"2"})
    assert store.merge_base("main", "main~2") == root
    assert store.merge_base("main~1", "main") == c1.id
    assert store.merge_base("main", c2.id) == c2.id


def test_merge_base_forked_and_after_merge(store):
    c1 = commit(store, "main", {"a": b"1"})
    store.create_branch("dev", "main")
    m1 = commit(store, "main", {"m": b"1"})
    d1 = commit(store, "dev", {"d": b"1"})
    assert store.merge_base("main", "dev") == c1.id
    assert store.merge_base("dev", "main") == c1.id
    store.commit_snapshot("main", [m1.id, d1.id], iter([("d", b"1")]), "merge dev")
    assert store.merge_base("main", "dev") == d1.id
    d2 = commit(store, "dev", {"d": b"2"})
    commit(store, "main", {"m": b"2"})
    assert store.merge_base("main", "dev") == d1.id
    assert store.merge_base("dev", "main") == d1.id
    assert store.merge_base(d2.id, d2.id) == d2.id


def test_merge_base_criss_cross_picks_a_best_candidate(store):
    commit(store, "main", {"a": b"1"})
    store.create_branch("dev", "main")
    m1 = commit(store, "main", {"m": b"1"})
    d1 = commit(store, "dev", {"d": b"1"})
    store.commit_snapshot("main", [m1.id, d1.id], iter([]), "merge dev into main")
    store.commit_snapshot("dev", [d1.id, m1.id], iter([]), "merge main into dev")
    assert store.merge_base("main", "dev") in (m1.id, d1.id)


def test_merge_base_of_unrelated_histories(store):
    store.create_branch("orphan", "main")
    if not store.exact_snapshots:  # lakeFS: every commit descends from the repository's first
        with pytest.raises(StoreError):
            store.commit_snapshot("orphan", [], iter([("x", b"1")]), "new root")
        return
    store.commit_snapshot("orphan", [], iter([("x", b"1")]), "new root")
    commit(store, "main", {"a": b"1"})
    assert store.merge_base("main", "orphan") is None


# --- diff -----------------------------------------------------------------------------------
def test_diff_between_commits(store):
    c1 = commit(store, "main", {"a": b"1", "b": b"2", "t/x": b"3", "t/y": b"4"})
    c2 = commit(store, "main", {"a": None, "b": b"22", "c": b"new", "t/y": None, "t/z": b"5"})
    assert diff(store, c1.id, c2.id) == [
        ("a", b"1", None), ("b", b"2", b"22"), ("c", None, b"new"), ("t/y", b"4", None),
        ("t/z", None, b"5")]
    assert diff(store, c2.id, c1.id)[0] == ("a", None, b"1")
    assert diff(store, c1.id, c2.id, prefix="t/") == [("t/y", b"4", None), ("t/z", None, b"5")]
    assert diff(store, c1.id, c1.id) == [] and diff(store, "main", c2.id) == []
    kinds = [d.kind for d in store.diff(c1.id, c2.id)]
    assert kinds == ["removed", "changed", "added", "removed", "added"]
    assert all(isinstance(d, DiffEntry) for d in store.diff(c1.id, c2.id))


def test_diff_includes_staging_of_branch_refs(store):
    c1 = commit(store, "main", {"a": b"1", "b": b"2"})
    store.create_branch("dev", "main")
    stage(store, "main", {"a": b"main", "s": b"s"})
    stage(store, "dev", {"b": None, "s": b"s"})
    assert diff(store, c1.id, "main") == [("a", b"1", b"main"), ("s", None, b"s")]
    assert diff(store, "main", "dev") == [("a", b"main", b"1"), ("b", b"2", None)]
    assert diff(store, "dev", c1.id) == [("b", None, b"2"), ("s", b"s", None)]
    assert diff(store, "main", "main") == []
    assert diff(store, "main", "dev", prefix="s") == []


def test_diff_on_a_large_tree_with_a_small_change(store):
    c1 = commit(store, "main", {f"k{i:05d}": b"%d" % i for i in range(3000)})
    c2 = commit(store, "main", {"k01500": b"changed", "k02999": None, "k03000": b"+"})
    assert diff(store, c1.id, c2.id) == [
        ("k01500", b"1500", b"changed"), ("k02999", b"2999", None), ("k03000", None, b"+")]


# --- commit_snapshot ------------------------------------------------------------------------
def test_commit_snapshot(store):
    c1 = commit(store, "main", {"a": b"1", "b": b"2"})
    store.create_branch("dev", "main")
    d1 = commit(store, "dev", {"d": b"1"})
    stage(store, "main", {"staged": b"kept"})
    if not store.exact_snapshots:
        _inexact_commit_snapshot(store, c1, d1)
        return
    snap = store.commit_snapshot(
        "main", [c1.id, d1.id], iter([("d", b"1"), ("a", None), ("b", b"x"), ("b", b"3")]),
        "merge", author="bot", metadata={"strategy": "fail"})
    assert snap.parents == (c1.id, d1.id) and snap.author == "bot"
    assert snap.metadata == {"strategy": "fail"}
    assert store.resolve("main").commit == snap.id
    assert contents(store, snap.id) == {"b": b"3", "d": b"1"}
    assert contents(store, "main") == {"b": b"3", "d": b"1", "staged": b"kept"}
    with pytest.raises(HeadMoved):
        store.commit_snapshot("main", [c1.id], iter([]), "stale", expected_head=c1.id)
    again = store.commit_snapshot("main", [snap.id], iter([]), "noop", expected_head=snap.id)
    assert again.metarange == snap.metarange


def _inexact_commit_snapshot(store, c1, d1):
    """A backend whose merges are its storage's own (``exact_snapshots`` False): a clean
    branch is needed; a merge whose changes are exactly what merging the source gives has
    exactly the two parents; other changes sit on a commit made on top of the source."""
    with pytest.raises(DirtyBranch):
        store.commit_snapshot("main", [c1.id, d1.id], iter([("d", b"1")]), "merge")
    assert contents(store, "main") == {"a": b"1", "b": b"2", "staged": b"kept"}
    store.reset("main")
    plain = store.commit_snapshot("main", [c1.id, d1.id], iter([("d", b"1")]), "merge",
                                  author="bot", metadata={"strategy": "fail"})
    assert plain.parents == (c1.id, d1.id) and plain.author == "bot"
    assert plain.metadata == {"strategy": "fail"}
    assert contents(store, plain.id) == {"a": b"1", "b": b"2", "d": b"1"}
    d2 = commit(store, "dev", {"d": b"2", "e": b"5"})
    snap = store.commit_snapshot(
        "main", [plain.id, d2.id], iter([("d", b"2"), ("a", None), ("b", b"x"), ("b", b"3")]),
        "merge again", author="bot")
    assert snap.parents[0] == plain.id and d2.id in {c.id for c in store.log(snap.id)}
    assert store.resolve("main").commit == snap.id
    assert contents(store, snap.id) == {"b": b"3", "d": b"2"}  # e: not among the changes
    with pytest.raises(HeadMoved):
        store.commit_snapshot("main", [c1.id], iter([]), "stale", expected_head=c1.id)
    again = store.commit_snapshot("main", [snap.id], iter([("f", b"6")]), "one parent",
                                  expected_head=snap.id)
    assert again.parents == (snap.id,) and contents(store, "main") == {
        "b": b"3", "d": b"2", "f": b"6"}


def test_store_get_answers_like_a_read_view(store):
    """``store.get`` (a backend's fast path) agrees with ``read(ref).get`` everywhere."""
    commit(store, "main", {"a": b"1", "b": b"2", "c": b"3"})
    first = store.resolve("main").commit
    store.create_tag("t1", "main")
    commit(store, "main", {"a": b"10"})
    stage(store, "main", {"b": None, "d": b"4", "c": b"30"})
    store.create_branch("dev", "main")
    refs = ["main", "dev", "t1", first, first[:8], "main~1", "main^"]
    for ref in refs:
        for key in ["a", "b", "c", "d", "e"]:
            with store.read(ref) as view:
                expected = view.get(key)
            assert store.get(ref, key) == expected, (ref, key)
    with pytest.raises(RefNotFound):
        store.get("nope", "a")


def test_view_tokens_identify_content(store):
    """Equal tokens mean equal content; every change to a branch changes its token."""
    def token(ref):
        with store.read(ref) as view:
            return view.token, dict(view.scan())

    t0, c0 = token("main")
    assert token("main") == (t0, c0)
    stage(store, "main", {"a": b"1"})
    t1, c1 = token("main")
    assert t1 != t0
    with store.write("main"):
        pass  # a write transaction that changes nothing keeps the token
    assert token("main")[0] == t1
    store.commit("main", "c1")
    t2, c2 = token("main")
    assert t2 not in (t0, t1) and c2 == c1
    store.create_tag("v1", "main")
    assert token("v1")[0] == token("v1")[0]
    stage(store, "main", {"b": b"2"})
    t3 = token("main")[0]
    store.reset("main")
    t4, c4 = token("main")
    assert t4 != t3 and c4 == c2  # (t4 may equal t2: the same content)
    head = store.resolve("main").commit
    assert token(head)[0] == token("v1")[0]


def test_store_token_matches_a_read_views_token(store):
    commit(store, "main", {"a": b"1"})
    store.create_tag("t", "main")
    stage(store, "main", {"b": b"2"})
    head = store.resolve("main").commit
    for ref in ("main", "t", head, "main~1"):
        with store.read(ref) as view:
            assert store.token(ref) == view.token, ref
