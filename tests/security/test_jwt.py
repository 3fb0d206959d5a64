"""hms_proxy/security/jwt.py on its own: HS256 round trips, the claims' times, the keys a JWKS
may hold, and the JWKS cache's bounded refresh (RS256 and ES256 signatures of real keys are
checked end to end in tests/e2e/rest/test_rest_oauth.py)."""
from __future__ import annotations

import json
import time

import pytest

from hms_proxy.security import jwt

# a P-256 point (the curve's base point) and a 2048-bit RSA modulus shape
G_X, G_Y = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
            0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)


def _ec(x: int, y: int) -> dict:
    return {"kty": "EC", "crv": "P-256", "x": jwt.b64url(x.to_bytes(32, "big")),
            "y": jwt.b64url(y.to_bytes(32, "big"))}


def _rsa(bits: int) -> dict:
    return {"kty": "RSA", "n": jwt.b64url(((1 << (bits - 1)) | 1).to_bytes(bits // 8, "big")),
            "e": "AQAB"}


def test_hs256_round_trip_and_tampering():
    token = jwt.encode_hs256({"sub": "alice", "exp": time.time() + 60}, b"k" * 32, "kid1")
    parsed = jwt.parse(token)
    jwt.verify_hs256(parsed, b"k" * 32)
    assert parsed.header["kid"] == "kid1" and parsed.claims["sub"] == "alice"
    with pytest.raises(jwt.BadToken, match="bad signature"):
        jwt.verify_hs256(parsed, b"x" * 32)
    with pytest.raises(jwt.BadToken):
        jwt.parse(token + ".x")
    with pytest.raises(jwt.BadToken, match="not base64url"):
        jwt.parse("eyJ!.eyJ.x")
    with pytest.raises(jwt.BadToken, match="not JSON"):
        jwt.parse(jwt.b64url(b"[" * 5000) + ".e30.x")


@pytest.mark.parametrize("claims,error", [
    ({}, "no expiry"), ({"exp": True}, "no expiry"), ({"exp": 99}, "expired"),
    ({"exp": 200, "nbf": 150}, "not valid yet"), ({"exp": 200, "nbf": "x"}, "nbf"),
])
def test_times(claims, error):
    with pytest.raises(jwt.BadToken, match=error):
        jwt.check_times(claims, now=100)


def test_times_within_the_leeway():
    jwt.check_times({"exp": 90, "nbf": 120}, now=100, leeway=30)


def test_keys_a_jwks_may_hold():
    assert jwt.key_of(_ec(G_X, G_Y))[0] == "ES256"
    assert jwt.key_of(_rsa(2048))[0] == "RS256"
    for bad, why in [(_ec(G_X, G_Y + 1), "not on P-256"), (_rsa(1024), "under 2048"),
                     ({**_ec(G_X, G_Y), "crv": "P-384"}, "P-256"),
                     ({**_rsa(2048), "use": "enc"}, "use"),
                     ({**_rsa(2048), "alg": "RS512"}, "not served"),
                     ({"kty": "oct", "k": "c2VjcmV0"}, "not served")]:
        with pytest.raises(jwt.JwksError, match=why):
            jwt.key_of(bad)


def test_the_jwks_is_reread_for_an_unknown_kid_at_most_every_min_refresh(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{**_ec(G_X, G_Y), "kid": "a"}]}))
    jwks = jwt.Jwks(str(path), ttl=3600, min_refresh=0.2).load()
    assert jwks.key("a") is not None and jwks.key(None) is not None  # the only key
    path.write_text(json.dumps({"keys": [{**_ec(G_X, G_Y), "kid": "b"}]}))
    assert jwks.key("b") is None  # just read: not again yet
    time.sleep(0.3)
    assert jwks.key("b") is not None and jwks.key("a") is None  # the issuer's roll
    path.write_text("not json")
    time.sleep(0.3)
    assert jwks.key("c") is None and jwks.key("b") is not None  # keeps what it had


@pytest.mark.parametrize("text,error", [("not json", "not JSON"), ('{"keys": 1}', "keys"),
                                        ('{"keys": [{"kty": "oct"}]}', "no RS256")])
def test_a_jwks_without_usable_keys_is_refused(tmp_path, text, error):
    path = tmp_path / "jwks.json"
    path.write_text(text)
    with pytest.raises(jwt.JwksError, match=error):
        jwt.Jwks(str(path)).load()
    with pytest.raises(jwt.JwksError):
        jwt.Jwks(str(tmp_path / "missing.json")).load()


def test_a_jwks_url_is_read_and_its_answers_bounded(tmp_path):
    import http.server
    import threading
    from functools import partial

    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**_ec(G_X, G_Y), "kid": "a"}]}))
    (tmp_path / "big.json").write_text(" " * (jwt.MAX_JWKS + 1))
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        assert jwt.Jwks(f"{base}/jwks.json").load().key("a")[0] == "ES256"
        with pytest.raises(jwt.JwksError, match="over"):
            jwt.Jwks(f"{base}/big.json").load()
        with pytest.raises(jwt.JwksError):
            jwt.Jwks(f"{base}/missing.json").load()
    finally:
        httpd.shutdown()
