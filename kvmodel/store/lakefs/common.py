"""Names, limits and small helpers shared by the lakeFS backend's modules."""
from __future__ import annotations

import base64
import fnmatch
import logging
import os
import re

from kvmodel.store.contract import (
    Key,
    prefix_end,
)
from kvmodel.store.lakefs.log import LOG

PREFIX = "_hms/"  # catalog key k is the object PREFIX + k
JOURNAL = "_hms_journal/"  # the layout before the write log: one object per branch, dropped
VARIANTS = "_hms_v/"  # per-branch variants of some keys (kvmodel.store.lakefs.variants)
NOT_DATA = (PREFIX, JOURNAL, LOG, VARIANTS)  # what is the catalog's, not table data
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
