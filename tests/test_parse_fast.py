"""The fast parser (`compiler/front/scan.py`, `compiler/front/fastparse_*.py`) against Lark, the reference.

For every input: when Lark's parse has a syntax error or an IR builder reports a
problem, the fast parser returns no declarations (Lark's diagnostics stand); when Lark
accepts, the fast parser either refuses or builds the same IR: the same node classes,
the same `__dict__` (keys in the same order, values of the same types), the same
`model_fields_set`, and so the same `model_dump_json` byte for byte. The shipped specs,
fixtures, docs examples and the benchmark spec must not be refused (the fast path is
the one they take), and neither must the well-formed mutations of them.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path
from typing import Any

import pytest
import strategies
from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel

from compiler.front import fastparse_decls, parse, scan
from compiler.front.fastparse_schema import SCHEMA
from compiler.front.lark_builders import Collector
from compiler.front.lark_parser import try_parse
from compiler.front.parse import parse_source

ROOT = Path(__file__).resolve().parent.parent


def normalise(source: str) -> str:
    """The text `parse_source` hands its parsers."""
    text = source.removeprefix("\ufeff").replace("\r\n", "\n")
    return text if text.endswith("\n") else text + "\n"


def difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where two IR values differ (class, field order, fields set, value or its type), or None."""
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, BaseModel):
        if list(a.__dict__) != list(b.__dict__):
            return f"{where}: fields {list(a.__dict__)} != {list(b.__dict__)}"
        if a.model_fields_set != b.model_fields_set:
            return f"{where}: fields set {sorted(a.model_fields_set)} != {sorted(b.model_fields_set)}"
        if (a.__pydantic_extra__, a.__pydantic_private__) != (b.__pydantic_extra__, b.__pydantic_private__):
            return f"{where}: extra or private"
        for name, value in a.__dict__.items():
            found = difference(value, b.__dict__[name], f"{where}.{name}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items != {len(b)}"
        for index, (x, y) in enumerate(zip(a, b)):
            found = difference(x, y, f"{where}[{index}]")
            if found:
                return found
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            found = difference(a[key], b[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def compare(source: str) -> str:
    """'same' (both parsers built equal IR), 'refused' (Lark accepts, the fast parser
    leaves it to Lark) or 'lark refuses' (both refuse); a mismatch fails the test."""
    text = normalise(source)
    collector = Collector("spec.envspec")
    syntax = try_parse(text, "spec.envspec", collector)
    fast = fastparse_decls.parse_decls(text)
    if syntax is not None or collector.errors:
        assert fast is None, f"fast parser accepted what Lark refuses: {syntax or collector.errors[0]}"
        return "lark refuses"
    if fast is None:
        return "refused"
    found = difference(fast, collector.result, "decls")
    assert found is None, found
    assert [d.model_dump_json() for d in fast] == [d.model_dump_json() for d in collector.result]
    return "same"


def _docs_examples() -> list[str]:
    """Every envspec block of the language reference, alone and after the page's running
    example (the first block), as tests/test_docs_language.py checks them."""
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```envspec\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    return [*blocks, *(blocks[0] + "\n" + block for block in blocks[1:])]


SHIPPED = sorted(
    path
    for path in [*ROOT.glob("specs/**/*.envspec"), *ROOT.glob("tests/fixtures/**/*.envspec")]
    if b"\0" not in path.read_bytes()
)
CORPUS = sorted(path for path in ROOT.glob("tests/corpus/**/*.envspec") if b"\0" not in path.read_bytes())


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def test_fast_path_is_on() -> None:
    """The IR's fields are the ones the fast parser writes (a field added to an IR class
    turns the fast parser off: teach `fastparse_schema.SCHEMA` and its builder the field)."""
    changed = [cls.__name__ for cls, names in SCHEMA.items() if tuple(cls.model_fields) != names]
    assert changed == [], f"IR classes whose fields the fast parser does not write: {changed}"
    assert fastparse_decls.enabled()


FAST_PARSER = {"scan", "fastparse_exprs", "fastparse_stmts", "fastparse_decls", "fastparse_schema"}
LARK_PARSER = {"lark_parser", "lark_builders"}


def _front_imports(module: str) -> set[str]:
    """The `compiler.front` modules `compiler/front/<module>.py` imports, anywhere in it."""
    tree = ast.parse((ROOT / "compiler" / "front" / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "compiler.front":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("compiler.front."):
            found.add(str(node.module).removeprefix("compiler.front."))
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("compiler.front.") for a in node.names if a.name.startswith("compiler.front.")
            )
    return found


def test_neither_parser_imports_the_other_or_the_entry_point() -> None:
    """The two parsers meet only in `compiler/front/parse.py`, which tries one then the
    other; what they share is below both (`grammar.py`)."""
    for module in FAST_PARSER:
        assert _front_imports(module) & (LARK_PARSER | {"parse"}) == set(), module
    for module in LARK_PARSER:
        assert _front_imports(module) & (FAST_PARSER | {"parse"}) == set(), module
    assert {"fastparse_decls", "lark_parser"} <= _front_imports("parse")


def _uses_foreign_words(text: str) -> bool:
    """Whether `text` holds a grammar keyword the fast parser does not know (a construct
    added after it: such text is left to Lark by design)."""
    foreign = scan.foreign_words() or frozenset()
    return any(word in foreign for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_specs_parse_fast_to_the_same_ir(path: Path) -> None:
    text = _read(path)
    outcome = compare(text)
    if not _uses_foreign_words(text):
        assert outcome == "same"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_corpus_files_agree(path: Path) -> None:
    """Corpus files are bad on purpose: Lark's refusals must be the fast parser's too,
    and those that parse (their errors come later) must parse to the same IR."""
    compare(_read(path))


def test_docs_examples_parse_fast_to_the_same_ir() -> None:
    examples = _docs_examples()
    assert len(examples) > 10
    refused = [example for example in examples if compare(example) == "refused" and not _uses_foreign_words(example)]
    assert refused == []


def test_benchmark_spec_parses_fast_to_the_same_ir() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import frontend
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert compare(frontend.generate(1500)) == "same"


def test_parse_source_results_are_unchanged() -> None:
    """Through `parse_source` (module assembly, diagnostics): the same JSON either way."""
    for path in SHIPPED[:40]:
        text = _read(path)
        fast = parse_source(text, str(path))
        lark = _without_fast_path(text, str(path))
        assert (fast.module is None) == (lark.module is None)
        assert fast.diagnostics == lark.diagnostics
        if fast.module is not None and lark.module is not None:
            assert fast.module.model_dump_json() == lark.module.model_dump_json()


def _without_fast_path(text: str, path: str) -> parse.ParseResult:
    decls = fastparse_decls.parse_decls
    fastparse_decls.parse_decls = lambda _text: None  # type: ignore[assignment]
    try:
        return parse_source(text, path)
    finally:
        fastparse_decls.parse_decls = decls  # type: ignore[assignment]


# --------------------------------------------------------------------------- edge cases

HEADER = 'environment shop:\n    title "Shop"\n\n'

EDGES = [
    # keywords where Lark's lexer makes them names (or not)
    "record R:\n    title: str\n    state: int = 1\n    doc: str\n",
    "tool t(title: str) -> str:\n    return title + state\n",
    "tool t() -> int:\n    return a + not\n",
    "tool t() -> int:\n    return f(if=1)\n",
    "tool t() -> int:\n    return f(if)\n",
    "tool t() -> int:\n    return x.if.else\n",
    "tool t() -> int:\n    let x = 1\n    python(x)\n    reads = 2\n",
    'tool t() -> int:\n    python "return 1"\n',
    "tool t() -> int:\n    reads = 2\n",
    "tool t() -> int:\n    return None\n",
    "tool t(x: None) -> list[None]:\n    return [True, False, None]\n",
    "enum E:\n    if, else, True, None\n",
    "tool t() -> int:\n    reads a, nothing\n    writes nothing\n    return 1\n",
    "tool t() -> int:\n    for x in xs:\n        pass\n    else = 3\n",
    "tool t() -> int:\n    if a:\n        pass\n    else:\n        pass\n    elif = 1\n",
    "test x:\n    scenario s\n    raises(1)\n    let a = 1\n    expect a\n    f() raises e\n",
    "test x:\n    let = 1\n",
    # words glued to keywords and numbers
    "tool t(x: int = 1min 2) -> int:\n    return x\n",
    "tool t(x: int = 1 minutes 2) -> int:\n    return x\n",
    "drop tooling x\n",
    "drop tool x\nrename tool a asb\n",
    "rename tool a as b\n",
    "tool t() -> int:\n    return a iffy else b\n",
    "tool t() -> int:\n    return 1.e5 + 1.5e3 + 1_000 + 0\n",
    "tool t() -> int:\n    return 1__0\n",
    # strings, f-strings, docs
    'tool t() -> str:\n    "doc"\n    return "a"\n',
    'tool t() -> str:\n    "not a doc".upper()\n    return "a"\n',
    'tool t() -> str:\n    f"doc {x}"\n    return "a"\n',
    'tool t() -> str:\n    return f"a {x:>8.2f} {y!r} {{z}} {lambda q: q} {a if b else c}"\n',
    'tool t() -> str:\n    return f"{x # c}"\n',
    'tool t() -> str:\n    return f"{x:{y}}" + f"{}" + f"{"\n',
    'tool t() -> str:\n    return "\\q" + "\\ud800"\n',
    'tool t() -> str:\n    return """\n        a\n          b\n    """\n',
    'tool t() -> str:\n    return f"{x:}" + f"{d[1:2]}" + f"{a != b}"\n',
    # layout
    "tool t() -> int:\n    return (1 +\n        2)  # c\n\n\n# gap\n\ntool u() -> int:\n    return 1\n",
    "tool t() -> int:\n    return 1 + \\\n        2\n",
    "tool t() -> int:\n\treturn 1\n",
    "tool t() -> int:\n    if a:\n\treturn 1\n",
    "tool t() -> int:\n    return 1\n  x\n",
    "   tool t() -> int:\n    return 1\n",
    "tool t() -> int:\n    return 1\x0c\n",
    "tool t() -> int:\n    return [x for x in xs if x > 1] + [a if b else c for a, b in m]\n",
    "tool t() -> int:\n    return {k: v for k, v in m if v} | {}\n",
    "tool t() -> int:\n    return a[1:] + a[:2] + a[:] + a[1] + f(*x)\n",
    "tool t() -> int:\n    return -a ** -b * c // d % e - (f) is not g not in h < i <= j\n",
    "tool t() -> int:\n    a.b[c] += 1\n    (a) = 2\n    -a = 3\n",
    'tool t() -> int:\n    del a[1]\n    require a else e("m", field="x")\n    fail e("m", "n")\n',
    "tool t() -> int:\n    return lambda a, b: a if b else lambda: 1\n",
    'tool t(a: int,) -> int:\n    param a "x"\n    param b "y"\n    return 1\n',
    'tool t(a: int,) -> int:\n    param a "x"\n    param a "y"\n    return 1\n',
    "tool t() -> int:\n    reads a\n    reads b\n    return 1\n",
    'environment e:\n    seed 1_000\n    rng x\n    domains "a", "b"\n    clock "c"\n',
    "environment e:\n    seed 1\n    seed 2\n",
    'world:\n    a: int from "a.json"\n    b: int = 1\n    c: int fromage "x"\n',
    'task k:\n    scenario s\n    request "r"\n    solution:\n        f()\n    verify x\n',
    "task k:\n    solution:\n        f()\n",
    "task k:\n    scenario s\n    scenario t\n",
    'describe tool x:\n    "doc"\n    param a "b"\n',
    "override record R:\n    a: int\noverride fn f() -> int:\n    return 1\n",
    "tool t() -> int:\n    return " + "(" * 101 + "1" + ")" * 101 + "\n",
    "tool t() -> int:\n    return " + " + ".join(["1"] * 130) + "\n",
    "tool t() -> int:\n    return " + "[" * 60 + "]" * 60 + " + " + " + ".join(["1"] * 70) + "\n",
    "tool t() -> int:\n    return " + str(2**63) + "\n",
    # aliases, absent record fields, state and scenario files
    'state:\n    c: int alias f"k"\n',
    'state:\n    a: int = 1 + 2 alias "a" alias "b"\n',
    'state:\n    a: int alias "\\q"\n',
    "record R:\n    a??: int\n",
    "state:\n    a?: int\n",
    "tool t(a?: int) -> int:\n    return a\n",
    "tool t() -> int:\n    return a ? b\n",
    'state:\n    m: int from "m.json" alias "x"\n',
    'state:\n    a: int from f"x.json"\n',
    'record R:\n    a: int from "a.json"\n',
    "scenario s:\n    a = from + 1\n",
    "scenario s:\n    a = from\n",
    'scenario s from "s.json":\n    a = 1\n',
    # unions
    'union P by kind:\n    A = "a"\n    A = "b"\n',
    'union P by kind:\n    A = "a"\n    B = "a"\n',
    'union P by kind:\n    "doc"\n    python = "a"\n',
    'union P:\n    A = "a"\n',
    'union P by kind:\n    A = f"a"\n',
    "union P by kind:\n    A = 1\n",
    # on load, load options
    'load options:\n    a: int from "a.json"\n',
    "load options:\n    a?: int\n",
    "override on load:\n    python(x)\n",
    'on load:\n    python "x = 1"\n',
    'on load:\n    llm "load it"\n',
    'on load:\n    "doc"\n    reads = 1\n',
    "on load:\n    reads x\n    pass\n",
    "override load options:\n    a: int\n",
    "on loading:\n    pass\n",
    "load:\n    pass\n",
    # values and wording: malformed
    "values v = []\n",
    "values v = [1, x + 1]\n",
    'values v from f"x.json"\n',
    "values v = 1\n",
    'persona f"x"\n',
    "persona x\n",
    "describe tool t:\n    param a\n",
    'describe tool t:\n    param a "x"\n    param a from y\n',
    'describe tool t:\n    intent f"x"\n',
    "describe tool t:\n    param a from y(z)\n",
    'describe tool t:\n    param a from y(-"s")\n',
    "describe tool t:\n    param a from y(1,)\n",
    "describe tool t:\n    param a from y(" + str(2**63) + ")\n",
    'describe record R:\n    noun "a"\n    noun "b"\n',
    'describe record R:\n    refer a "x"\n    refer a before "y"\n',
    "describe record R:\n    field a from x\n    field a from y\n",
    'describe record R:\n    "doc"\n    noun "a"\n',
    "describe record R:\n    field a\n",
    'tool t() -> int:\n    "doc"\n    intent = 1\n    return 1\n',
    'record R:\n    "doc"\n    field: int\n',
    # the new keywords as names
    "tool t() -> int:\n    return a alias\n",
    'tool t(x: int alias "k") -> int:\n    return x\n',
    'tool t(x: int = 1 alias "k") -> int:\n    return x\n',
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_edge_cases_agree(text: str) -> None:
    compare(HEADER + text)


NEW_CONSTRUCTS = [
    'state:\n    alias: int alias "alias"\n    on: int\n    load: str = options\n',
    'record R:\n    a?: int\n    b ?: str = None alias "bee"\n    c: int\n    d? : int\n',
    'scenario s from "s.json"\nscenario t:\n    a = from "a.json"\n    b = 1\n',
    'scenario s:\n    "doc"\n    a = from "a.json"  # c\n',
    "scenario s:\n    from = 1\n",
    'union Payment by source:\n    "Paid somehow."\n    Card = "credit_card"\n    Bank = """bank"""\n',
    'union P by by:\n    on = "a"\n    union = "b"\n',
    'load options:\n    "The options."\n    fast: bool = False alias "quick"\n    n: int = 3\n',
    'on load:\n    "Runs on load."\n    let x = 1\n    if x > 0:\n        pass\n',
    "on load:\n    reads = 1\n    load = 2\n    on = options\n",
    "tool t(on: int, load: int, by: int, alias: int, options: int, union: int) -> int:\n"
    "    let by = [alias for alias in on]\n    return f(load=options, union=by).alias\n",
    "enum E:\n    on, load, by, alias, options, union\n",
    "record union:\n    by: int\n    options?: list[alias]\n",
    'test x:\n    scenario on\n    let alias = f(by=1)\n    expect alias\n    f() raises load "m"\n',
    'state:\n    users: int = 0 alias "userCount"\n    b: str alias """x\n    y"""\n    n: int = 1\n',
    'state:\n    items: list[int] from "items.json"\n    n: int = 1\n    m: dict[str, int] from """m.json"""\n',
    "override on load:\n    for k, v in world.items:\n        state.items[k] = v\n",
    'record Card:\n    source: str\n    number?: str\nunion Payment by source:\n    Card = "card"\n',
    # values and wording for tasks
    'values titles = ["VPN drops", "Printer jams",]\nvalues streets from "streets.json"\nvalues n = [1, -2, 3.5]\n',
    'persona "I run the help desk."\npersona """Two\n    lines."""\n',
    'describe tool t:\n    "Doc."\n    intent "open {title}"\n    param title "A title" from titles\n'
    "    param who from person_name\n    param budget from amount(50, -5000.5, 1_000)\n"
    '    intent "log {{x}} {who}"\n    param p from file_name("csv")\n    param q from f()\n',
    'describe tool t:\n    param a "x"\n',
    'describe record Ticket:\n    noun "ticket"\n    refer status before "{}"\n    refer title "about \\"{}\\""\n'
    "    field title from titles\n    field id from integer(1, 9)\n",
    'describe record R:\n    field before from x\n    refer before before "{}"\n',
    "tool t(values: int, persona: int, intent: int, noun: int, refer: int, field: int, before: int) -> int:\n"
    "    let x = [values for values in intent]\n    field = noun\n    return f(refer=before).field\n",
    "record values:\n    field: int\n    before?: list[noun]\n",
    'record R:\n    "doc"\n    noun: int\n    refer: int\n',
    "tool t() -> int:\n    for a, b, c in zip(x, y, z):\n        n += a\n    return [a for a, b, c, d in zip(p, q, r, s) if b]\n",
    "tool t(max: int) -> int:\n    while n > max(a, max) max 1_000:\n        n -= 1\n        continue\n"
    "    while x is not None:\n        if a:\n            break\n    return max\n",
]
"""Well-formed uses of the constructs added since the first fast parser (aliases, absent
record fields, state and scenario files, unions, `on load:`, `load options:`) and their
keywords as names: the fast path takes them all."""


@pytest.mark.parametrize("text", NEW_CONSTRUCTS, ids=range(len(NEW_CONSTRUCTS)))
def test_new_constructs_parse_fast_to_the_same_ir(text: str) -> None:
    assert compare(HEADER + text) == "same"


FAST_PATHS = [
    'tool t() -> str:\n    return f"#{item.id}: {text} {a.b.c} {x.title} {y.if}{z}" + f"{ a } {b:>4}"\n',
    'tool t() -> str:\n    return f"{title} {True} {None.x} {a .b} {f(x)} {m[k]}" + f"{{a}} {b} }}"\n',
    'tool t() -> str:\n    return f"\\n{a}\\{ {{b}}" + f"{a!= b}" + f"{lambda q: q}" + f"x{y:}z"\n',
    "tool t() -> int:\n    return 2 ** 3 ** -4 + -x * y // z % w - 1 if a or b and not c else d\n",
    "tool t() -> int:\n    return not a == b and not not c or a < b < c is not d not in e in f\n",
    "tool t() -> int:\n    return (a or b) * (c if d else e) ** f and [g for g in h if not g or g]\n",
    "# lead\n\n# comment\ndrop tool x\ndrop fn y\n\n  # indented comment\nrename tool a as b\n",
    "tool t() -> int:\n    return 1\n# between\n\ntool u() -> int:\n    return \\\n        2\n# trailing",
    'record R:\n    a: int = 1\n    b: str = "x"\nrecord S:\n    a: int = 1\n    b: str = "x"\n',
]
"""Inputs through the fast parser's shortcuts: f-strings split in one go, name and
attribute fields built without scanning, binary operators by precedence climbing,
declarations handed over a run of tokens at a time, names, numbers and strings met
again: the same IR as Lark's."""


@pytest.mark.parametrize("text", FAST_PATHS, ids=range(len(FAST_PATHS)))
def test_fast_paths_build_the_same_ir(text: str) -> None:
    assert compare(HEADER + text) == "same"


FAST_PATH_EDGES = [
    'tool t() -> str:\n    return f"{a..b}" + f"{.a}" + f"{a.}" + f"{1.x}"\n',
    'tool t() -> str:\n    return f"{credit_card}" + f"{x.credit_card}" + f"{é}"\n',
    'tool t() -> str:\n    return f"{x}}}" + f"{{x}" + f"}{x}" + f"{x}{"\n',
    'tool t() -> str:\n    return f"{x!r}" + f"{(x)!s}" + f"{a:b:c}"\n',
    "tool t() -> int:\n    return a not b\n",
    "tool t() -> int:\n    return a == not b\n",
    "tool t() -> int:\n    return - not a\n",
    "tool t() -> int:\n    return a ** not b\n",
    "drop tool x\n\\\n\ndrop tool y\n",
    "record R:\ndrop tool x\n",
    "tool t() -> int:\n    return 1\n)\n",
]
"""Malformed or unusual inputs near those shortcuts: refused or built as Lark builds them."""


@pytest.mark.parametrize("text", FAST_PATH_EDGES, ids=range(len(FAST_PATH_EDGES)))
def test_fast_path_edges_agree(text: str) -> None:
    compare(HEADER + text)


# --------------------------------------------------------------------------- mutations

WORDS = [*sorted(scan.KEYWORDS), "min", "max_items", "pattern", "x", "_y", "f", "ff"]
SNIPPETS = [
    " ", "  ", "\t", "\n", "\n    ", "\n        ", "  # note\n", "\\\n", "(", ")", "[", "]", "{", "}",
    ",", ":", ".", "=", "==", "+", "-", "**", "->", '"s"', 'f"{x}"', '"""d"""', "1", "2.5", "1_0",
    "?", ' alias "k"', ' from "f.json"', "from ",
]  # fmt: skip


def _declarations(text: str) -> list[str]:
    """A spec cut into its top-level declarations (each one parses alone)."""
    starts = [m.start() for m in re.finditer(r"^(?=[a-z])", text, re.MULTILINE)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]


def _mutant(text: str, rng: random.Random) -> str:
    """A variant of a declaration: a word swapped for a keyword, a snippet inserted, a
    token deleted, blank lines and a comment added, or its indentation changed."""
    spans = [m.span() for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*|[^\sA-Za-z_]+|\n", text)]
    start, end = spans[rng.randrange(len(spans))]
    choice = rng.random()
    if choice < 0.35:
        return text[:start] + rng.choice(WORDS) + text[end:]
    if choice < 0.65:
        return text[:start] + rng.choice(SNIPPETS) + text[start:]
    if choice < 0.8:
        return text[:start] + text[end:]
    if choice < 0.9:
        return text[:start] + "\n\n    # c\n" + text[start:]
    return text.replace("\n    ", "\n" + rng.choice(["  ", "\t", "     "]), rng.randrange(1, 4))


SEEDS = [path for path in SHIPPED if path.is_relative_to(ROOT / "specs")]
MUTANTS_PER_SPEC = 150


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_mutated_declarations_agree(path: Path) -> None:
    """MUTANTS_PER_SPEC variants of the declarations of each shipped spec and prototype
    (about 3,500 in all): both parsers accept them alike, or both refuse."""
    known = [d for d in _declarations(_read(path)) if not _uses_foreign_words(d)]
    declarations = known or _declarations(_read(path))
    rng = random.Random(path.name)
    outcomes = [compare(_mutant(rng.choice(declarations), rng)) for _ in range(MUTANTS_PER_SPEC)]
    assert outcomes.count("lark refuses") > MUTANTS_PER_SPEC // 10  # the mutants exercise the refusals
    if known:
        assert outcomes.count("same") > MUTANTS_PER_SPEC // 5  # and the fast path


NEW_WORDS = ("union", "alias", "on load", "load options", "from", "?", "values", "persona", "describe", "family")


def test_mutated_new_constructs_agree() -> None:
    """Mutants of the declarations of the shipped specs and fixtures that use the newer
    constructs (NEW_WORDS): both parsers accept them alike, or both refuse."""
    declarations = [
        declaration
        for path in SHIPPED
        for declaration in _declarations(_read(path))
        if any(word in declaration for word in NEW_WORDS)
    ]
    assert len(declarations) > 10
    rng = random.Random(1)
    outcomes = [compare(HEADER + _mutant(rng.choice(declarations), rng)) for _ in range(1500)]
    assert outcomes.count("lark refuses") > 150
    assert outcomes.count("same") > 300


def test_formatter_output_parses_the_same() -> None:
    """`envc fmt` prints the same text from either parser's module, and that text (another
    layout of the same IR) parses the same fast."""
    from compiler.front.fmt import format_module, format_source

    for path in SEEDS:
        text = _read(path)
        fast, lark = parse_source(text, str(path)).module, _without_fast_path(text, str(path)).module
        assert fast is not None and lark is not None
        assert format_module(fast, text) == format_module(lark, text)
        printed = format_source(text, str(path)).text
        assert printed is not None
        assert compare(printed) == "same" or _uses_foreign_words(printed)


def test_the_analysis_call_walk_finds_what_irtree_finds() -> None:
    """`Analysis.called_names` walks bodies its own faster way (`context._called_and_deleted`);
    it finds the names `irtree.called_names` finds in every body of every shipped spec, and
    the fields of its `del x.field` statements as a walk of every node does."""
    from compiler import ir
    from compiler.analyse.context import _called_and_deleted
    from compiler.ir.tree import called_names, walk

    bodies = deleting = 0
    for path in [*SEEDS, ROOT / "tests" / "fixtures" / "shapes" / "customer_shapes.envspec"]:
        module = parse_source(_read(path), str(path)).module
        assert module is not None
        for callable_ in [*module.tools, *module.fns]:
            called, deleted = _called_and_deleted(callable_.body)
            assert called == called_names(callable_.body)
            assert deleted == {
                node.target.name
                for node in walk(callable_.body)
                if isinstance(node, ir.Delete) and isinstance(node.target, ir.Attr)
            }
            bodies += 1
            deleting += bool(deleted)
    assert bodies > 100
    assert deleting > 0


# --------------------------------------------------------------------------- generated specs


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(strategies.specs())
def test_generated_specs_parse_fast_to_the_same_ir(text: str) -> None:
    """Random specs of every construct with random layout (tests/strategies.py)."""
    assert compare(text) in ("same", "refused")


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.mutated_specs())
def test_mutated_windows_agree(text: str) -> None:
    """Windows of a real spec with lines deleted, swapped, cut, tokens inserted."""
    compare(text)


def test_envc_fast_parse_0_leaves_everything_to_lark(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _read(SEEDS[0])
    assert fastparse_decls.parse_decls(normalise(text)) is not None
    monkeypatch.setenv("ENVC_FAST_PARSE", "0")
    assert fastparse_decls.parse_decls(normalise(text)) is None
    assert parse_source(text, "spec.envspec").module is not None  # Lark's parse
