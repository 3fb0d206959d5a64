"""Partition calls with null, empty or wrong arguments as a Hive 4.0.1 client sends them (the
calls of its HiveMetaStoreClient: request structs, database names carrying the catalog,
``@hive#db``), run the same on the stock HMS 4.0.1 and on us: each case in a database of its
own, with a managed table ``t`` partitioned by (year, month) holding 2017/march and a view
``v`` partitioned the same way. What is compared: the answer (reduced to what does not depend
on the server: names, values, locations relative to the table) or the error (class and
message, the warehouse's path left out), then the partition names of ``t`` and ``v``.
Used by tests/hms/test_stock_hms4.py (4.0.1)."""
from __future__ import annotations

import os
import re
from urllib.parse import urlparse

from hms_proxy.thrift.gen.hive_metastore import ttypes as T

KEYS = [T.FieldSchema("year", "string", None), T.FieldSchema("month", "string", None)]
COLS = [T.FieldSchema("id", "bigint", None), T.FieldSchema("v", "string", None)]
SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


def _q(db):
    """The database name as a Hive 3.1/4.x client sends it (prependCatalogToDbName)."""
    return "@hive#" + ("" if db is None else db or "!")


def _sd(location=None, cols=COLS, serde=SERDE):
    return T.StorageDescriptor(
        cols=cols, location=location,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=None if serde is None else T.SerDeInfo("s", serde, {}),
        bucketCols=[], sortCols=[], parameters={})


def _setup(c, db):
    c.create_database(T.Database(db, "", None, {}))
    t = T.Table("t", db, "ann", 0, 0, 0, _sd(), list(KEYS), {}, None, None, "MANAGED_TABLE")
    c.create_table_req(T.CreateTableRequest(table=t))
    v = T.Table("v", db, "ann", 0, 0, 0, _sd(), list(KEYS), {}, "select 1", "select 1",
                "VIRTUAL_VIEW")
    c.create_table_req(T.CreateTableRequest(table=v))
    c.add_partition(T.Partition(["2017", "march"], db, "t", 0, 0, _sd(), {}))


def _part(db, tbl, values, sd=None, **fields):
    p = T.Partition(list(values), db, tbl, 0, 0, _sd() if sd is None else sd, {})
    for k, v in fields.items():
        setattr(p, k, v)
    return p


def _p(p):
    """What of a partition is compared."""
    if p is None:
        return None
    sd = p.sd
    cols = None if sd is None else (None if sd.cols is None else [(f.name, f.type) for f in sd.cols])
    loc = None if sd is None or sd.location is None else re.sub(r"^.*?/(t|v)(/|$)", r"\1\2",
                                                                sd.location)
    return (p.values, p.dbName, p.tableName, cols, loc)  # (catName: hive's is not named)


def _ps(parts):
    return None if parts is None else [_p(p) for p in parts]


def _names_req(db, tbl, names):
    return T.GetPartitionsByNamesRequest(db_name=db, tbl_name=tbl, names=names)


def cases() -> list:
    """(label, call(client, db)); ``db`` is the case's database name, unqualified."""
    name = "year=2017/month=march"
    filt = 'year = "2017"'
    return [
        # a. null or empty names
        ("get_partition_by_name null db", lambda c, db: _p(c.get_partition_by_name(
            _q(None), "t", name))),
        ("get_partition_by_name null table", lambda c, db: _p(c.get_partition_by_name(
            _q(db), None, name))),
        ("get_partition_by_name null name", lambda c, db: _p(c.get_partition_by_name(
            _q(db), "t", None))),
        ("get_partition_by_name empty name", lambda c, db: _p(c.get_partition_by_name(
            _q(db), "t", ""))),
        ("get_partition_with_auth null db", lambda c, db: _p(c.get_partition_with_auth(
            _q(None), "t", ["2017", "march"], "ann", ["g"]))),
        ("get_partition_with_auth null table", lambda c, db: _p(c.get_partition_with_auth(
            _q(db), None, ["2017", "march"], "ann", ["g"]))),
        ("get_partition_with_auth empty db", lambda c, db: _p(c.get_partition_with_auth(
            _q(""), "t", ["2017", "march"], "ann", ["g"]))),
        ("get_partitions_by_filter_req empty table", lambda c, db: _ps(
            c.get_partitions_by_filter_req(T.GetPartitionsByFilterRequest(
                catName="hive", dbName=db, tblName=" ", filter=filt, maxParts=-1)))),
        ("get_partitions_by_filter_req null db", lambda c, db: _ps(
            c.get_partitions_by_filter_req(T.GetPartitionsByFilterRequest(
                catName="hive", dbName=None, tblName="t", filter=filt, maxParts=-1)))),
        ("get_partitions_by_filter_req null table", lambda c, db: _ps(
            c.get_partitions_by_filter_req(T.GetPartitionsByFilterRequest(
                catName="hive", dbName=db, tblName=None, filter=filt, maxParts=-1)))),
        ("get_num_partitions_by_filter null db", lambda c, db: c.get_num_partitions_by_filter(
            _q(None), "t", filt)),
        ("get_num_partitions_by_filter null table", lambda c, db:
            c.get_num_partitions_by_filter(_q(db), None, filt)),
        ("fetch_partition_names_req empty db", lambda c, db: c.fetch_partition_names_req(
            T.PartitionsRequest(dbName="", tblName="t", catName="hive", maxParts=-1))),
        ("fetch_partition_names_req empty table", lambda c, db: c.fetch_partition_names_req(
            T.PartitionsRequest(dbName=db, tblName="", catName="hive", maxParts=-1))),
        ("get_partitions_pspec null db", lambda c, db: len(c.get_partitions_pspec(
            _q(None), "t", -1))),
        ("append_partition_req empty name", lambda c, db: _p(c.append_partition_req(
            T.AppendPartitionsRequest(dbName=db, tableName="t", name="",
                                      catalogName="hive")))),
        ("append_partition_req view", lambda c, db: _p(c.append_partition_req(
            T.AppendPartitionsRequest(dbName=db, tableName="v", partVals=["2018", "may"],
                                      catalogName="hive")))),
        ("append_partition_req view, by name", lambda c, db: _p(c.append_partition_req(
            T.AppendPartitionsRequest(dbName=db, tableName="v", name="year=2018/month=may",
                                      catalogName="hive")))),
        ("drop_partition_req empty name", lambda c, db: c.drop_partition_req(
            T.DropPartitionRequest(dbName=db, tblName="t", partName="", catName="hive",
                                   deleteData=True))),
        ("drop_partition_req null name", lambda c, db: c.drop_partition_req(
            T.DropPartitionRequest(dbName=db, tblName="t", catName="hive", deleteData=True))),
        # b. get_partitions_by_names and unknown catalogs
        ("get_partitions_by_names_req bogus catalog", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req("@bogus#" + db, "t", [name])).partitions)),
        ("get_partitions_by_names_req missing db", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q("nodb"), "t", [name])).partitions)),
        ("get_partitions_by_names_req missing table", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q(db), "nope", [name])).partitions)),
        ("get_partitions_by_names_req empty db", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q(""), "t", [name])).partitions)),
        ("get_partitions_by_names_req null db", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q(None), "t", [name])).partitions)),
        ("get_partitions_by_names_req missing table, null names", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q(db), "nope", None)).partitions)),
        ("get_partitions_by_names_req null names", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q(db), "t", None)).partitions)),
        ("get_partitions_by_names_req", lambda c, db: _ps(
            c.get_partitions_by_names_req(_names_req(_q(db), "t", [name, "year=1/month=2"]))
            .partitions)),
        ("get_table_names_by_filter empty catalog", lambda c, db: c.get_table_names_by_filter(
            "@#" + db, 'hive_filter_field_params__k = "v"', -1)),
        # c. add_partition(s)
        ("add_partition view, location", lambda c, db: _added(c, db, "v", [_part(
            db, "v", ["2018", "may"], _sd("file:/tmp/parg-view-part"))], one=True)),
        ("add_partition view, no location", lambda c, db: _added(c, db, "v", [_part(
            db, "v", ["2018", "may"])], one=True)),
        ("add_partitions view, no location", lambda c, db: _added(c, db, "v", [_part(
            db, "v", ["2018", "may"])])),
        ("add_partitions view, null sd", lambda c, db: _added(c, db, "v", [T.Partition(
            ["2018", "may"], db, "v", 0, 0, None, {})])),
        ("add_partition empty serde", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _with(_sd(), serdeInfo=T.SerDeInfo()))], one=True)),
        ("add_partition null serde", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _sd(serde=None))], one=True)),
        ("add_partitions empty serde", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _with(_sd(), serdeInfo=T.SerDeInfo()))])),
        ("add_partition null column name", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _sd(cols=[T.FieldSchema(None, "string", "")]))],
            one=True)),
        ("add_partitions null column name", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _sd(cols=[T.FieldSchema(None, "string", "")]))])),
        ("add_partition null columns", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _sd(cols=None))], one=True)),
        ("add_partitions null columns", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _sd(cols=None))], read=True)),
        ("add_partition invalid location", lambda c, db: _added(c, db, "t", [_part(
            db, "t", ["2018", "may"], _sd("invalidhost:80000/wrongfolder"))], one=True)),
        ("add_partitions invalid location", lambda c, db: _added(c, db, "t", [
            _part(db, "t", ["2018", m], _sd(None if m != "c" else "invalidhost:80000/x"))
            for m in "abcde"])),
        ("add_partitions relative file location", lambda c, db: _added(c, db, "t", [
            _part(db, "t", ["2018", "may"], _sd("file:./year2002"))])),
        ("add_partitions upper-case names in one", lambda c, db: _added(c, db, "t", [
            _part(db, "t", ["2018", "may"]), _part(db.upper(), "T", ["2018", "june"])])),
        ("add_partitions upper-case names in all", lambda c, db: _added(c, db.upper(), "T", [
            _part(db.upper(), "T", ["2018", "may"]), _part(db.upper(), "T", ["2018", "june"])])),
        # d. add_partitions_pspec
        ("add_partitions_pspec null db", lambda c, db: c.add_partitions_pspec([_spec(
            None, "t", [_part(db, "t", ["2018", "may"])])])),
        ("add_partitions_pspec null table", lambda c, db: c.add_partitions_pspec([_spec(
            db, None, [_part(db, "t", ["2018", "may"])])])),
        ("add_partitions_pspec null names in the partition", lambda c, db:
            c.add_partitions_pspec([_spec(db, "t", [_part(None, None, ["2018", "may"])])])),
        ("add_partitions_pspec missing table", lambda c, db: c.add_partitions_pspec([_spec(
            db, "nope", [_part(db, "nope", ["2018", "may"])])])),
        ("add_partitions_pspec view, null sd", lambda c, db: c.add_partitions_pspec([_spec(
            db, "v", [T.Partition(["2018", "may"], db, "v", 0, 0, None, {})])])),
        ("add_partitions_pspec view, location", lambda c, db: c.add_partitions_pspec([_spec(
            db, "v", [_part(db, "v", ["2018", "may"], _sd("file:/tmp/parg-view-part"))])])),
        ("add_partitions_pspec invalid location", lambda c, db: c.add_partitions_pspec([_spec(
            db, "t", [_part(db, "t", ["2018", m], _sd(None if m != "c" else
                                                      "invalidhost:80000/x"))
                      for m in "abcde"])])),
        ("add_partitions_pspec upper-case names in one", lambda c, db: c.add_partitions_pspec([
            _spec(db, "t", [_part(db, "t", ["2018", "may"]),
                            _part(db.upper(), "T", ["2018", "june"])])])),
        ("add_partitions_pspec shared sd, no values", lambda c, db: c.add_partitions_pspec([
            _shared(db, [T.PartitionWithoutSD(relativePath="p")], "file:/tmp/parg-s/")])),
        ("add_partitions_pspec shared sd, empty location", lambda c, db:
            c.add_partitions_pspec([_shared(db, [_wsd(["2018", "may"])], "")])),
        ("add_partitions_pspec shared sd, null location", lambda c, db:
            c.add_partitions_pspec([_shared(db, [_wsd(["2018", "may"])], None)])),
        ("add_partitions_pspec shared sd, bare sd", lambda c, db: c.add_partitions_pspec([
            _shared(db, [_wsd(["2018", "may"])], None,
                    T.StorageDescriptor(location="file:/tmp/parg-bare/"))])),
        ("drop_partition_req archived partition", _drop_archived),
        # e. alter and rename
        ("alter_partitions_req changed db", lambda c, db: _altered(c, db, dbName=db + "_x")),
        ("alter_partitions_req changed table", lambda c, db: _altered(c, db, tableName="t2")),
        ("alter_partitions_req null db", lambda c, db: _altered(c, db, dbName=None)),
        ("alter_partitions_req upper-case names", lambda c, db: _altered(
            c, db, dbName=db.upper(), tableName="T")),
        ("rename_partition_req changed db", lambda c, db: _renamed(c, db, dbName=db + "_x")),
        ("rename_partition_req changed table", lambda c, db: _renamed(c, db, tableName="t2")),
        ("rename_partition_req null db", lambda c, db: _renamed(c, db, dbName=None)),
        ("rename_partition_req null table", lambda c, db: _renamed(c, db, tableName=None)),
        ("rename_partition_req times", lambda c, db: _renamed(
            c, db, createTime=123456789, lastAccessTime=123456789)),
    ]


def _drop_archived(c, db):
    """An archived partition dropped with its data: HMS deletes its original directory (the
    ``original_location`` parameter) and leaves its own."""
    root = urlparse(c.get_table_req(T.GetTableRequest(db, "t")).table.sd.location).path
    original, own = os.path.join(root, "2016_may"), os.path.join(root, "year=2016/month=may")
    for path in (original, own):
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "f"), "w") as f:
            f.write("1\n")
    c.add_partition(T.Partition(["2016", "may"], db, "t", 0, 0, _sd("file:" + own), {
        "is_archived": "true", "original_location": "file:" + original}))
    c.drop_partition_req(T.DropPartitionRequest(dbName=db, tblName="t", catName="hive",
                                                partVals=["2016", "may"], deleteData=True))
    return os.path.exists(original), os.path.exists(own)


def _spec(db, tbl, parts):
    for p in parts:
        p.catName = "hive"
    return T.PartitionSpec(dbName=db, tableName=tbl, catName="hive",
                           partitionList=T.PartitionListComposingSpec(partitions=parts))


def _wsd(values):
    return T.PartitionWithoutSD(values=values, createTime=0, lastAccessTime=0,
                                relativePath="year2002", parameters={"k": "v"})


def _shared(db, parts, location, sd=None):
    sd = _sd(location) if sd is None else sd
    return T.PartitionSpec(dbName=db, tableName="t", catName="hive",
                           sharedSDPartitionSpec=T.PartitionSpecWithSharedSD(
                               partitions=parts, sd=sd))


def _got(c, db):
    p = c.get_partition_req(T.GetPartitionRequest(
        catName="hive", dbName=db, tblName="t", partVals=["2017", "march"])).partition
    return _p(p), p.lastAccessTime


def _altered(c, db, **fields):
    p = c.get_partition_req(T.GetPartitionRequest(
        catName="hive", dbName=db, tblName="t", partVals=["2017", "march"])).partition
    p.lastAccessTime = 42
    _with(p, **fields)
    c.alter_partitions_req(T.AlterPartitionsRequest(
        catName="hive", dbName=db, tableName="t", partitions=[p], writeId=-1))
    return _got(c, db)


def _renamed(c, db, **fields):
    p = c.get_partition_req(T.GetPartitionRequest(
        catName="hive", dbName=db, tblName="t", partVals=["2017", "march"])).partition
    p.values = ["2019", "june"]
    _with(p, **fields)
    c.rename_partition_req(T.RenamePartitionRequest(
        catName="hive", dbName=db, tableName="t", partVals=["2017", "march"], newPart=p))
    p = c.get_partition_req(T.GetPartitionRequest(
        catName="hive", dbName=db, tblName="t", partVals=["2019", "june"])).partition
    return _p(p), p.createTime == 123456789, p.lastAccessTime


def _with(obj, **fields):
    for k, v in fields.items():
        setattr(obj, k, v)
    return obj


def _added(c, db, tbl, parts, one=False, read=False):
    """add_partition(s) as the 4.x client calls them: add_partitions_req, the answer wanted
    for one partition (add_partition), not for several (add_partitions)."""
    for p in parts:
        p.catName = "hive"
    req = T.AddPartitionsRequest(dbName=db, tblName=tbl, parts=parts, ifNotExists=False,
                                 needResult=one, catName="hive")
    got = c.add_partitions_req(req)
    if read:
        return _ps(c.get_partitions_by_names_req(_names_req(
            _q(db), tbl, ["year=2018/month=may"])).partitions)
    return _ps(got.partitions) if one else None


def _answer(call):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        text = getattr(exc, "message", None) or str(exc)
        text = re.sub(r"(file:)?/[^ ]*/(warehouse|stock-hms|ours)[^ ,)]*", "<path>", str(text))
        text = re.sub(r"(createTime|lastAccessTime):\d+", r"\1:N", text)
        text = re.sub(r"transient_lastDdlTime=\d+", "transient_lastDdlTime=N", text)
        return ("error", type(exc).__name__, text)
    return ("ok", value)


def _state(c, db):
    out = []
    for tbl in ("t", "v"):
        try:
            out.append(sorted(c.get_partition_names(_q(db), tbl, -1)))
        except Exception as exc:  # noqa: BLE001
            out.append(type(exc).__name__)
    return out


def run(connection) -> list:
    """(label, answer, partitions after) of every case, each in a database and on a
    connection of its own (``connection()`` yields a client that speaks 4.x)."""
    out = []
    for i, (label, call) in enumerate(cases()):
        db = f"parg_{i}"
        with connection() as c:
            _setup(c, db)
            answer = _answer(lambda: call(c, db))
        with connection() as c:
            out.append((label, answer, _state(c, db)))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} {sa!r} / ours {b!r} {sb!r}"
            for (label, a, sa), (_, b, sb) in zip(stock, ours) if (a, sa) != (b, sb)]
