"""The real Trino of the test session (:mod:`hms_proxy.tools.trino_local`): downloaded once per machine,
started on first use, stopped when the session ends. Each test adds the catalogs it needs
(``CREATE CATALOG``: Trino's dynamic catalogs) under names of its own.
"""
from __future__ import annotations

import atexit
import uuid

_SERVER = None


def real_trino():
    """The session's Trino coordinator (a :class:`hms_proxy.tools.trino_local.TrinoProcess`)."""
    global _SERVER
    if _SERVER is not None and _SERVER.alive():
        return _SERVER
    import pytest

    from hms_proxy.tools import trino_local

    try:
        _SERVER = trino_local.start_trino()
    except trino_local.JavaMissing as exc:  # no Java 24+ JDK on this machine: say so
        pytest.skip(str(exc))
    atexit.register(_SERVER.stop)
    _SERVER.execute("CREATE CATALOG tpch USING tpch")  # data sets for the scenarios
    return _SERVER


def stop() -> None:
    """Stop the session's Trino (at the end of a pytest session: an xdist worker leaves
    without running atexit's functions, and a Trino left behind outlives the run)."""
    global _SERVER
    if _SERVER is not None:
        _SERVER.stop()
        _SERVER = None


def add_catalog(metastore_uri: str, prefix: str = "c", **kwargs) -> str:
    """A new Hive catalog over ``metastore_uri`` (see trino_local.hive_catalog); its name."""
    from hms_proxy.tools import trino_local

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    real_trino().add_catalog(name, trino_local.hive_catalog(metastore_uri, **kwargs))
    return name


__all__ = ["real_trino", "add_catalog", "stop"]
