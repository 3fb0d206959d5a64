"""``hms-proxy bench per-test`` end to end at a tiny scale: the four rows present, with
numbers, the seed really made on each side. Checks the shape of the result, not the timings."""
from __future__ import annotations

import argparse
import json

import pytest

from hms_proxy.tools.bench import register

pytestmark = [pytest.mark.oracle, pytest.mark.spark, pytest.mark.slow]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hms-proxy")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_bench_per_test_produces_a_full_table(tmp_path, capsys):
    out_json, out_md = tmp_path / "p.json", tmp_path / "p.md"
    args = parse(["bench", "per-test", "--tests", "3", "--derby-tests", "1", "--partitions",
                  "5", "--json", str(out_json), "--markdown", str(out_md)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    for key, n in (("branch", 3), ("branch_no_copy", 3), ("stock_drop_recreate", 3),
                   ("fresh_derby", 1)):
        assert result[key]["n"] == n, key
        assert 0 < result[key]["min_ms"] <= result[key]["median_ms"] <= result[key]["max_ms"]
    assert result["partitions"] == 5
    table = out_md.read_text()
    assert table.count("\n") == 6 and "fresh Derby metastore" in table
    assert table in capsys.readouterr().out


def test_bench_per_test_refuses_nonsense():
    args = parse(["bench", "per-test", "--tests", "0"])
    with pytest.raises(SystemExit, match="at least 1"):
        args.func(args)
