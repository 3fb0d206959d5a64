"""The oracle: the stock Hive Metastore 2.3.10 shipped in PySpark's jars, on embedded Derby.

Whatever it answers is, by definition, correct HMS 2.3 behaviour; the conformance
suite compares our server against it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from hms_proxy.metastores import MetastoreProcess, classpath, start_stock_hms
from tests.support.process import REPO_ROOT

LAUNCHER_SOURCE = Path(__file__).resolve().parent / "java" / "OracleLauncher.java"
ARTIFACTS = REPO_ROOT / "tests" / ".artifacts"
STARTUP_TIMEOUT = 120.0


def compile_launcher() -> Path:
    """Compile OracleLauncher.java once per source version into tests/.artifacts.

    The output directory is keyed by the source hash and created by an atomic
    rename, so concurrent test processes never see a half-written class.
    """
    digest = hashlib.sha256(LAUNCHER_SOURCE.read_bytes()).hexdigest()[:12]
    out = ARTIFACTS / f"oracle-launcher-{digest}"
    if (out / "OracleLauncher.class").exists():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError("javac (JDK 17) is needed to compile the oracle launcher")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tmp = ARTIFACTS / f".tmp-{digest}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    result = subprocess.run([javac, "-cp", classpath(), "-d", str(tmp), str(LAUNCHER_SOURCE)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"javac failed:\n{result.stdout}\n{result.stderr}")
    try:
        tmp.rename(out)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# Beyond the stock HMS's plain Derby setup (hms_proxy.metastores), the oracle needs:
ORACLE_PROPERTIES = {
    # Lock and transaction calls need the DbTxnManager tables (see OracleLauncher).
    "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
    "hive.support.concurrency": "true",
    "hive.compactor.initiator.on": "false",
    "hive.compactor.worker.threads": "0",
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
    return start_stock_hms(workdir, extra_properties=ORACLE_PROPERTIES,
                           extra_classpath=str(compile_launcher()), main_class="OracleLauncher",
                           timeout=timeout)
