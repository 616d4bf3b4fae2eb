"""Stage 3, analyse: the values and words tasks are made from.

A spec's `values` pools are checked and read (inline literals, or a JSON list beside the
spec): one type each, str, int or float. Every `from SOURCE` of a tool parameter or a
record field (`describe tool`, `describe record`) must name a pool or a built-in format
of `compiler/library/sources.py`, with arguments the format takes, whose values fit the
parameter's or field's type. Once a spec gives task values at all, a write tool's
free-text parameter without a source is a warning (`unsourced_parameters`): the task
generator could only fill it with filler.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from compiler import ir
from compiler.analyse.constants import data_file
from compiler.analyse.context import Analysis
from compiler.diagnostics import Diagnostic, did_you_mean
from compiler.ir import typesys as ts
from compiler.ir.tree import walk
from compiler.library.sources import FORMATS, Format

POOL_TYPES: dict[type, str] = {str: "str", int: "int", float: "float"}
"""The Python type of a pool's values and the language type it infers."""

ISO_PARSERS: dict[str, Callable[[str], Any]] = {
    "date": dt.date.fromisoformat,
    "datetime": dt.datetime.fromisoformat,
    "time": dt.time.fromisoformat,
}
"""A pool of text fits a date, datetime or time when each value reads as one (ISO 8601)."""


def run(a: Analysis) -> None:
    """Read the pools, then check every source against its pool or format and its type."""
    for pool in a.module.values:
        _read_pool(a, pool)
    for tool in a.tools.values():
        for param in tool.params:
            if param.values_from is not None:
                check_source(a, param.values_from, param.type, f"parameter `{param.name}` of `{tool.name}`")
    for record in a.records.values():
        for field_ in record.fields:
            if field_.values_from is not None:
                check_source(a, field_.values_from, field_.type, f"field `{field_.name}` of record `{record.name}`")


# --------------------------------------------------------------------------- pools


def _read_pool(a: Analysis, pool: ir.ValuesDecl) -> None:
    """Check one pool and keep its values (`a.value_pools`) and type (`a.pool_types`; ""
    for a pool with errors, so a source naming it is not reported again)."""
    if pool.name in a.pool_types:
        earlier = next(p for p in a.module.values if p.name == pool.name)
        by = "the prototype" if earlier.file != pool.file else "this spec"
        a.error("E2001", f"values `{pool.name}` is already declared by {by}", pool, pool.file)
        return
    a.pool_types[pool.name] = ""
    if pool.name in FORMATS:
        a.error(
            "E2033",
            f"`{pool.name}` is a built-in format: a pool cannot take its name",
            pool,
            pool.file,
            hint=f"name the pool after what it holds, e.g. `{pool.name}s_of_{a.header.name}`",
        )
        return
    values = _inline_values(a, pool) if not pool.source else _file_values(a, pool)
    if values is None:
        return
    kind = _one_type(a, pool, values)
    if kind:
        a.pool_types[pool.name] = kind
        a.value_pools[pool.name] = values


def _inline_values(a: Analysis, pool: ir.ValuesDecl) -> list[Any] | None:
    """`values NAME = [...]`: each item a str, int or float literal (a number may be negative)."""
    if not pool.items:
        a.error("E2033", f"values `{pool.name}` is empty", pool, pool.file, hint="list at least one value")
        return None
    values: list[Any] = []
    for item in pool.items:
        value = _literal(item)
        if value is None:
            a.error(
                "E2033",
                f"values `{pool.name}` holds something other than a str, int or float literal",
                item,
                pool.file,
                hint='write the values themselves: `["VPN drops", "Printer jams"]`, `[5, 10, 20]`',
            )
            return None
        values.append(value)
    return values


def _literal(item: ir.Expr) -> str | int | float | None:
    """A pool item's value, or None when it is no str, int or float literal (bool neither)."""
    if isinstance(item, ir.Const) and type(item.value) in POOL_TYPES:
        assert isinstance(item.value, (str, int, float))
        return item.value
    if isinstance(item, ir.Unary) and item.op == "-" and isinstance(item.operand, ir.Const):
        value = item.operand.value
        if type(value) in (int, float):
            assert isinstance(value, (int, float))
            return -value
    return None


def _file_values(a: Analysis, pool: ir.ValuesDecl) -> list[Any] | None:
    """`values NAME from "FILE"`: a non-empty JSON list of str, int or float values."""
    found, data = data_file(a, pool, pool.file, pool.source, "values file")
    if not found:
        return None
    where = f"values file `{pool.source}`"
    if not isinstance(data, list) or not data:
        a.error("E2033", f"{where} must hold a non-empty JSON list", pool, pool.file)
        return None
    for index, value in enumerate(data):
        if type(value) not in POOL_TYPES:
            a.error(
                "E2033",
                f"{where}: item [{index}] is {json.dumps(value)[:40]}, not a str, int or float",
                pool,
                pool.file,
            )
            return None
    return data


def _one_type(a: Analysis, pool: ir.ValuesDecl, values: list[Any]) -> str:
    """The pool's type (that of its first value), or "" when a later value has another."""
    kind = POOL_TYPES[type(values[0])]
    for index, value in enumerate(values):
        other = POOL_TYPES[type(value)]
        if other != kind:
            where = f"values file `{pool.source}`: item [{index}]" if pool.source else f"item {index + 1}"
            node = pool if pool.source else pool.items[index]
            a.error(
                "E2033",
                f"values `{pool.name}` mixes {kind} and {other} values ({where})",
                node,
                pool.file,
                hint="a pool holds values of one type",
            )
            return ""
    return kind


# --------------------------------------------------------------------------- sources


def check_source(a: Analysis, ref: ir.SourceRef, target: ir.TypeRef, what: str) -> None:
    """A source names a pool or a format, with the arguments it takes, and its values fit
    `target` (the type of the parameter or field `what`)."""
    file = ref.file or a.module.path
    if ref.name in a.pool_types:
        if ref.args:
            a.error(
                "E2035",
                f"`{ref.name}` is a values pool: it takes no arguments",
                ref,
                file,
                hint=f"write `from {ref.name}`",
            )
        kind, values = a.pool_types[ref.name], a.value_pools.get(ref.name)
        if not kind:
            return  # the pool's own errors are reported
    elif ref.name in FORMATS:
        format_ = FORMATS[ref.name]
        if not _arguments_fit(a, ref, format_, file):
            return
        kind, values = format_.result, None
    else:
        a.error(
            "E2034",
            f"unknown value source `{ref.name}`",
            ref,
            file,
            hint=did_you_mean(ref.name, [*a.pool_types, *FORMATS])
            or "name a `values` pool of the spec or a built-in format (docs/language.md, values and wording)",
        )
        return
    problem = _misfit(a, kind, values, target)
    if problem:
        a.error("E3034", f"{what} is {ts.show(target)}, but `{ref.name}` gives {problem}", ref, file)


def _arguments_fit(a: Analysis, ref: ir.SourceRef, format_: Format, file: str) -> bool:
    """At most the format's arguments, each of its type (an int where a float is taken)."""
    signature = f"{format_.name}({', '.join(f'{arg.name}: {arg.type}' for arg in format_.args)})"
    if len(ref.args) > len(format_.args):
        a.error(
            "E2035",
            f"`{format_.name}` takes {len(format_.args) or 'no'} argument{'s' if len(format_.args) != 1 else ''}, "
            f"not {len(ref.args)}",
            ref,
            file,
            hint=f"the format is {signature}",
        )
        return False
    for value, arg in zip(ref.args, format_.args, strict=False):
        if not _argument_fits(value, arg.type):
            a.error(
                "E2035",
                f"argument `{arg.name}` of `{format_.name}` is a {arg.type}, not {json.dumps(value)}",
                ref,
                file,
                hint=f"the format is {signature}",
            )
            return False
    return True


def _argument_fits(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool)


def _misfit(a: Analysis, kind: str, values: list[Any] | None, target: ir.TypeRef) -> str:
    """Why values of `kind` (and, from a pool, `values`) do not fit `target`, or "". A
    list (or set) parameter takes a few values of the source as its items."""
    target = ts.strip_optional(target)
    if target.name in ("list", "set") and target.args:
        return _misfit(a, kind, values, target.args[0])
    name = target.name
    if name == "json" or (name == kind and not target.args):
        return ""
    if name == "str" and kind in ("date", "datetime"):
        return ""
    if name in ("float", "number") and kind in ("int", "float"):
        return ""
    if name in ISO_PARSERS and kind == "str" and values is not None:
        bad = next((v for v in values if not _reads_as(ISO_PARSERS[name], v)), None)
        return "" if bad is None else f"{json.dumps(bad)}, which is no ISO 8601 {name}"
    if name in a.enums and kind == "str" and values is not None:
        members = a.enums[name].members
        bad = next((v for v in values if v not in members), None)
        return "" if bad is None else f"{json.dumps(bad)}, which is no member of enum {name}"
    return f"{kind} values"


def _reads_as(parser: Callable[[str], Any], value: str) -> bool:
    try:
        parser(value)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- the warning


def unsourced_parameters(a: Analysis) -> None:
    """E2039, a warning: a write tool's free-text parameter that tasks cannot fill with a
    meaningful value. Reported once the spec gives task values at all (a pool or a source),
    for a parameter of type str (or optional str) with no source and no `pattern`, which
    the body does not use as a key (`key_parameters`)."""
    if not _gives_task_values(a):
        return
    sourced_fields = {f.name for record in a.records.values() for f in record.fields if f.values_from is not None}
    for tool in a.tools.values():
        if not tool.writes:
            continue
        keys = key_parameters(tool, a.fns)
        for param in tool.params:
            if param.values_from is not None or param.name in keys or ts.strip_optional(param.type).name != "str":
                continue
            if param.name in sourced_fields:
                continue  # the sampler takes the source of a record field of the same name
            if any(c.kind == "pattern" for c in param.constraints):
                continue
            a.diags.append(
                Diagnostic(
                    "E2039",
                    f"parameter `{param.name}` of `{tool.name}` has no source: tasks cannot give it a meaningful value",
                    tool.file,
                    param.line,
                    param.col,
                    param.line,
                    param.col + len(param.name),
                    hint=f"describe it: `describe tool {tool.name}:` then `param {param.name} from POOL`, "
                    f'with `values POOL = ["…", "…"]` in the domain\'s words (or a built-in format)',
                    severity="warning",
                )
            )


def _gives_task_values(a: Analysis) -> bool:
    if a.module.values:
        return True
    params = (p for tool in a.tools.values() for p in tool.params)
    fields = (f for record in a.records.values() for f in record.fields)
    return any(p.values_from is not None for p in params) or any(f.values_from is not None for f in fields)


def key_parameters(tool: ir.ToolDecl, helpers: Mapping[str, ir.FnDecl] | None = None) -> set[str]:
    """The parameters a callable uses to look something up: as an index (`xs[p]`), on the
    left of `in` (`p in users`), as the argument of `.get(p)`, compared with `==` or `!=`
    to a field or an item of a value (`t.owner == p`, `users[name] == p`), or passed to a
    helper that uses its parameter so (`find_order(order_id)`). Their values come from the
    state a task starts in, not from a pool."""
    return _keys_of(tool, helpers or {}, {})


def _keys_of(decl: ir.ToolDecl, helpers: Mapping[str, ir.FnDecl], known: dict[str, set[str]]) -> set[str]:
    if decl.name in known and isinstance(decl, ir.FnDecl):
        return known[decl.name]  # a helper met again (recursion included): what is known so far
    if isinstance(decl, ir.FnDecl):
        known[decl.name] = set()
    params = {p.name for p in decl.params}
    keys: set[str] = set()

    def param_of(node: Any) -> str | None:
        return node.id if isinstance(node, ir.Name) and node.id in params else None

    for node in walk(decl.body):
        if isinstance(node, ir.Index):
            keys.add(param_of(node.index) or "")
        elif isinstance(node, ir.Binary) and node.op in ("in", "not in"):
            keys.add(param_of(node.left) or "")
        elif isinstance(node, ir.Binary) and node.op in ("==", "!="):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(other, (ir.Attr, ir.Index)):
                    keys.add(param_of(side) or "")
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Attr) and node.func.name == "get" and node.args:
            keys.add(param_of(node.args[0]) or "")
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id in helpers:
            keys |= _passed_to_keys(node, helpers[node.func.id], helpers, known, param_of)
    keys -= {""}
    if isinstance(decl, ir.FnDecl):
        known[decl.name] = keys
    return keys


def _passed_to_keys(
    call: ir.Call,
    helper: ir.FnDecl,
    helpers: Mapping[str, ir.FnDecl],
    known: dict[str, set[str]],
    param_of: Callable[[Any], str | None],
) -> set[str]:
    """The caller's parameters passed where the helper uses its parameter as a key."""
    helper_keys = _keys_of(helper, helpers, known)
    passed = {p.name: a for p, a in zip(helper.params, call.args)}
    passed |= {kw.name: kw.value for kw in call.kwargs}
    return {param_of(arg) or "" for name, arg in passed.items() if name in helper_keys}
