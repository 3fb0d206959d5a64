"""An Iceberg table's NDV statistics file: what ``stats compute`` leaves for Iceberg readers.

While ``stats compute`` reads an Iceberg table's current snapshot (:mod:`stats.compute.formats`),
every top-level primitive column is also fed to a theta sketch (:mod:`stats.theta`). At the end
the sketches are written as one Puffin file, a blob of type ``apache-datasketches-theta-v1`` per
column with its field id, the snapshot's id and sequence number and the ``ndv`` property (the
sketch's estimate, as Iceberg's own writers round it), at
``<table location>/metadata/<snapshot id>-<uuid>.stats`` (Iceberg's and Trino's name), and
committed to the table as its statistics file for that snapshot (``set-statistics``) through the
metastore, by pyiceberg's HiveCatalog: under the table's HMS lock, a new metadata file, like any
Iceberg commit, so REST and Thrift clients see it alike. Trino's Iceberg connector reads the
``ndv`` of the current snapshot's file (``SHOW STATS``, its cost-based optimizer) and merges the
sketches into the file it writes after an INSERT; Spark's Iceberg source reports it to Spark's
optimizer (``spark.sql.cbo.enabled``); pyiceberg exposes it as ``metadata.statistics``.

On a lakeFS repository the table's location is moved to the ref being computed first (as the
REST catalog commits it), so that the Puffin file and the new metadata file land on that branch.
"""
from __future__ import annotations

import json
import struct
import uuid

from stats import theta

MAGIC = b"PFA1"
BLOB_TYPE = "apache-datasketches-theta-v1"
CREATED_BY = "hms-proxy stats compute"


def write_puffin(blobs: list[tuple[dict, bytes]],
                 properties: dict | None = None) -> tuple[bytes, int]:
    """A Puffin file of ``blobs`` ((metadata without offset/length, payload) each,
    uncompressed); returns (its bytes, the footer's size)."""
    out = bytearray(MAGIC)
    described = []
    for meta, payload in blobs:
        described.append({**meta, "offset": len(out), "length": len(payload)})
        out += payload
    footer = json.dumps({"blobs": described, "properties": properties or {}},
                        separators=(",", ":")).encode()
    tail = MAGIC + footer + struct.pack("<iI", len(footer), 0) + MAGIC
    return bytes(out + tail), len(tail)


class NdvCollector:
    """The theta sketches of one Iceberg table's top-level primitive columns, fed partition by
    partition, then written and committed (:meth:`commit`)."""

    def __init__(self, itable, ref: str, repository: str | None = None):
        self.table = itable
        self.ref = ref
        self.repository = repository
        schema = itable.schema()
        self.fields = {f.name: f.field_id for f in schema.fields if f.field_type.is_primitive}
        self.sketches = {name: theta.ThetaSketch() for name in self.fields}

    def add(self, rows) -> None:
        """Feed an Arrow table of the table's rows (a partition's, deletes applied)."""
        for name, sketch in self.sketches.items():
            if name in rows.column_names:
                sketch.update(rows.column(name))

    def commit(self) -> str | None:
        """Write the Puffin file and commit it as the current snapshot's statistics; returns
        its path (None: the table has no snapshot, or no column a sketch is kept of)."""
        from pyiceberg.table.statistics import BlobMetadata, StatisticsFile
        from pyiceberg.table.update import (
            AssertTableUUID,
            SetLocationUpdate,
            SetStatisticsUpdate,
        )

        snapshot = self.table.current_snapshot()
        if snapshot is None or not self.sketches:
            return None
        common = {"snapshot-id": snapshot.snapshot_id,
                  "sequence-number": snapshot.sequence_number or 0}
        blobs = []
        for name, sketch in self.sketches.items():
            ndv = str(int(sketch.estimate()))
            blobs.append(({"type": BLOB_TYPE, "fields": [self.fields[name]], **common,
                           "properties": {"ndv": ndv}}, sketch.serialize()))
        data, footer = write_puffin(blobs, {"created-by": CREATED_BY})
        location = self._location()
        path = f"{location.rstrip('/')}/metadata/{snapshot.snapshot_id}-{uuid.uuid4()}.stats"
        with self.table.io.new_output(path).create(overwrite=True) as out:
            out.write(data)
        described = [BlobMetadata(**{"type": m["type"], "snapshot-id": m["snapshot-id"],
                                     "sequence-number": m["sequence-number"],
                                     "fields": m["fields"], "properties": m["properties"]})
                     for m, _ in blobs]
        statistics = StatisticsFile(**{
            "snapshot-id": snapshot.snapshot_id, "statistics-path": path,
            "file-size-in-bytes": len(data), "file-footer-size-in-bytes": footer,
            "blob-metadata": described})
        updates = (SetStatisticsUpdate(statistics=statistics),)
        if location != self.table.metadata.location:  # lakeFS: the table's files on this ref
            updates = (SetLocationUpdate(location=location), *updates)
        self.table.catalog.commit_table(
            self.table, requirements=(AssertTableUUID(uuid=self.table.metadata.table_uuid),),
            updates=updates)
        return path

    def _location(self) -> str:
        location = self.table.metadata.location
        if self.repository is None:
            return location
        from kvmodel.iceberg_paths import RefPaths

        return RefPaths(self.repository).move(location, self.ref) or location


__all__ = ["BLOB_TYPE", "NdvCollector", "write_puffin"]
