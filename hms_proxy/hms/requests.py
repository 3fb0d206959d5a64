"""Catalogs, and the request-struct forms Hive 3.x/4.x clients call in place of 2.3's calls.

A Hive 3.1 or 4.x ``HiveMetaStoreClient`` asks ``get_database_req`` where a 2.3 client asks
``get_database``, ``create_table_req`` for ``create_table_with_environment_context``,
``get_partitions_by_names_req`` for ``get_partitions_by_names``, and so on: the same operation
with its arguments in one struct (and the catalog named in it). Each is served here by the
2.3 call it stands for, so both generations see one behaviour on the same branches; only what
the stock HMS 3.1/4.x answers differently in the request form (its wording of a missing
database, the catalog checked) is done here.

Catalogs: ``hive`` is the catalog every client sees (2.3 clients, and 3.x/4.x clients that
name none); others are created, altered, listed and dropped as the stock HMS 3.1/4.x does it,
each with a ``default`` database of its own, and kept on the ref like everything else
(``cat/<name>``, their databases below it: :mod:`kvmodel.catalog`), so branched, diffed and
merged with it. ``hive`` itself is not stored: its location is the server's warehouse.
"""
from __future__ import annotations

from hms_proxy.hms import colstats, constraints, databases, names, partitions, tables, warehouse
from hms_proxy.hms.family import Family, lower, now
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.replies import RawStream
from hms_proxy.thrift.routing import DEFAULT_CATALOG
from kvmodel import catalog as keys
from kvmodel import codec

CATALOG_DESCRIPTION = "Default catalog, for Hive"  # the stock HMS 3.1/4.x's words


def translated_to_external(table):
    """What the stock HMS 4.x makes of a managed table that is not transactional (Hive 4 keeps
    no such table): an external one whose data goes with it, marked as translated. A 2.3
    client's create_table keeps its managed table (as the stock 2.3 does)."""
    params = table.parameters or {}
    if table.tableType != "MANAGED_TABLE" or \
            str(params.get("transactional", "")).lower() == "true":
        return table
    table.tableType = "EXTERNAL_TABLE"
    table.parameters = {**params, "EXTERNAL": "TRUE", "TRANSLATED_TO_EXTERNAL": "TRUE",
                        "external.table.purge": "TRUE"}
    return table


def _listed(value) -> list:
    """A family's answer as a list a response struct can hold."""
    return value.materialise() if isinstance(value, RawStream) else list(value or [])


def _is_hive(catalog: str | None) -> bool:
    """A request's catalog: none given (a 2.3-style request) or ``hive``, in any case."""
    return catalog is None or lower(catalog) == DEFAULT_CATALOG


class RequestCalls(Family):
    def __init__(self, env):
        super().__init__(env)
        self.databases = databases.DatabaseCalls(env)
        self.tables = tables.TableCalls(env)
        self.partitions = partitions.PartitionCalls(env)
        self.stats = colstats.ColumnStatsCalls(env)
        self.constraints = constraints.ConstraintCalls(env)

    # --- catalogs ------------------------------------------------------------------------
    def _catalog(self):
        return self.t.Catalog(name=DEFAULT_CATALOG, description=CATALOG_DESCRIPTION,
                              locationUri=self.env.warehouse.root)

    def get_catalogs(self, ctx):
        with self.reading(ctx) as cat:
            found = cat.catalog_names()
        return self.t.GetCatalogsResponse(names=sorted({DEFAULT_CATALOG, *found}))

    def get_catalog(self, ctx, catName):
        name = getattr(catName, "name", None)
        if name is None:
            raise errors.MetaError("A catalog name is required")
        if _is_hive(name):
            return self.t.GetCatalogResponse(catalog=self._catalog())
        with self.reading(ctx) as cat:
            found = cat.catalog(lower(name))
        if found is None:
            raise errors.NoSuchObject(f"No catalog {name}")
        return self.t.GetCatalogResponse(catalog=found)

    def create_catalog(self, ctx, catalog):
        given = getattr(catalog, "catalog", None)
        if given is None or not given.name:
            raise errors.InvalidObject("A catalog needs a name")
        if not names.validate_name(given.name):
            raise errors.InvalidObject(f"{given.name} is not a valid catalog name")
        if not given.locationUri:
            raise errors.InvalidObject("You must specify a path for the catalog")
        name = lower(given.name)
        if name == DEFAULT_CATALOG:
            raise errors.AlreadyExists(f"Catalog {given.name} already exists")
        location = warehouse.qualify(given.locationUri)  # its default database's
        # the catalog keeps its location as given, as the stock 3.1/4.x keep it
        new = self.t.Catalog(name=name, description=given.description,
                             locationUri=given.locationUri, createTime=now())
        # as the stock HMS makes it: a default database in it, at the catalog's location (with
        # an owner from 4.x on; 3.1's has none)
        default = self.t.Database(
            name=keys.in_catalog(name, databases.DEFAULT_DB),
            description=f"Default database for catalog {name}", locationUri=location,
            parameters={}, createTime=now())
        if dialect.hive4():
            default.ownerName = ctx.user or databases.process_user()
            default.ownerType = self.t.PrincipalType.USER
        with self.writing(ctx) as cat:
            if cat.raw(keys.catalog_key(name)) is not None:
                raise errors.AlreadyExists(f"Catalog {given.name} already exists")
            warehouse.mkdirs(location)
            cat.put(keys.catalog_key(name), new)
            cat.put(keys.db_key(default.name), default)

    def alter_catalog(self, ctx, rqst):
        name = getattr(rqst, "name", None)
        new = rqst.newCat
        if name is None or new is None:
            raise errors.MetaError("A catalog name and the new catalog are required")
        if new.name is not None and lower(new.name) != lower(name):
            if not _is_hive(name) and self._stored_catalog(ctx, name) is None:
                raise errors.NoSuchObject(f"No catalog {name}")
            raise errors.InvalidOperation("You cannot change a catalog's name")
        if _is_hive(name):
            raise errors.MetaError("The hive catalog cannot be altered here: its location is "
                                   "the server's warehouse (serve --warehouse)")
        with self.writing(ctx) as cat:
            old = cat.catalog(lower(name))
            if old is None:
                raise errors.NoSuchObject(f"No catalog {name}")
            if new.description is not None:
                old.description = new.description
            if new.locationUri:
                old.locationUri = new.locationUri  # as given (the stock's)
            cat.put(keys.catalog_key(old.name), old)

    def _stored_catalog(self, ctx, name: str):
        with self.reading(ctx) as cat:
            return cat.catalog(lower(name))

    def drop_catalog(self, ctx, dropCatalogRequest):
        name = getattr(dropCatalogRequest, "name", None)
        if name is not None and _is_hive(name):
            raise errors.MetaError("Can not drop hive catalog")
        if name is None:
            raise errors.NoSuchObject(f"No catalog {name}")
        name_ = lower(name)
        with self.writing(ctx) as cat:
            found = cat.catalog(name_)
            if found is None:
                raise errors.NoSuchObject(f"No catalog {name}")
            if [db for db in cat.database_names(name_) if db != databases.DEFAULT_DB]:
                raise errors.InvalidOperation(f"There are non-default databases in the catalog "
                                              f"{name} so it cannot be dropped.")
            default = keys.in_catalog(name_, databases.DEFAULT_DB)
            if next(iter(cat.table_names(default)), None) is not None:
                # the stock drops the default database without cascade, which refuses
                raise errors.InvalidOperation(f"There are still objects in the default "
                                              f"database for catalog {name}")
            default_db = cat.database(default)
            cat.delete(keys.catalog_key(name_))
            cat.delete_prefix(keys.catalog_key(name_) + "/")
        # the stock drops the default database with its data, then the catalog's directory
        # (which an alter_catalog may have moved from the database's)
        for location in (getattr(default_db, "locationUri", None), found.locationUri):
            if location:
                warehouse.delete(warehouse.qualify(location))

    # --- databases -----------------------------------------------------------------------
    def get_database_req(self, ctx, request):
        name, catalog = request.name, request.catalogName
        try:
            # a 4.x-only call: the database is answered as HMS 4 answers it (its catalog, its
            # kind: databases.as_seen); another catalog's is named "<cat>.<db>" here (routing)
            return self.databases.get_database(ctx, name)
        except errors.NoSuchObject:
            if not _is_hive(catalog) or keys.split_db(name or "")[0] is not None:
                raise
            raise errors.NoSuchObject(f"database {keys.full_name(name)}") from None

    def create_database_req(self, ctx, createDatabaseRequest):
        req = createDatabaseRequest
        db = self.t.Database(name=req.databaseName, description=req.description,
                             locationUri=req.locationUri, parameters=req.parameters,
                             privileges=req.privileges, ownerName=req.ownerName,
                             ownerType=req.ownerType)
        return self.databases.create_database(ctx, db)

    def alter_database_req(self, ctx, alterDbReq):
        return self.databases.alter_database(ctx, alterDbReq.oldDbName, alterDbReq.newDb)

    def drop_database_req(self, ctx, req):
        try:  # the stock 4.x's answer, whatever ignoreUnknownDb says (its client ignores it)
            self.databases.get_database(ctx, req.name)
        except errors.NoSuchObject:
            if keys.split_db(req.name or "")[0] is not None:
                raise
            raise errors.NoSuchObject(f"database {keys.full_name(req.name)}") from None
        return self.databases.drop_database(ctx, req.name, req.deleteData, req.cascade)

    # --- tables --------------------------------------------------------------------------
    def create_table_req(self, ctx, request):
        table, also, kept = request.table, None, False
        if table is not None:
            table = translated_to_external(table)
            if table.tableType is None:  # the stock 4.x stores it as managed, untranslated
                external = str((table.parameters or {}).get("EXTERNAL", "")).upper() == "TRUE"
                table.tableType = "EXTERNAL_TABLE" if external else "MANAGED_TABLE"
                kept = not external
        newer = (request.uniqueConstraints, request.notNullConstraints,
                 request.defaultConstraints, request.checkConstraints)
        if request.primaryKeys is not None or request.foreignKeys is not None or any(newer):
            def also(cat):
                # any list may be left out of a request (HMS 2.3's call needed both keys')
                constraints.add_with_constraints(cat, request.primaryKeys or [],
                                                 request.foreignKeys or [], *newer)
        try:
            return self.tables.create_table_with_environment_context(
                ctx, table, request.envContext, also, kept_managed=kept)
        except errors.AlreadyExists:  # the stock 4.x names the table with its catalog
            raise errors.AlreadyExists(f"Table {keys.full_name(lower(table.dbName))}."
                                       f"{lower(table.tableName)} already exists") from None

    def drop_table_req(self, ctx, dropTableReq):
        req = dropTableReq
        delete = True if req.deleteData is None else req.deleteData
        # a missing table is "hive.shop.t table not found" (handler: routing.default_catalog_error)
        return self.tables.drop_table_with_environment_context(
            ctx, req.dbName, req.tableName, delete, req.envContext)

    def alter_table_req(self, ctx, req):
        self.tables.alter_table_with_environment_context(ctx, req.dbName, req.tableName,
                                                         req.table, req.environmentContext)
        return self.t.AlterTableResponse()

    def get_fields_req(self, ctx, req):
        return self.t.GetFieldsResponse(fields=self.tables.get_fields_with_environment_context(
            ctx, req.dbName, req.tblName, req.envContext))

    def get_schema_req(self, ctx, req):
        return self.t.GetSchemaResponse(fields=self.tables.get_schema_with_environment_context(
            ctx, req.dbName, req.tblName, req.envContext))

    # --- partitions ----------------------------------------------------------------------
    def get_partitions_by_names_req(self, ctx, req):
        found = self.partitions.get_partitions_by_names(ctx, req.db_name, req.tbl_name, req.names)
        return self.t.GetPartitionsByNamesResult(partitions=_listed(found))

    def get_partitions_req(self, ctx, req):
        found = self.partitions.get_partitions(ctx, req.dbName, req.tblName,
                                               -1 if req.maxParts is None else req.maxParts)
        return self.t.PartitionsResponse(partitions=_listed(found))

    def get_partition_req(self, ctx, req):
        return self.t.GetPartitionResponse(
            partition=self.partitions.get_partition(ctx, req.dbName, req.tblName, req.partVals))

    def fetch_partition_names_req(self, ctx, partitionReq):
        """The partition names of a table; none for a missing table or database, as the stock
        4.x answers (2.3's get_partition_names fails on them)."""
        req = partitionReq
        if dialect.hive4():
            partitions.check_names(req.dbName, req.tblName, wrapped=True)
        with self.reading(ctx) as cat:
            if cat.table(lower(req.dbName or ""), lower(req.tblName or "")) is None:
                return []
        return list(self.partitions.get_partition_names(
            ctx, req.dbName, req.tblName, -1 if req.maxParts is None else req.maxParts))

    def get_partition_names_ps_req(self, ctx, req):
        names = self.partitions.get_partition_names_ps(
            ctx, req.dbName, req.tblName, req.partValues,
            -1 if req.maxParts is None else req.maxParts)
        return self.t.GetPartitionNamesPsResponse(names=list(names))

    def alter_partitions_req(self, ctx, req):
        self.partitions.alter_partitions_with_environment_context(
            ctx, req.dbName, req.tableName, req.partitions, req.environmentContext)
        return self.t.AlterPartitionsResponse()

    def drop_partition_req(self, ctx, dropPartitionReq):
        req = dropPartitionReq
        delete = bool(req.deleteData)
        if req.partName is not None:
            return self.partitions.drop_partition_by_name_with_environment_context(
                ctx, req.dbName, req.tblName, req.partName, delete, req.environmentContext)
        return self.partitions.drop_partition_with_environment_context(
            ctx, req.dbName, req.tblName, req.partVals, delete, req.environmentContext)

    def append_partition_req(self, ctx, appendPartitionsReq):
        req = appendPartitionsReq
        if req.name is not None:
            return self.partitions.append_partition_by_name_with_environment_context(
                ctx, req.dbName, req.tableName, req.name, req.environmentContext)
        return self.partitions.append_partition_with_environment_context(
            ctx, req.dbName, req.tableName, req.partVals, req.environmentContext)

    def get_partitions_by_filter_req(self, ctx, req):
        if dialect.hive4():
            partitions.check_names(req.dbName, req.tblName)
        return _listed(self.partitions.get_partitions_by_filter(
            ctx, req.dbName, req.tblName, req.filter,
            -1 if req.maxParts is None else req.maxParts))

    def get_partitions_ps_with_auth_req(self, ctx, req):
        if req.partNames is not None:  # Hive 4's way of asking for partitions by name
            found = self.partitions.get_partitions_by_names(ctx, req.dbName, req.tblName,
                                                            req.partNames)
            if req.userName is not None and req.groupNames is not None:
                found = self.partitions._with_auth(ctx, req.dbName, req.tblName, found,
                                                   req.userName, req.groupNames)
            return self.t.GetPartitionsPsWithAuthResponse(partitions=_listed(found))
        found = self.partitions.get_partitions_ps_with_auth(
            ctx, req.dbName, req.tblName, req.partVals,
            -1 if req.maxParts is None else req.maxParts, req.userName, req.groupNames)
        return self.t.GetPartitionsPsWithAuthResponse(partitions=_listed(found))

    def rename_partition_req(self, ctx, req):
        self.partitions.rename_partition(ctx, req.dbName, req.tableName, req.partVals,
                                         req.newPart)
        return self.t.RenamePartitionResponse()

    # --- statistics ----------------------------------------------------------------------
    def update_table_column_statistics_req(self, ctx, req):
        return self._set_stats(ctx, req, self.stats.update_table_column_statistics)

    def update_partition_column_statistics_req(self, ctx, req):
        return self._set_stats(ctx, req, self.stats.update_partition_column_statistics)

    def _set_stats(self, ctx, req, update):
        """Each object's statistics replaced (HMS 4's update_*_req), or merged into what is
        stored with ``needMerge`` (as set_aggr_stats_for merges)."""
        if req.needMerge:
            self.stats.set_aggr_stats_for(ctx, req)
        else:
            for stats in req.colStats or []:
                update(ctx, stats)
        return self.t.SetPartitionsStatsResponse(result=True)
