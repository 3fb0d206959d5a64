"""`hms-proxy bench versioning` end to end at a tiny scale: every row present, with numbers.
Checks the shape of the result, not the timings."""
from __future__ import annotations

import argparse
import json

from hms_proxy.cli import build_parser
from hms_proxy.tools.bench import register
from hms_proxy.tools.bench.versioning import TARGETS

TINY = ["--partitions", "2000", "--tables", "4", "--small", "500", "--history", "20",
        "--repeat", "2", "--reads", "5"]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hms-proxy")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_bench_versioning_produces_a_full_table(tmp_path, capsys):
    out_json, out_md = tmp_path / "v.json", tmp_path / "v.md"
    args = parse(["bench", "versioning", *TINY, "--store", str(tmp_path / "stores"),
                  "--json", str(out_json), "--markdown", str(out_md)])
    assert args.func(args) == 0

    result = json.loads(out_json.read_text())
    rows = {row["operation"]: row for row in result["rows"]}
    assert set(rows) == set(TARGETS)
    for key, row in rows.items():
        assert row["value"] is not None and row["value"] >= 0, (key, row)
        if row["target"] is None:
            assert row["met"] is None
        else:
            assert isinstance(row["met"], bool), (key, row)
        assert all(s >= 0 for s in row.get("samples", [])), key
    for key in ("branch", "commit_contiguous", "commit_scattered", "diff_contiguous",
                "diff_scattered", "merge"):
        assert len(rows[key]["samples"]) == 2 and len(rows[key]["small_samples"]) == 2
    assert len(rows["commit_one"]["samples"]) == 20
    assert result["builds"]["large"]["partitions"] == 2000
    assert result["builds"]["small"]["partitions"] == 500
    assert 1000 <= result["builds"]["large"]["mean_value_bytes"] <= 2500

    table = capsys.readouterr().out
    for row in rows.values():
        assert row["label"] in table
    assert "Target" in table and "Met" in table
    markdown = out_md.read_text()
    assert "hms-proxy bench versioning" in markdown and rows["merge"]["label"] in markdown

    # a second run on the same directory reuses the stores it built
    args = parse(["bench", "versioning", *TINY, "--store", str(tmp_path / "stores"),
                  "--json", str(out_json)])
    assert args.func(args) == 0
    again = json.loads(out_json.read_text())
    assert again["builds"]["large"]["reused"] and again["builds"]["small"]["reused"]
    assert {row["operation"] for row in again["rows"]} == set(TARGETS)


def test_plain_bench_options_are_unchanged():
    args = build_parser().parse_args(["bench", "--target", "thrift://localhost:9083",
                                      "--partitions", "50"])
    assert args.func.__name__ == "_cmd_bench" and args.partitions == 50
    assert args.bench_mode is None
    args = build_parser().parse_args(["bench", "versioning", "--partitions", "50"])
    assert args.func.__name__ == "cmd_versioning" and args.partitions == 50
    assert args.small == 10_000 and args.tables == 100
