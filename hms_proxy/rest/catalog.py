"""The Iceberg REST catalog's operations, as the Thrift calls a Hive-catalog client makes.

Every operation runs through the server's handler with a call context whose ref is the
request's prefix: what a REST client does is what pyiceberg's ``HiveCatalog`` would have done
over Thrift, checked by the same access rules, audited, counted and committed alike. A commit
takes the table's HMS lock (the one Hive-catalog writers take: in process, or in Redis with
``serve --redis``), reads ``metadata_location``, checks the requirements, writes the next
metadata file and alters the table, then unlocks: a Thrift writer and a REST writer racing on
one table are serialised by that lock and the loser is told so (CommitFailedException).

Namespaces are Hive databases: one level.
"""
from __future__ import annotations

import logging
import socket
import time
from contextlib import ExitStack, contextmanager

from hms_proxy.hms.family import Family
from hms_proxy.rest import errors, hive_form, requirements
from hms_proxy.rest.errors import RestError
from hms_proxy.rest.metadata import MetadataFiles, load_table_result, to_json
from hms_proxy.rest.names import absolute_location, check_name, database_of
from hms_proxy.rest.view_calls import ViewCalls
from hms_proxy.thrift import errors as thrift_errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.catalog import table_key

log = logging.getLogger("hms_proxy.rest")
LOCK_TIMEOUT = 60.0  # seconds a commit waits for the table's lock before it fails
# what pyiceberg's models raise for a request of the wrong shape: pydantic's ValidationError
# (a ValueError), and from their own validators, which use the raw input as it came, KeyError,
# TypeError and AttributeError (set-statistics without statistics, a column default of no JSON
# type they know, set-properties whose updates are a list)
MALFORMED = (ValueError, KeyError, TypeError, AttributeError)
_HOST = socket.gethostname()


def _pyiceberg():
    from pyiceberg import exceptions
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table import CommitTableRequest
    from pyiceberg.table.metadata import TableMetadataV1, new_table_metadata
    from pyiceberg.table.sorting import SortOrder
    from pyiceberg.table.update import update_table_metadata
    return (exceptions, PartitionSpec, Schema, CommitTableRequest, TableMetadataV1,
            new_table_metadata, SortOrder, update_table_metadata)


class RestCatalog(ViewCalls):
    """The operations over one server's handler; ``ctx`` is a
    :class:`~hms_proxy.thrift.processor.CallContext` on the request's ref."""

    def __init__(self, handler, files: MetadataFiles, lock_timeout: float = LOCK_TIMEOUT):
        self.h = _Structs(handler)
        self.store = handler.env.store
        self.writes = Family(handler.env)  # one_write: a transaction's tables in one write
        self.files = files
        self.lock_timeout = lock_timeout

    # --- namespaces --------------------------------------------------------------------
    def list_namespaces(self, ctx, parent: list[str] | None) -> list[list[str]]:
        if parent:
            self.load_namespace(ctx, parent)  # 404 when it is not there
            return []  # no database has children
        return [[name] for name in sorted(self.h.get_all_databases(ctx))]

    def load_namespace(self, ctx, namespace: list[str]) -> dict[str, str]:
        db = database_of(namespace)
        try:
            database = self.h.get_database(ctx, db)
        except ttypes.NoSuchObjectException:
            raise errors.no_such_namespace(db) from None
        props = dict(database.parameters or {})
        if database.locationUri:
            props["location"] = database.locationUri
        if database.description:
            props["comment"] = database.description
        if database.ownerName:
            props["owner"] = database.ownerName
        return props

    def create_namespace(self, ctx, namespace: list[str], properties: dict) -> dict:
        if len(namespace) > 1:
            raise errors.bad_request(
                f"Cannot create namespace {'.'.join(map(str, namespace))}: this catalog's "
                "namespaces are Hive databases, one level")
        db = database_of(namespace, creating=True)
        for key, value in (properties or {}).items():
            if isinstance(value, (dict, list)):
                raise errors.bad_request(f"Invalid CreateNamespaceRequest: property {key} is "
                                         "not a string")
        absolute_location((properties or {}).get("location"), "CreateNamespaceRequest")
        props = {str(k): str(v) for k, v in (properties or {}).items() if v is not None}
        database = ttypes.Database(
            name=db, description=props.pop("comment", None),
            locationUri=props.pop("location", None), parameters=props,
            ownerName=props.pop("owner", None) or ctx.user, ownerType=ttypes.PrincipalType.USER)
        try:
            self.h.create_database(ctx, database)
        except ttypes.AlreadyExistsException:
            raise RestError(409, "AlreadyExistsException",
                            f"Namespace already exists: {db}") from None
        return {"namespace": [db], "properties": self.load_namespace(ctx, [db])}

    def drop_namespace(self, ctx, namespace: list[str]) -> None:
        db = database_of(namespace)
        self._database(ctx, db)  # HMS 2.3 answers a missing one with a MetaException
        try:
            self.h.drop_database(ctx, db, False, False)
        except ttypes.NoSuchObjectException:
            raise errors.no_such_namespace(db) from None
        except ttypes.InvalidOperationException as exc:
            raise RestError(409, "NamespaceNotEmptyException",
                            f"Namespace {db} is not empty: {errors._text(exc)}") from None
        except ttypes.MetaException as exc:
            raise errors.bad_request(errors._text(exc)) from None

    def update_namespace(self, ctx, namespace: list[str], removals: list, updates: dict) -> dict:
        db = database_of(namespace)
        removals = [str(k) for k in (removals or [])]
        updates = {str(k): str(v) for k, v in (updates or {}).items()}
        both = sorted(set(removals) & set(updates))
        if both:
            raise RestError(422, "UnprocessableEntityException",
                            f"Properties both removed and updated: {', '.join(both)}")
        fixed = sorted({"comment", "location"} & (set(removals) | set(updates)))
        if fixed:  # alter_database keeps them, as HMS 2.3 does
            raise errors.bad_request(
                f"A Hive database's {' and '.join(fixed)} cannot be changed after it is "
                "created")
        try:
            database = self.h.get_database(ctx, db)
        except ttypes.NoSuchObjectException:
            raise errors.no_such_namespace(db) from None
        params = dict(database.parameters or {})
        removed, missing = [], []
        for key in removals:
            if key == "owner" and database.ownerName:
                database.ownerName = None
                removed.append(key)
            elif key in params:
                del params[key]
                removed.append(key)
            else:
                missing.append(key)
        for key, value in updates.items():
            if key == "owner":
                database.ownerName = value
            else:
                params[key] = value
        database.parameters = params
        self.h.alter_database(ctx, db, database)
        return {"updated": sorted(updates), "removed": removed, "missing": missing or None}

    # --- tables ------------------------------------------------------------------------
    def _hms_table(self, ctx, db: str, name: str) -> ttypes.Table:
        try:
            table = self.h.get_table(ctx, db, name)
        except ttypes.NoSuchObjectException:
            raise errors.no_such_table(f"{db}.{name}") from None
        if hive_form.is_view(table):
            raise errors.no_such_table(f"{db}.{name}")
        if not hive_form.is_iceberg(table) or \
                not (table.parameters or {}).get(hive_form.METADATA_LOCATION):
            raise RestError(404, "NoSuchIcebergTableException",
                            f"Not an Iceberg table: {db}.{name}")
        return table

    def list_tables(self, ctx, namespace: list[str]) -> list[dict]:
        return self._identifiers(ctx, namespace, hive_form.is_iceberg)

    def _identifiers(self, ctx, namespace: list[str], kind) -> list[dict]:
        """The identifiers of the namespace's HMS tables that ``kind`` keeps (Iceberg tables,
        or Iceberg views), by name."""
        db = database_of(namespace)
        try:
            names = self.h.get_tables(ctx, db, "*")
        except ttypes.NoSuchObjectException:
            raise errors.no_such_namespace(db) from None
        if not names:
            self.load_namespace(ctx, namespace)  # an empty database, or none at all
            return []
        tables = self.h.get_table_objects_by_name(ctx, db, names)
        return [{"namespace": [db], "name": t.tableName}
                for t in sorted(tables, key=lambda t: t.tableName) if kind(t)]

    def load_table(self, ctx, namespace: list[str], name: str) -> bytes:
        db = database_of(namespace, table=name)
        name = check_name(name, "table name", errors.no_such_table(f"{db}.{name}"))
        table = self._hms_table(ctx, db, name)
        location = table.parameters[hive_form.METADATA_LOCATION]
        return load_table_result(location, self._raw(location, db, name, _ref(ctx)))

    def _raw(self, location: str, db: str, name: str, ref: str | None = None) -> bytes:
        try:
            return self.files.raw_for(location, ref) if ref else self.files.raw(location)
        except (OSError, ValueError) as exc:
            raise RestError(500, "ServerErrorException",
                            f"Cannot read the metadata of {db}.{name} at {location}: "
                            f"{errors._text(exc)}") from None

    def _metadata(self, location: str, db: str, name: str):
        self._raw(location, db, name)
        return self.files.load(location)

    def create_table(self, ctx, namespace: list[str], body: dict) -> bytes:
        (_, PartitionSpec, Schema, _, _, new_table_metadata, SortOrder, _) = _pyiceberg()
        db = database_of(namespace)
        name = check_name(body.get("name"), "table name")
        location = absolute_location(body.get("location"), "CreateTableRequest")
        if "schema" not in body:
            raise errors.bad_request("CreateTableRequest needs a schema")
        try:
            schema = Schema.model_validate(body["schema"])
            spec = PartitionSpec.model_validate(body["partition-spec"]) \
                if body.get("partition-spec") else PartitionSpec()
            order = SortOrder.model_validate(body["write-order"]) \
                if body.get("write-order") else SortOrder()
        except MALFORMED as exc:
            raise errors.bad_request(f"Invalid CreateTableRequest: {_first(exc)}") from None
        if not isinstance(body.get("properties") or {}, dict):
            raise errors.bad_request("Invalid CreateTableRequest: properties is an object")
        properties = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
        if properties.get("format-version", "2").strip() not in ("1", "2", "3"):
            raise errors.bad_request(f"Unsupported format version: "
                                     f"{properties['format-version']} (1, 2 and 3 are)")
        database = self._database(ctx, db)
        self._taken(ctx, db, name)
        if not location:
            location = (database.locationUri or "").rstrip("/") + "/" + name
        try:
            metadata = _lineage(_with_defaults(
                new_table_metadata(schema, spec, order, location.rstrip("/"), properties),
                schema))
        except ValueError as exc:
            raise errors.bad_request(f"Invalid CreateTableRequest: {_first(exc)}") from None
        self.files.make_directories(metadata.location)
        if body.get("stage-create"):
            return b'{"metadata":' + to_json(metadata) + b',"config":{}}'
        metadata_location = self.files.next_location(metadata, None)
        raw = self.files.write(metadata, metadata_location)
        try:
            self.h.create_table(ctx, hive_form.new_table(db, name, metadata, metadata_location,
                                                         ctx.user))
        except ttypes.AlreadyExistsException:
            self._delete_quietly(metadata_location)
            raise RestError(409, "AlreadyExistsException",
                            f"Table already exists: {db}.{name}") from None
        except Exception:
            self._delete_quietly(metadata_location)
            raise
        return load_table_result(metadata_location, raw)

    def register_table(self, ctx, namespace: list[str], body: dict) -> bytes:
        db = database_of(namespace)
        name = check_name(body.get("name"), "table name")
        location = body.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise errors.bad_request("RegisterTableRequest needs a metadata-location")
        self._database(ctx, db)
        try:
            raw = self.files.raw(location)
            metadata = self.files.load(location)
        except (OSError, ValueError) as exc:
            raise errors.bad_request(f"Cannot read table metadata at {location}: "
                                     f"{errors._text(exc)}") from None
        existing = self._exists(ctx, db, name)
        if existing and not body.get("overwrite"):
            raise RestError(409, "AlreadyExistsException", f"Table already exists: {db}.{name}")
        if existing:
            with self._locked(ctx, db, name):
                table = self._hms_table(ctx, db, name)
                base = self._metadata(table.parameters[hive_form.METADATA_LOCATION], db, name)
                self._alter(ctx, db, name,
                            hive_form.committed(table, base, metadata, location), None)
        else:
            try:
                self.h.create_table(ctx, hive_form.new_table(db, name, metadata, location,
                                                             ctx.user))
            except ttypes.AlreadyExistsException:
                raise RestError(409, "AlreadyExistsException",
                                f"Table already exists: {db}.{name}") from None
        return load_table_result(location, raw)

    def drop_table(self, ctx, namespace: list[str], name: str, purge: bool) -> None:
        db = database_of(namespace, table=name)
        name = check_name(name, "table name", errors.no_such_table(f"{db}.{name}"))
        table = self._hms_table(ctx, db, name)
        location = table.parameters[hive_form.METADATA_LOCATION]
        metadata = self._metadata(location, db, name) if purge else None
        try:
            self.h.drop_table(ctx, db, name, False)
        except ttypes.NoSuchObjectException:
            raise errors.no_such_table(f"{db}.{name}") from None
        if purge:
            holders = self._held_elsewhere(ctx, db, name, table)
            if holders:
                log.warning("drop of %s.%s on %s: its files are kept, since %s still hold(s) "
                            "the table at the same location", db, name, _ref(ctx),
                            ", ".join(holders))
            else:
                self._purge(metadata, location, _ref(ctx))

    def _held_elsewhere(self, ctx, db: str, name: str, table: ttypes.Table) -> list[str]:
        """The other branches and tags whose catalog has this table at the same location:
        on a store whose refs share directories (the embedded one) their files are theirs too.
        (On lakeFS each ref's files are its own: nothing is shared.)"""
        if self.files.paths is not None:
            return []
        store, here = self.store, _ref(ctx)
        key = table_key(db, name)
        where = (table.sd.location if table.sd is not None else None) or ""
        refs = [b.name for b in store.list_branches()] + [t.name for t in store.list_tags()]
        holders = []
        for ref in refs:
            if ref == here:
                continue
            try:
                value = store.get(ref, key)
            except Exception:  # noqa: BLE001 - a ref gone meanwhile holds nothing
                continue
            if value is None:
                continue
            other = codec.decode(ttypes.Table, value)
            there = (other.sd.location if other.sd is not None else None) or ""
            if not where or not there or there == where:
                holders.append(ref)
        return holders

    def rename_table(self, ctx, body: dict) -> None:
        self._rename(ctx, body, view=False)

    def _rename(self, ctx, body: dict, view: bool) -> None:
        """A table's or view's rename (RenameTableRequest), as HMS renames: ``alter_table`` to
        the new database and name; refused when anything holds the destination."""
        what = "view name" if view else "table name"
        try:
            source, dest = body["source"], body["destination"]
            src = source["name"]
            src_db = database_of(list(source["namespace"]), table=src, view=view)
            dst_db, dst = database_of(list(dest["namespace"])), dest["name"]
        except (KeyError, TypeError):
            raise errors.bad_request("RenameTableRequest needs source and destination "
                                     "identifiers") from None
        missing = (errors.no_such_view if view else errors.no_such_table)(f"{src_db}.{src}")
        check_name(src, what, missing)
        check_name(dst, what)
        moved = self._hms_view(ctx, src_db, src) if view else self._hms_table(ctx, src_db, src)
        self._database(ctx, dst_db)
        try:
            other = self.h.get_table(ctx, dst_db, dst)
        except ttypes.NoSuchObjectException:
            other = None
        if other is not None:
            held = "View" if hive_form.is_view(other) else "Table"
            raise RestError(409, "AlreadyExistsException",
                            f"Cannot rename {src_db}.{src} to {dst_db}.{dst}. "
                            f"{held} already exists")
        moved.dbName, moved.tableName = dst_db, dst
        try:
            self.h.alter_table(ctx, src_db, src, moved)
        except ttypes.InvalidOperationException as exc:
            raise errors.bad_request(errors._text(exc)) from None

    # --- commits -----------------------------------------------------------------------
    def commit_table(self, ctx, namespace: list[str] | None, name: str | None,
                     body: dict) -> bytes:
        CommitTableRequest = _pyiceberg()[3]
        body = dict(body or {})
        if namespace is not None:  # the path names the table (the body's identifier is
            # optional there, and clients fill it in their own ways: the path wins, as in
            # Iceberg's own server)
            body["identifier"] = {"namespace": namespace, "name": name}
        try:
            request = CommitTableRequest.model_validate(body)
        except MALFORMED as exc:
            raise errors.bad_request(f"Invalid CommitTableRequest: {_first(exc)}") from None
        db, table = _identifier(request)
        with self._locked(ctx, db, table):
            staged = self._stage(ctx, db, table, request)
            return self._apply(ctx, staged)

    def commit_transaction(self, ctx, body: dict) -> None:
        """Several tables at once: every table locked (in name order), every requirement
        checked and every metadata file written, then every table altered in one write
        transaction of the store (on lakeFS one log entry; with --autocommit one commit): all
        of them or none."""
        CommitTableRequest = _pyiceberg()[3]
        changes = (body or {}).get("table-changes")
        if not isinstance(changes, list) or not changes:
            raise errors.bad_request("CommitTransactionRequest needs table-changes")
        requests = []
        for change in changes:
            try:
                request = CommitTableRequest.model_validate(change)
            except MALFORMED as exc:
                raise errors.bad_request(f"Invalid table change: {_first(exc)}") from None
            if request.identifier is None:
                raise errors.bad_request("Every table change of a transaction names its table")
            requests.append((_identifier(request), request))
        keys = [key for key, _ in requests]
        if len(set(keys)) != len(keys):
            raise errors.bad_request("A transaction names a table twice")
        with ExitStack() as stack:
            for key in sorted(keys):
                stack.enter_context(self._locked(ctx, *key))
            staged = [self._stage(ctx, db, table, request) for (db, table), request in requests]
            written = None
            try:
                with self.writes.one_write(ctx, _ref(ctx) or self.writes.env.ref) as written:
                    for item in staged:
                        self._apply(ctx, item)
                    # what --autocommit's one commit says
                    ctx.call = "commit_transaction " + ", ".join(f"{d}.{t}" for d, t in keys)
            except Exception:
                if written is None or not written.applied:  # nothing names the new files
                    for item in staged:
                        if item.metadata_location:
                            self._delete_quietly(item.metadata_location)
                raise

    def _stage(self, ctx, db: str, name: str, request) -> "_Staged":
        TableMetadataV1 = _pyiceberg()[4]
        from pyiceberg.schema import Schema

        try:
            table = self.h.get_table(ctx, db, name)
        except ttypes.NoSuchObjectException:
            table = None
        creating = any(r.type == "assert-create" for r in request.requirements)
        if table is not None and hive_form.is_view(table):
            if creating:
                self._taken(ctx, db, name)
            raise errors.no_such_table(f"{db}.{name}")
        if table is not None and not hive_form.is_iceberg(table):
            raise RestError(404, "NoSuchIcebergTableException",
                            f"Not an Iceberg table: {db}.{name}")
        if table is None and not creating:
            raise errors.no_such_table(f"{db}.{name}")
        if table is None:
            self._database(ctx, db)
        current = table.parameters.get(hive_form.METADATA_LOCATION) if table else None
        stored = self._metadata(current, db, name) if current else None
        # the base as this ref sees it: its new files go under the ref's paths (RefPaths)
        base = self.files.load_for(current, _ref(ctx)) if stored is not None else None
        try:
            for requirement in request.requirements:
                requirements.check(requirement, base)
        except requirements.RequirementFailed as exc:
            raise errors.commit_failed(str(exc)) from None
        updates = _format_version_3(requirements.renumber(request.updates, base))
        try:
            metadata = _updated(
                # a creation builds on nothing: no schema, spec or order yet (unvalidated,
                # since a validated one would hold an empty schema 0 already)
                _lineage(base) or TableMetadataV1.model_construct(last_column_id=-1,
                                                                  schema=Schema()),
                updates, base is None, current)
        except (ValueError, KeyError) as exc:  # as Iceberg's server words a builder's refusal
            raise RestError(400, "IllegalArgumentException",
                            f"Invalid update: {_first(exc)}") from None
        if base is not None and metadata == base:
            return _Staged(db, name, table, stored, metadata, current, None)
        location = self.files.next_location(metadata, current)
        self.files.write(metadata, location)
        return _Staged(db, name, table, stored, metadata, current, location)

    def _apply(self, ctx, staged: "_Staged") -> bytes:
        if staged.metadata_location is None:  # nothing changed
            return load_table_result(staged.previous,
                                     self.files.raw_for(staged.previous, _ref(ctx)))
        try:
            if staged.table is None:
                self.h.create_table(ctx, hive_form.new_table(
                    staged.db, staged.name, staged.metadata, staged.metadata_location, ctx.user))
            else:
                new = hive_form.committed(codec.clone(staged.table), staged.base, staged.metadata,
                                          staged.metadata_location)
                self._alter(ctx, staged.db, staged.name, new, staged.previous)
        except ttypes.AlreadyExistsException:
            self._delete_quietly(staged.metadata_location)
            raise errors.commit_failed("Requirement failed: table already exists") from None
        except Exception:
            self._delete_quietly(staged.metadata_location)
            raise
        return load_table_result(staged.metadata_location,
                                 self.files.raw(staged.metadata_location))

    def _alter(self, ctx, db: str, name: str, table: ttypes.Table, expected: str | None):
        props = {"DO_NOT_UPDATE_STATS": "true"}
        if expected is not None:
            props.update({"expected_parameter_key": hive_form.METADATA_LOCATION,
                          "expected_parameter_value": expected})
        self.h.alter_table_with_environment_context(
            ctx, db, name, table, ttypes.EnvironmentContext(properties=props))

    @contextmanager
    def _locked(self, ctx, db: str, name: str):
        """The table's exclusive HMS lock, as Hive-catalog writers take it."""
        request = ttypes.LockRequest(
            component=[ttypes.LockComponent(
                type=ttypes.LockType.EXCLUSIVE, level=ttypes.LockLevel.TABLE, dbname=db,
                tablename=name)],
            user=ctx.user or "iceberg-rest", hostname=_HOST)
        response = self.h.lock(ctx, request)
        deadline = time.monotonic() + self.lock_timeout
        pause = 0.02
        try:
            while response.state == ttypes.LockState.WAITING:
                if time.monotonic() > deadline:
                    raise errors.commit_failed(
                        f"Timed out after {self.lock_timeout:g} s waiting for the lock of "
                        f"{db}.{name}")
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
                response = self.h.check_lock(ctx, ttypes.CheckLockRequest(lockid=response.lockid))
            if response.state != ttypes.LockState.ACQUIRED:
                raise errors.commit_failed(f"Could not lock {db}.{name}: state {response.state}")
            yield
        finally:
            try:
                self.h.unlock(ctx, ttypes.UnlockRequest(lockid=response.lockid))
            except Exception:  # noqa: BLE001 - already released (timed out, aborted)
                log.debug("unlock of %s.%s", db, name, exc_info=True)

    # --- helpers -----------------------------------------------------------------------
    def _database(self, ctx, db: str) -> ttypes.Database:
        try:
            return self.h.get_database(ctx, db)
        except ttypes.NoSuchObjectException:
            raise errors.no_such_namespace(db) from None

    def _exists(self, ctx, db: str, name: str) -> bool:
        try:
            self.h.get_table(ctx, db, name)
            return True
        except ttypes.NoSuchObjectException:
            return False

    def _delete_quietly(self, location: str) -> None:
        try:
            self.files.io(location).delete(location)
        except Exception:  # noqa: BLE001 - an orphan file is harmless
            log.debug("could not delete %s", location, exc_info=True)

    def _purge(self, metadata, location: str, ref: str | None) -> None:
        """Drop with purge: the files the table's metadata names (data, manifests, manifest
        lists, statistics, previous metadata files), as Iceberg's CatalogUtil.dropTableData.
        On lakeFS each is deleted on the ref of the request only (a path naming another ref,
        written there before a branch was made, is moved to this one first)."""
        io = self.files.io(location)
        files: set[str] = {location}
        files.update(entry.metadata_file for entry in metadata.metadata_log)
        files.update(s.statistics_path for s in metadata.statistics)
        files.update(s.statistics_path for s in getattr(metadata, "partition_statistics", []))
        for snapshot in metadata.snapshots:
            files.add(snapshot.manifest_list)
            try:
                for manifest in snapshot.manifests(io):
                    files.add(manifest.manifest_path)
                    for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                        files.add(entry.data_file.file_path)
            except Exception:  # noqa: BLE001 - a file already gone: purge what is there
                log.debug("purge: reading %s", snapshot.manifest_list, exc_info=True)
        if self.files.paths is not None and ref:
            files = {self.files.paths.move(path, ref) for path in files}
        for path in sorted(files):
            self._delete_quietly(path)


class _Structs:
    """The handler's calls with their answers as structs: a read the handler answers with the
    stored bytes (:class:`~hms_proxy.thrift.replies.Raw`, written to a Thrift client as is) is
    decoded here."""

    _ANSWERS = {"get_database": ttypes.Database, "get_table": ttypes.Table,
                "get_table_objects_by_name": ttypes.Table}

    def __init__(self, handler):
        self._handler = handler

    def __getattr__(self, name):
        call = getattr(self._handler, name)
        cls = self._ANSWERS.get(name)

        def thrift_call(*args):
            try:
                value = call(*args)
            except thrift_errors.HMSError as exc:  # as a Thrift client would get it
                raise thrift_errors.to_thrift(exc, ttypes) from None
            return value if cls is None else _decode(cls, value)
        return thrift_call


def _decode(cls, value):
    if isinstance(value, list):
        return [_decode(cls, item) for item in value]
    data = getattr(value, "data", None)
    if isinstance(data, (bytes, bytearray, memoryview)) and not isinstance(value, cls):
        return codec.decode(cls, bytes(data))
    return value


class _Staged:
    __slots__ = ("db", "name", "table", "base", "metadata", "previous", "metadata_location")

    def __init__(self, db, name, table, base, metadata, previous, metadata_location):
        self.db, self.name, self.table, self.base = db, name, table, base
        self.metadata, self.previous, self.metadata_location = metadata, previous, \
            metadata_location


def _ref(ctx) -> str | None:
    return ctx.listener_ref


def _updated(base_metadata, updates, enforce_validation, metadata_location):
    """pyiceberg's ``update_table_metadata``, without its final deep copy of the result for an
    existing table (three quarters of a commit's time on a table with a history): every
    update makes a new model (``model_copy(update=...)``) and leaves its input as it was, so
    the cached base is never changed. Linear in the updates where pyiceberg's is not: a run of
    property updates is applied on one copy of the properties, a ``remove-snapshots`` by sets
    of ids, and what the commit added is looked up in an index (a creation,
    ``enforce_validation``, is validated whole as pyiceberg does). The library's own function
    where its internals differ."""
    try:
        from datetime import datetime

        from pyiceberg.table.update import (
            _apply_table_update,
            _TableMetadataUpdateContext,
            _update_table_metadata_log,
        )
        from pyiceberg.utils.datetime import datetime_to_millis
    except ImportError:
        from pyiceberg.table.update import update_table_metadata
        return update_table_metadata(base_metadata, updates, enforce_validation,
                                     metadata_location)
    context = _indexed_context(_TableMetadataUpdateContext)()
    metadata = base_metadata
    i = 0
    while i < len(updates):
        if updates[i].action in _PROPERTY_ACTIONS:
            end = i
            while end < len(updates) and updates[end].action in _PROPERTY_ACTIONS:
                end += 1
            metadata = _properties_updated(metadata, updates[i:end], context)
            i = end
            continue
        if updates[i].action == "set-location":
            absolute_location(updates[i].location, "set-location")
        if updates[i].action == "remove-snapshots":
            metadata = _snapshots_removed(metadata, updates[i], context)
            i += 1
            continue
        metadata = _apply_table_update(updates[i], metadata, context)
        i += 1
    if context.has_changes():
        if metadata_location:
            metadata = _update_table_metadata_log(metadata, metadata_location,
                                                  base_metadata.last_updated_ms)
        if base_metadata.last_updated_ms == metadata.last_updated_ms:
            metadata = metadata.model_copy(
                update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    metadata.spec().check_compatible(metadata.schema())
    metadata.sort_order().check_compatible(metadata.schema())
    if enforce_validation:  # a creation: the result validated whole, as pyiceberg does
        from pyiceberg.table.metadata import TableMetadataUtil
        return TableMetadataUtil.parse_obj(metadata.model_dump())
    return metadata


_PROPERTY_ACTIONS = ("set-properties", "remove-properties")
_CONTEXT = None


def _properties_updated(metadata, updates, context):
    """A run of ``set-properties`` and ``remove-properties`` updates applied as pyiceberg
    applies each (in order; removing a missing key is its KeyError) on one copy of the
    properties: pyiceberg copies them, and the metadata, once per update (a commit of N such
    updates cost N copies of N properties)."""
    properties = None
    for update in updates:
        if update.action == "set-properties":
            if not update.updates:
                continue
            properties = dict(metadata.properties) if properties is None else properties
            properties.update(update.updates)
        else:
            if not update.removals:
                continue
            properties = dict(metadata.properties) if properties is None else properties
            for key in update.removals:
                properties.pop(key)
        context.add_update(update)
    if properties is None:
        return metadata
    return metadata.model_copy(update={"properties": properties})


def _snapshots_removed(metadata, update, context):
    """A ``remove-snapshots`` update applied as pyiceberg applies it (an id the table does not
    have is its ValueError; the removed snapshots' children lose their parent, their log
    entries, refs and statistics go; removing ``main``'s snapshot unsets the current one),
    in time linear in the ids and the table's snapshots: pyiceberg scans the snapshots once
    per id and the ids once per snapshot (a 16 MiB body repeating ids ~800,000 times against
    a table's history was hours of one worker thread)."""
    from pyiceberg.table.refs import MAIN_BRANCH
    from pyiceberg.table.update import RemoveSnapshotRefUpdate, RemoveStatisticsUpdate

    removed = set(update.snapshot_ids)
    if not removed:
        context.add_update(update)
        return metadata
    existing = {snapshot.snapshot_id for snapshot in metadata.snapshots}
    missing = next((i for i in update.snapshot_ids if i not in existing), None)
    if missing is not None:
        raise ValueError(f"Snapshot with snapshot id {missing} does not exist")
    snapshots = [
        snapshot.model_copy(update={"parent_snapshot_id": None})
        if snapshot.parent_snapshot_id in removed else snapshot
        for snapshot in metadata.snapshots if snapshot.snapshot_id not in removed]
    snapshot_log = [entry for entry in metadata.snapshot_log if entry.snapshot_id not in removed]
    changes = {"snapshots": snapshots, "snapshot_log": snapshot_log}
    gone_refs = [name for name, ref in metadata.refs.items() if ref.snapshot_id in removed]
    if gone_refs:
        changes["refs"] = {name: ref for name, ref in metadata.refs.items()
                           if ref.snapshot_id not in removed}
        if MAIN_BRANCH in gone_refs:
            changes["current_snapshot_id"] = None
        for name in gone_refs:
            context.add_update(RemoveSnapshotRefUpdate(ref_name=name))
    gone_statistics = {s.snapshot_id for s in metadata.statistics if s.snapshot_id in removed}
    if gone_statistics:
        changes["statistics"] = [s for s in metadata.statistics
                                 if s.snapshot_id not in gone_statistics]
        for snapshot_id in sorted(gone_statistics):
            context.add_update(RemoveStatisticsUpdate(snapshot_id=snapshot_id))
    context.add_update(update)
    return metadata.model_copy(update=changes)


def _indexed_context(base):
    """pyiceberg's update context with what a commit added indexed by id: its own
    ``is_added_*`` scan every update applied before (quadratic in a commit's updates)."""
    global _CONTEXT
    if _CONTEXT is None:
        from pyiceberg.table.update import (
            AddPartitionSpecUpdate,
            AddSchemaUpdate,
            AddSnapshotUpdate,
            AddSortOrderUpdate,
        )

        ids = ((AddSnapshotUpdate, "snapshot", lambda u: u.snapshot.snapshot_id),
               (AddSchemaUpdate, "schema", lambda u: u.schema_.schema_id),
               (AddPartitionSpecUpdate, "spec", lambda u: u.spec.spec_id),
               (AddSortOrderUpdate, "order", lambda u: u.sort_order.order_id))

        class IndexedContext(base):
            def __init__(self):
                super().__init__()
                self._added = {kind: set() for _, kind, _ in ids}

            def add_update(self, update):
                super().add_update(update)
                for cls, kind, key in ids:
                    if isinstance(update, cls):
                        self._added[kind].add(key(update))

            def is_added_snapshot(self, snapshot_id):
                return snapshot_id in self._added["snapshot"]

            def is_added_schema(self, schema_id):
                return schema_id in self._added["schema"]

            def is_added_partition_spec(self, spec_id):
                return spec_id in self._added["spec"]

            def is_added_sort_order(self, sort_order_id):
                return sort_order_id in self._added["order"]

        _CONTEXT = IndexedContext
    return _CONTEXT


_V3_UPGRADE = None


def _with_defaults(metadata, requested):
    """``metadata`` whose schema keeps the columns' default values (``initial-default``,
    ``write-default``) of the ``requested`` schema: pyiceberg drops them when it gives a new
    table's schema its fresh field ids (the fields keep their order)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import StructType

    def keep(asked, fresh):
        if not isinstance(fresh, StructType) or not isinstance(asked, StructType):
            return fresh
        fields = []
        for a, f in zip(asked.fields, fresh.fields):
            update = {"field_type": keep(a.field_type, f.field_type)}
            for name in ("initial_default", "write_default"):
                if getattr(a, name, None) is not None:
                    update[name] = getattr(a, name)
            fields.append(f.model_copy(update=update))
        return StructType(*fields)

    def defaults(struct) -> bool:
        return any(getattr(f, "initial_default", None) is not None
                   or getattr(f, "write_default", None) is not None
                   or (isinstance(f.field_type, StructType) and defaults(f.field_type))
                   for f in struct.fields)

    if not defaults(requested.as_struct()):
        return metadata
    fresh = metadata.schema()
    schema = Schema(*keep(requested.as_struct(), fresh.as_struct()).fields,
                    schema_id=fresh.schema_id,
                    identifier_field_ids=fresh.identifier_field_ids)
    return metadata.model_copy(update={"schemas": [schema]})


def _lineage(metadata):
    """A format version 3 table's metadata with row lineage started (``next-row-id`` 0 where
    pyiceberg left it unset)."""
    if metadata is not None and metadata.format_version >= 3 and metadata.next_row_id is None:
        return metadata.model_copy(update={"next_row_id": 0})
    return metadata


def _format_version_3(updates) -> list:
    """``updates`` with an upgrade to format version 3 made by this server: pyiceberg's own
    refuses it (it does not write v3 tables itself). The upgrade starts row lineage at
    ``next-row-id`` 0, as the spec says; a version above 3 is refused."""
    global _V3_UPGRADE
    if not any(u.action == "upgrade-format-version" for u in updates):
        return updates
    if _V3_UPGRADE is None:
        from pyiceberg.table.update import UpgradeFormatVersionUpdate, _apply_table_update

        class UpgradeToV3(UpgradeFormatVersionUpdate):
            pass

        @_apply_table_update.register(UpgradeToV3)
        def _(update, base_metadata, context):
            if base_metadata.format_version == 3:
                return base_metadata
            from pyiceberg.table.metadata import TableMetadataV3

            context.add_update(update)
            return TableMetadataV3.model_construct(
                **{**dict(base_metadata), "format_version": 3, "next_row_id": 0})

        _V3_UPGRADE = UpgradeToV3
    out = []
    for update in updates:
        if update.action == "upgrade-format-version":
            if update.format_version > 3:
                raise RestError(400, "IllegalArgumentException",
                                f"Unsupported format version: v{update.format_version} "
                                "(supported: v3)")
            if update.format_version == 3:
                update = _V3_UPGRADE(format_version=3)
        out.append(update)
    return out


def _identifier(request) -> tuple[str, str]:
    namespace = request.identifier.namespace
    levels = list(getattr(namespace, "root", namespace))
    name = request.identifier.name
    return database_of(levels, table=name), check_name(name, "table name")


def _first(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__).splitlines()[0]

