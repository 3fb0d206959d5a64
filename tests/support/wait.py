"""Waiting on a condition instead of sleeping for a time that usually suffices.

A test that asserts on state another thread or process changes (a server's background
refresh, a CLI run in another process, a worker counting a call after its reply) polls for
that state, with a deadline far beyond what any loaded machine needs: the wait ends as soon
as the condition holds, so the generous deadline costs nothing when things go well, and a
regression still fails (at the deadline, with the last value seen)."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

#: How long a condition that should hold "soon" (within a documented bound of a second or
#: two) is waited for before the test fails: the bound times many, for a machine running two
#: test suites on two cores.
DEADLINE = 60.0


def wait_until(predicate: Callable[[], T], *, timeout: float = DEADLINE, interval: float = 0.02,
               what: str = "") -> T:
    """Call ``predicate`` until it returns something true, and return that. At the deadline
    raise AssertionError naming ``what`` and the last value returned."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout:.0f} s: {what or predicate!r} "
                                 f"(last: {result!r})")
        time.sleep(interval)


def eventually(check: Callable[[], T], *, timeout: float = DEADLINE, interval: float = 0.05) -> T:
    """Run ``check`` (a function that asserts) until it passes, and return what it returns;
    at the deadline its last AssertionError propagates, so the failure reads as the
    assertion's own."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        time.sleep(interval)

