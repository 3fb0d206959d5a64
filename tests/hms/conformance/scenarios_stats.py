"""Column statistics: table and partition level, requests, aggregates, deletes."""

from __future__ import annotations

from tests.hms.conformance.builders import (
    cols,
    database,
    double_stats,
    long_stats,
    partition,
    partition_stats,
    string_stats,
    table,
    table_stats,
)
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T


def by_col(stats):
    """Stats objects come back in no specified order: sort them by column name."""
    return sorted(stats, key=lambda o: o.colName) if stats is not None else None


def set_fields(union):
    """Which member(s) of a Thrift union are set."""
    return sorted(k for k, v in vars(union).items() if v is not None)


def params(t):
    return t.parameters


@scenario
def stats_table(c, rec):
    rec.call("create_database", database("cfst_db"))
    rec.call("create_table", table("cfst_db", "t", cols("id bigint", "name string", "score double")))
    rec.call("update_table_column_statistics", table_stats(
        "cfst_db", "t", long_stats("id", 1, 100, 0, 100), string_stats("name", 20, 7.5, 3, 50)))
    rec.call("get_table", "cfst_db", "t", transform=params, label="table parameters after stats")
    rec.call("get_table_column_statistics", "cfst_db", "t", "id")
    rec.call("get_table_column_statistics", "cfst_db", "t", "ID", label="get_table_column_statistics upper")
    rec.call("get_table_column_statistics", "cfst_db", "t", "score", msg=True)
    rec.call("get_table_column_statistics", "cfst_db", "t", "nocol", msg=True)
    rec.call("get_table_statistics_req", T.TableStatsRequest("cfst_db", "t", ["id", "name", "score", "nocol"]),
             transform=lambda r: by_col(r.tableStats))
    rec.call("get_table_statistics_req", T.TableStatsRequest("cfst_db", "t", []))
    rec.call("update_table_column_statistics", table_stats(
        "cfst_db", "t", long_stats("id", -5, 50, 1, 10), double_stats("score", 0.5, 9.5, 0, 7)),
        label="update again (merge or replace?)")
    rec.call("get_table_statistics_req", T.TableStatsRequest("cfst_db", "t", ["id", "name", "score"]),
             transform=lambda r: by_col(r.tableStats))
    rec.call("update_table_column_statistics", table_stats("cfst_db", "t", long_stats("nocol", 1, 2, 0, 1)),
             label="update stats of missing column", msg=True)
    rec.call("update_table_column_statistics", table_stats("cfst_db", "missing", long_stats("id", 1, 2, 0, 1)),
             label="update stats of missing table", msg=True)
    rec.call("update_table_column_statistics", table_stats("cfst_db", "t", string_stats("id", 1, 1.0, 0, 1)),
             label="update stats of wrong kind")
    # HMS keeps the old row's type and mixes old and new fields here; only the shape is compared.
    rec.call("get_table_column_statistics", "cfst_db", "t", "id", label="after wrong kind",
             transform=lambda cs: [(o.colName, o.colType, set_fields(o.statsData)) for o in cs.statsObj])
    rec.call("delete_table_column_statistics", "cfst_db", "t", "id")
    rec.call("delete_table_column_statistics", "cfst_db", "t", "id", label="delete again", msg=True)
    rec.call("get_table_statistics_req", T.TableStatsRequest("cfst_db", "t", ["id", "name", "score"]),
             transform=lambda r: by_col(r.tableStats))
    rec.call("delete_table_column_statistics", "cfst_db", "t", None, label="delete all columns")
    rec.call("get_table_statistics_req", T.TableStatsRequest("cfst_db", "t", ["id", "name", "score"]),
             transform=lambda r: by_col(r.tableStats))
    rec.call("get_table", "cfst_db", "t", transform=params, label="table parameters after delete")
    rec.call("delete_table_column_statistics", "cfst_db", "missing", "id", msg=True)


@scenario
def stats_partitions(c, rec):
    rec.call("create_database", database("cfsp_db"))
    t = table("cfsp_db", "pt", cols("id bigint", "name string"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("add_partitions", [partition(t, [d]) for d in ["d1", "d2", "d3"]])
    rec.call("update_partition_column_statistics", partition_stats(
        "cfsp_db", "pt", "ds=d1", long_stats("id", 1, 10, 0, 10), string_stats("name", 5, 3.0, 1, 4)))
    rec.call("update_partition_column_statistics", partition_stats(
        "cfsp_db", "pt", "ds=d2", long_stats("id", 5, 50, 2, 20)))
    rec.call("get_partition", "cfsp_db", "pt", ["d1"], transform=lambda p: p.parameters,
             label="partition parameters after stats")
    rec.call("get_partition_column_statistics", "cfsp_db", "pt", "ds=d1", "id")
    rec.call("get_partition_column_statistics", "cfsp_db", "pt", "ds=d3", "id", msg=True)
    rec.call("get_partition_column_statistics", "cfsp_db", "pt", "ds=zz", "id", msg=True)
    req = T.PartitionsStatsRequest("cfsp_db", "pt", ["id", "name"], ["ds=d1", "ds=d2", "ds=d3", "ds=zz"])
    rec.call("get_partitions_statistics_req", req,
             transform=lambda r: {k: by_col(v) for k, v in r.partStats.items()})
    rec.call("get_aggr_stats_for", req, transform=lambda r: (by_col(r.colStats), r.partsFound))
    req2 = T.PartitionsStatsRequest("cfsp_db", "pt", ["id"], ["ds=d1", "ds=d2"])
    rec.call("get_aggr_stats_for", req2, label="get_aggr_stats_for id over d1,d2")
    rec.call("get_aggr_stats_for", T.PartitionsStatsRequest("cfsp_db", "pt", ["id"], []),
             label="get_aggr_stats_for no partitions")
    rec.call("update_partition_column_statistics", partition_stats(
        "cfsp_db", "pt", "ds=zz", long_stats("id", 1, 2, 0, 1)), label="update stats of missing partition",
        msg=True)
    rec.call("update_partition_column_statistics", partition_stats(
        "cfsp_db", "pt", "ds=d1", long_stats("ds", 1, 2, 0, 1)), label="update stats of partition column",
        msg=True)
    rec.call("set_aggr_stats_for", T.SetPartitionsStatsRequest([partition_stats(
        "cfsp_db", "pt", "ds=d3", long_stats("id", 7, 8, 0, 2))]))
    rec.call("get_partition_column_statistics", "cfsp_db", "pt", "ds=d3", "id")
    rec.call("delete_partition_column_statistics", "cfsp_db", "pt", "ds=d1", "id")
    rec.call("delete_partition_column_statistics", "cfsp_db", "pt", "ds=d1", "id", label="delete again",
             msg=True)
    rec.call("get_partitions_statistics_req", req,
             transform=lambda r: {k: by_col(v) for k, v in r.partStats.items()}, label="after delete")
    rec.call("drop_partition", "cfsp_db", "pt", ["d2"], True)
    rec.call("get_partitions_statistics_req", req,
             transform=lambda r: {k: by_col(v) for k, v in r.partStats.items()}, label="after drop d2")


@scenario
def stats_last_analyzed_is_the_update_time(c, rec):
    """HMS ignores the client's lastAnalyzed and stamps the time of the update (table,
    partition and set_aggr_stats_for alike)."""
    import time

    from tests.hms.conformance.builders import cols, database, partition, table
    from tests.support.client import ttypes as T

    db = "cfstats_la"
    rec.call("create_database", database(db))
    t = table(db, "p", cols("id bigint"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("create_table", table(db, "u", cols("id bigint")))
    for ds in ("1", "2"):
        rec.call("add_partition", partition(t, [ds]))
    obj = T.ColumnStatisticsObj("id", "bigint", T.ColumnStatisticsData(
        longStats=T.LongColumnStatsData(1, 5, 0, 3)))
    before = int(time.time())

    def fresh(stats):
        return stats.statsDesc.lastAnalyzed >= before if stats else None

    rec.call("update_table_column_statistics",
             T.ColumnStatistics(T.ColumnStatisticsDesc(True, db, "u", None, 12345), [obj]))
    rec.call("get_table_column_statistics", db, "u", "id", transform=fresh,
             label="table stats stamped now")
    rec.call("update_partition_column_statistics",
             T.ColumnStatistics(T.ColumnStatisticsDesc(False, db, "p", "ds=1", 12345), [obj]))
    rec.call("get_partition_column_statistics", db, "p", "ds=1", "id", transform=fresh,
             label="partition stats stamped now")
    rec.call("set_aggr_stats_for", T.SetPartitionsStatsRequest(
        [T.ColumnStatistics(T.ColumnStatisticsDesc(False, db, "p", "ds=2", 777), [obj])]))
    rec.call("get_partition_column_statistics", db, "p", "ds=2", "id", transform=fresh,
             label="set_aggr_stats_for stamped now")
    rec.call("drop_database", db, True, True)
