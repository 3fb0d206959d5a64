"""Databases: create, get, list, alter, drop (with cascade), as HMS 2.3 does them."""
from __future__ import annotations

import getpass

from hms_proxy.hms import names, warehouse
from hms_proxy.hms.family import Family, check_identifier_length, lower, match_names, now
from hms_proxy.hms.tables import managed_data_locations
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.routing import DEFAULT_CATALOG
from kvmodel import catalog as keys
from kvmodel.codec import decode, encode
from kvmodel.store.errors import StoreError, decided_again

DEFAULT_DB = "default"
EXTERNAL_WAREHOUSE_KEY = "metastore.warehouse.external.dir"
NO_EVENTS = "hms-proxy.no-events"  # commit metadata: the commit fires no notification events


class DatabaseCalls(Family):
    def ensure_default_database(self) -> None:
        """HMS creates the ``default`` database on start; so do we (on a writable ref). Servers
        started together over one repository may all find it missing: the one whose write
        loses the branch's next slot reads again and finds the other's."""
        decided_again(self._ensure_default_database)

    def _ensure_default_database(self) -> None:
        store = self.env.store
        resolved = store.resolve(self.env.ref)
        if not resolved.writable:
            return
        with store.read(self.env.ref) as view:
            if view.get(keys.db_key(DEFAULT_DB)) is not None:
                return
        external = external_root(self.env.conf)
        location = external or self.env.warehouse.default_database_location(DEFAULT_DB)
        db = self.t.Database(
            name=DEFAULT_DB, description="Default Hive database", locationUri=location,
            parameters={}, ownerName="public", ownerType=self.t.PrincipalType.ROLE,
            createTime=now(),
        )
        # On a branch with nothing else uncommitted the new database is committed at once: left
        # staged, it would make the branch dirty though no one wrote to it, and lakeFS (like
        # `hms-proxy merge`) refuses to merge into a dirty branch.
        # (on lakeFS a file a user uploaded and did not commit makes it dirty too: the commit
        # would take it)
        dirty = getattr(store, "uncommitted", None)
        clean = not dirty(self.env.ref) if dirty is not None else \
            next(iter(store.staged(self.env.ref)), None) is None
        with store.write(self.env.ref) as txn:
            if txn.get(keys.db_key(DEFAULT_DB)) is not None:
                return  # another server's, made since the read above
            txn.put(keys.db_key(DEFAULT_DB), encode(db))
        warehouse.mkdirs(location)  # before the commit, which then holds its marker too
        if clean:
            try:
                # HMS creates it with its schema, before any event: no notification for it
                store.commit(self.env.ref, "create the default database", author="hms-proxy",
                             metadata={NO_EVENTS: "true"})
            except StoreError:  # another server committed it first, or the branch moved
                pass

    # --- create / alter / drop -----------------------------------------------------------
    def create_database(self, ctx, database):
        catalog, given = keys.split_db(getattr(database, "name", None) or "")
        if database is None or not names.validate_name(given):
            raise errors.InvalidObject(f"{getattr(database, 'name', None)} is not a valid database name")
        check_identifier_length(given)
        name = lower(database.name)
        db = self.t.Database(
            name=name,
            description=database.description,
            locationUri=None,
            parameters=dict(database.parameters or {}),
            ownerName=database.ownerName,
            # HMS stores a missing owner type as USER.
            ownerType=self.t.PrincipalType.USER if database.ownerType is None else database.ownerType,
            createTime=now(),  # Hive 4's; older clients are not shown it (get_database)
        )
        if db.ownerName is None and dialect.hive4():
            # HMS 4 names the caller (its set_ugi user, else the server's own user)
            db.ownerName = ctx.user or process_user()
        external = external_root(self.env.conf) if dialect.hive4() else None
        with self.writing(ctx) as cat:
            home = None
            if catalog is not None:  # another catalog's: under its location
                found = cat.catalog(catalog)
                if found is None:
                    raise errors.InvalidObject(f"No such catalog {catalog}")
                home = found.locationUri
            if database.locationUri:
                db.locationUri = warehouse.qualify(database.locationUri)
            elif home is not None:
                db.locationUri = warehouse.qualify(warehouse.join(home, f"{lower(given)}.db"))
            elif external:  # Hive 4 puts a database's tables under the external warehouse
                db.locationUri = warehouse.join(external, f"{name}.db")
            else:
                db.locationUri = self.env.warehouse.default_database_location(name)
            if cat.raw(keys.db_key(name)) is not None:
                raise errors.AlreadyExists(f"Database {given} already exists")
            # in the transaction, as for a table: a commit right after it (--autocommit) holds
            # the directory too
            warehouse.mkdirs(db.locationUri)
            cat.put(keys.db_key(name), db)

    def alter_database(self, ctx, dbname, db):
        """HMS replaces the parameters and the owner name (even with nothing), sets the owner
        type when given, changes nothing else, and ignores a missing database (HMS 2.3; 3.1
        and 4.x raise NoSuchObjectException, see :func:`_no_database`)."""
        _named(dbname)
        name = lower(dbname)
        if db is None:
            raise errors.MetaError("Database object cannot be null")
        with self.writing(ctx) as cat:
            old = cat.database(name)
            if old is None:
                if dialect.since(dialect.HIVE31):
                    raise _no_database(name)
                return
            old.parameters = dict(db.parameters or {})
            old.ownerName = db.ownerName
            if db.ownerType is not None:
                old.ownerType = db.ownerType
            if dialect.hive4():  # HMS 4 also takes a description and locations not blank
                if (db.description or "").strip():
                    old.description = db.description
                if (db.locationUri or "").strip():
                    old.locationUri = warehouse.qualify(db.locationUri)
                if (getattr(db, "managedLocationUri", None) or "").strip():
                    old.managedLocationUri = warehouse.qualify(db.managedLocationUri)
            cat.put(keys.db_key(name), old)

    def drop_database(self, ctx, name, deleteData, cascade):
        _named(name)
        name = lower(name)
        if name == DEFAULT_DB:  # (another catalog's default database may go)
            raise errors.MetaError("Can not drop default database")
        doomed: list[str] = []
        with self.writing(ctx) as cat:
            db = cat.database(name)
            if db is None:
                if dialect.hive4():
                    raise _no_database(name)
                # HMS 2.3 and 3.1 trip over their own null here; the class is what clients see.
                raise errors.MetaError(
                    'java.lang.NullPointerException: Cannot invoke "org.apache.hadoop.hive.'
                    'metastore.api.Database.getName()" because "db" is null')
            tables = cat.table_names(name)
            functions = [fn for fn, _ in cat.functions(name)]
            if not cascade:
                if tables or functions:  # HMS's AcidEventListener runs on this failure too
                    self.env.cascades.run("database_dropped", self.env, name)
                if tables:
                    raise errors.InvalidOperation(
                        f"Database {name} is not empty. One or more tables exist.")
                if functions:
                    raise errors.InvalidOperation(
                        f"Database {name} is not empty. One or more functions exist.")
            for tbl in tables:  # HMS drops each table with drop_table (its keys, indexes...)
                table = cat.table(name, tbl)
                if table is None:
                    continue
                if deleteData:
                    doomed.extend(managed_data_locations(cat, table))
                self.env.cascades.run("table_dropping", cat, table, False)
            if deleteData:
                doomed.append(db.locationUri)
            cat.delete_database_subtree(name)
        self.env.cascades.run("database_dropped", self.env, name)
        for location in doomed:
            warehouse.delete(location)

    # --- reads --------------------------------------------------------------------------
    def get_database(self, ctx, name):
        if name is None and not dialect.since(dialect.HIVE31):
            raise errors.InternalError("get_database: null name")  # HMS 2.3's Java NPE
        _named(name)
        name = lower(name)
        data = self.get_raw(ctx, keys.db_key(name))
        if data is None:
            raise _no_database(name)
        return as_seen(decode(self.t.Database, data), self.t)

    def _names(self, ctx):
        """The databases of the call's catalog (``ctx.catalog``, None: hive's)."""
        catalog = ctx.catalog
        return self.cached(ctx, ("dbnames", catalog),
                           lambda cat: tuple(cat.database_names(catalog)))

    def get_databases(self, ctx, pattern):
        return match_names(pattern, self._names(ctx), "get_databases")

    def get_all_databases(self, ctx):
        return list(self._names(ctx))


def external_root(conf: dict) -> str | None:
    """``metastore.warehouse.external.dir`` (``serve --conf``): where the stock HMS 4 puts the
    databases a Hive 4 client creates without a location (and the default database); unset,
    they go under the warehouse as for older clients."""
    value = (conf or {}).get(EXTERNAL_WAREHOUSE_KEY)
    return warehouse.qualify(value) if value else None


def as_seen(db, t):
    """A stored database as the calling client's metastore answers it: Hive 3.1 and 4.x name
    its catalog, Hive 4 also its kind (native) and keeps its creation time, which older
    clients' metastores do not have."""
    if dialect.since(dialect.HIVE31):
        db.catalogName = DEFAULT_CATALOG  # (another catalog's: routing.unqualify_result)
    if dialect.hive4():
        db.type = t.DatabaseType.NATIVE
    else:
        db.createTime = None
    return db


def process_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        return "hive"


def _named(name) -> None:
    """A database call without a name: HMS 3.1 and 4.x refuse it first (2.3 goes on, and
    answers as for a database that does not exist)."""
    if name is None and dialect.since(dialect.HIVE31):
        raise errors.MetaError("Database name cannot be null.")


def _no_database(name: str) -> errors.NoSuchObject:
    """A missing database as the client's generation words it: HMS 4.x names its catalog
    (``database hive.shop``), 2.3 and 3.1 the name alone (another catalog's too)."""
    if dialect.hive4():
        return errors.NoSuchObject(f"database {keys.full_name(name)}")
    return errors.NoSuchObject(keys.split_db(name)[1])
