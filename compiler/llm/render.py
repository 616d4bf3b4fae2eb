"""IR back to envspec text, for prompts: declarations, bodies and tests as a model reads them.

Why not `compiler/front/fmt.py`: it reproduces a file's layout and comments, and it is left out
of the compiler fingerprint because it cannot shape output; prompts do shape the lock's
keys, so their printer is fingerprinted. This one prints from the IR alone (after
prototypes are merged and renamed), in the canonical style, with no comments.
tests/llm/test_render.py parses what it prints back to the same IR for every shipped spec.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler import ir
from compiler.front.printer import expr, loop_head, quote, simple_stmt, type_ref

INDENT = "    "

# The expressions, types and string literals of a spec are printed by compiler/front/printer.py,
# the printer `envc fmt` uses too.
type_text = type_ref


# --------------------------------------------------------------------------- statements


def body_lines(body: Sequence[ir.Stmt], depth: int = 0) -> list[str]:
    """A body's statements, one line each (blocks indented under their header)."""
    lines: list[str] = []
    for stmt in body:
        lines.extend(_stmt(stmt, depth))
    return lines


def body_text(body: Sequence[ir.Stmt]) -> str:
    return "\n".join(body_lines(body)) + "\n"


def _stmt(s: ir.Stmt, depth: int) -> list[str]:
    pad = INDENT * depth
    if isinstance(s, ir.If):
        lines: list[str] = []
        for index, branch in enumerate(s.branches):
            lines.append(f"{pad}{'elif' if index else 'if'} {expr(branch.cond)}:")
            lines.extend(body_lines(branch.body, depth + 1))
        if s.orelse:
            lines.append(f"{pad}else:")
            lines.extend(body_lines(s.orelse, depth + 1))
        return lines
    if isinstance(s, (ir.For, ir.While)):
        return [f"{pad}{loop_head(s)}", *body_lines(s.body, depth + 1)]
    return [pad + simple_stmt(s)]


# --------------------------------------------------------------------------- declarations


def doc_lines(doc: str, depth: int) -> list[str]:
    if not doc:
        return []
    pad = INDENT * depth
    if "\n" not in doc:
        return [pad + quote(doc)]
    inner = [pad + line.replace('"""', '\\"\\"\\"') if line else "" for line in doc.split("\n")]
    return [pad + '"""', *inner, pad + '"""']


def param_text(p: ir.Param) -> str:
    text = f"{p.name}: {type_text(p.type)}"
    if p.default is not None:
        text += f" = {expr(p.default)}"
    return text + "".join(f" {c.kind} {expr(c.value)}" for c in p.constraints)


def callable_head(decl: ir.ToolDecl) -> str:
    keyword = "fn" if isinstance(decl, ir.FnDecl) else "tool"
    params = ", ".join(param_text(p) for p in decl.params)
    return f"{keyword} {decl.name}({params}) -> {type_text(decl.returns)}:"


def effect_lines(decl: ir.ToolDecl, declared_only: bool = True) -> list[str]:
    """`reads`/`writes` lines: as declared, or (for bodies envc inferred) as inferred."""
    lines = []
    for word, declared, inferred in (
        ("reads", decl.declared_reads, decl.reads),
        ("writes", decl.declared_writes, decl.writes),
    ):
        names = declared if declared is not None or declared_only else inferred
        if names is not None:
            lines.append(f"{INDENT}{word} {', '.join(names) or 'nothing'}")
    if decl.side_effect:
        lines.append(f"{INDENT}side_effect {quote(decl.side_effect)}")
    lines += [f"{INDENT}param {p.name} {quote(p.doc)}" for p in decl.params if p.doc]
    return lines


def callable_text(decl: ir.ToolDecl, with_body: bool = True) -> str:
    """A tool or helper as spec text; without its body, `...` stands for it."""
    lines = [callable_head(decl), *doc_lines(decl.doc, 1), *effect_lines(decl)]
    if decl.escape is not None and with_body:
        lines.append(f"{INDENT}{decl.escape.kind} {quote(decl.escape.text)}")
    elif with_body:
        lines += body_lines(decl.body, 1)
    else:
        lines.append(f"{INDENT}...")
    return "\n".join(lines)


def enum_text(decl: ir.EnumDecl) -> str:
    return "\n".join([f"enum {decl.name}:", *doc_lines(decl.doc, 1), f"{INDENT}{', '.join(decl.members)}"])


def field_text(f: ir.Field_) -> str:
    if f.source:
        return f"{f.name}: {type_text(f.type)} from {quote(f.source)}"
    default = f" = {expr(f.default)}" if f.default is not None else ""
    alias = f" alias {quote(f.alias)}" if f.alias else ""
    return f"{f.name}{'?' if f.absent else ''}: {type_text(f.type)}{default}{alias}"


def record_text(decl: ir.RecordDecl) -> str:
    if decl.is_union:
        members = [f"{INDENT}{m} = {quote(v)}" for m, v in decl.members.items()]
        return "\n".join([f"union {decl.name} by {decl.tag}:", *doc_lines(decl.doc, 1), *members])
    return "\n".join([f"record {decl.name}:", *doc_lines(decl.doc, 1), *(INDENT + field_text(f) for f in decl.fields)])


def test_text(decl: ir.TestDecl) -> str:
    return "\n".join([f"test {decl.name}:", *doc_lines(decl.doc, 1), *(INDENT + test_step(s) for s in decl.steps)])


def test_step(step: ir.TestStmt) -> str:
    if isinstance(step, ir.UseScenario):
        return f"scenario {step.name}"
    if isinstance(step, ir.TestLet):
        return f"let {step.name} = {expr(step.value)}"
    if isinstance(step, ir.TestCall):
        return expr(step.call)
    if isinstance(step, ir.ExpectRaises):
        return f"{expr(step.call)} raises {step.error}" + (f" {quote(step.message)}" if step.message else "")
    return f"expect {expr(step.cond)}"


def task_text(decl: ir.TaskDecl) -> str:
    lines = [f"task {decl.name}:", *doc_lines(decl.doc, 1)]
    if decl.scenario:
        lines.append(f"{INDENT}scenario {decl.scenario}")
    lines.append(f"{INDENT}request {quote(decl.request)}")
    if decl.solution:
        lines += [f"{INDENT}solution:", *(INDENT * 2 + expr(e) for e in decl.solution)]
    lines += [f"{INDENT}verify {expr(e)}" for e in decl.verify]
    return "\n".join(lines)
