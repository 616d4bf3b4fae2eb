"""What the analysis passes share: the module under analysis, the symbol tables the
symbols pass fills, the constant values the constants pass computes, and the list the
passes report diagnostics into."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from compiler import ir
from compiler.diagnostics import Diagnostic
from compiler.front.load import DataFile
from compiler.ir.tree import NODE_FIELDS, node_fields_of
from compiler.library import builtins as bi


@dataclass
class Analysis:
    module: ir.Module
    diags: list[Diagnostic]
    data_files: dict[str, DataFile] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """Spec text by file: where a declared name sits on its line, for underlines."""
    # symbols
    enums: dict[str, ir.EnumDecl] = field(default_factory=dict)
    records: dict[str, ir.RecordDecl] = field(default_factory=lambda: {"AuditEntry": bi.AUDIT_ENTRY})
    state: dict[str, ir.Field_] = field(default_factory=dict)
    world: dict[str, ir.WorldField] = field(default_factory=dict)
    fns: dict[str, ir.FnDecl] = field(default_factory=dict)
    tools: dict[str, ir.ToolDecl] = field(default_factory=dict)
    scenarios: dict[str, ir.ScenarioDecl] = field(default_factory=dict)
    # the load step (compiler/analyse/onload.py)
    load_options: dict[str, ir.Field_] = field(default_factory=dict)
    option_files: dict[str, str] = field(default_factory=dict)
    on_load: ir.FnDecl | None = None
    # constants
    record_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    world_values: dict[str, Any] = field(default_factory=dict)
    state_defaults: dict[str, Any] = field(default_factory=dict)
    scenario_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    # task values (compiler/analyse/sources.py)
    value_pools: dict[str, list[Any]] = field(default_factory=dict)
    pool_types: dict[str, str] = field(default_factory=dict)
    """Each pool's type (`str`, `int`, `float`), "" when the pool has errors."""
    calls: dict[int, set[str]] = field(default_factory=dict, repr=False)
    """`id(body) -> names it calls`, filled by `called_names`."""
    deletes: dict[int, set[str]] = field(default_factory=dict, repr=False)
    """`id(body) -> fields it deletes (`del x.field`)`, found in the same walk."""
    deleted_fields: dict[str, set[str] | None] | None = field(default=None, repr=False)
    """`shapes.fields_deleted` of the helpers, computed once when the type checker first
    needs it (per checked callable it was quadratic in the number of helpers)."""
    inferred_effects: dict[int, Any] = field(default_factory=dict, repr=False)
    """`id(tool or helper) -> effects.Effects`, inferred by the types pass as it checked
    the body (`effects.infer_while_checking`), for the effects pass to take."""
    declaring_files: dict[int, str] = field(default_factory=dict, repr=False)
    """`id(state or world field) -> spec declaring it`, filled by `state_file` and
    `world_file` (a scan per field was quadratic in the number of fields)."""

    @property
    def header(self) -> ir.EnvHeader:
        assert self.module.header is not None
        return self.module.header

    def error(self, code: str, message: str, node: ir.Node | None, file: str, hint: str = "") -> None:
        line, col, end_line, end_col = (node.line, node.col, node.end_line, node.end_col) if node else (1, 1, 0, 0)
        self.diags.append(Diagnostic(code, message, file, line, col, end_line, end_col, hint=hint))

    def warning(self, code: str, message: str, node: ir.Node, file: str, hint: str = "") -> None:
        """A diagnostic that does not stop the spec from compiling (E2024, E2039, E2042)."""
        line, col, end_line, end_col = node.line, node.col, node.end_line, node.end_col
        self.diags.append(Diagnostic(code, message, file, line, col, end_line, end_col, hint=hint, severity="warning"))

    def name_span(self, node: ir.Node, name: str, file: str) -> ir.Node:
        """The span of `name` where `node` (a `let`, a loop, a declaration) introduces it:
        the first whole-word occurrence on the node's line from its column, so an
        underline marks the whole name rather than the statement's keyword. The node
        itself when the text is not at hand (a spec given as an IR, a rewritten line)."""
        lines = self.sources.get(file, "").splitlines()
        if not 0 < node.line <= len(lines):
            return node
        found = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])").search(lines[node.line - 1], max(node.col - 1, 0))
        if found is None:
            return node
        return ir.Node(line=node.line, col=found.start() + 1, end_line=node.line, end_col=found.end() + 1)

    def called_names(self, body: list[ir.Stmt]) -> set[str]:
        """`irtree.called_names(body)`, walked once per analysis: the symbols and the
        effects passes both ask (bodies keep their calls; only `ty` and `ref` change)."""
        key = id(body)
        if key not in self.calls:
            self.calls[key], self.deletes[key] = _called_and_deleted(body)
        return self.calls[key]

    def deleted_fields_of(self, body: list[ir.Stmt]) -> set[str]:
        """The field names `del x.field` statements of a body delete (shapes asks, for
        the helpers), from the walk that finds its calls."""
        key = id(body)
        if key not in self.deletes:
            self.calls[key], self.deletes[key] = _called_and_deleted(body)
        return self.deletes[key]

    def state_file(self, name: str) -> str:
        """The spec (prototype or domain) that declares a state field."""
        field_ = self.state.get(name)
        if field_ is None:
            return self.module.path
        return self._declaring_file(field_, self.module.state)

    def world_file(self, world_field: ir.WorldField) -> str:
        """The spec that declares a world field."""
        return self._declaring_file(world_field, self.module.world)

    def _declaring_file(self, field_: ir.Node, decls: Sequence[ir.StateDecl | ir.WorldDecl]) -> str:
        if id(field_) not in self.declaring_files:  # first use, or a field declared since
            self.declaring_files.update({id(f): decl.file for decl in decls for f in decl.fields})
        return self.declaring_files.get(id(field_), self.module.path)


def set_field(node: BaseModel, name: str, value: Any) -> None:
    """`node.name = value` as pydantic's `__setattr__` does it for a plain field of the
    IR (no assignment validation, not frozen: the value into `__dict__`, the name into
    the fields set), without its dispatch: the type checker makes about 20,000 of these
    (`ty`, `ref`) on a 5,000-line spec, an eighth of the analysis through pydantic."""
    node.__dict__[name] = value
    node.__pydantic_fields_set__.add(name)


def _called_and_deleted(body: list[ir.Stmt]) -> tuple[set[str], set[str]]:
    """`irtree.called_names(body)`, and the fields its `del x.field` statements delete,
    in one walk reading from each node's `__dict__` only the fields that may hold nodes
    (`irtree.node_fields_of`) instead of `model_fields` and a `getattr` per field: that walk was
    a third of the analysis of a 5,000-line spec (`benchmarks/frontend.py --profile`)."""
    names: set[str] = set()
    deleted: set[str] = set()
    stack: list[Any] = [body]
    pop, push, extend = stack.pop, stack.append, stack.extend
    node_fields = NODE_FIELDS
    while stack:
        item = pop()
        cls = item.__class__
        if cls is list:
            extend(item)
            continue
        fields = node_fields.get(cls)
        if fields is None:
            if not isinstance(item, BaseModel):
                continue  # the text of an f-string
            fields = node_fields_of(cls)
        values = item.__dict__
        if cls is ir.Call and values["func"].__class__ is ir.Name:  # (neither has subclasses)
            names.add(values["func"].id)
        elif cls is ir.Delete and values["target"].__class__ is ir.Attr:
            deleted.add(values["target"].name)
        for name in fields:
            value = values[name]
            if value is not None:
                push(value)  # a list or a node
    return names, deleted
