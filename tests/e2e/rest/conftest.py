"""One server with the Iceberg REST catalog (``serve --rest-port 0 --autocommit``) for the
module: its Thrift port for pyiceberg's HiveCatalog, its REST port for RestCatalog."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hms_proxy.tools.metastores import MetastoreProcess, start_proxy
from tests.support.process import REPO_ROOT

pytest.importorskip("starlette", reason="serve --rest-port needs hms-proxy[rest]")


@dataclass
class RestServer:
    proc: MetastoreProcess
    store: Path | str
    rest_uri: str
    env: dict | None = None  # the server's and the CLI's environment (lakeFS's settings)
    lakefs: object = None  # tests.support.lakefs.RealLakeFS when the store is a lakeFS one
    repo: str | None = None

    @property
    def thrift_uri(self) -> str:
        return self.proc.uri

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store",
                               str(self.store)], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=300, env=self.env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    @property
    def keys(self) -> dict:
        """What a client brings to read and write files: on lakeFS, the lakeFS keys (the rest
        of the S3 gateway's settings comes from /v1/config)."""
        if self.lakefs is None:
            return {}
        return {"s3.access-key-id": self.lakefs.access_key_id,
                "s3.secret-access-key": self.lakefs.secret_access_key}

    def rest(self, warehouse: str = "main", **props):
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("rest", uri=self.rest_uri, warehouse=warehouse,
                           **{**self.keys, **props})

    def hive(self):
        from pyiceberg.catalog.hive import HiveCatalog
        gateway = {} if self.lakefs is None else {"s3.endpoint": self.lakefs.endpoint,
                                                  "s3.region": "us-east-1"}
        return HiveCatalog("hive", uri=self.thrift_uri, **self.keys, **gateway)


def start_rest_server(workdir: Path, *extra: str) -> RestServer:
    store = workdir / "store"
    proc = start_proxy(workdir, "--rest-port", "0", *extra, store=store, cwd=REPO_ROOT)
    port = proc.announced_port("rest")
    return RestServer(proc, store, f"http://127.0.0.1:{port}")


def start_lakefs_rest_server(workdir: Path, prefix: str, *extra: str,
                             branches: tuple[str, ...] = ()) -> RestServer:
    """A server with its REST port over a fresh repository of the session's real lakeFS
    (``prefix``: the repository's name starts with it; ``branches``: made from main by
    lakeFS's API before the server starts)."""
    import os

    from tests.support.lakefs import LakeFSApi, new_repository, real_lakefs

    lakefs = real_lakefs()
    repo = new_repository(prefix)
    if branches:
        with lakefs.sdk() as client:
            for name in branches:
                LakeFSApi(client, repo).branch(name, "main")
    env = {**os.environ, **lakefs.env(), "PYTHONPATH": str(REPO_ROOT)}
    store = f"lakefs://{repo}"
    proc = start_proxy(workdir, "--rest-port", "0", *extra, store=store, warehouse=False,
                       env=env, cwd=REPO_ROOT)
    port = proc.announced_port("rest")
    return RestServer(proc, store, f"http://127.0.0.1:{port}", env, lakefs, repo)


def table_on_main_merged_into_dev(server, api) -> set[int]:
    """``lake.t`` of three rows (id 1-3, v a-c) made on main through the REST door, committed on
    main and merged into dev with lakeFS's API (``api``: a LakeFSApi), as lakectl does; returns
    once dev's server reads it. The snapshot ids main had."""
    import pyarrow as pa

    from tests.support.wait import wait_until

    main = server.rest("main")
    main.create_namespace("lake")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
    main.create_table("lake.t", schema=data.schema).append(data)
    before = {s.snapshot_id for s in main.load_table("lake.t").snapshots()}
    api.commit("main", "the table")  # as lakectl commit
    api.merge("main", "dev")  # dev gets the table as lakeFS's merge brings it
    wait_until(lambda: len(server.rest("dev").load_table("lake.t").scan().to_arrow()) == 3,
               what="dev's table")
    return before


def commit_and_merge_dev_into_main(server, api, merge: str, message: str) -> None:
    """dev's writes committed with lakeFS's API (as lakectl commit), then merged into main by
    ``merge``: ``lakefs`` (lakeFS's API; the action's post-merge hook anchors a moment after)
    or ``hms-proxy`` (``hms-proxy merge dev main``: main's ``lake.t`` anchored at once, by the
    merge or by that hook of the lakeFS merge that lands it, whichever comes first)."""
    from tests.support.iceberg import named_paths
    from tests.support.wait import wait_until

    api.commit("dev", message)
    if merge == "lakefs":
        api.merge("dev", "main")
        return
    server.cli("merge", "dev", "main")
    wait_until(lambda: not any(f"/{server.repo}/dev/" in p for p in named_paths(
        server.rest("main").load_table("lake.t"))), what="main's table anchored")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_rest_server(tmp_path_factory.mktemp("rest"), "--autocommit")
    yield srv
    srv.proc.stop()


def race_appends(table: str, writers: list[tuple[object, int]], per_writer: int,
                 rows) -> list[int]:
    """Writers appending to ``table`` at once, each with its own catalog (``catalog_of()``)
    and ids ``first .. first + per_writer - 1`` (``rows(id)``: the Arrow table of one),
    one snapshot per row: a commit refused as
    stale (CommitFailedException) is retried on a fresh load, anything else fails the test.
    Returns the ids every writer appended (what the table must hold)."""
    import threading

    from pyiceberg.exceptions import CommitFailedException

    errors = []

    def write(catalog_of, first):
        catalog = catalog_of()
        for i in range(per_writer):
            while True:
                try:
                    catalog.load_table(table).append(rows(first + i))
                    break
                except CommitFailedException:
                    continue
                except Exception as error:  # noqa: BLE001 - reported below
                    errors.append(error)
                    return

    threads = [threading.Thread(target=write, args=w) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a writer is still running"
    return sorted(first + i for _, first in writers for i in range(per_writer))
