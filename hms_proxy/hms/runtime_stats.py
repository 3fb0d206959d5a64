"""Runtime statistics (``add_runtime_stats``, ``get_runtime_stats``), as HMS 3.1/4.x serve them.

Hive keeps what it observed running a query (operator row counts, serialized by the client:
the payload is opaque here) so that a re-executed query can be planned with them
(``hive.query.reexecution.stats.persist.scope=metastore``). The stock metastore stores each in
a row with the time it was added, and answers the newest first. Here they are stored with the
catalog, per branch like the delegation tokens::

    runtime/stats/<createTime>-<id>     a RuntimeStat (createTime zero-padded to 10 digits: key
                                        order is time order; the id keeps two stats of one
                                        second apart, and two branches' stats from clashing
                                        on merge)

As the stock (its ObjectStore and RuntimeStatsCleanerTask):

- ``add_runtime_stats`` stores the weight and payload with the server's time as createTime
  (the client's is ignored); a null stat or request is the stock's NullPointerException: an
  internal error for a Hive 4 client, the connection dropped for a 3.1 one (as the stock 3.1's
  Thrift does);
- ``get_runtime_stats`` answers the stats newest first, those older than ``maxCreateTime``
  when it is positive, until their weights add up to ``maxWeight`` (the one that reaches it
  included; a negative ``maxWeight`` takes them all);
- stats older than ``metastore.runtime.stats.max.age`` (3 days by default; 0 keeps them
  all) go: here when a stat is added, in the same write.
"""
from __future__ import annotations

import time
import uuid

from hms_proxy.hms.family import Family
from hms_proxy.hms.service import java_time_millis
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.processor import CloseConnection
from kvmodel import codec

PREFIX = "runtime/stats/"
MAX_AGE_KEY = "metastore.runtime.stats.max.age"
DEFAULT_MAX_AGE = 3 * 86400


def _unchecked(what: str) -> None:
    """A Java NullPointerException in the stock handler: Hive 4's Thrift answers it as an
    internal error, 3.1's (libthrift 0.9.3) drops the connection."""
    if dialect.hive4():
        raise errors.InternalError(what)
    raise CloseConnection(what)


class RuntimeStatsCalls(Family):
    def _max_age(self) -> int:
        """The setting in seconds, read as HiveConf reads a time (``3d``, ``72h``, ``259200``);
        the default when unset or unreadable."""
        value = self.env.conf.get(MAX_AGE_KEY)
        try:
            return java_time_millis(value) // 1000 if value else DEFAULT_MAX_AGE
        except ValueError:
            return DEFAULT_MAX_AGE

    def add_runtime_stats(self, ctx, stat):
        if stat is None:
            _unchecked("add_runtime_stats: the stat is null")
        created = int(time.time())
        kept = self.t.RuntimeStat(createTime=created, weight=stat.weight or 0,
                                  payload=stat.payload)
        max_age = self._max_age()
        with self.writing(ctx) as cat:
            if max_age > 0:
                oldest = f"{PREFIX}{created - max_age:010d}"
                for key, _ in cat.view.scan_prefix(PREFIX):
                    if key >= oldest:
                        break
                    cat.delete(key)
            cat.put(f"{PREFIX}{created:010d}-{uuid.uuid4().hex}", kept)

    def get_runtime_stats(self, ctx, rqst):
        if rqst is None:
            _unchecked("get_runtime_stats: the request is null")
        max_weight = rqst.maxWeight if rqst.maxWeight is not None else -1
        before = rqst.maxCreateTime or 0
        with self.reading(ctx) as cat:
            stored = [value for _, value in cat.view.scan_prefix(PREFIX)]
        out, total = [], 0
        for raw in reversed(stored):  # newest first
            stat = codec.decode(self.t.RuntimeStat, raw)
            if before > 0 and not (stat.createTime or 0) < before:
                continue
            out.append(stat)
            total += stat.weight or 0
            if max_weight >= 0 and total >= max_weight:
                break
        return out
