"""Iceberg views: view metadata (format version 1) built and changed as Iceberg's
``ViewMetadata.Builder`` does, kept as an HMS ``VIRTUAL_VIEW`` whose ``table_type`` parameter is
``ICEBERG-VIEW`` and whose ``metadata_location`` names the current metadata file (the form of
Iceberg's ``HiveViewOperations``), so a view made on a branch merges like a table.

The builder's rules kept here: a schema equal to one the view has is that one (else the next
id); a version equal to one it has (same schema, representations, default catalog and
namespace, summary) is that one (else the next id); ``schema-id`` -1 and ``view-version-id`` -1
name the last added; one query per dialect; a replace may not drop a dialect unless
``replace.drop-dialect.allowed``; ``version.history.num-entries`` (default 10) versions kept."""
from __future__ import annotations

import time
import uuid

from hms_proxy.rest.errors import RestError
from hms_proxy.rest.names import absolute_location

FORMAT_VERSION = 1
HISTORY = "version.history.num-entries"
DROP_DIALECT = "replace.drop-dialect.allowed"


def invalid(message: str) -> RestError:
    """What Iceberg's own server answers for a metadata change its builder refuses (Java
    clients raise it as IllegalArgumentException)."""
    return RestError(400, "IllegalArgumentException", message)


def _schema_fields(schema: dict):
    return (schema.get("fields"), tuple(schema.get("identifier-field-ids") or ()))


def _same_version(one: dict, two: dict) -> bool:
    keys = ("summary", "representations", "default-catalog", "default-namespace", "schema-id")
    return all(_norm(one.get(k)) == _norm(two.get(k)) for k in keys)


def _norm(value):
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def _dialects(version: dict) -> list[str]:
    return [str(r.get("dialect", "")).lower() for r in version.get("representations") or []
            if r.get("type") == "sql"]


class Builder:
    """A view's metadata being made or changed (a dict in the spec's JSON form)."""

    def __init__(self, base: dict | None):
        self.base = base
        self.m = dict(base) if base else {
            "format-version": FORMAT_VERSION, "schemas": [], "versions": [],
            "version-log": [], "properties": {}}
        self.m["schemas"] = list(self.m.get("schemas") or [])
        self.m["versions"] = list(self.m.get("versions") or [])
        self.m["version-log"] = list(self.m.get("version-log") or [])
        self.m["properties"] = dict(self.m.get("properties") or {})
        self.last_schema: int | None = None
        self.last_version: int | None = None
        self.changed = base is None

    # --- updates -----------------------------------------------------------------------
    def apply(self, update: dict) -> None:
        action = update.get("action")
        handler = getattr(self, "_" + str(action).replace("-", "_"), None)
        if handler is None or action is None:
            raise invalid(f"Cannot apply unknown view update: {action}")
        try:
            handler(update)
        except (KeyError, TypeError, ValueError) as exc:
            raise invalid(f"Invalid view update {action}: {exc}") from None

    def _assign_uuid(self, update):
        value = str(update["uuid"])
        if self.base is not None and self.base.get("view-uuid") not in (None, value):
            raise invalid("Cannot reassign uuid")
        self.m["view-uuid"] = value
        self.changed = True

    def _upgrade_format_version(self, update):
        version = int(update["format-version"])
        if version != FORMAT_VERSION:
            raise invalid(f"Cannot upgrade view to unsupported format version: v{version} "
                          f"(supported: v{FORMAT_VERSION})")
        self.m["format-version"] = version

    def _add_schema(self, update):
        self.add_schema(update["schema"])

    def add_schema(self, schema: dict) -> int:
        from pyiceberg.schema import Schema

        Schema.model_validate(schema)  # a malformed schema is a 400 here, not a bad file later
        for existing in self.m["schemas"]:
            if _schema_fields(existing) == _schema_fields(schema):
                self.last_schema = existing["schema-id"]
                return existing["schema-id"]
        new_id = max((s["schema-id"] for s in self.m["schemas"]), default=-1) + 1
        self.m["schemas"].append({**schema, "schema-id": new_id})
        self.last_schema = new_id
        self.changed = True
        return new_id

    def _set_location(self, update):
        location = absolute_location(update.get("location"), "set-location", invalid)
        if location is None:
            raise invalid("Invalid set-location: location is missing")
        self.m["location"] = location.rstrip("/")
        self.changed = True

    def _set_properties(self, update):
        self.m["properties"].update({str(k): str(v) for k, v in update["updates"].items()})
        self.changed = True

    def _remove_properties(self, update):
        for key in update["removals"]:
            self.m["properties"].pop(key, None)
        self.changed = True

    def _add_view_version(self, update):
        self.add_version(update["view-version"])

    def add_version(self, version: dict) -> int:
        version = dict(version)
        if version.get("schema-id") == -1:
            if self.last_schema is None:
                raise invalid("Cannot set last added schema: no schema has been added")
            version["schema-id"] = self.last_schema
        if not any(s["schema-id"] == version.get("schema-id") for s in self.m["schemas"]):
            raise invalid(f"Cannot add version with unknown schema: {version.get('schema-id')}")
        dialects = _dialects(version)
        for dialect in dialects:
            if dialects.count(dialect) > 1:
                raise invalid(f"Invalid view version: Cannot add multiple queries for "
                              f"dialect {dialect}")
        if not version.get("representations"):
            raise invalid("Invalid view version: no representations")
        for existing in self.m["versions"]:
            if _same_version(existing, version):
                self.last_version = existing["version-id"]
                return existing["version-id"]
        new_id = max((v["version-id"] for v in self.m["versions"]), default=0) + 1
        version["version-id"] = new_id
        version.setdefault("timestamp-ms", int(time.time() * 1000))
        version.setdefault("summary", {})
        self.m["versions"].append(version)
        self.last_version = new_id
        self.changed = True
        return new_id

    def _set_current_view_version(self, update):
        self.set_current(int(update["view-version-id"]))

    def set_current(self, version_id: int) -> None:
        if version_id == -1:
            if self.last_version is None:
                raise invalid("Cannot set last version: no current version has been set")
            version_id = self.last_version
        version = next((v for v in self.m["versions"] if v["version-id"] == version_id), None)
        if version is None:
            raise invalid(f"Cannot set current version to unknown version: {version_id}")
        if self.m.get("current-version-id") == version_id:
            return
        self.m["current-version-id"] = version_id
        self.m["version-log"].append({"timestamp-ms": version.get("timestamp-ms") or
                                      int(time.time() * 1000), "version-id": version_id})
        self.changed = True

    # --- result ------------------------------------------------------------------------
    def build(self) -> dict:
        m = self.m
        if not m.get("location"):
            raise invalid("Invalid view: location is missing")
        if m.get("current-version-id") is None:
            raise invalid("Invalid view: no current version")
        m.setdefault("view-uuid", str(uuid.uuid4()))
        self._check_dialects()
        keep = max(1, int(m["properties"].get(HISTORY, 10) or 10))
        if len(m["versions"]) > keep:  # the newest versions, the current one always among them
            current = m["current-version-id"]
            newest = sorted(m["versions"], key=lambda v: v["version-id"])[-keep:]
            if all(v["version-id"] != current for v in newest):
                newest = newest[1:] + [v for v in m["versions"] if v["version-id"] == current]
            kept = {v["version-id"] for v in newest}
            m["versions"] = [v for v in m["versions"] if v["version-id"] in kept]
            m["version-log"] = [e for e in m["version-log"] if e["version-id"] in kept]
        return m

    def _check_dialects(self) -> None:
        if self.base is None or str(self.m["properties"].get(DROP_DIALECT, "false")).lower() \
                == "true":
            return
        old = next((v for v in self.base.get("versions") or []
                    if v["version-id"] == self.base.get("current-version-id")), None)
        new = next(v for v in self.m["versions"]
                   if v["version-id"] == self.m["current-version-id"])
        if old is None:
            return
        before, after = set(_dialects(old)), set(_dialects(new))
        if not before <= after:
            raise invalid(
                f"Cannot replace view due to loss of view dialects ({DROP_DIALECT}=false):\n"
                f"Previous dialects: {sorted(before)}\nNew dialects: {sorted(after)}")


def check_requirement(requirement: dict, base: dict) -> None:
    if requirement.get("type") != "assert-view-uuid":
        raise invalid(f"Unknown view requirement: {requirement.get('type')}")
    if str(requirement.get("uuid")) != str(base.get("view-uuid")):
        raise RestError(409, "CommitFailedException",
                        f"Requirement failed: view UUID does not match: expected "
                        f"{base.get('view-uuid')} != {requirement.get('uuid')}")


def create(body: dict, location: str) -> dict:
    """A new view's metadata from a CreateViewRequest."""
    try:
        schema, version = body["schema"], dict(body["view-version"])
    except (KeyError, TypeError):
        raise invalid("CreateViewRequest needs a schema and a view-version") from None
    builder = Builder(None)
    builder.m["view-uuid"] = str(uuid.uuid4())
    builder.m["location"] = location.rstrip("/")
    builder.m["properties"] = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
    try:
        schema_id = builder.add_schema(schema)
    except (KeyError, TypeError, ValueError) as exc:
        raise invalid(f"Invalid view schema: {exc}") from None
    version["schema-id"] = schema_id
    builder.set_current(builder.add_version(version))
    return builder.build()


def current_sql(metadata: dict) -> str | None:
    version = next((v for v in metadata.get("versions") or []
                    if v["version-id"] == metadata.get("current-version-id")), None)
    for rep in (version or {}).get("representations") or []:
        if rep.get("type") == "sql":
            return rep.get("sql")
    return None
