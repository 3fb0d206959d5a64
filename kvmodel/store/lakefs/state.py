"""Branch states: a branch's head, staged objects and write log, in memory, refreshed in the
background; changes announced through Redis."""
from __future__ import annotations

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
from kvmodel.store.lakefs.common import (
    _ABSENT,
    IDLE_AFTER,
    PAGE,
    PREFIX,
    TEMP_BRANCH,
    VARIANTS,
    _key,
    log,
)
from kvmodel.store.lakefs.staged import Staged
from kvmodel.store.lakefs.variants import EMPTY, VariantIndex, parse_variant
from kvmodel.store.lakefs.views import _BranchState, _CommitCache, _versions, _View


def _advance(state: _BranchState, obj) -> None:
    """``state``'s end of its own slot chain moved to entry ``obj`` (in the chain) if later."""
    if obj.seq > state.last_seq:
        state.last_seq, state.last_nonce = obj.seq, obj.nonce
        state.next_slot = max(state.next_slot, obj.seq + 1)
    state.last_time = max(state.last_time, obj.time)
    if obj.writer and state.writers.get(obj.writer, -1) < obj.time:
        writers = dict(state.writers)  # (shared with the state it was made from)
        writers[obj.writer] = obj.time
        if len(writers) > WRITERS_KEPT:
            del writers[min(writers, key=writers.get)]
        state.writers = writers


WRITERS_KEPT = 8  # servers that wrote a branch a state remembers (the latest)
FULL_EVERY = 5.0  # seconds between refreshes that list the whole log of a branch, at least
# ... and at least this many times what the last one took: on a log of 100,000 entries (a busy
# branch between two commits) a whole listing takes seconds of lakeFS's time and ours
FULL_SHARE = 20


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
        self._commit_logs = _CommitCache(self._commit_logs.local.max_weight, redis_url,
                                         self.repository + ":log")
        self._variant_idx = _CommitCache(self._variant_idx.local.max_weight, redis_url,
                                         self.repository + ":variants")
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

    def _redis_id(self) -> str | None:
        """The run id of the Redis server the change counters are in (asked once); None
        without Redis or when it fails."""
        if self._redis is None:
            return None
        if self._redis_run_id is None:
            try:
                self._redis_run_id = str(self._redis.info("server")["run_id"])
            except Exception:  # noqa: BLE001 - Redis down: the handing server announces
                return None
        return self._redis_run_id

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
        see ``docs/lakefs-design.md``). Log objects are read once each (they never change).
        Writes of this process made meanwhile are kept (they hold the branch lock, not this
        one)."""
        started = time.monotonic()
        news = self._news(branch)  # read first: a change announced after it is seen next time
        before = self._branches.get(branch)
        quick = self._refresh_quick(branch, before, started, news)
        if quick is not None:
            return quick
        try:
            plan, contents = self._read_log(branch)
        except RefNotFound:
            self._drop_state(branch)
            raise RefNotFound(f"no branch {branch!r}") from None
        live = tuple(plan.live)
        folded = tuple(sorted(o.cache_key for o in (*plan.folded, *plan.folds)))
        covered = set()
        for obj in live:
            covered.update(contents[obj.cache_key])
        # a fold past its fold entry: the per-key objects it wrote hold what the entries it
        # folded set, known here when every one of them was read before (this process
        # folded them)
        known = {}
        cached = [self._entries.get(o.cache_key)
                  for o in sorted(plan.folded, key=lakefs_log.order)]
        if cached and all(c is not None for c in cached):
            for changes in cached:
                known.update(changes)
        base, staged_variants, prefixes = self._list_staged(branch, covered, known, kinds=True)
        ref = self._branch(branch)
        if ref is None:
            self._drop_state(branch)
            raise RefNotFound(f"no branch {branch!r}")
        variants = self._commit_variants(ref.commit_id, before.head if before else None)
        if staged_variants:
            variants = variants.changed(staged_variants)
        with self._lock:
            self._entries.update(contents)  # kept while a state applies them (_forget_log)
            current = self._branches.get(branch)
            keys = tuple(o.cache_key for o in live)
            mine = []
            if current is not None and current.head == ref.commit_id and \
                    current.base == base and current.folded == folded and \
                    current.variants == variants and \
                    keys[:len(current.entries)] == current.entry_keys:
                state = self._extend(branch, current, live[len(current.entries):], started,
                                     contents)
            else:
                state = self._build(branch, ref.commit_id, base, live, folded, started, contents,
                                    variants)
                # this process's writes made during the calls above, which they may not show
                seen = set(keys) | set(folded)
                earlier = {} if before is None else before.contents  # its entries' keys
                mine = [] if current is None else [
                    o for o in current.entries if o.cache_key not in seen and
                    o.cache_key not in earlier]
                if mine:
                    state = self._extend(branch, state, mine, started, current.contents)
            if plan.last_seq.get(branch, 0) >= state.last_seq:  # else: own writes since
                state.last_seq = plan.last_seq.get(branch, 0)
                state.last_nonce = plan.last_nonce.get(branch, "")
                state.next_slot = plan.next_slot.get(branch, state.last_seq + 1)
            state.last_time = max(state.last_time, plan.last_time.get(branch, 0))
            own = lakefs_log.directory(branch)
            state.listed_after = max((o.path for o in (*plan.live, *plan.folded, *plan.folds,
                                                       *plan.unsettled)
                                      if o.path.startswith(own)), default="")
            state.full_at, state.full_took = started, time.monotonic() - started
            state.log_staged = lakefs_log.LOG in prefixes or bool(mine)
            if self._moved.get(branch, -float("inf")) >= started:
                state.checked = -float("inf")  # the branch moved during this refresh
            if state.news != news and (state.news is None or news is None or
                                       news > state.news):
                state.news = news
            self._put_state(branch, state)
            self._forget_log()
            self._failures.pop(branch, None)
        return state

    def _refresh_quick(self, branch: str, before: _BranchState | None, started: float,
                       news) -> _BranchState | None:
        """The branch's state from ``before`` and the slots its own directory has after the
        last one a listing showed (one listing of just those, then the staged objects and
        the head as a refresh asks them), when nothing else can have moved: no fold entry
        among them, each the next of the chain, the head and the staged objects as before.
        None: a whole refresh is needed (and one is made every ``FULL_EVERY`` seconds, or
        ``FULL_SHARE`` times what the last one took if longer, so that what lakeFS changed
        under another name, such as a reset, is seen). A busy branch's log between two commits
        grows by thousands of entries: a refresh every 0.25 s must not list them all."""
        if before is None or before.listed_after is None or \
                started - before.full_at > max(FULL_EVERY, FULL_SHARE * before.full_took) or \
                self._moved.get(branch, -float("inf")) >= before.checked:  # we moved it
            return None
        # from the chain's end: a slot before the last one listed may have been free then
        # (an upload in flight into it) and hold the chain's next entry now
        listed = self._own_slots_after(branch, before.last_seq)
        if listed is None or any(o is None or o.fold or o.seq is None for o in listed):
            return None
        on = lakefs_log.follow(sorted(listed, key=lambda o: o.seq), before.last_seq,
                               before.last_nonce or None)
        new = [o for o in on.chained if o.cache_key not in before.contents]
        tip_seq, gap = on.tip_seq, on.gap
        contents = {o.cache_key: self._entries.get(o.cache_key) for o in new}
        unread = [o for o in new if contents[o.cache_key] is None]
        for obj, data in self._read_objects(branch, unread):
            contents[obj.cache_key] = lakefs_log.decode(data, obj.path)
        base, staged_variants, prefixes = self._list_staged(branch, set(), {}, kinds=True)
        # log entries staged before and none now: a reset (by another server, lakectl)? a
        # whole refresh says
        log_staged = lakefs_log.LOG in prefixes
        if base != before.base or staged_variants or (before.log_staged and not log_staged) \
                or before.variants != self._commit_variants(before.head):
            return None
        ref = self._branch(branch)
        if ref is None or ref.commit_id != before.head:
            return None
        with self._lock:
            current = self._branches.get(branch)
            if current is None or current.head != before.head:
                return None
            self._entries.update(contents)
            applied = current.contents  # the cache keys of its entries
            state = self._extend(branch, current, [o for o in new if o.cache_key not in applied],
                                 started, contents)
            if listed:
                state.listed_after = max(state.listed_after or "", max(o.path for o in listed))
            if state.last_seq == tip_seq:  # (else own writes since, after these)
                state.next_slot = gap
            state.log_staged = log_staged
            if self._moved.get(branch, -float("inf")) >= started:
                state.checked = -float("inf")
            if state.news != news and (state.news is None or news is None or
                                       news > state.news):
                state.news = news
            self._put_state(branch, state)
            self._failures.pop(branch, None)
        return state

    def _own_slots_after(self, branch: str, seq: int) -> list | None:
        """The slot objects of the branch's own log directory after slot ``seq`` (0: all), as
        :func:`~kvmodel.store.lakefs.log.listed` reads them (None for an object it does not
        know), in one listing; None when they are more than a page."""
        after = lakefs_log.slot_path(branch, seq) if seq > 0 else ""
        page = self.api(self.api.objects.list_objects, branch,
                        prefix=lakefs_log.directory(branch), after=after, delimiter="",
                        user_metadata=True, amount=PAGE)
        if page.pagination.has_more:
            return None
        return [lakefs_log.listed(st.path, st.metadata, st.checksum, int(st.mtime or 0))
                for st in page.results if st.path_type == "object"]

    def _build(self, branch, head, base, live, folded, checked, contents,
               variants: VariantIndex = EMPTY) -> _BranchState:
        staged = dict(base)
        staged.update(variants.newest)  # a key's newest variant over its per-key object
        for obj in live:
            staged.update(contents[obj.cache_key])
        state = _BranchState(head, base, tuple(live), tuple(folded), Staged(staged),
                             checked, next(_versions), time.monotonic(),
                             contents={o.cache_key: contents[o.cache_key] for o in live},
                             variants=variants)
        for obj in live:
            if obj.directory == branch and obj.seq is not None:
                _advance(state, obj)
        return state

    def _extend(self, branch, known: _BranchState, new, checked, contents) -> _BranchState:
        """``known`` with entries ``new`` (their changes in ``contents``) applied after its own
        (a new state: views of the old one keep reading it)."""
        if not new:
            known.checked = checked
            return known
        changes: dict = {}
        for obj in new:  # in the order they apply: a later entry's value wins
            changes.update(contents[obj.cache_key])
        staged = known.staged.with_changes(changes)
        mine = dict(known.contents)
        out = _BranchState(known.head, known.base, known.entries + tuple(new), known.folded,
                           staged, checked, next(_versions), known.used,
                           last_seq=known.last_seq, last_time=known.last_time, contents=mine,
                           variants=known.variants, last_nonce=known.last_nonce,
                           next_slot=known.next_slot, listed_after=known.listed_after,
                           full_at=known.full_at, full_took=known.full_took,
                           writers=known.writers)
        for obj in new:
            mine[obj.cache_key] = contents[obj.cache_key]
            if obj.directory == branch and obj.seq is not None:
                _advance(out, obj)
        return out

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

    def watched(self, branch: str) -> bool:
        """Whether the branch's state is kept and refreshed in the background (it was read
        in the last IDLE_AFTER seconds)."""
        return branch in self._branches

    def unwatch(self, branch: str) -> None:
        """Stop keeping the branch's state (a one-off look at many branches, such as what
        lakeFS's pre-delete-branch hook asks, must not have them all refreshed for minutes);
        its next read builds it again."""
        self._drop_state(branch)

    def _forget_log(self) -> None:
        """Drop the log objects read that no branch state needs any more (the caller holds
        ``self._lock``)."""
        needed: set = set()
        for state in self._branches.values():
            needed.update(state.contents)  # its entries' cache keys
            needed.update(state.folded)
        for key in [k for k in self._entries if k not in needed]:
            del self._entries[key]
        for key in [k for k in self._folds if k not in needed]:
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

    def _list_staged(self, branch: str, covered: set, known: dict,
                     kinds: bool = False) -> tuple:
        """The staged per-key catalog objects and variants (left by a fold not committed yet;
        normally none): (key -> value, variant path -> (stamp, value) or None: removed). One
        diff call when there are none (grouped by prefix: it says which of ``_hms/`` and
        ``_hms_v/`` has any). Values are read only for keys the live log does not set anyway
        (``covered``) and whose value is not ``known``, in parallel."""
        prefixes = {d.path for d in self._paged(self.api.branches.diff_branch, branch,
                                                prefix=PREFIX.rstrip("/"), delimiter="/")
                    if d.path_type == "common_prefix"}
        variants = {}
        if VARIANTS in prefixes:
            for d in self._paged(self.api.branches.diff_branch, branch, prefix=VARIANTS):
                if d.path_type == "object" and parse_variant(d.path) is not None:
                    variants[d.path] = None if d.type == "removed" else \
                        self._staged_variant(branch, d.path)
        staged = {}
        if PREFIX not in prefixes:
            return (staged, variants, prefixes) if kinds else (staged, variants)
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
        return (staged, variants, prefixes) if kinds else (staged, variants)

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
