"""The Iceberg REST error model: ``{"error": {"message", "type", "code"}}`` with the status the
spec gives each kind, from the Thrift exceptions the handler raises and the store's errors."""
from __future__ import annotations

from thrift.Thrift import TApplicationException

from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel.store import errors as store_errors


class RestError(Exception):
    def __init__(self, status: int, type_: str, message: str):
        super().__init__(message)
        self.status, self.type, self.message = status, type_, message

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "code": self.status}}


def bad_request(message: str) -> RestError:
    return RestError(400, "BadRequestException", message)


def no_such_namespace(namespace: str) -> RestError:
    return RestError(404, "NoSuchNamespaceException", f"Namespace does not exist: {namespace}")


def no_such_table(name: str) -> RestError:
    return RestError(404, "NoSuchTableException", f"Table does not exist: {name}")


def no_such_view(name: str) -> RestError:
    return RestError(404, "NoSuchViewException", f"View does not exist: {name}")


def commit_failed(message: str) -> RestError:
    return RestError(409, "CommitFailedException", message)


def _text(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(text).splitlines()[0]


def from_exception(exc: BaseException, *, missing: RestError | None = None,
                   exists: RestError | None = None) -> RestError | None:
    """The REST answer for an exception of the handler or the store, or None (a bug: 500).
    ``missing`` / ``exists``: what NoSuchObject / AlreadyExists mean for the call at hand."""
    if isinstance(exc, RestError):
        return exc
    if isinstance(exc, ttypes.NoSuchObjectException):
        return missing or RestError(404, "NotFoundException", _text(exc))
    if isinstance(exc, ttypes.AlreadyExistsException):
        return exists or RestError(409, "AlreadyExistsException", _text(exc))
    if isinstance(exc, (store_errors.ReadOnlyRef, store_errors.ProtectedRef)):
        return RestError(403, "ForbiddenException", _text(exc))
    if isinstance(exc, store_errors.RefNotFound):
        return RestError(404, "NotFoundException", _text(exc))
    if isinstance(exc, (store_errors.WriteConflict, store_errors.HeadMoved)):
        return commit_failed(_text(exc))
    if isinstance(exc, store_errors.StoreError):
        return RestError(409, type(exc).__name__, _text(exc))
    if isinstance(exc, (ttypes.InvalidOperationException, ttypes.InvalidObjectException,
                        ttypes.InvalidInputException)):
        return bad_request(_text(exc))
    if isinstance(exc, ttypes.MetaException):
        text = _text(exc)
        lowered = text.lower()
        if "protected" in lowered or "read-only" in lowered or "not allowed" in lowered \
                or "denied" in lowered or "refused" in lowered:
            return RestError(403, "ForbiddenException", text)
        return RestError(500, "ServerErrorException", text)
    if isinstance(exc, TApplicationException):
        if "access denied" in _text(exc):
            return RestError(403, "ForbiddenException", _text(exc))
        return RestError(500, "ServerErrorException", _text(exc))
    return None
