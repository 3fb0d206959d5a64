"""get_table_names_by_filter, as HMS 2.3's ObjectStore.listTableNamesByFilter answers it.

The filter is HMS's partition filter language (:mod:`hms_proxy.hms.filters` parses it, with HMS's
parse errors), but its keys are table fields (``ExpressionTree.LeafNode.
generateJDOFilterOverTables``): ``hive_filter_field_owner__``, ``hive_filter_field_last_access__``
and ``hive_filter_field_params__<key>`` (keys matched case-sensitively). Any other key, LIKE on
the last access time, an operator other than ``=``, ``<>``, ``!=`` and LIKE on a parameter, and
a literal written before LIKE fail with HMS's MetaException, whatever the tables are. The
comparisons are SQL's on Derby: strings compared padded (``sql_compare``), a missing owner or
parameter matches nothing, a number compared with the owner or a parameter is compared as its
text, LIKE is DataNucleus's translation of ``String.matches`` (``(?i)`` lower-cases both sides).
A missing database has no tables; ``max_tables`` < 0 means all.
"""
from __future__ import annotations

import datetime as _dt
import operator
import re

from hms_proxy.hms import names
from hms_proxy.hms.family import Family, lower
from hms_proxy.hms.filters import Leaf, parse_filter, sql_compare
from hms_proxy.thrift import dialect, errors
from kvmodel.catalog import CATALOG_DOT

OWNER = "hive_filter_field_owner__"
LAST_ACCESS = "hive_filter_field_last_access__"
PARAMS = "hive_filter_field_params__"
PARAM_OPS = ("=", "<>", "!=", "LIKE")
PARAM_OPS_TEXT = "[LIKE, <>, =, !=]"  # a Java HashSet of enums: its order is HMS's on one run
_CMP = {"=": operator.eq, "<>": operator.ne, "!=": operator.ne, "<": operator.lt,
        "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _text(value) -> str:
    if isinstance(value, _dt.date):
        return value.isoformat()
    return str(value)


def _like(pattern: str):
    if pattern.startswith("(?i)"):
        tokens = [(k, t.lower()) for k, t in names.regex_to_like(pattern[4:])]
        regex = re.compile(names.like_regex(tokens), re.S)
        return lambda v: regex.fullmatch(v.lower()) is not None
    regex = re.compile(names.like_regex(names.regex_to_like(pattern)), re.S)
    return lambda v: regex.fullmatch(v) is not None


def _string_test(leaf: Leaf, jdo_key: str):
    """A predicate over a string column's value (None: SQL NULL, never matches)."""
    if leaf.op == "LIKE":
        if leaf.reverse:
            raise errors.MetaError(f"Value should be on the RHS for LIKE operator : Key <{jdo_key}>")
        like = _like(_text(leaf.value))
        return lambda v: v is not None and like(v)
    lit = _text(leaf.value)
    op = _FLIP.get(leaf.op, leaf.op) if leaf.reverse else leaf.op
    test = _CMP[op]
    return lambda v: v is not None and test(sql_compare(v, lit), 0)


def _int_test(leaf: Leaf):
    """lastAccessTime (an int column): compared as numbers; a string literal never equals
    it and always differs from it (DataNucleus's type-mismatch answers), and orders as the
    number it spells."""
    value = leaf.value
    op = _FLIP.get(leaf.op, leaf.op) if leaf.reverse else leaf.op
    if isinstance(value, str):
        if op == "=":
            return lambda v: False
        if op in ("<>", "!="):
            return lambda v: True
        try:
            value = int(value.strip())
        except ValueError:
            raise errors.MetaError(f"Cannot compare lastAccessTime with '{value}'") from None
    elif isinstance(value, _dt.date):
        raise errors.MetaError(f"Cannot compare lastAccessTime with a date {value}")
    test = _CMP[op]
    return lambda v: test(v or 0, value)


def _leaf_predicate(leaf: Leaf):
    key = leaf.key
    if key == OWNER:
        test = _string_test(leaf, "this.owner")
        return lambda table: test(table.owner)
    if key == LAST_ACCESS:
        if leaf.op == "LIKE":
            raise errors.MetaError("Like is not supported for HIVE_FILTER_FIELD_LAST_ACCESS")
        test = _int_test(leaf)
        return lambda table: test(table.lastAccessTime)
    if key.startswith(PARAMS):
        if leaf.op not in PARAM_OPS:
            raise errors.MetaError(f"Only {PARAM_OPS_TEXT} are supported operators for "
                                   "HIVE_FILTER_FIELD_PARAMS")
        param = key[len(PARAMS):]
        test = _string_test(leaf, f'this.parameters.get("{param}")')
        return lambda table: test((table.parameters or {}).get(param))
    raise errors.MetaError("Invalid key name in filter.  "
                           "Use constants from org.apache.hadoop.hive.metastore.api")


def _predicate(node):
    """The filter over a Table, built left to right like HMS's JDO filter (so the first
    offending leaf raises)."""
    if node is None:
        return lambda table: True
    if isinstance(node, Leaf):
        return _leaf_predicate(node)
    lhs, rhs = _predicate(node.lhs), _predicate(node.rhs)
    if node.op == "AND":
        return lambda table: lhs(table) and rhs(table)
    return lambda table: lhs(table) or rhs(table)


class TableFilterCalls(Family):
    def get_table_names_by_filter(self, ctx, dbname, filter_text, max_tables):
        if not dbname or (dbname.startswith(CATALOG_DOT) and dialect.hive4()):
            # (a 4.x client's ``@#db``, an empty catalog, is such a name to the 4.x)
            raise errors.UnknownDB("DB name is null or empty")
        if filter_text is None:
            raise errors.InvalidOperation("null cannot apply null filter")
        matches = _predicate(parse_filter(filter_text).root)
        db = lower(dbname)
        limit = max_tables if max_tables is not None and max_tables >= 0 else None
        out: list[str] = []
        with self.reading(ctx) as cat:
            for name in cat.table_names(db):
                if limit is not None and len(out) >= limit:
                    break
                table = cat.table(db, name)
                if table is not None and matches(table):
                    out.append(name)
        return out
