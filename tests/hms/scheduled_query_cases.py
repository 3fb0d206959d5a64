"""Hive 4's scheduled queries (``scheduled_query_maintenance``, ``_poll``, ``_progress``,
``get_scheduled_query``) sent the same to the stock HMS 4.0.1 and to us: created, altered,
dropped, polled and moved along their states, with invalid schedules, duplicates, missing
names, invalid state changes and null arguments. What is compared: each answer or error (class
and message); times relative to the call's (a next execution as "in N seconds" or exactly
when it is fixed), execution ids only as being there. Used by tests/hms/test_stock_hms4.py."""
from __future__ import annotations

import time

from hms_proxy.thrift.gen.hive_metastore import ttypes as T

NS = "sq_cases"
CREATE, ALTER, DROP = (T.ScheduledQueryMaintenanceRequestType.CREATE,
                       T.ScheduledQueryMaintenanceRequestType.ALTER,
                       T.ScheduledQueryMaintenanceRequestType.DROP)
S = T.QueryState


def _answer(call):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        if type(exc).__name__ == "TTransportException":  # how it closed varies: that it did
            return ("error", "TTransportException", "closed")
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))
    return ("ok", _plain(value))


def _plain(value):
    now = int(time.time())
    if isinstance(value, T.ScheduledQuery):
        nxt = value.nextExecution
        when = nxt if nxt is None or nxt > now + 86400 else f"in {min(max(nxt - now, 0), 2)}s"
        return ("ScheduledQuery", value.scheduleKey.scheduleName,
                value.scheduleKey.clusterNamespace, value.enabled, value.schedule, value.user,
                value.query, when)
    if isinstance(value, T.ScheduledQueryPollResponse):
        key = value.scheduleKey
        return ("Poll", key and (key.scheduleName, key.clusterNamespace),
                value.executionId is not None, value.query, value.user)
    return value


def _sq(name, schedule="* * * * * ? *", enabled=True, user="ann", query="select 1",
        ns=NS, next_execution=None):
    return T.ScheduledQuery(T.ScheduledQueryKey(name, ns), enabled, schedule, user, query,
                            next_execution)


def _maint(c, kind, sq):
    return c.scheduled_query_maintenance(T.ScheduledQueryMaintenanceRequest(kind, sq))


def _get(c, name, ns=NS):
    return c.get_scheduled_query(T.ScheduledQueryKey(name, ns))


def _steps(c) -> list:
    fixed = "0 0 12 1 1 ? 2090"
    out = [
        ("get a missing one", lambda: _get(c, "nothing")),
        ("create", lambda: _maint(c, CREATE, _sq("a", fixed))),
        ("get it", lambda: _get(c, "a")),
        ("create it again", lambda: _maint(c, CREATE, _sq("a", fixed))),
        ("same name, other namespace", lambda: _maint(c, CREATE, _sq("a", fixed, ns=NS + "2"))),
        ("invalid schedule", lambda: _maint(c, CREATE, _sq("bad", "asd asd"))),
        ("both day fields", lambda: _maint(c, CREATE, _sq("bad", "0 0 12 * * *"))),
        ("five fields", lambda: _maint(c, CREATE, _sq("bad", "0 0 12 * *"))),
        ("not created", lambda: _get(c, "bad")),
        ("every ten minutes", lambda: _maint(c, CREATE, _sq("ten", "0 */10 * * * ? *"))),
        ("its next execution", lambda: (lambda q: (q.nextExecution % 600,
                                                   0 < q.nextExecution - time.time() <= 600))(
            _get(c, "ten"))),
        ("L W #", lambda: _maint(c, CREATE, _sq("lw", "0 0 12 LW * ?"))),
        ("its next", lambda: _get(c, "lw").nextExecution - _get(c, "lw").nextExecution % 86400),
        ("enabled unset", lambda: _maint(c, CREATE, _sq("unset", fixed, enabled=None))),
        ("read back", lambda: _get(c, "unset")),
        ("a past year", lambda: _maint(c, CREATE, _sq("past", "0 0 0 1 1 ? 2020"))),
        ("read back the past one", lambda: _get(c, "past")),
        ("drop the past one", lambda: _maint(c, DROP, _sq("past"))),
        ("alter", lambda: _maint(c, ALTER, _sq("a", "0 0 13 1 1 ? 2091", user="bob",
                                               query="select 2", enabled=False))),
        ("altered", lambda: _get(c, "a")),
        ("alter with a next execution", lambda: _maint(
            c, ALTER, _sq("a", "0 0 13 1 1 ? 2091", next_execution=1234))),
        ("kept", lambda: _get(c, "a")),
        ("alter to an invalid schedule", lambda: _maint(c, ALTER, _sq("a", "x"))),
        ("unchanged", lambda: _get(c, "a")),
        ("alter a missing one", lambda: _maint(c, ALTER, _sq("nothing"))),
        ("drop a missing one", lambda: _maint(c, DROP, _sq("nothing"))),
        ("drop", lambda: _maint(c, DROP, _sq("a"))),
        ("dropped", lambda: _get(c, "a")),
        ("the other namespace's", lambda: _get(c, "a", NS + "2")),
        ("poll an empty namespace", lambda: c.scheduled_query_poll(
            T.ScheduledQueryPollRequest("sq_nothing"))),
    ]
    return [(label, _answer(call)) for label, call in out]


def _polls(c) -> list:
    out = []
    ns = NS + "_poll"
    _maint(c, CREATE, _sq("p", ns=ns, query="select 3"))
    _maint(c, CREATE, _sq("off", ns=ns, enabled=False))
    time.sleep(1.5)
    poll = lambda: c.scheduled_query_poll(T.ScheduledQueryPollRequest(ns))  # noqa: E731
    first = c.scheduled_query_poll(T.ScheduledQueryPollRequest(ns))
    out.append(("poll", ("ok", _plain(first))))
    eid = first.executionId

    def progress(state, execution_id=None, error=None):
        return lambda: c.scheduled_query_progress(T.ScheduledQueryProgressInfo(
            eid if execution_id is None else execution_id, state, "exec-1", error))
    steps = [
        ("poll again: it is executing", poll),
        ("executing", progress(S.EXECUTING)),
        ("executing again", progress(S.EXECUTING)),
        ("back to inited", progress(S.INITED)),
        ("auto-disabled", progress(S.AUTO_DISABLED)),
        ("a missing execution", progress(S.EXECUTING, execution_id=987654)),
        ("failed", progress(S.FAILED, error="e" * 1200 + "\nx")),
        ("failed again", progress(S.FAILED)),
        ("finished after failing", progress(S.FINISHED)),
    ]
    out += [(label, _answer(call)) for label, call in steps]
    time.sleep(1.2)
    second = c.scheduled_query_poll(T.ScheduledQueryPollRequest(ns))
    out.append(("polled again once done", ("ok", _plain(second))))
    out.append(("a new execution", second.executionId != eid))
    eid = second.executionId
    out.append(("inited to auto-disabled", _answer(progress(S.AUTO_DISABLED))))
    out.append(("inited to finished", _answer(progress(S.FINISHED))))
    out.append(("drop with executions", _answer(lambda: _maint(c, DROP, _sq("p", ns=ns)))))
    out.append(("its execution", _answer(progress(S.EXECUTING))))
    return out


def run(connection) -> list:
    """(label, answer) of each step; ``connection()`` opens a Hive 4 connection."""
    with connection() as c:
        out = _steps(c) + _polls(c)
    for label, call in (
            ("null maintenance request", lambda c: c.scheduled_query_maintenance(None)),
            ("null scheduled query", lambda c: c.scheduled_query_maintenance(
                T.ScheduledQueryMaintenanceRequest(CREATE, None))),
            ("null poll request", lambda c: c.scheduled_query_poll(None)),
            ("null progress", lambda c: c.scheduled_query_progress(None)),
            ("null key", lambda c: c.get_scheduled_query(None)),
            ("null schedule", lambda c: _maint(c, CREATE, _sq("nullsched", None))),
    ):
        with connection() as c:
            out.append((label, _answer(lambda: call(c))))
            out.append((label + ", then", _answer(lambda: _get(c, "nullsched"))))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} / ours {b!r}"
            for (label, a), (_, b) in zip(stock, ours) if a != b] + (
        [f"{len(stock)} steps / {len(ours)}"] if len(stock) != len(ours) else [])
