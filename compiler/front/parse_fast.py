"""Stage 1, parse, the fast path: a hand-written scanner and recursive-descent parser
for the envspec grammar that builds the IR `Module` declarations directly.

Lark (`compiler/front/parse.py`) stays the reference and the error path. This parser only
ever *accepts* input whose IR it builds exactly as Lark's parse would: the same node
types, field values, positions and `model_fields_set`. On anything else (a syntax
error, a construct it does not know, a value the IR builders would report: a bad
escape, a huge integer, a malformed f-string, a `param` line naming no parameter, an
expression nested too deep) it refuses (`parse_decls` returns None) and the caller
runs Lark, so every diagnostic, and the malformed corpus, stays what Lark says.
`tests/test_parse_fast.py` compares both parsers on every shipped spec, fixture, docs
example, corpus file and thousands of mutated specs.

Where it must agree with Lark, and how:

- Tokens are Lark's: the same regexes (one master pattern), maximal words, the
  indenter's INDENT/DEDENT rule and `_NL` tokens that swallow blank lines and comments
  (so statement and declaration spans end where Lark's do).
- Positions follow Lark's `propagate_positions` rule, which comes down to: a node spans
  from the start of its rule's first token to the end of its last, filtered tokens
  (`:`, `_NL`, `_DEDENT`) included. Each builder takes the rule's first and last token.
- Keywords: Lark's contextual lexer makes a word a keyword only where the parser state
  accepts that keyword; elsewhere it is a NAME (`title` is a record field, `not` after
  `+` is a name). The parser follows the same split per context, and refuses words
  whose meaning depends on a state it does not model (`if` where an atom starts).
- Words the grammar has and this parser does not know (a keyword added by a new
  construct) make it refuse any input containing them; IR classes whose fields differ
  from the ones it writes turn it off (`_schema_matches`).

IR nodes are made without pydantic validation (`irtree.construct`: what
`model_construct` does, with the field dicts written out in field order): the values
are the ones the validating constructors would keep, and `model_dump_json` of both is byte-for-byte equal.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from compiler import ir
from compiler.front.parse import (
    _ESCAPE_RE,
    _ESCAPES,
    INT64_MAX,
    MAX_EXPR_DEPTH,
    MAX_NESTING,
    _clean_block,
    _grammar_text,
    _matching_brace,
    _top_level,
)
from compiler.ir.tree import construct
from compiler.ir.typesys import FORMAT_SPEC


class _Refuse(Exception):
    """This input is left to Lark (a syntax error, or something this parser does not model)."""


# --------------------------------------------------------------------------- words

STATEMENT_WORDS = frozenset({"let", "return", "require", "fail", "del", "pass", "break", "continue", "if", "for"})
KEYWORDS = frozenset(
    {
        # declarations
        "environment", "enum", "record", "state", "world", "scenario", "tool", "fn", "test", "task",
        "drop", "rename", "describe", "override", "union", "by", "on", "load", "options",
        # header items
        "title", "archetype", "domains", "doc", "extends", "seed", "rng", "clock",
        # callables, worlds, renames
        "param", "reads", "writes", "side_effect", "nothing", "python", "llm", "from", "as", "alias",
        # statements, tests, tasks
        *STATEMENT_WORDS, "else", "elif", "in", "raises", "expect", "request", "solution", "verify",
        # expressions
        "lambda", "or", "and", "not", "is", "True", "False", "None",
    }
)  # fmt: skip
"""The grammar's string keywords (a word token's kind is the word itself for these)."""

CONSTRAINT_WORDS = frozenset({"min_length", "max_length", "min_items", "max_items", "min", "max", "pattern"})
"""CONSTRAINT_KW: a regex terminal in Lark, so these stay NAMEs wherever a NAME fits."""
DROP_KINDS = frozenset({"tool", "scenario", "test", "task", "fn"})
RENAME_KINDS = frozenset({"tool", "fn", "record", "enum", "scenario", "state", "param"})

NOT_AN_ATOM = frozenset({"lambda", "not", "if", "else", "elif", "for", "in", "is", "and", "or"})
"""Keywords where an atom starts: `lambda` and `not` are handled at the levels that take
them; elsewhere Lark would read some of these as names, which this parser leaves to it."""

EXPRESSION_WORDS = frozenset({"lambda", "not", "True", "False", "None"})
CONSTANT_WORDS: dict[str, Any] = {"True": True, "False": False, "None": None}
CALLABLE_WORDS = frozenset({"reads", "writes", "side_effect", "param", "python", "llm"})
TEST_WORDS = frozenset({"scenario", "let", "expect"}) | EXPRESSION_WORDS
TASK_WORDS = frozenset({"scenario", "request", "solution", "verify"})
DOC_FOLLOWERS = STATEMENT_WORDS | EXPRESSION_WORDS | CALLABLE_WORDS | TEST_WORDS | TASK_WORDS
"""Keywords Lark's lexer takes right after any doc line: `doc: string _NL` is one LALR
state whatever the block, so its lookahead is every block's. A block where one of
these is a name there (a record field `python` after the doc) is left to Lark, which
refuses it."""
BODY_WORDS = STATEMENT_WORDS | EXPRESSION_WORDS | CALLABLE_WORDS
ON_LOAD_WORDS = STATEMENT_WORDS | EXPRESSION_WORDS | {"python", "llm"}
"""After the doc of `on load:` (a body, no `reads`/`writes`/`param` lines)."""

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

_PIECES = re.compile(
    r"""(
    f"(?:[^"\\\n]|\\.)*"
    |[A-Za-z_][A-Za-z0-9_]*
    |[\t\f ]+
    |\*\*|//|->|\+=|-=|==|!=|<=|>=|[()\[\]{}:,.=+\-*/%<>?]
    |(?:\r?\n[\t ]*|\#[^\n]*)+
    |\"\"\"(?:[^"\\]|\\(?s:.)|"(?!""))*\"\"\"
    |"(?!"")(?:[^"\\\n]|\\.)*"
    |[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+
    |0|[1-9][0-9_]*
    |\\[\t\f ]*\r?\n
    |(?s:.)
    )""",
    re.VERBOSE,
)
"""Lark's terminals (grammar/envspec.lark) and the blanks it ignores, as one pattern
whose every match is one piece of the text (so columns add up): FSTRING before NAME and
FLOAT before INT, as Lark's priorities order them; the last branch is any character no
terminal takes."""
_FIXED: dict[str, str] = {
    " ": "",
    **{piece: piece for piece in (*KEYWORDS, "**", "//", "->", "+=", "-=", "==", "!=", "<=", ">=", *":,.=+-*/%<>?")},
}
"""Pieces that are their own token kind (keywords; operators but brackets), and a space
(kind "": skipped): one dict lookup classifies most pieces."""
_FIRST: dict[str, str] = {
    **dict.fromkeys("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_", "word"),
    **dict.fromkeys(" \t\f", "blank"),
    **dict.fromkeys("([{", "open"),
    **dict.fromkeys(")]}", "close"),
    **dict.fromkeys("\n\r#", "newline"),
    **dict.fromkeys("0123456789", "number"),
    '"': "string",
    "\\": "continuation",
}
"""The kind of every other piece, by its first character."""

Token = tuple[str, str, int, int, int, int]
"""kind, text, line, column, end line, end column (Lark's: 1-based, end exclusive)."""


@functools.cache
def _foreign_words() -> frozenset[str] | None:
    """Words the grammar quotes that this parser does not know (refused wherever they
    occur), or None when the grammar lost a keyword this parser relies on (fast path off)."""
    quoted = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', _grammar_text()))
    if not KEYWORDS <= quoted:
        return None
    return frozenset(quoted - KEYWORDS - CONSTRAINT_WORDS)


def scan(text: str, line: int = 1, col: int = 1, *, indent: bool = True) -> tuple[list[Token], bool]:
    """Tokens of `text` (which starts at `line`:`col`) in one run (see `chunks`)."""
    return next(chunks(text, line, col, indent=indent, split=False))


def chunks(
    text: str, line: int = 1, col: int = 1, *, indent: bool = True, split: bool = True
) -> Iterator[tuple[list[Token], bool]]:
    """Tokens of `text` (which starts at `line`:`col`) with Lark's INDENT/DEDENT and
    bracket rules, one run of top-level declarations at a time (each ends at a line
    that ends at the outermost level, and with an END token), and whether a logical
    line of the run holds more than MAX_EXPR_DEPTH tokens (only then can an expression
    be nested deeper than that); with `split` off, all of them in one run.

    Handing the tokens over a declaration at a time lets the parser free them as it
    goes, so the IR reuses their memory rather than the process taking more from the
    system (its first use costs as much as building the tokens). The loop runs once per
    piece of a 5,000-line spec (55,000 of them), so it is written for that: keywords,
    operators and the names, numbers and strings met before are told by one dict
    lookup (`fixed`), the other pieces by their first character; the column is counted
    (not worked out from an offset), and a line's token count is measured at its end
    (`mark`)."""
    foreign = _foreign_words()
    if foreign is None:
        raise _Refuse("grammar changed")
    tokens: list[Token] = []
    append = tokens.append
    fixed = dict(_FIXED)  # and the names, numbers and strings seen: their next uses take one lookup
    first = _FIRST
    breaks: dict[str, tuple[int, int, str, int]] = {}  # `_line_break` of each newline piece
    depth = 0
    levels = [0]
    mark = 0  # tokens before the current logical line
    long_line = False
    end: Token | None = None  # the last run's END
    for piece in _PIECES.findall(text):
        start = col
        col += len(piece)
        kind = fixed.get(piece)
        if not kind:
            if kind is not None:  # a space, the commonest blank
                continue
            sort = first.get(piece[0])
            if sort == "newline":
                facts = breaks.get(piece)
                if facts is None:
                    facts = breaks[piece] = _line_break(piece)
                newlines, after, spaces, width = facts
                first_line = line
                if newlines:
                    line += newlines
                    col = after
                if depth or not indent:
                    continue
                if len(tokens) - mark > MAX_EXPR_DEPTH:
                    long_line = True
                end_col = col
                append(("NL", piece, first_line, start, line, end_col))
                if width > levels[-1]:
                    levels.append(width)
                    if len(levels) > MAX_NESTING + 1:
                        raise _Refuse("blocks nested too deep")
                    append(("INDENT", spaces, first_line, start, line, end_col))
                elif width < levels[-1]:
                    while width < levels[-1]:
                        levels.pop()
                        append(("DEDENT", spaces, first_line, start, line, end_col))
                    if width != levels[-1]:
                        raise _Refuse("dedent to no outer level")
                if split and len(levels) == 1:  # at the outermost level: the declarations so far are whole
                    end = ("END", "", line, end_col, line, end_col)
                    append(end)
                    yield tokens, long_line
                    tokens = []
                    append = tokens.append
                    long_line = False
                mark = len(tokens)
                continue
            elif sort == "open":
                depth += 1
                if depth > MAX_NESTING:
                    raise _Refuse("brackets nested too deep")
                kind = piece
            elif sort == "close":
                if depth:
                    depth -= 1
                kind = piece
            elif sort == "word":
                if piece[-1] == '"':
                    kind = "FSTRING"
                elif piece in foreign:
                    raise _Refuse(piece)
                else:
                    kind = fixed[piece] = "NAME"
            elif sort == "string":
                if len(piece) == 1:
                    raise _Refuse("string not closed")
                if piece.startswith('"""') and len(piece) >= 6:
                    end_line = line + piece.count("\n")
                    if end_line != line:
                        col = len(piece) - piece.rindex("\n")
                    append(("LONG", piece, line, start, end_line, col))
                    line = end_line
                    continue
                kind = fixed[piece] = "STRING"
            elif sort == "number":
                kind = fixed[piece] = "FLOAT" if "." in piece or "e" in piece or "E" in piece else "INT"
            elif sort == "blank":
                continue
            elif sort == "continuation" and len(piece) > 1:
                line += 1
                col = 1
                continue
            else:
                raise _Refuse("no terminal matches")
        append((kind, piece, line, start, line, col))
    if depth or len(levels) > 1:
        raise _Refuse("input ends inside a block or bracket")
    if len(tokens) - mark > MAX_EXPR_DEPTH:
        long_line = True
    if tokens:
        end = ("END", "", tokens[-1][4], tokens[-1][5], tokens[-1][4], tokens[-1][5])
    append(end or ("END", "", line, 1, line, 1))
    yield tokens, long_line


def _line_break(piece: str) -> tuple[int, int, str, int]:
    """Of a newline piece (line ends, blank lines and comments, then the next line's
    indentation): its line ends, the column after it, the indentation and its width
    (a tab counts 4)."""
    if piece == "\r":  # a CR alone (`\r\n` was made `\n`; newline pieces take `\r\n` only)
        raise _Refuse("no terminal matches")
    last = piece.rfind("\n")
    spaces = piece[last + 1 :]
    width = len(spaces) if "\t" not in spaces else spaces.count(" ") + spaces.count("\t") * 4
    return piece.count("\n"), len(piece) - last, spaces, width


# --------------------------------------------------------------------------- IR without validation


POS = ("line", "col", "end_line", "end_col")
EXPR = (*POS, "ty", "kind")
DECL = (*POS, "file", "doc")
_SCHEMA: dict[type[Any], tuple[str, ...]] = {
    ir.Node: POS,
    ir.TypeRef: (*POS, "name", "args"),
    ir.Name: (*EXPR, "id", "ref"),
    ir.Const: (*EXPR, "value"),
    ir.FString: (*EXPR, "parts"),
    ir.ListLit: (*EXPR, "items"),
    ir.MapEntry: (*POS, "key", "value"),
    ir.MapLit: (*EXPR, "entries"),
    ir.Attr: (*EXPR, "obj", "name"),
    ir.Index: (*EXPR, "obj", "index"),
    ir.Slice: (*EXPR, "obj", "lower", "upper"),
    ir.Keyword: (*POS, "name", "value"),
    ir.Call: (*EXPR, "func", "args", "kwargs", "mutates_state"),
    ir.Unary: (*EXPR, "op", "operand"),
    ir.Binary: (*EXPR, "op", "left", "right"),
    ir.Compare: (*EXPR, "operands", "ops"),
    ir.Formatted: (*EXPR, "value", "spec"),
    ir.Ternary: (*EXPR, "cond", "then", "other"),
    ir.Comprehension: (*EXPR, "elt", "value", "targets", "iter", "cond"),
    ir.Lambda: (*EXPR, "params", "body"),
    ir.ErrorCall: (*POS, "kind", "message", "fields"),
    ir.Let: (*POS, "kind", "name", "type", "value"),
    ir.Assign: (*POS, "kind", "target", "op", "value", "touches_state"),
    ir.Return: (*POS, "kind", "value"),
    ir.Require: (*POS, "kind", "cond", "error"),
    ir.Fail: (*POS, "kind", "error"),
    ir.Delete: (*POS, "kind", "target", "touches_state"),
    ir.ExprStmt: (*POS, "kind", "value"),
    ir.Pass: (*POS, "kind"),
    ir.Break: (*POS, "kind"),
    ir.Continue: (*POS, "kind"),
    ir.IfBranch: (*POS, "cond", "body"),
    ir.If: (*POS, "kind", "branches", "orelse"),
    ir.For: (*POS, "kind", "targets", "iter", "body"),
    ir.EnvHeader: (
        *DECL, "name", "title", "archetype", "domains", "extends", "seed", "rng", "clock", "item_places"
    ),
    ir.EnumDecl: (*DECL, "name", "members"),
    ir.Field_: (*POS, "name", "type", "default", "alias", "source", "absent", "tag"),
    ir.RecordDecl: (*DECL, "name", "fields", "override", "tag", "members"),
    ir.StateDecl: (*DECL, "fields"),
    ir.WorldField: (*POS, "name", "type", "value", "source"),
    ir.WorldDecl: (*DECL, "fields"),
    ir.ScenarioItem: (*POS, "name", "value", "source"),
    ir.ScenarioDecl: (*DECL, "name", "items", "source", "renamed"),
    ir.Constraint: (*POS, "kind", "value"),
    ir.Param: (*POS, "name", "type", "default", "constraints", "doc"),
    ir.Escape: (*POS, "kind", "text"),
    ir.ToolDecl: (
        *DECL, "name", "params", "returns", "body", "escape", "declared_reads", "declared_writes",
        "side_effect", "override", "reads", "writes", "errors",
    ),
    ir.FnDecl: (
        *DECL, "name", "params", "returns", "body", "escape", "declared_reads", "declared_writes",
        "side_effect", "override", "reads", "writes", "errors", "recursion",
    ),
    ir.UseScenario: (*POS, "kind", "name"),
    ir.TestLet: (*POS, "kind", "name", "value"),
    ir.TestCall: (*POS, "kind", "call"),
    ir.ExpectRaises: (*POS, "kind", "call", "error", "message"),
    ir.ExpectTrue: (*POS, "kind", "cond"),
    ir.TestDecl: (*DECL, "name", "steps"),
    ir.TaskDecl: (*DECL, "name", "scenario", "request", "solution", "verify"),
    ir.DropDecl: (*DECL, "what", "name"),
    ir.RenameDecl: (*DECL, "what", "old", "new"),
    ir.DescribeDecl: (*DECL, "name", "param_docs", "param_lines", "param_cols"),
    ir.OnLoadDecl: (*DECL, "body", "override"),
    ir.LoadOptionsDecl: (*DECL, "fields"),
}  # fmt: skip
"""The fields this parser writes for each IR class, in the model's order."""


@functools.cache
def _schema_matches() -> bool:
    """The IR classes still have exactly the fields written here (another field, added
    to `compiler/ir/__init__.py` for a new construct, turns the fast path off until it is taught)."""
    return all(tuple(cls.model_fields) == names for cls, names in _SCHEMA.items())


def enabled() -> bool:
    """Whether the fast parser runs at all: the grammar and IR are the ones it knows, and
    `ENVC_FAST_PARSE=0` is not set (Lark then parses everything, as a check or a way out)."""
    return os.environ.get("ENVC_FAST_PARSE", "1") != "0" and _schema_matches() and _foreign_words() is not None


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


_MEASURED = (ir.ExprBase, ir.Keyword, ir.MapEntry)


def _depth(value: Any) -> int:
    """An upper bound of the expression depth `_ToIR` measures (E1008) under `value`."""
    if isinstance(value, list):
        return max((_depth(item) for item in value), default=0)
    if isinstance(value, ir.Node):
        inner = max((_depth(item) for item in value.__dict__.values()), default=0)
        return inner + 1 if isinstance(value, _MEASURED) else inner
    return 0


# --------------------------------------------------------------------------- strings


def _replace_escape(match: re.Match[str]) -> str:
    esc = match.group(1)
    if len(esc) == 5:
        code = int(esc[1:], 16)
        if 0xD800 <= code <= 0xDFFF:
            raise _Refuse("surrogate escape")  # E1006
        return chr(code)
    if esc in _ESCAPES:
        return _ESCAPES[esc]
    raise _Refuse("invalid escape")  # E1006


def _unescape(body: str) -> str:
    return _ESCAPE_RE.sub(_replace_escape, body) if "\\" in body else body


def _string_value(text: str) -> str:
    if text.startswith('"""'):
        return _clean_block(_unescape(text[3:-3]))
    return _unescape(text[1:-1])


# --------------------------------------------------------------------------- parser


def parse_decls(text: str) -> list[Any] | None:
    """The top-level declarations of `text` (normalised as `parse_source` does: LF line
    ends, a final newline), exactly as Lark's parse builds them, or None when this input
    is left to Lark."""
    if not enabled():
        return None
    try:
        return _Parser([]).module(chunks(text))
    except (_Refuse, RecursionError):
        return None


_Block = TypeVar("_Block", ir.StateDecl, ir.LoadOptionsDecl)


class _Parser:
    """Recursive descent over the token list; `i` is the next token. Every builder gets
    the index of its rule's first token (`s`) and takes the last consumed one as the end."""

    def __init__(self, tokens: list[Token]) -> None:
        self.t = tokens
        self.i = 0

    # ------------------------------------------------------------------ helpers
    def refuse(self) -> _Refuse:
        return _Refuse(f"unexpected {self.t[self.i][0]} at {self.t[self.i][2]}:{self.t[self.i][3]}")

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
        return _string_value(token[1])

    def doc(self, keywords: frozenset[str] = frozenset()) -> str:
        """`doc?` at the start of a block: a string alone on its line (Lark shifts it as
        the doc); a string that starts anything else there is left to Lark. After the
        doc, a word of DOC_FOLLOWERS is a keyword to Lark: fine where this block takes
        it as one (`keywords`), left to Lark anywhere else."""
        token = self.t[self.i]
        if token[0] not in STRING_KINDS:
            return ""
        if token[0] == "FSTRING" or self.t[self.i + 1][0] != "NL":
            raise self.refuse()  # an f-string doc is E1005
        self.i += 2
        after = self.t[self.i][0]
        if after in DOC_FOLLOWERS and after not in keywords:
            raise self.refuse()
        return _string_value(token[1])

    def block_start(self) -> None:
        t, i = self.t, self.i
        if t[i][0] != ":" or t[i + 1][0] != "NL" or t[i + 2][0] != "INDENT":
            raise self.refuse()
        self.i = i + 3

    # ------------------------------------------------------------------ module
    def module(self, runs: Iterator[tuple[list[Token], bool]]) -> list[Any]:
        """The declarations of the token runs of `chunks` (a run's tokens are dropped
        once parsed); those with an expression nested deeper than MAX_EXPR_DEPTH are
        E1008, left to Lark."""
        decls: list[Any] = []
        for number, (tokens, long_line) in enumerate(runs):
            self.t, self.i = tokens, 0
            if number == 0 and tokens[0][0] == "NL":  # blank lines or comments open the text
                self.i = 1
            first = len(decls)
            while tokens[self.i][0] != "END":
                decls.append(self.decl())
            if long_line and _depth(decls[first:]) > MAX_EXPR_DEPTH:
                raise _Refuse("expression nested too deep")  # E1008
        return decls

    def decl(self) -> Any:
        s = self.i
        kind = self.t[s][0]
        override = kind == "override"
        if override:
            self.i += 1
            kind = self.t[self.i][0]
            if kind == "record":
                return self.record(s, True)
            if kind == "tool" or kind == "fn":
                return self.callable(s, True)
            if kind == "on":
                return self.on_load(s, True)
            raise self.refuse()
        if kind == "tool" or kind == "fn":
            return self.callable(s, False)
        if kind == "record":
            return self.record(s, False)
        builder = _DECLS.get(kind)
        if builder is None:
            raise self.refuse()
        return builder(self, s)

    def environment(self, s: int) -> ir.EnvHeader:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        values: dict[str, Any] = {}
        places: dict[str, ir.Node] = {}
        while True:
            item = self.i
            key = t[item][0]
            self.i += 1
            if key == "title" or key == "doc" or key == "extends" or key == "clock":
                value: Any = self.plain_string()
            elif key == "archetype" or key == "rng":
                value = self.word()
            elif key == "domains":
                value = [self.plain_string()]
                while t[self.i][0] == ",":
                    self.i += 1
                    value.append(self.plain_string())
            elif key == "seed":
                token = t[self.i]
                if token[0] != "INT":
                    raise self.refuse()
                self.i += 1
                try:
                    value = int(token[1])
                except ValueError:
                    raise _Refuse("seed") from None
            else:
                raise self.refuse()
            self.expect("NL")
            if key in values:
                raise _Refuse("given twice")  # E2017
            values[key] = value
            places[key] = construct(ir.Node, self.pos(item), {"line", "col", "end_line", "end_col"})
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.EnvHeader,
            {
                **self.pos(s),
                "file": "",
                "doc": values.get("doc", ""),
                "name": name,
                "title": values.get("title", ""),
                "archetype": values.get("archetype", ""),
                "domains": values.get("domains", []),
                "extends": values.get("extends", ""),
                "seed": values.get("seed", 0),
                "rng": values.get("rng", "splitmix64"),
                "clock": values.get("clock", "2025-01-01T09:00:00"),
                "item_places": places,
            },
            {"name", "item_places", "line", "col", "end_line", "end_col", *values},
        )

    def enum(self, s: int) -> ir.EnumDecl:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc()
        members: list[str] = []
        while True:
            members.append(self.word())
            while t[self.i][0] == ",":
                self.i += 1
                members.append(self.word())
            self.expect("NL")
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.EnumDecl,
            {**self.pos(s), "file": "", "doc": doc, "name": name, "members": members},
            {"name", "members", "doc", "line", "col", "end_line", "end_col"},
        )

    def fields(self, block: str) -> list[ir.Field_]:
        """The fields of a block up to its end (consumed): `record_field+` in a record,
        `state_field+` in `state:` (`field_decl` or `state_file`), `field_decl+` in
        `load options:`."""
        t = self.t
        fields: list[ir.Field_] = []
        record = block == "record"
        while True:
            s = self.i
            name = self.word()
            absent = record and t[self.i][0] == "?"
            if absent:
                self.i += 1
            self.expect(":")
            type_ = self.type_()
            if t[self.i][0] == "from" and block == "state":
                self.i += 1
                source = self.plain_string()
                self.expect("NL")
                fields.append(
                    construct(
                        ir.Field_,
                        {
                            **self.pos(s),
                            "name": name,
                            "type": type_,
                            "default": None,
                            "alias": "",
                            "source": source,
                            "absent": False,
                            "tag": "",
                        },
                        {"name", "type", "source", "line", "col", "end_line", "end_col"},
                    )
                )
            else:
                default = None
                if t[self.i][0] == "=":
                    self.i += 1
                    default = self.expr()
                alias = ""
                if t[self.i][0] == "alias":
                    self.i += 1
                    alias = self.plain_string()
                self.expect("NL")
                first, last = t[s], t[self.i - 1]
                fields.append(
                    construct(
                        ir.Field_,
                        {
                            "line": first[2],
                            "col": first[3],
                            "end_line": last[4],
                            "end_col": last[5],
                            "name": name,
                            "type": type_,
                            "default": default,
                            "alias": alias,
                            "source": "",
                            "absent": absent,
                            "tag": "",
                        },
                        {"name", "type", "default", "absent", "alias", "line", "col", "end_line", "end_col"}
                        if record
                        else {"name", "type", "default", "alias", "line", "col", "end_line", "end_col"},
                    )
                )
            if t[self.i][0] == "DEDENT":
                self.i += 1
                return fields

    def record(self, s: int, override: bool) -> ir.RecordDecl:
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc()
        fields = self.fields("record")
        return construct(
            ir.RecordDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "fields": fields,
                "override": override,
                "tag": "",
                "members": {},
            },
            {"name", "fields", "doc", "override", "line", "col", "end_line", "end_col"},
        )

    def union(self, s: int) -> ir.RecordDecl:
        """`union NAME by TAG:` and its `Member = "tag"` lines: a RecordDecl without fields
        (the analyser fills them); a member or tag value given twice is E2005 (Lark's)."""
        t = self.t
        self.i += 1
        name = self.word()
        self.expect("by")
        tag = self.word()
        self.block_start()
        doc = self.doc()
        members: dict[str, str] = {}
        while True:
            member = self.word()
            self.expect("=")
            value = self.plain_string()
            self.expect("NL")
            if member in members or value in members.values():
                raise _Refuse("union member twice")  # E2005
            members[member] = value
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.RecordDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "fields": [],
                "override": False,
                "tag": tag,
                "members": members,
            },
            {"name", "fields", "tag", "members", "doc", "line", "col", "end_line", "end_col"},
        )

    def state(self, s: int) -> ir.StateDecl:
        self.i += 1
        return self.field_block(ir.StateDecl, s, "state")

    def field_block(self, cls: type[_Block], s: int, block: str) -> _Block:
        """`state:` or `load options:` after its words: a doc, then field lines."""
        self.block_start()
        doc = self.doc()
        fields = self.fields(block)
        return construct(
            cls,
            {**self.pos(s), "file": "", "doc": doc, "fields": fields},
            {"fields", "doc", "line", "col", "end_line", "end_col"},
        )

    def world(self, s: int) -> ir.WorldDecl:
        t = self.t
        self.i += 1
        self.block_start()
        doc = self.doc()
        fields: list[ir.WorldField] = []
        while True:
            f = self.i
            name = self.word()
            self.expect(":")
            type_ = self.type_()
            if t[self.i][0] == "=":
                self.i += 1
                value = self.expr()
                self.expect("NL")
                values = {**self.pos(f), "name": name, "type": type_, "value": value, "source": ""}
                given = {"name", "type", "value", "line", "col", "end_line", "end_col"}
            elif t[self.i][0] == "from":
                self.i += 1
                source = self.plain_string()
                self.expect("NL")
                values = {**self.pos(f), "name": name, "type": type_, "value": None, "source": source}
                given = {"name", "type", "source", "line", "col", "end_line", "end_col"}
            else:
                raise self.refuse()
            fields.append(construct(ir.WorldField, values, given))
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.WorldDecl,
            {**self.pos(s), "file": "", "doc": doc, "fields": fields},
            {"fields", "doc", "line", "col", "end_line", "end_col"},
        )

    def scenario(self, s: int) -> ir.ScenarioDecl:
        t = self.t
        self.i += 1
        name = self.word()
        if t[self.i][0] == "from":  # `scenario NAME from "FILE"`
            self.i += 1
            source = self.plain_string()
            self.expect("NL")
            return construct(
                ir.ScenarioDecl,
                {**self.pos(s), "file": "", "doc": "", "name": name, "items": [], "source": source, "renamed": {}},
                {"name", "items", "source", "line", "col", "end_line", "end_col"},
            )
        self.block_start()
        doc = self.doc()
        items: list[ir.ScenarioItem] = []
        while True:
            f = self.i
            item = self.word()
            self.expect("=")
            if t[self.i][0] == "from":  # `field = from "FILE"`
                self.i += 1
                source = self.plain_string()
                self.expect("NL")
                values = {**self.pos(f), "name": item, "value": None, "source": source}
                given = {"name", "source", "line", "col", "end_line", "end_col"}
            else:
                value = self.expr()
                self.expect("NL")
                values = {**self.pos(f), "name": item, "value": value, "source": ""}
                given = {"name", "value", "line", "col", "end_line", "end_col"}
            items.append(construct(ir.ScenarioItem, values, given))
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.ScenarioDecl,
            {**self.pos(s), "file": "", "doc": doc, "name": name, "items": items, "source": "", "renamed": {}},
            {"name", "items", "doc", "line", "col", "end_line", "end_col"},
        )

    def callable(self, s: int, override: bool) -> ir.ToolDecl:
        t = self.t
        cls = ir.ToolDecl if t[self.i][0] == "tool" else ir.FnDecl
        self.i += 1
        name = self.word()
        self.expect("(")
        params: list[ir.Param] = []
        while t[self.i][0] != ")":
            params.append(self.param())
            if t[self.i][0] != ",":
                break
            self.i += 1
        self.expect(")")
        self.expect("->")
        returns = self.type_()
        self.block_start()
        doc = self.doc(BODY_WORDS)
        fields: dict[str, Any] = {}
        param_docs: dict[str, str] = {}
        while True:
            key = t[self.i][0]
            if key == "reads" or key == "writes":
                self.i += 1
                names: list[str] = []
                if t[self.i][0] == "nothing":
                    self.i += 1
                else:
                    names.append(self.word())
                    while t[self.i][0] == ",":
                        self.i += 1
                        names.append(self.word())
                value: Any = names
                key = "declared_" + key
            elif key == "side_effect":
                self.i += 1
                value = self.plain_string()
            elif key == "param":
                self.i += 1
                param = self.word()
                text = self.plain_string()
                self.expect("NL")
                if param in param_docs or all(p["name"] != param for p in (q.__dict__ for q in params)):
                    raise _Refuse("param line")  # E2017, E2023
                param_docs[param] = text
                continue
            else:
                break
            self.expect("NL")
            if key in fields:
                raise _Refuse("given twice")  # E2017
            fields[key] = value
        escape = None
        body: list[Any] = []
        key = t[self.i][0]
        if key == "python" or key == "llm":
            e = self.i
            self.i += 1
            text = self.plain_string()
            self.expect("NL")
            escape = construct(
                ir.Escape,
                {**self.pos(e), "kind": key, "text": text},
                {"kind", "text", "line", "col", "end_line", "end_col"},
            )
        else:
            body = self.statements()
        self.expect("DEDENT")
        for each in params:
            each.__dict__["doc"] = param_docs.get(each.__dict__["name"], "")
            each.__pydantic_fields_set__.add("doc")
        values = {
            **self.pos(s),
            "file": "",
            "doc": doc,
            "name": name,
            "params": params,
            "returns": returns,
            "body": body,
            "escape": escape,
            "declared_reads": fields.get("declared_reads"),
            "declared_writes": fields.get("declared_writes"),
            "side_effect": fields.get("side_effect", ""),
            "override": override,
            "reads": [],
            "writes": [],
            "errors": [],
        }
        if cls is ir.FnDecl:
            values["recursion"] = []
        return construct(
            cls,
            values,
            {
                "name",
                "params",
                "returns",
                "body",
                "escape",
                "doc",
                "override",
                *fields,
                "line",
                "col",
                "end_line",
                "end_col",
            },
        )

    def param(self) -> ir.Param:
        t = self.t
        s = self.i
        name = self.word()
        self.expect(":")
        type_ = self.type_()
        default = None
        if t[self.i][0] == "=":
            self.i += 1
            default = self.expr()
        constraints: list[ir.Constraint] = []
        while t[self.i][0] == "NAME" and t[self.i][1] in CONSTRAINT_WORDS:
            c = self.i
            self.i += 1
            value = self.expr()
            first, last = t[c], t[self.i - 1]
            constraints.append(
                construct(
                    ir.Constraint,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "kind": first[1],
                        "value": value,
                    },
                    {"kind", "value", "line", "col", "end_line", "end_col"},
                )
            )
        first, last = t[s], t[self.i - 1]
        return construct(
            ir.Param,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "name": name,
                "type": type_,
                "default": default,
                "constraints": constraints,
                "doc": "",
            },
            {"name", "type", "default", "constraints", "line", "col", "end_line", "end_col"},
        )

    def type_(self) -> ir.TypeRef:
        t = self.t
        s = self.i
        token = t[s]
        if token[0] == "None" or token[0] in WORD_KINDS and t[s + 1][0] != "[":  # a word alone, the commonest
            self.i += 1
            return construct(
                ir.TypeRef,
                {
                    "line": token[2],
                    "col": token[3],
                    "end_line": token[4],
                    "end_col": token[5],
                    "name": token[1],
                    "args": [],
                },
                {"name", "line", "col", "end_line", "end_col"},
            )
        name = self.word()
        self.i += 1
        args = [self.type_()]
        while t[self.i][0] == ",":
            self.i += 1
            args.append(self.type_())
        self.expect("]")
        first, last = t[s], t[self.i - 1]
        return construct(
            ir.TypeRef,
            {"line": first[2], "col": first[3], "end_line": last[4], "end_col": last[5], "name": name, "args": args},
            {"name", "args", "line", "col", "end_line", "end_col"},
        )

    def drop(self, s: int) -> ir.DropDecl:
        self.i += 1
        what = self.t[self.i][0]
        if what not in DROP_KINDS:
            raise self.refuse()
        self.i += 1
        name = self.word()
        self.expect("NL")
        return construct(
            ir.DropDecl,
            {**self.pos(s), "file": "", "doc": "", "what": what, "name": name},
            {"what", "name", "line", "col", "end_line", "end_col"},
        )

    def rename(self, s: int) -> ir.RenameDecl:
        self.i += 1
        what = self.t[self.i][0]
        if what not in RENAME_KINDS:
            raise self.refuse()
        self.i += 1
        old = self.word()
        self.expect("as")
        new = self.word()
        self.expect("NL")
        return construct(
            ir.RenameDecl,
            {**self.pos(s), "file": "", "doc": "", "what": what, "old": old, "new": new},
            {"what", "old", "new", "line", "col", "end_line", "end_col"},
        )

    def describe(self, s: int) -> ir.DescribeDecl:
        t = self.t
        self.i += 1
        self.expect("tool")
        name = self.word()
        self.block_start()
        doc = self.doc(frozenset({"param"}))
        docs: dict[str, str] = {}
        lines: dict[str, int] = {}
        cols: dict[str, int] = {}
        while t[self.i][0] == "param":
            where = t[self.i]
            self.i += 1
            param = self.word()
            text = self.plain_string()
            self.expect("NL")
            if param in docs:
                raise _Refuse("given twice")  # E2017
            docs[param], lines[param], cols[param] = text, where[2], where[3]
        self.expect("DEDENT")
        return construct(
            ir.DescribeDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "param_docs": docs,
                "param_lines": lines,
                "param_cols": cols,
            },
            {"name", "doc", "line", "col", "end_line", "end_col"},
        )

    def on_load(self, s: int, override: bool = False) -> ir.OnLoadDecl:
        """`on load:` and its statements; a `python`/`llm` body there is E2032 (Lark's)."""
        self.i += 1
        self.expect("load")
        self.block_start()
        doc = self.doc(ON_LOAD_WORDS)
        if self.t[self.i][0] == "python" or self.t[self.i][0] == "llm":
            raise _Refuse("escape body in on load")  # E2032
        body = self.statements()
        self.i += 1
        return construct(
            ir.OnLoadDecl,
            {**self.pos(s), "file": "", "doc": doc, "body": body, "override": override},
            {"body", "doc", "override", "line", "col", "end_line", "end_col"},
        )

    def load_options(self, s: int) -> ir.LoadOptionsDecl:
        self.i += 1
        self.expect("options")
        return self.field_block(ir.LoadOptionsDecl, s, "options")

    def test(self, s: int) -> ir.TestDecl:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc(TEST_WORDS)
        steps: list[Any] = []
        while True:
            f = self.i
            kind = t[f][0]
            step: ir.StmtBase
            if kind == "scenario":
                self.i += 1
                used = self.word()
                self.expect("NL")
                step = construct(
                    ir.UseScenario,
                    {**self.pos(f), "kind": "scenario", "name": used},
                    {"name", "line", "col", "end_line", "end_col"},
                )
            elif kind == "let":
                self.i += 1
                bound = self.word()
                self.expect("=")
                value = self.expr()
                self.expect("NL")
                step = construct(
                    ir.TestLet,
                    {**self.pos(f), "kind": "let", "name": bound, "value": value},
                    {"name", "value", "line", "col", "end_line", "end_col"},
                )
            elif kind == "expect":
                self.i += 1
                cond = self.expr()
                self.expect("NL")
                step = construct(
                    ir.ExpectTrue,
                    {**self.pos(f), "kind": "expect", "cond": cond},
                    {"cond", "line", "col", "end_line", "end_col"},
                )
            else:
                call = self.expr()
                if t[self.i][0] == "raises":
                    self.i += 1
                    error = self.word()
                    message = self.plain_string() if t[self.i][0] in STRING_KINDS else ""
                    self.expect("NL")
                    step = construct(
                        ir.ExpectRaises,
                        {**self.pos(f), "kind": "raises", "call": call, "error": error, "message": message},
                        {"call", "error", "message", "line", "col", "end_line", "end_col"},
                    )
                else:
                    self.expect("NL")
                    step = construct(
                        ir.TestCall,
                        {**self.pos(f), "kind": "call", "call": call},
                        {"call", "line", "col", "end_line", "end_col"},
                    )
            steps.append(step)
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.TestDecl,
            {**self.pos(s), "file": "", "doc": doc, "name": name, "steps": steps},
            {"name", "steps", "doc", "line", "col", "end_line", "end_col"},
        )

    def task(self, s: int) -> ir.TaskDecl:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc(TASK_WORDS)
        given = {"name", "doc", "line", "col", "end_line", "end_col"}
        scenario = request = ""
        solution: list[Any] = []
        verify: list[Any] = []
        while True:
            kind = t[self.i][0]
            self.i += 1
            if kind == "scenario":
                if "scenario" in given:
                    raise _Refuse("given twice")  # E2017
                scenario = self.word()
                given.add("scenario")
            elif kind == "request":
                if "request" in given:
                    raise _Refuse("given twice")  # E2017
                request = self.plain_string()
                given.add("request")
            elif kind == "solution":
                self.block_start()
                while True:
                    solution.append(self.expr())
                    self.expect("NL")
                    if t[self.i][0] == "DEDENT":
                        break
                self.i += 1
                if t[self.i][0] == "DEDENT":
                    break
                continue
            elif kind == "verify":
                verify.append(self.expr())
            else:
                raise _Refuse("task item")
            self.expect("NL")
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.TaskDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "scenario": scenario,
                "request": request,
                "solution": solution,
                "verify": verify,
            },
            given,
        )

    # ------------------------------------------------------------------ statements
    def statements(self) -> list[Any]:
        """`stmt+` up to (not including) the block's DEDENT."""
        t = self.t
        body = [self.statement()]
        while t[self.i][0] != "DEDENT":
            body.append(self.statement())
        return body

    def suite(self) -> list[Any]:
        self.block_start()
        body = self.statements()
        self.i += 1
        return body

    def statement(self) -> Any:
        t = self.t
        s = self.i
        kind = t[s][0]
        if kind in STATEMENT_WORDS:
            if kind == "if":
                return self.if_(s)
            if kind == "for":
                return self.for_(s)
            node = _SIMPLE[kind](self, s)
        else:
            node = self.assign_or_expr(s)
        if t[self.i][0] != "NL":
            raise self.refuse()
        self.i += 1
        return node

    def assign_or_expr(self, s: int) -> Any:
        t = self.t
        kind = t[s][0]
        if kind == "-" or kind == "not" or kind == "lambda":
            value = self.expr()
        else:
            target = self.postfix()
            op = t[self.i][0]
            if op == "=":
                self.i += 1
                value = self.expr()
                first, last = t[s], t[self.i - 1]
                return construct(
                    ir.Assign,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "kind": "assign",
                        "target": target,
                        "op": "=",
                        "value": value,
                        "touches_state": False,
                    },
                    {"target", "value", "line", "col", "end_line", "end_col"},
                )
            if op == "+=" or op == "-=":
                self.i += 1
                value = self.expr()
                first, last = t[s], t[self.i - 1]
                return construct(
                    ir.Assign,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "kind": "assign",
                        "target": target,
                        "op": op,
                        "value": value,
                        "touches_state": False,
                    },
                    {"target", "op", "value", "line", "col", "end_line", "end_col"},
                )
            value = self.ternary(target, s) if op in CONTINUES else target
        first, last = t[s], t[self.i - 1]
        return construct(
            ir.ExprStmt,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "expr",
                "value": value,
            },
            {"value", "line", "col", "end_line", "end_col"},
        )

    def let(self, s: int) -> ir.Let:
        self.i += 1
        name = self.word()
        type_ = None
        if self.t[self.i][0] == ":":
            self.i += 1
            type_ = self.type_()
        self.expect("=")
        value = self.expr()
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Let,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "let",
                "name": name,
                "type": type_,
                "value": value,
            },
            {"name", "type", "value", "line", "col", "end_line", "end_col"},
        )

    def return_(self, s: int) -> ir.Return:
        self.i += 1
        value = None if self.t[self.i][0] == "NL" else self.expr()
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Return,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "return",
                "value": value,
            },
            {"value", "line", "col", "end_line", "end_col"},
        )

    def require(self, s: int) -> ir.Require:
        self.i += 1
        cond = self.expr()
        self.expect("else")
        error = self.error_call()
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Require,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "require",
                "cond": cond,
                "error": error,
            },
            {"cond", "error", "line", "col", "end_line", "end_col"},
        )

    def fail(self, s: int) -> ir.Fail:
        self.i += 1
        error = self.error_call()
        return construct(
            ir.Fail, {**self.pos(s), "kind": "fail", "error": error}, {"error", "line", "col", "end_line", "end_col"}
        )

    def error_call(self) -> ir.ErrorCall:
        s = self.i
        kind = self.word()
        self.expect("(")
        positional, keywords = self.arguments()
        self.expect(")")
        if len(positional) > 1:
            raise _Refuse("two messages")  # E3006
        message = positional[0] if positional else None
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.ErrorCall,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": kind,
                "message": message,
                "fields": keywords,
            },
            {"kind", "message", "fields", "line", "col", "end_line", "end_col"},
        )

    def delete(self, s: int) -> ir.Delete:
        self.i += 1
        target = self.postfix()
        return construct(
            ir.Delete,
            {**self.pos(s), "kind": "delete", "target": target, "touches_state": False},
            {"target", "line", "col", "end_line", "end_col"},
        )

    def pass_(self, s: int) -> ir.Pass:
        self.i += 1
        return construct(ir.Pass, {**self.pos(s), "kind": "pass"}, {*POS})

    def break_(self, s: int) -> ir.Break:
        self.i += 1
        return construct(ir.Break, {**self.pos(s), "kind": "break"}, {*POS})

    def continue_(self, s: int) -> ir.Continue:
        self.i += 1
        return construct(ir.Continue, {**self.pos(s), "kind": "continue"}, {*POS})

    def if_(self, s: int) -> ir.If:
        t = self.t
        self.i += 1
        cond = self.expr()
        body = self.suite()
        branches: list[Any] = [None]
        while t[self.i][0] == "elif":
            b = self.i
            self.i += 1
            other = self.expr()
            block = self.suite()
            first, last = t[b], t[self.i - 1]
            branches.append(
                construct(
                    ir.IfBranch,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "cond": other,
                        "body": block,
                    },
                    {"cond", "body", "line", "col", "end_line", "end_col"},
                )
            )
        orelse: list[Any] = []
        if t[self.i][0] == "else":
            self.i += 1
            orelse = self.suite()
        first, last = t[s], t[self.i - 1]
        where = {"line": first[2], "col": first[3], "end_line": last[4], "end_col": last[5]}
        branches[0] = construct(
            ir.IfBranch, {**where, "cond": cond, "body": body}, {"cond", "body", "line", "col", "end_line", "end_col"}
        )
        return construct(
            ir.If,
            {**where, "kind": "if", "branches": branches, "orelse": orelse},
            {"branches", "orelse", "line", "col", "end_line", "end_col"},
        )

    def for_(self, s: int) -> ir.For:
        t = self.t
        self.i += 1
        targets = [self.word()]
        if t[self.i][0] == ",":
            self.i += 1
            targets.append(self.word())
        self.expect("in")
        iterable = self.expr()
        body = self.suite()
        return construct(
            ir.For,
            {**self.pos(s), "kind": "for", "targets": targets, "iter": iterable, "body": body},
            {"targets", "iter", "body", "line", "col", "end_line", "end_col"},
        )

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
                name = self.word()
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
            return self.const(token, _string_value(token[1]))
        if kind == "INT":
            self.i += 1
            value = int(token[1].replace("_", ""))
            if value > INT64_MAX:
                raise _Refuse("integer too big")  # E1007
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
        if t[self.i][0] == ",":
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
        """`f"a {x} b"` as `_parse_fstring` splits it; anything it would report is refused.

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
            raise _Refuse("single } in f-string")  # E1005
        flat = _FLAT_FIELD.match(text, i)
        if flat is not None:
            parts.append(_fstring_field(flat.group(1), line, col + i + 1, True))
            i = flat.end()
            continue
        end = _matching_brace(text, i)
        if end < 0:
            raise _Refuse("unclosed { in f-string")  # E1005
        parts.append(_fstring_field(text[i + 1 : end], line, col + i + 1, False))
        i = end + 1
    return parts


_FSTRING_LITERAL = re.compile(r"(?:[^\\{}]|\\(?s:.)|\{\{|\}\})+")
"""A run of an f-string's literal text: characters, `\\x` pairs, `{{` and `}}`."""
_DOUBLED_BRACE = re.compile(r"(\\(?s:.))|([{}])\2")
_FLAT_FIELD = re.compile(r"\{([^{}\[\]()]*)\}")
"""A field without brackets, whose end is the next `}` (`_matching_brace`'s answer)."""
_LAMBDA_START = re.compile(r"\s*lambda\b")


def _fstring_field(source: str, line: int, col: int, flat: bool) -> Any:
    """One `{…}` of an f-string, as `_parse_fstring_field` reads it (refusing its errors);
    in a `flat` field (no brackets) `_top_level` is `str.find`."""
    if "lambda" in source and _LAMBDA_START.match(source):
        split = -1
    else:
        split = source.find(":") if flat else _top_level(source, ":")
    bang = source.find("!") if flat else _top_level(source, "!")
    if bang >= 0 and (split < 0 or bang < split) and not source.startswith("=", bang + 1):
        raise _Refuse("conversion in f-string")  # E1005
    if split < 0:
        return _fstring_expr(source, line, col)
    spec = source[split + 1 :]
    expr = _fstring_expr(source[:split], line, col)
    if not spec:
        return expr
    if "{" in spec or "}" in spec or FORMAT_SPEC.fullmatch(spec) is None:
        raise _Refuse("format spec")  # E1005
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
        raise _Refuse("empty {} in f-string")  # E1005
    if "#" in source:
        raise _Refuse("comment in f-string")
    tokens, long_line = scan(source, line, col, indent=False)
    parser = _Parser(tokens)
    node = parser.expr()
    if tokens[parser.i][0] != "END":
        raise parser.refuse()
    if long_line and _depth(node) > MAX_EXPR_DEPTH:
        raise _Refuse("f-string field nested too deep")  # E1008
    return node


def _dotted(source: str, line: int, col: int) -> Any:
    """`a` or `a.b.c` (words without blanks, the first no keyword) as its Name and Attr
    nodes, or None for any other source."""
    words = source.split(".")
    foreign = _foreign_words() or frozenset()
    for word in words:
        if not (word.isascii() and word.isidentifier()) or word in foreign:
            return None
    if words[0] in _FIXED:
        return None
    end = col + len(words[0])
    node: Any = _name(words[0], line, col, line, end)
    for word in words[1:]:
        end += len(word) + 1
        node = _attr(node, word, line, col, line, end)
    return node


_DECLS = {
    "environment": _Parser.environment,
    "enum": _Parser.enum,
    "state": _Parser.state,
    "world": _Parser.world,
    "scenario": _Parser.scenario,
    "test": _Parser.test,
    "task": _Parser.task,
    "drop": _Parser.drop,
    "rename": _Parser.rename,
    "describe": _Parser.describe,
    "union": _Parser.union,
    "on": _Parser.on_load,
    "load": _Parser.load_options,
}
_SIMPLE = {
    "let": _Parser.let,
    "return": _Parser.return_,
    "require": _Parser.require,
    "fail": _Parser.fail,
    "del": _Parser.delete,
    "pass": _Parser.pass_,
    "break": _Parser.break_,
    "continue": _Parser.continue_,
}
