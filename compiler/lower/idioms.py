"""Idioms of lowering: the rewrites that make literally lowered bodies read as a careful
engineer writes Python (and pass ruff's default rules): comparisons chained, tests of
one string merged, `if c: return True` returned as `c`, copying loops as `extend`,
counters as `enumerate`, `sorted(xs)[0]` as `min`. Each rewrite is exact (the same
values, the same errors) and applies only where it is; the emitter asks these functions
whether one applies."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from compiler import ir
from compiler.ir import typesys as ts
from compiler.ir.tree import walk


class ExprWriter(Protocol):
    """What the rewrites of `and`/`or` chains ask of the emitter (`pycode.Emitter`, which
    imports this module): its expressions at a precedence."""

    def expr(self, e: ir.Expr, context: int = 0) -> str: ...

    def operand(self, e: ir.Expr, level: str, tighter: bool = False) -> str: ...

    def precedence(self, level: str) -> int: ...


ORDERING = {"<", "<=", ">", ">="}
POSITION_FIELDS = {"line", "col", "end_line", "end_col", "ty"}
PURE_BUILTINS = {
    "len", "abs", "min", "max", "round", "str", "int", "float", "sum", "sorted", "any", "all",
    "keys", "values", "now", "today", "date_of", "time_of", "at", "unique", "reversed", "range",
    "ord", "chr", "json_dumps", "parse_datetime",
}  # fmt: skip
PURE_METHODS = {
    "startswith", "endswith", "lower", "upper", "strip", "lstrip", "rstrip", "title", "get",
    "count", "index", "find", "split", "join", "replace", "isdigit", "isalpha", "keys", "values",
}  # fmt: skip


def same(a: object, b: object) -> bool:
    """The same expression, wherever it was written (positions and types aside)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.Node):
        return all(same(getattr(a, f), getattr(b, f)) for f in type(a).model_fields if f not in POSITION_FIELDS)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def pure(e: ir.Expr) -> bool:
    """Evaluating `e` changes nothing (so evaluating it once or twice is the same)."""
    for call in calls_in(e):
        func = call.func
        if call.mutates_state:
            return False
        if isinstance(func, ir.Name) and not (func.ref == "builtin" and func.id in PURE_BUILTINS):
            return False
        if isinstance(func, ir.Attr) and func.name not in PURE_METHODS:
            return False
    return True


def total(e: ir.Expr) -> bool:
    """Evaluating `e` can neither change anything nor fail: it may be evaluated where it
    was not before."""
    if isinstance(e, (ir.Name, ir.Const)):
        return True
    if isinstance(e, ir.Attr):
        return total(e.obj)
    if isinstance(e, ir.Unary):
        return e.op == "not" or isinstance(e.operand, ir.Const)
    if isinstance(e, ir.FString):
        return all(isinstance(part, str) or total(part) for part in e.parts)
    return isinstance(e, ir.Binary) and e.op in ("and", "or") and total(e.left) and total(e.right)


def const_bool(e: ir.Expr) -> bool | None:
    return e.value if isinstance(e, ir.Const) and isinstance(e.value, bool) else None


def const_int(e: ir.Expr) -> int | None:
    if isinstance(e, ir.Const) and type(e.value) is int:
        return e.value
    if isinstance(e, ir.Unary) and e.op == "-" and isinstance(e.operand, ir.Const) and type(e.operand.value) is int:
        return -e.operand.value
    return None


def is_builtin_call(e: object, name: str) -> TypeGuard[ir.Call]:
    return isinstance(e, ir.Call) and isinstance(e.func, ir.Name) and e.func.ref == "builtin" and e.func.id == name


def is_ordering(e: ir.Expr) -> bool:
    """`a < b` and friends, as Python compares them (a json side is wrapped in `bool()`)."""
    return isinstance(e, ir.Binary) and e.op in ORDERING and not is_dynamic(e.left) and not is_dynamic(e.right)


def min_max(cond: ir.Binary, then: ir.Expr, other: ir.Expr) -> tuple[str, ir.Expr, ir.Expr] | None:
    """`then if cond else other` as `max(x, y)` or `min(x, y)`, when it picks the larger or
    the smaller of the two things `cond` compares. The argument order keeps which of two
    equal values is picked: max and min return the first of equal candidates."""
    left, right = cond.left, cond.right
    if not (pure(left) and pure(right)):
        return None
    if same(then, left) and same(other, right):
        table = {
            ">": ("max", right, left),
            ">=": ("max", left, right),
            "<": ("min", right, left),
            "<=": ("min", left, right),
        }
    elif same(then, right) and same(other, left):
        table = {
            ">": ("min", left, right),
            ">=": ("min", right, left),
            "<": ("max", left, right),
            "<=": ("max", right, left),
        }
    else:
        return None
    return table[cond.op]


def ordering_chain(e: ir.Expr) -> tuple[list[ir.Expr], list[str], bool] | None:
    """`a < b` or `a < b <= c` (no json side) as (values, ops, rising), when every op goes
    the same way (all `<`/`<=`, or all `>`/`>=`); else None."""
    if isinstance(e, ir.Binary) and is_ordering(e):
        return [e.left, e.right], [e.op], e.op in ("<", "<=")
    if isinstance(e, ir.Compare) and all(op in ORDERING for op in e.ops) and not any(map(is_dynamic, e.operands)):
        rising = {op in ("<", "<=") for op in e.ops}
        if len(rising) == 1:
            return list(e.operands), list(e.ops), rising.pop()
    return None


def chain_comparisons(emitter: ExprWriter, operands: list[ir.Expr], parts: list[str]) -> None:
    """In an `and` chain, `a < b and b <= c` becomes `a < b <= c` (in place of `parts`),
    and so does `a < b < c and c < d` (ruff's PLR1716 asks both)."""
    index = 0
    while index < len(operands):
        first = ordering_chain(operands[index])
        if first is None:
            index += 1
            continue
        values, ops, rising = first
        end = index + 1
        while end < len(operands):
            step = ordering_chain(operands[end])
            if step is None or step[2] != rising:
                break
            if not same(step[0][0], values[-1]) or not pure(step[0][0]):
                break
            values.extend(step[0][1:])
            ops.extend(step[1])
            end += 1
        if end > index + 1:
            prec = emitter.precedence("compare") + 1
            parts[index] = emitter.expr(values[0], prec) + "".join(
                f" {op} {emitter.expr(value, prec)}" for op, value in zip(ops, values[1:], strict=True)
            )
            parts[index + 1 : end] = [""] * (end - index - 1)
        index = end


def merge_affix_tests(emitter: ExprWriter, operands: list[ir.Expr], parts: list[str]) -> None:
    """In an `or` chain, `x.startswith(a) or x.startswith(b)` becomes `x.startswith((a, b))`
    (in place of `parts`), when `b`, and whatever stands between the two tests, can be
    evaluated early or not at all."""
    calls = [
        (index, e)
        for index, e in enumerate(operands)
        if isinstance(e, ir.Call)
        and isinstance(e.func, ir.Attr)
        and e.func.name in ("startswith", "endswith")
        and len(e.args) == 1
        and not e.kwargs
        and pure(e.func.obj)
    ]
    tests = dict(calls)

    def quiet(between: int) -> bool:  # what stands between two merged tests: no effect, no failure
        test = tests.get(between)
        return total(operands[between]) or (test is not None and total(test.args[0]))

    taken: set[int] = set()
    for position, (index, call) in enumerate(calls):
        if index in taken:
            continue
        assert isinstance(call.func, ir.Attr)
        group = [
            (other_index, other)
            for other_index, other in calls[position + 1 :]
            if other_index not in taken
            and isinstance(other.func, ir.Attr)
            and other.func.name == call.func.name
            and same(other.func.obj, call.func.obj)
            and total(other.args[0])
            and all(quiet(between) for between in range(index + 1, other_index))
        ]
        if not group:
            continue
        args = ", ".join(emitter.expr(c.args[0]) for c in [call, *(other for _, other in group)])
        parts[index] = f"{emitter.operand(call.func.obj, 'postfix')}.{call.func.name}(({args}))"
        for other_index, _ in group:
            parts[other_index] = ""
            taken.add(other_index)


def chain(op: str, operands: list[ir.Expr]) -> ir.Expr:
    """`a op b op c` as one left-nested chain (each operand's own chain of `op` flattened)."""
    flat: list[ir.Expr] = []
    for operand in operands:
        spine: list[ir.Expr] = []
        while isinstance(operand, ir.Binary) and operand.op == op:
            spine.append(operand.right)
            operand = operand.left
        flat += [operand, *reversed(spine)]
    chain = flat[0]
    for operand in flat[1:]:
        chain = ir.Binary(op=op, left=chain, right=operand, ty=ts.BOOL)
    return chain


def returned_bool(stmt: ir.Stmt | None) -> bool | None:
    if isinstance(stmt, ir.Return) and stmt.value is not None:
        return const_bool(stmt.value)
    return None


def needless_bool(stmt: ir.Stmt, following: ir.Stmt | None) -> tuple[ir.Expr, bool, int] | None:
    """For `if c: return True` and then (or else) `return False`: (c, True, statements
    taken); (c, False, ...) for the opposite. Conditions are bools, so `return c` is exact."""
    if not isinstance(stmt, ir.If) or len(stmt.branches) != 1 or len(stmt.branches[0].body) != 1:
        return None
    first = returned_bool(stmt.branches[0].body[0])
    if stmt.orelse:
        second, taken = (returned_bool(stmt.orelse[0]) if len(stmt.orelse) == 1 else None), 1
    else:
        second, taken = returned_bool(following), 2
    if first is None or second is None or first == second:
        return None
    return stmt.branches[0].cond, first, taken


@dataclass
class Counter:
    """A loop's counter kept by hand (`n = 0` before, `n += 1` in it), to be an enumerate."""

    name: str
    start: int  # 1: nothing in the loop reads n before the increment; 0: nothing after it
    increment: ir.Stmt


def walk_statements(stmts: list[ir.Stmt]) -> Iterator[ir.Stmt]:
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, ir.If):
            for branch in stmt.branches:
                yield from walk_statements(branch.body)
            yield from walk_statements(stmt.orelse)
        elif isinstance(stmt, (ir.For, ir.While)):
            yield from walk_statements(stmt.body)


def binds(stmts: list[ir.Stmt], name: str) -> int:
    """How many statements (nested ones too) give the local `name` a value."""
    count = 0
    for stmt in walk_statements(stmts):
        if isinstance(stmt, ir.Let) and stmt.name == name:
            count += 1
        elif isinstance(stmt, ir.Assign) and isinstance(stmt.target, ir.Name) and stmt.target.id == name:
            count += 1
        elif isinstance(stmt, ir.For) and name in stmt.targets:
            count += 1
    return count


def mentions(stmts: list[ir.Stmt], name: str) -> bool:
    return any(n.id == name for n in names_in(stmts))


def read_later(stmts: list[ir.Stmt], name: str) -> bool:
    """Whether these statements (the rest of a block) read `name` before they set it anew."""
    for stmt in stmts:
        if not mentions([stmt], name):
            continue
        sets = (isinstance(stmt, ir.Let) and stmt.name == name) or (
            isinstance(stmt, ir.Assign)
            and stmt.op == "="
            and isinstance(stmt.target, ir.Name)
            and stmt.target.id == name
        )
        value = stmt.value if isinstance(stmt, (ir.Let, ir.Assign)) else None
        return not (sets and value is not None and not mentions([ir.ExprStmt(value=value)], name))
    return False


def loop_counter(stmts: list[ir.Stmt], index: int) -> Counter | None:
    """The counter of loop `stmts[index]` when ruff's SIM113 asks for enumerate() and the
    rewrite is exact: `n = 0` is n's last value before the loop in the same block, the loop
    has no `continue`, binds n only by a top-level `n += 1`, and the block reads n no more
    after the loop. Then n counts from 1 if nothing reads it before the increment (which
    may be moved first: no `break` before it), or from 0 if nothing reads it after the
    increment and no code after the loop can see n (a `let` is the block's own)."""
    loop = stmts[index]
    assert isinstance(loop, ir.For)
    if any(isinstance(stmt, ir.Continue) for stmt in walk_statements(loop.body)):
        return None
    for position, stmt in enumerate(loop.body):
        if not (
            isinstance(stmt, ir.Assign)
            and stmt.op == "+="
            and isinstance(stmt.target, ir.Name)
            and stmt.target.ref == "local"
            and isinstance(stmt.value, ir.Const)
            and type(stmt.value.value) is int
            and stmt.value.value == 1
        ):
            continue
        name = stmt.target.id
        if name in loop.targets or binds(loop.body, name) != 1 or read_later(stmts[index + 1 :], name):
            continue
        init = next((s for s in reversed(stmts[:index]) if binds([s], name)), None)
        if not (
            isinstance(init, (ir.Let, ir.Assign))
            and (isinstance(init, ir.Let) or init.op == "=")
            and isinstance(init.value, ir.Const)
            and type(init.value.value) is int
            and init.value.value == 0
        ):
            continue
        before, after = loop.body[:position], loop.body[position + 1 :]
        if not mentions(before, name) and not any(isinstance(s, ir.Break) for s in walk_statements(before)):
            start = 1
        elif not mentions(after, name) and isinstance(init, ir.Let):
            start = 0
        else:
            continue
        if not mentions(before + after, name):
            continue  # n is never read: `for _n, ...` would leave `n = 0` unused
        return Counter(name, start, stmt)
    return None


def looks_up(stmts: list[ir.Stmt], mapping: ir.Expr, key: str) -> bool:
    """Whether the loop body reads `mapping[key]`."""
    return any(
        isinstance(node, ir.Index)
        and isinstance(node.index, ir.Name)
        and node.index.id == key
        and same(node.obj, mapping)
        for node in walk(stmts)
    )


def value_lookups_safe(stmts: list[ir.Stmt], mapping: ir.Name, targets: list[str]) -> bool:
    """Whether `mapping[key]` in the body of `for key, value in mapping.items()` is always
    `value`: nothing in the loop replaces an entry of the map, rebinds the map or the loop's
    names, calls a method that changes the map, or calls a helper (which might)."""
    names = {mapping.id, *targets}
    for stmt in walk_statements(stmts):
        if isinstance(stmt, ir.Let) and stmt.name in names:
            return False
        if isinstance(stmt, ir.For) and names & set(stmt.targets):
            return False
        if isinstance(stmt, (ir.Assign, ir.Delete)):
            target = stmt.target
            if isinstance(target, ir.Name) and target.id in names:
                return False
            if isinstance(target, ir.Index) and same(target.obj, mapping):
                return False
    for node in walk(stmts):
        if isinstance(node, ir.Call):
            if isinstance(node.func, ir.Name) and node.func.ref in ("fn", "tool"):
                return False
            if isinstance(node.func, ir.Attr) and same(node.func.obj, mapping) and node.func.name not in PURE_METHODS:
                return False
        if isinstance(node, ir.Lambda) and names & set(node.params):
            return False
        if isinstance(node, ir.Comprehension) and names & set(node.targets):
            return False
    return True


def copying_loop(lines: list[str], name: str) -> str | None:
    """For a loop body that is only `out.append(x)` (x the loop's one name, `out` a plain
    local expression without x), the source of `out`; None for any other body."""
    if len(lines) != 1:
        return None
    text = lines[0].strip()
    try:
        statement = ast.parse(text).body[0]
    except SyntaxError:
        return None
    if not (
        isinstance(statement, ast.Expr)
        and isinstance(call := statement.value, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == name
        and all(
            isinstance(node, (ast.Name, ast.Subscript, ast.Constant, ast.Load)) for node in ast.walk(call.func.value)
        )
        and not any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(call.func.value))
    ):
        return None
    return ast.get_source_segment(text, call.func.value)


def loaded_names(lines: list[str]) -> set[str]:
    """The names lowered code uses (reads, or writes into)."""
    code = "\n".join("    " + line for line in textwrap.dedent("\n".join(lines)).splitlines())
    try:
        tree = ast.parse("if True:\n" + code)
    except SyntaxError:  # not expected; every word then counts as used
        return set(re.findall(r"\w+", code))
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store)}


def first_or_last(obj: str, position: int, source: ir.Expr) -> str | None:
    """`obj[0]` or `obj[-1]` of a list built only to be indexed, said without building it:
    `sorted(xs)[0]` is `min(xs)` (ruff's FURB192), `list(m)[0]` is `next(iter(m))` and
    `[f(x) for x in xs][0]` is `next(f(x) for x in xs)` (RUF015). None if `obj` is not one."""
    try:
        tree = ast.parse(obj, mode="eval").body
    except SyntaxError:
        return None
    if (
        isinstance(tree, ast.Call)
        and isinstance(tree.func, ast.Name)
        and tree.func.id == "sorted"
        and len(tree.args) == 1
        and all(k.arg in ("key", "reverse") for k in tree.keywords)
        and is_builtin_call(source, "sorted")
    ):
        reverse = False
        for keyword in tree.keywords:
            if keyword.arg == "reverse":
                if not isinstance(keyword.value, ast.Constant) or not isinstance(keyword.value.value, bool):
                    return None
                reverse = keyword.value.value
        items = ast.get_source_segment(obj, tree.args[0]) or ""
        keys = [ast.get_source_segment(obj, k) or "" for k in tree.keywords if k.arg == "key"]
        assert isinstance(source, ir.Call)
        if position == -1 and ts.strip_optional(source.args[0].ty or ts.ANY).name != "set":
            # sorted() keeps equal items in their order and [-1] takes the last of them;
            # max() and min() take the first they meet, so they look from the end. (A set
            # has no order to keep; nor can it be reversed.)
            items = f"reversed({items})"
        largest = reverse if position == 0 else not reverse
        return f"{'max' if largest else 'min'}({', '.join([items, *keys])})"
    if position != 0:
        return None
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "list":
        if len(tree.args) != 1 or tree.keywords:
            return None
        inner = tree.args[0]
        text = ast.get_source_segment(obj, inner) or ""
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "reversed":
            return f"next({text})"
        return f"next(iter({text}))"
    if isinstance(tree, ast.ListComp) and obj.startswith("[") and obj.endswith("]"):
        return f"next({obj[1:-1]})"
    return None


def is_dynamic(e: ir.Expr) -> bool:
    return e.ty is not None and e.ty.name in ("json", "any")


def names_in(stmts: list[ir.Stmt]) -> Iterator[ir.Name]:
    return (node for node in walk(stmts) if isinstance(node, ir.Name))


def calls_in(e: ir.Expr) -> Iterator[ir.Call]:
    stack: list[object] = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, ir.Node):
            continue
        if isinstance(node, ir.Lambda):
            continue
        if isinstance(node, ir.Call):
            yield node
        for name in type(node).model_fields:
            if name != "ty":
                stack.append(getattr(node, name))


def has_call(e: ir.Expr) -> bool:
    return any(True for _ in calls_in(e))
