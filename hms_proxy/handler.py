"""The handler: a thin facade from Thrift method names to the family that serves each.

Any Thrift method that no family defines is absent here, so the processor answers it with
``UNKNOWN_METHOD`` like HMS does for a method it does not know; docs/compatibility.md lists them.
"""
from __future__ import annotations

from hms_proxy.colstats import ColumnStatsCalls
from hms_proxy.databases import DatabaseCalls
from hms_proxy.family import Env
from hms_proxy.functions import FunctionCalls
from hms_proxy.partitions import PartitionCalls
from hms_proxy.service import ServiceCalls
from hms_proxy.tables import TableCalls

FAMILIES = (DatabaseCalls, TableCalls, PartitionCalls, ColumnStatsCalls, FunctionCalls,
            ServiceCalls)


class Handler:
    def __init__(self, env: Env, thrift_methods):
        self.env = env
        self._calls = {}
        for family_cls in FAMILIES:
            family = family_cls(env)
            for name in thrift_methods:
                impl = getattr(family, name, None)
                if impl is not None and name not in self._calls:
                    self._calls[name] = impl
        self.databases = DatabaseCalls(env)

    def __getattr__(self, name):
        try:
            return self.__dict__["_calls"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def implemented(self) -> list[str]:
        return sorted(self._calls)

    def start(self) -> None:
        self.databases.ensure_default_database()
