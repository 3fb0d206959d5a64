"""Requests whose layout a newer Hive generation changed under the same ids, read in either.

Hive 3.0 inserted ``writeid`` (an i64) at id 2 of ``AddDynamicPartitions``, moving the database,
table, partition names and operation type of 2.3 (ids 2-5) to ids 3-6. Read with one layout,
the other's request loses its fields (a Thrift reader skips a field of an unexpected wire type),
so ``add_dynamic_partitions`` is read field by field here and the layout told by the type of
field 2: a string in 2.3's, an i64 (the write id) in 3.x's and 4.x's. The request then reaches
the handler as 2.3's struct; a 3.x one makes the connection speak 3.1 at least
(hms_proxy/thrift/dialect.py).

``Table`` has the same kind of clash at id 16: 2.3.10's ``catName`` (a string), 3.x's and 4.x's
``creationMetadata`` (a struct: a materialized view's, with its catalog moved to id 17, which
our IDL calls ``catalogName``). Every call whose arguments hold a table (``create_table*``,
``alter_table*``, ``create_table_req``...) is read here, the tables field by field and id 16 by
its wire type: a string is 2.3.10's ``catName``, a struct the ``creationMetadata`` a newer
client sent, kept on the decoded table as an attribute of that name (our generated ``Table``
has no such field); the rest of each table, and everything that holds no table, is decoded by
the generated code as before. A table answered to a 3.x/4.x client with its creation metadata
is written in their layout (:class:`NewerTable`, :func:`encode_newer_table`).
"""
from __future__ import annotations

from thrift.protocol import fastbinary
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes as T

MAX_NAMES = 10_000_000  # partition names in one request (a list header could claim 2^31)


def _read_value(iprot, ftype):
    if ftype == TType.I64:
        return iprot.readI64()
    if ftype == TType.I32:
        return iprot.readI32()
    if ftype == TType.STRING:
        return iprot.readString()
    if ftype == TType.LIST:
        etype, size = iprot.readListBegin()
        if size < 0 or size > MAX_NAMES:
            raise TProtocolException(TProtocolException.SIZE_LIMIT, f"a list of {size} values")
        if etype != TType.STRING:
            for _ in range(size):
                iprot.skip(etype)
            iprot.readListEnd()
            return None
        values = [iprot.readString() for _ in range(size)]
        iprot.readListEnd()
        return values
    iprot.skip(ftype)
    return None


def _read_fields(iprot) -> dict[int, tuple[int, object]]:
    """A struct's fields: id -> (wire type, value; None for a kind not kept)."""
    fields: dict[int, tuple[int, object]] = {}
    iprot.readStructBegin()
    while True:
        _, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        fields[fid] = (ftype, _read_value(iprot, ftype))
        iprot.readFieldEnd()
    iprot.readStructEnd()
    return fields


def read_add_dynamic_partitions(iprot, args_cls):
    """``add_dynamic_partitions``' arguments in 2.3's or 3.x's layout: (args, the generation
    the layout tells, or None for 2.3's)."""
    request = None
    generation = None
    iprot.readStructBegin()
    while True:
        _, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        if fid == 1 and ftype == TType.STRUCT:
            fields = _read_fields(iprot)
            newer = fields.get(2, (None,))[0] == TType.I64
            first = 3 if newer else 2
            request = T.AddDynamicPartitions()  # what is absent keeps its default
            for offset, (name, wire) in enumerate((("dbname", TType.STRING),
                                                   ("tablename", TType.STRING),
                                                   ("partitionnames", TType.LIST),
                                                   ("operationType", TType.I32))):
                if fields.get(first + offset, (None,))[0] == wire:
                    setattr(request, name, fields[first + offset][1])
            if fields.get(1, (None,))[0] == TType.I64:
                request.txnid = fields[1][1]
            if newer:
                generation = "3.1.3"
        else:
            iprot.skip(ftype)
        iprot.readFieldEnd()
    iprot.readStructEnd()
    args = args_cls()
    args.rqst = request
    return args, generation


CREATION_METADATA_ID = 16  # Table's, in 3.x/4.x (2.3.10's catName)
NEWER = "3.1.3"  # the generation a creation metadata at Table's id 16 tells


class NewerTable(T.Table):
    """``Table`` in Hive 3.x/4.x's layout of id 16: ``creationMetadata``, a struct (their
    ``catName``, 17, is our ``catalogName`` in either layout). Only for writing answers to those
    clients (:func:`encode_newer_table`); reading goes through :func:`read_with_tables`."""
    thrift_spec = tuple(
        (CREATION_METADATA_ID, TType.STRUCT, "creationMetadata", [T.CreationMetadata, None], None)
        if f is not None and f[0] == CREATION_METADATA_ID else f for f in T.Table.thrift_spec)

    def __init__(self, creationMetadata=None, **fields):
        super().__init__(**fields)
        self.creationMetadata = creationMetadata


NewerTable.thrift_spec[CREATION_METADATA_ID][3][1] = T.CreationMetadata.thrift_spec


def encode_newer_table(table, creation_metadata) -> bytes:
    """``table`` (our ``Table``) with ``creation_metadata`` at id 16, as a 3.x/4.x client reads
    it; 2.3.10's ``catName`` (the same id) is not written."""
    fields = {f[2]: getattr(table, f[2], None) for f in T.Table.thrift_spec if f is not None}
    fields.pop("catName", None)
    if fields.get("temporary") is False:  # our decoder's default, which the stock never sends
        fields["temporary"] = None
    newer = NewerTable(creationMetadata=creation_metadata, **fields)
    return fastbinary.encode_binary(newer, [NewerTable, NewerTable.thrift_spec])


_HOLDS_TABLE: dict[type, bool] = {}


def holds_table(cls, seen: tuple = ()) -> bool:
    """Whether struct ``cls`` is, or holds in a field or a list, a ``Table``."""
    found = _HOLDS_TABLE.get(cls)
    if found is not None:
        return found
    found = cls is T.Table
    for f in cls.thrift_spec or ():
        if found:
            break
        if f is None:
            continue
        child = _struct_of(f[1], f[3])
        found = child is not None and child not in seen and holds_table(child, seen + (cls,))
    if not seen:
        _HOLDS_TABLE[cls] = found
    return found


def _struct_of(ttype, targ):
    if ttype == TType.STRUCT:
        return targ[0]
    if ttype in (TType.LIST, TType.SET) and targ[0] == TType.STRUCT:
        return targ[1][0]
    return None


class _Found:
    __slots__ = ("newer",)

    def __init__(self):
        self.newer = False


def _read_struct(iprot, cls, found: _Found):
    if not holds_table(cls):
        obj = cls()
        obj.read(iprot)  # the generated (C accelerated) reader
        return obj
    obj = cls()
    spec = cls.thrift_spec
    iprot.readStructBegin()
    while True:
        _, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        field = spec[fid] if 0 <= fid < len(spec) else None
        if cls is T.Table and fid == CREATION_METADATA_ID and ftype == TType.STRUCT:
            obj.creationMetadata = _read_struct(iprot, T.CreationMetadata, found)
            found.newer = True
        elif field is None or field[1] != ftype:
            iprot.skip(ftype)
        elif ftype == TType.STRUCT:
            setattr(obj, field[2], _read_struct(iprot, field[3][0], found))
        elif ftype in (TType.LIST, TType.SET) and _struct_of(ftype, field[3]) is not None:
            element = field[3][1][0]
            etype, size = iprot.readListBegin() if ftype == TType.LIST else iprot.readSetBegin()
            if size < 0 or size > MAX_NAMES:
                raise TProtocolException(TProtocolException.SIZE_LIMIT, f"a list of {size} values")
            if etype == TType.STRUCT:
                values = [_read_struct(iprot, element, found) for _ in range(size)]
            else:
                values = None
                for _ in range(size):
                    iprot.skip(etype)
            iprot.readListEnd() if ftype == TType.LIST else iprot.readSetEnd()
            if values is not None:
                setattr(obj, field[2], values)
        else:
            setattr(obj, field[2], iprot.readFieldByTType(ftype, field[3]))
        iprot.readFieldEnd()
    iprot.readStructEnd()
    return obj


def read_with_tables(iprot, args_cls):
    """The arguments of a call that holds tables, each table's id 16 read by its wire type
    (see the module's docstring): (args, the generation a creation metadata tells, or None)."""
    found = _Found()
    args = _read_struct(iprot, args_cls, found)
    return args, (NEWER if found.newer else None)


def creation_metadata(table):
    """The creation metadata a 3.x/4.x client sent with ``table`` (None: none)."""
    return getattr(table, "creationMetadata", None)


def decode_table(data: bytes):
    """A table's bytes as answered (ours, or a 3.x/4.x client's layout with the creation
    metadata at id 16, kept as ``creationMetadata``)."""
    from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
    from thrift.transport.TTransport import TMemoryBuffer

    return _read_struct(TBinaryProtocolAccelerated(TMemoryBuffer(data)), T.Table, _Found())


def encode_table(table) -> bytes:
    """``table`` as answered: in 3.x/4.x's layout when it carries a creation metadata."""
    creation = creation_metadata(table)
    if creation is not None:
        return encode_newer_table(table, creation)
    return fastbinary.encode_binary(table, [T.Table, T.Table.thrift_spec])


#: method -> reader of its arguments in either layout
READERS = {"add_dynamic_partitions": read_add_dynamic_partitions}
READERS.update({
    name[:-len("_args")]: read_with_tables for name, cls in vars(ThriftHiveMetastore).items()
    if name.endswith("_args") and isinstance(cls, type) and holds_table(cls)})
