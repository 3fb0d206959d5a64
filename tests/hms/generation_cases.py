"""Calls with bad or missing arguments, whose answers (or errors: class and message) the stock
HMS 2.3.10, 3.1.3 and 4.0.1 give per client generation: used by
tests/hms/test_stock_hms23_answers.py (a 2.3 client against the stock 2.3.10),
tests/hms/test_catalog_names.py (3.1.3) and tests/hms/test_stock_hms4.py (4.0.1)."""
from __future__ import annotations

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DB = "gen_db"


def setup(client) -> None:
    """A database with an unpartitioned table and a partitioned one with a partition."""
    client.create_database(T.Database(DB, "", None, {}))
    flat = text_table("flat", DB, "EXTERNAL_TABLE")
    flat.partitionKeys = []
    client.create_table(flat)
    part = text_table("part", DB, "EXTERNAL_TABLE")
    client.create_table(part)
    client.add_partition(T.Partition(["a"], DB, "part", 0, 0, part.sd, {}))


def _database_fields(db) -> tuple:
    """What a database answers besides its names and location: its catalog, kind, owner, and
    whether it has a creation time."""
    return (db.catalogName, db.type, bool(db.createTime), db.ownerName, db.ownerType,
            db.managedLocationUri)


def cases(c) -> list:
    """(label, call) on the client ``c``; every call here fails or answers without writing."""
    sd = text_table("x", DB).sd
    return [
        ("get_database null", lambda: c.get_database(None)),
        ("get_database empty", lambda: c.get_database("")),
        ("get_database missing", lambda: c.get_database("gen_nodb")),
        ("get_database fields", lambda: _database_fields(c.get_database(DB))),
        ("get_database default fields", lambda: _database_fields(c.get_database("default"))),
        ("drop_database null", lambda: c.drop_database(None, True, False)),
        ("drop_database missing", lambda: c.drop_database("gen_nodb", True, False)),
        ("alter_database missing", lambda: c.alter_database(
            "gen_nodb", T.Database("gen_nodb", "", None, {}))),
        ("alter_database null", lambda: c.alter_database(None, T.Database("x", "", None, {}))),
        ("get_table_req missing database", lambda: c.get_table_req(
            T.GetTableRequest("gen_nodb", "t"))),
        ("get_partitions_ps missing table", lambda: c.get_partitions_ps(
            DB, "nope", ["a"], -1)),
        ("create_table without a name", lambda: c.create_table(T.Table(
            None, DB, "me", 0, 0, 0, sd, [], {}, None, None, "EXTERNAL_TABLE"))),
        ("create_table without a storage descriptor", lambda: c.create_table(T.Table(
            "nosd", DB, "me", 0, 0, 0, None, [], {}, None, None, "EXTERNAL_TABLE"))),
        ("create_table without columns", lambda: c.create_table(T.Table(
            "nocols", DB, "me", 0, 0, 0, T.StorageDescriptor(
                cols=None, location=None, inputFormat=sd.inputFormat,
                outputFormat=sd.outputFormat, serdeInfo=sd.serdeInfo, bucketCols=[],
                sortCols=[], parameters={}), [], {}, None, None, "EXTERNAL_TABLE"))),
        ("alter_table without a storage descriptor", lambda: c.alter_table(
            DB, "flat", T.Table("flat", DB, "me", 0, 0, 0, None, [], {}, None, None,
                                "EXTERNAL_TABLE"))),
        ("add_partition without a storage descriptor", lambda: c.add_partition(
            T.Partition(["b"], DB, "part", 0, 0, None, {}))),
        ("create_table missing database", lambda: c.create_table(
            text_table("t", "gen_nodb", "EXTERNAL_TABLE"))),
        ("drop_table missing", lambda: c.drop_table(DB, "nope", True)),
        ("drop_table null", lambda: c.drop_table(DB, None, True)),
        ("get_fields missing", lambda: c.get_fields(DB, "nope")),
        ("get_schema missing", lambda: c.get_schema(DB, "nope")),
        ("alter_table missing", lambda: c.alter_table(
            DB, "nope", text_table("nope", DB, "EXTERNAL_TABLE"))),
        ("add_partition missing table", lambda: c.add_partition(
            T.Partition(["a"], DB, "nope", 0, 0, sd, {}))),
        ("get_partition missing", lambda: c.get_partition(DB, "part", ["zz"])),
        ("get_partitions of an unpartitioned table", lambda: c.get_partitions(DB, "flat", -1)),
        ("get_partitions_ps of an unpartitioned table, no values", lambda: c.get_partitions_ps(
            DB, "flat", [], -1)),
        ("get_partitions_ps of an unpartitioned table, a value", lambda: c.get_partitions_ps(
            DB, "flat", ["a"], -1)),
        ("get_partition_names_ps of an unpartitioned table", lambda: c.get_partition_names_ps(
            DB, "flat", [], -1)),
        ("get_partitions_ps_with_auth of an unpartitioned table",
         lambda: c.get_partitions_ps_with_auth(DB, "flat", [], -1, "ann", [])),
        ("get_partition_names of an unpartitioned table", lambda: c.get_partition_names(
            DB, "flat", -1)),
        ("get_partitions_by_filter of an unpartitioned table",
         lambda: c.get_partitions_by_filter(DB, "flat", "ds = 'a'", -1)),
        ("get_partitions_ps of a partitioned table, too many values",
         lambda: c.get_partitions_ps(DB, "part", ["a", "b"], -1)),
        ("get_partitions_ps of a partitioned table, no values", lambda: [
            p.values for p in c.get_partitions_ps(DB, "part", [], -1)]),
        ("get_partitions_ps_with_auth of a partitioned table, no values", lambda: [
            p.values for p in c.get_partitions_ps_with_auth(DB, "part", [], -1, "ann", [])]),
        ("get_partition_names_ps of a partitioned table, no values",
         lambda: c.get_partition_names_ps(DB, "part", [], -1)),
        ("get_partition of an unpartitioned table", lambda: c.get_partition(DB, "flat", [])),
        ("get_num_partitions_by_filter of an unpartitioned table",
         lambda: c.get_num_partitions_by_filter(DB, "flat", "")),
        ("get_table_meta", lambda: [(m.dbName, m.tableName, m.catName)
                                    for m in c.get_table_meta(DB, "*", None)]),
    ]


def answers(client) -> list:
    """(label, answer) of every case on ``client``."""
    out = []
    for label, call in cases(client):
        try:
            out.append((label, ("ok", call())))
        except Exception as exc:  # noqa: BLE001 - the error is the answer compared
            out.append((label, ("error", type(exc).__name__,
                                getattr(exc, "message", str(exc)))))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} / ours {b!r}"
            for (label, a), (_, b) in zip(stock, ours) if a != b]
