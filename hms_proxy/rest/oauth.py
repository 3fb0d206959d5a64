"""OAuth2 bearer tokens for the Iceberg REST door: its token endpoint (``POST /v1/oauth/tokens``,
what Iceberg clients' ``credential`` is sent to) and the tokens a caller then presents
(``Authorization: Bearer <token>``): the door's own, and an external issuer's JWTs
(``serve --rest-jwks``).

The endpoint answers the Iceberg REST protocol's token request (RFC 6749's form-encoded
``client_credentials`` grant, and RFC 8693's token exchange that Iceberg's Java client uses to
refresh a token before it expires) for a client authenticated by its ``--auth-secrets`` secret
(``client_id`` the user, ``client_secret`` the secret, in the form or as HTTP Basic) or by
Kerberos (SPNEGO ``Authorization: Negotiate`` on the same request); anything else gets the
protocol's ``OAuthError`` (``{"error": "invalid_client", "error_description": ...}``, 400 or
401), as Iceberg's clients read it.

A token is an HS256 JWT carrying the user (``sub``), how it authenticated and its expiry
(``--rest-token-lifetime``, default 1 hour), signed with a key kept in the store at the served
ref (``security/rest-oauth-key``): every server and ``--processes`` worker over the same store
accepts what any of them issued. The key is made by the first token asked for, and a new one
when it is older than ``--rest-key-rotation`` (default a day), each in one write transaction of
the store that re-reads the keys first, so several servers never make two; a key replaced
verifies the tokens it signed while they may still be valid (a lifetime), then goes. A token
naming a key this server does not know makes it read the keys again (another server rotated).
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from hms_proxy.rest.errors import RestError
from hms_proxy.security import jwt
from hms_proxy.thrift.processor import CallContext

log = logging.getLogger("hms_proxy.rest")

PATH = "/v1/oauth/tokens"
KEY = "security/rest-oauth-key"
ISSUER = "hms-proxy"
DEFAULT_LIFETIME = 3600
DEFAULT_ROTATION = 86400  # seconds a signing key signs before the next one is made


@dataclass(frozen=True)
class SigningKey:
    kid: str
    key: bytes
    made: int  # seconds since the epoch (0: a key of the layout before rotation)


def decode_keys(data: bytes | None) -> list[SigningKey]:
    """The stored keys, oldest first (the layout before rotation held one key)."""
    if data is None:
        return []
    value = json.loads(data)
    items = value["keys"] if isinstance(value, dict) and "keys" in value else [value]
    return [SigningKey(str(k["kid"]), base64.b64decode(k["key"]), int(k.get("made", 0)))
            for k in items]


def encode_keys(keys: list[SigningKey]) -> bytes:
    return json.dumps({"keys": [{"kid": k.kid, "key": base64.b64encode(k.key).decode(),
                                 "made": k.made} for k in keys]}).encode()
#: a token may be refreshed (token exchange) while its first authentication is younger
REFRESH_LIMIT = 7 * 24 * 3600
MAX_FORM = 8 << 10  # a token request is a few short fields
CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class OAuthError(Exception):
    """An answer of the token endpoint other than a token: the protocol's OAuthError."""

    def __init__(self, status: int, error: str, description: str):
        super().__init__(description)
        self.status, self.error, self.description = status, error, description


class BearerRefused(RestError):
    """A bearer token that does not verify: 401, with RFC 6750's challenge."""

    challenge = 'Bearer realm="hms-proxy", error="invalid_token"'

    def __init__(self, reason: str):
        super().__init__(401, "NotAuthorizedException", f"Bearer token refused: {reason}")


@dataclass(frozen=True)
class Bearer:
    """Who a verified bearer token names, and how (``token``: this door's, ``jwt``: an
    external issuer's)."""

    user: str
    auth: str
    principal: str | None = None


class Tokens:
    """The door's own tokens over ``store`` at ``ref``, and an external issuer's."""

    def __init__(self, store, ref: str, lifetime: int = DEFAULT_LIFETIME,
                 external: jwt.Issuer | None = None, rotation: int = DEFAULT_ROTATION):
        self.store = store
        self.ref = ref
        self.lifetime = lifetime
        self.rotation = rotation
        self.external = external
        self._keys: list[SigningKey] | None = None  # as last read, newest last
        self._lock = threading.Lock()

    # --- the signing keys ----------------------------------------------------------------------
    def _known(self, fresh: bool = False) -> list[SigningKey]:
        """The keys as stored (read again when ``fresh``: another server may have rotated
        them; one read of the store, what any request costs)."""
        with self._lock:
            if self._keys is None or fresh:
                self._keys = decode_keys(self.store.get(self.ref, KEY))
            return self._keys

    def _signing_key(self) -> SigningKey:
        """The newest key, made (the first) or rotated (older than ``rotation`` seconds) in
        one write transaction that reads the keys again first: several servers make one. A
        key replaced is kept while a token it signed may still be valid."""
        now = int(time.time())
        keys = self._known()
        if keys and now - keys[-1].made < self.rotation:
            return keys[-1]
        from kvmodel.store import errors as store_errors

        for attempt in range(3):
            try:
                with self.store.write(self.ref) as txn:
                    keys = decode_keys(txn.get(KEY))  # another server's, made since we looked
                    if not keys or now - keys[-1].made >= self.rotation:
                        # a key replaced at t signed tokens valid until t + lifetime at most
                        keep = [k for i, k in enumerate(keys)
                                if i == len(keys) - 1 or
                                now - keys[i + 1].made < self.lifetime + 60]
                        keys = [*keep, SigningKey(secrets.token_hex(8),
                                                  secrets.token_bytes(32), now)]
                        txn.put(KEY, encode_keys(keys))
                        log.info("REST OAuth2 signing key %s made at %s (%d kept)",
                                 keys[-1].kid, self.ref, len(keys) - 1)
                break
            except (store_errors.WriteConflict, store_errors.HeadMoved):
                if attempt == 2:
                    raise
        with self._lock:
            self._keys = keys
        return keys[-1]

    def _verifying_key(self, kid) -> SigningKey | None:
        for fresh in (False, True):
            for key in self._known(fresh):
                if key.kid == kid:
                    return key
        return None

    # --- issue and verify --------------------------------------------------------------------
    def issue(self, user: str, auth: str, principal: str | None = None,
              auth_time: int | None = None) -> dict:
        """The token response for ``user`` (authenticated by ``auth``)."""
        signing = self._signing_key()
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": user, "iat": now, "exp": now + self.lifetime,
                  "auth": auth, "auth_time": auth_time or now, "jti": secrets.token_hex(8)}
        if principal:
            claims["principal"] = principal
        return {"access_token": jwt.encode_hs256(claims, signing.key, signing.kid),
                "token_type": "bearer",
                "expires_in": self.lifetime, "issued_token_type": ACCESS_TOKEN_TYPE}

    def own(self, token: str, now: float | None = None) -> dict:
        """The claims of a token this door issued. Raises BadToken."""
        parsed = jwt.parse(token)
        if parsed.header.get("alg") != "HS256":
            raise jwt.BadToken("not a token of this catalog")
        found = self._verifying_key(parsed.header.get("kid"))
        if found is None:
            raise jwt.BadToken("signed by an unknown key")
        jwt.verify_hs256(parsed, found.key)
        jwt.check_times(parsed.claims, now)
        if parsed.claims.get("iss") != ISSUER or not isinstance(parsed.claims.get("sub"), str):
            raise jwt.BadToken("not a token of this catalog")
        return parsed.claims

    def verify(self, token: str) -> Bearer:
        """Who a bearer token names. Raises BadToken."""
        alg = jwt.parse(token).header.get("alg")
        if alg in jwt.ASYMMETRIC:
            if self.external is None:
                raise jwt.BadToken(f"an {alg} token and no issuer configured (--rest-jwks)")
            return Bearer(self.external.verify(token), "jwt")
        claims = self.own(token)
        principal = claims.get("principal")
        return Bearer(claims["sub"], "token", principal if isinstance(principal, str) else None)


class TokenEndpoint:
    """``POST /v1/oauth/tokens``: who the client is (Kerberos, or its secret), then a token."""

    def __init__(self, tokens: Tokens, guard=None, spnego=None, listener: str = ""):
        self.tokens = tokens
        self.guard = guard
        self.spnego = spnego
        self.listener = listener

    async def handle(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        try:
            form = await _form(request)
        except OAuthError as refused:
            return _oauth_error(refused)
        return await run_in_threadpool(self.answer, request, form)

    def answer(self, request: Request, form: dict) -> Response:
        client = request.client
        ctx = CallContext(peer=f"{client.host}:{client.port}" if client else "",
                          listener_ref=self.tokens.ref, listener=self.listener)
        ctx.call = "oauth_token"
        extra = {}
        try:
            grant = form.get("grant_type")
            if grant == CLIENT_CREDENTIALS:
                extra = self._authenticate(request, ctx, form)
                answer = self.tokens.issue(ctx.identity, ctx.auth, ctx.principal)
            elif grant == TOKEN_EXCHANGE:
                answer = self._exchange(ctx, form)
            elif not grant:
                raise OAuthError(400, "invalid_request", "grant_type is missing")
            else:
                raise OAuthError(400, "unsupported_grant_type",
                                 "grant_type is client_credentials or token exchange")
        except OAuthError as refused:
            self._audit(ctx, "denied", refused.description)
            return _oauth_error(refused, self._challenge() if refused.status == 401 else None)
        except Exception as exc:  # noqa: BLE001 - the store (a tag served, lakeFS away)
            log.error("REST token request from %s failed: %s: %s", ctx.peer,
                      type(exc).__name__, exc)
            self._audit(ctx, "error", f"{type(exc).__name__}: {exc}")
            return _oauth_error(OAuthError(500, "server_error",
                                           f"no token could be issued: {type(exc).__name__}"))
        if form.get("scope"):
            answer["scope"] = form["scope"]
        self._audit(ctx, "ok")
        return Response(json.dumps(answer), media_type="application/json",
                        headers={**NO_STORE, **extra})

    def _authenticate(self, request: Request, ctx: CallContext, form: dict) -> dict:
        """Sets the caller on ``ctx``; the headers of the answer (SPNEGO's mutual token)."""
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "negotiate" and self.spnego is not None:
            from hms_proxy.security.spnego import Refused
            try:
                accepted = self.spnego.accept(value)
            except Refused as exc:
                raise OAuthError(401, "invalid_client",
                                 f"Kerberos authentication failed: {exc}") from None
            ctx.identity = ctx.user = accepted.user
            ctx.auth, ctx.principal = "kerberos", accepted.principal
            return accepted.reply_headers()
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        if scheme.lower() == "basic" and value:  # RFC 6749's client_secret_basic
            try:
                client_id, _, client_secret = base64.b64decode(
                    value.strip(), validate=True).decode().partition(":")
            except (binascii.Error, ValueError):
                raise OAuthError(400, "invalid_request", "malformed Basic credentials") \
                    from None
        ctx.user = client_id or None
        secrets_ = getattr(self.guard, "secrets", None)
        if not client_id or not client_secret:
            raise OAuthError(401, "invalid_client",
                             "client_id and client_secret are required (credential "
                             "CLIENT_ID:CLIENT_SECRET)")
        if secrets_ is None or client_id not in secrets_ or \
                not secrets_.check(client_id, [client_secret]):
            raise OAuthError(401, "invalid_client",
                             "client authentication failed: an unknown client_id or a wrong "
                             "secret (serve --auth-secrets)")
        ctx.identity, ctx.auth = client_id, "secret"
        return {}

    def _exchange(self, ctx: CallContext, form: dict) -> dict:
        """A new token for the caller of one of ours not yet expired (Iceberg's refresh),
        while its first authentication is younger than :data:`REFRESH_LIMIT`."""
        subject = form.get("subject_token") or ""
        if form.get("subject_token_type") not in (ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE):
            raise OAuthError(400, "invalid_request", "subject_token_type is not an access "
                             "token")
        try:
            claims = self.tokens.own(subject)
        except jwt.BadToken as exc:
            raise OAuthError(400, "invalid_grant", f"subject_token refused: {exc}") from None
        ctx.identity = ctx.user = claims["sub"]
        ctx.auth = "token"
        first = claims.get("auth_time")
        if not isinstance(first, int) or time.time() - first > REFRESH_LIMIT:
            raise OAuthError(400, "invalid_grant", "subject_token can no longer be refreshed: "
                             "authenticate again")
        principal = claims.get("principal")
        return self.tokens.issue(claims["sub"], str(claims.get("auth") or "token"),
                                 principal if isinstance(principal, str) else None, first)

    def _challenge(self) -> dict:
        basic = 'Basic realm="hms-proxy"'
        if self.spnego is not None:
            from hms_proxy.security.spnego import challenge
            return {"WWW-Authenticate": challenge(basic)}
        return {"WWW-Authenticate": basic}

    def _audit(self, ctx: CallContext, outcome: str, error: str | None = None) -> None:
        audit = getattr(self.guard, "audit", None)
        if audit is not None:
            audit.record(ctx, "oauth_token", self.tokens.ref, outcome, error, obj="")


async def _form(request: Request) -> dict:
    """The form of a token request: at most :data:`MAX_FORM` bytes, each field once."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise OAuthError(400, "invalid_request",
                         "a token request is application/x-www-form-urlencoded")
    too_large = OAuthError(400, "invalid_request", f"token request over {MAX_FORM} bytes")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_FORM:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM:
            raise too_large
        chunks.append(chunk)
    try:
        pairs = parse_qsl(b"".join(chunks).decode("utf-8"), keep_blank_values=True,
                          strict_parsing=False, max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        raise OAuthError(400, "invalid_request", "the form does not decode") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise OAuthError(400, "invalid_request", f"{name} given twice")
        form[name] = value
    return form


def _oauth_error(refused: OAuthError, headers: dict | None = None) -> Response:
    body = {"error": refused.error, "error_description": refused.description}
    return Response(json.dumps(body), status_code=refused.status, media_type="application/json",
                    headers={**NO_STORE, **(headers or {})})
