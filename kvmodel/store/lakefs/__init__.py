"""The lakeFS backend: the catalog as objects in the data's own lakeFS repository.

``lakefs://REPO`` stores catalog key ``k`` as the object ``_hms/k`` of repository ``REPO``, so
a lakeFS branch holds the data and its catalog together, a lakeFS commit snapshots both and one
lakeFS merge publishes both. Branches, tags, commits, log, diff, merge base and merge are
lakeFS's own, reached through ``lakefs-sdk``; nothing but the catalog's objects is kept
elsewhere (caches aside).

**Mapping of the store contract** (:mod:`kvmodel.store.contract`):

* a write transaction is **one object**: its changes are uploaded as one entry of the branch's
  write log (``_hms_log/<branch>/<slot>``, :mod:`kvmodel.store.lakefs.log`) when it ends, so
  it is staged whole or not at all, even if the server dies, in the branch's next slot, which
  lakeFS gives to one upload only: between servers a write made on a state that missed
  another's raises :class:`~kvmodel.store.errors.WriteConflict` (the caller decides again);
  ``commit`` *folds* the log into per-key objects (``_hms/<key>``) and commits them (data
  objects staged beside the catalog are committed with them, as ``lakectl commit`` would);
  ``reset`` resets the branch's ``_hms/`` and ``_hms_log/`` prefixes;
* every ref reads as the objects it holds: per-key objects with the live log entries of every
  directory applied, so lakeFS's own commits, branches, merges, reverts and tags (lakectl,
  the UI) keep the catalog with the data; :meth:`LakeFSStore.fold_for_commit` is lakeFS's
  ``prepare-commit`` hook (:mod:`kvmodel.lakefs_actions`);
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

**Modules**, by concern: :mod:`~kvmodel.store.lakefs.api` (configuration, lakeFS's API and its
errors), :mod:`~kvmodel.store.lakefs.log` (the write log's format),
:mod:`~kvmodel.store.lakefs.views` (views, write transactions, caches),
:mod:`~kvmodel.store.lakefs.committed` (reading commits), :mod:`~kvmodel.store.lakefs.variants`
(keys kept per branch: Iceberg tables), :mod:`~kvmodel.store.lakefs.state`
(branch states and their refresh), :mod:`~kvmodel.store.lakefs.writes` (writes, folds and
commits), :mod:`~kvmodel.store.lakefs.merges` (log, diff, merges),
:mod:`~kvmodel.store.lakefs.data` (table files), :mod:`~kvmodel.store.lakefs.store` (refs and
the store itself).
"""
from __future__ import annotations

from kvmodel.store.lakefs.api import LakeFSConfig, LakeFSError, _Connections  # noqa: F401
from kvmodel.store.lakefs.common import (  # noqa: F401
    CONNECT_TIMEOUT,
    INLINE_LIMIT,
    JOURNAL,
    PREFIX,
    READ_TIMEOUT,
    STALE_AFTER,
    VERSIONING_TIMEOUT,
)
from kvmodel.store.lakefs.store import LakeFSStore

__all__ = ["LakeFSStore", "LakeFSConfig", "LakeFSError", "PREFIX", "JOURNAL"]
