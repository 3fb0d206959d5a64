"""Catalogs and the request-struct calls of Hive 3.x/4.x clients (``get_database_req``,
``create_table_req``, ``get_partitions_by_names_req``, ...), compared call by call with the stock
Hive Metastore 4.0.1 and, for the calls 3.1.3 has, with the stock 3.1.3: the same objects are
made on the three servers, the same calls go to each, and answers (or errors: class and
message) must be equal. What differs on purpose is checked in its own test and listed in
docs/compatibility.md ("Hive 3.x and 4.x clients").
"""
from __future__ import annotations

import pytest

from hms_proxy.thrift import generations
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel.store import open_store
from tests.support.client import connect, text_table
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.timeout(900), pytest.mark.oracle]


def _table(name, db="shop", params=None):
    # external: the stock 4.x stores a managed table of a client without capabilities as an
    # external one, which is not what is compared here
    return text_table(name, db, params=params)


def _setup(client):
    # with its owner: the stock 4.x makes its own process user the owner of a database
    # created without one (2.3 and we leave none)
    client.create_database(T.Database("shop", "the shop", None, {}, ownerName="ann",
                                      ownerType=T.PrincipalType.USER))
    client.create_table(_table("orders"))
    sd = client.get_table_req(T.GetTableRequest("shop", "orders")).table.sd
    sd.location = None
    for ds in ("2024-01-01", "2024-01-02"):
        client.add_partition(T.Partition([ds], "shop", "orders", 0, 0, sd, {}))


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """{"4.0.1": stock, "3.1.3": stock, "ours": hms-proxy}, each with the same objects."""
    from hms_proxy.tools.hive4_local import start_stock_hms4
    from hms_proxy.tools.hive31_local import start_stock_hms31

    procs = {}
    try:
        procs["4.0.1"] = start_stock_hms4(tmp_path_factory.mktemp("stock-hms-4.0.1"))
        procs["3.1.3"] = start_stock_hms31(tmp_path_factory.mktemp("stock-hms-3.1.3"))
        ours_dir = tmp_path_factory.mktemp("ours")
        procs["ours"] = start_proxy(ours_dir)
        for proc in procs.values():
            with connect(proc) as client:
                _setup(client)
        store = open_store(ours_dir / "store")
        store.commit("main", "shop", author="test")
        store.create_branch("dev", "main")
        yield procs
    finally:
        for proc in procs.values():
            proc.stop()


def _shape(value):
    """What is compared of an answer: names, values and types, never times or locations
    (each server has its own warehouse directory)."""
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, T.Database):
        return ("Database", value.name, value.description, value.parameters, value.ownerName,
                value.ownerType, value.catalogName, value.type)
    if isinstance(value, T.Catalog):
        return ("Catalog", value.name, value.description, value.locationUri is not None)
    if isinstance(value, T.Table):
        return ("Table", value.tableName, value.dbName, value.tableType, value.owner,
                [(c.name, c.type) for c in value.sd.cols],
                [(c.name, c.type) for c in value.partitionKeys], value.parameters.get("k"))
    if isinstance(value, T.Partition):
        return ("Partition", value.dbName, value.tableName, value.values)
    if isinstance(value, T.FieldSchema):
        return (value.name, value.type)
    if isinstance(value, T.SQLPrimaryKey):
        return ("PK", value.table_db, value.table_name, value.column_name, value.key_seq,
                value.pk_name, value.rely_cstr)
    if hasattr(value, "thrift_spec"):  # a response struct: its fields, shaped
        return (type(value).__name__,) + tuple(
            _shape(getattr(value, f[2])) for f in value.thrift_spec if f is not None)
    return value


def _error(exc):
    return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))


def _answer(proc, call):
    """The answer of one call on a connection of its own (the stock 3.1.3 closes a
    connection on some errors). Caught inside the ``with``: contextlib cannot pass a
    generated (immutable) exception through a generator's exit."""
    try:
        with connect(proc) as client:
            try:
                return ("ok", _shape(call(client)))
            except Exception as exc:  # noqa: BLE001 - the error is the answer compared
                return _error(exc)
    except Exception as exc:  # noqa: BLE001 - no connection: that is the answer
        return _error(exc)


def _db_req(name, cat="hive"):
    return T.GetDatabaseRequest(name=name, catalogName=cat)


# (label, method, call): reads of what _setup made
READS = [
    ("get_catalogs", "get_catalogs", lambda c: c.get_catalogs()),
    ("get_catalog hive", "get_catalog", lambda c: c.get_catalog(T.GetCatalogRequest("hive"))),
    ("get_catalog HIVE", "get_catalog", lambda c: c.get_catalog(T.GetCatalogRequest("HIVE"))),
    ("get_catalog missing", "get_catalog", lambda c: c.get_catalog(T.GetCatalogRequest("nocat"))),
    ("create_catalog hive", "create_catalog", lambda c: c.create_catalog(
        T.CreateCatalogRequest(T.Catalog("hive", "again", "file:/tmp/elsewhere")))),
    ("drop_catalog hive", "drop_catalog", lambda c: c.drop_catalog(T.DropCatalogRequest("hive"))),
    ("drop_catalog missing", "drop_catalog", lambda c: c.drop_catalog(
        T.DropCatalogRequest("nocat"))),
    ("alter_catalog missing", "alter_catalog", lambda c: c.alter_catalog(T.AlterCatalogRequest(
        "nocat", T.Catalog("nocat", "d", "file:/tmp/y")))),
    ("alter_catalog renaming hive", "alter_catalog", lambda c: c.alter_catalog(
        T.AlterCatalogRequest("hive", T.Catalog("other", "d", "file:/tmp/y")))),
    ("get_database_req", "get_database_req", lambda c: c.get_database_req(_db_req("shop"))),
    ("get_database_req upper case", "get_database_req", lambda c: c.get_database_req(
        _db_req("SHOP", "HIVE"))),
    ("get_database_req missing", "get_database_req", lambda c: c.get_database_req(
        _db_req("nodb"))),
    ("get_database_req unknown catalog", "get_database_req", lambda c: c.get_database_req(
        _db_req("shop", "nocat"))),
    ("get_table_req with catName", "get_table_req", lambda c: c.get_table_req(
        T.GetTableRequest("shop", "orders", catName="hive"))),
    ("get_fields_req", "get_fields_req", lambda c: c.get_fields_req(
        T.GetFieldsRequest(catName="hive", dbName="shop", tblName="orders"))),
    ("get_schema_req", "get_schema_req", lambda c: c.get_schema_req(
        T.GetSchemaRequest(catName="hive", dbName="shop", tblName="orders"))),
    ("get_partitions_req", "get_partitions_req", lambda c: c.get_partitions_req(
        T.PartitionsRequest(catName="hive", dbName="shop", tblName="orders"))),
    ("get_partitions_req max 1", "get_partitions_req", lambda c: c.get_partitions_req(
        T.PartitionsRequest(catName="hive", dbName="shop", tblName="orders", maxParts=1))),
    ("get_partition_req", "get_partition_req", lambda c: c.get_partition_req(
        T.GetPartitionRequest(catName="hive", dbName="shop", tblName="orders",
                              partVals=["2024-01-02"]))),
    ("get_partition_req missing", "get_partition_req", lambda c: c.get_partition_req(
        T.GetPartitionRequest(catName="hive", dbName="shop", tblName="orders",
                              partVals=["1999-01-01"]))),
    ("get_partition_names_ps_req", "get_partition_names_ps_req",
     lambda c: c.get_partition_names_ps_req(T.GetPartitionNamesPsRequest(
         catName="hive", dbName="shop", tblName="orders", partValues=["2024-01-01"]))),
    ("fetch_partition_names_req", "fetch_partition_names_req",
     lambda c: c.fetch_partition_names_req(T.PartitionsRequest(
         catName="hive", dbName="shop", tblName="orders", maxParts=5))),
    ("fetch_partition_names_req missing table", "fetch_partition_names_req",
     lambda c: c.fetch_partition_names_req(T.PartitionsRequest(
         catName="hive", dbName="shop", tblName="missing"))),
    ("get_partitions_by_filter_req", "get_partitions_by_filter_req",
     lambda c: c.get_partitions_by_filter_req(T.GetPartitionsByFilterRequest(
         catName="hive", dbName="shop", tblName="orders", filter='ds > "2024-01-01"'))),
    ("get_partitions_ps_with_auth_req", "get_partitions_ps_with_auth_req",
     lambda c: c.get_partitions_ps_with_auth_req(T.GetPartitionsPsWithAuthRequest(
         catName="hive", dbName="shop", tblName="orders", partVals=["2024-01-01"]))),
    ("get_all_table_constraints", "get_all_table_constraints",
     lambda c: c.get_all_table_constraints(T.AllTableConstraintsRequest("shop", "orders", "hive"))),
    ("get_unique_constraints", "get_unique_constraints", lambda c: c.get_unique_constraints(
        T.UniqueConstraintsRequest("hive", "shop", "orders"))),
    ("get_not_null_constraints", "get_not_null_constraints", lambda c: c.get_not_null_constraints(
        T.NotNullConstraintsRequest("hive", "shop", "orders"))),
    ("get_check_constraints missing table", "get_check_constraints",
     lambda c: c.get_check_constraints(T.CheckConstraintsRequest("hive", "shop", "missing"))),
    ("get_partitions_by_names_req", "get_partitions_by_names_req",
     lambda c: c.get_partitions_by_names_req(T.GetPartitionsByNamesRequest(
         "@hive#shop", "orders", ["ds=2024-01-02", "ds=1999-01-01"]))),
]
# reads with fields only 4.x has (3.1.3 would not see them): compared with 4.0.1
READS_4 = [
    ("get_partitions_ps_with_auth_req by names", "get_partitions_ps_with_auth_req",
     lambda c: c.get_partitions_ps_with_auth_req(T.GetPartitionsPsWithAuthRequest(
         catName="hive", dbName="shop", tblName="orders",
         partNames=["ds=2024-01-02", "ds=1999-01-01"]))),
    ("get_table_objects_by_name_req pattern", "get_table_objects_by_name_req",
     lambda c: c.get_table_objects_by_name_req(T.GetTablesRequest(
         dbName="shop", catName="hive", tablesPattern="ord*")).tables),
    ("get_table_objects_by_name_req pattern, missing database", "get_table_objects_by_name_req",
     lambda c: c.get_table_objects_by_name_req(T.GetTablesRequest(
         dbName="nodb", catName="hive", tablesPattern="*"))),
]
# writes and what they changed: 3.1.3 has few of these calls, so they are compared with 4.0.1
WRITES = [
    ("create_database_req", "create_database_req", lambda c: c.create_database_req(
        T.CreateDatabaseRequest("made", "made by request", parameters={"a": "1"},
                                ownerName="ann", ownerType=T.PrincipalType.USER,
                                catalogName="hive"))),
    ("get_database_req made", "get_database_req", lambda c: c.get_database_req(_db_req("made"))),
    ("create_database_req existing", "create_database_req", lambda c: c.create_database_req(
        T.CreateDatabaseRequest("shop", catalogName="hive"))),
    ("alter_database_req", "alter_database_req", lambda c: c.alter_database_req(
        T.AlterDatabaseRequest("@hive#made", T.Database("made", "made by request", None, {"b": "2"},
                                                  ownerName="bob")))),
    ("get_database_req altered", "get_database_req", lambda c: c.get_database_req(
        _db_req("made"))),
    ("drop_database_req missing, ignored", "drop_database_req", lambda c: c.drop_database_req(
        T.DropDatabaseRequest("nodb", "hive", True, False, False))),
    ("drop_database_req", "drop_database_req", lambda c: c.drop_database_req(
        T.DropDatabaseRequest("made", "hive", False, True, False))),
    ("get_database_req dropped", "get_database_req", lambda c: c.get_database_req(
        _db_req("made"))),
    ("create_table_req", "create_table_req", lambda c: c.create_table_req(
        T.CreateTableRequest(_table("made", params={"k": "v1"})))),
    ("create_table_req with a primary key", "create_table_req", lambda c: c.create_table_req(
        T.CreateTableRequest(_table("keyed"), primaryKeys=[T.SQLPrimaryKey(
            "shop", "keyed", "id", 1, "keyed_pk", False, False, True)]))),
    ("get_all_table_constraints keyed", "get_all_table_constraints",
     lambda c: c.get_all_table_constraints(T.AllTableConstraintsRequest("shop", "keyed", "hive"))),
    ("create_table_req managed", "create_table_req", lambda c: c.create_table_req(
        T.CreateTableRequest(_managed("kept")))),
    ("a managed table as created", "get_table_req", lambda c: _kind(c.get_table_req(
        T.GetTableRequest("shop", "kept", catName="hive")).table)),
    ("drop_table_req of it", "drop_table_req", lambda c: c.drop_table_req(T.DropTableRequest(
        catalogName="hive", dbName="shop", tableName="kept", deleteData=True))),
    ("create_table_req existing", "create_table_req", lambda c: c.create_table_req(
        T.CreateTableRequest(_table("made")))),
    ("create_table_req missing database", "create_table_req", lambda c: c.create_table_req(
        T.CreateTableRequest(_table("t", db="nodb")))),
    ("alter_table_req", "alter_table_req", lambda c: c.alter_table_req(T.AlterTableRequest(
        catName="hive", dbName="shop", tableName="made",
        table=_table("made", params={"k": "v2"})))),
    ("get_table_req altered", "get_table_req", lambda c: c.get_table_req(
        T.GetTableRequest("shop", "made", catName="hive"))),
    ("append_partition_req by values", "append_partition_req", lambda c: c.append_partition_req(
        T.AppendPartitionsRequest(catalogName="hive", dbName="shop", tableName="made",
                                  partVals=["2024-02-01"]))),
    ("append_partition_req by name", "append_partition_req", lambda c: c.append_partition_req(
        T.AppendPartitionsRequest(catalogName="hive", dbName="shop", tableName="made",
                                  name="ds=2024-02-02"))),
    ("append_partition_req existing", "append_partition_req", lambda c: c.append_partition_req(
        T.AppendPartitionsRequest(catalogName="hive", dbName="shop", tableName="made",
                                  partVals=["2024-02-01"]))),
    ("alter_partitions_req", "alter_partitions_req", lambda c: c.alter_partitions_req(
        T.AlterPartitionsRequest(catName="hive", dbName="shop", tableName="made",
                                 partitions=[_altered_partition(c)]))),
    ("rename_partition_req", "rename_partition_req", lambda c: c.rename_partition_req(
        T.RenamePartitionRequest(catName="hive", dbName="shop", tableName="made",
                                 partVals=["2024-02-01"], newPart=_renamed_partition(c)))),
    ("drop_partition_req by name", "drop_partition_req", lambda c: c.drop_partition_req(
        T.DropPartitionRequest(catName="hive", dbName="shop", tblName="made",
                               partName="ds=2024-02-02", deleteData=True))),
    ("drop_partition_req missing", "drop_partition_req", lambda c: c.drop_partition_req(
        T.DropPartitionRequest(catName="hive", dbName="shop", tblName="made",
                               partVals=["1999-01-01"], deleteData=True))),
    ("partitions left", "get_partitions_req", lambda c: c.get_partitions_req(
        T.PartitionsRequest(catName="hive", dbName="shop", tblName="made"))),
    ("drop_table_req", "drop_table_req", lambda c: c.drop_table_req(
        T.DropTableRequest(catalogName="hive", dbName="shop", tableName="made",
                           deleteData=True))),
    ("drop_table_req missing", "drop_table_req", lambda c: c.drop_table_req(
        T.DropTableRequest(catalogName="hive", dbName="shop", tableName="made",
                           deleteData=True))),
    ("tables left", "get_all_tables", lambda c: sorted(c.get_all_tables("@hive#shop"))),
]


def _managed(name):
    table = _table(name)
    table.tableType, table.parameters = "MANAGED_TABLE", {"k": "v"}
    return table


def _kind(table):
    """A table's type and parameters (without its time)."""
    return (table.tableType, sorted((k, v) for k, v in table.parameters.items()
                                    if k != "transient_lastDdlTime"))


def _renamed_partition(client):
    part = client.get_partition_req(T.GetPartitionRequest(
        catName="hive", dbName="shop", tblName="made", partVals=["2024-02-01"])).partition
    part.values = ["2024-02-09"]
    part.sd.location = None
    return part


def _altered_partition(client):
    part = client.get_partition_req(T.GetPartitionRequest(
        catName="hive", dbName="shop", tblName="made", partVals=["2024-02-01"])).partition
    part.parameters = dict(part.parameters or {}, k="altered")
    return part


def test_a_request_call_answers_as_the_stock_hms_of_each_generation(servers):
    """Every case in order on each server; for each stock version that has the method, our
    answer must be its answer."""
    answers = {name: [_answer(proc, call) for _, _, call in READS + READS_4 + WRITES]
               for name, proc in servers.items()}
    differences = []
    for version, cases in (("4.0.1", READS + READS_4 + WRITES), ("3.1.3", READS)):
        for (label, method, _), theirs, ours in zip(cases, answers[version], answers["ours"]):
            if version in generations.METHODS[method] and theirs != ours:
                differences.append(f"{label} vs {version}: stock {theirs} / ours {ours}")
    assert differences == [], "\n".join(differences)


def test_refs_work_in_request_calls(servers):
    """``shop@dev`` in a request struct is database shop on ref dev; answers keep the ref."""
    with connect(servers["ours"]) as c:
        c.create_table_req(T.CreateTableRequest(_table("dev_only", db="shop@dev")))
        assert c.get_database_req(_db_req("shop@dev")).name == "shop@dev"
        got = c.get_partitions_by_names_req(T.GetPartitionsByNamesRequest(
            "shop@dev", "orders", ["ds=2024-01-01"])).partitions
        assert [(p.dbName, p.values) for p in got] == [("shop@dev", ["2024-01-01"])]
        assert c.get_table_req(T.GetTableRequest("shop@dev", "dev_only")).table.dbName == \
            "shop@dev"
        assert "dev_only" in c.get_all_tables("@hive#shop@dev")
        assert "dev_only" not in c.get_all_tables("@hive#shop")


def _tree(root) -> list[tuple[str, int]]:
    """Every directory under ``root`` with its number of files."""
    import os
    return sorted((os.path.relpath(d, root), len(files)) for d, _, files in os.walk(root))


def _moves_of_a_hive_4_client(proc) -> dict:
    """A Hive 4 client's renames and drops of a managed table the 4.x metastore translated to
    external (TRANSLATED_TO_EXTERNAL, external.table.purge): what they do to its directories,
    locations, quick statistics and column statistics."""
    from pathlib import Path

    wh = str(proc.warehouse)
    out: dict = {}

    def rel(location):
        return location.replace(wh, "<WH>")

    def params(p):
        return sorted((k, v) for k, v in p.parameters.items() if k != "transient_lastDdlTime")

    with connect(proc) as c:
        c.create_database_req(T.CreateDatabaseRequest("moves", ownerName="ann",
                                                      ownerType=T.PrincipalType.USER))
        c.create_table_req(T.CreateTableRequest(_managed_in("moves", "tr")))
        table = c.get_table_req(T.GetTableRequest("moves", "tr", catName="hive")).table
        out["table"] = (table.tableType, _kind(table)[1], rel(table.sd.location))
        sd = table.sd
        sd.location = None
        for ds in ("a", "b", "c"):
            part = c.add_partition(T.Partition([ds], "moves", "tr", 0, 0, sd, {}))
            (Path(part.sd.location.removeprefix("file:")) / "f.txt").write_text("1\tx\n")
        c.update_partition_column_statistics_req(T.SetPartitionsStatsRequest([T.ColumnStatistics(
            T.ColumnStatisticsDesc(False, "moves", "tr", "ds=a"),
            [T.ColumnStatisticsObj("id", "bigint", T.ColumnStatisticsData(
                longStats=T.LongColumnStatsData(1, 5, 0, 3)))])]))

        def get(name, vals):
            return c.get_partition_req(T.GetPartitionRequest(
                catName="hive", dbName="moves", tblName=name, partVals=vals)).partition
        renamed = get("tr", ["a"])
        renamed.values, renamed.parameters = ["z"], {}
        c.rename_partition_req(T.RenamePartitionRequest(
            catName="hive", dbName="moves", tableName="tr", partVals=["a"], newPart=renamed))
        z = get("tr", ["z"])
        out["renamed partition"] = (rel(z.sd.location), params(z))
        out["its column statistics"] = str(c.get_partitions_statistics_req(
            T.PartitionsStatsRequest("moves", "tr", ["id"], ["ds=a", "ds=z"])).partStats)
        c.drop_partition_req(T.DropPartitionRequest(
            catName="hive", dbName="moves", tblName="tr", partName="ds=b", deleteData=True))
        c.drop_partition("moves", "tr", ["c"], True)
        out["after dropping two partitions"] = _tree(f"{wh}/moves.db")
        table = c.get_table_req(T.GetTableRequest("moves", "tr", catName="hive")).table
        table.tableName = "tr2"
        c.alter_table_req(T.AlterTableRequest(catName="hive", dbName="moves", tableName="tr",
                                              table=table))
        moved = c.get_table_req(T.GetTableRequest("moves", "tr2", catName="hive")).table
        out["renamed table"] = (rel(moved.sd.location), [
            (p.values, rel(p.sd.location)) for p in c.get_partitions_req(T.PartitionsRequest(
                catName="hive", dbName="moves", tblName="tr2")).partitions])
        out["after renaming it"] = _tree(f"{wh}/moves.db")
        own = f"{wh}/elsewhere/placed"
        c.create_table_req(T.CreateTableRequest(_managed_in("moves", "placed", "file:" + own)))
        table = c.get_table_req(T.GetTableRequest("moves", "placed", catName="hive")).table
        table.tableName = "placed2"
        c.alter_table_req(T.AlterTableRequest(catName="hive", dbName="moves",
                                              tableName="placed", table=table))
        out["one made at its own location, renamed"] = rel(c.get_table_req(T.GetTableRequest(
            "moves", "placed2", catName="hive")).table.sd.location)
        out["warehouse"] = [d for d in _tree(wh) if d[0].startswith(("moves.db", "elsewhere"))]
    return out


def _managed_in(db, name, location=None):
    table = _table(name, db=db)
    table.tableType, table.parameters = "MANAGED_TABLE", {}
    table.sd.location = location
    return table


def test_a_hive_4_clients_renames_and_drops_move_files_as_the_stock_4_does(servers):
    """Hive 4 moves the directories of a table it translated to external when the table or a
    partition is renamed, purges a dropped partition's files, counts numFilesErasureCoded and
    carries a renamed partition's column statistics over; HMS 2.3 does none of that, and its
    clients keep 2.3's behaviour (tests/hms/conformance: partitions_rename_statistics)."""
    stock = _moves_of_a_hive_4_client(servers["4.0.1"])
    ours = _moves_of_a_hive_4_client(servers["ours"])
    assert stock["renamed partition"][1] == [("COLUMN_STATS_ACCURATE",
                                              '{"COLUMN_STATS":{"id":"true"}}'),
                                             ("numFiles", "1"), ("numFilesErasureCoded", "0"),
                                             ("totalSize", "4")]
    assert ours == stock


LIKE_PATTERNS = ["%/%", "a_b", ".*", "a.*", "100%", "%\\%", "A%", "(?i)A%", "a/b", "%", "_",
                 "%b", "a%", ".*/.*", "a\\_b", "[ab]%", "k=v", "%=%"]


def test_like_in_a_hive_4_clients_filter_is_sqls_like(servers):
    """Hive 4's direct SQL runs a filter's LIKE as SQL's (``%``, ``_``, ``\\`` escaping,
    case-sensitive), also beside an int key (HMS 2.3's JDO took a regex and refused the int key);
    Spark's Hive 4 client sends ``p like "%/%"`` for ``p LIKE '%/%'``."""
    def answers(proc):
        out = {}
        with connect(proc) as c:
            table = _table("lk")
            table.partitionKeys = [T.FieldSchema("p", "string", None),
                                   T.FieldSchema("n", "int", None)]
            c.create_table_req(T.CreateTableRequest(table))
            sd = c.get_table_req(T.GetTableRequest("shop", "lk")).table.sd
            sd.location = None
            for v in ("a/b", "a_b", "axb", "100%", "k=v", "A/B", "b", "a\\b"):
                c.add_partition(T.Partition([v, "1"], "shop", "lk", 0, 0, sd, {}))
        for pattern in LIKE_PATTERNS:
            for text in (f'p like "{pattern}"', f'p like "{pattern}" and n = 1'):
                out[text] = _answer(proc, lambda c: sorted(
                    p.values[0] for p in c.get_partitions_by_filter_req(
                        T.GetPartitionsByFilterRequest(catName="hive", dbName="shop",
                                                       tblName="lk", filter=text))))
        return out
    stock, ours = answers(servers["4.0.1"]), answers(servers["ours"])
    assert stock['p like "%/%"'] == ("ok", ["A/B", "a/b"])
    assert ours == stock


def _rename_of_a_hive_31_client(proc) -> dict:
    """A Hive 3.1 client (its database names carry the catalog: ``@hive#shop``) renaming a
    partition with column statistics, of a managed and of an external table."""
    out = {}
    with connect(proc) as c:
        assert "shop" in c.get_databases("@hive#")
        for kind in ("MANAGED_TABLE", "EXTERNAL_TABLE"):
            name = f"r31_{kind[:3].lower()}"
            table = _table(name)
            if kind == "MANAGED_TABLE":
                table.tableType, table.parameters = kind, {}
            c.create_table(table)
            sd = c.get_table("@hive#shop", name).sd
            sd.location = None
            c.add_partition(T.Partition(["a"], "shop", name, 0, 0, sd, {}))
            c.update_partition_column_statistics(T.ColumnStatistics(
                T.ColumnStatisticsDesc(False, "shop", name, "ds=a"),
                [T.ColumnStatisticsObj("id", "bigint", T.ColumnStatisticsData(
                    longStats=T.LongColumnStatsData(1, 5, 0, 3)))]))
            part = c.get_partition("@hive#shop", name, ["a"])
            part.values = ["z"]
            c.rename_partition("@hive#shop", name, ["a"], part)
            renamed = c.get_partition("@hive#shop", name, ["z"])
            out[kind] = (
                sorted((k, v) for k, v in renamed.parameters.items()
                       if k != "transient_lastDdlTime"),
                str(c.get_partitions_statistics_req(T.PartitionsStatsRequest(
                    "shop", name, ["id"], ["ds=a", "ds=z"], catName="hive")).partStats))
    return out


def test_a_hive_31_clients_partition_rename_keeps_its_statistics(servers):
    """Hive 3.1 carries a renamed partition's column statistics over (HMS 2.3 drops them) and
    recounts an external table's partition too: as the stock 3.1.3 does, for a client whose
    catalog-qualified names say it is a 3.1 one."""
    stock, ours = _rename_of_a_hive_31_client(servers["3.1.3"]), \
        _rename_of_a_hive_31_client(servers["ours"])
    assert "ds=z" in stock["EXTERNAL_TABLE"][1]
    assert ours == stock
