"""The Iceberg REST catalog's HTTP listener: uvicorn (its ``httptools`` parser when installed)
on a daemon thread beside the Thrift listeners of ``hms-proxy serve --rest-port``, on a socket
bound here so that a taken port fails at start like the other listeners."""
from __future__ import annotations

import logging
import socket
import threading
import time

log = logging.getLogger("hms_proxy.rest")


class RestServer:
    def __init__(self, app, host: str, port: int, reuse_port: bool = False):
        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port and hasattr(socket, "SO_REUSEPORT"):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            self.sock.bind((host, port))
        except OSError:
            self.sock.close()
            raise
        # accepted connections inherit it: a reply's headers and body go out at once (with
        # Nagle, a keep-alive client waits out its delayed ACK, 40 ms, on every request)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.listen(512)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        try:
            import httptools  # noqa: F401 - the faster parser, when there
            http = "httptools"
        except ImportError:
            http = "h11"
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                http=http, loop="asyncio", timeout_keep_alive=30,
                                limit_concurrency=1024)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                        name=f"rest-{self.port}", daemon=True)

    def start(self, timeout: float = 30.0) -> "RestServer":
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the Iceberg REST listener did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=15)
        self.sock.close()
