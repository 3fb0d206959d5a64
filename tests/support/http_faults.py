"""Faults injected in front of a real HTTP server (the session's lakeFS): a relay that passes
every request through unchanged, except those it was told to fail.

A real lakeFS cannot be made to answer one chosen call with a 503; this relay can, so the
store's handling of a failed call is tested against the real lakeFS's answers for everything
else (the federation tests relay a real metastore the same way)."""
from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Hop-by-hop headers: about one connection, never relayed (RFC 9110, 7.6.1).
_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade"}


class FaultRelay:
    """``FaultRelay("http://127.0.0.1:8000")``: an HTTP/1.1 relay on a free loopback port
    (``.endpoint``). ``fail_next(n, status, match=...)`` answers the next ``n`` requests whose
    path contains ``match`` with ``status`` instead of relaying them; ``requests`` lists the
    (method, path) of every request seen, and ``failed`` those answered with a fault."""

    def __init__(self, upstream: str):
        parts = urlsplit(upstream)
        self._target = (parts.hostname, parts.port or 80)
        self._lock = threading.Lock()
        self._faults: list[tuple[str, int, bytes]] = []
        self.requests: list[tuple[str, str]] = []
        self.failed: list[tuple[str, str, int]] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet: the test reports what matters
                pass

            def _relay(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = relay._take_fault(self.command, self.path)
                if fault is not None:
                    status, payload = fault
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(*relay._target, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    self.send_response(resp.status, resp.reason)
                    for key, value in resp.getheaders():
                        if key.lower() not in _HOP and key.lower() != "content-length":
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="fault-relay")
        self._thread.start()

    def fail_next(self, n: int = 1, status: int = 503, *, match: str = "",
                  message: str = "injected fault") -> None:
        payload = ('{"message": "%s"}' % message).encode()
        with self._lock:
            self._faults.extend([(match, status, payload)] * n)

    def _take_fault(self, method: str, path: str) -> tuple[int, bytes] | None:
        with self._lock:
            self.requests.append((method, path))
            for i, (match, status, payload) in enumerate(self._faults):
                if match in path:
                    del self._faults[i]
                    self.failed.append((method, path, status))
                    return status, payload
        return None

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> "FaultRelay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
