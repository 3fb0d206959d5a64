"""Fixtures of the store tests: ``store`` runs every contract test once per backend.

To add a backend, register a factory in ``BACKENDS``: it gets a fresh temporary directory and
returns an empty store (one ``main`` branch with its initial commit). A backend that needs a
server should ``pytest.skip`` from its factory when none is configured.

* ``local``: the embedded SQLite store;
* ``lakefs``: the lakeFS backend against a real lakeFS, built from its Go module and started
  once per test session (:mod:`tests.support.lakefs`), a fresh repository per test.

The in-process **test double** of lakeFS's REST API (:func:`lakefs_double`) is kept only for
what a real lakeFS cannot be made to do on demand: injected faults (tests/kvmodel/store/test_lakefs.py).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from kvmodel.store.contract import VersionedStore
from kvmodel.store.local import LocalStore

_DOUBLE = None


def _local(tmp_path: Path) -> VersionedStore:
    return LocalStore(tmp_path / "store")


def lakefs_double():
    """The session's lakeFS test double (started on first use)."""
    global _DOUBLE
    if _DOUBLE is None:
        import lakefs_sdk  # noqa: F401

        from tests.support.lakefs_double import LakeFSDouble

        _DOUBLE = LakeFSDouble(access_key_id="AKIAHMSPROXYTEST", secret_access_key="secret")
    return _DOUBLE


def _lakefs_double(tmp_path: Path) -> VersionedStore:
    from kvmodel.store.lakefs import LakeFSConfig, LakeFSStore

    double = lakefs_double()
    repo = f"r{uuid.uuid4().hex[:16]}"
    double.create_repository(repo, default_branch="main")
    return LakeFSStore(repo, LakeFSConfig(double.endpoint, "AKIAHMSPROXYTEST", "secret"))


def _lakefs_real(tmp_path: Path) -> VersionedStore:
    import lakefs_sdk  # noqa: F401

    from tests.support.lakefs import new_store

    return new_store()


BACKENDS: dict[str, Callable[[Path], VersionedStore]] = {
    "local": _local,
    "lakefs": _lakefs_real,
}


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path) -> VersionedStore:
    s = BACKENDS[request.param](tmp_path)
    yield s
    s.close()


@pytest.fixture
def local_store(tmp_path) -> LocalStore:
    s = LocalStore(tmp_path / "store")
    yield s
    s.close()
