"""Spark with a Hive 3.1.3 metastore client (``spark.sql.hive.metastore.version=3.1.3``,
``spark.sql.hive.metastore.jars=maven``), as teams on a Hive 3 metastore run it: every statement
of the Spark end-to-end suite (tests/e2e/spark/statements.py) against the stock HMS 3.1.3 (Maven
Central, :mod:`hms_proxy.tools.hive31_local`) and against us, compared as
test_spark_e2e.py compares them with the 2.3 client. This client names every database
``@hive#db`` and reads tables with ``get_table_req``.

Full outputs: tests/.artifacts/spark/{oracle31,proxy31}.jsonl.
"""
from __future__ import annotations

import pytest

from tests.e2e.spark.conftest import run_sides
from tests.e2e.spark.test_spark_e2e import whole_run_differences
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.spark, pytest.mark.oracle, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def runs31(tmp_path_factory):
    from hms_proxy.tools import hive31_local

    conf = hive31_local.spark_client_conf()
    stock = hive31_local.start_stock_hms31(tmp_path_factory.mktemp("stock-hms-3.1.3"))
    ours = start_proxy(tmp_path_factory.mktemp("proxy31"))
    try:
        yield run_sides({"oracle": stock, "proxy": ours}, tmp_path_factory, conf, suffix="31")
    finally:
        ours.stop()
        stock.stop()


def test_spark_with_a_hive_31_client_matches_stock_hms_31(runs31):
    differences = whole_run_differences(runs31, "stock HMS 3.1.3")
    assert not differences, (f"{len(differences)} statement(s) differ:\n"
                             + "\n".join(differences))
