"""Partition calls with environment contexts, partition values, dynamic partitions of a
transaction, notifications, client-fired events and partition marking."""

from __future__ import annotations

from tests.hms.conformance.builders import cols, database, partition, table, view
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

DB = "cfev_db"


def values(resp):
    return [r.row for r in resp.partitionValues]


def part_summary(p):
    return (p.dbName, p.tableName, p.values, p.sd.location if p.sd else None,
            sorted((p.parameters or {}).keys()))


@scenario
def partitions_with_environment_context(c, rec):
    env = T.EnvironmentContext({"k": "v"})
    rec.call("create_database", database(DB))
    t = table(DB, "pt", partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    rec.call("append_partition_with_environment_context", DB, "pt", ["2024-01-01", "1"], env,
             transform=part_summary)
    rec.call("append_partition_with_environment_context", DB.upper(), "PT", ["2024-01-01", "2"], None,
             transform=part_summary, label="append_partition_with_environment_context no context")
    rec.call("append_partition_with_environment_context", DB, "pt", ["2024-01-01", "1"], env,
             msg=True, label="append_partition_with_environment_context again")
    rec.call("append_partition_with_environment_context", DB, "pt", ["2024-01-01"], env,
             msg=True, label="append_partition_with_environment_context too few values")
    rec.call("append_partition_with_environment_context", DB, "missing", ["a", "1"], env,
             msg=True, label="append_partition_with_environment_context missing table")
    rec.call("append_partition_with_environment_context", "cfev_nodb", "pt", ["a", "1"], env,
             msg=True, label="append_partition_with_environment_context missing db")
    rec.call("append_partition_by_name_with_environment_context", DB, "pt",
             "ds=2024-01-02/hr=3", env, transform=part_summary)
    rec.call("append_partition_by_name_with_environment_context", DB, "pt",
             "ds=a%2Fb/hr=4", T.EnvironmentContext({}), transform=part_summary,
             label="append_partition_by_name_with_environment_context escaped")
    rec.call("append_partition_by_name_with_environment_context", DB, " Pt",
             "ds=2024-01-03/hr=5", env, transform=part_summary,
             label="append_partition_by_name_with_environment_context other case")
    rec.call("append_partition_by_name_with_environment_context", DB, "pt",
             "ds=2024-01-02/hr=3", env, msg=True,
             label="append_partition_by_name_with_environment_context again")
    rec.call("append_partition_by_name_with_environment_context", DB, "pt", "ds=x", env,
             msg=True, label="append_partition_by_name_with_environment_context incomplete")
    rec.call("append_partition_by_name_with_environment_context", DB, "missing", "ds=x/hr=1",
             env, msg=True, label="append_partition_by_name_with_environment_context missing table")
    rec.call("get_partition_names", DB, "pt", -1)
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "ds=2024-01-02/hr=3",
             True, env)
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "ds=2024-01-02/hr=3",
             True, env, msg=True, label="drop_partition_by_name_with_environment_context again")
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "ds=a%2Fb/hr=4",
             False, None, label="drop_partition_by_name_with_environment_context escaped")
    rec.call("drop_partition_by_name_with_environment_context", DB, "pt", "hr=1", True, env,
             msg=True, label="drop_partition_by_name_with_environment_context incomplete")
    rec.call("drop_partition_by_name_with_environment_context", DB, "missing", "ds=a/hr=1",
             True, env, msg=True,
             label="drop_partition_by_name_with_environment_context missing table")
    rec.call("get_partition_names", DB, "pt", -1, label="get_partition_names after drops")
    rec.call("drop_database", DB, True, True)


@scenario
def partition_values(c, rec):
    db = "cfpv_db"
    FS, R = T.FieldSchema, T.PartitionValuesRequest
    rec.call("create_database", database(db))
    t = table(db, "p3", partition_keys=cols("ds string", "mid string", "hr int"))
    rec.call("create_table", t)
    # added in name order: without DISTINCT, HMS answers in storage order
    for v in [["a", "m", "1"], ["a", "m", "2"], ["a", "q=r", "1"], ["b", "x/y", "2"],
              ["c", "", "3"]]:
        rec.call("add_partition", partition(t, v), transform=lambda p: p.values)
    rec.call("create_table", table(db, "flat"))
    rec.call("create_table", table(db, "one", partition_keys=cols("ds string")))
    for v in ["b", "a", "b2"]:
        rec.call("add_partition", partition(T.Table(**vars(table(db, "one", partition_keys=cols(
            "ds string")))), [v]), transform=lambda p: p.values)
    cases = [
        ("ds", R(db, "p3", [FS("ds", "string")])),
        ("mid (escaped names)", R(db, "p3", [FS("mid", "string")])),
        ("hr", R(db, "p3", [FS("hr", "int")])),
        ("hr, ds", R(db, "p3", [FS("hr", "int"), FS("ds", "string")])),
        ("ds, ds", R(db, "p3", [FS("ds", "string"), FS("ds", "string")])),
        ("mid, hr", R(db, "p3", [FS("mid", "string"), FS("hr", "int")])),
        ("upper-case key", R(db, "p3", [FS("DS", "string")])),
        ("regex key d.", R(db, "p3", [FS("d.", "string")])),
        ("regex key m.*", R(db, "p3", [FS("m.*", "string")])),
        ("last key pattern past the end", R(db, "p3", [FS("h.{0,9999}", "string")])),
        ("single key pattern past the end", R(db, "one", [FS("d.{0,99}", "string")])),
        ("key with a quote", R(db, "p3", [FS("z'z", "string")])),
        ("unknown last key", R(db, "p3", [FS("ds", "string"), FS("zz", "string")])),
        ("not distinct", R(db, "p3", [FS("mid", "string")], applyDistinct=False)),
        ("not distinct max 2", R(db, "p3", [FS("mid", "string")], applyDistinct=False, maxParts=2)),
        ("distinct max 2", R(db, "p3", [FS("ds", "string")], maxParts=2)),
        ("max 0", R(db, "p3", [FS("ds", "string")], maxParts=0)),
        ("descending ignored", R(db, "p3", [FS("ds", "string")], ascending=False)),
        ("order ignored", R(db, "p3", [FS("ds", "string"), FS("hr", "int")],
                            partitionOrder=[FS("hr", "int")], ascending=False)),
        ("single key table", R(db, "one", [FS("ds", "string")])),
        ("single key table other name", R(db, "one", [FS("x", "string")])),
        ("filter", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'")),
        ("filter descending", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'",
                                ascending=False)),
        ("filter max 2", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'", maxParts=2)),
        ("filter max 2 descending", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'",
                                      maxParts=2, ascending=False)),
        ("filter max 0", R(db, "p3", [FS("ds", "string")], filter="ds >= 'a'", maxParts=0)),
        ("filter on a name", R(db, "p3", [FS("ds", "string")], filter="mid = 'x/y'")),
        ("filter int", R(db, "p3", [FS("ds", "string")], filter="hr > 1")),
        ("filter int max 1", R(db, "p3", [FS("ds", "string")], filter="hr > 1", maxParts=1)),
        ("filter int max 1 descending", R(db, "p3", [FS("ds", "string")], filter="hr > 1",
                                          maxParts=1, ascending=False)),
        ("filter int max 0", R(db, "p3", [FS("ds", "string")], filter="hr > 1", maxParts=0)),
        ("filter int max 65536 (a Java short 0)", R(db, "p3", [FS("ds", "string")],
                                                    filter="hr > 1", maxParts=65536)),
        ("filter int max 65537", R(db, "p3", [FS("ds", "string")], filter="hr > 1",
                                   maxParts=65537)),
        ("filter string max 65537", R(db, "p3", [FS("ds", "string")], filter="ds > 'a'",
                                      maxParts=65537)),
        ("empty filter", R(db, "p3", [FS("ds", "string")], filter="")),
        ("filter missing table", R(db, "nope", [FS("ds", "string")], filter="ds = 'a'")),
        ("bad filter missing db", R("cfpv_nodb", "p3", [FS("ds", "string")], filter="bad =")),
        ("upper-case names", R(db.upper(), "P3", [FS("ds", "string")])),
    ]
    for label, req in cases:
        rec.call("get_partition_values", req, transform=values, label=f"get_partition_values {label}")
    errors = [
        ("unknown key", R(db, "p3", [FS("nope", "string")]), True),
        ("first key pattern past the value", R(db, "p3", [FS("d.{0,99}", "string")]), True),
        ("two keys, the second failing", R(db, "p3", [FS("hr", "int"), FS("zzzzzz", "s")]), True),
        ("failing key not distinct", R(db, "p3", [FS("zzzzzz", "s")], applyDistinct=False,
                                       maxParts=3), True),
        ("failing key with a quote", R(db, "p3", [FS("z'zzzz", "s")]), True),
        ("filter unknown key", R(db, "p3", [FS("ds", "string")], filter="nope = 1"), True),
        ("filter syntax", R(db, "p3", [FS("ds", "string")], filter="ds = "), True),
        ("no keys", R(db, "p3", []), True),
        ("no keys with filter", R(db, "p3", [], filter="ds = 'a'"), True),
        ("unpartitioned", R(db, "flat", [FS("ds", "string")]), True),
        ("unpartitioned filter", R(db, "flat", [FS("ds", "string")], filter="ds = 'a'"), True),
        ("missing table", R(db, "nope", [FS("ds", "string")]), True),
        ("missing db", R("cfpv_nodb", "p3", [FS("ds", "string")]), True),
        ("bad regex key", R(db, "p3", [FS("(", "string")]), 73),
    ]
    for label, req, msg in errors:
        rec.call("get_partition_values", req, transform=values, msg=msg,
                 label=f"get_partition_values {label}")
    rec.call("get_partition_values", None, msg=True, label="get_partition_values null request")
    rec.call("get_partition_values", R(db, "p3", [FS(None, None)]), msg=True,
             label="get_partition_values key without a name")
    rec.call("get_partition_values", R(db, "nope", [FS(None, None)]), msg=True,
             label="get_partition_values key without a name, missing table")
    rec.call("get_partition_values", R(db, "p3", [FS(None, None)], filter="ds = 'a'"),
             transform=values, label="get_partition_values key without a name, with a filter")
    rec.call("get_partition_values", R(db, "p3", [FS("ds", "string")], filter=None,
                                       maxParts=None, applyDistinct=None, ascending=None),
             transform=values, label="get_partition_values defaults unset")
    rec.call("drop_database", db, True, True)


# --- transactions: get_open_txns_info, add_dynamic_partitions --------------------------------
def txn_infos(ids):
    """The entries of these transactions (others' stay listed after their scenarios), ids
    relative to the first of them: ids depend on what ran before on the same server."""
    def transform(r):
        mine = [i for i in r.open_txns if i.id in ids]
        return (r.txn_high_water_mark >= max(ids),
                [(i.id - ids[0], i.state, i.user, i.hostname, i.agentInfo, i.heartbeatCount,
                  i.metaInfo, bool(i.startedTime), bool(i.lastHeartbeatTime)) for i in mine])
    return transform


@scenario
def dynamic_partitions_of_transactions(c, rec):
    ADP, O = T.AddDynamicPartitions, T.DataOperationType
    opened = c.open_txns(T.OpenTxnRequest(8, "alice", "host"))
    ids = opened.txn_ids
    rec.note("open_txns", len(ids))
    a, b, d, e, f, g, h, k = ids
    rec.call("get_open_txns_info", transform=txn_infos(ids))
    for op in [O.SELECT, O.INSERT, O.UPDATE, O.DELETE, 99]:
        rec.call("add_dynamic_partitions", ADP(a, "cfdp_db", "pt", ["ds=a/hr=1", "ds=b/hr=2"], op),
                 msg=True, label=f"add_dynamic_partitions operation {op}")
    for op in [O.UNSET, O.NO_TXN]:
        rec.call("add_dynamic_partitions", ADP(a, "cfdp_db", "pt", ["ds=a/hr=1"], op),
                 msg=True, label=f"add_dynamic_partitions operation {op}")
    rec.call("add_dynamic_partitions", ADP(a, "cfdp_db", "pt", ["ds=a/hr=1"]), msg=True,
             label="add_dynamic_partitions default operation")
    rec.call("add_dynamic_partitions", ADP(a, "cfdp_nodb", "nope", ["x"], O.INSERT),
             label="add_dynamic_partitions missing table")
    rec.call("add_dynamic_partitions", ADP(a, "cfdp_db", "pt", [], O.INSERT),
             label="add_dynamic_partitions no partitions")
    rec.call("add_dynamic_partitions", ADP(a, "cfdp_db", "pt", ["ds=it''s"], O.INSERT),
             label="add_dynamic_partitions doubled quote")
    for label, req in [("lone quote", ADP(b, "cfdp_db", "pt", ["ds=it's"], O.INSERT)),
                       ("partition of 767", ADP(b, "cfdp_db", "pt", ["x" * 767], O.INSERT)),
                       ("partition of 768", ADP(b, "cfdp_db", "pt", ["x" * 768], O.INSERT)),
                       ("partition of 768 blanks", ADP(b, "cfdp_db", "pt", ["x" * 760 + " " * 8],
                                                       O.INSERT)),
                       ("database of 128", ADP(b, "d" * 128, "pt", ["x"], O.INSERT)),
                       ("database of 129", ADP(b, "d" * 129, "pt", ["x"], O.INSERT)),
                       ("table of 129", ADP(b, "cfdp_db", "t" * 129, ["x"], O.INSERT))]:
        rec.call("add_dynamic_partitions", req, msg=True, label=f"add_dynamic_partitions {label}")
    rec.call("add_dynamic_partitions", ADP(999999999, "cfdp_db", "pt", ["x"], O.INSERT),
             msg=True, label="add_dynamic_partitions unknown txn")
    rec.call("add_dynamic_partitions", ADP(0, "cfdp_db", "pt", ["x"], O.INSERT),
             msg=True, label="add_dynamic_partitions txn 0")
    rec.call("abort_txn", T.AbortTxnRequest(d))
    rec.call("add_dynamic_partitions", ADP(d, "cfdp_db", "pt", ["x"], O.INSERT),
             transform=None, msg=len("Transaction txnid:"), label="add_dynamic_partitions aborted")
    # a transaction with components: committed, it is "already committed" from then on
    rec.call("commit_txn", T.CommitTxnRequest(a))
    rel = lambda text: text.replace(str(a), "<a>")  # noqa: E731
    for label, method, arg in [
            ("add_dynamic_partitions", "add_dynamic_partitions",
             ADP(a, "cfdp_db", "pt", ["x"], O.INSERT)),
            ("commit_txn", "commit_txn", T.CommitTxnRequest(a)),
            ("abort_txn", "abort_txn", T.AbortTxnRequest(a)),
            ("heartbeat", "heartbeat", T.HeartbeatRequest(None, a)),
            ("lock", "lock", T.LockRequest([T.LockComponent(
                T.LockType.SHARED_READ, T.LockLevel.TABLE, "cfdp_db", "pt")], a, "u", "h"))]:
        try:
            getattr(c, method)(arg)
            rec.note(f"{label} of a committed txn with components", "ok")
        except T.NoSuchTxnException as exc:
            rec.note(f"{label} of a committed txn with components",
                     ("NoSuchTxnException", rel(exc.message)))
    rec.call("heartbeat_txn_range", T.HeartbeatTxnRangeRequest(a, a),
             transform=lambda r: (sorted(x - a for x in r.aborted), sorted(x - a for x in r.nosuch)),
             label="heartbeat_txn_range of a committed txn with components")
    # without components: forgotten once committed
    rec.call("commit_txn", T.CommitTxnRequest(e))
    try:
        c.add_dynamic_partitions(ADP(e, "cfdp_db", "pt", ["x"], O.INSERT))
        rec.note("add_dynamic_partitions of a committed txn without components", "ok")
    except T.NoSuchTxnException as exc:
        rec.note("add_dynamic_partitions of a committed txn without components",
                 ("NoSuchTxnException", exc.message.replace(str(e), "<e>")))
    # aborted with components stays listed (HMS's cleaner is not running); without, too until
    # the timeout
    rec.call("add_dynamic_partitions", ADP(f, "cfdp_db", "pt", ["ds=a/hr=1"], O.SELECT))
    rec.call("abort_txns", T.AbortTxnsRequest([f, g]))
    rec.call("get_open_txns", transform=lambda r: sorted(x - a for x in set(r.open_txns) & set(ids)))
    rec.call("get_open_txns_info", transform=txn_infos(ids), label="get_open_txns_info at the end")
    rec.call("abort_txns", T.AbortTxnsRequest([b, h, k]))


@scenario
def dynamic_partitions_null_request(c, rec):
    rec.call("add_dynamic_partitions", None, msg=True)


@scenario
def dynamic_partitions_without_partition_names(c, rec):
    """A required field missing: HMS fails reading the request (and ends the connection)."""
    rec.call("add_dynamic_partitions",
             T.AddDynamicPartitions(1, "cfdp_db", "pt", None, T.DataOperationType.INSERT), msg=True)


@scenario
def dynamic_partitions_without_dbname(c, rec):
    rec.call("add_dynamic_partitions", T.AddDynamicPartitions(5, None, None, ["a", "b"]), msg=True)


@scenario
def dynamic_partitions_without_txnid(c, rec):
    rec.call("add_dynamic_partitions", T.AddDynamicPartitions(None, "db", "t", ["a"], 99), msg=True)


# --- notifications: neither server has events here ---------------------------------------------
@scenario
def notification_calls(c, rec):
    """The oracle runs without DbNotificationListener and the proxy under test makes no
    commits, so both answer no events: the call shapes and edge cases are compared."""
    N = T.NotificationEventRequest
    rec.call("get_current_notificationEventId")
    for req in [N(0), N(0, 10), N(0, 0), N(0, -1), N(-5, 1), N(2 ** 62, 5), N(5, None)]:
        rec.call("get_next_notification", req)
    rec.call("get_next_notification", None, msg=True, label="get_next_notification null request")
    rec.call("get_current_notificationEventId", label="get_current_notificationEventId again")


@scenario
def notification_request_without_last_event(c, rec):
    rec.call("get_next_notification", T.NotificationEventRequest(None, 5), msg=True)


# --- fire_listener_event ------------------------------------------------------------------------
@scenario
def fire_listener_events(c, rec):
    db = "cffe_db"
    F, D, I = T.FireEventRequest, T.FireEventRequestData, T.InsertEventRequestData
    rec.call("create_database", database(db))
    t = table(db, "pt", partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["a"]), transform=lambda p: p.values)
    rec.call("create_table", table(db, "flat"))
    rec.call("create_table", view(db, "v", "select 1"))
    ins = D(insertData=I(["file:/tmp/cffe/1"]))
    cases = [
        ("table", F(True, ins, db, "flat")),
        ("not successful", F(False, ins, db, "flat")),
        ("other case", F(True, ins, db.upper(), " FLAT ")),
        ("view", F(True, ins, db, "v")),
        ("partition", F(True, ins, db, "pt", ["a"])),
        ("missing partition", F(True, ins, db, "pt", ["b"])),
        ("partition of an unpartitioned table", F(True, ins, db, "flat", ["a"])),
        ("more values than keys", F(True, ins, db, "pt", ["a", "b"])),
        ("no values", F(True, ins, db, "pt", [])),
        ("partitioned table without values", F(True, ins, db, "pt")),
        ("missing table", F(True, ins, db, "nope")),
        ("missing db", F(True, ins, "cffe_nodb", "nope")),
        ("null db", F(True, ins, None, "flat")),
        ("null table", F(True, ins, db, None)),
        ("no files", F(True, D(insertData=I([])), db, "flat")),
        ("checksums", F(True, D(insertData=I(["f"], ["abc"])), db, "flat")),
        ("more checksums than files", F(True, D(insertData=I(["f"], ["abc", "d"])), db, "flat")),
    ]
    for label, req in cases:
        rec.call("fire_listener_event", req, msg=True, label=f"fire_listener_event {label}")
    rec.call("fire_listener_event", None, msg=True, label="fire_listener_event null request")
    rec.call("get_current_notificationEventId", label="no INSERT event on either server")
    rec.call("drop_database", db, True, True)


def _fire_bad(name, req):
    def run(c, rec):
        rec.call("fire_listener_event", req, msg=True)
    run.__name__ = name
    scenario(run)


_F, _D, _I = T.FireEventRequest, T.FireEventRequestData, T.InsertEventRequestData
# each a request HMS fails reading (PROTOCOL_ERROR, then it ends the connection): one a scenario
_fire_bad("fire_listener_event_without_data", _F(True, None, "cffe_db", "flat"))
_fire_bad("fire_listener_event_without_successful",
          _F(None, _D(insertData=_I(["file:/x/1"])), "cffe_db", "flat"))
_fire_bad("fire_listener_event_without_files", _F(True, _D(insertData=_I(None)), "cffe_db", "flat"))
_fire_bad("fire_listener_event_empty_data", _F(True, _D(), "cffe_db", "flat"))
_fire_bad("fire_listener_event_without_files_with_checksums",
          _F(True, _D(insertData=_I(None, ["x"])), None, "flat", ["a"]))
_fire_bad("fire_listener_event_without_data_with_values", _F(False, None, None, "t", ["a", "b"]))


# --- partition marking ----------------------------------------------------------------------------
@scenario
def partition_marking(c, rec):
    db = "cfpm_db"
    LD = T.PartitionEventType.LOAD_DONE
    rec.call("create_database", database(db))
    t = table(db, "pt", partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["a", "1"]), transform=lambda p: p.values)
    rec.call("create_table", table(db, "flat"))
    M, IS = "markPartitionForEvent", "isPartitionMarkedForEvent"
    rec.call(IS, db, "pt", {"ds": "a", "hr": "1"}, LD, label="is marked before")
    rec.call(M, db, "pt", {"ds": "a", "hr": "1"}, LD)
    rec.call(IS, db, "pt", {"hr": "1", "ds": "a"}, LD, label="is marked (keys in another order)")
    rec.call(IS, db.upper(), "PT", {"ds": "a", "hr": "1"}, LD, label="is marked other case")
    rec.call(M, db.upper(), "PT", {"ds": "zz", "hr": "9"}, LD, label="mark other case, no such partition")
    rec.call(IS, db, "pt", {"ds": "zz", "hr": "9"}, LD, label="is marked: lower case of an upper-case mark")
    rec.call(IS, db.upper(), "PT", {"ds": "zz", "hr": "9"}, LD, label="is marked: as marked")
    rec.call(M, f" {db} ", "pt ", {"ds": "b", "hr": "1"}, LD, label="mark with blanks")
    rec.call(IS, db, "pt", {"ds": "b", "hr": "1"}, LD, label="is marked without the blanks")
    rec.call(IS, f" {db}", "pt", {"ds": "b", "hr": "1"}, LD, label="is marked, leading blank")
    rec.call(IS, f" {db}   ", "pt", {"ds": "b", "hr": "1  "}, LD, label="is marked, more trailing blanks")
    rec.call(M, db, "pt", {"ds": "a,1", "hr": ""}, LD, label="mark values with a comma")
    rec.call(IS, db, "pt", {"ds": "a", "hr": "1,"}, LD, label="is marked: same joined values")
    rec.call(M, db, "flat", {}, LD, label="mark an unpartitioned table")
    rec.call(IS, db, "flat", {}, LD, label="is marked: unpartitioned table")
    for label, args in [
            ("too few values", (db, "pt", {"ds": "a"}, LD)),
            ("other key", (db, "pt", {"ds": "a", "HR": "1"}, LD)),
            ("too many values", (db, "pt", {"ds": "a", "hr": "1", "x": "2"}, LD)),
            ("values for an unpartitioned table", (db, "flat", {"ds": "a"}, LD)),
            ("missing table", (db, "nope", {"ds": "a"}, LD)),
            ("missing db", ("cfpm_nodb", "nope", {}, LD)),
            ("null event type", (db, "pt", {"ds": "a", "hr": "1"}, None)),
            ("unknown event type", (db, "pt", {"ds": "a", "hr": "1"}, 99)),
            ("null values", (db, "pt", None, LD)),
            ("null values and event type", (db, "pt", None, None)),
            ("missing table and null values", (db, "nope", None, None)),
            ("null db", (None, "pt", {"ds": "a", "hr": "1"}, LD)),
            ("null table", (db, None, {"ds": "a", "hr": "1"}, LD)),
            ("bad count and null event type", (db, "pt", {"ds": "a"}, None))]:
        rec.call(M, *args, msg=True, label=f"mark {label}")
        rec.call(IS, *args, msg=True, label=f"is marked {label}")
    for label, vals, tbl_name, dbn in [
            ("values of 767", {"ds": "x" * 765, "hr": ""}, "pt", db),
            ("values of 768", {"ds": "x" * 766, "hr": ""}, "pt", db),
            ("values of 768 with blanks", {"ds": "y" * 700, "hr": " " * 67}, "pt", db),
            ("table of 256", {"ds": "e", "hr": "1"}, " " * 254 + "pt", db),
            ("table of 257", {"ds": "e", "hr": "1"}, " " * 255 + "pt", db),
            ("db of 129", {"ds": "e", "hr": "1"}, "pt", db + " " * (129 - len(db)))]:
        rec.call(M, dbn, tbl_name, vals, LD, msg=True, label=f"mark {label}")
        rec.call(IS, dbn, tbl_name, vals, LD, label=f"is marked {label}")
    rec.call("drop_database", db, True, True)


def _values_bad(name, req):
    def run(c, rec):
        rec.call("get_partition_values", req, msg=True)
    run.__name__ = name
    scenario(run)


_FS, _R = T.FieldSchema, T.PartitionValuesRequest
# each a request HMS fails reading (PROTOCOL_ERROR, then it ends the connection): one a scenario
_values_bad("partition_values_without_dbname", _R(None, "p3", [_FS("ds", "string")]))
_values_bad("partition_values_without_tblname",
            _R("cfpv_db", None, [_FS("ds", "string", "c")], filter="x",
               partitionOrder=[_FS("a", "b")]))
_values_bad("partition_values_without_keys", _R("cfpv_db", "p3", None))
# (a request leaving applyDistinct, ascending and maxParts out is decoded with their defaults
# here, so the message would show them; HMS's does not)
