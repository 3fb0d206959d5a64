"""kvmodel.avro_files: Iceberg's manifest lists and manifests (written here by pyiceberg, of
format 1 and 2, with each codec) read as their schema says and written again; pyiceberg reads
the copy as the original, and a path changed in a record is the only difference."""
from __future__ import annotations

import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.io.pyarrow import PyArrowFileIO  # noqa: E402
from pyiceberg.manifest import (  # noqa: E402
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

from kvmodel.avro_files import (  # noqa: E402
    AvroError,
    iter_container,
    read_container,
    split_container,
    write_container,
)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "day", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))


def _manifest(tmp_path, version: int, codec: str) -> tuple[str, str]:
    io = PyArrowFileIO()
    manifest = str(tmp_path / f"m-{version}-{codec}.avro")
    with write_manifest(version, SPEC, SCHEMA, io.new_output(manifest), 7, codec) as writer:
        for i, day in enumerate(["2026-11-28", "2026-11-29", None]):
            data_file = DataFile.from_args(
                content=DataFileContent.DATA, file_path=f"s3a://repo/dev/t/data/{i}.parquet",
                file_format=FileFormat.PARQUET, partition=Record(day), record_count=10 + i,
                file_size_in_bytes=1000 + i, column_sizes={1: 80, 2: 90},
                value_counts={1: 10, 2: 10}, null_value_counts={1: 0, 2: i},
                nan_value_counts={}, lower_bounds={1: b"\x01" + bytes(7)},
                upper_bounds={1: b"\x09" + bytes(7)}, split_offsets=[4], sort_order_id=0)
            data_file.spec_id = 0
            writer.add_entry(ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=7, data_file=data_file))
    written = writer.to_manifest_file()
    manifest_list = str(tmp_path / f"snap-{version}-{codec}.avro")
    with write_manifest_list(version, io.new_output(manifest_list), 7, None, 1, codec) as lw:
        lw.add_manifests([written])
    return manifest_list, manifest


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
def test_written_again_reads_the_same(tmp_path, version, codec):
    io = PyArrowFileIO()
    manifest_list, manifest = _manifest(tmp_path, version, codec)
    for path in (manifest_list, manifest):
        data = open(path, "rb").read()
        meta, schema, records = read_container(data)
        assert meta["avro.codec"] == codec.encode() and schema["type"] == "record"
        again = write_container(meta, records)
        assert read_container(again)[::2] == (meta, records)
        open(path + ".copy", "wb").write(again)
    [original] = read_manifest_list(io.new_input(manifest_list))
    [copy] = read_manifest_list(io.new_input(manifest_list + ".copy"))
    assert copy == original
    # the manifest written again, pointed at by the copy of its manifest list
    meta, _, records = read_container(open(manifest_list, "rb").read())
    records[0]["manifest_path"] = manifest + ".copy"
    open(manifest_list + ".copy", "wb").write(write_container(meta, records))
    [copy] = read_manifest_list(io.new_input(manifest_list + ".copy"))

    def seen(m):
        return [(e.status, e.snapshot_id, e.sequence_number, e.data_file.file_path,
                 e.data_file.partition, e.data_file.record_count,
                 dict(e.data_file.null_value_counts), dict(e.data_file.lower_bounds),
                 e.data_file.split_offsets) for e in m.fetch_manifest_entry(io, False)]

    assert seen(copy) == seen(original)


def test_a_path_changed_is_the_only_change(tmp_path):
    _, manifest = _manifest(tmp_path, 2, "deflate")
    meta, _, records = read_container(open(manifest, "rb").read())
    before = [dict(r, data_file=dict(r["data_file"])) for r in records]
    records[1]["data_file"]["file_path"] = "s3a://repo/main/t/data/1.parquet"
    _, _, after = read_container(write_container(meta, records))
    assert after[1]["data_file"]["file_path"] == "s3a://repo/main/t/data/1.parquet"
    after[1]["data_file"]["file_path"] = before[1]["data_file"]["file_path"]
    assert after == before


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_blocks_carried_into_another_file_read_as_its_records(tmp_path, codec):
    """A manifest list carried on (what a replayed append writes): new records in front, the
    other file's blocks copied behind them under its sync marker; pyiceberg reads both."""
    io = PyArrowFileIO()
    manifest_list, _ = _manifest(tmp_path, 2, codec)
    data = open(manifest_list, "rb").read()
    meta, sync, blocks = split_container(data)
    [old] = read_container(data)[2]
    new = dict(old, manifest_path="s3a://repo/main/t/metadata/new-m0.avro", added_snapshot_id=8)
    meta = dict(meta, **{"snapshot-id": b"8", "parent-snapshot-id": b"7"})
    carried = write_container(meta, [new], sync=sync, tail=blocks)
    assert [r["manifest_path"] for r in read_container(carried)[2]] == [
        new["manifest_path"], old["manifest_path"]]
    open(tmp_path / "carried.avro", "wb").write(carried)
    got = read_manifest_list(io.new_input(str(tmp_path / "carried.avro")))
    assert [(m.manifest_path, m.added_snapshot_id) for m in got] == [
        (new["manifest_path"], 8), (old["manifest_path"], 7)]
    # carried twice: the blocks of a carried file carry on as well
    again = write_container(meta, [], *split_container(carried)[1:])
    assert read_container(again)[2] == read_container(carried)[2]
    with pytest.raises(AvroError):  # another file's blocks under a new sync marker
        write_container(meta, [new], tail=blocks)
    with pytest.raises(AvroError):
        read_container(write_container(meta, [new], sync=bytes(16), tail=blocks))


def test_records_are_decoded_as_they_are_asked_for(tmp_path):
    _, manifest = _manifest(tmp_path, 2, "deflate")
    data = open(manifest, "rb").read()
    records = iter_container(data)
    assert records.meta == read_container(data)[0]
    first = next(iter(records))
    assert first == read_container(data)[2][0]
    assert len(list(records)) == 2  # the rest, once


@pytest.mark.parametrize("data", [b"", b"Obj", b"PAR1xxxx", b"Obj\x01\x02"])
def test_not_a_container_is_refused(data):
    with pytest.raises(AvroError):
        read_container(data)
