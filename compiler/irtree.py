"""Traversal of IR trees: every node below a node, the direct sub-expressions of an
expression, the names a body calls. Shared by loading (renames), the analysis passes
and lowering, which all walk the same trees."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from compiler import ir


def walk(node: Any) -> Iterator[Any]:
    """Every IR node below `node` (iteratively, so deep trees cannot overflow)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, BaseModel):
            yield item
            for name in type(item).model_fields:
                value = getattr(item, name)
                if isinstance(value, (list, BaseModel)):
                    stack.append(value)


def called_names(body: list[ir.Stmt]) -> set[str]:
    """Names called as functions anywhere in a body (helpers, tools, built-ins)."""
    return {n.func.id for n in walk(body) if isinstance(n, ir.Call) and isinstance(n.func, ir.Name)}


def children(expr: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of an expression, in field order."""
    found: list[ir.Expr] = []
    for name in type(expr).model_fields:
        if name == "ty":
            continue
        value = getattr(expr, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, ir.ExprBase):
                found.append(item)  # type: ignore[arg-type]
            elif isinstance(item, (ir.MapEntry, ir.Keyword)):
                found.extend(children(item))  # type: ignore[arg-type]
    return found


def is_state_attr(expr: ir.Expr) -> bool:
    """The explicit `state.field` form (after name resolution)."""
    return (
        isinstance(expr, ir.Attr)
        and isinstance(expr.obj, ir.Name)
        and expr.obj.id == "state"
        and expr.obj.ref == "state"
    )
