"""Catalog-qualified database names (``@hive#shop``), as Hive 3.x/4.x clients and Trino with
``hive.metastore.thrift.catalog-name`` send them, compared call by call with the stock Hive
Metastore 3.1.3 (Maven Central's ``-bin`` tarball, :mod:`hms_proxy.tools.hive31_local`).

The same objects are made on both; then the same qualified calls go to both and their answers
(or errors: class and message) must be equal. The few answers that differ on purpose are
listed in docs/compatibility.md ("Catalog-qualified names") and checked here as ours.
"""
from __future__ import annotations

import contextlib

import pytest

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel.store import open_store
from tests.support.client import connect, text_table
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.timeout(600), pytest.mark.oracle]


def _table(name, db="shop"):
    return text_table(name, db)


def _setup(client):
    client.create_database(T.Database("shop", "the shop", None, {}))
    client.create_table(_table("orders"))
    client.create_table(_table("returns"))
    sd = client.get_table("shop", "orders").sd
    sd.location = None
    client.add_partition(T.Partition(["2024-01-01"], "shop", "orders", 0, 0, sd, {}))


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The stock HMS 3.1.3 and ours, each with ``shop.orders`` (and ours a branch ``dev``)."""
    from hms_proxy.tools.hive31_local import start_stock_hms31

    stock = start_stock_hms31(tmp_path_factory.mktemp("stock-hms-3.1.3"))
    ours_dir = tmp_path_factory.mktemp("ours")
    ours = start_proxy(ours_dir)
    try:
        for server in (stock, ours):
            with connect(server) as client:
                _setup(client)
        store = open_store(ours_dir / "store")
        store.commit("main", "shop", author="test")
        store.create_branch("dev", "main")
        yield stock, ours
    finally:
        ours.stop()
        stock.stop()


@contextlib.contextmanager
def _hive3(server):
    """A connection that speaks Hive 3, as a Hive 3 client's does once it has named a catalog
    (get_catalogs)."""
    with connect(server) as client:
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        yield client


@pytest.fixture(scope="module")
def pair(servers):
    stock, ours = servers
    with connect(stock) as stock_client, connect(ours) as our_client:
        yield stock_client, our_client


def _shape(value):
    """What is compared of an answer: names, values and types, never times or locations."""
    if isinstance(value, list):
        shapes = [_shape(v) for v in value]
        return sorted(shapes, key=repr) if all(isinstance(v, str) for v in value) else shapes
    if isinstance(value, T.Database):
        return ("Database", value.name, value.description)
    if isinstance(value, T.Table):
        return ("Table", value.tableName, value.dbName, value.tableType,
                [(c.name, c.type) for c in value.sd.cols],
                [(c.name, c.type) for c in value.partitionKeys], value.parameters.get("k"))
    if isinstance(value, T.Partition):
        return ("Partition", value.dbName, value.tableName, value.values)
    if isinstance(value, T.FieldSchema):
        return (value.name, value.type)
    if isinstance(value, T.TableMeta):
        return ("TableMeta", value.dbName, value.tableName, value.tableType)
    return value


def _answer(call):
    try:
        return ("ok", _shape(call()))
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))


# (label, call): the same on both servers. Qualified with the default catalog, in other
# letter cases, with no database (every one), the empty database, and an unknown catalog.
CASES = [
    ("get_databases @hive#", lambda c: c.get_databases("@hive#")),
    ("get_databases @HIVE#", lambda c: c.get_databases("@HIVE#")),
    ("get_databases @hive#sh*", lambda c: c.get_databases("@hive#sh*")),
    ("get_databases @nocat#", lambda c: c.get_databases("@nocat#")),
    ("get_databases @hive (no separator)", lambda c: c.get_databases("@hive")),
    ("get_database @hive#shop", lambda c: c.get_database("@hive#shop")),
    ("get_database @hive#SHOP", lambda c: c.get_database("@hive#SHOP")),
    ("get_database @hive#nodb", lambda c: c.get_database("@hive#nodb")),
    ("get_database @hive#!", lambda c: c.get_database("@hive#!")),
    ("get_database @nocat#shop", lambda c: c.get_database("@nocat#shop")),
    ("get_database @hivenosep", lambda c: c.get_database("@hivenosep")),
    ("create_database named @hive#x", lambda c: c.create_database(
        T.Database("@hive#x", "", None, {}))),
    ("get_all_tables @hive#shop", lambda c: c.get_all_tables("@hive#shop")),
    ("get_all_tables @nocat#shop", lambda c: c.get_all_tables("@nocat#shop")),
    ("get_tables @hive#shop ord*", lambda c: c.get_tables("@hive#shop", "ord*")),
    ("get_tables_by_type", lambda c: c.get_tables_by_type("@hive#shop", "*", "EXTERNAL_TABLE")),
    ("get_table_meta @hive#*", lambda c: c.get_table_meta("@hive#*", "*", None)),
    ("get_table_meta @nocat#*", lambda c: c.get_table_meta("@nocat#*", "*", None)),
    ("get_table", lambda c: c.get_table("@hive#shop", "orders")),
    ("get_table missing", lambda c: c.get_table("@hive#shop", "missing")),
    ("get_table unknown catalog", lambda c: c.get_table("@nocat#shop", "orders")),
    ("get_table_objects_by_name", lambda c: c.get_table_objects_by_name(
        "@hive#shop", ["orders", "returns", "missing"])),
    ("get_fields", lambda c: c.get_fields("@hive#shop", "orders")),
    ("get_schema", lambda c: c.get_schema("@hive#shop", "orders")),
    ("get_fields missing", lambda c: c.get_fields("@hive#shop", "missing")),
    ("get_partitions", lambda c: c.get_partitions("@hive#shop", "orders", -1)),
    ("get_partitions missing", lambda c: c.get_partitions("@hive#shop", "missing", -1)),
    ("get_partitions unknown catalog", lambda c: c.get_partitions("@nocat#shop", "orders", -1)),
    ("get_partition_names", lambda c: c.get_partition_names("@hive#shop", "orders", -1)),
    ("get_partition", lambda c: c.get_partition("@hive#shop", "orders", ["2024-01-01"])),
    ("get_partition missing table", lambda c: c.get_partition("@hive#shop", "x", ["1"])),
    ("get_partition_by_name", lambda c: c.get_partition_by_name(
        "@hive#shop", "orders", "ds=2024-01-01")),
    ("get_partitions_by_filter", lambda c: c.get_partitions_by_filter(
        "@hive#shop", "orders", "ds = \"2024-01-01\"", -1)),
    ("get_partitions_by_filter missing", lambda c: c.get_partitions_by_filter(
        "@hive#shop", "missing", "ds = \"1\"", -1)),
    ("get_table_column_statistics missing table", lambda c: c.get_table_column_statistics(
        "@hive#shop", "missing", "id")),
    ("get_function missing", lambda c: c.get_function("@hive#shop", "f")),
    ("get_functions", lambda c: c.get_functions("@hive#shop", "*")),
    ("drop_table missing", lambda c: c.drop_table("@hive#shop", "missing", True)),
    ("alter_table missing", lambda c: c.alter_table("@hive#shop", "missing", _table("missing"))),
    ("append_partition unknown catalog", lambda c: c.append_partition(
        "@nocat#shop", "orders", ["2024-01-03"])),
]


@pytest.mark.parametrize("label,call", CASES, ids=[c[0] for c in CASES])
def test_a_catalog_qualified_call_answers_as_the_stock_hms_31(pair, label, call):
    stock, ours = pair
    assert _answer(lambda: call(ours)) == _answer(lambda: call(stock))


def test_catalog_qualified_writes_answer_and_change_as_the_stock_hms_31(pair):
    stock, ours = pair
    for client in (stock, ours):
        client.create_table(_table("temp"))

    def steps(c):
        changed = c.get_table("@hive#shop", "temp")
        changed.parameters["k"] = "v2"
        return [
            _answer(lambda: c.alter_table("@hive#shop", "temp", changed)),
            _answer(lambda: c.get_table("@hive#shop", "temp")),
            _answer(lambda: c.append_partition("@hive#shop", "temp", ["2024-01-02"])),
            _answer(lambda: c.get_partition_names("@hive#shop", "temp", -1)),
            _answer(lambda: c.drop_partition("@hive#shop", "temp", ["2024-01-02"], True)),
            _answer(lambda: c.drop_table("@hive#shop", "temp", True)),
            _answer(lambda: c.get_all_tables("@hive#shop")),
        ]
    assert steps(ours) == steps(stock)


def test_differences_kept_on_purpose_are_the_documented_ones(pair):
    """docs/compatibility.md lists these (a 2.3 answer where the 3.1 one differs for reasons of
    its own generation); a change in either server's answer shows here."""
    stock, ours = pair
    calls = {
        "get_partition_names missing table": lambda c: c.get_partition_names(
            "@hive#shop", "missing", -1),
        "get_fields unknown catalog": lambda c: c.get_fields("@nocat#shop", "orders"),
    }
    assert {k: _answer(lambda: f(stock)) for k, f in calls.items()} == {
        "get_partition_names missing table": (
            "error", "MetaException", "hive.shop.missing table not found"),
        "get_fields unknown catalog": (
            "error", "UnknownTableException", "nocat.shop.orders table not found"),
    }
    assert {k: _answer(lambda: f(ours)) for k, f in calls.items()} == {
        "get_partition_names missing table": (
            "error", "TApplicationException", "Internal error processing get_partition_names"),
        "get_fields unknown catalog": (
            "error", "UnknownDBException", "There is no database named shop"),
    }


def test_refs_work_inside_catalog_qualified_names(pair):
    """``@hive#shop@dev``: catalog hive, database shop, ref dev; answers keep the ref."""
    _, ours = pair
    ours.create_table(_table("dev_only", db="shop@dev"))
    assert sorted(ours.get_all_tables("@hive#shop@dev")) == ["dev_only", "orders", "returns"]
    assert sorted(ours.get_all_tables("@hive#shop")) == ["orders", "returns"]
    table = ours.get_table("@hive#shop@dev", "dev_only")
    assert table.dbName == "shop@dev"  # a follow-up call built from it stays on dev
    assert ours.get_database("@hive#shop@dev").name == "shop@dev"


CONFIG_KEYS = [("metastore.txn.timeout", "x"), ("hive.txn.timeout", "x"),
               ("metastore.try.direct.sql", "x"), ("metastore.batch.retrieve.max", "x"),
               ("metastore.client.socket.timeout", "x"), ("metastore.stats.autogather", "x"),
               ("metastore.no.such.key", "the default"), ("hive.cf.no.such.key", "dflt"),
               ("not.a.metastore.key", "x"), ("javax.jdo.option.ConnectionPassword", "x")]


def test_config_values_answer_hive_3_clients_as_the_stock_hms_31(pair):
    """A Hive 3 client may read ``metastore.*`` keys (MetastoreConf's names), and a key known
    under both names answers the same value: Trino asks for ``metastore.txn.timeout`` before
    each ACID statement and, refused as a Hive 2.3 metastore refuses it, retries for 18 s."""
    stock, ours = pair
    answers = []
    for client in (stock, ours):
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        answers.append([_answer(lambda k=k, d=d, c=client: c.get_config_value(k, d))
                        for k, d in CONFIG_KEYS])
    assert answers[1] == answers[0]
    assert answers[1][0] == ("ok", "300s")


def test_bad_arguments_answer_hive_3_clients_as_the_stock_hms_31(pair):
    """Null and missing names from a Hive 3 client (its connection has called a 3.x method):
    the stock 3.1.3's classes and messages (a missing table named with the default catalog,
    ``hive.db.t table not found``, for every call; a null database name refused first)."""
    from tests.hms import generation_cases

    stock, ours = pair
    got = []
    for client in (stock, ours):
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        generation_cases.setup(client)
        got.append(generation_cases.answers(client))
    for d in generation_cases.differences(*got):
        print("DIFF", d)
    assert not generation_cases.differences(*got)
    assert dict(got[1])["drop_table missing"][2] == "hive.gen_db.nope table not found"


def test_truncate_table_answers_hive_3_clients_as_the_stock_hms_31(pair):
    """Hive's TRUNCATE TABLE (``truncate_table``): the same files left and the same statistics
    after each call as the stock 3.1.3, and the same errors."""
    from tests.hms import truncate_cases

    stock, ours = pair
    got = []
    for client in (stock, ours):
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        got.append(truncate_cases.run(client, hive4=False))
    assert not truncate_cases.differences(*got)
    assert dict((label, st) for label, _, st in got[1])["unpartitioned"]["flat"][0] == []


def test_exchange_partitions_answer_hive_3_clients_as_the_stock_hms_31(servers):
    """``exchange_partition(s)`` from a Hive 3 client (catalog-qualified database names): the
    same answers and errors, partitions and directories after each case as the stock 3.1.3."""
    from tests.hms import exchange_cases

    got = [exchange_cases.run(lambda s=server: _hive3(s)) for server in servers]
    assert not exchange_cases.differences(*got)


def test_a_second_catalog_answers_hive_3_clients_as_the_stock_hms_31(servers, tmp_path):
    """A catalog besides hive, with a database, a table, partitions, a function and keys in it,
    from a Hive 3 client: the same answers and errors as the stock 3.1.3."""
    from tests.hms import catalog_cases

    got = []
    for server in servers:
        root = tmp_path / f"catalogs-{len(got)}"
        root.mkdir()
        with _hive3(server) as client:
            got.append(catalog_cases.answers(client, str(root), "3.1.3"))
    for d in catalog_cases.differences(*got):
        print("DIFF", d)
    assert not catalog_cases.differences(*got)
    assert dict(got[1])["get_function"][1][:2] == ("Function", "cat_x")


def test_runtime_stats_answer_as_the_stock_hms_31(servers):
    """Hive's runtime statistics: stored with the server's time, answered newest first up to
    a total weight and before a time, as the stock 3.1.3 answers them."""
    from tests.hms import runtime_stats_cases

    got = [runtime_stats_cases.run(lambda s=server: connect(s)) for server in servers]
    assert got[1] == got[0]
    assert dict(got[1])["weight 1"][2] == 1


def test_functions_answer_hive_3_clients_as_the_stock_hms_31(servers):
    """Permanent functions from a Hive 3 client, null and bad arguments included (3.1 drops
    the connection on most nulls): the same answers, errors and functions after each case as
    the stock 3.1.3."""
    from tests.hms import function_cases

    got = [function_cases.run(lambda s=server: _hive3(s)) for server in servers]
    assert not function_cases.differences(*got)


def test_table_meta_answers_hive_3_clients_as_the_stock_hms_31(pair):
    """get_table_meta's database and table patterns, types and nulls from a Hive 3 client
    (``@hive#pattern``): the same metas as the stock 3.1.3."""
    from tests.hms import table_meta_cases

    got = []
    for client in pair:
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        got.append(table_meta_cases.run(client, 3))
    assert got[1] == got[0]


def test_drop_partition_answers_hive_3_clients_as_the_stock_hms_31(servers):
    """drop_partition(_by_name) by a Hive 3 client: the same answers and errors, partitions
    and directories left as the stock 3.1.3."""
    from tests.hms import drop_partition_cases

    got = [drop_partition_cases.run(lambda s=server: _hive3(s), 3) for server in servers]
    assert not drop_partition_cases.differences(*got)


def test_the_scenarios_cause_no_internal_error(servers):
    """Every comparison above ran on ours: where the stock 3.1.3 answers an internal error, ours
    answers the same on purpose, never one of its own (logged as "internal error in
    <method>"). Runs last in the module."""
    assert "internal error in" not in servers[1].log_text()


def test_materialized_views_for_rewriting_answer_as_the_stock_hms_31(pair):
    """get_materialized_views_for_rewriting from a Hive 3 client: the same answers as the
    stock 3.1.3."""
    from tests.hms import mv_cases

    got = []
    for client in pair:
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        got.append(mv_cases.run(client))
    assert got[1] == got[0]
    assert ("the database", ("ok", ["mv_rewrite"])) in got[1]


def test_keys_and_catalog_locations_answer_as_the_stock_hms_31(pair, tmp_path):
    """A foreign key referencing no key and a catalog's location as given, from a Hive 3
    client: as the stock 3.1.3 answers."""
    from tests.hms import misc4_cases

    got = []
    for i, client in enumerate(pair):
        client.get_catalogs()  # the connection speaks Hive 3 (dialect)
        got.append(misc4_cases.run(client, str(tmp_path / str(i)), hive4=False))
    assert got[1] == got[0]


def test_creation_metadata_and_specs_answer_hive_3_clients_as_the_stock_hms_31(servers, tmp_path):
    """A materialized view's creation metadata (created, read, replaced by
    update_creation_metadata, whose errors drop the connection in 3.1.3, kept by an alter,
    dropped by a rename) and the catalog of partition specs, from a Hive 3 client: as the
    stock 3.1.3 answers (its Table has no id)."""
    from tests.hms import mv_creation_cases as cases

    got = []
    for server in servers:
        root = tmp_path / f"mvc-{len(got)}"
        root.mkdir()
        got.append(cases.run(lambda s=server: _hive3(s), False, str(root)))
    differences = cases.differences(*got)
    assert not differences, "\n".join(differences)
    answers = dict(got[1])
    assert answers["update a missing view"] == ("error", "TTransportException",
                                                "TSocket read 0 bytes")
    assert answers["get_table_req"][1][8][4] == ["mvc_db.src"]
