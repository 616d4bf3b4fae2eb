"""What a condition shows when it is true or false, as mypy narrows the generated code:
locals not None, fields that may be absent present, union members told apart by their
tag. The checker narrows a branch's, a ternary's or an `and`'s scope by it."""

from __future__ import annotations

from compiler import ir
from compiler.analyse.comparisons import chain_links
from compiler.analyse.types.scopes import BodyScopes
from compiler.ir import typesys as ts


def narrowing(cond: ir.Expr, positive: bool, checker: BodyScopes) -> dict[str, ir.TypeRef]:
    """Locals known not to be None when `cond` is true (positive) or false."""
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return narrowing(cond.operand, not positive, checker)
    if isinstance(cond, ir.Binary):
        if (
            cond.op in ("is not", "!=", "is", "==")
            and isinstance(cond.right, ir.Const)
            and cond.right.value is None
            and isinstance(cond.left, ir.Name)
        ):
            not_none = cond.op in ("is not", "!=")
            if not_none == positive:
                local = checker.lookup(cond.left.id)
                if local is not None and ts.is_optional(local.type):
                    return {cond.left.id: ts.strip_optional(local.type)}
            return {}
        if cond.op in ("in", "not in") and isinstance(cond.left, ir.Const) and isinstance(cond.right, ir.Name):
            return _presence(cond, positive, checker)
        if cond.op in ("==", "!=") and isinstance(cond.left, ir.Attr) and isinstance(cond.right, ir.Const):
            return _member_narrowing(cond, positive, checker)
        if (cond.op == "and" and positive) or (cond.op == "or" and not positive):
            left = narrowing(cond.left, positive, checker)
            if checker.may_delete_fields(cond.right):  # `"f" in x and forget(x) and x.f`: gone
                left = {name: ty for name, ty in left.items() if "." not in name}
            checker.push(left)  # the right operand is read narrowed by the left (`p.source == "cash" and "note" in p`)
            right = narrowing(cond.right, positive, checker)
            checker.pop()
            return {**left, **right}
    if isinstance(cond, ir.Compare) and positive:  # a true chain: every link is true
        narrowed: dict[str, ir.TypeRef] = {}
        for link in chain_links(cond):
            narrowed.update(narrowing(link, True, checker))
        return narrowed
    return {}


def _presence(cond: ir.Binary, positive: bool, checker: BodyScopes) -> dict[str, ir.TypeRef]:
    """`"field" in x` (true) or `"field" not in x` (false): the field of local `x`, which
    may be absent, is present; keyed `x.field` (see `scopes.PRESENT`)."""
    assert isinstance(cond.left, ir.Const) and isinstance(cond.right, ir.Name)
    local = checker.lookup(cond.right.id)
    if local is None or (cond.op == "in") != positive:
        return {}
    record = checker.records.get(ts.strip_optional(local.type).name)
    field_ = next((f for f in record.fields if f.name == cond.left.value), None) if record else None
    if field_ is None or not field_.absent:
        return {}
    return {f"{cond.right.id}.{field_.name}": field_.type}


def _member_narrowing(cond: ir.Binary, positive: bool, checker: BodyScopes) -> dict[str, ir.TypeRef]:
    """`p.source == "credit_card"` (true) or `!=` (false), `p` a local of a union: `p` is
    that member. The other way round the member is ruled out (keyed `p!Card`, see
    `scopes.EXCLUDED`), and once all members but one are, `p` is that one."""
    assert isinstance(cond.left, ir.Attr) and isinstance(cond.right, ir.Const)
    obj = cond.left.obj
    local = checker.lookup(obj.id) if isinstance(obj, ir.Name) else None
    union = checker.records.get(local.type.name) if local is not None else None
    if not isinstance(obj, ir.Name) or union is None or not union.is_union or cond.left.name != union.tag:
        return {}
    member = next((m for m, value in union.members.items() if value == cond.right.value), None)
    if member is None:
        return {}
    if (cond.op == "==") == positive:
        return {obj.id: ts.t(member)}
    excluded = {member, *(m for m in union.members if checker.is_excluded(obj.id, m))}
    remaining = [m for m in union.members if m not in excluded]
    narrowed = {f"{obj.id}!{member}": ts.ANY}
    return {**narrowed, obj.id: ts.t(remaining[0])} if len(remaining) == 1 else narrowed
