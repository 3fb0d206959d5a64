"""Two server processes over one store: a listing cached by one is never stale after a write
through the other (the cache is keyed by the branch's content version, kept in the store)."""
from __future__ import annotations

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from hms_proxy.tools.metastores import start_proxy
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.timeout(120)


def _server(workdir, store, name, *extra):
    return start_proxy(workdir / name, *extra, store=store, warehouse=workdir / "warehouse",
                       cwd=REPO_ROOT)


def _client(proc):
    transport = TTransport.TBufferedTransport(TSocket.TSocket(proc.host, proc.port))
    transport.open()
    return transport, ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))


def test_listings_cached_by_one_server_follow_writes_through_another(tmp_path):
    store = tmp_path / "store"
    a = _server(tmp_path, store, "a")
    b = _server(tmp_path, store, "b")
    ta, ca = _client(a)
    tb, cb = _client(b)
    try:
        ca.create_database(ttypes.Database(name="shared", parameters={}))
        sd = ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "string", None)],
                                      serdeInfo=ttypes.SerDeInfo(parameters={}))
        ca.create_table(ttypes.Table(tableName="t", dbName="shared", sd=sd,
                                     partitionKeys=[ttypes.FieldSchema("ds", "string", None)],
                                     tableType="EXTERNAL_TABLE", parameters={"EXTERNAL": "TRUE"}))
        assert cb.get_all_tables("shared") == ["t"]
        for i in range(5):
            assert cb.get_partition_names("shared", "t", -1) == [f"ds={k}" for k in range(i)]
            assert len(cb.get_partitions_by_filter("shared", "t", f"ds = '{i}'", -1)) == 0
            ca.add_partition(ttypes.Partition(dbName="shared", tableName="t", values=[str(i)],
                                              sd=sd, parameters={"v": "1"}))
            assert len(cb.get_partitions_by_filter("shared", "t", f"ds = '{i}'", -1)) == 1
        part = ca.get_partition("shared", "t", ["3"])
        part.parameters["v"] = "2"
        cb.get_partitions("shared", "t", -1)  # cache the listing on b
        ca.alter_partition("shared", "t", part)
        values = {p.values[0]: p.parameters["v"] for p in cb.get_partitions("shared", "t", -1)}
        assert values["3"] == "2"
        ca.create_table(ttypes.Table(tableName="u", dbName="shared", sd=sd, partitionKeys=[],
                                     tableType="EXTERNAL_TABLE", parameters={"EXTERNAL": "TRUE"}))
        assert cb.get_all_tables("shared") == ["t", "u"]
    finally:
        ta.close()
        tb.close()
        a.stop()
        b.stop()


def test_a_disabled_cache_still_answers(tmp_path):
    a = _server(tmp_path, tmp_path / "store", "a", "--cache-size", "0")
    transport, c = _client(a)
    try:
        c.create_database(ttypes.Database(name="nocache", parameters={}))
        assert "nocache" in c.get_all_databases()
        assert c.get_all_tables("nocache") == []
    finally:
        transport.close()
        a.stop()
