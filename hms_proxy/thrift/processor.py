"""Dispatch of one Thrift message to the handler, and the writing of its reply.

Unlike the processor the Thrift compiler generates, this one
* answers any method the handler does not implement with ``UNKNOWN_METHOD``, as HMS does;
* maps domain errors (``hms_proxy.thrift.errors``) to the exception the method declares, in one place;
* can send stored entity bytes as they are (:class:`Raw`), so that listing 10,000 partitions
  costs a ``join`` instead of a decode and an encode of each.
"""
from __future__ import annotations

import logging
import struct
import time
from dataclasses import dataclass, field

from thrift.protocol import fastbinary
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport.TTransport import CReadableTransport

from hms_proxy.thrift import dialect, errors, layouts, replies
from hms_proxy.thrift.limits import ResponseTooLarge
from hms_proxy.thrift.replies import Raw, RawStream, message_header
from kvmodel.store.errors import decided_again

log = logging.getLogger("hms_proxy.thrift.processor")


class CloseConnection(Exception):
    """Raised by a handler method to end the client's connection without a reply."""


@dataclass
class CallContext:
    """What one connection knows about its caller; passed to every handler method."""

    peer: str = ""
    user: str | None = None
    groups: list[str] = field(default_factory=list)
    calls: int = 0
    listener_ref: str | None = None  # the ref of the port the client connected to
    # the listener itself, whose ref the HTTP API may move (PUT /listeners/{port}): its ref at
    # each call, not at connection time, wins over listener_ref
    listener_server: object = field(default=None, repr=False)
    ref: str | None = None           # the ref of the call being served (set by the handler)
    catalog: str | None = None       # the call's catalog besides hive (None: hive; the handler)
    call: str = ""                   # "<method> <object>", for commit messages and logs
    listener: str = ""               # host:port of the listener (for the audit log)
    read_only: bool = False          # a read-only listener: every write refused (access.py)
    identity: str | None = None      # who the caller is, as established (hms_proxy.security.access)
    auth: str = "none"               # how: kerberos (SASL), cert (TLS client CN), secret, ugi, none
    principal: str | None = None     # the Kerberos principal authenticated (SASL GSSAPI)
    generation: str = dialect.OLDEST  # the Hive generation the client speaks (dialect.py)

    def served_ref(self) -> str | None:
        """The ref of the port the client is connected to, now (None: the server's ref)."""
        server = self.listener_server
        return server.ref if server is not None else self.listener_ref


@dataclass(frozen=True)
class _Method:
    name: str
    args_cls: type
    result_cls: type | None  # None for oneway methods
    arg_names: tuple[str, ...]
    exceptions: tuple[tuple[str, type], ...]  # (result field name, exception class)


def service_methods(service_modules) -> dict[str, _Method]:
    """Every method of the generated service modules (the service and what it extends)."""
    methods: dict[str, _Method] = {}
    for module in service_modules:
        for attr, value in vars(module).items():
            if not attr.endswith("_args") or not isinstance(value, type):
                continue
            name = attr[: -len("_args")]
            result_cls = getattr(module, name + "_result", None)
            arg_names = tuple(f[2] for f in value.thrift_spec if f is not None)
            exc = ()
            if result_cls is not None:
                exc = tuple(
                    (f[2], f[3][0])
                    for f in result_cls.thrift_spec
                    if f is not None and f[0] != 0 and f[1] == TType.STRUCT
                )
            methods.setdefault(name, _Method(name, value, result_cls, arg_names, exc))
    return methods


def _run(impl, ctx, argv: list):
    """``impl(ctx, *argv)``, decided again while its write loses to another server's
    (:func:`kvmodel.store.errors.decided_again`)."""
    return decided_again(impl, ctx, *argv)


class Processor:
    """Reads a call, runs the handler's method of the same name, writes the reply."""

    def __init__(self, handler, service_modules, ttypes, metrics=None, max_response_size: int = 0):
        self.handler = handler
        self.ttypes = ttypes
        self.methods = service_methods(service_modules)
        self.metrics = metrics
        self.max_response_size = max_response_size  # serve --max-response-size (0: no cap)

    def process(self, iprot, oprot, ctx: CallContext) -> None:
        name, mtype, seqid = read_message_begin(iprot)
        method = self.methods.get(name)
        impl = getattr(self.handler, name, None) if method is not None else None
        if impl is not None and not dialect.served_to(ctx.generation, name):
            impl = None  # a 2.3 client gets HMS 2.3's answer (dialect.AFTER_31)
        if impl is not None:  # a served method of a newer IDL tells the client's generation
            ctx.generation = dialect.note_call(ctx.generation, name)
        if method is None or impl is None or mtype not in (TMessageType.CALL, TMessageType.ONEWAY):
            iprot.skip(TType.STRUCT)
            iprot.readMessageEnd()
            self._write_exception(
                oprot, name, seqid,
                TApplicationException(
                    TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{name}'"
                ),
            )
            if self.metrics is not None:  # a name outside the IDL is no metric label
                self.metrics.observe(ctx, name if method is not None else "unknown_method",
                                     0.0, "TApplicationException")
            return
        either = layouts.READERS.get(name)
        if either is not None:  # a request whose layout changed between generations
            args, generation = either(iprot, method.args_cls)
            if generation is not None:
                ctx.generation = dialect.at_least(ctx.generation, generation)
        else:
            args = method.args_cls()
            if isinstance(iprot.trans, CReadableTransport):
                fastbinary.decode_binary(args, iprot,
                                         [method.args_cls, method.args_cls.thrift_spec])
            else:
                args.read(iprot)
        ctx.calls += 1
        started = time.perf_counter()
        generation = dialect.CURRENT.set(ctx.generation)
        try:
            value = _run(impl, ctx, [getattr(args, a) for a in method.arg_names])
        except CloseConnection:
            self._observe(ctx, name, started, "CloseConnection")
            raise
        except Exception as exc:  # noqa: BLE001 - every failure must become a reply
            if method.result_cls is None:
                log.warning("oneway %s failed: %s", name, exc)
                self._observe(ctx, name, started, type(exc).__name__)
                return
            sent = self._reply_error(oprot, method, seqid, exc)
            self._observe(ctx, name, started, sent)
            if isinstance(exc, TApplicationException) and \
                    exc.type == TApplicationException.PROTOCOL_ERROR:
                # A request missing a required field: HMS answers, but leaves the rest of the
                # message unread, so the connection's next call fails; it ends here instead.
                raise CloseConnection() from exc
            return
        finally:
            dialect.CURRENT.reset(generation)
        if method.result_cls is None:
            self._observe(ctx, name, started, None)
            return
        if replies.is_large(value, self.max_response_size):  # streamed, or refused unassembled
            self._observe(ctx, name, started, self._send_large(oprot, method, seqid, value))
            return
        # The whole reply is assembled into one buffer and sent with one write.
        if value is None:
            payload = b"\x00"
        elif isinstance(value, Raw):
            payload = b"\x0c\x00\x00" + value.data + b"\x00"
        elif _has_raw(value):
            payload = _encode_struct_with_raw(method.result_cls.thrift_spec, {"success": value})
        else:
            result = method.result_cls()
            result.success = value
            payload = fastbinary.encode_binary(result, [method.result_cls,
                                                        method.result_cls.thrift_spec])
        if self.max_response_size and len(payload) > self.max_response_size:
            self._observe(ctx, name, started,
                          self._refuse(oprot, method, seqid, len(payload)))
            return
        trans = oprot.trans
        trans.write(message_header(name, TMessageType.REPLY, seqid) + payload)
        trans.flush()
        self._observe(ctx, name, started, None)

    def _observe(self, ctx, name: str, started: float, error: str | None) -> None:
        """A finished call, to the observer (``hms_proxy.ops.metrics.ServerMetrics``): metrics
        and the call's log line."""
        if self.metrics is not None:
            self.metrics.observe(ctx, name, time.perf_counter() - started, error)

    def _send_large(self, oprot, method, seqid: int, value) -> str | None:
        """Stream ``value`` (a :class:`~hms_proxy.thrift.replies.RawStream`), or refuse it
        (either) when over ``max_response_size``. Returns what the client got: None (the
        answer) or the exception's class name. The stream is closed either way."""
        limit = self.max_response_size
        try:
            if not isinstance(value, RawStream):
                return self._refuse(oprot, method, seqid,
                                    replies.list_payload_size(replies.raw_size(value)))
            size = replies.list_payload_size(value.size)
            if limit and size > limit:
                return self._refuse(oprot, method, seqid, size)
            replies.write_stream_reply(
                oprot.trans, message_header(method.name, TMessageType.REPLY, seqid), value)
            return None
        finally:
            if isinstance(value, RawStream):
                value.close()

    def _refuse(self, oprot, method, seqid: int, size: int) -> str:
        """Answer a reply whose result struct takes ``size`` bytes, over the cap, with a
        MetaException saying so (an application error with the same words for a method that
        declares no MetaException)."""
        exc = ResponseTooLarge(method.name, size, self.max_response_size)
        log.warning("refused a reply of %d bytes to %s (--max-response-size %d)",
                    size, method.name, self.max_response_size)
        if not any(cls is self.ttypes.MetaException for _, cls in method.exceptions):
            exc = TApplicationException(TApplicationException.INTERNAL_ERROR, exc.message)
        return self._reply_error(oprot, method, seqid, exc)

    def _reply_error(self, oprot, method: _Method, seqid: int, exc: Exception) -> str:
        """Send ``exc`` as the method's declared exception (or an application error);
        returns the class name the client gets (``InternalError`` for an internal error)."""
        texc = exc if isinstance(exc, TException) and not isinstance(exc, TApplicationException) \
            else errors.to_thrift(exc, self.ttypes)
        slot = None
        if texc is not None:
            slot = next((f for f, cls in method.exceptions if isinstance(texc, cls)), None)
            if slot is None:
                # HMS wraps what a method does not declare into MetaException where it can.
                meta = next((f for f, cls in method.exceptions
                             if cls is self.ttypes.MetaException), None)
                if meta is not None:
                    slot, texc = meta, self.ttypes.MetaException(
                        message=getattr(texc, "message", None) or str(texc))
        if slot is None:
            if isinstance(exc, TApplicationException):
                app = exc
            else:
                if not isinstance(exc, (ValueError, errors.InternalError)):  # HMS-like failures
                    log.exception("internal error in %s", method.name, exc_info=exc)
                # HMS's wording exactly; the details are in our log.
                app = TApplicationException(
                    TApplicationException.INTERNAL_ERROR,
                    f"Internal error processing {method.name}")
            self._write_exception(oprot, method.name, seqid, app)
            return "InternalError" if app.type == TApplicationException.INTERNAL_ERROR \
                else "TApplicationException"
        result = method.result_cls()
        setattr(result, slot, texc)
        oprot.writeMessageBegin(method.name, TMessageType.REPLY, seqid)
        result.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()
        return type(texc).__name__

    @staticmethod
    def _write_exception(oprot, name: str, seqid: int, exc: TApplicationException) -> None:
        oprot.writeMessageBegin(name, TMessageType.EXCEPTION, seqid)
        exc.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()


def _has_raw(value) -> bool:
    if isinstance(value, Raw):
        return True
    if isinstance(value, list):
        return bool(value) and isinstance(value[0], Raw)
    spec = getattr(value, "thrift_spec", None)
    if spec is None:
        return False
    return any(f is not None and _has_raw(getattr(value, f[2])) for f in spec)


def _encode_struct_with_raw(spec, values) -> bytes:
    """Encode a struct whose fields may hold Raw values or lists of Raw values.

    ``values`` is the struct object or a dict of field name to value. Plain fields are encoded
    by fastbinary through a one-field copy of the struct, minus its stop byte."""
    out: list[bytes] = []
    get = values.get if isinstance(values, dict) else (lambda n: getattr(values, n))
    for f in spec:
        if f is None:
            continue
        fid, ftype, fname, fargs, _ = f
        value = get(fname)
        if value is None:
            continue
        if isinstance(value, Raw):
            out.append(_FIELD.pack(TType.STRUCT, fid))
            out.append(value.data)
        elif ftype == TType.LIST and value and isinstance(value[0], Raw):
            out.append(_FIELD.pack(TType.LIST, fid) + _LIST.pack(TType.STRUCT, len(value)))
            out.extend(r.data for r in value)
        elif ftype == TType.STRUCT and _has_raw(value):
            out.append(_FIELD.pack(TType.STRUCT, fid))
            out.append(_encode_struct_with_raw(value.thrift_spec, value))
        else:
            holder = _OneField(fid, ftype, fname, fargs, value)
            out.append(fastbinary.encode_binary(holder, [type(holder), holder.thrift_spec])[:-1])
    out.append(b"\x00")
    return b"".join(out)


_FIELD = struct.Struct("!bh")
_LIST = struct.Struct("!bi")
_I32 = struct.Struct("!i")
_HEADER = struct.Struct("!II")
VERSION_1 = 0x80010000
VERSION_MASK = 0xFFFF0000


def read_message_begin(iprot) -> tuple[str, int, int]:
    """(name, type, seqid) of the next message, strict or old-style, as TBinaryProtocol reads
    it, but in a few reads of the transport (this runs once per call)."""
    trans = iprot.trans
    (size,) = _I32.unpack(trans.readAll(4))
    if size < 0:
        if size & VERSION_MASK != VERSION_1:
            raise TProtocolException(type=TProtocolException.BAD_VERSION,
                                     message=f"Bad version in readMessageBegin: {size}")
        (length,) = _I32.unpack(trans.readAll(4))
        _check_length(iprot, length)
        rest = trans.readAll(length + 4)  # the name and the sequence id
        (seqid,) = _I32.unpack_from(rest, length)
        return rest[:length].decode("utf-8"), size & 0xFF, seqid
    if getattr(iprot, "strictRead", False):
        raise TProtocolException(type=TProtocolException.BAD_VERSION,
                                 message="No protocol version header")
    _check_length(iprot, size)
    name = trans.readAll(size).decode("utf-8")
    mtype = trans.readAll(1)[0]
    (seqid,) = _I32.unpack(trans.readAll(4))
    return name, mtype, seqid


def _check_length(iprot, length: int) -> None:
    limit = getattr(iprot, "string_length_limit", None)
    if length < 0:
        raise TProtocolException(TProtocolException.NEGATIVE_SIZE, f"Negative length: {length}")
    if limit is not None and length > limit:
        raise TProtocolException(TProtocolException.SIZE_LIMIT, f"Length exceeded max allowed: {length}")


class _OneField:
    """A throwaway struct with a single field, for encoding one field of a larger struct."""

    def __init__(self, fid, ftype, fname, fargs, value):
        spec = [None] * (fid + 1) if fid >= 0 else [None]
        spec[fid] = (fid, ftype, fname, fargs, None)
        self.thrift_spec = tuple(spec)
        setattr(self, fname, value)
