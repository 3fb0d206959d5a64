"""Which ref a call reads or writes, decided once, before any family sees the call.

A client picks a ref three ways: the server's default (``serve --ref``), the listener it
connected to (``serve --bind 9084=dev``), or a qualified database name anywhere a database is
named: ``shop@dev``, ``shop@v1.0``, ``shop@<commit>``, ``shop@main~2``. The qualifier is
stripped from the arguments (families only ever see plain names), and every database name in
the answer is qualified back, because engines (Spark above all) form their follow-up calls from
the ``dbName`` of the objects they got, and must stay on the ref.

Hive 3.x and 4.x clients (and Trino with ``hive.metastore.thrift.catalog-name``) name a
database with its catalog in front, wherever a call takes a database name as a plain string:
``@hive#shop``, ``@hive#`` (no database: every one, for ``get_databases``), ``@hive#!`` (the empty
name). The catalog is taken off here too, as the stock HMS 3.1 parses it
(``MetaStoreUtils.parseDbName``); ``@hive#shop@dev`` is database ``shop`` of catalog ``hive`` on
ref ``dev``. Request structs name a catalog in their own field (``catName``, ``catalogName``;
a table's as Hive 3.x/4.x send it, id 17, is read as ``catalogName``).

A database of another catalog than ``hive`` is, to the families, the database ``<cat>.<db>``
(:func:`kvmodel.catalog.in_catalog`; no database name has a dot, so a name with one that a
client sends names no database, and reaches none), and every answer of such a call names it
back as the stock HMS does: ``dbName`` ``<db>`` and the catalog in the struct's own field
(:func:`unqualify_result`). What a call says of a missing object names it
``catalog.db.table`` as the stock HMS 3.1 does.
"""
from __future__ import annotations

from thrift.Thrift import TType

from hms_proxy.thrift import dialect, errors, layouts
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.replies import Raw, RawStream
from kvmodel import codec
from kvmodel.catalog import CATALOG_DOT, in_catalog as catalog_db, split_db

SEPARATOR = "@"
# Plain string arguments that name a database, by Thrift argument name ("name" only for the
# database calls themselves: elsewhere it names a table).
DB_ARGS = frozenset({"db_name", "dbname", "dbName", "source_db", "dest_db"})
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
# the request structs of Hive 3.x/4.x (hms_proxy/hms/requests.py)
for _name in ("DropTableRequest", "AlterTableRequest", "PartitionsRequest",
              "GetPartitionNamesPsRequest", "GetFieldsRequest", "GetSchemaRequest",
              "AlterPartitionsRequest", "GetPartitionRequest", "DropPartitionRequest",
              "AppendPartitionsRequest", "GetPartitionsByFilterRequest",
              "GetPartitionsPsWithAuthRequest", "RenamePartitionRequest",
              "AllTableConstraintsRequest", "TruncateTableRequest"):
    DB_FIELDS[getattr(ttypes, _name)] = ("dbName",)
DB_FIELDS[ttypes.PartitionSpec] = ("dbName",)
DB_FIELDS.update({
    ttypes.GetDatabaseRequest: ("name",), ttypes.DropDatabaseRequest: ("name",),
    ttypes.CreateDatabaseRequest: ("databaseName",), ttypes.AlterDatabaseRequest: ("oldDbName",),
    ttypes.GetPartitionsByNamesRequest: ("db_name",), ttypes.UniqueConstraintsRequest: ("db_name",),
    ttypes.NotNullConstraintsRequest: ("db_name",), ttypes.DefaultConstraintsRequest: ("db_name",),
    ttypes.CheckConstraintsRequest: ("db_name",),
    ttypes.SQLUniqueConstraint: ("table_db",), ttypes.SQLNotNullConstraint: ("table_db",),
    ttypes.SQLDefaultConstraint: ("table_db",), ttypes.SQLCheckConstraint: ("table_db",)})
# The fields that name the catalog of a struct's database fields, first found first (a table's:
# 3.x/4.x's id 17, then 2.3.10's catName)
CATALOG_FIELDS = ("catalogName", "catName")
_CATALOG_FIELD: dict[type, str | None] = {}


def catalog_field(cls) -> str | None:
    """The field of ``cls`` that names its catalog (None: it has none)."""
    try:
        return _CATALOG_FIELD[cls]
    except KeyError:
        names = {f[2] for f in cls.thrift_spec if f is not None}
        found = _CATALOG_FIELD[cls] = next((n for n in CATALOG_FIELDS if n in names), None)
        return found


def _catalog_of(value) -> str | None:
    for name in CATALOG_FIELDS:
        current = getattr(value, name, None)
        if isinstance(current, str) and current:
            return current.lower()
    return None


CATALOG_MARK, CATALOG_SEPARATOR, EMPTY_DB_MARK = "@", "#", "!"
# Request structs whose database name the stock HMS 4.x parses for a catalog (``@hive#shop``)
# as it parses a plain string argument.
CATALOG_DB_FIELDS = frozenset({ttypes.GetPartitionsByNamesRequest, ttypes.AlterDatabaseRequest,
                               ttypes.TruncateTableRequest})
DEFAULT_CATALOG = "hive"
# Plain string arguments that may carry a catalog (besides DB_ARGS and DB_NAME_METHODS' name):
# the database patterns of the listing calls.
CATALOG_PATTERN_ARGS = {"get_databases": "pattern", "get_table_meta": "db_patterns"}


def split_catalog(name: str | None) -> tuple[str | None, str | None]:
    """``@hive#shop`` -> (``hive``, ``shop``); ``@hive#`` -> (``hive``, None); ``@hive#!`` ->
    (``hive``, ``""``); a name without the catalog mark -> (None, name). The catalog is
    lower-cased, as the stock HMS keeps catalog names."""
    if not name or not name.startswith(CATALOG_MARK):
        return None, name
    if name.endswith(CATALOG_SEPARATOR):
        return name[1:-1].lower(), None
    if name.endswith(CATALOG_SEPARATOR + EMPTY_DB_MARK):
        return name[1:-2].lower(), ""
    catalog, sep, db = name[1:].partition(CATALOG_SEPARATOR)
    if not sep:
        raise errors.MetaError(f"{name} is prepended with the catalog marker but does not "
                               "appear to have a catalog name in it")
    return catalog.lower(), db


def split(name: str | None) -> tuple[str | None, str | None]:
    """``shop@dev`` -> (``shop``, ``dev``); a plain name -> (name, None). A name that starts
    with ``@`` names no ref: it is a catalog-qualified name where none is parsed (a struct's
    field, as in the stock HMS), left for the call to refuse as an invalid name."""
    if not name or SEPARATOR not in name or name.startswith(CATALOG_MARK):
        return name, None
    db, _, ref = name.partition(SEPARATOR)
    if not ref:
        raise errors.MetaError(f"Invalid database name {name!r}: nothing after '@'")
    return db, ref


class _Refs:
    """The refs (and catalogs) named by one call's arguments (they must agree)."""

    def __init__(self):
        self.ref: str | None = None
        self.catalog: str | None = None  # named in a ``@cat#db`` string
        self.foreign: str | None = None  # a catalog besides hive, named anywhere
        self.absent = False  # a name with a dot was sent (it names no database)

    def take_catalog(self, name):
        catalog, db = split_catalog(name)
        if catalog is not None:
            if self.catalog is not None and catalog != self.catalog:
                raise errors.MetaError(f"One call names two catalogs ({self.catalog} and "
                                       f"{catalog})")
            self.catalog = catalog
            self.take_foreign(catalog)
        return db

    def take_foreign(self, catalog: str | None) -> None:
        if catalog is None or catalog == DEFAULT_CATALOG:
            return
        if self.foreign is not None and catalog != self.foreign:
            raise errors.MetaError(f"One call names two catalogs ({self.foreign} and {catalog})")
        self.foreign = catalog

    def take(self, name):
        db, ref = split(name)
        if ref is not None:
            if self.ref is not None and ref != self.ref:
                raise errors.MetaError(
                    f"One call names two refs ({self.ref} and {ref}): a call works on one ref")
            self.ref = ref
        return db

    def server_name(self, catalog: str | None, db):
        """The families' name of database ``db`` of ``catalog`` (None: hive's)."""
        if not isinstance(db, str):
            return db
        if CATALOG_DOT in db:  # no database's name, in any catalog: it must reach none
            self.absent = True
            return _ABSENT + db
        if catalog is None or catalog == DEFAULT_CATALOG:
            return db
        self.take_foreign(catalog)
        return catalog_db(catalog, db)


class Names:
    """What :func:`strip_arguments` took off a call's arguments."""
    __slots__ = ("ref", "catalog", "dbs", "foreign", "absent")

    def __init__(self, ref: str | None, catalog: str | None, dbs: tuple = (),
                 foreign: str | None = None, absent: bool = False):
        self.ref, self.catalog = ref, catalog
        self.dbs = dbs  # (argument index, database name without ref, the name as sent)
        self.foreign = foreign  # the catalog besides hive the call works in (None: hive)
        self.absent = absent  # a database name with a dot was made one that does not exist


# What families get for a database name with a dot in it (a client's: no database has one).
# No database can have it ('~' is not allowed in one), and it is a valid key and lakeFS path.
_ABSENT = "~absent~"


def absent_error(exc: BaseException) -> None:
    """Put a client's dotted database name back in the message of ``exc``."""
    message = getattr(exc, "message", None)
    if isinstance(message, str) and _ABSENT in message:
        exc.message = message.replace(_ABSENT, "")
        exc.args = (exc.message,)


_TABLE_MISSING = " table not found"
_STATS_MISSING = "Specified database/table does not exist : "


def catalog_error(exc: BaseException, names: Names) -> None:
    """Reword the message of ``exc`` (raised by a call that named a catalog) as the stock HMS
    3.1 words it: a missing table is ``catalog.db.table``, a missing database its name."""
    message = getattr(exc, "message", None)
    if not isinstance(message, str) or names.foreign is not None:
        return  # another catalog's names are "<cat>.<db>" already
    for _, db, sent in names.dbs:
        if message.startswith(f"Function {db}.") and message.endswith(" does not exist"):
            message = f"Function {sent}.{message[len('Function ' + db) + 1:]}"
    if message.endswith(_TABLE_MISSING) and "." in message and " " not in message[
            :-len(_TABLE_MISSING)]:
        message = f"{names.catalog}.{message}"
    elif message.startswith(_STATS_MISSING):
        message = ("Specified catalog.database.table does not exist : "
                   f"{names.catalog}.{message[len(_STATS_MISSING):]}")
    exc.message = message
    exc.args = (message,)


def default_catalog_error(exc: BaseException) -> None:
    """Reword a missing table's message (``shop.t table not found``) raised to a Hive 3.1/4.x
    client that named no catalog as the stock HMS 3.1 and 4.x word it for any call: with the
    default catalog (``hive.shop.t table not found``)."""
    message = getattr(exc, "message", None)
    if not isinstance(message, str) or not message.endswith(_TABLE_MISSING):
        return
    name = message[:-len(_TABLE_MISSING)]
    if name.count(".") == 1 and " " not in name:
        exc.message = f"{DEFAULT_CATALOG}.{message}"
        exc.args = (exc.message,)


def strip_arguments(method: str, arg_names, args: list) -> Names:
    """Remove ``@cat#`` and ``@ref`` qualifiers from a call's arguments in place, and name each
    database as the families do (``<cat>.<db>`` for another catalog than hive); returns the ref
    and the catalogs named (None when a call names none)."""
    refs = _Refs()
    pattern_arg = CATALOG_PATTERN_ARGS.get(method)
    dbs = []
    for i, (name, value) in enumerate(zip(arg_names, args)):
        if isinstance(value, str):
            if name in DB_ARGS or (name == "name" and method in DB_NAME_METHODS):
                if value.startswith(CATALOG_MARK):
                    db = refs.take_catalog(value)
                    args[i] = refs.server_name(refs.catalog, refs.take(db)) \
                        if db is not None else None
                    if args[i] is not None:
                        dbs.append((i, args[i], value))
                else:
                    args[i] = refs.server_name(None, refs.take(value))
            elif name == pattern_arg:
                args[i] = refs.take_catalog(value)
        elif value is not None:
            _strip_value(value, refs, None)
    return Names(refs.ref, refs.catalog, tuple(dbs), refs.foreign, refs.absent)


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


def _strip_value(value, refs: _Refs, catalog: str | None) -> None:
    """``catalog``: the one the enclosing struct named (a struct's own field wins)."""
    if isinstance(value, list):
        for item in value:
            _strip_value(item, refs, catalog)
        return
    cls = type(value)
    if getattr(cls, "thrift_spec", None) is None:
        return
    catalog = _catalog_of(value) or catalog
    for field in DB_FIELDS.get(cls, ()):
        current = getattr(value, field, None)
        if isinstance(current, str):
            named = catalog
            if current.startswith(CATALOG_MARK) and cls in CATALOG_DB_FIELDS:
                current = refs.take_catalog(current)
                named = refs.catalog or catalog
                if current is None and cls is ttypes.GetPartitionsByNamesRequest:
                    setattr(value, field, None)  # "@hive#": the 4.x's null name, as sent
                    continue
                current = current or ""
            setattr(value, field, refs.server_name(named, refs.take(current)))
    for name in db_paths(cls):
        child = getattr(value, name, None)
        if child is not None:
            _strip_value(child, refs, catalog)


def qualify_result(value, result_spec, ref: str):
    """The call's answer with every database name qualified with ``@ref``. Stored bytes
    (:class:`Raw`) are decoded for it: qualified requests take the slower path."""
    success = next((f for f in result_spec if f is not None and f[0] == 0), None)
    if success is None or value is None:
        return value

    if isinstance(value, RawStream):  # each item is rewritten: read them all first
        value = value.materialise()
    return _qualify(value, success[1], success[3], SEPARATOR + ref)


def _decoded(cls, value):
    """A struct of an answer, decoded if stored bytes (a table keeps the creation metadata a
    3.x/4.x client is answered: :mod:`hms_proxy.thrift.layouts`)."""
    if not isinstance(value, Raw):
        return value
    if cls is ttypes.Table:
        return layouts.decode_table(value.data)
    return codec.decode(cls, value.data)


def _answered(cls, obj):
    """A rewritten struct of an answer: a table with a creation metadata as bytes in the
    3.x/4.x layout (the processor would write it in ours, without it)."""
    if cls is ttypes.Table:
        if obj.temporary is False:  # our decoder's default, which the stock never sends
            obj.temporary = None
        if layouts.creation_metadata(obj) is not None:
            return Raw(layouts.encode_table(obj))
    return obj


def _all_or_none_raw(items: list) -> list:
    """A list the processor writes: stored bytes all, or none (a table answered with its
    creation metadata is bytes among decoded ones)."""
    if any(isinstance(v, Raw) for v in items) and not all(isinstance(v, Raw) for v in items):
        return [v if isinstance(v, Raw) else Raw(layouts.encode_table(v) if isinstance(
            v, ttypes.Table) else codec.encode(v)) for v in items]
    return items


def _qualify(value, ttype, targ, suffix):
    if ttype == TType.STRUCT:
        cls = targ[0]
        obj = _decoded(cls, value)
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
        return _answered(cls, obj)
    if ttype == TType.LIST and isinstance(value, list):
        etype, eargs = targ[0], targ[1]
        if etype == TType.STRUCT:
            return _all_or_none_raw([_qualify(v, etype, eargs, suffix) for v in value])
        return value
    return value


def unqualify_result(value, result_spec):
    """The answer of a call in another catalog than hive as the stock HMS gives it: each
    database ``<cat>.<db>`` is ``<db>``, with ``<cat>`` in its struct's catalog field."""
    success = next((f for f in result_spec if f is not None and f[0] == 0), None)
    if success is None or value is None:
        return value
    if isinstance(value, RawStream):
        value = value.materialise()
    return _unqualify(value, success[1], success[3])


def _unqualify(value, ttype, targ):
    if ttype == TType.STRUCT:
        cls = targ[0]
        obj = _decoded(cls, value)
        for field in DB_FIELDS.get(cls, ()):
            current = getattr(obj, field, None)
            if isinstance(current, str) and CATALOG_DOT in current:
                catalog, db = split_db(current)
                if catalog is not None:
                    setattr(obj, field, db)
                    where = catalog_field(cls)
                    # (3.1 names no catalog in get_table_meta's answers, not even hive)
                    if where is not None and (cls is not ttypes.TableMeta or dialect.hive4()):
                        setattr(obj, where, catalog)
                    if cls is ttypes.Table:  # 2.3.10's id 16 is not a newer client's catName
                        obj.catName = None
        names = db_paths(cls)
        for f in cls.thrift_spec:
            if f is None or f[2] not in names:
                continue
            child = getattr(obj, f[2], None)
            if child is not None:
                setattr(obj, f[2], _unqualify(child, f[1], f[3]))
        return _answered(cls, obj)
    if ttype == TType.LIST and isinstance(value, list) and targ[0] == TType.STRUCT:
        return _all_or_none_raw([_unqualify(v, targ[0], targ[1]) for v in value])
    return value
