"""Domain errors of the versioned store and the catalog.

Small classes, one line each. They never carry Thrift types: ``hms_proxy/thrift/errors.py`` is the one
place where they become HMS exceptions.
"""
from __future__ import annotations

import random
import time


class StoreError(Exception):
    """Base class of every store error."""


class RefNotFound(StoreError):
    """No branch, tag or commit answers to that ref expression."""


class RefExists(StoreError):
    """A branch or tag by that name already exists."""


class InvalidRef(StoreError):
    """The ref name or expression is malformed."""


class ReadOnlyRef(StoreError):
    """The ref is a tag, a commit or an ancestry expression, and cannot be written."""


class ProtectedRef(StoreError):
    """The branch is protected against this operation."""


class NothingToCommit(StoreError):
    """The branch has no staged changes."""


class HeadMoved(StoreError):
    """The branch head is not the expected commit (compare-and-swap failed)."""


class StoreCorrupt(StoreError):
    """The store's files do not hold what the store expects."""


class MergeConflict(StoreError):
    """A merge (or revert) found conflicts it was not told how to resolve; ``result`` is the
    :class:`kvmodel.merge.MergeResult` with every conflict."""

    def __init__(self, result, message: str | None = None):
        self.result = result
        n = len(result.conflicts)
        super().__init__(message or f"merging {result.source!r} into {result.dest!r}: "
                                    f"{n} conflict{'s' if n != 1 else ''}")


class DirtyBranch(StoreError):
    """The branch has staged (uncommitted) changes, and the operation needs a clean branch."""


class WriteConflict(StoreError):
    """Another server changed the branch after this write transaction read it, so the write was
    not made; read again and decide again (the call is retried from the start)."""


WRITE_ATTEMPTS = 30  # a write that lost to another server's is decided again, at least this
WRITE_PATIENCE_S = 15.0  # often, and for at least this long


def decided_again(decide, *args, attempts: int = WRITE_ATTEMPTS,
                  patience: float = WRITE_PATIENCE_S):
    """``decide(*args)``, run again from the start while its write loses to another server's
    (:class:`WriteConflict`: nothing of it was written; the next run reads what the other
    server wrote and decides again, as the stock HMS's database transaction would), after a
    short random pause so that the two do not meet again; given up after ``attempts`` tries
    and ``patience`` seconds both (a busy branch written by several servers, each writer's
    call waits as it would for the stock HMS's database locks, instead of failing). Every
    write of a server goes through this: a client's call, and what a server writes on its
    own at start-up, when the replicas of a deployment start at the same moment over one
    repository."""
    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            return decide(*args)
        except WriteConflict:
            if attempt >= attempts and time.monotonic() - start >= patience:
                raise
            time.sleep(random.uniform(0, min(0.001 * 2 ** min(attempt, 10), 0.05)))
