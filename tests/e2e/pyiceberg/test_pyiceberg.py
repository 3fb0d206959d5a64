"""pyiceberg's HiveCatalog against the stock HMS 2.3.10 (the oracle) and against our server, with
the same assertions: a table's life cycle (namespace, create, two appends, load, list, rename,
drop) and 8 racing writers on one table, every row arriving exactly once."""
from __future__ import annotations

import uuid

import pyarrow as pa
import pyiceberg.catalog.hive  # noqa: F401
import pytest

from hms_proxy.tools.bench.iceberg_race import (  # noqa: E402
    USER_LOCK_PROPERTIES,
    USER_TABLE_PROPERTIES,
    catalog,
    run_race,
)

pytestmark = [pytest.mark.oracle, pytest.mark.timeout(300)]

SIDES = ["oracle", "proxy"]


@pytest.fixture(params=SIDES)
def server(request):
    return request.getfixturevalue(request.param)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])})


def test_table_life_cycle(server, tmp_path):
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    cat = catalog(server.uri, warehouse)
    ns = unique("pyice")
    cat.create_namespace(ns, {"location": f"file://{warehouse}/{ns}.db"})
    assert (ns,) in cat.list_namespaces()

    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False))
    table = cat.create_table(f"{ns}.events", schema=schema)
    table.append(rows(1, 2))
    table.append(rows(3))

    loaded = cat.load_table(f"{ns}.events")
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert len(loaded.metadata.snapshots) == 2
    assert loaded.metadata_location == table.metadata_location
    assert cat.list_tables(ns) == [(ns, "events")]

    renamed = cat.rename_table(f"{ns}.events", f"{ns}.events_v2")
    assert cat.list_tables(ns) == [(ns, "events_v2")]
    assert not cat.table_exists(f"{ns}.events")
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{ns}.events")
    assert sorted(renamed.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert len(renamed.metadata.snapshots) == 2
    assert renamed.metadata_location == loaded.metadata_location

    cat.drop_table(f"{ns}.events_v2")
    assert cat.list_tables(ns) == []
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{ns}.events_v2")
    cat.drop_namespace(ns)
    assert (ns,) not in cat.list_namespaces()


def test_racing_writers_every_row_exactly_once(server, tmp_path):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    writers, batches = 8, 5
    result = run_race(server.uri, warehouse, unique("race"), writers=writers, batches=batches,
                      max_retries=50)
    assert result.errors == []
    assert result.missing == []
    assert result.duplicates == 0
    assert result.counts == {f"{w},{b}": 10 for w in range(writers) for b in range(batches)}
    assert result.snapshots == writers * batches


def test_racing_writers_with_the_clients_defaults(server, tmp_path):
    """What users run: pyiceberg's own commit retries, lock checks every 0.5 s at most."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    result = run_race(server.uri, warehouse, unique("users"), writers=8, batches=1, rows=1,
                      lock_properties=USER_LOCK_PROPERTIES,
                      table_properties=USER_TABLE_PROPERTIES)
    assert result.errors == [] and result.missing == [] and result.duplicates == 0
    assert result.snapshots == 8
    assert sum(w["altered"] for w in result.per_writer.values()) == 8


def test_a_contended_lock_passes_to_the_next_writer_on_release(tmp_path):
    """Our server holds a WAITING lock answer back (serve --lock-wait, 1 s by default; 120 s
    here, so that the hold cannot run out before the test releases the lock however slow the
    machine) and grants the lock the moment its holder unlocks: the next writer is not left
    sleeping through its poll interval. The stock HMS answers WAITING at once."""
    import threading

    from hive_metastore.ttypes import (
        LockComponent,
        LockLevel,
        LockRequest,
        LockState,
        LockType,
        ShowLocksRequest,
        UnlockRequest,
    )

    from tests.support.proxy import start_proxy
    from tests.support.wait import wait_until

    def request():
        return LockRequest(component=[LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE,
                                                    "default", unique("t"), None)],
                           user="u", hostname="h")

    server = start_proxy(tmp_path, "--lock-wait", "120")
    try:
        one, two, three = (catalog(server.uri, "/tmp") for _ in range(3))
        req = request()
        with one._client as c1, two._client as c2, three._client as c3:
            held = c1.lock(req)
            assert held.state == LockState.ACQUIRED
            out = {}

            def second():
                try:
                    out["r"] = c2.lock(req)
                except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                    out["error"] = exc
            t = threading.Thread(target=second)
            t.start()
            wait_until(lambda: len(c3.show_locks(ShowLocksRequest()).locks) == 2,
                       what="the second lock is queued behind the first")
            assert t.is_alive()  # held back, not answered WAITING
            c1.unlock(UnlockRequest(lockid=held.lockid))
            t.join(60)
            assert not t.is_alive() and "error" not in out, out
            assert out["r"].state == LockState.ACQUIRED  # granted on release, not at 120 s
            c2.unlock(UnlockRequest(lockid=out["r"].lockid))
    finally:
        server.stop()
