"""JSON Web Tokens (RFC 7519) as the Iceberg REST door takes them as bearer tokens: its own,
HS256 under a key the servers over one store share (:mod:`hms_proxy.rest.oauth`), and an
external issuer's, RS256 or ES256 under the keys of its JWKS (RFC 7517; ``serve --rest-jwks``).

HS256 with the standard library; RS256 (RSASSA-PKCS1-v1_5, RFC 8017) and ES256 (ECDSA over
P-256) verified by the ``cryptography`` package (the ``rest`` extra). A token is refused with
:class:`BadToken`, whose message says why in a few words and never echoes the token.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import threading
import time
import urllib.request
from dataclasses import dataclass

#: the longest bearer token looked at (an IdP's token with many groups is a few kilobytes)
MAX_TOKEN = 16 << 10
#: the largest JWKS document read (a file or an answer)
MAX_JWKS = 1 << 20
#: clock skew allowed on an external issuer's ``exp`` and ``nbf``, in seconds
LEEWAY = 30
MIN_RSA_BITS = 2048
ASYMMETRIC = ("RS256", "ES256")


class BadToken(Exception):
    """A token that does not verify (malformed, bad signature, expired, not for us)."""


class JwksError(Exception):
    """A JWKS that cannot be had (unreadable, not JSON, no usable key)."""


# --- the compact serialisation -------------------------------------------------------------
def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


def unb64url(text: str) -> bytes:
    if not isinstance(text, str) or not _BASE64URL.fullmatch(text):
        raise BadToken("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise BadToken("not base64url") from None


def looks_like_jwt(token: str) -> bool:
    """A bearer token meant as a JWT (the header of every JWT begins ``{"``, base64 ``eyJ``),
    as opposed to this door's older ``USER:SECRET`` and plain user bearer values."""
    return token.startswith("eyJ") and token.count(".") == 2


@dataclass(frozen=True)
class Parsed:
    header: dict
    claims: dict
    signing_input: bytes
    signature: bytes


def parse(token: str) -> Parsed:
    if len(token) > MAX_TOKEN:
        raise BadToken(f"token over {MAX_TOKEN} bytes")
    parts = token.split(".")
    if len(parts) != 3:
        raise BadToken("not a JWT (three dot-separated parts)")
    try:
        header = json.loads(unb64url(parts[0]))
        claims = json.loads(unb64url(parts[1]))
    except (ValueError, RecursionError):
        raise BadToken("header or claims are not JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise BadToken("header or claims are not JSON objects")
    return Parsed(header, claims, f"{parts[0]}.{parts[1]}".encode("ascii"), unb64url(parts[2]))


def encode_hs256(claims: dict, key: bytes, kid: str | None = None) -> str:
    header = {"alg": "HS256", "typ": "JWT", **({"kid": kid} if kid else {})}
    signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                     b64url(json.dumps(claims, separators=(",", ":")).encode()))
    signature = hmac.new(key, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def verify_hs256(parsed: Parsed, key: bytes) -> None:
    if parsed.header.get("alg") != "HS256":
        raise BadToken("not signed with HS256")
    expected = hmac.new(key, parsed.signing_input, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, parsed.signature):
        raise BadToken("bad signature")


def check_times(claims: dict, now: float | None = None, leeway: int = 0) -> None:
    """``exp`` is required and must be ahead; ``nbf``, when there, behind."""
    now = time.time() if now is None else now
    exp, nbf = claims.get("exp"), claims.get("nbf")
    if not isinstance(exp, (int, float)) or isinstance(exp, bool) or not math.isfinite(exp):
        raise BadToken("no expiry (exp)")
    if now >= exp + leeway:
        raise BadToken("expired")
    if nbf is not None:
        if not isinstance(nbf, (int, float)) or isinstance(nbf, bool) or \
                not math.isfinite(nbf):
            raise BadToken("nbf is not a number")
        if now + leeway < nbf:
            raise BadToken("not valid yet (nbf)")


# --- RS256 and ES256 -------------------------------------------------------------------------
# The signatures are checked by the ``cryptography`` package (OpenSSL), never by hand.
_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF  # P-256's field
_A = _P - 3
_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B


@dataclass(frozen=True)
class RsaKey:
    n: int
    e: int

    def verify(self, message: bytes, signature: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding, rsa

        if len(signature) != (self.n.bit_length() + 7) // 8:
            return False
        key = rsa.RSAPublicNumbers(self.e, self.n).public_key()
        try:
            key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class EcKey:
    x: int
    y: int

    def verify(self, message: bytes, signature: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        if len(signature) != 64:  # JWS: r and s, 32 bytes each (not DER)
            return False
        r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
        key = ec.EllipticCurvePublicNumbers(self.x, self.y, ec.SECP256R1()).public_key()
        try:
            key.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        return True


def _int(jwk: dict, name: str) -> int:
    value = jwk.get(name)
    if not isinstance(value, str) or not value:
        raise JwksError(f"member {name!r} missing")
    try:
        return int.from_bytes(unb64url(value), "big")
    except BadToken:
        raise JwksError(f"member {name!r} is not base64url") from None


def key_of(jwk: dict) -> tuple[str, RsaKey | EcKey]:
    """A JWK's algorithm and public key; raises JwksError for one not usable here (a private
    or symmetric key, another curve, an RSA key under 2048 bits, a key not for signatures)."""
    if jwk.get("use") not in (None, "sig"):
        raise JwksError("not a signature key (use)")
    kty = jwk.get("kty")
    if kty == "RSA":
        if jwk.get("alg") not in (None, "RS256"):
            raise JwksError(f"algorithm {jwk.get('alg')!r} is not served (RS256, ES256)")
        key = RsaKey(_int(jwk, "n"), _int(jwk, "e"))
        if key.n.bit_length() < MIN_RSA_BITS or key.e < 3 or key.e % 2 == 0:
            raise JwksError(f"an RSA key under {MIN_RSA_BITS} bits or with a bad exponent")
        return "RS256", key
    if kty == "EC":
        if jwk.get("crv") != "P-256" or jwk.get("alg") not in (None, "ES256"):
            raise JwksError("an EC key not on P-256 (ES256)")
        x, y = _int(jwk, "x"), _int(jwk, "y")
        if not (0 <= x < _P and 0 <= y < _P) or (y * y - x * x * x - _A * x - _B) % _P:
            raise JwksError("an EC point not on P-256")
        return "ES256", EcKey(x, y)
    raise JwksError(f"key type {kty!r} is not served (RSA, EC)")


# --- an external issuer -----------------------------------------------------------------------
class Jwks:
    """An issuer's keys by ``kid``, from a file or an ``https://`` (or ``http://``) URL: read at
    start (a JWKS that cannot be had stops ``serve``), re-read at most every ``ttl`` seconds,
    and on a ``kid`` not known at most every ``min_refresh`` seconds (an issuer's key roll
    is picked up at once, a flood of made-up kids costs one fetch a while). A JWKS that
    cannot be re-read keeps the keys it had."""

    def __init__(self, source: str, ttl: float = 300.0, min_refresh: float = 30.0,
                 timeout: float = 10.0):
        self.source = source
        self.ttl, self.min_refresh, self.timeout = ttl, min_refresh, timeout
        self._keys: dict[str | None, tuple[str, RsaKey | EcKey]] = {}
        self._loaded = 0.0
        self._tried = 0.0
        self._lock = threading.Lock()

    def load(self) -> "Jwks":
        self._keys = self._fetch()
        self._loaded = self._tried = time.monotonic()
        return self

    def _read(self) -> bytes:
        if self.source.startswith(("https://", "http://")):
            with urllib.request.urlopen(self.source, timeout=self.timeout) as answer:  # noqa: S310
                data = answer.read(MAX_JWKS + 1)
        else:
            with open(self.source, "rb") as f:
                data = f.read(MAX_JWKS + 1)
        if len(data) > MAX_JWKS:
            raise JwksError(f"over {MAX_JWKS} bytes")
        return data

    def _fetch(self) -> dict:
        try:
            document = json.loads(self._read())
        except OSError as exc:
            raise JwksError(getattr(exc, "strerror", None) or str(exc)) from None
        except ValueError:
            raise JwksError("not JSON") from None
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise JwksError("no 'keys' list")
        keys = {}
        for jwk in entries:
            if not isinstance(jwk, dict):
                continue
            try:
                keys[jwk.get("kid") if isinstance(jwk.get("kid"), str) else None] = key_of(jwk)
            except JwksError:
                continue  # an encryption key, another curve: not ours to use
        if not keys:
            raise JwksError("no RS256 or ES256 signature key in it")
        return keys

    def key(self, kid: str | None) -> tuple[str, RsaKey | EcKey] | None:
        now = time.monotonic()
        with self._lock:
            stale = now - self._loaded > self.ttl
            unknown = kid not in self._keys and not (kid is None and len(self._keys) == 1)
            if (stale or unknown) and now - self._tried > self.min_refresh:
                self._tried = now
                try:
                    self._keys, self._loaded = self._fetch(), now
                except JwksError:
                    pass  # the keys it had
            if kid is None and len(self._keys) == 1:
                return next(iter(self._keys.values()))
            return self._keys.get(kid)


@dataclass(frozen=True)
class Issuer:
    """``serve --rest-jwks`` and its checks: the token's ``iss`` and ``aud`` when given, its
    user in ``user_claim``."""

    jwks: Jwks
    issuer: str | None = None
    audience: str | None = None
    user_claim: str = "sub"

    def verify(self, token: str, now: float | None = None) -> str:
        """The user a token names. Raises BadToken."""
        parsed = parse(token)
        alg = parsed.header.get("alg")
        if alg not in ASYMMETRIC:
            raise BadToken(f"algorithm {alg!r} is not accepted (RS256, ES256)")
        kid = parsed.header.get("kid")
        found = self.jwks.key(kid if isinstance(kid, str) else None)
        if found is None:
            raise BadToken("signed by a key not in the JWKS (kid)")
        key_alg, key = found
        if key_alg != alg or not key.verify(parsed.signing_input, parsed.signature):
            raise BadToken("bad signature")
        claims = parsed.claims
        check_times(claims, now, LEEWAY)
        if self.issuer is not None and claims.get("iss") != self.issuer:
            raise BadToken("issuer (iss) is not the one expected")
        if self.audience is not None:
            aud = claims.get("aud")
            if not (aud == self.audience or (isinstance(aud, list) and self.audience in aud)):
                raise BadToken("audience (aud) is not this catalog")
        user = claims.get(self.user_claim)
        if not isinstance(user, str) or not user:
            raise BadToken(f"no user in claim {self.user_claim!r}")
        return user
