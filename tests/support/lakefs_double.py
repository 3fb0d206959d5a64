"""A **test double** of the lakeFS REST API v1 — not lakeFS — to test code using ``lakefs_sdk``.

These machines run neither Docker nor a lakeFS server, so the lakeFS backend is tested against
this in-process HTTP server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, one lock around every
request, everything in memory)::

    with LakeFSDouble(access_key_id="AKIA...", secret_access_key="...") as double:
        double.create_repository("repo", default_branch="main")
        conf = lakefs_sdk.Configuration(host=double.endpoint, username="AKIA...", password="...")
        ...
        double.calls["GET /repositories/{repository}/refs/{ref}/objects/ls"]  # requests served
        double.fail_next(2, status=503)   # the next two requests answer 503

Every JSON answer is built from ``lakefs_sdk.models`` (``to_dict()``), so its shape is lakeFS's
own, and every JSON request body is parsed with the model lakefs_sdk sends (``from_dict``).

Endpoints (under ``/api/v1``)
-----------------------------
- ``GET /healthcheck`` (no credentials needed, as in lakeFS)
- repositories: create (``bare`` too), get, list, delete; branch protection rules get/set
  (``ETag`` / ``If-Match`` → 412 on mismatch)
- branches: list, create (any ref expression as source; 201 with the commit id as ``text/plain``,
  as lakeFS), get, delete, reset (``reset`` | ``object`` | ``common_prefix``), diff (uncommitted)
- tags: list, create, get, delete
- commits: commit, get (any ref expression), log (``after``, ``amount``, ``first_parent``,
  ``limit``, ``objects``, ``prefixes``)
- objects: upload (multipart ``content`` part or a raw body; ``If-None-Match: *`` and
  ``If-Match``; user metadata from ``X-Lakefs-Meta-*`` headers), get (``Range``,
  ``If-None-Match``), head, stat, list (``prefix``, ``after``, ``amount``, ``delimiter``,
  ``user_metadata``), delete, bulk delete, update user metadata
- refs: diff (``two_dot`` | ``three_dot``), find merge base, merge (strategies, ``allow_empty``,
  ``force``, ``squash_merge``)

Semantics taken from lakeFS's sources (treeverse/lakeFS, read through the code index)
------------------------------------------------------------------------------------
- Status codes (``pkg/api/controller.go`` ``handleAPIErrorCallback``, and the newer
  ``HandleAPIErrorCallback``): not found 404; protected branch 403 (``cannot write to protected
  branch`` / ``cannot commit to protected branch``), deleting the default branch 403; dirty
  branch, no changes, invalid ref, invalid merge strategy, ``$`` where a commit is needed 400;
  already exists and merge conflict 409; precondition failed 412; bad credentials 401.
- Merge conflict: 409 whose body is a ``MergeResult`` with an empty ``reference`` (controller
  ``MergeIntoBranch``; lakefs_sdk's own response map says 409 → ``MergeResult``).
- Repository creation (``pkg/graveler/ref/manager.go``): the default branch points at a first
  commit "Repository created" with no parents, no committer, an empty ``meta_range_id`` and
  generation 1. Repository ids match ``^[a-z0-9][a-z0-9-]{2,62}$``, branch ids
  ``^\\w[-\\w]*$``.
- Ref expressions (``pkg/graveler/ref/parse_ref.go``, ``resolve_ref.go``): a full commit id wins
  over a branch or tag, which win over a commit id prefix (hex, 1-64 chars, must be unique);
  ``~N`` (first parents; past the root → 404), ``^N`` (N-th parent; out of range → 400, ``^0`` is
  the commit itself), ``@`` (a branch's committed data only; alone, on a branch only) and ``$``
  (the branch's staging area, explicitly). A plain branch name reads its staged writes (``Get``
  and ``List`` in ``pkg/graveler/graveler.go``); any other ref reads committed data only.
- Diff (``graveler.go`` ``Diff``/``Compare``, ``committed/compare_iterator.go``): a branch on
  either side means its HEAD commit; only ``branch$`` on the right of a two-dot diff adds its
  staging area (``$`` on the left, or in a three-dot diff, → 400). Three-dot (the default type)
  lists what merging the right ref into the left would change, relative to their merge base,
  with ``conflict`` entries. With a delimiter, common prefixes are ``prefix_changed``.
- Uncommitted diff (``uncommitted_diff_iterator.go``): staged writes identical to the committed
  object and tombstones of never-committed paths are not changes.
- Object identity (``pkg/catalog/entry.go`` ``EntryToValue``): size, checksum, user metadata and
  content type — not the address nor the time; diff, merge and "no changes" compare identities.
- Commit (``graveler.go`` ``Commit``, ``committed/commit.go``): nothing changed and not
  ``allow_empty`` → 400 ``commit: no changes``; ``date`` overrides ``creation_date``.
- Merge (``graveler.go`` ``Merge``, ``committed/merge.go``, ``committed_manager.go``,
  ``docs/understand/how/merge.md``): a destination with uncommitted changes → 400 ``uncommitted
  changes (dirty branch)``; the source is a commit (a branch means its HEAD, staging ignored); a
  source with nothing new since the merge base → 400 ``no changes`` unless ``allow_empty`` or
  ``force``; 3-way by path: changed on one side takes that side, changed on both sides to the same
  object is fine, changed on both sides differently (deletion included) is a conflict, which
  ``dest-wins`` / ``source-wins`` resolve. The commit has parents [destination HEAD, source]
  (``squash_merge``: destination only), message ``Merge '<source>' into '<destination>'`` by
  default, and metadata ``.lakefs.merge.strategy`` = ``default`` | ``dest-wins`` |
  ``source-wins``. Merging into a protected branch is allowed (the point of protection).
- Log (``catalog.go`` ``ListCommits``, ``ref/commit_iterator.go``): newest first (creation date,
  then commit id), all parents unless ``first_parent``; ``after`` skips up to and including
  that commit; ``objects``/``prefixes`` keep the single-parent commits that changed them;
  ``limit`` stops at ``amount`` without reporting more. The ref is validated as a branch id
  (``^\\w[-\\w]*$``): ``main~1`` → 400; a branch, a tag of word characters or a commit id pass.
- Pagination (controller ``paginationAmount``/``paginationFor``): ``amount`` defaults to 100,
  capped at 1000; ``next_offset`` is the last result's id or path when ``has_more``.
- Protection (``branch/protection_manager.go``, ``docs/.../protect-branches``): a pattern
  (``*``, ``?``) blocks uploads, deletes, reset and commit; deleting the branch is not blocked.
- Upload (controller ``UploadObject``): metadata from ``X-Lakefs-Meta-<key>`` headers (keys
  lowercased); ``If-None-Match`` other than ``*`` → 400, path present → 412; the content type is
  the multipart part's ``Content-Type``. Deleting an absent object is a no-op (``deleteUnsafe``);
  bulk delete answers 200 with an ``ObjectErrorList`` (403 per path on a protected branch).
- Tags: a tag named like an existing branch → 409 (catalog ``CreateTag``).

Assumed, not confirmed from the sources
---------------------------------------
- The merge base is the common ancestor of highest generation (``merge_base_finder.go`` was
  not read); protection also blocks user-metadata updates; the 401 message is
  ``error authenticating request`` (lakeFS's ``ErrAuthenticatingRequest``, text not read).
- Error messages beyond the sentinel texts above; checksum = MD5 hex of the content (what the
  local block adapter yields; S3 would give its ETag); physical address
  ``<storage_namespace>/data/<uuid>``; commit and meta-range ids are SHA-256 hex of our own
  encoding (same length and alphabet as lakeFS's, not the same values).
- ``update_object_user_metadata`` answers 201 and restages the object with the new metadata;
  deleting an unknown tag → 404; a branch named like an existing tag → 409; creating a branch
  from ``branch$`` → 500 (``ErrCreateBranchNoCommit`` is mapped to no status); the
  protection-rules ETag is a hash of the patterns; uncommitted "removed" entries carry the
  committed object's size; upload ``If-Match`` compares the object's checksum. Newer lakeFS
  may validate the log ref as a ref (not a branch id).

Left out
--------
Authorization policies (any valid key may do anything), users/groups/credentials, JWT/cookie
auth, pre-signed URLs (``presign`` is ignored), hooks/actions, GC, imports, staging/link APIs,
copy, cherry-pick, revert, hard reset, pull requests, repository metadata, read-only
repositories, ``storage_class``, ``no_tombstone``, ``since``/``stop_at`` in log, hidden branches,
``{a,b}`` alternatives in protection patterns (lakeFS uses gobwas/glob, this ``fnmatch``),
persistence, and lakeFS's per-request latency and eventual consistency.
"""
from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from email.message import Message
from email.utils import formatdate
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from lakefs_sdk.models import (
    BranchCreation,
    BranchProtectionRule,
    Commit,
    CommitCreation,
    CommitList,
    Diff,
    DiffList,
    Error,
    FindMergeBaseResult,
    Merge,
    MergeResult,
    ObjectError,
    ObjectErrorList,
    ObjectStats,
    ObjectStatsList,
    Pagination,
    PathList,
    Ref,
    RefList,
    Repository,
    RepositoryCreation,
    RepositoryList,
    ResetCreation,
    TagCreation,
    UpdateObjectUserMetadata,
)

API_PREFIX = "/api/v1"
DEFAULT_PER_PAGE = 100          # controller.go DefaultPerPage
MAX_PER_PAGE = 1000             # controller.go DefaultMaxPerPage
FIRST_COMMIT_MESSAGE = "Repository created"
MERGE_STRATEGY_KEY = ".lakefs.merge.strategy"
MERGE_STRATEGIES = {None: "default", "": "default", "dest-wins": "dest-wins",
                    "source-wins": "source-wins"}
USER_METADATA_HEADER = "x-lakefs-meta-"
AUTH_ERROR = "error authenticating request"

_REPOSITORY_ID = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
_BRANCH_ID = re.compile(r"^\w[-\w]*$", re.ASCII)   # Go's \w is ASCII
_HEX_PREFIX = re.compile(r"^[a-fA-F0-9]{1,64}$")
_REF_PART = re.compile(r"(?:^|[~^@$])[^~^@$]*")
_TAG_FORBIDDEN = re.compile(r"[\s~^:?*\[\\]|\.\.|@\{")
_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


# --- errors ---------------------------------------------------------------------------------

class LakeFSError(Exception):
    """An answer other than success: its status and lakeFS's ``Error{message}`` (or a body)."""

    def __init__(self, status: int, message: str, body: object | None = None):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


def _not_found(message: str = "not found") -> LakeFSError:
    return LakeFSError(404, message)


def _bad_request(message: str) -> LakeFSError:
    return LakeFSError(400, message)


# --- the data -------------------------------------------------------------------------------

def _sha256(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, eq=False)
class _Entry:
    """One object: its bytes and the fields lakeFS keeps in a catalog entry."""

    path: str
    data: bytes
    checksum: str
    content_type: str
    metadata: Mapping[str, str]
    mtime: int
    physical_address: str

    @property
    def size(self) -> int:
        return len(self.data)

    @cached_property
    def identity(self) -> str:
        """As lakeFS's ``EntryToValue``: what makes two entries "the same object"."""
        return _sha256(self.size, self.checksum, sorted(self.metadata.items()), self.content_type)


def _identity(entry: _Entry | None) -> str | None:
    return None if entry is None else entry.identity


Tree = dict[str, _Entry]


@dataclass
class _Commit:
    id: str
    parents: list[str]
    committer: str
    message: str
    creation_date: int
    order: int            # a strictly increasing clock: orders the log, breaks same-second ties
    meta_range_id: str
    metadata: dict[str, str]
    generation: int
    tree: Tree


@dataclass
class _Branch:
    name: str
    commit_id: str
    staging: dict[str, _Entry | None] = field(default_factory=dict)  # None: a tombstone


@dataclass(frozen=True)
class _Resolved:
    """A ref expression resolved: the commit, and the branch whose staging area reads see."""

    commit_id: str
    branch: _Branch | None = None
    explicit_staging: bool = False   # the ``$`` modifier


class _Clock:
    """Nanoseconds since the epoch, strictly increasing across calls."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def tick(self) -> int:
        with self._lock:
            self._last = max(time.time_ns(), self._last + 1)
            return self._last


_CLOCK = _Clock()


def _meta_range_id(tree: Tree) -> str:
    return _sha256(sorted((path, entry.identity) for path, entry in tree.items()))


def _with_staging(tree: Tree, staging: Mapping[str, _Entry | None]) -> Tree:
    """The committed tree overlaid with staged writes and tombstones."""
    view = dict(tree)
    for path, entry in staging.items():
        if entry is None:
            view.pop(path, None)
        else:
            view[path] = entry
    return view


class _Repository:
    """One repository: commits, branches (with their staging areas), tags, protection rules."""

    def __init__(self, name: str, storage_namespace: str, default_branch: str) -> None:
        self.name = name
        self.storage_namespace = storage_namespace
        self.default_branch = default_branch
        self.creation_date = int(time.time())
        self.commits: dict[str, _Commit] = {}
        self.branches: dict[str, _Branch] = {}
        self.tags: dict[str, str] = {}
        self.protection: list[str] = []

    def model(self) -> Repository:
        return Repository(id=self.name, creation_date=self.creation_date,
                          default_branch=self.default_branch,
                          storage_namespace=self.storage_namespace, read_only=False)

    # commits

    def add_commit(self, *, parents: list[str], tree: Tree, message: str, committer: str,
                   metadata: Mapping[str, str] | None = None, date: int | None = None,
                   first: bool = False) -> _Commit:
        """Store a new commit; its id is a content address, 64 hex characters like lakeFS's."""
        order = _CLOCK.tick()
        creation_date = order // 1_000_000_000 if date is None else date
        generation = 1 + max((self.commits[p].generation for p in parents), default=0)
        meta_range_id = "" if first else _meta_range_id(tree)
        metadata = dict(metadata or {})
        commit_id = _sha256(committer, message, meta_range_id, order, parents, metadata,
                            generation)
        commit = _Commit(commit_id, list(parents), committer, message, creation_date, order,
                         meta_range_id, metadata, generation, dict(tree))
        self.commits[commit_id] = commit
        return commit

    def commit_by_prefix(self, prefix: str) -> _Commit | None:
        """The one commit whose id starts with ``prefix`` (None if none, or several)."""
        prefix = prefix.lower()
        found = [c for cid, c in self.commits.items() if cid.startswith(prefix)]
        return found[0] if len(found) == 1 else None

    # refs

    def branch(self, name: str, missing: str = "branch not found") -> _Branch:
        """A branch by name: an invalid name is a 400 (lakeFS validates it), an unknown a 404."""
        _validate_branch_id(name)
        branch = self.branches.get(name)
        if branch is None:
            raise _not_found(missing)
        return branch

    def resolve(self, ref: str) -> _Resolved:
        """Resolve a ref expression as lakeFS's ``ResolveRawRef``."""
        if not ref or any(ch.isspace() for ch in ref):
            raise _bad_request("ref: invalid value: validation error")
        base, modifiers = _parse_ref(ref)
        commit_id, branch = self._resolve_base(base)
        if not modifiers:
            return _Resolved(commit_id, branch)
        kind = modifiers[0][0]
        if kind in "@$":
            if branch is None or len(modifiers) != 1:
                raise _bad_request("ref: invalid value: validation error")
            return _Resolved(commit_id, branch if kind == "$" else None, kind == "$")
        for kind, amount in modifiers:
            commit_id = self._ancestor(commit_id, kind, amount)
        return _Resolved(commit_id)

    def _resolve_base(self, rev: str) -> tuple[str, _Branch | None]:
        commit = self.commit_by_prefix(rev) if _HEX_PREFIX.match(rev) else None
        if commit is not None and commit.id == rev:
            return commit.id, None
        if rev in self.branches:
            return self.branches[rev].commit_id, self.branches[rev]
        if rev in self.tags:
            return self.tags[rev], None
        if commit is not None:
            return commit.id, None
        raise _not_found()

    def _ancestor(self, commit_id: str, kind: str, amount: int) -> str:
        if kind in "@$":
            raise _bad_request("ref: invalid value: validation error")
        if kind == "~":
            for _ in range(amount):
                parents = self.commits[commit_id].parents
                if not parents:
                    raise _not_found()
                commit_id = parents[0]
            return commit_id
        if amount == 0:
            return commit_id
        parents = self.commits[commit_id].parents
        if amount > len(parents):
            raise _bad_request("ref: invalid value: validation error")
        return parents[amount - 1]

    def dereference_commit(self, ref: str) -> _Commit:
        """The commit a ref names; ``branch$`` is refused, as lakeFS's ``dereferenceCommit``."""
        resolved = self.resolve(ref)
        if resolved.explicit_staging:
            raise _bad_request(f"reference '{ref}': reference to staging area with $ is not a "
                               "commit")
        return self.commits[resolved.commit_id]

    def read_view(self, resolved: _Resolved) -> Tree:
        """What reads at a resolved ref see: a branch's staged writes over its commit."""
        tree = self.commits[resolved.commit_id].tree
        if resolved.branch is None:
            return tree
        return _with_staging(self.commits[resolved.branch.commit_id].tree,
                             resolved.branch.staging)

    def branch_view(self, branch: _Branch) -> Tree:
        return self.read_view(_Resolved(branch.commit_id, branch))

    def uncommitted(self, branch: _Branch) -> list[Change]:
        """The branch's staged changes that really change something."""
        return _uncommitted_changes(self.commits[branch.commit_id].tree, branch.staging)

    # protection

    def guard(self, branch: str, action: str) -> None:
        """Refuse a write or commit on a protected branch (403)."""
        if any(fnmatch.fnmatchcase(branch, pattern) for pattern in self.protection):
            raise LakeFSError(403, f"cannot {action} to protected branch")

    def protection_etag(self) -> str:
        return _sha256(sorted(self.protection))


def _parse_ref(ref: str) -> tuple[str, list[tuple[str, int]]]:
    """Split ``main~2^1`` into ``main`` and its modifiers, as lakeFS's ``ParseRef``."""
    parts = [m.group(0) for m in _REF_PART.finditer(ref)]
    if not parts or not parts[0]:
        raise _bad_request("ref: invalid value: validation error")
    modifiers = []
    for part in parts[1:]:
        kind, digits = part[0], part[1:]
        if kind in "@$" and digits:
            raise _bad_request("ref: invalid value: validation error")
        if digits and not (digits.isascii() and digits.isdigit()):
            raise _bad_request(f"could not parse modifier {part}: ref: invalid value")
        modifiers.append((kind, int(digits) if digits else 1))
    return parts[0], modifiers


# --- diff, merge, log -----------------------------------------------------------------------

Change = tuple[str, str, _Entry]   # (path, "added" | "removed" | "changed" | "conflict", entry)


def _diff_trees(left: Tree, right: Tree) -> list[Change]:
    """Two-dot diff: what changes from ``left`` to ``right``, by object identity."""
    changes = []
    for path in sorted(left.keys() | right.keys()):
        old, new = left.get(path), right.get(path)
        if old is None:
            changes.append((path, "added", new))
        elif new is None:
            changes.append((path, "removed", old))
        elif old.identity != new.identity:
            changes.append((path, "changed", new))
    return changes


def _compare_trees(left: Tree, right: Tree, base: Tree) -> list[Change]:
    """Three-dot diff, as ``compare_iterator.go``: the changes merging ``right`` into ``left``
    would apply, relative to ``base`` — changes made only on the left are not listed."""
    changes = []
    for path, kind, entry in _diff_trees(left, right):
        was, old, new = (_identity(tree.get(path)) for tree in (base, left, right))
        if kind == "added":
            outcome = "added" if was is None else ("conflict" if was != new else None)
        elif kind == "changed":
            if was is None:
                outcome = "conflict"
            else:
                outcome = None if was == new else ("conflict" if was != old else "changed")
        else:
            outcome = None if was is None else ("removed" if was == old else "conflict")
        if outcome is not None:
            changes.append((path, outcome, entry))
    return changes


def _uncommitted_changes(committed: Tree, staging: Mapping[str, _Entry | None]) -> list[Change]:
    """The staging area as a diff against the branch's commit (``uncommitted_diff_iterator``)."""
    changes = []
    for path in sorted(staging):
        staged, current = staging[path], committed.get(path)
        if staged is None:
            if current is not None:
                changes.append((path, "removed", current))
        elif current is None:
            changes.append((path, "added", staged))
        elif current.identity != staged.identity:
            changes.append((path, "changed", staged))
    return changes


def _merge_trees(base: Tree, source: Tree, dest: Tree,
                 strategy: str | None) -> tuple[Tree, list[str]]:
    """3-way merge by path (``committed/merge.go``); returns the tree and conflicting paths."""
    merged: Tree = {}
    conflicts = []
    for path in sorted(base.keys() | source.keys() | dest.keys()):
        was, src, dst = (_identity(t.get(path)) for t in (base, source, dest))
        if src == dst or dst == was:
            chosen = source.get(path)
        elif src == was:
            chosen = dest.get(path)
        elif strategy == "dest-wins":
            chosen = dest.get(path)
        elif strategy == "source-wins":
            chosen = source.get(path)
        else:
            conflicts.append(path)
            continue
        if chosen is not None:
            merged[path] = chosen
    return merged, conflicts


def _ancestry(repo: _Repository, start: str, first_parent: bool = False) -> Iterator[_Commit]:
    """Commits reachable from ``start``, newest first (lakeFS's ``CommitIterator`` order)."""
    frontier = [repo.commits[start]]
    seen = {start}
    while frontier:
        current = max(frontier, key=lambda c: (c.order, c.id))
        frontier.remove(current)
        yield current
        parents = current.parents[:1] if first_parent else current.parents
        for parent in parents:
            if parent not in seen:
                seen.add(parent)
                frontier.append(repo.commits[parent])


def _merge_base(repo: _Repository, a: _Commit, b: _Commit) -> _Commit:
    """The common ancestor of highest generation."""
    ancestors_of_a = {c.id for c in _ancestry(repo, a.id)}
    common = [c for c in _ancestry(repo, b.id) if c.id in ancestors_of_a]
    if not common:
        raise LakeFSError(500, "no merge base")
    return max(common, key=lambda c: (c.generation, c.order))


def _touches(repo: _Repository, commit: _Commit, objects: list[str], prefixes: list[str]) -> bool:
    """Whether a single-parent commit changed one of the paths (``checkPathListInCommit``)."""
    changed = [path for path, _, _ in
               _diff_trees(repo.commits[commit.parents[0]].tree, commit.tree)]
    return any(p in objects or any(p.startswith(prefix) for prefix in prefixes) for p in changed)


# --- listing and models ---------------------------------------------------------------------

def _page(items: Iterable[tuple[str, object]], *, amount: int, prefix: str = "",
          after: str = "", delimiter: str = "") -> tuple[list[tuple[str, object | None]], bool]:
    """One page of sorted ``(path, payload)`` items; with a delimiter, paths below a common
    prefix collapse into one ``(common_prefix, None)`` row. Returns the rows and has_more."""
    rows: list[tuple[str, object | None]] = []
    for path, payload in items:
        if not path.startswith(prefix):
            continue
        cut = path.find(delimiter, len(prefix)) if delimiter else -1
        if cut >= 0:
            common = path[:cut + len(delimiter)]
            if not rows or rows[-1][0] != common:
                rows.append((common, None))
        else:
            rows.append((path, payload))
    rows = [row for row in rows if row[0] > after]
    return rows[:amount], len(rows) > amount


def _pagination(rows: list, has_more: bool, last_id: str) -> Pagination:
    return Pagination(has_more=has_more, next_offset=last_id if has_more and rows else "",
                      results=len(rows), max_per_page=MAX_PER_PAGE)


def _commit_model(commit: _Commit) -> Commit:
    return Commit(id=commit.id, parents=list(commit.parents), committer=commit.committer,
                  message=commit.message, creation_date=commit.creation_date,
                  meta_range_id=commit.meta_range_id, metadata=dict(commit.metadata),
                  generation=commit.generation, version=1)


def _object_stats(entry: _Entry, metadata: Mapping[str, str] | None) -> ObjectStats:
    return ObjectStats(path=entry.path, path_type="object",
                       physical_address=entry.physical_address, checksum=entry.checksum,
                       size_bytes=entry.size, mtime=entry.mtime,
                       metadata=None if metadata is None else dict(metadata),
                       content_type=entry.content_type)


def _common_prefix_stats(path: str) -> ObjectStats:
    # lakeFS serializes a common prefix with Go's zero values in the required fields
    return ObjectStats(path=path, path_type="common_prefix", physical_address="", checksum="",
                       mtime=0)


def _diff_list(changes: list[Change], req: _Request) -> DiffList:
    rows, has_more = _page(((path, (kind, entry)) for path, kind, entry in changes),
                           amount=req.amount(), prefix=req.arg("prefix", ""),
                           after=req.arg("after", ""), delimiter=req.arg("delimiter", ""))
    results = []
    for path, payload in rows:
        if payload is None:
            results.append(Diff(type="prefix_changed", path=path, path_type="common_prefix"))
        else:
            kind, entry = payload
            results.append(Diff(type=kind, path=path, path_type="object", size_bytes=entry.size))
    return DiffList(pagination=_pagination(rows, has_more, rows[-1][0] if rows else ""),
                    results=results)


# --- HTTP requests and replies --------------------------------------------------------------

@dataclass
class _Request:
    """One routed request: path parameters (decoded), query, headers and raw body."""

    method: str
    template: str
    params: dict[str, str]
    query: dict[str, list[str]]
    headers: Message
    body: bytes

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    def args(self, name: str) -> list[str]:
        return [v for v in self.query.get(name, []) if v]

    def flag(self, name: str, default: bool = False) -> bool:
        """A boolean query parameter, parsed like Go's ``strconv.ParseBool`` (lakefs_sdk sends
        ``True``/``False``)."""
        value = self.arg(name)
        if value is None:
            return default
        if value in _GO_TRUE or value in _GO_FALSE:
            return value in _GO_TRUE
        raise _bad_request(f"invalid value for {name}: {value}")

    def amount(self) -> int:
        value = self.arg("amount")
        if value is None:
            return DEFAULT_PER_PAGE
        try:
            amount = int(value)
        except ValueError:
            raise _bad_request(f"invalid value for amount: {value}") from None
        return DEFAULT_PER_PAGE if amount <= 0 else min(amount, MAX_PER_PAGE)

    def json(self) -> object:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            raise _bad_request("request body is not JSON") from None

    def model(self, cls, *, optional: bool = False):
        """The JSON body as the lakefs_sdk model lakefs_sdk sends for this call."""
        data = self.json()
        if data is None:
            if optional:
                return cls()
            raise _bad_request("request body is required")
        try:
            return cls.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise _bad_request(f"invalid request body: {exc}") from None

    def user_metadata(self) -> dict[str, str]:
        """``X-Lakefs-Meta-<key>`` headers, keys lowercased (``extractLakeFSMetadata``)."""
        meta: dict[str, str] = {}
        for key, value in self.headers.items():
            if key.lower().startswith(USER_METADATA_HEADER):
                meta.setdefault(key.lower()[len(USER_METADATA_HEADER):], value)
        return meta


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _json_reply(status: int, payload) -> _Reply:
    if isinstance(payload, list):
        data = [item.to_dict() for item in payload]
    else:
        data = payload.to_dict()
    return _Reply(status, json.dumps(data).encode(), {"Content-Type": "application/json"})


def _error_reply(error: LakeFSError) -> _Reply:
    return _json_reply(error.status, error.body or Error(message=error.message))


def _multipart_content(content_type: str, body: bytes) -> tuple[bytes, str] | None:
    """The ``content`` part of a multipart/form-data body, with its Content-Type."""
    boundary = _header_param("Content-Type", content_type, "boundary")
    if not boundary:
        raise LakeFSError(500, "no multipart boundary param in Content-Type")
    for part in body.split(b"--" + boundary.encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode("latin-1").split("\r\n"):
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        disposition = headers.get("content-disposition", "")
        if _header_param("Content-Disposition", disposition, "name") == "content":
            return (content.removesuffix(b"\r\n"),
                    headers.get("content-type", "application/octet-stream"))
    return None


def _header_param(header: str, value: str, param: str) -> str | None:
    message = Message()
    message[header] = value
    found = message.get_param(param, header=header)
    return found if isinstance(found, str) else None


def _byte_range(spec: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` as an inclusive range, None if unsatisfiable."""
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", spec.strip())
    if not match or match.groups() == ("", ""):
        return None
    start, end = match.groups()
    if start == "":
        first, last = max(size - int(end), 0), size - 1
    else:
        first, last = int(start), min(int(end), size - 1) if end else size - 1
    return (first, last) if first <= last and first < size else None


# --- the API --------------------------------------------------------------------------------

class _LakeFSApi:
    """The handlers, one per endpoint; the caller holds the lock."""

    def __init__(self, committer: str) -> None:
        self.committer = committer
        self.repositories: dict[str, _Repository] = {}

    # helpers

    def repo(self, req: _Request) -> _Repository:
        repo = self.repositories.get(req.params["repository"])
        if repo is None:
            raise _not_found("repository not found")
        return repo

    def add_repository(self, name: str, storage_namespace: str, default_branch: str,
                       bare: bool = False) -> _Repository:
        if not _REPOSITORY_ID.match(name):
            raise _bad_request("name: invalid value: validation error")
        _validate_branch_id(default_branch)
        if name in self.repositories:
            raise LakeFSError(409, "error creating repository: not unique")
        repo = _Repository(name, storage_namespace, default_branch)
        if not bare:
            first = repo.add_commit(parents=[], tree={}, message=FIRST_COMMIT_MESSAGE,
                                    committer="", first=True)
            repo.branches[default_branch] = _Branch(default_branch, first.id)
        self.repositories[name] = repo
        return repo

    def _entry(self, req: _Request) -> _Entry:
        repo = self.repo(req)
        entry = repo.read_view(repo.resolve(req.params["ref"])).get(req.arg("path", ""))
        if entry is None:
            raise _not_found()
        return entry

    def _writable_branch(self, req: _Request) -> tuple[_Repository, _Branch]:
        repo = self.repo(req)
        name = req.params["branch"]
        return repo, repo.branch(name, missing=f"branch '{name}' not found")

    # repositories

    def healthcheck(self, req: _Request) -> _Reply:
        return _Reply(204)

    def list_repositories(self, req: _Request) -> _Reply:
        rows, has_more = _page(sorted(self.repositories.items()), amount=req.amount(),
                               prefix=req.arg("prefix", ""), after=req.arg("after", ""))
        results = [repo.model() for _, repo in rows]
        return _json_reply(200, RepositoryList(
            pagination=_pagination(rows, has_more, rows[-1][0] if rows else ""), results=results))

    def create_repository(self, req: _Request) -> _Reply:
        body = req.model(RepositoryCreation)
        repo = self.add_repository(body.name, body.storage_namespace,
                                   body.default_branch or "main", bare=req.flag("bare"))
        return _json_reply(201, repo.model())

    def get_repository(self, req: _Request) -> _Reply:
        return _json_reply(200, self.repo(req).model())

    def delete_repository(self, req: _Request) -> _Reply:
        del self.repositories[self.repo(req).name]
        return _Reply(204)

    def get_branch_protection_rules(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        reply = _json_reply(200, [BranchProtectionRule(pattern=p) for p in repo.protection])
        reply.headers["ETag"] = repo.protection_etag()
        return reply

    def set_branch_protection_rules(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        data = req.json()
        if not isinstance(data, list):
            raise _bad_request("invalid request body: expected a list of rules")
        try:
            rules = [BranchProtectionRule.from_dict(item) for item in data]
        except (ValueError, TypeError) as exc:
            raise _bad_request(f"invalid request body: {exc}") from None
        if_match = req.headers.get("If-Match")
        if if_match is not None and if_match.strip('" ') != repo.protection_etag():
            raise LakeFSError(412, "Precondition failed")
        repo.protection = list(dict.fromkeys(rule.pattern for rule in rules))
        return _Reply(204)

    # branches

    def list_branches(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        rows, has_more = _page(sorted(repo.branches.items()), amount=req.amount(),
                               prefix=req.arg("prefix", ""), after=req.arg("after", ""))
        results = [Ref(id=name, commit_id=branch.commit_id) for name, branch in rows]
        return _json_reply(200, RefList(
            pagination=_pagination(rows, has_more, rows[-1][0] if rows else ""), results=results))

    def create_branch(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        body = req.model(BranchCreation)
        _validate_branch_id(body.name)
        if body.name in repo.branches:
            raise LakeFSError(409, "branch already exists: not unique")
        if body.name in repo.tags:
            raise LakeFSError(409, f"tag name {body.name}: conflict found")
        source = repo.resolve(body.source)
        if source.explicit_staging:
            raise LakeFSError(500, f"source reference '{body.source}': can't create a branch "
                                   "without commit")
        repo.branches[body.name] = _Branch(body.name, source.commit_id)
        return _Reply(201, source.commit_id.encode(), {"Content-Type": "text/plain; charset=utf-8"})

    def get_branch(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        branch = repo.branch(req.params["branch"])
        return _json_reply(200, Ref(id=branch.name, commit_id=branch.commit_id))

    def delete_branch(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        branch = repo.branch(req.params["branch"])
        if branch.name == repo.default_branch:
            raise LakeFSError(403, "cannot delete repository default branch")
        del repo.branches[branch.name]
        return _Reply(204)

    def reset_branch(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        branch = repo.branch(req.params["branch"])
        body = req.model(ResetCreation)
        if body.type not in ("reset", "object", "common_prefix"):
            raise _bad_request("unknown reset type")
        repo.guard(branch.name, "write")
        if body.type == "reset":
            branch.staging.clear()
        elif body.type == "object":
            branch.staging.pop(body.path or "", None)
        else:
            for path in [p for p in branch.staging if p.startswith(body.path or "")]:
                del branch.staging[path]
        return _Reply(204)

    def diff_branch(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        return _json_reply(200, _diff_list(repo.uncommitted(repo.branch(req.params["branch"])),
                                           req))

    # commits

    def commit(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        branch = repo.branch(req.params["branch"])
        body = req.model(CommitCreation)
        repo.guard(branch.name, "commit")
        if not body.allow_empty and not repo.uncommitted(branch):
            raise _bad_request("commit: no changes")
        parent = repo.commits[branch.commit_id]
        tree = _with_staging(parent.tree, branch.staging)
        commit = repo.add_commit(parents=[parent.id], tree=tree, message=body.message,
                                 committer=self.committer, metadata=body.metadata,
                                 date=body.var_date)
        branch.commit_id = commit.id
        branch.staging.clear()
        return _json_reply(201, _commit_model(commit))

    def get_commit(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        try:
            commit = repo.dereference_commit(req.params["commitId"])
        except LakeFSError as exc:
            raise _not_found("commit not found") if exc.status == 404 else exc
        return _json_reply(200, _commit_model(commit))

    def log_commits(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        ref = req.params["ref"]
        if not _BRANCH_ID.match(ref):
            raise _bad_request("branch: branch id: invalid value: validation error")
        commits: Iterable[_Commit] = _ancestry(repo, repo.dereference_commit(ref).id,
                                               req.flag("first_parent"))
        after = req.arg("after")
        if after:
            skip_to = repo.dereference_commit(after).id
            commits = iter(commits)
            for commit in commits:
                if commit.id == skip_to:
                    break
        objects, prefixes = req.args("objects"), req.args("prefixes")
        if objects or prefixes:
            commits = (c for c in commits
                       if len(c.parents) == 1 and _touches(repo, c, objects, prefixes))
        amount = req.amount()
        found: list[_Commit] = []
        for commit in commits:
            found.append(commit)
            if len(found) > amount or (req.flag("limit") and len(found) == amount):
                break
        has_more = len(found) > amount
        found = found[:amount]
        return _json_reply(200, CommitList(
            pagination=_pagination(found, has_more, found[-1].id if found else ""),
            results=[_commit_model(c) for c in found]))

    # tags

    def list_tags(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        rows, has_more = _page(sorted(repo.tags.items()), amount=req.amount(),
                               prefix=req.arg("prefix", ""), after=req.arg("after", ""))
        results = [Ref(id=name, commit_id=commit_id) for name, commit_id in rows]
        return _json_reply(200, RefList(
            pagination=_pagination(rows, has_more, rows[-1][0] if rows else ""), results=results))

    def create_tag(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        body = req.model(TagCreation)
        _validate_tag_id(body.id)
        if body.id in repo.branches:
            raise LakeFSError(409, f"branch name {body.id}: conflict found")
        commit = repo.dereference_commit(body.ref)
        if body.id in repo.tags:
            raise LakeFSError(409, "tag already exists: not unique")
        repo.tags[body.id] = commit.id
        return _json_reply(201, Ref(id=body.id, commit_id=commit.id))

    def get_tag(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        tag = req.params["tag"]
        if tag not in repo.tags:
            raise _not_found("tag not found")
        return _json_reply(200, Ref(id=tag, commit_id=repo.tags[tag]))

    def delete_tag(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        if repo.tags.pop(req.params["tag"], None) is None:
            raise _not_found("tag not found")
        return _Reply(204)

    # objects

    def upload_object(self, req: _Request) -> _Reply:
        repo, branch = self._writable_branch(req)
        path = req.arg("path", "")
        if not path:
            raise _bad_request("path: required value: validation error")
        current = repo.branch_view(branch).get(path)
        self._check_upload_conditions(req, current)
        data, content_type = self._upload_content(req)
        repo.guard(branch.name, "write")
        metadata = req.user_metadata()
        entry = _Entry(path=path, data=data, checksum=hashlib.md5(data).hexdigest(),
                       content_type=content_type, metadata=metadata, mtime=int(time.time()),
                       physical_address=_new_address(repo))
        branch.staging[path] = entry
        return _json_reply(201, _object_stats(entry, metadata))

    @staticmethod
    def _check_upload_conditions(req: _Request, current: _Entry | None) -> None:
        if_none_match = req.headers.get("If-None-Match")
        if if_none_match is not None:
            if if_none_match != "*":
                raise _bad_request('Unsupported value for If-None-Match - Only "*" is supported')
            if current is not None:
                raise LakeFSError(412, "path already exists")
        if_match = req.headers.get("If-Match")
        if if_match is not None and (current is None or if_match.strip('" ') != current.checksum):
            raise LakeFSError(412, "Precondition failed")

    @staticmethod
    def _upload_content(req: _Request) -> tuple[bytes, str]:
        content_type = req.headers.get("Content-Type") or "application/octet-stream"
        if not content_type.lower().startswith("multipart/form-data"):
            return req.body, content_type
        found = _multipart_content(content_type, req.body)
        if found is None:
            raise LakeFSError(500, "multipart upload missing key 'content': http: no such file")
        return found

    def get_object(self, req: _Request) -> _Reply:
        entry = self._entry(req)
        headers = _object_headers(entry)
        if req.headers.get("If-None-Match") == headers["ETag"]:
            return _Reply(304, b"", headers)
        spec = req.headers.get("Range")
        if spec is None:
            return _Reply(200, entry.data, headers)
        span = _byte_range(spec, entry.size)
        if span is None:
            raise LakeFSError(416, "Requested Range Not Satisfiable")
        first, last = span
        headers["Content-Range"] = f"bytes {first}-{last}/{entry.size}"
        return _Reply(206, entry.data[first:last + 1], headers)

    def head_object(self, req: _Request) -> _Reply:
        try:
            entry = self._entry(req)
        except LakeFSError as exc:
            return _Reply(exc.status)   # lakeFS answers HEAD errors without a body
        headers = _object_headers(entry)
        headers["Content-Length"] = str(entry.size)
        return _Reply(200, b"", headers)

    def stat_object(self, req: _Request) -> _Reply:
        entry = self._entry(req)
        metadata = entry.metadata if req.flag("user_metadata", True) else {}
        return _json_reply(200, _object_stats(entry, metadata))

    def list_objects(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        view = repo.read_view(repo.resolve(req.params["ref"]))
        rows, has_more = _page(sorted(view.items()), amount=req.amount(),
                               prefix=req.arg("prefix", ""), after=req.arg("after", ""),
                               delimiter=req.arg("delimiter", ""))
        with_metadata = req.flag("user_metadata", True)
        results = [_common_prefix_stats(path) if entry is None else
                   _object_stats(entry, entry.metadata
                                 if with_metadata and entry.metadata else None)
                   for path, entry in rows]
        return _json_reply(200, ObjectStatsList(
            pagination=_pagination(rows, has_more, rows[-1][0] if rows else ""), results=results))

    def delete_object(self, req: _Request) -> _Reply:
        repo, branch = self._writable_branch(req)
        repo.guard(branch.name, "write")
        _delete_path(repo, branch, req.arg("path", ""))
        return _Reply(204)

    def delete_objects(self, req: _Request) -> _Reply:
        repo, branch = self._writable_branch(req)
        paths = req.model(PathList).paths
        if len(paths) > MAX_PER_PAGE:
            raise LakeFSError(500, f"request size exceeded, max paths is set to {MAX_PER_PAGE}")
        errors = []
        for path in paths:
            try:
                repo.guard(branch.name, "write")
                _delete_path(repo, branch, path)
            except LakeFSError as exc:
                errors.append(ObjectError(status_code=exc.status, message=exc.message, path=path))
        return _json_reply(200, ObjectErrorList(errors=errors))

    def update_object_user_metadata(self, req: _Request) -> _Reply:
        repo, branch = self._writable_branch(req)
        body = req.model(UpdateObjectUserMetadata)
        path = req.arg("path", "")
        entry = repo.branch_view(branch).get(path)
        if entry is None:
            raise _not_found()
        repo.guard(branch.name, "write")
        branch.staging[path] = _Entry(path=path, data=entry.data, checksum=entry.checksum,
                                      content_type=entry.content_type, metadata=dict(body.set),
                                      mtime=int(time.time()),
                                      physical_address=entry.physical_address)
        return _Reply(201)

    # refs

    def diff_refs(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        left = repo.dereference_commit(req.params["leftRef"])
        if req.arg("type") == "two_dot":
            right = repo.resolve(req.params["rightRef"])
            right_tree = repo.commits[right.commit_id].tree
            if right.explicit_staging:
                right_tree = repo.read_view(right)
            changes = _diff_trees(left.tree, right_tree)
        else:
            right = repo.dereference_commit(req.params["rightRef"])
            base = _merge_base(repo, right, left)
            changes = _compare_trees(left.tree, right.tree, base.tree)
        return _json_reply(200, _diff_list(changes, req))

    def find_merge_base(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        source = repo.dereference_commit(req.params["sourceRef"])
        dest = repo.dereference_commit(req.params["destinationBranch"])
        base = _merge_base(repo, source, dest)
        return _json_reply(200, FindMergeBaseResult(source_commit_id=source.id,
                                                    destination_commit_id=dest.id,
                                                    base_commit_id=base.id))

    def merge_into_branch(self, req: _Request) -> _Reply:
        repo = self.repo(req)
        body = req.model(Merge, optional=True)
        source_ref, dest = req.params["sourceRef"], repo.branch(req.params["destinationBranch"])
        if repo.uncommitted(dest):
            raise _bad_request(f"update branch {dest.name}: uncommitted changes (dirty branch)")
        source = repo.dereference_commit(source_ref)
        target = repo.commits[dest.commit_id]
        base = _merge_base(repo, source, target)
        if body.strategy not in MERGE_STRATEGIES:
            raise _bad_request(f"update branch {dest.name}: invalid merge strategy")
        if source.meta_range_id == base.meta_range_id and not (body.allow_empty or body.force):
            raise _bad_request(f"update branch {dest.name}: no changes")
        tree, conflicts = _merge_trees(base.tree, source.tree, target.tree, body.strategy)
        if conflicts:
            raise LakeFSError(409, f"update branch {dest.name}: conflict found",
                              body=MergeResult(reference=""))
        metadata = dict(body.metadata or {})
        metadata[MERGE_STRATEGY_KEY] = MERGE_STRATEGIES[body.strategy]
        parents = [target.id] if body.squash_merge else [target.id, source.id]
        commit = repo.add_commit(parents=parents, tree=tree, committer=self.committer,
                                 message=body.message or f"Merge '{source_ref}' into '{dest.name}'",
                                 metadata=metadata)
        dest.commit_id = commit.id
        return _json_reply(200, MergeResult(reference=commit.id))


def _validate_branch_id(name: str) -> None:
    if not _BRANCH_ID.match(name):
        raise _bad_request("branch id: invalid value: validation error")


def _validate_tag_id(tag: str) -> None:
    """The checks of lakeFS's ``ValidateTagID`` (a subset of git-check-ref-format)."""
    if (not tag or tag == "@" or tag.endswith((".", ".lock", "/")) or tag.startswith("/")
            or _TAG_FORBIDDEN.search(tag)):
        raise _bad_request("tag id: invalid value: validation error")


def _new_address(repo: _Repository) -> str:
    return f"{repo.storage_namespace.rstrip('/')}/data/{uuid.uuid4().hex}"


def _object_headers(entry: _Entry) -> dict[str, str]:
    return {"ETag": f'"{entry.checksum}"', "Content-Type": entry.content_type,
            "Last-Modified": formatdate(entry.mtime, usegmt=True), "Accept-Ranges": "bytes"}


def _delete_path(repo: _Repository, branch: _Branch, path: str) -> None:
    """A tombstone over a committed path, else drop the staged write (``deleteUnsafe``)."""
    if path in repo.commits[branch.commit_id].tree:
        branch.staging[path] = None
    else:
        branch.staging.pop(path, None)


# --- routing --------------------------------------------------------------------------------

_ROUTES: tuple[tuple[str, str, str], ...] = (
    ("GET", "/healthcheck", "healthcheck"),
    ("GET", "/repositories", "list_repositories"),
    ("POST", "/repositories", "create_repository"),
    ("GET", "/repositories/{repository}", "get_repository"),
    ("DELETE", "/repositories/{repository}", "delete_repository"),
    ("GET", "/repositories/{repository}/settings/branch_protection",
     "get_branch_protection_rules"),
    ("PUT", "/repositories/{repository}/settings/branch_protection",
     "set_branch_protection_rules"),
    ("GET", "/repositories/{repository}/branches", "list_branches"),
    ("POST", "/repositories/{repository}/branches", "create_branch"),
    ("GET", "/repositories/{repository}/branches/{branch}", "get_branch"),
    ("DELETE", "/repositories/{repository}/branches/{branch}", "delete_branch"),
    ("PUT", "/repositories/{repository}/branches/{branch}", "reset_branch"),
    ("GET", "/repositories/{repository}/branches/{branch}/diff", "diff_branch"),
    ("POST", "/repositories/{repository}/branches/{branch}/commits", "commit"),
    ("POST", "/repositories/{repository}/branches/{branch}/objects", "upload_object"),
    ("DELETE", "/repositories/{repository}/branches/{branch}/objects", "delete_object"),
    ("POST", "/repositories/{repository}/branches/{branch}/objects/delete", "delete_objects"),
    ("PUT", "/repositories/{repository}/branches/{branch}/objects/stat/user_metadata",
     "update_object_user_metadata"),
    ("GET", "/repositories/{repository}/commits/{commitId}", "get_commit"),
    ("GET", "/repositories/{repository}/tags", "list_tags"),
    ("POST", "/repositories/{repository}/tags", "create_tag"),
    ("GET", "/repositories/{repository}/tags/{tag}", "get_tag"),
    ("DELETE", "/repositories/{repository}/tags/{tag}", "delete_tag"),
    ("GET", "/repositories/{repository}/refs/{ref}/objects", "get_object"),
    ("HEAD", "/repositories/{repository}/refs/{ref}/objects", "head_object"),
    ("GET", "/repositories/{repository}/refs/{ref}/objects/stat", "stat_object"),
    ("GET", "/repositories/{repository}/refs/{ref}/objects/ls", "list_objects"),
    ("GET", "/repositories/{repository}/refs/{ref}/commits", "log_commits"),
    ("GET", "/repositories/{repository}/refs/{leftRef}/diff/{rightRef}", "diff_refs"),
    ("GET", "/repositories/{repository}/refs/{sourceRef}/merge/{destinationBranch}",
     "find_merge_base"),
    ("POST", "/repositories/{repository}/refs/{sourceRef}/merge/{destinationBranch}",
     "merge_into_branch"),
)
_UNAUTHENTICATED = {"GET /healthcheck"}


def _match(template: str, segments: list[str]) -> dict[str, str] | None:
    """Path parameters if the (still percent-encoded) segments fit the template."""
    parts = template.strip("/").split("/")
    if len(parts) != len(segments):
        return None
    params = {}
    for part, segment in zip(parts, segments):
        if part.startswith("{"):
            params[part[1:-1]] = unquote(segment)
        elif part != segment:
            return None
    return params


def _route(method: str, path: str) -> tuple[str, str | None, dict[str, str]]:
    """(template, handler name or None if the method is not allowed, params); 404 if no path."""
    segments = path.strip("/").split("/")
    allowed = False
    for route_method, template, handler in _ROUTES:
        params = _match(template, segments)
        if params is None:
            continue
        if route_method == method:
            return template, handler, params
        allowed = True
    if allowed:
        return path, None, {}
    raise _not_found("path not found")


# --- the server -----------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as urllib3's pool expects
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stalls
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        reply = self.server.double.handle(self.command, self.path, self.headers, body)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if "Content-Length" not in reply.headers:
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD" and reply.body:
            self.wfile.write(reply.body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass   # quiet: tests read ``double.calls`` instead


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    double: LakeFSDouble


class LakeFSDouble:
    """An in-process test double of the lakeFS REST API (see the module docstring).

    It starts serving on construction; ``stop()`` (or leaving the ``with`` block) ends it.
    ``calls`` counts every request received, keyed ``"METHOD /path-template"`` (path templates
    as in lakefs_sdk, without ``/api/v1``), failed and refused ones included.
    """

    def __init__(self, access_key_id: str, secret_access_key: str, *,
                 username: str | None = None) -> None:
        self.access_key_id = access_key_id
        self.secret_access_key = secret_access_key
        self.calls: Counter[str] = Counter()
        self.server_errors: list[BaseException] = []   # unexpected exceptions (answered 500)
        self._api = _LakeFSApi(committer=username or access_key_id)
        self._lock = threading.RLock()
        self._failures: list[tuple[int, str]] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.double = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},  # quick stop()
                                        name="lakefs-double", daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """What ``lakefs_sdk.Configuration(host=...)`` takes."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{API_PREFIX}"

    def create_repository(self, name: str, default_branch: str = "main", *,
                          storage_namespace: str | None = None) -> Repository:
        """Create a repository directly (as ``POST /repositories`` would), for test setup."""
        with self._lock:
            repo = self._api.add_repository(name, storage_namespace or f"local://{name}",
                                            default_branch)
            return repo.model()

    def fail_next(self, n: int = 1, status: int = 503,
                  message: str = "injected failure (lakeFS test double)") -> None:
        """Make the next ``n`` requests, whatever they are, answer ``status`` with an Error."""
        with self._lock:
            self._failures.extend([(status, message)] * n)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LakeFSDouble:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # serving

    def handle(self, method: str, target: str, headers: Message, body: bytes) -> _Reply:
        """Answer one HTTP request (called from the server's threads)."""
        url = urlsplit(target)
        with self._lock:
            try:
                if not url.path.startswith(API_PREFIX + "/"):
                    raise _not_found("path not found")
                template, handler, params = _route(method, url.path[len(API_PREFIX):])
            except LakeFSError as exc:
                self.calls[f"{method} {url.path}"] += 1
                return _error_reply(exc)
            key = f"{method} {template}"
            self.calls[key] += 1
            if self._failures:
                return _error_reply(LakeFSError(*self._failures.pop(0)))
            if key not in _UNAUTHENTICATED and not self._authenticated(headers):
                return _error_reply(LakeFSError(401, AUTH_ERROR))
            if handler is None:
                return _error_reply(LakeFSError(405, "method not allowed"))
            request = _Request(method, template, params,
                               parse_qs(url.query, keep_blank_values=True), headers, body)
            return self._dispatch(handler, request)

    def _dispatch(self, handler: str, request: _Request) -> _Reply:
        try:
            return getattr(self._api, handler)(request)
        except LakeFSError as exc:
            return _error_reply(exc)
        except Exception as exc:  # a bug in the double: answer as lakeFS would, keep it
            self.server_errors.append(exc)
            return _error_reply(LakeFSError(500, f"{type(exc).__name__}: {exc}"))

    def _authenticated(self, headers: Message) -> bool:
        """HTTP Basic with the access key id and secret, as lakefs_sdk sends them."""
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(token, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return decoded == f"{self.access_key_id}:{self.secret_access_key}"
