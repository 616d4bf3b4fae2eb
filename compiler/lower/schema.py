"""The unified tool schema (`tools.json`), its OpenAI function-calling export, and the
argument cases generated tests use (valid samples, and bad arguments per parameter).
"""

from __future__ import annotations

import re
from typing import Any

from compiler import ir
from compiler.analyse.sources import key_parameters
from compiler.ir import typesys as ts
from compiler.ir.recursion import recursive_records, schema_defs
from compiler.library import builtins as bi
from compiler.lower.literals import const_json

_CONSTRAINT_KEYWORDS = {
    "min": "minimum",
    "max": "maximum",
    "min_length": "minLength",
    "max_length": "maxLength",
    "min_items": "minItems",
    "max_items": "maxItems",
    "pattern": "pattern",
}


def constraint_values(param: ir.Param) -> dict[str, Any]:
    return {c.kind: const_json(c.value) for c in param.constraints}


def param_default(param: ir.Param, tool: bool = True) -> tuple[bool, Any]:
    """(has a default, the default). A tool's optional parameters default to None, so an
    agent may leave them out; a helper's are passed like any other unless given one."""
    if param.default is not None:
        return True, const_json(param.default)
    if tool and ts.is_optional(param.type):
        return True, None
    return False, None


def param_schema(
    param: ir.Param,
    enums: dict[str, ir.EnumDecl],
    records: dict[str, ir.RecordDecl],
    recursive: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    schema = ts.json_schema(param.type, enums, records, recursive)
    target = schema
    if "anyOf" in schema:
        target = schema["anyOf"][0]
    for kind, value in constraint_values(param).items():
        # envc matches patterns against the whole string; JSON Schema searches.
        target[_CONSTRAINT_KEYWORDS[kind]] = f"^(?:{value})$" if kind == "pattern" else value
    has_default, default = param_default(param)
    if has_default:
        schema["default"] = default
    if param.doc:
        schema["description"] = param.doc
    return schema


def tool_schema(tool: ir.ToolDecl, env: ir.Environment) -> dict[str, Any]:
    enums = {e.name: e for e in env.enums}
    records = {r.name: r for r in env.records}
    recursive = recursive_records(records)
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: param_schema(p, enums, records, recursive) for p in tool.params},
        "required": [p.name for p in tool.params if not param_default(p)[0]],
        "additionalProperties": False,
    }
    with_defs(parameters, schema_defs([p.type for p in tool.params], enums, records, recursive))
    returns = ts.json_schema(tool.returns, enums, records, recursive)
    with_defs(returns, schema_defs([tool.returns], enums, records, recursive))
    return {
        "name": tool.name,
        "description": tool.doc,
        "parameters": parameters,
        "required": [p.name for p in tool.params if not param_default(p)[0]],
        "returns": returns,
        "side_effect": tool.side_effect,
        "modifies_state": bool(tool.writes),
        "state_fields_affected": [w for w in tool.writes if not bi.is_private(w)],  # private: not shown
        "reads": [r for r in tool.reads if not bi.is_private(r)],
        "errors": list(tool.errors),
    }


def with_defs(schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """Give a root schema the `$defs` its `$ref`s point at; a schema without recursive
    records is left exactly as it was."""
    if defs:
        schema["$defs"] = defs


def tools_document(env: ir.Environment, spec: str) -> dict[str, Any]:
    return {
        "generated": f"by envc from {spec}; do not edit",
        "environment": env.header.name,
        "title": env.header.title,
        "archetype": env.header.archetype,
        "domains": list(env.header.domains),
        "tools": [tool_schema(t, env) for t in env.tools],
    }


def openai_tools(env: ir.Environment, spec: str) -> dict[str, Any]:
    """The same tools in OpenAI's function-calling format (`tools` is what the API takes)."""
    result = []
    for tool in env.tools:
        schema = tool_schema(tool, env)
        result.append(
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.doc, "parameters": schema["parameters"]},
            }
        )
    return {"generated": f"by envc from {spec}; do not edit", "tools": result}


# --------------------------------------------------------------------------- sample arguments


class Samples:
    """Valid and invalid argument values, derived from types and constraints."""

    def __init__(self, env: ir.Environment) -> None:
        self.env = env
        self.enums = {e.name: e for e in env.enums}
        self.records = {r.name: r for r in env.records}

    def value(self, ty: ir.TypeRef, constraints: dict[str, Any] | None = None) -> Any:
        constraints = constraints or {}
        name = ty.name
        if name == "optional":
            return self.value(ty.args[0], constraints)
        if name == "str":
            return _sample_string(constraints)
        if name == "int":
            low = constraints.get("min", 1)
            return max(int(low), min(1, int(constraints.get("max", 1))))
        if name == "float":
            return float(constraints.get("min", 1.0))
        if name == "number":
            return constraints.get("min", 1)
        if name == "bool":
            return True
        if name == "datetime":
            return self.env.header.clock
        if name == "date":
            return self.env.header.clock[:10]
        if name == "time":
            return "09:00:00"
        if name in ("json", "any"):
            return {}
        if name == "list":  # an item only when one is asked for: a recursive record holds lists of itself
            count = int(constraints.get("min_items", 0))
            return [self.value(ty.args[0])] * count if count else []
        if name == "map":
            return {}
        if name in self.enums:
            return self.enums[name].members[0]
        if name in self.records and self.records[name].is_union:
            union = self.records[name]
            member = next(iter(union.members))
            return {union.tag: union.members[member], **self.value(ts.t(member))}
        if name in self.records:
            record = self.records[name]
            return {f.name: self.value(f.type) for f in record.fields if ts.required_field(f)}
        return None

    def valid_args(self, tool: ir.ToolDecl) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for param in tool.params:
            has_default, _ = param_default(param)
            if not has_default:
                args[param.name] = self.value(param.type, constraint_values(param))
        return args

    def bad_cases(self, tool: ir.ToolDecl) -> list[tuple[str, dict[str, Any]]]:
        """(label, arguments) pairs that must each be refused with invalid_argument."""
        base = self.valid_args(tool)
        cases: list[tuple[str, dict[str, Any]]] = [("unknown parameter", {**base, "unexpected_parameter": 1})]
        for param in tool.params:
            if param.name in base:
                cases.append((f"missing {param.name}", {k: v for k, v in base.items() if k != param.name}))
            if ts.strip_optional(param.type).name not in ("json", "any"):  # any JSON value fits json
                cases.append(
                    (f"{param.name} of the wrong type", {**base, param.name: _wrong_type(param.type, self.enums)})
                )
            if ts.strip_optional(param.type).name in self.enums:
                cases.append((f"{param.name} not a member", {**base, param.name: "__not_a_member__"}))
            for label, value in _constraint_violations(param):
                cases.append((f"{param.name} {label}", {**base, param.name: value}))
        return cases

    def missing_key_cases(self, tool: ir.ToolDecl) -> list[tuple[str, dict[str, Any]]]:
        """(label, arguments) with one parameter the body uses as a key set to a key or
        position no state holds: the call may succeed (a new key) or be refused, but as a
        domain error, never a crash (docs/language.md §17)."""
        base = self.valid_args(tool)
        helpers = {fn.name: fn for fn in self.env.fns}
        cases: list[tuple[str, dict[str, Any]]] = []
        for param in tool.params:
            if param.name not in key_parameters(tool, helpers):
                continue
            for value in _MISSING_KEYS.get(ts.strip_optional(param.type).name, ()):
                cases.append((f"{param.name} = {value!r}, a key no state has", {**base, param.name: value}))
        return cases


_MISSING_KEYS: dict[str, tuple[Any, ...]] = {
    "int": (987654321, -987654321),
    "number": (987654321,),
    "str": ("__no_such_key__",),
}
"""Keys and positions of each key type that no state holds."""


def _sample_string(constraints: dict[str, Any]) -> str:
    pattern = constraints.get("pattern")
    if pattern:
        for candidate in ("sample", "a", "A1", "x@example.com", "2025-01-01", "0", "ab-12"):
            if re.fullmatch(pattern, candidate):
                return candidate
    length = int(constraints.get("min_length", 0))
    text = "sample"
    if len(text) < length:
        text = text + "x" * (length - len(text))
    maximum = constraints.get("max_length")
    return text[: int(maximum)] if maximum is not None else text


def _wrong_type(ty: ir.TypeRef, enums: dict[str, ir.EnumDecl]) -> Any:
    base = ts.strip_optional(ty)
    if base.name in ("str", *ts.TEMPORAL) or base.name in enums:
        return 12345
    if base.name in ("int", "float", "number"):
        return "not a number"
    if base.name == "bool":
        return "yes"
    if base.name in ("list", "set"):  # a set is given as a list: a list of str would fit
        return "not a list"
    return ["not", "an", "object"]


def _constraint_violations(param: ir.Param) -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    values = constraint_values(param)
    if "min" in values:
        cases.append(("below min", values["min"] - 1))
    if "max" in values:
        cases.append(("above max", values["max"] + 1))
    if "min_length" in values and values["min_length"] > 0:
        cases.append(("too short", "x" * (values["min_length"] - 1)))
    if "max_length" in values:
        cases.append(("too long", "x" * (values["max_length"] + 1)))
    if "pattern" in values:
        for candidate in ("", " ", "!!", "not matching at all ###"):
            if not re.fullmatch(values["pattern"], candidate):
                cases.append(("not matching the pattern", candidate))
                break
    if "max_items" in values:
        cases.append(("too many items", [None] * (values["max_items"] + 1)))
    return cases
