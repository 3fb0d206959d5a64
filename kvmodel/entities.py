"""Catalog entities as diff and merge see them: key -> (kind, path), decoding, and fields.

A store key names one entity (see :mod:`kvmodel.catalog` for the layout). Its value decodes to
the HMS struct of its kind, and that struct is seen as a flat set of named *fields*, each with
a getter and a setter, so that a diff can list what changed ("location", "parameters.owner",
"columns.added") and a 3-way merge can take each field from the side that changed it.

Three shapes of field:

* :class:`Field`  -- one value, compared whole (``location``, ``serde``, ``partitionKeys``);
* :class:`MapField` -- a string map, compared key by key (``parameters.<key>``);
* :class:`ColumnsField` -- a column list, compared column by column (added, dropped, retyped,
  reordered, comment changes; merged per column with a positional merge of the order).

Every attribute of a struct is covered by some field: those not listed explicitly get a plain
:class:`Field` named after the attribute (``numBuckets``, ``createTime``...), so a merge never
drops a change it was not told about. *Volatile* fields (access times, ``transient_lastDdlTime``)
are left out of diffs and never conflict in a merge (the later value wins).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from thrift.Thrift import TType

from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.catalog import catalog_key, db_key, split_db

# Parameters that change with every DDL call: never shown in a diff, never a conflict.
DIFF_SKIPPED_PARAMS = frozenset({"transient_lastDdlTime"})
MERGE_VOLATILE_PARAMS = frozenset({"transient_lastDdlTime", "last_modified_time",
                                   "last_modified_by"})


@dataclass(frozen=True)
class FieldChange:
    """One field of an entity that differs: ``before`` and ``after`` are JSON-able."""

    field: str
    before: object
    after: object

    def to_json(self) -> dict:
        return {"field": self.field, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class EntityChange:
    """One entity that differs between two refs (``change``: added, removed or modified)."""

    kind: str
    path: tuple[str, ...]
    change: str
    fields: tuple[FieldChange, ...] = ()
    key: str = ""

    def to_json(self) -> dict:
        return {"kind": self.kind, "path": list(self.path), "change": self.change,
                "key": self.key, "fields": [f.to_json() for f in self.fields]}


# --- keys -------------------------------------------------------------------------------------
def parse_key(key: str) -> tuple[str, tuple[str, ...]]:
    """The (kind, path) of a store key; ("other", (key,)) for keys outside the catalog layout.

    A partition's path element is its Hive name (``k1=v1/k2=v2``). Other keys inside a table's
    or a database's subtree (constraints, privileges, marks...) are ``table_item`` /
    ``database_item``: opaque values, but with their table or database as ancestors, so that a
    merge sees them depend on it (a grant added on one branch to a table dropped on the other
    is a conflict, not an orphan)."""
    parts = key.split("/")
    if parts[0] == "role" and len(parts) == 2 and parts[1]:
        return "role", (parts[1],)
    if parts[0] == "cat" and len(parts) >= 2 and parts[1]:
        # a catalog besides hive, and its databases: their path names the database
        # ``<cat>.<db>``, the server's name of it (kvmodel.catalog)
        if len(parts) == 2:
            return "catalog", (parts[1],)
        if parts[2] == "db" and len(parts) >= 4 and parts[3]:
            kind, path = parse_key("/".join(["db"] + parts[3:]))
            if kind != "other":
                return kind, (f"{parts[1]}.{path[0]}",) + path[1:]
        return "other", (key,)
    if parts[0] != "db" or len(parts) < 2 or not parts[1]:
        return "other", (key,)
    db = parts[1]
    if len(parts) == 2:
        return "database", (db,)
    if parts[2] == "fn" and len(parts) == 4:
        return "function", (db, parts[3])
    if parts[2] == "table" and len(parts) >= 4 and parts[3]:
        tbl = parts[3]
        if len(parts) == 4:
            return "table", (db, tbl)
        sub, rest = parts[4], parts[5:]
        if sub == "part" and rest and all(rest):
            return "partition", (db, tbl, "/".join(rest))
        if sub == "colstats" and len(rest) == 1 and rest[0]:
            return "table_column_stats", (db, tbl, rest[0])
        if sub == "partstats" and len(rest) >= 2 and all(rest):
            return "partition_column_stats", (db, tbl, "/".join(rest[:-1]), rest[-1])
        if sub and all(rest):  # constraints, privileges... kept with the table
            return "table_item", (db, tbl, "/".join(parts[4:]))
    elif all(parts[2:]):  # privileges... kept with the database
        return "database_item", (db, "/".join(parts[2:]))
    return "other", (key,)


def ancestors(key: str) -> list[str]:
    """Keys of the entities ``key`` cannot exist without, outermost first: its database, its
    table, and for partition statistics, its partition."""
    kind, path = parse_key(key)
    if kind in ("catalog", "role", "other"):
        return []
    cat, _ = split_db(path[0])
    outer = [catalog_key(cat)] if cat is not None else []
    db = db_key(path[0])
    if kind == "database":
        return outer
    if kind in ("function", "table", "database_item"):
        return outer + [db]
    tbl = f"{db}/table/{path[1]}"
    if kind == "partition_column_stats":
        return outer + [db, tbl, f"{tbl}/part/{path[2]}"]
    return outer + [db, tbl]


def dependents(key: str) -> tuple[str, ...]:
    """Key prefixes of what depends on the entity at ``key`` (and goes when it is dropped)."""
    kind, path = parse_key(key)
    if kind in ("catalog", "database", "table"):
        return (key + "/",)
    if kind == "partition":
        return (f"{db_key(path[0])}/table/{path[1]}/partstats/{path[2]}/",)
    return ()


# --- fields -----------------------------------------------------------------------------------
def _getter(path: tuple[str, ...]) -> Callable:
    def get(obj):
        for name in path:
            if obj is None:
                return None
            obj = getattr(obj, name)
        return obj
    return get


def _setter(cls, path: tuple[str, ...]) -> Callable:
    classes = []  # the struct class of each intermediate attribute, to create it when None
    for name in path[:-1]:
        spec = next(f for f in cls.thrift_spec if f is not None and f[2] == name)
        cls = spec[3][0]
        classes.append(cls)

    def set_(obj, value):
        for name, sub in zip(path[:-1], classes):
            nxt = getattr(obj, name)
            if nxt is None:
                nxt = sub()
                setattr(obj, name, nxt)
            obj = nxt
        setattr(obj, path[-1], value)
    return set_


@dataclass(frozen=True)
class Field:
    name: str
    path: tuple[str, ...]
    volatile: bool = False


@dataclass(frozen=True)
class MapField:
    name: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class ColumnsField:
    name: str
    path: tuple[str, ...]


def _f(name, path, **kw):
    return Field(name, tuple(path.split(".")), **kw)


_EXPLICIT = {
    "table": [
        _f("owner", "owner"), _f("tableType", "tableType"),
        _f("viewText", "viewOriginalText"), _f("viewExpandedText", "viewExpandedText"),
        _f("location", "sd.location"), _f("inputFormat", "sd.inputFormat"),
        _f("outputFormat", "sd.outputFormat"), _f("serde", "sd.serdeInfo"),
        _f("partitionKeys", "partitionKeys"), MapField("parameters", ("parameters",)),
        ColumnsField("columns", ("sd", "cols")), MapField("sd.parameters", ("sd", "parameters")),
        _f("lastAccessTime", "lastAccessTime", volatile=True),
    ],
    "partition": [
        _f("values", "values"), _f("location", "sd.location"),
        _f("inputFormat", "sd.inputFormat"), _f("outputFormat", "sd.outputFormat"),
        _f("serde", "sd.serdeInfo"), MapField("parameters", ("parameters",)),
        ColumnsField("columns", ("sd", "cols")), MapField("sd.parameters", ("sd", "parameters")),
        _f("lastAccessTime", "lastAccessTime", volatile=True),
    ],
    "database": [
        _f("location", "locationUri"), _f("description", "description"),
        _f("owner", "ownerName"), _f("ownerType", "ownerType"),
        MapField("parameters", ("parameters",)),
    ],
    "function": [
        _f("className", "className"), _f("resourceUris", "resourceUris"),
        _f("owner", "ownerName"), _f("ownerType", "ownerType"),
    ],
    "role": [_f("owner", "ownerName")],
    "catalog": [_f("location", "locationUri"), _f("description", "description")],
    "table_column_stats": [
        _f("statistics", "statsObj"), _f("lastAnalyzed", "statsDesc.lastAnalyzed", volatile=True),
    ],
}
_EXPLICIT["partition_column_stats"] = _EXPLICIT["table_column_stats"]

STRUCTS = {
    "database": ttypes.Database, "table": ttypes.Table, "partition": ttypes.Partition,
    "function": ttypes.Function, "role": ttypes.Role, "catalog": ttypes.Catalog,
    "table_column_stats": ttypes.ColumnStatistics,
    "partition_column_stats": ttypes.ColumnStatistics,
}


def _complete(cls, explicit: list) -> list:
    """``explicit`` plus a plain Field for every struct attribute it leaves uncovered."""
    covered = {f.path for f in explicit}
    names = {f.name for f in explicit}
    out = list(explicit)

    def walk(cls, prefix):
        for spec in cls.thrift_spec:
            if spec is None:
                continue
            path = prefix + (spec[2],)
            if path in covered:
                continue
            if spec[1] == TType.STRUCT and any(c[:len(path)] == path for c in covered):
                walk(spec[3][0], path)
                continue
            name = spec[2] if spec[2] not in names else ".".join(path)
            names.add(name)
            out.append(Field(name, path))
    walk(cls, ())
    return out


FIELDS: dict[str, list] = {kind: _complete(STRUCTS[kind], _EXPLICIT[kind]) for kind in STRUCTS}
_ACCESSORS: dict[tuple[str, str], tuple[Callable, Callable]] = {
    (kind, f.name): (_getter(f.path), _setter(STRUCTS[kind], f.path))
    for kind, fields in FIELDS.items() for f in fields
}


def get_field(kind: str, f, obj):
    return _ACCESSORS[kind, f.name][0](obj)


def set_field(kind: str, f, obj, value) -> None:
    _ACCESSORS[kind, f.name][1](obj, value)


def decode(kind: str, data: bytes | None):
    """The struct stored under a key of ``kind``; None when absent, undecodable or not a
    catalog kind (such values are compared as opaque bytes)."""
    cls = STRUCTS.get(kind)
    if data is None or cls is None:
        return None
    try:
        return codec.decode(cls, data)
    except Exception:  # a value that is not the struct its key promises: opaque bytes
        return None


# --- JSON-able values -------------------------------------------------------------------------
def jsonable(value):
    """A JSON-able rendering of a field value (structs become dicts of their set fields)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).hex()
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    spec = getattr(value, "thrift_spec", None)
    if spec is not None:
        return {f[2]: jsonable(getattr(value, f[2])) for f in spec
                if f is not None and getattr(value, f[2]) is not None}
    return repr(value)


# --- columns ----------------------------------------------------------------------------------
def columns_by_name(cols) -> dict | None:
    """{name: (type, comment)} in column order; None when names repeat (compared whole)."""
    out = {}
    for c in cols or ():
        if c.name in out:
            return None
        out[c.name] = (c.type, c.comment)
    return out


def column_changes(name: str, before, after) -> list:
    """FieldChanges between two column lists (equal lists give none)."""
    if before == after:
        return []
    b, a = columns_by_name(before), columns_by_name(after)
    if b is None or a is None:
        return [FieldChange(name, jsonable(before), jsonable(after))]
    out = []
    added = {n: t for n, (t, _) in a.items() if n not in b}
    dropped = {n: t for n, (t, _) in b.items() if n not in a}
    common = [n for n in b if n in a]
    retyped = [n for n in common if b[n][0] != a[n][0]]
    commented = [n for n in common if b[n][1] != a[n][1]]
    if added:
        out.append(FieldChange(f"{name}.added", None, added))
    if dropped:
        out.append(FieldChange(f"{name}.dropped", dropped, None))
    if retyped:
        out.append(FieldChange(f"{name}.retyped", {n: b[n][0] for n in retyped},
                               {n: a[n][0] for n in retyped}))
    if [n for n in a if n in b] != common:
        out.append(FieldChange(f"{name}.reordered", list(b), list(a)))
    if commented:
        out.append(FieldChange(f"{name}.comment", {n: b[n][1] for n in commented},
                               {n: a[n][1] for n in commented}))
    return out


# --- field-level comparison -------------------------------------------------------------------
def field_changes(kind: str, before, after) -> list:
    """The FieldChanges from struct ``before`` to struct ``after`` (both of ``kind``)."""
    out = []
    for f in FIELDS[kind]:
        bv, av = get_field(kind, f, before), get_field(kind, f, after)
        if bv == av:
            continue
        if isinstance(f, ColumnsField):
            out.extend(column_changes(f.name, bv, av))
        elif isinstance(f, MapField):
            bv, av = bv or {}, av or {}
            for k in sorted(set(bv) | set(av)):
                if k in DIFF_SKIPPED_PARAMS or bv.get(k) == av.get(k):
                    continue
                out.append(FieldChange(f"{f.name}.{k}", bv.get(k), av.get(k)))
        elif not f.volatile:
            out.append(FieldChange(f.name, jsonable(bv), jsonable(av)))
    return out


def entity_change(key: str, before: bytes | None, after: bytes | None):
    """The EntityChange of one key from ``before`` to ``after`` (bytes; None means absent).
    Only a modification is decoded, and only when the bytes differ."""
    kind, path = parse_key(key)
    if before is None:
        return EntityChange(kind, path, "added", (), key)
    if after is None:
        return EntityChange(kind, path, "removed", (), key)
    fields: tuple = ()
    if before != after:
        b, a = decode(kind, before), decode(kind, after)
        if b is not None and a is not None:
            fields = tuple(field_changes(kind, b, a))
        else:
            fields = (FieldChange("value", jsonable(before), jsonable(after)),)
    return EntityChange(kind, path, "modified", fields, key)
