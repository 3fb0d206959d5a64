"""Trino's metastore calls as a real Trino made them: replayed against both servers.

tests/hms/conformance/recorded/trino.json holds every Thrift CALL Trino (the version it names)
made to the stock HMS while it ran the SQL scenario of tests/e2e/trino/scenario.py (90 statements:
schemas, Parquet and ORC tables, INSERT, CTAS, partitions, ALTER, views, ANALYZE, SHOW STATS,
DROP and the expected errors); trino-sql-standard.json those of its security scenario (roles,
GRANT, REVOKE, SHOW GRANTS with hive.security=sql-standard). Recorded byte for byte by tests/support/thrift_recorder.py and
kept as a generic tree, so the fields and methods HMS 2.3 does not know are sent as Trino
sent them. Paths are kept relative to the warehouse (``<WAREHOUSE>``) and the schema is
``<schema>``. To record again: ``HMS_TRINO_RECORD=1 pytest tests/e2e/trino -k "matches_stock and
not lakefs"``.

The replay sends each call, in the order they reached the HMS, on one connection, and records
the reply decoded with the 2.3.10 result struct; the oracle and the proxy must answer alike.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport.TTransport import TTransportException

from tests.hms.conformance.harness import Entry, scenario
from tests.support.client import ThriftHiveMetastore
from tests.support.thrift_recorder import encode_call, map_strings

RECORDED = Path(__file__).parent / "recorded"
DB = "cftrino_db"
# Replies whose list order HMS does not define (see harness.py): compared sorted.
UNORDERED = {"get_all_databases", "get_databases", "get_tables", "get_all_tables",
             "get_table_meta", "get_tables_by_type", "get_table_names_by_filter",
             "get_partition_names_ps", "get_partitions_ps", "get_functions", "list_privileges",
             "list_roles"}


def _sort_stats(value):
    """Column statistics objects in name order (HMS returns them in no defined order)."""
    for attr in ("tableStats", "colStats"):
        objs = getattr(value, attr, None)
        if isinstance(objs, list):
            objs.sort(key=lambda o: o.colName)
    per_part = getattr(value, "partStats", None)
    if isinstance(per_part, dict):
        for objs in per_part.values():
            objs.sort(key=lambda o: o.colName)
    return value


def replay_call(rec, name: str, args: list, label: str) -> None:
    try:
        if rec.client is None:
            raise TTransportException(TTransportException.NOT_OPEN, "not connected")
        trans, iprot = rec.client._oprot.trans, rec.client._iprot
        trans.write(encode_call(name, args))
        trans.flush()
        _, mtype, _ = iprot.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            exc = TApplicationException()
            exc.read(iprot)
            iprot.readMessageEnd()
            raise exc
        result_cls = getattr(ThriftHiveMetastore, f"{name}_result", None)
        if result_cls is None:
            iprot.skip(TType.STRUCT)
            iprot.readMessageEnd()
            rec.entries.append(Entry(label, ("reply", "undecoded")))
            return
        result = result_cls()
        result.read(iprot)
        iprot.readMessageEnd()
    except (TTransportException, TProtocolException, socket.error, EOFError) as exc:
        rec._record_error(label, "transport-error", exc, True)
        rec._reconnect()
        return
    except TException as exc:
        rec._record_error(label, "exception", exc, True)
        return
    rec.methods.add(name)
    for f in result.thrift_spec:
        if f is not None and f[0] != 0 and getattr(result, f[2]) is not None:
            rec._record_error(label, "exception", getattr(result, f[2]), True)
            return
    value = getattr(result, "success", None)
    if name in ("get_all_databases", "get_databases") and isinstance(value, list):
        # the session's servers hold other scenarios' databases too (SHOW SCHEMAS lists all)
        value = [d for d in value if d in (DB, "default")]
    value = rec.normalise(_sort_stats(value))
    if name in UNORDERED and isinstance(value, list):
        value = sorted(value, key=repr)
    rec.entries.append(Entry(label, value))


def replay(rec, recording: Path) -> None:
    calls = json.loads(recording.read_text())["calls"]
    warehouse = str(rec.proc.warehouse)
    external = "file:" + rec.scratch("external")

    def fill(text: str) -> str:
        return (text.replace("<EXTERNAL>", external).replace("<WAREHOUSE>", warehouse)
                .replace("<schema>", DB).replace("<catalog>", "trino"))

    for i, call in enumerate(calls):
        args = map_strings(call["args"], fill)
        replay_call(rec, call["method"], args, f"#{i} {call['method']}")


@scenario
def trino_recorded_sql_scenario(c, rec):
    """tests/e2e/trino/scenario.py STEPS, Trino's default (allow-all) security."""
    replay(rec, RECORDED / "trino.json")


@scenario
def trino_recorded_sql_standard_security(c, rec):
    """tests/e2e/trino/scenario.py SECURITY_STEPS: roles and grants (hive.security=sql-standard),
    the user alice holding the admin role as the live test arranges it."""
    from tests.support.client import ttypes as T

    held = c.list_roles("alice", T.PrincipalType.USER)
    if not any(r.roleName == "admin" for r in held):
        c.grant_role("admin", "alice", T.PrincipalType.USER, "admin", T.PrincipalType.ROLE, False)
    replay(rec, RECORDED / "trino-sql-standard.json")
