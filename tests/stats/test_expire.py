"""``hms-proxy stats expire``: sets no commit of any ref and no staged pointer refers to go."""
from __future__ import annotations

import argparse
import json
import os
import time

import pytest

from hms_proxy.cli.stats import register_expire
from kvmodel.store.local import LocalStore
from stats import expire, layout
from tests.kvmodel.test_versioning import DB, database, partition, table, write

TBL = "db/shop/table/orders"
FLAT = "db/shop/table/flat"


def make_set(location: str, part: str | None, age: float = 7200) -> str:
    """A set directory with its files, modified ``age`` seconds ago; returns its path."""
    path = layout.set_dir(location, part, layout.new_set_id())
    local = path[len("file:"):]
    os.makedirs(local)
    for name in layout.FILES:
        with open(os.path.join(local, name), "wb") as f:
            f.write(b"PAR1")
    old = time.time() - age
    for name in layout.FILES + ("",):
        os.utime(os.path.join(local, name) if name else local, (old, old))
    return path


def ptr(path: str) -> bytes:
    return layout.make_pointer(path, None, "fp", 1)


def local(path: str) -> str:
    return path[len("file:"):]


@pytest.fixture
def setup(tmp_path):
    """A history in which sets are referenced in every way, and some are not."""
    loc = f"file:{tmp_path}/wh/orders"
    flat_loc = f"file:{tmp_path}/wh/flat"
    store = LocalStore(tmp_path / "store")
    t = table(location=loc)
    flat = table(name="flat", location=flat_loc, partitionKeys=[])
    write(store, "main", {DB: database(), TBL: t, TBL + "/part/ds=1": partition("1"),
                          FLAT: flat}, "seed")
    sets = {name: make_set(loc, "ds=1") for name in
            ("old", "head", "tagged", "dev", "staged", "gone_branch", "never")}
    sets["flat"] = make_set(flat_loc, None)
    sets["flat_never"] = make_set(flat_loc, None)
    sets["young"] = make_set(loc, "ds=1", age=0)
    sets["nested"] = make_set(loc, "ds=2/hr=3")
    sets["reduced"] = make_set(loc, "_table_")
    sets["reduced_old"] = make_set(loc, "_table_")
    p1 = layout.pointer_key("shop", "orders", "ds=1")
    write(store, "main", {p1: ptr(sets["old"]),
                          layout.pointer_key("shop", "flat", None): ptr(sets["flat"])})
    write(store, "main", {p1: ptr(sets["tagged"])})
    store.create_tag("v1", "main")
    write(store, "main", {p1: ptr(sets["head"]),
                          layout.pointer_key("shop", "orders", "_table_"): ptr(sets["reduced"])})
    store.create_branch("dev", "main")
    write(store, "dev", {p1: ptr(sets["dev"])})
    store.create_branch("gone", "main")
    write(store, "gone", {p1: ptr(sets["gone_branch"])})
    store.delete_branch("gone")  # its commit is unreachable now
    with store.write("main") as txn:  # staged, not committed
        txn.put(layout.pointer_key("shop", "orders", "ds=9"), ptr(sets["staged"]))
    # what a compute job that died left behind
    os.makedirs(f"{tmp_path}/wh/orders/_stats/ds=1/.{layout.new_set_id()}.tmp")
    dead_tmp = next(p for p in os.listdir(f"{tmp_path}/wh/orders/_stats/ds=1")
                    if p.endswith(".tmp"))
    old = time.time() - 7200
    os.utime(f"{tmp_path}/wh/orders/_stats/ds=1/{dead_tmp}", (old, old))
    sets["dead_tmp"] = f"{loc}/_stats/ds=1/{dead_tmp}"
    yield store, sets, tmp_path
    store.close()


UNREFERENCED = {"gone_branch", "never", "flat_never", "nested", "dead_tmp", "reduced_old"}


def test_dry_run_lists_and_deletes_nothing(setup):
    store, sets, _ = setup
    lines = []
    result = expire.expire(store, dry_run=True, out=lines.append)
    assert sorted(result.deleted) == sorted(local(sets[n]) for n in UNREFERENCED)
    assert lines == [f"would delete {p}" for p in result.deleted]
    assert result.young == [local(sets["young"])]
    assert all(os.path.isdir(local(p)) for p in sets.values())


def test_expire_deletes_what_no_commit_or_staged_pointer_refers_to(setup):
    store, sets, tmp_path = setup
    lines = []
    result = expire.expire(store, out=lines.append)
    assert lines == [f"deleted {p}" for p in sorted(local(sets[n]) for n in UNREFERENCED)]
    for name, path in sets.items():
        assert os.path.isdir(local(path)) == (name not in UNREFERENCED), name
    assert sorted(result.kept) == sorted(local(sets[n]) for n in
                                         ("old", "head", "tagged", "dev", "staged", "flat",
                                          "reduced"))
    assert not os.path.exists(f"{tmp_path}/wh/orders/_stats/ds=2")  # emptied: removed
    assert expire.expire(store).deleted == []  # nothing left to do


def test_the_history_of_a_dropped_table_still_counts(setup):
    store, sets, _ = setup
    write(store, "main", {TBL: None, TBL + "/part/ds=1": None,
                          layout.pointer_key("shop", "orders", "ds=1"): None,
                          layout.pointer_key("shop", "orders", "ds=9"): None,
                          layout.pointer_key("shop", "orders", "_table_"): None})
    result = expire.expire(store, min_age=0)
    # the staged pointer went with the commit that dropped the table: its set is not in any
    # commit; the young one is old enough with --min-age 0
    assert sorted(result.deleted) == sorted(local(sets[n]) for n in
                                            UNREFERENCED | {"staged", "young"})
    assert all(os.path.isdir(local(sets[n])) for n in ("old", "head", "reduced"))


def test_command(setup, capsys):
    store, sets, tmp_path = setup
    store.close()
    parser = argparse.ArgumentParser()
    register_expire(parser.add_subparsers())
    args = parser.parse_args(["expire", "--store", str(tmp_path / "store"), "--dry-run"])
    assert args.func(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"{len(UNREFERENCED)} set(s) to delete, 7 referenced kept, " \
                      "1 newer than 3600s kept"
    assert len(out) == len(UNREFERENCED) + 1
    args = parser.parse_args(["expire", "--store", str(tmp_path / "store"), "--json",
                              "--min-age", "0"])
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["deleted"]) == len(UNREFERENCED) + 1 and not report["dry_run"]
    args = parser.parse_args(["expire", "--store", str(tmp_path / "nothing")])
    assert args.func(args) == 2


def test_hms_proxy_stats_expire(setup, capsys):
    from hms_proxy.cli import main

    store, sets, tmp_path = setup
    store.close()
    assert main(["stats", "expire", "--store", str(tmp_path / "store"), "--min-age", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"{len(UNREFERENCED) + 1} set(s) deleted, 7 referenced kept"
    assert sorted(out[:-1]) == sorted(f"deleted {local(sets[n])}"
                                      for n in UNREFERENCED | {"young"})
