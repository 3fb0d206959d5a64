"""Spark runs of the tests (``tests/e2e/spark/runner.py``) in JVMs kept for the whole test
process: starting a JVM with Spark and its Hive client costs 15 to 50 s of the machine's two
cores, a new session in a warm one about a second.

:func:`run` takes the runner's command line (``--uri``, ``--warehouse``, ``--statements
FILE``, ``--output FILE``, ``--conf``) and answers as :func:`subprocess.run` with
``capture_output=True, text=True`` would, the run's log as its ``stderr``. Each run gets a new
Spark context and session in a runner (``runner.py --serve``): the previous one stopped, with
its metastore client, its caches and its settings, so a run sees what a fresh process would.
Runners are kept per environment (the variables Spark and its clients read) and per setting
read at the JVM's start (``spark.jars``: the class path); a run while every runner of its
kind is busy starts another. At most :data:`KEPT` idle runners are kept per test process
(``HMS_TEST_KEPT_JVMS``, default 3), the least recently used stopped beyond that. What a
kept runner cannot do runs in a process of its own as before: ``--statements -`` sessions,
and a metastore client of another Hive version (``spark.sql.hive.metastore.*``: its isolated
class loader is one per JVM).

A runner ends with the test process: its stdin closes and it stops its last session.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.support.process import REPO_ROOT

RUNNER = REPO_ROOT / "tests" / "e2e" / "spark" / "runner.py"
DONE = "@@runner-done "
# what a runner's JVM and Python read from the environment: runners differ when these do
_ENV_PREFIXES = ("JAVA", "SPARK", "PYSPARK", "HADOOP", "AWS", "LAKEFS", "PYTHON", "HIVE", "LD_",
                 "TZ", "LANG", "LC_")
_OWN_PROCESS = ("spark.sql.hive.metastore.",)
# settings read when the JVM starts (its class path): runners differ when these do
_LAUNCH = ("spark.jars", "spark.driver.", "spark.executor.extra", "spark.files", "spark.archives",
           "spark.submit.")


class _Runner:
    """One ``runner.py --serve`` process."""

    used = 0.0  # when its last run ended (time.monotonic())

    def __init__(self, env: dict):
        self.log = tempfile.NamedTemporaryFile(prefix="spark-runner-", suffix=".log",
                                               delete=False)
        self.popen = subprocess.Popen(
            [sys.executable, str(RUNNER), "--serve"], cwd=tempfile.gettempdir(), env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            start_new_session=True)
        self._pending = b""

    def run(self, request: dict, timeout: float) -> subprocess.CompletedProcess:
        start = os.path.getsize(self.log.name)
        self.popen.stdin.write((json.dumps(request) + "\n").encode())
        self.popen.stdin.flush()
        code, stdout = self._wait_done(time.monotonic() + timeout)
        with open(self.log.name, "rb") as f:
            f.seek(start)
            stderr = f.read().decode(errors="replace")
        return subprocess.CompletedProcess(request, code, stdout, stderr)

    def _wait_done(self, deadline: float) -> tuple[int, str]:
        """The run's exit code and what it printed besides: -9 when it outlived ``deadline``
        (the runner is killed), the runner's own code when it died."""
        out: list[str] = []
        fd = self.popen.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                while b"\n" in self._pending:
                    line, self._pending = self._pending.split(b"\n", 1)
                    text = line.decode(errors="replace")
                    if text.startswith(DONE):
                        return int(json.loads(text[len(DONE):])["exit"]), "\n".join(out)
                    out.append(text)
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    return -9, "\n".join(out)
                if not sel.select(min(left, 5.0)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:  # the runner died
                    code = self.popen.wait()
                    return (code or 1), "\n".join(out)
                self._pending += chunk

    def alive(self) -> bool:
        return self.popen.poll() is None

    def close(self) -> None:
        try:
            self.popen.stdin.close()  # the runner stops its session and exits
            self.popen.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        finally:
            Path(self.log.name).unlink(missing_ok=True)

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()


_idle: dict[tuple, list[_Runner]] = {}
_lock = threading.Lock()
# idle runners kept per test process, the least recently used stopped beyond it: a runner's
# JVM holds 0.5 to 1 GB, and two test suites side by side on 24 GB must not run out of memory
KEPT = int(os.environ.get("HMS_TEST_KEPT_JVMS", "3"))


def _options(args: list[str]) -> dict | None:
    """The runner's options from its command line (after the script), or None when the run
    needs a process of its own."""
    opts: dict = {"conf": {}}
    i = 0
    while i < len(args):
        name, value = args[i], args[i + 1] if i + 1 < len(args) else None
        if value is None:
            return None
        if name == "--conf":
            key, _, val = value.partition("=")
            if key.startswith(_OWN_PROCESS):
                return None
            opts["conf"][key] = val
        elif name in ("--uri", "--warehouse", "--statements", "--output"):
            opts[name[2:]] = value
        else:
            return None
        i += 2
    if opts.get("statements") in (None, "-") or opts.get("output") in (None, "-"):
        return None
    if not (opts.get("uri") and opts.get("warehouse")):
        return None
    return opts


def _key(env: dict, conf: dict) -> tuple:
    return (tuple(sorted((k, v) for k, v in env.items() if k.startswith(_ENV_PREFIXES))),
            tuple(sorted((k, v) for k, v in conf.items() if k.startswith(_LAUNCH))))


def run(cmd: list, *, env: dict | None = None, cwd=None,
        timeout: float = 600.0) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
    timeout=timeout)`` for ``cmd`` = ``[python, runner.py, OPTIONS...]``, in a kept runner when
    it can (see the module doc). A run past ``timeout`` raises TimeoutExpired, as
    subprocess.run does."""
    env = dict(os.environ if env is None else env)
    opts = _options([str(a) for a in cmd[2:]])
    if opts is None or Path(cmd[1]).resolve() != RUNNER:
        return subprocess.run([str(a) for a in cmd], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    opts["cwd"] = str(Path(cwd or os.getcwd()).resolve())
    for name in ("statements", "output"):
        opts[name] = str((Path(opts["cwd"]) / opts[name]).resolve())
    key = _key(env, opts["conf"])
    with _lock:
        pool = _idle.setdefault(key, [])
        runner = None
        while pool and runner is None:
            candidate = pool.pop()
            if candidate.alive():
                runner = candidate
            else:
                candidate.close()
    if runner is None:
        runner = _Runner(env)
    done = runner.run(opts, timeout)
    if done.returncode == -9:
        raise subprocess.TimeoutExpired(cmd, timeout, output=done.stdout, stderr=done.stderr)
    surplus = []
    if runner.alive():
        with _lock:
            _idle.setdefault(key, []).append(runner)
            runner.used = time.monotonic()
            idle = sorted(((r.used, k, r) for k, pool in _idle.items() for r in pool),
                          key=lambda t: t[0])
            for _, k, old in idle[:max(0, len(idle) - KEPT)]:
                _idle[k].remove(old)
                surplus.append(old)
    else:
        runner.close()
    for old in surplus:
        old.close()
    return done


def close_all() -> None:
    """Stop every kept runner (the end of the test process)."""
    with _lock:
        runners = [r for pool in _idle.values() for r in pool]
        _idle.clear()
    for runner in runners:
        runner.close()
