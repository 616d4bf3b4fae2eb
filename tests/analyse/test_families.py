"""Task families in the analysis (compiler/analyse/families.py): the fixture spec checks
clean, and each way of breaking a family gives its diagnostic where the problem is."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import ir
from compiler.analyse import analyse_file, analyse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "families"
SPEC = FIXTURES / "shop_families.envspec"
TEXT = SPEC.read_text(encoding="utf-8")


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_the_fixture_analyses_clean_with_its_families_in_the_environment() -> None:
    result = analyse_file(SPEC)
    assert [d for d in result.diagnostics if d.severity == "error"] == []
    assert result.environment is not None
    families = result.environment.families
    assert [(f.name, f.kind, f.reward) for f in families] == [
        ("cancel_by_product", "bulk", "partial"),
        ("book_first_free", "branch", "binary"),
    ]
    # the plan's random draws give the spec the generator's state field
    assert "rng_state" in {f.name for f in result.environment.state}


def test_inherited_families_analyse_in_the_extending_spec() -> None:
    result = analyse_file(FIXTURES / "shop_extended.envspec")
    assert [d for d in result.diagnostics if d.severity == "error"] == []
    assert result.environment is not None
    assert [f.name for f in result.environment.families] == ["book_first_free", "cancel_one", "cancel_two"]


def test_plan_values_are_typed_in_the_solution_and_verify() -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    family = result.environment.families[0]
    verify = family.verify[1]
    assert verify.over is not None and verify.over.ty is not None and verify.over.ty.name == "list"
    names = [n for n in _names(family.verify[0].cond) if n.id == "product"]
    assert names and all(n.ref == "local" and n.ty is not None and n.ty.name == "str" for n in names)


def _names(expr: ir.Expr) -> list[ir.Name]:
    from compiler.ir.tree import walk

    return [n for n in walk(expr) if isinstance(n, ir.Name)]


BROKEN = {
    "slot names no value": (
        "has a {product} in it",
        "has a {prodcut} in it",
        "E2040",
        "has a {prodcut}",
        len('    request "Cancel every pending order that has a ') + 1,
    ),
    "lone brace": ("has a {product} in it", "has a {product in it", "E2040", "has a {product in", 0),
    "tool in plan": (
        '        let who = random_choice(["Dana Ruiz", "Li Wei"])\n',
        '        let who = random_choice(["Dana Ruiz", "Li Wei"])\n        let seen = list_orders()\n',
        "E3005",
        "let seen = list_orders()",
        len("        let seen = ") + 1,
    ),
    "tool in verify": (
        "    verify len([r for r",
        "    verify len(list_orders()) > 0 and len([r for r",
        "E3005",
        "verify len(list_orders())",
        len("    verify len(") + 1,
    ),
    "require without else in a tool": (
        'require order_id in orders else not_found(f"no order {order_id}", entity="order")',
        "require order_id in orders",
        "E1002",
        "require order_id in orders\n",
        5,
    ),
    "solution calls only read tools": (
        "                cancel_order(order_id=o.id)",
        "                pass",
        "E5003",
        "    solution:\n        for o in list_orders():",
        5,
    ),
    "solution writes state itself": (
        '        require booked.hour == hour else conflict("booked the wrong hour")',
        '        state.rooms[0].booked_by = "x"',
        "E3008",
        'state.rooms[0].booked_by = "x"',
        9,
    ),
    "unknown scenario": (
        "    scenario busy_week\n    reward",
        "    scenario busy_wek\n    reward",
        "E2010",
        "scenario busy_wek",
        5,
    ),
    "unknown kind": ("kind bulk", "kind bulky", "E2041", "kind bulky", 5),
    "weight not positive": ("weight 2", "weight 0.0", "E2041", "weight 0.0", 5),
    "line given twice": ("kind bulk", "kind bulk\n    kind bulk", "E2017", "kind bulk\n    kind bulk", 5),
    "no request": (
        '    request "Book Fjord for {who} at 10:00, or at 11:00 if 10:00 is taken."\n',
        "",
        "E5003",
        "family book_first_free:",
        1,
    ),
    "each over a non-list": ("each id in ids:", "each id in product:", "E3004", "each id in product:", 0),
    "family declared twice": ("family book_first_free:", "family cancel_by_product:", "E2001", "", 0),
}
"""A change to the fixture (old text, new text), the diagnostic it gives and where: the
line holding the marker text (no marker: anywhere) and the column (0: any)."""


@pytest.mark.parametrize("case", sorted(BROKEN), ids=sorted(BROKEN))
def test_a_broken_family_is_reported_where_it_breaks(case: str) -> None:
    old, new, code, marker, col = BROKEN[case]
    assert old in TEXT
    text = TEXT.replace(old, new, 1)
    result = analyse_source(text, str(SPEC))
    assert result.environment is None
    found = [(d.code, d.line, d.col) for d in result.diagnostics if d.severity == "error"]
    assert code in [c for c, _, _ in found], found
    if marker:
        line = line_of(text, marker) + (1 if case == "line given twice" else 0)  # the second of the two
        hits = [(ln, c) for c2, ln, c in found if c2 == code]
        assert any(ln == line and (col == 0 or c == col) for ln, c in hits), (hits, line, col)
