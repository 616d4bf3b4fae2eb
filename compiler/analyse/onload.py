"""The load step: `on load:`, `load options:` and state field aliases, checked in the
symbols pass (their names) and then handed to the types and effects passes as one more
helper.

The `on load:` block becomes `Analysis.on_load`, a helper (`ir.FnDecl`) whose parameters
are the load options and whose return type is None: so it is type-checked like a
helper's body (no tool calls, state and world readable, state writable), its effects are
inferred like a helper's, and lowering emits it as one more method. It is not in
`Analysis.fns`, so nothing can call it. A load option is a parameter of that helper only,
which is what makes it readable there and nowhere else. Like any parameter it shadows a
state field of its name, which `on load:` then reads and writes as `state.NAME`.
"""

from __future__ import annotations

import keyword

from compiler import ir
from compiler.analyse.constants import const_value
from compiler.analyse.context import Analysis
from compiler.analyse.declared_types import resolve_type
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.library import builtins as bi

ON_LOAD = "on load"
"""The name the `on load:` helper has in messages (no spec name can be written so)."""

OPTION_TYPES = ("str", "int", "float", "number", "bool")
"""What a load option may hold (or optional of it): flags and small settings, which a
harness passes as Python keywords."""

OPTION_NAMES_TAKEN = frozenset({"self", "scenario"})
"""Names the generated loader's own parameters have."""


def declare(a: Analysis) -> None:
    """After the symbols pass has declared the state: the options, the aliases and the
    `on load:` helper (at most one block per spec)."""
    _declare_options(a)
    _check_aliases(a)
    blocks = a.module.on_load
    for extra in blocks[1:]:
        a.error("E2001", "a spec has one `on load:` block", extra, extra.file)
    if blocks:
        block = blocks[0]
        # No defaults: the loader always passes every option (`check_load_options`).
        params = [ir.Param(name=o.name, type=o.type, line=o.line, col=o.col) for o in a.load_options.values()]
        a.on_load = ir.FnDecl(
            name=ON_LOAD,
            params=params,
            returns=ir.TypeRef(name="None"),
            body=block.body,
            doc=block.doc,
            file=block.file,
            line=block.line,
            col=block.col,
            end_line=block.end_line,
            end_col=block.end_col,
        )


def _declare_options(a: Analysis) -> None:
    for decl in a.module.load_options:
        for option in decl.fields:
            reason = _option_reason(a, option)
            if reason is not None:
                a.error("E2031", reason, _name_span(option), decl.file)
            elif option.name in a.load_options:
                a.error("E2005", f"load option `{option.name}` is declared twice", _name_span(option), decl.file)
            else:
                a.load_options[option.name] = option
                a.option_files[option.name] = decl.file


def _option_reason(a: Analysis, option: ir.Field_) -> str | None:
    """Why `option` cannot be a load option, or None."""
    name = option.name
    if option.alias:
        return f"load option `{name}` has an alias; aliases are for state fields"
    if keyword.iskeyword(name) or name in OPTION_NAMES_TAKEN:
        return f"`{name}` cannot name a load option: it is a keyword or a parameter of the generated loader"
    # An option is a keyword parameter of the loader's methods, under its own name: it
    # may hide nothing their bodies use (a module name, a built-in).
    reason = bi.reserved_reason(name, "variable")
    if reason is None and name in bi.MODULE_BUILTINS:
        reason = f"`{name}` is a Python built-in the generated loader uses"
    if reason is not None:
        return f"`{name}` cannot name a load option: {reason}"
    # A state field of the same name is fine: in `on load:` the option is the nearer
    # name, as a parameter is, and `state.NAME` is the field. World data has no prefix.
    if name in a.world:
        return f"load option `{name}` has the name of a world field, which `on load:` reads by that name"
    if option.default is None:
        return f"load option `{name}` has no default; every option has one, so callers may leave it out"
    return None


def _check_aliases(a: Analysis) -> None:
    """An alias is another key for one state field in a scenario mapping: it may not be
    the name (or alias) of another field, and records have none."""
    for record in a.module.records:
        for field_ in record.fields:
            if field_.alias:
                a.error(
                    "E2030",
                    f"record field `{field_.name}` has an alias; aliases are for state fields",
                    field_,
                    record.file,
                    hint="convert a foreign record in `on load:`",
                )
    owners: dict[str, str] = {}
    for name, field_ in a.state.items():
        alias = field_.alias
        if not alias:
            continue
        file = a.state_file(name)
        if alias == name:
            a.error("E2030", f"state field `{name}` has itself as its alias", field_, file)
        elif alias in a.state:
            a.error("E2030", f"alias `{alias}` of `{name}` is the name of another state field", field_, file)
        elif alias in owners:
            a.error("E2030", f"alias `{alias}` is given to both `{owners[alias]}` and `{name}`", field_, file)
        else:
            owners[alias] = name


def resolve_types(a: Analysis) -> None:
    """The options' written types in canonical form (the `on load:` helper's parameters
    share them), and their defaults checked against them."""
    for name, option in a.load_options.items():
        file = a.option_files[name]
        option.type = resolve_type(a, option.type, file)  # a malformed type is reported there, as `any`
        if option.type.name == "any":
            continue
        if ts.strip_optional(option.type).name not in OPTION_TYPES:
            shown = f"load option `{name}` is {ts.show(option.type)}"
            a.error(
                "E2031", f"{shown}; an option is {', '.join(OPTION_TYPES)} or optional of one", _name_span(option), file
            )
        elif option.default is not None:
            const_value(a, option.default, option.type, file, name)
    if a.on_load is not None:
        for param in a.on_load.params:
            param.type = a.load_options[param.name].type


def unknown_option_hint(a: Analysis, name: str) -> str:
    """The hint for a load option's name read outside `on load:` (or a misspelt one)."""
    if name in a.load_options:
        return f"`{name}` is a load option: only `on load:` reads it; keep what a tool needs in a state field"
    return did_you_mean(name, a.load_options) if a.load_options else ""


def _name_span(node: ir.Field_) -> ir.Node:
    return ir.Node(line=node.line, col=node.col, end_line=node.line, end_col=node.col + len(node.name))
