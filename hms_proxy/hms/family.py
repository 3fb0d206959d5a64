"""What every family of HMS calls shares: the store, the ref a call works on, the warehouse.

A family is a class whose public methods are named exactly like the Thrift methods they serve
and take the connection's :class:`~hms_proxy.thrift.processor.CallContext` first. The handler
collects them (``hms_proxy/hms/handler.py``).
"""
from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from hms_proxy.hms import names, warehouse
from hms_proxy.hms.cascades import Cascades
from hms_proxy.hms.warehouse import Warehouse
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel.catalog import CatalogReader, CatalogWriter
from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import VersionedStore
from kvmodel.store.errors import NothingToCommit

DDL_TIME = "transient_lastDdlTime"
_NONE = object()  # a cached "there is nothing" (the cache itself answers None for a miss)
# the write transaction of a :func:`one_write` open in this thread: (store, ref, txn)
_ONE_WRITE: contextvars.ContextVar = contextvars.ContextVar("hms_one_write", default=None)


@dataclass
class Env:
    """Server-wide settings handed to every family."""

    store: VersionedStore
    warehouse: Warehouse
    ref: str = "main"
    conf: dict[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    cache: LRUCache = field(default_factory=lambda: LRUCache(256 << 20))
    autocommit: bool = False
    redis_url: str | None = None  # serve --redis: locks and transactions shared in Redis
    lock_wait: float = 1.0  # serve --lock-wait: seconds a WAITING lock answer is held back
    access: object | None = None  # hms_proxy.security.access.Guard: rules, read-only, audit (or None)
    # computed statistics in the parameters of tables and partitions answered
    # (hms_proxy/hms/served_props.py); serve --no-stats-properties turns it off
    stats_properties: bool = True
    # what one family's change does to another's objects (hms_proxy/hms/cascades.py),
    # registered by hms_proxy.hms.handler.connect
    cascades: Cascades = field(default_factory=Cascades)
    # the delegation tokens of a Kerberized server (hms_proxy.hms.tokens.Delegation), or None
    delegation: object | None = None


class _Applied:
    applied = False


class Family:
    def __init__(self, env: Env):
        self.env = env
        self.t = ttypes

    # --- catalog access on the call's ref -----------------------------------------------
    def ref_of(self, ctx) -> str:
        return getattr(ctx, "ref", None) or self.env.ref

    def get_raw(self, ctx, key: str) -> bytes | None:
        """One key at the call's ref, by the store's fastest path."""
        return self.env.store.get(self.ref_of(ctx), key)

    def cached(self, ctx, key: tuple, compute, weigh=lambda value: 4096):
        """Something derived from the call's ref, cached under the ref's content token: a
        hit costs one statement (the token); a miss computes it from a consistent view and
        caches it under that view's token. ``compute(reader)`` may return None."""
        ref = self.ref_of(ctx)
        cache = self.env.cache
        token = self.env.store.token(ref)
        if token is not None:
            hit = cache.get((token,) + key)
            if hit is not None:
                return None if hit is _NONE else hit
        with self.env.store.read(ref) as view:
            value = compute(CatalogReader(view, ttypes, cache))
            if view.token is not None:
                cache.put((view.token,) + key, _NONE if value is None else value,
                          64 if value is None else weigh(value))
        return value

    @contextmanager
    def reading(self, ctx):
        with self.env.store.read(self.ref_of(ctx)) as view:
            yield CatalogReader(view, ttypes, self.env.cache)

    @contextmanager
    def writing(self, ctx):
        """A write transaction on the call's branch; refused on a protected branch; with
        ``serve --autocommit``, committed in the same transaction as the write (a store whose
        writes apply when their transaction ends, lakeFS, commits right after it). Inside
        :meth:`one_write`, the transaction is that one's."""
        store, ref = self.env.store, self.ref_of(ctx)
        self._check_writable(ctx, ref)
        outer = _ONE_WRITE.get()
        if outer is not None and outer[0] is store and outer[1] == ref:
            yield CatalogWriter(outer[2], ttypes)
            return
        with self._transaction(ctx, ref, _Applied()) as txn:
            yield CatalogWriter(txn, ttypes)

    @contextmanager
    def one_write(self, ctx, ref: str):
        """Every catalog write of the calls made inside this block (in this thread, on the
        branch ``ref``) in one write transaction of the store: applied together or not at all (on
        lakeFS, one log entry), and with ``serve --autocommit`` one commit. Yields a state
        whose ``applied`` turns true once the writes are in the store: a failure after that
        (of the commit) must not be undone as if nothing had been written."""
        store = self.env.store
        self._check_writable(ctx, ref)
        state = _Applied()
        with self._transaction(ctx, ref, state) as txn:
            token = _ONE_WRITE.set((store, ref, txn))
            try:
                yield state
            finally:
                _ONE_WRITE.reset(token)

    def _check_writable(self, ctx, ref: str) -> None:
        branch = self.env.store.get_branch(ref)  # None for a tag or commit: the store refuses
        if branch is not None and branch.protected:
            raise errors.MetaError(
                f"Branch '{ref}' is protected: write on a branch and merge it "
                f"(hms-proxy branch create NAME --from {ref}; hms-proxy merge NAME {ref})")
        if self.env.access is not None:  # checked per method already; this catches a misfiled one
            self.env.access.check_write(ctx, ref)

    @contextmanager
    def _transaction(self, ctx, ref: str, state: "_Applied"):
        store = self.env.store
        inside = getattr(store, "exact_snapshots", True)  # commit inside the transaction
        with warehouse.markers_beside_the_write(), store.write(ref) as txn:
            yield txn
            if self.env.autocommit and inside:
                self._autocommit(ctx, store, ref)
        state.applied = True
        if self.env.autocommit and not inside:
            self._autocommit(ctx, store, ref)

    @staticmethod
    def _autocommit(ctx, store, ref) -> None:
        try:
            identity = getattr(ctx, "identity", None)  # established by access.py
            metadata = {"source": "thrift", "call": getattr(ctx, "call", "")}
            if identity:
                metadata["auth"] = ctx.auth
            store.commit(ref, getattr(ctx, "call", "") or "write",
                         author=identity or getattr(ctx, "user", None) or "",
                         metadata=metadata)
        except NothingToCommit:
            pass

    # --- shared lookups -----------------------------------------------------------------
    @staticmethod
    def require_table(cat: CatalogReader, db: str, tbl: str, exc=errors.NoSuchObject):
        table = cat.table(db, tbl)
        if table is None:
            raise exc(f"{db}.{tbl} table not found")
        return table

    @staticmethod
    def require_database(cat: CatalogReader, db: str):
        database = cat.database(db)
        if database is None:
            raise errors.NoSuchObject(db)
        return database


def now() -> int:
    return int(time.time())


def lower(name: str | None) -> str:
    """HMS keys database, table and column names lower-case."""
    return (name or "").strip().lower()


def match_names(pattern: str | None, candidates: list[str], method: str = "get_tables") -> list[str]:
    """The candidates matching an HMS name pattern (``a*|b*``), in their order; all of them
    for a null pattern. A pattern of only ``|`` fails with the message HMS's JDO query gives."""

    if pattern is None:
        return list(candidates)
    try:
        matches = names.compile_name_pattern(pattern)
    except ValueError:
        raise errors.MetaError(names.EMPTY_PATTERN_ERRORS.get(
            method, names.EMPTY_PATTERN_ERRORS["get_tables"])) from None
    return [c for c in candidates if matches(c)]


def column_problem(cols) -> str | None:
    """HMS's validateTblColumns over FieldSchema structs."""

    try:
        return names.validate_tbl_columns((c.name, c.type) for c in cols or [])
    except ValueError as exc:
        return f"type: {exc}"


MAX_IDENTIFIER = 128


def check_identifier_length(name: str, column: str = "NAME") -> None:
    """HMS's backing database limits names to 128 characters; the error is Derby's."""
    if name is not None and len(name) > MAX_IDENTIFIER:
        raise errors.MetaError(
            f'Attempt to store value "{lower(name)}" in column ""{column}"" that has maximum '
            f"length of {MAX_IDENTIFIER}. Please correct your data!")
