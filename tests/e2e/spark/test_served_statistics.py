"""Spark's optimizer sees the statistics of `hms-proxy stats compute`, with no ANALYZE.

Spark builds table and partition statistics from their parameters only; the server adds the
current statistics set's to the tables and partitions it answers with
(hms_proxy/hms/served_props.py). Here real Spark computes the sets, then a *new* Spark session
(another process, cost-based optimizer on) reads them: EXPLAIN COST's row count, DESCRIBE
EXTENDED's column statistics and the histogram Spark decodes from our bytes. Then what a
demanding user does next: Spark's ALTER TABLE (reads the table and writes it back: nothing
frozen), Spark's own ANALYZE (its statistics win), a column retyped (its statistics are no
longer served), and the switch that turns it all off.
"""
from __future__ import annotations

import json
import os
import re
import sys

import pytest

pytest.importorskip("pyspark")

from hms_proxy.thrift.gen.hive_metastore import ttypes  # noqa: E402
from kvmodel import codec  # noqa: E402
from kvmodel.store import open_store  # noqa: E402
from stats import compute, layout  # noqa: E402
from tests.support.client import connect  # noqa: E402
from tests.support import spark_runs  # noqa: E402
from tests.support.process import REPO_ROOT  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402

pytestmark = pytest.mark.slow

RUNNER = REPO_ROOT / "tests" / "e2e" / "spark" / "runner.py"
ROWS = 20_000
CBO = ["spark.sql.cbo.enabled=true", "spark.sql.statistics.histogram.enabled=true"]
STATS = "spark.sql.statistics."


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    work = tmp_path_factory.mktemp("served-stats")
    store_path = work / "store"
    server = start_proxy(work / "server", store=store_path)
    spark = None
    try:
        spark = compute.build_session(server.uri, "local[1]", workdir=str(work / "spark"))
        spark.sql("CREATE TABLE t (id BIGINT, userId INT, name STRING, d DATE, ts TIMESTAMP, "
                  "x DOUBLE, amount DECIMAL(10,2), flag BOOLEAN) USING parquet "
                  "PARTITIONED BY (p STRING)")
        spark.sql("INSERT INTO t SELECT id, CAST(id % 977 AS INT), concat('n', id % 50), "
                  "date_add('2024-01-01', CAST(id % 300 AS INT)), "
                  "timestamp_seconds(1700000000 + id), (id * 7919 % 10007) / 100.0, "
                  f"CAST(id / 7 AS DECIMAL(10,2)), id % 3 = 0, CAST(id % 2 AS STRING) "
                  f"FROM range({ROWS})")
        spark.sql("CREATE TABLE own (a INT, s STRING) STORED AS PARQUET")
        spark.sql("INSERT INTO own SELECT CAST(id % 10 AS INT), concat('s', id % 4) "
                  "FROM range(1000)")
        spark.sql("CREATE TABLE retyped (a INT, b DOUBLE) STORED AS PARQUET")
        spark.sql("INSERT INTO retyped SELECT CAST(id AS INT), id / 2 FROM range(100)")
        store = open_store(str(store_path))
        store.commit("main", "tables and data", author="test")
        for table in ("t", "own", "retyped"):
            compute.compute(spark, server.uri, store, "default", table,
                            store_path=str(store_path))
        spark.stop()
        spark = None
        yield {"work": work, "server": server, "store": store, "store_path": store_path}
        store.close()
    finally:
        if spark is not None:
            spark.stop()
        server.stop()


def run_spark(env, name: str, statements: list, conf=CBO) -> list[dict]:
    """The statements in a new Spark session (its own process): one result per statement."""
    work = env["work"] / name
    work.mkdir()
    (work / "statements.json").write_text(json.dumps(statements))
    cmd = [sys.executable, str(RUNNER), "--uri", env["server"].uri, "--warehouse",
           str(work / "warehouse"), "--statements", str(work / "statements.json"),
           "--output", str(work / "out.jsonl")]
    for item in conf:
        cmd += ["--conf", item]
    proc = spark_runs.run(cmd, cwd=work, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT),
                                   PYSPARK_PYTHON=sys.executable))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line)["result"] for line in
               (work / "out.jsonl").read_text().splitlines()]
    assert len(results) == len(statements)
    return results


def described(result: dict) -> dict:
    assert "rows" in result, result
    return {name: value for name, value in result["rows"]}


def stored(env, key: str, cls=ttypes.Table):
    raw = env["store"].get("main", key)
    return None if raw is None else codec.decode(cls, raw)


def set_row(env, table: str, column: str, partition=None) -> dict:
    from stats import serving

    with env["store"].read("main") as view:
        from kvmodel.catalog import CatalogReader

        reader = CatalogReader(view, ttypes)
        pointer = serving.read_pointer(reader, "default", table, partition)
        if pointer is None:
            pointer = serving.read_pointer(reader, "default", table, layout.TABLE_LEVEL)
    return serving.read_rows(pointer["set"], [column])[column]


def test_a_new_spark_session_plans_with_the_computed_statistics(env):
    explain, x, user, name, equal = run_spark(env, "read", [
        "EXPLAIN COST SELECT * FROM t WHERE x < 10",
        "DESCRIBE EXTENDED t x",
        "DESCRIBE EXTENDED t userId",
        "DESCRIBE EXTENDED t name",
        "EXPLAIN COST SELECT * FROM t WHERE userId = 5",
    ])
    plan = explain["rows"][0][0]
    relation = next(line for line in plan.splitlines() if "Relation " in line)
    assert f"rowCount={ROWS / 1e4:.2f}E+4" in relation, plan
    # the filter's estimate follows the histogram: x is spread evenly over [0, 100)
    top = plan.splitlines()[1]
    rows = float(re.search(r"rowCount=([0-9.E+]+)", top).group(1))
    assert 0.05 * ROWS < rows < 0.15 * ROWS, top

    row = set_row(env, "t", "x")
    x = described(x)
    assert x["distinct_count"] == str(row["distinct_count"])
    assert x["num_nulls"] == "0" and x["avg_col_len"] == "8"
    assert float(x["min"]) == row["min_value"] and float(x["max"]) == row["max_value"]
    # Spark decoded our histogram's bytes: 254 equi-height bins over [min, max]
    assert x["histogram"] == f"height: {ROWS / 254}, num_of_bins: 254"
    assert x["bin_0"].startswith(f"lower_bound: {float(x['min'])}, ")
    assert f"upper_bound: {float(x['max'])}, " in x["bin_253"]

    user = described(user)  # a camel-case column of a data source table
    assert (user["min"], user["max"], user["distinct_count"]) == ("0", "976", "977")
    assert user["histogram"].endswith("num_of_bins: 254")
    name = described(name)
    assert (name["min"], name["max"]) == ("NULL", "NULL")  # none for strings, as Spark
    assert (name["distinct_count"], name["avg_col_len"], name["max_col_len"]) == ("50", "3", "3")

    plan = equal["rows"][0][0]  # an equality: a bin's rows over its distinct values (~20.5)
    rows = float(re.search(r"rowCount=([0-9.E+]+)", plan.splitlines()[1]).group(1))
    assert ROWS / 977 / 2 < rows < ROWS / 977 * 2, plan


def test_served_statistics_are_not_stored_and_an_alter_does_not_freeze_them(env):
    with connect(env["server"]) as client:
        answered = client.get_table("default", "t")
        parts = client.get_partitions("default", "t", -1)
    assert answered.parameters[STATS + "numRows"] == str(ROWS)
    assert answered.parameters[STATS + "colStats.userId.version"] == "2"
    assert {p.parameters[STATS + "numRows"] for p in parts} == {str(ROWS // 2)}
    assert all(p.parameters["numRows"] == str(ROWS // 2) for p in parts)

    run_spark(env, "alter", ["ALTER TABLE t SET TBLPROPERTIES ('team'='ads')"], conf=[])
    table = stored(env, "db/default/table/t")
    assert table.parameters["team"] == "ads"  # Spark wrote back the table it read...
    assert not [k for k in table.parameters if k.startswith(STATS) or k == "numRows"]
    for p in parts:  # ...and partitions are stored as they were written
        stored_part = stored(env, f"db/default/table/t/part/p={p.values[0]}", ttypes.Partition)
        assert not [k for k in stored_part.parameters if k.startswith(STATS)]
    with connect(env["server"]) as client:  # still served
        assert client.get_table("default", "t").parameters[STATS + "numRows"] == str(ROWS)


def test_spark_analyze_statistics_win_column_by_column(env):
    analyzed, a, s = run_spark(env, "analyze", [
        "ANALYZE TABLE own COMPUTE STATISTICS FOR COLUMNS a",
        "DESCRIBE EXTENDED own a",
        "DESCRIBE EXTENDED own s",
    ])
    assert "rows" in analyzed, analyzed
    own = stored(env, "db/default/table/own").parameters
    # Spark's histogram of a differs from ours: its statistics of a are stored, whole
    assert own[STATS + "colStats.a.version"] == "2"
    assert own[STATS + "colStats.a.histogram"]
    with connect(env["server"]) as client:
        answered = client.get_table("default", "own").parameters
    for key, value in own.items():  # answered as stored
        assert answered[key] == value
    assert described(a)["distinct_count"] == own[STATS + "colStats.a.distinctCount"]
    # s has no statistics of Spark's: the computed set's
    assert STATS + "colStats.s.version" not in own
    assert answered[STATS + "colStats.s.distinctCount"] == "4"
    assert described(s)["distinct_count"] == "4"

    # a client's own value wins even where the set has one (here: a made-up distinct count)
    with connect(env["server"]) as client:
        table = stored(env, "db/default/table/own")
        table.parameters[STATS + "colStats.a.distinctCount"] = "7"
        client.alter_table("default", "own", table)
        assert client.get_table("default", "own").parameters[
            STATS + "colStats.a.distinctCount"] == "7"


def test_a_retyped_column_is_no_longer_served(env):
    with connect(env["server"]) as client:
        before = client.get_table("default", "retyped")
        assert before.parameters[STATS + "colStats.b.version"] == "2"
        table = stored(env, "db/default/table/retyped")
        table.sd.cols = [c if c.name != "b" else ttypes.FieldSchema("b", "string", c.comment)
                         for c in table.sd.cols]
        client.alter_table("default", "retyped", table)
        after = client.get_table("default", "retyped").parameters
    assert after[STATS + "colStats.a.version"] == "2"
    assert not [k for k in after if k.startswith(STATS + "colStats.b.")]
    assert after[STATS + "numRows"] == "100"


def test_serve_no_stats_properties_turns_it_off(env):
    other = start_proxy(env["work"] / "off", "--no-stats-properties", store=env["store_path"])
    try:
        with connect(other) as client:
            table = client.get_table("default", "t")
            parts = client.get_partitions("default", "t", -1)
            # the statistics calls still serve the sets
            stats = client.get_table_statistics_req(ttypes.TableStatsRequest(
                dbName="default", tblName="t", colNames=["x"]))
    finally:
        other.stop()
    assert not [k for k in table.parameters if k.startswith(STATS) or k == "numRows"]
    assert not [k for p in parts for k in p.parameters if k.startswith(STATS)]
    assert stats.tableStats[0].colName == "x"
