"""Analysis pass 3, types: every expression and statement of every tool, helper, test
and task type-checked, with None-narrowing as mypy does it on the generated code, and
every name resolved. It annotates the IR in place (`Expr.ty`, `Name.ref`) for the
effects pass and lowering; built-in calls are checked by their registry entries. Its
walk of a tool's or helper's body also calls the effects pass's hooks
(`effects.BodyEffects`), so that the effects come from the same walk."""

from __future__ import annotations

from compiler import ir
from compiler.analyse import effects
from compiler.analyse.constants import const_value
from compiler.analyse.context import Analysis
from compiler.analyse.types.statements import StatementChecker
from compiler.ir import typesys as ts
from compiler.ir.tree import construct, walk
from compiler.library import runtime


def run(a: Analysis) -> None:
    """Type-check every helper and tool body, and the `on load:` block (a helper taking
    the load options, compiler/analyse/onload.py), inferring their effects on the way:
    the effects pass's rules, called from this walk (`effects.BodyEffects`), so that a
    body is walked once. The effects module decides the order (helpers callee-first)."""

    def check(callable_: ir.ToolDecl, is_helper: bool, hooks: effects.BodyEffects | None) -> None:
        TypeChecker(a, callable_, is_helper, effects=hooks).check()

    effects.infer_while_checking(a, check)


class TypeChecker(StatementChecker):
    """Type-checks one tool, helper, test or task: every expression gets its type (`ty`)
    and every name what it refers to (`ref`), which is what the effects pass reads.
    Built of one class per part of the language, each in a module of its own, every one
    below the next: `scopes.BodyScopes` < `expressions.ExpressionChecker` <
    `calls.CallChecker` < `statements.StatementChecker` < this, which checks a body's
    parameters and the body."""

    def check(self) -> None:
        assert self.callable is not None
        tool = self.callable
        if self.fx is not None:
            self.fx.begin()
        seen: set[str] = set()
        defaulted = False
        for param in tool.params:
            if param.name in seen:
                self.error("E2005", f"parameter `{param.name}` appears twice", param)
                continue
            seen.add(param.name)
            has_default = param.default is not None or (ts.is_optional(param.type) and not self.is_helper)
            if defaulted and not has_default:
                self.error("E2020", f"parameter `{param.name}` has no default but follows one that has", param)
            defaulted = defaulted or has_default
            name = _span(param.line, param.col, param.col + len(param.name))
            self.declare(param.name, param.type, "param", name)
            if self._shadows_silently(tool, param.name):
                self.warning(
                    "E2024",
                    f"parameter `{param.name}` shadows the state field `{param.name}`: "
                    f"in this body `{param.name}` is the parameter",
                    name,
                    hint=f"write `state.{param.name}` for the field, or give the parameter another name",
                )
            self._check_param_default(param)
        if tool.escape is not None:
            return  # the effects pass checks that it declares what it reads and writes
        terminates = self.block(tool.body)
        if not terminates and tool.returns.name != "None":
            self.error("E3011", f"`{tool.name}` can reach its end without returning {ts.show(tool.returns)}", tool)

    def _shadows_silently(self, tool: ir.ToolDecl, name: str) -> bool:
        """A parameter named like a state field that holds a container (a list, set, map,
        record or json value), in a body that never says `state.NAME`: there every `NAME`
        is the parameter, so a membership test or a loop meant for the field uses the
        parameter without a word (E2024). A body that writes `state.NAME` shows it knows;
        scalars (ids, names) often share a name with a field on purpose."""
        field_ = self.a.state.get(name)
        if field_ is None or not ts.is_container(field_.type, self.a.records):
            return False
        return not any(
            isinstance(node, ir.Attr) and node.name == name and isinstance(node.obj, ir.Name) and node.obj.id == "state"
            for node in walk(tool.body)
        )

    def _check_param_default(self, param: ir.Param) -> None:
        if param.default is not None:
            const_value(self.a, param.default, param.type, self.file, param.name)
        for constraint in param.constraints:
            self._check_constraint(param, constraint)

    def _check_constraint(self, param: ir.Param, constraint: ir.Constraint) -> None:
        base = ts.strip_optional(param.type)
        if base.name not in _CONSTRAINED[constraint.kind]:
            self.error(
                "E3013", f"`{constraint.kind}` does not apply to a parameter of type {ts.show(param.type)}", constraint
            )
            return
        expected = ts.STR if constraint.kind == "pattern" else (base if constraint.kind in ("min", "max") else ts.INT)
        ok, value = const_value(self.a, constraint.value, expected, self.file, f"{param.name} {constraint.kind}")
        if ok and constraint.kind == "pattern":
            problem = runtime._regex_problem(str(value))  # the matcher `_check_limits` runs
            if problem is not None:
                self.error("E3019", f"invalid pattern: {problem}", constraint.value)


_CONSTRAINED = {
    "min": ("int", "float", "number"),
    "max": ("int", "float", "number"),
    "min_length": ("str",),
    "max_length": ("str",),
    "pattern": ("str",),
    "min_items": ("list", "map"),
    "max_items": ("list", "map"),
}
"""The types (optional aside) a parameter constraint applies to, by kind."""


def _span(line: int, col: int, end_col: int) -> ir.Node:
    """A position on one line, for diagnostics: `ir.Node(...)` without its validation
    (one per parameter, 650 on a 5,000-line spec)."""
    return construct(
        ir.Node,
        {"line": line, "col": col, "end_line": line, "end_col": end_col},
        {"line", "col", "end_line", "end_col"},
    )
