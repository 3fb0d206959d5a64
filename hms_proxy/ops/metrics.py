"""Prometheus metrics of the server (``serve --metrics-port``), in the text exposition format.

What a call costs: :meth:`ServerMetrics.observe` runs once per Thrift call, after it, and takes
no lock. Each thread records into a shard of its own (a dict lookup, a few integer adds and a
``bisect`` into the latency buckets); a scrape sums the shards and folds those of finished
threads into one. Everything else is computed when ``/metrics`` is read: store size, branches,
process figures and the listing cache. Connections are counted once per connection, under a
lock. The exposition format is written here (no client library):
https://prometheus.io/docs/instrumenting/exposition_formats/
"""
from __future__ import annotations

import bisect
import functools
import http.server
import logging
import math
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata

from hms_proxy.ops import logs

log = logging.getLogger("hms_proxy.ops.metrics")

# Latency buckets (seconds), 100 µs to 10 s: a cached get_table takes ~100 µs, a listing of
# 100,000 partitions several seconds.
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
           1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The level of each call's log line: catalog writes at INFO, everything else at DEBUG.
_LEVELS = {method: logging.INFO for method in logs.WRITE_METHODS}


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# --- the exposition format ------------------------------------------------------------------
@dataclass
class MetricFamily:
    """One metric: its name, type (counter, gauge, histogram...), help and samples."""

    name: str
    kind: str
    help: str
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, labels: dict[str, str] | None = None, suffix: str = "") -> None:
        """A sample ``name + suffix {labels} value`` (suffix: ``_bucket``, ``_sum``...)."""
        self.samples.append((suffix, labels or {}, value))


def escape_label_value(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(families) -> str:
    """The text exposition of ``families``: HELP and TYPE lines, then the samples."""
    out: list[str] = []
    for fam in families:
        out.append(f"# HELP {fam.name} {escape_help(fam.help)}")
        out.append(f"# TYPE {fam.name} {fam.kind}")
        for suffix, labels, value in fam.samples:
            if labels:
                text = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items())
                out.append(f"{fam.name}{suffix}{{{text}}} {format_value(value)}")
            else:
                out.append(f"{fam.name}{suffix} {format_value(value)}")
    return "\n".join(out) + "\n"


def histogram(fam: MetricFamily, labels: dict[str, str], counts, total: float) -> None:
    """Samples of one histogram series from per-bucket (not cumulative) ``counts``, the last
    one being the +Inf bucket."""
    running = 0
    for bound, n in zip(BUCKETS + (math.inf,), counts):
        running += n
        fam.add(running, {**labels, "le": "+Inf" if math.isinf(bound) else repr(bound)},
                "_bucket")
    fam.add(total, labels, "_sum")
    fam.add(running, labels, "_count")


# --- per-call statistics, recorded without locks --------------------------------------------
class _Shard:
    """What one thread recorded: ``calls[method] = [seconds, n(bucket 0), ..., n(+Inf)]`` and
    ``errors[(method, exception)] = n``. Only its thread writes it."""

    __slots__ = ("thread", "calls", "errors")

    def __init__(self, thread: threading.Thread | None):
        self.thread = thread
        self.calls: dict[str, list] = {}
        self.errors: dict[tuple[str, str], int] = {}

    def absorb(self, calls: dict[str, list], errors: dict[tuple[str, str], int]) -> None:
        for method, row in calls.items():
            mine = self.calls.get(method)
            if mine is None:
                self.calls[method] = list(row)
            else:
                for i, v in enumerate(row):
                    mine[i] += v
        for key, n in errors.items():
            self.errors[key] = self.errors.get(key, 0) + n


class CallStats:
    """Calls, errors and latencies per method: lock-free per-thread shards, summed on read."""

    def __init__(self):
        self._local = threading.local()
        self._lock = threading.Lock()
        self._shards: list[_Shard] = []
        self._retired = _Shard(None)  # what finished threads recorded

    def record(self, method: str, seconds: float, error: str | None) -> None:
        try:
            shard = self._local.shard
        except AttributeError:
            shard = self._new_shard()
        row = shard.calls.get(method)
        if row is None:
            row = shard.calls[method] = [0.0] + [0] * (len(BUCKETS) + 1)
        row[0] += seconds
        row[1 + bisect.bisect_left(BUCKETS, seconds)] += 1
        if error is not None:
            key = (method, error)
            shard.errors[key] = shard.errors.get(key, 0) + 1

    def _new_shard(self) -> _Shard:
        shard = self._local.shard = _Shard(threading.current_thread())
        with self._lock:
            if len(self._shards) >= 64 + 2 * threading.active_count():
                self._fold_finished()  # bounded without scrapes too
            self._shards.append(shard)
        return shard

    def _fold_finished(self) -> None:
        """(under the lock) Shards of threads that ended go into ``_retired``: nobody writes
        them any more."""
        live = []
        for shard in self._shards:
            if shard.thread.is_alive():
                live.append(shard)
            else:
                self._retired.absorb(shard.calls, shard.errors)
        self._shards = live

    def snapshot(self) -> tuple[dict[str, list], dict[tuple[str, str], int]]:
        """(calls, errors) summed over every thread. A call being recorded meanwhile may be
        missing (or be in its sum of seconds only); a histogram's count is always the sum of
        its buckets, and the calls counter is that count."""
        with self._lock:
            self._fold_finished()
            total = _Shard(None)
            total.absorb(self._retired.calls, self._retired.errors)
            for shard in self._shards:
                # dict.copy() and list() of ints are atomic under the GIL
                total.absorb({m: list(r) for m, r in shard.calls.copy().items()},
                             shard.errors.copy())
        return total.calls, total.errors


# --- the server's metrics -------------------------------------------------------------------
class ServerMetrics:
    """The call observer of :class:`hms_proxy.thrift.processor.Processor` (``processor.metrics``)
    and of the listeners' connections, and the source of ``/metrics`` and ``/healthz``.

    Args:
        env: an :class:`hms_proxy.hms.family.Env` whose store, listing cache and ref are
            observed; or, for a server being composed, nothing but
        default_ref: the ref named in call logs when a call names none,
        cache: the listing cache, and the store given to :meth:`counted`.
    """

    def __init__(self, env=None, default_ref: str | None = None, cache=None):
        self.default_ref = default_ref or (env.ref if env is not None else None)
        self._store = getattr(env, "store", None)
        self._cache = cache if cache is not None else getattr(env, "cache", None)
        self.started = time.time()
        self.calls = CallStats()
        self._lock = threading.Lock()
        self.connections_accepted = 0
        self.connections_refused = 0
        self.connections_closed = 0
        self.commits = 0
        self.merges = 0

    # --- hooks: calls (no lock), connections and commits (a short lock) ----------------------
    def observe(self, ctx, method: str, seconds: float, error: str | None,
                _bisect=bisect.bisect_left, _levels=_LEVELS, _calls_log=logs.CALLS) -> None:
        """One finished call: ``error`` is None, or the class of the exception the client
        got (``MetaException``...; ``InternalError`` for an internal error).
        (:meth:`CallStats.record`, inlined: this runs once per call.)"""
        try:
            shard = self.calls._local.shard
        except AttributeError:
            shard = self.calls._new_shard()
        row = shard.calls.get(method)
        if row is None:
            row = shard.calls[method] = [0.0] + [0] * (len(BUCKETS) + 1)
        row[0] += seconds
        row[1 + _bisect(BUCKETS, seconds)] += 1
        if error is not None:
            key = (method, error)
            shard.errors[key] = shard.errors.get(key, 0) + 1
        level = _levels.get(method, logging.DEBUG)
        if _calls_log.isEnabledFor(level):
            logs.log_call(level, ctx, method, seconds, error, self.default_ref)

    def connection_opened(self) -> None:
        with self._lock:
            self.connections_accepted += 1

    def connection_refused(self) -> None:
        with self._lock:
            self.connections_refused += 1

    def connection_closed(self) -> None:
        with self._lock:
            self.connections_closed += 1

    def counted(self, store) -> "CountedStore":
        """``store`` with the commits and merges made through it by this process counted (with
        ``--autocommit``, one commit per write; a merge is a commit with two parents)."""
        self._store = CountedStore(store, self)
        return self._store

    def _committed(self, parents: int) -> None:
        with self._lock:
            if parents > 1:
                self.merges += 1
            else:
                self.commits += 1

    # --- reading them ----------------------------------------------------------------------
    def families(self) -> list[MetricFamily]:
        out: list[MetricFamily] = []
        calls, errors = self.calls.snapshot()
        total = MetricFamily("hms_calls_total", "counter", "Thrift calls served, by method.")
        errs = MetricFamily("hms_call_errors_total", "counter",
                            "Thrift calls that failed, by method and the exception the client "
                            "got (InternalError: an internal error).")
        hist = MetricFamily("hms_call_duration_seconds", "histogram",
                            "Time from a call's decoded arguments to its reply sent, by method.")
        for method in sorted(calls):
            row = calls[method]
            total.add(sum(row[1:]), {"method": method})
            histogram(hist, {"method": method}, row[1:], row[0])
        for (method, exc) in sorted(errors):
            errs.add(errors[(method, exc)], {"method": method, "exception": exc})
        out += [total, errs, hist]

        with self._lock:
            accepted, refused, closed = (self.connections_accepted, self.connections_refused,
                                         self.connections_closed)
            commits, merges = self.commits, self.merges
        out.append(_single("hms_connections_open", "gauge",
                           "Client connections open now.", accepted - closed))
        out.append(_single("hms_connections_accepted_total", "counter",
                           "Client connections accepted.", accepted))
        out.append(_single("hms_connections_refused_total", "counter",
                           "Client connections refused (serve --max-connections).", refused))
        out.append(_single("hms_commits_total", "counter",
                           "Commits made by this process (serve --autocommit: one per write).",
                           commits))
        out.append(_single("hms_merges_total", "counter", "Merges made by this process.",
                           merges))
        out += self._store_families()
        out += self._cache_families()
        out += _process_families(self.started)
        return out

    def render(self) -> str:
        return render(self.families())

    def _store_families(self) -> list[MetricFamily]:
        store = self._store
        if store is None:
            return []
        inner = getattr(store, "wrapped", store)  # a lakeFS store seen through RenderedStore
        out = []
        db_path = getattr(inner, "db_path", None)
        if db_path is not None:  # the embedded store: its SQLite files
            size = MetricFamily("hms_store_size_bytes", "gauge",
                                "Bytes of the embedded store's files (database, WAL, shared "
                                "memory).")
            for suffix in ("", "-wal", "-shm"):
                try:
                    size.add(os.stat(f"{db_path}{suffix}").st_size, {"file": f"store.db{suffix}"})
                except OSError:
                    pass
            out.append(size)
        api_calls = getattr(getattr(inner, "api", None), "calls", None)
        if isinstance(api_calls, int):  # the lakeFS store: requests made (sizes cost listings)
            out.append(_single("hms_lakefs_requests_total", "counter",
                               "Requests this process made to lakeFS's API.", api_calls))
        up = 1
        try:
            branches = len(store.list_branches())
        except Exception as exc:  # noqa: BLE001 - a scrape reports, it does not fail
            log.warning("metrics: the store does not answer: %s", exc)
            up, branches = 0, None
        out.append(_single("hms_store_up", "gauge",
                           "1 when the store answered this scrape, else 0.", up))
        if branches is not None:
            out.append(_single("hms_branches", "gauge", "Branches in the store.", branches))
        return out

    def _cache_families(self) -> list[MetricFamily]:
        stats = getattr(self._cache, "stats", None)
        if stats is None:
            return []
        s = stats()
        return [
            _single("hms_cache_hits_total", "counter", "Listing cache hits.", s["hits"]),
            _single("hms_cache_misses_total", "counter", "Listing cache misses.", s["misses"]),
            _single("hms_cache_bytes", "gauge", "Weight of the listing cache's entries.",
                    s["bytes"]),
            _single("hms_cache_capacity_bytes", "gauge", "Bound of the listing cache "
                    "(serve --cache-size).", s["capacity"]),
            _single("hms_cache_entries", "gauge", "Entries in the listing cache.", s["entries"]),
        ]

    def healthy(self) -> tuple[bool, str]:
        """Whether the store answers (the served ref resolves)."""
        store = self._store
        if store is None:
            return True, "ok"
        try:
            resolved = store.resolve(self.default_ref or "main")
        except Exception as exc:  # noqa: BLE001 - the answer is the report
            return False, f"store: {type(exc).__name__}: {exc}"
        return True, f"ok {self.default_ref} {resolved.commit[:12]}"


def _single(name: str, kind: str, help_text: str, value: float) -> MetricFamily:
    fam = MetricFamily(name, kind, help_text)
    fam.add(value)
    return fam


def _process_families(started: float) -> list[MetricFamily]:
    out = []
    rss = _rss_bytes()
    if rss is not None:
        out.append(_single("process_resident_memory_bytes", "gauge",
                           "Resident memory size in bytes.", rss))
    out.append(_single("process_cpu_seconds_total", "counter",
                       "User and system CPU time spent in seconds.", time.process_time()))
    out.append(_single("process_start_time_seconds", "gauge",
                       "Start time of the process since the epoch in seconds.", started))
    out.append(_single("hms_uptime_seconds", "gauge", "Seconds since the server started.",
                       time.time() - started))
    try:
        out.append(_single("process_open_fds", "gauge", "Open file descriptors.",
                           len(os.listdir("/proc/self/fd"))))
    except OSError:
        pass
    out.append(_single("process_threads", "gauge", "Python threads alive.",
                       threading.active_count()))
    info = MetricFamily("hms_build_info", "gauge", "Versions of the server, Python and thrift.")
    info.add(1, _build_labels())
    out.append(info)
    return out


@functools.lru_cache(maxsize=1)
def _build_labels() -> dict[str, str]:

    return {"version": package_version("hms-proxy") or "unknown",
            "python": sys.version.split()[0], "thrift": package_version("thrift") or "unknown"}


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# --- the HTTP endpoint ----------------------------------------------------------------------
class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "hms-proxy-metrics"
    protocol_version = "HTTP/1.0"

    def do_GET(self):  # noqa: N802 - the stdlib's name
        metrics: ServerMetrics = self.server.metrics
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            try:
                status, body, ctype = 200, metrics.render().encode(), CONTENT_TYPE
            except Exception:  # noqa: BLE001 - a scrape never takes anything down
                log.exception("metrics: rendering failed")
                status, body, ctype = 500, b"rendering failed\n", "text/plain"
        elif path == "/healthz":
            ok, text = metrics.healthy()
            status, body, ctype = (200 if ok else 503), (text + "\n").encode(), "text/plain"
        else:
            status, body, ctype = 404, b"not found: try /metrics or /healthz\n", "text/plain"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        log.debug("%s %s", self.address_string(), format % args)


class MetricsServer(http.server.HTTPServer):
    """``/metrics`` and ``/healthz`` on one daemon thread (one request at a time: scrapes
    are rare, and the embedded store gives this thread one connection of its own)."""

    def __init__(self, metrics: ServerMetrics, host: str, port: int):
        self.metrics = metrics
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> MetricsServer:
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.5},
                                       name="hms-metrics", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class CountedStore:
    """A store whose ``commit`` and ``commit_snapshot`` are counted in a
    :class:`ServerMetrics`; everything else is the store's own."""

    def __init__(self, store, observer: ServerMetrics):
        self._store = store
        self._observer = observer

    def __getattr__(self, name):
        return getattr(self._store, name)

    @property
    def wrapped(self):
        return self._store

    def commit(self, *args, **kwargs):
        made = self._store.commit(*args, **kwargs)
        self._observer._committed(1)
        return made

    def commit_snapshot(self, branch, parents, *args, **kwargs):
        made = self._store.commit_snapshot(branch, parents, *args, **kwargs)
        self._observer._committed(len(parents))
        return made
