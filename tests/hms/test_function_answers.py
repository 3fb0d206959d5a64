"""Permanent functions managed by a Hive 2.3 client (Spark's built-in one), null and bad
arguments included: the same answers, errors and functions after each case as the stock HMS
2.3.10 (the 3.1 and 4.x clients' cases are in test_catalog_names.py and test_stock_hms4.py)."""
from __future__ import annotations

import pytest

from tests.hms import function_cases
from tests.support.client import connect

pytestmark = [pytest.mark.timeout(600), pytest.mark.oracle]


def test_functions_answer_hive_2_clients_as_the_stock_hms_23(oracle, proxy):
    got = [function_cases.run(lambda s=server: connect(s)) for server in (oracle, proxy)]
    assert not function_cases.differences(*got)
    assert dict((label, a) for label, a, _ in got[1])["alter onto an existing name"][0] == \
        "error"
