"""Runtime statistics (``add_runtime_stats``, ``get_runtime_stats``) sent the same to the stock
HMS 3.1.3 or 4.0.1 and to us; what is compared: errors, which stats each request answers (by
payload: stats added within one second have no order between them) and their weights. Used
by tests/hms/test_catalog_names.py (3.1.3) and tests/hms/test_stock_hms4.py (4.0.1)."""
from __future__ import annotations

import time

from hms_proxy.thrift.gen.hive_metastore import ttypes as T


def _next_second() -> None:
    """Wait until the clock's second changes (the stats' createTime is in seconds)."""
    now = int(time.time())
    while int(time.time()) == now:
        time.sleep(0.02)


def _answer(call):
    try:
        stats = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return ("error", type(exc).__name__)
    return ("ok", sorted((s.payload, s.weight) for s in stats), len(stats))


def run(connection) -> list:
    """(label, answer) of each step; each stat is added in a second of its own (the stock
    orders those of one second as its database finds them), so that ``maxCreateTime`` and the
    newest-first order can be seen."""
    out = []
    with connection() as c:
        out += _steps(c)
    # each on a connection of its own: HMS 3.1 drops the connection on them
    for label, call in (("null request", lambda c: c.get_runtime_stats(None)),
                        ("null stat", lambda c: c.add_runtime_stats(None) or [])):
        with connection() as c:
            out.append((label, _answer(lambda: call(c))))
            out.append((label + ", then", _answer(lambda: c.get_runtime_stats(
                T.GetRuntimeStatsRequest(0, -1)))))
    return out


def _steps(c) -> list:
    out = []
    for i, weight in enumerate((5, 1, 2, 3)):
        if i:
            _next_second()
        c.add_runtime_stats(T.RuntimeStat(createTime=1, weight=weight, payload=b"p%d" % i))
    everything = c.get_runtime_stats(T.GetRuntimeStatsRequest(-1, -1))
    out.append(("all", _answer(lambda: everything)))
    out.append(("createTime is the server's", all(s.createTime > 1000 for s in everything)))
    newest = max(s.createTime for s in everything)
    for label, weight, before in (("weight 1", 1, -1), ("weight 6", 6, -1), ("weight 0", 0, -1),
                                  ("weight 7", 7, -1), ("before the newest", -1, newest),
                                  ("before 1970", -1, 1), ("weight 100, before the newest",
                                                           100, newest)):
        out.append((label, _answer(lambda w=weight, b=before: c.get_runtime_stats(
            T.GetRuntimeStatsRequest(w, b)))))
    return out
