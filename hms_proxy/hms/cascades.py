"""What a change in one family does to the objects another family keeps: the cascades.

A family never imports another one to tell it that a table was renamed or dropped. The family
that keeps dependent objects (constraints, indexes, grants, the compaction queue) declares its
hooks in its class's ``CASCADES`` (event -> function) and ``RENAME_REWRITES`` (sub-prefix of a
table's subtree -> rewrite); :func:`hms_proxy.hms.handler.connect` registers every family's
at start-up. A hook for an event that does not exist, two rewrites of overlapping sub-prefixes, or a
cascade run before the families were connected is an error, not a silent no-op.

The events, with what their hooks receive:

``table_renamed(cat, old, new)``
    in the renaming transaction, after the table's subtree was copied (things kept in other
    tables that name the renamed one);
``table_moved(env, old, new)``
    once a table's rename is committed;
``table_dropping(cat, table, delete_data) -> data locations or None``
    in the dropping transaction, before the table's subtree is deleted; the locations
    returned are deleted once the drop is committed;
``table_dropped(env, table)``
    once a table's drop is committed;
``partitions_dropped(env, table, dropped)``
    once partitions (their stored bytes) of ``table`` were dropped or moved away;
``database_dropped(env, name)``
    once a database's drop is committed (or failed after finding it, as in HMS).
"""
from __future__ import annotations

from collections.abc import Callable

EVENTS = ("table_renamed", "table_moved", "table_dropping", "table_dropped", "partitions_dropped",
          "database_dropped")


class NotConnected(RuntimeError):
    """A cascade ran before :func:`hms_proxy.hms.handler.connect` registered the families."""


class Cascades:
    """The hooks of every family, by event, and the rewrites of a renamed table's subtree."""

    def __init__(self) -> None:
        self._hooks: dict[str, list[Callable]] = {event: [] for event in EVENTS}
        self._rewrites: dict[str, Callable] = {}
        self._owners: set[str] = set()

    @property
    def connected(self) -> bool:
        return bool(self._owners)

    def register(self, owner: type) -> None:
        """Add the ``CASCADES`` and ``RENAME_REWRITES`` of a family class (once per class)."""
        name = owner.__qualname__
        if name in self._owners:
            return
        for event, hook in getattr(owner, "CASCADES", {}).items():
            if event not in self._hooks:
                raise ValueError(f"{name}: no cascade event {event!r} (known: {', '.join(EVENTS)})")
            self._hooks[event].append(hook)
        for sub, rewrite in getattr(owner, "RENAME_REWRITES", {}).items():
            clash = [other for other in self._rewrites
                     if other.startswith(sub) or sub.startswith(other)]
            if clash:  # a key would be rewritten twice
                raise ValueError(f"{name}: the rename rewrite of {sub!r} overlaps {clash[0]!r}")
            self._rewrites[sub] = rewrite
        self._owners.add(name)

    def run(self, event: str, *args) -> list:
        """Run the hooks of ``event``; what they return (lists) is gathered."""
        if not self._owners:
            raise NotConnected(f"cascade {event!r} before the families were connected "
                               "(hms_proxy.hms.handler.connect)")
        gathered: list = []
        for hook in self._hooks[event]:
            gathered.extend(hook(*args) or [])
        return gathered

    def rename_rewrites(self) -> dict[str, Callable]:
        if not self._owners:
            raise NotConnected("a table rename before the families were connected "
                               "(hms_proxy.hms.handler.connect)")
        return dict(self._rewrites)
