"""The REST catalog over a real lakeFS: metadata files and data through lakeFS's S3 gateway,
a branch made and merged with lakeFS's own API (as lakectl and the UI do), the new snapshot
seen on main through REST and Thrift at once and never before."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from tests.e2e.rest.conftest import start_lakefs_rest_server
from tests.support.lakefs import LakeFSApi

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def batch(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def wait_for(what, check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_rest_on_lakefs_branch_merged_by_lakefs(tmp_path):
    server = start_lakefs_rest_server(tmp_path / "hms", "rest", "--autocommit")
    lakefs, repo = server.lakefs, server.repo
    try:
        main = server.rest("main")
        # the config call told pyiceberg where the gateway is: only the keys were given
        main.create_namespace("lake")
        table = main.create_table("lake.events", schema=batch(0).schema)
        assert table.location().startswith(f"s3a://{repo}/main/")
        table.append(batch(1, 2))
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            assert any(p.startswith("warehouse/lake.db/events/metadata/")
                       for p in api.paths("main", "warehouse/lake.db/events/"))
            api.branch("dev", "main")
            dev = server.rest("dev")
            wait_for("dev on the server", lambda: _exists(dev, "lake.events"))
            on_dev = dev.load_table("lake.events")
            assert on_dev.location().startswith(f"s3a://{repo}/dev/")  # its writes stay on dev
            on_dev.append(batch(3))
            assert ids(dev.load_table("lake.events")) == [1, 2, 3]
            # the new data file is on dev only (--autocommit committed it there)
            assert len(api.data_files("main", "warehouse/lake.db/events/data")) == 1
            assert len(api.data_files("dev", "warehouse/lake.db/events/data")) == 2
            assert ids(main.load_table("lake.events")) == [1, 2]  # main never saw it
            hive = server.hive()
            assert ids(hive.load_table("lake.events")) == [1, 2]
            api.merge("dev", "main")  # lakeFS's merge, no hms-proxy in between
        after = wait_for("main after the lakeFS merge", lambda: _ids_if(main, 3))
        assert after == [1, 2, 3]
        assert ids(hive.load_table("lake.events")) == [1, 2, 3]
        assert hive.load_table("lake.events").metadata_location == \
            main.load_table("lake.events").metadata_location
    finally:
        server.proc.stop()


def _exists(catalog, name) -> bool:
    return catalog.table_exists(name)


def _ids_if(catalog, count):
    got = ids(catalog.load_table("lake.events"))
    return got if len(got) == count else None


def test_stats_compute_of_an_iceberg_table_on_a_lakefs_branch(tmp_path):
    """``stats compute`` of an Iceberg table on a branch lakeFS's API made: its Puffin file and
    the new metadata file land on that branch only (main gets no object and stays clean); REST
    on the branch sees the statistics; a lakeFS merge brings them to main."""
    server = start_lakefs_rest_server(tmp_path / "hms", "reststats", "--autocommit")
    lakefs, repo = server.lakefs, server.repo
    try:
        main = server.rest("main")
        main.create_namespace("lake")
        main.create_table("lake.items", schema=batch(0).schema).append(batch(1, 2, 3, 2))
        with lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            api.branch("stats", "main")
            dev = server.rest("stats")
            wait_for("the branch on the server", lambda: _exists(dev, "lake.items"))
            server.cli("stats", "compute", "lake.items", "--ref", "stats", "--metastore",
                       server.thrift_uri, "--no-progress")
            [statistics] = dev.load_table("lake.items").metadata.statistics
            assert statistics.statistics_path.startswith(f"s3a://{repo}/stats/")
            assert [b.properties for b in statistics.blob_metadata] == [{"ndv": "3"}]
            assert main.load_table("lake.items").metadata.statistics == []
            assert not any(p.endswith(".stats")
                           for p in api.paths("main", "warehouse/lake.db/items/metadata/"))
            assert list(client_diff(client, repo, "main")) == []  # nothing staged on main
            api.merge("stats", "main")
        merged = wait_for("main after the lakeFS merge",
                          lambda: main.load_table("lake.items").metadata.statistics)
        assert [s.snapshot_id for s in merged] == [statistics.snapshot_id]
    finally:
        server.proc.stop()


def client_diff(client, repo: str, branch: str):
    import lakefs_sdk

    return lakefs_sdk.BranchesApi(client).diff_branch(repo, branch).results


def test_a_transaction_on_lakefs_is_one_commit(tmp_path):
    """``transactions/commit`` of two tables over a real lakeFS with --autocommit: one lakeFS
    commit holding both tables' new metadata pointers."""
    import lakefs_sdk
    import requests

    server = start_lakefs_rest_server(tmp_path / "hms", "resttxn", "--autocommit")
    lakefs, repo, uri = server.lakefs, server.repo, server.rest_uri
    try:
        main = server.rest("main")
        main.create_namespace("lake")
        tables = {n: main.create_table(f"lake.{n}", schema=batch(0).schema) for n in "ab"}
        with lakefs.sdk() as client:
            refs = lakefs_sdk.RefsApi(client)
            head = refs.log_commits(repo, "main", amount=1).results[0].id
            answer = requests.post(f"{uri}/v1/main/transactions/commit", timeout=60, json={
                "table-changes": [
                    {"identifier": {"namespace": ["lake"], "name": n},
                     "requirements": [{"type": "assert-table-uuid",
                                       "uuid": str(t.metadata.table_uuid)}],
                     "updates": [{"action": "set-properties", "updates": {"k": n}}]}
                    for n, t in tables.items()]})
            assert answer.status_code == 204, answer.text
            log = refs.log_commits(repo, "main", amount=5).results
            ours = [c for c in log[:[c.id for c in log].index(head)]]
            assert [c.message for c in ours] == ["commit_transaction lake.a, lake.b"]
        assert [main.load_table(f"lake.{n}").properties["k"] for n in "ab"] == ["a", "b"]
    finally:
        server.proc.stop()
