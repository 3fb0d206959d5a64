"""``hms-proxy doctor``: check a deployment, one line per check (OK, WARN or FAIL).

Checks, each run when its target is named (with none named: the store of ``HMS_STORE`` or
``./metastore`` and the metastore on ``localhost:$HMS_PORT``, 9083 by default):
* ``versions``: hms-proxy, Python, thrift (and its C extension), pyarrow, pyspark, lakefs-sdk,
  redis when installed, and Java (the statistics job runs on it);
* ``store`` (``--store``): the embedded store opens and answers (SQLite's ``quick_check``,
  its schema version, file sizes), or the lakeFS repository is reachable with the credentials;
* ``refs``: every branch with its head, protection and uncommitted (staged) keys; tags;
* ``metastore`` (``--metastore thrift://HOST:PORT``): fb303 ``getStatus``/``getVersion`` and
  ``get_all_databases`` answer, and how fast;
* ``metrics`` (``--metrics http://HOST:PORT``): ``/metrics`` and ``/healthz`` answer;
* ``redis`` (``--redis URL``): Redis answers PING.
Exit status 0 when nothing failed (warnings allowed), 1 otherwise.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlparse

from hms_proxy.ops.metrics import package_version
from hms_proxy.thrift.gen.fb303 import ttypes as fb303
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from kvmodel.locations import open_catalog_store
from kvmodel.store import local_path
from kvmodel.store.local import SCHEMA_VERSION

OK, WARN, FAIL = "OK", "WARN", "FAIL"
STAGED_COUNT_LIMIT = 100_000  # counting more staged keys than this is not worth the wait
SLOW_CALL_MS = 250.0  # a metastore slower than this to list databases gets a warning
LATENCY_CALLS = 5


@dataclass
class Check:
    """The result of one check: ``items`` are printed under its line, ``data`` goes to
    ``--json`` only."""

    check: str
    status: str
    detail: str
    items: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)






# --- versions -------------------------------------------------------------------------------

def java_version(timeout: float = 30.0) -> str | None:
    """The first line ``java -version`` prints, or None without Java."""
    java = shutil.which("java")
    if java is None:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0].strip() if lines else None


def check_versions() -> Check:
    found = {"hms-proxy": package_version("hms-proxy") or "(source tree)",
             "python": sys.version.split()[0], "thrift": package_version("thrift")}
    for optional in ("pyarrow", "pyspark", "lakefs-sdk", "redis"):
        version = package_version(optional)
        if version is not None:
            found[optional] = version
    status, notes = OK, []
    try:
        from thrift.protocol import fastbinary  # noqa: F401
    except ImportError:
        status = FAIL
        notes.append("thrift's C extension (fastbinary) is missing: the server needs it")
    java = java_version()
    found["java"] = java or "not found"
    if java is None:
        status = WARN if status == OK else status
        notes.append("no java: statistics (hms-proxy stats compute) need Java 17")
    detail = ", ".join(f"{k} {v}" for k, v in found.items())
    return Check("versions", status, detail + ("; " + "; ".join(notes) if notes else ""),
                 data=found)


# --- the store ------------------------------------------------------------------------------
def check_store(location: str) -> list[Check]:
    """The store check, then (when it opens) the refs check."""

    local = local_path(location)
    if local is not None:
        first = _check_sqlite(local)
        if first.status == FAIL:
            return [first]
    started = time.perf_counter()
    try:
        store = open_catalog_store(location)
    except Exception as exc:  # noqa: BLE001 - the failure is the report
        return [Check("store", FAIL, f"{location}: {_why(exc)}")]
    try:
        if local is None:
            first = Check("store", OK, f"{location}: lakeFS repository reachable at "
                          f"{store.config.endpoint}, credentials accepted "
                          f"({(time.perf_counter() - started) * 1000:.0f} ms)",
                          data={"endpoint": store.config.endpoint,
                                "repository": store.repository})
        return [first, _check_refs(store)]
    finally:
        store.close()



def _check_sqlite(path: str) -> Check:
    """The embedded store's database, read-only: integrity (quick_check), schema version,
    journal mode and sizes."""

    db = os.path.join(path, "store.db")
    if not os.path.exists(db):
        return Check("store", FAIL, f"no store at {path} (no store.db; hms-proxy serve "
                                    "creates one)")
    started = time.perf_counter()
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
        try:
            quick = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return Check("store", FAIL, f"{db}: SQLite cannot read it: {exc}")
    ms = (time.perf_counter() - started) * 1000
    sizes = {suffix or "db": _size(db + suffix) for suffix in ("", "-wal", "-shm")}
    schema = row[0] if row else None
    data = {"path": os.path.abspath(path), "sqlite": sqlite3.sqlite_version, "schema": schema,
            "quick_check": quick, "journal_mode": journal, "bytes": sizes}
    detail = (f"{os.path.abspath(path)}: SQLite {sqlite3.sqlite_version}, schema {schema}, "
              f"journal {journal}, {_human(sizes['db'])} (WAL {_human(sizes['-wal'])}), "
              f"quick_check {'ok' if quick == ['ok'] else 'FAILED'} in {ms:.0f} ms")
    if quick != ["ok"]:
        return Check("store", FAIL, detail, items=quick[:10], data=data)
    if schema != SCHEMA_VERSION:
        return Check("store", FAIL, detail + f"; this hms-proxy reads schema {SCHEMA_VERSION}",
                     data=data)
    status = OK if journal.lower() == "wal" else WARN
    return Check("store", status, detail, data=data)


def _check_refs(store) -> Check:
    try:
        branches = store.list_branches()
        tags = store.list_tags()
        items, rows = [], []
        for b in branches:
            staged = 0
            for _ in store.staged(b.name):
                staged += 1
                if staged >= STAGED_COUNT_LIMIT:
                    break
            count = f"{staged}+" if staged >= STAGED_COUNT_LIMIT else str(staged)
            items.append(f"{b.name:<20} {b.head[:12]}  {'protected' if b.protected else '':<9}  "
                         f"{count} staged")
            rows.append({"branch": b.name, "head": b.head, "protected": b.protected,
                         "staged": staged})
    except Exception as exc:  # noqa: BLE001 - the failure is the report
        return Check("refs", FAIL, f"listing branches failed: {_why(exc)}")
    dirty = sum(1 for r in rows if r["staged"])
    detail = (f"{_plural(len(branches), 'branch', 'branches')} ({dirty} with uncommitted "
              f"changes), {_plural(len(tags), 'tag', 'tags')}")
    return Check("refs", OK, detail, items=items,
                 data={"branches": rows, "tags": [{"tag": t.name, "commit": t.commit}
                                                  for t in tags]})


# --- the metastore --------------------------------------------------------------------------
def check_metastore(uri: str, transport: str = "buffered", timeout: float = 5.0) -> Check:
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    parsed = urlparse(uri if "://" in uri else f"thrift://{uri}")
    if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
        return Check("metastore", FAIL, f"{uri}: not thrift://HOST:PORT")
    sock = TSocket.TSocket(parsed.hostname, parsed.port)
    sock.setTimeout(timeout * 1000)
    trans = TTransport.TFramedTransport(sock) if transport == "framed" \
        else TTransport.TBufferedTransport(sock)
    try:
        started = time.perf_counter()
        trans.open()
        connect_ms = (time.perf_counter() - started) * 1000
        client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(trans))
        status = client.getStatus()
        version = client.getVersion()
        times, databases = [], []
        for _ in range(LATENCY_CALLS):
            t0 = time.perf_counter()
            databases = client.get_all_databases()
            times.append((time.perf_counter() - t0) * 1000)
    except Exception as exc:  # noqa: BLE001 - the failure is the report
        return Check("metastore", FAIL, f"{uri}: {_why(exc)}")
    finally:
        trans.close()
    median = statistics.median(times)
    status_name = fb303.fb_status._VALUES_TO_NAMES.get(status, str(status))
    detail = (f"{uri}: getStatus {status_name}, fb303 getVersion {version}, "
              f"{len(databases)} databases; get_all_databases {median:.2f} ms (median of "
              f"{LATENCY_CALLS}, max {max(times):.2f}), connect {connect_ms:.2f} ms")
    data = {"status": status_name, "version": version, "databases": len(databases),
            "latency_ms": {"median": median, "max": max(times), "connect": connect_ms}}
    result = OK
    if status != fb303.fb_status.ALIVE:
        result = WARN
        detail += f"; status is {status_name}, not ALIVE"
    if median > SLOW_CALL_MS:
        result = WARN
        detail += f"; slow (over {SLOW_CALL_MS:.0f} ms)"
    return Check("metastore", result, detail, data=data)


# --- the metrics endpoint -------------------------------------------------------------------
def check_metrics(url: str, timeout: float = 5.0) -> Check:
    base = url if "://" in url else f"http://{url}"
    base = base.rstrip("/")
    if base.endswith("/metrics"):
        base = base[: -len("/metrics")]
    try:
        started = time.perf_counter()
        with urllib.request.urlopen(base + "/metrics", timeout=timeout) as resp:
            text = resp.read().decode("utf-8", "replace")
        ms = (time.perf_counter() - started) * 1000
    except (OSError, urllib.error.URLError) as exc:
        return Check("metrics", FAIL, f"{base}/metrics: {_why(exc)}")
    samples = _samples(text)
    if "hms_calls_total" not in text:
        return Check("metrics", FAIL, f"{base}/metrics answers, but not hms-proxy's metrics")
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=timeout) as resp:
            health = resp.read().decode("utf-8", "replace").strip()
        healthy = True
    except urllib.error.HTTPError as exc:
        health, healthy = exc.read().decode("utf-8", "replace").strip(), False
    except (OSError, urllib.error.URLError) as exc:
        health, healthy = _why(exc), False
    calls = sum(v for (name, _), v in samples.items() if name == "hms_calls_total")
    detail = (f"{base}/metrics answers in {ms:.0f} ms: {int(calls)} calls served, "
              f"{int(samples.get(('hms_connections_open', ''), 0))} connections open; "
              f"/healthz: {health}")
    data = {"calls": calls, "healthz": health, "samples": len(samples)}
    return Check("metrics", OK if healthy else FAIL, detail, data=data)


def _samples(text: str) -> dict[tuple[str, str], float]:
    """{(name, labels text): value} of an exposition (enough for the figures shown here)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        try:
            out[(name, labels.rstrip("}"))] = float(value)
        except ValueError:
            continue
    return out


# --- Redis ----------------------------------------------------------------------------------
def check_redis(url: str, timeout: float = 5.0) -> Check:
    try:
        import redis
    except ImportError:
        return Check("redis", FAIL, f"{url}: the redis package is not installed "
                                    "(pip install redis)")
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout,
                                      socket_connect_timeout=timeout)
        started = time.perf_counter()
        client.ping()
        ms = (time.perf_counter() - started) * 1000
        version = client.info("server").get("redis_version", "?")
        client.close()
    except Exception as exc:  # noqa: BLE001 - the failure is the report
        return Check("redis", FAIL, f"{url}: {_why(exc)}")
    return Check("redis", OK, f"{url}: Redis {version} answers PING in {ms:.2f} ms",
                 data={"version": version, "ping_ms": ms})


# --- helpers --------------------------------------------------------------------------------
def _why(exc: BaseException) -> str:
    text = str(exc) or repr(exc)
    return f"{type(exc).__name__}: {text}"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
