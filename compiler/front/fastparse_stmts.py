"""Stage 1, parse, the fast path: statements and type references. `StmtParser` adds
the statement rules of a body (`let`, assignments, `if`, `for`, `require`, …) to the
expression rules of `ExprParser`; the declarations (`fastparse_decls.py`) extend it.
"""

from __future__ import annotations

from typing import Any

from compiler import ir
from compiler.front.fastparse_exprs import CONTINUES, WORD_KINDS, ExprParser
from compiler.front.fastparse_schema import POS
from compiler.front.scan import STATEMENT_WORDS, Refuse
from compiler.ir.tree import construct


class StmtParser(ExprParser):
    """The statement rules; every builder gets the index of its rule's first token (`s`)."""

    def block_start(self) -> None:
        """`:`, then the line end and the indent that open any block."""
        t, i = self.t, self.i
        if t[i][0] != ":" or t[i + 1][0] != "NL" or t[i + 2][0] != "INDENT":
            raise self.refuse()
        self.i = i + 3

    def type_(self) -> ir.TypeRef:
        """A type reference: a word, or a word and `[` its arguments `]`."""
        t = self.t
        s = self.i
        token = t[s]
        if token[0] == "None" or token[0] in WORD_KINDS and t[s + 1][0] != "[":  # a word alone, the commonest
            self.i += 1
            return construct(
                ir.TypeRef,
                {
                    "line": token[2],
                    "col": token[3],
                    "end_line": token[4],
                    "end_col": token[5],
                    "name": token[1],
                    "args": [],
                },
                {"name", "line", "col", "end_line", "end_col"},
            )
        name = self.word()
        self.i += 1
        args = [self.type_()]
        while t[self.i][0] == ",":
            self.i += 1
            args.append(self.type_())
        self.expect("]")
        first, last = t[s], t[self.i - 1]
        return construct(
            ir.TypeRef,
            {"line": first[2], "col": first[3], "end_line": last[4], "end_col": last[5], "name": name, "args": args},
            {"name", "args", "line", "col", "end_line", "end_col"},
        )

    # ------------------------------------------------------------------ statements
    def statements(self) -> list[Any]:
        """`stmt+` up to (not including) the block's DEDENT."""
        t = self.t
        body = [self.statement()]
        while t[self.i][0] != "DEDENT":
            body.append(self.statement())
        return body

    def suite(self) -> list[Any]:
        self.block_start()
        body = self.statements()
        self.i += 1
        return body

    def statement(self) -> Any:
        t = self.t
        s = self.i
        kind = t[s][0]
        if kind in STATEMENT_WORDS:
            if kind == "if":
                return self.if_(s)
            if kind == "for":
                return self.for_(s)
            if kind == "while":
                return self.while_(s)
            node = _SIMPLE[kind](self, s)
        else:
            node = self.assign_or_expr(s)
        if t[self.i][0] != "NL":
            raise self.refuse()
        self.i += 1
        return node

    def assign_or_expr(self, s: int) -> Any:
        t = self.t
        kind = t[s][0]
        if kind == "-" or kind == "not" or kind == "lambda":
            value = self.expr()
        else:
            target = self.postfix()
            op = t[self.i][0]
            if op == "=":
                self.i += 1
                value = self.expr()
                first, last = t[s], t[self.i - 1]
                return construct(
                    ir.Assign,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "kind": "assign",
                        "target": target,
                        "op": "=",
                        "value": value,
                        "touches_state": False,
                    },
                    {"target", "value", "line", "col", "end_line", "end_col"},
                )
            if op == "+=" or op == "-=":
                self.i += 1
                value = self.expr()
                first, last = t[s], t[self.i - 1]
                return construct(
                    ir.Assign,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "kind": "assign",
                        "target": target,
                        "op": op,
                        "value": value,
                        "touches_state": False,
                    },
                    {"target", "op", "value", "line", "col", "end_line", "end_col"},
                )
            value = self.ternary(target, s) if op in CONTINUES else target
        first, last = t[s], t[self.i - 1]
        return construct(
            ir.ExprStmt,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "expr",
                "value": value,
            },
            {"value", "line", "col", "end_line", "end_col"},
        )

    def let(self, s: int) -> ir.Let:
        self.i += 1
        name = self.word()
        type_ = None
        if self.t[self.i][0] == ":":
            self.i += 1
            type_ = self.type_()
        self.expect("=")
        value = self.expr()
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Let,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "let",
                "name": name,
                "type": type_,
                "value": value,
            },
            {"name", "type", "value", "line", "col", "end_line", "end_col"},
        )

    def return_(self, s: int) -> ir.Return:
        self.i += 1
        value = None if self.t[self.i][0] == "NL" else self.expr()
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Return,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "return",
                "value": value,
            },
            {"value", "line", "col", "end_line", "end_col"},
        )

    def require(self, s: int) -> ir.Require:
        self.i += 1
        cond = self.expr()
        error = None
        if self.t[self.i][0] == "else":  # no `else` only in a family's plan (the analyser says)
            self.i += 1
            error = self.error_call()
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.Require,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": "require",
                "cond": cond,
                "error": error,
            },
            {"cond", "error", "line", "col", "end_line", "end_col"},
        )

    def fail(self, s: int) -> ir.Fail:
        self.i += 1
        error = self.error_call()
        return construct(
            ir.Fail, {**self.pos(s), "kind": "fail", "error": error}, {"error", "line", "col", "end_line", "end_col"}
        )

    def error_call(self) -> ir.ErrorCall:
        s = self.i
        kind = self.word()
        self.expect("(")
        positional, keywords = self.arguments()
        self.expect(")")
        if len(positional) > 1:
            raise Refuse("two messages")  # E3006
        message = positional[0] if positional else None
        first, last = self.t[s], self.t[self.i - 1]
        return construct(
            ir.ErrorCall,
            {
                "line": first[2],
                "col": first[3],
                "end_line": last[4],
                "end_col": last[5],
                "kind": kind,
                "message": message,
                "fields": keywords,
            },
            {"kind", "message", "fields", "line", "col", "end_line", "end_col"},
        )

    def delete(self, s: int) -> ir.Delete:
        self.i += 1
        target = self.postfix()
        return construct(
            ir.Delete,
            {**self.pos(s), "kind": "delete", "target": target, "touches_state": False},
            {"target", "line", "col", "end_line", "end_col"},
        )

    def pass_(self, s: int) -> ir.Pass:
        self.i += 1
        return construct(ir.Pass, {**self.pos(s), "kind": "pass"}, {*POS})

    def break_(self, s: int) -> ir.Break:
        self.i += 1
        return construct(ir.Break, {**self.pos(s), "kind": "break"}, {*POS})

    def continue_(self, s: int) -> ir.Continue:
        self.i += 1
        return construct(ir.Continue, {**self.pos(s), "kind": "continue"}, {*POS})

    def if_(self, s: int) -> ir.If:
        t = self.t
        self.i += 1
        cond = self.expr()
        body = self.suite()
        branches: list[Any] = [None]
        while t[self.i][0] == "elif":
            b = self.i
            self.i += 1
            other = self.expr()
            block = self.suite()
            first, last = t[b], t[self.i - 1]
            branches.append(
                construct(
                    ir.IfBranch,
                    {
                        "line": first[2],
                        "col": first[3],
                        "end_line": last[4],
                        "end_col": last[5],
                        "cond": other,
                        "body": block,
                    },
                    {"cond", "body", "line", "col", "end_line", "end_col"},
                )
            )
        orelse: list[Any] = []
        if t[self.i][0] == "else":
            self.i += 1
            orelse = self.suite()
        first, last = t[s], t[self.i - 1]
        where = {"line": first[2], "col": first[3], "end_line": last[4], "end_col": last[5]}
        branches[0] = construct(
            ir.IfBranch, {**where, "cond": cond, "body": body}, {"cond", "body", "line", "col", "end_line", "end_col"}
        )
        return construct(
            ir.If,
            {**where, "kind": "if", "branches": branches, "orelse": orelse},
            {"branches", "orelse", "line", "col", "end_line", "end_col"},
        )

    def for_(self, s: int) -> ir.For:
        t = self.t
        self.i += 1
        targets = [self.word()]
        while t[self.i][0] == ",":
            self.i += 1
            targets.append(self.word())
        self.expect("in")
        iterable = self.expr()
        body = self.suite()
        return construct(
            ir.For,
            {**self.pos(s), "kind": "for", "targets": targets, "iter": iterable, "body": body},
            {"targets", "iter", "body", "line", "col", "end_line", "end_col"},
        )

    def while_(self, s: int) -> ir.While:
        t = self.t
        self.i += 1
        cond = self.expr()
        limit = None
        if t[self.i][0] == "NAME" and t[self.i][1] == "max":
            self.i += 1
            if t[self.i][0] != "INT":
                raise self.refuse()
            limit = int(t[self.i][1])
            self.i += 1
        body = self.suite()
        return construct(
            ir.While,
            {**self.pos(s), "kind": "while", "cond": cond, "limit": limit, "body": body},
            {"cond", "limit", "body", "line", "col", "end_line", "end_col"},
        )


_SIMPLE = {
    "let": StmtParser.let,
    "return": StmtParser.return_,
    "require": StmtParser.require,
    "fail": StmtParser.fail,
    "del": StmtParser.delete,
    "pass": StmtParser.pass_,
    "break": StmtParser.break_,
    "continue": StmtParser.continue_,
}
