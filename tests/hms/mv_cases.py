"""``get_materialized_views_for_rewriting`` as a Hive 3.1 or 4.x client calls it (the database
name carrying the catalog, ``@hive#db``), sent the same to the stock HMS 3.1.3 or 4.0.1 and to
us: a database with a table, a view, a materialized view that may rewrite queries and one
that may not. What is compared: each answer or error (class and message).
Used by tests/hms/test_catalog_names.py (3.1.3) and tests/hms/test_stock_hms4.py (4.0.1)."""
from __future__ import annotations

from thrift.Thrift import TType

from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import text_table

DB = "mv_cases"


class _Table3(T.Table):
    """A Table as a Hive 3.x/4.x client writes it: field 16 is its creation metadata (a
    materialized view's, which the stock HMS requires to create one), field 17 its catalog."""
    thrift_spec = tuple(
        (16, TType.STRUCT, "creationMetadata", [T.CreationMetadata, None], None)
        if f is not None and f[0] == 16 else f for f in T.Table.thrift_spec)

    def __init__(self, creationMetadata=None, **kw):
        super().__init__(**kw)
        self.creationMetadata = creationMetadata


def _view(name: str, kind: str, rewrite: bool):
    base = text_table(name, DB, kind)
    base.partitionKeys = []
    base.sd.location = None
    base.viewOriginalText = base.viewExpandedText = f"select id, v from {DB}.src"
    table = _Table3(**{k: v for k, v in base.__dict__.items()})
    table.rewriteEnabled = rewrite
    if kind == "MATERIALIZED_VIEW":
        table.creationMetadata = T.CreationMetadata(
            catName="hive", dbName=DB, tblName=name, tablesUsed={f"{DB}.src"})
    return table


def setup(c) -> None:
    c.create_database(T.Database(DB, "", None, {}))
    src = text_table("src", DB)
    src.partitionKeys = []
    c.create_table(src)
    for name, kind, rewrite in (("mv_rewrite", "MATERIALIZED_VIEW", True),
                                ("mv_plain", "MATERIALIZED_VIEW", False),
                                ("a_view", "VIRTUAL_VIEW", False)):
        c.create_table(_view(name, kind, rewrite))


CASES = [
    ("the database", "@hive#" + DB),
    ("mixed case", "@hive#MV_Cases"),
    ("a database that does not exist", "@hive#mv_nope"),
    ("a catalog that does not exist", "@nosuch#" + DB),
    ("default", "@hive#default"),
]


def run(c) -> list:
    setup(c)
    out = []
    for label, name in CASES:
        try:
            answer = ("ok", c.get_materialized_views_for_rewriting(name))
        except Exception as exc:  # noqa: BLE001 - the error is the answer compared
            answer = ("error", type(exc).__name__, getattr(exc, "message", str(exc)))
        out.append((label, answer))
    return out
