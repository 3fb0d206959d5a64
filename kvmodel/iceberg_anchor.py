"""Iceberg tables anchored to their own branch in a lakeFS repository.

An Iceberg table names its files by absolute path, and through lakeFS's S3 gateway the ref is
part of the path: what a writer on ``dev`` made is named ``s3a://REPO/dev/...`` in the metadata
file, in the snapshots' manifest lists and in the manifests. A merge brings the files to the
destination under the same keys (``s3a://REPO/main/...`` holds the same objects), but the table
it brings still names them through ``dev``: once ``dev`` is deleted, main's table can no longer
be read.

Anchoring a table on branch ``B`` writes, on ``B``, what names files through another ref
again, the paths moved to ``B``: each foreign manifest (its data and delete files' paths), each
foreign manifest list (its manifests' paths and lengths), and one new metadata file (its
location, path properties, manifest lists, metadata log and statistics files), then points the
table at it. The data files are not touched: they are on ``B`` under the same keys. What the
table named through ``B`` already is read by nobody, so the cost grows with what the other ref
wrote, not with the table's size or history. Time travel keeps working: every snapshot is
still there, with its id, sequence number and summary; only paths change.

When a table on ``B`` was written to after a merge that was not anchored (its metadata log
names another ref before its current file), a new manifest list or manifest written on ``B``
may hold foreign paths; such a table is anchored *deeply*: every manifest list and manifest is
read.

Who anchors: every merge made through hms-proxy (:func:`kvmodel.hooks.merge_with_hooks`, the CLI,
the HTTP API, the console) anchors the tables it brought; lakeFS's own merges are anchored by the
``post-merge`` hook of the lakeFS action, and before lakeFS deletes a branch its
``pre-delete-branch`` hook anchors every other branch's tables that name it
(:mod:`kvmodel.lakefs_actions`).
"""
from __future__ import annotations

import json
import logging
import posixpath
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import codec
from kvmodel.avro_files import read_container, write_container
from kvmodel.catalog import CatalogReader, CatalogWriter, table_key
from kvmodel.iceberg_deletes import is_position_deletes, move_position_deletes
from kvmodel.iceberg_files import (
    METADATA_LOCATION,
    beside,
    files_for,
    has_pyiceberg,
    is_iceberg,
    is_lakefs,
    next_metadata_location,
    unwrap,
)
from kvmodel.iceberg_paths import PATH_PROPERTIES, RefPaths
from kvmodel.store.errors import decided_again

log = logging.getLogger("kvmodel.iceberg_anchor")
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
ATTEMPTS = 5  # a table committed to while it was anchored is anchored again from its new state


@dataclass
class Anchored:
    """One table anchored on ``ref``: its metadata file before and after, and how many
    manifest lists and manifests were written again."""

    ref: str
    table: str
    before: str
    after: str
    manifest_lists: int = 0
    manifests: int = 0

    def to_json(self) -> dict:
        return {"ref": self.ref, "table": self.table, "before": self.before,
                "after": self.after, "manifest_lists": self.manifest_lists,
                "manifests": self.manifests}


@dataclass
class _Run:
    ref: str
    deep: bool
    lists: dict = field(default_factory=dict)  # old path -> new path
    manifests: dict = field(default_factory=dict)  # old path -> (new path, length)
    only: set | None = None  # the paths to move (else: every path through another ref)
    puffins: dict = field(default_factory=dict)  # deletion vectors' files written again


class Anchor:
    """Anchoring of the Iceberg tables of one lakeFS store (``store.repository``,
    ``store.config``), its files through lakeFS's S3 gateway with the store's keys."""

    def __init__(self, store):
        self.store = store  # reads and writes go through it (a server's wrappers included)
        self.lakefs = unwrap(store)
        self.files = files_for(store)
        self.paths = self.files.paths
        self._named: dict[str, frozenset[str]] = {}  # metadata location -> refs it names

    # --- files ------------------------------------------------------------------------------
    def foreign(self, path: str | None, ref: str) -> bool:
        return bool(path) and self.paths.move(path, ref) != path

    def _read(self, path: str, ref: str) -> bytes:
        return self.files.read(path, ref)

    def _write(self, path: str, data: bytes) -> None:
        self.files.write(path, data)

    def _new_path(self, path: str, ref: str) -> str:
        """A new file beside ``path`` moved to ``ref``: ``<stem>-anchored-<hex>.avro``."""
        return beside(self.paths.move(path, ref), "anchored", "avro")

    # --- one table's files --------------------------------------------------------------------
    def _traces(self, metadata: dict, location: str, ref: str) -> list[str]:
        return [p for p in self._paths(metadata, location) if self.foreign(p, ref)]

    @staticmethod
    def _paths(metadata: dict, location: str) -> list[str]:
        """The paths the metadata file at ``location`` names directly."""
        paths = [location, metadata.get("location")]
        props = metadata.get("properties") or {}
        paths += [props.get(k) for k in PATH_PROPERTIES]
        for snap in metadata.get("snapshots") or []:
            paths.append(snap.get("manifest-list"))
            paths += list(snap.get("manifests") or [])
        paths += [e.get("metadata-file") for e in metadata.get("metadata-log") or []]
        for key in ("statistics", "partition-statistics"):
            paths += [s.get("statistics-path") for s in metadata.get(key) or []]
        return [p for p in paths if isinstance(p, str)]

    def _deep(self, metadata: dict, location: str, ref: str) -> bool:
        """Whether something was written on ``ref`` after the table named another ref (so a
        file named through ``ref`` may hold foreign paths)."""
        chain = [e.get("metadata-file") for e in metadata.get("metadata-log") or []]
        chain.append(location)
        seen_foreign = False
        for path in chain:
            if not isinstance(path, str):
                continue
            if self.foreign(path, ref):
                seen_foreign = True
            elif seen_foreign:
                return True
        return False

    def _moves(self, run: _Run, path: str) -> bool:
        if run.only is not None:
            return path in run.only
        return self.foreign(path, run.ref)

    def _manifest(self, run: _Run, path: str) -> tuple[str, int]:
        """The manifest at ``path`` with its files' paths moved to the run's ref (written
        again when any moves): (its path, its length)."""
        hit = run.manifests.get(path)
        if hit is not None:
            return hit
        if not run.deep and not self._moves(run, path):
            return path, -1
        meta, _, records = read_container(self._read(path, run.ref))
        changed = self._moves(run, path)
        for record in records:
            data_file = record.get("data_file")
            if not isinstance(data_file, dict):
                continue
            if is_position_deletes(data_file) and move_position_deletes(
                    data_file,
                    lambda p: self.paths.move(p, run.ref) if self._moves(run, p) else p,
                    lambda p: self._read(p, run.ref), self._write,
                    lambda p: self._new_path(p, run.ref), run.puffins):
                changed = True  # written again on the ref, its rows' paths moved
            for name in ("file_path", "referenced_data_file"):
                value = data_file.get(name)
                if isinstance(value, str) and self._moves(run, value):
                    data_file[name] = self.paths.move(value, run.ref)
                    changed = True
        if not changed:
            run.manifests[path] = (path, -1)
            return path, -1
        data = write_container(meta, records)
        new = self._new_path(path, run.ref)
        self._write(new, data)
        run.manifests[path] = (new, len(data))
        return new, len(data)

    def _manifest_list(self, run: _Run, path: str) -> str:
        hit = run.lists.get(path)
        if hit is not None:
            return hit
        if not run.deep and not self._moves(run, path):
            return path
        meta, _, records = read_container(self._read(path, run.ref))
        changed = self._moves(run, path)
        for record in records:
            old = record.get("manifest_path")
            if not isinstance(old, str):
                continue
            new, length = self._manifest(run, old)
            if new != old:
                record["manifest_path"] = new
                record["manifest_length"] = length
                changed = True
        if not changed:
            run.lists[path] = path
            return path
        new = self._new_path(path, run.ref)
        self._write(new, write_container(meta, records))
        run.lists[path] = new
        return new

    def anchor_metadata(self, location: str, ref: str,
                        only: set | None = None) -> tuple[str, dict, _Run] | None:
        """Write the metadata file at ``location`` again on ``ref`` with every path moved there
        (and the files that name other files); None when it names no other ref. Returns (the
        new metadata file's location, its JSON, what was rewritten). ``only``: move these
        paths only (and the table's location), whatever else names another ref."""
        metadata = json.loads(self._read(location, ref))
        if only is None and not self._traces(metadata, location, ref):
            return None
        run = _Run(ref, deep=only is None and self._deep(metadata, location, ref), only=only)

        def move(path, ref):
            return self.paths.move(path, ref) if only is None or path in only else path

        new = dict(metadata)
        new["location"] = self.paths.move(metadata.get("location"), ref)
        props = dict(metadata.get("properties") or {})
        for key in PATH_PROPERTIES:
            if key in props:
                props[key] = self.paths.move(props[key], ref)
        if "properties" in metadata:
            new["properties"] = props
        snapshots = []
        for snap in metadata.get("snapshots") or []:
            snap = dict(snap)
            if snap.get("manifest-list"):
                snap["manifest-list"] = self._manifest_list(run, snap["manifest-list"])
            elif snap.get("manifests"):  # format 1 without a manifest list
                snap["manifests"] = [self._manifest(run, m)[0] for m in snap["manifests"]]
            snapshots.append(snap)
        if "snapshots" in metadata:
            new["snapshots"] = snapshots
        for key in ("statistics", "partition-statistics"):
            if key in metadata:
                new[key] = [{**s, "statistics-path": move(s.get("statistics-path"), ref)}
                            for s in metadata[key] or []]
        history = [{**e, "metadata-file": move(e.get("metadata-file"), ref)}
                   for e in metadata.get("metadata-log") or []]
        history.append({"timestamp-ms": metadata.get("last-updated-ms", 0),
                        "metadata-file": self.paths.move(location, ref)})
        keep = int(props.get("write.metadata.previous-versions-max", 100) or 100)
        new["metadata-log"] = history[-keep:] if keep > 0 else []
        new["last-updated-ms"] = max(int(time.time() * 1000),
                                     int(metadata.get("last-updated-ms", 0)) + 1)
        directory = (props.get("write.metadata.path")
                     or new["location"].rstrip("/") + "/metadata")
        after = next_metadata_location(directory, location)
        self._write(after, json.dumps(new, separators=(",", ":")).encode())
        return after, new, run

    # --- tables of the catalog -----------------------------------------------------------------
    def table(self, ref: str, db: str, name: str) -> Anchored | None:
        """Anchor ``db.name`` on branch ``ref`` (its catalog entry written on ``ref``, staged);
        None when it names no other ref or is not an Iceberg table."""
        return decided_again(self._table, ref, db, name)

    def _table(self, ref: str, db: str, name: str) -> Anchored | None:
        for _ in range(ATTEMPTS):
            self.store.latest(ref)  # the branch as it is now (a merge just made, another server)
            with self.store.read(ref) as view:
                table = CatalogReader(view, ttypes).table(db, name)
            if table is None or not is_iceberg(table):
                return None
            before = table.parameters[METADATA_LOCATION]
            done = self.anchor_metadata(before, ref)
            if done is None:
                return None
            after, metadata, run = done
            with self.store.write(ref) as txn:
                writer = CatalogWriter(txn, ttypes)
                current = writer.table(db, name)
                if current is None or (current.parameters or {}).get(METADATA_LOCATION) != before:
                    continue  # committed to meanwhile: anchor what it is now
                params = dict(current.parameters)
                params[PREVIOUS_METADATA_LOCATION] = self.paths.move(before, ref)
                params[METADATA_LOCATION] = after
                for key in PATH_PROPERTIES:
                    if key in params:
                        params[key] = self.paths.move(params[key], ref)
                current.parameters = params
                if current.sd is not None and current.sd.location:
                    current.sd.location = self.paths.move(current.sd.location, ref)
                writer.put(table_key(db, name), current)
            lists = sum(1 for old, new in run.lists.items() if old != new)
            manifests = sum(1 for old, (new, _) in run.manifests.items() if old != new)
            log.info("anchored %s.%s on %s: %s -> %s (%d manifest lists, %d manifests "
                     "written again)", db, name, ref, before, after, lists, manifests)
            return Anchored(ref, f"{db}.{name}", before, after, lists, manifests)
        raise RuntimeError(f"table {db}.{name} on {ref} kept changing while it was anchored")

    def tables(self, ref: str, names: list[tuple[str, str]] | None = None,
               through: str | None = None) -> list[Anchored]:
        """Anchor the Iceberg tables of branch ``ref`` (``names``: only these (db, table)
        pairs; ``through``: only tables whose metadata names that ref)."""
        if names is None:
            names = self.naming(ref, through)
        elif through is not None:
            names = [(db, name) for db, name in names
                     if self.names_ref(ref, db, name, through)]
        done = []
        for db, name in names:
            anchored = self.table(ref, db, name)
            if anchored is not None:
                done.append(anchored)
        return done

    def naming(self, ref: str, through: str | None = None) -> list[tuple[str, str]]:
        """The Iceberg tables of ``ref`` ((db, table) pairs), with ``through`` only those whose
        metadata names that ref."""
        return [(db, name) for db, name, location in self.iceberg_tables(ref)
                if through is None or through in self.refs_named(location, ref)]

    def iceberg_tables(self, ref: str) -> list[tuple[str, str, str]]:
        """The Iceberg tables of ``ref`` as it is now: (db, table, metadata location)."""
        out = []
        self.store.latest(ref)
        with self.store.read(ref) as view:
            reader = CatalogReader(view, ttypes)
            for db in reader.database_names():
                for name, raw in reader.tables(db):
                    table = codec.decode(ttypes.Table, raw)
                    if is_iceberg(table):
                        out.append((db, name, table.parameters[METADATA_LOCATION]))
        return out

    def refs_named(self, location: str, ref: str) -> frozenset[str]:
        """The refs whose paths the metadata file at ``location`` names (its own location,
        manifest lists, metadata log, statistics; read through ``ref``), kept by location:
        a metadata file is written once, so branches that share a table's state read it once
        (what a branch's deletion asks of every other branch)."""
        hit = self._named.get(location)
        if hit is None:
            metadata = json.loads(self._read(location, ref))
            refs = (ref_of(self.paths, p) for p in self._paths(metadata, location))
            hit = frozenset(r for r in refs if r is not None)
            if len(self._named) >= 100_000:
                self._named.clear()
            self._named[location] = hit
        return hit

    def names_ref(self, ref: str, db: str, name: str, other: str) -> bool:
        """Whether table ``db.name`` on ``ref`` names files through ``other`` (its metadata
        file: location, manifest lists, metadata log, statistics)."""
        self.store.latest(ref)
        with self.store.read(ref) as view:
            table = CatalogReader(view, ttypes).table(db, name)
        if table is None or not is_iceberg(table):
            return False
        return other in self.refs_named(table.parameters[METADATA_LOCATION], ref)


class Misplaced(Exception):
    """A commit whose new files are on another branch and cannot be moved to its own."""


def ref_of(paths: RefPaths, location: str) -> str | None:
    """The ref a path of the repository names (None: not a path of it)."""
    for head in paths.heads:
        if location.startswith(head):
            return location[len(head):].partition("/")[0]
    return None


def new_files(anchor: Anchor, before: dict, after: dict, after_location: str) -> set[str]:
    """The files a commit from metadata ``before`` to ``after`` (at ``after_location``)
    wrote: its metadata file, its new snapshots' manifest lists, the manifests they added and
    the data and delete files added in them, new statistics files (each read where its path
    says: they are new, so they are there)."""
    had = {s["snapshot-id"] for s in before.get("snapshots") or []}
    new_ids = {s["snapshot-id"] for s in after.get("snapshots") or []} - had
    out = {after_location}
    for snap in after.get("snapshots") or []:
        if snap["snapshot-id"] not in new_ids:
            continue
        lists = [snap["manifest-list"]] if snap.get("manifest-list") else []
        out.update(lists)
        manifests = list(snap.get("manifests") or [])
        for path in lists:
            _, _, records = read_container(anchor._read(path, None))
            manifests += [r["manifest_path"] for r in records
                          if r.get("added_snapshot_id") in new_ids]
        for path in manifests:
            out.add(path)
            _, _, entries = read_container(anchor._read(path, None))
            for e in entries:
                if e.get("status") == 1 and e.get("snapshot_id") in new_ids | {None}:
                    out.add(e["data_file"]["file_path"])
    old_stats = {s.get("statistics-path") for key in ("statistics", "partition-statistics")
                 for s in before.get(key) or []}
    out.update(s.get("statistics-path") for key in ("statistics", "partition-statistics")
               for s in after.get(key) or [] if s.get("statistics-path") not in old_stats)
    return {p for p in out if isinstance(p, str)}


def relocate_commit(store, branch: str, before_location: str | None,
                    after_location: str) -> str:
    """A Hive-catalog client's commit on ``branch`` whose new files went to another branch of
    the repository (it writes where the table's metadata file says, and a table ``branch``
    inherited names its source branch): the new files are moved to ``branch`` (copied there
    by lakeFS, removed from the other branch, where they were uncommitted) and a metadata file
    naming them on ``branch`` is written; its location. The table's own location moves to
    ``branch`` too, so that the client's next commit writes there at once. A commit that wrote
    nothing there (it points the table at files committed on the other branch: a rollback, a
    registration) is left as it is. Misplaced when they cannot be moved: then they are
    removed from the other branch all the same."""
    anchor = Anchor(store)
    lakefs = anchor.lakefs
    paths = anchor.paths
    after_ref = ref_of(paths, after_location)
    if after_ref is None:
        return after_location
    after = json.loads(anchor._read(after_location, None))
    # ``before`` as it is named: the table may have been anchored on ``branch`` since the
    # client read it (lakeFS's post-merge hook), and its file is then on ``branch`` only
    before = json.loads(anchor._read(before_location, None)) if before_location else {}
    if after_ref == "@" and not anchor._traces(after, after_location, branch):
        return after_location  # the ref-free form, naming nothing of another ref: as it is
    # the commit's own files that another ref names: a client that read the table before
    # it was moved to ``branch`` wrote its data under the old location, whatever the
    # metadata file's own path. Read even when the metadata file names nothing of another ref
    # itself: a client whose commit lost to the table anchored on ``branch`` meanwhile
    # (lakeFS's post-merge hook) retries over it, its new manifest list on ``branch`` but the
    # manifests and data files of its first try (kept, not written again) where it read
    written = {p: ref_of(paths, p) for p in new_files(anchor, before, after, after_location)}
    files = {p for p, ref in written.items() if ref not in (None, branch, "@")}
    if not files:
        return after_location
    others = {ref_of(paths, p) for p in files}
    if len(others) > 1:
        raise Misplaced(f"files of this commit are on several branches: {sorted(others)}")
    other = others.pop()
    heads = tuple(f"{h}{other}/" for h in paths.heads)
    keys = sorted(next(p[len(h):] for h in heads if p.startswith(h)) for p in files)
    staged = set()
    try:
        prefix = posixpath.commonpath(keys) if len(keys) > 1 else posixpath.dirname(keys[0])
        staged = lakefs.staged_data(other, prefix.rstrip("/") + "/" if prefix else "")
        if not set(keys) & staged:  # files already there (a rollback, a registration): as is
            return after_location
        if set(keys) - staged:
            raise Misplaced(f"files of this commit are already committed on {other}: "
                            + ", ".join(sorted(set(keys) - staged)[:3]))
        lakefs.copy_data(other, branch, keys)
        # its files on ``branch`` are walked too: they may name those moved (that retry's
        # manifest list), and are written again naming where they went
        done = anchor.anchor_metadata(
            after_location, branch,
            only=files | {p for p, ref in written.items() if ref == branch})
        log.info("moved %d files of a commit on %s from %s: %s", len(keys), branch, other,
                 done[0])
        return done[0]
    except Misplaced:
        raise
    except Exception as exc:  # noqa: BLE001 - refused: nothing may stay on the other branch
        raise Misplaced(str(exc)) from exc
    finally:
        ours = [k for k in keys if k in staged]
        if ours:
            lakefs.delete_data_paths(other, ours)


def anchors(store) -> bool:
    """Whether ``store``'s Iceberg tables are anchored: a lakeFS repository's."""
    return is_lakefs(store)


def merged_tables(changes) -> list[tuple[str, str]]:
    """The (db, table) pairs a merge added or changed (``changes``: its entity changes)."""
    return sorted({tuple(c.path[:2]) for c in changes or ()
                   if c.kind == "table" and c.change != "removed"})


def anchor_after_merge(store, dest: str, source: str, names, author: str = ""):
    """Anchor on ``dest`` the Iceberg tables among ``names`` ((db, table) pairs a merge of
    ``source`` brought) and commit them: (the tables anchored, the commit or None). A failure
    is logged and leaves the merge as it is: its tables read as long as ``source`` lives, and
    lakeFS's pre-delete-branch hook anchors them before it goes."""
    if not anchors(store) or not names:
        return [], None
    if not has_pyiceberg():
        log.warning("Iceberg tables merged into %s were not anchored there: install "
                    "'hms-proxy[iceberg]' (pyiceberg)", dest)
        return [], None
    try:
        done = Anchor(store).tables(dest, names)
        if not done:
            return [], None
        commit = store.commit(
            dest, f"hms-proxy: {len(done)} Iceberg table{'' if len(done) == 1 else 's'} merged "
                  f"from {source} anchored on {dest}", author or "hms-proxy",
            {"hms-proxy.anchored": ",".join(a.table for a in done)})
    except Exception as exc:  # noqa: BLE001 - the merge itself is done
        log.warning("Iceberg tables merged from %s into %s were not anchored on %s: %s",
                    source, dest, dest, exc)
        return [], None
    return done, commit


def anchor_before_delete(store, doomed: str, skip=lambda name: False) -> list[Anchored]:
    """Anchor, on every other branch, the Iceberg tables that name files through branch
    ``doomed``, which is about to be deleted; a branch with nothing else uncommitted gets a
    commit, another keeps them staged with its own changes. ``skip``: branches not to look at
    (temporary ones)."""
    if not anchors(store) or not has_pyiceberg():
        return []
    anchor = Anchor(store)
    raw = unwrap(store)
    others = [b.name for b in store.list_branches() if b.name != doomed and not skip(b.name)]

    def look(name: str) -> list[tuple[str, str]]:
        watched = raw.watched(name) if hasattr(raw, "watched") else True
        try:
            return anchor.naming(name, doomed)
        finally:
            if not watched:
                raw.unwatch(name)

    # every branch is looked at (a cherry-pick brings files without ancestry), several at a
    # time: lakeFS waits for the hook (60 s) before it deletes
    with ThreadPoolExecutor(min(8, max(1, len(others)))) as pool:
        found = list(pool.map(look, others))
    done: list[Anchored] = []
    for name, names in zip(others, found):
        if not names:
            continue
        dirty = _uncommitted(store, name)
        here = anchor.tables(name, names)
        if here and not dirty:
            store.commit(name, f"hms-proxy: {len(here)} Iceberg table"
                               f"{'' if len(here) == 1 else 's'} anchored on {name} before "
                               f"branch {doomed} was deleted", "hms-proxy",
                         {"hms-proxy.anchored": ",".join(a.table for a in here)})
        done += here
    return done


def _uncommitted(store, branch: str) -> bool:
    raw = unwrap(store)
    if hasattr(raw, "uncommitted"):
        return raw.uncommitted(branch)
    return next(iter(store.staged(branch)), None) is not None


__all__ = ["Anchor", "Anchored", "Misplaced", "anchor_after_merge", "anchor_before_delete",
           "anchors", "is_iceberg", "merged_tables", "relocate_commit"]
