"""Writes handed to the server that writes a branch: several servers over one repository write
a branch as fast as one.

Two servers writing one branch share its chain of log slots (:mod:`kvmodel.store.lakefs.log`):
a server must read the other's entry in a slot before it can write after it, so while both
write, each has one group in flight and they take turns (:mod:`kvmodel.store.lakefs.groups`),
at a third of what one server gets. Here the servers of a repository find each other through
the log instead: every entry a server uploads names it (``hms-w``: its id and the
address of its *peer port*; the id is the time the server started, then random digits, so the
server that started first has the smallest). A server whose view of a branch shows that another
server with a smaller id wrote it in the last :data:`LEASE_S` seconds (and answers: a peer with a
handed write unanswered for :data:`SLOW_S` seconds is handed no more meanwhile) does not
take slots itself: it
decides each write transaction over its view, as always, and hands the decided write (its
changes, the keys it read and the ranges it scanned, the end of the chain it was decided
over) to that server, which takes it into its own groups when nothing written after that
chain's end changed what it read, and answers once the group that holds it is acknowledged by
lakeFS, with the entries from that chain's end to it (the handing server applies them to its
view: its clients read their writes at once). So one server writes the branch's log, with its
groups pipelined, whatever server the clients talk to.

The lease is only a hint: every entry still takes its slot with lakeFS's conditional upload,
so two servers that both believe they own a branch (clocks apart, a server just started) are
as correct as before, only slower. A peer that cannot be reached, refuses the connection or
is not the owner any more is passed over (:data:`DOWN_S` seconds) and the write made here; a
peer that took the write and did not answer leaves its outcome unknown, as lakeFS not
answering an upload does (:class:`~kvmodel.store.lakefs.api.LakeFSUnreachable`).

The peer port takes connections only from servers that hold the repository's lakeFS secret:
it sends a random challenge, and the first frame must be its HMAC-SHA256 under a key made of
the secret access key and the repository; before that nothing longer than the answer is read.
Frames are a 4-byte length and JSON (values in base64); no frame is longer than
:data:`MAX_FRAME`, and at most :data:`MAX_CONNECTIONS` connections are served at once.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import select
import socket
import struct
import threading
import time
import uuid

from kvmodel.store import errors
from kvmodel.store.lakefs.api import LakeFSUnreachable

log = logging.getLogger("kvmodel.lakefs.peers")

LEASE_S = 120.0  # a server that wrote a branch this recently (writer's time) owns its writes
DOWN_S = 30.0  # a peer that could not take a write is passed over this long
SLOW_S = 5.0  # a peer with a handed write unanswered this long takes no more meanwhile
CONNECT_TIMEOUT = 1.0
ANSWER_TIMEOUT = 120.0  # a handed write waits this long for its group (uploads retried)
MAX_FRAME = 256 << 20
MAX_CONNECTIONS = 64
IDLE_KEPT = 16  # connections kept open to one peer
_LEN = struct.Struct(">I")
_CHALLENGE = 16
_HELLO = b"hms-proxy peer 1\n"


class PeerPassed(Exception):
    """The peer did not take the write (unreachable, refused, not the owner): make it here."""


def _key(secret: str, repository: str) -> bytes:
    return hashlib.sha256(b"hms-proxy peers\0" + secret.encode("utf-8") + b"\0" +
                          repository.encode("utf-8")).digest()


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(min(n - len(out), 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        out += chunk
    return bytes(out)


def _send_frame(sock: socket.socket, record: dict) -> None:
    data = json.dumps(record, separators=(",", ":")).encode("utf-8")
    sock.sendall(_LEN.pack(len(data)) + data)


def _recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> dict:
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    if n > limit:
        raise ValueError(f"a frame of {n} bytes (at most {limit})")
    record = json.loads(_recv_exact(sock, n).decode("utf-8"))
    if not isinstance(record, dict):
        raise ValueError("a frame that is not an object")
    return record


def encode_changes(changes: dict) -> list:
    return [[k, None if v is None else base64.b64encode(v).decode("ascii")]
            for k, v in changes.items()]


def decode_changes(raw) -> dict:
    if not isinstance(raw, list):
        raise ValueError("changes are a list")
    out = {}
    for item in raw:
        key, value = item
        if not isinstance(key, str) or not (value is None or isinstance(value, str)):
            raise ValueError("a change is [key, base64 or null]")
        out[key] = None if value is None else base64.b64decode(value, validate=True)
    return out


def parse_name(name: str) -> tuple[str, str, int] | None:
    """(id, host, port) of a peer's name ``id@host:port``; None when it is not one."""
    ident, at, address = name.partition("@")
    host, colon, port = address.rpartition(":")
    if not (ident and at and colon and host and port.isdigit()):
        return None
    return ident, host.strip("[]"), int(port)


class Peers:
    """This server's peer port and its connections to the others (one per store)."""

    def __init__(self, take, secret: str, repository: str, host: str = "0.0.0.0",
                 port: int = 0, advertise: str | None = None):
        """``take(branch, request) -> answer``: a write handed here (the store's); listen on
        ``host:port`` (0: any free port) and be reached at ``advertise`` (default: the host,
        or this machine's address when it is a wildcard)."""
        self._take = take
        self._key = _key(secret, repository)
        # the start time first: the server that has run longest owns a branch, so one just
        # started (a restart, one more server) takes no branch from the others
        self.id = f"{time.time_ns():016x}{uuid.uuid4().hex[:16]}"
        self._listener = socket.create_server((host, port), reuse_port=False)
        self._listener.settimeout(None)
        port = self._listener.getsockname()[1]
        if advertise is None:
            advertise = host
            if host in ("", "0.0.0.0", "::"):
                try:
                    advertise = socket.gethostbyname(socket.gethostname())
                except OSError:
                    advertise = "127.0.0.1"
        self.name = f"{self.id}@{advertise}:{port}"
        self.port = port
        self._idle: dict[tuple[str, int], list[socket.socket]] = {}
        self._down: dict[str, float] = {}
        self._waiting: dict[str, dict[int, float]] = {}  # peer -> its handed writes' starts
        self._lock = threading.Lock()
        self._serving = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closed = False
        self.handed = 0  # writes handed to another server and made there
        self.taken = 0  # writes taken from others and made here
        self._thread = threading.Thread(target=self._accept, name="lakefs-peers", daemon=True)
        self._thread.start()

    # --- whom to hand a write to ----------------------------------------------------------
    def owner(self, writers: dict) -> str | None:
        """The peer to hand a branch's writes to, from the servers its view shows wrote it
        (name -> latest writer's time): the one with the smallest id, when smaller than ours,
        that wrote it in the last :data:`LEASE_S` seconds and was not passed over lately and
        has not left a handed write unanswered for :data:`SLOW_S`; else None."""
        if not writers or self._closed:
            return None
        now_ns, now = time.time_ns(), time.monotonic()
        best = None
        for name, stamp in writers.items():
            parsed = parse_name(name)
            if parsed is None or parsed[0] >= self.id or now_ns - stamp > LEASE_S * 1e9:
                continue
            down = self._down.get(name)
            if down is not None and now < down:
                continue
            waiting = self._waiting.get(name)
            if waiting and now - min(list(waiting.values()), default=now) > SLOW_S:
                continue  # hung, or lakeFS slow for it: what it has not answered, it may
            if best is None or parsed[0] < best[0]:
                best = (parsed[0], name)
        return None if best is None else best[1]

    def pass_over(self, name: str) -> None:
        self._down[name] = time.monotonic() + DOWN_S

    # --- handing a write ------------------------------------------------------------------
    def hand(self, name: str, request: dict) -> dict:
        """Hand ``request`` to peer ``name``: its answer; :class:`PeerPassed` when it did not
        take it (the write was not made there); ``LakeFSUnreachable`` when it took it and
        gave no answer (it may have been made)."""
        parsed = parse_name(name)
        if parsed is None:
            raise PeerPassed(f"{name!r} is not a peer's name")
        address = parsed[1:]
        sock = self._connection(name, address)
        ticket = object()
        waiting = self._waiting.setdefault(name, {})
        waiting[id(ticket)] = time.monotonic()
        try:
            return self._exchange(name, address, sock, request)
        finally:
            waiting.pop(id(ticket), None)

    def _exchange(self, name: str, address: tuple[str, int], sock: socket.socket,
                  request: dict) -> dict:
        try:
            sock.settimeout(ANSWER_TIMEOUT)
            _send_frame(sock, request)
        except OSError as exc:
            sock.close()
            self.pass_over(name)
            raise PeerPassed(f"peer {name} could not be sent the write: {exc}") from None
        try:
            answer = _recv_frame(sock)
        except (OSError, ValueError) as exc:
            sock.close()
            self.pass_over(name)
            raise LakeFSUnreachable(
                f"the server writing this branch ({address[0]}:{address[1]}) took the write "
                f"and did not answer ({exc}): it may have been made") from None
        with self._lock:
            kept = self._idle.setdefault(address, [])
            if len(kept) < IDLE_KEPT and not self._closed:
                kept.append(sock)
            else:
                sock.close()
        if answer.get("error") == "passed":
            self.pass_over(name)
            raise PeerPassed(answer.get("message", "passed"))
        if "error" not in answer:
            self.handed += 1
        return answer

    def _connection(self, name: str, address: tuple[str, int]) -> socket.socket:
        with self._lock:
            kept = self._idle.get(address, [])
            while kept:
                sock = kept.pop()
                try:  # closed by the peer meanwhile (it restarted)? readable at rest means so
                    readable, _, _ = select.select([sock], [], [], 0)
                except (OSError, ValueError):
                    readable = [sock]
                if not readable:
                    return sock
                sock.close()
        try:
            sock = socket.create_connection(address, timeout=CONNECT_TIMEOUT)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            hello = _recv_exact(sock, len(_HELLO) + _CHALLENGE)
            if not hello.startswith(_HELLO):
                raise ConnectionError("not a peer port of this store")
            proof = hmac.new(self._key, hello[len(_HELLO):], hashlib.sha256).digest()
            sock.sendall(proof)
            if _recv_exact(sock, 2) != b"ok":
                raise ConnectionError("refused")
        except (OSError, ConnectionError) as exc:
            self.pass_over(name)
            raise PeerPassed(f"peer {name} cannot be reached: {exc}") from None
        return sock

    # --- taking writes --------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            if self._closed:
                sock.close()
                return
            if not self._serving.acquire(blocking=False):
                sock.close()  # more connections than served at once: the writer writes itself
                continue
            threading.Thread(target=self._serve, args=(sock,), name="lakefs-peer",
                             daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(CONNECT_TIMEOUT * 5)
            challenge = os.urandom(_CHALLENGE)
            sock.sendall(_HELLO + challenge)
            proof = _recv_exact(sock, 32)
            if not hmac.compare_digest(proof, hmac.new(self._key, challenge,
                                                       hashlib.sha256).digest()):
                sock.sendall(b"no")
                return
            sock.sendall(b"ok")
            sock.settimeout(None)
            while True:
                try:
                    request = _recv_frame(sock)
                except (ConnectionError, OSError):
                    return
                if self._closed:  # said, so that the writer knows it was not made here
                    _send_frame(sock, {"error": "passed", "message": "this server stopped"})
                    return
                _send_frame(sock, self._answer(request))
        except (OSError, ValueError, ConnectionError) as exc:
            log.debug("peer connection ended: %s", exc)
        finally:
            sock.close()
            self._serving.release()

    def _answer(self, request: dict) -> dict:
        try:
            branch = request["branch"]
            if not isinstance(branch, str):
                raise ValueError("branch is a string")
            answer = self._take(branch, request)
            if "error" not in answer:
                self.taken += 1
            return answer
        except PeerPassed as exc:
            return {"error": "passed", "message": str(exc)}
        except LakeFSUnreachable as exc:
            return {"error": "unknown", "message": str(exc)}
        except errors.StoreError as exc:
            return {"error": "store", "type": type(exc).__name__, "message": str(exc)}
        except (KeyError, ValueError, TypeError) as exc:
            return {"error": "passed", "message": f"a request this server cannot read: {exc}"}
        except Exception as exc:  # noqa: BLE001 - told to the writer; this server goes on
            log.exception("a write handed here failed")
            return {"error": "unknown", "message": f"{type(exc).__name__}: {exc}"}

    def close(self) -> None:
        self._closed = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        try:
            self._listener.close()
        except OSError:
            pass
        with self._lock:
            for kept in self._idle.values():
                for sock in kept:
                    sock.close()
            self._idle.clear()


def store_error(answer: dict) -> errors.StoreError:
    """The store error a peer answered (by its class name; StoreError for another)."""
    cls = getattr(errors, str(answer.get("type", "")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.StoreError)):
        cls = errors.StoreError
    return cls(str(answer.get("message", "")))
