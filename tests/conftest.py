"""Shared pytest fixtures. Keep this file thin: the logic lives in tests/support/."""

import os

import pytest

from tests.support.oracle import start_oracle
from tests.support.proxy import start_proxy
from tests.support.upstream import start_filled_hms

# xdist groups, longest first, and the run's seconds per group (tests/support/schedule.py)
pytest_plugins = ["tests.support.schedule"]

# The JVMs the tests start (Spark sessions, the stock HMS oracles, Trino, Iceberg's kit) live
# for seconds to minutes: compiled by C1 alone and with the serial collector, a Spark session
# costs 40% less CPU (18 s -> 11 s) and starts sooner; on two cores CPU is the suite's limit.
# Trino keeps its own collector (hms_proxy.tools.trino_local). Set it to "" to run them as is.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

# The machine's downloads and builds (~/.cache/hms-proxy: lakeFS, Trino, the stock metastores)
# stay where they are when a test moves HOME: pytester runs a test with HOME at its tmp_path,
# and the session's lakeFS first asked for there was built again from its Go module (15 minutes
# on a loaded machine: the pytest plugin's lakeFS test ran into its 900 s timeout).
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))


def pytest_sessionfinish(session, exitstatus):
    """The session's Trino and lakeFS stop with it: a pytest-xdist worker leaves without
    running atexit's functions, and a Trino left behind kept 2 GB and a core's share after a
    run of make test."""
    from tests.support import lakefs, spark_runs, trino

    trino.stop()
    lakefs.stop()
    spark_runs.close_all()


@pytest.fixture(scope="session")
def oracle(tmp_path_factory):
    """The stock HMS 2.3.10 (PySpark's jars, embedded Derby), shared by the whole session."""
    proc = start_oracle(tmp_path_factory.mktemp("oracle"))
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def proxy(tmp_path_factory):
    """Our server over a fresh store, shared by the whole session."""
    proc = start_proxy(tmp_path_factory.mktemp("proxy"))
    yield proc
    proc.stop()


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
