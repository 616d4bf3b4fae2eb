"""Stage 1, parse, the fast path: a hand-written scanner (`scan.py`) and
recursive-descent parser (expressions in `fastparse_exprs.py`, statements in
`fastparse_stmts.py`, declarations here) for the envspec grammar that builds the IR
`Module` declarations directly, about four times faster than Lark on clean input.

Lark (`compiler/front/lark_parser.py`) stays the reference and the error path. This
parser only ever *accepts* input whose IR it builds exactly as Lark's parse would: the
same node types, field values, positions and `model_fields_set`. On anything else (a
syntax error, a construct it does not know, a value the IR builders would report: a
bad escape, a huge integer, a malformed f-string, a `param` line naming no parameter,
an expression nested too deep) it refuses (`parse_decls` returns None) and the caller
runs Lark, so every diagnostic, and the malformed corpus, stays what Lark says.
`tests/test_parse_fast.py` compares both parsers on every shipped spec, fixture,
docs example, corpus file and thousands of mutated specs.

Where it must agree with Lark, and how:

- Tokens are Lark's (`scan.py`).
- Positions follow Lark's `propagate_positions` rule, which comes down to: a node spans
  from the start of its rule's first token to the end of its last, filtered tokens
  (`:`, `_NL`, `_DEDENT`) included. Each builder takes the rule's first and last token.
- Keywords: Lark's contextual lexer makes a word a keyword only where the parser state
  accepts that keyword; elsewhere it is a NAME (`title` is a record field, `not` after
  `+` is a name). The parser follows the same split per context, and refuses words
  whose meaning depends on a state it does not model (`if` where an atom starts).
- Words the grammar has and this parser does not know (a keyword added by a new
  construct) make it refuse any input containing them; IR classes whose fields differ
  from the ones it writes turn it off (`fastparse_schema.schema_matches`).

IR nodes are made without pydantic validation (`irtree.construct`: what
`model_construct` does, with the field dicts written out in field order): the values
are the ones the validating constructors would keep, and `model_dump_json` of both is
byte-for-byte equal.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, TypeVar

from compiler import ir
from compiler.front.fastparse_exprs import EXPRESSION_WORDS, STRING_KINDS, depth_bound, string_value
from compiler.front.fastparse_schema import schema_matches
from compiler.front.fastparse_words import TaskWordsParser
from compiler.front.grammar import MAX_EXPR_DEPTH
from compiler.front.scan import CONSTRAINT_WORDS, STATEMENT_WORDS, Refuse, Token, chunks, foreign_words
from compiler.ir.tree import construct

DROP_KINDS = frozenset({"tool", "scenario", "test", "task", "fn", "family"})
RENAME_KINDS = frozenset({"tool", "fn", "record", "enum", "scenario", "state", "param"})

CALLABLE_WORDS = frozenset({"reads", "writes", "side_effect", "param", "python", "llm"})
TEST_WORDS = frozenset({"scenario", "let", "expect"}) | EXPRESSION_WORDS
TASK_WORDS = frozenset({"scenario", "request", "solution", "verify"})
DOC_FOLLOWERS = STATEMENT_WORDS | EXPRESSION_WORDS | CALLABLE_WORDS | TEST_WORDS | TASK_WORDS
"""Keywords Lark's lexer takes right after any doc line: `doc: string _NL` is one LALR
state whatever the block, so its lookahead is every block's. A block where one of
these is a name there (a record field `python` after the doc) is left to Lark, which
refuses it."""
BODY_WORDS = STATEMENT_WORDS | EXPRESSION_WORDS | CALLABLE_WORDS
ON_LOAD_WORDS = STATEMENT_WORDS | EXPRESSION_WORDS | {"python", "llm"}
"""After the doc of `on load:` (a body, no `reads`/`writes`/`param` lines)."""


def enabled() -> bool:
    """Whether the fast parser runs at all: the grammar and IR are the ones it knows, and
    `ENVC_FAST_PARSE=0` is not set (Lark then parses everything, as a check or a way out)."""
    return os.environ.get("ENVC_FAST_PARSE", "1") != "0" and schema_matches() and foreign_words() is not None


def parse_decls(text: str) -> list[Any] | None:
    """The top-level declarations of `text` (normalised as `parse_source` does: LF line
    ends, a final newline), exactly as Lark's parse builds them, or None when this input
    is left to Lark."""
    if not enabled():
        return None
    try:
        return DeclParser([]).module(chunks(text))
    except (Refuse, RecursionError):
        return None


_Block = TypeVar("_Block", ir.StateDecl, ir.LoadOptionsDecl)


class DeclParser(TaskWordsParser):
    """The declaration rules, and a module's declarations run by run (`module`)."""

    def doc(self, keywords: frozenset[str] = frozenset(), names: frozenset[str] = frozenset()) -> str:
        """`doc?` at the start of a block: a string alone on its line (Lark shifts it as
        the doc); a string that starts anything else there is left to Lark, but for a
        quoted name, followed by one of `names` (`:` or `?` of a record field, `,` of an
        enum member). After the doc, a word of DOC_FOLLOWERS is a keyword to Lark: fine
        where this block takes it as one (`keywords`), left to Lark anywhere else."""
        token = self.t[self.i]
        if token[0] not in STRING_KINDS or (token[0] == "STRING" and self.t[self.i + 1][0] in names):
            return ""
        if token[0] == "FSTRING" or self.t[self.i + 1][0] != "NL":
            raise self.refuse()  # an f-string doc is E1005
        self.i += 2
        after = self.t[self.i][0]
        if after in DOC_FOLLOWERS and after not in keywords:
            raise self.refuse()
        return string_value(token[1])

    # ------------------------------------------------------------------ module
    def module(self, runs: Iterator[tuple[list[Token], bool]]) -> list[Any]:
        """The declarations of the token runs of `chunks` (a run's tokens are dropped
        once parsed); those with an expression nested deeper than MAX_EXPR_DEPTH are
        E1008, left to Lark."""
        decls: list[Any] = []
        for number, (tokens, long_line) in enumerate(runs):
            self.t, self.i = tokens, 0
            if number == 0 and tokens[0][0] == "NL":  # blank lines or comments open the text
                self.i = 1
            first = len(decls)
            while tokens[self.i][0] != "END":
                decls.append(self.decl())
            if long_line and depth_bound(decls[first:]) > MAX_EXPR_DEPTH:
                raise Refuse("expression nested too deep")  # E1008
        return decls

    def decl(self) -> Any:
        s = self.i
        kind = self.t[s][0]
        override = kind == "override"
        if override:
            self.i += 1
            kind = self.t[self.i][0]
            if kind == "record":
                return self.record(s, True)
            if kind == "tool" or kind == "fn":
                return self.callable(s, True)
            if kind == "on":
                return self.on_load(s, True)
            raise self.refuse()
        if kind == "tool" or kind == "fn":
            return self.callable(s, False)
        if kind == "record":
            return self.record(s, False)
        builder = _DECLS.get(kind)
        if builder is None:
            raise self.refuse()
        return builder(self, s)

    def environment(self, s: int) -> ir.EnvHeader:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        values: dict[str, Any] = {}
        places: dict[str, ir.Node] = {}
        while True:
            item = self.i
            key = t[item][0]
            self.i += 1
            if key == "title" or key == "doc" or key == "extends" or key == "clock":
                value: Any = self.plain_string()
            elif key == "archetype" or key == "rng":
                value = self.word()
            elif key == "domains":
                value = [self.plain_string()]
                while t[self.i][0] == ",":
                    self.i += 1
                    value.append(self.plain_string())
            elif key == "seed":
                token = t[self.i]
                if token[0] != "INT":
                    raise self.refuse()
                self.i += 1
                try:
                    value = int(token[1])
                except ValueError:
                    raise Refuse("seed") from None
            else:
                raise self.refuse()
            self.expect("NL")
            if key in values:
                raise Refuse("given twice")  # E2017
            values[key] = value
            places[key] = construct(ir.Node, self.pos(item), {"line", "col", "end_line", "end_col"})
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.EnvHeader,
            {
                **self.pos(s),
                "file": "",
                "doc": values.get("doc", ""),
                "name": name,
                "title": values.get("title", ""),
                "archetype": values.get("archetype", ""),
                "domains": values.get("domains", []),
                "extends": values.get("extends", ""),
                "seed": values.get("seed", 0),
                "rng": values.get("rng", "splitmix64"),
                "clock": values.get("clock", "2025-01-01T09:00:00"),
                "item_places": places,
            },
            {"name", "item_places", "line", "col", "end_line", "end_col", *values},
        )

    def enum(self, s: int) -> ir.EnumDecl:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc(names=frozenset({","}))
        members: list[str] = []
        while True:
            quoted = t[self.i][0] == "STRING"
            members.append(self.declared_name())
            if quoted and t[self.i][0] == "," and t[self.i + 1][0] == "NL":
                self.i += 1  # `"too expensive",`: a line of one quoted member
            elif quoted and t[self.i][0] != ",":
                raise self.refuse()  # a string alone on its line (the doc only on the first)
            while t[self.i][0] == ",":
                self.i += 1
                members.append(self.declared_name())
            self.expect("NL")
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.EnumDecl,
            {**self.pos(s), "file": "", "doc": doc, "name": name, "members": members},
            {"name", "members", "doc", "line", "col", "end_line", "end_col"},
        )

    def fields(self, block: str) -> list[ir.Field_]:
        """The fields of a block up to its end (consumed): `record_field+` in a record,
        `state_field+` in `state:` (`field_decl` or `state_file`), `field_decl+` in
        `load options:`."""
        t = self.t
        fields: list[ir.Field_] = []
        record = block == "record"
        while True:
            s = self.i
            name = self.declared_name() if record else self.word()
            absent = record and t[self.i][0] == "?"
            if absent:
                self.i += 1
            self.expect(":")
            type_ = self.type_()
            if t[self.i][0] == "from" and block == "state":
                self.i += 1
                source = self.plain_string()
                self.expect("NL")
                fields.append(
                    construct(
                        ir.Field_,
                        {
                            **self.pos(s),
                            "name": name,
                            "type": type_,
                            "default": None,
                            "alias": "",
                            "source": source,
                            "absent": False,
                            "tag": "",
                            "values_from": None,
                        },
                        {"name", "type", "source", "line", "col", "end_line", "end_col"},
                    )
                )
            else:
                default = None
                if t[self.i][0] == "=":
                    self.i += 1
                    default = self.expr()
                alias = ""
                if t[self.i][0] == "alias":
                    self.i += 1
                    alias = self.plain_string()
                self.expect("NL")
                first, last = t[s], t[self.i - 1]
                fields.append(
                    construct(
                        ir.Field_,
                        {
                            "line": first[2],
                            "col": first[3],
                            "end_line": last[4],
                            "end_col": last[5],
                            "name": name,
                            "type": type_,
                            "default": default,
                            "alias": alias,
                            "source": "",
                            "absent": absent,
                            "tag": "",
                            "values_from": None,
                        },
                        {"name", "type", "default", "absent", "alias", "line", "col", "end_line", "end_col"}
                        if record
                        else {"name", "type", "default", "alias", "line", "col", "end_line", "end_col"},
                    )
                )
            if t[self.i][0] == "DEDENT":
                self.i += 1
                return fields

    def record(self, s: int, override: bool) -> ir.RecordDecl:
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc(names=frozenset({":", "?"}))
        fields = self.fields("record")
        return construct(
            ir.RecordDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "fields": fields,
                "override": override,
                "tag": "",
                "members": {},
                "noun": "",
                "refers": [],
            },
            {"name", "fields", "doc", "override", "line", "col", "end_line", "end_col"},
        )

    def union(self, s: int) -> ir.RecordDecl:
        """`union NAME by TAG:` and its `Member = "tag"` lines: a RecordDecl without fields
        (the analyser fills them); a member or tag value given twice is E2005 (Lark's)."""
        t = self.t
        self.i += 1
        name = self.word()
        self.expect("by")
        tag = self.word()
        self.block_start()
        doc = self.doc()
        members: dict[str, str] = {}
        while True:
            member = self.word()
            self.expect("=")
            value = self.plain_string()
            self.expect("NL")
            if member in members or value in members.values():
                raise Refuse("union member twice")  # E2005
            members[member] = value
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.RecordDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "fields": [],
                "override": False,
                "tag": tag,
                "members": members,
                "noun": "",
                "refers": [],
            },
            {"name", "fields", "tag", "members", "doc", "line", "col", "end_line", "end_col"},
        )

    def state(self, s: int) -> ir.StateDecl:
        self.i += 1
        return self.field_block(ir.StateDecl, s, "state")

    def field_block(self, cls: type[_Block], s: int, block: str) -> _Block:
        """`state:` or `load options:` after its words: a doc, then field lines."""
        self.block_start()
        doc = self.doc()
        fields = self.fields(block)
        return construct(
            cls,
            {**self.pos(s), "file": "", "doc": doc, "fields": fields},
            {"fields", "doc", "line", "col", "end_line", "end_col"},
        )

    def world(self, s: int) -> ir.WorldDecl:
        t = self.t
        self.i += 1
        self.block_start()
        doc = self.doc()
        fields: list[ir.WorldField] = []
        while True:
            f = self.i
            name = self.word()
            self.expect(":")
            type_ = self.type_()
            if t[self.i][0] == "=":
                self.i += 1
                value = self.expr()
                self.expect("NL")
                values = {**self.pos(f), "name": name, "type": type_, "value": value, "source": ""}
                given = {"name", "type", "value", "line", "col", "end_line", "end_col"}
            elif t[self.i][0] == "from":
                self.i += 1
                source = self.plain_string()
                self.expect("NL")
                values = {**self.pos(f), "name": name, "type": type_, "value": None, "source": source}
                given = {"name", "type", "source", "line", "col", "end_line", "end_col"}
            else:
                raise self.refuse()
            fields.append(construct(ir.WorldField, values, given))
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.WorldDecl,
            {**self.pos(s), "file": "", "doc": doc, "fields": fields},
            {"fields", "doc", "line", "col", "end_line", "end_col"},
        )

    def scenario(self, s: int) -> ir.ScenarioDecl:
        t = self.t
        self.i += 1
        name = self.word()
        if t[self.i][0] == "from":  # `scenario NAME from "FILE"`
            self.i += 1
            source = self.plain_string()
            self.expect("NL")
            return construct(
                ir.ScenarioDecl,
                {**self.pos(s), "file": "", "doc": "", "name": name, "items": [], "source": source, "renamed": {}},
                {"name", "items", "source", "line", "col", "end_line", "end_col"},
            )
        self.block_start()
        doc = self.doc()
        items: list[ir.ScenarioItem] = []
        while True:
            f = self.i
            item = self.word()
            self.expect("=")
            if t[self.i][0] == "from":  # `field = from "FILE"`
                self.i += 1
                source = self.plain_string()
                self.expect("NL")
                values = {**self.pos(f), "name": item, "value": None, "source": source}
                given = {"name", "source", "line", "col", "end_line", "end_col"}
            else:
                value = self.expr()
                self.expect("NL")
                values = {**self.pos(f), "name": item, "value": value, "source": ""}
                given = {"name", "value", "line", "col", "end_line", "end_col"}
            items.append(construct(ir.ScenarioItem, values, given))
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.ScenarioDecl,
            {**self.pos(s), "file": "", "doc": doc, "name": name, "items": items, "source": "", "renamed": {}},
            {"name", "items", "doc", "line", "col", "end_line", "end_col"},
        )

    def callable(self, s: int, override: bool) -> ir.ToolDecl:
        t = self.t
        cls = ir.ToolDecl if t[self.i][0] == "tool" else ir.FnDecl
        self.i += 1
        name = self.word()
        self.expect("(")
        params: list[ir.Param] = []
        while t[self.i][0] != ")":
            params.append(self.param())
            if t[self.i][0] != ",":
                break
            self.i += 1
        self.expect(")")
        self.expect("->")
        returns = self.type_()
        self.block_start()
        doc = self.doc(BODY_WORDS)
        fields: dict[str, Any] = {}
        param_docs: dict[str, str] = {}
        while True:
            key = t[self.i][0]
            if key == "reads" or key == "writes":
                self.i += 1
                names: list[str] = []
                if t[self.i][0] == "nothing":
                    self.i += 1
                else:
                    names.append(self.word())
                    while t[self.i][0] == ",":
                        self.i += 1
                        names.append(self.word())
                value: Any = names
                key = "declared_" + key
            elif key == "side_effect":
                self.i += 1
                value = self.plain_string()
            elif key == "param":
                self.i += 1
                param = self.word()
                text = self.plain_string()
                self.expect("NL")
                if param in param_docs or all(p["name"] != param for p in (q.__dict__ for q in params)):
                    raise Refuse("param line")  # E2017, E2023
                param_docs[param] = text
                continue
            else:
                break
            self.expect("NL")
            if key in fields:
                raise Refuse("given twice")  # E2017
            fields[key] = value
        escape = None
        body: list[Any] = []
        key = t[self.i][0]
        if key == "python" or key == "llm":
            e = self.i
            self.i += 1
            text = self.plain_string()
            self.expect("NL")
            escape = construct(
                ir.Escape,
                {**self.pos(e), "kind": key, "text": text},
                {"kind", "text", "line", "col", "end_line", "end_col"},
            )
        else:
            body = self.statements()
        self.expect("DEDENT")
        for each in params:
            each.__dict__["doc"] = param_docs.get(each.__dict__["name"], "")
            each.__pydantic_fields_set__.add("doc")
        values = {
            **self.pos(s),
            "file": "",
            "doc": doc,
            "name": name,
            "params": params,
            "returns": returns,
            "body": body,
            "escape": escape,
            "declared_reads": fields.get("declared_reads"),
            "declared_writes": fields.get("declared_writes"),
            "side_effect": fields.get("side_effect", ""),
            "override": override,
            "reads": [],
            "writes": [],
            "errors": [],
            "intents": [],
        }
        if cls is ir.FnDecl:
            values["recursion"] = []
        return construct(
            cls,
            values,
            {
                "name",
                "params",
                "returns",
                "body",
                "escape",
                "doc",
                "override",
                *fields,
                "line",
                "col",
                "end_line",
                "end_col",
            },
        )

    def param(self) -> ir.Param:
        t = self.t
        s = self.i
        name = self.word()
        self.expect(":")
        type_ = self.type_()
        default = None
        if t[self.i][0] == "=":
            self.i += 1
            default = self.expr()
        constraints: list[ir.Constraint] = []
        while t[self.i][0] == "NAME" and t[self.i][1] in CONSTRAINT_WORDS:
            c = self.i
            self.i += 1
            value = self.expr()
            first, last = t[c], t[self.i - 1]
            constraints.append(
                construct(
                    ir.Constraint,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "kind": first[1],
                        "value": value,
                    },
                    {"kind", "value", "line", "col", "end_line", "end_col"},
                )
            )
        first, last = t[s], t[self.i - 1]
        return construct(
            ir.Param,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "name": name,
                "type": type_,
                "default": default,
                "constraints": constraints,
                "doc": "",
                "values_from": None,
            },
            {"name", "type", "default", "constraints", "line", "col", "end_line", "end_col"},
        )

    def drop(self, s: int) -> ir.DropDecl:
        self.i += 1
        what = self.t[self.i][0]
        if what not in DROP_KINDS:
            raise self.refuse()
        self.i += 1
        name = self.word()
        self.expect("NL")
        return construct(
            ir.DropDecl,
            {**self.pos(s), "file": "", "doc": "", "what": what, "name": name},
            {"what", "name", "line", "col", "end_line", "end_col"},
        )

    def rename(self, s: int) -> ir.RenameDecl:
        self.i += 1
        what = self.t[self.i][0]
        if what not in RENAME_KINDS:
            raise self.refuse()
        self.i += 1
        old = self.word()
        self.expect("as")
        new = self.word()
        self.expect("NL")
        return construct(
            ir.RenameDecl,
            {**self.pos(s), "file": "", "doc": "", "what": what, "old": old, "new": new},
            {"what", "old", "new", "line", "col", "end_line", "end_col"},
        )

    def on_load(self, s: int, override: bool = False) -> ir.OnLoadDecl:
        """`on load:` and its statements; a `python`/`llm` body there is E2032 (Lark's)."""
        self.i += 1
        self.expect("load")
        self.block_start()
        doc = self.doc(ON_LOAD_WORDS)
        if self.t[self.i][0] == "python" or self.t[self.i][0] == "llm":
            raise Refuse("escape body in on load")  # E2032
        body = self.statements()
        self.i += 1
        return construct(
            ir.OnLoadDecl,
            {**self.pos(s), "file": "", "doc": doc, "body": body, "override": override},
            {"body", "doc", "override", "line", "col", "end_line", "end_col"},
        )

    def load_options(self, s: int) -> ir.LoadOptionsDecl:
        self.i += 1
        self.expect("options")
        return self.field_block(ir.LoadOptionsDecl, s, "options")

    def test(self, s: int) -> ir.TestDecl:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc(TEST_WORDS)
        steps: list[Any] = []
        while True:
            f = self.i
            kind = t[f][0]
            step: ir.StmtBase
            if kind == "scenario":
                self.i += 1
                used = self.word()
                self.expect("NL")
                step = construct(
                    ir.UseScenario,
                    {**self.pos(f), "kind": "scenario", "name": used},
                    {"name", "line", "col", "end_line", "end_col"},
                )
            elif kind == "let":
                self.i += 1
                bound = self.word()
                self.expect("=")
                value = self.expr()
                self.expect("NL")
                step = construct(
                    ir.TestLet,
                    {**self.pos(f), "kind": "let", "name": bound, "value": value},
                    {"name", "value", "line", "col", "end_line", "end_col"},
                )
            elif kind == "expect":
                self.i += 1
                cond = self.expr()
                self.expect("NL")
                step = construct(
                    ir.ExpectTrue,
                    {**self.pos(f), "kind": "expect", "cond": cond},
                    {"cond", "line", "col", "end_line", "end_col"},
                )
            else:
                call = self.expr()
                if t[self.i][0] == "raises":
                    self.i += 1
                    error = self.word()
                    message = self.plain_string() if t[self.i][0] in STRING_KINDS else ""
                    self.expect("NL")
                    step = construct(
                        ir.ExpectRaises,
                        {**self.pos(f), "kind": "raises", "call": call, "error": error, "message": message},
                        {"call", "error", "message", "line", "col", "end_line", "end_col"},
                    )
                else:
                    self.expect("NL")
                    step = construct(
                        ir.TestCall,
                        {**self.pos(f), "kind": "call", "call": call},
                        {"call", "line", "col", "end_line", "end_col"},
                    )
            steps.append(step)
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.TestDecl,
            {**self.pos(s), "file": "", "doc": doc, "name": name, "steps": steps},
            {"name", "steps", "doc", "line", "col", "end_line", "end_col"},
        )

    def task(self, s: int) -> ir.TaskDecl:
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.doc(TASK_WORDS)
        given = {"name", "doc", "line", "col", "end_line", "end_col"}
        scenario = request = ""
        solution: list[Any] = []
        verify: list[Any] = []
        while True:
            kind = t[self.i][0]
            self.i += 1
            if kind == "scenario":
                if "scenario" in given:
                    raise Refuse("given twice")  # E2017
                scenario = self.word()
                given.add("scenario")
            elif kind == "request":
                if "request" in given:
                    raise Refuse("given twice")  # E2017
                request = self.plain_string()
                given.add("request")
            elif kind == "solution":
                self.block_start()
                while True:
                    solution.append(self.expr())
                    self.expect("NL")
                    if t[self.i][0] == "DEDENT":
                        break
                self.i += 1
                if t[self.i][0] == "DEDENT":
                    break
                continue
            elif kind == "verify":
                verify.append(self.expr())
            else:
                raise Refuse("task item")
            self.expect("NL")
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.TaskDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "scenario": scenario,
                "request": request,
                "solution": solution,
                "verify": verify,
            },
            given,
        )


_DECLS = {
    "environment": DeclParser.environment,
    "enum": DeclParser.enum,
    "state": DeclParser.state,
    "world": DeclParser.world,
    "scenario": DeclParser.scenario,
    "test": DeclParser.test,
    "task": DeclParser.task,
    "family": DeclParser.family,
    "drop": DeclParser.drop,
    "rename": DeclParser.rename,
    "describe": DeclParser.describe,
    "values": DeclParser.values,
    "persona": DeclParser.persona,
    "union": DeclParser.union,
    "on": DeclParser.on_load,
    "load": DeclParser.load_options,
}
