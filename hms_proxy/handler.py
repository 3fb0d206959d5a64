"""The handler: a thin facade from Thrift method names to the family that serves each.

Any Thrift method that no family defines is absent here, so the processor answers it with
``UNKNOWN_METHOD`` like HMS does for a method it does not know; docs/compatibility.md lists them.
"""
from __future__ import annotations

from thrift.Thrift import TApplicationException

from hms_proxy import routing
from hms_proxy.colstats import ColumnStatsCalls
from hms_proxy.databases import DatabaseCalls
from hms_proxy.family import Env
from hms_proxy.functions import FunctionCalls
from hms_proxy.notifications import NotificationCalls
from hms_proxy.partitions import PartitionCalls
from hms_proxy.roles import RoleCalls
from hms_proxy.service import ServiceCalls
from hms_proxy.table_filters import TableFilterCalls
from hms_proxy.tables import TableCalls
from hms_proxy.txns import TxnCalls
from hms_proxy.privileges import PrivilegeCalls
from hms_proxy.constraints import ConstraintCalls
from hms_proxy.indexes import IndexCalls
from hms_proxy.pspecs import PartitionSpecCalls
from hms_proxy.hms_types import TypeCalls
from hms_proxy.file_metadata import FileMetadataCalls
from hms_proxy.tokens import TokenCalls
from hms_proxy.compaction import CompactionCalls
from hms_proxy.partition_events import PartitionEventCalls

FAMILIES = (DatabaseCalls, TableCalls, PartitionCalls, ColumnStatsCalls, FunctionCalls,
            ServiceCalls, TxnCalls, RoleCalls, TableFilterCalls, NotificationCalls,
            PrivilegeCalls, ConstraintCalls, IndexCalls, PartitionSpecCalls, TypeCalls,
            FileMetadataCalls, TokenCalls, CompactionCalls, PartitionEventCalls)


class Handler:
    def __init__(self, env: Env, thrift_methods, federation=None):
        self.env = env
        self._calls = {}
        for family_cls in FAMILIES:
            family = family_cls(env)
            for name, method in thrift_methods.items():
                impl = getattr(family, name, None)
                if impl is not None and name not in self._calls:
                    self._calls[name] = _routed(name, impl, method, federation, env.access)
        self._implemented = sorted(self._calls)
        if federation is not None:  # calls we do not serve may still go to the upstream
            for name, method in thrift_methods.items():
                if name not in self._calls and federation.route_for(name, method) is not None:
                    self._calls[name] = _routed(name, _unknown(name), method, federation,
                                              env.access)
        self.databases = DatabaseCalls(env)

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


def _routed(name: str, impl, method, federation=None, guard=None):
    """The family method behind the routing of :mod:`hms_proxy.routing`: the call's ref is
    chosen here, once, and its answer qualified back when the request was qualified. With
    ``serve --upstream``, :mod:`hms_proxy.federation` decides whether it is ours at all;
    with access control, the :class:`~hms_proxy.access.Guard` whether it runs at all."""
    arg_names = method.arg_names
    result_spec = method.result_cls.thrift_spec if method.result_cls is not None else ()
    route = federation.route_for(name, method) if federation is not None else None

    def local(ctx, args, ref):
        value = impl(ctx, *args)
        if ref is not None:
            value = routing.qualify_result(value, result_spec, ref)
        return value

    def call(ctx, *args):
        args = list(args)
        ref = routing.strip_arguments(name, arg_names, args)
        ctx.ref = ref or ctx.listener_ref
        ctx.call = _describe_call(name, arg_names, args)
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
        elif hasattr(value, "thrift_spec"):
            for attr in ("dbName", "tableName", "tblName", "name", "functionName"):
                text = getattr(value, attr, None)
                if isinstance(text, str):
                    parts.append(text)
            if parts:
                break
    return f"{name} {'.'.join(parts)}".strip()
