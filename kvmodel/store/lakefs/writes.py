"""Writes, commits and resets: a write transaction as one log entry, a commit folding the log
into per-key objects."""
from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kvmodel.store.contract import (
    BranchName,
    Commit,
    CommitID,
    DiffEntry,
    Key,
    RefExpr,
    ResolvedRef,
    Value,
)
from kvmodel.store.errors import (
    HeadMoved,
    NothingToCommit,
    ProtectedRef,
    ReadOnlyRef,
    RefNotFound,
    StoreError,
)
from kvmodel.store.lakefs import log as lakefs_log
from kvmodel.store.lakefs.api import LakeFSError
from kvmodel.store.lakefs.common import (
    _ABSENT,
    CONNECT_TIMEOUT,
    INLINE_LIMIT,
    JOURNAL,
    META_AUTHOR,
    META_CREATED,
    META_VALUE,
    NOT_DATA,
    PAGE,
    PREFIX,
    VERSIONING_TIMEOUT,
    _path,
)
from kvmodel.store.lakefs.views import _BranchState, _Snapshot, _Write


class Writes:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the package doc)."""

    @contextmanager
    def read(self, ref: RefExpr):
        self._check_open()
        yield self._view(ref)

    def get(self, ref: RefExpr, key: Key) -> Value | None:
        return self._view(ref).get(key)

    def token(self, ref: RefExpr) -> object:
        return self._view(ref).token

    @contextmanager
    def write(self, branch: BranchName):
        self._check_open()
        name = branch if self._fresh(branch) is not None else self.resolve(branch).branch
        if name is None:
            raise ReadOnlyRef(f"{branch!r} is not a branch: only branches can be written")
        with self._branch_lock(name):
            state = self._fresh(name, news=True) or self._refresh(name)
            txn = _Write(self, ResolvedRef(branch, state.head, name, None), state, None)
            yield txn
            if txn.changes:
                # lakeFS applies a new protection rule to writes only after its settings cache
                # expires (1 s, seconds in practice): ask for the rules themselves (ours are
                # always current; another server's within RULES_TTL)
                if self._protected(name):
                    raise ProtectedRef(f"branch {name!r} is protected: it changes only by "
                                       "merges")
                self._log_write(name, state, txn.changes)

    def _log_write(self, branch: str, state: _BranchState, changes: dict) -> None:
        """One log entry with all of ``changes``: uploaded whole, or not at all."""
        name = lakefs_log.new_entry_name()
        self.api.upload(branch, lakefs_log.directory(branch) + name, lakefs_log.encode(changes))
        news = self._announce(branch)
        with self._lock:
            self._entries[(branch, name)] = dict(changes)
            current = self._branches.get(branch) or state
            new = self._extend(branch, current, [name], current.checked)
            # our own change: the state stays current unless another was announced meanwhile
            new.news = news if news is not None and current.news == news - 1 else None
            self._put_state(branch, new)

    def _put_keys(self, branch: str, head: CommitID, changes: dict,
                  base: dict | None = None) -> None:
        """Write ``changes`` as per-key objects on ``branch`` (whose head is ``head``): uploads in
        parallel, then bulk deletes of what the branch has. Not atomic: used on temporary
        branches and by a fold, whose log still holds the changes."""
        snap = _Snapshot(self, head)
        puts = [(k, v) for k, v in changes.items() if v is not None]
        dels = [k for k, v in changes.items() if v is None]
        for future in [self._pool.submit(self._upload, branch, k, v) for k, v in puts]:
            future.result()
        base = base or {}
        self._delete_paths(branch, [_path(k) for k in dels
                                    if base.get(k) is not None or
                                    (k not in base and snap.get(k) is not None)])

    def _delete_paths(self, branch: str, paths: list[str]) -> None:
        for i in range(0, len(paths), PAGE):
            answer = self.api(self.api.objects.delete_objects, branch,
                              self.api.sdk.PathList(paths=paths[i:i + PAGE]))
            errors = [e for e in (answer.errors or []) if e.status_code not in (404, None)]
            if errors:
                raise LakeFSError(f"lakeFS could not delete {errors[0].path}: "
                                  f"{errors[0].message}")

    def _upload(self, branch: str, key: Key, value: bytes):
        headers = {}
        if len(value) <= INLINE_LIMIT:
            headers["x-lakefs-meta-" + META_VALUE] = base64.b64encode(value).decode("ascii")
        return self.api.upload(branch, _path(key), value, headers)

    def _real_staged(self, branch: str, state: _BranchState) -> list[DiffEntry]:
        snap = _Snapshot(self, state.head)
        keys = state.keys
        committed = snap.get_many(keys)
        return [DiffEntry(k, c, state.staged[k]) for k, c in zip(keys, committed)
                if c != state.staged[k]]

    def _data_staged(self, branch: str) -> bool:
        """Whether the branch has uncommitted changes outside the catalog and its log."""
        for entry in self._paged(self.api.branches.diff_branch, branch):
            if not entry.path.startswith(NOT_DATA):
                return True
        return False

    def commit(self, branch: BranchName, message: str, author: str = "",
               metadata: dict[str, str] | None = None, expected_head: CommitID | None = None,
               allow_empty: bool = False) -> Commit:
        self._check_open()
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        if self._protected(branch, fresh=True):  # lakeFS's own check may lag (see write)
            raise ProtectedRef(f"branch {branch!r} is protected: it changes only by merges")
        with self._branch_lock(branch):
            state = self._refresh(branch)
            if expected_head is not None and state.head != expected_head:
                raise HeadMoved(f"branch {branch!r} is at {state.head[:12]}, not "
                                f"{expected_head[:12]}")
            changes = self._real_staged(branch, state)
            if not allow_empty and not changes and not self._data_staged(branch):
                if state.staged or state.entries or state.markers:  # no-op writes: drop them
                    self._reset_catalog(branch)
                raise NothingToCommit(f"nothing to commit on branch {branch!r}")
            self._fold(branch, state, changes)
            return self._commit(branch, message, author, metadata, allow_empty=True)

    def _fold(self, branch: str, state: _BranchState, changes: list[DiffEntry]) -> None:
        """Write the log's net changes as per-key objects, then drop the log: a marker naming
        the entries folded first, so that a fold stopped at any step reads the same."""
        if not state.entries and not state.markers:
            return  # per-key objects only: committed as they are
        writes = {}
        for entry in changes:
            if entry.right is None or state.base.get(entry.key, _ABSENT) != entry.right:
                writes[entry.key] = entry.right
        # keys staged per key whose value the log took back to the committed one
        for key, value in state.base.items():
            if key not in writes and state.staged.get(key) != value:
                writes[key] = state.staged.get(key)
        self._put_keys(branch, state.head, writes, state.base)
        directory = lakefs_log.directory(branch)
        marker = lakefs_log.new_marker_name()
        self.api.upload(branch, directory + marker,
                        lakefs_log.encode_marker(list(state.entries) + list(state.markers)))
        done = [n for n in state.markers if not lakefs_log.is_marker(n)]
        self._delete_paths(branch, [directory + n for n in (*state.entries, *done)])
        self._delete_paths(branch, [directory + n for n in state.markers
                                    if lakefs_log.is_marker(n)] + [directory + marker])
        try:  # the journal of the layout before the log, if any
            self.api(self.api.branches.reset_branch, branch, self.api.sdk.ResetCreation(
                type="object", path=JOURNAL + branch))
        except StoreError:
            pass

    def _commit(self, branch, message, author, metadata, allow_empty=False) -> Commit:
        now = time.time()
        meta = {str(k): str(v) for k, v in (metadata or {}).items()}
        meta[META_AUTHOR] = author or ""
        meta[META_CREATED] = repr(now)
        raw = self.api(self.api.commits.commit, branch, self.api.sdk.CommitCreation(
            message=message, metadata=meta, date=int(now), allow_empty=allow_empty),
            _request_timeout=(CONNECT_TIMEOUT, VERSIONING_TIMEOUT))
        commit = self._commit_of(raw)
        self._outdate(branch)
        self._announce(branch)
        return commit

    def staged(self, branch: BranchName) -> Iterator[DiffEntry]:
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        state = self._refresh(branch)
        return iter(self._real_staged(branch, state))

    def reset(self, branch: BranchName) -> int:
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        with self._branch_lock(branch):
            state = self._refresh(branch)
            dropped = len(self._real_staged(branch, state))
            self._reset_catalog(branch)
            return dropped

    def _reset_catalog(self, branch: str) -> None:
        sdk = self.api.sdk
        self.api(self.api.branches.reset_branch, branch,
                 sdk.ResetCreation(type="common_prefix", path=PREFIX))
        for kind, path in (("common_prefix", lakefs_log.directory(branch)),
                           ("object", JOURNAL + branch)):  # the layout before the log's
            try:
                self.api(self.api.branches.reset_branch, branch,
                         sdk.ResetCreation(type=kind, path=path))
            except RefNotFound:
                pass
        with self._lock:
            self._branches.pop(branch, None)
            self._forget_log(branch)
        self._announce(branch)
