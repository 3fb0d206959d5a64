"""``hms-proxy serve --store lakefs://REPO``: the server over the lakeFS backend, driven over
Thrift, against the real lakeFS of the test session (:mod:`tests.support.lakefs`, built from
lakeFS's Go module); lakeFS calls are counted by lakeFS itself (its Prometheus metrics).

Checked here: the catalog lands as objects under ``_hms/`` of the repository; locations under
the repository are stored ref-free and rendered for the ref served (a table created on dev
points at dev's data on dev and at main's once merged); a branch written over Thrift,
committed and merged with the command line moves catalog and data together in one lakeFS
merge; listing 10,000 partitions costs listing pages, not 10,000 object reads; the CLI works
against the same repository.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import lakefs_sdk  # noqa: F401
import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from kvmodel import catalog as K  # noqa: E402
from kvmodel import codec  # noqa: E402
from kvmodel.locations import RefLocations  # noqa: E402
from kvmodel.store.lakefs import LakeFSStore  # noqa: E402
from tests.support.client import connect, wait_served  # noqa: E402
from tests.support.lakefs import new_repository, real_lakefs  # noqa: E402
from tests.support.process import REPO_ROOT  # noqa: E402
from tests.support.proxy import start_proxy  # noqa: E402

REPO = "lake"  # the module's repository: set by the fixture to a fresh one
PARTITIONS = 10_000


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    global REPO
    work = tmp_path_factory.mktemp("lakefs-server")
    server_lakefs = real_lakefs()
    REPO = new_repository("lake")
    env = dict(os.environ, **server_lakefs.env(), PYTHONPATH=str(REPO_ROOT))
    # refresh=0: the test reads what other processes (the server, the CLI) did at once
    store = LakeFSStore(REPO, server_lakefs.config(), refresh=0)
    store.create_branch("dev", "main")
    server = start_proxy(work, "--bind", "0=dev", store=f"lakefs://{REPO}", warehouse=False,
                         env=env)
    try:
        yield {"lakefs": server_lakefs, "env": env, "store": store, "server": server,
               "work": work}
    finally:
        server.stop()
        store.close()


def cli(lake, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args,
                           "--store", f"lakefs://{REPO}"], cwd=REPO_ROOT, env=lake["env"],
                          capture_output=True, text=True, timeout=120)


def sd(location, cols=(("id", "bigint"), ("v", "string"))):
    return T.StorageDescriptor(
        cols=[T.FieldSchema(n, t, None) for n, t in cols], location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde."
                                    "ParquetHiveSerDe", {}),
        bucketCols=[], sortCols=[], parameters={})


def raw(lake, ref, key):
    return lake["store"].get(ref, key)


def test_databases_default_to_the_repository_warehouse_at_the_ref(lake):
    with connect(lake["server"]) as client:
        client.create_database(T.Database("sales", "", None, {}))
        db = client.get_database("sales")
        assert db.locationUri == f"s3a://{REPO}/main/warehouse/sales.db"
    stored = codec.decode(T.Database, raw(lake, "main", K.db_key("sales")))
    assert stored.locationUri == f"lakefs://{REPO}/@/warehouse/sales.db"
    store = lake["store"]
    # uncommitted: one live entry of the branch's write log; committed: the object
    # _hms/db/sales, the log folded
    paths = [o.path for o in store.api.objects.list_objects(REPO, "main", prefix="_hms").results]
    assert "_hms/db/sales" not in paths, paths
    plan, contents = store._read_log("main")
    assert [list(contents[o.cache_key]) for o in plan.live] == [[K.db_key("sales")]]
    assert plan.live[0].path.startswith("_hms_log/main/")
    store.commit("main", "sales")
    assert store.api.objects.stat_object(REPO, "main", "_hms/db/sales").path == "_hms/db/sales"
    assert store._read_log("main")[0].live == []


def test_locations_follow_the_ref_through_a_merge(lake):
    store = lake["store"]
    with connect(lake["server"]) as client:
        client.create_database(T.Database("shop", "", f"s3a://{REPO}/main/shop", {}))
    store.commit("main", "shop")
    store.delete_branch("dev")
    store.create_branch("dev", "main")
    # another process's change: the server sees dev moved to main's commit within its bound
    def dev_has_shop(client):
        try:
            return client.get_database("shop@dev") is not None
        except (T.NoSuchObjectException, T.MetaException):  # not yet, or dev just deleted
            return False
    wait_served(lake["server"], dev_has_shop, what="the server sees dev recreated from main")
    dev_loc = f"s3a://{REPO}/dev/shop/orders"
    with connect(lake["server"]) as client:
        client.create_table(T.Table(
            "orders", "shop@dev", "ann", 0, 0, 0, sd(dev_loc),
            [T.FieldSchema("ds", "string", None)], {}, None, None, "EXTERNAL_TABLE"))
        tbl = client.get_table("shop@dev", "orders")
        assert tbl.sd.location == dev_loc
        part = T.Partition(["2024-01-01"], "shop@dev", "orders", 0, 0,
                           sd(f"{dev_loc}/ds=2024-01-01"), {})
        client.add_partition(part)
        assert client.get_partition("shop@dev", "orders", ["2024-01-01"]).sd.location == \
            f"{dev_loc}/ds=2024-01-01"
        with pytest.raises(T.NoSuchObjectException):
            client.get_table("shop", "orders")  # main does not have it
    stored = codec.decode(T.Table, raw(lake, "dev", K.table_key("shop", "orders")))
    assert stored.sd.location == f"lakefs://{REPO}/@/shop/orders"
    # data written on dev beside the catalog (what Spark would upload through the gateway)
    store.api.upload("dev", "shop/orders/ds=2024-01-01/part-0.parquet", b"PAR1...PAR1")
    done = cli(lake, "commit", "dev", "-m", "orders on dev")
    assert done.returncode == 0, done.stderr
    done = cli(lake, "merge", "dev", "main")
    assert done.returncode == 0, done.stdout + done.stderr
    # the CLI's merge, like any other process's change, is seen within the server's bound
    wait_served(lake["server"], lambda c: "orders" in c.get_all_tables("shop"),
                what="the server sees the merge on main")
    with connect(lake["server"]) as client:
        tbl = client.get_table("shop", "orders")
        assert tbl.sd.location == f"s3a://{REPO}/main/shop/orders"
        part = client.get_partition("shop", "orders", ["2024-01-01"])
        assert part.sd.location == f"s3a://{REPO}/main/shop/orders/ds=2024-01-01"
        assert client.get_table("shop@dev", "orders").sd.location == dev_loc
    # one lakeFS merge moved the catalog and the data: the data file is on main now
    data = store.api.objects.get_object(REPO, "main", "shop/orders/ds=2024-01-01/part-0.parquet")
    assert bytes(data) == b"PAR1...PAR1"
    head = store.get_commit(store.resolve("main").commit)
    assert len(head.parents) == 2  # a lakeFS merge commit


def test_locations_elsewhere_are_stored_as_given(lake):
    with connect(lake["server"]) as client:
        client.create_database(T.Database("ext", "", "s3a://other-bucket/ext", {}))
        client.create_table(T.Table(
            "t", "ext", "ann", 0, 0, 0, sd(f"s3a://{REPO}/v1.0/frozen/t"), [], {}, None, None,
            "EXTERNAL_TABLE"))
        assert client.get_database("ext").locationUri == "s3a://other-bucket/ext"
        assert client.get_table("ext", "t").sd.location == f"s3a://{REPO}/v1.0/frozen/t"


def test_add_partitions_makes_the_missing_directories_only(lake):
    """A managed table's add_partitions on lakeFS: each new partition without a directory gets
    a marker (as the stock HMS makes the directory), one that has files keeps them and gets
    none, whether its name sorts first, last or between."""
    base = "warehouse/dirs.db/t"
    store = lake["store"]
    for day in ("a", "c", "e"):  # files there already: Spark wrote them first
        store.api.upload("main", f"{base}/ds={day}/part-0.parquet", b"PAR1")
    with connect(lake["server"]) as client:
        client.create_database(T.Database("dirs", "", f"s3a://{REPO}/main/warehouse/dirs.db",
                                          {}))
        client.create_table(T.Table("t", "dirs", "ann", 0, 0, 0, sd(f"s3a://{REPO}/main/{base}"),
                                    [T.FieldSchema("ds", "string", None)], {}, None, None,
                                    "MANAGED_TABLE"))
        client.add_partitions([T.Partition([day], "dirs", "t", 0, 0, sd(None), {})
                               for day in ("a", "b", "c", "d", "e", "f")])
        assert client.get_partition_names("dirs", "t", -1) == [
            f"ds={d}" for d in "abcdef"]
    objects = {path for path, _ in store.data_objects("main", base)}
    assert objects == {f"{base}/ds={d}/part-0.parquet" for d in "ace"} | {
        f"{base}/ds={d}/" for d in "bdf"}


def test_add_partition_answers_with_its_marker_there(lake):
    """One add_partition: its directory marker is uploaded beside the write's log entry (not
    under the branch's lock), and the call is answered only once both are in lakeFS."""
    base = "warehouse/one.db/t"
    store = lake["store"]
    with connect(lake["server"]) as client:
        client.create_database(T.Database("one", "", f"s3a://{REPO}/main/warehouse/one.db", {}))
        client.create_table(T.Table("t", "one", "ann", 0, 0, 0, sd(f"s3a://{REPO}/main/{base}"),
                                    [T.FieldSchema("ds", "string", None)], {}, None, None,
                                    "MANAGED_TABLE"))
        for day in ("a", "b", "c"):
            client.add_partition(T.Partition([day], "one", "t", 0, 0, sd(None), {}))
            assert f"{base}/ds={day}/" in {p for p, _ in store.data_objects("main", base)}


def test_add_partition_over_files_already_there_makes_no_marker(lake):
    """Spark writes a partition's files, then adds the partition: the directory is looked at
    before the write takes the branch's lock (warehouse.known_directories), and a directory
    with files gets no marker, by add_partition, append_partition and add_partitions alike,
    while a directory with nothing gets one."""
    base = "warehouse/ahead.db/t"
    store = lake["store"]
    for day in ("a", "c", "e"):
        store.api.upload("main", f"{base}/ds={day}/part-0.parquet", b"PAR1")
    with connect(lake["server"]) as client:
        client.create_database(T.Database("ahead", "", f"s3a://{REPO}/main/warehouse/ahead.db",
                                          {}))
        client.create_table(T.Table("t", "ahead", "ann", 0, 0, 0, sd(f"s3a://{REPO}/main/{base}"),
                                    [T.FieldSchema("ds", "string", None)], {}, None, None,
                                    "MANAGED_TABLE"))
        client.add_partition(T.Partition(["a"], "ahead", "t", 0, 0, sd(None), {}))
        client.add_partition(T.Partition(["b"], "ahead", "t", 0, 0, sd(None), {}))
        client.append_partition("ahead", "t", ["c"])
        client.append_partition("ahead", "t", ["d"])
        client.add_partitions([T.Partition([day], "ahead", "t", 0, 0, sd(None), {})
                               for day in ("e", "f")])
        with pytest.raises(T.AlreadyExistsException):
            client.add_partition(T.Partition(["a"], "ahead", "t", 0, 0, sd(None), {}))
        assert client.get_partition_names("ahead", "t", -1) == [f"ds={d}" for d in "abcdef"]
    objects = {path for path, _ in store.data_objects("main", base)}
    assert objects == {f"{base}/ds={d}/part-0.parquet" for d in "ace"} | {
        f"{base}/ds={d}/" for d in "bdf"}


def test_ten_thousand_partitions_list_in_pages(lake, tmp_path):
    """get_partitions of 10,000 partitions reads listing pages (values inline in the objects'
    user metadata), not 10,000 objects; the warm listing comes from the caches. lakeFS counts
    the calls of every process, so the listing is measured in a repository of its own, through
    a server started after the partitions were written and committed: no other process reads
    that repository meanwhile, and no refresh of the server's began before the commit (one
    would read the fold's staged objects). The server's own background refreshes (each one
    ListObjects of its log, one DiffBranch, one GetBranch) are told apart by their
    DiffBranch."""
    real = lake["lakefs"]
    repo = new_repository("big")
    url = f"lakefs://{repo}"
    writer = start_proxy(tmp_path / "writer", store=url, warehouse=False, env=lake["env"])
    try:
        with connect(writer) as client:
            client.create_database(T.Database("big", "", None, {}))
            client.create_table(T.Table(
                "events", "big", "ann", 0, 0, 0, sd(None),
                [T.FieldSchema("ds", "string", None)], {}, None, None, "MANAGED_TABLE"))
            table = client.get_table("big", "events")
            for start in range(0, PARTITIONS, 1000):
                client.add_partitions([
                    T.Partition([f"d{i:05d}"], "big", "events", 0, 0,
                                sd(f"{table.sd.location}/ds=d{i:05d}"), {})
                    for i in range(start, start + 1000)])
    finally:
        writer.stop()
    committer = LakeFSStore(repo, real.config(), refresh=0)  # no background refreshes
    try:
        committer.commit("main", "10,000 partitions")
    finally:
        committer.close()
    server = start_proxy(tmp_path / "reader", store=url, warehouse=False, env=lake["env"])
    try:
        with connect(server) as client:
            before = real.api_calls()
            started = time.perf_counter()
            parts = client.get_partitions("big", "events", -1)
            cold = time.perf_counter() - started
            calls = real.api_calls() - before
            assert len(parts) == PARTITIONS
            assert parts[0].sd.location == f"{table.sd.location}/ds=d00000"
            assert table.sd.location.startswith(f"s3a://{repo}/main/warehouse/big.db/")
            refreshes = calls.get("DiffBranch", 0)
            listing = calls.get("ListObjects", 0) - refreshes
            reads = calls.get("GetObject", 0) + calls.get("StatObject", 0)
            assert listing <= PARTITIONS // 1000 + 3, calls
            assert reads <= 5, calls  # the table and a few keys, not the partitions
            before = real.api_calls()
            started = time.perf_counter()
            again = client.get_partitions("big", "events", -1)
            warm = time.perf_counter() - started
            assert len(again) == PARTITIONS
            warm_calls = real.api_calls() - before
            # nothing but background refreshes (one may straddle each of the counts' two
            # edges): the listing is served from memory
            refreshes = warm_calls.get("DiffBranch", 0)
            assert set(warm_calls) <= {"DiffBranch", "GetBranch", "ListObjects"}, warm_calls
            assert abs(warm_calls.get("ListObjects", 0) - refreshes) <= 2, warm_calls
            assert abs(warm_calls.get("GetBranch", 0) - refreshes) <= 2, warm_calls
    finally:
        server.stop()
    print(f"get_partitions({PARTITIONS}) over a real local lakeFS: cold {cold:.2f} s, "
          f"warm {warm:.2f} s")


def test_cli_log_branch_and_diff_against_lakefs(lake):
    """The CLI over the repository the server writes: log shows a commit made here, a branch
    made by the CLI is the server's to write, and diff shows what was written on it."""
    assert cli(lake, "branch", "create", "logged", "--from", "main").returncode == 0
    with connect(lake["server"]) as client:
        client.create_database(T.Database("logdb@logged", "", None, {}))
    done = cli(lake, "commit", "logged", "-m", "logdb, to be found in the log")
    assert done.returncode == 0, done.stderr
    done = cli(lake, "log", "logged", "--json")
    assert done.returncode == 0, done.stderr
    newest = json.loads(done.stdout)[0]
    assert newest["message"] == "logdb, to be found in the log", newest
    assert newest["id"] == lake["store"].resolve("logged").commit
    assert cli(lake, "branch", "create", "review", "--from", "logged").returncode == 0
    with connect(lake["server"]) as client:
        client.create_database(T.Database("reviewed@review", "", None, {}))
    done = cli(lake, "diff", "logged", "review", "--json")
    assert done.returncode == 0, done.stderr
    changes = [(c["kind"], c["path"], c["change"]) for c in json.loads(done.stdout)["changes"]]
    assert changes == [("database", ["reviewed"], "added")], changes
    human = cli(lake, "diff", "logged", "review")
    assert human.returncode == 0 and "reviewed" in human.stdout, human.stdout + human.stderr


def test_ref_locations_round_trip():
    loc = RefLocations("repo")
    for scheme in ("s3a", "s3", "lakefs"):
        canon = loc.canonical_location(f"{scheme}://repo/dev/wh/t", "dev")
        assert canon == "lakefs://repo/@/wh/t"
        assert RefLocations("repo", scheme).render_location(canon, "main") == \
            f"{scheme}://repo/main/wh/t"
    assert loc.canonical_location("s3a://repo/dev", "dev") == "lakefs://repo/@/"
    assert loc.canonical_location("s3a://repo/devx/t", "dev") == "s3a://repo/devx/t"
    assert loc.canonical_location("s3a://repo/main/t", "dev") == "s3a://repo/main/t"
    assert loc.canonical_location("s3a://repository/dev/t", "dev") == "s3a://repository/dev/t"
    value = codec.encode(T.Database("d", "", "s3a://repo/dev/d.db", {}))
    stored = loc.canonical("db/d", value, "dev")
    assert codec.decode(T.Database, stored).locationUri == "lakefs://repo/@/d.db"
    assert codec.decode(T.Database, loc.render("db/d", stored, "abc123")).locationUri == \
        "s3a://repo/abc123/d.db"
    assert loc.canonical("db/d/fn/f", b"s3a://repo/dev/x", "dev") == b"s3a://repo/dev/x"
    # a Spark data source table (USING parquet): its "path" serde parameter follows the ref
    table = T.Table("t", "d", "", 0, 0, 0, T.StorageDescriptor(
        [], "s3a://repo/dev/wh/t", None, None, False, -1,
        T.SerDeInfo(None, "x", {"path": "s3a://repo/dev/wh/t", "serialization.format": "1"}),
        [], [], {}), [], {}, None, None, "MANAGED_TABLE")
    stored = loc.canonical("db/d/table/t", codec.encode(table), "dev")
    assert codec.decode(T.Table, stored).sd.serdeInfo.parameters["path"] == \
        "lakefs://repo/@/wh/t"
    shown = codec.decode(T.Table, loc.render("db/d/table/t", stored, "main"))
    assert shown.sd.location == shown.sd.serdeInfo.parameters["path"] == "s3a://repo/main/wh/t"
    assert shown.sd.serdeInfo.parameters["serialization.format"] == "1"
    pointer = b'{"commit":"c","set":"s3a://repo/dev/t/_stats/_/1"}'
    assert loc.canonical("db/d/table/t/stats/_", pointer, "dev") == \
        b'{"commit":"c","set":"lakefs://repo/@/t/_stats/_/1"}'


def test_autocommit_commits_each_write_on_lakefs(lake, tmp_path):
    """``--autocommit`` over lakeFS: each Thrift write is one lakeFS commit, its author the
    set_ugi user (the write's objects are uploaded when its transaction ends, then
    committed)."""
    store = lake["store"]
    store.create_branch("auto", "main")
    server = start_proxy(tmp_path, "--autocommit", "--ref", "auto", store=f"lakefs://{REPO}",
                         warehouse=False, env=lake["env"])
    try:
        head = store.resolve("auto").commit
        with connect(server) as client:
            client.set_ugi("erin", [])
            client.create_database(T.Database("autodb", "", None, {}))
        commit = next(iter(store.log("auto", limit=1)))
        assert commit.parents == (head,) and commit.author == "erin"
        assert commit.message == "create_database autodb"
        assert list(store.staged("auto")) == []
        assert store.get(commit.id, K.db_key("autodb")) is not None
    finally:
        server.stop()


def test_http_api_over_lakefs(lake, tmp_path):
    """``hms-proxy api --store lakefs://REPO``: refs are lakeFS's branches, a branch made
    through the API is a lakeFS branch, the contextual diff and the merge (dry run, then real:
    a lakeFS merge commit) work over the lakeFS backend; locations are shown at the ref."""
    from tests.support.http_api import ApiProcess, Client

    proc = ApiProcess(tmp_path / "api", f"lakefs://{REPO}", env=lake["env"])
    try:
        api = Client(proc.base)
        refs = api.get("/refs").body
        assert {"main", "dev"} <= {b["name"] for b in refs["branches"]}
        made = api.post("/branches", {"name": "web", "from": "main"})
        assert made.status == 201, made.body
        assert lake["store"].resolve("web").commit == lake["store"].resolve("main").commit
        # the destination: a branch of main's commit (main may hold staged changes of the
        # module's other tests, and lakeFS merges only into a clean branch)
        assert api.post("/branches", {"name": "site", "from": "main"}).status == 201
        with connect(lake["server"]) as client:
            client.create_database(T.Database("webshop@web", "", f"s3a://{REPO}/web/webshop",
                                              {}))
            client.create_table(T.Table(
                "visits", "webshop@web", "ann", 0, 0, 0, sd(f"s3a://{REPO}/web/webshop/visits"),
                [T.FieldSchema("ds", "string", None)], {}, None, None, "EXTERNAL_TABLE"))
            for day in ("2024-01-01", "2024-01-02"):
                client.add_partition(T.Partition(
                    [day], "webshop@web", "visits", 0, 0,
                    sd(f"s3a://{REPO}/web/webshop/visits/ds={day}"), {}))
        done = cli(lake, "commit", "web", "-m", "webshop.visits")
        assert done.returncode == 0, done.stderr
        diff = api.get("/diff", left="main", right="web").body
        groups = {(g["db"], g["table"]): g for g in diff["groups"]}
        visits = groups[("webshop", "visits")]
        assert visits["changes"][0]["change"] == "added"
        assert diff["totals"]["partition"]["added"] == 2
        preview = api.post("/merge", {"source": "web", "dest": "site", "dry_run": True}).body
        assert "mergeable" in preview, preview
        assert preview["mergeable"] is True and preview["conflicts_total"] == 0
        merged = api.post("/merge", {"source": "web", "dest": "site", "message": "web into site"})
        assert merged.status == 200, merged.body
        assert len(merged.body["commit"]["parents"]) == 2
        head = lake["store"].get_commit(lake["store"].resolve("site").commit)
        assert len(head.parents) == 2  # lakeFS's own merge commit
        table = api.get("/databases/webshop/tables/visits", ref="site").body
        assert table["partition_count"] == 2
        assert table["location"] == f"s3a://{REPO}/site/webshop/visits"  # rendered for the ref
        assert api.get("/commits", ref="site").body["commits"][0]["message"] == "web into site"
    finally:
        proc.stop()


def test_processes_over_one_branch_read_their_writes_on_any_connection(lake, tmp_path):
    """serve --processes 2: connections land on either worker; each worker announces its
    writes in the shared Redis, so a write through one worker is read at once through the
    other (without the announcements about a quarter of the reads missed it, within the 1 s
    bound), and through new connections, whichever worker answers them. The module's server,
    started first and writing main, owns the branch: the workers hand it their writes, and it
    announces them in a Redis that is not theirs, so the worker that handed one announces it
    in theirs (without that, reads through the other worker missed it)."""
    from contextlib import ExitStack

    from tests.support.lakefs import log_writers, peer_id
    from tests.support.workers import clients_on_each_worker

    with connect(lake["server"]) as client:  # a writer of main now: its owner
        client.create_database(T.Database("mp_owner", "", None, {}))
    owner = peer_id(lake["server"])
    server = start_proxy(tmp_path / "mp", "--processes", "2", store=f"lakefs://{REPO}",
                         warehouse=False, env=lake["env"])
    try:
        with ExitStack() as stack:
            one, two = clients_on_each_worker(server, stack).values()
            for i in range(30):
                writer, reader = (one, two) if i % 2 else (two, one)
                writer.create_database(T.Database(f"mp{i}", "", None, {}))
                assert reader.get_database(f"mp{i}").name == f"mp{i}"  # the other worker
                with connect(server) as fresh:  # either worker
                    assert fresh.get_database(f"mp{i}").name == f"mp{i}"
        assert log_writers(lake["server"])[-30:] == [owner] * 30  # handed, made by the owner
    finally:
        server.stop()


def test_truncate_on_a_branch_deletes_the_branchs_files_only(lake):
    """Hive's TRUNCATE TABLE (``truncate_table``) on a lakeFS branch of main: the files of the
    table, or of the partition named, go from the branch (a marker keeps the directory), main
    keeps its files and its statistics."""
    base = "warehouse/trunc.db"
    store = lake["store"]
    for path in ("t/part-0.parquet", "p/ds=a/part-0.parquet", "p/ds=b/part-0.parquet"):
        store.api.upload("main", f"{base}/{path}", b"PAR1")
    with connect(lake["server"]) as client:
        client.create_database(T.Database("trunc", "", f"s3a://{REPO}/main/{base}", {}))
        client.create_table(T.Table("t", "trunc", "ann", 0, 0, 0, sd(None), [], {}, None, None,
                                    "MANAGED_TABLE"))
        client.create_table(T.Table("p", "trunc", "ann", 0, 0, 0, sd(None),
                                    [T.FieldSchema("ds", "string", None)], {}, None, None,
                                    "MANAGED_TABLE"))
        client.add_partitions([T.Partition([d], "trunc", "p", 0, 0, sd(None), {})
                               for d in "ab"])
    store.commit("main", "trunc with files")
    store.create_branch("trunc-dev", "main")

    def sees_branch(client):
        try:
            return "t" in client.get_all_tables("trunc@trunc-dev")
        except T.MetaException:
            return False
    wait_served(lake["server"], sees_branch, what="the server sees the new branch")
    with connect(lake["server"]) as client:
        client.truncate_table("trunc@trunc-dev", "t", None)
        client.truncate_table("trunc@trunc-dev", "p", ["ds=a"])
        emptied = '{"BASIC_STATS":"true"}'
        assert client.get_table("trunc@trunc-dev", "t").parameters[
            "COLUMN_STATS_ACCURATE"] == emptied
        assert client.get_partition("trunc@trunc-dev", "p", ["a"]).parameters[
            "COLUMN_STATS_ACCURATE"] == emptied
        assert "COLUMN_STATS_ACCURATE" not in client.get_table("trunc", "t").parameters
        assert "COLUMN_STATS_ACCURATE" not in client.get_partition(
            "trunc@trunc-dev", "p", ["b"]).parameters
    on_dev = {p for p, _ in store.data_objects("trunc-dev", base)}
    assert on_dev == {f"{base}/t/", f"{base}/p/ds=a/", f"{base}/p/ds=b/part-0.parquet"}
    on_main = {p for p, _ in store.data_objects("main", base)}
    assert {f"{base}/t/part-0.parquet", f"{base}/p/ds=a/part-0.parquet",
            f"{base}/p/ds=b/part-0.parquet"} <= on_main
