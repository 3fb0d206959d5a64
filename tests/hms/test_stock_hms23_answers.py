"""Case sets of tests/hms shared by the three client generations, for a Hive 2.3 client
(Spark's built-in one), against the stock HMS 2.3.10 (the 3.1 and 4.x clients' runs are in
test_catalog_names.py and test_stock_hms4.py): functions (null and bad arguments included),
get_table_meta's patterns, drop_partition."""
from __future__ import annotations

import pytest

from tests.hms import drop_partition_cases, function_cases, table_meta_cases
from tests.support.client import connect

pytestmark = [pytest.mark.timeout(600), pytest.mark.oracle]


def test_functions_answer_hive_2_clients_as_the_stock_hms_23(oracle, proxy):
    got = [function_cases.run(lambda s=server: connect(s)) for server in (oracle, proxy)]
    assert not function_cases.differences(*got)
    assert dict((label, a) for label, a, _ in got[1])["alter onto an existing name"][0] == \
        "error"


def test_table_meta_answers_hive_2_clients_as_the_stock_hms_23(oracle, proxy):
    got = []
    for server in (oracle, proxy):
        with connect(server) as client:
            got.append(table_meta_cases.run(client, 2))
    assert got[1] == got[0]
    assert dict(got[1])["external"][1]


def test_drop_partition_answers_hive_2_clients_as_the_stock_hms_23(oracle, proxy):
    """drop_partition(_by_name) by a Hive 2.3 client: the same answers and errors, partitions
    and directories left (a parent emptied by the drops goes too) as the stock 2.3.10."""
    got = [drop_partition_cases.run(lambda s=server: connect(s), 2)
           for server in (oracle, proxy)]
    assert not drop_partition_cases.differences(*got)


def test_bad_arguments_answer_hive_2_clients_as_the_stock_hms_23(oracle, proxy):
    """The generation cases (null and missing names, tables without a storage descriptor or
    columns, listings of unpartitioned tables) from a Hive 2.3 client: the stock 2.3.10's
    classes and messages."""
    from tests.hms import generation_cases

    got = []
    for server in (oracle, proxy):
        with connect(server) as client:
            generation_cases.setup(client)
            got.append(generation_cases.answers(client))
    for d in generation_cases.differences(*got):
        print("DIFF", d)
    assert not generation_cases.differences(*got)


def test_a_materialized_view_answers_hive_2_clients_as_the_stock_hms_23(oracle, proxy):
    """A view created by a 2.3 client with a 3.x/4.x creation metadata at Table's id 16 (a
    struct where 2.3.10 has its catName, a string), read, listed and altered: what the stock
    2.3.10 answers, never a struct at id 16 (tests/hms/mv_creation_cases.py)."""
    from tests.hms import mv_creation_cases

    got = [mv_creation_cases.run23(lambda s=server: connect(s), True)
           for server in (oracle, proxy)]
    differences = mv_creation_cases.differences(*got)
    assert not differences, "\n".join(differences)
    assert dict(got[1])["get_table_req"][1][3] == "MATERIALIZED_VIEW"
