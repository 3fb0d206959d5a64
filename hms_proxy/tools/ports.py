"""Ports of the local servers the tools start (metastores, lakeFS, Trino): a free one, and
starting on it safely when other programs on the machine pick ports too.

A free port is only free when it is picked: another process (a second test suite, a client's
ephemeral port) may take it before the server listens. So a server is started on a picked
port, taken as ready only when the process started listens there itself (never another
program's listener on that port), and started again on another port when it failed because
its port was taken."""
from __future__ import annotations

import socket
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")

ATTEMPTS = 4  # ports tried before giving up


class PortTaken(RuntimeError):
    """The port picked for a server was taken by another process before it could listen."""


def free_port() -> int:
    """A TCP port of the loopback interface that nothing listens on now (see the module's
    docstring: start servers with :func:`start_on_a_port`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(pid: int, port: int) -> bool | None:
    """Whether the process ``pid`` or one of its descendants listens on ``port`` (None:
    psutil, which tells, is not installed: the caller can only trust the port)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return False
    for proc in procs:
        try:
            conns = (getattr(proc, "net_connections", None) or proc.connections)(kind="tcp")
        except psutil.Error:
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
               for c in conns):
            return True
    return False


def port_was_taken(log_path: Path, since: int) -> bool:
    """Whether what a process wrote to ``log_path`` from offset ``since`` says its port was in
    use (Go, Java and Python all say "address already in use")."""
    try:
        with open(log_path, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return False
    return "address already in use" in text.lower()


def log_size(log_path: Path) -> int:
    try:
        return Path(log_path).stat().st_size
    except OSError:
        return 0


def start_on_a_port(start: Callable[[int], T], port: int | None = None,
                    attempts: int = ATTEMPTS) -> T:
    """``start(port)`` on ``port``, or on a free one when None; when ``start`` raises
    :class:`PortTaken` for a port it was not given, again on another free one."""
    for attempt in range(1, attempts + 1):
        try:
            return start(port if port is not None else free_port())
        except PortTaken:
            if port is not None or attempt == attempts:
                raise
    raise AssertionError("unreachable")
