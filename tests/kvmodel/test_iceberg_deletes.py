"""kvmodel.iceberg_deletes on deletion vectors (format 3): a Puffin file whose blobs name their
data files through a ref that moves is written again with its footer's ``referenced-data-file``
properties moved and its blobs at the same offsets, read back by pyiceberg's Puffin reader; a
file whose vectors name nothing that moves is left as it is."""
from __future__ import annotations

import json
import struct

import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.table.puffin import PuffinFile  # noqa: E402

from kvmodel.iceberg_deletes import PUFFIN_MAGIC, move_position_deletes  # noqa: E402

DEV = "s3a://repo/dev/warehouse/lake.db/t/data/"
MAIN = "s3a://repo/main/warehouse/lake.db/t/data/"


def _puffin(vectors: dict[str, bytes], compressed_footer: bool = False) -> bytes:
    """A Puffin file of ``deletion-vector-v1`` blobs (payloads as given), as Iceberg's writer
    lays it out: magic, blobs, footer (magic, JSON, its size, flags, magic)."""
    out = bytearray(PUFFIN_MAGIC)
    blobs = []
    for path, payload in vectors.items():
        blobs.append({"type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
                      "sequence-number": -1, "offset": len(out), "length": len(payload),
                      "properties": {"referenced-data-file": path, "cardinality": "1"}})
        out += payload
    footer = json.dumps({"blobs": blobs, "properties": {"created-by": "test"}}).encode()
    out += PUFFIN_MAGIC + footer + struct.pack("<iI", len(footer), int(compressed_footer))
    return bytes(out + PUFFIN_MAGIC)


def _entry(path: str, referenced: str) -> dict:
    return {"content": 1, "file_format": "PUFFIN", "file_path": path,
            "file_size_in_bytes": 0, "referenced_data_file": referenced,
            "content_offset": 4, "content_size_in_bytes": 3}


def _moving(files: dict):
    def move(path):
        return path.replace("/dev/", "/main/")
    return (move, files.__getitem__, files.__setitem__,
            lambda p: move(p).replace(".puffin", "-moved.puffin"))


def test_a_vector_file_naming_the_branch_is_written_again_with_its_paths_moved():
    files = {DEV + "dv.puffin": _puffin({DEV + "a.parquet": b"\x01\x02\x03",
                                         MAIN + "b.parquet": b"\x04\x05"})}
    written: dict = {}
    first = _entry(DEV + "dv.puffin", MAIN + "a.parquet")  # the manifest's path: moved already
    second = _entry(DEV + "dv.puffin", MAIN + "b.parquet")
    assert move_position_deletes(first, *_moving(files), written)
    assert move_position_deletes(second, *_moving(files), written)
    target = MAIN + "dv-moved.puffin"
    assert first["file_path"] == second["file_path"] == target  # one file for both vectors
    assert first["file_size_in_bytes"] == len(files[target])
    assert sorted(files) == [DEV + "dv.puffin", target]
    old, new = PuffinFile(files[DEV + "dv.puffin"]), PuffinFile(files[target])
    assert [b.properties["referenced-data-file"] for b in new.footer.blobs] == [
        MAIN + "a.parquet", MAIN + "b.parquet"]
    for before, after in zip(old.footer.blobs, new.footer.blobs):
        assert (after.offset, after.length) == (before.offset, before.length)
        assert new.get_blob_payload(after) == old.get_blob_payload(before)
    assert new.footer.properties == {"created-by": "test"}


def test_vectors_naming_nothing_that_moves_are_left_as_they_are():
    files = {MAIN + "dv.puffin": _puffin({MAIN + "a.parquet": b"\x01"})}
    entry = _entry(MAIN + "dv.puffin", MAIN + "a.parquet")
    assert not move_position_deletes(entry, *_moving(files))
    assert entry["file_path"] == MAIN + "dv.puffin" and list(files) == [MAIN + "dv.puffin"]


def test_a_compressed_footer_is_left_and_a_file_that_is_not_puffin_refused():
    files = {DEV + "z.puffin": _puffin({DEV + "a.parquet": b"\x01"}, compressed_footer=True),
             DEV + "bad.puffin": b"PFA1 not a footer at all"}
    assert not move_position_deletes(_entry(DEV + "z.puffin", MAIN + "a.parquet"),
                                     *_moving(files))
    with pytest.raises(ValueError, match="not a Puffin file"):
        move_position_deletes(_entry(DEV + "bad.puffin", MAIN + "a.parquet"), *_moving(files))
