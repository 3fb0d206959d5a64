"""A second catalog on branches: made on main and committed, changed on a branch (through
``@cat#db@branch`` names and through the request structs' catalog fields, as a Hive 4 client
names them), seen there and not on main, diffed and merged with the CLI a user runs, and
then on main; a catalog made on a branch only is seen there only. Our server on the embedded
store. (That the calls answer as the stock HMS 4.0.1 does is tests/hms/test_stock_hms4.py's.)"""
from __future__ import annotations

import contextlib
import json

import pytest

from hms_proxy.cli import main as cli_main
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel.store import open_store
from tests.support.client import connect, text_table
from tests.support.proxy import start_proxy

pytestmark = pytest.mark.timeout(300)


@contextlib.contextmanager
def _hive4(server):
    with connect(server) as client:
        client.get_database_req(T.GetDatabaseRequest(name="default", catalogName="hive"))
        yield client


def _table(name: str, db: str, catalog: str) -> T.Table:
    table = text_table(name, db)
    table.catalogName = catalog  # id 17, as Hive 3.1/4.x clients send it
    return table


def _part(values, db: str, catalog: str) -> T.Partition:
    sd = text_table("t", "x").sd
    sd.location = None
    return T.Partition(list(values), db, "orders", 0, 0, sd, {}, None, catalog)


def _cli(capsys, *argv) -> tuple[int, str]:
    code = cli_main(list(argv))
    return code, capsys.readouterr().out


class _Port:
    def __init__(self, port: int):
        self.host, self.port = "127.0.0.1", port


@pytest.fixture
def world(tmp_path):
    """The catalog ``sales`` with a database ``shop`` (and hive's own ``shop``) committed on
    main, a branch dev, and a server over the store that listens for main and, on a second
    port, for dev."""
    store_dir = tmp_path / "ours" / "store"
    first = start_proxy(tmp_path / "ours")
    try:
        with _hive4(first) as c:
            c.create_catalog(T.CreateCatalogRequest(
                T.Catalog("sales", "the sales catalog", f"file:{tmp_path}/sales")))
            c.create_database(T.Database("shop", "sales' shop", None, {}, catalogName="sales"))
            c.create_database(T.Database("shop", "hive's shop", None, {}))  # same name in hive
    finally:
        first.stop()
    store = open_store(store_dir)
    store.commit("main", "a sales catalog", author="test")
    store.create_branch("dev", "main")
    server = start_proxy(tmp_path / "again", "--bind", "0=dev", store=store_dir)
    try:
        yield server, store, str(store_dir)
    finally:
        server.stop()
        store.close()


def test_a_change_in_a_second_catalog_is_made_on_a_branch_diffed_and_merged(world, capsys):
    server, store, store_dir = world
    with _hive4(server) as c:
        c.create_table_req(T.CreateTableRequest(_table("orders", "shop@dev", "sales")))
        c.add_partitions_req(T.AddPartitionsRequest(
            "shop@dev", "orders", [_part(["2024-01-01"], "shop@dev", "sales")], False, True,
            "sales"))
        # on dev, named both ways; its answer names the ref and the catalog back
        got = c.get_table_req(T.GetTableRequest("shop@dev", "orders", catName="sales")).table
        assert (got.dbName, got.catalogName, got.catName) == ("shop@dev", "sales", None)
        assert c.get_all_tables("@sales#shop@dev") == ["orders"]
        assert c.get_partition_names("@sales#shop@dev", "orders", -1) == ["ds=2024-01-01"]
        # not on main, and never in hive's shop
        with pytest.raises(T.NoSuchObjectException, match="sales.shop.orders table not found"):
            c.get_table_req(T.GetTableRequest("shop", "orders", catName="sales"))
        assert c.get_all_tables("@sales#shop") == []
        assert c.get_all_tables("shop@dev") == []

    code, out = _cli(capsys, "diff", "--store", store_dir, "--json", "main", "dev")
    assert code == 0
    changes = {(ch["kind"], tuple(ch["path"]), ch["change"])
               for ch in json.loads(out)["changes"]}
    assert ("table", ("sales.shop", "orders"), "added") in changes
    assert all(path[0] == "sales.shop" for _, path, _ in changes)
    code, out = _cli(capsys, "diff", "--store", store_dir, "main", "dev",
                     "--path", "@sales#shop.orders")
    assert code == 0 and "orders" in out
    code, out = _cli(capsys, "diff", "--store", store_dir, "main", "dev", "--path", "shop")
    assert code == 0 and "orders" not in out  # hive's shop did not change

    store.commit("dev", "orders in sales", author="test")
    code, out = _cli(capsys, "merge", "--store", store_dir, "--json", "dev", "main")
    assert code == 0, out
    with _hive4(server) as c:
        got = c.get_table_req(T.GetTableRequest("shop", "orders", catName="sales")).table
        assert (got.dbName, got.catalogName) == ("shop", "sales")
        assert c.get_partition_names("@sales#shop", "orders", -1) == ["ds=2024-01-01"]
        assert c.get_all_tables("shop") == []


def test_a_catalog_made_on_a_branch_is_there_only(world, tmp_path):
    server, store, _ = world
    dev = _Port(server.ref_port("dev"))
    with _hive4(dev) as c:
        c.create_catalog(T.CreateCatalogRequest(T.Catalog("north", "", f"file:{tmp_path}/n")))
        c.create_database(T.Database("depot", "", None, {}, catalogName="north"))
        assert "north" in c.get_catalogs().names
        assert c.get_databases("@north#") == ["default", "depot"]
    with _hive4(server) as c:
        assert c.get_catalogs().names == ["hive", "sales"]
        assert c.get_databases("@north#") == []
        with pytest.raises(T.NoSuchObjectException, match="No catalog north"):
            c.get_catalog(T.GetCatalogRequest("north"))
    with pytest.raises(Exception):  # hive's clients see the hive catalog only, on any ref
        with _hive4(dev) as c:
            c.get_database("depot")
    with _hive4(dev) as c:
        with pytest.raises(T.InvalidOperationException, match="non-default databases"):
            c.drop_catalog(T.DropCatalogRequest("north"))
        c.drop_database("@north#depot", True, False)
        c.drop_catalog(T.DropCatalogRequest("north"))
        assert c.get_catalogs().names == ["hive", "sales"]
    with store.read("dev") as view:
        assert view.first("cat/north", "cat/north0") is None  # nothing of it left
