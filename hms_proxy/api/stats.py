"""The column statistics query API over HTTP (:mod:`stats.query`).

At the table level (no ``partition``) or of one partition (Hive's name ``k=v/k2=v2`` or
``k=v,k2=v2``): the summary rows of chosen columns, the top-N frequencies of a discrete column,
the histogram bins of a numeric, date or timestamp column over an optional range. Each lookup
opens the table's pointers at the ref in one snapshot, then reads only the parquet parts it
needs. pyarrow is imported by the first statistics request, not at the server's start.
"""
from __future__ import annotations

from hms_proxy.api.auth import READ
from hms_proxy.api.catalog import name_param
from hms_proxy.api.errors import ApiError, bad_request
from hms_proxy.api.request import Request, page
from stats import layout
from stats.query import QueryError, as_number, open_table, result_rows

MAX_TOP = 1000
UNITS = {"date": "days since 1970-01-01", "timestamp": "microseconds since the epoch (UTC)"}


def _open(app, req: Request, operation: str):

    db, tbl = name_param(req, "db"), name_param(req, "table")
    ref = req.ref("ref", app.default_ref)
    app.policy.check(req.caller, ref, READ, operation, f"{db}.{tbl}")
    return open_table(app.store, f"{db}.{tbl}", ref=ref)


def _partition(ts, req: Request) -> str | None:
    spec = req.text("partition", max_length=1000)
    if spec is None or not spec.strip():
        return None
    return ts.partition_name(spec)


def _head(ts, partition) -> dict:
    return {"table": ts.qualified, "ref": ts.ref, "commit": ts.commit, "partition": partition}


def overview(app, req: Request):
    """Which statistics a table has at a ref: its columns (with what each can show), how many
    partitions have a set, whether there is a table-level answer and where it comes from."""

    ts = _open(app, req, "get_statistics")
    try:
        source, stale = ts.source(None), ts.is_stale(None)
    except QueryError:
        source, stale = None, None
    columns = [{"name": n, "type": t, "discrete": layout.is_discrete(t),
                "numeric": layout.is_numeric(t),
                "unit": UNITS.get(layout.base_type(t))} for n, t in ts.columns]
    return 200, {**_head(ts, None), "partitioned": ts.partitioned, "columns": columns,
                 "partition_sets": len(ts.partitions()) if ts.partitioned else 0,
                 "table_level": ts.pointer(None) is not None, "available": source is not None,
                 "source": source, "stale": stale}


def partitions(app, req: Request):
    ts = _open(app, req, "get_statistics")
    offset, limit = req.paging()
    names = ts.partitions() if ts.partitioned else []
    return 200, {**_head(ts, None), "partitions": names[offset:offset + limit],
                 **page(names, offset, limit)}


def summary(app, req: Request):

    ts = _open(app, req, "get_statistics")
    text = req.text("columns", max_length=10_000)
    columns = None
    if text is not None and text.strip():
        columns = [c.strip() for c in text.split(",") if c.strip()]
    partition = _partition(ts, req)
    table = ts.summary(columns, partition)
    return 200, {**_head(ts, partition), "source": ts.source(partition),
                 "stale": ts.is_stale(partition), "rows": result_rows(table)}


def top(app, req: Request):

    ts = _open(app, req, "get_statistics")
    column = req.text("column", required=True, max_length=300).strip().lower()
    n = req.integer("n", 10, 0, MAX_TOP)
    partition = _partition(ts, req)
    table = ts.top(column, n, partition)
    dup = (table.schema.metadata or {}).get(b"duplicates_only") == b"true"
    return 200, {**_head(ts, partition), "column": column, "n": n, "duplicates_only": dup,
                 "values": [{"value": None if r["value"] is None else str(r["value"]),
                             "frequency": int(r["frequency"])} for r in result_rows(table)]}


def histogram(app, req: Request):

    ts = _open(app, req, "get_statistics")
    column = req.text("column", required=True, max_length=300).strip().lower()
    lo = (req.text("lo", max_length=100) or "").strip() or None
    hi = (req.text("hi", max_length=100) or "").strip() or None
    partition = _partition(ts, req)
    ctype = ts.column_type(column)  # QueryError (404) for an unknown column
    bounds = []
    for name, value in (("lo", lo), ("hi", hi)):
        try:
            bounds.append(None if value is None else as_number(value, ctype))
        except QueryError as exc:
            raise bad_request(f"'{name}': {exc}") from None
    if None not in bounds and bounds[0] > bounds[1]:
        raise bad_request(f"empty range: lo ({lo}) is above hi ({hi})")
    if not layout.is_numeric(ctype):
        raise ApiError(404, "StatisticsNotFound",
                       f"column {column} ({ctype}) has no histogram: only numeric, date and "
                       "timestamp columns do")
    table = ts.histogram(column, lo, hi, partition)
    bins = [{"lower": r["lower"], "upper": r["upper"], "count": int(r["count"] or 0)}
            for r in result_rows(table)]
    return 200, {**_head(ts, partition), "column": column, "type": ctype,
                 "unit": UNITS.get(layout.base_type(ctype)), "range": {"lo": bounds[0],
                                                                       "hi": bounds[1]},
                 "bins": bins}
