"""Spark with a Hive 4.0.1 metastore client (``spark.sql.hive.metastore.version=4.0.1``,
``spark.sql.hive.metastore.jars=maven``): every statement of the Spark end-to-end suite
(tests/e2e/spark/statements.py) against the stock HMS 4.0.1 (Maven Central,
:mod:`hms_proxy.tools.hive4_local`) and against us, compared as test_spark_e2e.py compares them
with the 2.3 client. This client calls the request forms of Hive 4 (``get_database_req``,
``create_table_req``, ``get_partitions_by_names_req``...).

Both metastores are Kerberized against a KDC of the test's own with
``hadoop.rpc.protection=privacy`` (SASL GSSAPI, every frame encrypted: ``auth-conf``), and Spark
logs in from alice's ticket cache, as issue 42 asks for each of Spark's three Hive clients (the
built-in 2.3 one: tests/security/test_kerberos.py).

Full outputs: tests/.artifacts/spark/{oracle4,proxy4}.jsonl.
"""
from __future__ import annotations

import pytest

from hms_proxy.tools import kdc as kdc_tool
from tests.e2e.spark.conftest import kerberized_sides
from tests.e2e.spark.test_spark_e2e import whole_run_differences
from tests.support.kerberos import (client_modules_missing, start_standalone_kerberized,
                                    started_realm)

pytestmark = [pytest.mark.spark, pytest.mark.oracle, pytest.mark.slow, pytest.mark.timeout(1800),
              pytest.mark.skipif(bool(kdc_tool.missing() or client_modules_missing()),
                                 reason=kdc_tool.missing() or client_modules_missing() or "")]


@pytest.fixture(scope="module")
def runs4(tmp_path_factory):
    from hms_proxy.tools import hive4_local

    with started_realm(tmp_path_factory.mktemp("krb4")) as realm:
        stock = start_standalone_kerberized(realm, tmp_path_factory.mktemp("stock-hms-4.0.1"),
                                            hive4_local.start_stock_hms4, "privacy")
        try:
            yield kerberized_sides(realm, stock, tmp_path_factory, "privacy", "4",
                                   hive4_local.spark_client_conf())
        finally:
            stock.stop()


def test_spark_with_a_hive_4_client_matches_stock_hms_4(runs4):
    """Every statement gives the stock 4.0.1's result: renames, drops, quick statistics and
    LIKE filters included, where the stock 4.x differs from 2.3 (docs/compatibility.md, "Each
    client gets its own generation's behaviour")."""
    details = whole_run_differences(runs4, "stock HMS 4.0.1")
    assert not details, "\n".join(details)
