"""The versioning engine's public API: contextual diff, 3-way merge and revert of catalog refs.

* :func:`diff_refs` -- what changed between two refs, as entities (database, table, partition,
  function, statistics, role) with the fields that changed;
* :func:`merge_refs` -- a 3-way merge from the merge base that merges the same entity field by
  field and returns conflicts as data (:class:`Conflict`); strategies fail, source-wins,
  dest-wins; dry-run;
* :func:`revert_commit` -- undo one commit, 3-way, as a new commit.

Entities and fields live in :mod:`kvmodel.entities`, the merge in :mod:`kvmodel.merge`.
"""
from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field

from kvmodel.catalog import under
from kvmodel.entities import EntityChange, FieldChange, entity_change, parse_key
from kvmodel.merge import STRATEGIES, Conflict, MergeResult, merge_refs, revert_commit
from kvmodel.store.contract import VersionedStore
from kvmodel.store.errors import DirtyBranch, MergeConflict

__all__ = ["FieldChange", "EntityChange", "DiffReport", "diff_refs", "Conflict", "MergeResult",
           "merge_refs", "revert_commit", "MergeConflict", "DirtyBranch", "STRATEGIES",
           "parse_key"]


@dataclass
class DiffReport:
    """The entity changes from ``left`` to ``right``, ordered by key."""

    left: str
    right: str
    changes: list[EntityChange] = field(default_factory=list)

    def partition_rollup(self) -> dict[tuple[str, str], dict[str, int]]:
        """(db, table) -> {"added": n, "removed": n, "modified": n} over partition changes."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        for c in self.changes:
            if c.kind == "partition":
                counts = out.setdefault((c.path[0], c.path[1]),
                                        {"added": 0, "removed": 0, "modified": 0})
                counts[c.change] += 1
        return out

    def to_json(self) -> dict:
        return {"left": self.left, "right": self.right,
                "changes": [c.to_json() for c in self.changes],
                "partitions": [{"db": db, "table": tbl, **counts}
                               for (db, tbl), counts in self.partition_rollup().items()]}


def diff_refs(store: VersionedStore, left: str, right: str, prefix: str = "") -> DiffReport:
    """The entity changes from ``left`` to ``right`` (under a key ``prefix``). A branch ref
    includes its staged writes. Cost follows the change: ``store.diff`` skips equal ranges,
    and only modified entities are decoded."""
    return DiffReport(left, right, [entity_change(e.key, e.left, e.right)
                                    for e in store.diff(left, right, prefix)])


def touches(store, commit, prefix: str) -> bool:
    """Whether ``commit`` changed anything at or under the key ``prefix`` (a root commit:
    whether it holds anything there)."""
    if commit.parents:
        return any(under(e.key, prefix)
                   for e in store.diff(commit.parents[0], commit.id, prefix))
    with store.read(commit.id) as view:
        return any(under(k, prefix) for k, _ in view.scan_prefix(prefix))


def author_or_user(explicit: str | None) -> str:
    """A commit's author: the one given, else the user running the command ($USER, else the
    account's name, else empty in a bare container)."""
    if explicit is not None:
        return explicit
    user = os.environ.get("USER") or os.environ.get("USERNAME")
    if user:
        return user
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name anywhere
        return ""
