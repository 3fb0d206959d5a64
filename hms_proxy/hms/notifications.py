"""Notification events from the store's history: ``get_current_notificationEventId`` and
``get_next_notification``.

HMS 2.3 writes a row to its NOTIFICATION_LOG for every DDL call (DbNotificationListener). Here
the history *is* the log: every commit on the first-parent chain of the served ref, oldest
first, becomes the events of its diff against its first parent, numbered from 1 along that
chain. A commit never changes, so the events of a commit are computed once and kept per commit
id; ids are therefore the same after a restart. Staged (uncommitted) writes produce no events
until they are committed.

Messages follow Hive 2.3's ``JSONMessageFactory`` (format ``json-0.2``): the fields of
``JSONCreateTableMessage``, ``JSONAddPartitionMessage`` etc. in their declaration order, and
Thrift objects as ``TJSONProtocol`` strings (``tableObjJson``, ``partitionListJson`` ...).
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from thrift.protocol.TJSONProtocol import TJSONProtocolFactory
from thrift.Thrift import TApplicationException
from thrift.TSerialization import serialize

from hms_proxy.hms.databases import NO_EVENTS
from hms_proxy.hms.family import Family, lower
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import catalog as keys
from kvmodel import codec
from kvmodel.entities import parse_key

MESSAGE_FORMAT = "json-0.2"  # JSONMessageFactory.getMessageFormat() in Hive 2.3
_JSON = TJSONProtocolFactory()


@dataclass(frozen=True)
class Event:
    """One event of a commit, before it is numbered."""

    event_type: str
    db: str | None
    table: str | None
    message: str
    time: int


class NotificationCalls(Family):
    def __init__(self, env):
        super().__init__(env)
        self._lock = threading.Lock()
        self._events: dict[str, tuple[Event, ...]] = {}  # commit id -> its events
        self._last_id: dict[str, int] = {}  # commit id -> id of its last event (cumulative)
        self._parent: dict[str, str | None] = {}  # commit id -> first parent

    # --- Thrift -------------------------------------------------------------------------
    def get_current_notificationEventId(self, ctx):
        head = self.env.store.resolve(self.ref_of(ctx)).commit
        return ttypes.CurrentNotificationEventId(eventId=self._numbered(head))

    def get_next_notification(self, ctx, rqst):
        if rqst is None:
            return None  # HMS's ObjectStore answers null (the client sees MISSING_RESULT)
        if rqst.lastEvent is None:
            shown = "lastEvent:0" + ("" if rqst.maxEvents is None else f", maxEvents:{rqst.maxEvents}")
            raise TApplicationException(
                TApplicationException.PROTOCOL_ERROR,
                f"Required field 'lastEvent' is unset! Struct:NotificationEventRequest({shown})")
        last = rqst.lastEvent
        limit = rqst.maxEvents or 0
        head = self.env.store.resolve(self.ref_of(ctx)).commit
        self._numbered(head)
        # Walk back from the head to the first commit whose events are all <= last.
        newer: list[str] = []
        commit = head
        while commit is not None and self._last_id[commit] > last:
            newer.append(commit)
            commit = self._parent[commit]
        out = []
        for commit in reversed(newer):
            events = self._events[commit]
            first = self._last_id[commit] - len(events) + 1
            for i, ev in enumerate(events):
                event_id = first + i
                if event_id <= last:
                    continue
                out.append(ttypes.NotificationEvent(
                    eventId=event_id, eventTime=ev.time, eventType=ev.event_type,
                    dbName=ev.db, tableName=ev.table, message=ev.message,
                    messageFormat=MESSAGE_FORMAT))
                if 0 < limit <= len(out):  # HMS: maxEvents <= 0 means no limit
                    return ttypes.NotificationEventResponse(events=out)
        return ttypes.NotificationEventResponse(events=out)

    def fire_listener_event(self, ctx, rqst):
        """HMS 2.3 builds an INSERT event for its listeners and answers an empty response.
        Events here come from the history, so no INSERT event is produced; the request is
        checked as HMS checks it: read (required fields: PROTOCOL_ERROR), then the table
        must exist and the partition values may not outnumber its keys (internal errors: the
        method declares no exception). A missing partition is not an error, as in HMS."""
        if rqst is None:
            raise errors.InternalError("fire_listener_event: no request")
        _check_fire_request(rqst)
        if rqst.dbName is None or rqst.tableName is None:
            raise errors.InternalError("fire_listener_event: no table")
        with self.reading(ctx) as cat:
            table = cat.table(lower(rqst.dbName), lower(rqst.tableName))
        if table is None:
            raise errors.InternalError("fire_listener_event: no such table")
        if rqst.partitionVals is not None and \
                len(rqst.partitionVals) > len(table.partitionKeys or []):
            raise errors.InternalError("fire_listener_event: more values than partition keys")
        return ttypes.FireEventResponse()

    # --- the numbered history -----------------------------------------------------------
    def _numbered(self, head: str) -> int:
        """Make sure every commit of ``head``'s first-parent chain has its events and
        cumulative last id; returns the id of the last event at ``head`` (0: none)."""
        with self._lock:
            known = self._last_id.get(head)
            if known is not None:
                return known
        store = self.env.store
        pending: list = []
        commit_id: str | None = head
        while commit_id is not None and commit_id not in self._last_id:
            commit = store.get_commit(commit_id)
            pending.append(commit)
            commit_id = commit.parents[0] if commit.parents else None
        base = self._last_id.get(commit_id, 0) if commit_id is not None else 0
        computed = [(c, self._commit_events(c)) for c in reversed(pending)]
        with self._lock:
            for commit, events in computed:
                if commit.id not in self._last_id:
                    self._events[commit.id] = events
                    self._parent[commit.id] = commit.parents[0] if commit.parents else None
                    self._last_id[commit.id] = base + len(events)
                base = self._last_id[commit.id]
            return self._last_id[head]

    def _commit_events(self, commit) -> tuple[Event, ...]:
        if (getattr(commit, "metadata", None) or {}).get(NO_EVENTS) == "true":
            return ()
        store = self.env.store
        if commit.parents:
            entries = [(e.key, e.left, e.right) for e in store.diff(commit.parents[0], commit.id)]
        else:
            with store.read(commit.id) as view:
                entries = [(k, None, v) for k, v in view.scan()]
        return tuple(_events_of(entries, int(commit.created),
                                self.env.conf.get("hive.metastore.uris", ""), store, commit))


# --- one commit's diff to events ------------------------------------------------------------
def _obj_json(obj) -> str:
    return serialize(obj, _JSON).decode("utf-8")


def _message(**fields) -> str:
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def _key_values(table, partition) -> dict[str, str]:
    keys = [k.name for k in (table.partitionKeys or [])] if table is not None else []
    values = list(partition.values or [])
    return {k: v for k, v in zip(keys, values)}


def _events_of(entries, when: int, server: str, store, commit) -> list[Event]:
    """Events of one commit from its (key, before, after) changes, ordered like the calls
    that would have made them: database creations, table and function changes, partition
    changes per table, then drops of tables and databases."""
    dbs = {"added": [], "removed": [], "modified": []}
    tables = {"added": {}, "removed": {}, "modified": []}
    funcs = {"added": [], "removed": []}
    parts: dict[tuple[str, str], dict[str, list]] = {}
    for key, before, after in entries:
        kind, path = parse_key(key)
        change = "added" if before is None else "removed" if after is None else "modified"
        if kind == "database":
            dbs[change].append((path[0], before, after))
        elif kind == "table":
            if change == "modified":
                tables["modified"].append((path, before, after))
            else:
                tables[change][path] = before if change == "removed" else after
        elif kind == "function" and change != "modified":
            funcs[change].append((path, before if change == "removed" else after))
        elif kind == "partition":
            parts.setdefault(path[:2], {"added": [], "removed": [], "modified": []})[change] \
                .append((path[2], before, after))
        # statistics, roles and grants: HMS 2.3 fires no notification for them

    base = {"server": server, "servicePrincipal": ""}
    T = ttypes
    out: list[Event] = []

    def emit(event_type, db, table, **fields):
        out.append(Event(event_type, db, table,
                         _message(**base, db=db, **({"table": table} if table is not None else {}),
                                  **fields), when))

    # A table removed and one added in the same commit with the same creation time: a rename.
    renames = {}
    for old_path, old_bytes in list(tables["removed"].items()):
        old = codec.decode(T.Table, old_bytes)
        for new_path, new_bytes in list(tables["added"].items()):
            new = codec.decode(T.Table, new_bytes)
            if old.createTime and old.createTime == new.createTime:
                renames[old_path] = new_path
                tables["modified"].append((old_path, old_bytes, new_bytes))
                del tables["removed"][old_path], tables["added"][new_path]
                break
    renamed = set(renames) | set(renames.values())

    for db, _, after in dbs["added"]:
        emit("CREATE_DATABASE", db, None, timestamp=when)
    for db, before, after in dbs["modified"]:
        emit("ALTER_DATABASE", db, None, timestamp=when,
             dbObjBeforeJson=_obj_json(codec.decode(T.Database, before)),
             dbObjAfterJson=_obj_json(codec.decode(T.Database, after)))
    for (db, tbl), data in tables["added"].items():
        emit("CREATE_TABLE", db, tbl, tableObjJson=_obj_json(codec.decode(T.Table, data)),
             timestamp=when, files=[])
    for (db, tbl), before, after in tables["modified"]:
        old, new = codec.decode(T.Table, before), codec.decode(T.Table, after)
        new_db, new_tbl = renames.get((db, tbl), (db, tbl))
        out.append(Event("ALTER_TABLE", new_db, new_tbl, _message(
            **base, db=db, table=tbl, tableObjBeforeJson=_obj_json(old),
            tableObjAfterJson=_obj_json(new), timestamp=when), when))
    for (db, name), data in funcs["added"]:
        emit("CREATE_FUNCTION", db, None,
             functionObjJson=_obj_json(codec.decode(T.Function, data)), timestamp=when)

    table_cache: dict[tuple[str, str], object] = {}

    def table_of(db, tbl):
        if (db, tbl) not in table_cache:
            data = store.get(commit.id, keys.table_key(db, tbl))
            if data is None and commit.parents:
                data = store.get(commit.parents[0], keys.table_key(db, tbl))
            table_cache[(db, tbl)] = None if data is None else codec.decode(T.Table, data)
        return table_cache[(db, tbl)]

    for (db, tbl), changes in parts.items():
        if (db, tbl) in renamed:
            continue  # a rename moves the partitions; HMS sends only the ALTER_TABLE
        dropped_with_table = (db, tbl) in tables["removed"]
        table = table_of(db, tbl)
        table_json = _obj_json(table) if table is not None else None
        if changes["added"]:
            objs = [codec.decode(T.Partition, after) for _, _, after in changes["added"]]
            emit("ADD_PARTITION", db, tbl, tableObjJson=table_json, timestamp=when,
                 partitions=[_key_values(table, p) for p in objs],
                 partitionListJson=[_obj_json(p) for p in objs],
                 partitionFiles=[{"partitionName": name, "files": []}
                                 for name, _, _ in changes["added"]])
        for name, before, after in changes["modified"]:
            old, new = codec.decode(T.Partition, before), codec.decode(T.Partition, after)
            emit("ALTER_PARTITION", db, tbl, tableObjJson=table_json, timestamp=when,
                 keyValues=_key_values(table, new), partitionObjBeforeJson=_obj_json(old),
                 partitionObjAfterJson=_obj_json(new))
        if changes["removed"] and not dropped_with_table:
            objs = [codec.decode(T.Partition, before) for _, before, _ in changes["removed"]]
            emit("DROP_PARTITION", db, tbl, tableObjJson=table_json, timestamp=when,
                 partitions=[_key_values(table, p) for p in objs])

    for (db, name), _ in funcs["removed"]:
        emit("DROP_FUNCTION", db, None, functionName=name, timestamp=when)
    for (db, tbl) in tables["removed"]:
        emit("DROP_TABLE", db, tbl, timestamp=when)
    for db, _, _ in dbs["removed"]:
        emit("DROP_DATABASE", db, None, timestamp=when)
    return out


# --- fire_listener_event's request, as HMS reads it ---------------------------------------
def _jlist(values) -> str:
    return "null" if values is None else "[" + ", ".join(
        "null" if v is None else str(v) for v in values) + "]"


def _insert_data_string(data) -> str:
    out = f"InsertEventRequestData(filesAdded:{_jlist(data.filesAdded)}"
    if data.filesAddedChecksum is not None:
        out += f", filesAddedChecksum:{_jlist(data.filesAddedChecksum)}"
    return out + ")"


def _check_fire_request(rqst) -> None:
    """The Java reader's checks, innermost first: InsertEventRequestData.validate(), the
    union's field, then FireEventRequest.validate()."""
    def fail(message):
        raise TApplicationException(TApplicationException.PROTOCOL_ERROR, message)

    data = rqst.data
    insert = data.insertData if data is not None else None
    if insert is not None and insert.filesAdded is None:
        fail(f"Required field 'filesAdded' is unset! Struct:{_insert_data_string(insert)}")
    if data is not None and insert is None:
        fail("Unrecognized type 0")
    for name in ("successful", "data"):
        if getattr(rqst, name) is None:
            parts = [f"successful:{'true' if rqst.successful else 'false'}",
                     "data:" + ("null" if data is None else
                                f"<FireEventRequestData insertData:{_insert_data_string(insert)}>")]
            for field in ("dbName", "tableName"):
                value = getattr(rqst, field)
                if value is not None:
                    parts.append(f"{field}:{value}")
            if rqst.partitionVals is not None:
                parts.append(f"partitionVals:{_jlist(rqst.partitionVals)}")
            fail(f"Required field '{name}' is unset! Struct:FireEventRequest({', '.join(parts)})")
