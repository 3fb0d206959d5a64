"""pyiceberg's RestCatalog against ``serve --rest-port``: namespaces, the table lifecycle
(create, append, overwrite, schema evolution, time travel, rename, drop, purge, register), refs
as warehouses (a branch, a read-only tag), the error model, and one catalog seen through both
protocols: pyiceberg's HiveCatalog over Thrift and RestCatalog over REST on the same tables."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from pyiceberg import exceptions as exc
from pyiceberg.types import IntegerType

from tests.e2e.rest.conftest import race_appends

pytestmark = pytest.mark.timeout(300)


def batch(*ids, extra=None):
    data = {"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])}
    return pa.table(data)


def ids(table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def new_table(catalog, name):
    return catalog.create_table(name, schema=batch(0).schema)


def test_namespaces(server):
    rest = server.rest()
    rest.create_namespace("ns_a", {"comment": "first", "team": "data"})
    assert ("ns_a",) in rest.list_namespaces()
    props = rest.load_namespace_properties("ns_a")
    assert props["comment"] == "first" and props["team"] == "data"
    assert props["location"].endswith("ns_a.db")
    with pytest.raises(exc.NamespaceAlreadyExistsError):
        rest.create_namespace("ns_a")
    summary = rest.update_namespace_properties("ns_a", removals={"team", "nope"},
                                               updates={"owner_team": "x"})
    assert summary.removed == ["team"] and summary.missing == ["nope"]
    assert summary.updated == ["owner_team"]
    props = rest.load_namespace_properties("ns_a")
    assert "team" not in props and props["owner_team"] == "x"
    # the same database through Thrift
    assert server.hive().load_namespace_properties("ns_a")["owner_team"] == "x"
    assert rest.list_namespaces("ns_a") == []
    with pytest.raises(exc.NoSuchNamespaceError):
        rest.load_namespace_properties("ns_missing")
    with pytest.raises(exc.NoSuchNamespaceError):
        rest.load_namespace_properties(("ns_a", "nested"))
    new_table(rest, "ns_a.t")
    with pytest.raises(exc.NamespaceNotEmptyError):
        rest.drop_namespace("ns_a")
    rest.drop_table("ns_a.t")
    rest.drop_namespace("ns_a")
    assert ("ns_a",) not in rest.list_namespaces()
    with pytest.raises(exc.NoSuchNamespaceError):
        rest.drop_namespace("ns_a")


def test_table_lifecycle(server):
    rest = server.rest()
    rest.create_namespace("life")
    table = new_table(rest, "life.orders")
    table.append(batch(1, 2))
    first = rest.load_table("life.orders").current_snapshot().snapshot_id
    table = rest.load_table("life.orders")
    table.overwrite(batch(3))
    with table.update_schema() as update:
        update.add_column("qty", IntegerType())
    table = rest.load_table("life.orders")
    assert [f.name for f in table.schema().fields] == ["id", "name", "qty"]
    assert ids(table) == [3]
    assert sorted(table.scan(snapshot_id=first).to_arrow().column("id").to_pylist()) == [1, 2]
    assert len(table.history()) >= 3
    assert rest.table_exists("life.orders") and not rest.table_exists("life.none")
    assert rest.list_tables("life") == [("life", "orders")]
    with pytest.raises(exc.TableAlreadyExistsError):
        new_table(rest, "life.orders")
    with pytest.raises(exc.NoSuchTableError):
        rest.load_table("life.none")
    rest.rename_table("life.orders", "life.orders_v2")
    assert ids(rest.load_table("life.orders_v2")) == [3]
    with pytest.raises(exc.NoSuchTableError):
        rest.load_table("life.orders")
    # register: a second name for the same metadata file
    location = rest.load_table("life.orders_v2").metadata_location
    registered = rest.register_table("life.orders_copy", location)
    assert ids(registered) == [3]
    rest.drop_table("life.orders_copy")
    # purge: the files go too
    table = rest.load_table("life.orders_v2")
    data_files = [t.file.file_path for t in table.scan().plan_files()]
    metadata_file = table.metadata_location
    rest.purge_table("life.orders_v2")
    for path in data_files + [metadata_file]:
        assert not os.path.exists(path.removeprefix("file:")), path
    assert rest.list_tables("life") == []


def test_stage_create_transaction(server):
    rest = server.rest()
    rest.create_namespace("staged")
    txn = rest.create_table_transaction("staged.t", schema=batch(0).schema)
    txn.append(batch(5, 6))
    assert not rest.table_exists("staged.t")  # staged: nothing until the commit
    txn.commit_transaction()
    assert ids(rest.load_table("staged.t")) == [5, 6]


def test_one_catalog_two_protocols(server):
    rest, hive = server.rest(), server.hive()
    rest.create_namespace("both")
    new_table(hive, "both.from_thrift").append(batch(1))
    new_table(rest, "both.from_rest").append(batch(2))
    via_rest = rest.load_table("both.from_thrift")
    via_thrift = hive.load_table("both.from_rest")
    assert ids(via_rest) == [1] and ids(via_thrift) == [2]
    assert via_rest.metadata_location == hive.load_table("both.from_thrift").metadata_location
    via_rest.append(batch(10))
    via_thrift.append(batch(20))
    assert ids(hive.load_table("both.from_thrift")) == [1, 10]
    assert ids(rest.load_table("both.from_rest")) == [2, 20]
    assert sorted(t for _, t in rest.list_tables("both")) == ["from_rest", "from_thrift"]


def test_stale_commit_is_refused_with_the_failed_requirement(server):
    """A commit whose requirement no longer holds gets 409 CommitFailedException naming the
    requirement, and changes nothing (pyiceberg's own append retries on it: shown too)."""
    import requests

    rest = server.rest()
    rest.create_namespace("stale")
    new_table(rest, "stale.t")
    one, two = rest.load_table("stale.t"), server.hive().load_table("stale.t")
    one.append(batch(1))
    two.append(batch(2))  # stale base: refused, refreshed and retried by pyiceberg
    table = rest.load_table("stale.t")
    assert ids(table) == [1, 2]
    url = f"{server.rest_uri}/v1/main/namespaces/stale/tables/t"
    before = table.metadata_location
    answer = requests.post(url, json={
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}, timeout=30)
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["type"] == "CommitFailedException" and "main" in error["message"]
    assert rest.load_table("stale.t").metadata_location == before


def test_thrift_and_rest_writers_racing_never_lose_a_snapshot(server):
    rest = server.rest()
    rest.create_namespace("race")
    new_table(rest, "race.t")
    expected = race_appends("race.t", [(server.rest, 0), (server.rest, 100), (server.hive, 200),
                                       (server.hive, 300)], 5, batch)
    table = rest.load_table("race.t")
    assert ids(table) == expected
    assert len(table.snapshots()) == len(expected)


def test_refs_are_warehouses(server):
    main = server.rest("main")
    main.create_namespace("refs")
    new_table(main, "refs.t").append(batch(1))
    server.cli("branch", "create", "rest_dev", "--from", "main")
    server.cli("tag", "create", "rest_v1", "main")
    dev = server.rest("rest_dev")
    dev.load_table("refs.t").append(batch(2))
    assert ids(dev.load_table("refs.t")) == [1, 2]
    assert ids(main.load_table("refs.t")) == [1]  # main never saw it
    assert ids(server.hive().load_table("refs.t")) == [1]
    # the REST commit is a catalog change like any other: diff shows it, merge moves it
    diff = json.loads(server.cli("diff", "main", "rest_dev", "--json").stdout)
    changed = [c for c in diff["changes"] if c["key"] == "db/refs/table/t"]
    assert changed and any(f["field"] == "parameters.metadata_location"
                           for f in changed[0]["fields"])
    server.cli("merge", "rest_dev", "main")
    assert ids(main.load_table("refs.t")) == [1, 2]
    assert ids(server.hive().load_table("refs.t")) == [1, 2]
    # a tag reads as it was and refuses writes
    tag = server.rest("rest_v1")
    assert ids(tag.load_table("refs.t")) == [1]
    with pytest.raises(exc.ForbiddenError):
        tag.load_table("refs.t").append(batch(3))
    with pytest.raises(exc.ForbiddenError):
        tag.create_namespace("refs_nope")
    with pytest.raises(exc.BadRequestError):
        server.rest("no_such_ref")


def test_purge_on_a_branch_keeps_files_other_refs_hold(server):
    """On the embedded store branches share a table's directories: a purge on one (Trino
    sends purgeRequested=true with every DROP TABLE) drops the table there and keeps the
    files main still reads; with no other holder, a purge deletes them."""
    main = server.rest("main")
    main.create_namespace("purge")
    new_table(main, "purge.t").append(batch(1, 2))
    server.cli("branch", "create", "purge_dev", "--from", "main")
    dev = server.rest("purge_dev")
    dev.purge_table("purge.t")
    assert not dev.table_exists("purge.t")
    assert ids(main.load_table("purge.t")) == [1, 2]
    new_table(dev, "purge.only_dev").append(batch(3))
    files = [t.file.file_path for t in dev.load_table("purge.only_dev").scan().plan_files()]
    dev.purge_table("purge.only_dev")
    assert not any(os.path.exists(p.removeprefix("file:")) for p in files)


def test_metrics_reports_are_accepted_before_the_table_exists(server):
    import requests

    answer = requests.post(f"{server.rest_uri}/v1/main/namespaces/nowhere/tables/t/metrics",
                           json={"report-type": "commit-report"}, timeout=30)
    assert answer.status_code == 204
