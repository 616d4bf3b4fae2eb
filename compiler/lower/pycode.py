"""Lowering of typed body-language IR to Python source.

Expressions become Python expressions with minimal parentheses; statements become
lines. Records are TypedDicts (so `t.status` is `t["status"]`), enum members are their
string values, state fields live in the `state` dict, world data in `WORLD`. Every
change to a value that lives in state is preceded by an undo-journal entry, which is
what makes a failed tool call leave state untouched.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from compiler import ir, library
from compiler import typesys as ts
from compiler.irtree import is_state_attr, walk

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
    """A Python string literal with the given quote character. Characters that do not
    show (controls, zero-width and direction marks, odd spaces) are written as escapes,
    so the source says what the string holds (ruff's PLE2502, PLE2510-PLE2515)."""
    body = escape_invisible(json.dumps(text, ensure_ascii=False)[1:-1])
    if quote == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    return f"{quote}{body}{quote}"


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp", "Zs"})
"""Unicode categories written as escapes. Unassigned code points (Cn) are left as they
are: which ones are unassigned depends on the Python that runs envc, and the output may not."""


def escape_invisible(text: str) -> str:
    """`text` with every character that does not show, except space, tab and line break,
    as a Python escape (`\\u200b`); backslashes must already be escaped."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(ch) if ch not in " \t\n" and unicodedata.category(ch) in _INVISIBLE else ch for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


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
    names: set[str] = field(default_factory=set)  # every name the callable uses, so new ones are fresh
    bare_return: bool = False  # every return gives None: `return`, not `return None` (ruff's RET501)


class Emitter:
    def __init__(self, env: ir.Environment, scope: Scope) -> None:
        self.env = env
        self.scope = scope
        self.enums = {e.name: e for e in env.enums}
        self.records = {r.name: r for r in env.records}
        self.types = TypeNames(self.enums, self.records)
        self.record_defaults = _record_defaults(env)
        self.quote = '"'
        # While a loop over a map is lowered: (map, key name, value name) for reading
        # `m[k]` as the loop's value (ruff's PLR1733, PLC0206).
        self.loop_values: list[tuple[ir.Expr, str, str]] = []

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
                conversion = ""
                if _is_builtin_call(part, "str") and len(part.args) == 1 and not part.kwargs:
                    part, conversion = part.args[0], "!s"  # `{str(x)}` says `{x!s}` (ruff's RUF010)
                inner = self.expr(part, _PREC["ternary"] + 1)
                if "\\" in inner or "'" in inner and '"' in inner:
                    return self._concat(e), _PREC["+"]
                pieces.append("{" + inner + conversion + "}")
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
        for source, key, value in reversed(self.loop_values):
            if isinstance(e.index, ir.Name) and e.index.id == key and _same(e.obj, source):
                return value, _PREC["atom"]  # `m[k]` in `for k, v in m.items()` is `v`
        obj = self.expr(e.obj, _PREC["postfix"])
        position = _const_int(e.index)
        if position in (0, -1):
            shortcut = _first_or_last(obj, position, e.obj)
            if shortcut is not None:
                return shortcut, _PREC["postfix"]
        index = self.key(e.index, e.obj.ty, self.expr(e.index))
        return f"{obj}[{index}]", _PREC["postfix"]

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
            return self._negated(e.operand)
        return f"-{self.expr(e.operand, _PREC['unary'])}", _PREC["unary"]

    def negate(self, e: ir.Expr, context: int = 0) -> str:
        """`not e`, written the way a person would (`x is None`, `k not in m`)."""
        text, prec = self._negated(e)
        return f"({text})" if prec < context else text

    def _negated(self, e: ir.Expr) -> tuple[str, int]:
        if isinstance(e, ir.Binary) and e.op in _NEGATED:
            flipped = ir.Binary(op=_NEGATED[e.op], left=e.left, right=e.right, ty=e.ty)
            return self._expr(flipped)
        if isinstance(e, ir.Unary) and e.op == "not":
            text, prec = self._expr(e.operand)
            return (f"({text})", _PREC["atom"]) if prec < _PREC["not"] else (text, prec)
        return f"not {self.expr(e, _PREC['not'])}", _PREC["not"]

    def _e_binary(self, e: ir.Binary) -> tuple[str, int]:
        op = e.op
        if op in ("and", "or"):
            return self._bool_chain(e, op), _PREC[op]
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

    def _bool_chain(self, e: ir.Binary, op: str) -> str:
        """`a and b and c` (the left-nested chain as one), written as ruff's defaults ask:
        `a < b and b < c` is `a < b < c` (PLR1716), `x.startswith(a) or x.startswith(b)`
        is `x.startswith((a, b))` (PIE810)."""
        operands: list[ir.Expr] = []
        node: ir.Expr = e
        while isinstance(node, ir.Binary) and node.op == op:
            operands.append(node.right)
            node = node.left
        operands.append(node)
        operands.reverse()
        prec = _PREC[op]
        parts = [self.expr(operands[0], prec)] + [self.expr(x, prec + 1) for x in operands[1:]]
        if op == "and":
            _chain_comparisons(self, operands, parts)
        else:
            _merge_affix_tests(self, operands, parts)
        return f" {op} ".join(part for part in parts if part)

    def _e_ternary(self, e: ir.Ternary) -> tuple[str, int]:
        prec = _PREC["ternary"]
        simpler = self._simpler_ternary(e)
        if simpler is not None:
            return simpler
        return f"{self.expr(e.then, prec + 1)} if {self.expr(e.cond, prec + 1)} else {self.expr(e.other, prec)}", prec

    def _simpler_ternary(self, e: ir.Ternary) -> tuple[str, int] | None:
        """`True if c else False` is `c` (SIM210/211), `a if a > b else b` a `max` (FURB136),
        `m[k] if k in m else d` is `m.get(k, d)` (SIM401)."""
        then, other = _const_bool(e.then), _const_bool(e.other)
        if then is True and other is False:
            return self._expr(e.cond)
        if then is False and other is True:
            return self._negated(e.cond)
        cond = e.cond
        if (
            isinstance(cond, ir.Binary)
            and cond.op in _ORDERING
            and not _is_dynamic(cond.left)
            and not _is_dynamic(cond.right)
        ):
            picked = _min_max(cond, e.then, e.other)
            if picked is not None:
                name, first, second = picked
                return f"{name}({self.expr(first)}, {self.expr(second)})", _PREC["postfix"]
        got = self._dict_get(cond, e.then, e.other)
        return (got, _PREC["postfix"]) if got is not None else None

    def _dict_get(self, cond: ir.Expr, then: ir.Expr, other: ir.Expr) -> str | None:
        """`m.get(k, d)` for `m[k] if k in m else d` (and `d if k not in m else m[k]`), when
        `m` is a map and `d` can be evaluated early (get() takes it either way); else None."""
        if not isinstance(cond, ir.Binary) or cond.op not in ("in", "not in"):
            return None
        found, default = (then, other) if cond.op == "in" else (other, then)
        mapping = cond.right
        if (
            mapping.ty is None
            or ts.strip_optional(mapping.ty).name != "map"
            or not isinstance(found, ir.Index)
            or not _same(found.obj, mapping)
            or not _same(found.index, cond.left)
            or not _total(default)
            or not _pure(mapping)
        ):
            return None
        key = self.key(cond.left, mapping.ty, self.expr(cond.left))
        return f"{self.expr(mapping, _PREC['postfix'])}.get({key}, {self.expr(default)})"

    def _e_comprehension(self, e: ir.Comprehension) -> tuple[str, int]:
        if e.value is None and e.cond is None and isinstance(e.elt, ir.Name) and e.targets == [e.elt.id]:
            return f"list({self.iterable(e.iter, 1)})", _PREC["postfix"]  # [x for x in xs]
        head = self.expr(e.elt) if e.value is None else f"{self.expr(e.elt)}: {self.expr(e.value)}"
        loop = f"for {', '.join(e.targets)} in {self.iterable(e.iter, len(e.targets))}"
        cond = f" if {self.expr(e.cond, _PREC['or'])}" if e.cond is not None else ""
        body = f"{head} {loop}{cond}"
        return ("[" + body + "]") if e.value is None else ("{" + body + "}"), _PREC["atom"]

    def _simpler_call(self, e: ir.Call) -> tuple[str, int] | None:
        """Calls ruff's defaults would have said otherwise: `range(0, n)` is `range(n)`
        (PIE808), `"a b".split()` is `["a", "b"]` (SIM905), `", ".join([a, b])` is
        `f"{a}, {b}"` (FLY002)."""
        func = e.func
        if _is_builtin_call(e, "range") and len(e.args) == 2 and _const_int(e.args[0]) == 0 and not e.kwargs:
            return self._expr(e.model_copy(update={"args": e.args[1:]}))
        if not isinstance(func, ir.Attr) or not isinstance(func.obj, ir.Const) or not isinstance(func.obj.value, str):
            return None
        text = func.obj.value
        if func.name == "split" and not e.kwargs and all(isinstance(a, ir.Const) for a in e.args):
            args = [a.value for a in e.args if isinstance(a, ir.Const)]
            words = text.split(*args) if len(args) <= 1 and all(isinstance(a, str) and a for a in args) else []  # type: ignore[arg-type]
            if words:  # (an empty list would need a type for mypy)
                return "[" + ", ".join(py_str(word, self.quote) for word in words) + "]", _PREC["atom"]
        if func.name == "join" and len(e.args) == 1 and not e.kwargs and isinstance(e.args[0], ir.ListLit):
            parts: list[str | ir.Expr] = []
            for position, item in enumerate(e.args[0].items):
                if position and text:
                    parts.append(text)
                parts.append(item.value if isinstance(item, ir.Const) and isinstance(item.value, str) else item)
            if not parts:
                return py_str("", self.quote), _PREC["atom"]
            return self._expr(ir.FString(parts=parts, ty=ts.STR))
        return None

    def iterable(self, e: ir.Expr, targets: int) -> str:
        base = ts.strip_optional(e.ty) if e.ty else ts.ANY
        if isinstance(e, ir.Call) and _is_builtin_call(e, "range") and len(e.args) == 2 and _const_int(e.args[0]) == 0:
            e = e.model_copy(update={"args": e.args[1:]})  # `range(0, n)` is `range(n)` (ruff's PIE808)
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
        simpler = self._simpler_call(e)
        if simpler is not None:
            return simpler
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
        # A `pass` among other statements says nothing (ruff's PIE790).
        stmts = [s for s in stmts if not isinstance(s, ir.Pass)] or stmts[:1]
        lines: list[str] = []
        index = 0
        while index < len(stmts):
            stmt = stmts[index]
            pad = _pad(indent)
            needless = _needless_bool(stmt, stmts[index + 1] if index + 1 < len(stmts) else None)
            if needless is not None:
                # `if c: return True` then `return False` is `return c` (ruff's SIM103).
                cond, positive, consumed = needless
                text = self.expr(cond) if positive else self.negate(cond)
                lines += [*self._journal_calls(cond, pad), f"{pad}return {text}"]
                index += consumed
                continue
            if isinstance(stmt, ir.For):
                lines.extend(self._s_for(stmt, pad, indent, _loop_counter(stmts, index)))
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
        if s.value is None or (self.scope.bare_return and isinstance(s.value, ir.Const) and s.value.value is None):
            return [f"{pad}return" if self.scope.bare_return else f"{pad}return None"]
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
            lines.append(f"{pad}{keyword} {self.expr(_chain('or', conds))}:")
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
        error: ir.ErrorCall | None = None
        while len(body) == 1:
            inner = body[0]
            if isinstance(inner, ir.If) and len(inner.branches) == 1 and not inner.orelse:
                conds.append(inner.branches[0].cond)
                body = inner.branches[0].body
            elif isinstance(inner, ir.Require):
                conds.append(ir.Unary(op="not", operand=inner.cond, ty=ts.BOOL))
                error = inner.error
                break
            else:
                break
        if len(conds) == 1:
            return None
        head = f"{pad}if {self.expr(_chain('and', conds))}:"
        if error is not None:
            return [head, f"{pad}    raise {self._error(error)}"]
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
                and _same(first.target, second.target)
            ):
                got = self._dict_get(cond, first.value, second.value)
                if got is not None:
                    return [f"{pad}{self.expr(first.target)} = {got}"]
            return None
        if len(body) != 1:
            return None
        stmt = body[0]
        postfix = _PREC["postfix"]
        if isinstance(stmt, ir.Assign) and stmt.op == "=" and not stmt.touches_state:
            if isinstance(cond, ir.Binary) and _is_ordering(cond):
                picked = _min_max(cond, stmt.value, stmt.target)
                if picked is not None:
                    name, a, b = picked
                    return [f"{pad}{self.expr(stmt.target)} = {name}({self.expr(a)}, {self.expr(b)})"]
            value = stmt.value
            if (
                isinstance(cond, ir.Call)
                and isinstance(cond.func, ir.Attr)
                and cond.func.name == "startswith"
                and len(cond.args) == 1
                and _same(cond.func.obj, stmt.target)
                and _pure(stmt.target)
                and _pure(cond.args[0])
                and isinstance(value, ir.Slice)
                and _same(value.obj, stmt.target)
                and value.upper is None
                and _is_builtin_call(value.lower, "len")
                and isinstance(value.lower, ir.Call)
                and len(value.lower.args) == 1
                and _same(value.lower.args[0], cond.args[0])
            ):
                target = self.expr(stmt.target)
                return [f"{pad}{target} = {self.expr(stmt.target, postfix)}.removeprefix({self.expr(cond.args[0])})"]
        if not isinstance(cond, ir.Binary) or cond.op != "in" or cond.right.ty is None:
            return None
        container = ts.strip_optional(cond.right.ty).name
        if (
            isinstance(stmt, ir.Delete)
            and not stmt.touches_state
            and container == "map"
            and isinstance(stmt.target, ir.Index)
            and _same(stmt.target.obj, cond.right)
            and _same(stmt.target.index, cond.left)
        ):
            key = self.key(cond.left, cond.right.ty, self.expr(cond.left))
            return [f"{pad}{self.expr(cond.right, postfix)}.pop({key}, None)"]
        return None

    def _s_for(self, s: ir.For, pad: str, indent: int, counter: _Counter | None = None) -> list[str]:
        body = [stmt for stmt in s.body if counter is None or stmt is not counter.increment]
        named = {n.id for n in _names_in(s.body)}
        for name in s.targets:
            self.scope.annotated.add(name if name in named else f"_{name}")
        base = ts.strip_optional(s.iter.ty) if s.iter.ty else ts.ANY
        targets = list(s.targets)
        looked_up = (
            base.name == "map"
            and isinstance(s.iter, ir.Name)
            and s.iter.ref in ("local", "param")
            and _value_lookups_safe(body, s.iter, targets)
        )
        if looked_up and len(targets) == 1 and _looks_up(body, s.iter, targets[0]):
            targets.append(self.fresh(f"{targets[0]}_value"))  # `for k in m:` reading m[k] (PLC0206)
        if looked_up and len(targets) == 2:
            self.loop_values.append((s.iter, targets[0], targets[1]))  # m[k] is the value (PLR1733)
        try:
            lines = self.block(body, indent + 1)
        finally:
            if looked_up and len(targets) == 2:
                self.loop_values.pop()
        used = _loaded_names(lines)
        # A counting loop's variable goes unused: `_i` says so (and satisfies ruff's B007).
        names = [name if name in used else f"_{name}" for name in targets]
        for name in names:
            self.scope.annotated.add(name)
        if base.name == "map" and len(names) == 2 and names[0] not in used:
            # Only the values (or only the keys) of a map: no pairs (ruff's PERF102).
            names, iterable = [names[1]], f"{self.expr(s.iter, _PREC['postfix'])}.values()"
        elif base.name == "map" and len(names) == 2 and names[1] not in used:
            names, iterable = [names[0]], self.iterable(s.iter, 1)
        else:
            iterable = self.iterable(s.iter, len(names))
        if counter is None and len(names) == 1:
            copied = _copying_loop(lines, names[0])
            if copied is not None:  # `for x in xs: out.append(x)` is `out.extend(xs)` (PERF402)
                return [f"{pad}{copied}.extend({iterable})"]
        target = ", ".join(names)
        if counter is not None:
            # `n = 0` and `n += 1` in the loop: enumerate (ruff's SIM113). n starts at 1 when
            # the count is taken before anything reads it, so it ends where the count did.
            target = f"{counter.name}, {target if len(names) == 1 else '(' + target + ')'}"
            iterable = f"enumerate({iterable}, start=1)" if counter.start == 1 else f"enumerate({iterable})"
        return [f"{pad}for {target} in {iterable}:", *lines]


def _pad(indent: int) -> str:
    return "    " * indent


# --------------------------------------------------------------------------- idioms
# What ruff's default rules ask of code that the body language lowers to literally: each
# rewrite below is exact (the same values, the same errors), and applies only where it is.

_ORDERING = {"<", "<=", ">", ">="}
_POSITION_FIELDS = {"line", "col", "end_line", "end_col", "ty"}
_PURE_BUILTINS = {
    "len", "abs", "min", "max", "round", "str", "int", "float", "sum", "sorted", "any", "all",
    "keys", "values", "now", "today", "date_of", "time_of", "at", "unique", "reversed", "range",
}  # fmt: skip
_PURE_METHODS = {
    "startswith", "endswith", "lower", "upper", "strip", "lstrip", "rstrip", "title", "get",
    "count", "index", "find", "split", "join", "replace", "isdigit", "isalpha", "keys", "values",
}  # fmt: skip


def _same(a: object, b: object) -> bool:
    """The same expression, wherever it was written (positions and types aside)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.Node):
        return all(_same(getattr(a, f), getattr(b, f)) for f in type(a).model_fields if f not in _POSITION_FIELDS)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _pure(e: ir.Expr) -> bool:
    """Evaluating `e` changes nothing (so evaluating it once or twice is the same)."""
    for call in _calls_in(e):
        func = call.func
        if call.mutates_state:
            return False
        if isinstance(func, ir.Name) and not (func.ref == "builtin" and func.id in _PURE_BUILTINS):
            return False
        if isinstance(func, ir.Attr) and func.name not in _PURE_METHODS:
            return False
    return True


def _total(e: ir.Expr) -> bool:
    """Evaluating `e` can neither change anything nor fail: it may be evaluated where it
    was not before."""
    if isinstance(e, (ir.Name, ir.Const)):
        return True
    if isinstance(e, ir.Attr):
        return _total(e.obj)
    if isinstance(e, ir.Unary):
        return e.op == "not" or isinstance(e.operand, ir.Const)
    if isinstance(e, ir.FString):
        return all(isinstance(part, str) or _total(part) for part in e.parts)
    return isinstance(e, ir.Binary) and e.op in ("and", "or") and _total(e.left) and _total(e.right)


def _const_bool(e: ir.Expr) -> bool | None:
    return e.value if isinstance(e, ir.Const) and isinstance(e.value, bool) else None


def _const_int(e: ir.Expr) -> int | None:
    if isinstance(e, ir.Const) and type(e.value) is int:
        return e.value
    if isinstance(e, ir.Unary) and e.op == "-" and isinstance(e.operand, ir.Const) and type(e.operand.value) is int:
        return -e.operand.value
    return None


def _is_builtin_call(e: object, name: str) -> TypeGuard[ir.Call]:
    return isinstance(e, ir.Call) and isinstance(e.func, ir.Name) and e.func.ref == "builtin" and e.func.id == name


def _is_ordering(e: ir.Expr) -> bool:
    """`a < b` and friends, as Python compares them (a json side is wrapped in `bool()`)."""
    return isinstance(e, ir.Binary) and e.op in _ORDERING and not _is_dynamic(e.left) and not _is_dynamic(e.right)


def _min_max(cond: ir.Binary, then: ir.Expr, other: ir.Expr) -> tuple[str, ir.Expr, ir.Expr] | None:
    """`then if cond else other` as `max(x, y)` or `min(x, y)`, when it picks the larger or
    the smaller of the two things `cond` compares. The argument order keeps which of two
    equal values is picked: max and min return the first of equal candidates."""
    left, right = cond.left, cond.right
    if not (_pure(left) and _pure(right)):
        return None
    if _same(then, left) and _same(other, right):
        table = {
            ">": ("max", right, left),
            ">=": ("max", left, right),
            "<": ("min", right, left),
            "<=": ("min", left, right),
        }
    elif _same(then, right) and _same(other, left):
        table = {
            ">": ("min", left, right),
            ">=": ("min", right, left),
            "<": ("max", left, right),
            "<=": ("max", right, left),
        }
    else:
        return None
    return table[cond.op]


def _chain_comparisons(emitter: Emitter, operands: list[ir.Expr], parts: list[str]) -> None:
    """In an `and` chain, `a < b and b <= c` becomes `a < b <= c` (in place of `parts`)."""
    index = 0
    while index < len(operands):
        first = operands[index]
        if not isinstance(first, ir.Binary) or not _is_ordering(first):
            index += 1
            continue
        rising = first.op in ("<", "<=")
        values, ops = [first.left, first.right], [first.op]
        end = index + 1
        while end < len(operands):
            step = operands[end]
            if not isinstance(step, ir.Binary) or not _is_ordering(step) or (step.op in ("<", "<=")) != rising:
                break
            if not _same(step.left, values[-1]) or not _pure(step.left):
                break
            values.append(step.right)
            ops.append(step.op)
            end += 1
        if end > index + 1:
            prec = _PREC["compare"] + 1
            parts[index] = emitter.expr(values[0], prec) + "".join(
                f" {op} {emitter.expr(value, prec)}" for op, value in zip(ops, values[1:], strict=True)
            )
            parts[index + 1 : end] = [""] * (end - index - 1)
        index = end


def _merge_affix_tests(emitter: Emitter, operands: list[ir.Expr], parts: list[str]) -> None:
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
        and _pure(e.func.obj)
    ]
    tests = dict(calls)

    def quiet(between: int) -> bool:  # what stands between two merged tests: no effect, no failure
        test = tests.get(between)
        return _total(operands[between]) or (test is not None and _total(test.args[0]))

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
            and _same(other.func.obj, call.func.obj)
            and _total(other.args[0])
            and all(quiet(between) for between in range(index + 1, other_index))
        ]
        if not group:
            continue
        args = ", ".join(emitter.expr(c.args[0]) for c in [call, *(other for _, other in group)])
        parts[index] = f"{emitter.expr(call.func.obj, _PREC['postfix'])}.{call.func.name}(({args}))"
        for other_index, _ in group:
            parts[other_index] = ""
            taken.add(other_index)


def _chain(op: str, operands: list[ir.Expr]) -> ir.Expr:
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


def _returned_bool(stmt: ir.Stmt | None) -> bool | None:
    if isinstance(stmt, ir.Return) and stmt.value is not None:
        return _const_bool(stmt.value)
    return None


def _needless_bool(stmt: ir.Stmt, following: ir.Stmt | None) -> tuple[ir.Expr, bool, int] | None:
    """For `if c: return True` and then (or else) `return False`: (c, True, statements
    taken); (c, False, ...) for the opposite. Conditions are bools, so `return c` is exact."""
    if not isinstance(stmt, ir.If) or len(stmt.branches) != 1 or len(stmt.branches[0].body) != 1:
        return None
    first = _returned_bool(stmt.branches[0].body[0])
    if stmt.orelse:
        second, taken = (_returned_bool(stmt.orelse[0]) if len(stmt.orelse) == 1 else None), 1
    else:
        second, taken = _returned_bool(following), 2
    if first is None or second is None or first == second:
        return None
    return stmt.branches[0].cond, first, taken


@dataclass
class _Counter:
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
        elif isinstance(stmt, ir.For):
            yield from walk_statements(stmt.body)


def _binds(stmts: list[ir.Stmt], name: str) -> int:
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


def _mentions(stmts: list[ir.Stmt], name: str) -> bool:
    return any(n.id == name for n in _names_in(stmts))


def _read_later(stmts: list[ir.Stmt], name: str) -> bool:
    """Whether these statements (the rest of a block) read `name` before they set it anew."""
    for stmt in stmts:
        if not _mentions([stmt], name):
            continue
        sets = (isinstance(stmt, ir.Let) and stmt.name == name) or (
            isinstance(stmt, ir.Assign)
            and stmt.op == "="
            and isinstance(stmt.target, ir.Name)
            and stmt.target.id == name
        )
        value = stmt.value if isinstance(stmt, (ir.Let, ir.Assign)) else None
        return not (sets and value is not None and not _mentions([ir.ExprStmt(value=value)], name))
    return False


def _loop_counter(stmts: list[ir.Stmt], index: int) -> _Counter | None:
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
        if name in loop.targets or _binds(loop.body, name) != 1 or _read_later(stmts[index + 1 :], name):
            continue
        init = next((s for s in reversed(stmts[:index]) if _binds([s], name)), None)
        if not (
            isinstance(init, (ir.Let, ir.Assign))
            and (isinstance(init, ir.Let) or init.op == "=")
            and isinstance(init.value, ir.Const)
            and type(init.value.value) is int
            and init.value.value == 0
        ):
            continue
        before, after = loop.body[:position], loop.body[position + 1 :]
        if not _mentions(before, name) and not any(isinstance(s, ir.Break) for s in walk_statements(before)):
            start = 1
        elif not _mentions(after, name) and isinstance(init, ir.Let):
            start = 0
        else:
            continue
        if not _mentions(before + after, name):
            continue  # n is never read: `for _n, ...` would leave `n = 0` unused
        return _Counter(name, start, stmt)
    return None


def _looks_up(stmts: list[ir.Stmt], mapping: ir.Expr, key: str) -> bool:
    """Whether the loop body reads `mapping[key]`."""
    return any(
        isinstance(node, ir.Index)
        and isinstance(node.index, ir.Name)
        and node.index.id == key
        and _same(node.obj, mapping)
        for node in walk(stmts)
    )


def _value_lookups_safe(stmts: list[ir.Stmt], mapping: ir.Name, targets: list[str]) -> bool:
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
            if isinstance(target, ir.Index) and _same(target.obj, mapping):
                return False
    for node in walk(stmts):
        if isinstance(node, ir.Call):
            if isinstance(node.func, ir.Name) and node.func.ref in ("fn", "tool"):
                return False
            if isinstance(node.func, ir.Attr) and _same(node.func.obj, mapping) and node.func.name not in _PURE_METHODS:
                return False
        if isinstance(node, ir.Lambda) and names & set(node.params):
            return False
        if isinstance(node, ir.Comprehension) and names & set(node.targets):
            return False
    return True


def _copying_loop(lines: list[str], name: str) -> str | None:
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


def _loaded_names(lines: list[str]) -> set[str]:
    """The names lowered code uses (reads, or writes into)."""
    code = "\n".join("    " + line for line in textwrap.dedent("\n".join(lines)).splitlines())
    try:
        tree = ast.parse("if True:\n" + code)
    except SyntaxError:  # not expected; every word then counts as used
        return set(re.findall(r"\w+", code))
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store)}


def _first_or_last(obj: str, position: int, source: ir.Expr) -> str | None:
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
        and _is_builtin_call(source, "sorted")
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


def _is_dynamic(e: ir.Expr) -> bool:
    return e.ty is not None and e.ty.name in ("json", "any")


def _names_in(stmts: list[ir.Stmt]) -> Iterator[ir.Name]:
    return (node for node in walk(stmts) if isinstance(node, ir.Name))


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


def json_expr(
    source: str,
    ty: ir.TypeRef,
    records: dict[str, ir.RecordDecl],
    depth: int = 0,
    record_converter: Callable[[str], str] | None = None,
) -> str:
    """An expression turning `source` of type `ty` into a detached JSON value, written for
    that type (a flat record is one `dict(...)`), so results leave no aliases behind.

    With `record_converter`, a record that is not flat is not written out in place: the
    expression calls the function it names for that record (see `JsonConverters`)."""
    base = ts.strip_optional(ty)
    if not ts.is_container(base, records):
        return source
    var = f"v{depth}"

    def inner_json(item_source: str, item_type: ir.TypeRef) -> str:
        return json_expr(item_source, item_type, records, depth + 1, record_converter)

    if base.name in ("json", "any"):
        inner = f"to_json({source})"
    elif base.name in records:
        record = records[base.name]
        if flat_record(record, records):
            inner = f"dict({source})"
        elif record_converter is not None:
            inner = f"{record_converter(record.name)}({source})"
        else:
            items = ", ".join(
                f"{py_str(f.name)}: {inner_json(f'{source}[{py_str(f.name)}]', f.type)}" for f in record.fields
            )
            inner = "{" + items + "}"
    elif base.name == "set":
        inner = f"sorted({source})"
    elif base.name == "map" and base.args[0].name == "json":
        # JSON object keys are strings, and this map keeps "1" and 1 apart: [key, value]
        # pairs, integer keys first, each kind in order, so equal maps give equal JSON.
        inner = (
            f"[[k{depth}, {inner_json(var, base.args[1])}]"
            f" for k{depth}, {var} in sorted({source}.items(), key=_pair_order)]"
        )
    elif base.name == "list":
        item = base.args[0]
        inner = (
            f"list({source})"
            if not ts.is_container(item, records)
            else f"[{inner_json(var, item)} for {var} in {source}]"
        )
    else:
        key, value = base.args
        key_text = f"str(k{depth})" if key.name == "int" else f"k{depth}"
        if key.name != "int" and not ts.is_container(value, records):
            inner = f"dict({source})"
        else:
            inner = f"{{{key_text}: {inner_json(var, value)} for k{depth}, {var} in {source}.items()}}"
    if ts.is_optional(ty) and base is not ty:
        return f"None if {source} is None else {inner}"
    return inner


def flat_record(record: ir.RecordDecl, records: dict[str, ir.RecordDecl]) -> bool:
    return not any(ts.is_container(f.type, records) for f in record.fields)


class JsonConverters:
    """The functions that turn tool results into detached JSON, generated per type: one
    per distinct type a tool returns (`_json_Ticket`, `_json_list_Ticket`), shared by
    every tool returning it, and one per record that is not flat, which the others call
    for their items instead of writing the record out again. A value of a type that holds
    nothing mutable (str, int, an enum, a datetime, ...) is its own JSON and needs no
    converter; where one call does it, that function is the converter: `dict` for a flat
    record, `list` for a list of scalars, `sorted` for a set, `to_json` for `json`."""

    def __init__(self, records: dict[str, ir.RecordDecl], types: TypeNames) -> None:
        self.records = records
        self.types = types
        self.functions: dict[str, str] = {}  # name -> source, each after the ones it calls
        self._names: dict[str, str] = {}  # ts.show(type) -> name

    def name_for(self, ty: ir.TypeRef) -> str | None:
        """The converter of values of `ty`, emitted on first use; None if none is needed."""
        base = ts.strip_optional(ty)
        if not ts.is_container(base, self.records):
            return None
        if base.name in ("json", "any"):
            return "to_json"  # to_json(None) is None: optional[json] needs nothing more
        known = self._names.get(ts.show(ty))
        if known is not None:
            return known
        if ty.name in self.records and not flat_record(self.records[ty.name], self.records):
            fields = self.records[ty.name].fields
            value = (
                "{"
                + ", ".join(f"{py_str(f.name)}: {self._json(f'value[{py_str(f.name)}]', f.type, 1)}" for f in fields)
                + "}"
            )
        else:
            value = self._json("value", ty, 0)
        call = re.fullmatch(r"(\w+)\(value\)", value)
        if call is not None:  # `dict(value)`, `list(value)`, `sorted(value)`: that function
            self._names[ts.show(ty)] = call.group(1)
            return call.group(1)
        name = "_json_" + _type_slug(ty)
        while name in self.functions or name in self._names.values() or name == "_json_key":  # `A_B` vs `A, B`
            name += "_"
        self._names[ts.show(ty)] = name
        self.functions[name] = (
            f"def {name}(value: {self.types.py(ty)}) -> {_json_annotation(ty, self.types)}:\n    return {value}\n"
        )
        return name

    def _json(self, source: str, ty: ir.TypeRef, depth: int) -> str:
        return json_expr(source, ty, self.records, depth, self._record)

    def _record(self, name: str) -> str:
        converter = self.name_for(ts.t(name))
        assert converter is not None
        return converter


def _type_slug(ty: ir.TypeRef) -> str:
    """A type as part of a Python name: `list[Ticket]` is `list_Ticket`."""
    return "_".join([ty.name, *(_type_slug(arg) for arg in ty.args)])


def _json_annotation(ty: ir.TypeRef, types: TypeNames) -> str:
    """The Python type of the JSON a converter returns: an object (its keys strings, an
    enum's among them) or an array."""
    base = ts.strip_optional(ty)
    if base.name in types.records:
        text = "dict[str, Any]"
    elif base.name == "map" and base.args[0].name != "json":
        text = f"dict[{'str' if base.args[0].name == 'int' else types.py(base.args[0])}, Any]"
    else:
        text = "list[Any]"
    return f"{text} | None" if ts.is_optional(ty) and base is not ty else text


__all__ = [
    "Emitter",
    "JsonConverters",
    "Scope",
    "TypeNames",
    "copy_expr",
    "flat_record",
    "py_str",
    "py_value",
    "typed_literal",
    "typed_value",
    "walk_statements",
]
