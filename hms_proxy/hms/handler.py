"""The handler: a thin facade from Thrift method names to the family that serves each.

Any Thrift method that no family defines is absent here, so the processor answers it with
``UNKNOWN_METHOD`` like HMS does for a method it does not know; docs/compatibility.md lists them.
"""
from __future__ import annotations

from thrift.Thrift import TApplicationException

from hms_proxy.hms import served_props
from hms_proxy.hms.colstats import ColumnStatsCalls
from hms_proxy.hms.column_constraints import ColumnConstraintCalls
from hms_proxy.hms.constraints import ConstraintCalls
from hms_proxy.hms.databases import DatabaseCalls
from hms_proxy.hms.family import Env
from hms_proxy.hms.file_metadata import FileMetadataCalls
from hms_proxy.hms.functions import FunctionCalls
from hms_proxy.hms.indexes import IndexCalls
from hms_proxy.hms.materialized_views import MaterializedViewCalls
from hms_proxy.hms.notifications import NotificationCalls
from hms_proxy.hms.partition_events import PartitionEventCalls
from hms_proxy.hms.partitions import PartitionCalls
from hms_proxy.hms.privileges import PrivilegeCalls
from hms_proxy.hms.pspecs import PartitionSpecCalls
from hms_proxy.hms.requests import RequestCalls
from hms_proxy.hms.roles import RoleCalls
from hms_proxy.hms.service import ServiceCalls
from hms_proxy.hms.table_filters import TableFilterCalls
from hms_proxy.hms.tables import TableCalls
from hms_proxy.hms.tokens import TokenCalls
from hms_proxy.hms.runtime_stats import RuntimeStatsCalls
from hms_proxy.hms.scheduled_queries import ScheduledQueryCalls
from hms_proxy.hms.truncate import TruncateCalls
from hms_proxy.hms.txn.compaction import CompactionCalls
from hms_proxy.hms.txn.transactions import TxnCalls
from hms_proxy.hms.txn.writeids import WriteIdCalls
from hms_proxy.hms.types import TypeCalls
from hms_proxy.thrift import dialect, routing

FAMILIES = (DatabaseCalls, TableCalls, PartitionCalls, ColumnStatsCalls, FunctionCalls,
            ServiceCalls, TxnCalls, RoleCalls, TableFilterCalls, NotificationCalls,
            PrivilegeCalls, ConstraintCalls, IndexCalls, PartitionSpecCalls, TypeCalls,
            FileMetadataCalls, TokenCalls, CompactionCalls, PartitionEventCalls, RequestCalls,
            WriteIdCalls, TruncateCalls, RuntimeStatsCalls, ColumnConstraintCalls,
            MaterializedViewCalls, ScheduledQueryCalls)


def connect(env: Env, families=FAMILIES) -> Env:
    """Register every family's cascades (hms_proxy/hms/cascades.py) on ``env``: what a
    rename or drop in one family does to the objects another keeps. Checked here, at
    start-up; idempotent."""
    for family_cls in families:
        env.cascades.register(family_cls)
    return env


def served_methods(thrift_methods, families=FAMILIES) -> dict[str, type]:
    """Thrift method -> the family class that serves it; a method defined by two families
    is an error (which one answers must never depend on the order of FAMILIES)."""
    owners: dict[str, type] = {}
    for family_cls in families:
        for name in thrift_methods:
            if getattr(family_cls, name, None) is None:
                continue
            if name in owners:
                raise TypeError(f"{name} is defined by both {owners[name].__name__} and "
                                f"{family_cls.__name__}")
            owners[name] = family_cls
    return owners


class Handler:
    def __init__(self, env: Env, thrift_methods, federation=None):
        self.env = connect(env)
        self._calls = {}
        families = {cls: cls(env) for cls in FAMILIES}
        served = served_props.ServedProperties(env) if env.stats_properties else None
        for name, family_cls in served_methods(thrift_methods).items():
            self._calls[name] = _routed(name, getattr(families[family_cls], name),
                                        thrift_methods[name], federation, env.access, served)
        self._implemented = sorted(self._calls)
        if federation is not None:  # calls we do not serve may still go to the upstream
            for name, method in thrift_methods.items():
                if name not in self._calls and federation.route_for(name, method) is not None:
                    self._calls[name] = _routed(name, _unknown(name), method, federation,
                                              env.access)
        self.databases = families[DatabaseCalls]

    def __getattr__(self, name):
        try:
            return self.__dict__["_calls"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def implemented(self) -> list[str]:
        return list(self._implemented)

    def start(self) -> None:
        self.databases.ensure_default_database()


def _unknown(name: str):
    def impl(ctx, *args):
        raise TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                    f"Invalid method name: '{name}'")
    return impl


def _routed(name: str, impl, method, federation=None, guard=None, served=None):
    """The family method behind the routing of :mod:`hms_proxy.thrift.routing`: the call's ref is
    chosen here, once, and its answer qualified back when the request was qualified. With
    ``serve --upstream``, :mod:`hms_proxy.thrift.federation` decides whether it is ours at all;
    with access control, the :class:`~hms_proxy.security.access.Guard` whether it runs at all.
    ``served``: the :class:`~hms_proxy.hms.served_props.ServedProperties` that adds computed
    statistics to the tables and partitions a read answers with."""
    arg_names = method.arg_names
    result_spec = method.result_cls.thrift_spec if method.result_cls is not None else ()
    route = federation.route_for(name, method) if federation is not None else None
    if served is not None and not served_props.serves(name, result_spec):
        served = None

    def local(ctx, args, ref):
        value = impl(ctx, *args)
        if served is not None:
            value = served.answer(ctx, value, result_spec, ctx.ref)
        if ctx.catalog is not None:
            value = routing.unqualify_result(value, result_spec)
        if ref is not None:
            value = routing.qualify_result(value, result_spec, ref)
        return value

    def call(ctx, *args):
        args = list(args)
        names = routing.strip_arguments(name, arg_names, args)
        ref = names.ref
        ctx.ref = ref or ctx.served_ref()
        ctx.call = _describe_call(name, arg_names, args)
        ctx.catalog = names.foreign
        if names.catalog is None and names.foreign is None:
            try:
                return guarded(ctx, args, ref)
            except Exception as exc:
                if names.absent:
                    routing.absent_error(exc)
                if dialect.since(dialect.HIVE31):  # HMS 3.1/4.x name the default catalog
                    routing.default_catalog_error(exc)
                raise
        # a call naming a catalog (``@hive#shop``, a struct's catName): a Hive 3.x/4.x client's
        ctx.generation = dialect.at_least(ctx.generation, dialect.HIVE31)
        generation = dialect.CURRENT.set(ctx.generation)
        try:
            return guarded(ctx, args, ref)
        except Exception as exc:
            if names.absent:
                routing.absent_error(exc)
            routing.catalog_error(exc, names)
            raise
        finally:
            dialect.CURRENT.reset(generation)

    def guarded(ctx, args, ref):
        if guard is not None:
            return guard.call(ctx, method, args, lambda: run(ctx, args, ref))
        return run(ctx, args, ref)

    def run(ctx, args, ref):
        if route is not None:
            return route(ctx, args, ref, local)
        return local(ctx, args, ref)

    call.__name__ = name
    return call


def _describe_call(name: str, arg_names, args) -> str:
    """``create_table shop.orders``: the method and the object it names, for commit messages."""
    parts = []
    for arg, value in zip(arg_names, args):
        if isinstance(value, str) and arg in ("db_name", "dbname", "dbName", "name", "tbl_name",
                                              "table_name", "part_name", "funcName"):
            parts.append(value)
        elif hasattr(value, "thrift_spec") and not parts:  # the names given already said it
            for attr in ("dbName", "tableName", "tblName", "name", "functionName"):
                text = getattr(value, attr, None)
                if isinstance(text, str):
                    parts.append(text)
            if parts:
                break
    return f"{name} {'.'.join(parts)}".strip()
