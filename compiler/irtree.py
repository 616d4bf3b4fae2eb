"""Traversal of IR trees: every node below a node, the direct sub-expressions of an
expression, the names a body calls. Shared by loading (renames), the analysis passes
and lowering, which all walk the same trees."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel

from compiler import ir

_N = TypeVar("_N", bound=BaseModel)

_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def construct(cls: type[_N], values: dict[str, Any], fields_set: set[str]) -> _N:
    """What `cls.model_construct` does, without its per-field loop: `values` holds every
    field in the model's order (defaults included) and `fields_set` the names the
    validating constructor would have been given. The slots are set through their
    descriptors, a third cheaper than `object.__setattr__` (which looks each one up):
    the fast parser builds 23,000 nodes on a 5,000-line spec, the analysis thousands of
    types. The IR forbids extra fields and has no private attributes, hence the Nones."""
    node = _new(cls)
    _set_dict(node, values)
    _set_fields_set(node, fields_set)
    _set_extra(node, None)
    _set_private(node, None)
    return node


def walk(node: Any) -> Iterator[Any]:
    """Every IR node below `node` (iteratively, so deep trees cannot overflow).

    A node's fields are read from its `__dict__`, which holds exactly its fields in the
    model's order (the IR forbids extra fields; validated and fast-parsed nodes alike):
    the same values as `model_fields` and a `getattr` each, at a fraction of the cost
    (this walk is shared by loading, every analysis pass and lowering)."""
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        if isinstance(item, list):
            extend(reversed(item))
        elif isinstance(item, BaseModel):
            yield item
            for value in item.__dict__.values():
                if isinstance(value, (list, BaseModel)):
                    push(value)


def called_names(body: list[ir.Stmt]) -> set[str]:
    """Names called as functions anywhere in a body (helpers, tools, built-ins)."""
    return {n.func.id for n in walk(body) if isinstance(n, ir.Call) and isinstance(n.func, ir.Name)}


def children(expr: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of an expression, in field order."""
    found: list[ir.Expr] = []
    for name, value in expr.__dict__.items():  # the fields in order, as `walk` reads them
        if name == "ty":
            continue
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
