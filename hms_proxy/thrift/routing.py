"""Which ref a call reads or writes, decided once, before any family sees the call.

A client picks a ref three ways: the server's default (``serve --ref``), the listener it
connected to (``serve --bind 9084=dev``), or a qualified database name anywhere a database is
named: ``shop@dev``, ``shop@v1.0``, ``shop@<commit>``, ``shop@main~2``. The qualifier is
stripped from the arguments (families only ever see plain names), and every database name in
the answer is qualified back, because engines (Spark above all) form their follow-up calls from
the ``dbName`` of the objects they got, and must stay on the ref.
"""
from __future__ import annotations

from thrift.Thrift import TType

from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.replies import Raw, RawStream
from kvmodel import codec

SEPARATOR = "@"
# Plain string arguments that name a database, by Thrift argument name ("name" only for the
# database calls themselves: elsewhere it names a table).
DB_ARGS = frozenset({"db_name", "dbname", "dbName"})
DB_NAME_METHODS = frozenset({"get_database", "drop_database"})
# Struct fields that hold a database name.
DB_FIELDS = {
    ttypes.Database: ("name",),
    ttypes.Table: ("dbName",),
    ttypes.Partition: ("dbName",),
    ttypes.Function: ("dbName",),
    ttypes.ColumnStatisticsDesc: ("dbName",),
    ttypes.TableMeta: ("dbName",),
}
# the constraint and index calls
DB_FIELDS.update({
    ttypes.SQLPrimaryKey: ("table_db",), ttypes.SQLForeignKey: ("pktable_db", "fktable_db"),
    ttypes.PrimaryKeysRequest: ("db_name",),
    ttypes.ForeignKeysRequest: ("parent_db_name", "foreign_db_name"),
    ttypes.DropConstraintRequest: ("dbname",), ttypes.Index: ("dbName",)})
for _name in ("PartitionsStatsRequest", "AddPartitionsRequest", "DropPartitionsRequest",
              "PartitionValuesRequest", "GetTablesRequest", "GetTableRequest", "TableStatsRequest"):
    DB_FIELDS[getattr(ttypes, _name)] = ("dbName",)


def split(name: str | None) -> tuple[str | None, str | None]:
    """``shop@dev`` -> (``shop``, ``dev``); a plain name -> (name, None)."""
    if not name or SEPARATOR not in name:
        return name, None
    db, _, ref = name.partition(SEPARATOR)
    if not ref:
        raise errors.MetaError(f"Invalid database name {name!r}: nothing after '@'")
    return db, ref


class _Refs:
    """The refs named by one call's arguments (they must agree)."""

    def __init__(self):
        self.ref: str | None = None

    def take(self, name):
        db, ref = split(name)
        if ref is not None:
            if self.ref is not None and ref != self.ref:
                raise errors.MetaError(
                    f"One call names two refs ({self.ref} and {ref}): a call works on one ref")
            self.ref = ref
        return db


def strip_arguments(method: str, arg_names, args: list) -> str | None:
    """Remove ``@ref`` qualifiers from a call's arguments in place; returns the ref named."""
    refs = _Refs()
    for i, (name, value) in enumerate(zip(arg_names, args)):
        if isinstance(value, str):
            if name in DB_ARGS or (name == "name" and method in DB_NAME_METHODS):
                args[i] = refs.take(value)
        elif value is not None:
            _strip_value(value, refs)
    return refs.ref


_PATHS: dict[type, tuple] = {}


def struct_class(ttype, targ):
    if ttype == TType.STRUCT:
        return targ[0]
    if ttype == TType.LIST and targ[0] == TType.STRUCT:
        return targ[1][0]
    return None


def db_paths(cls, seen=()) -> tuple:
    """The fields of ``cls`` (struct or list of structs) below which a database name can be."""
    found = _PATHS.get(cls)
    if found is None:
        out = []
        for f in cls.thrift_spec:
            if f is None:
                continue
            child = struct_class(f[1], f[3])
            if child is not None and child not in seen and (
                    child in DB_FIELDS or db_paths(child, seen + (cls,))):
                out.append(f[2])
        found = tuple(out)
        if not seen:
            _PATHS[cls] = found
    return found


def _strip_value(value, refs: _Refs) -> None:
    if isinstance(value, list):
        for item in value:
            _strip_value(item, refs)
        return
    cls = type(value)
    if getattr(cls, "thrift_spec", None) is None:
        return
    for field in DB_FIELDS.get(cls, ()):
        current = getattr(value, field, None)
        if isinstance(current, str):
            setattr(value, field, refs.take(current))
    for name in db_paths(cls):
        child = getattr(value, name, None)
        if child is not None:
            _strip_value(child, refs)


def qualify_result(value, result_spec, ref: str):
    """The call's answer with every database name qualified with ``@ref``. Stored bytes
    (:class:`Raw`) are decoded for it: qualified requests take the slower path."""
    success = next((f for f in result_spec if f is not None and f[0] == 0), None)
    if success is None or value is None:
        return value

    if isinstance(value, RawStream):  # each item is rewritten: read them all first
        value = value.materialise()
    return _qualify(value, success[1], success[3], SEPARATOR + ref)


def _qualify(value, ttype, targ, suffix):
    if ttype == TType.STRUCT:
        cls = targ[0]
        obj = codec.decode(cls, value.data) if isinstance(value, Raw) else value
        for field in DB_FIELDS.get(cls, ()):
            current = getattr(obj, field, None)
            if isinstance(current, str) and SEPARATOR not in current:
                setattr(obj, field, current + suffix)
        names = db_paths(cls)
        for f in cls.thrift_spec:
            if f is None or f[2] not in names:
                continue
            child = getattr(obj, f[2], None)
            if child is not None:
                setattr(obj, f[2], _qualify(child, f[1], f[3], suffix))
        return obj
    if ttype == TType.LIST and isinstance(value, list):
        etype, eargs = targ[0], targ[1]
        if etype == TType.STRUCT:
            return [_qualify(v, etype, eargs, suffix) for v in value]
        return value
    return value
