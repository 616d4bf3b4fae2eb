"""Stage 1, parse, Lark's path: the IR builders, one per grammar rule.

`ToIR` turns what Lark's parser matched into IR nodes: run during the parse by the
inline parser (`lark_parser.InlineParser`, the reductions of Lark's tables), or over
Lark's parse tree (the path of input with errors). The problems a parse tree can still
hold (a bad escape, an integer over 64 bits, a malformed f-string, an expression nested
too deep) are reported to a `Collector` as diagnostics with positions. An f-string's
fields are expressions parsed by the parser that runs the builders, handed in as
`parse_expr` (this module does not drive Lark).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from lark import Token, Tree
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from compiler import ir
from compiler.diagnostics import Diagnostic
from compiler.front.grammar import (
    DEPTH_MEASURED,
    ESCAPE_RE,
    ESCAPES,
    INT64_MAX,
    LAMBDA_START,
    MAX_EXPR_DEPTH,
    clean_block,
    matching_brace,
    top_level,
)
from compiler.ir.typesys import FORMAT_SPEC


@dataclass
class Collector:
    """Errors found while building the IR (bad escapes, huge ints, bad f-strings)."""

    path: str
    errors: list[Diagnostic] = field(default_factory=list)
    result: list[Any] = field(default_factory=list)

    def add(
        self, code: str, message: str, line: int, col: int, end_line: int = 0, end_col: int = 0, hint: str = ""
    ) -> None:
        self.errors.append(Diagnostic(code, message, self.path, line, col, end_line, end_col, hint=hint))


def _pos(meta: Meta | Span | Token) -> dict[str, int]:
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


ExprParse = Callable[[str, Collector], Any]
"""Parses an f-string field's text as an expression, its errors to the collector: the
IR, or None when it is no expression."""

SpanTuple = tuple[int | None, int | None, int | None, int | None]
"""line, column, end line, end column of a token or rule (Lark's tokens may lack them)."""


class Span:
    """The position Lark's `propagate_positions` gives a rule's tree: from the start of
    its first positioned child to the end of its last. The inline parser hands this to
    the IR builders in place of a tree's `Meta` (same attribute names)."""

    __slots__ = ("line", "column", "end_line", "end_column", "empty")

    def __init__(self, span: SpanTuple | None) -> None:
        self.empty = span is None
        if span is not None:
            self.line, self.column, self.end_line, self.end_column = cast(tuple[int, int, int, int], span)


class ToIR(Transformer_NonRecursive):  # type: ignore[type-arg]
    """Builds IR nodes bottom-up without recursion, so deep input cannot overflow it.

    Each rule method takes (meta, children). Dispatch is done here rather than through
    Lark's `v_args`, which wraps the method anew for every node (a third of the time).
    It also measures expression depth: later stages walk the IR recursively, so an
    expression nested deeper than MAX_EXPR_DEPTH is refused here with E1008.
    """

    __visit_tokens__ = False

    def __init__(self, collector: Collector, parse_expr: ExprParse) -> None:
        super().__init__()
        self.c = collector
        self.parse_expr = parse_expr
        self.depths: dict[int, int] = {}
        self.span: SpanTuple | None = None  # of the rule the inline parser reduces

    def _call_userfunc(self, tree: Tree[Token], new_children: list[Any] | None = None) -> Any:
        children = new_children if new_children is not None else tree.children
        return self.build(str(tree.data), tree.meta, children)

    def build(self, rule: str, meta: Meta | Span, children: list[Any]) -> Any:
        """Run the IR builder of `rule` and record the depth of what it built."""
        method = getattr(self, rule, None)
        if method is None:
            raise AssertionError(f"no IR builder for grammar rule {rule}")
        result = method(meta, children)
        if isinstance(result, DEPTH_MEASURED) or rule == "args":
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
            if esc in ESCAPES:
                return ESCAPES[esc]
            self.c.add("E1006", f"invalid escape `\\{esc}` in string", token.line or 0, token.column or 0)
            return esc

        return ESCAPE_RE.sub(replace, body)

    def _string_value(self, token: Token) -> str:
        text = str(token)
        if text.startswith('"""'):
            # Like a Python docstring: the first line as written, the rest dedented.
            return clean_block(self._unescape(text[3:-3], token))
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
        *names, iterable, cond = children
        return {"targets": [str(name) for name in names], "iter": iterable, "cond": cond}

    def list_comp(self, meta: Meta, children: list[Any]) -> ir.Comprehension:
        elt, comp = children
        return ir.Comprehension(elt=elt, **comp, **_pos(meta))

    def map_comp(self, meta: Meta, children: list[Any]) -> ir.Comprehension:
        key, value, comp = children
        return ir.Comprehension(elt=key, value=value, **comp, **_pos(meta))

    # ------------------------------------------------------------------ operators
    def attr(self, meta: Meta, children: list[Any]) -> ir.Attr:
        return ir.Attr(obj=children[0], name=self._name_text(children[1]), **_pos(meta))

    def _name_text(self, token: Token) -> str:
        """A declared name as written: a NAME, or the text of a STRING (`"MA(5)"`), which
        names an enum member or record field that is no identifier."""
        return self._string_value(token) if token.type == "STRING" else str(token)

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

    def family_block(self, meta: Meta, children: list[Any]) -> list[Any]:
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
        *names, iterable, body = children
        return ir.For(targets=[str(name) for name in names], iter=iterable, body=body, **_pos(meta))

    def while_stmt(self, meta: Meta, children: list[Any]) -> ir.While:
        cond, word, limit, body = children
        if word is not None and str(word) != "max":
            self.c.add("E1002", f"unexpected `{word}`; expected `max`, `:`", word.line or 0, word.column or 0)
        bound = None if limit is None else int(str(limit))
        return ir.While(cond=cond, limit=bound, body=body, **_pos(meta))

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
        members = [self._name_text(t) for group in groups for t in group]
        return ir.EnumDecl(name=str(name), members=members, doc=doc, **_pos(meta))

    def field_decl(self, meta: Meta, children: list[Any]) -> ir.Field_:
        name, type_, default, alias = children
        return ir.Field_(name=str(name), type=type_, default=default, alias=alias or "", **_pos(meta))

    def field_alias(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0].value)

    def record_field(self, meta: Meta, children: list[Any]) -> ir.Field_:
        name, mark, type_, default, alias = children
        return ir.Field_(
            name=self._name_text(name),
            type=type_,
            default=default,
            absent=mark is not None,
            alias=alias or "",
            **_pos(meta),
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

    def describe_param(
        self, meta: Meta, children: list[Any]
    ) -> tuple[str, tuple[str, str | None, ir.SourceRef | None, Meta]]:
        """`param NAME "text"`, `param NAME "text" from SOURCE` or `param NAME from SOURCE`."""
        name, *rest = children
        text = next((str(c.value) for c in rest if isinstance(c, ir.Const)), None)
        source = next((c for c in rest if isinstance(c, ir.SourceRef)), None)
        return ("param", (str(name), text, source, meta))

    def describe_intent(self, meta: Meta, children: list[Any]) -> tuple[str, str, Meta]:
        return ("intent", str(children[0].value), meta)

    def describe_decl(self, meta: Meta, children: list[Any]) -> ir.DescribeDecl:
        name, *items = children
        doc, lines = _take_doc(items)
        decl = ir.DescribeDecl(name=str(name), doc=doc, **_pos(meta))
        for item in lines:
            if item[0] == "intent":
                decl.intents.append(item[1])
                decl.intent_places.append(ir.Node(**_pos(item[2])))
                continue
            param, text, source, where = item[1]
            if param in decl.param_lines:
                self.c.add("E2017", f"`param {param}` is given twice", where.line, where.column)
                continue
            if text is not None:
                decl.param_docs[param] = text
            if source is not None:
                decl.param_sources[param] = source
            decl.param_lines[param] = where.line
            decl.param_cols[param] = where.column
        return decl

    def source(self, meta: Meta, children: list[Any]) -> ir.SourceRef:
        name, *args = children
        return ir.SourceRef(name=str(name), args=[a for a in args if a is not None], **_pos(meta))

    def source_arg(self, meta: Meta, children: list[Any]) -> Any:
        sign, token = (None, children[0]) if len(children) == 1 else children
        if token.type == "STRING":
            return self._string_value(token)
        value = int(self.int_lit(meta, [token]).value or 0) if token.type == "INT" else float(token)
        return -value if sign is not None else value

    def describe_noun(self, meta: Meta, children: list[Any]) -> tuple[str, str, Meta]:
        return ("noun", str(children[0].value), meta)

    def describe_refer(self, meta: Meta, children: list[Any]) -> ir.Refer:
        field_, before, template = children
        return ir.Refer(field=str(field_), template=str(template.value), before=before is not None, **_pos(meta))

    def describe_field(self, meta: Meta, children: list[Any]) -> tuple[str, str, ir.SourceRef, Meta]:
        return ("field", str(children[0]), children[1], meta)

    def describe_record_decl(self, meta: Meta, children: list[Any]) -> ir.DescribeRecordDecl:
        name, *items = children
        decl = ir.DescribeRecordDecl(name=str(name), **_pos(meta))
        for item in items:
            if isinstance(item, ir.Refer):
                if any(r.field == item.field for r in decl.refers):
                    self.c.add("E2017", f"`refer {item.field}` is given twice", item.line, item.col)
                    continue
                decl.refers.append(item)
            elif item[0] == "noun":
                if decl.noun_place is not None:
                    self.c.add("E2017", "`noun` is given twice", item[2].line, item[2].column)
                    continue
                decl.noun, decl.noun_place = item[1], ir.Node(**_pos(item[2]))
            else:
                _, field_, source, where = item
                if field_ in decl.field_sources:
                    self.c.add("E2017", f"`field {field_}` is given twice", where.line, where.column)
                    continue
                decl.field_sources[field_] = source
        return decl

    def values_decl(self, meta: Meta, children: list[Any]) -> ir.ValuesDecl:
        name, *items = children
        return ir.ValuesDecl(name=str(name), items=[i for i in items if i is not None], **_pos(meta))

    def values_file(self, meta: Meta, children: list[Any]) -> ir.ValuesDecl:
        name, source = children
        return ir.ValuesDecl(name=str(name), source=str(source.value), **_pos(meta))

    def persona_decl(self, meta: Meta, children: list[Any]) -> ir.PersonaDecl:
        return ir.PersonaDecl(text=str(children[0].value), **_pos(meta))

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

    # ------------------------------------------------------------------ task families
    def family_kind(self, meta: Meta, children: list[Token]) -> tuple[str, Any, Meta]:
        return ("kind", children[0], meta)

    def family_reward(self, meta: Meta, children: list[Token]) -> tuple[str, Any, Meta]:
        return ("reward", children[0], meta)

    def family_plan(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("plan", children[0], meta)

    def family_request(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("request", children[0], meta)

    def family_solution(self, meta: Meta, children: list[Any]) -> tuple[str, Any, Meta]:
        return ("solution", children[0], meta)

    def family_each(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return (str(children[0]), children[1])

    def family_weight(self, meta: Meta, children: list[Token]) -> float:
        token = children[0]
        if token.type == "INT":
            return float(self.int_lit(meta, [token]).value or 0)
        return float(token)

    def family_verify(self, meta: Meta, children: list[Any]) -> ir.VerifyLine:
        each, cond, weight = children
        fields: dict[str, Any] = {"cond": cond}
        if each is not None:
            fields["each"], fields["over"] = each
        if weight is not None:
            fields["weight"] = weight
        return ir.VerifyLine(**fields, **_pos(meta))

    def family_decl(self, meta: Meta, children: list[Any]) -> ir.FamilyDecl:
        """A family's lines, each kind at most once but `request` and `verify` (E2017);
        `kind` and `reward` take one of their words (E2041)."""
        name, *rest = children
        doc, items = _take_doc(rest)
        values: dict[str, Any] = {"kind": "lookup", "scenario": "", "reward": "binary", "plan": [], "solution": []}
        requests: list[str] = []
        places: list[ir.Node] = []
        item_places: dict[str, ir.Node] = {}
        verify: list[ir.VerifyLine] = []
        for item in items:
            if isinstance(item, ir.VerifyLine):
                verify.append(item)
                continue
            value: Any
            if isinstance(item, ir.UseScenario):
                key, value = "scenario", item.name
                where = {"line": item.line, "col": item.col, "end_line": item.end_line, "end_col": item.end_col}
            else:
                key, value, where = item[0], item[1], _pos(item[2])
            if key == "request":
                requests.append(str(value.value))
                places.append(ir.Node(**where))
                continue
            if key in item_places:
                self.c.add("E2017", f"a family has one `{key}` line", where["line"], where["col"])
                continue
            item_places[key] = ir.Node(**where)
            if key in ("kind", "reward"):
                value = str(value)
                allowed = ir.FAMILY_KINDS if key == "kind" else ("binary", "partial")
                if value not in allowed:
                    self.c.add(
                        "E2041",
                        f"unknown family {key} `{value}`",
                        where["line"],
                        where["col"],
                        hint=f"`{key}` is one of: {', '.join(allowed)}",
                    )
                    continue
            values[key] = value
        return ir.FamilyDecl(
            name=str(name),
            doc=doc,
            **values,
            requests=requests,
            verify=verify,
            request_places=places,
            item_places=item_places,
            **_pos(meta),
        )

    def start(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children


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


def _parse_fstring(token: Token, builder: ToIR) -> ir.Expr:
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
            end = matching_brace(text, i)
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


FORMAT_SPEC_HINT = (
    "a spec is [[fill]align][sign][#][0][width][,|_][.precision][type]: align < > ^ =, sign + - or space, "
    "width and precision up to 3 digits, type s, d b o x X (ints), e E f F g G % (numbers); e.g. `{total:>10,.2f}`"
)


def _parse_fstring_field(source: str, line: int, col: int, builder: ToIR) -> ir.Expr | None:
    """One `{…}` of an f-string: an expression, with an optional `:spec` after it."""
    # A lambda's `:` is its own (the analyser refuses a lambda there, E3015).
    split = -1 if LAMBDA_START.match(source) else top_level(source, ":")
    bang = top_level(source, "!")
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


def _parse_fstring_expr(source: str, line: int, col: int, builder: ToIR) -> ir.Expr | None:
    if not source.strip():
        builder.c.add("E1005", "empty `{}` in f-string", line, col)
        return None
    inner = Collector(builder.c.path)
    tree = builder.parse_expr(source, inner)
    if tree is None:
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
