"""Thrift structs printed the way Java's generated ``toString`` prints them.

HMS puts such renderings in error messages (``Partition already exists: Partition(values:[a],
dbName:db, ...)``); tools that parse or show those messages see the same text from us.
"""
from __future__ import annotations

from thrift.Thrift import TType

# Fields the HMS 2.3 IDL declares optional: Java leaves them out of toString when unset.
OPTIONAL_FIELDS = frozenset({
    "privileges", "catName", "catalogName", "skewedInfo", "storedAsSubDirectories",
    "temporary", "rewriteEnabled", "ownerName", "ownerType", "bitVectors", "lowValue",
    "highValue", "partName", "lastAnalyzed",
})
_NUMERIC = (TType.BYTE, TType.I16, TType.I32, TType.I64, TType.DOUBLE)


def to_string(value, ttype=TType.STRUCT, targ=None) -> str:
    if value is None:
        return "null"
    if ttype == TType.STRUCT or hasattr(value, "thrift_spec"):
        return _struct(value)
    if ttype == TType.BOOL or isinstance(value, bool):
        return "true" if value else "false"
    if ttype in (TType.LIST, TType.SET):
        etype, eargs = (targ[0], targ[1]) if targ else (None, None)
        return "[" + ", ".join(to_string(v, etype, eargs) for v in value) + "]"
    if ttype == TType.MAP:
        ktype, kargs, vtype, vargs = (targ[0], targ[1], targ[2], targ[3]) if targ else (None,) * 4
        return "{" + ", ".join(f"{to_string(k, ktype, kargs)}={to_string(v, vtype, vargs)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, bytes):
        return " ".join(f"{b:02X}" for b in value[:128])
    return str(value)


def _struct(obj) -> str:
    parts = []
    for field in obj.thrift_spec:
        if field is None:
            continue
        _, ftype, fname, fargs, _ = field
        value = getattr(obj, fname, None)
        if value is None:
            if fname in OPTIONAL_FIELDS:
                continue
            text = "0" if ftype in _NUMERIC else "false" if ftype == TType.BOOL else "null"
        else:
            text = to_string(value, ftype, fargs)
        parts.append(f"{fname}:{text}")
    return f"{type(obj).__name__}({', '.join(parts)})"
