"""The lakeFS store: refs, branches, tags and protection, with reads, writes, merges and data
objects from the modules beside it."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import (
    Branch,
    BranchName,
    Commit,
    CommitID,
    RefExpr,
    ResolvedRef,
    Tag,
    TagName,
    VersionedStore,
)
from kvmodel.store.errors import (
    InvalidRef,
    ProtectedRef,
    RefExists,
    RefNotFound,
    StoreError,
)
from kvmodel.store.lakefs.api import LakeFSConfig, _Api
from kvmodel.store.lakefs.committed import CommittedReads
from kvmodel.store.lakefs.common import (
    _BRANCH_NAME,
    CONNECT_TIMEOUT,
    DEFAULT_REFRESH,
    DIFF_CACHE_BYTES,
    META_AUTHOR,
    META_CREATED,
    READ_TIMEOUT,
    RULES_TTL,
    STALE_AFTER,
    TEMP_BRANCH,
    UPLOAD_THREADS,
    _matches,
)
from kvmodel.store.lakefs.data import DataObjects
from kvmodel.store.lakefs.merges import Merges
from kvmodel.store.lakefs.state import BranchStates
from kvmodel.store.lakefs.variants import Variants
from kvmodel.store.lakefs.views import _BranchState, _CommitCache
from kvmodel.store.lakefs.writes import Writes
from kvmodel.store.refs import is_commit_prefix, parse_ref, validate_name, walk_ancestry


class LakeFSStore(BranchStates, CommittedReads, Variants, Writes, Merges, DataObjects,
                  VersionedStore):
    """A :class:`VersionedStore` over lakeFS repository ``repository`` (see the module doc).

    Args:
        repository: the lakeFS repository (it must exist: the data's own).
        config: endpoint and credentials (default :meth:`LakeFSConfig.discover`).
        cache_bytes: bound of the in-process cache of values and listings read at commits.
        refresh: seconds between background refreshes of the branches being read (default
            0.25); a read never uses a branch state older than :attr:`stale_after` (1 s by
            default), so another server's acknowledged write is seen within it. 0: refresh at
            every read. This server's own writes are seen at once either way.
        canonical: a rewrite of every value staged, ``(key, value, branch) -> value``; the
            catalog opens its store with :meth:`kvmodel.locations.RefLocations.canonical`, so
            that locations under the repository are stored ref-free
            (:func:`kvmodel.locations.open_catalog_store`). None: values stored as given.
        carried: ``(key, value) -> bool``: the keys a fold writes as the branch's own variant
            (:mod:`kvmodel.store.lakefs.variants`), so that lakeFS's merge of two branches
            that both changed one leaves it to the catalog's merge; the catalog passes
            :func:`kvmodel.locations.carried_by_branch` (Iceberg tables). None: none but
            those that have a variant already.
        carry_guard: a path (the lakeFS action of :mod:`kvmodel.lakefs_actions`) without
            which at a branch's head ``carried`` is not applied there: its pre-merge hook is
            what refuses lakeFS's merges of a key both branches changed.
        redis_url: also cache what is read at commits in this Redis (``serve --redis``).
    """

    exact_snapshots = False
    protection_blocks_writes = True

    def __init__(self, repository: str, config: LakeFSConfig | None = None, *,
                 cache_bytes: int = 256 << 20, refresh: float = DEFAULT_REFRESH,
                 canonical: Callable[[str, bytes, str], bytes] | None = None,
                 carried: Callable[[str, bytes], bool] | None = None,
                 carry_guard: str | None = None,
                 redis_url: str | None = None):

        self.repository = repository
        self.canonical = canonical
        self.carried = carried
        self.carry_guard = carry_guard
        self.config = config or LakeFSConfig.discover()
        self.api = _Api(self.config, repository)
        self.refresh_interval = float(refresh)
        # (commit, key) -> value | _ABSENT, ("checksum", c) -> value; (commit, prefix, after)
        self._values = _CommitCache(cache_bytes, redis_url, repository)
        self._pages = _CommitCache(max(cache_bytes // 4, 1 << 20), redis_url, repository)
        self._commits = LRUCache(100_000)
        # (left commit, right commit, prefix) -> lakeFS's diff between them (commits never
        # change): a merge asks for the same two diffs several times
        self._diffs = LRUCache(DIFF_CACHE_BYTES)
        self._tags: dict[str, CommitID] = {}  # a tag's commit, once seen (tags do not move)
        self._rules_seen: tuple[float, list[str]] | None = None
        self._branches: dict[str, _BranchState] = {}
        # log objects read, by (path, checksum): an entry's changes, a fold entry's Fold
        self._entries: dict[tuple[str, str], dict] = {}
        self._folds: dict[tuple[str, str], object] = {}
        # commit -> _CommitLog: the live log entries a commit holds, applied
        self._commit_logs = _CommitCache(max(cache_bytes // 16, 1 << 20), redis_url,
                                         repository + ":log")
        # commit -> VariantIndex; commit -> its variants and live entries, applied
        self._variant_idx = _CommitCache(max(cache_bytes // 16, 1 << 20), redis_url,
                                         repository + ":variants")
        self._overlays = LRUCache(max(cache_bytes // 16, 1 << 20))
        # (commit, directory) -> a key such that the directory holds nothing at or after it
        self._tails = LRUCache(1 << 20)
        self._branch_locks: dict[str, threading.RLock] = {}
        self._write_lanes: dict = {}  # branch -> its write groups (groups.Lanes)
        self._refresh_locks: dict[str, threading.Lock] = {}
        self._failures: dict[str, tuple[float, StoreError]] = {}  # the last failed refresh
        self._moved: dict[str, float] = {}  # when this process last moved a branch's head
        self._committing: set[str] = set()  # branches this process is committing now
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="lakefs-upload")
        self._stop = threading.Event()
        self._redis = None  # with use_redis: where branch changes are announced
        self._redis_run_id: str | None = None  # that Redis server's run id, asked once
        self._peers = None  # with serve_peers: writes handed to the server writing a branch
        self._poller: threading.Thread | None = None
        self._closed = False
        self.api(self.api.repos.get_repository,
                 not_found=lambda text: StoreError(
                     f"no lakeFS repository {repository!r} at {self.config.endpoint} "
                     f"({text}): create it with lakectl repo create"))

    @property
    def stale_after(self) -> float:
        """Seconds after which a read refreshes a branch's state itself."""
        return max(STALE_AFTER, 4 * self.refresh_interval)

    @staticmethod
    def branch_name_valid(name: str) -> bool:
        """lakeFS branch names: no dots (tags may have them)."""
        return "." not in name

    def _check_branch_name(self, name: str) -> None:
        validate_name(name)
        if not self.branch_name_valid(name):
            raise InvalidRef(f"invalid branch name {name!r}: {_BRANCH_NAME}")

    def _branch(self, name: str):
        """lakeFS's Ref of a branch, or None."""
        try:
            return self.api(self.api.branches.get_branch, name)
        except RefNotFound:
            return None
        except InvalidRef:
            return None

    def _tag(self, name: str):
        try:
            ref = self.api(self.api.tags.get_tag, name)
        except (RefNotFound, InvalidRef):
            return None
        self._tags[name] = ref.commit_id
        return ref

    def get_commit(self, commit_id: CommitID) -> Commit:
        commit_id = str(commit_id).lower()
        cached = self._commits.get(commit_id)
        if cached is not None:
            return cached
        try:
            raw = self.api(self.api.commits.get_commit, commit_id)
        except InvalidRef:
            raise RefNotFound(f"no commit {commit_id!r}") from None
        commit = self._commit_of(raw)
        if commit.id != commit_id:  # a prefix: only the full id is cached under itself
            if not commit.id.startswith(commit_id):
                raise RefNotFound(f"no commit {commit_id!r}")
        self._commits.put(commit.id, commit, 1)
        return commit

    def _commit_of(self, raw) -> Commit:
        meta = {k: v for k, v in (raw.metadata or {}).items()
                if not k.startswith(".lakefs.")}  # lakeFS's own (merge strategy...)
        author = meta.pop(META_AUTHOR, None)
        created = meta.pop(META_CREATED, None)
        try:
            when = float(created) if created is not None else float(raw.creation_date)
        except ValueError:
            when = float(raw.creation_date)
        commit = Commit(raw.id, tuple(raw.parents or ()), raw.message or "",
                        author if author is not None else (raw.committer or ""), when, meta,
                        raw.meta_range_id or "")
        self._commits.put(commit.id, commit, 1)
        return commit

    def resolve(self, ref: RefExpr) -> ResolvedRef:
        expr = parse_ref(ref)
        base = expr.base
        state = self._fresh(base) if base else None
        if state is not None:  # a branch being read: its state is recent enough
            head, name, tag = state.head, base, None
        elif base in self._tags:  # tags do not move: asked once
            head, name, tag = self._tags[base], None, base
        elif base and len(base) == 64 and self._commits.get(base.lower()) is not None:
            head, name, tag = base.lower(), None, None
        elif (branch := self._branch(base) if base else None) is not None:
            head, name, tag = branch.commit_id, base, None
        else:
            tag_ref = self._tag(base) if base else None
            if tag_ref is not None:
                head, name, tag = tag_ref.commit_id, None, base
            elif is_commit_prefix(base):
                head, name, tag = self.get_commit(base.lower()).id, None, None
            else:
                raise RefNotFound(f"no branch, tag or commit {ref!r}")
        if expr.hops:
            commit = walk_ancestry(head, expr.hops, self.get_commit, ref)
            return ResolvedRef(ref, commit, None, None)
        return ResolvedRef(ref, head, name, tag)

    def latest(self, ref: RefExpr) -> ResolvedRef:
        resolved = self.resolve(ref)
        if resolved.branch is None:
            return resolved
        state = self._refresh(resolved.branch)
        return ResolvedRef(resolved.expr, state.head, resolved.branch, None)

    def create_branch(self, name: BranchName, source: RefExpr) -> Branch:
        self._check_branch_name(name)
        if self._tag(name) is not None or self._branch(name) is not None:
            raise RefExists(f"a branch or tag named {name!r} exists")
        commit = self.resolve(source).commit
        self.api(self.api.branches.create_branch,
                 self.api.sdk.BranchCreation(name=name, source=commit))
        return Branch(name, commit, self._protected(name))

    def delete_branch(self, name: BranchName) -> None:
        if self._branch(name) is None:
            raise RefNotFound(f"no branch {name!r}")
        if self._protected(name):
            raise ProtectedRef(f"branch {name!r} is protected")
        self.api(self.api.branches.delete_branch, name)
        with self._lock:
            self._branches.pop(name, None)
            self._forget_log()

    def list_branches(self) -> list[Branch]:
        rules = self._rules()
        out = []
        for ref in self._paged(self.api.branches.list_branches):
            if ref.id.startswith(TEMP_BRANCH):
                continue
            out.append(Branch(ref.id, ref.commit_id, _matches(rules, ref.id)))
        return sorted(out, key=lambda b: b.name)

    def get_branch(self, name: BranchName) -> Branch | None:
        state = self._fresh(name)
        if state is not None:
            return Branch(name, state.head, self._protected(name))
        ref = self._branch(name)
        return None if ref is None else Branch(name, ref.commit_id, self._protected(name))

    def _rules(self, fresh: bool = False) -> list[str]:
        seen = self._rules_seen
        if not fresh and seen is not None and time.monotonic() - seen[0] < RULES_TTL:
            return list(seen[1])
        asked = time.monotonic()
        rules = [r.pattern for r in self.api(self.api.repos.get_branch_protection_rules) or []]
        self._rules_seen = (asked, rules)
        return list(rules)

    def _protected(self, name: str, fresh: bool = False) -> bool:
        return _matches(self._rules(fresh), name)

    def set_branch_protection(self, name: BranchName, protected: bool) -> None:
        if self._branch(name) is None:
            raise RefNotFound(f"no branch {name!r}")
        rules = self._rules(fresh=True)
        if protected and name not in rules:
            rules = rules + [name]
        elif not protected:
            if name not in rules and _matches(rules, name):
                raise ProtectedRef(f"branch {name!r} is protected by a lakeFS rule pattern; "
                                   "change the repository's rules with lakectl")
            rules = [r for r in rules if r != name]
        else:
            return
        self.api(self.api.repos.set_branch_protection_rules,
                 [self.api.sdk.BranchProtectionRule(pattern=r) for r in rules])
        self._rules_seen = (time.monotonic(), list(rules))

    def create_tag(self, name: TagName, ref: RefExpr) -> Tag:
        validate_name(name)
        if self._branch(name) is not None or self._tag(name) is not None:
            raise RefExists(f"a branch or tag named {name!r} exists")
        commit = self.resolve(ref).commit
        self.api(self.api.tags.create_tag, self.api.sdk.TagCreation(id=name, ref=commit))
        return Tag(name, commit)

    def delete_tag(self, name: TagName) -> None:
        if self._tag(name) is None:
            raise RefNotFound(f"no tag {name!r}")
        self.api(self.api.tags.delete_tag, name)
        self._tags.pop(name, None)

    def list_tags(self) -> list[Tag]:
        return sorted((Tag(t.id, t.commit_id) for t in self._paged(self.api.tags.list_tags)),
                      key=lambda t: t.name)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._peers is not None:
            self._peers.close()
        if self._poller is not None:
            self._poller.join(timeout=READ_TIMEOUT + CONNECT_TIMEOUT)
        self._pool.shutdown(wait=True)
        self.api.close()
