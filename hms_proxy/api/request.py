"""One HTTP API request as the operations see it, and the checks of its parameters.

Every parameter is checked here, before anything runs: a wrong type, a value out of range, an
unknown field of a JSON body or a missing required one is a 400 naming the parameter.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hms_proxy.api.auth import Caller
from hms_proxy.api.errors import bad_request

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
MAX_OFFSET = 10_000_000


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    path_params: dict[str, str]
    body: object
    caller: Caller = field(default_factory=Caller)

    # --- query parameters -------------------------------------------------------------------
    def _one(self, name: str) -> str | None:
        values = self.query.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise bad_request(f"query parameter '{name}' is given {len(values)} times")
        return values[0]

    def text(self, name: str, default: str | None = None, *, required: bool = False,
             max_length: int = 1024) -> str | None:
        value = self._one(name)
        if value is None or (value == "" and not required and default is not None):
            if required:
                raise bad_request(f"query parameter '{name}' is required")
            return default
        if required and not value.strip():
            raise bad_request(f"query parameter '{name}' must not be empty")
        if len(value) > max_length:
            raise bad_request(f"query parameter '{name}' is longer than {max_length} characters")
        if "\x00" in value:
            raise bad_request(f"query parameter '{name}' holds a NUL character")
        return value

    def ref(self, name: str, default: str | None = None) -> str:
        value = self.text(name, default, required=default is None, max_length=300)
        return value.strip()

    def integer(self, name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        value = self._one(name)
        if value is None:
            return default
        text = value.strip()
        if not text or not (text.isdigit() or (text[0] in "+-" and text[1:].isdigit())):
            raise bad_request(f"query parameter '{name}' must be an integer, not {value!r}")
        number = int(text)
        if number < minimum or (maximum is not None and number > maximum):
            bounds = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
            raise bad_request(f"query parameter '{name}' must be in {bounds}, not {number}")
        return number

    def paging(self, default: int = DEFAULT_LIMIT) -> tuple[int, int]:
        return (self.integer("offset", 0, 0, MAX_OFFSET),
                self.integer("limit", default, 1, MAX_LIMIT))

    # --- path parameters ----------------------------------------------------------------------
    def segment(self, name: str) -> str:
        value = self.path_params[name]
        if not value or "\x00" in value or len(value) > 300:
            raise bad_request(f"path parameter '{name}' is empty, too long or holds NUL")
        return value

    # --- JSON body ------------------------------------------------------------------------------
    def fields(self, spec: dict[str, tuple]) -> dict:
        """The body's fields checked against ``{name: (type, required[, may be empty])}``;
        unknown fields, missing required ones, wrong types and empty strings (unless allowed)
        are 400s."""
        body = self.body
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        unknown = sorted(set(body) - set(spec))
        if unknown:
            raise bad_request(f"unknown field '{unknown[0]}' in the request body "
                              f"(known: {', '.join(sorted(spec))})")
        out = {}
        for name, (kind, required, *rest) in spec.items():
            may_be_empty = bool(rest and rest[0])
            if name not in body:
                if required:
                    raise bad_request(f"field '{name}' is required in the request body")
                continue
            value = body[name]
            if kind is bool:
                ok = isinstance(value, bool)
            elif kind is str:
                ok = isinstance(value, str)
                if ok and ("\x00" in value or len(value) > 4096):
                    raise bad_request(f"field '{name}' is too long or holds NUL")
                if ok and not may_be_empty and not value.strip():
                    raise bad_request(f"field '{name}' must not be empty")
            else:
                ok = isinstance(value, kind)
            if not ok:
                raise bad_request(f"field '{name}' must be a {_type_name(kind)}")
            out[name] = value
        return out


def _type_name(kind: type) -> str:
    return {str: "string", bool: "boolean", int: "integer"}.get(kind, kind.__name__)


def page(items: list, offset: int, limit: int) -> dict:
    """The paging fields of an answer over a whole list."""
    total = len(items)
    return {"total": total, "offset": offset, "limit": limit,
            "next_offset": offset + limit if offset + limit < total else None}
