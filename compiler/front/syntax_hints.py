"""Hints for syntax errors that say what was probably meant: a misspelt keyword at the
start of a line (`requre x in xs` → did you mean `require`?), and what the indentation
of a line should be."""

from __future__ import annotations

import re

from compiler.diagnostics import did_you_mean

LINE_KEYWORDS = frozenset(
    {"environment", "enum", "record", "union", "state", "world", "scenario", "tool", "fn", "test", "task"}
    | {"family", "describe", "values", "drop", "rename", "override", "extends", "reads", "writes", "param"}
    | {"let", "require", "fail", "return", "if", "elif", "else", "for", "while", "del", "pass", "break"}
    | {"continue"}
    | {"expect", "verify", "solution", "request"}
)
"""Words that start a line of a spec: declarations, block lines, statements, test steps."""

_FIRST_WORD = re.compile(r"\s*([A-Za-z_]\w*)")


def keyword_hint(text: str, line: int, col: int) -> str:
    """`did you mean `KEYWORD`?` when the line's first word, at or before column `col` (the
    unexpected token, or the one the parser stopped after), is a near miss of a keyword
    (and no keyword itself); else ""."""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return ""
    found = _FIRST_WORD.match(lines[line - 1])
    if found is None or found.start(1) + 1 > col or found[1] in LINE_KEYWORDS:
        return ""
    return did_you_mean(found[1], LINE_KEYWORDS)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _open_levels(above: list[str]) -> list[int]:
    """The indentation of each block still open after the lines `above`, innermost first."""
    levels: list[int] = []
    for raw in reversed(above):
        indent = _indent(raw)
        if not levels or indent < levels[-1]:
            levels.append(indent)
    return levels


def indentation_hint(text: str, line: int) -> str:
    """What the indentation of `line` (1-based) could be: the levels of the lines above."""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return ""
    above = [raw for raw in lines[: line - 1] if raw.strip() and not raw.lstrip().startswith("#")]
    if not above:
        return "the first line of a spec starts at column 1"
    previous = _indent(above[-1])
    here = _indent(lines[line - 1])
    if "\t" in lines[line - 1][:here] and " " in lines[line - 1][:here]:
        return "this line mixes tabs and spaces; indent with spaces only"
    if here > previous:
        return (
            f"this line is indented {here} columns, the line above {previous}, which opens no block "
            "(a block follows a line ending in `:`); indent it like the line above, "
            "or put a continued expression inside brackets"
        )
    shown = ", ".join(str(level) for level in _open_levels(above))
    return f"this line is indented {here} columns; the open blocks are at {shown}: dedent to one of them"
