"""Materialized views as Hive 3.1/4.x's query rewriting asks for them.

``get_materialized_views_for_rewriting`` names the materialized views of a database that may
be used to rewrite queries: tables of type ``MATERIALIZED_VIEW`` with ``rewriteEnabled`` set.
As the stock metastore answers it: a database (or a catalog) that does not exist has none, so
the answer is empty, not an error; the names come in name order. The rest of Hive's
materialized-view calls (creation metadata, invalidation, rebuild locks) are not served
(docs/compatibility.md).
"""
from __future__ import annotations

from hms_proxy.hms.family import Family, lower

MATERIALIZED_VIEW = "MATERIALIZED_VIEW"


class MaterializedViewCalls(Family):
    def get_materialized_views_for_rewriting(self, ctx, db_name):
        with self.reading(ctx) as cat:
            if db_name is None:  # a catalog's without a database (``@hive#``): every one's
                dbs = cat.database_names(ctx.catalog)
            else:
                dbs = [lower(db_name)]
            out = []
            for db in dbs:
                for name in cat.table_names(db):
                    table = cat.table(db, name)
                    if table is not None and table.tableType == MATERIALIZED_VIEW \
                            and table.rewriteEnabled:
                        out.append(name)
        return sorted(out)
