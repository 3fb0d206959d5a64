"""Conformance: each scenario must record the same outcomes on the stock HMS and on our proxy.

CONFORMANCE_ONLY=oracle (or =proxy) runs the scenarios against that server alone and
prints the transcripts instead of comparing, for writing and debugging scenarios.
Transcripts of every run are written to tests/.artifacts/conformance/<server>/.
"""

from __future__ import annotations

import os

import pytest

from tests.conformance import (scenarios_databases, scenarios_misc,  # noqa: F401 - registration
                               scenarios_partitions, scenarios_roles, scenarios_stats,
                               scenarios_tables, scenarios_trino)
from tests.conformance.harness import SCENARIOS, Recorder, diff, record
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.oracle

# Scenarios known to differ, each with its reason (also in docs/compatibility.md). They are
# strict xfails: the day one matches the oracle, the run fails until the entry is removed.
KNOWN_DIFFERENCES: dict[str, str] = {}

TRANSCRIPTS = REPO_ROOT / "tests" / ".artifacts" / "conformance"
ONLY = os.environ.get("CONFORMANCE_ONLY", "")


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
        return
    if name in KNOWN_DIFFERENCES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name]))
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
