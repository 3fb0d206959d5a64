"""Several servers (separate processes) over one lakeFS repository agree on which write of a name
wins, as the stock HMS does through its database: a write is made in the branch's next log
slot, which lakeFS gives to one upload only (``If-None-Match``); a server whose write lost the
slot reads what the other wrote and decides again. No Redis here: lakeFS alone decides.
"""
from __future__ import annotations

import os
import threading
from collections import Counter

import lakefs_sdk  # noqa: F401
import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T  # noqa: E402
from tests.support.client import connect, wait_served
from kvmodel import lakefs_actions
from tests.support.lakefs import LakeFSApi, log_writers, new_repository, peer_id, real_lakefs
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy
from tests.support.wait import DEADLINE, wait_until

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def servers(tmp_path):
    real = real_lakefs()
    repo = new_repository("race")
    env = dict(os.environ, **real.env(), PYTHONPATH=str(REPO_ROOT))
    started = []
    try:
        for i in range(2):
            started.append(start_proxy(tmp_path / f"s{i}", store=f"lakefs://{repo}",
                                       warehouse=False, env=env))
        yield started
    finally:
        for server in started:
            server.stop()


def table(name: str, db: str = "race") -> T.Table:
    sd = T.StorageDescriptor(
        cols=[T.FieldSchema("id", "bigint", None)], location=None,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", {}),
        bucketCols=[], sortCols=[], parameters={})
    return T.Table(name, db, "ann", 0, 0, 0, sd, [], {}, None, None, "EXTERNAL_TABLE")


def in_threads(target, calls: list[tuple], stuck: str) -> None:
    """``target(*args)`` for each ``args`` of ``calls``, all at once, each in a thread of its
    own; returns when all have ended (AssertionError ``stuck`` if one never does)."""
    threads = [threading.Thread(target=target, args=args) for args in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE * 5)
    assert not any(t.is_alive() for t in threads), stuck


def run_clients(servers, work, clients_per_server: int = 2) -> tuple[Counter, list]:
    """Run ``work(client, i)`` for every i of its share, from clients_per_server threads per
    server; (outcomes counted by kind, unexpected errors)."""
    outcomes: Counter = Counter()
    errors: list = []
    lock = threading.Lock()

    def client_loop(server, share):
        try:
            with connect(server) as client:
                for i in share:
                    kind = work(client, i)
                    with lock:
                        outcomes[kind] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            with lock:
                errors.append(exc)

    n = len(servers) * clients_per_server
    in_threads(client_loop, [(servers[k % len(servers)], list(range(k, 100, n)))
                             for k in range(n)], "a client never finished")
    return outcomes, errors


def test_one_create_of_a_name_wins_across_servers(servers):
    with connect(servers[0]) as client:
        client.create_database(T.Database("race", "", None, {}))
    wait_served(servers[1], lambda c: "race" in c.get_all_databases(),
                what="the second server sees the database")

    def create(client, i):
        try:
            client.create_table(table(f"t{i % 10}"))
            return "created"
        except T.AlreadyExistsException:
            return "exists"

    outcomes, errors = run_clients(servers, create)
    assert errors == []
    assert outcomes == Counter(created=10, exists=90), outcomes
    for server in servers:
        wait_served(server, lambda c: sorted(c.get_all_tables("race")) ==
                    sorted(f"t{i}" for i in range(10)), what="every server sees the 10 tables")


def test_an_alter_racing_a_drop_never_brings_the_table_back(servers):
    with connect(servers[0]) as client:
        client.create_database(T.Database("race", "", None, {}))
        for i in range(5):
            client.create_table(table(f"t{i}"))
    wait_served(servers[1], lambda c: len(c.get_all_tables("race")) == 5,
                what="the second server sees the tables")

    def alter_or_drop(client, i):
        name = f"t{i % 5}"
        try:
            if i % 2:
                client.drop_table("race", name, True)
                return "dropped"
            t = client.get_table("race", name)
            t.parameters = {"touched": str(i)}
            client.alter_table("race", name, t)
            return "altered"
        except (T.NoSuchObjectException, T.InvalidOperationException):
            return "gone"

    outcomes, errors = run_clients(servers, alter_or_drop)
    assert errors == []
    assert outcomes["dropped"] == 5, outcomes  # each table dropped once, whoever did it
    for server in servers:
        wait_served(server, lambda c: c.get_all_tables("race") == [],
                    what="no table comes back on any server")


def start_together(count: int, repo: str, workdir, env, *extra_args: str) -> list:
    """``count`` servers over ``repo`` started at the same moment, as a deployment starts its
    replicas: every process is launched before any is waited for. The servers that came up
    (the caller stops them) and the failures of those that did not."""
    barrier = threading.Barrier(count)
    started, failed = [], []
    lock = threading.Lock()

    def one(i):
        barrier.wait()
        try:
            server = start_proxy(workdir / f"s{i}", *extra_args, store=f"lakefs://{repo}",
                                 warehouse=False, env=env)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            with lock:
                failed.append(f"server {i}: {exc}")
            return
        with lock:
            started.append(server)

    in_threads(one, [(i,) for i in range(count)], "a server never came up nor exited")
    return started, failed


def stop_together(servers: list) -> None:
    in_threads(lambda server: server.stop(), [(server,) for server in servers],
               "a server never stopped")


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_servers_started_together_over_a_fresh_repository_all_serve(tmp_path, processes):
    """Five servers started at once over a fresh repository, ten rounds: each one's own
    start-up writes (the default database, its directory marker) may lose the branch's next
    log slot to another's; it reads again, finds what the other made and serves, as a
    client's write does. With ``--processes 2`` each, ten workers start together (three
    rounds: twice the starts of a round race for the same slots)."""
    real = real_lakefs()
    env = dict(os.environ, **real.env(), PYTHONPATH=str(REPO_ROOT))
    extra = ("--processes", str(processes)) if processes > 1 else ()
    problems = []
    for round_ in range(10 if processes == 1 else 3):
        repo = new_repository("together")
        servers, failed = start_together(5, repo, tmp_path / f"round{round_}", env, *extra)
        try:
            problems += [f"round {round_}: {line}" for line in failed]
            for server in servers:
                with connect(server) as client:
                    dbs = client.get_all_databases()
                    if dbs != ["default"]:
                        problems.append(f"round {round_}: {server.name} lists {dbs}")
        finally:
            stop_together(servers)
        assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_servers_started_together_with_lakefs_hooks_all_install_the_action(tmp_path):
    """Five servers with ``--lakefs-hooks`` started at once over a fresh repository: each
    one's install meets the others' start-up writes and action uploads, uncommitted for a
    moment; none gives up, the branch's head holds one action naming one of them, and a lakeFS
    commit runs its hooks (the catalog folded into objects)."""
    real = real_lakefs()
    env = dict(os.environ, **real.env(), PYTHONPATH=str(REPO_ROOT))
    client = real.sdk()
    try:
        for round_ in range(5):
            repo = new_repository("hooks-together")
            servers, failed = start_together(5, repo, tmp_path / f"round{round_}", env,
                                             "--http-port", "0", "--lakefs-hooks", "self")
            try:
                assert failed == []
                for server in servers:
                    wait_until(lambda: "hms-proxy lakeFS hooks:" in server.log_text()
                               or "--lakefs-hooks: not installed" in server.log_text(),
                               what=f"{server.name} says what became of its install")
                    assert "not installed" not in server.log_text(), server.log_text()
                api = LakeFSApi(client, repo)
                action = bytes(api.objects.get_object(repo, "main@", lakefs_actions.ACTION_PATH))
                urls = {f"http://127.0.0.1:{s.announced_port('http')}" for s in servers}
                assert any(f'url: "{u}{lakefs_actions.HOOK_PATH}"' in action.decode()
                           for u in urls), action
                assert api.paths("main@", "_lakefs_actions/") == [lakefs_actions.ACTION_PATH]
                api.branch("etl")  # made after the install: lakeFS reads its actions afresh
                with connect(servers[round_ % 5]) as hms:
                    hms.create_database(T.Database("shop@etl", "", None, {}))
                commit = api.commit("etl")  # lakectl commit: prepare-commit folds the log
                assert "_hms/db/shop" in api.paths(commit, "_hms/")
            finally:
                stop_together(servers)
    finally:
        client.close()



def _partition(db: str, tbl: str, value: str) -> T.Partition:
    return T.Partition([value], db, tbl, 0, 0, table(tbl, db).sd, {})


def test_a_server_killed_while_the_other_hands_it_writes_loses_none_acknowledged(servers):
    """Two servers over one repository: the one with the larger peer id hands its writes of
    the branch to the other (the log's writer). Four clients of the handing server add
    partitions; the owner is killed (kill -9) among them. Every add_partition acknowledged
    before, during and after is in the catalog, the handing server goes on taking writes
    (making them itself), and a call that failed with the owner made nothing half."""
    owner, other = sorted(servers, key=peer_id)
    part_table = table("parts")
    part_table.partitionKeys = [T.FieldSchema("p", "string", None)]
    with connect(owner) as client:
        client.create_database(T.Database("race", "", None, {}))
        client.create_table(part_table)
        client.add_partition(_partition("race", "parts", "first"))
    wait_served(other, lambda c: "race" in c.get_all_databases() and
                "parts" in c.get_all_tables("race") and
                c.get_partition_names("race", "parts", -1) == ["p=first"],
                what="the handing server seeing the owner's writes")
    acked: list[str] = []
    failed: list[str] = []
    lock = threading.Lock()
    killed = threading.Event()
    enough_after = threading.Event()

    def writer(w):
        with connect(other) as client:
            for i in range(100_000):
                value = f"w{w}-{i}"
                try:
                    client.add_partition(_partition("race", "parts", value))
                except T.MetaException:
                    with lock:
                        failed.append(value)
                    continue
                with lock:
                    acked.append(value)
                    if killed.is_set():
                        after = sum(1 for v in acked if v not in before)
                        if after >= 40:
                            enough_after.set()
                if enough_after.is_set():
                    return

    before: set = set()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    wait_until(lambda: len(acked) >= 60, what="60 writes acknowledged before the kill")
    with lock:
        before.update(acked)
    owner_id, other_id = peer_id(owner), peer_id(other)
    writers = Counter(log_writers(other))
    assert writers[owner_id] >= 60 and writers[other_id] <= 2, writers  # handed, not taken
    owner.popen.kill()
    owner.popen.wait(30)
    killed.set()
    for t in threads:
        t.join(DEADLINE * 5)
    assert not any(t.is_alive() for t in threads), "a writer never finished"
    assert enough_after.is_set(), f"no writes after the kill ({len(acked)} in all)"
    with connect(other) as client:
        names = set(client.get_partition_names("race", "parts", -1))
    assert {f"p={v}" for v in acked} <= names, "an acknowledged write was lost"
    assert names <= {f"p={v}" for v in (*acked, *failed, "first")}
    assert len(failed) <= 4 * 2, failed  # at most the calls in flight at the kill
    # made there once the owner was gone: in entries of its own (the 40 writes after the kill
    # in fewer, as its four clients' writes group)
    assert Counter(log_writers(other))[other_id] > writers[other_id]
