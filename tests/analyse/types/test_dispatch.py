"""The type checker has a method for every kind of expression and statement of the IR,
found by the node's class."""

from __future__ import annotations

import typing

from compiler import ir
from compiler.analyse.types.calls import CallChecker
from compiler.analyse.types.dispatch import methods_by_class
from compiler.analyse.types.statements import StatementChecker


def node_classes(union: object) -> set[type]:
    """The classes of an `Annotated[A | B | ..., discriminator]` union of the IR."""
    members = typing.get_args(typing.get_args(union)[0])
    return {cls for cls in members if isinstance(cls, type)}


def test_every_expression_class_has_its_method() -> None:
    table = methods_by_class(CallChecker, "expr_")
    classes = node_classes(ir.Expr)
    assert {ir.Name, ir.Call, ir.Lambda} <= classes
    missing = classes - set(table)
    assert not missing, sorted(cls.__name__ for cls in missing)
    assert table[ir.Call] is CallChecker.expr_call
    assert table[ir.Name].__name__ == "expr_name"


def test_every_statement_class_has_its_method() -> None:
    table = methods_by_class(StatementChecker, "stmt_")
    classes = node_classes(ir.Stmt)
    assert {ir.Let, ir.If, ir.For} <= classes
    missing = classes - set(table)
    assert not missing, sorted(cls.__name__ for cls in missing)
    assert table[ir.If] is StatementChecker.stmt_if
