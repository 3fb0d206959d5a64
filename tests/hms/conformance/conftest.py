"""The conformance suite's own stock HMS and server, fresh for it alone.

Its scenarios compare the two servers' answers call by call, including state other tests
leave behind in the session's shared pair (transaction ids, locks, roles): the recorded Trino
sequences replay fixed transaction ids. A pair started for this package makes the suite
independent of what ran before it.
"""
from __future__ import annotations

import pytest

from tests.support.oracle import start_oracle
from tests.support.proxy import start_proxy


@pytest.fixture(scope="package")
def oracle(tmp_path_factory):
    proc = start_oracle(tmp_path_factory.mktemp("conformance-oracle"))
    yield proc
    proc.stop()


@pytest.fixture(scope="package")
def proxy(tmp_path_factory):
    proc = start_proxy(tmp_path_factory.mktemp("conformance-proxy"))
    yield proc
    proc.stop()
