"""Iceberg position delete files whose rows name their data files through another lakeFS ref,
written again with the paths moved.

A position delete file (a delete file of content 1) holds rows ``(file_path, pos)``: the data
file is named by the path its manifest gave it when the delete was written, and readers apply
the delete to a data file only where the two paths are equal (Iceberg's Java reader also skips
a delete file whose ``file_path`` bounds exclude the data file's path). When a table's manifests
are moved to another ref (:mod:`kvmodel.iceberg_anchor`, :mod:`kvmodel.iceberg_merge`), the data
files' paths change and a delete file naming them by their old paths would delete nothing: the
rows it deleted would come back. :func:`move_position_deletes` writes such a file again, its
paths moved, sorted by (path, position) as the spec requires, and updates the manifest entry
(path, size, the ``file_path`` bounds).

A deletion vector (format 3: a ``deletion-vector-v1`` blob of a Puffin file) is read by its
manifest entry (``referenced_data_file``, the blob's offset and length), which the callers
move; the Puffin file names the data file too, in the blob's ``referenced-data-file``
property, which the spec requires to be the data file's path: :func:`move_position_deletes`
writes such a file again with its footer's properties moved (the blobs, and so their
offsets, unchanged).
"""
from __future__ import annotations

import io
import json
import struct

FILE_PATH_ID = 2147483546  # the reserved field id of a position delete's file_path


def _bounds(data_file: dict) -> tuple[bytes | None, bytes | None]:
    def find(name):
        for item in data_file.get(name) or []:
            if isinstance(item, dict) and item.get("key") == FILE_PATH_ID:
                return item.get("value")
        return None
    return find("lower_bounds"), find("upper_bounds")


def _set_bound(data_file: dict, name: str, value: bytes) -> None:
    items = data_file.get(name)
    if items is None:
        return
    for item in items:
        if isinstance(item, dict) and item.get("key") == FILE_PATH_ID:
            item["value"] = value
            return
    items.append({"key": FILE_PATH_ID, "value": value})


def is_position_deletes(data_file: dict) -> bool:
    return data_file.get("content") == 1


def move_position_deletes(data_file: dict, move, read, write, new_path,
                          written: dict | None = None) -> bool:
    """When the position delete file ``data_file`` (a manifest entry's ``data_file``) names a
    data file whose path ``move`` changes: write it again (``read(path)``, ``write(path,
    bytes)``, at ``new_path(path)``) with the paths moved, and point ``data_file`` at it.
    Whether it was written again. Parquet files and Puffin files of deletion vectors are read;
    another format's file is left (``ValueError`` when it names a path that moves: its
    deletes would be lost). ``written``: the Puffin files written again so far (old path ->
    (new path, size)), shared by the entries of one file's vectors."""
    if not is_position_deletes(data_file):
        return False
    if str(data_file.get("file_format") or "").upper() == "PUFFIN":
        return _move_vectors(data_file, move, read, write, new_path,
                             written if written is not None else {})
    low, high = _bounds(data_file)
    if low is not None and low == high:  # one data file named: the bounds say which
        path = low.decode("utf-8", "replace")
        if move(path) == path:
            return False
    fmt = str(data_file.get("file_format") or "PARQUET").upper()
    if fmt != "PARQUET":
        if low is not None and low == high:
            raise ValueError(f"position delete file {data_file.get('file_path')} ({fmt}) names "
                             "a data file through another ref and only Parquet ones are "
                             "written again")
        return False
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    source = data_file["file_path"]
    table = pq.read_table(io.BytesIO(read(source)))
    paths = table.column("file_path").to_pylist()
    moved = [move(p) for p in paths]
    if moved == paths:
        return False
    index = table.schema.get_field_index("file_path")
    field = table.schema.field(index)
    table = table.set_column(index, field, pa.array(moved, field.type))
    table = table.take(pc.sort_indices(table, sort_keys=[("file_path", "ascending"),
                                                         ("pos", "ascending")]))
    out = io.BytesIO()
    pq.write_table(table, out)
    data = out.getvalue()
    target = new_path(source)
    write(target, data)
    data_file["file_path"] = target
    data_file["file_size_in_bytes"] = len(data)
    if "split_offsets" in data_file:
        data_file["split_offsets"] = None
    if moved:
        _set_bound(data_file, "lower_bounds", min(moved).encode())
        _set_bound(data_file, "upper_bounds", max(moved).encode())
    if len(set(moved)) == 1 and "referenced_data_file" in data_file:
        data_file["referenced_data_file"] = moved[0]
    return True


PUFFIN_MAGIC = b"PFA1"
_FOOTER_TAIL = 12  # the footer payload's size (int32), its flags (4 bytes), the magic


def _move_vectors(data_file: dict, move, read, write, new_path, written: dict) -> bool:
    source = data_file["file_path"]
    done = written.get(source)
    if done is None:
        data = read(source)
        moved = _moved_puffin(data, move)
        if moved is None:
            done = (source, None)
        else:
            target = new_path(source)
            write(target, moved)
            done = (target, len(moved))
        written[source] = done
    target, size = done
    if size is None:
        return False
    data_file["file_path"] = target
    data_file["file_size_in_bytes"] = size
    return True


def _moved_puffin(data: bytes, move) -> bytes | None:
    """The Puffin file ``data`` with its blobs' ``referenced-data-file`` moved, or None when
    none moves (or its footer is compressed: left as it is, its vectors read by offset)."""
    if len(data) < 2 * len(PUFFIN_MAGIC) + _FOOTER_TAIL or data[-4:] != PUFFIN_MAGIC:
        raise ValueError("not a Puffin file: no magic at its end")
    size, flags = struct.unpack("<iI", data[-_FOOTER_TAIL:-4])
    start = len(data) - _FOOTER_TAIL - size - len(PUFFIN_MAGIC)
    if size < 0 or start < len(PUFFIN_MAGIC) or data[start:start + 4] != PUFFIN_MAGIC:
        raise ValueError("not a Puffin file: its footer is not where its size says")
    if flags & 1:  # an LZ4-compressed footer
        return None
    footer = json.loads(data[start + 4:start + 4 + size])
    changed = False
    for blob in footer.get("blobs") or []:
        props = blob.get("properties") or {}
        path = props.get("referenced-data-file")
        if isinstance(path, str) and move(path) != path:
            props["referenced-data-file"] = move(path)
            changed = True
    if not changed:
        return None
    payload = json.dumps(footer, separators=(",", ":")).encode()
    return (data[:start] + PUFFIN_MAGIC + payload + struct.pack("<iI", len(payload), 0)
            + PUFFIN_MAGIC)


__all__ = ["FILE_PATH_ID", "PUFFIN_MAGIC", "is_position_deletes", "move_position_deletes"]
