"""Fixtures of the integration suite."""
from __future__ import annotations

import pytest

from tests.support.upstream import start_filled_hms


@pytest.fixture(scope="session")
def spark_filled_hms(tmp_path_factory):
    """A stock HMS 2.3.10 filled by Spark SQL (databases ``up_sales`` and ``up_other``; see
    :mod:`tests.support.upstream` for its content), shared by the session: an
    :class:`~tests.support.upstream.Upstream` (``.uri``, ``.host``, ``.port``, ``.hms``).
    Treat those two databases as read-only; tests that change the upstream create databases
    of their own in it (and drop them)."""
    upstream = start_filled_hms(tmp_path_factory.mktemp("upstream"))
    yield upstream
    upstream.stop()
