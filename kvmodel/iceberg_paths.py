"""Iceberg paths in a lakeFS repository, moved to the ref being written.

An Iceberg table's metadata names absolute paths (its ``location`` first), and in a lakeFS
repository the ref is part of them: ``s3a://REPO/main/wh/t``. A table branched to ``dev`` must
write its new files under ``s3a://REPO/dev/...``, or a write on dev would land on main. The REST
catalog (:mod:`hms_proxy.rest`) answers and commits the metadata moved to the request's ref, and
``stats compute`` writes an Iceberg table's statistics file on the ref it computes; files a
snapshot already names keep their paths (they are read through the ref they were written on).
"""
from __future__ import annotations

PATH_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path",
                   "write.folder-storage.path")


def gateway_io_properties(config) -> dict[str, str]:
    """pyiceberg's FileIO properties for lakeFS's S3 gateway with the keys of ``config`` (a
    :class:`~kvmodel.store.lakefs.LakeFSConfig`): the server's own reads and writes."""
    return {"s3.endpoint": config.endpoint.removesuffix("/api/v1"), "s3.region": "us-east-1",
            "s3.access-key-id": config.access_key_id,
            "s3.secret-access-key": config.secret_access_key}


class RefPaths:
    """The paths of one lakeFS repository (``s3a://``, ``s3://``, ``lakefs://``) moved to a
    ref: a table's location and its path properties (:data:`PATH_PROPERTIES`)."""

    SCHEMES = ("s3a", "s3", "lakefs")

    def __init__(self, repository: str):
        self.heads = tuple(f"{scheme}://{repository}/" for scheme in self.SCHEMES)

    def move(self, location: str | None, ref: str) -> str | None:
        if not location or not ref or any(c in ref for c in "~^/"):
            return location
        for head in self.heads:
            if location.startswith(head):
                current, sep, tail = location[len(head):].partition("/")
                if current in (ref, "@"):  # "@": the catalog's own form, for any ref
                    return location
                return head + ref + sep + tail
        return location

    def key(self, location: str) -> str:
        """``location`` without its ref: one file named through two refs has one key."""
        for head in self.heads:
            if location.startswith(head):
                _, sep, tail = location[len(head):].partition("/")
                return head + "*" + sep + tail
        return location

    def metadata_dict(self, metadata: dict, ref: str) -> dict | None:
        """The metadata JSON object moved to ``ref``, or None when nothing moves."""
        location = metadata.get("location")
        moved = self.move(location, ref)
        props = metadata.get("properties") or {}
        moved_props = {k: self.move(v, ref) if k in PATH_PROPERTIES else v
                       for k, v in props.items()}
        if moved == location and moved_props == props:
            return None
        return {**metadata, "location": moved, "properties": moved_props}

    def metadata(self, metadata, ref: str):
        """A pyiceberg TableMetadata moved to ``ref`` (the same object when nothing moves)."""
        moved = self.move(metadata.location, ref)
        props = {k: self.move(v, ref) if k in PATH_PROPERTIES else v
                 for k, v in metadata.properties.items()}
        if moved == metadata.location and props == metadata.properties:
            return metadata
        return metadata.model_copy(update={"location": moved, "properties": props})


__all__ = ["PATH_PROPERTIES", "RefPaths", "gateway_io_properties"]
