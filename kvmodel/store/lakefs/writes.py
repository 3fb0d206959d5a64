"""Writes, commits and resets: a write transaction as one log entry, a commit folding the log
into per-key objects."""
from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from kvmodel.store.contract import (
    BranchName,
    Commit,
    CommitID,
    DiffEntry,
    Key,
    RefExpr,
    ResolvedRef,
    Value,
)
from kvmodel.store.errors import (
    HeadMoved,
    NothingToCommit,
    ProtectedRef,
    ReadOnlyRef,
    RefNotFound,
    WriteConflict,
)
from kvmodel.store.lakefs import log as lakefs_log
from kvmodel.store.lakefs.api import LakeFSError, LakeFSTimeout, LakeFSUnreachable, PathTaken
from kvmodel.store.lakefs.common import (
    CONNECT_TIMEOUT,
    INLINE_LIMIT,
    JOURNAL,
    META_AUTHOR,
    META_CREATED,
    META_VALUE,
    NOT_DATA,
    PAGE,
    PREFIX,
    TEMP_BRANCH,
    VARIANTS,
    VERSIONING_TIMEOUT,
    _path,
)
from kvmodel.store.lakefs.groups import Group, Lanes
from kvmodel.store.lakefs.peers import Peers, PeerPassed, decode_changes, encode_changes, \
    store_error
from kvmodel.store.lakefs.variants import EMPTY as EMPTY_VARIANTS
from kvmodel.store.lakefs.views import _BranchState, _Snapshot, _Write


REBASES = 5  # times a group that lost its slot to writes of other keys is taken after them
ENTRIES_SENT = 4 << 20  # bytes of changes a handed write's answer carries at most
DRAIN_S = 5.0  # a write to hand on waits this long for this server's groups in flight
CATCH_UP_S = 10.0  # a handed write refused waits this long for what refused it to land


def _walk_back(name: str, state: _BranchState, seq: int, skip=frozenset()):
    """``state``'s log entries of branch ``name``, walked back from the end (a busy log is
    long) to the first at or before slot ``seq``: (the keys written by those after it, but
    the entries whose nonce is in ``skip``; that entry, or None; the first entry after it, or
    None)."""
    keys: set = set()
    first_after = None
    for obj in reversed(state.entries):
        if obj.directory != name or obj.seq is None:
            continue
        if obj.seq <= seq:
            return keys, obj, first_after
        first_after = obj
        if obj.nonce not in skip:
            keys.update(state.contents.get(obj.cache_key, {}))
    return keys, None, first_after


class Writes:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the package doc)."""

    @contextmanager
    def read(self, ref: RefExpr):
        self._check_open()
        yield self._view(ref)

    def get(self, ref: RefExpr, key: Key) -> Value | None:
        return self._view(ref).get(key)

    def token(self, ref: RefExpr) -> object:
        return self._view(ref).token

    @contextmanager
    def write(self, branch: BranchName):
        self._check_open()
        name = branch if self._fresh(branch) is not None else self.resolve(branch).branch
        if name is None:
            raise ReadOnlyRef(f"{branch!r} is not a branch: only branches can be written")
        lanes = self._lanes(name)
        owner = None
        with self._branch_lock(name):
            lanes.wait_open()
            state, read_at = self._state_to_write(name)
            # another server writes this branch's log: hand it the write (peers.py), when
            # none of ours is in flight (a write decided over one could outlive it)
            if self._peers is not None and not name.startswith(TEMP_BRANCH):
                owner = self._peers.owner(state.writers)
                if owner is not None and lanes.busy():  # ours land first, then we hand
                    until = time.monotonic() + DRAIN_S
                    while lanes.busy() and time.monotonic() < until:
                        lanes.cond.wait(0.05)
                    if lanes.busy():
                        owner = None
                    else:  # what landed meanwhile is in the state read again
                        state, read_at = self._state_to_write(name)
            # over the changes of the groups not acknowledged yet (kvmodel.store.lakefs.groups)
            seen = state if owner is not None else lanes.over(state)
            txn = _Write(self, ResolvedRef(branch, seen.head, name, None), seen, None)
            yield txn
            if not txn.changes:
                return
            # lakeFS applies a new protection rule to writes only after its settings cache
            # expires (1 s, seconds in practice): ask for the rules themselves (ours are
            # always current; another server's within RULES_TTL)
            if self._protected(name):
                raise ProtectedRef(f"branch {name!r} is protected: it changes only by merges")
            if time.monotonic() - read_at > lakefs_log.RETAIN / 2:
                # a fold may have freed slots this old state does not know were used
                self._outdate(name)
                raise WriteConflict(f"branch {name!r} was read too long ago; read again")
            if owner is None:
                group, leads = self._enter(name, lanes, state, txn.changes, txn.reads,
                                           txn.ranges)
        if owner is not None:
            try:
                self._hand(owner, name, state, txn)
                return
            except PeerPassed:  # not taken there: made here, over what it was decided on
                with self._branch_lock(name):
                    lanes.wait_open()
                    group, leads = self._enter(name, lanes, state, txn.changes, txn.reads,
                                               txn.ranges, since=state)
        self._fly(name, lanes, state, group, leads)

    def _state_to_write(self, name: str) -> tuple[_BranchState, float]:
        """The branch's state a write transaction reads, and when it was read: a refresh's
        state may come marked stale (another thread's write moved the branch meanwhile) but
        is no older than the refresh."""
        asked = time.monotonic()
        state = self._fresh(name, news=True)
        read_at = state.checked if state is not None else asked
        return state or self._refresh(name), read_at

    def _enter(self, name: str, lanes: Lanes, state: _BranchState, changes: dict, reads,
               ranges, since: _BranchState | tuple | None = None) -> tuple[Group, bool]:
        """A decided write into the branch's forming group (the branch's lock held): (its
        group, whether it leads it: then it has taken off). ``since``: the write was decided
        over that state (or (head, slot, nonce) of it) and not over the groups in flight
        here: it joins only when nothing written after it changed what it read, else
        :class:`WriteConflict`."""
        if since is not None:
            self._check_since(name, lanes, since, reads, ranges)
            seen = self._branches.get(name) or state  # what it was checked against
        else:
            seen = state
        group, leads = lanes.join(changes, reads, ranges,
                                  (seen.head, seen.last_seq, seen.last_nonce))
        pause = lanes.pause() if leads else 0.0
        if pause:  # another server writes the branch too: give its next upload a chance
            lanes.cond.wait(pause)  # (the lock is released meanwhile: writes join)
        if leads and not lanes.take_off(group, lambda: self._chain_end(name, state),
                                        lambda g: self._check_unseen(name, lanes, g)):
            raise group.error
        return group, leads

    def _check_unseen(self, name: str, lanes: Lanes, group: Group) -> None:
        """:class:`WriteConflict` when the branch's state now (where ``group`` goes, after
        it) holds another server's entries that its members did not see (they came with a
        refresh after they read the state) and that changed what they read (lock held)."""
        current = self._branches.get(name)
        if current is None:
            return  # placed after the state it was decided over: a taken slot says
        own = lanes.own()
        for head, seq, nonce in group.seen:
            keys = self._foreign_since(name, current, head, seq, nonce, own)
            if keys is None or group.touched_by(keys):
                raise WriteConflict(f"branch {name!r} changed what this write read while "
                                    "it waited to be uploaded; read again")

    @staticmethod
    def _foreign_since(name: str, state: _BranchState, head: str, seq: int, nonce: str,
                       own: set) -> set | None:
        """The keys written by the entries of ``state``'s chain after slot ``seq`` (its
        entry's ``nonce``, at ``head``) but those of this server's groups (``own``); None
        when that end is not in ``state``'s chain (another server's fold or commit since:
        what it wrote is not known here)."""
        if head != state.head:
            return None
        if seq >= state.last_seq:
            return set()  # nothing after it here (a later state's slot is taken: a 412)
        keys, at, first_after = _walk_back(name, state, seq, skip=own)
        if at is not None and at.seq == seq:
            return keys if at.nonce == nonce else None
        # its end is not an entry here (a fold entry, or nothing): the first after it says
        if first_after is None or first_after.pred not in (None, nonce or None):
            return None
        return keys

    def _fly(self, name: str, lanes: Lanes, state: _BranchState, group: Group,
             leads: bool) -> None:
        """After :meth:`_enter`, the branch's lock released: the leader uploads its group,
        beside those of the groups before it (groups.py); every member is answered when it
        and those before it landed."""
        if leads:
            error = None
            try:
                try:
                    group.checksum = self._upload_entry(name, group)
                except WriteConflict as lost:  # to another server's writes: of other keys?
                    group.checksum = self._rebase(name, lanes, group, lost)
            except BaseException as exc:  # noqa: BLE001 - it may have landed or not: read again
                error = exc
                self._outdate(name)
            with self._branch_lock(name):
                lanes.land(group, error, lambda g: self._install(name, state, g))
        group.done.wait()  # answered in slot order
        if group.error is not None:
            raise group.error

    # --- writes handed to the server that writes the branch (peers.py) ----------------------
    def serve_peers(self, host: str = "0.0.0.0", port: int = 0,
                    advertise: str | None = None) -> str:
        """Take the writes other servers of this repository hand here, and hand ours to the
        server that writes a branch (:mod:`kvmodel.store.lakefs.peers`); this server's name
        (``id@host:port``)."""
        if self._peers is None:
            self._peers = Peers(self._take_handed, self.config.secret_access_key,
                                self.repository, host, port, advertise)
        return self._peers.name

    def _hand(self, owner: str, name: str, state: _BranchState, txn) -> None:
        """Hand ``txn``'s write to the server ``owner``, decided over ``state``: made there
        when this returns (its entries applied to the branch's state here);
        :class:`PeerPassed` when it was not taken; the store error it answered."""
        request = {"branch": name, "head": state.head, "seq": state.last_seq,
                   "nonce": state.last_nonce, "changes": encode_changes(txn.changes),
                   "reads": sorted(txn.reads), "ranges": [list(r) for r in txn.ranges]}
        try:
            answer = self._peers.hand(owner, request)
        except LakeFSUnreachable:
            self._outdate(name)
            raise
        error = answer.get("error")
        if error == "unknown":
            self._outdate(name)
            raise LakeFSUnreachable(answer.get("message", "the write may have been made"))
        if error is not None:
            if not (error == "store" and self._apply_handed(name, answer.get("entries"))):
                self._outdate(name)  # (else its view has what refused the write: read on)
            raise store_error(answer)
        # announced in this server's Redis: the owner announced it in its own, and when that
        # is not ours (servers of another machine, or without Redis) this server's other
        # workers must not read the branch without it for up to stale_after
        news = self._owners_news(answer.get("news"))
        if news is None:
            news = self._announce(name)
        if not self._apply_handed(name, answer.get("entries"), news):
            self._outdate(name)  # its next read reads what was made

    def _owners_news(self, news) -> int | None:
        """The change count the owner's announcement of a handed write made, when it made it
        in this server's Redis (``news``: [the Redis server's run id, the count])."""
        if not (isinstance(news, list) and len(news) == 2 and isinstance(news[1], int)):
            return None
        mine = self._redis_id()
        return news[1] if mine is not None and news[0] == mine else None

    def _apply_handed(self, name: str, entries, news: int | None = None) -> bool:
        """The entries a peer answered (the chain from the state a handed write was decided
        over to the entry holding it, with their changes) applied to the branch's state,
        when they carry its chain on; whether they did. ``news``: the Redis change count
        this server's announcement of them made."""
        if not isinstance(entries, list) or not entries:
            return False
        try:
            listed, contents = [], {}
            for e in entries:
                obj = lakefs_log.Listed(lakefs_log.slot_path(name, int(e["seq"])), name,
                                        int(e["seq"]), int(e["time"]), str(e["checksum"]),
                                        nonce=str(e["nonce"]), pred=e.get("pred"),
                                        writer=str(e.get("writer", "")))
                listed.append(obj)
                contents[obj.cache_key] = decode_changes(e["changes"])
        except (KeyError, TypeError, ValueError):
            return False
        with self._lock:
            current = self._branches.get(name)
            if current is None:
                return False
            # (its own entries end at last_seq: those after it are new to it)
            new = [o for o in listed if o.seq > current.last_seq]
            tip = current.last_nonce or None
            for obj in new:
                if obj.pred is not None and obj.pred != tip:
                    return False
                tip = obj.nonce
            if not new:
                return True
            self._entries.update(contents)
            state = self._extend(name, current, new, current.checked, contents)
            state.next_slot = max(state.next_slot, state.last_seq + 1)
            # the changes announced in Redis it holds: those ``current`` held, and ours of
            # these entries when none was announced between (the owner's announcement in the
            # same Redis, another worker's write): else a read asks lakeFS again
            state.news = news if news is not None and current.news == news - 1 \
                else current.news
            self._put_state(name, state)
        return True

    def _take_handed(self, name: str, request: dict) -> dict:
        """A write another server decided and handed here (peers.py): joined into this
        server's groups when nothing written after the state it was decided over changed what
        it read; answered when it landed, with the entries from that state to it."""
        if self._closed or name.startswith(TEMP_BRANCH):
            raise PeerPassed("this server does not take writes of that branch")
        changes = decode_changes(request["changes"])
        reads = set(request.get("reads") or ())
        ranges = [(str(a), None if b is None else str(b)) for a, b in request.get("ranges") or ()]
        since = (str(request["head"]), int(request["seq"]), str(request["nonce"] or ""))
        if not changes or not all(isinstance(k, str) for k in reads):
            raise ValueError("a write with no changes, or keys that are not strings")
        if name not in self._branches and self._branch(name) is None:
            raise RefNotFound(f"no branch {name!r}")
        lanes = self._lanes(name)
        with self._branch_lock(name):
            lanes.wait_open()
            state = self._fresh(name, news=True) or self._refresh(name)
            if self._protected(name):
                raise ProtectedRef(f"branch {name!r} is protected: it changes only by merges")
            if self._peers.owner(state.writers) is not None:
                raise PeerPassed("this server hands its own writes of the branch on")
            try:
                group, leads = self._enter(name, lanes, state, changes, reads, ranges,
                                           since=since)
            except WriteConflict as conflict:
                lost, last = conflict, lanes.forming or (lanes.flying[-1] if lanes.flying
                                                         else None)
            else:
                lost = None
        if lost is not None:
            # what changed its reads: once landed, sent with the answer, so that the write
            # decided again over it stands (without it, it would be decided again over the
            # same state, and lose again, until the handing server read lakeFS)
            if last is not None:
                last.done.wait(CATCH_UP_S)
            current = self._branches.get(name)
            return {"error": "store", "type": "WriteConflict", "message": str(lost),
                    "entries": [] if current is None else
                    self._entries_since(name, since[1], current.last_seq)}
        self._fly(name, lanes, state, group, leads)
        answer = {"entries": self._entries_since(name, since[1], group.seq)}
        redis_id = self._redis_id()
        if redis_id is not None and group.news is not None:
            answer["news"] = [redis_id, group.news]  # where it was announced, and the count
        return answer

    def _check_since(self, name: str, lanes: Lanes, since, reads, ranges) -> None:
        """:class:`WriteConflict` unless what was written on the branch after ``since`` (a
        state, or (head, slot, nonce) of one: the end of its chain), landed or in flight
        here, leaves what a write decided over it read as it was (lock held)."""
        if isinstance(since, _BranchState):
            since = (since.head, since.last_seq, since.last_nonce)
        head, seq, nonce = since
        probe = Group()
        probe.reads, probe.ranges = set(reads), list(ranges)
        for attempt in (1, 2):
            state = self._branches.get(name) or self._refresh(name)
            written = self._written_since(name, state, lanes, head, seq, nonce)
            if written is not None:
                break
            if attempt == 1:
                self._refresh(name)  # it was decided over a state newer than ours?
        else:
            raise WriteConflict(f"branch {name!r} moved since this write read it; read again")
        if probe.touched_by(written):
            raise WriteConflict(f"branch {name!r} changed what this write read; read again")

    @staticmethod
    def _written_since(name: str, state: _BranchState, lanes: Lanes, head: str, seq: int,
                       nonce: str) -> set | None:
        """The keys written after the end of a chain (slot ``seq``, its entry's ``nonce``, at
        ``head``): by the entries ``state`` has after it and the groups not in it; None when
        that end is not in ``state``'s chain (or ``head`` is not its head)."""
        if head != state.head:
            return None
        keys: set = set()
        if seq > state.last_seq:  # seen in lakeFS: one of our groups landed, not installed?
            if not any(g.seq == seq and g.nonce == nonce for g in lanes.flying):
                return None
        elif (seq, nonce) != (state.last_seq, state.last_nonce):
            keys, at, _ = _walk_back(name, state, seq)
            if at is None or (at.seq, at.nonce) != (seq, nonce):
                return None
        after = max(seq, state.last_seq)
        for group in (*lanes.flying, lanes.forming):
            if group is not None and (group.seq is None or group.seq > after):
                keys.update(group.changes)
        return keys

    def _entries_since(self, name: str, seq: int, upto: int) -> list:
        """The branch's own entries after slot ``seq`` up to slot ``upto``, with their
        changes, as a peer applies them (:meth:`_apply_handed`); [] when they are not all
        known here or are more than a peer frame should carry."""
        state = self._branches.get(name)
        if state is None:
            return []
        out, size = [], 0
        for obj in reversed(state.entries):  # from the end: a busy log is long
            if obj.directory != name or obj.seq is None or obj.seq > upto:
                continue
            if obj.seq <= seq:
                break
            changes = state.contents.get(obj.cache_key)
            if changes is None:
                return []
            size += sum(len(k) + len(v or b"") for k, v in changes.items())
            if size > ENTRIES_SENT:
                return []
            out.append({"seq": obj.seq, "time": obj.time, "checksum": obj.checksum,
                        "nonce": obj.nonce, "pred": obj.pred, "writer": obj.writer,
                        "changes": encode_changes(changes)})
        out.reverse()
        if not out or out[-1]["seq"] != upto:
            return []
        return out

    def _lanes(self, branch: str) -> Lanes:
        """The branch's write groups (created with its lock)."""
        lock = self._branch_lock(branch)
        with self._lock:
            lanes = self._write_lanes.get(branch)
            if lanes is None:
                lanes = self._write_lanes[branch] = Lanes(lock)
            return lanes

    @contextmanager
    def _whole(self, branch: str):
        """The branch's lock with no write group in flight or forming (a commit, a fold, a
        reset, a snapshot: they see and move the branch whole)."""
        lanes = self._lanes(branch)
        with self._branch_lock(branch), lanes.exclusive():
            yield

    def _chain_end(self, branch: str, state: _BranchState) -> tuple[int, str | None, int]:
        """Where the branch's next write goes: (the first free slot after its chain, the
        nonce of the chain's last entry or None, the latest writer's time)."""
        current = self._branches.get(branch) or state
        return current.next_slot, current.last_nonce or None, current.last_time

    def _upload_entry(self, branch: str, group) -> str:
        """``group``'s changes as one log entry in its slot, naming the entry it was decided
        over: uploaded whole, or not at all (its checksum); :class:`WriteConflict` when
        another server took the slot first (the state it was decided on lacked that write)."""
        headers = {"x-lakefs-meta-" + lakefs_log.META_TIME: str(group.stamp),
                   "x-lakefs-meta-" + lakefs_log.META_NONCE: group.nonce}
        if self._peers is not None:
            headers["x-lakefs-meta-" + lakefs_log.META_WRITER] = self._peers.name
        if group.pred is not None:
            headers["x-lakefs-meta-" + lakefs_log.META_PRED] = group.pred
        data = lakefs_log.encode(group.changes)
        path = lakefs_log.slot_path(branch, group.seq)
        for attempt in range(1, 4):  # the same bytes again: found there, it is this upload
            try:
                return self.api.upload_new(branch, path, data, headers)
            except PathTaken:
                self._outdate(branch)
                raise WriteConflict(f"another server wrote branch {branch!r} first "
                                    f"(slot {group.seq})") from None
            except LakeFSUnreachable:
                if attempt == 3:
                    raise
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable")

    def _rebase(self, branch: str, lanes: Lanes, group, lost: WriteConflict) -> str:
        """``group`` lost its slot to another server's writes: when it is the first of this
        server's groups in flight and those writes changed nothing it read, what it decided
        stands, and it is uploaded again after them (at most ``REBASES`` times); the groups
        after it are decided again. Its checksum; else :class:`WriteConflict`, as lost."""
        with self._branch_lock(branch):
            if not lanes.hold(group, lost):
                raise lost
        passed, landed = set(), False  # the keys of the entries it was taken after
        try:
            for _ in range(REBASES):
                after = self._after_chain(branch, group)
                if after is None:
                    raise lost
                group.seq, group.pred, last_time, keys = after
                passed |= keys
                group.nonce = uuid.uuid4().hex
                group.stamp = max(time.time_ns(), last_time + 1, group.stamp + 1)
                try:
                    checksum = self._upload_entry(branch, group)
                    landed = True
                    return checksum
                except WriteConflict:
                    continue
            raise lost
        finally:
            with self._branch_lock(branch):
                self._outdate(branch)  # what took its slot: read before the next write
                lanes.release(group, lost, passed if landed else None)

    def _after_chain(self, branch: str, group) -> tuple[int, str, int, set] | None:
        """Where ``group`` goes after the entries that took its slot: (the first free slot
        after their chain, the nonce of its end, their latest writer's time, the keys they
        wrote); None when they changed a key it read (or cannot be read whole)."""
        listed = self._own_slots_after(branch, group.seq - 1)
        if listed is None:
            return None
        # the chain from where this group was decided, as readers read it: an entry voided
        # (its predecessor lost its slot) or unsettled (its predecessor's upload is in flight
        # into a free slot before it) is passed; taking that slot voids it
        on = lakefs_log.follow(sorted((o for o in listed if o is not None and o.seq is not None),
                                      key=lambda o: o.seq), group.seq - 1, group.pred)
        if not on.chained or on.tip_nonce is None:
            return None
        keys = set()
        for obj, data in self._read_objects(branch, [o for o in on.chained if not o.fold]):
            keys.update(lakefs_log.decode(data, obj.path))
        if group.touched_by(keys):
            return None
        last_time = max([group.stamp, *(o.time for o in on.chained)])
        return on.gap, on.tip_nonce, last_time, keys

    def _install(self, branch: str, state: _BranchState, group) -> None:
        """A group that landed, in slot order, into the branch's state (announced first)."""
        entry = lakefs_log.Listed(lakefs_log.slot_path(branch, group.seq), branch, group.seq,
                                  group.stamp, group.checksum, nonce=group.nonce,
                                  pred=group.pred,
                                  writer=self._peers.name if self._peers is not None else "")
        news = group.news = self._announce(branch)
        with self._lock:
            self._entries[entry.cache_key] = dict(group.changes)
            current = self._branches.get(branch) or state
            if entry.cache_key in current.contents:  # a refresh saw it land already
                return
            new = self._extend(branch, current, [entry], current.checked,
                               {entry.cache_key: dict(group.changes)})
            # our own change: the state stays current unless another was announced meanwhile
            new.news = news if news is not None and current.news == news - 1 else None
            self._put_state(branch, new)

    def _log_write(self, branch: str, state: _BranchState, changes: dict) -> None:
        """One log entry with all of ``changes`` at the end of the branch's chain, now (the
        branch taken whole: no group in flight): uploaded whole, or not at all;
        :class:`WriteConflict` when another server took the slot first."""
        group = Group()
        group.join(changes)
        group.seq, group.pred, last_time = self._chain_end(branch, state)
        group.nonce = uuid.uuid4().hex
        group.stamp = max(time.time_ns(), last_time + 1)
        group.checksum = self._upload_entry(branch, group)
        self._install(branch, state, group)

    def _put_keys(self, branch: str, head: CommitID, changes: dict,
                  base: dict | None = None) -> None:
        """Write ``changes`` as per-key objects on ``branch`` (whose head is ``head``): uploads in
        parallel, then bulk deletes of the per-key objects the branch has. Not atomic: used on
        temporary branches and by a fold, whose log still holds the changes. The head's live
        log entries, if any, must be folded first (they would read over these)."""
        puts = [(k, v) for k, v in changes.items() if v is not None]
        dels = [k for k, v in changes.items() if v is None]
        for future in [self._pool.submit(self._upload, branch, k, v) for k, v in puts]:
            future.result()
        base = base or {}
        unknown = [k for k in dels if k not in base]
        there = dict(zip(unknown, self._committed_values(head, unknown)))
        self._delete_paths(branch, [_path(k) for k in dels
                                    if (base.get(k) if k in base else there[k]) is not None])

    def _put_catalog(self, branch: str, owner: str, head: CommitID, changes: dict,
                     sticky) -> None:
        """Write ``changes`` on ``branch`` (a temporary branch at ``head``, merged into
        ``owner`` next): as per-key objects, and the keys kept per branch (``sticky``: those
        with variants on the sides merged, and those the policy names) as ``owner``'s
        variants, newer than any of theirs there."""
        policy = self._policy_applies(head)
        carried = {k: v for k, v in changes.items()
                   if k in sticky or self._carries(k, v, EMPTY_VARIANTS, policy)}
        self._put_keys(branch, head, {k: v for k, v in changes.items() if k not in carried})
        if carried:
            self._put_variants(branch, owner, carried, self._refresh(branch).variants,
                               time.time_ns())

    def _delete_paths(self, branch: str, paths: list[str]) -> None:
        for i in range(0, len(paths), PAGE):
            answer = self.api(self.api.objects.delete_objects, branch,
                              self.api.sdk.PathList(paths=paths[i:i + PAGE]))
            errors = [e for e in (answer.errors or []) if e.status_code not in (404, None)]
            if errors:
                raise LakeFSError(f"lakeFS could not delete {errors[0].path}: "
                                  f"{errors[0].message}")

    def _upload(self, branch: str, key: Key, value: bytes):
        """One per-key object. Uploading the same bytes again is harmless, so an upload whose
        answer timed out (lakeFS busy: a fold uploads thousands at once) is tried again, up
        to three times in all."""
        headers = {}
        if len(value) <= INLINE_LIMIT:
            headers["x-lakefs-meta-" + META_VALUE] = base64.b64encode(value).decode("ascii")
        for attempt in range(1, 4):
            try:
                return self.api.upload(branch, _path(key), value, headers)
            except LakeFSTimeout:
                if attempt == 3:
                    raise
        raise AssertionError("unreachable")

    def _real_staged(self, branch: str, state: _BranchState) -> list[DiffEntry]:
        snap = _Snapshot(self, state.head)
        staged = state.staged.items()
        committed = snap.get_many([k for k, _ in staged])
        return [DiffEntry(k, c, v) for (k, v), c in zip(staged, committed) if c != v]

    def _data_staged(self, branch: str, besides: tuple[str, ...] = ()) -> bool:
        """Whether the branch has uncommitted changes outside the catalog and its log (and
        the objects ``besides``)."""
        for entry in self._paged(self.api.branches.diff_branch, branch):
            if not entry.path.startswith(NOT_DATA) and entry.path not in besides:
                return True
        return False

    def commit(self, branch: BranchName, message: str, author: str = "",
               metadata: dict[str, str] | None = None, expected_head: CommitID | None = None,
               allow_empty: bool = False) -> Commit:
        self._check_open()
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        if self._protected(branch, fresh=True):  # lakeFS's own check may lag (see write)
            raise ProtectedRef(f"branch {branch!r} is protected: it changes only by merges")
        with self._whole(branch):
            state = self._refresh(branch)
            if expected_head is not None and state.head != expected_head:
                raise HeadMoved(f"branch {branch!r} is at {state.head[:12]}, not "
                                f"{expected_head[:12]}")
            changes = self._real_staged(branch, state)
            if not allow_empty and not changes and not self._data_staged(branch):
                if state.base or self._log_staged(branch):  # no-op writes: drop them
                    self._reset_catalog(branch)
                raise NothingToCommit(f"nothing to commit on branch {branch!r}")
            self._fold_retrying(branch, state)
            return self._commit(branch, message, author, metadata, allow_empty=True)

    def fold_for_commit(self, branch: BranchName) -> bool:
        """:meth:`fold` for lakeFS's ``prepare-commit`` hook; nothing when the commit is this
        process's own (it folded first, and holds the branch while lakeFS commits)."""
        if branch in self._committing:
            return False
        return self.fold(branch)

    def fold(self, branch: BranchName) -> bool:
        """Fold the branch's log into per-key objects without committing (lakeFS's
        ``prepare-commit`` hook calls this before a commit that ``lakectl``, the UI or the API
        asked for); whether there was anything to fold."""
        self._check_open()
        with self._whole(branch):
            folded = self._fold_retrying(branch, self._refresh(branch))
            self._outdate(branch)
            self._announce(branch)
            return folded

    def _fold_retrying(self, branch: str, state: _BranchState) -> bool:
        """:meth:`_fold`, again from a fresh state while another server's write takes the slot
        its fold entry wanted (each attempt folds more: nothing is lost)."""
        for attempt in range(1, 31):
            try:
                return self._fold(branch, state)
            except WriteConflict:
                if attempt == 30:
                    raise
                time.sleep(min(0.001 * 2 ** attempt, 0.05))
                state = self._refresh(branch)
        raise AssertionError("unreachable")

    def _log_staged(self, branch: str) -> bool:
        return any(True for _ in self._paged(self.api.branches.diff_branch, branch,
                                             prefix=lakefs_log.LOG))

    def _fold(self, branch: str, state: _BranchState) -> bool:
        """Write what the live log entries set as per-key objects, then take the next slot with
        a fold entry saying so (readers skip what it folded from then on), then delete what it
        folded but the slots of the last ``RETAIN`` seconds (a writer that has not seen this
        fold yet must still find them taken); whether anything was folded. A fold stopped at
        any step reads the same: before the fold entry, the live entries still apply over the
        per-key objects they were written into; after it, those objects hold them.
        :class:`WriteConflict` when another server took the slot first."""
        if not state.entries and not state.base:
            self._collect(branch)
            return False
        keys = set(state.base)
        for obj in state.entries:
            keys.update(state.contents[obj.cache_key])
        keys = sorted(keys)
        unknown = [k for k in keys if k not in state.base]
        committed = dict(zip(unknown, self._committed_values(state.head, unknown)))
        writes, carried = {}, {}
        newest = state.variants.newest
        policy = self._policy_applies(state.head)
        for key in keys:
            value = state.staged.get(key)
            raw = state.base[key] if key in state.base else committed[key]
            if self._carries(key, value, state.variants, policy):  # as the branch's own
                if value != (newest[key] if key in newest else raw):
                    carried[key] = value
            elif value != raw:
                writes[key] = value
        self._put_keys(branch, state.head, writes, state.base)
        if carried:
            self._put_variants(branch, branch, carried, state.variants,
                               max(time.time_ns(), state.last_time + 1))
        # entries of other directories (brought by a commit or merge made without our fold)
        # are folded by name: the new ones, and those earlier folds named that are still here
        plan, _ = self._read_log(branch)
        named = {o.path for o in state.entries if o.directory != branch or o.seq is None}
        named.update(o.path for o in plan.folded if o.seq is not None and
                     o.directory != branch and o.seq > plan.floors.get(o.directory, 0))
        named = sorted(named)
        seq = state.next_slot  # the first free slot after the chain: so in it, for anyone
        stamp = max(time.time_ns(), state.last_time + 1)
        headers = {"x-lakefs-meta-" + lakefs_log.META_TIME: str(stamp),
                   "x-lakefs-meta-" + lakefs_log.META_KIND: "fold",
                   "x-lakefs-meta-" + lakefs_log.META_FLOOR: str(state.last_seq),
                   "x-lakefs-meta-" + lakefs_log.META_NAMED: str(len(named)),
                   "x-lakefs-meta-" + lakefs_log.META_NONCE: uuid.uuid4().hex}
        if state.last_nonce:
            headers["x-lakefs-meta-" + lakefs_log.META_PRED] = state.last_nonce
        try:
            self.api.upload_new(branch, lakefs_log.slot_path(branch, seq),
                                lakefs_log.encode_fold(state.last_seq, named), headers)
        except PathTaken:
            self._outdate(branch)
            raise WriteConflict(f"another server wrote branch {branch!r} during its fold") \
                from None
        self._collect(branch)
        return True

    def _collect(self, branch: str) -> None:
        """Delete the log objects folds made useless: entries of the layout before slots that
        a fold named, and its markers; in every directory, folded slots of more than
        ``RETAIN`` seconds ago (by lakeFS's clock), but its newest fold entry (its floor) and
        its highest slot: a writer of that directory's branch counts on them, and a merge back
        into that branch would bring their deletion."""
        listed = [lakefs_log.listed(o.path, o.metadata, o.checksum, int(o.mtime or 0))
                  for o in self._paged(self.api.objects.list_objects, branch,
                                       prefix=lakefs_log.LOG, delimiter="", user_metadata=True)
                  if o.path_type == "object"]
        listed = [o for o in listed if o is not None]
        if not listed:
            return
        plan = lakefs_log.plan(listed, {o.cache_key: self._fold_of(branch, o)
                                        for o in listed if o.needs_reading})
        now = max(o.mtime for o in listed)  # lakeFS's clock, at least
        newest = {}
        for obj in plan.folds:
            if obj.seq is not None and obj.seq > newest.get(obj.directory, -1):
                newest[obj.directory] = obj.seq
        highest = {}  # a directory's highest slot here: kept (see the docstring)
        for obj in listed:
            if obj.seq is not None and obj.seq > highest.get(obj.directory, -1):
                highest[obj.directory] = obj.seq
        gone = []
        for obj in (*plan.folded, *plan.folds):
            if obj.seq is None:
                gone.append(obj.path)  # the layout before slots: nobody counts on its names
            elif now - obj.mtime <= lakefs_log.RETAIN or obj.seq == newest.get(obj.directory) \
                    or obj.seq == highest.get(obj.directory):
                continue
            elif obj.seq <= plan.floors.get(obj.directory, 0) or obj.directory != branch:
                gone.append(obj.path)  # under its floor, or folded by name (per-key now)
        self._delete_paths(branch, gone)

    def _fold_of(self, ref: str, obj) -> object:
        hit = self._folds.get(obj.cache_key)
        if hit is None:
            data = bytes(self.api(self.api.objects.get_object, ref, obj.path))
            hit = self._folds[obj.cache_key] = lakefs_log.decode_fold(data, obj.path)
        return hit

    def _fold_branch(self, branch: str) -> None:
        """Fold a branch's log now (a temporary branch whose head holds live log entries, before
        per-key objects are written on it)."""
        with self._whole(branch):
            self._fold_retrying(branch, self._refresh(branch))
            self._outdate(branch)

    def _commit(self, branch, message, author, metadata, allow_empty=False) -> Commit:
        now = time.time()
        meta = {str(k): str(v) for k, v in (metadata or {}).items()}
        meta[META_AUTHOR] = author or ""
        meta[META_CREATED] = repr(now)
        self._committing.add(branch)  # lakeFS's prepare-commit hook may call back meanwhile
        try:
            raw = self.api(self.api.commits.commit, branch, self.api.sdk.CommitCreation(
                message=message, metadata=meta, date=int(now), allow_empty=allow_empty),
                _request_timeout=(CONNECT_TIMEOUT, VERSIONING_TIMEOUT))
        finally:
            self._committing.discard(branch)
        commit = self._commit_of(raw)
        self._outdate(branch)
        self._announce(branch)
        return commit

    def staged(self, branch: BranchName) -> Iterator[DiffEntry]:
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        state = self._refresh(branch)
        return iter(self._real_staged(branch, state))

    def reset(self, branch: BranchName) -> int:
        if self._branch(branch) is None:
            raise RefNotFound(f"no branch {branch!r}")
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        with self._whole(branch):
            state = self._refresh(branch)
            dropped = len(self._real_staged(branch, state))
            self._reset_catalog(branch)
            return dropped

    def _reset_catalog(self, branch: str) -> None:
        sdk = self.api.sdk
        for kind, path in (("common_prefix", PREFIX), ("common_prefix", lakefs_log.LOG),
                           ("common_prefix", VARIANTS),
                           ("object", JOURNAL + branch)):  # the layout before the log's
            try:
                self.api(self.api.branches.reset_branch, branch,
                         sdk.ResetCreation(type=kind, path=path))
            except RefNotFound:
                if path == PREFIX:
                    raise
        with self._lock:
            self._branches.pop(branch, None)
            self._forget_log()
        self._announce(branch)
