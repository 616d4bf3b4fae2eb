"""Analysis pass 4, effects: which state fields each tool and helper reads and writes.

Rules applied along a walk of the typed bodies (they need `Expr.ty` and `Name.ref` from
the types pass, nothing else): `BodyEffects`, whose hooks the type checker calls as it
checks a tool's or helper's body, so that each body is walked once
(`infer_while_checking`), and which `EffectWalker` drives over the typed IR by itself
where that walk is not to be had. Values that are containers may alias state: a local bound to
`tickets[id]` is part of `tickets`, so `t.status = ...` writes `tickets`. Each local
carries the state fields it may alias, through lets, assignments, loops, comprehensions,
helper calls (their summaries, parameters mapped to arguments) and maps of records. The
inferred sets become `reads`/`writes`/`errors` of each tool and helper and are checked
against what the spec declares. Changes a test or a verify condition may not make are
reported here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler import ir, library
from compiler.analyse.comparisons import operand_order
from compiler.analyse.context import Analysis, set_field
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.ir.tree import children, is_state_attr
from compiler.library import builtins as bi

_CONTAINERS = frozenset({*ts.CONTAINERS, "any", ts.ZIP})
"""Types whose values are mutable references, with `any` (`ts.is_container`), records aside,
and a `zip` of lists, whose loop variables are the lists' items."""
PARAM_ROOT = "@"  # roots starting with this name a helper's parameter, not a state field
WORLD_ROOT = "!"  # roots starting with this are world data, which nothing may change
MANAGED = frozenset({bi.AUDIT_LOG, bi.ID_COUNTERS, bi.RNG_STATE})
"""Built-in fields a helper's built-in calls change; its callers change them too."""


@dataclass(slots=True)
class Effects:
    """What one body does: each field with the first node that reads or writes it."""

    reads: dict[str, ir.Node] = field(default_factory=dict)
    writes: dict[str, ir.Node] = field(default_factory=dict)
    return_roots: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Summary:
    """What a helper does, as its callers see it (parameters as `@index` roots)."""

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    return_roots: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)


_NOTHING = Summary()
"""The summary of a helper not summarised (yet): it does nothing. Never changed."""


@dataclass(slots=True)
class _Alias:
    """`outer`: state fields the value itself may be part of; `roots`: those anything
    reachable from it may belong to. Frozen sets, which an assignment replaces (`|=`),
    so that a local of a scalar shares the empty one."""

    roots: frozenset[str] = frozenset()
    outer: frozenset[str] = frozenset()


def run(a: Analysis) -> dict[str, Summary]:
    """Infer every helper's and tool's effects, store them on the declarations, and
    check them against declared `reads`/`writes`. Returns the helper summaries.

    The effects of the bodies the types pass inferred as it checked them
    (`infer_while_checking`) are taken as they are; any other body is walked here."""
    summaries: dict[str, Summary] = {}
    for group in helper_groups(a):
        recursive = _recursive(a, group)
        if recursive and not all(id(a.fns[name]) in a.inferred_effects for name in group):
            _fixpoint(a, summaries, group)
        for name in group:
            fn = a.fns[name]
            effects = _effects_of(a, summaries, fn, is_helper=True)
            summaries[name] = _summary(effects)
            compare_declared(a, fn, effects)
            set_field(fn, "reads", sorted(effects.reads))
            set_field(fn, "writes", sorted(w for w in effects.writes if not w.startswith(PARAM_ROOT)))
            set_field(fn, "errors", sorted(effects.errors))
            set_field(fn, "recursion", group if recursive else [])
    if a.on_load is not None:  # like a helper; what it reads and writes is documented
        effects = _effects_of(a, summaries, a.on_load, is_helper=True)
        set_field(a.on_load, "reads", sorted(r for r in effects.reads if not r.startswith(PARAM_ROOT)))
        set_field(a.on_load, "writes", sorted(w for w in effects.writes if not w.startswith((PARAM_ROOT, WORLD_ROOT))))
        set_field(a.on_load, "errors", sorted(effects.errors))
    for tool in a.tools.values():
        effects = _effects_of(a, summaries, tool, is_helper=False)
        set_field(tool, "reads", sorted(r for r in effects.reads if not r.startswith(PARAM_ROOT)))
        set_field(tool, "writes", sorted(w for w in effects.writes if not w.startswith((PARAM_ROOT, WORLD_ROOT))))
        set_field(tool, "errors", sorted(effects.errors | {"invalid_argument"}))
        compare_declared(a, tool, effects)
        if not tool.side_effect:
            public = [w for w in tool.writes if not bi.is_private(w)]  # the agent is not told of private fields
            side_effect = (
                f"modifies {', '.join(public)}" if public else "modifies private state" if tool.writes else "none"
            )
            set_field(tool, "side_effect", side_effect)
    return summaries


def _effects_of(a: Analysis, summaries: dict[str, Summary], callable_: ir.ToolDecl, is_helper: bool) -> Effects:
    """A body's effects: as the types pass inferred them (reporting what that found),
    or from a walk of its own."""
    found = a.inferred_effects.pop(id(callable_), None)
    if found is None:
        return EffectWalker(a, summaries, callable_, is_helper).check()
    assert isinstance(found, BodyEffects) and found.held is not None
    for code, message, node, hint in found.held:
        a.error(code, message, node, found.file, hint)
    return found.effects


def _recursive(a: Analysis, group: list[str]) -> bool:
    return len(group) > 1 or group[0] in a.called_names(a.fns[group[0]].body)


Check = Callable[[ir.ToolDecl, bool, "BodyEffects | None"], None]
"""The types pass's check of one body (`callable, is_helper, hooks`)."""


def infer_while_checking(a: Analysis, check: Check) -> None:
    """Type-check every body with `check` and infer its effects from the same walk (the
    checker calls the hooks of a `BodyEffects`), for `run` to take from
    `a.inferred_effects`: one walk of each body instead of two.

    Helpers go callee-first (`helper_groups`): a call's effects are the callee's
    summary. A recursive group is checked first and then walked by `EffectWalker` until
    its summaries settle (`_fixpoint`), as `run` would. A body whose check reports
    anything is walked again by `EffectWalker` (after an error a check may skip a part,
    or go another way), as is a `python` or `llm` body; either way the diagnostics and
    the effects are those of the walk `run` would make."""
    summaries: dict[str, Summary] = {}
    for group in helper_groups(a):
        if not _recursive(a, group):
            fn = a.fns[group[0]]
            summaries[fn.name] = _summary(_checked(a, summaries, fn, True, check))
            continue
        for name in group:
            check(a.fns[name], True, None)
        _fixpoint(a, summaries, group)
        for name in group:
            walker = EffectWalker(a, summaries, a.fns[name], is_helper=True)
            walker.held = []
            summaries[name] = _summary(walker.check())
            a.inferred_effects[id(a.fns[name])] = walker
    for tool in a.tools.values():
        _checked(a, summaries, tool, False, check)
    if a.on_load is not None:
        _checked(a, summaries, a.on_load, True, check)


def _checked(
    a: Analysis, summaries: dict[str, Summary], callable_: ir.ToolDecl, is_helper: bool, check: Check
) -> Effects:
    """Check one body, inferring its effects on the way (see `infer_while_checking`).
    What the effects rules report is held for the effects pass to report."""
    hooks = None if callable_.escape is not None else BodyEffects(a, summaries, callable_, is_helper)
    if hooks is not None:
        hooks.held = []
    reported = len(a.diags)
    check(callable_, is_helper, hooks)
    if hooks is None or not hooks.exact or len(a.diags) != reported:
        hooks = EffectWalker(a, summaries, callable_, is_helper)
        hooks.held = []
        hooks.check()
    a.inferred_effects[id(callable_)] = hooks
    return hooks.effects


def _summary(effects: Effects) -> Summary:
    return Summary(set(effects.reads), set(effects.writes), set(effects.return_roots), set(effects.errors))


def _fixpoint(a: Analysis, summaries: dict[str, Summary], group: list[str]) -> None:
    """Summaries of helpers that call one another: each starts empty and grows with what
    the walks of the group find, until a round adds nothing (the sets only grow and are
    bounded by the state fields, parameters and error kinds, so this ends). The rounds
    report nothing: the caller walks each helper once more, with the final summaries."""
    for name in group:
        summaries[name] = Summary()
    reported = len(a.diags)
    changed = True
    while changed:
        changed = False
        for name in group:
            found = _summary(EffectWalker(a, summaries, a.fns[name], is_helper=True).check())
            if found != summaries[name]:
                summaries[name] = found
                changed = True
    del a.diags[reported:]


def helper_groups(a: Analysis) -> list[list[str]]:
    """Helpers as the strongly connected components of the call graph, callees first
    (Tarjan's algorithm yields them in that order): a group of more than one helper, or
    one that calls itself, is recursive. Each group lists its helpers in spec order."""
    calls = {name: sorted(a.called_names(fn.body) & set(a.fns)) for name, fn in a.fns.items()}
    position = {name: index for index, name in enumerate(a.fns)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(name: str) -> None:  # recursion depth: the longest call chain of helpers
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for callee in calls[name]:
            if callee not in index:
                visit(callee)
                low[name] = min(low[name], low[callee])
            elif callee in on_stack:
                low[name] = min(low[name], index[callee])
        if low[name] == index[name]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == name:
                    break
            groups.append(sorted(group, key=position.__getitem__))

    for name in a.fns:
        if name not in index:
            visit(name)
    return groups


def compare_declared(a: Analysis, tool: ir.ToolDecl, effects: Effects) -> None:
    """Declared `reads`/`writes` must be exactly what the body does (built-ins aside)."""
    if tool.escape is not None and (tool.declared_reads is None or tool.declared_writes is None):
        return  # E4005 already says what is missing
    implicit = set(bi.BUILTIN_STATE)
    for declared, inferred, extra_code, missing_code, verb in (
        (tool.declared_writes, effects.writes, "E4001", "E4002", "writes"),
        (tool.declared_reads, effects.reads, "E4003", "E4008", "reads"),
    ):
        if declared is None:
            continue
        for name in declared:
            if name not in a.state:
                a.error(
                    "E2006", f"`{verb} {name}`: no such state field", tool, tool.file, hint=did_you_mean(name, a.state)
                )
        actual = {n for n in inferred if not n.startswith(PARAM_ROOT)}
        for name in sorted(actual - set(declared) - implicit):
            a.error(
                extra_code,
                f"tool `{tool.name}` {verb[:-1]}s `{name}` but does not declare it",
                inferred[name],
                tool.file,
            )
        for name in sorted(set(declared) - actual):
            if name in a.state:
                a.error(
                    missing_code,
                    f"tool `{tool.name}` declares `{verb} {name}` but never {verb[:-1]}s it",
                    tool,
                    tool.file,
                )


class BodyEffects:
    """What one body reads, writes and raises, as a walk of its typed IR in the order the
    types pass checks it finds it (so the node reported first for a field is the same),
    and which state fields its locals may alias.

    The walk calls the hooks below at fixed points: the type checker's own walk as it
    checks a tool's or helper's body (compiler/analyse/types/, so that each expression
    is visited once), or `EffectWalker`'s for tests, tasks, recursive helpers and a body
    the type checker found errors in. The hooks hold all of the pass's rules; a walk only
    decides when they run."""

    __slots__ = (
        "a",
        "summaries",
        "callable",
        "is_helper",
        "in_test",
        "file",
        "scopes",
        "effects",
        "touched",
        "held",
        "exact",
        "loops",
        "lambdas",
        "growth",
        "reported",
    )

    def __init__(
        self,
        analysis: Analysis,
        summaries: dict[str, Summary],
        callable_: ir.ToolDecl | None,
        is_helper: bool,
        file: str = "",
    ) -> None:
        self.a = analysis
        self.summaries = summaries
        self.callable = callable_
        self.is_helper = is_helper
        self.in_test = callable_ is None
        self.file = callable_.file if callable_ else file
        self.scopes: list[dict[str, _Alias]] = [{}]
        self.effects = Effects()
        self.touched = False  # did the current target resolve into state?
        self.held: list[tuple[str, str, ir.Node | None, str]] | None = None
        """Diagnostics not reported yet: the type checker's walk holds them back until the
        body is known to have checked cleanly (`_checked`)."""
        self.exact = True
        """False once the type checker's walk went another way than `EffectWalker` would
        (a comparison chain with a literal before a link's other operand), or a loop's body
        made a local of an enclosing scope alias more (its body must be walked again)."""
        self.loops: list[int] = []
        """The depth of `scopes` at each enclosing loop's own scope, innermost last."""
        self.lambdas: list[int] = []
        """The depth of `scopes` at each enclosing lambda's own scope."""
        self.growth: list[int] = []
        """The scope depth of each local a loop's body made alias more, bound outside that
        loop: the loop's earlier statements may have changed it, unseen, on the next round."""
        self.reported: set[tuple[str, str, int]] = set()
        """Diagnostics given already, so that a loop's body walked again repeats none."""

    def error(self, code: str, message: str, node: ir.Node | None, hint: str = "") -> None:
        key = (code, message, id(node))
        if key in self.reported:
            return
        self.reported.add(key)
        if self.held is not None:
            self.held.append((code, message, node, hint))
        else:
            self.a.error(code, message, node, self.file, hint)

    # ------------------------------------------------------------------ scopes
    def lookup(self, name: str) -> _Alias | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, name: str, roots: set[str], outer: set[str] | None = None) -> None:
        self.scopes[-1][name] = _Alias(frozenset(roots), frozenset(roots if outer is None else outer))

    def enter(self) -> None:
        """A block's scope (a branch of an `if`, a loop, a comprehension, a lambda)."""
        self.scopes.append({})

    def leave(self) -> None:
        if self.loops and self.loops[-1] == len(self.scopes):
            self.loops.pop()
        if self.lambdas and self.lambdas[-1] == len(self.scopes):
            self.lambdas.pop()
        self.scopes.pop()

    def bound_outside_loop(self, name: str) -> int | None:
        """The scope depth of a local bound outside the innermost enclosing loop."""
        if not self.loops:
            return None
        for depth in range(len(self.scopes), 0, -1):
            if name in self.scopes[depth - 1]:
                return depth if depth < self.loops[-1] else None
        return None

    # ------------------------------------------------------------------ hooks: the body
    def begin(self) -> None:
        """Before the body: the parameters (a helper's containers are `@index` roots)."""
        assert self.callable is not None
        scope = self.scopes[-1]
        for index, param in enumerate(self.callable.params):
            container = self.is_helper and self.holds_references(param.type)
            root = frozenset({PARAM_ROOT + str(index)})
            scope[param.name] = _Alias(root, root) if container else _Alias()

    def declared_effects(self, tool: ir.ToolDecl) -> None:
        """A `python` or `llm` body is opaque: its declared effects are its effects."""
        if tool.declared_writes is None or tool.declared_reads is None:
            kind = tool.escape.kind if tool.escape else ""
            self.error("E4005", f"`{tool.name}` has a {kind} body, so it must declare `reads` and `writes`", tool)
            return
        for name in tool.declared_reads:
            self.effects.reads.setdefault(name, tool)
        for name in tool.declared_writes:
            self.effects.writes.setdefault(name, tool)

    # ------------------------------------------------------------------ hooks: statements
    def let(self, stmt: ir.Let) -> None:
        """After the value of a `let`."""
        if self.may_alias(stmt.value):
            roots = self.roots(stmt.value)
            self.bind(stmt.name, roots, self.outer(stmt.value, roots))
        else:
            self.scopes[-1][stmt.name] = _Alias()

    def place_start(self) -> None:
        """Before the target of an assignment or a `del` is walked."""
        self.touched = False

    def assign_target(self, stmt: ir.Assign) -> None:
        """After the target of an assignment, before its value."""
        self.target(stmt.target)
        set_field(stmt, "touches_state", self.touched)
        if stmt.op != "=" and isinstance(stmt.target, ir.Name) and stmt.target.ref == "state":
            self.effects.reads.setdefault(stmt.target.id, stmt.target)

    def assign_value(self, stmt: ir.Assign) -> None:
        """After the value of an assignment: a local now aliases what the value does, too."""
        if isinstance(stmt.target, ir.Name) and stmt.target.ref in ("local", "param"):
            alias = self.lookup(stmt.target.id)
            if alias is not None:
                roots, outer = alias.roots | self.roots(stmt.value), alias.outer | self.outer(stmt.value)
                depth = self.bound_outside_loop(stmt.target.id)
                if (roots, outer) != (alias.roots, alias.outer) and depth is not None:
                    self.growth.append(depth)  # what the loop did before this, next time round, was unseen
                    self.exact = False
                alias.roots, alias.outer = roots, outer

    def returned(self, stmt: ir.Return) -> None:
        """After the value of a `return` (what a helper returns may alias its arguments;
        what a tool returns goes to the agent as data)."""
        if stmt.value is not None and self.is_helper:
            self.effects.return_roots |= self.roots(stmt.value)

    def raises(self, call: ir.ErrorCall) -> None:
        """A `require ... else` or `fail` error."""
        self.effects.errors.add(call.kind)

    def delete_target(self, stmt: ir.Delete) -> None:
        """`del m[k]`, and `del r.field` (a field that may be absent): a change of the map
        or record, so a write of what it is part of. After the map or record is walked,
        before the key."""
        assert isinstance(stmt.target, (ir.Index, ir.Attr))
        if isinstance(stmt.target.obj, ir.Name):
            self.target(stmt.target.obj, mutate=True)
        else:
            self.write_roots(self.outer(stmt.target.obj), stmt.target)
        set_field(stmt, "touches_state", self.touched)

    def loop_start(self, targets: Sequence[str], iterable: ir.Expr) -> None:
        """After what a loop or a comprehension goes over: its scope, its variables (those
        that are containers are parts of it)."""
        roots = self.roots(iterable)
        zipped = _zipped_lists(iterable, len(targets))
        each = [self.roots(arg) for arg in zipped] if zipped else [roots] * len(targets)
        self.enter()
        self.loops.append(len(self.scopes))
        iter_type = ts.strip_optional(iterable.ty or ts.ANY)
        types = ts.element_types(iter_type, len(targets)) or [ts.ANY] * len(targets)
        for name, ty, its_roots in zip(targets, types, each, strict=True):
            self.bind(name, its_roots if ts.is_container(ty, self.a.records) else set())

    def lambda_start(self, params: Sequence[str]) -> None:
        """A lambda's parameters alias what the call hands it, which is not followed: a
        change made through them is refused (`method_call`)."""
        self.enter()
        self.lambdas.append(len(self.scopes))
        for name in params:
            self.bind(name, set())

    # ------------------------------------------------------------------ targets
    def target(self, expr: ir.Expr, mutate: bool = False) -> None:
        """An assigned or mutated place (walked already): a write to the state field it lives in."""
        if isinstance(expr, ir.Name):
            if expr.ref in ("local", "param"):
                alias = self.lookup(expr.id)
                if mutate and alias is not None:
                    self.write_roots(alias.outer, expr)
            elif expr.ref == "state" and expr.id in self.a.state:
                self.state_target(expr, expr.id, mutate)
            elif expr.ref == "world":
                self.error("E4006", f"world data `{expr.id}` cannot be changed", expr)
        elif is_state_attr(expr):
            assert isinstance(expr, ir.Attr)
            if expr.name in self.a.state:
                self.state_target(expr, expr.name, mutate)
        elif isinstance(expr, (ir.Attr, ir.Index)):
            self.write_roots(self.outer(expr.obj), expr)

    def state_target(self, expr: ir.Expr, name: str, mutate: bool) -> None:
        if name in bi.RUNTIME_KEPT:
            self.error("E4009", f"`{name}` is kept by the runtime", expr)
        if name == bi.AUDIT_LOG:
            self.error("E4004", "the audit log is append-only: use `audit(action, ...)`", expr)
        if mutate:
            self.effects.reads.setdefault(name, expr)
        self.effects.writes.setdefault(name, expr)
        self.touched = True
        if self.in_test:
            self.error("E3008", "tests and family solutions change state only through tools", expr)

    def write_roots(self, roots: set[str] | frozenset[str], node: ir.Node) -> None:
        self.touched = self.touched or bool(roots)
        for root in roots:
            if root in bi.RUNTIME_KEPT:
                self.error("E4009", f"`{root}` is kept by the runtime", node)
            if root.startswith(WORLD_ROOT):
                self.error("E4006", f"world data `{root[len(WORLD_ROOT) :]}` cannot be changed", node)
                continue
            if root == bi.AUDIT_LOG:
                self.error("E4004", "the audit log is append-only: use `audit(action, ...)`", node)
            if self.in_test and not root.startswith(PARAM_ROOT):
                self.error("E3008", "tests and family solutions change state only through tools", node)
            self.effects.writes.setdefault(root, node)

    # ------------------------------------------------------------------ hooks: expressions
    def read(self, name: str, node: ir.Expr) -> None:
        """A state field read by name or as `state.name`."""
        if name in self.a.state:
            self.effects.reads.setdefault(name, node)

    def method_call(self, expr: ir.Call, func: ir.Attr) -> None:
        """After the receiver of a method call, before its arguments."""
        receiver = ts.strip_optional(func.ty or ts.ANY).name
        entry = library.method("str" if receiver in ts.TEMPORAL else receiver, func.name)
        if entry is not None and entry.mutates and self.lambdas:
            self.error("E4013", f"`{func.name}` changes a value inside a lambda", expr)
        if entry is not None and entry.mutates:
            self.touched = False
            if isinstance(func.obj, ir.Name):
                self.target(func.obj, mutate=True)
            else:
                self.write_roots(self.outer(func.obj), func.obj)
            set_field(expr, "mutates_state", self.touched)

    def builtin_effects(self, expr: ir.Call, name: str) -> None:
        """Before the arguments of a built-in function's call."""
        effect = library.FUNCTIONS[name].effect
        if effect.writes and self.in_test:
            self.error("E3005", f"`{name}` changes state; tests change state only through tools", expr.func)
            return
        if effect.writes:
            self.effects.writes.setdefault(effect.writes, expr)
        for field_name in effect.reads:
            if field_name in self.a.state:
                self.effects.reads.setdefault(field_name, expr)

    def helper_effects(self, expr: ir.Call, name: str) -> None:
        """After the arguments of a helper's call."""
        summary = self.summaries.get(name, _NOTHING)
        if self.in_test and any(not w.startswith(PARAM_ROOT) for w in summary.writes):
            self.error("E3008", f"`{name}` changes state; tests change state only through tools", expr.func)
        for field_name in summary.reads:
            if not field_name.startswith(PARAM_ROOT):
                self.effects.reads.setdefault(field_name, expr)
        written = self._map_param_roots(summary.writes, expr)
        managed = MANAGED & written
        for field_name in managed:
            self.effects.writes.setdefault(field_name, expr)
        self.write_roots(written - managed, expr)
        self.effects.errors |= summary.errors

    # ------------------------------------------------------------------ aliasing
    def may_alias(self, expr: ir.Expr | None) -> bool:
        """Whether the value is a container (`holds_references` of its type, written out:
        asked of every value bound, assigned and returned, and of their parts)."""
        ty = None if expr is None else expr.ty
        if ty is None:
            return False
        name = ty.args[0].name if ty.name == "optional" else ty.name
        return name in _CONTAINERS or name in self.a.records

    def holds_references(self, ty: ir.TypeRef) -> bool:
        """`ts.is_container`, written out (asked of every parameter, and in `may_alias`)."""
        name = ty.args[0].name if ty.name == "optional" else ty.name
        return name in _CONTAINERS or name in self.a.records

    def roots(self, expr: ir.Expr | None) -> set[str]:
        """State fields (and helper parameters) a container value may alias."""
        if not self.may_alias(expr):
            return set()
        assert expr is not None
        cls = expr.__class__  # (the IR's expression classes have no subclasses)
        if cls is ir.Name:
            assert isinstance(expr, ir.Name)
            if expr.ref in ("local", "param"):
                alias = self.lookup(expr.id)
                return set(alias.roots) if alias else set()
            if expr.ref == "state":
                return {expr.id}
            if expr.ref == "world":
                return {WORLD_ROOT + expr.id}
            return set()
        if cls is ir.Call:
            assert isinstance(expr, ir.Call)
            return self._call_roots(expr)
        if is_state_attr(expr):
            assert isinstance(expr, ir.Attr)
            return {expr.name}
        if cls is ir.Const or cls is ir.FString:
            return set()
        found: set[str] = set()
        for child in children(expr):
            found |= self.roots(child)
        return found

    def outer(self, expr: ir.Expr | None, roots: set[str] | None = None) -> set[str]:
        """State fields the value itself may be part of (so changing it changes them);
        `roots`, when given, are `self.roots(expr)`, known already.

        Fresh containers (literals, comprehensions, sorted(...), slices, copies) are
        nobody's: changing the new list leaves state alone, even if its items alias."""
        if not self.may_alias(expr):
            return set()
        assert expr is not None
        if isinstance(expr, ir.Name):
            if expr.ref in ("local", "param"):
                alias = self.lookup(expr.id)
                return set(alias.outer) if alias else set()
            return self.roots(expr) if roots is None else roots
        if is_state_attr(expr):
            return self.roots(expr) if roots is None else roots
        if isinstance(expr, (ir.Attr, ir.Index)):
            return self.roots(expr.obj)
        if isinstance(expr, ir.Ternary):
            return self.outer(expr.then) | self.outer(expr.other)
        if isinstance(expr, ir.Call):
            func = expr.func
            if isinstance(func, ir.Name) and func.ref == "fn":
                return self._call_roots(expr) if roots is None else roots
            if isinstance(func, ir.Name) and func.ref == "builtin" and _shares_argument(func.id) and expr.args:
                if len(expr.args) == 1:
                    return self.roots(expr.args[0])  # an item of a list, or the value itself
                return set().union(*(self.outer(arg) for arg in expr.args))
            if isinstance(func, ir.Attr) and func.name in ("get", "pop"):
                return self.roots(func.obj)
        return set()

    def _call_roots(self, call: ir.Call) -> set[str]:
        func = call.func
        if isinstance(func, ir.Name):
            if func.id == "copy" and func.ref != "fn":
                return set()
            if func.ref == "fn":
                summary = self.summaries.get(func.id, _NOTHING)
                return self._map_param_roots(summary.return_roots, call)
        found: set[str] = set()
        for child in children(call):
            found |= self.roots(child)
        return found

    def _map_param_roots(self, roots: set[str], call: ir.Call) -> set[str]:
        """A helper's `@index` roots as the roots of the caller's arguments."""
        if not roots:
            return set()
        assert isinstance(call.func, ir.Name)
        fn = self.a.fns.get(call.func.id)
        mapped: set[str] = set()
        for root in roots:
            if not root.startswith(PARAM_ROOT):
                mapped.add(root)
                continue
            index = int(root[len(PARAM_ROOT) :])
            argument = _argument_for(call, fn, index) if fn else None
            if argument is not None:
                mapped |= self.roots(argument)
        return mapped


class EffectWalker(BodyEffects):
    """A walk of its own over a typed body that calls the hooks: for tests and tasks
    (`tests_tasks`), for recursive helpers (walked until their summaries settle), for a
    body with type errors (whose check may skip parts or go another way), and for a typed
    IR the type checker did not walk in this analysis."""

    __slots__ = ()

    def check(self) -> Effects:
        assert self.callable is not None
        self.begin()
        if self.callable.escape is not None:
            self.declared_effects(self.callable)
        else:
            self.block(self.callable.body)
        return self.effects

    def test_steps(self, steps: Sequence[ir.TestStmt]) -> None:
        """A test's lines: what they may not change is reported."""
        for step in steps:
            if isinstance(step, ir.TestLet):
                self.expr(step.value)
                self.bind(step.name, set())
            elif isinstance(step, (ir.TestCall, ir.ExpectRaises)):
                self.expr(step.call)
            elif isinstance(step, ir.ExpectTrue):
                self.expr(step.cond)

    # ------------------------------------------------------------------ statements
    def block(self, stmts: Sequence[ir.Stmt]) -> None:
        for stmt in stmts:
            walk = _STMT_WALKS.get(stmt.__class__)
            if walk is not None:
                walk(self, stmt)

    def scoped_block(self, stmts: Sequence[ir.Stmt]) -> None:
        self.enter()
        self.block(stmts)
        self.leave()

    def stmt_let(self, stmt: ir.Let) -> None:
        self.expr(stmt.value)
        self.let(stmt)

    def stmt_assign(self, stmt: ir.Assign) -> None:
        self.place_start()
        self.walk_target(stmt.target)
        self.assign_target(stmt)
        self.expr(stmt.value)
        self.assign_value(stmt)

    def stmt_return(self, stmt: ir.Return) -> None:
        if stmt.value is not None:
            self.expr(stmt.value)
            self.returned(stmt)

    def stmt_require(self, stmt: ir.Require) -> None:
        self.expr(stmt.cond)
        if stmt.error is not None:  # None only in a family's plan
            self.error_call(stmt.error)

    def stmt_fail(self, stmt: ir.Fail) -> None:
        self.error_call(stmt.error)

    def stmt_expr(self, stmt: ir.ExprStmt) -> None:
        self.expr(stmt.value)

    def error_call(self, call: ir.ErrorCall) -> None:
        self.raises(call)
        if call.message is not None:
            self.expr(call.message)
        for kw in call.fields:
            self.expr(kw.value)

    def stmt_delete(self, stmt: ir.Delete) -> None:
        if not isinstance(stmt.target, (ir.Index, ir.Attr)):
            return
        self.place_start()
        self.expr(stmt.target.obj)
        self.delete_target(stmt)
        if isinstance(stmt.target, ir.Index):
            self.expr(stmt.target.index)

    def stmt_if(self, stmt: ir.If) -> None:
        for branch in stmt.branches:
            self.expr(branch.cond)
            self.scoped_block(branch.body)
        self.scoped_block(stmt.orelse)

    def stmt_for(self, stmt: ir.For) -> None:
        self.expr(stmt.iter)
        self.loop_body(lambda: self.loop_start(stmt.targets, stmt.iter), stmt.body)

    def stmt_while(self, stmt: ir.While) -> None:
        """The condition is walked in the loop, as the body is: each round evaluates it again."""

        def start() -> None:
            self.loop_start((), stmt.cond)
            self.expr(stmt.cond)

        self.loop_body(start, stmt.body)

    def loop_body(self, start: Callable[[], None], body: Sequence[ir.Stmt]) -> None:
        """A loop's body, walked again while a walk makes a local bound outside it alias
        more (what is changed through that local before the assignment may, on the next
        iteration, be state): the alias sets only grow, so this ends."""
        while True:
            before = len(self.growth)
            start()
            depth = self.loops[-1]
            self.block(body)
            self.leave()
            if all(bound >= depth for bound in self.growth[before:]):
                return

    def walk_target(self, expr: ir.Expr) -> None:
        """An assigned place: a name or `state.field` has nothing in it to walk."""
        if not (isinstance(expr, ir.Name) or is_state_attr(expr)):
            self.expr(expr)

    # ------------------------------------------------------------------ expressions
    def expr(self, expr: ir.Expr) -> None:
        cls = expr.__class__
        if cls is ir.Const:  # the commonest expression, and one with nothing in it
            return
        if cls is ir.Name:  # the next commonest (the IR's expression classes have no subclasses)
            if expr.ref == "state":  # type: ignore[union-attr]
                self.read(expr.id, expr)  # type: ignore[union-attr]
            return
        _EXPR_WALKS.get(cls, EffectWalker.expr_parts)(self, expr)

    def expr_attr(self, expr: ir.Attr) -> None:
        if is_state_attr(expr):
            self.read(expr.name, expr)
        elif not (isinstance(expr.obj, ir.Name) and expr.obj.ref == "enum"):
            self.expr(expr.obj)

    def expr_lambda(self, expr: ir.Lambda) -> None:
        self.lambda_start(expr.params)
        self.expr(expr.body)
        self.leave()

    def expr_binary(self, expr: ir.Binary) -> None:
        for operand in operand_order(expr):
            self.expr(operand)

    def expr_parts(self, expr: ir.Expr) -> None:
        for child in children(expr):
            self.expr(child)

    def comprehension(self, expr: ir.Comprehension) -> None:
        self.expr(expr.iter)
        self.loop_start(expr.targets, expr.iter)
        for part in (expr.cond, expr.elt, expr.value):
            if part is not None:
                self.expr(part)
        self.leave()

    def call(self, expr: ir.Call) -> None:
        func = expr.func
        if isinstance(func, ir.Attr):
            self.expr(func.obj)
            self.method_call(expr, func)
            for arg in expr.args:
                self.expr(arg)
            return
        if isinstance(func, ir.Name) and func.ref == "builtin":
            self.builtin_effects(expr, func.id)
        for arg in expr.args:
            self.expr(arg)
        for kw in expr.kwargs:
            self.expr(kw.value)
        if isinstance(func, ir.Name) and func.ref == "fn":
            self.helper_effects(expr, func.id)


_STMT_WALKS: dict[type, Any] = {
    ir.Let: EffectWalker.stmt_let,
    ir.Assign: EffectWalker.stmt_assign,
    ir.Return: EffectWalker.stmt_return,
    ir.Require: EffectWalker.stmt_require,
    ir.Fail: EffectWalker.stmt_fail,
    ir.Delete: EffectWalker.stmt_delete,
    ir.ExprStmt: EffectWalker.stmt_expr,
    ir.If: EffectWalker.stmt_if,
    ir.For: EffectWalker.stmt_for,
    ir.While: EffectWalker.stmt_while,
}
"""`EffectWalker.block` by the statement's class (`pass`, `break`, `continue`: nothing)."""

_EXPR_WALKS: dict[type, Any] = {
    ir.Attr: EffectWalker.expr_attr,
    ir.Call: EffectWalker.call,
    ir.Comprehension: EffectWalker.comprehension,
    ir.Lambda: EffectWalker.expr_lambda,
    ir.Binary: EffectWalker.expr_binary,
}
"""`EffectWalker.expr` by the expression's class; any other walks its parts."""


def _zipped_lists(iterable: ir.Expr, count: int) -> list[ir.Expr]:
    """The lists of `zip(xs, ys, ...)` gone over by `count` loop variables, one each (each
    variable is an item of its own list only); empty for anything else."""
    if (
        isinstance(iterable, ir.Call)
        and isinstance(iterable.func, ir.Name)
        and iterable.func.ref == "builtin"
        and iterable.func.id == "zip"
        and len(iterable.args) == count
    ):
        return list(iterable.args)
    return []


def _shares_argument(name: str) -> bool:
    entry = library.FUNCTIONS.get(name)
    return entry is not None and entry.shares_argument


def _argument_for(call: ir.Call, fn: ir.FnDecl, index: int) -> ir.Expr | None:
    if index < len(call.args):
        return call.args[index]
    name = fn.params[index].name if index < len(fn.params) else ""
    return next((kw.value for kw in call.kwargs if kw.name == name), None)
