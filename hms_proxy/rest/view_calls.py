"""The REST catalog's view operations (a mixin of
:class:`~hms_proxy.rest.catalog.RestCatalog`): list, create, load, replace, drop, rename, each
as the Thrift calls Iceberg's Hive catalog makes for a view, a replace under the view's HMS lock
like a table commit."""
from __future__ import annotations

import json
from contextlib import contextmanager

from hms_proxy.rest import errors, hive_form, views
from hms_proxy.rest.errors import RestError
from hms_proxy.rest.names import absolute_location, check_name, database_of
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec


def _no_such_view(db: str, name: str) -> RestError:
    return errors.no_such_view(f"{db}.{name}")


@contextmanager
def _shaped(what: str):
    """The view builder (:mod:`.views`) works on the request's JSON as it came: a member of
    the wrong JSON type (a list for an object, a number for a list) is the request's fault,
    a 400, not a fault of the server."""
    try:
        yield
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        text = (str(exc) or type(exc).__name__).splitlines()[0]
        raise errors.bad_request(f"Invalid {what}: {type(exc).__name__}: {text}") from None


def _result(location: str, raw: bytes) -> bytes:
    return b"".join((b'{"metadata-location":', json.dumps(location).encode(),
                     b',"metadata":', raw, b',"config":{}}'))


class ViewCalls:
    def _hms_view(self, ctx, db: str, name: str) -> ttypes.Table:
        try:
            table = self.h.get_table(ctx, db, name)
        except ttypes.NoSuchObjectException:
            raise _no_such_view(db, name) from None
        if not hive_form.is_view(table) or \
                not (table.parameters or {}).get(hive_form.METADATA_LOCATION):
            raise _no_such_view(db, name)
        return table

    def _taken(self, ctx, db: str, name: str, kind: str = "Table") -> None:
        """AlreadyExists naming what holds ``db.name`` (a table or a view), if anything;
        ``kind``: what is being made (Iceberg words the two cases apart)."""
        try:
            other = self.h.get_table(ctx, db, name)
        except ttypes.NoSuchObjectException:
            return
        what = "View" if hive_form.is_view(other) else "Table"
        message = f"{what} already exists: {db}.{name}" if what == kind else \
            f"{what} with same name already exists: {db}.{name}"
        raise RestError(409, "AlreadyExistsException", message)

    def list_views(self, ctx, namespace: list[str]) -> list[dict]:
        return self._identifiers(ctx, namespace, hive_form.is_view)

    def load_view(self, ctx, namespace: list[str], name: str) -> bytes:
        db = database_of(namespace, table=name, view=True)
        name = check_name(name, "view name", _no_such_view(db, name))
        location = self._hms_view(ctx, db, name).parameters[hive_form.METADATA_LOCATION]
        return _result(location, self._raw(location, db, name))

    def create_view(self, ctx, namespace: list[str], body: dict) -> bytes:
        db = database_of(namespace)
        name = check_name(body.get("name"), "view name")
        database = self._database(ctx, db)
        self._taken(ctx, db, name, "View")
        location = absolute_location(body.get("location"), "CreateViewRequest") or \
            (database.locationUri or "").rstrip("/") + "/" + name
        with _shaped("CreateViewRequest"):
            metadata = views.create(body, location)
            hive_form.new_view(db, name, metadata, "", ctx.user)  # the HMS form can be made
        data = json.dumps(metadata, separators=(",", ":")).encode()
        metadata_location = self.files.next_location(metadata, None)
        self.files.write_json(data, metadata_location)
        try:
            self.h.create_table(ctx, hive_form.new_view(db, name, metadata, metadata_location,
                                                        ctx.user))
        except ttypes.AlreadyExistsException:
            self._delete_quietly(metadata_location)
            self._taken(ctx, db, name, "View")
            raise RestError(409, "AlreadyExistsException",
                            f"View already exists: {db}.{name}") from None
        except Exception:
            self._delete_quietly(metadata_location)
            raise
        return _result(metadata_location, data)

    def replace_view(self, ctx, namespace: list[str], name: str, body: dict) -> bytes:
        db = database_of(namespace, table=name, view=True)
        name = check_name(name, "view name", _no_such_view(db, name))
        updates = body.get("updates") or []
        reqs = body.get("requirements") or []
        if not isinstance(updates, list) or not isinstance(reqs, list) or \
                not all(isinstance(x, dict) for x in updates + reqs):
            raise errors.bad_request("CommitViewRequest: requirements and updates are lists "
                                     "of objects")
        with self._locked(ctx, db, name):
            table = self._hms_view(ctx, db, name)
            current = table.parameters[hive_form.METADATA_LOCATION]
            base = json.loads(self._raw(current, db, name))
            with _shaped("CommitViewRequest"):
                for requirement in reqs:
                    views.check_requirement(requirement, base)
                builder = views.Builder(base)
                for update in updates:
                    builder.apply(update)
                if not builder.changed:
                    return _result(current, self.files.raw(current))
                metadata = builder.build()
                hive_form.view_committed(codec.clone(table), base, metadata, "")
            data = json.dumps(metadata, separators=(",", ":")).encode()
            location = self.files.next_location(metadata, current)
            self.files.write_json(data, location)
            try:
                self._alter(ctx, db, name, hive_form.view_committed(
                    codec.clone(table), base, metadata, location), current)
            except Exception:
                self._delete_quietly(location)
                raise
            return _result(location, data)

    def drop_view(self, ctx, namespace: list[str], name: str) -> None:
        db = database_of(namespace, table=name, view=True)
        name = check_name(name, "view name", _no_such_view(db, name))
        self._hms_view(ctx, db, name)
        try:
            self.h.drop_table(ctx, db, name, False)
        except ttypes.NoSuchObjectException:
            raise _no_such_view(db, name) from None

    def rename_view(self, ctx, body: dict) -> None:
        self._rename(ctx, body, view=True)
