"""The HTTP API as a plain object: the route table, and a dispatch from a request to a JSON
answer that knows nothing of sockets (:mod:`hms_proxy.api.server` does the HTTP).

Routes (under ``/api/v1``; :mod:`hms_proxy.api.openapi` describes each one)::

    GET    /info                                        server, caller
    GET    /refs                                        branches and tags
    POST   /branches                  GET|DELETE /branches/{name}
    PUT    /branches/{name}/protection
    POST   /tags                      GET|DELETE /tags/{name}
    GET    /commits?ref=               GET /commits/{id}         POST /commits
    GET    /diff?left=&right=          GET /diff/children?left=&right=&db=&table=
    POST   /merge
    GET    /databases                  GET /databases/{db}
    GET    /databases/{db}/tables/{table}[/partitions]
    GET    /databases/{db}/tables/{table}/stats[/partitions|/summary|/top|/histogram]
    POST   /lakefs/hooks                                lakeFS's webhook (prepare-commit, pre-merge)
    GET|POST /listeners               PUT|DELETE /listeners/{port}  Thrift ports bound to a ref
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from urllib.parse import unquote

from hms_proxy.api import catalog, diffs, lakefs_hooks, listeners, refs, stats
from hms_proxy.api.auth import Policy
from hms_proxy.api.diffs import ReportCache
from hms_proxy.api.errors import ApiError, from_exception
from hms_proxy.api.request import Request

log = logging.getLogger("hms_proxy.api")
PREFIX = "/api/v1"


@dataclass(frozen=True)
class Route:
    method: str
    template: str   # OpenAPI path template, after PREFIX
    handler: object
    pattern: re.Pattern


def _route(method: str, template: str, handler) -> Route:
    regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    return Route(method, template, handler, re.compile(regex + r"\Z"))


TABLE = "/databases/{db}/tables/{table}"
ROUTES = [
    _route("GET", "/info", refs.info),
    _route("GET", "/refs", refs.list_refs),
    _route("POST", "/branches", refs.create_branch),
    _route("GET", "/branches/{name}", refs.get_branch),
    _route("DELETE", "/branches/{name}", refs.delete_branch),
    _route("PUT", "/branches/{name}/protection", refs.protect_branch),
    _route("POST", "/tags", refs.create_tag),
    _route("GET", "/tags/{name}", refs.get_tag),
    _route("DELETE", "/tags/{name}", refs.delete_tag),
    _route("GET", "/commits", refs.log),
    _route("POST", "/commits", refs.create_commit),
    _route("GET", "/commits/{id}", refs.show_commit),
    _route("GET", "/diff", diffs.diff),
    _route("GET", "/diff/children", diffs.diff_children),
    _route("POST", "/merge", diffs.merge),
    _route("GET", "/databases", catalog.list_databases),
    _route("GET", "/databases/{db}", catalog.get_database),
    _route("GET", TABLE, catalog.get_table),
    _route("GET", TABLE + "/partitions", catalog.list_partitions),
    _route("GET", TABLE + "/stats", stats.overview),
    _route("GET", TABLE + "/stats/partitions", stats.partitions),
    _route("GET", TABLE + "/stats/summary", stats.summary),
    _route("GET", TABLE + "/stats/top", stats.top),
    _route("GET", TABLE + "/stats/histogram", stats.histogram),
    _route("POST", "/lakefs/hooks", lakefs_hooks.hook),
    _route("GET", "/listeners", listeners.list_listeners),
    _route("POST", "/listeners", listeners.open_listener),
    _route("PUT", "/listeners/{port}", listeners.move_listener),
    _route("DELETE", "/listeners/{port}", listeners.close_listener),
]


class App:
    """The API over one store: its routes, access policy and caches."""

    def __init__(self, store, policy: Policy | None = None, default_ref: str = "main",
                 store_path: str | None = None, listeners=None, thrift_host: str = "127.0.0.1",
                 warehouse: str | None = None):

        self.store = store
        self.listeners = listeners  # serve's run-time Thrift listeners (None: hms-proxy api)
        self.thrift_host = thrift_host
        self.warehouse = warehouse  # serve's warehouse root (None: hms-proxy api)
        self.policy = policy or Policy()
        self.default_ref = default_ref
        self.store_path = store_path
        self.reports = ReportCache()
        self.version = _version()

    def match(self, method: str, path: str) -> tuple[Route | None, dict, list[str]]:
        """(route, path parameters, methods allowed on the path)."""
        allowed = []
        for route in ROUTES:
            m = route.pattern.match(path)
            if m is None:
                continue
            allowed.append(route.method)
            if route.method == method:
                return route, m.groupdict(), allowed
        return None, {}, allowed

    def handle(self, req: Request, headers=None) -> tuple[int, dict, dict]:
        """(status, JSON body, extra headers) for a request whose path is under PREFIX;
        ``headers`` (case-insensitive) say who calls."""
        path = req.path[len(PREFIX):] or "/"
        route, params, allowed = self.match(req.method, path)
        if route is None:
            if allowed:
                return 405, ApiError(405, "MethodNotAllowed",
                                     f"{req.method} is not allowed on {req.path} "
                                     f"(allowed: {', '.join(sorted(set(allowed)))})").body(), \
                    {"Allow": ", ".join(sorted(set(allowed)))}
            return 404, ApiError(404, "NotFound", f"no API endpoint {req.path}").body(), {}
        req.path_params = {k: unquote(v) for k, v in params.items()}
        try:
            req.caller = self.policy.identify(headers or {}, req.caller.peer)
            status, body = route.handler(self, req)
            return status, body, dict(req.caller.reply_headers)  # SPNEGO's mutual token
        except Exception as exc:  # noqa: BLE001 - every error becomes JSON, never a trace
            error = from_exception(exc)
            if error is None:
                log.exception("%s %s failed", req.method, req.path)
                error = ApiError(500, "InternalError",
                                 f"internal error ({type(exc).__name__}); see the server log")
            return error.status, error.body(), {**req.caller.reply_headers, **error.headers}
        finally:
            release = getattr(self.store, "release_thread", None)
            if release is not None:
                release()


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hms-proxy")
    except Exception:  # noqa: BLE001 - not installed (a source tree)
        return "0"
