"""``get_table_meta`` with the patterns, types and nulls a Hive client sends (a 3.1 or 4.x
client's database pattern carries the catalog: ``@hive#pattern``, a null one ``@hive#``, an
empty one ``@hive#!``), sent the same to a stock HMS and to us. What is compared: the
metas answered (database, table, type, comment, catalog, owner and its type: Hive 4's) among the databases made here.
Used by test_catalog_names.py (3.1.3), test_stock_hms4.py (4.0.1) and test_stock_hms23_answers.py
(2.3.10)."""
from __future__ import annotations

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DBS = ("tmeta_one", "tmeta_two")


def setup(c, generation: int) -> None:
    """Two databases of tables and a view, made as the client of ``generation`` makes them
    (Hive 4's through create_table_req)."""
    for db in DBS:
        c.create_database(T.Database(db, "", None, {}))
    for db, name, kind, comment in (
            ("tmeta_one", "tm_a", "MANAGED_TABLE", "first"),
            ("tmeta_one", "tm_b", "EXTERNAL_TABLE", None),
            ("tmeta_one", "vtm_c", "VIRTUAL_VIEW", ""),
            ("tmeta_two", "tm_d", "EXTERNAL_TABLE", "fourth"),
            ("tmeta_two", "TM_E", "MANAGED_TABLE", None)):
        t = text_table(name, db, kind, params={"comment": comment} if comment is not None
                       else None)
        t.partitionKeys = []
        if kind == "VIRTUAL_VIEW":
            t.viewOriginalText = t.viewExpandedText = "select 1"
            t.sd.location = None
        if generation >= 4:
            c.create_table_req(T.CreateTableRequest(table=t))
        else:
            c.create_table(t)


def _q(pattern, generation: int):
    if generation < 3:
        return pattern
    return "@hive#" + ("" if pattern is None else pattern or "!")


CASES = [
    ("no match", "asdf", "qwerty", ["zxcv"]),
    ("one table", "tmeta_two", "tm_d", []),
    ("all", "*", "*", []),
    ("stars", "***", "**", []),
    ("db suffix", "*one", "*", []),
    ("db infix", "*one*", "*", []),
    ("db prefix", "tmeta_two*", "*", []),
    ("external", "tmeta*", "*", ["EXTERNAL_TABLE"]),
    ("external or view", "tmeta*", "*", ["EXTERNAL_TABLE", "VIRTUAL_VIEW"]),
    ("type pattern", "*one", "*", ["*TABLE"]),
    ("type star", "*one", "*", ["*"]),
    ("mixed case", "*tWo", "tM*", []),
    ("mixed-case type", "*", "*", ["mAnAGeD_tABlE"]),
    ("null db", None, "*", []),
    ("empty db", "", "*", []),
    ("null table", "*", None, []),
    ("empty table", "*", "", []),
    ("empty type", "*", "*", [""]),
    ("null types", "*", "*", None),
    ("either table", "tmeta*", "tm_a|tm_d", None),
]


def run(c, generation: int) -> list:
    setup(c, generation)
    out = []
    for label, dbp, tblp, types in CASES:
        try:
            metas = c.get_table_meta(_q(dbp, generation), tblp, types)
            answer = ("ok", sorted((m.dbName, m.tableName, m.tableType, m.comments, m.catName,
                                    m.ownerName, m.ownerType)
                                   for m in metas if m.dbName in DBS))
        except Exception as exc:  # noqa: BLE001 - the error is the answer compared
            answer = ("error", type(exc).__name__, getattr(exc, "message", str(exc)))
        out.append((label, answer))
    return out
