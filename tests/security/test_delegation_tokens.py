"""Delegation tokens on a Kerberized server (get/renew/cancel_delegation_token) and SASL
DIGEST-MD5 with a token, against a real MIT KDC and the stock HMS 2.3.10 Kerberized against it
with a DBTokenStore: the same calls get the same answers (tokens themselves differ: their
shapes, owners and errors are compared), and a token one of two servers over one store
issued is used, renewed and cancelled on the other, then refused at the handshake."""
from __future__ import annotations

import base64
import re
import socket
import struct
import time

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.security import delegation as dt
from hms_proxy.security.digest import DigestServer
from hms_proxy.security.kerberos import AuthenticationFailed
from hms_proxy.tools import kdc as kdc_tool
from hms_proxy.tools.metastores import start_proxy
from tests.support.client import Client
from tests.support.kerberos import (client_modules_missing, java_digest_call, ready_as,
                                    sasl_client, start_stock_kerberized, started_realm)

# a token the stock HMS 2.3.10 issued to alice (renewer alice), and its identifier as its
# DBTokenStore lists it
STOCK_TOKEN = ("HgAFYWxpY2UFYWxpY2UAigGiUTVzrIoBonVB96wBAhTg08CSZ4dpZCZRWzwJENVEqecMZRVISVZFX0RF"
               "TEVHQVRJT05fVE9LRU4A")
STOCK_IDENTIFIER = "AAVhbGljZQVhbGljZQCKAaJRNXOsigGidUH3rAEC"
STOCK_MASTER_KEY = "AYoBonVB76EIseB7BUGCRDI"


# --- formats and the DIGEST-MD5 exchange, without a server -----------------------------------
def test_the_stocks_token_reads_and_writes_back_the_same():
    token = dt.Token.decode(STOCK_TOKEN)
    ident = token.ident()
    assert (ident.owner, ident.renewer, ident.real_user) == ("alice", "alice", "")
    assert ident.max_date - ident.issue_date == 7 * dt.DAY_MS
    assert (ident.sequence_number, ident.master_key_id) == (1, 2)
    assert (token.kind, token.service, len(token.password)) == (dt.KIND, b"", 20)
    assert token.encode() == STOCK_TOKEN
    assert ident.store_string() == STOCK_IDENTIFIER
    assert dt.TokenIdentifier.from_bytes(ident.to_bytes()) == ident
    key = dt.DelegationKey.decode(STOCK_MASTER_KEY)
    assert (key.key_id, len(key.key)) == (1, 8) and key.encode() == STOCK_MASTER_KEY
    info = dt.TokenInfo(ident.issue_date + dt.DAY_MS, token.password)
    assert dt.TokenInfo.decode(info.encode()) == info


@pytest.mark.parametrize("value", [0, -1, 127, 128, -112, -113, -120, -121, 1 << 40,
                                   -(1 << 40), (1 << 63) - 1, -(1 << 63)])
def test_hadoops_variable_length_numbers_round_trip(value):
    import io
    out = io.BytesIO()
    dt.write_vlong(out, value)
    assert dt.read_vlong(io.BytesIO(out.getvalue())) == value
    assert len(out.getvalue()) == (1 if -112 <= value <= 127 else
                                   1 + (((~value if value < 0 else value).bit_length() + 7) // 8))


def _digest_server(password: bytes = b"p" * 20):
    from hms_proxy.hms.tokens import TokenAuth
    return DigestServer(lambda identifier: TokenAuth("alice@HMS.TEST", password)
                        if identifier == b"ident" else None, lambda owner: owner.split("@")[0])


def _client(username=b"ident", password=b"p" * 20, host="default", service="null", **kw):
    from puresasl.client import SASLClient
    return SASLClient(host, service, "DIGEST-MD5", username=base64.b64encode(username).decode(),
                      password=base64.b64encode(password).decode(), **kw)


@pytest.mark.parametrize("cipher", [None, "rc4", "rc4-56", "rc4-40"])
def test_digest_md5_layers_wrap_and_check_each_frame(cipher):
    """RFC 2831's layers, the server's and the client's side over the same H(A1): frames go
    both ways in order; a frame altered, replayed or out of order is refused."""
    from hms_proxy.security.digest import Layer

    ha1 = bytes(range(16))
    server, client = Layer(ha1, cipher, "server"), Layer(ha1, cipher, "client")
    for n in (1, 100, 70_000):
        frame = bytes(i % 251 for i in range(n))
        wrapped = client.wrap(frame)
        if n > 1:  # (one byte may encrypt to itself)
            assert (wrapped[:n] == frame) == (cipher is None)
        assert server.unwrap(wrapped) == frame
        assert client.unwrap(server.wrap(frame[::-1])) == frame[::-1]
    first = client.wrap(b"call")
    with pytest.raises(ValueError, match="MAC"):
        server.unwrap(first[:3] + bytes([first[3] ^ 1]) + first[4:])
    server2 = Layer(ha1, cipher, "server")
    with pytest.raises(ValueError, match="sequenc"):
        server2.unwrap(client.wrap(b"later"))  # its number is not the first


def test_digest_md5_with_puresasl_in_memory():
    server, client = _digest_server(), _client()
    challenge = server.step(client.process() or b"")
    assert re.fullmatch(rb'realm="default",nonce="[A-Za-z0-9+/=]{40}",qop="auth",'
                        rb"charset=utf-8,algorithm=md5-sess", challenge)
    final = server.step(client.process(challenge))
    assert server.complete and final.startswith(b"rspauth=")
    client.process(final)  # raises on a wrong rspauth
    assert client.complete
    assert (server.user, server.principal, server.auth) == ("alice", "alice@HMS.TEST", "token")


@pytest.mark.parametrize("client, answer", [
    (lambda: _client(password=b"x" * 20),
     "DIGEST-MD5: digest response format violation. Mismatched response."),
    (lambda: _client(username=b"unknown"), "DIGEST-MD5: IO error acquiring password"),
    (lambda: _client(host="localhost", service="hive"),
     "DIGEST-MD5: digest response format violation. Mismatched URI: hive/localhost; "
     "expecting: null/default"),
])
def test_digest_md5_refusals_in_memory(client, answer):
    server, sasl = _digest_server(), client()
    challenge = server.step(sasl.process() or b"")
    with pytest.raises(AuthenticationFailed) as failed:
        server.step(sasl.process(challenge))
    assert failed.value.answer == answer and not server.complete


@pytest.mark.parametrize("response, answer", [
    (b"hello", "DIGEST-MD5: digest response format violation. Missing username."),
    (b'username="x",realm="elsewhere"',
     "DIGEST-MD5: digest response format violation. Nonexistent realm: elsewhere"),
    (b'username="x",realm="default",nonce="n"',
     "DIGEST-MD5: digest response format violation. Mismatched nonce."),
    (b'username="x",username="y"', "DIGEST-MD5: peer sent more than one username directive: y"),
    (b'username="x', "Unmatched quote found for directive: username with value: x"),
    (b"username=,", "Valueless directive found: username"),
    (b"x" * 5000, "DIGEST-MD5: Invalid digest response length. Got:  5000 Expected < 4096"),
])
def test_digest_md5_garbage_in_memory(response, answer):
    server = _digest_server()
    server.step(b"")
    with pytest.raises(AuthenticationFailed) as failed:
        server.step(response)
    assert failed.value.answer == answer


# --- against the stock, over a real KDC ------------------------------------------------------
kerberized = pytest.mark.skipif(bool(kdc_tool.missing() or client_modules_missing()),
                                reason=kdc_tool.missing() or client_modules_missing() or "")


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with started_realm(tmp_path_factory.mktemp("krb-dt")) as realm:
        yield realm


# Hadoop's proxy-user rules on both servers: alice may act for carol from loopback; bob may act
# for carol, but not from here
PROXY_RULES = {"hadoop.proxyuser.alice.hosts": "127.0.0.0/8",
               "hadoop.proxyuser.alice.users": "carol",
               "hadoop.proxyuser.bob.hosts": "10.1.2.3",
               "hadoop.proxyuser.bob.users": "carol"}
PROXY_CONF = [arg for k, v in PROXY_RULES.items() for arg in ("--conf", f"{k}={v}")]


@pytest.fixture(scope="module")
def stock(realm, tmp_path_factory):
    """The stock HMS 2.3.10 Kerberized (as in test_kerberos.py, the default protection) with
    its tokens in its database (DBTokenStore), as ours keeps them in its store."""
    proc = start_stock_kerberized(
        realm, tmp_path_factory.mktemp("stock-dt"), with_transactions=False,
        extra_properties={"hive.cluster.delegation.token.store.class":
                          "org.apache.hadoop.hive.thrift.DBTokenStore"},
        core_site=PROXY_RULES)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def pair(realm, tmp_path_factory):
    """Two of our servers over one store, the second with two worker processes."""
    workdir = tmp_path_factory.mktemp("ours-dt")
    store = workdir / "store"
    first = start_proxy(workdir / "a", *realm.server_args(*PROXY_CONF), store=store,
                        env=realm.server_env(), ask=ready_as(realm))
    second = start_proxy(workdir / "b", *realm.server_args("--processes", "2", *PROXY_CONF),
                         store=store, env=realm.server_env(), ask=ready_as(realm))
    yield first, second
    second.stop()
    first.stop()


def _outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the answer compared
        return (type(exc).__name__, getattr(exc, "message", None) or str(exc))


_TIMES = re.compile(r"issueDate=\d+, maxDate=\d+, sequenceNumber=\d+, masterKeyId=\d+")


def _plain(outcome):
    """An outcome with what differs between two servers' tokens left out."""
    kind, value = outcome
    if isinstance(value, str):
        value = _TIMES.sub("issueDate=T, maxDate=T, sequenceNumber=N, masterKeyId=N", value)
    return kind, value


def _shape(token_text: str) -> tuple:
    token = dt.Token.decode(token_text)
    ident = token.ident()
    return (ident.owner, ident.renewer, ident.real_user, ident.max_date - ident.issue_date,
            len(token.password), token.kind, token.service)


def _digest(proc, token_text: str, password: bytes | None = None, host: str = "default",
            service: str = "null", qops=None):
    token = dt.Token.decode(token_text)
    sock = TSocket.TSocket(proc.host, proc.port)
    sock.setTimeout(30000)
    kwargs = {"username": base64.b64encode(token.identifier).decode(),
              "password": base64.b64encode(password or token.password).decode()}
    if qops:
        kwargs["qops"] = qops
    transport = TTransport.TSaslClientTransport(sock, host, service, mechanism="DIGEST-MD5",
                                                **kwargs)
    transport.open()
    return transport, Client(TBinaryProtocol.TBinaryProtocol(transport))


def _handshake(proc, token_text: str, **kwargs):
    """Whether a DIGEST-MD5 handshake with the token is let in (the refusal's text if not)."""
    def run():
        transport, client = _digest(proc, token_text, **kwargs)
        try:
            return client.get_all_databases()
        finally:
            transport.close()
    return _outcome(run)


def _raw(proc, *messages: bytes) -> list:
    """The server's SASL messages (status, text) to a hand-driven DIGEST-MD5 start."""
    sock = socket.create_connection((proc.host, proc.port), timeout=30)
    sock.sendall(struct.pack("!Bi", 1, 10) + b"DIGEST-MD5")
    answers = []
    for message in messages:
        sock.sendall(struct.pack("!Bi", 2, len(message)) + message)
        head = b""
        while len(head) < 5:
            chunk = sock.recv(5 - len(head))
            if not chunk:
                break
            head += chunk
        if len(head) < 5:
            break
        size = struct.unpack("!i", head[1:])[0]
        body = b""
        while len(body) < size:
            body += sock.recv(size - len(body))
        text = re.sub(r'nonce="[^"]+"', 'nonce="N"', body.decode(errors="replace"))
        answers.append((head[0], text))
    sock.close()
    return answers


def _session(realm, issuer, user) -> dict:
    """The calls of one session: tokens got from ``issuer`` over Kerberos, used over
    DIGEST-MD5 on ``user``, renewed, cancelled and refused."""
    name = realm.name
    answers = {}
    with sasl_client(realm, issuer, "alice") as alice:
        mine = _outcome(lambda: alice.get_delegation_token("alice", "alice"))
        answers["get alice alice"] = (mine[0], _shape(mine[1]))
        other = _outcome(lambda: alice.get_delegation_token(f"alice@{name}", f"bob@{name}"))
        answers["get alice@R bob@R"] = (other[0], _shape(other[1]))
        answers["get for bob"] = _outcome(lambda: alice.get_delegation_token("bob", "alice"))
        carols = _outcome(lambda: alice.get_delegation_token("carol", "alice"))
        answers["get for carol (a proxy user)"] = (carols[0], _shape(carols[1]))
        answers["get for nobody"] = _outcome(lambda: alice.get_delegation_token("", "alice"))
        answers["get no renewer"] = (lambda o: (o[0], _shape(o[1])))(
            _outcome(lambda: alice.get_delegation_token("alice", "")))
        answers["get null renewer"] = _outcome(lambda: alice.get_delegation_token("alice", None))
        answers["get null owner"] = _outcome(lambda: alice.get_delegation_token(None, "alice"))
        answers["get owner of no rule"] = _outcome(
            lambda: alice.get_delegation_token("alice@OTHER.REALM", "alice"))
        answers["get renewer of no rule"] = _outcome(
            lambda: alice.get_delegation_token("alice", "bob@OTHER.REALM"))
        answers["get alice/admin"] = (lambda o: (o[0], _shape(o[1])))(
            _outcome(lambda: alice.get_delegation_token(f"alice/admin@{name}", "alice")))
        answers["renew null"] = _outcome(lambda: alice.renew_delegation_token(None))
        answers["cancel null"] = _outcome(lambda: alice.cancel_delegation_token(None))
        answers["renew over kerberos"] = _plain(_outcome(
            lambda: alice.renew_delegation_token(mine[1])))
        answers["renew garbage"] = _outcome(lambda: alice.renew_delegation_token("garbage"))
        answers["cancel garbage"] = _outcome(lambda: alice.cancel_delegation_token("garbage"))
        keys = alice.get_master_keys()
        idents = alice.get_all_token_identifiers()
    token = dt.Token.decode(mine[1]).ident()
    answers["master key of the token stored"] = token.master_key_id in {
        dt.DelegationKey.decode(k).key_id for k in keys}
    answers["identifier stored"] = token.store_string() in idents
    with sasl_client(realm, issuer, "bob") as bob:
        answers["renew by bob"] = _plain(_outcome(lambda: bob.renew_delegation_token(other[1])))
        answers["bob for carol, from a host not allowed"] = _outcome(
            lambda: bob.get_delegation_token("carol", "bob"))
    transport, client = _digest(user, carols[1])
    try:
        answers["over carol's token"] = [
            _outcome(client.get_all_databases),
            (lambda o: (o[0], _shape(o[1])))(
                _outcome(lambda: client.get_delegation_token("carol", "alice"))),
            _plain(_outcome(lambda: client.get_delegation_token("alice", "alice")))]
    finally:
        transport.close()
    transport, client = _digest(user, mine[1])
    try:
        answers["over the token"] = [
            _outcome(client.get_all_databases),
            (lambda o: (o[0], _shape(o[1])))(
                _outcome(lambda: client.get_delegation_token("alice", "alice"))),
            _plain(_outcome(lambda: client.get_delegation_token("bob", "alice"))),
            _outcome(lambda: client.set_ugi("zed", [])),
        ]
        started = dt.now_ms()
        renewed = _outcome(lambda: client.renew_delegation_token(mine[1]))
        answers["renew over the token"] = renewed[0]
        assert started + dt.DAY_MS - 60_000 <= renewed[1] <= dt.now_ms() + dt.DAY_MS
    finally:
        transport.close()
    forged = dt.Token(dt.Token.decode(mine[1]).identifier, b"x" * 20).encode()
    answers["forged password"] = _handshake(user, forged)
    answers["wrong digest-uri"] = _handshake(user, mine[1], host="localhost", service="hive")
    answers["auth-conf asked"] = _handshake(user, mine[1], qops=[b"auth-conf"])
    answers["raw start"] = _raw(user, b"")
    answers["raw garbage"] = _raw(user, b"", b"hello")
    answers["raw wrong nonce"] = _raw(user, b"", b'username="eA==",realm="default",nonce="x"')
    with sasl_client(realm, issuer, "bob") as bob:
        answers["cancel by bob"] = _outcome(lambda: bob.cancel_delegation_token(mine[1]))
    with sasl_client(realm, issuer, "alice") as alice:
        answers["cancel again"] = _outcome(lambda: alice.cancel_delegation_token(mine[1]))
        answers["renew cancelled"] = _plain(_outcome(
            lambda: alice.renew_delegation_token(mine[1])))
    answers["cancelled at the handshake"] = _handshake(user, mine[1])
    return answers


@kerberized
def test_tokens_answer_as_the_stock(realm, stock, pair):
    """The same session on the stock (one server) and on ours (tokens from the first server,
    used on the second): the same answers, refusals and shapes."""
    theirs = _session(realm, stock, stock)
    mine = _session(realm, pair[0], pair[1])
    assert mine == theirs
    assert theirs["get alice alice"] == ("ok", ("alice", "alice", "", 7 * dt.DAY_MS, 20,
                                                dt.KIND, b""))
    assert theirs["over the token"][1][0] == "ok" and theirs["renew over the token"] == "ok"
    assert theirs["cancelled at the handshake"][0] == "TTransportException"


LAYERS = "authentication,integrity,privacy"


@pytest.fixture(scope="module")
def layered(realm, tmp_path_factory):
    """The stock HMS 2.3.10 and ours, each offering every quality of protection."""
    stock = start_stock_kerberized(
        realm, tmp_path_factory.mktemp("stock-dt-layers"), LAYERS, with_transactions=False,
        extra_properties={"hive.cluster.delegation.token.store.class":
                          "org.apache.hadoop.hive.thrift.DBTokenStore"})
    try:
        ours = start_proxy(tmp_path_factory.mktemp("ours-dt-layers"),
                           *realm.server_args("--rpc-protection", LAYERS),
                           env=realm.server_env(), ask=ready_as(realm))
        try:
            yield stock, ours
        finally:
            ours.stop()
    finally:
        stock.stop()


@kerberized
@pytest.mark.parametrize("qop", ["auth", "auth-int", "auth-conf"])
def test_a_javas_client_uses_a_token_with_each_layer_as_on_the_stock(realm, layered, qop):
    """A token used as Hive's own client (a Spark executor) uses it, through the JDK's
    DIGEST-MD5 asking for each quality of protection (hadoop.rpc.protection authentication,
    integrity, privacy): let in with that layer, every frame wrapped both ways (a few calls,
    one a refusal), on the stock HMS and on ours alike."""
    answers = []
    for proc in layered:
        with sasl_client(realm, proc, "alice") as alice:
            token = alice.get_delegation_token("alice", "alice")
        answers.append(java_digest_call(proc, token, qop, calls=3))
    assert answers[1] == answers[0]
    assert answers[0] == {"ok": True, "qop": qop, "databases": ["default"],
                          "missing": "NoSuchObjectException"}


@kerberized
def test_a_layer_not_offered_is_refused_to_javas_client_as_on_the_stock(realm, stock, pair):
    """Servers offering only authentication (the default): the JDK's client asking for
    privacy alone is refused, on the stock HMS and on ours alike."""
    answers = []
    for proc in (stock, pair[0]):
        with sasl_client(realm, proc, "alice") as alice:
            token = alice.get_delegation_token("alice", "alice")
        answers.append(java_digest_call(proc, token, "auth-conf"))
    assert answers[0]["ok"] is False and answers[1]["ok"] is False
    assert answers[1]["error"].split(" / ")[-1] == answers[0]["error"].split(" / ")[-1]


@kerberized
def test_a_token_from_one_server_serves_every_worker_of_the_other(realm, pair):
    """Issued on the first server, let in on both workers of the second (six connections),
    renewed on the second, cancelled on the first, then refused by the second; tokens from
    both servers share the one current master key."""
    first, second = pair
    with sasl_client(realm, first, "alice") as alice:
        token = alice.get_delegation_token("alice", "alice")
    for _ in range(6):
        assert _handshake(second, token) == ("ok", ["default"])
    transport, client = _digest(second, token)
    try:
        assert client.renew_delegation_token(token) > dt.now_ms()
    finally:
        transport.close()
    with sasl_client(realm, second, "bob") as bob:
        other = bob.get_delegation_token("bob", "bob")
        keys = bob.get_master_keys()
    assert dt.Token.decode(other).ident().master_key_id == \
        dt.Token.decode(token).ident().master_key_id
    assert len(keys) == 1
    with sasl_client(realm, first, "alice") as alice:
        alice.cancel_delegation_token(token)
    for _ in range(2):
        outcome = _handshake(second, token)
        assert outcome[0] == "TTransportException"
        assert "DIGEST-MD5: IO error acquiring password" in outcome[1]
    assert _handshake(second, other) == ("ok", ["default"])


@kerberized
def test_master_keys_roll_and_expired_tokens_go(realm, tmp_path):
    """With lifetimes of seconds (Hive's settings through --conf): a new master key once the
    update interval has passed, the expired one removed, a token past its renew date refused
    at the handshake and removed."""
    conf = ("--conf", "hive.cluster.delegation.key.update-interval=2000",
            "--conf", "hive.cluster.delegation.token.max-lifetime=3000",
            "--conf", "hive.cluster.delegation.token.renew-interval=1500",
            "--conf", "hive.cluster.delegation.token.gc-interval=500")
    proc = start_proxy(tmp_path, *realm.server_args(*conf), env=realm.server_env(),
                       ask=ready_as(realm))
    try:
        with sasl_client(realm, proc, "alice") as alice:
            first = alice.get_delegation_token("alice", "alice")
            assert _handshake(proc, first) == ("ok", ["default"])
            time.sleep(2.2)
            assert _handshake(proc, first)[0] == "TTransportException"  # renew date passed
            second = alice.get_delegation_token("alice", "alice")
            ids = [dt.Token.decode(t).ident().master_key_id for t in (first, second)]
            assert ids[1] > ids[0]
            assert dt.Token.decode(first).ident().store_string() not in \
                alice.get_all_token_identifiers()
            time.sleep(5.5)
            alice.get_delegation_token("alice", "alice")
            keys = [dt.DelegationKey.decode(k).key_id for k in alice.get_master_keys()]
            assert ids[0] not in keys and ids[1] not in keys and len(keys) == 1
            renew = _outcome(lambda: alice.renew_delegation_token(second))
            assert renew[0] == "MetaException" and "token does not exist" in renew[1]
    finally:
        proc.stop()


@kerberized
def test_servers_asking_at_once_make_one_master_key(realm, tmp_path):
    """Two fresh servers over one fresh store, eight callers at once on both: one master key
    (each transaction re-reads the keys before making one), every token signed with it,
    no sequence number twice, and each token accepted by the other server."""
    import threading
    store = tmp_path / "store"
    servers = [start_proxy(tmp_path / name, *realm.server_args(), store=store,
                           env=realm.server_env(), ask=ready_as(realm)) for name in "ab"]
    try:
        barrier = threading.Barrier(8)
        tokens, failures = [], []

        def ask(proc):
            try:
                with sasl_client(realm, proc, "alice") as alice:
                    barrier.wait(timeout=60)
                    tokens.append((proc, alice.get_delegation_token("alice", "alice")))
            except Exception as exc:  # noqa: BLE001 - reported below
                failures.append(exc)
        threads = [threading.Thread(target=ask, args=(servers[i % 2],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not failures and len(tokens) == 8
        idents = [dt.Token.decode(token).ident() for _, token in tokens]
        assert len({ident.master_key_id for ident in idents}) == 1
        assert len({ident.sequence_number for ident in idents}) == 8
        with sasl_client(realm, servers[0], "alice") as alice:
            assert [dt.DelegationKey.decode(k).key_id for k in alice.get_master_keys()] == \
                [idents[0].master_key_id]
        for proc, token in tokens:
            other = servers[1] if proc is servers[0] else servers[0]
            assert _handshake(other, token) == ("ok", ["default"])
    finally:
        for proc in servers:
            proc.stop()
