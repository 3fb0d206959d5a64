"""Functions, configuration, set_ugi, fb303, unknown methods, transactions and locks."""

from __future__ import annotations

from tests.hms.conformance.builders import database, function, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T


@scenario
def functions(c, rec):
    rec.call("create_database", database("cffn_db"))
    rec.call("create_database", database("cffn_db2"))
    rec.call("create_function", function("cffn_db", "f_upper"))
    rec.call("create_function", function("cffn_db", "F_Lower", "com.example.Lower", resources=[]))
    rec.call("create_function", function("cffn_db2", "f_upper", resources=[
        T.ResourceUri(T.ResourceType.FILE, "file:/tmp/a.txt"),
        T.ResourceUri(T.ResourceType.ARCHIVE, "file:/tmp/b.zip")]))
    rec.call("get_function", "cffn_db", "f_upper")
    rec.call("get_function", "cffn_db", "F_UPPER", label="get_function upper case")
    rec.call("get_function", "cffn_db", "f_lower")
    rec.call("get_function", "cffn_db2", "f_upper")
    rec.call("create_function", function("cffn_db", "f_upper"), label="create_function duplicate", msg=True)
    rec.call("create_function", function("cffn_nodb", "f"), label="create_function missing db", msg=True)
    rec.call("create_function", function("cffn_db", "bad name"), label="create_function invalid name", msg=True)
    rec.call("create_function", function("cffn_db", "f_noclass", None), label="create_function no class",
             msg=True)
    rec.call("get_function", "cffn_db", "missing", msg=True)
    rec.call("get_function", "cffn_nodb", "f_upper", msg=True)
    rec.call("get_functions", "cffn_db", "*", unordered=True)
    rec.call("get_functions", "cffn_db", "f_u*", unordered=True)
    rec.call("get_functions", "cffn_db", "F_*|nothing", unordered=True)
    rec.call("get_functions", "cffn_nodb", "*")
    rec.call("get_all_functions", transform=lambda r: sorted(
        (f.dbName, f.functionName, f.className) for f in r.functions if f.dbName.startswith("cffn_")))
    altered = function("cffn_db", "f_upper", "com.example.Upper2")
    rec.call("alter_function", "cffn_db", "f_upper", altered)
    rec.call("get_function", "cffn_db", "f_upper")
    renamed = function("cffn_db", "f_renamed", "com.example.Upper2")
    rec.call("alter_function", "cffn_db", "f_upper", renamed, label="alter_function rename")
    rec.call("get_function", "cffn_db", "f_renamed")
    rec.call("get_function", "cffn_db", "f_upper")
    rec.call("alter_function", "cffn_db", "missing", function("cffn_db", "missing"), msg=True)
    rec.call("drop_function", "cffn_db", "f_lower")
    rec.call("drop_function", "cffn_db", "f_lower", label="drop_function again", msg=True)
    rec.call("drop_function", "cffn_nodb", "f", msg=True)
    rec.call("drop_database", "cffn_db2", True, False, label="drop_database holding a function", msg=True)
    rec.call("drop_database", "cffn_db2", True, True, label="drop_database cascade holding a function")
    rec.call("get_function", "cffn_db2", "f_upper")


@scenario
def config_and_service(c, rec):
    rec.call("get_config_value", "hive.metastore.warehouse.dir", "dflt")
    rec.call("get_config_value", "hive.cf.no.such.key", "the default")
    rec.call("get_config_value", "hive.cf.no.such.key", None)
    rec.call("get_config_value", "not.a.hive.key", "x", msg=True)
    rec.call("get_config_value", "javax.jdo.option.ConnectionPassword", "x", msg=True)
    rec.call("get_config_value", "hive.metastore.try.direct.sql", "x")
    rec.call("get_config_value", "hive.exec.dynamic.partition.mode", "x")
    rec.call("get_config_value", "", "x", msg=True)
    rec.call("set_ugi", "alice", ["g1", "g2"])
    rec.call("set_ugi", "bob", [])
    rec.call("getName")
    rec.call("getVersion")
    rec.call("getStatus")
    rec.call("aliveSince", transform=lambda t: t > 0)
    rec.raw_call("cf_no_such_method")
    rec.call("get_database", "default", transform=lambda d: d.name, label="connection usable after unknown method")
    rec.raw_call("get_database_typo")
    rec.call("get_all_databases", transform=lambda ds: "default" in ds)


def txn_ids_shape(r):
    """Ids depend on what ran before on the same server: keep only their number."""
    return len(r.txn_ids)


@scenario
def transactions_and_locks(c, rec):
    rec.call("create_database", database("cftx_db"))
    rec.call("create_table", table("cftx_db", "t"))
    opened = rec.call("open_txns", T.OpenTxnRequest(2, "alice", "host"), transform=txn_ids_shape)
    if opened is None:
        return
    t1, t2 = opened.txn_ids
    rec.call("get_open_txns", transform=lambda r: sorted(set(r.open_txns) & {t1, t2}) == [t1, t2])
    comp = T.LockComponent(T.LockType.SHARED_READ, T.LockLevel.TABLE, "cftx_db", "t")
    lock = rec.call("lock", T.LockRequest([comp], t1, "alice", "host"), transform=lambda r: r.state)
    excl = T.LockComponent(T.LockType.EXCLUSIVE, T.LockLevel.TABLE, "cftx_db", "t")
    waiting = rec.call("lock", T.LockRequest([excl], t2, "alice", "host"), transform=lambda r: r.state)
    rec.call("show_locks", T.ShowLocksRequest("cftx_db", "t"),
             transform=lambda r: sorted((e.type, e.state, e.tablename) for e in r.locks))
    rec.call("commit_txn", T.CommitTxnRequest(t1))
    if waiting is not None:
        rec.call("check_lock", T.CheckLockRequest(waiting.lockid), transform=lambda r: r.state)
    rec.call("abort_txns", T.AbortTxnsRequest([t2]))
    rec.call("commit_txn", T.CommitTxnRequest(t1), label="commit_txn again")
    rec.call("commit_txn", T.CommitTxnRequest(t2), label="commit_txn aborted")
    rec.call("abort_txn", T.AbortTxnRequest(999999), label="abort_txn unknown")
    rec.call("check_lock", T.CheckLockRequest(999999), label="check_lock unknown")
    free = rec.call("lock", T.LockRequest([comp], None, "bob", "host"), transform=lambda r: r.state)
    if free is not None:
        rec.call("unlock", T.UnlockRequest(free.lockid))
        rec.call("unlock", T.UnlockRequest(free.lockid), label="unlock again")
    if lock is not None:
        rec.call("heartbeat", T.HeartbeatRequest(None, t1), label="heartbeat committed txn")
