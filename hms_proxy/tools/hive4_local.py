"""The stock Hive Metastore 4.0.1, the oracle of the HMS 4.0 API:
``org.apache.hive:hive-standalone-metastore-server`` and its run-time dependencies from Maven
Central, run on embedded Derby with this machine's Java 17.

Maven Central's ``-bin`` tarball of the server, like 3.1.3's, expects an installed Hadoop and
PySpark's shaded Hadoop client (3.5) is not the one Hive 4.0.1 was built on, so the classpath
is resolved by Maven itself, with Hadoop's own jars and their dependencies
(``mvn dependency:copy-dependencies`` over the small POM below; the jars are the tarball's,
less its MySQL, PostgreSQL and SQL Server drivers, plus Hadoop's, and a few versions differ:
commons-cli 1.2 for 1.5.0 and commons-codec 1.15 for 1.11 (Hadoop's), jansi 1.18 for 2.4.0;
Maven's local repository in ``~/.cache/hms-proxy/m2``, shared with
:mod:`hms_proxy.tools.spark_s3`), once per machine, into ``~/.cache/hms-proxy/hive/4.0.1/lib``
(``$XDG_CACHE_HOME`` honoured; ``$HMS_MAVEN_REPO`` for a mirror), under a file lock so that
parallel runs download it once; the directory appears by an atomic rename: 170 jars, 120 MB
(about 135 MB downloaded into the empty Maven repository, some 15 s here). The POM:

- imports the dependency management of Hive's own ``hive-standalone-metastore`` 4.0.1 parent
  POM, so that the versions Hive was built and tested with (Jackson, Guava, Protobuf, Jetty,
  ZooKeeper, Hadoop 3.3.6 and the exclusions Hive puts on Hadoop) win over Hadoop's;
- takes the server without any ``org.apache.hadoop`` artifact (Hive declares Hadoop
  ``provided``; what leaks through is ORC's ``hadoop-client-api`` 3.3.5 and the metrics
  reporter's ``hadoop-common`` 2.6.0) nor ``jdk.tools`` (a JDK 8 system jar);
- adds Hadoop 3.3.6's unshaded ``hadoop-common``, ``hadoop-hdfs-client`` and ``hadoop-hdfs``
  instead (seen working with this Hive on Java 17), without their log4j 1 / reload4j SLF4J
  bindings (Hive logs through log4j2) nor ``hadoop-hdfs``'s Netty 3 and 4.1.89 (the DataNode's,
  which would mix with the 4.1.94 of ZooKeeper's client).

Settings, passed as ``-D`` flags (MetastoreConf reads system properties):

- the schema is created on first use (``datanucleus.schema.autoCreateAll``, with
  ``metastore.schema.verification`` off, as schematool is not run); with
  ``start_stock_hms4(with_transactions=True)`` Hive's schematool makes it first, from the Derby
  scripts of the server's ``-bin`` tarball, transaction and lock tables included;
- the partition expression proxy is the metastore's own: the default one lives in hive-exec;
- the background tasks that always run are limited to the event cleaner: the default list
  names ``HiveProtoEventsCleanerTask``, which lives in hive-exec, and its ClassNotFound stops
  the start of all of them (logged as a warning only); the others it adds (runtime-stats,
  scheduled-query and replication-metrics cleaners, ACID metrics) are Hive's, not a
  metastore's (the ``metastore.task.threads.remote`` ones, compaction and partition discovery
  among them, run only with ``metastore.housekeeping.threads.on``, off by default);
- the Thrift server listens on 127.0.0.1 only (``metastore.thrift.bind.host``; else all
  interfaces).

Everything else is 4.0.1's default. In particular ``metastore.create.as.acid`` is false and the
default metadata transformer is on: a ``MANAGED_TABLE`` created by a client that declares no
capabilities (a 2.3 or 3.1 client) is stored as an ``EXTERNAL_TABLE`` with
``EXTERNAL=TRUE``, ``external.table.purge=TRUE`` and ``TRANSLATED_TO_EXTERNAL=TRUE``, where
3.1.3 keeps it managed. Hive 4 also removed some calls of the 2.3 IDL: ``get_table`` and
``get_table_objects_by_name`` answer TApplicationException UNKNOWN_METHOD (``get_table_req``
and ``get_table_objects_by_name_req`` remain).

Without a log4j2 configuration on the classpath the server logs errors only, to its log file.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from hms_proxy.tools import maven
from hms_proxy.tools.lakefs_local import cache_root as hms_cache_root
from hms_proxy.tools.metastores import MetastoreProcess, start_standalone

VERSION = "4.0.1"
HADOOP_VERSION = "3.3.6"  # the Hadoop of Hive 4.0.1's POM
SERVER_JAR = f"hive-standalone-metastore-server-{VERSION}.jar"
# Pinned, so that every Maven resolves the same way (2.8 is what Maven 3.8 picks by itself).
COPY_DEPENDENCIES = "org.apache.maven.plugins:maven-dependency-plugin:2.8:copy-dependencies"

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hms-proxy</groupId><artifactId>hive-metastore-{version}-classpath</artifactId>
  <version>1</version>
  <repositories>
    <repository><id>central</id><url>{repo}</url></repository>
  </repositories>
  <pluginRepositories>
    <pluginRepository><id>central</id><url>{repo}</url></pluginRepository>
  </pluginRepositories>
  <dependencyManagement>
    <dependencies>
      <!-- Hive's own versions and Hadoop exclusions (Hadoop {hadoop} among them) -->
      <dependency>
        <groupId>org.apache.hive</groupId><artifactId>hive-standalone-metastore</artifactId>
        <version>{version}</version><type>pom</type><scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.apache.hive</groupId><artifactId>hive-standalone-metastore-server</artifactId>
      <version>{version}</version>
      <exclusions>
        <exclusion><groupId>jdk.tools</groupId><artifactId>jdk.tools</artifactId></exclusion>
        <!-- hadoop-client-api (ORC's) and hadoop-common 2.6.0 (the metrics reporter's) -->
        <exclusion><groupId>org.apache.hadoop</groupId><artifactId>*</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId>
      <version>{hadoop}</version>
      <exclusions>
        <exclusion><groupId>jdk.tools</groupId><artifactId>jdk.tools</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs-client</artifactId>
      <version>{hadoop}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs</artifactId>
      <version>{hadoop}</version>
      <exclusions>
        <exclusion><groupId>io.netty</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
      </exclusions>
    </dependency>
  </dependencies>
</project>
"""


def _say(msg: str) -> None:
    print(f"hive4_local: {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    return hms_cache_root() / "hive"


def _ready(home: Path) -> bool:
    return (home / "lib" / SERVER_JAR).is_file()


def ensure_hive4() -> Path:
    """The metastore's home (its ``lib`` directory holds the jars), resolved on first use;
    RuntimeError with a one-line reason when Maven is missing or fails."""
    root = cache_root()
    home = root / VERSION
    if _ready(home):
        return home
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(f"the stock HMS {VERSION} is fetched from Maven Central with Maven: "
                           "apt-get install maven")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be resolving it: wait for it
        if _ready(home):
            return home
        for stale in root.glob(f".resolve-{VERSION}-*"):  # left by a killed run
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".resolve-{VERSION}-", dir=root))
        try:
            repo = os.environ.get("HMS_MAVEN_REPO", maven.MAVEN_CENTRAL).rstrip("/")
            (tmp / "pom.xml").write_text(POM.format(version=VERSION, hadoop=HADOOP_VERSION,
                                                    repo=repo))
            lib = tmp / "home" / "lib"
            _say(f"resolving hive-standalone-metastore-server {VERSION} from {repo} "
                 "(about 120 MB, once per machine)")
            started = time.monotonic()
            done = subprocess.run(
                [mvn, "-B", "-q", f"-Dmaven.repo.local={hms_cache_root() / 'm2'}",
                 COPY_DEPENDENCIES, "-DincludeScope=runtime", f"-DoutputDirectory={lib}"],
                cwd=tmp, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
            if done.returncode != 0 or not (lib / SERVER_JAR).is_file():
                tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
                raise RuntimeError(f"could not fetch the stock HMS {VERSION}: " + " | ".join(tail))
            leaked = sorted(p.name for p in lib.glob("hadoop-client-*.jar"))
            if leaked:  # the shaded client beside the unshaded jars: two Hadoops
                raise RuntimeError(f"the stock HMS {VERSION}'s classpath has {leaked}")
            jars = list(lib.glob("*.jar"))
            _say(f"{len(jars)} jars, {sum(j.stat().st_size for j in jars) / 1e6:.0f} MB in "
                 f"{time.monotonic() - started:.0f}s")
            shutil.rmtree(home, ignore_errors=True)
            os.rename(tmp / "home", home)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return home


def classpath(home: Path) -> str:
    return str(home / "lib" / "*")


BIN_TARBALL = (f"org/apache/hive/hive-standalone-metastore-server/{VERSION}/"
               f"hive-standalone-metastore-server-{VERSION}-bin.tar.gz")
DERBY_SCRIPTS = "scripts/metastore/upgrade/derby"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"


def ensure_schema_scripts() -> Path:
    """A ``METASTORE_HOME`` for Hive's schematool: the Derby schema scripts of the server's
    ``-bin`` tarball (78 MB from Maven Central, SHA-1 checked, downloaded once per machine;
    only the scripts are kept, in ``~/.cache/hms-proxy/hive/4.0.1-scripts``)."""
    root = cache_root()
    home = root / f"{VERSION}-scripts"
    if (home / DERBY_SCRIPTS).is_dir():
        return home
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{VERSION}-scripts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / DERBY_SCRIPTS).is_dir():
            return home
        tarball = maven.fetch_verified(BIN_TARBALL, root / Path(BIN_TARBALL).name,
                                       lambda url: _say(f"downloading {url} (78 MB, once)"))
        tmp = Path(tempfile.mkdtemp(prefix=f".scripts-{VERSION}-", dir=root))
        try:
            with tarfile.open(tarball) as tar:
                for member in tar.getmembers():
                    inner = member.name.split("/", 1)[-1]
                    if member.isfile() and inner.startswith(DERBY_SCRIPTS + "/"):
                        member.name = inner
                        tar.extract(member, tmp, filter="data")
            shutil.rmtree(home, ignore_errors=True)
            os.rename(tmp, home)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            tarball.unlink(missing_ok=True)
    return home


def init_schema(workdir: Path) -> None:
    """Hive's schematool (``-initSchema -dbType derby``) on ``workdir``'s Derby database: the
    whole 4.0.0 schema, the transaction tables that DataNucleus does not make included."""
    workdir.mkdir(parents=True, exist_ok=True)
    url = f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true"
    done = subprocess.run(
        ["java", "-Xmx512m", f"-Dderby.system.home={workdir}",
         f"-Dderby.stream.error.file={workdir / 'derby-schematool.log'}",
         "-cp", classpath(ensure_hive4()), SCHEMA_TOOL, "-initSchema", "-dbType", "derby",
         "-url", url, "-driver", "org.apache.derby.jdbc.EmbeddedDriver",
         "-userName", "APP", "-passWord", "mine"],
        env={**os.environ, "METASTORE_HOME": str(ensure_schema_scripts())}, cwd=workdir,
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, check=False)
    if done.returncode != 0 or "Initialization script completed" not in done.stdout + done.stderr:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"Hive {VERSION}'s schematool failed: " + " | ".join(tail))


def start_stock_hms4(workdir: Path | str, timeout: float = 180.0,
                     with_transactions: bool = False, extra: dict[str, str] | None = None,
                     **options) -> MetastoreProcess:
    """Start a fresh stock HMS 4.0.1 on embedded Derby in ``workdir``; returns once it answers.
    Besides the settings of every standalone metastore, it listens on 127.0.0.1 only (4.x
    binds all interfaces otherwise). ``with_transactions``: the schema is made by Hive's
    schematool first (about 4 s), so that its transaction and lock calls work (DataNucleus
    alone does not make their tables). ``extra`` and ``options`` (``conf_dir``,
    ``jvm_options``, ``env``, ``ask``) as :func:`hms_proxy.tools.metastores.start_standalone`
    takes them."""
    workdir = Path(workdir).resolve()
    if with_transactions:
        init_schema(workdir)
    return start_standalone(f"stock-hms-{VERSION}", classpath(ensure_hive4()), workdir, timeout,
                            {"metastore.thrift.bind.host": "127.0.0.1", **(extra or {})},
                            **options)


def spark_client_conf() -> dict[str, str]:
    """Spark's settings for its Hive 4.0.1 metastore client (instead of the built-in 2.3.10):
    PySpark 4.3 accepts ``spark.sql.hive.metastore.version`` 4.0.0 through 4.1.0 (its Hive 4.0
    client is 4.0.1; Spark 3.x stops at 3.1.3). Spark fetches the client's jars from Maven
    Central with Ivy when the metastore is first used (about a minute here); ``spark.jars.ivy``
    asks for the same cache, though PySpark 4.3 was seen to put them in ``~/.ivy2.5.2``, as
    with 3.1.3's."""
    return {"spark.sql.hive.metastore.version": VERSION,
            "spark.sql.hive.metastore.jars": "maven",
            "spark.jars.ivy": str(hms_cache_root() / "ivy")}
