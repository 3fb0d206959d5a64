"""A few calls of Hive 3.1/4.x clients as Hive's own client tests make them (TestForeignKey,
TestTablesGetExists, TestCatalogs), sent the same to a stock HMS (3.1.3 or 4.0.1) and to us: a
foreign key whose parent table has no primary or unique key, ``get_all_tables`` with no
database, ``get_table_objects_by_name_req`` with ``*`` or a pattern for the database, and a
catalog's location as it is given back. What is compared: each answer or error (class and
message), with the case's directory written ``<root>``.
Used by tests/hms/test_stock_hms4.py (4.0.1) and tests/hms/test_catalog_names.py (3.1.3)."""
from __future__ import annotations

import os

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DB = "misc4_db"
CAT = "misc4_cat"


def _answer(call, root: str):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))
    if isinstance(value, str):
        value = value.replace(root, "<root>")
    return ("ok", value)


def _fk(parent: str, child: str, name: str):
    return T.SQLForeignKey(pktable_db=DB, pktable_name=parent, pkcolumn_name="id",
                           fktable_db=DB, fktable_name=child, fkcolumn_name="id", key_seq=1,
                           update_rule=0, delete_rule=0, fk_name=name, pk_name=None,
                           enable_cstr=True, validate_cstr=False, rely_cstr=False,
                           catName="hive")


def setup(c) -> None:
    c.create_database(T.Database(DB, "", None, {}))
    for name in ("parent", "keyed", "child"):
        t = text_table(name, DB)
        t.partitionKeys = []
        c.create_table(t)
    c.add_primary_key(T.AddPrimaryKeyRequest([T.SQLPrimaryKey(
        DB, "keyed", "id", 1, "keyed_pk", True, False, False, "hive")]))


def cases(c, root: str, hive4: bool) -> list:
    location = os.path.join(root, "catalog_home")
    out = [
        ("foreign key to a table with no key", lambda: c.add_foreign_key(
            T.AddForeignKeyRequest([_fk("parent", "child", "fk_none")]))),
        ("foreign key to a primary key", lambda: c.add_foreign_key(
            T.AddForeignKeyRequest([_fk("keyed", "child", "fk_keyed")]))),
        ("create a catalog", lambda: c.create_catalog(
            T.CreateCatalogRequest(T.Catalog(CAT, "a catalog", location)))),
        ("the catalog's location", lambda: c.get_catalog(
            T.GetCatalogRequest(CAT)).catalog.locationUri),
        ("alter its location", lambda: c.alter_catalog(T.AlterCatalogRequest(
            CAT, T.Catalog(CAT, "moved", location + "_2")))),
        ("the altered location", lambda: c.get_catalog(
            T.GetCatalogRequest(CAT)).catalog.locationUri),
        ("its default database's location", lambda: c.get_database(
            f"@{CAT}#default").locationUri),
        ("another catalog", lambda: c.create_catalog(
            T.CreateCatalogRequest(T.Catalog(CAT + "_2", None, location + "_3")))),
        ("its directory", lambda: os.path.isdir(location + "_3")),
        ("drop it", lambda: c.drop_catalog(T.DropCatalogRequest(CAT + "_2"))),
        ("its directory once dropped", lambda: os.path.exists(location + "_3")),
        ("drop the moved one", lambda: c.drop_catalog(T.DropCatalogRequest(CAT))),
        ("its first and last directories", lambda: (os.path.exists(location),
                                                    os.path.exists(location + "_2"))),
    ]
    if hive4:
        out += [
            ("all tables of no database", lambda: c.get_all_tables("@hive#")),
            ("tables of every database", lambda: sorted(
                t.tableName for t in c.get_table_objects_by_name_req(T.GetTablesRequest(
                    dbName="*", tablesPattern="*e*", catName="hive")).tables
                if t.dbName == DB)),
            ("a database pattern", lambda: sorted(
                t.tableName for t in c.get_table_objects_by_name_req(T.GetTablesRequest(
                    dbName="misc4*", tablesPattern="*", catName="hive")).tables)),
            ("a pattern no database matches", lambda: c.get_table_objects_by_name_req(
                T.GetTablesRequest(dbName="zz*", tablesPattern="*", catName="hive"))),
            ("a pattern with an alternative", lambda: c.get_table_objects_by_name_req(
                T.GetTablesRequest(dbName="misc4*|def*", tablesPattern="*", catName="hive"))),
        ]
    return out


def run(c, root: str, hive4: bool) -> list:
    setup(c)
    return [(label, _answer(call, root)) for label, call in cases(c, root, hive4)]
