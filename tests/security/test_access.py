"""Access control against real server processes: identities from set_ugi (and a shared secret),
per-branch rules reached through ``db@branch`` names, read-only listeners, protected branches,
the refusals' MetaException messages and the audit log."""
from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager

import pytest
from thrift.Thrift import TApplicationException

from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.tools.metastores import free_port
from kvmodel.store import open_store
from tests.support.client import connect
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy

RULES = {
    "groups": {"data-eng": ["carol"]},
    "rules": [
        {"branches": "main", "read": ["*"], "write": ["alice", "dave", "@data-eng"]},
        {"branches": "release-*", "read": ["*"], "protected": True},
        {"branches": "secret", "read": ["alice"], "write": ["alice"]},
        {"branches": ["dev", "dev-*"], "read": ["*"], "write": ["*"]},
        {"branches": "prod", "read": ["*"], "write": ["*"]},
    ],
}


class Server:
    def __init__(self, proc, store, audit, ro_port):
        self.proc, self.store, self.audit, self.ro_port = proc, store, audit, ro_port

    @contextmanager
    def client(self, user=None, groups=(), port=None):
        target = self.proc if port is None else _At(self.proc.host, port)
        with connect(target) as client:
            if user is not None:
                client.set_ugi(user, list(groups))
            yield client

    def audit_entries(self) -> list[dict]:
        return [json.loads(line) for line in self.audit.read_text().splitlines()]


class _At:
    def __init__(self, host, port):
        self.host, self.port = host, port


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("access")
    store_path = workdir / "store"
    store = open_store(store_path)  # branches first: the read-only listener serves dev
    for name in ("dev", "dev-bob", "secret", "prod", "release-1"):
        store.create_branch(name, "main")
    store.set_branch_protection("prod", True)
    store.create_tag("v1", "main")
    store.close()
    rules = workdir / "rules.json"
    rules.write_text(json.dumps(RULES))
    secrets = workdir / "secrets.json"
    secrets.write_text(json.dumps({"dave": "d4ve-pw"}))
    audit = workdir / "audit.log"
    ro_port = free_port()
    proc = start_proxy(workdir, "--access-rules", str(rules), "--auth-secrets", str(secrets),
                       "--audit-log", str(audit), "--bind", f"{ro_port}=dev:ro",
                       store=store_path)
    yield Server(proc, store_path, audit, ro_port)
    proc.stop()


def _db(name: str) -> ttypes.Database:
    return ttypes.Database(name=name, description=None, locationUri=None, parameters={})


def _denied(exc_info) -> str:
    return exc_info.value.message


def test_writes_follow_the_rules(server):
    with server.client("bob") as bob:
        with pytest.raises(ttypes.MetaException) as info:
            bob.create_database(_db("bobs"))
        assert _denied(info) == ("access denied: user 'bob' may not write branch 'main' "
                                 "(rule 1: main write=[alice, dave, @data-eng])")
        assert "bobs" not in bob.get_all_databases()  # reads of main: anyone
        bob.create_database(_db("bobs@dev-bob"))  # dev-*: anyone writes
        assert bob.get_database("bobs@dev-bob").name == "bobs@dev-bob"
    with server.client("alice") as alice:
        alice.create_database(_db("shop"))
    with server.client("carol") as carol:  # data-eng by the rules file
        carol.create_database(_db("carols"))
    with server.client("erin", ["data-eng"]) as erin:  # data-eng by set_ugi (trusted)
        erin.create_database(_db("erins"))
    with server.client() as anonymous:
        with pytest.raises(ttypes.MetaException, match="anonymous caller .* may not write"):
            anonymous.create_database(_db("anon"))


def test_reads_follow_the_rules(server):
    with server.client("alice") as alice:
        alice.create_database(_db("hidden@secret"))
        assert alice.get_database("hidden@secret").name == "hidden@secret"
    with server.client("bob") as bob:
        with pytest.raises(ttypes.MetaException) as info:
            bob.get_database("hidden@secret")
        assert _denied(info) == ("access denied: user 'bob' may not read branch 'secret' "
                                 "(rule 3: secret read=[alice] write=[alice])")
        with pytest.raises(ttypes.MetaException) as info:  # a tag no rule covers
            bob.get_database("default@v1")
        assert "no rule of" in _denied(info) and "covers branch 'v1'" in _denied(info)
        with pytest.raises(ttypes.MetaException, match="may not read branch 'secret'"):
            bob.get_all_tables("hidden@secret")


def test_protected_branches(server):
    with server.client("alice") as alice:
        with pytest.raises(ttypes.MetaException) as info:
            alice.create_database(_db("r@release-1"))
        assert _denied(info) == ("access denied: branch 'release-1' is writable only by merge "
                                 "(rule 2: release-* protected)")
        # protected in the store (hms-proxy branch protect): the rules allow, the store refuses
        with pytest.raises(ttypes.MetaException, match="Branch 'prod' is protected"):
            alice.create_database(_db("p@prod"))


def test_read_only_listener(server):
    with server.client("alice", port=server.ro_port) as alice:
        alice.get_all_databases()  # reads are served
        for name in ("x", "x@dev-bob"):  # its own ref, or any other: no writes at all
            with pytest.raises(ttypes.MetaException) as info:
                alice.create_database(_db(name))
            assert _denied(info) == (f"access denied: listener 127.0.0.1:{server.ro_port} "
                                     f"is read-only (create_database writes)")
        with pytest.raises(TApplicationException, match="is read-only"):  # no MetaException
            alice.open_txns(ttypes.OpenTxnRequest(num_txns=1, user="alice", hostname="h"))


def test_methods_without_metaexception_are_refused_too(server):
    request = ttypes.OpenTxnRequest(num_txns=1, user="x", hostname="h")
    with server.client("bob") as bob:
        with pytest.raises(TApplicationException) as info:
            bob.open_txns(request)
        assert "access denied: user 'bob' may not write branch 'main'" in str(info.value)
        bob.get_open_txns()  # a read
        lock = ttypes.LockRequest(component=[ttypes.LockComponent(
            type=ttypes.LockType.SHARED_READ, level=ttypes.LockLevel.DB, dbname="default")],
            user="bob", hostname="h")
        response = bob.lock(lock)  # shared-read locks are reads
        bob.unlock(ttypes.UnlockRequest(lockid=response.lockid))
    with server.client("alice") as alice:
        assert alice.open_txns(request).txn_ids


def test_shared_secret(server):
    with server.client() as dave:
        with pytest.raises(ttypes.MetaException, match="user 'dave' presented no secret"):
            dave.set_ugi("dave", ["staff"])
        with pytest.raises(ttypes.MetaException, match="anonymous caller"):
            dave.create_database(_db("daves"))
    with server.client() as dave:
        with pytest.raises(ttypes.MetaException, match="presented a wrong secret"):
            dave.set_ugi("dave", ["secret:guess"])
    with server.client() as dave:
        assert dave.set_ugi("dave", ["staff", "secret:d4ve-pw"]) == ["staff"]
        dave.create_database(_db("daves"))


def test_audit_log(server):
    with server.client("alice") as alice:
        alice.create_database(_db("audited"))
        with pytest.raises(ttypes.AlreadyExistsException):
            alice.create_database(_db("audited"))
    with server.client("bob") as bob:
        with pytest.raises(ttypes.MetaException):
            bob.drop_database("audited", True, True)
    entries = server.audit_entries()
    mine = [e for e in entries if e["object"] == "audited"]
    assert [(e["identity"], e["method"], e["outcome"]) for e in mine] == [
        ("alice", "create_database", "ok"), ("alice", "create_database", "error"),
        ("bob", "drop_database", "denied")]
    ok, error, denied = mine
    assert ok["auth"] == "ugi" and ok["user"] == "alice" and ok["ref"] == "main"
    assert ok["listener"] == f"127.0.0.1:{server.proc.port}"
    assert ok["peer"].startswith("127.0.0.1:") and ok["time"].endswith("Z")
    assert error["error"].startswith("AlreadyExistsException: ")
    assert denied["error"].startswith("access denied: user 'bob' may not write branch 'main'")
    assert not any(e["method"].startswith("get_") and e["outcome"] == "ok" for e in entries)
    # refusals of every kind are there, qualified writes under their branch
    assert any(e["method"] == "set_ugi" and e["outcome"] == "denied"
               and e["object"] == "user dave" for e in entries)
    assert any(e["ref"] == "dev-bob" and e["outcome"] == "ok" for e in entries)
    assert any(e["ref"] == "secret" and e["outcome"] == "denied" for e in entries)
    dave = [e for e in entries if e["identity"] == "dave" and e["outcome"] == "ok"]
    assert dave and all(e["auth"] == "secret" for e in dave)
    assert "d4ve-pw" not in server.audit.read_text()


def test_commit_records_the_writers(server):
    """Staged writes: ``hms-proxy commit --audit-log`` records who wrote since the last
    commit, by the audit log, and ``show`` prints it."""
    with server.client("bob") as bob:
        bob.create_database(_db("w1@dev-bob"))
    with server.client("carol") as carol:
        carol.create_database(_db("w2@dev-bob"))
    cli = [sys.executable, "-m", "hms_proxy.cli"]
    result = subprocess.run(cli + ["commit", "dev-bob", "-m", "staged work", "--store",
                                   str(server.store), "--audit-log", str(server.audit),
                                   "--json"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    commit = json.loads(result.stdout)["commit"]
    assert commit["metadata"]["writers"] == "bob,carol"
    show = subprocess.run(cli + ["show", commit["id"], "--store", str(server.store)],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert "writers=bob,carol" in show.stdout


def test_read_only_server(tmp_path):
    proc = start_proxy(tmp_path, "--read-only")
    try:
        with connect(proc) as client:
            client.set_ugi("alice", [])
            assert client.get_all_databases() == ["default"]
            with pytest.raises(ttypes.MetaException, match="is read-only"):
                client.create_database(_db("nope"))
            assert client.get_all_databases() == ["default"]
    finally:
        proc.stop()
