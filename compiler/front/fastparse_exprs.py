"""Stage 1, parse, the fast path: expressions. `ExprParser` holds the token list, the
helpers every rule uses and the expression rules (precedence climbing over the
grammar's levels, postfix trailers, literals, comprehensions, f-strings); statements
(`fastparse_stmts.py`) and declarations (`fastparse_decls.py`) extend it.

IR nodes are made without pydantic validation (`compiler.ir.tree.construct`), with the
values, positions and `model_fields_set` Lark's builders give them; anything those
builders would report is refused (`Refuse`) and left to Lark.
"""

from __future__ import annotations

import re
from typing import Any

from compiler import ir
from compiler.front.grammar import (
    DEPTH_MEASURED,
    ESCAPE_RE,
    ESCAPES,
    INT64_MAX,
    LAMBDA_START,
    MAX_EXPR_DEPTH,
    clean_block,
    matching_brace,
    top_level,
)
from compiler.front.scan import FIXED, KEYWORDS, Refuse, Token, foreign_words, scan
from compiler.ir.tree import construct
from compiler.ir.typesys import FORMAT_SPEC

NOT_AN_ATOM = frozenset({"lambda", "not", "if", "else", "elif", "for", "in", "is", "and", "or"})
"""Keywords where an atom starts: `lambda` and `not` are handled at the levels that take
them; elsewhere Lark would read some of these as names, which this parser leaves to it."""

EXPRESSION_WORDS = frozenset({"lambda", "not", "True", "False", "None"})
CONSTANT_WORDS: dict[str, Any] = {"True": True, "False": False, "None": None}
WORD_KINDS = KEYWORDS | {"NAME"}
STRING_KINDS = frozenset({"STRING", "LONG", "FSTRING"})
COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not", "is"})
BINARY_LEVELS = {
    "or": 1, "and": 2, **dict.fromkeys(COMPARISONS, 4), "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6, "**": 8
}  # fmt: skip
"""The grammar's precedence levels, loosest first: `or_expr` 1, `and_expr` 2, `not_expr` 3,
`comparison` 4, `sum` 5, `term` 6, `factor` 7, `power` 8; for a binary operator, the level
of the rule it continues."""
CONTINUES = frozenset({*BINARY_LEVELS, "if"})
"""Tokens after a postfix expression that make it the left operand of something bigger."""
TRAILERS = frozenset({".", "(", "["})
"""Tokens after an atom that start a postfix expression (`a.b`, `f(x)`, `m[k]`)."""


def _name(id_: str, line: int, col: int, end_line: int, end_col: int) -> ir.Name:
    return construct(
        ir.Name,
        {
            "line": line,
            "col": col,
            "end_line": end_line,
            "end_col": end_col,
            "ty": None,
            "kind": "name",
            "id": id_,
            "ref": "",
        },
        {"id", "line", "col", "end_line", "end_col"},
    )


def _attr(obj: Any, name: str, line: int, col: int, end_line: int, end_col: int) -> ir.Attr:
    return construct(
        ir.Attr,
        {
            "line": line,
            "col": col,
            "end_line": end_line,
            "end_col": end_col,
            "ty": None,
            "kind": "attr",
            "obj": obj,
            "name": name,
        },
        {"obj", "name", "line", "col", "end_line", "end_col"},
    )


def depth_bound(value: Any) -> int:
    """An upper bound of the expression depth `lark_builders.ToIR` measures (E1008) under `value`."""
    if isinstance(value, list):
        return max((depth_bound(item) for item in value), default=0)
    if isinstance(value, ir.Node):
        inner = max((depth_bound(item) for item in value.__dict__.values()), default=0)
        return inner + 1 if isinstance(value, DEPTH_MEASURED) else inner
    return 0


# --------------------------------------------------------------------------- strings


def _replace_escape(match: re.Match[str]) -> str:
    esc = match.group(1)
    if len(esc) == 5:
        code = int(esc[1:], 16)
        if 0xD800 <= code <= 0xDFFF:
            raise Refuse("surrogate escape")  # E1006
        return chr(code)
    if esc in ESCAPES:
        return ESCAPES[esc]
    raise Refuse("invalid escape")  # E1006


def _unescape(body: str) -> str:
    return ESCAPE_RE.sub(_replace_escape, body) if "\\" in body else body


def string_value(text: str) -> str:
    """A STRING or LONG token's value as Lark's builders decode it (a bad escape refused)."""
    if text.startswith('"""'):
        return clean_block(_unescape(text[3:-3]))
    return _unescape(text[1:-1])


# --------------------------------------------------------------------------- parser


class ExprParser:
    """Recursive descent over the token list; `i` is the next token. Every builder gets
    the index of its rule's first token (`s`) and takes the last consumed one as the end."""

    def __init__(self, tokens: list[Token]) -> None:
        self.t = tokens
        self.i = 0

    # ------------------------------------------------------------------ helpers
    def refuse(self) -> Refuse:
        return Refuse(f"unexpected {self.t[self.i][0]} at {self.t[self.i][2]}:{self.t[self.i][3]}")

    def expect(self, kind: str) -> None:
        if self.t[self.i][0] != kind:
            raise self.refuse()
        self.i += 1

    def word(self) -> str:
        """A NAME where Lark's state takes no keyword: any word."""
        token = self.t[self.i]
        if token[0] not in WORD_KINDS:
            raise self.refuse()
        self.i += 1
        return token[1]

    def declared_name(self) -> str:
        """A member's or field's name: a word, or a one-line string (`"MA(5)"`)."""
        token = self.t[self.i]
        if token[0] == "STRING":
            self.i += 1
            return string_value(token[1])
        return self.word()

    def pos(self, s: int) -> dict[str, int]:
        """The span from token `s` to the last consumed one. The builders of the nodes a
        spec has thousands of (statements, arguments, parameters, fields, map entries)
        write these four entries out instead: `{**self.pos(s), …}` makes and merges a
        second dict per node."""
        first, last = self.t[s], self.t[self.i - 1]
        return {"line": first[2], "col": first[3], "end_line": last[4], "end_col": last[5]}

    def plain_string(self) -> str:
        token = self.t[self.i]
        if token[0] != "STRING" and token[0] != "LONG":
            raise self.refuse()
        self.i += 1
        return string_value(token[1])

    # ------------------------------------------------------------------ expressions
    def expr(self) -> Any:
        t = self.t
        s = self.i
        kind = t[s][0]
        if kind == "lambda":
            return self.lambda_(s)
        if kind == "-" or kind == "not":
            return self.ternary(None, s)
        node = self.atom()
        if t[self.i][0] in TRAILERS:
            node = self.trailers(node, s)
        if t[self.i][0] in CONTINUES:
            return self.ternary(node, s)
        return node

    def lambda_(self, s: int) -> ir.Lambda:
        t = self.t
        self.i += 1
        params = [self.word()]
        while t[self.i][0] == ",":
            self.i += 1
            params.append(self.word())
        self.expect(":")
        body = self.expr()
        return construct(
            ir.Lambda,
            {**self.pos(s), "ty": None, "kind": "lambda", "params": params, "body": body},
            {"params", "body", "line", "col", "end_line", "end_col"},
        )

    def ternary(self, left: Any, s: int) -> Any:
        then = self.or_(left, s)
        if self.t[self.i][0] != "if":
            return then
        self.i += 1
        cond = self.or_(None, self.i)
        self.expect("else")
        other = self.ternary(None, self.i)
        return construct(
            ir.Ternary,
            {**self.pos(s), "ty": None, "kind": "ternary", "cond": cond, "then": then, "other": other},
            {"cond", "then", "other", "line", "col", "end_line", "end_col"},
        )

    def _binary(self, op: str, left: Any, right: Any, s: int) -> ir.Binary:
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Binary,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "ty": None,
                "kind": "binary",
                "op": op,
                "left": left,
                "right": right,
            },
            {"op", "left", "right", "line", "col", "end_line", "end_col"},
        )

    def or_(self, left: Any, s: int) -> Any:
        """An `or_expr` from token `s`, whose first postfix expression (`left`) may be parsed already."""
        return self.operand(1) if left is None else self.climb(left, s, 1)

    def operand(self, level: int) -> Any:
        """An expression of the grammar's precedence `level` (see BINARY_LEVELS): a prefix
        `not` (at `not_expr` and looser) or `-` (at `factor` and looser) with its operand,
        or a postfix expression; then the binary operators of that level or tighter."""
        t = self.t
        s = self.i
        kind = t[s][0]
        if kind == "not" and level <= 3:
            self.i += 1
            node = self._unary("not", self.operand(3), s)
        elif kind == "-" and level <= 7:
            self.i += 1
            node = self._unary("-", self.operand(7), s)
        else:
            node = self.postfix()
        return self.climb(node, s, level) if t[self.i][0] in BINARY_LEVELS else node

    def climb(self, left: Any, s: int, level: int) -> Any:
        """`left` (from token `s`) and the binary operators after it of `level` or tighter,
        by precedence climbing: each operator's right operand is parsed one level tighter
        (`**`, right-associative, takes a `factor`), so an operand costs a call or two
        rather than one per grammar level (`or_expr` down to `power` is eight)."""
        t = self.t
        while True:
            op = t[self.i][0]
            op_level = BINARY_LEVELS.get(op, 0)
            if op_level < level:
                return left
            self.i += 1
            if op_level == 4:
                left = self.comparison(left, op, s)
            else:
                left = self._binary(op, left, self.operand(7 if op_level == 8 else op_level + 1), s)

    def _unary(self, op: str, operand: Any, s: int) -> ir.Unary:
        return construct(
            ir.Unary,
            {**self.pos(s), "ty": None, "kind": "unary", "op": op, "operand": operand},
            {"op", "operand", "line", "col", "end_line", "end_col"},
        )

    def comparison(self, first: Any, op: str, s: int) -> Any:
        """`first op …` (`op` consumed): a chain of comparisons of `sum`s, one Binary for one."""
        t = self.t
        operands = [first]
        ops: list[str] = []
        while True:
            if op == "not":
                self.expect("in")
                op = "not in"
            elif op == "is" and t[self.i][0] == "not":
                self.i += 1
                op = "is not"
            ops.append(op)
            operands.append(self.operand(5))
            op = t[self.i][0]
            if op not in COMPARISONS:
                break
            self.i += 1
        if len(ops) == 1:
            return self._binary(ops[0], first, operands[1], s)
        return construct(
            ir.Compare,
            {**self.pos(s), "ty": None, "kind": "compare", "operands": operands, "ops": ops},
            {"operands", "ops", "line", "col", "end_line", "end_col"},
        )

    def postfix(self) -> Any:
        s = self.i
        node = self.atom()
        return self.trailers(node, s) if self.t[self.i][0] in TRAILERS else node

    def trailers(self, node: Any, s: int) -> Any:
        """The `.name`, `(args)`, `[index]` and `[slice]` after the atom `node` (from token `s`)."""
        t = self.t
        line, col = t[s][2], t[s][3]  # the span starts at the atom (written out: the hottest builders)
        while True:
            kind = t[self.i][0]
            if kind == ".":
                self.i += 1
                name = self.declared_name()
                node = _attr(node, name, line, col, t[self.i - 1][4], t[self.i - 1][5])
            elif kind == "(":
                self.i += 1
                positional, keywords = self.arguments()
                self.expect(")")
                node = construct(
                    ir.Call,
                    {
                        "line": line,
                        "col": col,
                        "end_line": t[self.i - 1][4],
                        "end_col": t[self.i - 1][5],
                        "ty": None,
                        "kind": "call",
                        "func": node,
                        "args": positional,
                        "kwargs": keywords,
                        "mutates_state": False,
                    },
                    {"func", "args", "kwargs", "line", "col", "end_line", "end_col"},
                )
            elif kind == "[":
                self.i += 1
                lower = None
                if t[self.i][0] != ":":
                    lower = self.expr()
                    if t[self.i][0] == "]":
                        self.i += 1
                        node = construct(
                            ir.Index,
                            {
                                "line": line,
                                "col": col,
                                "end_line": t[self.i - 1][4],
                                "end_col": t[self.i - 1][5],
                                "ty": None,
                                "kind": "index",
                                "obj": node,
                                "index": lower,
                            },
                            {"obj", "index", "line", "col", "end_line", "end_col"},
                        )
                        continue
                self.expect(":")
                upper = None if t[self.i][0] == "]" else self.expr()
                self.expect("]")
                node = construct(
                    ir.Slice,
                    {
                        "line": line,
                        "col": col,
                        "end_line": t[self.i - 1][4],
                        "end_col": t[self.i - 1][5],
                        "ty": None,
                        "kind": "slice",
                        "obj": node,
                        "lower": lower,
                        "upper": upper,
                    },
                    {"obj", "lower", "upper", "line", "col", "end_line", "end_col"},
                )
            else:
                return node

    def arguments(self) -> tuple[list[Any], list[ir.Keyword]]:
        """`[args]` of a call up to its `)` (not consumed): positional, then keywords."""
        t = self.t
        positional: list[Any] = []
        keywords: list[ir.Keyword] = []
        while t[self.i][0] != ")":
            s = self.i
            token = t[s]
            if t[s + 1][0] == "=" and token[0] in WORD_KINDS:
                if token[0] in EXPRESSION_WORDS:
                    raise self.refuse()
                self.i += 2
                value = self.expr()
                last = t[self.i - 1]
                keywords.append(
                    construct(
                        ir.Keyword,
                        {
                            "line": token[2],
                            "col": token[3],
                            "end_line": last[4],
                            "end_col": last[5],
                            "name": token[1],
                            "value": value,
                        },
                        {"name", "value", "line", "col", "end_line", "end_col"},
                    )
                )
            else:
                positional.append(self.expr())
            if t[self.i][0] != ",":
                break
            self.i += 1
        return positional, keywords

    def atom(self) -> Any:
        t = self.t
        s = self.i
        token = t[s]
        kind = token[0]
        if kind == "NAME":
            self.i += 1
            return construct(
                ir.Name,
                {
                    "line": token[2],
                    "col": token[3],
                    "end_line": token[4],
                    "end_col": token[5],
                    "ty": None,
                    "kind": "name",
                    "id": token[1],
                    "ref": "",
                },
                {"id", "line", "col", "end_line", "end_col"},
            )
        if kind == "STRING" or kind == "LONG":
            self.i += 1
            return self.const(token, string_value(token[1]))
        if kind == "INT":
            self.i += 1
            value = int(token[1].replace("_", ""))
            if value > INT64_MAX:
                raise Refuse("integer too big")  # E1007
            return self.const(token, value)
        if kind == "FLOAT":
            self.i += 1
            return self.const(token, float(token[1]))
        if kind in CONSTANT_WORDS:
            self.i += 1
            return self.const(token, CONSTANT_WORDS[kind])
        if kind == "(":
            self.i += 1
            node = self.expr()
            self.expect(")")
            return node
        if kind == "[":
            return self.list_(s)
        if kind == "{":
            return self.map_(s)
        if kind == "FSTRING":
            self.i += 1
            return self.fstring(token)
        if kind in KEYWORDS and kind not in NOT_AN_ATOM:
            self.i += 1  # a keyword Lark's lexer leaves a NAME where an atom starts
            return _name(token[1], token[2], token[3], token[4], token[5])
        raise self.refuse()

    @staticmethod
    def const(token: Token, value: Any) -> ir.Const:
        return construct(
            ir.Const,
            {
                "line": token[2],
                "col": token[3],
                "end_line": token[4],
                "end_col": token[5],
                "ty": None,
                "kind": "const",
                "value": value,
            },
            {"value", "line", "col", "end_line", "end_col"},
        )

    def list_(self, s: int) -> Any:
        t = self.t
        self.i += 1
        items: list[Any] = []
        if t[self.i][0] != "]":
            first = self.expr()
            if t[self.i][0] == "for":
                comp = self.comp_for()
                self.expect("]")
                return construct(
                    ir.Comprehension,
                    {**self.pos(s), "ty": None, "kind": "comprehension", "elt": first, "value": None, **comp},
                    {"elt", "targets", "iter", "cond", "line", "col", "end_line", "end_col"},
                )
            items.append(first)
            while t[self.i][0] == ",":
                self.i += 1
                if t[self.i][0] == "]":
                    break
                items.append(self.expr())
        self.expect("]")
        return construct(
            ir.ListLit,
            {**self.pos(s), "ty": None, "kind": "list", "items": items},
            {"items", "line", "col", "end_line", "end_col"},
        )

    def map_(self, s: int) -> Any:
        t = self.t
        self.i += 1
        entries: list[Any] = []
        while t[self.i][0] != "}":
            e = self.i
            key = self.expr()
            self.expect(":")
            value = self.expr()
            if not entries and t[self.i][0] == "for":
                comp = self.comp_for()
                self.expect("}")
                return construct(
                    ir.Comprehension,
                    {**self.pos(s), "ty": None, "kind": "comprehension", "elt": key, "value": value, **comp},
                    {"elt", "value", "targets", "iter", "cond", "line", "col", "end_line", "end_col"},
                )
            first, last = t[e], t[self.i - 1]
            entries.append(
                construct(
                    ir.MapEntry,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "key": key,
                        "value": value,
                    },
                    {"key", "value", "line", "col", "end_line", "end_col"},
                )
            )
            if t[self.i][0] != ",":
                break
            self.i += 1
        self.expect("}")
        return construct(
            ir.MapLit,
            {**self.pos(s), "ty": None, "kind": "map", "entries": entries},
            {"entries", "line", "col", "end_line", "end_col"},
        )

    def comp_for(self) -> dict[str, Any]:
        t = self.t
        self.i += 1
        targets = [self.word()]
        while t[self.i][0] == ",":
            self.i += 1
            targets.append(self.word())
        self.expect("in")
        iterable = self.or_(None, self.i)
        cond = None
        if t[self.i][0] == "if":
            self.i += 1
            cond = self.or_(None, self.i)
        return {"targets": targets, "iter": iterable, "cond": cond}

    # ------------------------------------------------------------------ f-strings
    def fstring(self, token: Token) -> ir.FString:
        """`f"a {x} b"` as `lark_builders._parse_fstring` splits it; anything it would report is refused.

        That loop goes character by character; here regexes take many characters at a
        time, to the same effect (`\\x` pairs kept for `_unescape`, `{{` and `}}`
        halved). Most f-strings have none of these, nor brackets in a field: one split
        takes those apart (`_flat_fstring`)."""
        text = token[1][2:-1]
        line, col = token[2], token[3] + 2
        plain = "\\" not in text and "{{" not in text and "}}" not in text
        parts = _flat_fstring(text, line, col) if plain else None
        if parts is None:
            parts = _fstring_parts(text, line, col)
        return construct(
            ir.FString,
            {
                "line": token[2],
                "col": token[3],
                "end_line": token[4],
                "end_col": token[5],
                "ty": None,
                "kind": "fstring",
                "parts": parts,
            },
            {"parts", "line", "col", "end_line", "end_col"},
        )


def _flat_fstring(text: str, line: int, col: int) -> list[Any] | None:
    """The parts of an f-string's text without `\\`, `{{` or `}}` whose fields have no
    brackets, or None for any other (a `{` or `}` then stays in a literal)."""
    parts: list[Any] = []
    at = col  # where the next piece starts
    for index, piece in enumerate(_FLAT_FIELD.split(text)):
        if index % 2:
            parts.append(_fstring_field(piece, line, at + 1, True))
            at += len(piece) + 2
            continue
        if "{" in piece or "}" in piece:
            return None
        if piece:
            parts.append(piece)
        at += len(piece)
    return parts


def _fstring_parts(text: str, line: int, col: int) -> list[Any]:
    """The parts of any f-string's text (refusing what `_parse_fstring` reports): a
    literal run, or a field without brackets, at a time."""
    parts: list[Any] = []
    i = 0
    while i < len(text):
        run = _FSTRING_LITERAL.match(text, i)
        if run is not None:
            literal = run.group()
            i = run.end()
            if "{{" in literal or "}}" in literal:
                literal = _DOUBLED_BRACE.sub(r"\1\2", literal)
            parts.append(_unescape(literal))
            continue
        if text[i] != "{":  # `}` alone (a lone `\\`, last, cannot be: FSTRING has none)
            raise Refuse("single } in f-string")  # E1005
        flat = _FLAT_FIELD.match(text, i)
        if flat is not None:
            parts.append(_fstring_field(flat.group(1), line, col + i + 1, True))
            i = flat.end()
            continue
        end = matching_brace(text, i)
        if end < 0:
            raise Refuse("unclosed { in f-string")  # E1005
        parts.append(_fstring_field(text[i + 1 : end], line, col + i + 1, False))
        i = end + 1
    return parts


_FSTRING_LITERAL = re.compile(r"(?:[^\\{}]|\\(?s:.)|\{\{|\}\})+")
"""A run of an f-string's literal text: characters, `\\x` pairs, `{{` and `}}`."""
_DOUBLED_BRACE = re.compile(r"(\\(?s:.))|([{}])\2")
_FLAT_FIELD = re.compile(r"\{([^{}\[\]()]*)\}")
"""A field without brackets, whose end is the next `}` (`matching_brace`'s answer)."""


def _fstring_field(source: str, line: int, col: int, flat: bool) -> Any:
    """One `{…}` of an f-string, as `_parse_fstring_field` reads it (refusing its errors);
    in a `flat` field (no brackets) `top_level` is `str.find`."""
    if "lambda" in source and LAMBDA_START.match(source):
        split = -1
    else:
        split = source.find(":") if flat else top_level(source, ":")
    bang = source.find("!") if flat else top_level(source, "!")
    if bang >= 0 and (split < 0 or bang < split) and not source.startswith("=", bang + 1):
        raise Refuse("conversion in f-string")  # E1005
    if split < 0:
        return _fstring_expr(source, line, col)
    spec = source[split + 1 :]
    expr = _fstring_expr(source[:split], line, col)
    if not spec:
        return expr
    if "{" in spec or "}" in spec or FORMAT_SPEC.fullmatch(spec) is None:
        raise Refuse("format spec")  # E1005
    where = expr.__dict__
    return construct(
        ir.Formatted,
        {
            "line": where["line"],
            "col": where["col"],
            "end_line": line,
            "end_col": col + len(source),
            "ty": None,
            "kind": "formatted",
            "value": expr,
            "spec": spec,
        },
        {"value", "spec", "line", "col", "end_line", "end_col"},
    )


def _fstring_expr(source: str, line: int, col: int) -> Any:
    """The expression of an f-string field, its positions those of the file (Lark parses
    it alone from `expr` and shifts it; here it is scanned where it stands). A field
    that is a name or a chain of attributes of one (most are) is built as scanning and
    parsing it would."""
    dotted = _dotted(source, line, col)
    if dotted is not None:
        return dotted
    if not source.strip():
        raise Refuse("empty {} in f-string")  # E1005
    if "#" in source:
        raise Refuse("comment in f-string")
    tokens, long_line = scan(source, line, col, indent=False)
    parser = ExprParser(tokens)
    node = parser.expr()
    if tokens[parser.i][0] != "END":
        raise parser.refuse()
    if long_line and depth_bound(node) > MAX_EXPR_DEPTH:
        raise Refuse("f-string field nested too deep")  # E1008
    return node


def _dotted(source: str, line: int, col: int) -> Any:
    """`a` or `a.b.c` (words without blanks, the first no keyword) as its Name and Attr
    nodes, or None for any other source."""
    words = source.split(".")
    foreign = foreign_words() or frozenset()
    for word in words:
        if not (word.isascii() and word.isidentifier()) or word in foreign:
            return None
    if words[0] in FIXED:
        return None
    end = col + len(words[0])
    node: Any = _name(words[0], line, col, line, end)
    for word in words[1:]:
        end += len(word) + 1
        node = _attr(node, word, line, col, line, end)
    return node
