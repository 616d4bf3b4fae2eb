"""Where a spec's top-level declarations start, read from its lines rather than a parse:
the syntax errors after the first are found by parsing again from the next declaration
(`lark_parser.errors_after`), and the analysis of a spec with syntax errors goes on
without the declarations that hold them (`without_broken_declarations`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_DECL_START = re.compile(
    r"^(environment|enum|record|state|world|scenario|tool|fn|test|task|family|drop|rename|override|describe|on|load|values|persona)\b"
)


@dataclass
class Recovered:
    """Spec text without its broken declarations (`without_broken_declarations`)."""

    text: str  # the same lines, those of broken declarations left empty: positions stay
    names: set[str]  # what the broken declarations declared (their names, a block's fields)
    spans: list[tuple[int, int]]  # first and last line of every declaration, broken or not


_DECL_NAMES = re.compile(
    r"^(?:override\s+)?(?:enum|record|scenario|tool|fn|test|task|family|describe\W+(?:tool|record)|values|drop\W+\w+|rename\W+\w+)\W*(\w+)"
    r"(?:.*\bas\W+(\w+))?"
)
_BLOCK_FIELD = re.compile(r"^\s+(\w+)\s*[:=]")


def without_broken_declarations(source: str, error_lines: Iterable[int]) -> Recovered | None:
    """The text with every top-level declaration holding one of `error_lines` blanked
    out, so the declarations that parsed can still be analysed; None when the header
    itself is broken (nothing can be analysed without it) or a line lies before every
    declaration. The names come from the text, not a parse: a declaration's name on its
    first line (both names of a `rename`), the field names of a broken `state` or
    `world` block, and the names of the records and enums that mention any of these (a
    record whose field type is missing is itself not what the spec means)."""
    text = source.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    starts = decl_starts(lines)
    if not starts:
        return None
    spans = [(start, (starts[i + 1] - 1) if i + 1 < len(starts) else len(lines)) for i, start in enumerate(starts)]
    broken: set[tuple[int, int]] = set()
    for line in error_lines:
        span = next((s for s in reversed(spans) if s[0] <= line), None)
        if span is None or lines[span[0] - 1].startswith("environment"):
            return None
        broken.add(span)
    names: set[str] = set()
    for first, last in sorted(broken):
        head = lines[first - 1]
        found = _DECL_NAMES.match(head)
        if found:
            names.update(name for name in found.groups() if name)
        if head.startswith(("state", "world")):
            names.update(m.group(1) for line in lines[first:last] if (m := _BLOCK_FIELD.match(line)))
    _add_dependent_types(lines, spans, broken, names)
    for first, last in broken:
        lines[first - 1 : last] = [""] * (last - first + 1)
    return Recovered("\n".join(lines), names, spans)


def _add_dependent_types(
    lines: list[str], spans: list[tuple[int, int]], broken: set[tuple[int, int]], names: set[str]
) -> None:
    """Records and enums whose text mentions a missing name join the missing names, until
    none is added: a record with a field of a broken type cascades like the type."""
    pending = True
    while pending and names:
        pending = False
        word = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
        for first, last in spans:
            found = re.match(r"^(?:override\s+)?(?:record|enum)\s+(\w+)", lines[first - 1])
            if (first, last) in broken or found is None or found.group(1) in names:
                continue
            if word.search("\n".join(lines[first - 1 : last])):
                names.add(found.group(1))
                pending = True


def decl_starts(lines: list[str]) -> list[int]:
    """1-based numbers of lines that begin a top-level declaration (outside long strings)."""
    starts: list[int] = []
    in_long = False
    for number, line in enumerate(lines, start=1):
        if not in_long and _DECL_START.match(line):
            starts.append(number)
        if line.count('"""') % 2 == 1:
            in_long = not in_long
    return starts
