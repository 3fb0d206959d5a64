"""Choosing a ref from a Thrift client: the default ref, listeners bound to refs, and qualified
database names (``shop@dev``), against real server processes over one store."""
from __future__ import annotations

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from hms_proxy.tools.metastores import free_port, start_proxy
from kvmodel.store import open_store
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.timeout(120)


def serve(workdir, store, *extra):
    return start_proxy(workdir, *extra, store=store, cwd=REPO_ROOT)


class Conn:
    def __init__(self, port):
        self.transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
        self.transport.open()
        self.client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(self.transport))

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.transport.close()


SD = ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "string", None)],
                              serdeInfo=ttypes.SerDeInfo(parameters={}))


def table(db, name):
    return ttypes.Table(tableName=name, dbName=db, sd=SD, tableType="EXTERNAL_TABLE",
                        parameters={"EXTERNAL": "TRUE"},
                        partitionKeys=[ttypes.FieldSchema("ds", "string", None)])


def part(db, tbl, value):
    return ttypes.Partition(dbName=db, tableName=tbl, values=[value], sd=SD)


@pytest.fixture
def world(tmp_path):
    """A store with shop.orders committed on main, a branch dev, a tag v1, and a server
    listening for main and, on a second port, for dev."""
    store_dir = tmp_path / "store"
    main = serve(tmp_path / "a", store_dir)
    with Conn(main.port) as c:
        c.create_database(ttypes.Database(name="shop", parameters={}))
        c.create_table(table("shop", "orders"))
        c.add_partition(part("shop", "orders", "2024-01-01"))
    store = open_store(store_dir)
    store.commit("main", "orders with one partition", author="test")
    store.create_branch("dev", "main")
    store.create_tag("v1", "main")
    store.close()
    main.stop()
    dev_port = free_port()
    proc = serve(tmp_path / "b", store_dir, "--bind", f"{dev_port}={'dev'}")
    yield proc, dev_port, store_dir
    proc.stop()


def test_a_listener_bound_to_a_branch_writes_there_only(world):
    proc, dev_port, _ = world
    with Conn(dev_port) as dev, Conn(proc.port) as main:
        dev.add_partition(part("shop", "orders", "2024-01-02"))
        assert dev.get_partition_names("shop", "orders", -1) == ["ds=2024-01-01", "ds=2024-01-02"]
        assert main.get_partition_names("shop", "orders", -1) == ["ds=2024-01-01"]


def test_qualified_names_reach_the_ref_and_come_back_qualified(world):
    proc, dev_port, _ = world
    with Conn(dev_port) as dev, Conn(proc.port) as main:
        dev.add_partition(part("shop", "orders", "2024-01-02"))
        assert main.get_partition_names("shop@dev", "orders", -1) == [
            "ds=2024-01-01", "ds=2024-01-02"]
        t = main.get_table("shop@dev", "orders")
        assert t.dbName == "shop@dev"
        assert main.get_table_req(ttypes.GetTableRequest("shop@dev", "orders")).table.dbName == "shop@dev"
        assert {p.dbName for p in main.get_partitions("shop@dev", "orders", -1)} == {"shop@dev"}
        assert main.get_database("shop@dev").name == "shop@dev"
        # A write through a qualified name lands on that branch.
        main.add_partition(part("shop@dev", "orders", "2024-01-03"))
        assert len(dev.get_partition_names("shop", "orders", -1)) == 3
        assert main.get_partition_names("shop", "orders", -1) == ["ds=2024-01-01"]
        # Objects read qualified can be written back as they are (Spark does this).
        t.parameters["touched"] = "yes"
        main.alter_table("shop@dev", "orders", t)
        assert dev.get_table("shop", "orders").parameters["touched"] == "yes"
        assert "touched" not in main.get_table("shop", "orders").parameters


def test_tags_commits_and_ancestry_are_readable_and_read_only(world):
    proc, _, store_dir = world
    store = open_store(store_dir)
    head = store.resolve("main").commit
    store.close()
    with Conn(proc.port) as main:
        for ref in ("v1", head, head[:10], "dev~0"):
            assert main.get_partition_names(f"shop@{ref}", "orders", -1) == ["ds=2024-01-01"]
        # main~1 is the store's first commit, before the table existed.
        assert main.get_all_tables("shop@main~1") == []
        with pytest.raises(ttypes.NoSuchObjectException):
            main.get_table("shop@main~1", "orders")
        with pytest.raises(ttypes.MetaException, match="read-only"):
            main.add_partition(part("shop@v1", "orders", "2024-02-01"))
        with pytest.raises(ttypes.MetaException):
            main.get_partition_names("shop@nosuchref", "orders", -1)
        with pytest.raises(ttypes.MetaException, match="two refs"):
            main.add_partitions_req(ttypes.AddPartitionsRequest(
                "shop@dev", "orders", [part("shop@v1", "orders", "x")], False, True))


def test_a_protected_branch_refuses_thrift_writes(world):
    proc, dev_port, store_dir = world
    store = open_store(store_dir)
    store.set_branch_protection("main", True)
    store.close()
    with Conn(proc.port) as main, Conn(dev_port) as dev:
        with pytest.raises(ttypes.MetaException, match="protected.*merge"):
            main.add_partition(part("shop", "orders", "2024-03-01"))
        dev.add_partition(part("shop", "orders", "2024-03-01"))  # a branch is writable


def test_autocommit_makes_each_write_a_commit_by_the_ugi_user(tmp_path):
    proc = serve(tmp_path, tmp_path / "store", "--autocommit")
    try:
        with Conn(proc.port) as c:
            c.set_ugi("alice", ["eng"])
            c.create_database(ttypes.Database(name="auto", parameters={}))
            c.create_table(table("auto", "events"))
        store = open_store(tmp_path / "store")
        log = list(store.log("main", limit=3))
        assert [e.author for e in log[:2]] == ["alice", "alice"]
        assert log[0].message == "create_table auto.events"
        assert log[1].message == "create_database auto"
        assert list(store.staged("main")) == []
        store.close()
    finally:
        proc.stop()


def test_a_truncate_refused_on_a_tag_or_a_protected_branch_deletes_no_file(world):
    """TRUNCATE TABLE deletes files before it writes the statistics: a ref it cannot write
    must be refused before any file goes."""
    import os
    from urllib.parse import urlparse

    proc, dev_port, store_dir = world
    with Conn(proc.port) as main, Conn(dev_port) as dev:
        (p,) = main.get_partitions("shop", "orders", -1)
        data = os.path.join(urlparse(p.sd.location).path, "000000_0")
        os.makedirs(os.path.dirname(data), exist_ok=True)
        with open(data, "w") as f:
            f.write("a\n")
        with pytest.raises(ttypes.MetaException, match="read-only"):
            main.truncate_table("shop@v1", "orders", None)
        with pytest.raises(ttypes.MetaException, match="read-only"):  # Hive 4's request
            main.truncate_table_req(ttypes.TruncateTableRequest("@hive#shop@v1", "orders"))
        assert os.path.exists(data)
        store = open_store(store_dir)
        store.set_branch_protection("main", True)
        store.close()
        with pytest.raises(ttypes.MetaException, match="protected.*merge"):
            main.truncate_table("shop", "orders", None)
        assert os.path.exists(data)
        dev.truncate_table("shop", "orders", ["ds=2024-01-01"])
        assert not os.path.exists(data) and os.path.isdir(os.path.dirname(data))
        (on_dev,) = dev.get_partitions("shop", "orders", -1)
        assert (on_dev.parameters["numFiles"], on_dev.parameters["COLUMN_STATS_ACCURATE"]) == \
            ("0", '{"BASIC_STATS":"true"}')
        (on_main,) = main.get_partitions("shop", "orders", -1)
        assert "COLUMN_STATS_ACCURATE" not in on_main.parameters
