"""The Iceberg REST catalog's routes (Starlette), each a thin call into
:class:`~hms_proxy.rest.catalog.RestCatalog` on the ref its ``{prefix}`` names.

Who calls: ``Authorization: Bearer USER:SECRET`` or ``Basic`` (a user listed in
``--auth-secrets`` is believed with its secret only, else 401), ``X-HMS-User: NAME`` or a bearer
token without a secret (a claimed user, as ``set_ugi`` without a secret), or nobody
(anonymous). With ``serve --http-kerberos-principal``, ``Authorization: Negotiate`` (Kerberos
SPNEGO, :mod:`hms_proxy.security.spnego`) names the caller as the Thrift listeners' SASL does;
a token not accepted is 403, and a claimed user is not believed (anonymous; an anonymous
caller refused by the rules gets 401 with a Negotiate challenge). A bearer token that is a JWT
(:mod:`hms_proxy.rest.oauth`: one of this door's token endpoint, ``POST /v1/oauth/tokens``, or
an external issuer's under ``--rest-jwks``) names its user, auth ``token`` or ``jwt``; one that
does not verify is 401, never anonymous. The access rules, the audit log and ``--read-only``
then apply exactly as to a Thrift call on that ref.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hms_proxy.ops import memory
from hms_proxy.rest import errors, limits, oauth, openapi
from hms_proxy.rest.catalog import RestCatalog
from hms_proxy.rest.errors import RestError
from hms_proxy.rest.metadata import INLINE, Blocking
from hms_proxy.security import jwt
from hms_proxy.thrift.processor import CallContext

log = logging.getLogger("hms_proxy.rest")
JSON = "application/json"
MAX_BODY = 16 << 20  # a commit with many snapshots' updates is large, not unbounded
SEPARATOR = "\x1f"   # the spec's namespace level separator (%1F in a path)
NS = "/v1/{prefix}/namespaces/{namespace}"

# what ``GET /v1/config`` lists as served (clients of Iceberg 1.7+ call nothing else)
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
]


class RestApp:
    def __init__(self, catalog: RestCatalog, store, default_ref: str, guard=None,
                 read_only: bool = False, listener: str = "", defaults: dict | None = None,
                 inline_reads: bool = False, bounds: limits.RestLimits = limits.DEFAULT,
                 spnego=None, tokens: oauth.Tokens | None = None):
        self.catalog = catalog
        # OAuth2 bearer tokens: this door's own (its token endpoint), an external issuer's
        self.tokens = tokens if tokens is not None else oauth.Tokens(store, default_ref)
        token_endpoint = oauth.TokenEndpoint(self.tokens, guard, spnego, listener)
        self.spnego = spnego  # hms_proxy.security.spnego.Spnego, or None
        self.challenge = 'Basic realm="hms-proxy"'
        if spnego is not None:
            from hms_proxy.security.spnego import challenge
            self.challenge = challenge(self.challenge if getattr(guard, "secrets", None)
                                       is not None else None)
        self.limits = bounds  # what one request may ask (hms_proxy.rest.limits)
        # reads answered on the event loop itself when nothing they need can block (a local
        # store, the metadata file in memory): the hop to a worker thread is half the time of
        # a loadTable; anything else, and every write, runs in the thread pool
        self.inline_reads = inline_reads
        self.store = store
        self.default_ref = default_ref
        self.guard = guard
        self.read_only = read_only
        self.listener = listener
        self.defaults = dict(defaults or {})
        self.asgi = Starlette(exception_handlers={404: _not_found, 405: _not_allowed}, routes=[
            Route("/v1/config", self._wrap(self.config, prefix=False), methods=["GET"]),
            Route(oauth.PATH, token_endpoint.handle, methods=["POST"]),
            Route("/v1/{prefix}/namespaces", self._wrap(self.namespaces),
                  methods=["GET", "POST"]),
            Route(NS, self._wrap(self.namespace), methods=["GET", "HEAD", "DELETE"]),
            Route(NS + "/properties", self._wrap(self.properties), methods=["POST"]),
            Route(NS + "/tables", self._wrap(self.tables), methods=["GET", "POST"]),
            Route(NS + "/tables/{table}", self._wrap(self.table),
                  methods=["GET", "HEAD", "POST", "DELETE"]),
            Route(NS + "/tables/{table}/metrics", self._wrap(self.metrics), methods=["POST"]),
            Route(NS + "/register", self._wrap(self.register), methods=["POST"]),
            Route("/v1/{prefix}/tables/rename", self._wrap(self.rename), methods=["POST"]),
            Route("/v1/{prefix}/transactions/commit", self._wrap(self.transaction),
                  methods=["POST"]),
            Route(NS + "/views", self._wrap(self.views), methods=["GET", "POST"]),
            Route(NS + "/views/{view}", self._wrap(self.view),
                  methods=["GET", "HEAD", "POST", "DELETE"]),
            Route("/v1/{prefix}/views/rename", self._wrap(self.rename_view), methods=["POST"]),
            Route(openapi.PATH, _openapi, methods=["GET"]),
        ])

    # --- plumbing ----------------------------------------------------------------------
    def _wrap(self, operation, prefix: bool = True):
        def endpoint(request: Request):
            started = time.perf_counter()
            response = answer(request)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("REST %s %s -> %d in %.2f ms", request.method, request.url.path,
                          response.status_code, (time.perf_counter() - started) * 1000)
            return response

        def answer(request: Request):
            ctx = None
            try:
                ctx = self._context(request, request.path_params.get("prefix") if prefix
                                    else None)
                body = None
                if request.method in ("POST", "PUT"):
                    body = _body(request, self.limits)
                result = operation(request, ctx, body)
            except Blocking:
                raise  # an inline read that needs the thread pool after all
            except Exception as exc:  # noqa: BLE001 - every error is an Iceberg error body
                return self._error(request, exc, ctx)
            if result is None:
                response = Response(status_code=204)
            elif isinstance(result, Response):
                response = result
            elif isinstance(result, bytes):
                response = Response(result, media_type=JSON)
            else:
                response = Response(json.dumps(result, separators=(",", ":")), media_type=JSON)
            response.headers.update(_negotiated(request))  # SPNEGO's mutual token
            return response
        return _sync(endpoint, self.inline_reads)

    def _error(self, request: Request, exc: BaseException, ctx=None) -> Response:
        error = errors.from_exception(exc)
        if error is None:
            log.exception("REST %s %s", request.method, request.url.path)
            error = RestError(500, "ServerErrorException",
                              f"{type(exc).__name__}: {errors._text(exc)}")
        if self.spnego is not None and ctx is not None and ctx.identity is None and \
                error.status == 403 and error.message.startswith("access denied:") and \
                " is read-only (" not in error.message:
            # anonymous and refused by the rules: asked to say who it is (curl --negotiate
            # and Hadoop's clients send a token only when challenged)
            error = RestError(401, "NotAuthorizedException", error.message)
        headers = {"WWW-Authenticate": getattr(error, "challenge", None) or self.challenge} \
            if error.status == 401 else (_negotiated(request) or None)
        if request.method == "HEAD":
            return Response(status_code=error.status, headers=headers)
        return Response(json.dumps(error.body()), status_code=error.status, media_type=JSON,
                        headers=headers)

    def _context(self, request: Request, prefix: str | None) -> CallContext:
        client = request.client
        ctx = CallContext(peer=f"{client.host}:{client.port}" if client else "",
                          listener_ref=unquote(prefix) if prefix else self.default_ref,
                          listener=self.listener, read_only=self.read_only)
        self._identify(request, ctx)
        return ctx

    def _identify(self, request: Request, ctx: CallContext) -> None:
        user, secret = None, None
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "negotiate" and self.spnego is not None:
            return self._negotiate(request, ctx, value)
        if scheme.lower() == "bearer" and jwt.looks_like_jwt(value.strip()):
            return self._bearer(request, ctx, value.strip())
        if scheme.lower() == "bearer" and value:
            user, _, secret = value.strip().partition(":")
            secret = secret or None
        elif scheme.lower() == "basic" and value:
            try:
                user, _, secret = base64.b64decode(value.strip()).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                raise RestError(401, "NotAuthorizedException",
                                "Malformed Basic credentials") from None
        else:
            user = request.headers.get("x-hms-user") or None
        if not user:
            return
        ctx.user = user
        secrets = getattr(self.guard, "secrets", None)
        rules = getattr(self.guard, "rules", None)
        if secrets is not None and user in secrets:
            if not secrets.check(user, [secret] if secret else []):
                raise RestError(401, "NotAuthorizedException",
                                f"user '{user}' presented {'a wrong' if secret else 'no'} "
                                "secret (serve --auth-secrets)")
            ctx.identity, ctx.auth = user, "secret"
        elif self.spnego is not None or (rules is not None and not rules.trust_set_ugi):
            ctx.identity, ctx.auth = None, "none"
        else:
            ctx.identity, ctx.auth = user, "ugi"

    def _bearer(self, request: Request, ctx: CallContext, token: str) -> None:
        """The caller of an OAuth2 bearer token (a JWT); one that does not verify is 401 and
        in the audit log. An external issuer's is verified in the thread pool (its JWKS may
        have to be fetched)."""
        if INLINE.get() and self.tokens.external is not None:
            raise Blocking
        try:
            bearer = self.tokens.verify(token)
        except jwt.BadToken as exc:
            refused = oauth.BearerRefused(str(exc))
            log.info("bearer token from %s refused: %s", ctx.peer, exc)
            audit = getattr(self.guard, "audit", None)
            if audit is not None:
                ctx.call = "authenticate"
                audit.record(ctx, "authenticate", "", "denied", refused.message, obj="")
            raise refused from None
        ctx.identity = ctx.user = bearer.user
        ctx.auth = bearer.auth
        ctx.principal = bearer.principal

    def _negotiate(self, request: Request, ctx: CallContext, value: str) -> None:
        """The caller of a Negotiate token, accepted once per request (an inline read retried
        in the thread pool would be a replay); refused: 403, in the audit log."""
        from hms_proxy.security.spnego import Refused

        accepted = getattr(request.state, "spnego", None)
        if accepted is None:
            try:
                accepted = self.spnego.accept(value)
            except Refused as exc:
                reason = f"Kerberos authentication failed: {exc}"
                log.info("SPNEGO from %s refused: %s", ctx.peer, exc)
                audit = getattr(self.guard, "audit", None)
                if audit is not None:
                    ctx.call = "authenticate"
                    audit.record(ctx, "authenticate", "", "denied", reason, obj="")
                raise RestError(403, "ForbiddenException", reason) from None
            request.state.spnego = accepted
        ctx.identity = ctx.user = accepted.user
        ctx.auth = "kerberos"
        ctx.principal = accepted.principal

    # --- operations --------------------------------------------------------------------
    def config(self, request, ctx, body):
        ref = request.query_params.get("warehouse") or self.default_ref
        try:
            self.store.resolve(ref)
        except Exception:  # noqa: BLE001 - unknown or malformed: the client's mistake
            raise errors.bad_request(
                f"Unknown warehouse '{ref}': name a branch, tag or commit of this "
                "catalog") from None
        return {"defaults": dict(self.defaults), "overrides": {"prefix": ref},
                "endpoints": ENDPOINTS}

    def namespaces(self, request, ctx, body):
        if request.method == "POST":
            namespace = (body or {}).get("namespace")
            if not isinstance(namespace, list):
                raise errors.bad_request("CreateNamespaceRequest needs a namespace (a list)")
            if not isinstance(body.get("properties") or {}, dict):
                raise errors.bad_request("CreateNamespaceRequest: properties is an object")
            return self.catalog.create_namespace(ctx, namespace, body.get("properties"))
        parent = request.query_params.get("parent")
        names = self.catalog.list_namespaces(ctx, parent.split(SEPARATOR) if parent else None)
        return _page(request, "namespaces", names)

    def namespace(self, request, ctx, body):
        namespace = _namespace(request)
        if request.method == "DELETE":
            return self.catalog.drop_namespace(ctx, namespace)
        properties = self.catalog.load_namespace(ctx, namespace)
        if request.method == "HEAD":
            return None
        return {"namespace": namespace, "properties": properties}

    def properties(self, request, ctx, body):
        body = body or {}
        removals, updates = body.get("removals"), body.get("updates")
        if not isinstance(removals, (list, type(None))) or \
                not isinstance(updates, (dict, type(None))):
            raise errors.bad_request("UpdateNamespacePropertiesRequest: removals is a list "
                                     "and updates an object")
        return _without_none(self.catalog.update_namespace(
            ctx, _namespace(request), removals, updates))

    def tables(self, request, ctx, body):
        namespace = _namespace(request)
        if request.method == "POST":
            limits.check_create(body, self.limits)
            return self.catalog.create_table(ctx, namespace, body or {})
        return _page(request, "identifiers", self.catalog.list_tables(ctx, namespace))

    def table(self, request, ctx, body):
        namespace, name = _namespace(request), request.path_params["table"]
        if request.method == "POST":
            limits.check_commit(body, self.limits)
            return self.catalog.commit_table(ctx, namespace, name, body or {})
        if request.method == "DELETE":
            purge = request.query_params.get("purgeRequested", "false").lower() == "true"
            return self.catalog.drop_table(ctx, namespace, name, purge)
        result = self.catalog.load_table(ctx, namespace, name)
        return None if request.method == "HEAD" else result

    def metrics(self, request, ctx, body):
        """Accepted and logged, as Iceberg's own server does: clients report a staged
        create's commit before the table exists, so the table is not looked up."""
        namespace, name = _namespace(request), request.path_params["table"]
        log.debug("metrics report for %s.%s: %s", ".".join(namespace), name,
                  (body or {}).get("report-type"))
        return None

    def register(self, request, ctx, body):
        return self.catalog.register_table(ctx, _namespace(request), body or {})

    def rename(self, request, ctx, body):
        return self.catalog.rename_table(ctx, body or {})

    def transaction(self, request, ctx, body):
        limits.check_transaction(body, self.limits)
        return self.catalog.commit_transaction(ctx, body or {})

    def views(self, request, ctx, body):
        namespace = _namespace(request)
        if request.method == "POST":
            limits.check_create(body, self.limits)
            return self.catalog.create_view(ctx, namespace, body or {})
        return _page(request, "identifiers", self.catalog.list_views(ctx, namespace))

    def view(self, request, ctx, body):
        namespace, name = _namespace(request), request.path_params["view"]
        if request.method == "POST":
            limits.check_commit(body, self.limits)
            return self.catalog.replace_view(ctx, namespace, name, body or {})
        if request.method == "DELETE":
            return self.catalog.drop_view(ctx, namespace, name)
        result = self.catalog.load_view(ctx, namespace, name)
        return None if request.method == "HEAD" else result

    def rename_view(self, request, ctx, body):
        return self.catalog.rename_view(ctx, body or {})


async def _openapi(request: Request) -> Response:
    """The door's OpenAPI document (:mod:`hms_proxy.rest.openapi`), made once."""
    global _DOCUMENT
    if _DOCUMENT is None:
        _DOCUMENT = json.dumps(openapi.document()).encode()
    return Response(_DOCUMENT, media_type=JSON)


_DOCUMENT: bytes | None = None


async def _not_found(request: Request, exc) -> Response:
    error = RestError(404, "NotFoundException",
                      f"No such endpoint: {request.method} {request.url.path}")
    return Response(json.dumps(error.body()), status_code=404, media_type=JSON)


async def _not_allowed(request: Request, exc) -> Response:
    error = RestError(405, "MethodNotAllowedException",
                      f"{request.method} is not served on {request.url.path}")
    return Response(json.dumps(error.body()), status_code=405, media_type=JSON)


def _sync(endpoint, inline_reads: bool = False):
    """Starlette runs a plain function in its thread pool: the catalog's calls block. The
    body is read here, at most :data:`MAX_BODY` bytes of it. With ``inline_reads`` a GET or
    HEAD is tried on the event loop first, where anything that would block (a metadata file
    not in memory) raises :class:`Blocking` and sends it to the pool."""
    async def run(request: Request):
        from starlette.concurrency import run_in_threadpool

        if inline_reads and request.method in ("GET", "HEAD"):
            token = INLINE.set(True)
            try:
                return endpoint(request)
            except Blocking:
                pass
            finally:
                INLINE.reset(token)
        if request.method in ("POST", "PUT"):
            try:
                request.state.raw = await _read(request)
            except RestError as error:
                return Response(json.dumps(error.body()), status_code=error.status,
                                media_type=JSON)
        large = len(getattr(request.state, "raw", b"")) >= memory.AFTER_BYTES
        try:
            return await run_in_threadpool(endpoint, request)
        finally:
            if large:  # what parsing it made is given back once it is answered
                request.state.raw = b""
                await run_in_threadpool(memory.release)
    return run


async def _read(request: Request) -> bytes:
    too_large = RestError(413, "BadRequestException", f"Request body over {MAX_BODY} bytes")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _body(request: Request, bounds: limits.RestLimits = limits.DEFAULT):
    raw = request.state.raw
    if not raw:
        return {}
    value = limits.parse(raw, bounds)  # malformed or too deep: 400
    if not isinstance(value, dict):
        raise errors.bad_request("The request body must be a JSON object")
    return value


def _negotiated(request: Request) -> dict:
    """``WWW-Authenticate: Negotiate <token>`` of a request SPNEGO authenticated, else {}."""
    accepted = getattr(request.state, "spnego", None)
    return accepted.reply_headers() if accepted is not None else {}


def _namespace(request: Request) -> list[str]:
    return unquote(request.path_params["namespace"]).split(SEPARATOR)


def _page(request: Request, key: str, items: list):
    """``pageSize`` / ``pageToken``: the token is the offset of the next page."""
    size, token = request.query_params.get("pageSize"), request.query_params.get("pageToken")
    if size is None and not token:
        return {key: items}
    try:
        start = int(token) if token else 0
        count = int(size) if size is not None else len(items)
        if start < 0 or count < 1:
            raise ValueError
    except ValueError:
        raise errors.bad_request("pageSize must be a positive integer and pageToken one "
                                 "this server gave") from None
    answer = {key: items[start:start + count]}
    if start + count < len(items):
        answer["next-page-token"] = str(start + count)
    return answer


def _without_none(value: dict) -> dict:
    return {k: v for k, v in value.items() if v is not None}
