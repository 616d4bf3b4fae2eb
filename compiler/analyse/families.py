"""Analysis pass 5b, task families (docs/language.md §22.2): each `family` declaration's
plan checked as a body that may write state and draw random values but call no tool,
its top-level `let`s collected as the family's values, its request slots checked
against those values, its solution checked as a body whose tool calls are the gold
calls, its `verify` lines as pure conditions on the final state."""

from __future__ import annotations

import re

from compiler import ir
from compiler.analyse.context import Analysis
from compiler.analyse.effects import EffectWalker, Summary
from compiler.analyse.tests_tasks import check_scenario_ref
from compiler.analyse.types import TypeChecker
from compiler.analyse.types.scopes import Local
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.ir.tree import walk

_SLOT = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
"""A request template's pieces that matter: escaped braces, a `{slot}`, a lone brace."""


def run(a: Analysis, summaries: dict[str, Summary]) -> None:
    """Each family (a name given twice, or reserved, is the symbols pass's)."""
    for family in a.module.families:
        check_family(a, family, summaries)


def check_family(a: Analysis, family: ir.FamilyDecl, summaries: dict[str, Summary]) -> None:
    if family.scenario:
        check_scenario_ref(a, family.scenario, family.item_places.get("scenario", family), family.file)
    for part, missing in (("request", not family.requests), ("solution", not family.solution)):
        if missing:
            a.error("E5003", f"family `{family.name}` has no `{part}`", family, family.file)
    if not family.verify:
        a.error("E5003", f"family `{family.name}` has no `verify` line", family, family.file)
    values = _check_plan(a, family, summaries)
    _check_requests(a, family, values)
    _check_solution(a, family, values, summaries)
    _check_verify(a, family, values, summaries)


def plan_values(family: ir.FamilyDecl) -> list[ir.Let]:
    """The plan's top-level `let`s: the family's values, in the order they are bound."""
    return [stmt for stmt in family.plan if isinstance(stmt, ir.Let)]


def _check_plan(a: Analysis, family: ir.FamilyDecl, summaries: dict[str, Summary]) -> dict[str, ir.TypeRef]:
    """Type-check the plan (state writes allowed, tools not); its values and their types."""
    checker = TypeChecker(a, None, is_helper=False, file=family.file, allow_tools=False)
    checker.family_part = "plan"
    checker.block(family.plan)
    walker = EffectWalker(a, summaries, None, is_helper=False, file=family.file)
    walker.in_test = False  # a plan changes the state it is given: the task's changes
    walker.block(family.plan)
    return {let.name: checker.declared.get(let.name, ts.ANY) for let in plan_values(family)}


def _with_values(checker: TypeChecker, family: ir.FamilyDecl, values: dict[str, ir.TypeRef]) -> TypeChecker:
    for let in plan_values(family):
        if let.name in values:
            checker.scopes[0][let.name] = Local(values[let.name], "local")
    return checker


def _check_requests(a: Analysis, family: ir.FamilyDecl, values: dict[str, ir.TypeRef]) -> None:
    """Each `{slot}` names a value of the plan; `{{` and `}}` are braces (E2040)."""
    for index, request in enumerate(family.requests):
        place = family.request_places[index] if index < len(family.request_places) else family
        for match in _SLOT.finditer(request):
            piece, slot = match.group(0), match.group(1)
            if piece in ("{{", "}}"):
                continue
            where = _slot_span(place, request, match)
            if slot is None:
                a.error("E2040", f"a lone `{piece}` in a request; write `{piece * 2}` for a brace", where, family.file)
            elif slot not in values:
                hint = did_you_mean(slot, values) or (
                    f"the plan's values: {', '.join(values)}" if values else "bind one in the plan: `let NAME = ...`"
                )
                a.error("E2040", f"`{{{slot}}}` names no value of the plan", where, family.file, hint=hint)


def _slot_span(place: ir.Node, request: str, match: re.Match[str]) -> ir.Node:
    """Where a slot is in the spec: in a one-line `request "..."` without escapes, its own
    columns (after `request "`); else the whole line."""
    if "\n" in request or "\\" in request or '"' in request:
        return place
    col = place.col + len('request "') + match.start()
    return ir.Node(line=place.line, col=col, end_line=place.line, end_col=col + len(match.group(0)))


def _check_solution(
    a: Analysis, family: ir.FamilyDecl, values: dict[str, ir.TypeRef], summaries: dict[str, Summary]
) -> None:
    """A body whose tool calls run the tools; at least one of them writes (E5003)."""
    checker = _with_values(TypeChecker(a, None, is_helper=False, file=family.file), family, values)
    checker.block(family.solution)
    walker = EffectWalker(a, summaries, None, is_helper=False, file=family.file)
    walker.block(family.solution)
    called = [
        node.func.id
        for node in walk(family.solution)
        if isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.ref == "tool"
    ]
    if family.solution and not any(a.tools[name].writes for name in called if name in a.tools):
        where = family.item_places.get("solution", family)
        what = "calls no tool" if not called else "calls only tools that read"
        a.error(
            "E5003", f"the solution of family `{family.name}` {what}; it must call a write tool", where, family.file
        )


def _check_verify(
    a: Analysis, family: ir.FamilyDecl, values: dict[str, ir.TypeRef], summaries: dict[str, Summary]
) -> None:
    """Conditions on the final state (no tools), the plan's values in scope; `each NAME in
    EXPR:` binds NAME to each item of a list or set; a weight is positive (E2041)."""
    checker = _with_values(TypeChecker(a, None, is_helper=False, file=family.file, allow_tools=False), family, values)
    checker.family_part = "verify"
    walker = EffectWalker(a, summaries, None, is_helper=False, file=family.file)
    for line in family.verify:
        checker.push()
        if line.over is not None:
            over = checker.expr(line.over, None)
            item = _item_type(over)
            if item is None:
                checker.error("E3004", f"`each` goes over a list or set, not {ts.show(over)}", line.over)
                item = ts.ANY
            checker.declare(line.each, item, "loop", line)
            walker.expr(line.over)
        checker.condition(line.cond)
        walker.expr(line.cond)
        checker.pop()
        if not line.weight > 0:
            a.error("E2041", f"a weight is a positive number, not {line.weight:g}", line, family.file)


def _item_type(ty: ir.TypeRef) -> ir.TypeRef | None:
    base = ts.strip_optional(ty)
    if base.name in ("list", "set") and base.args:
        return base.args[0]
    return ts.ANY if base.name == "any" else None
