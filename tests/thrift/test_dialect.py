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
