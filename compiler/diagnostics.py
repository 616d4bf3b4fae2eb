"""Diagnostics: one registry of stable codes, and how a diagnostic is shown.

Every stage reports problems as `Diagnostic` values collected in a list, never as
exceptions, so a run shows all errors of a file at once. Codes are stable: tests and
users refer to them, so a code is never reused for another meaning.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]

# code -> (short title, default hint). Grouped by stage: E0 input, E1 syntax,
# E2 declarations and names, E3 types, E4 effects, E5 tests/tasks, E6 generated code
# (E61xx: fills of `llm` bodies).
CODES: dict[str, tuple[str, str]] = {
    "E0001": ("cannot read file", "check the path and permissions"),
    "E0002": ("file is not UTF-8 text", "save the spec as UTF-8"),
    "E0003": ("cannot load data file", "the file must sit next to the spec and hold valid JSON"),
    "E0004": ("cannot load prototype", "`extends` takes a path relative to the spec, or a shipped prototype name"),
    "E0005": ("input too large", "split the spec; envc reads at most 5 MB per file"),
    "E1001": ("unexpected character", "remove the character or put it inside a string"),
    "E1002": ("unexpected token", "check the syntax just before this point"),
    "E1003": ("unexpected end of file", "a block or bracket is not finished"),
    "E1004": ("inconsistent indentation", "indent blocks by the same amount; dedent to a level used before"),
    "E1005": (
        "malformed f-string",
        "write `{expression}` or `{expression:spec}` (e.g. `{total:.2f}`) inside f-strings; `{{` and `}}` for braces",
    ),
    "E1006": ("invalid string escape", 'use \\n, \\t, \\\\, \\" or \\u0041 style escapes'),
    "E1007": ("integer literal too large", "integers must fit in 64 bits"),
    "E1008": ("nesting too deep", "split the expression or block; at most 100 levels"),
    "E2001": ("duplicate declaration", "rename one of them, or write `override` to replace a prototype's"),
    "E2002": ("unknown name", "declare it with `let`, or check the spelling"),
    "E2003": (
        "unknown type",
        "use str, int, float, bool, datetime, date, time, json, list[T], map[K, V], optional[T], an enum or a record",
    ),
    "E2004": ("missing environment header", "start the spec with `environment NAME:`"),
    "E2005": ("duplicate field or parameter", "each name may appear once"),
    "E2006": ("unknown state field", "scenarios and effect lists name fields of the `state:` block"),
    "E2007": ("unknown enum member", "use one of the enum's members"),
    "E2008": ("unknown record field", "use one of the record's fields"),
    "E2009": ("unknown tool", "tests and tasks call tools declared in the spec"),
    "E2010": ("unknown scenario", "declare it with `scenario NAME:`"),
    "E2011": ("redefinition without override", "write `override` to replace a declaration of the prototype"),
    "E2012": ("nothing to override or drop", "the prototype has no declaration of that name"),
    "E2013": ("unknown error kind", "use one of the domain error kinds"),
    "E2014": ("reserved name", "choose another name; this one is used by the language or generated code"),
    "E2015": ("unknown archetype", "use one of the prototype archetypes"),
    "E2016": ("invalid environment name", "use a lower_snake_case identifier"),
    "E2017": ("duplicate header item", "each header item may appear once"),
    "E2018": ("extends cycle", "a prototype cannot extend itself, directly or indirectly"),
    "E2020": ("required parameter after one with a default", "put parameters with defaults (and optional ones) last"),
    "E2021": (
        "declaration needs `extends`",
        '`override`, `drop` and `rename` change a prototype: add `extends "proto"` to the header',
    ),
    "E2022": ("unknown random generator", "`rng` is splitmix64 (the default) or python"),
    "E2023": ("`param` line names no parameter", '`param NAME "text"` describes one of the callable\'s own parameters'),
    "E2024": (
        "parameter shadows a state field (a warning)",
        "write `state.NAME` for the field, or give the parameter another name",
    ),
    "E2025": (
        "`state.NAME` where a parameter is called `state`",
        "the parameter hides the `state.` qualifier in its body: write the state field by its bare name",
    ),
    "E2019": (
        "environment name shadows a standard-library module",
        "the generated package would hide that module; add a suffix, e.g. `calendar_env`",
    ),
    "E2030": (
        "invalid field alias",
        "an `alias \"key\"` is another key for one state field: not a field's name, nor another field's alias",
    ),
    "E2031": (
        "invalid load option",
        "a load option is a str, int, float, number or bool (or optional of one) with a default, "
        "named unlike any world field (a state field's name is fine: in `on load:` the field is then `state.NAME`)",
    ),
    "E2032": ("`on load:` takes statements", "write the load step in the statement language"),
    "E2033": (
        "invalid values pool",
        "a pool is a non-empty list of str, int or float literals of one type, or a JSON list of them in a file",
    ),
    "E2034": ("unknown value source", "`from` names a `values` pool of the spec or a built-in format"),
    "E2035": ("wrong value source arguments", "a pool takes none; a format takes its literal arguments, in order"),
    "E2036": ("invalid intent", "each `{slot}` of an intent names a parameter of the tool; `{{` and `}}` are braces"),
    "E2037": ("invalid refer template", 'a `refer` template holds exactly one `{}`: `refer title "about {}"`'),
    "E2038": ("nothing to describe", "`describe tool` and `describe record` name a tool or record of the spec"),
    "E2039": (
        "write tool parameter without a source (a warning)",
        "give it one: `param NAME from POOL` in `describe tool`",
    ),
    "E2040": (
        "invalid request template",
        "each `{slot}` of a family's `request` names a value its plan binds with a top-level `let`; `{{` and `}}` are braces",
    ),
    "E2041": (
        "invalid family line",
        "`kind` is lookup, bulk, branch, compute or symptom; `reward` binary or partial; `weight` a positive number",
    ),
    "E2042": (
        "declaration shadows a built-in function (a warning)",
        "in this spec the name calls your declaration; rename it to reach the built-in again",
    ),
    "E2043": (
        "empty name",
        'a quoted member or field name has at least one character: `"too expensive"`, `"MA(5)"`',
    ),
    "E3001": ("type mismatch", "convert the value or change the declared type"),
    "E3002": ("wrong number of type arguments", "list[T], set[T], map[K, V] and optional[T] take exactly these"),
    "E3003": (
        "invalid map key or set item type",
        "map keys are str, int, an enum or json (str or int); set items str, int or an enum",
    ),
    "E3004": ("operator not defined for these types", "check both operand types"),
    "E3005": ("not callable", "call a built-in, a helper `fn`, a record constructor or a method"),
    "E3006": ("wrong arguments", "check the number, names and types of the arguments"),
    "E3007": ("missing record field", "give every field without a default"),
    "E3008": ("cannot assign to this", "assign to a local, a state field, or an item or field inside one"),
    "E3009": ("value may be None", "check it first: `require x is not None else ...` or `if x is not None:`"),
    "E3010": ("condition is not bool", "compare explicitly, e.g. `len(xs) > 0`"),
    "E3011": ("missing return", "every path of a tool or fn must return a value of its return type"),
    "E3012": ("unreachable code", "remove the statements after return, fail, break or continue"),
    "E3013": (
        "constraint does not fit the parameter type",
        "min/max for numbers, *_length for strings, *_items for lists, pattern for strings",
    ),
    "E3014": ("not a constant", "defaults, world data and scenarios hold literal values only"),
    "E3015": ("lambda outside a key argument", "lambdas are allowed only as `key=` of sorted, min and max"),
    "E3016": ("unknown method", "see the language reference for the methods of each type"),
    "E3017": ("break or continue outside a loop", "use them only inside `for`"),
    "E3018": ("expression statement has no effect", "a statement must be a call that changes something"),
    "E3019": (
        "invalid regular expression",
        "fix the pattern: Python's `re` must take it, within the linear-time subset of language.md §15"
        " (no backreferences, lookarounds, `\\b` or scoped flags)",
    ),
    "E3020": ("cannot infer the type of an empty literal", "give the type: `let xs: list[int] = []`"),
    "E3022": ("loop variable reassigned", "bind a new local with `let` instead"),
    "E3023": (
        "record with no finite value",
        "a record may contain itself only through a list, a map, an optional or an absent-able field (`next: optional[Node]`)",
    ),
    "E3024": (
        "invalid date/time format",
        "`parse_datetime` formats use strptime directives such as %Y %m %d %H %M %S; no zones or fractions",
    ),
    "E3030": (
        "record field may be absent",
        'a `name?: T` field may be left out: check it first, `if "name" in r:`, or set it',
    ),
    "E3031": ("absent-able field with a default", "a `name?: T` field has no default: its key is left out instead"),
    "E3032": (
        "field of some members of a union only",
        'narrow the value to a member first: `if p.source == "credit_card":` (or `require ...`)',
    ),
    "E3033": ("invalid union", "a union lists records, each once, that do not declare its tag field"),
    "E3034": (
        "value source does not fit the type",
        "a str takes text (and dates); int takes int; float and number take numbers; an enum a pool of its members",
    ),
    "E3035": (
        "`while` bound out of range",
        "write `max N` after the condition with N from 1 to 10,000,000, or leave it out for 10,000 rounds",
    ),
    "E4001": ("undeclared state write", "add the field to `writes`, or remove the `writes` line to let envc infer it"),
    "E4002": ("declared write never happens", "remove the field from `writes`"),
    "E4003": ("undeclared state read", "add the field to `reads`, or remove the `reads` line"),
    "E4004": ("audit log is append-only", "record entries with `audit(action, ...)`; never assign or delete"),
    "E4005": ("escape body needs declared effects", "a python or llm body must say `reads` and `writes`"),
    "E4006": ("world data is immutable", "copy it into state if it must change"),
    "E4007": ("parameter is read-only", "bind a local with `let` and change that"),
    "E4009": (
        "built-in state is managed by the runtime",
        "use next_id(...) and random_int(...); they keep id_counters and rng_state",
    ),
    "E4008": ("declared read never happens", "remove the field from `reads`"),
    "E4013": (
        "a lambda changes something",
        "a lambda is a key function: change the values in a `for` loop before or after the call",
    ),
    "E5001": ("test step is not a tool call", 'a test step calls a tool: `create_ticket(title="x")`'),
    "E5002": ("scenario must come first", "put `scenario NAME` before the first call"),
    "E5003": ("task is incomplete", "a task needs `request`, a `solution` ending in a write tool, and `verify`"),
    "E5004": ("positional tool argument", "pass tool arguments by name: `tool(param=value)`"),
    "E5005": ("missing tool argument", "pass every required parameter"),
    "E6001": ("generated code failed a static check", "report this: generated code should always pass"),
    "E6002": ("generated tests failed", "see the failing test; fix the spec's test or the tool body"),
    "E6003": ("generated output is stale", "run `envc compile` and commit the result"),
    "E6004": ("dynamic check timed out", "a tool body may loop forever"),
    "E6005": ("two specs generate the same package", "give each environment its own name"),
    "E6006": ("output folder changed by hand", "move your changes into the spec, or pass --force to overwrite them"),
    "E6007": ("cannot write the output", "check the output path and its permissions"),
    # E61xx: the LLM layer (compiler/llm/, docs/llm.md): fills of `llm` bodies and envc.lock.
    "E6101": ("llm body has no fill", "run `envc lock --update` where the model is reachable, then commit envc.lock"),
    "E6102": ("locked fill is stale", "run `envc lock --update` where the model is reachable, then commit envc.lock"),
    "E6103": ("request to the model failed", "check `model` and `base_url` in [tool.envc.llm], the key and the server"),
    "E6104": ("the model's fill was refused", "make the llm description more precise, or write the body by hand"),
    "E6105": ("invalid [tool.envc.llm] configuration", "see docs/llm.md for the keys and their types"),
    "E6106": (
        "cannot read or write envc.lock",
        "check its permissions, or restore it from version control (or delete it and run `envc lock --update`)",
    ),
    "E6107": ("locked fill no longer passes", "run `envc lock --update --all` to fill it again"),
    "E6108": ("fill reaches outside its body", "a fill is statements only: no declarations, no block lines"),
}

RETIRED: dict[str, str] = {
    "E3021": "recursive helper: helpers may call themselves since issue 14, to a bounded depth (docs/language.md §12)",
}
"""Codes no longer reported, each with what it meant: a code is never reused, so these
stay out of `CODES` for good."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem at one place: `path:line:col - error E3001: message`."""

    code: str
    message: str
    path: str
    line: int
    col: int
    end_line: int = 0
    end_col: int = 0
    hint: str = ""
    severity: Severity = "error"
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def title(self) -> str:
        return CODES[self.code][0]

    def effective_hint(self) -> str:
        return self.hint or CODES[self.code][1]

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.code)


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A hint naming the closest candidate, or an empty string."""
    matches = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean `{matches[0]}`?" if matches else ""


def has_errors(diagnostics: Sequence[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def render_text(diagnostic: Diagnostic, source: str | None) -> str:
    """`path:line:col - error CODE: message`, a caret excerpt, then the hint."""
    head = f"{diagnostic.path}:{diagnostic.line}:{diagnostic.col} - {diagnostic.severity} {diagnostic.code}: {diagnostic.message}"
    lines = [head]
    excerpt = _caret_excerpt(diagnostic, source)
    if excerpt:
        lines.append(excerpt)
    lines.extend(f"  note: {note}" for note in diagnostic.notes)
    hint = diagnostic.effective_hint()
    if hint:
        lines.append(f"  hint: {hint}")
    return "\n".join(lines)


def _caret_excerpt(diagnostic: Diagnostic, source: str | None) -> str:
    if source is None or diagnostic.line < 1:
        return ""
    source_lines = source.splitlines()
    if diagnostic.line > len(source_lines):
        return ""
    raw = source_lines[diagnostic.line - 1]
    col = len(raw[: max(diagnostic.col, 1) - 1].expandtabs(4)) + 1  # where the caret goes once tabs are expanded
    text = _visible(raw.expandtabs(4))
    if col > 160:  # show a window around the column of a very long line
        start = col - 80
        text = "…" + text[start : start + 160]
        col = 81 + 1
    if len(text) > 200:
        text = text[:200] + "…"
    width = 1
    if diagnostic.end_line == diagnostic.line and diagnostic.end_col > col:
        width = diagnostic.end_col - col
    width = max(1, min(width, len(text) - col + 1 if len(text) >= col else 1))
    gutter = f"{diagnostic.line:>5} | "
    return f"{gutter}{text}\n{' ' * (len(gutter) - 2)}| {' ' * (col - 1)}{'^' * width}"


_CONTROL_PICTURES = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}


def _visible(text: str) -> str:
    """Control characters as their one-column Unicode pictures (NUL as ␀), so an excerpt
    never sends raw control bytes to a terminal and carets stay aligned."""
    return text.translate(_CONTROL_PICTURES)


def to_json(diagnostics: Sequence[Diagnostic]) -> str:
    """Machine-readable form for editors and CI (`--format json`)."""
    return json.dumps(
        [
            {
                "code": d.code,
                "severity": d.severity,
                "title": d.title,
                "message": d.message,
                "path": d.path,
                "line": d.line,
                "col": d.col,
                "end_line": d.end_line,
                "end_col": d.end_col,
                "hint": d.effective_hint(),
                "notes": list(d.notes),
            }
            for d in diagnostics
        ],
        indent=2,
        sort_keys=True,
    )
