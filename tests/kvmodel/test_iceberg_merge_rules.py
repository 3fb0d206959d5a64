"""The rules of the Iceberg 3-way merge (kvmodel.iceberg_merge) on metadata alone: which changes
of the two sides clash (Iceberg's own validation of a concurrent commit, by file and
partition), schemas merged by field id, and snapshots an earlier merge replayed counted once.
The end-to-end merges with pyiceberg and Spark are in tests/e2e/rest/test_rest_iceberg_merge.py
and test_rest_spark.py."""
from __future__ import annotations

import pytest

from kvmodel import iceberg_merge as im


def side(appended=(), changed=(), removed=(), removed_parts=(), op="delete", specs=(0,)):
    out = im._Side()
    snap = {"snapshot-id": 7, "summary": {"operation": op}}
    out.appended = {p: {"snapshot-id": 5, "summary": {"operation": "append"}} for p in appended}
    out.changed = {p: snap for p in changed}
    out.removed = {f: (snap, f) for f in removed}
    out.removed_parts = {p: snap for p in removed_parts}
    out.specs = set(specs)
    return out


A = (0, (("day", "a"),))
B = (0, (("day", "b"),))
WHOLE = (0, ())


def test_a_delete_and_an_append_to_other_partitions_do_not_clash():
    src = side(changed=[A], removed=["f1"], removed_parts=[A])
    dst = side(appended=[B])
    assert im._clashes(src, dst) == []
    assert im._clashes(dst, src) == []


def test_a_delete_and_an_append_to_one_partition_clash_either_way_round():
    src = side(changed=[A], removed=["f1"], removed_parts=[A])
    dst = side(appended=[A])
    [one] = im._clashes(src, dst)
    assert "the source's delete 7 cannot be replayed" in one and "partition day=a" in one
    assert "the destination's append 5" in one
    [other] = im._clashes(dst, src)
    assert "the source's append 5 cannot be replayed" in other and "adds files to it" in other


def test_one_file_removed_on_both_sides_is_named():
    src = side(changed=[A], removed=["s3://r/a.parquet"], removed_parts=[A])
    dst = side(changed=[A], removed=["s3://r/a.parquet"], removed_parts=[A])
    found = im._clashes(src, dst)
    assert any("both remove file s3://r/a.parquet" in r for r in found)


def test_an_unpartitioned_table_is_one_partition():
    found = im._clashes(side(changed=[WHOLE], removed=["f"], removed_parts=[WHOLE]),
                        side(appended=[WHOLE]))
    assert len(found) == 1 and "the whole table" in found[0]


def test_a_compaction_clashes_with_deletes_not_with_appends():
    replace = side(removed=["f1", "f2"], removed_parts=[A], op="replace")
    assert im._clashes(replace, side(appended=[A])) == []
    found = im._clashes(replace, side(changed=[A]))
    assert len(found) == 1 and "removes files from it" in found[0]


def test_changes_under_two_partition_specs_are_not_compared():
    found = im._clashes(side(changed=[A], specs=(0,)), side(appended=[(1, ())], specs=(1,)))
    assert any("different partition specs (0, 1)" in r for r in found)


def test_many_clashes_are_cut_short():
    parts = [(0, (("day", str(i)),)) for i in range(9)]
    found = im._clashes(side(changed=parts), side(appended=parts))
    assert len(found) == 6 and found[-1] == "and 4 more"


def field(fid, name, kind="string"):
    return {"id": fid, "name": name, "required": False, "type": kind}


def metadata(*fields, schema_id=0, last=None, snapshots=(), current=None, **extra):
    return {"format-version": 2, "table-uuid": "u", "current-schema-id": schema_id,
            "schemas": [{"type": "struct", "schema-id": schema_id, "fields": list(fields)}],
            "last-column-id": last or max([f["id"] for f in fields] or [0]),
            "snapshots": list(snapshots), "current-snapshot-id": current, **extra}


def test_schemas_merge_by_field_id():
    base = metadata(field(1, "id", "long"), field(2, "v"))
    src = metadata(field(1, "id", "long"), field(2, "v"), field(3, "note"), schema_id=1)
    dst = metadata(field(1, "id", "long"), field(2, "label"), schema_id=1)
    taken, clashes = im._merge_schemas(base, src, dst)
    assert clashes == []
    current = [s for s in taken["schemas"] if s["schema-id"] == taken["current-schema-id"]]
    assert [f["name"] for f in current[0]["fields"]] == ["id", "label", "note"]
    assert taken["current-schema-id"] == 2 and taken["last-column-id"] == 3


KEEP = field(1, "id", "long")


@pytest.mark.parametrize("src_fields, dst_fields, says", [
    ([KEEP, field(2, "v"), field(3, "left")], [KEEP, field(2, "v"), field(3, "right")],
     "both sides added field id 3: left (string) on the source, right (string)"),
    ([KEEP], [KEEP, field(2, "w")], "v (string) (id 2) was dropped on the source"),
    ([KEEP, field(2, "x")], [KEEP, field(2, "y")], "field id 2 was changed on both sides"),
])
def test_schema_changes_that_clash_are_named(src_fields, dst_fields, says):
    base = metadata(KEEP, field(2, "v"))
    src = metadata(*src_fields, schema_id=1)
    dst = metadata(*dst_fields, schema_id=1)
    _, clashes = im._merge_schemas(base, src, dst)
    assert any(says in c for c in clashes), clashes


def test_the_same_column_added_on_both_sides_is_one_column():
    base = metadata(field(1, "id", "long"))
    both = metadata(field(1, "id", "long"), field(2, "note"), schema_id=1)
    taken, clashes = im._merge_schemas(base, both, dict(both))
    assert clashes == []


def snap(sid, parent=None, op="append", origin=None, seq=1):
    summary = {"operation": op}
    if origin is not None:
        summary["source-snapshot-id"] = str(origin)
    return {"snapshot-id": sid, "parent-snapshot-id": parent, "sequence-number": seq,
            "timestamp-ms": seq, "summary": summary, "manifest-list": f"m{sid}.avro"}


def test_snapshots_an_earlier_merge_replayed_are_not_replayed_again():
    """b1's appends 2 and 3 were replayed on main as 12 and 13; merged back into b1 (which has
    appended 4 since), only main's own append 11 is new."""
    cols = [field(1, "id", "long")]
    base = metadata(*cols, snapshots=[snap(1), snap(2, 1, seq=2), snap(3, 2, seq=3)], current=3)
    main = metadata(*cols, snapshots=[snap(1), snap(10, 1, seq=2), snap(12, 10, origin=2, seq=3),
                                      snap(13, 12, origin=3, seq=4), snap(11, 13, seq=5)],
                    current=11)
    b1 = metadata(*cols, snapshots=base["snapshots"] + [snap(4, 3, seq=4)], current=4)
    plan = im.plan("shop.t", "b", "s", "d", base, main, b1)
    assert [s["snapshot-id"] for s in plan.replay] == [10, 11]
    # and the diff of the two sides does not count them as changes either
    from kvmodel.iceberg_diff import compare

    diff = compare(b1, main)
    assert [s["snapshot_id"] for s in diff["snapshots_added"]] == [10, 11]
    assert diff["snapshots_removed"] == [4]


def test_without_the_manifests_only_appends_merge():
    cols = [field(1, "id", "long")]
    base = metadata(*cols, snapshots=[snap(1)], current=1)
    src = metadata(*cols, snapshots=[snap(1), snap(2, 1, op="delete", seq=2)], current=2)
    dst = metadata(*cols, snapshots=[snap(1), snap(3, 1, seq=2)], current=3)
    with pytest.raises(im.IcebergConflict) as caught:
        im.plan("shop.t", "b", "s", "d", base, src, dst)
    assert "need the table's manifests" in str(caught.value)


_ENTRY = {"type": "record", "name": "manifest_entry", "fields": [
    {"name": "status", "type": "int"},
    {"name": "snapshot_id", "type": ["null", "long"]},
    {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
        {"name": "content", "type": "int"},
        {"name": "file_path", "type": "string"},
        {"name": "partition", "type": {"type": "record", "name": "r102", "fields": [
            {"name": "day", "type": ["null", "string"]}]}}]}}]}
_LIST = {"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string"},
    {"name": "partition_spec_id", "type": "int"},
    {"name": "content", "type": "int"},
    {"name": "added_snapshot_id", "type": "long"}]}


def _written(tmp_path, sid: int, op: str, manifests: list[tuple[int, list]]) -> dict:
    """A snapshot whose manifest list names one manifest per (content, [(status, content,
    day)]) written by it, real Avro files under tmp_path."""
    import json

    from kvmodel.avro_files import write_container

    listed = []
    for n, (content, entries) in enumerate(manifests):
        path = tmp_path / f"m{sid}-{n}.avro"
        path.write_bytes(write_container({"avro.schema": json.dumps(_ENTRY).encode()}, [
            {"status": status, "snapshot_id": sid,
             "data_file": {"content": kind, "file_path": f"/d/{sid}-{n}-{i}.parquet",
                           "partition": {"day": day}}}
            for i, (status, kind, day) in enumerate(entries)]))
        listed.append({"manifest_path": str(path), "partition_spec_id": 0, "content": content,
                       "added_snapshot_id": sid})
    mlist = tmp_path / f"snap-{sid}.avro"
    mlist.write_bytes(write_container({"avro.schema": json.dumps(_LIST).encode()}, listed))
    return {"snapshot-id": sid, "parent-snapshot-id": 1, "sequence-number": sid,
            "summary": {"operation": op}, "manifest-list": str(mlist)}


def test_equality_deletes_change_their_partition(tmp_path):
    """An equality delete file (content 2, as Flink's upserts write them) applies to every
    older data file of its partition: replayed over the other side's append to that partition
    it would delete rows the other side wrote, so, as Iceberg's serializable check of a
    concurrent row delta, it clashes there and only there."""
    from kvmodel.iceberg_files import Files

    upsert = _written(tmp_path, 7, "overwrite", [(0, [(1, 0, "a")]), (1, [(1, 2, "a")])])
    deletes_only = _written(tmp_path, 8, "delete", [(1, [(1, 2, "b")])])
    on_a = _written(tmp_path, 5, "append", [(0, [(1, 0, "a")])])
    on_c = _written(tmp_path, 6, "append", [(0, [(1, 0, "c")])])
    files = Files()
    src = im._Side.of(files, [upsert, deletes_only], {"snapshots": [upsert, deletes_only]})
    assert set(src.changed) == {(0, (("day", "a"),)), (0, (("day", "b"),))}
    assert src.appended == {} and src.removed == {}
    [found] = im._clashes(src, im._Side.of(files, [on_a], {"snapshots": [on_a]}))
    assert "the source's overwrite 7 cannot be replayed" in found and "day=a" in found
    assert im._clashes(src, im._Side.of(files, [on_c], {"snapshots": [on_c]})) == []
    # and the other way round: the append is not replayed under the equality delete
    [back] = im._clashes(im._Side.of(files, [on_a], {"snapshots": [on_a]}), src)
    assert "the source's append 5 cannot be replayed" in back
