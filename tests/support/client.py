"""Opening a Thrift client to a metastore.

The generated HMS bindings are imported here only, so switching from hmsclient's
copy to our own `hms_proxy.thrift.gen` is a one-line change.

hmsclient 0.1.1's IDL matches HMS 2.3.10 except one result struct: its
get_table_objects_by_name declares no exceptions, so an UnknownDBException sent by a
server is skipped and surfaces as TApplicationException(MISSING_RESULT) here.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes  # noqa: F401


class Client(ThriftHiveMetastore.Client):
    """The generated client, called as a 2.3 client is: the arguments Hive 3.x/4.x added to
    methods 2.3 already had (create_table_with_constraints' unique, not-null, default and check
    constraints; the stats deletes' engine) may be left out, and are then not sent."""

    def create_table_with_constraints(self, tbl, primaryKeys, foreignKeys, uniqueConstraints=None,
                                      notNullConstraints=None, defaultConstraints=None,
                                      checkConstraints=None):
        return super().create_table_with_constraints(
            tbl, primaryKeys, foreignKeys, uniqueConstraints, notNullConstraints,
            defaultConstraints, checkConstraints)

    def delete_table_column_statistics(self, db_name, tbl_name, col_name, engine=None):
        return super().delete_table_column_statistics(db_name, tbl_name, col_name, engine)

    def delete_partition_column_statistics(self, db_name, tbl_name, part_name, col_name,
                                           engine=None):
        return super().delete_partition_column_statistics(db_name, tbl_name, part_name,
                                                          col_name, engine)


@contextmanager
def open_protocol(host: str, port: int, timeout: float = 60.0) -> Iterator[TBinaryProtocol.TBinaryProtocol]:
    """A connected buffered binary protocol (what HMS 2.3 speaks without SASL)."""
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout * 1000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        yield TBinaryProtocol.TBinaryProtocol(transport)
    finally:
        transport.close()


@contextmanager
def connect(proc, timeout: float = 60.0) -> Iterator[Client]:
    """`with connect(proc) as client:` for any object with host and port."""
    with open_protocol(proc.host, proc.port, timeout) as protocol:
        yield Client(protocol)


def wait_served(proc, ask, *, what: str = "", timeout: float | None = None):
    """Wait until ``ask(client)`` is true on ``proc`` and return it: for a change another
    process made to a shared store (a CLI's merge on lakeFS, another server's write), which a
    server sees within its refresh bound, not at once."""
    from tests.support.wait import DEADLINE, wait_until

    def answered():
        with connect(proc) as client:
            return ask(client)
    return wait_until(answered, timeout=timeout or DEADLINE, interval=0.05,
                      what=what or "the server's answer")


def text_table(name: str, db: str, table_type: str = "EXTERNAL_TABLE",
               params: dict | None = None):
    """A small text table (id bigint, v string) partitioned by ``ds`` string, owned by ann:
    what the tests comparing us with a stock metastore create on both. An external one carries
    ``EXTERNAL=TRUE``; ``params`` are added."""
    sd = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("id", "bigint", None), ttypes.FieldSchema("v", "string", None)],
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", {}),
        bucketCols=[], sortCols=[], parameters={})
    external = {"EXTERNAL": "TRUE"} if table_type == "EXTERNAL_TABLE" else {}
    return ttypes.Table(name, db, "ann", 0, 0, 0, sd, [ttypes.FieldSchema("ds", "string", None)],
                        {**external, **(params or {})}, None, None, table_type)
