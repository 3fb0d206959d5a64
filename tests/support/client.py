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

Client = ThriftHiveMetastore.Client


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
