"""Fixtures of the store tests: ``store`` runs every contract test once per backend.

To add a backend, register a factory in ``BACKENDS``: it gets a fresh temporary directory and
returns an empty store (one ``main`` branch with its initial commit). A backend that needs a
server should ``pytest.skip`` from its factory when none is configured.

* ``local``: the embedded SQLite store;
* ``lakefs``: the lakeFS backend against a real lakeFS, built from its Go module and started
  once per test session (:mod:`tests.support.lakefs`), a fresh repository per test.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kvmodel.store.contract import VersionedStore
from kvmodel.store.local import LocalStore


def _local(tmp_path: Path) -> VersionedStore:
    return LocalStore(tmp_path / "store")


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
