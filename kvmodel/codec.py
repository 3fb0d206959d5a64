"""Canonical bytes for catalog entities.

An entity is stored as the Thrift binary encoding of its HMS struct, with every map sorted by
key first, so the same content always encodes to the same bytes (equal content, equal hash:
diff and merge skip it without decoding). Being plain Thrift binary, a stored value can also be
sent to a client as it is, without decoding and re-encoding (see ``hms_proxy.thrift.replies.Raw``).
"""
from __future__ import annotations

from thrift.protocol import fastbinary
from thrift.Thrift import TType
from thrift.transport.TTransport import TMemoryBuffer

_NESTED = (TType.STRUCT, TType.MAP, TType.LIST, TType.SET)


def _canonical(value, ttype, targ):
    """Return ``value`` with every map (recursively) rebuilt in sorted key order."""
    if value is None:
        return None
    if ttype == TType.STRUCT:
        canonicalize(value)
        return value
    if ttype == TType.MAP:
        ktype, kspec, vtype, vspec, _ = targ
        if vtype not in _NESTED and ktype not in _NESTED:
            return dict(sorted(value.items()))
        return {
            _canonical(k, ktype, kspec): _canonical(value[k], vtype, vspec)
            for k in sorted(value)
        }
    if ttype in (TType.LIST, TType.SET):
        etype, espec, _ = targ
        if etype in (TType.STRUCT, TType.MAP, TType.LIST, TType.SET):
            items = [_canonical(v, etype, espec) for v in value]
        else:
            items = list(value)
        if ttype == TType.SET:
            items = sorted(items)
        return items
    return value


def _contains_map(ttype, targ, seen=()) -> bool:
    if ttype == TType.MAP:
        return True
    if ttype in (TType.LIST, TType.SET):
        return _contains_map(targ[0], targ[1], seen)
    if ttype == TType.STRUCT:
        cls = targ[0]
        if cls in seen:
            return False
        return bool(_map_fields(cls, seen + (cls,)))
    return False


_MAP_FIELDS: dict[type, tuple] = {}


def _map_fields(cls, seen=()) -> tuple:
    """The fields of a struct class that can hold a map somewhere below them."""
    fields = _MAP_FIELDS.get(cls)
    if fields is None:
        fields = tuple(
            (f[2], f[1], f[3]) for f in cls.thrift_spec
            if f is not None and _contains_map(f[1], f[3], seen or (cls,)))
        _MAP_FIELDS[cls] = fields
    return fields


def canonicalize(obj):
    """Sort the maps of a Thrift struct in place (recursively); returns ``obj``."""
    for fname, ftype, fargs in _map_fields(type(obj)):
        current = getattr(obj, fname)
        if current is not None:
            setattr(obj, fname, _canonical(current, ftype, fargs))
    return obj


def encode(obj) -> bytes:
    """Canonical Thrift-binary bytes of a struct (its maps are sorted in place)."""
    canonicalize(obj)
    return fastbinary.encode_binary(obj, [obj.__class__, obj.thrift_spec])


def encode_fast(obj) -> bytes:
    """Thrift-binary bytes of a struct already known to be canonical."""
    return fastbinary.encode_binary(obj, [obj.__class__, obj.thrift_spec])


def decode(cls, data: bytes):
    """A new ``cls`` instance decoded from Thrift-binary bytes."""
    obj = cls()
    fastbinary.decode_binary(obj, _Reader(data), [cls, cls.thrift_spec])
    return obj


class _Reader:
    """The little of a protocol object that ``fastbinary.decode_binary`` reads."""

    __slots__ = ("trans",)
    string_length_limit = None
    container_length_limit = None

    def __init__(self, data: bytes):
        self.trans = TMemoryBuffer(data)


def clone(obj):
    """A deep copy of a Thrift struct, made by the C encoder and decoder (far faster than
    ``copy.deepcopy`` on nested structs)."""
    return decode(type(obj), fastbinary.encode_binary(obj, [obj.__class__, obj.thrift_spec]))
