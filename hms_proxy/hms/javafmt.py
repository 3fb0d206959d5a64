"""Thrift structs printed the way Java's generated ``toString`` prints them.

HMS puts such renderings in error messages (``Partition already exists: Partition(values:[a],
dbName:db, ...)``); tools that parse or show those messages see the same text from us.
"""
from __future__ import annotations

from thrift.Thrift import TType

from hms_proxy.thrift.generations import FIELDS_2_3


def string_length(text: str) -> int:
    """Java's ``String.length()``: UTF-16 code units (a character beyond U+FFFF counts two)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def string_hash(text: str, signed: bool = False) -> int:
    """Java's ``String.hashCode()`` over UTF-16 code units: unsigned 32 bits, or Java's ``int``
    with ``signed``. HMS's names, orders and messages depend on it (HashMap iteration order,
    generated constraint names)."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h - (1 << 32) if signed and h & 0x80000000 else h


def hashmap_bucket(key: str, capacity: int) -> int:
    """The bucket of a string key in a ``java.util.HashMap`` of ``capacity`` (a power of 2)."""
    h = string_hash(key)
    return (h ^ (h >> 16)) & (capacity - 1)

def thrift_map_order(mapping: dict) -> list[tuple]:
    """The iteration order of the HashMap Thrift's Java reads a map of string keys into
    (``new HashMap(2 * size)``, filled in wire order): what HMS prints of a map it was sent."""
    capacity = 1
    while capacity < 2 * len(mapping):
        capacity *= 2
    buckets: dict[int, list] = {}
    for key, value in mapping.items():
        buckets.setdefault(hashmap_bucket(key, capacity), []).append((key, value))
    return [item for index in sorted(buckets) for item in buckets[index]]


# Fields the HMS 2.3 IDL declares optional: Java leaves them out of toString when unset.
OPTIONAL_FIELDS = frozenset({
    "privileges", "catName", "catalogName", "skewedInfo", "storedAsSubDirectories",
    "temporary", "rewriteEnabled", "ownerName", "ownerType", "bitVectors", "lowValue",
    "highValue", "partName", "lastAnalyzed",
})
_NUMERIC = (TType.BYTE, TType.I16, TType.I32, TType.I64, TType.DOUBLE)
_JAVA_DEFAULTS = {TType.BOOL: False, TType.BYTE: 0, TType.I16: 0, TType.I32: 0, TType.I64: 0,
                  TType.DOUBLE: 0.0}
_ECHO_PLAN: dict[type, tuple] = {}


def _echo_plan(cls) -> tuple:
    """(primitive fields Java always writes, struct fields, list-of-struct fields) of a
    generated struct class."""
    plan = _ECHO_PLAN.get(cls)
    if plan is None:
        prims, structs, lists = [], [], []
        for field in _java_fields(cls):
            _, ftype, fname, fargs, _ = field
            if ftype in _JAVA_DEFAULTS and fname not in OPTIONAL_FIELDS:
                prims.append((fname, _JAVA_DEFAULTS[ftype]))
            elif ftype == TType.STRUCT:
                structs.append(fname)
            elif ftype in (TType.LIST, TType.SET) and fargs and fargs[0] == TType.STRUCT:
                lists.append(fname)
        plan = _ECHO_PLAN[cls] = (tuple(prims), tuple(structs), tuple(lists))
    return plan


def as_java_writes(obj):
    """``obj`` (changed in place) as a Java Thrift server writes back a struct it was sent:
    a field of default requiredness holding a primitive is always written, unset ones as Java's
    default (0, false); optional fields and unset objects stay out. HMS answers some write calls
    with the very object the client sent (add_partition), and clients see those zeros."""
    if obj is None:
        return obj
    prims, structs, lists = _echo_plan(type(obj))
    for fname, default in prims:
        if getattr(obj, fname) is None:
            setattr(obj, fname, default)
    for fname in structs:
        as_java_writes(getattr(obj, fname))
    for fname in lists:
        for item in getattr(obj, fname) or ():
            as_java_writes(item)
    return obj


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


def _java_fields(cls) -> list:
    """The fields a Java HMS 2.3.10 knows of a struct (those 3.x/4.x added to a 2.3.10 struct
    are neither printed nor written back by it); every field of a struct newer than 2.3."""
    known = FIELDS_2_3.get(cls.__name__)
    return [f for f in cls.thrift_spec if f is not None and (known is None or f[0] in known)]


def _struct(obj) -> str:
    parts = []
    for field in _java_fields(type(obj)):
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


def double_to_string(value: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` with ``single``), which Spark's
    ``CAST(x AS STRING)`` gives: plain notation for magnitudes in [1e-3, 1e7) with at least
    one fractional digit (``100.0``, ``0.37``), else ``d.dddE±n`` (``1.0E7``, ``9.9E-4``).
    The digits are the shortest that read back to the same value (JDK 19's algorithm; older
    JDKs print a longer string for a few rare values)."""
    import math
    from decimal import Decimal

    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if single:
        import numpy as np

        shortest = np.format_float_scientific(np.float32(value), unique=True)
    else:
        shortest = repr(value)
    sign, digits, exponent = Decimal(shortest).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + exponent  # digits before the decimal point
    out = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{out}0.{'0' * -point}{text}"
        if point >= len(text):
            return f"{out}{text}{'0' * (point - len(text))}.0"
        return f"{out}{text[:point]}.{text[point:]}"
    return f"{out}{text[0]}.{text[1:] or '0'}E{point - 1}"
