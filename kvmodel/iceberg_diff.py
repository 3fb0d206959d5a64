"""What changed in an Iceberg table between two refs, in Iceberg's terms: the snapshots the
right side has that the left has not (their operation and the files, rows and bytes their
summaries count), those it no longer has, the columns added, dropped or retyped (by field id),
and the partition spec, sort order and property changes. A diff of two catalog values only
sees ``metadata_location`` move from one file to another; this reads the two files.

    describe(files, left_location, right_location, left_ref, right_ref) -> dict
    text(summary) -> ["append 4101...: +1 files, +3 rows", ...]
"""
from __future__ import annotations

import json

from kvmodel.iceberg_files import known_snapshots, snapshot_origins

METADATA_LOCATION = "parameters.metadata_location"


def _schema(metadata: dict) -> dict[int, tuple[str, str]]:
    current = metadata.get("current-schema-id")
    schemas = metadata.get("schemas") or ([metadata["schema"]] if "schema" in metadata else [])
    schema = next((s for s in schemas if s.get("schema-id") == current),
                  schemas[-1] if schemas else {"fields": []})
    return {f["id"]: (f["name"], json.dumps(f["type"], sort_keys=True))
            for f in schema.get("fields") or []}


def _spec(metadata: dict):
    current = metadata.get("default-spec-id")
    return next((s.get("fields") for s in metadata.get("partition-specs") or []
                 if s.get("spec-id") == current), metadata.get("partition-spec"))


def _sort(metadata: dict):
    current = metadata.get("default-sort-order-id")
    return next((s.get("fields") for s in metadata.get("sort-orders") or []
                 if s.get("order-id") == current), None)


def _count(summary: dict, name: str) -> int:
    try:
        return int(summary.get(name, 0) or 0)
    except (TypeError, ValueError):
        return 0


def compare(left: dict, right: dict) -> dict:
    """The difference of two metadata JSON objects of one table."""
    # a snapshot a merge replayed is the same change as its original (source-snapshot-id)
    had, has = known_snapshots(left), known_snapshots(right)
    added = []
    for snap in sorted((s for s in right.get("snapshots") or []
                        if not snapshot_origins(s) & had),
                       key=lambda s: (s.get("sequence-number", 0), s.get("timestamp-ms", 0))):
        summary = snap.get("summary") or {}
        added.append({
            "snapshot_id": snap["snapshot-id"], "operation": summary.get("operation"),
            "timestamp_ms": snap.get("timestamp-ms"),
            "added_data_files": _count(summary, "added-data-files"),
            "deleted_data_files": _count(summary, "deleted-data-files"),
            "added_delete_files": _count(summary, "added-delete-files"),
            "added_records": _count(summary, "added-records"),
            "deleted_records": _count(summary, "deleted-records"),
            "added_files_size": _count(summary, "added-files-size"),
            "removed_files_size": _count(summary, "removed-files-size")})
    removed = sorted(s["snapshot-id"] for s in left.get("snapshots") or []
                     if not snapshot_origins(s) & has)
    before, after = _schema(left), _schema(right)
    columns = {
        "added": [after[i][0] for i in sorted(set(after) - set(before))],
        "dropped": [before[i][0] for i in sorted(set(before) - set(after))],
        "renamed": [f"{before[i][0]} -> {after[i][0]}" for i in sorted(set(before) & set(after))
                    if before[i][0] != after[i][0]],
        "retyped": [after[i][0] for i in sorted(set(before) & set(after))
                    if before[i][1] != after[i][1]]}
    lp, rp = left.get("properties") or {}, right.get("properties") or {}
    properties = {k: [lp.get(k), rp.get(k)] for k in sorted(set(lp) | set(rp))
                  if lp.get(k) != rp.get(k)}
    return {"snapshots_added": added, "snapshots_removed": removed,
            "current_snapshot": [left.get("current-snapshot-id"),
                                 right.get("current-snapshot-id")],
            "columns": {k: v for k, v in columns.items() if v},
            "partition_spec_changed": _spec(left) != _spec(right),
            "sort_order_changed": _sort(left) != _sort(right),
            "properties": properties}


def describe(files, left_location: str, right_location: str, left_ref: str | None = None,
             right_ref: str | None = None) -> dict:
    """:func:`compare` of the metadata files at the two locations (read through the refs
    given, on a lakeFS store; ``files``: :class:`kvmodel.iceberg_merge.Files`)."""
    return compare(files.metadata(left_location, left_ref),
                   files.metadata(right_location, right_ref))


def text(summary: dict) -> list[str]:
    """One line per thing that changed, as a reviewer reads it."""
    lines = []
    for s in summary.get("snapshots_added") or []:
        parts = []
        if s["added_data_files"] or s["added_records"]:
            parts.append(f"+{s['added_data_files']} files, +{s['added_records']} rows")
        if s["deleted_data_files"] or s["deleted_records"]:
            parts.append(f"-{s['deleted_data_files']} files, -{s['deleted_records']} rows")
        if s["added_delete_files"]:
            parts.append(f"+{s['added_delete_files']} delete files")
        lines.append(f"{s['operation'] or 'snapshot'} {s['snapshot_id']}: "
                     + ("; ".join(parts) or "no files"))
    if summary.get("snapshots_removed"):
        n = len(summary["snapshots_removed"])
        lines.append(f"{n} snapshot{'' if n == 1 else 's'} only on the left (committed "
                     "there since, or expired or rolled back on the right)")
    for kind, names in (summary.get("columns") or {}).items():
        lines.append(f"columns {kind}: {', '.join(names)}")
    if summary.get("partition_spec_changed"):
        lines.append("partition spec changed")
    if summary.get("sort_order_changed"):
        lines.append("sort order changed")
    for name, (old, new) in (summary.get("properties") or {}).items():
        lines.append(f"property {name}: {old} -> {new}")
    return lines


def for_changes(store, changes, left_ref: str, right_ref: str) -> dict:
    """``{"db.table": summary}`` for the Iceberg tables among ``changes`` (entity changes from
    ``left_ref`` to ``right_ref``) whose metadata moved; a table whose files cannot be read
    gets ``{"error": ...}``. Empty without pyiceberg."""
    moved = {}
    for change in changes or ():
        if change.kind != "table" or change.change != "modified":
            continue
        for f in change.fields:
            if f.field == METADATA_LOCATION and f.before and f.after:
                moved[".".join(change.path)] = (f.before, f.after)
    from kvmodel.iceberg_files import files_for, has_pyiceberg

    if not moved or not has_pyiceberg():
        return {}

    files = files_for(store)
    refs = [_readable(store, r) if files.paths is not None else None
            for r in (left_ref, right_ref)]
    out = {}
    for name, (before, after) in sorted(moved.items()):
        try:
            out[name] = describe(files, before, after, *refs)
        except Exception as exc:  # noqa: BLE001 - one unreadable table does not stop a diff
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _readable(store, ref: str) -> str:
    """A ref lakeFS's gateway reads a path through: a branch by name, anything else by its
    commit id."""
    resolved = store.resolve(ref)
    return resolved.branch or resolved.commit


__all__ = ["compare", "describe", "for_changes", "text"]
