"""Locations that follow the ref: stored independent of it, rendered for the ref served.

In a lakeFS repository the same table lives at ``s3a://REPO/main/wh/t`` on main and at
``s3a://REPO/dev/wh/t`` on dev. If the catalog stored what clients send, a table created on dev
would point at dev's data forever, even after dev is merged into main and deleted. So the
catalog stores locations under the repository with the ref replaced by ``@``
(``lakefs://REPO/@/wh/t``: the *canonical* form) and renders them for the ref being served:
``s3a://REPO/<ref>/wh/t`` through lakeFS's S3 gateway, ``s3://`` likewise, or
``lakefs://REPO/<ref>/wh/t`` for lakeFS's Hadoop file system. A branch is rendered by its name;
a tag or commit by the commit id (its content never changes, and Spark on it only reads).

Writing canonicalises a location into the repository on the branch written
(``s3a://REPO/<that branch>/...``, ``s3://``, ``lakefs://``); locations elsewhere (another
bucket, another repository, or this repository at another ref, named on purpose) are stored as
given. What is rewritten: a database's ``locationUri``, a table's and a partition's
``sd.location`` and serde parameter ``path`` (where Spark's data source tables keep theirs),
and the ``set`` of a statistics pointer. Rendering and canonicalising are each
other's inverse, and both leave any other key or value byte for byte.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.entities import parse_key
from kvmodel.store import lakefs_repository, open_store
from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import ReadView, VersionedStore, WriteTxn

CANONICAL_SCHEME = "lakefs"
REF_MARK = "@"
SCHEMES = ("s3a", "s3", "lakefs")


class RefLocations:
    """Canonical <-> rendered locations of one repository (see the module docstring)."""

    def __init__(self, repository: str, scheme: str = "s3a"):
        if scheme not in SCHEMES:
            raise ValueError(f"location scheme is one of {', '.join(SCHEMES)}, not {scheme!r}")
        self.repository = repository
        self.scheme = scheme
        self.canonical_prefix = f"{CANONICAL_SCHEME}://{repository}/{REF_MARK}/"
        self._marker = self.canonical_prefix.encode()

        self._rendered = LRUCache(64 << 20)  # (ref, key, stored value) -> rendered value
        self._repo_markers = tuple(f"{s}://{repository}/".encode() for s in SCHEMES)

    # --- one location ----------------------------------------------------------------------
    def canonical_location(self, location: str | None, branch: str) -> str | None:
        if not location:
            return location
        for scheme in SCHEMES:
            head = f"{scheme}://{self.repository}/{branch}"
            if location == head or location.startswith(head + "/"):
                return self.canonical_prefix + location[len(head) + 1:]
        return location

    def render_location(self, location: str | None, ref: str) -> str | None:
        if not location or not location.startswith(self.canonical_prefix):
            return location
        return f"{self.scheme}://{self.repository}/{ref}/{location[len(self.canonical_prefix):]}"

    # --- values of catalog keys -------------------------------------------------------------
    def canonical(self, key: str, value: bytes, branch: str) -> bytes:
        """The value to store for ``key`` written on ``branch``."""
        if not any(m in value for m in self._repo_markers):
            return value
        return self._rewrite(key, value, lambda loc: self.canonical_location(loc, branch))

    def render(self, key: str, value: bytes | None, ref: str) -> bytes | None:
        """The value of ``key`` as clients of ``ref`` see it."""
        if value is None or self._marker not in value:
            return value
        hit = self._rendered.get((ref, key, value))  # listings render the same values again
        if hit is None:
            hit = self._rewrite(key, value, lambda loc: self.render_location(loc, ref))
            self._rendered.put((ref, key, value), hit, 2 * len(value) + len(key) + 96)
        return hit

    def _rewrite(self, key: str, value: bytes, fix) -> bytes:
        return rewrite_locations(key, value, fix)


def rewrite_locations(key: str, value: bytes, fix) -> bytes:
    """``value`` of catalog ``key`` with its location (a database's ``locationUri``, a table's
    or partition's ``sd.location`` and serde parameter ``path``, a statistics pointer's
    ``set``) replaced by ``fix(it)``; the same bytes when nothing changes."""
    kind, _ = parse_key(key)
    try:
        if kind == "database":
            db = codec.decode(ttypes.Database, value)
            new = fix(db.locationUri)
            if new == db.locationUri:
                return value
            db.locationUri = new
            return codec.encode(db)
        if kind in ("table", "partition"):
            cls = ttypes.Table if kind == "table" else ttypes.Partition
            obj = codec.decode(cls, value)
            if obj.sd is None:
                return value
            changed = False
            new = fix(obj.sd.location)
            if new != obj.sd.location:
                obj.sd.location, changed = new, True
            # Spark's data source tables (USING parquet, CTAS) keep their location in the
            # serde parameter "path" too, and Spark reads and writes there, not sd.location
            params = obj.sd.serdeInfo.parameters if obj.sd.serdeInfo is not None else None
            for name in [k for k in (params or {}) if k.lower() == "path"]:
                moved = fix(params[name])
                if moved != params[name]:
                    params[name], changed = moved, True
            return codec.encode(obj) if changed else value
        if kind == "table_item" and key.split("/", 4)[-1].startswith("stats/"):
            pointer = json.loads(value)
            if not isinstance(pointer, dict) or "set" not in pointer:
                return value
            new = fix(pointer["set"])
            if new == pointer["set"]:
                return value
            pointer["set"] = new
            return json.dumps(pointer, sort_keys=True, separators=(",", ":")).encode()
    except Exception:  # noqa: BLE001 - not what the key says: stored and served as is
        return value
    return value


def relocate_prefix(store: VersionedStore, branch: str, old: str, new: str) -> int:
    """On ``branch``, every location equal to ``old`` or under it (``old/...``) is moved to
    the same place under ``new``, in one write transaction; the number of values changed."""
    old, new = old.rstrip("/"), new.rstrip("/")

    def fix(location):
        if location == old:
            return new
        if location and location.startswith(old + "/"):
            return new + location[len(old):]
        return location

    marker = old.encode()
    changed = 0
    with store.write(branch) as txn:
        for key, value in list(txn.scan()):
            if marker not in value:
                continue
            fixed = rewrite_locations(key, value, fix)
            if fixed != value:
                txn.put(key, fixed)
                changed += 1
    return changed


def _ref_name(view) -> str:
    return view.ref.branch or view.ref.commit


class _RenderedView(ReadView):
    """A read view whose values are rendered for its ref."""

    def __init__(self, view, locations: RefLocations):
        self._view = view
        self._loc = locations
        self._name = _ref_name(view)
        self.ref = view.ref
        self.token = view.token

    def get(self, key):
        return self._loc.render(key, self._view.get(key), self._name)

    def get_many(self, keys):
        return [self._loc.render(k, v, self._name) for k, v in zip(keys, self._view.get_many(keys))]

    def scan(self, start="", end=None):
        for key, value in self._view.scan(start, end):
            yield key, self._loc.render(key, value, self._name)


class _RenderedTxn(_RenderedView, WriteTxn):
    """A write transaction whose reads are rendered; writes go to the store as given (the
    store canonicalises them)."""

    def put(self, key, value):
        self._view.put(key, value)

    def put_many(self, items):
        self._view.put_many(items)

    def delete(self, key):
        self._view.delete(key)

    def delete_prefix(self, prefix):
        return self._view.delete_prefix(prefix)


class RenderedStore:
    """A store seen through :meth:`RefLocations.render`: what the server serves to clients
    (its reads name locations at the ref served). Everything else is the store's own; diff,
    merge and the command line work on the store itself, with canonical locations."""

    def __init__(self, store, locations: RefLocations):
        self._store = store
        self.locations = locations

    def __getattr__(self, name):
        return getattr(self._store, name)

    @property
    def wrapped(self):
        return self._store

    @contextmanager
    def read(self, ref):
        with self._store.read(ref) as view:
            yield _RenderedView(view, self.locations)

    @contextmanager
    def write(self, branch):
        with self._store.write(branch) as txn:
            yield _RenderedTxn(txn, self.locations)

    def get(self, ref, key):
        with self.read(ref) as view:
            return view.get(key)


__all__ = ["RefLocations", "RenderedStore", "SCHEMES", "CANONICAL_SCHEME", "carried_by_branch"]


LAKEFS_ACTION = "_lakefs_actions/hms-proxy.yaml"  # kvmodel.lakefs_actions.ACTION_PATH


def carried_by_branch(key: str, value: bytes) -> bool:
    """Whether a lakeFS store keeps ``key`` per branch (:mod:`kvmodel.store.lakefs.variants`):
    an Iceberg table, which every commit of its writers changes, and which two branches that
    both committed to must merge in Iceberg's terms, not stop on lakeFS's object conflict."""
    parts = key.split("/")
    if len(parts) != 4 or parts[0] != "db" or parts[2] != "table":
        return False
    try:
        params = codec.decode(ttypes.Table, value).parameters or {}
    except Exception:  # noqa: BLE001 - not a table's bytes: kept as any key
        return False
    return str(params.get("table_type", "")).upper() == "ICEBERG"


def open_catalog_store(location, **lakefs_options) -> VersionedStore:
    """The store at ``location`` as the catalog keeps it (:func:`kvmodel.store.open_store`):
    a lakeFS one stores the locations under its repository ref-free
    (:meth:`RefLocations.canonical` on every value written) and keeps Iceberg tables per
    branch (:func:`carried_by_branch`), any other as it is. ``lakefs_options``: keyword
    arguments of ``LakeFSStore`` (``config``...)."""
    repository = lakefs_repository(str(location))
    if repository is not None:
        lakefs_options.setdefault("carried", carried_by_branch)
        # only where the lakeFS action's pre-merge hook checks lakeFS's merges of them
        lakefs_options.setdefault("carry_guard", LAKEFS_ACTION)
        return open_store(location, canonical=RefLocations(repository).canonical,
                          **lakefs_options)
    return open_store(location)
