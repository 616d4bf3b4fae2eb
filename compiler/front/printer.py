"""Spec text of IR pieces: string literals, types and expressions with minimal
parentheses, error calls. One printer for everything that writes envspec: `envc fmt`
(which adds layout and comments) and the LLM layer's prompts (compiler/llm/render.py)."""

from __future__ import annotations

import contextlib
import re
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from compiler import ir

INDENT = "    "
DOC_WIDTH = 80
"""A doc longer than this is written as a block string."""

# --------------------------------------------------------------------------- strings

_NAMED_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def _escape_char(ch: str) -> str:
    """Minimal escaping: named escapes, `\\uXXXX` for other unprintable BMP characters."""
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    if ch.isprintable() or ord(ch) > 0xFFFF:
        return ch
    return f"\\u{ord(ch):04x}"


def quote(value: str) -> str:
    """A one-line double-quoted string literal that parses back to `value`."""
    return '"' + "".join(_escape_char(ch) for ch in value) + '"'


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def name_text(name: str) -> str:
    """An enum member's or record field's name as written: bare when it is a name,
    quoted otherwise (`"too expensive"`, `"MA(5)"`)."""
    return name if _NAME.fullmatch(name) else quote(name)


def _block_line(line: str) -> str:
    """One line inside `\"\"\"`: tabs and quotes stay raw, but a quote run cannot close it."""
    text = "".join(ch if ch == "\t" or (ch.isprintable() and ch != "\\") else _escape_char(ch) for ch in line)
    return re.sub(r'"{3,}', lambda m: '\\"' * len(m.group()), text)


def block_string(value: str) -> str | None:
    """The `\"\"\"` form of `value`, or None when the parser's dedent-and-strip would alter it."""
    lines = value.split("\n")
    layout = "\n".join(INDENT + line if line else "" for line in lines) + "\n" + INDENT
    if not value or textwrap.dedent(layout).strip() != value:
        return None
    return '"""\n' + "\n".join(_block_line(line) for line in lines) + '\n"""'


def text(value: str, long: bool = False) -> str:
    """Docs and other prose: a `\"\"\"` block over several lines (or when long), else quoted."""
    if "\n" in value or (long and len(value) > DOC_WIDTH):
        block = block_string(value)
        if block is not None:
            return block
    return quote(value)


# --------------------------------------------------------------------------- expressions

# Binding strength, loosest first, as in grammar/envspec.lark.
LAMBDA, TERNARY, OR, AND, NOT, COMPARE, SUM, TERM, NEG, POWER, POSTFIX, ATOM = range(12)
_COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not")
# op -> (its strength, least strength of the left operand, of the right operand).
# A comparison's sides bind tighter (a chain `a < b < c` is a `Compare` node of its own);
# the rest associate left, but `**`, which associates right.
_BINARY: dict[str, tuple[int, int, int]] = {
    "or": (OR, OR, AND),
    "and": (AND, AND, NOT),
    **{op: (COMPARE, SUM, SUM) for op in _COMPARE_OPS},
    **{op: (SUM, SUM, TERM) for op in ("+", "-")},
    **{op: (TERM, TERM, NEG) for op in ("*", "/", "//", "%")},
    "**": (POWER, POSTFIX, NEG),  # right-associative, and its right side may be `-x`
}


_KEPT: ContextVar[frozenset[int]] = ContextVar("kept_parentheses", default=frozenset())
"""`id()`s of the nodes whose parentheses were written and help reading (`keeping`)."""


@contextlib.contextmanager
def keeping(nodes: frozenset[int]) -> Iterator[None]:
    """Print the nodes of these `id()`s in parentheses where `readable_parentheses`
    allows them (`envc fmt` passes the ones the source wrote so; without it, minimal)."""
    token = _KEPT.set(nodes)
    try:
        yield
    finally:
        _KEPT.reset(token)


def readable_parentheses(parent: ir.Expr) -> list[ir.Expr]:
    """The operands of `parent` whose parentheses a reader may want though they change
    nothing: a comparison or `in` under `not` (`not (a < b)`), and `and` under `or`
    (`(a and b) or c`). `envc fmt` keeps them where written and adds none."""
    if isinstance(parent, ir.Unary) and parent.op == "not" and _is_comparison(parent.operand):
        return [parent.operand]
    if isinstance(parent, ir.Binary) and parent.op == "or":
        return [side for side in (parent.left, parent.right) if isinstance(side, ir.Binary) and side.op == "and"]
    return []


def _is_comparison(node: ir.Expr) -> bool:
    return isinstance(node, ir.Compare) or (isinstance(node, ir.Binary) and node.op in _COMPARE_OPS)


def expr(node: ir.Expr, floor: int = LAMBDA) -> str:
    """`node` as text, parenthesised when it binds looser than its position allows."""
    text, strength = _PRINTERS[type(node)](node)
    return f"({text})" if strength < floor else text


def _operand(parent: ir.Expr, node: ir.Expr, floor: int) -> str:
    """An operand, in the parentheses it was written with if they help reading."""
    kept = _KEPT.get()
    if kept and id(node) in kept and any(node is side for side in readable_parentheses(parent)):
        return f"({expr(node)})"
    return expr(node, floor)


def _name(node: ir.Name) -> tuple[str, int]:
    return node.id, ATOM


def _const(node: ir.Const) -> tuple[str, int]:
    value = node.value
    if value is None or isinstance(value, bool):
        return str(value), ATOM
    if isinstance(value, str):
        return quote(value), ATOM
    if isinstance(value, float):
        if value != value:
            raise ValueError("NaN has no envspec literal")
        text = "1e999" if abs(value) == float("inf") else repr(abs(value))
    else:
        text = str(abs(value))
    return ("-" + text, NEG) if value < 0 else (text, ATOM)


def _fstring(node: ir.FString) -> tuple[str, int]:
    out = ['f"']
    for part in node.parts:
        if isinstance(part, str):
            out.append("".join(_escape_char(ch) for ch in part).replace("{", "{{").replace("}", "}}"))
        else:
            spec = ""
            if isinstance(part, ir.Formatted):
                spec = ":" + part.spec
                part = part.value
            inner = expr(part)
            # `{{` would read as a literal brace, so a leading `{` gets a space.
            out.append("{" + (" " if inner.startswith("{") else "") + inner + spec + "}")
    out.append('"')
    return "".join(out), ATOM


def _list(node: ir.ListLit) -> tuple[str, int]:
    return "[" + ", ".join(expr(item) for item in node.items) + "]", ATOM


def _entry(entry: ir.MapEntry) -> str:
    return f"{expr(entry.key, TERNARY)}: {expr(entry.value)}"


def _map(node: ir.MapLit) -> tuple[str, int]:
    return "{" + ", ".join(_entry(e) for e in node.entries) + "}", ATOM


def _attr(node: ir.Attr) -> tuple[str, int]:
    return f"{expr(node.obj, POSTFIX)}.{name_text(node.name)}", POSTFIX


def _index(node: ir.Index) -> tuple[str, int]:
    return f"{expr(node.obj, POSTFIX)}[{expr(node.index)}]", POSTFIX


def _slice(node: ir.Slice) -> tuple[str, int]:
    lower = expr(node.lower, TERNARY) if node.lower is not None else ""
    upper = expr(node.upper, TERNARY) if node.upper is not None else ""
    return f"{expr(node.obj, POSTFIX)}[{lower}:{upper}]", POSTFIX


def arguments(args: Sequence[ir.Expr], kwargs: Sequence[ir.Keyword]) -> str:
    """Positional arguments first: the IR keeps the two kinds apart, not their order."""
    return ", ".join([expr(a) for a in args] + [f"{k.name}={expr(k.value)}" for k in kwargs])


def _call(node: ir.Call) -> tuple[str, int]:
    return f"{expr(node.func, POSTFIX)}({arguments(node.args, node.kwargs)})", POSTFIX


def _unary(node: ir.Unary) -> tuple[str, int]:
    if node.op == "not":
        return f"not {_operand(node, node.operand, NOT)}", NOT
    return f"-{expr(node.operand, NEG)}", NEG


def _binary(node: ir.Binary) -> tuple[str, int]:
    strength, left, right = _BINARY[node.op]
    return f"{_operand(node, node.left, left)} {node.op} {_operand(node, node.right, right)}", strength


def _compare(node: ir.Compare) -> tuple[str, int]:
    """A chain: every operand binds tighter than a comparison (`(a < b) == c` is no chain)."""
    text = expr(node.operands[0], SUM)
    for op, operand in zip(node.ops, node.operands[1:]):
        text += f" {op} {expr(operand, SUM)}"
    return text, COMPARE


def _ternary(node: ir.Ternary) -> tuple[str, int]:
    return f"{expr(node.then, OR)} if {expr(node.cond, OR)} else {expr(node.other, TERNARY)}", TERNARY


def _comprehension(node: ir.Comprehension) -> tuple[str, int]:
    loop = f" for {', '.join(node.targets)} in {expr(node.iter, OR)}"
    if node.cond is not None:
        loop += f" if {expr(node.cond, OR)}"
    if node.value is None:
        return f"[{expr(node.elt)}{loop}]", ATOM
    return f"{{{expr(node.elt, TERNARY)}: {expr(node.value)}{loop}}}", ATOM


def _formatted(node: ir.Formatted) -> tuple[str, int]:
    """Only inside an f-string, which prints it (`_fstring`); alone, as the f-string it is."""
    return _fstring(ir.FString(parts=[node]))


def _lambda(node: ir.Lambda) -> tuple[str, int]:
    return f"lambda {', '.join(node.params)}: {expr(node.body)}", LAMBDA


_PRINTERS: dict[type[Any], Callable[[Any], tuple[str, int]]] = {
    ir.Name: _name,
    ir.Const: _const,
    ir.FString: _fstring,
    ir.ListLit: _list,
    ir.MapLit: _map,
    ir.Attr: _attr,
    ir.Index: _index,
    ir.Slice: _slice,
    ir.Call: _call,
    ir.Unary: _unary,
    ir.Binary: _binary,
    ir.Compare: _compare,
    ir.Formatted: _formatted,
    ir.Ternary: _ternary,
    ir.Comprehension: _comprehension,
    ir.Lambda: _lambda,
}


def source(ref: ir.SourceRef) -> str:
    """`person_name`, `amount(50, 5000)`: a value source as written."""
    if not ref.args:
        return ref.name
    return f"{ref.name}({', '.join(_const(ir.Const(value=arg))[0] for arg in ref.args)})"


def type_ref(ref: ir.TypeRef) -> str:
    if not ref.args:
        return ref.name
    return f"{ref.name}[{', '.join(type_ref(a) for a in ref.args)}]"


def error_call(error: ir.ErrorCall) -> str:
    args = [] if error.message is None else [error.message]
    return f"{error.kind}({arguments(args, error.fields)})"


def verify_line(line: ir.VerifyLine) -> str:
    """A family's `verify [each NAME in EXPR:] COND [weight N]` line (a whole weight
    written without its `.0`)."""
    each = f"each {line.each} in {expr(line.over)}: " if line.over is not None else ""
    weight = ""
    if line.weight != 1.0:
        weight = f" weight {int(line.weight) if line.weight.is_integer() and abs(line.weight) < 2**53 else repr(line.weight)}"
    return f"verify {each}{expr(line.cond)}{weight}"


def loop_head(s: ir.For | ir.While) -> str:
    """The line that opens a loop's block: `for a, b in zip(xs, ys):`, `while n > 0 max 50:`
    (a `while` without `max` is printed without it: the default bound stays the default)."""
    if isinstance(s, ir.For):
        return f"for {', '.join(s.targets)} in {expr(s.iter)}:"
    bound = "" if s.limit is None else f" max {s.limit}"
    return f"while {expr(s.cond)}{bound}:"


def simple_stmt(s: ir.Stmt) -> str:
    """A statement of one line (not `if` or `for`)."""
    if isinstance(s, ir.Let):
        annotation = f": {type_ref(s.type)}" if s.type is not None else ""
        return f"let {s.name}{annotation} = {expr(s.value)}"
    if isinstance(s, ir.Assign):
        return f"{expr(s.target, POSTFIX)} {s.op} {expr(s.value)}"
    if isinstance(s, ir.Return):
        return "return" if s.value is None else f"return {expr(s.value)}"
    if isinstance(s, ir.Require):
        return f"require {expr(s.cond)}" + ("" if s.error is None else f" else {error_call(s.error)}")
    if isinstance(s, ir.Fail):
        return f"fail {error_call(s.error)}"
    if isinstance(s, ir.Delete):
        return f"del {expr(s.target, POSTFIX)}"
    if isinstance(s, ir.ExprStmt):
        return expr(s.value)
    if isinstance(s, (ir.Pass, ir.Break, ir.Continue)):
        return s.kind
    raise TypeError(f"cannot print {type(s).__name__}")
