"""How ``make test`` spreads the suite over pytest-xdist's workers, and what it prints of the
run's time (a pytest plugin, loaded by ``tests/conftest.py``).

With ``-n N --dist loadgroup`` the tests go out in groups, each group to one worker
(:class:`GroupScheduling`): a file is a group, so that its module fixtures (servers, oracles, a
Spark run) start once, on one worker; the files that share one costly process of a worker
(Trino) are one group between them, so that one worker starts it. Groups are handed out
longest first (:data:`WEIGHTS`: seconds measured by an earlier run, in
``tests/.artifacts/durations.json``), so that no long one starts last.

xdist's own ``loadgroup`` reads ``xdist_group`` marks by rewriting node ids, which pytest 9.2
no longer lets it do; the groups here are a function of the node id alone, so the controller
computes them itself.

Every run, with or without workers, writes the seconds of each group to
``tests/.artifacts/durations.json`` (to refresh :data:`WEIGHTS` from).
"""
from __future__ import annotations

import json
import time
from collections import defaultdict

import pytest

from tests.support.process import REPO_ROOT

DURATIONS = REPO_ROOT / "tests" / ".artifacts" / "durations.json"

# Files whose tests share a process that costs much to start in each worker: one group each.
SHARED = {
    "tests/e2e/trino/": "trino",  # one Trino coordinator (tests/support/trino.py)
}

# Seconds per group measured by a run (tests/.artifacts/durations.json): the longest start
# first. A group not listed weighs DEFAULT_WEIGHT.
WEIGHTS: dict[str, float] = {  # tests/.artifacts/durations.json of a fresh clone's make test
    # (2026-11-29, 3c1f4f3, alone on the machine: 1930 tests, the suite 1,814 s; the Trino
    # group from 7feec77, after its ACID statements stopped waiting on retries: 988 -> 380 s)
    "trino": 400,
    "tests/e2e/rest/test_rest_spark.py": 331,
    "tests/e2e/lakefs/test_lakefs_servers.py": 308,
    "tests/stats/test_lakefs_stats.py": 170,
    "tests/plugin/test_pytest_plugin.py": 135,
    "tests/e2e/spark/test_branch_flow.py": 114,
    "tests/stats/test_compute.py": 105,
    "tests/resilience/test_resilience.py": 104,
    "tests/e2e/hive4/test_hive4_suite.py": 110,  # Hive 4.0.1's own client tests (2026-12-07)
    "tests/e2e/rest/test_rest_kit.py": 92,
    "tests/e2e/rest/test_rest_fuzz.py": 38,  # schemathesis over the REST door (2026-12-07)
    "tests/security/test_kerberos.py": 100,  # a KDC, the stock Kerberized, 2 Spark jobs (2026-12-07)
    "tests/security/test_delegation_tokens.py": 45,
    "tests/e2e/spark/test_spark_hive4.py": 85,  # Kerberized both sides (2026-12-07)
    "tests/hms/conformance/test_conformance.py": 74,
    "tests/e2e/spark/test_spark_hive31.py": 72,  # Kerberized both sides (2026-12-07)
    "tests/e2e/spark/test_spark_e2e.py": 65,
    "tests/e2e/lakefs/test_lakefs_server.py": 55,
    "tests/thrift/test_federation.py": 55,
    "tests/e2e/spark/test_served_statistics.py": 43,
    "tests/e2e/rest/test_rest_anchoring.py": 40,
    "tests/e2e/rest/test_rest_iceberg_merge.py": 36,
    "tests/hms/test_write_ids.py": 36,
    "tests/kvmodel/test_versioning.py": 34,
    "tests/e2e/pyiceberg/test_pyiceberg.py": 34,
    "tests/tools/test_bench_plans.py": 32,
    "tests/kvmodel/store/test_lakefs.py": 31,
    "tests/kvmodel/store/test_contract.py": 27,
    "tests/resilience/test_limits.py": 27,
    "tests/e2e/spark/test_lakefs_spark.py": 25,
    "tests/e2e/lakefs/test_lakefs_faults.py": 21,
    "tests/e2e/spark/test_kept_runners.py": 21,
    "tests/tools/test_bench_per_test.py": 21,
    "tests/e2e/lakefs/test_lakefs_hooks.py": 21,
    "tests/security/test_tls.py": 19,
    "tests/api/test_console.py": 18,
}
DEFAULT_WEIGHT = 10.0


def group_of(nodeid: str) -> str:
    """The group of the test ``nodeid`` (``tests/x/test_y.py::test_z[...]``)."""
    path = nodeid.split("::", 1)[0]
    for prefix, name in SHARED.items():
        if path.startswith(prefix):
            return name
    return path


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """xdist's scheduling by scope, with :func:`group_of` as the scope."""

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


def _unique_node_ids(items) -> None:
    """Give each test a node id of its own. Schemathesis's tests (one per operation of the
    HTTP API) all carry their function's node id under pytest 9.2; xdist hands out tests by
    node id, so all but one of them would never run on a worker. Their names differ: the id
    becomes the parent's and the name."""
    seen: dict[str, int] = defaultdict(int)
    for item in items:
        seen[item.nodeid] += 1
    for item in items:
        if seen[item.nodeid] > 1 and item.name not in item.nodeid:
            unique = f"{item.parent.nodeid}::{item.name}"
            if hasattr(item, "_id"):  # pytest 9.2: a structured node id
                from _pytest.nodeid import NodeId

                item._id = NodeId.parse(unique)
            else:
                item._nodeid = unique
    counts: dict[str, int] = defaultdict(int)
    for item in items:
        counts[item.nodeid] += 1
    twice = sorted(nodeid for nodeid, n in counts.items() if n > 1)
    if twice:  # a test that xdist would silently never run: refuse the run
        raise pytest.UsageError(f"{len(twice)} node ids name several tests: {twice[:5]}")


def pytest_collection_modifyitems(items):
    """Node ids made unique, then the longest groups first; within a group, the collection's
    order (so every worker, and the controller, sees one order: xdist requires it)."""
    _unique_node_ids(items)
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(group_of(item.nodeid), len(first_seen))
    items.sort(key=lambda item: (-WEIGHTS.get(group_of(item.nodeid), DEFAULT_WEIGHT),
                                 first_seen[group_of(item.nodeid)]))


_BY_GROUP: dict[str, float] | None = None  # seconds per group, kept by the controller
_STARTED = time.monotonic()


def pytest_configure(config):
    global _BY_GROUP
    if getattr(config, "workerinput", None) is None:  # the controller (or a run without -n)
        _BY_GROUP = defaultdict(float)


def pytest_runtest_logreport(report):
    if _BY_GROUP is not None:
        _BY_GROUP[group_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session):
    if not _BY_GROUP:
        return
    DURATIONS.parent.mkdir(parents=True, exist_ok=True)
    previous = {}
    if DURATIONS.exists():  # a partial run (-k, a path) keeps the other groups' figures
        try:
            previous = json.loads(DURATIONS.read_text())
        except ValueError:
            previous = {}
    previous.update({group: round(seconds, 1) for group, seconds in _BY_GROUP.items()})
    DURATIONS.write_text(json.dumps(dict(sorted(previous.items(), key=lambda kv: -kv[1])),
                                    indent=1) + "\n")


def pytest_terminal_summary(terminalreporter):
    if not _BY_GROUP:
        return
    terminalreporter.section("slowest groups (seconds of test time, summed)")
    for group, seconds in sorted(_BY_GROUP.items(), key=lambda kv: -kv[1])[:15]:
        terminalreporter.write_line(f"{seconds:8.1f}  {group}")
    terminalreporter.write_line(f"the suite's wall time: {time.monotonic() - _STARTED:.0f} s")
