"""`envc fmt`: print a parsed module back as `.envspec` text in one canonical style.

Three steps. `_Layout` turns the IR into a tree of `_Item`s (a printed line, or a block
header with indented children), each remembering the source line it starts on. `_attach`
gives every comment of the source to an item: a full-line comment leads the next item
(or closes a block it is indented into), a trailing comment stays on its line. `_Printer`
prints the tree. Comments come from `_Source`, a scan of the text that skips string
literals, because the IR does not keep them.

The style: 4-space indents; the header first, then declarations in source order, one
blank line apart; header, effect and task items in a fixed order, defaults left out;
one enum member per line; minimal escapes, and minimal parentheses but for
those written where they help reading (`not (a < b)`, `(a and b) or c`:
`written_parentheses`), which stay; a doc over one line (or
longer than DOC_WIDTH) as a `\"\"\"` block, else a plain string; no line wrapping, but a
list or map literal written over several lines keeps one entry per line. Blank lines
inside a block are kept (at most one in a row). The output parses to the same IR
(positions aside) and formatting it again changes nothing; tests/test_fmt.py checks
both, and that no comment is lost, on generated specs.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel

from compiler import ir
from compiler.diagnostics import Diagnostic
from compiler.front.parse import parse_source
from compiler.front.printer import (
    INDENT,
    POSTFIX,
    TERNARY,
    expr,
    keeping,
    loop_head,
    name_text,
    quote,
    readable_parentheses,
    simple_stmt,
    source,
    text,
    type_ref,
    verify_line,
)

POSITION_KEYS = frozenset(
    {
        "line",
        "col",
        "end_line",
        "end_col",
        "item_places",
        "param_lines",
        "param_cols",
        "intent_places",
        "noun_place",
        "request_places",
    }
)
"""Layout, not meaning: positions, and where each header item and `describe` line was written."""
DEFAULT_CLOCK: str = ir.EnvHeader.model_fields["clock"].default
DEFAULT_RNG: str = ir.EnvHeader.model_fields["rng"].default


# --------------------------------------------------------------------------- entry points


@dataclass
class FormatResult:
    text: str | None  # None when the input has syntax errors
    diagnostics: list[Diagnostic]


def format_source(text: str, path: str) -> FormatResult:
    """Format spec text; syntax errors come back as the parser's diagnostics."""
    parsed = parse_source(text, path)
    if parsed.module is None:
        return FormatResult(None, parsed.diagnostics)
    return FormatResult(format_module(parsed.module, text), [])


def format_module(module: ir.Module, source: str = "") -> str:
    """Print `module`; `source` (the text it was parsed from) supplies comments and layout."""
    src = _Source(source)
    with keeping(written_parentheses(module, source)):
        root = _Layout(src).module(module)
        _assign_ranges(root, src.nlines, src)
        _attach(root, src)
        return _Printer().module(root)


def written_parentheses(module: ir.Module, source: str) -> frozenset[int]:
    """`id()`s of the operands that `printer.readable_parentheses` allows in parentheses
    and that `source` wrote in them. An operand's position excludes its parentheses, so
    they are the nearest characters around it, past white space; in those positions no
    other bracket can sit right against an operand (a call's would hold a call, not a
    comparison or an `and`)."""
    if not source:
        return frozenset()
    text = source.removeprefix("\ufeff")
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    found: set[int] = set()
    for node in _expressions(module):
        for operand in readable_parentheses(node):
            if operand.line < 1 or operand.end_line < 1 or operand.end_line >= len(starts):
                continue
            begin = starts[operand.line - 1] + operand.col - 1
            end = starts[operand.end_line - 1] + operand.end_col - 1
            if _next_char(text, begin - 1, -1) == "(" and _next_char(text, end, 1) == ")":
                found.add(id(operand))
    return frozenset(found)


def _next_char(text: str, at: int, step: int) -> str:
    """The first character from `at` on, in direction `step`, that is not white space."""
    while 0 <= at < len(text) and text[at] in " \t\r\n":
        at += step
    return text[at] if 0 <= at < len(text) else ""


def _expressions(value: object) -> Iterator[ir.Unary | ir.Binary]:
    """Every `not`, `and` and `or` (the nodes that may keep parentheses) of an IR value."""
    if isinstance(value, list):
        for item in value:
            yield from _expressions(item)
    elif isinstance(value, BaseModel):
        if isinstance(value, (ir.Unary, ir.Binary)):
            yield value
        for name in type(value).model_fields:
            child = getattr(value, name)
            if isinstance(child, (list, BaseModel)):
                yield from _expressions(child)


def strip_positions(model: BaseModel) -> dict[str, Any]:
    """`model_dump()` without line/col/end_line/end_col: IR equality that ignores layout."""
    return cast(dict[str, Any], _strip(model.model_dump()))


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in POSITION_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


# --------------------------------------------------------------------------- source scan

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Comment:
    line: int
    indent: int  # width of the whitespace before `#`, as the indenter counts it
    text: str
    full_line: bool
    blank_before: bool = False


def _indent_width(text: str) -> int:
    prefix = text[: len(text) - len(text.lstrip(" \t"))]
    return prefix.count(" ") + prefix.count("\t") * 4


def _long_end(line: str, i: int) -> int:
    """Index just past the `\"\"\"` that closes a long string, or -1 if it runs on."""
    while i < len(line):
        if line[i] == "\\":
            i += 2
        elif line.startswith('"""', i):
            return i + 3
        else:
            i += 1
    return -1


def _short_end(line: str, i: int) -> int:
    """Index just past the quote closing a one-line string whose body starts at `i`."""
    while i < len(line):
        if line[i] == "\\":
            i += 2
        elif line[i] == '"':
            return i + 1
        else:
            i += 1
    return len(line)


_SPECIAL = re.compile(r'[#"\\]')


def _mask_line(line: str, in_long: bool) -> tuple[str, int, bool]:
    """Code of one line with string bodies blanked, the comment's column (-1 if none),
    and whether a long string is still open at the end of the line."""
    out: list[str] = []
    i = 0
    if in_long:
        i = _long_end(line, 0)
        if i < 0:
            return "", -1, True
        out.append('"')
    while (match := _SPECIAL.search(line, i)) is not None:
        out.append(line[i : match.start()])
        i = match.start()
        if line[i] == "#":
            return "".join(out), i, False
        if line[i] == "\\":  # outside strings a backslash only continues the line
            i += 1
            continue
        fstring = i > 0 and line[i - 1] == "f" and (i == 1 or not (line[i - 2].isalnum() or line[i - 2] == "_"))
        out.append('""')
        if not fstring and line.startswith('"""', i):
            i = _long_end(line, i + 3)
            if i < 0:
                return "".join(out), -1, True
        else:
            i = _short_end(line, i + 1)
    out.append(line[i:])
    return "".join(out), -1, False


class _Source:
    """What the IR does not keep: comments, blank lines, where each line's code starts."""

    def __init__(self, text: str) -> None:
        self.comments: list[_Comment] = []
        self.heads: dict[int, str] = {}  # line -> its code, when code starts the line
        self.indents: dict[int, int] = {}
        self.blank: set[int] = set()
        self.code: list[int] = []  # lines holding code, string bodies included
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        self.nlines = len(lines)
        in_long = False
        for number, raw in enumerate(lines, start=1):
            in_long = self._scan(number, raw[:-1] if raw.endswith("\r") else raw, in_long)
        for comment in self.comments:
            comment.blank_before = comment.line - 1 in self.blank

    def _scan(self, number: int, line: str, in_long: bool) -> bool:
        masked, comment_at, still_long = _mask_line(line, in_long)
        code = masked.strip()
        if in_long or code:
            self.code.append(number)
        if code and not in_long:
            self.heads[number] = code
            self.indents[number] = _indent_width(line)
        if comment_at >= 0:
            full = not code and not in_long
            self.comments.append(_Comment(number, _indent_width(line), line[comment_at:].rstrip(), full))
        elif not code and not in_long:
            self.blank.add(number)
        return still_long

    def head_word(self, line: int) -> str:
        head = self.heads.get(line, "")
        match = _WORD.match(head)
        return match.group() if match else head[:1]

    def starts_string(self, line: int) -> bool:
        head = self.heads.get(line, "")
        return head.startswith('"') or head.startswith('f"')

    def first_head(self, lo: int, hi: int) -> int:
        return next((n for n in range(max(lo, 1), hi + 1) if n in self.heads), 0)

    def find_head(self, lo: int, hi: int, word: str, indent: int | None = None) -> int:
        """First line in [lo, hi] whose code starts with `word` (at `indent`, if given)."""
        for n in range(max(lo, 1), hi + 1):
            if self.head_word(n) == word and (indent is None or self.indents.get(n) == indent):
                return n
        return 0

    def last_code(self, lo: int, hi: int) -> int:
        i = bisect.bisect_right(self.code, hi) - 1
        return self.code[i] if i >= 0 and self.code[i] >= lo else 0

    def indent(self, line: int) -> int:
        return self.indents.get(line, 0)


# --------------------------------------------------------------------------- layout


@dataclass(eq=False)
class _Item:
    """One printed line, or a block: a header line, indented children, maybe a closer."""

    text: str  # may hold newlines: a `\"\"\"` string, printed as is
    start: int = 0  # source line, 0 when unknown (then no comment attaches here)
    children: list[_Item] = field(default_factory=list)
    block: bool = False
    closer: str = ""  # `}` of a literal printed one entry per line
    closer_line: int = 0
    # Filled by _assign_ranges and _attach.
    end: int = 0
    kids: list[_Item] = field(default_factory=list)  # positioned children by start
    kid_starts: list[int] = field(default_factory=list)
    blank_before: bool = False
    leading: list[_Comment] = field(default_factory=list)
    trailing: list[str] = field(default_factory=list)
    closer_trailing: list[str] = field(default_factory=list)
    dangling: list[_Comment] = field(default_factory=list)


def _param_line(d: ir.DescribeDecl, name: str) -> str:
    """`param NAME "text"`, `param NAME "text" from SOURCE` or `param NAME from SOURCE`."""
    words = [f"param {name}"]
    if name in d.param_docs:
        words.append(text(d.param_docs[name]))
    if name in d.param_sources:
        words.append(f"from {source(d.param_sources[name])}")
    return " ".join(words)


def _block(text: str, start: int, children: list[_Item]) -> _Item:
    return _Item(text, start, children, block=True)


def _explodes(value: ir.Expr | None) -> bool:
    """A non-empty list or map literal written over several lines: one entry per line."""
    if isinstance(value, ir.MapLit):
        size = len(value.entries)
    elif isinstance(value, ir.ListLit):
        size = len(value.items)
    else:
        return False
    return size > 0 and 0 < value.line < value.end_line


class _Layout:
    """Builds the item tree; `src` locates what the IR has no positions for."""

    def __init__(self, src: _Source) -> None:
        self.src = src

    # ------------------------------------------------------------------ module
    def module(self, module: ir.Module) -> _Item:
        decls: list[ir.Decl] = [*module.enums, *module.records, *module.state, *module.world, *module.scenarios]
        decls += [*module.tools, *module.fns, *module.tests, *module.tasks, *module.families]
        decls += [*module.drops, *module.renames]
        decls += [*module.describes, *module.load_options, *module.on_load]
        decls += [*module.values, *module.personas, *module.describe_records]
        if module.header is not None:
            decls.append(module.header)
        decls.sort(key=lambda d: (d.line, d.col))
        starts = [d.line for d in decls]
        items: dict[int, _Item] = {}
        for d in decls:
            nxt = bisect.bisect_right(starts, d.line)
            bound = starts[nxt] - 1 if nxt < len(starts) and d.line else self.src.nlines
            items[id(d)] = self.decl(d, bound)
        order = sorted(decls, key=lambda d: not isinstance(d, ir.EnvHeader))
        return _block("", 1, [items[id(d)] for d in order])

    def decl(self, d: ir.Decl, bound: int) -> _Item:
        if isinstance(d, ir.EnvHeader):
            return self.header(d, bound)
        if isinstance(d, ir.EnumDecl):
            return self.enum(d, bound)
        if isinstance(d, ir.ToolDecl):
            return self.callable(d, bound)
        if isinstance(d, ir.TaskDecl):
            return self.task(d, bound)
        if isinstance(d, ir.FamilyDecl):
            return self.family(d, bound)
        if isinstance(d, ir.DropDecl):
            return _Item(f"drop {d.what} {d.name}", d.line)
        if isinstance(d, ir.RenameDecl):
            return _Item(f"rename {d.what} {d.old} as {d.new}", d.line)
        if isinstance(d, ir.DescribeDecl):
            return self.describe(d, bound)
        if isinstance(d, ir.DescribeRecordDecl):
            return self.describe_record(d)
        if isinstance(d, ir.ValuesDecl):
            return self.values(d)
        if isinstance(d, ir.PersonaDecl):
            return _Item(f"persona {text(d.text, long=True)}", d.line)
        if isinstance(d, ir.ScenarioDecl) and d.source:
            return _Item(f"scenario {d.name} from {quote(d.source)}", d.line)
        header, items = self.simple_decl(d)
        return _block(header, d.line, self.doc(d.doc, d.line, bound) + items)

    def simple_decl(self, d: ir.Decl) -> tuple[str, list[_Item]]:
        """Header line and items of the declarations that are plain lists of fields."""
        if isinstance(d, ir.RecordDecl) and d.is_union:
            return f"union {d.name} by {d.tag}:", [_Item(f"{m} = {quote(v)}", 0) for m, v in d.members.items()]
        if isinstance(d, ir.RecordDecl):
            return f"{'override ' if d.override else ''}record {d.name}:", [self.field(f) for f in d.fields]
        if isinstance(d, ir.StateDecl):
            return "state:", [self.field(f) for f in d.fields]
        if isinstance(d, ir.WorldDecl):
            return "world:", [self.world_field(f) for f in d.fields]
        if isinstance(d, ir.ScenarioDecl):
            return f"scenario {d.name}:", [self.scenario_item(i) for i in d.items]
        if isinstance(d, ir.TestDecl):
            return f"test {d.name}:", [self.test_step(s) for s in d.steps]
        if isinstance(d, ir.LoadOptionsDecl):
            return "load options:", [self.field(f) for f in d.fields]
        if isinstance(d, ir.OnLoadDecl):
            return f"{'override ' if d.override else ''}on load:", self.stmts(d.body)
        raise TypeError(f"cannot format {type(d).__name__}")

    def doc(self, doc: str, after: int, bound: int) -> list[_Item]:
        if not doc:
            return []
        line = self.src.first_head(after + 1, bound)
        return [_Item(text(doc, long=True), line if self.src.starts_string(line) else 0)]

    def value(self, prefix: str, value: ir.Expr, start: int, suffix: str = "") -> _Item:
        """`prefix value suffix`; a literal written over several lines keeps one entry per line."""
        if not _explodes(value):
            return _Item(prefix + expr(value) + suffix, start)
        if isinstance(value, ir.MapLit):
            opener, closer = "{", "}"
            entries = [(f"{expr(e.key, TERNARY)}: ", e.value, e.line) for e in value.entries]
        else:
            assert isinstance(value, ir.ListLit)
            opener, closer = "[", "]"
            entries = [("", item, item.line) for item in value.items]
        last = len(entries) - 1
        children = [self.value(p, v, line, "," if i < last else "") for i, (p, v, line) in enumerate(entries)]
        item = _block(prefix + opener, start, children)
        item.closer = closer + suffix
        item.closer_line = value.end_line if self.src.heads.get(value.end_line, "").startswith(closer) else 0
        return item

    # ------------------------------------------------------------------ declarations
    def header(self, h: ir.EnvHeader, bound: int) -> _Item:
        lines: list[tuple[str, str]] = []
        if h.title:
            lines.append(("title", f"title {quote(h.title)}"))
        if h.archetype:
            lines.append(("archetype", f"archetype {h.archetype}"))
        if h.domains:
            lines.append(("domains", "domains " + ", ".join(quote(d) for d in h.domains)))
        if h.doc:
            lines.append(("doc", "doc " + text(h.doc, long=True)))
        if h.extends:
            lines.append(("extends", f"extends {quote(h.extends)}"))
        if h.seed != 0 or not lines:  # the grammar wants at least one item
            lines.append(("seed", f"seed {h.seed}"))
        if h.rng != DEFAULT_RNG:
            lines.append(("rng", f"rng {h.rng}"))
        if h.clock != DEFAULT_CLOCK:
            lines.append(("clock", f"clock {quote(h.clock)}"))
        items = [_Item(text, self.src.find_head(h.line + 1, bound, key)) for key, text in lines]
        return _block(f"environment {h.name}:", h.line, items)

    def enum(self, e: ir.EnumDecl, bound: int) -> _Item:
        found = [
            (name, n)
            for n in range(e.line + 1, bound + 1)
            if n in self.src.heads and not self.src.starts_string(n)
            for name in _WORD.findall(self.src.heads[n])
        ]
        lines = [n for _, n in found] if [name for name, _ in found] == e.members else [0] * len(e.members)
        # One member per line; a quoted one ends with a comma (alone, it would read as a doc).
        texts = [name_text(name) + ("" if name_text(name) == name else ",") for name in e.members]
        members = [_Item(text, n) for text, n in zip(texts, lines)]
        return _block(f"enum {e.name}:", e.line, self.doc(e.doc, e.line, bound) + members)

    def field(self, f: ir.Field_) -> _Item:
        head = f"{name_text(f.name)}{'?' if f.absent else ''}: {type_ref(f.type)}"
        if f.source:
            return _Item(f"{head} from {quote(f.source)}", f.line)
        alias = f" alias {quote(f.alias)}" if f.alias else ""
        if f.default is None:
            return _Item(head + alias, f.line)
        return self.value(head + " = ", f.default, f.line, alias)

    def scenario_item(self, i: ir.ScenarioItem) -> _Item:
        if i.value is None:
            return _Item(f"{i.name} = from {quote(i.source)}", i.line)
        return self.value(f"{i.name} = ", i.value, i.line)

    def world_field(self, f: ir.WorldField) -> _Item:
        head = f"{f.name}: {type_ref(f.type)}"
        if f.value is None:
            return _Item(f"{head} from {quote(f.source)}", f.line)
        return self.value(head + " = ", f.value, f.line)

    def callable(self, t: ir.ToolDecl, bound: int) -> _Item:
        keyword = "fn" if isinstance(t, ir.FnDecl) else "tool"
        params = ", ".join(param(p) for p in t.params)
        head = f"{'override ' if t.override else ''}{keyword} {t.name}({params}) -> {type_ref(t.returns)}:"
        after = max(t.returns.end_line, t.line)
        body_start = t.escape.line if t.escape is not None else t.body[0].line if t.body else bound + 1
        effects = [_Item(text, self.src.find_head(after + 1, body_start - 1, key)) for key, text in _effects(t)]
        body = [self.escape(t.escape)] if t.escape is not None else self.stmts(t.body)
        return _block(head, t.line, self.doc(t.doc, after, bound) + effects + body)

    def describe(self, d: ir.DescribeDecl, bound: int) -> _Item:
        """`describe tool`: the doc, the intents in order, then each param line (text, source)."""
        intents = [_Item(f"intent {text(i)}", p.line) for i, p in zip(d.intents, d.intent_places, strict=False)]
        params = [_Item(_param_line(d, name), line) for name, line in d.param_lines.items()]
        doc = self.doc(d.doc, d.line, bound) or ([] if params or intents else [_Item('""', 0)])  # a block is not empty
        return _block(f"describe tool {d.name}:", d.line, doc + intents + params)

    def describe_record(self, d: ir.DescribeRecordDecl) -> _Item:
        """`describe record`: the noun, the refers, then the field sources."""
        noun = [_Item(f"noun {text(d.noun)}", d.noun_place.line)] if d.noun_place is not None else []
        refers = [_Item(f"refer {r.field}{' before' if r.before else ''} {text(r.template)}", r.line) for r in d.refers]
        fields = [_Item(f"field {name} from {source(ref)}", ref.line) for name, ref in d.field_sources.items()]
        return _block(f"describe record {d.name}:", d.line, noun + refers + fields)

    def values(self, d: ir.ValuesDecl) -> _Item:
        if d.source:
            return _Item(f"values {d.name} from {quote(d.source)}", d.line)
        last = max([d.line, *(item.end_line for item in d.items)])
        closer = next((n for n in range(last, d.end_line + 1) if self.src.heads.get(n, "").startswith("]")), last)
        return self.value(f"values {d.name} = ", ir.ListLit(items=d.items, line=d.line, end_line=closer), d.line)

    def escape(self, escape: ir.Escape) -> _Item:
        return _Item(f"{escape.kind} {text(escape.text)}", escape.line)

    def task(self, t: ir.TaskDecl, bound: int) -> _Item:
        indent = self.src.indents.get(self.src.first_head(t.line + 1, bound), -1)

        def find(word: str) -> int:
            return self.src.find_head(t.line + 1, bound, word, indent)

        items = self.doc(t.doc, t.line, bound)
        if t.scenario:
            items.append(_Item(f"scenario {t.scenario}", find("scenario")))
        if t.request or not (t.scenario or t.solution or t.verify):  # the grammar wants an item
            items.append(_Item(f"request {text(t.request)}", find("request")))
        if t.solution:
            start = find("solution") or self.src.last_code(1, t.solution[0].line - 1)
            items.append(_block("solution:", start, [_Item(expr(e), e.line) for e in t.solution]))
        items += [_Item(f"verify {expr(e)}", e.line) for e in t.verify]
        return _block(f"task {t.name}:", t.line, items)

    def family(self, f: ir.FamilyDecl, bound: int) -> _Item:
        """A family's lines in the order written (the IR keeps where each is); a line the IR
        has no place for (built, not parsed) is written first, if it says anything."""
        items = self.doc(f.doc, f.line, bound)
        defaults = ir.FamilyDecl(name=f.name)
        lines: list[tuple[int, _Item]] = []
        for key in ("kind", "scenario", "reward", "plan", "solution"):
            value = getattr(f, key)
            place = f.item_places.get(key)
            if place is None and value == getattr(defaults, key):
                continue
            line = place.line if place is not None else 0
            if key in ("plan", "solution"):
                lines.append((line, _block(f"{key}:", line, self.stmts(value))))
            else:
                lines.append((line, _Item(f"{key} {value}", line)))
        places = [p.line for p in f.request_places] + [0] * (len(f.requests) - len(f.request_places))
        lines += [(line, _Item(f"request {text(r)}", line)) for r, line in zip(f.requests, places, strict=False)]
        lines += [(v.line, _Item(verify_line(v), v.line)) for v in f.verify]
        items += [item for _, item in sorted(lines, key=lambda pair: pair[0])]
        return _block(f"family {f.name}:", f.line, items)

    def test_step(self, step: ir.TestStmt) -> _Item:
        if isinstance(step, ir.UseScenario):
            return _Item(f"scenario {step.name}", step.line)
        if isinstance(step, ir.TestLet):
            return self.value(f"let {step.name} = ", step.value, step.line)
        if isinstance(step, ir.TestCall):
            return _Item(expr(step.call), step.line)
        if isinstance(step, ir.ExpectRaises):
            message = f" {quote(step.message)}" if step.message else ""
            return _Item(f"{expr(step.call)} raises {step.error}{message}", step.line)
        return _Item(f"expect {expr(step.cond)}", step.line)

    # ------------------------------------------------------------------ statements
    def stmts(self, body: Sequence[ir.Stmt]) -> list[_Item]:
        return [item for s in body for item in self.stmt(s)]

    def stmt(self, s: ir.Stmt) -> list[_Item]:
        """A statement's items; an `if` gives one block per branch."""
        if isinstance(s, ir.If):
            return self.if_stmt(s)
        if isinstance(s, (ir.For, ir.While)):
            return [_block(loop_head(s), s.line, self.stmts(s.body))]
        if isinstance(s, ir.Let):
            annotation = f": {type_ref(s.type)}" if s.type is not None else ""
            return [self.value(f"let {s.name}{annotation} = ", s.value, s.line)]
        if isinstance(s, ir.Assign):
            return [self.value(f"{expr(s.target, POSTFIX)} {s.op} ", s.value, s.line)]
        return [_Item(simple_stmt(s), s.line)]

    def if_stmt(self, s: ir.If) -> list[_Item]:
        items = [
            _block(f"{'elif' if i else 'if'} {expr(b.cond)}:", b.line if i else s.line, self.stmts(b.body))
            for i, b in enumerate(s.branches)
        ]
        if s.orelse:
            start = self.src.last_code(1, s.orelse[0].line - 1) if s.orelse[0].line else 0
            items.append(_block("else:", start, self.stmts(s.orelse)))
        return items


def param(p: ir.Param) -> str:
    text = f"{p.name}: {type_ref(p.type)}"
    if p.default is not None:
        text += f" = {expr(p.default)}"
    return text + "".join(f" {c.kind} {expr(c.value)}" for c in p.constraints)


def _effects(t: ir.ToolDecl) -> list[tuple[str, str]]:
    """`reads`, `writes`, `side_effect` lines; an empty declared list is `nothing`."""
    lines: list[tuple[str, str]] = []
    for key, names in (("reads", t.declared_reads), ("writes", t.declared_writes)):
        if names is not None:
            lines.append((key, f"{key} {', '.join(names) or 'nothing'}"))
    if t.side_effect:
        lines.append(("side_effect", f"side_effect {quote(t.side_effect)}"))
    for p in t.params:
        if p.doc:
            lines.append(("param", f"param {p.name} {quote(p.doc)}"))
    return lines


# --------------------------------------------------------------------------- comments


def _assign_ranges(parent: _Item, bound: int, src: _Source) -> None:
    """Give each positioned child its source lines: up to the last code line before the
    next sibling (or `bound`, the parent's last line); list them by start on the parent."""
    parent.kids = sorted((k for k in parent.children if k.start > 0), key=lambda k: k.start)
    parent.kid_starts = [k.start for k in parent.kids]
    for k in parent.kids:
        nxt = bisect.bisect_right(parent.kid_starts, k.start)
        limit = parent.kid_starts[nxt] - 1 if nxt < len(parent.kids) else bound
        k.end = max(k.start, src.last_code(k.start, limit))
        k.blank_before = k.start - 1 in src.blank
        _assign_ranges(k, k.closer_line - 1 if k.closer_line else k.end, src)


def _attach(root: _Item, src: _Source) -> None:
    for comment in src.comments:
        node = _innermost(root, comment.line)
        if comment.full_line or node is root:
            _attach_full(node, comment, src)
        elif node.closer_line == comment.line:
            node.closer_trailing.append(comment.text)
        else:
            node.trailing.append(comment.text)


def _innermost(root: _Item, line: int) -> _Item:
    """The deepest item whose lines hold `line` (ranges of siblings never overlap)."""
    node = root
    while True:
        i = bisect.bisect_right(node.kid_starts, line) - 1
        if i < 0 or node.kids[i].end < line:
            return node
        node = node.kids[i]


def _attach_full(node: _Item, comment: _Comment, src: _Source) -> None:
    """Lead the next item, unless indented into the block just before; else close `node`."""
    before = bisect.bisect_left(node.kid_starts, comment.line) - 1
    after = bisect.bisect_right(node.kid_starts, comment.line)
    target = _open_block(node.kids[before], comment.indent, src) if before >= 0 else None
    if target is not None:
        target.dangling.append(comment)
    elif after < len(node.kids):
        node.kids[after].leading.append(comment)
    elif node.block:
        node.dangling.append(comment)
    else:
        node.leading.append(comment)


def _open_block(item: _Item, indent: int, src: _Source) -> _Item | None:
    """The deepest block ending `item` whose body a comment at `indent` sits in."""
    found = None
    node = item
    while node.block and not node.closer and src.indent(node.start) < indent:
        found = node
        if not node.kids:
            break
        node = node.kids[-1]
    return found


# --------------------------------------------------------------------------- printing


def _trail(comments: list[str]) -> str:
    return "  " + "  ".join(comments) if comments else ""


class _Printer:
    """Writes items; blank lines are requested, collapsed, and never open a block."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.pending = False
        self.at_start = True

    def module(self, root: _Item) -> str:
        for child in root.children:
            self.blank()
            self.item(child, 0)
        self.blank()
        self.comments(root.dangling, "")
        return "\n".join(self.lines) + "\n" if self.lines else ""

    def blank(self) -> None:
        self.pending = not self.at_start

    def line(self, text: str) -> None:
        if self.pending:
            self.lines.append("")
        self.pending = self.at_start = False
        self.lines.append(text)

    def comments(self, comments: list[_Comment], indent: str) -> None:
        for comment in comments:
            if comment.blank_before:
                self.blank()
            self.line(indent + comment.text)

    def item(self, item: _Item, depth: int) -> None:
        indent = INDENT * depth
        self.comments(item.leading, indent)
        if item.blank_before:
            self.blank()
        first, *rest = item.text.split("\n")
        self.line(indent + first)
        self.lines.extend(indent + text if text else "" for text in rest)  # a string's lines
        self.lines[-1] += _trail(item.trailing)
        if not item.block:
            return
        self.at_start, self.pending = True, False
        for child in item.children:
            self.item(child, depth + 1)
        self.comments(item.dangling, indent + INDENT)
        if item.closer:
            self.line(indent + item.closer + _trail(item.closer_trailing))
