"""Pure functions for HMS 2.3 names: path escaping, partition names, name validation, patterns.

Everything here mirrors what the stock Hive 2.3.10 metastore does, bugs included,
because clients (Spark, Hive, Trino) build partition paths and names themselves and
compare them with ours.  Behaviour was checked against `FileUtils`, `Warehouse`,
`MetaStoreUtils` and `ObjectStore` of hive-*-2.3.10 and against a running HMS 2.3.10.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from hms_proxy.thrift import errors

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

# FileUtils.charToEscape (non-Windows): all control chars 0x00-0x1F, 0x7F and these.
# Chars >= 0x80 are never escaped; escapes use upper-case hex ("%2F").
_ESCAPED_PRINTABLE = "\"#%'*/:=?\\\x7f{[]^"
ESCAPED_CHARS = frozenset(chr(c) for c in range(0x20)) | frozenset(_ESCAPED_PRINTABLE)
_ESCAPE_TABLE = {ord(c): f"%{ord(c):02X}" for c in ESCAPED_CHARS}
_UNESCAPE_RE = re.compile(r"%([0-9a-fA-F]{2})")


# What HMS answers (a MetaException's text) where it normalizes a null name: Java's message of
# the NullPointerException of ``identifier.trim()``.
NPE_IDENTIFIER = ('java.lang.NullPointerException: Cannot invoke "String.trim()" because '
                  '"identifier" is null')


class PartitionNameError(ValueError):
    """A partition name HMS cannot even turn into a Hadoop `Path` (e.g. "a=1:2").

    Stock HMS lets the IllegalArgumentException escape, so the client sees a
    TApplicationException "Internal error processing <method>"; the server maps
    this exception to exactly that.
    """


def escape_path_name(path: str | None, default_path: str | None = None) -> str:
    """FileUtils.escapePathName(path, defaultPath).

    None or "" becomes `default_path`, or `__HIVE_DEFAULT_PARTITION__` when that is
    None too, which is why an empty partition value and the default partition share
    one partition name.
    """
    if path is None or path == "":
        return DEFAULT_PARTITION_NAME if default_path is None else default_path
    return path.translate(_ESCAPE_TABLE)


def unescape_path_name(path: str) -> str:
    """FileUtils.unescapePathName: each valid %XX becomes the single char U+00XX.

    Hive does not decode UTF-8 here ("%C3%A9" -> "Ã©"), and leaves invalid or
    truncated escapes ("%zz", "%2") as they are.
    """
    if "%" not in path:
        return path
    return _UNESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), path)


def make_part_name(keys: Sequence[str], values: Sequence[str | None]) -> str:
    """Warehouse.makePartName(List<FieldSchema>, List<String>): "k1=v1/k2=v2".

    Keys are lower-cased (Hive does so), then key and value are both escaped; an
    empty or None value becomes __HIVE_DEFAULT_PARTITION__.
    """
    if len(keys) != len(values) or not keys:
        raise ValueError(f"Invalid partition key & values; keys {list(keys)}, values {list(values)}")
    return "/".join(f"{escape_path_name(k.lower())}={escape_path_name(v)}" for k, v in zip(keys, values))


_COMPONENT_RE = re.compile(r"([^/]+)=([^/]+)")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")


def _path_components(name: str) -> list[str]:
    """The components Hadoop's `new Path(name)` keeps: scheme/authority dropped,
    empty and "." segments removed, ".." resolved (URI.normalize)."""
    colon, slash = name.find(":"), name.find("/")
    if colon != -1 and (slash == -1 or colon < slash):
        scheme, name = name[:colon], name[colon + 1:]
        if not _SCHEME_RE.fullmatch(scheme) or (name and not name.startswith("/")) or not name:
            raise PartitionNameError(f"Illegal partition name {scheme}:{name}")
    if name.startswith("//"):
        end = name.find("/", 2)
        name = "" if end == -1 else name[end:]
    out: list[str] = []
    for seg in name.split("/"):
        if seg in ("", "."):
            continue
        if seg == ".." and out and out[-1] != "..":
            out.pop()
        else:
            out.append(seg)
    return out


def part_name_to_spec(name: str) -> dict[str, str]:
    """HMS partition_name_to_spec (Warehouse.makeSpecFromName over a Hadoop Path).

    Lenient like HMS: components that are not "k=v" are skipped, the split is at
    the last "=" with a non-empty right side, a repeated key keeps its first
    position and last value, and "" gives {}.
    """
    spec: dict[str, str] = {}
    if not name:
        return spec
    for comp in _path_components(name):
        m = _COMPONENT_RE.fullmatch(comp)
        if m:
            spec[unescape_path_name(m.group(1))] = unescape_path_name(m.group(2))
    return spec


def part_name_to_vals(name: str) -> list[str]:
    """HMS partition_name_to_vals: the values of part_name_to_spec, in order."""
    return list(part_name_to_spec(name).values())


# --- name validation (MetaStoreUtils, HMS 2.3) -------------------------------------

_VALID_NAME_RE = re.compile(r"[A-Za-z0-9_]+")
# MetaStoreUtils.hiveThriftTypeMap (case-sensitive: "INT" is rejected).
_THRIFT_TYPE_NAMES = frozenset({
    "array", "bigint", "binary", "boolean", "char", "date", "datetime", "decimal", "double", "float",
    "int", "interval_day_time", "interval_year_month", "map", "smallint", "string", "struct",
    "timestamp", "tinyint", "uniontype", "varchar", "void",
})
TYPE_FROM_DESERIALIZER = "<derived from deserializer>"


def validate_name(name: str | None) -> bool:
    """MetaStoreUtils.validateName for db/table names: Java `[\\w_]+`, i.e. ASCII
    letters, digits and "_" (the special-characters option is not in effect in HMS:
    "a.c", "a b", "a-b" and "é" are all rejected; "_x" and "1x" are fine)."""
    return bool(name) and _VALID_NAME_RE.fullmatch(name) is not None


def validate_column_name(name: str | None) -> bool:
    """MetaStoreUtils.validateColumnName: always true in Hive 2.3."""
    return True


def _is_type_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


NPE_COLUMN_TYPE = ('java.lang.NullPointerException: Cannot invoke "String.equals(Object)" '
                   'because "type" is null')


def validate_column_type(type_name: str | None) -> str | None:
    """MetaStoreUtils.validateColumnType: only the FIRST run of type chars
    (letters, digits, "_") or of other chars is checked, case-sensitively, against
    the Thrift type names; returns "type: <type>" or None.

    So "int foo" and "struct<a:whatever>" pass while "INT", " int" and "<int>" fail.
    "" makes Java throw StringIndexOutOfBoundsException: we raise ValueError.
    """
    if type_name is None:  # Java's type.equals(...) on null: HMS answers a MetaException
        raise errors.MetaError(NPE_COLUMN_TYPE)
    if type_name == TYPE_FROM_DESERIALIZER:
        return None
    if type_name == "":
        raise ValueError("String index out of range: 0")
    first = _is_type_char(type_name[0])
    end = 1
    while end < len(type_name) and _is_type_char(type_name[end]) == first:
        end += 1
    return None if type_name[:end] in _THRIFT_TYPE_NAMES else "type: " + type_name


def validate_tbl_columns(cols: Iterable[tuple[str, str]]) -> str | None:
    """MetaStoreUtils.validateTblColumns: the first error ("type: ...") or None.

    HMS puts it in InvalidObjectException("<table> is not a valid object name")-style
    messages; the caller decides the wording.
    """
    for name, type_name in cols:
        if not validate_column_name(name):
            return "name: " + str(name)
        error = validate_column_type(type_name)
        if error is not None:
            return error
    return None


# --- get_databases / get_tables / get_functions patterns (ObjectStore 2.3) ----------

# The MetaException messages HMS gives for a pattern of only "|"s (JDOQL parse errors).
EMPTY_PATTERN_ERRORS = {
    "get_databases": 'Method/Identifier expected at character 3 in "( )"',
    "get_tables": 'Method/Identifier expected at character 35 in "(database.name == :param1 ) &&  ( )"',
    "get_functions": 'Method/Identifier expected at character 35 in "(database.name == :param1 ) &&  ( )"',
}


def compile_name_pattern(pattern: str):
    """HMS 2.3 name pattern -> predicate on names, or raise ValueError("|" alone).

    ObjectStore trims the pattern (Java trim), splits it on "|" (Java split drops
    trailing empties), turns "*" into ".*", prefixes "(?i)", and DataNucleus turns
    that "regex" into a SQL LIKE: ".*" -> "%", "." -> "_", other chars are literal
    (so "[", "+", "?", "^" match themselves) and matching is case-insensitive.
    """
    trimmed = pattern.strip("".join(chr(c) for c in range(0x21)))
    if trimmed == "":
        return lambda name: False  # Java: "".split(..) == [""], and LIKE '' matches no name
    subs = trimmed.split("|")
    while subs and subs[-1] == "":
        subs.pop()
    if not subs:  # "|", "||": no condition at all, and JDOQL rejects the query
        raise ValueError("empty pattern list")
    regexes = [re.compile(like_regex(regex_to_like(s.replace("*", ".*"))), re.S | re.I) for s in subs]
    return lambda name: any(r.fullmatch(name) for r in regexes)


def regex_to_like(pattern: str) -> list[tuple[str, str]]:
    """DataNucleus RegularExpressionConverter (escape '\\'), as a token list of
    ("lit", text), ("any", "_") and ("many", "%") so no SQL escaping is needed."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                out.append(("lit", "\\"))
            elif pattern[i + 1] == ".":
                out.append(("lit", "."))  # DN emits a raw ".", which LIKE takes literally
            elif pattern[i + 1] == "\\":
                out.append(("lit", "\\\\"))
            else:
                out.append(("lit", "\\"))
                nxt = pattern[i + 1]
                out.append(("any", "_") if nxt == "_" else ("many", "%") if nxt == "%" else ("lit", nxt))
            i += 2
            continue
        if c == ".":
            if i + 1 < n and pattern[i + 1] == "*":
                out.append(("many", "%"))
                i += 2
                continue
            out.append(("any", "_"))
        else:
            out.append(("lit", c))
        i += 1
    return out


def like_regex(tokens: list[tuple[str, str]]) -> str:
    """A Python regex (to use with fullmatch and re.S) equivalent to the LIKE tokens."""
    return "".join(re.escape(t) if kind == "lit" else "." if kind == "any" else ".*" for kind, t in tokens)


def part_name(table, values) -> str:
    """The partition's name, or HMS's MetaException when values do not fit the keys."""
    key_names = [k.name for k in table.partitionKeys or []]
    if values is None or len(values) != len(key_names) or not key_names:
        raise errors.MetaError(
            "Invalid partition key & values; keys ["
            + "".join(f"{k}, " for k in key_names) + "], values ["
            + "".join(f"{v}, " for v in values or []) + "]")
    return make_part_name(key_names, values)
