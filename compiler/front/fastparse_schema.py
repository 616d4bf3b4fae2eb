"""Stage 1, parse, the fast path: the IR fields it writes for each class. The fast
parser makes IR nodes without pydantic validation, writing every field itself; an IR
class whose fields are no longer these (a field added for a new construct) turns the
fast parser off (`schema_matches`) until it is taught the field.
"""

from __future__ import annotations

import functools
from typing import Any

from compiler import ir

POS = ("line", "col", "end_line", "end_col")
EXPR = (*POS, "ty", "kind")
DECL = (*POS, "file", "doc")
SCHEMA: dict[type[Any], tuple[str, ...]] = {
    ir.Node: POS,
    ir.TypeRef: (*POS, "name", "args"),
    ir.Name: (*EXPR, "id", "ref"),
    ir.Const: (*EXPR, "value"),
    ir.FString: (*EXPR, "parts"),
    ir.ListLit: (*EXPR, "items"),
    ir.MapEntry: (*POS, "key", "value"),
    ir.MapLit: (*EXPR, "entries"),
    ir.Attr: (*EXPR, "obj", "name"),
    ir.Index: (*EXPR, "obj", "index"),
    ir.Slice: (*EXPR, "obj", "lower", "upper"),
    ir.Keyword: (*POS, "name", "value"),
    ir.Call: (*EXPR, "func", "args", "kwargs", "mutates_state"),
    ir.Unary: (*EXPR, "op", "operand"),
    ir.Binary: (*EXPR, "op", "left", "right"),
    ir.Compare: (*EXPR, "operands", "ops"),
    ir.Formatted: (*EXPR, "value", "spec"),
    ir.Ternary: (*EXPR, "cond", "then", "other"),
    ir.Comprehension: (*EXPR, "elt", "value", "targets", "iter", "cond"),
    ir.Lambda: (*EXPR, "params", "body"),
    ir.ErrorCall: (*POS, "kind", "message", "fields"),
    ir.Let: (*POS, "kind", "name", "type", "value"),
    ir.Assign: (*POS, "kind", "target", "op", "value", "touches_state"),
    ir.Return: (*POS, "kind", "value"),
    ir.Require: (*POS, "kind", "cond", "error"),
    ir.Fail: (*POS, "kind", "error"),
    ir.Delete: (*POS, "kind", "target", "touches_state"),
    ir.ExprStmt: (*POS, "kind", "value"),
    ir.Pass: (*POS, "kind"),
    ir.Break: (*POS, "kind"),
    ir.Continue: (*POS, "kind"),
    ir.IfBranch: (*POS, "cond", "body"),
    ir.If: (*POS, "kind", "branches", "orelse"),
    ir.For: (*POS, "kind", "targets", "iter", "body"),
    ir.While: (*POS, "kind", "cond", "limit", "body"),
    ir.EnvHeader: (
        *DECL, "name", "title", "archetype", "domains", "extends", "seed", "rng", "clock", "item_places"
    ),
    ir.EnumDecl: (*DECL, "name", "members"),
    ir.Field_: (*POS, "name", "type", "default", "alias", "source", "absent", "tag", "values_from"),
    ir.RecordDecl: (*DECL, "name", "fields", "override", "tag", "members", "noun", "refers"),
    ir.StateDecl: (*DECL, "fields"),
    ir.WorldField: (*POS, "name", "type", "value", "source"),
    ir.WorldDecl: (*DECL, "fields"),
    ir.ScenarioItem: (*POS, "name", "value", "source"),
    ir.ScenarioDecl: (*DECL, "name", "items", "source", "renamed"),
    ir.Constraint: (*POS, "kind", "value"),
    ir.Param: (*POS, "name", "type", "default", "constraints", "doc", "values_from"),
    ir.Escape: (*POS, "kind", "text"),
    ir.ToolDecl: (
        *DECL, "name", "params", "returns", "body", "escape", "declared_reads", "declared_writes",
        "side_effect", "override", "reads", "writes", "errors", "intents",
    ),
    ir.FnDecl: (
        *DECL, "name", "params", "returns", "body", "escape", "declared_reads", "declared_writes",
        "side_effect", "override", "reads", "writes", "errors", "intents", "recursion",
    ),
    ir.UseScenario: (*POS, "kind", "name"),
    ir.TestLet: (*POS, "kind", "name", "value"),
    ir.TestCall: (*POS, "kind", "call"),
    ir.ExpectRaises: (*POS, "kind", "call", "error", "message"),
    ir.ExpectTrue: (*POS, "kind", "cond"),
    ir.TestDecl: (*DECL, "name", "steps"),
    ir.TaskDecl: (*DECL, "name", "scenario", "request", "solution", "verify"),
    ir.VerifyLine: (*POS, "cond", "weight", "each", "over"),
    ir.FamilyDecl: (
        *DECL, "name", "kind", "scenario", "reward", "plan", "requests", "solution", "verify",
        "request_places", "item_places",
    ),
    ir.DropDecl: (*DECL, "what", "name"),
    ir.RenameDecl: (*DECL, "what", "old", "new"),
    ir.DescribeDecl: (
        *DECL, "name", "param_docs", "param_lines", "param_cols", "intents", "intent_places", "param_sources"
    ),
    ir.SourceRef: (*POS, "name", "args", "file"),
    ir.ValuesDecl: (*DECL, "name", "items", "source"),
    ir.PersonaDecl: (*DECL, "text"),
    ir.Refer: (*POS, "field", "template", "before"),
    ir.DescribeRecordDecl: (*DECL, "name", "noun", "noun_place", "refers", "field_sources"),
    ir.OnLoadDecl: (*DECL, "body", "override"),
    ir.LoadOptionsDecl: (*DECL, "fields"),
}  # fmt: skip
"""The fields the fast parser writes for each IR class, in the model's order."""


@functools.cache
def schema_matches() -> bool:
    """The IR classes still have exactly the fields written here (another field, added
    to `compiler/ir/__init__.py` for a new construct, turns the fast path off until it is taught)."""
    return all(tuple(cls.model_fields) == names for cls, names in SCHEMA.items())
