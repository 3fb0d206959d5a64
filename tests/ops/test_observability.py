"""Observability without a server: the exposition format, per-thread call statistics, the
classification of catalog writes, JSON log lines and the commit and merge counters
(``hms_proxy/ops/metrics.py``, ``hms_proxy/ops/logs.py``). The server process is exercised in
``tests/ops/test_observability_server.py``."""
from __future__ import annotations

import ast
import inspect
import json
import logging
import math
import textwrap
import threading
import types

import pytest

from hms_proxy.ops import logs, metrics
from hms_proxy.thrift.processor import CallContext


# --- the exposition format ------------------------------------------------------------------
def test_label_values_are_escaped():
    fam = metrics.MetricFamily("hms_x_total", "counter", "x")
    fam.add(1, {"method": 'a\\b"c\nd'})
    text = metrics.render([fam])
    assert 'hms_x_total{method="a\\\\b\\"c\\nd"} 1' in text.splitlines()


def test_help_and_type_lines_come_first_and_help_is_escaped():
    fam = metrics.MetricFamily("hms_y", "gauge", "two\nlines and a \\ backslash")
    fam.add(2.5)
    assert metrics.render([fam]).splitlines() == [
        "# HELP hms_y two\\nlines and a \\\\ backslash",
        "# TYPE hms_y gauge",
        "hms_y 2.5",
    ]


@pytest.mark.parametrize("value,text", [(3, "3"), (0.25, "0.25"), (math.inf, "+Inf"),
                                        (-math.inf, "-Inf"), (math.nan, "NaN"), (True, "1"),
                                        (1e-05, "1e-05")])
def test_values(value, text):
    assert metrics.format_value(value) == text


def test_a_histogram_is_cumulative_and_ends_with_inf_sum_and_count():
    fam = metrics.MetricFamily("h_seconds", "histogram", "h")
    counts = [0] * (len(metrics.BUCKETS) + 1)
    counts[0], counts[3], counts[-1] = 2, 1, 1  # 2 under 100 µs, 1 under 1 ms, 1 over 10 s
    metrics.histogram(fam, {"method": "m"}, counts, 12.5)
    lines = metrics.render([fam]).splitlines()
    buckets = [line for line in lines if "_bucket" in line]
    assert len(buckets) == len(metrics.BUCKETS) + 1
    assert buckets[0] == 'h_seconds_bucket{method="m",le="0.0001"} 2'
    assert buckets[3] == 'h_seconds_bucket{method="m",le="0.001"} 3'
    assert buckets[-2] == 'h_seconds_bucket{method="m",le="10.0"} 3'
    assert buckets[-1] == 'h_seconds_bucket{method="m",le="+Inf"} 4'
    assert lines[-2:] == ['h_seconds_sum{method="m"} 12.5', 'h_seconds_count{method="m"} 4']


def test_buckets_span_100_microseconds_to_10_seconds():
    assert metrics.BUCKETS[0] == 0.0001 and metrics.BUCKETS[-1] == 10.0
    assert list(metrics.BUCKETS) == sorted(set(metrics.BUCKETS))


# --- call statistics ------------------------------------------------------------------------
def test_calls_recorded_on_many_threads_add_up_exactly():
    stats = metrics.CallStats()

    def work():
        for i in range(1000):
            stats.record("get_table", 0.0002, None)
            if i % 10 == 0:
                stats.record("get_table", 0.003, "NoSuchObjectException")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls, errors = stats.snapshot()
    row = calls["get_table"]
    assert sum(row[1:]) == 8 * 1100
    assert row[1 + metrics.BUCKETS.index(0.00025)] == 8000  # 0.2 ms: in le=0.00025
    assert row[1 + metrics.BUCKETS.index(0.005)] == 800
    assert row[0] == pytest.approx(8 * (1000 * 0.0002 + 100 * 0.003))
    assert errors == {("get_table", "NoSuchObjectException"): 800}
    # the shards of the finished threads were folded into one
    assert stats._shards == []


def test_a_value_on_a_bucket_bound_counts_in_that_bucket():
    stats = metrics.CallStats()
    stats.record("m", 0.001, None)
    calls, _ = stats.snapshot()
    assert calls["m"][1 + metrics.BUCKETS.index(0.001)] == 1


def test_shards_stay_bounded_without_scrapes(monkeypatch):
    # The bound follows the number of live threads, which other threads of the test process
    # (finishing servers, pools) change at any moment: the bound checked is the largest the
    # stats themselves saw, not a count taken again afterwards.
    seen = []
    count = threading.active_count

    def counted():
        seen.append(count())
        return seen[-1]
    monkeypatch.setattr(metrics.threading, "active_count", counted)
    stats = metrics.CallStats()
    for _ in range(300):
        t = threading.Thread(target=stats.record, args=("m", 0.0, None))
        t.start()
        t.join()
    assert seen and len(stats._shards) <= 64 + 2 * max(seen) + 1 < 300
    calls, _ = stats.snapshot()
    assert sum(calls["m"][1:]) == 300


# --- which calls are catalog writes ---------------------------------------------------------
def _writes_by_code() -> set[str]:
    """Thrift methods whose family implementation can reach ``Family.writing``: calls to
    ``self.x()`` resolved on the family, to ``other.x()`` on any family, to module
    functions by name; any ``.writing(`` is a write."""
    from hms_proxy.hms.handler import FAMILIES
    from hms_proxy.thrift.gen.fb303 import FacebookService
    from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
    from hms_proxy.thrift.processor import service_methods

    trees: dict = {}

    def tree(fn):
        if fn not in trees:
            try:
                trees[fn] = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            except (OSError, TypeError):
                trees[fn] = None
        return trees[fn]

    def ours(fn) -> bool:
        return isinstance(fn, types.FunctionType) and fn.__module__.startswith("hms_proxy")

    def reaches(cls, fn, seen) -> bool:
        if (cls, fn) in seen or tree(fn) is None:
            return False
        seen.add((cls, fn))
        for node in ast.walk(tree(fn)):
            if not isinstance(node, ast.Call):
                continue
            f, targets = node.func, []
            if isinstance(f, ast.Attribute):
                if f.attr == "writing":
                    return True
                if isinstance(f.value, ast.Name) and f.value.id == "self":
                    targets = [(cls, getattr(cls, f.attr, None))]
                else:
                    targets = [(fam, getattr(fam, f.attr, None)) for fam in FAMILIES]
            elif isinstance(f, ast.Name):
                targets = [(cls, fn.__globals__.get(f.id))]
            if any(ours(t) and reaches(c, t, seen) for c, t in targets):
                return True
        return False

    out = set()
    for name in service_methods((ThriftHiveMetastore, FacebookService)):
        family = next((fam for fam in FAMILIES if hasattr(fam, name)), None)
        if family is not None and reaches(family, getattr(family, name), set()):
            out.add(name)
    return out


def test_write_methods_are_exactly_those_reaching_a_write_transaction():
    found = _writes_by_code()
    assert found - logs.WRITE_METHODS == set(), "writes missing from logs.WRITE_METHODS"
    assert logs.WRITE_METHODS - found == set(), "not writes, yet in logs.WRITE_METHODS"


def test_the_classification_knows_a_few_by_name():
    for write in ("create_table", "add_partitions_req", "alter_partitions", "drop_database",
                  "update_table_column_statistics", "grant_role", "exchange_partitions"):
        assert write in logs.WRITE_METHODS
    for other in ("get_table", "get_partitions", "set_ugi", "lock", "open_txns", "commit_txn",
                  "get_config_value", "setMetaConf", "heartbeat", "fire_listener_event"):
        assert other not in logs.WRITE_METHODS


# --- log lines ------------------------------------------------------------------------------
def _ctx(**kw) -> CallContext:
    ctx = CallContext(peer="10.0.0.1:5000", user="alice")
    for k, v in kw.items():
        setattr(ctx, k, v)
    return ctx


def test_reads_log_at_debug_and_writes_at_info(caplog):
    observer = metrics.ServerMetrics(default_ref="main")
    caplog.set_level(logging.INFO, logger="hms_proxy.calls")
    observer.observe(_ctx(call="get_table shop.orders"), "get_table", 0.001, None)
    observer.observe(_ctx(call="create_table shop.orders", ref="dev"), "create_table", 0.004,
                     "AlreadyExistsException")
    lines = [r for r in caplog.records if r.name == "hms_proxy.calls"]
    assert [r.hms["method"] for r in lines] == ["create_table"]
    assert lines[0].levelno == logging.INFO
    assert lines[0].hms == {"method": "create_table", "object": "shop.orders",
                            "peer": "10.0.0.1:5000", "user": "alice",
                            "identity": None, "ref": "dev",
                            "duration_ms": 4.0, "outcome": "AlreadyExistsException",
                            "write": True}
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="hms_proxy.calls")
    observer.observe(_ctx(call="get_table shop.orders", ref=None), "get_table", 0.001, None)
    (line,) = [r for r in caplog.records if r.name == "hms_proxy.calls"]
    assert line.levelno == logging.DEBUG
    assert line.hms["ref"] == "main" and line.hms["outcome"] == "ok"
    assert line.getMessage() == ("get_table shop.orders user=alice peer=10.0.0.1:5000 ref=main "
                                 "1.000 ms ok")


def test_a_stale_call_description_names_no_object(caplog):
    caplog.set_level(logging.DEBUG, logger="hms_proxy.calls")
    metrics.ServerMetrics().observe(_ctx(call="get_table shop.orders"), "getStatus", 0.0, None)
    (line,) = [r for r in caplog.records if r.name == "hms_proxy.calls"]
    assert line.hms["object"] is None


def test_json_lines():
    fmt = logs.JsonFormatter()
    record = logging.LogRecord("hms_proxy.calls", logging.INFO, __file__, 1, "drop %s", ("t",),
                               None)
    record.hms = {"method": "drop_table", "duration_ms": 1.5, "user": None}
    out = json.loads(fmt.format(record))
    assert out["level"] == "INFO" and out["logger"] == "hms_proxy.calls"
    assert out["message"] == "drop t"
    assert out["method"] == "drop_table" and out["duration_ms"] == 1.5 and out["user"] is None
    assert out["time"].endswith("Z") and "T" in out["time"]
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        import sys
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = fmt.format(record)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exception"]


# --- commits, merges, health ----------------------------------------------------------------
def test_commits_and_merges_made_through_the_store_are_counted(tmp_path):
    from kvmodel.store.local import LocalStore
    from kvmodel.versioning import merge_refs

    observer = metrics.ServerMetrics()
    store = observer.counted(LocalStore(tmp_path / "store"))
    try:
        store.create_branch("dev", "main")
        with store.write("dev") as txn:
            txn.put("db/shop", b"1")
        store.commit("dev", "one")
        with store.write("main") as txn:
            txn.put("db/other", b"2")
        store.commit("main", "two")
        merge_refs(store, "dev", "main")
        assert (observer.commits, observer.merges) == (2, 1)
        text = observer.render()
        assert "hms_commits_total 2" in text.splitlines()
        assert "hms_merges_total 1" in text.splitlines()
    finally:
        store.close()


def test_health_follows_the_store():
    class Env:
        ref = "main"
        cache = None

        class store:  # noqa: N801 - a stand-in object
            @staticmethod
            def resolve(ref):
                raise OSError("disk gone")

            @staticmethod
            def list_branches():
                raise OSError("disk gone")

    observer = metrics.ServerMetrics(Env())
    ok, text = observer.healthy()
    assert not ok and "disk gone" in text
    assert "hms_store_up 0" in observer.render().splitlines()
