"""The messages of a fill request, built from the analysed IR, and the reading of replies.

What the model is given, and why: the language reference (`reference.md`, with the
built-ins listed from the registry, so it is never behind `compiler/library/`); the
environment's header, enums, records, state and world schema; the helpers it may call;
the tools most related to the hole in full (they show the environment's idiom) and
the others by signature; the tests and tasks that exercise the hole; for a spec that
extends a prototype, the prototype's contract (what it promises, what the spec
inherits and overrides, the prototype's own version of the hole, and the prototype's
tests the package must still pass); and the hole itself: signature, docstring,
parameter docs, declared effects and description. All of it is printed from the IR
(`render`), so reformatting a spec or editing a comment does not change a request,
while any change in meaning does, and with it the lock's key.

The reply must hold the body alone in one fenced block; `extract_body` takes it out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from compiler import ir, library
from compiler.front import load, printer
from compiler.ir.tree import walk
from compiler.library import builtins as bi
from compiler.llm import render
from compiler.llm.fill import ANALYSIS_LOCK, normalise_body
from compiler.llm.provider import Message

RELATED_TOOLS = 6
"""Neighbouring tools shown with their bodies; the rest by signature (prompts stay small)."""
LONG_VALUE = 160
"""World values and state defaults longer than this are shown by type alone."""

SYSTEM = """\
You write the bodies of tools in envspec, a small statically typed language for the tools
of sandbox environments. You are given an environment and one tool (or helper) whose body
is missing. Reply with that body only, in one fenced block:

```envspec
let ...
return ...
```

Rules:
- Write statements of the envspec body language described below. It is NOT Python: use
  `let` to bind a name, `require cond else kind("message", ...)` and `fail kind(...)` for
  errors, only the built-in functions and methods listed, no imports, no classes; a
  `while` may give its bound (`while cond max 100:`).
- Do not repeat the `tool` line, the docstring, or the `reads`/`writes` lines: write the
  statements that come after them, starting at column 0.
- The body must read and write exactly the state fields the declaration lists.
- Use the environment's records, enums, state fields, world data and helpers by name.
  A tool cannot call another tool.
"""


@functools.cache
def language_reference() -> str:
    """reference.md and the built-in functions and methods of the registry."""
    text = (Path(__file__).resolve().parent / "reference.md").read_text(encoding="utf-8").strip()
    lines = [
        text,
        "",
        "## Built-in functions",
        "",
        "Examples use `xs: list[int]`, `m: map[str, int]`, `s: str`, `d: date`, `t: datetime`, `j: json`.",
        "",
    ]
    for name, function in library.FUNCTIONS.items():
        changes = f" (changes `{function.effect.writes}`)" if function.effect.writes else ""
        lines.append(f"- `{function.example}`{changes}" if name in function.example else f"- `{name}`{changes}")
    lines += ["", "## Methods", ""]
    by_receiver: dict[str, list[str]] = {}
    for (receiver, name), method in library.METHODS.items():
        by_receiver.setdefault(receiver, []).append(name + (" (changes the receiver)" if method.mutates else ""))
    for receiver, names in by_receiver.items():
        lines.append(f"- `{receiver}`: " + ", ".join(names))
    lines += ["", "Error kinds: " + ", ".join(f"`{k}`" for k in bi.ERROR_KINDS) + "."]
    return "\n".join(lines) + "\n"


def system_message() -> Message:
    return Message("system", SYSTEM + "\n" + language_reference())


def fill_messages(env: ir.Environment, decl: ir.ToolDecl) -> list[Message]:
    """The first request for `decl`'s body: system rules and reference, then the context."""
    return [system_message(), Message("user", fill_context(env, decl))]


def fill_context(env: ir.Environment, decl: ir.ToolDecl) -> str:
    kind = "helper" if isinstance(decl, ir.FnDecl) else "tool"
    parts = [environment_text(env, exclude=decl)]
    exercised = exercising(env, decl)
    if exercised:
        parts.append(f"## Tests and tasks that exercise `{decl.name}`\n\n" + block("\n\n".join(exercised)))
    contract = prototype_contract(env, decl)
    if contract:
        parts.append(contract)
    reads = ", ".join(decl.declared_reads or []) or "nothing"
    writes = ", ".join(decl.declared_writes or []) or "nothing"
    assert decl.escape is not None
    parts.append(
        f"## The {kind} to write\n\n"
        + block(render.callable_text(decl, with_body=False))
        + f"\n\nWhat the body must do: {decl.escape.text}\n\n"
        + f"It must read exactly: {reads}. It must write exactly: {writes}. "
        + f"It returns {render.type_text(decl.returns)}.\n"
        + "Reply with the body only, in one ```envspec block."
    )
    return "\n\n".join(parts) + "\n"


def header_text(env: ir.Environment) -> str:
    """The environment's name, title, doc, archetype, prototype and domains."""
    header = env.header
    about = [f"# Environment `{header.name}`" + (f": {header.title}" if header.title else "")]
    if header.doc:
        about.append(header.doc)
    facts = []
    if header.archetype:
        facts.append(f"archetype {header.archetype}")
    if header.extends:
        facts.append(f"extends the prototype `{header.extends}`")
    if header.domains:
        facts.append("domains: " + ", ".join(header.domains))
    if facts:
        about.append("; ".join(facts) + ".")
    return "\n\n".join(about)


def type_sections(env: ir.Environment) -> list[str]:
    """The enums and records, one section each (none for an environment without them)."""
    sections = []
    if env.enums:
        sections.append("## Enums\n\n" + block("\n\n".join(render.enum_text(e) for e in env.enums)))
    if env.records:
        sections.append("## Records\n\n" + block("\n\n".join(render.record_text(r) for r in env.records)))
    return sections


def environment_text(env: ir.Environment, exclude: ir.ToolDecl | None = None) -> str:
    """The environment as a model needs it to write a body: every name a body can use."""
    sections = [header_text(env), *type_sections(env)]
    sections.append("## State (read and changed by tools)\n\n" + block(_fields_text("state:", env)))
    if env.world:
        sections.append("## World data (read-only)\n\n" + block(_world_text(env)))
    if env.scenarios:
        lines = [f"- `{s.name}`" + (f": {s.doc}" if s.doc else "") for s in env.scenarios]
        sections.append("## Scenarios (named starting states of tests)\n\n" + "\n".join(lines))
    helpers = [f for f in env.fns if f is not exclude]
    if helpers:
        text = "\n\n".join(_callable_summary(f, with_body=True) for f in helpers)
        sections.append("## Helpers (callable from bodies)\n\n" + block(text))
    tools = [t for t in env.tools if t is not exclude]
    if tools:
        related = set(_related(tools, exclude)[:RELATED_TOOLS])
        text = "\n\n".join(_callable_summary(t, with_body=t.name in related) for t in tools)
        sections.append("## Other tools (bodies cannot call them)\n\n" + block(text))
    return "\n\n".join(sections)


def _fields_text(head: str, env: ir.Environment) -> str:
    lines = [head]
    for f in env.state:
        text = render.field_text(f)
        lines.append(render.INDENT + (text if len(text) <= LONG_VALUE else f"{f.name}: {render.type_text(f.type)}"))
    return "\n".join(lines)


def _world_text(env: ir.Environment) -> str:
    lines = ["world:"]
    for w in env.world:
        head = f"{w.name}: {render.type_text(w.type)}"
        value = printer.expr(w.value) if w.value is not None else ""
        lines.append(render.INDENT + (f"{head} = {value}" if value and len(head + value) <= LONG_VALUE else head))
    return "\n".join(lines)


def _callable_summary(decl: ir.ToolDecl, with_body: bool) -> str:
    """Signature, doc and effects (inferred when the spec gives none); the body if asked."""
    lines = [render.callable_head(decl), *render.doc_lines(decl.doc, 1)]
    lines += [
        line
        for line in render.effect_lines(decl, declared_only=False)
        if not line.strip().startswith(("reads", "writes"))
    ]
    lines.append(f"{render.INDENT}reads {', '.join(decl.reads) or 'nothing'}")
    lines.append(f"{render.INDENT}writes {', '.join(decl.writes) or 'nothing'}")
    if decl.errors:
        lines.append(f"{render.INDENT}# may fail with: {', '.join(decl.errors)}")
    if decl.escape is not None:
        lines.append(f"{render.INDENT}{decl.escape.kind} {printer.quote(decl.escape.text)}")
    elif with_body:
        lines += render.body_lines(decl.body, 1)
    else:
        lines.append(f"{render.INDENT}...")
    return "\n".join(lines)


def _related(tools: list[ir.ToolDecl], hole: ir.ToolDecl | None) -> list[str]:
    """Tools by how many state fields they share with the hole, then by name."""
    if hole is None:
        return sorted(t.name for t in tools)
    mine = set(hole.declared_reads or []) | set(hole.declared_writes or [])
    scored = [(-len(mine & (set(t.reads) | set(t.writes))), t.name) for t in tools if t.escape is None]
    return [name for _, name in sorted(scored)]


def exercising(env: ir.Environment, decl: ir.ToolDecl) -> list[str]:
    """The tests and tasks that call `decl` (a helper: directly, or through a tool)."""
    names = {decl.name}
    if isinstance(decl, ir.FnDecl):
        names |= {t.name for t in env.tools if decl.name in _calls(t)}
    found = [render.test_text(t) for t in env.tests if names & _calls(t)]
    found += [render.task_text(t) for t in env.tasks if names & _calls(t)]
    return found


def _calls(node: object) -> set[str]:
    return {n.func.id for n in walk(node) if isinstance(n, ir.Call) and isinstance(n.func, ir.Name)}


# --------------------------------------------------------------------------- the prototype's contract


def prototype_contract(env: ir.Environment, decl: ir.ToolDecl) -> str:
    """What the prototype `env` extends guarantees, as far as the hole is concerned: the
    prototype's own description of its behaviour, which declarations the spec inherits
    and which it overrides, the prototype's version of the hole (as this spec names
    things), and the prototype's tests, which the generated package runs too. Derived
    from the prototype as loaded; "" for a spec that extends none."""
    if not env.header.extends:
        return ""
    prototype = _prototype_header(env) or ir.EnvHeader(name=env.header.extends)
    facts = [f"title {printer.quote(prototype.title)}"] if prototype.title else []
    facts += [f"archetype {prototype.archetype}"] if prototype.archetype else []
    intro = f"`{env.header.name}` extends the prototype `{env.header.extends}`"
    intro += (f" ({', '.join(facts)})" if facts else "") + "."
    if prototype.doc and prototype.doc == env.header.doc:
        intro += " Its description, above, is the environment's."
    elif prototype.doc:
        intro += f" The prototype says of itself:\n\n{prototype.doc}"
    lines = ["## The prototype's contract", intro]
    lines.append(_inheritance(env))
    lines.append(_own_version(env, decl))
    tests = _prototype_tests(env, decl)
    if tests:
        lines.append(
            "The prototype's tests, which the generated package must pass too (those that call "
            f"`{decl.name}` are above):\n\n" + block("\n\n".join(tests))
        )
    return "\n\n".join(line for line in lines if line)


def _inherited(env: ir.Environment, decls: Iterable[ir.ToolDecl]) -> list[str]:
    return [d.name for d in decls if d.file != env.path]


def _inheritance(env: ir.Environment) -> str:
    """Which tools and helpers come from the prototype unchanged, and which the spec overrides."""
    inherited = [
        f"{what} {', '.join(names)}"
        for what, names in (("tools", _inherited(env, env.tools)), ("helpers", _inherited(env, env.fns)))
        if names
    ]
    overridden = [d.name for d in [*env.tools, *env.fns] if d.file == env.path and d.override]
    text = []
    if inherited:
        text.append("Inherited unchanged (shown above with their docs and effects): " + "; ".join(inherited) + ".")
    if overridden:
        text.append("Overridden by this spec: " + ", ".join(overridden) + ".")
    return " ".join(text)


def _own_version(env: ir.Environment, decl: ir.ToolDecl) -> str:
    """The prototype's declaration of the hole: the hole is the prototype's own (its
    body left to a model), or the version the spec's `override` replaces."""
    if decl.file != env.path:
        return f"`{decl.name}` is the prototype's own declaration; the prototype leaves its body to be written."
    if not decl.override:
        return f"`{decl.name}` is new in this spec; the prototype has no version of it."
    original = _overridden(env, decl)
    if original is None:
        return ""
    return (
        f"`{decl.name}` overrides the prototype's version, which does this (keep what the description "
        "does not change):\n\n" + block(render.callable_text(original))
    )


def _prototype_tests(env: ir.Environment, decl: ir.ToolDecl) -> list[str]:
    names = {decl.name}
    if isinstance(decl, ir.FnDecl):
        names |= {t.name for t in env.tools if decl.name in _calls(t)}
    return [render.test_text(t) for t in env.tests if t.file != env.path and not names & _calls(t)]


def _prototype_header(env: ir.Environment) -> ir.EnvHeader | None:
    """The header of the prototype `env` extends, found and read as load.py finds it."""
    path = load._find_prototype(env.header.extends, Path(env.path))
    if path is None:
        return None
    with ANALYSIS_LOCK:  # the parser is not thread-safe (compiler/llm/fill.py)
        module = load.load_file(path).module
    return module.header if module is not None else None


def _overridden(env: ir.Environment, decl: ir.ToolDecl) -> ir.ToolDecl | None:
    """The prototype's declaration that `decl` overrides, renamed as the spec renames
    things: the spec loaded again without its `override`, so load.py's own merge supplies it."""
    assert decl.escape is not None
    last = decl.escape.end_line - 1 if decl.escape.end_col <= 1 else decl.escape.end_line

    def without_override(file: str, text: str) -> str:
        if file != decl.file:
            return text
        lines = text.split("\n")
        return "\n".join(lines[: decl.line - 1] + [""] * (last - decl.line + 1) + lines[last:])

    with ANALYSIS_LOCK:
        module = load.load_file(Path(env.path), rewrite=without_override).module
    if module is None:
        return None
    pool: list[ir.ToolDecl] = list(module.fns) if isinstance(decl, ir.FnDecl) else list(module.tools)
    return next((d for d in pool if d.name == decl.name), None)


def block(text: str) -> str:
    """Spec text fenced as the prompts show it."""
    return f"```envspec\n{text}\n```"


# --------------------------------------------------------------------------- repair and replies


def numbered(body: str) -> str:
    return "\n".join(f"{index:4} | {line}" for index, line in enumerate(body.rstrip("\n").split("\n"), start=1))


def repair_message(stage: str, problems: Iterable[str], body: str | None) -> Message:
    """The failure of the last attempt, in the model's terms: lines of its own body."""
    listed = "\n".join(f"- {p}" for p in problems) or "- (no details)"
    shown = f"\n\nYour body, with line numbers:\n\n```\n{numbered(body)}\n```" if body else ""
    return Message(
        "user",
        f"That body failed envc's `{stage}` check:\n\n{listed}{shown}\n\n"
        "Write the whole body again, corrected, in one ```envspec block, and nothing else.",
    )


FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
_BLOCK_LINE = re.compile(r"^(reads|writes|side_effect|param)\b")


def extract_body(reply: str, decl: ir.ToolDecl) -> str | None:
    """The body in a reply: its first fenced block (or the whole reply when it has none),
    without a repeated `tool` line and block lines; None when nothing is left."""
    match = FENCE.search(reply)
    text = match.group(2) if match else ("" if "```" in reply else reply)
    lines = normalise_body(text).split("\n")
    keyword = "fn" if isinstance(decl, ir.FnDecl) else "tool"
    if lines and re.match(rf"^(override\s+)?{keyword}\s+{re.escape(decl.name)}\s*\(", lines[0]):
        lines = _after_block_lines(lines[1:])
    body = normalise_body("\n".join(lines))
    return body or None


def _after_block_lines(lines: list[str]) -> list[str]:
    """Lines after a docstring and `reads`/`writes`/`side_effect`/`param` lines."""
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if stripped.startswith('"""') and not (len(stripped) > 3 and stripped.endswith('"""')):
            index = next((j for j in range(index + 1, len(lines)) if '"""' in lines[j]), len(lines) - 1) + 1
        elif stripped.startswith('"') or _BLOCK_LINE.match(stripped) or not stripped:
            index += 1
        else:
            break
    return lines[index:]
