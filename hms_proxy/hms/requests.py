"""Catalogs, and the request-struct forms Hive 3.x/4.x clients call in place of 2.3's calls.

A Hive 3.1 or 4.x ``HiveMetaStoreClient`` asks ``get_database_req`` where a 2.3 client asks
``get_database``, ``create_table_req`` for ``create_table_with_environment_context``,
``get_partitions_by_names_req`` for ``get_partitions_by_names``, and so on: the same operation
with its arguments in one struct (and the catalog named in it). Each is served here by the
2.3 call it stands for, so both generations see one behaviour on the same branches; only what
the stock HMS 3.1/4.x answers differently in the request form (its wording of a missing
database, the catalog checked) is done here.

Catalogs: ``hive`` is the one catalog (a ref, not a catalog, is how this metastore keeps
several versions of a catalog: ``@hive#shop@dev``). ``get_catalogs`` and ``get_catalog``
answer as the stock HMS does; creating, altering or dropping a catalog is refused with the
stock HMS's own errors where it has one (``Catalog hive already exists``, ``Can not drop hive
catalog``, ``No catalog x``) and a MetaException saying why otherwise.
"""
from __future__ import annotations

from hms_proxy.hms import colstats, constraints, databases, partitions, tables
from hms_proxy.hms.family import Family, lower
from hms_proxy.thrift import errors
from hms_proxy.thrift.replies import RawStream
from hms_proxy.thrift.routing import DEFAULT_CATALOG
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
        return self.t.GetCatalogsResponse(names=[DEFAULT_CATALOG])

    def get_catalog(self, ctx, catName):
        name = getattr(catName, "name", None)
        if name is None:
            raise errors.MetaError("A catalog name is required")
        if not _is_hive(name):
            raise errors.NoSuchObject(f"No catalog {name}")
        return self.t.GetCatalogResponse(catalog=self._catalog())

    def create_catalog(self, ctx, catalog):
        cat = getattr(catalog, "catalog", None)
        if cat is None or not cat.name:
            raise errors.InvalidObject("A catalog needs a name")
        if _is_hive(cat.name):
            raise errors.AlreadyExists(f"Catalog {lower(cat.name)} already exists")
        raise errors.MetaError(
            f"Cannot create catalog {cat.name}: hive is the only catalog of this metastore "
            "(a branch of it is a ref: @hive#db@branch)")

    def alter_catalog(self, ctx, rqst):
        name = getattr(rqst, "name", None)
        if not _is_hive(name) or name is None:
            raise errors.NoSuchObject(f"No catalog {name}")
        new = rqst.newCat
        if new is not None and new.name is not None and not _is_hive(new.name):
            raise errors.InvalidOperation("You cannot change a catalog's name")
        raise errors.MetaError("The hive catalog cannot be altered here: its location is the "
                               "server's warehouse (serve --warehouse)")

    def drop_catalog(self, ctx, dropCatalogRequest):
        name = getattr(dropCatalogRequest, "name", None)
        if name is not None and _is_hive(name):
            raise errors.MetaError("Can not drop hive catalog")
        raise errors.NoSuchObject(f"No catalog {name}")

    # --- databases -----------------------------------------------------------------------
    def get_database_req(self, ctx, request):
        name, catalog = request.name, request.catalogName
        if not _is_hive(catalog):
            raise errors.NoSuchObject(f"database {catalog}.{name}")
        try:
            # a 4.x-only call: the database is answered as HMS 4 answers it (its catalog, its
            # kind: databases.as_seen)
            return self.databases.get_database(ctx, name)
        except errors.NoSuchObject:
            raise errors.NoSuchObject(f"database {DEFAULT_CATALOG}.{name}") from None

    def create_database_req(self, ctx, createDatabaseRequest):
        req = createDatabaseRequest
        if not _is_hive(req.catalogName):
            raise errors.InvalidObject(f"No such catalog {req.catalogName}")
        db = self.t.Database(name=req.databaseName, description=req.description,
                             locationUri=req.locationUri, parameters=req.parameters,
                             privileges=req.privileges, ownerName=req.ownerName,
                             ownerType=req.ownerType)
        return self.databases.create_database(ctx, db)

    def alter_database_req(self, ctx, alterDbReq):
        return self.databases.alter_database(ctx, alterDbReq.oldDbName, alterDbReq.newDb)

    def drop_database_req(self, ctx, req):
        if not _is_hive(req.catalogName):
            raise errors.NoSuchObject(f"No catalog {req.catalogName}")
        try:  # the stock 4.x's answer, whatever ignoreUnknownDb says (its client ignores it)
            self.databases.get_database(ctx, req.name)
        except errors.NoSuchObject:
            raise errors.NoSuchObject(f"database {DEFAULT_CATALOG}.{req.name}") from None
        return self.databases.drop_database(ctx, req.name, req.deleteData, req.cascade)

    # --- tables --------------------------------------------------------------------------
    def create_table_req(self, ctx, request):
        newer = constraints.newer_constraints(request.uniqueConstraints, request.notNullConstraints,
                                              request.defaultConstraints, request.checkConstraints)
        if newer is not None:
            raise newer
        table, also = request.table, None
        if table is not None:
            table = translated_to_external(table)
        if request.primaryKeys is not None or request.foreignKeys is not None:
            def also(cat):
                # either list may be left out of a request (HMS 2.3's call needed both)
                constraints.add_with_constraints(cat, request.primaryKeys or [],
                                                 request.foreignKeys or [])
        try:
            return self.tables.create_table_with_environment_context(ctx, table,
                                                                     request.envContext, also)
        except errors.AlreadyExists:  # the stock 4.x names the table with its catalog
            raise errors.AlreadyExists(f"Table {DEFAULT_CATALOG}.{lower(table.dbName)}."
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

    # --- constraints: primary and foreign keys are kept; the kinds 3.x added never are -----
    def _keys(self, ctx, db, tbl):
        primary = self.constraints.get_primary_keys(
            ctx, self.t.PrimaryKeysRequest(db_name=db, tbl_name=tbl)).primaryKeys
        foreign = self.constraints.get_foreign_keys(ctx, self.t.ForeignKeysRequest(
            foreign_db_name=db, foreign_tbl_name=tbl)).foreignKeys
        return primary, foreign

    def get_unique_constraints(self, ctx, request):
        return self.t.UniqueConstraintsResponse(uniqueConstraints=[])

    def get_not_null_constraints(self, ctx, request):
        return self.t.NotNullConstraintsResponse(notNullConstraints=[])

    def get_default_constraints(self, ctx, request):
        return self.t.DefaultConstraintsResponse(defaultConstraints=[])

    def get_check_constraints(self, ctx, request):
        return self.t.CheckConstraintsResponse(checkConstraints=[])

    def get_all_table_constraints(self, ctx, request):
        primary, foreign = self._keys(ctx, request.dbName, request.tblName)
        return self.t.AllTableConstraintsResponse(allTableConstraints=self.t.SQLAllTableConstraints(
            primaryKeys=primary, foreignKeys=foreign, uniqueConstraints=[],
            notNullConstraints=[], defaultConstraints=[], checkConstraints=[]))

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
