"""Branches that both committed to one Iceberg table merge in Iceberg's terms: the source's
appends are replayed on the destination's current snapshot (kvmodel.iceberg_merge), so every
row of both sides is kept, on the embedded store and on a real lakeFS; what cannot be replayed
(an overwrite against the other side's changes) is a conflict naming the table, the snapshots
and their operations, and nothing is written."""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pyarrow as pa
import pytest

from tests.e2e.rest.conftest import start_lakefs_rest_server, start_rest_server
from tests.support.client import connect
from tests.support.iceberg import named_paths
from tests.support.lakefs import LakeFSApi
from tests.support.process import REPO_ROOT

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(table, **scan) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())


def lines_of(diff: str) -> list[str]:
    return [line.strip().removeprefix("iceberg: ") for line in diff.splitlines()
            if "iceberg:" in line]


def _cli(server, *args):
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store",
                           str(server.store)], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300, env=server.env)


def _appends_on_both_sides(server, name: str, branch: str) -> list[int]:
    """main: 1; ``branch`` from main: 2, 3 (two snapshots); main since: 10. Returns main's
    snapshot ids before the merge."""
    main = server.rest("main")
    main.create_namespace(name)
    main.create_table(f"{name}.t", schema=rows(0).schema).append(rows(1))
    if server.lakefs is None:
        server.cli("branch", "create", branch, "--from", "main")
    else:
        with server.lakefs.sdk() as client:
            LakeFSApi(client, server.repo).branch(branch, "main")
    side = server.rest(branch)
    side.load_table(f"{name}.t").append(rows(2))
    side.load_table(f"{name}.t").append(rows(3))
    main.load_table(f"{name}.t").append(rows(10))
    return [s.snapshot_id for s in main.load_table(f"{name}.t").snapshots()]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    server = start_rest_server(tmp_path_factory.mktemp("merge"), "--autocommit",
                               "--http-port", "0")
    yield server
    server.proc.stop()


def test_appends_on_two_branches_keep_every_row(local):
    before = _appends_on_both_sides(local, "shop", "b1")
    # the diff reads in Iceberg's terms: the branch's two appends
    diff = local.cli("diff", "main", "b1").stdout
    lines = [line.strip() for line in diff.splitlines() if "iceberg:" in line]
    assert len(lines) == 3, diff
    assert all(line.startswith("iceberg: append ") and line.endswith(": +1 files, +1 rows")
               for line in lines[:2]), diff
    assert lines[2] == "iceberg: 1 snapshot only on the left (committed there since, or " \
        "expired or rolled back on the right)"
    as_json = json.loads(local.cli("diff", "main", "b1", "--json").stdout)["iceberg"]["shop.t"]
    assert [s["operation"] for s in as_json["snapshots_added"]] == ["append", "append"]
    assert len(as_json["snapshots_removed"]) == 1  # main's own append, not on b1
    api = f"http://127.0.0.1:{local.proc.announced_port('http')}/api/v1"
    with urllib.request.urlopen(f"{api}/diff?left=main&right=b1", timeout=60) as answer:
        [group] = [g for g in json.load(answer)["groups"] if g["table"] == "t"]
    assert group["iceberg"]["lines"] == lines_of(diff)
    preview = json.loads(local.cli("merge", "b1", "main", "--dry-run", "--json").stdout)
    assert preview["conflicts"] == []
    [plan] = preview["iceberg"]
    assert plan["table"] == "shop.t" and plan["operations"] == ["append", "append"]
    merged = local.cli("merge", "b1", "main")
    assert "Iceberg" in merged.stdout, merged.stdout
    table = local.rest("main").load_table("shop.t")
    assert ids(table) == [1, 2, 3, 10]
    assert ids(local.hive().load_table("shop.t")) == [1, 2, 3, 10]
    for snapshot_id, want in zip(before, ([1], [1, 10])):  # main's history as it was
        assert ids(table, snapshot_id=snapshot_id) == want
    summary = table.current_snapshot().summary
    assert summary.operation.value == "append" and summary["total-records"] == "4"
    table.append(rows(11))  # and it takes commits
    assert ids(local.rest("main").load_table("shop.t")) == [1, 2, 3, 10, 11]
    assert ids(local.rest("b1").load_table("shop.t")) == [1, 2, 3]
    # merged back the other way, main's replays of b1's appends are not b1's rows again
    assert summary["source-snapshot-id"] in {str(s.snapshot_id) for s in
                                             local.rest("b1").load_table("shop.t").snapshots()}
    local.rest("b1").load_table("shop.t").append(rows(4))
    local.cli("merge", "main", "b1")
    assert ids(local.rest("b1").load_table("shop.t")) == [1, 2, 3, 4, 10, 11]


def test_a_new_column_on_one_side_and_appends_on_both_merge(local):
    from pyiceberg.types import StringType

    main = local.rest("main")
    main.create_namespace("cols")
    main.create_table("cols.t", schema=rows(0).schema).append(rows(1))
    local.cli("branch", "create", "c1", "--from", "main")
    side = local.rest("c1")
    with side.load_table("cols.t").update_schema() as update:
        update.add_column("note", StringType())
    side.load_table("cols.t").append(pa.table({"id": pa.array([2], pa.int64()),
                                                "note": ["two"]}))
    main.load_table("cols.t").append(rows(3))
    local.cli("merge", "c1", "main")
    table = main.load_table("cols.t")
    got = table.scan().to_arrow().sort_by("id").to_pylist()
    assert got == [{"id": 1, "note": None}, {"id": 2, "note": "two"},
                   {"id": 3, "note": None}]
    hive = local.hive().load_table("cols.t")
    assert [f.name for f in hive.schema().fields] == ["id", "note"]
    with connect(local.proc) as client:
        assert [c.name for c in client.get_table("cols", "t").sd.cols] == ["id", "note"]


def test_an_overwrite_against_an_append_is_a_conflict_naming_them(local):
    main = local.rest("main")
    main.create_namespace("del")
    main.create_table("del.t", schema=rows(0).schema).append(rows(1, 2))
    local.cli("branch", "create", "d1", "--from", "main")
    local.rest("d1").load_table("del.t").delete("id = 1")
    main.load_table("del.t").append(rows(3))
    head = main.load_table("del.t").metadata_location
    done = _cli(local, "merge", "d1", "main")
    assert done.returncode == 1
    assert "del.t" in done.stdout and "cannot be replayed" in done.stdout, done.stdout
    # pyiceberg's delete of some rows of a file writes an overwrite
    assert "ICEBERG_CONFLICT" in done.stdout and "overwrite" in done.stdout
    assert "append" in done.stdout
    assert main.load_table("del.t").metadata_location == head  # nothing written
    assert ids(main.load_table("del.t")) == [1, 2, 3]


def test_schema_changes_on_both_sides_merge_by_field_id(local):
    from pyiceberg.types import StringType

    main = local.rest("main")
    main.create_namespace("schemas")
    start = pa.table({"id": pa.array([1], pa.int64()), "v": ["one"]})
    main.create_table("schemas.t", schema=start.schema).append(start)
    local.cli("branch", "create", "s1", "--from", "main")
    side = local.rest("s1")
    with side.load_table("schemas.t").update_schema() as update:
        update.add_column("note", StringType())
    side.load_table("schemas.t").append(pa.table({"id": pa.array([2], pa.int64()),
                                                  "v": ["two"], "note": ["n"]}))
    with main.load_table("schemas.t").update_schema() as update:
        update.rename_column("v", "label")
    main.load_table("schemas.t").append(pa.table({"id": pa.array([3], pa.int64()),
                                                  "label": ["three"]}))
    before = main.load_table("schemas.t").current_snapshot().snapshot_id
    local.cli("merge", "s1", "main")
    table = main.load_table("schemas.t")
    assert [f.name for f in table.schema().fields] == ["id", "label", "note"]
    assert [f.field_id for f in table.schema().fields] == [1, 2, 3]
    got = table.scan().to_arrow().sort_by("id").to_pylist()
    assert got == [{"id": 1, "label": "one", "note": None},
                   {"id": 2, "label": "two", "note": "n"},
                   {"id": 3, "label": "three", "note": None}]
    assert ids(table, snapshot_id=before) == [1, 3]
    with connect(local.proc) as client:
        assert [c.name for c in client.get_table("schemas", "t").sd.cols] == \
            ["id", "label", "note"]
    # a column added on both sides takes one id twice: a conflict naming it
    local.cli("branch", "create", "s2", "--from", "main")
    with local.rest("s2").load_table("schemas.t").update_schema() as update:
        update.add_column("left", StringType())
    local.rest("s2").load_table("schemas.t").append(rows(4).append_column(
        "label", pa.array(["x"])))
    with main.load_table("schemas.t").update_schema() as update:
        update.add_column("right", StringType())
    main.load_table("schemas.t").append(rows(5).append_column("label", pa.array(["y"])))
    head = main.load_table("schemas.t").metadata_location
    done = _cli(local, "merge", "s2", "main")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "both sides added field id 4" in done.stdout, done.stdout
    assert "left (string)" in done.stdout and "right (string)" in done.stdout
    assert main.load_table("schemas.t").metadata_location == head


def _by_day(server, name: str, branch: str):
    """``name``.t partitioned by day: (1, a), (2, b), (3, c), (4, c), one file per day, on
    main; ``branch`` made from main."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    main = server.rest("main")
    main.create_namespace(name)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "day", StringType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000,
                                        transform=IdentityTransform(), name="day"))
    table = main.create_table(f"{name}.t", schema=schema, partition_spec=spec)
    table.append(day_rows((1, "a"), (2, "b"), (3, "c"), (4, "c")))
    server.cli("branch", "create", branch, "--from", "main")
    return main, server.rest(branch)


def day_rows(*pairs):
    return pa.table({"id": pa.array([p[0] for p in pairs], pa.int64()),
                     "day": pa.array([p[1] for p in pairs], pa.string())})


def test_deletes_and_overwrites_merge_with_appends_to_other_partitions(local):
    main, side = _by_day(local, "parts", "p1")
    side.load_table("parts.t").delete("day = 'a'")  # whole files: a delete
    side.load_table("parts.t").delete("id = 3")     # part of c's file: an overwrite
    ops = [s.summary.operation.value for s in side.load_table("parts.t").snapshots()]
    assert ops[-2:] == ["delete", "overwrite"], ops
    main.load_table("parts.t").append(day_rows((10, "b")))
    before = [s.snapshot_id for s in main.load_table("parts.t").snapshots()]
    preview = json.loads(local.cli("merge", "p1", "main", "--dry-run", "--json").stdout)
    assert preview["conflicts"] == [], preview
    assert preview["iceberg"][0]["operations"] == ["delete", "overwrite"]
    local.cli("merge", "p1", "main")
    table = main.load_table("parts.t")
    assert ids(table) == [2, 4, 10]
    assert ids(local.hive().load_table("parts.t")) == [2, 4, 10]
    for snapshot_id, want in zip(before, ([1, 2, 3, 4], [1, 2, 3, 4, 10])):
        assert ids(table, snapshot_id=snapshot_id) == want
    summary = table.current_snapshot().summary
    assert summary.operation.value == "overwrite" and summary["total-records"] == "3"
    table.append(day_rows((11, "a")))
    assert ids(main.load_table("parts.t")) == [2, 4, 10, 11]
    # the other way round: main's delete, the branch's append elsewhere
    main.load_table("parts.t").delete("day = 'b'")
    local.cli("branch", "create", "p2", "--from", "p1")
    local.rest("p2").load_table("parts.t").append(day_rows((20, "c")))
    local.cli("merge", "p2", "main")
    assert ids(main.load_table("parts.t")) == [4, 11, 20]


def test_a_file_both_sides_delete_or_a_partition_overwritten_and_appended_is_a_conflict(local):
    main, side = _by_day(local, "clash", "q1")
    side.load_table("clash.t").delete("day = 'a'")
    main.load_table("clash.t").delete("day = 'a'")
    head = main.load_table("clash.t").metadata_location
    done = _cli(local, "merge", "q1", "main")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ICEBERG_CONFLICT" in done.stdout and "clash.t" in done.stdout
    assert "both remove file" in done.stdout and ".parquet" in done.stdout, done.stdout
    assert main.load_table("clash.t").metadata_location == head  # nothing written
    # an overwrite of a partition the other side appended to, either way round
    local.cli("branch", "create", "q2", "--from", "main")
    local.rest("q2").load_table("clash.t").delete("id = 3")
    main.load_table("clash.t").append(day_rows((5, "c")))
    done = _cli(local, "merge", "q2", "main")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "overwrite" in done.stdout and "partition day=c" in done.stdout, done.stdout
    assert "append" in done.stdout
    local.cli("branch", "create", "q3", "--from", "main")
    local.rest("q3").load_table("clash.t").append(day_rows((6, "b")))
    main.load_table("clash.t").delete("id = 2")  # an overwrite of b on main
    done = _cli(local, "merge", "q3", "main")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "partition day=b" in done.stdout, done.stdout
    assert ids(main.load_table("clash.t")) == [3, 4, 5]


def test_appends_on_two_lakefs_branches_keep_every_row_after_the_branch_goes(tmp_path):
    server = start_lakefs_rest_server(tmp_path / "hms", "icemerge", "--autocommit")
    repo = server.repo
    try:
        _appends_on_both_sides(server, "lake", "b1")
        merged = server.cli("merge", "b1", "main")
        assert "Iceberg" in merged.stdout, merged.stdout
        with server.lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("b1")
        table = server.rest("main").load_table("lake.t")
        assert ids(table) == [1, 2, 3, 10]
        assert not any(f"/{repo}/b1/" in p for p in named_paths(table))
        # as the metadata file has them (a Thrift reader's view; REST answers them moved to
        # the ref of the request): the table's location too, or a Thrift writer would write
        # through the deleted branch
        stored = server.hive().load_table("lake.t")
        assert not any(f"/{repo}/b1/" in p for p in named_paths(stored)), stored.location()
        table.append(rows(11))
        stored = server.hive().load_table("lake.t")
        stored.append(rows(12))
        assert ids(server.rest("main").load_table("lake.t")) == [1, 2, 3, 10, 11, 12]
        # a delete and an overwrite on a branch, an append to another partition on main
        main, side = _by_day(server, "lparts", "p1")
        side.load_table("lparts.t").delete("day = 'a'")
        side.load_table("lparts.t").delete("id = 3")
        main.load_table("lparts.t").append(day_rows((10, "b")))
        before = [s.snapshot_id for s in main.load_table("lparts.t").snapshots()]
        server.cli("merge", "p1", "main")
        with server.lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("p1")
        table = server.rest("main").load_table("lparts.t")
        assert ids(table) == [2, 4, 10]
        assert not any(f"/{repo}/p1/" in p for p in named_paths(table))
        for snapshot_id, want in zip(before, ([1, 2, 3, 4], [1, 2, 3, 4, 10])):
            assert ids(table, snapshot_id=snapshot_id) == want
        assert not any(f"/{repo}/p1/" in p
                       for p in named_paths(server.hive().load_table("lparts.t")))
        table.append(day_rows((11, "a")))
        assert ids(server.hive().load_table("lparts.t")) == [2, 4, 10, 11]
    finally:
        server.proc.stop()


def test_with_the_lakefs_action_a_table_both_branches_committed_to_merges_by_hms_proxy(tmp_path):
    """lakeFS's own merge of an Iceberg table both branches committed to (the action
    installed, so each lakeFS commit folds the catalog: the table as each branch's own
    variant, which lakeFS merges without a conflict) is refused by the action's pre-merge hook,
    naming the table and ``hms-proxy merge``, and changes nothing; ``hms-proxy merge``
    replays the source's append in Iceberg's terms, through the action's hooks (which let its
    own temporary branches by); after the branch is deleted the destination reads every row
    through both doors and takes a Thrift writer's append. A later append on one side only
    merges with lakeFS's own merge."""
    from lakefs_sdk.exceptions import ApiException

    from tests.support.wait import wait_until

    server = start_lakefs_rest_server(tmp_path / "hms", "icehooks", "--http-port", "0",
                                      "--lakefs-hooks", "self")
    repo = server.repo
    try:
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            api.branch("prod", "main")  # made after the action: lakeFS runs its hooks there
            prod = server.rest("prod")
            wait_until(lambda: prod.list_namespaces() is not None, what="prod on the server")
            prod.create_namespace("lake")
            prod.create_table("lake.t", schema=rows(0).schema).append(rows(1))
            api.commit("prod", "the table")
            api.branch("dev", "prod")
            wait_until(lambda: server.rest("dev").table_exists("lake.t"), what="dev's table")
            server.rest("dev").load_table("lake.t").append(rows(2))
            prod.load_table("lake.t").append(rows(10))
            api.commit("dev", "append 2")
            api.commit("prod", "append 10")
            with pytest.raises(ApiException) as refused:
                api.merge("dev", "prod")
            body = str(refused.value.body)
            assert "pre-merge hook aborted" in body, body
            output = api.hook_output(body.split("run id '", 1)[1].split("'", 1)[0])
            assert "table lake.t: both branches committed to this Iceberg table" in output, \
                output
            assert "`hms-proxy merge dev prod`" in output, output
        assert ids(prod.load_table("lake.t")) == [1, 10]
        merged = server.cli("merge", "dev", "prod")
        assert "1 snapshot replayed (append" in merged.stdout, merged.stdout
        with server.lakefs.sdk() as client:
            LakeFSApi(client, repo).delete_branch("dev")
        assert ids(server.rest("prod").load_table("lake.t")) == [1, 2, 10]
        stored = server.hive().load_table("lake@prod.t")
        assert not any(f"/{repo}/dev/" in p for p in named_paths(stored))
        stored.append(rows(11))
        assert ids(server.rest("prod").load_table("lake.t")) == [1, 2, 10, 11]
        # one side only since: lakeFS's own merge, anchored by the post-merge hook
        with server.lakefs.sdk() as client:
            api = LakeFSApi(client, repo)
            api.commit("prod", "append 11")
            api.branch("dev2", "prod")
            wait_until(lambda: server.rest("dev2").table_exists("lake.t"), what="dev2's table")
            server.rest("dev2").load_table("lake.t").append(rows(20))
            api.commit("dev2", "append 20")
            api.merge("dev2", "prod")
            wait_until(lambda: ids(server.rest("prod").load_table("lake.t")) == [
                1, 2, 10, 11, 20], what="prod after lakeFS's merge")
            api.delete_branch("dev2")
        assert ids(server.rest("prod").load_table("lake.t")) == [1, 2, 10, 11, 20]
        assert not any(f"/{repo}/dev2/" in p for p in named_paths(
            server.hive().load_table("lake@prod.t")))
    finally:
        server.proc.stop()
