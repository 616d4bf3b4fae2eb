"""Analysis pass 1, symbols: the header, every declaration and its name, the built-in
state fields, and the types written in declarations resolved to canonical form (with
record cycles refused). Later passes look names up in the tables this pass fills."""

from __future__ import annotations

import keyword
import re
import sys
from collections.abc import Sequence
from typing import TypeVar

from compiler import ir
from compiler.analyse import onload, shapes
from compiler.analyse.context import Analysis
from compiler.analyse.declared_types import resolve_declared_types
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.library import builtins as bi

ENV_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def run(a: Analysis) -> None:
    check_header(a)
    declare(a)
    onload.declare(a)
    resolve_declared_types(a)
    onload.resolve_types(a)
    shapes.resolve_unions(a)


def check_header(a: Analysis) -> None:
    header = a.header
    if not ENV_NAME.match(header.name):
        a.error("E2016", f"environment name `{header.name}` is not lower_snake_case", header, header.file)
    elif header.name in sys.stdlib_module_names or header.name in ("compiler", "generated", "tests"):
        a.error(
            "E2019",
            f"environment name `{header.name}` is also a Python module name; its package would shadow it",
            header,
            header.file,
            hint=f"call it e.g. `{header.name}_env`",
        )
    if header.archetype and header.archetype not in bi.ARCHETYPES:
        a.error(
            "E2015",
            f"unknown archetype `{header.archetype}`",
            header.item_places.get("archetype", header),
            header.file,
            hint=did_you_mean(header.archetype, bi.ARCHETYPES) or "one of: " + ", ".join(bi.ARCHETYPES),
        )
    if header.rng not in bi.RNG_KINDS:
        a.error(
            "E2022",
            f"unknown random generator `{header.rng}`",
            header.item_places.get("rng", header),
            header.file,
            hint="one of: " + ", ".join(bi.RNG_KINDS),
        )
    if not ts.valid_temporal("datetime", header.clock):
        a.error(
            "E3001",
            f"clock start {header.clock!r} is not an ISO-8601 datetime",
            header.item_places.get("clock", header),
            header.file,
        )


def declare(a: Analysis) -> None:
    """Every declaration into its table, each name once and none reserved."""
    names = _Names(a)
    _declare_types(a, names)
    _declare_fields(a, names)
    _declare_callables(a, names)
    _declare_scenarios_tests_tasks(a)


class _Names:
    """The names taken so far across the spec (and by what)."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.taken: dict[str, str] = {"AuditEntry": "built-in record"}
        for name in bi.BUILTIN_STATE:
            self.taken[name] = "built-in state field"

    def claim(self, name: str, what: str, node: ir.Node, file: str) -> bool:
        if name in self.taken:
            self.a.error("E2001", f"`{name}` is already declared as a {self.taken[name]}", node, file)
            return False
        # Where the name lands in the generated code decides what it may not be.
        reason = bi.reserved_reason(name, _ROLES[what])
        if reason is not None:
            self.a.error("E2014", reason, self.a.name_span(node, name, file), file, hint="choose another name")
            return False
        self.taken[name] = what
        if bi.shadows_builtin(name, _ROLES[what]):
            self.a.warning(
                "E2042",
                f"{_ROLES[what]} `{name}` shadows the built-in function `{name}`: "
                f"in this spec `{name}(…)` calls the {_ROLES[what]}",
                self.a.name_span(node, name, file),
                file,
            )
        return True


_ROLES = {
    "enum": "enum",
    "record": "record",
    "state field": "state",
    "world field": "world",
    "helper fn": "helper",
    "tool": "tool",
}
"""What `_Names.claim` is asked about, as a role of `builtins.reserved_reason`."""


def _declare_types(a: Analysis, names: _Names) -> None:
    for enum in a.module.enums:
        if names.claim(enum.name, "enum", enum, enum.file):
            a.enums[enum.name] = enum
        seen: set[str] = set()
        for member in enum.members:
            if member in seen:
                a.error("E2005", f"enum {enum.name} lists `{member}` twice", enum, enum.file)
            if not member:
                a.error("E2043", f"enum {enum.name} has a member named by an empty string", enum, enum.file)
            if keyword.iskeyword(member) or member in ("lambda", "let", "fail", "require", "expect"):
                a.error("E2014", f"`{member}` cannot be an enum member", enum, enum.file)
            seen.add(member)
    for record in a.module.records:
        if names.claim(record.name, "record", record, record.file):
            a.records[record.name] = record
        check_field_names(a, record.fields, f"record {record.name}", record.file)


def _declare_fields(a: Analysis, names: _Names) -> None:
    """State and world fields; a domain spec may re-seed a prototype's field."""
    _declare_layered(names, [(d.file, d.fields) for d in a.module.state], a.state, "state field")
    add_builtin_state(a)
    _declare_layered(names, [(d.file, d.fields) for d in a.module.world], a.world, "world field")


_F = TypeVar("_F", ir.Field_, ir.WorldField)


def _declare_layered(
    names: _Names, blocks: Sequence[tuple[str, Sequence[_F]]], table: dict[str, _F], what: str
) -> None:
    """The fields of `state:` or `world:` blocks (file, fields), the prototype's first: a
    block of another file may give a field again (a new default), the same file may not."""
    declared_in: dict[str, str] = {}
    for file, fields in blocks:
        for field_ in fields:
            previous = declared_in.get(field_.name)
            if (previous is not None and previous != file) or names.claim(field_.name, what, field_, file):
                table[field_.name] = field_
                declared_in[field_.name] = file


def _declare_callables(a: Analysis, names: _Names) -> None:
    for fn in a.module.fns:
        if names.claim(fn.name, "helper fn", fn, fn.file):
            a.fns[fn.name] = fn
    for tool in a.module.tools:
        if names.claim(tool.name, "tool", tool, tool.file):
            a.tools[tool.name] = tool


def _declare_scenarios_tests_tasks(a: Analysis) -> None:
    for scenario in a.module.scenarios:
        if scenario.name in a.scenarios:
            a.error("E2001", f"scenario `{scenario.name}` is declared twice", scenario, scenario.file)
        a.scenarios[scenario.name] = scenario
    for group, what in ((a.module.tests, "test"), (a.module.tasks, "task"), (a.module.families, "family")):
        seen: set[str] = set()
        for decl in group:
            if decl.name in seen:
                a.error("E2001", f"{what} `{decl.name}` is declared twice", decl, decl.file)
            reason = bi.reserved_reason(decl.name, what)
            if reason is not None:
                a.error("E2014", reason, a.name_span(decl, decl.name, decl.file), decl.file, hint="choose another name")
            seen.add(decl.name)


def check_field_names(a: Analysis, fields: Sequence[ir.Field_], owner: str, file: str) -> None:
    seen: set[str] = set()
    for field_ in fields:
        if field_.name in seen:
            a.error("E2005", f"{owner} has two fields named `{field_.name}`", field_, file)
        if not field_.name:
            a.error("E2043", f"{owner} has a field named by an empty string", field_, file)
        reason = bi.field_reason(field_.name)
        if reason is not None:
            a.error("E2014", reason, _name_span(field_), file, hint="choose another name")
        seen.add(field_.name)


def add_builtin_state(a: Analysis) -> None:
    a.state[bi.AUDIT_LOG] = ir.Field_(
        name=bi.AUDIT_LOG, type=ts.list_of(ts.t("AuditEntry")), default=ir.ListLit(items=[])
    )
    clock = a.header.clock if ts.valid_temporal("datetime", a.header.clock) else ir.EnvHeader(name="x").clock
    a.state[bi.CLOCK] = ir.Field_(name=bi.CLOCK, type=ts.DATETIME, default=ir.Const(value=clock))
    used = builtins_called(a, STATE_ON_CALL)
    if "next_id" in used:
        a.state[bi.ID_COUNTERS] = ir.Field_(
            name=bi.ID_COUNTERS, type=ts.map_of(ts.STR, ts.INT), default=ir.MapLit(entries=[])
        )
    if used & RANDOM_FUNCTIONS:
        start = a.header.seed
        if a.header.rng == "python":
            # Python's generator: seeded with random_seed; rng_state counts the 32-bit words drawn.
            a.state[bi.RANDOM_SEED] = ir.Field_(name=bi.RANDOM_SEED, type=ts.INT, default=ir.Const(value=start))
            start = 0
        a.state[bi.RNG_STATE] = ir.Field_(name=bi.RNG_STATE, type=ts.INT, default=ir.Const(value=start))


RANDOM_FUNCTIONS = frozenset(name for name, changed in bi.EFFECTFUL_FUNCTIONS.items() if changed == bi.RNG_STATE)
"""Built-ins that draw from the random generator (random_int, random_choice, random_float,
uniform): a body calling one gives the spec the random state fields."""
STATE_ON_CALL = RANDOM_FUNCTIONS | {"next_id"}
"""The built-ins whose call gives the spec built-in state fields (`add_builtin_state`)."""


def builtins_called(a: Analysis, builtins: frozenset[str]) -> set[str]:
    """Those of `builtins` that some tool, helper or `on load:` body calls.

    A call is written out in some spec text (renames and fills included: the text at
    hand is what was parsed), so a name that no text contains is called nowhere. Most
    specs name none of the built-ins asked about, and then no body is walked: that walk
    of every body was a third of this pass on a 5,000-line spec (the effects pass walks
    only the helpers'). A module whose texts are not all at hand (given as IR) is walked."""
    decls: list[ir.ToolDecl | ir.FnDecl | ir.OnLoadDecl] = [*a.module.tools, *a.module.fns, *a.module.on_load]
    builtins = builtins - {fn.name for fn in a.module.fns}  # a helper shadowing one is not it (E2042)
    if all(decl.file in a.sources for decl in [*decls, *a.module.families]):
        builtins = frozenset(name for name in builtins if any(name in text for text in a.sources.values()))
    found: set[str] = set()
    if builtins:
        for decl in decls:
            found |= a.called_names(decl.body) & builtins
        for family in a.module.families:  # a plan draws its random values from the spec's generator
            found |= a.called_names(family.plan) & builtins
    return found


def _name_span(node: ir.Field_) -> ir.Node:
    """The whole name at the start of a declaration line, for the underline."""
    return ir.Node(line=node.line, col=node.col, end_line=node.line, end_col=node.col + len(node.name))
