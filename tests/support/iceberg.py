"""What the Iceberg tests share."""
from __future__ import annotations


def named_paths(table) -> list[str]:
    """Every path a pyiceberg table names: its metadata file and location, each snapshot's
    manifest list, each manifest and each data or delete file of them."""
    io = table.io
    out = [table.metadata_location, table.metadata.location]
    for snapshot in table.snapshots():
        out.append(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            out.append(manifest.manifest_path)
            out += [e.data_file.file_path
                    for e in manifest.fetch_manifest_entry(io, discard_deleted=False)]
    return out
