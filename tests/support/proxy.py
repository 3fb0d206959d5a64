"""Our server (`python -m hms_proxy.cli serve`) as a subprocess, interchangeable with the oracle."""

from __future__ import annotations

from pathlib import Path

from hms_proxy.tools import metastores
from hms_proxy.tools.metastores import MetastoreProcess
from tests.support.process import REPO_ROOT

STARTUP_TIMEOUT = 60.0



def start_proxy(workdir: Path | str, *extra_args: str, timeout: float = STARTUP_TIMEOUT,
                **options) -> MetastoreProcess:
    """Start our server (by default over a fresh store in `workdir`); returns once it answers
    Thrift calls. ``options`` are those of :func:`hms_proxy.tools.metastores.start_proxy`."""
    return metastores.start_proxy(workdir, *extra_args, cwd=REPO_ROOT, timeout=timeout, **options)
