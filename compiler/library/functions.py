"""Built-in functions: collections, numbers, text, json views, time, and the ones with
effects (audit log, id counters, randomness, the clock). One `Function` entry each.

A type rule gets the checker (`ports.Checker`) and reports through it; a lowering gets
the emitter (`ports.Emitter`) and returns Python source with its precedence level.
"""

from __future__ import annotations

from collections.abc import Mapping

from compiler import ir
from compiler.ir import typesys as ts
from compiler.library import runtime
from compiler.library import state as bi
from compiler.library.entry import Effect, Function, Lowering, TypeRule
from compiler.library.ports import Checker, Emitter
from compiler.library.text import TEXT_FUNCTIONS

Expected = ir.TypeRef | None


# =========================================================================== type rules


def _signature(params: tuple[str, ...], result: str) -> TypeRule:
    """A fixed signature of positional arguments."""

    def check(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
        c.positional(call, _name(call), [ts.t(p) for p in params], len(params))
        return ts.t(result)

    return check


def _view(argument: ir.TypeRef, result: ir.TypeRef) -> TypeRule:
    """One argument of a fixed type, a fixed result (json views, parsers)."""

    def check(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
        c.positional(call, _name(call), [argument], 1)
        return result

    return check


def _name(call: ir.Call) -> str:
    assert isinstance(call.func, ir.Name)
    return call.func.id


def check_len(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "len")
    if ty.name not in ("str", "list", "map", "set", "json", "any"):
        c.error("E3004", f"`len` of {ts.show(ty)}", call.args[0])
    return ts.INT


def check_sum(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "sum")
    if ty.name == "list" and ty.args[0].name in ("int", "float", "number"):
        return ty.args[0]
    if ty.name != "any":
        c.error("E3004", f"`sum` needs a list of numbers, not {ts.show(ty)}", call)
    return ts.ANY


def check_sorted(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    if len(call.args) != 1:
        c.error("E3006", "`sorted` takes one list (and key=, reverse=)", call)
        return ts.ANY
    ty = c.expr(call.args[0], expected)
    from_set = ty.name == "set"
    if from_set:  # the way to list a set's items in a fixed order (enums by their names)
        ty = ts.list_of(ty.args[0])
    if ty.name != "list":
        if ty.name != "any":
            c.error("E3004", f"`sorted` needs a list or set, not {ts.show(ty)}", call.args[0])
        return ts.ANY
    has_key = any(kw.name == "key" for kw in call.kwargs)
    if not has_key and not from_set and not ts.orderable(ty.args[0], ty.args[0]):
        c.error("E3004", f"cannot order {ts.show(ty.args[0])} values; give `key=lambda x: x.field`", call)
    c.key_lambda(call, ty.args[0])
    return ty


def check_min_max(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    name = _name(call)
    if len(call.args) == 1:
        ty = c.expr(call.args[0], None)
        if ty.name != "list":
            if ty.name != "any":
                c.error("E3004", f"`{name}` of one argument needs a list, not {ts.show(ty)}", call.args[0])
            return ts.ANY
        item = ty.args[0]
        if not any(kw.name == "key" for kw in call.kwargs) and not ts.orderable(item, item):
            c.error("E3004", f"cannot order {ts.show(item)} values", call)
        c.key_lambda(call, item)
        return item
    if len(call.args) < 2:
        c.error("E3006", f"`{name}` takes a list, or two or more values", call)
        return ts.ANY
    types = [c.expr(arg, None) for arg in call.args]
    result = types[0]
    for ty, arg in zip(types[1:], call.args[1:]):
        joined = ts.join(result, ty)
        if joined is None or not ts.orderable(joined, joined):
            c.error("E3004", f"`{name}` of {ts.show(result)} and {ts.show(ty)}", arg)
            return ts.ANY
        result = joined
    if call.kwargs:
        c.error("E3006", f"`{name}` of several values takes no named arguments", call.kwargs[0])
    return result


def _list_to_list(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    """reversed, unique: a list in, a list of the same type out."""
    name = _name(call)
    ty = c.one_arg(call, name, expected)
    if ty.name not in ("list", "any"):
        c.error("E3004", f"`{name}` needs a list, not {ts.show(ty)}", call)
    return ty


def check_copy(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    return c.one_arg(call, "copy", expected)


def check_abs(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "abs")
    if not ts.is_numeric(ty):
        c.error("E3004", f"`abs` of {ts.show(ty)}", call)
    return ty


def check_round(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    types = c.positional(call, "round", [ts.NUMBER, ts.INT], 1)
    if len(types) == 2 and types[0].name == "number":
        return ts.NUMBER  # Python's `round(5, 1)` is 5, `round(5.25, 1)` 5.2
    return ts.FLOAT if len(types) == 2 else ts.INT


def check_str(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "str")
    if ty.name in ("list", "map", "set") or ty.name in c.records:
        c.error("E3004", f"`str` shows scalars, not {ts.show(ty)}", call)
    return ts.STR


def check_int(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "int")
    if ty.name not in ("int", "float", "number", "bool", "any", "json"):
        c.error(
            "E3004",
            f"`int` converts numbers and bools, not {ts.show(ty)}",
            call,
            hint="parse text with a check first; `int` of text can fail",
        )
    return ts.INT


def check_float(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "float")
    if ty.name not in ("int", "float", "number", "any", "json"):
        c.error("E3004", f"`float` converts numbers, not {ts.show(ty)}", call)
    return ts.FLOAT


def check_range(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    c.positional(call, "range", [ts.INT, ts.INT, ts.INT], 1)
    step = call.args[2] if len(call.args) == 3 else None
    if step is not None and _literal_int(step) == 0:
        c.error(
            "E3006", "`range` with a step of 0 never ends", step, hint="give a step other than 0: `range(10, 0, -1)`"
        )
    return ts.list_of(ts.INT)


def check_zip(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    """`zip(xs, ys, ...)`: two or more lists, gone over in step (as long as the shortest).
    The language has no tuples, so a zip is only what a loop or comprehension goes over,
    one variable per list; anywhere else it is `E3006`."""
    looped = c.looped_over(call)  # asked first: a comprehension in an argument is a loop too
    items = [c.expr(arg, None) for arg in call.args]
    for kw in call.kwargs:
        c.error("E3006", "`zip` takes lists only (it stops at the shortest)", kw)
    if len(items) < 2:
        c.error("E3006", "`zip` takes two or more lists", call)
    for ty, arg in zip(items, call.args, strict=True):
        if ty.name not in ("list", "any"):
            c.error("E3004", f"`zip` goes over lists, not {ts.show(ty)}", arg, hint="list a set with `sorted(s)`")
    if not looped:
        c.error(
            "E3006",
            "`zip(...)` is only gone over by a loop or comprehension (there are no tuples)",
            call,
            hint="`for a, b in zip(xs, ys):` or `[a + b for a, b in zip(xs, ys)]`",
        )
        return ts.ANY
    return ts.t(ts.ZIP, *(ty.args[0] if ty.name == "list" else ts.ANY for ty in items))


def lower_zip(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """Python's `zip`, which stops at the shortest list, saying so (ruff's B905)."""
    return f"zip({', '.join(em.expr(a) for a in call.args)}, strict=False)", "postfix"


def _literal_int(expr: ir.Expr) -> int | None:
    """The value of an int literal, or of a minus sign on one; None for anything else."""
    if isinstance(expr, ir.Const) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
        return expr.value
    if isinstance(expr, ir.Unary) and expr.op == "-":
        inner = _literal_int(expr.operand)
        return None if inner is None else -inner
    return None


def check_any_all(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    bools = ts.list_of(ts.BOOL)
    c.expect_assignable(c.one_arg(call, _name(call), bools), bools, call)
    return ts.BOOL


def _map_part(index: int) -> TypeRule:
    """keys (index 0), values (index 1): a list of a map's keys or values."""

    def check(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
        name = _name(call)
        ty = c.one_arg(call, name)
        if ty.name == "map":
            return ts.list_of(ty.args[index])
        if ty.name != "any":
            c.error("E3004", f"`{name}` needs a map, not {ts.show(ty)}", call)
        return ts.ANY

    return check


def check_pattern_call(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    """`matches(text, pattern)`, `search(text, pattern)`. A literal pattern is checked now
    (E3019: invalid, or outside the linear-time subset the runtime's matcher takes); one
    computed at run time that is not valid simply matches nothing."""
    name = _name(call)
    c.positional(call, name, [ts.STR, ts.STR], 2)
    if len(call.args) == 2:
        pattern = call.args[1]
        if isinstance(pattern, ir.Const) and isinstance(pattern.value, str):
            problem = runtime._regex_problem(pattern.value)
            if problem is not None:
                c.error("E3019", f"invalid pattern: {problem}", pattern)
    return ts.BOOL


def check_add_days(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    if len(call.args) != 2:
        c.error("E3006", "`add_days` takes a date or datetime and a number", call)
        return ts.ANY
    ty = c.expr(call.args[0], None)
    c.expect_assignable(c.expr(call.args[1], ts.INT), ts.INT, call.args[1])
    if ty.name not in ("date", "datetime"):
        c.error("E3001", f"`add_days` needs a date or datetime, not {ts.show(ty)}", call.args[0])
        return ts.ANY
    return ty


def check_days_between(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    types = [c.expr(arg, None) for arg in call.args]
    if len(types) != 2 or any(t.name not in ("date", "datetime") for t in types):
        c.error("E3006", "`days_between` takes two dates or datetimes", call)
    return ts.INT


def check_weekday(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "weekday")
    if ty.name not in ("date", "datetime", "any"):
        c.error("E3001", f"`weekday` needs a date or datetime, not {ts.show(ty)}", call)
    return ts.INT


def check_audit(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    if len(call.args) != 1:
        c.error("E3006", "`audit` takes an action and optional entity= and detail=", call)
    for arg in call.args[:1]:
        c.expect_assignable(c.expr(arg, ts.STR), ts.STR, arg)
    for kw in call.kwargs:
        if kw.name not in ("entity", "detail"):
            c.error("E3006", f"`audit` has no argument `{kw.name}`", kw, hint="entity= and detail=")
        c.expect_assignable(c.expr(kw.value, ts.STR), ts.STR, kw.value)
    return ts.NONE


def check_random_choice(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "random_choice")
    if ty.name == "list":
        return ty.args[0]
    if ty.name != "any":
        c.error("E3004", f"`random_choice` needs a list, not {ts.show(ty)}", call)
    return ts.ANY


def check_ord(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    c.positional(call, "ord", [ts.STR], 1)
    text = call.args[0] if len(call.args) == 1 else None
    if isinstance(text, ir.Const) and isinstance(text.value, str) and len(text.value) != 1:
        c.error("E3001", f"`ord` takes one character, not {len(text.value)}", text)
    return ts.INT


def check_chr(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    c.positional(call, "chr", [ts.INT], 1)
    code = call.args[0] if len(call.args) == 1 else None
    if isinstance(code, ir.Const) and type(code.value) is int and not 0 <= code.value <= MAX_CODE_POINT:
        c.error("E3001", f"`chr` takes a code point from 0 to {MAX_CODE_POINT}, not {code.value}", code)
    return ts.STR


MAX_CODE_POINT = 0x10FFFF

JSON_DUMPS_OPTIONS: dict[str, ir.TypeRef] = {
    "indent": ts.optional(ts.INT),
    "sort_keys": ts.BOOL,
    "ensure_ascii": ts.BOOL,
}
"""The named arguments of `json_dumps` and their types: those of Python's `json.dumps`
that keep its output JSON text (separators stay json.dumps's own defaults)."""


def check_repr(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    ty = c.one_arg(call, "repr")
    if holds_set(ty, c.records):
        c.error("E3004", f"`repr` of {ts.show(ty)}: a set has no fixed order", call, hint="list it first: `sorted(s)`")
    return ts.STR


def check_json_dumps(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    if len(call.args) != 1:
        c.error("E3006", "`json_dumps` takes one value, and indent=, sort_keys=, ensure_ascii=", call)
        for arg in call.args:
            c.expr(arg, None)
    else:
        ty = c.expr(call.args[0], None)
        if holds_set(ty, c.records):
            c.error(
                "E3004",
                f"`json_dumps` of {ts.show(ty)}: a set has no JSON form",
                call.args[0],
                hint="list its items first, e.g. `sorted(s)`",
            )
    given: set[str] = set()
    for kw in call.kwargs:
        wanted = JSON_DUMPS_OPTIONS.get(kw.name)
        if wanted is None:
            c.error(
                "E3006",
                f"`json_dumps` has no argument `{kw.name}`",
                kw,
                hint="its named arguments are indent=, sort_keys= and ensure_ascii=",
            )
            c.expr(kw.value, None)
            continue
        if kw.name in given:
            c.error("E2005", f"argument `{kw.name}` given twice", kw)
        given.add(kw.name)
        c.expect_assignable(c.expr(kw.value, wanted), wanted, kw.value)
    return ts.STR


def holds_set(ty: ir.TypeRef, records: Mapping[str, ir.RecordDecl], seen: frozenset[str] = frozenset()) -> bool:
    """Whether a value of this type may contain a set, looking into records too."""
    if ty.name == "set":
        return True
    if ty.name in records and ty.name not in seen:
        inner = seen | {ty.name}
        return any(holds_set(f.type, records, inner) for f in records[ty.name].fields)
    return any(holds_set(arg, records, seen) for arg in ty.args)


DATETIME_DIRECTIVES = frozenset("aAbBdHIjmMpSuUVwWyYG%")
"""The `strptime` directives `parse_datetime` takes in a literal format: no zone (`%z`,
`%Z`), no fractions of a second (`%f`), no locale-defined composites (`%c`, `%x`, `%X`)."""


def datetime_format_problem(template: str) -> str:
    """Why a literal `parse_datetime` format is refused, or "" when it is fine."""
    index = 0
    while index < len(template):
        if template[index] != "%":
            index += 1
            continue
        directive = template[index + 1 : index + 2]
        if not directive:
            return "the format ends with a lone `%`; write `%%` for a percent sign"
        if directive in ("z", "Z"):
            return f"`%{directive}` reads a time zone, and datetime values have none"
        if directive == "f":
            return "`%f` reads fractions of a second, and datetime values have whole seconds"
        if directive not in DATETIME_DIRECTIVES:
            return f"`%{directive}` is not one of the directives parse_datetime takes"
        index += 2
    return ""


def check_parse_datetime(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    c.positional(call, "parse_datetime", [ts.STR, ts.STR], 2)
    if len(call.args) == 2:
        template = call.args[1]
        if isinstance(template, ir.Const) and isinstance(template.value, str):
            problem = datetime_format_problem(template.value)
            if problem:
                c.error(
                    "E3024",
                    f"invalid date/time format: {problem}",
                    template,
                    hint="directives: "
                    + " ".join(f"%{d}" for d in sorted(DATETIME_DIRECTIVES, key=lambda d: (d.lower(), d))),
                )
    return ts.optional(ts.DATETIME)


# =========================================================================== lowerings


def _python(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """The Python built-in of the same name, same arguments."""
    return f"{_name(call)}({em.args(call)})", "postfix"


def _iterating(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """sorted, min, max, sum, any, all: they take any iterable, so `keys(m)` / `values(m)`
    need no list() copy, and a generator beats a list comprehension for any/all."""
    name = _name(call)
    if call.args and em.is_view_call(call.args[0]):
        view = call.args[0]
        assert isinstance(view, ir.Call)
        rest = [em.iter_builtin(view)] + [em.expr(a) for a in call.args[1:]]
        rest += [f"{kw.name}={em.expr(kw.value)}" for kw in call.kwargs]
        return f"{name}({', '.join(rest)})", "postfix"
    arg = call.args[0] if len(call.args) == 1 else None
    if name in ("any", "all") and isinstance(arg, ir.Comprehension) and arg.value is None:
        return f"{name}{em.expr(arg)[1:-1].join('()')}", "postfix"
    return _python(em, call)


def _wrapped(template: str) -> Lowering:
    """`template` with `{args}` the arguments' sources, comma-separated."""

    def lower(em: Emitter, call: ir.Call) -> tuple[str, str]:
        return template.format(args=", ".join(em.expr(a) for a in call.args)), "postfix"

    return lower


def _runtime_helper(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """A module-level helper `_name` of compiler/library/runtime.py."""
    args = ", ".join(em.expr(a) for a in call.args)
    return f"{em.scope.module_prefix}_{_name(call)}({args})", "postfix"


def _environment_method(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """A method `_name` of the generated Environment (it changes built-in state)."""
    return f"self._{_name(call)}({', '.join(em.expr(a) for a in call.args)})", "postfix"


def lower_range(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """`range(n)` as a list; in a tool or helper built through `self._count_each`, so a huge `n`
    is counted against the call's time limit as it is built."""
    args = ", ".join(em.expr(a) for a in call.args)
    if em.scope.kind == "test":
        return f"list(range({args}))", "postfix"
    em.scope.helpers.add("each")
    return f"list(self._count_each(range({args})))", "postfix"


def lower_values(em: Emitter, call: ir.Call) -> tuple[str, str]:
    return f"list({em.operand(call.args[0], 'postfix')}.values())", "postfix"


def lower_copy(em: Emitter, call: ir.Call) -> tuple[str, str]:
    return em.copy_of(call.args[0], call.args[0].ty or ts.ANY), "postfix"


def lower_pattern_call(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """`_matches`/`_search` of the runtime; in a tool or helper the matcher's work is
    charged to the call's step budget (`self._count_steps`), so a call past its time limit stops."""
    em.scope.helpers.add(_name(call))
    args = [em.expr(a) for a in call.args]
    if em.scope.kind != "test":
        args.append("self._count_steps")
    return f"{em.scope.module_prefix}_{_name(call)}({', '.join(args)})", "postfix"


def lower_now(em: Emitter, call: ir.Call) -> tuple[str, str]:
    return f"{em.scope.state_var}[{em.string(bi.CLOCK)}]", "postfix"


def lower_today(em: Emitter, call: ir.Call) -> tuple[str, str]:
    return f"{em.scope.state_var}[{em.string(bi.CLOCK)}][:10]", "postfix"


def _slice_of_first(bounds: str) -> Lowering:
    def lower(em: Emitter, call: ir.Call) -> tuple[str, str]:
        return f"{em.operand(call.args[0], 'postfix')}[{bounds}]", "postfix"

    return lower


def lower_at(em: Emitter, call: ir.Call) -> tuple[str, str]:
    date, time = call.args
    return f"{em.operand(date, '+')} + {em.string('T')} + {em.operand(time, '+', tighter=True)}", "+"


def lower_audit(em: Emitter, call: ir.Call) -> tuple[str, str]:
    kwargs = {kw.name: em.expr(kw.value) for kw in call.kwargs}
    entity = kwargs.get("entity", em.string(""))
    detail = kwargs.get("detail", em.string(""))
    return f"self._audit({em.expr(call.args[0])}, {entity}, {detail})", "postfix"


def lower_random_choice(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """The method returns Any: `cast` says which item type it is."""
    item_type = em.string(em.types.py(call.ty or ts.ANY))
    return f"cast({item_type}, self._random_choice({em.expr(call.args[0])}))", "postfix"


def lower_json_dumps(em: Emitter, call: ir.Call) -> tuple[str, str]:
    """Python's `json.dumps` with the options given (a helper in generated tests, which do
    not import json)."""
    options = [f"{kw.name}={em.expr(kw.value)}" for kw in call.kwargs]
    arguments = ", ".join([em.expr(call.args[0]), *options])
    if em.scope.kind == "test":
        em.scope.helpers.add("json_dumps")
        return f"{em.scope.module_prefix}_json_dumps({arguments})", "postfix"
    return f"json.dumps({arguments})", "postfix"


# =========================================================================== the table

_CLOCK = Effect(reads=(bi.CLOCK,))
_RANDOM = Effect(reads=(bi.RNG_STATE, bi.RANDOM_SEED), writes=bi.RNG_STATE)


python = _python
iterating = _iterating
helper = _runtime_helper
method = _environment_method
sig = _signature

FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in [
        Function("len", "len(xs)", check_len, python),
        Function("min", "min(xs)", check_min_max, iterating, shares_argument=True),
        Function("max", "max(xs)", check_min_max, iterating, shares_argument=True),
        Function("sum", "sum(xs)", check_sum, iterating),
        Function("sorted", "sorted(xs)", check_sorted, iterating),
        Function("reversed", "reversed(xs)", _list_to_list, _wrapped("list(reversed({args}))")),
        Function("abs", "abs(-2)", check_abs, python),
        Function("round", "round(2.5, 1)", check_round, python),
        Function("str", "str(3)", check_str, python),
        Function("int", "int(2.5)", check_int, python),
        Function("float", "float(2)", check_float, python),
        Function("range", "range(3)", check_range, lower_range),
        Function("any", "any([x > 1 for x in xs])", check_any_all, iterating),
        Function("all", "all([x > 1 for x in xs])", check_any_all, iterating),
        Function("keys", "keys(m)", _map_part(0), _wrapped("list({args})")),
        Function("values", "values(m)", _map_part(1), lower_values),
        Function("copy", "copy(xs)", check_copy, lower_copy),
        Function("unique", "unique(xs)", _list_to_list, _wrapped("list(dict.fromkeys({args}))")),
        Function("zip", "[a + b for a, b in zip(xs, xs)]", check_zip, lower_zip, shares_argument=True),
        Function("matches", 'matches(s, "[a-z]+")', check_pattern_call, lower_pattern_call, runtime=("matches",)),
        Function("stable_hash", "stable_hash(s)", sig(("str",), "int"), helper, runtime=("stable_hash",)),
        Function("type_of", "type_of(j)", sig(("json",), "str"), helper, runtime=("type_of",)),
        Function("as_number", "as_number(j)", _view(ts.JSON, ts.optional(ts.NUMBER)), helper, runtime=("as_number",)),
        Function("as_float", "as_float(j)", _view(ts.JSON, ts.optional(ts.FLOAT)), helper, runtime=("as_float",)),
        Function("as_text", "as_text(j)", _view(ts.JSON, ts.optional(ts.STR)), helper, runtime=("as_text",)),
        Function("as_bool", "as_bool(j)", _view(ts.JSON, ts.optional(ts.BOOL)), helper, runtime=("as_bool",)),
        Function(
            "as_list",
            "as_list(j)",
            _view(ts.JSON, ts.optional(ts.list_of(ts.JSON))),
            helper,
            runtime=("as_list",),
            shares_argument=True,
        ),
        Function(
            "as_map",
            "as_map(j)",
            _view(ts.JSON, ts.optional(ts.map_of(ts.STR, ts.JSON))),
            helper,
            runtime=("as_map",),
            shares_argument=True,
        ),
        Function("parse_int", "parse_int(s)", _view(ts.STR, ts.optional(ts.INT)), helper, runtime=("parse_int",)),
        Function(
            "parse_number", "parse_number(s)", _view(ts.STR, ts.optional(ts.FLOAT)), helper, runtime=("parse_number",)
        ),
        Function("parse_json", "parse_json(s)", _view(ts.STR, ts.optional(ts.JSON)), helper, runtime=("parse_json",)),
        Function("valid_regex", "valid_regex(s)", sig(("str",), "bool"), helper, runtime=("valid_regex",)),
        Function("search", 'search(s, "a")', check_pattern_call, lower_pattern_call, runtime=("search",)),
        Function("ord", 'ord("a")', check_ord, python),
        Function("chr", "chr(97)", check_chr, python),
        Function(
            "json_dumps",
            "json_dumps(m, indent=2, sort_keys=True, ensure_ascii=False)",
            check_json_dumps,
            lower_json_dumps,
        ),
        Function("repr", "repr(xs)", check_repr, helper, runtime=("repr",)),
        *TEXT_FUNCTIONS,
        Function("now", "now()", sig((), "datetime"), lower_now, effect=_CLOCK),
        Function("today", "today()", sig((), "date"), lower_today, effect=_CLOCK),
        Function(
            "add_seconds", "add_seconds(t, 30)", sig(("datetime", "int"), "datetime"), helper, runtime=("add_seconds",)
        ),
        Function(
            "add_minutes", "add_minutes(t, 5)", sig(("datetime", "int"), "datetime"), helper, runtime=("add_minutes",)
        ),
        Function("add_hours", "add_hours(t, 2)", sig(("datetime", "int"), "datetime"), helper, runtime=("add_hours",)),
        Function("add_days", "add_days(d, 1)", check_add_days, helper, runtime=("add_days",)),
        Function(
            "seconds_between",
            "seconds_between(t, t)",
            sig(("datetime", "datetime"), "int"),
            helper,
            runtime=("seconds_between",),
        ),
        Function("days_between", "days_between(d, d)", check_days_between, helper, runtime=("days_between",)),
        Function(
            "parse_datetime",
            'parse_datetime("31/01/2025 09:30", "%d/%m/%Y %H:%M")',
            check_parse_datetime,
            helper,
            runtime=("parse_datetime",),
        ),
        Function("date_of", "date_of(t)", sig(("datetime",), "date"), _slice_of_first(":10")),
        Function("time_of", "time_of(t)", sig(("datetime",), "time"), _slice_of_first("11:")),
        Function("weekday", "weekday(d)", check_weekday, helper, runtime=("weekday",)),
        Function("at", 'at(d, "09:00:00")', sig(("date", "time"), "datetime"), lower_at),
        Function(
            "audit",
            'audit("checked", entity=s)',
            check_audit,
            lower_audit,
            effect=Effect(reads=(bi.AUDIT_LOG, bi.CLOCK), writes=bi.AUDIT_LOG),
        ),
        Function(
            "next_id",
            'next_id("ticket")',
            sig(("str",), "int"),
            method,
            effect=Effect(reads=(bi.ID_COUNTERS,), writes=bi.ID_COUNTERS),
            methods=("next_id",),
        ),
        Function(
            "random_int", "random_int(1, 6)", sig(("int", "int"), "int"), method, _RANDOM, methods=("random_int",)
        ),
        Function(
            "random_choice",
            "random_choice(xs)",
            check_random_choice,
            lower_random_choice,
            _RANDOM,
            shares_argument=True,
            methods=("random_choice",),
        ),
        Function("random_float", "random_float()", sig((), "float"), method, _RANDOM, methods=("random_float",)),
        Function(
            "uniform",
            "uniform(1, 2.5)",
            sig(("float", "float"), "float"),
            method,
            _RANDOM,
            methods=("uniform", "random_float"),
        ),
        Function(
            "advance_clock",
            "advance_clock(60)",
            sig(("int",), "None"),
            method,
            effect=Effect(reads=(bi.CLOCK,), writes=bi.CLOCK),
            runtime=("add_seconds",),
            methods=("advance_clock",),
        ),
    ]
}
"""Every built-in function by name, in the order the language reference lists them."""
