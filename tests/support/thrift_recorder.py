"""Record the Thrift calls a real client makes, and send them again.

:class:`Recorder` is a TCP relay placed between a client (Trino) and a metastore: it copies
bytes both ways untouched and decodes each CALL the client sends (TBinaryProtocol, unframed)
into a generic tree, so a recording keeps every field as the client sent it, those of methods
and fields HMS 2.3 does not know included. :func:`encode_call` writes such a tree back as a
CALL. Values are JSON-able: a struct is ``{"struct": [[id, type, value], ...]}``, a list or set
``{"list"|"set": [elem_type, [values]]}``, a map ``{"map": [key_type, value_type, [[k, v]...]]}``,
strings are str and binary that is not UTF-8 ``{"b64": ...}``.
"""
from __future__ import annotations

import base64
import socket
import struct
import threading
import time

from thrift.Thrift import TMessageType, TType

VERSION_1 = 0x80010000


class Incomplete(Exception):
    """The buffer ends inside a message: wait for more bytes."""


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Incomplete
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i8(self) -> int:
        return struct.unpack("!b", self.take(1))[0]

    def i16(self) -> int:
        return struct.unpack("!h", self.take(2))[0]

    def i32(self) -> int:
        return struct.unpack("!i", self.take(4))[0]

    def binary(self):
        n = self.i32()
        if n < 0 or n > 64 << 20:
            raise ValueError(f"bad string length {n}")
        raw = self.take(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(raw).decode()}

    def value(self, ttype: int):
        if ttype == TType.BOOL:
            return self.i8() != 0
        if ttype == TType.BYTE:
            return self.i8()
        if ttype == TType.I16:
            return self.i16()
        if ttype == TType.I32:
            return self.i32()
        if ttype == TType.I64:
            return struct.unpack("!q", self.take(8))[0]
        if ttype == TType.DOUBLE:
            return struct.unpack("!d", self.take(8))[0]
        if ttype == TType.STRING:
            return self.binary()
        if ttype == TType.STRUCT:
            return {"struct": self.fields()}
        if ttype in (TType.LIST, TType.SET):
            etype, n = self.i8(), self.i32()
            return {"list" if ttype == TType.LIST else "set":
                    [etype, [self.value(etype) for _ in range(n)]]}
        if ttype == TType.MAP:
            ktype, vtype, n = self.i8(), self.i8(), self.i32()
            return {"map": [ktype, vtype,
                            [[self.value(ktype), self.value(vtype)] for _ in range(n)]]}
        raise ValueError(f"unknown Thrift type {ttype}")

    def fields(self) -> list:
        out = []
        while True:
            ftype = self.i8()
            if ftype == TType.STOP:
                return out
            fid = self.i16()
            out.append([fid, ftype, self.value(ftype)])

    def message(self) -> tuple[str, int, int, list]:
        head = self.i32()
        if head & 0xFFFF0000 != VERSION_1:
            raise ValueError("not a strict TBinaryProtocol message")
        name = self.binary()
        seqid = self.i32()
        return name, head & 0xFF, seqid, self.fields()


class _Writer:
    def __init__(self):
        self.out = bytearray()

    def value(self, ttype: int, v) -> None:
        o = self.out
        if ttype == TType.BOOL:
            o += struct.pack("!b", 1 if v else 0)
        elif ttype == TType.BYTE:
            o += struct.pack("!b", v)
        elif ttype == TType.I16:
            o += struct.pack("!h", v)
        elif ttype == TType.I32:
            o += struct.pack("!i", v)
        elif ttype == TType.I64:
            o += struct.pack("!q", v)
        elif ttype == TType.DOUBLE:
            o += struct.pack("!d", v)
        elif ttype == TType.STRING:
            raw = base64.b64decode(v["b64"]) if isinstance(v, dict) else v.encode("utf-8")
            o += struct.pack("!i", len(raw)) + raw
        elif ttype == TType.STRUCT:
            self.fields(v["struct"])
        elif ttype in (TType.LIST, TType.SET):
            etype, items = v["list" if ttype == TType.LIST else "set"]
            o += struct.pack("!bi", etype, len(items))
            for item in items:
                self.value(etype, item)
        elif ttype == TType.MAP:
            ktype, vtype, items = v["map"]
            o += struct.pack("!bbi", ktype, vtype, len(items))
            for k, val in items:
                self.value(ktype, k)
                self.value(vtype, val)
        else:
            raise ValueError(f"unknown Thrift type {ttype}")

    def fields(self, fields: list) -> None:
        for fid, ftype, v in fields:
            self.out += struct.pack("!bh", ftype, fid)
            self.value(ftype, v)
        self.out += b"\0"


def decode_message(data: bytes) -> tuple[tuple[str, int, int, list], int]:
    """One message at the start of ``data`` and its length; Incomplete when cut short."""
    r = _Reader(data)
    msg = r.message()
    return msg, r.pos


def encode_call(name: str, args: list, seqid: int = 0) -> bytes:
    w = _Writer()
    w.out += struct.pack("!I", VERSION_1 | TMessageType.CALL)
    w.value(TType.STRING, name)
    w.out += struct.pack("!i", seqid)
    w.fields(args)
    return bytes(w.out)


def map_strings(tree, fn):
    """``tree`` with ``fn`` applied to every string in it."""
    if isinstance(tree, str):
        return fn(tree)
    if isinstance(tree, list):
        return [map_strings(t, fn) for t in tree]
    if isinstance(tree, dict) and "b64" not in tree:
        return {k: map_strings(v, fn) for k, v in tree.items()}
    return tree


class Recorder:
    """A relay on 127.0.0.1:``port`` to ``upstream`` (host, port) that keeps the CALLs seen.

    ``calls`` holds ``(time, connection number, method, args)`` in the order requests
    arrived. A client waits for each reply before a call that depends on it, so replaying
    them in this order keeps every dependency.
    """

    def __init__(self, upstream: tuple[str, int], lose_reply_of: set[str] | None = None):
        self.upstream = upstream
        # Test double of a lost reply (an injected fault, nothing real does it on demand): the
        # first CALL of each method named here reaches the server, and its reply is dropped
        # with the connection, as when a network or a server dies between the two.
        self.lose_reply_of = set(lose_reply_of or ())
        self.lost: list[str] = []
        self.calls: list[tuple[float, int, str, list]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._conns = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="recorder-accept").start()

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def take(self) -> list[tuple[float, int, str, list]]:
        """The calls recorded so far, forgotten here."""
        with self._lock:
            out, self.calls = self.calls, []
        return out

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += 1
                conn = self._conns
            state = {"lose": False}
            threading.Thread(target=self._pump, args=(client, server, conn, state),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, None, state),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, conn: int | None,
              state: dict) -> None:
        pending = b""
        replies = conn is None  # server -> client
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if replies and state["lose"]:  # the reply to lose
                    # Read it whole (the server has sent all of it: nothing of the call is
                    # left to do but count and log it), then drop it with the connection.
                    pending += data
                    try:
                        decode_message(pending)
                    except Incomplete:
                        continue
                    except ValueError:
                        pass
                    break
                if conn is not None:  # client -> server: decode the calls
                    pending += data
                    while pending:
                        try:
                            (name, mtype, _seq, args), size = decode_message(pending)
                        except Incomplete:
                            break
                        except ValueError as exc:  # not Thrift binary: stop decoding
                            self.errors.append(f"connection {conn}: {exc}")
                            pending, conn = b"", None
                            break
                        pending = pending[size:]
                        if mtype in (TMessageType.CALL, TMessageType.ONEWAY):
                            with self._lock:
                                self.calls.append((time.time(), conn, name, args))
                                if name in self.lose_reply_of:
                                    self.lose_reply_of.discard(name)
                                    self.lost.append(name)
                                    state["lose"] = True
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
