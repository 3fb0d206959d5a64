"""Pre-commit and pre-merge hooks (kvmodel.hooks): loading from hooks.json and entry points,
vetoes of commits and merges, the built-in safe schema evolution on protected branches, the
head the hooks saw, and the refs CLI's report of a veto.

Catalogs are built from real HMS structs encoded with ``codec.encode`` under the key helpers of
``kvmodel.catalog``.
"""
from __future__ import annotations

import importlib.metadata
import json
import textwrap
from pathlib import Path

import pytest

from hms_proxy.cli import main
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel import catalog as K
from kvmodel import codec
from kvmodel.hooks import (
    HookConfigError,
    HookEvent,
    HookSet,
    HookVeto,
    commit_with_hooks,
    is_widening,
    load_hooks,
    merge_with_hooks,
)
from kvmodel.store.errors import HeadMoved, MergeConflict, NothingToCommit, StoreError

ORDERS = K.table_key("shop", "orders")


# --- builders -------------------------------------------------------------------------------
def table(columns=(("id", "bigint"), ("price", "double")), name="orders", db="shop",
          partition_keys=(("ds", "string"),), table_type="EXTERNAL_TABLE", owner="alice"):
    sd = T.StorageDescriptor(
        cols=[T.FieldSchema(name=n, type=t, comment=None) for n, t in columns],
        location=f"s3://wh/{db}.db/{name}",
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=T.SerDeInfo(serializationLib="parquet.serde", parameters={}),
        numBuckets=-1, parameters={})
    return codec.encode(T.Table(
        tableName=name, dbName=db, owner=owner, createTime=1, lastAccessTime=0, sd=sd,
        partitionKeys=[T.FieldSchema(name=n, type=t, comment=None) for n, t in partition_keys],
        tableType=table_type, parameters={"transient_lastDdlTime": "1"}))


def database(name="shop"):
    return codec.encode(T.Database(name=name, locationUri=f"s3://wh/{name}.db", parameters={}))


# A commit on a protected branch (its pre-commit hooks) exists only where a protected branch
# takes writes: on lakeFS it changes only by merges, whose hooks the merge tests check.
DIRECT_COMMITS = pytest.mark.parametrize("store", ["local"], indirect=True)


def put(store, branch, items):
    assert not (store.protection_blocks_writes and store.get_branch(branch).protected), \
        "this backend's protected branches change only by merges: mark the test DIRECT_COMMITS"
    with store.write(branch) as txn:
        for key, value in items.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value)


@pytest.fixture
def shop(store):
    """main holds shop.orders (id bigint, price double; partitioned by ds) and is protected."""
    put(store, "main", {K.db_key("shop"): database(), ORDERS: table()})
    store.commit("main", "create shop.orders")
    store.set_branch_protection("main", True)
    return store


@pytest.fixture
def no_config(tmp_path):
    """A store directory without hooks.json (the built-in defaults only)."""
    path = tmp_path / "conf"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def no_entry_points(monkeypatch):
    """No installed package's hooks leak into these tests."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])


@pytest.fixture
def hook_module(tmp_path, monkeypatch):
    """An importable module of custom hooks, recording the events they see."""
    mod_dir = tmp_path / "hookmods"
    mod_dir.mkdir()
    (mod_dir / "my_hooks.py").write_text(textwrap.dedent('''
        from kvmodel.hooks import HookVeto

        SEEN = []

        def record(event):
            SEEN.append(event)

        def no_owner_changes(event):
            SEEN.append(event)
            for change in event.diff.changes:
                for f in change.fields:
                    if f.field == "owner":
                        return f"{'.'.join(change.path)}: owner changes need a review"
            return None

        def refuse_all(event):
            raise HookVeto(f"{event.kind} refused on {event.branch}")

        def broken(event):
            raise RuntimeError("boom")

        NOT_CALLABLE = 3
    '''))
    monkeypatch.syspath_prepend(str(mod_dir))
    import importlib
    import sys
    sys.modules.pop("my_hooks", None)
    module = importlib.import_module("my_hooks")
    yield module
    sys.modules.pop("my_hooks", None)


def write_config(directory: Path, config) -> Path:
    (directory / "hooks.json").write_text(config if isinstance(config, str)
                                          else json.dumps(config))
    return directory


# --- loading ----------------------------------------------------------------------------------
def test_defaults_without_hooks_json(no_config):
    hooks = load_hooks(no_config)
    assert hooks.hooks == {"pre-commit": [], "pre-merge": []}
    assert hooks.safe_schema_evolution
    assert [h.name for h in hooks.for_event("pre-commit", protected=True)] == \
        ["safe_schema_evolution"]
    assert not hooks.applies("pre-merge", protected=False)
    assert load_hooks(None).safe_schema_evolution  # no store directory: entry points only
    assert load_hooks("lakefs://repo").hooks["pre-commit"] == []


def test_hooks_json(no_config, hook_module):
    write_config(no_config, {"pre-commit": ["my_hooks:record", "my_hooks:no_owner_changes"],
                             "pre-merge": ["my_hooks:refuse_all"],
                             "builtin": {"safe_schema_evolution": False}})
    hooks = load_hooks(no_config)
    assert [h.name for h in hooks.hooks["pre-commit"]] == ["my_hooks:record",
                                                           "my_hooks:no_owner_changes"]
    assert hooks.hooks["pre-commit"][0].func is hook_module.record
    assert [h.name for h in hooks.hooks["pre-merge"]] == ["my_hooks:refuse_all"]
    assert not hooks.safe_schema_evolution
    assert [h.name for h in hooks.for_event("pre-merge", protected=True)] == \
        ["my_hooks:refuse_all"]
    # a file:// URL names the same directory
    assert len(load_hooks(f"file://{no_config}").hooks["pre-commit"]) == 2


@pytest.mark.parametrize("config, match", [
    ("{not json", "hooks.json"),
    ([], "JSON object"),
    ({"precommit": []}, "unknown keys"),
    ({"pre-commit": "my_hooks"}, "module:function"),
    ({"pre-commit": [1]}, "list"),
    ({"pre-commit": ["my_hooks:missing"]}, "cannot load hook 'my_hooks:missing'"),
    ({"pre-merge": ["no_such_module_xyz:f"]}, "cannot load hook"),
    ({"pre-merge": ["my_hooks:NOT_CALLABLE"]}, "not callable"),
    ({"builtin": {"safe_schema": True}}, "unknown built-in"),
    ({"builtin": {"safe_schema_evolution": "yes"}}, "true or false"),
])
def test_bad_hooks_json(no_config, hook_module, config, match):
    write_config(no_config, config)
    with pytest.raises(HookConfigError, match=match):
        load_hooks(no_config)
    assert issubclass(HookConfigError, StoreError)


def test_entry_points(no_config, hook_module, monkeypatch):
    EP = importlib.metadata.EntryPoint
    asked = []

    def entry_points(**kw):
        asked.append(kw)
        return [EP("pre-merge.zz_refuse", "my_hooks:refuse_all", "hms_proxy.hooks"),
                EP("pre-commit.audit", "my_hooks:record", "hms_proxy.hooks")]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    write_config(no_config, {"pre-merge": ["my_hooks:no_owner_changes"]})
    hooks = load_hooks(no_config)
    assert asked == [{"group": "hms_proxy.hooks"}]
    assert [h.name for h in hooks.hooks["pre-commit"]] == ["hms_proxy.hooks:pre-commit.audit"]
    assert hooks.hooks["pre-commit"][0].func is hook_module.record
    # hooks.json's first, then the entry points'
    assert [h.name for h in hooks.hooks["pre-merge"]] == [
        "my_hooks:no_owner_changes", "hms_proxy.hooks:pre-merge.zz_refuse"]

    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [EP("precommit.x", "my_hooks:record", "hms_proxy.hooks")])
    with pytest.raises(HookConfigError, match="pre-commit.<name>"):
        load_hooks(no_config)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [EP("pre-commit.x", "my_hooks:gone", "hms_proxy.hooks")])
    with pytest.raises(HookConfigError, match="cannot load"):
        load_hooks(no_config)


def test_entry_point_hook_vetoes_a_commit(store, no_config, hook_module, monkeypatch):
    EP = importlib.metadata.EntryPoint
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [
        EP("pre-commit.refuse", "my_hooks:refuse_all", "hms_proxy.hooks")])
    put(store, "main", {K.db_key("shop"): database()})
    with pytest.raises(HookVeto, match="pre-commit refused on main"):
        commit_with_hooks(store, no_config, "main", "shop")


# --- custom hooks on commits and merges ---------------------------------------------------------
def test_custom_hook_vetoes_a_commit(store, no_config, hook_module):
    put(store, "main", {K.db_key("shop"): database(), ORDERS: table()})
    store.commit("main", "create shop.orders")
    head = store.resolve("main").commit
    write_config(no_config, {"pre-commit": ["my_hooks:no_owner_changes"]})

    put(store, "main", {ORDERS: table(owner="mallory")})
    with pytest.raises(HookVeto) as info:
        commit_with_hooks(store, no_config, "main", "new owner", author="bob",
                          metadata={"ticket": "T-1"})
    assert info.value.messages == ["shop.orders: owner changes need a review"]
    assert info.value.vetoes == [("my_hooks:no_owner_changes",
                                  "shop.orders: owner changes need a review")]
    assert store.resolve("main").commit == head  # nothing committed
    assert [e.key for e in store.staged("main")] == [ORDERS]  # the changes stay staged

    event = hook_module.SEEN[-1]
    assert isinstance(event, HookEvent)
    assert (event.kind, event.branch, event.source, event.protected, event.head) == \
        ("pre-commit", "main", None, False, head)
    assert (event.message, event.author, event.metadata) == ("new owner", "bob",
                                                              {"ticket": "T-1"})
    assert [(c.kind, c.path, c.change) for c in event.diff.changes] == \
        [("table", ("shop", "orders"), "modified")]
    assert event.store is store
    before, after = event.structs(event.diff.changes[0])
    assert (before.owner, after.owner) == ("alice", "mallory")

    # a change the hook accepts is committed, against the head the hook saw
    put(store, "main", {ORDERS: table(), K.db_key("sales"): database("sales")})
    commit = commit_with_hooks(store, no_config, "main", "sales")
    assert commit.parents == (head,)
    assert [e.key for e in store.diff(head, commit.id)] == [K.db_key("sales")]


def test_commit_without_changes_raises_nothing_to_commit(store, no_config, hook_module):
    write_config(no_config, {"pre-commit": ["my_hooks:refuse_all"]})
    with pytest.raises(NothingToCommit):
        commit_with_hooks(store, no_config, "main", "nothing")


def test_a_failing_hook_vetoes(store, no_config, hook_module):
    write_config(no_config, {"pre-commit": ["my_hooks:broken"]})
    put(store, "main", {K.db_key("shop"): database()})
    with pytest.raises(HookVeto, match="hook my_hooks:broken failed: RuntimeError: boom"):
        commit_with_hooks(store, no_config, "main", "shop")


def test_every_veto_is_reported(store, no_config, hook_module):
    write_config(no_config, {"pre-commit": ["my_hooks:refuse_all", "my_hooks:record",
                                            "my_hooks:broken"]})
    put(store, "main", {K.db_key("shop"): database()})
    with pytest.raises(HookVeto) as info:
        commit_with_hooks(store, no_config, "main", "shop")
    assert [name for name, _ in info.value.vetoes] == ["my_hooks:refuse_all",
                                                       "my_hooks:broken"]
    assert len(hook_module.SEEN) == 1  # the hook between them ran too


def test_hooks_are_rerun_when_the_branch_changes_meanwhile(store, no_config):
    calls = []

    def writes_meanwhile(event):
        calls.append(len(event.diff.changes))
        if len(calls) == 1:  # a concurrent writer stages one more table while we check
            put(store, "main", {K.table_key("shop", "late"): table(name="late")})

    hooks = HookSet({"pre-commit": [_hook(writes_meanwhile)], "pre-merge": []})
    put(store, "main", {K.db_key("shop"): database()})
    commit = commit_with_hooks(store, no_config, "main", "shop", hooks=hooks)
    assert calls == [1, 2]  # the second run saw what was committed
    assert len(list(store.diff(commit.parents[0], commit.id))) == 2

    def always_writes(event):
        put(store, "main", {K.db_key(f"db{len(calls)}"): database(f"db{len(calls)}")})
        calls.append(1)

    hooks = HookSet({"pre-commit": [_hook(always_writes)], "pre-merge": []})
    put(store, "main", {K.db_key("sales"): database("sales")})
    with pytest.raises(HeadMoved, match="kept changing"):
        commit_with_hooks(store, no_config, "main", "never", hooks=hooks)


def _hook(func):
    from kvmodel.hooks import Hook

    return Hook(func.__name__, func)


def test_custom_hook_vetoes_a_merge(store, no_config, hook_module):
    put(store, "main", {K.db_key("shop"): database(), ORDERS: table()})
    store.commit("main", "create shop.orders")
    head = store.resolve("main").commit
    store.create_branch("dev", "main")
    put(store, "dev", {ORDERS: table(owner="mallory"), K.db_key("sales"): database("sales")})
    store.commit("dev", "new owner")
    write_config(no_config, {"pre-merge": ["my_hooks:no_owner_changes"]})

    for dry_run in (True, False):
        with pytest.raises(HookVeto, match="shop.orders: owner changes need a review"):
            merge_with_hooks(store, no_config, "dev", "main", dry_run=dry_run)
    assert store.resolve("main").commit == head
    event = hook_module.SEEN[-1]
    assert (event.kind, event.branch, event.source, event.protected, event.head,
            event.strategy) == ("pre-merge", "main", "dev", False, head, "fail")
    assert event.message == "Merge 'dev' into 'main'"
    assert [(c.kind, c.change) for c in event.diff.changes] == \
        [("database", "added"), ("table", "modified")]
    before, after = event.structs(event.diff.changes[1])
    assert (before.owner, after.owner) == ("alice", "mallory")

    # without the owner change the merge goes through, as merge_refs would make it
    put(store, "dev", {ORDERS: table()})
    store.commit("dev", "owner back")
    result = merge_with_hooks(store, no_config, "dev", "main", author="carol")
    assert result.source == "dev" and result.commit is not None
    assert result.commit.parents == (head, store.resolve("dev").commit)
    assert result.commit.message == "Merge 'dev' into 'main'"
    assert result.commit.author == "carol"
    assert [(c.kind, c.change) for c in result.applied] == [("database", "added")]


def test_merge_conflicts_are_reported_before_hooks(store, no_config, hook_module):
    put(store, "main", {K.db_key("shop"): database(), ORDERS: table()})
    store.commit("main", "create")
    store.create_branch("dev", "main")
    put(store, "dev", {ORDERS: table(owner="carol")})
    store.commit("dev", "carol")
    put(store, "main", {ORDERS: table(owner="erin")})
    store.commit("main", "erin")
    write_config(no_config, {"pre-merge": ["my_hooks:refuse_all"]})
    with pytest.raises(MergeConflict) as info:
        merge_with_hooks(store, no_config, "dev", "main")
    assert info.value.result.source == "dev" and len(info.value.result.conflicts) == 1
    preview = merge_with_hooks(store, no_config, "dev", "main", dry_run=True)
    assert preview.conflicts and preview.commit is None
    # resolved by a strategy, the merge has changes to apply: the hook is asked
    with pytest.raises(HookVeto, match="pre-merge refused on main"):
        merge_with_hooks(store, no_config, "dev", "main", strategy="source-wins")


def test_merge_is_made_against_the_head_the_hooks_saw(store, no_config):
    put(store, "main", {K.db_key("shop"): database()})
    store.commit("main", "shop")
    store.create_branch("dev", "main")
    put(store, "dev", {K.db_key("sales"): database("sales")})
    store.commit("dev", "sales")
    head = store.resolve("main").commit

    def commits_meanwhile(event):  # someone commits on main while the hook looks
        store.create_branch("other", "main")
        put(store, "other", {K.db_key("hr"): database("hr")})
        store.commit("other", "hr")
        merge_with_hooks(store, no_config, "other", "main", hooks=HookSet())

    hooks = HookSet({"pre-commit": [], "pre-merge": [_hook(commits_meanwhile)]})
    with pytest.raises(HeadMoved, match="is at .*, not "):
        merge_with_hooks(store, no_config, "dev", "main", hooks=hooks)
    moved = store.resolve("main").commit
    assert moved != head and store.get("main", K.db_key("sales")) is None
    assert store.get_commit(moved).parents[0] == head  # only the concurrent merge landed


# --- the built-in: safe schema evolution --------------------------------------------------------
def alter(store, columns=None, branch="main", **kw):
    put(store, branch, {ORDERS: table(columns, **kw) if columns is not None else table(**kw)})


@DIRECT_COMMITS
@pytest.mark.parametrize("columns", [
    (("id", "bigint"), ("price", "double"), ("discount", "int")),  # a column added
    (("id", "bigint"), ("discount", "int"), ("price", "double")),  # ... in the middle
    (("id", "bigint"), ("price", "double"), ("a", "int"), ("b", "string")),
    (("price", "double"), ("id", "bigint")),  # reordered
])
def test_adding_columns_passes(shop, no_config, columns):
    alter(shop, columns)
    commit = commit_with_hooks(shop, no_config, "main", "evolve")
    assert commit.parents == (shop.resolve("main~1").commit,)


@DIRECT_COMMITS
def test_widening_passes(shop, no_config):
    put(shop, "main", {K.table_key("shop", "t"): table((("a", "int"), ("b", "float"),
                                                        ("c", "tinyint"), ("d", "int"),
                                                        ("e", "decimal(10,2)")), name="t")})
    commit_with_hooks(shop, no_config, "main", "t")
    put(shop, "main", {K.table_key("shop", "t"): table((("a", "bigint"), ("b", "double"),
                                                        ("c", "int"), ("d", "double"),
                                                        ("e", "decimal(12,2)")), name="t")})
    commit_with_hooks(shop, no_config, "main", "widen")
    assert not list(shop.staged("main"))


@DIRECT_COMMITS
def test_dropping_a_column_is_refused(shop, no_config):
    head = shop.resolve("main").commit
    alter(shop, (("id", "bigint"),))
    with pytest.raises(HookVeto) as info:
        commit_with_hooks(shop, no_config, "main", "drop price")
    assert info.value.messages == [
        "table shop.orders: column 'price' cannot be dropped on protected branch main"]
    assert info.value.vetoes[0][0] == "safe_schema_evolution"
    assert shop.resolve("main").commit == head
    assert [e.key for e in shop.staged("main")] == [ORDERS]


@DIRECT_COMMITS
def test_renaming_a_column_is_refused(shop, no_config):
    alter(shop, (("id", "bigint"), ("cost", "double")))
    with pytest.raises(HookVeto) as info:
        commit_with_hooks(shop, no_config, "main", "rename")
    assert info.value.messages == ["table shop.orders: column 'price' cannot be renamed to "
                                   "'cost' on protected branch main"]
    # a drop and an add elsewhere is a drop (the add alone would pass)
    alter(shop, (("price", "double"), ("id2", "bigint"), ("x", "int")))
    with pytest.raises(HookVeto, match="column 'id' cannot be dropped"):
        commit_with_hooks(shop, no_config, "main", "drop id")


@DIRECT_COMMITS
@pytest.mark.parametrize("old, new", [("bigint", "int"), ("double", "float"),
                                      ("double", "int"), ("bigint", "string")])
def test_narrowing_is_refused(shop, no_config, old, new):
    put(shop, "main", {ORDERS: table((("id", old), ("price", "double")))})
    shop.commit("main", "setup", allow_empty=True)  # the store itself runs no hooks
    alter(shop, (("id", new), ("price", "double")))
    with pytest.raises(HookVeto) as info:
        commit_with_hooks(shop, no_config, "main", "narrow")
    assert info.value.messages == [f"table shop.orders: column 'id' cannot change type from "
                                   f"{old} to {new} on protected branch main"]


@DIRECT_COMMITS
def test_every_violation_is_named(shop, no_config):
    alter(shop, (("id", "int"), ("x", "string")), partition_keys=(("dt", "string"),))
    with pytest.raises(HookVeto) as info:
        commit_with_hooks(shop, no_config, "main", "all wrong")
    assert info.value.messages == [
        "table shop.orders: column 'price' cannot be renamed to 'x' on protected branch main",
        "table shop.orders: column 'id' cannot change type from bigint to int on protected "
        "branch main",
        "table shop.orders: partition keys cannot change (from [ds string] to [dt string]) on "
        "protected branch main"]


@DIRECT_COMMITS
def test_tables_added_or_dropped_and_views_pass(shop, no_config):
    put(shop, "main", {K.table_key("shop", "v"): table(name="v", table_type="VIRTUAL_VIEW")})
    commit_with_hooks(shop, no_config, "main", "view")
    put(shop, "main", {K.table_key("shop", "v"): table((("id", "int"),), name="v",
                                                       table_type="VIRTUAL_VIEW"),
                       K.table_key("shop", "new"): table(name="new")})
    commit_with_hooks(shop, no_config, "main", "view changes, new table")
    put(shop, "main", {K.table_key("shop", "new"): None})
    commit_with_hooks(shop, no_config, "main", "drop a table")


def test_unprotected_branches_are_not_checked(shop, no_config):
    shop.create_branch("dev", "main")
    alter(shop, (("id", "int"),), branch="dev")
    commit_with_hooks(shop, no_config, "dev", "anything goes on dev")
    shop.set_branch_protection("main", False)
    alter(shop, (("id", "int"),))
    commit_with_hooks(shop, no_config, "main", "main unprotected")


@DIRECT_COMMITS
def test_the_builtin_can_be_turned_off_or_named_for_every_branch(shop, no_config):
    write_config(no_config, {"builtin": {"safe_schema_evolution": False}})
    alter(shop, (("id", "bigint"),))
    commit_with_hooks(shop, no_config, "main", "drop price, unchecked")

    write_config(no_config, {"pre-commit": ["kvmodel.hooks:safe_schema_evolution"],
                             "builtin": {"safe_schema_evolution": False}})
    shop.create_branch("dev", "main")
    alter(shop, (("id", "int"),), branch="dev")
    with pytest.raises(HookVeto, match="cannot change type from bigint to int on branch dev$"):
        commit_with_hooks(shop, no_config, "dev", "narrow on dev")


def test_merges_into_a_protected_branch_are_checked(shop, no_config):
    main_head = shop.resolve("main").commit
    shop.create_branch("dev", "main")
    alter(shop, (("id", "int"), ("price", "double"), ("discount", "int")), branch="dev")
    shop.commit("dev", "narrow id, add discount")
    with pytest.raises(HookVeto) as info:
        merge_with_hooks(shop, no_config, "dev", "main")
    assert info.value.messages == [
        "table shop.orders: column 'id' cannot change type from bigint to int on protected "
        "branch main"]
    assert shop.resolve("main").commit == main_head

    alter(shop, (("id", "bigint"), ("price", "double"), ("discount", "int")), branch="dev")
    shop.commit("dev", "id back to bigint")
    result = merge_with_hooks(shop, no_config, "dev", "main")
    assert result.commit is not None and result.commit.parents[0] == main_head

    # a rename carried by a merge, seen on the merged value
    alter(shop, (("id", "bigint"), ("cost", "double"), ("discount", "int")), branch="dev")
    shop.commit("dev", "rename price")
    with pytest.raises(HookVeto, match="column 'price' cannot be renamed to 'cost'"):
        merge_with_hooks(shop, no_config, "dev", "main")


def test_merged_values_are_the_3way_result(shop, no_config):
    """main and dev change the table differently; the hook checks the merged columns."""
    shop.create_branch("dev", "main")
    alter(shop, (("id", "bigint"), ("price", "double"), ("d", "int")), branch="dev")
    shop.commit("dev", "add d")
    shop.create_branch("fix", "main")  # main changes too (by a merge: it is protected)
    alter(shop, (("id", "bigint"), ("price", "double"), ("m", "int")), branch="fix")
    shop.commit("fix", "add m")
    merge_with_hooks(shop, no_config, "fix", "main")
    result = merge_with_hooks(shop, no_config, "dev", "main")
    assert result.commit is not None
    cols = [c.name for c in codec.decode(T.Table, shop.get("main", ORDERS)).sd.cols]
    assert cols == ["id", "price", "m", "d"]


def test_is_widening():
    for old, new in [("int", "bigint"), ("tinyint", "int"), ("smallint", "bigint"),
                     ("float", "double"), ("int", "double"), ("INT", "BigInt"),
                     ("decimal(10,2)", "decimal(12,2)"), ("decimal", "decimal(12,0)"),
                     ("int", "decimal(10,0)"), ("varchar(10)", "varchar(20)"),
                     ("varchar(10)", "string"), ("string", "string")]:
        assert is_widening(old, new), (old, new)
    for old, new in [("bigint", "int"), ("double", "float"), ("bigint", "double"),
                     ("decimal(10,2)", "decimal(12,3)"), ("decimal(12,2)", "decimal(10,2)"),
                     ("int", "decimal(9,0)"), ("string", "int"), ("int", "string"),
                     ("varchar(20)", "varchar(10)"), ("struct<a:int>", "struct<a:bigint>")]:
        assert not is_widening(old, new), (old, new)


# --- the refs CLI -------------------------------------------------------------------------------
@pytest.fixture
def cli(local_store, capsys):
    put(local_store, "main", {K.db_key("shop"): database(), ORDERS: table()})
    local_store.commit("main", "create shop.orders")
    local_store.set_branch_protection("main", True)

    def run(*argv):
        code = main([*argv, "--store", str(local_store.path)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_cli_commit_veto(cli, local_store):
    head = local_store.resolve("main").commit
    alter(local_store, (("id", "bigint"),))
    code, out, err = cli("commit", "main", "-m", "drop price")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "hms-proxy: error: commit on branch main vetoed by hooks (nothing committed):",
        "  table shop.orders: column 'price' cannot be dropped on protected branch main"]
    assert local_store.resolve("main").commit == head

    code, out, err = cli("commit", "main", "-m", "drop price", "--json")
    assert code == 1 and json.loads(out) == {
        "vetoed": True, "operation": "commit on branch main",
        "messages": ["table shop.orders: column 'price' cannot be dropped on protected "
                     "branch main"]}

    alter(local_store, (("id", "bigint"), ("price", "double"), ("discount", "int")))
    code, out, err = cli("commit", "main", "-m", "add discount")
    assert code == 0 and err == "" and out.startswith("[main ")


def test_cli_merge_veto(cli, local_store):
    local_store.create_branch("dev", "main")
    alter(local_store, (("id", "bigint"), ("price", "int")), branch="dev")
    local_store.commit("dev", "price as int")
    head = local_store.resolve("main").commit
    for extra in ((), ("--dry-run",)):
        code, out, err = cli("merge", "dev", "main", *extra)
        assert code == 1 and out == ""
        prefix = "dry run: " if extra else ""
        assert err.splitlines() == [
            f"hms-proxy: error: {prefix}merge of dev into main vetoed by hooks (nothing "
            "committed):",
            "  table shop.orders: column 'price' cannot change type from double to int on "
            "protected branch main"]
    assert local_store.resolve("main").commit == head

    alter(local_store, (("id", "bigint"), ("price", "double"), ("n", "int")), branch="dev")
    local_store.commit("dev", "price back, n added")
    code, out, err = cli("merge", "dev", "main")
    assert code == 0 and err == "" and out.startswith("merged dev into main: ")


def test_cli_custom_hook_and_bad_config(cli, local_store, hook_module):
    write_config(Path(local_store.path), {"pre-commit": ["my_hooks:refuse_all"]})
    put(local_store, "main", {K.db_key("sales"): database("sales")})
    code, out, err = cli("commit", "main", "-m", "sales")
    assert code == 1 and err.splitlines()[1:] == ["  pre-commit refused on main"]
    write_config(Path(local_store.path), {"pre-commit": ["my_hooks:nope"]})
    code, out, err = cli("commit", "main", "-m", "sales")
    assert code == 2 and "cannot load hook 'my_hooks:nope'" in err
