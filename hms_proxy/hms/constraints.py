"""Primary and foreign keys (create_table_with_constraints, get_primary_keys, get_foreign_keys,
add_primary_key, add_foreign_key, drop_constraint, get_all_table_constraints), as HMS 2.3
answers them; the kinds Hive 3.x added are in :mod:`hms_proxy.hms.column_constraints`, and
created and dropped through the calls here too.

Stored in the subtree of the table that owns them, so a drop removes them and a rename
carries them (``tables.RENAME_REWRITERS``)::

    db/<db>/table/<tbl>/cstr/pk                 PrimaryKeysResponse: the table's primary key
                                                rows, in the order they were added
    db/<db>/table/<tbl>/cstr/fk                 ForeignKeysResponse: the table's foreign key
                                                rows (the table is the child), pk_name unset
    db/<pdb>/table/<ptbl>/cstr/ref/<cdb>/<ctbl> ForeignKeysRequest: table <cdb>.<ctbl> has
                                                foreign keys to this one (found on a drop or
                                                rename of the parent); none for a self reference

HMS 2.3 semantics reproduced (ObjectStore and MetaStoreDirectSql on Derby):

* a constraint row is keyed by (name, position) across the whole metastore, primary and
  foreign keys alike; names are case-sensitive and kept as given. A name given as null is
  generated (``pk_<hash>_<millis>_<n>`` / ``fk_...``, the hash being Java's
  ``String.hashCode`` of the parameters) for the row with key_seq 1 and reused by the rows
  after it; a null name on a first row with another key_seq, or a name longer than 255
  characters, cannot be stored;
* ``add_primary_key`` / ``add_foreign_key`` run outside a transaction: rows are validated,
  then stored one by one; the first that cannot be stored (duplicate (name, position) or
  null name) stops the call with the rows before it kept, and the call is retried as HMS's
  RetryingHMSHandler does (10 times), ending in "One or more instances could not be made
  persistent" unless the retry meets another error first;
* ``create_table_with_constraints`` stores the table and its keys in one transaction;
* listings compare names as given (an upper-case name finds nothing); a foreign key is
  listed only while its parent table has a primary key row on the referenced column (the
  direct-SQL join), with that key's name as pk_name;
* dropping a table drops its keys and the foreign keys of other tables referencing it;
  ``drop_constraint`` removes every row with that name of the table, as parent or child.
"""
from __future__ import annotations

import time

from hms_proxy.hms import column_constraints, javafmt, names, tables
from hms_proxy.hms.family import Family, lower
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import catalog as keys
from kvmodel import codec

PK, FK, REF = "cstr/pk", "cstr/fk", "cstr/ref/"
RETRIES = 10  # hive.hmshandler.retry.attempts
MAX_NAME = 255  # KEY_CONSTRAINTS.CONSTRAINT_NAME as DataNucleus creates it
NOT_PERSISTED = "One or more instances could not be made persistent"


class _NotPersisted(Exception):
    """A row could not be stored (the backing database's key or a null name)."""


def pk_key(db, tbl):
    return f"{keys.table_key(db, tbl)}/{PK}"


def fk_key(db, tbl):
    return f"{keys.table_key(db, tbl)}/{FK}"


def ref_key(pdb, ptbl, cdb, ctbl):
    return f"{keys.table_key(pdb, ptbl)}/{REF}{cdb}/{ctbl}"


def _array_string(params) -> str:
    return "{" + ",".join("<null>" if p is None else str(p) for p in params) + "}"


def _identifier(name):
    """HiveStringUtils.normalizeIdentifier, with its NullPointerException."""
    if name is None:
        raise errors.MetaError(names.NPE_IDENTIFIER)
    return name.strip().lower()


def _plain(name) -> bool:
    """Names compared as given by HMS's SQL match only the stored (lower-case) spelling."""
    return isinstance(name, str) and name == name.strip().lower() and name != ""


def _flag(value) -> bool:
    return bool(value)


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- reading stored rows ---------------------------------------------------------------------
def read_pks(cat, db, tbl) -> list:
    data = cat.raw(pk_key(db, tbl))
    return list(codec.decode(ttypes.PrimaryKeysResponse, data).primaryKeys or []) if data else []


def read_fks(cat, db, tbl) -> list:
    data = cat.raw(fk_key(db, tbl))
    return list(codec.decode(ttypes.ForeignKeysResponse, data).foreignKeys or []) if data else []


def write_pks(cat, db, tbl, rows) -> None:
    if rows:
        cat.put(pk_key(db, tbl), ttypes.PrimaryKeysResponse(primaryKeys=rows))
    else:
        cat.delete(pk_key(db, tbl))


def write_fks(cat, db, tbl, rows) -> None:
    if rows:
        cat.put(fk_key(db, tbl), ttypes.ForeignKeysResponse(foreignKeys=rows))
    else:
        cat.delete(fk_key(db, tbl))


def _referencing(cat, db, tbl) -> list[tuple[str, str]]:
    """(db, table) of the other tables that have foreign keys to db.tbl."""
    prefix = f"{keys.table_key(db, tbl)}/{REF}"
    out = []
    for key, _ in cat.view.scan_prefix(prefix):
        cdb, _, ctbl = key[len(prefix):].partition("/")
        out.append((cdb, ctbl))
    return out


def _names_in_use(cat) -> set[tuple[str, int]]:
    """Every stored (constraint name, position): HMS's KEY_CONSTRAINTS primary key."""
    used = set()
    for db in cat.database_names():
        for tbl in cat.table_names(db):
            for row in read_pks(cat, db, tbl):
                used.add((row.pk_name, row.key_seq))
            for row in read_fks(cat, db, tbl):
                used.add((row.fk_name, row.key_seq))
    return used


def _generate(params, used_names: set[str]) -> str:
    """ObjectStore.generateConstraintName."""
    hashcode = javafmt.string_hash(_array_string(params), signed=True)
    for counter in range(10):
        name = f"{params[-1]}_{hashcode}_{int(time.time() * 1000)}_{counter}"
        if name.lower() not in used_names:
            return name
    raise errors.MetaError("Error while trying to generate the constraint name for "
                           + _array_string(params))


def _column(columns: dict, name):
    """The table's column matching ``name`` ignoring case (HMS compares equalsIgnoreCase)."""
    return None if name is None else columns.get(name.lower())


class _Batch:
    """Rows being added in one call: validated against the stored catalog plus what the
    same transaction stored already (create_table_with_constraints)."""

    def __init__(self, cat):
        self.cat = cat
        self._used = None
        self._lower: set = set()
        self._tables: dict = {}
        self._has_pk: dict = {}

    def used(self):
        if self._used is None:
            self._used = _names_in_use(self.cat)
            self._lower = {n.lower() for n, _ in self._used if n}
        return self._used

    def lower_names(self):
        """Stored names lower-cased (what constraintNameAlreadyExists compares against)."""
        self.used()
        return self._lower

    def take(self, name, position) -> None:
        self.used().add((name, position))
        self._lower.add(name.lower())

    def table(self, db, tbl):
        key = (_identifier(db), _identifier(tbl))
        if key not in self._tables:
            table = self.cat.table(*key)
            columns = {}
            for col in ((table.sd.cols if table.sd else None) or []) if table else []:
                columns.setdefault((col.name or "").lower(), col.name)
            self._tables[key] = (table, columns)
        return self._tables[key]

    def has_pk(self, db, tbl) -> bool:
        if (db, tbl) not in self._has_pk:
            self._has_pk[(db, tbl)] = self.cat.raw(pk_key(db, tbl)) is not None
        return self._has_pk[(db, tbl)]

    def primary_keys(self, rows):
        """Validated rows, (table db, table name, SQLPrimaryKey) each, names generated."""
        out, name = [], None
        for row in rows:
            table, columns = self.table(row.table_db, row.table_name)
            if table is None:
                raise errors.InvalidObject(f"Parent table not found: {row.table_name}")
            column = _column(columns, row.column_name)
            if column is None:
                raise errors.InvalidObject(f"Parent column not found: {row.column_name}")
            if self.has_pk(table.dbName, table.tableName):
                raise errors.MetaError(
                    f" Primary key already exists for: {table.dbName}.{row.table_name}")
            if row.pk_name is None:
                if _int(row.key_seq) == 1:
                    name = _generate([row.table_db, row.table_name, row.column_name, "pk"],
                                     self.lower_names())
            else:
                name = row.pk_name
            out.append((table.dbName, table.tableName, ttypes.SQLPrimaryKey(
                table_db=table.dbName, table_name=table.tableName, column_name=column,
                key_seq=_int(row.key_seq), pk_name=name, enable_cstr=_flag(row.enable_cstr),
                validate_cstr=_flag(row.validate_cstr), rely_cstr=_flag(row.rely_cstr))))
        return out

    def foreign_keys(self, rows):
        out, name = [], None
        for row in rows:
            parent, pcols = self.table(row.pktable_db, row.pktable_name)
            if parent is None:
                raise errors.InvalidObject(f"Parent table not found: {row.pktable_name}")
            if dialect.since(dialect.HIVE31) \
                    and not read_pks(self.cat, parent.dbName, parent.tableName) \
                    and not column_constraints.read_rows(self.cat, column_constraints.UNIQUE,
                                                         parent.dbName, parent.tableName):
                # HMS 3.1+ refuses a key that references nothing (2.3 stores it unlisted)
                raise errors.MetaError("Trying to define foreign key but there are no primary "
                                       "keys or unique keys for referenced table")
            child, ccols = self.table(row.fktable_db, row.fktable_name)
            if child is None:
                raise errors.InvalidObject(f"Child table not found: {row.fktable_name}")
            pcol = _column(pcols, row.pkcolumn_name)
            if pcol is None:
                raise errors.InvalidObject(f"Parent column not found: {row.pkcolumn_name}")
            ccol = _column(ccols, row.fkcolumn_name)
            if ccol is None:
                raise errors.InvalidObject(f"Child column not found: {row.fkcolumn_name}")
            if row.fk_name is None:
                if _int(row.key_seq) == 1:
                    name = _generate([row.fktable_db, row.fktable_name, row.pktable_db,
                                      row.pktable_name, row.pkcolumn_name, row.fkcolumn_name,
                                      "fk"], self.lower_names())
            else:
                name = row.fk_name
            out.append((child.dbName, child.tableName, ttypes.SQLForeignKey(
                pktable_db=parent.dbName, pktable_name=parent.tableName, pkcolumn_name=pcol,
                fktable_db=child.dbName, fktable_name=child.tableName, fkcolumn_name=ccol,
                key_seq=_int(row.key_seq), update_rule=_int(row.update_rule),
                delete_rule=_int(row.delete_rule), fk_name=name, pk_name=None,
                enable_cstr=_flag(row.enable_cstr), validate_cstr=_flag(row.validate_cstr),
                rely_cstr=_flag(row.rely_cstr))))
        return out

    def store(self, kind, validated) -> None:
        """Store rows one by one; a duplicate (name, position) or a null name raises
        _NotPersisted with the rows before it stored."""
        pending: dict = {}  # (db, tbl) -> the table's rows so far, written once at the end
        refs = set()
        read, write = (read_pks, write_pks) if kind == "pk" else (read_fks, write_fks)
        try:
            for db, tbl, row in validated:
                name = row.pk_name if kind == "pk" else row.fk_name
                if name is None or len(name) > MAX_NAME or (name, row.key_seq) in self.used():
                    raise _NotPersisted(name)
                self.take(name, row.key_seq)
                if (db, tbl) not in pending:
                    pending[(db, tbl)] = read(self.cat, db, tbl)
                pending[(db, tbl)].append(row)
                if kind == "fk" and (row.pktable_db, row.pktable_name) != (db, tbl):
                    refs.add((row.pktable_db, row.pktable_name, db, tbl))
        finally:  # what was stored before a failing row stays stored
            for (db, tbl), rows in pending.items():
                write(self.cat, db, tbl, rows)
            for pdb, ptbl, cdb, ctbl in refs:
                self.cat.put(ref_key(pdb, ptbl, cdb, ctbl),
                             ttypes.ForeignKeysRequest(pdb, ptbl, cdb, ctbl))


def add_with_constraints(cat, primary_keys, foreign_keys, unique=None, not_null=None,
                         default=None, check=None) -> None:
    """create_table_with_constraints, inside the transaction that stored the table: all or
    nothing (the caller's transaction is abandoned on any error)."""
    if primary_keys is None and foreign_keys is None:  # only the newer kinds given
        column_constraints.add_all(cat, unique, not_null, default, check)
        return
    batch = _Batch(cat)
    if primary_keys is None:
        raise errors.MetaError('java.lang.NullPointerException: Cannot invoke '
                               '"java.util.List.size()" because "pks" is null')
    validated = batch.primary_keys(primary_keys)
    try:
        batch.store("pk", validated)
        if foreign_keys is None:
            raise errors.MetaError('java.lang.NullPointerException: Cannot invoke '
                                   '"java.util.List.size()" because "fks" is null')
        batch.store("fk", batch.foreign_keys(foreign_keys))
    except _NotPersisted:
        raise errors.MetaError(NOT_PERSISTED) from None
    column_constraints.add_all(cat, unique, not_null, default, check)


# --- keeping keys right when tables are dropped or renamed ---------------------------------
def on_drop_table(cat, table, delete_data=False) -> None:
    """Before a table's subtree is deleted: forget it in the tables it references and drop
    the foreign keys of the tables that reference it (HMS deletes the constraints where the
    table is parent or child)."""
    db, tbl = table.dbName, table.tableName
    for row in read_fks(cat, db, tbl):
        if (row.pktable_db, row.pktable_name) != (db, tbl):
            cat.delete(ref_key(row.pktable_db, row.pktable_name, db, tbl))
    for cdb, ctbl in _referencing(cat, db, tbl):
        rows = read_fks(cat, cdb, ctbl)
        kept = [r for r in rows if (r.pktable_db, r.pktable_name) != (db, tbl)]
        if len(kept) != len(rows):
            write_fks(cat, cdb, ctbl, kept)


def on_rename_table(cat, old, new) -> None:
    """After a rename copied the subtree (RENAME_REWRITERS): point the other tables'
    references at the new name."""
    odb, otbl, ndb, ntbl = old.dbName, old.tableName, new.dbName, new.tableName
    for row in read_fks(cat, ndb, ntbl):  # as child: the parents' back references
        if (row.pktable_db, row.pktable_name) != (ndb, ntbl):
            cat.delete(ref_key(row.pktable_db, row.pktable_name, odb, otbl))
            cat.put(ref_key(row.pktable_db, row.pktable_name, ndb, ntbl),
                    ttypes.ForeignKeysRequest(row.pktable_db, row.pktable_name, ndb, ntbl))
    for cdb, ctbl in _referencing(cat, ndb, ntbl):  # as parent: the children's rows
        rows = read_fks(cat, cdb, ctbl)
        for r in rows:
            if (r.pktable_db, r.pktable_name) == (odb, otbl):
                r.pktable_db, r.pktable_name = ndb, ntbl
        write_fks(cat, cdb, ctbl, rows)


def _renamed_pks(value: bytes, new):
    resp = codec.decode(ttypes.PrimaryKeysResponse, value)
    for row in resp.primaryKeys or []:
        row.table_db, row.table_name = new.dbName, new.tableName
    return resp


def _renamed_fks(value: bytes, new):
    resp = codec.decode(ttypes.ForeignKeysResponse, value)
    for row in resp.foreignKeys or []:
        if (row.pktable_db, row.pktable_name) == (row.fktable_db, row.fktable_name):
            row.pktable_db, row.pktable_name = new.dbName, new.tableName
        row.fktable_db, row.fktable_name = new.dbName, new.tableName
    return resp


def _renamed_ref(value: bytes, new):
    ref = codec.decode(ttypes.ForeignKeysRequest, value)
    ref.parent_db_name, ref.parent_tbl_name = new.dbName, new.tableName
    return ref



def _show(value) -> str:
    return "null" if value is None else str(value)


def _named_catalog(rows: list) -> list:
    """Keys as a 3.x/4.x client gets them: in the hive catalog, named (another catalog's are
    named with their database, routing.unqualify_result); a 2.3 client's have no catalog."""
    if not dialect.since(dialect.HIVE31):
        return rows
    out = []
    for row in rows:
        db = row.table_db if isinstance(row, ttypes.SQLPrimaryKey) else row.fktable_db
        if keys.split_db(db)[0] is None and row.catName is None:
            row = codec.clone(row)
            row.catName = "hive"
        out.append(row)
    return out


class ConstraintCalls(Family):
    CASCADES = {"table_renamed": on_rename_table, "table_dropping": on_drop_table}
    RENAME_REWRITES = {PK: _renamed_pks, FK: _renamed_fks, REF: _renamed_ref}

    # --- create --------------------------------------------------------------------------
    def create_table_with_constraints(self, ctx, tbl, primaryKeys, foreignKeys,
                                      uniqueConstraints=None, notNullConstraints=None,
                                      defaultConstraints=None, checkConstraints=None):
        """create_table, and its constraints in the same transaction (the unique, not-null,
        default and check ones of a 3.x/4.x client: :mod:`hms_proxy.hms.column_constraints`)."""
        newer = (uniqueConstraints, notNullConstraints, defaultConstraints, checkConstraints)
        creating = tables.TableCalls(self.env)
        if primaryKeys is None and foreignKeys is None and not any(newer):
            return creating.create_table_with_environment_context(ctx, tbl, None)
        return creating.create_table_with_environment_context(
            ctx, tbl, None, lambda cat: add_with_constraints(cat, primaryKeys, foreignKeys, *newer))

    # --- reads ---------------------------------------------------------------------------
    def get_primary_keys(self, ctx, request):
        if request is None:
            raise errors.InternalError("request is null")
        db, tbl = request.db_name, request.tbl_name
        if db is None or tbl is None:
            field = "db_name" if db is None else "tbl_name"
            raise errors.protocol_error("PrimaryKeysRequest", field,
                                 f"db_name:{_show(db)}, tbl_name:{_show(tbl)}")
        if not (_plain(db) and _plain(tbl)):
            return self.t.PrimaryKeysResponse(primaryKeys=[])
        with self.reading(ctx) as cat:
            rows = read_pks(cat, db, tbl)
        return self.t.PrimaryKeysResponse(primaryKeys=_named_catalog(rows))

    def get_foreign_keys(self, ctx, request):
        if request is None:
            raise errors.InternalError("request is null")
        pdb, ptbl = request.parent_db_name, request.parent_tbl_name
        cdb, ctbl = request.foreign_db_name, request.foreign_tbl_name
        _identifier(cdb)  # HMS normalizes the foreign database name first
        out = []
        if not _plain(cdb) or (ctbl is not None and not _plain(ctbl)):
            return self.t.ForeignKeysResponse(foreignKeys=out)
        with self.reading(ctx) as cat:
            children = [ctbl] if ctbl is not None else cat.table_names(cdb)
            pk_cache: dict = {}
            for child in children:
                for row in read_fks(cat, cdb, child):
                    if pdb is not None and row.pktable_db != pdb:
                        continue
                    if ptbl is not None and row.pktable_name != ptbl:
                        continue
                    parent = (row.pktable_db, row.pktable_name)
                    if parent not in pk_cache:
                        pk_cache[parent] = (read_pks(cat, *parent)
                                            if cat.raw(keys.table_key(*parent)) else [])
                    for key in pk_cache[parent]:
                        if key.column_name == row.pkcolumn_name:
                            listed = codec.clone(row)
                            listed.pk_name = key.pk_name
                            out.append(listed)
        return self.t.ForeignKeysResponse(foreignKeys=_named_catalog(out))

    def get_all_table_constraints(self, ctx, request):
        """The table's six kinds at once (a Hive 4 client's ``getAllTableConstraints``)."""
        if request is None:
            raise errors.InternalError("request is null")
        db, tbl = lower(request.dbName), lower(request.tblName)
        pks = self.get_primary_keys(ctx, self.t.PrimaryKeysRequest(db, tbl)).primaryKeys
        fks = self.get_foreign_keys(ctx, self.t.ForeignKeysRequest(None, None, db, tbl)).foreignKeys
        newer = {}
        with self.reading(ctx) as cat:
            for kind in column_constraints.KINDS:
                newer[kind.rows_field] = column_constraints.answered(
                    column_constraints.read_rows(cat, kind, db, tbl) if db and tbl else [])
        return self.t.AllTableConstraintsResponse(allTableConstraints=self.t.SQLAllTableConstraints(
            primaryKeys=pks, foreignKeys=fks, **newer))

    # --- writes --------------------------------------------------------------------------
    def add_primary_key(self, ctx, req):
        rows = req.primaryKeyCols if req is not None else None
        if req is None:
            raise errors.InternalError("request is null")
        if rows is None:
            raise errors.protocol_error("AddPrimaryKeyRequest", "primaryKeyCols",
                                        "primaryKeyCols:null")
        return self._add(ctx, "pk", rows)

    def add_foreign_key(self, ctx, req):
        rows = req.foreignKeyCols if req is not None else None
        if req is None:
            raise errors.InternalError("request is null")
        if rows is None:
            raise errors.protocol_error("AddForeignKeyRequest", "foreignKeyCols",
                                        "foreignKeyCols:null")
        return self._add(ctx, "fk", rows)

    def _add(self, ctx, kind, rows):
        """Outside a transaction in HMS: stored rows stay when a later one fails, and
        RetryingHMSHandler runs the call again after a failed store."""
        for _ in range(RETRIES):
            with self.writing(ctx) as cat:
                batch = _Batch(cat)
                try:
                    validated = (batch.primary_keys(rows) if kind == "pk"
                                 else batch.foreign_keys(rows))
                except errors.InvalidObject as exc:  # undeclared: an internal error in HMS
                    raise errors.InternalError(exc.message) from None
                try:
                    batch.store(kind, validated)
                    return None
                except _NotPersisted:
                    pass  # the transaction keeps what was stored before the failure
        raise errors.MetaError(NOT_PERSISTED)

    def drop_constraint(self, ctx, req):
        if req is None:
            raise errors.InternalError("request is null")
        db, tbl, name = req.dbname, req.tablename, req.constraintname
        if db is None or tbl is None or name is None:
            field = "dbname" if db is None else "tablename" if tbl is None else "constraintname"
            raise errors.protocol_error("DropConstraintRequest", field,
                                 f"dbname:{_show(db)}, tablename:{_show(tbl)}, "
                                 f"constraintname:{_show(name)}")
        missing = errors.InternalError(  # NoSuchObjectException -> undeclared exception
            f"The constraint: {name} does not exist for the associated table: {db}.{tbl}")
        if not (_plain(db) and _plain(tbl)):
            raise missing
        with self.writing(ctx) as cat:
            if cat.raw(keys.table_key(db, tbl)) is None:
                raise missing
            found = False
            pks = read_pks(cat, db, tbl)
            kept = [r for r in pks if r.pk_name != name]
            if len(kept) != len(pks):
                write_pks(cat, db, tbl, kept)
                found = True
            own = read_fks(cat, db, tbl)
            kept = [r for r in own if r.fk_name != name]
            if len(kept) != len(own):
                write_fks(cat, db, tbl, kept)
                found = True
            for cdb, ctbl in _referencing(cat, db, tbl):
                rows = read_fks(cat, cdb, ctbl)
                kept = [r for r in rows if not (r.fk_name == name and
                                                (r.pktable_db, r.pktable_name) == (db, tbl))]
                if len(kept) != len(rows):
                    write_fks(cat, cdb, ctbl, kept)
                    found = True
            found = column_constraints.drop(cat, db, tbl, name) or found
            if not found:
                raise missing
        return None
