"""`hms-proxy bench stats` end to end at a tiny size (a few columns and partitions, no Spark, no
stock HMS): every figure is produced and the program's output is complete. Checks the shape of
the result, never the timings."""
from __future__ import annotations

import argparse
import json

import pyarrow  # noqa: F401

from hms_proxy.tools.bench import (
    register,  # noqa: E402
    stats_bench,  # noqa: E402
)

TINY = ["--columns", "30", "--partitions", "4", "--table-columns", "12", "--runs", "5",
        "--skip-compute"]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hms-proxy")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_bench_stats_produces_every_figure(tmp_path, capsys):
    out_json, out_md = tmp_path / "s.json", tmp_path / "s.md"
    args = parse(["bench", "stats", *TINY, "--workdir", str(tmp_path / "work"),
                  "--json", str(out_json), "--markdown", str(out_md)])
    assert args.func(args) == 0

    result = json.loads(out_json.read_text())
    rows = {row["operation"]: row for row in result["rows"]}
    assert {"lookup_direct", "lookup_server", "table_reduce", "table_server",
            "table_aggr"} <= set(rows)
    for key, row in rows.items():
        assert row["median_ms"] is not None and row["median_ms"] >= 0, (key, row)
        assert row["p95_ms"] >= row["median_ms"] or row["runs"] == 1, (key, row)
        assert isinstance(row["met"], bool), (key, row)
    assert rows["lookup_server"]["runs"] == 5
    size = result["size"]
    assert size["columns"] == 30 and size["bytes"] > 0 and isinstance(size["met"], bool)
    assert all(b > 0 for b in size["variants"].values())
    assert "compute" not in result
    assert any("skipped" in note for note in result["notes"])

    table = capsys.readouterr().out
    for row in rows.values():
        assert row["label"] in table
    assert "statistics.parquet of a 30-column table" in table
    markdown = out_md.read_text()
    assert "hms-proxy bench stats" in markdown and rows["table_aggr"]["label"] in markdown


def test_statistics_rows_are_consistent():
    import random

    from stats import layout

    rng = random.Random(3)
    for name, hive_type in stats_bench.column_defs(len(stats_bench.TYPES) * 3):
        row = stats_bench.stat_row(name, hive_type, 1000, rng)
        assert set(row) == set(layout.STATISTICS_SCHEMA.names)
        assert 0 <= row["null_count"] <= row["count"] == 1000
        if row["min_value"] is not None:
            pcts = [row[layout.percentile_name(p)] for p in layout.PERCENTILES]
            assert row["min_value"] <= min(pcts) <= max(pcts) <= row["max_value"]
