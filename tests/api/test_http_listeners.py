"""``/api/v1/listeners``: Thrift ports bound to a ref, opened and closed while ``hms-proxy
serve --http-port`` runs (what the pytest plugin gives each test). Against a real server
process and real Thrift clients."""
from __future__ import annotations

import socket

import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel.store import open_store
from tests.support.client import connect
from tests.support.http_api import Client
from tests.support.proxy import start_proxy


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("listeners")
    proc = start_proxy(root, "--http-port", "0")
    try:
        with connect(proc) as client:
            client.create_database(T.Database("shop", "", str(root / "shop.db"), {}))
        store = open_store(root / "store")
        store.commit("main", "shop")
        store.create_branch("dev", "main")
        store.close()
        proc.api = Client(f"http://127.0.0.1:{proc.announced_port('http')}")
        yield proc
    finally:
        proc.stop()


def _closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0


class _At:
    def __init__(self, port):
        self.host, self.port = "127.0.0.1", port


def test_a_listener_serves_its_ref_until_closed(served):
    api = served.api
    opened = api.post("/listeners", {"ref": "dev"})
    assert opened.status == 201, opened.body
    port = opened.body["port"]
    assert opened.body == {"port": port, "ref": "dev", "read_only": False,
                           "uri": f"thrift://127.0.0.1:{port}"}
    with connect(_At(port)) as client:  # an unmodified client: the port is the branch
        client.create_database(T.Database("only_dev", "", "", {}))
        assert sorted(client.get_all_databases()) == ["default", "only_dev", "shop"]
    with connect(served) as client:
        assert "only_dev" not in client.get_all_databases()  # main: the default port's ref
        assert client.get_database("only_dev@dev").name == "only_dev@dev"
    assert [x["port"] for x in api.get("/listeners").body["listeners"]] == [port]
    closed = api.delete(f"/listeners/{port}")
    assert closed.status == 200 and closed.body["closed"]["ref"] == "dev"
    assert _closed(port)
    assert api.get("/listeners").body["listeners"] == []
    with connect(served) as client:  # the server goes on
        assert "shop" in client.get_all_databases()


def test_a_moved_listener_serves_the_new_ref_on_open_connections(served):
    """PUT /listeners/{port}: the next call, on a connection opened before, reads the new ref
    (a SparkSession keeps its one connection for its life)."""
    api = served.api
    assert api.post("/branches", {"name": "moved-a", "from": "main"}).status == 201
    assert api.post("/branches", {"name": "moved-b", "from": "main"}).status == 201
    port = api.post("/listeners", {"ref": "moved-a"}).body["port"]
    try:
        with connect(_At(port)) as client:
            client.create_database(T.Database("on_a", "", "", {}))
            assert "on_a" in client.get_all_databases()
            moved = api.put(f"/listeners/{port}", {"ref": "moved-b"})
            assert moved.status == 200 and moved.body["ref"] == "moved-b", moved.body
            assert "on_a" not in client.get_all_databases()  # the same connection, on b
            client.create_database(T.Database("on_b", "", "", {}))
        with connect(served) as client:
            assert client.get_database("on_b@moved-b").name == "on_b@moved-b"
            with pytest.raises(T.NoSuchObjectException):
                client.get_database("on_b@moved-a")
        assert [x["ref"] for x in api.get("/listeners").body["listeners"]] == ["moved-b"]
        assert api.put(f"/listeners/{port}", {"ref": "no-such"}).status == 404
        assert api.put(f"/listeners/{port}", {}).status == 400
        assert api.put(f"/listeners/{served.port}", {"ref": "main"}).status == 404
    finally:
        assert api.delete(f"/listeners/{port}").status == 200


def test_a_read_only_server_opens_read_only_listeners(tmp_path):
    proc = start_proxy(tmp_path, "--http-port", "0", "--read-only")
    try:
        api = Client(f"http://127.0.0.1:{proc.announced_port('http')}")
        opened = api.post("/listeners", {"ref": "main"})
        assert opened.status == 201 and opened.body["read_only"] is True, opened.body
        with connect(_At(opened.body["port"])) as client:
            assert client.get_all_databases() == ["default"]
            with pytest.raises(T.MetaException, match="read-only"):
                client.create_database(T.Database("nope", "", "", {}))
    finally:
        proc.stop()


@pytest.mark.parametrize("body, status, kind", [
    ({"ref": "no-such-branch"}, 404, None),
    ({"ref": ""}, 400, "BadRequest"),
    ({}, 400, "BadRequest"),
    ({"ref": "dev", "port": 1}, 400, "BadRequest"),
    ({"ref": "dev", "read_only": True}, 400, "BadRequest"),
    ({"ref": 7}, 400, "BadRequest"),
])
def test_bad_requests_to_open_one(served, body, status, kind):
    answer = served.api.post("/listeners", body)
    assert answer.status == status, answer.body
    if kind:
        assert answer.error["type"] == kind
    assert served.api.get("/listeners").body["listeners"] == []


@pytest.mark.parametrize("port, status", [("abc", 400), ("0", 400), ("70000", 400),
                                          ("1", 404)])
def test_bad_requests_to_close_one(served, port, status):
    assert served.api.delete(f"/listeners/{port}").status == status


def test_the_main_port_is_not_closed_through_the_api(served):
    assert served.api.delete(f"/listeners/{served.port}").status == 404
    with connect(served) as client:
        assert "shop" in client.get_all_databases()


def test_listeners_are_bounded():
    """At most ``limit`` at once (a leaking or hostile client cannot take every port); closing
    one frees its place. The class the server uses, over a real listener."""
    from hms_proxy.app.listeners import Listeners, TooManyListeners
    from hms_proxy.thrift import server as srv

    class _Store:
        def resolve(self, ref):
            return ref

    main = srv.MetastoreServer(None, srv.ServerConfig(host="127.0.0.1", port=0))
    listeners = Listeners(main, _Store(), limit=2)
    try:
        a = listeners.open("a")
        listeners.open("b")
        with pytest.raises(TooManyListeners):
            listeners.open("c")
        assert listeners.close(a.port).ref == "a"
        assert listeners.open("c").ref == "c"
        assert sorted(x.ref for x in listeners.list()) == ["b", "c"]
    finally:
        listeners.close_all()
    assert listeners.list() == []
    with pytest.raises(TooManyListeners):  # closed for good once the server stops
        listeners.open("d")


def test_a_commit_through_the_api(served):
    api = served.api
    assert api.post("/branches", {"name": "to-commit", "from": "main"}).status == 201
    opened = api.post("/listeners", {"ref": "to-commit"}).body
    try:
        with connect(_At(opened["port"])) as client:
            client.create_database(T.Database("committed", "", "", {}))
    finally:
        api.delete(f"/listeners/{opened['port']}")
    done = api.post("/commits", {"branch": "to-commit", "message": "committed db"})
    assert done.status == 201, done.body
    assert done.body["message"] == "committed db" and len(done.body["parents"]) == 1
    again = api.post("/commits", {"branch": "to-commit", "message": "again"})
    assert again.status == 409 and again.error["type"] == "NothingToCommit"
    assert api.post("/commits", {"branch": "nope", "message": "x"}).status == 404
    assert api.post("/commits", {"branch": "to-commit"}).status == 400
    tagged = api.post("/tags", {"name": "to-commit-v1", "ref": "to-commit"})
    assert tagged.status == 201 and tagged.body["commit"] == done.body["id"]


def test_a_branch_with_its_own_files(served):
    """POST /branches with ``own_files``: the branch's locations under the server's warehouse
    (the default database's, a database made without a location) move to a directory of the
    branch's, beside the warehouse, and their files are linked there; the source keeps its
    own; deleting the branch deletes that directory."""
    import os

    api = served.api
    root = api.get("/info").body["warehouse"]
    assert root.startswith("file:")
    with connect(served) as client:
        client.create_database(T.Database("whs", "", None, {}))
        db = client.get_database("whs")
        assert db.locationUri == root + "/whs.db"
    assert api.post("/commits", {"branch": "main", "message": "whs"}).status == 201
    table_dir = db.locationUri[len("file:"):] + "/t"
    os.makedirs(table_dir + "/ds=1", exist_ok=True)
    with open(table_dir + "/ds=1/part-0", "w") as f:
        f.write("seed")
    made = api.post("/branches", {"name": "own-files", "from": "main", "own_files": True})
    assert made.status == 201 and made.body["relocated"] == 2, made.body  # default, whs
    own = made.body["warehouse"]
    assert own == f"{root}.branches/own-files" and made.body["uncommitted"] is True
    with connect(served) as client:
        assert client.get_database("whs@own-files").locationUri == f"{own}/whs.db"
        assert client.get_database("default@own-files").locationUri == own
        assert client.get_database("whs").locationUri == db.locationUri  # main: as it was
        assert client.get_database("shop@own-files").locationUri == \
            client.get_database("shop").locationUri  # elsewhere: left alone
    linked = own[len("file:"):] + "/whs.db/t/ds=1/part-0"
    with open(linked) as f:
        assert f.read() == "seed"
    assert os.stat(linked).st_ino == os.stat(table_dir + "/ds=1/part-0").st_ino
    assert api.delete("/branches/own-files").status == 200
    assert not os.path.exists(own[len("file:"):])  # gone with the branch
    assert os.path.exists(table_dir + "/ds=1/part-0")  # the source's files stay


def test_own_files_refused_where_they_cannot_be(served, tmp_path):
    """A directory of that name holding files (a branch deleted elsewhere left them): 409, and
    nothing is made; ``hms-proxy api`` (no warehouse) refuses the option with a 400."""
    import os

    api = served.api
    root = api.get("/info").body["warehouse"][len("file:"):]
    left = f"{root}.branches/left-over"
    os.makedirs(left, exist_ok=True)
    with open(left + "/x", "w") as f:
        f.write("x")
    answer = api.post("/branches", {"name": "left-over", "from": "main", "own_files": True})
    assert answer.status == 409 and "holds files already" in answer.error["message"]
    assert api.get("/branches/left-over").status == 404
    bad = api.post("/branches", {"name": "x-own", "from": "main", "own_files": "yes"})
    assert bad.status == 400
    from tests.support.http_api import ApiProcess

    open_store(tmp_path / "store-api").close()
    other = ApiProcess(tmp_path / "api", tmp_path / "store-api")
    try:
        refused = Client(other.base).post("/branches", {"name": "b", "own_files": True})
        assert refused.status == 400 and "needs hms-proxy serve" in refused.error["message"]
    finally:
        other.stop()
