"""Analysis pass 4b, lookups: which map and list lookups of a body could fail on a key
or position the agent chose, so that the call answers `not_found` instead of crashing.

A lookup `m[k]` (or `xs[i]`) is *unchecked* when its key comes from the agent (it
mentions a parameter, or a local whose value did, through `let`, assignments and loops)
and no guard in the same body covers it: a test `k in m` or `k not in m` of the same key
and map anywhere in the body (`require`, `if`, a ternary; also of `keys(m)`), and for a
list any `len(xs)`, the start of a bounds check. Lowering writes an unchecked lookup as
`m[k] if k in m else _not_found(...)`, a `not_found` domain error naming the map and the
key (docs/language.md §17), and the pass adds `not_found` to the errors of every tool
that may run one. Keys and maps that are not pure (a call that changes state) are left
as they are, since the guard evaluates them twice.

The guard is a test anywhere in the body, not one proven to run first: a body that
tests the key only on one path is trusted on the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from compiler import ir, library
from compiler.analyse.context import Analysis, set_field
from compiler.front.printer import expr as spec_text
from compiler.ir import typesys as ts
from compiler.ir.tree import calls_in, is_state_attr, walk

NOT_FOUND = "not_found"


def run(a: Analysis) -> None:
    """Add `not_found` to the errors of each tool that runs an unchecked lookup itself or
    through the helpers it calls (after the effects pass set the errors)."""
    risky = {name for name, fn in a.fns.items() if unchecked_lookups(fn)}
    for tool in a.tools.values():
        if unchecked_lookups(tool) or _calls_any(a, tool, risky):
            set_field(tool, "errors", sorted({*tool.errors, NOT_FOUND}))
    for name in risky | {n for n, fn in a.fns.items() if _calls_any(a, fn, risky)}:
        fn = a.fns[name]
        set_field(fn, "errors", sorted({*fn.errors, NOT_FOUND}))


def _calls_any(a: Analysis, callable_: ir.ToolDecl, helpers: set[str]) -> bool:
    """Whether the body calls one of `helpers`, directly or through other helpers."""
    seen: set[str] = set()
    pending = list(a.called_names(callable_.body) & set(a.fns))
    while pending:
        name = pending.pop()
        if name in helpers:
            return True
        if name not in seen:
            seen.add(name)
            pending.extend(a.called_names(a.fns[name].body) & set(a.fns))
    return False


def unchecked_lookups(callable_: ir.ToolDecl) -> list[ir.Index]:
    """The lookups of a tool's or helper's body on an agent's key that no guard covers:
    reads, and the places a `del`, an augmented assignment or (for a list) an assignment
    needs to be there already."""
    if callable_.escape is not None:
        return []
    body = callable_.body
    tainted = _agent_values(body, {p.name for p in callable_.params})
    keys_tested, lists_measured = _guards(body)
    found = []
    for index in _lookups(body):
        base = ts.strip_optional(index.obj.ty).name if index.obj.ty is not None else ""
        if base not in ("map", "list") or not _mentions(index.index, tainted):
            continue
        if not (_pure(index.obj) and _pure(index.index)):
            continue
        if base == "map" and (_shape(index.index), _shape(index.obj)) in keys_tested:
            continue
        if base == "list" and _shape(index.obj) in lists_measured:
            continue
        found.append(index)
    return found


def entity_of(container: ir.Expr) -> str:
    """What a not_found error names: the state field or attribute holding the map or list."""
    if isinstance(container, ir.Attr):
        return container.name
    if isinstance(container, ir.Name):
        return container.id
    return _shape(container)


def _agent_values(body: list[ir.Stmt], params: set[str]) -> set[str]:
    """Parameters and the locals that may hold a value derived from one, until no more
    are found (an assignment may come after the statement that reads it, in a loop)."""
    tainted = set(params)
    while True:
        before = len(tainted)
        for node in walk(body):
            if isinstance(node, ir.Let) and _mentions(node.value, tainted):
                tainted.add(node.name)
            elif isinstance(node, ir.Assign) and isinstance(node.target, ir.Name) and _mentions(node.value, tainted):
                tainted.add(node.target.id)
            elif isinstance(node, (ir.For, ir.Comprehension)) and _mentions(node.iter, tainted):
                tainted.update(node.targets)
        if len(tainted) == before:
            return tainted


def _guards(body: list[ir.Stmt]) -> tuple[set[tuple[str, str]], set[str]]:
    """(key, map) pairs some `in` test of the body checks, and the lists it takes `len` of."""
    keys_tested: set[tuple[str, str]] = set()
    lists_measured: set[str] = set()
    for node in walk(body):
        if isinstance(node, ir.Binary) and node.op in ("in", "not in"):
            keys_tested.add((_shape(node.left), _shape(_map_of_keys(node.right))))
        elif isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id == "len" and node.args:
            lists_measured.add(_shape(node.args[0]))
    return keys_tested, lists_measured


def _map_of_keys(expr: ir.Expr) -> ir.Expr:
    """`keys(m)` and `m.keys()` test the keys of `m`."""
    if isinstance(expr, ir.Call) and len(expr.args) == 1 and isinstance(expr.func, ir.Name) and expr.func.id == "keys":
        return expr.args[0]
    if isinstance(expr, ir.Call) and not expr.args and isinstance(expr.func, ir.Attr) and expr.func.name == "keys":
        return expr.func.obj
    return expr


def _lookups(body: list[ir.Stmt]) -> Iterator[ir.Index]:
    """Every lookup that needs its key: not the place a plain assignment to a map sets."""
    new_keys = {id(node.target) for node in walk(body) if isinstance(node, ir.Assign) and _adds_key(node)}
    for node in walk(body):
        if isinstance(node, ir.Index) and id(node) not in new_keys:
            yield node


def _adds_key(assign: ir.Assign) -> bool:
    """`m[k] = v` sets a key whether or not it is there (a list position must be)."""
    target = assign.target
    base = ts.strip_optional(target.obj.ty).name if isinstance(target, ir.Index) and target.obj.ty else ""
    return assign.op == "=" and base == "map"


def is_place(stmt: ir.Stmt, index: ir.Index) -> bool:
    """Whether the lookup is the place the statement assigns or deletes (so the check is a
    statement of its own before it, not an expression)."""
    return isinstance(stmt, (ir.Assign, ir.Delete)) and stmt.target is index


def _mentions(expr: ir.Expr | None, names: Iterable[str]) -> bool:
    wanted = set(names)
    return expr is not None and any(
        isinstance(node, ir.Name) and node.ref in ("local", "param") and node.id in wanted for node in walk(expr)
    )


def _pure(expr: ir.Expr) -> bool:
    """No call in it changes anything (it may be evaluated twice)."""
    return not any(call.mutates_state or _changes(call) for call in calls_in(expr))


def _changes(call: ir.Call) -> bool:
    """A helper (which may change state), `pop`, or a built-in that changes state."""
    func = call.func
    if isinstance(func, ir.Attr):
        return func.name == "pop"
    if not isinstance(func, ir.Name):
        return True
    entry = library.FUNCTIONS.get(func.id) if func.ref == "builtin" else None
    return func.ref == "fn" or (entry is not None and bool(entry.effect.writes))


def _shape(expr: ir.Expr) -> str:
    """The expression's text, a state field the same with or without `state.`."""
    if is_state_attr(expr):
        assert isinstance(expr, ir.Attr)
        return expr.name
    return spec_text(expr)
