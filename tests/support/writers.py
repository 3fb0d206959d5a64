"""Writer threads started together, for tests of concurrent writes."""
from __future__ import annotations

import threading


def writers_at_once(count: int, per_writer: int, work) -> list[BaseException]:
    """``work(w, i)`` for ``i`` in ``range(per_writer)`` in each of ``count`` threads ``w``,
    all starting together; the exceptions that ended a writer (AssertionError if one never
    finishes within 240 s)."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def one(w):
        barrier.wait()
        try:
            for i in range(per_writer):
                work(w, i)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(w,)) for w in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not any(t.is_alive() for t in threads), "a writer never finished"
    return errors
