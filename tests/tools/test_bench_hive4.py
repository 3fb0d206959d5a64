"""`hms-proxy bench hive4` end to end at a tiny scale: both servers started, every operation timed
through Hive 4's HiveMetaStoreClient on both, the figures written. Checks that it runs and
what it reports, never the timings."""
from __future__ import annotations

import json

import pytest

from hms_proxy.cli import build_parser

pytestmark = [pytest.mark.slow, pytest.mark.oracle, pytest.mark.timeout(900)]

OPS = {"add_partitions", "get_table", "get_database", "get_partition", "get_all_tables",
       "get_partitions_by_names", "get_partitions_by_filter_1pct", "alter_partition",
       "get_partition_names", "get_partitions"}


def test_bench_hive4_times_every_operation_on_both_sides(tmp_path, capsys):
    out_json, out_md = tmp_path / "h.json", tmp_path / "h.md"
    args = build_parser().parse_args([
        "bench", "hive4", "--partitions", "60", "--scale", "0.05", "--chunk", "25",
        "--json", str(out_json), "--markdown", str(out_md)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    assert result["errors"] == {}
    assert {r["op"] for r in result["rows"]} == OPS
    for row in result["rows"]:
        assert row["calls"] >= 1 and row["ours_ms"] > 0 and row["stock_ms"] > 0
        assert set(row["samples"]) == {"hms-proxy", "stock HMS 4.0.1"}
    assert next(r for r in result["rows"] if r["op"] == "add_partitions")["calls"] == 3
    assert "hms-proxy bench hive4 --partitions 60 --scale 0.05 --chunk 25" in out_md.read_text()
    assert "| get_table |" in capsys.readouterr().out
