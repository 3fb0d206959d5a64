"""Iceberg tables that outlive the branch that wrote them, on a real lakeFS with its defaults.

A table on main; a lakeFS branch; on it, through the REST door, appends, a delete and a schema
change; a merge into main; the branch deleted with lakeFS's API (what ``lakectl branch delete``
and the UI do after a merge). Main's table must still read every row, time-travel to every
snapshot it had, take a new append, and be read over Thrift by pyiceberg's HiveCatalog: the
merge anchored it on main (its manifest lists and manifests written again with main's paths,
kvmodel.iceberg_anchor). Merged by lakeFS (the post-merge hook of ``--lakefs-hooks``) and by
``hms-proxy merge`` (no hooks at all); and a branch whose merge was never anchored, deleted:
lakeFS's pre-delete-branch hook anchors main's table first."""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.types import StringType

from tests.e2e.rest.conftest import start_lakefs_rest_server
from tests.support.iceberg import named_paths
from tests.support.lakefs import LakeFSApi
from tests.support.wait import wait_until

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(table, **scan) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())


def _lakefs_paths(api, ref, prefix):
    return set(api.paths(ref, prefix))


def _two_snapshots_on_main(server, api):
    """main: table lake.events with 1, 2 (two snapshots). Returns (their ids, the table's
    files on main's lakeFS tree)."""
    main = server.rest("main")
    main.create_namespace("lake")
    table = main.create_table("lake.events", schema=rows(0).schema)
    table.append(rows(1))
    table.append(rows(2))
    before = [s.snapshot_id for s in main.load_table("lake.events").snapshots()]
    return before, _lakefs_paths(api, "main", "warehouse/lake.db/events/")


def _write_on_dev(server, api, repo):
    """main: a table with 1, 2 (two snapshots); dev made by lakeFS; on dev: append 3, append 4,
    delete 4, a new column. Returns main's snapshot ids before the merge."""
    before, main_files = _two_snapshots_on_main(server, api)
    api.branch("dev", "main")
    dev = server.rest("dev")
    wait_until(lambda: dev.table_exists("lake.events"), what="dev on the server")
    on_dev = dev.load_table("lake.events")
    assert on_dev.location().startswith(f"s3a://{repo}/dev/")
    on_dev.append(rows(3))
    on_dev.append(rows(4))
    on_dev = dev.load_table("lake.events")
    on_dev.delete("id = 4")
    with dev.load_table("lake.events").update_schema() as update:
        update.add_column("note", StringType())
    assert ids(dev.load_table("lake.events")) == [1, 2, 3]
    # nothing the branch wrote is on main's tree
    assert _lakefs_paths(api, "main", "warehouse/lake.db/events/") == main_files
    return before


def _main_outlives_dev(server, api, repo, before):
    main = server.rest("main")
    assert ids(main.load_table("lake.events")) == [1, 2, 3]
    api.delete_branch("dev")
    table = server.rest("main").load_table("lake.events")  # a fresh client: nothing cached
    assert ids(table) == [1, 2, 3]
    assert "note" in [f.name for f in table.schema().fields]
    for snapshot_id, want in zip(before, ([1], [1, 2])):  # main's own history
        assert ids(table, snapshot_id=snapshot_id) == want
    for snapshot in table.snapshots():  # and every snapshot the branch brought
        ids(table, snapshot_id=snapshot.snapshot_id)
    assert not any(f"/{repo}/dev/" in p for p in named_paths(table))
    table.append(rows(5))
    assert ids(server.rest("main").load_table("lake.events")) == [1, 2, 3, 5]
    assert ids(server.hive().load_table("lake.events")) == [1, 2, 3, 5]


def _events_on_main(server):
    """main's REST catalog, with table lake.events of rows 1 and 2 on it."""
    main = server.rest("main")
    main.create_namespace("lake")
    main.create_table("lake.events", schema=rows(0).schema).append(rows(1, 2))
    return main


def _head_message(api, branch) -> str:
    return api.refs.log_commits(api.repo, branch, amount=1).results[0].message


def test_lakefs_merge_then_branch_deleted_main_reads(tmp_path):
    server = start_lakefs_rest_server(tmp_path / "hms", "anchor", "--autocommit",
                                      "--http-port", "0", "--lakefs-hooks", "self")
    try:
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, server.repo)
            before = _write_on_dev(server, api, server.repo)
            api.merge("dev", "main")  # lakeFS's merge: its post-merge hook anchors main
            # lakeFS runs post-merge hooks after its answer: the anchoring commit follows
            wait_until(lambda: _head_message(api, "main").startswith(
                "hms-proxy: 1 Iceberg table merged from dev anchored on main"),
                what="the post-merge hook's commit on main")
            _main_outlives_dev(server, api, server.repo, before)
    finally:
        server.proc.stop()


def test_hms_proxy_merge_then_branch_deleted_main_reads(tmp_path):
    server = start_lakefs_rest_server(tmp_path / "hms", "anchorcli", "--autocommit")
    try:
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, server.repo)
            before = _write_on_dev(server, api, server.repo)
            merged = server.cli("merge", "dev", "main")
            assert "anchored 1 Iceberg table on main" in merged.stdout, merged.stdout
            _main_outlives_dev(server, api, server.repo, before)
    finally:
        server.proc.stop()


def test_a_branch_deleted_under_a_cherry_picked_table_is_anchored_first(tmp_path,
                                                                         monkeypatch):
    """lakeFS's cherry-pick runs no merge hook: main's table names dev's files until lakeFS is
    asked to delete dev; its pre-delete-branch hook anchors main's table, then dev goes. The
    hook looks at every branch (here also some that hold the table and name nothing of dev)
    without keeping them refreshed afterwards."""
    server = start_lakefs_rest_server(tmp_path / "hms", "anchorpick", "--http-port", "0",
                                      "--lakefs-hooks", "self")
    repo = server.repo
    try:
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            main = _events_on_main(server)
            api.commit("main", "the table")
            api.branch("dev", "main")
            dev = server.rest("dev")
            wait_until(lambda: dev.table_exists("lake.events"), what="dev on the server")
            dev.load_table("lake.events").append(rows(3))
            picked = api.commit("dev", "append 3")
            api.cherry_pick("main", picked)
            # another tool moved main: the server sees it within its staleness bound
            wait_until(lambda: ids(main.load_table("lake.events")) == [1, 2, 3],
                       what="the cherry-picked append on main")
            table = main.load_table("lake.events")
            assert table.metadata_location.startswith(f"s3a://{repo}/dev/")  # not anchored
            for i in range(4):
                api.branch(f"other{i}", "main")
            api.delete_branch("dev")
            assert _head_message(api, "main").startswith(
                "hms-proxy: 1 Iceberg table anchored on main before branch dev was deleted")
            table = server.rest("main").load_table("lake.events")
            assert ids(table) == [1, 2, 3]
            assert not any(f"/{repo}/dev/" in p for p in named_paths(table))
            table.append(rows(4))
            assert ids(server.hive().load_table("lake.events")) == [1, 2, 3, 4]
        # what the hook runs, in this process: the branches it looked at are not kept
        from kvmodel.iceberg_anchor import anchor_before_delete
        from kvmodel.store import open_store

        for name, value in server.lakefs.env().items():
            monkeypatch.setenv(name, value)
        store = open_store(server.store)
        try:
            assert anchor_before_delete(store, "other0") == []
            assert not any(store.watched(b.name) for b in store.list_branches())
        finally:
            store.close()
    finally:
        server.proc.stop()


def test_a_thrift_writer_on_a_branch_writes_on_the_branch(tmp_path):
    """pyiceberg's HiveCatalog over Thrift on dev (``--bind 0=dev``), on a table dev inherited
    from main: it writes where the metadata file says (main); the server moves the commit's
    files to dev before it records the commit, so main's lakeFS tree gets nothing, dev reads
    the append, and the next commit writes on dev at once."""
    import lakefs_sdk

    server = start_lakefs_rest_server(tmp_path / "hms", "anchorhive", "--autocommit",
                                      "--bind", "0=dev", branches=("dev",))
    repo = server.repo
    try:
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            main = _events_on_main(server)
            api.merge("main", "dev")  # dev gets the table, as lakeFS's merge brings it
            from pyiceberg.catalog.hive import HiveCatalog

            dev_port = server.proc.ref_port("dev")
            hive_dev = HiveCatalog("dev", uri=f"thrift://127.0.0.1:{dev_port}", **server.keys,
                                   **{"s3.endpoint": server.lakefs.endpoint,
                                      "s3.region": "us-east-1"})
            table = wait_until(lambda: _loaded(hive_dev, "lake.events"), what="dev's table")
            assert table.location().startswith(f"s3a://{repo}/main/")  # what it inherited
            table.append(rows(3))
            staged_main = [d.path for d in lakefs_sdk.BranchesApi(client).diff_branch(
                repo, "main").results]
            assert not any("lake.db/events" in p for p in staged_main), staged_main
            table = hive_dev.load_table("lake.events")
            assert ids(table) == [1, 2, 3]
            assert table.location().startswith(f"s3a://{repo}/dev/")
            assert ids(main.load_table("lake.events")) == [1, 2]
            table.append(rows(4))  # now straight onto dev
            assert ids(server.rest("dev").load_table("lake.events")) == [1, 2, 3, 4]
            assert not any(f"/{repo}/main/" in p for p in named_paths(table)
                           if "/data/" in p and p.endswith(".parquet")
                           and p.rsplit("/", 1)[-1] not in _main_files(main))
    finally:
        server.proc.stop()


def _loaded(catalog, name):
    try:
        return catalog.load_table(name)
    except Exception:  # noqa: BLE001 - not there yet
        return None


def _main_files(main) -> set[str]:
    return {p.rsplit("/", 1)[-1] for p in named_paths(main.load_table("lake.events"))}


@pytest.mark.parametrize("merge", ["lakefs", "hms-proxy"])
def test_a_thrift_writers_branch_merged_then_deleted_main_reads(tmp_path, merge):
    """pyiceberg's HiveCatalog on a port bound to a lakeFS branch: appends, a delete and a
    schema change on dev, none of it on main's tree; merged by lakeFS (the action's hooks) or
    by ``hms-proxy merge``; dev deleted with lakeFS's API: main reads every row, time-travels,
    takes an append."""
    from pyiceberg.catalog.hive import HiveCatalog

    hooks = ("--http-port", "0", "--lakefs-hooks", "self") if merge == "lakefs" else ()
    server = start_lakefs_rest_server(tmp_path / "hms", "anchorthrift", "--autocommit",
                                      "--bind", "0=dev", *hooks, branches=("dev",))
    repo = server.repo
    try:
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            before, main_files = _two_snapshots_on_main(server, api)
            api.merge("main", "dev")  # dev gets the table, as lakeFS's merge brings it
            dev = HiveCatalog("dev", uri=f"thrift://127.0.0.1:{server.proc.ref_port('dev')}",
                              **server.keys, **{"s3.endpoint": server.lakefs.endpoint,
                                                "s3.region": "us-east-1"})
            wait_until(lambda: _loaded(dev, "lake.events"), what="dev's table")
            dev.load_table("lake.events").append(rows(3))
            dev.load_table("lake.events").append(rows(4))
            dev.load_table("lake.events").delete("id = 4")
            with dev.load_table("lake.events").update_schema() as update:
                update.add_column("note", StringType())
            assert ids(dev.load_table("lake.events")) == [1, 2, 3]
            assert _lakefs_paths(api, "main", "warehouse/lake.db/events/") == main_files
            if merge == "lakefs":
                api.merge("dev", "main")
                wait_until(lambda: _head_message(api, "main").startswith(
                    "hms-proxy: 1 Iceberg table merged from dev anchored on main"),
                    what="the post-merge hook's commit on main")
            else:
                merged = server.cli("merge", "dev", "main")
                assert "anchored 1 Iceberg table on main" in merged.stdout, merged.stdout
            _main_outlives_dev(server, api, repo, before)
    finally:
        server.proc.stop()
