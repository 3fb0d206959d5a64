"""Spark with a Hive 3.1.3 metastore client (``spark.sql.hive.metastore.version=3.1.3``,
``spark.sql.hive.metastore.jars=maven``), as teams on a Hive 3 metastore run it: every statement
of the Spark end-to-end suite (tests/e2e/spark/statements.py) against the stock HMS 3.1.3 (Maven
Central, :mod:`hms_proxy.tools.hive31_local`) and against us, compared as
test_spark_e2e.py compares them with the 2.3 client. This client names every database
``@hive#db`` and reads tables with ``get_table_req``.

Both metastores are Kerberized against a KDC of the test's own (SASL GSSAPI,
``hadoop.rpc.protection=authentication``), and Spark logs in from alice's ticket cache, as issue
42 asks for each of Spark's three Hive clients (the built-in 2.3 one:
tests/security/test_kerberos.py).

Full outputs: tests/.artifacts/spark/{oracle31,proxy31}.jsonl.
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
def runs31(tmp_path_factory):
    from hms_proxy.tools import hive31_local

    with started_realm(tmp_path_factory.mktemp("krb31")) as realm:
        stock = start_standalone_kerberized(realm, tmp_path_factory.mktemp("stock-hms-3.1.3"),
                                            hive31_local.start_stock_hms31, "authentication")
        try:
            yield kerberized_sides(realm, stock, tmp_path_factory, "authentication", "31",
                                   hive31_local.spark_client_conf())
        finally:
            stock.stop()


def test_spark_with_a_hive_31_client_matches_stock_hms_31(runs31):
    differences = whole_run_differences(runs31, "stock HMS 3.1.3")
    assert not differences, (f"{len(differences)} statement(s) differ:\n"
                             + "\n".join(differences))
