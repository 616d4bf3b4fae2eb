"""Hypothesis strategies for `.envspec` text: random valid specs, and broken real ones.

`specs()` writes specs from every construct of the grammar with a random layout: indent
width, blank lines, comments, extra parentheses, trailing commas, literals and argument
lists over several lines. Every compound subexpression is parenthesised, so the text
says exactly which tree it means and a printer must work out which parentheses it may
drop. Each comment carries a numbered mark (`COMMENT_MARK`) that never occurs in a
string, so a test can check that no comment is lost.

`mutated_specs()` damages a real spec (lines deleted, duplicated, swapped, characters or
tokens inserted, text cut short) to check that stages report errors instead of raising.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import strategies as st
from shipped import spec_path

ROOT = Path(__file__).resolve().parent.parent
TICKETING = spec_path("ticketing")

COMMENT_MARK = "¤"
COMMENT_MARK_RE = re.compile(COMMENT_MARK + r"\d+")

NAMES = ["a", "b", "c", "xs", "item", "total", "user", "k", "v", "n_1", "_tmp", "Status", "ticket_id"]
TYPE_NAMES = ["int", "str", "float", "bool", "datetime", "json", "Ticket", "Status"]
ERROR_KINDS = ["not_found", "invalid_state", "invalid_argument", "unauthenticated"]
CONSTRAINTS = ["min", "max", "min_length", "max_length", "min_items", "max_items", "pattern"]
BINARY_OPS = ["or", "and", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not"]
BINARY_OPS += ["+", "-", "*", "/", "//", "%"]
EXPR_KINDS = ["binary", "unary", "ternary", "attr", "index", "slice", "call", "list", "map"]
EXPR_KINDS += ["list_comp", "map_comp", "lambda"]
# Characters a string value is drawn from: quotes, backslashes, braces, `#`, escapes.
STRING_CHARS = list("ab Z09_\"\\{}#\n\t\r\x00é€\u2028\U0001f600'")
COMMENT_CHARS = list("abc xyz-_#\"'{}()é:.,")


class SpecWriter:
    """Writes one random spec; `draw` is Hypothesis's, so failures shrink."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.unit = draw(st.sampled_from([2, 3, 4, 8]))
        self.comments = 0

    # ------------------------------------------------------------------ choices
    def flip(self, percent: int = 50) -> bool:
        return self.draw(st.integers(0, 99)) < percent

    def pick(self, options: list[str]) -> str:
        return self.draw(st.sampled_from(options))

    def count(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def indent(self, level: int) -> str:
        return " " * (self.unit * level)

    def name(self) -> str:
        return self.pick(NAMES)

    # ------------------------------------------------------------------ comments
    def comment(self) -> str:
        self.comments += 1
        words = self.draw(st.text(st.sampled_from(COMMENT_CHARS), max_size=8))
        return f"#{self.pick(['', ' '])}{COMMENT_MARK}{self.comments} {words}"

    def trail(self) -> str:
        return f"{self.pick([' ', '  ', '   '])}{self.comment()}" if self.flip(20) else ""

    def noise(self, level: int) -> list[str]:
        """Blank lines and full-line comments that may precede a line at `level`."""
        lines: list[str] = []
        for _ in range(self.count(0, 2) if self.flip(30) else 0):
            if self.flip(40):
                lines.append("")
            else:
                shift = self.pick(["same", "same", "deeper", "left"])
                width = len(self.indent(level)) + {"same": 0, "deeper": 2, "left": -self.unit}[shift]
                lines.append(" " * max(width, 0) + self.comment())
        return lines

    # ------------------------------------------------------------------ strings
    def string_value(self, max_size: int = 8) -> str:
        return self.draw(st.text(st.sampled_from(STRING_CHARS), max_size=max_size))

    def escape(self, ch: str, in_fstring: bool) -> str:
        if in_fstring and ch in "{}":
            return ch * 2
        if ch == '"':
            return self.pick(['\\"', "\\u0022"])
        if ch == "\\":
            return self.pick(["\\\\", "\\u005c"])
        if ch in "{}":
            return self.pick([ch, "\\" + ch])
        named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}
        if ch in named:
            return named[ch]
        if not ch.isprintable():
            return f"\\u{ord(ch):04x}"
        if ord(ch) < 0x10000 and self.flip(10):
            return f"\\u{ord(ch):04X}"
        return ch

    def string(self, max_size: int = 8) -> str:
        return '"' + "".join(self.escape(ch, False) for ch in self.string_value(max_size)) + '"'

    def fstring(self) -> str:
        out = ['f"']
        for _ in range(self.count(0, 3)):
            if self.flip():
                out.append("".join(self.escape(ch, True) for ch in self.string_value(4)))
            else:
                inner = self.expr(self.count(0, 2), strings=False, multiline=False)
                pad = " " if inner.startswith("{") or self.flip(20) else ""
                out.append("{" + pad + inner + pad + "}")
        return "".join(out) + '"'

    def prose(self) -> str:
        """Text for docs and requests: a line, or several as a `\"\"\"` block."""
        lines = [
            self.draw(st.text(st.sampled_from(list("abc xyz#{}'\".,")), min_size=1, max_size=12))
            for _ in range(self.count(1, 3))
        ]
        lines = [line.replace('"', "'") for line in lines]
        if len(lines) == 1 and self.flip():
            return self.string(12)
        return '"""' + "\n".join(lines) + '"""'

    # ------------------------------------------------------------------ expressions
    def atom(self, strings: bool) -> str:
        kinds = ["name", "int", "float", "const"] + (["string", "fstring"] if strings else [])
        kind = self.pick(kinds)
        if kind == "name":
            return self.name()
        if kind == "int":
            value = self.count(0, 10**6)
            return f"{value:_}" if self.flip(20) else str(value)
        if kind == "float":
            return self.pick(["1.5", "0.25", "2e3", "1.0e-5", "3E+2", "1e999", "10.0"])
        if kind == "const":
            return self.pick(["True", "False", "None"])
        return self.string() if kind == "string" else self.fstring()

    def sub(self, depth: int, strings: bool, multiline: bool) -> str:
        """A subexpression: parenthesised unless an atom (which may get parentheses anyway)."""
        if depth <= 0 or self.flip(30):
            atom = self.atom(strings)
            return f"({atom})" if self.flip(10) else atom
        return "(" + self.compound(depth, strings, multiline) + ")"

    def expr(self, depth: int, strings: bool = True, multiline: bool = True) -> str:
        if depth <= 0 or self.flip(25):
            return self.atom(strings)
        return self.compound(depth, strings, multiline)

    def compound(self, depth: int, strings: bool, multiline: bool) -> str:
        kind = self.pick(EXPR_KINDS)
        d = depth - 1

        def sub() -> str:
            return self.sub(d, strings, multiline)

        def full() -> str:
            return self.expr(d, strings, multiline)

        if kind == "binary":
            return f"{sub()} {self.pick(BINARY_OPS)} {sub()}"
        if kind == "unary":
            return f"{self.pick(['-', 'not '])}{sub()}"
        if kind == "ternary":
            return f"{sub()} if {sub()} else {sub()}"
        if kind == "attr":
            return f"{sub()}.{self.name()}"
        if kind == "index":
            return f"{sub()}[{full()}]"
        if kind == "slice":
            lower = full() if self.flip() else ""
            upper = full() if self.flip() else ""
            return f"{sub()}[{lower}:{upper}]"
        if kind == "call":
            args = [full() for _ in range(self.count(0, 2))] + [
                f"{self.name()}={full()}" for _ in range(self.count(0, 2))
            ]
            args = self.draw(st.permutations(args)) if args else args
            return f"{sub()}{self.bracketed('(', args, ')', multiline)}"
        if kind == "list":
            return self.bracketed("[", [full() for _ in range(self.count(0, 3))], "]", multiline)
        if kind == "map":
            return self.bracketed("{", [f"{sub()}: {full()}" for _ in range(self.count(0, 3))], "}", multiline)
        targets = self.name() + (f", {self.name()}" if self.flip(30) else "")
        loop = f" for {targets} in {sub()}" + (f" if {sub()}" if self.flip() else "")
        if kind == "list_comp":
            return f"[{full()}{loop}]"
        if kind == "map_comp":
            return f"{{{sub()}: {full()}{loop}}}"
        params = ", ".join(self.name() for _ in range(self.count(1, 2)))
        return f"lambda {params}: {full()}"

    def bracketed(self, opener: str, items: list[str], closer: str, multiline: bool) -> str:
        """Items between brackets, on one line or one per line (with comments), maybe a trailing comma."""
        comma = "," if items and self.flip(30) else ""
        if not multiline or not items or self.flip(60):
            return opener + ", ".join(items) + comma + closer
        pad = " " * self.count(0, 6)
        lines = [f"{pad}{item}{',' if i < len(items) - 1 else comma}{self.trail()}" for i, item in enumerate(items)]
        head = opener + (self.trail() if self.flip(30) else "")
        tail = ("\n" + closer) if COMMENT_MARK in lines[-1] or self.flip() else closer
        return head + "\n" + "\n".join(lines) + tail

    def type(self, depth: int = 2) -> str:
        if depth <= 0 or self.flip(50):
            return self.pick(TYPE_NAMES + ["None"])
        shape = self.pick(["list", "map", "optional"])
        if shape == "map":
            return f"map[{self.pick(['str', 'int'])}, {self.type(depth - 1)}]"
        return f"{shape}[{self.type(depth - 1)}]"

    # ------------------------------------------------------------------ statements
    def block(self, level: int, depth: int) -> list[str]:
        lines: list[str] = []
        for _ in range(self.count(1, 3)):
            lines += self.noise(level) + self.stmt(level, depth)
        return lines

    def stmt(self, level: int, depth: int) -> list[str]:
        ind = self.indent(level)
        kinds = ["let", "assign", "aug", "return", "require", "fail", "del", "expr", "pass", "break", "continue"]
        kind = self.pick(kinds + (["if", "for"] * 2 if depth > 0 else []))
        if kind == "if":
            return self.if_stmt(level, depth)
        if kind == "for":
            targets = self.name() + (f", {self.name()}" if self.flip(30) else "")
            return [f"{ind}for {targets} in {self.expr(2)}:{self.trail()}"] + self.block(level + 1, depth - 1)
        return [ind + self.simple_stmt(kind) + self.trail()]

    def simple_stmt(self, kind: str) -> str:
        if kind == "let":
            annotation = f": {self.type()}" if self.flip(30) else ""
            return f"let {self.name()}{annotation} = {self.expr(3)}"
        if kind in ("assign", "aug"):
            op = "=" if kind == "assign" else self.pick(["+=", "-="])
            return f"{self.target()} {op} {self.expr(3)}"
        if kind == "return":
            return "return" + (f" {self.expr(3)}" if self.flip(80) else "")
        if kind == "require":
            return f"require {self.expr(3)} else {self.error_call()}"
        if kind == "fail":
            return f"fail {self.error_call()}"
        if kind == "del":
            return f"del {self.target()}"
        if kind == "expr":
            return f"{self.sub(1, True, True)}({self.expr(2)})"
        return kind

    def target(self) -> str:
        shape = self.pick(["name", "attr", "index"])
        if shape == "name":
            return self.name()
        if shape == "attr":
            return f"{self.name()}.{self.name()}"
        return f"{self.name()}[{self.expr(2)}]"

    def error_call(self) -> str:
        args = [self.expr(2)] if self.flip(70) else []
        args += [f"{self.pick(['entity', 'field', 'allowed'])}={self.expr(2)}" for _ in range(self.count(0, 2))]
        return f"{self.pick(ERROR_KINDS)}({', '.join(args)})"

    def if_stmt(self, level: int, depth: int) -> list[str]:
        ind = self.indent(level)
        lines = [f"{ind}if {self.expr(3)}:{self.trail()}"] + self.block(level + 1, depth - 1)
        for _ in range(self.count(0, 2)):
            lines += self.noise(level) + [f"{ind}elif {self.expr(2)}:{self.trail()}"] + self.block(level + 1, depth - 1)
        if self.flip():
            lines += self.noise(level) + [f"{ind}else:{self.trail()}"] + self.block(level + 1, depth - 1)
        return lines

    # ------------------------------------------------------------------ declarations
    def lines_of(self, header: str, items: list[list[str]], level: int = 1) -> list[str]:
        """A block: header, then each item (a list of lines) after optional noise."""
        out = [header + self.trail()]
        for item in items:
            out += self.noise(level) + item
        return out

    def doc(self, level: int) -> list[list[str]]:
        if not self.flip(30):
            return []
        text = self.prose()
        ind = self.indent(level)
        return [[ind + line if line else "" for line in text.split("\n")]]

    def header(self) -> list[str]:
        ind = self.indent(1)
        candidates = {
            "title": f"title {self.string()}",
            "archetype": f"archetype {self.name()}",
            "domains": "domains " + ", ".join(self.string() for _ in range(self.count(1, 3))),
            "doc": "doc " + self.prose().replace("\n", "\n" + ind),
            "extends": f"extends {self.string()}",
            "seed": f"seed {self.count(0, 99)}",
            "clock": "clock " + self.pick(['"2025-01-01T09:00:00"', '"2030-06-01T00:00:00"', '""']),
        }
        keys = self.draw(st.lists(st.sampled_from(sorted(candidates)), min_size=1, max_size=7, unique=True))
        return self.lines_of("environment demo_env:", [[ind + candidates[k] + self.trail()] for k in keys])

    def field(self, level: int, need_default: bool = False, absent: bool = False) -> list[str]:
        """A field line: `name: T = default`, in a record maybe `name?: T`, maybe with
        `alias "key"` (a foreign scenario's name; the parser takes it on any field)."""
        text = f"{self.name()}{'?' if absent and self.flip(20) else ''}: {self.type()}"
        if need_default or self.flip():
            text += f" = {self.expr(2)}"
        if self.flip(15):
            text += f" alias {self.string()}"
        return [self.indent(level) + text + self.trail()]

    def data_file(self) -> str:
        return f'"data_{self.count(0, 9)}.json"'

    def enum(self) -> list[str]:
        members = [f"m{i}" for i in range(self.count(1, 5))]
        groups: list[list[str]] = []
        for member in members:
            if groups and self.flip():
                groups[-1].append(member)
            else:
                groups.append([member])
        lines = [[self.indent(1) + ", ".join(group) + self.trail()] for group in groups]
        return self.lines_of(f"enum E{self.count(0, 9)}:", self.doc(1) + lines)

    def record(self) -> list[str]:
        override = "override " if self.flip(20) else ""
        fields = [self.field(1, absent=True) for _ in range(self.count(1, 3))]
        return self.lines_of(f"{override}record R{self.count(0, 9)}:", self.doc(1) + fields)

    def union(self) -> list[str]:
        members = [[f'{self.indent(1)}R{index} = "tag_{index}"{self.trail()}'] for index in range(self.count(1, 3))]
        return self.lines_of(f"union U{self.count(0, 9)} by {self.name()}:", self.doc(1) + members)

    def state(self) -> list[str]:
        fields = [
            [f"{self.indent(1)}{self.name()}: {self.type()} from {self.data_file()}{self.trail()}"]
            if self.flip(20)
            else self.field(1, True)
            for _ in range(self.count(1, 3))
        ]
        return self.lines_of("state:", self.doc(1) + fields)

    def load_options(self) -> list[str]:
        return self.lines_of("load options:", self.doc(1) + [self.field(1) for _ in range(self.count(1, 3))])

    def on_load(self) -> list[str]:
        override = "override " if self.flip(20) else ""
        return self.lines_of(f"{override}on load:", self.doc(1) + [self.block(1, 2)])

    def describe(self) -> list[str]:
        doc = self.doc(1)
        names = self.draw(st.lists(st.sampled_from(NAMES), min_size=0 if doc else 1, max_size=2, unique=True))
        params = [[f"{self.indent(1)}param {name} {self.param_words()}{self.trail()}"] for name in names]
        intents = [[f"{self.indent(1)}intent {self.string()}{self.trail()}"] for _ in range(self.count(0, 2))]
        items = params + intents
        if self.flip():
            items.reverse()
        return self.lines_of(f"describe tool t{self.count(0, 9)}:", doc + items)

    def param_words(self) -> str:
        """A `describe tool` param line's text, source or both."""
        choice = self.count(0, 2)
        if choice == 0:
            return self.string()
        return f"{self.string() + ' ' if choice == 1 else ''}from {self.source()}"

    def source(self) -> str:
        """A value source: a name, or a name with literal arguments."""
        name = self.pick(["person_name", "amount", "titles", "integer"])
        if self.flip(60):
            return name
        literals = [str(self.count(-5, 500)), f"{self.count(0, 99)}.5", self.string(4)]
        args = [self.pick(literals) for _ in range(self.count(0, 3))]
        return f"{name}({', '.join(args)})"

    def describe_record(self) -> list[str]:
        items: list[list[str]] = []
        if self.flip():
            items.append([f"{self.indent(1)}noun {self.string()}{self.trail()}"])
        for field_ in self.draw(st.lists(st.sampled_from(NAMES), max_size=2, unique=True)):
            before = " before" if self.flip(30) else ""
            items.append([f"{self.indent(1)}refer {field_}{before} {self.string()}{self.trail()}"])
        for field_ in self.draw(st.lists(st.sampled_from(NAMES), min_size=0 if items else 1, max_size=2, unique=True)):
            items.append([f"{self.indent(1)}field {field_} from {self.source()}{self.trail()}"])
        return self.lines_of(f"describe record R{self.count(0, 9)}:", items)

    def values(self) -> list[str]:
        name = f"pool_{self.count(0, 9)}"
        if self.flip(30):
            return [f'values {name} from "pool_{self.count(0, 9)}.json"{self.trail()}']
        items = [self.string() if self.flip() else str(self.count(-9, 99)) for _ in range(self.count(1, 3))]
        return [f"values {name} = [{', '.join(items)}]{self.trail()}"]

    def persona(self) -> list[str]:
        return [f"persona {self.string()}{self.trail()}"]

    def world(self) -> list[str]:
        fields = []
        for _ in range(self.count(1, 3)):
            source = f' from "data_{self.count(0, 9)}.json"'
            value = source if self.flip(30) else f" = {self.expr(2)}"
            fields.append([f"{self.indent(1)}{self.name()}: {self.type()}{value}{self.trail()}"])
        return self.lines_of("world:", self.doc(1) + fields)

    def scenario(self) -> list[str]:
        name = f"s{self.count(0, 9)}"
        if self.flip(15):
            return [f"scenario {name} from {self.data_file()}{self.trail()}"]
        items = [
            [
                f"{self.indent(1)}{self.name()} = {'from ' + self.data_file() if self.flip(15) else self.expr(3)}{self.trail()}"
            ]
            for _ in range(self.count(1, 3))
        ]
        return self.lines_of(f"scenario {name}:", self.doc(1) + items)

    def param(self) -> str:
        text = f"{self.name()}: {self.type()}"
        if self.flip(40):
            text += f" = {self.expr(2)}"
        for _ in range(self.count(0, 2)):
            text += f" {self.pick(CONSTRAINTS)} {self.expr(1)}"
        return text

    def callable(self) -> list[str]:
        keyword = self.pick(["tool", "fn"])
        override = "override " if self.flip(20) else ""
        params = [self.param() for _ in range(self.count(0, 3))]
        head = f"{override}{keyword} {keyword[0]}{self.count(0, 9)}{self.bracketed('(', params, ')', True)} -> {self.type()}:"
        items = self.doc(1)
        effects = {
            "reads": "reads " + self.field_list(),
            "writes": "writes " + self.field_list(),
            "side_effect": f"side_effect {self.string()}",
        }
        chosen = self.draw(st.lists(st.sampled_from(sorted(effects)), max_size=3, unique=True))
        items += [[self.indent(1) + effects[k] + self.trail()] for k in chosen]
        if self.flip(15):
            items.append(self.escape_body())
        else:
            items.append(self.block(1, 2))
        return self.lines_of(head, items)

    def field_list(self) -> str:
        return "nothing" if self.flip(20) else ", ".join(self.name() for _ in range(self.count(1, 2)))

    def escape_body(self) -> list[str]:
        ind = self.indent(1)
        kind = self.pick(["python", "llm"])
        if self.flip():
            return [f"{ind}{kind} {self.string()}{self.trail()}"]
        code = ["x = 1", "if x:", "    return {'a': x}", "", 'print("hi")  # not a comment']
        body = [ind + line if line else "" for line in code[: self.count(1, len(code))]]
        return [f'{ind}{kind} """'] + body + [f'{ind}"""{self.trail()}']

    def test(self) -> list[str]:
        ind = self.indent(1)
        steps: list[list[str]] = []
        for _ in range(self.count(1, 4)):
            kind = self.pick(["scenario", "let", "call", "raises", "expect"])
            call = f"{self.name()}({self.expr(2)})"
            text = {
                "scenario": f"scenario s{self.count(0, 9)}",
                "let": f"let {self.name()} = {self.expr(3)}",
                "call": call,
                "raises": f"{call} raises {self.pick(ERROR_KINDS)}" + (f" {self.string()}" if self.flip() else ""),
                "expect": f"expect {self.expr(3)}",
            }[kind]
            steps.append([ind + text + self.trail()])
        return self.lines_of(f"test t{self.count(0, 9)}:", self.doc(1) + steps)

    def task(self) -> list[str]:
        ind = self.indent(1)
        candidates: list[list[str]] = []
        if self.flip():
            candidates.append([f"{ind}scenario s{self.count(0, 9)}{self.trail()}"])
        if self.flip():
            candidates.append([ind + "request " + self.prose().replace("\n", "\n" + ind) + self.trail()])
        for _ in range(self.count(0, 2)):
            exprs = [self.noise(2) + [self.indent(2) + self.expr(2) + self.trail()] for _ in range(self.count(1, 2))]
            candidates.append([f"{ind}solution:{self.trail()}"] + [line for e in exprs for line in e])
        for _ in range(self.count(0 if candidates else 1, 2)):
            candidates.append([f"{ind}verify {self.expr(3)}{self.trail()}"])
        items = self.draw(st.permutations(candidates))
        return self.lines_of(f"task k{self.count(0, 9)}:", self.doc(1) + list(items))

    def drop(self) -> list[str]:
        return [f"drop {self.pick(['tool', 'scenario', 'test', 'task', 'fn'])} x{self.count(0, 9)}{self.trail()}"]

    def rename(self) -> list[str]:
        kind = self.pick(["tool", "fn", "record", "enum", "scenario", "state", "param"])
        return [f"rename {kind} {self.name()} as {self.name()}{self.trail()}"]

    def spec(self) -> str:
        makers = [self.enum, self.record, self.state, self.world, self.scenario, self.callable, self.test, self.task]
        makers += [self.drop, self.rename, self.union, self.load_options, self.on_load, self.describe]
        makers += [self.describe_record, self.values, self.persona]
        decls = [self.draw(st.sampled_from(makers))() for _ in range(self.count(0, 4))]
        if self.flip(80):
            decls.insert(self.count(0, len(decls)) if self.flip(20) else 0, self.header())
        lines: list[str] = []
        for decl in decls:
            lines += self.noise(0) + [""] * self.count(0, 2) + decl
        lines += self.noise(0)
        return "\n".join(lines) + ("\n" if self.flip(90) else "")


@st.composite
def specs(draw: st.DrawFn) -> str:
    """A random spec that parses: every construct, random layout, marked comments."""
    return SpecWriter(draw).spec()


@st.composite
def expressions(draw: st.DrawFn, depth: int = 4) -> str:
    """A random expression, fully parenthesised, on one line."""
    return SpecWriter(draw).expr(depth, multiline=False)


# --------------------------------------------------------------------------- mutations

TOKENS = ["(", ")", "[", "]", "{", "}", ":", ",", '"', '"""', "f", "#", "\\", "\n", "    ", "\t", "=", "->"]
TOKENS += ["if", "else", "not", "lambda", "for", "in", "tool", "override", "raises", "1e999", "99999999999999999999"]
TOKENS += ["\\u12", "{{", "}}", "\r", "\x00", "é", "solution:", "drop tool", "python"]


def mutated_specs(source: str | None = None) -> st.SearchStrategy[str]:
    """A window of a real spec (ticketing by default) with one to four random mutations.

    The text is read here, once: a file re-read on every draw could change between them.
    """
    text = source if source is not None else TICKETING.read_text(encoding="utf-8")
    return _mutated(text.split("\n"))


@st.composite
def _mutated(draw: st.DrawFn, lines: list[str]) -> str:
    start = draw(st.integers(0, len(lines) - 1))
    lines = lines[start : start + draw(st.integers(1, 40))]
    for _ in range(draw(st.integers(1, 4))):
        lines = _mutate(draw, lines)
    return "\n".join(lines)


def _mutate(draw: st.DrawFn, lines: list[str]) -> list[str]:
    if not lines:
        return [draw(st.sampled_from(TOKENS))]
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    actions = ["delete", "duplicate", "swap", "insert", "insert", "truncate", "dedent", "fstring"]
    action = draw(st.sampled_from(actions))
    if action == "delete":
        return lines[:i] + lines[i + 1 :]
    if action == "duplicate":
        return lines[: i + 1] + [lines[i]] + lines[i + 1 :]
    if action == "swap":
        lines = list(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines
    if action == "dedent":
        return lines[:i] + [lines[i].lstrip()] + lines[i + 1 :]
    if action == "fstring" and '"' in lines[i]:
        return lines[:i] + [lines[i].replace('"', 'f"', 1)] + lines[i + 1 :]
    text = "\n".join(lines)
    at = draw(st.integers(0, len(text)))
    if action == "truncate":
        return text[:at].split("\n")
    token = draw(st.sampled_from(TOKENS) | st.text(max_size=3))
    return (text[:at] + token + text[at:]).split("\n")
