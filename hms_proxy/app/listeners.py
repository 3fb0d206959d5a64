"""Thrift listeners opened while the server runs, each bound to one ref.

``serve --bind PORT=REF`` binds ports to refs at start; these are the same listeners, opened
and closed through the HTTP API (``POST /api/v1/listeners``, ``DELETE
/api/v1/listeners/{port}``): what the pytest plugin gives each test, a branch of its own behind
a Thrift URI an unmodified Spark or Trino configuration points at. A listener shares the
server's processor, limits and security (a read-only server's listeners are read-only).
"""
from __future__ import annotations

import dataclasses
import logging
import threading

from hms_proxy.api.listeners import TooManyListeners
from hms_proxy.thrift import server as srv

log = logging.getLogger(__name__)
MAX_LISTENERS = 512  # a hostile or leaking client cannot open ports without bound


@dataclasses.dataclass(frozen=True)
class Listener:
    port: int
    ref: str
    read_only: bool


class Listeners:
    """The run-time listeners of one server (``server``: the main Thrift listener)."""

    def __init__(self, server: srv.MetastoreServer, store, limit: int = MAX_LISTENERS):
        self.server = server
        self.store = store
        self.limit = limit
        self._lock = threading.Lock()
        self._open: dict[int, tuple[srv.MetastoreServer, threading.Thread, Listener]] = {}
        self._closed = False

    def open(self, ref: str) -> Listener:
        """A new listener on a free port of the server's host serving ``ref``, read-only when
        the server is (RefNotFound when there is no such ref; TooManyListeners past the
        limit)."""
        self.store.resolve(ref)
        read_only = bool(self.server.config.read_only)
        with self._lock:
            if self._closed:
                raise TooManyListeners("the server is stopping")
            if len(self._open) >= self.limit:
                raise TooManyListeners(f"{len(self._open)} listeners are open (at most "
                                       f"{self.limit}): close some first")
            extra = srv.MetastoreServer(
                self.server.processor,
                dataclasses.replace(self.server.config, port=0, read_only=read_only),
                on_connection_end=self.server.on_connection_end, ref=ref,
                clients=self.server.clients)
            extra.bind()
            thread = threading.Thread(target=extra.serve_forever, daemon=True,
                                      name=f"listener-{extra.port}")
            thread.start()
            listener = Listener(extra.port, ref, read_only)
            self._open[extra.port] = (extra, thread, listener)
        log.info("serving ref %s on %s:%d (opened through the HTTP API)", ref,
                 self.server.config.host, extra.port)
        return listener

    def move(self, port: int, ref: str) -> Listener | None:
        """Serve ``ref`` on ``port`` from the next call on, on the connections already open
        too (a SparkSession keeps its one connection); None if there is no such listener."""
        self.store.resolve(ref)
        with self._lock:
            found = self._open.get(port)
            if found is None:
                return None
            extra, thread, listener = found
            extra.ref = ref
            listener = dataclasses.replace(listener, ref=ref)
            self._open[port] = (extra, thread, listener)
        log.info("port %d now serves ref %s", port, ref)
        return listener

    def close(self, port: int) -> Listener | None:
        """Stop the listener on ``port`` (its in-flight calls finish); None if there is none."""
        with self._lock:
            found = self._open.pop(port, None)
        if found is None:
            return None
        extra, thread, listener = found
        extra.stop_now()
        thread.join(timeout=15)
        log.info("closed the listener of ref %s on port %d", listener.ref, port)
        return listener

    def list(self) -> list[Listener]:
        with self._lock:
            return sorted((entry[2] for entry in self._open.values()), key=lambda x: x.port)

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            ports = list(self._open)
        for port in ports:
            self.close(port)
