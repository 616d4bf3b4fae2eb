"""`envc fix`: the automatic rewrites that carry a spec across an incompatible change of
the language (CHANGELOG.md lists each change beside its rewrite).

A change of a built-in's type or meaning either keeps every spec compiling, or comes
with a rewrite here, applied only where the spec no longer analyses: a rewrite that
cannot make a spec check is not kept, so `envc fix` never turns a good spec into a
different one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from compiler import ir
from compiler.analyse import AnalysisResult, analyse_source
from compiler.diagnostics import Diagnostic
from compiler.ir.tree import walk


@dataclass(frozen=True)
class Edit:
    """Replace `old` by `new` at (line, col), both 1-based."""

    line: int
    col: int
    old: str
    new: str


@dataclass(frozen=True)
class Rewrite:
    """One incompatible change of the language and how a spec written before it is carried over."""

    name: str
    change: str
    edits: Callable[[AnalysisResult, str], list[Edit]]


@dataclass(frozen=True)
class Fixed:
    """What `fix_source` made of a spec: its new text and the rewrites it applied."""

    text: str
    applied: list[str]


Body = ir.ToolDecl | ir.OnLoadDecl
"""A declaration with a body of statements (a helper is a ToolDecl too)."""


def _callables(module: ir.Module, path: str) -> Iterator[Body]:
    bodies: list[Body] = [*module.tools, *module.fns, *module.on_load]
    for decl in bodies:
        if decl.file == path:
            yield decl


def _failing(decls: list[Body], found: list[Diagnostic]) -> list[Body]:
    """The callables holding one of the diagnostics `found`: each is in the last callable
    that starts on or before its line (a spec's declarations do not nest)."""
    starts = sorted(decls, key=lambda decl: decl.line)
    failing: list[Body] = []
    for diagnostic in found:
        holder = [decl for decl in starts if decl.line <= diagnostic.line]
        if holder and holder[-1] not in failing:
            failing.append(holder[-1])
    return failing


def _as_number_to_as_float(result: AnalysisResult, path: str) -> list[Edit]:
    """`as_number` gave `optional[float]` and now gives `optional[number]` (an int stays an
    int). In a body where that no longer type-checks (E3001), `as_float` is the old meaning."""
    if result.module is None:
        return []
    mismatches = [d for d in result.diagnostics if d.code == "E3001" and d.path == path]
    edits: list[Edit] = []
    for decl in _failing(list(_callables(result.module, path)), mismatches):
        edits += [
            Edit(node.func.line, node.func.col, "as_number", "as_float")
            for node in walk(decl.body)
            if isinstance(node, ir.Call) and isinstance(node.func, ir.Name) and node.func.id == "as_number"
        ]
    return edits


REWRITES = (
    Rewrite(
        "as_float",
        "`as_number(j)` gives `optional[number]`, an int as an int (it gave `optional[float]`)",
        _as_number_to_as_float,
    ),
)
"""Every rewrite `envc fix` knows, oldest first: one per entry of CHANGELOG.md that has one."""


def apply_edits(text: str, edits: list[Edit]) -> str:
    """`text` with each edit made; an edit whose `old` text is not at its place is skipped."""
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        line = lines[edit.line - 1]
        start = edit.col - 1
        if line[start : start + len(edit.old)] == edit.old:
            lines[edit.line - 1] = line[:start] + edit.new + line[start + len(edit.old) :]
    return "\n".join(lines)


def _errors(result: AnalysisResult) -> int:
    return sum(d.severity == "error" for d in result.diagnostics)


def fix_source(text: str, path: str) -> Fixed:
    """`text` with every rewrite applied that lowers the number of errors of the spec."""
    applied: list[str] = []
    result = analyse_source(text, path)
    for rewrite in REWRITES:
        if _errors(result) == 0:
            break
        edits = rewrite.edits(result, path)
        if not edits:
            continue
        candidate = apply_edits(text, edits)
        after = analyse_source(candidate, path)
        if _errors(after) < _errors(result):
            text, result = candidate, after
            applied.append(f"{rewrite.name}: {len(edits)} place{'s' if len(edits) != 1 else ''}")
    return Fixed(text, applied)
