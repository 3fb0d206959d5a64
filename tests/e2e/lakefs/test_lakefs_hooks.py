"""lakeFS's own commits and merges, with the action ``serve --lakefs-hooks`` installs: lakeFS
calls hms-proxy before it commits (the write log is folded into per-key objects, so the commit
holds the catalog object by object) and before it makes a merge the branch's head (the
catalog's 3-way merge is checked, and a merge that would break it is refused, naming the
table).

Everything here is done with lakeFS's API, as lakectl and the lakeFS UI do it, against the
real lakeFS of the session with its default settings; the catalog is read and written over
Thrift through the server. lakeFS caches the action files it found on a branch for 5 to 7.5 s,
so the tests work on branches made after the action was installed (a commit of main in those
seconds runs without it: what it reads as is still right, folded at the next fold).
"""
from __future__ import annotations

import os

import pytest
from lakefs_sdk.exceptions import ApiException

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from kvmodel import lakefs_actions
from tests.support.client import connect, wait_served
from tests.support.lakefs import LakeFSApi, new_repository, real_lakefs
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy
from tests.support.wait import wait_until

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def lake(tmp_path):
    real = real_lakefs()
    repo = new_repository("hooks")
    env = dict(os.environ, **real.env(), PYTHONPATH=str(REPO_ROOT))
    server = start_proxy(tmp_path, "--http-port", "0", "--lakefs-hooks", "self",
                         store=f"lakefs://{repo}", warehouse=False, env=env)
    client = real.sdk()
    holder = {"server": server, "repo": repo, "api": LakeFSApi(client, repo)}
    try:
        yield holder
    finally:
        server.stop()
        client.close()
        for store in holder.get("stores", []):
            store.close()


def table(name, db="shop", cols=(("id", "bigint"),), params=None, parts=("ds",)):
    sd = T.StorageDescriptor(
        cols=[T.FieldSchema(n, t, None) for n, t in cols], location=None,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", {}),
        bucketCols=[], sortCols=[], parameters={})
    return T.Table(name, db, "ann", 0, 0, 0, sd, [T.FieldSchema(p, "string", None)
                                                  for p in parts],
                   dict(params or {}), None, None, "MANAGED_TABLE")


def partition(client, db, tbl, value):
    sd = client.get_table(db, tbl).sd
    sd.location = None
    return T.Partition([value], db, tbl, 0, 0, sd, {})


def test_the_action_is_installed_and_lakefs_commits_hold_the_catalog(lake):
    api, server = lake["api"], lake["server"]
    assert lakefs_actions.ACTION_PATH in api.paths("main", "_lakefs_actions/")
    assert "hms-proxy lakeFS hooks: installed" in server.log_text()
    api.branch("etl")
    with connect(server) as client:
        client.create_database(T.Database("shop@etl", "", None, {}))
        client.create_table(table("orders", db="shop@etl"))
    commit = api.commit("etl")  # lakectl commit: prepare-commit folds the log first
    assert {"_hms/db/shop", "_hms/db/shop/table/orders"} <= set(api.paths(commit, "_hms/"))
    plan, _ = _store(lake)._read_log(commit)
    assert plan.live == []  # the commit holds the catalog as objects, not as log entries
    with connect(server) as client:
        assert client.get_all_tables("shop@etl") == ["orders"]
    # a branch lakeFS makes from that commit has the catalog; it is written as any other
    api.branch("dev", "etl")
    with connect(server) as client:
        assert client.get_all_tables("shop@dev") == ["orders"]
        client.create_table(table("returns", db="shop@dev"))
        assert sorted(client.get_all_tables("shop@dev")) == ["orders", "returns"]


def _store(lake):
    from kvmodel.store.lakefs import LakeFSStore

    store = LakeFSStore(lake["repo"], real_lakefs().config(), refresh=0)
    lake.setdefault("stores", []).append(store)
    return store


def test_a_lakefs_merge_moves_the_catalog_and_a_revert_takes_it_back(lake):
    api, server = lake["api"], lake["server"]
    api.branch("prod")
    with connect(server) as client:
        client.create_database(T.Database("shop@prod", "", None, {}))
        client.create_table(table("orders", db="shop@prod"))
    api.commit("prod")
    api.branch("dev", "prod")
    with connect(server) as client:
        client.create_table(table("returns", db="shop@dev"))
        client.add_partition(partition(client, "shop@dev", "orders", "2024-01-01"))
    api.commit("dev")
    merged = api.merge("dev", "prod")
    wait_served(server, lambda c: "returns" in c.get_all_tables("shop@prod"),
                what="the server sees lakeFS's merge")
    with connect(server) as client:
        assert client.get_partition_names("shop@prod", "orders", -1) == ["ds=2024-01-01"]
    api.revert("prod", merged, parent=1)
    wait_served(server, lambda c: c.get_all_tables("shop@prod") == ["orders"],
                what="the server sees lakeFS's revert")
    with connect(server) as client:
        assert client.get_partition_names("shop@prod", "orders", -1) == []
    # a tag lakeFS makes is read at its commit
    api.tag("v1", merged)
    with connect(server) as client:
        assert sorted(client.get_all_tables("shop@v1")) == ["orders", "returns"]


def test_one_table_changed_on_both_branches_is_a_lakefs_conflict(lake):
    api, server = lake["api"], lake["server"]
    api.branch("prod")
    with connect(server) as client:
        client.create_database(T.Database("shop@prod", "", None, {}))
        client.create_table(table("orders", db="shop@prod", params={"owner": "ann"}))
    api.commit("prod")
    api.branch("dev", "prod")
    with connect(server) as client:
        for db, owner in (("shop@prod", "finance"), ("shop@dev", "growth")):
            t = client.get_table(db, "orders")
            t.parameters["owner"] = owner
            client.alter_table(db, "orders", t)
    api.commit("prod")
    api.commit("dev")
    with pytest.raises(ApiException) as refused:
        api.merge("dev", "prod")
    # lakeFS's own conflict (409, no hook involved): both commits changed the object
    # _hms/db/shop/table/orders
    assert refused.value.status == 409, refused.value
    assert "hook" not in str(refused.value.body), refused.value.body
    with connect(server) as client:
        assert client.get_table("shop@prod", "orders").parameters["owner"] == "finance"


def test_a_merge_lakefs_would_make_wrongly_is_refused_by_the_hook(lake):
    """One branch drops a table, the other adds a partition to it: no object both changed, so
    lakeFS's merge alone would leave a partition without its table. The pre-merge hook finds
    it in the catalog's 3-way merge and lakeFS aborts the merge."""
    api, server = lake["api"], lake["server"]
    api.branch("prod")
    with connect(server) as client:
        client.create_database(T.Database("shop@prod", "", None, {}))
        client.create_table(table("orders", db="shop@prod"))
    api.commit("prod")
    api.branch("dev", "prod")
    with connect(server) as client:
        client.drop_table("shop@prod", "orders", True)
        client.add_partition(partition(client, "shop@dev", "orders", "2024-01-02"))
    api.commit("prod", "orders dropped")
    api.commit("dev", "a partition of orders")
    with pytest.raises(ApiException) as refused:
        api.merge("dev", "prod")
    body = str(refused.value.body)
    assert "pre-merge hook aborted" in body, body
    run_id = body.split("run id '", 1)[1].split("'", 1)[0]
    output = api.hook_output(run_id)
    assert "shop.orders" in output and "HookRefused" in output, output
    with connect(server) as client:
        assert client.get_all_tables("shop@prod") == []  # prod did not move


def test_a_branch_with_changes_of_its_own_gets_no_action_and_loses_nothing(tmp_path):
    """The action's commit would take whatever the branch has uncommitted: a file a user
    uploaded is not the server's to commit. The server serves at once, waits a moment (other
    servers' start-up writes settle so), then says in one line that it did not install."""
    real = real_lakefs()
    repo = new_repository("dirty")
    client = real.sdk()
    api = LakeFSApi(client, repo)
    upload = tmp_path / "orders.csv"
    upload.write_bytes(b"1,a\n")
    api.objects.upload_object(repo, "main", "raw/orders.csv", content=str(upload))
    env = dict(os.environ, **real.env(), PYTHONPATH=str(REPO_ROOT))
    server = start_proxy(tmp_path, "--http-port", "0", "--lakefs-hooks", "self",
                         store=f"lakefs://{repo}", warehouse=False, env=env)
    try:
        with connect(server) as hms:
            assert hms.get_all_databases() == ["default"]
        wait_until(lambda: "--lakefs-hooks: not installed" in server.log_text(),
                   what="the server says it did not install")
        assert "uncommitted changes" in server.log_text()
        assert api.paths("main", "_lakefs_actions/") == []
        assert api.paths("main", "raw/") == ["raw/orders.csv"]
        # nothing committed on the user's behalf, nor with the default database
        assert api.paths("main@", "raw/") == []
        assert [c.message for c in api.refs.log_commits(repo, "main").results] == \
            ["Repository created"]
    finally:
        server.stop()
        client.close()
