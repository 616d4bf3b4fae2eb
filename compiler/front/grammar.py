"""The envspec language's facts both parsers build on (`lark_parser.py`, the reference,
and the hand-written `fastparse_*.py`): where the grammar is, the limits on input, how
string literals decode and where an f-string's fields end. Each fact is here once, so
the two parsers cannot drift apart on it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from compiler import ir

MAX_SOURCE_BYTES = 5_000_000
MAX_NESTING = 100
MAX_EXPR_DEPTH = 120
MAX_SYNTAX_ERRORS = 50
INT64_MAX = 2**63 - 1

DEPTH_MEASURED = (ir.ExprBase, ir.Keyword, ir.MapEntry)
"""The nodes that count towards an expression's depth (MAX_EXPR_DEPTH, E1008)."""

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "{": "{", "}": "}"}
ESCAPE_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
LAMBDA_START = re.compile(r"\s*lambda\b")
"""An f-string field that is a lambda: its `:` is the lambda's, not a format spec's."""


def grammar_path() -> Path:
    """The grammar ships at the repository top (`grammar/`) or inside the wheel."""
    here = Path(__file__).resolve().parent.parent  # the compiler package
    for candidate in (here / "grammar" / "envspec.lark", here.parent / "grammar" / "envspec.lark"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("grammar/envspec.lark is missing from the envc installation")


@functools.cache
def grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")


def clean_block(text: str) -> str:
    """A triple-quoted string like a Python docstring: the first line as written, the
    common indentation of the others removed, blank lines at either end dropped. Unlike
    inspect.cleandoc, tabs are kept as they are."""
    lines = text.split("\n")
    rest = lines[1:]
    indents = [len(line) - len(line.lstrip()) for line in rest if line.strip()]
    margin = min(indents, default=0)
    cleaned = [lines[0].lstrip(), *(line[margin:] for line in rest)]
    while cleaned and not cleaned[0].strip():
        cleaned.pop(0)
    while cleaned and not cleaned[-1].strip():
        cleaned.pop()
    return "\n".join(cleaned)


def matching_brace(text: str, start: int) -> int:
    """Where the `}` closing the `{` at `start` is (brackets inside counted), or -1 when
    another bracket closes it or nothing does."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] in "{[(":
            depth += 1
        elif text[j] in "}])":
            depth -= 1
            if depth == 0:
                return j if text[j] == "}" else -1
    return -1


def top_level(source: str, char: str) -> int:
    """Where `char` first occurs outside brackets in an f-string field, or -1."""
    depth = 0
    for index, ch in enumerate(source):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == char and depth == 0:
            return index
    return -1
