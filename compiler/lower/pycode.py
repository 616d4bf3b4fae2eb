"""Lowering of typed body-language IR to Python source.

Expressions become Python expressions with minimal parentheses; statements become
lines. Records are TypedDicts (so `t.status` is `t["status"]`), enum members are their
string values, state fields live in the `state` dict, world data in `WORLD`. Every
change to a value that lives in state is preceded by an undo-journal entry, which is
what makes a failed tool call leave state untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from compiler import ir, library
from compiler import typesys as ts
from compiler.irtree import is_state_attr

# Python operator precedence, loosest first.
_PREC = {
    "lambda": 0,
    "ternary": 1,
    "or": 2,
    "and": 3,
    "not": 4,
    "compare": 5,
    "+": 10,
    "-": 10,
    "*": 11,
    "/": 11,
    "//": 11,
    "%": 11,
    "unary": 12,
    "postfix": 15,
    "atom": 16,
}
_COMPARE_OPS = {"==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not"}
_NEGATED = {
    "==": "!=",
    "!=": "==",
    "<": ">=",
    "<=": ">",
    ">": "<=",
    ">=": "<",
    "in": "not in",
    "not in": "in",
    "is": "is not",
    "is not": "is",
}


def py_str(text: str, quote: str = '"') -> str:
    """A Python string literal with the given quote character."""
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    if quote == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    return f"{quote}{body}{quote}"


def py_value(value: object) -> str:
    """Python source for a JSON-like constant (state defaults, world data, samples)."""
    if isinstance(value, str):
        return py_str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_value(k)}: {py_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_value(v) for v in value) + "]"
    return repr(value)


def typed_value(values: dict[str, Any], types: dict[str, ir.TypeRef], records: dict[str, ir.RecordDecl]) -> str:
    """Python source for a mapping of fields, each spelled for its type: the IR keeps a
    set as its JSON form (a sorted list), and Python needs `set()` or `{...}` for it."""
    return "{" + ", ".join(f"{py_value(k)}: {typed_literal(v, types.get(k), records)}" for k, v in values.items()) + "}"


def typed_literal(value: Any, ty: ir.TypeRef | None, records: dict[str, ir.RecordDecl]) -> str:
    """Python source for one constant of a type (see `typed_value`)."""
    if ty is None or value is None or not _holds_set(ty, records, set()):
        return py_value(value)
    base = ts.strip_optional(ty)
    if base.name == "set":
        return "{" + ", ".join(py_value(v) for v in value) + "}" if value else "set()"
    if base.name == "list":
        return "[" + ", ".join(typed_literal(v, base.args[0], records) for v in value) + "]"
    if base.name == "map":
        return (
            "{" + ", ".join(f"{py_value(k)}: {typed_literal(v, base.args[1], records)}" for k, v in value.items()) + "}"
        )
    if base.name in records:
        fields = {f.name: f.type for f in records[base.name].fields}
        return typed_value(value, fields, records)
    return py_value(value)


def _holds_set(ty: ir.TypeRef, records: dict[str, ir.RecordDecl], seen: set[str]) -> bool:
    """`ts.holds_set`, looking inside records too (each record once)."""
    if ty.name == "set":
        return True
    if ty.name in records and ty.name not in seen:
        seen.add(ty.name)
        if any(_holds_set(f.type, records, seen) for f in records[ty.name].fields):
            return True
    return any(_holds_set(arg, records, seen) for arg in ty.args)


@dataclass
class TypeNames:
    """How IR types are spelled in the generated module."""

    enums: dict[str, ir.EnumDecl]
    records: dict[str, ir.RecordDecl]

    def py(self, ty: ir.TypeRef) -> str:
        name = ty.name
        simple = {
            "str": "str",
            "int": "int",
            "float": "float",
            "bool": "bool",
            "datetime": "str",
            "date": "str",
            "time": "str",
            "json": "Any",
            "any": "Any",
            "None": "None",
        }
        if name in simple:
            return simple[name]
        if name == "list":
            return f"list[{self.py(ty.args[0])}]"
        if name == "map":
            return f"dict[{self.py(ty.args[0])}, {self.py(ty.args[1])}]"
        if name == "set":
            return f"set[{self.py(ty.args[0])}]"
        if name == "optional":
            return f"{self.py(ty.args[0])} | None"
        return name


@dataclass
class Scope:
    """What the emitter must know about the callable whose body it writes."""

    kind: str  # "tool", "fn" or "test"
    state_var: str = "state"
    helpers: set[str] = field(default_factory=set)  # runtime helpers used (for the template)
    temp_counter: int = 0
    annotated: set[str] = field(default_factory=set)
    module_prefix: str = ""  # how module-level runtime helpers are reached ("environment." in tests)


class Emitter:
    def __init__(self, env: ir.Environment, scope: Scope) -> None:
        self.env = env
        self.scope = scope
        self.enums = {e.name: e for e in env.enums}
        self.records = {r.name: r for r in env.records}
        self.types = TypeNames(self.enums, self.records)
        self.record_defaults = _record_defaults(env)
        self.quote = '"'

    # ------------------------------------------------------------------ expressions
    def expr(self, e: ir.Expr, context: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < context else text

    def _expr(self, e: ir.Expr) -> tuple[str, int]:
        method = getattr(self, f"_e_{e.kind}")
        result: tuple[str, int] = method(e)
        return result

    def _e_const(self, e: ir.Const) -> tuple[str, int]:
        value = e.value
        if isinstance(value, str):
            return py_str(value, self.quote), _PREC["atom"]
        if (
            isinstance(value, float)
            and value < 0
            or isinstance(value, int)
            and not isinstance(value, bool)
            and value < 0
        ):
            return repr(value), _PREC["unary"]
        return repr(value), _PREC["atom"]

    def _e_name(self, e: ir.Name) -> tuple[str, int]:
        if e.ref == "state":
            return f"{self.scope.state_var}[{py_str(e.id, self.quote)}]", _PREC["postfix"]
        if e.ref == "world":
            return f"WORLD[{py_str(e.id, self.quote)}]", _PREC["postfix"]
        return e.id, _PREC["atom"]

    def _e_fstring(self, e: ir.FString) -> tuple[str, int]:
        if self.quote == "'":
            return self._concat(e), _PREC["+"]
        pieces: list[str] = []
        self.quote = "'"
        try:
            for part in e.parts:
                if isinstance(part, str):
                    pieces.append(py_str(part)[1:-1].replace("{", "{{").replace("}", "}}"))
                    continue
                inner = self.expr(part, _PREC["ternary"] + 1)
                if "\\" in inner or "'" in inner and '"' in inner:
                    return self._concat(e), _PREC["+"]
                pieces.append("{" + inner + "}")
        finally:
            self.quote = '"'
        if not any(not isinstance(p, str) for p in e.parts):
            return py_str("".join(p for p in e.parts if isinstance(p, str))), _PREC["atom"]
        return 'f"' + "".join(pieces) + '"', _PREC["atom"]

    def _concat(self, e: ir.FString) -> str:
        pieces = []
        for part in e.parts:
            if isinstance(part, str):
                pieces.append(py_str(part, self.quote))
            else:
                inner = self.expr(part, _PREC["postfix"])
                pieces.append(inner if part.ty and part.ty.name == "str" else f"str({self.expr(part)})")
        return " + ".join(pieces) or py_str("", self.quote)

    def _e_list(self, e: ir.ListLit) -> tuple[str, int]:
        if e.ty is not None and ts.strip_optional(e.ty).name == "set":
            if not e.items:
                return "set()", _PREC["postfix"]
            items = list(dict.fromkeys(self.expr(i) for i in e.items))  # `[3, 1, 3]` is {3, 1}
            return "{" + ", ".join(items) + "}", _PREC["atom"]
        return "[" + ", ".join(self.expr(i) for i in e.items) + "]", _PREC["atom"]

    def _e_map(self, e: ir.MapLit) -> tuple[str, int]:
        if e.ty is not None and ts.strip_optional(e.ty).name in self.records:
            record = self.records[ts.strip_optional(e.ty).name]
            given: dict[object, ir.Expr] = {
                entry.key.value: entry.value for entry in e.entries if isinstance(entry.key, ir.Const)
            }
            return self._record_literal(record, given), _PREC["atom"]
        return "{" + ", ".join(f"{self.expr(x.key)}: {self.expr(x.value)}" for x in e.entries) + "}", _PREC["atom"]

    def _record_literal(self, record: ir.RecordDecl, given: dict[object, ir.Expr]) -> str:
        """All fields in declaration order, defaults filled, so mypy sees a full TypedDict."""
        items = []
        for f in record.fields:
            if f.name in given:
                value = self.expr(given[f.name])
            elif f.name in self.record_defaults.get(record.name, {}):
                value = typed_literal(self.record_defaults[record.name][f.name], f.type, self.records)
            else:
                value = "None"
            items.append(f"{py_str(f.name, self.quote)}: {value}")
        return "{" + ", ".join(items) + "}"

    def _e_attr(self, e: ir.Attr) -> tuple[str, int]:
        obj = e.obj
        if isinstance(obj, ir.Name) and obj.ref == "enum":
            return py_str(e.name, self.quote), _PREC["atom"]
        if isinstance(obj, ir.Name) and obj.ref == "state" and obj.id == "state":
            return f"{self.scope.state_var}[{py_str(e.name, self.quote)}]", _PREC["postfix"]
        return f"{self.expr(obj, _PREC['postfix'])}[{py_str(e.name, self.quote)}]", _PREC["postfix"]

    def _e_index(self, e: ir.Index) -> tuple[str, int]:
        index = self.key(e.index, e.obj.ty, self.expr(e.index))
        return f"{self.expr(e.obj, _PREC['postfix'])}[{index}]", _PREC["postfix"]

    def key(self, key: ir.Expr, container: ir.TypeRef | None, text: str) -> str:
        """A key of a map[json, V] that is a json value is checked to be a str or an int
        when the call runs (analysis cannot know; any other key type is known)."""
        base = ts.strip_optional(container) if container is not None else None
        if base is not None and base.name == "map" and base.args[0].name == "json" and key.ty is not None:
            if ts.strip_optional(key.ty).name in ("json", "any"):
                self.scope.helpers.add("json_key")
                return f"{self.scope.module_prefix}_json_key({text})"
        return text

    def _e_slice(self, e: ir.Slice) -> tuple[str, int]:
        lower = self.expr(e.lower) if e.lower is not None else ""
        upper = self.expr(e.upper) if e.upper is not None else ""
        return f"{self.expr(e.obj, _PREC['postfix'])}[{lower}:{upper}]", _PREC["postfix"]

    def _e_unary(self, e: ir.Unary) -> tuple[str, int]:
        if e.op == "not":
            return self.negate(e.operand), _PREC["not"]
        return f"-{self.expr(e.operand, _PREC['unary'])}", _PREC["unary"]

    def negate(self, e: ir.Expr) -> str:
        """`not e`, written the way a person would (`x is None`, `k not in m`)."""
        if isinstance(e, ir.Binary) and e.op in _NEGATED:
            flipped = ir.Binary(op=_NEGATED[e.op], left=e.left, right=e.right, ty=e.ty)
            return self._expr(flipped)[0]
        if isinstance(e, ir.Unary) and e.op == "not":
            return self.expr(e.operand, _PREC["not"])
        return f"not {self.expr(e, _PREC['not'])}"

    def _e_binary(self, e: ir.Binary) -> tuple[str, int]:
        op = e.op
        if op in ("and", "or"):
            prec = _PREC[op]
            return f"{self.expr(e.left, prec)} {op} {self.expr(e.right, prec + 1)}", prec
        if op in _COMPARE_OPS:
            if isinstance(e.right, ir.Const) and e.right.value is None and op in ("==", "!="):
                op = "is" if op == "==" else "is not"
            if isinstance(e.right, ir.Const) and isinstance(e.right.value, bool) and op in ("==", "!="):
                op = "is" if op == "==" else "is not"  # `x == True` is how ruff's E712 asks it not be said
            prec = _PREC["compare"]
            left = self.expr(e.left, prec + 1)
            right = self.expr(e.right, prec + 1)
            if op in ("in", "not in"):
                left = self.key(e.left, e.right.ty, left)
                view = e.right
                if isinstance(view, ir.Call) and _is_view_call(view) and getattr(view.func, "id", "") != "unique":
                    right = self.iter_builtin(view)  # `x in m.values()`: no list copy to look in
            text = f"{left} {op} {right}"
            if _is_dynamic(e.left) or _is_dynamic(e.right):
                return f"bool({text})", _PREC["postfix"]  # comparing Any gives Any to mypy
            return text, prec
        prec = _PREC[op]
        return f"{self.expr(e.left, prec)} {op} {self.expr(e.right, prec + 1)}", prec

    def _e_ternary(self, e: ir.Ternary) -> tuple[str, int]:
        prec = _PREC["ternary"]
        return f"{self.expr(e.then, prec + 1)} if {self.expr(e.cond, prec + 1)} else {self.expr(e.other, prec)}", prec

    def _e_comprehension(self, e: ir.Comprehension) -> tuple[str, int]:
        if e.value is None and e.cond is None and isinstance(e.elt, ir.Name) and e.targets == [e.elt.id]:
            return f"list({self.iterable(e.iter, 1)})", _PREC["postfix"]  # [x for x in xs]
        head = self.expr(e.elt) if e.value is None else f"{self.expr(e.elt)}: {self.expr(e.value)}"
        loop = f"for {', '.join(e.targets)} in {self.iterable(e.iter, len(e.targets))}"
        cond = f" if {self.expr(e.cond, _PREC['or'])}" if e.cond is not None else ""
        body = f"{head} {loop}{cond}"
        return ("[" + body + "]") if e.value is None else ("{" + body + "}"), _PREC["atom"]

    def iterable(self, e: ir.Expr, targets: int) -> str:
        base = ts.strip_optional(e.ty) if e.ty else ts.ANY
        text = self.expr(e, _PREC["or"])
        if isinstance(e, (ir.ListLit, ir.MapLit)) and self.mentions_enum(base):
            # A literal gives mypy no context: say that its strings are enum members.
            return f"cast({py_str(self.types.py(base), self.quote)}, {text})"
        if base.name == "map" and targets == 2:
            return f"{self.expr(e, _PREC['postfix'])}.items()"
        if base.name == "set":  # a fixed order, so that loops replay the same way
            return f"sorted({text})"
        if (
            isinstance(e, ir.Call)
            and isinstance(e.func, ir.Name)
            and e.func.id in ("range", "reversed", "keys", "values")
        ):
            return self.iter_builtin(e)
        return text

    def mentions_enum(self, ty: ir.TypeRef) -> bool:
        return ty.name in self.enums or any(self.mentions_enum(a) for a in ty.args)

    def iter_builtin(self, e: ir.Call) -> str:
        assert isinstance(e.func, ir.Name)
        args = ", ".join(self.expr(a) for a in e.args)
        if e.func.id == "keys":
            return self.expr(e.args[0], _PREC["or"])
        if e.func.id == "values":
            return f"{self.expr(e.args[0], _PREC['postfix'])}.values()"
        if e.func.id == "unique":
            return f"dict.fromkeys({args})"
        return f"{e.func.id}({args})"

    def _e_lambda(self, e: ir.Lambda) -> tuple[str, int]:
        return f"lambda {', '.join(e.params)}: {self.expr(e.body)}", _PREC["lambda"]

    # ------------------------------------------------------------------ calls
    def _e_call(self, e: ir.Call) -> tuple[str, int]:
        func = e.func
        if isinstance(func, ir.Attr):
            return self._method(e, func), _PREC["postfix"]
        assert isinstance(func, ir.Name)
        if func.ref == "record":
            record = self.records[func.id]
            return self._record_literal(record, {kw.name: kw.value for kw in e.kwargs}), _PREC["atom"]
        if func.ref == "fn":
            owner = "env" if self.scope.kind == "test" else "self"
            return f"{owner}._{func.id}({self.args(e)})", _PREC["postfix"]
        if func.ref == "tool":
            return self._tool_call(e), _PREC["postfix"]
        return self._builtin(e, func.id)

    def args(self, e: ir.Call) -> str:
        parts = [self.expr(a) for a in e.args] + [f"{kw.name}={self.expr(kw.value)}" for kw in e.kwargs]
        return ", ".join(parts)

    def _tool_call(self, e: ir.Call) -> str:
        assert isinstance(e.func, ir.Name)
        args = "{" + ", ".join(f"{py_str(kw.name, self.quote)}: {self.expr(kw.value)}" for kw in e.kwargs) + "}"
        return f"env.invoke({py_str(e.func.id, self.quote)}, {args})"

    def _method(self, e: ir.Call, func: ir.Attr) -> str:
        obj_type = ts.strip_optional(func.ty or func.obj.ty or ts.ANY)
        obj = self.expr(func.obj, _PREC["postfix"])
        args = [self.expr(a) for a in e.args]
        receiver = "str" if obj_type.name in ts.TEMPORAL else obj_type.name
        entry = library.method(receiver, func.name)
        if entry is not None and entry.key_argument and args:
            args[0] = self.key(e.args[0], obj_type, args[0])
        if entry is None or entry.lower is None:
            return f"{obj}.{func.name}({', '.join(args)})"
        self.scope.helpers.update(entry.runtime)
        return entry.lower(self, e, func, obj, args)

    def copy_of(self, e: ir.Expr, ty: ir.TypeRef) -> str:
        self.scope.helpers.add("copy")
        return copy_expr(self.expr(e, _PREC["postfix"]), ty, self.records)

    def _builtin(self, e: ir.Call, name: str) -> tuple[str, int]:
        entry = library.FUNCTIONS[name]
        self.scope.helpers.update(entry.runtime, entry.methods)
        text, level = entry.lower(self, e)
        return text, _PREC[level]

    def operand(self, e: ir.Expr, level: str, tighter: bool = False) -> str:
        """`e` as an operand at a precedence level (`tighter`: the right side of a
        left-associative operator), parenthesised when it binds more loosely."""
        return self.expr(e, _PREC[level] + (1 if tighter else 0))

    def string(self, text: str) -> str:
        """A string literal in the quotes of the code being written."""
        return py_str(text, self.quote)

    def is_view_call(self, e: ir.Expr) -> bool:
        return _is_view_call(e)

    # ------------------------------------------------------------------ statements
    def block(self, stmts: list[ir.Stmt], indent: int) -> list[str]:
        lines: list[str] = []
        for stmt in stmts:
            lines.extend(self.stmt(stmt, indent))
        return lines or [_pad(indent) + "pass"]

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
        for node in _calls_in(e):
            if not node.mutates_state or not isinstance(node.func, ir.Attr):
                continue
            obj_type = ts.strip_optional(node.func.ty or ts.ANY)
            obj = self.expr(node.func.obj)
            name = node.func.name
            if obj_type.name == "list":
                op = "save_length" if name in ("append", "extend") else "save_list"
                lines.append(f"{pad}self._undo.{op}({obj})")
            elif obj_type.name == "set":
                lines.append(f"{pad}self._undo.save_member({obj}, {self.expr(node.args[0])})")
            else:  # map pop or clear: the whole map, so a rollback keeps the key order
                lines.append(f"{pad}self._undo.save_map({obj})")
        return lines

    def _s_let(self, s: ir.Let, pad: str, indent: int) -> list[str]:
        ty = s.value.ty if s.type is None else None
        annotation = ""
        declared = ts.t(s.type.name, *s.type.args) if s.type is not None else ty
        if (
            declared is not None
            and s.name not in self.scope.annotated
            and (self.mentions_enum(declared) or _needs_annotation(s.value, declared, self.records))
        ):
            annotation = f": {self.types.py(declared)}"
        self.scope.annotated.add(s.name)
        return [*self._journal_calls(s.value, pad), f"{pad}{s.name}{annotation} = {self.expr(s.value)}"]

    def _s_assign(self, s: ir.Assign, pad: str, indent: int) -> list[str]:
        lines = self._journal_calls(s.value, pad)
        target = s.target
        if s.touches_state:
            if isinstance(target, (ir.Index, ir.Attr)) and not is_state_attr(target):
                container = self.expr(target.obj, _PREC["postfix"])
                key = (
                    self.key(target.index, target.obj.ty, self.expr(target.index))
                    if isinstance(target, ir.Index)
                    else py_str(target.name)
                )
                if isinstance(target, ir.Index) and _has_call(target.index):
                    temp = self._temp()
                    lines.append(f"{pad}{temp} = {key}")
                    key = temp
                    lines.append(f"{pad}self._undo.save({container}, {key})")
                    lines.append(f"{pad}{container}[{key}] {s.op} {self.expr(s.value)}")
                    return lines
                lines.append(f"{pad}self._undo.save({container}, {key})")
            else:
                field_name = (
                    target.id if isinstance(target, ir.Name) else target.name if isinstance(target, ir.Attr) else ""
                )
                lines.append(f"{pad}self._undo.save({self.scope.state_var}, {py_str(field_name)})")
        lines.append(f"{pad}{self.expr(target)} {s.op} {self.expr(s.value)}")
        return lines

    def _temp(self) -> str:
        self.scope.temp_counter += 1
        return f"key_{self.scope.temp_counter}"

    def _s_return(self, s: ir.Return, pad: str, indent: int) -> list[str]:
        if s.value is None:
            return [f"{pad}return None"]
        return [*self._journal_calls(s.value, pad), f"{pad}return {self.expr(s.value)}"]

    def _error(self, call: ir.ErrorCall) -> str:
        parts = [py_str(call.kind), self.expr(call.message) if call.message is not None else py_str("")]
        parts += [f"{kw.name}={self.expr(kw.value)}" for kw in call.fields]
        return f"DomainError({', '.join(parts)})"

    def _s_require(self, s: ir.Require, pad: str, indent: int) -> list[str]:
        return [f"{pad}if {self.negate(s.cond)}:", f"{pad}    raise {self._error(s.error)}"]

    def _s_fail(self, s: ir.Fail, pad: str, indent: int) -> list[str]:
        return [f"{pad}raise {self._error(s.error)}"]

    def _s_delete(self, s: ir.Delete, pad: str, indent: int) -> list[str]:
        assert isinstance(s.target, ir.Index)
        lines = []
        container = self.expr(s.target.obj, _PREC["postfix"])
        if s.touches_state:
            # The whole map, not the one key: put back by a rollback, a key would move to the
            # end, and key order shows in results (keys(m), loops) and in exported pairs.
            lines.append(f"{pad}self._undo.save_map({container})")
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
        lines = []
        for index, branch in enumerate(s.branches):
            keyword = "if" if index == 0 else "elif"
            lines.append(f"{pad}{keyword} {self.expr(branch.cond)}:")
            lines.extend(self.block(branch.body, indent + 1))
        if s.orelse:
            lines.append(f"{pad}else:")
            lines.extend(self.block(s.orelse, indent + 1))
        return lines

    def _s_for(self, s: ir.For, pad: str, indent: int) -> list[str]:
        used = {n.id for n in _names_in(s.body)}
        # A counting loop's variable goes unused: `_i` says so (and satisfies ruff's B007).
        targets = [name if name in used else f"_{name}" for name in s.targets]
        for name in targets:
            self.scope.annotated.add(name)
        head = f"{pad}for {', '.join(targets)} in {self.iterable(s.iter, len(s.targets))}:"
        return [head, *self.block(s.body, indent + 1)]


def _pad(indent: int) -> str:
    return "    " * indent


def _is_dynamic(e: ir.Expr) -> bool:
    return e.ty is not None and e.ty.name in ("json", "any")


def _names_in(stmts: list[ir.Stmt]) -> Iterator[ir.Name]:
    stack: list[object] = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, ir.Node):
            if isinstance(node, ir.Name):
                yield node
            stack.extend(getattr(node, name) for name in type(node).model_fields if name != "ty")


def _is_view_call(e: ir.Expr) -> bool:
    return (
        isinstance(e, ir.Call)
        and isinstance(e.func, ir.Name)
        and e.func.ref == "builtin"
        and e.func.id in ("keys", "values", "unique")
        and len(e.args) == 1
    )


def _has_call(e: ir.Expr) -> bool:
    return any(True for _ in _calls_in(e))


def _calls_in(e: ir.Expr) -> Iterator[ir.Call]:
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


def _needs_annotation(value: ir.Expr, ty: ir.TypeRef, records: dict[str, ir.RecordDecl]) -> bool:
    """Annotate where mypy could not infer the spec's type from the value alone."""
    if isinstance(value, (ir.ListLit, ir.MapLit, ir.Comprehension)):
        return True
    if isinstance(value, ir.Call) and isinstance(value.func, ir.Name) and value.func.ref == "record":
        return True
    if isinstance(value, ir.Const) and value.value is None:
        return True
    return ts.is_optional(ty) and not isinstance(value, (ir.Name, ir.Attr, ir.Index, ir.Call))


def _record_defaults(env: ir.Environment) -> dict[str, dict[str, object]]:
    defaults: dict[str, dict[str, object]] = {}
    for record in env.records:
        values: dict[str, object] = {}
        for f in record.fields:
            if f.default is not None:
                values[f.name] = _const_json(f.default)
        defaults[record.name] = values
    return defaults


def _const_json(e: ir.Expr) -> object:
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Unary) and isinstance(e.operand, ir.Const) and isinstance(e.operand.value, (int, float)):
        return -e.operand.value
    if isinstance(e, ir.Attr):
        return e.name
    if isinstance(e, ir.ListLit):
        return [_const_json(i) for i in e.items]
    if isinstance(e, ir.MapLit):
        return {_const_json(x.key): _const_json(x.value) for x in e.entries}
    raise AssertionError("record defaults are literals (the analyser checks this)")


def copy_expr(source: str, ty: ir.TypeRef, records: dict[str, ir.RecordDecl]) -> str:
    """An expression copying `source` of type `ty` as deep as its containers go."""
    base = ts.strip_optional(ty)
    if not ts.is_container(base, records):
        return source
    inner = _copy_inner(source, base, records, 0)
    if base is not ty and ts.is_optional(ty):
        return f"None if {source} is None else {inner}"
    return inner


def _copy_inner(source: str, ty: ir.TypeRef, records: dict[str, ir.RecordDecl], depth: int) -> str:
    if ty.name == "optional":
        return copy_expr(source, ty, records)
    if ty.name in records:
        return f"_copy_{ty.name}({source})"
    if ty.name in ("json", "any"):
        return f"copy_json({source})"
    var = "abcdefgh"[depth % 8] if depth < 8 else f"v{depth}"
    if ty.name == "set":
        return f"set({source})"
    if ty.name == "list":
        item = ty.args[0]
        if not ts.is_container(item, records):
            return f"list({source})"
        return f"[{copy_expr(var, item, records)} for {var} in {source}]"
    if ty.name == "map":
        value = ty.args[1]
        if not ts.is_container(value, records):
            return f"dict({source})"
        key = f"k{depth}"
        return f"{{{key}: {copy_expr(var, value, records)} for {key}, {var} in {source}.items()}}"
    return source


def json_expr(source: str, ty: ir.TypeRef, records: dict[str, ir.RecordDecl], depth: int = 0) -> str:
    """An expression turning `source` of type `ty` into a detached JSON value, written for
    that type (a flat record is one `dict(...)`), so results leave no aliases behind."""
    base = ts.strip_optional(ty)
    if not ts.is_container(base, records):
        return source
    var = f"v{depth}"
    if base.name in ("json", "any"):
        inner = f"to_json({source})"
    elif base.name in records:
        record = records[base.name]
        if flat_record(record, records):
            inner = f"dict({source})"
        else:
            items = ", ".join(
                f"{py_str(f.name)}: {json_expr(f'{source}[{py_str(f.name)}]', f.type, records, depth + 1)}"
                for f in record.fields
            )
            inner = "{" + items + "}"
    elif base.name == "set":
        inner = f"sorted({source})"
    elif base.name == "map" and base.args[0].name == "json":
        # JSON object keys are strings, and this map keeps "1" and 1 apart: [key, value]
        # pairs, integer keys first, each kind in order, so equal maps give equal JSON.
        inner = (
            f"[[k{depth}, {json_expr(var, base.args[1], records, depth + 1)}]"
            f" for k{depth}, {var} in sorted({source}.items(), key=_pair_order)]"
        )
    elif base.name == "list":
        item = base.args[0]
        inner = (
            f"list({source})"
            if not ts.is_container(item, records)
            else f"[{json_expr(var, item, records, depth + 1)} for {var} in {source}]"
        )
    else:
        key, value = base.args
        key_text = f"str(k{depth})" if key.name == "int" else f"k{depth}"
        if key.name != "int" and not ts.is_container(value, records):
            inner = f"dict({source})"
        else:
            inner = (
                f"{{{key_text}: {json_expr(var, value, records, depth + 1)} for k{depth}, {var} in {source}.items()}}"
            )
    if ts.is_optional(ty) and base is not ty:
        return f"None if {source} is None else {inner}"
    return inner


def flat_record(record: ir.RecordDecl, records: dict[str, ir.RecordDecl]) -> bool:
    return not any(ts.is_container(f.type, records) for f in record.fields)


__all__ = [
    "Emitter",
    "Scope",
    "TypeNames",
    "copy_expr",
    "flat_record",
    "py_str",
    "py_value",
    "typed_literal",
    "typed_value",
]
