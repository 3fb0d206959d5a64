"""Iceberg metadata files: read (cached by location: a metadata file never changes once
written), and written for a commit, with pyiceberg's models and its FileIO.

The FileIO is chosen by the location's scheme with the server's properties only (for lakeFS,
its S3 gateway): a table's own properties never pick an implementation class here, since they
come from any client."""
from __future__ import annotations

import contextvars
import gzip
import json
import os
import re
import threading
import uuid

from kvmodel.iceberg_paths import RefPaths
from kvmodel.store.cache import LRUCache

_VERSION = re.compile(r"(\d+)-[^/]*\.metadata\.json$")
# what a parsed metadata file (pyiceberg's models) takes in memory, per byte of its JSON:
# ~20x, measured (tracemalloc) on files of 2,000 and 20,000 columns; the cache charges it so,
# or it would hold five times its size
PARSED = 20
# set while a read is answered on the event loop (hms_proxy.rest.app): a file not in memory
# raises Blocking there instead of being read
INLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("rest_inline", default=False)


def to_json(metadata) -> bytes:
    """A pyiceberg table metadata model's JSON. pyiceberg's version 3 model refuses to write
    itself (pyiceberg does not write v3 tables), but it holds all of a v3 file's fields (row
    lineage's ``next-row-id``, snapshots' ``first-row-id`` and ``added-rows``, default values),
    so its common serializer writes it whole."""
    from pyiceberg.typedef import IcebergBaseModel

    return IcebergBaseModel.model_dump_json(metadata).encode()


class Blocking(Exception):
    """The inline read needs I/O: answer it from the thread pool."""


class MetadataFiles:
    def __init__(self, io_properties: dict | None = None, cache_bytes: int = 128 << 20,
                 paths: "RefPaths | None" = None):
        self.io_properties = dict(io_properties or {})
        self.paths = paths
        self._cache = LRUCache(cache_bytes)
        self._ios: dict[str, object] = {}
        self._lock = threading.Lock()

    def io(self, location: str):
        from pyiceberg.io import load_file_io

        scheme = location.split("://", 1)[0] if "://" in location else "file"
        with self._lock:
            io = self._ios.get(scheme)
            if io is None:
                io = self._ios[scheme] = load_file_io(dict(self.io_properties), location)
        return io

    @staticmethod
    def make_directories(location: str) -> None:
        """A new table's ``metadata`` and ``data`` directories when it lives on the local file
        system: clients that write files before the first metadata file (DuckDB's staged
        creates) do not make them. Object stores need none."""
        if "://" in location and not location.startswith("file:"):
            return
        path = location.removeprefix("file://") if location.startswith("file://") \
            else location.removeprefix("file:")
        for sub in ("metadata", "data"):
            os.makedirs(os.path.join(path, sub), exist_ok=True)

    def raw(self, location: str) -> bytes:
        """The metadata JSON at ``location`` (uncompressed)."""
        hit = self._cache.get(("raw", location))
        if hit is not None:
            return hit
        if INLINE.get():
            raise Blocking(location)
        with self.io(location).new_input(location).open() as stream:
            data = stream.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        self._cache.put(("raw", location), data, len(data) + 200)
        return data

    def raw_for(self, location: str, ref: str) -> bytes:
        """:meth:`raw`, with the paths moved to ``ref`` on a lakeFS store (:class:`RefPaths`)."""
        raw = self.raw(location)
        if self.paths is None:
            return raw
        hit = self._cache.get(("moved", location, ref))
        if hit is not None:
            return hit
        moved = self.paths.metadata_dict(json.loads(raw), ref)
        data = raw if moved is None else json.dumps(moved, separators=(",", ":")).encode()
        self._cache.put(("moved", location, ref), data, len(data) + 200)
        return data

    def load_for(self, location: str, ref: str):
        metadata = self.load(location)
        return metadata if self.paths is None else self.paths.metadata(metadata, ref)

    def load(self, location: str):
        """The pyiceberg TableMetadata at ``location``."""
        from pyiceberg.table.metadata import TableMetadataUtil

        hit = self._cache.get(("parsed", location))
        if hit is not None:
            return hit
        metadata = TableMetadataUtil.parse_raw(self.raw(location))
        self._cache.put(("parsed", location), metadata, PARSED * len(self.raw(location)) + 200)
        return metadata

    def write(self, metadata, location: str) -> bytes:
        """Write ``metadata`` at ``location`` (a new file: never overwrites); returns its
        JSON, which is then cached as that location's."""
        data = to_json(metadata)
        with self.io(location).new_output(location).create(overwrite=False) as stream:
            stream.write(data)
        self._cache.put(("raw", location), data, len(data) + 200)
        self._cache.put(("parsed", location), metadata, PARSED * len(data) + 200)
        return data

    def write_json(self, data: bytes, location: str) -> None:
        """Write a metadata file already in its JSON form (a view's) at ``location``."""
        with self.io(location).new_output(location).create(overwrite=False) as stream:
            stream.write(data)
        self._cache.put(("raw", location), data, len(data) + 200)

    @staticmethod
    def next_location(metadata, previous: str | None) -> str:
        """``<table>/metadata/NNNNN-<uuid>.metadata.json`` (``write.metadata.path`` when set),
        NNNNN one above the previous file's version (0 for the first)."""
        version = 0
        if previous:
            match = _VERSION.search(previous)
            version = int(match.group(1)) + 1 if match else 0
        props = metadata["properties"] if isinstance(metadata, dict) else metadata.properties
        location = metadata["location"] if isinstance(metadata, dict) else metadata.location
        directory = (props.get("write.metadata.path")
                     or location.rstrip("/") + "/metadata").rstrip("/")
        return f"{directory}/{version:05d}-{uuid.uuid4()}.metadata.json"


# table properties that name where files go, moved with the table's location
def load_table_result(location: str, raw: bytes, config: dict | None = None) -> bytes:
    """The LoadTableResult body, with the metadata file's JSON as is (no re-encoding)."""
    return b"".join((b'{"metadata-location":', json.dumps(location).encode(),
                     b',"metadata":', raw, b',"config":',
                     json.dumps(config or {}).encode(), b"}"))
