"""Group commit, pipelined: the writes of one branch that arrive while its log uploads are in
flight go together into the next slot (one object and one upload for all of them), and up to
:data:`DEPTH` such groups are uploaded at once, each in the slot after the one before.

A branch's write rate would otherwise be one upload's latency (each write takes the branch's
next log slot with a conditional upload, one after the other), whatever the number of clients.
Here a write transaction runs, as before, one at a time under the branch's lock, over the
branch's state **and the changes of the groups not acknowledged yet** (so each write is checked
against what the writes before it leave, compare-and-set included), then joins the group being
formed and leaves the lock. The group's first member (its leader) takes it off once fewer
than :data:`DEPTH` groups are in flight: its slot is the one after the last group in flight
(or the first free one after the branch's chain), and it names that group's nonce as the entry
it was decided over (``pred``, :mod:`kvmodel.store.lakefs.log`): readers count an entry only
once the one it names is in the branch's chain, so a group whose predecessor never lands is
never applied by anyone. Every member is answered when lakeFS acknowledged its group's upload
**and those of every group before it** (answers go in slot order), never before.

A failed upload fails its group, and every group after it:

* when lakeFS refused it (an error answered, or its slot taken by another server: a 412), it
  is not in the log and the groups after it can never join the chain: they get
  :class:`WriteConflict` and are decided again (:func:`kvmodel.store.errors.decided_again`),
  even if their uploads land;
* when its outcome is unknown (lakeFS did not answer, even to the same upload tried again),
  neither is theirs once uploaded: they get its error; those whose upload was refused, or not
  made, get :class:`WriteConflict`.

What must see the branch whole (a commit, a fold, a reset, a merge's snapshot) takes it with
:meth:`Lanes.exclusive`: new writes wait, the groups in flight land first.
"""
from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import deque
from contextlib import contextmanager

from kvmodel.store.errors import WriteConflict
from kvmodel.store.lakefs.api import LakeFSUnreachable
from kvmodel.store.lakefs.views import _BranchState

# groups of one branch uploaded at once (HMS_LAKEFS_WRITE_DEPTH: 1 is one at a time)
DEPTH = int(os.environ.get("HMS_LAKEFS_WRITE_DEPTH", "3"))
CONTENDED_S = 2.0  # after a slot lost to another server, groups go one at a time this long
CONTENDED_PAUSE_S = 0.03  # and each waits up to this before it takes off (Lanes.pause)
LANDED_KEPT = 256  # nonces of a branch's latest landed groups kept (Lanes.own)


class Group:
    """The changes of several write transactions, applied in the order they joined, as one
    log entry."""

    def __init__(self):
        self.changes: dict = {}
        self.members = 0
        self.seq: int | None = None  # the slot it takes, once it takes off
        self.pred: str | None = None  # the nonce of the entry it was decided over
        self.nonce = ""
        self.stamp = 0  # the writer's time it carries
        self.checksum = ""
        self.news: int | None = None  # the Redis change count its announcement made
        self.uploaded = False
        self.doubt: BaseException | None = None  # a group before it failed without an answer
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.reads: set = set()  # the keys its transactions read
        self.ranges: list = []  # and the ranges they scanned
        self.seen: set = set()  # the ends of the chains they were decided over (head, seq, nonce)

    def join(self, changes: dict, reads=(), ranges=(), seen=None) -> bool:
        """Add a transaction's changes (and what it read, and the end of the branch's chain
        in the state it read: ``seen``); whether it is the group's first member (its
        leader)."""
        self.changes.update(changes)
        self.reads.update(reads)
        self.ranges.extend(ranges)
        if seen is not None:
            self.seen.add(seen)
        self.members += 1
        return self.members == 1

    def touched_by(self, keys) -> bool:
        """Whether a write of ``keys`` changes what this group was decided on."""
        for key in keys:
            if key in self.reads or any(key >= start and (end is None or key < end)
                                        for start, end in self.ranges):
                return True
        return False

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.done.set()


def _later(error: BaseException) -> WriteConflict:
    return WriteConflict(f"a write of this branch decided before it failed ({error}): read "
                         "again")


class Lanes:
    """One branch's groups: those in flight, in slot order, and the one forming behind them,
    under the branch's lock (``lock``, an RLock held by write transactions)."""

    def __init__(self, lock, depth: int = DEPTH):
        self.cond = threading.Condition(lock)
        self.depth = max(1, int(depth))
        self.flying: list[Group] = []
        self.forming: Group | None = None
        self.adrift: set = set()  # failed over a group before them, their uploads not ended
        self.exclusive_waiting = 0
        self.holding: Group | None = None  # taken to a later slot: none takes off meanwhile
        self.contended_until = 0.0  # another server wrote the branch lately: one at a time
        self.landed: deque = deque(maxlen=LANDED_KEPT)  # the nonces of our latest groups

    def own(self) -> set:
        """The nonces of this server's groups in flight and lately landed: the entries a
        write decided here saw through :meth:`over` if they are after its state."""
        return {*self.landed, *(g.nonce for g in self.flying)}

    def busy(self) -> bool:
        return bool(self.flying or self.adrift) or self.forming is not None

    def hold(self, group: Group, why: BaseException) -> bool:
        """``group`` lost its slot to another server's writes (lock held): when it is the
        first in flight, keep it to be taken to a later slot (:meth:`release` after), and fail
        the groups after it (decided over it as it was) and the one forming; False when it is
        not first (it fails with those before it)."""
        self.contended_until = time.monotonic() + CONTENDED_S
        if not self.flying or self.flying[0] is not group:
            return False
        later, self.flying = self.flying[1:], self.flying[:1]
        for other in later:
            if not other.uploaded:
                self.adrift.add(other)
            other.fail(_later(why))
        if self.forming is not None:
            self.forming.fail(_later(why))
            self.forming = None
        self.holding = group
        return True

    def release(self, group: Group, why: BaseException, keys=None) -> None:
        """The end of :meth:`hold` (lock held): the writes decided meanwhile, on a state
        that may lack those that took its slot, stand when ``group`` was taken after them
        (``keys``: what they wrote) and they read none of it; else they are decided again."""
        if self.holding is group:
            self.holding = None
        if self.forming is not None and (keys is None or self.forming.touched_by(keys)):
            self.forming.fail(_later(why))
            self.forming = None
        self.cond.notify_all()

    def pause(self) -> float:
        """Seconds a group's leader waits before it takes off while another server writes
        the branch too: a server whose next upload starts the moment its last one landed
        would always be first to the next slot, and the other server's writes (which must
        read that slot's entry before they go after it) would never land."""
        if time.monotonic() >= self.contended_until:
            return 0.0
        return random.uniform(0.0, CONTENDED_PAUSE_S)

    def depth_now(self) -> int:
        """Groups that may be in flight at once: one while another server writes the branch
        too (a group decided over one that lost its slot would lose its own, and leave a slot
        the other server's writes must pass)."""
        return 1 if time.monotonic() < self.contended_until else self.depth

    def wait_open(self) -> None:
        """Before a write transaction (lock held): wait while something takes the branch
        whole."""
        while self.exclusive_waiting:
            self.cond.wait()

    def over(self, state: _BranchState) -> _BranchState:
        """``state`` with the changes of the groups not acknowledged yet applied (lock held):
        what a write transaction reads. A group in flight whose slot ``state`` already holds
        (its upload landed, seen by a refresh) is in ``state`` already."""
        groups = [g for g in (*self.flying, self.forming)
                  if g is not None and (g.seq is None or state.last_seq < g.seq)]
        if not groups:
            return state
        changes: dict = {}
        for group in groups:  # in slot order: a later group's value wins
            changes.update(group.changes)
        return _BranchState(state.head, state.base, state.entries, state.folded,
                            state.staged.with_changes(changes),
                            state.checked, state.version, used=state.used, news=state.news,
                            last_seq=state.last_seq, last_time=state.last_time,
                            contents=state.contents, variants=state.variants,
                            last_nonce=state.last_nonce, next_slot=state.next_slot,
                            writers=state.writers)

    def join(self, changes: dict, reads=(), ranges=(), seen=None) -> tuple[Group, bool]:
        """A transaction's changes (and what it read, and the end of the chain it read)
        into the forming group (lock held): (its group, whether it leads it)."""
        if self.forming is None:
            self.forming = Group()
        group = self.forming
        return group, group.join(changes, reads, ranges, seen)

    def take_off(self, group: Group, first, check=None) -> bool:
        """The leader of ``group``: wait until fewer than ``depth`` groups are in flight, then
        put it in flight (lock held) in the slot after the last one, decided over it, or where
        ``first()`` says ((slot, the nonce of the chain's end or None, the latest writer's
        time) of the branch's state); False when it failed meanwhile (over a failed group).

        The branch's state may have moved on while the leader waited (a refresh saw another
        server's writes): ``check(group)`` raises :class:`WriteConflict` when what was written
        after the states its members read changed what they read; the group then fails (its
        members decide again), else it would be placed after writes none of them saw."""
        while (len(self.flying) >= self.depth_now() or self.holding is not None) and \
                group.error is None:
            self.cond.wait()
        if group.error is not None:
            return False
        if self.forming is group:
            self.forming = None
        if check is not None:
            try:
                check(group)
            except WriteConflict as conflict:
                group.fail(conflict)
                self.cond.notify_all()
                return False
        if self.flying:
            before = self.flying[-1]
            group.seq, group.pred, last_time = before.seq + 1, before.nonce, before.stamp
        else:
            group.seq, group.pred, last_time = first()
        group.nonce = uuid.uuid4().hex
        group.stamp = max(time.time_ns(), last_time + 1)
        self.flying.append(group)
        return True

    def land(self, group: Group, error: BaseException | None, install) -> None:
        """``group``'s upload ended (lock held). Groups land in slot order: each whose upload
        and predecessors' ended well is installed (``install(group)``: into the branch's
        state) and its members answered; a failure fails the groups after it (see the module
        doc)."""
        if group not in self.flying:  # failed already, over a group before it
            self.adrift.discard(group)
            if group.doubt is not None and error is None:
                group.fail(group.doubt)  # it may be in the chain: nobody can tell
            elif not group.done.is_set():
                group.fail(error if isinstance(error, LakeFSUnreachable)
                           else _later(group.doubt or error))
            self.cond.notify_all()
            return
        if error is not None:
            at = self.flying.index(group)
            later, self.flying = self.flying[at + 1:], self.flying[:at]
            group.fail(error)
            unknown = isinstance(error, LakeFSUnreachable)  # it may have landed
            for other in later:
                if not other.uploaded:
                    self.adrift.add(other)
                if unknown and other.uploaded:
                    other.fail(error)
                elif unknown:
                    other.doubt = error  # decided when its own upload ends
                else:
                    other.fail(_later(error))
            if self.forming is not None:
                self.forming.fail(_later(error))
                self.forming = None
        else:
            group.uploaded = True
            while self.flying and self.flying[0].uploaded:
                ready = self.flying.pop(0)
                install(ready)
                self.landed.append(ready.nonce)
                ready.done.set()
        self.cond.notify_all()

    @contextmanager
    def exclusive(self):
        """The branch whole (lock held by the caller): new writes wait, groups land first."""
        self.exclusive_waiting += 1
        try:
            while self.busy():
                self.cond.wait()
            yield
        finally:
            self.exclusive_waiting -= 1
            self.cond.notify_all()
