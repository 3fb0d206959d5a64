"""Thrift objects as Hive itself would send them, so scenarios stay short and realistic."""

from __future__ import annotations

from tests.support.client import ttypes as T

TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
LAZY_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


def cols(*specs: str) -> list:
    """cols("id int", "name string") -> [FieldSchema, ...]."""
    out = []
    for spec in specs:
        name, typ = spec.split(" ", 1)
        out.append(T.FieldSchema(name=name, type=typ, comment=None))
    return out


def database(name: str, description: str | None = None, location: str | None = None,
             parameters: dict | None = None, owner: str | None = None) -> T.Database:
    return T.Database(name=name, description=description, locationUri=location,
                      parameters=parameters if parameters is not None else {}, ownerName=owner,
                      ownerType=T.PrincipalType.USER if owner else None)


def sd(columns: list, location: str | None = None, **kw) -> T.StorageDescriptor:
    return T.StorageDescriptor(
        cols=columns, location=location, inputFormat=TEXT_INPUT, outputFormat=TEXT_OUTPUT,
        compressed=False, numBuckets=-1,
        serdeInfo=T.SerDeInfo(name=None, serializationLib=LAZY_SERDE,
                              parameters={"serialization.format": "1"}),
        bucketCols=[], sortCols=[], parameters={},
        skewedInfo=T.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}),
        storedAsSubDirectories=False, **kw)


def table(db: str, name: str, columns: list | None = None, partition_keys: list | None = None,
          table_type: str = "MANAGED_TABLE", location: str | None = None,
          parameters: dict | None = None, owner: str = "tester", **kw) -> T.Table:
    params = dict(parameters or {})
    if table_type == "EXTERNAL_TABLE":
        params.setdefault("EXTERNAL", "TRUE")
    return T.Table(tableName=name, dbName=db, owner=owner, createTime=0, lastAccessTime=0,
                   retention=0, sd=sd(columns or cols("id int", "name string"), location),
                   partitionKeys=partition_keys or [], parameters=params, tableType=table_type,
                   **kw)


def view(db: str, name: str, sql: str, columns: list | None = None) -> T.Table:
    """A Hive view: no location, no serde, SQL text in the view fields."""
    t = table(db, name, columns, table_type="VIRTUAL_VIEW", viewOriginalText=sql,
              viewExpandedText=sql)
    t.sd.inputFormat = "org.apache.hadoop.mapred.SequenceFileInputFormat"
    t.sd.outputFormat = "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat"
    t.sd.serdeInfo = T.SerDeInfo(name=None, serializationLib=None, parameters={})
    return t


def partition(tbl: T.Table, values: list[str], location: str | None = None,
              parameters: dict | None = None) -> T.Partition:
    """A partition of `tbl` reusing its storage descriptor, as Hive clients do."""
    psd = sd(tbl.sd.cols, location)
    return T.Partition(values=values, dbName=tbl.dbName, tableName=tbl.tableName, createTime=0,
                       lastAccessTime=0, sd=psd, parameters=dict(parameters or {}))


def function(db: str, name: str, class_name: str = "com.example.Upper", **kw) -> T.Function:
    return T.Function(functionName=name, dbName=db, className=class_name,
                      ownerName=kw.get("owner", "tester"), ownerType=T.PrincipalType.USER,
                      createTime=0, functionType=T.FunctionType.JAVA,
                      resourceUris=kw.get("resources", [T.ResourceUri(T.ResourceType.JAR,
                                                                      "file:/tmp/udf.jar")]))


def long_stats(col: str, low: int, high: int, nulls: int, ndv: int) -> T.ColumnStatisticsObj:
    data = T.ColumnStatisticsData(longStats=T.LongColumnStatsData(
        lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv))
    return T.ColumnStatisticsObj(colName=col, colType="bigint", statsData=data)


def string_stats(col: str, max_len: int, avg_len: float, nulls: int, ndv: int) -> T.ColumnStatisticsObj:
    data = T.ColumnStatisticsData(stringStats=T.StringColumnStatsData(
        maxColLen=max_len, avgColLen=avg_len, numNulls=nulls, numDVs=ndv))
    return T.ColumnStatisticsObj(colName=col, colType="string", statsData=data)


def double_stats(col: str, low: float, high: float, nulls: int, ndv: int) -> T.ColumnStatisticsObj:
    data = T.ColumnStatisticsData(doubleStats=T.DoubleColumnStatsData(
        lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv))
    return T.ColumnStatisticsObj(colName=col, colType="double", statsData=data)


def table_stats(db: str, tbl: str, *objs) -> T.ColumnStatistics:
    desc = T.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=tbl, lastAnalyzed=1700000000)
    return T.ColumnStatistics(statsDesc=desc, statsObj=list(objs))


def partition_stats(db: str, tbl: str, part_name: str, *objs) -> T.ColumnStatistics:
    desc = T.ColumnStatisticsDesc(isTblLevel=False, dbName=db, tableName=tbl, partName=part_name,
                                  lastAnalyzed=1700000000)
    return T.ColumnStatistics(statsDesc=desc, statsObj=list(objs))
