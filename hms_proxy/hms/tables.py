"""Tables: create, get, list, alter (incl. rename with partitions following), drop."""
from __future__ import annotations

import copy
import json
import re
import secrets
from urllib.parse import urlsplit

from thrift.Thrift import TType

from hms_proxy.hms import materialized_views, names, privileges, served_props, warehouse
from hms_proxy.hms.family import DDL_TIME, Family, column_problem, lower, match_names, now
from hms_proxy.hms.txn import acid as acid_validation
from hms_proxy.thrift import dialect, errors, layouts
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.replies import Raw
from hms_proxy.thrift.routing import DEFAULT_CATALOG
from kvmodel import catalog as keys
from kvmodel import codec

MANAGED, EXTERNAL, VIEW = "MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW"
FAST_STATS = ("numFiles", "totalSize")
ERASURE_CODED = "numFilesErasureCoded"  # a quick statistic of the Hive 4 metastore
DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"
STATS_GENERATED = "STATS_GENERATED"
COLUMN_STATS_ACCURATE = "COLUMN_STATS_ACCURATE"


def is_external(table) -> bool:
    return (table.parameters or {}).get("EXTERNAL", "").upper() == "TRUE" \
        or table.tableType == EXTERNAL


def is_view(table) -> bool:
    return table.tableType == VIEW


def normalize_columns(cols, t):
    return [t.FieldSchema(name=lower(c.name), type=c.type, comment=c.comment) for c in cols or []]


def normalize_sd(sd, t, copy_first: bool = True):
    """A storage descriptor as HMS hands it back: every collection present, names lower-case.
    ``copy_first=False`` normalises in place (for structs decoded from the request)."""
    if sd is None:
        sd = t.StorageDescriptor()
    elif copy_first:
        sd = codec.clone(sd)
    sd.cols = normalize_columns(sd.cols, t)
    if sd.location:
        sd.location = warehouse.qualify(sd.location)
    sd.compressed = bool(sd.compressed)
    if sd.numBuckets is None:  # what Java's unset int reads as, and HMS stores
        sd.numBuckets = 0
    serde = sd.serdeInfo or t.SerDeInfo()
    if serde.parameters is None:
        serde.parameters = {}
    sd.serdeInfo = serde
    sd.bucketCols = list(sd.bucketCols or [])
    sd.sortCols = list(sd.sortCols or [])
    sd.parameters = dict(sd.parameters or {})
    skew = sd.skewedInfo or t.SkewedInfo()
    skew.skewedColNames = list(skew.skewedColNames or [])
    skew.skewedColValues = list(skew.skewedColValues or [])
    skew.skewedColValueLocationMaps = dict(skew.skewedColValueLocationMaps or {})
    sd.skewedInfo = skew
    sd.storedAsSubDirectories = bool(sd.storedAsSubDirectories)
    return sd


def normalize_table(table, t):
    """The table as HMS stores and returns it."""
    tbl = copy.copy(table)
    tbl.tableName = lower(table.tableName)
    tbl.dbName = lower(table.dbName)
    tbl.sd = normalize_sd(table.sd, t)
    tbl.partitionKeys = normalize_columns(table.partitionKeys, t)
    tbl.parameters = dict(table.parameters or {})
    tbl.createTime = table.createTime or 0
    tbl.lastAccessTime = table.lastAccessTime or 0
    tbl.retention = table.retention or 0
    tbl.privileges = None
    tbl.temporary = None  # (optional, default false: the stock never sends it)
    tbl.rewriteEnabled = bool(table.rewriteEnabled)
    external = tbl.parameters.get("EXTERNAL", "").upper() == "TRUE"
    if tbl.tableType == MANAGED and external:
        tbl.tableType = EXTERNAL
    elif tbl.tableType == EXTERNAL and not external:
        tbl.tableType = MANAGED
    return tbl


def new_table_id() -> int:
    """A new table's ``id`` (Hive 4's ``Table.id``: set by the server, kept by alters and
    renames). The stock metastore counts them from one sequence; a versioned store cannot: two
    branches would hand out the same numbers, and their tables would clash when merged. So an id
    is a random positive 62-bit number, drawn once when the table is created and stored with it
    (a branch, a merge, a revert carry it as they carry the rest of the table). Two tables of a
    catalog share one with a chance of about n^2/2^63 (1 in 10^7 for a million tables)."""
    return secrets.randbits(62) or 1


def fast_stats() -> tuple[str, ...]:
    """The quick statistics the stock metastore of the calling client's generation keeps:
    Hive 4's also counts the erasure-coded files."""
    return FAST_STATS + (ERASURE_CODED,) if dialect.hive4() else FAST_STATS


def update_stats_fast(params: dict, location: str | None, made_dir: bool, env_context,
                      force: bool = False) -> None:
    """HMS's ``updateTableStatsFast`` / ``updatePartitionStatsFast``: numFiles and totalSize (and
    for a Hive 4 client numFilesErasureCoded, as its metastore adds) from
    a listing of the directory when it existed before (a directory just made is empty), and
    the basic-stats flag set only when the engine says it computed them (STATS_GENERATED=TASK)."""
    if DO_NOT_UPDATE_STATS in params:
        if params.pop(DO_NOT_UPDATE_STATS).lower() == "true":
            return
    if (not force and all(k in params for k in fast_stats())) or made_dir:
        return
    stats = warehouse.quick_stats(location)
    if stats is None:
        return
    params["numFiles"], params["totalSize"] = str(stats[0]), str(stats[1])
    if dialect.hive4():  # no file of a local or object-store warehouse is erasure-coded
        params[ERASURE_CODED] = "0"
    props = getattr(env_context, "properties", None) or {}
    if props.get(STATS_GENERATED) == "TASK":
        try:
            state = json.loads(params.get(COLUMN_STATS_ACCURATE) or "{}")
        except ValueError:
            state = {}
        state["BASIC_STATS"] = "true"
        params[COLUMN_STATS_ACCURATE] = json.dumps(state, separators=(",", ":"))
    else:
        params.pop(COLUMN_STATS_ACCURATE, None)


def mark_columns_accurate(params: dict, columns) -> None:
    """COLUMN_STATS_ACCURATE naming ``columns`` as having statistics, as HMS writes it when
    column statistics are written (or carried over to a renamed partition)."""
    try:
        state = json.loads(params.get(COLUMN_STATS_ACCURATE) or "{}")
    except ValueError:
        state = {}
    if not isinstance(state, dict):
        state = {}
    marks = state.setdefault("COLUMN_STATS", {})
    for col in columns:
        marks[col] = "true"
    params[COLUMN_STATS_ACCURATE] = json.dumps(state, separators=(",", ":"), sort_keys=True)


def managed_data_locations(cat, table) -> list[str]:
    """What dropping ``table`` with deleteData removes: a managed table's directory, and those
    of its partitions that live outside it; for a Hive 4 client (dialect.py), an external
    table's too when its ``external.table.purge`` is true, as Hive 4's metastore does."""
    if is_external(table) and not purges_external_data(table):
        return []
    if is_view(table) or not table.sd or not table.sd.location:
        return []
    root = table.sd.location.rstrip("/") + "/"
    out = [table.sd.location]
    for _, data in cat.partitions_raw(table.dbName, table.tableName):
        part = codec.decode(cat.t.Partition, data)
        loc = part.sd.location if part.sd else None
        if loc and not loc.startswith(root):
            out.append(loc)
    return out


def _relative(base: str | None, location: str) -> str:
    """``location`` relative to the directory ``base`` (Java's ``URI.relativize``): the rest
    after it, or the whole location when it is not under it."""
    if not base:
        return location
    prefix = warehouse.qualify(base).rstrip("/") + "/"
    return location[len(prefix):] if location.startswith(prefix) else location


def is_translated(table) -> bool:
    """A managed table the Hive 4 metastore's create call stored as external
    (``TRANSLATED_TO_EXTERNAL``): its renames move its data as a managed table's do."""
    return str((table.parameters or {}).get("TRANSLATED_TO_EXTERNAL", "")).upper() == "TRUE"


def purges_external_data(table) -> bool:
    """Hive 4's ``external.table.purge``: an external table whose files go when it or a
    partition of it is dropped with its data. Only for a Hive 4 client: HMS 2.3 never deletes
    an external table's files."""
    return dialect.hive4() and \
        str((table.parameters or {}).get("external.table.purge", "")).lower() == "true"


TABLE_TYPES = ("MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW", "INDEX_TABLE",
               "MATERIALIZED_VIEW")
MAX_TABLE_NAME = 256
NO_SD = ('java.lang.NullPointerException: Cannot invoke "org.apache.hadoop.hive.metastore.api.'
         'StorageDescriptor.getCols()" because the return value of "org.apache.hadoop.hive.'
         'metastore.api.Table.getSd()" is null')
NO_SD_4 = ('java.lang.NullPointerException: Cannot invoke "org.apache.hadoop.hive.metastore.api.'
           'StorageDescriptor.getLocation()" because "sd" is null')
NO_COLS = ('java.lang.NullPointerException: Cannot invoke "java.util.List.iterator()" because '
           '"cols" is null')
DUPLICATE_COLUMN = ('Add request failed : INSERT INTO COLUMNS_V2 (CD_ID,COMMENT,"COLUMN_NAME",'
                    'TYPE_NAME,INTEGER_IDX) VALUES (?,?,?,?,?) ')


NO_DB_NAME = "Null database name is not allowed"
_NUMBERS = (TType.I16, TType.I32, TType.I64, TType.BOOL, TType.DOUBLE, TType.BYTE)
ALLOW_PARTITION_KEY_CHANGE = "allow_partition_key_change"
EXPECTED_PARAMETER_KEY = "expected_parameter_key"
EXPECTED_PARAMETER_VALUE = "expected_parameter_value"


def check_expected_parameter(old, new, env_props: dict) -> None:
    """Hive 4's optimistic alter: the environment context names a table parameter and the
    value it must still have (``expected_parameter_key`` / ``_value``); the new table must
    set it."""
    key, value = env_props.get(EXPECTED_PARAMETER_KEY), env_props.get(EXPECTED_PARAMETER_VALUE)
    if key is None or value is None:
        return
    if (new.parameters or {}).get(key) is None:
        raise errors.MetaError(f"New value for expected key {key} is not set")
    current = (old.parameters or {}).get(key)
    if current != value:
        raise errors.MetaError(f"The table has been modified. The parameter value for key "
                               f"'{key}' is '{'null' if current is None else current}'. The "
                               f"expected was value was '{value}'")


def is_root_path(location: str | None) -> bool:
    """A location naming a file system's root (``hdfs://nn:8020``, ``file:/``, ``/``): Hadoop's
    ``Path.getParent()`` is null for it, and HMS 4 refuses such a table location."""
    if not location:
        return False
    return urlsplit(location).path in ("", "/")


def _struct_fields(cls) -> dict:
    """{field name: (thrift type, nested struct class or None)} of a generated struct."""
    out = {}
    for entry in getattr(cls, "thrift_spec", None) or ():
        if not entry:
            continue
        _, ttype, name, args = entry[0], entry[1], entry[2], entry[3]
        nested = None
        if isinstance(args, (list, tuple)) and args and isinstance(args[0], type):
            nested = args[0]  # a struct
        elif isinstance(args, (list, tuple)) and len(args) >= 2 and isinstance(args[1],
                                                                                (list, tuple)):
            nested = args[1][0] if args[1] and isinstance(args[1][0], type) else None  # list
        out[name] = (ttype, nested)
    return out


def check_projection(spec, t) -> list[list[str]] | None:
    """The fields of a GetProjectionsSpec for tables, as paths ("sd.location"): HMS 4 refuses
    a parameter-key pattern without a field list, and a field a table does not have. None when one is a collection
    (a list or map, or in one): HMS 4 then answers the whole tables."""
    if spec.fieldList is None and (spec.includeParamKeyPattern or spec.excludeParamKeyPattern):
        raise errors.InvalidOperation("A parameter key pattern needs a list of fields")
    paths, whole = [], False
    for field in spec.fieldList or []:
        cls, path = t.Table, (field or "").split(".")
        for part in path:
            known = _struct_fields(cls) if cls is not None else {}
            if part not in known:
                raise errors.MetaError(f"Invalid field name {field}")
            whole = whole or known[part][0] in (TType.LIST, TType.MAP, TType.SET)
            cls = known[part][1]
        paths.append(path)
    return None if whole else paths


def project(table, paths: list[list[str]], t):
    """``table`` with only the fields of ``paths`` (and those of numbers, which HMS always
    sets) left: each nested struct keeps the fields asked of it."""
    def keep(obj, cls, wanted: list[list[str]]):
        if obj is None:
            return None
        if isinstance(obj, list):
            return [keep(o, cls, wanted) for o in obj]
        out = cls()
        whole = {p[0] for p in wanted if len(p) == 1}
        deeper: dict[str, list[list[str]]] = {}
        for p in wanted:
            if len(p) > 1:
                deeper.setdefault(p[0], []).append(p[1:])
        for name, (ttype, nested) in _struct_fields(cls).items():
            value = getattr(obj, name, None)
            if name in whole or (cls is t.Table and ttype in _NUMBERS):
                setattr(out, name, value)
            elif name in deeper and nested is not None:
                setattr(out, name, keep(value, nested, deeper[name]))
        return out

    return keep(table, t.Table, paths)


def check_table_name_length(name: str) -> None:
    """TBLS.TBL_NAME is a VARCHAR(256) in HMS 2.3's schema; the error is Derby's."""
    if len(name) > MAX_TABLE_NAME:
        raise errors.MetaError(f'Attempt to store value "{lower(name)}" in column "TBL_NAME" that '
                               f"has maximum length of {MAX_TABLE_NAME}. Please correct your data!")


def check_duplicate_columns(table) -> None:
    cols = [lower(c.name) for c in (table.sd.cols if table.sd else None) or []]
    if len(set(cols)) != len(cols):
        raise errors.MetaError(DUPLICATE_COLUMN)  # the backing database's unique key, in HMS


def check_columns(table) -> None:
    problem = column_problem(table.sd.cols if table.sd else [])
    if problem:
        raise errors.InvalidObject(f"Invalid column {problem}")
    problem = column_problem(table.partitionKeys)
    if problem:
        raise errors.InvalidObject(f"Invalid partition column {problem}")


def _renamed_stats(value: bytes, new):
    stats = codec.decode(ttypes.ColumnStatistics, value)
    stats.statsDesc.dbName, stats.statsDesc.tableName = new.dbName, new.tableName
    return stats


class TableCalls(Family):
    # a renamed table's column statistics move with it (the other sub-prefixes of its
    # subtree are declared by the families that keep them: hms_proxy/hms/cascades.py)
    RENAME_REWRITES = {"colstats/": _renamed_stats, "partstats/": _renamed_stats}

    # --- create -------------------------------------------------------------------------
    def create_table(self, ctx, tbl):
        return self.create_table_with_environment_context(ctx, tbl, None)

    def create_table_with_environment_context(self, ctx, tbl, environment_context, also=None,
                                              kept_managed=False):
        """``kept_managed``: a Hive 4 create_table_req's table without a type, which the stock
        4.x keeps managed (not translated to external), in the managed warehouse."""
        if tbl is not None and tbl.tableName is None:
            raise errors.MetaError(  # HMS normalizes the name before it checks it
                'java.lang.NullPointerException: Cannot invoke "java.lang.CharSequence.length()"'
                ' because "this.text" is null')
        if tbl is None or not names.validate_name(tbl.tableName or ""):
            raise errors.InvalidObject(f"{getattr(tbl, 'tableName', None)} is not a valid object name")
        if tbl.sd is None:  # HMS reads its columns first (4.x its location)
            raise errors.MetaError(NO_SD_4 if dialect.hive4() else NO_SD)
        if tbl.sd.cols is None:
            raise errors.MetaError(NO_COLS)
        check_columns(tbl)
        hive4 = dialect.hive4()
        if hive4 and tbl.dbName is None:
            raise errors.MetaError(NO_DB_NAME)
        if hive4 and is_root_path(tbl.sd.location):
            raise errors.InvalidObject(f"{tbl.tableName} location must not be root path")
        acid_validation.check_create(tbl)  # HMS's pre-event listener: before the lookups
        table = normalize_table(tbl, self.t)
        db_name, name = table.dbName, table.tableName
        made_dir = False
        with self.writing(ctx) as cat:
            db = cat.database(db_name)
            if db is None:  # HMS 4.x names the catalog
                raise errors.InvalidObject(f"database {keys.full_name(db_name)}"
                                           if dialect.hive4() else db_name)
            if cat.raw(keys.table_key(db_name, name)) is not None:
                raise errors.AlreadyExists(f"Table {tbl.tableName} already exists")
            check_table_name_length(tbl.tableName)  # what HMS's database refuses
            check_duplicate_columns(tbl)
            if tbl.sd.serdeInfo is None:  # what HMS's ObjectStore refuses to store
                raise errors.MetaError("Invalid SerDeInfo object")
            if not is_view(table):
                if not table.sd.location:
                    base = db.locationUri
                    if hive4 and table.tableType == MANAGED and (kept_managed or str(
                            table.parameters.get("transactional", "")).lower() == "true"):
                        base = self._managed_home(db)  # Hive 4: the managed warehouse
                    table.sd.location = self.env.warehouse.default_table_location(base, name)
                made_dir = warehouse.mkdirs(table.sd.location)
                if not table.partitionKeys:
                    update_stats_fast(table.parameters, table.sd.location, made_dir,
                                      environment_context)
            table.createTime = now()
            table.parameters.setdefault(DDL_TIME, str(table.createTime))
            table.id = new_table_id()  # the client's is ignored, as the stock ignores it
            cat.put(keys.table_key(db_name, name), table)
            creation = layouts.creation_metadata(tbl)  # a 3.x/4.x client's view's
            if creation is not None and table.tableType == materialized_views.MATERIALIZED_VIEW:
                materialized_views.store_creation(cat, table, creation)
            privileges.store_table_privileges(  # the grants given with the table
                cat, table, tbl.privileges)
            if also is not None:  # create_table_with_constraints: in the same transaction
                try:
                    also(cat)
                except Exception:
                    if made_dir:
                        warehouse.delete(table.sd.location)
                    raise

    def _managed_home(self, db) -> str:
        """Hive 4's ``Warehouse.getDatabaseManagedPath``: where a managed table of ``db`` goes
        by default (its managed location, else another catalog's database's location, else
        the warehouse: its root for ``default``, ``<db>.db`` under it for any other)."""
        if getattr(db, "managedLocationUri", None):
            return warehouse.qualify(db.managedLocationUri)
        catalog, plain = keys.split_db(db.name)
        if catalog is not None and catalog != DEFAULT_CATALOG:
            return db.locationUri
        return self.env.warehouse.default_database_location(plain)

    # --- reads --------------------------------------------------------------------------
    def get_table(self, ctx, dbname, tbl_name):
        data = self.get_raw(ctx, keys.table_key(lower(dbname), lower(tbl_name)))
        if data is None:
            raise errors.NoSuchObject(f"{lower(dbname)}.{lower(tbl_name)} table not found")
        return materialized_views.with_creation(lambda key: self.get_raw(ctx, key), data)

    def get_table_req(self, ctx, req):
        try:
            return self.t.GetTableResult(table=self.get_table(ctx, req.dbName, req.tblName))
        except errors.NoSuchObject as exc:
            # a 3.x/4.x client names the catalog; the stock HMS then names it in the error
            if req.catName and exc.message.endswith(" table not found") and \
                    not exc.message.startswith(f"{lower(req.catName)}."):
                raise errors.NoSuchObject(f"{lower(req.catName)}.{exc.message}") from None
            raise

    def get_table_objects_by_name(self, ctx, dbname, tbl_names):
        if not dbname:
            raise errors.UnknownDB("DB name is null or empty")
        if tbl_names is None:
            raise errors.InvalidOperation(f"{dbname} cannot find null tables")
        db = lower(dbname)
        wanted = sorted({lower(n) for n in tbl_names})
        with self.reading(ctx) as cat:
            if cat.raw(keys.db_key(db)) is None:
                raise errors.UnknownDB(f"Could not find database {db}")
            found = [cat.raw(keys.table_key(db, n)) for n in wanted]
            return [materialized_views.with_creation(cat.raw, d) for d in found if d is not None]

    def get_table_objects_by_name_req(self, ctx, req):
        spec = req.projectionSpec
        names = req.tblNames
        if names is None and req.tablesPattern is not None and "*" in (req.dbName or ""):
            fields = check_projection(spec, self.t) if spec is not None else None
            tables = self._objects_across_databases(ctx, req)
        else:
            if names is None and req.tablesPattern is not None:  # Hive 4: the matching tables
                db = lower(req.dbName or "")
                with self.reading(ctx) as cat:
                    if cat.raw(keys.db_key(db)) is None:
                        raise errors.UnknownDB(
                            f"Could not find database hive.{db}: database hive.{db}")
                names = match_names(req.tablesPattern, self._table_names(ctx, db))
            fields = check_projection(spec, self.t) if spec is not None else None
            tables = self.get_table_objects_by_name(ctx, req.dbName, names)
        if fields:  # Hive 4's projection: only the fields asked for (and the numbers)
            tables = [project(codec.decode(self.t.Table, raw.data), fields, self.t)
                      for raw in tables]
        return self.t.GetTablesResult(tables=tables)

    def _objects_across_databases(self, ctx, req) -> list:
        """A database name with ``*`` beside a table pattern: the stock 4.x matches it against
        the databases' names (``*`` any characters, nothing else special: ``a*|b*`` matches
        none) and takes the matching tables of each; when no database matches, the name is
        an unknown database."""
        tables = []
        db_pattern = lower(req.dbName)
        wanted = re.compile(".*".join(re.escape(part) for part in db_pattern.split("*")))
        with self.reading(ctx) as cat:
            plains = [n for n in cat.database_names(ctx.catalog) if wanted.fullmatch(n)]
        if not plains:
            raise errors.UnknownDB(f"Could not find database hive.{db_pattern}: database "
                                   f"hive.{db_pattern}")
        for plain in plains:
            db = keys.in_catalog(ctx.catalog, plain)
            names = match_names(req.tablesPattern, self._table_names(ctx, db))
            tables += self.get_table_objects_by_name(ctx, db, names) if names else []
        return tables

    def _table_names(self, ctx, db):
        return self.cached(ctx, ("tablenames", db), lambda cat: tuple(cat.table_names(db)))

    def get_tables(self, ctx, db_name, pattern):
        return match_names(pattern, self._table_names(ctx, lower(db_name)))

    def get_tables_by_type(self, ctx, db_name, pattern, tableType):
        if tableType and tableType not in TABLE_TYPES:
            raise errors.MetaError("java.lang.IllegalArgumentException: No enum constant "
                                   f"org.apache.hadoop.hive.metastore.TableType.{tableType}")
        db = lower(db_name)
        out = []
        with self.reading(ctx) as cat:
            for name in match_names(pattern, cat.table_names(db)):
                table = cat.table(db, name)
                if table is not None and (not tableType or table.tableType == tableType):
                    out.append(name)
        return out

    def get_all_tables(self, ctx, db_name):
        if db_name is None and dialect.hive4():  # the stock 4.x normalizes the null name
            raise errors.MetaError(names.NPE_IDENTIFIER)
        return list(self._table_names(ctx, lower(db_name)))

    def get_table_meta(self, ctx, db_patterns, tbl_patterns, tbl_types):
        out = []
        types = set(tbl_types or [])
        with self.reading(ctx) as cat:
            for plain in match_names(db_patterns, cat.database_names(ctx.catalog)):
                db = keys.in_catalog(ctx.catalog, plain)  # the call's catalog's (routing)
                for name in match_names(tbl_patterns, cat.table_names(db)):
                    table = cat.table(db, name)
                    if table is None or (types and table.tableType not in types):
                        continue
                    meta = self.t.TableMeta(
                        dbName=db, tableName=name, tableType=table.tableType,
                        comments=(table.parameters or {}).get("comment"),
                        catName=DEFAULT_CATALOG if dialect.hive4() else None)
                    if dialect.hive4():  # HMS 4 also names the owner
                        meta.ownerName = table.owner
                        meta.ownerType = table.ownerType if table.ownerType is not None \
                            else (self.t.PrincipalType.USER if table.owner else None)
                    out.append(meta)
        return out

    def get_fields(self, ctx, db_name, table_name):
        return self.get_fields_with_environment_context(ctx, db_name, table_name, None)

    def get_fields_with_environment_context(self, ctx, db_name, table_name, environment_context):
        table = self._table_for_schema(ctx, db_name, table_name)
        return list(table.sd.cols or [])

    def get_schema(self, ctx, db_name, table_name):
        return self.get_schema_with_environment_context(ctx, db_name, table_name, None)

    def get_schema_with_environment_context(self, ctx, db_name, table_name, environment_context):
        table = self._table_for_schema(ctx, db_name, table_name)
        return list(table.sd.cols or []) + list(table.partitionKeys or [])

    def _table_for_schema(self, ctx, db_name, table_name):
        base = (table_name or "").split(".", 1)[0]
        db = lower(db_name)
        with self.reading(ctx) as cat:
            if cat.raw(keys.db_key(db)) is None:
                raise errors.UnknownDB(f"There is no database named {keys.split_db(db)[1]}")
            table = cat.table(db, lower(base))
        if table is None:
            raise errors.UnknownTable(f"{keys.split_db(db)[1]}.{lower(base)} table not found")
        return table

    # --- alter --------------------------------------------------------------------------
    def alter_table(self, ctx, dbname, tbl_name, new_tbl):
        return self.alter_table_with_environment_context(ctx, dbname, tbl_name, new_tbl, None)

    def alter_table_with_cascade(self, ctx, dbname, tbl_name, new_tbl, cascade):
        return self._alter_table(ctx, dbname, tbl_name, new_tbl, None, bool(cascade))

    def alter_table_with_environment_context(self, ctx, dbname, tbl_name, new_tbl,
                                             environment_context):
        cascade = (getattr(environment_context, "properties", None) or {}).get("CASCADE") == "true"
        return self._alter_table(ctx, dbname, tbl_name, new_tbl, environment_context, cascade)

    def _alter_table(self, ctx, dbname, tbl_name, new_tbl, env_context, cascade):
        if new_tbl is None:
            raise errors.InvalidOperation("New table is invalid: null")
        hive4 = dialect.hive4()
        if hive4:  # HMS 4 lower-cases the new names first, then checks the new columns
            for field in ("tableName", "dbName"):
                if getattr(new_tbl, field) is None:
                    raise errors.MetaError(
                        'java.lang.NullPointerException: Cannot invoke "String.toLowerCase()" '
                        'because the return value of "org.apache.hadoop.hive.metastore.api.'
                        f'Table.get{field[0].upper()}{field[1:]}()" is null')
            if new_tbl.sd is not None and new_tbl.sd.cols is None \
                    and names.validate_name(new_tbl.tableName):
                raise errors.MetaError(NO_COLS)
        db, name = lower(dbname), lower(tbl_name)
        moves: tuple[str, str] | None = None
        self._iceberg_on_its_branch(ctx, db, name, new_tbl)
        with self.writing(ctx) as cat:
            old = cat.table(db, name)
            if old is None:
                raise errors.InvalidOperation(f"{db}.{name} table not found")
            acid_validation.check_alter(old, new_tbl)  # HMS's pre-event listener
            if new_tbl.sd is None:  # then HMS reads the new columns
                raise errors.MetaError(NO_SD)
            if not names.validate_name(new_tbl.tableName or ""):
                raise errors.InvalidOperation(f"{new_tbl.tableName} is not a valid object name")
            problem = column_problem(new_tbl.sd.cols if new_tbl.sd else [])
            if problem:
                raise errors.InvalidOperation(f"Invalid column {problem}")
            env_props = getattr(env_context, "properties", None) or {}
            if hive4:
                check_expected_parameter(old, new_tbl, env_props)
            new = normalize_table(new_tbl, self.t)
            new.dbName = new.dbName or db
            if hive4:
                self._check_partition_names(old, new, env_props)
            else:
                self._check_partition_keys(old, new)
            if hive4 and new_tbl.sd.serdeInfo is None:  # what HMS's ObjectStore refuses
                raise errors.MetaError("Invalid SerDeInfo object")
            if self.env.stats_properties:  # what we served is not written back
                served_props.strip_served(self.env, cat, old, old, new)
            rename = (new.dbName, new.tableName) != (db, name)
            if rename:
                moves = self._rename(cat, old, new)
            new.createTime = old.createTime
            new.id = old.id if old.id is not None else new_table_id()  # (one made before ids)
            # HMS 2.3 recounts an unpartitioned table's files on an alter, except on a rename
            # that moves the data (a managed table at its default place).
            if moves is None and not new.partitionKeys and not is_view(new) \
                    and env_props.get(DO_NOT_UPDATE_STATS, "").lower() != "true":
                if hive4 and not new.sd.location:  # HMS 4 lists the files at a Path of it
                    raise errors.MetaError("java.lang.IllegalArgumentException: Can not create "
                                           "a Path from a null string")
                update_stats_fast(new.parameters, new.sd.location, False, env_context, force=True)
            if not new.parameters.get(DDL_TIME):
                new.parameters[DDL_TIME] = str(now())
            if not rename:
                self._drop_stale_column_stats(cat, old, new)
            if cascade or rename:
                self._rewrite_partitions(cat, old, new, cascade, moves)
            if rename:
                cat.delete_table_subtree(db, name)
            cat.put(keys.table_key(new.dbName, new.tableName), new)
        if rename:
            self.env.cascades.run("table_moved", self.env, old, new)
        if moves:
            warehouse.rename(*moves)

    def _iceberg_on_its_branch(self, ctx, db: str, name: str, new_tbl) -> None:
        """An Iceberg commit of a Hive-catalog client (pyiceberg's HiveCatalog, Spark's or
        Trino's Iceberg over Thrift) on a branch of a lakeFS repository writes its files where
        the table's metadata file says, which for a table the branch inherited is the branch it
        came from: its new files are moved to this branch before the commit is written
        (kvmodel.iceberg_anchor.relocate_commit), and the table's location with them; when
        that cannot be done the commit is refused, its files removed from the other branch."""
        params = new_tbl.parameters or {}
        location = params.get("metadata_location")
        if not location or str(params.get("table_type", "")).upper() != "ICEBERG":
            return
        from kvmodel import iceberg_anchor

        if not iceberg_anchor.anchors(self.env.store):
            return
        ref = self.ref_of(ctx)
        other = iceberg_anchor.ref_of(iceberg_anchor.Anchor(self.env.store).paths, location)
        if other is None:
            return
        with self.reading(ctx) as cat:
            old = cat.table(db, name)
        before = (old.parameters or {}).get("metadata_location") if old is not None else None
        try:
            moved = iceberg_anchor.relocate_commit(self.env.store, ref, before, location)
        except iceberg_anchor.Misplaced as exc:
            raise errors.MetaError(
                f"Iceberg commit of {db}.{name} on branch {ref} refused: its files were written "
                f"on another branch (where the table's metadata file pointed when the client "
                f"read it) and could not be moved: {exc}. Commit through the Iceberg REST "
                f"catalog with warehouse={ref}, "
                "which writes on the branch") from None
        new_tbl.parameters = {**params, "metadata_location": moved}

    def _drop_stale_column_stats(self, cat, old, new) -> None:
        """As HMS's alter (HiveAlterHandler.alterTableUpdateTableColumnStats): the table-level
        statistics of a column dropped or retyped go, and so does its mark in the new
        table's COLUMN_STATS_ACCURATE (a client sends back the mark it read)."""
        def by_name_type(table):
            return {(c.name.lower(), (c.type or "").lower())
                    for c in (table.sd.cols if table.sd else None) or []}

        new_cols = by_name_type(new)
        if by_name_type(old) <= new_cols:
            return
        gone = []
        for col, data in list(cat.table_colstats(old.dbName, old.tableName)):
            obj = codec.decode(self.t.ColumnStatistics, data).statsObj[0]
            if (obj.colName.lower(), (obj.colType or "").lower()) not in new_cols:
                cat.delete(keys.table_colstats_key(old.dbName, old.tableName, col))
                gone.append(obj.colName)
        params = new.parameters or {}
        if not gone or COLUMN_STATS_ACCURATE not in params:
            return
        try:
            state = json.loads(params[COLUMN_STATS_ACCURATE])
        except ValueError:
            return
        marks = state.get("COLUMN_STATS") if isinstance(state, dict) else None
        if isinstance(marks, dict):
            for col in gone:
                marks.pop(col, None)
            state["COLUMN_STATS"] = dict(sorted(marks.items()))  # HMS keeps them in a TreeMap
            params[COLUMN_STATS_ACCURATE] = json.dumps(state, separators=(",", ":"))

    @staticmethod
    def _check_partition_keys(old, new) -> None:
        if not old.partitionKeys or is_view(old):
            return
        new_keys = new.partitionKeys or []
        same = len(old.partitionKeys) == len(new_keys) and all(
            a.name == b.name and a.type == b.type for a, b in zip(old.partitionKeys, new_keys))
        if not same:
            raise errors.InvalidOperation("partition keys can not be changed.")

    @staticmethod
    def _check_partition_names(old, new, env_props) -> None:
        """HMS 4's check: the partition keys keep their number and names (their types and
        comments may change), except for a view or with ``allow_partition_key_change``."""
        if is_view(old) or env_props.get(ALLOW_PARTITION_KEY_CHANGE, "").lower() == "true":
            return
        olds, news = old.partitionKeys or [], new.partitionKeys or []
        if len(olds) != len(news) or any(a.name != b.name for a, b in zip(olds, news)):
            raise errors.InvalidOperation("partition keys can not be changed.")

    def _rename(self, cat, old, new):
        """Validate a rename; for a managed table at its default place, plan the move of its
        directory and point the new table there. Returns (src, dst) or None."""
        if cat.raw(keys.table_key(new.dbName, new.tableName)) is not None:
            raise errors.InvalidOperation(
                f"new table {new.dbName}.{new.tableName} already exists")
        target_db = cat.database(new.dbName)
        if target_db is None:
            # Worded as HMS 2.3 words it, naming the old database first.
            raise errors.InvalidOperation(
                f"Unable to change partition or table. Database {old.dbName} does not exist "
                f"Check metastore logs for detailed stack.{new.dbName}")
        old_loc = old.sd.location if old.sd else None
        new_loc = new.sd.location if new.sd else None
        if is_view(old) or not old_loc:
            return None
        if not new_loc:  # HMS compares the two locations first (String.compareTo(null))
            raise errors.MetaError('java.lang.NullPointerException: Cannot read field "value" '
                                   'because "anotherString" is null')
        hive4 = dialect.hive4()
        if hive4 and is_translated(old) and is_translated(new):
            # Hive 4 moves a table it translated to external under the new name in the
            # database's directory, wherever it was
            pass
        elif is_external(old) or new_loc != old_loc:
            return None
        else:
            # a managed table made at a location of its own stays there (HMS: "treated like an
            # external table in the table rename")
            old_db = cat.database(old.dbName)
            base = (getattr(old_db, "managedLocationUri", None) if hive4 else None) \
                or old_db.locationUri
            if _relative(base, old_loc).rstrip("/").lower() != old.tableName.lower():
                return None
        dest = self.env.warehouse.default_table_location(target_db.locationUri, new.tableName)
        if warehouse.exists(dest):
            qualified = f"{keys.full_name(new.dbName)}" if hive4 else new.dbName
            raise errors.InvalidOperation(f"New location for this table {qualified}."
                                          f"{new.tableName} already exists : {dest}")
        new.sd.location = dest
        return old_loc, dest

    def _rewrite_partitions(self, cat, old, new, cascade, moves) -> None:
        """Carry partitions (and, on rename, all column statistics) over to the new table."""
        renamed = (new.dbName, new.tableName) != (old.dbName, old.tableName)
        for name, data in list(cat.partitions_raw(old.dbName, old.tableName)):
            part = codec.decode(self.t.Partition, data)
            part.dbName, part.tableName = new.dbName, new.tableName
            if cascade and part.sd is not None:
                part.sd.cols = [codec.clone(c) for c in new.sd.cols or []]
            if moves and part.sd and part.sd.location and part.sd.location.startswith(moves[0]):
                part.sd.location = moves[1] + part.sd.location[len(moves[0]):]
            cat.put(keys.part_key(new.dbName, new.tableName, name), part)
        if not renamed:
            return
        old_root = keys.table_key(old.dbName, old.tableName) + "/"
        new_root = keys.table_key(new.dbName, new.tableName) + "/"
        for sub, rewrite in self.env.cascades.rename_rewrites().items():
            for key, value in list(cat.view.scan_prefix(old_root + sub)):
                cat.put(new_root + key[len(old_root):], rewrite(value, new))
        self.env.cascades.run("table_renamed", cat, old, new)

    # --- drop ---------------------------------------------------------------------------
    def drop_table(self, ctx, dbname, name, deleteData):
        return self.drop_table_with_environment_context(ctx, dbname, name, deleteData, None)

    def drop_table_with_environment_context(self, ctx, dbname, name, deleteData,
                                            environment_context):
        if dbname is None or name is None:
            raise errors.MetaError(  # HMS normalizes the names before it looks
                names.NPE_IDENTIFIER)
        db, tbl = lower(dbname), lower(name)
        doomed: list[str] = []
        with self.writing(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            if deleteData:
                doomed = managed_data_locations(cat, table)
            doomed.extend(self.env.cascades.run("table_dropping", cat, table, deleteData))
            cat.delete_table_subtree(db, tbl)
        self.env.cascades.run("table_dropped", self.env, table)
        for location in doomed:
            warehouse.delete(location)
