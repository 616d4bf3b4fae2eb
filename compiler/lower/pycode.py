"""Lowering of typed body-language IR to Python source.

Expressions become Python expressions with minimal parentheses; statements become
lines. Records are TypedDicts (so `t.status` is `t["status"]`), enum members are their
string values, state fields live in the `state` dict, world data in `WORLD`. Every
change to a value that lives in state is preceded by an undo-journal entry, which is
what makes a failed tool call leave state untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler import ir, library
from compiler.ir import typesys as ts
from compiler.ir.tree import is_state_attr
from compiler.lower import idioms
from compiler.lower.converters import copy_expr
from compiler.lower.literals import const_json, py_str, typed_literal
from compiler.lower.pynames import PythonNames
from compiler.lower.pytypes import TypeNames

DEPTH = "_depth"
"""The parameter of a recursive helper counting how deep its call cycle is: a spec's
names cannot start with `_`, so it is free in every helper."""
HELPER_DEPTH = 200
"""How deep a recursive helper may be called (the call past it fails as an internal
error, rolled back like any failing call): far below Python's own recursion limit of
1,000 frames, which a tool call's own frames and nested expressions also use."""

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
    "**": 14,
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
    recursion: frozenset[str] = frozenset()  # a recursive helper's call cycle: its calls pass `_depth + 1`


@dataclass(frozen=True)
class EnvTables:
    """What every Emitter of one environment looks up, built once per lowering rather than
    once per callable (a spec of 1,000 tools made that quadratic)."""

    enums: dict[str, ir.EnumDecl]
    records: dict[str, ir.RecordDecl]
    types: TypeNames
    record_defaults: dict[str, dict[str, object]]
    python_names: PythonNames

    @classmethod
    def of(cls, env: ir.Environment) -> EnvTables:
        enums = {e.name: e for e in env.enums}
        records = {r.name: r for r in env.records}
        return cls(enums, records, TypeNames(enums, records), _record_defaults(env), PythonNames())


class Emitter:
    def __init__(self, env: ir.Environment, scope: Scope, tables: EnvTables | None = None) -> None:
        self.env = env
        self.scope = scope
        tables = tables or EnvTables.of(env)
        self.enums, self.records, self.types = tables.enums, tables.records, tables.types
        self.record_defaults = tables.record_defaults
        self.python_names = tables.python_names
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
                conversion, spec = "", ""
                if isinstance(part, ir.Formatted):
                    spec = ":" + part.spec
                    part = part.value
                if idioms.is_builtin_call(part, "str") and len(part.args) == 1 and not part.kwargs:
                    part, conversion = part.args[0], "!s"  # `{str(x)}` says `{x!s}` (ruff's RUF010)
                inner = self.expr(part, _PREC["ternary"] + 1)
                if "\\" in inner or "'" in inner and '"' in inner:
                    return self._concat(e), _PREC["+"]
                pieces.append("{" + inner + conversion + spec + "}")
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
            elif isinstance(part, ir.Formatted):
                pieces.append(self.expr(part, _PREC["postfix"]))
            else:
                inner = self.expr(part, _PREC["postfix"])
                pieces.append(inner if part.ty and part.ty.name == "str" else f"str({self.expr(part)})")
        return " + ".join(pieces) or py_str("", self.quote)

    def _e_formatted(self, e: ir.Formatted) -> tuple[str, int]:
        """`{x:spec}` where the f-string is written as a concatenation: Python's `format`."""
        return f"format({self.expr(e.value)}, {py_str(e.spec, self.quote)})", _PREC["postfix"]

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
        """All fields in declaration order, defaults filled, so mypy sees a full TypedDict
        (a field whose key may be absent only where it is given)."""
        items = []
        for f in record.fields:
            if f.name in given:
                value = self.expr(given[f.name])
            elif f.name in self.record_defaults.get(record.name, {}):
                value = typed_literal(self.record_defaults[record.name][f.name], f.type, self.records)
            elif f.absent:
                continue  # left out: the key is absent
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
            if isinstance(e.index, ir.Name) and e.index.id == key and idioms.same(e.obj, source):
                return value, _PREC["atom"]  # `m[k]` in `for k, v in m.items()` is `v`
        obj = self.expr(e.obj, _PREC["postfix"])
        position = idioms.const_int(e.index)
        if position in (0, -1):
            shortcut = idioms.first_or_last(obj, position, e.obj)
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
            if idioms.is_dynamic(e.left) or idioms.is_dynamic(e.right):
                return f"bool({text})", _PREC["postfix"]  # comparing Any gives Any to mypy
            return text, prec
        if op == "**":
            return self._power(e)
        prec = _PREC[op]
        return f"{self.expr(e.left, prec)} {op} {self.expr(e.right, prec + 1)}", prec

    def _power(self, e: ir.Binary) -> tuple[str, int]:
        """`a ** b`, typed as the analysis typed it and as mypy sees it. An int to a literal
        power of 0 or more stays an int (mypy knows); any other power is a float: an int
        base to an int power is made a float first (`float(a) ** b`, never a huge int), a
        float to an int power is one already, and a float power is wrapped in `float()`
        (mypy cannot type it; Python's complex result for a negative base fails there)."""
        prec = _PREC["**"]
        left_type = ts.strip_optional(e.left.ty or ts.ANY).name
        right_type = ts.strip_optional(e.right.ty or ts.ANY).name
        right = self.expr(e.right, _PREC["unary"])  # `2 ** -n`; `a ** b ** c` is `a ** (b ** c)`
        if left_type == right_type == "int" and (e.ty is None or e.ty.name == "float"):
            value = idioms.const_int(e.left)
            if value is not None:
                base = repr(float(value))
                base = f"({base})" if value < 0 else base
            else:
                base = f"float({self.expr(e.left)})"
            return f"{base} ** {right}", prec
        text = f"{self.expr(e.left, prec + 1)} ** {right}"
        if right_type == "float" and left_type in ("int", "float"):
            return f"float({text})", _PREC["postfix"]
        return text, prec

    def _e_compare(self, e: ir.Compare) -> tuple[str, int]:
        """`a < b <= c`: Python's own chained comparison (each operand evaluated once)."""
        prec = _PREC["compare"]
        parts = [self.expr(e.operands[0], prec + 1)]
        for op, operand in zip(e.ops, e.operands[1:]):
            if isinstance(operand, ir.Const) and (operand.value is None or isinstance(operand.value, bool)):
                op = {"==": "is", "!=": "is not"}.get(op, op)  # as for one comparison (ruff's E711, E712)
            parts.append(f"{op} {self.expr(operand, prec + 1)}")
        text = " ".join(parts)
        if any(idioms.is_dynamic(operand) for operand in e.operands):
            return f"bool({text})", _PREC["postfix"]  # comparing Any gives Any to mypy
        return text, prec

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
            idioms.chain_comparisons(self, operands, parts)
        else:
            idioms.merge_affix_tests(self, operands, parts)
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
        then, other = idioms.const_bool(e.then), idioms.const_bool(e.other)
        if then is True and other is False:
            return self._expr(e.cond)
        if then is False and other is True:
            return self._negated(e.cond)
        cond = e.cond
        if (
            isinstance(cond, ir.Binary)
            and cond.op in idioms.ORDERING
            and not idioms.is_dynamic(cond.left)
            and not idioms.is_dynamic(cond.right)
        ):
            picked = idioms.min_max(cond, e.then, e.other)
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
        if isinstance(found, ir.Attr) and isinstance(cond.left, ir.Const):  # a field that may be absent
            return self._field_get(cond.left, found, mapping, default)
        if (
            mapping.ty is None
            or ts.strip_optional(mapping.ty).name != "map"
            or not isinstance(found, ir.Index)
            or not idioms.same(found.obj, mapping)
            or not idioms.same(found.index, cond.left)
            or not idioms.total(default)
            or not idioms.pure(mapping)
        ):
            return None
        key = self.key(cond.left, mapping.ty, self.expr(cond.left))
        return f"{self.expr(mapping, _PREC['postfix'])}.get({key}, {self.expr(default)})"

    def _field_get(self, name: ir.Const, found: ir.Attr, record: ir.Expr, default: ir.Expr) -> str | None:
        """`r.get("f", d)` for `r.f if "f" in r else d`, `r` a record (see `_dict_get`)."""
        if (
            record.ty is None
            or ts.strip_optional(record.ty).name not in self.records
            or found.name != name.value
            or not idioms.same(found.obj, record)
            or not (idioms.total(default) or _empty_literal(default))
            or not idioms.pure(record)
        ):
            return None
        return f"{self.expr(record, _PREC['postfix'])}.get({py_str(found.name, self.quote)}, {self.expr(default)})"

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
        if (
            idioms.is_builtin_call(e, "range")
            and len(e.args) == 2
            and idioms.const_int(e.args[0]) == 0
            and not e.kwargs
        ):
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
        if (
            isinstance(e, ir.Call)
            and idioms.is_builtin_call(e, "range")
            and len(e.args) == 2
            and idioms.const_int(e.args[0]) == 0
        ):
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
            args = self.args(e)
            if func.id in self.scope.recursion:
                args += f"{', ' if args else ''}{DEPTH}={DEPTH} + 1"
            return f"{owner}._{func.id}({args})", _PREC["postfix"]
        if func.ref == "tool":
            return self._tool_call(e), _PREC["postfix"]
        return self._builtin(e, func.id)

    def args(self, e: ir.Call) -> str:
        names = self._python_names(e)
        parts = [self.expr(a) for a in e.args] + [
            f"{names.get(kw.name, kw.name)}={self.expr(kw.value)}" for kw in e.kwargs
        ]
        return ", ".join(parts)

    def _python_names(self, e: ir.Call) -> dict[str, str]:
        """A helper's parameters by their Python names (`state=` is `state_=`)."""
        if not (e.kwargs and isinstance(e.func, ir.Name) and e.func.ref == "fn"):
            return {}
        return self.python_names.names(next(fn for fn in self.env.fns if fn.name == e.func.id))

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

    def precedence(self, level: str) -> int:
        """The binding strength of a precedence level (`compare`, `+`, `postfix`, ...)."""
        return _PREC[level]

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
                if isinstance(target, ir.Index) and idioms.has_call(target.index):
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
        lines = []
        assert isinstance(s.target, (ir.Index, ir.Attr))
        container = self.expr(s.target.obj, _PREC["postfix"])
        if isinstance(s.target, ir.Attr):  # a record field that may be absent; if it is, nothing
            if s.touches_state:  # the whole record, so a rollback keeps its key order
                lines.append(f"{pad}self._undo.save_record({container})")
            return [*lines, f"{pad}{container}.pop({py_str(s.target.name, self.quote)}, None)"]
        assert isinstance(s.target, ir.Index)
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
        head = f"{pad}if {self.expr(idioms.chain('and', conds))}:"
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
                and idioms.same(first.target, second.target)
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
            and idioms.same(stmt.target.obj, cond.right)
            and idioms.same(stmt.target.index, cond.left)
        ):
            key = self.key(cond.left, cond.right.ty, self.expr(cond.left))
            return [f"{pad}{self.expr(cond.right, postfix)}.pop({key}, None)"]
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
            names, iterable = [names[1]], f"{self.expr(s.iter, _PREC['postfix'])}.values()"
        elif base.name == "map" and len(names) == 2 and names[1] not in used:
            names, iterable = [names[0]], self.iterable(s.iter, 1)
        else:
            iterable = self.iterable(s.iter, len(names))
        if counter is None and len(names) == 1:
            copied = idioms.copying_loop(lines, names[0])
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


def _is_view_call(e: ir.Expr) -> bool:
    return (
        isinstance(e, ir.Call)
        and isinstance(e.func, ir.Name)
        and e.func.ref == "builtin"
        and e.func.id in ("keys", "values", "unique")
        and len(e.args) == 1
    )


def _empty_literal(e: ir.Expr) -> bool:
    """`[]` or `{}`: a fresh value whose making cannot fail, so it may be made early (as a
    `get` default; ruff's SIM401 asks for that form)."""
    return isinstance(e, (ir.ListLit, ir.MapLit)) and not (e.items if isinstance(e, ir.ListLit) else e.entries)


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
                values[f.name] = const_json(f.default)
        defaults[record.name] = values
    return defaults
