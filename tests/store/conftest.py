"""Fixtures of the store tests: ``store`` runs every contract test once per backend.

To add a backend, register a factory in ``BACKENDS``: it gets a fresh temporary directory and
returns an empty store (one ``main`` branch with its initial commit). A backend that needs a
server (lakeFS) should ``pytest.skip`` from its factory when none is configured.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kvmodel.contract import VersionedStore
from kvmodel.store.local import LocalStore


def _local(tmp_path: Path) -> VersionedStore:
    return LocalStore(tmp_path / "store")


BACKENDS: dict[str, Callable[[Path], VersionedStore]] = {
    "local": _local,
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
