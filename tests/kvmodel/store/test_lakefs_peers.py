"""Writes handed to the server that writes a branch (:mod:`kvmodel.store.lakefs.peers`): two
stores over one repository of the session's real lakeFS, each with its peer port on loopback;
the one with the larger id hands its writes to the other once it has seen it write the
branch."""
from __future__ import annotations

import socket
import struct

import pytest

pytest.importorskip("lakefs_sdk")

from kvmodel.store.errors import WriteConflict, decided_again  # noqa: E402
from kvmodel.store.lakefs import LakeFSStore  # noqa: E402
from kvmodel.store.lakefs import log as lakefs_log  # noqa: E402
from kvmodel.store.lakefs import peers as lakefs_peers  # noqa: E402
from tests.support.lakefs import new_repository, real_lakefs  # noqa: E402
from tests.support.wait import wait_until  # noqa: E402
from tests.support.writers import writers_at_once  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def pair():
    """(owner, other): two stores over one new repository, both serving peers; ``owner`` is
    the one whose id is smaller (the one the other hands its writes to)."""
    repository = new_repository("peers")
    stores = [LakeFSStore(repository, real_lakefs().config()) for _ in range(2)]
    for store in stores:
        store.serve_peers("127.0.0.1", 0)
    stores.sort(key=lambda s: s._peers.id)
    yield stores[0], stores[1]
    for store in stores:
        store.close()


def _owner_writes_first(owner, other):
    """The owner writes the branch, and the other has seen it do so."""
    with owner.write("main") as txn:
        txn.put("started", b"1")
    other.latest("main")
    wait_until(lambda: owner._peers.name in other._refresh("main").writers,
               what="the other store seeing the owner's entry")


def _writers_of(store) -> set[str]:
    listed = store.api.objects.list_objects(store.repository, "main", prefix=lakefs_log.LOG,
                                            amount=1000, user_metadata=True).results
    return {lakefs_log.listed(o.path, o.metadata, o.checksum).writer for o in listed}


def test_the_other_server_hands_its_writes_to_the_one_writing_the_branch(pair):
    """A read-modify-write counter, 4 writers on each store: no increment lost, every entry
    of the log uploaded by the owner, and the handing store reads each of its writes at once
    (the answer carries the entries up to it)."""
    owner, other = pair
    with owner.write("main") as txn:
        txn.put("counter", b"0")
    _owner_writes_first(owner, other)

    def increment(w, i):
        store = owner if w % 2 else other

        def once():
            with store.write("main") as txn:
                value = int(txn.get("counter")) + 1
                txn.put("counter", b"%d" % value)
                txn.put(f"mine/{w}/{i}", b"%d" % value)
            # its own write, read at once on the store the client talks to
            assert store.get("main", f"mine/{w}/{i}") == b"%d" % value
        decided_again(once)

    assert writers_at_once(8, 10, increment) == []
    assert other._peers.handed > 0 and owner._peers.taken == other._peers.handed
    assert _writers_of(owner) == {owner._peers.name}  # one server wrote the log
    for store in (owner, other):
        store.latest("main")
        assert store.get("main", "counter") == b"80"
        with store.read("main") as view:
            assert sorted(int(v) for _, v in view.scan_prefix("mine/")) == list(range(1, 81))


def test_a_handed_write_over_a_changed_read_is_decided_again(pair):
    """The other store decided over a state that the owner's later write changed: the owner
    refuses it (WriteConflict), nothing of it lands, and decided again it stands."""
    owner, other = pair
    other.refresh_interval = 3600.0  # its view stays as read (no background refresh)
    _owner_writes_first(owner, other)
    with owner.write("main") as txn:
        txn.put("x", b"1")
    wait_until(lambda: other._refresh("main") and other.get("main", "x") == b"1",
               what="the other store reading x")
    with owner.write("main") as txn:  # after the other read x
        txn.put("x", b"2")
    with pytest.raises(WriteConflict):
        _copy(other)
    owner.latest("main")
    assert owner.get("main", "y") is None
    decided_again(_copy, other)
    owner.latest("main")
    assert owner.get("main", "y") == b"2!"
    assert other.get("main", "y") == b"2!"


def _copy(store):
    with store.write("main") as txn:
        txn.put("y", txn.get("x") + b"!")


def test_with_the_owner_gone_the_other_writes_the_branch_itself(pair):
    """The owner's peer port closes (its server stopped): the other's writes are made there,
    in the branch's log, and none is lost."""
    owner, other = pair
    _owner_writes_first(owner, other)
    owner._peers.close()
    for i in range(5):
        with other.write("main") as txn:
            txn.put(f"after/{i}", b"x")
    assert other._peers.handed == 0
    owner.latest("main")
    with owner.read("main") as view:
        assert len(dict(view.scan_prefix("after/"))) == 5
    assert other._peers.name in _writers_of(other)


def _connect(store) -> socket.socket:
    return socket.create_connection(("127.0.0.1", store._peers.port), timeout=5)


def test_the_peer_port_takes_no_write_without_the_repository_secret(pair):
    """A client that does not prove it holds the lakeFS secret is refused before any frame
    is read; one that claims a huge frame first is cut off; the port goes on serving."""
    owner, other = pair
    sock = _connect(owner)
    hello = sock.recv(64)
    assert hello.startswith(b"hms-proxy peer 1\n")
    sock.sendall(b"\0" * 32)
    assert sock.recv(2) == b"no"
    sock.close()
    sock = _connect(owner)
    sock.recv(64)
    sock.sendall(struct.pack(">I", 1 << 31) + b"x" * 28)  # a length, not a proof
    assert sock.recv(2) == b"no"
    sock.close()
    _owner_writes_first(owner, other)
    with other.write("main") as txn:
        txn.put("still", b"served")
    assert other._peers.handed == 1
    owner.latest("main")
    assert owner.get("main", "still") == b"served"


def test_a_request_the_owner_cannot_read_is_answered_and_changes_nothing(pair):
    owner, other = pair
    before = _writers_of(owner)
    for bad in ({"branch": "main"}, {"branch": 7, "changes": []},
                {"branch": "main", "head": "x", "seq": 0, "nonce": "",
                 "changes": [["k", "not base64!"]]},
                {"branch": "main", "head": "x", "seq": "0", "nonce": "", "changes": [7]}):
        with pytest.raises(lakefs_peers.PeerPassed):
            other._peers.hand(owner._peers.name, bad)
        other._peers._down.clear()
    with pytest.raises(lakefs_peers.PeerPassed):  # a frame over the bound is not read
        sock = other._peers._connection(owner._peers.name, ("127.0.0.1", owner._peers.port))
        sock.sendall(struct.pack(">I", lakefs_peers.MAX_FRAME + 1))
        sock.settimeout(5)
        if sock.recv(1) == b"":
            raise lakefs_peers.PeerPassed("cut off")
    assert _writers_of(owner) == before
    assert owner.get("main", "k") is None


def test_the_peer_address_option_says_what_it_takes():
    from hms_proxy.app.compose import peer_address
    from hms_proxy.app.config import ConfigError

    assert peer_address("auto") == ("0.0.0.0", 0, None)
    assert peer_address("10.0.0.5") == ("10.0.0.5", 0, None)
    assert peer_address("0.0.0.0:9300/hms-1.internal") == ("0.0.0.0", 9300, "hms-1.internal")
    assert peer_address("[::1]:9300") == ("::1", 9300, None)
    for bad in ("host:port", ":9300", ""):
        with pytest.raises(ConfigError, match="--lakefs-peer takes auto, off"):
            peer_address(bad)


def test_a_name_that_is_not_a_peer_is_never_handed_to(pair):
    owner, other = pair
    assert lakefs_peers.parse_name("not a name") is None
    now = __import__("time").time_ns()
    assert other._peers.owner({"garbage": now, f"{'0' * 32}@127.0.0.1:notaport": now}) is None
    assert other._peers.owner({owner._peers.name: now}) == owner._peers.name
    assert owner._peers.owner({other._peers.name: now}) is None  # a larger id: never
    assert other._peers.owner({owner._peers.name: now - int(200e9)}) is None  # long ago
