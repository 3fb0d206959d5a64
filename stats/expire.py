"""``hms-proxy stats expire``: delete the statistics sets that nothing refers to any more.

A statistics set (:mod:`stats.layout`) is an immutable directory
``<table location>/_stats/<partition>/<set id>/`` named by a catalog pointer. Recomputing a
partition points the catalog at a new set; the old one stays as long as some version of the
catalog may still be read. A set is *referenced* when a pointer to it is

* in any commit reachable from a branch or a tag (the whole history, not only the heads: a
  tag or ``main~3`` still serves the statistics it was committed with), or
* staged (uncommitted) on a branch.

``expire`` lists the ``_stats/`` directory of every table location that any of those commits,
or any staged change, holds (plus the ``_stats/`` directories the pointers themselves name),
and deletes every set directory in them that is not referenced -- also the hidden temporary
directories (``.<id>.tmp``) a compute job that died left behind. Only local (``file:``)
locations are handled; others are reported as skipped. Set directories modified less than
``--min-age`` seconds ago (default an hour) are kept: a compute job writes its sets before it
records their pointers. Partition directories left empty are removed too.

Finding the pointers costs one diff per commit (a commit's pointers are its first parent's
plus what its diff changed), so a long history of small commits is cheap.

**On a lakeFS store** (:func:`expire_lakefs`) the sets are objects of the repository, beside
the data, and a commit keeps its objects whatever a branch does later: ``main~3`` and a tag
read their sets from their own commit. So only the branches' heads count: a set is kept when
the pointers of any branch (committed or staged) name it, and deleted, on every unprotected
branch that has it, otherwise (lakeFS's garbage collection frees the bytes once no commit it
retains has them). Using every branch, not only the one the object is on, keeps a merge from
carrying one branch's deletion into a branch that still points at the set. A branch with no
uncommitted change gets the deletions as a commit of their own (``stats expire (N sets)``,
metadata ``source: stats expire``); on a branch with uncommitted changes they are left staged
beside them (lakeFS commits a branch whole). Protected branches are skipped (expire on a branch
and merge it).
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field

from hms_proxy.hms.warehouse import local_path
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.entities import parse_key
from kvmodel.merge import is_stats_pointer
from kvmodel.store.contract import prefix_end
from stats import layout

DEFAULT_MIN_AGE = 3600
DEFAULT_STORE = "./metastore"


@dataclass
class ExpireResult:
    deleted: list[str] = field(default_factory=list)    # set directories (deleted, or to be)
    kept: list[str] = field(default_factory=list)       # referenced set directories
    young: list[str] = field(default_factory=list)      # unreferenced, but too recent
    skipped: list[str] = field(default_factory=list)    # _stats roots that are not local
    protected: list[str] = field(default_factory=list)  # lakeFS: branches left alone
    commits: dict = field(default_factory=dict)         # lakeFS: branch -> commit id
    uncommitted: list[str] = field(default_factory=list)  # lakeFS: deletions left staged


def _norm(location: str | None) -> str | None:
    path = local_path(location) if location else None
    return os.path.normpath(os.path.abspath(path)) if path else None


class _References:
    """What the catalog's versions refer to: set paths and ``_stats`` roots, as ``normalise``
    gives them (default: local paths; a location it gives None for is another scheme's)."""

    def __init__(self, normalise=_norm, join=os.path.join):
        self.normalise, self.join = normalise, join
        self.sets: set[str] = set()
        self.roots: set[str] = set()       # ``<table location>/_stats`` directories
        self.remote: set[str] = set()      # those of other schemes

    def _root(self, location: str):
        path = self.normalise(location)
        if path is None:
            self.remote.add(location.rstrip("/") + "/" + layout.STATS_DIR)
        else:
            self.roots.add(self.join(path, layout.STATS_DIR))

    def see(self, key: str, value: bytes | None):
        if value is None:
            return
        if is_stats_pointer(key):
            try:
                pointer = layout.read_pointer(value)
            except ValueError:
                return
            path = pointer.get("set") if isinstance(pointer, dict) else None
            if not isinstance(path, str) or not path:
                return
            inside = self.normalise(path)
            if inside is not None:
                self.sets.add(inside)
            marker = "/" + layout.STATS_DIR + "/"
            if marker in path:
                self._root(path.split(marker, 1)[0])
            return
        if key.count("/") != 3 or parse_key(key)[0] != "table":
            return

        try:
            table = codec.decode(ttypes.Table, value)
        except Exception:  # not a table after all: nothing to learn
            return
        if table.sd is not None and table.sd.location:
            self._root(table.sd.location)


def references(store) -> _References:
    """Every set referenced by a commit reachable from a branch or tag, or staged."""
    refs = _References()
    branches = store.list_branches()
    todo = [b.head for b in branches] + [t.commit for t in store.list_tags()]
    seen: set[str] = set()
    while todo:
        commit_id = todo.pop()
        if commit_id in seen:
            continue
        seen.add(commit_id)
        commit = store.get_commit(commit_id)
        if commit.parents:
            for entry in store.diff(commit.parents[0], commit.id, "db/"):
                refs.see(entry.key, entry.right)
            todo.extend(commit.parents)
        else:
            with store.read(commit.id) as view:
                for key, value in view.scan("db/", prefix_end("db/")):
                    refs.see(key, value)
    for branch in branches:
        for entry in store.staged(branch.name):
            refs.see(entry.key, entry.right)
    return refs


def _set_dirs(root: str):
    """Set directories (and dead temporaries) under a ``_stats`` directory: below partition
    directories (``k=v``; at the top also ``_``, ``_table_``: any name starting with ``_``),
    any directory that is not one."""
    for dirpath, dirnames, _ in os.walk(root):
        keep_walking = []
        for name in sorted(dirnames):
            full = os.path.join(dirpath, name)
            is_partition = "=" in name or (dirpath == root and name.startswith("_"))
            if is_partition and not name.startswith("."):
                keep_walking.append(name)
            else:
                yield full
        dirnames[:] = keep_walking


def _newest(path: str) -> float:
    newest = os.stat(path).st_mtime
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            try:
                newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime)
            except OSError:
                pass
    return newest


def _remove_empty_parents(path: str, root: str):
    parent = os.path.dirname(path)
    while parent.startswith(root + os.sep) and parent != root:
        try:
            os.rmdir(parent)
        except OSError:
            return
        parent = os.path.dirname(parent)


def expire(store, *, dry_run: bool = False, min_age: float = DEFAULT_MIN_AGE,
           out=None) -> ExpireResult:
    """Delete (``dry_run``: only list) the unreferenced statistics sets; each is printed to
    ``out`` (a callable taking a line) as it goes."""
    refs = references(store)
    result = ExpireResult(skipped=sorted(refs.remote))
    now = time.time()
    for root in sorted(refs.roots):
        if not os.path.isdir(root):
            continue
        for path in list(_set_dirs(root)):
            norm = os.path.normpath(path)
            if norm in refs.sets:
                result.kept.append(norm)
                continue
            try:
                if now - _newest(norm) < min_age:
                    result.young.append(norm)
                    continue
            except OSError:
                continue
            result.deleted.append(norm)
            if dry_run:
                if out:
                    out(f"would delete {norm}")
                continue
            shutil.rmtree(norm, ignore_errors=True)
            _remove_empty_parents(norm, root)
            if out:
                out(f"deleted {norm}")
    return result


# --- on lakeFS --------------------------------------------------------------------------------
def _repo_path(location: str, repository: str) -> str | None:
    """The path inside ``repository`` of a location in it (canonical ``lakefs://REPO/@/p`` or
    rendered ``s3a|s3|lakefs://REPO/<ref>/p``), else None."""
    for scheme in ("lakefs", "s3a", "s3"):
        head = f"{scheme}://{repository}/"
        if location.startswith(head):
            _, _, path = location[len(head):].partition("/")
            return path.strip("/") or None
    return None


def expire_lakefs(store, *, dry_run: bool = False, min_age: float = DEFAULT_MIN_AGE,
                  out=None) -> ExpireResult:
    """:func:`expire` on a lakeFS store (see the module docstring): sets are listed and deleted
    per branch, as ``lakefs://REPO/<branch>/<set directory>``."""
    raw = getattr(store, "wrapped", store)
    repository = raw.repository
    refs = _References(lambda location: _repo_path(location, repository),
                       lambda path, name: f"{path}/{name}")
    branches = raw.list_branches()
    for branch in branches:
        with raw.read(branch.name) as view:
            for key, value in view.scan("db/", prefix_end("db/")):
                refs.see(key, value)
    result = ExpireResult(skipped=sorted(refs.remote))
    now = time.time()
    for branch in branches:
        name = branch.name
        if branch.protected:
            result.protected.append(name)
            continue
        doomed: list[str] = []
        for root in sorted(refs.roots):
            newest: dict[str, int] = {}
            files: dict[str, list[str]] = {}
            for path, _, mtime in raw.data_listing(name, root):
                directory = path.rsplit("/", 1)[0]
                files.setdefault(directory, []).append(path)
                newest[directory] = max(newest.get(directory, 0), mtime)
            for directory in sorted(files):
                shown = f"lakefs://{repository}/{name}/{directory}"
                if directory in refs.sets:
                    result.kept.append(shown)
                elif now - newest[directory] < min_age:
                    result.young.append(shown)
                else:
                    result.deleted.append(shown)
                    doomed.extend(files[directory])
                    if out and dry_run:
                        out(f"would delete {shown}")
        if dry_run or not doomed:
            continue
        head = raw.resolve(name).commit  # (whether it had changes of its own: before deleting)
        clean = not raw.uncommitted(name)
        raw.delete_data_paths(name, doomed)
        directories = sorted({p.rsplit("/", 1)[0] for p in doomed})
        if out:
            for directory in directories:
                out(f"deleted lakefs://{repository}/{name}/{directory}")
        sets = len(directories)
        if clean:
            commit = raw.commit(name, f"stats expire ({sets} set{'' if sets == 1 else 's'})",
                                metadata={"source": "stats expire"}, expected_head=head)
            result.commits[name] = commit.id
        else:
            result.uncommitted.append(name)
    return result
