"""The lakeFS backend: the catalog as objects in the data's own lakeFS repository.

``lakefs://REPO`` stores catalog key ``k`` as the object ``_hms/k`` of repository ``REPO``, so
a lakeFS branch holds the data and its catalog together, a lakeFS commit snapshots both and one
lakeFS merge publishes both. Branches, tags, commits, log, diff, merge base and merge are
lakeFS's own, reached through ``lakefs-sdk``; nothing but the catalog's objects is kept
elsewhere (caches aside).

**Mapping of the store contract** (:mod:`kvmodel.store.contract`):

* a write transaction is **one object**: its changes are uploaded as one entry of the branch's
  write log (``_hms_log/<branch>/<entry>``, :mod:`kvmodel.store.lakefs_log`) when it ends, so
  it is staged whole or not at all, even if the server dies; ``commit`` *folds* the log into
  per-key objects (``_hms/<key>``) and commits them (data objects staged beside the catalog
  are committed with them, as ``lakectl commit`` would); ``reset`` resets the branch's
  ``_hms/`` prefix and its log. Writers of one branch are serialised within the process;
  between servers the last write wins (no compare-and-set);
* commit authors, precise times and the caller's metadata travel in the lakeFS commit's
  metadata (``hms.author``, ``hms.created``): lakeFS records the committer as the
  authenticated user and times in whole seconds;
* branch protection is lakeFS's branch protection rules (an exact-name rule per protected
  branch), which also keep Spark from writing data to the branch directly: only merges reach
  it;
* ``commit_snapshot`` (the merge and revert of :mod:`kvmodel.merge`): with one parent, the
  changes are uploaded to the branch and committed (on a protected branch: on a temporary
  branch, merged in); with two (a merge), when the changes are exactly what lakeFS's own merge
  of ``parents[1]`` gives, that merge is run as is (its parents are exactly ``[dest head,
  parents[1]]``); otherwise the resolutions are written to a temporary branch made from
  ``parents[1]``, committed there, and that branch is merged with the ``source-wins``
  strategy, so the destination moves once, to a merge commit whose second parent is the
  resolution commit (whose parent is ``parents[1]``). lakeFS refuses to merge into a branch
  with uncommitted changes, so ``commit_snapshot`` needs a clean branch (``DirtyBranch``):
  :attr:`exact_snapshots` is False;
* a merge's data objects (everything outside ``_hms/``) merge by lakeFS's rules: paths both
  sides changed differently since the merge base are reported by :meth:`data_conflicts`
  (the catalog merge lists them as ``DATA_CONFLICT``) and, with a strategy, resolved by it.

**Reading fast enough for planners.** Commits never change: what is read at a commit (an
object's value, a page of a listing) is cached by commit id, in process. A value of at most
:data:`INLINE_LIMIT` bytes is also written, base64, into the object's user metadata
(``hms-v``), so a listing with ``user_metadata`` brings the values of a whole page: scanning a
table's 10,000 partitions is 10 listing calls, not 10,000 reads; larger values are read once
and cached by checksum. A branch read is its head commit's content overlaid with its log (and
any per-key objects a fold left staged), kept in memory and refreshed in the background every
``refresh`` seconds (0.25) for the branches being read: a read makes no lakeFS call, this
server's writes are seen at once, another server's within :attr:`LakeFSStore.stale_after`
(1 s; a read refreshes a state older than that itself, and fails with lakeFS's error if it is
down). Tags and commits are read once. Catalog objects must be written through this backend
(``lakectl`` uploads under ``_hms/`` are seen only after a commit). The design, and why, is in
``docs/lakefs-design.md``.
"""
from __future__ import annotations

import base64
import bisect
import fnmatch
import http.client
import itertools
import logging
import os
import posixpath
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from kvmodel.store import lakefs_log
from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import (
    Branch,
    BranchName,
    Commit,
    CommitID,
    DiffEntry,
    Key,
    ReadView,
    RefExpr,
    ResolvedRef,
    Tag,
    TagName,
    Value,
    VersionedStore,
    WriteTxn,
    prefix_end,
)
from kvmodel.store.errors import (
    DirtyBranch,
    HeadMoved,
    InvalidRef,
    NothingToCommit,
    ProtectedRef,
    ReadOnlyRef,
    RefExists,
    RefNotFound,
    StoreError,
)
from kvmodel.store.refs import is_commit_prefix, merge_base, parse_ref, validate_name, walk_ancestry

PREFIX = "_hms/"  # catalog key k is the object PREFIX + k
JOURNAL = "_hms_journal/"  # the layout before the write log: one object per branch, dropped
NOT_DATA = (PREFIX, JOURNAL, lakefs_log.LOG)  # what is the catalog's, not table data
INLINE_LIMIT = 2048  # bytes of value carried in user metadata (base64 of at most this)
META_VALUE = "hms-v"
META_AUTHOR = "hms.author"
META_CREATED = "hms.created"
TEMP_BRANCH = "hms-tmp-"
PAGE = 1000  # lakeFS's largest page
CONNECT_TIMEOUT = float(os.environ.get("HMS_LAKEFS_CONNECT_TIMEOUT", "3"))  # seconds
READ_TIMEOUT = float(os.environ.get("HMS_LAKEFS_READ_TIMEOUT", "8"))  # seconds per answer
# a commit or a merge rewrites every range its changes touch, and a diff between commits reads
# them (up to 20 MB each by lakeFS's default): changes spread over a large repository take
# lakeFS many seconds (15 s for 100 partitions at random among 1,000,000 here), and giving up
# early would report a failure for a commit lakeFS goes on to make
VERSIONING_TIMEOUT = float(os.environ.get("HMS_LAKEFS_VERSIONING_TIMEOUT", "600"))
UPLOAD_THREADS = 8
DIFF_CACHE_BYTES = 32 << 20  # diffs between commits kept in memory
DEFAULT_REFRESH = 0.25  # seconds between background refreshes of a branch being read
STALE_AFTER = 1.0  # a read refreshes a branch state older than this itself
IDLE_AFTER = 300.0  # a branch not read this long is no longer refreshed in the background
RULES_TTL = 1.0  # seconds the branch protection rules are trusted (lakeFS's own cache: ~1 s)
_ABSENT = ("absent",)
_COMMIT_ID = re.compile(r"[0-9a-f]{64}")  # lakeFS's commit ids: never move
log = logging.getLogger("kvmodel.store.lakefs")
_BRANCH_NAME = "lakeFS branch names are letters, digits, '_' and '-'"


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


class LakeFSError(StoreError):
    """lakeFS answered something the store cannot map to a catalog error."""


# --- configuration ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LakeFSConfig:
    """Where lakeFS is and who we are to it."""
    endpoint: str  # e.g. http://localhost:8000/api/v1
    access_key_id: str
    secret_access_key: str

    @classmethod
    def discover(cls, environ=None) -> "LakeFSConfig":
        """From ``LAKEFS_ENDPOINT``, ``LAKEFS_ACCESS_KEY_ID``, ``LAKEFS_SECRET_ACCESS_KEY``,
        else lakectl's configuration file (``LAKECTL_CONFIG`` or ``~/.lakectl.yaml``:
        ``server.endpoint_url``, ``credentials.access_key_id``/``secret_access_key``)."""
        env = os.environ if environ is None else environ
        endpoint = env.get("LAKEFS_ENDPOINT")
        key = env.get("LAKEFS_ACCESS_KEY_ID")
        secret = env.get("LAKEFS_SECRET_ACCESS_KEY")
        if not (endpoint and key and secret):
            path = env.get("LAKECTL_CONFIG") or os.path.expanduser("~/.lakectl.yaml")
            found = _read_lakectl(path) if os.path.exists(path) else {}
            endpoint = endpoint or found.get("endpoint")
            key = key or found.get("access_key_id")
            secret = secret or found.get("secret_access_key")
        if not (endpoint and key and secret):
            raise StoreError("lakeFS is not configured: set LAKEFS_ENDPOINT, "
                             "LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY (or write "
                             "~/.lakectl.yaml with lakectl config)")
        endpoint = endpoint.rstrip("/")
        if not endpoint.endswith("/api/v1"):
            endpoint += "/api/v1"
        return cls(endpoint, key, secret)


def _read_lakectl(path: str) -> dict:
    """The few fields of a lakectl YAML file (two-level ``section:``/``key: value`` lines; no
    YAML library needed)."""
    out, section = {}, None
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            name, _, value = line.strip().partition(":")
            value = value.strip().strip("'\"")
            if indent == 0:
                section = name
                continue
            if section == "server" and name == "endpoint_url":
                out["endpoint"] = value
            elif section == "credentials" and name in ("access_key_id", "secret_access_key"):
                out[name] = value
    return out


# --- the API, with lakeFS's errors translated ----------------------------------------------------
class _Api:
    """lakefs-sdk's API objects over one client, and the error translation."""

    def __init__(self, config: LakeFSConfig, repository: str):
        try:
            import lakefs_sdk
        except ImportError:
            raise StoreError("the lakeFS backend needs lakefs-sdk: pip install "
                             "'hms-proxy[lakefs]'") from None
        conf = lakefs_sdk.Configuration(host=config.endpoint, username=config.access_key_id,
                                        password=config.secret_access_key)
        try:  # a refused connection is tried again shortly; a call that got no answer is not
            from urllib3 import Retry

            conf.retries = Retry(total=2, connect=2, read=0, status=0, redirect=0,
                                 backoff_factor=0.2)
        except ImportError:  # pragma: no cover - lakefs-sdk brings urllib3
            pass
        # a lakeFS that accepts but does not answer (hung, overloaded) fails the call within
        # seconds, before the metastore clients' own timeouts (Trino's is 10 s)
        self.timeout = (CONNECT_TIMEOUT, READ_TIMEOUT)
        self.client = lakefs_sdk.ApiClient(conf)
        self.sdk = lakefs_sdk
        self.repo = repository
        self.branches = lakefs_sdk.BranchesApi(self.client)
        self.commits = lakefs_sdk.CommitsApi(self.client)
        self.objects = lakefs_sdk.ObjectsApi(self.client)
        self.refs = lakefs_sdk.RefsApi(self.client)
        self.tags = lakefs_sdk.TagsApi(self.client)
        self.repos = lakefs_sdk.RepositoriesApi(self.client)
        self.calls = 0
        self._uploads = _Connections(config, self.timeout)

    def __call__(self, fn, *args, not_found=RefNotFound, **kwargs):
        """``fn(repo, *args, **kwargs)`` with lakeFS's errors as store errors."""
        from lakefs_sdk.exceptions import ApiException

        self.calls += 1
        kwargs.setdefault("_request_timeout", self.timeout)
        try:
            return fn(self.repo, *args, **kwargs)
        except ApiException as exc:
            raise _translate(exc, not_found) from None
        except _UNREACHABLE as exc:  # connection refused, reset, retries exhausted...
            raise LakeFSError(f"lakeFS is not reachable at {self.client.configuration.host}: "
                              f"{_reason(exc)}") from None

    def upload(self, branch: str, path: str, content: bytes, headers: dict | None = None):
        """POST the object's bytes as ``application/octet-stream``, over a kept-alive
        connection of our own: the write path's one call (a log entry), where lakefs-sdk's
        request and answer models cost more than lakeFS itself (~1.5 ms of ~3 ms here). The
        answer (the object's stats) is not read. Uploading the same bytes again is harmless
        (every path we write is unique or holds one value), so a kept-alive connection that
        lakeFS closed meanwhile is retried at once, and a refused one shortly, like the
        SDK's other calls."""
        target = (f"{self._uploads.base}/repositories/{quote(self.repo, safe='')}/branches/"
                  f"{quote(branch, safe='')}/objects?path={quote(path, safe='')}")
        header_params = {"Authorization": self._uploads.auth, "Accept": "application/json",
                         "Content-Type": "application/octet-stream", **(headers or {})}
        self.calls += 1
        status, reason, body = self._uploads.post(target, bytes(content), header_params)
        if status != 201:
            raise _translate(_Failure(status, reason, body), RefNotFound)

    def close(self) -> None:
        self._uploads.close()
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing a pool that never opened
            pass


class _Failure(Exception):
    """An error status of lakeFS, as lakefs-sdk's ApiException carries it (for _translate)."""

    def __init__(self, status: int, reason: str, body: bytes):
        super().__init__(f"{status} {reason}")
        self.status, self.reason = status, reason
        self.body = body.decode("utf-8", "replace")


class _Connections:
    """Kept-alive HTTP connections to lakeFS for uploads, a few idle ones kept for reuse."""

    IDLE = 8
    REFUSED_RETRIES = (0.2, 0.4)  # seconds before each retry of a refused connection

    def __init__(self, config: "LakeFSConfig", timeout: tuple[float, float]):
        url = urlsplit(config.endpoint)
        self.https = url.scheme == "https"
        self.host, self.port = url.hostname or "localhost", url.port
        self.base = url.path.rstrip("/")
        self.endpoint = config.endpoint
        token = f"{config.access_key_id}:{config.secret_access_key}".encode()
        self.auth = "Basic " + base64.b64encode(token).decode("ascii")
        self.connect_timeout, self.read_timeout = timeout
        self._idle: list = []
        self._lock = threading.Lock()

    def _new(self):
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port,
                                               timeout=self.connect_timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=self.connect_timeout)

    def post(self, target: str, body: bytes, headers: dict) -> tuple[int, str, bytes]:
        waits = list(self.REFUSED_RETRIES)
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            reused = conn is not None
            conn = conn or self._new()
            try:
                if conn.sock is None:
                    conn.connect()
                conn.sock.settimeout(self.read_timeout)
                conn.request("POST", target, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except ConnectionRefusedError as exc:  # lakeFS (re)starting
                conn.close()
                if waits:
                    time.sleep(waits.pop(0))
                    continue
                raise self._unreachable(exc) from None
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as exc:
                conn.close()
                if reused:  # lakeFS closed kept-alive connections meanwhile: a new one
                    self.close()
                    continue
                raise self._unreachable(exc) from None
            except (OSError, http.client.HTTPException) as exc:  # timed out, and the rest
                conn.close()
                raise self._unreachable(exc) from None
            if not response.will_close:
                with self._lock:
                    if len(self._idle) < self.IDLE:
                        self._idle.append(conn)
                        conn = None
            if conn is not None:
                conn.close()
            return response.status, response.reason, data

    def _unreachable(self, exc) -> "LakeFSError":
        return LakeFSError(f"lakeFS is not reachable at {self.endpoint}: {_reason(exc)}")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


try:
    from urllib3.exceptions import HTTPError as _Urllib3Error
except ImportError:  # pragma: no cover - lakefs-sdk brings urllib3
    _Urllib3Error = OSError
_UNREACHABLE = (OSError, _Urllib3Error)


def _reason(exc) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason).splitlines()[0][:300]


def _message(exc) -> str:
    import json

    body = getattr(exc, "body", None)
    if body:
        try:
            return str(json.loads(body).get("message") or body).strip()
        except (ValueError, AttributeError):
            return str(body).strip()
    return str(getattr(exc, "reason", "") or exc).strip()


def _translate(exc, not_found):
    status = getattr(exc, "status", None)
    text = _message(exc)
    if status == 404:
        return not_found(text or "not found")
    if status == 409:
        return RefExists(text) if "exist" in text.lower() else LakeFSError(f"conflict: {text}")
    if status == 403:
        return ProtectedRef(text)
    if status == 400:
        lowered = text.lower()
        if "no changes" in lowered:
            return NothingToCommit(text)
        if "uncommitted" in lowered or "dirty" in lowered:
            return DirtyBranch(text)
        return InvalidRef(text)
    if status == 401:
        return LakeFSError(f"lakeFS refused our credentials: {text}")
    return LakeFSError(f"lakeFS answered {status}: {text}")


# --- values in objects ----------------------------------------------------------------------------
def _path(key: Key) -> str:
    return PREFIX + key


def _key(path: str) -> Key:
    return path[len(PREFIX):]


def _inline(stats) -> bytes | None:
    """The value carried in an ObjectStats' user metadata, if any."""
    for name, value in (stats.metadata or {}).items():
        if name.lower() == META_VALUE:
            return base64.b64decode(value)
    return None


def _after_for(start_path: str) -> str:
    """An ``after`` (exclusive) that lists ``start_path`` and what follows it (callers drop
    the few paths in between that are smaller)."""
    if not start_path:
        return ""
    last = start_path[-1]
    if last == "\x00":
        return start_path[:-1]
    return start_path[:-1] + chr(ord(last) - 1) + "\U0010ffff" * 8


# --- caches of what commits hold -----------------------------------------------------------------
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


# --- views ----------------------------------------------------------------------------------------
class _Snapshot:
    """What a commit holds (reads cached by commit id: commits never change)."""

    def __init__(self, store: "LakeFSStore", commit_id: CommitID):
        self.store = store
        self.commit = commit_id

    def get(self, key: Key) -> Value | None:
        return self.store._committed_value(self.commit, key)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        return self.store._committed_values(self.commit, keys)

    def scan(self, start: Key, end: Key | None) -> Iterator[tuple[Key, Value]]:
        return self.store._committed_scan(self.commit, start, end)


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
        self._snap = _Snapshot(store, ref.commit)
        self._staged: dict = state.staged if state is not None else {}
        self._keys: list = state.keys if state is not None else []

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
        lo = bisect.bisect_left(self._keys, start)
        hi = len(self._keys) if end is None else bisect.bisect_left(self._keys, end)
        if lo >= hi:
            return committed
        staged = [(k, self._staged[k]) for k in self._keys[lo:hi]]
        return _overlay(staged, committed)


class _Write(_View, WriteTxn):
    """A write transaction: its changes over the branch's state, written as one log entry when
    it ends (see the module doc)."""

    def __init__(self, store, ref, state, token):
        super().__init__(store, ref, state, token)
        self._canonical = store.canonical
        self.changes: dict[Key, Value | None] = {}

    def get(self, key: Key) -> Value | None:
        if isinstance(key, str) and key in self.changes:
            return self.changes[key]
        return super().get(key)

    def get_many(self, keys: list[Key]) -> list[Value | None]:
        rest = [k for k in keys if k not in self.changes]
        found = dict(zip(rest, super().get_many(rest)))
        return [self.changes[k] if k in self.changes else found[k] for k in keys]

    def scan(self, start: Key = "", end: Key | None = None) -> Iterator[tuple[Key, Value]]:
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


# --- the store ---------------------------------------------------------------------------------------
@dataclass
class _BranchState:
    """What a branch reads as: its head, its staged per-key catalog objects (``base``: left by
    an interrupted fold, normally empty) and its write-log entries applied over them."""

    head: CommitID
    base: dict  # key -> value | None: staged per-key objects under _hms/
    entries: tuple  # names of the log entries applied, in order
    markers: tuple  # names of the fold markers present, and of the entries they name
    staged: dict  # base with the entries applied: key -> value | None
    keys: list  # sorted(staged)
    checked: float  # time.monotonic() when the refresh that saw this began
    version: int
    used: float = 0.0  # time.monotonic() of the last read
    news: int | None = None  # the branch's change counter in Redis when this was made


_versions = itertools.count(1)


class LakeFSStore(VersionedStore):
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
        redis_url: also cache what is read at commits in this Redis (``serve --redis``).
    """

    exact_snapshots = False
    protection_blocks_writes = True

    def __init__(self, repository: str, config: LakeFSConfig | None = None, *,
                 cache_bytes: int = 256 << 20, refresh: float = DEFAULT_REFRESH,
                 canonical: Callable[[str, bytes, str], bytes] | None = None,
                 redis_url: str | None = None):

        self.repository = repository
        self.canonical = canonical
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
        self._entries: dict[tuple[str, str], dict] = {}  # (branch, entry) -> its changes
        self._folds: dict[tuple[str, str], set] = {}  # (branch, marker) -> entries it folded
        self._branch_locks: dict[str, threading.RLock] = {}
        self._refresh_locks: dict[str, threading.Lock] = {}
        self._failures: dict[str, tuple[float, StoreError]] = {}  # the last failed refresh
        self._moved: dict[str, float] = {}  # when this process last moved a branch's head
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="lakefs-upload")
        self._stop = threading.Event()
        self._redis = None  # with use_redis: where branch changes are announced
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

    # --- names and refs ------------------------------------------------------------------
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
            self._forget_log(name)

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

    def _paged(self, fn, *args, **kwargs):
        if fn == self.api.refs.diff_refs:
            kwargs.setdefault("_request_timeout", (CONNECT_TIMEOUT, VERSIONING_TIMEOUT))
        after = ""
        while True:
            page = self.api(fn, *args, after=after, amount=PAGE, **kwargs)
            yield from page.results
            if not page.pagination.has_more:
                return
            after = page.pagination.next_offset

    def _commit_diff(self, left: CommitID, right: CommitID, prefix: str = "") -> tuple:
        """lakeFS's two-dot diff between two commits under ``prefix``, objects only, as
        ``(path, type)`` pairs: asked once, then kept (a merge needs each side's twice). A
        diff of the whole repository kept already answers any prefix."""
        hit = self._diffs.get((left, right, prefix))
        if hit is None and prefix:
            whole = self._diffs.get((left, right, ""))
            if whole is not None:
                hit = tuple(e for e in whole if e[0].startswith(prefix))
        if hit is not None:
            return hit
        extra = {"prefix": prefix} if prefix else {}
        out = tuple((d.path, d.type) for d in self._paged(self.api.refs.diff_refs, left, right,
                                                            type="two_dot", **extra)
                    if d.path_type == "object")
        if _COMMIT_ID.fullmatch(left) and _COMMIT_ID.fullmatch(right):  # not a branch name
            self._diffs.put((left, right, prefix), out, sum(96 + len(p) for p, _ in out))
        return out

    # --- reads at a commit -----------------------------------------------------------------
    def _committed_value(self, commit: CommitID, key: Key) -> Value | None:
        hit = self._values.get((commit, key))
        if hit is not None:
            return None if hit == _ABSENT else hit
        try:
            stats = self.api(self.api.objects.stat_object, commit, _path(key),
                             user_metadata=True)
        except RefNotFound:
            self._values.put((commit, key), _ABSENT, 64 + len(key))
            return None
        value = self._value_of(commit, stats)
        self._values.put((commit, key), value, 64 + len(key) + len(value))
        return value

    def _value_of(self, ref: str, stats) -> bytes:
        """An object's value: inline in its metadata, cached by checksum, or read."""
        value = _inline(stats)
        if value is not None:
            return value
        hit = self._values.get(("checksum", stats.checksum))
        if hit is not None:
            return hit
        data = self.api(self.api.objects.get_object, ref, stats.path)
        value = bytes(data)
        self._values.put(("checksum", stats.checksum), value, 64 + len(value))
        return value

    def _committed_values(self, commit: CommitID, keys: list[Key]) -> list[Value | None]:
        """Many keys: a directory with many of them asked for is listed instead (one call a
        page) of being read key by key."""
        out: dict[Key, Value | None] = {}
        missing = []
        for k in keys:
            hit = self._values.get((commit, k))
            if hit is None:
                missing.append(k)
            else:
                out[k] = None if hit == _ABSENT else hit
        groups: dict[str, list[Key]] = {}
        for k in missing:
            groups.setdefault(k.rsplit("/", 1)[0] + "/" if "/" in k else "", []).append(k)
        for directory, members in groups.items():
            if len(members) >= 16:
                self._committed_run(commit, directory, sorted(members), out)
            else:
                for k in members:
                    out[k] = self._committed_value(commit, k)
        return [out[k] for k in keys]

    def _committed_run(self, commit: CommitID, directory: str, members: list[Key],
                       out: dict) -> None:
        """Values of many keys of one directory (sorted): listing pages that start at the
        first key not known yet, each answering every key up to its last entry, so the cost
        follows how the keys cluster, not how large the directory is."""
        i = 0
        while i < len(members):
            entries, nxt = self._page(commit, PREFIX + directory, _after_for(_path(members[i])))
            if not entries and nxt is not None:  # nothing to bound it by: one key at a time
                out[members[i]] = self._committed_value(commit, members[i])
                i += 1
                continue
            found = {_key(path): value for path, value in entries}
            last = _key(entries[-1][0]) if nxt is not None else None  # None: to the end
            while i < len(members) and (last is None or members[i] <= last):
                key = members[i]
                out[key] = found.get(key)
                if out[key] is None:
                    self._values.put((commit, key), _ABSENT, 64 + len(key))
                i += 1

    def _committed_scan(self, commit: CommitID, start: Key, end: Key | None
                        ) -> Iterator[tuple[Key, Value]]:
        prefix = _common_prefix(start, end)
        after = _after_for(_path(start)) if start != prefix else ""
        while True:
            page = self._page(commit, PREFIX + prefix, after)
            for path, value in page[0]:
                key = _key(path)
                if key < start:
                    continue
                if end is not None and key >= end:
                    return
                yield key, value
            if page[1] is None:
                return
            after = page[1]

    def _page(self, commit: CommitID, prefix: str, after: str):
        """([(path, value)], next after or None) of one listing page at a commit (cached)."""
        cache_key = (commit, prefix, after)
        hit = self._pages.get(cache_key)
        if hit is not None:
            return hit
        listing = self.api(self.api.objects.list_objects, commit, user_metadata=True,
                           after=after, amount=PAGE, prefix=prefix)
        entries, size = [], 64
        for stats in listing.results:
            if stats.path_type != "object":
                continue
            value = self._value_of(commit, stats)
            entries.append((stats.path, value))
            self._values.put((commit, _key(stats.path)), value, 64 + len(value))
            size += len(stats.path) + len(value) + 32
        nxt = listing.pagination.next_offset if listing.pagination.has_more else None
        result = (entries, nxt)
        self._pages.put(cache_key, result, size)
        return result

    # --- branch state ------------------------------------------------------------------------
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

    # --- reads and writes ------------------------------------------------------------------
    @contextmanager
    def read(self, ref: RefExpr):
        self._check_open()
        yield self._view(ref)

    def get(self, ref: RefExpr, key: Key) -> Value | None:
        return self._view(ref).get(key)

    def token(self, ref: RefExpr) -> object:
        return self._view(ref).token

    def _branch_lock(self, branch: str) -> threading.RLock:
        """Held by a write transaction and a commit of the branch (one at a time)."""
        with self._lock:
            return self._branch_locks.setdefault(branch, threading.RLock())

    def _refresh_lock(self, branch: str) -> threading.Lock:
        """Held while the branch's state is asked of lakeFS (one refresh at a time)."""
        with self._lock:
            return self._refresh_locks.setdefault(branch, threading.Lock())

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

    # --- commits ---------------------------------------------------------------------------
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
            keys = [_key(path) for path, _ in self._commit_diff(
                lview.ref.commit, rview.ref.commit, PREFIX + prefix)]
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

    # --- merges ------------------------------------------------------------------------------
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

    # --- data objects: the table files the metastore itself manages (as HMS does) ---------
    @staticmethod
    def _data_path(path: str) -> str:
        path = path.lstrip("/")
        if path.startswith(NOT_DATA) or path.rstrip("/") + "/" in NOT_DATA:
            raise StoreError(f"{path!r} is the catalog's, not a data location")
        return path

    def data_objects(self, branch: BranchName, directory: str) -> Iterator[tuple[str, int]]:
        """(path, size) of the objects under ``directory/`` on ``branch``."""
        for path, size, _ in self.data_listing(branch, directory):
            yield path, size

    def data_listing(self, branch: RefExpr, directory: str) -> Iterator[tuple[str, int, int]]:
        """(path, size, modification time in seconds since the epoch) of the objects under
        ``directory/`` at ``branch`` (staged ones included)."""
        prefix = self._data_path(directory).rstrip("/") + "/"
        for o in self._paged(self.api.objects.list_objects, branch, prefix=prefix, delimiter=""):
            if o.path_type == "object":
                yield o.path, o.size_bytes or 0, o.mtime or 0

    def delete_data_paths(self, branch: BranchName, paths: list[str]) -> int:
        """Delete these data objects on ``branch`` (uncommitted); how many."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        paths = [self._data_path(p) for p in paths]
        for i in range(0, len(paths), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=paths[i:i + PAGE]))
        return len(paths)

    def uncommitted(self, branch: BranchName) -> bool:
        """Whether ``branch`` has any uncommitted change: catalog keys or data objects."""
        return next(iter(self.staged(branch)), None) is not None or self._data_staged(branch)

    def delete_data(self, branch: BranchName, directory: str) -> int:
        """Delete everything under ``directory/`` on ``branch`` (uncommitted, as a client's
        deletes are); how many objects."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        paths = [p for p, _ in self.data_objects(branch, directory)]
        for i in range(0, len(paths), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=paths[i:i + PAGE]))
        return len(paths)

    def move_data(self, branch: BranchName, src: str, dst: str) -> int:
        """Move the objects under ``src/`` to ``dst/`` on ``branch`` (lakeFS copies are
        metadata only: no data is read or written); how many objects."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        src_dir = self._data_path(src).rstrip("/") + "/"
        dst_dir = self._data_path(dst).rstrip("/") + "/"
        paths = [p for p, _ in self.data_objects(branch, src_dir)]
        for path in paths:
            self.api(self.api.objects.copy_object, branch, dst_dir + path[len(src_dir):],
                     self.api.sdk.ObjectCopyCreation(src_path=path, src_ref=branch))
        for i in range(0, len(paths), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=paths[i:i + PAGE]))
        return len(paths)

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
        with self._branch_lock(branch):
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
            if state.entries or state.markers or state.base:  # no-op writes: drop them
                self._reset_catalog(branch)
            if len(parents) == 1:
                return self._snapshot_on(branch, state, writes, message, author, metadata)
            return self._merge_snapshot(branch, state, parents[1], writes, message, author,
                                        metadata, data_strategy)

    def _snapshot_on(self, branch, state, writes, message, author, metadata) -> Commit:
        if not self._protected(branch, fresh=True):  # one log entry, folded and committed
            if writes:
                self._log_write(branch, state, writes)
                state = self._refresh(branch)
                self._fold(branch, state, self._real_staged(branch, state))
            return self._commit(branch, message, author, metadata, allow_empty=True)
        # on a temporary branch, merged in: the branch moves once, with all of it or none
        temp = self._temp_branch(state.head)
        try:
            if writes:
                self._put_keys(temp, state.head, writes)
            self._commit(temp, message, author, metadata, allow_empty=True)
            return self._merge(temp, branch, message, author, metadata, None)
        finally:
            self._drop_temp(temp)

    def _merge_snapshot(self, branch, state, source: CommitID, writes, message, author,
                        metadata, data_strategy) -> Commit:
        dest = state.head
        base = self._merge_base(source, dest)
        src_changed = {_key(path) for path, _ in self._commit_diff(base, source, PREFIX)} \
            if base else set()
        dst_changed = {_key(path) for path, _ in self._commit_diff(base, dest, PREFIX)} \
            if base else set()
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
        if natural and not conflicts:
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
                self._put_keys(temp, temp_head, fixes)
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

    # --- lifecycle ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=READ_TIMEOUT + CONNECT_TIMEOUT)
        self._pool.shutdown(wait=True)
        self.api.close()


def _matches(patterns: list[str], name: str) -> bool:
    return any(p == name or fnmatch.fnmatchcase(name, p) for p in patterns)


def _common_prefix(start: Key, end: Key | None) -> Key:
    """A prefix every key in [start, end) shares (the listing's ``prefix``)."""
    if end is None:
        return ""
    if end == prefix_end(start):
        return start
    n = 0
    for a, b in zip(start, end):
        if a != b:
            break
        n += 1
    return start[:n]


__all__ = ["LakeFSStore", "LakeFSConfig", "LakeFSError", "PREFIX", "JOURNAL"]
