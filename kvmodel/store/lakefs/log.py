"""The write log of the lakeFS backend: one object per write transaction.

A write transaction on branch B uploads one object, ``_hms_log/B/<name>``, holding all of its
changes; lakeFS stores an upload whole or not at all, so a transaction is visible whole or not
at all, whatever happens to the server that wrote it. Readers apply a branch's log entries, in
name order, over its head commit and its staged per-key objects. A commit *folds* the log:
it writes the net changes as per-key objects (``_hms/<key>``, what lakeFS's diff, merge and UI
show), then a *fold marker* naming the entries it folded, then deletes those entries and the
marker, then commits. Readers skip entries a marker names, so a fold interrupted at any step
leaves the branch reading the same (``docs/lakefs-design.md``).

Entry names sort by time: ``<nanoseconds, 20 digits>-<random>``; markers are
``~folded-<nanoseconds>-<random>`` and sort after every entry.
"""
from __future__ import annotations

import struct
import time
import uuid

from kvmodel.store.errors import StoreError

LOG = "_hms_log/"  # LOG + branch + "/" + entry name
MARKER = "~folded-"
_MAGIC = b"HMSLOG1\n"
_MARKER_MAGIC = b"HMSFOLD1\n"
_LEN = struct.Struct(">I")
_VAL = struct.Struct(">i")


def directory(branch: str) -> str:
    """The object prefix of ``branch``'s log."""
    return f"{LOG}{branch}/"


def new_entry_name() -> str:
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:16]}"


def new_marker_name() -> str:
    return f"{MARKER}{time.time_ns():020d}-{uuid.uuid4().hex[:16]}"


def is_marker(name: str) -> bool:
    return name.startswith(MARKER)


def encode(changes: dict[str, bytes | None]) -> bytes:
    """One entry's bytes: every key with its value, or a deletion."""
    out = [_MAGIC]
    for key in sorted(changes):
        raw = key.encode("utf-8")
        value = changes[key]
        out.append(_LEN.pack(len(raw)))
        out.append(raw)
        if value is None:
            out.append(_VAL.pack(-1))
        else:
            out.append(_VAL.pack(len(value)))
            out.append(value)
    return b"".join(out)


def decode(data: bytes, name: str = "") -> dict[str, bytes | None]:
    """The changes of an entry; StoreError when the bytes are not one (never a partial dict)."""
    view = memoryview(data)
    if bytes(view[:len(_MAGIC)]) != _MAGIC:
        raise StoreError(f"log entry {name!r} is not a write-log entry of this store")
    changes: dict[str, bytes | None] = {}
    pos, end = len(_MAGIC), len(data)
    try:
        while pos < end:
            (klen,) = _LEN.unpack_from(view, pos)
            pos += 4
            key = bytes(view[pos:pos + klen]).decode("utf-8")
            if pos + klen > end:
                raise ValueError("truncated key")
            pos += klen
            (vlen,) = _VAL.unpack_from(view, pos)
            pos += 4
            if vlen < 0:
                changes[key] = None
                continue
            if pos + vlen > end:
                raise ValueError("truncated value")
            changes[key] = bytes(view[pos:pos + vlen])
            pos += vlen
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"log entry {name!r} is damaged: {exc}") from None
    return changes


def encode_marker(names: list[str]) -> bytes:
    return _MARKER_MAGIC + "\n".join(names).encode("utf-8")


def decode_marker(data: bytes, name: str = "") -> set[str]:
    if not data.startswith(_MARKER_MAGIC):
        raise StoreError(f"fold marker {name!r} is not one of this store")
    text = data[len(_MARKER_MAGIC):].decode("utf-8", "replace")
    return {n for n in text.split("\n") if n}


__all__ = ["LOG", "MARKER", "directory", "new_entry_name", "new_marker_name", "is_marker",
           "encode", "decode", "encode_marker", "decode_marker"]
