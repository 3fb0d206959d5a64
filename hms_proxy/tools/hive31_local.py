"""The stock Hive Metastore 3.1.3, the oracle of the HMS 3.1 API: ``hive-standalone-metastore``'s
``-bin`` tarball from Maven Central, run on embedded Derby with this machine's Java 17.

Downloaded once per machine into ``~/.cache/hms-proxy/hive/3.1.3/`` (``$XDG_CACHE_HOME``
honoured; ``$HMS_MAVEN_REPO`` for a mirror), SHA-1 checked against Maven Central's, under a file
lock so that parallel runs download it once. The tarball expects an installed Hadoop; Hadoop's
client jars and the few libraries Hadoop brings (commons-cli, -io, -codec, slf4j) come from
PySpark's jars, and commons-collections 3.2.2 (which DataNucleus needs and Hadoop no longer
ships) from Maven Central.

Two settings make it run without a Hive installation: the partition expression proxy (the
default one lives in hive-exec) and the background tasks limited to the event cleaner (the
others need Hive's compactor classes).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from hms_proxy.tools import maven
from hms_proxy.tools.lakefs_local import cache_root as hms_cache_root
from hms_proxy.tools.metastores import MetastoreProcess, pyspark_jars, start_standalone

VERSION = "3.1.3"
TARBALL = (f"org/apache/hive/hive-standalone-metastore/{VERSION}/"
           f"hive-standalone-metastore-{VERSION}-bin.tar.gz")
EXTRA_JARS = ("commons-collections/commons-collections/3.2.2/commons-collections-3.2.2.jar",)
# From PySpark's jars, by name prefix (their versions follow PySpark's).
PYSPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "jcl-over-slf4j-",
                "commons-cli-", "commons-io-", "commons-codec-")


def cache_root() -> Path:
    return hms_cache_root() / "hive"


def ensure_hive31() -> Path:
    """The unpacked metastore (its ``lib`` directory holds the jars), downloaded on first use."""
    root = cache_root()
    home = root / VERSION
    if (home / "lib").is_dir() and (home / "extra").is_dir():
        return home
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / "lib").is_dir() and (home / "extra").is_dir():
            return home
        tarball = maven.fetch_verified(TARBALL, root / Path(TARBALL).name)
        tmp = Path(tempfile.mkdtemp(prefix=f".unpack-{VERSION}-", dir=root))
        try:
            with tarfile.open(tarball) as tar:
                members = [m for m in tar.getmembers() if "/lib/" in m.name and
                           m.name.endswith(".jar")]
                tar.extractall(tmp, members=members, filter="data")
            (lib,) = {m.name.split("/lib/")[0] for m in members}
            os.rename(tmp / lib, tmp / "home")
            extra = tmp / "home" / "extra"
            extra.mkdir()
            for jar in EXTRA_JARS:
                maven.fetch_verified(jar, extra / Path(jar).name)
            shutil.rmtree(home, ignore_errors=True)
            os.rename(tmp / "home", home)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        tarball.unlink(missing_ok=True)  # the jars are what is kept
    return home


def classpath(home: Path) -> str:
    jars = pyspark_jars()
    picked = []
    for prefix in PYSPARK_JARS:
        found = sorted(jars.glob(f"{prefix}[0-9]*.jar"))
        if not found:
            raise RuntimeError(f"PySpark's jars have no {prefix}*.jar, which the stock HMS "
                               f"{VERSION} needs")
        picked.append(str(found[-1]))
    return os.pathsep.join([str(home / "lib" / "*"), str(home / "extra" / "*"), *picked])


def start_stock_hms31(workdir: Path | str, timeout: float = 180.0,
                      extra: dict[str, str] | None = None, **options) -> MetastoreProcess:
    """Start a fresh stock HMS 3.1.3 on embedded Derby in ``workdir``; returns once it answers.
    ``extra`` and ``options`` (``conf_dir``, ``jvm_options``, ``env``, ``ask``) as
    :func:`hms_proxy.tools.metastores.start_standalone` takes them."""
    return start_standalone(f"stock-hms-{VERSION}", classpath(ensure_hive31()), workdir, timeout,
                            extra, **options)


def spark_client_conf() -> dict[str, str]:
    """Spark's settings for its Hive 3.1.3 metastore client (instead of the built-in 2.3.10):
    Spark fetches the client's jars from Maven Central with Ivy, into the same cache."""
    return {"spark.sql.hive.metastore.version": VERSION,
            "spark.sql.hive.metastore.jars": "maven",
            "spark.jars.ivy": str(hms_cache_root() / "ivy")}
