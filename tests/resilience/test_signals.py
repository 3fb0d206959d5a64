"""Bursts of SIGINT/SIGTERM (Ctrl-C pressed twice, a supervisor signalling a process and its
group) stop every long-running command promptly and cleanly: exit status 0, the port free,
calls in flight answered whole.

Before hms_proxy.ops.shutdown, the handler called ``Event.set`` and a second signal arriving inside
the first handler either waited forever for the event's lock (the server wedged, port bound) or
recursed until a RecursionError (exit 1); both showed within a few dozen bursts.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.ops.shutdown import StopRequest
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from tests.support.process import REPO_ROOT, free_port
from tests.support.wait import DEADLINE, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# seconds from the burst's first signal to the exit: a wedged process never exits; a healthy
# one within a second (serve --processes: ~5 s, the embedded Redis stopping), so this only
# leaves room for a machine running other test suites beside this one
EXIT_WITHIN = DEADLINE


_started: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _none_left_running():
    """A test that failed before its process exited leaves no process (nor port) behind."""
    yield
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _start(args: list[str], tmp_path, marker: str) -> tuple[subprocess.Popen, int]:
    """Start ``hms-proxy ARGS`` in its own process group; returns once it printed ``marker``
    with its port."""
    log = open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "hms_proxy.cli", *args], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=log, text=True,
                            start_new_session=True)
    _started.append(proc)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if marker in line:
            port = int(line.split(":")[-1].split()[0].split("/")[0])
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep draining
            return proc, port
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(f"{args} did not start: {(tmp_path / 'stderr.log').read_text()[-3000:]}")


def _burst(pid: int, group: bool, count: int = 60) -> None:
    """``count`` signals, SIGINT and SIGTERM mixed, each 0-0.5 ms after the previous: some land
    inside the handler of an earlier one."""
    for i in range(count):
        sig = signal.SIGINT if i % 3 else signal.SIGTERM
        try:
            (os.killpg if group else os.kill)(pid, sig)
        except ProcessLookupError:
            return
        time.sleep(random.random() * 0.0005)


def _assert_stopped(proc: subprocess.Popen, port: int, tmp_path) -> None:
    try:
        code = proc.wait(EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the group: workers too
        proc.wait()
        raise AssertionError(f"no exit {EXIT_WITHIN} s after a burst of signals (wedged)")
    err = (tmp_path / "stderr.log").read_text()
    assert code == 0, f"exit status {code}:\n{err[-3000:]}"
    assert "Traceback" not in err, err[-3000:]
    with socket.socket() as s:  # the port is free again
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


class _ReplySocket(TSocket.TSocket):
    """A client socket that counts the bytes read of the reply to the call it sent last."""

    reply_bytes = 0

    def write(self, buff):
        self.reply_bytes = 0  # a new call: nothing of its reply read yet
        super().write(buff)

    def read(self, sz):
        data = super().read(sz)
        self.reply_bytes += len(data)
        return data


class _Caller(threading.Thread):
    """Calls ``get_all_databases`` in a loop until the server goes; every answer it got must
    be whole: the connection may close between two calls (no byte of the next reply read),
    never in the middle of a reply. It is started while the server is up, so failing to
    connect is a failure too (``bad``)."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port, self.answers, self.bad = port, 0, None

    def run(self):
        try:
            sock = _ReplySocket("127.0.0.1", self.port)
            sock.setTimeout(30_000)
            trans = TTransport.TBufferedTransport(sock)
            trans.open()
            client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(trans))
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.bad = exc
            return
        try:
            while True:
                assert "default" in client.get_all_databases()
                self.answers += 1
        except TTransport.TTransportException as exc:  # every socket error is one (TSocket)
            if sock.reply_bytes:
                self.bad = AssertionError(f"the connection closed {sock.reply_bytes} bytes into "
                                          f"a reply: {exc!r}")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.bad = exc
        finally:
            trans.close()


def _wait_answering(callers: list[_Caller]) -> None:
    """Until every caller has had an answer (its calls are in flight from then on)."""
    def answering():
        for c in callers:
            assert c.is_alive(), f"a caller stopped while the server was up: {c.bad!r}"
        return all(c.answers for c in callers)
    wait_until(answering, what="an answer to every caller")


def _assert_callers_done(callers: list[_Caller]) -> None:
    """Every caller saw the server go (its connection closed) after its answers, all whole."""
    for c in callers:
        c.join(DEADLINE)
        assert not c.is_alive(), "a caller still waits for an answer after the server exited"
        assert c.bad is None, repr(c.bad)
        assert c.answers > 0


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_handler_reentered_by_a_burst_only_sets_its_flag():
    stop = StopRequest()
    for _ in range(10_000):  # what a burst does to a handler that is interrupted by itself
        stop._handle(signal.SIGINT, None)
    assert stop.requested and stop.wait(0)
    stop.close()
    stop._handle(signal.SIGINT, None)  # after close: no write to a reused descriptor


@pytest.mark.parametrize("round_", range(12))
def test_serve_stops_cleanly_on_a_burst_of_signals(tmp_path, round_):
    proc, port = _start(["serve", "--store", str(tmp_path / "store"), "--host", "127.0.0.1",
                         "--port", "0"], tmp_path, "hms-proxy listening on")
    callers = [_Caller(port) for _ in range(3)]
    for c in callers:
        c.start()
    _wait_answering(callers)
    _burst(proc.pid, group=bool(round_ % 2))
    _assert_stopped(proc, port, tmp_path)
    _assert_callers_done(callers)


@pytest.mark.parametrize("round_", range(3))
def test_serve_processes_stops_cleanly_on_a_burst_to_its_group(tmp_path, round_):
    port = free_port()
    proc, _ = _start(["serve", "--store", str(tmp_path / "store"), "--host", "127.0.0.1",
                      "--port", str(port), "--processes", "2"], tmp_path, "supervising")
    wait_until(lambda: _accepts(port), what=f"a worker listening on port {port}")
    caller = _Caller(port)
    caller.start()
    _wait_answering([caller])
    _burst(proc.pid, group=True)
    _assert_stopped(proc, port, tmp_path)
    _assert_callers_done([caller])


@pytest.mark.parametrize("round_", range(5))
def test_api_stops_cleanly_on_a_burst_of_signals(tmp_path, round_):
    store = tmp_path / "store"  # made by a serve that stops at once
    p, _ = _start(["serve", "--store", str(store), "--host", "127.0.0.1", "--port", "0"],
                  tmp_path, "hms-proxy listening on")
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 0
    proc, port = _start(["api", "--store", str(store), "--host", "127.0.0.1", "--port", "0"],
                        tmp_path, "http://")
    _burst(proc.pid, group=bool(round_ % 2))
    _assert_stopped(proc, port, tmp_path)
