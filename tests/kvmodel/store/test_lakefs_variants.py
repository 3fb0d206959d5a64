"""Keys kept per branch on lakeFS (:mod:`kvmodel.store.lakefs.variants`): a fold writes them as
the branch's own variant (``_hms_v/<branch>/<key>``), never as ``_hms/<key>``, so that lakeFS's
own merge of two branches that both changed one finds no conflict and leaves the decision to
the catalog's merge; a key one side changed merges as that side's; the store's own merge of a
key both changed writes the result as the destination's variant; deletes, resets, tags and
lakeFS's reverts read as they should. Against the real lakeFS of the test session."""
from __future__ import annotations

import pytest

from kvmodel.merge import merge_refs
from kvmodel.store.errors import MergeConflict
from kvmodel.store.lakefs import LakeFSStore
from tests.support.lakefs import new_repository, real_lakefs

pytestmark = pytest.mark.timeout(300)


def carried(key: str, value: bytes) -> bool:
    return key.startswith("ice/")


@pytest.fixture
def lake():
    store = LakeFSStore(new_repository("variants"), real_lakefs().config(), refresh=0.05,
                        carried=carried)
    yield store
    store.close()


def put(store, branch, items: dict, message="c"):
    with store.write(branch) as txn:
        for key, value in items.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value)
    return store.commit(branch, message)


def objects(store, ref: str, prefix: str) -> list[str]:
    return sorted(o.path for o in store.api.objects.list_objects(
        store.repository, ref, prefix=prefix, amount=1000).results)


def lakefs_merge(store, source: str, dest: str):
    """lakeFS's own merge (as ``lakectl merge`` makes it), without hms-proxy."""
    store.api.refs.merge_into_branch(store.repository, source, dest,
                                     store.api.sdk.Merge(message=f"merge {source}"))
    store.latest(dest)  # read as it is now (another tool moved it: else within 1 s)


def test_a_fold_writes_a_carried_key_as_the_branchs_own_variant(lake):
    put(lake, "main", {"ice/t": b"v0", "hive/h": b"h0"})
    assert objects(lake, "main", "_hms_v/") == ["_hms_v/main/ice/t"]
    assert objects(lake, "main", "_hms/") == ["_hms/hive/h"]
    assert lake.get("main", "ice/t") == b"v0"
    commit = lake.resolve("main").commit
    assert lake.get(commit, "ice/t") == b"v0"  # read at the commit, as at the branch
    assert [k for k, _ in lake.read(commit).__enter__().scan("")] == ["hive/h", "ice/t"]
    put(lake, "main", {"ice/t": b"v1"})
    assert objects(lake, "main", "_hms_v/") == ["_hms_v/main/ice/t"]  # the same object again
    assert lake.get("main", "ice/t") == b"v1" and lake.get(commit, "ice/t") == b"v0"
    # a key without a variant and outside the policy: a per-key object as before
    put(lake, "main", {"hive/h": b"h1"})
    assert lake.get("main", "hive/h") == b"h1" and objects(lake, "main", "_hms/") == [
        "_hms/hive/h"]


def test_both_branches_change_a_carried_key_and_lakefs_merges_without_a_conflict(lake):
    put(lake, "main", {"ice/t": b"base", "hive/h": b"base"})
    lake.create_branch("dev", "main")
    put(lake, "dev", {"ice/t": b"dev"})
    put(lake, "main", {"ice/t": b"main"})
    lakefs_merge(lake, "dev", "main")  # two variants, no object both sides changed
    assert objects(lake, "main", "_hms_v/") == ["_hms_v/dev/ice/t", "_hms_v/main/ice/t"]
    assert lake.get("main", "ice/t") == b"main"  # the newest variant: main wrote last
    # the catalog's 3-way merge sees the key changed on both sides (what the pre-merge hook
    # checks a lakeFS merge commit against), and the store's merge decides it
    lake.create_branch("dev2", "dev")
    put(lake, "dev2", {"ice/t": b"dev2"})
    put(lake, "main", {"ice/t": b"main2"})
    with pytest.raises(MergeConflict):
        merge_refs(lake, "dev2", "main")
    merge_refs(lake, "dev2", "main", strategy="source-wins")
    assert lake.get("main", "ice/t") == b"dev2"
    # written as main's own variant, newer than both sides'
    assert objects(lake, "main", "_hms_v/") == ["_hms_v/dev/ice/t", "_hms_v/dev2/ice/t",
                                                "_hms_v/main/ice/t"]
    fresh = LakeFSStore(lake.repository, real_lakefs().config(), refresh=0, carried=carried)
    try:
        assert fresh.get("main", "ice/t") == b"dev2"  # another process reads the same
    finally:
        fresh.close()


def test_a_carried_key_one_side_changed_merges_as_that_sides(lake):
    put(lake, "main", {"ice/t": b"base", "ice/u": b"u0"})
    lake.create_branch("dev", "main")
    put(lake, "dev", {"ice/t": b"dev"})
    put(lake, "main", {"ice/u": b"u1"})  # main changed another carried key
    lakefs_merge(lake, "dev", "main")
    assert lake.get("main", "ice/t") == b"dev" and lake.get("main", "ice/u") == b"u1"
    # and back: dev gets main's change of u, keeps its own t
    lakefs_merge(lake, "main", "dev")
    assert lake.get("dev", "ice/t") == b"dev" and lake.get("dev", "ice/u") == b"u1"
    # the store's merge reads the same
    lake.create_branch("dev3", "main")
    put(lake, "dev3", {"ice/u": b"u3"})
    merge_refs(lake, "dev3", "main")
    assert lake.get("main", "ice/u") == b"u3" and lake.get("main", "ice/t") == b"dev"


def test_a_deleted_carried_key_stays_deleted_and_a_revert_brings_it_back(lake):
    put(lake, "main", {"ice/t": b"v0"})
    lake.create_tag("before", "main")
    dropped = put(lake, "main", {"ice/t": None})
    assert lake.get("main", "ice/t") is None
    assert [k for k, _ in lake.read("main").__enter__().scan("")] == []
    assert lake.get("before", "ice/t") == b"v0"
    lake.create_branch("dev", "main")
    assert lake.get("dev", "ice/t") is None
    lake.api.branches.revert_branch(lake.repository, "main",
                                    lake.api.sdk.RevertCreation(ref=dropped.id, parent_number=0))
    lake.latest("main")
    assert lake.get("main", "ice/t") == b"v0"
    # written again after the drop, on a branch made before it came back
    put(lake, "dev", {"ice/t": b"again"})
    assert lake.get("dev", "ice/t") == b"again"


def test_uncommitted_variants_of_a_fold_read_and_a_reset_drops_them(lake):
    put(lake, "main", {"ice/t": b"v0"})
    with lake.write("main") as txn:
        txn.put("ice/t", b"v1")
    lake.fold("main")  # what lakeFS's prepare-commit hook does before a commit
    assert objects(lake, "main@", "_hms_v/") == ["_hms_v/main/ice/t"]
    other = LakeFSStore(lake.repository, real_lakefs().config(), refresh=0, carried=carried)
    try:
        assert other.get("main", "ice/t") == b"v1"  # the staged variant, as another server
        assert [e.key for e in other.staged("main")] == ["ice/t"]
        assert lake.reset("main") == 1
        assert other.get("main", "ice/t") == b"v0"
    finally:
        other.close()


def test_without_the_guard_at_the_head_new_keys_stay_per_key_objects():
    """With a guard (the catalog's: the lakeFS action whose pre-merge hook checks lakeFS's
    merges), the policy applies only on a branch whose head holds it: elsewhere lakeFS's merge
    must stop on its own conflict for a key both branches changed, as before."""
    store = LakeFSStore(new_repository("guard"), real_lakefs().config(), refresh=0.05,
                        carried=carried, carry_guard="guard/action.yaml")
    try:
        put(store, "main", {"ice/t": b"v0"})
        assert objects(store, "main", "_hms_v/") == []
        assert objects(store, "main", "_hms/") == ["_hms/ice/t"]
        store.api.upload("main", "guard/action.yaml", b"on")
        put(store, "main", {"ice/u": b"u0"})  # the guard is committed with this
        put(store, "main", {"ice/u": b"u1", "ice/t": b"v1"})
        assert objects(store, "main", "_hms_v/") == ["_hms_v/main/ice/t", "_hms_v/main/ice/u"]
        assert store.get("main", "ice/t") == b"v1" and store.get("main", "ice/u") == b"u1"
    finally:
        store.close()
