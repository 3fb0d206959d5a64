"""3-way merge and revert of catalog refs, entity by entity and field by field.

The merge looks only at what the *source* changed since the merge base (``store.diff(base,
source)``), and asks the destination about those keys alone (plus their parents, and the
subtrees of what the source dropped): its cost follows the source's change, not the store, nor
the destination's own history since the base.

Per key changed by the source (``b`` base, ``s`` source, ``d`` destination value):

* ``d == b`` (dest left it alone): take ``s``; ``d == s``: nothing to do;
* both added it differently: ``ADDED_DIFFERENTLY``;
* both modified it: merged field by field (:func:`merge_entity`); a field changed differently
  on both sides is ``VALUE_DIFFERS``, a column changed differently ``COLUMN_CHANGED_BOTH``;
* one side dropped an entity the other modified -- or modified/added something *under* it
  (partitions of a dropped table, tables of a dropped database, statistics of a dropped
  partition): ``MODIFIED_AND_DROPPED`` (source modified, dest dropped), ``DROPPED_AND_MODIFIED``
  (source dropped, dest modified), ``PARENT_DROPPED`` (only children changed). These are
  decided for the whole subtree at once: with a strategy, every key of the subtree takes the
  winning side's value (source-wins restores a table the destination dropped, with its
  partitions; dest-wins keeps it dropped).
* statistics-set pointers (``.../stats/<partition>``) never conflict: see
  :func:`merge_stats_pointer`.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.catalog import table_key
from kvmodel.entities import (
    FIELDS,
    MERGE_VOLATILE_PARAMS,
    ColumnsField,
    EntityChange,
    MapField,
    ancestors,
    columns_by_name,
    decode,
    dependents,
    entity_change,
    field_changes,
    get_field,
    jsonable,
    parse_key,
    set_field,
)
from kvmodel.store.contract import Commit, VersionedStore
from kvmodel.store.errors import (
    DirtyBranch,
    HeadMoved,
    MergeConflict,
    NothingToCommit,
    ReadOnlyRef,
    StoreError,
)

STRATEGIES = ("fail", "source-wins", "dest-wins")
_PREFER = {"fail": None, "source-wins": "source", "dest-wins": "dest"}
SUMMARY_KEYS = 20  # keys listed in a PARENT_DROPPED summary


@dataclass(frozen=True)
class Conflict:
    """A change the merge cannot take from one side alone.

    ``source``/``dest`` are JSON-able: the field's value on each side for VALUE_DIFFERS and
    COLUMN_CHANGED_BOTH (one Conflict per field or column), ``{field: value}`` of the
    differing fields for ADDED_DIFFERENTLY, and for the drop conflicts None on the dropping
    side and a summary of the other side's changes."""

    type: str
    kind: str
    path: tuple[str, ...]
    fields: tuple[str, ...]
    source: object
    dest: object
    key: str = ""

    def to_json(self) -> dict:
        return {"type": self.type, "kind": self.kind, "path": list(self.path),
                "fields": list(self.fields), "source": self.source, "dest": self.dest,
                "key": self.key}


@dataclass
class MergeResult:
    source: str
    dest: str
    base: str | None
    commit: Commit | None
    applied: list[EntityChange] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    resolved_by: str | None = None
    # Iceberg tables the merge brought that were anchored on dest afterwards
    # (kvmodel.iceberg_anchor), and the commit that holds them
    anchored: list = field(default_factory=list)
    anchor_commit: Commit | None = None
    # Iceberg tables merged in Iceberg's terms (kvmodel.iceberg_merge.Plan), the commit after
    # the merge commit that holds them
    iceberg: list = field(default_factory=list)
    iceberg_commit: Commit | None = None

    def to_json(self) -> dict:
        return {"source": self.source, "dest": self.dest, "base": self.base,
                "commit": self.commit.id if self.commit is not None else None,
                "applied": [c.to_json() for c in self.applied],
                "conflicts": [c.to_json() for c in self.conflicts],
                "resolved_by": self.resolved_by,
                "anchored": [a.to_json() for a in self.anchored],
                "anchor_commit": self.anchor_commit.id if self.anchor_commit else None,
                "iceberg": [p.to_json() for p in self.iceberg],
                "iceberg_commit": self.iceberg_commit.id if self.iceberg_commit else None}


# --- field-level merge of one entity ----------------------------------------------------------
def _later(a, b):
    """The later of two volatile values (numbers, or numeric strings; else the larger)."""
    if a is None or b is None:
        return a if b is None else b
    try:
        return a if int(a) >= int(b) else b
    except (TypeError, ValueError):
        return max(a, b)


def merge_entity(kind: str, base, src, dst, prefer: str | None):
    """Merge struct ``src`` into struct ``dst`` against ``base`` field by field.

    Returns ``(merged, conflicts)``: ``merged`` is a new struct (dest's, with the source's
    changes), ``conflicts`` a list of ``(type, field_names, source_value, dest_value)``. With
    ``prefer`` ("source"/"dest") each conflicting field takes that side's value."""
    out = codec.clone(dst)
    conflicts: list = []
    for f in FIELDS[kind]:
        bv, sv, dv = (get_field(kind, f, x) for x in (base, src, dst))
        if sv == dv or sv == bv:
            continue
        if dv == bv:
            set_field(kind, f, out, sv)
        elif isinstance(f, MapField):
            set_field(kind, f, out, _merge_map(f.name, bv, sv, dv, prefer, conflicts))
        elif isinstance(f, ColumnsField):
            set_field(kind, f, out, _merge_columns(f.name, bv, sv, dv, prefer, conflicts))
        elif f.volatile:
            set_field(kind, f, out, _later(sv, dv))
        else:
            conflicts.append(("VALUE_DIFFERS", (f.name,), jsonable(sv), jsonable(dv)))
            if prefer == "source":
                set_field(kind, f, out, sv)
    return out, conflicts


def _merge_map(name, base, src, dst, prefer, conflicts):
    bm, sm, dm = base or {}, src or {}, dst or {}
    out = dict(dm)
    for k in sorted(set(bm) | set(sm) | set(dm)):
        bk, sk, dk = bm.get(k), sm.get(k), dm.get(k)
        if sk == dk or sk == bk:
            continue
        if dk == bk:
            value = sk
        elif k in MERGE_VOLATILE_PARAMS:
            value = _later(sk, dk)
        else:
            conflicts.append(("VALUE_DIFFERS", (f"{name}.{k}",), sk, dk))
            value = sk if prefer == "source" else dk
        if value is None:
            out.pop(k, None)
        else:
            out[k] = value
    return dst if out == dm else out


def _column_json(name, col):
    return None if col is None else {"name": name, "type": col[0], "comment": col[1]}


def _merge_columns(name, base, src, dst, prefer, conflicts):
    """Columns merged one by one (by name); the order merged positionally: the side that
    did not reorder the columns both kept gives the skeleton; columns the other side appended
    are appended, and each other column it added goes after its predecessor there (after
    columns the skeleton side added at that place). Two sides appending columns: the
    destination's come first."""
    B, S, D = columns_by_name(base), columns_by_name(src), columns_by_name(dst)
    if B is None or S is None or D is None:  # repeated names: the list is one value
        conflicts.append(("COLUMN_CHANGED_BOTH", (name,), jsonable(src), jsonable(dst)))
        return src if prefer == "source" else dst
    final: dict = {}
    for n in list(dict.fromkeys([*S, *D, *B])):
        bv, sv, dv = B.get(n), S.get(n), D.get(n)
        if sv == dv or sv == bv:
            value = dv
        elif dv == bv:
            value = sv
        else:
            conflicts.append(("COLUMN_CHANGED_BOTH", (f"{name}.{n}",), _column_json(n, sv),
                              _column_json(n, dv)))
            value = sv if prefer == "source" else dv
        if value is not None:
            final[n] = value
    kept = [n for n in B if n in S and n in D]
    rel_s = [n for n in S if n in B and n in D]
    rel_d = [n for n in D if n in B and n in S]
    if rel_s == kept or rel_s == rel_d:
        skeleton, other = list(D), list(S)
    elif rel_d == kept:
        skeleton, other = list(S), list(D)
    else:
        conflicts.append(("COLUMN_CHANGED_BOTH", (f"{name}.order",), list(S), list(D)))
        skeleton, other = (list(S), list(D)) if prefer == "source" else (list(D), list(S))
    merged = [n for n in skeleton if n in final]
    skeleton_added = {n for n in skeleton if n not in B}
    trailing = len(other)  # where the other side's run of added columns at the end starts
    while trailing and other[trailing - 1] not in B:
        trailing -= 1
    for i, n in enumerate(other):
        if n not in final or n in merged:
            continue
        if i >= trailing:  # appended by the other side: appended here too
            merged.append(n)
            continue
        pos = 0
        for p in reversed(other[:i]):
            if p in merged:
                pos = merged.index(p) + 1
                break
        while pos < len(merged) and merged[pos] in skeleton_added:
            pos += 1
        merged.insert(pos, n)
    return [ttypes.FieldSchema(n, final[n][0], final[n][1]) for n in merged]


# --- the 3-way merge of two commits -------------------------------------------------------------
@dataclass
class Outcome:
    writes: dict            # key -> new value (None deletes), relative to the dest commit
    dest_values: dict       # key -> the dest commit's value, for every key in ``writes``
    conflicts: list[Conflict]
    # table key -> kvmodel.iceberg_merge.Plan: Iceberg tables both sides committed to, merged
    # in Iceberg's terms after the merge commit (which keeps the destination's pointer)
    iceberg: dict = field(default_factory=dict)

    def applied(self) -> list[EntityChange]:
        return [entity_change(k, self.dest_values[k], self.writes[k]) for k in sorted(self.writes)]


def _in_scope(key: str, parent: str, prefixes: tuple[str, ...]) -> bool:
    return key == parent or any(key.startswith(p) for p in prefixes)


def _keys_in_scope(sorted_keys: list[str], parent: str, prefixes: tuple[str, ...]) -> list[str]:
    out = []
    i = bisect.bisect_left(sorted_keys, parent)
    if i < len(sorted_keys) and sorted_keys[i] == parent:
        out.append(parent)
    for p in prefixes:
        i = bisect.bisect_left(sorted_keys, p)
        while i < len(sorted_keys) and sorted_keys[i].startswith(p):
            out.append(sorted_keys[i])
            i += 1
    return out


def _coalesce(prefixes: set[str]) -> list[str]:
    """Prefixes without those another one covers; many partition-statistics prefixes of one
    table become the table's ``partstats/`` prefix (one diff instead of many)."""
    by_table: dict[str, list[str]] = {}
    for p in prefixes:
        head, sep, _ = p.partition("/partstats/")
        if sep:
            by_table.setdefault(head + "/partstats/", []).append(p)
    out = set(prefixes)
    for table_prefix, group in by_table.items():
        if len(group) > 4:
            out.difference_update(group)
            out.add(table_prefix)
    kept: list[str] = []
    for p in sorted(out):
        if not kept or not p.startswith(kept[-1]):
            kept.append(p)
    return kept


def three_way(store: VersionedStore, base: str, source: str, dest: str,
              prefer: str | None) -> Outcome:
    """The changes that bring the source's changes since ``base`` onto ``dest`` (three
    commit ids), and the conflicts (resolved towards ``prefer`` when given)."""
    src = {e.key: e for e in store.diff(base, source)}
    keys = sorted(src)
    writes: dict = {}
    dest_values: dict = {}
    conflicts: list[Conflict] = []
    iceberg: dict = {}
    if not keys:
        return Outcome(writes, dest_values, conflicts)
    with store.read(dest) as dview, store.read(base) as bview:
        dvals = dict(zip(keys, dview.get_many(keys)))
        anc = sorted({a for k in keys for a in ancestors(k)} - src.keys())
        abase = dict(zip(anc, bview.get_many(anc)))
        adest = dict(zip(anc, dview.get_many(anc)))

    def base_of(k):
        return src[k].left if k in src else abase[k]

    def src_of(k):
        return src[k].right if k in src else abase[k]

    def dst_of(k):
        return dvals[k] if k in src else adest[k]

    # Drops against changes: parent key -> the side that dropped it.
    parents: dict[str, str] = {}
    for k in keys:  # the destination dropped an entity the source changed, or a parent of it
        if src[k].right is None or is_stats_pointer(k):  # pointers never conflict
            continue
        for a in ancestors(k) + [k]:
            if base_of(a) is not None and dst_of(a) is None and src_of(a) is not None:
                parents.setdefault(a, "dest")
                break
    removed = [k for k in keys if src[k].right is None and dvals[k] is not None]
    for k in removed:  # the source dropped an entity the destination modified...
        if dvals[k] != src[k].left and not is_stats_pointer(k):
            parents.setdefault(k, "source")
    prefixes = {p for k in removed for p in dependents(k)}
    orphans: dict[str, bytes] = {}  # pointers the dest added under what the source dropped
    for p in _coalesce(prefixes):  # ... or changed something under
        for e in store.diff(base, dest, p):
            if e.right is None:
                continue
            if is_stats_pointer(e.key):
                if e.key not in src:
                    orphans[e.key] = e.right
                continue
            for a in ancestors(e.key):
                if a in src and src[a].right is None and dvals[a] is not None:
                    parents.setdefault(a, "source")
                    break
    outer: list[str] = []
    for a in sorted(parents):
        if not any(_in_scope(a, o, dependents(o)) for o in outer):
            outer.append(a)
    owned: set[str] = set()
    for a in outer:
        owned.update(_subtree_conflict(store, base, dest, a, parents[a], src, keys, base_of(a),
                                       src_of(a), dst_of(a), prefer, writes, dest_values,
                                       conflicts))

    for k, d in orphans.items():  # their table is gone unless a conflict over it keeps it
        if not any(_in_scope(k, o, dependents(o)) for o in outer):
            writes[k], dest_values[k] = None, d

    for k in keys:
        if k in owned:
            continue
        b, s, d = src[k].left, src[k].right, dvals[k]
        if d == s:
            continue
        if is_stats_pointer(k):
            tbl = ancestors(k)[1]
            if base_of(tbl) is not None and None in (src_of(tbl), dst_of(tbl)):
                want = None  # a side dropped the table: the pointer goes with it
            elif d == b:
                want = s
            else:
                want = merge_stats_pointer(store, base, source, dest, k, s, d)
            if want != d:
                writes[k], dest_values[k] = want, d
            continue
        if d == b:
            writes[k], dest_values[k] = s, d
            continue
        kind, path = parse_key(k)
        bo, so, do = decode(kind, b), decode(kind, s), decode(kind, d)
        if b is None:
            diffs = field_changes(kind, do, so) if so is not None and do is not None else []
            names = tuple(c.field for c in diffs) or ("value",)
            sv = {c.field: c.after for c in diffs} if diffs else jsonable(s)
            dv = {c.field: c.before for c in diffs} if diffs else jsonable(d)
            conflicts.append(Conflict("ADDED_DIFFERENTLY", kind, path, names, sv, dv, k))
            if prefer == "source":
                writes[k], dest_values[k] = s, d
        elif s is None or d is None or bo is None or so is None or do is None:
            # drops are subtree conflicts above; this is an opaque value changed on both sides
            conflicts.append(Conflict("VALUE_DIFFERS", kind, path, ("value",), jsonable(s),
                                      jsonable(d), k))
            if prefer == "source":
                writes[k], dest_values[k] = s, d
        else:
            merged, found = merge_entity(kind, bo, so, do, prefer)
            if kind == "table" and found:
                found = _iceberg_table(store, k, path, bo, so, do, found, iceberg, conflicts)
                if k in iceberg:  # the destination's pointer, merged after the commit
                    ours, _ = merge_entity(kind, bo, so, do, "dest")
                    merged.parameters = ours.parameters
                    if merged.sd is not None and ours.sd is not None:
                        merged.sd.cols, merged.sd.location = ours.sd.cols, ours.sd.location
            for ctype, fields, sv, dv in found:
                conflicts.append(Conflict(ctype, kind, path, fields, sv, dv, k))
            if not found or prefer is not None:
                data = codec.encode(merged)
                if data != d:
                    writes[k], dest_values[k] = data, d
    conflicts.sort(key=lambda c: (c.key, c.fields))
    return Outcome(writes, dest_values, conflicts, iceberg)


def _iceberg_table(store, key, path, bo, so, do, found, plans, conflicts) -> list:
    """The field conflicts of a table both sides changed, less those an Iceberg merge settles
    (its plan is put in ``plans``); an Iceberg merge that cannot be made is one conflict
    naming its reasons."""
    from kvmodel import iceberg_merge
    from kvmodel.iceberg_files import has_pyiceberg

    if not iceberg_merge.is_iceberg(do) or not has_pyiceberg():  # the pointers' conflict stands
        return found
    try:
        plan = iceberg_merge.plan_tables(iceberg_merge.files_for(store), ".".join(path), bo,
                                         so, do)
    except iceberg_merge.IcebergConflict as exc:
        left = [c for c in found if not all(iceberg_merge.managed(f) for f in c[1])]
        conflicts.append(Conflict("ICEBERG_CONFLICT", "table", path, tuple(exc.reasons),
                                  so.parameters.get("metadata_location"),
                                  do.parameters.get("metadata_location"), key))
        return left
    if plan is None:
        return found
    plans[key] = plan
    return [c for c in found if not all(iceberg_merge.managed(f) for f in c[1])]


def _subtree_conflict(store, base, dest, parent, dropper, src, keys, b, s, d, prefer, writes,
                      dest_values, conflicts) -> list[str]:
    """Record the drop conflict at ``parent``, resolve its whole subtree towards ``prefer``,
    and return the source keys it covers."""
    prefixes = dependents(parent)
    ss = {k: (src[k].left, src[k].right) for k in _keys_in_scope(keys, parent, prefixes)}
    dd = {parent: (b, d)} if d != b else {}
    for p in prefixes:
        dd.update((e.key, (e.left, e.right)) for e in store.diff(base, dest, p))
    changer = ss if dropper == "dest" else dd
    changed = {k: v for k, v in changer.items() if v[1] is not None}
    kind, path = parse_key(parent)
    if parent in changed:
        ctype = "MODIFIED_AND_DROPPED" if dropper == "dest" else "DROPPED_AND_MODIFIED"
        before, after = changed[parent]
        bo, ao = decode(kind, before), decode(kind, after)
        diffs = field_changes(kind, bo, ao) if bo is not None and ao is not None else []
        names = tuple(c.field for c in diffs)
        summary = {c.field: c.after for c in diffs}
    else:
        ctype, names = "PARENT_DROPPED", ()
        added = sorted(k for k, v in changed.items() if v[0] is None)
        modified = sorted(k for k, v in changed.items() if v[0] is not None)
        summary = {"added": len(added), "modified": len(modified),
                   "keys": (added + modified)[:SUMMARY_KEYS]}
    sv, dv = (summary, None) if dropper == "dest" else (None, summary)
    conflicts.append(Conflict(ctype, kind, path, names, sv, dv, parent))
    if prefer is not None:
        for k in sorted(ss.keys() | dd.keys()):
            kb = ss[k][0] if k in ss else dd[k][0]
            now = dd[k][1] if k in dd else kb
            want = (ss[k][1] if k in ss else kb) if prefer == "source" else now
            if want != now:
                writes[k], dest_values[k] = want, now
    return list(ss)


# --- statistics-set pointers (stats/layout.py) -----------------------------------------------
# ``db/<db>/table/<tbl>/stats/<partition or _>``: JSON naming an immutable statistics set.
# They never conflict: when both sides changed one since the merge base, the side whose data
# moved (the partition's -- the table's for ``_`` -- location or numFiles/totalSize/numRows
# changed on that side; for a partitioned table's reduced ``_table_`` set, any partition's)
# wins; otherwise the result is the later-computed pointer marked
# ``"stale": true`` (kept, so its files are not expired, but never served). A pointer goes
# with its table when a side dropped the table.
_DATA_PARAMS = ("numFiles", "totalSize", "numRows")


def is_stats_pointer(key: str) -> bool:
    if "/stats/" not in key:
        return False
    kind, path = parse_key(key)
    return kind == "table_item" and path[2].startswith("stats/")


def _data_state(kind: str, value: bytes | None):
    """What says that a partition's (or table's) data moved: its location and file stats."""
    entity = decode(kind, value)
    if entity is None:
        return None
    params = entity.parameters or {}
    return (entity.sd.location if entity.sd is not None else None,
            tuple(params.get(p) for p in _DATA_PARAMS))


def _partitions_moved(store: VersionedStore, base: str, side: str, tbl_key: str) -> bool:
    return any(_data_state("partition", e.left) != _data_state("partition", e.right)
               for e in store.diff(base, side, tbl_key + "/part/"))


def _marked_stale(s: bytes | None, d: bytes | None) -> bytes | None:
    import json

    pointers = []
    for value in (s, d):
        try:
            pointer = json.loads(value) if value is not None else None
        except ValueError:
            pointer = None
        if isinstance(pointer, dict):
            pointers.append(pointer)
    if not pointers:
        return s if s is not None else d
    try:
        chosen = max(pointers, key=lambda p: float(p.get("computed") or 0))
    except (TypeError, ValueError):
        chosen = pointers[0]
    chosen = dict(chosen, stale=True)
    return json.dumps(chosen, sort_keys=True, separators=(",", ":")).encode()


def merge_stats_pointer(store: VersionedStore, base: str, source: str, dest: str, key: str,
                        s: bytes | None, d: bytes | None) -> bytes | None:
    """The merged value of a pointer both sides changed since ``base`` (three commits)."""
    _, (db, tbl, item) = parse_key(key)
    part = item[len("stats/"):]
    tbl_key = table_key(db, tbl)
    if part.startswith("_"):  # "_": an unpartitioned table; "_table_": reduced from partitions
        kind, data_key = "table", tbl_key
    else:
        kind, data_key = "partition", f"{tbl_key}/part/{part}"
    states = []
    for ref in (base, source, dest):
        with store.read(ref) as view:
            states.append(_data_state(kind, view.get(data_key)))
    source_moved, dest_moved = states[1] != states[0], states[2] != states[0]
    if part.startswith("_") and part != "_":  # any partition's data moving moves the table's
        source_moved = source_moved or _partitions_moved(store, base, source, tbl_key)
        dest_moved = dest_moved or _partitions_moved(store, base, dest, tbl_key)
    if source_moved != dest_moved:
        return s if source_moved else d
    return _marked_stale(s, d)


# --- merge and revert -----------------------------------------------------------------------------
def _check_clean_branch(store: VersionedStore, branch: str):
    ref = store.latest(branch)
    if ref.branch is None:
        raise ReadOnlyRef(f"{branch!r} is not a branch")
    if next(iter(store.staged(branch)), None) is not None:
        raise DirtyBranch(f"branch {branch!r} has uncommitted changes: commit or reset them "
                          "first")
    return ref


def merge_refs(store: VersionedStore, source: str, dest: str, *, strategy: str = "fail",
               dry_run: bool = False, author: str = "", message: str | None = None,
               metadata: dict | None = None, expected_head: str | None = None) -> MergeResult:
    """Merge ``source`` into branch ``dest``, 3-way from their merge base.

    The source side is its *committed* head (a source branch's staged writes are not merged);
    ``dest`` must have no staged writes (DirtyBranch), and the merge applies to its committed
    head. One merge commit is written, with parents ``[dest head, source head]``, atomically
    against the dest head it was computed from (HeadMoved if the branch moved meanwhile). When
    the source has nothing dest lacks, nothing is written (``commit`` None).

    ``strategy``: "fail" raises MergeConflict (carrying the result) on any conflict, writing
    nothing; "source-wins"/"dest-wins" resolve every conflict towards that side, field-wise
    where the conflict is a field, entity- or subtree-wise otherwise. ``dry_run`` computes the
    same result and writes nothing; it returns conflicts rather than raising. With unresolved
    conflicts ``applied`` is empty (nothing would change). ``expected_head``: merge only onto
    that dest head (HeadMoved otherwise), e.g. the head that pre-merge hooks checked.
    """
    if strategy not in _PREFER:
        raise ValueError(f"unknown merge strategy {strategy!r}; use one of {STRATEGIES}")
    dref = _check_clean_branch(store, dest)
    src_head, dst_head = store.latest(source).commit, dref.commit
    if expected_head is not None and dst_head != expected_head:
        raise HeadMoved(f"branch {dest!r} is at {dst_head[:12]}, not {expected_head[:12]}")
    base = store.merge_base(src_head, dst_head)
    if base is None:
        raise StoreError(f"{source!r} and {dest!r} have no common history")
    result = MergeResult(source, dest, base, None)
    if base == src_head:  # nothing in source that dest lacks
        return result
    prefer = _PREFER[strategy]
    data_conflicts = getattr(store, "data_conflicts", None)
    # a store holding data too (lakeFS): its objects' conflicts, asked first (the store keeps
    # each side's whole diff, which then answers the catalog's too)
    in_data = [] if data_conflicts is None else data_conflicts(base, src_head, dst_head)
    out = three_way(store, base, src_head, dst_head, prefer)
    out.conflicts += [Conflict("DATA_CONFLICT", "data", (path,), (), "changed", "changed", path)
                      for path in in_data]
    result.conflicts = out.conflicts
    result.iceberg = list(out.iceberg.values())
    if out.conflicts and prefer is None:
        if dry_run:
            return result
        raise MergeConflict(result)
    result.applied = out.applied()
    result.resolved_by = strategy if out.conflicts else None
    if dry_run:
        return result
    extra = {"data_strategy": strategy} if data_conflicts is not None else {}
    result.commit = store.commit_snapshot(
        dest, [dst_head, src_head], iter(sorted(out.writes.items())),
        message if message is not None else f"Merge '{source}' into '{dest}'", author,
        metadata, expected_head=dst_head, **extra)
    if out.iceberg:
        result.iceberg_commit = _merge_iceberg(store, source, dest, out.iceberg, author)
    return result


def _merge_iceberg(store: VersionedStore, source: str, dest: str, plans: dict, author: str):
    """After the merge commit: each Iceberg table both sides committed to gets the source's
    snapshots replayed on the destination's (kvmodel.iceberg_merge), in one more commit."""
    from kvmodel import iceberg_merge

    files = iceberg_merge.files_for(store)
    done = []
    for key, plan in sorted(plans.items()):
        _, (db, name) = parse_key(key)
        if iceberg_merge.apply_to_table(files, store, dest, db, name, plan, ttypes):
            done.append(f"{db}.{name}: {plan.summary()}")
    if not done:
        return None
    return store.commit(dest, f"hms-proxy: Iceberg merge of {source} into {dest}: "
                              + "; ".join(done), author or "hms-proxy",
                        {"hms-proxy.iceberg-merge": source})


def revert_commit(store: VersionedStore, branch: str, commit_id: str, *, author: str = "",
                  message: str | None = None) -> Commit:
    """A new commit on ``branch`` undoing what ``commit_id`` changed against its first parent,
    applied 3-way onto the branch's committed head (the branch must have no staged writes).

    Raises MergeConflict when later commits changed the same things differently,
    NothingToCommit when there is nothing left to undo, HeadMoved if the branch moved."""
    bref = _check_clean_branch(store, branch)
    commit = store.get_commit(store.latest(commit_id).commit)
    if not commit.parents:
        raise StoreError(f"commit {commit.id[:12]} has no parent to revert to")
    head = bref.commit
    out = three_way(store, commit.id, commit.parents[0], head, None)
    if out.conflicts:
        raise MergeConflict(MergeResult(f"revert {commit.id[:12]}", branch, commit.id, None,
                                        [], out.conflicts))
    if not out.writes:
        raise NothingToCommit(f"reverting {commit.id[:12]} changes nothing on {branch!r}")
    return store.commit_snapshot(
        branch, [head], iter(sorted(out.writes.items())),
        message if message is not None else f"Revert {commit.id[:12]}: {commit.message}",
        author, {"reverts": commit.id}, expected_head=head)
