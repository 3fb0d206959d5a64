"""A second catalog as a Hive 3.1 or 4.x client works in it: create, get, list, alter and drop
the catalog; a database, a partitioned table, partitions, functions and keys in it, named
through the request structs' catalog fields and through ``@cat#db`` names; what the default
catalog and a 2.3 client see meanwhile; and the errors for a missing, duplicate, non-empty or
badly named catalog. Run the same on the stock HMS 3.1.3 or 4.0.1 and on us (each with a
directory of its own for the catalog's location, ``root``): the answers, or the errors (class
and message), with ``root`` written ``<root>``, must be equal. Used by
tests/hms/test_stock_hms4.py and tests/hms/test_catalog_names.py."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.thrift.generations import METHODS
from tests.support.client import text_table

CAT = "cat_x"
DB = "cat_shop"  # a name the other tests of a module leave to this one
COLS = [T.FieldSchema("id", "int", "the id"), T.FieldSchema("name", "string", None)]


def _table(name: str, db: str, cat: str | None = CAT, keys=("ds",)) -> T.Table:
    table = text_table(name, db, "EXTERNAL_TABLE")
    table.sd.cols = list(COLS)
    table.partitionKeys = [T.FieldSchema(k, "string", None) for k in keys]
    table.catalogName = cat  # id 17, as a Hive 3.1/4.x client sends it
    return table


def _shape(value, root: str):
    """What is compared of an answer: names, values, types and locations below ``root``;
    never times."""
    if isinstance(value, list):
        return [_shape(v, root) for v in value]
    if isinstance(value, T.Catalog):
        return ("Catalog", value.name, value.description, _where(value.locationUri, root))
    if isinstance(value, T.Database):
        return ("Database", value.name, value.catalogName, value.description,
                _where(value.locationUri, root), value.ownerName)
    if isinstance(value, T.Table):
        return ("Table", value.catalogName, value.dbName, value.tableName, value.tableType,
                [(c.name, c.type) for c in value.sd.cols],
                [k.name for k in value.partitionKeys or []], _where(value.sd.location, root))
    if isinstance(value, T.Partition):
        return ("Partition", value.catName, value.dbName, value.tableName, value.values,
                _where(value.sd.location, root))
    if isinstance(value, T.TableMeta):
        return ("TableMeta", value.catName, value.dbName, value.tableName, value.tableType)
    if isinstance(value, T.Function):
        return ("Function", value.catName, value.dbName, value.functionName, value.className)
    if isinstance(value, T.SQLPrimaryKey):
        return ("SQLPrimaryKey", value.catName, value.table_db, value.table_name,
                value.column_name)
    if isinstance(value, T.SQLForeignKey):
        return ("SQLForeignKey", value.catName, value.pktable_db, value.pktable_name,
                value.fktable_db, value.fktable_name, value.fk_name)
    for attr in ("catalog", "names", "table", "tables", "partitions", "primaryKeys",
                 "foreignKeys", "databases"):
        if hasattr(value, attr) and len([f for f in value.thrift_spec if f]) <= 3:
            inner = getattr(value, attr)
            if isinstance(inner, list) and all(isinstance(v, str) for v in inner):
                return sorted(inner)
            return _shape(inner, root)
    return value


def _where(location: str | None, root: str):
    """A location as compared: below ``root`` (``<root>/...``), or only whether it is set."""
    if not location:
        return location
    path = urlparse(location).path if "://" in location or location.startswith("file:") \
        else location
    return path.replace(root, "<root>") if root in path else "elsewhere"


def cases(c, root: str) -> list:
    """(label, call) on ``c``, a connection that speaks Hive 3.1 or 4.x, in order: later calls
    depend on earlier ones."""
    loc = f"file:{root}/cat_x"
    pk = T.SQLPrimaryKey(DB, "orders", "id", 1, "orders_pk", False, False, False, CAT)
    fk = T.SQLForeignKey(DB, "orders", "id", DB, "orders_env", "id", 1, 0, 0, "env_fk",
                         "orders_pk", False, False, False, CAT)
    fn = T.Function("lower2", DB, "org.example.Lower", "me", T.PrincipalType.USER, 0,
                    T.FunctionType.JAVA, [], CAT)

    def part(values, cat=CAT):
        sd = _table("orders", DB).sd
        sd.location = None  # under the table's
        return T.Partition(list(values), DB, "orders", 0, 0, sd, {}, None, cat)

    return [
        ("get_catalogs before", lambda: c.get_catalogs()),
        ("create_catalog", lambda: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog(CAT, "a second one", loc)))),
        ("create_catalog again", lambda: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog(CAT, "again", loc)))),
        ("create_catalog upper case", lambda: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog("CAT_X", "again", loc)))),
        ("create_catalog hive", lambda: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog("hive", "again", loc)))),
        ("create_catalog no location", lambda: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog("cat_noloc", "x", None)))),
        ("create_catalog bad name", lambda: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog("cat-bad", "x", f"file:{root}/bad")))),
        ("catalog directory made", lambda: os.path.isdir(f"{root}/cat_x")),
        ("get_catalog", lambda: c.get_catalog(T.GetCatalogRequest(CAT))),
        ("get_catalog upper case", lambda: c.get_catalog(T.GetCatalogRequest("Cat_X"))),
        ("get_catalog missing", lambda: c.get_catalog(T.GetCatalogRequest("cat_none"))),
        ("get_catalogs", lambda: c.get_catalogs()),
        ("alter_catalog", lambda: c.alter_catalog(T.AlterCatalogRequest(
            CAT, T.Catalog(CAT, "altered", loc)))),
        ("get_catalog altered", lambda: c.get_catalog(T.GetCatalogRequest(CAT))),
        ("alter_catalog rename", lambda: c.alter_catalog(T.AlterCatalogRequest(
            CAT, T.Catalog("cat_y", "altered", loc)))),
        ("alter_catalog missing", lambda: c.alter_catalog(T.AlterCatalogRequest(
            "cat_none", T.Catalog("cat_none", "x", loc)))),
        # a database in it
        ("create_database", lambda: c.create_database(T.Database(
            DB, "the shop", None, {}, catalogName=CAT))),
        ("create_database again", lambda: c.create_database(T.Database(
            DB, "the shop", None, {}, catalogName=CAT))),
        ("create_database missing catalog", lambda: c.create_database(T.Database(
            DB, "the shop", None, {}, catalogName="cat_none"))),
        ("get_database_req", lambda: c.get_database_req(T.GetDatabaseRequest(DB, CAT))),
        ("get_database @cat#", lambda: c.get_database(f"@{CAT}#{DB}")),
        ("get_database hive's", lambda: c.get_database(DB)),
        ("get_databases @cat#", lambda: c.get_databases(f"@{CAT}#")),
        ("get_database default of the catalog", lambda: c.get_database(f"@{CAT}#default")),
        ("get_databases @cat# pattern", lambda: c.get_databases(f"@{CAT}#sh*")),
        ("get_all_databases", lambda: DB in c.get_all_databases()),
        ("alter_database", lambda: c.alter_database(f"@{CAT}#{DB}", T.Database(
            DB, "the shop", None, {"k": "v"}, catalogName=CAT))),
        ("get_database altered", lambda: c.get_database(f"@{CAT}#{DB}").parameters),
        # a table, partitions, a function and constraints
        ("create_table", lambda: c.create_table(_table("orders", DB))),
        ("create_table_with_environment_context", lambda: c.create_table_with_environment_context(
            _table("orders_env", DB), None)),
        ("create_table_req", lambda: c.create_table_req(T.CreateTableRequest(
            _table("orders", DB)))),
        ("create_table_req again", lambda: c.create_table_req(T.CreateTableRequest(
            _table("orders", DB)))),
        ("create_table_req missing catalog", lambda: c.create_table_req(T.CreateTableRequest(
            _table("t", DB, "cat_none")))),
        ("create_table_req missing database", lambda: c.create_table_req(T.CreateTableRequest(
            _table("t", "nodb")))),
        ("get_table_req", lambda: c.get_table_req(T.GetTableRequest(DB, "orders",
                                                                    catName=CAT))),
        ("get_table_req hive", lambda: c.get_table_req(T.GetTableRequest(DB, "orders",
                                                                         catName="hive"))),
        ("get_tables", lambda: c.get_tables(f"@{CAT}#{DB}", "*")),
        ("get_all_tables", lambda: c.get_all_tables(f"@{CAT}#{DB}")),
        ("get_table_meta", lambda: c.get_table_meta(f"@{CAT}#*", "*", [])),
        ("get_table_objects_by_name_req", lambda: c.get_table_objects_by_name_req(
            T.GetTablesRequest(DB, ["orders"], catName=CAT))),
        ("append_partition", lambda: c.append_partition(f"@{CAT}#{DB}", "orders",
                                                        ["2024-01-05"])),
        ("add_partitions", lambda: c.add_partitions([part(["2024-01-02"]),
                                                     part(["2024-01-03"])])),
        ("add_partitions_req", lambda: c.add_partitions_req(T.AddPartitionsRequest(
            DB, "orders", [part(["2024-01-04"])], False, True, CAT))),
        ("get_partition_names", lambda: sorted(c.get_partition_names(f"@{CAT}#{DB}", "orders",
                                                                     -1))),
        ("get_partition", lambda: c.get_partition(f"@{CAT}#{DB}", "orders", ["2024-01-02"])),
        ("get_partitions", lambda: sorted(c.get_partitions(f"@{CAT}#{DB}", "orders", -1),
                                          key=lambda p: p.values)),
        ("get_partitions_by_filter", lambda: c.get_partitions_by_filter(
            f"@{CAT}#{DB}", "orders", "ds = '2024-01-03'", -1)),
        ("drop_partition", lambda: c.drop_partition(f"@{CAT}#{DB}", "orders", ["2024-01-04"],
                                                    True)),
        ("get_partition dropped", lambda: c.get_partition(f"@{CAT}#{DB}", "orders",
                                                          ["2024-01-04"])),
        ("create_function", lambda: c.create_function(fn)),
        ("get_function", lambda: c.get_function(f"@{CAT}#{DB}", "lower2")),
        ("get_functions", lambda: c.get_functions(f"@{CAT}#{DB}", "*")),
        ("add_primary_key", lambda: c.add_primary_key(T.AddPrimaryKeyRequest([pk]))),
        ("add_foreign_key", lambda: c.add_foreign_key(T.AddForeignKeyRequest([fk]))),
        ("get_primary_keys", lambda: c.get_primary_keys(T.PrimaryKeysRequest(
            DB, "orders", CAT))),
        ("get_foreign_keys", lambda: c.get_foreign_keys(T.ForeignKeysRequest(
            DB, "orders", DB, "orders_env", CAT))),
        ("get_primary_keys hive", lambda: c.get_primary_keys(T.PrimaryKeysRequest(
            DB, "orders", "hive"))),
        ("alter_table", lambda: c.alter_table_with_environment_context(
            f"@{CAT}#{DB}", "orders", _altered(c), None)),
        ("get_table altered", lambda: c.get_table_req(T.GetTableRequest(
            DB, "orders", catName=CAT)).table.parameters.get("note")),
        # in use: it cannot go
        ("drop_database default", lambda: c.drop_database(f"@{CAT}#default", True, True)),
        ("get_database default", lambda: c.get_database(f"@{CAT}#default")),
        ("drop_catalog not empty", lambda: c.drop_catalog(T.DropCatalogRequest(CAT))),
        ("drop_catalog hive", lambda: c.drop_catalog(T.DropCatalogRequest("hive"))),
        ("drop_catalog missing", lambda: c.drop_catalog(T.DropCatalogRequest("cat_none"))),
        ("drop_function", lambda: c.drop_function(f"@{CAT}#{DB}", "lower2")),
        ("drop_table", lambda: c.drop_table(f"@{CAT}#{DB}", "orders", True)),
        ("get_table_req dropped", lambda: c.get_table_req(T.GetTableRequest(
            DB, "orders", catName=CAT))),
        ("drop_database", lambda: c.drop_database(f"@{CAT}#{DB}", True, True)),
        ("get_databases @cat# empty", lambda: c.get_databases(f"@{CAT}#")),
        ("drop_catalog", lambda: c.drop_catalog(T.DropCatalogRequest(CAT))),
        ("catalog directory after drop", lambda: os.path.isdir(f"{root}/cat_x")),
        ("get_catalog dropped", lambda: c.get_catalog(T.GetCatalogRequest(CAT))),
        ("get_catalogs after", lambda: c.get_catalogs()),
    ]


def _altered(c):
    table = c.get_table_req(T.GetTableRequest(DB, "orders", catName=CAT)).table
    table.parameters = dict(table.parameters or {}, note="altered")
    return table


def _served(label: str, version: str) -> bool:
    """Whether the call a case makes (its label's first word, where that names a method) is
    one the stock metastore of ``version`` has."""
    method = label.split()[0]
    return method not in METHODS or version in METHODS[method]


def answers(client, root: str, version: str = "4.0.1") -> list:
    """(label, answer) of every case on ``client``, a client of ``version`` (the cases whose
    call that version does not have are left out); ``root`` exists and is empty."""
    out = []
    for label, call in cases(client, root):
        if not _served(label, version):
            continue
        try:
            out.append((label, ("ok", _shape(call(), root))))
        except Exception as exc:  # noqa: BLE001 - the error is the answer compared
            message = getattr(exc, "message", None) or str(exc)
            out.append((label, ("error", type(exc).__name__, message.replace(root, "<root>"))))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} / ours {b!r}"
            for (label, a), (_, b) in zip(stock, ours) if a != b]
