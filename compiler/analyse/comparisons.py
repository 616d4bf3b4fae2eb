"""Comparisons as both walks of a typed body see them, the type checker's
(`compiler/analyse/types/`) and the effects pass's (`effects.EffectWalker`): the order the
operands of a binary expression are visited in, and the links of a comparison chain.
The two walks must agree on the order, for the first node reported for a state field
to be the same either way."""

from __future__ import annotations

from compiler import ir

LITERALS = ("const", "list", "map")
"""Expression kinds that take their type from the other side of a comparison."""

CHAINABLE = ("==", "!=", "<", "<=", ">", ">=")
"""The comparisons a chain may link (`a == b == c`, `0 <= p < 1`); `in` and `is` stand alone."""


def chain_links(expr: ir.Compare) -> list[ir.Binary]:
    """The comparisons of a chain, `a < b <= c` as `a < b` and `b <= c`; neighbouring
    links share the operand between them (the same node, not a copy)."""
    return [
        ir.Binary(
            op=op,
            left=left,
            right=right,
            line=left.line,
            col=left.col,
            end_line=right.end_line,
            end_col=right.end_col,
        )
        for op, left, right in zip(expr.ops, expr.operands, expr.operands[1:])
    ]


def operand_order(expr: ir.Binary) -> tuple[ir.Expr, ir.Expr]:
    """The order the operands of a binary expression are checked in: `in` looks at its
    container first, and `==` at the side that is not a literal first (the literal then
    takes that side's type; so in an ordering, `"2025-01-01" <= d`). The effects pass
    visits them in the same order."""
    if expr.op in ("in", "not in"):
        return expr.right, expr.left
    if expr.op in CHAINABLE and expr.left.kind in LITERALS and expr.right.kind not in LITERALS:
        return expr.right, expr.left
    return expr.left, expr.right
