"""The `family` declaration in the front end: both parsers build the same IR for it, the
formatter round-trips it, loading inherits, replaces and drops families, and the lines a
family may give once are refused when repeated (docs/language.md §22.2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_parse_fast import HEADER, compare  # tests/ is on the path: the parser comparison

from compiler import ir
from compiler.front.fmt import POSITION_KEYS, format_source
from compiler.front.load import load_file
from compiler.front.parse import parse_source

TESTS = Path(__file__).resolve().parent.parent
FIXTURES = TESTS / "fixtures" / "families"

FAMILY_SNIPPETS = [
    'family f:\n    """Doc."""\n    kind bulk\n    scenario s\n    reward partial\n    plan:\n        let x = 1\n'
    "        require x > 0\n        state.n = x\n"
    '    request "Do {x}."\n    request """Or {x}, {{braces}}."""\n    solution:\n        t(a=x)\n'
    "    verify n == x\n    verify each i in [x]: i > 0 weight 2.5\n    verify n > 0 weight 1_0\n",
    'family kind:\n    verify each each in kind: each == weight\n    request "r"\n    plan:\n        let plan = kind\n',
    "tool t(kind: int, reward: int, plan: int, each: int, weight: int, family: int) -> int:\n"
    "    if kind > 0:\n        pass\n    kind = reward\n    plan = each\n    return weight + family\n",
    'record family:\n    "doc"\n    kind: int\n    reward?: list[plan]\n',
    "drop family f\ndrop task t\n",
    'family f:\n    "doc"\n    solution:\n        if a:\n            b(x=1)\n        c(y=2)\n    verify x weight 3\n',
]
"""Families and their words used as names elsewhere: the fast parser takes them all."""


@pytest.mark.parametrize("text", FAMILY_SNIPPETS, ids=range(len(FAMILY_SNIPPETS)))
def test_both_parsers_build_the_same_family_ir(text: str) -> None:
    assert compare(HEADER + text) == "same"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.envspec")), ids=lambda p: p.name)
def test_family_fixtures_parse_fast_to_the_same_ir(path: Path) -> None:
    assert compare(path.read_text(encoding="utf-8")) == "same"


MALFORMED = [
    "family f:\n    kind bulk\n    kind branch\n",
    "family f:\n    kind bulky\n",
    "family f:\n    reward half\n",
    "family f:\n    verify x weight -1\n",
    "family f:\n    verify each x in y z\n",
    'family f:\n    request f"{x}"\n',
    "family f:\n    plan:\n        let x = 1\n    plan:\n        let y = 2\n",
]


@pytest.mark.parametrize("text", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_families_are_lark_s_to_report(text: str) -> None:
    assert compare(HEADER + text) == "lark refuses"


def test_a_repeated_line_and_an_unknown_kind_are_reported_where_they_are() -> None:
    result = parse_source(HEADER + "family f:\n    kind bulky\n    reward partial\n    reward binary\n", "x.envspec")
    found = [(d.code, d.line, d.col) for d in result.diagnostics]
    first = HEADER.count("\n") + 1
    assert found == [("E2041", first + 1, 5), ("E2017", first + 3, 5)]


def test_family_fields_as_written() -> None:
    module = parse_source(HEADER + FAMILY_SNIPPETS[0], "x.envspec").module
    assert module is not None
    family = module.families[0]
    assert (family.name, family.doc, family.kind, family.scenario, family.reward) == (
        "f",
        "Doc.",
        "bulk",
        "s",
        "partial",
    )
    assert [type(s).__name__ for s in family.plan] == ["Let", "Require", "Assign"]
    assert isinstance(family.plan[1], ir.Require) and family.plan[1].error is None
    assert family.requests == ["Do {x}.", "Or {x}, {{braces}}."]
    assert [(v.each, v.weight) for v in family.verify] == [("", 1.0), ("i", 2.5), ("", 10.0)]
    assert sorted(family.item_places) == ["kind", "plan", "reward", "scenario", "solution"]
    assert [p.line for p in family.request_places] == [family.line + 9, family.line + 10]


ROUND_TRIP = [FAMILY_SNIPPETS[0], FAMILY_SNIPPETS[1], FAMILY_SNIPPETS[5]]


@pytest.mark.parametrize("text", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_fmt_round_trips_families(text: str) -> None:
    formatted = format_source(HEADER + text, "x.envspec").text
    assert formatted is not None
    assert format_source(formatted, "x.envspec").text == formatted
    before = parse_source(HEADER + text, "x.envspec").module
    after = parse_source(formatted, "x.envspec").module
    assert before is not None and after is not None
    assert _without_positions(before.families) == _without_positions(after.families)


def _without_positions(families: list[ir.FamilyDecl]) -> object:
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in POSITION_KEYS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip([f.model_dump() for f in families])


def test_fmt_keeps_the_fixture_as_written() -> None:
    path = FIXTURES / "shop_families.envspec"
    text = path.read_text(encoding="utf-8")
    formatted = format_source(text, str(path)).text
    assert formatted is not None
    assert format_source(formatted, str(path)).text == formatted
    assert "    verify each id in ids: orders[id].status == OrderStatus.cancelled weight 2\n" in formatted


def test_families_are_inherited_replaced_in_place_and_dropped() -> None:
    loaded = load_file(FIXTURES / "shop_extended.envspec")
    assert loaded.diagnostics == []
    assert loaded.module is not None
    families = loaded.module.families
    assert [f.name for f in families] == ["book_first_free", "cancel_one", "cancel_two"]
    assert families[0].kind == "lookup" and families[0].file.endswith("shop_extended.envspec")


def test_dropping_a_family_the_prototype_lacks_is_e2012(tmp_path: Path) -> None:
    (tmp_path / "proto.envspec").write_text(
        (FIXTURES / "shop_families.envspec").read_text(encoding="utf-8"), encoding="utf-8"
    )
    spec = tmp_path / "child.envspec"
    spec.write_text('environment child:\n    extends "proto.envspec"\n\ndrop family nothing_here\n', encoding="utf-8")
    loaded = load_file(spec)
    assert [(d.code, d.line) for d in loaded.diagnostics] == [("E2012", 4)]


def test_mutated_families_agree() -> None:
    """Mutants of the fixtures' families (a word swapped for a keyword, a snippet put in,
    a token taken out, the indentation changed): both parsers accept them alike, or both
    refuse (4,000 of them agreed when this was written; 500 here)."""
    import random

    from test_parse_fast import _declarations, _mutant

    families = [
        declaration
        for path in sorted(FIXTURES.glob("*.envspec"))
        for declaration in _declarations(path.read_text(encoding="utf-8"))
        if declaration.startswith("family ")
    ]
    assert len(families) >= 4
    rng = random.Random(22)
    outcomes = [compare(HEADER + _mutant(rng.choice(families), rng)) for _ in range(500)]
    assert outcomes.count("same") > 120 and outcomes.count("lark refuses") > 120
