"""Unions of records told apart by a tag field (`union Payment by source:`), resolved
after the declared types: each member gets the tag field with its fixed value, and the
union gets the fields a value of it surely has (the tag, and those every member has
alike), so the rest of the analyser and lowering treat it as a record with members."""

from __future__ import annotations

from compiler import ir
from compiler.analyse.context import Analysis
from compiler.ir import typesys as ts
from compiler.library import builtins as bi


def resolve_unions(a: Analysis) -> None:
    owners: dict[str, str] = {}  # member record -> its union
    for union in [r for r in a.records.values() if r.is_union]:
        file = union.file or a.module.path
        reason = bi.field_reason(union.tag)
        if reason is not None:  # the tag is a field of every member
            a.error("E2014", reason, union, file, hint="choose another name")
        members: list[ir.RecordDecl] = []
        for name, value in union.members.items():
            member = a.records.get(name)
            if member is None or member.is_union:
                what = "a union" if member is not None else "not a record"
                a.error("E3033", f"`{name}` is {what}: a union's members are records", union, file)
                continue
            if name in owners:
                a.error("E3033", f"record {name} is already a member of union {owners[name]}", union, file)
                continue
            injected = bool(member.fields) and member.fields[0].tag == value and member.fields[0].name == union.tag
            if not injected and any(f.name == union.tag for f in member.fields):
                a.error(
                    "E3033",
                    f"record {name} declares `{union.tag}`, the tag field of union {union.name}",
                    member,
                    member.file or a.module.path,
                    hint="leave the tag field out of the member: the union adds it with the member's value",
                )
                continue
            owners[name] = union.name
            if not injected:  # (a module analysed again keeps the field it was given)
                member.fields.insert(0, _tag_field(union, value))
            members.append(member)
        union.fields = [ir.Field_(name=union.tag, type=ts.STR, **_place(union)), *_common_fields(union, members)]


def _tag_field(union: ir.RecordDecl, value: str) -> ir.Field_:
    default = ir.Const(value=value, ty=ts.STR, **_place(union))
    return ir.Field_(name=union.tag, type=ts.STR, default=default, tag=value, **_place(union))


def _common_fields(union: ir.RecordDecl, members: list[ir.RecordDecl]) -> list[ir.Field_]:
    """The fields every member has, of one type, all absent-able or none: those a value
    of the union has whatever member it is."""
    if not members:
        return []
    common = []
    for field_ in members[0].fields[1:]:
        alike = [next((f for f in m.fields if f.name == field_.name), None) for m in members[1:]]
        if all(f is not None and ts.same(f.type, field_.type) and f.absent == field_.absent for f in alike):
            common.append(ir.Field_(name=field_.name, type=field_.type, absent=field_.absent, **_place(union)))
    return common


def member_with(union: ir.RecordDecl, field_name: str, records: dict[str, ir.RecordDecl]) -> list[str]:
    """The members of a union that have a field (for a hint: narrow to one of them)."""
    return [m for m in union.members if m in records and any(f.name == field_name for f in records[m].fields)]


def _place(node: ir.Node) -> dict[str, int]:
    return {"line": node.line, "col": node.col, "end_line": node.line, "end_col": node.col}


def fields_deleted(a: Analysis) -> dict[str, set[str] | None]:
    """Per helper, the field names a call of it may `del` (through the helpers it calls
    too); None for one with a python or llm body, which may delete anything. A presence
    test does not survive such a call: the helper may have the same record."""
    fns = a.fns
    direct: dict[str, set[str] | None] = {}
    calls: dict[str, set[str]] = {}
    for name, fn in fns.items():
        if fn.escape is not None:
            direct[name] = None
            continue
        direct[name] = set(a.deleted_fields_of(fn.body))
        calls[name] = a.called_names(fn.body) & fns.keys()
    result: dict[str, set[str] | None] = {}
    for name in fns:
        found: set[str] | None = set()
        seen, stack = {name}, [name]
        while stack and found is not None:
            current = stack.pop()
            own = direct[current]
            found = None if own is None else found | own
            for callee in calls.get(current, set()) - seen:
                seen.add(callee)
                stack.append(callee)
        result[name] = found
    return result
