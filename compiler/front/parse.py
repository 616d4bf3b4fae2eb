"""Stage 1, parse: `.envspec` text to an IR `Module`, or syntax diagnostics.

The grammar lives in `grammar/envspec.lark`; this module owns the Lark parser, the
indentation post-lexer, the IR builders (run during the parse by `_InlineParser`, or
over Lark's tree for input with errors), the translation of Lark's exceptions into
diagnostics with positions, and the cache of parsed modules (`ParseCache`). After a
syntax error it re-parses from the next top-level declaration so one run reports the
errors of every declaration.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import Indenter
from lark.parse_tree_builder import ParseTreeBuilder
from lark.parsers.lalr_analysis import Shift
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from compiler import ir, project
from compiler.diagnostics import Diagnostic
from compiler.ir.typesys import FORMAT_SPEC

MAX_SOURCE_BYTES = 5_000_000
MAX_NESTING = 100
MAX_EXPR_DEPTH = 120
MAX_SYNTAX_ERRORS = 50
INT64_MAX = 2**63 - 1

_DECL_START = re.compile(
    r"^(environment|enum|record|state|world|scenario|tool|fn|test|task|drop|rename|override|describe|on|load)\b"
)


def grammar_path() -> Path:
    """The grammar ships at the repository top (`grammar/`) or inside the wheel."""
    here = Path(__file__).resolve().parent.parent  # the compiler package
    for candidate in (here / "grammar" / "envspec.lark", here.parent / "grammar" / "envspec.lark"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("grammar/envspec.lark is missing from the envc installation")


class _NestingTooDeep(Exception):
    def __init__(self, token: Token) -> None:
        super().__init__("nesting too deep")
        self.token = token


class _BadDedent(Exception):
    def __init__(self, token: Token) -> None:
        super().__init__("bad dedent")
        self.token = token


class EnvspecIndenter(Indenter):
    """Python-style INDENT/DEDENT tokens; brackets suspend line structure."""

    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 4

    def handle_NL(self, token: Token) -> Iterator[Token]:
        if self.paren_level > 0:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1]
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            if len(self.indent_level) > MAX_NESTING + 1:
                raise _NestingTooDeep(token)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
            if indent != self.indent_level[-1]:
                raise _BadDedent(token)

    def _process(self, stream: Iterator[Token]) -> Iterator[Token]:
        last: Token | None = None
        for token in stream:
            last = token
            if token.type == self.NL_type:
                yield from self.handle_NL(token)
            else:
                yield token
            if token.type in self.OPEN_PAREN_types:
                self.paren_level += 1
                if self.paren_level > MAX_NESTING:
                    raise _NestingTooDeep(token)
            elif token.type in self.CLOSE_PAREN_types:
                self.paren_level = max(0, self.paren_level - 1)
        # Close the blocks still open at the end of input.
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            if last is not None:
                end = Token(self.DEDENT_type, "", line=last.end_line, column=last.end_column)
                yield Token.new_borrow_pos(self.DEDENT_type, "", end)
            else:
                yield Token(self.DEDENT_type, "")

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        self.paren_level = 0
        self.indent_level = [0]
        return self._process(stream)


@dataclass
class _Collector:
    """Errors found while building the IR (bad escapes, huge ints, bad f-strings)."""

    path: str
    errors: list[Diagnostic] = field(default_factory=list)
    result: list[Any] = field(default_factory=list)

    def add(
        self, code: str, message: str, line: int, col: int, end_line: int = 0, end_col: int = 0, hint: str = ""
    ) -> None:
        self.errors.append(Diagnostic(code, message, self.path, line, col, end_line, end_col, hint=hint))


def _pos(meta: Meta | _Span | Token) -> dict[str, int]:
    if isinstance(meta, Token):
        return {
            "line": meta.line or 0,
            "col": meta.column or 0,
            "end_line": meta.end_line or 0,
            "end_col": meta.end_column or 0,
        }
    if getattr(meta, "empty", True):
        return {}
    return {"line": meta.line, "col": meta.column, "end_line": meta.end_line, "end_col": meta.end_column}


_SpanTuple = tuple[int | None, int | None, int | None, int | None]
"""line, column, end line, end column of a token or rule (Lark's tokens may lack them)."""


class _Span:
    """The position Lark's `propagate_positions` gives a rule's tree: from the start of
    its first positioned child to the end of its last. The inline parser hands this to
    the IR builders in place of a tree's `Meta` (same attribute names)."""

    __slots__ = ("line", "column", "end_line", "end_column", "empty")

    def __init__(self, span: _SpanTuple | None) -> None:
        self.empty = span is None
        if span is not None:
            self.line, self.column, self.end_line, self.end_column = cast(tuple[int, int, int, int], span)


_DEPTH_MEASURED = (ir.ExprBase, ir.Keyword, ir.MapEntry)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "{": "{", "}": "}"}
_ESCAPE_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


class _ToIR(Transformer_NonRecursive):  # type: ignore[type-arg]
    """Builds IR nodes bottom-up without recursion, so deep input cannot overflow it.

    Each rule method takes (meta, children). Dispatch is done here rather than through
    Lark's `v_args`, which wraps the method anew for every node (a third of the time).
    It also measures expression depth: later stages walk the IR recursively, so an
    expression nested deeper than MAX_EXPR_DEPTH is refused here with E1008.
    """

    __visit_tokens__ = False

    def __init__(self, collector: _Collector) -> None:
        super().__init__()
        self.c = collector
        self.depths: dict[int, int] = {}
        self.span: _SpanTuple | None = None  # of the rule the inline parser reduces

    def _call_userfunc(self, tree: Tree[Token], new_children: list[Any] | None = None) -> Any:
        children = new_children if new_children is not None else tree.children
        return self.build(str(tree.data), tree.meta, children)

    def build(self, rule: str, meta: Meta | _Span, children: list[Any]) -> Any:
        """Run the IR builder of `rule` and record the depth of what it built."""
        method = getattr(self, rule, None)
        if method is None:
            raise AssertionError(f"no IR builder for grammar rule {rule}")
        result = method(meta, children)
        if isinstance(result, _DEPTH_MEASURED) or rule == "args":
            depth = 1 + max((self.depths.get(id(child), 0) for child in _flat(children)), default=0)
            self.depths[id(result)] = depth
            if depth == MAX_EXPR_DEPTH + 1 and isinstance(result, ir.Node):
                self.c.add("E1008", f"expression nested deeper than {MAX_EXPR_DEPTH} levels", result.line, result.col)
        return result

    # ------------------------------------------------------------------ strings
    def _unescape(self, body: str, token: Token) -> str:
        if "\\" not in body:
            return body

        def replace(match: re.Match[str]) -> str:
            esc = match.group(1)
            if esc.startswith("u") and len(esc) == 5:
                code = int(esc[1:], 16)
                if 0xD800 <= code <= 0xDFFF:
                    self.c.add(
                        "E1006",
                        f"`\\{esc}` is half of a surrogate pair, not a character",
                        token.line or 0,
                        token.column or 0,
                    )
                    return "\ufffd"
                return chr(code)
            if esc in _ESCAPES:
                return _ESCAPES[esc]
            self.c.add("E1006", f"invalid escape `\\{esc}` in string", token.line or 0, token.column or 0)
            return esc

        return _ESCAPE_RE.sub(replace, body)

    def _string_value(self, token: Token) -> str:
        text = str(token)
        if text.startswith('"""'):
            # Like a Python docstring: the first line as written, the rest dedented.
            return _clean_block(self._unescape(text[3:-3], token))
        return self._unescape(text[1:-1], token)

    def str_lit(self, meta: Meta, children: list[Token]) -> ir.Const:
        token = children[0]
        return ir.Const(value=self._string_value(token), **_pos(token))

    def fstr_lit(self, meta: Meta, children: list[Token]) -> ir.Expr:
        token = children[0]
        return _parse_fstring(token, self)

    # ------------------------------------------------------------------ literals
    def int_lit(self, meta: Meta, children: list[Token]) -> ir.Const:
        token = children[0]
        value = int(str(token).replace("_", ""))
        if value > INT64_MAX:
            self.c.add("E1007", "integer literal does not fit in 64 bits", token.line or 0, token.column or 0)
            value = 0
        return ir.Const(value=value, **_pos(token))

    def float_lit(self, meta: Meta, children: list[Token]) -> ir.Const:
        return ir.Const(value=float(children[0]), **_pos(children[0]))

    def true_lit(self, meta: Meta, children: list[Any]) -> ir.Const:
        return ir.Const(value=True, **_pos(meta))

    def false_lit(self, meta: Meta, children: list[Any]) -> ir.Const:
        return ir.Const(value=False, **_pos(meta))

    def none_lit(self, meta: Meta, children: list[Any]) -> ir.Const:
        return ir.Const(value=None, **_pos(meta))

    def name(self, meta: Meta, children: list[Token]) -> ir.Name:
        return ir.Name(id=str(children[0]), **_pos(children[0]))

    def list_lit(self, meta: Meta, children: list[Any]) -> ir.ListLit:
        return ir.ListLit(items=[c for c in children if c is not None], **_pos(meta))

    def map_entry(self, meta: Meta, children: list[Any]) -> ir.MapEntry:
        return ir.MapEntry(key=children[0], value=children[1], **_pos(meta))

    def map_lit(self, meta: Meta, children: list[Any]) -> ir.MapLit:
        return ir.MapLit(entries=[c for c in children if c is not None], **_pos(meta))

    def comp_for(self, meta: Meta, children: list[Any]) -> dict[str, Any]:
        first, second, iterable, cond = children
        targets = [str(first)] + ([str(second)] if second is not None else [])
        return {"targets": targets, "iter": iterable, "cond": cond}

    def list_comp(self, meta: Meta, children: list[Any]) -> ir.Comprehension:
        elt, comp = children
        return ir.Comprehension(elt=elt, **comp, **_pos(meta))

    def map_comp(self, meta: Meta, children: list[Any]) -> ir.Comprehension:
        key, value, comp = children
        return ir.Comprehension(elt=key, value=value, **comp, **_pos(meta))

    # ------------------------------------------------------------------ operators
    def attr(self, meta: Meta, children: list[Any]) -> ir.Attr:
        return ir.Attr(obj=children[0], name=str(children[1]), **_pos(meta))

    def index(self, meta: Meta, children: list[Any]) -> ir.Index:
        return ir.Index(obj=children[0], index=children[1], **_pos(meta))

    def slice(self, meta: Meta, children: list[Any]) -> ir.Slice:
        return ir.Slice(obj=children[0], lower=children[1], upper=children[2], **_pos(meta))

    def args(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    def kwarg(self, meta: Meta, children: list[Any]) -> ir.Keyword:
        return ir.Keyword(name=str(children[0]), value=children[1], **_pos(meta))

    def call(self, meta: Meta, children: list[Any]) -> ir.Call:
        func, arguments = children
        positional, keywords = _split_args(arguments or [])
        return ir.Call(func=func, args=positional, kwargs=keywords, **_pos(meta))

    def neg(self, meta: Meta, children: list[Any]) -> ir.Unary:
        return ir.Unary(op="-", operand=children[0], **_pos(meta))

    def not_op(self, meta: Meta, children: list[Any]) -> ir.Unary:
        return ir.Unary(op="not", operand=children[0], **_pos(meta))

    def binary(self, meta: Meta, children: list[Any]) -> ir.Binary:
        left, op, right = children
        return ir.Binary(op=str(op), left=left, right=right, **_pos(meta))

    def power(self, meta: Meta, children: list[Any]) -> ir.Binary:
        left, _, right = children
        return ir.Binary(op="**", left=left, right=right, **_pos(meta))

    def and_op(self, meta: Meta, children: list[Any]) -> ir.Binary:
        return ir.Binary(op="and", left=children[0], right=children[1], **_pos(meta))

    def or_op(self, meta: Meta, children: list[Any]) -> ir.Binary:
        return ir.Binary(op="or", left=children[0], right=children[1], **_pos(meta))

    def comp_op(self, meta: Meta, children: list[Token]) -> str:
        return " ".join(str(t) for t in children)

    def compare(self, meta: Meta, children: list[Any]) -> ir.Binary | ir.Compare:
        if len(children) == 3:
            left, op, right = children
            return ir.Binary(op=op, left=left, right=right, **_pos(meta))
        return ir.Compare(operands=children[0::2], ops=children[1::2], **_pos(meta))

    def ternary(self, meta: Meta, children: list[Any]) -> ir.Ternary:
        then, cond, other = children
        return ir.Ternary(cond=cond, then=then, other=other, **_pos(meta))

    def lambda_expr(self, meta: Meta, children: list[Any]) -> ir.Lambda:
        *names, body = children
        return ir.Lambda(params=[str(n) for n in names], body=body, **_pos(meta))

    # ------------------------------------------------------------------ types
    def type_name(self, meta: Meta, children: list[Token]) -> ir.TypeRef:
        return ir.TypeRef(name=str(children[0]), **_pos(meta))

    def type_app(self, meta: Meta, children: list[Any]) -> ir.TypeRef:
        return ir.TypeRef(name=str(children[0]), args=children[1:], **_pos(meta))

    def type_none(self, meta: Meta, children: list[Any]) -> ir.TypeRef:
        return ir.TypeRef(name="None", **_pos(meta))

    # ------------------------------------------------------------------ statements
    def let_stmt(self, meta: Meta, children: list[Any]) -> ir.Let:
        name, type_, value = children
        return ir.Let(name=str(name), type=type_, value=value, **_pos(meta))

    def assign_stmt(self, meta: Meta, children: list[Any]) -> ir.Assign:
        return ir.Assign(target=children[0], value=children[1], **_pos(meta))

    def aug_assign_stmt(self, meta: Meta, children: list[Any]) -> ir.Assign:
        target, op, value = children
        return ir.Assign(target=target, op=str(op), value=value, **_pos(meta))

    def return_stmt(self, meta: Meta, children: list[Any]) -> ir.Return:
        return ir.Return(value=children[0], **_pos(meta))

    def error_call(self, meta: Meta, children: list[Any]) -> ir.ErrorCall:
        kind, arguments = children
        positional, keywords = _split_args(arguments or [])
        message = positional[0] if positional else None
        if len(positional) > 1:
            extra = positional[1]
            self.c.add("E3006", f"`{kind}(...)` takes one message and named fields", extra.line, extra.col)
        return ir.ErrorCall(kind=str(kind), message=message, fields=keywords, **_pos(meta))

    def require_stmt(self, meta: Meta, children: list[Any]) -> ir.Require:
        return ir.Require(cond=children[0], error=children[1], **_pos(meta))

    def fail_stmt(self, meta: Meta, children: list[Any]) -> ir.Fail:
        return ir.Fail(error=children[0], **_pos(meta))

    def del_stmt(self, meta: Meta, children: list[Any]) -> ir.Delete:
        return ir.Delete(target=children[0], **_pos(meta))

    def expr_stmt(self, meta: Meta, children: list[Any]) -> ir.ExprStmt:
        return ir.ExprStmt(value=children[0], **_pos(meta))

    def pass_stmt(self, meta: Meta, children: list[Any]) -> ir.Pass:
        return ir.Pass(**_pos(meta))

    def break_stmt(self, meta: Meta, children: list[Any]) -> ir.Break:
        return ir.Break(**_pos(meta))

    def continue_stmt(self, meta: Meta, children: list[Any]) -> ir.Continue:
        return ir.Continue(**_pos(meta))

    def suite(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    def elif_clause(self, meta: Meta, children: list[Any]) -> ir.IfBranch:
        return ir.IfBranch(cond=children[0], body=children[1], **_pos(meta))

    def else_clause(self, meta: Meta, children: list[Any]) -> list[Any]:
        body: list[Any] = children[0]
        return body

    def if_stmt(self, meta: Meta, children: list[Any]) -> ir.If:
        cond, body, *rest = children
        orelse = rest.pop() if rest and (rest[-1] is None or isinstance(rest[-1], list)) else None
        branches = [ir.IfBranch(cond=cond, body=body, **_pos(meta)), *rest]
        return ir.If(branches=branches, orelse=orelse or [], **_pos(meta))

    def for_stmt(self, meta: Meta, children: list[Any]) -> ir.For:
        first, second, iterable, body = children
        targets = [str(first)] + ([str(second)] if second is not None else [])
        return ir.For(targets=targets, iter=iterable, body=body, **_pos(meta))

    def body(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    def python_body(self, meta: Meta, children: list[Any]) -> ir.Escape:
        return ir.Escape(kind="python", text=str(children[0].value), **_pos(meta))

    def llm_body(self, meta: Meta, children: list[Any]) -> ir.Escape:
        return ir.Escape(kind="llm", text=str(children[0].value), **_pos(meta))

    # ------------------------------------------------------------------ declarations
    def doc(self, meta: Meta, children: list[Any]) -> tuple[str, str]:
        text = children[0]
        if not isinstance(text, ir.Const):
            self.c.add("E1005", "a doc string is plain text, not an f-string", text.line, text.col)
            return ("doc", "")
        return ("doc", str(text.value))

    def env_title(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("title", children[0].value, meta)

    def env_archetype(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("archetype", str(children[0]), meta)

    def env_domains(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("domains", [c.value for c in children], meta)

    def env_doc(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("doc", children[0].value, meta)

    def env_extends(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("extends", children[0].value, meta)

    def env_seed(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("seed", int(children[0]), meta)

    def env_rng(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("rng", str(children[0]), meta)

    def env_clock(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("clock", children[0].value, meta)

    def env_decl(self, meta: Meta, children: list[Any]) -> ir.EnvHeader:
        name, *items = children
        values: dict[str, Any] = {}
        places: dict[str, ir.Node] = {}
        for key, value, item_meta in items:
            if not isinstance(value, (str, list, int)):
                self.c.add("E1005", f"`{key}` takes a plain string, not an f-string", item_meta.line, item_meta.column)
                continue
            if key in values:
                self.c.add(
                    "E2017", f"`{key}` is given twice in the environment header", item_meta.line, item_meta.column
                )
                continue
            values[key] = value
            places[key] = ir.Node(**_pos(item_meta))
        return ir.EnvHeader(name=str(name), **values, item_places=places, **_pos(meta))

    def enum_members(self, meta: Meta, children: list[Token]) -> list[Token]:
        return children

    def enum_decl(self, meta: Meta, children: list[Any]) -> ir.EnumDecl:
        name, *rest = children
        doc, groups = _take_doc(rest)
        members = [str(t) for group in groups for t in group]
        return ir.EnumDecl(name=str(name), members=members, doc=doc, **_pos(meta))

    def field_decl(self, meta: Meta, children: list[Any]) -> ir.Field_:
        name, type_, default, alias = children
        return ir.Field_(name=str(name), type=type_, default=default, alias=alias or "", **_pos(meta))

    def field_alias(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0].value)

    def record_field(self, meta: Meta, children: list[Any]) -> ir.Field_:
        name, mark, type_, default, alias = children
        return ir.Field_(
            name=str(name), type=type_, default=default, absent=mark is not None, alias=alias or "", **_pos(meta)
        )

    def record_decl(self, meta: Meta, children: list[Any]) -> ir.RecordDecl:
        override, rest = _take_override(children)
        name, *items = rest
        doc, fields = _take_doc(items)
        return ir.RecordDecl(name=str(name), fields=fields, doc=doc, override=override, **_pos(meta))

    def union_member(self, meta: Meta, children: list[Any]) -> tuple[str, str]:
        return str(children[0]), children[1].value

    def union_decl(self, meta: Meta, children: list[Any]) -> ir.RecordDecl:
        name, tag, *rest = children
        doc, members = _take_doc(rest)
        seen: dict[str, str] = {}
        for member, value in members:
            if member in seen or value in seen.values():
                self.c.add("E2005", f"union {name} lists `{member}` or the tag {value!r} twice", name.line, name.column)
            seen.setdefault(member, value)
        return ir.RecordDecl(name=str(name), fields=[], tag=str(tag), members=seen, doc=doc, **_pos(meta))

    def state_decl(self, meta: Meta, children: list[Any]) -> ir.StateDecl:
        doc, fields = _take_doc(children)
        return ir.StateDecl(fields=fields, doc=doc, **_pos(meta))

    def state_file(self, meta: Meta, children: list[Any]) -> ir.Field_:
        name, type_, source = children
        return ir.Field_(name=str(name), type=type_, source=str(source.value), **_pos(meta))

    def world_inline(self, meta: Meta, children: list[Any]) -> ir.WorldField:
        name, type_, value = children
        return ir.WorldField(name=str(name), type=type_, value=value, **_pos(meta))

    def world_file(self, meta: Meta, children: list[Any]) -> ir.WorldField:
        name, type_, source = children
        return ir.WorldField(name=str(name), type=type_, source=str(source.value), **_pos(meta))

    def world_decl(self, meta: Meta, children: list[Any]) -> ir.WorldDecl:
        doc, fields = _take_doc(children)
        return ir.WorldDecl(fields=fields, doc=doc, **_pos(meta))

    def scenario_item(self, meta: Meta, children: list[Any]) -> ir.ScenarioItem:
        return ir.ScenarioItem(name=str(children[0]), value=children[1], **_pos(meta))

    def scenario_item_file(self, meta: Meta, children: list[Any]) -> ir.ScenarioItem:
        return ir.ScenarioItem(name=str(children[0]), source=str(children[1].value), **_pos(meta))

    def scenario_decl(self, meta: Meta, children: list[Any]) -> ir.ScenarioDecl:
        name, *rest = children
        doc, items = _take_doc(rest)
        return ir.ScenarioDecl(name=str(name), items=items, doc=doc, **_pos(meta))

    def scenario_file(self, meta: Meta, children: list[Any]) -> ir.ScenarioDecl:
        name, source = children
        return ir.ScenarioDecl(name=str(name), items=[], source=str(source.value), **_pos(meta))

    def constraint(self, meta: Meta, children: list[Any]) -> ir.Constraint:
        return ir.Constraint(kind=str(children[0]), value=children[1], **_pos(meta))

    def param(self, meta: Meta, children: list[Any]) -> ir.Param:
        name, type_, default, *constraints = children
        return ir.Param(name=str(name), type=type_, default=default, constraints=constraints, **_pos(meta))

    def params(self, meta: Meta, children: list[Any]) -> list[ir.Param]:
        return children

    def field_list(self, meta: Meta, children: list[Token]) -> list[str]:
        return [str(t) for t in children]  # `nothing` leaves no children

    def reads_decl(self, meta: Meta, children: list[Any]) -> tuple[str, list[str]]:
        return ("reads", children[0])

    def writes_decl(self, meta: Meta, children: list[Any]) -> tuple[str, list[str]]:
        return ("writes", children[0])

    def side_effect_decl(self, meta: Meta, children: list[Any]) -> tuple[str, str]:
        return ("side_effect", str(children[0].value))

    def param_doc_decl(self, meta: Meta, children: list[Any]) -> tuple[str, tuple[str, str, Meta]]:
        return ("param", (str(children[0]), str(children[1].value), meta))

    def _callable(self, meta: Meta, children: list[Any], cls: type[ir.ToolDecl]) -> ir.ToolDecl:
        override, rest = _take_override(children)
        name, params, returns, *items = rest
        doc, items = _take_doc(items)
        fields: dict[str, Any] = {}
        body: list[Any] = []
        param_docs: dict[str, str] = {}
        for item in items:
            if isinstance(item, tuple) and item[0] == "param":
                self._param_doc(item[1], params or [], param_docs)
            elif isinstance(item, tuple):
                key = {"reads": "declared_reads", "writes": "declared_writes"}.get(item[0], str(item[0]))
                if key in fields:
                    self.c.add("E2017", f"`{item[0]}` is given twice", meta.line, meta.column)
                    continue
                fields[key] = item[1]
            else:
                body = item
        escape = body[0] if body and isinstance(body[0], ir.Escape) else None
        for param in params or []:
            param.doc = param_docs.get(param.name, "")
        return cls(
            name=str(name),
            params=params or [],
            returns=returns,
            body=[] if escape else body,
            escape=escape,
            doc=doc,
            override=override,
            **fields,
            **_pos(meta),
        )

    def _param_doc(self, line: tuple[str, str, Meta], params: list[ir.Param], docs: dict[str, str]) -> None:
        """A `param NAME "text"` line: it must name a parameter, once."""
        name, text, meta = line
        if name not in {param.name for param in params}:
            known = ", ".join(param.name for param in params) or "none"
            self.c.add(
                "E2023",
                f"`param {name}` names no parameter of this callable (parameters: {known})",
                meta.line,
                meta.column,
            )
        elif name in docs:
            self.c.add("E2017", f"`param {name}` is given twice", meta.line, meta.column)
        else:
            docs[name] = text

    def tool_decl(self, meta: Meta, children: list[Any]) -> ir.ToolDecl:
        return self._callable(meta, children, ir.ToolDecl)

    def fn_decl(self, meta: Meta, children: list[Any]) -> ir.ToolDecl:
        return self._callable(meta, children, ir.FnDecl)

    def rename_decl(self, meta: Meta, children: list[Token]) -> ir.RenameDecl:
        what, old, new = (str(c) for c in children)
        return ir.RenameDecl(what=what, old=old, new=new, **_pos(meta))

    def describe_decl(self, meta: Meta, children: list[Any]) -> ir.DescribeDecl:
        name, *items = children
        doc, lines = _take_doc(items)
        decl = ir.DescribeDecl(name=str(name), doc=doc, **_pos(meta))
        for _, (param, text, where) in lines:
            if param in decl.param_docs:
                self.c.add("E2017", f"`param {param}` is given twice", where.line, where.column)
            decl.param_docs[param] = text
            decl.param_lines[param] = where.line
            decl.param_cols[param] = where.column
        return decl

    def on_load_decl(self, meta: Meta, children: list[Any]) -> ir.OnLoadDecl:
        override, rest = _take_override(children)
        doc, items = _take_doc(rest)
        body = items[0] if items else []
        if body and isinstance(body[0], ir.Escape):
            self.c.add(
                "E2032",
                f"`on load:` takes statements, not a {body[0].kind} body",
                body[0].line,
                body[0].col,
                hint="write the load step in the statement language; a `fn` helper may share it",
            )
            body = []
        return ir.OnLoadDecl(body=body, doc=doc, override=override, **_pos(meta))

    def load_options_decl(self, meta: Meta, children: list[Any]) -> ir.LoadOptionsDecl:
        doc, fields = _take_doc(children)
        return ir.LoadOptionsDecl(fields=fields, doc=doc, **_pos(meta))

    def drop_decl(self, meta: Meta, children: list[Token]) -> ir.DropDecl:
        return ir.DropDecl(what=str(children[0]), name=str(children[1]), **_pos(meta))

    # ------------------------------------------------------------------ tests and tasks
    def use_scenario(self, meta: Meta, children: list[Token]) -> ir.UseScenario:
        return ir.UseScenario(name=str(children[0]), **_pos(meta))

    def test_let(self, meta: Meta, children: list[Any]) -> ir.TestLet:
        return ir.TestLet(name=str(children[0]), value=children[1], **_pos(meta))

    def expect_raises(self, meta: Meta, children: list[Any]) -> ir.ExpectRaises:
        call, kind, message = children
        text = message.value if message is not None else ""
        return ir.ExpectRaises(call=call, error=str(kind), message=str(text), **_pos(meta))

    def expect_true(self, meta: Meta, children: list[Any]) -> ir.ExpectTrue:
        return ir.ExpectTrue(cond=children[0], **_pos(meta))

    def test_call(self, meta: Meta, children: list[Any]) -> ir.TestCall:
        return ir.TestCall(call=children[0], **_pos(meta))

    def test_decl(self, meta: Meta, children: list[Any]) -> ir.TestDecl:
        name, *rest = children
        doc, steps = _take_doc(rest)
        return ir.TestDecl(name=str(name), steps=steps, doc=doc, **_pos(meta))

    def task_request(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("request", children[0], meta)

    def task_solution(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("solution", children, meta)

    def task_verify(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("verify", children[0], meta)

    def task_decl(self, meta: Meta, children: list[Any]) -> ir.TaskDecl:
        name, *rest = children
        doc, items = _take_doc(rest)
        task = ir.TaskDecl(name=str(name), doc=doc, **_pos(meta))
        for item in items:
            if isinstance(item, ir.UseScenario):
                if task.scenario:
                    self.c.add("E2017", "a task names one scenario", item.line, item.col)
                task.scenario = item.name
                continue
            key, value, item_meta = item
            if key == "request":
                if not isinstance(value, ir.Const):
                    self.c.add("E1005", "`request` takes a plain string", item_meta.line, item_meta.column)
                elif task.request:
                    self.c.add("E2017", "a task has one `request`", item_meta.line, item_meta.column)
                else:
                    task.request = str(value.value)
            elif key == "solution":
                task.solution.extend(value)
            else:
                task.verify.append(value)
        return task

    def start(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children


def _clean_block(text: str) -> str:
    """A triple-quoted string like a Python docstring: the first line as written, the
    common indentation of the others removed, blank lines at either end dropped. Unlike
    inspect.cleandoc, tabs are kept as they are."""
    lines = text.split("\n")
    rest = lines[1:]
    indents = [len(line) - len(line.lstrip()) for line in rest if line.strip()]
    margin = min(indents, default=0)
    cleaned = [lines[0].lstrip(), *(line[margin:] for line in rest)]
    while cleaned and not cleaned[0].strip():
        cleaned.pop(0)
    while cleaned and not cleaned[-1].strip():
        cleaned.pop()
    return "\n".join(cleaned)


def _flat(children: list[Any]) -> list[Any]:
    """Children with one level of argument lists opened (they hold expressions)."""
    flat: list[Any] = []
    for child in children:
        if isinstance(child, list):
            flat.extend(child)
        else:
            flat.append(child)
    return flat


def _take_doc(items: list[Any]) -> tuple[str, list[Any]]:
    if items and isinstance(items[0], tuple) and len(items[0]) == 2 and items[0][0] == "doc":
        return items[0][1], items[1:]
    return "", items


def _take_override(children: list[Any]) -> tuple[bool, list[Any]]:
    if children and isinstance(children[0], Token) and children[0].type == "OVERRIDE":
        return True, children[1:]
    return False, children


def _split_args(arguments: list[Any]) -> tuple[list[Any], list[ir.Keyword]]:
    positional = [a for a in arguments if not isinstance(a, ir.Keyword)]
    keywords = [a for a in arguments if isinstance(a, ir.Keyword)]
    return positional, keywords


# --------------------------------------------------------------------------- f-strings


def _parse_fstring(token: Token, builder: _ToIR) -> ir.Expr:
    """Split `f"a {x} b"` into parts; each `{…}` is parsed as an expression in place."""
    text = str(token)[2:-1]
    line, col = token.line or 0, (token.column or 0) + 2
    parts: list[str | ir.Expr] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            literal.append(text[i : i + 2])
            i += 2
        elif text.startswith("{{", i) or text.startswith("}}", i):
            literal.append(ch)
            i += 2
        elif ch == "}":
            builder.c.add("E1005", "single `}` in f-string; write `}}` for a brace", line, col + i)
            i += 1
        elif ch == "{":
            end = _matching_brace(text, i)
            if end < 0:
                builder.c.add("E1005", "`{` in f-string is never closed", line, col + i)
                break
            source = text[i + 1 : end]
            if literal:
                parts.append(builder._unescape("".join(literal), token))
                literal = []
            part = _parse_fstring_field(source, line, col + i + 1, builder)
            if part is not None:
                parts.append(part)
            i = end + 1
        else:
            literal.append(ch)
            i += 1
    if literal:
        parts.append(builder._unescape("".join(literal), token))
    return ir.FString(parts=parts, **_pos(token))


def _matching_brace(text: str, start: int) -> int:
    depth = 0
    for j in range(start, len(text)):
        if text[j] in "{[(":
            depth += 1
        elif text[j] in "}])":
            depth -= 1
            if depth == 0:
                return j if text[j] == "}" else -1
    return -1


FORMAT_SPEC_HINT = (
    "a spec is [[fill]align][sign][#][0][width][,|_][.precision][type]: align < > ^ =, sign + - or space, "
    "width and precision up to 3 digits, type s, d b o x X (ints), e E f F g G % (numbers); e.g. `{total:>10,.2f}`"
)


def _parse_fstring_field(source: str, line: int, col: int, builder: _ToIR) -> ir.Expr | None:
    """One `{…}` of an f-string: an expression, with an optional `:spec` after it."""
    # A lambda's `:` is its own (the analyser refuses a lambda there, E3015).
    split = -1 if re.match(r"\s*lambda\b", source) else _top_level(source, ":")
    bang = _top_level(source, "!")
    if bang >= 0 and (split < 0 or bang < split) and not source.startswith("=", bang + 1):
        conversion = source[bang:split] if split >= 0 else source[bang:]
        builder.c.add(
            "E1005",
            f"conversions such as `{conversion}` are not supported in f-strings",
            line,
            col + bang,
            line,
            col + bang + len(conversion),
            hint="a value shows as `str(x)` would; write `{str(x)}` or just `{x}`",
        )
        return None
    if split < 0:
        return _parse_fstring_expr(source, line, col, builder)
    spec = source[split + 1 :]
    expr = _parse_fstring_expr(source[:split], line, col, builder)
    if expr is None or not spec:
        return expr
    where = (line, col + split + 1, line, col + len(source))
    if "{" in spec or "}" in spec:
        builder.c.add(
            "E1005",
            "a format spec is fixed text: `{…}` inside it is not supported",
            *where,
            hint="write the width or precision as a number, e.g. `{x:>8.2f}`",
        )
        return None
    if FORMAT_SPEC.fullmatch(spec) is None:
        builder.c.add("E1005", f"`{spec}` is not a format spec envc takes", *where, hint=FORMAT_SPEC_HINT)
        return None
    return ir.Formatted(value=expr, spec=spec, line=expr.line, col=expr.col, end_line=line, end_col=col + len(source))


def _top_level(source: str, char: str) -> int:
    """Where `char` first occurs outside brackets in an f-string field, or -1."""
    depth = 0
    for index, ch in enumerate(source):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == char and depth == 0:
            return index
    return -1


def _parse_fstring_expr(source: str, line: int, col: int, builder: _ToIR) -> ir.Expr | None:
    if not source.strip():
        builder.c.add("E1005", "empty `{}` in f-string", line, col)
        return None
    inner = _Collector(builder.c.path)
    try:
        tree = _main_parser().parse(source, "expr", inner)
    except (LarkError, _NestingTooDeep, _BadDedent):
        builder.c.add("E1005", f"cannot parse `{source}` inside f-string", line, col)
        return None
    for error in inner.errors:
        builder.c.add(error.code, error.message, line, col + error.col - 1)
    _shift(tree, line - 1, col - 1)
    result: ir.Expr = tree
    return result


def _shift(node: Any, dline: int, dcol: int) -> None:
    """Move positions of an f-string sub-expression to where it sits in the file."""
    if isinstance(node, ir.Node):
        if node.line == 1:
            node.col += dcol
            node.end_col += dcol
        node.line += dline
        node.end_line += dline
        for name in type(node).model_fields:
            _shift(getattr(node, name), dline, dcol)
    elif isinstance(node, list):
        for item in node:
            _shift(item, dline, dcol)


# --------------------------------------------------------------------------- parser objects


@functools.cache
def _grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")


class _Parser:
    """The Lark LALR parser, built once (its tables are cached on disk by Lark).

    The indentation post-lexer keeps state while a text is lexed, so `parse` holds a
    lock; the transformation to IR runs outside it with a transformer per call.
    """

    def __init__(self) -> None:
        self.lark = Lark(
            _grammar_text(),
            parser="lalr",
            postlex=EnvspecIndenter(),
            propagate_positions=True,
            maybe_placeholders=True,
            start=["start", "expr"],
            cache=True,
        )
        self.lock = threading.Lock()

        self.inline = _InlineParser(self.lark)

    def parse(self, text: str, start: str, collector: _Collector) -> Any:
        """IR for `text`, built during the parse (`_InlineParser`); input it refuses is
        parsed again the classic way, tree first, whose exception becomes the diagnostic."""
        builder = _ToIR(_Collector(collector.path))
        try:
            result = self.inline.parse(text, start, builder)
        except (_NotInline, LarkError, _NestingTooDeep, _BadDedent):
            return self.parse_tree_first(text, start, collector)
        collector.errors.extend(builder.c.errors)
        return result

    def parse_tree_first(self, text: str, start: str, collector: _Collector) -> Any:
        """Lark's parse tree, then `_ToIR` over it: the path whose errors are reported."""
        with self.lock:
            tree = self.lark.parse(text, start=start)
        return _ToIR(collector).transform(tree)


class _NotInline(Exception):
    """The inline parser met a token the grammar does not allow there."""


_Reduce = tuple[int, str, Any]  # children popped, rule's nonterminal, callback (None: unit rule)


class _InlineParser:
    """Lark's LALR tables and contextual lexer's terminals driven by a loop that builds
    IR on each reduction, so no parse tree is built and none is walked afterwards.

    Child filtering, `?rule` inlining and `[x]` placeholders are Lark's own wrappers
    (`ParseTreeBuilder` without position propagation); positions are kept on a stack
    beside the values, with Lark's rule: a node spans from the start of its first
    positioned child to the end of its last. Unit rules (`?sum: term`) are skipped
    without a call. Valid input gives exactly the IR of `_ToIR` over the tree (a test
    compares both on every spec); any error falls back to the tree-first parse.
    """

    def __init__(self, lark: Lark) -> None:
        frontend = lark.parser
        self.lexer = frontend.lexer.lexer  # the contextual lexer, below the indenter
        table = frontend.parser.parser.parse_table
        self.start_states: dict[str, int] = table.start_states
        self.end_states: dict[str, int] = table.end_states
        self.local = threading.local()
        self.lex_tables: dict[int, tuple[list[Any], dict[str, Any], frozenset[str], frozenset[str]]] = {}
        shaper = ParseTreeBuilder(lark.rules, Tree, propagate_positions=False, maybe_placeholders=True)  # type: ignore[no-untyped-call]
        callbacks = shaper.create_callback(self._dispatch(lark.rules))  # type: ignore[no-untyped-call]
        reduces: dict[Any, _Reduce] = {
            rule: (len(rule.expansion), rule.origin.name, None if _is_unit(rule) else callbacks[rule])
            for rule in lark.rules
        }
        self.states: dict[int, dict[str, tuple[bool, Any]]] = {
            state: {
                symbol: (True, arg) if action is Shift else (False, reduces[arg])
                for symbol, (action, arg) in row.items()
            }
            for state, row in table.states.items()
        }

    def _dispatch(self, rules: list[Any]) -> object:
        """An object with one function per IR builder, as `create_callback` expects."""
        dispatch = type("_Dispatch", (), {})()
        for name in {rule.alias or rule.options.template_source or rule.origin.name for rule in rules}:
            if not str(name).startswith("_"):
                setattr(dispatch, str(name), self._callback(str(name)))
        return dispatch

    def _callback(self, rule: str) -> Any:
        local = self.local

        def build(children: list[Any]) -> Any:
            builder: _ToIR = local.builders[-1]
            return builder.build(rule, _Span(builder.span), children)

        return build

    def parse(self, text: str, start: str, builder: _ToIR) -> Any:
        builders: list[_ToIR] = self.local.__dict__.setdefault("builders", [])
        builders.append(builder)  # f-string fields parse inside a build: a stack
        try:
            return self._run(text, start, builder)
        finally:
            builders.pop()

    def _run(self, text: str, start: str, builder: _ToIR) -> Any:
        states = self.states
        stack = [self.start_states[start]]
        values: list[Any] = []
        spans: list[_SpanTuple | None] = []
        token: Token | None = None
        for token in EnvspecIndenter().process(self._lex(text, stack)):
            kind = token.type
            while True:
                step = states[stack[-1]].get(kind)
                if step is None:
                    raise _NotInline(kind)
                if step[0]:  # shift
                    stack.append(step[1])
                    values.append(token)
                    spans.append((token.line, token.column, token.end_line, token.end_column))
                    break
                size, origin, callback = step[1]
                if callback is None:  # a unit rule (inlined here, the hot path): value and span stay
                    stack[-1] = states[stack[-2]][origin][1]
                else:
                    self._reduce(size, origin, callback, stack, values, spans, builder)
        return self._finish(token, start, stack, values, spans, builder)

    def _lex(self, text: str, stack: list[int]) -> Iterator[Token]:
        """Lark's contextual lexer, token for token (the terminals the parser's current
        state accepts, Lark's regexes and keyword callbacks), without its per-token
        layers of calls. Text no terminal matches is left to the tree-first parse."""
        tables = self.lex_tables
        pos, line, line_start, end = 0, 1, 0, len(text)
        while pos < end:
            state = stack[-1]
            table = tables.get(state) or self._lex_table(state)
            regexes, callbacks, ignored, multiline = table
            for regex in regexes:
                match = regex.match(text, pos)
                if match:
                    break
            else:
                raise _NotInline("no terminal matches here")
            value, kind = match.group(0), str(match.lastgroup)
            start, start_line, column = pos, line, pos - line_start + 1
            if kind in multiline:
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = pos + value.rindex("\n") + 1
            pos += len(value)
            if kind in ignored and kind not in callbacks:
                continue
            token = Token(kind, value, start, start_line, column, line, pos - line_start + 1, pos)
            if kind in callbacks:
                token = callbacks[kind](token)
            if kind not in ignored:
                yield token

    def _lex_table(self, state: int) -> tuple[list[Any], dict[str, Any], frozenset[str], frozenset[str]]:
        """What the contextual lexer uses in `state`: its scanner's regexes, callbacks,
        ignored and newline-holding terminals (built on first use, like Lark's)."""
        lexer = self.lexer.lexers[state]
        scanner = lexer.scanner
        table = (scanner._mres, lexer.callback, lexer.ignore_types, lexer.newline_types)
        self.lex_tables[state] = table
        return table

    def _finish(
        self,
        last: Token | None,
        start: str,
        stack: list[int],
        values: list[Any],
        spans: list[_SpanTuple | None],
        builder: _ToIR,
    ) -> Any:
        """Reduce at the end of input until the start rule is complete."""
        end = Token.new_borrow_pos("$END", "", last) if last is not None else Token("$END", "", 0, 1, 1)
        while True:
            step = self.states[stack[-1]].get(end.type)
            if step is None or step[0]:
                raise _NotInline("$END")
            size, origin, callback = step[1]
            self._reduce(size, origin, callback, stack, values, spans, builder)
            if stack[-1] == self.end_states[start]:
                return values[-1]

    def _reduce(
        self,
        size: int,
        origin: str,
        callback: Any,
        stack: list[int],
        values: list[Any],
        spans: list[_SpanTuple | None],
        builder: _ToIR,
    ) -> None:
        if callback is None:
            stack[-1] = self.states[stack[-2]][origin][1]
            return
        if size:
            children = values[-size:]
            builder.span = _span_of(spans[-size:])
            del values[-size:], spans[-size:], stack[-size:]
        else:
            children, builder.span = [], None
        values.append(callback(children))
        spans.append(builder.span)
        stack.append(self.states[stack[-1]][origin][1])


def _span_of(spans: list[_SpanTuple | None]) -> _SpanTuple | None:
    """From the start of the first positioned child to the end of the last."""
    first, last = spans[0], spans[-1]
    if first is None or last is None:
        first = next((span for span in spans if span is not None), None)
        if first is None:
            return None
        last = next(span for span in reversed(spans) if span is not None)
    return (first[0], first[1], last[2], last[3])


def _is_unit(rule: Any) -> bool:
    """`?a: b` with b kept as it is: Lark's wrappers would hand b's value on unchanged."""
    if not rule.options.expand1 or rule.alias or len(rule.expansion) != 1 or any(rule.options.empty_indices):
        return False
    symbol = rule.expansion[0]
    return not (symbol.is_term and symbol.filter_out) and not (not symbol.is_term and symbol.name.startswith("_"))


@functools.cache
def _main_parser() -> _Parser:
    return _Parser()


# --------------------------------------------------------------------------- entry points


@dataclass
class ParseResult:
    module: ir.Module | None
    diagnostics: list[Diagnostic]
    by_lark: bool = False
    """Lark parsed the text (the fast parser refused it): about five times slower."""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Building IR allocates hundreds of thousands of objects and no garbage cycles;
    pausing the cyclic collector meanwhile keeps big specs from going superlinear.

    On the way out, what was built goes to the oldest generation unscanned (`freeze`
    then `unfreeze`), so the first collection afterwards does not walk the whole IR
    (a quarter of the fast parse of a 5,000-line spec); a deliberate freeze elsewhere
    (`envc serve`) is left alone."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def parse_source(source: str, path: str) -> ParseResult:
    """Parse spec text. Never raises for bad input: problems come back as diagnostics."""
    with gc_paused():
        return _parse_source(source, path)


def _parse_source(source: str, path: str) -> ParseResult:
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return ParseResult(None, [Diagnostic("E0005", "spec is larger than 5 MB", path, 1, 1)])
    text = source.removeprefix("\ufeff").replace("\r\n", "\n")  # BOM, CRLF: positions stay the same
    text = text if text.endswith("\n") else text + "\n"
    if "\0" in text:  # refused anywhere, strings and comments included: not spec text
        return ParseResult(None, _nul_characters(text, path))
    from compiler.front import parse_fast  # it imports this module's helpers

    collector = _Collector(path)
    fast = parse_fast.parse_decls(text)  # None: input left to Lark, which reports its errors
    if fast is not None:
        collector.result, syntax = fast, None
    else:
        syntax = _try_parse(text, path, collector)
    if syntax is None:
        module, errors = _assemble(collector.result, path)
        diagnostics = collector.errors + errors
        if diagnostics:
            return ParseResult(None, sorted(diagnostics, key=Diagnostic.sort_key))
        return ParseResult(module, [], by_lark=fast is None)
    errors = [syntax, *collector.errors]
    errors.extend(_errors_after(text, path, syntax.line))
    unique = {(d.line, d.col, d.code): d for d in errors}
    return ParseResult(None, sorted(unique.values(), key=Diagnostic.sort_key))


# --------------------------------------------------------------------------- cache

PARSE_CACHE_FORMAT = b"envc-parse-1"
PARSE_CACHE_FILES = 2000
"""Entries kept on disk; beyond that the oldest half is removed (specs edited in a loop
leave one entry per version)."""
PARSE_CACHE_IN_MEMORY_BYTES = 64 * 1024**2
"""JSON kept in memory for this run (a 5,000-line spec's IR is about 2 MB of it)."""


@dataclass
class ParseCache:
    """Parsed modules remembered by content, in this process and across runs.

    The key is a hash of the compiler's fingerprint (so an entry written by another
    version of envc is never found), the library versions the IR's JSON depends on, the
    spec's path (positions and `file` name it) and its text. An entry is the module's
    JSON (pydantic's own round trip: loading it gives fresh objects, which later stages
    may change in place) after a header and the payload's SHA-256: a truncated or
    corrupted file is a miss and is removed. Files are written to a temporary name and
    renamed, so readers never see half an entry. Only clean parses are kept; a spec
    with syntax errors is parsed every time (its diagnostics come from the parser).
    """

    folder: Path | None
    memory: dict[str, bytes] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def parse(self, source: str, path: str, remember: bool = True) -> ParseResult:
        """The text's module, from the cache or parsed. A clean parse is remembered if
        `remember` (a prototype's: parsed again for every spec that extends it) or if
        Lark made it (the fast parser refused the text; reading the JSON back is about
        five times faster). Otherwise it is not: writing a module's JSON costs as much
        as the fast parser took to build it (40 ms on the 5,000-line spec of
        `benchmarks/frontend.py`), and reading it back would save less than that."""
        key = self.key(source, path)
        payload = self.memory.get(key) or self._read(key)
        if payload is not None:
            with gc_paused():
                module = _module_from_json(payload)
            if module is not None:
                self.hits += 1
                self._remember(key, payload)
                return ParseResult(module, [])
            self._discard(key)
        self.misses += 1
        result = parse_source(source, path)
        if result.module is not None and not result.diagnostics and (remember or result.by_lark):
            payload = result.module.model_dump_json().encode("utf-8")
            self._remember(key, payload)
            self._write(key, payload)
        return result

    @staticmethod
    def key(source: str, path: str) -> str:
        digest = hashlib.sha256(PARSE_CACHE_FORMAT)
        for part in (project.compiler_fingerprint(), _library_versions(), path, source):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        return digest.hexdigest()

    def _remember(self, key: str, payload: bytes) -> None:
        self.memory.pop(key, None)
        self.memory[key] = payload  # the newest last: the oldest go first
        held = sum(len(kept) for kept in self.memory.values())
        while held > PARSE_CACHE_IN_MEMORY_BYTES and len(self.memory) > 1:
            held -= len(self.memory.pop(next(iter(self.memory))))

    def _entry(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}.json"

    def _read(self, key: str) -> bytes | None:
        entry = self._entry(key)
        if entry is None:
            return None
        try:
            data = entry.read_bytes()
        except OSError:
            return None
        header, _, payload = data.partition(b"\n")
        if header != PARSE_CACHE_FORMAT + b" " + hashlib.sha256(payload).hexdigest().encode():
            self._discard(key)
            return None
        return payload

    def _write(self, key: str, payload: bytes) -> None:
        entry = self._entry(key)
        if entry is None:
            return
        data = PARSE_CACHE_FORMAT + b" " + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        # The cache only saves time: a folder that cannot be written leaves every parse
        # to the parser, with the same result.
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, entry)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return
        self._prune(entry.parent)

    def _discard(self, key: str) -> None:
        self.memory.pop(key, None)
        entry = self._entry(key)
        if entry is not None:
            with contextlib.suppress(OSError):
                entry.unlink()

    @staticmethod
    def _prune(folder: Path) -> None:
        entries = list(folder.glob("*.json"))
        if len(entries) <= PARSE_CACHE_FILES:
            return
        aged: list[tuple[float, Path]] = []
        for entry in entries:
            with contextlib.suppress(OSError):  # another process may have removed it
                aged.append((entry.stat().st_mtime, entry))
        for _, entry in sorted(aged)[: len(aged) // 2]:
            with contextlib.suppress(OSError):
                entry.unlink()


def _module_from_json(payload: bytes) -> ir.Module | None:
    try:
        return ir.Module.model_validate_json(payload)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None


@functools.cache
def _library_versions() -> str:
    import lark
    import pydantic

    return f"lark {lark.__version__}, pydantic {pydantic.VERSION}"


def parse_cache_folder() -> Path | None:
    """`$XDG_CACHE_HOME/envc/parse` (`~/.cache/envc/parse`); `ENVC_PARSE_CACHE=0` keeps
    the cache in memory only."""
    if os.environ.get("ENVC_PARSE_CACHE", "1") == "0":
        return None
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "envc" / "parse"


@functools.cache
def parse_cache() -> ParseCache:
    """The process's cache (the disk folder is fixed when first used)."""
    return ParseCache(parse_cache_folder())


def parse_cached(source: str, path: str, remember: bool = True) -> ParseResult:
    """`parse_source`, remembered by content (`ParseCache.parse` says when): many specs
    extending one prototype parse it once, in this run and the next."""
    return parse_cache().parse(source, path, remember)


def _nul_characters(text: str, path: str) -> list[Diagnostic]:
    """E1001 at every NUL character (at most MAX_SYNTAX_ERRORS + 1), before parsing.
    The lexer alone would take a NUL inside a string (and copy it into the generated
    code) or a comment; a NUL anywhere marks a binary or corrupted file, so it is
    refused wherever it is and nothing else is reported around it."""
    found: list[Diagnostic] = []
    for number, line in enumerate(text.split("\n"), start=1):
        col = line.find("\0")
        while col != -1 and len(found) <= MAX_SYNTAX_ERRORS:
            found.append(
                Diagnostic(
                    "E1001",
                    "NUL character (U+0000) in the spec; envc refuses it anywhere, even in a string or a comment",
                    path,
                    number,
                    col + 1,
                    number,
                    col + 2,
                    hint="remove it; a string that needs the character can write the escape `\\u0000`",
                )
            )
            col = line.find("\0", col + 1)
    return found


def parse_file(path: Path) -> ParseResult:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return ParseResult(None, [Diagnostic("E0001", f"cannot read {path}: {exc.strerror}", str(path), 0, 0)])
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return ParseResult(None, [Diagnostic("E0002", f"byte {exc.start} is not valid UTF-8", str(path), line, 1)])
    return parse_source(source, str(path))


def _try_parse(text: str, path: str, collector: _Collector) -> Diagnostic | None:
    """Parse `text`; leave declarations on the collector, or return the syntax error."""
    try:
        collector.result = _main_parser().parse(text, "start", collector)
    except UnexpectedInput as exc:
        return _syntax_diagnostic(exc, path, text)
    except _NestingTooDeep as exc:
        return Diagnostic(
            "E1008", f"nesting deeper than {MAX_NESTING} levels", path, exc.token.line or 0, exc.token.column or 0
        )
    except _BadDedent as exc:
        line = exc.token.end_line or exc.token.line or 1
        indent = len(str(exc.token).rsplit("\n", 1)[1])
        return Diagnostic("E1004", "dedent does not match any outer indentation level", path, line, indent + 1)
    except RecursionError:
        return Diagnostic("E1008", "nesting too deep to parse", path, 1, 1)
    return None


def _errors_after(text: str, path: str, error_line: int) -> list[Diagnostic]:
    """Re-parse from each later top-level declaration to find further syntax errors."""
    lines = text.split("\n")
    starts = _decl_starts(lines)
    found: list[Diagnostic] = []
    last = error_line
    while len(found) < MAX_SYNTAX_ERRORS:
        following = [s for s in starts if s > last]
        if not following:
            break
        start = following[0]
        padded = "\n" * (start - 1) + "\n".join(lines[start - 1 :])
        collector = _Collector(path)
        error = _try_parse(padded, path, collector)
        found.extend(collector.errors)
        if error is None:
            break
        found.append(error)
        last = max(error.line, start)
    return found


@dataclass
class Recovered:
    """Spec text without its broken declarations (`without_broken_declarations`)."""

    text: str  # the same lines, those of broken declarations left empty: positions stay
    names: set[str]  # what the broken declarations declared (their names, a block's fields)
    spans: list[tuple[int, int]]  # first and last line of every declaration, broken or not


_DECL_NAMES = re.compile(
    r"^(?:override\s+)?(?:enum|record|scenario|tool|fn|test|task|describe\W+tool|drop\W+\w+|rename\W+\w+)\W*(\w+)"
    r"(?:.*\bas\W+(\w+))?"
)
_BLOCK_FIELD = re.compile(r"^\s+(\w+)\s*[:=]")


def without_broken_declarations(source: str, error_lines: Iterable[int]) -> Recovered | None:
    """The text with every top-level declaration holding one of `error_lines` blanked
    out, so the declarations that parsed can still be analysed; None when the header
    itself is broken (nothing can be analysed without it) or a line lies before every
    declaration. The names come from the text, not a parse: a declaration's name on its
    first line (both names of a `rename`), the field names of a broken `state` or
    `world` block, and the names of the records and enums that mention any of these (a
    record whose field type is missing is itself not what the spec means)."""
    text = source.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    starts = _decl_starts(lines)
    if not starts:
        return None
    spans = [(start, (starts[i + 1] - 1) if i + 1 < len(starts) else len(lines)) for i, start in enumerate(starts)]
    broken: set[tuple[int, int]] = set()
    for line in error_lines:
        span = next((s for s in reversed(spans) if s[0] <= line), None)
        if span is None or lines[span[0] - 1].startswith("environment"):
            return None
        broken.add(span)
    names: set[str] = set()
    for first, last in sorted(broken):
        head = lines[first - 1]
        found = _DECL_NAMES.match(head)
        if found:
            names.update(name for name in found.groups() if name)
        if head.startswith(("state", "world")):
            names.update(m.group(1) for line in lines[first:last] if (m := _BLOCK_FIELD.match(line)))
    _add_dependent_types(lines, spans, broken, names)
    for first, last in broken:
        lines[first - 1 : last] = [""] * (last - first + 1)
    return Recovered("\n".join(lines), names, spans)


def _add_dependent_types(
    lines: list[str], spans: list[tuple[int, int]], broken: set[tuple[int, int]], names: set[str]
) -> None:
    """Records and enums whose text mentions a missing name join the missing names, until
    none is added: a record with a field of a broken type cascades like the type."""
    pending = True
    while pending and names:
        pending = False
        word = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
        for first, last in spans:
            found = re.match(r"^(?:override\s+)?(?:record|enum)\s+(\w+)", lines[first - 1])
            if (first, last) in broken or found is None or found.group(1) in names:
                continue
            if word.search("\n".join(lines[first - 1 : last])):
                names.add(found.group(1))
                pending = True


def _decl_starts(lines: list[str]) -> list[int]:
    """1-based numbers of lines that begin a top-level declaration (outside long strings)."""
    starts: list[int] = []
    in_long = False
    for number, line in enumerate(lines, start=1):
        if not in_long and _DECL_START.match(line):
            starts.append(number)
        if line.count('"""') % 2 == 1:
            in_long = not in_long
    return starts


_TOKEN_NAMES = {
    "_NL": "end of line",
    "_INDENT": "indented block",
    "_DEDENT": "end of block",
    "$END": "end of file",
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "LONG_STRING": "a string",
    "FSTRING": "an f-string",
}


def _describe_terminals(names: set[str]) -> str:
    parser = _main_parser().lark
    labels: set[str] = set()
    for name in names:
        if name in _TOKEN_NAMES:
            labels.add(_TOKEN_NAMES[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            labels.add(name.lower())
            continue
        if pattern.type == "str":
            labels.add(f"`{pattern.value}`")
        else:
            labels.add(name.lower())
    ordered = sorted(labels)
    if len(ordered) > 8:
        ordered = ordered[:8] + ["…"]
    return ", ".join(ordered)


def _syntax_diagnostic(exc: UnexpectedInput, path: str, text: str) -> Diagnostic:
    quote = _quote_in_fstring_braces(text, getattr(exc, "line", 0) or 0, getattr(exc, "column", 0) or 0)
    if quote is not None:
        line, col = quote
        return Diagnostic(
            "E1005",
            'a string literal inside `{…}` of an f-string: its `"` ends the f-string there',
            path,
            line,
            col,
            line,
            col + 1,
            hint='bind the value to a name first (`let key = m["a"]`) and write `{key}`; '
            "an f-string's braces cannot hold a quote",
        )
    if isinstance(exc, UnexpectedCharacters):
        position = exc.pos_in_stream if exc.pos_in_stream is not None else -1
        char = text[position] if 0 <= position < len(text) else "?"
        shown = repr(char)[1:-1] if not char.isprintable() else char
        if char == '"':
            return Diagnostic(
                "E1001",
                "string is not closed on this line",
                path,
                exc.line,
                exc.column,
                hint='close the string with `"`, or use `"""` for text over several lines',
            )
        return Diagnostic("E1001", f"unexpected character `{shown}`", path, exc.line, exc.column)
    if isinstance(exc, UnexpectedEOF):
        return Diagnostic("E1003", "unexpected end of file", path, _last_line(text), 1)
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        expected = _describe_terminals(set(exc.expected))
        if token.type == "$END":
            return Diagnostic("E1003", f"unexpected end of file; expected {expected}", path, _last_line(text), 1)
        line, col = token.line or 1, token.column or 1
        if token.type == "_INDENT":
            line = token.end_line or line
            return Diagnostic(
                "E1004", "unexpected indentation", path, line, len(str(token)) + 1, hint=f"expected {expected}"
            )
        if token.type == "_DEDENT":
            return Diagnostic("E1003", f"block ends too early; expected {expected}", path, line, col)
        if token.type == "_NL":
            return Diagnostic("E1002", f"line ends too early; expected {expected}", path, line, col)
        shown = str(token) if len(str(token)) <= 30 else str(token)[:30] + "…"
        return Diagnostic(
            "E1002",
            f"unexpected `{shown}`; expected {expected}",
            path,
            line,
            col,
            token.end_line or line,
            token.end_column or col,
        )
    return Diagnostic("E1002", "syntax error", path, getattr(exc, "line", 1), getattr(exc, "column", 1))


def _quote_in_fstring_braces(text: str, line: int, col: int) -> tuple[int, int] | None:
    """Where an f-string before (line, col) on that line ends inside an open `{`, as the
    lexer reads `f"{m["a"]}"` (an f-string `f"{m["`, then the rest), or None. The scan
    follows the lexer's strings and comments; a line with a long string is left alone."""
    if line < 1:
        return None
    lines = text.split("\n")
    if line > len(lines) or '"""' in lines[line - 1]:
        return None
    source = lines[line - 1]
    index = 0
    while index < min(len(source), col - 1):
        ch = source[index]
        if ch == "#":
            return None
        if ch != '"':
            index += 1
            continue
        fstring = index > 0 and source[index - 1] == "f" and (index < 2 or not _is_name_char(source[index - 2]))
        depth, index = 0, index + 1
        while index < len(source) and source[index] != '"':
            if source[index] == "\\":
                index += 1
            elif fstring and depth == 0 and source.startswith(("{{", "}}"), index):
                index += 1  # a literal brace
            elif fstring and source[index] == "{":
                depth += 1
            elif fstring and source[index] == "}" and depth:
                depth -= 1
            index += 1
        if index < col - 1 and depth > 0:
            return line, index + 1
        index += 1
    return None


def _is_name_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _last_line(text: str) -> int:
    return max(1, text.rstrip("\n").count("\n") + 1)


def _assemble(decls: list[Any], path: str) -> tuple[ir.Module, list[Diagnostic]]:
    """Sort top-level declarations into the module's lists, in source order."""
    module = ir.Module(path=path)
    errors: list[Diagnostic] = []
    by_type: dict[type, list[Any]] = {
        ir.EnumDecl: module.enums,
        ir.RecordDecl: module.records,
        ir.StateDecl: module.state,
        ir.WorldDecl: module.world,
        ir.ScenarioDecl: module.scenarios,
        ir.FnDecl: module.fns,
        ir.ToolDecl: module.tools,
        ir.TestDecl: module.tests,
        ir.TaskDecl: module.tasks,
        ir.DropDecl: module.drops,
        ir.RenameDecl: module.renames,
        ir.DescribeDecl: module.describes,
        ir.OnLoadDecl: module.on_load,
        ir.LoadOptionsDecl: module.load_options,
    }
    for decl in decls:
        decl.file = path
        if isinstance(decl, ir.EnvHeader):
            if module.header is not None:
                errors.append(Diagnostic("E2001", "a spec has one `environment` header", path, decl.line, decl.col))
            else:
                module.header = decl
            continue
        by_type[type(decl)].append(decl)
    return module, errors
