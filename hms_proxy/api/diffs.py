"""The contextual diff and the merge over HTTP.

A diff (:func:`kvmodel.versioning.diff_refs`) is answered grouped as ``hms-proxy diff`` prints
it: one *group* per database (the database's own change, its functions and other database-level
items) and per table (the table's own change with its fields, and what lies under it --
partitions, client-written column statistics, statistics-set pointers -- rolled up into
added/removed/modified counts per kind). Groups are paged; the changes under one table are
listed, paged and filtered by name, by ``/diff/children``. Reports are cached by the two refs'
content tokens, so paging through a large diff computes it once.

A merge runs the store's pre-merge hooks (:func:`kvmodel.hooks.merge_with_hooks`), as
``hms-proxy merge`` does; conflicts are data: a dry run lists them with a 200, a merge they
stop answers 409 with them.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from hms_proxy.api.auth import READ, WRITE
from hms_proxy.api.errors import ApiError, bad_request
from hms_proxy.api.request import Request, page
from kvmodel.catalog import path_prefix, table_key
from kvmodel.hooks import merge_with_hooks
from kvmodel.merge import STRATEGIES
from kvmodel.store.errors import MergeConflict
from kvmodel import iceberg_diff
from kvmodel.versioning import diff_refs

TOP_KINDS = ("database", "function", "database_item")
GLOBAL_KINDS = ("role", "other")
CHANGES = ("added", "removed", "modified")
MAX_APPLIED = 200      # applied entity changes listed in a merge answer (all are counted)
MAX_CONFLICTS = 1000   # conflicts listed in a merge answer (all are counted)
CACHED_REPORTS = 8


def counts() -> dict:
    return {"added": 0, "removed": 0, "modified": 0}


def child_kind(change) -> str:
    """The roll-up kind of a change under a table: the engine's kind, except statistics-set
    pointers (``.../stats/<partition>``), which are ``statistics``."""
    if change.kind == "table_item" and len(change.path) > 2 and \
            str(change.path[2]).startswith("stats/"):
        return "statistics"
    return change.kind


def child_name(change) -> str:
    """The name of a change under a table: the partition's Hive name, ``<partition>/<column>``
    for partition column statistics, the column for table column statistics."""
    rest = [str(p) for p in change.path[2:]]
    if child_kind(change) == "statistics":
        rest[0] = rest[0][len("stats/"):]
    return "/".join(rest)


def change_json(change) -> dict:
    return {"kind": change.kind, "path": [str(p) for p in change.path], "change": change.change,
            "key": change.key, "fields": [_field_json(f) for f in change.fields]}


def _field_json(f) -> dict:
    return {"field": f.field, "before": _plain(f.before), "after": _plain(f.after)}


def _plain(value):
    """A JSON value (the engine's values are JSON-able already; tuples and sets become lists)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return str(value)


# --- computing and caching reports -----------------------------------------------------------
class ReportCache:
    """The last few diff reports, by (left token, right token, prefix)."""

    def __init__(self, size: int = CACHED_REPORTS):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store, left: str, right: str, prefix: str):

        try:
            key = (store.token(left), store.token(right), prefix)
            hash(key)
        except TypeError:
            key = None
        if key is not None and None not in key[:2]:
            with self._lock:
                hit = self._items.get(key)
                if hit is not None:
                    self._items.move_to_end(key)
                    return hit
        report = diff_refs(store, left, right, prefix)
        if key is not None and None not in key[:2]:
            with self._lock:
                self._items[key] = report
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return report


def _prefix(path: str | None) -> str:
    if not path:
        return ""
    try:
        return path_prefix(path)
    except ValueError:
        raise bad_request(
            f"'path' takes DB, DB.TABLE or @CATALOG#DB[.TABLE], not {path!r}") from None


def _under(key: str, prefix: str) -> bool:
    return not prefix or key == prefix or key.startswith(prefix + "/")


def _resolved(store, ref: str) -> dict:
    resolved = store.resolve(ref)
    return {"ref": ref, "commit": resolved.commit, "branch": resolved.branch}


def diff_page(app, left: str, right: str, path: str | None, offset: int, limit: int) -> dict:
    """One page of the grouped diff from ``left`` to ``right`` (see the module docstring)."""
    store = app.store
    prefix = _prefix(path)
    sides = {"left": _resolved(store, left), "right": _resolved(store, right)}
    report = app.reports.get(store, left, right, prefix)
    groups: dict = {}
    tables: dict = {}
    global_changes, totals = [], {}
    for change in report.changes:
        if not _under(change.key, prefix):
            continue  # db.orders must not bring db.orders2 along
        totals.setdefault(child_kind(change), counts())[change.change] += 1
        path_ = change.path
        if change.kind in GLOBAL_KINDS or not path_:
            global_changes.append(change_json(change))
            continue
        db = str(path_[0])
        table = None if change.kind in TOP_KINDS else str(path_[1])
        group = groups.get((db, table))
        if group is None:
            group = groups[(db, table)] = {"db": db, "table": table, "changes": [],
                                           "children": {}, "partitions": counts(),
                                           "iceberg": None}
        if change.kind in TOP_KINDS or change.kind == "table":
            group["changes"].append(change_json(change))
            if change.kind == "table":
                tables[(db, table)] = change
        else:
            kind = child_kind(change)
            group["children"].setdefault(kind, counts())[change.change] += 1
            if kind == "partition":
                group["partitions"][change.change] += 1
    ordered = [groups[k] for k in sorted(groups, key=lambda k: (k[0], k[1] is not None,
                                                                 k[1] or ""))]
    shown = ordered[offset:offset + limit]
    # the page's Iceberg tables in Iceberg's terms: their two metadata files read
    iceberg = iceberg_diff.for_changes(
        store, [tables[(g["db"], g["table"])] for g in shown if (g["db"], g["table"]) in tables],
        left, right)
    for group in shown:
        summary = iceberg.get(f"{group['db']}.{group['table']}")
        if summary is not None:
            group["iceberg"] = {**summary, "lines": [summary["error"]] if "error" in summary
                                else iceberg_diff.text(summary)}
    return {**sides, "path": path or None, "totals": totals, "global": global_changes,
            "groups": shown, **page(ordered, offset, limit)}


# --- handlers ----------------------------------------------------------------------------------
def _two_refs(app, req: Request, operation: str) -> tuple[str, str]:
    left, right = req.ref("left"), req.ref("right")
    for ref in (left, right):
        app.policy.check(req.caller, ref, READ, operation, f"{left}..{right}")
    return left, right


def diff(app, req: Request):
    left, right = _two_refs(app, req, "diff")
    path = req.text("path", max_length=600)
    offset, limit = req.paging()
    return 200, diff_page(app, left, right, path, offset, limit)


def diff_children(app, req: Request):
    """The changes under one table (``kind``: partition by default, or all), with their
    fields, paged, optionally only those whose name holds ``filter``."""
    left, right = _two_refs(app, req, "diff")
    db, table = req.text("db", required=True).lower(), req.text("table", required=True).lower()
    if "/" in db or "/" in table:
        raise bad_request("'db' and 'table' are names, without '/'")
    kind = req.text("kind", "partition")
    if kind not in CHILD_KINDS:
        raise bad_request(f"'kind' is one of {', '.join(CHILD_KINDS)}, not {kind!r}")
    needle = (req.text("filter", "", max_length=300) or "").lower()
    offset, limit = req.paging()

    prefix = table_key(db, table) + "/"
    store = app.store
    sides = {"left": _resolved(store, left), "right": _resolved(store, right)}
    report = app.reports.get(store, left, right, prefix)
    items = []
    for change in report.changes:
        if len(change.path) < 3 or (kind != "all" and child_kind(change) != kind):
            continue
        name = child_name(change)
        if needle and needle not in name.lower():
            continue
        items.append({"name": name, "child_kind": child_kind(change), **change_json(change)})
    return 200, {**sides, "db": db, "table": table, "kind": kind, "filter": needle or None,
                 "changes": items[offset:offset + limit], **page(items, offset, limit)}


CHILD_KINDS = ("partition", "statistics", "table_column_stats", "partition_column_stats",
               "table_item", "all")


def merge(app, req: Request):

    body = req.fields({"source": (str, True), "dest": (str, True), "strategy": (str, False),
                       "dry_run": (bool, False), "message": (str, False, True)})
    source, dest = body["source"].strip(), body["dest"].strip()
    strategy = body.get("strategy", "fail")
    if strategy not in STRATEGIES:
        raise bad_request(f"'strategy' is one of {', '.join(STRATEGIES)}, not {strategy!r}")
    dry_run = body.get("dry_run", False)
    caller = req.caller
    what = f"{source} into {dest}"
    app.policy.check(caller, source, READ, "merge", what)
    app.policy.check(caller, dest, READ if dry_run else WRITE, "merge", what)
    if store_branch(app.store, dest) is None:
        raise ApiError(409, "ReadOnlyRef", f"{dest!r} is not a branch: merges go into a branch")
    author = caller.identity or "anonymous"
    metadata = {"via": "http", "auth": caller.auth}

    def run():
        return merge_with_hooks(app.store, app.store_path, source, dest, strategy=strategy,
                                dry_run=dry_run, author=author, message=body.get("message"),
                                metadata=metadata)

    try:
        result = run() if dry_run else app.policy.write(caller, dest, "merge", what, run)
    except MergeConflict as exc:
        answer = merge_json(exc.result, strategy, dry_run)
        n = answer["conflicts_total"]
        raise ApiError(409, "MergeConflict",
                       f"merge of {source} into {dest} stopped: {n} conflict"
                       f"{'' if n == 1 else 's'} (nothing committed; strategy source-wins or "
                       "dest-wins resolves them)", extra={"merge": answer}) from None
    return 200, merge_json(result, strategy, dry_run)


def store_branch(store, name: str):
    resolved = store.resolve(name)
    return resolved.branch


def merge_json(result, strategy: str, dry_run: bool) -> dict:

    applied = sorted(result.applied or [], key=lambda c: c.key)
    by_kind: dict = {}
    for change in applied:
        by_kind.setdefault(child_kind(change), counts())[change.change] += 1
    conflicts = list(result.conflicts or [])
    blocking = bool(conflicts) and strategy == "fail"
    return {
        "source": result.source, "dest": result.dest, "base": result.base,
        "strategy": strategy, "dry_run": dry_run,
        "commit": result.commit.to_json() if result.commit is not None else None,
        "mergeable": not blocking,
        "up_to_date": not applied and not blocking,
        "resolved_by": result.resolved_by,
        "conflicts_total": len(conflicts),
        "conflicts": [_conflict_json(c) for c in conflicts[:MAX_CONFLICTS]],
        "applied": {"total": len(applied), "by_kind": by_kind,
                    "changes": [change_json(c) for c in applied[:MAX_APPLIED]],
                    "truncated": len(applied) > MAX_APPLIED},
        "iceberg": [p.to_json() for p in getattr(result, "iceberg", None) or ()],
        "iceberg_commit": (result.iceberg_commit.to_json()
                           if getattr(result, "iceberg_commit", None) is not None else None),
        "anchored": [a.to_json() for a in getattr(result, "anchored", None) or ()],
        "anchor_commit": (result.anchor_commit.to_json()
                          if getattr(result, "anchor_commit", None) is not None else None),
    }


def _conflict_json(conflict) -> dict:
    return {"type": str(conflict.type), "kind": str(conflict.kind),
            "path": [str(p) for p in conflict.path or ()],
            "fields": [str(getattr(f, "field", f)) for f in conflict.fields or ()],
            "source": _plain(conflict.source), "dest": _plain(conflict.dest),
            "key": conflict.key or ""}
