"""Trino's transactional (ACID) tables through Hive 3's transactions: created, inserted into,
read, updated and deleted from, partitioned, on a server started with
``--min-client-generation 3.1`` (Trino opens a connection per metastore call, so no connection
of its own tells that it is a Hive 3 client; docs/compatibility.md, "Write ids of ACID tables").

No stock metastore here runs these statements: the stock 2.3.10 has no write ids, and the stock
3.1.3 and 4.0.1 standalone metastores refuse every full ACID table (the ACID formats live in
hive-exec, not on their class path). So the statements' results are checked, the data's delta
directories, and that a server restarted without Redis (its write ids gone with its process)
never hands out a write id whose directory exists."""
from __future__ import annotations

import re

import pytest

from tests.support.proxy import start_proxy
from tests.support.trino import add_catalog

pytestmark = [pytest.mark.slow, pytest.mark.trino, pytest.mark.timeout(1200)]

STEPS = [
    ("CREATE SCHEMA {c}.s", []),
    ("CREATE TABLE {c}.s.acid (x int) WITH (format = 'ORC', transactional = true)", []),
    ("INSERT INTO {c}.s.acid VALUES 1, 2, 3", [[3]]),
    ("SELECT count(*), sum(x) FROM {c}.s.acid", [[3, 6]]),
    ("INSERT INTO {c}.s.acid VALUES 4", [[1]]),
    ("DELETE FROM {c}.s.acid WHERE x = 2", [[1]]),
    ("UPDATE {c}.s.acid SET x = 10 WHERE x = 3", [[1]]),
    ("SELECT x FROM {c}.s.acid ORDER BY x", [[1], [4], [10]]),
    ("CREATE TABLE {c}.s.pacid (x int, p varchar) "
     "WITH (format = 'ORC', transactional = true, partitioned_by = ARRAY['p'])", []),
    ("INSERT INTO {c}.s.pacid VALUES (1, 'a'), (2, 'b'), (3, 'b')", [[3]]),
    ("DELETE FROM {c}.s.pacid WHERE x = 1", [[1]]),
    ("SELECT p, count(*) FROM {c}.s.pacid GROUP BY p ORDER BY p", [["b", 2]]),
]


@pytest.fixture(scope="module")
def trino():
    from tests.support.trino import real_trino

    return real_trino()


def _write_ids(root) -> list[int]:
    """The write ids the ACID directories under ``root`` name."""
    found = []
    for path in root.rglob("*"):
        match = re.fullmatch(r"(?:delta|delete_delta|base)_(\d+)(?:_(\d+))?(?:_\d+)*", path.name)
        if path.is_dir() and match:
            found.append(int(match.group(1)))
    return sorted(found)


@pytest.mark.parametrize("catalog_name", [True, False], ids=["catalog-name", "no-catalog-name"])
def test_trino_acid_tables(trino, tmp_path, catalog_name):
    warehouse = tmp_path / "warehouse"
    server = start_proxy(tmp_path / "a", "--min-client-generation", "3.1",
                         store=tmp_path / "store", warehouse=warehouse)
    try:
        extra = {"hive.metastore.thrift.catalog-name": "hive"} if catalog_name else {}
        catalog = add_catalog(server.uri, prefix="acid", extra=extra)
        for sql, expected in STEPS:
            assert trino.execute(sql.format(c=catalog)) == expected, sql
        before = _write_ids(warehouse / "s.db" / "acid")
        assert before and max(before) >= 4  # two inserts, a delete and an update wrote
        # a restart without Redis: the write ids it handed out are forgotten, the deltas stay
        port = server.port
        server.stop()
        server = start_proxy(tmp_path / "b", "--min-client-generation", "3.1",
                             store=tmp_path / "store", warehouse=warehouse, port=port)
        assert trino.execute(f"INSERT INTO {catalog}.s.acid VALUES 5") == [[1]]
        after = _write_ids(warehouse / "s.db" / "acid")
        assert max(after) == max(before) + 1, (before, after)
        assert trino.execute(f"SELECT x FROM {catalog}.s.acid ORDER BY x") == \
            [[1], [4], [5], [10]]
        for sql in ("DROP TABLE {c}.s.pacid", "DROP TABLE {c}.s.acid", "DROP SCHEMA {c}.s"):
            trino.execute(sql.format(c=catalog))
        trino.drop_catalog(catalog)
    finally:
        server.stop()


def test_without_the_setting_trino_is_a_2_3_client(trino, tmp_path):
    """By default Trino's calls are served as the stock HMS 2.3 serves them: its INSERT into an
    ACID table fails as there (``allocate_table_write_ids`` is an unknown method)."""
    server = start_proxy(tmp_path / "a")
    try:
        catalog = add_catalog(server.uri, prefix="acid23",
                              extra={"hive.metastore.thrift.client.max-retry-time": "1s"})
        trino.execute(f"CREATE SCHEMA {catalog}.s")
        trino.execute(f"CREATE TABLE {catalog}.s.acid (x int) WITH (format = 'ORC', "
                      "transactional = true, bucketed_by = ARRAY['x'], bucket_count = 2)")
        with pytest.raises(Exception, match="allocate_table_write_ids"):
            trino.execute(f"INSERT INTO {catalog}.s.acid VALUES 1")
        trino.drop_catalog(catalog)
    finally:
        server.stop()
