"""Metastores as child processes: ours, and the stock Hive Metastore 2.3.10 from PySpark's jars.

``hms-proxy bench --start-proxy --start-oracle`` and the test suites start them the same way:
a process group of its own, a free port, a log file, and "ready" once a real Thrift call is
answered (a listening socket is not enough: HMS binds before its schema is usable).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.tools import ports
from hms_proxy.tools.ports import free_port  # noqa: F401 - the tests' and bench's import

STOCK_HMS_JAR = "hive-metastore-2.3.10.jar"
TXN_LAUNCHER = Path(__file__).resolve().parent / "java" / "TxnHms.java"
# What the stock HMS's lock and transaction calls need, besides the tables TxnHms creates.
TXN_PROPERTIES = {
    "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
    "hive.support.concurrency": "true",
    "hive.compactor.initiator.on": "false",
    "hive.compactor.worker.threads": "0",
}


def pyspark_jars() -> Path:
    """PySpark's jars directory: hive-metastore-2.3.10, libthrift and all they need."""
    try:
        import pyspark
    except ImportError:  # the CLI turns this into one line naming the extra to install
        raise ModuleNotFoundError("PySpark is needed (its jars hold the stock HMS 2.3.10)",
                                  name="pyspark") from None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not (jars / STOCK_HMS_JAR).exists():
        raise RuntimeError(f"{STOCK_HMS_JAR} not found in {jars}")
    return jars


def classpath() -> str:
    return f"{pyspark_jars()}{os.sep}*"


def java_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hms-proxy" / "java"


def compile_java(source: Path, purpose: str, jars_dir: Path | None = None) -> Path:
    """Compile one Java file against the jars of ``jars_dir`` (default PySpark's), once per
    source and jar set; returns the classes directory (in ~/.cache/hms-proxy/java, else a
    temporary directory). The directory appears by an atomic rename, so concurrent runs never
    see half-written classes."""
    jars_dir = jars_dir or pyspark_jars()
    jars = sorted(p.name for p in jars_dir.glob("*.jar"))
    digest = hashlib.sha256(source.read_bytes() + "\n".join(jars).encode()).hexdigest()[:16]
    name = f"{source.stem}-{digest}"
    for root in (java_cache_root(), Path(tempfile.gettempdir()) / f"hms-proxy-java-{os.getuid()}"):
        out = root / name
        if (out / f"{source.stem}.class").exists():
            return out
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        javac = shutil.which("javac")
        if javac is None:
            raise RuntimeError(f"{purpose} needs javac (a JDK 17)")
        tmp = root / f".tmp-{name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        result = subprocess.run([javac, "-nowarn", "-cp", f"{jars_dir}{os.sep}*", "-d", str(tmp),
                                 str(source)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"javac failed for {source.name}:\n{result.stdout}\n{result.stderr}")
        try:
            tmp.rename(out)
        except OSError:  # a concurrent run won the race
            shutil.rmtree(tmp, ignore_errors=True)
        return out
    raise RuntimeError(f"no writable directory to compile {source.name} into")


def log_tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


@dataclass
class MetastoreProcess:
    """A running metastore we started: where to reach it and how to stop it."""

    name: str
    host: str
    port: int
    warehouse: Path
    log_path: Path
    popen: subprocess.Popen
    workdir: Path
    _log_file: object = field(default=None, repr=False)
    startup_seconds: float = 0.0
    log_start: int = 0  # where this process's output starts in the log (earlier attempts')

    def log_text(self) -> str:
        """What this process wrote to its log."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def announced_port(self, what: str, timeout: float = 30.0) -> int:
        """The port of a listener the server announced on its output: ``what`` is ``"ref
        REF"`` (``serve --bind 0=REF``), ``"http"`` (``--http-port 0``), ``"rest"``
        (``--rest-port 0``) or ``"metrics"`` (``--metrics-port 0``): 0 picks a free port,
        which the server prints."""
        import re

        if what == "http":
            pattern = r"^hms-proxy HTTP API and console on http://\S+:(\d+)/$"
        elif what == "rest":
            pattern = r"^hms-proxy Iceberg REST catalog on http://\S+:(\d+)$"
        elif what == "metrics":
            pattern = r"^hms-proxy metrics on http://\S+:(\d+)/metrics$"
        elif what.startswith("ref "):
            pattern = rf"^hms-proxy listening on \S+:(\d+) for ref {re.escape(what[4:])}$"
        else:
            raise ValueError(f"no such listener: {what!r}")
        compiled = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            found = compiled.search(self.log_text())
            if found:
                return int(found.group(1))
            if time.monotonic() > deadline or not self.alive():
                raise RuntimeError(f"{self.name} announced no {what} listener; log tail "
                                   f"({self.log_path}):\n{log_tail(self.log_path)}")
            time.sleep(0.05)

    def ref_port(self, ref: str, timeout: float = 30.0) -> int:
        """The port of the listener bound to ``ref`` (``serve --bind 0=REF``)."""
        return self.announced_port(f"ref {ref}", timeout)

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """Terminate the process group we created (never anything else)."""
        if self.popen.poll() is None:
            _signal_group(self.popen, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.popen, signal.SIGKILL)
                self.popen.wait(timeout)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def _signal_group(popen: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(popen.pid, sig)
    except ProcessLookupError:
        pass


STANDALONE_MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"


def start_standalone(name: str, classpath_: str, workdir: Path | str, timeout: float,
                     extra: dict[str, str] | None = None, *, conf_dir: Path | None = None,
                     jvm_options: list[str] | None = None, env: dict | None = None,
                     ask: Callable | None = None) -> MetastoreProcess:
    """A stock standalone metastore (Hive 3.1/4.x: hms_proxy.tools.hive31_local, hive4_local) on
    a fresh embedded Derby in ``workdir``, returned once it answers. The settings both need to
    run without a Hive installation: the schema made on first use (schematool is not run), the
    metastore's own partition expression proxy (the default lives in hive-exec), and only the
    event cleaner among the background tasks (the others are Hive's); ``extra`` adds a
    version's own. ``conf_dir``, ``jvm_options``, ``env`` and ``ask`` as
    :func:`start_stock_hms` takes them (a Kerberized one needs them)."""
    workdir = Path(workdir).resolve()
    warehouse = workdir / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    props = {
        "javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "metastore.schema.verification": "false",
        "metastore.warehouse.dir": str(warehouse),
        "metastore.expression.proxy":
            "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always":
            "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        **(extra or {}),
        "derby.system.home": str(workdir),
        "derby.stream.error.file": str(workdir / "derby.log"),
    }

    def cmd(port: int) -> list[str]:
        # every NullPointerException keeps its message, however often the same one is thrown
        # (HotSpot otherwise drops it after many: the answers compared would change mid-run)
        return ["java", "-Xmx768m", "-XX:-OmitStackTraceInFastThrow", *(jvm_options or ()),
                *(f"-D{k}={v}" for k, v in props.items()), "-cp",
                f"{conf_dir}{os.pathsep}{classpath_}" if conf_dir is not None else classpath_,
                STANDALONE_MAIN, "-p", str(port)]
    return spawn(name, cmd, workdir=workdir, port=None, warehouse=warehouse, cwd=workdir,
                 timeout=timeout, env=env, ask=ask)


def spawn(name: str, cmd: list[str] | Callable[[int], list[str]], *, workdir: Path,
          port: int | None, warehouse: Path, cwd: Path, env: dict | None = None,
          timeout: float = 120.0, ask: Callable | None = None) -> MetastoreProcess:
    """Start ``cmd`` in its own process group and wait until it answers Thrift calls
    (``ask(proc)``, which raises until it does; default: get_all_databases over plain Thrift).

    ``cmd`` may be a function of the port: then ``port`` None picks a free one, and one taken
    by another process before the metastore listened is replaced by another
    (:mod:`hms_proxy.tools.ports`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{name}.log"

    def start(chosen: int) -> MetastoreProcess:
        argv = cmd(chosen) if callable(cmd) else cmd
        log_file = open(log_path, "ab")
        log_start = log_file.tell()
        started = time.monotonic()
        popen = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log_file,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        proc = MetastoreProcess(name, "127.0.0.1", chosen, warehouse, log_path, popen, workdir,
                                log_file, log_start=log_start)
        try:
            wait_ready(proc, timeout, ask)
        except BaseException:
            proc.stop()
            raise
        proc.startup_seconds = time.monotonic() - started
        return proc
    if not callable(cmd):
        if port is None:
            raise ValueError("spawn: a fixed command needs its port")
        return start(port)
    return ports.start_on_a_port(start, port)


POLL = 0.05  # seconds between two looks at a starting metastore: a server up waits no longer


def wait_ready(proc: MetastoreProcess, timeout: float, ask: Callable | None = None) -> None:
    """Poll get_all_databases (or ``ask(proc)``) until it succeeds, the process dies, or time
    runs out."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not proc.alive():
            tail = log_tail(proc.log_path)
            if ports.port_was_taken(proc.log_path, proc.log_start):
                raise ports.PortTaken(f"{proc.name}: port {proc.port} was taken by another "
                                      "process")
            raise RuntimeError(
                f"{proc.name} exited with {proc.popen.returncode} during startup; "
                f"log tail ({proc.log_path}):\n{tail}")
        try:
            with socket.create_connection((proc.host, proc.port), timeout=1.0):
                pass
        except OSError:
            time.sleep(POLL)
            continue
        if ports.listens(proc.popen.pid, proc.port) is False:  # another program's listener
            time.sleep(POLL)
            continue
        if ask is not None:
            try:
                ask(proc)
                return
            except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
                last = exc
                time.sleep(2 * POLL)
                continue
        sock = TSocket.TSocket(proc.host, proc.port)
        sock.setTimeout(10_000)
        transport = TTransport.TBufferedTransport(sock)
        try:
            transport.open()
            ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport)).get_all_databases()
            return
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
            last = exc
            time.sleep(2 * POLL)
        finally:
            transport.close()
    raise TimeoutError(
        f"{proc.name} did not answer on port {proc.port} within {timeout:.0f}s "
        f"(last error: {last!r}); log tail ({proc.log_path}):\n{log_tail(proc.log_path)}")


# --- the two kinds --------------------------------------------------------------------------

def stock_hms_properties(workdir: Path, warehouse: Path) -> dict[str, str]:
    """The stock HMS on embedded Derby in ``workdir`` (passed as -D flags: HiveConf reads
    system properties)."""
    return {
        "javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.async.log.enabled": "false",
        "datanucleus.connectionPoolingType": "HikariCP",
        "hive.metastore.warehouse.dir": str(warehouse),
        # HMS's log4j2 output to the console, i.e. to our log file, not /tmp/$USER/hive.log.
        "hive.root.logger": "console",
        "hive.log.dir": str(workdir),
        # Derby's own files inside the work directory.
        "derby.system.home": str(workdir),
        "derby.stream.error.file": str(workdir / "derby.log"),
    }


def start_stock_hms(workdir: Path | str, *, with_transactions: bool = False,
                    extra_properties: dict[str, str] | None = None, heap: str = "1g",
                    timeout: float = 120.0, conf_dir: Path | None = None,
                    jvm_options: list[str] | None = None, env: dict | None = None,
                    ask: Callable | None = None) -> MetastoreProcess:
    """Start the stock HMS 2.3.10 from PySpark's jars in ``workdir``; returns when it answers.

    ``conf_dir``: a folder put first on the classpath (a ``core-site.xml`` for what Hadoop
    reads only from there, such as ``hadoop.security.authentication``); ``jvm_options``, ``env``
    and ``ask`` (how to tell it answers) as a Kerberized one needs them.

    ``with_transactions``: its lock and transaction calls work. HiveMetaStore alone answers
    them with internal errors on a fresh Derby, so a tiny launcher (java/TxnHms.java, compiled
    on first use) creates the transaction tables with TxnDbUtil.prepDb first."""
    workdir = Path(workdir).resolve()
    warehouse = workdir / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    props = stock_hms_properties(workdir, warehouse)
    cp, main_class = classpath(), "org.apache.hadoop.hive.metastore.HiveMetaStore"
    if with_transactions:
        props.update(TXN_PROPERTIES)
        launcher = compile_java(TXN_LAUNCHER, "the stock HMS with transactions")
        cp, main_class = f"{launcher}{os.pathsep}{cp}", TXN_LAUNCHER.stem
    props.update(extra_properties or {})
    if conf_dir is not None:
        cp = f"{conf_dir}{os.pathsep}{cp}"
    def cmd(port: int) -> list[str]:
        return ["java", f"-Xmx{heap}", "-XX:-OmitStackTraceInFastThrow", *(jvm_options or ()),
                *(f"-D{k}={v}" for k, v in props.items()), "-cp", cp, main_class, "-p", str(port)]
    return spawn("oracle", cmd, workdir=workdir, port=None, warehouse=warehouse, cwd=workdir,
                 timeout=timeout, env=env, ask=ask)


def start_proxy(workdir: Path | str, *extra_args: str, store: Path | str | None = None,
                warehouse: Path | str | None = None, cwd: Path | None = None,
                name: str = "proxy", timeout: float = 60.0,
                env: dict | None = None, port: int | None = None,
                ask: Callable | None = None) -> MetastoreProcess:
    """Start our server in ``workdir`` (its log) over ``store`` (default ``workdir/store``:
    a fresh one; give the same store to several servers to share it; a URL such as
    ``lakefs://REPO`` is passed as is); returns when it answers. ``warehouse=False``: no
    ``--warehouse`` (the store's default). ``env``: the server's environment."""
    workdir = Path(workdir).resolve()
    if warehouse is False:
        warehouse_args, warehouse = [], workdir / "warehouse"
    else:
        warehouse = Path(warehouse).resolve() if warehouse is not None else \
            workdir / "warehouse"
        warehouse.mkdir(parents=True, exist_ok=True)
        warehouse_args = ["--warehouse", str(warehouse)]
    if store is not None and "://" in str(store):
        store = str(store)
    else:
        store = Path(store).resolve() if store is not None else workdir / "store"
    def cmd(port: int) -> list[str]:
        return [sys.executable, "-m", "hms_proxy.cli", "serve", "--store", str(store),
                "--port", str(port), "--host", "127.0.0.1", *warehouse_args, *extra_args]
    return spawn(name, cmd, workdir=workdir, port=port or None, warehouse=warehouse,
                 cwd=cwd or workdir, timeout=timeout, env=env, ask=ask)
