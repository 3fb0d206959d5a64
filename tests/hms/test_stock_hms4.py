"""The stock Hive Metastore 4.0.1 (Maven Central's jars, :mod:`hms_proxy.tools.hive4_local`)
serves our generated 2.3 client: databases, a partitioned table and its partitions; and the
4.x differences an oracle of that version shows: ``get_table`` is gone, and a managed table
created by a client without capabilities is stored as an external one.
"""
from __future__ import annotations

import contextlib

import pytest
from thrift.Thrift import TApplicationException, TType

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import connect, text_table

pytestmark = [pytest.mark.timeout(600), pytest.mark.oracle]


@contextlib.contextmanager
def _hive4(server):
    """A connection that speaks Hive 4, as a Hive 4 client's does once it has called
    ``get_database_req``."""
    with connect(server) as client:
        client.get_database_req(T.GetDatabaseRequest(name="default", catalogName="hive"))
        yield client


def _table(name, db, table_type="EXTERNAL_TABLE"):
    return text_table(name, db, table_type)


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    from hms_proxy.tools.hive4_local import start_stock_hms4

    proc = start_stock_hms4(tmp_path_factory.mktemp("stock-hms-4.0.1"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """Our server, beside the stock one, for the comparisons below (each in its own names)."""
    from tests.support.proxy import start_proxy

    proc = start_proxy(tmp_path_factory.mktemp("ours"))
    try:
        yield proc
    finally:
        proc.stop()


def test_serves_databases_tables_and_partitions(stock):
    with connect(stock) as client:
        client.create_database(T.Database("shop", "the shop", None, {}))
        assert {"default", "shop"} <= set(client.get_all_databases())
        assert {"default", "shop"} <= set(client.get_databases("@hive#"))
        assert client.get_database("shop").description == "the shop"

        client.create_table(_table("orders", "shop"))
        assert client.get_all_tables("shop") == ["orders"]
        table = client.get_table_req(T.GetTableRequest("shop", "orders")).table
        assert (table.tableType, [k.name for k in table.partitionKeys]) == \
            ("EXTERNAL_TABLE", ["ds"])

        sd = table.sd
        sd.location = None  # under the table's
        for ds in ("2024-01-01", "2024-01-02"):
            client.add_partition(T.Partition([ds], "shop", "orders", 0, 0, sd, {}))
        assert sorted(client.get_partition_names("shop", "orders", -1)) == \
            ["ds=2024-01-01", "ds=2024-01-02"]
        (part,) = client.get_partitions_by_names("shop", "orders", ["ds=2024-01-02"])
        assert part.values == ["2024-01-02"]
        assert part.sd.location.endswith("/orders/ds=2024-01-02")


def test_managed_table_is_stored_as_external(stock):
    """4.x's default metadata transformer (3.1.3 keeps such a table managed)."""
    with connect(stock) as client:
        client.create_database(T.Database("managed", None, None, {}))
        client.create_table(_table("t", "managed", table_type="MANAGED_TABLE"))
        table = client.get_table_req(T.GetTableRequest("managed", "t")).table
        assert table.tableType == "EXTERNAL_TABLE"
        assert {k: table.parameters.get(k) for k in
                ("EXTERNAL", "external.table.purge", "TRANSLATED_TO_EXTERNAL")} == \
            {"EXTERNAL": "TRUE", "external.table.purge": "TRUE", "TRANSLATED_TO_EXTERNAL": "TRUE"}


@pytest.mark.parametrize("call", [
    lambda client: client.get_table("default", "nothing"),
    lambda client: client.get_table_objects_by_name("default", ["nothing"]),
], ids=["get_table", "get_table_objects_by_name"])
def test_removed_calls_are_unknown_methods(stock, call):
    with connect(stock) as client:
        with pytest.raises(TApplicationException) as raised:
            call(client)
        assert raised.value.type == TApplicationException.UNKNOWN_METHOD
        assert client.get_all_databases()  # the connection stays usable


def test_bad_arguments_answer_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """Null and missing names from a Hive 4 client (its connection has called
    ``get_database_req``, as Hive 4's client does first): the stock 4.0.1's classes and
    messages, which name the catalog (``database hive.x``, ``hive.db.t table not found``)."""
    from tests.hms import generation_cases

    got = []
    for server in (stock, ours):
        with _hive4(server) as client:
            generation_cases.setup(client)
            got.append(generation_cases.answers(client))
    for d in generation_cases.differences(*got):
        print("DIFF", d)
    assert not generation_cases.differences(*got)
    assert dict(got[1])["get_database missing"] == ("error", "NoSuchObjectException",
                                                    "database hive.gen_nodb")


def test_truncate_table_answers_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """Hive's TRUNCATE TABLE (``truncate_table``, ``truncate_table_req``): the same files left
    and the same statistics after each call as the stock 4.0.1, and the same errors."""
    from tests.hms import truncate_cases

    got = []
    for server in (stock, ours):
        with _hive4(server) as client:
            got.append(truncate_cases.run(client, hive4=True))
    assert not truncate_cases.differences(*got)
    after = dict((label, st) for label, _, st in got[1])
    assert after["unpartitioned"]["flat"][0] == []
    assert after["req: unpartitioned, data kept"]["flat2"][0] == [".000000_0.crc", "000000_0"]


def test_exchange_partitions_answer_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """``exchange_partition(s)`` from a Hive 4 client (catalog-qualified database names): the
    same answers and errors, partitions and directories after each case as the stock 4.0.1."""
    from tests.hms import exchange_cases

    got = [exchange_cases.run(lambda s=server: _hive4(s)) for server in (stock, ours)]
    assert not exchange_cases.differences(*got)
    assert dict((label, a) for label, a, _ in got[1])["partitions: one"] == \
        ("ok", ["2017/march/22"])


def test_a_second_catalog_answers_hive_4_clients_as_the_stock_hms_4(stock, ours, tmp_path):
    """A catalog besides hive, its databases, a table, partitions, a function and keys in it,
    listed, altered and dropped: the same answers and errors as the stock 4.0.1 (and the
    default catalog and a 2.3 client see none of it)."""
    from tests.hms import catalog_cases

    got = []
    for server in (stock, ours):
        root = tmp_path / f"catalogs-{len(got)}"
        root.mkdir()
        with _hive4(server) as client:
            got.append(catalog_cases.answers(client, str(root)))
    for d in catalog_cases.differences(*got):
        print("DIFF", d)
    assert not catalog_cases.differences(*got)
    answers = dict(got[1])
    assert answers["get_databases @cat#"] == ("ok", ["cat_shop", "default"])
    assert answers["get_table_req"][1][:3] == ("Table", "cat_x", "cat_shop")
    assert answers["get_all_databases"] == ("ok", False)  # hive's: not the other catalog's


def test_runtime_stats_answer_as_the_stock_hms_4(stock, ours):
    """Hive's runtime statistics, as the stock 4.0.1 answers them."""
    from tests.hms import runtime_stats_cases

    got = [runtime_stats_cases.run(lambda s=server: _hive4(s)) for server in (stock, ours)]
    assert got[1] == got[0]


def test_an_external_warehouse_places_hive_4_databases_as_the_stock_hms_4(tmp_path):
    """``metastore.warehouse.external.dir`` (``serve --conf``): the default database and the
    databases a Hive 4 client creates without a location are under it, and their tables with
    them, as the stock 4.0.1 places them with the same setting."""
    from hms_proxy.tools import hive4_local
    from hms_proxy.tools.metastores import start_standalone
    from tests.support.proxy import start_proxy

    key = "metastore.warehouse.external.dir"
    stock_ext, our_ext = tmp_path / "stock-ext", tmp_path / "our-ext"
    stock = start_standalone(f"stock-hms-{hive4_local.VERSION}",
                             hive4_local.classpath(hive4_local.ensure_hive4()), tmp_path / "stock",
                             180.0, {"metastore.thrift.bind.host": "127.0.0.1", key: str(stock_ext)})
    ours = start_proxy(tmp_path / "ours", "--conf", f"{key}={our_ext}")
    got = []
    try:
        for server, ext in ((stock, stock_ext), (ours, our_ext)):
            with _hive4(server) as c:
                c.create_database(T.Database("plain", "", None, {}))
                c.create_database_req(T.CreateDatabaseRequest(databaseName="viareq",
                                                              parameters={}))
                c.create_database(T.Database("placed", "", f"file:{tmp_path}/placed", {}))
                for name, kind in (("m", "MANAGED_TABLE"), ("e", "EXTERNAL_TABLE")):
                    t = _table(name, "plain", kind)
                    t.sd.location = None
                    c.create_table(t)
                seen = [(n, c.get_database(n).locationUri, c.get_database(n).managedLocationUri)
                        for n in ("default", "plain", "viareq", "placed")]
                seen += [(n, c.get_table_req(T.GetTableRequest("plain", n)).table.sd.location)
                         for n in ("m", "e")]
                got.append([tuple(str(v).replace(f"file:{ext}", "<ext>") for v in row)
                            for row in seen])
    finally:
        ours.stop()
        stock.stop()
    assert got[1] == got[0]
    assert ("plain", "<ext>/plain.db", "None") in got[1]


def test_functions_answer_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """Permanent functions from a Hive 4 client: its metastore's checks of null names and
    functions, lower-cased names, an alter that keeps the resources: the same answers, errors
    and functions after each case as the stock 4.0.1."""
    from tests.hms import function_cases

    got = [function_cases.run(lambda s=server: _hive4(s)) for server in (stock, ours)]
    assert not function_cases.differences(*got)
    states = dict((label, st) for label, _, st in got[1])
    assert "test_upper_case_func_name" in {f[1] for f in states["create upper-case name"]}


def test_table_meta_answers_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """get_table_meta's database and table patterns, types and nulls from a Hive 4 client
    (tables made through create_table_req, as it makes them): the same metas as the stock
    4.0.1."""
    from tests.hms import table_meta_cases

    got = []
    for server in (stock, ours):
        with _hive4(server) as client:
            got.append(table_meta_cases.run(client, 4))
    assert got[1] == got[0]


def test_drop_partition_answers_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """drop_partition(_by_name) by a Hive 4 client: the same answers and errors, partitions
    and directories left (a parent emptied by the drops goes too) as the stock 4.0.1."""
    from tests.hms import drop_partition_cases

    got = [drop_partition_cases.run(lambda s=server: _hive4(s), 4) for server in (stock, ours)]
    assert not drop_partition_cases.differences(*got)


def test_column_constraints_answer_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """Unique, not-null, default and check constraints, added, listed, dropped, created with
    their table, renamed and dropped with it, and in a second catalog: the same answers and
    errors as the stock 4.0.1."""
    from tests.hms import constraint_cases

    got = []
    for server in (stock, ours):
        with _hive4(server) as client:
            got.append(constraint_cases.answers(client))
    differences = [f"{label}: stock {a!r} / ours {b!r}"
                   for (label, a), (_, b) in zip(*got) if a != b]
    assert not differences, "\n".join(differences)
    answers = dict(got[1])
    assert answers["get all t3"][1][2][0][:7] == (
        "SQLUniqueConstraint", "hive", "cstr_db", "t3", "id", 1, "t3_uk")
    assert answers["get all in it"][1][3][0][1] == "cstr_cat"


def test_the_scenarios_cause_no_internal_error(ours):
    """Every comparison above ran on ``ours``: where the stock answers an internal error, ours
    answers the same on purpose (an undeclared exception), never one of its own (the server
    logs those with "internal error in <method>"). Runs last in the module."""
    assert "internal error in" not in ours.log_text()


def test_materialized_views_for_rewriting_answer_as_the_stock_hms_4(stock, ours):
    """get_materialized_views_for_rewriting from a Hive 4 client: the materialized views that
    may rewrite queries, and nothing for a missing database or catalog, as the stock 4.0.1."""
    from tests.hms import mv_cases

    got = []
    for server in (stock, ours):
        with _hive4(server) as client:
            got.append(mv_cases.run(client))
    assert got[1] == got[0]
    assert ("the database", ("ok", ["mv_rewrite"])) in got[1]


def test_table_arguments_answer_hive_4_clients_as_the_stock_hms_4(stock, ours, tmp_path):
    """Hive 4's own client tests' odd arguments: tables created and altered with null fields,
    a root location, changed partition keys and an expected parameter; projected table
    lookups; a database's description and location altered; a catalog dropped whose default
    database holds a table: the same answers and errors as the stock 4.0.1."""
    from tests.hms import table_arg_cases

    got = []
    for server in (stock, ours):
        root = tmp_path / f"targs-{len(got)}"
        root.mkdir()
        with _hive4(server) as client:
            try:
                got.append(table_arg_cases.answers(client, str(root)))
            finally:
                table_arg_cases.cleanup(client)
    differences = table_arg_cases.differences(*got)
    assert not differences, "\n".join(differences)


def test_partition_arguments_answer_hive_4_clients_as_the_stock_hms_4(stock, ours):
    """Hive 4's own client tests' odd partition arguments: null and empty names, partitions
    by names of a missing table or catalog, partitions added to a view or with a bad serde,
    columns or location, partition specs without names, partitions altered or renamed into
    another table: the same answers and errors as the stock 4.0.1."""
    from tests.hms import partition_arg_cases

    got = [partition_arg_cases.run(lambda s=server: _hive4(s)) for server in (stock, ours)]
    differences = partition_arg_cases.differences(*got)
    assert not differences, "\n".join(differences)


def test_keys_listings_and_catalog_locations_answer_as_the_stock_hms_4(stock, ours, tmp_path):
    """A foreign key referencing no key, get_all_tables with no database, table objects of
    every database (``*``), a catalog's location as given: as the stock 4.0.1 answers."""
    from tests.hms import misc4_cases

    got = []
    for server in (stock, ours):
        root = str(tmp_path / server.__class__.__name__ / str(len(got)))
        with _hive4(server) as client:
            got.append(misc4_cases.run(client, root, hive4=True))
    assert got[1] == got[0]


def test_scheduled_queries_answer_as_the_stock_hms_4(stock, ours):
    """Hive 4's scheduled queries created, altered, dropped, polled and moved along their
    states, with invalid schedules, duplicates, missing names, invalid state changes and null
    arguments: the same answers and errors as the stock 4.0.1."""
    from tests.hms import scheduled_query_cases

    got = [scheduled_query_cases.run(lambda s=server: _hive4(s)) for server in (stock, ours)]
    differences = scheduled_query_cases.differences(*got)
    assert not differences, "\n".join(differences)
    answers = dict(got[1])
    assert answers["poll"][1][1:4] == (("p", "sq_cases_poll"), True,
                                       "/* schedule: p */select 3")


def test_creation_metadata_table_ids_and_specs_answer_as_the_stock_hms_4(stock, ours, tmp_path):
    """A materialized view's creation metadata (created, read with get_table_req and
    get_table_objects_by_name_req, replaced by update_creation_metadata and its errors, kept
    by an alter, dropped by a rename), the ids the server gives tables (kept by an alter and a
    rename, a client's ignored) and the catalog of partition specs in another catalog, from a
    Hive 4 client: as the stock 4.0.1 answers (get_table and get_table_objects_by_name, which
    the stock 4.0.1 no longer has, answered by ours as get_table_req is). Then a 2.3 client
    reads and alters such a view: what it reads as from the stock, and the creation metadata
    kept."""
    from tests.hms import mv_creation_cases as cases
    from tests.support.client import connect

    got, got23, after = [], [], []
    for server in (stock, ours):
        root = tmp_path / f"mvc-{len(got)}"
        root.mkdir()
        got.append(cases.run(lambda s=server: _hive4(s), True, str(root)))
        got23.append(cases.run23(lambda s=server: connect(s), False))
        with _hive4(server) as client:
            after.append(cases.after_2_3_alter(client))
    differences = cases.differences(*got, skip=cases.KEPT_IN_4)
    differences += cases.differences(*got23)
    assert not differences, "\n".join(differences)
    # (its creation metadata and id: a table a 2.3 client made has no catalog in ours, the
    # stock 4.0.1 answers hive)
    assert after[1][1][8:] == after[0][1][8:]
    answers = dict(got[1])
    assert answers["get_table"] == answers["get_table_req"]
    assert answers["get_table_objects_by_name"] == answers["get_table_objects_by_name_req"]
    assert answers["get_table_req"][1][8][7] == [("mvc_db", "src", "id1", 0, 0, 0)]
    assert answers["get_table_req renamed"][1][8:] == (None, "id2")  # no creation metadata
    assert answers["get_partitions_pspec"][1][0][1] == "mvc_cat"
    with connect(ours) as client:  # a 2.3 client: never a struct at Table's id 16
        assert after[1][1][8] is not None  # (the view has one)
        fields = cases._table_fields(client, "get_table_req", T.GetTableRequest(cases.DB23, "mv"))
        assert (16, TType.STRUCT) not in fields
