"""Unique, not-null, default and check constraints, as a Hive 4 client adds, lists and drops
them (``add_*_constraint``, ``get_*_constraints``, ``get_all_table_constraints``,
``create_table_with_constraints``, ``create_table_req``, ``drop_constraint``), with the errors
for a missing table or column, a duplicate name and a missing constraint, what a rename and a
drop do to them, and the same in a second catalog. Sent the same to the stock HMS 4.0.1 and to
us (tests/hms/test_stock_hms4.py): the answers, or the errors (class and message), must be
equal; a generated constraint name is compared by its form (``<generated>``)."""
from __future__ import annotations

import re

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DB = "cstr_db"
CAT = "cstr_cat"
COLS = [T.FieldSchema("id", "int", None), T.FieldSchema("name", "string", None),
        T.FieldSchema("price", "double", None)]
GENERATED = re.compile(r"^[a-z0-9_]+_-?\d+_\d{13}_\d$")


def _table(name: str, db: str = DB, cat: str = "hive") -> T.Table:
    table = text_table(name, db, "EXTERNAL_TABLE")
    table.sd.cols = list(COLS)
    table.partitionKeys = [T.FieldSchema("ds", "string", None)]
    table.catalogName = cat
    return table


def uk(tbl, col, name, seq=1, db=DB, cat="hive"):
    return T.SQLUniqueConstraint(cat, db, tbl, col, seq, name, True, False, True)


def nn(tbl, col, name, db=DB, cat="hive"):
    return T.SQLNotNullConstraint(cat, db, tbl, col, name, True, False, False)


def dc(tbl, col, value, name, db=DB, cat="hive"):
    return T.SQLDefaultConstraint(cat, db, tbl, col, value, name, True, False, False)


def cc(tbl, col, expr, name, db=DB, cat="hive"):
    return T.SQLCheckConstraint(cat, db, tbl, col, expr, name, True, False, False)


def _name(value):
    return "<generated>" if isinstance(value, str) and GENERATED.match(value) else value


def _shape(value):
    """Every field of each row, generated names replaced by their form; lists in order."""
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, (T.SQLUniqueConstraint, T.SQLNotNullConstraint, T.SQLDefaultConstraint,
                          T.SQLCheckConstraint, T.SQLPrimaryKey, T.SQLForeignKey)):
        return (type(value).__name__,) + tuple(
            _name(getattr(value, f[2])) for f in value.thrift_spec if f is not None)
    if isinstance(value, T.SQLAllTableConstraints):
        return tuple(_shape(getattr(value, f[2])) for f in value.thrift_spec if f is not None)
    fields = [f[2] for f in getattr(value, "thrift_spec", ()) or () if f is not None]
    if len(fields) == 1:
        return _shape(getattr(value, fields[0]))
    return repr(value)


def _get(c, kind, tbl, db=DB, cat="hive"):
    if kind == "uk":
        return c.get_unique_constraints(T.UniqueConstraintsRequest(cat, db, tbl))
    if kind == "nn":
        return c.get_not_null_constraints(T.NotNullConstraintsRequest(cat, db, tbl))
    if kind == "dc":
        return c.get_default_constraints(T.DefaultConstraintsRequest(cat, db, tbl))
    if kind == "cc":
        return c.get_check_constraints(T.CheckConstraintsRequest(cat, db, tbl))
    return c.get_all_table_constraints(T.AllTableConstraintsRequest(db, tbl, cat))


def _drop(c, tbl, name, db=DB, cat="hive"):
    return c.drop_constraint(T.DropConstraintRequest(db, tbl, name, cat))


def cases(c) -> list:
    """(label, call) in order: later calls depend on earlier ones."""
    pk = T.SQLPrimaryKey(DB, "t1", "id", 1, "t1_pk", True, False, True, "hive")
    return [
        ("create_database", lambda: c.create_database(T.Database(DB, None, None, {},
                                                                 catalogName="hive"))),
        ("create_table t1", lambda: c.create_table(_table("t1"))),
        ("create_table t2", lambda: c.create_table(_table("t2"))),
        ("get uk empty", lambda: _get(c, "uk", "t1")),
        ("get all empty", lambda: _get(c, "all", "t1")),
        # unique
        ("add uk", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("t1", "id", "t1_uk")]))),
        ("get uk", lambda: _get(c, "uk", "t1")),
        ("add uk two columns", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("t2", "id", "t2_uk", 1), uk("t2", "name", "t2_uk", 2)]))),
        ("get uk two columns", lambda: _get(c, "uk", "t2")),
        ("add uk same name", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("t1", "name", "t1_uk")]))),
        ("add uk name of another table's", lambda: c.add_unique_constraint(
            T.AddUniqueConstraintRequest([uk("t1", "price", "t2_uk")]))),
        ("add uk generated name", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("t1", "price", None)]))),
        ("add uk upper case", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("T1", "Name", "T1_UK_UPPER")]))),
        ("add uk partition column", lambda: c.add_unique_constraint(
            T.AddUniqueConstraintRequest([uk("t1", "ds", "t1_uk_ds")]))),
        ("get uk after", lambda: _get(c, "uk", "t1")),
        ("get uk upper case", lambda: _get(c, "uk", "T1", "CSTR_DB")),
        ("add uk missing table", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("nope", "id", "nope_uk")]))),
        ("add uk missing column", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("t1", "nope", "t1_uk_nope")]))),
        ("add uk missing database", lambda: c.add_unique_constraint(
            T.AddUniqueConstraintRequest([uk("t1", "id", "x_uk", db="nodb")]))),
        ("add uk empty list", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest([]))),
        ("add uk pk's name", lambda: (c.add_primary_key(T.AddPrimaryKeyRequest([pk])),
                                      c.add_unique_constraint(T.AddUniqueConstraintRequest(
                                          [uk("t2", "price", "t1_pk")])))[1]),
        ("get uk missing table", lambda: _get(c, "uk", "nope")),
        ("get uk missing database", lambda: _get(c, "uk", "t1", "nodb")),
        # not null
        ("add nn", lambda: c.add_not_null_constraint(T.AddNotNullConstraintRequest(
            [nn("t1", "name", "t1_nn")]))),
        ("add nn generated", lambda: c.add_not_null_constraint(T.AddNotNullConstraintRequest(
            [nn("t1", "price", None)]))),
        ("add nn same name", lambda: c.add_not_null_constraint(T.AddNotNullConstraintRequest(
            [nn("t1", "id", "t1_nn")]))),
        ("add nn uk's name", lambda: c.add_not_null_constraint(T.AddNotNullConstraintRequest(
            [nn("t1", "id", "t1_uk")]))),
        ("add nn missing table", lambda: c.add_not_null_constraint(
            T.AddNotNullConstraintRequest([nn("nope", "id", "x_nn")]))),
        ("add nn missing column", lambda: c.add_not_null_constraint(
            T.AddNotNullConstraintRequest([nn("t1", "nope", "x_nn")]))),
        ("add nn partition column", lambda: c.add_not_null_constraint(
            T.AddNotNullConstraintRequest([nn("t2", "ds", "t2_nn_ds")]))),
        ("add nn two at once, the second bad", lambda: c.add_not_null_constraint(
            T.AddNotNullConstraintRequest([nn("t2", "id", "t2_nn"), nn("t2", "nope", "t2_nn2")]))),
        ("get nn t2", lambda: _get(c, "nn", "t2")),
        ("get nn", lambda: _get(c, "nn", "t1")),
        # default
        ("add dc", lambda: c.add_default_constraint(T.AddDefaultConstraintRequest(
            [dc("t1", "name", "'none'", "t1_dc")]))),
        ("add dc generated", lambda: c.add_default_constraint(T.AddDefaultConstraintRequest(
            [dc("t1", "price", "0.0", None)]))),
        ("add dc same name", lambda: c.add_default_constraint(T.AddDefaultConstraintRequest(
            [dc("t1", "id", "1", "t1_dc")]))),
        ("add dc missing column", lambda: c.add_default_constraint(
            T.AddDefaultConstraintRequest([dc("t1", "nope", "1", "x_dc")]))),
        ("add dc missing table", lambda: c.add_default_constraint(
            T.AddDefaultConstraintRequest([dc("nope", "id", "1", "x_dc")]))),
        ("get dc", lambda: _get(c, "dc", "t1")),
        # check
        ("add cc", lambda: c.add_check_constraint(T.AddCheckConstraintRequest(
            [cc("t1", "price", "price > 0", "t1_cc")]))),
        ("add cc generated", lambda: c.add_check_constraint(T.AddCheckConstraintRequest(
            [cc("t1", "id", "id < 100", None)]))),
        ("add cc no column", lambda: c.add_check_constraint(T.AddCheckConstraintRequest(
            [cc("t1", None, "id < price", "t1_cc_table")]))),
        ("add cc same name", lambda: c.add_check_constraint(T.AddCheckConstraintRequest(
            [cc("t1", "id", "id > 1", "t1_cc")]))),
        ("add cc missing table", lambda: c.add_check_constraint(T.AddCheckConstraintRequest(
            [cc("nope", "id", "id > 1", "x_cc")]))),
        ("add cc missing column", lambda: c.add_check_constraint(T.AddCheckConstraintRequest(
            [cc("t1", "nope", "nope > 1", "x_cc")]))),
        ("get cc", lambda: _get(c, "cc", "t1")),
        ("get all", lambda: _get(c, "all", "t1")),
        ("get_primary_keys", lambda: c.get_primary_keys(T.PrimaryKeysRequest(DB, "t1", "hive"))),
        # dropping them
        ("drop uk", lambda: _drop(c, "t1", "t1_uk")),
        ("drop nn", lambda: _drop(c, "t1", "t1_nn")),
        ("drop dc", lambda: _drop(c, "t1", "t1_dc")),
        ("drop cc", lambda: _drop(c, "t1", "t1_cc")),
        ("drop upper case", lambda: _drop(c, "t1", "T1_UK_UPPER")),
        ("drop again", lambda: _drop(c, "t1", "t1_uk")),
        ("drop missing table", lambda: _drop(c, "nope", "t1_uk")),
        ("drop of another table", lambda: _drop(c, "t1", "t2_uk")),
        ("get all after drops", lambda: _get(c, "all", "t1")),
        # with the table
        ("create_table_with_constraints", lambda: c.create_table_with_constraints(
            _table("t3"), [], [], [uk("t3", "id", "t3_uk")], [nn("t3", "name", "t3_nn")],
            [dc("t3", "price", "1.5", "t3_dc")], [cc("t3", "price", "price > 1", "t3_cc")])),
        ("get all t3", lambda: _get(c, "all", "t3")),
        ("create_table_with_constraints a taken name", lambda: c.create_table_with_constraints(
            _table("t4"), [], [], [uk("t4", "id", "t3_uk")], [], [], [])),
        ("t4 after the failure", lambda: c.get_table_req(T.GetTableRequest(
            DB, "t4", catName="hive")).table.tableName),
        ("create_table_with_constraints missing column", lambda:
            c.create_table_with_constraints(_table("t5"), [], [], [],
                                            [nn("t5", "nope", "t5_nn")], [], [])),
        ("create_table_req", lambda: c.create_table_req(T.CreateTableRequest(
            _table("t6"), notNullConstraints=[nn("t6", "id", "t6_nn")],
            checkConstraints=[cc("t6", "id", "id > 0", None)]))),
        ("get all t6", lambda: _get(c, "all", "t6")),
        ("rename t6", lambda: c.alter_table_with_environment_context(
            DB, "t6", _renamed(c, "t6", "t7"), None)),
        ("get all t7", lambda: _get(c, "all", "t7")),
        ("get nn t6", lambda: _get(c, "nn", "t6")),
        ("drop_table t7", lambda: c.drop_table(DB, "t7", True)),
        ("create_table t7 again", lambda: c.create_table(_table("t7"))),
        ("get all t7 again", lambda: _get(c, "all", "t7")),
        ("a name freed by the drop", lambda: c.add_not_null_constraint(
            T.AddNotNullConstraintRequest([nn("t7", "id", "t6_nn")]))),
        # in a second catalog
        ("create_catalog", lambda: c.create_catalog(T.CreateCatalogRequest(T.Catalog(
            CAT, None, "file:/tmp/hms-cstr-catalog")))),
        ("create_database in it", lambda: c.create_database(T.Database(
            DB, None, None, {}, catalogName=CAT))),
        ("create_table in it", lambda: c.create_table(_table("t1", cat=CAT))),
        ("add uk in it", lambda: c.add_unique_constraint(T.AddUniqueConstraintRequest(
            [uk("t1", "id", "t1_uk", cat=CAT)]))),
        ("add nn in it", lambda: c.add_not_null_constraint(T.AddNotNullConstraintRequest(
            [nn("t1", "id", "t1_nn", cat=CAT)]))),
        ("get all in it", lambda: _get(c, "all", "t1", cat=CAT)),
        ("get uk hive's", lambda: _get(c, "uk", "t1")),
        ("drop nn in it", lambda: _drop(c, "t1", "t1_nn", cat=CAT)),
        ("get nn in it", lambda: _get(c, "nn", "t1", cat=CAT)),
        ("drop_database in it", lambda: c.drop_database(f"@{CAT}#{DB}", True, True)),
        ("drop_catalog", lambda: c.drop_catalog(T.DropCatalogRequest(CAT))),
        ("drop_database", lambda: c.drop_database(DB, True, True)),
    ]


def _renamed(c, old, new):
    table = c.get_table_req(T.GetTableRequest(DB, old, catName="hive")).table
    table.tableName = new
    return table


def answers(client) -> list:
    """(label, answer) of every case on ``client``, a connection that speaks Hive 4."""
    out = []
    for label, call in cases(client):
        try:
            out.append((label, ("ok", _shape(call()))))
        except Exception as exc:  # noqa: BLE001 - the error is the answer compared
            message = getattr(exc, "message", None) or str(exc)
            out.append((label, ("error", type(exc).__name__, message)))
    return out
