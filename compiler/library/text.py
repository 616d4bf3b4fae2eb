"""Built-in functions that write values as text (issue 24): the UTF-8 length of a text,
a Python-style `repr`, and a datetime written by a strftime-like format. Their results
equal Python's own functions on every input (tests/library/test_text_differential.py)."""

from __future__ import annotations

from compiler import ir
from compiler.ir import typesys as ts
from compiler.library.entry import Function
from compiler.library.ports import Checker, Emitter

Expected = ir.TypeRef | None

FORMAT_DIRECTIVES = frozenset("aAbBdHIjmMpSyY%")
"""The directives `format_datetime` writes, each as Python's `strftime` writes it in the C
locale (English day and month names): no zone, no fractions, no locale composites
(`%c`, `%x`), no week numbers."""


def _name(call: ir.Call) -> str:
    assert isinstance(call.func, ir.Name)
    return call.func.id


def format_problem(template: str) -> str:
    """Why a literal `format_datetime` format is refused, or "" when it is fine."""
    index = 0
    while index < len(template):
        if template[index] != "%":
            index += 1
            continue
        if index + 1 == len(template):
            return "a lone `%` ends the format; write `%%` for a percent sign"
        directive = template[index + 1]
        if directive not in FORMAT_DIRECTIVES:
            return f"`%{directive}` is not one of the directives format_datetime writes"
        index += 2
    return ""


def check_utf8_len(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    c.positional(call, "utf8_len", [ts.STR], 1)
    return ts.INT


def check_format_datetime(c: Checker, call: ir.Call, expected: Expected) -> ir.TypeRef:
    if len(call.args) != 2 or call.kwargs:
        c.error("E3006", "`format_datetime` takes a date or datetime and a format", call)
    if call.args:
        ty = c.expr(call.args[0], None)
        if ty.name not in ("date", "datetime", "any"):
            c.error("E3001", f"`format_datetime` needs a date or datetime, not {ts.show(ty)}", call.args[0])
    if len(call.args) > 1:
        template = call.args[1]
        c.expect_assignable(c.expr(template, ts.STR), ts.STR, template)
        if isinstance(template, ir.Const) and isinstance(template.value, str):
            problem = format_problem(template.value)
            if problem:
                directives = " ".join(f"%{d}" for d in sorted(FORMAT_DIRECTIVES, key=lambda d: (d.lower(), d)))
                c.error("E3024", f"invalid date/time format: {problem}", template, hint=f"directives: {directives}")
    return ts.STR


def lower_utf8_len(em: Emitter, call: ir.Call) -> tuple[str, str]:
    return f'len({em.operand(call.args[0], "postfix")}.encode("utf-8", "surrogatepass"))', "postfix"


def lower_repr(em: Emitter, call: ir.Call) -> tuple[str, str]:
    return f"repr({em.expr(call.args[0])})", "postfix"


def lower_format_datetime(em: Emitter, call: ir.Call) -> tuple[str, str]:
    args = ", ".join(em.expr(a) for a in call.args)
    return f"{em.scope.module_prefix}_format_datetime({args})", "postfix"


TEXT_FUNCTIONS = [  # `repr` is in functions.py, beside json_dumps, whose set rule it shares
    Function("utf8_len", "utf8_len(s)", check_utf8_len, lower_utf8_len),
    Function(
        "format_datetime",
        'format_datetime(t, "%d %b %Y, %I:%M %p")',
        check_format_datetime,
        lower_format_datetime,
        runtime=("format_datetime",),
    ),
]
"""In the order the language reference lists them, after the other text built-ins."""
