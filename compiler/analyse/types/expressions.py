"""Type checking of expressions other than calls (names, fields, literals, operators,
comparisons, f-strings, comprehensions), of assignable places, and the checks the other
parts share: assignability, map keys, conditions, loop element types."""

from __future__ import annotations

from compiler import ir, library
from compiler.analyse import onload, shapes
from compiler.analyse.comparisons import CHAINABLE, LITERALS, chain_links, operand_order
from compiler.analyse.context import set_field
from compiler.analyse.types.narrowing import narrowing
from compiler.analyse.types.scopes import BodyScopes, Local
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts
from compiler.library import builtins as bi


class ExpressionChecker(BodyScopes):
    """Checks expressions; calls are `calls.CallChecker`'s, which also dispatches `expr`."""

    def expr(self, expr: ir.Expr, expected: ir.TypeRef | None) -> ir.TypeRef:
        """Check an expression and annotate its type (`expected`: the type wanted there,
        which a literal takes). Dispatched by kind in `calls.CallChecker.expr`, the class
        that has a method for every kind."""
        raise NotImplementedError

    # ------------------------------------------------------------------ targets
    def target(self, expr: ir.Expr, mutate: bool = False) -> ir.TypeRef:
        """Type of an assignable place (`mutate`: changed in place, by a method or `del`)."""
        if isinstance(expr, ir.Name):
            local = self.lookup(expr.id)
            if local is not None:
                if local.kind == "param" and not mutate:
                    what = "load option" if self.callable is self.a.on_load else "parameter"
                    hint = (
                        f"`{expr.id}` here is the {what}; to change the state field of that name "
                        f"write `state.{expr.id} = …`"
                        if expr.id in self.a.state
                        else f"`let new_{expr.id} = ...`"
                    )
                    self.error("E4007", f"{what} `{expr.id}` cannot be reassigned", expr, hint=hint)
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

    def looped_over(self, expr: ir.Expr) -> bool:
        """`ports.Checker.looped_over`: asked by `zip`'s type rule."""
        return expr is self.loop_iter

    def loop_iterable(self, iterable: ir.Expr) -> ir.TypeRef:
        """Check what a loop or comprehension goes over (marked as such while it is
        checked, so that a `zip(...)` there is accepted); its type, not optional."""
        outer, self.loop_iter = self.loop_iter, iterable
        try:
            iter_type = self.expr(iterable, None)
        finally:
            self.loop_iter = outer
        if ts.is_optional(iter_type):
            self.error("E3009", "cannot loop over a value that may be None", iterable)
            iter_type = ts.strip_optional(iter_type)
        return iter_type

    def iteration_types(self, iter_type: ir.TypeRef, count: int, node: ir.Node) -> list[ir.TypeRef]:
        if iter_type.name in ("list", "set") and count != 1:
            self.error("E3006", f"a {iter_type.name} gives one value per step: `for x in xs`", node)
        if iter_type.name == ts.ZIP and count != len(iter_type.args):
            lists = len(iter_type.args)
            names = ", ".join(f"x{i + 1}" for i in range(lists))
            self.error(
                "E3006", f"a zip of {lists} lists gives {lists} values per step: `for {names} in zip(...)`", node
            )
            return [ts.ANY] * count
        if iter_type.name == "map" and count > 2:
            self.error("E3006", "a map gives its key, or its key and value: `for k, v in m`", node)
            return [ts.ANY] * count
        types = ts.element_types(iter_type, count)
        if types is None:
            self.error("E3004", f"cannot loop over {ts.show(iter_type)}", node)
            return [ts.ANY] * count
        return types

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
        if obj_type.name in ("list", "str", *ts.TEMPORAL):  # dates and times are ISO text (§7)
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
        if obj_type.name in ts.TEMPORAL:  # ISO text (§7): a part of it is text, not a date
            return ts.STR
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
            self.push(narrowing(expr.left, op == "and", self))
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
            right = self.expr(expr.right, left if expr.right.kind in LITERALS else None)
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
        self.push(narrowing(expr.cond, True, self))
        then = self.expr(expr.then, expected)
        self.pop()
        self.push(narrowing(expr.cond, False, self))
        other = self.expr(expr.other, expected or then)
        self.pop()
        joined = ts.join(then, other)
        if joined is None:
            self.error("E3001", f"the branches give {ts.show(then)} and {ts.show(other)}", expr)
            return ts.ANY
        return joined

    def expr_comprehension(self, expr: ir.Comprehension, expected: ir.TypeRef | None) -> ir.TypeRef:
        iter_type = self.loop_iterable(expr.iter)
        element_types = self.iteration_types(iter_type, len(expr.targets), expr.iter)
        if self.fx is not None:
            self.fx.loop_start(expr.targets, expr.iter)
        self.push()
        for name, ty in zip(expr.targets, element_types):
            if self.lookup(name) is not None:
                self.error("E2001", f"`{name}` is already declared here", expr)
            elif (reason := bi.reserved_reason(name, "variable")) is not None:
                self.error("E2014", reason, expr, hint="choose another name")
            self.scopes[-1][name] = Local(ty, "loop")
        if expr.cond is not None:
            self.condition(expr.cond)
            self.narrow_here(narrowing(expr.cond, True, self))
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


_CONST_TYPES = {type(None): ts.NONE, bool: ts.BOOL, int: ts.INT, float: ts.FLOAT}
"""The type of a constant by its value's class; a string's depends on what is expected."""


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
