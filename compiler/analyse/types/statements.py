"""Type checking of statements: bindings, assignments and `del`, `require` and `fail`,
`if` and `for` (narrowing their branches), `return`; and whether a block can reach its end."""

from __future__ import annotations

from collections.abc import Sequence

from compiler import ir, library
from compiler.analyse.declared_types import resolve_type
from compiler.analyse.types.calls import CallChecker
from compiler.analyse.types.dispatch import methods_by_class
from compiler.analyse.types.expressions import source_text
from compiler.analyse.types.narrowing import narrowing
from compiler.analyse.types.scopes import Local
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.library import builtins as bi


class StatementChecker(CallChecker):
    """Checks statements, dispatched by kind in `block`."""

    def block(self, stmts: Sequence[ir.Stmt]) -> bool:
        """Check statements in order; True when every path through them terminates."""
        terminated = False
        methods = _STMT_METHODS
        for stmt in stmts:
            if terminated:
                self.error("E3012", "this statement can never run", stmt)
                break
            terminated = methods[stmt.__class__](self, stmt)
        return terminated

    def stmt_let(self, stmt: ir.Let) -> bool:
        declared = resolve_type(self.a, stmt.type, self.file) if stmt.type is not None else None
        ty = self.expr(stmt.value, declared)
        if declared is not None:
            self.expect_assignable(ty, declared, stmt.value)
            ty = declared
        elif _is_empty_literal(stmt.value):
            shape = (
                "map[K, V] = {}` (e.g. `map[str, int]`)"
                if isinstance(stmt.value, ir.MapLit)
                else "list[T] = []` (e.g. `list[str]`)"
            )
            self.error(
                "E3020",
                "cannot tell the type of an empty literal",
                stmt.value,
                hint=f"give the type: `let {stmt.name}: {shape}",
            )
        elif ty.name == "None":
            self.error(
                "E3020",
                f"cannot tell the type of `{stmt.name}` from None",
                stmt.value,
                hint=f"write `let {stmt.name}: optional[T] = None`",
            )
        self.declare(stmt.name, ty, "local", stmt)
        if self.fx is not None:
            self.fx.let(stmt)
        return False

    def stmt_assign(self, stmt: ir.Assign) -> bool:
        if stmt.op == "=" and isinstance(stmt.target, ir.Attr):
            self.assigning = stmt.target  # setting a field that may be absent makes it present
        fx = self.fx
        if fx is not None:
            fx.place_start()
        target_type = self.target(stmt.target)
        self.assigning = None
        if fx is not None:
            fx.assign_target(stmt)
        value_type = self.expr(stmt.value, target_type)
        if fx is not None:
            fx.assign_value(stmt)
        if stmt.op == "=":
            self.expect_assignable(value_type, target_type, stmt.value)
        else:
            ok = (
                (
                    ts.is_numeric(target_type)
                    and ts.is_numeric(value_type)
                    and (target_type.name != "int" or value_type.name == "int")
                )
                or (stmt.op == "+=" and target_type.name == "str" and value_type.name == "str")
                or (stmt.op == "+=" and target_type.name == "list" and ts.assignable(value_type, target_type))
            )
            if not ok:
                self.error(
                    "E3004", f"`{stmt.op}` does not apply to {ts.show(target_type)} and {ts.show(value_type)}", stmt
                )
        if isinstance(stmt.target, ir.Attr) and stmt.op == "=" and self._absent_field(stmt.target) is not None:
            if isinstance(stmt.target.obj, ir.Name):
                self.narrow_here({f"{stmt.target.obj.id}.{stmt.target.name}": target_type})
        if isinstance(stmt.target, ir.Attr) and self._is_tag(stmt.target):
            self.error("E3008", f"`{stmt.target.name}` is the tag of a union member: it is fixed", stmt.target)
        if isinstance(stmt.target, ir.Name):
            self.forget_presence(local=stmt.target.id)
            local = self.lookup(stmt.target.id)
            declared = self.declared.get(stmt.target.id)
            if local is not None and declared is not None and declared.name in self.a.records:
                self.scopes[-1][stmt.target.id] = Local(declared, local.kind)  # a union narrowed no more
            if local is not None:
                if not ts.is_optional(value_type) and ts.is_optional(local.type):
                    self.scopes[-1][stmt.target.id] = Local(ts.strip_optional(local.type), local.kind)
                elif ts.is_optional(value_type):
                    self.scopes[-1][stmt.target.id] = Local(self.declared.get(stmt.target.id, local.type), local.kind)
        return False

    def stmt_return(self, stmt: ir.Return) -> bool:
        if self.callable is None:
            self.error("E3005", "`return` outside a tool", stmt)
            return True
        expected = self.callable.returns
        if stmt.value is None:
            if expected.name != "None":
                self.error("E3001", f"`return` needs a value of type {ts.show(expected)}", stmt)
            return True
        ty = self.expr(stmt.value, expected)
        self.expect_assignable(ty, expected, stmt.value)
        if self.fx is not None:
            self.fx.returned(stmt)
        return True

    def stmt_require(self, stmt: ir.Require) -> bool:
        self.condition(stmt.cond)
        if stmt.error is None:
            if self.family_part != "plan":
                self.error(
                    "E1002",
                    "`require` needs `else ERROR(...)`: only a family's plan may leave it out",
                    stmt,
                    hint='e.g. `require x > 0 else invalid_argument("x must be positive")`',
                )
        else:
            self.error_call(stmt.error, narrowing(stmt.cond, False, self))
        self.narrow_here(narrowing(stmt.cond, True, self))
        return False

    def stmt_fail(self, stmt: ir.Fail) -> bool:
        self.error_call(stmt.error, {})
        return True

    def error_call(self, call: ir.ErrorCall, narrowed: dict[str, ir.TypeRef]) -> None:
        if self.fx is not None:
            self.fx.raises(call)
        if call.kind not in bi.ERROR_KINDS:
            self.error(
                "E2013",
                f"unknown error kind `{call.kind}`",
                call,
                hint=did_you_mean(call.kind, bi.ERROR_KINDS) or "one of: " + ", ".join(bi.ERROR_KINDS),
            )
        self.push(narrowed)
        if call.message is None:
            self.error("E3006", f"`{call.kind}(...)` needs a message", call)
        else:
            self.expect_assignable(self.expr(call.message, ts.STR), ts.STR, call.message)
        names: set[str] = set()
        for kw in call.fields:
            if kw.name in names:
                self.error("E2005", f"error field `{kw.name}` given twice", kw)
            names.add(kw.name)
            if kw.name in ("message", "kind", "error"):
                self.error("E2014", f"`{kw.name}` is set by the error itself", kw)
            ty = self.expr(kw.value, ts.STR if kw.name in ("entity", "field") else None)
            if kw.name in ("entity", "field"):
                self.expect_assignable(ty, ts.STR, kw.value)
        self.pop()

    def stmt_delete(self, stmt: ir.Delete) -> bool:
        fx = self.fx
        if isinstance(stmt.target, ir.Attr):
            if fx is not None:
                fx.place_start()
            ends = self._delete_field(stmt.target)
            if fx is not None:
                fx.delete_target(stmt)
            return ends
        if not isinstance(stmt.target, ir.Index):
            self.error("E3008", "`del` removes a map entry: `del m[key]`", stmt.target)
            return False
        if fx is not None:
            fx.place_start()
        obj_type = self.expr(stmt.target.obj, None)
        if isinstance(stmt.target.obj, ir.Name):
            self.target(stmt.target.obj, mutate=True)
        if fx is not None:
            fx.delete_target(stmt)
        if ts.strip_optional(obj_type).name != "map" and obj_type.name != "any":
            self.error("E3004", f"`del` works on maps, not {ts.show(obj_type)}", stmt.target)
            return False
        key_type = obj_type.args[0] if obj_type.name == "map" else ts.ANY
        self.check_key(self.expr(stmt.target.index, key_type), key_type, stmt.target.index)
        return False

    def _delete_field(self, target: ir.Attr) -> bool:
        """`del r.field` makes a field that may be absent absent (nothing if it already is)."""
        self.assigning = target
        target.ty = self.target(target, mutate=True)
        self.assigning = None
        if isinstance(target.obj, ir.Name) and target.obj.ref in ("local", "param"):
            self.target(target.obj, mutate=True)
        if target.ty.name != "any" and self._absent_field(target) is None:
            self.error(
                "E3008",
                f"`del` removes a map entry or a record field that may be absent, not `{source_text(target)}`",
                target,
                hint="declare the field `name?: T` if its key may be left out",
            )
        self.forget_presence(field_name=target.name)
        return False

    def _is_tag(self, expr: ir.Attr) -> bool:
        """Whether `expr` is the tag field of a union or of a union's member."""
        record = self.a.records.get(ts.strip_optional(expr.obj.ty or ts.ANY).name)
        if record is None:
            return False
        return (record.is_union and expr.name == record.tag) or any(f.tag for f in record.fields if f.name == expr.name)

    def _absent_field(self, expr: ir.Attr) -> ir.Field_ | None:
        """The record field `expr` names, if its key may be absent (`name?: T`)."""
        obj_type = ts.strip_optional(expr.obj.ty or ts.ANY)
        record = self.a.records.get(obj_type.name)
        field_ = next((f for f in record.fields if f.name == expr.name), None) if record else None
        return field_ if field_ is not None and field_.absent else None

    def stmt_expr(self, stmt: ir.ExprStmt) -> bool:
        value = stmt.value
        self.expr(value, None)
        if not _has_effect(value, self.a.fns):
            self.error("E3018", "this expression is computed and thrown away", stmt)
        return False

    def stmt_pass(self, stmt: ir.Pass) -> bool:
        return False

    def stmt_break(self, stmt: ir.Break) -> bool:
        if self.loop_depth == 0:
            self.error("E3017", "`break` outside a loop", stmt)
        return True

    def stmt_continue(self, stmt: ir.Continue) -> bool:
        if self.loop_depth == 0:
            self.error("E3017", "`continue` outside a loop", stmt)
        return True

    def stmt_if(self, stmt: ir.If) -> bool:
        all_terminate = True
        negatives: dict[str, ir.TypeRef] = {}
        fx = self.fx
        self.push()
        for branch in stmt.branches:
            self.narrow_here(negatives)
            self.condition(branch.cond)
            self.push(narrowing(branch.cond, True, self))
            if fx is not None:
                fx.enter()
            ends = self.block(branch.body)
            if fx is not None:
                fx.leave()
            self.pop()
            all_terminate = all_terminate and ends
            negatives.update(narrowing(branch.cond, False, self))
        self.narrow_here(negatives)
        if stmt.orelse:
            self.push()
            if fx is not None:
                fx.enter()
            else_ends = self.block(stmt.orelse)
            if fx is not None:
                fx.leave()
            self.pop()
        else:
            else_ends = False
        self.pop()
        if not stmt.orelse and all_terminate:
            # `if x is None: fail ...` narrows x for the rest of the block.
            self.narrow_here(negatives)
        return all_terminate and else_ends

    def stmt_for(self, stmt: ir.For) -> bool:
        iter_type = self.loop_iterable(stmt.iter)
        element_types = self.iteration_types(iter_type, len(stmt.targets), stmt.iter)
        if self.fx is not None:
            self.fx.loop_start(stmt.targets, stmt.iter)
        self.push()
        for name, ty in zip(stmt.targets, element_types):
            self.declare(name, ty, "loop", stmt)
        self.loop_depth += 1
        self.block(stmt.body)
        self.loop_depth -= 1
        self.pop()
        if self.fx is not None:
            self.fx.leave()
        return False

    def stmt_while(self, stmt: ir.While) -> bool:
        """`while cond max N:`: the condition is checked (and narrows) at the top of every
        round, inside the loop's scope, where the effects pass walks it too."""
        if stmt.limit is not None and not 1 <= stmt.limit <= bi.WHILE_LIMIT_MAX:
            self.error(
                "E3035",
                f"a `while` runs 1 to {bi.WHILE_LIMIT_MAX:,} rounds, not {stmt.limit:,}",
                stmt,
                hint=f"write `max N` with N from 1 to {bi.WHILE_LIMIT_MAX:,}, or leave it out ({bi.WHILE_LIMIT:,})",
            )
        if self.fx is not None:
            self.fx.loop_start((), stmt.cond)
        self.push()
        self.condition(stmt.cond)
        self.push(narrowing(stmt.cond, True, self))
        self.loop_depth += 1
        self.block(stmt.body)
        self.loop_depth -= 1
        self.pop()
        self.pop()
        if self.fx is not None:
            self.fx.leave()
        return False


_STMT_METHODS = methods_by_class(StatementChecker, "stmt_")


def _has_effect(expr: ir.Expr, fns: dict[str, ir.FnDecl]) -> bool:
    """Calls worth making as statements: helpers, mutating methods, effectful built-ins."""
    if not isinstance(expr, ir.Call):
        return False
    func = expr.func
    if isinstance(func, ir.Name):
        return func.id in fns or func.id in bi.EFFECTFUL_FUNCTIONS or func.ref == "tool"
    if isinstance(func, ir.Attr):
        kind = ts.strip_optional(func.ty).name if func.ty else "any"
        entry = library.method("str" if kind in ts.TEMPORAL else kind, func.name)
        return (entry is not None and entry.mutates) or kind == "any"
    return False


def _is_empty_literal(expr: ir.Expr) -> bool:
    return (isinstance(expr, ir.ListLit) and not expr.items) or (isinstance(expr, ir.MapLit) and not expr.entries)
