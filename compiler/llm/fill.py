"""Holes and fills: an `llm "…"` body replaced by body text, then checked by the real front end.

A fill is checked as if its author had typed it into the spec: the `llm` statement's
lines are replaced by the body (indented like it) in the spec's text (or the prototype
declaring the hole), and that text is loaded, parsed and analysed by
`compiler/front/load.py` and `compiler/analyse/`. So a fill gets every diagnostic
hand-written code gets, and the tool's `reads`/`writes` lines, still in place, are
enforced by the effects pass (`E4001`–`E4008`). A `LineMap` per rewritten file takes
positions back to the file on disk (a position inside a fill becomes the `llm` line,
with a note saying where in the fill), and `fill_position` gives the position inside
the fill, which is what the model is told when a fill goes back for repair.

Before analysis, the rewritten file must parse to the same declarations as the
original apart from the filled bodies (`outline`): a fill cannot add a tool, change a
signature or its declared effects, or swallow the rest of the file in a string; and a
fill is never a `python` body (`python_in_fill`): Python is trusted author code, never
a model's.
"""

from __future__ import annotations

import re
import textwrap
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compiler import ir
from compiler.analyse import AnalysisResult, analyse_loaded
from compiler.diagnostics import Diagnostic
from compiler.front.load import load_file
from compiler.front.parse import parse_source

ANALYSIS_LOCK = threading.Lock()
"""The parser's indenter keeps state per parse: fills are checked one at a time, while
requests to the model run concurrently."""
STAGES = ("reply", "parse", "structure", "types", "effects", "lower", "static", "dynamic")
"""Every check a fill goes through, in order; a failed fill is classed by the first it fails."""


@dataclass(frozen=True)
class Hole:
    """An `llm` body of one declaration of the merged module."""

    kind: str  # "tool" or "fn"
    name: str
    file: str
    """The spec file that declares it (a prototype's path for an inherited hole)."""
    line: int
    """The declaration's line."""
    start: int
    """First line of the `llm` statement."""
    stop: int
    """Last line it occupies (blank and comment lines up to the next code included)."""
    indent: int
    description: str

    @property
    def key(self) -> str:
        return f"{self.kind} {self.name}"


def find_holes(module: ir.Module | ir.Environment) -> list[Hole]:
    """Every `llm` body, tools first, in declaration order."""
    holes = []
    for decl in [*module.tools, *module.fns]:
        escape = decl.escape
        if escape is None or escape.kind != "llm":
            continue
        stop = escape.end_line - 1 if escape.end_col <= 1 else escape.end_line
        holes.append(
            Hole(
                "fn" if isinstance(decl, ir.FnDecl) else "tool",
                decl.name,
                decl.file,
                decl.line,
                escape.line,
                max(escape.line, stop),
                escape.col - 1,
                escape.text,
            )
        )
    return holes


def declaration(env: ir.Environment | ir.Module, hole: Hole) -> ir.ToolDecl:
    pool: list[ir.ToolDecl] = list(env.fns) if hole.kind == "fn" else list(env.tools)
    return next(d for d in pool if d.name == hole.name)


# --------------------------------------------------------------------------- bodies


def normalise_body(text: str) -> str:
    """Body text as it is spliced and locked: no common indent, no blank lines at either
    end, no trailing spaces, tabs in indentation as 4 spaces, one final newline."""
    lines = [re.sub(r"^[ \t]+", lambda m: m.group().expandtabs(4), line).rstrip() for line in text.split("\n")]
    body = textwrap.dedent("\n".join(lines)).strip("\n")
    return body + "\n" if body else ""


@dataclass(frozen=True)
class Segment:
    """Lines `first..last` of a rewritten file: original lines from `origin`, or a fill."""

    first: int
    last: int
    origin: int
    hole: Hole | None = None


@dataclass
class LineMap:
    """Positions in a rewritten file back to the file on disk."""

    segments: list[Segment] = field(default_factory=list)

    def locate(self, line: int) -> tuple[int, Hole | None, int]:
        """(line on disk, the hole whose fill holds `line` or None, line inside that fill)."""
        for segment in self.segments:
            if segment.first <= line <= segment.last:
                if segment.hole is not None:
                    return segment.hole.start, segment.hole, line - segment.first + 1
                return segment.origin + line - segment.first, None, 0
        if self.segments:
            last = self.segments[-1]
            return last.origin + line - last.first, None, 0
        return line, None, 0


def splice(text: str, fills: dict[Hole, str]) -> tuple[str, LineMap]:
    """`text` with each hole's `llm` lines replaced by its fill, and the map back."""
    lines = text.split("\n")
    out: list[str] = []
    line_map = LineMap()
    cursor = 1
    for hole in sorted(fills, key=lambda h: h.start):
        if hole.start > cursor:
            line_map.segments.append(Segment(len(out) + 1, len(out) + hole.start - cursor, cursor))
            out.extend(lines[cursor - 1 : hole.start - 1])
        pad = " " * hole.indent
        body = [pad + line if line else "" for line in (fills[hole].rstrip("\n") or "pass").split("\n")]
        line_map.segments.append(Segment(len(out) + 1, len(out) + len(body), hole.start, hole))
        out.extend(body)
        cursor = hole.stop + 1
    if cursor <= len(lines):
        line_map.segments.append(Segment(len(out) + 1, len(out) + len(lines) - cursor + 1, cursor))
        out.extend(lines[cursor - 1 :])
    return "\n".join(out), line_map


# --------------------------------------------------------------------------- positions


@dataclass(frozen=True)
class Located:
    """A diagnostic of a rewritten spec: as the user sees it (positions on disk), and
    where it is in a fill, if it is in one."""

    diagnostic: Diagnostic
    original: Diagnostic
    hole: Hole | None = None
    fill_line: int = 0
    fill_col: int = 0


def locate(diagnostic: Diagnostic, maps: dict[str, LineMap], fills: dict[Hole, str]) -> Located:
    line_map = maps.get(diagnostic.path)
    if line_map is None:
        return Located(diagnostic, diagnostic)
    line, hole, fill_line = line_map.locate(diagnostic.line)
    if hole is None:
        end_line = line_map.locate(diagnostic.end_line)[0] if diagnostic.end_line else 0
        return Located(diagnostic, replace(diagnostic, line=line, end_line=end_line))
    fill_col = max(1, diagnostic.col - hole.indent)
    fill_lines = fills.get(hole, "").split("\n")
    shown = fill_lines[fill_line - 1] if 0 < fill_line <= len(fill_lines) else ""
    note = f"in the fill of `{hole.key}`, line {fill_line}, column {fill_col}: {shown.strip()}"
    original = replace(
        diagnostic, line=hole.start, col=hole.indent + 1, end_line=0, end_col=0, notes=(*diagnostic.notes, note)
    )
    return Located(diagnostic, original, hole, fill_line, fill_col)


def hole_at_declaration(located: Located, holes: list[Hole]) -> Hole | None:
    """The hole a diagnostic is about: in its fill, or at the line of its declaration."""
    if located.hole is not None:
        return located.hole
    d = located.original
    return next((h for h in holes if h.file == d.path and h.line == d.line), None)


# --------------------------------------------------------------------------- checking


@dataclass
class FillCheck:
    """The verdict on a set of fills: the first failed stage (or "") and what failed."""

    stage: str
    located: list[Located]
    analysis: AnalysisResult | None = None
    maps: dict[str, LineMap] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """The files as on disk, for caret excerpts of the mapped diagnostics."""

    @property
    def ok(self) -> bool:
        return not self.stage

    def diagnostics(self) -> list[Diagnostic]:
        return [item.original for item in self.located]


def check_fills(spec: Path, sources: dict[str, str], fills: dict[Hole, str], baseline: list[Diagnostic]) -> FillCheck:
    """Splice `fills` into the spec (and prototypes) and run the front end on the result.

    `sources` are the texts the unfilled spec was loaded from; `baseline` its diagnostics
    (warnings a fill is not blamed for). Only diagnostics the fills bring count."""
    by_file: dict[str, dict[Hole, str]] = {}
    for hole, body in fills.items():
        by_file.setdefault(hole.file, {})[hole] = body
    texts: dict[str, str] = {}
    maps: dict[str, LineMap] = {}
    for file, file_fills in by_file.items():
        texts[file], maps[file] = splice(sources[file], file_fills)
    originals = {file: sources[file] for file in by_file}
    seen = {_identity(d) for d in baseline}

    def fresh(diagnostics: list[Diagnostic]) -> list[Located]:
        found = [locate(d, maps, fills) for d in diagnostics]
        return [item for item in found if _identity(item.original) not in seen]

    with ANALYSIS_LOCK:
        syntax: list[Diagnostic] = []
        for file, text in texts.items():
            syntax.extend(parse_source(text, file).diagnostics)
        if fresh(syntax):
            return FillCheck("parse", fresh(syntax), maps=maps, sources=originals)
        for file, text in texts.items():
            changed = python_in_fill(text, file, set(by_file[file])) or changed_outside_bodies(
                sources[file], text, file, set(by_file[file])
            )
            if changed:
                return FillCheck("structure", [locate(changed, maps, fills)], maps=maps, sources=originals)
        loaded = load_file(spec, rewrite=lambda file, text: texts.get(file, text))
        analysis = analyse_loaded(loaded)
    problems = fresh(analysis.diagnostics)
    analysis.sources.update(originals)
    if problems:
        stage = "effects" if all(p.original.code.startswith("E4") for p in problems) else "types"
        return FillCheck(stage, problems, analysis, maps, originals)
    return FillCheck("", [], analysis, maps, originals)


def _identity(d: Diagnostic) -> tuple[str, str, int, int, str]:
    return (d.code, d.path, d.line, d.col, d.message)


def changed_outside_bodies(original: str, rewritten: str, file: str, holes: set[Hole]) -> Diagnostic | None:
    """E6108 when the rewritten file declares anything other than the original does,
    apart from the filled bodies: the fill broke out of its block."""
    before = parse_source(original, file).module
    after = parse_source(rewritten, file).module
    if before is None or after is None:
        return None
    names = {(h.kind, h.name) for h in holes}
    if outline(before, names) == outline(after, names):
        return None
    hole = min(holes, key=lambda h: h.start)
    message = (
        "the fill changes the spec outside its own body (a declaration, signature, docstring, "
        "reads/writes line or a later part of the file); a fill is statements only"
    )
    return Diagnostic("E6108", message, file, hole.start, hole.indent + 1)


MODEL_WRITES_NO_PYTHON = (
    "a model writes the body language only (python bodies are trusted author code, never taken from a model)"
)
"""Why a model's `python` body is refused: a fill, a drafted spec (compiler/build/draft.py)."""
PYTHON_FROM_A_MODEL = f"the fill is a `python` body: {MODEL_WRITES_NO_PYTHON}"


def python_in_fill(rewritten: str, file: str, holes: set[Hole]) -> Diagnostic | None:
    """E6108 when a fill is a `python` escape: Python from a model would run in QC and
    in every session unchecked by the analyser, so a model's answer never becomes one."""
    module = parse_source(rewritten, file).module
    if module is None:
        return None
    names = {(h.kind, h.name): h for h in holes}
    for kind, decls in (("tool", module.tools), ("fn", module.fns)):
        for decl in decls:
            hole = names.get((kind, decl.name))
            if hole is not None and decl.escape is not None and decl.escape.kind == "python":
                return Diagnostic("E6108", PYTHON_FROM_A_MODEL, file, hole.start, hole.indent + 1)
    return None


def outline(module: ir.Module, filled: set[tuple[str, str]]) -> Any:
    """The module as data, positions and the filled declarations' bodies left out."""
    data = module.model_dump()
    for kind, group in (("tool", "tools"), ("fn", "fns")):
        for decl in data[group]:
            if (kind, decl["name"]) in filled:
                decl["body"], decl["escape"] = [], None
    return _without_positions(data)


def _without_positions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_positions(v) for k, v in value.items() if k not in ("line", "col", "end_line", "end_col")}
    if isinstance(value, list):
        return [_without_positions(v) for v in value]
    return value
