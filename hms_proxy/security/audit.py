"""The audit log (``serve --audit-log FILE``): one JSON line per write call and per refused call.

    {"time": "2024-05-01T12:00:03.120Z", "identity": "alice", "auth": "secret",
     "user": "alice", "peer": "10.0.0.7:51234", "listener": "0.0.0.0:9083", "ref": "main",
     "method": "create_table", "object": "shop.orders", "outcome": "ok"}

``identity`` is who the server established (None: anonymous), ``auth`` how (``cert``: the
TLS client certificate's CN, ``secret``: set_ugi with the user's shared secret, ``ugi``:
set_ugi taken on trust, ``none``), ``user`` what set_ugi claimed. ``outcome`` is ``ok``,
``error`` (the call failed; ``error`` says why) or ``denied`` (refused by the access rules or
a read-only listener; ``error`` holds the message the client got). Lines are appended and
flushed one by one, whole (a lock orders the threads); several servers may share a file
(each line is written with one ``write`` of a file opened for appending).
"""
from __future__ import annotations

import json
import os
import threading
import time

from hms_proxy.security.access import ConfigError


class AuditLog:
    def __init__(self, fd: int, path: str):
        self.path = path
        self._fd = fd
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str) -> "AuditLog":
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        except OSError as exc:
            raise ConfigError(f"--audit-log {path}: {exc.strerror or exc}") from None
        return cls(fd, path)

    def record(self, ctx, method: str, ref: str, outcome: str, error: str | None = None,
               obj: str | None = None) -> None:
        now = time.time()
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z",
            "identity": getattr(ctx, "identity", None),
            "auth": getattr(ctx, "auth", "none"),
            "user": getattr(ctx, "user", None),
            "peer": getattr(ctx, "peer", ""),
            "listener": getattr(ctx, "listener", ""),
            "ref": ref,
            "method": method,
            "object": obj if obj is not None else _object_of(getattr(ctx, "call", ""), method),
            "outcome": outcome,
        }
        if error is not None:
            entry["error"] = error
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _object_of(call: str, method: str) -> str:
    """``create_table shop.orders`` -> ``shop.orders`` (what the handler described)."""
    return call[len(method):].strip() if call.startswith(method) else call


def read(path: str) -> list[dict]:
    """The entries of an audit log (lines that do not parse are skipped)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def writers_since(path: str, branch: str, since: float) -> list[str]:
    """Who wrote ``branch`` successfully (outcome ok) at ``since`` (seconds) or later, by the
    audit log, in order of first write; anonymous writers as ``(anonymous)``."""
    seen: dict[str, None] = {}
    for entry in read(path):
        if entry.get("outcome") != "ok" or entry.get("ref") != branch:
            continue
        if _parse_time(entry.get("time", "")) < since:
            continue
        seen.setdefault(entry.get("identity") or "(anonymous)", None)
    return list(seen)


def _parse_time(text: str) -> float:
    import calendar

    try:
        head, _, frac = text.rstrip("Z").partition(".")
        return calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S")) + \
            (int(frac) / 1000 if frac else 0.0)
    except ValueError:
        return 0.0
