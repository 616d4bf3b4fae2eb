"""The values and wording for tasks in the analysis (compiler/analyse/sources.py): pools
read and checked, every source checked against its pool or format and the type it fills,
the warning on write tools' free-text parameters, and what reaches the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import ir
from compiler.analyse import analyse_file, analyse_source
from compiler.analyse.sources import key_parameters
from compiler.front.parse import parse_source
from compiler.library.sources import FORMATS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "task_values"

SPEC = """environment desk:
    title "Desk"

enum Status:
    open, closed

record Ticket:
    id: int
    title: str
    status: Status = Status.open
    opened: optional[date] = None

state:
    tickets: map[int, Ticket] = {}

values titles = ["VPN drops", "Printer jams"]
values counts = [1, 2, 3]
values prices = [1.5, 2.25]
values states = ["open", "closed"]
values days = ["2025-01-03", "2025-02-01"]

tool add(title: str, status: Status, count: int, price: float, cost: number, day: date, note: optional[str] = None) -> int:
    let id = next_id("ticket")
    state.tickets[id] = Ticket(id=id, title=title, status=status)
    return id
"""


def found(extra: str) -> list[tuple[str, int, int, str]]:
    """(code, line, col, severity) of every diagnostic, lines relative to `extra`."""
    first = SPEC.count("\n")
    result = analyse_source(SPEC + extra, "spec.envspec")
    return [(d.code, d.line - first, d.col, d.severity) for d in result.diagnostics]


def describe(*lines: str) -> str:
    return "describe tool add:\n" + "".join(f"    {line}\n" for line in lines)


FITTING = [
    "param title from titles",
    "param title from person_name",
    "param title from date(10)",  # a date for a str is fine
    "param status from states",
    "param count from counts",
    "param count from integer(1, 9)",
    "param price from counts",  # ints for a float
    "param price from amount(5, 500.5)",
    "param cost from prices",
    "param day from days",
    "param day from date",
    "param note from titles",  # optional[str]: checked against str
]


@pytest.mark.parametrize("line", FITTING)
def test_sources_that_fit(line: str) -> None:
    assert [f for f in found(describe(line)) if f[3] == "error"] == []


MISFITS = [
    ("param title from counts", "E3034"),
    ("param title from integer", "E3034"),
    ("param count from prices", "E3034"),
    ("param count from titles", "E3034"),
    ("param status from titles", "E3034"),  # not members
    ("param day from titles", "E3034"),  # no ISO dates
    ("param day from datetime", "E3034"),
    ("param title from titels", "E2034"),
    ("param title from titles(1)", "E2035"),
    ("param count from integer(1, 2, 3)", "E2035"),
    ('param count from integer("1")', "E2035"),
    ("param price from amount(1, 2.5)", ""),
    ("param count from integer(1.5)", "E2035"),
]


@pytest.mark.parametrize(("line", "code"), MISFITS)
def test_sources_that_do_not_fit(line: str, code: str) -> None:
    errors = [f[0] for f in found(describe(line)) if f[3] == "error"]
    assert errors == ([code] if code else [])


def test_an_unknown_source_suggests_a_name() -> None:
    result = analyse_source(SPEC + describe("param title from person_nam"), "spec.envspec")
    [error] = [d for d in result.diagnostics if d.code == "E2034"]
    assert "person_name" in error.hint


def test_a_record_field_source_is_checked_like_a_parameter() -> None:
    extra = "describe record Ticket:\n    field title from counts\n    field opened from date(5)\n"
    assert [(code, line) for code, line, _, sev in found(extra) if sev == "error"] == [("E3034", 2)]


@pytest.mark.parametrize(
    ("pool", "col"),
    [
        ("values bad = []", 1),
        ('values bad = ["a", 1]', 20),
        ("values bad = [True]", 15),
        ("values bad = [x]", 15),
        ("values bad = [1 + 2]", 15),
        ('values person_name = ["a"]', 1),
    ],
)
def test_bad_pools(pool: str, col: int) -> None:
    assert [(code, line, c) for code, line, c, sev in found(pool + "\n") if sev == "error"] == [("E2033", 1, col)]


def test_a_pool_declared_twice_is_e2001() -> None:
    assert [code for code, _, _, sev in found('values titles = ["x"]\n') if sev == "error"] == ["E2001"]


def test_negative_numbers_make_a_pool() -> None:
    result = analyse_source(SPEC + "values deltas = [-1, 2, -3]\n", "spec.envspec")
    assert result.environment is not None
    assert result.environment.value_pools["deltas"] == [-1, 2, -3]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('["a", true]', "item [1] is true"),
        ("{}", "non-empty JSON list"),
        ("[]", "non-empty JSON list"),
        ('["a", 2]', "mixes str and int values (values file `pool.json`: item [1])"),
        ("[null]", "item [0] is null"),
    ],
)
def test_pool_files_are_checked_with_file_and_index(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "pool.json").write_text(content, encoding="utf-8")
    spec = tmp_path / "spec.envspec"
    spec.write_text(SPEC + 'values pool from "pool.json"\n', encoding="utf-8")
    [error] = [d for d in analyse_file(spec).diagnostics if d.severity == "error"]
    assert error.code == "E2033" and message in error.message and "pool.json" in error.message


def test_a_missing_pool_file_is_e0003(tmp_path: Path) -> None:
    spec = tmp_path / "spec.envspec"
    spec.write_text(SPEC + 'values pool from "absent.json"\n', encoding="utf-8")
    assert [d.code for d in analyse_file(spec).diagnostics if d.severity == "error"] == ["E0003"]


# --------------------------------------------------------------------------- the warning


def warnings(extra: str) -> list[str]:
    return [d.message for d in analyse_source(SPEC + extra, "spec.envspec").diagnostics if d.severity == "warning"]


def test_a_write_tools_free_text_parameter_without_source_is_a_warning() -> None:
    assert warnings(describe("param status from states")) == [
        "parameter `title` of `add` has no source: tasks cannot give it a meaningful value",
        "parameter `note` of `add` has no source: tasks cannot give it a meaningful value",
    ]


def test_the_warning_names_the_fix_and_keeps_the_environment() -> None:
    result = analyse_source(SPEC + describe("param note from titles"), "spec.envspec")
    [warning] = result.diagnostics
    assert (warning.code, warning.severity) == ("E2039", "warning")
    assert "param title from POOL" in warning.hint
    assert result.environment is not None


def test_no_warning_for_a_spec_that_gives_no_task_values() -> None:
    plain = SPEC.split("values titles")[0] + SPEC[SPEC.index("tool add") :]
    result = analyse_source(plain, "spec.envspec")
    assert result.diagnostics == []


KEYS = """environment desk:
    title "Desk"

record Ticket:
    id: int
    owner: str

state:
    tickets: map[str, Ticket] = {}
    users: map[str, str] = {}

values words = ["a"]

tool act(a: str, b: str, c: str, d: str, e: str, f: str pattern "[a-z]+", g: str) -> None:
    require a in state.users else not_found("no")
    let t = state.tickets[b]
    require t.owner == c else not_found("no")
    let u = state.users.get(d)
    state.users[g] = "x"
    t.owner = e + f
"""


def test_parameters_used_as_keys_or_constrained_need_no_source() -> None:
    result = analyse_source(KEYS, "keys.envspec")
    assert [d.message.split("`")[1] for d in result.diagnostics if d.code == "E2039"] == ["e"]


def test_key_parameters() -> None:
    module = parse_source(KEYS, "keys.envspec").module
    assert module is not None
    assert key_parameters(module.tools[0]) == {"a", "b", "c", "d", "g"}


def test_read_only_tools_get_no_warning() -> None:
    extra = "tool find(text: str) -> int:\n    return len(text)\n"
    assert warnings(describe("param title from titles", "param note from titles") + extra) == []


# --------------------------------------------------------------------------- the environment


def test_the_environment_holds_pools_personas_sources_and_words() -> None:
    result = analyse_file(FIXTURES / "desk.envspec")
    assert result.environment is not None, result.diagnostics
    env = result.environment
    assert env.value_pools == {
        "titles": ["VPN drops every hour", "Printer on floor 3 jams"],
        "streets": ["Elm Street", "Oak Avenue"],
        "priorities": [1, 2, 3],
    }
    assert env.personas == ["I run a small office.", "I answer the phone too."]
    assert str(FIXTURES / "streets.json") in env.inputs
    create = next(t for t in env.tools if t.name == "create_ticket")
    assert create.intents == ["open one about {subject} for {owner}"]
    ticket = next(r for r in env.records if r.name == "Ticket")
    assert ticket.noun == "ticket" and [r.field for r in ticket.refers] == ["owner", "title"]


def test_every_format_is_a_source() -> None:
    """Each built-in format of the table is taken by name, with its defaults."""
    for name, format_ in FORMATS.items():
        target = {"date": "date", "datetime": "datetime"}.get(format_.result, format_.result)
        spec = SPEC.replace("day: date,", f"day: {target},")
        result = analyse_source(spec + describe(f"param day from {name}", "param title from titles"), "s.envspec")
        assert [d.code for d in result.diagnostics if d.severity == "error"] == [], name


def test_a_source_carries_the_file_that_named_it() -> None:
    result = analyse_file(FIXTURES / "desk.envspec")
    assert result.environment is not None
    owner = next(t for t in result.environment.tools if t.name == "create_ticket").params[1]
    assert isinstance(owner.values_from, ir.SourceRef) and owner.values_from.file.endswith("desk.envspec")


HELPER_KEYS = """environment desk:
    title "Desk"

record Ticket:
    id: int
    owner: str
    title: str

state:
    tickets: map[str, Ticket] = {}
    users: map[str, str] = {}

values titles = ["Printer jams"]

describe record Ticket:
    field title from titles

fn find(key: str) -> Ticket:
    require key in state.tickets else not_found("no ticket")
    return state.tickets[key]

fn outer(k: str) -> Ticket:
    return find(k)

tool act(a: str, password: str, title: str, note: str) -> None:
    let t = outer(a)
    require state.users[t.owner] == password else invalid_argument("wrong password")
    t.title = title
    t.owner = note
"""


def test_keys_passed_to_helpers_compared_to_items_or_sourced_by_a_field_need_no_source() -> None:
    result = analyse_source(HELPER_KEYS, "helper_keys.envspec")
    assert [d.message.split("`")[1] for d in result.diagnostics if d.code == "E2039"] == ["note"]
    module = parse_source(HELPER_KEYS, "helper_keys.envspec").module
    assert module is not None
    assert key_parameters(module.tools[0], {f.name: f for f in module.fns}) == {"a", "password"}
    assert key_parameters(module.tools[0]) == {"password"}  # without the helpers, `a` is only passed on
