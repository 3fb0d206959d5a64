"""Spark with Iceberg's runtime, for the tests of the Iceberg catalogs (REST and Hive).

Iceberg publishes ``iceberg-spark-runtime`` for Spark 4.1 (``iceberg-spark-runtime-4.1_2.13``,
Iceberg 1.11 and 1.12 on Maven Central) and for no later Spark: the PySpark 4.3 of the project's
environment fails to load it (``SparkView`` implements a Spark 4.1 interface that 4.3 made a
class). So these tests run Spark in an environment of their own: a virtual environment with
PySpark 4.1.4 from PyPI and the runtime jar from Maven Central (its SHA-1 checked), made once
per machine in ``~/.cache/hms-proxy/spark-iceberg/`` under a file lock.

:class:`KeptSpark` runs lists of SQL statements in that environment, one after another in one
local Spark JVM (``local[1]``, Java 17), each list in a new session with the catalogs given as
Spark settings (``spark.sql.catalog.NAME...``), and returns each statement's rows.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import venv
from dataclasses import dataclass
from pathlib import Path

from hms_proxy.tools import maven
from hms_proxy.tools.lakefs_local import cache_root as hms_cache_root

PYSPARK = "4.1.4"
ICEBERG = "1.12.0"
RUNTIME = f"iceberg-spark-runtime-4.1_2.13-{ICEBERG}.jar"
RUNTIME_PATH = f"org/apache/iceberg/iceberg-spark-runtime-4.1_2.13/{ICEBERG}/{RUNTIME}"
# the AWS SDK Iceberg's S3FileIO needs (s3a:// files through lakeFS's S3 gateway)
AWS_BUNDLE = f"iceberg-aws-bundle-{ICEBERG}.jar"
AWS_BUNDLE_PATH = f"org/apache/iceberg/iceberg-aws-bundle/{ICEBERG}/{AWS_BUNDLE}"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"

# runs one after another in one JVM (:class:`KeptSpark`), in the environment's own Python: the
# settings read at the JVM's start as its argument, then one {"conf": {...}, "sql": [...]} line
# per run, each in a new session (its own settings, catalogs and caches) with the run's
# settings; one JSON line per run: each statement's rows, or the first line of its error
_SERVE = r"""
import json, sys
from pyspark.sql import SparkSession

def run(spark, statements):
    out = []
    for sql in statements:
        try:
            rows = [list(r) for r in spark.sql(sql).collect()]
            out.append({"rows": json.loads(json.dumps(rows, default=str))})
        except Exception as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            # py4j's first line names only the call: the Java exception is on a later one
            named = [l for l in lines if "Exception" in l or "Error" in l]
            out.append({"error": (named or lines)[0].strip()})
    return out

builder = SparkSession.builder.master("local[1]").appName("hms-proxy-iceberg")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
base = builder.getOrCreate()
base.sparkContext.setLogLevel("ERROR")
print("READY", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    spark = base.newSession()
    for key, value in job["conf"].items():
        spark.conf.set(key, value)
    print("RESULT " + json.dumps(run(spark, job["sql"])), flush=True)
"""


def _say(msg: str) -> None:
    print(f"spark_iceberg: {msg}", file=sys.stderr, flush=True)


@dataclass
class SparkIceberg:
    python: Path
    jar: Path
    aws_bundle: Path


def cache_root() -> Path:
    return hms_cache_root() / "spark-iceberg"


def ensure() -> SparkIceberg:
    """The environment (made on first use); RuntimeError with a one-line reason otherwise."""
    root = cache_root()
    env_dir = root / f"pyspark-{PYSPARK}"
    python = env_dir / "bin" / "python"
    jar = root / RUNTIME
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (env_dir / ".ready").is_file():  # made, or left half made by a killed run
            shutil.rmtree(env_dir, ignore_errors=True)
            _say(f"making an environment with PySpark {PYSPARK} (about 450 MB, once)")
            venv.EnvBuilder(with_pip=True).create(env_dir)
            done = subprocess.run([str(python), "-m", "pip", "install", "-q",
                                   f"pyspark=={PYSPARK}"], capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, check=False)
            if done.returncode != 0:
                shutil.rmtree(env_dir, ignore_errors=True)
                tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
                raise RuntimeError(f"pip install pyspark=={PYSPARK} failed: " + " | ".join(tail))
            (env_dir / ".ready").write_text(PYSPARK)
        maven.fetch_verified(RUNTIME_PATH, jar,
                             lambda url: _say(f"downloading {url} (48 MB, once)"))
        bundle = maven.fetch_verified(AWS_BUNDLE_PATH, root / AWS_BUNDLE,
                                      lambda url: _say(f"downloading {url} (69 MB, once)"))
    return SparkIceberg(python, jar, bundle)


def catalog_conf(name: str, kind: str, uri: str, warehouse: str | None = None,
                 extra: dict | None = None) -> dict[str, str]:
    """Spark settings of an Iceberg catalog ``name``: ``kind`` ``rest`` (``uri`` http://...,
    ``warehouse`` the ref) or ``hive`` (``uri`` thrift://...)."""
    conf = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": kind, f"spark.sql.catalog.{name}.uri": uri,
            # every statement asks the catalog: what another client committed is seen at once
            f"spark.sql.catalog.{name}.cache-enabled": "false"}
    if warehouse is not None:
        conf[f"spark.sql.catalog.{name}.warehouse"] = warehouse
    for key, value in (extra or {}).items():
        conf[f"spark.sql.catalog.{name}.{key}"] = value
    return conf


def _launch_conf(spark: SparkIceberg) -> dict[str, str]:
    """The settings of every run that Spark reads when its JVM starts."""
    return {"spark.jars": f"{spark.jar},{spark.aws_bundle}", "spark.sql.extensions": EXTENSIONS,
            "spark.ui.enabled": "false", "spark.driver.memory": "1g"}


def _env() -> dict[str, str]:
    # the project environment's PySpark is not this one's
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_HOME"))}


class KeptSpark:
    """Runs of SQL statements in one JVM kept between them (starting one costs 10 to 25 s of
    the machine's two cores, a new session in it well under one): each run gets a new session
    (``newSession``: its own settings, catalogs and their caches) with only the settings Spark
    reads per session (``spark.sql.*``). What a JVM keeps across sessions: Hadoop's file
    systems and Iceberg's pool of metastore clients, per URI. One run at a time; the JVM ends
    with :meth:`close` or when this process's end closes its stdin. Spark's log goes to a
    temporary file, kept (``spark-iceberg-*.log``) when a statement failed."""

    def __init__(self):
        self._popen: subprocess.Popen | None = None
        self._log = None
        self._keep_log = False
        self._cwd: str | None = None
        self._lock = threading.Lock()

    def run_sql(self, statements: list[str], catalogs: dict[str, str],
                timeout: float = 600.0) -> list[dict]:
        """Each statement's ``{"rows": [...]}`` or ``{"error": "..."}``, in one new session
        with the settings ``catalogs`` (every key a ``spark.sql.`` one)."""
        if not all(k.startswith("spark.sql.") for k in catalogs):
            raise ValueError("a kept JVM takes spark.sql.* settings only")
        job = json.dumps({"conf": {"spark.sql.shuffle.partitions": "1", **catalogs},
                          "sql": statements}) + "\n"
        with self._lock:
            if self._popen is None or self._popen.poll() is not None:
                self._start(timeout)
            try:
                self._popen.stdin.write(job.encode())
                self._popen.stdin.flush()
            except OSError:
                self._failed("took no run")
            line = self._line(time.monotonic() + timeout, "RESULT ")
            results = json.loads(line[len("RESULT "):])
            if any("error" in r for r in results):
                self._keep_log = True
            return results

    def _start(self, timeout: float) -> None:
        spark = ensure()
        self.close()
        # kept when a run failed a statement (Spark's log of it), removed at close otherwise
        self._log = tempfile.NamedTemporaryFile(prefix="spark-iceberg-", suffix=".log",
                                                delete=False)
        self._keep_log = False
        self._cwd = tempfile.mkdtemp(prefix="spark-iceberg-")  # its spark-warehouse, if any
        self._popen = subprocess.Popen(
            [str(spark.python), "-c", _SERVE, json.dumps(_launch_conf(spark))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=_env(),
            cwd=self._cwd, start_new_session=True)
        self._line(time.monotonic() + timeout, "READY")

    def _line(self, deadline: float, prefix: str) -> str:
        """The next line of the JVM's output starting with ``prefix``; TimeoutExpired (the
        JVM stopped) past ``deadline``."""
        out = self._popen.stdout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise subprocess.TimeoutExpired("spark-iceberg run", deadline)
            ready, _, _ = select.select([out], [], [], left)
            if not ready:
                continue
            line = out.readline().decode(errors="replace")
            if not line:
                self._failed("ended")
            if line.startswith(prefix):
                return line

    def _failed(self, what: str):
        tail = ""
        if self._log is not None:
            self._log.flush()
            with open(self._log.name, errors="replace") as log:
                tail = log.read()[-3000:]
        self.close()
        raise RuntimeError(f"the kept Spark JVM {what}: {tail}")

    def close(self) -> None:
        popen, self._popen = self._popen, None
        if popen is not None:
            try:
                popen.stdin.close()
                popen.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(popen.pid, signal.SIGKILL)
                except OSError:
                    pass
                popen.wait()
            popen.stdout.close()
        if self._log is not None:
            self._log.close()
            if not self._keep_log:
                os.unlink(self._log.name)
            self._log = None
        if self._cwd is not None:
            shutil.rmtree(self._cwd, ignore_errors=True)
            self._cwd = None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hms_proxy.tools.spark_iceberg",
        description=f"Make (once) the PySpark {PYSPARK} environment with Iceberg {ICEBERG}'s "
                    "Spark runtime that the Iceberg catalog tests run Spark in.")
    parser.add_argument("--download-only", action="store_true",
                        help="make the environment and exit")
    parser.parse_args(argv)
    try:
        spark = ensure()
    except (RuntimeError, OSError) as exc:
        print(f"spark_iceberg: {exc}", file=sys.stderr)
        return 1
    print(f"PySpark {PYSPARK} in {spark.python.parent.parent}, {spark.jar.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
