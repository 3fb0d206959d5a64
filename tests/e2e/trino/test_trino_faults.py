"""Trino against a metastore that is slow, restarts, or loses a reply: no query hangs past its
timeout, and Trino's retries write nothing twice.

The server is ours, a real process (stopped with SIGSTOP, killed, restarted on its port and
store). A lost reply is the one injected fault: the relay of tests/support/thrift_recorder.py
forwards a call and drops its reply with the connection (named a test double there).
"""
from __future__ import annotations

import os
import signal

import pytest

from hms_proxy.tools.metastores import free_port
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.slow, pytest.mark.trino]


@pytest.fixture(scope="module")
def trino():
    from tests.support.trino import real_trino

    return real_trino()


def query(trino, sql, catalog, **session):
    from trino.exceptions import TrinoQueryError

    with trino.connect(catalog=catalog, session_properties=session or None) as conn:
        cur = conn.cursor()
        try:
            cur.execute(sql)
            return cur.fetchall()
        except TrinoQueryError as exc:
            return ("error", exc.error_name, exc.message)


def test_a_stopped_metastore_fails_queries_within_their_timeout(trino, tmp_path):
    from tests.support.trino import add_catalog

    server = start_proxy(tmp_path / "s")
    # Trino gives up on a metastore call after its read timeout, retried with backoff for up
    # to max-retry-time (defaults 10 s and 30 s; shorter here to keep the test short)
    catalog = add_catalog(server.uri, prefix="slow", timeout="2s",
                          extra={"hive.metastore.thrift.client.max-retry-time": "8s"})
    try:
        assert query(trino, "CREATE SCHEMA s", catalog) == []
        assert query(trino, "CREATE TABLE s.t AS SELECT 1 AS x", catalog) == [[1]]
        os.kill(server.popen.pid, signal.SIGSTOP)
        try:
            # the query's own limit, far above the metastore timeout and retries: a query
            # left hanging on the metastore would fail with EXCEEDED_TIME_LIMIT instead
            got = query(trino, "SELECT count(*) FROM s.t", catalog, query_max_run_time="300s")
        finally:
            os.kill(server.popen.pid, signal.SIGCONT)
        # ended by the metastore client's read timeout, not by the query's limit
        assert got[:2] == ("error", "HIVE_METASTORE_ERROR"), got
        assert "timed out" in got[2], got
        # the server serves again at once, and nothing was left half done
        assert query(trino, "SELECT count(*) FROM s.t", catalog) == [[1]]
    finally:
        trino.drop_catalog(catalog)
        server.stop()


def test_a_restarted_metastore_serves_trino_again(trino, tmp_path):
    from tests.support.trino import add_catalog

    port = free_port()
    store = tmp_path / "store"
    server = start_proxy(tmp_path / "a", store=store, port=port)
    catalog = add_catalog(server.uri, prefix="restart")
    try:
        assert query(trino, "CREATE SCHEMA s", catalog) == []
        assert query(trino, "CREATE TABLE s.t (x int, ds varchar) WITH "
                            "(partitioned_by = ARRAY['ds'])", catalog) == []
        assert query(trino, "INSERT INTO s.t VALUES (1, 'a')", catalog) == [[1]]
        os.killpg(server.popen.pid, signal.SIGKILL)
        server.popen.wait()
        got = query(trino, "SELECT count(*) FROM s.t", catalog, query_max_run_time="20s")
        assert got[0] == "error", got
        server = start_proxy(tmp_path / "b", store=store, port=port,
                             warehouse=tmp_path / "a" / "warehouse")
        assert query(trino, "INSERT INTO s.t VALUES (2, 'b')", catalog) == [[1]]
        assert query(trino, "SELECT ds, count(*) FROM s.t GROUP BY ds ORDER BY ds",
                     catalog) == [["a", 1], ["b", 1]]
    finally:
        trino.drop_catalog(catalog)
        server.stop()


def test_lost_replies_make_trino_retry_without_duplicates(trino, tmp_path):
    from tests.support.thrift_recorder import Recorder
    from tests.support.trino import add_catalog

    server = start_proxy(tmp_path / "s")
    relay = Recorder((server.host, server.port),
                     lose_reply_of={"create_database", "create_table", "add_partitions"})
    catalog = add_catalog(relay.uri, prefix="lossy")
    try:
        assert query(trino, "CREATE SCHEMA s", catalog) == []
        assert query(trino, "CREATE TABLE s.t (x bigint, ds varchar) WITH "
                            "(partitioned_by = ARRAY['ds'])", catalog) == []
        assert query(trino, "INSERT INTO s.t SELECT orderkey, orderpriority "
                            "FROM tpch.tiny.orders", catalog) == [[15000]]
        assert sorted(relay.lost) == ["add_partitions", "create_database", "create_table"]
        # each lost call was sent again, answered AlreadyExists, and Trino saw its own write
        methods = [name for _, _, name, _ in relay.calls]
        for name in ("create_database", "create_table", "add_partitions"):
            assert methods.count(name) >= 2, methods
        assert query(trino, "SELECT count(*), count(DISTINCT x) FROM s.t",
                     catalog) == [[15000, 15000]]
        assert query(trino, 'SELECT count(*) FROM s."t$partitions"', catalog) == [[5]]
        assert query(trino, "SHOW SCHEMAS LIKE 's'", catalog) == [["s"]]
    finally:
        trino.drop_catalog(catalog)
        relay.close()
        server.stop()
