"""DuckDB with its iceberg extension (the extension wheels from PyPI that match its version:
no download at run time) on the REST catalog: ATTACH by warehouse = ref, read, insert, update,
delete, create, CTAS, alter, drop, on main and on a branch; pyiceberg and Thrift see what it
wrote."""
from __future__ import annotations

import importlib
from pathlib import Path

import pyarrow as pa
import pytest

duckdb = pytest.importorskip("duckdb")
pytestmark = pytest.mark.timeout(300)


def duck(server, warehouse: str, alias: str):
    con = duckdb.connect(config={"autoinstall_known_extensions": "false"})
    version = con.sql("PRAGMA version").fetchone()[0]
    for name in ("httpfs", "avro", "iceberg"):
        try:
            module = importlib.import_module(f"duckdb_extension_{name}")
        except ImportError:
            pytest.skip(f"duckdb-extension-{name} is not installed (hms-proxy[test] brings it)")
        path = Path(module.__file__).parent / "extensions" / version / f"{name}.duckdb_extension"
        if not path.exists():
            pytest.skip(f"duckdb-extension-{name} does not match duckdb {version}")
        con.execute(f"LOAD '{path}'")
    con.execute(f"ATTACH '{warehouse}' AS {alias} (TYPE iceberg, ENDPOINT '{server.rest_uri}', "
                "AUTHORIZATION_TYPE 'none')")
    return con


def rows(con, sql):
    return con.sql(sql).fetchall()


def test_duckdb_reads_and_writes_on_main_and_a_branch(server):
    rest = server.rest()
    rest.create_namespace("duck")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
    rest.create_table("duck.tbl", schema=data.schema).append(data)
    con = duck(server, "main", "cat")
    assert rows(con, "SELECT * FROM cat.duck.tbl ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    con.execute("INSERT INTO cat.duck.tbl VALUES (4, 'd')")
    con.execute("UPDATE cat.duck.tbl SET name = 'B' WHERE id = 2")
    con.execute("DELETE FROM cat.duck.tbl WHERE id = 1")
    con.execute("CREATE TABLE cat.duck.made (x INTEGER, y VARCHAR)")
    con.execute("INSERT INTO cat.duck.made SELECT i, 'v' || i FROM range(3) r(i)")
    con.execute("CREATE TABLE cat.duck.ctas AS SELECT * FROM cat.duck.made WHERE x > 0")
    assert rows(con, "SELECT * FROM cat.duck.ctas ORDER BY x") == [(1, "v1"), (2, "v2")]
    expected = [{"id": 2, "name": "B"}, {"id": 3, "name": "c"}, {"id": 4, "name": "d"}]
    got = rest.load_table("duck.tbl").scan().to_arrow().to_pylist()
    assert sorted(got, key=lambda r: r["id"]) == expected
    assert sorted(t for _, t in rest.list_tables("duck")) == ["ctas", "made", "tbl"]
    assert server.hive().load_table("duck.made").metadata_location == \
        rest.load_table("duck.made").metadata_location
    # time travel by snapshot id
    first = rest.load_table("duck.tbl").snapshots()[0].snapshot_id
    assert len(rows(con, f"SELECT * FROM cat.duck.tbl AT (VERSION => {first})")) == 3
    # on a branch: dev's writes stay there until merged
    server.cli("branch", "create", "duck_dev", "--from", "main")
    dev = duck(server, "duck_dev", "dev")
    dev.execute("INSERT INTO dev.duck.tbl VALUES (5, 'e')")
    assert [r[0] for r in rows(dev, "SELECT id FROM dev.duck.tbl ORDER BY id")] == [2, 3, 4, 5]
    fresh = duck(server, "main", "cat2")
    assert [r[0] for r in rows(fresh, "SELECT id FROM cat2.duck.tbl ORDER BY id")] == [2, 3, 4]
    server.cli("merge", "duck_dev", "main")
    fresh = duck(server, "main", "cat3")
    assert [r[0] for r in rows(fresh, "SELECT id FROM cat3.duck.tbl ORDER BY id")] == \
        [2, 3, 4, 5]
    fresh.execute("ALTER TABLE cat3.duck.made ADD COLUMN z INTEGER")
    assert [f.name for f in rest.load_table("duck.made").schema().fields] == ["x", "y", "z"]
    fresh.execute("DROP TABLE cat3.duck.ctas")
    assert not rest.table_exists("duck.ctas")


@pytest.mark.slow
def test_duckdb_on_lakefs_a_branch_merged_by_lakefs(tmp_path):
    """DuckDB on the REST catalog over a real lakeFS: files through its S3 gateway (an S3
    secret with the gateway's endpoint and the lakeFS keys), writes on main and on a branch
    made by lakeFS's API; main sees the branch's rows after lakeFS's own merge, never before."""
    import time

    from tests.e2e.rest.conftest import start_lakefs_rest_server
    from tests.support.lakefs import LakeFSApi

    server = start_lakefs_rest_server(tmp_path / "hms", "duckrest", "--autocommit")
    lakefs, repo = server.lakefs, server.repo

    def on(warehouse: str, alias: str):
        con = duck(server, warehouse, alias)
        host = lakefs.endpoint.split("://", 1)[1].rstrip("/")
        con.execute(f"CREATE OR REPLACE SECRET lake (TYPE s3, KEY_ID '{lakefs.access_key_id}', "
                    f"SECRET '{lakefs.secret_access_key}', ENDPOINT '{host}', "
                    "URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')")
        return con

    try:
        main = on("main", "m")
        main.execute("CREATE SCHEMA m.lake")
        main.execute("CREATE TABLE m.lake.t (id BIGINT, name VARCHAR)")
        main.execute("INSERT INTO m.lake.t VALUES (1, 'a'), (2, 'b')")
        assert rows(main, "SELECT id FROM m.lake.t ORDER BY id") == [(1,), (2,)]
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            assert any("/metadata/" in p for p in api.paths("main", "warehouse/lake.db/"))
            api.branch("dev", "main")
            dev = on("dev", "d")
            dev.execute("INSERT INTO d.lake.t VALUES (3, 'c')")
            assert rows(dev, "SELECT id FROM d.lake.t ORDER BY id") == [(1,), (2,), (3,)]
            assert rows(on("main", "m2"), "SELECT id FROM m2.lake.t ORDER BY id") == \
                [(1,), (2,)]
            # dev's new data file is on dev only
            data = "warehouse/lake.db/t/data"
            assert len(api.data_files("dev", data)) == len(api.data_files("main", data)) + 1
            api.merge("dev", "main")
        deadline = time.monotonic() + 60
        while True:  # the server sees lakeFS's merge within its staleness bound
            got = rows(on("main", "m3"), "SELECT id FROM m3.lake.t ORDER BY id")
            if len(got) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert got == [(1,), (2,), (3,)]
    finally:
        server.proc.stop()
