"""SIGTERM and SIGINT for the long-running commands, handled without taking a lock.

A Python signal handler runs on the main thread between two bytecodes, possibly in the middle
of code that holds a lock, and possibly inside a previous run of the same handler when signals
come in a burst (Ctrl-C pressed twice, a supervisor signalling a process and its group). A
handler that calls ``threading.Event.set`` can then wait forever for the lock of the event's
condition held by the code it interrupted, or recurse until the interpreter gives up. So the
handler here only sets a flag and writes one byte to a pipe (both lock-free and re-entrant);
the command's main loop waits on the pipe and does the stopping itself, on ordinary code.
"""
from __future__ import annotations

import os
import select
import signal
import sys

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest:
    """A stop asked for by a signal: ``requested`` once one came, ``fileno()`` readable then."""

    def __init__(self) -> None:
        self.requested = False
        self.signum: int | None = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def install(self, signals=STOP_SIGNALS) -> "StopRequest":
        """Handle ``signals`` (main thread only, as Python requires)."""
        self._signals = tuple(signals)
        for sig in self._signals:
            signal.signal(sig, self._handle)
        return self

    def finish(self) -> None:
        """The command has stopped: ignore further stop signals from here to the process's
        end. Python puts back the default handlers while the interpreter finalizes, and a
        signal of the same burst arriving then would kill the stopped process with -SIGINT
        instead of letting it exit 0; an ignored signal stays ignored. A signal of the burst
        landing while a disposition changes makes CPython report "Signal N ignored due to race
        condition" (an unraisable error, printed with a traceback): that one is what we asked
        for, and is not printed."""
        previous = sys.unraisablehook

        def hook(unraisable):
            if isinstance(unraisable.exc_value, OSError) and \
                    "ignored due to race condition" in str(unraisable.exc_value):
                return
            previous(unraisable)

        sys.unraisablehook = hook
        for sig in getattr(self, "_signals", ()):
            signal.signal(sig, signal.SIG_IGN)

    def _handle(self, signum, _frame) -> None:
        # no lock, no allocation worth the name, safe when re-entered
        self.requested = True
        self.signum = signum
        fd = self._write
        if fd < 0:  # closed
            return
        try:
            os.write(fd, b"\0")
        except OSError:  # the pipe is full: a wake-up is pending already
            pass

    def request(self) -> None:
        """Ask for a stop from code (a test, a supervisor giving up), as a signal would."""
        self._handle(None, None)

    def fileno(self) -> int:
        return self._read

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for a stop; True once one was asked for."""
        if not self.requested and self._read >= 0:
            try:
                select.select([self._read], [], [], timeout)
            except (OSError, ValueError):
                pass
        self.drain()
        return self.requested

    def drain(self) -> None:
        if self._read < 0:
            return
        try:
            while os.read(self._read, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        """Close the pipe (a signal coming later only sets the flag: the handler never
        writes to a descriptor number that may have been reused)."""
        fds, self._write, self._read = (self._write, self._read), -1, -1
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


__all__ = ["StopRequest", "STOP_SIGNALS"]
