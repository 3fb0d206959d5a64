"""Avro object container files read and written as their own schema says, so that a few values
can be changed and everything else kept: the schema text, the file's metadata (Iceberg keeps its
partition spec, schema and format version there), the field ids and the record names.

Iceberg's manifest lists and manifests are such files, and they name other files by absolute
path; :mod:`kvmodel.iceberg_anchor` rewrites those paths. Values are plain Python: a record is a
dict by field name, an array a list, a map a dict, an enum its symbol, fixed and bytes are
bytes; a union's branch is found again from the value when it is written (Iceberg's unions are
``["null", T]``).

    meta, schema, records = read_container(data)
    data = write_container(meta, records)     # meta["avro.schema"] is the schema written

A file whose records are all kept can be carried into another one without decoding them: its
blocks are copied as they are, behind the new records, under its own sync marker (the schema
and codec must be the same: Iceberg's manifest lists of one table's snapshots are such files).

    meta, sync, blocks = split_container(data)
    data = write_container(meta, new_records, sync=sync, tail=blocks)
"""
from __future__ import annotations

import json
import os
import struct
import zlib

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_BLOCK = 1000  # records per block written


class AvroError(ValueError):
    """Not an Avro object container file, or one this module cannot read."""


# --- the binary encoding --------------------------------------------------------------------
class _In:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0):
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise AvroError("the file ends inside a value")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def long(self) -> int:
        data, pos, shift, acc = self.data, self.pos, 0, 0
        while True:
            if pos >= len(data):
                raise AvroError("the file ends inside a number")
            b = data[pos]
            pos += 1
            acc |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise AvroError("a number longer than 64 bits")
        self.pos = pos
        return (acc >> 1) ^ -(acc & 1)

    def blob(self) -> bytes:
        return self.take(self.long())


def _put_long(out: bytearray, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _put_blob(out: bytearray, b: bytes) -> None:
    _put_long(out, len(b))
    out += b


class _Schema:
    """A parsed schema: named types registered by full and short name."""

    def __init__(self, schema):
        self.names: dict[str, dict] = {}
        self.root = self._register(schema, "")

    def _register(self, s, namespace: str):
        if isinstance(s, list):
            return [self._register(b, namespace) for b in s]
        if not isinstance(s, dict):
            return s
        kind = s.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = s.get("name", "")
            ns = s.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
            full = name if "." in name or not ns else f"{ns}.{name}"
            self.names[full] = s
            self.names.setdefault(full.rsplit(".", 1)[-1], s)
            if kind in ("record", "error"):
                for f in s.get("fields", []):
                    f["type"] = self._register(f["type"], ns)
            return s
        if kind == "array":
            s["items"] = self._register(s["items"], namespace)
        elif kind == "map":
            s["values"] = self._register(s["values"], namespace)
        return s

    def resolve(self, s):
        while isinstance(s, str) and s not in _PRIMITIVES:
            try:
                s = self.names[s]
            except KeyError:
                raise AvroError(f"the schema names an undefined type {s!r}") from None
        if isinstance(s, dict) and s.get("type") in _PRIMITIVES:
            return s["type"]  # {"type": "long", "logicalType": ...}
        return s


def _read(sch: _Schema, s, r: _In):
    s = sch.resolve(s)
    if isinstance(s, str):
        if s == "null":
            return None
        if s in ("long", "int"):
            return r.long()
        if s == "string":
            return r.blob().decode("utf-8")
        if s == "bytes":
            return r.blob()
        if s == "boolean":
            return r.take(1) != b"\x00"
        if s == "double":
            return struct.unpack("<d", r.take(8))[0]
        if s == "float":
            return struct.unpack("<f", r.take(4))[0]
        raise AvroError(f"unknown type {s!r}")
    if isinstance(s, list):
        i = r.long()
        if not 0 <= i < len(s):
            raise AvroError(f"union branch {i} of {len(s)}")
        return _read(sch, s[i], r)
    kind = s["type"]
    if kind in ("record", "error"):
        return {f["name"]: _read(sch, f["type"], r) for f in s["fields"]}
    if kind == "array":
        out = []
        while n := r.long():
            if n < 0:
                n = -n
                r.long()  # the block's size in bytes
            out.extend(_read(sch, s["items"], r) for _ in range(n))
        return out
    if kind == "map":
        out = {}
        while n := r.long():
            if n < 0:
                n = -n
                r.long()
            for _ in range(n):
                key = r.blob().decode("utf-8")
                out[key] = _read(sch, s["values"], r)
        return out
    if kind == "enum":
        i = r.long()
        symbols = s["symbols"]
        if not 0 <= i < len(symbols):
            raise AvroError(f"enum symbol {i} of {len(symbols)}")
        return symbols[i]
    if kind == "fixed":
        return r.take(int(s["size"]))
    raise AvroError(f"unknown type {kind!r}")


_PY = {"null": type(None), "boolean": bool, "int": int, "long": int, "float": float,
       "double": float, "bytes": bytes, "string": str}


def _branch(sch: _Schema, union: list, value) -> int:
    fits = []
    for i, b in enumerate(union):
        rb = sch.resolve(b)
        if isinstance(rb, str):
            want = _PY.get(rb)
            if want is bool and isinstance(value, bool) or want is not bool and isinstance(
                    value, want) and not isinstance(value, bool):
                return i
            if rb in ("float", "double") and isinstance(value, int) and not isinstance(value, bool):
                fits.append(i)
        elif value is not None:
            kind = rb.get("type")
            if (kind in ("record", "error", "map") and isinstance(value, dict)
                    or kind == "array" and isinstance(value, list)
                    or kind == "fixed" and isinstance(value, bytes)
                    or kind == "enum" and isinstance(value, str)):
                fits.append(i)
    if not fits:
        raise AvroError(f"no branch of union {union!r} takes {type(value).__name__}")
    return fits[0]


def _write(sch: _Schema, s, value, out: bytearray) -> None:
    s = sch.resolve(s)
    if isinstance(s, str):
        if s == "null":
            return
        if s in ("long", "int"):
            _put_long(out, value)
        elif s == "string":
            _put_blob(out, value.encode("utf-8"))
        elif s == "bytes":
            _put_blob(out, value)
        elif s == "boolean":
            out.append(1 if value else 0)
        elif s == "double":
            out += struct.pack("<d", value)
        elif s == "float":
            out += struct.pack("<f", value)
        else:
            raise AvroError(f"unknown type {s!r}")
        return
    if isinstance(s, list):
        i = _branch(sch, s, value)
        _put_long(out, i)
        _write(sch, s[i], value, out)
        return
    kind = s["type"]
    if kind in ("record", "error"):
        for f in s["fields"]:
            _write(sch, f["type"], value.get(f["name"]), out)
    elif kind == "array":
        if value:
            _put_long(out, len(value))
            for item in value:
                _write(sch, s["items"], item, out)
        out.append(0)
    elif kind == "map":
        if value:
            _put_long(out, len(value))
            for key, item in value.items():
                _put_blob(out, key.encode("utf-8"))
                _write(sch, s["values"], item, out)
        out.append(0)
    elif kind == "enum":
        _put_long(out, s["symbols"].index(value))
    elif kind == "fixed":
        if len(value) != int(s["size"]):
            raise AvroError(f"a fixed of {s['size']} bytes given {len(value)}")
        out += value
    else:
        raise AvroError(f"unknown type {kind!r}")


# --- codecs -----------------------------------------------------------------------------------
def _codec(name: str):
    if name == "null":
        return (lambda b: b), (lambda b: b)
    if name == "deflate":
        return ((lambda b: zlib.decompress(b, -15)),
                (lambda b: zlib.compress(b)[2:-4]))  # raw deflate: no zlib header, no adler32
    try:  # snappy, zstandard, bzip2: pyiceberg's codecs (their own modules installed)
        from pyiceberg.avro.codecs import KNOWN_CODECS
        codec = KNOWN_CODECS[name]
    except (ImportError, KeyError):
        raise AvroError(f"unsupported Avro codec {name!r}") from None
    return codec.decompress, (lambda b: codec.compress(b)[0])


# --- container files --------------------------------------------------------------------------
_META = {"type": "map", "values": "bytes"}


def _header(data: bytes) -> tuple[dict[str, bytes], bytes, _In]:
    if data[:4] != MAGIC:
        raise AvroError("not an Avro object container file")
    r = _In(data, 4)
    meta = _read(_Schema(_META), _META, r)
    return meta, r.take(SYNC_SIZE), r


def split_container(data: bytes) -> tuple[dict[str, bytes], bytes, bytes]:
    """(the file's metadata, its sync marker, its blocks as written): the records stay
    encoded, to be carried into another file by :func:`write_container`'s ``tail``."""
    meta, sync, r = _header(data)
    return meta, sync, data[r.pos:]


def iter_container(data: bytes):
    """The file's records one by one, decoded as they are asked for (a caller that has what
    it looks for stops early); its metadata is ``.meta`` of the returned iterator."""
    meta, sync, r = _header(data)
    try:
        sch = _Schema(json.loads(meta["avro.schema"]))
    except (KeyError, ValueError):
        raise AvroError("the file has no readable avro.schema") from None
    decompress, _ = _codec(meta.get("avro.codec", b"null").decode())

    def records():
        while r.pos < len(data):
            count = r.long()
            block = _In(decompress(r.blob()))
            if r.take(SYNC_SIZE) != sync:
                raise AvroError("a block does not end with the file's sync marker")
            for _ in range(count):
                yield _read(sch, sch.root, block)
    return _Records(meta, records())


class _Records:
    __slots__ = ("_it", "meta")

    def __init__(self, meta, it):
        self.meta = meta
        self._it = it

    def __iter__(self):
        return self._it


def read_container(data: bytes) -> tuple[dict[str, bytes], object, list]:
    """(the file's metadata, its schema, its records)."""
    records = iter_container(data)
    return records.meta, json.loads(records.meta["avro.schema"]), list(records)


def write_container(meta: dict[str, bytes], records: list, sync: bytes | None = None,
                    tail: bytes = b"") -> bytes:
    """A container file of ``records`` with ``meta`` (its ``avro.schema`` the schema, its
    ``avro.codec`` the codec) and a new sync marker; then ``tail``: blocks of another file
    (:func:`split_container`) of the same schema and codec, whose ``sync`` marker this file
    takes, so that their records follow without being decoded and encoded again."""
    if tail and (sync is None or len(sync) != SYNC_SIZE):
        raise AvroError("blocks carried from another file need its sync marker")
    sch = _Schema(json.loads(meta["avro.schema"]))
    _, compress = _codec(meta.get("avro.codec", b"null").decode())
    out = bytearray(MAGIC)
    _write(_Schema(_META), _META, meta, out)
    sync = sync if sync is not None else os.urandom(SYNC_SIZE)
    out += sync
    for start in range(0, len(records), _BLOCK):
        chunk = records[start:start + _BLOCK]
        block = bytearray()
        for record in chunk:
            _write(sch, sch.root, record, block)
        _put_long(out, len(chunk))
        _put_blob(out, compress(bytes(block)))
        out += sync
    out += tail
    return bytes(out)


__all__ = ["AvroError", "iter_container", "read_container", "split_container",
           "write_container"]
