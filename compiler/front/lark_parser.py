"""Stage 1, parse, Lark's path: the reference parser, and the path of every syntax
diagnostic.

The grammar (`grammar/envspec.lark`) is compiled to LALR tables once per process
(`main_parser`). `EnvspecIndenter` makes Python-style INDENT/DEDENT tokens. Valid input
is parsed by `InlineParser`, which runs the IR builders (`lark_builders.ToIR`) on each
reduction of Lark's tables; anything it refuses is parsed again tree first, and Lark's
exception becomes the diagnostic (`try_parse`). After a syntax error the text is parsed
again from the next top-level declaration (`errors_after`), so one run reports the
errors of every declaration.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import Indenter
from lark.parse_tree_builder import ParseTreeBuilder
from lark.parsers.lalr_analysis import Shift

from compiler.diagnostics import Diagnostic
from compiler.front.grammar import MAX_NESTING, MAX_SYNTAX_ERRORS, grammar_text
from compiler.front.lark_builders import Collector, Span, SpanTuple, ToIR
from compiler.front.recovery import decl_starts
from compiler.front.syntax_hints import indentation_hint, keyword_hint


class NestingTooDeep(Exception):
    def __init__(self, token: Token) -> None:
        super().__init__("nesting too deep")
        self.token = token


class BadDedent(Exception):
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
                raise NestingTooDeep(token)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
            if indent != self.indent_level[-1]:
                raise BadDedent(token)

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
                    raise NestingTooDeep(token)
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


class LarkParser:
    """The Lark LALR parser, built once (its tables are cached on disk by Lark).

    The indentation post-lexer keeps state while a text is lexed, so `parse` holds a
    lock; the transformation to IR runs outside it with a transformer per call.
    """

    def __init__(self) -> None:
        self.lark = Lark(
            grammar_text(),
            parser="lalr",
            postlex=EnvspecIndenter(),
            propagate_positions=True,
            maybe_placeholders=True,
            start=["start", "expr"],
            cache=True,
        )
        self.lock = threading.Lock()
        self.inline = InlineParser(self.lark)

    def parse(self, text: str, start: str, collector: Collector) -> Any:
        """IR for `text`, built during the parse (`InlineParser`); input it refuses is
        parsed again the classic way, tree first, whose exception becomes the diagnostic."""
        builder = ToIR(Collector(collector.path), self.parse_expr)
        try:
            result = self.inline.parse(text, start, builder)
        except (NotInline, LarkError, NestingTooDeep, BadDedent):
            return self.parse_tree_first(text, start, collector)
        collector.errors.extend(builder.c.errors)
        return result

    def parse_tree_first(self, text: str, start: str, collector: Collector) -> Any:
        """Lark's parse tree, then `ToIR` over it: the path whose errors are reported."""
        with self.lock:
            tree = self.lark.parse(text, start=start)
        return ToIR(collector, self.parse_expr).transform(tree)

    def parse_expr(self, text: str, collector: Collector) -> Any:
        """An f-string field's expression (the builders' `parse_expr`), or None when
        `text` is no expression."""
        try:
            return self.parse(text, "expr", collector)
        except (LarkError, NestingTooDeep, BadDedent):
            return None


class NotInline(Exception):
    """The inline parser met a token the grammar does not allow there."""


_Reduce = tuple[int, str, Any]  # children popped, rule's nonterminal, callback (None: unit rule)


class InlineParser:
    """Lark's LALR tables and contextual lexer's terminals driven by a loop that builds
    IR on each reduction, so no parse tree is built and none is walked afterwards.

    Child filtering, `?rule` inlining and `[x]` placeholders are Lark's own wrappers
    (`ParseTreeBuilder` without position propagation); positions are kept on a stack
    beside the values, with Lark's rule: a node spans from the start of its first
    positioned child to the end of its last. Unit rules (`?sum: term`) are skipped
    without a call. Valid input gives exactly the IR of `ToIR` over the tree (a test
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
            builder: ToIR = local.builders[-1]
            return builder.build(rule, Span(builder.span), children)

        return build

    def parse(self, text: str, start: str, builder: ToIR) -> Any:
        builders: list[ToIR] = self.local.__dict__.setdefault("builders", [])
        builders.append(builder)  # f-string fields parse inside a build: a stack
        try:
            return self._run(text, start, builder)
        finally:
            builders.pop()

    def _run(self, text: str, start: str, builder: ToIR) -> Any:
        states = self.states
        stack = [self.start_states[start]]
        values: list[Any] = []
        spans: list[SpanTuple | None] = []
        token: Token | None = None
        for token in EnvspecIndenter().process(self._lex(text, stack)):
            kind = token.type
            while True:
                step = states[stack[-1]].get(kind)
                if step is None:
                    raise NotInline(kind)
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
                raise NotInline("no terminal matches here")
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
        spans: list[SpanTuple | None],
        builder: ToIR,
    ) -> Any:
        """Reduce at the end of input until the start rule is complete."""
        end = Token.new_borrow_pos("$END", "", last) if last is not None else Token("$END", "", 0, 1, 1)
        while True:
            step = self.states[stack[-1]].get(end.type)
            if step is None or step[0]:
                raise NotInline("$END")
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
        spans: list[SpanTuple | None],
        builder: ToIR,
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


def _span_of(spans: list[SpanTuple | None]) -> SpanTuple | None:
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
def main_parser() -> LarkParser:
    return LarkParser()


# --------------------------------------------------------------------------- entry points


def try_parse(text: str, path: str, collector: Collector) -> Diagnostic | None:
    """Parse `text`; leave declarations on the collector, or return the syntax error."""
    try:
        collector.result = main_parser().parse(text, "start", collector)
    except UnexpectedInput as exc:
        return _syntax_diagnostic(exc, path, text)
    except NestingTooDeep as exc:
        return Diagnostic(
            "E1008", f"nesting deeper than {MAX_NESTING} levels", path, exc.token.line or 0, exc.token.column or 0
        )
    except BadDedent as exc:
        line = exc.token.end_line or exc.token.line or 1
        indent = len(str(exc.token).rsplit("\n", 1)[1])
        return Diagnostic(
            "E1004",
            "dedent does not match any outer indentation level",
            path,
            line,
            indent + 1,
            hint=indentation_hint(text, line),
        )
    except RecursionError:
        return Diagnostic("E1008", "nesting too deep to parse", path, 1, 1)
    return None


def errors_after(text: str, path: str, error_line: int) -> list[Diagnostic]:
    """Re-parse from each later top-level declaration to find further syntax errors."""
    lines = text.split("\n")
    starts = decl_starts(lines)
    found: list[Diagnostic] = []
    last = error_line
    while len(found) < MAX_SYNTAX_ERRORS:
        following = [s for s in starts if s > last]
        if not following:
            break
        start = following[0]
        padded = "\n" * (start - 1) + "\n".join(lines[start - 1 :])
        collector = Collector(path)
        error = try_parse(padded, path, collector)
        found.extend(collector.errors)
        if error is None:
            break
        found.append(error)
        last = max(error.line, start)
    return found


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
    parser = main_parser().lark
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
            hint = indentation_hint(text, line)
            return Diagnostic(
                "E1004",
                "unexpected indentation",
                path,
                line,
                len(str(token)) + 1,
                hint=f"{hint}; expected {expected}" if hint else f"expected {expected}",
            )
        if token.type == "_DEDENT":
            return Diagnostic("E1003", f"block ends too early; expected {expected}", path, line, col)
        if token.type == "_NL":
            return Diagnostic(
                "E1002",
                f"line ends too early; expected {expected}",
                path,
                line,
                col,
                hint=keyword_hint(text, line, col),
            )
        shown = str(token) if len(str(token)) <= 30 else str(token)[:30] + "…"
        return Diagnostic(
            "E1002",
            f"unexpected `{shown}`; expected {expected}",
            path,
            line,
            col,
            token.end_line or line,
            token.end_column or col,
            hint=keyword_hint(text, line, col),
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
