"""The specs' own `task` declarations in the task format.

A declared task's request is its `request`, its gold calls its `solution`, and its
checks come from its `verify` lines: each condition read as checks on state paths
(`verify_checks`). A condition that is not a check on one path is `NotExpressible`,
and the report says so.
"""

from __future__ import annotations

from typing import Any

from compiler import ir
from compiler.synth import sample
from compiler.synth.task_build import TaskOptions, build_task, pointer, unpointer


class NotExpressible(ValueError):
    """A `verify` line that is not a check on one path (a count over a comprehension...)."""


def declared_tasks(
    envs: dict[str, sample.SampleEnv], options: TaskOptions
) -> list[tuple[str, dict[str, Any] | None, str]]:
    """The spec's own `task` declarations in the task format: (name, task, "") or
    (name, None, why it cannot be). Their checks come from the `verify` lines, the
    prompt is the `request`, the gold calls the `solution`."""
    out: list[tuple[str, dict[str, Any] | None, str]] = []
    for env in envs.values():
        for decl in env.model.tasks:
            name = f"{env.name}.{decl.name}"
            try:
                out.append((name, _declared_task(env, decl, options), ""))
            except NotExpressible as why:
                out.append((name, None, str(why)))
    return out


def _declared_task(env: sample.SampleEnv, decl: Any, options: TaskOptions) -> dict[str, Any]:
    calls = []
    for step in decl.solution:
        if not (isinstance(step, ir.Call) and isinstance(step.func, ir.Name)):
            raise NotExpressible("a solution step is not a tool call")
        calls.append(
            {"env": env.name, "tool": step.func.id, "args": {kw.name: literal_json(kw.value) for kw in step.kwargs}}
        )
    session = env.package.Environment(decl.scenario or None)
    rows = [{**call, "result": session.call(call["tool"], call["args"])} for call in calls]
    chain = {
        "id": f"declared-{env.name}-{decl.name}",
        "seed": f"declared:{decl.name}",
        "envs": [env.name],
        "scenarios": {env.name: decl.scenario or None},
        "calls": rows,
    }
    final = session.state()
    checks = [{"env": env.name, **check, "weight": 1.0} for cond in decl.verify for check in verify_checks(cond, final)]
    return build_task(chain, {env.name: env}, options, request=decl.request, checks=checks)


def verify_checks(cond: ir.Expr, final: Any = None) -> list[dict[str, Any]]:
    """Path checks a `verify` condition means: `a and b`, `path == literal`, `path is
    None` / `is not None`, `not path`, a boolean `path`, `key in path` / `not in`, and
    `len(path) == n`; `path.startswith(text)`; a count (`len([...]) == n`) or a list of
    one field (`[x.f for x in ...] == [...]`, `sorted(...)` too) of a state collection's
    items that meet field comparisons. An index computed from the state (`events[s.last]`,
    `xs[len(xs) - 1]`) is resolved in `final`, the state the solution leaves. Anything
    else is NotExpressible."""
    if isinstance(cond, ir.Binary) and cond.op == "and":
        return verify_checks(cond.left, final) + verify_checks(cond.right, final)
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return [{"path": state_path(cond.operand, final), "op": "equals", "expected": False}]
    if isinstance(cond, ir.Binary) and cond.op in ("is", "is not") and _is_none(cond.right):
        path = state_path(cond.left, final)
        return [
            {"path": path, "op": "equals", "expected": None} if cond.op == "is" else {"path": path, "op": "not_null"}
        ]
    if isinstance(cond, ir.Binary) and cond.op in ("in", "not in") and isinstance(cond.left, ir.Const):
        container = cond.right.ty.name if cond.right.ty is not None else _shape(cond.right, final)
        if container == "map":  # a key: a path below the map
            path = f"{state_path(cond.right, final)}/{pointer(cond.left.value)}"
            return [{"path": path, "op": "present" if cond.op == "in" else "absent"}]
        if container in ("list", "set", "str"):
            op = "contains" if cond.op == "in" else "excludes"
            return [{"path": state_path(cond.right, final), "op": op, "expected": cond.left.value}]
    if isinstance(cond, ir.Binary) and cond.op == "==":
        left, right = cond.left, cond.right
        if isinstance(left, ir.ListLit) and isinstance(right, ir.ListLit) and len(left.items) == len(right.items):
            pairs = [ir.Binary(op="==", left=a, right=b) for a, b in zip(left.items, right.items)]
            return [check for pair in pairs for check in verify_checks(pair, final)]
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            if _is_len(side) and isinstance(side, ir.Call) and isinstance(side.args[0], ir.Comprehension):
                return [{**collection_check(side.args[0], final), "op": "count", "expected": literal_json(other)}]
            if _is_len(side):
                assert isinstance(side, ir.Call)
                return [{"path": state_path(side.args[0], final), "op": "length", "expected": literal_json(other)}]
            comprehension, ordered = _projection(side)
            if comprehension is not None:
                check = collection_check(comprehension, final)
                select = _item_path(comprehension.elt, comprehension.targets[0])
                return [{**check, "op": "select", "select": select, "sorted": ordered, "expected": literal_json(other)}]
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            try:
                return [{"path": state_path(side, final), "op": "equals", "expected": literal_json(other)}]
            except NotExpressible:
                continue
    if _is_method(cond, "startswith"):
        assert isinstance(cond, ir.Call) and isinstance(cond.func, ir.Attr)
        return [{"path": state_path(cond.func.obj, final), "op": "starts_with", "expected": literal_json(cond.args[0])}]
    if cond.ty is not None and cond.ty.name == "bool":
        return [{"path": state_path(cond, final), "op": "equals", "expected": True}]
    raise NotExpressible("a verify line is not a check on one state path")


def _shape(expr: ir.Expr, final: Any) -> str:
    """The kind of collection a place holds in `final` (`map`, `list`, `str`), for a
    condition whose types are not annotated (a family's `verify` line once its values
    are put in)."""
    if final is None:
        return ""
    try:
        value = _resolve(final, state_path(expr, final))
    except NotExpressible:
        return ""
    if isinstance(value, dict):
        return "map"
    return "list" if isinstance(value, list) else "str" if isinstance(value, str) else ""


def collection_check(comp: ir.Comprehension, final: Any = None) -> dict[str, Any]:
    """The path, `over` and `where` clauses of a list comprehension over a state
    collection (`values(m)`, `keys(m)` or a list) filtered by field comparisons."""
    if comp.value is not None or len(comp.targets) != 1:
        raise NotExpressible("a comprehension over pairs or building a map")
    source: ir.Expr = comp.iter
    over = "values"
    call = comp.iter
    if isinstance(call, ir.Call) and isinstance(call.func, ir.Name) and call.func.id in ("values", "keys"):
        if len(call.args) != 1:
            raise NotExpressible("values()/keys() of one collection")
        source, over = call.args[0], call.func.id
    check: dict[str, Any] = {"path": state_path(source, final), "where": _where(comp.cond, comp.targets[0])}
    if over == "keys":
        check["over"] = "keys"
    return check


def _where(cond: ir.Expr | None, var: str) -> list[dict[str, Any]]:
    """Clauses of a comprehension's condition: `and` of `item.f == literal`, `!=`, a
    boolean field, `not` one, `item.f.startswith(literal)` and `literal in item.f` (a
    list or text field that holds the value)."""
    if cond is None:
        return []
    if isinstance(cond, ir.Binary) and cond.op == "and":
        return _where(cond.left, var) + _where(cond.right, var)
    if isinstance(cond, ir.Binary) and cond.op == "in" and isinstance(cond.left, (ir.Const, ir.Attr)):
        return [{"path": _item_path(cond.right, var), "op": "contains", "expected": literal_json(cond.left)}]
    if isinstance(cond, ir.Binary) and cond.op in ("==", "!="):
        op = "equals" if cond.op == "==" else "not_equals"
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            try:
                return [{"path": _item_path(side, var), "op": op, "expected": literal_json(other)}]
            except NotExpressible:
                continue
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return [{"path": _item_path(cond.operand, var), "op": "equals", "expected": False}]
    if _is_method(cond, "startswith"):
        assert isinstance(cond, ir.Call) and isinstance(cond.func, ir.Attr)
        return [{"path": _item_path(cond.func.obj, var), "op": "starts_with", "expected": literal_json(cond.args[0])}]
    if cond.ty is not None and cond.ty.name == "bool":
        return [{"path": _item_path(cond, var), "op": "equals", "expected": True}]
    raise NotExpressible("a comprehension's condition is not field comparisons")


def _item_path(expr: ir.Expr, var: str) -> str:
    """The JSON Pointer of a place inside the comprehension's item (`item.f`, `item[k]`)."""
    if isinstance(expr, ir.Name) and expr.id == var and expr.ref == "local":
        return ""
    if isinstance(expr, ir.Attr):
        return f"{_item_path(expr.obj, var)}/{pointer(expr.name)}"
    if isinstance(expr, ir.Index) and isinstance(expr.index, ir.Const):
        return f"{_item_path(expr.obj, var)}/{pointer(expr.index.value)}"
    raise NotExpressible("not a field of the comprehension's item")


def _projection(expr: ir.Expr) -> tuple[ir.Comprehension | None, bool]:
    """A list comprehension (or `sorted` of one) on one side of `==`, and whether sorted."""
    if isinstance(expr, ir.Comprehension):
        return expr, False
    if (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Name)
        and expr.func.id == "sorted"
        and len(expr.args) == 1
        and not expr.kwargs
        and isinstance(expr.args[0], ir.Comprehension)
    ):
        return expr.args[0], True
    return None, False


def _is_method(expr: ir.Expr, name: str) -> bool:
    return (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Attr)
        and expr.func.name == name
        and len(expr.args) == 1
        and not expr.kwargs
    )


def state_path(expr: ir.Expr, final: Any = None) -> str:
    """The JSON Pointer of a state place: a field, `[literal]` of it, `.field` of a record,
    `.get(literal)` of a map."""
    if isinstance(expr, ir.Name) and expr.ref == "state":
        return f"/{pointer(expr.id)}"
    if (
        isinstance(expr, ir.Attr)
        and isinstance(expr.obj, ir.Name)
        and expr.obj.ref == "state"
        and expr.obj.id == "state"
    ):
        return f"/{pointer(expr.name)}"
    if isinstance(expr, ir.Attr):
        return f"{state_path(expr.obj, final)}/{pointer(expr.name)}"
    if isinstance(expr, ir.Index) and isinstance(expr.index, ir.Const):
        holder = expr.obj.ty
        if holder is not None and holder.name == "map" and holder.args and holder.args[0].name == "json":
            raise NotExpressible("a map with json keys is a list of [key, value] pairs in state()")
        return f"{state_path(expr.obj, final)}/{pointer(expr.index.value)}"
    if isinstance(expr, ir.Index) and final is not None:
        return f"{state_path(expr.obj, final)}/{pointer(_computed_index(expr.index, final))}"
    if (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Attr)
        and expr.func.name == "get"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ir.Const)
    ):
        return f"{state_path(expr.func.obj, final)}/{pointer(expr.args[0].value)}"
    raise NotExpressible("not a path into the state")


def _computed_index(expr: ir.Expr, final: Any) -> str | int:
    """An index the verify line computes from the state (a place, or `len(place) - k`),
    evaluated in the state the solution leaves: the check then names that item."""
    if isinstance(expr, ir.Binary) and expr.op == "-" and _is_len(expr.left) and isinstance(expr.right, ir.Const):
        assert isinstance(expr.left, ir.Call)
        sized = _resolve(final, state_path(expr.left.args[0], final))
        if isinstance(sized, (list, dict, str)) and isinstance(expr.right.value, int):
            return len(sized) - expr.right.value
    else:
        value = _resolve(final, state_path(expr, final))
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
    raise NotExpressible("an index that is neither a literal nor a value of the state")


def _resolve(document: Any, path: str) -> Any:
    value = document
    for raw in path[1:].split("/"):
        key = unpointer(raw)
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise NotExpressible(f"the computed index's place {path} is not in the final state")
    return value


def literal_json(expr: ir.Expr) -> Any:
    """The JSON value of a literal of the body language (an enum member is its name)."""
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Unary) and expr.op == "-" and isinstance(expr.operand, ir.Const):
        number = expr.operand.value
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return -number
    if isinstance(expr, ir.Attr) and isinstance(expr.obj, ir.Name) and expr.obj.ref == "enum":
        return expr.name
    if isinstance(expr, ir.ListLit):
        return [literal_json(item) for item in expr.items]
    if isinstance(expr, ir.MapLit):
        return {str(literal_json(entry.key)): literal_json(entry.value) for entry in expr.entries}
    if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.ref == "record" and not expr.args:
        return {kw.name: literal_json(kw.value) for kw in expr.kwargs}
    raise NotExpressible("not a literal value")


def _is_none(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Const) and expr.value is None


def _is_len(expr: ir.Expr) -> bool:
    return (
        isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.id == "len" and len(expr.args) == 1
    )
