"""Indexes (add_index, alter_index, drop_index_by_name, get_index_by_name, get_index_names,
get_indexes), as HMS 2.3 answers them (Hive 3 removed indexes).

An index is stored in the subtree of the table it indexes, so a drop removes it and a rename
carries it (``tables.RENAME_REWRITERS``)::

    db/<db>/table/<tbl>/index/<name>    Index (name lower-case, as HMS keys it)

Its index table is an ordinary table (tableType ``INDEX_TABLE``, listed by get_all_tables
like any other), created by ``add_index`` when the call brings one and dropped with the
index. As in HMS: ``drop_table`` refuses an index table, dropping the indexed table drops
its indexes and their tables, ``alter_index`` changes only the parameters, the ``max``
arguments of the listings are ignored, and ``add_index`` answers the given Index (with
``createTime`` and ``transient_lastDdlTime`` set) even when HMS's store silently failed to
keep it (no storage descriptor, no index table of that name).
"""
from __future__ import annotations

from hms_proxy.hms import javafmt, names, tables, warehouse
from hms_proxy.hms.family import DDL_TIME, Family, now
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import catalog as keys
from kvmodel import codec

SUB = "index/"
INDEX_TABLE = "INDEX_TABLE"


def _identifier(name):
    """HiveStringUtils.normalizeIdentifier, with its NullPointerException."""
    if name is None:
        raise errors.MetaError(names.NPE_IDENTIFIER)
    return name.strip().lower()


def _java(text) -> str:
    return "null" if text is None else text


def index_prefix(db, tbl):
    return f"{keys.table_key(db, tbl)}/{SUB}"


def index_key(db, tbl, name):
    return index_prefix(db, tbl) + name


def qualified(db, name):
    """MetaStoreUtils.getQualifiedName: ``db.tbl`` in the name wins over the default db."""
    if name is not None and "." in name:
        first, _, rest = name.partition(".")
        return first, rest
    return db, name


def _stored_indexes(cat, db, tbl):
    for _, data in cat.view.scan_prefix(index_prefix(db, tbl)):
        yield codec.decode(ttypes.Index, data)


def _index_table_of(index):
    """(db, table) of a stored index's table."""
    db, name = qualified(index.dbName, index.indexTableName)
    return _identifier(db), _identifier(name)


def _public(index):
    """A stored index as HMS returns it: the index table without its database."""
    out = codec.clone(index)
    out.indexTableName = qualified(None, index.indexTableName)[1]
    return out


def _drop_index_table(cat, index, delete_data: bool) -> list[str]:
    """Remove an index's table; the data locations to delete after the transaction."""
    db, name = _index_table_of(index)
    table = cat.table(db, name)
    if table is None:
        raise errors.NoSuchObject(f"{db}.{name} table not found")
    doomed = tables.managed_data_locations(cat, table) if delete_data else []
    cat.delete_table_subtree(db, name)
    return doomed


def on_drop_table(cat, table, delete_data=False):
    """drop_table: refuse an index table; drop the table's indexes and their tables."""
    if table.tableType == INDEX_TABLE:
        raise errors.MetaError(f"java.lang.RuntimeException: The table {table.tableName} is an "
                               "index table. Please do drop index instead.")
    doomed = []
    for index in list(_stored_indexes(cat, table.dbName, table.tableName)):
        cat.delete(index_key(table.dbName, table.tableName, index.indexName))
        try:
            doomed.extend(_drop_index_table(cat, index, delete_data))
        except errors.NoSuchObject:
            pass
    return doomed


def _renamed_index(value: bytes, new):
    index = codec.decode(ttypes.Index, value)
    if new.dbName != index.dbName and "." not in (index.indexTableName or ""):
        index.indexTableName = f"{index.dbName}.{index.indexTableName}"  # the table stays put
    index.dbName, index.origTableName = new.dbName, new.tableName
    return index


def on_rename_table(cat, old, new) -> None:
    """A renamed index table: its index (which HMS references by table) follows."""
    if old.tableType != INDEX_TABLE:
        return
    for tbl in cat.table_names(old.dbName):
        for index in list(_stored_indexes(cat, old.dbName, tbl)):
            if _index_table_of(index) == (old.dbName, old.tableName):
                index.indexTableName = new.tableName if new.dbName == index.dbName \
                    else f"{new.dbName}.{new.tableName}"
                cat.put(index_key(index.dbName, index.origTableName, index.indexName), index)



class _Silently(Exception):
    """ObjectStore.addIndex failed and said so only by returning false."""


class IndexCalls(Family):
    CASCADES = {"table_renamed": on_rename_table, "table_dropping": on_drop_table}
    RENAME_REWRITES = {SUB: _renamed_index}

    def _get(self, cat, db_name, tbl_name, index_name):
        db, tbl = _identifier(db_name), _identifier(tbl_name)
        if cat.raw(keys.table_key(db, tbl)) is None:
            return None  # HMS looks the table up before it normalizes the index name
        data = cat.raw(index_key(db, tbl, _identifier(index_name)))
        return None if data is None else codec.decode(ttypes.Index, data)

    def _require(self, cat, db_name, tbl_name, index_name):
        index = self._get(cat, db_name, tbl_name, index_name)
        if index is None:
            raise errors.NoSuchObject(
                f"{_java(db_name)}.{_java(tbl_name)} index={_java(index_name)} not found")
        return index

    # --- reads ---------------------------------------------------------------------------
    def get_index_by_name(self, ctx, db_name, tbl_name, index_name):
        with self.reading(ctx) as cat:
            return _public(self._require(cat, db_name, tbl_name, index_name))

    def get_indexes(self, ctx, db_name, tbl_name, max_indexes):
        db, tbl = _identifier(db_name), _identifier(tbl_name)
        with self.reading(ctx) as cat:
            return [_public(i) for i in _stored_indexes(cat, db, tbl)]

    def get_index_names(self, ctx, db_name, tbl_name, max_indexes):
        db, tbl = _identifier(db_name), _identifier(tbl_name)
        with self.reading(ctx) as cat:
            return sorted(i.indexName for i in _stored_indexes(cat, db, tbl))

    # --- add -----------------------------------------------------------------------------
    def add_index(self, ctx, new_index, index_table):
        if new_index is None or index_table is None:  # HMS logs both with toString first
            raise errors.InternalError("add_index of a null index or index table")
        index = codec.clone(new_index)
        created = now()
        with self.reading(ctx) as cat:
            try:
                exists = self._get(cat, index.dbName, index.origTableName, index.indexName)
            except errors.HMSError:
                exists = None  # HMS ignores a failed lookup here
            if exists is not None:
                raise errors.AlreadyExists(
                    "Index already exists:" + javafmt.to_string(new_index))
            base = cat.table(_identifier(index.dbName), _identifier(index.origTableName))
            if base is None:
                raise errors.InvalidObject(
                    "Unable to add index because database or the orginal table do not exist")
            table_db, table_name = qualified(index.dbName, index.indexTableName)
            if cat.table(_identifier(table_db), _identifier(table_name)) is not None:
                raise errors.InvalidObject(
                    "Unable to add index because index table already exists")
        index.createTime = created
        index.parameters = dict(index.parameters or {})
        index.parameters[DDL_TIME] = str(created)
        table_calls = tables.TableCalls(self.env)
        if index.indexName is None:
            # HMS's lookup of a null name breaks its transaction: the index table it creates
            # next is committed on its own, and the index is not stored.
            table_calls.create_table_with_environment_context(ctx, index_table, None)
            return javafmt.as_java_writes(index)
        try:
            table_calls.create_table_with_environment_context(
                ctx, index_table, None, lambda cat: self._store(cat, index))
        except _Silently:
            pass  # HMS rolls the index table back and answers the index all the same
        return javafmt.as_java_writes(index)  # the client's index, as Java writes it back

    def _store(self, cat, index) -> None:
        """ObjectStore.addIndex in the transaction that created the index table: an index
        it cannot convert is not stored (and the table creation is undone), silently."""
        db, tbl = _identifier(index.dbName), _identifier(index.origTableName)
        table_db, table_name = qualified(index.dbName, index.indexTableName)
        table = cat.table(_identifier(table_db), _identifier(table_name))
        if index.sd is None or cat.table(db, tbl) is None or table is None \
                or len(index.indexName) > 128 or len(index.indexHandlerClass or "") > 4000:
            raise _Silently()  # (the last two: Derby's IDXS column widths)
        stored = codec.clone(index)
        stored.indexName = _identifier(index.indexName)
        stored.dbName, stored.origTableName = db, tbl
        stored.indexTableName = table.tableName if table.dbName == db \
            else f"{table.dbName}.{table.tableName}"
        stored.sd = tables.normalize_sd(index.sd, ttypes)
        stored.lastAccessTime = index.lastAccessTime or 0
        stored.deferredRebuild = bool(index.deferredRebuild)
        cat.put(index_key(db, tbl, stored.indexName), stored)

    # --- alter ---------------------------------------------------------------------------
    def alter_index(self, ctx, dbname, base_tbl_name, idx_name, new_idx):
        if new_idx is None:
            raise errors.InternalError("alter_index with a null index")
        params = dict(new_idx.parameters or {})
        params[DDL_TIME] = str(now())
        with self.writing(ctx) as cat:
            try:
                old = self._require(cat, dbname, base_tbl_name, idx_name)
            except errors.NoSuchObject as exc:
                raise errors.MetaError(f"NoSuchObjectException(message:{exc.message})") from None
            if new_idx.sd is None:
                raise errors.InvalidOperation("Storage descriptor is not defined for index.")
            if cat.table(_identifier(new_idx.dbName), _identifier(new_idx.origTableName)) is None:
                raise errors.InvalidOperation("Original table does not exist for the given index.")
            table_db, table_name = qualified(new_idx.dbName, new_idx.indexTableName)
            if cat.table(_identifier(table_db), _identifier(table_name)) is None:
                raise errors.InvalidOperation(
                    "Underlying index table does not exist for the given index.")
            _identifier(new_idx.indexName)
            old.parameters = params
            cat.put(index_key(old.dbName, old.origTableName, old.indexName), old)

    # --- drop ----------------------------------------------------------------------------
    def drop_index_by_name(self, ctx, db_name, tbl_name, index_name, deleteData):
        with self.writing(ctx) as cat:
            index = self._require(cat, db_name, tbl_name, index_name)
            cat.delete(index_key(index.dbName, index.origTableName, index.indexName))
            doomed = _drop_index_table(cat, index, bool(deleteData))
        for location in doomed:
            warehouse.delete(location)
        return True

