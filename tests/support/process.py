"""Metastore child processes for the tests: the package's own helpers, plus the repo root.

Both the stock HMS (the oracle) and our server are started by :mod:`hms_proxy.tools.metastores`
(also used by ``hms-proxy bench``); this module only adds what is particular to the tests.
"""

from __future__ import annotations

from pathlib import Path

from hms_proxy.tools.metastores import MetastoreProcess, free_port, log_tail, spawn, wait_ready  # noqa: F401 - re-exported

REPO_ROOT = Path(__file__).resolve().parents[2]
