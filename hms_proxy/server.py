"""The Thrift server: sockets, transports, the accelerated binary protocol, threads and limits.

One thread per connection (HMS clients hold a connection for a session and call serially),
capped by ``max_connections``. Every message is bounded: the bytes one message may take
(``max_message_size``, like ``hive.metastore.server.max.message.size``), the length of a string
and of a container; a client breaking a bound loses its connection, never the server.
"""
from __future__ import annotations

import io
import logging
import os
import select
import signal
import socket
import struct
import threading
from dataclasses import dataclass

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.Thrift import TException
from thrift.transport import TTransport
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import CReadableTransport, TTransportException

from hms_proxy.processor import CallContext, CloseConnection, Processor

log = logging.getLogger("hms_proxy.server")

DEFAULT_MAX_MESSAGE_SIZE = 100 * 1024 * 1024
DEFAULT_MAX_CONTAINER_LENGTH = 1_000_000


@dataclass
class ServerConfig:
    host: str = "0.0.0.0"
    port: int = 9083
    transport: str = "buffered"  # or "framed"
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_string_length: int = DEFAULT_MAX_MESSAGE_SIZE
    max_container_length: int = DEFAULT_MAX_CONTAINER_LENGTH
    max_connections: int = 1000
    reuse_port: bool = False


class MessageTooLarge(TTransportException):
    """A client sent more bytes for one message than the server allows."""


class _SocketTransport(TTransport.TTransportBase, CReadableTransport):
    """The unframed transport: reads a socket into a buffer that the C decoder reads directly,
    refusing more than ``limit`` bytes per message; each reply leaves in one ``sendall``."""

    def __init__(self, sock: socket.socket, limit: int):
        self.sock = sock
        self.limit = limit
        self.count = 0
        self._rbuf = io.BytesIO(b"")
        self._wbuf: list[bytes] = []

    def start_message(self) -> None:
        self.count = 0

    def _recv(self, want: int) -> bytes:
        data = self.sock.recv(max(want, 65536))
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "client closed the connection")
        self.count += len(data)
        if self.count > self.limit:
            raise MessageTooLarge(TTransportException.SIZE_LIMIT,
                                  f"message exceeds the limit of {self.limit} bytes")
        return data

    def isOpen(self):
        return True

    def read(self, sz):
        ret = self._rbuf.read(sz)
        if ret:
            return ret
        self._rbuf = io.BytesIO(self._recv(sz))
        return self._rbuf.read(sz)

    def readAll(self, sz):
        ret = self._rbuf.read(sz)
        if len(ret) == sz:  # the common case: all of it is buffered already
            return ret
        chunks, have = [ret], len(ret)
        while have < sz:
            chunk = self.read(sz - have)
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def write(self, buf):
        self._wbuf.append(buf)

    def flush(self):
        data = b"".join(self._wbuf)
        self._wbuf = []
        self.sock.sendall(data)

    def close(self):
        self.sock.close()

    @property
    def cstringio_buf(self):
        return self._rbuf

    def cstringio_refill(self, partialread, reqlen):
        chunks = [partialread]
        have = len(partialread)
        while have < reqlen:
            data = self._recv(reqlen - have)
            chunks.append(data)
            have += len(data)
        self._rbuf = io.BytesIO(b"".join(chunks))
        return self._rbuf


class _FramedTransport(TTransport.TTransportBase, CReadableTransport):
    """Framed transport with a bound on the frame size, read before any allocation."""

    def __init__(self, trans, max_frame: int):
        self._trans = trans
        self._max = max_frame
        self._rbuf = io.BytesIO(b"")
        self._wbuf = io.BytesIO()

    def start_message(self) -> None:
        pass

    def isOpen(self):
        return self._trans.isOpen()

    def close(self):
        self._trans.close()

    def read(self, sz):
        ret = self._rbuf.read(sz)
        if ret:
            return ret
        self._read_frame()
        return self._rbuf.read(sz)

    def _read_frame(self):
        (size,) = struct.unpack("!i", self._trans.readAll(4))
        if size < 0 or size > self._max:
            raise MessageTooLarge(
                TTransportException.SIZE_LIMIT,
                f"frame of {size} bytes exceeds the limit of {self._max} bytes",
            )
        self._rbuf = io.BytesIO(self._trans.readAll(size))

    def write(self, buf):
        self._wbuf.write(buf)

    def flush(self):
        data = self._wbuf.getvalue()
        self._wbuf = io.BytesIO()
        self._trans.write(struct.pack("!i", len(data)) + data)
        self._trans.flush()

    @property
    def cstringio_buf(self):
        return self._rbuf

    def cstringio_refill(self, prefix, reqlen):
        while len(prefix) < reqlen:
            self._read_frame()
            prefix += self._rbuf.getvalue()
        self._rbuf = io.BytesIO(prefix)
        return self._rbuf


class MetastoreServer:
    """Accepts connections and serves each on its own thread until the client leaves."""

    def __init__(self, processor: Processor, config: ServerConfig, on_stop=None,
                 on_connection_end=None, ref: str | None = None):
        self.processor = processor
        self.config = config
        self.ref = ref  # the ref this listener serves (None: the server's default)
        self.on_stop = on_stop
        self.on_connection_end = on_connection_end
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._connections: dict[int, socket.socket] = {}
        self._threads: set[threading.Thread] = set()
        self._listener: socket.socket | None = None
        self.port = config.port

    # --- lifecycle ----------------------------------------------------------------------
    def bind(self) -> None:
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.config.reuse_port and hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((self.config.host, self.config.port))
        sock.listen(512)
        self.port = sock.getsockname()[1]
        self._listener = sock

    def serve_forever(self) -> None:
        if self._listener is None:
            self.bind()
        listener = self._listener
        while not self._stopping.is_set():
            try:
                ready, _, _ = select.select([listener], [], [], 0.5)
            except (OSError, ValueError):
                break
            if not ready:
                continue
            try:
                conn, addr = listener.accept()
            except OSError:
                continue
            self._start_connection(conn, addr)
        self._shutdown()

    def stop(self) -> None:
        """Stop accepting; in-flight calls finish, idle connections are closed."""
        self._stopping.set()

    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop())

    def _shutdown(self) -> None:
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            conns = list(self._connections.values())
            threads = list(self._threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        for t in threads:
            t.join(timeout=10)
        if self.on_stop is not None:
            self.on_stop()

    # --- connections --------------------------------------------------------------------
    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._connections)

    def _start_connection(self, conn: socket.socket, addr) -> None:
        with self._lock:
            if len(self._connections) >= self.config.max_connections:
                log.warning("refusing %s: %d connections open", addr, len(self._connections))
                conn.close()
                return
            self._connections[conn.fileno()] = conn
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t = threading.Thread(target=self._serve_connection, args=(conn, addr), daemon=True,
                             name=f"hms-conn-{addr}")
        with self._lock:
            self._threads.add(t)
        t.start()

    def _make_transport(self, conn: socket.socket):
        cfg = self.config
        if cfg.transport == "framed":
            tsock = TSocket()
            tsock.setHandle(conn)
            return _FramedTransport(tsock, cfg.max_message_size)
        return _SocketTransport(conn, cfg.max_message_size)

    def _serve_connection(self, conn: socket.socket, addr) -> None:
        fileno = conn.fileno()
        peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else str(addr)
        ctx = CallContext(peer=peer, listener_ref=self.ref)
        trans = self._make_transport(conn)
        cfg = self.config
        proto = TBinaryProtocolAccelerated(
            trans,
            string_length_limit=cfg.max_string_length,
            container_length_limit=cfg.max_container_length,
        )
        try:
            while not self._stopping.is_set():
                trans.start_message()
                self.processor.process(proto, proto, ctx)
        except TTransportException as exc:
            if exc.type != TTransportException.END_OF_FILE:
                log.info("closing %s: %s", peer, exc)
        except (EOFError, ConnectionError, OSError):
            pass
        except CloseConnection as exc:
            log.info("closing %s: %s", peer, exc)
        except (TException, OverflowError, MemoryError, ValueError, TypeError,
                UnicodeDecodeError, struct.error) as exc:
            log.info("closing %s after a malformed message: %s: %s", peer, type(exc).__name__, exc)
        except Exception:  # noqa: BLE001 - a connection must never take the server down
            log.exception("closing %s after an unexpected error", peer)
        finally:
            try:
                conn.close()
            except OSError:
                pass
            if self.on_connection_end is not None:
                self.on_connection_end()
            with self._lock:
                self._connections.pop(fileno, None)
                self._threads.discard(threading.current_thread())


def pid_file_write(path: str | None) -> None:
    if path:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
