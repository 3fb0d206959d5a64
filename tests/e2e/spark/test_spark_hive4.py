"""Spark with a Hive 4.0.1 metastore client (``spark.sql.hive.metastore.version=4.0.1``,
``spark.sql.hive.metastore.jars=maven``): every statement of the Spark end-to-end suite
(tests/e2e/spark/statements.py) against the stock HMS 4.0.1 (Maven Central,
:mod:`hms_proxy.tools.hive4_local`) and against us, compared as test_spark_e2e.py compares them
with the 2.3 client. This client calls the request forms of Hive 4 (``get_database_req``,
``create_table_req``, ``get_partitions_by_names_req``...).

Full outputs: tests/.artifacts/spark/{oracle4,proxy4}.jsonl.
"""
from __future__ import annotations

import pytest

from tests.e2e.spark.conftest import run_sides
from tests.e2e.spark.test_spark_e2e import whole_run_differences
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.spark, pytest.mark.oracle, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def runs4(tmp_path_factory):
    from hms_proxy.tools import hive4_local

    conf = hive4_local.spark_client_conf()
    stock = hive4_local.start_stock_hms4(tmp_path_factory.mktemp("stock-hms-4.0.1"))
    ours = start_proxy(tmp_path_factory.mktemp("proxy4"))
    try:
        yield run_sides({"oracle": stock, "proxy": ours}, tmp_path_factory, conf, suffix="4")
    finally:
        ours.stop()
        stock.stop()


def test_spark_with_a_hive_4_client_matches_stock_hms_4(runs4):
    """Every statement gives the stock 4.0.1's result: renames, drops, quick statistics and
    LIKE filters included, where the stock 4.x differs from 2.3 (docs/compatibility.md, "Each
    client gets its own generation's behaviour")."""
    details = whole_run_differences(runs4, "stock HMS 4.0.1")
    assert not details, "\n".join(details)
