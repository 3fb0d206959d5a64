"""Read views and write transactions over a commit and a branch's state, and the caches of
what commits hold."""
from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import (
    CommitID,
    Key,
    ReadView,
    ResolvedRef,
    Value,
    WriteTxn,
)
from kvmodel.store.lakefs.staged import EMPTY_STAGED, Staged
from kvmodel.store.lakefs.variants import EMPTY, VariantIndex


class _CommitCache:
    """An in-process LRU of what was read at commits, with Redis behind it when given (shared
    by every server over the repository: commits never change, so nothing is invalidated;
    entries expire after a day unused)."""

    TTL = 24 * 3600

    def __init__(self, max_weight: int, redis_url: str | None, namespace: str):
        self.local = LRUCache(max_weight)
        self.redis = None
        self.namespace = namespace
        if redis_url:
            import redis

            self.redis = redis.Redis.from_url(redis_url)

    def _rkey(self, key) -> str:
        import hashlib

        return "hms-lakefs:" + hashlib.sha1(repr((self.namespace, key)).encode()).hexdigest()

    def get(self, key):
        hit = self.local.get(key)
        if hit is not None or self.redis is None:
            return hit
        import pickle

        try:
            raw = self.redis.get(self._rkey(key))
        except Exception:  # noqa: BLE001 - Redis down: lakeFS answers instead
            return None
        if raw is None:
            return None
        value = pickle.loads(raw)
        self.local.put(key, value, 64 + len(raw))
        return value

    def put(self, key, value, weight: int) -> None:
        self.local.put(key, value, weight)
        if self.redis is not None:
            import pickle

            try:
                self.redis.set(self._rkey(key), pickle.dumps(value), ex=self.TTL)
            except Exception:  # noqa: BLE001 - Redis down: in process only
                pass


class _Snapshot:
    """What a commit holds: its per-key objects, with the live log entries it holds applied
    over them (normally none). Reads are cached by commit id: commits never change."""

    def __init__(self, store: "LakeFSStore", commit_id: CommitID, per_key_only: bool = False):
        self.store = store
        self.commit = commit_id
        # per_key_only: the commit's per-key objects alone, for a branch view, whose state
        # applies every live entry the branch holds (the head's included) already
        self._log = _NO_LOG if per_key_only else None

    @property
    def log(self):
        if self._log is None:
            self._log = self.store._commit_overlay(self.commit)
        return self._log

    def get(self, key: Key) -> Value | None:
        overlay = self.log.overlay
        if key in overlay:
            return overlay[key]
        return self.store._committed_value(self.commit, key)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        overlay = self.log.overlay
        rest = [k for k in keys if k not in overlay]
        found = dict(zip(rest, self.store._committed_values(self.commit, rest)))
        return [overlay[k] if k in overlay else found[k] for k in keys]

    def scan(self, start: Key, end: Key | None) -> Iterator[tuple[Key, Value]]:
        committed = self.store._committed_scan(self.commit, start, end)
        log = self.log
        if not log.keys:
            return committed
        lo = bisect.bisect_left(log.keys, start)
        hi = len(log.keys) if end is None else bisect.bisect_left(log.keys, end)
        if lo >= hi:
            return committed
        return _overlay([(k, log.overlay[k]) for k in log.keys[lo:hi]], committed)


class _NoLog:
    overlay: dict = {}
    keys: list = []


_NO_LOG = _NoLog()


def _overlay(staged: list[tuple[str, bytes | None]], committed: Iterator[tuple[str, bytes]]
             ) -> Iterator[tuple[str, bytes]]:
    """Staged entries (sorted) over committed ones: staging wins, None hides the key."""
    i, c = 0, next(committed, None)
    while i < len(staged) or c is not None:
        if c is None or (i < len(staged) and staged[i][0] <= c[0]):
            key, value = staged[i]
            if c is not None and c[0] == key:
                c = next(committed, None)
            if value is not None:
                yield key, value
            i += 1
        else:
            yield c
            c = next(committed, None)


class _View(ReadView):
    """A read view: a commit's content, with a branch's staged catalog changes over it (the
    branch state's, shared by every view of that state: never copied, never changed)."""

    def __init__(self, store: "LakeFSStore", ref: ResolvedRef, state: "_BranchState | None",
                 token: object):
        self.ref = ref
        self.token = token
        self._snap = _Snapshot(store, ref.commit, per_key_only=state is not None)
        self._staged: Staged = state.staged if state is not None else EMPTY_STAGED

    def get(self, key: Key) -> Value | None:
        if not isinstance(key, str):
            raise TypeError(f"keys are str, not {type(key).__name__}")
        if key in self._staged:
            return self._staged[key]
        return self._snap.get(key)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        rest = [k for k in keys if k not in self._staged]
        found = dict(zip(rest, self._snap.get_many(rest)))
        return [self._staged[k] if k in self._staged else found[k] for k in keys]

    def scan(self, start: Key = "", end: Key | None = None) -> Iterator[tuple[Key, Value]]:
        if not isinstance(start, str):
            raise TypeError(f"keys are str, not {type(start).__name__}")
        committed = self._snap.scan(start, end)
        if not self._staged:
            return committed
        staged = self._staged.items_between(start, end)
        return _overlay(staged, committed) if staged else committed


class _Write(_View, WriteTxn):
    """A write transaction: its changes over the branch's state, written as one log entry when
    it ends (see the module doc)."""

    def __init__(self, store, ref, state, token):
        super().__init__(store, ref, state, token)
        self._canonical = store.canonical
        self.changes: dict[Key, Value | None] = {}
        # what it was decided on: a write that lost its slot to writes of other keys stands
        self.reads: set = set()
        self.ranges: list = []  # (start, end or None) of its scans

    def get(self, key: Key) -> Value | None:
        if isinstance(key, str) and key in self.changes:
            return self.changes[key]
        self.reads.add(key)
        return super().get(key)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        rest = [k for k in keys if k not in self.changes]
        self.reads.update(rest)
        found = dict(zip(rest, super().get_many(rest)))
        return [self.changes[k] if k in self.changes else found[k] for k in keys]

    def scan(self, start: Key = "", end: Key | None = None) -> Iterator[tuple[Key, Value]]:
        self.ranges.append((start, end))
        below = super().scan(start, end)
        mine = sorted((k, v) for k, v in self.changes.items()
                      if k >= start and (end is None or k < end))
        return _overlay(mine, below) if mine else below

    def put(self, key: Key, value: Value) -> None:
        if not isinstance(key, str):
            raise TypeError(f"keys are str, not {type(key).__name__}")
        if isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        if not isinstance(value, bytes):
            raise TypeError(f"values are bytes, not {type(value).__name__}")
        if self._canonical is not None:  # e.g. locations under the repository, made ref-free
            value = self._canonical(key, value, self.ref.branch)
        self.changes[key] = value

    def delete(self, key: Key) -> None:
        if not isinstance(key, str):
            raise TypeError(f"keys are str, not {type(key).__name__}")
        self.changes[key] = None


@dataclass
class _BranchState:
    """What a branch reads as: its head (whose content reads with the live log entries it
    holds, if any), its staged per-key catalog objects (``base``: left by an interrupted fold,
    normally empty) and the live entries of its log applied over them."""

    head: CommitID
    base: dict  # key -> value | None: staged per-key objects under _hms/
    entries: tuple  # the live log entries (lakefs.log.Listed), in the order they apply
    folded: tuple  # cache keys of the log's fold entries and folded entries present, sorted
    staged: Staged  # base with the entries applied: key -> value | None, in key order
    checked: float  # time.monotonic() when the refresh that saw this began
    version: int
    used: float = 0.0  # time.monotonic() of the last read
    news: int | None = None  # the branch's change counter in Redis when this was made
    last_seq: int = 0  # the last slot of the branch's own log directory's chain
    last_time: int = 0  # the latest writer's time in it
    last_nonce: str = ""  # the nonce of that slot's entry ("": none, or written before)
    next_slot: int = 1  # the first free slot after it: where the branch's next write goes
    # the servers that wrote entries of that chain, with the latest writer's time of each
    # (the few latest: kvmodel.store.lakefs.peers)
    writers: dict = field(default_factory=dict)
    listed_after: str | None = None  # the last path of its own directory a listing showed
    full_at: float = 0.0  # time.monotonic() of the last refresh that listed the whole log
    full_took: float = 0.0  # the seconds that refresh took
    log_staged: bool = True  # whether it may have log entries not committed (a reset: gone)
    contents: dict = field(default_factory=dict)  # an entry's cache_key -> its changes
    # its head's and staged variants (applied in staged)
    variants: VariantIndex = field(default_factory=lambda: EMPTY)

    @property
    def entry_keys(self) -> tuple:
        return tuple(o.cache_key for o in self.entries)


_versions = itertools.count(1)

if TYPE_CHECKING:  # pragma: no cover
    from kvmodel.store.lakefs.store import LakeFSStore
