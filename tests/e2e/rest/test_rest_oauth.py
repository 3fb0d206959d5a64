"""OAuth2 bearer tokens on the Iceberg REST door (hms_proxy/rest/oauth.py): pyiceberg's
RestCatalog with ``credential=`` (the door's token endpoint) and ``token=``, tokens that expire
or are forged, an external issuer's RS256 and ES256 JWTs against a JWKS file (keys and
signatures made with the openssl command), and the access rules and audit log keyed by the
token's user."""
from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path

import pytest
import requests
from pyiceberg import exceptions as exc

from hms_proxy.security import jwt
from tests.e2e.rest.conftest import start_rest_server

pytestmark = pytest.mark.timeout(300)

ISS, AUD = "https://idp.example.com", "hms-catalog"
RULES = {"rules": [{"branches": "main", "read": ["*"], "write": ["alice", "dave", "erin"]}]}
SECRETS = {"alice": "alice-secret", "bob": "bob-secret"}


# --- an issuer's keys, with the openssl command -------------------------------------------------
def _openssl(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True,
                          timeout=60).stdout


class KeyPair:
    """An RSA and a P-256 key in ``folder`` and the JWKS naming them (kid ``rsa1``, ``ec1``)."""

    def __init__(self, folder: Path):
        self.rsa = folder / "rsa.pem"
        self.ec = folder / "ec.pem"
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                 "-out", str(self.rsa))
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", str(self.ec))
        modulus = _openssl("rsa", "-in", str(self.rsa), "-noout", "-modulus").decode()
        n = bytes.fromhex(modulus.strip().partition("=")[2])
        point = _openssl("pkey", "-in", str(self.ec), "-pubout", "-outform", "DER")[-64:]
        self.jwks = folder / "jwks.json"
        self.jwks.write_text(json.dumps({"keys": [
            {"kty": "RSA", "kid": "rsa1", "use": "sig", "alg": "RS256",
             "n": jwt.b64url(n), "e": "AQAB"},
            {"kty": "EC", "kid": "ec1", "crv": "P-256", "x": jwt.b64url(point[:32]),
             "y": jwt.b64url(point[32:])},
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"}]}))  # not usable: skipped

    def token(self, alg: str = "RS256", kid: str | None = None, **claims) -> str:
        now = int(time.time())
        body = {"iss": ISS, "aud": AUD, "sub": "dave", "iat": now, "exp": now + 300,
                **claims}
        body = {k: v for k, v in body.items() if v is not None}
        kid = kid or ("rsa1" if alg == "RS256" else "ec1")
        header = {"alg": alg, "typ": "JWT", "kid": kid}
        signing_input = (jwt.b64url(json.dumps(header).encode()) + "." +
                         jwt.b64url(json.dumps(body).encode()))
        key = self.rsa if alg == "RS256" else self.ec
        signature = _openssl("dgst", "-sha256", "-sign", str(key), data=signing_input.encode())
        if alg == "ES256":
            signature = _der_to_raw(signature)
        return signing_input + "." + jwt.b64url(signature)


def _der_to_raw(der: bytes) -> bytes:
    """An ECDSA signature as openssl writes it (DER SEQUENCE of r and s) as JWS wants it."""
    assert der[0] == 0x30
    pos = 2 if der[1] < 0x80 else 3
    out = b""
    for _ in range(2):
        assert der[pos] == 0x02
        size = der[pos + 1]
        out += int.from_bytes(der[pos + 2:pos + 2 + size], "big").to_bytes(32, "big")
        pos += 2 + size
    return out


@pytest.fixture(scope="module")
def issuer(tmp_path_factory):
    return KeyPair(tmp_path_factory.mktemp("idp"))


def _files(folder: Path) -> list[str]:
    (folder / "rules.json").write_text(json.dumps(RULES))
    (folder / "secrets.json").write_text(json.dumps(SECRETS))
    return ["--access-rules", str(folder / "rules.json"),
            "--auth-secrets", str(folder / "secrets.json"),
            "--audit-log", str(folder / "audit.log")]


@pytest.fixture(scope="module")
def server(tmp_path_factory, issuer):
    folder = tmp_path_factory.mktemp("oauth")
    srv = start_rest_server(folder, "--autocommit", *_files(folder),
                            "--rest-jwks", str(issuer.jwks), "--rest-jwt-issuer", ISS,
                            "--rest-jwt-audience", AUD)
    srv.audit = folder / "audit.log"
    yield srv
    srv.proc.stop()


def _token(server, user: str, secret: str, **form) -> requests.Response:
    return requests.post(f"{server.rest_uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": user, "client_secret": secret,
        "scope": "catalog", **form})


def _audit(server) -> list[dict]:
    return [json.loads(line) for line in server.audit.read_text().splitlines()]


def _refused(response: requests.Response) -> str:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    error = response.json()["error"]
    assert error["type"] == "NotAuthorizedException" and error["code"] == 401
    return error["message"]


def _namespaces(server, token: str) -> requests.Response:
    return requests.get(f"{server.rest_uri}/v1/main/namespaces", timeout=30,
                        headers={"Authorization": f"Bearer {token}"})


# --- the door's own tokens ---------------------------------------------------------------------
def test_a_credential_gets_a_token_and_its_user_is_the_caller(server):
    import pyarrow as pa

    alice = server.rest(credential="alice:alice-secret",
                        **{"oauth2-server-uri": f"{server.rest_uri}/v1/oauth/tokens"})
    alice.create_namespace("oauth_ns")
    assert ("oauth_ns",) in alice.list_namespaces()
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    alice.create_table("oauth_ns.t", schema=data.schema).append(data)
    assert alice.load_table("oauth_ns.t").scan().to_arrow().num_rows == 2
    entries = _audit(server)
    issued = [e for e in entries if e["method"] == "oauth_token" and e["outcome"] == "ok"]
    assert issued and issued[-1]["identity"] == "alice" and issued[-1]["auth"] == "secret"
    created = [e for e in entries if e["method"] == "create_table" and e["outcome"] == "ok"]
    assert created[-1]["identity"] == "alice" and created[-1]["auth"] == "token"
    assert created[-1]["object"] == "oauth_ns.t"


def test_the_token_endpoint_answers_as_the_protocol_has_it(server):
    answer = _token(server, "alice", "alice-secret")
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 3600
    assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    claims = jwt.parse(body["access_token"]).claims
    assert claims["sub"] == "alice" and claims["exp"] - claims["iat"] == 3600
    # HTTP Basic client authentication (RFC 6749 client_secret_basic) as well
    basic = requests.post(f"{server.rest_uri}/v1/oauth/tokens", timeout=30,
                          data={"grant_type": "client_credentials"},
                          auth=("bob", "bob-secret"))
    assert jwt.parse(basic.json()["access_token"]).claims["sub"] == "bob"
    # Iceberg's refresh: a token exchanged for a new one of the same user
    refreshed = requests.post(f"{server.rest_uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": body["access_token"],
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"})
    assert refreshed.status_code == 200, refreshed.text
    new = jwt.parse(refreshed.json()["access_token"]).claims
    assert new["sub"] == "alice" and new["auth_time"] == claims["auth_time"]


@pytest.mark.parametrize("user,secret", [("alice", "wrong"), ("mallory", "x"), ("", "")])
def test_clients_without_their_secret_get_invalid_client(server, user, secret):
    answer = _token(server, user, secret)
    assert answer.status_code == 401
    body = answer.json()
    assert body["error"] == "invalid_client" and body["error_description"]
    assert "Traceback" not in answer.text
    with pytest.raises(exc.OAuthError, match="invalid_client"):
        server.rest(credential=f"{user}:{secret}")
    assert any(e["method"] == "oauth_token" and e["outcome"] == "denied" for e in _audit(server))


def test_malformed_token_requests_are_refused_in_one_line(server):
    url = f"{server.rest_uri}/v1/oauth/tokens"
    assert requests.post(url, data={"grant_type": "password"}, timeout=30).json()["error"] == \
        "unsupported_grant_type"
    assert requests.post(url, json={"grant_type": "client_credentials"},
                         timeout=30).json()["error"] == "invalid_request"
    big = requests.post(url, data={"grant_type": "client_credentials", "x": "y" * 20000},
                        timeout=30)
    assert big.status_code == 400 and big.json()["error"] == "invalid_request"
    twice = requests.post(url, data="grant_type=client_credentials&grant_type=x", timeout=30,
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert twice.status_code == 400
    exchange = requests.post(url, timeout=30, data={
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": "eyJnope.eyJnope.x",
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"})
    assert exchange.status_code == 400 and exchange.json()["error"] == "invalid_grant"


def test_a_token_from_the_endpoint_works_as_token(server):
    token = _token(server, "alice", "alice-secret").json()["access_token"]
    catalog = server.rest(token=token)
    catalog.create_namespace("oauth_by_token")
    assert ("oauth_by_token",) in catalog.list_namespaces()


def test_forged_tokens_are_refused_never_anonymous(server):
    token = _token(server, "bob", "bob-secret").json()["access_token"]
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=="))
    claims["sub"] = "alice"
    forged = f"{head}.{jwt.b64url(json.dumps(claims).encode())}.{signature}"
    assert "bad signature" in _refused(_namespaces(server, forged))
    other_key = jwt.encode_hs256({**claims}, b"k" * 32, json.loads(
        base64.urlsafe_b64decode(head + "=="))["kid"])
    assert "bad signature" in _refused(_namespaces(server, other_key))
    unsigned = jwt.b64url(b'{"alg":"none"}') + "." + body + "."
    _refused(_namespaces(server, unsigned))
    assert "over" in _refused(_namespaces(server, "eyJ" + "a" * 20000 + ".b.c"))
    with pytest.raises(exc.UnauthorizedError):
        server.rest(token=forged)
    denied = [e for e in _audit(server) if e["method"] == "authenticate"]
    assert denied and denied[-1]["outcome"] == "denied"


def test_bob_is_refused_a_write_on_main(server):
    bob = server.rest(credential="bob:bob-secret")
    assert bob.list_namespaces() is not None  # bob reads main
    with pytest.raises(exc.ForbiddenError):
        bob.create_namespace("bobs_ns")
    denied = [e for e in _audit(server) if e["outcome"] == "denied" and
              e["identity"] == "bob"]
    assert denied and denied[-1]["auth"] == "token"


def test_expired_tokens_are_refused_and_a_credential_gets_a_new_one(tmp_path):
    folder = tmp_path / "short"
    folder.mkdir()
    srv = start_rest_server(folder, "--autocommit", *_files(folder),
                            "--rest-token-lifetime", "1")
    try:
        token = _token(srv, "alice", "alice-secret").json()["access_token"]
        catalog = srv.rest(credential="alice:alice-secret")
        time.sleep(2.2)
        assert "expired" in _refused(_namespaces(srv, token))
        with pytest.raises(exc.UnauthorizedError):
            srv.rest(token=token)
        # pyiceberg asks the endpoint again on a 401 when it has a credential
        catalog.create_namespace("after_expiry")
    finally:
        srv.proc.stop()


# --- an external issuer ------------------------------------------------------------------------
@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_an_issuers_jwt_names_its_user(server, issuer, alg):
    catalog = server.rest(token=issuer.token(alg, sub="erin" if alg == "ES256" else "dave"))
    name = f"jwt_{alg.lower()}"
    catalog.create_namespace(name)
    assert (name,) in catalog.list_namespaces()
    created = [e for e in _audit(server) if e["method"] == "create_database" and
               e["outcome"] == "ok"]
    assert created[-1]["auth"] == "jwt"
    assert created[-1]["identity"] == ("erin" if alg == "ES256" else "dave")


# times are offsets from when the test runs (collection may be long before it): ("now", s)
@pytest.mark.parametrize("claims,reason", [
    ({"iss": "https://evil.example.com"}, "issuer"),
    ({"aud": "another-service"}, "audience"),
    ({"aud": ["x", "y"]}, "audience"),
    ({"exp": ("now", -600)}, "expired"),
    ({"exp": None}, "no expiry"),
    ({"nbf": ("now", 600)}, "not valid yet"),
    ({"sub": None}, "no user"),
])
def test_an_issuers_jwt_with_wrong_claims_is_refused(server, issuer, claims, reason):
    claims = {k: int(time.time()) + v[1] if isinstance(v, tuple) else v
              for k, v in claims.items()}
    assert reason in _refused(_namespaces(server, issuer.token(**claims)))


def test_an_issuers_jwt_with_the_wrong_key_is_refused(server, issuer):
    good = issuer.token()
    assert "not in the JWKS" in _refused(_namespaces(server, issuer.token(kid="rsa9")))
    # the RSA key's signature under the EC key's kid: the key decides the algorithm
    assert "signature" in _refused(_namespaces(server, issuer.token("RS256", kid="ec1")))
    head, body, _ = good.split(".")
    garbage = f"{head}.{body}.{jwt.b64url(b'x' * 256)}"
    assert "signature" in _refused(_namespaces(server, garbage))
    with pytest.raises(exc.UnauthorizedError):
        server.rest(token=issuer.token(aud="nope"))


# --- servers over one store, and what stops serve ---------------------------------------------
def test_servers_over_one_store_make_one_key_and_take_each_others_tokens(tmp_path):
    """Both servers asked for their first token at once: one signing key is made, and a token
    of either is accepted by the other."""
    from concurrent.futures import ThreadPoolExecutor

    files = _files(tmp_path)
    first = start_rest_server(tmp_path / "a", "--autocommit", *files)
    second = None
    try:
        from hms_proxy.tools.metastores import start_proxy
        from tests.support.process import REPO_ROOT
        proc = start_proxy(tmp_path / "b", "--rest-port", "0", "--autocommit", *files,
                           store=first.store, cwd=REPO_ROOT)
        second = proc
        second_uri = f"http://127.0.0.1:{proc.announced_port('rest')}"
        urls = [first.rest_uri, second_uri] * 4
        with ThreadPoolExecutor(len(urls)) as pool:
            answers = list(pool.map(lambda url: requests.post(
                f"{url}/v1/oauth/tokens", timeout=30, data={
                    "grant_type": "client_credentials", "client_id": "alice",
                    "client_secret": "alice-secret"}), urls))
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        kids = {jwt.parse(a.json()["access_token"]).header["kid"] for a in answers}
        assert len(kids) == 1
        for answer, url in zip(answers, urls[1:] + urls[:1]):  # each at the other server
            ok = requests.get(f"{url}/v1/main/namespaces", timeout=30, headers={
                "Authorization": f"Bearer {answer.json()['access_token']}"})
            assert ok.status_code == 200, ok.text
    finally:
        first.proc.stop()
        if second is not None:
            second.stop()


@pytest.mark.parametrize("text,why", [(None, "No such file"), ("[]", "no 'keys' list"),
                                      ('{"keys": []}', "no RS256 or ES256")])
def test_an_unusable_jwks_stops_serve_in_one_line(tmp_path, text, why):
    import sys

    from tests.support.process import REPO_ROOT

    jwks = tmp_path / "jwks.json"
    if text is not None:
        jwks.write_text(text)
    out = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "serve", "--store",
                          str(tmp_path / "store"), "--port", "0", "--rest-port", "0",
                          "--rest-jwks", str(jwks)], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith(f"hms-proxy: error: --rest-jwks {jwks}: ") and why in out.stderr


# --- Iceberg's Java client ---------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(1200)
def test_spark_with_a_credential_and_with_a_token(server, issuer):
    """Iceberg's Java REST client (Spark's runtime): ``credential`` fetched from the endpoint,
    ``token`` the door's or an issuer's; bob's credential is refused a write, a forged token
    is refused."""
    import shutil

    from hms_proxy.tools import spark_iceberg

    if shutil.which("java") is None:
        pytest.skip("no java: Spark runs on the JVM")
    try:
        spark_iceberg.ensure()
    except (RuntimeError, OSError) as error:
        pytest.skip(f"Spark with Iceberg's runtime could not be set up: {error}")
    token = _token(server, "alice", "alice-secret").json()["access_token"]
    endpoint = {"oauth2-server-uri": f"{server.rest_uri}/v1/oauth/tokens"}
    catalogs = {
        **spark_iceberg.catalog_conf("by_cred", "rest", server.rest_uri, "main",
                                     {"credential": "alice:alice-secret", **endpoint}),
        **spark_iceberg.catalog_conf("by_token", "rest", server.rest_uri, "main",
                                     {"token": token}),
        **spark_iceberg.catalog_conf("by_jwt", "rest", server.rest_uri, "main",
                                     {"token": issuer.token()}),
        **spark_iceberg.catalog_conf("as_bob", "rest", server.rest_uri, "main",
                                     {"credential": "bob:bob-secret", **endpoint}),
        **spark_iceberg.catalog_conf("forged", "rest", server.rest_uri, "main",
                                     {"token": token[:-4] + "AAAA"}),
    }
    kept = spark_iceberg.KeptSpark()
    try:
        got = kept.run_sql([
            "CREATE NAMESPACE by_cred.spark_oauth",
            "CREATE TABLE by_cred.spark_oauth.t (id bigint) USING iceberg",
            "INSERT INTO by_cred.spark_oauth.t VALUES (1), (2)",
            "INSERT INTO by_token.spark_oauth.t VALUES (3)",
            "INSERT INTO by_jwt.spark_oauth.t VALUES (4)",
            "SELECT id FROM as_bob.spark_oauth.t ORDER BY id",
            "INSERT INTO as_bob.spark_oauth.t VALUES (5)",
            "SELECT id FROM forged.spark_oauth.t",
        ], catalogs)
    finally:
        kept.close()
    assert all("error" not in r for r in got[:6]), got
    assert got[5]["rows"] == [[1], [2], [3], [4]]  # bob reads main
    assert "error" in got[6] and "Forbidden" in got[6]["error"], got[6]
    assert "error" in got[7] and ("NotAuthorized" in got[7]["error"] or
                                  "401" in got[7]["error"]), got[7]
    users = {(e["identity"], e["auth"]) for e in _audit(server)
             if e["outcome"] == "ok" and e["method"].startswith(("create_", "alter_"))}
    assert {("alice", "token"), ("dave", "jwt")} <= users
