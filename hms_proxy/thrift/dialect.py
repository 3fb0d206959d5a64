"""Which Hive metastore generation the client of the call being served speaks.

One server answers Hive 2.3, 3.1 and 4.x clients (docs/compatibility.md, "Hive 3.x and 4.x
clients"). Where the stock metastores of those generations do different things for the same
call (the quick statistics they keep, whether a partition rename moves the data of a table the
4.x server translated to external, whether dropping a partition purges an external table's
files), we do what the stock metastore of the client's own generation does. A connection is
taken to speak the newest generation of any method we serve that it has called: a Hive 4 client calls
``get_database_req`` or ``create_table_req`` (4.x only) before it writes anything, a 2.3 client
never calls one. A database name qualified with a catalog (``@hive#shop``), which only Hive 3.1+
clients send, makes a connection speak 3.1 at least. A connection that has done neither is
served as 2.3 serves it.

The methods of ACID write ids (:data:`AFTER_31`) are the exception: they tell nothing and are
served only to a connection that already speaks 3.1 or newer, any other gets HMS 2.3's answer
(an unknown method). Hive 3/4's own clients ask for a table (``get_table_req``) on the same
connection before they allocate a write id; Trino calls them on a connection of their own and,
without a catalog name, is a 2.3 client, which the stock HMS 2.3 answers so.

The processor notes each call (:func:`note_call`) and sets :data:`CURRENT` for the call; the
handlers read it through :func:`hive4`.
"""
from __future__ import annotations

from contextvars import ContextVar

from hms_proxy.thrift.generations import METHODS, VERSIONS

OLDEST = VERSIONS[0]
HIVE31, HIVE4 = "3.1.3", "4.0.1"

# the generation of the client of the call being served (the oldest outside a call)
CURRENT: ContextVar[str] = ContextVar("hive_client_generation", default=OLDEST)


AFTER_31 = frozenset({"allocate_table_write_ids", "get_valid_write_ids",
                      "get_max_allocated_table_write_id", "seed_write_id", "seed_txn_id"})


def named(short: str | None) -> str:
    """The generation ``serve --min-client-generation`` names: "2.3" (or None), "3.1", "4"."""
    return {None: OLDEST, "2.3": OLDEST, "3.1": HIVE31, "4": HIVE4}[short]


def served_to(known: str, method: str) -> bool:
    """Whether a connection that speaks ``known`` is served ``method`` (see :data:`AFTER_31`)."""
    return method not in AFTER_31 or _rank(known) >= _rank(HIVE31)


def _rank(version: str) -> int:
    return VERSIONS.index(version)


def note_call(known: str, method: str) -> str:
    """The generation of a connection that spoke ``known`` and now calls ``method``: the
    newer of the two and of the oldest generation declaring ``method``."""
    declared = METHODS.get(method)
    if not declared or method in AFTER_31:
        return known
    return at_least(known, min(declared, key=_rank))


def at_least(known: str, version: str) -> str:
    """The newer of two generations."""
    return version if _rank(version) > _rank(known) else known


def since(version: str) -> bool:
    """Whether the client of the current call speaks ``version``'s API or a newer one."""
    return _rank(CURRENT.get()) >= _rank(version)


def hive4() -> bool:
    """Whether the client of the current call speaks Hive 4's metastore API."""
    return since(HIVE4)
