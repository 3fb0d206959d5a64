"""`hms-proxy bench` end to end at a tiny scale: our server as the target (started by the bench)
and as the `--against` side (the session's proxy). Checks the result shape, not the timings."""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil

import pytest

from hms_proxy.tools.bench import register
from hms_proxy.tools.bench.runner import OPERATIONS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None,
                       reason="the bench's JVM client needs a JDK (java and javac)"),
    pytest.mark.skipif(importlib.util.find_spec("pyspark") is None,
                       reason="the bench needs pyspark's jars"),
]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hms-proxy")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_bench_produces_a_full_table(proxy, tmp_path, capsys):
    out_json, out_md = tmp_path / "bench.json", tmp_path / "bench.md"
    args = parse(["bench", "--start-proxy", "--against", proxy.uri, "--partitions", "200",
                  "--iterations", "3", "--warmup", "1", "--duration", "0.5",
                  "--throughput-rounds", "1", "--json", str(out_json), "--markdown", str(out_md)])
    assert args.func(args) == 0

    result = json.loads(out_json.read_text())
    rows = {row["operation"]: row for row in result["rows"]}
    expected = {"add_partitions", "get_table_throughput", *(key for key, *_ in OPERATIONS)}
    assert set(rows) == expected
    for key, row in rows.items():
        assert row["errors"] == {}, f"{key}: {row['errors']}"
        for side in ("target", "against"):
            median = row[f"{side}_median"]
            assert median is not None and median >= 0, (key, side, row)
            assert len(row[f"{side}_samples"]) >= 1
        assert row["ratio"] is not None and row["ratio"] >= 0
        assert isinstance(row["met"], bool)

    table = capsys.readouterr().out
    for row in rows.values():
        assert row["label"] in table
    assert "Ratio" in table and "Met" in table
    markdown = out_md.read_text()
    assert "hms-proxy bench --start-proxy --against" in markdown
    assert rows["get_table"]["label"] in markdown


def test_bench_visibility_two_servers_over_one_lakefs_branch(tmp_path, capsys):
    """Two servers over a real lakeFS (started by the bench): each write through A is read
    back through A at once and shown by B; the figures come out (their values are the
    docs' business, not this test's)."""
    out = tmp_path / "vis.json"
    args = parse(["bench", "visibility", "--writes", "5", "--json", str(out)])
    assert args.func(args) == 0
    result = json.loads(out.read_text())
    assert result["writes"] == 5 and result["own_writes_not_read_back"] == 0
    assert 0 <= result["median_ms"] <= result["p99_ms"] <= result["worst_ms"]
    assert "read back through A at once: 5 of 5" in capsys.readouterr().out


def test_bench_kerberized_with_privacy(tmp_path):
    """``--kerberos privacy``: the bench's own KDC, our server Kerberized with auth-conf, and
    the JVM client's every connection over SASL GSSAPI with auth-conf: every call answered."""
    from hms_proxy.tools import kdc

    if kdc.missing():
        pytest.skip(kdc.missing())
    pytest.importorskip("gssapi")
    out_json = tmp_path / "bench.json"
    args = parse(["bench", "--start-proxy", "--kerberos", "privacy", "--partitions", "100",
                  "--iterations", "2", "--warmup", "1", "--duration", "0.5",
                  "--throughput-rounds", "1", "--json", str(out_json)])
    assert args.func(args) == 0
    result = json.loads(out_json.read_text())
    assert result["kerberos"] == "privacy"
    assert "--kerberos privacy" in result["command"]
    for row in result["rows"]:
        assert row["errors"] == {}, row
        assert row["target_median"] is not None, row


def test_bench_kerberos_makes_its_own_realm_only():
    args = parse(["bench", "--target", "thrift://localhost:9083", "--kerberos", "privacy"])
    with pytest.raises(SystemExit, match="realm of its own"):
        args.func(args)
