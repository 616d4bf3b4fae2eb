"""Analysis pass 2, constants: literal values checked against their declared types —
record field defaults, state defaults (S0), world data and scenario overrides, each
inline or from a JSON file loading read — evaluated to the JSON the generated package holds."""

from __future__ import annotations

from typing import Any

from compiler import ir
from compiler.analyse.context import Analysis, set_field
from compiler.diagnostics import did_you_mean
from compiler.front.load import DataFile, data_file_key
from compiler.ir import typesys as ts
from compiler.ir.recursion import DEPTH_LIMIT, holds_recursive, nesting, recursive_records


def run(a: Analysis) -> None:
    check_constants(a)


def data_checker(a: Analysis) -> ts.DataChecker:
    return ts.DataChecker(a.enums, a.records, a.record_defaults)


def checked_data(a: Analysis, raw: Any, expected: ir.TypeRef, where: str, problems: list[str]) -> Any:
    """`raw` checked against `expected`; a value holding a recursive record is first held
    to the depth bound (by an explicit stack), since the checker and the generated
    package recurse on it."""
    if holds_recursive(expected, a.records, recursive_records(a.records)):
        depth = nesting(raw, DEPTH_LIMIT)
        if depth > DEPTH_LIMIT:
            problems.append(
                f"{where}: nests lists and objects deeper than {DEPTH_LIMIT} levels, the bound of a value holding a recursive record"
            )
            return raw
    return data_checker(a).check(raw, expected, where, problems)


def const_value(a: Analysis, expr: ir.Expr, expected: ir.TypeRef, file: str, where: str) -> tuple[bool, Any]:
    """Evaluate a literal expression and check it against `expected`."""
    ok, raw = literal(a, expr, expected, file)
    if not ok:
        return False, None
    problems: list[str] = []
    value = checked_data(a, raw, expected, where, problems)
    for problem in problems[:5]:
        a.error("E3001", problem, expr, file)
    set_field(expr, "ty", expected)
    return not problems, value


def literal(a: Analysis, expr: ir.Expr, expected: ir.TypeRef | None, file: str) -> tuple[bool, Any]:
    if isinstance(expr, ir.Const):
        return True, expr.value
    if (
        isinstance(expr, ir.Unary)
        and expr.op == "-"
        and isinstance(expr.operand, ir.Const)
        and isinstance(expr.operand.value, (int, float))
        and not isinstance(expr.operand.value, bool)
    ):
        return True, -expr.operand.value
    if isinstance(expr, ir.ListLit):
        item_type = (
            ts.strip_optional(expected).args[0]
            if expected and ts.strip_optional(expected).name in ("list", "set")
            else None
        )
        results = [literal(a, item, item_type, file) for item in expr.items]
        return all(ok for ok, _ in results), [v for _, v in results]
    if isinstance(expr, ir.MapLit):
        value: dict[Any, Any] = {}
        ok = True
        every, by_field = _entry_types(expected, a.records)
        for entry in expr.entries:
            key_ok, key = literal(a, entry.key, None, file)
            val_type = every if every is not None else by_field.get(key) if isinstance(key, str) else None
            val_ok, val = literal(a, entry.value, val_type, file)
            ok = ok and key_ok and val_ok
            if isinstance(key, (str, int)) and not isinstance(key, bool):
                if key in value:
                    a.error("E2005", f"key {key!r} appears twice", entry, file)
                value[key] = val
            elif key_ok:
                a.error("E3001", "map keys must be str or int literals", entry.key, file)
                ok = False
        return ok, value
    if isinstance(expr, ir.Attr) and isinstance(expr.obj, ir.Name) and expr.obj.id in a.enums:
        enum = a.enums[expr.obj.id]
        if expr.name not in enum.members:
            a.error(
                "E2007",
                f"enum {enum.name} has no member `{expr.name}`",
                expr,
                file,
                hint=did_you_mean(expr.name, enum.members),
            )
            return False, None
        return True, expr.name
    if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.id in a.records:
        if expr.args:
            a.error("E3006", f"record {expr.func.id} takes named fields", expr, file)
            return False, None
        fields = {f.name: f.type for f in a.records[expr.func.id].fields}
        named = {kw.name: literal(a, kw.value, fields.get(kw.name), file) for kw in expr.kwargs}
        return all(ok for ok, _ in named.values()), {k: v for k, (_, v) in named.items()}
    a.error("E3014", "only literal values are allowed here", expr, file)
    return False, None


def check_constants(a: Analysis) -> None:
    for record in a.records.values():
        defaults: dict[str, Any] = {}
        a.record_defaults[record.name] = defaults
        for field_ in record.fields:
            if field_.absent and field_.default is not None:
                a.error(
                    "E3031",
                    f"`{field_.name}?` may be absent, so it has no default",
                    field_.default,
                    record.file or a.module.path,
                    hint=f"drop the default, or the `?`: `{field_.name}: {ts.show(field_.type)} = ...` is always there",
                )
            elif field_.default is not None:
                ok, value = const_value(
                    a, field_.default, field_.type, record.file or a.module.path, f"{record.name}.{field_.name}"
                )
                if ok:
                    defaults[field_.name] = value
    for name, field_ in a.state.items():
        file = a.state_file(name)
        if field_.source:
            found, value = file_value(a, field_, file, field_.source, "state file", field_.type, name)
            if found:
                a.state_defaults[name] = value
            continue
        if field_.default is None:
            if ts.is_optional(field_.type):
                a.state_defaults[name] = None
            elif field_.type.name in ("list", "map", "set"):
                a.state_defaults[name] = {} if field_.type.name == "map" else []
            else:
                a.error("E3014", f"state field `{name}` needs a default value (its value in S0)", field_, file)
            continue
        ok, value = const_value(a, field_.default, field_.type, file, name)
        if ok:
            a.state_defaults[name] = value
    for world_field in a.world.values():
        load_world(a, world_field)
    for scenario in a.scenarios.values():
        if scenario.source:
            load_scenario_file(a, scenario)
            continue
        seen: set[str] = set()
        for item in scenario.items:
            if item.name in seen:
                a.error("E2005", f"scenario `{scenario.name}` sets `{item.name}` twice", item, scenario.file)
            seen.add(item.name)
            target = a.state.get(item.name)
            if target is None:
                a.error(
                    "E2006",
                    f"`{item.name}` is not a state field",
                    item,
                    scenario.file,
                    hint=did_you_mean(item.name, a.state),
                )
                continue
            if item.value is not None:
                ok, value = const_value(a, item.value, target.type, scenario.file, f"{scenario.name}.{item.name}")
            else:
                ok, value = file_value(a, item, scenario.file, item.source, "scenario file", target.type, item.name)
            if ok:  # kept for `scenario_values`, like a scenario file's
                a.scenario_values.setdefault(scenario.name, {})[item.name] = value


def load_world(a: Analysis, world_field: ir.WorldField) -> None:
    file = a.world_file(world_field)
    if world_field.value is not None:
        ok, value = const_value(a, world_field.value, world_field.type, file, world_field.name)
        if ok:
            a.world_values[world_field.name] = value
        return
    found, value = file_value(a, world_field, file, world_field.source, "world file", world_field.type, "")
    if found:
        a.world_values[world_field.name] = value


def data_file(a: Analysis, node: ir.Node, file: str, source: str, what: str) -> tuple[bool, Any]:
    """The JSON value of a `from "FILE"` (E0003 where loading could not read it)."""
    loaded = a.data_files.get(data_file_key(file, source), DataFile(problem="not_loaded", source=source))
    if loaded.problem:
        a.error("E0003", loaded.message(what), node, file)
        return False, None
    return True, loaded.data


def file_value(
    a: Analysis, node: ir.Node, file: str, source: str, what: str, expected: ir.TypeRef, where: str
) -> tuple[bool, Any]:
    """A field's value from its data file, checked against its type like a literal. A JSON
    file has no envspec positions: the diagnostic sits on the `from` line and says where in
    the file (`users['3'].name`); `where` is the path's root (world data keeps the file's name)."""
    found, data = data_file(a, node, file, source, what)
    if not found:
        return False, None
    problems: list[str] = []
    value = checked_data(a, data, expected, where or source, problems)
    for problem in problems[:5]:
        a.error("E3001", f"in {what} `{source}`: {problem}" if where else problem, node, file)
    return not problems, value


def load_scenario_file(a: Analysis, scenario: ir.ScenarioDecl) -> None:
    """`scenario NAME from "FILE"`: a JSON object of state field -> value, checked like the
    lines of a scenario block; the checked values are kept for `scenario_values`."""
    what = "scenario file"
    found, data = data_file(a, scenario, scenario.file, scenario.source, what)
    if not found:
        return
    if not isinstance(data, dict):
        a.error(
            "E3001",
            f"{what} `{scenario.source}` must hold a JSON object of state fields, not {_json_kind(data)}",
            scenario,
            scenario.file,
        )
        return
    values: dict[str, Any] = {}
    for key, raw in data.items():
        name = str(scenario.renamed.get(key) or key)  # a prototype's name for a field renamed since
        target = a.state.get(name)
        if target is None:
            a.error(
                "E2006",
                f"`{key}` in {what} `{scenario.source}` is not a state field",
                scenario,
                scenario.file,
                hint=did_you_mean(key, a.state),
            )
            continue
        problems: list[str] = []
        values[name] = checked_data(a, raw, target.type, key, problems)
        for problem in problems[:5]:
            a.error("E3001", f"in {what} `{scenario.source}`: {problem}", scenario, scenario.file)
    a.scenario_values[scenario.name] = values


def scenario_values(a: Analysis) -> None:
    """Each scenario's overrides as checked JSON values (for the generated SCENARIOS), in
    declaration order. Run on a spec without errors, so every override was checked: the
    values are those `check_constants` kept (evaluating the literals again was most of
    the time this took)."""
    checked = a.scenario_values
    a.scenario_values = {name: checked.get(name, {}) for name in a.scenarios}


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else "a number"


def _entry_types(
    expected: ir.TypeRef | None, records: dict[str, ir.RecordDecl]
) -> tuple[ir.TypeRef | None, dict[str, ir.TypeRef]]:
    """What the values of a map literal of type `expected` are expected to be: the map's
    value type for every key, or a record's field types by name (the first field of a
    name). Found once per literal, not per entry: scenario data is mostly records."""
    base = ts.strip_optional(expected) if expected is not None else None
    if base is not None and base.name == "map":
        return base.args[1], {}
    by_field: dict[str, ir.TypeRef] = {}
    if base is not None and base.name in records:
        for field_ in records[base.name].fields:
            by_field.setdefault(field_.name, field_.type)
    return None, by_field
