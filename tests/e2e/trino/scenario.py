"""Trino SQL that goes to the stock HMS and to us, statement by statement, in the same test.

Each :class:`Step` is one statement with ``{catalog}``, ``{schema}`` and ``{external}``
filled in for the catalog it runs in; its outcome is the rows (in Trino's order, or sorted when
the statement does not fix one) or the error Trino reports (its error name and message). The
two catalogs' outcomes must be equal, and the steps with ``expect`` must also give that (both
servers agreeing on an empty result would not be a pass).
"""
from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Step:
    sql: str
    unordered: bool = False          # rows in no defined order: compared sorted
    error: str | None = None         # the Trino error name this statement must end with
    expect: Any = None               # rows (after normalisation), or a predicate on them
    user: str = "hms"                # the Trino user (sql-standard security: whose grants)


ORDERS = "tpch.tiny.orders"

STEPS: list[Step] = [
    # schemas
    Step("CREATE SCHEMA {schema}"),
    Step("CREATE SCHEMA {schema}", error="SCHEMA_ALREADY_EXISTS"),
    Step("SHOW SCHEMAS LIKE '{schema}'", expect=[["<schema>"]]),
    # a partitioned Parquet table, filled by INSERT ... SELECT (5 partitions)
    Step("CREATE TABLE orders (orderkey bigint, custkey bigint, totalprice double, "
         "orderdate date, clerk varchar, ds varchar) "
         "WITH (format = 'PARQUET', partitioned_by = ARRAY['ds'])"),
    Step("CREATE TABLE orders (x int)", error="TABLE_ALREADY_EXISTS"),
    Step(f"INSERT INTO orders SELECT orderkey, custkey, totalprice, orderdate, clerk, "
         f"orderpriority FROM {ORDERS}", expect=[[15000]]),
    Step("SELECT count(*), sum(orderkey) FROM orders", expect=[[15000, 449872500]]),
    Step("SELECT ds, count(*) FROM orders GROUP BY ds ORDER BY ds",
         expect=lambda rows: len(rows) == 5 and sum(r[1] for r in rows) == 15000),
    Step("SELECT count(*) FROM orders WHERE ds = '1-URGENT'",
         expect=lambda rows: 2000 < rows[0][0] < 4000),
    Step("SELECT ds FROM \"orders$partitions\" ORDER BY ds",
         expect=[["1-URGENT"], ["2-HIGH"], ["3-MEDIUM"], ["4-NOT SPECIFIED"], ["5-LOW"]]),
    Step("SELECT count(*) FROM orders WHERE ds IN ('2-HIGH', '5-LOW') AND totalprice > 100000"),
    # an unpartitioned ORC table by CTAS, and an unpartitioned Parquet one
    Step("CREATE TABLE customers WITH (format = 'ORC') AS "
         "SELECT custkey, name, nationkey, acctbal FROM tpch.tiny.customer", expect=[[1500]]),
    Step("CREATE TABLE nations WITH (format = 'PARQUET') AS SELECT * FROM tpch.tiny.nation",
         expect=[[25]]),
    # a partitioned ORC table, two partition columns
    Step("CREATE TABLE items WITH (format = 'ORC', partitioned_by = ARRAY['flag', 'status']) AS "
         "SELECT orderkey, partkey, quantity, returnflag AS flag, linestatus AS status "
         "FROM tpch.tiny.lineitem WHERE orderkey < 1000", expect=lambda rows: rows[0][0] > 900),
    Step("SELECT flag, status FROM \"items$partitions\" ORDER BY flag, status",
         expect=[["A", "F"], ["N", "F"], ["N", "O"], ["R", "F"]]),
    Step("SELECT count(*) FROM items WHERE flag = 'N' AND status = 'O'"),
    Step("SELECT n.name, count(*) FROM customers c JOIN nations n ON c.nationkey = n.nationkey "
         "GROUP BY n.name ORDER BY 2 DESC, 1 LIMIT 3"),
    # listing and describing
    Step("SHOW TABLES", unordered=True,
         expect=[["customers"], ["items"], ["nations"], ["orders"]]),
    Step("SHOW TABLES LIKE 'o%'", expect=[["orders"]]),
    Step("DESCRIBE orders"),
    Step("SHOW COLUMNS FROM customers"),
    Step("SHOW CREATE TABLE orders"),
    Step("SELECT table_name, column_name, data_type FROM information_schema.columns "
         "WHERE table_schema = '{schema}' ORDER BY table_name, ordinal_position"),
    Step("SELECT * FROM missing_table", error="TABLE_NOT_FOUND"),
    # ALTER: columns, names, comments, properties
    Step("ALTER TABLE orders ADD COLUMN note varchar"),
    Step("SELECT count(note) FROM orders", expect=[[0]]),
    Step("ALTER TABLE orders RENAME COLUMN note TO remark"),
    Step("ALTER TABLE orders RENAME COLUMN ds TO day", error="NOT_SUPPORTED"),
    Step("ALTER TABLE orders ADD COLUMN clerk varchar", error="COLUMN_ALREADY_EXISTS"),
    Step("ALTER TABLE customers DROP COLUMN acctbal"),
    Step("DESCRIBE customers"),
    Step("ALTER TABLE customers RENAME TO clients"),
    Step("SELECT count(*) FROM clients", expect=[[1500]]),
    Step("SELECT count(*) FROM customers", error="TABLE_NOT_FOUND"),
    Step("ALTER TABLE clients RENAME TO nations", error="TABLE_ALREADY_EXISTS"),
    Step("COMMENT ON TABLE clients IS 'the customers of tpch tiny'"),
    Step("COMMENT ON COLUMN clients.name IS 'full name'"),
    Step("ALTER TABLE nations SET PROPERTIES auto_purge = true", error="NOT_SUPPORTED"),
    Step("SHOW CREATE TABLE clients"),
    Step("SELECT comment FROM system.metadata.table_comments "
         "WHERE catalog_name = '{catalog}' AND schema_name = '{schema}' AND table_name = 'clients'",
         expect=[["the customers of tpch tiny"]]),
    Step("ALTER SCHEMA {schema} RENAME TO {schema}_renamed", error="NOT_SUPPORTED"),
    # views
    Step("CREATE VIEW big_orders AS SELECT orderkey, totalprice, ds FROM orders "
         "WHERE totalprice > 300000"),
    Step("SELECT count(*) FROM big_orders", expect=lambda rows: 0 < rows[0][0] < 15000),
    Step("SHOW CREATE VIEW big_orders"),
    Step("CREATE OR REPLACE VIEW big_orders AS SELECT orderkey, ds FROM orders "
         "WHERE totalprice > 400000"),
    Step("DESCRIBE big_orders"),
    Step("SELECT table_name, table_type FROM information_schema.tables "
         "WHERE table_schema = '{schema}' ORDER BY table_name"),
    Step("CREATE VIEW big_orders AS SELECT 1 AS x", error="TABLE_ALREADY_EXISTS"),
    # statistics
    Step("ANALYZE orders", expect=[[15000]]),
    Step("SHOW STATS FOR orders"),
    Step("ANALYZE clients", expect=[[1500]]),
    Step("SHOW STATS FOR clients"),
    Step("SHOW STATS FOR (SELECT * FROM orders WHERE ds = '1-URGENT')"),
    Step("CALL system.drop_stats('{schema}', 'orders', ARRAY[ARRAY['5-LOW']])"),
    Step("SHOW STATS FOR (SELECT * FROM orders WHERE ds = '5-LOW')"),
    Step("ANALYZE orders WITH (partitions = ARRAY[ARRAY['5-LOW']])",
         expect=lambda rows: 2000 < rows[0][0] < 4000),
    Step("SHOW STATS FOR orders"),
    # writing into existing partitions, new ones, deleting partitions
    Step("INSERT INTO orders (orderkey, custkey, totalprice, orderdate, clerk, ds) "
         "VALUES (1000001, 1, 1.5, DATE '2024-01-01', 'Clerk#1', '6-NEW')", expect=[[1]]),
    Step("SET SESSION {catalog}.insert_existing_partitions_behavior = 'OVERWRITE'"),
    Step("INSERT INTO orders (orderkey, custkey, totalprice, orderdate, clerk, ds) "
         "VALUES (1000002, 2, 2.5, DATE '2024-01-02', 'Clerk#2', '6-NEW')", expect=[[1]]),
    Step("SELECT orderkey FROM orders WHERE ds = '6-NEW'", expect=[[1000002]]),
    Step("RESET SESSION {catalog}.insert_existing_partitions_behavior"),
    Step("CALL system.create_empty_partition('{schema}', 'orders', ARRAY['ds'], ARRAY['7-EMPTY'])"),
    Step("SELECT ds FROM \"orders$partitions\" WHERE ds >= '6' ORDER BY ds",
         expect=[["6-NEW"], ["7-EMPTY"]]),
    Step("DELETE FROM orders WHERE ds = '5-LOW'"),
    Step("SELECT count(*) FROM \"orders$partitions\"", expect=[[6]]),
    Step("DELETE FROM orders WHERE orderkey = 1", error="NOT_SUPPORTED"),
    Step("UPDATE orders SET clerk = 'x' WHERE ds = '1-URGENT'", error="NOT_SUPPORTED"),
    Step("TRUNCATE TABLE nations", error="NOT_SUPPORTED"),
    # OPTIMIZE rewrites a table's files (non-transactional tables: a session property)
    Step("SET SESSION {catalog}.non_transactional_optimize_enabled = true"),
    Step("INSERT INTO nations SELECT * FROM tpch.tiny.nation WHERE nationkey < 5", expect=[[5]]),
    Step("ALTER TABLE nations EXECUTE optimize(file_size_threshold => '10MB')"),
    Step("SELECT count(*), count(DISTINCT nationkey) FROM nations", expect=[[30, 25]]),
    # an external table over a directory of our choosing
    Step("CREATE TABLE ext (id bigint, tag varchar) "
         "WITH (format = 'TEXTFILE', external_location = '{external}')"),
    Step("INSERT INTO ext VALUES (1, 'a'), (2, 'b')", expect=[[2]]),
    Step("SELECT * FROM ext ORDER BY id", expect=[[1, "a"], [2, "b"]]),
    Step("SHOW CREATE TABLE ext"),
    Step("DROP TABLE ext"),
    # transactional (ACID) tables: Trino writes them through Hive 3's write ids
    Step("CREATE TABLE acid (x int) WITH (format = 'ORC', transactional = true)",
         error="HIVE_METASTORE_ERROR"),  # HMS 2.3: ACID tables must be bucketed
    Step("CREATE TABLE acid (x int) WITH (format = 'ORC', transactional = true, "
         "bucketed_by = ARRAY['x'], bucket_count = 2)"),
    # Trino writes and reads them in Hive 3's transactions, which a 2.3 metastore lacks
    Step("INSERT INTO acid VALUES 1", error="HIVE_METASTORE_ERROR"),  # allocate_table_write_ids
    Step("SELECT count(*) FROM acid", error="HIVE_METASTORE_ERROR"),  # needs HMS >= 3.0
    Step("DROP TABLE acid"),
    # errors that come from the metastore or the connector
    Step("INSERT INTO orders (orderkey) VALUES ('x')", error="TYPE_MISMATCH"),
    Step("DROP SCHEMA {schema}", error="SCHEMA_NOT_EMPTY"),
    Step("DROP TABLE missing_table", error="TABLE_NOT_FOUND"),
    Step("CREATE TABLE bad (x int) WITH (partitioned_by = ARRAY['y'])", error="INVALID_TABLE_PROPERTY"),
    # dropping everything
    Step("DROP VIEW big_orders"),
    Step("DROP TABLE orders"),
    Step("DROP TABLE clients"),
    Step("DROP TABLE items"),
    Step("DROP TABLE nations"),
    Step("SHOW TABLES", expect=[]),
    Step("DROP SCHEMA {schema}"),
    Step("SHOW SCHEMAS LIKE '{schema}'", expect=[]),
]


# Trino's sql-standard security: roles and grants kept in the metastore. alice holds the admin
# role (granted through Thrift before the scenario), bob and carol none.
SECURITY_STEPS: list[Step] = [
    Step("CREATE SCHEMA {schema}", user="alice", error="PERMISSION_DENIED"),  # admin not set yet
    Step("SET ROLE admin IN {catalog}", user="alice"),
    Step("CREATE SCHEMA {schema}", user="alice"),
    Step("CREATE ROLE analysts IN {catalog}", user="alice"),
    Step("CREATE ROLE analysts IN {catalog}", user="alice", error="ROLE_ALREADY_EXISTS"),
    Step("CREATE ROLE analysts2 IN {catalog}", user="bob", error="PERMISSION_DENIED"),
    Step("SHOW ROLES FROM {catalog}", user="alice", unordered=True,
         expect=[["admin"], ["analysts"], ["public"]]),
    Step("GRANT analysts TO USER bob IN {catalog}", user="alice"),
    Step("SHOW ROLE GRANTS FROM {catalog}", user="bob", unordered=True, expect=[["analysts"], ["public"]]),
    Step("SHOW CURRENT ROLES FROM {catalog}", user="bob", unordered=True),
    Step("CREATE TABLE t (x int)", user="alice"),
    Step("INSERT INTO t VALUES 1, 2, 3", user="alice", expect=[[3]]),
    Step("GRANT SELECT ON t TO ROLE analysts", user="alice"),
    Step("GRANT INSERT ON t TO USER carol", user="alice"),
    Step("SHOW GRANTS ON t", user="alice", unordered=True),
    Step("SELECT count(*) FROM t", user="bob", expect=[[3]]),
    Step("SELECT count(*) FROM t", user="carol", error="PERMISSION_DENIED"),
    Step("INSERT INTO t VALUES 4", user="carol", expect=[[1]]),
    Step("SHOW GRANTS ON t", user="carol", unordered=True),
    Step("REVOKE SELECT ON t FROM ROLE analysts", user="alice"),
    Step("SELECT count(*) FROM t", user="bob", error="PERMISSION_DENIED"),
    Step("GRANT SELECT ON t TO USER bob WITH GRANT OPTION", user="alice"),
    Step("GRANT SELECT ON t TO USER carol", user="bob"),
    Step("SELECT count(*) FROM t", user="carol", expect=[[4]]),
    Step("SHOW GRANTS ON t", user="alice", unordered=True),
    Step("REVOKE analysts FROM USER bob IN {catalog}", user="alice"),
    Step("SHOW ROLE GRANTS FROM {catalog}", user="bob", expect=[["public"]]),
    Step("DROP ROLE analysts IN {catalog}", user="alice"),
    Step("SHOW ROLES FROM {catalog}", user="alice", unordered=True, expect=[["admin"], ["public"]]),
    Step("ALTER TABLE t SET AUTHORIZATION USER bob", user="alice"),
    Step("DROP TABLE t", user="carol", error="PERMISSION_DENIED"),
    Step("DROP TABLE t", user="alice"),
    Step("DROP SCHEMA {schema}", user="alice"),
]


def plain(value: Any) -> Any:
    """A result value as JSON-able data (dates, decimals and timestamps as strings)."""
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time, decimal.Decimal)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items())}
    if isinstance(value, bytes):
        return value.hex()
    return value


def normalise(value: Any, replacements: dict[str, str]) -> Any:
    """Replace run-specific text (paths, the catalog's name, query ids) in every string."""
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [normalise(v, replacements) for v in value]
    return value


def run(execute: Callable[[str], list], step: Step, fill: dict[str, str],
        replacements: dict[str, str]) -> tuple:
    """One step's outcome: ("rows", rows) or ("error", name, message)."""
    from trino.exceptions import TrinoQueryError

    sql = step.sql.format(**fill)
    try:
        rows = plain(execute(sql))
    except TrinoQueryError as exc:
        message = normalise(exc.message or "", replacements)
        return ("error", exc.error_name, message)
    rows = normalise(rows, replacements)
    if step.unordered:
        rows = sorted(rows, key=repr)
    return ("rows", rows)


def check_expectation(step: Step, outcome: tuple, fill: dict[str, str]) -> str | None:
    """Why ``outcome`` is wrong for ``step`` by itself (None when right)."""
    if step.error:
        if outcome[0] != "error" or outcome[1] != step.error:
            return f"expected error {step.error}, got {outcome}"
        return None
    if outcome[0] == "error":
        return f"unexpected error {outcome[1]}: {outcome[2]}"
    if step.expect is None:
        return None
    rows = outcome[1]
    if callable(step.expect):
        return None if step.expect(rows) else f"rows {rows!r} fail the step's check"
    want = [[v.format(**fill) if isinstance(v, str) else v for v in row] for row in step.expect]
    return None if rows == want else f"expected {want!r}, got {rows!r}"
