"""Branch states: a branch's head, staged objects and write log, in memory, refreshed in the
background; changes announced through Redis."""
from __future__ import annotations

import bisect
import threading
import time

from kvmodel.store.contract import (
    RefExpr,
    ResolvedRef,
)
from kvmodel.store.errors import (
    RefNotFound,
    StoreError,
)
from kvmodel.store.lakefs import log as lakefs_log
from kvmodel.store.lakefs.common import _ABSENT, IDLE_AFTER, PREFIX, TEMP_BRANCH, _key, log
from kvmodel.store.lakefs.views import _BranchState, _CommitCache, _versions, _View


class BranchStates:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the package doc)."""

    def use_redis(self, redis_url: str) -> None:
        """Share what is read at commits through Redis (``serve --redis``), and announce every
        change of a branch there: a read then checks the branch's change counter (one Redis
        call) and refreshes at once when another process changed the branch, so that clients
        of several processes or servers sharing the Redis read their writes at once."""
        import redis

        self._values = _CommitCache(self._values.local.max_weight, redis_url, self.repository)
        self._pages = _CommitCache(self._pages.local.max_weight, redis_url, self.repository)
        self._redis = redis.Redis.from_url(redis_url, socket_timeout=0.5,
                                           socket_connect_timeout=0.5)

    def _news_key(self, branch: str) -> str:
        return f"hms-lakefs:{self.repository}:news:{branch}"

    def _news(self, branch: str) -> int | None:
        """The branch's change counter in Redis; None without Redis or when it fails (the
        time bound alone then applies)."""
        if self._redis is None:
            return None
        try:
            return int(self._redis.get(self._news_key(branch)) or 0)
        except Exception:  # noqa: BLE001 - Redis down: stale_after still bounds
            return None

    def _announce(self, branch: str) -> int | None:
        """Count a change of the branch in Redis (before the caller is answered)."""
        if self._redis is None:
            return None
        try:
            return int(self._redis.incr(self._news_key(branch)))
        except Exception:  # noqa: BLE001 - Redis down: the others see it within stale_after
            return None

    def _fresh(self, branch: str, news: bool = False) -> _BranchState | None:
        """The branch's known state if a read may use it (refreshed within
        :attr:`stale_after`, and background refreshes on; with ``news`` and Redis, no change
        announced since), else None."""
        if self.refresh_interval <= 0 or not isinstance(branch, str):
            return None
        state = self._branches.get(branch)
        if state is None:
            return None
        now = time.monotonic()
        if now - state.checked >= self.stale_after:
            return None
        if news and state.news is not None:
            current = self._news(branch)
            if current is not None and current != state.news:
                return None
        state.used = now
        return state

    def _refresh(self, branch: str) -> _BranchState:
        """The branch's state as lakeFS has it now. One refresh of a branch at a time: callers
        that waited for another take its result (or its failure) when it began after they
        asked, so a hung lakeFS costs each call one timeout, not one per caller."""
        asked = time.monotonic()
        with self._refresh_lock(branch):
            known = self._branches.get(branch)
            if known is not None and known.checked >= asked:
                return known
            failed = self._failures.get(branch)
            if failed is not None and failed[0] >= asked:
                raise failed[1]
            try:
                return self._refresh_now(branch)
            except RefNotFound:
                raise
            except StoreError as exc:
                self._failures[branch] = (time.monotonic(), exc)
                raise

    def _refresh_now(self, branch: str) -> _BranchState:
        """Ask lakeFS for the branch's state: its log, then its staged catalog objects, then its
        head, in that order (a commit by another server between the calls then reads the same,
        see ``docs/lakefs-design.md``). Entries are read once each (they never change). Writes
        of this process made meanwhile are kept (they hold the branch lock, not this one)."""
        started = time.monotonic()
        news = self._news(branch)  # read first: a change announced after it is seen next time
        before = self._branches.get(branch)
        directory = lakefs_log.directory(branch)
        try:
            names = [o.path[len(directory):] for o in self._paged(
                self.api.objects.list_objects, branch, prefix=directory, delimiter="")
                if o.path_type == "object"]
        except RefNotFound:
            self._drop_state(branch)
            raise RefNotFound(f"no branch {branch!r}") from None
        folded: set = set()
        for marker in (n for n in names if lakefs_log.is_marker(n)):
            folded |= self._fold_marker(branch, marker)
        live = tuple(n for n in names if not lakefs_log.is_marker(n) and n not in folded)
        markers = tuple(n for n in names if lakefs_log.is_marker(n) or n in folded)
        self._load_entries(branch, [n for n in live if (branch, n) not in self._entries])
        covered = set()
        for name in live:
            covered.update(self._entries[(branch, name)])
        # a fold past its marker: the per-key objects it wrote hold what the entries it names
        # set, known here when every one of them was read before (this process folded them)
        known = {}
        if folded and all((branch, n) in self._entries for n in folded):
            for name in sorted(folded):
                known.update(self._entries[(branch, name)])
        base = self._list_staged(branch, covered, known)
        ref = self._branch(branch)
        if ref is None:
            self._drop_state(branch)
            raise RefNotFound(f"no branch {branch!r}")
        with self._lock:
            current = self._branches.get(branch)
            if current is not None and current.head == ref.commit_id and \
                    current.base == base and current.markers == markers and \
                    live[:len(current.entries)] == current.entries:
                state = self._extend(branch, current, live[len(current.entries):], started)
            else:
                state = self._build(branch, ref.commit_id, base, live, markers, started)
                # this process's writes made during the calls above, which they may not show
                listed = set(live)
                mine = [] if current is None else [
                    n for n in current.entries if n not in listed and
                    (before is None or n not in before.entries)]
                if mine:
                    state = self._extend(branch, state, mine, started)
            if self._moved.get(branch, -float("inf")) >= started:
                state.checked = -float("inf")  # the branch moved during this refresh
            if state.news != news and (state.news is None or news is None or
                                       news > state.news):
                state.news = news
            self._put_state(branch, state)
            # entries folded or reset away, and markers gone, are no longer needed
            self._forget_log(branch, set(state.entries) | folded, set(names))
            self._failures.pop(branch, None)
        return state

    def _build(self, branch, head, base, live, markers, checked) -> _BranchState:
        staged = dict(base)
        for name in live:
            staged.update(self._entries[(branch, name)])
        return _BranchState(head, base, tuple(live), tuple(markers), staged, sorted(staged),
                            checked, next(_versions), time.monotonic())

    def _extend(self, branch, known: _BranchState, new, checked) -> _BranchState:
        """``known`` with entries ``new`` applied after its own (a new state: views of the old
        one keep reading it)."""
        if not new:
            known.checked = checked
            return known
        staged, keys = dict(known.staged), list(known.keys)
        for name in new:
            for key, value in self._entries[(branch, name)].items():
                if key not in staged:
                    bisect.insort(keys, key)
                staged[key] = value
        return _BranchState(known.head, known.base, known.entries + tuple(new), known.markers,
                            staged, keys, checked, next(_versions), known.used)

    def _put_state(self, branch: str, state: _BranchState) -> None:
        """Install ``state`` (the caller holds ``self._lock``); start the refresher."""
        self._branches[branch] = state
        if self.refresh_interval > 0 and self._poller is None and not self._closed:
            self._poller = threading.Thread(target=self._poll, name="lakefs-refresh",
                                            daemon=True)
            self._poller.start()

    def _outdate(self, branch: str) -> None:
        """The branch moved: its next read refreshes its state (known to be a branch), and a
        refresh that began before the move does not count as fresh."""
        with self._lock:
            self._moved[branch] = time.monotonic()
            state = self._branches.get(branch)
            if state is not None:
                state.checked = -float("inf")

    def _drop_state(self, branch: str) -> None:
        with self._lock:
            self._branches.pop(branch, None)

    def _forget_log(self, branch: str, entries: set = frozenset(),
                    markers: set = frozenset()) -> None:
        """Drop what was read of the branch's log, but for ``entries`` and ``markers`` (the
        caller holds ``self._lock``)."""
        for key in [k for k in self._entries if k[0] == branch and k[1] not in entries]:
            del self._entries[key]
        for key in [k for k in self._folds if k[0] == branch and k[1] not in markers]:
            del self._folds[key]

    def _poll(self) -> None:
        """Refresh the branches being read, every ``refresh_interval`` seconds: another
        server's writes are seen within about that (a read never waits for it)."""
        while not self._stop.wait(max(self.refresh_interval, 0.01)):
            now = time.monotonic()
            for branch, state in list(self._branches.items()):
                if now - state.used > IDLE_AFTER or branch.startswith(TEMP_BRANCH):
                    continue
                try:
                    self._refresh(branch)
                except RefNotFound:
                    self._drop_state(branch)
                except Exception as exc:  # noqa: BLE001 - lakeFS down: reads will say so
                    log.debug("refreshing branch %s failed: %s", branch, exc)
                if self._stop.is_set():
                    return

    def _log_object(self, branch: str, name: str) -> bytes:
        """An entry or marker of the branch's log, as uploaded (never changes)."""
        return bytes(self.api(self.api.objects.get_object, branch,
                              lakefs_log.directory(branch) + name))

    def _load_entries(self, branch: str, names: list[str]) -> None:
        def load(name):
            return name, lakefs_log.decode(self._log_object(branch, name), name)

        if len(names) == 1:
            found = [load(names[0])]
        else:
            found = list(self._pool.map(load, names))
        with self._lock:
            for name, changes in found:
                self._entries[(branch, name)] = changes

    def _fold_marker(self, branch: str, marker: str) -> set:
        hit = self._folds.get((branch, marker))
        if hit is None:
            hit = lakefs_log.decode_marker(self._log_object(branch, marker), marker)
            self._folds[(branch, marker)] = hit
        return hit

    def _list_staged(self, branch: str, covered: set, known: dict) -> dict:
        """The staged per-key catalog objects (left by a fold not committed yet; normally
        none): one diff call when there are none. Values are read only for keys the live log
        does not set anyway (``covered``) and whose value is not ``known``, in parallel."""
        staged = {}
        wanted = []
        for d in self._paged(self.api.branches.diff_branch, branch, prefix=PREFIX):
            if d.path_type != "object":
                continue
            key = _key(d.path)
            if d.type == "removed":
                staged[key] = None
            elif key in covered:
                staged[key] = _ABSENT  # replaced by the log's value below
            elif key in known:
                staged[key] = known[key]
            else:
                wanted.append(d.path)

        def read(path):
            try:
                stats = self.api(self.api.objects.stat_object, branch, path, user_metadata=True)
            except RefNotFound:
                return path, None
            return path, self._value_of(branch, stats)

        for path, value in self._pool.map(read, wanted) if len(wanted) > 1 else map(read, wanted):
            staged[_key(path)] = value
        return staged

    def _view(self, ref: RefExpr) -> _View:
        state = self._fresh(ref, news=True) if isinstance(ref, str) else None
        if state is None:
            if isinstance(ref, str) and ref in self._branches:  # a branch read before
                try:
                    state = self._refresh(ref)
                except RefNotFound:
                    state = None
        if state is not None:
            return _View(self, ResolvedRef(ref, state.head, ref, None), state,
                         ("branch", ref, state.head, state.version))
        resolved = self.resolve(ref)
        if resolved.branch is None:
            return _View(self, resolved, None, ("commit", resolved.commit))
        state = self._refresh(resolved.branch)
        resolved = ResolvedRef(resolved.expr, state.head, resolved.branch, None)
        return _View(self, resolved, state, ("branch", resolved.branch, state.head,
                                             state.version))

    def _branch_lock(self, branch: str) -> threading.RLock:
        """Held by a write transaction and a commit of the branch (one at a time)."""
        with self._lock:
            return self._branch_locks.setdefault(branch, threading.RLock())

    def _refresh_lock(self, branch: str) -> threading.Lock:
        """Held while the branch's state is asked of lakeFS (one refresh at a time)."""
        with self._lock:
            return self._refresh_locks.setdefault(branch, threading.Lock())
