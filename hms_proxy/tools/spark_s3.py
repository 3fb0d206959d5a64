"""Spark writing through lakeFS's S3 gateway: the ``s3a`` file system and its settings.

PySpark ships Hadoop's client (``hadoop-client-api/runtime-X.jar``) without the S3A connector.
:func:`s3a_jars` fetches ``org.apache.hadoop:hadoop-aws`` of the same Hadoop version and what it
needs at run time (the AWS SDK bundle) from Maven Central with Maven itself, once per machine,
into ``~/.cache/hms-proxy/m2``; :func:`s3a_conf` gives the Spark settings that point ``s3a://``
at a lakeFS (path-style: ``s3a://REPOSITORY/REF/path``).
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from hms_proxy.tools.lakefs_local import cache_root  # ~/.cache/hms-proxy ($XDG_CACHE_HOME honoured)

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hms-proxy</groupId><artifactId>s3a-classpath</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


def hadoop_version() -> str:
    """The Hadoop version of PySpark's own client jars."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    for jar in jars.glob("hadoop-client-api-*.jar"):
        found = re.match(r"hadoop-client-api-(.+)\.jar$", jar.name)
        if found:
            return found.group(1)
    raise RuntimeError(f"no hadoop-client-api jar in {jars}: is this PySpark 3.2 or later?")


def s3a_jars(version: str | None = None) -> list[str]:
    """Paths of hadoop-aws and its run-time dependencies (downloaded on first use: the AWS SDK
    bundle is ~600 MB); RuntimeError with a one-line reason when Maven is missing or fails."""
    version = version or hadoop_version()
    root = cache_root() / "s3a"
    listing = root / f"hadoop-aws-{version}.classpath"
    if listing.exists():
        jars = listing.read_text().split(os.pathsep)
        if jars and all(os.path.exists(j) for j in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Spark's s3a file system needs hadoop-aws from Maven Central, fetched "
                           "with Maven: apt-get install maven")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download per machine at a time
        if listing.exists() and all(os.path.exists(j)
                                    for j in listing.read_text().split(os.pathsep)):
            return listing.read_text().split(os.pathsep)
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            (Path(tmp) / "pom.xml").write_text(POM.format(version=version))
            out = Path(tmp) / "classpath.txt"
            done = subprocess.run(
                [mvn, "-B", "-q", f"-Dmaven.repo.local={cache_root() / 'm2'}",
                 "dependency:build-classpath", "-Dmdep.includeScope=runtime",
                 f"-Dmdep.outputFile={out}"], cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0 or not out.exists():
                tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
                raise RuntimeError(f"could not fetch hadoop-aws {version}: " + " | ".join(tail))
            jars = [j for j in out.read_text().strip().split(os.pathsep) if j]
        # Hadoop's own modules are in PySpark's shaded client jars already
        jars = [j for j in jars if not re.search(r"/org/apache/hadoop/hadoop-(common|annotations|"
                                                 r"auth|client)", j)]
        listing.write_text(os.pathsep.join(jars))
        return jars


def s3a_conf(endpoint: str, access_key_id: str, secret_access_key: str,
             region: str = "us-east-1") -> dict[str, str]:
    """Spark settings (``spark.hadoop.fs.s3a.*``) for lakeFS's S3 gateway at ``endpoint``
    (``http://host:port``): path-style addressing, the bucket being the repository."""
    return {
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": region,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https")).lower(),
        "spark.hadoop.fs.s3a.access.key": access_key_id,
        "spark.hadoop.fs.s3a.secret.key": secret_access_key,
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }


def spark_conf(endpoint: str, access_key_id: str, secret_access_key: str) -> dict[str, str]:
    """:func:`s3a_conf` plus ``spark.jars`` with the connector."""
    return {"spark.jars": ",".join(s3a_jars()),
            **s3a_conf(endpoint, access_key_id, secret_access_key)}


__all__ = ["hadoop_version", "s3a_jars", "s3a_conf", "spark_conf"]
