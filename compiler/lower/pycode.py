"""Lowering of typed body-language expressions to Python source.

Expressions become Python expressions with minimal parentheses. Records are TypedDicts
(so `t.status` is `t["status"]`), enum members are their string values, state fields
live in the `state` dict, world data in `WORLD`. Statements, which extend this emitter,
are in `statements.py`; the built-in functions and methods lower through
`compiler.library`, which is handed this emitter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler import ir, library
from compiler.analyse.lookups import entity_of
from compiler.ir import typesys as ts
from compiler.library import builtins as bi
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

    kind: str  # "tool", "fn", "test", or a family's "plan" or "solution"
    state_var: str = "state"
    undo_var: str = "self._undo"  # how the body reaches the undo journal (a write tool binds a local)
    helpers: set[str] = field(default_factory=set)  # runtime helpers used (for the template)
    temp_counter: int = 0
    annotated: set[str] = field(default_factory=set)
    module_prefix: str = ""  # how module-level runtime helpers are reached ("environment." in tests)
    names: set[str] = field(default_factory=set)  # every name the callable uses, so new ones are fresh
    bare_return: bool = False  # every return gives None: `return`, not `return None` (ruff's RET501)
    recursion: frozenset[str] = frozenset()  # a recursive helper's call cycle: its calls pass `_depth + 1`
    unchecked: frozenset[int] = frozenset()  # ids of lookups on an agent's key no guard covers
    places: set[int] = field(default_factory=set)  # ids of those an assignment or `del` acts on, checked before
    reads_world: bool = False  # a test reads world data, which it reaches through `module_prefix` too


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
    """The emitter of expressions (and of the calls in them) of one callable's body."""

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
            self.scope.reads_world = True
            return f"{self.scope.module_prefix}WORLD[{py_str(e.id, self.quote)}]", _PREC["postfix"]
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
        if id(e) in self.scope.unchecked and id(e) not in self.scope.places:
            return self._checked_lookup(e, obj, index), _PREC["ternary"]
        return f"{obj}[{index}]", _PREC["postfix"]

    def _checked_lookup(self, e: ir.Index, obj: str, index: str) -> str:
        """A lookup on a key the agent chose that no guard covers: a missing key or
        position is a `not_found` domain error naming the map or list and the key."""
        test, _, failure = self.lookup_check(e, obj, index)
        return f"{obj}[{index}] if {test} else {failure}"

    def lookup_check(self, e: ir.Index, obj: str, index: str) -> tuple[str, str, str]:
        """(the test that the key or position is there, its negation, the call failing
        with not_found)."""
        self.scope.helpers.add("not_found")
        param = e.index.id if isinstance(e.index, ir.Name) and e.index.ref == "param" else ""
        entity, named = py_str(entity_of(e.obj), self.quote), py_str(param, self.quote)
        failure = f"{self.scope.module_prefix}_not_found({entity}, {index}, {named})"
        base = ts.strip_optional(e.obj.ty).name if e.obj.ty is not None else ""
        key = self.key(e.index, e.obj.ty, self.expr(e.index, _PREC["compare"] + 1))
        if base == "list":
            test = f"-len({obj}) <= {key} < len({obj})"
            return test, f"not ({test})", failure
        return f"{key} in {obj}", f"{key} not in {obj}", failure

    def place_check(self, target: ir.Expr, pad: str) -> list[str]:
        """Before a `del` or an assignment whose place needs its key there already: the
        not_found check, as a statement, where the key is the agent's and unchecked."""
        if not isinstance(target, ir.Index) or id(target) not in self.scope.unchecked:
            return []
        obj = self.expr(target.obj, _PREC["postfix"])
        index = self.key(target.index, target.obj.ty, self.expr(target.index))
        _, missing, failure = self.lookup_check(target, obj, index)
        return [f"{pad}if {missing}:", f"{pad}    {failure}"]

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
        if op == "*" and self.scope.kind != "test":
            repeated = self._repeat(e)
            if repeated is not None:
                return repeated, _PREC["postfix"]
        prec = _PREC[op]
        return f"{self.expr(e.left, prec)} {op} {self.expr(e.right, prec + 1)}", prec

    def _repeat(self, e: ir.Binary) -> str | None:
        """`s * n`, `xs * n` (or `n * s`) as `self._count_repeat(s, n)`: the length it builds is
        charged to the call and bounded (a huge `n` would hold the process in C)."""
        kinds = [ts.strip_optional(side.ty or ts.ANY).name for side in (e.left, e.right)]
        if kinds[1] in ("str", "list") and kinds[0] == "int":
            items, times = e.right, e.left
        elif kinds[0] in ("str", "list") and kinds[1] == "int":
            items, times = e.left, e.right
        else:
            return None
        self.scope.helpers.add("repeat")
        return f"self._count_repeat({self.expr(items)}, {self.expr(times)})"

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
        loop = f"for {', '.join(e.targets)} in {self.charged(self.iterable(e.iter, len(e.targets)), e.iter)}"
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
            and e.func.ref == "builtin"
            and e.func.id in ("range", "reversed", "keys", "values")
        ):
            return self.iter_builtin(e)
        return text

    def charged(self, text: str, e: ir.Expr) -> str:
        """What a loop or comprehension of a tool or helper goes over, through `self._count_each`,
        which counts its items against the call's time limit (docs/serving.md); `text` is
        `e` as `iterable` wrote it. Tests and scoring run no such limit."""
        if self.scope.kind == "test" or _few_items(e):
            return text
        if idioms.is_builtin_call(e, "reversed") and text.startswith("reversed("):
            text = f"{self.operand(e.args[0], 'postfix')}[::-1]"  # a list, which has a length
        if idioms.is_builtin_call(e, "zip"):
            text = f"list({text})"  # its pairs, counted as a list is (a zip has no length)
        self.scope.helpers.add("each")
        if text.startswith("(") and text.endswith(")") and _one_group(text):
            text = text[1:-1]  # an argument needs no parentheses of its own (ruff UP034)
        return f"self._count_each({text})"

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
            return f"{owner}.{bi.helper_method(func.id)}({args})", _PREC["postfix"]
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
        if self.scope.kind == "solution":  # a family's solution: the call an agent would make, recorded
            return f"_solution_call(self, _calls, {py_str(e.func.id, self.quote)}, {args})"
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
        text = self.expr(e, _PREC["postfix"])
        copied = copy_expr(text, ty, self.records, self.scope.module_prefix)
        wrapped = f"({text})"
        if text.startswith("(") and copied.endswith(wrapped) and copied.count(text) == 1:
            return copied[: -len(wrapped)] + f"({self.expr(e)})"  # `dict(a if c else b)`, not `dict((...))`
        return copied

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


def _is_view_call(e: ir.Expr) -> bool:
    return (
        isinstance(e, ir.Call)
        and isinstance(e.func, ir.Name)
        and e.func.ref == "builtin"
        and e.func.id in ("keys", "values", "unique")
        and len(e.args) == 1
    )


def _one_group(text: str) -> bool:
    """Whether `(...)` is one parenthesised group (not `(a) + (b)`): the first
    parenthesis closes at the end."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return index == len(text) - 1
    return False


def _few_items(e: ir.Expr) -> bool:
    """A literal list or map, or `range` of a literal: what a loop over it does is bounded
    by the spec's text (counted by the caller's own loop, if any)."""
    if isinstance(e, (ir.ListLit, ir.MapLit)):
        return True
    if idioms.is_builtin_call(e, "range") and not e.kwargs:
        bounds = [idioms.const_int(a) for a in e.args]
        return bool(bounds) and all(b is not None for b in bounds) and max(b or 0 for b in bounds) <= 1000
    return False


def _empty_literal(e: ir.Expr) -> bool:
    """`[]` or `{}`: a fresh value whose making cannot fail, so it may be made early (as a
    `get` default; ruff's SIM401 asks for that form)."""
    return isinstance(e, (ir.ListLit, ir.MapLit)) and not (e.items if isinstance(e, ir.ListLit) else e.entries)


def _record_defaults(env: ir.Environment) -> dict[str, dict[str, object]]:
    defaults: dict[str, dict[str, object]] = {}
    for record in env.records:
        values: dict[str, object] = {}
        for f in record.fields:
            if f.default is not None:
                values[f.name] = const_json(f.default)
        defaults[record.name] = values
    return defaults
