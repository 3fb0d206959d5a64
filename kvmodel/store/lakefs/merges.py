"""History, diffs and merges: lakeFS's log, merge base, diff and merge, with the catalog's 3-way
results written through temporary branches when lakeFS's own merge does not give them."""
from __future__ import annotations

import posixpath
import time
import uuid
from collections.abc import Iterator

from kvmodel.store.contract import (
    BranchName,
    Commit,
    CommitID,
    DiffEntry,
    Key,
    RefExpr,
    Value,
)
from kvmodel.store.errors import (
    DirtyBranch,
    HeadMoved,
    RefNotFound,
    StoreError,
)
from kvmodel.store.lakefs.api import LakeFSError
from kvmodel.store.lakefs.common import (
    _ABSENT,
    CONNECT_TIMEOUT,
    META_AUTHOR,
    META_CREATED,
    NOT_DATA,
    PAGE,
    PREFIX,
    TEMP_BRANCH,
    VERSIONING_TIMEOUT,
    _key,
)
from kvmodel.store.lakefs.views import _Snapshot
from kvmodel.store.refs import merge_base


def _rewrites(src: dict, dst: dict) -> list[str]:
    """Directories (``a/b/``) that one side rewrote while the other changed them differently.

    Spark's INSERT OVERWRITE of a partition deletes its files and writes new ones under new
    names, so two branches that both rewrote a partition share no changed path: lakeFS's merge
    finds no conflict and keeps both sides' new files (the rows twice, or mixed). A directory is
    a conflict when the two sides' changes in it differ and at least one side removed a file
    there; two sides only adding files (appends) merge cleanly, as in lakeFS."""
    def by_dir(changes: dict) -> dict:
        out: dict = {}
        for path, kind in changes.items():
            out.setdefault(posixpath.dirname(path), {})[path] = kind
        return out

    s, d = by_dir(src), by_dir(dst)
    return [f"{directory}/" for directory in sorted(set(s) & set(d))
            if s[directory] != d[directory]
            and "removed" in (*s[directory].values(), *d[directory].values())]


def _children_first(stream) -> Iterator[Commit]:
    """lakeFS's log, newest first, with every commit after its children (the contract's order).

    lakeFS orders its log by creation date, kept in whole seconds, so commits of one second
    come in any order, a parent possibly before its child (found against a real lakeFS; a
    merge of commits made within a second shows it). The stream is read lazily, a second's
    worth at a time, and each second's commits are put children first (stable otherwise)."""
    group: list[Commit] = []
    second = None
    for stamp, commit in stream:  # (lakeFS's creation date in seconds, the commit)
        if group and stamp != second:
            yield from _topological(group)
            group = []
        second = stamp
        group.append(commit)
    yield from _topological(group)


def _topological(group: list[Commit]) -> list[Commit]:
    """``group`` with every commit before its parents within the group, newest first."""
    if len(group) < 2:
        return group
    ids = {c.id for c in group}
    children = {c.id: 0 for c in group}
    for c in group:
        for p in c.parents:
            if p in ids:
                children[p] += 1
    out, pending = [], list(group)
    while pending:
        # the newest of those whose children are out (our commits carry their time to the
        # microsecond, META_CREATED); lakeFS's order among equals
        ready = max((c for c in pending if children[c.id] == 0), default=pending[0],
                    key=lambda c: c.created)
        pending.remove(ready)
        out.append(ready)
        for p in ready.parents:
            if p in children:
                children[p] -= 1
    return out


class Merges:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the package doc)."""

    def log(self, ref: RefExpr, limit: int | None = None) -> Iterator[Commit]:
        head = self.resolve(ref).commit
        if limit is not None and limit <= 0:
            return
        seen = 0
        for commit in _children_first((int(raw.creation_date), self._commit_of(raw))
                                      for raw in self._paged(self.api.refs.log_commits, head)):
            yield commit
            seen += 1
            if limit is not None and seen >= limit:
                return

    def merge_base(self, a: RefExpr, b: RefExpr) -> CommitID | None:
        ca, cb = self.resolve(a).commit, self.resolve(b).commit
        return self._merge_base(ca, cb)

    def _merge_base(self, a: CommitID, b: CommitID) -> CommitID | None:
        """lakeFS's merge base of two commits (its own walk when lakeFS cannot say)."""
        try:
            found = self.api(self.api.refs.find_merge_base, a, b)
            return found.base_commit_id or None
        except (StoreError, AttributeError):
            return merge_base(a, b, self.get_commit)

    def diff(self, left: RefExpr, right: RefExpr, prefix: Key = "") -> Iterator[DiffEntry]:
        lview, rview = self._view(left), self._view(right)
        changed: dict[Key, tuple] = {}
        if lview.ref.commit != rview.ref.commit:
            keys = sorted(self._changed_keys(lview.ref.commit, rview.ref.commit, prefix))
            lvals = _Snapshot(self, lview.ref.commit).get_many(keys)
            rvals = _Snapshot(self, rview.ref.commit).get_many(keys)
            changed = {k: (lv, rv) for k, lv, rv in zip(keys, lvals, rvals) if lv != rv}
        recheck = {k for k in (*lview._staged, *rview._staged) if k.startswith(prefix)}
        if recheck:
            keys = sorted(recheck)
            for k, lv, rv in zip(keys, lview.get_many(keys), rview.get_many(keys)):
                if lv != rv:
                    changed[k] = (lv, rv)
                else:
                    changed.pop(k, None)
        for k in sorted(changed):
            yield DiffEntry(k, *changed[k])

    def _changed_keys(self, left: CommitID, right: CommitID, prefix: Key = "") -> set:
        """Keys that may read differently at two commits: those whose per-key objects differ,
        and those either commit's live log entries set (values are compared by the caller)."""
        keys = {_key(path) for path, _ in self._commit_diff(left, right, PREFIX + prefix)}
        for commit in (left, right):
            keys.update(k for k in self._commit_log(commit).keys if k.startswith(prefix))
        # keys kept per branch: their newest variants at the two commits (the right's made
        # from the left's and the diff between them, which a merge has asked for already)
        lvar = self._commit_variants(left).newest
        rvar = self._commit_variants(right, near=left).newest
        keys.update(k for k in lvar.keys() | rvar.keys()
                    if k.startswith(prefix) and lvar.get(k, _ABSENT) != rvar.get(k, _ABSENT))
        if left != right and (lvar or rvar or any(self._commit_log(c).keys
                                                   for c in (left, right))):
            # value-compared: keep only real changes
            found = sorted(keys)
            lv = _Snapshot(self, left).get_many(found)
            rv = _Snapshot(self, right).get_many(found)
            return {k for k, a, b in zip(found, lv, rv) if a != b}
        return keys

    def data_conflicts(self, base: CommitID, source: CommitID, dest: CommitID) -> list[str]:
        """Data paths (outside the catalog and the journals) both sides changed differently
        since ``base``: what lakeFS's merge would call conflicts."""
        def changed(side):
            return {path: kind for path, kind in self._commit_diff(base, side)
                    if not path.startswith(NOT_DATA)}

        src, dst = changed(source), changed(dest)
        rewritten = _rewrites(src, dst)
        both = sorted(p for p in set(src) & set(dst)
                      if posixpath.dirname(p) + "/" not in rewritten)
        conflicts = list(rewritten)
        for path in both:
            if src[path] == "removed" and dst[path] == "removed":
                continue
            if src[path] != "removed" and dst[path] != "removed":
                try:
                    a = self.api(self.api.objects.stat_object, source, path)
                    b = self.api(self.api.objects.stat_object, dest, path)
                    if a.checksum == b.checksum:
                        continue
                except RefNotFound:
                    pass
            conflicts.append(path)
        return sorted(conflicts)

    def _rewrite_to(self, branch: str, directory: str, winner: CommitID) -> None:
        """Make ``directory`` on ``branch`` hold exactly the objects it holds at ``winner``
        (a rewrite conflict resolved by a strategy: the winner's files, none of the other's)."""
        def listing(ref):
            return {o.path: o.checksum for o in self._paged(self.api.objects.list_objects, ref,
                                                            prefix=directory, delimiter="")
                    if o.path_type == "object"}
        have, want = listing(branch), listing(winner)
        extra = sorted(p for p in have if p not in want)
        for i in range(0, len(extra), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=extra[i:i + PAGE]))
        for path in sorted(p for p, sum_ in want.items() if have.get(p) != sum_):
            self.api(self.api.objects.copy_object, branch, path,
                     self.api.sdk.ObjectCopyCreation(src_path=path, src_ref=winner))

    def commit_snapshot(self, branch: BranchName, parents: list[CommitID],
                        changes: Iterator[tuple[Key, Value | None]], message: str,
                        author: str = "", metadata: dict[str, str] | None = None,
                        expected_head: CommitID | None = None,
                        data_strategy: str | None = None) -> Commit:
        self._check_open()
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        writes = {}
        for key, value in changes:
            writes[key] = value
        with self._whole(branch):
            state = self._refresh(branch)
            if expected_head is not None and state.head != expected_head:
                raise HeadMoved(f"branch {branch!r} is at {state.head[:12]}, not "
                                f"{expected_head[:12]}")
            if not parents:
                raise StoreError("lakeFS cannot make a commit without parents: every commit "
                                 "of a repository descends from its first")
            if parents[0] != state.head:
                raise HeadMoved(f"branch {branch!r} is at {state.head[:12]}, not at the "
                                "snapshot's first parent")
            if self._real_staged(branch, state) or self._data_staged(branch):
                raise DirtyBranch(f"branch {branch!r} has uncommitted changes: commit or reset "
                                  "them first (lakeFS commits and merges a branch whole)")
            if state.base or self._log_staged(branch):  # no-op writes: drop them
                self._reset_catalog(branch)
            if len(parents) == 1:
                return self._snapshot_on(branch, state, writes, message, author, metadata)
            return self._merge_snapshot(branch, state, parents[1], writes, message, author,
                                        metadata, data_strategy)

    def _snapshot_on(self, branch, state, writes, message, author, metadata) -> Commit:
        if not self._protected(branch, fresh=True):  # one log entry, folded and committed
            if writes:
                self._log_write(branch, state, writes)
                self._fold(branch, self._refresh(branch))
            return self._commit(branch, message, author, metadata, allow_empty=True)
        # on a temporary branch, merged in: the branch moves once, with all of it or none
        temp = self._temp_branch(state.head)
        try:
            if writes:
                if self._commit_log(state.head).keys:  # they would read over the writes
                    self._fold_branch(temp)
                self._put_catalog(temp, branch, state.head, writes,
                                  state.variants.newest.keys())
            self._commit(temp, message, author, metadata, allow_empty=True)
            return self._merge(temp, branch, message, author, metadata, None)
        finally:
            self._drop_temp(temp)

    def _merge_snapshot(self, branch, state, source: CommitID, writes, message, author,
                        metadata, data_strategy) -> Commit:
        dest = state.head
        base = self._merge_base(source, dest)
        src_changed = self._changed_keys(base, source) if base else set()
        dst_changed = self._changed_keys(base, dest) if base else set()
        # commits holding live log entries (made around our folds): lakeFS's merge of their
        # objects is not the merge of what they read as, so the result is checked below
        logged = any(self._commit_log(c).keys for c in (source, dest, base) if c)
        dest_snap, src_snap = _Snapshot(self, dest), _Snapshot(self, source)
        keys = sorted(src_changed | set(writes))
        dvals = dict(zip(keys, dest_snap.get_many(keys)))
        svals = dict(zip(keys, src_snap.get_many(keys)))
        final = {k: writes[k] if k in writes else dvals[k] for k in keys}
        # what lakeFS's merge gives by itself: the source's change where only it changed
        natural = all(
            (k in src_changed and k not in dst_changed and final[k] == svals[k]) or
            (k not in src_changed and final[k] == dvals[k])
            for k in keys)
        conflicts = self.data_conflicts(base, source, dest) if base else []
        if natural and not conflicts and not logged:
            return self._merge(source, branch, message, author, metadata, None)
        # lakeFS's merge of the source into a temporary branch of the destination (its data
        # conflicts resolved by the caller's strategy), the catalog set to the 3-way result
        # there, then that branch merged into the destination, which moves once
        temp = self._temp_branch(dest)
        try:
            strategy = data_strategy if data_strategy in ("source-wins", "dest-wins") else \
                "source-wins"
            self._merge(source, temp, f"Merge {source[:12]} for {branch}", author, {}, strategy)
            rewrites = [c for c in conflicts if c.endswith("/")]
            if rewrites:  # lakeFS kept both sides' files there: the winner's alone
                winner = dest if data_strategy == "dest-wins" else source
                for directory in rewrites:
                    self._rewrite_to(temp, directory, winner)
                self._commit(temp, f"Merge: rewritten directories as {data_strategy} says",
                             author, {}, allow_empty=True)
            temp_head = self._branch(temp).commit_id
            every = sorted(set(keys) | dst_changed)
            extra = [k for k in every if k not in final]  # changed by dest alone: kept
            final.update(zip(extra, dest_snap.get_many(extra)))
            merged = dict(zip(every, _Snapshot(self, temp_head).get_many(every)))
            fixes = {k: final[k] for k in every if merged[k] != final[k]}
            if fixes:
                if self._commit_log(temp_head).keys:  # they would read over the fixes
                    self._fold_branch(temp)
                sticky = self._commit_variants(source, near=base) if base else None
                sticky = (sticky.newest.keys() if sticky else set()) | \
                    (self._commit_variants(dest, near=base).newest.keys() if base else set())
                self._put_catalog(temp, branch, temp_head, fixes, sticky)
                self._commit(temp, f"Merge resolutions for {branch}", author, {},
                             allow_empty=True)
            return self._merge(temp, branch, message, author, metadata, None)
        finally:
            self._drop_temp(temp)

    def _merge(self, source: str, branch: str, message, author, metadata, strategy) -> Commit:
        now = time.time()
        meta = {str(k): str(v) for k, v in (metadata or {}).items()}
        meta[META_AUTHOR] = author or ""
        meta[META_CREATED] = repr(now)
        try:
            result = self.api(self.api.refs.merge_into_branch, source, branch,
                              self.api.sdk.Merge(message=message, metadata=meta,
                                                 strategy=strategy, allow_empty=True),
                              _request_timeout=(CONNECT_TIMEOUT, VERSIONING_TIMEOUT))
        except LakeFSError as exc:
            if "conflict" in str(exc).lower():
                raise LakeFSError(f"lakeFS found conflicts merging into {branch!r}: {exc}") \
                    from None
            raise
        self._outdate(branch)
        self._announce(branch)
        return self.get_commit(result.reference)

    def _temp_branch(self, source: CommitID) -> str:
        name = TEMP_BRANCH + uuid.uuid4().hex[:16]
        self.api(self.api.branches.create_branch,
                 self.api.sdk.BranchCreation(name=name, source=source))
        return name

    def _drop_temp(self, name: str) -> None:
        try:
            self.api(self.api.branches.delete_branch, name)
        except StoreError:
            pass
        with self._lock:
            self._branches.pop(name, None)
