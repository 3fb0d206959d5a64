"""Resilience at test size (the figures at full size, from the programs of this package, are
in docs/resilience.md): kill -9 during mixed writes, concurrent add_partitions on one table
(HIVE-24428), concurrent drops and adds under locks, thousands of connect/disconnect cycles,
a fuzzing run, and a short soak."""
from __future__ import annotations

import threading
import time

import psutil
import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from tests.resilience import fuzz, killrun, soak  # noqa: E402
from tests.resilience.workload import DB, partitions, table  # noqa: E402
from tests.support.client import connect, open_protocol  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402
from tests.support.wait import DEADLINE, wait_until  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture
def server(tmp_path):
    proc = start_proxy(tmp_path)
    with connect(proc) as c:
        c.create_database(T.Database(DB, "", None, {}))
        c.create_table(table("base"))
    yield proc
    proc.stop()


def test_kill_nine_during_mixed_writes_loses_nothing(tmp_path):
    for r in range(3):
        res = killrun.one_round(tmp_path / f"round{r}", 400, 100 + r)
        assert res.get("reopened"), res
        assert res["unexpected"] is None, res  # the writer stopped by the kill, not before
        assert res["lost"] == [] and res["partial"] == [], res
        assert res["acked"] >= 1


def test_kill_nine_during_heavy_writes_on_lakefs_loses_nothing(tmp_path):
    """The same over a real lakeFS, with writes of 1,000 keys (docs/resilience.md)."""
    for r in range(2):
        res = killrun.one_round(tmp_path / f"lake{r}", 150, 200 + r, lakefs=True)
        assert res.get("reopened"), res
        assert res["unexpected"] is None, res
        assert res["lost"] == [] and res["partial"] == [], res
        assert res["acked"] >= 1


def test_kill_nine_during_eight_writers_on_lakefs_loses_nothing(tmp_path):
    """Eight writers at once on one branch of a real lakeFS, so that their writes go in
    groups (kvmodel/store/lakefs/groups.py), the server killed among them: every write
    acknowledged to any writer is there, whole; each writer's write in flight took effect
    whole or not at all."""
    for r in range(2):
        res = killrun.one_round(tmp_path / f"group{r}", 240, 300 + r, lakefs=True, writers=8)
        assert res.get("reopened"), res
        assert res["unexpected"] is None, res
        assert res["lost"] == [] and res["partial"] == [], res
        assert res["acked"] >= 1


def test_concurrent_add_partitions_lose_none(server):
    """HIVE-24428: partitions added to one table by 8 clients at once are all there."""
    errors = []

    def add(n):
        try:
            with connect(server) as c:
                for b in range(25):
                    c.add_partitions(partitions("base", [f"c{n}_{b}_{k}" for k in range(8)]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with connect(server) as c:
        assert len(c.get_partition_names(DB, "base", -1)) == 8 * 25 * 8


def test_concurrent_drops_and_adds_leave_no_lock_behind(server):
    """Writers lock the table, add partitions and unlock while another drops and recreates
    the table under an exclusive lock; clients vanishing while holding a lock are included.
    Afterwards no lock is left.

    HMS 2.3 lets a SHARED_READ pass a waiting EXCLUSIVE (LockInfoComparator sorts by type
    first), so readers that never pause starve the dropper, as they would on the stock HMS;
    the adders hold back while the dropper asks, which keeps this a test of leftovers."""
    def lock(c, kind):
        req = T.LockRequest([T.LockComponent(kind, T.LockLevel.TABLE, DB, "base")],
                            user="u", hostname="h")
        resp = [c.lock(req)]

        def decided():
            if resp[0].state == T.LockState.WAITING:
                resp[0] = c.check_lock(T.CheckLockRequest(resp[0].lockid))
            return resp[0].state != T.LockState.WAITING
        wait_until(decided, interval=0.01, what=f"a {kind} lock granted")
        assert resp[0].state == T.LockState.ACQUIRED, resp[0]
        return resp[0].lockid

    stop = threading.Event()
    dropping = threading.Event()
    added = [0] * 4  # partitions each adder added
    errors = []

    def adder(n):
        try:
            with connect(server) as c:
                while not stop.is_set():
                    while dropping.is_set() and not stop.is_set():
                        time.sleep(0.005)
                    # under its lock the table is there: the dropper drops and recreates it
                    # under an exclusive one
                    lid = lock(c, T.LockType.SHARED_READ)
                    try:
                        c.add_partitions(partitions("base", [f"a{n}_{added[n]}"]))
                    finally:
                        c.unlock(T.UnlockRequest(lid))
                    added[n] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"adder {n}: {exc!r}")

    def every_adder_past(counts):
        """Each adder added a partition since it had added ``counts``."""
        def check():
            assert not errors, errors
            return all(now > then for now, then in zip(added, counts))
        wait_until(check, what=f"every adder adding past {counts} partitions")

    def dropper():
        with connect(server) as c:
            for _ in range(10):
                dropping.set()
                try:
                    lid = lock(c, T.LockType.EXCLUSIVE)
                finally:
                    dropping.clear()
                try:
                    c.drop_table(DB, "base", True)
                    c.create_table(table("base"))
                finally:
                    c.unlock(T.UnlockRequest(lid))
                time.sleep(0.02)

    def vanisher():  # takes a lock inside a transaction and disconnects without unlocking
        for _ in range(5):
            with connect(server) as c:
                txn = c.open_txns(T.OpenTxnRequest(1, "u", "h")).txn_ids[0]
                req = T.LockRequest([T.LockComponent(T.LockType.SHARED_READ, T.LockLevel.TABLE,
                                                     DB, "base")], txnid=txn, user="u",
                                    hostname="h")
                c.lock(req)
                c.abort_txn(T.AbortTxnRequest(txn))  # a client's last act before dying

    workers = [threading.Thread(target=adder, args=(n,)) for n in range(4)]
    for t in workers:
        t.start()
    try:
        every_adder_past([0] * 4)  # all adding when the drops begin
        dropper()
        vanisher()
        every_adder_past(list(added))  # and still adding after them
    finally:
        stop.set()
        for t in workers:
            t.join(DEADLINE)
    assert not any(t.is_alive() for t in workers), "an adder is stuck"
    assert errors == []
    with connect(server) as c:
        assert c.show_locks(T.ShowLocksRequest()).locks == []


def test_connect_disconnect_cycles_return_to_baseline(server):
    from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore

    proc = psutil.Process(server.popen.pid)

    def connections() -> list:  # accepted by the server and still open there
        return [k for k in proc.net_connections("tcp")
                if k.laddr.port == server.port and k.status != psutil.CONN_LISTEN]

    # the baseline after one call served: what a first call starts for good (the store's
    # pooled connection, background helpers) is no leak of the cycles below; the connections
    # are closed by the server (their threads are no part of it)
    with open_protocol(server.host, server.port, timeout=10) as p:
        ThriftHiveMetastore.Client(p).get_all_databases()
    wait_until(lambda: not connections(), what="the server's connections closed")
    threads, fds = proc.num_threads(), proc.num_fds()
    for i in range(10_000):
        with open_protocol(server.host, server.port, timeout=10) as p:
            if i % 10 == 0:  # a call now and then; most cycles only connect
                from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
                ThriftHiveMetastore.Client(p).get_all_databases()
    wait_until(lambda: proc.num_threads() <= threads,
               what=f"the server back at its {threads} threads")
    from kvmodel.store.local import MAX_IDLE_CONNECTIONS
    assert proc.num_fds() <= fds + 3 * MAX_IDLE_CONNECTIONS


def test_fuzzing_leaves_the_server_alive_with_bounded_memory(tmp_path):
    res = fuzz.run(5000, threads=4, sample=2500, workdir=tmp_path, out=lambda *_: None)
    assert res["errors"] == [] and res["messages"] == 5000, res  # every message was sent
    assert res["alive"] and res["answered"], res
    assert res["rss_end_mib"] - res["rss_start_mib"] < 64, res


def test_a_short_soak_has_flat_memory():
    """A minute of traffic with a small listing cache (so that it is full after the
    warm-up): the memory after warm-up stays within a few MiB."""
    res = soak.run(60, clients=3, every=5, out=lambda *_: None,
                   server_args=("--cache-size", "8m"))
    assert res["error_count"] == 0, res["errors"]
    assert all(res["loops_per_client"]), res["loops_per_client"]  # every client had traffic
    assert res["rss_end_mib"] - res["rss_warm_mib"] < 24, res["samples"]
