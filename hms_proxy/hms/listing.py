"""A table's partitions for get_partitions: a cached list when small, a stream when large.

A table's partitions are read once from one consistent view. While what was read weighs at most
:func:`materialise_budget` (tables of up to some ten thousand partitions), it is kept and
cached under the view's token, as every partition listing is (a warm listing costs one lookup).
Past that the partitions read so far are dropped, the first pass only counts the rest, and the
answer is a :class:`~hms_proxy.thrift.replies.RawStream`: a second pass over the same view, written to
the client partition by partition. A listing of 1,000,000 partitions therefore holds no more
than the budget and one chunk in memory, and is never cached (the cache could not hold it, and
would drop everything else trying).
"""
from __future__ import annotations

import logging
from contextlib import ExitStack

from hms_proxy.hms.family import _NONE
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.replies import Raw, RawStream
from kvmodel.catalog import CatalogReader

log = logging.getLogger("hms_proxy.hms.listing")

BUDGET_FLOOR = 4 << 20
BUDGET_CEILING = 32 << 20
ITEM_OVERHEAD = 200  # a cached (name, bytes) pair beyond its characters (as partitions weighs)


def materialise_budget(cache) -> int:
    """How much of a listing is read into memory before it is streamed instead: a quarter
    of the cache, between 4 and 32 MiB."""
    return max(BUDGET_FLOOR, min(BUDGET_CEILING, cache.max_weight // 4))


def listing_key(db: str, tbl: str) -> tuple:
    """The cache key of a table's (table, ((name, bytes), ...)); PartitionCalls' own."""
    return ("listing", db, tbl)


def partitions(family, ctx, db: str, tbl: str, max_parts=None,
               missing=errors.NoSuchObject, names_only: bool = False):
    """(table, partitions) of ``db.tbl`` (lower-case names) in name order, at most
    ``max_parts`` of them when it is not negative: a list of :class:`Raw`, or a
    :class:`RawStream` the caller must send or close; with ``names_only``, a list of their
    names (of a large table, without holding the partitions). ``missing`` is raised for a
    missing table."""
    env = family.env
    ref = family.ref_of(ctx)
    key = listing_key(db, tbl)
    want = max_parts if max_parts is not None and max_parts >= 0 else None
    token = env.store.token(ref)
    if token is not None:
        hit = env.cache.get((token,) + key)
        if hit is _NONE:
            raise missing(f"{db}.{tbl} table not found")
        if hit is not None:
            table, items = hit
            items = items if want is None else items[:want]
            return table, [n for n, _ in items] if names_only else [Raw(d) for _, d in items]
    stack = ExitStack()
    try:
        view = stack.enter_context(env.store.read(ref))
        cat = CatalogReader(view, ttypes, env.cache)
        table = cat.table(db, tbl)
        if table is None:
            if view.token is not None:
                env.cache.put((view.token,) + key, _NONE, 64)
            raise missing(f"{db}.{tbl} table not found")
        budget = materialise_budget(env.cache)
        kept: list | None = []
        names: list[str] = []  # names_only, once the partitions are too large to keep
        weight = count = size = 0
        complete = True
        for name, data in cat.partitions_raw(db, tbl):
            if want is not None and count == want:
                complete = False
                break
            count += 1
            size += len(data)
            if kept is not None:
                kept.append((name, data))
                weight += ITEM_OVERHEAD + len(name) + len(data)
                if weight > budget:  # too large to hold: count the rest, then stream
                    names = [n for n, _ in kept] if names_only else names
                    kept = None
            elif names_only:
                names.append(name)
        if kept is not None:
            if complete and view.token is not None:
                env.cache.put((view.token,) + key, (table, tuple(kept)), 4096 + weight)
            return table, [n for n, _ in kept] if names_only else [Raw(d) for _, d in kept]
        if names_only:
            return table, names
        log.debug("streaming %d partitions of %s.%s (%d bytes)", count, db, tbl, size)
        stream = RawStream(count, size, (d for _, d in cat.partitions_raw(db, tbl)),
                           stack.pop_all().close)
        stream.table = (db, tbl)  # whose partitions (hms_proxy.hms.served_props)
        return table, stream
    finally:
        stack.close()
