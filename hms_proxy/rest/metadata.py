"""Iceberg metadata files: read (cached by location: a metadata file never changes once
written), and written for a commit, with pyiceberg's models and its FileIO.

The FileIO is chosen by the location's scheme with the server's properties only (for lakeFS,
its S3 gateway): a table's own properties never pick an implementation class here, since they
come from any client."""
from __future__ import annotations

import gzip
import json
import re
import threading
import uuid

from kvmodel.store.cache import LRUCache

_VERSION = re.compile(r"(\d+)-[^/]*\.metadata\.json$")


class MetadataFiles:
    def __init__(self, io_properties: dict | None = None, cache_bytes: int = 128 << 20):
        self.io_properties = dict(io_properties or {})
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

    def raw(self, location: str) -> bytes:
        """The metadata JSON at ``location`` (uncompressed)."""
        hit = self._cache.get(("raw", location))
        if hit is not None:
            return hit
        with self.io(location).new_input(location).open() as stream:
            data = stream.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        self._cache.put(("raw", location), data, len(data) + 200)
        return data

    def load(self, location: str):
        """The pyiceberg TableMetadata at ``location``."""
        from pyiceberg.table.metadata import TableMetadataUtil

        hit = self._cache.get(("parsed", location))
        if hit is not None:
            return hit
        metadata = TableMetadataUtil.parse_raw(self.raw(location))
        self._cache.put(("parsed", location), metadata, 4 * len(self.raw(location)) + 200)
        return metadata

    def write(self, metadata, location: str) -> bytes:
        """Write ``metadata`` at ``location`` (a new file: never overwrites); returns its
        JSON, which is then cached as that location's."""
        data = metadata.model_dump_json().encode()
        with self.io(location).new_output(location).create(overwrite=False) as stream:
            stream.write(data)
        self._cache.put(("raw", location), data, len(data) + 200)
        self._cache.put(("parsed", location), metadata, 4 * len(data) + 200)
        return data

    @staticmethod
    def next_location(metadata, previous: str | None) -> str:
        """``<table>/metadata/NNNNN-<uuid>.metadata.json`` (``write.metadata.path`` when set),
        NNNNN one above the previous file's version (0 for the first)."""
        version = 0
        if previous:
            match = _VERSION.search(previous)
            version = int(match.group(1)) + 1 if match else 0
        directory = (metadata.properties.get("write.metadata.path")
                     or metadata.location.rstrip("/") + "/metadata").rstrip("/")
        return f"{directory}/{version:05d}-{uuid.uuid4()}.metadata.json"


def load_table_result(location: str, raw: bytes, config: dict | None = None) -> bytes:
    """The LoadTableResult body, with the metadata file's JSON as is (no re-encoding)."""
    return b"".join((b'{"metadata-location":', json.dumps(location).encode(),
                     b',"metadata":', raw, b',"config":',
                     json.dumps(config or {}).encode(), b"}"))
