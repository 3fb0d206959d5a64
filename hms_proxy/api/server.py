"""The HTTP listener: the API under ``/api/v1``, its OpenAPI document at ``/api/openapi.json``,
and the web console's static files under ``/console/`` (``/`` redirects there).

A stdlib :class:`http.server.ThreadingHTTPServer` (a thread per connection, HTTP/1.1
keep-alive) on a daemon thread beside the Thrift listeners of ``hms-proxy serve``, or alone in
``hms-proxy api``. Request bodies are JSON objects of at most :data:`MAX_BODY` bytes.
"""
from __future__ import annotations

import http.server
import json
import logging
import mimetypes
import socket
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from hms_proxy.api.app import PREFIX, App
from hms_proxy.api.auth import Caller
from hms_proxy.api.errors import ApiError
from hms_proxy.api.openapi import document
from hms_proxy.api.request import Request

log = logging.getLogger("hms_proxy.api")
CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"
MAX_BODY = 1 << 20
OPENAPI_PATH = "/api/openapi.json"
CONSOLE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml",
          ".png": "image/png", ".json": "application/json"}


class StaticFiles:
    """The console's files, by path relative to :data:`CONSOLE_DIR` (the list is made once:
    nothing outside it is ever served)."""

    def __init__(self, root: Path = CONSOLE_DIR):
        self.root = root
        self.files = {p.relative_to(root).as_posix(): p for p in root.rglob("*")
                      if p.is_file() and not p.name.startswith(".")} if root.is_dir() else {}

    def get(self, rel: str) -> tuple[bytes, str] | None:
        path = self.files.get(rel)
        if path is None:
            return None
        try:
            data = path.read_bytes()  # small files, read at each request: no stale console
        except OSError:
            return None
        ctype = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or \
            "application/octet-stream"
        return data, ctype


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hms-proxy"

    def version_string(self) -> str:
        return self.server_version
    timeout = 120  # an idle keep-alive connection is closed after this

    server: "ApiServer"

    def log_message(self, fmt, *args):  # noqa: D401 - the server's log, not stderr
        log.debug("%s %s", self.address_string(), fmt % args)

    # --- answers ------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, ctype: str, headers: dict | None = None,
              head_only: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def _json(self, status: int, doc, headers: dict | None = None,
              head_only: bool = False) -> None:
        body = json.dumps(doc, ensure_ascii=False, allow_nan=False,
                          default=_json_default).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8",
                   {"Cache-Control": "no-store", **(headers or {})}, head_only)

    def _error(self, error: ApiError, head_only: bool = False) -> None:
        self._json(error.status, error.body(), error.headers, head_only)

    # --- dispatch -------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        method = self.command
        parts = urlsplit(self.path)
        path = parts.path
        try:
            body = self._body(method)
        except ApiError as error:
            self.close_connection = True
            self._error(error)
            return
        if path.startswith(PREFIX + "/") or path == PREFIX:
            if method == "HEAD":
                return self._error(ApiError(405, "MethodNotAllowed", "HEAD is not served by "
                                            "the API"), head_only=True)
            query = parse_qs(parts.query, keep_blank_values=True)
            peer = f"{self.client_address[0]}:{self.client_address[1]}" \
                if isinstance(self.client_address, tuple) else str(self.client_address)
            req = Request(method, path, query, {}, body, Caller(peer=peer))
            status, doc, headers = self.server.app.handle(req, self.headers)
            return self._json(status, doc, headers)
        if method not in ("GET", "HEAD"):
            return self._error(ApiError(405, "MethodNotAllowed",
                                        f"{method} is not allowed on {path}"),
                               head_only=False)
        head = method == "HEAD"
        if path == OPENAPI_PATH:
            return self._json(200, document(), head_only=head)
        if path in ("/", "/console"):
            return self._send(302, b"", "text/plain", {"Location": "/console/"}, head)
        if path.startswith("/console/"):
            rel = path[len("/console/"):] or "index.html"
            found = self.server.static.get(rel)
            if found is not None:
                data, ctype = found
                return self._send(200, data, ctype, {"Content-Security-Policy": CONSOLE_CSP,
                                                     "Cache-Control": "no-cache"}, head)
        return self._error(ApiError(404, "NotFound", f"nothing at {path}"), head)

    def _body(self, method: str):
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raise ApiError(411, "LengthRequired", "send the body with a Content-Length")
        if not length:
            return None
        try:
            n = int(length)
        except ValueError:
            raise ApiError(400, "BadRequest", "Content-Length is not a number") from None
        if n < 0 or n > MAX_BODY:
            raise ApiError(413, "PayloadTooLarge", f"the body may hold at most {MAX_BODY} bytes")
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return None
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise ApiError(415, "UnsupportedMediaType",
                           "the request body must be JSON (Content-Type: application/json)")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(400, "BadRequest", f"the request body is not valid JSON: {exc}") \
                from None

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, socket.timeout):
            self.close_connection = True

    def __getattr__(self, name: str):
        """``do_<METHOD>`` for every method: the API answers 405 (JSON) to those it does not
        serve, never http.server's HTML 501."""
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def send_error(self, code, message=None, explain=None):
        """http.server's own errors (a malformed request line, headers too large) as JSON."""
        try:
            short, _ = self.responses.get(code, ("Error", ""))
        except (AttributeError, ValueError):
            short = "Error"
        self.close_connection = True
        body = json.dumps({"error": {"type": short.replace(" ", ""),
                                     "message": message or short}}).encode("utf-8")
        self.send_response(code, message)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)


def _json_default(value):
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class ApiServer(http.server.ThreadingHTTPServer):
    """The HTTP listener; ``start()`` serves on a daemon thread, ``stop()`` ends it."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, app: App, host: str = "127.0.0.1", port: int = 8083,
                 reuse_port: bool = False):
        self.app = app
        self.static = StaticFiles()
        self.reuse_port = reuse_port
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)
        self.thread: threading.Thread | None = None
        app.policy.listener = f"{host}:{self.port}"

    def server_bind(self):
        if self.reuse_port and hasattr(socket, "SO_REUSEPORT"):
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> "ApiServer":
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.5},
                                       name="hms-http", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
