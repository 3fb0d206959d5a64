"""The server's logs: text (as always) or JSON lines (``serve --log-format json``), and the line
each Thrift call leaves in logger ``hms_proxy.calls``: every call at DEBUG, catalog writes at
INFO.

A JSON line holds ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger``, ``message``
and, for a call, ``method``, ``object`` (the database, table... it names), ``peer``, ``user``
(the ``set_ugi`` user, null before), ``identity`` (the caller as :mod:`hms_proxy.security.access`
established it: TLS certificate, shared secret or ``set_ugi``), ``ref``, ``duration_ms``,
``outcome`` (``ok`` or the exception the client got) and ``write``.
"""
from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timezone

CALLS = logging.getLogger("hms_proxy.calls")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FORMATS = ("text", "json")

# The catalog writes: the Thrift methods whose implementation reaches Family.writing (a write
# transaction on the call's branch), found by tests/ops/test_observability.py in the code of
# the families, so that this list cannot drift from it. Locks, transactions, set_ugi and fb303
# options change no catalog and are logged at DEBUG like reads.
WRITE_METHODS = frozenset({
    "add_foreign_key", "add_index", "add_master_key", "add_partition",
    "add_partition_with_environment_context", "add_partitions", "add_partitions_pspec",
    "add_partitions_req", "add_primary_key", "add_token", "alter_database", "alter_function",
    "alter_index", "alter_partition", "alter_partition_with_environment_context",
    "alter_partitions", "alter_partitions_with_environment_context", "alter_table",
    "alter_table_with_cascade", "alter_table_with_environment_context", "append_partition",
    "append_partition_by_name", "append_partition_by_name_with_environment_context",
    "append_partition_with_environment_context", "create_database", "create_function",
    "create_role", "create_table", "create_table_with_constraints",
    "create_table_with_environment_context", "create_type",
    "delete_partition_column_statistics", "delete_table_column_statistics", "drop_constraint",
    "drop_database", "drop_function", "drop_index_by_name", "drop_partition",
    "drop_partition_by_name", "drop_partition_by_name_with_environment_context",
    "drop_partition_with_environment_context", "drop_partitions_req", "drop_role",
    "drop_table", "drop_table_with_environment_context", "drop_type", "exchange_partition",
    "exchange_partitions", "grant_privileges", "grant_revoke_privileges", "grant_revoke_role",
    "grant_role", "markPartitionForEvent", "remove_master_key", "remove_token",
    "rename_partition", "revoke_privileges", "revoke_role", "set_aggr_stats_for",
    "update_master_key", "update_partition_column_statistics",
    "update_table_column_statistics",
    # Hive 3.x/4.x request forms (hms_proxy/hms/requests.py)
    "alter_database_req", "alter_partitions_req", "alter_table_req", "append_partition_req",
    "create_database_req", "create_table_req", "drop_database_req", "drop_partition_req",
    "drop_table_req", "rename_partition_req", "truncate_table", "truncate_table_req",
    "add_runtime_stats", "create_catalog", "alter_catalog", "drop_catalog",
    "add_unique_constraint", "add_not_null_constraint", "add_default_constraint",
    "add_check_constraint",
    "update_partition_column_statistics_req", "update_table_column_statistics_req",
    "scheduled_query_maintenance", "scheduled_query_poll", "scheduled_query_progress",
    "update_creation_metadata",
})


def log_call(level: int, ctx, method: str, seconds: float, error: str | None,
             default_ref: str | None = None) -> None:
    """The line of one finished call (the caller checked that ``level`` is enabled)."""
    call = getattr(ctx, "call", "") or ""
    name, _, obj = call.partition(" ")
    if name != method:  # ctx.call is set by the handler; a call it never saw names nothing
        obj = ""
    ref = getattr(ctx, "ref", None) or default_ref
    user = getattr(ctx, "user", None)
    peer = getattr(ctx, "peer", "")
    ms = seconds * 1000.0
    outcome = error or "ok"
    CALLS.log(level, "%s%s user=%s peer=%s ref=%s %.3f ms %s", method,
              f" {obj}" if obj else "", user, peer, ref, ms, outcome,
              extra={"hms": {"method": method, "object": obj or None, "peer": peer,
                             "user": user, "identity": getattr(ctx, "identity", None),
                             "ref": ref, "duration_ms": round(ms, 3), "outcome": outcome,
                             "write": method in WRITE_METHODS}})


class JsonFormatter(logging.Formatter):
    """One JSON object per line; a record's ``hms`` extra fields join the object. A worker of
    ``serve --processes N`` adds its number (``worker``)."""

    def __init__(self):
        super().__init__()
        worker = os.environ.get("HMS_WORKER")
        self.worker = int(worker) if worker and worker.isdigit() else worker

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, timezone.utc)
                            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if self.worker is not None:
            out["worker"] = self.worker
        fields = getattr(record, "hms", None)
        if fields:
            out.update(fields)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """The root logger of ``serve``: ``level`` (DEBUG, INFO...) in ``fmt`` (text or json),
    to stderr."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {FORMATS}, not {fmt!r}")
    if fmt == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=level.upper(), handlers=[handler])
    else:
        logging.basicConfig(level=level.upper(), format=TEXT_FORMAT)
