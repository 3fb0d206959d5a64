"""Group commit on lakeFS (:mod:`kvmodel.store.lakefs.groups`): the writes of one branch that
arrive while its log upload is in flight go together into the next slot. Against the real
lakeFS of the session; the failed upload is an injected fault (a test double for a lakeFS that
refuses one upload), beside the real-system tests."""
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("lakefs_sdk")

from kvmodel.store.errors import WriteConflict, decided_again  # noqa: E402
from kvmodel.store.lakefs import LakeFSError, LakeFSStore  # noqa: E402
from kvmodel.store.lakefs import log as lakefs_log  # noqa: E402
from tests.support.lakefs import new_repository, real_lakefs  # noqa: E402
from tests.support.wait import wait_until  # noqa: E402
from tests.support.writers import writers_at_once  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def lake():
    store = LakeFSStore(new_repository("groups"), real_lakefs().config())
    yield store
    store.close()


def _log_entries(store) -> list[str]:
    return [o.path for o in store.api.objects.list_objects(
        store.repository, "main", prefix=lakefs_log.LOG, amount=1000).results]


def test_concurrent_writes_share_uploads_and_each_is_kept(lake):
    lake.get("main", "x")

    def put(w, i):
        with lake.write("main") as txn:
            txn.put(f"db/d/table/w{w}/part/p={i:03d}", b"%d-%d" % (w, i))

    errors = writers_at_once(8, 25, put)
    assert errors == []
    with lake.read("main") as view:
        assert len(list(view.scan_prefix("db/d/table/"))) == 200
    entries = _log_entries(lake)
    assert len(entries) < 200, entries  # writes in flight together went into one slot
    reopened = LakeFSStore(lake.repository, real_lakefs().config())
    try:  # what lakeFS holds, read by another server
        with reopened.read("main") as view:
            assert {k: v for k, v in view.scan_prefix("db/d/table/w3/")} == {
                f"db/d/table/w3/part/p={i:03d}": b"3-%d" % i for i in range(25)}
    finally:
        reopened.close()


def test_each_write_is_checked_against_the_writes_before_it_in_its_group(lake):
    """A counter incremented by 8 writers 20 times each, read-modify-write in each transaction:
    no increment is lost, as none is with one write at a time."""
    with lake.write("main") as txn:
        txn.put("counter", b"0")

    def increment(w, i):
        with lake.write("main") as txn:
            txn.put("counter", b"%d" % (int(txn.get("counter")) + 1))

    assert writers_at_once(8, 20, increment) == []
    assert lake.get("main", "counter") == b"160"
    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        assert other.get("main", "counter") == b"160"
    finally:
        other.close()


def test_a_failed_upload_fails_its_group_and_the_one_formed_over_it(lake, monkeypatch):
    """Injected fault: lakeFS refuses the upload of one group. Every write of that group and
    of the group formed over it fails (nothing of them is in the log); decided again, each
    goes through; nothing is half applied."""
    lake.get("main", "x")
    real_upload = lake.api.upload_new
    refused = threading.Event()
    started = threading.Event()

    def upload_new(branch, path, data, headers):
        if not refused.is_set():
            refused.set()
            started.set()
            time.sleep(0.3)  # writes arrive meanwhile and form the next group
            raise LakeFSError("injected: lakeFS refused the upload")
        return real_upload(branch, path, data, headers)

    monkeypatch.setattr(lake.api, "upload_new", upload_new)
    outcomes: dict = {}
    lock = threading.Lock()

    def write(w, i):
        if w:
            started.wait(10)

        def decide():
            with lake.write("main") as txn:
                txn.put(f"k{w}", b"a")
                txn.put(f"k{w}-twin", b"a")  # both keys of a write, or neither
        try:
            decided_again(decide)
            result = "written"
        except WriteConflict:
            result = "conflict"
        except LakeFSError:
            result = "refused"
        with lock:
            outcomes[w] = result

    assert writers_at_once(6, 1, write) == []
    assert outcomes[0] == "refused"
    assert [w for w, r in outcomes.items() if r == "refused"] == [0]
    assert all(outcomes[w] == "written" for w in range(1, 6)), outcomes
    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        with other.read("main") as view:
            got = dict(view.scan_prefix("k"))
    finally:
        other.close()
    assert got == {**{f"k{w}": b"a" for w in range(1, 6)},
                   **{f"k{w}-twin": b"a" for w in range(1, 6)}}


def test_a_commit_waits_for_the_groups_in_flight(lake):
    """A commit takes the branch whole: each writer's writes before it are all in it (a
    prefix of what each wrote, never a write without the ones before it), the rest in the
    next commit."""
    lake.get("main", "x")
    stop = threading.Event()
    written: dict[int, list[int]] = {t: [] for t in range(3)}

    def writer(t):
        i = 0
        while not stop.is_set():
            with lake.write("main") as txn:
                txn.put(f"n/{t}/{i:05d}", b"v")
            written[t].append(i)
            i += 1

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    wait_until(lambda: sum(len(w) for w in written.values()) >= 30, what="30 writes")
    commit = lake.commit("main", "while writing")
    stop.set()
    for t in threads:
        t.join(60)
    with lake.read(commit.id) as view:
        in_commit = [k for k, _ in view.scan_prefix("n/")]
    for t in range(3):
        mine = sorted(int(k.rsplit("/", 1)[1]) for k in in_commit if k.startswith(f"n/{t}/"))
        assert mine == list(range(len(mine))), (t, mine)
    assert len(in_commit) >= 30
    last = lake.commit("main", "the rest")
    with lake.read(last.id) as view:
        assert sorted(k for k, _ in view.scan_prefix("n/")) == sorted(
            f"n/{t}/{i:05d}" for t, ids in written.items() for i in ids)


# --- the slot chain (kvmodel.store.lakefs.log.plan), as listed ------------------------------
def _slot(seq, nonce, pred=None, fold=False, directory="main"):
    return lakefs_log.Listed(lakefs_log.slot_path(directory, seq), directory, seq, seq * 10,
                             f"c{seq}-{nonce}", fold=fold, floor=seq - 1 if fold else 0,
                             named=0 if fold else -1, nonce=nonce, pred=pred)


def _planned(*objects):
    return lakefs_log.plan(list(objects), {})


def test_an_entry_counts_once_the_entry_it_was_decided_over_is_in_the_chain():
    plan = _planned(_slot(1, "a"), _slot(3, "c", pred="b"))  # slot 2 in flight
    assert [o.seq for o in plan.live] == [1] and [o.seq for o in plan.unsettled] == [3]
    assert (plan.last_seq["main"], plan.last_nonce["main"], plan.next_slot["main"]) == (
        1, "a", 2)  # the next write takes the gap: it decides the race with slot 2's upload
    plan = _planned(_slot(1, "a"), _slot(2, "b", pred="a"), _slot(3, "c", pred="b"))
    assert [o.seq for o in plan.live] == [1, 2, 3] and plan.next_slot["main"] == 4
    # another writer took slot 2: slot 3, decided over what is not there, never counts
    plan = _planned(_slot(1, "a"), _slot(2, "x", pred="a"), _slot(3, "c", pred="b"))
    assert [o.seq for o in plan.live] == [1, 2] and plan.unsettled == []
    assert [o.seq for o in plan.folded] == [3]
    assert (plan.last_seq["main"], plan.next_slot["main"]) == (2, 4)  # past the void slot


def test_the_chain_starts_at_the_newest_fold_entry_and_entries_without_a_claim_join_it():
    plan = _planned(_slot(4, "old"), _slot(5, "f", pred="old", fold=True),
                    _slot(6, "g", pred="f"), _slot(7, "h"))
    assert [o.seq for o in plan.live] == [6, 7] and [o.seq for o in plan.folded] == [4]
    assert (plan.last_seq["main"], plan.last_nonce["main"]) == (7, "h")
    # an entry decided over one that is gone (deleted, reverted) is out, as its writer wanted
    plan = _planned(_slot(1, "a", pred="gone"), _slot(2, "b", pred="a"))
    assert plan.live == plan.unsettled == [] and [o.seq for o in plan.folded] == [1, 2]
    assert plan.next_slot["main"] == 3 and plan.last_seq["main"] == 0


def test_a_directory_without_a_chain_of_its_own_reads_as_before():
    legacy = lakefs_log.Listed(lakefs_log.slot_path("dev", 1), "dev", 1, 5, "x")
    plan = _planned(legacy, _slot(2, "b", directory="dev"))
    assert [o.seq for o in plan.live] == [1, 2]


# --- several groups in flight ---------------------------------------------------------------
def test_groups_of_one_branch_are_uploaded_several_at_once(lake, monkeypatch):
    """With 8 writers, more than one group's upload is in flight at a time (each in the slot
    after the one before), and every write is kept once."""
    lake.get("main", "x")
    real_upload = lake.api.upload_new
    flying, most = [0], [0]
    guard = threading.Lock()

    def upload_new(branch, path, data, headers):  # observes the real uploads, changes none
        with guard:
            flying[0] += 1
            most[0] = max(most[0], flying[0])
        try:
            return real_upload(branch, path, data, headers)
        finally:
            with guard:
                flying[0] -= 1

    monkeypatch.setattr(lake.api, "upload_new", upload_new)

    def put(w, i):
        with lake.write("main") as txn:
            txn.put(f"db/d/table/w{w}/part/p={i:03d}", b"%d-%d" % (w, i))

    assert writers_at_once(8, 20, put) == []
    assert most[0] > 1, most
    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        with other.read("main") as view:
            assert len(list(view.scan_prefix("db/d/table/"))) == 160
    finally:
        other.close()


def test_a_group_that_landed_over_a_refused_one_is_never_applied(lake, monkeypatch):
    """Injected fault: lakeFS refuses the first group's upload after the groups behind it were
    uploaded (they landed, in the slots after it). They name a predecessor that is not there:
    no reader applies them; their writes are decided again and each is kept once."""
    lake.get("main", "x")
    real_upload = lake.api.upload_new
    first = threading.Event()
    others_done = threading.Event()
    landed = []

    def upload_new(branch, path, data, headers):
        if not first.is_set():
            first.set()
            others_done.wait(5)  # the groups behind it land first
            raise LakeFSError("injected: lakeFS refused the upload")
        out = real_upload(branch, path, data, headers)
        landed.append(path)
        if len(landed) >= 2:
            others_done.set()
        return out

    monkeypatch.setattr(lake.api, "upload_new", upload_new)
    outcomes = {}

    def write(w, i):
        if w:
            first.wait(10)
        try:
            decided_again(lambda: _put_pair(lake, w))
            outcomes[w] = "written"
        except LakeFSError:
            outcomes[w] = "refused"

    assert writers_at_once(5, 1, write) == []
    assert outcomes[0] == "refused" and all(outcomes[w] == "written" for w in range(1, 5))
    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        with other.read("main") as view:
            got = dict(view.scan_prefix("k"))
    finally:
        other.close()
    assert got == {**{f"k{w}": b"a" for w in range(1, 5)},
                   **{f"k{w}-twin": b"a" for w in range(1, 5)}}


def _put_pair(store, w):
    with store.write("main") as txn:
        txn.put(f"k{w}", b"a")
        txn.put(f"k{w}-twin", b"a")  # both keys of a write, or neither


def test_two_stores_pipelining_one_branch_lose_no_increment(lake):
    """Two servers (stores), 4 writers each, a read-modify-write counter on one branch: the
    slot each group takes is taken once; whoever loses decides again."""
    with lake.write("main") as txn:
        txn.put("counter", b"0")
    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        def increment(w, i):
            store = lake if w % 2 else other
            def once():
                with store.write("main") as txn:
                    txn.put("counter", b"%d" % (int(txn.get("counter")) + 1))
            decided_again(once)

        assert writers_at_once(8, 10, increment) == []
        for store in (lake, other):
            store.latest("main")  # as lakeFS has it now (else within a second)
            assert store.get("main", "counter") == b"80"
    finally:
        other.close()


def test_a_write_is_never_placed_after_writes_it_did_not_see(lake):
    """A refresh between a write's read and its upload (the background refresh, or another
    writer's) brings another server's increment into the branch's state: the write decided
    without it is not put in the slot after it (that lost increments of two servers), it is
    decided again over it."""
    with lake.write("main") as txn:
        txn.put("counter", b"0")
    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        read = []

        def once():
            with lake.write("main") as txn:
                value = int(txn.get("counter"))
                if not read:  # the other server increments; this one's state learns it
                    with other.write("main") as theirs:
                        theirs.put("counter", b"%d" % (int(theirs.get("counter")) + 1))
                    lake._refresh("main")
                read.append(value)
                txn.put("counter", b"%d" % (value + 1))

        decided_again(once)
        assert read == [0, 1]
        for store in (lake, other):
            store.latest("main")
            assert store.get("main", "counter") == b"2"
    finally:
        other.close()


def test_a_group_that_lost_its_slot_to_writes_of_other_keys_goes_after_them(lake,
                                                                            monkeypatch):
    """Two servers (stores), writers adding keys of their own: a group whose slot the other
    server took stands, as it read nothing the other's writes changed, and is uploaded again
    after them rather than decided again; every write is kept once, and each store reads
    the other's."""
    lake.get("main", "x")
    other = LakeFSStore(lake.repository, real_lakefs().config())
    taken_after = []
    real = LakeFSStore._after_chain

    def after_chain(self, branch, group):  # observes, changes nothing
        found = real(self, branch, group)
        taken_after.append(found is not None)
        return found

    monkeypatch.setattr(LakeFSStore, "_after_chain", after_chain)
    try:
        def put(w, i):
            store = lake if w % 2 else other
            def once():
                with store.write("main") as txn:
                    txn.get(f"own/w{w}/{i:03d}")  # absent: what it decides on
                    txn.put(f"own/w{w}/{i:03d}", b"%d" % i)
            decided_again(once)

        assert writers_at_once(8, 15, put) == []
        for store in (lake, other):
            store.latest("main")
            with store.read("main") as view:
                assert len(list(view.scan_prefix("own/"))) == 120
        assert any(taken_after), "no group lost its slot to the other server's"
    finally:
        other.close()


def test_an_entry_landing_in_a_slot_before_a_listed_one_is_read(lake):
    """Another server's groups in flight: a refresh lists the branch while one of them is
    still uploading into slot N+1 and one it voided is already in N+2. When the first lands,
    the next refresh reads it (it lists from the chain's end, not from the last slot it saw),
    and this server's next write goes in the first free slot after it."""
    from kvmodel.store.lakefs.groups import Group

    other = LakeFSStore(lake.repository, real_lakefs().config())
    try:
        with other.write("main") as txn:
            txn.put("db/a", b"1")
        state = other._refresh("main")
        n, tip = state.last_seq, state.last_nonce

        def entry(seq, pred, changes):
            group = Group()
            group.join(changes)
            group.seq, group.pred, group.nonce = seq, pred, f"n{seq}x"
            group.stamp = time.time_ns()
            other._upload_entry("main", group)

        lake.get("main", "db/a")
        entry(n + 2, "lost-one", {"db/void": b"never"})  # void: its predecessor lost
        lake._refresh_now("main")  # as the background refresh makes them
        assert lake.get("main", "db/void") is None  # this refresh listed slot N+2
        entry(n + 1, tip, {"db/b": b"2"})  # the upload that was in flight lands
        lake._refresh_now("main")
        assert lake.get("main", "db/b") == b"2"
        with lake.write("main") as txn:
            txn.put("db/c", b"3")
        assert lakefs_log.slot_path("main", n + 3) in _log_entries(lake)
        assert {k: v for k, v in lake.read("main").__enter__().scan()} == \
            {"db/a": b"1", "db/b": b"2", "db/c": b"3"}
    finally:
        other.close()
