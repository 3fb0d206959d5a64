"""Ref names, ref expressions and walks over commit history.

Backend-independent on purpose (like graveler's ``resolve_ref`` and ``merge_base``): every
function here works over a ``get_commit`` callable, so the embedded and the lakeFS backends parse
``main~2^2`` and pick merge bases the same way.
"""
from __future__ import annotations

import functools
import heapq
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kvmodel.store.contract import Commit, CommitID
from kvmodel.store.errors import InvalidRef, RefNotFound

GetCommit = Callable[[CommitID], Commit]

MAX_NAME_LENGTH = 256
MIN_COMMIT_PREFIX = 6
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_HEX = re.compile(r"[0-9a-fA-F]+\Z")
_EXPR = re.compile(r"([^~^]*)((?:[~^][0-9]*)*)\Z")
_HOP = re.compile(r"([~^])([0-9]*)")


def validate_name(name: object) -> str:
    """Check a branch or tag name (git/lakeFS rules: ``[A-Za-z0-9][A-Za-z0-9_.-]*``, no ``..``,
    at most 256 characters). Raises InvalidRef."""
    if not isinstance(name, str) or not name:
        raise InvalidRef(f"invalid ref name {name!r}: empty or not a string")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidRef(f"invalid ref name {name[:40]!r}...: longer than {MAX_NAME_LENGTH}")
    if not _NAME.match(name) or ".." in name:
        raise InvalidRef(
            f"invalid ref name {name!r}: use letters, digits, '_', '.', '-', "
            "starting with a letter or digit, without '..'"
        )
    return name


def is_commit_prefix(text: str) -> bool:
    """Could ``text`` name a commit (hex, at least 6 digits)?"""
    return len(text) >= MIN_COMMIT_PREFIX and bool(_HEX.match(text))


@dataclass(frozen=True)
class RefExpression:
    """A parsed ref expression: a base name plus ancestry hops (``("~", 2)``, ``("^", 1)``)."""

    base: str
    hops: tuple[tuple[str, int], ...] = ()

    @property
    def plain(self) -> bool:
        """No ancestry operators: the expression names a ref itself (and may be writable)."""
        return not self.hops


def parse_ref(expr: object) -> RefExpression:
    """Parse a ref expression (cached: servers resolve the same few refs on every call)."""
    if isinstance(expr, str):
        return _parse_ref_cached(expr)
    raise InvalidRef(f"invalid ref expression {expr!r}: not a string")


@functools.lru_cache(maxsize=1024)
def _parse_ref_cached(expr: str) -> RefExpression:
    """Split ``main~2^2`` into ``RefExpression("main", (("~", 2), ("^", 2)))``.

    ``~`` and ``^`` without a number mean 1, as in git. Raises InvalidRef.
    """
    m = _EXPR.match(expr)
    if not m:
        raise InvalidRef(f"invalid ref expression {expr!r}")
    base, suffix = m.group(1), m.group(2)
    validate_name(base)
    hops = tuple((op, int(num) if num else 1) for op, num in _HOP.findall(suffix))
    return RefExpression(base, hops)


def walk_ancestry(start: CommitID, hops: tuple[tuple[str, int], ...], get_commit: GetCommit,
                  expr: str = "") -> CommitID:
    """Apply ``~N`` (N first parents back) and ``^N`` (the N-th parent; ``^0`` is the commit
    itself) hops. Raises RefNotFound when history is not that deep."""
    if not hops:
        return start
    current = start
    for op, n in hops:
        if op == "~":
            for _ in range(n):
                parents = get_commit(current).parents
                if not parents:
                    raise RefNotFound(f"{expr or current}: history is not that deep")
                current = parents[0]
        elif n:
            parents = get_commit(current).parents
            if len(parents) < n:
                raise RefNotFound(f"{expr or current}: commit {current[:12]} has no parent {n}")
            current = parents[n - 1]
    return current


class _Newest:
    """Heap item ordering commits newest first: by time, then id, both descending."""

    __slots__ = ("commit",)

    def __init__(self, commit: Commit):
        self.commit = commit

    def __lt__(self, other: _Newest) -> bool:
        a, b = self.commit, other.commit
        return (a.created, a.id) > (b.created, b.id)


def iter_log(head: CommitID, get_commit: GetCommit, limit: int | None = None) -> Iterator[Commit]:
    """Commits reachable from ``head`` over all parents, newest first, each once.

    A heap keyed on (time, id) walks the DAG lazily, so ``limit`` bounds the work. Backends
    guarantee a commit is never older than its parents, so a child always precedes its parents.
    """
    if limit is not None and limit <= 0:
        return
    seen = {head}
    heap = [_Newest(get_commit(head))]
    emitted = 0
    while heap:
        commit = heapq.heappop(heap).commit
        yield commit
        emitted += 1
        if limit is not None and emitted >= limit:
            return
        for parent in commit.parents:
            if parent not in seen:
                seen.add(parent)
                heapq.heappush(heap, _Newest(get_commit(parent)))


def ancestors(start: CommitID, get_commit: GetCommit) -> set[CommitID]:
    """``start`` and every commit reachable from it (breadth first)."""
    seen = {start}
    queue = deque([start])
    while queue:
        for parent in get_commit(queue.popleft()).parents:
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return seen


def merge_base(a: CommitID, b: CommitID, get_commit: GetCommit) -> CommitID | None:
    """The best common ancestor of ``a`` and ``b``, or None when their histories are unrelated.

    Candidates are the common ancestors met first by a breadth-first walk from ``b`` that stops at
    anything reachable from ``a``; a candidate that is an ancestor of another candidate is not
    "best" and is dropped (criss-cross histories keep several); ties go to the newest.
    """
    from_a = ancestors(a, get_commit)
    if b in from_a:
        return b
    candidates: set[CommitID] = set()
    seen = {b}
    queue = deque([b])
    while queue:
        for parent in get_commit(queue.popleft()).parents:
            if parent in seen:
                continue
            seen.add(parent)
            if parent in from_a:
                candidates.add(parent)
            else:
                queue.append(parent)
    if not candidates:
        return None
    if len(candidates) > 1:
        dominated: set[CommitID] = set()
        for c in candidates:
            dominated |= ancestors(c, get_commit) - {c}
        candidates = (candidates - dominated) or candidates
    best = max((get_commit(c) for c in candidates), key=lambda c: (c.created, c.id))
    return best.id
