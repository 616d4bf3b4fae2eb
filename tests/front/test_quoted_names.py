"""Enum members and record fields named by any text (issue 24), quoted where they are no
names: both parsers build the same IR, `envc fmt` writes them back so that they parse
the same, the analysis refuses an empty or repeated name, and the lowered package (a
functional `TypedDict`, a `Literal` of the members) passes every check and keeps the
names exactly, in results, state and tools.json."""

from __future__ import annotations

import json

import pytest
from test_parse_fast import compare

from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.front.fmt import format_source, strip_positions
from compiler.front.parse import parse_source
from compiler.lower import lower

HEADER = 'environment t:\n    title "T"\n\n'
SPEC = r'''environment quoted_names:
    title "Quoted names"

enum Reason:
    "too expensive", "no longer needed", other
    "say \"why\"",
    "back\\slash", "é ü"

record Row:
    """A row of a price table, keyed as the feed keys it."""
    "MA(5)": float
    day: str
    "close price"?: float
    "from": int = 0

state:
    rows: list[Row] = [{"MA(5)": 1.5, "day": "mon"}]
    why: Reason = Reason."too expensive"

tool cancel(reason: Reason) -> str:
    require reason != Reason."no longer needed" else invalid_argument("say why", field="reason")
    why = reason
    return f"{reason}"

tool bump(at: int, by: float) -> Row:
    require 0 <= at < len(rows) else not_found("no row", field="at")
    let row = rows[at]
    row."MA(5)" = row."MA(5)" + by
    row."close price" = by
    row."from" += 1
    return row

tool add_row(row: Row) -> int:
    rows.append(row)
    return len(rows)
'''
AGREEING = [
    'enum E:\n    "a"\n    b\n',
    'enum E:\n    "a",\n    "b", c, "d\\u0021"\n',
    'enum E:\n    """doc"""\n    "x y",\n',
    'record R:\n    "doc"\n    "x": int\n    "y"?: str = "q"\n',
    'tool t() -> int:\n    a."b c".d = E."x"\n    return f(x)."q"\n',
]
REFUSED_BY_BOTH = [
    'enum E:\n    b\n    "c"\n',
    'enum E:\n    "a", "b",\n',
    'record R:\n    f"x": int\n',
    'record R:\n    """x""": int\n',
]


@pytest.mark.parametrize("text", AGREEING)
def test_both_parsers_build_the_same_ir(text: str) -> None:
    assert compare(HEADER + text) == "same"


@pytest.mark.parametrize("text", REFUSED_BY_BOTH)
def test_both_parsers_refuse(text: str) -> None:
    assert compare(HEADER + text) == "lark refuses"


def test_fmt_quotes_what_is_no_name_and_parses_back_the_same() -> None:
    formatted = format_source(SPEC, "q.envspec").text or ""
    assert '    "say \\"why\\"",\n' in formatted and '    "MA(5)": float\n' in formatted
    assert "    other\n" in formatted and 'row."close price" = by' in formatted
    before, after = parse_source(SPEC, "q.envspec"), parse_source(formatted, "q.envspec")
    assert before.diagnostics == [] and after.diagnostics == []
    assert before.module is not None and after.module is not None
    assert strip_positions(before.module) == strip_positions(after.module)
    assert format_source(formatted, "q.envspec").text == formatted


def test_the_ir_keeps_the_names_as_written() -> None:
    result = analyse_source(SPEC, "q.envspec")
    assert result.environment is not None, result.diagnostics
    (reason,) = [e for e in result.environment.enums if e.name == "Reason"]
    assert reason.members == ["too expensive", "no longer needed", "other", 'say "why"', "back\\slash", "é ü"]
    (row,) = [r for r in result.environment.records if r.name == "Row"]
    assert [f.name for f in row.fields] == ["MA(5)", "day", "close price", "from"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('enum E:\n    "",\n', ["E2043"]),
        ('enum E:\n    "a b", "a b"\n', ["E2005"]),
        ('record R:\n    "": int\n', ["E2043"]),
        ('record R:\n    "a b": int\n    "a b": str\n', ["E2005"]),
        ('record R:\n    "a": int\n\ntool t(r: R) -> int:\n    return r."b"\n', ["E2008"]),
        ('enum E:\n    "a b",\n\ntool t() -> E:\n    return E."a c"\n', ["E2007"]),
        ('enum E:\n    "a b",\n\ntool t(e: E) -> bool:\n    return e == "a b"\n', []),
    ],
)
def test_names_are_checked(body: str, expected: list[str]) -> None:
    diagnostics = analyse_source(HEADER + body, "t.envspec").diagnostics
    assert [d.code for d in diagnostics if d.severity == "error"] == expected


def test_the_package_passes_every_check_and_keeps_the_names() -> None:
    result = analyse_source(SPEC, "quoted_names.envspec")
    assert result.environment is not None
    files = lower(result.environment, "quoted_names.envspec")
    assert 'Row = TypedDict(\n    "Row",' in files["environment.py"]
    checked = check_packages([Package(env=result.environment, name="quoted_names", files=files)])["quoted_names"]
    assert checked.findings == [] and checked.tests_failed == 0 and checked.tests_passed > 0
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    reason = tools["cancel"]["parameters"]["properties"]["reason"]
    assert reason["enum"] == ["too expensive", "no longer needed", "other", 'say "why"', "back\\slash", "é ü"]
    row = tools["add_row"]["parameters"]["properties"]["row"]
    assert list(row["properties"]) == ["MA(5)", "day", "close price", "from"]
    assert row["required"] == ["MA(5)", "day"]
