"""Stage 1, parse, the fast path: the declarations that word tasks (`values`, `persona`,
`describe tool`, `describe record` and the value sources they name) and task families
(`family NAME:`), built exactly as
Lark's builders build them (`lark_builders.ToIR`); the declaration parser
(`fastparse_decls.DeclParser`) extends this one.
"""

from __future__ import annotations

from typing import Any

from compiler import ir
from compiler.front.fastparse_exprs import STRING_KINDS, string_value
from compiler.front.fastparse_stmts import StmtParser
from compiler.front.grammar import INT64_MAX
from compiler.front.scan import Refuse
from compiler.ir.tree import construct

FAMILY_CHOICES = {"kind": frozenset(ir.FAMILY_KINDS), "reward": frozenset({"binary", "partial"})}
"""The words a family's `kind` and `reward` lines take (another is E2041, Lark's)."""
_PLACE = ("line", "col", "end_line", "end_col")


class TaskWordsParser(StmtParser):
    """`values`, `persona`, the two `describe` blocks and `family`; each builder gets the
    index of its declaration's first token (`s`)."""

    def family(self, s: int) -> ir.FamilyDecl:
        """`family NAME:`: its doc (a rule of its own, as `describe tool`'s), then its lines;
        a line other than `request` and `verify` given twice is E2017 (Lark's)."""
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        doc = self.describe_doc()
        values: dict[str, Any] = {"kind": "lookup", "scenario": "", "reward": "binary", "plan": [], "solution": []}
        requests: list[str] = []
        request_places: list[ir.Node] = []
        places: dict[str, ir.Node] = {}
        verify: list[ir.VerifyLine] = []
        while True:
            e = self.i
            key = t[e][0]
            self.i += 1
            if key == "verify":
                verify.append(self.verify_line(e))
            elif key == "request":
                requests.append(self.plain_string())
                self.expect("NL")
                request_places.append(construct(ir.Node, self.pos(e), set(_PLACE)))
            elif key in values and key not in places:
                if key == "plan" or key == "solution":
                    self.block_start()
                    values[key] = self.statements()
                    self.i += 1
                else:
                    values[key] = self.word()
                    self.expect("NL")
                    if key in FAMILY_CHOICES and values[key] not in FAMILY_CHOICES[key]:
                        raise Refuse("family word")  # E2041
                places[key] = construct(ir.Node, self.pos(e), set(_PLACE))
            else:
                raise Refuse("family line")  # or one given twice: E2017
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        return construct(
            ir.FamilyDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "kind": values["kind"],
                "scenario": values["scenario"],
                "reward": values["reward"],
                "plan": values["plan"],
                "requests": requests,
                "solution": values["solution"],
                "verify": verify,
                "request_places": request_places,
                "item_places": places,
            },
            {
                *_PLACE, "doc", "name", "kind", "scenario", "reward", "plan", "requests", "solution", "verify",
                "request_places", "item_places",
            },
        )  # fmt: skip

    def verify_line(self, s: int) -> ir.VerifyLine:
        """`verify [each NAME in EXPR:] COND [weight NUMBER]` (its `verify` consumed)."""
        t = self.t
        fields: dict[str, Any] = {}
        if t[self.i][0] == "each":
            self.i += 1
            fields["each"] = self.word()
            self.expect("in")
            fields["over"] = self.expr()
            self.expect(":")
        fields["cond"] = self.expr()
        if t[self.i][0] == "weight":
            self.i += 1
            token = t[self.i]
            self.i += 1
            if token[0] == "INT":
                number = int(token[1].replace("_", ""))
                if number > INT64_MAX:
                    raise Refuse("integer too big")  # E1007
                fields["weight"] = float(number)
            elif token[0] == "FLOAT":
                fields["weight"] = float(token[1])
            else:
                raise self.refuse()
        self.expect("NL")
        given = {*_PLACE, *fields}
        return construct(
            ir.VerifyLine,
            {
                **self.pos(s),
                "cond": fields["cond"],
                "weight": fields.get("weight", 1.0),
                "each": fields.get("each", ""),
                "over": fields.get("over"),
            },
            given,
        )

    def describe_doc(self) -> str:
        """A `describe tool` block's doc (a rule of its own: only `param` and `intent` may
        follow it, so no other block's keywords matter); an f-string there is E1005."""
        token = self.t[self.i]
        if token[0] not in STRING_KINDS:
            return ""
        if token[0] == "FSTRING" or self.t[self.i + 1][0] != "NL":
            raise self.refuse()
        self.i += 2
        return string_value(token[1])

    def describe(self, s: int) -> ir.DescribeDecl | ir.DescribeRecordDecl:
        """`describe tool NAME:` (doc, `param` and `intent` lines) or `describe record NAME:`;
        a line given twice is E2017 (Lark's)."""
        t = self.t
        self.i += 1
        if t[self.i][0] == "record":
            return self.describe_record(s)
        self.expect("tool")
        name = self.word()
        self.block_start()
        doc = self.describe_doc()
        docs: dict[str, str] = {}
        lines: dict[str, int] = {}
        cols: dict[str, int] = {}
        sources: dict[str, ir.SourceRef] = {}
        intents: list[str] = []
        places: list[ir.Node] = []
        while True:
            key = t[self.i][0]
            if key == "intent":
                e = self.i
                self.i += 1
                intents.append(self.plain_string())
                self.expect("NL")
                places.append(construct(ir.Node, self.pos(e), {"line", "col", "end_line", "end_col"}))
                continue
            if key != "param":
                break
            where = t[self.i]
            self.i += 1
            param = self.word()
            text = self.plain_string() if t[self.i][0] in STRING_KINDS else None
            source = None
            if t[self.i][0] == "from":
                self.i += 1
                source = self.source()
            self.expect("NL")
            if param in lines or (text is None and source is None):
                raise Refuse("param line")  # E2017, or no text nor source (a syntax error)
            if text is not None:
                docs[param] = text
            if source is not None:
                sources[param] = source
            lines[param], cols[param] = where[2], where[3]
        self.expect("DEDENT")
        return construct(
            ir.DescribeDecl,
            {
                **self.pos(s),
                "file": "",
                "doc": doc,
                "name": name,
                "param_docs": docs,
                "param_lines": lines,
                "param_cols": cols,
                "intents": intents,
                "intent_places": places,
                "param_sources": sources,
            },
            {"name", "doc", "line", "col", "end_line", "end_col"},
        )

    def describe_record(self, s: int) -> ir.DescribeRecordDecl:
        """`describe record NAME:` and its `noun`, `refer` and `field` lines."""
        t = self.t
        self.i += 1
        name = self.word()
        self.block_start()
        values: dict[str, Any] = {"noun": "", "noun_place": None}
        refers: list[ir.Refer] = []
        sources: dict[str, ir.SourceRef] = {}
        while True:
            e = self.i
            key = t[e][0]
            self.i += 1
            if key == "noun" and values["noun_place"] is None:
                values["noun"] = self.plain_string()
                self.expect("NL")
                values["noun_place"] = construct(ir.Node, self.pos(e), {"line", "col", "end_line", "end_col"})
            elif key == "refer":
                field_ = self.word()
                before = t[self.i][0] == "before"
                if before:
                    self.i += 1
                template = self.plain_string()
                self.expect("NL")
                if any(r.__dict__["field"] == field_ for r in refers):
                    raise Refuse("given twice")  # E2017
                refers.append(
                    construct(
                        ir.Refer,
                        {**self.pos(e), "field": field_, "template": template, "before": before},
                        {"field", "template", "before", "line", "col", "end_line", "end_col"},
                    )
                )
            elif key == "field":
                field_ = self.word()
                self.expect("from")
                source = self.source()
                self.expect("NL")
                if field_ in sources:
                    raise Refuse("given twice")  # E2017
                sources[field_] = source
            else:
                raise Refuse("describe record line")  # a syntax error, or `noun` twice (E2017)
            if t[self.i][0] == "DEDENT":
                break
        self.i += 1
        given = {"name", "line", "col", "end_line", "end_col"}
        if values["noun_place"] is not None:
            given |= {"noun", "noun_place"}
        return construct(
            ir.DescribeRecordDecl,
            {**self.pos(s), "file": "", "doc": "", "name": name, **values, "refers": refers, "field_sources": sources},
            given,
        )

    def source(self) -> ir.SourceRef:
        """`NAME` or `NAME(literal, ...)`: a pool or a format, with literal arguments."""
        t = self.t
        s = self.i
        name = self.word()
        args: list[Any] = []
        if t[self.i][0] == "(":
            self.i += 1
            while t[self.i][0] != ")":
                args.append(self.source_arg())
                if t[self.i][0] != ",":
                    break
                self.i += 1
            self.expect(")")
        return construct(
            ir.SourceRef,
            {**self.pos(s), "name": name, "args": args, "file": ""},
            {"name", "args", "line", "col", "end_line", "end_col"},
        )

    def source_arg(self) -> Any:
        """`-`? INT or FLOAT, or a STRING (a huge integer is E1007, Lark's)."""
        t = self.t
        negative = t[self.i][0] == "-"
        if negative:
            self.i += 1
        kind, text = t[self.i][0], t[self.i][1]
        if kind == "STRING" and not negative:
            self.i += 1
            return string_value(text)
        if kind == "INT":
            value: int | float = int(text.replace("_", ""))
            if value > INT64_MAX:
                raise Refuse("integer over 64 bits")  # E1007
        elif kind == "FLOAT":
            value = float(text)
        else:
            raise self.refuse()
        self.i += 1
        return -value if negative else value

    def values(self, s: int) -> ir.ValuesDecl:
        """`values NAME = [expr, ...]` or `values NAME from "FILE"`."""
        t = self.t
        self.i += 1
        name = self.word()
        if t[self.i][0] == "from":
            self.i += 1
            source = self.plain_string()
            self.expect("NL")
            return construct(
                ir.ValuesDecl,
                {**self.pos(s), "file": "", "doc": "", "name": name, "items": [], "source": source},
                {"name", "source", "line", "col", "end_line", "end_col"},
            )
        self.expect("=")
        self.expect("[")
        items: list[Any] = []
        while t[self.i][0] != "]":
            items.append(self.expr())
            if t[self.i][0] != ",":
                break
            self.i += 1
        self.expect("]")
        self.expect("NL")
        return construct(
            ir.ValuesDecl,
            {**self.pos(s), "file": "", "doc": "", "name": name, "items": items, "source": ""},
            {"name", "items", "line", "col", "end_line", "end_col"},
        )

    def persona(self, s: int) -> ir.PersonaDecl:
        self.i += 1
        text = self.plain_string()
        self.expect("NL")
        return construct(
            ir.PersonaDecl,
            {**self.pos(s), "file": "", "doc": "", "text": text},
            {"text", "line", "col", "end_line", "end_col"},
        )
