"""The file-system side of HMS: default locations, and the directories HMS itself manages.

The stock HMS creates a database's, a managed table's and a partition's directory, moves a
managed table's directory on rename and deletes it on drop; Spark relies on that (it checks
that a table's directory exists before it writes or lists it, and a dropped managed table
that left its files behind would be read again by a new table of the same name). We do the
same for local ``file:`` locations, and for locations in the lakeFS repository the server's
catalog lives in (:class:`LakeFSFiles`, registered by ``serve`` over ``lakefs://REPO``): on
the branch of the location, like any lakeFS client's uncommitted changes, a directory being an
empty marker object ``path/`` as S3A makes it on S3. Other locations (other buckets, hdfs) are
left alone: a metadata server here has no credentials for them.
"""
from __future__ import annotations

import contextvars
import logging
import os
import posixpath
import shutil
import threading
import time
from contextlib import contextmanager
from urllib.parse import urlsplit

log = logging.getLogger(__name__)
_REMOTES: list = []  # objects with handles(location) and the operations below


def register(remote) -> None:
    """Let ``remote`` do the file operations on the locations it ``handles`` (in place of
    one registered before for the same repository)."""
    key = getattr(remote, "repository", None)
    _REMOTES[:] = [r for r in _REMOTES if key is None or getattr(r, "repository", None) != key]
    _REMOTES.append(remote)


def unregister(remote) -> None:
    if remote in _REMOTES:
        _REMOTES.remove(remote)


def _remote(location: str | None):
    if location and _REMOTES and not location.startswith(("file:", "/")):
        for remote in _REMOTES:
            if remote.handles(location):
                return remote
    return None


_POOL: list = []
_POOL_LOCK = threading.Lock()
# the marker uploads of the write transaction in progress (markers_beside_the_write)
_DEFERRED: contextvars.ContextVar[list | None] = contextvars.ContextVar("hms_markers",
                                                                        default=None)
# which directories exist, asked before a write transaction (known_directories)
_KNOWN: contextvars.ContextVar[dict | None] = contextvars.ContextVar("hms_known_dirs",
                                                                     default=None)


def any_remote() -> bool:
    """Whether some location is a server's (a lakeFS store is served)."""
    return bool(_REMOTES)


def is_remote(location: str | None) -> bool:
    """Whether asking about ``location`` is a call to a server (a lakeFS repository)."""
    return _remote(location) is not None


@contextmanager
def known_directories(locations: list[str]):
    """Which of ``locations`` exist, asked now (one listing per parent directory) and used by
    :func:`mkdirs` and :func:`mkdirs_many` inside the block instead of asking again: a write
    asks before it takes its branch's lock, so that under the lock its catalog write is all
    it waits for. A directory made meanwhile by someone else gets a second marker (an empty
    object over the same name); one removed meanwhile, none (as when HMS checks, then
    commits)."""
    known: dict = {}
    groups: dict[int, tuple[object, list[str]]] = {}
    for location in locations:
        remote = _remote(location)
        if remote is not None and hasattr(remote, "existing"):
            groups.setdefault(id(remote), (remote, []))[1].append(location)
    for remote, group in groups.values():
        known.update(remote.existing(group))
    token = _KNOWN.set(known or None)
    try:
        yield
    finally:
        _KNOWN.reset(token)


@contextmanager
def markers_beside_the_write():
    """The directory markers a write transaction makes on lakeFS are uploaded while it goes on
    (its catalog write is then one upload on the branch's critical path, not one plus a marker
    under the branch's lock) and waited for when the block ends: the call is answered, and a
    commit made after it, only with them there."""
    if _DEFERRED.get() is not None:  # an outer transaction waits for them
        yield
        return
    pending: list = []
    token = _DEFERRED.set(pending)
    try:
        yield
    finally:
        _DEFERRED.reset(token)
        for future in pending:
            future.result()  # a marker that failed was logged: nothing raises here


def _marker_pool():
    """The threads that upload directory markers, shared by every call (at most 32 uploads
    at once, whatever the number of clients)."""
    with _POOL_LOCK:
        if not _POOL:
            from concurrent.futures import ThreadPoolExecutor

            _POOL.append(ThreadPoolExecutor(max_workers=32, thread_name_prefix="hms-dirs"))
        return _POOL[0]


class LakeFSFiles:
    """The file operations of HMS on ``s3a|s3|lakefs://REPO/BRANCH/path`` of one lakeFS
    store's repository: a managed table's objects move on rename and go on drop. At a commit
    or tag (a read-only ref) nothing is done."""

    SCHEMES = ("s3a", "s3", "lakefs")

    def __init__(self, store):
        self.store = store
        self.repository = store.repository

    def _split(self, location: str) -> tuple[str, str] | None:
        parts = urlsplit(location)
        if parts.scheme not in self.SCHEMES or parts.netloc != self.repository:
            return None
        ref, _, path = parts.path.lstrip("/").partition("/")
        if not ref or ref == "@" or not path:
            return None
        return ref, path.rstrip("/")

    def handles(self, location: str) -> bool:
        return self._split(location) is not None

    def _branch(self, ref: str) -> bool:
        return self.store.get_branch(ref) is not None

    def mkdirs(self, location: str) -> bool:
        """A directory marker (an empty object named ``path/``, what S3A writes for a
        directory): what Spark and Trino check before they write or list a table that has no
        file yet. None when something is there already, or at a commit or tag. Inside
        :func:`markers_beside_the_write` the upload goes on beside the write's own."""
        ref, path = self._split(location)
        known = _KNOWN.get()
        there = known.get((self.repository, ref, path)) if known else None
        if not self._branch(ref) or (self.exists(location) if there is None else there):
            return False
        deferred = _DEFERRED.get()
        if deferred is not None:
            deferred.append(_marker_pool().submit(self._marker, ref, path))
            return True
        return self._marker(ref, path)

    def _marker(self, ref: str, path: str) -> bool:
        try:
            self.store.api.upload(ref, path + "/", b"")
        except Exception as exc:  # noqa: BLE001 - a protected branch: lakeFS refuses, as for Spark
            log.debug("no directory marker for %s/%s: %s", ref, path, exc)
            return False
        return True

    def mkdirs_many(self, locations: list[str]) -> dict[str, bool]:
        """:meth:`mkdirs` of many directories (an ``add_partitions``): which directories are
        there already is asked once per parent directory (a listing from the first name on,
        not one call per directory), and the markers are uploaded 32 at a time (lakeFS serves
        concurrent uploads to one branch together: 1,000 take 0.5 s, not 1.5 s 8 at a time
        with its default batch delay)."""
        split = {loc: self._split(loc) for loc in locations}
        branches = {ref: self._branch(ref) for ref, _ in split.values()}
        known = _KNOWN.get() or {}
        there = {(ref, path) for ref, path in split.values()
                 if known.get((self.repository, ref, path))}
        there |= self._there([item for item in split.values() if branches[item[0]] and
                              (self.repository, *item) not in known])
        todo = [(ref, path) for ref, path in dict.fromkeys(split.values())
                if branches[ref] and (ref, path) not in there]

        def make(item):
            return item, self._marker(*item)

        deferred = _DEFERRED.get()
        if deferred is not None:  # beside the write's own upload
            deferred.extend(_marker_pool().submit(self._marker, *item) for item in todo)
            made = {item: True for item in todo}
        else:
            made = dict(_marker_pool().map(make, todo) if len(todo) > 1 else map(make, todo))
        return {loc: made.get(split[loc], False) for loc in locations}

    def _there(self, items: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of the (ref, path) directories have something: one listing per parent."""
        by_parent: dict[tuple[str, str], list[str]] = {}
        for ref, path in items:
            by_parent.setdefault((ref, posixpath.dirname(path)), []).append(path)
        there: set[tuple[str, str]] = set()
        for (ref, parent), paths in by_parent.items():
            there.update((ref, p) for p in self.store.data_children(
                ref, parent, min(paths), max(paths), expect=len(paths)))
        return there

    def existing(self, locations: list[str]) -> dict:
        """{(repository, ref, path): whether the directory has something} of the locations
        on a branch (for :func:`known_directories`)."""
        items = {self._split(loc) for loc in locations}
        items = {(ref, path) for ref, path in items if self._branch(ref)}
        there = self._there(sorted(items))
        return {(self.repository, ref, path): (ref, path) in there for ref, path in items}

    def exists(self, location: str) -> bool:
        ref, path = self._split(location)
        return self.store.data_exists(ref, path)

    def delete(self, location: str) -> None:
        ref, path = self._split(location)
        if self._branch(ref):
            n = self.store.delete_data(ref, path)
            log.debug("deleted %d objects under %s", n, location)

    def rename(self, src: str, dst: str) -> bool:
        a, b = self._split(src), self._split(dst)
        if b is None or a[0] != b[0] or not self._branch(a[0]):
            return False
        return self.store.move_data(a[0], a[1], b[1]) > 0


class Warehouse:
    def __init__(self, root: str):
        self.configured = root  # as given: what get_config_value answers, like HMS
        self.root = qualify(root)

    def default_database_location(self, db: str) -> str:
        if db == "default":
            return self.root
        return join(self.root, f"{db}.db")

    @staticmethod
    def default_table_location(db_location: str, table: str) -> str:
        return join(db_location, table)


def qualify(location: str) -> str:
    """A location with a scheme, as HMS's ``Warehouse.getDnsPath`` renders a local one
    (``/x/y`` and ``file:///x/y`` become ``file:/x/y``); trailing slashes dropped."""
    if not location:
        return location
    parts = urlsplit(location)
    if not parts.scheme:
        path = os.path.abspath(location)
        return "file:" + path
    if parts.scheme == "file":
        path = parts.path or "/"
        return "file:" + (os.path.normpath(path) if path != "/" else "/")
    return location.rstrip("/") if len(location) > len(parts.scheme) + 3 else location


def join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def local_path(location: str | None) -> str | None:
    """The local file-system path of a ``file:`` location, else None. Taken literally, as
    Hadoop does: the directory of partition value ``a/b`` is really named ``p=a%2Fb``."""
    if not location:
        return None
    parts = urlsplit(location)
    if parts.scheme not in ("", "file"):
        return None
    return parts.path if parts.scheme else location


def mkdirs(location: str | None) -> bool:
    """Create the directory; True when it did not exist before."""
    remote = _remote(location)
    if remote is not None:
        return remote.mkdirs(location)
    path = local_path(location)
    if path is None:
        return False
    try:
        os.mkdir(path)  # the common case: the parent exists; one system call
    except FileExistsError:
        return False
    except FileNotFoundError:
        try:
            os.makedirs(path)
        except FileExistsError:
            return False
        except OSError:
            return False
    except OSError:
        return False
    return True


def mkdirs_many(locations: list[str]) -> dict[str, bool]:
    """:func:`mkdirs` of each location, those of a lakeFS repository together (one listing
    per parent, markers uploaded a few at a time); which ones did not exist before."""
    out: dict[str, bool] = {}
    remote_groups: dict[int, tuple[object, list[str]]] = {}
    for location in locations:
        remote = _remote(location)
        if remote is not None and hasattr(remote, "mkdirs_many"):
            remote_groups.setdefault(id(remote), (remote, []))[1].append(location)
        else:
            out[location] = mkdirs(location)
    for remote, group in remote_groups.values():
        out.update(remote.mkdirs_many(group))
    return out


def exists(location: str | None) -> bool:
    remote = _remote(location)
    if remote is not None:
        return remote.exists(location)
    path = local_path(location)
    return path is not None and os.path.exists(path)


def delete(location: str | None) -> None:
    remote = _remote(location)
    if remote is not None:
        return remote.delete(location)
    path = local_path(location)
    if path is None or not os.path.exists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.remove(path)
        except OSError:
            pass


def rename(src: str | None, dst: str | None) -> bool:
    remote = _remote(src)
    if remote is not None:
        return remote.rename(src, dst)
    s, d = local_path(src), local_path(dst)
    if s is None or d is None or not os.path.exists(s):
        return False
    os.makedirs(os.path.dirname(d) or "/", exist_ok=True)
    os.rename(s, d)
    return True


def quick_stats(location: str | None) -> tuple[int, int] | None:
    """(number of files, total bytes) under a local directory, skipping hidden files as Hive
    does (names starting with ``.`` or ``_``); None for non-local locations."""
    path = local_path(location)
    if path is None:
        return None
    files = size = 0
    if not os.path.isdir(path):
        return files, size  # HMS lists a missing directory as empty
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
        for name in filenames:
            if name.startswith((".", "_")):
                continue
            try:
                size += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                continue
            files += 1
    return files, size


def delete_empty_parents(location: str | None, levels: int) -> None:
    """Remove up to ``levels`` parent directories that became empty, as HMS does after
    dropping a partition of a multi-key table (``ds=1/hr=2`` leaves no empty ``ds=1``)."""
    path = local_path(location)
    if path is None:
        return
    parent = os.path.dirname(path.rstrip("/"))
    for _ in range(max(levels, 0)):
        try:
            os.rmdir(parent)  # only succeeds on an empty directory
        except OSError:
            return
        parent = os.path.dirname(parent)


def _branch_files_root(root: str) -> str | None:
    """Where branches' own files live: beside the local warehouse ``root``
    (``/x/warehouse`` -> ``/x/warehouse.branches``), never inside it."""
    path = local_path(qualify(root))
    return None if path is None else os.path.realpath(path).rstrip(os.sep) + ".branches"


def branch_files(root: str, branch: str) -> str:
    """The location of ``branch``'s own files (:func:`give_own_files`), chosen by the server:
    ``<warehouse>.branches/<branch>``. ValueError when the warehouse is not local, or when
    that directory holds files already (a branch of that name had them and they are left)."""
    base = _branch_files_root(root)
    if base is None:
        raise ValueError(f"the server's warehouse {root} is not a local directory: on lakeFS a "
                         "branch carries its files")
    path = os.path.join(base, branch)
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise ValueError(f"{path} holds files already: delete them, or name the branch "
                         "otherwise")
    return "file:" + path


def drop_branch_files(root: str, branch: str) -> None:
    """Delete ``branch``'s own files, if it had them: the directory is renamed out of the way
    at once (a new branch of that name may have its own right after) and deleted by a
    thread of its own."""
    base = _branch_files_root(root)
    if base is None:
        return
    path = os.path.join(base, branch)
    doomed = os.path.join(base, f".deleted-{branch}-{os.getpid()}-{threading.get_ident()}-"
                                f"{time.monotonic_ns()}")
    try:
        os.rename(path, doomed)
    except OSError:  # none (the usual case), or not ours to move
        return
    threading.Thread(target=shutil.rmtree, args=(doomed,), kwargs={"ignore_errors": True},
                     name="hms-drop-branch-files", daemon=True).start()


def check_own_files(root: str, target: str) -> tuple[str, str]:
    """The two directories of :func:`give_own_files`, or ValueError saying what is wrong."""
    src = local_path(qualify(root))
    if src is None:
        raise ValueError(f"the server's warehouse {root} is not a local directory")
    if not target.startswith(("file:/", "/")):  # never relative to the server's directory
        raise ValueError(f"{target!r} is not an absolute local directory (file:/...)")
    dst = local_path(qualify(target))
    if dst is None or not os.path.isabs(dst):
        raise ValueError(f"{target!r} is not an absolute local directory (file:/...)")
    src, dst = os.path.realpath(src), os.path.realpath(dst)
    if dst == src or dst.startswith(src + os.sep) or src.startswith(dst + os.sep):
        raise ValueError(f"{target!r} is inside the warehouse {root}, or holds it")
    if os.path.exists(dst) and (not os.path.isdir(dst) or os.listdir(dst)):
        raise ValueError(f"{target!r} exists and is not an empty directory")
    return src, dst


def give_own_files(store, branch: str, root: str, target: str) -> int:
    """Make ``branch``'s files its own: every database, table and partition of the branch
    located under the local warehouse ``root`` is pointed at the same place under ``target``
    (a new or empty local directory outside ``root``: :func:`branch_files`), and the files
    under ``root`` appear there as hard links (Spark and Hive never rewrite a file in place; a copy where links
    cannot be made). What a test's branch gets from the pytest plugin, so that nothing it
    writes or drops reaches another branch. Returns the number of catalog values changed;
    ValueError for a target that is not such a directory."""
    from kvmodel.locations import relocate_prefix

    src, dst = check_own_files(root, target)
    moved = relocate_prefix(store, branch, qualify(root), qualify(target))
    os.makedirs(dst, exist_ok=True)
    if moved and os.path.isdir(src):
        _link_tree(src, dst)
    return moved


def _link_tree(src: str, dst: str) -> None:
    """``dst`` made a tree of hard links to the files of ``src`` (copies across file
    systems; symbolic links copied as links): two system calls per entry, where
    shutil.copytree also copies each directory's times and modes."""
    for entry in os.scandir(src):
        target = os.path.join(dst, entry.name)
        if entry.is_dir(follow_symlinks=False):
            os.makedirs(target, exist_ok=True)
            _link_tree(entry.path, target)
        elif entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
        else:
            try:
                os.link(entry.path, target)
            except OSError:  # another file system
                shutil.copy2(entry.path, target)
