"""`hms-proxy bench rest` end to end at a tiny scale: our server and Iceberg's reference REST
server started, every operation timed through both, the figures written. Checks that it runs
and what it reports, never the timings."""
from __future__ import annotations

import json
import shutil

import pytest

from hms_proxy.cli import build_parser
from hms_proxy.tools import iceberg_rest_local

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
OPS = {"loadTable (pyiceberg)", "loadTable (raw GET)", "commit: set a property (raw POST)",
       "commit: set a property (pyiceberg)", "commit: append 1 row (pyiceberg)",
       "loadTable throughput"}


def test_bench_rest_times_every_operation_on_both_sides(tmp_path, capsys):
    if shutil.which("java") is None:
        pytest.skip("no java: Iceberg's reference server runs on the JVM")
    try:
        iceberg_rest_local.ensure_jars()
    except RuntimeError as exc:
        pytest.skip(f"Iceberg's REST jars could not be fetched: {exc}")
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    args = build_parser().parse_args([
        "bench", "rest", "--snapshots", "3", "--rounds", "1", "--loads", "5", "--commits", "2",
        "--clients", "2", "--duration", "0.5", "--json", str(out_json),
        "--markdown", str(out_md)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    assert {r["op"] for r in result["rows"]} == OPS
    for row in result["rows"]:
        assert row["ours"] > 0 and row["reference"] > 0, row
    assert set(result["metadata_bytes"]) == {"hms-proxy", "Iceberg reference"}
    assert "hms-proxy bench rest --snapshots 3" in out_md.read_text()
    assert "| loadTable (raw GET) |" in capsys.readouterr().out
