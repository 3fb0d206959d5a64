"""An "upstream" metastore for import tests: a stock HMS 2.3.10 filled by Spark SQL.

:func:`start_filled_hms` starts a stock HMS (``hms_proxy.tools.metastores.start_stock_hms``, Derby,
no transaction tables) in a work directory and fills it by running :data:`STATEMENTS` with
Spark SQL (tests/e2e/spark/runner.py in a subprocess, ``spark.sql.warehouse.dir`` = the HMS's
warehouse), then sets HMS column statistics with Thrift calls (see below). It returns an
:class:`Upstream` (the running process, plus the names below). :func:`fill` does the same on
any metastore URI.

What the upstream then holds (names are module constants, so tests can refer to them):

Database ``up_sales`` (:data:`DB`), comment ``'sales data for import tests'``, properties
``{'team': 'data eng', 'purpose': 'import'}``:

- ``events`` (:data:`PARTITIONED`): Hive-format (``STORED AS PARQUET``) table with columns
  ``id INT, name STRING, amount DOUBLE``, partitioned by ``region STRING, ds STRING``; table
  property ``'quality'='gold'``. Four partitions (:data:`PARTITION_VALUES`), three filled by
  ``INSERT`` and one by ``ALTER TABLE ADD PARTITION``, whose values hold a space, ``=`` and
  ``/`` (Hive escapes ``=`` and ``/`` in partition names: ``region=a%3Db/ds=2024%2F01%2F02``,
  but not spaces: ``region=eu west/ds=2024-01-01``):
  ``('eu west', '2024-01-01')``, ``('eu west', '2024-01-02')``, ``('a=b', '2024/01/02')``,
  ``('us', '2024-01-03')`` (the empty one).
- ``customers`` (:data:`DATASOURCE`): a Spark datasource table (``USING parquet``), columns
  ``id BIGINT, name STRING, city STRING``, two rows (table properties
  ``spark.sql.sources.provider=parquet`` and ``spark.sql.sources.schema``).
- ``plain`` (:data:`UNPARTITIONED`): Hive text table ``k STRING, v INT``, three rows.
- ``eu_events`` (:data:`VIEW`): ``VIRTUAL_VIEW`` selecting from ``events``.
- function ``up_sales.my_upper`` (:data:`FUNCTION`) AS ``'org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper'``.
- Spark statistics: ``ANALYZE TABLE ... COMPUTE STATISTICS FOR COLUMNS`` on ``events``
  (for all partitions) and on ``plain``; Spark 4 keeps these in *table properties*
  (``spark.sql.statistics.*``), not in HMS's column statistics, and
  ``ANALYZE TABLE events PARTITION (region, ds) COMPUTE STATISTICS`` sets partition
  parameters (``numRows``, ``totalSize``...).
- HMS column statistics (Thrift ``update_*_column_statistics``, as Hive's own ANALYZE would
  store them): table level on ``plain`` (``k`` string stats, ``v`` long stats) and on
  ``events`` (``id``, ``amount``); partition level on ``events`` for the three filled
  partitions (``id`` long, ``name`` string, ``amount`` double).

Database ``up_other`` (:data:`OTHER_DB`), no properties:

- ``metrics``: Hive text table ``name STRING, value DOUBLE`` partitioned by ``day STRING``,
  partitions ``day='2024-01-01'`` and ``day='2024-01-02'`` (via ``ADD PARTITION``).
- ``notes``: unpartitioned Hive text table ``txt STRING``, no rows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hms_proxy.tools.metastores import MetastoreProcess, start_stock_hms

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = REPO_ROOT / "tests" / "e2e" / "spark" / "runner.py"
SPARK_TIMEOUT = 600.0

DB = "up_sales"
OTHER_DB = "up_other"
PARTITIONED = "events"
DATASOURCE = "customers"
UNPARTITIONED = "plain"
VIEW = "eu_events"
FUNCTION = "my_upper"
FUNCTION_CLASS = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper"
PARTITION_VALUES = [["eu west", "2024-01-01"], ["eu west", "2024-01-02"],
                    ["a=b", "2024/01/02"], ["us", "2024-01-03"]]
FILLED_PARTITIONS = PARTITION_VALUES[:3]
OTHER_TABLES = ["metrics", "notes"]

STATEMENTS = [
    f"CREATE DATABASE {DB} COMMENT 'sales data for import tests' "
    "WITH DBPROPERTIES ('team'='data eng', 'purpose'='import')",
    f"CREATE TABLE {DB}.{PARTITIONED} (id INT, name STRING, amount DOUBLE) "
    "PARTITIONED BY (region STRING, ds STRING) STORED AS PARQUET TBLPROPERTIES ('quality'='gold')",
    f"INSERT INTO {DB}.{PARTITIONED} PARTITION (region='eu west', ds='2024-01-01') "
    "VALUES (1, 'anna', 1.5), (2, 'bob', 2.5)",
    f"INSERT INTO {DB}.{PARTITIONED} PARTITION (region='eu west', ds='2024-01-02') "
    "VALUES (3, 'carl', 3.5)",
    f"INSERT INTO {DB}.{PARTITIONED} PARTITION (region='a=b', ds='2024/01/02') "
    "VALUES (4, NULL, 4.5), (5, 'eve', NULL)",
    f"ALTER TABLE {DB}.{PARTITIONED} ADD PARTITION (region='us', ds='2024-01-03')",
    f"CREATE TABLE {DB}.{DATASOURCE} (id BIGINT, name STRING, city STRING) USING parquet",
    f"INSERT INTO {DB}.{DATASOURCE} VALUES (1, 'anna', 'Oslo'), (2, 'bob', 'Rome')",
    f"CREATE TABLE {DB}.{UNPARTITIONED} (k STRING, v INT) STORED AS TEXTFILE",
    f"INSERT INTO {DB}.{UNPARTITIONED} VALUES ('a', 1), ('b', 2), ('c', NULL)",
    f"CREATE VIEW {DB}.{VIEW} AS SELECT id, name, ds FROM {DB}.{PARTITIONED} "
    "WHERE region = 'eu west'",
    f"CREATE FUNCTION {DB}.{FUNCTION} AS '{FUNCTION_CLASS}'",
    f"ANALYZE TABLE {DB}.{PARTITIONED} PARTITION (region, ds) COMPUTE STATISTICS",
    f"ANALYZE TABLE {DB}.{PARTITIONED} COMPUTE STATISTICS FOR COLUMNS id, amount",
    f"ANALYZE TABLE {DB}.{UNPARTITIONED} COMPUTE STATISTICS FOR COLUMNS k, v",
    f"CREATE DATABASE {OTHER_DB}",
    f"CREATE TABLE {OTHER_DB}.metrics (name STRING, value DOUBLE) PARTITIONED BY (day STRING) "
    "STORED AS TEXTFILE",
    f"ALTER TABLE {OTHER_DB}.metrics ADD PARTITION (day='2024-01-01') PARTITION (day='2024-01-02')",
    f"CREATE TABLE {OTHER_DB}.notes (txt STRING) STORED AS TEXTFILE",
]


@dataclass
class Upstream:
    """A filled metastore: ``hms`` (a running stock HMS, or None when :func:`fill` was given
    a URI only), its URI, and the Spark runner's per-statement results."""

    uri: str
    hms: MetastoreProcess | None = None
    results: list[dict] = field(default_factory=list)
    databases: tuple[str, ...] = (DB, OTHER_DB)

    @property
    def host(self) -> str:
        return self.uri.split("://", 1)[1].rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.uri.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.hms is not None:
            self.hms.stop()


def run_spark(uri: str, warehouse: Path | str, workdir: Path | str, statements: list) -> list[dict]:
    """Run ``statements`` (the runner's item format) with Spark SQL against ``uri``; returns
    the runner's results and raises if the runner fails or any statement errors."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    stmts, output, log = workdir / "statements.json", workdir / "results.jsonl", workdir / "runner.log"
    stmts.write_text(json.dumps(statements))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
    with open(log, "wb") as log_file:
        proc = subprocess.run(
            [sys.executable, str(RUNNER), "--uri", uri, "--warehouse", str(warehouse),
             "--statements", str(stmts), "--output", str(output)],
            cwd=workdir, env=env, stdout=log_file, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, timeout=SPARK_TIMEOUT)
    results = [json.loads(line) for line in output.read_text().splitlines() if line.strip()] \
        if output.exists() else []
    failed = [r for r in results if "error" in r["result"]]
    if proc.returncode != 0 or len(results) != len(statements) or failed:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise RuntimeError(f"Spark filling {uri} failed (exit {proc.returncode}, "
                           f"{len(results)}/{len(statements)} statements; errors: {failed}); "
                           f"runner log tail:\n{tail}")
    return results


def set_column_statistics(host: str, port: int) -> None:
    """HMS column statistics on ``events`` and ``plain``, table and partition level."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
    from hms_proxy.thrift.gen.hive_metastore import ttypes as t

    def long_stats(low, high, nulls, ndv):
        return t.ColumnStatisticsData(longStats=t.LongColumnStatsData(
            lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv))

    def double_stats(low, high, nulls, ndv):
        return t.ColumnStatisticsData(doubleStats=t.DoubleColumnStatsData(
            lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv))

    def string_stats(maxlen, avglen, nulls, ndv):
        return t.ColumnStatisticsData(stringStats=t.StringColumnStatsData(
            maxColLen=maxlen, avgColLen=avglen, numNulls=nulls, numDVs=ndv))

    def stats(table, objs, part_name=None):
        desc = t.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=DB, tableName=table,
                                      partName=part_name, lastAnalyzed=1_700_000_000)
        return t.ColumnStatistics(statsDesc=desc, statsObj=[
            t.ColumnStatisticsObj(colName=name, colType=typ, statsData=data)
            for name, typ, data in objs])

    sock = TSocket.TSocket(host, port)
    sock.setTimeout(60_000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
        client.update_table_column_statistics(stats(UNPARTITIONED, [
            ("k", "string", string_stats(1, 1.0, 0, 3)),
            ("v", "int", long_stats(1, 2, 1, 2))]))
        client.update_table_column_statistics(stats(PARTITIONED, [
            ("id", "int", long_stats(1, 5, 0, 5)),
            ("amount", "double", double_stats(1.5, 4.5, 1, 4))]))
        names = client.get_partition_names(DB, PARTITIONED, -1)
        by_values = {tuple(client.get_partition_by_name(DB, PARTITIONED, n).values): n for n in names}
        for i, values in enumerate(FILLED_PARTITIONS):
            client.update_partition_column_statistics(stats(PARTITIONED, [
                ("id", "int", long_stats(i * 2 + 1, i * 2 + 2, 0, 2)),
                ("name", "string", string_stats(4, 3.5, i % 2, 2)),
                ("amount", "double", double_stats(1.5 + i, 2.5 + i, 0, 2))],
                part_name=by_values[tuple(values)]))
    finally:
        transport.close()


def fill(uri: str, warehouse: Path | str, workdir: Path | str) -> list[dict]:
    """Put what the module docstring describes into the metastore at ``uri`` (which must not
    hold it yet); ``warehouse`` is Spark's warehouse dir (use the metastore's)."""
    results = run_spark(uri, warehouse, Path(workdir) / "spark", STATEMENTS)
    host, port = uri.split("://", 1)[1].rsplit(":", 1)
    set_column_statistics(host, int(port))
    return results


def start_filled_hms(workdir: Path | str) -> Upstream:
    """Start a stock HMS in ``workdir`` and fill it; the caller stops it (``.stop()``)."""
    workdir = Path(workdir).resolve()
    hms = start_stock_hms(workdir / "hms")
    try:
        results = fill(hms.uri, hms.warehouse, workdir)
    except BaseException:
        hms.stop()
        raise
    return Upstream(uri=hms.uri, hms=hms, results=results)
