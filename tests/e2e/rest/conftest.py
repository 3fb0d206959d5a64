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
    store: Path
    rest_uri: str

    @property
    def thrift_uri(self) -> str:
        return self.proc.uri

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store",
                               str(self.store)], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def rest(self, warehouse: str = "main", **props):
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("rest", uri=self.rest_uri, warehouse=warehouse, **props)

    def hive(self):
        from pyiceberg.catalog.hive import HiveCatalog
        return HiveCatalog("hive", uri=self.thrift_uri)


def start_rest_server(workdir: Path, *extra: str) -> RestServer:
    store = workdir / "store"
    proc = start_proxy(workdir, "--rest-port", "0", *extra, store=store, cwd=REPO_ROOT)
    port = proc.announced_port("rest")
    return RestServer(proc, store, f"http://127.0.0.1:{port}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_rest_server(tmp_path_factory.mktemp("rest"), "--autocommit")
    yield srv
    srv.proc.stop()
