"""Metastore child processes for the tests: the package's own helpers, plus the repo root.

Both the stock HMS (the oracle) and our server are started by :mod:`hms_proxy.metastores`
(also used by ``hms-proxy bench``); this module only adds what is particular to the tests.
"""

from __future__ import annotations

from pathlib import Path

from hms_proxy.metastores import (MetastoreProcess, free_port, log_tail,  # noqa: F401 - re-exported
                                  spawn, wait_ready)

REPO_ROOT = Path(__file__).resolve().parents[2]
