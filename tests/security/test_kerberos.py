"""Kerberos on the Thrift listeners (serve --kerberos-principal --kerberos-keytab), against a
real MIT KDC on loopback and the stock HMS 2.3.10 Kerberized against the same KDC: the same
SASL clients (Thrift's TSaslClientTransport with pure-sasl, and a hand-driven GSSAPI exchange
for what no honest client sends) get the same answers and the same refusals from both."""
from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.tools import kdc as kdc_tool
from hms_proxy.tools.metastores import start_proxy
from tests.support.kerberos import (as_user, client_modules_missing, ready_as, sasl_client,
                                    start_stock_kerberized, started_realm)
from tests.support.process import REPO_ROOT
from tests.support.wait import wait_until

pytestmark = pytest.mark.skipif(bool(kdc_tool.missing() or client_modules_missing()),
                                reason=kdc_tool.missing() or client_modules_missing() or "")

ALL_QOPS = "authentication,integrity,privacy"
SASL_TIMEOUT = 3.0  # ours: a negotiation that has not ended after this is dropped


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with started_realm(tmp_path_factory.mktemp("krb")) as realm:
        yield realm


@pytest.fixture(scope="module")
def stock(realm, tmp_path_factory):
    """The stock HMS 2.3.10 Kerberized against the same KDC, every quality of protection
    allowed."""
    proc = start_stock_kerberized(realm, tmp_path_factory.mktemp("stock-krb"), ALL_QOPS)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def ours(realm, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ours-krb")
    proc = start_proxy(workdir, *realm.server_args("--rpc-protection", ALL_QOPS,
                                                   "--sasl-timeout", str(SASL_TIMEOUT)),
                       env=realm.server_env(), ask=ready_as(realm))
    yield proc
    proc.stop()


def _outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the answer compared
        return (type(exc).__name__, getattr(exc, "message", None) or str(exc))


def _session(realm, proc, qop: str) -> list:
    name = f"krb_{qop.replace('-', '_')}"
    with sasl_client(realm, proc, "alice", qop=qop) as client:
        answers = [
            _outcome(lambda: client.set_ugi("bob", ["staff"])),
            _outcome(lambda: client.create_database(T.Database(name, "", None, {}))),
            _outcome(lambda: client.create_database(T.Database(name, "", None, {}))),
            _outcome(lambda: (lambda d: (d.name, d.ownerName, d.ownerType))(
                client.get_database(name))),
            _outcome(lambda: client.get_database("krb_missing")),
            _outcome(lambda: sorted(client.get_all_databases())),
            _outcome(lambda: client.drop_database(name, True, True)),
        ]
    return answers


@pytest.mark.parametrize("qop", ["auth", "auth-int", "auth-conf"])
def test_kerberized_calls_answer_as_the_stock(realm, stock, ours, qop):
    """Each quality of protection: the calls of a session, and set_ugi, which under SASL names
    nobody new (the stock answers the groups and the name, and the caller stays alice)."""
    theirs = _session(realm, stock, qop)
    mine = _session(realm, ours, qop)
    assert mine == theirs
    assert theirs[0] == ("ok", ["staff", "bob"])


# --- what no honest client sends --------------------------------------------------------------
def _frame(status: int, payload: bytes) -> bytes:
    return struct.pack("!Bi", status, len(payload)) + payload


def _answer(sock: socket.socket) -> tuple:
    """What the server sends before it closes: (status, text) or None for nothing."""
    sock.settimeout(30)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    sock.close()
    if not data:
        return None
    return data[0], data[5:5 + struct.unpack("!i", data[1:5])[0]].decode(errors="replace")


def _raw(proc, data: bytes) -> tuple:
    sock = socket.create_connection((proc.host, proc.port), timeout=30)
    sock.sendall(data)
    return _answer(sock)


def _gssapi_exchange(realm, proc, user: str, choose, authzid: bytes = b"") -> tuple:
    """A GSSAPI negotiation driven by hand up to the security layer, where ``choose(offer)``
    picks the layer byte (any byte, allowed or not) and ``authzid`` names who to act as."""
    import gssapi
    with as_user(realm, user):
        target = gssapi.Name("hive@localhost", gssapi.NameType.hostbased_service)
        ctx = gssapi.SecurityContext(name=target, usage="initiate",
                                     flags=[gssapi.RequirementFlag.mutual_authentication,
                                            gssapi.RequirementFlag.integrity])
        sock = socket.create_connection((proc.host, proc.port), timeout=30)
        sock.sendall(_frame(1, b"GSSAPI") + _frame(2, ctx.step()))
        while True:
            head = _recv(sock, 5)
            status, length = head[0], struct.unpack("!i", head[1:])[0]
            payload = _recv(sock, length)
            if status != 2:
                sock.close()
                return status, payload.decode(errors="replace")
            if not ctx.complete:
                sock.sendall(_frame(2, ctx.step(payload) or b""))
                continue
            if not payload:  # the final token came with the last step: answer empty
                sock.sendall(_frame(2, b""))
                continue
            offer = ctx.unwrap(payload).message
            reply = bytes([choose(offer[0])]) + b"\x01\x00\x00" + authzid
            sock.sendall(_frame(2, ctx.wrap(reply, False).message))


def _recv(sock, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _refusals(realm, proc) -> list:
    plain_call = (b"\x80\x01\x00\x01\x00\x00\x00\x11get_all_databases"
                  b"\x00\x00\x00\x00\x00")
    return [
        ("plaintext Thrift client", _raw(proc, plain_call)),
        ("unsupported mechanism", _raw(proc, _frame(1, b"PLAIN") + _frame(2, b"\0u\0p"))),
        ("garbage token", _raw(proc, _frame(1, b"GSSAPI") + _frame(2, b"hello"))),
        ("OK before START", _raw(proc, _frame(2, b"GSSAPI"))),
        ("a length of 2 GiB", _raw(proc, struct.pack("!Bi", 1, 0x7FFFFFFF))),
        ("a negative length", _raw(proc, struct.pack("!Bi", 1, -5))),
        ("acting as another", _gssapi_exchange(realm, proc, "bob", lambda offer: 1,
                                               b"alice@" + realm.name.encode())),
        ("a layer not offered", _gssapi_exchange(realm, proc, "bob", lambda offer: 8)),
        ("no layer", _gssapi_exchange(realm, proc, "bob", lambda offer: 0)),
        ("acting as oneself", _gssapi_exchange(realm, proc, "bob", lambda offer: 1,
                                               b"bob@" + realm.name.encode())),
    ]


def test_refusals_answer_as_the_stock(realm, stock, ours):
    """What a client that does not authenticate gets: the stock's status and words, nothing
    served; and a client that does is served right after."""
    theirs = _refusals(realm, stock)
    mine = _refusals(realm, ours)
    assert mine == theirs
    assert dict(theirs)["acting as oneself"] == (5, "")  # COMPLETE: the only one let in
    for proc in (ours, stock):
        with sasl_client(realm, proc, "alice") as client:
            assert "default" in client.get_all_databases()


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_hostile_sasl_frames_leave_memory_flat(realm, ours):
    """Thousands of hostile negotiations (garbage tokens, 2 GiB and negative lengths, a
    message just over the bound with no body, another mechanism, DIGEST-MD5 garbage, a
    plaintext call, a wrapped frame of 2 GiB after a good handshake): each refused, the
    server's memory where it was after the first hundred, and a client served after."""
    hostile = [
        _frame(1, b"GSSAPI") + _frame(2, b"hello"),
        struct.pack("!Bi", 1, 0x7FFFFFFF),
        struct.pack("!Bi", 1, -5),
        _frame(1, b"GSSAPI") + struct.pack("!Bi", 2, (1 << 20) + 1),
        _frame(1, b"PLAIN") + _frame(2, b"\0u\0p"),
        _frame(1, b"DIGEST-MD5") + _frame(2, b"") + _frame(2, b'username="x",nonce="y"'),
        b"\x80\x01\x00\x01\x00\x00\x00\x11get_all_databases\x00\x00\x00\x00\x00",
    ]

    def round_of(n: int) -> None:
        for i in range(n):
            assert _raw(ours, hostile[i % len(hostile)]) != (5, "")  # never let in

    def oversized_after_a_good_handshake() -> None:
        with as_user(realm, "alice"):
            from thrift.transport import TSocket, TTransport
            sock = TSocket.TSocket(ours.host, ours.port)
            transport = TTransport.TSaslClientTransport(sock, "localhost", "hive",
                                                        qops=[b"auth-conf"])
            transport.open()
            sock.handle.sendall(struct.pack("!i", 0x7FFFFFF0))  # a frame of 2 GiB announced
            assert _answer(sock.handle) is None  # closed, nothing allocated for it

    round_of(140)
    oversized_after_a_good_handshake()
    before = _rss_kib(ours.popen.pid)
    round_of(1400)
    for _ in range(20):
        oversized_after_a_good_handshake()
    after = _rss_kib(ours.popen.pid)
    print(f"server RSS {before} KiB after 140 hostile negotiations, {after} KiB after 1,560")
    assert after - before < 16 * 1024, (before, after)
    with sasl_client(realm, ours, "alice") as client:
        assert "default" in client.get_all_databases()


def test_a_negotiation_that_never_ends_is_dropped(realm, ours):
    """A client that opens a negotiation and stops (or trickles a byte at a time) is dropped
    after --sasl-timeout, and meanwhile other clients are served at once."""
    stalled = socket.create_connection((ours.host, ours.port), timeout=60)
    stalled.sendall(_frame(1, b"GSSAPI"))
    trickle = socket.create_connection((ours.host, ours.port), timeout=60)
    started = time.monotonic()
    with sasl_client(realm, ours, "alice") as client:
        assert "default" in client.get_all_databases()
    for byte in _frame(1, b"GSSAPI"):
        try:
            trickle.sendall(bytes([byte]))
        except OSError:
            break
        if time.monotonic() - started > SASL_TIMEOUT * 3:
            break
        time.sleep(SASL_TIMEOUT / 4)
    assert _answer(stalled) is None
    assert _answer(trickle) is None
    assert time.monotonic() - started < 60


def test_the_principal_is_the_caller(realm, tmp_path):
    """Access rules, the audit log and --autocommit's authors see the principal's short name;
    a client claiming another user with set_ugi stays who it authenticated as."""
    (tmp_path / "rules.json").write_text(json.dumps({"rules": [
        {"branches": "main", "read": ["*"], "write": ["alice"]}]}))
    audit = tmp_path / "audit.log"
    proc = start_proxy(tmp_path / "server", *realm.server_args(
        "--access-rules", str(tmp_path / "rules.json"), "--audit-log", str(audit),
        "--autocommit"), env=realm.server_env(), ask=ready_as(realm))
    try:
        with sasl_client(realm, proc, "bob") as bob:
            assert bob.set_ugi("alice", []) == ["alice"]
            with pytest.raises(T.MetaException, match="user 'bob' may not write branch 'main'"):
                bob.create_database(T.Database("bobs", "", None, {}))
        with sasl_client(realm, proc, "alice") as alice:
            alice.create_database(T.Database("alices", "", None, {}))
        entries = [json.loads(line) for line in audit.read_text().splitlines()]
        assert [(e["identity"], e["auth"], e["method"], e["outcome"]) for e in entries] == [
            ("bob", "kerberos", "create_database", "denied"),
            ("alice", "kerberos", "create_database", "ok")]
    finally:
        proc.stop()
    log = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "log", "main", "--store",
                          str(tmp_path / "server" / "store"), "--json"],
                         cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    authors = {c["author"] for c in json.loads(log.stdout)
               if c["message"] not in ("Repository created", "create the default database")}
    assert authors == {"alice"}


def test_every_worker_of_processes_is_kerberized(realm, tmp_path):
    """--processes 2: each worker loads the keytab and negotiates; a plaintext client is
    refused by whichever worker takes it."""
    proc = start_proxy(tmp_path, *realm.server_args("--processes", "2"),
                       env=realm.server_env(), ask=ready_as(realm))
    try:
        for _ in range(6):
            with sasl_client(realm, proc, "alice", qop="auth") as client:
                assert client.get_all_databases() == ["default"]
            assert _raw(proc, b"\x80\x01\x00\x01\x00\x00\x00\x11get_all_databases") is None
    finally:
        proc.stop()


def _serve_fails(realm, tmp_path, *args) -> str:
    out = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "serve", "--store",
                          str(tmp_path / "store"), "--port", "0", *args],
                         env=dict(realm.server_env(), PYTHONPATH=str(REPO_ROOT)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    return out.stderr.strip()


def test_a_keytab_that_cannot_serve_stops_serve_in_one_line(realm, tmp_path):
    missing = _serve_fails(realm, tmp_path, "--kerberos-principal", "hive/localhost",
                           "--kerberos-keytab", str(tmp_path / "none.keytab"))
    assert missing == (f"hms-proxy: error: --kerberos-keytab {tmp_path / 'none.keytab'}: "
                       "no such readable file")
    alice_keytab = realm.kdc.keytab("alice")
    wrong = _serve_fails(realm, tmp_path, "--kerberos-principal", "hive/localhost",
                         "--kerberos-keytab", str(alice_keytab))
    assert wrong.startswith(f"hms-proxy: error: --kerberos-keytab {alice_keytab}: no key for "
                            f"hive/localhost@{realm.name} in it")
    assert len(wrong.splitlines()) == 1
    alone = _serve_fails(realm, tmp_path, "--kerberos-principal", "hive/localhost")
    assert alone == "hms-proxy: error: --kerberos-principal needs --kerberos-keytab"
    qop = _serve_fails(realm, tmp_path, *realm.server_args("--rpc-protection", "secret"))
    assert qop == ("hms-proxy: error: --rpc-protection: unknown quality of protection "
                   "'secret' (authentication, integrity, privacy)")


def test_auth_to_local_rules_map_as_hadoop_does():
    from hms_proxy.security.kerberos import AuthToLocal, NoMatchingRule
    rules = AuthToLocal("RULE:[2:$1@$0](hive@OTHER\\.REALM)s/.*/hive/ "
                        "RULE:[1:$1@$0](.*@OTHER\\.REALM)s/@.*//L DEFAULT", "HMS.TEST")
    assert rules.short_name("alice@HMS.TEST") == "alice"
    assert rules.short_name("hive/localhost@HMS.TEST") == "hive"
    assert rules.short_name("Carol@OTHER.REALM") == "carol"
    assert rules.short_name("hive/node1@OTHER.REALM") == "hive"
    with pytest.raises(NoMatchingRule, match="No rules applied to dave@THIRD.REALM"):
        rules.short_name("dave@THIRD.REALM")
    with pytest.raises(NoMatchingRule, match="No rules applied to a/b/c@HMS.TEST"):
        rules.short_name("a/b/c@HMS.TEST")


# --- Spark ------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.slow
def test_the_spark_suite_over_kerberos_with_privacy_matches_the_stock(realm, stock,
                                                                     tmp_path_factory):
    """Every statement of the Spark end-to-end suite (tests/e2e/spark/statements.py), by
    Spark's built-in Hive 2.3 client logged in from alice's ticket cache with
    hadoop.rpc.protection=privacy (every frame encrypted, auth-conf), against the stock HMS
    2.3.10 Kerberized and against ours Kerberized: the same transcript, compared as
    test_spark_e2e.py compares them without Kerberos."""
    from tests.e2e.spark.conftest import kerberized_sides
    from tests.e2e.spark.test_spark_e2e import whole_run_differences

    runs = kerberized_sides(realm, stock, tmp_path_factory, "privacy", "-krb")
    differences = whole_run_differences(runs, "stock HMS 2.3.10")
    assert not differences, (f"{len(differences)} statement(s) differ:\n"
                             + "\n".join(differences))


# --- pyiceberg ----------------------------------------------------------------------------------
def _pyiceberg_over_kerberos(realm, proc, warehouse: Path) -> dict:
    """pyiceberg's HiveCatalog with hive.kerberos-authentication, as alice: a namespace, a
    table, two appends, a scan."""
    import pyarrow as pa
    from pyiceberg.catalog.hive import HiveCatalog

    with as_user(realm, "alice"):
        catalog = HiveCatalog("krb", **{"uri": f"thrift://localhost:{proc.port}",
                                        "hive.kerberos-authentication": "true",
                                        "warehouse": f"file://{warehouse}"})
        catalog.create_namespace("krb_ice")
        data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array(["a", "b"])})
        table = catalog.create_table("krb_ice.t", schema=data.schema)
        table.append(data)
        table.append(pa.table({"id": pa.array([3], pa.int64()), "v": pa.array(["c"])}))
        table = catalog.load_table("krb_ice.t")
        rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        return {"rows": rows, "snapshots": len(table.metadata.snapshots),
                "tables": catalog.list_tables("krb_ice")}


def test_pyiceberg_hive_catalog_commits_over_kerberos(realm, stock, tmp_path):
    """pyiceberg's HiveCatalog with Kerberos (its SASL transport over pure-sasl): the same
    commits and reads on the stock Kerberized HMS and on ours, made by alice."""
    ours = start_proxy(tmp_path / "server", *realm.server_args(), env=realm.server_env(),
                       ask=ready_as(realm))
    try:
        theirs = _pyiceberg_over_kerberos(realm, stock, tmp_path / "wh-stock")
        mine = _pyiceberg_over_kerberos(realm, ours, tmp_path / "wh-ours")
        assert mine == theirs
        assert theirs["rows"] == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"},
                                  {"id": 3, "v": "c"}]
        log = ours.log_path.read_text()  # the caller of each write: the principal's name
        assert "create_table krb_ice.t user=alice" in log, log[-3000:]
        assert "alter_table_with_environment_context krb_ice.t user=alice" in log, log[-3000:]
    finally:
        ours.stop()


# --- federation ---------------------------------------------------------------------------------
def test_a_server_federates_a_kerberized_upstream_with_its_keytab(realm, stock, tmp_path):
    """serve --upstream of the Kerberized stock with --upstream-kerberos-principal: this
    server authenticates to it with its own keytab (privacy asked, the stock allowing it),
    serves its databases beside its own, and a wrong upstream principal is an unreachable
    upstream, said in one MetaException."""
    with sasl_client(realm, stock, "alice") as client:
        client.create_database(T.Database("upstream_db", "from the stock", None, {}))
    try:
        ours = start_proxy(tmp_path / "front", *realm.server_args(
            "--rpc-protection", "privacy", "--upstream", f"thrift://localhost:{stock.port}",
            "--upstream-kerberos-principal", f"hive/_HOST@{realm.name}"),
            env=realm.server_env(), ask=ready_as(realm, qop="auth-conf"))
        try:
            with sasl_client(realm, ours, "alice", qop="auth-conf") as client:
                assert client.get_database("upstream_db").description == "from the stock"
                assert {"default", "upstream_db"} <= set(client.get_all_databases())
        finally:
            ours.stop()
        wrong = start_proxy(tmp_path / "wrong", *realm.server_args(
            "--upstream", f"thrift://localhost:{stock.port}",
            "--upstream-kerberos-principal", f"hive/elsewhere@{realm.name}"),
            env=realm.server_env(), ask=ready_as(realm))
        try:
            with sasl_client(realm, wrong, "alice") as client:
                with pytest.raises(T.MetaException, match="unreachable: .*Kerberos to the "
                                                          "upstream"):
                    client.get_database("upstream_db")
        finally:
            wrong.stop()
    finally:
        with sasl_client(realm, stock, "alice") as client:
            client.drop_database("upstream_db", True, True)
    alone = _serve_fails(realm, tmp_path, "--upstream", f"thrift://localhost:{stock.port}",
                         "--upstream-kerberos-principal", f"hive/_HOST@{realm.name}")
    assert alone == ("hms-proxy: error: --upstream-kerberos-principal needs "
                     "--kerberos-principal and --kerberos-keytab (this server's own, which it "
                     "authenticates with)")
