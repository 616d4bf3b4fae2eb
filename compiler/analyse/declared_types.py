"""Types as declarations write them (fields, parameters, results, `let` annotations):
checked and resolved to their canonical, position-free form; records that contain
themselves with no end refused. The symbols pass resolves the declared ones; the load step and the
types pass resolve the ones they meet (load options, `let x: T`)."""

from __future__ import annotations

from compiler import ir
from compiler.analyse.context import Analysis, set_field
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.ir.recursion import endless_records

ARITY = {"list": 1, "map": 2, "set": 1, "optional": 1}
"""The generic types, and how many type arguments each takes."""

PRIMITIVE_TYPES = {name: ts.t(name) for name in (*ts.PRIMITIVES, "None")}
"""The canonical primitive types, one object each like `typesys.STR` (types are not
changed in place): most written types are one of these, and building each anew was a
third of `resolve_declared_types`."""


def resolve_type(a: Analysis, ref: ir.TypeRef, file: str) -> ir.TypeRef:
    """Check a written type and return its canonical (position-free) form."""
    name, args = ref.name, ref.args
    if not args and name in PRIMITIVE_TYPES:
        return PRIMITIVE_TYPES[name]
    if name in ARITY:
        if len(args) != ARITY[name]:
            a.error(
                "E3002",
                f"`{name}` takes {ARITY[name]} type argument{'s' if ARITY[name] > 1 else ''}, got {len(args)}",
                ref,
                file,
            )
            return ts.ANY
        resolved = [resolve_type(a, arg, file) for arg in args]
        if name == "map" and resolved[0].name not in ("str", "int", "json", "any") and resolved[0].name not in a.enums:
            a.error("E3003", f"map keys cannot be {ts.show(resolved[0])}", args[0], file)
        if name == "set" and resolved[0].name not in (*ts.SET_ITEMS, "any") and resolved[0].name not in a.enums:
            a.error("E3003", f"set items cannot be {ts.show(resolved[0])}; they are str, int or an enum", args[0], file)
        if name == "optional":
            return ts.optional(resolved[0])
        return ts.t(name, *resolved)
    if args:
        a.error("E3002", f"`{name}` takes no type arguments", ref, file)
        return ts.ANY
    if name in a.enums or name in a.records:
        return ts.t(name)
    known = [*ts.PRIMITIVES, "list", "map", "set", "optional", *a.enums, *a.records]
    a.error("E2003", f"unknown type `{name}`", ref, file, hint=did_you_mean(name, known))
    return ts.ANY


def resolve_declared_types(a: Analysis) -> None:
    for record in a.records.values():
        for field_ in record.fields:
            set_field(field_, "type", resolve_type(a, field_.type, record.file or a.module.path))
    check_record_cycles(a)
    for name, field_ in a.state.items():
        set_field(field_, "type", resolve_type(a, field_.type, a.state_file(name)))
    for world_field in a.world.values():
        set_field(world_field, "type", resolve_type(a, world_field.type, a.world_file(world_field)))
    for callable_ in [*a.fns.values(), *a.tools.values()]:
        for param in callable_.params:
            set_field(param, "type", resolve_type(a, param.type, callable_.file))
        set_field(callable_, "returns", resolve_type(a, callable_.returns, callable_.file))


def check_record_cycles(a: Analysis) -> None:
    """Values are finite trees: a record may hold itself through a container, an
    optional or an absent-able field, never through fields that are always there."""
    for name in endless_records(a.records):
        record = a.records[name]
        a.error("E3023", f"record {name} contains itself with no end", record, record.file or a.module.path)
