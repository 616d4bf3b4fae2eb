"""The exact splice of lowered bodies into the skeleton, with libcst: the way for any
body `compiler/lower/splice.py` cannot splice as text (and the reference it is tested
against). Imported only then: libcst takes a while to import and to run.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from compiler.lower.errors import LoweringError


class _BodySplicer(cst.CSTTransformer):
    """Replaces the `...` placeholder of each named method with its lowered body."""

    def __init__(self, class_name: str, bodies: dict[str, Sequence[cst.BaseStatement]]) -> None:
        super().__init__()
        self.class_name = class_name
        self.bodies = bodies
        self.depth = 0
        self.in_class = False
        self.spliced: set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.in_class = node.name.value == self.class_name
        return True

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.in_class = False
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        name = updated.name.value
        if not self.in_class or name not in self.bodies or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        statements = list(updated.body.body)
        kept = [s for s in statements if not _is_ellipsis(s)]
        self.spliced.add(name)
        return updated.with_changes(body=updated.body.with_changes(body=[*kept, *self.bodies[name]]))


def _is_ellipsis(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.Ellipsis)
    )


def splice_bodies(skeleton: str, class_name: str, bodies: dict[str, str]) -> str:
    parsed: dict[str, Sequence[cst.BaseStatement]] = {}
    for name, body in bodies.items():
        try:
            parsed[name] = cst.parse_module(body).body
        except cst.ParserSyntaxError as exc:
            raise LoweringError(f"lowered body of `{name}` does not parse: {exc}") from None
    try:
        module = cst.parse_module(skeleton)
    except cst.ParserSyntaxError as exc:
        raise LoweringError(f"rendered skeleton does not parse: {exc}") from None
    splicer = _BodySplicer(class_name, parsed)
    result = module.visit(splicer)
    missing = sorted(set(parsed) - splicer.spliced)
    if missing:
        raise LoweringError(f"no method to splice into for: {', '.join(missing)}")
    return result.code
