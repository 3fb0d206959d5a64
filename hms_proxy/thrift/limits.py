"""Limits that protect the server from requests and clients that would exhaust it.

* the partition request limit, HMS's ``hive.metastore.limit.partition.request``
  (``serve --limit-partition-request N``): get_partitions, get_partitions_with_auth,
  get_partitions_by_filter and the partition-spec listings built on them refuse to answer
  more partitions than that, with HMS's MetaException;
* the response size cap (``serve --max-response-size``): a reply that would exceed it is
  replaced by a MetaException telling the client to narrow the request (see
  :mod:`hms_proxy.thrift.replies`);
* the per-client connection cap (``serve --max-connections-per-client``): connections
  counted by peer address, refused beyond the cap.

The idle timeout (``serve --idle-timeout``) lives in the transports of :mod:`hms_proxy.thrift.server`:
it is the longest wait for the first byte of a call.
"""
from __future__ import annotations

import logging
import socket
import threading

from thrift.transport.TTransport import TTransportException

from hms_proxy.thrift import errors

log = logging.getLogger("hms_proxy.thrift.limits")

PARTITION_REQUEST_KEY = "hive.metastore.limit.partition.request"
# HMSHandler.PARTITION_NUMBER_EXCEED_LIMIT_MSG, formatted with the key's name.
PARTITION_REQUEST_MESSAGE = (
    "Number of partitions scanned (=%d) on table '%s' exceeds limit (=%d). This is controlled "
    "on the metastore server by " + PARTITION_REQUEST_KEY + ".")


def partition_request_limit(conf: dict[str, str]) -> int:
    """The configured limit (-1, or anything below 0: none), as HiveConf.getIntVar reads it."""
    value = conf.get(PARTITION_REQUEST_KEY)
    if value is None:
        return -1
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"{PARTITION_REQUEST_KEY} must be an integer, not {value!r}") from None


def check_partition_request(conf: dict[str, str], tbl_name: str | None, max_parts,
                            count) -> None:
    """HMSHandler.checkLimitNumberOfPartitions: the partitions a call asks for (``max_parts``
    when it is not negative, else ``count()``, the partitions the call would answer) must not
    exceed the limit. ``count`` is called whenever the limit is on, as HMS counts first (its
    failures, e.g. a missing table, are the call's)."""
    limit = partition_request_limit(conf)
    if limit <= -1:
        return
    found = count()
    requested = found if max_parts is None or max_parts < 0 else max_parts
    if requested > limit:
        raise errors.MetaError(PARTITION_REQUEST_MESSAGE % (requested, tbl_name, limit))


class ResponseTooLarge(errors.MetaError):
    """A reply larger than ``serve --max-response-size``."""

    def __init__(self, method: str, size: int, limit: int):
        super().__init__(
            f"The answer to {method} would take {size} bytes, more than this metastore sends "
            f"in one response ({limit} bytes, serve --max-response-size): narrow the request "
            "(a partition filter, max_parts, or fewer names)")
        self.size = size
        self.limit = limit


class ClientConnections:
    """Open connections per client address, for ``serve --max-connections-per-client``
    (0: no cap). Shared by every listener of a server."""

    def __init__(self, cap: int = 0):
        self.cap = cap
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def client_of(addr) -> str:
        return addr[0] if isinstance(addr, tuple) else str(addr)

    def admit(self, addr) -> bool:
        """Count a new connection from ``addr``; False (nothing counted) when its client has
        ``cap`` connections open already."""
        client = self.client_of(addr)
        with self._lock:
            n = self._open.get(client, 0)
            if self.cap > 0 and n >= self.cap:
                return False
            self._open[client] = n + 1
            return True

    def release(self, addr) -> None:
        client = self.client_of(addr)
        with self._lock:
            n = self._open.get(client, 0) - 1
            if n > 0:
                self._open[client] = n
            else:
                self._open.pop(client, None)

    def count(self, addr) -> int:
        with self._lock:
            return self._open.get(self.client_of(addr), 0)


class IdleTimeout(TTransportException):
    """No call came on a connection for ``serve --idle-timeout`` seconds."""


def wait_for_call(sock, idle_timeout: float, recv):
    """``recv()``, the first read of a call, under a timeout of ``idle_timeout`` seconds on
    ``sock``; :class:`IdleTimeout` when nothing came. The socket's own timeout is restored
    after, so the rest of the call (and its reply) are never cut short."""
    previous = sock.gettimeout()
    sock.settimeout(idle_timeout)
    try:
        return recv()
    except (socket.timeout, TimeoutError):
        raise IdleTimeout(TTransportException.TIMED_OUT,
                          f"no call for {idle_timeout:g} s (serve --idle-timeout)") from None
    except TTransportException as exc:
        if exc.type == TTransportException.TIMED_OUT:
            raise IdleTimeout(TTransportException.TIMED_OUT,
                              f"no call for {idle_timeout:g} s (serve --idle-timeout)") from None
        raise
    finally:
        try:
            sock.settimeout(previous)
        except OSError:
            pass


# --- serve's options ------------------------------------------------------------------------------
def add_serve_arguments(serve, size_type) -> None:
    """``serve``'s limit options (docs/limits.md)."""
    group = serve.add_argument_group("limits that protect the server")
    group.add_argument("--limit-partition-request", type=int, default=None, metavar="N",
                       help="most partitions get_partitions, get_partitions_by_filter and their "
                            "variants may answer, like HMS's " + PARTITION_REQUEST_KEY
                            + " (default -1: no limit; also taken from --conf)")
    group.add_argument("--max-response-size", type=size_type, default=0, metavar="SIZE",
                       help="largest reply sent (e.g. 512m); a larger one is refused with a "
                            "MetaException asking to narrow the request (default 0: no cap)")
    group.add_argument("--idle-timeout", type=float, default=0.0, metavar="SECONDS",
                       help="close a connection that made no call for this long; a call in "
                            "flight is never cut (default 0: never, as HMS)")
    group.add_argument("--max-connections-per-client", type=int, default=0, metavar="N",
                       help="connections one client address may hold open; more are refused "
                            "(default 0: no cap but --max-connections)")
