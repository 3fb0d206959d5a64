"""Namespaces and names of the REST catalog as Hive names: one-level namespaces (databases),
names of letters, digits and ``_``."""
from __future__ import annotations

import re

from hms_proxy.rest import errors
from hms_proxy.rest.errors import RestError

_NAME = re.compile(r"[A-Za-z0-9_]+")


def check_name(name: str, what: str = "name", missing: RestError | None = None) -> str:
    """``name`` if it can name a Hive object; else ``missing`` (what a read of it answers:
    nothing by that name can exist) or BadRequest (what a create answers)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        if missing is not None:
            raise missing
        raise errors.bad_request(
            f"Invalid {what} {name!r}: a Hive metastore name is letters, digits and '_'")
    return name


def database_of(namespace: list[str], *, table: str | None = None,
                creating: bool = False, view: bool = False) -> str:
    """The database a namespace is. A nested one names nothing (Hive's are one level): a
    table in it is not found (``table``: the table named, for the message), nor is it."""
    if not namespace:
        raise errors.bad_request("Namespace is empty")
    shown = ".".join(map(str, namespace))
    if table is not None:
        missing = (errors.no_such_view if view else errors.no_such_table)(f"{shown}.{table}")
    else:
        missing = RestError(404, "NoSuchNamespaceException",
                            f"Namespace does not exist: {shown}" + (
                                " (this catalog's namespaces are Hive databases: one level)"
                                if len(namespace) > 1 else ""))
    if len(namespace) != 1:
        raise missing
    return check_name(namespace[0], "namespace", None if creating else missing)


def absolute_location(value, what: str, error=errors.bad_request) -> str | None:
    """A location a request names (a namespace's, a table's or a view's): absent (None), or an
    absolute URI or path. Anything else is refused: a relative one would land under the
    server's working directory."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise error(f"Invalid {what}: location is a string")
    if not (value.startswith("/") or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value)):
        raise error(f"Invalid {what}: location {value!r} is neither an absolute URI nor an "
                    "absolute path")
    return value
