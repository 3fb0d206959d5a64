"""Trino's optimizer sees the statistics of `hms-proxy stats compute`, next to its own ANALYZE.

A real Trino writes the same data twice through our server (tpch.tiny: orders partitioned by
orderpriority, customer unpartitioned): one copy Trino analyzes itself (``ANALYZE``: its column
statistics go into our metastore through the statistics calls), the other gets only
``hms-proxy stats compute``. ``SHOW STATS`` of both, on the whole table and under partition
predicates, must then agree: the same row counts, nulls fractions, data sizes, low and high
values, and distinct counts that differ only by the error of Trino's own estimate (ANALYZE counts
distinct values with a HyperLogLog; stats compute counts them exactly, which the test checks
against Trino's ``count(DISTINCT ...)``).

The ``stats compute`` partitions first lose the row counts Trino records on write, as a table
written by Spark has none: the row count SHOW STATS gives is then the one our server serves from
the statistics set (Hive's ``numRows``, hms_proxy/hms/served_props.py).

Trino caches statistics in a catalog (``hive.metastore-stats-cache-ttl``): each look is made
through a new catalog, as a new Trino would.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.client import connect
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy
from tests.support.trino import add_catalog, real_trino

pytestmark = [pytest.mark.slow, pytest.mark.trino, pytest.mark.timeout(900)]

ORDERS = ("orderkey, custkey, orderstatus, totalprice, orderdate, clerk, shippriority, comment, "
          "orderpriority")
PREDICATES = ("", " WHERE orderpriority = '1-URGENT'",
              " WHERE orderpriority IN ('1-URGENT', '2-HIGH')")
# Trino's approx_distinct: a standard error of 2.3%; 3 of them
NDV_TOLERANCE = 0.07


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    work = tmp_path_factory.mktemp("trino-stats")
    server = start_proxy(work / "server", store=work / "store")
    trino = real_trino()
    # collect-column-statistics-on-write off: Trino's CTAS records row counts but no column
    # statistics, so only ANALYZE or stats compute give them
    writer = add_catalog(server.uri, prefix="w",
                         extra={"hive.collect-column-statistics-on-write": "false"})
    try:
        def sql(text):
            return trino.execute(text, catalog=writer, schema="default")

        for name in ("o_trino", "o_ours"):
            sql(f"CREATE TABLE {name} WITH (format = 'PARQUET', "
                f"partitioned_by = ARRAY['orderpriority']) AS SELECT {ORDERS} "
                "FROM tpch.tiny.orders")
        for name in ("c_trino", "c_ours"):
            sql(f"CREATE TABLE {name} WITH (format = 'ORC') AS SELECT * FROM tpch.tiny.customer")
        sql("ANALYZE o_trino")
        sql("ANALYZE c_trino")
        with connect(server) as client:  # as if written by Spark: no row counts recorded
            parts = client.get_partitions("default", "o_ours", -1)
            for part in parts:
                for key in ("numRows", "rawDataSize", "COLUMN_STATS_ACCURATE"):
                    part.parameters.pop(key, None)
            client.alter_partitions("default", "o_ours", parts)
            assert "numRows" not in client.get_partitions("default", "o_ours", -1)[0].parameters
        before = show_stats(trino, server, "o_ours")
        for table in ("default.o_ours", "default.c_ours"):
            done = subprocess.run(
                [sys.executable, "-m", "hms_proxy.cli", "stats", "compute", table, "--store",
                 str(work / "store"), "--no-progress"],
                cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
        yield {"trino": trino, "server": server, "writer": writer, "before": before}
    finally:
        trino.drop_catalog(writer)
        server.stop()


def show_stats(trino, server, table: str, predicate: str = "") -> dict:
    """SHOW STATS through a new catalog: {column or None (the summary row): row}."""
    catalog = add_catalog(server.uri, prefix="r")
    try:
        rows = trino.execute(f"SHOW STATS FOR (SELECT * FROM {table}{predicate})",
                             catalog=catalog, schema="default")
    finally:
        trino.drop_catalog(catalog)
    return {row[0]: row for row in rows}


def test_before_stats_compute_trino_has_no_row_count_or_column_statistics(setup):
    before = setup["before"]
    assert before[None][4] is None                          # row count unknown
    assert all(row[2] is None for column, row in before.items()
               if column not in (None, "orderpriority"))    # no distinct counts


@pytest.mark.parametrize("predicate", PREDICATES, ids=["all", "one-partition", "two-partitions"])
def test_show_stats_of_a_partitioned_table_agrees_with_trinos_analyze(setup, predicate):
    trino, server = setup["trino"], setup["server"]
    ours = show_stats(trino, server, "o_ours", predicate)
    theirs = show_stats(trino, server, "o_trino", predicate)
    assert ours.keys() == theirs.keys()
    assert ours[None][4] is not None and ours[None][4] > 0
    assert ours[None] == theirs[None]                       # the row count
    compare_columns(ours, theirs)
    if predicate == PREDICATES[1]:                          # one partition: counted exactly
        exact = trino.execute(
            "SELECT count(DISTINCT custkey), count(DISTINCT orderdate), count(DISTINCT clerk) "
            f"FROM o_ours{predicate}", catalog=setup["writer"], schema="default")[0]
        assert [ours[c][2] for c in ("custkey", "orderdate", "clerk")] == list(exact)


def test_show_stats_of_an_unpartitioned_table_agrees_with_trinos_analyze(setup):
    trino, server = setup["trino"], setup["server"]
    ours = show_stats(trino, server, "c_ours")
    theirs = show_stats(trino, server, "c_trino")
    assert ours[None] == theirs[None] and ours[None][4] == 1500.0
    compare_columns(ours, theirs)


def compare_columns(ours: dict, theirs: dict) -> None:
    for column, row in ours.items():
        if column is None:
            continue
        other = theirs[column]
        # data size, nulls fraction, low and high: equal; distinct values: within the estimate
        assert (row[1], row[3], row[5], row[6]) == (other[1], other[3], other[5], other[6]), \
            (row, other)
        assert row[2] is not None, row
        assert abs(row[2] - other[2]) <= NDV_TOLERANCE * other[2], (row, other)

