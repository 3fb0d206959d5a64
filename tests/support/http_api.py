"""The HTTP API as a child process for the tests: ``hms-proxy api`` over a store, or ``serve``
with ``--http-port`` (a Thrift server with the API beside it); and a small JSON client."""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from hms_proxy.tools.metastores import MetastoreProcess, free_port, log_tail
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy


@dataclass
class Answer:
    status: int
    body: object
    headers: dict

    @property
    def error(self) -> dict:
        return (self.body or {}).get("error") or {}


class Client:
    """JSON over HTTP to one server, as one caller (``user``: X-HMS-User; ``basic``:
    (user, password))."""

    def __init__(self, base: str, user: str | None = None, basic: tuple[str, str] | None = None):
        self.base = base.rstrip("/")
        self.user = user
        self.basic = basic

    def call(self, method: str, path: str, body=None, query: dict | None = None,
             headers: dict | None = None) -> Answer:
        url = self.base + path
        if query:
            from urllib.parse import urlencode

            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.user:
            req.add_header("X-HMS-User", self.user)
        if self.basic:
            token = base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        for key, value in (headers or {}).items():
            req.add_header(key, value)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                raw, status, hdrs = resp.read(), resp.status, dict(resp.headers)
        except urllib.error.HTTPError as exc:
            raw, status, hdrs = exc.read(), exc.code, dict(exc.headers)
        ctype = hdrs.get("Content-Type", "")
        parsed = json.loads(raw) if raw and ctype.startswith("application/json") else raw
        return Answer(status, parsed, hdrs)

    def get(self, endpoint, /, **query) -> Answer:
        return self.call("GET", "/api/v1" + endpoint, query=query or None)

    def post(self, path, body) -> Answer:
        return self.call("POST", "/api/v1" + path, body)

    def put(self, path, body) -> Answer:
        return self.call("PUT", "/api/v1" + path, body)

    def delete(self, path) -> Answer:
        return self.call("DELETE", "/api/v1" + path)


def wait_http(base: str, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(base + "/api/v1/info", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            time.sleep(0.2)
    raise TimeoutError(f"no HTTP answer from {base} within {timeout:.0f}s:\n{log_tail(log)}")


class ApiProcess:
    """``hms-proxy api --store STORE`` on a free port."""

    def __init__(self, workdir: Path, store: Path | str, *extra: str, env: dict | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "api.log"
        self._log = open(self.log_path, "ab")
        cmd = [sys.executable, "-m", "hms_proxy.cli", "api", "--store", str(store),
               "--port", str(self.port), "--host", "127.0.0.1", *extra]
        env = dict(env if env is not None else os.environ, PYTHONPATH=str(REPO_ROOT))
        self.popen = subprocess.Popen(cmd, cwd=workdir, stdout=self._log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True, env=env)
        try:
            wait_http(self.base, self.popen, self.log_path)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(20)
        self._log.close()


class ServeWithHttp:
    """``hms-proxy serve ... --http-port P``: Thrift (``proc``) and HTTP (``base``)."""

    def __init__(self, workdir: Path, store: Path, *extra: str):
        self.http_port = free_port()
        self.base = f"http://127.0.0.1:{self.http_port}"
        self.proc: MetastoreProcess = start_proxy(workdir, "--http-port", str(self.http_port),
                                                  *extra, store=store)
        try:
            wait_http(self.base, self.proc.popen, self.proc.log_path)
        except BaseException:
            self.proc.stop()
            raise

    def stop(self) -> None:
        self.proc.stop()
