"""Conformance: each scenario must record the same outcomes on the stock HMS and on our proxy.

CONFORMANCE_ONLY=oracle (or =proxy) runs the scenarios against that server alone and
prints the transcripts instead of comparing, for writing and debugging scenarios: each
scenario is then reported skipped (nothing was compared), never passed.
Transcripts of every run are written to tests/.artifacts/conformance/<server>/.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

import pytest

import tests.hms.conformance
from hms_proxy.thrift import generations
from hms_proxy.thrift.gen.fb303 import FacebookService
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.processor import service_methods
from tests.hms.conformance.harness import SCENARIOS, Recorder, diff, record
from tests.support.process import REPO_ROOT

# Every tests/hms/conformance/scenarios_*.py registers its scenarios when imported.
for _module in pkgutil.iter_modules(tests.hms.conformance.__path__):
    if _module.name.startswith("scenarios_"):
        importlib.import_module(f"tests.hms.conformance.{_module.name}")

pytestmark = pytest.mark.oracle

# Scenarios known to differ, each with its reason (also in docs/compatibility.md). They are
# strict xfails: the day one matches the oracle, the run fails until the entry is removed.
KNOWN_DIFFERENCES: dict[str, str] = {}

TRANSCRIPTS = REPO_ROOT / "tests" / ".artifacts" / "conformance"
ONLY = os.environ.get("CONFORMANCE_ONLY", "")

# The share of the interface (HMS 2.3.10 and fb303) that scenarios must call and match
# (166 of 167 today: all but get_partitions_by_expr, see docs/compatibility.md).
COVERAGE_GOAL = 0.95
# scenario name -> the interface methods it called, for each scenario that matched the oracle
COMPARED: dict[str, set[str]] = {}


def save_transcript(server: str, rec: Recorder) -> None:
    """Keep the full transcript (with exception messages) for inspection after a run."""
    out = TRANSCRIPTS / server
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{rec.scenario_name}.txt").write_text("\n".join(rec.lines(with_details=True)) + "\n")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name, request):
    if ONLY:
        if ONLY not in ("oracle", "proxy"):
            pytest.fail(f"CONFORMANCE_ONLY must be 'oracle' or 'proxy', not {ONLY!r}")
        rec = record(request.getfixturevalue(ONLY), name)
        save_transcript(ONLY, rec)
        print(f"== {name} on {ONLY}: {len(rec.entries)} calls")
        print("\n".join(rec.lines(with_details=True)))
        other = "proxy" if ONLY == "oracle" else "oracle"
        pytest.skip(f"CONFORMANCE_ONLY={ONLY}: {name} recorded on the {ONLY} alone "
                    f"({len(rec.entries)} calls, transcript in {TRANSCRIPTS / ONLY}); "
                    f"not compared with the {other}")
    if name in KNOWN_DIFFERENCES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name]))
    compare(name, request)


def compare(name: str, request) -> None:
    """Record scenario `name` on both servers; fail unless the recordings are equal."""
    proxy = request.getfixturevalue("proxy")  # first: skips before starting the oracle
    oracle = request.getfixturevalue("oracle")
    expected, actual = record(oracle, name), record(proxy, name)
    save_transcript("oracle", expected)
    save_transcript("proxy", actual)
    for server, rec in (("oracle", expected), ("proxy", actual)):
        aborted = [e for e in rec.entries if e.label == "scenario aborted"]
        if aborted:
            # Two recordings that both stop early would compare equal while testing nothing.
            pytest.fail(f"scenario {name} aborted on the {server}: {aborted[0].outcome[1]}",
                        pytrace=False)
    if expected.lines() != actual.lines():
        pytest.fail(f"scenario {name} differs from the oracle (- oracle, + proxy):\n"
                    f"{diff(expected, actual)}", pytrace=False)
    COMPARED[name] = expected.methods & actual.methods


def test_method_coverage(request):
    """At least 95% of the interface's methods are called by scenarios that match the oracle.

    Runs after the scenarios above and counts what they compared; scenarios not run in this
    session (a `-k` selection) are compared here first, so the figure is always the whole suite's.
    """
    if ONLY:
        pytest.skip("CONFORMANCE_ONLY records transcripts without comparing")
    for name in SCENARIOS:
        if name not in COMPARED and name not in KNOWN_DIFFERENCES:
            compare(name, request)
    # the 2.3.10 interface, whose oracle this suite replays against (3.x/4.x calls are compared
    # with their own stock versions: tests/hms/test_request_calls.py)
    interface = {name for name in service_methods((ThriftHiveMetastore, FacebookService))
                 if "2.3.10" in generations.METHODS.get(name, ("2.3.10",))}
    covered = set().union(*COMPARED.values()) & interface
    uncovered = sorted(interface - covered)
    share = len(covered) / len(interface)
    report = (f"{len(covered)} of {len(interface)} interface methods ({share:.1%}) are covered by "
              f"conformance scenarios; not covered ({len(uncovered)}):\n  " + "\n  ".join(uncovered))
    TRANSCRIPTS.mkdir(parents=True, exist_ok=True)
    (TRANSCRIPTS / "coverage.txt").write_text(report + "\n")
    print(report)
    assert share >= COVERAGE_GOAL, report
