"""A metastore server running as a child process, shared by the oracle and proxy helpers.

Both the stock HMS (the oracle) and our own server are started the same way: a
subprocess on a free port, logging to a file, considered ready once it answers a
real Thrift call (a listening socket alone is not enough: HMS binds before its
schema is usable).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """Ask the kernel for an unused TCP port (racy but good enough for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(host: str, port: int) -> bool:
    """A cheap pre-check so we don't spam Thrift's connection-failure logging while waiting."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 60) -> str:
    """The end of a log file, for error messages when a server fails to start."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "<no log>"
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class MetastoreProcess:
    """A running metastore: where to reach it and how to stop it."""

    name: str
    host: str
    port: int
    warehouse: Path
    log_path: Path
    popen: subprocess.Popen
    workdir: Path
    _log_file: object = field(default=None, repr=False)
    startup_seconds: float = 0.0

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """Terminate the process group we created (never anything else)."""
        if self.popen.poll() is None:
            _signal_group(self.popen, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.popen, signal.SIGKILL)
                self.popen.wait(timeout)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def _signal_group(popen: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(popen.pid, sig)
    except ProcessLookupError:
        pass


def spawn(name: str, cmd: list[str], *, workdir: Path, port: int, warehouse: Path,
          cwd: Path, env: dict | None = None, timeout: float = 120.0) -> MetastoreProcess:
    """Start `cmd` in its own process group and wait until it answers Thrift calls."""
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{name}.log"
    log_file = open(log_path, "ab")
    popen = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    proc = MetastoreProcess(name, "127.0.0.1", port, warehouse, log_path, popen, workdir, log_file)
    try:
        wait_ready(proc, timeout)
    except BaseException:
        proc.stop()
        raise
    return proc


def wait_ready(proc: MetastoreProcess, timeout: float) -> None:
    """Poll get_all_databases until it succeeds, the process dies, or time runs out."""
    from tests.support.client import connect  # late: keeps the Thrift import in one place

    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(
                f"{proc.name} exited with {proc.popen.returncode} during startup; "
                f"log tail ({proc.log_path}):\n{log_tail(proc.log_path)}")
        if not port_open(proc.host, proc.port):
            time.sleep(0.3)
            continue
        try:
            with connect(proc, timeout=10.0) as client:
                client.get_all_databases()
            return
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
            last_error = exc
            time.sleep(0.5)
    raise TimeoutError(
        f"{proc.name} did not answer on port {proc.port} within {timeout:.0f}s "
        f"(last error: {last_error!r}); log tail ({proc.log_path}):\n{log_tail(proc.log_path)}")
