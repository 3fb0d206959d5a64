"""Iceberg tables branch with the catalog: pyiceberg's HiveCatalog keeps a table's
``metadata_location`` in its parameters, so an append on ``dev`` leaves main's snapshot
untouched, merging moves main to the new snapshot, appends on both sides merge in Iceberg's
terms (the branch's replayed on main's), and an overwrite against an append conflicts."""
from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyiceberg.catalog.hive as hive
import pytest

from hms_proxy.tools.metastores import start_proxy
from kvmodel.store import open_store
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.timeout(300)


def serve(workdir, store, *extra):
    return start_proxy(workdir, *extra, store=store, warehouse=workdir.parent / "warehouse",
                       cwd=REPO_ROOT)


def catalog(proc, warehouse):
    return hive.HiveCatalog("hms", uri=proc.uri, warehouse=f"file://{warehouse}")


def cli(store, *args):
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store", str(store)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)


def batch(*ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])})


def ids(table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_iceberg_tables_branch_merge_and_both_sides(tmp_path):
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    store, warehouse = tmp_path / "store", tmp_path / "iceberg"
    warehouse.mkdir()
    main_srv = serve(tmp_path / "main", store)
    dev_srv = None
    try:
        main = catalog(main_srv, warehouse)
        main.create_namespace("shop")
        schema = Schema(NestedField(1, "id", LongType(), required=False),
                        NestedField(2, "name", StringType(), required=False))
        main.create_table("shop.events", schema=schema).append(batch(1, 2))
        assert cli(store, "commit", "main", "-m", "events, first batch").returncode == 0
        assert cli(store, "branch", "create", "dev", "--from", "main").returncode == 0
        dev_srv = serve(tmp_path / "dev", store, "--ref", "dev")
        dev = catalog(dev_srv, warehouse)

        dev.load_table("shop.events").append(batch(3))
        assert ids(dev.load_table("shop.events")) == [1, 2, 3]
        main_table = main.load_table("shop.events")
        assert ids(main_table) == [1, 2]
        assert len(main_table.metadata.snapshots) == 1

        assert cli(store, "commit", "dev", "-m", "events, batch 3").returncode == 0
        merged = cli(store, "merge", "dev", "main")
        assert merged.returncode == 0, merged.stdout + merged.stderr
        main_table = main.load_table("shop.events")
        assert ids(main_table) == [1, 2, 3]
        assert main_table.metadata_location == dev.load_table("shop.events").metadata_location

        # Both sides append: the branch's append is replayed on main's (Iceberg's terms).
        main.load_table("shop.events").append(batch(4))
        dev.load_table("shop.events").append(batch(5))
        assert cli(store, "commit", "main", "-m", "batch 4").returncode == 0
        assert cli(store, "commit", "dev", "-m", "batch 5").returncode == 0
        merged = cli(store, "merge", "dev", "main")
        assert merged.returncode == 0, merged.stdout + merged.stderr
        assert ids(main.load_table("shop.events")) == [1, 2, 3, 4, 5]
        # An overwrite on dev against an append on main: a conflict, nothing written.
        dev.load_table("shop.events").delete("id = 1")
        main.load_table("shop.events").append(batch(6))
        assert cli(store, "commit", "main", "-m", "batch 6").returncode == 0
        assert cli(store, "commit", "dev", "-m", "no 1").returncode == 0
        conflict = cli(store, "merge", "dev", "main")
        assert conflict.returncode == 1
        assert "ICEBERG_CONFLICT" in conflict.stdout and "shop.events" in conflict.stdout
        assert ids(main.load_table("shop.events")) == [1, 2, 3, 4, 5, 6]
    finally:
        if dev_srv is not None:
            dev_srv.stop()
        main_srv.stop()
    check = open_store(store)
    try:
        assert [c.message for c in check.log("main", limit=1)] == ["batch 6"]
    finally:
        check.close()
