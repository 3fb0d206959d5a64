"""`hms-proxy bench plans` end to end at a tiny scale: two sessions, one stats compute between
them, the plans described and the answers equal. Checks the shape, not the timings (at this
size the customers table is under the broadcast threshold either way)."""
from __future__ import annotations

import json

import pytest

from hms_proxy.cli import build_parser

pytest.importorskip("pyspark")
pytestmark = pytest.mark.slow


def test_bench_plans_before_and_after_stats_compute(tmp_path, capsys):
    out_json, out_md = tmp_path / "p.json", tmp_path / "p.md"
    args = build_parser().parse_args([
        "bench", "plans", "--rows", "20000", "--customers", "5000", "--runs", "1",
        "--workdir", str(tmp_path / "work"), "--json", str(out_json),
        "--markdown", str(out_md)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    before, after = result["before"], result["after"]
    assert before["joins"] and after["joins"]
    assert len(before["seconds"]) == len(after["seconds"]) == 1
    assert before["answer"] == after["answer"] and before["answer"]
    # without statistics Spark knows the filtered table's size only; with them, its rows
    assert "rowCount" not in (before["customers_estimate"] or "")
    assert "rowCount" in after["customers_estimate"]
    assert "BroadcastHashJoin" in after["joins"]
    table = capsys.readouterr().out
    assert "estimate of the filtered customers" in table
    assert "hms-proxy bench plans --rows 20000 --customers 5000 --runs 1" in out_md.read_text()


def test_bench_plans_refuses_nonsense():
    args = build_parser().parse_args(["bench", "plans", "--rows", "0"])
    with pytest.raises(SystemExit, match="--rows must be at least 1"):
        args.func(args)
