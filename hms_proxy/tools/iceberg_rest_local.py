"""Iceberg's own REST catalog pieces from Maven Central, for tests and ``hms-proxy bench rest``:
the reference server (``org.apache.iceberg.rest.RESTCatalogServer``, a JDBC catalog on an
in-memory SQLite database with Hadoop's file IO) and the REST compatibility kit
(``RESTCompatibilityKitSuite``, JUnit 5), both in ``iceberg-open-api``'s ``test-fixtures`` and
``tests`` jars.

The published POM of ``iceberg-open-api`` declares no dependencies, so the class path is listed
in the small POM below (the versions Iceberg 1.10.0 builds its open-api module with: Hadoop
3.4.1 with Iceberg's exclusions, Jetty 11, sqlite-jdbc, SLF4J, AssertJ, Awaitility, and JUnit's
console launcher), resolved once per machine with ``mvn dependency:copy-dependencies`` into
``~/.cache/hms-proxy/iceberg-rest/1.10.0/lib`` (70 jars, 72 MB; Maven's local repository in
``~/.cache/hms-proxy/m2``; ``$HMS_MAVEN_REPO`` for a mirror) under a file lock, appearing by an
atomic rename.

The reference server reads its settings from ``CATALOG_*`` environment variables only
(``CATALOG_REST_PORT``, ``CATALOG_WAREHOUSE``); it runs on this machine's Java 17 (Hadoop 3.4.1
fails on Java 25). The kit's client takes every JVM system property as a client property
(``uri``, ``warehouse``) and its own switches as ``rck.*``: ``rck.local=false`` points it at a
running server. The kit needs a server without its namespaces (``ns``, ``newdb``): a fresh one
per run.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from hms_proxy.tools import maven
from hms_proxy.tools.lakefs_local import cache_root as hms_cache_root
from hms_proxy.tools.ports import PortTaken, log_size, port_was_taken, start_on_a_port

VERSION = "1.10.0"
COPY_DEPENDENCIES = "org.apache.maven.plugins:maven-dependency-plugin:2.8:copy-dependencies"
SERVER_CLASS = "org.apache.iceberg.rest.RESTCatalogServer"
KIT_SUITE = "org.apache.iceberg.rest.RESTCompatibilityKitSuite"
LAUNCHER = "org.junit.platform.console.ConsoleLauncher"
MARKER = f"iceberg-open-api-{VERSION}-tests.jar"
# S3FileIO and the AWS SDK it needs: the kit's client reads and writes s3a:// files through
# lakeFS's S3 gateway (a class path made before they were added is made again)
MARKERS = (MARKER, f"iceberg-aws-{VERSION}.jar", f"iceberg-aws-bundle-{VERSION}.jar")

_HADOOP_EXCLUSIONS = [
    ("org.slf4j", "*"), ("ch.qos.reload4j", "*"), ("org.apache.avro", "avro"),
    ("com.google.guava", "*"), ("com.google.protobuf", "*"), ("org.apache.curator", "*"),
    ("org.apache.zookeeper", "*"), ("org.apache.kerby", "*"),
    ("org.apache.hadoop.thirdparty", "hadoop-shaded-protobuf_3_7"),
    ("org.eclipse.jetty", "*"), ("com.google.re2j", "re2j"), ("com.google.code.gson", "gson"),
    ("com.jcraft", "jsch"), ("com.google.code.findbugs", "jsr305"),
    ("io.dropwizard.metrics", "metrics-core"), ("dnsjava", "dnsjava"),
    ("org.xerial.snappy", "snappy-java"), ("commons-cli", "commons-cli"),
    ("com.github.pjfanning", "jersey-json"), ("com.sun.jersey", "*"), ("javax.servlet", "*"),
]
_DEPENDENCIES = [  # (group, artifact, version, classifier)
    ("org.apache.iceberg", "iceberg-open-api", VERSION, "test-fixtures"),
    ("org.apache.iceberg", "iceberg-open-api", VERSION, "tests"),
    ("org.apache.iceberg", "iceberg-core", VERSION, None),
    ("org.apache.iceberg", "iceberg-core", VERSION, "tests"),
    ("org.apache.iceberg", "iceberg-api", VERSION, "tests"),
    ("org.apache.iceberg", "iceberg-aws", VERSION, None),
    ("org.apache.iceberg", "iceberg-aws-bundle", VERSION, None),
    ("org.apache.hadoop", "hadoop-common", "3.4.1", None),
    ("org.eclipse.jetty", "jetty-servlet", "11.0.26", None),
    ("org.eclipse.jetty", "jetty-server", "11.0.26", None),
    ("org.xerial", "sqlite-jdbc", "3.50.3.0", None),
    ("org.slf4j", "slf4j-api", "2.0.17", None),
    ("org.slf4j", "slf4j-simple", "2.0.17", None),
    ("org.assertj", "assertj-core", "3.27.4", None),
    ("org.awaitility", "awaitility", "4.3.0", None),
    ("org.junit.platform", "junit-platform-console-standalone", "1.13.4", None),
]


def _pom(repo: str) -> str:
    deps = []
    for group, artifact, version, classifier in _DEPENDENCIES:
        extra = f"<classifier>{classifier}</classifier>" if classifier else ""
        exclusions = ""
        if artifact == "hadoop-common":
            exclusions = "<exclusions>" + "".join(
                f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
                for g, a in _HADOOP_EXCLUSIONS) + "</exclusions>"
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                    f"<version>{version}</version>{extra}{exclusions}</dependency>")
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hms-proxy</groupId><artifactId>iceberg-rest-{VERSION}-classpath</artifactId>
  <version>1</version><packaging>pom</packaging>
  <repositories><repository><id>central</id><url>{repo}</url></repository></repositories>
  <pluginRepositories>
    <pluginRepository><id>central</id><url>{repo}</url></pluginRepository>
  </pluginRepositories>
  <dependencies>
    {chr(10).join(deps)}
  </dependencies>
</project>
"""


def _say(msg: str) -> None:
    print(f"iceberg_rest_local: {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    return hms_cache_root() / "iceberg-rest"


def ensure_jars() -> Path:
    """The ``lib`` directory of the reference server and the kit, resolved on first use;
    RuntimeError with a one-line reason when Maven is missing or fails."""
    root = cache_root()
    lib = root / VERSION / "lib"
    if _complete(lib):
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Iceberg's REST server and kit are fetched from Maven Central with "
                           "Maven: apt-get install maven")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(lib):
            return lib
        for stale in root.glob(f".resolve-{VERSION}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".resolve-{VERSION}-", dir=root))
        try:
            repo = os.environ.get("HMS_MAVEN_REPO", maven.MAVEN_CENTRAL).rstrip("/")
            (tmp / "pom.xml").write_text(_pom(repo))
            out = tmp / "home" / "lib"
            _say(f"resolving Iceberg {VERSION}'s REST server and compatibility kit from {repo} "
                 "(about 160 MB, once per machine)")
            done = subprocess.run(
                [mvn, "-B", "-q", f"-Dmaven.repo.local={hms_cache_root() / 'm2'}",
                 COPY_DEPENDENCIES, "-DincludeScope=runtime", f"-DoutputDirectory={out}"],
                cwd=tmp, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
            if done.returncode != 0 or not _complete(out):
                tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
                raise RuntimeError(f"could not fetch Iceberg {VERSION}'s REST jars: " +
                                   " | ".join(tail))
            (root / VERSION).mkdir(parents=True, exist_ok=True)
            shutil.rmtree(lib, ignore_errors=True)
            os.rename(out, lib)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return lib


def _complete(lib: Path) -> bool:
    return all((lib / name).is_file() for name in MARKERS)


def java() -> str:
    """Java 17 (the machine's default ``java``): the reference server's Hadoop needs it."""
    return os.environ.get("HMS_JAVA17", "java")


@dataclass
class ReferenceServer:
    port: int
    workdir: Path
    popen: subprocess.Popen
    log_path: Path

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=20)


def _answers(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/v1/config", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_reference_server(workdir: Path | str, port: int | None = None,
                           timeout: float = 120.0) -> ReferenceServer:
    """Iceberg's reference REST server on a fresh in-memory catalog whose warehouse is
    ``workdir/warehouse``; returns once ``GET /v1/config`` answers."""
    lib = ensure_jars()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "warehouse").mkdir(exist_ok=True)
    log_path = workdir / "iceberg-rest-server.log"

    def start(chosen: int) -> ReferenceServer:
        env = {**os.environ, "CATALOG_REST_PORT": str(chosen),
               "CATALOG_WAREHOUSE": f"file://{workdir / 'warehouse'}"}
        since = log_size(log_path)
        with open(log_path, "ab") as log:
            popen = subprocess.Popen([java(), "-Xmx512m", "-cp", f"{lib}/*", SERVER_CLASS],
                                     cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        server = ReferenceServer(chosen, workdir, popen, log_path)
        deadline = time.monotonic() + timeout
        while not _answers(server.uri):
            if popen.poll() is not None:
                if port_was_taken(log_path, since):
                    raise PortTaken(f"port {chosen}")
                raise RuntimeError(f"Iceberg's REST server exited ({log_path})")
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"Iceberg's REST server did not answer ({log_path})")
            time.sleep(0.1)
        return server
    return start_on_a_port(start, port)


@dataclass
class KitResult:
    found: int = 0
    succeeded: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # test -> first line of the failure
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        return (f"found={self.found} succeeded={self.succeeded} failed={len(self.failed)} "
                f"skipped={len(self.skipped)} in {self.seconds:.0f}s")


def run_kit(uri: str, warehouse: str, reports: Path | str, properties: dict | None = None,
            timeout: float = 900.0) -> KitResult:
    """Iceberg's REST compatibility kit against the server at ``uri`` (``warehouse``: what its
    client asks ``/v1/config`` for); ``properties``: ``rck.*`` switches and client properties."""
    lib = ensure_jars()
    reports = Path(reports)
    reports.mkdir(parents=True, exist_ok=True)
    props = {"rck.local": "false", "uri": uri.rstrip("/") + "/", "warehouse": warehouse,
             **(properties or {})}
    started = time.monotonic()
    with open(reports / "console.log", "wb") as log:
        subprocess.run([java(), "-Xmx768m", *(f"-D{k}={v}" for k, v in props.items()),
                        "-cp", f"{lib}/*", LAUNCHER, "execute", "--disable-banner",
                        "--disable-ansi-colors", "--details=summary",
                        "--select-class", KIT_SUITE, "--reports-dir", str(reports)],
                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       timeout=timeout, check=False)
    result = KitResult(seconds=time.monotonic() - started)
    for path in reports.glob("TEST-*.xml"):
        for case in ET.parse(path).getroot().iter("testcase"):
            name = case.get("classname", "").rsplit(".", 1)[-1] + "." + case.get("name", "")
            result.found += 1
            outcome = "ok"
            for child in case:
                if child.tag in ("failure", "error"):
                    text = (child.get("message") or child.text or "").strip()
                    result.failed[name] = text.splitlines()[0] if text else child.tag
                    outcome = "failed"
                elif child.tag == "skipped":
                    result.skipped.append(name)
                    outcome = "skipped"
            if outcome == "ok":
                result.succeeded += 1
    if result.found == 0:
        raise RuntimeError(f"the kit ran no test: {reports / 'console.log'}")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hms_proxy.tools.iceberg_rest_local",
        description="Fetch (once) Iceberg's REST reference server and compatibility kit.")
    parser.add_argument("--download-only", action="store_true",
                        help="resolve the jars into the cache and exit")
    args = parser.parse_args(argv)
    try:
        lib = ensure_jars()
    except RuntimeError as exc:
        print(f"iceberg_rest_local: {exc}", file=sys.stderr)
        return 1
    if args.download_only:
        print(f"Iceberg {VERSION} REST jars in {lib}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
