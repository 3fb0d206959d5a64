"""A real Trino on this machine: the server tarball from Maven Central, one coordinator node.

``ensure_trino()`` finds a Java 24+ JDK, which Trino 476 needs (in ``$HMS_TRINO_JAVA_HOME``,
``$JAVA_HOME``, ``/usr/lib/jvm`` or on PATH; RuntimeError with a one-line hint when there is
none), downloads ``io.trino:trino-server:476:tar.gz`` once, checks its SHA-1 against Maven Central's, and
unpacks the server's core and the plugins our tests use (hive, tpch, iceberg) into
``~/.cache/hms-proxy/trino/VERSION/`` (``$XDG_CACHE_HOME`` honoured). A file lock makes
concurrent callers download once; the tree appears by an atomic rename.

``start_trino()`` runs one coordinator-only node on 127.0.0.1 (a free port) in about 2 GB of
heap, with dynamic catalogs (``CREATE CATALOG ... USING hive``): :func:`hive_catalog`
gives the properties of a Hive catalog over one metastore URI, for local ``file:``
locations (Trino's Hadoop file system: see there why not the native local one) and, given a
lakeFS, for
``s3://``/``s3a://`` locations through lakeFS's S3 gateway (native S3, path-style).
``python -m hms_proxy.tools.trino_local --metastore thrift://HOST:PORT`` runs one until Ctrl-C.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from hms_proxy.ops.shutdown import StopRequest
from hms_proxy.tools import maven, ports
from hms_proxy.tools.lakefs_local import LocalProcess, cache_root

VERSION, MIN_JAVA = "476", 24   # the newest Trino served here and the Java it needs
PLUGINS = ("hive", "tpch", "iceberg")  # what the tests use; the other ~60 are not unpacked
HEAP = "2G"


def _say(msg: str) -> None:
    print(f"trino_local: {msg}", file=sys.stderr, flush=True)


# --- Java --------------------------------------------------------------------------------------
def java_major(java: str) -> int | None:
    """The feature version of ``java`` (17, 25...), or None when it does not run."""
    try:
        out = subprocess.run([java, "-XshowSettings:properties", "-version"],
                             capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"java\.specification\.version = (\d+)", out)
    return int(m.group(1)) if m else None


def find_java(minimum: int) -> str | None:
    """A java binary of at least ``minimum``: $HMS_TRINO_JAVA_HOME, $JAVA_HOME, /usr/lib/jvm/*
    (newest first), then the one on PATH."""
    homes = [os.environ.get("HMS_TRINO_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        homes += sorted((str(p) for p in jvm.iterdir() if not p.is_symlink()),
                        key=lambda p: [int(n) for n in re.findall(r"\d+", p)] or [0],
                        reverse=True)
    candidates = [str(Path(h) / "bin" / "java") for h in homes if h]
    candidates.append(shutil.which("java") or "")
    for java in dict.fromkeys(c for c in candidates if c and os.access(c, os.X_OK)):
        major = java_major(java)
        if major is not None and major >= minimum:
            return java
    return None


@dataclass(frozen=True)
class TrinoInstall:
    home: Path      # the unpacked server (lib/, plugin/)
    version: str
    java: str


class JavaMissing(RuntimeError):
    """No JDK on this machine can run the Trino we use."""


def choose() -> tuple[str, str]:
    """(Trino version, java) for this machine, or JavaMissing with a one-line hint."""
    java = find_java(MIN_JAVA)
    if java is None:
        raise JavaMissing(f"a real Trino ({VERSION}) needs a Java {MIN_JAVA}+ JDK and none was "
                           "found in $HMS_TRINO_JAVA_HOME, $JAVA_HOME, /usr/lib/jvm or on PATH: "
                           "install one (e.g. Temurin 25) or set HMS_TRINO_JAVA_HOME")
    return VERSION, java


# --- download ----------------------------------------------------------------------------------
def _tarball(version: str, root: Path) -> Path:
    """The verified tarball in the cache (downloaded when missing)."""
    name = f"trino-server-{version}.tar.gz"
    return maven.fetch_verified(
        f"io/trino/trino-server/{version}/{name}", root / name,
        lambda url: _say(f"downloading {url} (about 800 MB, once per machine)"))


def ensure_trino() -> TrinoInstall:
    """The unpacked Trino server this machine's Java runs (downloaded on first use); a plugin
    of :data:`PLUGINS` missing from an older unpacking is added from the cached tarball."""
    version, java = choose()
    root = cache_root() / "trino"
    home = root / version
    if (home / "lib").is_dir() and _has_plugins(home):
        return TrinoInstall(home, version, java)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "lib").is_dir():
            _unpack(version, root, home, ("lib/",) + tuple(f"plugin/{p}/" for p in PLUGINS))
        for plugin in PLUGINS:
            if not (home / "plugin" / plugin).is_dir():
                _unpack(version, root, home / "plugin" / plugin, (f"plugin/{plugin}/",),
                        inner=f"plugin/{plugin}/")
    return TrinoInstall(home, version, java)


def _has_plugins(home: Path) -> bool:
    return all((home / "plugin" / p).is_dir() for p in PLUGINS)


def _unpack(version: str, root: Path, target: Path, parts: tuple[str, ...],
            inner: str = "") -> None:
    """Unpack the tarball's ``parts`` (paths under its top directory) and rename what lies at
    ``inner`` there to ``target``. Python's tarfile, not tar: the tarball's plugins share files
    through hard links, which it resolves from the archive when their target is left out."""
    started = time.monotonic()
    tarball = _tarball(version, root)
    tmp = Path(tempfile.mkdtemp(prefix=f".unpack-{version}-", dir=root))
    try:
        top = f"trino-server-{version}/"
        keep = tuple(top + part for part in parts)
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(keep)]
            tar.extractall(tmp, members=members, filter="data")
        os.rename(tmp / top / inner, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(f"unpacked {', '.join(parts)} of Trino {version} in "
         f"{time.monotonic() - started:.0f} s: {target}")


# --- catalogs ----------------------------------------------------------------------------------
def hive_catalog(metastore_uri: str, *, lakefs=None, timeout: str = "10s",
                 extra: dict | None = None) -> dict[str, str]:
    """Properties of a Hive catalog over ``metastore_uri``. ``lakefs``: an object with
    ``endpoint``, ``access_key_id`` and ``secret_access_key`` (a lakeFS whose S3 gateway serves
    ``s3://REPO/REF/path``); without it, ``file:`` locations only."""
    props = {
        "hive.metastore.uri": metastore_uri,
        "hive.metastore.thrift.client.connect-timeout": timeout,
        "hive.metastore.thrift.client.read-timeout": timeout,
        # INSERT into external tables: off by default in Trino, on where users share an HMS
        "hive.non-managed-table-writes-enabled": "true",
        "hive.security": "allow-all",
        "hive.hive-views.enabled": "true",
    }
    props.update(_file_system(lakefs))
    props.update(extra or {})
    return props


def _file_system(lakefs) -> dict[str, str]:
    """Trino's file system settings: its Hadoop one for local ``file:`` locations, or, given a
    lakeFS, native S3 through lakeFS's S3 gateway (path-style)."""
    if lakefs is None:
        # file: locations (what HMS gives managed tables on a local warehouse). Trino 476's
        # native local file system (fs.native-local.enabled, local.location=/) writes them
        # but lists their files without the scheme, so the Hive connector reads no rows (the
        # same against the stock HMS); Trino's Hadoop file system reads and writes them.
        return {"fs.hadoop.enabled": "true"}
    return {"fs.native-s3.enabled": "true", "s3.endpoint": lakefs.endpoint,
            "s3.region": "us-east-1", "s3.path-style-access": "true",
            "s3.aws-access-key": lakefs.access_key_id,
            "s3.aws-secret-key": lakefs.secret_access_key}


def iceberg_rest_catalog(uri: str, warehouse: str, *, lakefs=None,
                         extra: dict | None = None) -> dict[str, str]:
    """Properties of an Iceberg catalog over the REST catalog at ``uri`` on ``warehouse`` (for
    hms-proxy: a branch, tag or commit); local ``file:`` locations through Trino's Hadoop file
    system, or, given a lakeFS, ``s3a://`` ones through its S3 gateway."""
    props = {"iceberg.catalog.type": "rest", "iceberg.rest-catalog.uri": uri,
             "iceberg.rest-catalog.warehouse": warehouse, **_file_system(lakefs)}
    props.update(extra or {})
    return props


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def create_catalog_sql(name: str, props: dict[str, str], connector: str = "hive") -> str:
    body = ", ".join(f'"{k}" = {_quote(v)}' for k, v in props.items())
    return f"CREATE CATALOG {name} USING {connector} WITH ({body})"


# --- running -----------------------------------------------------------------------------------
def _write_config(etc: Path, port: int) -> None:
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "config.properties").write_text(
        "coordinator=true\n"
        "node-scheduler.include-coordinator=true\n"
        f"http-server.http.port={port}\n"
        f"discovery.uri=http://127.0.0.1:{port}\n"
        "catalog.management=dynamic\n"
        "catalog.store=memory\n"  # catalogs live as long as the process: tests add them
        "query.max-memory=1GB\n"
        "query.max-memory-per-node=1GB\n"
        # 2 cores: few threads, and no background work the tests do not need
        "task.concurrency=2\n"
        "task.max-worker-threads=4\n"
        "query.min-expire-age=5m\n"
        "http-server.log.enabled=false\n")
    (etc / "log.properties").write_text("io.trino=WARN\nio.airlift=WARN\n")


def _jvm_options(etc: Path, data: Path, port: int) -> list[str]:
    return [f"-Xmx{HEAP}", f"-Xms{HEAP}", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=32M",
            "-XX:+ExplicitGCInvokesConcurrent", "-XX:+ExitOnOutOfMemoryError",
            "-XX:-OmitStackTraceInFastThrow", "-XX:ReservedCodeCacheSize=256M",
            "-XX:PerMethodRecompilationCutoff=10000", "-XX:PerBytecodeRecompilationCutoff=10000",
            "-XX:+EnableDynamicAgentLoading", "-Djdk.attach.allowAttachSelf=true",
            "-Djdk.nio.maxCachedBufferSize=2000000", "-Dfile.encoding=UTF-8",
            "--enable-native-access=ALL-UNNAMED",
            f"-Dconfig={etc / 'config.properties'}",
            # what Trino's launcher passes from node.properties
            "-Dnode.environment=hmsproxy", f"-Dnode.id=hms-proxy-{port}",
            f"-Dnode.data-dir={data}", "-Dnode.internal-address=127.0.0.1",
            f"-Dlog.levels-file={etc / 'log.properties'}",
            # the realm of a catalog with Kerberos (hive.metastore.authentication.type): the
            # JVM reads this file once, at its first Kerberos use, so a Trino for such catalogs
            # starts with it in place (tests/e2e/trino/test_trino_kerberos.py)
            f"-Djava.security.krb5.conf={etc / 'krb5.conf'}"]


class TrinoProcess(LocalProcess):
    """One running Trino coordinator; ``stop()`` (or leaving ``with``) ends it."""

    STOP_TIMEOUT = 20.0

    def __init__(self, popen: subprocess.Popen, port: int, workdir: Path, log_path: Path,
                 install: TrinoInstall, owned: bool):
        super().__init__(popen, port, workdir, log_path, owned)
        self.install, self.version = install, install.version
        self.url = f"http://127.0.0.1:{port}"

    def connect(self, catalog: str | None = None, schema: str | None = None, user: str = "hms",
                **kwargs):
        """A DB-API connection (the ``trino`` client from PyPI)."""
        import trino

        return trino.dbapi.connect(host="127.0.0.1", port=self.port, user=user, catalog=catalog,
                                   schema=schema, **kwargs)

    def execute(self, sql: str, **kwargs) -> list:
        with contextlib.closing(self.connect(**kwargs)) as conn:
            cur = conn.cursor()
            cur.execute(sql)
            return cur.fetchall()

    def add_catalog(self, name: str, props: dict[str, str], connector: str = "hive") -> None:
        self.execute(create_catalog_sql(name, props, connector))

    def drop_catalog(self, name: str) -> None:
        self.execute(f"DROP CATALOG IF EXISTS {name}")


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/v1/info", timeout=2) as resp:
            return not json.load(resp).get("starting", True)
    except (OSError, ValueError):
        return False


def start_trino(workdir=None, port: int | None = None, timeout: float = 240.0) -> TrinoProcess:
    """Download if needed, start one coordinator, wait until it accepts queries."""
    install = ensure_trino()
    owned = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="trino-")) if owned else Path(workdir).resolve()
    etc = workdir / "etc"
    log_path = workdir / "trino.log"
    env = dict(os.environ, JAVA_HOME=str(Path(install.java).parent.parent))
    # Trino chooses its own collector (G1): another one in JDK_JAVA_OPTIONS (the tests' Serial
    # collector for short-lived JVMs) would stop the JVM at start
    options = [o for o in env.get("JDK_JAVA_OPTIONS", "").split()
               if not (o.startswith("-XX:+Use") and o.endswith("GC"))]
    env["JDK_JAVA_OPTIONS"] = " ".join(options)
    if not options:
        del env["JDK_JAVA_OPTIONS"]

    def start(port: int) -> TrinoProcess:
        _write_config(etc, port)
        cmd = [install.java, *_jvm_options(etc, workdir / "data", port),
               "-cp", str(install.home / "lib" / "*"), "io.trino.server.TrinoServer"]
        since = ports.log_size(log_path)
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(cmd, cwd=install.home, env=env, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        proc = TrinoProcess(popen, port, workdir, log_path, install, False)
        deadline = time.monotonic() + timeout
        # ready: it answers, and it is this process that listens (not another Trino)
        while not (_ready(proc.url) and ports.listens(popen.pid, port) is not False):
            if popen.poll() is not None or time.monotonic() > deadline:
                why = "exited" if popen.poll() is not None else f"not ready after {timeout:.0f} s"
                tail = proc.log_tail(40)
                proc.stop()
                if popen.poll() is not None and ports.port_was_taken(log_path, since):
                    raise ports.PortTaken(f"Trino: port {port} was taken by another process")
                raise RuntimeError(f"Trino {install.version} {why} (log {log_path}):\n{tail}")
            time.sleep(0.5)
        proc._owned = owned  # its stop() removes the temporary work directory
        return proc
    try:
        return ports.start_on_a_port(start, port)
    except BaseException:
        if owned:
            shutil.rmtree(workdir, ignore_errors=True)
        raise


# --- python -m hms_proxy.tools.trino_local -----------------------------------------------------------
def main(argv=None) -> int:

    parser = argparse.ArgumentParser(
        prog="python -m hms_proxy.tools.trino_local",
        description="Run a local Trino coordinator until SIGINT/SIGTERM, with a Hive catalog "
                    "per --metastore.")
    parser.add_argument("--metastore", action="append", default=[], metavar="[NAME=]URI",
                        help="a Hive catalog over this metastore (default name: hive, hive2...)")
    parser.add_argument("--port", type=int, help="HTTP port (default: a free one)")
    parser.add_argument("--dir", help="work directory, kept (default: a temporary one)")
    parser.add_argument("--download-only", action="store_true",
                        help="download and unpack, print the path, exit (2: no Java 24+ JDK "
                             "or the download failed)")
    args = parser.parse_args(argv)
    try:
        if args.download_only:
            install = ensure_trino()
            print(f"trino {install.version}: {install.home} (java {install.java})")
            return 0
        server = start_trino(args.dir, args.port)
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, OSError) as exc:
        print(f"trino_local: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    stop = StopRequest()
    stop.install()
    try:
        for i, spec in enumerate(args.metastore):
            name, _, uri = spec.rpartition("=") if "=" in spec else ("", "", spec)
            name = name or ("hive" if i == 0 else f"hive{i + 1}")
            server.add_catalog(name, hive_catalog(uri))
            _say(f"catalog {name}: {uri}")
        _say(f"Trino {server.version} at {server.url} (pid {server.proc.pid}, log "
             f"{server.log_path}); stop with Ctrl-C")
        while not stop.requested and server.alive():
            stop.wait(1.0)
    finally:
        died = not server.alive()
        server.stop()
        stop.finish()
    if died:
        _say(f"Trino exited unexpectedly:\n{server.log_tail(40)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
