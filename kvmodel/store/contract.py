"""The versioned key-value store contract.

Every backend (embedded SQLite, lakeFS) implements :class:`VersionedStore`. The catalog
(:mod:`kvmodel.catalog`) only ever talks to this contract, and one contract test suite
(``tests/kvmodel/``) runs against every backend.

Model, after lakeFS Graveler:

* **refs** -- branches (mutable pointers to a commit, plus a staging area), tags (immutable
  pointers to a commit) and commits (id, parents, message, author, time, metadata).
  A *ref expression* is a branch name, a tag name, a commit id (or an unambiguous prefix of at
  least 6 hex digits), optionally followed by ancestry operators ``~N`` / ``^`` / ``^N``
  (``main~2``: the first-parent grandparent of main's head; ``merge^2``: its second parent).
* **staging** -- per-branch uncommitted writes and tombstones. Durable once the write
  transaction returns, and visible at once to every reader of that branch.
* **committed** -- immutable snapshots made of content-addressed sorted ranges and a range
  index (metarange); creating a branch is O(1) and a commit costs in proportion to the change.

Keys are ``str`` (compared by code point, which equals UTF-8 byte order); values are ``bytes``.
A value of ``None`` in staging is a tombstone: the key is deleted on the branch.

Iterators: ``scan`` returns a plain iterator of ``(key, value)`` pairs in ascending key order.
To *seek* (e.g. skip past a table's partitions) call ``scan`` again with a new ``start``; it is
cheap on every backend (a bisection, not a walk).
"""
from __future__ import annotations

import abc
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

BranchName = str
TagName = str
CommitID = str
RefExpr = str
Key = str
Value = bytes


SHORT_ID = 12  # characters of a commit id shown to people


@dataclass(frozen=True)
class Commit:
    """One immutable commit of the catalog."""

    id: CommitID
    parents: tuple[CommitID, ...]
    message: str
    author: str
    created: float  # seconds since the epoch
    metadata: dict[str, str] = field(default_factory=dict)
    metarange: str = ""  # backend-specific id of the committed snapshot

    def to_json(self) -> dict:
        """The commit as JSON (``hms-proxy log --json``, the HTTP API): its date in UTC."""
        return {"id": self.id, "short_id": self.id[:SHORT_ID], "parents": list(self.parents),
                "message": self.message or "", "author": self.author or "",
                "created": float(self.created),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created)),
                "metadata": {str(k): str(v) for k, v in (self.metadata or {}).items()}}


@dataclass(frozen=True)
class Branch:
    name: BranchName
    head: CommitID
    protected: bool = False


@dataclass(frozen=True)
class Tag:
    name: TagName
    commit: CommitID


@dataclass(frozen=True)
class ResolvedRef:
    """What a ref expression points at right now.

    ``branch`` is set only when the expression is a plain branch name; only then are the
    branch's staged (uncommitted) writes part of what a reader sees, and only then may it be
    written to.
    """

    expr: RefExpr
    commit: CommitID
    branch: BranchName | None = None
    tag: TagName | None = None

    @property
    def writable(self) -> bool:
        return self.branch is not None


@dataclass(frozen=True)
class DiffEntry:
    """A key whose value differs between two refs. ``left``/``right`` None means absent."""

    key: Key
    left: Value | None
    right: Value | None

    @property
    def kind(self) -> str:
        if self.left is None:
            return "added"
        if self.right is None:
            return "removed"
        return "changed"


class ReadView(abc.ABC):
    """A consistent, read-only view of one ref at one instant.

    ``token`` identifies the content the view sees: two views with equal tokens (not None) see
    identical content, so anything derived from a view may be cached under its token, across
    threads and processes. A branch's token changes with every change to it (a staged write,
    a commit, a reset); a tag's or commit's never does. None means: do not cache.
    """

    ref: ResolvedRef
    token: object = None

    @abc.abstractmethod
    def get(self, key: Key) -> Value | None:
        """The value of ``key``, or None when absent (or deleted in staging)."""

    @abc.abstractmethod
    def scan(self, start: Key = "", end: Key | None = None) -> Iterator[tuple[Key, Value]]:
        """Pairs with ``start <= key < end`` (no upper bound when ``end`` is None), ascending."""

    def scan_prefix(self, prefix: Key) -> Iterator[tuple[Key, Value]]:
        return self.scan(prefix, prefix_end(prefix))

    def first(self, start: Key, end: Key | None = None) -> tuple[Key, Value] | None:
        return next(iter(self.scan(start, end)), None)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        return [self.get(k) for k in keys]


class WriteTxn(ReadView):
    """An atomic, serialisable write transaction on one branch.

    Reads see the branch (committed + staged) plus this transaction's own writes. Nothing is
    visible to others until the transaction's context exits without an exception; an exception
    rolls everything back.
    """

    @abc.abstractmethod
    def put(self, key: Key, value: Value) -> None:
        """Stage ``key = value`` on the branch."""

    @abc.abstractmethod
    def delete(self, key: Key) -> None:
        """Stage a tombstone for ``key`` (a no-op when absent)."""

    def put_many(self, items: list[tuple[Key, Value]]) -> None:
        """Stage several keys at once (backends may batch them)."""
        for key, value in items:
            self.put(key, value)

    def delete_prefix(self, prefix: Key) -> int:
        """Delete every key under ``prefix``; returns how many were deleted."""
        keys = [k for k, _ in self.scan_prefix(prefix)]
        for k in keys:
            self.delete(k)
        return len(keys)


class VersionedStore(abc.ABC):
    """A versioned, branchable ordered key-value store."""

    #: Whether :meth:`commit_snapshot` makes a commit with exactly the given parents whatever
    #: the changes, leaving the branch's staging alone. A backend whose merges are its
    #: storage's own (lakeFS) says False: it needs a clean branch (DirtyBranch), and when the
    #: changes are not what merging ``parents[1]`` into ``parents[0]`` gives by itself, the
    #: merge's second parent is a commit holding them, made after ``parents[1]`` (which stays
    #: an ancestor). Either way the branch moves once.
    exact_snapshots: bool = True

    #: Whether a protected branch refuses writes and commits in the store itself (lakeFS's
    #: branch protection: a protected branch changes only by merges). False: protection
    #: only keeps the branch from being deleted or reset (the server refuses clients' writes).
    protection_blocks_writes: bool = False

    @staticmethod
    def branch_name_valid(name: str) -> bool:
        """Whether the backend takes ``name`` (already a valid ref name) as a branch name."""
        return True

    # --- reads and writes -------------------------------------------------------------
    @abc.abstractmethod
    def read(self, ref: RefExpr) -> AbstractContextManager[ReadView]:
        """A consistent read view of ``ref``.

        Raises:
            RefNotFound: no branch, tag or commit by that expression.
        """

    @abc.abstractmethod
    def write(self, branch: BranchName) -> AbstractContextManager[WriteTxn]:
        """An atomic write transaction on ``branch``.

        Raises:
            RefNotFound: no such branch.
            ReadOnlyRef: ``branch`` names a tag, a commit or an ancestry expression.
        """

    def get(self, ref: RefExpr, key: Key) -> Value | None:
        """One key at ``ref``: the same answer as ``read(ref).get(key)``; backends may answer
        it faster (it is the hot path of get_table and get_partition)."""
        with self.read(ref) as view:
            return view.get(key)

    def token(self, ref: RefExpr) -> object:
        """The token a read view of ``ref`` would have now (see :class:`ReadView`): what
        lets a caller use something cached under it without opening a view at all."""
        with self.read(ref) as view:
            return view.token

    # --- refs ---------------------------------------------------------------------------
    @abc.abstractmethod
    def resolve(self, ref: RefExpr) -> ResolvedRef:
        """Resolve a ref expression. Raises RefNotFound, InvalidRef. A store that caches
        branch heads may answer within its documented staleness bound."""

    def latest(self, ref: RefExpr) -> ResolvedRef:
        """:meth:`resolve`, a branch at its head as the store has it now (no cached head):
        what a merge or a revert starts from, so that another process's commit made just
        before is merged, not missed."""
        return self.resolve(ref)

    @abc.abstractmethod
    def create_branch(self, name: BranchName, source: RefExpr) -> Branch:
        """A new branch at ``source``'s commit (O(1); staged writes of a source branch are
        not carried over, as in lakeFS). Raises RefExists, RefNotFound, InvalidRef."""

    @abc.abstractmethod
    def delete_branch(self, name: BranchName) -> None:
        """Delete a branch and its staging. Raises RefNotFound, ProtectedRef."""

    @abc.abstractmethod
    def list_branches(self) -> list[Branch]:
        """All branches, by name."""

    def get_branch(self, name: BranchName) -> Branch | None:
        """The branch by that name, or None (a tag, a commit or nothing)."""
        return next((b for b in self.list_branches() if b.name == name), None)

    @abc.abstractmethod
    def set_branch_protection(self, name: BranchName, protected: bool) -> None:
        """Mark a branch protected (it cannot be deleted or reset). Raises RefNotFound."""

    @abc.abstractmethod
    def create_tag(self, name: TagName, ref: RefExpr) -> Tag:
        """A tag at ``ref``'s commit. Raises RefExists, RefNotFound, InvalidRef."""

    @abc.abstractmethod
    def delete_tag(self, name: TagName) -> None:
        """Raises RefNotFound."""

    @abc.abstractmethod
    def list_tags(self) -> list[Tag]:
        """All tags, by name."""

    # --- commits ------------------------------------------------------------------------
    @abc.abstractmethod
    def commit(
        self,
        branch: BranchName,
        message: str,
        author: str = "",
        metadata: dict[str, str] | None = None,
        expected_head: CommitID | None = None,
        allow_empty: bool = False,
    ) -> Commit:
        """Snapshot the branch's staged writes into a new commit and clear its staging.

        Raises:
            RefNotFound: no such branch.
            NothingToCommit: nothing staged and ``allow_empty`` is false.
            HeadMoved: ``expected_head`` is given and the branch head is elsewhere.
        """

    @abc.abstractmethod
    def get_commit(self, commit_id: CommitID) -> Commit:
        """Raises RefNotFound."""

    @abc.abstractmethod
    def log(self, ref: RefExpr, limit: int | None = None) -> Iterator[Commit]:
        """Commits reachable from ``ref``, newest first (by time, then id), each once."""

    @abc.abstractmethod
    def merge_base(self, a: RefExpr, b: RefExpr) -> CommitID | None:
        """The best common ancestor of two refs' commits, or None when unrelated."""

    @abc.abstractmethod
    def diff(self, left: RefExpr, right: RefExpr, prefix: Key = "") -> Iterator[DiffEntry]:
        """Keys (under ``prefix``) whose values differ from ``left`` to ``right``, ascending.
        A branch ref includes its staged writes."""

    @abc.abstractmethod
    def staged(self, branch: BranchName) -> Iterator[DiffEntry]:
        """The branch's uncommitted changes against its head commit, ascending."""

    @abc.abstractmethod
    def reset(self, branch: BranchName) -> int:
        """Drop the branch's staged writes; returns how many keys were dropped."""

    @abc.abstractmethod
    def commit_snapshot(
        self,
        branch: BranchName,
        parents: list[CommitID],
        changes: Iterator[tuple[Key, Value | None]],
        message: str,
        author: str = "",
        metadata: dict[str, str] | None = None,
        expected_head: CommitID | None = None,
    ) -> Commit:
        """Create a commit on ``branch`` whose tree is the tree of ``parents[0]`` with
        ``changes`` applied (a value of None deletes), with the given parents, and move the
        branch to it. Staging is untouched. Used by merge and revert. Raises HeadMoved."""

    def release_thread(self) -> None:
        """Release what the calling thread holds (a server calls it as a connection's thread
        ends, so that thousands of short connections leave nothing open)."""

    def close(self) -> None:
        """Release resources (connections, caches)."""


def prefix_end(prefix: Key) -> Key | None:
    """The smallest key greater than every key starting with ``prefix`` (None: unbounded)."""
    if not prefix:
        return None
    last = prefix[-1]
    if ord(last) >= 0x10FFFF:
        return prefix_end(prefix[:-1])
    return prefix[:-1] + chr(ord(last) + 1)
