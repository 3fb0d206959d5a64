"""The file-system side of HMS: default locations, and the directories HMS itself manages.

The stock HMS creates a database's and a managed table's directory, moves a managed table's
directory on rename and deletes it on drop; Spark relies on that (a dropped managed table that
left its files behind would be read again by a new table of the same name). We do the same for
local ``file:`` locations. Other schemes (s3a, lakefs, hdfs) are left alone: their data
belongs to the engine or to lakeFS, and a metadata server here has no credentials for them.
"""
from __future__ import annotations

import os
import shutil
from urllib.parse import urlsplit


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


def exists(location: str | None) -> bool:
    path = local_path(location)
    return path is not None and os.path.exists(path)


def delete(location: str | None) -> None:
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
