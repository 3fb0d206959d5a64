"""`hms-proxy bench versioning` end to end at a tiny scale: every row present, with numbers.
Checks the shape of the result, not the timings."""
from __future__ import annotations

import argparse
import json
import os

import yaml

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


def test_bench_versioning_on_a_real_lakefs_builds_resumes_and_measures(tmp_path):
    """`--start-lakefs`: the same rows measured on two repositories of a real local lakeFS;
    only the 1M-vs-10k ratios keep a target there. A build stopped after its first committed
    chunk resumes from it; a second run reuses both repositories."""
    from hms_proxy.tools import lakefs_local
    from hms_proxy.tools.bench import versioning
    from kvmodel.store.lakefs import LakeFSConfig

    before = os.environ.get("LAKEFS_ENDPOINT")
    root = tmp_path / "stores"
    # an earlier run stopped after committing the first chunk of the large store
    lakefs = lakefs_local.start_lakefs(workdir=root / "lakefs")
    try:
        lakefs.create_repository("large")
        gen = versioning.Generator(300, 2)
        store = versioning.open_catalog_store("lakefs://large", config=LakeFSConfig(
            lakefs.api_url, lakefs.access_key_id, lakefs.secret_access_key))
        try:
            with store.write("main") as txn:
                txn.put_many(gen.catalog_entries())
                txn.put_many([gen.partition(0, i) for i in range(100)])
            store.commit("main", "first chunk", "bench",
                         {**versioning._fingerprint(300, 2), "built": "100"})
        finally:
            store.close()
    finally:
        lakefs.stop()

    small = ["--partitions", "300", "--tables", "2", "--small", "100", "--history", "3",
             "--repeat", "1", "--reads", "3", "--store", str(root), "--start-lakefs"]
    out_json, out_md = tmp_path / "v.json", tmp_path / "v.md"
    args = parse(["bench", "versioning", *small, "--json", str(out_json),
                  "--markdown", str(out_md)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    assert result["store"].startswith("lakeFS ")
    assert result["builds"]["large"]["resumed_after"] == 100
    assert result["builds"]["large"]["partitions"] == 200  # the rest
    assert result["builds"]["small"]["partitions"] == 100
    rows = {row["operation"]: row for row in result["rows"]}
    assert set(rows) == set(TARGETS)
    for key, row in rows.items():
        assert row["value"] is not None and row["value"] >= 0, (key, row)
        assert (row["target"] is not None) == (row["unit"] == "x"), (key, row)
    assert "--start-lakefs" in result["command"]
    assert "only the ratios have one here" in out_md.read_text()

    # lakeFS restarted with the settings docs/lakefs.md recommends; the repositories are reused
    again = parse(["bench", "versioning", *small, "--json", str(out_json),
                   "--lakefs-range-entries", "500", "--lakefs-batch-delay", "0"])
    assert again.func(again) == 0
    result = json.loads(out_json.read_text())
    assert result["builds"]["large"]["reused"] and result["builds"]["small"]["reused"]
    assert "--lakefs-range-entries 500 --lakefs-batch-delay 0" in result["command"]
    conf = yaml.safe_load((root / "lakefs" / "lakefs.yaml").read_text())
    assert conf["graveler"] == {"max_batch_delay": "0"}
    assert conf["committed"]["permanent"] == {"range_raggedness_entries": 500}
    assert "LAKEFS_ENDPOINT" not in os.environ or os.environ["LAKEFS_ENDPOINT"] == before
