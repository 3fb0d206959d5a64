"""What the Iceberg code of the catalog shares: a table's files read and written through
pyiceberg's FileIO (on a lakeFS store through its S3 gateway, paths moved to the ref read), the
next metadata file's name, and which HMS tables are Iceberg tables."""
from __future__ import annotations

import gzip
import json
import posixpath
import re
import uuid

METADATA_LOCATION = "metadata_location"
_VERSION = re.compile(r"(\d+)-[^/]*\.metadata\.json(?:\.gz)?$")


def unwrap(store):
    """The store under a server's wrappers (its ``wrapped``)."""
    while hasattr(store, "wrapped"):
        store = store.wrapped
    return store


def is_lakefs(store) -> bool:
    raw = unwrap(store)
    return hasattr(raw, "repository") and hasattr(raw, "config")


def has_pyiceberg() -> bool:
    try:
        import pyiceberg.io  # noqa: F401
    except ImportError:
        return False
    return True


def is_iceberg(table) -> bool:
    """Whether an HMS table is an Iceberg table with a metadata file."""
    params = getattr(table, "parameters", None) or {}
    return str(params.get("table_type", "")).upper() == "ICEBERG" and bool(
        params.get(METADATA_LOCATION))


def snapshot_origins(snapshot: dict) -> set[int]:
    """A snapshot's id, and the one it was replayed from by a merge (``source-snapshot-id`` in
    its summary, as Iceberg's cherry-pick writes it): one change under two ids."""
    out = {snapshot["snapshot-id"]}
    try:
        out.add(int((snapshot.get("summary") or {}).get("source-snapshot-id")))
    except (TypeError, ValueError):
        pass
    return out


def known_snapshots(metadata: dict) -> set[int]:
    """The ids of a table's snapshots and of those they were replayed from."""
    out: set[int] = set()
    for snapshot in metadata.get("snapshots") or []:
        out |= snapshot_origins(snapshot)
    return out


def beside(path: str, tag: str, ext: str = "parquet") -> str:
    """A new file's path beside ``path``: ``<stem>-<tag>-<hex>.<ext>`` (``path``'s own
    extension when it has one)."""
    directory, name = posixpath.split(path)
    stem, dot, own = name.rpartition(".")
    stem, ext = (stem, own) if dot else (name, ext)
    return f"{directory}/{stem}-{tag}-{uuid.uuid4().hex[:12]}.{ext}"


def next_metadata_location(directory: str, previous: str) -> str:
    """``<directory>/NNNNN-<uuid>.metadata.json``, NNNNN one above ``previous``'s number."""
    match = _VERSION.search(previous)
    number = int(match.group(1)) + 1 if match else 0
    return f"{directory.rstrip('/')}/{number:05d}-{uuid.uuid4()}.metadata.json"


class Files:
    """Reading and writing a table's files (pyiceberg's FileIO by scheme; ``io_properties``:
    lakeFS's gateway on a lakeFS store); ``paths`` (a :class:`~kvmodel.iceberg_paths.RefPaths`)
    moves paths to a ref on a lakeFS store."""

    def __init__(self, io_properties: dict | None = None, paths=None):
        self.io_properties = dict(io_properties or {})
        self.paths = paths
        self._ios: dict = {}

    def _io(self, path: str):
        from pyiceberg.io import load_file_io

        scheme = path.split("://", 1)[0] if "://" in path else "file"
        if scheme not in self._ios:
            self._ios[scheme] = load_file_io(dict(self.io_properties), path)
        return self._ios[scheme]

    def move(self, path, ref):
        return path if self.paths is None or ref is None else self.paths.move(path, ref)

    def ident(self, path: str) -> str:
        """What names one file whatever ref a path reads it through."""
        return path if self.paths is None else self.paths.key(path)

    def read(self, path: str, ref: str | None = None) -> bytes:
        path = self.move(path, ref)
        with self._io(path).new_input(path).open() as stream:
            data = stream.read()
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data

    def write(self, path: str, data: bytes) -> None:
        with self._io(path).new_output(path).create(overwrite=False) as stream:
            stream.write(data)

    def metadata(self, path: str, ref: str | None = None) -> dict:
        return json.loads(self.read(path, ref))


def files_for(store) -> Files:
    """The files of ``store``'s Iceberg tables: through lakeFS's S3 gateway on a lakeFS
    store (paths moved to the ref read), else wherever their paths say."""
    if is_lakefs(store):
        from kvmodel.iceberg_paths import RefPaths, gateway_io_properties

        raw = unwrap(store)
        return Files(gateway_io_properties(raw.config), RefPaths(raw.repository))
    return Files()


__all__ = ["Files", "METADATA_LOCATION", "beside", "files_for", "has_pyiceberg", "is_iceberg",
           "is_lakefs", "known_snapshots", "next_metadata_location", "snapshot_origins",
           "unwrap"]
