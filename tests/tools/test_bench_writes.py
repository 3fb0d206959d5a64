"""``hms-proxy bench writes`` end to end at a tiny scale (the embedded store, one second per
row): every row present, writes counted, no errors, both modes. Checks the shape of the
result and that the writes happened, not the timings."""
from __future__ import annotations

import argparse
import json

import pytest

from hms_proxy.tools.bench import register


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hms-proxy")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_bench_writes_counts_every_writers_writes(tmp_path, capsys):
    out_json, out_md = tmp_path / "w.json", tmp_path / "w.md"
    args = parse(["bench", "writes", "--writers", "1,2", "--duration", "1", "--servers",
                  "embedded", "--json", str(out_json), "--markdown", str(out_md)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    assert [(r["mode"], r["writers"]) for r in result["rows"]] == [
        ("add", 1), ("add", 2), ("alter", 1), ("alter", 2)]
    for row in result["rows"]:
        assert row["errors"] == 0 and row["first_error"] is None, row
        assert row["writes"] > 0 and row["per_second"] == round(row["writes"] / 1.0, 1)
    markdown = out_md.read_text()
    assert "add_partition (a table each) | 2 |" in markdown and "x 1 writer" in markdown
    table = markdown.split("\n\n", 1)[1]  # after the command line and the date
    assert table.strip() in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--writers", "0"], "at least 1"),
    (["--writers", "x"], "numbers like"),
    (["--modes", "drop"], "--modes takes"),
    (["--servers", "oracle"], "--servers takes"),
    (["--uncommitted", "-1"], "--uncommitted takes"),
    (["--per-call", "0"], "--per-call 1 or more"),
])
def test_bench_writes_refuses_nonsense(argv, message):
    args = parse(["bench", "writes", *argv])
    with pytest.raises(SystemExit, match=message):
        args.func(args)


def test_two_server_columns_are_compared_with_one_server():
    """The two-server columns (writers split, or N per server) carry their ratio to one server
    with as many writers asked for, beside the ratio to their own one-writer row."""
    from hms_proxy.tools.bench.writes import table

    def row(server, writers, per_second):
        return {"mode": "add", "writers": writers, "server": server, "errors": 0,
                "per_second": per_second}

    one, two = "ours, lakeFS defaults", "ours, 2 servers x N writers, lakeFS defaults"
    text = table({"rows": [row(one, 1, 40.0), row(two, 1, 70.0), row(one, 8, 200.0),
                           row(two, 8, 300.0)]})
    assert "| add_partition (a table each) | 8 | 200.0 (5.0x 1 writer) | " \
           "300.0 (4.3x 1 writer, 1.50x one server) |" in text


def test_writes_over_uncommitted_partitions_on_lakefs(tmp_path):
    """``--uncommitted``: the lakeFS-backed server's branch first gets that many partitions,
    no commit taking them, then the rows are timed over them (a real lakeFS of the bench's
    own)."""
    pytest.importorskip("lakefs_sdk")
    out_json = tmp_path / "w.json"
    args = parse(["bench", "writes", "--writers", "2", "--duration", "1", "--modes", "add",
                  "--servers", "lakefs", "--uncommitted", "1500", "--per-call", "100",
                  "--json", str(out_json)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    assert list(result["uncommitted"]) == ["ours, lakeFS defaults"]
    assert "--uncommitted 1500 --per-call 100" in result["command"]
    [row] = result["rows"]
    assert row["errors"] == 0 and row["writes"] > 0, row
