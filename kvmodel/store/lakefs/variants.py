"""Keys kept per branch: values that two branches may both change without lakeFS's merge
seeing a conflict, so that the catalog's own merge decides.

lakeFS merges objects: when both branches changed one object since their merge base, it stops
with a conflict before any hook runs, and no hook can then make or refuse the merge in the
catalog's terms. For most keys that is right (a table both branches altered is a conflict, or
``hms-proxy merge`` merges it field by field). For an Iceberg table it is not: every commit of
every writer changes it (its ``metadata_location``), and two branches that both appended must
be merged by replaying one side's snapshots on the other's (:mod:`kvmodel.iceberg_merge`).

So a fold writes such a key (the store's ``carried`` policy says which; once a key has a
variant it keeps being written so) not as ``_hms/<key>`` but as the branch's own **variant**,
``_hms_v/<branch>/<key>``, stamped with the writer's time (``hms-t``, never before the key's
newest variant). A key's committed value is its newest variant (by stamp, then branch name),
else its per-key object; live log entries apply over both as before. A branch only ever
writes its own variants, so lakeFS's merge never finds one object changed on both sides:

* a key one side changed: that side's variant comes with the merge, newer than the base's;
* a key both sides changed: both variants are there, and the catalog's 3-way merge of the
  merge commit (lakeFS's ``pre-merge`` hook, :func:`kvmodel.lakefs_actions.check_merge`)
  sees it and refuses the merge naming the key and ``hms-proxy merge``, which merges it and
  writes the result as the destination's variant.

What a commit's variants read as is listed once per commit (:meth:`Variants._commit_variants`),
or made from its first parent's by lakeFS's diff between them (one call): kept by commit id,
like everything read at a commit.
"""
from __future__ import annotations

import base64

from kvmodel.store.contract import CommitID, Key, Value
from kvmodel.store.errors import RefNotFound
from kvmodel.store.lakefs import log as lakefs_log
from kvmodel.store.lakefs.common import INLINE_LIMIT, META_VALUE, VARIANTS

META_DELETED = "hms-deleted"  # "1": the variant says the key is gone


def variant_path(branch: str, key: Key) -> str:
    return f"{VARIANTS}{branch}/{key}"


def parse_variant(path: str) -> tuple[str, Key] | None:
    """(branch, key) of a variant's path, or None."""
    if not path.startswith(VARIANTS):
        return None
    branch, sep, key = path[len(VARIANTS):].partition("/")
    return (branch, key) if sep and branch and key else None


def _meta(stats, name: str) -> str | None:
    for key, value in (stats.metadata or {}).items():
        if key.lower() == name:
            return value
    return None


class VariantIndex:
    """The variants of a commit (or a branch): ``by_path`` maps a variant's path to
    ``(stamp, value or None)``; :attr:`newest` is what each key reads as."""

    __slots__ = ("by_path", "_newest")

    def __init__(self, by_path: dict | None = None):
        self.by_path: dict[str, tuple[int, Value | None]] = dict(by_path or {})
        self._newest: dict | None = None

    def __bool__(self) -> bool:
        return bool(self.by_path)

    def __eq__(self, other) -> bool:
        return isinstance(other, VariantIndex) and other.by_path == self.by_path

    def __getstate__(self):
        return self.by_path

    def __setstate__(self, state):
        self.by_path, self._newest = state, None

    @property
    def newest(self) -> dict[Key, Value | None]:
        """key -> its newest variant's value (None: the key is gone)."""
        if self._newest is None:
            best: dict[Key, tuple] = {}
            for path, (stamp, value) in self.by_path.items():
                branch, key = parse_variant(path)
                rank = (stamp, branch)
                if key not in best or rank > best[key][0]:
                    best[key] = (rank, value)
            self._newest = {k: v for k, (_, v) in best.items()}
        return self._newest

    def stamp_of(self, key: Key) -> int:
        """The newest stamp of ``key``'s variants (0: none)."""
        return max((stamp for path, (stamp, _) in self.by_path.items()
                    if parse_variant(path)[1] == key), default=0)

    def changed(self, changes: dict[str, tuple[int, Value | None] | None]) -> "VariantIndex":
        """This index with ``changes`` (path -> (stamp, value), None: removed) applied."""
        out = dict(self.by_path)
        for path, variant in changes.items():
            if variant is None:
                out.pop(path, None)
            else:
                out[path] = variant
        return VariantIndex(out)


EMPTY = VariantIndex()


class Variants:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the module doc)."""

    def _carries(self, key: Key, value: Value | None, index: VariantIndex,
                 policy: bool = True) -> bool:
        """Whether ``key`` (to be written as ``value``) is kept as a variant: it has one, or
        the store's policy says so (and applies: ``policy``)."""
        if key in index.newest:
            return True
        return (policy and value is not None and self.carried is not None
                and self.carried(key, value))

    def _policy_applies(self, commit: CommitID) -> bool:
        """Whether new keys are kept per branch on a branch at ``commit``: with a policy, and
        when the store has a guard (``carry_guard``: the lakeFS action whose pre-merge hook
        checks lakeFS's merges of them), the commit holds it. Without the guard lakeFS's
        merge must stop on its own conflict, as for any key: so per-key objects."""
        if self.carried is None:
            return False
        if self.carry_guard is None:
            return True
        hit = self._values.get((commit, ("guard", self.carry_guard)))
        if hit is None:
            try:
                self.api(self.api.objects.stat_object, commit, self.carry_guard)
                hit = True
            except RefNotFound:
                hit = False
            self._values.put((commit, ("guard", self.carry_guard)), hit, 64)
        return hit

    def _variant_of(self, ref: str, stats) -> tuple[int, Value | None]:
        stamp = int(_meta(stats, lakefs_log.META_TIME) or 0)
        if _meta(stats, META_DELETED) == "1":
            return stamp, None
        return stamp, self._value_of(ref, stats)

    def _commit_variants(self, commit: CommitID, near: CommitID | None = None) -> VariantIndex:
        """The variants commit ``commit`` holds (kept by commit id): those of a commit whose
        are known (``near``: the branch's previous head; else its first parent, when this
        process knows the commit) changed by lakeFS's diff between the two (one call), else
        listed (one call a page)."""
        hit = self._variant_idx.get(commit)
        if hit is not None:
            return hit
        index = None
        if near is None:
            known_commit = self._commits.get(commit)
            near = known_commit.parents[0] if known_commit and known_commit.parents else None
        known = self._variant_idx.get(near) if near is not None else None
        if known is not None:
            changes = {}
            for path, kind in self._commit_diff(near, commit, VARIANTS):
                if parse_variant(path) is None:
                    continue
                if kind == "removed":
                    changes[path] = None
                else:
                    stats = self.api(self.api.objects.stat_object, commit, path,
                                     user_metadata=True)
                    changes[path] = self._variant_of(commit, stats)
            index = known.changed(changes)
        else:
            by_path = {}
            for stats in self._paged(self.api.objects.list_objects, commit, prefix=VARIANTS,
                                     delimiter="", user_metadata=True):
                if stats.path_type == "object" and parse_variant(stats.path) is not None:
                    by_path[stats.path] = self._variant_of(commit, stats)
            index = VariantIndex(by_path)
        self._variant_idx.put(commit, index, 64 + sum(len(p) + len(v or b"") + 48
                                                     for p, (_, v) in index.by_path.items()))
        return index

    def _put_variants(self, branch: str, owner: str, changes: dict[Key, Value | None],
                      index: VariantIndex, stamp: int) -> dict:
        """Write ``changes`` on ``branch`` as the variants of branch ``owner`` (its own, or, on
        a temporary branch merged into ``owner``, that one's), each stamped after every
        variant of its key in ``index`` and at least ``stamp``; uploads in parallel. Returns
        the index changes (path -> (stamp, value))."""
        done = {}
        futures = []
        for key, value in changes.items():
            path = variant_path(owner, key)
            when = max(stamp, index.stamp_of(key) + 1)
            done[path] = (when, value)
            futures.append(self._pool.submit(self._upload_variant, branch, path, value, when))
        for future in futures:
            future.result()
        return done

    def _upload_variant(self, branch: str, path: str, value: Value | None, stamp: int):
        headers = {"x-lakefs-meta-" + lakefs_log.META_TIME: str(stamp)}
        if value is None:
            headers["x-lakefs-meta-" + META_DELETED] = "1"
        elif len(value) <= INLINE_LIMIT:
            headers["x-lakefs-meta-" + META_VALUE] = base64.b64encode(value).decode("ascii")
        return self.api.upload(branch, path, value or b"", headers)

    def _staged_variant(self, branch: str, path: str) -> tuple[int, Value | None] | None:
        try:
            stats = self.api(self.api.objects.stat_object, branch, path, user_metadata=True)
        except RefNotFound:
            return None
        return self._variant_of(branch, stats)


__all__ = ["EMPTY", "META_DELETED", "VARIANTS", "VariantIndex", "Variants", "parse_variant",
           "variant_path"]
