"""The refs CLI (`hms-proxy branch|tag|commit|log|show|diff|merge|revert|reset`), driven
in-process through `hms_proxy.cli.main` over a temporary store with real catalog entries, and
once as a subprocess. The formatting of the versioning engine's reports is also tested against
small fake report objects (named Fake*), independent of the engine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from hms_proxy.cli import main
from hms_proxy.cli import refs as refs_cli
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import catalog, codec
from kvmodel.store import open_store


# --- a store with real catalog entries ---------------------------------------------------------
def _sd(location: str, cols=("id", "amount")) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema(name=c, type="int", comment=None) for c in cols],
        location=location, inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        compressed=False, numBuckets=-1,
        serdeInfo=ttypes.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
            parameters={}),
        bucketCols=[], sortCols=[], parameters={})


def database(name: str, owner: str = "alice") -> bytes:
    return codec.encode(ttypes.Database(name=name, description="", locationUri=f"file:/w/{name}",
                                        parameters={}, ownerName=owner, ownerType=1))


def table(db: str, name: str, owner: str = "alice", cols=("id", "amount")) -> bytes:
    return codec.encode(ttypes.Table(
        tableName=name, dbName=db, owner=owner, createTime=1, lastAccessTime=0, retention=0,
        sd=_sd(f"file:/w/{db}/{name}", cols),
        partitionKeys=[ttypes.FieldSchema(name="ds", type="string", comment=None)],
        parameters={"owner": owner}, tableType="MANAGED_TABLE"))


def partition(db: str, tbl: str, ds: str, rows: int = 0) -> bytes:
    return codec.encode(ttypes.Partition(
        values=[ds], dbName=db, tableName=tbl, createTime=1, lastAccessTime=0,
        sd=_sd(f"file:/w/{db}/{tbl}/ds={ds}"), parameters={"numRows": str(rows)}))


def put(store, branch: str, items: dict[str, bytes | None]) -> None:
    with store.write(branch) as txn:
        for key, value in items.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value)


@pytest.fixture
def store_path(tmp_path) -> str:
    """A store whose main has two commits: shop (+orders, 3 partitions), then sales.events."""
    path = str(tmp_path / "metastore")
    store = open_store(path)
    try:
        put(store, "main", {catalog.db_key("shop"): database("shop"),
                            catalog.table_key("shop", "orders"): table("shop", "orders"),
                            **{catalog.part_key("shop", "orders", f"ds={d}"):
                               partition("shop", "orders", d) for d in ("1", "2", "3")}})
        store.commit("main", "create shop.orders", author="alice")
        put(store, "main", {catalog.db_key("sales"): database("sales"),
                            catalog.table_key("sales", "events"): table("sales", "events")})
        store.commit("main", "create sales.events", author="bob")
    finally:
        store.close()
    return path


@pytest.fixture
def cli(store_path, capsys):
    """run(*argv) -> (exit status, stdout, stderr), with --store appended."""

    def run(*argv: str):
        code = main([*argv, "--store", store_path])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def cli_json(cli, *argv):
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


# --- branches ----------------------------------------------------------------------------------
def test_branch_create_list_delete(cli):
    code, out, err = cli("branch", "create", "dev")
    assert code == 0 and err == ""
    assert out.startswith("created branch dev at ") and "(from main)" in out

    code, out, _ = cli("branch", "list")
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["dev", "main"]
    assert lines[0].split()[1] == lines[1].split()[1]  # same head, short id
    assert len(lines[0].split()[1]) == 12

    listed = cli_json(cli, "branch", "list")
    assert [b["name"] for b in listed] == ["dev", "main"]
    assert listed[0]["head"] == listed[1]["head"] and len(listed[0]["head"]) == 64
    assert listed[0]["protected"] is False

    code, out, _ = cli("branch", "delete", "dev")
    assert code == 0 and out.startswith("deleted branch dev (was ")
    assert [b["name"] for b in cli_json(cli, "branch", "list")] == ["main"]


def test_branch_create_from_a_ref(cli):
    log = cli_json(cli, "log", "main")
    created = cli_json(cli, "branch", "create", "old", "--from", "main~1")
    assert created == {"name": "old", "head": log[1]["id"], "protected": False}
    assert cli_json(cli, "log", "old")[0]["id"] == log[1]["id"]


def test_branch_protect(cli):
    code, out, _ = cli("branch", "protect", "main")
    assert code == 0 and out.strip() == "branch main is now protected"
    code, out, _ = cli("branch", "list")
    assert out.split() == ["main", out.split()[1], "protected"]

    code, out, err = cli("branch", "delete", "main")
    assert code == 2 and out == ""
    assert err == "hms-proxy: error: branch 'main' is protected\n"

    code, out, _ = cli("branch", "protect", "main", "--off")
    assert code == 0 and out.strip() == "branch main is no longer protected"
    assert cli_json(cli, "branch", "list")[0]["protected"] is False


def test_branch_errors(cli):
    code, _, err = cli("branch", "create", "main")
    assert code == 2 and err.startswith("hms-proxy: error: ") and "already exists" in err
    code, _, err = cli("branch", "create", "x", "--from", "nosuchref")
    assert code == 2 and "nosuchref" in err and err.count("\n") == 1
    code, _, err = cli("branch", "delete", "nosuch")
    assert code == 2 and err == "hms-proxy: error: no branch 'nosuch'\n"
    code, _, err = cli("branch", "protect", "nosuch")
    assert code == 2 and "nosuch" in err
    code, _, err = cli("branch", "create", "bad name!")
    assert code == 2 and "invalid ref name" in err


# --- tags --------------------------------------------------------------------------------------
def test_tags(cli):
    head = cli_json(cli, "log", "main")[0]["id"]
    code, out, _ = cli("tag", "create", "v1", "main")
    assert code == 0 and out.strip() == f"created tag v1 at {head[:12]}"
    assert cli_json(cli, "tag", "create", "v0", "main~1")["name"] == "v0"

    code, out, _ = cli("tag", "list")
    assert [line.split() for line in out.splitlines()] == [
        ["v0", cli_json(cli, "log", "main")[1]["id"][:12]], ["v1", head[:12]]]
    assert {t["name"]: t["commit"] for t in cli_json(cli, "tag", "list")}["v1"] == head
    assert cli_json(cli, "log", "v1")[0]["id"] == head  # a tag is a ref like any other

    code, _, err = cli("tag", "create", "v1", "main")
    assert code == 2 and "already exists" in err
    code, out, _ = cli("tag", "delete", "v1")
    assert code == 0 and out.strip() == f"deleted tag v1 (was {head[:12]})"
    code, _, err = cli("tag", "delete", "v1")
    assert code == 2 and err == "hms-proxy: error: no tag 'v1'\n"
    code, _, err = cli("commit", "v0", "-m", "onto a tag")  # tags are read-only
    assert code == 2 and err.startswith("hms-proxy: error: ")


# --- commit, log, reset ------------------------------------------------------------------------
def test_commit_and_log(cli, store_path, monkeypatch):
    store = open_store(store_path)
    put(store, "main", {catalog.table_key("shop", "orders"): table("shop", "orders", "carol"),
                        catalog.part_key("shop", "orders", "ds=4"): partition("shop", "orders",
                                                                              "4")})
    store.close()
    monkeypatch.setenv("USER", "dana")
    code, out, err = cli("commit", "main", "-m", "orders: new owner\n\nand ds=4")
    assert code == 0 and err == ""
    assert out.startswith("[main ") and out.rstrip().endswith(
        "] orders: new owner (2 keys changed)")

    log = cli_json(cli, "log", "main")
    assert [c["message"].splitlines()[0] for c in log] == [
        "orders: new owner", "create sales.events", "create shop.orders", "Repository created"]
    assert log[0]["author"] == "dana" and log[0]["parents"] == [log[1]["id"]]
    assert out.startswith(f"[main {log[0]['id'][:12]}]")

    code, out, _ = cli("log", "main", "--limit", "2")
    lines = out.splitlines()
    assert len(lines) == 2
    sid, date, clock, author, *msg = lines[0].split()
    assert sid == log[0]["id"][:12] and author == "dana" and " ".join(msg) == "orders: new owner"
    assert len(date) == 10 and len(clock) == 8
    assert lines[1].split()[3] == "bob"


def test_commit_author_and_metadata(cli, store_path):
    store = open_store(store_path)
    put(store, "main", {catalog.db_key("x"): database("x")})
    store.close()
    made = cli_json(cli, "commit", "main", "-m", "x", "--author", "eve", "--meta", "job=etl-7")
    assert made["changed_keys"] == 1 and made["branch"] == "main"
    assert made["commit"]["author"] == "eve" and made["commit"]["metadata"] == {"job": "etl-7"}


def test_nothing_to_commit(cli):
    code, out, err = cli("commit", "main", "-m", "empty")
    assert code == 1 and out.strip() == "nothing to commit on branch main" and err == ""
    code, out, _ = cli("commit", "main", "-m", "empty", "--json")
    assert code == 1 and json.loads(out) == {"branch": "main", "commit": None, "changed_keys": 0}


def test_log_path(cli, store_path):
    store = open_store(store_path)
    put(store, "main", {catalog.part_key("shop", "orders", "ds=9"): partition("shop", "orders",
                                                                              "9")})
    store.commit("main", "orders ds=9")
    # a table whose name extends "orders": must not count as shop.orders
    put(store, "main", {catalog.table_key("shop", "orders2"): table("shop", "orders2")})
    store.commit("main", "create shop.orders2")
    store.close()

    def messages(*argv):
        return [c["message"] for c in cli_json(cli, "log", "main", *argv)]

    assert messages("--path", "shop.orders") == ["orders ds=9", "create shop.orders"]
    assert messages("--path", "SHOP.Orders", "--limit", "1") == ["orders ds=9"]
    assert messages("--path", "sales") == ["create sales.events"]
    assert messages("--path", "shop") == ["create shop.orders2", "orders ds=9",
                                          "create shop.orders"]
    assert messages("--path", "nosuch.table") == []
    code, _, err = cli("log", "main", "--path", "a.b.c")
    assert code == 2 and "--path takes DB, DB.TABLE or @CATALOG#DB[.TABLE]" in err


def test_log_unknown_ref(cli):
    code, out, err = cli("log", "nosuch")
    assert code == 2 and out == ""
    assert err == "hms-proxy: error: no branch, tag or commit 'nosuch'\n"
    code, _, err = cli("log", "main~10")
    assert code == 2 and "history is not that deep" in err


def test_reset(cli, store_path):
    store = open_store(store_path)
    put(store, "main", {catalog.db_key("tmp"): database("tmp"),
                        catalog.table_key("shop", "orders"): None})
    store.close()
    code, out, _ = cli("reset", "main")
    assert code == 0 and out.strip() == "dropped 2 uncommitted keys on branch main"
    code, out, _ = cli("reset", "main")
    assert code == 0 and out.strip() == "branch main had no uncommitted changes"
    assert cli_json(cli, "reset", "main") == {"branch": "main", "dropped_keys": 0}
    store = open_store(store_path)
    assert store.get("main", catalog.table_key("shop", "orders")) is not None
    store.close()

    cli("branch", "protect", "main")
    code, _, err = cli("reset", "main")
    assert code == 2 and "protected" in err
    code, _, err = cli("reset", "nosuch")
    assert code == 2 and "no branch 'nosuch'" in err


def test_missing_store_is_an_error_not_a_new_store(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["branch", "list", "--store", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hms-proxy: error: no store at ") and err.count("\n") == 1
    assert not missing.exists()


def test_store_from_environment(store_path, capsys, monkeypatch):
    monkeypatch.setenv("HMS_STORE", store_path)
    assert main(["branch", "list"]) == 0
    assert capsys.readouterr().out.startswith("main ")


def test_usage_errors_exit_2(cli):
    with pytest.raises(SystemExit) as exc:
        cli("merge", "a", "b", "--strategy", "nope")
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli("commit", "main")  # -m is required
    assert exc.value.code == 2


def test_subprocess(store_path):
    exe = Path(sys.executable).with_name("hms-proxy")
    assert exe.exists(), exe
    env = {**os.environ, "HMS_STORE": store_path}

    def run(*argv):
        return subprocess.run([str(exe), *argv], capture_output=True, text=True, env=env,
                              timeout=60)

    done = run("branch", "create", "feature", "--from", "main~1")
    assert done.returncode == 0, done.stderr
    done = run("branch", "list", "--json")
    assert done.returncode == 0
    assert [b["name"] for b in json.loads(done.stdout)] == ["feature", "main"]
    done = run("log", "feature")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2
    done = run("branch", "delete", "nosuch")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "hms-proxy: error: no branch 'nosuch'\n"
    done = run("commit", "feature", "-m", "nothing")
    assert done.returncode == 1 and "nothing to commit" in done.stdout


# --- formatting of the engine's reports, against fakes -----------------------------------------
@dataclass(frozen=True)
class FakeFieldChange:
    field: str
    before: object
    after: object


@dataclass(frozen=True)
class FakeEntityChange:
    kind: str
    path: tuple
    change: str
    fields: tuple = ()
    key: str = ""


@dataclass
class FakeDiffReport:
    changes: list = field(default_factory=list)


@dataclass(frozen=True)
class FakeConflict:
    type: str
    kind: str
    path: tuple
    fields: tuple
    source: object
    dest: object
    key: str = ""


def fake_report() -> FakeDiffReport:
    changes = [
        FakeEntityChange("table", ("shop", "orders"), "modified", (
            FakeFieldChange("columns.added", None, ["discount"]),
            FakeFieldChange("parameters.owner", "alice", "bob"))),
        FakeEntityChange("database", ("sales",), "added"),
        FakeEntityChange("table", ("sales", "events"), "added"),
        FakeEntityChange("function", ("shop", "f1"), "removed"),
        FakeEntityChange("role", ("admin",), "added"),
    ]
    changes += [FakeEntityChange("partition", ("shop", "orders", f"ds={i}"), "added")
                for i in range(120)]
    changes += [FakeEntityChange("partition", ("shop", "orders", f"ds=x{i}"), "removed")
                for i in range(3)]
    changes += [FakeEntityChange("partition", ("shop", "orders", f"ds=y{i}"), "modified",
                                 (FakeFieldChange("parameters.numRows", "1", "2"),))
                for i in range(5)]
    changes += [FakeEntityChange("partition", ("shop", "customers", "ds=1"), "added")]
    changes += [FakeEntityChange("partition_column_stats", ("shop", "customers", "ds=1", c),
                                 "added") for c in ("id", "name")]
    return FakeDiffReport(changes)


def test_format_diff_rolls_up_partitions():
    assert refs_cli.format_diff(fake_report()) == [
        "+ sales",
        "  + sales.events",
        "shop",
        "  - function shop.f1",
        "  ~ shop.customers",
        "    partitions: +1",
        "    partition column stats: +2",
        "  ~ shop.orders  columns.added: [discount]  parameters.owner: alice -> bob",
        "    partitions: +120 -3 ~5",
        "+ role admin",
    ]


def test_format_diff_lists_partitions_in_full():
    lines = refs_cli.format_diff(fake_report(), partitions=True)
    i = lines.index("  ~ shop.orders  columns.added: [discount]  parameters.owner: alice -> bob")
    assert lines[i + 1] == "    + ds=0"
    assert "    - ds=x0" in lines
    assert "    ~ ds=y4  parameters.numRows: 1 -> 2" in lines
    assert "    + column stats ds=1 name" in lines
    assert sum(1 for line in lines if line.startswith("    ")) == 131
    assert refs_cli.format_diff(FakeDiffReport()) == []


def test_format_values():
    f = refs_cli.fmt_field
    assert f(FakeFieldChange("parameters.owner", "alice", None)) == \
        "parameters.owner: alice -> (none)"
    assert f(FakeFieldChange("columns.removed", ["a", "b"], None)) == "columns.removed: [a, b]"
    assert f(FakeFieldChange("location", None, "file:/x")) == "location: file:/x"
    assert f(FakeFieldChange("sd", {"a": 1}, {"a": 2})) == "sd: {a: 1} -> {a: 2}"
    assert f(FakeFieldChange("columns.added", None, {"discount": "int", "note": "string"})) == \
        "columns.added: [discount int, note string]"
    assert f(FakeFieldChange("columns.dropped", {"x": "int"}, None)) == "columns.dropped: [x int]"
    assert f(FakeFieldChange("columns.retyped", {"a": "int"}, {"a": "bigint"})) == \
        "columns.retyped: a int -> bigint"
    assert refs_cli.fmt_value("x" * 200).endswith("...")
    assert len(refs_cli.fmt_value("x" * 200)) == refs_cli.MAX_VALUE


def _merge_args(**kw):
    return SimpleNamespace(**{"source": "dev", "dest": "main", "strategy": "fail",
                              "dry_run": False, **kw})


def test_format_merge_and_conflicts():
    applied = [FakeEntityChange("table", ("shop", "t"), "added")] + \
        [FakeEntityChange("partition", ("shop", "t", f"p={i}"), "added") for i in range(3)]
    commit = SimpleNamespace(id="ab" * 32)
    result = SimpleNamespace(commit=commit, applied=applied, conflicts=[], resolved_by=None)
    assert refs_cli.format_merge(result, _merge_args()) == [
        "merged dev into main: abababababab (1 table added, 3 partitions added)"]

    dry = SimpleNamespace(commit=None, applied=applied[:1], conflicts=[], resolved_by=None)
    assert refs_cli.format_merge(dry, _merge_args(dry_run=True)) == [
        "dry run: merging dev into main would apply 1 table added"]
    noop = SimpleNamespace(commit=None, applied=[], conflicts=[], resolved_by=None)
    assert refs_cli.format_merge(noop, _merge_args()) == ["main is already up to date with dev"]

    conflict = FakeConflict("modify/modify", "table", ("shop", "orders"),
                            ("parameters.owner",), "bob", "carol")
    stopped = SimpleNamespace(commit=None, applied=[], conflicts=[conflict], resolved_by=None)
    lines = refs_cli.format_conflicts(stopped, _merge_args())
    assert lines[0].startswith("merge of dev into main stopped: 1 conflict ")
    assert lines[1] == ("CONFLICT (modify/modify) table shop.orders  fields: parameters.owner"
                        "  source: bob  dest: carol")

    won = SimpleNamespace(commit=commit, applied=applied[:1], conflicts=[conflict],
                          resolved_by="source-wins")
    lines = refs_cli.format_merge(won, _merge_args(strategy="source-wins"))
    assert lines[1] == "1 conflict resolved by source-wins:"
    assert lines[2].startswith("  CONFLICT (modify/modify) table shop.orders")


def test_format_commit():
    from kvmodel.store.contract import Commit

    commit = Commit("c" * 64, ("a" * 64, "b" * 64), "merge dev\n\ndetails", "alice", 0.0,
                    {"job": "7"})
    lines = refs_cli.format_commit(commit)
    assert lines[0] == "commit " + "c" * 64
    assert lines[1] == "Merge:  aaaaaaaaaaaa bbbbbbbbbbbb"
    assert lines[2] == "Author: alice"
    assert lines[4] == "Meta:   job=7"
    assert lines[-3:] == ["    merge dev", "", "    details"]


# --- diff, show, merge, revert against the real engine -----------------------------------------
@pytest.fixture
def dev(store_path):
    """A branch dev off main with one commit: shop.orders gets a column and a new owner, two
    new partitions, and one dropped."""
    store = open_store(store_path)
    try:
        store.create_branch("dev", "main")
        put(store, "dev", {
            catalog.table_key("shop", "orders"): table("shop", "orders", "carol",
                                                       ("id", "amount", "discount")),
            catalog.part_key("shop", "orders", "ds=4"): partition("shop", "orders", "4"),
            catalog.part_key("shop", "orders", "ds=5"): partition("shop", "orders", "5"),
            catalog.part_key("shop", "orders", "ds=1"): None})
        store.commit("dev", "orders: discount, carol, ds=4..5", author="carol")
    finally:
        store.close()
    return "dev"


def test_diff(cli, dev, store_path):
    code, out, err = cli("diff", "main", "dev")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "shop"
    assert lines[1].startswith("  ~ shop.orders  ")
    assert "columns.added: [discount int]" in lines[1]
    assert "parameters.owner: alice -> carol" in lines[1]
    assert lines[2] == "    partitions: +2 -1"
    assert len(lines) == 3

    code, out, _ = cli("diff", "main", "dev", "--partitions")
    assert out.splitlines()[2:] == ["    - ds=1", "    + ds=4", "    + ds=5"]

    report = cli_json(cli, "diff", "main", "dev")
    assert json.dumps(report)  # JSON as the engine renders it

    # a branch's uncommitted changes are part of it
    store = open_store(store_path)
    put(store, "dev", {catalog.db_key("tmp"): database("tmp")})
    store.close()
    code, out, _ = cli("diff", "main", "dev")
    assert "+ tmp" in out.splitlines()
    code, out, _ = cli("diff", "main", "dev", "--path", "shop.orders")
    assert "+ tmp" not in out and "shop.orders" in out
    code, out, _ = cli("diff", "dev", "dev")
    assert code == 0 and out.strip() == "(no changes)"
    code, _, err = cli("diff", "main", "nosuch")
    assert code == 2 and "nosuch" in err and err.count("\n") == 1


def test_show(cli, dev):
    head = cli_json(cli, "log", "dev")[0]
    code, out, err = cli("show", "dev")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"commit {head['id']}"
    assert lines[1] == f"Parent: {head['parents'][0][:12]}"
    assert "Author: carol" in lines
    assert "    orders: discount, carol, ds=4..5" in lines
    assert "    partitions: +2 -1" in lines
    shown = cli_json(cli, "show", head["id"][:8])
    assert shown["id"] == head["id"] and shown["diff"] is not None
    code, out, _ = cli("show", "main~2")
    assert code == 0 and "(root commit)" in out
    code, _, err = cli("show", "nosuch")
    assert code == 2 and err.startswith("hms-proxy: error: ")


def test_merge(cli, dev, store_path):
    before = cli_json(cli, "log", "main")[0]["id"]
    code, out, err = cli("merge", "dev", "main", "--dry-run")
    assert code == 0, err
    assert out.startswith("dry run: merging dev into main would apply ")
    assert cli_json(cli, "log", "main")[0]["id"] == before

    code, out, err = cli("merge", "dev", "main", "-m", "merge dev", "--author", "mia")
    assert code == 0, err
    assert out.startswith("merged dev into main: ")
    head = cli_json(cli, "log", "main")[0]
    assert out.split()[4] == head["id"][:12]
    assert head["message"] == "merge dev" and head["author"] == "mia"
    store = open_store(store_path)
    assert store.get("main", catalog.part_key("shop", "orders", "ds=5")) is not None
    store.close()


def test_merge_conflicts(cli, dev, store_path):
    store = open_store(store_path)
    put(store, "main", {catalog.table_key("shop", "orders"): table("shop", "orders", "erin")})
    store.commit("main", "orders: erin")
    store.close()
    before = cli_json(cli, "log", "main")[0]["id"]

    code, out, err = cli("merge", "dev", "main")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith("merge of dev into main stopped: ")
    conflicts = [line for line in lines[1:] if line.startswith("CONFLICT (")]
    assert conflicts and any("shop.orders" in c and "owner" in c for c in conflicts)
    assert any("carol" in c and "erin" in c for c in conflicts)
    assert cli_json(cli, "log", "main")[0]["id"] == before

    code, out, _ = cli("merge", "dev", "main", "--json")
    assert code == 1 and json.loads(out)["conflicts"]
    code, out, _ = cli("merge", "dev", "main", "--dry-run")
    assert code == 1 and out.startswith("dry run: merging dev into main would stop on ")
    assert out.splitlines()[1:] == conflicts

    code, out, err = cli("merge", "dev", "main", "--strategy", "source-wins")
    assert code == 0, err
    assert out.startswith("merged dev into main: ") and "resolved by" in out
    store = open_store(store_path)
    merged = codec.decode(ttypes.Table, store.get("main", catalog.table_key("shop", "orders")))
    store.close()
    assert merged.owner == "carol"


def test_revert(cli, store_path):
    target = cli_json(cli, "log", "main")[0]  # "create sales.events"
    code, out, err = cli("revert", "main", target["id"][:10])
    assert code == 0, err
    assert out.startswith("[main ") and "(2 keys changed)" in out
    store = open_store(store_path)
    assert store.get("main", catalog.table_key("sales", "events")) is None
    assert store.get("main", catalog.table_key("shop", "orders")) is not None
    store.close()
    code, _, err = cli("revert", "main", "nosuch")
    assert code == 2 and "nosuch" in err


def test_revert_conflict_and_nothing_to_revert(cli, store_path):
    first = cli_json(cli, "log", "main")[1]  # "create shop.orders"
    store = open_store(store_path)
    put(store, "main", {catalog.table_key("shop", "orders"): table("shop", "orders", "zed")})
    store.commit("main", "orders: zed")
    store.close()
    code, out, _ = cli("revert", "main", first["id"])
    assert code == 1
    assert out.startswith(f"revert of {first['id'][:12]} on main stopped: ")
    assert "CONFLICT (PARENT_DROPPED) database shop  source: (dropped)  dest: " in out

    last = cli_json(cli, "log", "main")[0]
    assert cli("revert", "main", last["id"])[0] == 0
    code, out, _ = cli("revert", "main", last["id"])
    assert code == 1 and out.startswith("nothing to revert: ")
