"""Spark with Iceberg's runtime, for the tests of the Iceberg catalogs (REST and Hive).

Iceberg publishes ``iceberg-spark-runtime`` for Spark 4.1 (``iceberg-spark-runtime-4.1_2.13``,
Iceberg 1.11 and 1.12 on Maven Central) and for no later Spark: the PySpark 4.3 of the project's
environment fails to load it (``SparkView`` implements a Spark 4.1 interface that 4.3 made a
class). So these tests run Spark in an environment of their own: a virtual environment with
PySpark 4.1.4 from PyPI and the runtime jar from Maven Central (its SHA-1 checked), made once
per machine in ``~/.cache/hms-proxy/spark-iceberg/`` under a file lock.

:func:`run_sql` runs a list of SQL statements in one local Spark session (``local[1]``, Java 17)
in that environment and returns each statement's rows, with the catalogs given as Spark
settings (``spark.sql.catalog.NAME...``).
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
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

# runs in the environment's own Python: reads {"conf": {...}, "sql": [...]} on stdin, prints
# one JSON line: the rows of each statement, or the first line of its error
_JOB = r"""
import json, sys
from pyspark.sql import SparkSession
job = json.load(sys.stdin)
builder = SparkSession.builder.master("local[1]").appName("hms-proxy-iceberg")
for key, value in job["conf"].items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
out = []
for sql in job["sql"]:
    try:
        rows = [list(r) for r in spark.sql(sql).collect()]
        out.append({"rows": json.loads(json.dumps(rows, default=str))})
    except Exception as exc:
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        # py4j's first line names only the call: the Java exception is on a later one
        named = [l for l in lines if "Exception" in l or "Error" in l]
        out.append({"error": (named or lines)[0].strip()})
spark.stop()
print("RESULT " + json.dumps(out))
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


def run_sql(statements: list[str], catalogs: dict[str, str], timeout: float = 600.0,
            workdir: Path | None = None) -> list[dict]:
    """Each statement's ``{"rows": [...]}`` or ``{"error": "..."}``, in one Spark session."""
    spark = ensure()
    conf = {"spark.jars": f"{spark.jar},{spark.aws_bundle}", "spark.sql.extensions": EXTENSIONS,
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
            "spark.driver.memory": "1g", **catalogs}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_HOME"))}
    done = subprocess.run([str(spark.python), "-c", _JOB],
                          input=json.dumps({"conf": conf, "sql": statements}),
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=workdir or tempfile.gettempdir(), check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"the Spark job failed ({done.returncode}): {done.stderr[-3000:]}")


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
