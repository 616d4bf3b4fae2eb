"""Traversal of IR trees: every node below a node, the direct sub-expressions of an
expression, the names a body calls. Shared by loading (renames), the analysis passes
and lowering, which all walk the same trees."""

from __future__ import annotations

from collections.abc import Iterator
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

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
    (this walk is shared by loading, every analysis pass and lowering), and only those
    that may hold a node (`walked_fields_of`: a rename's walk of a prototype spent half
    its time looking at positions and names)."""
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        if item.__class__ is list:
            extend(reversed(item))
        elif isinstance(item, BaseModel):
            yield item
            values = item.__dict__
            fields = WALKED_FIELDS.get(item.__class__)
            for name in fields if fields is not None else walked_fields_of(item.__class__):
                value = values[name]
                if value.__class__ is list or isinstance(value, BaseModel):
                    push(value)


def called_names(body: list[ir.Stmt]) -> set[str]:
    """Names called as functions anywhere in a body (helpers, tools, built-ins)."""
    return {n.func.id for n in walk(body) if isinstance(n, ir.Call) and isinstance(n.func, ir.Name)}


def calls_in(node: Any) -> list[ir.Call]:
    """The calls anywhere below `node` (in no particular order): `walk` reading only the
    fields that may hold nodes (`node_fields_of`), for the type checker's questions about
    what an expression calls."""
    found: list[ir.Call] = []
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        cls = item.__class__
        if cls is list:
            extend(item)
            continue
        fields = NODE_FIELDS.get(cls)
        if fields is None:
            if not isinstance(item, BaseModel):
                continue  # the text of an f-string
            fields = node_fields_of(cls)
        if cls is ir.Call:
            found.append(item)
        values = item.__dict__
        for name in fields:
            value = values[name]
            if value is not None:
                push(value)
    return found


def children(expr: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of an expression, in field order."""
    found: list[ir.Expr] = []
    values = expr.__dict__
    cls = expr.__class__
    fields = NODE_FIELDS.get(cls)  # (`ty`, a type, is not among them)
    if fields is None:
        fields = node_fields_of(cls)
    for name in fields:
        value = values[name]
        for item in value if value.__class__ is list else (value,):
            if isinstance(item, ir.ExprBase):
                found.append(item)  # type: ignore[arg-type]
            elif item.__class__ is ir.MapEntry or item.__class__ is ir.Keyword:
                found.extend(children(item))  # type: ignore[arg-type]
    return found


NODE_FIELDS: dict[type, tuple[str, ...]] = {}
"""`node_fields_of` by class, as computed."""
_LEAVES = (int, str, bool, float, type(None), ir.TypeRef)


def node_fields_of(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of an IR class that may hold a node or a list of them, in field order:
    all but those annotated as numbers, strings, flags, literals or types, a union of
    these (a constant's value) or a list of them (loop targets); no call sits in a type.
    The walks that look for calls or sub-expressions read only these."""
    fields = tuple(name for name, info in cls.model_fields.items() if not _is_leaf(info.annotation))
    NODE_FIELDS[cls] = fields
    return fields


WALKED_FIELDS: dict[type, tuple[str, ...]] = {}
"""`walked_fields_of` by class, as computed."""
_SCALARS = (int, str, bool, float, type(None))


def walked_fields_of(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of an IR class that may hold a node (types included) or a list of
    them, in field order: the ones `walk` reads."""
    fields = tuple(name for name, info in cls.model_fields.items() if not _is_leaf(info.annotation, _SCALARS))
    WALKED_FIELDS[cls] = fields
    return fields


def _is_leaf(annotation: Any, leaves: tuple[Any, ...] = _LEAVES) -> bool:
    if annotation in leaves or get_origin(annotation) is Literal:
        return True
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType, list) else ()
    return bool(members) and all(_is_leaf(member, leaves) for member in members)


def is_state_attr(expr: ir.Expr) -> bool:
    """The explicit `state.field` form (after name resolution)."""
    return (
        isinstance(expr, ir.Attr)
        and isinstance(expr.obj, ir.Name)
        and expr.obj.id == "state"
        and expr.obj.ref == "state"
    )
