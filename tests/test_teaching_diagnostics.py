"""Diagnostics that teach (issue 14): a parameter that shadows a state field is a warning
(E2024) and reassigning it says `state.NAME = …`; arithmetic or an ordering on a json
value suggests `as_number`; `let s = {}` shows the map form; a parameter's reserved name
is underlined whole; a string literal in f-string braces says why it fails (see also
tests/test_syntax_added.py)."""

from __future__ import annotations

import pytest

from compiler.analyse import analyse_source
from compiler.diagnostics import CODES, Diagnostic, has_errors, render_text

HEADER = """environment teach:
    title "Teaching diagnostics"

record Item:
    id: int

state:
    tickets: list[str] = []
    owner: str = ""
    items: map[int, Item] = {}
    blob: json = 1

"""


def diagnose(body: str) -> list[Diagnostic]:
    return analyse_source(HEADER + body, "teach.envspec").diagnostics


def test_a_container_parameter_shadowing_a_state_field_is_a_warning() -> None:
    text = HEADER + "tool add(tickets: list[str], t: str) -> bool:\n    return t in tickets\n"
    result = analyse_source(text, "teach.envspec")
    [warning] = result.diagnostics
    assert (warning.code, warning.severity, warning.line, warning.col, warning.end_col) == (
        "E2024",
        "warning",
        13,
        10,
        17,
    )
    assert "`tickets` is the parameter" in warning.message and "state.tickets" in warning.hint
    assert result.environment is not None and not has_errors(result.diagnostics)
    assert "warning E2024" in render_text(warning, text)


@pytest.mark.parametrize(
    "body",
    [
        # a scalar: ids and names share a field's name on purpose
        "tool set_owner(owner: str) -> str:\n    return owner\n",
        # the body says `state.NAME`: it knows which is which
        "tool merge(tickets: list[str]) -> int:\n    state.tickets = tickets\n    return len(tickets)\n",
        "tool count(items: list[int]) -> int:\n    return len(items) + len(state.items)\n",
    ],
)
def test_no_warning_where_the_shadowing_is_plainly_meant(body: str) -> None:
    assert diagnose(body) == []


def test_helpers_are_warned_too() -> None:
    [warning] = diagnose("fn has(items: map[int, Item], id: int) -> bool:\n    return id in items\n")
    assert (warning.code, warning.severity) == ("E2024", "warning")


def test_reassigning_a_shadowing_parameter_says_state_name() -> None:
    found = diagnose('tool clear_owner(owner: str) -> str:\n    owner = ""\n    return owner\n')
    [error] = [d for d in found if d.code == "E4007"]
    assert "`state.owner = …`" in error.hint
    [plain] = [
        d for d in diagnose('tool clear_who(who: str) -> str:\n    who = ""\n    return who\n') if d.code == "E4007"
    ]
    assert plain.hint == "`let new_who = ...`"


@pytest.mark.parametrize(
    ("expression", "shown"),
    [
        ("blob + 1", "as_number(blob)"),
        ("2.5 * blob", "as_number(blob)"),
        ("blob ** 2", "as_number(blob)"),
        ('-blob["total"]', 'as_number(blob["total"])'),
    ],
)
def test_arithmetic_on_json_suggests_as_number(expression: str, shown: str) -> None:
    [error] = diagnose(f"tool t() -> float:\n    return {expression}\n")
    assert error.code == "E3004" and f"`{shown}`" in error.hint, error.hint


def test_an_ordering_on_json_suggests_as_number() -> None:
    [error] = diagnose("tool t() -> bool:\n    return blob > 3\n")
    assert error.code == "E3004" and "`as_number(blob)`" in error.hint
    [other] = diagnose('tool t() -> bool:\n    return "a" > 3\n')  # no json: no such hint
    assert other.code == "E3004" and "as_number" not in other.hint


@pytest.mark.parametrize(
    ("value", "hint"),
    [("{}", "`let s: map[K, V] = {}`"), ("[]", "`let s: list[T] = []`")],
)
def test_empty_literals_show_the_typed_form(value: str, hint: str) -> None:
    [error] = diagnose(f"tool t() -> int:\n    let s = {value}\n    return len(s)\n")
    assert error.code == "E3020" and hint in error.hint


def test_a_reserved_parameter_name_is_underlined_whole() -> None:
    text = HEADER + "tool t(_xyz: int, require: int) -> int:\n    return 1\n"
    found = [d for d in analyse_source(text, "teach.envspec").diagnostics if d.code == "E2014"]
    assert [(d.col, d.end_col) for d in found] == [(8, 12), (19, 26)]
    assert "^^^^\n" in render_text(found[0], text) + "\n"


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("tool t(n: int) -> int:\n    let   self = n\n    return self\n", "self"),
        ("tool t(n: int) -> int:\n    for  self in [n]:\n        pass\n    return n\n", "self"),
        ("record   Param:\n    id: int\n", "Param"),
        ("fn   len() -> int:\n    return 1\n", "len"),
        ("test   snapshot_and_restore:\n    expect 1 == 1\n", "snapshot_and_restore"),
    ],
    ids=["let", "loop", "record", "helper", "test"],
)
def test_a_reserved_name_is_underlined_whole_where_it_is_declared(source: str, name: str) -> None:
    """Not the statement's keyword: the caret line marks exactly the name, whatever the
    spacing before it (a helper named like a built-in shadows it: the warning E2042)."""
    text = HEADER + source
    [found] = [d for d in analyse_source(text, "teach.envspec").diagnostics if d.code in ("E2014", "E2042")]
    line = text.splitlines()[found.line - 1]
    assert line[found.col - 1 : found.end_col - 1] == name
    assert found.end_line == found.line


def test_the_fstring_hint_mentions_format_specs() -> None:
    assert "{expression:spec}" in CODES["E1005"][1]
    assert CODES["E2024"][0].endswith("(a warning)")
