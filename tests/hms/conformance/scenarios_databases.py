"""Database calls: create/get/alter/drop, name validation, patterns, directories."""

from __future__ import annotations

import os

from tests.hms.conformance.builders import database, table
from tests.hms.conformance.harness import scenario


def only(prefix: str):
    """Keep names of this scenario (and default): other scenarios share the server."""
    return lambda names: [n for n in names if n.startswith(prefix) or n == "default"]


@scenario
def databases_create_get(c, rec):
    rec.call("create_database", database("cfd_one", "first db", parameters={"k": "v", "a": "1"},
                                         owner="alice"))
    rec.call("get_database", "cfd_one")
    rec.call("get_database", "CFD_ONE", label="get_database mixed case")
    rec.note("warehouse dir created", os.path.isdir(f"{rec.proc.warehouse}/cfd_one.db"))
    rec.call("create_database", database("cfd_one"), msg=True)
    rec.call("create_database", database("CFD_One"), label="create_database existing, other case",
             msg=True)
    rec.call("create_database", database("cfd_loc", location=rec.scratch("dbloc")))
    rec.call("get_database", "cfd_loc")
    rec.note("explicit location dir created", os.path.isdir(rec.scratch("dbloc")))
    rec.call("create_database", database("cfd_loc2", location="file:" + rec.scratch("dbloc2")))
    rec.call("get_database", "cfd_loc2")
    rec.call("create_database", database("CFD_Upper"))
    rec.call("get_database", "cfd_upper")
    rec.call("create_database", database("cfd_nodesc"))
    rec.call("get_database", "cfd_nodesc")
    rec.call("get_database", "cfd_missing", msg=True)
    rec.call("get_database", "default")
    rec.call("create_database", database("default"), msg=True)


@scenario
def databases_invalid_names(c, rec):
    for name in ["bad name", "cfd-dash", "cfd.dot", "", "cfd/slash", "cfd_é", "cfd$"]:
        rec.call("create_database", database(name), label=f"create_database({name!r})", msg=True)
    rec.call("create_database", database("cfd_" + "x" * 200), label="create_database(204 chars)")
    rec.call("create_database", database("1cfd_digit"), label="create_database leading digit")
    rec.call("get_database", "1cfd_digit")
    rec.call("drop_database", "1cfd_digit", True, True)


@scenario
def databases_patterns(c, rec):
    for name in ["cfp_alpha", "cfp_beta", "cfp_bravo", "cfp_gamma1"]:
        rec.call("create_database", database(name))
    keep = only("cfp_")
    rec.call("get_all_databases", transform=keep, unordered=True)
    for pattern in ["cfp_*", "cfp_a*|cfp_b*", "CFP_B*", "cfp_alpha", "cfp_gamma?", "cfp_gamma.",
                    "cfp_*a", "*cfp_beta*", "cfp_nothing*", "cfp_alpha|cfp_beta", " cfp_alpha "]:
        rec.call("get_databases", pattern, transform=keep, unordered=True)


@scenario
def databases_alter(c, rec):
    rec.call("create_database", database("cfa_db", "before", parameters={"x": "1"}, owner="bob"))
    db = rec.call("get_database", "cfa_db")
    db.description = "after"
    db.parameters = {"x": "2", "y": "3"}
    db.ownerName = "carol"
    rec.call("alter_database", "cfa_db", db)
    rec.call("get_database", "cfa_db")
    db.locationUri = "file:" + rec.scratch("moved")
    rec.call("alter_database", "cfa_db", db, label="alter_database new location")
    rec.call("get_database", "cfa_db")
    rec.call("alter_database", "cfa_missing", database("cfa_missing"), msg=True)
    renamed = database("cfa_other", "renamed?")
    rec.call("alter_database", "cfa_db", renamed, label="alter_database with another name")
    rec.call("get_database", "cfa_db")
    rec.call("get_database", "cfa_other")


@scenario
def databases_drop(c, rec):
    rec.call("create_database", database("cfx_full"))
    rec.call("create_table", table("cfx_full", "t1"))
    rec.call("create_table", table("cfx_full", "t2"))
    rec.call("drop_database", "cfx_full", True, False, msg=True)
    rec.call("get_database", "cfx_full")
    rec.call("drop_database", "cfx_full", True, True)
    rec.call("get_database", "cfx_full", msg=True)
    rec.call("get_table", "cfx_full", "t1")
    rec.note("warehouse dir after cascade drop", os.path.isdir(f"{rec.proc.warehouse}/cfx_full.db"))
    rec.call("drop_database", "cfx_full", True, True, label="drop_database dropped db again")
    rec.call("drop_database", "cfx_missing", True, False, msg=True)
    rec.call("drop_database", "cfx_missing", False, True)
    rec.call("create_database", database("cfx_empty"))
    rec.call("drop_database", "cfx_empty", False, False)
    rec.note("warehouse dir kept with deleteData=False", os.path.isdir(f"{rec.proc.warehouse}/cfx_empty.db"))
    rec.call("create_database", database("CFX_Case"))
    rec.call("drop_database", "CFX_CASE", True, False, label="drop_database other case")
    rec.call("get_database", "cfx_case")
    rec.call("drop_database", "default", True, False, msg=True)
    rec.call("get_database", "default")
