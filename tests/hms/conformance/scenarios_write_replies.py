"""What the write calls that answer with an object send back, for sparse requests.

Hive fills every field of a storage descriptor; other clients (pyiceberg, Trino, hand-written
tools) leave optional ones unset. HMS answers add_partition and its relatives with the object
it was sent, filled in only where it sets something itself (location, times, parameters), and
stores the object with every collection present: the reply and a later get differ, and both are
compared here.
"""

from __future__ import annotations

from tests.hms.conformance.builders import (
    LAZY_SERDE,
    TEXT_INPUT,
    TEXT_OUTPUT,
    cols,
    database,
    table,
)
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T


def sparse_sd(columns, location=None, **kw) -> T.StorageDescriptor:
    """A storage descriptor with only what a minimal client sets."""
    return T.StorageDescriptor(cols=columns, location=location, inputFormat=TEXT_INPUT,
                               outputFormat=TEXT_OUTPUT,
                               serdeInfo=T.SerDeInfo(serializationLib=LAZY_SERDE), **kw)


def sparse_partition(tbl, values, location=None, parameters=None, **sd_kw) -> T.Partition:
    return T.Partition(values=values, dbName=tbl.dbName, tableName=tbl.tableName,
                       sd=sparse_sd(tbl.sd.cols, location, **sd_kw), parameters=parameters)


@scenario
def write_replies_add_partition_sparse(c, rec):
    rec.call("create_database", database("wr_db"))
    t = table("wr_db", "pt", cols("a string", "b int"), partition_keys=cols("ds string", "hr int"))
    rec.call("create_table", t)
    rec.call("add_partition", sparse_partition(t, ["2024-01-01", "1"]), label="add_partition sparse")
    rec.call("get_partition", "wr_db", "pt", ["2024-01-01", "1"])
    rec.call("add_partition", sparse_partition(t, ["a/b:c%=d", "2"]),
             label="add_partition sparse, escaped value")
    rec.call("get_partition", "wr_db", "pt", ["a/b:c%=d", "2"])
    rec.call("add_partition", sparse_partition(t, ["2024-01-01", "3"], parameters={"k": "v"},
                                                 numBuckets=4, bucketCols=["a"]),
             label="add_partition sparse, buckets and parameters")
    rec.call("get_partition", "wr_db", "pt", ["2024-01-01", "3"])
    rec.call("add_partition", sparse_partition(t, ["2024-01-01", "4"],
                                                 location=rec.scratch("wr_custom")),
             label="add_partition sparse, own location")
    rec.call("get_partition", "wr_db", "pt", ["2024-01-01", "4"])
    p = sparse_partition(t, ["2024-01-01", "5"])
    p.sd.cols = cols("A string", "B int")
    rec.call("add_partition", p, label="add_partition sparse, upper-case columns")
    rec.call("get_partition", "wr_db", "pt", ["2024-01-01", "5"])
    p = sparse_partition(t, ["2024-01-01", "6"])
    p.sd.skewedInfo = T.SkewedInfo(skewedColNames=["a"])
    rec.call("add_partition", p, label="add_partition sparse skewedInfo")
    rec.call("get_partition", "wr_db", "pt", ["2024-01-01", "6"])
    p = sparse_partition(t, ["2024-01-01", "7"])
    p.dbName, p.tableName = "WR_DB", "PT"
    rec.call("add_partition", p, label="add_partition upper-case names")
    rec.call("add_partition_with_environment_context", sparse_partition(t, ["2024-01-01", "8"]),
             T.EnvironmentContext(properties={"k": "v"}), label="add_partition_with_env sparse")
    rec.call("get_partition", "wr_db", "pt", ["2024-01-01", "8"])


@scenario
def write_replies_add_partitions_sparse(c, rec):
    rec.call("create_database", database("wrs_db"))
    t = table("wrs_db", "pt", cols("a string"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("add_partitions", [sparse_partition(t, ["1"]), sparse_partition(t, ["2"])])
    req = T.AddPartitionsRequest(dbName="wrs_db", tblName="pt",
                                 parts=[sparse_partition(t, ["3"]),
                                        sparse_partition(t, ["x y/z"], parameters={"k": "v"})],
                                 ifNotExists=True, needResult=True)
    rec.call("add_partitions_req", req, label="add_partitions_req sparse needResult")
    req = T.AddPartitionsRequest(dbName="wrs_db", tblName="pt",
                                 parts=[sparse_partition(t, ["3"]), sparse_partition(t, ["4"])],
                                 ifNotExists=True, needResult=True)
    rec.call("add_partitions_req", req, label="add_partitions_req sparse, one existing")
    rec.call("get_partitions", "wrs_db", "pt", -1)
    rec.call("append_partition", "wrs_db", "pt", ["5"])
    rec.call("append_partition_by_name", "wrs_db", "pt", "ds=6")
    rec.call("append_partition_with_environment_context", "wrs_db", "pt", ["7"],
             T.EnvironmentContext(properties={}))
    rec.call("append_partition_by_name_with_environment_context", "wrs_db", "pt", "ds=8", None)


@scenario
def write_replies_create_table_sparse(c, rec):
    rec.call("create_database", database("wrt_db"))
    t = T.Table(tableName="Sparse", dbName="wrt_db", sd=sparse_sd(cols("A string", "b int")),
                partitionKeys=cols("DS string"), tableType="MANAGED_TABLE")
    rec.call("create_table", t, label="create_table sparse")
    rec.call("get_table", "wrt_db", "sparse")
    t = T.Table(tableName="sparse_ext", dbName="wrt_db", sd=sparse_sd(cols("a string")),
                tableType="EXTERNAL_TABLE", parameters={"EXTERNAL": "TRUE"})
    rec.call("create_table_with_environment_context", t, T.EnvironmentContext(properties={}),
             label="create_table_with_env sparse external")
    rec.call("get_table", "wrt_db", "sparse_ext")
    src = T.Table(tableName="src", dbName="wrt_db", sd=sparse_sd(cols("a string")),
                  partitionKeys=cols("ds string"), tableType="MANAGED_TABLE")
    dst = T.Table(tableName="dst", dbName="wrt_db", sd=sparse_sd(cols("a string")),
                  partitionKeys=cols("ds string"), tableType="MANAGED_TABLE")
    rec.call("create_table", src)
    rec.call("create_table", dst)
    rec.call("add_partition", sparse_partition(src, ["1"]))
    rec.call("exchange_partition", {"ds": "1"}, "wrt_db", "src", "wrt_db", "dst",
             label="exchange_partition of a sparse partition")
    rec.call("get_partition", "wrt_db", "dst", ["1"])


@scenario
def write_replies_exchange_and_index_sparse(c, rec):
    db = "wrx_db"
    rec.call("create_database", database(db))
    for name in ("src", "dst"):
        rec.call("create_table", T.Table(tableName=name, dbName=db, sd=sparse_sd(cols("a string")),
                                         partitionKeys=cols("ds string", "hr string"),
                                         tableType="MANAGED_TABLE"))
    for hr in ("1", "2"):
        rec.call("add_partition", T.Partition(values=["x", hr], dbName=db, tableName="src",
                                              sd=sparse_sd(cols("a string"))))
    rec.call("exchange_partitions", {"ds": "x"}, db, "src", db, "dst",
             label="exchange_partitions of sparse partitions")
    rec.call("get_partitions", db, "dst", -1)
    rec.call("create_table", T.Table(tableName="base", dbName=db, sd=sparse_sd(cols("id int")),
                                     tableType="MANAGED_TABLE"))
    idx_table = T.Table(tableName=f"{db}__base_i__", dbName=db,
                        sd=sparse_sd(cols("id int", "_bucketname string",
                                          "_offsets array<bigint>")),
                        tableType="INDEX_TABLE")
    index = T.Index(indexName="i", indexHandlerClass="compact", dbName=db, origTableName="base",
                    indexTableName=f"{db}__base_i__", sd=sparse_sd(cols("id int")))
    rec.call("add_index", index, idx_table, label="add_index sparse")
    rec.call("get_index_by_name", db, "base", "i")
    rec.call("get_table", db, f"{db}__base_i__")
