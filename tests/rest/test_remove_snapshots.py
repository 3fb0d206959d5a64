"""``remove-snapshots`` as the REST catalog applies it (``hms_proxy.rest.catalog._updated``):
the same metadata as pyiceberg's ``update_table_metadata`` makes, in time linear in the ids
and the table's snapshots (pyiceberg's costs ids x snapshots: a 16 MiB body repeating ids
750,000 times was ~a minute of a worker thread per 1,000 snapshots of the table; ours
0.4 s). The door's own test is
tests/e2e/rest/test_rest_serve_limits.py."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.partitioning import PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.table import CommitTableRequest  # noqa: E402
from pyiceberg.table.metadata import new_table_metadata  # noqa: E402
from pyiceberg.table.sorting import SortOrder  # noqa: E402
from pyiceberg.table.update import update_table_metadata  # noqa: E402
from pyiceberg.types import LongType, NestedField  # noqa: E402

from hms_proxy.rest.catalog import _updated  # noqa: E402


def updates(*items: dict) -> list:
    return CommitTableRequest.model_validate(
        {"identifier": {"namespace": ["db"], "name": "t"}, "updates": list(items)}).updates


def table(snapshots: int):
    """A table with a chain of ``snapshots`` snapshots (ids 1..N, main at N), a tag on 3 and
    statistics of 3."""
    metadata = new_table_metadata(Schema(NestedField(1, "id", LongType())), PartitionSpec(),
                                  SortOrder(), "file:///tmp/t", {"format-version": "2"})
    added = []
    for i in range(1, snapshots + 1):
        added.append({"action": "add-snapshot", "snapshot": {
            "snapshot-id": i, "parent-snapshot-id": i - 1 or None, "sequence-number": i,
            "timestamp-ms": 1000 + i, "manifest-list": f"file:///tmp/t/{i}.avro",
            "summary": {"operation": "append"}, "schema-id": 0}})
        added.append({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                      "snapshot-id": i})
    added.append({"action": "set-snapshot-ref", "ref-name": "tag3", "type": "tag",
                  "snapshot-id": 3})
    added.append({"action": "set-statistics", "snapshot-id": 3, "statistics": {
        "snapshot-id": 3, "statistics-path": "file:///tmp/t/3.stats", "file-size-in-bytes": 1,
        "file-footer-size-in-bytes": 1, "blob-metadata": []}})
    return update_table_metadata(metadata, updates(*added), False, None)


def removing(ids: list[int]) -> list:
    return updates({"action": "remove-snapshots", "snapshot-ids": ids})


@pytest.mark.parametrize("ids", [[3, 3, 4], [20, 5], [1, 2, 1, 2], [20] * 1000, []],
                         ids=["tagged", "main", "repeated", "many", "none"])
def test_the_same_metadata_as_pyiceberg(ids):
    base = table(20)
    ours = _updated(base, removing(ids), False, None)
    theirs = update_table_metadata(base, removing(ids), False, None)
    assert ours.model_copy(update={"last_updated_ms": 0}) == \
        theirs.model_copy(update={"last_updated_ms": 0})
    assert {s.snapshot_id for s in ours.snapshots} == set(range(1, 21)) - set(ids)


def test_an_unknown_id_is_refused():
    with pytest.raises(ValueError, match="Snapshot with snapshot id 21 does not exist"):
        _updated(table(20), removing([1, 21]), False, None)


def test_cost_is_linear():
    """The ids of the oldest snapshots repeated 800,000 times: 10x the table's snapshots
    costs about the same (pyiceberg's: 10x), and 8x the ids about 8x."""
    def seconds(base, ids):
        request = removing(ids)
        return min(_timed(base, request) for _ in range(3))

    small, large = table(100), table(1_000)
    many = [5, 6] * 400_000
    t_small, t_large = seconds(small, many), seconds(large, many)
    t_fewer = seconds(large, many[:100_000])
    print(f"800,000 ids: {t_small:.3f} s on 100 snapshots, {t_large:.3f} s on 1,000; "
          f"100,000 ids: {t_fewer:.3f} s on 1,000")
    assert t_large < 3 * t_small + 0.05, (t_small, t_large)
    assert t_large < 16 * t_fewer + 0.05, (t_fewer, t_large)


def _timed(base, request) -> float:
    started = time.perf_counter()
    _updated(base, request, False, None)
    return time.perf_counter() - started
