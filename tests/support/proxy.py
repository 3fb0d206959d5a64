"""Our server (`python -m hms_proxy.cli serve`) as a subprocess, interchangeable with the oracle."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from tests.support.process import REPO_ROOT, MetastoreProcess, free_port, spawn

STARTUP_TIMEOUT = 60.0


def proxy_available() -> bool:
    """Whether the server module exists yet (it is being written alongside these tests)."""
    return importlib.util.find_spec("hms_proxy.cli") is not None


def start_proxy(workdir: Path | str, *extra_args: str, timeout: float = STARTUP_TIMEOUT) -> MetastoreProcess:
    """Start our server over a fresh store in `workdir`; returns once it answers Thrift calls."""
    workdir = Path(workdir).resolve()
    warehouse = workdir / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd = [sys.executable, "-m", "hms_proxy.cli", "serve", "--store", str(workdir / "store"),
           "--port", str(port), "--warehouse", str(warehouse), *extra_args]
    started = time.monotonic()
    proc = spawn("proxy", cmd, workdir=workdir, port=port, warehouse=warehouse, cwd=REPO_ROOT,
                 timeout=timeout)
    proc.startup_seconds = time.monotonic() - started
    return proc
