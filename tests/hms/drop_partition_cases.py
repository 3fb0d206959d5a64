"""``drop_partition`` (by values and by name) as Hive clients call it, sent the same to a stock
HMS and to us: each case in a database of its own with a managed table partitioned by (year,
month) holding 2017/march, 2017/april and 2018/march (files in each), and an external one.
What is compared: the answer or error, then the partitions left and which directories exist
(the partitions', their parents', the table's). Used by test_catalog_names.py (3.1.3),
test_stock_hms4.py (4.0.1) and test_stock_hms23_answers.py (2.3.10)."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

PARTS = (("2017", "march"), ("2017", "april"), ("2018", "march"))
KEYS = [T.FieldSchema("year", "string", None), T.FieldSchema("month", "string", None)]


def _q(db, generation):
    if generation < 3:
        return db
    return "@hive#" + ("" if db is None else db or "!")


def _table(db, name, kind):
    t = text_table(name, db, kind)
    t.partitionKeys = list(KEYS)
    t.sd.location = None
    return t


def _create(c, table, generation):
    if generation >= 4:
        c.create_table_req(T.CreateTableRequest(table=table))
    else:
        c.create_table(table)


def _setup(c, db, generation):
    c.create_database(T.Database(db, "", None, {}))
    _create(c, _table(db, "t", "MANAGED_TABLE"), generation)
    _create(c, _table(db, "ext", "EXTERNAL_TABLE"), generation)
    for name in ("t", "ext"):
        t = c.get_table(db, name) if generation < 4 else \
            c.get_table_req(T.GetTableRequest(db, name)).table
        for values in PARTS:
            sd = t.sd
            sd.location = None
            c.add_partition(T.Partition(list(values), db, name, 0, 0, sd, {}))
        for p in c.get_partitions(db, name, -1):
            path = urlparse(p.sd.location).path
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "000000_0"), "w") as f:
                f.write("1\n")


def _state(c, db, generation):
    out = {}
    for name in ("t", "ext"):
        t = c.get_table(db, name) if generation < 4 else \
            c.get_table_req(T.GetTableRequest(db, name)).table
        root = urlparse(t.sd.location).path
        dirs = sorted(os.path.relpath(os.path.join(d, x), root)
                      for d, sub, _ in os.walk(root) for x in sub) if os.path.isdir(root) \
            else None
        out[name] = (sorted(c.get_partition_names(db, name, -1)), dirs)
    return out


def cases() -> list:
    """(label, call(client, db_as_sent)); the table is ``t`` (managed) unless named."""
    return [
        ("values, keep data", lambda c, db: c.drop_partition(db, "t", ["2017", "march"], False)),
        ("values, delete data", lambda c, db: c.drop_partition(db, "t", ["2017", "march"], True)),
        ("values, delete data, external", lambda c, db: c.drop_partition(
            db, "ext", ["2017", "march"], True)),
        ("values, both of a parent", lambda c, db: [
            c.drop_partition(db, "t", ["2017", "march"], True),
            c.drop_partition(db, "t", ["2017", "april"], True)]),
        ("values, missing", lambda c, db: c.drop_partition(db, "t", ["2017", "may"], False)),
        ("values, too few", lambda c, db: c.drop_partition(db, "t", ["2017"], False)),
        ("values, too many", lambda c, db: c.drop_partition(db, "t", ["2017", "march", "x"],
                                                            False)),
        ("values, empty list", lambda c, db: c.drop_partition(db, "t", [], False)),
        ("values, null list", lambda c, db: c.drop_partition(db, "t", None, False)),
        ("values, empty values", lambda c, db: c.drop_partition(db, "t", ["", ""], False)),
        ("values, missing table", lambda c, db: c.drop_partition(db, "nope", ["2017"], False)),
        ("name, keep data", lambda c, db: c.drop_partition_by_name(
            db, "t", "year=2017/month=march", False)),
        ("name, delete data", lambda c, db: c.drop_partition_by_name(
            db, "t", "year=2017/month=march", True)),
        ("name, fewer keys", lambda c, db: c.drop_partition_by_name(db, "t", "year=2017", True)),
        ("name, more keys", lambda c, db: c.drop_partition_by_name(
            db, "t", "year=2017/month=march/day=10", True)),
        ("name, missing", lambda c, db: c.drop_partition_by_name(
            db, "t", "year=2017/month=may", True)),
        ("name, both of a parent", lambda c, db: [
            c.drop_partition_by_name(db, "t", "year=2017/month=march", True),
            c.drop_partition_by_name(db, "t", "year=2017/month=april", True)]),
    ]


def _answer(call):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return ("error", type(exc).__name__, getattr(exc, "message", None) or str(exc))
    return ("ok", value)


def run(connection, generation: int) -> list:
    out = []
    for i, (label, call) in enumerate(cases()):
        db = f"dropp_{i}"
        with connection() as c:
            _setup(c, db, generation)
            answer = _answer(lambda: call(c, _q(db, generation)))
        with connection() as c:
            out.append((label, answer, _state(c, db, generation)))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} {sa!r} / ours {b!r} {sb!r}"
            for (label, a, sa), (_, b, sb) in zip(stock, ours) if (a, sa) != (b, sb)]
