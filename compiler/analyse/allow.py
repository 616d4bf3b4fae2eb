"""`# allow CODE` on a declaration's first line silences that warning (E2024, E2039,
E2042, …) in the declaration, and nowhere else: a port whose benchmark fixes a name keeps
it without living with the warning, and every other place still warns. Errors cannot be
silenced."""

from __future__ import annotations

import re
from collections.abc import Mapping

from compiler.diagnostics import Diagnostic

ALLOW = re.compile(r"#\s*allow\s+(E\d{4}(?:\s*,\s*E\d{4})*)\s*$")
"""The comment: `# allow E2024` or `# allow E2024, E2039`, ending the line."""


def declaration_line(lines: list[str], line: int) -> str:
    """The first line of the top-level declaration holding `line` (1-based): the nearest
    line at or above it that starts at column 1 and is neither blank nor a comment."""
    for raw in reversed(lines[:line]):
        if raw.strip() and not raw[0].isspace() and not raw.startswith("#"):
            return raw
    return ""


def allowed_codes(header: str) -> frozenset[str]:
    found = ALLOW.search(header)
    return frozenset(re.findall(r"E\d{4}", found[1])) if found else frozenset()


def drop_allowed(diagnostics: list[Diagnostic], sources: Mapping[str, str]) -> list[Diagnostic]:
    """`diagnostics` without the warnings their declaration allows."""
    split = {path: text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n") for path, text in sources.items()}

    def allowed(d: Diagnostic) -> bool:
        lines = split.get(d.path)
        return lines is not None and d.code in allowed_codes(declaration_line(lines, d.line))

    return [d for d in diagnostics if d.severity != "warning" or not allowed(d)]
