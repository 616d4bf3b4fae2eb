"""Lowering of task families (docs/language.md §22.2) to the module-level functions of
`environment.py` that `FAMILIES` holds (the contract is docs/generated-package.md, "Task
families"): per family a `_plan_N(self, _seed)`, the plan run on a session with its
random built-ins seeded, returning the plan's values as JSON; and a `_solve_N(self,
_values)`, the solution run on a session, each tool call going through `call` as an
agent's would and recorded. Both are functions taking the session as `self`, so the
lowered statements (`self._undo`, `self._random_choice`, `self._helper`) read as in a
method; the names they add start with `_`, which no spec name may.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from compiler import ir
from compiler.lower.literals import py_str
from compiler.lower.pycode import EnvTables, Scope
from compiler.lower.pynames import names_in
from compiler.lower.statements import StatementEmitter

PLAN = "_plan_{}"
SOLVE = "_solve_{}"
"""The functions of family number N (in declaration order)."""


@dataclass
class LoweredFamilies:
    """The families' functions as source text, and the runtime helpers they use."""

    code: list[str] = field(default_factory=list)
    entries: list[tuple[str, str, str]] = field(default_factory=list)  # (name, plan function, solve function)
    helpers: set[str] = field(default_factory=set)
    seeds: bool = False  # a plan draws random values: the module seeds and restores the generator


def lower_families(env: ir.Environment, tables: EnvTables, kind: Callable[[ir.TypeRef], str]) -> LoweredFamilies:
    """The families' functions; `kind` writes a type's validation kind (`conform`'s)."""
    lowered = LoweredFamilies()
    seeded = "rng_state" in {f.name for f in env.state}
    for index, family in enumerate(env.families):
        plan, solve = PLAN.format(index), SOLVE.format(index)
        lowered.code.append(_plan_function(env, tables, family, plan, seeded, lowered.helpers))
        lowered.code.append(_solve_function(env, tables, family, solve, kind, lowered.helpers))
        lowered.entries.append((family.name, plan, solve))
    lowered.seeds = seeded and bool(env.families)
    return lowered


def _emitter(env: ir.Environment, tables: EnvTables, kind: str, stmts: list[ir.Stmt]) -> StatementEmitter:
    scope = Scope(kind=kind, names={"self", "state", *names_in(stmts)})
    return StatementEmitter(env, scope, tables)


def _plan_function(
    env: ir.Environment, tables: EnvTables, family: ir.FamilyDecl, name: str, seeded: bool, helpers: set[str]
) -> str:
    """The plan inside a journal like a write tool's: a failure rolls the session back
    whole; the seed's draws, and the generator put back as it was at the end, are
    journaled too (a fork records them)."""
    emitter = _emitter(env, tables, "plan", family.plan)
    lines = emitter.block(family.plan, 2) if family.plan else []  # no plan: one task, no values
    helpers |= emitter.scope.helpers
    values = [stmt.name for stmt in family.plan if isinstance(stmt, ir.Let)]
    result = "{" + ", ".join(f"{py_str(value)}: to_json({value})" for value in values) + "}"
    label = py_str(f"family `{family.name}`: ")
    body = [
        f"def {name}(self: Environment, _seed: int) -> dict[str, Any]:",
        f'    """Family `{family.name}`: the plan on `self`, its random built-ins seeded from `_seed`;',
        '    the values of its top-level `let`s as JSON. Its changes stay on `self`."""',
        *(["    state = self._state"] if _uses_state(lines) else []),
        f"    self._undo.tool = {py_str('family ' + family.name)}",
        "    try:",
        *(["        _restore = _seed_draws(self, _seed)"] if seeded else []),
        *lines,
        f"        _values: dict[str, Any] = {result}",
        *(["        _restore_draws(self, _restore)"] if seeded else []),
        "    except (DomainError, FamilyFailed) as _error:",
        "        self._undo.rollback()",
        f"        raise FamilyFailed({label} + str(_error)) from None",
        "    except BaseException:",
        "        self._undo.rollback()",
        "        raise",
        "    finally:",
        "        self._undo.finish()",
        "    return _values",
    ]
    return "\n".join(body) + "\n"


def _solve_function(
    env: ir.Environment,
    tables: EnvTables,
    family: ir.FamilyDecl,
    name: str,
    kind: Callable[[ir.TypeRef], str],
    helpers: set[str],
) -> str:
    """The solution with the plan's values bound (as the state holds such values: sets,
    int keys), its tool calls made through `call` and recorded in `_calls`."""
    emitter = _emitter(env, tables, "solution", family.solution)
    lines = emitter.block(family.solution, 2)
    helpers |= emitter.scope.helpers
    used = names_in(family.solution)
    bindings = []
    for let in family.plan:
        if isinstance(let, ir.Let) and let.name in used:
            ty = let.type if let.type is not None else let.value.ty
            what = kind(ty or ir.TypeRef(name="any"))
            bindings.append(
                f"        {let.name} = conform(_values.get({py_str(let.name)}), {what}, {py_str(let.name)})"
            )
    label = py_str(f"family `{family.name}`: ")
    body = [
        f"def {name}(self: Environment, _values: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:",
        f'    """Family `{family.name}`: the solution on `self` with the plan\'s `_values`; each tool call',
        '    made as an agent makes it (`call`), as (tool, JSON arguments, JSON result)."""',
        "    _calls: list[tuple[str, dict[str, Any], Any]] = []",
        *(["    state = self._state"] if _uses_state(lines) else []),
        "    try:",
        *bindings,
        *lines,
        "    except (DomainError, FamilyFailed) as _error:",
        f"        raise FamilyFailed({label} + str(_error)) from None",
        "    return _calls",
    ]
    return "\n".join(body) + "\n"


def _uses_state(lines: list[str]) -> bool:
    return any("state[" in line for line in lines)
