"""A branch's staged catalog changes as its in-memory states hold them: key -> value (None:
deleted), readable in key order.

Every write of a branch makes a new state (the old one stays readable by the views that hold
it), so extending the changes must not copy what is there already: between two commits a busy
branch stages hundreds of thousands of keys, and a copy per write made eight writers get less
than a tenth of their rate on a small branch. :class:`Staged` is two layers: a large ``base``
that is never changed once made (shared by every state built on it) and a small ``top`` that a
write copies and extends. When the top outgrows about the square root of the base it is
merged into a new base, so a write costs about that many steps, not the whole branch.
"""
from __future__ import annotations

import bisect
from math import isqrt
from typing import Iterator, Mapping

TOP_MIN = 512  # the top is merged into the base from this size on (or the base's root, x2)

_MISSING = object()


class Staged:
    """key -> value | None, in key order; never changed once made (:meth:`with_changes` makes
    another)."""

    __slots__ = ("_base", "_base_keys", "_top", "_top_keys", "_len")

    def __init__(self, items: Mapping | None = None):
        self._base = dict(items or {})
        self._base_keys = sorted(self._base)
        self._top: dict = {}
        self._top_keys: list = []
        self._len = len(self._base)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __contains__(self, key) -> bool:
        return key in self._top or key in self._base

    def __getitem__(self, key):
        value = self._top.get(key, _MISSING)
        return self._base[key] if value is _MISSING else value

    def get(self, key, default=None):
        value = self._top.get(key, _MISSING)
        return self._base.get(key, default) if value is _MISSING else value

    def __iter__(self) -> Iterator:
        return iter(self.keys_between("", None))

    def keys_between(self, start: str, end: str | None) -> list:
        """The keys from ``start`` (included) to ``end`` (excluded; None: to the last), in
        order."""
        below = _slice(self._base_keys, start, end)
        above = _slice(self._top_keys, start, end)
        if not above:
            return below
        if not below:
            return above
        base = self._base
        # timsort merges the two sorted runs in one pass
        return sorted([*below, *(k for k in above if k not in base)])

    def items_between(self, start: str, end: str | None) -> list:
        """(key, value) from ``start`` to ``end``, in key order."""
        top, base = self._top, self._base
        return [(k, top[k] if k in top else base[k]) for k in self.keys_between(start, end)]

    def items(self) -> list:
        return self.items_between("", None)

    def with_changes(self, changes: Mapping) -> "Staged":
        """These changes with ``changes`` applied over them (a new object; this one is left as
        it was, for the views reading it)."""
        if not changes:
            return self
        base, top = self._base, dict(self._top)
        fresh = [k for k in changes if k not in top]
        size = self._len + sum(1 for k in fresh if k not in base)
        top.update(changes)
        # one sorted run and the new keys: timsort takes a few keys in one pass, and many in
        # n log n (not a list insertion each)
        top_keys = sorted([*self._top_keys, *fresh]) if fresh else self._top_keys
        out = Staged.__new__(Staged)
        if len(top) > max(TOP_MIN, 2 * isqrt(len(base))):
            merged = dict(base)
            merged.update(top)
            out._base = merged
            out._base_keys = sorted([*self._base_keys, *(k for k in top_keys if k not in base)])
            out._top, out._top_keys = {}, []
        else:
            out._base, out._base_keys, out._top, out._top_keys = \
                base, self._base_keys, top, top_keys
        out._len = size
        return out


EMPTY_STAGED = Staged()


def _slice(keys: list, start: str, end: str | None) -> list:
    lo = bisect.bisect_left(keys, start) if start else 0
    hi = len(keys) if end is None else bisect.bisect_left(keys, end)
    return keys[lo:hi] if lo < hi else []
