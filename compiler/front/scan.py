"""Stage 1, parse, the fast path: the scanner. Spec text to the tokens Lark's lexer and
indenter would make: the same regexes (one master pattern), maximal words, the
indenter's INDENT/DEDENT rule and `NL` tokens that swallow blank lines and comments (so
statement and declaration spans end where Lark's do). Input it cannot scan as Lark
would is refused (`Refuse`), and left to Lark.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from compiler.front.grammar import MAX_EXPR_DEPTH, MAX_NESTING, grammar_text


class Refuse(Exception):
    """This input is left to Lark (a syntax error, or something the fast parser does not model)."""


# --------------------------------------------------------------------------- words

STATEMENT_WORDS = frozenset(
    {"let", "return", "require", "fail", "del", "pass", "break", "continue", "if", "for", "while"}
)
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
        # task families
        "family", "kind", "reward", "plan", "each", "weight",
        # values and wording for tasks
        "values", "persona", "intent", "noun", "refer", "field", "before",
        # expressions
        "lambda", "or", "and", "not", "is", "True", "False", "None",
    }
)  # fmt: skip
"""The grammar's string keywords (a word token's kind is the word itself for these)."""


CONSTRAINT_WORDS = frozenset({"min_length", "max_length", "min_items", "max_items", "min", "max", "pattern"})
"""CONSTRAINT_KW: a regex terminal in Lark, so these stay NAMEs wherever a NAME fits."""


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
FIXED: dict[str, str] = {
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
def foreign_words() -> frozenset[str] | None:
    """Words the grammar quotes that this parser does not know (refused wherever they
    occur), or None when the grammar lost a keyword this parser relies on (fast path off)."""
    quoted = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', grammar_text()))
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
    foreign = foreign_words()
    if foreign is None:
        raise Refuse("grammar changed")
    tokens: list[Token] = []
    append = tokens.append
    fixed = dict(FIXED)  # and the names, numbers and strings seen: their next uses take one lookup
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
                        raise Refuse("blocks nested too deep")
                    append(("INDENT", spaces, first_line, start, line, end_col))
                elif width < levels[-1]:
                    while width < levels[-1]:
                        levels.pop()
                        append(("DEDENT", spaces, first_line, start, line, end_col))
                    if width != levels[-1]:
                        raise Refuse("dedent to no outer level")
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
                    raise Refuse("brackets nested too deep")
                kind = piece
            elif sort == "close":
                if depth:
                    depth -= 1
                kind = piece
            elif sort == "word":
                if piece[-1] == '"':
                    kind = "FSTRING"
                elif piece in foreign:
                    raise Refuse(piece)
                else:
                    kind = fixed[piece] = "NAME"
            elif sort == "string":
                if len(piece) == 1:
                    raise Refuse("string not closed")
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
                raise Refuse("no terminal matches")
        append((kind, piece, line, start, line, col))
    if depth or len(levels) > 1:
        raise Refuse("input ends inside a block or bracket")
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
        raise Refuse("no terminal matches")
    last = piece.rfind("\n")
    spaces = piece[last + 1 :]
    width = len(spaces) if "\t" not in spaces else spaces.count(" ") + spaces.count("\t") * 4
    return piece.count("\n"), len(piece) - last, spaces, width
