"""The HTTP API's errors: one JSON shape, a status per kind of error, never a stack trace.

Every error answer is ``{"error": {"type": ..., "message": ...}}`` (a hook veto adds
``messages``; a merge stopped by conflicts adds ``merge``, the conflicts as data). Domain errors
of the store, the merge, the hooks and the statistics query are mapped here, in one place, the
way ``hms_proxy/thrift/errors.py`` maps them to HMS's Thrift exceptions.
"""
from __future__ import annotations

from kvmodel.store.errors import StoreError


class ApiError(Exception):
    """An answer other than 2xx: ``status``, a ``type`` naming the error, a one-line message,
    and extra top-level or error-level fields (``merge``, ``messages``)."""

    def __init__(self, status: int, type_: str, message: str, *, extra: dict | None = None,
                 detail: dict | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.extra = extra or {}      # top-level fields beside "error"
        self.detail = detail or {}    # fields inside "error"
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"type": self.type, "message": self.message, **self.detail},
                **self.extra}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def not_found(message: str) -> ApiError:
    return ApiError(404, "NotFound", message)


#: Store errors by class name: (status, type). Conflicts with the state of a ref are 409.
_STORE = {
    "RefNotFound": 404,
    "InvalidRef": 400,
    "RefExists": 409,
    "ReadOnlyRef": 409,
    "ProtectedRef": 409,
    "NothingToCommit": 409,
    "HeadMoved": 409,
    "DirtyBranch": 409,
    "MergeConflict": 409,
    "HookVeto": 409,
    "HookConfigError": 409,
}


def first_line(text: str) -> str:
    text = str(text or "").strip()
    return text.splitlines()[0] if text else ""


def from_exception(exc: BaseException) -> ApiError | None:
    """The ApiError for a domain exception, or None for anything else (a bug: logged, 500)."""
    if isinstance(exc, ApiError):
        return exc

    name = type(exc).__name__
    if isinstance(exc, StoreError):
        status = _STORE.get(name)
        if status is None:  # another store error (e.g. no common history): the refs' state
            status = next((s for cls, s in _STORE.items()
                           if any(c.__name__ == cls for c in type(exc).__mro__)), 409)
        message = first_line(str(exc)) or name
        detail = {}
        if name == "HookVeto":
            messages = [str(m) for m in (getattr(exc, "messages", None) or [message])]
            detail["messages"] = messages
            message = "vetoed by hooks: " + "; ".join(messages)
        return ApiError(status, name, message, detail=detail)
    if type(exc).__module__ == "stats.query" and name == "QueryError":
        return ApiError(404, "StatisticsNotFound", first_line(str(exc)) or name)
    return None
