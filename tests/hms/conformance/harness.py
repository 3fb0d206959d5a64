"""The conformance harness: record what a metastore answers to a call sequence.

A scenario is a function `scenario(client, rec)` registered with `@scenario`. It makes
its calls through `rec.call("get_table", "db", "t")`, which performs the call and
records a normalised outcome: either the result or `("exception", ClassName)`. The
same scenario is run against the oracle (stock HMS 2.3.10) and our proxy, and the
two recordings must be equal.

Normalisation (why: these differ between two correct servers):
  * time-like values (createTime, lastAccessTime, lastAnalyzed, transient_lastDdlTime,
    ...) become "<time>" when set (0 and None are kept: a server that leaves them
    unset where HMS sets them is a real difference);
  * absolute paths of the server's warehouse / work directory become <WAREHOUSE> /
    <WORKDIR> (the "file:" scheme prefix is kept: clients see it);
  * sets become sorted lists; dict keys are sorted;
  * lists whose order HMS does not specify are sorted when the scenario says
    `unordered=True`: names of databases, tables, functions, table metas, objects
    returned by get_table_objects_by_name, column statistics objects, and the results of
    get_partitions_ps / get_partition_names_ps (a JDOQL query without ORDER BY: creation
    order on Derby, and not even stable). Other partition listings (get_partitions,
    get_partition_names, get_partitions_by_filter, get_partitions_by_names) are NOT
    sorted: HMS returns them ordered by (escaped) partition name, and clients show that
    order.

Exception messages are recorded as a side note (shown in transcripts) and compared
only when the scenario passes `msg=True` (whole message) or `msg=N` (its first N
characters, for messages that go on with a Java toString() of the request or parser
internals), because HMS's wording is only stable for some errors.
"""

from __future__ import annotations

import difflib
import pprint
import socket
from dataclasses import dataclass, field
from typing import Any, Callable

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType
from thrift.transport.TTransport import TTransportException

from tests.support.client import connect

SCENARIOS: dict[str, Callable] = {}

TIME_FIELDS = {"createTime", "lastAccessTime", "lastAnalyzed", "lastheartbeat", "acquiredat",
               "lastHeartbeat", "acquiredAt", "enqueueTime", "startedTime", "grantTime"}
TIME_PARAMETERS = {"transient_lastDdlTime", "last_modified_time"}
APP_EXCEPTION_TYPES = {v: k for k, v in vars(TApplicationException).items()
                       if k.isupper() and isinstance(v, int)}


def scenario(fn: Callable) -> Callable:
    """Register a scenario under its function name."""
    SCENARIOS[fn.__name__] = fn
    return fn


@dataclass
class Entry:
    """One recorded call: what was asked, the compared outcome, and uncompared detail."""

    label: str
    outcome: Any
    detail: str | None = None


class LiveClient:
    """The client handed to scenarios: always the recorder's current connection."""

    def __init__(self, rec: "Recorder"):
        self._rec = rec

    def __getattr__(self, name):
        return getattr(self._rec.client, name)


@dataclass
class Recorder:
    """Runs calls against one server and keeps their normalised outcomes."""

    proc: Any
    scenario_name: str
    entries: list[Entry] = field(default_factory=list)
    methods: set[str] = field(default_factory=set)  # interface methods this recording called
    _ctx: Any = None
    client: Any = None

    # -- connection -------------------------------------------------------------------
    def __enter__(self) -> "Recorder":
        self._open()
        return self

    def __exit__(self, *exc) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None

    def _open(self) -> None:
        self._ctx = connect(self.proc)
        self.client = self._ctx.__enter__()

    def _reconnect(self) -> None:
        """After a transport failure the connection is unusable; later calls get a new one."""
        try:
            self.__exit__()
        except Exception:  # noqa: BLE001 - the old connection is broken anyway
            pass
        try:
            self._open()
        except Exception:  # noqa: BLE001 - server gone: later calls record transport errors
            self._ctx = None

    # -- recording --------------------------------------------------------------------
    def call(self, method: str, *args, unordered: bool = False, transform: Callable | None = None,
             msg: bool | int = False, label: str | None = None) -> Any:
        """Perform `client.method(*args)`, record its outcome, and return the raw result.

        Returns None when the call raised (the exception is recorded, not propagated),
        so scenarios continue and every later difference is visible too.
        """
        label = label or f"{method}({', '.join(short(a) for a in args)})"
        self.methods.add(method)
        try:
            if self.client is None:
                raise TTransportException(TTransportException.NOT_OPEN, "not connected")
            result = getattr(self.client, method)(*args)
        except (TTransportException, TProtocolException, socket.error, EOFError) as exc:
            self._record_error(label, "transport-error", exc, msg)
            self._reconnect()
            return None
        except TException as exc:
            self._record_error(label, "exception", exc, msg)
            return None
        value = transform(result) if transform else result
        value = self.normalise(value)
        if unordered and isinstance(value, list):
            value = sorted(value, key=repr)
        self.entries.append(Entry(label, value))
        return result

    def note(self, label: str, value: Any) -> None:
        """Record a derived value (e.g. whether a directory exists after a drop)."""
        self.entries.append(Entry(label, self.normalise(value)))

    def raw_call(self, name: str, msg: bool | int = True) -> None:
        """Send a call with an arbitrary method name and empty arguments; record the reply."""
        label = f"raw {name}()"
        try:
            if self.client is None:
                raise TTransportException(TTransportException.NOT_OPEN, "not connected")
            reply = raw_thrift_call(self.client, name)
        except (TTransportException, TProtocolException, socket.error, EOFError) as exc:
            self._record_error(label, "transport-error", exc, msg)
            self._reconnect()
            return
        if isinstance(reply, TApplicationException):
            self._record_error(label, "exception", reply, msg)
        else:
            self.entries.append(Entry(label, ("reply", reply)))

    def _record_error(self, label: str, kind: str, exc: BaseException, msg: bool | int) -> None:
        outcome: tuple = (kind, type(exc).__name__)
        if isinstance(exc, TApplicationException):
            outcome += (APP_EXCEPTION_TYPES.get(exc.type, exc.type),)
        message = self.normalise(exception_message(exc))
        if msg is True:
            outcome += (message,)
        elif msg:
            outcome += (message[:msg] + ("..." if len(message) > msg else ""),)
        self.entries.append(Entry(label, outcome, detail=message))

    # -- normalisation ----------------------------------------------------------------
    def normalise(self, value: Any, key: str | None = None) -> Any:
        if key in TIME_FIELDS or key in TIME_PARAMETERS:
            return "<time>" if value else value
        if hasattr(value, "thrift_spec") and hasattr(value, "__dict__"):
            fields = {k: self.normalise(v, k) for k, v in vars(value).items()
                      if not k.startswith("_")}
            return {"__type__": type(value).__name__, **fields}
        if isinstance(value, dict):
            return {self.normalise(k): self.normalise(v, k) for k, v in sorted(value.items())}
        if isinstance(value, (set, frozenset)):
            return sorted((self.normalise(v) for v in value), key=repr)
        if isinstance(value, (list, tuple)):
            return [self.normalise(v) for v in value]
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, str):
            return self.replace_paths(value)
        return value

    def replace_paths(self, text: str) -> str:
        text = text.replace(str(self.proc.warehouse), "<WAREHOUSE>")
        return text.replace(str(self.proc.workdir), "<WORKDIR>")

    # -- helpers for scenarios --------------------------------------------------------
    def scratch(self, name: str) -> str:
        """An absolute directory outside the warehouse (for external tables/locations)."""
        return f"{self.proc.workdir}/scratch/{self.scenario_name}/{name}"

    # -- output -----------------------------------------------------------------------
    def lines(self, with_details: bool = False) -> list[str]:
        """The recording as text: what the comparison and the diff are made of."""
        out = []
        for i, e in enumerate(self.entries):
            out.append(f"#{i:03d} {e.label}")
            body = pprint.pformat(e.outcome, width=100, sort_dicts=True)
            out.extend("    " + line for line in body.splitlines())
            if with_details and e.detail is not None:
                out.append(f"    message: {e.detail!r}")
        return out


def short(arg: Any) -> str:
    """A compact rendering of a call argument for labels."""
    if hasattr(arg, "thrift_spec"):
        name = getattr(arg, "tableName", None) or getattr(arg, "name", None) \
            or getattr(arg, "functionName", None) or getattr(arg, "tblName", None)
        values = getattr(arg, "values", None)
        inner = repr(name) if name else ""
        if values is not None:
            inner += f" values={values!r}"
        return f"{type(arg).__name__}({inner})"
    if isinstance(arg, list) and arg and hasattr(arg[0], "thrift_spec"):
        return "[" + ", ".join(short(a) for a in arg) + "]"
    text = repr(arg)
    return text if len(text) <= 80 else text[:77] + "..."


def exception_message(exc: BaseException) -> str:
    return str(getattr(exc, "message", None) or exc)


def raw_thrift_call(client, name: str):
    """Write a CALL message with no arguments by hand; return the decoded reply.

    The generated client cannot call methods it does not know, so this is how we
    check what a server answers to an unknown method (HMS: TApplicationException
    UNKNOWN_METHOD, and the connection stays usable).
    """
    oprot, iprot = client._oprot, client._iprot
    oprot.writeMessageBegin(name, TMessageType.CALL, 0)
    oprot.writeStructBegin(f"{name}_args")
    oprot.writeFieldStop()
    oprot.writeStructEnd()
    oprot.writeMessageEnd()
    oprot.trans.flush()
    _, mtype, _ = iprot.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        exc = TApplicationException()
        exc.read(iprot)
        iprot.readMessageEnd()
        return exc
    iprot.skip(12)  # a TType.STRUCT reply we do not understand
    iprot.readMessageEnd()
    return "unexpected reply"


def record(proc, name: str) -> Recorder:
    """Run scenario `name` against `proc` on a fresh connection; return the recorder."""
    with Recorder(proc, name) as rec:
        try:
            SCENARIOS[name](LiveClient(rec), rec)
        except Exception as exc:  # noqa: BLE001 - e.g. a None result the scenario built on
            # Recorded rather than raised so the diff shows everything up to this point.
            rec.entries.append(Entry("scenario aborted", ("aborted", f"{type(exc).__name__}: {exc}")))
    return rec


def diff(expected: Recorder, actual: Recorder) -> str:
    """A unified diff of two recordings, oracle first."""
    return "\n".join(difflib.unified_diff(
        expected.lines(), actual.lines(), fromfile=f"oracle/{expected.scenario_name}",
        tofile=f"proxy/{actual.scenario_name}", lineterm="", n=6))
