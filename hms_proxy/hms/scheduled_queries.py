"""Hive 4's scheduled queries (``scheduled_query_maintenance``, ``scheduled_query_poll``,
``scheduled_query_progress``, ``get_scheduled_query``), as the stock HMS 4.0.1 serves them.

``CREATE SCHEDULED QUERY q CRON '0 */10 * * * ? *' AS ...`` in HiveServer2 stores a schedule in
the metastore; every HiveServer2 of the cluster namespace (``hive.scheduled.queries.namespace``)
polls the metastore for a query that is due, runs it and reports its progress. The stock keeps
the queries and their executions in its database (SCHEDULED_QUERIES, SCHEDULED_EXECUTIONS).

Here they are stored with the catalog, **per branch**, like the runtime statistics and the
delegation tokens: a HiveServer2 that works on a branch (its metastore URI serves that ref)
schedules queries over that branch's tables and sees that branch's schedules; a schedule is
versioned and merged with the catalog it runs against, and a new branch starts with the
schedules of its source (not with its executions in progress: an execution belongs to the
branch that polled it). The stock's are per metastore; one branch is one metastore's worth
of them. The keys::

    schedule/query/<namespace>/<name>     the ScheduledQuery (namespace and name with % and /
                                          percent-escaped)
    schedule/active/<namespace>/<name>    the id of its execution in progress, if any
    schedule/execution/<id>               an execution (JSON; id zero-padded to 12 digits:
                                          key order is id order, which is time order)
    schedule/next-execution-id            the next execution id

Being per branch, the execution ids of two branches that both poll collide on merge (a
conflict on the same key), where HMS has one sequence.

As the stock (its ObjectStore, MScheduledQuery and ScheduledQueryExecutionsMaintTask):

- ``scheduled_query_maintenance`` CREATE (AlreadyExistsException for an existing name in the
  namespace), ALTER and DROP (NoSuchObjectException for a missing one; a drop takes the
  query's executions with it); the next execution is computed from the Quartz cron schedule
  (:mod:`hms_proxy.hms.quartz`, InvalidInputException for an invalid one), or taken from the
  request of an ALTER that gives one; an unset ``enabled`` is false;
- ``scheduled_query_poll`` hands out the enabled query of the namespace that is due first and
  has no execution in progress, in the same write as its new execution (INITED) and its next
  time: of several executors polling at once, one gets it (the write transaction is the
  stock's serialized read); the query is given as ``/* schedule: <name> */<query>``;
- ``scheduled_query_progress`` moves an execution along INITED → EXECUTING → FINISHED, FAILED
  or TIMED_OUT (InvalidOperationException for another change); a final state frees the query
  for the next poll; error messages of 1000 characters or more keep their first line,
  abbreviated to 1000; after FAILED or TIMED_OUT, ``metastore.scheduled.queries.autodisable.count``
  consecutive failures disable the query and ``...skip.opportunities.after.failures`` skips
  schedule opportunities (both off by default);
- executions that made no progress for ``metastore.scheduled.queries.execution.timeout`` (120 s)
  become TIMED_OUT, and those older than ``...execution.max.age`` (30 days) go: the stock's
  maintenance task does this once a minute, here a poll of a branch that has such executions
  does it, in its write;
- ``metastore.scheduled.queries.enabled=false`` refuses every call but ``get_scheduled_query``
  with a MetaException naming the setting;
- the next execution is an i32 of epoch seconds, cast as the stock casts it: one past January
  2038 wraps to a negative time, due at once;
- what is a Java NullPointerException in the stock (a null request, key or schedule; reading
  back a query whose schedule never fires again, so that it has no next execution) is an
  internal error here too, but a null poll request answers nothing (the stock's poll returns
  from a ``finally``); a request without a required field fails as Thrift's Java reader fails
  it (PROTOCOL_ERROR, the connection closed).

These methods are Hive 4's only: a 2.3 or 3.1 client has none of them to call.
"""
from __future__ import annotations

import json
import time

from hms_proxy.hms import quartz
from hms_proxy.hms.family import Family
from hms_proxy.hms.service import java_time_millis
from hms_proxy.hms.txn.writeids import require
from hms_proxy.thrift import errors
from kvmodel import codec

QUERY_PREFIX = "schedule/query/"
ACTIVE_PREFIX = "schedule/active/"
EXECUTION_PREFIX = "schedule/execution/"
NEXT_ID_KEY = "schedule/next-execution-id"

ENABLED_KEY = "metastore.scheduled.queries.enabled"
# (setting, its HiveConf name, default seconds)
TIMEOUT = ("metastore.scheduled.queries.execution.timeout",
           "hive.metastore.scheduled.queries.progress.timeout", 120)
MAX_AGE = ("metastore.scheduled.queries.execution.max.age",
           "hive.metastore.scheduled.queries.execution.max.age", 30 * 86400)
AUTODISABLE_KEY = "metastore.scheduled.queries.autodisable.count"
SKIP_KEY = "metastore.scheduled.queries.skip.opportunities.after.failures"
MAX_ERROR = 1000

INITED, EXECUTING, FAILED, FINISHED, TIMED_OUT, AUTO_DISABLED = range(6)  # QueryState
_STATE_NAMES = ("INITED", "EXECUTING", "FAILED", "FINISHED", "TIMED_OUT", "AUTO_DISABLED")
T_NAMES = {1: "CREATE", 2: "ALTER", 3: "DROP"}  # ScheduledQueryMaintenanceRequestType


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace("/", "%2F")


def _name(key) -> str:
    """Its name in the stock's messages: ``name@namespace``."""
    return f"{_java(key.scheduleName)}@{_java(key.clusterNamespace)}"


def _java(value) -> str:
    return "null" if value is None else str(value)


def _state(state) -> str:
    return _STATE_NAMES[state] if state in range(6) else _java(state)


def _npe(what: str):
    """A Java NullPointerException in the stock: an internal error to the client."""
    return errors.InternalError(what)


def _abbreviate(message: str) -> str:
    """ObjectStore.abbreviateErrorMessage: a long message's first line, to 1000 characters
    (commons-lang's abbreviate: 997 of them and "...")."""
    if len(message) < MAX_ERROR:
        return message
    first = message.split("\n", 1)[0]
    return first if len(first) <= MAX_ERROR else first[:MAX_ERROR - 3] + "..."


class ScheduledQueryCalls(Family):
    # --- settings ---------------------------------------------------------------------
    def _seconds(self, setting) -> int:
        name, hive_name, default = setting
        value = self.env.conf.get(name, self.env.conf.get(hive_name))
        try:
            return java_time_millis(value) // 1000 if value else default
        except ValueError:
            return default

    def _count(self, name: str) -> int:
        try:
            return int(self.env.conf.get(name, "0"))
        except ValueError:
            return 0

    def _ensure_enabled(self) -> None:
        if str(self.env.conf.get(ENABLED_KEY, self.env.conf.get(
                "hive.metastore.scheduled.queries.enabled", "true"))).strip().lower() == "false":
            raise errors.MetaError(
                f"Scheduled query request processing is disabled via {ENABLED_KEY}")

    @staticmethod
    def _next(schedule, after: int | None = None) -> int | None:
        """The next execution, as the stock's ``(int)`` cast of the epoch second keeps it: a
        time past 2038 wraps to a negative one (and is due at once)."""
        if schedule is None:
            raise _npe("the schedule is null")
        try:
            nxt = quartz.next_execution(schedule, int(time.time()) if after is None else after)
            return None if nxt is None else (nxt + 2**31) % 2**32 - 2**31
        except quartz.InvalidSchedule:
            raise errors.InvalidInput(
                f"Invalid QUARTZ schedule expression: '{schedule}'") from None
        except quartz.ScheduleError as exc:
            raise errors.InternalError(str(exc)) from None

    # --- keys -----------------------------------------------------------------------------
    @staticmethod
    def _query_key(key) -> str:
        return f"{QUERY_PREFIX}{_escape(key.clusterNamespace)}/{_escape(key.scheduleName)}"

    @staticmethod
    def _active_key(key) -> str:
        return f"{ACTIVE_PREFIX}{_escape(key.clusterNamespace)}/{_escape(key.scheduleName)}"

    def _stored(self, cat, key):
        raw = cat.view.get(self._query_key(key))
        return None if raw is None else codec.decode(self.t.ScheduledQuery, raw)

    @staticmethod
    def _execution(cat, execution_id: int) -> dict | None:
        raw = cat.view.get(f"{EXECUTION_PREFIX}{execution_id:012d}")
        return None if raw is None else json.loads(raw)

    @staticmethod
    def _put_execution(cat, execution: dict) -> None:
        cat.view.put(f"{EXECUTION_PREFIX}{execution['id']:012d}",
                     json.dumps(execution, sort_keys=True).encode())

    # --- get ----------------------------------------------------------------------------
    def get_scheduled_query(self, ctx, scheduleKey):
        if scheduleKey is None:
            raise _npe("get_scheduled_query: the key is null")
        with self.reading(ctx) as cat:
            stored = self._stored(cat, scheduleKey) if scheduleKey.clusterNamespace is not None \
                and scheduleKey.scheduleName is not None else None
        if stored is None:
            raise errors.NoSuchObject(f"There is no scheduled query for: {_name(scheduleKey)}")
        if stored.nextExecution is None:  # MScheduledQuery.toThrift unboxes a null Integer
            raise _npe("get_scheduled_query: the query has no next execution")
        return stored

    # --- maintenance ----------------------------------------------------------------------
    def scheduled_query_maintenance(self, ctx, request):
        self._ensure_enabled()
        if request is None:
            raise _npe("scheduled_query_maintenance: the request is null")
        given = request.scheduledQuery
        require("ScheduledQueryMaintenanceRequest", [
            ("type", T_NAMES.get(request.type, request.type), True),
            ("scheduledQuery", None if given is None else "ScheduledQuery(...)", True)],
            ("type", "scheduledQuery"))
        kind = request.type
        if kind not in (1, 2, 3):
            raise errors.MetaError("invalid request")
        if given.scheduleKey is None:
            raise _npe("scheduled_query_maintenance: no scheduled query or key")
        key = given.scheduleKey
        if key.scheduleName is None or key.clusterNamespace is None:
            raise _npe("scheduled_query_maintenance: a null name or namespace")
        with self.writing(ctx) as cat:
            stored = self._stored(cat, key)
            if kind == 1:  # CREATE
                if stored is not None:
                    raise errors.AlreadyExists(
                        f"Scheduled query with name: {_name(key)} already exists.")
                self._save(cat, given, self._next(given.schedule))
            elif stored is None:
                raise errors.NoSuchObject(f"Scheduled query with name: {_name(key)} doesn't exists.")
            elif kind == 2:  # ALTER
                nxt = given.nextExecution if given.nextExecution is not None \
                    else self._next(given.schedule)
                self._save(cat, given, nxt)
            else:  # DROP
                self._drop(cat, key)

    def _save(self, cat, given, next_execution) -> None:
        key = given.scheduleKey
        stored = self.t.ScheduledQuery(
            scheduleKey=self.t.ScheduledQueryKey(key.scheduleName, key.clusterNamespace),
            enabled=bool(given.enabled), schedule=given.schedule, user=given.user,
            query=given.query, nextExecution=next_execution)
        cat.put(self._query_key(key), stored)

    def _drop(self, cat, key) -> None:
        cat.delete(self._query_key(key))
        cat.delete(self._active_key(key))
        for k, raw in list(cat.view.scan_prefix(EXECUTION_PREFIX)):
            execution = json.loads(raw)
            if (execution["namespace"], execution["name"]) == (key.clusterNamespace,
                                                               key.scheduleName):
                cat.delete(k)

    # --- poll ---------------------------------------------------------------------------
    def scheduled_query_poll(self, ctx, request):
        self._ensure_enabled()
        if request is None:  # the stock's NullPointerException is lost in a finally: nothing
            return self.t.ScheduledQueryPollResponse()
        namespace = request.clusterNamespace
        now = int(time.time())
        with self.reading(ctx) as cat:  # most polls find nothing to do: no write for them
            busy = self._housekeeping_due(cat, now) or self._due(cat, namespace, now)
        if not busy:
            return self.t.ScheduledQueryPollResponse()
        with self.writing(ctx) as cat:
            self._housekeeping(cat, now)
            due = self._due(cat, namespace, now)
            if not due:
                return self.t.ScheduledQueryPollResponse()
            query = due[0]
            try:
                query.nextExecution = self._next(query.schedule, now)
            except (errors.InvalidInput, errors.InternalError):
                return self.t.ScheduledQueryPollResponse()  # the stock's poll answers nothing
            raw_id = cat.view.get(NEXT_ID_KEY)
            execution_id = int(raw_id) if raw_id else 1
            cat.view.put(NEXT_ID_KEY, str(execution_id + 1).encode())
            key = query.scheduleKey
            self._put_execution(cat, {
                "id": execution_id, "namespace": key.clusterNamespace,
                "name": key.scheduleName, "state": INITED, "start": now, "end": None,
                "last_update": now, "executor_query_id": None, "error": None})
            cat.view.put(self._active_key(key), str(execution_id).encode())
            cat.put(self._query_key(key), query)
        return self.t.ScheduledQueryPollResponse(
            scheduleKey=key, executionId=execution_id,
            query=f"/* schedule: {key.scheduleName} */{query.query}", user=query.user)

    def _due(self, cat, namespace, now: int) -> list:
        """The enabled queries of ``namespace`` due by ``now`` and not executing, the one due
        first first."""
        if namespace is None:
            return []
        prefix = f"{QUERY_PREFIX}{_escape(namespace)}/"
        active_prefix = f"{ACTIVE_PREFIX}{_escape(namespace)}/"
        active = {k[len(active_prefix):] for k, _ in cat.view.scan_prefix(active_prefix)}
        due = []
        for k, raw in cat.view.scan_prefix(prefix):
            if k[len(prefix):] in active:
                continue
            query = codec.decode(self.t.ScheduledQuery, raw)
            if query.enabled and query.nextExecution is not None and query.nextExecution <= now:
                due.append(query)
        due.sort(key=lambda q: q.nextExecution)
        return due

    # --- progress -------------------------------------------------------------------------
    def scheduled_query_progress(self, ctx, info):
        self._ensure_enabled()
        if info is None:
            raise _npe("scheduled_query_progress: the info is null")
        require("ScheduledQueryProgressInfo", [
            ("scheduledExecutionId", info.scheduledExecutionId, True),
            ("state", _STATE_NAMES[info.state] if info.state in range(6) else None, True),
            ("executorQueryId", info.executorQueryId, True),
            ("errorMessage", info.errorMessage, info.errorMessage is not None)],
            ("scheduledExecutionId", "state", "executorQueryId"))
        with self.writing(ctx) as cat:
            self._progress(cat, info, int(time.time()))

    def _progress(self, cat, info, now: int) -> None:
        execution_id = info.scheduledExecutionId
        execution = self._execution(cat, execution_id) if execution_id is not None else None
        if execution is None:
            raise errors.MetaError(  # as RetryingHMSHandler words the JDO exception
                "JDOObjectNotFoundException: No such database row\nRoot cause: "
                "org.datanucleus.exceptions.NucleusObjectNotFoundException: No such database row")
        old, new = execution["state"], info.state
        if not _valid_change(old, new):
            raise errors.InvalidOperation(
                f"Invalid state change: {_state(old)}=>{_state(new)}")
        if new not in (INITED, EXECUTING, FAILED, FINISHED, TIMED_OUT):
            raise errors.InvalidOperation(f"invalid state: {_state(new)}")
        execution["state"] = new
        if info.executorQueryId is not None:
            execution["executor_query_id"] = info.executorQueryId
        if info.errorMessage is not None:
            execution["error"] = _abbreviate(info.errorMessage)
        if new in (INITED, EXECUTING):
            execution["last_update"] = now
        else:
            execution["end"], execution["last_update"] = now, None
            cat.delete(f"{ACTIVE_PREFIX}{_escape(execution['namespace'])}/"
                       f"{_escape(execution['name'])}")
        self._put_execution(cat, execution)
        if new in (FAILED, TIMED_OUT):
            self._after_failure(cat, execution, now)

    def _after_failure(self, cat, execution: dict, now: int) -> None:
        """ObjectStore.processScheduledQueryPolicies: disable the query after N consecutive
        failures, skip schedule opportunities after some."""
        autodisable, skip = self._count(AUTODISABLE_KEY), self._count(SKIP_KEY)
        last_n = max(autodisable, skip)
        key = self.t.ScheduledQueryKey(execution["name"], execution["namespace"])
        query = self._stored(cat, key)
        if last_n <= 0 or query is None:
            return
        mine = [json.loads(raw) for _, raw in cat.view.scan_prefix(EXECUTION_PREFIX)]
        mine = [e for e in mine if (e["namespace"], e["name"]) == (key.clusterNamespace,
                                                                    key.scheduleName)]
        failures = 0
        for e in sorted(mine, key=lambda e: -e["id"])[:last_n]:
            if e["state"] not in (FAILED, TIMED_OUT):
                break
            failures += 1
        if 0 < autodisable <= failures:
            query.enabled = False
            raw_id = cat.view.get(NEXT_ID_KEY)
            disabled_id = int(raw_id) if raw_id else 1
            cat.view.put(NEXT_ID_KEY, str(disabled_id + 1).encode())
            self._put_execution(cat, {
                "id": disabled_id, "namespace": key.clusterNamespace, "name": key.scheduleName,
                "state": AUTO_DISABLED, "start": now, "end": now, "last_update": now,
                "executor_query_id": None,
                # sic: the stock formats it with String.format, which leaves the {} as is
                "error": "Disabling query after {} consequtive failures"})
        if skip > 0:
            scheduled = query.nextExecution
            for _ in range(min(skip, failures) - 1):
                if scheduled is not None:
                    try:
                        scheduled = self._next(query.schedule, scheduled)
                    except errors.InvalidInput as exc:
                        raise errors.MetaError(
                            f"Unexpected InvalidInputException: {exc}") from None
            if scheduled is not None:
                query.nextExecution = scheduled
        cat.put(self._query_key(key), query)

    # --- the stock's maintenance task, at poll time ---------------------------------------
    def _housekeeping_due(self, cat, now: int) -> bool:
        timeout, max_age = self._seconds(TIMEOUT), self._seconds(MAX_AGE)
        oldest = cat.view.first(EXECUTION_PREFIX, EXECUTION_PREFIX[:-1] + "0")
        if oldest is not None and max_age >= 0 and json.loads(oldest[1])["start"] <= now - max_age:
            return True
        return timeout >= 0 and bool(self._stuck(cat, now, timeout))

    def _stuck(self, cat, now: int, timeout: int) -> list[dict]:
        out = []
        for _, raw in cat.view.scan_prefix(ACTIVE_PREFIX):
            execution = self._execution(cat, int(raw))
            if execution is not None and execution["last_update"] is not None and \
                    execution["last_update"] <= now - timeout:
                out.append(execution)
        return out

    def _housekeeping(self, cat, now: int) -> None:
        """ScheduledQueryExecutionsMaintTask: executions stuck for the timeout become
        TIMED_OUT (through the progress, with its policies), old ones go."""
        timeout, max_age = self._seconds(TIMEOUT), self._seconds(MAX_AGE)
        if timeout >= 0:
            for execution in self._stuck(cat, now, timeout):
                self._progress(cat, self.t.ScheduledQueryProgressInfo(
                    scheduledExecutionId=execution["id"], state=TIMED_OUT,
                    executorQueryId=None,
                    errorMessage=f"Query stuck in: {_state(execution['state'])} state for "
                                 f">{timeout} seconds. Execution timed out."), now)
        if max_age >= 0:
            for k, raw in list(cat.view.scan_prefix(EXECUTION_PREFIX)):
                if json.loads(raw)["start"] > now - max_age:
                    break
                cat.delete(k)
        for k, raw in list(cat.view.scan_prefix(ACTIVE_PREFIX)):  # its execution gone
            if self._execution(cat, int(raw)) is None:
                cat.delete(k)


def _valid_change(old: int, new) -> bool:
    """ObjectStore.validateStateChange."""
    if old == INITED:
        return new != INITED
    if old == EXECUTING:
        return new in (FINISHED, EXECUTING, FAILED, TIMED_OUT)
    return False
