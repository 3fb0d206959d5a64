"""Bounds on what one REST request may make the server do (docs/iceberg-rest.md, "Limits").

A body is at most :data:`hms_proxy.rest.app.MAX_BODY` bytes; within it, the work a request
costs must follow its size. Parsing and walking the JSON is linear, and so is applying a
commit's updates (:mod:`hms_proxy.rest.catalog` coalesces runs of property updates and
indexes what a commit added); what pyiceberg's metadata model or Iceberg's semantics make
cost more than linear is counted here, on the parsed JSON, before any of it is validated,
locked or applied, and a request over a limit is refused with a 400 ``BadRequestException``
naming the limit. The defaults are far above what pyiceberg, Spark, Trino or DuckDB send.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from hms_proxy.rest import errors

# pyiceberg's schema code recurses per nested type (a worker thread fails past ~70 nested
# structs, JSON depth ~200): 128 is ~40 nested structs, above Hive's own nesting bound
MAX_JSON_DEPTH = 128

# kinds of updates whose application compares with, or scans, what the table has
ADDITIONS = ("add-schema", "add-spec", "add-sort-order", "add-view-version")


@dataclass(frozen=True)
class RestLimits:
    """Per request. ``fields``: fields of every schema a request carries, nested ones
    included (a list's element and a map's key and value count as fields, as their ids do);
    ``updates`` and ``requirements``: per table change; ``additions``: schemas, partition
    specs, sort orders and view versions added by one table change; ``snapshots``: snapshots
    added by one table change; ``table_changes``: tables of one multi-table transaction."""
    depth: int = MAX_JSON_DEPTH
    fields: int = 20_000
    updates: int = 10_000
    requirements: int = 1_000
    additions: int = 100
    snapshots: int = 1_000
    table_changes: int = 1_000

    @classmethod
    def of(cls, **given: int | None) -> "RestLimits":
        """The defaults, with the bounds ``given`` a value (``serve --rest-max-*``; None
        keeps a default)."""
        return cls(**{name: value for name, value in given.items() if value is not None})


DEFAULT = RestLimits()


def too_much(what: str, found: int | str, limit: int) -> errors.RestError:
    return errors.bad_request(f"Request refused: {what} ({found}) exceed this catalog's limit "
                              f"of {limit} per request (docs/iceberg-rest.md, \"Limits\")")


# the keys that name a field in a schema's JSON form (count_fields counts them)
FIELD_IDS = ("id", "element-id", "key-id", "value-id")


class _OverBudget(Exception):
    pass


def parse(raw: bytes, limits: RestLimits = DEFAULT):
    """The JSON value of ``raw``, refused (400) when malformed or nested deeper than
    ``limits.depth``. The C parser stops at the interpreter's recursion limit (a
    RecursionError, no deeper than that), and the depth of what it made is then measured
    without recursion, stopping at the limit.

    While parsing, the objects that carry a field id anywhere in the body are counted, and
    the parse stops once they are more than ``limits.fields + limits.updates`` (the schema
    fields a request may carry, and as many property maps naming a key ``id``): a body of
    200,000 fields is refused having parsed 30,000 of them, not all (the exact count of
    the fields of its schemas is checked after, by :func:`check_create` and the others)."""
    budget = limits.fields + limits.updates
    seen = 0

    def count(obj: dict) -> dict:
        nonlocal seen
        for key in FIELD_IDS:
            if key in obj:
                seen += 1
                if seen > budget:
                    raise _OverBudget
        return obj

    try:
        value = json.loads(raw, object_hook=count)
    except _OverBudget:
        raise too_much("schema fields", f"more than {limits.fields}", limits.fields) from None
    except RecursionError:
        raise _too_deep(limits) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"Malformed JSON body: {exc}") from None
    # a body cannot be deeper than its brackets are many (most bodies: no walk at all)
    if raw.count(b"{") + raw.count(b"[") > limits.depth and _deeper(value, limits.depth):
        raise _too_deep(limits)
    return value


def _too_deep(limits: RestLimits) -> errors.RestError:
    return errors.bad_request(f"Malformed JSON body: nested deeper than {limits.depth} levels "
                              "(this catalog's limit)")


def _deeper(value, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (iteratively)."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def count_fields(schema) -> int:
    """The fields of a schema in its JSON form (nested ones, list elements, map keys and
    values included), counted by their ids without recursion (the depth is bounded already)."""
    found, stack = 0, [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found += sum(1 for key in FIELD_IDS if key in item)
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return found


def check_create(body: dict, limits: RestLimits = DEFAULT) -> None:
    """A createTable or createView request: its schema's fields."""
    _fields([body.get("schema")] if isinstance(body, dict) else [], limits)


def check_commit(body: dict, limits: RestLimits = DEFAULT) -> None:
    """A table's or a view's commit (one table change of a transaction alike)."""
    if not isinstance(body, dict):
        return
    updates = body.get("updates")
    updates = updates if isinstance(updates, list) else []
    requirements = body.get("requirements")
    if isinstance(requirements, list) and len(requirements) > limits.requirements:
        raise too_much("requirements", len(requirements), limits.requirements)
    if len(updates) > limits.updates:
        raise too_much("updates", len(updates), limits.updates)
    actions = [u.get("action") for u in updates if isinstance(u, dict)]
    added = sum(1 for a in actions if a in ADDITIONS)
    if added > limits.additions:
        raise too_much("schemas, specs, sort orders and view versions added", added,
                       limits.additions)
    snapshots = actions.count("add-snapshot")
    if snapshots > limits.snapshots:
        raise too_much("snapshots added", snapshots, limits.snapshots)
    schemas = [u.get("schema") for u in updates if isinstance(u, dict)
               and u.get("action") == "add-schema"]
    _fields(schemas, limits)


def check_transaction(body: dict, limits: RestLimits = DEFAULT) -> None:
    changes = body.get("table-changes") if isinstance(body, dict) else None
    if not isinstance(changes, list):
        return
    if len(changes) > limits.table_changes:
        raise too_much("table changes", len(changes), limits.table_changes)
    for change in changes:
        check_commit(change, limits)
    # the fields of every schema of the transaction together
    _fields([u.get("schema") for c in changes if isinstance(c, dict)
             for u in (c.get("updates") if isinstance(c.get("updates"), list) else [])
             if isinstance(u, dict) and u.get("action") == "add-schema"], limits)


def _fields(schemas: list, limits: RestLimits) -> None:
    total = sum(count_fields(s) for s in schemas if isinstance(s, dict))
    if total > limits.fields:
        raise too_much("schema fields", total, limits.fields)
