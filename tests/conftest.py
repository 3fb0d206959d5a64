"""Shared pytest fixtures. Keep this file thin: the logic lives in tests/support/."""

import pytest

from tests.support.oracle import start_oracle
from tests.support.proxy import proxy_available, start_proxy


@pytest.fixture(scope="session")
def oracle(tmp_path_factory):
    """The stock HMS 2.3.10 (PySpark's jars, embedded Derby), shared by the whole session."""
    proc = start_oracle(tmp_path_factory.mktemp("oracle"))
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def proxy(tmp_path_factory):
    """Our server over a fresh store, shared by the whole session."""
    if not proxy_available():
        pytest.skip("hms_proxy.cli does not exist yet")
    proc = start_proxy(tmp_path_factory.mktemp("proxy"))
    yield proc
    proc.stop()
