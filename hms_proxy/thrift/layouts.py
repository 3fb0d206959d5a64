"""Requests whose layout a newer Hive generation changed under the same ids, read in either.

Hive 3.0 inserted ``writeid`` (an i64) at id 2 of ``AddDynamicPartitions``, moving the database,
table, partition names and operation type of 2.3 (ids 2-5) to ids 3-6. Read with one layout,
the other's request loses its fields (a Thrift reader skips a field of an unexpected wire type),
so ``add_dynamic_partitions`` is read field by field here and the layout told by the type of
field 2: a string in 2.3's, an i64 (the write id) in 3.x's and 4.x's. The request then reaches
the handler as 2.3's struct; a 3.x one makes the connection speak 3.1 at least
(hms_proxy/thrift/dialect.py).
"""
from __future__ import annotations

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType

from hms_proxy.thrift.gen.hive_metastore import ttypes as T

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


#: method -> reader of its arguments in either layout
READERS = {"add_dynamic_partitions": read_add_dynamic_partitions}
