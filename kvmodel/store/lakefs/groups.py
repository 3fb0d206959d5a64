"""Group commit: the writes of one branch that arrive while its log upload is in flight go
together into the next slot, one object and one upload for all of them.

A branch's write rate would otherwise be one upload's latency (each write takes the branch's
next log slot with a conditional upload, one after the other), whatever the number of clients.
Here a write transaction runs, as before, one at a time under the branch's lock, over the
branch's state **and the changes of the groups not acknowledged yet** (so each write is checked
against what the writes before it leave, compare-and-set included), then joins the group being
formed and leaves the lock. The first member of a group uploads it once the group before it
has landed; every member is answered when that upload is acknowledged by lakeFS, never before.
A failed upload fails its whole group (nothing of it is in the log), and the group formed on
top of it too, with :class:`WriteConflict`: its writes were decided over changes that do not
exist, and are decided again (:func:`kvmodel.store.errors.decided_again`).

What must see the branch whole (a commit, a fold, a reset, a merge's snapshot) takes it with
:meth:`Lanes.exclusive`: new writes wait, the groups in flight land first.
"""
from __future__ import annotations

import bisect
import threading
from contextlib import contextmanager

from kvmodel.store.errors import WriteConflict
from kvmodel.store.lakefs.views import _BranchState


class Group:
    """The changes of several write transactions, applied in the order they joined, as one
    log entry."""

    def __init__(self):
        self.changes: dict = {}
        self.members = 0
        self.seq: int | None = None  # the slot it takes, once it takes off
        self.error: BaseException | None = None
        self.done = threading.Event()

    def join(self, changes: dict) -> bool:
        """Add a transaction's changes; whether it is the group's first member (its leader)."""
        self.changes.update(changes)
        self.members += 1
        return self.members == 1

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.done.set()


class Lanes:
    """One branch's groups: the one in flight and the one forming behind it, under the
    branch's lock (``lock``, an RLock held by write transactions)."""

    def __init__(self, lock):
        self.cond = threading.Condition(lock)
        self.flying: Group | None = None
        self.forming: Group | None = None
        self.exclusive_waiting = 0

    def busy(self) -> bool:
        return self.flying is not None or self.forming is not None

    def wait_open(self) -> None:
        """Before a write transaction (lock held): wait while something takes the branch
        whole."""
        while self.exclusive_waiting:
            self.cond.wait()

    def over(self, state: _BranchState) -> _BranchState:
        """``state`` with the changes of the groups not acknowledged yet applied (lock held):
        what a write transaction reads. A group in flight whose slot ``state`` already holds
        (its upload landed, seen by a refresh) is in ``state`` already."""
        groups = [g for g in (self.flying, self.forming)
                  if g is not None and (g.seq is None or state.last_seq < g.seq)]
        if not groups:
            return state
        staged, keys = dict(state.staged), list(state.keys)
        for group in groups:
            for key, value in group.changes.items():
                if key not in staged:
                    bisect.insort(keys, key)
                staged[key] = value
        return _BranchState(state.head, state.base, state.entries, state.folded, staged, keys,
                            state.checked, state.version, used=state.used, news=state.news,
                            last_seq=state.last_seq, last_time=state.last_time,
                            contents=state.contents, variants=state.variants)

    def join(self, changes: dict) -> tuple[Group, bool]:
        """A transaction's changes into the forming group, or a new one in flight when none
        is (lock held): (its group, whether it leads it)."""
        if self.flying is None and self.forming is None:
            group = self.flying = Group()
        else:
            if self.forming is None:
                self.forming = Group()
            group = self.forming
        return group, group.join(changes)

    def take_off(self, group: Group, next_seq) -> bool:
        """The leader of ``group``: wait until the group before it has landed, then mark it
        in flight with the slot ``next_seq()`` gives (lock held); False when it failed
        meanwhile (built over a failed group)."""
        while self.flying is not None and self.flying is not group:
            self.cond.wait()
        if group.error is not None:
            return False
        if self.forming is group:
            self.forming = None
        self.flying = group
        group.seq = next_seq()
        return True

    def land(self, group: Group, error: BaseException | None) -> None:
        """``group``'s upload ended (lock held): its members are answered; after a failure the
        group formed over it fails too."""
        if self.flying is group:
            self.flying = None
        if error is not None:
            if self.forming is not None:
                self.forming.fail(WriteConflict("a write of this branch decided before it "
                                                "failed: read again"))
                self.forming = None
            group.fail(error)
        else:
            group.done.set()
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
