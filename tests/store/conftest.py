"""Fixtures of the store tests: ``store`` runs every contract test once per backend.

To add a backend, register a factory in ``BACKENDS``: it gets a fresh temporary directory and
returns an empty store (one ``main`` branch with its initial commit). A backend that needs a
server should ``pytest.skip`` from its factory when none is configured.

* ``local``: the embedded SQLite store;
* ``lakefs-double``: the lakeFS backend against :class:`tests.support.lakefs_double.
  LakeFSDouble`, an in-process **test double** of the lakeFS REST API (no lakeFS server can run
  on the machines this project is built on), a fresh repository per test;
* ``lakefs``: the lakeFS backend against a real lakeFS, started by testcontainers where a
  Docker engine answers (``treeverse/lakefs``, local block storage) or named by
  ``HMS_TEST_LAKEFS_ENDPOINT`` / ``..._ACCESS_KEY_ID`` / ``..._SECRET_ACCESS_KEY``; skipped with
  the reason otherwise.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from kvmodel.contract import VersionedStore
from kvmodel.store.local import LocalStore

_DOUBLE = None
_REAL = None


def _local(tmp_path: Path) -> VersionedStore:
    return LocalStore(tmp_path / "store")


def lakefs_double():
    """The session's lakeFS test double (started on first use)."""
    global _DOUBLE
    if _DOUBLE is None:
        pytest.importorskip("lakefs_sdk")
        from tests.support.lakefs_double import LakeFSDouble

        _DOUBLE = LakeFSDouble(access_key_id="AKIAHMSPROXYTEST", secret_access_key="secret")
    return _DOUBLE


def _lakefs_double(tmp_path: Path) -> VersionedStore:
    from kvmodel.store.lakefs import LakeFSConfig, LakeFSStore

    double = lakefs_double()
    repo = f"r{uuid.uuid4().hex[:16]}"
    double.create_repository(repo, default_branch="main")
    return LakeFSStore(repo, LakeFSConfig(double.endpoint, "AKIAHMSPROXYTEST", "secret"))


def real_lakefs():
    """(endpoint, key, secret) of a real lakeFS, or pytest.skip with the reason."""
    global _REAL
    if _REAL is not None:
        return _REAL
    env = os.environ
    if env.get("HMS_TEST_LAKEFS_ENDPOINT"):
        _REAL = (env["HMS_TEST_LAKEFS_ENDPOINT"], env["HMS_TEST_LAKEFS_ACCESS_KEY_ID"],
                 env["HMS_TEST_LAKEFS_SECRET_ACCESS_KEY"])
        return _REAL
    from tests.support.lakefs_container import start_lakefs

    _REAL = start_lakefs()  # skips when no Docker engine answers
    return _REAL


def _lakefs_real(tmp_path: Path) -> VersionedStore:
    pytest.importorskip("lakefs_sdk")
    from kvmodel.store.lakefs import LakeFSConfig, LakeFSStore
    from tests.support.lakefs_container import create_repository

    endpoint, key, secret = real_lakefs()
    repo = f"r{uuid.uuid4().hex[:16]}"
    create_repository(endpoint, key, secret, repo)
    return LakeFSStore(repo, LakeFSConfig(endpoint, key, secret))


BACKENDS: dict[str, Callable[[Path], VersionedStore]] = {
    "local": _local,
    "lakefs-double": _lakefs_double,
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
