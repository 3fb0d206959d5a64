"""Notification events served from the store's history, against real server processes over
one store (``serve --autocommit``: every write call is a commit, so every call is events)."""
from __future__ import annotations

import json

import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.tools.metastores import start_proxy
from tests.support.client import connect

pytestmark = pytest.mark.timeout(180)

SD = ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "string", None)],
                              serdeInfo=ttypes.SerDeInfo(parameters={}))


def table(db, name):
    return ttypes.Table(tableName=name, dbName=db, sd=SD, tableType="EXTERNAL_TABLE",
                        parameters={"EXTERNAL": "TRUE"},
                        partitionKeys=[ttypes.FieldSchema("ds", "string", None)])


def part(db, tbl, value):
    return ttypes.Partition(dbName=db, tableName=tbl, values=[value], sd=SD)


def events(client, last=0, limit=0):
    return client.get_next_notification(ttypes.NotificationEventRequest(last, limit)).events


def key(ev):
    return (ev.eventId, ev.eventTime, ev.eventType, ev.dbName, ev.tableName, ev.message,
            ev.messageFormat)


def ddl(client):
    client.create_database(ttypes.Database(name="shop", description="", parameters={}))
    client.create_table(table("shop", "orders"))
    client.add_partitions([part("shop", "orders", d) for d in ("2024-01-01", "2024-01-02")])
    client.add_partition(part("shop", "orders", "2024-01-03"))
    t = client.get_table("shop", "orders")
    t.parameters["comment"] = "orders"
    client.alter_table("shop", "orders", t)
    p = client.get_partition("shop", "orders", ["2024-01-01"])
    p.parameters = {**(p.parameters or {}), "k": "v"}
    client.alter_partition("shop", "orders", p)
    client.drop_partition("shop", "orders", ["2024-01-02"], True)
    client.create_function(ttypes.Function(
        functionName="up", dbName="shop", className="x.Up", ownerName="me",
        ownerType=ttypes.PrincipalType.USER, createTime=1, functionType=1, resourceUris=[]))
    client.drop_function("shop", "up")
    client.create_table(table("shop", "gone"))
    client.drop_table("shop", "gone", True)
    t = client.get_table("shop", "orders")
    t.tableName = "orders2"
    client.alter_table("shop", "orders", t)


def test_events_from_history_survive_a_restart(tmp_path):
    proxy = start_proxy(tmp_path, "--autocommit")
    try:
        with connect(proxy) as c:
            before = c.get_current_notificationEventId().eventId
            assert events(c, before) == []
            ddl(c)
            evs = events(c, before)
            current = c.get_current_notificationEventId().eventId
    finally:
        proxy.stop()

    ids = [e.eventId for e in evs]
    assert ids == list(range(before + 1, before + 1 + len(evs)))
    assert current == ids[-1]
    # The server stages the default database at start; the first commit carries it too.
    all_evs, evs = evs, [e for e in evs if e.dbName != "default"]
    assert len(all_evs) - len(evs) <= 1
    assert [(e.eventType, e.dbName, e.tableName) for e in evs] == [
        ("CREATE_DATABASE", "shop", None),
        ("CREATE_TABLE", "shop", "orders"),
        ("ADD_PARTITION", "shop", "orders"),  # one event for add_partitions of two
        ("ADD_PARTITION", "shop", "orders"),
        ("ALTER_TABLE", "shop", "orders"),
        ("ALTER_PARTITION", "shop", "orders"),
        ("DROP_PARTITION", "shop", "orders"),
        ("CREATE_FUNCTION", "shop", None),
        ("DROP_FUNCTION", "shop", None),
        ("CREATE_TABLE", "shop", "gone"),
        ("DROP_TABLE", "shop", "gone"),
        ("ALTER_TABLE", "shop", "orders2"),  # the rename
    ]
    assert all(e.messageFormat == "json-0.2" and e.eventTime > 0 for e in evs)
    msgs = [json.loads(e.message) for e in evs]
    assert list(msgs[0]) == ["server", "servicePrincipal", "db", "timestamp"]
    assert list(msgs[1]) == ["server", "servicePrincipal", "db", "table", "tableObjJson",
                             "timestamp", "files"]
    assert msgs[1]["timestamp"] == evs[1].eventTime
    assert json.loads(msgs[1]["tableObjJson"])["1"] == {"str": "orders"}  # Table.tableName
    add = msgs[2]
    assert list(add) == ["server", "servicePrincipal", "db", "table", "tableObjJson",
                         "timestamp", "partitions", "partitionListJson", "partitionFiles"]
    assert add["partitions"] == [{"ds": "2024-01-01"}, {"ds": "2024-01-02"}]
    assert len(add["partitionListJson"]) == 2
    assert set(msgs[4]) >= {"tableObjBeforeJson", "tableObjAfterJson"}
    assert msgs[5]["keyValues"] == {"ds": "2024-01-01"}
    assert msgs[6]["partitions"] == [{"ds": "2024-01-02"}]
    assert msgs[8]["functionName"] == "up"
    assert (msgs[11]["db"], msgs[11]["table"]) == ("shop", "orders")  # the name before

    # The same store, a new process: identical events and ids.
    again = start_proxy(tmp_path, "--autocommit")
    try:
        with connect(again) as c:
            assert [key(e) for e in events(c, before)] == [key(e) for e in all_evs]
            assert c.get_current_notificationEventId().eventId == current
            assert events(c, current) == []
            assert events(c, current + 100) == []
            assert [e.eventId for e in events(c, before, 3)] == ids[:3]
            assert [e.eventId for e in events(c, ids[4], 2)] == ids[5:7]
            assert [e.eventId for e in events(c, before, -1)] == ids
    finally:
        again.stop()


def test_a_polling_client_sees_each_event_once_and_staged_writes_only_once_committed(tmp_path):
    proxy = start_proxy(tmp_path, "--autocommit")
    try:
        with connect(proxy) as writer, connect(proxy) as poller:
            last = poller.get_current_notificationEventId().eventId
            seen = []

            def poll():
                nonlocal last
                while True:  # like Hive's NotificationEventPoll: batches from the last id seen
                    batch = events(poller, last, 2)
                    if not batch:
                        return
                    assert all(e.eventId > last for e in batch)
                    seen.extend(batch)
                    last = batch[-1].eventId

            writer.create_database(ttypes.Database(name="poll", description="", parameters={}))
            poll()
            for i in range(3):
                writer.create_table(table("poll", f"t{i}"))
                writer.add_partitions([part("poll", f"t{i}", str(d)) for d in range(3)])
                poll()
            writer.drop_database("poll", True, True)
            poll()
            ids = [e.eventId for e in seen]
            assert ids == sorted(set(ids)) and ids == list(range(ids[0], ids[0] + len(ids)))
            types = [e.eventType for e in seen if e.dbName != "default"]
            assert types[:3] == ["CREATE_DATABASE", "CREATE_TABLE", "ADD_PARTITION"]
            assert types.count("ADD_PARTITION") == 3 and types[-1] == "DROP_DATABASE"
            assert "DROP_PARTITION" not in types  # dropped with their tables, as in HMS
            assert types[-4:] == ["DROP_TABLE"] * 3 + ["DROP_DATABASE"]
    finally:
        proxy.stop()

    # Without autocommit, writes stay staged: no events until a commit.
    staged_dir = tmp_path / "staged"
    staged = start_proxy(staged_dir)
    try:
        with connect(staged) as c:
            now = c.get_current_notificationEventId().eventId
            c.create_database(ttypes.Database(name="later", description="", parameters={}))
            assert c.get_current_notificationEventId().eventId == now
            assert events(c, now) == []
    finally:
        staged.stop()
