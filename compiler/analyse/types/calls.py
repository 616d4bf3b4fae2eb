"""Type checking of calls: of records, helpers and tools, of built-in functions (by
their registry entries, which call back `positional`, `one_arg` and `key_lambda`) and of
methods; and the dispatch of `expr` by expression kind, here where every kind has its
method."""

from __future__ import annotations

from compiler import ir, library
from compiler.analyse.context import set_field
from compiler.analyse.types.dispatch import methods_by_class
from compiler.analyse.types.expressions import ExpressionChecker
from compiler.analyse.types.scopes import Local
from compiler.diagnostics import did_you_mean
from compiler.ir import typesys as ts


class CallChecker(ExpressionChecker):
    """Checks calls; and, as the class with a method for every kind of expression, the
    dispatch of `expr`."""

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
                f"a family's `{self.family_part}`; only its `solution` calls tools"
                if self.family_part
                else "a verify condition; verify reads state only"
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
                self.scopes[-1][lam.params[0]] = Local(item, "loop")
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


_EXPR_METHODS = methods_by_class(CallChecker, "expr_")
