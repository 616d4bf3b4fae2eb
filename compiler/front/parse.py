"""Stage 1, parse: `.envspec` text to an IR `Module`, or syntax diagnostics.

Two parsers build the same IR. The hand-written one (`fastparse_decls.parse_decls`,
over `scan.py`'s tokens) is tried first: about four times faster than Lark on clean
input, it refuses anything it does not build exactly as Lark does. Lark
(`lark_parser.py`) parses what it refuses and is the reference grammar and the path of
every syntax diagnostic. This module runs one then the other and gathers the top-level
declarations into the module; neither parser imports it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler import ir
from compiler.diagnostics import Diagnostic
from compiler.front import fastparse_decls
from compiler.front.grammar import MAX_SOURCE_BYTES, MAX_SYNTAX_ERRORS
from compiler.front.lark_builders import Collector
from compiler.front.lark_parser import errors_after, try_parse


@dataclass
class ParseResult:
    module: ir.Module | None
    diagnostics: list[Diagnostic]
    by_lark: bool = False
    """Lark parsed the text (the fast parser refused it): about five times slower."""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Building IR allocates hundreds of thousands of objects and no garbage cycles;
    pausing the cyclic collector meanwhile keeps big specs from going superlinear.

    On the way out, what was built goes to the oldest generation unscanned (`freeze`
    then `unfreeze`), so the first collection afterwards does not walk the whole IR
    (a quarter of the fast parse of a 5,000-line spec); a deliberate freeze elsewhere
    (`envc serve`) is left alone."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def parse_source(source: str, path: str) -> ParseResult:
    """Parse spec text. Never raises for bad input: problems come back as diagnostics."""
    with gc_paused():
        return _parse_source(source, path)


def _parse_source(source: str, path: str) -> ParseResult:
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return ParseResult(None, [Diagnostic("E0005", "spec is larger than 5 MB", path, 1, 1)])
    text = source.removeprefix("\ufeff").replace("\r\n", "\n")  # BOM, CRLF: positions stay the same
    text = text if text.endswith("\n") else text + "\n"
    if "\0" in text:  # refused anywhere, strings and comments included: not spec text
        return ParseResult(None, _nul_characters(text, path))
    collector = Collector(path)
    fast = fastparse_decls.parse_decls(text)  # None: input left to Lark, which reports its errors
    if fast is not None:
        collector.result, syntax = fast, None
    else:
        syntax = try_parse(text, path, collector)
    if syntax is None:
        module, errors = _assemble(collector.result, path)
        diagnostics = collector.errors + errors
        if diagnostics:
            return ParseResult(None, sorted(diagnostics, key=Diagnostic.sort_key))
        return ParseResult(module, [], by_lark=fast is None)
    errors = [syntax, *collector.errors]
    errors.extend(errors_after(text, path, syntax.line))
    unique = {(d.line, d.col, d.code): d for d in errors}
    return ParseResult(None, sorted(unique.values(), key=Diagnostic.sort_key))


# --------------------------------------------------------------------------- cache


def _nul_characters(text: str, path: str) -> list[Diagnostic]:
    """E1001 at every NUL character (at most MAX_SYNTAX_ERRORS + 1), before parsing.
    The lexer alone would take a NUL inside a string (and copy it into the generated
    code) or a comment; a NUL anywhere marks a binary or corrupted file, so it is
    refused wherever it is and nothing else is reported around it."""
    found: list[Diagnostic] = []
    for number, line in enumerate(text.split("\n"), start=1):
        col = line.find("\0")
        while col != -1 and len(found) <= MAX_SYNTAX_ERRORS:
            found.append(
                Diagnostic(
                    "E1001",
                    "NUL character (U+0000) in the spec; envc refuses it anywhere, even in a string or a comment",
                    path,
                    number,
                    col + 1,
                    number,
                    col + 2,
                    hint="remove it; a string that needs the character can write the escape `\\u0000`",
                )
            )
            col = line.find("\0", col + 1)
    return found


def parse_file(path: Path) -> ParseResult:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return ParseResult(None, [Diagnostic("E0001", f"cannot read {path}: {exc.strerror}", str(path), 0, 0)])
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return ParseResult(None, [Diagnostic("E0002", f"byte {exc.start} is not valid UTF-8", str(path), line, 1)])
    return parse_source(source, str(path))


def _assemble(decls: list[Any], path: str) -> tuple[ir.Module, list[Diagnostic]]:
    """Sort top-level declarations into the module's lists, in source order."""
    module = ir.Module(path=path)
    errors: list[Diagnostic] = []
    by_type: dict[type, list[Any]] = {
        ir.EnumDecl: module.enums,
        ir.RecordDecl: module.records,
        ir.StateDecl: module.state,
        ir.WorldDecl: module.world,
        ir.ScenarioDecl: module.scenarios,
        ir.FnDecl: module.fns,
        ir.ToolDecl: module.tools,
        ir.TestDecl: module.tests,
        ir.TaskDecl: module.tasks,
        ir.FamilyDecl: module.families,
        ir.DropDecl: module.drops,
        ir.RenameDecl: module.renames,
        ir.DescribeDecl: module.describes,
        ir.OnLoadDecl: module.on_load,
        ir.LoadOptionsDecl: module.load_options,
        ir.ValuesDecl: module.values,
        ir.PersonaDecl: module.personas,
        ir.DescribeRecordDecl: module.describe_records,
    }
    for decl in decls:
        decl.file = path
        if isinstance(decl, ir.EnvHeader):
            if module.header is not None:
                errors.append(Diagnostic("E2001", "a spec has one `environment` header", path, decl.line, decl.col))
            else:
                module.header = decl
            continue
        by_type[type(decl)].append(decl)
    return module, errors
