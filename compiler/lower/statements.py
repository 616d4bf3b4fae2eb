"""Lowering of body-language statements to Python lines.

Every change to a value that lives in state is preceded by an undo-journal entry, which
is what makes a failed tool call leave state untouched. Expressions are written by the
`Emitter` of `pycode.py`, which this one extends with statements; the rewrites that
make them read well are in `idioms.py`.
"""

from __future__ import annotations

from compiler import ir
from compiler.front.printer import expr as spec_text
from compiler.ir import typesys as ts
from compiler.ir.tree import is_state_attr
from compiler.library import builtins as bi
from compiler.lower import idioms
from compiler.lower.literals import py_str
from compiler.lower.pycode import Emitter


class StatementEmitter(Emitter):
    """The emitter of a callable's body: its statements, as lines at an indent."""

    def block(self, stmts: list[ir.Stmt], indent: int) -> list[str]:
        # A `pass` among other statements says nothing (ruff's PIE790).
        stmts = [s for s in stmts if not isinstance(s, ir.Pass)] or stmts[:1]
        lines: list[str] = []
        index = 0
        while index < len(stmts):
            stmt = stmts[index]
            pad = _pad(indent)
            needless = idioms.needless_bool(stmt, stmts[index + 1] if index + 1 < len(stmts) else None)
            if needless is not None:
                # `if c: return True` then `return False` is `return c` (ruff's SIM103).
                cond, positive, consumed = needless
                text = self.expr(cond) if positive else self.negate(cond)
                lines += [*self._journal_calls(cond, pad), f"{pad}return {text}"]
                index += consumed
                continue
            if isinstance(stmt, ir.For):
                lines.extend(self._s_for(stmt, pad, indent, idioms.loop_counter(stmts, index)))
            else:
                lines.extend(self.stmt(stmt, indent))
            index += 1
        return lines or [_pad(indent) + "pass"]

    def fresh(self, base: str) -> str:
        """A local name the callable does not use yet."""
        name, number = base, 2
        while name in self.scope.names:
            name, number = f"{base}_{number}", number + 1
        self.scope.names.add(name)
        return name

    def stmt(self, s: ir.Stmt, indent: int) -> list[str]:
        pad = _pad(indent)
        method = getattr(self, f"_s_{s.kind}")
        lines: list[str] = method(s, pad, indent)
        return lines

    def _journal_calls(self, e: ir.Expr | None, pad: str) -> list[str]:
        """Undo entries for state-changing method calls inside an expression."""
        if e is None:
            return []
        lines = []
        for node in idioms.calls_in(e):
            if not node.mutates_state or not isinstance(node.func, ir.Attr):
                continue
            obj_type = ts.strip_optional(node.func.ty or ts.ANY)
            obj = self.expr(node.func.obj)
            name = node.func.name
            if obj_type.name == "list":
                op = "save_length" if name in ("append", "extend") else "save_list"
                lines.append(f"{pad}{self.scope.undo_var}.{op}({obj})")
            elif obj_type.name == "set":
                lines.append(f"{pad}{self.scope.undo_var}.save_member({obj}, {self.expr(node.args[0])})")
            else:  # map pop or clear: the whole map, so a rollback keeps the key order
                lines.append(f"{pad}{self.scope.undo_var}.save_map({obj})")
        return lines

    def _s_let(self, s: ir.Let, pad: str, indent: int) -> list[str]:
        ty = s.value.ty if s.type is None else None
        annotation = ""
        declared = ts.t(s.type.name, *s.type.args) if s.type is not None else ty
        if (
            declared is not None
            and s.name not in self.scope.annotated
            and (
                self.mentions_enum(declared)
                or _needs_annotation(s.value, declared, self.records)
                or self._declared_differs(declared, s.value)
            )
        ):
            annotation = f": {self.types.py(declared)}"
        self.scope.annotated.add(s.name)
        return [*self._journal_calls(s.value, pad), f"{pad}{s.name}{annotation} = {self.expr(s.value)}"]

    def _declared_differs(self, declared: ir.TypeRef, value: ir.Expr) -> bool:
        """A `let` whose declared type is not the value's own (`let acc: float = 0`,
        `let who: optional[str] = name`, `let j: json = n`): mypy would take the variable's
        type from the value, and refuse what the spec's type allows later (`acc += 0.5`,
        `who = None`, `j = "text"`), so the declaration is written out."""
        return value.ty is not None and self.types.py(declared) != self.types.py(value.ty)

    def _s_assign(self, s: ir.Assign, pad: str, indent: int) -> list[str]:
        self.scope.places.add(id(s.target))
        lines = [*self.place_check(s.target, pad), *self._journal_calls(s.value, pad)]
        target = s.target
        if s.touches_state:
            if isinstance(target, (ir.Index, ir.Attr)) and not is_state_attr(target):
                container = self.operand(target.obj, "postfix")
                key = (
                    self.key(target.index, target.obj.ty, self.expr(target.index))
                    if isinstance(target, ir.Index)
                    else py_str(target.name)
                )
                if isinstance(target, ir.Index) and idioms.has_call(target.index):
                    temp = self._temp()
                    lines.append(f"{pad}{temp} = {key}")
                    key = temp
                    lines.append(f"{pad}{self.scope.undo_var}.save({container}, {key})")
                    lines.append(f"{pad}{container}[{key}] {s.op} {self.expr(s.value)}")
                    return lines
                lines.append(f"{pad}{self.scope.undo_var}.save({container}, {key})")
            else:
                field_name = (
                    target.id if isinstance(target, ir.Name) else target.name if isinstance(target, ir.Attr) else ""
                )
                lines.append(f"{pad}{self.scope.undo_var}.save({self.scope.state_var}, {py_str(field_name)})")
        lines.append(f"{pad}{self.expr(target)} {s.op} {self.expr(s.value)}")
        return lines

    def _temp(self) -> str:
        self.scope.temp_counter += 1
        return f"key_{self.scope.temp_counter}"

    def _s_return(self, s: ir.Return, pad: str, indent: int) -> list[str]:
        if s.value is None or (self.scope.bare_return and isinstance(s.value, ir.Const) and s.value.value is None):
            return [f"{pad}return" if self.scope.bare_return else f"{pad}return None"]
        return [*self._journal_calls(s.value, pad), f"{pad}return {self.expr(s.value)}"]

    def _error(self, call: ir.ErrorCall) -> str:
        parts = [py_str(call.kind), self.expr(call.message) if call.message is not None else py_str("")]
        parts += [f"{kw.name}={self.expr(kw.value)}" for kw in call.fields]
        return f"DomainError({', '.join(parts)})"

    def _s_require(self, s: ir.Require, pad: str, indent: int) -> list[str]:
        return [f"{pad}if {self.negate(s.cond)}:", f"{pad}    raise {self._failure(s)}"]

    def _failure(self, s: ir.Require) -> str:
        """What a failing `require` raises: its error; in a family's plan, where it may have
        none, FamilyFailed (the draw is discarded)."""
        if s.error is not None:
            return self._error(s.error)
        return f"FamilyFailed({py_str(f'`require {spec_text(s.cond)}` failed')})"

    def _s_fail(self, s: ir.Fail, pad: str, indent: int) -> list[str]:
        return [f"{pad}raise {self._error(s.error)}"]

    def _s_delete(self, s: ir.Delete, pad: str, indent: int) -> list[str]:
        self.scope.places.add(id(s.target))
        lines = self.place_check(s.target, pad)
        assert isinstance(s.target, (ir.Index, ir.Attr))
        container = self.operand(s.target.obj, "postfix")
        if isinstance(s.target, ir.Attr):  # a record field that may be absent; if it is, nothing
            if s.touches_state:  # the whole record, so a rollback keeps its key order
                lines.append(f"{pad}{self.scope.undo_var}.save_record({container})")
            return [*lines, f"{pad}{container}.pop({py_str(s.target.name, self.quote)}, None)"]
        assert isinstance(s.target, ir.Index)
        if s.touches_state:
            # The whole map, not the one key: put back by a rollback, a key would move to the
            # end, and key order shows in results (keys(m), loops) and in exported pairs.
            lines.append(f"{pad}{self.scope.undo_var}.save_map({container})")
        lines.append(f"{pad}del {self.expr(s.target)}")
        return lines

    def _s_expr(self, s: ir.ExprStmt, pad: str, indent: int) -> list[str]:
        return [*self._journal_calls(s.value, pad), f"{pad}{self.expr(s.value)}"]

    def _s_pass(self, s: ir.Pass, pad: str, indent: int) -> list[str]:
        return [f"{pad}pass"]

    def _s_break(self, s: ir.Break, pad: str, indent: int) -> list[str]:
        return [f"{pad}break"]

    def _s_continue(self, s: ir.Continue, pad: str, indent: int) -> list[str]:
        return [f"{pad}continue"]

    def _s_if(self, s: ir.If, pad: str, indent: int) -> list[str]:
        simpler = self._simpler_if(s, pad)
        if simpler is not None:
            return simpler
        if len(s.branches) == 1 and not s.orelse:
            collapsed = self._collapsed_if(s, pad, indent)
            if collapsed is not None:
                return collapsed
        arms: list[tuple[list[ir.Expr], list[str]]] = []
        for branch in s.branches:
            body = self.block(branch.body, indent + 1)
            if arms and arms[-1][1] == body:
                arms[-1][0].append(branch.cond)  # the same arm again: `if a or b:` (ruff's SIM114)
            else:
                arms.append(([branch.cond], body))
        lines = []
        for index, (conds, body) in enumerate(arms):
            keyword = "if" if index == 0 else "elif"
            lines.append(f"{pad}{keyword} {self.expr(idioms.chain('or', conds))}:")
            lines.extend(body)
        if s.orelse:
            lines.append(f"{pad}else:")
            lines.extend(self.block(s.orelse, indent + 1))
        return lines

    def _collapsed_if(self, s: ir.If, pad: str, indent: int) -> list[str] | None:
        """`if a:` holding only `if b:` (or a `require`), neither with an else, is
        `if a and b:` (ruff's SIM102)."""
        conds = [s.branches[0].cond]
        body = s.branches[0].body
        failing: ir.Require | None = None
        while len(body) == 1:
            inner = body[0]
            if isinstance(inner, ir.If) and len(inner.branches) == 1 and not inner.orelse:
                conds.append(inner.branches[0].cond)
                body = inner.branches[0].body
            elif isinstance(inner, ir.Require):
                conds.append(ir.Unary(op="not", operand=inner.cond, ty=ts.BOOL))
                failing = inner
                break
            else:
                break
        if len(conds) == 1:
            return None
        head = f"{pad}if {self.expr(idioms.chain('and', conds))}:"
        if failing is not None:
            return [head, f"{pad}    raise {self._failure(failing)}"]
        return [head, *self.block(body, indent + 1)]

    def _simpler_if(self, s: ir.If, pad: str) -> list[str] | None:
        """An `if` that says what one call says: `if x < y: x = y` is `x = max(x, y)`
        (ruff's PLR1730), `if k in m: del m[k]` is `m.pop(k, None)` (RUF051),
        `if s.startswith(p): s = s[len(p):]` is `s = s.removeprefix(p)` (FURB188),
        `if k in m: v = m[k] else: v = d` is `v = m.get(k, d)` (SIM401). Not for changes to
        state, which are journaled first (and so are no longer one statement)."""
        if len(s.branches) != 1:
            return None
        cond, body = s.branches[0].cond, s.branches[0].body
        if s.orelse:
            first, second = (body[0], s.orelse[0]) if len(body) == 1 and len(s.orelse) == 1 else (None, None)
            if (
                isinstance(first, ir.Assign)
                and isinstance(second, ir.Assign)
                and first.op == second.op == "="
                and not first.touches_state
                and not second.touches_state
                and idioms.same(first.target, second.target)
            ):
                got = self._dict_get(cond, first.value, second.value)
                if got is not None:
                    return [f"{pad}{self.expr(first.target)} = {got}"]
            return None
        if len(body) != 1:
            return None
        stmt = body[0]
        if isinstance(stmt, ir.Assign) and stmt.op == "=" and not stmt.touches_state:
            if isinstance(cond, ir.Binary) and idioms.is_ordering(cond):
                picked = idioms.min_max(cond, stmt.value, stmt.target)
                if picked is not None:
                    name, a, b = picked
                    return [f"{pad}{self.expr(stmt.target)} = {name}({self.expr(a)}, {self.expr(b)})"]
            value = stmt.value
            if (
                isinstance(cond, ir.Call)
                and isinstance(cond.func, ir.Attr)
                and cond.func.name == "startswith"
                and len(cond.args) == 1
                and idioms.same(cond.func.obj, stmt.target)
                and idioms.pure(stmt.target)
                and idioms.pure(cond.args[0])
                and isinstance(value, ir.Slice)
                and idioms.same(value.obj, stmt.target)
                and value.upper is None
                and idioms.is_builtin_call(value.lower, "len")
                and isinstance(value.lower, ir.Call)
                and len(value.lower.args) == 1
                and idioms.same(value.lower.args[0], cond.args[0])
            ):
                target, prefix = self.expr(stmt.target), self.expr(cond.args[0])
                return [f"{pad}{target} = {self.operand(stmt.target, 'postfix')}.removeprefix({prefix})"]
        if not isinstance(cond, ir.Binary) or cond.op != "in" or cond.right.ty is None:
            return None
        container = ts.strip_optional(cond.right.ty).name
        if (
            isinstance(stmt, ir.Delete)
            and not stmt.touches_state
            and container == "map"
            and isinstance(stmt.target, ir.Index)
            and idioms.same(stmt.target.obj, cond.right)
            and idioms.same(stmt.target.index, cond.left)
        ):
            key = self.key(cond.left, cond.right.ty, self.expr(cond.left))
            return [f"{pad}{self.operand(cond.right, 'postfix')}.pop({key}, None)"]
        return None

    def _s_for(self, s: ir.For, pad: str, indent: int, counter: idioms.Counter | None = None) -> list[str]:
        body = [stmt for stmt in s.body if counter is None or stmt is not counter.increment]
        named = {n.id for n in idioms.names_in(s.body)}
        for name in s.targets:
            self.scope.annotated.add(name if name in named else f"_{name}")
        base = ts.strip_optional(s.iter.ty) if s.iter.ty else ts.ANY
        targets = list(s.targets)
        looked_up = (
            base.name == "map"
            and isinstance(s.iter, ir.Name)
            and s.iter.ref in ("local", "param")
            and idioms.value_lookups_safe(body, s.iter, targets)
        )
        if looked_up and len(targets) == 1 and idioms.looks_up(body, s.iter, targets[0]):
            targets.append(self.fresh(f"{targets[0]}_value"))  # `for k in m:` reading m[k] (PLC0206)
        if looked_up and len(targets) == 2:
            self.loop_values.append((s.iter, targets[0], targets[1]))  # m[k] is the value (PLR1733)
        try:
            lines = self.block(body, indent + 1)
        finally:
            if looked_up and len(targets) == 2:
                self.loop_values.pop()
        used = idioms.loaded_names(lines)
        # A counting loop's variable goes unused: `_i` says so (and satisfies ruff's B007).
        names = [name if name in used else f"_{name}" for name in targets]
        for name in names:
            self.scope.annotated.add(name)
        if base.name == "map" and len(names) == 2 and names[0] not in used:
            # Only the values (or only the keys) of a map: no pairs (ruff's PERF102).
            names, iterable = [names[1]], f"{self.operand(s.iter, 'postfix')}.values()"
        elif base.name == "map" and len(names) == 2 and names[1] not in used:
            names, iterable = [names[0]], self.iterable(s.iter, 1)
        else:
            iterable = self.iterable(s.iter, len(names))
        if counter is None and len(names) == 1:
            copied = idioms.copying_loop(lines, names[0])
            if copied is not None:  # `for x in xs: out.append(x)` is `out.extend(xs)` (PERF402)
                return [f"{pad}{copied}.extend({iterable})"]
        iterable = self.charged(iterable, s.iter)
        target = ", ".join(names)
        if counter is not None:
            # `n = 0` and `n += 1` in the loop: enumerate (ruff's SIM113). n starts at 1 when
            # the count is taken before anything reads it, so it ends where the count did.
            target = f"{counter.name}, {target if len(names) == 1 else '(' + target + ')'}"
            iterable = f"enumerate({iterable}, start=1)" if counter.start == 1 else f"enumerate({iterable})"
        return [f"{pad}for {target} in {iterable}:", *lines]

    def _s_while(self, s: ir.While, pad: str, indent: int) -> list[str]:
        """Python's `while`, its rounds counted: once past the bound, the call fails with
        `limit_exceeded` naming the loop (and is rolled back like any refused call). Each
        round is a step of the call's time limit (`self._count_steps`). A condition that
        changes state is journaled before each evaluation, so it is tested in the loop."""
        limit = bi.WHILE_LIMIT if s.limit is None else s.limit
        rounds = self.fresh("rounds")
        message = py_str(f"the `while` loop at line {s.line} reached its bound of {limit:,} rounds")
        journal = self._journal_calls(s.cond, pad + "    ")
        if journal:
            head = [f"{pad}while True:", *journal, f"{pad}    if {self.negate(s.cond)}:", f"{pad}        break"]
        else:
            head = [f"{pad}while {self.expr(s.cond)}:"]
        lines = [f"{pad}{rounds} = 0", *head, f"{pad}    {rounds} += 1", f"{pad}    if {rounds} > {limit}:"]
        lines.append(f'{pad}        raise DomainError("limit_exceeded", {message}, limit={limit})')
        if self.scope.kind != "test":
            lines.append(f"{pad}    self._count_steps(1)")
        return [*lines, *self.block(s.body, indent + 1)]


def _pad(indent: int) -> str:
    return "    " * indent


def _needs_annotation(value: ir.Expr, ty: ir.TypeRef, records: dict[str, ir.RecordDecl]) -> bool:
    """Annotate where mypy could not infer the spec's type from the value alone."""
    if isinstance(value, (ir.ListLit, ir.MapLit, ir.Comprehension)):
        return True
    if isinstance(value, ir.Call) and isinstance(value.func, ir.Name) and value.func.ref == "record":
        return True
    if isinstance(value, ir.Const) and value.value is None:
        return True
    return ts.is_optional(ty) and not isinstance(value, (ir.Name, ir.Attr, ir.Index, ir.Call))
