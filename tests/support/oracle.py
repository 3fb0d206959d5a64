"""The oracle: the stock Hive Metastore 2.3.10 shipped in PySpark's jars, on embedded Derby.

Whatever it answers is, by definition, correct HMS 2.3 behaviour; the conformance
suite compares our server against it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.support.process import REPO_ROOT, MetastoreProcess, free_port, spawn

LAUNCHER_SOURCE = Path(__file__).resolve().parent / "java" / "OracleLauncher.java"
ARTIFACTS = REPO_ROOT / "tests" / ".artifacts"
STARTUP_TIMEOUT = 120.0


def pyspark_jars() -> Path:
    """PySpark's jars directory, which holds hive-metastore-2.3.10 and all it needs."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not (jars / "hive-metastore-2.3.10.jar").exists():
        raise RuntimeError(f"hive-metastore-2.3.10.jar not found in {jars}")
    return jars


def classpath() -> str:
    return f"{pyspark_jars()}/*"


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


def system_properties(workdir: Path, warehouse: Path) -> dict[str, str]:
    """The HMS configuration, passed as -D flags (HiveConf reads system properties)."""
    return {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.async.log.enabled": "false",
        "datanucleus.connectionPoolingType": "HikariCP",
        "hive.metastore.warehouse.dir": str(warehouse),
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
        # Send HMS's log4j2 output to the console, i.e. to our log file, not /tmp/$USER/hive.log.
        "hive.root.logger": "console",
        "hive.log.dir": str(workdir),
        # Keep Derby's own files inside the work directory.
        "derby.system.home": str(workdir),
        "derby.stream.error.file": str(workdir / "derby.log"),
    }


def java_command(workdir: Path, warehouse: Path, port: int) -> list[str]:
    launcher_dir = compile_launcher()
    props = [f"-D{k}={v}" for k, v in system_properties(workdir, warehouse).items()]
    return ["java", "-Xmx1g", *props, "-cp", f"{launcher_dir}{os.pathsep}{classpath()}",
            "OracleLauncher", "-p", str(port)]


def start_oracle(workdir: Path | str, timeout: float = STARTUP_TIMEOUT) -> MetastoreProcess:
    """Start a fresh stock HMS 2.3.10 in `workdir`; returns once it answers Thrift calls."""
    workdir = Path(workdir).resolve()
    warehouse = workdir / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    port = free_port()
    started = time.monotonic()
    proc = spawn("oracle", java_command(workdir, warehouse, port), workdir=workdir, port=port,
                 warehouse=warehouse, cwd=workdir, timeout=timeout)
    proc.startup_seconds = time.monotonic() - started
    return proc
