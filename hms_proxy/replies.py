"""Replies too large to assemble: a list of stored structs streamed to the socket.

A listing of 1,000,000 Spark partitions is close to 1 GB on the wire. Assembled like other replies it would
be held several times over (the stored values, the joined list, the message); here the Thrift
list header is written first (its element count was found by a first pass over the same read
view) and then each partition's stored bytes, in chunks of :data:`CHUNK_BYTES`, as the second
pass reads them. Memory stays bounded whatever the size of the answer.

A transport that can send a reply in pieces has ``send_chunks(total, chunks)`` (both of
:mod:`hms_proxy.server`'s do: the framed one writes the frame's size first); any other gets the
pieces written and flushed as one buffer.
"""
from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Iterator

from thrift.Thrift import TType

log = logging.getLogger("hms_proxy.replies")

CHUNK_BYTES = 256 * 1024
_LIST_FIELD = struct.Struct("!bhbi")  # field header (type, id 0) + list header (type, size)


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
        """The items as a list of :class:`~hms_proxy.processor.Raw` (for the callers that
        rewrite them); closes the stream."""
        from hms_proxy.processor import Raw

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
    from hms_proxy.processor import Raw

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


def send_large(processor, oprot, method, seqid: int, value) -> str | None:
    """Stream ``value`` (a :class:`RawStream`), or refuse it (either) when over the processor's
    ``max_response_size``. Returns what the client got: None (the answer) or the exception's
    class name. The stream is closed either way."""
    from hms_proxy.processor import message_header
    from thrift.Thrift import TMessageType

    limit = processor.max_response_size
    try:
        if not isinstance(value, RawStream):
            return refuse(processor, oprot, method, seqid, list_payload_size(raw_size(value)))
        size = list_payload_size(value.size)
        if limit and size > limit:
            return refuse(processor, oprot, method, seqid, size)
        write_stream_reply(oprot.trans, message_header(method.name, TMessageType.REPLY, seqid),
                           value)
        return None
    finally:
        if isinstance(value, RawStream):
            value.close()


def refuse(processor, oprot, method, seqid: int, size: int) -> str:
    """Answer a reply whose result struct takes ``size`` bytes, over the cap, with a
    MetaException saying so (an application error with the same words for a method that
    declares no MetaException)."""
    from thrift.Thrift import TApplicationException

    from hms_proxy.limits import ResponseTooLarge

    exc = ResponseTooLarge(method.name, size, processor.max_response_size)
    log.warning("refused a reply of %d bytes to %s (--max-response-size %d)",
                size, method.name, processor.max_response_size)
    if not any(cls is processor.ttypes.MetaException for _, cls in method.exceptions):
        exc = TApplicationException(TApplicationException.INTERNAL_ERROR, exc.message)
    return processor._reply_error(oprot, method, seqid, exc)
