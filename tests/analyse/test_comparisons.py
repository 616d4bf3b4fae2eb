"""The operand order both walks of a body share, and the links of a comparison chain."""

from __future__ import annotations

import pytest

from compiler import ir
from compiler.analyse.comparisons import chain_links, operand_order


def name(id_: str) -> ir.Name:
    return ir.Name(id=id_)


def const(value: str | int) -> ir.Const:
    return ir.Const(value=value)


@pytest.mark.parametrize("op", ["in", "not in"])
def test_membership_looks_at_the_container_first(op: str) -> None:
    item, container = name("x"), name("xs")
    assert operand_order(ir.Binary(op=op, left=item, right=container)) == (container, item)


@pytest.mark.parametrize("op", ["==", "<="])
def test_a_literal_on_the_left_of_a_comparison_comes_second(op: str) -> None:
    literal, other = const("2025-01-01"), name("d")
    assert operand_order(ir.Binary(op=op, left=literal, right=other)) == (other, literal)


@pytest.mark.parametrize(
    ("op", "left", "right"),
    [
        ("==", name("d"), const("a")),  # literal already second
        ("==", const(1), const(2)),  # both literals: as written
        ("+", const(1), name("n")),  # arithmetic: as written
        ("is", const(1), name("n")),  # not a chainable comparison
    ],
)
def test_other_operands_are_visited_as_written(op: str, left: ir.Expr, right: ir.Expr) -> None:
    assert operand_order(ir.Binary(op=op, left=left, right=right)) == (left, right)


def test_chain_links_share_the_operand_between_them() -> None:
    a, b, c = name("a"), name("b"), name("c")
    links = chain_links(ir.Compare(ops=["<", "<="], operands=[a, b, c]))
    assert [(link.op, link.left, link.right) for link in links] == [("<", a, b), ("<=", b, c)]
    assert links[0].right is links[1].left
