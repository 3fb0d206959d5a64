"""The oracle: the stock Hive Metastore 2.3.10 shipped in PySpark's jars, on embedded Derby.

Whatever it answers is, by definition, correct HMS 2.3 behaviour; the conformance
suite compares our server against it.
"""

from __future__ import annotations

from pathlib import Path

from hms_proxy.tools.metastores import MetastoreProcess, start_stock_hms

STARTUP_TIMEOUT = 120.0


# Beyond the stock HMS with transactions (hms_proxy.tools.metastores), the oracle needs:
ORACLE_PROPERTIES = {
    # Failed JDO calls (e.g. a Derby constraint violation) are retried 10 times; keep
    # the retries but not the 2 s pause between them, which made some scenarios take 20 s.
    "hive.hmshandler.retry.interval": "10ms",
    # get_aggr_stats_for answers from an approximate cache that matches requests for
    # *other* partition lists; the oracle must answer exactly what it stores.
    "hive.metastore.aggregate.stats.cache.enabled": "false",
}


def start_oracle(workdir: Path | str, timeout: float = STARTUP_TIMEOUT) -> MetastoreProcess:
    """Start a fresh stock HMS 2.3.10 in `workdir` (with its transaction tables); returns once
    it answers Thrift calls."""
    return start_stock_hms(workdir, with_transactions=True, extra_properties=ORACLE_PROPERTIES,
                           timeout=timeout)
