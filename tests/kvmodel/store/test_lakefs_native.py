"""The catalog under lakeFS's own operations: commits, branches, merges, reverts, cherry-picks,
tags and resets made with lakeFS's API (what ``lakectl``, the lakeFS UI, Airflow's operators
and every other lakeFS client call), with no hms-proxy call between them and no hooks installed.

What a ref reads as is a function of its objects alone (``kvmodel.store.lakefs.log``): the
write-log entries a lakeFS commit holds apply at that commit and on every branch made from it,
and a lakeFS merge brings them with the data. Against the real lakeFS of the test session; its
API is driven through lakefs-sdk as lakectl drives it.
"""
from __future__ import annotations

import pytest

from kvmodel.store.errors import WriteConflict
from kvmodel.store.lakefs import LakeFSStore  # noqa: E402  (lakefs-sdk is there)
from tests.support.lakefs import LakeFSApi, new_repository, real_lakefs
from tests.support.wait import wait_until


@pytest.fixture
def lake():
    server = real_lakefs()
    repo = new_repository("native")
    # refresh=0: every read asks lakeFS, as lakeFS's operations are another process's changes
    store = LakeFSStore(repo, server.config(), refresh=0)
    client = server.sdk()
    api = LakeFSApi(client, repo)
    try:
        yield store, api
    finally:
        store.close()
        client.close()


def write(store, branch: str, items: dict) -> None:
    with store.write(branch) as txn:
        for key, value in items.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value)


def catalog(store, ref: str) -> dict:
    with store.read(ref) as view:
        return dict(view.scan())


def test_a_lakefs_commit_then_a_lakefs_branch_keeps_the_catalog(lake):
    store, api = lake
    write(store, "main", {"db/shop": b"shop", "db/shop/table/orders": b"orders v1"})
    head = api.commit("main", "lakectl commit")  # no fold: the log entries are committed
    api.branch("dev", "main")
    want = {"db/shop": b"shop", "db/shop/table/orders": b"orders v1"}
    assert catalog(store, "main") == want
    assert catalog(store, "dev") == want
    assert catalog(store, head) == want  # a commit id, as time travel reads it
    assert not list(store.staged("main")) and not list(store.staged("dev"))
    # the branch is written as any other
    write(store, "dev", {"db/shop/table/returns": b"returns"})
    assert catalog(store, "dev")["db/shop/table/returns"] == b"returns"
    assert "db/shop/table/returns" not in catalog(store, "main")
    # and a fresh process sees the same
    fresh = LakeFSStore(store.repository, real_lakefs().config())
    try:
        assert catalog(fresh, "dev") == {**want, "db/shop/table/returns": b"returns"}
        assert catalog(fresh, head) == want
    finally:
        fresh.close()


def test_a_lakefs_merge_brings_the_catalog_with_the_data(lake):
    store, api = lake
    write(store, "main", {"db/shop": b"shop", "db/shop/table/orders": b"orders v1"})
    store.commit("main", "hms-proxy commit")  # folded into per-key objects
    api.branch("dev", "main")
    write(store, "dev", {"db/shop/table/returns": b"returns",
                         "db/shop/table/orders": b"orders v2"})
    store.api.upload("dev", "warehouse/shop.db/returns/part-0.parquet", b"PAR1")  # Spark's
    api.commit("dev", "dev work, committed with lakectl")
    api.merge("dev", "main")
    got = catalog(store, "main")
    assert got["db/shop/table/returns"] == b"returns"
    assert got["db/shop/table/orders"] == b"orders v2"
    assert bytes(api.objects.get_object(store.repository, "main",
                                        "warehouse/shop.db/returns/part-0.parquet")) == b"PAR1"
    # the diff between the two commits of main speaks of the catalog, not of log objects
    changed = {d.key for d in store.diff("main~1", "main")}
    assert changed == {"db/shop/table/returns", "db/shop/table/orders"}


def test_a_lakefs_revert_and_a_cherry_pick_move_the_catalog(lake):
    store, api = lake
    write(store, "main", {"db/a": b"a"})
    api.commit("main", "a")
    write(store, "main", {"db/b": b"b", "db/a": None})
    second = api.commit("main", "b, and a dropped")
    assert catalog(store, "main") == {"db/b": b"b"}
    api.revert("main", second)
    assert catalog(store, "main") == {"db/a": b"a"}
    # cherry-picked onto another branch made before it
    api.branch("other", "main~2")
    api.cherry_pick("other", second)
    assert catalog(store, "other") == {"db/b": b"b"}


def test_a_lakefs_tag_and_reset(lake):
    store, api = lake
    write(store, "main", {"db/a": b"a"})
    api.commit("main", "a")
    api.tag("v1", "main")
    write(store, "main", {"db/a": b"changed", "db/b": b"b"})  # staged, not committed
    assert catalog(store, "v1") == {"db/a": b"a"}
    api.reset("main")  # lakectl branch reset: the staged entries dropped
    assert catalog(store, "main") == {"db/a": b"a"}
    write(store, "main", {"db/c": b"c"})  # writes go on after a reset
    assert catalog(store, "main") == {"db/a": b"a", "db/c": b"c"}


def test_hms_proxy_commit_folds_what_lakefs_commits_left_in_the_log(lake):
    store, api = lake
    write(store, "main", {"db/a": b"a", "db/b": b"b"})
    api.commit("main", "lakectl commit: two entries")
    api.branch("dev", "main")
    write(store, "dev", {"db/a": None, "db/c": b"c"})
    store.commit("dev", "hms-proxy commit")  # folds dev's entry and main's two
    want = {"db/b": b"b", "db/c": b"c"}
    assert catalog(store, "dev") == want
    plan, _ = store._read_log("dev")
    assert plan.live == []
    # per-key objects hold it all now: what lakeFS's own diff and UI show
    paths = {o.path for o in api.objects.list_objects(store.repository, "dev",
                                                      prefix="_hms/").results}
    assert paths == {"_hms/db/b", "_hms/db/c"}
    # main keeps reading as it was; merged, it reads as dev
    assert catalog(store, "main") == {"db/a": b"a", "db/b": b"b"}
    api.merge("dev", "main")
    assert catalog(store, "main") == want


def test_two_stores_writing_one_branch_never_write_over_each_other(lake):
    """Two servers (stores) over one repository: a write made on a state that missed the
    other's write loses its slot and is refused (WriteConflict: the call runs again), never
    applied over what it did not see."""
    store, _ = lake
    other = LakeFSStore(store.repository, real_lakefs().config(), refresh=60)
    try:
        write(store, "main", {"db/a": b"1"})
        other.get("main", "db/a")  # its state now: slot 1 seen
        write(store, "main", {"db/a": b"2"})  # slot 2, which the other does not know
        with pytest.raises(WriteConflict):
            with other.write("main") as txn:  # a state 60 s fresh, missing slot 2
                assert txn.get("db/a") == b"1"
                txn.put("db/a", b"3")
        with other.write("main") as txn:  # read again: it sees the other write now
            assert txn.get("db/a") == b"2"
            txn.put("db/a", b"3")
        assert catalog(other, "main") == {"db/a": b"3"}
        wait_until(lambda: store.get("main", "db/a") == b"3",
                   what="the first store sees the other's write (within its bound)")
    finally:
        other.close()


def test_a_merge_starts_from_the_heads_lakefs_has_now_not_a_cached_one(lake):
    """A server that read a branch a moment ago keeps its head for reads (within its bound);
    a merge or a revert through it starts from lakeFS's heads as they are: a commit another
    process made just before is merged (it was "up to date" on the cached head)."""
    from kvmodel.merge import merge_refs

    store, api = lake
    write(store, "main", {"db/a": b"a"})
    store.commit("main", "a")
    api.branch("web", "main")
    api.branch("site", "main")
    server = LakeFSStore(store.repository, real_lakefs().config(), refresh=60)
    try:
        assert server.resolve("web").commit == server.resolve("site").commit
        server.get("web", "db/a")  # web's state, cached for a minute
        write(store, "web", {"db/b": b"b"})
        head = api.commit("web", "b, committed with lakectl")
        assert server.resolve("web").commit != head  # the cached head, as reads may use it
        assert server.latest("web").commit == head
        done = merge_refs(server, "web", "site", message="web into site")
        assert done.commit is not None and [c.key for c in done.applied] == ["db/b"]
        assert server.merge_base(done.commit.id, head) == head  # the commit is merged
        assert catalog(server, "site") == {"db/a": b"a", "db/b": b"b"}
    finally:
        server.close()


def test_a_write_on_a_state_older_than_a_fold_goes_after_the_fold(lake):
    """A fold takes a slot too, and keeps the slots it folded for a while: a writer that read
    the branch before the fold never takes a slot it did not know was used. Its write (of a
    key the fold did not change: a fold changes no value) is uploaded again after the fold's
    entry; both are kept."""
    from kvmodel.store.lakefs import log as lakefs_log

    store, _ = lake
    other = LakeFSStore(store.repository, real_lakefs().config(), refresh=60)
    try:
        write(store, "main", {"db/a": b"1"})
        other.get("main", "db/a")  # its state: slot 1
        store.commit("main", "folded")  # the fold entry takes slot 2
        with other.write("main") as txn:  # decided on slot 1: loses slot 2, goes after it
            assert txn.get("db/a") == b"1"
            txn.put("db/b", b"2")
        assert catalog(store, "main") == {"db/a": b"1", "db/b": b"2"}
        assert catalog(other, "main") == {"db/a": b"1", "db/b": b"2"}
        own = lakefs_log.directory("main")
        slots = sorted(o.path for o in store.api(store.api.objects.list_objects, "main",
                                                  prefix=own, amount=100).results)
        assert lakefs_log.slot_path("main", 2) in slots  # the fold's entry, not written over
        assert lakefs_log.slot_path("main", 3) in slots
    finally:
        other.close()


def test_folded_slots_go_after_a_while_but_each_directorys_last(lake, monkeypatch):
    from kvmodel.store.lakefs import log as lakefs_log

    store, api = lake
    for i in range(3):
        write(store, "main", {f"db/t{i}": b"x"})
    store.commit("main", "three")
    write(store, "main", {"db/t3": b"x"})
    monkeypatch.setattr(lakefs_log, "RETAIN", -1.0)  # as if minutes had passed
    store.commit("main", "four")
    monkeypatch.undo()
    left = [o.path for o in api.objects.list_objects(store.repository, "main",
                                                     prefix="_hms_log/").results]
    assert left == ["_hms_log/main/000000000006"], left  # the last fold entry alone
    assert catalog(store, "main") == {f"db/t{i}": b"x" for i in range(4)}
    write(store, "main", {"db/t4": b"x"})  # numbering goes on after it
    assert store._read_log("main")[0].live[-1].seq == 7


def test_a_write_that_read_too_long_ago_is_refused(lake, monkeypatch):
    """A writer's state must be younger than half the time folded slots are kept, or a slot
    it did not know was used may have been freed: such a write is refused, to be run again
    on a fresh state."""
    import time

    from kvmodel.store.lakefs import log as lakefs_log

    store, _ = lake
    monkeypatch.setattr(lakefs_log, "RETAIN", 1.0)
    write(store, "main", {"db/a": b"1"})
    with pytest.raises(WriteConflict, match="read too long ago"):
        with store.write("main") as txn:
            txn.put("db/b", b"2")
            time.sleep(0.6)  # the bound under test: RETAIN / 2
    assert catalog(store, "main") == {"db/a": b"1"}
