"""Type-directed copies and JSON converters of generated values: `copy_state`'s deep
copies, and one detaching converter per return type (`_json_Ticket`), shared by every
tool that returns that type."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from compiler import ir
from compiler.ir import typesys as ts
from compiler.lower import schema
from compiler.lower.agent_limits import MAX_INT
from compiler.lower.literals import py_str, py_value
from compiler.lower.pytypes import TypeNames


def copy_expr(source: str, ty: ir.TypeRef, records: dict[str, ir.RecordDecl], prefix: str = "") -> str:
    """An expression copying `source` of type `ty` as deep as its containers go; a
    record's copier is reached through `prefix` ("environment." in tests)."""
    base = ts.strip_optional(ty)
    if not ts.is_container(base, records):
        return source
    inner = _copy_inner(source, base, records, 0, prefix)
    if base is not ty and ts.is_optional(ty):
        return f"None if {source} is None else {inner}"
    return inner


def _copy_inner(source: str, ty: ir.TypeRef, records: dict[str, ir.RecordDecl], depth: int, prefix: str) -> str:
    if ty.name == "optional":
        return copy_expr(source, ty, records, prefix)
    if ty.name in records:
        return f"{prefix}_copy_{ty.name}({source})"
    if ty.name in ("json", "any"):
        return f"copy_json({source})"
    var = "abcdefgh"[depth % 8] if depth < 8 else f"v{depth}"
    if ty.name == "set":
        return f"set({source})"
    if ty.name == "list":
        item = ty.args[0]
        if not ts.is_container(item, records):
            return f"list({source})"
        return f"[{copy_expr(var, item, records, prefix)} for {var} in {source}]"
    if ty.name == "map":
        value = ty.args[1]
        if not ts.is_container(value, records):
            return f"dict({source})"
        key = f"k{depth}"
        return f"{{{key}: {copy_expr(var, value, records, prefix)} for {key}, {var} in {source}.items()}}"
    return source


def has_absent(record: ir.RecordDecl) -> bool:
    """Whether a record has a field whose key may be absent (`name?: T`)."""
    return any(f.absent for f in record.fields)


def copy_lines(record: ir.RecordDecl, records: dict[str, ir.RecordDecl]) -> str:
    """The body of `_copy_NAME` for a record with containers and a field that may be
    absent: a shallow copy (its keys in their order, absent ones left out), then each
    container replaced by its copy where it is there."""
    lines = ["    copied = value.copy()"]
    for f in record.fields:
        if ts.is_container(f.type, records):
            key = py_str(f.name)
            step = f"copied[{key}] = {copy_expr(f'value[{key}]', f.type, records)}"
            lines += [f"    if {key} in value:", f"        {step}"] if f.absent else [f"    {step}"]
    return "\n".join([*lines, "    return copied"]) + "\n"


def json_expr(
    source: str,
    ty: ir.TypeRef,
    records: dict[str, ir.RecordDecl],
    depth: int = 0,
    record_converter: Callable[[str], str] | None = None,
    absent_converter: Callable[[str], str] | None = None,
) -> str:
    """An expression turning `source` of type `ty` into a detached JSON value, written for
    that type (a flat record is one `dict(...)`), so results leave no aliases behind.

    With `record_converter`, a record that is not flat is not written out in place: the
    expression calls the function it names for that record (see `JsonConverters`);
    `absent_converter` does that for such records with a field that may be absent only,
    which no expression can write out."""
    base = ts.strip_optional(ty)
    if not ts.is_container(base, records):
        return source
    var = f"v{depth}"

    def inner_json(item_source: str, item_type: ir.TypeRef) -> str:
        return json_expr(item_source, item_type, records, depth + 1, record_converter, absent_converter)

    if base.name in ("json", "any"):
        inner = f"to_json({source})"
    elif base.name in records:
        record = records[base.name]
        if flat_record(record, records):
            inner = f"dict({source})"
        elif record_converter is not None:
            inner = f"{record_converter(record.name)}({source})"
        elif has_absent(record) or record.is_union:
            assert absent_converter is not None, "a union or a record with absent fields needs its converter"
            inner = f"{absent_converter(record.name)}({source})"
        else:
            items = ", ".join(
                f"{py_str(f.name)}: {inner_json(f'{source}[{py_str(f.name)}]', f.type)}" for f in record.fields
            )
            inner = "{" + items + "}"
    elif base.name == "set":
        inner = f"sorted({source})"
    elif base.name == "map" and base.args[0].name == "json":
        # JSON object keys are strings, and this map keeps "1" and 1 apart: [key, value]
        # pairs, integer keys first, each kind in order, so equal maps give equal JSON.
        inner = (
            f"[[k{depth}, {inner_json(var, base.args[1])}]"
            f" for k{depth}, {var} in sorted({source}.items(), key=_pair_order)]"
        )
    elif base.name == "list":
        item = base.args[0]
        inner = (
            f"list({source})"
            if not ts.is_container(item, records)
            else f"[{inner_json(var, item)} for {var} in {source}]"
        )
    else:
        key, value = base.args
        key_text = f"str(k{depth})" if key.name == "int" else f"k{depth}"
        if key.name != "int" and not ts.is_container(value, records):
            inner = f"dict({source})"
        else:
            inner = f"{{{key_text}: {inner_json(var, value)} for k{depth}, {var} in {source}.items()}}"
    if ts.is_optional(ty) and base is not ty:
        return f"None if {source} is None else {inner}"
    return inner


def flat_record(record: ir.RecordDecl, records: dict[str, ir.RecordDecl]) -> bool:
    """A record of scalars only (a union's members may hold more than its own fields)."""
    return not record.is_union and not any(ts.is_container(f.type, records) for f in record.fields)


def union_dispatch(union: ir.RecordDecl, step: Callable[[str], str]) -> list[str]:
    """Lines of a function over a union value: per member, `step(member)` on the value
    narrowed to it by its tag (the last member needs no test)."""
    members = list(union.members)
    tag = py_str(union.tag)
    lines = []
    for member in members[:-1]:
        lines += [f"    if value[{tag}] == {py_str(union.members[member])}:", f"        return {step(member)}"]
    return [*lines, f"    return {step(members[-1])}"]


def union_copier(union: ir.RecordDecl) -> str:
    """The body of `_copy_NAME` for a union: each member's own copy."""
    return "\n".join(union_dispatch(union, lambda member: f"_copy_{member}(value)")) + "\n"


class JsonConverters:
    """The functions that turn tool results into detached JSON, generated per type: one
    per distinct type a tool returns (`_json_Ticket`, `_json_list_Ticket`), shared by
    every tool returning it, and one per record that is not flat, which the others call
    for their items instead of writing the record out again. A value of a type that holds
    nothing mutable (str, int, an enum, a datetime, ...) is its own JSON and needs no
    converter; where one call does it, that function is the converter: `dict` for a flat
    record, `list` for a list of scalars, `sorted` for a set, `to_json` for `json`."""

    def __init__(self, records: dict[str, ir.RecordDecl], types: TypeNames) -> None:
        self.records = records
        self.types = types
        self.functions: dict[str, str] = {}  # name -> source, each after the ones it calls
        self._names: dict[str, str] = {}  # ts.show(type) -> name

    def name_for(self, ty: ir.TypeRef) -> str | None:
        """The converter of values of `ty`, emitted on first use; None if none is needed."""
        base = ts.strip_optional(ty)
        if not ts.is_container(base, self.records):
            return None
        if base.name in ("json", "any"):
            return "to_json"  # to_json(None) is None: optional[json] needs nothing more
        known = self._names.get(ts.show(ty))
        if known is not None:
            return known
        record = self.records.get(ty.name)
        if record is not None and record.is_union:
            return self._union(record)
        if record is not None and has_absent(record) and not flat_record(record, self.records):
            return self._absent_record(self.records[ty.name])
        if ty.name in self.records and not flat_record(self.records[ty.name], self.records):
            name = self._new_name(ty)  # named first: a recursive record's fields call it
            fields = self.records[ty.name].fields
            value = (
                "{"
                + ", ".join(f"{py_str(f.name)}: {self._json(f'value[{py_str(f.name)}]', f.type, 1)}" for f in fields)
                + "}"
            )
        else:
            value = self._json("value", ty, 0)
            call = re.fullmatch(r"(\w+)\(value\)", value)
            if call is not None:  # `dict(value)`, `list(value)`, `sorted(value)`: that function
                self._names[ts.show(ty)] = call.group(1)
                return call.group(1)
            name = self._new_name(ty)
        self.functions[name] = (
            f"def {name}(value: {self.types.py(ty)}) -> {_json_annotation(ty, self.types)}:\n    return {value}\n"
        )
        return name

    def _new_name(self, ty: ir.TypeRef) -> str:
        """A fresh converter name for `ty` (`_json_list_Ticket`), registered at once."""
        name = "_json_" + _type_slug(ty)
        while name in self.functions or name in self._names.values() or name == "_json_key":  # `A_B` vs `A, B`
            name += "_"
        self._names[ts.show(ty)] = name
        return name

    def _absent_record(self, record: ir.RecordDecl) -> str:
        """The converter of a record that is not flat and has a field that may be absent:
        the record as a dict (its keys in their order, absent ones left out), then each
        container replaced by its JSON where it is there."""
        name = "_json_" + record.name
        while name in self.functions or name in self._names.values() or name == "_json_key":
            name += "_"
        self._names[record.name] = name
        lines = [f"def {name}(value: {self.types.py(ts.t(record.name))}) -> dict[str, Any]:"]
        lines.append("    result: dict[str, Any] = dict(value)")
        for f in record.fields:
            if ts.is_container(f.type, self.records):
                key = py_str(f.name)
                step = f"result[{key}] = {self._json(f'value[{key}]', f.type, 1)}"
                lines += [f"    if {key} in value:", f"        {step}"] if f.absent else [f"    {step}"]
        self.functions[name] = "\n".join([*lines, "    return result"]) + "\n"
        return name

    def _union(self, union: ir.RecordDecl) -> str:
        """The converter of a union: each member's own (`dict` for a flat one)."""
        name = "_json_" + union.name
        while name in self.functions or name in self._names.values() or name == "_json_key":
            name += "_"
        self._names[union.name] = name
        steps = {member: f"{self.name_for(ts.t(member))}(value)" for member in union.members}
        lines = [f"def {name}(value: {self.types.py(ts.t(union.name))}) -> dict[str, Any]:"]
        self.functions[name] = "\n".join([*lines, *union_dispatch(union, steps.__getitem__)]) + "\n"
        return name

    def record_converter(self, name: str) -> str:
        """The converter of a record (for `json_expr`'s `absent_converter`)."""
        return self._record(name)

    def _json(self, source: str, ty: ir.TypeRef, depth: int) -> str:
        return json_expr(source, ty, self.records, depth, self._record)

    def _record(self, name: str) -> str:
        converter = self.name_for(ts.t(name))
        assert converter is not None
        return converter


def _type_slug(ty: ir.TypeRef) -> str:
    """A type as part of a Python name: `list[Ticket]` is `list_Ticket`."""
    return "_".join([ty.name, *(_type_slug(arg) for arg in ty.args)])


def _json_annotation(ty: ir.TypeRef, types: TypeNames) -> str:
    """The Python type of the JSON a converter returns: an object (its keys strings, an
    enum's among them) or an array."""
    base = ts.strip_optional(ty)
    if base.name in types.records:
        text = "dict[str, Any]"
    elif base.name == "map" and base.args[0].name != "json":
        text = f"dict[{'str' if base.args[0].name == 'int' else types.py(base.args[0])}, Any]"
    else:
        text = "list[Any]"
    return f"{text} | None" if ts.is_optional(ty) and base is not ty else text


# --------------------------------------------------------------------------- tool callers

_PLAIN_TYPES = {"str": "str", "int": "int", "bool": "bool", "float": "float"}
"""Parameter types whose values are immutable and whose check is a few plain tests."""


def tool_caller(index: int, tool: ir.ToolDecl, enums: dict[str, ir.EnumDecl], result: str) -> str:
    """`_call_INDEX(env, args)`: what `Environment.call` does for one tool, written for its
    parameter types: check the raw arguments, run the tool, detach the result (`result`
    names its converter, "None" if the result is JSON already).

    Arguments that pass the plain tests (exact types, ASCII text, limits inline, no unknown
    or missing names) are immutable values that `check_arguments` would return unchanged,
    so they are passed as given, a left-out one as its default (the signature's), which
    must pass the tests too; anything else (another type, a container, text that is not
    ASCII, a broken limit) goes through `check_arguments`, which normalises it or raises
    the exact error. Tools with a parameter of another type always do."""
    function = f"_call_{index}"
    convert = (lambda call: call) if result == "None" else (lambda call: f"{result}({call})")
    doc = f'    """`Environment.call` of `{tool.name}`: arguments checked, result detached."""\n'
    checked = f"**check_arguments(TOOL_SPECS[{py_str(tool.name)}], args)"
    fallback = f"    return {convert(f'env.{tool.name}({checked})')}\n"
    signature = f"def {function}(env: Environment, args: Any) -> Any:\n"
    tests = [_plain_test(f"v{i}", param, enums) for i, param in enumerate(tool.params)]
    optional = [schema.param_default(param)[0] for param in tool.params]
    if any(test is None for test in tests):
        return signature + doc + fallback
    if not tool.params:
        fast = convert(f"env.{tool.name}()")
        return signature + doc + f"    if type(args) is dict and not args:\n        return {fast}\n" + fallback
    defaults = [schema.param_default(param) for param in tool.params]
    lines = [
        f"        v{i} = args.get({py_str(p.name)}"
        + (f", {py_value(default)})" if has and default is not None else ")")
        for i, (p, (has, default)) in enumerate(zip(tool.params, defaults, strict=True))
    ]
    required = optional.count(False)
    counted = ([str(required)] if required else []) + [
        f"({py_str(p.name)} in args)" for p, (has, _) in zip(tool.params, defaults, strict=True) if has
    ]
    conditions = [f"len(args) == {' + '.join(counted)}", *(test for test in tests if test is not None)]
    condition = "\n            and ".join(conditions)
    passed = ", ".join(_passed(f"v{i}", param, enums) for i, param in enumerate(tool.params))
    return (
        signature
        + doc
        + "    if type(args) is dict:\n"
        + "\n".join(lines)
        + f"\n        if (\n            {condition}\n        ):\n"
        + f"            return {convert(f'env.{tool.name}({passed})')}\n"
        + fallback
    )


def _passed(var: str, param: ir.Param, enums: dict[str, ir.EnumDecl]) -> str:
    """A checked argument, passed by position (a left-out one was read as its default).
    An enum's is read from `args` again, typed Any: the checks narrowed `var` to `str`,
    and the parameter is a Literal."""
    if ts.strip_optional(param.type).name not in enums:
        return var
    has_default, default = schema.param_default(param)
    return f"args.get({py_str(param.name)}, {py_value(default)})" if has_default else f"args[{py_str(param.name)}]"


def _plain_test(var: str, param: ir.Param, enums: dict[str, ir.EnumDecl]) -> str | None:
    """A boolean expression true only for values `check_arguments` accepts unchanged."""
    ty = param.type
    optional = ty.name == "optional"
    base = ts.strip_optional(ty)
    limits = schema.constraint_values(param)
    if base.name in enums:
        members = ", ".join(py_str(m) for m in enums[base.name].members)
        test = f"type({var}) is str and {var} in {{{members}}}"
    elif base.name in _PLAIN_TYPES:
        test = f"type({var}) is {_PLAIN_TYPES[base.name]}"
        test += f" and {var}.isascii()" if base.name == "str" else ""
        test += f" and math.isfinite({var})" if base.name == "float" else ""
        test += f" and -MAX_INT <= {var} <= MAX_INT" if base.name == "int" and not _bounded(limits) else ""
    else:
        return None
    for kind, value in limits.items():
        bound = _literal_bound(value)
        if bound is None:
            return None
        test += {
            "min": f" and {var} >= {bound}",
            "max": f" and {var} <= {bound}",
            "min_length": f" and len({var}) >= {bound}",
            "max_length": f" and len({var}) <= {bound}",
            "pattern": f" and _matches({var}, {bound})",
        }.get(kind, " and False")
    return f"({var} is None or ({test}))" if optional else test


def _bounded(limits: dict[str, Any]) -> bool:
    """Whether an int parameter's own `min` and `max` keep it within MAX_INT (the
    generated module's magnitude limit for agent integers), so the fast path needs no
    test of its own for it."""
    low, high = limits.get("min"), limits.get("max")
    return all(type(bound) is int and abs(bound) <= MAX_INT for bound in (low, high))


def _literal_bound(value: Any) -> str | None:
    """A constraint's value as Python source, if it is a plain number or text."""
    if isinstance(value, str):
        return py_str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return repr(value)
    return None
