"""Reading commits: values, listing pages and diffs, cached by commit id (commits never
change)."""
from __future__ import annotations

from collections.abc import Iterator

from kvmodel.store.contract import (
    CommitID,
    Key,
    Value,
)
from kvmodel.store.errors import (
    RefNotFound,
)
from kvmodel.store.lakefs import log as lakefs_log
from kvmodel.store.lakefs.common import (
    _ABSENT,
    _COMMIT_ID,
    CONNECT_TIMEOUT,
    PAGE,
    PREFIX,
    VERSIONING_TIMEOUT,
    _after_for,
    _common_prefix,
    _inline,
    _key,
    _path,
)


class CommittedReads:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the package doc)."""

    def _paged(self, fn, *args, **kwargs):
        if fn == self.api.refs.diff_refs:
            kwargs.setdefault("_request_timeout", (CONNECT_TIMEOUT, VERSIONING_TIMEOUT))
        after = ""
        while True:
            page = self.api(fn, *args, after=after, amount=PAGE, **kwargs)
            yield from page.results
            if not page.pagination.has_more:
                return
            after = page.pagination.next_offset

    def _commit_diff(self, left: CommitID, right: CommitID, prefix: str = "") -> tuple:
        """lakeFS's two-dot diff between two commits under ``prefix``, objects only, as
        ``(path, type)`` pairs: asked once, then kept (a merge needs each side's twice). A
        diff of the whole repository kept already answers any prefix."""
        hit = self._diffs.get((left, right, prefix))
        if hit is None and prefix:
            whole = self._diffs.get((left, right, ""))
            if whole is not None:
                hit = tuple(e for e in whole if e[0].startswith(prefix))
        if hit is not None:
            return hit
        extra = {"prefix": prefix} if prefix else {}
        out = tuple((d.path, d.type) for d in self._paged(self.api.refs.diff_refs, left, right,
                                                            type="two_dot", **extra)
                    if d.path_type == "object")
        if _COMMIT_ID.fullmatch(left) and _COMMIT_ID.fullmatch(right):  # not a branch name
            self._diffs.put((left, right, prefix), out, sum(96 + len(p) for p, _ in out))
        return out

    def _committed_value(self, commit: CommitID, key: Key) -> Value | None:
        hit = self._values.get((commit, key))
        if hit is not None:
            return None if hit == _ABSENT else hit
        directory = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
        bound = self._tails.get((commit, directory))
        if bound is not None and key >= bound:
            return None  # nothing at or after ``bound`` in its directory at that commit
        if directory:
            return self._probe(commit, directory, key)
        return self._stat_value(commit, key)

    def _stat_value(self, commit: CommitID, key: Key) -> Value | None:
        try:
            stats = self.api(self.api.objects.stat_object, commit, _path(key),
                             user_metadata=True)
        except RefNotFound:
            self._values.put((commit, key), _ABSENT, 64 + len(key))
            return None
        value = self._value_of(commit, stats)
        self._values.put((commit, key), value, 64 + len(key) + len(value))
        return value

    def _probe(self, commit: CommitID, directory: Key, key: Key) -> Value | None:
        """``key``'s value at ``commit`` by a listing of its directory from it (one call, as a
        stat): the first object at or after it says whether it is there, and when there is
        none, no key after it is either, which is kept: a new partition's key, asked before
        it is added (each add_partition asks), is answered from there until the next
        commit."""
        page = self.api(self.api.objects.list_objects, commit, user_metadata=True,
                        after=_after_for(_path(key)), amount=2, prefix=PREFIX + directory)
        listed = [st for st in page.results if st.path_type == "object"]
        found = [st for st in listed if _key(st.path) >= key]
        if not found and listed:  # only paths before it (_after_for's margin): ask it
            return self._stat_value(commit, key)
        if not found:
            self._tails.put((commit, directory), key, 96 + len(key))
            self._values.put((commit, key), _ABSENT, 64 + len(key))
            return None
        if _key(found[0].path) != key:
            self._values.put((commit, key), _ABSENT, 64 + len(key))
            return None
        value = self._value_of(commit, found[0])
        self._values.put((commit, key), value, 64 + len(key) + len(value))
        return value

    def _value_of(self, ref: str, stats) -> bytes:
        """An object's value: inline in its metadata, cached by checksum, or read."""
        value = _inline(stats)
        if value is not None:
            return value
        hit = self._values.get(("checksum", stats.checksum))
        if hit is not None:
            return hit
        data = self.api(self.api.objects.get_object, ref, stats.path)
        value = bytes(data)
        self._values.put(("checksum", stats.checksum), value, 64 + len(value))
        return value

    def _committed_values(self, commit: CommitID, keys: list[Key]) -> list[Value | None]:
        """Many keys: a directory with many of them asked for is listed instead (one call a
        page) of being read key by key."""
        out: dict[Key, Value | None] = {}
        missing = []
        for k in keys:
            hit = self._values.get((commit, k))
            if hit is None:
                missing.append(k)
            else:
                out[k] = None if hit == _ABSENT else hit
        groups: dict[str, list[Key]] = {}
        for k in missing:
            groups.setdefault(k.rsplit("/", 1)[0] + "/" if "/" in k else "", []).append(k)
        for directory, members in groups.items():
            if len(members) >= 16:
                self._committed_run(commit, directory, sorted(members), out)
            else:
                for k in members:
                    out[k] = self._committed_value(commit, k)
        return [out[k] for k in keys]

    def _committed_run(self, commit: CommitID, directory: str, members: list[Key],
                       out: dict) -> None:
        """Values of many keys of one directory (sorted): listing pages that start at the
        first key not known yet, each answering every key up to its last entry, so the cost
        follows how the keys cluster, not how large the directory is."""
        i = 0
        while i < len(members):
            entries, nxt = self._page(commit, PREFIX + directory, _after_for(_path(members[i])))
            if not entries and nxt is not None:  # nothing to bound it by: one key at a time
                out[members[i]] = self._committed_value(commit, members[i])
                i += 1
                continue
            found = {_key(path): value for path, value in entries}
            last = _key(entries[-1][0]) if nxt is not None else None  # None: to the end
            while i < len(members) and (last is None or members[i] <= last):
                key = members[i]
                out[key] = found.get(key)
                if out[key] is None:
                    self._values.put((commit, key), _ABSENT, 64 + len(key))
                i += 1

    def _committed_scan(self, commit: CommitID, start: Key, end: Key | None
                        ) -> Iterator[tuple[Key, Value]]:
        prefix = _common_prefix(start, end)
        after = _after_for(_path(start)) if start != prefix else ""
        while True:
            page = self._page(commit, PREFIX + prefix, after)
            for path, value in page[0]:
                key = _key(path)
                if key < start:
                    continue
                if end is not None and key >= end:
                    return
                yield key, value
            if page[1] is None:
                return
            after = page[1]

    def _page(self, commit: CommitID, prefix: str, after: str):
        """([(path, value)], next after or None) of one listing page at a commit (cached)."""
        cache_key = (commit, prefix, after)
        hit = self._pages.get(cache_key)
        if hit is not None:
            return hit
        listing = self.api(self.api.objects.list_objects, commit, user_metadata=True,
                           after=after, amount=PAGE, prefix=prefix)
        entries, size = [], 64
        for stats in listing.results:
            if stats.path_type != "object":
                continue
            value = self._value_of(commit, stats)
            entries.append((stats.path, value))
            self._values.put((commit, _key(stats.path)), value, 64 + len(value))
            size += len(stats.path) + len(value) + 32
        nxt = listing.pagination.next_offset if listing.pagination.has_more else None
        result = (entries, nxt)
        self._pages.put(cache_key, result, size)
        return result

    # --- the write log at a ref ----------------------------------------------------------------
    def _read_log(self, ref: str) -> tuple[lakefs_log.Plan, dict]:
        """The log under ``_hms_log/`` at ``ref`` (a commit, or a branch: its staged objects
        too), every directory: what applies, in order, and the changes of each live entry (by
        ``cache_key``). Fold entries and live entries are read once each (cached by path and
        checksum: an object never changes under both)."""
        objects = []
        for stats in self._paged(self.api.objects.list_objects, ref, prefix=lakefs_log.LOG,
                                 delimiter="", user_metadata=True):
            if stats.path_type != "object":
                continue
            obj = lakefs_log.listed(stats.path, stats.metadata, stats.checksum,
                                    int(stats.mtime or 0))
            if obj is not None:
                objects.append(obj)
        folds = {o.cache_key: self._folds.get(o.cache_key) for o in objects
                 if o.needs_reading}
        unread = [o for o in objects if o.needs_reading and folds[o.cache_key] is None]
        for obj, data in self._read_objects(ref, unread):
            folds[obj.cache_key] = self._folds[obj.cache_key] = \
                lakefs_log.decode_fold(data, obj.path)
        plan = lakefs_log.plan(objects, folds)
        contents = {o.cache_key: self._entries.get(o.cache_key) for o in plan.live}
        unread = [o for o in plan.live if contents[o.cache_key] is None]
        for obj, data in self._read_objects(ref, unread):
            contents[obj.cache_key] = self._entries[obj.cache_key] = \
                lakefs_log.decode(data, obj.path)
        return plan, contents

    def _read_objects(self, ref: str, objects: list) -> list:
        """(object, bytes) of log objects at ``ref``, read in parallel."""
        def load(obj):
            return obj, bytes(self.api(self.api.objects.get_object, ref, obj.path))

        if len(objects) <= 1:
            return [load(o) for o in objects]
        return list(self._pool.map(load, objects))

    def _commit_log(self, commit: CommitID) -> "_CommitLog":
        """The live log entries a commit holds, applied (normally none: a fold before every
        commit leaves the per-key objects alone; a commit made around our folds holds some)."""
        hit = self._commit_logs.get(commit)
        if hit is None:
            plan, contents = self._read_log(commit)
            overlay: dict = {}
            for obj in plan.live:
                overlay.update(contents[obj.cache_key])
            hit = _CommitLog(overlay, sorted(overlay))
            self._commit_logs.put(commit, hit, 64 + sum(len(k) + len(v or b"") + 32
                                                        for k, v in overlay.items()))
        return hit

    def _commit_overlay(self, commit: CommitID) -> "_CommitLog":
        """What a commit's per-key objects read with: the newest variant of each key that has
        any (:mod:`kvmodel.store.lakefs.variants`), and the live log entries it holds over
        them."""
        logged = self._commit_log(commit)
        variants = self._commit_variants(commit)
        if not variants:
            return logged
        hit = self._overlays.get(commit)
        if hit is None:
            overlay = dict(variants.newest)
            overlay.update(logged.overlay)
            hit = _CommitLog(overlay, sorted(overlay))
            self._overlays.put(commit, hit, 64 + sum(len(k) + len(v or b"") + 32
                                                     for k, v in overlay.items()))
        return hit


class _CommitLog:
    """A commit's live log entries, applied: ``overlay`` (key -> value or None) and its keys,
    sorted."""

    __slots__ = ("overlay", "keys")

    def __init__(self, overlay: dict, keys: list):
        self.overlay, self.keys = overlay, keys
