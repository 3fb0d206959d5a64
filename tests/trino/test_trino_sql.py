"""A real Trino runs the same SQL against the stock HMS 2.3.10 and against us, in one test.

One Trino coordinator serves the session (tests/support/trino.py); each metastore gets a Hive
catalog of its own, reached through a recording relay (tests/support/thrift_recorder.py) so the
test also sees which metastore calls Trino made: the same ones on both servers, or Trino took
another path because of something we answered. The oracle-side calls are what
tests/conformance/recorded/ replays (``HMS_TRINO_RECORD=1`` rewrites that file).
"""
from __future__ import annotations

import collections
import json
import os
import uuid
from pathlib import Path

import pytest

from tests.support.process import REPO_ROOT
from tests.trino import scenario

pytestmark = [pytest.mark.oracle, pytest.mark.slow, pytest.mark.trino]

ARTIFACTS = REPO_ROOT / "tests" / ".artifacts" / "trino"
RECORDED = REPO_ROOT / "tests" / "conformance" / "recorded"


class CatalogRun:
    """The scenario's side in one catalog: a connection (session properties persist)."""

    def __init__(self, trino, catalog: str, schema: str, external: Path, warehouse: Path):
        self.catalog, self.schema = catalog, schema
        self.conn = trino.connect(catalog=catalog, schema=schema)
        self.fill = {"catalog": catalog, "schema": schema, "external": external.as_uri()}
        self.replacements = {f"file:{warehouse}": "file:<WAREHOUSE>", str(warehouse): "<WAREHOUSE>",
                             external.as_uri(): "<EXTERNAL>", f"file:{external}": "<EXTERNAL>",
                             str(external): "<EXTERNAL>", catalog: "<catalog>"}
        self.outcomes: list[tuple] = []

    def execute(self, sql: str) -> list:
        cur = self.conn.cursor()
        try:
            cur.execute(sql)
            return cur.fetchall()
        finally:
            cur.close()

    def step(self, step: scenario.Step) -> tuple:
        outcome = scenario.run(self.execute, step, self.fill, self.replacements)
        self.outcomes.append(outcome)
        return outcome


def recorded_calls(recorder, replacements: dict[str, str]) -> list[dict]:
    from tests.support.thrift_recorder import map_strings

    def fix(text: str) -> str:
        for old, new in replacements.items():
            text = text.replace(old, new)
        return text

    calls = recorder.take()
    start = calls[0][0] if calls else 0.0
    return [{"t": round(t - start, 4), "conn": conn, "method": name,
             "args": map_strings(args, fix)} for t, conn, name, args in calls]


@pytest.fixture(scope="module")
def trino():
    from tests.support.trino import real_trino

    return real_trino()


def test_trino_sql_matches_stock_hms(trino, oracle, proxy, tmp_path):
    from tests.support.thrift_recorder import Recorder
    from tests.support.trino import add_catalog

    schema = f"trs_{uuid.uuid4().hex[:8]}"
    sides = {}
    recorders = {}
    for name, server in (("oracle", oracle), ("proxy", proxy)):
        recorders[name] = Recorder((server.host, server.port))
        catalog = add_catalog(recorders[name].uri, prefix=name)
        external = tmp_path / f"external_{name}"
        external.mkdir()
        sides[name] = CatalogRun(trino, catalog, schema, external, server.warehouse)
    sides["oracle"].replacements[schema] = "<schema>"
    sides["proxy"].replacements[schema] = "<schema>"

    problems = []
    transcript = []
    for i, step in enumerate(scenario.STEPS):
        got = {name: side.step(step) for name, side in sides.items()}
        transcript.append({"step": i, "sql": step.sql, **got})
        if got["oracle"] != got["proxy"]:
            problems.append(f"step {i} `{step.sql}`:\n  stock HMS: {got['oracle']}\n"
                            f"  hms-proxy: {got['proxy']}")
        for name in sides:
            why = scenario.check_expectation(step, got[name], sides[name].fill)
            if why:
                problems.append(f"step {i} `{step.sql}` on {name}: {why}")

    calls = {name: recorded_calls(rec, sides[name].replacements)
             for name, rec in recorders.items()}
    for rec in recorders.values():
        rec.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "sql-transcript.json").write_text(json.dumps(transcript, indent=1, default=str))
    for name, seq in calls.items():
        (ARTIFACTS / f"calls-{name}.json").write_text(json.dumps(seq, indent=0))
    if os.environ.get("HMS_TRINO_RECORD"):
        RECORDED.mkdir(parents=True, exist_ok=True)
        out = {"trino_version": trino.version, "schema": "<schema>", "calls": calls["oracle"]}
        (RECORDED / "trino.json").write_text(json.dumps(out, indent=0) + "\n")

    # The same SQL made Trino call the same methods, as many times, on both servers: another
    # method or count means it took another path (a fallback, a retry) because of an answer of
    # ours. Except: Trino probes whether a metastore takes date column statistics by sending
    # them in a call of their own until one succeeds, and its concurrent INSERT threads send
    # more or fewer such calls depending on timing.
    timing = {"update_partition_column_statistics", "update_table_column_statistics"}
    counts = {name: collections.Counter(c["method"] for c in seq if c["method"] not in timing)
              for name, seq in calls.items()}
    methods = {name: {c["method"] for c in seq} for name, seq in calls.items()}
    if counts["oracle"] != counts["proxy"] or methods["oracle"] != methods["proxy"]:
        diff = {m: (counts["oracle"][m], counts["proxy"][m])
                for m in methods["oracle"] | methods["proxy"]
                if counts["oracle"][m] != counts["proxy"][m]
                or (m in methods["oracle"]) != (m in methods["proxy"])}
        problems.append(f"metastore calls differ (stock HMS, hms-proxy): {diff}")
    assert len(scenario.STEPS) >= 40
    assert not problems, "\n".join(problems)
