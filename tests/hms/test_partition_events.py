"""Partition marks live in their table's subtree: they branch with the catalog, a drop removes
them and a rename leaves them behind (conformance: tests/hms/conformance/scenarios_events.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from hms_proxy.hms.databases import DatabaseCalls
from hms_proxy.hms.family import Env
from hms_proxy.hms.handler import connect
from hms_proxy.hms.partition_events import PartitionEventCalls
from hms_proxy.hms.tables import TableCalls
from hms_proxy.hms.warehouse import Warehouse
from kvmodel import codec
from kvmodel.entities import parse_key
from kvmodel.store import open_store
from tests.hms.conformance.builders import cols, database, table
from tests.support.client import ttypes as T

LD = T.PartitionEventType.LOAD_DONE


@pytest.fixture
def env(tmp_path):
    store = open_store(str(tmp_path / "store"))
    yield connect(Env(store=store, warehouse=Warehouse(str(tmp_path / "wh"))))
    store.close()


def test_marks_in_the_table_subtree(env):
    ctx = SimpleNamespace(ref=None)
    dbs, tbls, marks = DatabaseCalls(env), TableCalls(env), PartitionEventCalls(env)
    dbs.create_database(ctx, database("d"))
    tbls.create_table(ctx, table("d", "t", partition_keys=cols("ds string", "hr int")))
    marks.markPartitionForEvent(ctx, "D", "t", {"ds": "a/b", "hr": "1"}, LD)
    with env.store.read("main") as view:
        found = [k for k, _ in view.scan_prefix("db/d/table/t/pevent/")]
    marks.markPartitionForEvent(ctx, "d", "t", {"ds": "", "hr": " "}, LD)
    with env.store.read("main") as view:
        found = [k for k, _ in view.scan_prefix("db/d/table/t/pevent/")]
    assert found == [f"db/d/table/t/pevent/{LD}/D/t/a%2Fb%2C1", f"db/d/table/t/pevent/{LD}/d/t/%2C"]
    assert all(parse_key(k)[0] == "table_item" for k in found)
    tbls.create_table(ctx, table("d", "flat"))
    marks.markPartitionForEvent(ctx, "d", "flat", {}, LD)
    with env.store.read("main") as view:
        assert [k for k, _ in view.scan_prefix("db/d/table/flat/")] == [
            f"db/d/table/flat/pevent/{LD}/d/flat"]
    assert marks.isPartitionMarkedForEvent(ctx, "d", "flat  ", {}, LD)
    assert marks.isPartitionMarkedForEvent(ctx, "D", "t ", {"ds": "a/b", "hr": "1"}, LD)
    assert not marks.isPartitionMarkedForEvent(ctx, "d", "t", {"ds": "a/b", "hr": "1"}, LD)

    # a branch sees the marks of its base; marks made on it stay there
    env.store.commit("main", "marks")
    env.store.create_branch("dev", "main")
    dev = SimpleNamespace(ref="dev")
    marks.markPartitionForEvent(dev, "d", "t", {"ds": "x", "hr": "2"}, LD)
    assert marks.isPartitionMarkedForEvent(dev, "D", "t", {"ds": "a/b", "hr": "1"}, LD)
    assert not marks.isPartitionMarkedForEvent(ctx, "d", "t", {"ds": "x", "hr": "2"}, LD)

    # a rename leaves them behind (HMS's rows keep the old names), a drop removes them
    renamed = codec.decode(T.Table, tbls.get_table(ctx, "d", "t").data)
    renamed.tableName = "u"
    tbls.alter_table(ctx, "d", "t", renamed)
    assert not marks.isPartitionMarkedForEvent(ctx, "D", "u", {"ds": "a/b", "hr": "1"}, LD)
    tbls.drop_table(dev, "d", "t", False)
    with env.store.read("dev") as view:
        assert list(view.scan_prefix("db/d/table/t/")) == []
