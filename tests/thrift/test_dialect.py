"""A connection's Hive generation (hms_proxy/thrift/dialect.py): the newest of the methods it
has called, never going back."""
from __future__ import annotations

from hms_proxy.thrift import dialect


def test_a_connection_speaks_the_newest_generation_of_its_calls():
    gen = dialect.OLDEST
    for method in ("set_ugi", "get_table", "get_table_req", "add_partitions_req"):
        gen = dialect.note_call(gen, method)
    assert gen == "2.3.10"  # every one of them is a 2.3 method
    gen = dialect.note_call(gen, "get_catalogs")  # 3.1.3's
    assert gen == "3.1.3"
    gen = dialect.note_call(gen, "get_database_req")  # 4.0.1's
    assert gen == "4.0.1"
    assert dialect.note_call(gen, "get_table") == "4.0.1"  # an older call does not lower it
    assert dialect.note_call(gen, "no_such_method") == "4.0.1"


def test_hive4_is_set_per_call():
    assert not dialect.hive4()
    token = dialect.CURRENT.set("4.0.1")
    try:
        assert dialect.hive4()
    finally:
        dialect.CURRENT.reset(token)
    assert not dialect.hive4()


def test_write_ids_are_served_to_newer_connections_only():
    """They tell no generation themselves: a 2.3 client (Trino without a catalog name) gets
    HMS 2.3's unknown-method answer; a connection that spoke 3.1+ is served."""
    gen = dialect.OLDEST
    assert not dialect.served_to(gen, "allocate_table_write_ids")
    assert dialect.note_call(gen, "allocate_table_write_ids") == dialect.OLDEST
    assert dialect.served_to(gen, "open_txns")
    gen = dialect.note_call(gen, "get_catalogs")
    assert all(dialect.served_to(gen, m) for m in dialect.AFTER_31)


def test_add_dynamic_partitions_is_read_in_either_layout():
    """2.3's layout, and 3.x's with writeid inserted at 2 (which also tells the generation)."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TTransport

    from hms_proxy.thrift import layouts
    from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore as S
    from hms_proxy.thrift.gen.hive_metastore import ttypes as T

    def write(fields):
        buf = TTransport.TMemoryBuffer()
        p = TBinaryProtocol.TBinaryProtocol(buf)
        p.writeStructBegin("args")
        p.writeFieldBegin("rqst", 12, 1)
        p.writeStructBegin("AddDynamicPartitions")
        for fid, ftype, value in fields:
            p.writeFieldBegin("f", ftype, fid)
            if ftype == 10:
                p.writeI64(value)
            elif ftype == 8:
                p.writeI32(value)
            elif ftype == 11:
                p.writeString(value)
            else:
                p.writeListBegin(11, len(value))
                for v in value:
                    p.writeString(v)
                p.writeListEnd()
            p.writeFieldEnd()
        p.writeFieldStop()
        p.writeStructEnd()
        p.writeFieldEnd()
        p.writeFieldStop()
        p.writeStructEnd()
        return TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(buf.getvalue()))

    old = write([(1, 10, 7), (2, 11, "db"), (3, 11, "t"), (4, 15, ["p=1"]), (5, 8, 1)])
    args, gen = layouts.read_add_dynamic_partitions(old, S.add_dynamic_partitions_args)
    assert gen is None
    assert args.rqst == T.AddDynamicPartitions(7, "db", "t", ["p=1"], 1)
    new = write([(1, 10, 7), (2, 10, 3), (3, 11, "db"), (4, 11, "t"), (5, 15, ["p=1"])])
    args, gen = layouts.read_add_dynamic_partitions(new, S.add_dynamic_partitions_args)
    assert gen == "3.1.3"
    assert args.rqst == T.AddDynamicPartitions(7, "db", "t", ["p=1"])  # operationType: default
