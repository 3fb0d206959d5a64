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
import socket
import struct
import threading
from dataclasses import dataclass

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.Thrift import TException
from thrift.transport import TTransport
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import CReadableTransport, TTransportException

from hms_proxy.ops.shutdown import StopRequest
from hms_proxy.thrift import dialect
from hms_proxy.thrift.limits import ClientConnections, wait_for_call
from hms_proxy.thrift.processor import CallContext, CloseConnection, Processor

log = logging.getLogger("hms_proxy.thrift.server")

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
    tls: object | None = None  # hms_proxy.security.tls.TLS: accepted sockets speak TLS
    sasl: object | None = None  # hms_proxy.security.sasl.Sasl: connections negotiate SASL
    read_only: bool = False    # every write refused on this listener (hms_proxy.security.access)
    idle_timeout: float = 0.0  # close a connection with no call for that long (0: never)
    max_connections_per_client: int = 0  # connections from one address (0: no cap)
    min_generation: str = dialect.OLDEST  # serve --min-client-generation (dialect.py)


class MessageTooLarge(TTransportException):
    """A client sent more bytes for one message than the server allows."""


class _SocketTransport(TTransport.TTransportBase, CReadableTransport):
    """The unframed transport: reads a socket into a buffer that the C decoder reads directly,
    refusing more than ``limit`` bytes per message; each reply leaves in one ``sendall``."""

    def __init__(self, sock: socket.socket, limit: int, idle_timeout: float = 0.0):
        self.sock = sock
        self.limit = limit
        self.count = 0
        self.idle_timeout = idle_timeout
        self._waiting = False  # between calls, nothing of the next one buffered yet
        self._rbuf = io.BytesIO(b"")
        self._wbuf: list[bytes] = []

    def start_message(self) -> None:
        self.count = 0
        self._waiting = self._rbuf.tell() >= len(self._rbuf.getbuffer())

    def _recv(self, want: int) -> bytes:
        if self._waiting and self.idle_timeout:
            self._waiting = False
            data = wait_for_call(self.sock, self.idle_timeout,
                                 lambda: self.sock.recv(max(want, 65536)))
        else:
            self._waiting = False
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

    def send_chunks(self, total: int, chunks) -> None:
        """A reply of ``total`` bytes sent piece by piece (hms_proxy.thrift.replies)."""
        if self._wbuf:
            self.flush()
        for chunk in chunks:
            self.sock.sendall(chunk)

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

    def __init__(self, trans, max_frame: int, idle_timeout: float = 0.0):
        self._trans = trans
        self._max = max_frame
        self.idle_timeout = idle_timeout
        self._waiting = False  # between calls, nothing of the next one buffered yet
        self._rbuf = io.BytesIO(b"")
        self._wbuf = io.BytesIO()

    def start_message(self) -> None:
        self._waiting = self._rbuf.tell() >= len(self._rbuf.getbuffer())

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
        if self._waiting and self.idle_timeout:
            self._waiting = False
            head = wait_for_call(self._trans.handle, self.idle_timeout,
                                 lambda: self._trans.readAll(4))
        else:
            self._waiting = False
            head = self._trans.readAll(4)
        (size,) = struct.unpack("!i", head)
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

    def send_chunks(self, total: int, chunks) -> None:
        """A reply of ``total`` bytes in one frame, sent piece by piece (hms_proxy.thrift.replies)."""
        if self._wbuf.tell():
            self.flush()
        self._trans.write(struct.pack("!i", total))
        for chunk in chunks:
            self._trans.write(chunk)
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
                 on_connection_end=None, ref: str | None = None,
                 clients: ClientConnections | None = None):
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
        self.signals: StopRequest | None = None  # set by install_signal_handlers
        self.port = config.port
        # connections per client address (shared by the listeners of one server)
        self.clients = clients if clients is not None else \
            ClientConnections(config.max_connections_per_client)
        self.extra_listeners: list[MetastoreServer] = []  # of --bind, started with this one

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
        signals = self.signals
        waited = [listener] if signals is None else [listener, signals]
        while not self._stopping.is_set():
            try:
                ready, _, _ = select.select(waited, [], [], 0.5)
            except (OSError, ValueError):
                break
            if signals is not None and signals.requested:
                self.stop()  # here, on ordinary code: never in the handler
                break
            if listener not in ready:
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

    def stop_now(self) -> None:
        """:meth:`stop`, the accept loop woken at once (not at its next half-second tick):
        the port refuses new connections when this returns."""
        self._stopping.set()
        listener = self._listener
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def install_signal_handlers(self) -> StopRequest:
        """SIGTERM and SIGINT stop :meth:`serve_forever` (any number of them, in any burst:
        the handler takes no lock, see hms_proxy.ops.shutdown)."""
        self.signals = StopRequest().install()
        return self.signals

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
                self._count("connection_refused")
                return
            if not self.clients.admit(addr):
                log.warning("refusing %s: %d connections open from %s "
                            "(--max-connections-per-client)", addr, self.clients.count(addr),
                            self.clients.client_of(addr))
                conn.close()
                self._count("connection_refused")
                return
            self._connections[conn.fileno()] = conn
        self._count("connection_opened")
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # dead peers (a machine gone without a FIN) are found, as HMS's
        # hive.metastore.server.tcp.keepalive does
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        t = threading.Thread(target=self._serve_connection, args=(conn, addr), daemon=True,
                             name=f"hms-conn-{addr}")
        with self._lock:
            self._threads.add(t)
        t.start()

    def _count(self, event: str) -> None:
        """``connection_opened``, ``_refused`` or ``_closed``, to the processor's
        observer (hms_proxy.ops.metrics.ServerMetrics), if any."""
        metrics = getattr(self.processor, "metrics", None)
        if metrics is not None:
            getattr(metrics, event)()

    def _make_transport(self, conn: socket.socket):
        cfg = self.config
        if cfg.transport == "framed":
            tsock = TSocket()
            tsock.setHandle(conn)
            return _FramedTransport(tsock, cfg.max_message_size, cfg.idle_timeout)
        return _SocketTransport(conn, cfg.max_message_size, cfg.idle_timeout)

    def _serve_connection(self, conn: socket.socket, addr) -> None:
        fileno = conn.fileno()
        peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else str(addr)
        cfg = self.config
        ctx = CallContext(peer=peer, listener_ref=self.ref, read_only=cfg.read_only,
                          generation=cfg.min_generation,
                          listener=f"{cfg.host}:{self.port}", listener_server=self)
        try:
            if cfg.tls is not None:  # the handshake: here, under a timeout, not in accept
                conn = cfg.tls.accept(conn, ctx)
                with self._lock:
                    self._connections[fileno] = conn
            if cfg.sasl is not None:  # in this thread, bounded in time like the TLS handshake
                trans = cfg.sasl.accept(conn, ctx, cfg.max_message_size, cfg.idle_timeout)
            else:
                trans = self._make_transport(conn)
            proto = TBinaryProtocolAccelerated(
                trans,
                string_length_limit=cfg.max_string_length,
                container_length_limit=cfg.max_container_length,
            )
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
            self.clients.release(addr)
            self._count("connection_closed")


def pid_file_write(path: str | None) -> None:
    if path:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
