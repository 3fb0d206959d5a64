"""Spark SQL end to end: the same statements through PySpark against the stock HMS 2.3.10
(the oracle) and against our proxy must give the same results, statement by statement.

The statements live in tests/e2e/spark/statements.py, grouped in sections; each test
function checks one section (all sections run in one SparkSession per side, started
once per module by the `spark_runs` fixture in conftest.py). Full outputs of both
sides are kept in tests/.artifacts/spark/{oracle,proxy}.jsonl.

Normalisation (everything else is compared exactly, including error conditions and
messages):
  * The Spark warehouse dir of each side becomes <SPARK_WAREHOUSE> and the metastore's
    own warehouse dir becomes <HMS_WAREHOUSE>: each side runs in its own temporary
    directories, so absolute paths necessarily differ. The "file:" scheme is kept, so
    a server that drops or adds it still shows up.
  * Rows "Created Time" and "Last Access" of DESCRIBE EXTENDED/FORMATTED (tables,
    partitions, databases) and the matching "Created Time: ..."/"Last Access: ..."
    lines in SHOW TABLE EXTENDED: wall-clock times of when the statement ran.
  * The `transient_lastDdlTime` property (in SHOW TBLPROPERTIES rows, in the
    "Table Properties"/"Partition Parameters" rows of DESCRIBE, in SHOW TABLE
    EXTENDED and SHOW CREATE TABLE text): HMS stamps it with the current time on
    every DDL.
  * Expression ids in EXPLAIN output ("ds#131" -> "ds#N"): they come from a JVM-wide
    counter, so they depend on everything the session did before, not on the metastore.
  * Nothing else: sizes in "Statistics" rows are compared as is, because both sides
    write the same parquet files with the same Spark version; row order is compared
    as is unless the statement says sort=True (queries without ORDER BY, SHOW
    TABLES/DATABASES/FUNCTIONS, whose order HMS does not specify).
"""

from __future__ import annotations

import difflib
import json
import re

import pytest

from tests.e2e.spark.statements import SECTIONS

pytestmark = [pytest.mark.spark, pytest.mark.oracle, pytest.mark.slow]

# Rows (first column) of DESCRIBE ... EXTENDED/FORMATTED whose value is a wall-clock time.
TIME_ROWS = {"Created Time", "Last Access"}
# Text lines (SHOW TABLE EXTENDED "information" column) holding a wall-clock time.
TIME_LINE = re.compile(r"^(Created Time|Last Access): .*$\n?", re.MULTILINE)
# transient_lastDdlTime as it appears in Spark's renderings of a property map:
#   "[a=b, transient_lastDdlTime=1700000000, c=d]"  (DESCRIBE, SHOW TABLE EXTENDED)
#   "'transient_lastDdlTime' = '1700000000'"          (SHOW CREATE TABLE)
DDL_TIME_ITEM = re.compile(r"(, )?transient_lastDdlTime=\d+(, )?")
DDL_TIME_SQL = re.compile(r"\s*'transient_lastDdlTime' = '\d+',?\n?")


def _strip_ddl_time_item(match: re.Match) -> str:
    # Keep one separator when the item sat between two others.
    return ", " if match.group(1) and match.group(2) else ""


def normalise_text(text: str, paths: dict[str, str]) -> str:
    for path, placeholder in paths.items():
        text = text.replace(path, placeholder)
    text = TIME_LINE.sub("", text)
    text = DDL_TIME_ITEM.sub(_strip_ddl_time_item, text)
    text = DDL_TIME_SQL.sub("\n", text)
    return text


def normalise_value(value, paths):
    if isinstance(value, str):
        return normalise_text(value, paths)
    if isinstance(value, list):
        return [normalise_value(v, paths) for v in value]
    if isinstance(value, dict):
        return {k: normalise_value(v, paths) for k, v in value.items()}
    return value


EXPR_ID = re.compile(r"#\d+")


def normalise_result(result: dict, paths: dict[str, str], statement: str = "") -> dict:
    if "rows" not in result:
        return {k: normalise_value(v, paths) for k, v in result.items() if k in ("error", "class", "message")}
    rows = []
    for row in result["rows"]:
        if isinstance(row, list) and row and row[0] in TIME_ROWS:
            continue
        if isinstance(row, list) and row and row[0] == "transient_lastDdlTime":  # SHOW TBLPROPERTIES
            continue
        row = normalise_value(row, paths)
        if statement.startswith("EXPLAIN") and isinstance(row, str):
            row = EXPR_ID.sub("#N", row)
        rows.append(row)
    return {"rows": rows}


def side_paths(run) -> dict[str, str]:
    """Absolute paths of this side's directories -> placeholders, longest first."""
    mapping = {str(run.warehouse): "<SPARK_WAREHOUSE>", str(run.metastore.warehouse): "<HMS_WAREHOUSE>",
               str(run.workdir): "<SPARK_WORKDIR>", str(run.metastore.workdir): "<HMS_WORKDIR>"}
    return dict(sorted(mapping.items(), key=lambda kv: -len(kv[0])))


def show(result: dict) -> list[str]:
    """One line per row (or the error), so a difflib diff points at the differing rows."""
    if "rows" not in result:
        return [json.dumps(result, ensure_ascii=False)]
    return [json.dumps(row, ensure_ascii=False) for row in result["rows"]] or ["(no rows)"]


def whole_run_differences(runs: dict, stock: str) -> list[str]:
    """Every statement of ``runs["oracle"]`` (named ``stock`` in the lines) and
    ``runs["proxy"]`` whose normalised results differ, one line each with both results: for
    the tests that compare a whole run at once (other Hive clients, Kerberos)."""
    oracle, proxy = runs["oracle"], runs["proxy"]
    o_paths, p_paths = side_paths(oracle), side_paths(proxy)
    assert len(oracle.results) >= 300
    differences = []
    for o, p in zip(oracle.results, proxy.results):
        assert o["statement"] == p["statement"]
        expected = normalise_result(o["result"], o_paths, o["statement"])
        actual = normalise_result(p["result"], p_paths, p["statement"])
        if expected != actual:
            differences.append(f"#{o['index']} {o['statement']}\n  {stock}: "
                               f"{show(expected)}\n  hms-proxy: {show(actual)}")
    return differences


@pytest.mark.parametrize("section", list(SECTIONS))
def test_section_matches_oracle(section, spark_runs):
    oracle, proxy = spark_runs["oracle"], spark_runs["proxy"]
    o_paths, p_paths = side_paths(oracle), side_paths(proxy)
    differences = []
    for o, p in zip(oracle.results, proxy.results):
        if o["section"] != section:
            continue
        assert o["statement"] == p["statement"]
        expected = normalise_result(o["result"], o_paths, o["statement"])
        actual = normalise_result(p["result"], p_paths, p["statement"])
        if expected != actual:
            differences.append((o, expected, actual))
    if differences:
        first, expected, actual = differences[0]
        others = "\n".join(f"  #{d[0]['index']}: {d[0]['statement']}" for d in differences[1:])
        pytest.fail(
            f"section {section!r}: {len(differences)} statement(s) differ from the oracle.\n"
            f"First: #{first['index']}: {first['statement']}\n"
            f"--- oracle (stock HMS 2.3.10):\n" + "\n".join(show(expected)) + "\n"
            "--- proxy:\n" + "\n".join(show(actual)) + "\n"
            "--- diff (- oracle, + proxy):\n"
            + "\n".join(difflib.unified_diff(show(expected), show(actual), "oracle", "proxy",
                                              lineterm="", n=1)) + "\n"
            + (f"Also differing:\n{others}\n" if others else "")
            + "Full outputs: tests/.artifacts/spark/{oracle,proxy}.jsonl",
            pytrace=False)
