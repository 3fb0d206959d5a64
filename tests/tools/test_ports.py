"""Starting local servers on picked ports when other programs pick ports too
(:mod:`hms_proxy.tools.ports`): a port taken between the pick and the listen costs a retry on
another port, never another program's listener taken for ours; and ``serve`` says in one
line which port it could not have."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from hms_proxy.tools import metastores, ports
from tests.support.client import connect
from tests.support.process import REPO_ROOT


@pytest.fixture
def taken():
    """A port another program listens on (a socket of this test's)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock.getsockname()[1]
    sock.close()


def test_a_port_taken_after_the_pick_is_replaced_by_another(taken, tmp_path, monkeypatch):
    picks = [taken]  # the first pick is a port someone took meanwhile
    real = ports.free_port
    monkeypatch.setattr(ports, "free_port", lambda: picks.pop() if picks else real())
    server = metastores.start_proxy(tmp_path)
    try:
        assert server.port != taken and not picks
        assert ports.listens(server.popen.pid, server.port) is True
        assert ports.listens(server.popen.pid, taken) is False
        with connect(server) as client:
            assert client.get_all_databases() == ["default"]
        assert "--port %d: Address already in use" % taken in server.log_path.read_text()
    finally:
        server.stop()


def test_a_port_given_and_taken_fails_with_the_reason(taken, tmp_path):
    with pytest.raises(ports.PortTaken, match=f"port {taken} was taken"):
        metastores.start_proxy(tmp_path, port=taken)


def test_serve_says_which_port_it_cannot_have(taken, tmp_path):
    for args, option in ((["--port", str(taken)], f"--port {taken}"),
                         (["--port", "0", "--bind", f"{taken}=main"], f"--bind {taken}=main"),
                         (["--port", "0", "--metrics-port", str(taken)],
                          f"--metrics-port {taken}"),
                         (["--port", "0", "--http-port", str(taken)], f"--http-port {taken}")):
        done = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "serve", "--store",
                               str(tmp_path / "store"), "--host", "127.0.0.1", *args],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip().splitlines()[-1] == \
            f"hms-proxy: error: {option}: Address already in use", (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_announced_ports_of_listeners_asked_on_port_zero(tmp_path):
    server = metastores.start_proxy(tmp_path, "--bind", "0=main", "--http-port", "0",
                                    "--metrics-port", "0")
    try:
        found = {what: server.announced_port(what) for what in ("ref main", "http", "metrics")}
        assert len(set(found.values()) | {server.port}) == 4, found
        for port in found.values():
            assert ports.listens(server.popen.pid, port) is True
        assert server.ref_port("main") == found["ref main"]
        with pytest.raises(ValueError):
            server.announced_port("nothing")
    finally:
        server.stop()
