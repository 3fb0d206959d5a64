"""HMS errors: the domain exceptions of the server and their one mapping to Thrift exceptions.

Family modules raise the small classes below (or let store errors through); the processor calls
:func:`to_thrift` once per failed call to pick the Thrift exception the method declares. The
messages are worded like the stock HMS's, because clients (Spark above all) match on them.
"""
from __future__ import annotations

from kvmodel.store import errors as store_errors


class HMSError(Exception):
    """Base class: an error the client is meant to see, with HMS's wording."""

    thrift_name = "MetaException"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InternalError(Exception):
    """Where HMS fails with an unchecked Java exception: the client gets
    TApplicationException INTERNAL_ERROR ("Internal error processing <method>")."""


class MetaError(HMSError):
    """A generic HMS failure (MetaException)."""


class NoSuchObject(HMSError):
    """The database, table, partition or function does not exist (NoSuchObjectException)."""

    thrift_name = "NoSuchObjectException"


class AlreadyExists(HMSError):
    """The object exists already (AlreadyExistsException)."""

    thrift_name = "AlreadyExistsException"


class InvalidObject(HMSError):
    """The object is malformed or its name is invalid (InvalidObjectException)."""

    thrift_name = "InvalidObjectException"


class InvalidOperation(HMSError):
    """The operation is not allowed on this object (InvalidOperationException)."""

    thrift_name = "InvalidOperationException"


class UnknownDB(HMSError):
    thrift_name = "UnknownDBException"


class UnknownTable(HMSError):
    thrift_name = "UnknownTableException"


class UnknownPartition(HMSError):
    thrift_name = "UnknownPartitionException"


class InvalidPartition(HMSError):
    thrift_name = "InvalidPartitionException"


class InvalidInput(HMSError):
    thrift_name = "InvalidInputException"


class ConfigValSecurity(HMSError):
    thrift_name = "ConfigValSecurityException"


def _store_error_message(exc: store_errors.StoreError) -> str:
    if isinstance(exc, store_errors.ReadOnlyRef):
        return f"Ref is read-only (a tag, commit or ancestry ref cannot be written): {exc}"
    if isinstance(exc, store_errors.RefNotFound):
        return f"No such ref: {exc}"
    return f"{type(exc).__name__}: {exc}"


def to_thrift(exc: BaseException, ttypes) -> Exception | None:
    """The Thrift exception instance for a domain error, or None when ``exc`` is not one
    (a bug: the processor answers it with an internal-error TApplicationException)."""
    if isinstance(exc, HMSError):
        return getattr(ttypes, exc.thrift_name)(message=exc.message)
    if isinstance(exc, store_errors.StoreError):
        return ttypes.MetaException(message=_store_error_message(exc))
    return None


class NoSuchTxn(HMSError):
    """The transaction is unknown or already committed (NoSuchTxnException)."""

    thrift_name = "NoSuchTxnException"


class TxnAborted(HMSError):
    """The transaction was aborted (TxnAbortedException)."""

    thrift_name = "TxnAbortedException"


class NoSuchLock(HMSError):
    """The lock is unknown or released (NoSuchLockException)."""

    thrift_name = "NoSuchLockException"


class TxnOpen(HMSError):
    """The lock belongs to an open transaction (TxnOpenException)."""

    thrift_name = "TxnOpenException"


def protocol_error(struct_name: str, field: str, shown: str):
    """What HMS answers a request struct missing a required field (its Thrift reader's
    validate()); HMS's connection is unusable afterwards, ours stays open."""
    from thrift.Thrift import TApplicationException

    return TApplicationException(
        TApplicationException.PROTOCOL_ERROR,
        f"Required field '{field}' is unset! Struct:{struct_name}({shown})")
