"""Thrift's SASL transport, the server's side: what a Kerberized HMS speaks on its port.

A connection opens with a negotiation of messages, each a status byte (START 1, OK 2, BAD 3,
ERROR 4, COMPLETE 5), a 4-byte big-endian length and a payload: the client's START names the
mechanism, then the client's and the server's tokens go back and forth (OK) until the server's
mechanism is complete (COMPLETE). From then on every message travels in frames, a 4-byte
length and the bytes, wrapped by the mechanism when the negotiated quality of protection is
``auth-int`` or ``auth-conf``. The stock HMS does not use ``hive.metastore.thrift.framed.
transport.enabled`` under SASL, and neither does this: the SASL frames are the framing.

What a client that does not follow the protocol gets is what the stock HMS's Thrift (Java's
TSaslServerTransport) answers before it closes the connection: nothing for a status byte that
is none (a plaintext Thrift client: its first byte is the binary protocol's version),
``BAD "Unsupported mechanism type X"``, ``BAD "GSS initiate failed"`` for a token that does
not authenticate, ``BAD "Problem with callback handler"`` for a client acting as another,
``ERROR "Invalid payload header length: N"``, ``ERROR`` for a message out of turn, and for
DIGEST-MD5 (delegation tokens, :mod:`hms_proxy.security.digest`) Java's DigestMD5Server's BAD
words (the reasons in full go to the server's log). Bounded as a peer that has not authenticated must be: one negotiation
message takes at most :data:`MAX_NEGOTIATION_MESSAGE` bytes (checked before reading it), the
whole negotiation at most ``timeout`` seconds and :data:`MAX_STEPS` messages, all in the
connection's own thread (never the accept loop's); a frame after it, the server's message size
(``--max-message-size``).
"""
from __future__ import annotations

import io
import logging
import socket
import struct
import time

from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import TTransportException

from hms_proxy.security.kerberos import AuthenticationFailed
from hms_proxy.thrift.server import MessageTooLarge, _FramedTransport

log = logging.getLogger("hms_proxy.security.sasl")

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
_STATUS_NAMES = {START: "START", OK: "OK", BAD: "BAD", ERROR: "ERROR", COMPLETE: "COMPLETE"}
MAX_NEGOTIATION_MESSAGE = 1 << 20  # a Kerberos token with a large PAC is some tens of KiB
MAX_STEPS = 16
DEFAULT_TIMEOUT = 10.0


class NegotiationFailed(TTransportException):
    """The client did not complete a SASL negotiation the server accepts."""


class Sasl:
    """The SASL side of every listener of one server: its mechanisms by name (each a factory
    of one connection's exchange) and the bound on a negotiation's time."""

    def __init__(self, mechanisms: dict, timeout: float = DEFAULT_TIMEOUT):
        self.mechanisms = mechanisms
        self.timeout = timeout

    def accept(self, conn: socket.socket, ctx, max_frame: int, idle_timeout: float = 0.0):
        """Negotiates on an accepted connection; the transport for its calls. The caller's
        identity goes to ``ctx`` (``identity``, ``user``, ``auth`` = the mechanism's,
        ``principal``). Raises NegotiationFailed after telling the client why."""
        deadline = time.monotonic() + self.timeout
        peer = getattr(ctx, "peer", "")
        try:
            status, payload = _receive(conn, deadline)
            if status != START:
                _fail(conn, ERROR, f"Expecting START status, received {_status(status)}")
            name = payload.decode("utf-8", "replace")
            factory = self.mechanisms.get(name)
            if factory is None:
                _fail(conn, BAD, f"Unsupported mechanism type {name}")
            mechanism = factory()
            for _ in range(MAX_STEPS):
                status, payload = _receive(conn, deadline)
                if status not in (OK, COMPLETE):
                    if status in (BAD, ERROR):
                        raise NegotiationFailed(
                            TTransportException.NOT_OPEN,
                            "Peer indicated failure: " + payload.decode("utf-8", "replace"))
                    _fail(conn, ERROR, f"Expecting COMPLETE or OK, but got {_status(status)}")
                try:
                    challenge = mechanism.step(payload)
                except AuthenticationFailed as exc:
                    log.info("SASL negotiation with %s failed: %s", peer, exc)
                    _fail(conn, BAD, exc.answer)
                _send(conn, COMPLETE if mechanism.complete else OK, challenge or b"", deadline)
                if mechanism.complete:
                    break
            else:
                _fail(conn, ERROR, f"SASL negotiation did not end within {MAX_STEPS} messages")
            conn.settimeout(None)
        except socket.timeout:
            raise NegotiationFailed(TTransportException.TIMED_OUT,
                                    f"SASL negotiation with {peer} did not end within "
                                    f"{self.timeout:g} s") from None
        except (ConnectionError, OSError) as exc:
            raise NegotiationFailed(TTransportException.END_OF_FILE,
                                    f"SASL negotiation: {exc}") from None
        ctx.identity = ctx.user = mechanism.user
        ctx.auth = getattr(mechanism, "auth", "kerberos")
        ctx.principal = mechanism.principal
        tsock = TSocket()
        tsock.setHandle(conn)
        return SaslTransport(tsock, mechanism, max_frame, idle_timeout)


def _status(status: int) -> str:
    return _STATUS_NAMES.get(status, str(status))


def _receive(conn: socket.socket, deadline: float) -> tuple[int, bytes]:
    header = _read(conn, 5, deadline)
    status = header[0]
    if status not in _STATUS_NAMES:  # a plaintext client, say: closed without a word, as
        signed = status - 256 if status > 127 else status  # the stock's Thrift closes it
        raise NegotiationFailed(TTransportException.NOT_OPEN, f"Invalid status {signed}")
    (length,) = struct.unpack("!i", header[1:])
    if length < 0 or length > MAX_NEGOTIATION_MESSAGE:
        _fail(conn, ERROR, f"Invalid payload header length: {length}")
    return status, _read(conn, length, deadline)


def _read(conn: socket.socket, size: int, deadline: float) -> bytes:
    chunks, got = [], 0
    while got < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        conn.settimeout(left)
        chunk = conn.recv(min(size - got, 65536))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(conn: socket.socket, status: int, payload: bytes, deadline: float | None = None) -> None:
    if deadline is not None:
        conn.settimeout(max(0.001, deadline - time.monotonic()))
    conn.sendall(struct.pack("!Bi", status, len(payload)) + payload)


def _fail(conn: socket.socket, status: int, message: str):
    """Tells the client (as TSaslTransport's sendAndThrowMessage does) and ends the
    negotiation."""
    try:
        conn.settimeout(1.0)
        _send(conn, status, message.encode("utf-8"))
    except OSError:
        pass
    raise NegotiationFailed(TTransportException.NOT_OPEN, message)


class SaslTransport(_FramedTransport):
    """The calls' frames after the negotiation, unwrapped and wrapped by the mechanism when
    its quality of protection is more than ``auth``."""

    def __init__(self, trans, mechanism, max_frame: int, idle_timeout: float = 0.0):
        super().__init__(trans, max_frame, idle_timeout)
        self.mechanism = mechanism
        self._wraps = mechanism.wraps

    def _read_frame(self):
        super()._read_frame()
        if self._wraps:
            try:
                plain = self.mechanism.unwrap(self._rbuf.getvalue())
            except Exception as exc:  # noqa: BLE001 - a frame that does not unwrap ends it
                raise TTransportException(TTransportException.UNKNOWN,
                                          f"a SASL frame that does not unwrap: {exc}") from None
            self._rbuf = io.BytesIO(plain)

    def flush(self):
        data = self._wbuf.getvalue()
        self._wbuf = io.BytesIO()
        if self._wraps:
            data = self.mechanism.wrap(data)
        self._trans.write(struct.pack("!i", len(data)) + data)
        self._trans.flush()

    def send_chunks(self, total: int, chunks) -> None:
        if not self._wraps:
            return super().send_chunks(total, chunks)
        if self._wbuf.tell():
            self.flush()
        self._wbuf = io.BytesIO(b"".join(chunks))
        self.flush()


__all__ = ["Sasl", "SaslTransport", "NegotiationFailed", "MessageTooLarge"]
