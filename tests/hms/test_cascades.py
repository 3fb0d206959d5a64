"""The registrations among families (hms_proxy/hms/cascades.py, hms_proxy/hms/handler.py):
checked when the server is built, never silently ignored."""
from __future__ import annotations

import pytest

from hms_proxy.hms import handler
from hms_proxy.hms.cascades import EVENTS, Cascades, NotConnected
from hms_proxy.hms.family import Family
from hms_proxy.thrift.gen.fb303 import FacebookService
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.processor import service_methods

METHODS = service_methods((ThriftHiveMetastore, FacebookService))


def test_every_served_method_has_exactly_one_family():
    owners = handler.served_methods(METHODS)
    assert owners["get_table"].__name__ == "TableCalls"
    assert owners["create_table_with_constraints"].__name__ == "ConstraintCalls"
    assert set(owners) <= set(METHODS)


def test_a_method_defined_by_two_families_is_an_error():
    class A(Family):
        def get_table(self, ctx, db, tbl):
            return None

    class B(Family):
        def get_table(self, ctx, db, tbl):
            return None

    with pytest.raises(TypeError, match="get_table is defined by both A and B"):
        handler.served_methods(METHODS, families=(A, B))


def test_the_families_declare_only_known_events_and_disjoint_rewrites():
    cascades = Cascades()
    for family in handler.FAMILIES:
        cascades.register(family)
    rewrites = cascades.rename_rewrites()
    # what a renamed table takes along: statistics, keys, indexes, grants
    assert {"colstats/", "partstats/", "priv/"} <= set(rewrites)
    assert len(rewrites) >= 6  # and the primary keys, foreign keys, references, indexes


def test_an_unknown_event_is_refused_at_registration():
    class Typo(Family):
        CASCADES = {"table_droped": lambda *a: None}

    with pytest.raises(ValueError, match="no cascade event 'table_droped'"):
        Cascades().register(Typo)


def test_overlapping_rewrites_are_refused():
    class One(Family):
        RENAME_REWRITES = {"cstr/": lambda v, t: v}

    class Two(Family):
        RENAME_REWRITES = {"cstr/pk": lambda v, t: v}

    cascades = Cascades()
    cascades.register(One)
    with pytest.raises(ValueError, match="overlaps 'cstr/'"):
        cascades.register(Two)


def test_a_cascade_before_the_families_are_connected_fails_loudly():
    with pytest.raises(NotConnected):
        Cascades().run("table_dropped", None, None)
    with pytest.raises(NotConnected):
        Cascades().rename_rewrites()


def test_hooks_run_in_registration_order_and_their_results_are_gathered():
    calls = []

    class First(Family):
        CASCADES = {"table_dropping": lambda cat, t, d: calls.append("first") or ["/a"]}

    class Second(Family):
        CASCADES = {"table_dropping": lambda cat, t, d: calls.append("second")}

    cascades = Cascades()
    cascades.register(First)
    cascades.register(Second)
    cascades.register(First)  # once per class
    assert cascades.run("table_dropping", None, None, False) == ["/a"]
    assert calls == ["first", "second"]
    assert set(EVENTS) >= {"table_dropping", "table_renamed"}
