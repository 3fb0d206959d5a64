"""TRUNCATE TABLE as Hive's own client asks it (``truncate_table``; Hive 4's
``truncate_table_req``), run the same on the stock HMS 3.1.3 or 4.0.1 and on us: what is
compared is each call's answer or error, the files left in the directories, and the
parameters of the tables and partitions after it (times left out). Used by
tests/hms/test_catalog_names.py (3.1.3) and tests/hms/test_stock_hms4.py (4.0.1)."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DB = "trunc_db"
_STATS = {"numRows": "10", "rawDataSize": "100", "numFiles": "1", "totalSize": "20",
          "COLUMN_STATS_ACCURATE":
              '{"BASIC_STATS":"true","COLUMN_STATS":{"id":"true","v":"true"}}'}
_DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")


def _path(location: str) -> str:
    return urlparse(location).path


def _fill(location: str) -> None:
    """A data file and a hidden one in a directory, as a writer leaves them."""
    path = _path(location)
    os.makedirs(path, exist_ok=True)
    for name in ("000000_0", ".000000_0.crc"):
        with open(os.path.join(path, name), "w") as f:
            f.write("1\tone\n")


def _files(location: str) -> list[str] | None:
    path = _path(location)
    return sorted(os.listdir(path)) if os.path.isdir(path) else None


def _params(params: dict | None) -> dict:
    return {k: v for k, v in (params or {}).items() if k != "transient_lastDdlTime"}


def _tables(client, names):
    return client.get_table_objects_by_name_req(T.GetTablesRequest(DB, names)).tables


def setup(client) -> None:
    """An unpartitioned table with statistics and a partitioned one with three partitions,
    files in each directory."""
    client.create_database(T.Database(DB, "", None, {}))
    for name in ("flat", "flat2", "bare"):
        flat = text_table(name, DB, "EXTERNAL_TABLE",
                          params=dict(_STATS) if name != "bare" else None)
        flat.partitionKeys = []
        client.create_table(flat)
    client.create_table(text_table("part", DB, "EXTERNAL_TABLE"))
    (flat, flat2, bare, part) = _tables(client, ["flat", "flat2", "bare", "part"])
    for table in (flat, flat2, bare):
        _fill(table.sd.location)
    sd = part.sd
    for day in _DAYS:
        sd.location = None
        client.add_partition(T.Partition([day], DB, "part", 0, 0, sd, dict(_STATS)))
    for p in client.get_partitions(DB, "part", -1):
        _fill(p.sd.location)


def state(client) -> dict:
    """The files and parameters of every table and partition (locations left out)."""
    out = {}
    for table in _tables(client, ["flat", "flat2", "bare", "part"]):
        out[table.tableName] = (_files(table.sd.location), _params(table.parameters))
    for p in client.get_partitions(DB, "part", -1):
        out["part/" + p.values[0]] = (_files(p.sd.location), _params(p.parameters))
    return out


def _answer(call):
    try:
        value = call()
        return ("ok", None if value is None else type(value).__name__)
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))


def cases(c, hive4: bool) -> list:
    """(label, call) in order; each leaves its state for the next one's."""
    out = [
        ("missing table", lambda: c.truncate_table(DB, "nope", None)),
        ("missing database", lambda: c.truncate_table("trunc_nodb", "flat", None)),
        ("unpartitioned", lambda: c.truncate_table(DB, "flat", None)),
        ("unpartitioned, no statistics", lambda: c.truncate_table(DB, "bare", None)),
        ("named partitions, one missing", lambda: c.truncate_table(
            DB, "part", ["ds=2024-01-02", "ds=2099-01-01"])),
    ]
    if hive4:
        out += [
            ("req: missing table", lambda: c.truncate_table_req(
                T.TruncateTableRequest(DB, "nope", None))),
            # a Hive 4 client names the catalog in the request's database (@hive#db)
            ("req: missing table, catalog named", lambda: c.truncate_table_req(
                T.TruncateTableRequest("@hive#" + DB, "nope", None))),
            ("req: named partition, catalog named", lambda: c.truncate_table_req(
                T.TruncateTableRequest("@hive#" + DB, "part", ["ds=2024-01-01"]))),
            ("req: all partitions", lambda: c.truncate_table_req(
                T.TruncateTableRequest(DB, "part", None))),
            ("req: unpartitioned, data kept", lambda: c.truncate_table_req(
                T.TruncateTableRequest("@hive#" + DB, "flat2", None,
                                       environmentContext=T.EnvironmentContext(
                                           {"truncateSkipDataDeletion": "true"})))),
        ]
    else:
        out.append(("all partitions", lambda: c.truncate_table(DB, "part", None)))
    return out


def run(client, hive4: bool) -> list:
    """(label, answer, state after it) of each case on a connection that speaks 3.1 or 4.x."""
    setup(client)
    got = [("set up", None, state(client))]
    for label, call in cases(client, hive4):
        got.append((label, _answer(call), state(client)))
    return got


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} {sa!r} / ours {b!r} {sb!r}"
            for (label, a, sa), (_, b, sb) in zip(stock, ours) if (a, sa) != (b, sb)]
