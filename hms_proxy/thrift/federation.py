"""Federation: databases this catalog does not hold are served by an upstream metastore.

``hms-proxy serve --upstream thrift://old-hms:9083`` puts the server in front of an existing
HMS: a call that names a database is served here when the database exists in our store at the
call's ref, and forwarded to the upstream otherwise, with the same arguments; the upstream's
answer, or the exception it declares, comes back unchanged. Writes are forwarded only with
``--upstream-writes``; without it a write to an upstream database is refused with a
MetaException that says why and what to do.

* Calls that name no database (roles, transactions, locks, configuration, notifications,
  tokens) are ours. So is ``create_database`` (a database created through us lives here) and
  every call that names a database qualified with a ref (``shop@dev``).
* ``get_all_databases`` and ``get_databases`` merge both catalogs: one sorted list, like HMS's
  (its JDO query orders by name), where a name in both is ours. ``get_table_meta`` and
  ``get_all_functions`` merge too: ours, and the upstream's in the databases we do not hold,
  ordered by database and name.
* The upstream is reached through a pool of Thrift connections (buffered transport, binary
  protocol, a short connect timeout and a read timeout). A transport failure becomes
  ``MetaException("upstream metastore thrift://... unreachable: ...")`` and opens a circuit
  breaker: for a second, doubling up to :data:`MAX_COOLDOWN` while failures repeat, calls on
  upstream databases fail at once instead of waiting on a dead upstream; then one call tries
  again. Calls on our own databases never touch the upstream; the merged listings answer ours
  alone (a warning in the log) while the upstream is unreachable.
"""
from __future__ import annotations

import logging
import select
import socket
import threading
import time
from urllib.parse import urlparse

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TException, TType
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import TBufferedTransport, TTransportException

from hms_proxy.thrift import errors, routing
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from kvmodel import catalog as keys

log = logging.getLogger("hms_proxy.thrift.federation")

DEFAULT_TIMEOUT = 10.0   # seconds a forwarded call may wait for the upstream's answer
CONNECT_TIMEOUT = 2.0    # at most this long to connect (less when the timeout is shorter)
LISTING_TIMEOUT = 2.0    # at most this long for the upstream half of a merged listing
FIRST_COOLDOWN = 1.0     # the breaker stays open this long after a first failure...
MAX_COOLDOWN = 8.0       # ...doubling with each failed retry, up to this
MAX_IDLE = 16            # idle upstream connections kept per user

MERGED_LISTINGS = frozenset({"get_all_databases", "get_databases", "get_table_meta",
                             "get_all_functions"})
ALWAYS_OURS = frozenset({"create_database"})
READ_METHODS = frozenset({"isPartitionMarkedForEvent"})  # besides every get_*

# Database names that routing.py does not look at (qualified names are not stripped there
# either, so a name with '@' in them is ours): request structs and plain arguments.
EXTRA_ARGS = frozenset({"source_db", "dest_db"})
EXTRA_FIELDS = {
    ttypes.PartitionsByExprRequest: ("dbName",),
    ttypes.PartitionSpec: ("dbName",),
    ttypes.PrimaryKeysRequest: ("db_name",),
    ttypes.ForeignKeysRequest: ("parent_db_name", "foreign_db_name"),
    ttypes.DropConstraintRequest: ("dbname",),
    ttypes.SQLPrimaryKey: ("table_db",),
    ttypes.SQLForeignKey: ("pktable_db", "fktable_db"),
}


class Unreachable(errors.MetaError):
    """The upstream could not be reached (or did not answer in time)."""


def is_write(method: str) -> bool:
    return not method.startswith("get_") and method not in READ_METHODS


def _names_databases(method: str, args_spec) -> bool:
    """Whether any call of ``method`` can name a database (decided once per method)."""
    for f in args_spec:
        if f is None:
            continue
        if f[1] == TType.STRING and (f[2] in routing.DB_ARGS or f[2] in EXTRA_ARGS or (
                f[2] == "name" and method in routing.DB_NAME_METHODS)):
            return True
        cls = routing.struct_class(f[1], f[3])
        if cls is not None and (cls in routing.DB_FIELDS or cls in EXTRA_FIELDS
                                or routing.db_paths(cls)):
            return True
    return False


def databases_named(method: str, arg_names, args) -> list[str]:
    """The database names a call's arguments hold, in the order found."""
    found: list[str] = []
    for name, value in zip(arg_names, args):
        if isinstance(value, str):
            if name in routing.DB_ARGS or name in EXTRA_ARGS or (
                    name == "name" and method in routing.DB_NAME_METHODS):
                found.append(value)
        elif value is not None:
            _collect(value, found, 0)
    return found


def _collect(value, found: list[str], depth: int) -> None:
    if depth > 8:
        return
    if isinstance(value, list):
        for item in value:
            _collect(item, found, depth + 1)
        return
    cls = type(value)
    if getattr(cls, "thrift_spec", None) is None:
        return
    for field in routing.DB_FIELDS.get(cls, ()) + EXTRA_FIELDS.get(cls, ()):
        current = getattr(value, field, None)
        if isinstance(current, str):
            found.append(current)
    for name in routing.db_paths(cls):
        child = getattr(value, name, None)
        if child is not None:
            _collect(child, found, depth + 1)


class Breaker:
    """Open after a transport failure: calls fail at once until the cooldown is over, then one
    call tries the upstream again (the others keep failing fast until it is back)."""

    def __init__(self, first: float = FIRST_COOLDOWN, most: float = MAX_COOLDOWN):
        self.first, self.most = first, most
        self.failures = 0
        self.open_until = 0.0
        self.last_error = ""
        self.trial = False
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self.failures > 0

    def before_call(self) -> bool:
        """Raises while the breaker is open; True when this call is the retry after the
        cooldown (it must end with :meth:`success` or :meth:`failure`)."""
        with self._lock:
            if self.failures == 0:
                return False
            wait = self.open_until - time.monotonic()
            if wait > 0 or self.trial:
                raise _fast_fail(self.last_error, max(wait, 0.0))
            self.trial = True
            return True

    def success(self) -> bool:
        """Returns True when this closes the breaker (the upstream is back)."""
        with self._lock:
            was_open = self.failures > 0
            self.failures, self.trial = 0, False
            return was_open

    def failure(self, error: str) -> float:
        """Opens the breaker; returns the cooldown."""
        with self._lock:
            self.failures += 1
            self.trial = False
            cooldown = min(self.most, self.first * 2 ** (self.failures - 1))
            self.open_until = time.monotonic() + cooldown
            self.last_error = error
            return cooldown

    def end_trial(self) -> None:
        with self._lock:
            self.trial = False


def _fast_fail(error: str, wait: float) -> Exception:
    return _Pending(error, wait)


class _Pending(Exception):
    def __init__(self, error: str, wait: float):
        super().__init__(error)
        self.error, self.wait = error, wait


class _Conn:
    __slots__ = ("sock", "transport", "client")

    def __init__(self, sock, transport, client):
        self.sock, self.transport, self.client = sock, transport, client

    def close(self) -> None:
        try:
            self.transport.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass

    def looks_alive(self) -> bool:
        """An idle connection with something to read has been closed (or spoken to out of
        turn) by the upstream: not reusable."""
        handle = self.sock.handle
        if handle is None:
            return False
        try:
            readable, _, _ = select.select([handle], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable


class Upstream:
    """A pool of Thrift clients to the upstream metastore and its circuit breaker."""

    def __init__(self, uri: str, timeout: float = DEFAULT_TIMEOUT, sasl=None):
        self.uri = uri
        self.host, self.port = parse_uri(uri)
        # a Kerberized upstream: ``sasl.open(tsock, host)`` negotiates and answers the
        # transport (hms_proxy.security.sasl_client); None: plain Thrift
        self.sasl = sasl
        self.timeout = timeout
        self.connect_timeout = min(CONNECT_TIMEOUT, timeout)
        self.breaker = Breaker()
        self._idle: dict[tuple, list[_Conn]] = {}
        self._lock = threading.Lock()

    # --- connections ----------------------------------------------------------------------
    def _connect(self, ugi) -> _Conn:
        sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tsock = TSocket()
        tsock.setHandle(sock)
        tsock.setTimeout(self.timeout * 1000)
        if self.sasl is not None:
            # under SASL the upstream's caller is this server's principal, whatever set_ugi
            # would say (the stock ignores it there): no set_ugi
            try:
                transport = self.sasl.open(tsock, self.host)
            except BaseException:
                tsock.close()
                raise
            ugi = None
        else:
            transport = TBufferedTransport(tsock)
        conn = _Conn(tsock, transport, ThriftHiveMetastore.Client(
            TBinaryProtocolAccelerated(transport)))
        if ugi is not None:
            conn.client.set_ugi(ugi[0], list(ugi[1]))
        return conn

    def _checkout(self, ugi) -> tuple[_Conn, bool]:
        with self._lock:
            idle = self._idle.get(ugi)
            while idle:
                conn = idle.pop()
                if conn.looks_alive():
                    return conn, True
                conn.close()
        return self._connect(ugi), False

    def _release(self, ugi, conn: _Conn) -> None:
        with self._lock:
            idle = self._idle.setdefault(ugi, [])
            if len(idle) < MAX_IDLE:
                idle.append(conn)
                return
        conn.close()

    def _drop_idle(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()

    def close(self) -> None:
        self._drop_idle()

    # --- calls ----------------------------------------------------------------------------
    def call(self, method: str, args, *, user=None, groups=None, timeout: float | None = None,
             retry: bool = True):
        """``method(*args)`` on the upstream: its result, or the exception it declares (as
        it came); :class:`Unreachable` when the upstream cannot answer."""
        try:
            trial = self.breaker.before_call()
        except _Pending as pending:
            when = (f"next try in {pending.wait:.1f}s" if pending.wait > 0
                    else "another call is trying it now")
            raise Unreachable(
                f"upstream metastore {self.uri} unreachable: {pending.error} ({when})") from None
        ugi = (user, tuple(groups or ())) if user is not None else None
        try:
            conn, reused = self._checkout(ugi)
        except (OSError, TException) as exc:
            self._failed(_describe(exc, self.connect_timeout))
        try:
            if timeout is not None:
                conn.sock.setTimeout(timeout * 1000)
            result = getattr(conn.client, method)(*args)
        except (TTransportException, TProtocolException, OSError, EOFError) as exc:
            conn.close()
            if reused and retry and not is_write(method) and not trial and \
                    not _timed_out(exc):
                # A pooled connection the upstream dropped (a restart): once more, afresh. Not
                # after a time-out: the upstream is slow, and the caller has waited its time.
                return self.call(method, args, user=user, groups=groups, timeout=timeout,
                                 retry=False)
            self._failed(_describe(exc, timeout or self.timeout))
        except TException:
            # A declared exception or TApplicationException: the upstream answered.
            self._succeeded(conn, ugi, timeout)
            raise
        except BaseException:
            conn.close()
            self.breaker.end_trial()
            raise
        self._succeeded(conn, ugi, timeout)
        return result

    def _succeeded(self, conn: _Conn, ugi, timeout) -> None:
        if timeout is not None:
            conn.sock.setTimeout(self.timeout * 1000)
        self._release(ugi, conn)
        if self.breaker.success():
            log.warning("upstream metastore %s is reachable again", self.uri)

    def _failed(self, reason: str):
        cooldown = self.breaker.failure(reason)
        self._drop_idle()
        if self.breaker.failures == 1:
            log.warning("upstream metastore %s unreachable: %s (its databases fail until it "
                        "answers again)", self.uri, reason)
        else:
            log.info("upstream metastore %s still unreachable: %s (next try in %.0fs)",
                     self.uri, reason, cooldown)
        raise Unreachable(f"upstream metastore {self.uri} unreachable: {reason}")


def _timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is a call's time-out (the upstream is slow, not gone)."""
    inner = getattr(exc, "inner", None)
    return isinstance(exc, (socket.timeout, TimeoutError)) or \
        isinstance(inner, (socket.timeout, TimeoutError)) or \
        (isinstance(exc, TTransportException) and exc.type == TTransportException.TIMED_OUT)


def _describe(exc: BaseException, timeout: float) -> str:
    inner = getattr(exc, "inner", None)
    if _timed_out(exc):
        return f"no answer within {timeout:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TTransportException) and exc.type == TTransportException.END_OF_FILE:
        return "connection closed by the upstream"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    if inner is not None:
        return f"{exc.message or type(exc).__name__}: {inner}"
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__


def parse_uri(uri: str) -> tuple[str, int]:
    """``thrift://host:port`` (or ``host:port``) -> (host, port); port 9083 by default."""
    text = uri if "://" in uri else f"thrift://{uri}"
    parsed = urlparse(text)
    if parsed.scheme != "thrift" or not parsed.hostname:
        raise ValueError(f"an upstream metastore URI looks like thrift://host:9083, got {uri!r}")
    try:
        port = parsed.port or 9083
    except ValueError:
        raise ValueError(f"bad port in upstream metastore URI {uri!r}") from None
    return parsed.hostname, port


class Federation:
    """What the handler asks, per method: is there anything to federate, and where does this
    call go (see the module docstring)."""

    def __init__(self, store, default_ref: str, uri: str, *, writes: bool = False,
                 timeout: float = DEFAULT_TIMEOUT, sasl=None):
        self.store = store
        self.default_ref = default_ref
        self.writes = writes
        self.upstream = Upstream(uri, timeout, sasl)
        self.uri = self.upstream.uri
        self._listing_warned = False
        log.info("databases not in this catalog are served by the upstream metastore %s "
                 "(writes to them %s)", self.uri, "forwarded" if writes else "refused")

    def close(self) -> None:
        self.upstream.close()

    def route_for(self, name: str, method):
        """A ``route(ctx, args, ref, local)`` for the method, or None when its calls are
        always ours. ``local(ctx, args, ref)`` serves the call from our store."""
        if name in MERGED_LISTINGS:
            return self._merged_listing(name)
        if name in ALWAYS_OURS or not _names_databases(name, method.args_cls.thrift_spec):
            return None
        return self._forwarding(name, method.arg_names)

    # --- which side -------------------------------------------------------------------------
    def is_ours(self, ref: str, db) -> bool:
        if not isinstance(db, str) or routing.SEPARATOR in db:
            return True
        try:
            return self.store.get(ref, keys.db_key(db.strip().lower())) is not None
        except Exception:  # noqa: BLE001 - an unknown ref: our side answers with its error
            return True

    def _forwarding(self, name: str, arg_names):
        write = is_write(name)

        def route(ctx, args, ref, local):
            if ref is not None:
                return local(ctx, args, ref)
            dbs = databases_named(name, arg_names, args)
            if not dbs:
                return local(ctx, args, ref)
            at = ctx.ref or self.default_ref
            named = {db.strip().lower() for db in dbs}
            theirs = sorted(db for db in named if not self.is_ours(at, db))
            if not theirs:
                return local(ctx, args, ref)
            if len(theirs) < len(named):
                ours = sorted(named.difference(theirs))
                raise errors.MetaError(
                    f"{name} names databases of this catalog ({', '.join(ours)}) and of the "
                    f"upstream metastore {self.uri} ({', '.join(theirs)}): one call works on "
                    f"one of them")
            if write and not self.writes:
                if not self._upstream_has(ctx, theirs[0]):
                    return local(ctx, args, ref)  # a database nowhere: our errors
                raise errors.MetaError(
                    f"Database {theirs[0]} is served by the upstream metastore {self.uri}, and "
                    f"this server does not write there: {name} refused. Start hms-proxy serve "
                    f"with --upstream-writes to apply writes to upstream databases there, or "
                    f"bring the database into this catalog (create it here, or import it) and "
                    f"write it here")
            return self.upstream.call(name, args, user=ctx.user, groups=ctx.groups)

        return route

    def _upstream_has(self, ctx, db: str) -> bool:
        try:
            self.upstream.call("get_database", [db], user=ctx.user, groups=ctx.groups)
            return True
        except ttypes.NoSuchObjectException:
            return False

    # --- merged listings --------------------------------------------------------------------
    def _merged_listing(self, name: str):
        merge = getattr(self, "_merge_" + name)

        def route(ctx, args, ref, local):
            ours = local(ctx, args, ref)
            try:
                theirs = self.upstream.call(name, args, user=ctx.user, groups=ctx.groups,
                                            timeout=min(LISTING_TIMEOUT, self.upstream.timeout))
            except Unreachable as exc:
                if not self._listing_warned:
                    self._listing_warned = True
                    log.warning("%s answers this catalog's objects only: %s", name, exc.message)
                return ours
            except TException as exc:
                log.warning("%s on the upstream metastore %s failed (%s: %s): answering this "
                            "catalog's objects only", name, self.uri, type(exc).__name__,
                            getattr(exc, "message", exc))
                return ours
            self._listing_warned = False
            return merge(ctx.ref or self.default_ref, ours, theirs)

        return route

    def _theirs(self, at: str, items, db_of):
        """The upstream's items that belong to a database we do not hold."""
        verdict: dict[str, bool] = {}
        out = []
        for item in items or ():
            db = (db_of(item) or "").lower()
            if db not in verdict:
                verdict[db] = not self.is_ours(at, db)
            if verdict[db]:
                out.append(item)
        return out

    def _merge_get_all_databases(self, at, ours, theirs):
        return sorted(set(ours or ()) | set(theirs or ()))

    _merge_get_databases = _merge_get_all_databases

    def _merge_get_table_meta(self, at, ours, theirs):
        merged = list(ours or ()) + self._theirs(at, theirs, lambda m: m.dbName)
        return sorted(merged, key=lambda m: (m.dbName or "", m.tableName or ""))

    def _merge_get_all_functions(self, at, ours, theirs):
        extra = self._theirs(at, getattr(theirs, "functions", None), lambda f: f.dbName)
        functions = sorted(list(getattr(ours, "functions", None) or ()) + extra,
                           key=lambda f: (f.dbName or "", f.functionName or ""))
        return ttypes.GetAllFunctionsResponse(functions=functions)
