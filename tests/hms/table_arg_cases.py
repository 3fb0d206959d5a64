"""Tables, databases and catalogs as Hive 4's own metastore client tests
(org.apache.hadoop.hive.metastore.client.TestTablesCreateDropAlterTruncate, TestTablesGetExists,
TestDatabases, TestCatalogs) send them: create_table_req with null or odd fields (no type, no
database, no SerDeInfo, a null column type, a file system's root as location), alter_table_req
with a null name, database, columns, column type, SerDeInfo or location, added or retyped
partition keys and an expected-parameter mismatch, get_table_objects_by_name_req with
projections, alter_database with a description and location, and dropping a catalog whose
default database holds a table. Sent the same to the stock HMS 4.0.1 and to us (each with a
directory of its own, ``root``): the answers, or the errors (class, and message where
``MESSAGES`` says so), with ``root`` written ``<root>``, must be equal. Used by
tests/hms/test_stock_hms4.py."""
from __future__ import annotations

import os

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DB = "targ_db"
CAT = "targ_cat"
# the cases whose error message is not compared (the stock's words are its own)
TYPE_ONLY = {"projection exclude pattern alone", "projection unknown field",
             "projection unknown fields"}


def _where(location, root: str):
    """A location with the case's directory written <root>, a server's warehouse <wh>."""
    if location is None:
        return None
    text = str(location)
    for prefix in ("file://", "file:"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    if root and text.startswith(root):
        return "<root>" + text[len(root):]
    if "/warehouse/" in text:
        return "<wh>/" + text.split("/warehouse/", 1)[1]
    return text


def _table(name: str, kind: str | None = "MANAGED_TABLE", keys=()) -> T.Table:
    t = text_table(name, DB, kind or "MANAGED_TABLE")
    t.tableType = kind
    t.partitionKeys = [T.FieldSchema(k, "string", None) for k in keys]
    return t


def _shape_table(t: T.Table, root: str):
    sd = t.sd
    return ("Table", t.dbName, t.tableName, t.tableType, t.owner,
            None if sd is None else (_where(sd.location, root),
                                     None if sd.cols is None else [(c.name, c.type)
                                                                   for c in sd.cols],
                                     None if sd.serdeInfo is None else
                                     sd.serdeInfo.serializationLib),
            [(k.name, k.type, k.comment) for k in t.partitionKeys or []] if
            t.partitionKeys is not None else None,
            sorted(k for k in (t.parameters or {}) if k not in (
                "transient_lastDdlTime", "numFiles", "totalSize", "numFilesErasureCoded",
                "COLUMN_STATS_ACCURATE", "numRows", "rawDataSize")) if t.parameters is not None
            else None)


def _projected(t: T.Table):
    """Which fields a projected table has set (numbers aside, which both always set; the
    catalog aside: we do not name it in get_table_objects_by_name_req's whole tables, the
    stock 4.0.1 does)."""
    sd = t.sd
    return ("Projected", t.dbName is not None, t.tableName is not None, t.owner is not None,
            t.ownerType is not None, t.createTime is not None,
            None if sd is None else (sd.location is not None, sd.cols is not None,
                                     None if sd.serdeInfo is None else
                                     sd.serdeInfo.serializationLib is not None))


def _alter(c, root: str, name: str, change, env: dict | None = None):
    new = c.get_table_req(T.GetTableRequest(dbName=DB, tblName=name, catName="hive")).table
    change(new)
    c.alter_table_req(T.AlterTableRequest(
        dbName=DB, tableName=name, table=new, catName="hive",
        environmentContext=T.EnvironmentContext(properties=env or {})))
    return _shape_table(
        c.get_table_req(T.GetTableRequest(dbName=DB, tblName=new.tableName or name,
                                          catName="hive")).table, root)


def _set(obj, path: str, value):
    *parts, last = path.split(".")
    for p in parts:
        obj = getattr(obj, p)
    setattr(obj, last, value)


def answers(c, root: str) -> list:
    out = []

    def attempt(label, fn):
        try:
            answer = ("ok", fn())
        except Exception as exc:  # noqa: BLE001 - the error is the answer compared
            msg = getattr(exc, "message", None) or str(exc)
            answer = ("error", type(exc).__name__,
                      None if label in TYPE_ONLY else str(msg).replace(root, "<root>"))
        out.append((label, answer))

    c.create_database(T.Database(DB, "", os.path.join(root, "targ_db.db"), {}))

    def create(name, kind="MANAGED_TABLE", keys=(), **fields):
        t = _table(name, kind, keys)
        for path, value in fields.items():
            _set(t, path.replace("__", "."), value)
        c.create_table_req(T.CreateTableRequest(table=t))
        got = c.get_table_req(T.GetTableRequest(dbName=t.dbName or DB, tblName=name,
                                                catName="hive")).table
        return _shape_table(got, root)

    # create_table_req
    attempt("create no type", lambda: create("t_notype", None))
    attempt("create no type default location", lambda: create("t_notype_loc", None,
                                                              sd__location=None))
    attempt("create no database", lambda: create("t_nodb", dbName=None))
    attempt("create no serde", lambda: create("t_noserde", sd__serdeInfo=None))
    attempt("create null column type",
            lambda: create("t_nulltype", sd__cols=[T.FieldSchema("a", None, None)]))
    attempt("create root location", lambda: create("t_root", sd__location="hdfs://nn:8020"))
    attempt("create root file location", lambda: create("t_root2", sd__location="file:/"))
    attempt("create base", lambda: create("t_base", "EXTERNAL_TABLE",
                                          sd__location=os.path.join(root, "t_base")))
    attempt("create partitioned", lambda: create("t_part", "EXTERNAL_TABLE", keys=("p",),
                                                 sd__location=os.path.join(root, "t_part")))

    # alter_table_req
    attempt("alter null name", lambda: _alter(c, root, "t_base", lambda t: _set(t, "tableName", None)))
    attempt("alter null database", lambda: _alter(c, root, "t_base", lambda t: _set(t, "dbName", None)))
    attempt("alter null cols", lambda: _alter(c, root, "t_base", lambda t: _set(t, "sd.cols", None)))
    attempt("alter null column type", lambda: _alter(
        c, root, "t_base", lambda t: _set(t, "sd.cols", [T.FieldSchema("a", None, None)])))
    attempt("alter null serde", lambda: _alter(c, root, "t_base",
                                               lambda t: _set(t, "sd.serdeInfo", None)))
    attempt("alter null location", lambda: _alter(c, root, "t_base",
                                                  lambda t: _set(t, "sd.location", None)))
    attempt("alter add partition key", lambda: _alter(
        c, root, "t_base", lambda t: _set(t, "partitionKeys", [T.FieldSchema("np", "int", "c")])))
    attempt("alter retype partition key", lambda: _alter(
        c, root, "t_part", lambda t: _set(t, "partitionKeys", [T.FieldSchema("p", "int", "new")])))
    attempt("alter rename partition key", lambda: _alter(
        c, root, "t_part", lambda t: _set(t, "partitionKeys", [T.FieldSchema("q", "int", None)])))
    attempt("alter expected parameter differs", lambda: _alter(
        c, root, "t_base", lambda t: t.parameters.update({"k": "v"}),
        {"expected_parameter_key": "EXTERNAL", "expected_parameter_value": "alma"}))
    attempt("alter expected parameter missing", lambda: _alter(
        c, root, "t_base", lambda t: t.parameters.update({"k": "v"}),
        {"expected_parameter_key": "nosuch", "expected_parameter_value": "alma"}))
    attempt("alter expected parameter matches", lambda: _alter(
        c, root, "t_base", lambda t: t.parameters.update({"k": "w"}),
        {"expected_parameter_key": "EXTERNAL", "expected_parameter_value": "TRUE"}))

    # get_table_objects_by_name_req with projections
    def projected(fields, include=None, exclude=None):
        spec = T.GetProjectionsSpec(fieldList=fields, includeParamKeyPattern=include,
                                    excludeParamKeyPattern=exclude)
        got = c.get_table_objects_by_name_req(T.GetTablesRequest(
            dbName=DB, tblNames=["t_base", "t_part"], catName="hive", projectionSpec=spec))
        return sorted(_projected(t) for t in got.tables)

    attempt("projection location", lambda: projected(["sd.location"]))
    attempt("projection names and times",
            lambda: projected(["dbName", "tableName", "createTime", "lastAccessTime"]))
    attempt("projection owner and location",
            lambda: projected(["owner", "ownerType", "sd.location"]))
    attempt("projection serde lib", lambda: projected(["sd.serdeInfo.serializationLib"]))
    attempt("projection multi-valued",
            lambda: projected(["sd.location", "sd.serdeInfo.parameters"]))
    attempt("projection empty", lambda: projected([]))
    attempt("projection exclude pattern alone", lambda: projected(None, exclude="foo"))
    attempt("projection exclude pattern", lambda: projected([], exclude="foo"))
    attempt("projection null", lambda: projected(None))
    attempt("projection unknown field", lambda: projected(["Invalid1"]))
    attempt("projection unknown fields", lambda: projected(["Invalid1", "Invalid2"]))

    # alter_database: description and location
    def alter_db(**fields):
        db = c.get_database_req(T.GetDatabaseRequest(name=DB, catalogName="hive"))
        for k, v in fields.items():
            setattr(db, k, v)
        c.alter_database(DB, db)
        got = c.get_database_req(T.GetDatabaseRequest(name=DB, catalogName="hive"))
        return (got.description, _where(got.locationUri, root), got.ownerName,
                sorted((got.parameters or {}).items()))

    attempt("alter database description", lambda: alter_db(description="second"))
    attempt("alter database blank description", lambda: alter_db(description=" "))
    attempt("alter database location",
            lambda: alter_db(locationUri="file:" + os.path.join(root, "elsewhere")))

    # a catalog whose default database holds a table
    def drop_full_catalog():
        c.create_catalog(T.CreateCatalogRequest(T.Catalog(
            name=CAT, description="d", locationUri=os.path.join(root, "cat"))))
        t = _table("t_in_cat", "EXTERNAL_TABLE")
        t.dbName, t.catalogName = "default", CAT  # id 17, as a Hive 4 client sends it
        t.sd.location = os.path.join(root, "cat_t")
        c.create_table_req(T.CreateTableRequest(table=t))
        where = c.get_table_req(T.GetTableRequest(dbName="default", tblName="t_in_cat",
                                                  catName=CAT)).table
        c.drop_catalog(T.DropCatalogRequest(name=CAT))
        return where.catalogName

    attempt("drop catalog with a table in default", drop_full_catalog)
    return out


def cleanup(c) -> None:
    for call in (lambda: c.drop_table_req(T.DropTableRequest(
                     catalogName=CAT, dbName="default", tableName="t_in_cat", deleteData=False)),
                 lambda: c.drop_catalog(T.DropCatalogRequest(name=CAT)),
                 lambda: c.drop_database(DB, False, True)):
        try:
            call()
        except Exception:  # noqa: BLE001
            pass


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} / ours {b!r}"
            for (label, a), (_, b) in zip(stock, ours) if a != b]
