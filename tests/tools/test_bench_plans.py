"""`hms-proxy bench plans` end to end at a tiny scale: two sessions, one stats compute between
them, the plans described and the answers equal. Checks the plan, not the timings: with the
broadcast threshold set below the customers table's size (as the 10 MB default is below the
published run's 36 MB table), the join changes from a sort-merge to a broadcast once the
filtered customers' rows are estimated from the computed statistics."""
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
        "--markdown", str(out_md), "--conf", "spark.sql.autoBroadcastJoinThreshold=20000"])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    before, after = result["before"], result["after"]
    assert before["joins"] and after["joins"]
    assert len(before["seconds"]) == len(after["seconds"]) == 1
    assert before["answer"] == after["answer"] and before["answer"]
    # without statistics Spark knows the filtered table's size only; with them, its rows
    assert "rowCount" not in (before["customers_estimate"] or "")
    assert "rowCount" in after["customers_estimate"]
    assert result["sizes"]["customers"] > 20000  # above the threshold: no broadcast before
    assert "SortMergeJoin" in before["joins"] and "BroadcastHashJoin" not in before["joins"]
    assert "BroadcastHashJoin" in after["joins"]
    table = capsys.readouterr().out
    assert "estimate of the filtered customers" in table
    assert ("hms-proxy bench plans --rows 20000 --customers 5000 --runs 1 --conf "
            "spark.sql.autoBroadcastJoinThreshold=20000") in out_md.read_text()


def test_bench_plans_refuses_nonsense():
    args = build_parser().parse_args(["bench", "plans", "--rows", "0"])
    with pytest.raises(SystemExit, match="--rows must be at least 1"):
        args.func(args)
    args = build_parser().parse_args(["bench", "plans", "--conf", "novalue"])
    with pytest.raises(SystemExit, match="--conf takes KEY=VALUE"):
        args.func(args)
