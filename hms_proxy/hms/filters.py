"""The partition filter language of HMS 2.3 (`get_partitions_by_filter`,
`get_num_partitions_by_filter`): parser and evaluator, without Thrift or storage. For a Hive 4
client (hms_proxy/thrift/dialect.py) LIKE is SQL's LIKE, run by direct SQL, as the stock 4.x
runs it.

Why it looks the way it does: stock HMS parses filters with an ANTLR 3 grammar
(`Filter.g`, k=3, case-insensitive input, *no* EOF check, single-token error
recovery) and then runs them twice over: first as direct SQL on Derby (string keys
compared as SQL VARCHARs, integral/date keys cast), and if that cannot be used (a
LIKE, a type mismatch, a cast failure) through JDO, which only handles string keys,
matches "=" against the escaped partition *name* and turns LIKE's "regex" into a
SQL LIKE.  Clients see the union of those quirks, so we reproduce them; every one
of them was checked against a running HMS 2.3.10 (see tests/hms/test_names_filters.py).

Errors are raised as `FilterError(message)`; the server maps them to MetaException
with the same message.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal, InvalidOperation
from typing import Callable, Mapping, Sequence

from hms_proxy.hms.names import DEFAULT_PARTITION_NAME, escape_path_name, like_regex, regex_to_like
from hms_proxy.thrift import dialect, errors

__all__ = ["FilterError", "Expr", "parse_filter", "INTEGRAL_TYPES"]

INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
TYPE_ERROR = "Filtering is supported only on partition keys of type string"


class FilterError(errors.MetaError):
    """A filter HMS rejects; `message` is HMS's MetaException message, verbatim."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


Predicate = Callable[[Mapping[str, str]], bool]


def parse_filter(text: str | None) -> "Expr":
    """Parse a filter as HMS 2.3 does; "" or None means all partitions."""
    if not text:
        return Expr(None, text or "")
    return Expr(_Parser(text).parse(), text)


class Expr:
    """A parsed filter.  Compile it once per table (`compile`), then call the
    closure per partition; `evaluate` does both, with a cache."""

    def __init__(self, root: Node | Leaf | None, text: str):
        self.root = root
        self.text = text
        self._cache: dict[tuple, Predicate] = {}

    def __repr__(self) -> str:
        return f"Expr({self.root!r})"

    def evaluate(self, part_values: Mapping[str, str], key_types: Mapping[str, str]) -> bool:
        """Does the partition (values by stored key name) pass?  `key_types` must list
        the table's partition keys in order (the order matters for JDO's name match)."""
        return self.compile(key_types)(part_values)

    def compile(self, key_types: Mapping[str, str]) -> Predicate:
        """The predicate for a table with these partition keys (name -> type, in order).

        Raises FilterError for filters HMS rejects whatever the partitions are.
        The predicate itself raises FilterError for a partition value HMS's direct
        SQL cannot cast (e.g. "abc" in an int key): HMS then falls back to JDO,
        which rejects non-string keys, so the whole call fails.
        """
        sig = (dialect.hive4(), tuple(key_types.items()))  # LIKE differs between generations
        pred = self._cache.get(sig)
        if pred is None:
            pred = self._cache[sig] = _compile(self.root, list(key_types.items()))
        return pred

    def filter_values(self, key_types: Mapping[str, str], partitions: Sequence[Sequence[str]]) -> list[int]:
        """Indexes of the partitions (value lists in key order) that pass."""
        pred = self.compile(key_types)
        names = list(key_types)
        return [i for i, vals in enumerate(partitions) if pred(dict(zip(names, vals)))]


def leaves(node) -> list[Leaf]:
    if node is None:
        return []
    if isinstance(node, Leaf):
        return [node]
    return leaves(node.lhs) + leaves(node.rhs)


def _key_index(keys: list[tuple[str, str]], name: str) -> int:
    lowered = name.lower()
    for i, (k, _t) in enumerate(keys):
        if k.lower() == lowered:
            return i
    return -1


def _compile(root, keys: list[tuple[str, str]]) -> Predicate:
    if root is None:
        return lambda _values: True
    found = leaves(root)
    if all(_sql_pushable(leaf, keys) for leaf in found):
        return build_predicate(root, lambda leaf: _sql_leaf(leaf, keys))
    for leaf in found:  # JDO visits left to right and stops at the first error
        jdo_check(leaf, keys)
    return build_predicate(root, lambda leaf: jdo_leaf(leaf, keys))


def build_predicate(node, make_leaf) -> Predicate:
    if isinstance(node, Leaf):
        return make_leaf(node)
    lhs, rhs = build_predicate(node.lhs, make_leaf), build_predicate(node.rhs, make_leaf)
    if node.op == "AND":
        return lambda v: lhs(v) and rhs(v)
    return lambda v: lhs(v) or rhs(v)


# --- the parse tree -----------------------------------------------------------------

class Leaf:
    """ExpressionTree.LeafNode: `key op value` (value: str, int or date), `reverse`
    when the literal was written first ("'a' < ds")."""

    __slots__ = ("key", "op", "value", "reverse")

    def __init__(self, key: str, op: str, value, reverse: bool = False):
        self.key, self.op, self.value, self.reverse = key, op, value, reverse

    def __repr__(self) -> str:
        return f"({self.key} {self.op} {self.value!r}{' REV' if self.reverse else ''})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Leaf) and repr(self) == repr(other)


class Node:
    """ExpressionTree.TreeNode: lhs AND/OR rhs."""

    __slots__ = ("op", "lhs", "rhs")

    def __init__(self, op: str, lhs, rhs):
        self.op, self.lhs, self.rhs = op, lhs, rhs

    def __repr__(self) -> str:
        return f"[{self.lhs!r} {self.op} {self.rhs!r}]"


# --- the lexer (FilterLexer over ANTLRNoCaseStringStream) ---------------------------
# Token types are FilterParser's, since they show up in HMS's error messages.

EOF, EOR = -1, 1
BETWEEN, COMMA, DATE, EQUAL, GT, GTE, IN, IDENT, INT = 4, 5, 6, 9, 10, 11, 12, 13, 14
AND, CONST, LIKE, NOT, OR, STRUCT, LT, LTE, LPAREN, NOTEQUAL, RPAREN, STRING = \
    15, 16, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28
_TOKEN_NAMES = {BETWEEN: "BETWEEN", COMMA: "COMMA", DATE: "DateLiteral", EQUAL: "EQUAL", IN: "IN",
                IDENT: "Identifier", INT: "IntegralLiteral", AND: "KW_AND", CONST: "KW_CONST",
                NOT: "KW_NOT", STRUCT: "KW_STRUCT", LPAREN: "LPAREN", RPAREN: "RPAREN",
                STRING: "StringLiteral"}
_KEYWORDS = {"NOT": NOT, "AND": AND, "OR": OR, "LIKE": LIKE, "CONST": CONST, "STRUCT": STRUCT,
             "BETWEEN": BETWEEN, "IN": IN}
_OPERATORS = frozenset({LT, LTE, GT, GTE, LIKE, EQUAL, NOTEQUAL})
_LITERALS = (DATE, STRING, INT)
_SINGLE = {"(": LPAREN, ")": RPAREN, ",": COMMA, "=": EQUAL}
_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")


class _LexError(Exception):
    def __init__(self, line: int, col: int, message: str, extra_recover: bool):
        super().__init__(message)
        self.where, self.extra_recover = f"line {line}:{col}", extra_recover


class _Lexer:
    """ANTLR 3 lexer behaviour: tokens made on demand, an error is remembered (only
    the last one counts), the offending input is skipped and lexing goes on."""

    def __init__(self, text: str):
        self.text, self.pos, self.line, self.col = text, 0, 1, 0
        self.error_msg: str | None = None

    def _la(self) -> str | None:
        """The current char, upper-cased as ANTLRNoCaseStringStream.LA does."""
        if self.pos >= len(self.text):
            return None
        up = self.text[self.pos].upper()
        return up if len(up) == 1 else self.text[self.pos]

    def _consume(self) -> None:
        if self.pos < len(self.text):
            self.line, self.col = (self.line + 1, 0) if self.text[self.pos] == "\n" else (self.line, self.col + 1)
            self.pos += 1

    def _error(self, message: str, extra_recover: bool = False) -> _LexError:
        return _LexError(self.line, self.col, message, extra_recover)

    @staticmethod
    def _show(ch: str | None) -> str:
        shown = {None: "<EOF>", "\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, ch)
        return f"'{shown}'"

    def next_token(self) -> tuple[int, str]:
        while True:
            while self._la() in (" ", "\r", "\t", "\n"):
                self._consume()
            if self._la() is None:
                return EOF, "<EOF>"
            start = self.pos
            try:
                kind = self._token()
                return kind, self.text[start:self.pos]
            except _LexError as e:
                self.error_msg = f"{e.where} {e}"
                self._consume()  # Lexer.recover: skip one char
                if e.extra_recover:  # generated code recovered once already
                    self._consume()

    def _token(self) -> int:
        c = self._la()
        if c in _SINGLE:
            self._consume()
            return _SINGLE[c]
        if c in "<>!":
            return self._operator(c)
        if c in "'\"":
            return self._string(c)
        if c in _DIGITS:
            return self._number()
        if c == "-":
            self._consume()
            if self._la() not in _DIGITS:
                raise self._error(f"required (...)+ loop did not match anything at character {self._show(self._la())}")
            return self._number(negative=True)
        if c in _ASCII_LETTERS:
            start = self.pos
            self._word()
            return _KEYWORDS.get(self.text[start:self.pos].upper(), IDENT)
        raise self._error(f"no viable alternative at character {self._show(c)}")

    def _operator(self, c: str) -> int:
        self._consume()
        nxt = self._la()
        if c == "<":
            if nxt in ("=", ">"):
                self._consume()
                return LTE if nxt == "=" else NOTEQUAL
            return LT
        if c == ">":
            if nxt == "=":
                self._consume()
                return GTE
            return GT
        if nxt != "=":  # "!" must be "!=": Lexer.match recovers by itself, so no extra skip
            err = self._error(f"mismatched character {self._show(nxt)} expecting '='")
            raise err
        self._consume()
        return NOTEQUAL

    def _string(self, quote: str) -> int:
        self._consume()
        while True:
            c = self._la()
            if c is None:
                raise self._error(f"mismatched character '<EOF>' expecting '{quote}'")
            self._consume()
            if c == quote:
                return STRING
            if c == "\\":
                self._consume()

    def _word(self) -> None:
        while self._la() is not None and (self._la() in _ASCII_LETTERS or self._la() in _DIGITS
                                          or self._la() == "_"):
            self._consume()

    def _number(self, negative: bool = False) -> int:
        """Digits: an IntegralLiteral, an Identifier if letters follow ("1ds"), or a
        DateLiteral once "dddd-" is seen; "-digits" is always an IntegralLiteral."""
        start = self.pos
        while self._la() is not None and self._la() in _DIGITS:
            self._consume()
        c = self._la()
        if negative:
            return INT
        if c is not None and (c in _ASCII_LETTERS or c == "_"):
            self._word()
            return IDENT
        if self.pos - start == 4 and c == "-":  # the lexer's DFA commits at "dddd-"
            return self._date()
        return INT

    def _date(self) -> int:
        """DateLiteral: dddd-dd-dd, then the validating predicate ExtractDate != null."""
        start = self.pos - 4
        for expected in "-dd-dd":
            c = self._la()
            if expected == "-" and c != "-":
                raise self._error(f"mismatched character {self._show(c)} expecting '-'")
            if expected == "d" and (c is None or c not in _DIGITS):
                raise self._error(f"mismatched character {self._show(c)} expecting set null", True)
            self._consume()
        if extract_date(self.text[start:self.pos]) is None:
            raise self._error("rule DateLiteral failed predicate: { ExtractDate(getText()) != null }?")
        return DATE


def extract_date(text: str) -> _dt.date | None:
    """FilterLexer.ExtractDate: yyyy-MM-dd, non-lenient."""
    m = re.fullmatch(r"(?s).*(\d\d\d\d-\d\d-\d\d).*", text)
    if not m:
        return None
    try:
        return _dt.date.fromisoformat(m.group(1))
    except ValueError:
        return None


# --- the parser (FilterParser: LL(3) decisions, single-token recovery, no EOF check) ---

class _ParseError(Exception):
    pass


_MAX_LONG = 2 ** 63


class _Parser:
    """A hand-written copy of the ANTLR-generated FilterParser, down to which token
    each decision looks at (that token's type is in HMS's error message), which
    mismatches it silently repairs, and how far ahead it makes the lexer read."""

    def __init__(self, text: str):
        self.lexer = _Lexer(text)
        self.tokens: list[tuple[int, str]] = []
        self.p = 0
        self.follow: list[frozenset] = []
        self.stack: list = []

    # token stream
    def _sync(self, i: int) -> None:
        while len(self.tokens) <= i:
            if self.tokens and self.tokens[-1][0] == EOF:
                self.tokens.append(self.tokens[-1])
            else:
                self.tokens.append(self.lexer.next_token())

    def LT(self, k: int = 1) -> tuple[int, str]:
        self._sync(self.p + k - 1)
        return self.tokens[self.p + k - 1]

    def LA(self, k: int = 1) -> int:
        return self.LT(k)[0]

    def consume(self) -> None:
        self._sync(self.p)
        self.p += 1
        self._sync(self.p)

    # errors and recovery
    def _no_viable(self, k: int = 1):
        return _ParseError(f"NoViableAltException({self.LA(k)}@[])")

    def match(self, ttype: int, follow: frozenset) -> str:
        if self.LA(1) == ttype:
            text = self.LT(1)[1]
            self.consume()
            return text
        if self.LA(2) == ttype:  # extraneous token: drop it
            self.consume()
            text = self.LT(1)[1]
            self.consume()
            return text
        if EOR in follow:
            follow = follow | self._context_follow()
        if self.LA(1) in follow - {EOR}:  # missing token: conjure it
            return f"<missing {_TOKEN_NAMES[ttype]}>"
        raise _ParseError(f"MismatchedTokenException({self.LA(1)}!={ttype})")

    def _context_follow(self) -> frozenset:
        result: set = set()
        for local in reversed(self.follow):
            result |= local
            if EOR not in local:
                break
        return frozenset(result)

    def _call(self, follow: frozenset, rule, *args):
        self.follow.append(follow)
        try:
            return rule(*args)
        finally:
            self.follow.pop()

    # tree building (ExpressionTree's stack)
    def _leaf(self, key: str, op: str, value, reverse: bool = False) -> None:
        self.stack.append(Leaf(key, op, value, reverse))

    def _join(self, op: str) -> None:
        rhs, lhs = self.stack.pop(), self.stack.pop()
        self.stack.append(Node(op, lhs, rhs))

    def parse(self):
        try:
            self._call(frozenset({EOR}), self.or_expression)
        except _ParseError as e:
            raise FilterError(f"Error parsing partition filter; lexer error: "
                              f"{'null' if self.lexer.error_msg is None else self.lexer.error_msg}; "
                              f"exception {e}") from None
        if self.lexer.error_msg is not None:
            raise FilterError(f"Error parsing partition filter : {self.lexer.error_msg}")
        return self.stack[-1]

    # rules
    def or_expression(self) -> None:
        self._call(frozenset({OR, EOR}), self.and_expression)
        while self.LA(1) == OR:
            self.consume()
            self._call(frozenset({OR, EOR}), self.and_expression)
            self._join("OR")

    def and_expression(self) -> None:
        self._call(frozenset({AND, EOR}), self.expression)
        while self.LA(1) == AND:
            self.consume()
            self._call(frozenset({AND, EOR}), self.expression)
            self._join("AND")

    def expression(self) -> None:
        la1 = self.LA(1)
        if la1 == LPAREN:
            la2 = self.LA(2)
            if la2 == IDENT:
                la3 = self.LA(3)
                if la3 == RPAREN:
                    return self._call(frozenset({EOR}), self.operator_expression)
                if la3 not in _OPERATORS and la3 not in (NOT, BETWEEN):
                    raise self._no_viable(3)
            elif la2 == STRUCT:
                return self._call(frozenset({EOR}), self.operator_expression)
            elif la2 != LPAREN and la2 not in _LITERALS:
                raise self._no_viable(2)
            self.consume()
            self._call(frozenset({RPAREN}), self.or_expression)
            self.match(RPAREN, frozenset({EOR}))
            return None
        if la1 == IDENT or la1 in _LITERALS:
            return self._call(frozenset({EOR}), self.operator_expression)
        raise self._no_viable(1)

    def operator_expression(self) -> None:
        la1 = self.LA(1)
        if la1 == IDENT:
            la2 = self.LA(2)
            if la2 in (NOT, BETWEEN):
                return self._call(frozenset({EOR}), self.between_expression)
            if la2 not in _OPERATORS:
                raise self._no_viable(2)
        elif la1 == LPAREN:
            la2 = self.LA(2)
            if la2 == IDENT:
                return self._call(frozenset({EOR}), self.in_expression)
            if la2 == STRUCT:
                return self._call(frozenset({EOR}), self.multi_col_in_expression)
            raise self._no_viable(2)
        elif la1 not in _LITERALS:
            raise self._no_viable(1)
        return self._call(frozenset({EOR}), self.bin_op_expression)

    def _literal(self, ttype: int, text: str):
        """The value the grammar's actions make of a literal token."""
        if ttype == DATE:
            return extract_date(text)
        if ttype == INT:
            try:
                value = int(text)
            except ValueError:
                value = None
            if value is None or not -_MAX_LONG <= value < _MAX_LONG or text.startswith("<"):
                raise FilterError(f'java.lang.NumberFormatException: For input string: "{text}"')
            return value
        if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":  # TrimQuotes: no unescaping
            return text[1:-1]
        return text

    def _operator(self) -> str:
        if self.LA(1) not in _OPERATORS:
            raise _ParseError(f"MismatchedSetException({self.LA(1)}!=null)")
        text = self.LT(1)[1].upper()
        self.consume()
        return text

    def bin_op_expression(self) -> None:
        if self.LA(1) == IDENT:
            if self.LA(2) not in _OPERATORS:
                raise self._no_viable(2)
            ltype = self.LA(3)
            if ltype not in _LITERALS:
                raise self._no_viable(3)
            key = self.LT(1)[1]
            self.consume()
            op = self._operator()
            value = self._literal(ltype, self.match(ltype, frozenset({EOR})))
            return self._leaf(key, op, value)
        ltype = self.LA(1)
        text = self.LT(1)[1]
        self.consume()
        op = self._operator()
        key = self.match(IDENT, frozenset({EOR}))
        self._leaf(key, op, self._literal(ltype, text), True)

    def between_expression(self) -> None:
        key = self.LT(1)[1]
        self.consume()
        positive = True
        if self.LA(1) == NOT:
            self.consume()
            positive = False
        self.match(BETWEEN, frozenset(_LITERALS))
        ltype = self.LA(1)
        if ltype not in _LITERALS:
            raise self._no_viable(1)
        left = self._literal(ltype, self.LT(1)[1])
        self.consume()
        self.match(AND, frozenset({ltype}))
        right = self._literal(ltype, self.match(ltype, frozenset({EOR})))
        self._leaf(key, ">=" if positive else "<", left)
        self._leaf(key, "<=" if positive else ">", right)
        self._join("AND" if positive else "OR")

    def _not_in(self) -> bool:
        if self.LA(1) == NOT:
            self.consume()
            return False
        return True

    def in_expression(self) -> None:
        self.consume()
        key = self.LT(1)[1]
        self.consume()
        self.consume()
        positive = self._not_in()
        self.match(IN, frozenset({LPAREN}))
        self.match(LPAREN, frozenset(_LITERALS))
        ltype = self.LA(1)
        if ltype not in _LITERALS:
            raise self._no_viable(1)
        values = [self._literal(ltype, self.LT(1)[1])]
        self.consume()
        while self.LA(1) == COMMA:
            self.consume()
            values.append(self._literal(ltype, self.match(ltype, frozenset({COMMA, RPAREN}))))
        self.match(RPAREN, frozenset({EOR}))
        for i, value in enumerate(values):
            self._leaf(key, "=" if positive else "!=", value)
            if i:
                self._join("OR" if positive else "AND")

    def _struct_value(self):
        ltype = self.LA(1)
        if ltype not in _LITERALS:
            raise self._no_viable(1)
        value = self._literal(ltype, self.LT(1)[1])
        self.consume()
        return value

    def _const_struct(self, first: bool) -> list:
        if not first:
            self.consume()  # COMMA
            self.match(CONST, frozenset({STRUCT}))
        else:
            self.match(CONST, frozenset({STRUCT}))
        self.match(STRUCT, frozenset({LPAREN}))
        self.match(LPAREN, frozenset(_LITERALS))
        values = [self._struct_value()]
        while self.LA(1) == COMMA:
            self.consume()
            values.append(self._struct_value())
        self.match(RPAREN, frozenset({COMMA, RPAREN}))
        return values

    def multi_col_in_expression(self) -> None:
        self.consume()
        self.consume()
        self.match(LPAREN, frozenset({IDENT}))
        keys = [self.match(IDENT, frozenset({COMMA, RPAREN}))]
        while self.LA(1) == COMMA:
            self.consume()
            keys.append(self.match(IDENT, frozenset({COMMA, RPAREN})))
        self.match(RPAREN, frozenset({RPAREN}))
        self.match(RPAREN, frozenset({NOT, IN}))
        positive = self._not_in()
        self.match(IN, frozenset({LPAREN}))
        self.match(LPAREN, frozenset({CONST}))
        structs = [self._const_struct(True)]
        while self.LA(1) == COMMA:
            structs.append(self._const_struct(False))
        self.match(RPAREN, frozenset({EOR}))
        for i, values in enumerate(structs):
            for j, value in enumerate(values):
                if j >= len(keys):
                    raise FilterError(f"java.lang.IndexOutOfBoundsException: Index {j} out of bounds "
                                      f"for length {len(keys)}")
                self._leaf(keys[j], "=" if positive else "!=", value)
                if j:
                    self._join("AND" if positive else "OR")
            if i:
                self._join("OR" if positive else "AND")


# --- direct SQL (MetaStoreDirectSql.PartitionFilterGenerator) ------------------------

def _sql_kind(col_type: str) -> str | None:
    if col_type == "string":
        return "string"
    if col_type == "date":
        return "date"
    if col_type in INTEGRAL_TYPES:
        return "int"
    return None


def _value_kind(value) -> str | None:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return "int"
    if isinstance(value, _dt.date):
        return "date"
    return None


def _sql_pushable(leaf: Leaf, keys) -> bool:
    """Whether direct SQL takes this leaf (else HMS falls back to JDO for the whole filter).
    HMS 2.3's direct SQL has no LIKE; Hive 4's takes it on a string key, as SQL's LIKE."""
    idx = _key_index(keys, leaf.key)
    if idx < 0:
        return False
    if leaf.op == "LIKE":
        return dialect.hive4() and not leaf.reverse and _sql_kind(keys[idx][1]) == "string" \
            and isinstance(leaf.value, str)
    col = _sql_kind(keys[idx][1])
    val = _value_kind(leaf.value)
    if col == "date" and val == "string":
        return _parse_date_prefix(leaf.value) is not None
    return col is not None and col == val


_CMP = {
    "=": lambda c: c == 0, "<>": lambda c: c != 0, "!=": lambda c: c != 0,
    "<": lambda c: c < 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, ">=": lambda c: c >= 0,
}
_NON_BMP = re.compile("[\U00010000-\U0010ffff]")


def sql_compare(a: str, b: str) -> int:
    """Derby VARCHAR comparison: the shorter side is padded with spaces (so 'a' = 'a '
    and 'a' > 'a\\t'), then UTF-16 code units are compared."""
    if a == b:
        return 0
    la, lb = len(a), len(b)
    if la < lb:
        a += " " * (lb - la)
    elif lb < la:
        b += " " * (la - lb)
    if _NON_BMP.search(a) or _NON_BMP.search(b):
        a, b = a.encode("utf-16-be"), b.encode("utf-16-be")  # type: ignore[assignment]
    return (a > b) - (a < b)


_DECIMAL_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def derby_int(value: str, key: str) -> int | None:
    """CAST(value AS DECIMAL(21,0)) as Derby does it: spaces trimmed, '+', exponent
    and fraction (truncated) accepted; None for the default partition (HMS's CASE
    WHEN workaround).  Anything else fails the SQL and, in the end, the call."""
    if value == DEFAULT_PARTITION_NAME:
        return None
    text = value.strip(" ")
    if _DECIMAL_RE.fullmatch(text):
        try:
            number = int(Decimal(text))
        except (InvalidOperation, ValueError, OverflowError):
            number = None
        if number is not None and len(str(abs(number))) <= 21:
            return number
    raise FilterError(TYPE_ERROR)


_DATE_PREFIX = re.compile(r"(\d+)-(\d+)-(\d+)")


def _parse_date_prefix(text: str) -> _dt.date | None:
    """SimpleDateFormat("yyyy-MM-dd"), non-lenient, which ignores trailing text."""
    m = _DATE_PREFIX.match(text)
    if not m:
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def derby_date(value: str, key: str) -> _dt.date | None:
    """CAST(value AS DATE) for ISO dates; None for the default partition."""
    if value == DEFAULT_PARTITION_NAME:
        return None
    text = value.strip(" ")
    m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", text)
    if m:
        try:
            return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            pass
    raise FilterError(TYPE_ERROR)


def _sql_leaf(leaf: Leaf, keys) -> Predicate:
    key, col_type = keys[_key_index(keys, leaf.key)]
    if leaf.op == "LIKE":  # Hive 4: SQL's LIKE (% and _, \ escaping), case-sensitive
        regex = re.compile(like_regex(sql_like_tokens(leaf.value)), re.S)
        return lambda v: regex.fullmatch(v[key]) is not None
    test = _CMP[leaf.op]
    kind = _sql_kind(col_type)
    if kind == "string":
        lit = leaf.value
        if leaf.reverse:
            return lambda v: test(sql_compare(lit, v[key]))
        return lambda v: test(sql_compare(v[key], lit))
    cast = derby_int if kind == "int" else derby_date
    lit = leaf.value if not isinstance(leaf.value, str) else _parse_date_prefix(leaf.value)
    sign = -1 if leaf.reverse else 1

    def pred(v):
        x = cast(v[key], key)
        if x is None:
            return False  # NULL: no comparison is true, and filters have no NOT
        return test(sign * ((x > lit) - (x < lit)))
    return pred


def sql_like_tokens(pattern: str) -> list[tuple[str, str]]:
    """A SQL LIKE pattern with ``\\`` as its escape character, as LIKE tokens (names.like_regex)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(("lit", pattern[i + 1]))
            i += 2
            continue
        out.append(("many", "%") if c == "%" else ("any", "_") if c == "_" else ("lit", c))
        i += 1
    return out


# --- JDO fallback (ExpressionTree.LeafNode.generateJDOFilterOverPartitions) ---------

def _jdo_literal(leaf: Leaf) -> str:
    if isinstance(leaf.value, _dt.date):
        return leaf.value.isoformat()
    return leaf.value


def jdo_check(leaf: Leaf, keys) -> None:
    """Raise HMS's JDO error for this leaf, if any (in HMS's order)."""
    idx = _key_index(keys, leaf.key)
    if idx < 0:
        raise FilterError(f"Specified key <{leaf.key}> is not a partitioning key for the table")
    if keys[idx][1] != "string" or _value_kind(leaf.value) not in ("string", "date"):
        raise FilterError(TYPE_ERROR)
    if leaf.op in ("=", "<>", "!=") and _jdo_literal(leaf) == "":
        raise FilterError(f"Partition spec is incorrect. {{{leaf.key}=}}")
    if leaf.op == "LIKE" and leaf.reverse:
        raise FilterError(f"Value should be on the RHS for LIKE operator : Key <{leaf.key}>")


def jdo_leaf(leaf: Leaf, keys) -> Predicate:
    idx = _key_index(keys, leaf.key)
    key = keys[idx][0]
    lit = _jdo_literal(leaf)
    if leaf.op == "LIKE":
        return _like_predicate(key, lit)
    if leaf.op in ("=", "<>", "!="):
        return _name_equality(leaf, key, lit, len(keys) == 1)
    test = _CMP[leaf.op]
    if leaf.reverse:
        return lambda v: test(sql_compare(lit, v[key]))
    return lambda v: test(sql_compare(v[key], lit))


def _name_equality(leaf: Leaf, key: str, lit: str, single_key: bool) -> Predicate:
    """JDO matches "=" on the partition *name*: the fragment is built from the key as
    typed in the filter (so "DS='a'" matches nothing there) and the escaped value, and
    compared as SQL (padded) when it is the whole name, exactly otherwise."""
    fragment = f"{escape_path_name(leaf.key)}={escape_path_name(lit)}"
    prefix = escape_path_name(key.lower()) + "="
    want = leaf.op == "="
    if single_key:
        return lambda v: (sql_compare(prefix + escape_path_name(v[key]), fragment) == 0) == want
    return lambda v: (prefix + escape_path_name(v[key]) == fragment) == want


def _like_predicate(key: str, pattern: str) -> Predicate:
    """values.get(i).matches(p): DataNucleus turns the regex into SQL LIKE (".*" -> %,
    "." -> _, everything else literal) and a leading "(?i)" into LOWER() on both sides."""
    flags = re.S
    if pattern.startswith("(?i)"):
        pattern = pattern[4:]
        regex = re.compile(like_regex([(k, t.lower()) for k, t in regex_to_like(pattern)]), flags)
        return lambda v: regex.fullmatch(v[key].lower()) is not None
    regex = re.compile(like_regex(regex_to_like(pattern)), flags)
    return lambda v: regex.fullmatch(v[key]) is not None

