"""How ``make test`` spreads the suite over pytest-xdist's workers, and what it prints of the
run's time (a pytest plugin, loaded by ``tests/conftest.py``).

Under ``-n N --dist loadgroup`` every test gets an ``xdist_group``: its file's, so that a
file's module fixtures (servers, oracles, a Spark run) start once, on one worker; the files
that share one costly process in a worker (Trino, the Hive 4 oracle) one group between them,
so that one worker starts it once; and a long file of independent tests (the conformance
scenarios) a few groups, so that it does not end the run alone. Groups are handed out longest
first (:data:`WEIGHTS`, seconds measured by an earlier run, ``tests/.artifacts/durations.json``),
so that no long one starts last.

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

# Files of many independent tests, split into this many groups (by test, round robin).
SPLIT = {
    "tests/hms/conformance/test_conformance.py": 2,
}

# Seconds per group measured by a run (tests/.artifacts/durations.json): the longest start
# first. A group not listed weighs DEFAULT_WEIGHT.
WEIGHTS: dict[str, float] = {}
DEFAULT_WEIGHT = 10.0


def group_of(path: str, index: int) -> str:
    """The xdist group of the ``index``-th test of the file at ``path`` (relative)."""
    for prefix, name in SHARED.items():
        if path.startswith(prefix):
            return name
    parts = SPLIT.get(path)
    if parts:
        return f"{path}#{index % parts}"
    return path


def _relative(item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the group into the node id
def pytest_collection_modifyitems(config, items):
    groups: dict[str, str] = {}
    seen: dict[str, int] = defaultdict(int)
    for item in items:
        path = _relative(item)
        groups[item.nodeid] = group_of(path, seen[path])
        seen[path] += 1
    if config.getoption("dist", "no") == "loadgroup" or getattr(config, "workerinput", None):
        for item in items:
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    # longest groups first; within a group the collection's order (stable sort)
    first_seen = {}
    for item in items:
        first_seen.setdefault(groups[item.nodeid], len(first_seen))
    items.sort(key=lambda item: (-WEIGHTS.get(groups[item.nodeid], DEFAULT_WEIGHT),
                                 first_seen[groups[item.nodeid]]))


_BY_GROUP: dict[str, float] | None = None  # seconds per group, kept by the controller
_STARTED = time.monotonic()


def pytest_configure(config):
    global _BY_GROUP
    if getattr(config, "workerinput", None) is None:  # the controller (or a run without -n)
        _BY_GROUP = defaultdict(float)


def pytest_runtest_logreport(report):
    if _BY_GROUP is not None:
        nodeid, _, group = report.nodeid.partition("@")
        _BY_GROUP[group or nodeid.split("::", 1)[0]] += report.duration


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
