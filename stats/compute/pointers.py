"""Where the sets are recorded: the pointers on the branch (one commit of their own or
staged beside the table's changes) and the table-level set reduced from the partitions'."""
from __future__ import annotations

from dataclasses import dataclass

from hms_proxy.hms.warehouse import local_path
from kvmodel.catalog import db_key, table_key
from kvmodel.hooks import run_pre_commit_hooks
from kvmodel.store.errors import DirtyBranch, HeadMoved, StoreError, WriteConflict
from stats import query
from stats.compute.model import DEFAULT_BINS, ComputeError, layout, log


# --- the pointers ------------------------------------------------------------------------------
def check_branch(store, ref: str) -> tuple[str, str]:
    """(branch, commit) for a ref that can hold pointers, else ComputeError."""

    try:
        resolved = store.resolve(ref)
    except StoreError as exc:
        raise ComputeError(f"--ref {ref}: {exc}", 1) from None
    if resolved.branch is None:
        raise ComputeError(f"--ref {ref} is not a branch: statistics pointers are recorded on a "
                           "branch (compute on a branch, then tag it)")
    branch = store.get_branch(resolved.branch)
    if branch is not None and branch.protected:
        raise ComputeError(f"branch {ref} is protected: compute on a branch and merge it "
                           f"(hms-proxy branch create NAME --from {ref}; "
                           f"hms-proxy merge NAME {ref})")
    return resolved.branch, resolved.commit


def table_dirty(store, branch: str, db: str, tbl: str) -> bool:
    """Whether ``db.tbl`` (or its database's entry) has uncommitted changes on ``branch``."""
    head = store.resolve(branch).commit
    return any(True for _ in store.diff(head, branch, table_key(db, tbl) + "/")) or any(
        e.key in (db_key(db), table_key(db, tbl)) for e in store.diff(head, branch, db_key(db)))


def record_pointers(store, store_path, branch: str, db: str, tbl: str,
                    pointers: list[tuple[str, bytes]], message: str, author: str = "",
                    own_change: bool = False):
    """Record the pointers on ``branch``: as a commit of their own when the table has no
    uncommitted change there, else staged beside its changes. A store whose commits take a
    branch's staging whole (lakeFS: ``exact_snapshots`` false) stages them too when the branch
    has any uncommitted change. ``own_change``: the table's uncommitted change is this run's
    own (an Iceberg statistics file set through the metastore, on a table that was clean):
    when nothing but the table is staged, it is committed with the pointers, in one commit.
    Returns the commit or None."""

    meta = {"source": "stats compute", "table": f"{db}.{tbl}"}
    for _ in range(5):
        try:
            return _record(store, store_path, branch, db, tbl, pointers, message, author,
                           own_change, meta)
        except (HeadMoved, WriteConflict):  # another writer (a server) moved the branch: again
            continue
    raise ComputeError(f"branch {branch} kept moving: pointers not recorded")


def _record(store, store_path, branch, db, tbl, pointers, message, author, own_change, meta):
    head = store.resolve(branch).commit
    dirty = table_dirty(store, branch, db, tbl)
    if dirty and own_change and _only_table_staged(store, branch, db, tbl):
        with store.write(branch) as txn:
            txn.put_many(pointers)
        changes = [(e.key, e.right) for e in store.staged(branch)]
        run_pre_commit_hooks(store, store_path, branch, head, changes, message, author, meta)
        try:
            return store.commit(branch, message, author=author, metadata=meta,
                                expected_head=head)
        except HeadMoved:
            return None  # staged beside what moved the branch
    if not dirty and not getattr(store, "exact_snapshots", True):
        dirty = next(iter(store.staged(branch)), None) is not None
    if dirty:
        with store.write(branch) as txn:
            txn.put_many(pointers)
        return None
    run_pre_commit_hooks(store, store_path, branch, head, pointers, message, author, meta)
    try:
        return store.commit_snapshot(branch, [head], iter(pointers), message, author=author,
                                     metadata=meta, expected_head=head)
    except DirtyBranch:  # data staged on a lakeFS branch: the pointers wait beside it
        with store.write(branch) as txn:
            txn.put_many(pointers)
        return None


def _only_table_staged(store, branch: str, db: str, tbl: str) -> bool:
    key = table_key(db, tbl)
    return all(e.key == key or e.key.startswith(key + "/") for e in store.staged(branch))


# --- the table level --------------------------------------------------------------------------
@dataclass
class TableLevel:
    """The ``_table_`` set of a partitioned table, reduced from its partitions' current sets."""
    pointer: tuple[str, bytes] | None  # (key, value) to record; None: no set was written
    set: str | None
    used: list[str]  # partitions whose sets were reduced
    stale: list[str]  # partitions skipped: their set is stale (merge mark or other schema)
    missing: list[str]  # partitions without a set
    rows: int = 0
    reason: str = ""  # why there is no set

    def describe(self) -> str:
        """One line for the command's output."""
        if self.pointer is None:
            return f"table-level statistics not written: {self.reason}"
        total = len(self.used) + len(self.stale) + len(self.missing)
        text = (f"table-level statistics reduced from {len(self.used)} of {total} partitions' "
                f"sets ({self.rows} rows)")
        skipped = []
        if self.stale:
            skipped.append(f"{len(self.stale)} stale skipped: {_names(self.stale)}")
        if self.missing:
            skipped.append(f"{len(self.missing)} without statistics: {_names(self.missing)}")
        return text + (f"; {'; '.join(skipped)}" if skipped else "")


def _names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def build_table_level(store, ref: str, db: str, tbl: str, new: dict[str, bytes] | None = None,
                      *, bins: int = DEFAULT_BINS, redis_url: str | None = None, redis=None,
                      commit: str | None = None, distributions: bool = False) -> TableLevel:
    """Write the ``_table_`` set of partitioned table ``db.tbl`` (:func:`stats.reduce.
    write_table_set`) from the sets of ALL its partitions at ``ref``: the pointers on the ref
    (staged ones included), overridden by ``new`` (partition name -> pointer value, not yet
    recorded). Stale sets (a merge's mark, or another schema) and partitions without a set are
    left out and listed. Returns the pointer to record (``layout.pointer_key(db, tbl,
    layout.TABLE_LEVEL)``) with what was used, or none (``reason``) when no set is usable or
    it cannot be written under the table's location (local, lakeFS, S3: :mod:`stats.files`).
    ``distributions``: also record which partitions hold each value of the discrete columns
    (:func:`stats.query.TableStats.holding`)."""
    from stats import reduce  # pyarrow, numpy: the stats extra

    try:
        ts = query.open_table(store, f"{db}.{tbl}", ref)
    except query.QueryError as exc:
        raise ComputeError(str(exc), exc.status) from None
    if not ts.partitioned:
        raise ComputeError(f"{db}.{tbl} is not partitioned: its statistics set is the table's "
                           "own (stats compute)")
    pointers = {p: v for p, v in ts.pointers.items() if p in set(ts.partition_names)}
    for name, value in (new or {}).items():
        pointers[name] = layout.read_pointer(value)
    used, stale, missing = [], [], []
    for name in ts.partition_names:
        pointer = pointers.get(name)
        if pointer is None:
            missing.append(name)
        elif ts.stale(pointer):
            stale.append(name)
        else:
            used.append(name)
    level = TableLevel(None, None, used, stale, missing,
                       sum(int(pointers[p].get("rows") or 0) for p in used))
    for name in stale:
        log.warning("%s.%s: the set of partition %s is stale: left out of the table level",
                    db, tbl, name)
    location = ts.table.sd.location if ts.table.sd is not None else None
    if not used:
        level.reason = f"no partition of {db}.{tbl} has a current statistics set"
        return level
    if not location:
        level.reason = f"{db}.{tbl} has no location to write its table-level set under"
        return level
    from stats import files
    from stats.sets import PartitionSet  # pyarrow: the stats extra

    branch = store.resolve(ref).branch or ref
    sets = [PartitionSet(local_path(pointers[p]["set"]) or
                         files.on_ref(pointers[p]["set"], branch), p) for p in used]
    try:  # on lakeFS, on the branch computed at (recorded ref-free like every location)
        path = reduce.write_table_set(files.on_ref(location, branch), sets, bins=bins,
                                      redis=redis, redis_url=redis_url,
                                      distributions=distributions)
    except (OSError, ValueError) as exc:  # pyarrow's file systems: ArrowIOError is an OSError
        level.reason = (f"cannot write it under {location}: "
                        f"{(str(exc) or type(exc).__name__).splitlines()[0]}")
        return level
    fingerprint = layout.schema_fingerprint(ts.columns)
    data = f"{location}|partitions={len(used)}/{len(ts.partition_names)}"
    sizes = [layout.data_bytes(pointers[p]) for p in used]
    if all(size is not None for size in sizes):  # what the used partitions' sets read
        data += f"|bytes={sum(sizes)}"
    level.set = path
    level.pointer = (layout.pointer_key(db, tbl, layout.TABLE_LEVEL),
                     layout.make_pointer(path, commit or ts.commit, fingerprint, level.rows, data))
    return level



def reduce_table(store, db: str, tbl: str, *, ref: str = "main", bins: int = DEFAULT_BINS,
                 redis_url: str | None = None, store_path: str | None = None,
                 author: str = "", distributions: bool = False) -> tuple[TableLevel, object]:
    """(Re)build and record the ``_table_`` set of ``db.tbl`` at branch ``ref`` from the
    partition sets already pointed to; (the table level, the pointer's commit or None when
    staged). ComputeError (status 1) when no partition has a current set."""
    db, tbl = db.lower(), tbl.lower()
    branch, _ = check_branch(store, ref)
    level = build_table_level(store, ref, db, tbl, bins=bins, redis_url=redis_url,
                              distributions=distributions)
    if level.pointer is None:
        raise ComputeError(level.describe(), 1 if not level.used else 2)
    n = len(level.used)
    message = f"stats reduce {db}.{tbl} ({n} partition{'' if n == 1 else 's'})"
    recorded = record_pointers(store, store_path, branch, db, tbl, [level.pointer], message,
                               author)
    return level, recorded
