"""Replies too large to assemble: a list of stored structs streamed to the socket.

A listing of 1,000,000 Spark partitions is close to 1 GB on the wire. Assembled like other replies it would
be held several times over (the stored values, the joined list, the message); here the Thrift
list header is written first (its element count was found by a first pass over the same read
view) and then each partition's stored bytes, in chunks of :data:`CHUNK_BYTES`, as the second
pass reads them. Memory stays bounded whatever the size of the answer.

A transport that can send a reply in pieces has ``send_chunks(total, chunks)`` (both of
:mod:`hms_proxy.thrift.server`'s do: the framed one writes the frame's size first); any other gets the
pieces written and flushed as one buffer.
"""
from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Iterator

from thrift.Thrift import TType

log = logging.getLogger("hms_proxy.thrift.replies")

CHUNK_BYTES = 256 * 1024
_LIST_FIELD = struct.Struct("!bhbi")  # field header (type, id 0) + list header (type, size)


class Raw:
    """Thrift-binary bytes of a struct (fields and stop byte), written to the wire verbatim."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data



_I32 = struct.Struct("!i")
_HEADER = struct.Struct("!II")
VERSION_1 = 0x80010000


def message_header(name: str, mtype: int, seqid: int) -> bytes:
    """A strict binary-protocol message header."""
    raw = name.encode()
    return _HEADER.pack(VERSION_1 | mtype, len(raw)) + raw + _I32.pack(seqid)



class RawStream:
    """``count`` stored structs of ``size`` bytes in all, read lazily from an open view.

    ``items`` yields each struct's stored bytes; ``close`` ends the read view they come from
    (called once the reply is written, or when it is not sent at all)."""

    def __init__(self, count: int, size: int, items: Iterator[bytes],
                 close: Callable[[], None] | None = None):
        self.count = count
        self.size = size
        self._items = items
        self._close = close

    def chunks(self) -> Iterator[bytes]:
        """The structs' bytes joined into chunks of about CHUNK_BYTES; exactly ``count``
        structs, or an error (the reply's header promised that many)."""
        batch: list[bytes] = []
        have = sent = 0
        for data in self._items:
            if sent == self.count:
                break
            batch.append(data)
            have += len(data)
            sent += 1
            if have >= CHUNK_BYTES:
                yield b"".join(batch)
                batch, have = [], 0
        if batch:
            yield b"".join(batch)
        if sent != self.count:
            raise RuntimeError(f"streamed {sent} items where {self.count} were announced")

    def materialise(self) -> list:
        """The items as a list of :class:`~hms_proxy.thrift.replies.Raw` (for the callers that
        rewrite them); closes the stream."""
        try:
            out = []
            for data in self._items:
                if len(out) == self.count:
                    break
                out.append(Raw(data))
            return out
        finally:
            self.close()

    def close(self) -> None:
        close, self._close = self._close, None
        if close is not None:
            close()

    def __len__(self) -> int:
        return self.count


def list_payload_size(items_size: int) -> int:
    """Bytes of a result struct whose success field is a list of structs of ``items_size``
    bytes in all (what ``--max-response-size`` bounds: the reply minus its message header)."""
    return _LIST_FIELD.size + items_size + 1  # + the result struct's stop


def write_stream_reply(trans, header: bytes, stream: RawStream) -> None:
    """The message header, then ``success`` (field 0, a list of structs) streamed, then the
    result struct's stop byte."""
    prefix = header + _LIST_FIELD.pack(TType.LIST, 0, TType.STRUCT, stream.count)
    total = len(header) + list_payload_size(stream.size)
    pieces = _pieces(prefix, stream.chunks(), b"\x00")
    send = getattr(trans, "send_chunks", None)
    if send is not None:
        send(total, pieces)
        return
    for piece in pieces:
        trans.write(piece)
    trans.flush()


def _pieces(prefix: bytes, chunks: Iterable[bytes], suffix: bytes) -> Iterator[bytes]:
    first = True
    for chunk in chunks:
        yield prefix + chunk if first else chunk
        first = False
    if first:
        yield prefix + suffix
    else:
        yield suffix


def raw_size(value) -> int | None:
    """The bytes of a list of stored structs (what most large replies are), without joining
    them; None for other values."""
    if isinstance(value, list) and value and isinstance(value[0], Raw):
        return sum(len(r.data) for r in value)
    return None


# --- the processor's side -----------------------------------------------------------------------
def is_large(value, max_response_size: int) -> bool:
    """Whether the reply takes :func:`send_large`: a stream, or a list of stored structs over
    the size cap (found without assembling it)."""
    if isinstance(value, RawStream):
        return True
    size = raw_size(value)
    return bool(max_response_size) and size is not None and \
        list_payload_size(size) > max_response_size
