"""A 3-way merge of one Iceberg table in Iceberg's terms: the source's new snapshots replayed on
the destination's current metadata, as Iceberg's own commit retry and ``cherrypick`` do.

Two branches that both committed to an Iceberg table since their merge base both moved its
``metadata_location``: as catalog values that is a conflict, and either side's pointer alone
drops the other side's snapshots, i.e. rows. Iceberg never loses a concurrent append: a writer
that lost the race applies its append again on the new current snapshot. This module does the
same across branches:

- the snapshots the source added since the base are replayed, in order, on the destination's
  current snapshot: each becomes a new snapshot (a new id, the next sequence number, the
  destination's current snapshot as parent) whose manifest list is the destination's current
  manifests plus new manifests holding the files that snapshot added (read from its own
  manifests, so a merged manifest of an append does not bring older files twice);
- what the snapshots did decides: appends always replay; anything else (overwrite, delete,
  replace) is a conflict naming the table, the snapshots and their operations;
- the rest of the metadata is merged key by key from the base: a key only one side changed takes
  that side's value, properties property by property; a key both changed differently (two schema
  changes, two partition specs) is a conflict naming it;
- the destination keeps its own snapshots, history and refs; the result is one new metadata file
  whose history holds both sides' rows, and time travel to every earlier destination snapshot
  still works.

:func:`plan` decides (and writes nothing): a dry run and the conflict check use it alone.
:func:`apply` writes the new manifests, manifest list(s) and metadata file on the destination.
On a lakeFS store the files the replayed manifests name are moved to the destination's path
(:mod:`kvmodel.iceberg_anchor`), where the merge put them.
"""
from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass, field

from kvmodel.avro_files import read_container, write_container
from kvmodel.iceberg_files import (
    METADATA_LOCATION,
    Files,
    files_for,
    is_iceberg,
    next_metadata_location,
)

# metadata keys that are history, merged by replaying snapshots, not key by key
_HISTORY = {"snapshots", "snapshot-log", "metadata-log", "current-snapshot-id", "refs",
            "last-sequence-number", "last-updated-ms", "statistics", "partition-statistics",
            "properties", "next-row-id"}
_TOTALS = (("total-data-files", "added-data-files", "deleted-data-files"),
           ("total-records", "added-records", "deleted-records"),
           ("total-files-size", "added-files-size", "removed-files-size"),
           ("total-delete-files", "added-delete-files", "removed-delete-files"),
           ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
           ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"))


class IcebergConflict(Exception):
    """The two sides' changes of one table cannot be merged in Iceberg's terms: ``reasons``,
    one line each."""

    def __init__(self, reasons: list[str]):
        self.reasons = list(reasons)
        super().__init__("; ".join(self.reasons))


@dataclass
class Plan:
    """What merging one table does: the source snapshots replayed (ids, in order) and the
    metadata keys and properties taken from the source."""

    table: str
    base: str
    source: str
    dest: str
    replay: list[dict] = field(default_factory=list)
    taken: dict = field(default_factory=dict)
    properties: dict = field(default_factory=dict)  # name -> value (None: removed)

    def summary(self) -> str:
        ops = ", ".join(f"{s.get('summary', {}).get('operation', '?')} {s['snapshot-id']}"
                        for s in self.replay)
        return f"{len(self.replay)} snapshot{'' if len(self.replay) == 1 else 's'} replayed ({ops})"

    def to_json(self) -> dict:
        return {"table": self.table, "replayed": [s["snapshot-id"] for s in self.replay],
                "operations": [s.get("summary", {}).get("operation") for s in self.replay],
                "taken": sorted(self.taken), "properties": sorted(self.properties)}


def _ops(snapshots) -> str:
    return ", ".join(f"{s.get('summary', {}).get('operation', '?')} {s['snapshot-id']}"
                     for s in snapshots)


def plan(table: str, base_loc: str, src_loc: str, dst_loc: str, base: dict, src: dict,
         dst: dict) -> Plan:
    """What merging ``src`` into ``dst`` from ``base`` (three metadata JSON objects) does;
    IcebergConflict when it cannot be merged."""
    if src.get("table-uuid") != dst.get("table-uuid") or base.get("table-uuid") != dst.get(
            "table-uuid"):
        raise IcebergConflict([f"table {table}: the two sides are different Iceberg tables "
                               "(dropped and created again)"])
    if int(dst.get("format-version", 1)) != int(src.get("format-version", 1)):
        raise IcebergConflict([f"table {table}: format version {src.get('format-version')} "
                               f"on the source, {dst.get('format-version')} on the destination"])
    had = {s["snapshot-id"] for s in base.get("snapshots") or []}
    src_new = sorted((s for s in src.get("snapshots") or [] if s["snapshot-id"] not in had),
                     key=lambda s: (s.get("sequence-number", 0), s.get("timestamp-ms", 0)))
    # only what the source's main branch holds: snapshots of its own Iceberg branches or
    # unreachable ones are not replayed
    chain = _ancestry(src)
    src_new = [s for s in src_new if s["snapshot-id"] in chain]
    reasons = []
    not_appends = [s for s in src_new if s.get("summary", {}).get("operation") != "append"]
    if not_appends:
        dst_new = [s for s in dst.get("snapshots") or [] if s["snapshot-id"] not in had]
        reasons.append(f"table {table}: the source's {_ops(not_appends)} cannot be replayed "
                       f"over the destination's {_ops(dst_new) or 'changes'} (only appends "
                       "are merged)")
    out = Plan(table, base_loc, src_loc, dst_loc, src_new)
    _take(base, src, dst, (set(base) | set(src) | set(dst)) - _HISTORY, out.taken, reasons,
          f"table {table}: both sides changed ")
    bp, sp, dp = (m.get("properties") or {} for m in (base, src, dst))
    _take(bp, sp, dp, set(bp) | set(sp) | set(dp), out.properties, reasons,
          f"table {table}: both sides changed property ")
    if reasons:
        raise IcebergConflict(reasons)
    return out


def _take(base: dict, src: dict, dst: dict, keys, taken: dict, reasons: list,
          clash: str) -> None:
    """3-way by key: what only the source changed goes in ``taken``; a key both changed
    differently is a reason (``clash`` + the key)."""
    for key in sorted(keys):
        b, s, d = base.get(key), src.get(key), dst.get(key)
        if s == b or s == d:
            continue
        if d == b:
            taken[key] = s
        else:
            reasons.append(clash + key)


def _ancestry(metadata: dict) -> set[int]:
    by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots") or []}
    current = metadata.get("current-snapshot-id")
    out = set()
    while current is not None and current != -1 and current in by_id and current not in out:
        out.add(current)
        current = by_id[current].get("parent-snapshot-id")
    return out


def _new_id(taken: set[int]) -> int:
    while True:
        candidate = random.getrandbits(63)
        if candidate and candidate not in taken:
            return candidate


def apply(files: Files, p: Plan, dst: dict, dest_ref: str | None = None) -> tuple[str, dict]:
    """Write the merged table: for each replayed snapshot, a manifest of the files it added and
    a manifest list; then one metadata file (next to ``p.dest``). Returns (its location, its
    JSON)."""
    merged = json.loads(json.dumps(dst))
    merged.update(p.taken)
    props = dict(merged.get("properties") or {})
    for name, value in p.properties.items():
        if value is None:
            props.pop(name, None)
        else:
            props[name] = value
    merged["properties"] = props
    location = files.move(merged["location"], dest_ref)
    metadata_dir = (props.get("write.metadata.path") or location.rstrip("/") + "/metadata")
    metadata_dir = files.move(metadata_dir.rstrip("/"), dest_ref)
    version = int(merged.get("format-version", 1))
    ids = {s["snapshot-id"] for s in merged.get("snapshots") or []}
    by_id = {s["snapshot-id"]: s for s in merged.get("snapshots") or []}
    current = merged.get("current-snapshot-id")
    current = None if current in (None, -1) else current
    seq = int(merged.get("last-sequence-number", 0))
    now = max(int(time.time() * 1000), int(merged.get("last-updated-ms", 0)) + 1)
    snapshots = list(merged.get("snapshots") or [])
    log = list(merged.get("snapshot-log") or [])
    written: dict[int, tuple] = {}  # the manifest lists written here, kept: not read back
    for source in p.replay:
        new_id = _new_id(ids)
        ids.add(new_id)
        if version >= 2:
            seq += 1
        parent = by_id.get(current) if current is not None else None
        carried = []
        list_meta = None
        if current in written:
            list_meta, carried = written[current]
        elif parent is not None and parent.get("manifest-list"):
            list_meta, _, carried = read_container(files.read(parent["manifest-list"],
                                                              dest_ref))
        added, template_meta = _added_manifests(files, source, new_id, seq, version,
                                                metadata_dir, dest_ref)
        if list_meta is None:
            list_meta = template_meta
        list_meta = dict(list_meta)
        list_meta["snapshot-id"] = str(new_id).encode()
        if current is not None:
            list_meta["parent-snapshot-id"] = str(current).encode()
        else:
            list_meta.pop("parent-snapshot-id", None)
        if version >= 2:
            list_meta["sequence-number"] = str(seq).encode()
        list_path = f"{metadata_dir}/snap-{new_id}-1-{uuid.uuid4()}.avro"
        files.write(list_path, write_container(list_meta, added + carried))
        written[new_id] = (list_meta, added + carried)
        summary = _summary(source.get("summary") or {}, (parent or {}).get("summary") or {})
        snapshot = {"snapshot-id": new_id, "timestamp-ms": now, "summary": summary,
                    "manifest-list": list_path}
        if current is not None:
            snapshot["parent-snapshot-id"] = current
        if version >= 2:
            snapshot["sequence-number"] = seq
        if "schema-id" in source:
            snapshot["schema-id"] = merged.get("current-schema-id", source["schema-id"])
        snapshots.append(snapshot)
        by_id[new_id] = snapshot
        log.append({"timestamp-ms": now, "snapshot-id": new_id})
        current = new_id
        now += 1
    merged["snapshots"] = snapshots
    merged["snapshot-log"] = log
    if current is not None:
        merged["current-snapshot-id"] = current
        refs = dict(merged.get("refs") or {})
        refs["main"] = {**refs.get("main", {}), "snapshot-id": current, "type": "branch"}
        merged["refs"] = refs
    if version >= 2:
        merged["last-sequence-number"] = seq
    merged["last-updated-ms"] = now
    history = list(merged.get("metadata-log") or [])
    history.append({"timestamp-ms": int(dst.get("last-updated-ms", 0)),
                    "metadata-file": files.move(p.dest, dest_ref)})
    keep = int(props.get("write.metadata.previous-versions-max", 100) or 100)
    merged["metadata-log"] = history[-keep:] if keep > 0 else []
    path = next_metadata_location(metadata_dir, p.dest)
    files.write(path, json.dumps(merged, separators=(",", ":")).encode())
    return path, merged


def _added_manifests(files: Files, source: dict, new_id: int, seq: int, version: int,
                     metadata_dir: str, dest_ref: str | None):
    """New manifests holding the files snapshot ``source`` added (as added by ``new_id``):
    (their manifest-list records, the source's manifest list's metadata)."""
    list_meta, _, records = read_container(files.read(source["manifest-list"], dest_ref))
    out = []
    sid = source["snapshot-id"]
    for record in records:
        if record.get("added_snapshot_id") != sid:  # written by an earlier snapshot
            continue
        meta, _, entries = read_container(files.read(record["manifest_path"], dest_ref))
        # added by that snapshot (a null snapshot id is inherited from the manifest)
        mine = [e for e in entries
                if e.get("status") == 1 and e.get("snapshot_id") in (sid, None)]
        if not mine:
            continue
        rows = 0
        for entry in mine:
            entry["snapshot_id"] = new_id
            if "sequence_number" in entry:
                entry["sequence_number"] = None  # inherited from the new manifest
            if "file_sequence_number" in entry:
                entry["file_sequence_number"] = None
            data_file = entry["data_file"]
            for name in ("file_path", "referenced_data_file"):
                if isinstance(data_file.get(name), str):
                    data_file[name] = files.move(data_file[name], dest_ref)
            rows += int(data_file.get("record_count") or 0)
        path = f"{metadata_dir}/{uuid.uuid4()}-m0.avro"
        data = write_container(meta, mine)
        files.write(path, data)
        new = dict(record)
        new.update({"manifest_path": path, "manifest_length": len(data),
                    "added_snapshot_id": new_id})
        if version >= 2:
            new.update({"sequence_number": seq, "min_sequence_number": seq})
        for name, value in (("added_files_count", len(mine)), ("existing_files_count", 0),
                            ("deleted_files_count", 0), ("added_rows_count", rows),
                            ("existing_rows_count", 0), ("deleted_rows_count", 0)):
            if name in new:
                new[name] = value
        out.append(new)
    return out, list_meta


def _summary(source: dict, parent: dict) -> dict:
    """The replayed snapshot's summary: the source's own counts, totals on the new parent."""
    out = {k: v for k, v in source.items() if not k.startswith("total-")}
    out["operation"] = source.get("operation", "append")
    for total, added, removed in _TOTALS:
        if total not in source and total not in parent:
            continue
        try:
            value = int(parent.get(total, 0)) + int(source.get(added, 0)) - int(
                source.get(removed, 0))
        except (TypeError, ValueError):
            continue
        out[total] = str(value)
    return out


# the fields of an Iceberg table's HMS entry its metadata decides: merged by the plan
_MANAGED = ("parameters.", "columns", "location")


def plan_tables(files: Files, name: str, base, src, dst) -> Plan | None:
    """The plan for HMS tables ``base``/``src``/``dst`` (decoded) when all three are Iceberg
    tables whose metadata both sides moved; None when they are not that; IcebergConflict."""
    if not all(is_iceberg(t) for t in (base, src, dst)):
        return None
    locs = [t.parameters[METADATA_LOCATION] for t in (base, src, dst)]
    if locs[1] == locs[0] or locs[2] == locs[0] or locs[1] == locs[2]:
        return None
    try:
        mds = [files.metadata(loc) for loc in locs]
    except Exception as exc:  # noqa: BLE001 - unreadable: the pointer conflict stands
        raise IcebergConflict([f"table {name}: its metadata could not be read to merge it in "
                               f"Iceberg's terms: {exc}"]) from None
    return plan(name, *locs, *mds)


def managed(field_name: str) -> bool:
    return field_name.startswith(_MANAGED)


def apply_to_table(files: Files, store, dest: str, db: str, name: str, p: Plan,
                   ttypes) -> str | None:
    """Write the merged metadata of ``db.name`` on branch ``dest`` and point the table at it
    (staged): its new metadata location, or None when the table moved meanwhile."""
    from kvmodel.catalog import CatalogReader, CatalogWriter, table_key

    dest_ref = dest if files.paths is not None else None
    if dest_ref is not None:
        store.latest(dest)
    with store.read(dest) as view:
        table = CatalogReader(view, ttypes).table(db, name)
    if table is None or (table.parameters or {}).get(METADATA_LOCATION) != p.dest:
        return None
    dst = files.metadata(p.dest, dest_ref)
    location, merged = apply(files, p, dst, dest_ref)
    with store.write(dest) as txn:
        writer = CatalogWriter(txn, ttypes)
        current = writer.table(db, name)
        if current is None or (current.parameters or {}).get(METADATA_LOCATION) != p.dest:
            return None
        params = dict(current.parameters)
        for prop, value in p.properties.items():
            if value is None:
                params.pop(prop, None)
            else:
                params[prop] = str(value)
        params["previous_metadata_location"] = files.move(p.dest, dest_ref)
        params[METADATA_LOCATION] = location
        current.parameters = params
        if {"schemas", "current-schema-id"} & set(p.taken) and current.sd is not None:
            from pyiceberg.table.metadata import TableMetadataUtil

            from kvmodel.iceberg_hive import hive_columns

            current.sd.cols = hive_columns(TableMetadataUtil.parse_obj(merged).schema())
        writer.put(table_key(db, name), current)
    return location


__all__ = ["Files", "IcebergConflict", "Plan", "apply", "apply_to_table", "files_for",
           "is_iceberg", "managed", "plan", "plan_tables"]
