"""hms_proxy.security.access without a server: the rules file, decisions, secrets, the classification of
every Thrift method, and ``serve`` refusing unusable files at start (exit 2)."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hms_proxy.security import access
from hms_proxy.security.access import READ, WRITE, ConfigError, Guard, Rules, Secrets
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.fb303 import FacebookService
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from hms_proxy.thrift.processor import CallContext, Processor
from tests.support.process import REPO_ROOT

RULES = {
    "groups": {"data-eng": ["carol"]},
    "rules": [
        {"branches": "main", "read": ["*"], "write": ["alice", "@data-eng"]},
        {"branches": ["release-*", "v*"], "read": ["*"], "protected": True},
        {"branches": "secret", "read": ["alice"], "write": ["bob"]},
        {"branches": "dev-*", "read": ["*"], "write": ["*"]},
    ],
}


@pytest.fixture
def rules():
    return Rules.parse(RULES, source="rules.json")


def test_first_matching_rule_decides(rules):
    assert rules.decide("alice", set(), "main", WRITE) is None
    assert rules.decide("bob", set(), "main", WRITE) == (
        "user 'bob' may not write branch 'main' (rule 1: main write=[alice, @data-eng])")
    assert rules.decide("carol", rules.groups_of("carol"), "main", WRITE) is None
    assert rules.decide("dave", {"data-eng"}, "main", WRITE) is None  # a group from set_ugi
    assert rules.decide(None, set(), "main", READ) is None  # "*": anonymous too
    assert rules.decide(None, set(), "dev-x", WRITE) is None


def test_reads_writers_and_anonymous(rules):
    assert rules.decide("alice", set(), "secret", READ) is None
    assert rules.decide("bob", set(), "secret", READ) is None  # writers may read
    assert rules.decide("carol", set(), "secret", READ) == (
        "user 'carol' may not read branch 'secret' (rule 3: secret read=[alice] write=[bob])")
    assert rules.decide(None, set(), "secret", READ).startswith(
        "anonymous caller (no identity) may not read branch 'secret'")


def test_protected_no_rule_and_ref_expressions(rules):
    assert rules.decide("alice", set(), "release-1", WRITE) == (
        "branch 'release-1' is writable only by merge (rule 2: release-*,v* protected)")
    assert rules.decide("alice", set(), "release-1", READ) is None
    assert rules.decide("alice", set(), "feature", READ) == \
        "no rule of rules.json covers branch 'feature'"
    assert rules.decide("carol", set(), "secret~2", READ) is not None  # by its branch
    assert rules.decide("bob", set(), "main~1", WRITE) is not None
    assert rules.decide("alice", set(), "3f2a9c1b0d4e", READ) is not None  # a commit: no rule


@pytest.mark.parametrize("data, message", [
    ([], "must hold a JSON object"),
    ({}, "'rules' must be a non-empty list"),
    ({"rules": []}, "'rules' must be a non-empty list"),
    ({"rules": [{"branches": "main"}], "extra": 1}, "unknown key 'extra'"),
    ({"rules": [{"branch": "main"}]}, "rule 1: unknown key 'branch'"),
    ({"rules": [{"read": ["*"]}]}, "rule 1: 'branches' must be"),
    ({"rules": [{"branches": "main", "read": "*", "write": [1]}]}, "rule 1: 'write' must be"),
    ({"rules": [{"branches": "main", "read": {"a": 1}}]}, "rule 1: 'read' must be"),
    ({"rules": [{"branches": "*", "protected": "yes"}]}, "'protected' must be true or false"),
    ({"rules": [{"branches": "*", "protected": True, "write": ["a"]}]}, "has no writers"),
    ({"rules": [{"branches": "*"}], "groups": {"g": "alice"}}, "group 'g'"),
    ({"rules": [{"branches": "*"}], "trust_set_ugi": "no"}, "'trust_set_ugi'"),
])
def test_bad_rules_are_named(data, message):
    with pytest.raises(ConfigError) as info:
        Rules.parse(data, source="r.json")
    assert str(info.value).startswith("--access-rules r.json: ")
    assert message in str(info.value)


def test_rules_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="No such file"):
        Rules.load(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{rules: [}")
    with pytest.raises(ConfigError, match="not valid JSON"):
        Rules.load(str(tmp_path / "bad.json"))


def test_secrets(tmp_path):
    path = tmp_path / "secrets.json"
    import hashlib

    path.write_text(json.dumps({"alice": "s3cret",
                                "bob": "sha256:" + hashlib.sha256(b"pw").hexdigest()}))
    secrets = Secrets.load(str(path))
    assert secrets.check("alice", ["x", "s3cret"]) and not secrets.check("alice", ["s3cre"])
    assert secrets.check("bob", ["pw"]) and not secrets.check("bob", [])
    for bad in ({"a": ""}, {"a": "x,y"}, {"a": "sha256:12"}, [], {}):
        path.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match="--auth-secrets"):
            Secrets.load(str(path))


# --- the guard with a fake call ---------------------------------------------------------------
class _Method:
    def __init__(self, name, meta=True):
        self.name = name
        self.exceptions = (("o1", ttypes.MetaException),) if meta else ()


def _set_ugi(guard, ctx, user, groups):
    def run():
        ctx.user, ctx.groups = user, list(args[1])
        return ctx.groups

    args = [user, groups]
    return guard.call(ctx, _Method("set_ugi"), args, run)


def test_guard_identity_from_set_ugi_and_secrets(rules):
    guard = Guard(rules, Secrets({"alice": "pw"}))
    ctx = CallContext()
    with pytest.raises(errors.MetaError, match="presented no secret"):  # a MetaException
        _set_ugi(guard, ctx, "alice", ["eng"])
    assert ctx.user is None and ctx.identity is None
    assert _set_ugi(guard, ctx, "alice", ["eng", "secret:pw"]) == ["eng"]  # never echoed
    assert (ctx.identity, ctx.auth) == ("alice", "secret")
    ctx = CallContext()
    _set_ugi(guard, ctx, "bob", ["data-eng"])
    assert (ctx.identity, ctx.auth) == ("bob", "ugi")
    assert guard.call(ctx, _Method("create_database"), [], lambda: "done") == "done"


def test_guard_distrusting_set_ugi_and_cert_identity():
    rules = Rules.parse(dict(RULES, trust_set_ugi=False))
    guard = Guard(rules)
    ctx = CallContext()
    _set_ugi(guard, ctx, "alice", [])
    assert ctx.identity is None and ctx.user == "alice"
    with pytest.raises(errors.MetaError, match="anonymous caller"):
        guard.call(ctx, _Method("create_database"), [], lambda: None)
    ctx = CallContext(identity="alice", auth="cert")  # as the TLS handshake leaves it
    _set_ugi(guard, ctx, "root", [])
    assert (ctx.identity, ctx.auth, ctx.user) == ("alice", "cert", "root")
    assert guard.call(ctx, _Method("create_database"), [], lambda: "ok") == "ok"


def test_guard_refuses_before_running_and_without_metaexception():
    from thrift.Thrift import TApplicationException

    guard = Guard(None)
    ctx = CallContext(read_only=True, listener="127.0.0.1:9084")
    ran = []
    with pytest.raises(errors.MetaError) as info:  # drop_table declares MetaException
        guard.call(ctx, _Method("drop_table"), [], lambda: ran.append(1))
    assert str(info.value.message) == \
        "access denied: listener 127.0.0.1:9084 is read-only (drop_table writes)"
    with pytest.raises(TApplicationException, match="read-only"):
        guard.call(ctx, _Method("open_txns", meta=False), [], lambda: ran.append(1))
    assert ran == []
    assert guard.call(ctx, _Method("get_table"), [], lambda: "t") == "t"
    with pytest.raises(errors.MetaError, match="read-only"):
        guard.check_write(ctx, "main")  # the store's write path asks too


def test_lock_is_a_read_when_it_only_reads():
    shared = ttypes.LockComponent(type=ttypes.LockType.SHARED_READ, level=1, dbname="d")
    excl = ttypes.LockComponent(type=ttypes.LockType.EXCLUSIVE, level=1, dbname="d")
    assert access.kind_of("lock", [ttypes.LockRequest(component=[shared])]) == READ
    assert access.kind_of("lock", [ttypes.LockRequest(component=[shared, excl])]) == WRITE
    assert access.kind_of("no_such_method") == WRITE  # unknown: the safe side


# --- the classification is complete ------------------------------------------------------------
def _interface_methods():
    """The methods a call can reach a family with: all of 2.3.10 (what the access tables
    were written for) and every newer one we serve; an unserved newer method is answered
    as unknown before any rule is looked at."""
    from hms_proxy.hms.handler import served_methods
    from hms_proxy.thrift.generations import METHODS

    methods = Processor(None, (ThriftHiveMetastore, FacebookService), ttypes).methods
    served = served_methods(methods)
    return {name: m for name, m in methods.items()
            if name in served or "2.3.10" in METHODS.get(name, ("2.3.10",))}


def test_every_method_is_classified_once():
    tables = (access.READS, access.WRITES, access.SESSION_CALLS)
    methods = set(_interface_methods())
    assert sum(len(t) for t in tables) == len(set().union(*tables))  # disjoint
    assert methods == set().union(*tables)


def test_methods_that_write_the_store_are_writes():
    """Every family method whose body opens ``self.writing`` (the store's write path) is a
    write; the methods that change shared state without it (transactions, locks,
    compactions, notifications, file metadata, options) are listed as writes by hand."""
    methods = set(_interface_methods())
    found = set()
    for path in (REPO_ROOT / "hms_proxy" / "hms").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                if fn.name in methods and any(
                        isinstance(n, ast.Attribute) and n.attr == "writing"
                        for n in ast.walk(fn)):
                    found.add(fn.name)
    assert found and found <= access.WRITES, sorted(found - access.WRITES)
    assert {"open_txns", "commit_txn", "abort_txn", "compact", "fire_listener_event",
            "put_file_metadata", "setOption", "add_dynamic_partitions"} <= access.WRITES


# --- serve refuses unusable files at start -------------------------------------------------------
@pytest.mark.parametrize("option, content, message", [
    ("--access-rules", "{not json", "not valid JSON"),
    ("--access-rules", json.dumps({"rules": [{"branches": "main", "writers": []}]}),
     "rule 1: unknown key 'writers'"),
    ("--auth-secrets", json.dumps({"alice": ""}), "the secret must be a non-empty string"),
])
def test_serve_exits_2_on_a_bad_file(tmp_path, option, content, message):
    path = tmp_path / "file.json"
    path.write_text(content)
    result = subprocess.run(
        [sys.executable, "-m", "hms_proxy.cli", "serve", "--store", str(tmp_path / "store"),
         "--port", "0", option, str(path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hms-proxy: error: {option} {path}: ")
    assert message in lines[0]
    assert not Path(tmp_path / "store").exists()
