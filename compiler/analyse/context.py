"""What the analysis passes share: the module under analysis, the symbol tables the
symbols pass fills, the constant values the constants pass computes, and the list the
passes report diagnostics into."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler import builtins as bi
from compiler import ir
from compiler.diagnostics import Diagnostic
from compiler.load import WorldFile


@dataclass
class Analysis:
    module: ir.Module
    diags: list[Diagnostic]
    world_files: dict[str, WorldFile] = field(default_factory=dict)
    # symbols
    enums: dict[str, ir.EnumDecl] = field(default_factory=dict)
    records: dict[str, ir.RecordDecl] = field(default_factory=lambda: {"AuditEntry": bi.AUDIT_ENTRY})
    state: dict[str, ir.Field_] = field(default_factory=dict)
    world: dict[str, ir.WorldField] = field(default_factory=dict)
    fns: dict[str, ir.FnDecl] = field(default_factory=dict)
    tools: dict[str, ir.ToolDecl] = field(default_factory=dict)
    scenarios: dict[str, ir.ScenarioDecl] = field(default_factory=dict)
    # constants
    record_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    world_values: dict[str, Any] = field(default_factory=dict)
    state_defaults: dict[str, Any] = field(default_factory=dict)
    scenario_values: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def header(self) -> ir.EnvHeader:
        assert self.module.header is not None
        return self.module.header

    def error(self, code: str, message: str, node: ir.Node | None, file: str, hint: str = "") -> None:
        line, col, end_line, end_col = (node.line, node.col, node.end_line, node.end_col) if node else (1, 1, 0, 0)
        self.diags.append(Diagnostic(code, message, file, line, col, end_line, end_col, hint=hint))

    def state_file(self, name: str) -> str:
        """The spec (prototype or domain) that declares a state field."""
        for decl in self.module.state:
            if any(f is self.state.get(name) for f in decl.fields):
                return decl.file
        return self.module.path

    def world_file(self, world_field: ir.WorldField) -> str:
        """The spec that declares a world field."""
        for decl in self.module.world:
            if any(f is world_field for f in decl.fields):
                return decl.file
        return self.module.path
