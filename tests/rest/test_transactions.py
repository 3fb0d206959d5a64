"""A REST multi-table transaction is one write of the store: the REST catalog over an
in-process handler, with a fault injected into the second table's alter (a test double: no
real client can make one alter of a transaction fail after every requirement held). The
real-system test beside it is tests/e2e/rest/test_rest_protocol.py's transaction test."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("pyiceberg")

from hms_proxy.hms.family import Env  # noqa: E402
from hms_proxy.hms.handler import Handler  # noqa: E402
from hms_proxy.hms.warehouse import Warehouse  # noqa: E402
from hms_proxy.rest.catalog import RestCatalog  # noqa: E402
from hms_proxy.rest.metadata import MetadataFiles  # noqa: E402
from hms_proxy.thrift.gen.fb303 import FacebookService  # noqa: E402
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore  # noqa: E402
from hms_proxy.thrift.processor import CallContext, service_methods  # noqa: E402
from kvmodel.store import open_store  # noqa: E402

SCHEMA = {"type": "struct", "schema-id": 0,
          "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@pytest.fixture(params=[False, True], ids=["staged", "autocommit"])
def rest(tmp_path, request):
    store = open_store(str(tmp_path / "store"))
    env = Env(store=store, warehouse=Warehouse(str(tmp_path / "wh")), autocommit=request.param)
    handler = Handler(env, service_methods((ThriftHiveMetastore, FacebookService)))
    catalog = RestCatalog(handler, MetadataFiles({}))
    ctx = CallContext(listener_ref="main", user="test")
    catalog.create_namespace(ctx, ["txn"], {})
    for name in ("a", "b"):
        catalog.create_table(ctx, ["txn"], {"name": name, "schema": SCHEMA})
    if not request.param:
        store.commit("main", "tables", author="test")
    try:
        yield catalog, ctx, store, handler
    finally:
        store.close()


def change(catalog, ctx, name, **props):
    table = catalog._hms_table(ctx, "txn", name)
    uuid = catalog.files.load(table.parameters["metadata_location"]).table_uuid
    return {"identifier": {"namespace": ["txn"], "name": name},
            "requirements": [{"type": "assert-table-uuid", "uuid": str(uuid)}],
            "updates": [{"action": "set-properties", "updates": props}]}


def locations(catalog, ctx):
    return {n: catalog._hms_table(ctx, "txn", n).parameters["metadata_location"]
            for n in ("a", "b")}


def test_a_failed_alter_leaves_every_table_and_no_file(rest, monkeypatch):
    catalog, ctx, store, handler = rest
    before = locations(catalog, ctx)
    head = store.resolve("main").commit
    body = {"table-changes": [change(catalog, ctx, "a", k="1"), change(catalog, ctx, "b", k="2")]}
    real = handler.alter_table_with_environment_context
    written = []

    def fault(ctx_, db, name, table, env):  # the injected fault: b's alter fails
        written.append(table.parameters["metadata_location"])
        if name == "b":
            raise RuntimeError("injected fault")
        return real(ctx_, db, name, table, env)

    monkeypatch.setattr(handler, "alter_table_with_environment_context", fault)
    with pytest.raises(RuntimeError, match="injected fault"):
        catalog.commit_transaction(ctx, body)
    assert locations(catalog, ctx) == before  # a's alter went with b's failure
    assert store.resolve("main").commit == head and not list(store.staged("main"))
    assert len(written) == 2 and not any(os.path.exists(p.removeprefix("file:"))
                                         for p in written)
    monkeypatch.setattr(handler, "alter_table_with_environment_context", real)
    catalog.commit_transaction(ctx, body)
    after = locations(catalog, ctx)
    assert all(after[n] != before[n] for n in after)


@pytest.mark.parametrize("rest", [False], indirect=True, ids=["staged"])
def test_a_transaction_is_staged_whole_without_autocommit(rest):
    catalog, ctx, store, handler = rest
    head = store.resolve("main").commit
    catalog.commit_transaction(ctx, {"table-changes": [change(catalog, ctx, "a", k="1"),
                                                       change(catalog, ctx, "b", k="2")]})
    assert store.resolve("main").commit == head  # nothing committed
    assert sorted(e.key for e in store.staged("main")) == ["db/txn/table/a", "db/txn/table/b"]


@pytest.mark.parametrize("rest", [True], indirect=True, ids=["autocommit"])
def test_a_transaction_is_one_commit_with_autocommit(rest):
    catalog, ctx, store, handler = rest
    assert handler.env.autocommit
    head = store.resolve("main").commit
    catalog.commit_transaction(ctx, {"table-changes": [change(catalog, ctx, "a", k="1"),
                                                       change(catalog, ctx, "b", k="2")]})
    commit = store.get_commit(store.resolve("main").commit)
    assert commit.parents == (head,)
    assert commit.message == "commit_transaction txn.a, txn.b"
    assert sorted(e.key for e in store.diff(head, commit.id)) == \
        ["db/txn/table/a", "db/txn/table/b"]
