"""Kerberos SPNEGO on the HTTP API and the Iceberg REST door (serve --http-kerberos-principal),
against a real MIT KDC on loopback: ``curl --negotiate -u :`` (Debian's curl is built with
GSS-API) as the client a user has, and tokens made here with the gssapi module for what curl
would not send (a ticket for another service, a replayed or oversized token)."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from hms_proxy.tools import kdc as kdc_tool
from hms_proxy.tools.metastores import start_proxy
from tests.support.kerberos import as_user, client_modules_missing, ready_as, started_realm
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.skipif(bool(kdc_tool.missing() or client_modules_missing()),
                                reason=kdc_tool.missing() or client_modules_missing() or "")

SPNEGO_OID = "1.3.6.1.5.5.2"
RULES = {"rules": [{"branches": "main", "read": ["alice", "bob", "carol"],
                    "write": ["alice", "carol"]}]}


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with started_realm(tmp_path_factory.mktemp("krb")) as realm:
        realm.http_keytab = realm.kdc.keytab("HTTP/localhost")  # only the HTTP principal's key
        yield realm


@pytest.fixture(scope="module")
def server(realm, tmp_path_factory):
    """A Kerberized server with both doors, SPNEGO as HTTP/localhost (a keytab of its own),
    access rules (anonymous may do nothing on main), a secret for carol and an audit log."""
    workdir = tmp_path_factory.mktemp("spnego")
    (workdir / "secrets.json").write_text(json.dumps({"carol": "carols-secret"}))
    proc = start_proxy(workdir, *realm.server_args(
        "--http-port", "0", "--rest-port", "0",
        "--http-kerberos-principal", f"HTTP/localhost@{realm.name}",
        "--http-kerberos-keytab", str(realm.http_keytab),
        "--access-rules", str(_rules(workdir)),
        "--auth-secrets", str(workdir / "secrets.json"),
        "--audit-log", str(workdir / "audit.log")), env=realm.server_env(), ask=ready_as(realm))
    proc.audit = workdir / "audit.log"
    proc.api = f"http://localhost:{proc.announced_port('http')}"
    proc.rest = f"http://localhost:{proc.announced_port('rest')}"
    yield proc
    proc.stop()


def _curl(realm, user: str | None, url: str, *args: str) -> tuple[int, dict, str]:
    """``curl --negotiate -u :`` as ``user`` (its ticket cache): (status, headers, body) of
    the last answer (after a challenge, curl asks again with its token)."""
    env = realm.kdc.env(realm.user(user) if user else realm.folder / "nobody.ccache")
    out = subprocess.run(["curl", "-sS", "--negotiate", "-u", ":", "-D", "/dev/stderr",
                          *args, url], env=env, capture_output=True, text=True, timeout=60,
                         check=True)
    answer = out.stderr.split("\n\n")  # text=True: CRLF read as LF
    lines = [block for block in answer if block.startswith("HTTP/")][-1].split("\n")
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers.setdefault(key.strip().lower(), value.strip())
    return int(lines[0].split()[1]), headers, out.stdout


def _context(realm, user: str, service: str = "HTTP/localhost"):
    """A client's GSS context (SPNEGO, mutual authentication) for ``service`` as ``user``."""
    import gssapi

    with as_user(realm, user):
        name = gssapi.Name(f"{service}@{realm.name}", gssapi.NameType.kerberos_principal)
        context = gssapi.SecurityContext(
            name=name, usage="initiate", mech=gssapi.OID.from_int_seq(SPNEGO_OID),
            flags=gssapi.RequirementFlag.mutual_authentication)
        return context, base64.b64encode(context.step()).decode()


def _audit(server) -> list[tuple]:
    """The audit log's entries of identified callers (curl's first, anonymous try of each
    request is refused and recorded too)."""
    lines = server.audit.read_text().splitlines() if server.audit.exists() else []
    return [(e["identity"], e["auth"], e["method"], e["outcome"])
            for e in map(json.loads, lines) if e["identity"] is not None]


# --- the principal is the caller -----------------------------------------------------------
def test_curl_negotiate_on_the_http_api(realm, server):
    """Anonymous callers are challenged with Negotiate (and Basic: secrets are configured);
    curl authenticates (its token sent unasked, or after the challenge), and the access rules
    see the principal's short name: bob may read main, not write it; alice may. The audit
    log names them, auth kerberos."""
    status, headers, _ = _curl(realm, None, server.api + "/api/v1/databases?ref=main")
    assert status == 401
    assert headers["www-authenticate"] == 'Negotiate, Basic realm="hms-proxy", charset="UTF-8"'

    status, _, body = _curl(realm, "bob", server.api + "/api/v1/info")
    assert status == 200 and json.loads(body)["caller"] == {"identity": "bob",
                                                            "auth": "kerberos"}
    status, headers, body = _curl(realm, "bob", server.api + "/api/v1/databases?ref=main")
    assert status == 200, body
    assert headers["www-authenticate"].startswith("Negotiate ")  # the mutual token
    protect = ("-X", "PUT", "-H", "Content-Type: application/json")
    before = len(_audit(server))
    status, _, body = _curl(realm, "bob", server.api + "/api/v1/branches/main/protection",
                            *protect, "-d", '{"protected": true}')
    assert status == 403 and "user 'bob' may not write branch 'main'" in body
    for flag in ("true", "false"):
        status, _, body = _curl(realm, "alice", server.api + "/api/v1/branches/main/protection",
                                *protect, "-d", f'{{"protected": {flag}}}')
        assert status == 200, body
    assert _audit(server)[before:] == [("bob", "kerberos", "protect_branch", "denied"),
                                       ("alice", "kerberos", "protect_branch", "ok"),
                                       ("alice", "kerberos", "unprotect_branch", "ok")]


def test_curl_negotiate_on_the_rest_door(realm, server):
    """The REST door: an anonymous listing is challenged; curl authenticates, bob cannot
    create a namespace on main, alice can, and both go to the audit log as kerberos."""
    status, headers, _ = _curl(realm, None, server.rest + "/v1/main/namespaces")
    assert status == 401 and headers["www-authenticate"].startswith("Negotiate")
    status, _, body = _curl(realm, "alice", server.rest + "/v1/config?warehouse=main")
    assert status == 200 and json.loads(body)["overrides"] == {"prefix": "main"}
    create = ("-X", "POST", "-H", "Content-Type: application/json",
              "-d", '{"namespace": ["spnego_ns"]}')
    before = len(_audit(server))
    status, _, body = _curl(realm, "bob", server.rest + "/v1/main/namespaces", *create)
    assert status == 403 and "may not write branch 'main'" in body
    status, headers, body = _curl(realm, "alice", server.rest + "/v1/main/namespaces", *create)
    assert status == 200, body
    assert headers["www-authenticate"].startswith("Negotiate ")
    status, _, body = _curl(realm, "bob", server.rest + "/v1/main/namespaces")
    assert status == 200 and ["spnego_ns"] in json.loads(body)["namespaces"]
    assert _audit(server)[before:] == [("bob", "kerberos", "create_database", "denied"),
                                       ("alice", "kerberos", "create_database", "ok")]


def test_the_mutual_token_completes_the_clients_context(realm, server):
    """One round: the answer's ``WWW-Authenticate: Negotiate <token>`` completes the client's
    context (the server proved who it is), on both doors."""
    for url in (server.api + "/api/v1/info", server.rest + "/v1/config"):
        context, token = _context(realm, "alice")
        answer = requests.get(url, headers={"Authorization": f"Negotiate {token}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        scheme, _, reply = answer.headers["WWW-Authenticate"].partition(" ")
        assert scheme == "Negotiate"
        context.step(base64.b64decode(reply))
        assert context.complete


# --- refusals -------------------------------------------------------------------------------
def _refusals(realm, server, url: str) -> list[tuple[int, str]]:
    """(status, first words of the message) for tokens that must not be accepted."""
    _, replayed = _context(realm, "alice")
    _, hive = _context(realm, "alice", "hive/localhost")
    tokens = {
        "garbage": "bm90IGEgdG9rZW4=",              # base64 of "not a token"
        "not base64": "!!!",
        "another service's ticket": hive,
        "oversized": "A" * (70 << 10),
    }
    out = []
    assert requests.get(url, headers={"Authorization": f"Negotiate {replayed}"},
                        timeout=30).status_code == 200
    tokens["replayed"] = replayed
    for what, token in tokens.items():
        answer = requests.get(url, headers={"Authorization": f"Negotiate {token}"}, timeout=30)
        message = answer.json()["error"]["message"]
        out.append((what, answer.status_code, message.split(":")[0]))
        assert "Traceback" not in answer.text
    return out


@pytest.mark.parametrize("door", ["api", "rest"])
def test_tokens_not_accepted_are_refused_with_403(realm, server, door):
    """As Hadoop's KerberosAuthenticationHandler: a token the acceptor refuses is 403 (a
    replay too: each request is accepted on its own, the replay cache keeps a token once).
    A token over 64 KiB is not taken; the API's HTTP parser refuses a header line that long
    before (431, as http.server bounds a line)."""
    url = server.api + "/api/v1/info" if door == "api" else server.rest + "/v1/config"
    seen = len(server.audit.read_text().splitlines()) if server.audit.exists() else 0
    refused = _refusals(realm, server, url)
    entries = [json.loads(line) for line in server.audit.read_text().splitlines()[seen:]]
    assert [(e["identity"], e["method"], e["outcome"], e["error"].split(":")[0])
            for e in entries] == [(None, "authenticate", "denied",
                                   "Kerberos authentication failed")] * (4 if door == "api"
                                                                         else 5)
    assert [(what, status) for what, status, _ in refused] == [
        ("garbage", 403), ("not base64", 403), ("another service's ticket", 403),
        ("oversized", 431 if door == "api" else 403), ("replayed", 403)]
    assert {word for what, status, word in refused if status == 403} == {
        "Kerberos authentication failed"}
    assert "Traceback" not in server.log_text()


def test_claimed_names_are_not_believed_a_secret_is(realm, server):
    """With SPNEGO, X-HMS-User is a claim: anonymous, challenged; a secret of --auth-secrets
    (Basic) still names its user."""
    claimed = requests.get(server.api + "/api/v1/databases?ref=main",
                           headers={"X-HMS-User": "alice"}, timeout=30)
    assert claimed.status_code == 401
    assert claimed.headers["WWW-Authenticate"].startswith("Negotiate")
    rest_claimed = requests.get(server.rest + "/v1/main/namespaces",
                                headers={"X-HMS-User": "alice"}, timeout=30)
    assert rest_claimed.status_code == 401
    basic = requests.get(server.api + "/api/v1/databases?ref=main",
                         auth=("carol", "carols-secret"), timeout=30)
    assert basic.status_code == 200, basic.text


def test_a_token_of_an_expired_ticket_is_refused(realm, tmp_path):
    """A token made from a 3-second ticket, sent once the ticket has ended (the server's
    krb5.conf allows 1 s of clock skew): 403, the GSS-API's reason given."""
    import time

    import gssapi

    conf = tmp_path / "krb5.conf"
    conf.write_text((realm.kdc.folder / "krb5.conf").read_text().replace(
        "[libdefaults]\n", "[libdefaults]\n clockskew = 1\n"))
    proc = start_proxy(tmp_path / "server", "--http-port", "0",
                       "--http-kerberos-principal", f"HTTP/localhost@{realm.name}",
                       "--http-kerberos-keytab", str(realm.http_keytab),
                       env=dict(realm.server_env(), KRB5_CONFIG=str(conf)))
    try:
        cache = tmp_path / "short.ccache"
        subprocess.run(["kinit", "-l", "3s", "-kt", str(realm.kdc.keytab("alice")),
                        f"alice@{realm.name}"], env=realm.kdc.env(cache), check=True,
                       capture_output=True, timeout=60)
        with as_user(realm, None):
            creds = gssapi.Credentials(usage="initiate", store={"ccache": f"FILE:{cache}"})
            name = gssapi.Name(f"HTTP/localhost@{realm.name}",
                               gssapi.NameType.kerberos_principal)
            context = gssapi.SecurityContext(name=name, creds=creds, usage="initiate",
                                             mech=gssapi.OID.from_int_seq(SPNEGO_OID))
            token = base64.b64encode(context.step()).decode()
        time.sleep(5)
        answer = requests.get(f"http://localhost:{proc.announced_port('http')}/api/v1/info",
                              headers={"Authorization": f"Negotiate {token}"}, timeout=30)
        assert answer.status_code == 403
        assert answer.json()["error"]["message"] == \
            "Kerberos authentication failed: GSS accept failed: Ticket expired"
    finally:
        proc.stop()


# --- configuration ------------------------------------------------------------------------
def test_the_http_principal_defaults_to_the_kerberos_keytab_and_host(realm, tmp_path):
    """``HTTP/_HOST`` with the door on localhost, its key in --kerberos-keytab beside hive's."""
    both = realm.kdc.keytab("hive/localhost", "HTTP/localhost", path=tmp_path / "both.keytab")
    proc = start_proxy(tmp_path / "server", "--kerberos-principal", f"hive/localhost@{realm.name}",
                       "--kerberos-keytab", str(both), "--http-port", "0",
                       "--http-host", "localhost",
                       "--http-kerberos-principal", f"HTTP/_HOST@{realm.name}",
                       env=realm.server_env(), ask=ready_as(realm))
    try:
        url = f"http://localhost:{proc.announced_port('http')}/api/v1/info"
        status, _, body = _curl(realm, "alice", url)  # curl sends its token unasked
        assert status == 200 and json.loads(body)["caller"] == {"identity": "alice",
                                                                "auth": "kerberos"}
    finally:
        proc.stop()


def test_every_worker_of_processes_takes_spnego(realm, tmp_path):
    """--processes 2: each worker loads the HTTP principal's key; whichever takes a request
    names its caller."""
    from hms_proxy.tools.ports import free_port
    from tests.support.wait import wait_until

    port = free_port()
    proc = start_proxy(tmp_path / "server", "--processes", "2", "--rest-port", str(port),
                       "--http-kerberos-principal", f"HTTP/localhost@{realm.name}",
                       "--http-kerberos-keytab", str(realm.http_keytab),
                       "--access-rules", str(_rules(tmp_path)), env=realm.server_env(),
                       ask=lambda proc: None)  # anonymous Thrift calls are refused: a port
    url = f"http://localhost:{port}/v1/main/namespaces"
    try:
        def answers():
            try:
                return requests.get(url, timeout=5).status_code == 401
            except requests.ConnectionError:
                return False
        wait_until(answers, what="the REST port of the workers")
        for _ in range(8):
            status, _, body = _curl(realm, "bob", url)
            assert status == 200, body
    finally:
        proc.stop()


def _rules(folder: Path) -> Path:
    path = folder / "rules.json"
    path.write_text(json.dumps(RULES))
    return path


def _serve_fails(realm, tmp_path, *args) -> str:
    out = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "serve", "--store",
                          str(tmp_path / "store"), "--port", "0", "--http-port", "0", *args],
                         env=dict(realm.server_env(), PYTHONPATH=str(REPO_ROOT)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    return out.stderr.strip()


def test_an_unusable_http_keytab_stops_serve_in_one_line(realm, tmp_path):
    principal = ("--http-kerberos-principal", f"HTTP/localhost@{realm.name}")
    missing = _serve_fails(realm, tmp_path, *principal,
                           "--http-kerberos-keytab", str(tmp_path / "none.keytab"))
    assert missing == (f"hms-proxy: error: --http-kerberos-keytab {tmp_path / 'none.keytab'}: "
                       "no such readable file")
    wrong = _serve_fails(realm, tmp_path, *realm.server_args(*principal))
    assert wrong.startswith(f"hms-proxy: error: --kerberos-keytab {realm.server_keytab}: "
                            f"no key for HTTP/localhost@{realm.name} in it")
    alone = _serve_fails(realm, tmp_path, *principal)
    assert alone == ("hms-proxy: error: --http-kerberos-principal needs --http-kerberos-keytab "
                     "(or --kerberos-keytab)")


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_has_spnego():
    assert "SPNEGO" in subprocess.run(["curl", "-V"], capture_output=True, text=True).stdout


def test_curl_negotiate_on_hms_proxy_api_alone(realm, server, tmp_path):
    """``hms-proxy api`` (the HTTP API without Thrift) over the same store takes SPNEGO as
    ``serve --http-port`` does: anonymous is challenged, curl's principal is the caller the
    rules see."""
    from tests.support.http_api import ApiProcess

    api = ApiProcess(tmp_path / "api", server.workdir / "store",
                     "--http-kerberos-principal", f"HTTP/localhost@{realm.name}",
                     "--http-kerberos-keytab", str(realm.http_keytab),
                     "--access-rules", str(_rules(tmp_path)),
                     env=realm.server_env())
    try:
        base = f"http://localhost:{api.port}"
        status, headers, _ = _curl(realm, None, base + "/api/v1/databases?ref=main")
        assert status == 401 and headers["www-authenticate"].startswith("Negotiate")
        status, _, body = _curl(realm, "bob", base + "/api/v1/info")
        assert status == 200 and json.loads(body)["caller"] == {"identity": "bob",
                                                                "auth": "kerberos"}
        status, _, body = _curl(realm, "bob", base + "/api/v1/branches/main/protection",
                                "-X", "PUT", "-H", "Content-Type: application/json",
                                "-d", '{"protected": true}')
        assert status == 403 and "user 'bob' may not write branch 'main'" in body
    finally:
        api.stop()
