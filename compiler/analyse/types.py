"""Analysis pass 3, types: every expression and statement of every tool, helper, test
and task type-checked, with None-narrowing as mypy does it on the generated code, and
every name resolved. It annotates the IR in place (`Expr.ty`, `Name.ref`) for the
effects pass and lowering; built-in calls are checked by their registry entries. Its
walk of a tool's or helper's body also calls the effects pass's hooks
(`effects.BodyEffects`), so that the effects come from the same walk."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler import ir, library
from compiler.analyse import onload, shapes
from compiler.analyse.constants import const_value
from compiler.analyse.context import Analysis, set_field
from compiler.analyse.declared_types import resolve_type
from compiler.diagnostics import Diagnostic, did_you_mean
from compiler.ir import typesys as ts
from compiler.ir.tree import calls_in, construct, walk
from compiler.library import builtins as bi

if TYPE_CHECKING:
    from compiler.analyse.effects import BodyEffects


def run(a: Analysis) -> None:
    """Type-check every helper and tool body, and the `on load:` block (a helper taking
    the load options, compiler/analyse/onload.py), inferring their effects on the way:
    the effects pass's rules, called from this walk (`effects.BodyEffects`), so that a
    body is walked once. The effects module decides the order (helpers callee-first)."""
    from compiler.analyse import effects  # (not at the top: it imports `operand_order` from here)

    def check(callable_: ir.ToolDecl, is_helper: bool, hooks: effects.BodyEffects | None) -> None:
        TypeChecker(a, callable_, is_helper, effects=hooks).check()

    effects.infer_while_checking(a, check)


@dataclass(slots=True)
class _Local:
    """A local's type where it is used (narrowed) and how it was bound."""

    type: ir.TypeRef
    kind: str  # "local", "param", "loop"; "present" or "unknown" for a `x.field` key (below)


_EXCLUDED = "excluded"
"""The kind of a scope entry keyed `x!Member`: local `x`, of a union, is not that member
(its tag was tested and found different)."""

_PRESENT = "present"
"""The kind of a scope entry keyed `x.field`: the field of local `x`, which may be absent
(`field?: T`), was shown present (`"field" in x`); an entry of kind "unknown" under the
same key forgets that again (`del`, or `x` rebound)."""


class TypeChecker:
    """Type-checks one tool, helper, test or task: every expression gets its type (`ty`)
    and every name what it refers to (`ref`), which is what the effects pass reads."""

    def __init__(
        self,
        analysis: Analysis,
        callable_: ir.ToolDecl | None,
        is_helper: bool,
        file: str = "",
        allow_tools: bool = True,
        effects: BodyEffects | None = None,
    ) -> None:
        self.a = analysis
        self.fx = effects
        """The effects pass's hooks, called as the body is walked (`types.run`); None for
        tests and tasks, which `tests_tasks` walks with `effects.EffectWalker`."""
        self.callable = callable_
        self.is_helper = is_helper
        self.in_test = callable_ is None
        self.allow_tools = allow_tools and self.in_test
        self.file = callable_.file if callable_ else file
        self.scopes: list[dict[str, _Local]] = [{}]
        self.declared: dict[str, ir.TypeRef] = {}
        self.loop_depth = 0
        self.shared: set[int] = set()
        self.assigning: ir.Attr | None = None
        """The field an `=` statement sets, which it may do though the field is absent."""
        """Operands of the comparison chain being checked (by id): each is checked once,
        though two links of the chain look at it."""

    def error(self, code: str, message: str, node: ir.Node | None, hint: str = "") -> None:
        self.a.error(code, message, node, self.file, hint)

    def warning(self, code: str, message: str, node: ir.Node, hint: str = "") -> None:
        """A diagnostic that does not stop the spec from compiling."""
        where = (node.line, node.col, node.end_line, node.end_col)
        self.a.diags.append(Diagnostic(code, message, self.file, *where, hint=hint, severity="warning"))

    @property
    def records(self) -> dict[str, ir.RecordDecl]:
        return self.a.records

    # ------------------------------------------------------------------ scopes
    def lookup(self, name: str) -> _Local | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, ty: ir.TypeRef, kind: str, node: ir.Node) -> None:
        # A parameter's name reaches tools.json: only what a body could not write is refused
        # (the Python code renames the rest); a `let` or loop name must be free in Python.
        reason = bi.parameter_reason(name) if kind == "param" else bi.reserved_reason(name, "variable")
        if reason is not None:
            where = node if kind == "param" else self.a.name_span(node, name, self.file)
            self.error("E2014", reason, where, hint="choose another name")
        if name in self.a.fns or name in self.a.tools or name in self.a.records or name in self.a.enums:
            self.error(
                "E2001",
                f"`{name}` is already a {'helper' if name in self.a.fns else 'tool' if name in self.a.tools else 'type'}",
                node,
            )
        visible = self.lookup(name)
        if visible is not None and kind != "narrow":
            self.error(
                "E2001", f"`{name}` is already declared here", node, hint=f"assign with `{name} = ...` instead of `let`"
            )
        elif (
            name in self.declared
            and not ts.same(self.declared[name], ty)
            and ty.name != "any"
            and self.declared[name].name != "any"
        ):
            self.error(
                "E2001",
                f"`{name}` was declared earlier in this body as {ts.show(self.declared[name])}, now {ts.show(ty)}",
                node,
                hint="use another name",
            )
        self.declared.setdefault(name, ty)
        self.scopes[-1][name] = _Local(ty, kind)

    def push(self, narrowed: dict[str, ir.TypeRef] | None = None) -> None:
        frame: dict[str, _Local] = {}
        if not narrowed:  # (most scopes narrow nothing)
            self.scopes.append(frame)
            return
        for name, ty in narrowed.items():
            local = self._narrowed(name, ty)
            if local is not None:
                frame[name] = local
        self.scopes.append(frame)

    def pop(self) -> None:
        self.scopes.pop()

    def narrow_here(self, narrowed: dict[str, ir.TypeRef]) -> None:
        for name, ty in narrowed.items():
            local = self._narrowed(name, ty)
            if local is not None:
                self.scopes[-1][name] = local

    def _narrowed(self, name: str, ty: ir.TypeRef) -> _Local | None:
        """The scope entry of a narrowing: a local's new type, or (`x.field`) the field of
        a local shown present."""
        if "." in name:
            return _Local(ty, _PRESENT) if self.lookup(name.split(".", 1)[0]) is not None else None
        if "!" in name:
            return _Local(ty, _EXCLUDED) if self.lookup(name.split("!", 1)[0]) is not None else None
        local = self.lookup(name)
        return None if local is None else _Local(ty, local.kind)

    def is_present(self, obj: ir.Expr, field_name: str) -> bool:
        """Whether the field of `obj`, whose key may be absent, was shown present here."""
        if not isinstance(obj, ir.Name):
            return False
        entry = self.lookup(f"{obj.id}.{field_name}")
        return entry is not None and entry.kind == _PRESENT

    def is_excluded(self, local: str, member: str) -> bool:
        """Whether local `local`, of a union, was shown not to be `member` here."""
        entry = self.lookup(f"{local}!{member}")
        return entry is not None and entry.kind == _EXCLUDED

    def forget_presence(self, local: str | None = None, field_name: str | None = None) -> None:
        """Presence facts no longer true: of the fields of `local` (rebound), or of
        `field_name` on every local (deleted through some value, perhaps an alias; "*":
        every field); a rebound local forgets which union members it was shown not to be, too."""
        for scope in self.scopes:
            for key in list(scope):
                base, dot, name = key.partition(".")
                if dot and (base == local or name == field_name or field_name == "*"):
                    self.scopes[-1][key] = _Local(ts.ANY, "unknown")
                if local is not None and key.startswith(f"{local}!"):
                    self.scopes[-1][key] = _Local(ts.ANY, "unknown")

    # ------------------------------------------------------------------ entry
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
            try:
                re.compile(str(value))
            except re.error as exc:
                self.error("E3019", f"invalid pattern: {exc}", constraint.value)

    # ------------------------------------------------------------------ statements
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
                self.scopes[-1][stmt.target.id] = _Local(declared, local.kind)  # a union narrowed no more
            if local is not None:
                if not ts.is_optional(value_type) and ts.is_optional(local.type):
                    self.scopes[-1][stmt.target.id] = _Local(ts.strip_optional(local.type), local.kind)
                elif ts.is_optional(value_type):
                    self.scopes[-1][stmt.target.id] = _Local(self.declared.get(stmt.target.id, local.type), local.kind)
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
        self.error_call(stmt.error, _narrowing(stmt.cond, False, self))
        self.narrow_here(_narrowing(stmt.cond, True, self))
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
            self.push(_narrowing(branch.cond, True, self))
            if fx is not None:
                fx.enter()
            ends = self.block(branch.body)
            if fx is not None:
                fx.leave()
            self.pop()
            all_terminate = all_terminate and ends
            negatives.update(_narrowing(branch.cond, False, self))
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
        iter_type = self.expr(stmt.iter, None)
        if ts.is_optional(iter_type):
            self.error("E3009", "cannot loop over a value that may be None", stmt.iter)
            iter_type = ts.strip_optional(iter_type)
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

    def iteration_types(self, iter_type: ir.TypeRef, count: int, node: ir.Node) -> list[ir.TypeRef]:
        if iter_type.name in ("list", "set") and count != 1:
            self.error("E3006", f"a {iter_type.name} gives one value per step: `for x in xs`", node)
        types = ts.element_types(iter_type, count)
        if types is None:
            self.error("E3004", f"cannot loop over {ts.show(iter_type)}", node)
            return [ts.ANY] * count
        return types

    # ------------------------------------------------------------------ targets
    def target(self, expr: ir.Expr, mutate: bool = False) -> ir.TypeRef:
        """Type of an assignable place (`mutate`: changed in place, by a method or `del`)."""
        if isinstance(expr, ir.Name):
            local = self.lookup(expr.id)
            if local is not None:
                if local.kind == "param" and not mutate:
                    hint = (
                        f"`{expr.id}` here is the parameter; to change the state field of that name "
                        f"write `state.{expr.id} = …`"
                        if expr.id in self.a.state
                        else f"`let new_{expr.id} = ...`"
                    )
                    self.error("E4007", f"parameter `{expr.id}` cannot be reassigned", expr, hint=hint)
                if local.kind == "loop" and not mutate:
                    self.error("E3022", f"loop variable `{expr.id}` cannot be reassigned", expr)
                set_field(expr, "ref", "param" if local.kind == "param" else "local")
                expr.ty = local.type if mutate else self.declared.get(expr.id, local.type)
                return expr.ty
            if expr.id in self.a.state:
                return self._state_target(expr, expr.id, mutate)
            if expr.id in self.a.world:
                set_field(expr, "ref", "world")  # the effects pass says it cannot be changed
                return ts.ANY
            self.error(
                "E3008" if self.known_name(expr.id) else "E2002",
                f"cannot assign to `{expr.id}`",
                expr,
                hint=self.name_hint(expr.id),
            )
            return ts.ANY
        if (
            isinstance(expr, ir.Attr)
            and isinstance(expr.obj, ir.Name)
            and expr.obj.id == "state"
            and self.lookup("state") is None
        ):
            if expr.name not in self.a.state:
                self.error("E2006", f"no state field `{expr.name}`", expr, hint=did_you_mean(expr.name, self.a.state))
                return ts.ANY
            set_field(expr.obj, "ref", "state")
            return self._state_target(expr, expr.name, mutate)
        if isinstance(expr, (ir.Attr, ir.Index)):
            return self.expr(expr, None)
        self.error("E3008", "cannot assign to this expression", expr)
        self.expr(expr, None)
        return ts.ANY

    def _state_target(self, expr: ir.Expr, name: str, mutate: bool) -> ir.TypeRef:
        if isinstance(expr, ir.Name):
            set_field(expr, "ref", "state")
        expr.ty = self.a.state[name].type
        return expr.ty

    # ------------------------------------------------------------------ conditions and checks
    def condition(self, expr: ir.Expr) -> None:
        ty = self.expr(expr, ts.BOOL)
        if ty.name not in ("bool", "any"):
            self.error(
                "E3010",
                f"condition is {ts.show(ty)}, not bool",
                expr,
                hint="compare explicitly, e.g. `x is not None` or `len(xs) > 0`",
            )

    def expect_assignable(self, src: ir.TypeRef, dst: ir.TypeRef, node: ir.Node) -> None:
        if src is dst or ts.assignable(src, dst) or self._member_of_union(src, dst):
            return
        if ts.is_optional(src) and ts.assignable(ts.strip_optional(src), dst):
            self.error("E3009", f"value may be None where {ts.show(dst)} is expected", node)
            return
        hint = ""
        if src.name == "number" and dst.name in ("int", "float"):
            hint = f"a number may hold an int or a float; convert it with `{dst.name}(...)`"
        self.error("E3001", f"expected {ts.show(dst)}, got {ts.show(src)}", node, hint=hint)

    def _member_of_union(self, src: ir.TypeRef, dst: ir.TypeRef) -> bool:
        """A member record where its union is expected (`Card` as a `Payment`), also as an
        optional (containers stay invariant: a `list[Card]` is no `list[Payment]`)."""
        union = self.a.records.get(ts.strip_optional(dst).name)
        if union is None or not union.is_union or (ts.is_optional(src) and not ts.is_optional(dst)):
            return False
        return ts.strip_optional(src).name in union.members or (src.name == "None" and ts.is_optional(dst))

    def check_key(self, src: ir.TypeRef, key: ir.TypeRef, node: ir.Node) -> None:
        """A map key or set item. A map[json, V] takes str and int keys only: a json value
        could be a float, a bool or a list at run time, so it needs converting first."""
        if key.name == "json":
            # A json value is checked when the call runs; a container literal never fits.
            literal = isinstance(node, (ir.ListLit, ir.MapLit))
            if literal or (
                src.name not in ("str", "int", "json", "any", *ts.TEMPORAL) and src.name not in self.a.enums
            ):
                self.error(
                    "E3003",
                    f"keys of a map[json, ...] are str or int, not {ts.show(src)}",
                    node,
                    hint="convert a json value first, e.g. with as_text(...) or int(...)",
                )
            return
        self.expect_assignable(src, key, node)

    def known_name(self, name: str) -> bool:
        return (
            name in self.a.fns
            or name in self.a.tools
            or name in self.a.records
            or name in self.a.enums
            or name in library.FUNCTIONS
        )

    def name_hint(self, name: str) -> str:
        candidates: list[str] = [n for scope in self.scopes for n in scope]
        candidates += [*self.a.state, *self.a.world, *self.a.enums, *self.a.records, *self.a.fns, *library.FUNCTIONS]
        if self.in_test:
            candidates += list(self.a.tools)
        return did_you_mean(name, [c for c in candidates if c != name])

    # ------------------------------------------------------------------ expressions
    def expr(self, expr: ir.Expr, expected: ir.TypeRef | None) -> ir.TypeRef:
        # The hottest method of the analysis (10,000 calls on a 5,000-line spec): the
        # method by class (a slot, where `kind` is a field), `set_field` written out.
        values = expr.__dict__
        if self.shared and values["ty"] is not None and id(expr) in self.shared:
            return values["ty"]  # type: ignore[no-any-return]  # the second link of a chain that shares this operand
        ty: ir.TypeRef = _EXPR_METHODS[expr.__class__](self, expr, expected)
        values["ty"] = ty
        expr.__pydantic_fields_set__.add("ty")
        return ty

    def expr_const(self, expr: ir.Const, expected: ir.TypeRef | None) -> ir.TypeRef:
        value = expr.value
        scalar = _CONST_TYPES.get(value.__class__)  # (a constant is None, a bool, an int, a float or a str)
        if scalar is not None or not isinstance(value, str):
            return scalar or ts.ANY
        base = ts.strip_optional(expected) if expected else None
        if base is not None and base.name in ts.TEMPORAL:
            if not ts.valid_temporal(base.name, value):
                self.error("E3001", f"{value!r} is not an ISO-8601 {base.name}", expr)
            return base
        if base is not None and base.name in self.a.enums:
            members = self.a.enums[base.name].members
            if value not in members:
                self.error(
                    "E2007",
                    f"{value!r} is not a member of {base.name}",
                    expr,
                    hint=did_you_mean(value, members) or "one of: " + ", ".join(members),
                )
            return base
        return ts.STR

    def expr_fstring(self, expr: ir.FString, expected: ir.TypeRef | None) -> ir.TypeRef:
        for part in expr.parts:
            if isinstance(part, ir.Formatted):
                self.expr(part, None)
            elif not isinstance(part, str):
                self._shown(part)
        return ts.STR

    def _shown(self, part: ir.Expr) -> ir.TypeRef:
        """The type of a value an f-string shows (scalars only)."""
        ty = self.expr(part, None)
        if ty.name in ("list", "map", "set", "json") or ty.name in self.a.records:
            self.error(
                "E3001",
                f"f-strings show scalars; this is {ts.show(ty)}",
                part,
                hint="pick a field, or use len(...)",
            )
            return ts.ANY
        return ty

    def expr_formatted(self, expr: ir.Formatted, expected: ir.TypeRef | None) -> ir.TypeRef:
        """`{value:spec}` in an f-string: the spec must fit the value's type."""
        ty = self._shown(expr.value)
        if ty.name == "any":
            return ts.STR
        spec = f"`:{expr.spec}`"
        if ts.is_optional(ty):
            self.error(
                "E3009",
                f"the format spec {spec} needs a value, and this may be None",
                expr.value,
                hint="check it first, or format `str(x)`",
            )
            return ts.STR
        if ty.name == "bool":
            self.error(
                "E3001",
                f"the format spec {spec} would show a bool as the number 1 or 0",
                expr.value,
                hint=f"format its text: `{{str({source_text(expr.value)}):{expr.spec}}}`",
            )
            return ts.STR
        # A number may hold an int, as a float may: a spec must fit both.
        kind = {"int": "int", "float": "float", "number": "float"}.get(ty.name, "str")
        problem = ts.format_problem(expr.spec, kind)
        if problem:
            self.error(
                "E3001", f"the format spec {spec} does not fit {ts.show(ty)}: {problem}", expr, hint=_SPEC_HINTS[kind]
            )
        return ts.STR

    def expr_name(self, expr: ir.Name, expected: ir.TypeRef | None) -> ir.TypeRef:
        name = expr.id
        local = None
        for scope in reversed(self.scopes):  # `self.lookup(name)`, written out (3,000 calls)
            if name in scope:
                local = scope[name]
                break
        if local is not None:
            # `set_field(expr, "ref", ...)`, written out (3,000 calls)
            expr.__dict__["ref"] = "param" if local.kind == "param" else "local"
            expr.__pydantic_fields_set__.add("ref")
            return local.type
        if name in self.a.state:
            set_field(expr, "ref", "state")
            if self.fx is not None:
                self.fx.read(name, expr)
            return self.a.state[name].type
        if name in self.a.world:
            set_field(expr, "ref", "world")
            return self.a.world[name].type
        if name in self.a.enums or name in self.a.records:
            self.error(
                "E3001",
                f"`{name}` is a type, not a value",
                expr,
                hint=f"use `{name}.member`" if name in self.a.enums else f"build one with `{name}(field=...)`",
            )
            return ts.ANY
        if self.known_name(name):
            self.error("E3005", f"`{name}` must be called: `{name}(...)`", expr)
            return ts.ANY
        if name == "state":
            self.error("E2002", "`state` is only used as `state.field`", expr)
            return ts.ANY
        hint = onload.unknown_option_hint(self.a, name) if name in self.a.load_options else self.name_hint(name)
        self.error("E2002", f"unknown name `{name}`", expr, hint=hint)
        return ts.ANY

    def expr_list(self, expr: ir.ListLit, expected: ir.TypeRef | None) -> ir.TypeRef:
        base = ts.strip_optional(expected) if expected else None
        if base is not None and base.name == "json":
            for item in expr.items:
                self.expr(item, ts.JSON)
            return ts.JSON
        if base is not None and base.name == "set":  # `[...]` where a set is expected is a set
            for item in expr.items:
                self.check_key(self.expr(item, base.args[0]), base.args[0], item)
            return base
        item_expected = base.args[0] if base is not None and base.name == "list" else None
        if not expr.items:
            return ts.list_of(item_expected) if item_expected else ts.list_of(ts.ANY)
        item_type: ir.TypeRef | None = None
        for item in expr.items:
            ty = self.expr(item, item_expected)
            if item_expected is not None:
                self.expect_assignable(ty, item_expected, item)
                continue
            joined = ts.join(item_type, ty) if item_type is not None else ty
            if joined is None:
                self.error("E3001", f"list mixes {ts.show(item_type or ts.ANY)} and {ts.show(ty)}", item)
                joined = ts.ANY
            item_type = joined
        return ts.list_of(item_expected or item_type or ts.ANY)

    def expr_map(self, expr: ir.MapLit, expected: ir.TypeRef | None) -> ir.TypeRef:
        base = ts.strip_optional(expected) if expected else None
        if base is not None and base.name in self.a.records:
            return self._record_literal(expr, base)
        if base is not None and base.name == "json":
            for entry in expr.entries:
                self.expect_assignable(self.expr(entry.key, ts.STR), ts.STR, entry.key)
                self.expr(entry.value, ts.JSON)
            return ts.JSON
        key_expected = base.args[0] if base is not None and base.name == "map" else None
        value_expected = base.args[1] if base is not None and base.name == "map" else None
        if not expr.entries:
            return ts.map_of(key_expected or ts.ANY, value_expected or ts.ANY)
        key_type: ir.TypeRef | None = key_expected
        value_type: ir.TypeRef | None = value_expected
        for entry in expr.entries:
            k = self.expr(entry.key, key_expected)
            v = self.expr(entry.value, value_expected)
            if key_expected is not None:
                self.expect_assignable(k, key_expected, entry.key)
            else:
                key_type = ts.join(key_type, k) if key_type else k
            if value_expected is not None:
                self.expect_assignable(v, value_expected, entry.value)
            else:
                joined = ts.join(value_type, v) if value_type else v
                if joined is None:
                    self.error(
                        "E3001",
                        f"map mixes {ts.show(value_type or ts.ANY)} and {ts.show(v)} values",
                        entry.value,
                        hint="declare a record, or a map[str, json]",
                    )
                value_type = joined or ts.ANY
        key = key_type or ts.ANY
        if key.name not in ("str", "int", "json", "any") and key.name not in self.a.enums:
            self.error("E3003", f"map keys cannot be {ts.show(key)}", expr)
        return ts.map_of(key, value_type or ts.ANY)

    def _record_literal(self, expr: ir.MapLit, record_type: ir.TypeRef) -> ir.TypeRef:
        record = self.a.records[record_type.name]
        if record.is_union:
            return self._union_literal(expr, record)
        fields = {f.name: f for f in record.fields}
        given: set[str] = set()
        for entry in expr.entries:
            if not (isinstance(entry.key, ir.Const) and isinstance(entry.key.value, str)):
                self.error("E3001", f"record {record.name} keys are field names in quotes", entry.key)
                continue
            set_field(entry.key, "ty", ts.STR)
            name = entry.key.value
            if name not in fields:
                self.error(
                    "E2008", f"record {record.name} has no field `{name}`", entry.key, hint=did_you_mean(name, fields)
                )
                self.expr(entry.value, None)
                continue
            given.add(name)
            self.expect_assignable(self.expr(entry.value, fields[name].type), fields[name].type, entry.value)
        self._missing_fields(record, given, expr)
        return record_type

    def _union_literal(self, expr: ir.MapLit, union: ir.RecordDecl) -> ir.TypeRef:
        """A map literal where a union is expected is the member its tag names."""
        tag = next(
            (e.value for e in expr.entries if isinstance(e.key, ir.Const) and e.key.value == union.tag),
            None,
        )
        member = next(
            (m for m, value in union.members.items() if isinstance(tag, ir.Const) and tag.value == value), None
        )
        if member is None or member not in self.a.records:
            tags = ", ".join(f'"{value}"' for value in union.members.values())
            self.error(
                "E3001",
                f"a {union.name} literal needs `{union.tag}` set to one of {tags}",
                expr,
                hint=f"or build a member: {', '.join(f'{m}(...)' for m in union.members)}",
            )
            for entry in expr.entries:
                self.expr(entry.value, None)
            return ts.t(union.name)
        return self._record_literal(expr, ts.t(member))

    def _missing_fields(self, record: ir.RecordDecl, given: set[str], node: ir.Node) -> None:
        missing = [f.name for f in record.fields if f.name not in given and ts.required_field(f)]
        if missing:
            self.error("E3007", f"record {record.name} needs {', '.join(missing)}", node)

    def expr_attr(self, expr: ir.Attr, expected: ir.TypeRef | None) -> ir.TypeRef:
        obj = expr.obj
        if isinstance(obj, ir.Name) and (obj.id in self.a.enums or obj.id == "state") and self.lookup(obj.id) is None:
            if obj.id in self.a.enums:
                enum = self.a.enums[obj.id]
                set_field(obj, "ref", "enum")
                if expr.name not in enum.members:
                    self.error(
                        "E2007",
                        f"enum {enum.name} has no member `{expr.name}`",
                        expr,
                        hint=did_you_mean(expr.name, enum.members) or "one of: " + ", ".join(enum.members),
                    )
                return ts.t(enum.name)
            if obj.id == "state" and obj.id not in self.a.state:
                set_field(obj, "ref", "state")
                if expr.name not in self.a.state:
                    self.error(
                        "E2006", f"no state field `{expr.name}`", expr, hint=did_you_mean(expr.name, self.a.state)
                    )
                    return ts.ANY
                if self.fx is not None:
                    self.fx.read(expr.name, expr)
                return self.a.state[expr.name].type
        obj_type = self.expr(obj, None)
        if obj_type.name == "any":
            return ts.ANY
        if ts.is_optional(obj_type):
            self.error(
                "E3009",
                f"`.{expr.name}` on a value that may be None",
                obj,
                hint="check it first: `require x is not None else ...`",
            )
            obj_type = ts.strip_optional(obj_type)
        if self._parameter_hides_state(obj, obj_type, expr.name):
            self.error(
                "E2025",
                f"`state` is the parameter `state` in this body, not the state: no field `{expr.name}` of it",
                expr,
                hint=f"write the state field by its bare name, `{expr.name}`; `state.NAME` is the parameter's field here",
            )
            return self.a.state[expr.name].type
        if obj_type.name in self.a.records:
            record = self.a.records[obj_type.name]
            for field_ in record.fields:
                if field_.name == expr.name:
                    if field_.absent and expr is not self.assigning and not self.is_present(obj, expr.name):
                        self._absent_read(expr)
                    return field_.type
            if record.is_union and shapes.member_with(record, expr.name, self.a.records):
                return self._member_field(expr, record)
            self.error(
                "E2008",
                f"record {record.name} has no field `{expr.name}`",
                expr,
                hint=did_you_mean(expr.name, [f.name for f in record.fields]),
            )
            return ts.ANY
        self.error("E3004", f"{ts.show(obj_type)} has no field `{expr.name}`", expr)
        return ts.ANY

    def _member_field(self, expr: ir.Attr, union: ir.RecordDecl) -> ir.TypeRef:
        """`p.number` on a union value: a field of some members only (E3032)."""
        having = shapes.member_with(union, expr.name, self.a.records)
        obj = source_text(expr.obj)
        shown = obj if isinstance(expr.obj, ir.Name) and expr.obj.ref in ("local", "param") else "x"
        bind = "" if shown == obj else f"`let x = {obj}`, then "
        self.error(
            "E3032",
            f"`{expr.name}` is a field of {' and '.join(having)} only, and `{obj}` may be any {union.name}",
            expr,
            hint=f'{bind}narrow it first: `if {shown}.{union.tag} == "{union.members[having[0]]}":`',
        )
        return ts.ANY

    def _absent_read(self, expr: ir.Attr) -> None:
        obj = source_text(expr.obj)
        shown = obj if isinstance(expr.obj, ir.Name) and expr.obj.ref in ("local", "param") else "x"
        bind = "" if shown == obj else f"`let x = {obj}`, then "
        self.error(
            "E3030",
            f"`{source_text(expr)}` may be absent: `{expr.name}?` is a field whose key may be left out",
            expr,
            hint=f'{bind}check it first: `if "{expr.name}" in {shown}:` (or '
            f'`require "{expr.name}" in {shown} else ...`)',
        )

    def _parameter_hides_state(self, obj: ir.Expr, obj_type: ir.TypeRef, name: str) -> bool:
        """`state.NAME` where a parameter (or local) called `state` hides the state and has
        no field NAME, but the state has: the parameter wins, as any nearer name does."""
        if not (isinstance(obj, ir.Name) and obj.id == "state" and name in self.a.state):
            return False
        record = self.a.records.get(ts.strip_optional(obj_type).name)
        return record is None or all(f.name != name for f in record.fields)

    def expr_index(self, expr: ir.Index, expected: ir.TypeRef | None) -> ir.TypeRef:
        obj_type = self.expr(expr.obj, None)
        if ts.is_optional(obj_type) and obj_type.name != "None":
            self.error("E3009", "indexing a value that may be None", expr.obj)
            obj_type = ts.strip_optional(obj_type)
        if obj_type.name == "any":
            self.expr(expr.index, None)
            return ts.ANY
        if obj_type.name == "json":
            self.expr(expr.index, None)
            return ts.JSON
        if obj_type.name in ("list", "str"):
            self.expect_assignable(self.expr(expr.index, ts.INT), ts.INT, expr.index)
            return obj_type.args[0] if obj_type.name == "list" else ts.STR
        if obj_type.name == "map":
            self.check_key(self.expr(expr.index, obj_type.args[0]), obj_type.args[0], expr.index)
            return obj_type.args[1]
        self.error("E3004", f"cannot index {ts.show(obj_type)}", expr)
        self.expr(expr.index, None)
        return ts.ANY

    def expr_slice(self, expr: ir.Slice, expected: ir.TypeRef | None) -> ir.TypeRef:
        obj_type = self.expr(expr.obj, None)
        if ts.is_optional(obj_type) and obj_type.name != "None":
            self.error("E3009", "slicing a value that may be None", expr.obj)
            obj_type = ts.strip_optional(obj_type)
        for bound in (expr.lower, expr.upper):
            if bound is not None:
                self.expect_assignable(self.expr(bound, ts.INT), ts.INT, bound)
        if obj_type.name in ("list", "str", "any"):
            return obj_type
        self.error("E3004", f"cannot slice {ts.show(obj_type)}", expr)
        return ts.ANY

    def expr_unary(self, expr: ir.Unary, expected: ir.TypeRef | None) -> ir.TypeRef:
        if expr.op == "not":
            self.condition(expr.operand)
            return ts.BOOL
        ty = self.expr(expr.operand, expected)
        if not ts.is_numeric(ty):
            self.error(
                "E3004", f"`-` does not apply to {ts.show(ty)}", expr, hint=_json_number_hint((expr.operand, ty))
            )
            return ts.ANY
        return ty

    def expr_binary(self, expr: ir.Binary, expected: ir.TypeRef | None) -> ir.TypeRef:
        op = expr.op
        if op in ("and", "or"):
            self.condition(expr.left)
            self.push(_narrowing(expr.left, op == "and", self))
            self.condition(expr.right)
            self.pop()
            return ts.BOOL
        if op in ("is", "is not"):
            return self._identity(expr)
        if op in ("==", "!="):
            return self._equality(expr)
        if op in ("in", "not in"):
            return self._membership(expr)
        if op in ("<", "<=", ">", ">="):
            if operand_order(expr)[0] is expr.right:  # `"2025-01-01" <= d`: the literal takes d's type
                right = self.expr(expr.right, None)
                left = self.expr(expr.left, right)
            else:
                left = self.expr(expr.left, None)
                right = self.expr(expr.right, left)
            if not ts.orderable(left, right):
                self.error(
                    "E3004",
                    f"`{op}` does not apply to {ts.show(left)} and {ts.show(right)}",
                    expr,
                    hint=_json_number_hint((expr.left, left), (expr.right, right)),
                )
            return ts.BOOL
        left = self.expr(expr.left, expected)
        right = self.expr(expr.right, left if left.name in ("list",) else None)
        return self._arithmetic(expr, left, right)

    def expr_compare(self, expr: ir.Compare, expected: ir.TypeRef | None) -> ir.TypeRef:
        """`a < b <= c`: each link checked as the comparison it is, each operand once."""
        for op in expr.ops:
            if op not in CHAINABLE:
                self.error(
                    "E3004",
                    f"`{op}` cannot be chained with other comparisons",
                    expr,
                    hint="chain ==, !=, <, <=, > and >= only; write `a in xs and b in xs`, or put one comparison in parentheses",
                )
                break
        outer = self.shared
        self.shared = outer | {id(operand) for operand in expr.operands}
        for operand in expr.operands:
            set_field(operand, "ty", None)  # checked afresh (a body is checked once; this is for safety)
        links = chain_links(expr)
        first = links[0] if links else None
        if self.fx is not None and first is not None and operand_order(first)[0] is first.right:
            # `[a] < b < c` is checked b, [a], c; the effects walk goes through the operands
            # in order (the later links' left operands are checked already, so only the
            # first can be out of order), which matters unless the first is a constant.
            self.fx.exact = first.left.__class__ is ir.Const and self.fx.exact
        try:
            for link in links:
                self.expr_binary(link, None)
        finally:
            self.shared = outer
        return ts.BOOL

    def _identity(self, expr: ir.Binary) -> ir.TypeRef:
        left = self.expr(expr.left, None)
        right = self.expr(expr.right, None)
        if right.name != "None":
            self.error("E3004", f"`{expr.op}` compares with None only; use `==` or `!=`", expr)
        elif not ts.is_optional(left) and left.name not in ("any", "json"):
            self.error("E3004", f"{ts.show(left)} is never None", expr.left)
        return ts.BOOL

    def _equality(self, expr: ir.Binary) -> ir.TypeRef:
        if operand_order(expr)[0] is expr.right:
            # `["a"] == tags`: the literal takes its type from the other side, either way round
            right = self.expr(expr.right, None)
            left = self.expr(expr.left, right)
        else:
            left = self.expr(expr.left, None)
            right = self.expr(expr.right, left if expr.right.kind in _LITERALS else None)
        if isinstance(expr.left, ir.Const) and isinstance(expr.right, ir.Const):
            same_value = expr.left.value == expr.right.value
            self.error("E3004", f"this compares two constants: it is always {same_value == (expr.op == '==')}", expr)
            return ts.BOOL
        if not (ts.assignable(left, right) or ts.assignable(right, left) or ts.join(left, right) is not None):
            always = "False" if expr.op == "==" else "True"
            self.error("E3004", f"comparing {ts.show(left)} with {ts.show(right)} is always {always}", expr)
        self._check_tag_value(expr)
        return ts.BOOL

    def _check_tag_value(self, expr: ir.Binary) -> None:
        """`p.source == "bitcoin"` where no member of the union has that tag: always False."""
        attr, const = expr.left, expr.right
        if not (isinstance(attr, ir.Attr) and isinstance(const, ir.Const) and isinstance(const.value, str)):
            return
        union = self.a.records.get(ts.strip_optional(attr.obj.ty or ts.ANY).name)
        if union is None or not union.is_union or attr.name != union.tag or const.value in union.members.values():
            return
        always = "False" if expr.op == "==" else "True"
        tags = ", ".join(f'"{value}"' for value in union.members.values())
        self.error(
            "E3004",
            f'no {union.name} has {union.tag} "{const.value}": this is always {always}',
            expr,
            hint=f"the tags are {tags}",
        )

    def _membership(self, expr: ir.Binary) -> ir.TypeRef:
        container = self.expr(expr.right, None)
        base = container
        if ts.is_optional(container):
            self.error("E3009", f"`{expr.op}` on a value that may be None", expr.right)
            base = ts.strip_optional(container)
        if base.name in self.a.records:
            return self._presence_test(expr, self.a.records[base.name])
        if base.name not in ("list", "map", "set", "str"):
            self.expr(expr.left, None)
            if base.name not in ("any", "json"):
                self.error(
                    "E3004",
                    f"`{expr.op}` needs a list, set, map or str on the right, not {ts.show(container)}",
                    expr.right,
                )
            return ts.BOOL
        wanted = ts.STR if base.name == "str" else base.args[0]
        self.check_key(self.expr(expr.left, wanted), wanted, expr.left)
        return ts.BOOL

    def _presence_test(self, expr: ir.Binary, record: ir.RecordDecl) -> ir.TypeRef:
        """`"field" in r`: whether a field that may be absent is there."""
        key = expr.left
        self.expr(key, ts.STR)
        if not (isinstance(key, ir.Const) and isinstance(key.value, str)):
            self.error("E3004", f'`{expr.op}` on a record takes a field name in quotes: `"field" in r`', key)
            return ts.BOOL
        field_ = next((f for f in record.fields if f.name == key.value), None)
        if field_ is None:
            names = [f.name for f in record.fields]
            self.error(
                "E2008", f"record {record.name} has no field `{key.value}`", key, hint=did_you_mean(key.value, names)
            )
        elif not field_.absent:
            self.error(
                "E3004",
                f"`{key.value}` is always in a {record.name}: `{expr.op}` tests fields that may be absent (`name?: T`)",
                expr,
            )
        return ts.BOOL

    def _arithmetic(self, expr: ir.Binary, left: ir.TypeRef, right: ir.TypeRef) -> ir.TypeRef:
        op = expr.op
        if left.name == "any" or right.name == "any":
            return ts.ANY
        if ts.is_numeric(left) and ts.is_numeric(right):
            if op == "/":
                return ts.FLOAT
            if "float" not in (left.name, right.name) and "number" in (left.name, right.name):
                return ts.NUMBER  # Python's rules decide per value: int with int, else float
            if op == "**":
                # As mypy types it: an int to a literal power of 0 or more is an int;
                # any other power is a float (an int to a negative power is one in Python).
                whole = left.name == right.name == "int" and power_is_whole(expr.right)
                return ts.INT if whole else ts.FLOAT
            return ts.INT if left.name == right.name == "int" else ts.FLOAT
        if op == "+" and left.name in ("str", *ts.TEMPORAL) and right.name in ("str", *ts.TEMPORAL):
            return ts.STR
        if op == "+" and left.name == "list" and ts.assignable(right, left):
            return left
        if op == "*" and left.name in ("str", "list") and right.name == "int":
            return left
        self.error(
            "E3004",
            f"`{op}` does not apply to {ts.show(left)} and {ts.show(right)}",
            expr,
            hint=_json_number_hint((expr.left, left), (expr.right, right)),
        )
        return ts.ANY

    def expr_ternary(self, expr: ir.Ternary, expected: ir.TypeRef | None) -> ir.TypeRef:
        self.condition(expr.cond)
        self.push(_narrowing(expr.cond, True, self))
        then = self.expr(expr.then, expected)
        self.pop()
        self.push(_narrowing(expr.cond, False, self))
        other = self.expr(expr.other, expected or then)
        self.pop()
        joined = ts.join(then, other)
        if joined is None:
            self.error("E3001", f"the branches give {ts.show(then)} and {ts.show(other)}", expr)
            return ts.ANY
        return joined

    def expr_comprehension(self, expr: ir.Comprehension, expected: ir.TypeRef | None) -> ir.TypeRef:
        iter_type = self.expr(expr.iter, None)
        if ts.is_optional(iter_type):
            self.error("E3009", "cannot loop over a value that may be None", expr.iter)
            iter_type = ts.strip_optional(iter_type)
        element_types = self.iteration_types(iter_type, len(expr.targets), expr.iter)
        if self.fx is not None:
            self.fx.loop_start(expr.targets, expr.iter)
        self.push()
        for name, ty in zip(expr.targets, element_types):
            if self.lookup(name) is not None:
                self.error("E2001", f"`{name}` is already declared here", expr)
            elif (reason := bi.reserved_reason(name, "variable")) is not None:
                self.error("E2014", reason, expr, hint="choose another name")
            self.scopes[-1][name] = _Local(ty, "loop")
        if expr.cond is not None:
            self.condition(expr.cond)
            self.narrow_here(_narrowing(expr.cond, True, self))
        base = ts.strip_optional(expected) if expected else None
        if expr.value is None:
            item_expected = base.args[0] if base is not None and base.name == "list" else None
            elt = self.expr(expr.elt, item_expected)
            result = ts.list_of(item_expected or elt)
        else:
            key_expected = base.args[0] if base is not None and base.name == "map" else None
            value_expected = base.args[1] if base is not None and base.name == "map" else None
            key = self.expr(expr.elt, key_expected)
            value = self.expr(expr.value, value_expected)
            result = ts.map_of(key_expected or key, value_expected or value)
        self.pop()
        if self.fx is not None:
            self.fx.leave()
        return result

    def expr_lambda(self, expr: ir.Lambda, expected: ir.TypeRef | None) -> ir.TypeRef:
        self.error("E3015", "a lambda is allowed only as the `key=` argument of sorted, min or max", expr)
        return ts.ANY

    # ------------------------------------------------------------------ calls
    def expr_call(self, expr: ir.Call, expected: ir.TypeRef | None) -> ir.TypeRef:
        func = expr.func
        if isinstance(func, ir.Attr):
            return self.method_call(expr, func)
        if not isinstance(func, ir.Name):
            self.error("E3005", "only names and methods can be called", func)
            return ts.ANY
        name = func.id
        if name not in library.FUNCTIONS and self.lookup(name) is not None:  # a call `len(x)` beside a parameter `len`
            self.error("E3005", f"`{name}` is a value, not a function", func)
            return ts.ANY
        if name in self.a.records:
            set_field(func, "ref", "record")
            return self.record_call(expr, self.a.records[name])
        if name in self.a.fns:
            set_field(func, "ref", "fn")
            return self.fn_call(expr, self.a.fns[name])
        if name in self.a.tools and self.allow_tools:  # in tests a tool may share a built-in's name
            return self.tool_call(expr, statement=False)
        builtin = library.FUNCTIONS.get(name)
        if builtin is not None:
            set_field(func, "ref", "builtin")
            if self.fx is not None:
                self.fx.builtin_effects(expr, name)
            return builtin.check(self, expr, expected)
        if name in self.a.tools:
            if self.allow_tools:
                return self.tool_call(expr, statement=False)
            where = (
                "a verify condition; verify reads state only"
                if self.in_test
                else "`on load:`; loading runs no tool"
                if self.callable is self.a.on_load
                else "a tool body; share logic through `fn` helpers"
            )
            self.error("E3005", f"tool `{name}` cannot be called from {where}", func)
            return ts.ANY
        self.error("E2002", f"unknown function `{name}`", func, hint=self.name_hint(name))
        for arg in expr.args:
            self.expr(arg, None)
        return ts.ANY

    def tool_call(self, expr: ir.Expr, statement: bool) -> ir.TypeRef:
        """A call to a tool from a test or task: named arguments only."""
        if not (isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name)):
            self.error("E5001", "expected a tool call like `tool(param=value)`", expr)
            self.expr(expr, None)
            return ts.ANY
        name = expr.func.id
        tool = self.a.tools.get(name)
        if tool is None:
            self.error("E2009", f"unknown tool `{name}`", expr.func, hint=did_you_mean(name, self.a.tools))
            return ts.ANY
        set_field(expr.func, "ref", "tool")
        self.forget_presence(field_name="*")  # the tool may delete any field of what a test holds
        if expr.args:
            self.error("E5004", f"pass arguments to `{name}` by name", expr.args[0])
            for arg in expr.args:
                self.expr(arg, None)
            set_field(expr, "ty", tool.returns)
            return tool.returns
        params = {p.name: p.type for p in tool.params}
        given = self.named_arguments(expr, params, "E3006", f"tool `{name}` has no parameter", "argument")
        missing = [
            p.name for p in tool.params if p.default is None and not ts.is_optional(p.type) and p.name not in given
        ]
        if missing:
            self.error("E5005", f"`{name}` needs {', '.join(missing)}", expr)
        set_field(expr, "ty", tool.returns)
        return tool.returns

    def record_call(self, expr: ir.Call, record: ir.RecordDecl) -> ir.TypeRef:
        if record.is_union:
            members = ", ".join(record.members)
            self.error("E3005", f"union {record.name} is built as one of its members: {members}", expr)
            return ts.t(record.name)
        if expr.args:
            self.error("E3006", f"record {record.name} takes named fields: `{record.name}(field=value)`", expr.args[0])
        fields = {f.name: f.type for f in record.fields}
        given = self.named_arguments(expr, fields, "E2008", f"record {record.name} has no field", "field")
        self._missing_fields(record, given, expr)
        return ts.t(record.name)

    def named_arguments(
        self, expr: ir.Call, expected: dict[str, ir.TypeRef], unknown_code: str, unknown: str, what: str
    ) -> set[str]:
        """Check `name=value` arguments against the names and types they may have; the
        names given (each once)."""
        given: set[str] = set()
        for kw in expr.kwargs:
            ty = expected.get(kw.name)
            if ty is None:
                self.error(unknown_code, f"{unknown} `{kw.name}`", kw, hint=did_you_mean(kw.name, expected))
                self.expr(kw.value, None)
                continue
            if kw.name in given:
                self.error("E2005", f"{what} `{kw.name}` given twice", kw)
            given.add(kw.name)
            self.expect_assignable(self.expr(kw.value, ty), ty, kw.value)
        return given

    def fn_call(self, expr: ir.Call, fn: ir.FnDecl) -> ir.TypeRef:
        arguments: list[tuple[ir.Param, ir.Expr]] = []
        if len(expr.args) > len(fn.params):
            self.error(
                "E3006",
                f"`{fn.name}` takes {len(fn.params)} argument{'s' if len(fn.params) != 1 else ''}, got {len(expr.args)}",
                expr,
            )
        for param, arg in zip(fn.params, expr.args):
            arguments.append((param, arg))
        given = {p.name for p, _ in arguments}
        params = {p.name: p for p in fn.params} if expr.kwargs else {}
        for kw in expr.kwargs:
            named_param = params.get(kw.name)
            if named_param is None:
                self.error("E3006", f"`{fn.name}` has no parameter `{kw.name}`", kw, hint=did_you_mean(kw.name, params))
                self.expr(kw.value, None)
                continue
            if kw.name in given:
                self.error("E2005", f"argument `{kw.name}` given twice", kw)
                continue
            arguments.append((named_param, kw.value))
            given.add(kw.name)
        for param, arg in arguments:
            self.expect_assignable(self.expr(arg, param.type), param.type, arg)
        missing = [p.name for p in fn.params if p.name not in given and p.default is None]
        if missing:
            self.error("E3006", f"`{fn.name}` needs {', '.join(missing)}", expr)
        self._forget_deleted_by(fn.name)
        if self.fx is not None:
            self.fx.helper_effects(expr, fn.name)
        return fn.returns

    def helper_deletes(self) -> dict[str, set[str] | None]:
        """`shapes.fields_deleted` of the helpers, computed once per analysis when first
        needed (the helpers' bodies and calls do not change while they are checked)."""
        if self.a.deleted_fields is None:
            self.a.deleted_fields = shapes.fields_deleted(self.a)
        return self.a.deleted_fields

    def may_delete_fields(self, expr: ir.Expr) -> bool:
        """Whether evaluating `expr` calls a tool or a helper that may `del` a field."""
        helper_deletes = self.helper_deletes()
        for node in calls_in(expr):
            if isinstance(node.func, ir.Name):
                if node.func.ref == "tool" or (node.func.ref == "fn" and helper_deletes.get(node.func.id) != set()):
                    return True
        return False

    def _forget_deleted_by(self, helper: str) -> None:
        """A helper that may `del` a field (or whose body envc cannot see) ends the
        presence tests of that field: it may hold the same record."""
        deleted = self.helper_deletes().get(helper, _NONE_DELETED)
        if deleted is None:
            self.forget_presence(field_name="*")
        for name in deleted or ():
            self.forget_presence(field_name=name)

    def method_call(self, expr: ir.Call, func: ir.Attr) -> ir.TypeRef:
        obj_type = self.expr(func.obj, None)
        if ts.is_optional(obj_type) and obj_type.name != "None":
            self.error("E3009", f"`.{func.name}()` on a value that may be None", func.obj)
            obj_type = ts.strip_optional(obj_type)
        name = func.name
        kind = "str" if obj_type.name in ts.TEMPORAL else obj_type.name  # ISO strings
        if kind == "any":
            for arg in expr.args:
                self.expr(arg, None)
            return ts.ANY
        entry = library.method(kind, name)
        if entry is None:
            table = library.RECEIVERS.get(kind)
            where = f"{ts.show(obj_type)} has no method `{name}`"
            self.error("E3016", where, func, hint=did_you_mean(name, table or ()) if table else "")
            for arg in expr.args:
                self.expr(arg, None)
            return ts.ANY
        if expr.kwargs:
            self.error("E3006", f"`.{name}()` takes positional arguments", expr.kwargs[0])
        if entry.mutates and isinstance(func.obj, ir.Name):
            self.target(func.obj, mutate=True)
        set_field(func, "ty", obj_type)
        if entry.mutates and self.fx is not None:
            self.fx.method_call(expr, func)
        return self._method_arguments(expr, entry, obj_type)

    def _method_arguments(self, expr: ir.Call, entry: library.Method, obj: ir.TypeRef) -> ir.TypeRef:
        args = expr.args
        params, result, required = entry.signature(obj, len(args))
        if not required <= len(args) <= len(params):
            self.error(
                "E3006",
                f"`.{entry.name}()` takes {required if required == len(params) else f'{required} to {len(params)}'} argument(s), got {len(args)}",
                expr,
            )
        for index, (param_type, arg) in enumerate(zip(params, args)):
            if index == 0 and entry.key_argument:
                self.check_key(self.expr(arg, param_type), param_type, arg)
            else:
                self.expect_assignable(self.expr(arg, param_type), param_type, arg)
        for arg in args[len(params) :]:
            self.expr(arg, None)
        return result

    # ------------------------------------------------------------------ arguments of built-in functions
    def positional(self, expr: ir.Call, name: str, params: list[ir.TypeRef], required: int) -> list[ir.TypeRef]:
        args = expr.args
        if expr.kwargs:
            self.error("E3006", f"`{name}` takes positional arguments", expr.kwargs[0])
        if not required <= len(args) <= len(params):
            count = str(required) if required == len(params) else f"{required} to {len(params)}"
            self.error(
                "E3006", f"`{name}` takes {count} argument{'s' if len(params) != 1 else ''}, got {len(args)}", expr
            )
        types: list[ir.TypeRef] = []
        for param, arg in zip(params, args):
            ty = self.expr(arg, param)
            self.expect_assignable(ty, param, arg)
            types.append(ty)
        for arg in args[len(params) :]:
            self.expr(arg, None)
        return types

    def one_arg(self, expr: ir.Call, name: str, expected: ir.TypeRef | None = None) -> ir.TypeRef:
        if len(expr.args) != 1 or expr.kwargs:
            self.error("E3006", f"`{name}` takes one argument", expr)
            for arg in expr.args:
                self.expr(arg, None)
            return ts.ANY
        ty = self.expr(expr.args[0], expected)
        if ts.is_optional(ty) and ty.name != "None":
            self.error("E3009", f"`{name}` of a value that may be None", expr.args[0])
            return ts.strip_optional(ty)
        return ty

    def key_lambda(self, expr: ir.Call, item: ir.TypeRef) -> None:
        for kw in expr.kwargs:
            if kw.name == "key":
                if not isinstance(kw.value, ir.Lambda) or len(kw.value.params) != 1:
                    self.error("E3006", "`key=` takes a lambda of one parameter: `key=lambda t: t.field`", kw.value)
                    continue
                lam = kw.value
                self.push()
                self.scopes[-1][lam.params[0]] = _Local(item, "loop")
                if self.fx is not None:
                    self.fx.lambda_start(lam.params)
                key_type = self.expr(lam.body, None)
                if self.fx is not None:
                    self.fx.leave()
                self.pop()
                if not ts.orderable(key_type, key_type):
                    self.error("E3004", f"cannot order by {ts.show(key_type)}", lam.body)
                set_field(lam, "ty", key_type)
            elif kw.name == "reverse":
                self.expect_assignable(self.expr(kw.value, ts.BOOL), ts.BOOL, kw.value)
            else:
                self.error("E3006", f"unknown argument `{kw.name}`", kw)


def _methods_by_class(prefix: str) -> dict[type, Any]:
    """The checker's method per IR class of a statement or expression kind (`stmt_let`,
    `expr_call`, …), looked up once rather than by `getattr` on every node (by class:
    the IR's statement and expression classes have no subclasses)."""
    methods = {
        name.removeprefix(prefix): method for name, method in vars(TypeChecker).items() if name.startswith(prefix)
    }
    classes = [cls for cls in vars(ir).values() if isinstance(cls, type) and issubclass(cls, ir.Node)]
    kinds = {cls: cls.model_fields["kind"].default for cls in classes if "kind" in cls.model_fields}
    return {cls: methods[kind] for cls, kind in kinds.items() if kind in methods}


_STMT_METHODS = _methods_by_class("stmt_")
_EXPR_METHODS = _methods_by_class("expr_")


_LITERALS = ("const", "list", "map")

_NONE_DELETED: frozenset[str] = frozenset()
"""What a helper the deletion table does not know deletes (`_forget_deleted_by`)."""

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

_CONST_TYPES = {type(None): ts.NONE, bool: ts.BOOL, int: ts.INT, float: ts.FLOAT}
"""The type of a constant by its value's class; a string's depends on what is expected."""


CHAINABLE = ("==", "!=", "<", "<=", ">", ">=")
"""The comparisons a chain may link (`a == b == c`, `0 <= p < 1`); `in` and `is` stand alone."""


def chain_links(expr: ir.Compare) -> list[ir.Binary]:
    """The comparisons of a chain, `a < b <= c` as `a < b` and `b <= c`; neighbouring
    links share the operand between them (the same node, not a copy)."""
    return [
        ir.Binary(
            op=op,
            left=left,
            right=right,
            line=left.line,
            col=left.col,
            end_line=right.end_line,
            end_col=right.end_col,
        )
        for op, left, right in zip(expr.ops, expr.operands, expr.operands[1:])
    ]


def operand_order(expr: ir.Binary) -> tuple[ir.Expr, ir.Expr]:
    """The order the operands of a binary expression are checked in: `in` looks at its
    container first, and `==` at the side that is not a literal first (the literal then
    takes that side's type; so in an ordering, `"2025-01-01" <= d`). The effects pass
    visits them in the same order."""
    if expr.op in ("in", "not in"):
        return expr.right, expr.left
    if expr.op in CHAINABLE and expr.left.kind in _LITERALS and expr.right.kind not in _LITERALS:
        return expr.right, expr.left
    return expr.left, expr.right


def _narrowing(cond: ir.Expr, positive: bool, checker: TypeChecker) -> dict[str, ir.TypeRef]:
    """Locals known not to be None when `cond` is true (positive) or false."""
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return _narrowing(cond.operand, not positive, checker)
    if isinstance(cond, ir.Binary):
        if (
            cond.op in ("is not", "!=", "is", "==")
            and isinstance(cond.right, ir.Const)
            and cond.right.value is None
            and isinstance(cond.left, ir.Name)
        ):
            not_none = cond.op in ("is not", "!=")
            if not_none == positive:
                local = checker.lookup(cond.left.id)
                if local is not None and ts.is_optional(local.type):
                    return {cond.left.id: ts.strip_optional(local.type)}
            return {}
        if cond.op in ("in", "not in") and isinstance(cond.left, ir.Const) and isinstance(cond.right, ir.Name):
            return _presence(cond, positive, checker)
        if cond.op in ("==", "!=") and isinstance(cond.left, ir.Attr) and isinstance(cond.right, ir.Const):
            return _member_narrowing(cond, positive, checker)
        if (cond.op == "and" and positive) or (cond.op == "or" and not positive):
            left = _narrowing(cond.left, positive, checker)
            if checker.may_delete_fields(cond.right):  # `"f" in x and forget(x) and x.f`: gone
                left = {name: ty for name, ty in left.items() if "." not in name}
            checker.push(left)  # the right operand is read narrowed by the left (`p.source == "cash" and "note" in p`)
            right = _narrowing(cond.right, positive, checker)
            checker.pop()
            return {**left, **right}
    if isinstance(cond, ir.Compare) and positive:  # a true chain: every link is true
        narrowed: dict[str, ir.TypeRef] = {}
        for link in chain_links(cond):
            narrowed.update(_narrowing(link, True, checker))
        return narrowed
    return {}


def _presence(cond: ir.Binary, positive: bool, checker: TypeChecker) -> dict[str, ir.TypeRef]:
    """`"field" in x` (true) or `"field" not in x` (false): the field of local `x`, which
    may be absent, is present; keyed `x.field` (see `_PRESENT`)."""
    assert isinstance(cond.left, ir.Const) and isinstance(cond.right, ir.Name)
    local = checker.lookup(cond.right.id)
    if local is None or (cond.op == "in") != positive:
        return {}
    record = checker.records.get(ts.strip_optional(local.type).name)
    field_ = next((f for f in record.fields if f.name == cond.left.value), None) if record else None
    if field_ is None or not field_.absent:
        return {}
    return {f"{cond.right.id}.{field_.name}": field_.type}


def _member_narrowing(cond: ir.Binary, positive: bool, checker: TypeChecker) -> dict[str, ir.TypeRef]:
    """`p.source == "credit_card"` (true) or `!=` (false), `p` a local of a union: `p` is
    that member. The other way round the member is ruled out (keyed `p!Card`, see
    `_EXCLUDED`), and once all members but one are, `p` is that one."""
    assert isinstance(cond.left, ir.Attr) and isinstance(cond.right, ir.Const)
    obj = cond.left.obj
    local = checker.lookup(obj.id) if isinstance(obj, ir.Name) else None
    union = checker.records.get(local.type.name) if local is not None else None
    if not isinstance(obj, ir.Name) or union is None or not union.is_union or cond.left.name != union.tag:
        return {}
    member = next((m for m, value in union.members.items() if value == cond.right.value), None)
    if member is None:
        return {}
    if (cond.op == "==") == positive:
        return {obj.id: ts.t(member)}
    excluded = {member, *(m for m in union.members if checker.is_excluded(obj.id, m))}
    remaining = [m for m in union.members if m not in excluded]
    narrowed = {f"{obj.id}!{member}": ts.ANY}
    return {**narrowed, obj.id: ts.t(remaining[0])} if len(remaining) == 1 else narrowed


def source_text(expr: ir.Expr) -> str:
    """A short expression as a hint may quote it (names, fields, constant keys), or `x`.
    (Not `compiler.front.fmt`, which envc's output may not depend on.)"""
    if isinstance(expr, ir.Name):
        return expr.id
    if isinstance(expr, ir.Attr):
        return f"{source_text(expr.obj)}.{expr.name}"
    if isinstance(expr, ir.Index) and isinstance(expr.index, ir.Const):
        key = expr.index.value
        shown = f'"{key}"' if isinstance(key, str) and '"' not in key and "\\" not in key else repr(key)
        return f"{source_text(expr.obj)}[{shown}]"
    return "x"


_SPEC_HINTS = {
    "str": "text takes fill, alignment (< > ^), width, `.precision` (which cuts it) and `s`",
    "int": "an int takes d b o x X, or e f g % with a precision to show it as a decimal (`.2f`)",
    "float": "a float takes e E f F g G or %, with a precision (`.2f`, `.3g`)",
}


def power_is_whole(exponent: ir.Expr) -> bool:
    """Whether `x ** exponent` of an int is an int: the exponent is an int literal, 0 or more."""
    return isinstance(exponent, ir.Const) and type(exponent.value) is int and exponent.value >= 0


def _json_number_hint(*operands: tuple[ir.Expr, ir.TypeRef]) -> str:
    """For arithmetic or an ordering on a `json` value next to numbers: how to get the
    number out of it (a json value may be anything at run time)."""
    if not any(ty.name == "json" for _, ty in operands):
        return ""
    if not all(ty.name == "json" or ts.is_numeric(ty) for _, ty in operands):
        return ""
    value = next(node for node, ty in operands if ty.name == "json")
    shown = source_text(value)
    return f"a json value may hold anything; take the number out first: `as_number({shown})` gives optional[float]"


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


def _span(line: int, col: int, end_col: int) -> ir.Node:
    """A position on one line, for diagnostics: `ir.Node(...)` without its validation
    (one per parameter, 650 on a 5,000-line spec)."""
    return construct(
        ir.Node,
        {"line": line, "col": col, "end_line": line, "end_col": end_col},
        {"line", "col", "end_line", "end_col"},
    )


def _is_empty_literal(expr: ir.Expr) -> bool:
    return (isinstance(expr, ir.ListLit) and not expr.items) or (isinstance(expr, ir.MapLit) and not expr.entries)
