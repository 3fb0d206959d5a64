"""Catalog browsing at any ref over HTTP: databases, tables (schema, properties, location,
partition keys and count), partitions paged and filtered by name.

Everything is read in one consistent view of the ref (``store.read``), through
:class:`kvmodel.catalog.CatalogReader`; a page of partitions decodes only that page.
"""
from __future__ import annotations

from hms_proxy.api.auth import READ
from hms_proxy.api.errors import bad_request, not_found
from hms_proxy.api.request import Request
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.catalog import CatalogReader, part_prefix
from stats import layout


def _ttypes():

    return ttypes


def name_param(req: Request, key: str) -> str:
    value = req.segment(key).strip().lower()
    if not value or "/" in value or "@" in value:
        raise bad_request(f"{key} {req.path_params[key]!r} is not a name (no '/', no '@')")
    return value


def _at(app, req: Request, operation: str, obj: str) -> tuple[str, str]:
    ref = req.ref("ref", app.default_ref)
    app.policy.check(req.caller, ref, READ, operation, obj)
    return ref, app.store.resolve(ref).commit


def column_json(col) -> dict:
    return {"name": col.name or "", "type": col.type or "", "comment": col.comment}


def _params(mapping) -> dict:
    return {str(k): "" if v is None else str(v) for k, v in (mapping or {}).items()}


def database_json(db) -> dict:
    return {"name": db.name or "", "description": db.description, "location": db.locationUri,
            "owner": db.ownerName, "parameters": _params(db.parameters)}


def table_summary(table) -> dict:
    sd = table.sd
    return {"name": table.tableName or "", "type": table.tableType, "owner": table.owner,
            "location": getattr(sd, "location", None),
            "columns": len(getattr(sd, "cols", None) or []),
            "partition_keys": [column_json(k) for k in table.partitionKeys or []],
            "created": table.createTime}


def partition_json(part, name: str) -> dict:
    sd = part.sd
    return {"name": name, "values": [str(v) for v in part.values or []],
            "location": getattr(sd, "location", None), "created": part.createTime,
            "parameters": _params(part.parameters)}


# --- handlers ----------------------------------------------------------------------------------
def list_databases(app, req: Request):

    ref, commit = _at(app, req, "get_databases", "*")
    with app.store.read(ref) as view:
        reader = CatalogReader(view, _ttypes())
        dbs = [reader.database(n) for n in reader.database_names()]
    return 200, {"ref": ref, "commit": commit,
                 "databases": [database_json(d) for d in dbs if d is not None]}


def get_database(app, req: Request):

    db = name_param(req, "db")
    ref, commit = _at(app, req, "get_database", db)
    with app.store.read(ref) as view:
        reader = CatalogReader(view, _ttypes())
        database = reader.database(db)
        if database is None:
            raise not_found(f"no database {db!r} at {ref}")
        tables = []
        for name, data in reader.tables(db):
            tables.append(table_summary(codec.decode(_ttypes().Table, data)))
    return 200, {"ref": ref, "commit": commit, "database": database_json(database),
                 "tables": tables}


def get_table(app, req: Request):

    db, tbl = name_param(req, "db"), name_param(req, "table")
    ref, commit = _at(app, req, "get_table", f"{db}.{tbl}")
    with app.store.read(ref) as view:
        reader = CatalogReader(view, _ttypes())
        table = reader.table(db, tbl)
        if table is None:
            raise not_found(f"no table {db}.{tbl} at {ref}")
        count = sum(1 for _ in view.scan_prefix(part_prefix(db, tbl))) \
            if table.partitionKeys else 0
        root = layout.pointer_key(db, tbl, "x")[:-1]
        sets = [key[len(root):] for key, _ in view.scan_prefix(root)]
    sd = table.sd
    serde = getattr(sd, "serdeInfo", None)
    return 200, {
        "ref": ref, "commit": commit, "db": db, "name": tbl, "type": table.tableType,
        "owner": table.owner, "location": getattr(sd, "location", None),
        "input_format": getattr(sd, "inputFormat", None),
        "output_format": getattr(sd, "outputFormat", None),
        "serde": {"name": getattr(serde, "name", None),
                  "library": getattr(serde, "serializationLib", None),
                  "parameters": _params(getattr(serde, "parameters", None))},
        "columns": [column_json(c) for c in getattr(sd, "cols", None) or []],
        "partition_keys": [column_json(k) for k in table.partitionKeys or []],
        "parameters": _params(table.parameters),
        "partition_count": count, "created": table.createTime,
        "view_text": table.viewOriginalText,
        "statistics": {"partition_sets": sum(1 for s in sets if s not in
                                             (layout.UNPARTITIONED, layout.TABLE_LEVEL)),
                       "table_level": any(s in (layout.UNPARTITIONED, layout.TABLE_LEVEL)
                                          for s in sets)},
    }


def list_partitions(app, req: Request):
    """A page of a table's partitions in name order; ``filter``: only names holding it
    (case-insensitive)."""

    db, tbl = name_param(req, "db"), name_param(req, "table")
    needle = (req.text("filter", "", max_length=300) or "").lower()
    offset, limit = req.paging()
    ref, commit = _at(app, req, "get_partitions", f"{db}.{tbl}")
    t = _ttypes()
    with app.store.read(ref) as view:
        reader = CatalogReader(view, t)
        if reader.table(db, tbl) is None:
            raise not_found(f"no table {db}.{tbl} at {ref}")
        prefix = part_prefix(db, tbl)
        n = len(prefix)
        total, out = 0, []
        for key, value in view.scan_prefix(prefix):
            name = key[n:]
            if needle and needle not in name.lower():
                continue
            if offset <= total < offset + limit:
                out.append(partition_json(codec.decode(t.Partition, value), name))
            total += 1
    return 200, {"ref": ref, "commit": commit, "db": db, "table": tbl,
                 "filter": needle or None, "partitions": out, "total": total,
                 "offset": offset, "limit": limit,
                 "next_offset": offset + limit if offset + limit < total else None}
