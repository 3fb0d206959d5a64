"""Materialized views as Hive 3.1/4.x's query rewriting asks for them.

``get_materialized_views_for_rewriting`` names the materialized views of a database that may
be used to rewrite queries: tables of type ``MATERIALIZED_VIEW`` with ``rewriteEnabled`` set.
As the stock metastore answers it: a database (or a catalog) that does not exist has none, so
the answer is empty, not an error; the names come in name order.

A materialized view's creation metadata (the tables it reads and the transactions it saw) comes
with the view from a 3.x/4.x client, at the ``Table`` id where 2.3.10 has ``catName``
(:mod:`hms_proxy.thrift.layouts` reads it by its wire type). It is kept beside the view, under
``db/<db>/table/<view>/creation`` (so it goes with a drop of the view, and, as in the stock
4.0.1, not with a rename), and answered with the view to 3.x/4.x clients as the stock does: its
materialization time is the server's (milliseconds) at creation and at each
``update_creation_metadata``, an alter does not change it, and a 4.x client also gets the
source tables (each table of ``tablesUsed`` that exists, with the counts the client last sent).
A 2.3 client never gets it (id 16 is a string to it). ``get_materialization_invalidation_info``
and the rebuild locks are not served (docs/compatibility.md).
"""
from __future__ import annotations

import time

from hms_proxy.hms.family import Family, lower
from hms_proxy.thrift import dialect, errors, layouts
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.processor import CloseConnection
from hms_proxy.thrift.replies import Raw
from kvmodel import catalog as keys
from kvmodel import codec

MATERIALIZED_VIEW = "MATERIALIZED_VIEW"
_MARK = MATERIALIZED_VIEW.encode()
CREATION = "creation"
DEFAULT_CATALOG = "hive"


def creation_key(db: str, tbl: str) -> str:
    return f"{keys.table_key(db, tbl)}/{CREATION}"


def _counts(creation) -> dict[str, tuple]:
    """``db.table`` -> (inserted, updated, deleted) of the source tables a client sent."""
    out = {}
    for source in creation.sourceTables or []:
        table = source.table
        if table is not None and table.dbName and table.tableName:
            out[f"{lower(table.dbName)}.{lower(table.tableName)}"] = (
                source.insertedCount or 0, source.updatedCount or 0, source.deletedCount or 0)
    return out


def _resolve(name: str, catalog: str | None) -> tuple[str, str]:
    """A used table's name, ``db.table`` (``cat.db.table`` once routing has named another
    catalog's database) -> (the server's name of its database, the table), the database in
    ``catalog`` unless the name gives its own."""
    db, _, tbl = name.rpartition(".")
    db = lower(db)
    if keys.split_db(db)[0] is None:
        db = keys.in_catalog(catalog, db)
    return db, lower(tbl)


def _plain(name: str) -> str:
    """``cat.db.table`` or ``db.table`` -> ``db.table``, as the stock keeps a used table."""
    db, tbl = _resolve(name, None)
    return f"{keys.split_db(db)[1]}.{tbl}"


def store_creation(cat, table, creation) -> None:
    """Keep ``creation`` (a client's CreationMetadata) for ``table``, as the stock keeps it:
    named by the view, its materialization time the server's, the source tables' counts."""
    catalog, plain = keys.split_db(table.dbName)
    used = {_plain(name) for name in creation.tablesUsed or ()}
    counts = {_plain(name): c for name, c in _counts(creation).items()}
    if dialect.hive4() and creation.sourceTables:  # the 4.0.1 keeps these, not tablesUsed
        used = set(counts)
    stored = ttypes.CreationMetadata(
        catName=catalog or DEFAULT_CATALOG, dbName=plain, tblName=table.tableName,
        tablesUsed=used, validTxnList=creation.validTxnList,
        materializationTime=int(time.time() * 1000),
        sourceTables=[ttypes.SourceTable(ttypes.Table(dbName=name.rpartition(".")[0],
                                                      tableName=name.rpartition(".")[2]),
                                         *count)
                      for name, count in sorted(counts.items())])
    cat.put(creation_key(table.dbName, table.tableName), stored)


_ID_FIELD = b"\x0a\x00\x19"  # Table's id: an i64 (type 10) at id 25


def without_id(data: bytes) -> bytes:
    """A stored table without its ``id`` (Hive 4's field 25), as a 2.3 or 3.1 client gets it
    from the stock (their Table has no such field). The id is the last field a stored table
    has, so it is cut off its end; a table with fields after it is decoded and encoded again."""
    if len(data) >= 12 and data[-12:-9] == _ID_FIELD and data[-1:] == b"\x00":
        return data[:-12] + b"\x00"
    if _ID_FIELD not in data:
        return data
    table = codec.decode(ttypes.Table, data)
    if table.id is None:
        return data
    table.id = None
    return codec.encode(table)


def with_creation(get, data: bytes):
    """A stored table as answered: a materialized view's with its creation metadata to a 3.x/4.x
    client (``get(key)`` reads the call's ref); to a 2.3 or 3.1 client without its id; anything
    else as stored."""
    if not dialect.hive4():
        data = without_id(data)
    if _MARK not in data or not dialect.since(dialect.HIVE31):
        return Raw(data)
    table = codec.decode(ttypes.Table, data)
    if table.tableType != MATERIALIZED_VIEW:
        return Raw(data)
    stored = get(creation_key(table.dbName, table.tableName))
    if stored is None:
        return Raw(data)
    creation = codec.decode(ttypes.CreationMetadata, stored)
    counts = {f"{lower(s.table.dbName)}.{lower(s.table.tableName)}":
              (s.insertedCount, s.updatedCount, s.deletedCount)
              for s in creation.sourceTables or [] if s.table is not None}
    sources = []
    if dialect.hive4():  # 3.1's CreationMetadata has no source tables
        catalog, _ = keys.split_db(table.dbName)
        for name in sorted(creation.tablesUsed or ()):
            db, tbl = _resolve(name, catalog)
            found = get(keys.table_key(db, tbl))
            if found is None:
                continue
            source = codec.decode(ttypes.Table, found)
            if catalog is not None:  # named as the stock names another catalog's table
                source.dbName, source.catalogName, source.catName = \
                    keys.split_db(db)[1], catalog, None
            sources.append(ttypes.SourceTable(source, *counts.get(name.lower(), (0, 0, 0))))
    creation.sourceTables = sources or ([] if dialect.hive4() else None)
    return Raw(layouts.encode_newer_table(table, creation))


class MaterializedViewCalls(Family):
    def get_materialized_views_for_rewriting(self, ctx, db_name):
        with self.reading(ctx) as cat:
            if db_name is None:  # a catalog's without a database (``@hive#``): every one's
                dbs = cat.database_names(ctx.catalog)
            else:
                dbs = [lower(db_name)]
            out = []
            for db in dbs:
                for name in cat.table_names(db):
                    table = cat.table(db, name)
                    if table is not None and table.tableType == MATERIALIZED_VIEW \
                            and table.rewriteEnabled:
                        out.append(name)
        return sorted(out)

    def update_creation_metadata(self, ctx, catName, dbname, tbl_name, creation_metadata):
        """Replace a view's creation metadata (its tables used, transactions, the source
        tables' counts), named by the call's names, not the struct's. Whatever the stock 4.0.1
        fails on with a NullPointerException (no catalog, database, view or creation metadata
        kept for it, no struct) is an internal error; the stock 3.1.3 drops the connection."""
        def fail():
            if dialect.hive4():
                raise errors.InternalError("update_creation_metadata: nothing to update")
            raise CloseConnection()

        if catName is None or dbname is None or tbl_name is None or creation_metadata is None:
            fail()
        catalog = lower(catName)
        db = keys.in_catalog(None if catalog == DEFAULT_CATALOG else catalog, lower(dbname)) \
            if keys.CATALOG_DOT not in dbname else dbname
        with self.writing(ctx) as cat:
            table = cat.table(db, lower(tbl_name))
            if table is None or cat.raw(creation_key(db, table.tableName)) is None:
                fail()
            used = _counts(creation_metadata) if dialect.hive4() and \
                creation_metadata.sourceTables else creation_metadata.tablesUsed or ()
            if any(cat.table(*_resolve(name, keys.split_db(db)[0])) is None for name in used):
                fail()  # the stock's source table not found: a NullPointerException
            store_creation(cat, table, creation_metadata)
