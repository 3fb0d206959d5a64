"""Trino 476's Iceberg connector on our Iceberg REST catalog (``iceberg.catalog.type=rest``, its
warehouse a ref): DDL, writes (INSERT, UPDATE, DELETE, MERGE), time travel and metadata tables
on main; a branch written by Trino that main sees only after ``hms-proxy merge``; and
pyiceberg's RestCatalog and HiveCatalog reading what Trino wrote, and the reverse; on a real
lakeFS, Trino over REST and over Thrift (``iceberg.catalog.type=hive_metastore``) writing a
branch that lakeFS merges and deletes."""
from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pytest

from hms_proxy.tools import trino_local
from tests.e2e.rest.conftest import start_rest_server

pytestmark = [pytest.mark.slow, pytest.mark.trino, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def trino():
    from tests.support.trino import real_trino

    return real_trino()


def catalog(trino, server, warehouse: str) -> str:
    name = f"ice_{uuid.uuid4().hex[:8]}"
    trino.add_catalog(name, trino_local.iceberg_rest_catalog(server.rest_uri, warehouse),
                      connector="iceberg")
    return name


def test_trino_on_the_rest_catalog_main_and_a_branch(trino, tmp_path):
    server = start_rest_server(tmp_path / "srv", "--autocommit")
    try:
        main = catalog(trino, server, "main")
        run = trino.execute
        run(f"CREATE SCHEMA {main}.shop")
        run(f"CREATE TABLE {main}.shop.orders (id bigint, region varchar, qty int) "
            "WITH (partitioning = ARRAY['region'])")
        assert run(f"INSERT INTO {main}.shop.orders VALUES (1, 'eu', 5), (2, 'us', 7), "
                   "(3, 'eu', 1)") == [[3]]
        first = run(f'SELECT snapshot_id FROM {main}.shop."orders$snapshots" '
                    "ORDER BY committed_at DESC LIMIT 1")[0][0]
        assert run(f"UPDATE {main}.shop.orders SET qty = 6 WHERE id = 1") == [[1]]
        assert run(f"DELETE FROM {main}.shop.orders WHERE id = 3") == [[1]]
        run(f"MERGE INTO {main}.shop.orders t USING (VALUES (2, 'us', 9), (4, 'apac', 2)) "
            "AS s(id, region, qty) ON t.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.qty "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.region, s.qty)")
        run(f"ALTER TABLE {main}.shop.orders ADD COLUMN note varchar")
        assert run(f"SELECT id, region, qty, note FROM {main}.shop.orders ORDER BY id") == \
            [[1, "eu", 6, None], [2, "us", 9, None], [4, "apac", 2, None]]
        assert run(f"SELECT count(*) FROM {main}.shop.orders FOR VERSION AS OF {first}") == [[3]]
        run(f"CREATE TABLE {main}.shop.by_region AS SELECT region, sum(qty) AS qty "
            f"FROM {main}.shop.orders GROUP BY region")
        assert sorted(run(f"SHOW TABLES FROM {main}.shop")) == [["by_region"], ["orders"]]
        # pyiceberg reads what Trino wrote, through REST and through Thrift
        rest = server.rest()
        rows = rest.load_table("shop.orders").scan().to_arrow().sort_by("id")
        assert rows.column("qty").to_pylist() == [6, 9, 2]
        assert server.hive().load_table("shop.orders").metadata_location == \
            rest.load_table("shop.orders").metadata_location
        # and Trino reads what pyiceberg wrote
        data = pa.table({"id": pa.array([7], pa.int64())})
        rest.create_table("shop.from_py", schema=data.schema).append(data)
        assert run(f"SELECT id FROM {main}.shop.from_py") == [[7]]
        # a branch: Trino writes on dev; main sees it after the merge, never before
        server.cli("branch", "create", "trino_dev", "--from", "main")
        dev = catalog(trino, server, "trino_dev")
        assert run(f"INSERT INTO {dev}.shop.orders VALUES (5, 'eu', 3, 'dev')") == [[1]]
        assert run(f"SELECT count(*) FROM {dev}.shop.orders") == [[4]]
        assert run(f"SELECT count(*) FROM {main}.shop.orders") == [[3]]
        server.cli("merge", "trino_dev", "main")
        fresh = catalog(trino, server, "main")
        assert run(f"SELECT id FROM {fresh}.shop.orders WHERE note = 'dev'") == [[5]]
        run(f"DROP TABLE {main}.shop.by_region")
        assert sorted(run(f"SHOW TABLES FROM {fresh}.shop")) == [["from_py"], ["orders"]]
        for name in (main, dev, fresh):
            trino.drop_catalog(name)
    finally:
        server.proc.stop()


def _ndv(trino, table: str) -> dict:
    rows = trino.execute(f"SHOW STATS FOR {table}")
    return {r[0]: r[2] for r in rows if r[0] is not None}


def test_trino_reads_the_ndv_of_stats_compute_and_merges_its_sketches(trino, tmp_path):
    """``hms-proxy stats compute`` of an Iceberg table leaves a Puffin file of theta sketches:
    Trino's SHOW STATS reads its ndv, and an INSERT by Trino merges its own sketches of the new
    rows into ours. The merged counts are exact only if our sketches hash every type (4-byte
    int and date, long, double, varchar) as Trino's do: overlapping values counted once. (The
    values are spread out: Trino caps an integer column's count by its range.)"""
    import datetime

    server = start_rest_server(tmp_path / "srv", "--autocommit")
    try:
        rest = server.rest()
        rest.create_namespace("shop")
        epoch = datetime.date(2024, 1, 1)
        n = 100
        data = pa.table({
            "id": pa.array(range(n), pa.int64()),
            "qty": pa.array([i % 7 * 1000 for i in range(n)], pa.int32()),
            "name": pa.array([f"n{i % 13}" for i in range(n)]),
            "day": pa.array([epoch + datetime.timedelta(days=i % 5 * 30) for i in range(n)],
                            pa.date32()),
            "price": pa.array([1.5 * (i % 11) for i in range(n)], pa.float64())})
        rest.create_table("shop.items", schema=data.schema).append(data)
        name = catalog(trino, server, "main")
        table = f"{name}.shop.items"
        assert set(_ndv(trino, table).values()) == {None}  # nothing computed yet
        done = server.cli("stats", "compute", "shop.items", "--metastore", server.thrift_uri,
                          "--no-progress")
        assert "Iceberg statistics file" in done.stdout
        assert _ndv(trino, table) == {"id": 100, "qty": 7, "name": 13, "day": 5, "price": 11}
        # Trino adds rows that repeat some values and bring new ones
        trino.execute(
            f"INSERT INTO {table} SELECT CAST(i AS bigint), CAST(i % 9 * 1000 AS integer), "
            f"'n' || CAST(i % 20 AS varchar), DATE '2024-01-01' + i % 8 * 30 * INTERVAL '1' DAY, "
            f"1.5 * (i % 11) FROM UNNEST(sequence(50, 149)) AS t(i)")
        assert _ndv(trino, table) == {"id": 150, "qty": 9, "name": 20, "day": 8, "price": 11}
        trino.drop_catalog(name)
    finally:
        server.proc.stop()


def test_trino_on_the_rest_catalog_over_lakefs_branch_merged_by_lakefs(trino, tmp_path):
    """Trino's Iceberg connector on our REST catalog over a real lakeFS (files through its S3
    gateway): a table written on main, a branch made by lakeFS's API and written by Trino
    (inserts, and deletes of main's rows and of its own: position delete files), main unchanged
    until lakeFS's own merge, then Trino and pyiceberg see the branch's rows. Then the branch is
    deleted with lakeFS's API (the action's hooks anchor main's table first): main still reads
    every row, time-travels to each snapshot it had before the merge and takes an insert."""
    from tests.e2e.rest.conftest import start_lakefs_rest_server
    from tests.support.lakefs import LakeFSApi

    from tests.support.iceberg import named_paths

    server = start_lakefs_rest_server(tmp_path / "hms", "trinorest", "--autocommit",
                                      "--http-port", "0", "--lakefs-hooks", "self")
    lakefs, repo, uri = server.lakefs, server.repo, server.rest_uri
    names = []

    def on(warehouse: str) -> str:
        name = f"ice_{uuid.uuid4().hex[:8]}"
        trino.add_catalog(name, trino_local.iceberg_rest_catalog(uri, warehouse, lakefs=lakefs),
                          connector="iceberg")
        names.append(name)
        return name

    def rest_table():
        return server.rest("main").load_table("lake.orders")

    try:
        run = trino.execute
        main = on("main")
        run(f"CREATE SCHEMA {main}.lake")
        run(f"CREATE TABLE {main}.lake.orders (id bigint, region varchar) "
            "WITH (partitioning = ARRAY['region'])")
        assert run(f"INSERT INTO {main}.lake.orders VALUES (1, 'eu'), (2, 'us')") == [[2]]
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            # Trino names a new table's directory orders-<random>, as iceberg.unique-table-location
            location = rest_table().location()
            assert location.startswith(f"s3a://{repo}/main/warehouse/lake.db/orders")
            data = location.split("/main/", 1)[1] + "/data"
            assert api.data_files("main", data)
            api.branch("dev", "main")
            dev = on("dev")
            assert run(f"INSERT INTO {dev}.lake.orders VALUES (3, 'eu'), (5, 'eu')") == [[2]]
            assert run(f"DELETE FROM {dev}.lake.orders WHERE id = 2") == [[1]]  # main's file
            assert run(f"DELETE FROM {dev}.lake.orders WHERE id = 5") == [[1]]  # dev's own
            assert run(f"SELECT id FROM {dev}.lake.orders ORDER BY id") == [[1], [3]]
            assert run(f"SELECT id FROM {main}.lake.orders ORDER BY id") == [[1], [2]]
            table = rest_table()
            before = {s.snapshot_id: sorted(table.scan(snapshot_id=s.snapshot_id).to_arrow()
                                            .column("id").to_pylist())
                      for s in table.snapshots()}
            # the branch's new files are on dev only
            assert len(api.data_files("dev", data)) > len(api.data_files("main", data))
            api.merge("dev", "main")
        # the server sees lakeFS's merge within its staleness bound
        deadline = time.monotonic() + 60
        while sorted(rest_table().scan().to_arrow().column("id").to_pylist()) != [1, 3]:
            assert time.monotonic() < deadline, "main never showed the lakeFS merge"
            time.sleep(0.2)
        fresh = on("main")  # a new catalog: nothing cached from before the merge
        assert run(f"SELECT id FROM {fresh}.lake.orders ORDER BY id") == [[1], [3]]
        with lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("dev")  # the pre-delete hook anchors main
        assert not any(f"/{repo}/dev/" in p for p in named_paths(rest_table()))
        after = on("main")
        assert run(f"SELECT id FROM {after}.lake.orders ORDER BY id") == [[1], [3]]
        assert [1, 2] in before.values()
        for snapshot_id, want in before.items():
            assert run(f"SELECT id FROM {after}.lake.orders FOR VERSION AS OF {snapshot_id} "
                       "ORDER BY id") == [[i] for i in want]
        assert run(f"INSERT INTO {after}.lake.orders VALUES (6, 'us')") == [[1]]
        assert sorted(rest_table().scan().to_arrow().column("id").to_pylist()) == [1, 3, 6]
    finally:
        for name in names:
            trino.drop_catalog(name)
        server.proc.stop()


@pytest.mark.parametrize("merge", ["lakefs", "hms-proxy"])
def test_trino_iceberg_over_thrift_on_a_lakefs_branch_merged_and_deleted(trino, tmp_path, merge):
    """Trino's Iceberg connector of type ``hive_metastore`` (it reads and writes the metadata
    files itself, where the metadata file says) on a server bound to a lakeFS branch: on a
    table dev inherited from main, an insert, a delete (a position delete file), a schema
    change and an update land on dev only (the server moves what Trino put under main, the
    table's inherited location, before it records the commit); a lakeFS commit, then lakeFS's
    merge or ``hms-proxy merge``; the branch deleted with lakeFS's API: main reads every row, time-travels to its earlier
    snapshots and takes Trino's insert."""
    import lakefs_sdk

    from tests.e2e.rest.conftest import (commit_and_merge_dev_into_main,
                                          start_lakefs_rest_server,
                                          table_on_main_merged_into_dev)
    from tests.support.iceberg import named_paths
    from tests.support.lakefs import LakeFSApi
    from tests.support.wait import wait_until

    server = start_lakefs_rest_server(tmp_path / "hms", "trinohive", "--http-port", "0",
                                      "--lakefs-hooks", "self", "--bind", "0=dev",
                                      branches=("dev",))
    lakefs, repo = server.lakefs, server.repo
    names = []

    def on(uri: str) -> str:
        name = f"ih_{uuid.uuid4().hex[:8]}"
        props = {"iceberg.catalog.type": "hive_metastore", "hive.metastore.uri": uri,
                 **trino_local.hive_catalog(uri, lakefs=lakefs)}
        for hive_only in ("hive.non-managed-table-writes-enabled", "hive.security",
                          "hive.hive-views.enabled"):
            props.pop(hive_only, None)
        trino.add_catalog(name, props, connector="iceberg")
        names.append(name)
        return name

    def ids(table, **scan):
        return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())

    run = trino.execute
    try:
        main = server.rest("main")
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            before = table_on_main_merged_into_dev(server, api)
            dev = on(f"thrift://127.0.0.1:{server.proc.ref_port('dev')}")
            on_main = on(server.thrift_uri)
            assert run(f"INSERT INTO {dev}.lake.t VALUES (4, 'd')") == [[1]]
            assert run(f"DELETE FROM {dev}.lake.t WHERE id = 1") == [[1]]
            run(f"ALTER TABLE {dev}.lake.t ADD COLUMN qty integer")
            assert run(f"UPDATE {dev}.lake.t SET qty = 7 WHERE id = 4") == [[1]]
            assert run(f"SELECT id, v, qty FROM {dev}.lake.t ORDER BY id") == [
                [2, "b", None], [3, "c", None], [4, "d", 7]]
            assert run(f"SELECT id FROM {on_main}.lake.t ORDER BY id") == [[1], [2], [3]]
            staged_main = [d.path for d in lakefs_sdk.BranchesApi(client).diff_branch(
                repo, "main").results]
            assert not any("lake.db/t" in p for p in staged_main), staged_main
            commit_and_merge_dev_into_main(server, api, merge, "Trino's writes")
        wait_until(lambda: ids(main.load_table("lake.t")) == [2, 3, 4],
                   what=f"main after the {merge} merge")
        with lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("dev")  # the pre-delete hook anchors main
        table = server.rest("main").load_table("lake.t")
        assert not any(f"/{repo}/dev/" in p for p in named_paths(table))
        assert ids(table) == [2, 3, 4]
        for snapshot_id in before:
            assert ids(table, snapshot_id=snapshot_id) == [1, 2, 3]
        after = on(server.thrift_uri)  # a new catalog: nothing cached from before the merge
        for snapshot_id in before:
            assert run(f"SELECT id FROM {after}.lake.t FOR VERSION AS OF {snapshot_id} "
                       "ORDER BY id") == [[1], [2], [3]]
        assert run(f"INSERT INTO {after}.lake.t VALUES (5, 'e', 1)") == [[1]]
        assert run(f"SELECT id, qty FROM {after}.lake.t ORDER BY id") == [
            [2, None], [3, None], [4, 7], [5, 1]]
    finally:
        for name in names:
            trino.drop_catalog(name)
        server.proc.stop()
