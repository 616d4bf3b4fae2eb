"""`# allow CODE` on a declaration's first line silences that warning there only (issue
24: E2024 where a benchmark fixes a parameter's name); errors stay."""

from __future__ import annotations

from compiler.analyse import analyse_source
from compiler.analyse.allow import allowed_codes, declaration_line
from compiler.front.fmt import format_source

HEAD = 'environment allow_demo:\n    title "Allow"\n\nstate:\n    books: list[int] = []\n\n'
SHADOWS = "tool restock(books: list[int]) -> int:{allow}\n    return len(books)\n"


def found(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in analyse_source(HEAD + text, "a.envspec").diagnostics]


def test_allow_silences_the_warning_of_its_declaration_only() -> None:
    assert found(SHADOWS.format(allow="")) == [("E2024", 7)]
    assert found(SHADOWS.format(allow="  # allow E2024")) == []
    other = SHADOWS.format(allow="").replace("restock", "count")
    assert found(SHADOWS.format(allow="  # allow E2024") + "\n" + other) == [("E2024", 10)]


def test_allow_names_the_code_it_silences() -> None:
    assert found(SHADOWS.format(allow="  # allow E2039")) == [("E2024", 7)]
    assert found(SHADOWS.format(allow="  # allow E2039, E2024")) == []


def test_an_error_cannot_be_allowed() -> None:
    text = 'tool t() -> int:  # allow E3001\n    return "x"\n'
    assert found(text) == [("E3001", 8)]


def test_the_declaration_line_is_the_nearest_top_level_line() -> None:
    lines = ["tool t() -> int:  # allow E2042", "    # a comment", "", "    return 1"]
    assert declaration_line(lines, 4) == lines[0]
    assert allowed_codes(lines[0]) == {"E2042"}
    assert allowed_codes("tool t() -> int:  # allowed E2042") == frozenset()


def test_fmt_keeps_the_allow_comment() -> None:
    text = HEAD + SHADOWS.format(allow="  # allow E2024")
    result = format_source(text, "a.envspec")
    assert result.text is not None and "  # allow E2024\n" in result.text
