"""What HMS's SQL statements and the columns of its Derby database accept (the compaction queue
and transaction tables), for the wording and limits of their failures."""
from __future__ import annotations

from hms_proxy.hms import javafmt
from hms_proxy.thrift import errors


def sql_string(value: str) -> str:
    """The value HMS's SQL reads from ``'<value>'``: a lone quote breaks the statement
    (internal error), a doubled one stands for one quote."""
    if "'" not in value:
        return value
    parts = value.split("''")
    if any("'" in part for part in parts):
        raise errors.InternalError("compact: a quote breaks HMS's SQL statement")
    return "'".join(parts)


def fit(value: str, width: int) -> str:
    """Derby's VARCHAR(width): blanks beyond the width are cut off, anything else fails."""
    if javafmt.string_length(value) <= width:
        return value
    kept = value
    while javafmt.string_length(kept) > width and kept.endswith(" "):
        kept = kept[:-1]
    if javafmt.string_length(kept) > width:
        raise errors.InternalError("compact: a truncation error (value longer than its column)")
    return kept
