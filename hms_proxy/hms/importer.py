"""``hms-proxy import``: copy a running Hive Metastore's catalog into a branch, as one commit.

The upstream is any HMS speaking the 2.3 Thrift interface (the stock HMS, another hms-proxy).
What is read, per imported database, with our generated client:

* the database (``get_database``) and its functions (``get_all_functions``, one call);
* its tables (``get_all_tables``, then ``get_table_objects_by_name`` in batches of
  :data:`TABLE_BATCH`);
* each partitioned table's partitions: ``get_partition_names``, then ``get_partitions_by_names``
  in batches of :data:`PARTITION_BATCH`, :data:`FETCH_CONNECTIONS` batches at a time on as
  many connections (``--connections``; the upstream serves them in parallel, and more threads
  get it more CPU on a busy machine), each encoded and compared, in order, as it arrives;
* column statistics: table level with ``get_table_statistics_req`` (which columns have some)
  and ``get_table_column_statistics`` per such column (its descriptor, with ``lastAnalyzed``);
  partition level with ``get_partitions_statistics_req`` per batch of partitions. That call
  does not carry ``lastAnalyzed``: it is fetched per (partition, column) with
  ``get_partition_column_statistics`` while an import finds at most
  :data:`EXACT_PARTITION_STATS` such pairs; beyond that an unchanged column keeps the value
  stored before and a new or changed one gets the import's time.

Everything is stored as our server stores it (the structs as HMS answers them, keys from
:mod:`kvmodel.catalog`, canonical bytes from :mod:`kvmodel.codec`), so the imported branch
answers the same as the upstream.

The import compares what it read with the branch head, key by key on canonical bytes, and makes
one commit (``commit_snapshot`` on the head, with ``expected_head``) of exactly the difference:
objects added or changed upstream are written, objects gone upstream are removed, within the
imported databases only (keys other families keep in a table's subtree, e.g. constraints, are
left alone while the table exists). A database gone upstream is removed when the import is not
restricted by ``--databases`` and an earlier import from the same upstream brought it (the
commit metadata ``import.source`` / ``import.databases`` record that). When nothing differs,
nothing is committed. The branch must have no uncommitted changes (like ``merge``); its
pre-commit hooks run on the change first (a veto commits nothing).
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from hms_proxy.hms import names
from hms_proxy.hms.names import make_part_name, part_name_to_spec
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from kvmodel import catalog as keys
from kvmodel import codec
from kvmodel.hooks import run_pre_commit_hooks
from kvmodel.store.contract import Commit, prefix_end
from kvmodel.store.errors import DirtyBranch, ReadOnlyRef

TABLE_BATCH = 100
PARTITION_BATCH = 2000
FETCH_CONNECTIONS = 8  # partition batches fetched at once, each on its own connection
EXACT_PARTITION_STATS = 2000
CONNECT_TIMEOUT = 15.0
CALL_TIMEOUT = 900.0
LOG_SCAN_LIMIT = 10_000  # commits searched for earlier imports from the same upstream


class ImportFailed(Exception):
    """The import cannot be made (unreachable upstream, missing database, dirty branch...);
    nothing was committed."""


# --- the upstream --------------------------------------------------------------------------------
def parse_uri(uri: str) -> list[tuple[str, int]]:
    """``thrift://h:p[,thrift://h2:p2]`` (like hive.metastore.uris) or ``h:p`` -> [(h, p)]."""
    out = []
    for part in (uri or "").split(","):
        text = part.strip()
        if not text:
            continue
        if "://" in text:
            scheme, text = text.split("://", 1)
            if scheme.lower() != "thrift":
                raise ImportFailed(f"--from takes thrift://HOST:PORT, not {part.strip()!r}")
        host, sep, port = text.rstrip("/").rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ImportFailed(f"--from takes thrift://HOST:PORT, not {part.strip()!r}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ImportFailed("--from takes thrift://HOST:PORT")
    return out


@contextmanager
def open_client(uri: str, timeout: float = CALL_TIMEOUT):
    """A ThriftHiveMetastore client (buffered transport, accelerated binary protocol) to the
    first of ``uri``'s metastores that accepts a connection. Raises ImportFailed."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    errors = []
    for host, port in parse_uri(uri):
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(CONNECT_TIMEOUT * 1000)
        transport = TTransport.TBufferedTransport(sock, 1 << 20)
        try:
            transport.open()
        except Exception as exc:  # noqa: BLE001 - TTransportException, socket errors
            errors.append(f"{host}:{port}: {_reason(exc)}")
            continue
        sock.setTimeout(timeout * 1000)
        try:
            yield ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))
        finally:
            transport.close()
        return
    if len(errors) == 1:
        raise ImportFailed(f"cannot reach the upstream metastore {uri}: "
                           f"{errors[0].split(': ', 1)[1]}")
    raise ImportFailed(f"cannot reach the upstream metastore {uri}: {'; '.join(errors)}")


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "inner", None)
    text = str(inner or exc) or type(exc).__name__
    return text.splitlines()[0]


class Upstream:
    """Calls to the upstream, with errors turned into ImportFailed naming the call. The main
    thread has a connection of its own, and each thread fetching partitions another
    (:data:`FETCH_CONNECTIONS` at most), opened on first use."""

    def __init__(self, uri: str):
        self.uri = uri
        self._stack = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def __enter__(self):
        self.main = self._open()
        return self

    def _open(self):
        cm = open_client(self.uri)
        client = cm.__enter__()
        with self._lock:
            self._stack.append(cm)
        return client

    @property
    def mine(self):
        """This thread's own connection."""
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = self._open()
        return client

    def __exit__(self, *exc):
        while self._stack:
            try:
                self._stack.pop().__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass

    def call(self, name: str, *args, client=None):
        try:
            return getattr(client or self.main, name)(*args)
        except ImportFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - MetaException, transport errors...
            message = getattr(exc, "message", None) or _reason(exc)
            raise ImportFailed(f"the upstream {self.uri} failed {name}: "
                               f"{type(exc).__name__}: {message}") from exc

    def optional(self, name: str, *args, client=None):
        """A call whose 'nothing there' answers (NoSuchObject, MISSING_RESULT) mean None."""
        from thrift.Thrift import TApplicationException

        try:
            return getattr(client or self.main, name)(*args)
        except (T.NoSuchObjectException, T.UnknownDBException, T.UnknownTableException):
            return None
        except TApplicationException as exc:
            if exc.type == TApplicationException.MISSING_RESULT:
                return None
            raise ImportFailed(f"the upstream {self.uri} failed {name}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001
            message = getattr(exc, "message", None) or _reason(exc)
            raise ImportFailed(f"the upstream {self.uri} failed {name}: "
                               f"{type(exc).__name__}: {message}") from exc


# --- progress ------------------------------------------------------------------------------------
class Progress:
    """A progress bar on a terminal (redrawn at most 10 times a second), else a plain line
    every :attr:`interval` seconds. ``stream=None``: silent."""

    def __init__(self, stream=None, interval: float = 5.0):
        self.stream = stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.interval = interval if not self.tty else 0.1
        self.total = 0
        self.done = 0
        self.label = ""
        self._last = 0.0
        self._started = time.monotonic()

    def set_total(self, total: int) -> None:
        self.total = total
        self._emit(force=True)

    def advance(self, n: int = 1, label: str | None = None) -> None:
        self.done += n
        if label is not None:
            self.label = label
        self._emit()

    def note(self, text: str) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r\x1b[K")
        self.stream.write(f"import: {text}\n")
        self.stream.flush()

    def _emit(self, force: bool = False) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        total = max(self.total, self.done)
        pct = 100.0 * self.done / total if total else 0.0
        elapsed = now - self._started
        if self.tty:
            width = 30
            fill = int(width * pct / 100)
            bar = "#" * fill + "." * (width - fill)
            self.stream.write(f"\rimport [{bar}] {pct:5.1f}% {self.done:,}/{total:,} objects "
                              f"{elapsed:5.1f}s {self.label[:40]}\x1b[K")
        else:
            self.stream.write(f"import: {self.done:,}/{total:,} objects ({pct:.0f}%), "
                              f"{elapsed:.0f} s, {self.label}\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is None:
            return
        self._emit(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# --- the result ----------------------------------------------------------------------------------
KINDS = ("database", "table", "partition", "function", "table statistics",
         "partition statistics", "other")


@dataclass
class ImportResult:
    uri: str
    branch: str
    databases: list[str]
    commit: Commit | None = None
    changed_keys: int = 0
    counts: dict = field(default_factory=lambda: {k: [0, 0, 0] for k in KINDS})  # +, ~, -
    objects: int = 0
    timings: dict = field(default_factory=dict)

    def count(self, key: str, change: int) -> None:
        self.counts[_kind(key)][change] += 1
        self.changed_keys += 1

    def summary(self) -> str:
        parts = []
        for kind in KINDS:
            added, changed, removed = self.counts[kind]
            bits = [f"+{added}" if added else "", f"~{changed}" if changed else "",
                    f"-{removed}" if removed else ""]
            bits = [b for b in bits if b]
            if bits:
                plural = kind if kind.endswith("statistics") or kind == "other" else kind + "s"
                parts.append(f"{plural} {' '.join(bits)}")
        return ", ".join(parts) if parts else "no changes"

    def to_json(self) -> dict:
        return {"uri": self.uri, "branch": self.branch, "databases": self.databases,
                "commit": self.commit.id if self.commit else None,
                "changed_keys": self.changed_keys, "objects_read": self.objects,
                "counts": {k: dict(zip(("added", "modified", "removed"), v))
                           for k, v in self.counts.items() if any(v)},
                "seconds": {k: round(v, 3) for k, v in self.timings.items()}}


def _kind(key: str) -> str:
    parts = key.split("/")
    if len(parts) == 2:
        return "database"
    if parts[2] == "fn":
        return "function"
    if parts[2] == "table":
        if len(parts) == 4:
            return "table"
        sub = parts[4]
        if sub == "part":
            return "partition"
        if sub == "colstats":
            return "table statistics"
        if sub == "partstats":
            return "partition statistics"
    return "other"


# --- the import ----------------------------------------------------------------------------------
def _lower(name: str | None) -> str:
    return (name or "").lower()


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


class _Differ:
    """Collects the changes of one import: the desired bytes of each key against the head's."""

    def __init__(self, result: ImportResult):
        self.result = result
        self.changes: list[tuple[str, bytes | None]] = []

    def want(self, key: str, data: bytes, current: bytes | None) -> None:
        if current != data:
            self.changes.append((key, data))
            self.result.count(key, 0 if current is None else 1)

    def gone(self, key: str) -> None:
        self.changes.append((key, None))
        self.result.count(key, 2)

    def compare(self, desired: dict[str, bytes], current: dict[str, bytes]) -> None:
        for key, data in desired.items():
            self.want(key, data, current.get(key))
        for key in current:
            if key not in desired:
                self.gone(key)


def encode_partition(part) -> bytes:
    """``codec.encode(part)`` (the same bytes), faster for the usual partition: its three
    string maps sorted directly instead of walking the whole struct."""
    sd = part.sd
    if part.privileges is not None or sd is None or sd.serdeInfo is None or (
            sd.skewedInfo is not None and sd.skewedInfo.skewedColValueLocationMaps):
        return codec.encode(part)
    if part.parameters:
        part.parameters = dict(sorted(part.parameters.items()))
    if sd.parameters:
        sd.parameters = dict(sorted(sd.parameters.items()))
    serde = sd.serdeInfo
    if serde.parameters:
        serde.parameters = dict(sorted(serde.parameters.items()))
    return codec.encode_fast(part)


class _PartNames:
    """``names.make_part_name`` for one table's keys (escaped once), values escaped as
    Hive escapes them."""

    def __init__(self, key_names: list[str]):

        self.names = names
        self.prefixes = [names.escape_path_name(k.lower()) + "=" for k in key_names]

    def __call__(self, values) -> str:
        if values is None or len(values) != len(self.prefixes):
            raise ImportFailed(f"a partition's values {values!r} do not fit its table's "
                               f"{len(self.prefixes)} partition keys")
        esc = self.names.escape_path_name
        return "/".join(p + esc(v) for p, v in zip(self.prefixes, values))


def _scan(view, prefix: str) -> dict[str, bytes]:
    return dict(view.scan(prefix, prefix_end(prefix)))


def import_metastore(store, uri: str, *, branch: str = "main", databases=None,
                     message: str | None = None, author: str = "", metadata: dict | None = None,
                     progress: Progress | None = None, store_path=None,
                     connections: int = FETCH_CONNECTIONS) -> ImportResult:
    """Import ``databases`` (None: all) of the metastore at ``uri`` into ``branch`` as one
    commit of exactly what differs (none when nothing does: ``result.commit`` is None).
    Raises ImportFailed, kvmodel's StoreError (DirtyBranch, HeadMoved, HookVeto...)."""

    progress = progress or Progress(None)
    started = time.monotonic()
    ref = store.resolve(branch)
    if ref.branch is None:
        raise ReadOnlyRef(f"{branch!r} is not a branch; import writes a branch")
    if next(iter(store.staged(branch)), None) is not None:
        raise DirtyBranch(f"branch {branch!r} has uncommitted changes: commit or reset them "
                          "first")
    head = ref.commit
    wanted = None if databases is None else list(dict.fromkeys(_lower(d) for d in databases if d))
    result = ImportResult(uri, branch, [])
    differ = _Differ(result)
    timings = result.timings

    with Upstream(uri) as up:
        upstream_dbs = [_lower(d) for d in up.call("get_all_databases")]
        if wanted is None:
            dbs = sorted(upstream_dbs)
        else:
            missing = [d for d in wanted if d not in upstream_dbs]
            if missing:
                raise ImportFailed(
                    f"no database {', '.join(missing)} in the upstream metastore {uri} "
                    f"(it has: {', '.join(sorted(upstream_dbs)) or 'none'})")
            dbs = wanted
        result.databases = dbs

        # 1. the listing: databases, functions, tables, partition names
        t0 = time.monotonic()
        progress.note(f"reading {len(dbs)} database{'s' if len(dbs) != 1 else ''} from {uri}")
        functions = _functions(up, dbs)
        plan = []  # (db, Database, [Table], {table: [partition names]})
        for db in dbs:
            database = up.optional("get_database", db)
            if database is None:
                raise ImportFailed(f"the database {db} disappeared from {uri} during the import")
            names = up.call("get_all_tables", db)
            tables = []
            for chunk in _chunks(list(names), TABLE_BATCH):
                tables.extend(up.optional("get_table_objects_by_name", db, chunk) or [])
            tables.sort(key=lambda t: _lower(t.tableName))
            part_names = {}
            for table in tables:
                if table.partitionKeys and table.tableType != "VIRTUAL_VIEW":
                    part_names[_lower(table.tableName)] = \
                        up.optional("get_partition_names", db, table.tableName, -1) or []
            plan.append((db, database, tables, part_names))
        result.objects = sum(1 + len(tables) + len(functions[db]) + sum(map(len, pn.values()))
                             for db, _, tables, pn in plan)
        progress.set_total(result.objects)
        timings["list"] = time.monotonic() - t0

        # 2. each database against the head
        t0 = time.monotonic()
        stats_budget = [EXACT_PARTITION_STATS]
        with ThreadPoolExecutor(max_workers=max(1, connections)) as ahead, \
                store.read(head) as view:
            ahead.width = max(1, connections)
            for db, database, tables, part_names in plan:
                _import_database(up, view, differ, progress, ahead, db, database, tables,
                                 part_names, functions[db], stats_budget)
            gone = _vanished_databases(store, head, uri, upstream_dbs) if wanted is None else []
            for db in gone:
                progress.note(f"database {db} is gone upstream: removing it")
                if view.get(keys.db_key(db)) is not None:
                    differ.gone(keys.db_key(db))
                for key in _scan(view, keys.db_key(db) + "/"):
                    differ.gone(key)
        progress.finish()
        timings["read_compare"] = time.monotonic() - t0

    # 3. one commit of the difference
    if not differ.changes:
        timings["total"] = time.monotonic() - started
        return result
    t0 = time.monotonic()
    meta = {"import.source": uri, "import.databases": ",".join(dbs),
            "import.all": "false" if wanted is not None else "true"}
    meta.update(metadata or {})
    if message is None:
        message = (f"import {', '.join(dbs) if len(dbs) <= 5 else f'{len(dbs)} databases'} "
                   f"from {uri} ({result.summary()})")
    run_pre_commit_hooks(store, store_path, branch, head, differ.changes, message, author, meta)
    result.commit = store.commit_snapshot(branch, [head], iter(differ.changes), message,
                                          author=author, metadata=meta, expected_head=head)
    timings["commit"] = time.monotonic() - t0
    timings["total"] = time.monotonic() - started
    return result


def _functions(up, dbs: list[str]) -> dict[str, list]:
    """db -> its Function structs: get_all_functions (one call), or, from a metastore older
    than 2.1 that lacks it, get_functions and get_function per database."""
    from thrift.Thrift import TApplicationException

    out: dict[str, list] = {d: [] for d in dbs}
    try:
        everything = up.main.get_all_functions()
    except TApplicationException as exc:
        if exc.type != TApplicationException.UNKNOWN_METHOD:
            raise ImportFailed(f"the upstream {up.uri} failed get_all_functions: {exc}") from exc
        for db in dbs:
            for name in up.call("get_functions", db, "*") or []:
                fn = up.optional("get_function", db, name)
                if fn is not None:
                    out[db].append(fn)
        return out
    except Exception as exc:  # noqa: BLE001
        message = getattr(exc, "message", None) or _reason(exc)
        raise ImportFailed(f"the upstream {up.uri} failed get_all_functions: "
                           f"{type(exc).__name__}: {message}") from exc
    for fn in everything.functions or []:
        if _lower(fn.dbName) in out:
            out[_lower(fn.dbName)].append(fn)
    return out


def _import_database(up, view, differ, progress, ahead, db, database, tables, part_names,
                     functions, stats_budget) -> None:
    db_key = keys.db_key(db)
    database.name = _lower(database.name) or db
    differ.want(db_key, codec.encode(database), view.get(db_key))
    progress.advance(1, db)

    fn_prefix = f"{db_key}/fn/"
    desired = {}
    for fn in functions:
        fn.dbName = db
        desired[keys.func_key(db, fn.functionName)] = codec.encode(fn)
    differ.compare(desired, _scan(view, fn_prefix))
    progress.advance(len(functions))

    table_prefix = f"{db_key}/table/"
    upstream_tables = set()
    for table in tables:
        name = _lower(table.tableName)
        upstream_tables.add(name)
        _import_table(up, view, differ, progress, ahead, db, table, part_names.get(name, []),
                      stats_budget)
    # tables gone upstream: the table and its whole subtree
    reader = keys.CatalogReader(view, T)
    for name in reader.table_names(db):
        if name not in upstream_tables:
            tkey = table_prefix + name
            if view.get(tkey) is not None:
                differ.gone(tkey)
            for key in _scan(view, tkey + "/"):
                differ.gone(key)


def _import_table(up, view, differ, progress, ahead, db, table, part_names, stats_budget) -> None:
    name = _lower(table.tableName)
    table.dbName, table.tableName = db, name
    tkey = keys.table_key(db, name)
    differ.want(tkey, codec.encode(table), view.get(tkey))
    progress.advance(1, f"{db}.{name}")
    is_view = table.tableType == "VIRTUAL_VIEW"
    cols = [c.name for c in (table.sd.cols if table.sd else None) or []]

    # table-level column statistics
    desired = {}
    if cols and not is_view:
        found = up.optional("get_table_statistics_req", T.TableStatsRequest(db, name, cols))
        for obj in (found.tableStats if found is not None else None) or []:
            stats = up.optional("get_table_column_statistics", db, name, obj.colName)
            if stats is None:
                continue
            stats.statsDesc.dbName, stats.statsDesc.tableName = db, name
            desired[keys.table_colstats_key(db, name, _lower(obj.colName))] = codec.encode(stats)
    differ.compare(desired, _scan(view, f"{tkey}/colstats/"))

    # partitions (batches fetched in parallel, handled in order) and their statistics
    key_names = [k.name for k in table.partitionKeys or []]
    make_part_name = _PartNames(key_names)
    part_prefix = keys.part_prefix(db, name)
    current = _scan(view, part_prefix)
    seen: set[str] = set()
    stats_current = _scan(view, f"{tkey}/partstats/")
    stats_desired: dict[str, bytes] = {}

    def fetch(chunk):
        client = up.mine
        parts = up.call("get_partitions_by_names", db, name, chunk, client=client)
        pstats = None
        if cols and parts:
            req = T.PartitionsStatsRequest(db, name, cols, chunk)
            pstats = up.optional("get_partitions_statistics_req", req, client=client)
        return parts, (pstats.partStats if pstats is not None else None) or {}

    chunks = list(_chunks(part_names, PARTITION_BATCH))
    width = ahead.width
    pending = [ahead.submit(fetch, c) for c in chunks[:width]]
    for i in range(len(chunks)):
        parts, pstats = pending.pop(0).result()
        if i + width < len(chunks):
            pending.append(ahead.submit(fetch, chunks[i + width]))
        for part in parts:
            part.dbName, part.tableName = db, name
            key = part_prefix + make_part_name(part.values)
            seen.add(key)
            data = encode_partition(part)
            old = current.get(key)
            if old != data:
                differ.want(key, data, old)
        for upname, objs in pstats.items():
            _partition_stats(up, db, name, key_names, upname, objs, stats_current,
                             stats_desired, stats_budget)
        progress.advance(len(parts), f"{db}.{name}")
    for key in current:
        if key not in seen:
            differ.gone(key)
    differ.compare(stats_desired, stats_current)


def _partition_stats(up, db, tbl, key_names, upname, objs, stats_current, stats_desired,
                     stats_budget) -> None:

    spec = part_name_to_spec(upname)
    try:
        pname = make_part_name(key_names, [spec[k.lower()] for k in key_names])
    except KeyError:
        pname = upname
    prefix = keys.part_colstats_prefix(db, tbl, pname)
    for obj in objs:
        key = prefix + _lower(obj.colName)
        stamp = None
        if stats_budget[0] > 0:
            stats_budget[0] -= 1
            exact = up.optional("get_partition_column_statistics", db, tbl, upname, obj.colName)
            if exact is not None and exact.statsDesc is not None:
                stamp = exact.statsDesc.lastAnalyzed
        desc = T.ColumnStatisticsDesc(isTblLevel=False, dbName=db, tableName=tbl, partName=pname,
                                      lastAnalyzed=stamp)
        stats = T.ColumnStatistics(statsDesc=desc, statsObj=[obj])
        if stamp is None:  # beyond the budget: keep the stored time when the data is the same
            old = stats_current.get(key)
            previous = codec.decode(T.ColumnStatistics, old) if old is not None else None
            if previous is not None and previous.statsObj and previous.statsObj[0] == obj:
                desc.lastAnalyzed = previous.statsDesc.lastAnalyzed
            else:
                desc.lastAnalyzed = int(time.time())
        stats_desired[key] = codec.encode(stats)


def _vanished_databases(store, head: str, uri: str, upstream_dbs: list[str]) -> list[str]:
    """Databases an earlier import from ``uri`` brought to this branch and the upstream no
    longer has (searched back to the last unrestricted import from it)."""
    earlier: set[str] = set()
    for i, commit in enumerate(store.log(head)):
        if i >= LOG_SCAN_LIMIT:
            break
        meta = commit.metadata or {}
        if meta.get("import.source") != uri:
            continue
        earlier.update(d for d in meta.get("import.databases", "").split(",") if d)
        if meta.get("import.all") == "true":
            break
    present = set(upstream_dbs)
    out = []
    for db in sorted(earlier - present):
        if store.get(head, keys.db_key(db)) is not None:
            out.append(db)
    return out
