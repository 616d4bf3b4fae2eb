"""Syntax added for ports of real environments (issue 14): chained comparisons
(`0 <= p <= 1`), the `**` operator and format specs in f-strings (`f"{total:.2f}"`):
parsing, `envc fmt`, type rules, lowering, and the generated code against Python.

`SPEC` holds a tool per form; it is lowered once and goes through ruff, mypy --strict,
envc's AST rules and its generated tests. The format-spec differential test lowers one
tool per spec of a grid and compares each with Python's `format` on 100,000 seeded
values in all.
"""

from __future__ import annotations

import importlib
import itertools
import random
import sys
from types import ModuleType
from typing import Any

import pytest

from compiler import ir
from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package, write_tree
from compiler.front.fmt import format_source, strip_positions
from compiler.front.parse import parse_source
from compiler.ir import typesys as ts
from compiler.lower import lower

SPEC = r'''
environment syntax_added:
    title "Chains, powers and format specs"
    doc "One tool per form of the syntax issue 14 added."

enum Level:
    low, high

record Reading:
    """A reading of a sensor."""
    name: str
    value: float
    level: Level = Level.low
    note: optional[str] = None

state:
    readings: list[Reading] = [{"name": "t1", "value": 21.5}, {"name": "t2", "value": -3.25, "level": Level.high}]
    limit: int = 10
    blob: json = {"p": 0.5}

tool in_unit(p: float) -> bool:
    """True for 0 <= p <= 1; a refusal names the range."""
    require 0 <= p <= 1 else invalid_argument(f"p is {p:.3f}, not in [0, 1]", field="p")
    return True

tool chains(a: int, b: int, c: int) -> list[bool]:
    return [a < b < c, a == b == c, a <= b < c <= limit, a < b > c, a != b != c, not a < b < c]

tool mixed_chains(a: number, b: number, c: number, d: number) -> list[bool]:
    """Chains over ints and floats, as Python compares them (exactly, not as floats)."""
    return [a < b < c, a <= b <= c <= d, a == b == c, a != b != c, a < b > c, a >= b > c >= d, b < a == c, not a < b < c, a < b < c < d]

tool merged(a: int, b: int, c: int, d: int) -> bool:
    """`a < b < c and c < d` is one chain in Python (ruff's PLR1716)."""
    return a < b < c and c < d

tool json_chain() -> bool:
    let p = as_number(blob["p"])
    return p is not None and 0 <= p <= 1

tool optional_chain(x: optional[int] = None) -> int:
    if x != None != x:
        return x
    return -1

tool powers(a: int, x: float) -> float:
    return -a ** 2 + 2 ** 3 ** 2 + x ** -1 + (a + 1) ** 2

tool report() -> str:
    """Format specs of every kind the subset takes."""
    let lines: list[str] = []
    for r in readings:
        lines.append(f"{r.name:<6}|{r.value:>8.2f}|{r.value:+.1e}|{r.level:^6}|{len(r.name):03d}|{r.value:.0%}")
    return "\n".join(lines)

tool money(total: float, count: int) -> str:
    return f"{total:,.2f} {count:_} {count:#x} {total:*>12,.3f} {str(count > 1):>5} {total:8}"

test chains_hold:
    """Chains, powers and specs in test lines."""
    expect in_unit(p=0.5)
    in_unit(p=1.5) raises invalid_argument "1.500"
    expect chains(a=1, b=2, c=3) == [True, False, True, False, True, False]
    expect merged(a=1, b=2, c=3, d=4) and not merged(a=1, b=2, c=3, d=3)
    expect 1 <= 2 ** 2 <= 4 and f"{3.14159:.2f}" == "3.14"
    expect powers(a=2, x=0.5) == -4 + 512 + 2 + 9
'''


def analyse(text: str, path: str = "specs/syntax_added.envspec") -> ir.Environment:
    result = analyse_source(text, path)
    assert result.environment is not None and result.diagnostics == [], [
        f"{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics
    ]
    return result.environment


def import_package(files: dict[str, str], name: str, factory: pytest.TempPathFactory) -> ModuleType:
    root = factory.mktemp(name)
    write_tree(root / name, files)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module")
def environment() -> ir.Environment:
    return analyse(SPEC)


@pytest.fixture(scope="module")
def files(environment: ir.Environment) -> dict[str, str]:
    return lower(environment, "specs/syntax_added.envspec")


@pytest.fixture(scope="module")
def pkg(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_package(files, "envc_test_syntax_added", tmp_path_factory)


def method_source(files: dict[str, str], name: str) -> str:
    text = files["environment.py"]
    start = text.index(f"    def {name}(")
    end = text.find("\n    def ", start + 1)
    return text[start:end]


def body_expr(source: str) -> ir.Expr:
    parsed = parse_source(f'environment p:\n    title "p"\n\ntool t() -> int:\n    return {source}\n', "p.envspec")
    assert parsed.module is not None, parsed.diagnostics
    statement = parsed.module.tools[0].body[0]
    assert isinstance(statement, ir.Return) and statement.value is not None
    return statement.value


def shape(e: Any) -> Any:
    """A compact tree of an expression: operators with their operands."""
    if isinstance(e, ir.Binary):
        return (e.op, shape(e.left), shape(e.right))
    if isinstance(e, ir.Compare):
        return ("chain", e.ops, [shape(o) for o in e.operands])
    if isinstance(e, ir.Unary):
        return (e.op, shape(e.operand))
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Name):
        return e.id
    if isinstance(e, ir.FString):
        return ["f", *[p if isinstance(p, str) else shape(p) for p in e.parts]]
    if isinstance(e, ir.Formatted):
        return ("spec", shape(e.value), e.spec)
    return e.kind


# --------------------------------------------------------------------------- the package


def test_generated_code_passes_ruff_mypy_strict_and_its_tests(
    environment: ir.Environment, files: dict[str, str]
) -> None:
    result = check_packages([Package(env=environment, name="syntax_added", files=files)], dynamic=True)["syntax_added"]
    assert result.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in result.findings]
    assert result.static_ok and result.dynamic_ok and result.tests_failed == 0
    assert result.tests_passed >= 30


# --------------------------------------------------------------------------- parsing


PARSED = {
    "a < b": ("<", "a", "b"),
    "a < b <= c": ("chain", ["<", "<="], ["a", "b", "c"]),
    "a == b != c < d": ("chain", ["==", "!=", "<"], ["a", "b", "c", "d"]),
    "(a < b) == c": ("==", ("<", "a", "b"), "c"),
    "a < b and b < c": ("and", ("<", "a", "b"), ("<", "b", "c")),
    "not a < b < c": ("not", ("chain", ["<", "<"], ["a", "b", "c"])),
    "a + 1 < b * 2 < c": ("chain", ["<", "<"], [("+", "a", 1), ("*", "b", 2), "c"]),
    "2 ** 3 ** 2": ("**", 2, ("**", 3, 2)),
    "-2 ** 2": ("-", ("**", 2, 2)),
    "(-2) ** 2": ("**", ("-", 2), 2),
    "2 ** -n": ("**", 2, ("-", "n")),
    "a * b ** c": ("*", "a", ("**", "b", "c")),
    "(a * b) ** c": ("**", ("*", "a", "b"), "c"),
    "x.y ** 2": ("**", "attr", 2),
    'f"{x:.2f}|{y}"': ["f", ("spec", "x", ".2f"), "|", "y"],
    'f"{x:>10,.1f}"': ["f", ("spec", "x", ">10,.1f")],
    'f"{a != b}"': ["f", ("!=", "a", "b")],
    'f"{xs[1:2]:>4}"': ["f", ("spec", "slice", ">4")],
    'f"{x if c else y:^5}"': ["f", ("spec", "ternary", "^5")],
    'f"{x:}"': ["f", "x"],
    'f"{x::>3}"': ["f", ("spec", "x", ":>3")],
    'f"{lambda v: v}"': ["f", "lambda"],
}


@pytest.mark.parametrize(("source", "expected"), PARSED.items(), ids=list(PARSED))
def test_parsing(source: str, expected: Any) -> None:
    assert shape(body_expr(source)) == expected


def parse_errors(source: str) -> list[tuple[str, int, int, str]]:
    text = f'environment p:\n    title "p"\n\ntool t(x: int) -> str:\n    return {source}\n'
    return [(d.code, d.line, d.col, d.message) for d in parse_source(text, "p.envspec").diagnostics]


@pytest.mark.parametrize(
    ("source", "col", "message"),
    [
        ('f"{x!r}"', 16, "conversions such as `!r` are not supported"),
        ('f"{x!r:>4}"', 16, "conversions such as `!r` are not supported"),
        ('f"{x:{x}}"', 17, "a format spec is fixed text"),
        ('f"{x:.2n}"', 17, "`.2n` is not a format spec"),
        ('f"{x:1234}"', 17, "`1234` is not a format spec"),
        ('f"{x:\\"<5}"', 17, "is not a format spec"),
        ('f"{x:c}"', 17, "`c` is not a format spec"),
        ('f"{m["k"]}"', 17, "a string literal inside `{…}` of an f-string"),
        ('f"a {{ {m["k"]}"', 22, "a string literal inside `{…}` of an f-string"),
    ],
)
def test_fstring_errors_say_why(source: str, col: int, message: str) -> None:
    [(code, line, found_col, text)] = parse_errors(source)
    assert (code, line, found_col) == ("E1005", 5, col) and message in text, text


def test_a_string_literal_in_braces_is_e1005_with_a_hint() -> None:
    result = parse_source('environment p:\n    title "p"\n\ntool t() -> str:\n    return f"{m["k"]}"\n', "p.envspec")
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "E1005" and "let key" in diagnostic.hint
    # other syntax errors on such a line are not mistaken for it
    result = parse_source('environment p:\n    title "p"\n\ntool t() -> str:\n    return f"{{m}}" "a" b\n', "p.envspec")
    assert [d.code for d in result.diagnostics] == ["E1002"]


# --------------------------------------------------------------------------- envc fmt


FORMATTED = [
    "0 <= p <= 1",
    "a == b == c != d",
    "(a < b) == (b < c)",
    "not a < b < c",
    "a + 1 < b * 2 <= c",
    "2 ** 3 ** 2",
    "(2 ** 3) ** 2",
    "-a ** 2",
    "(-a) ** 2",
    "a ** -b",
    "a * b ** c",
    "(a * b) ** c",
    "-(a * b)",
    'f"{x:.2f} and {y:>10,} {{ }}"',
    'f"{ {1: 2}[1]:>3}"',
    'f"{x if c else y:^5}"',
    'f"{x::>3}"',
]


@pytest.mark.parametrize("source", FORMATTED)
def test_fmt_prints_the_new_syntax_and_is_idempotent(source: str) -> None:
    text = f'environment p:\n    title "p"\n\ntool t() -> int:\n    return {source}\n'
    once = format_source(text, "p.envspec").text
    assert once is not None and f"return {source}\n" in once
    assert format_source(once, "p.envspec").text == once
    before, after = parse_source(text, "p.envspec").module, parse_source(once, "p.envspec").module
    assert before is not None and after is not None
    assert strip_positions(before) == strip_positions(after)


def test_fmt_drops_redundant_parentheses_only() -> None:
    text = 'environment p:\n    title "p"\n\ntool t() -> int:\n    return (a ** (b ** c)) + ((-a) ** 2) + (-(a ** 2))\n'
    once = format_source(text, "p.envspec").text or ""
    assert "return a ** b ** c + (-a) ** 2 + -a ** 2\n" in once


# --------------------------------------------------------------------------- type rules


def found(body: str) -> list[tuple[str, int, int]]:
    text = (
        'environment probe:\n    title "Probe"\n\nenum Level:\n    low, high\n\nstate:\n'
        "    blob: json = 1\n    maybe: optional[float] = None\n\n" + body
    )
    return sorted((d.code, d.line, d.col) for d in analyse_source(text, "probe.envspec").diagnostics)


REFUSED = [
    ('tool t(a: int) -> bool:\n    return 0 <= a <= "x"\n', [("E3004", 12, 17)]),
    ("tool t(a: int, xs: list[int]) -> bool:\n    return a in xs in [xs]\n", [("E3004", 12, 12)]),
    ("tool t(a: int) -> bool:\n    return a is None is None\n", [("E3004", 12, 12), ("E3004", 12, 12)]),
    ("tool t(a: int) -> bool:\n    return 1 < blob < 5\n", [("E3004", 12, 12), ("E3004", 12, 16)]),
    ('tool t(a: int) -> str:\n    return f"{a:.2}"\n', [("E3001", 12, 15)]),
    ('tool t(a: float) -> str:\n    return f"{a:.2}"\n', [("E3001", 12, 15)]),
    ('tool t(a: float) -> str:\n    return f"{a:d}"\n', [("E3001", 12, 15)]),
    ('tool t(a: int) -> str:\n    return f"{a:,x}"\n', [("E3001", 12, 15)]),
    ('tool t(a: int) -> str:\n    return f"{a:s}"\n', [("E3001", 12, 15)]),
    ('tool t(a: str) -> str:\n    return f"{a:+}"\n', [("E3001", 12, 15)]),
    ('tool t(a: str) -> str:\n    return f"{a:=5}"\n', [("E3001", 12, 15)]),
    ('tool t(a: str) -> str:\n    return f"{a:,}"\n', [("E3001", 12, 15)]),
    ('tool t(a: Level) -> str:\n    return f"{a:.1f}"\n', [("E3001", 12, 15)]),
    ('tool t(a: bool) -> str:\n    return f"{a:>5}"\n', [("E3001", 12, 15)]),
    ('tool t() -> str:\n    return f"{maybe:.1f}"\n', [("E3009", 12, 15)]),
    ('tool t() -> str:\n    return f"{blob:>4}"\n', [("E3001", 12, 15)]),
]


@pytest.mark.parametrize(("body", "expected"), REFUSED, ids=[f"refused{i}" for i in range(len(REFUSED))])
def test_misuse_is_reported(body: str, expected: list[tuple[str, int, int]]) -> None:
    assert found(body) == sorted(expected)


ACCEPTED = [
    "tool t(a: int, b: float) -> bool:\n    return 0 <= a < b <= 1.5\n",
    "tool t(a: Level) -> bool:\n    return Level.low == a != Level.high\n",
    'tool t(a: date) -> bool:\n    return "2025-01-01" <= a < "2026-01-01"\n',
    'tool t(a: int, b: float, s: str, d: date, l: Level) -> str:\n    return f"{a:.2f}{a:x}{a:,}{b:e}{b:>8}{s:<4}{s:.2}{d:>12}{l:^8}{str(True):>5}"\n',
]


@pytest.mark.parametrize("body", ACCEPTED, ids=[f"accepted{i}" for i in range(len(ACCEPTED))])
def test_correct_use_is_accepted(body: str) -> None:
    assert found(body) == []


def test_a_chain_reports_each_operand_once() -> None:
    """The middle operand is shared by two links, but checked (and reported) once."""
    assert found("tool t(a: int) -> bool:\n    return 0 < nope < 1\n") == [("E2002", 12, 16)]


def test_chained_ops_are_typed_per_link() -> None:
    env = analyse(
        'environment p:\n    title "p"\n\ntool t(a: int, d: date) -> bool:\n    return 0 <= a < 5 and "2025-01-01" <= d <= "2025-12-31"\n'
    )
    ret = env.tools[0].body[0]
    assert isinstance(ret, ir.Return) and isinstance(ret.value, ir.Binary)
    dates = ret.value.right
    assert isinstance(dates, ir.Compare)
    assert [ts.show(o.ty or ts.ANY) for o in dates.operands] == ["date", "date", "date"]


# --------------------------------------------------------------------------- lowering


def test_lowered_forms(files: dict[str, str]) -> None:
    assert "if not 0 <= p <= 1:" in method_source(files, "in_unit")
    assert 'f"p is {p:.3f}, not in [0, 1]"' in method_source(files, "in_unit")
    chains = " ".join(method_source(files, "chains").split())
    assert '[ a < b < c, a == b == c, a <= b < c <= state["limit"], a < b > c, a != b != c, not a < b < c, ]' in chains
    assert "return a < b < c < d" in method_source(files, "merged")
    assert "if x is not None != x:" in method_source(files, "optional_chain")
    assert "return -(a**2) + 2.0**3**2 + x**-1 + (a + 1) ** 2" in method_source(files, "powers")
    report = method_source(files, "report")
    assert '{r["name"]:<6}|{r["value"]:>8.2f}|{r["value"]:+.1e}|{r["level"]:^6}|{len(r["name"]):03d}' in report.replace(
        "'", '"'
    )
    assert "{count > 1!s:>5}" in method_source(files, "money")


# --------------------------------------------------------------------------- generated behaviour


def test_generated_behaviour(pkg: ModuleType) -> None:
    env = pkg.Environment()
    assert env.call("in_unit", {"p": 0.25}) is True
    error = env.call("in_unit", {"p": -0.5})["error"]
    assert error["message"] == "p is -0.500, not in [0, 1]"
    for a, b, c in itertools.product(range(-1, 3), repeat=3):
        expected = [a < b < c, a == b == c, a <= b < c <= 10, a < b > c, a != b != c, not a < b < c]
        assert env.call("chains", {"a": a, "b": b, "c": c}) == expected
    assert env.call("json_chain", {}) is True
    assert env.call("optional_chain", {"x": 3}) == 3 and env.call("optional_chain", {}) == -1
    assert env.call("powers", {"a": 3, "x": 0.25}) == -(3**2) + 2.0**9 + 0.25**-1 + 16
    expected_report = "\n".join(
        [
            f"{'t1':<6}|{21.5:>8.2f}|{21.5:+.1e}|{'low':^6}|{2:03d}|{21.5:.0%}",
            f"{'t2':<6}|{-3.25:>8.2f}|{-3.25:+.1e}|{'high':^6}|{2:03d}|{-3.25:.0%}",
        ]
    )
    assert env.call("report", {}) == expected_report
    total, count = 1234567.891, 4096
    expected_money = f"{total:,.2f} {count:_} {count:#x} {total:*>12,.3f} {str(count > 1):>5} {total:8}"
    assert env.call("money", {"total": total, "count": count}) == expected_money


CHAIN_INPUTS = 100_000


def python_chains(a: float, b: float, c: float, d: float) -> list[bool]:
    """`mixed_chains` written in Python: the reference."""
    return [
        a < b < c,
        a <= b <= c <= d,
        a == b == c,
        a != b != c,
        a < b > c,
        a >= b > c >= d,
        b < a == c,
        not a < b < c,
        a < b < c < d,
    ]


def chain_operand(generator: random.Random) -> float:
    """Ints and floats that meet often (equal values of both kinds included) and a few
    that only an exact comparison tells apart (2**53 + 1 against the float 2**53)."""
    kind = generator.randrange(5)
    if kind == 0:
        return generator.randint(-2, 2)
    if kind == 1:
        return generator.choice([-1.0, 0.0, -0.0, 0.5, 1.0, 2.0])
    if kind == 2:
        return generator.uniform(-3, 3)
    if kind == 3:
        return generator.choice([2**53, 2**53 + 1, float(2**53), -(2**63) + 1, float(2**63)])
    return generator.randint(-(10**18), 10**18)


def test_chained_comparisons_are_pythons_on_100000_inputs(pkg: ModuleType) -> None:
    """A differential test: `mixed_chains` (nine chains of two to four links over
    `number` operands) against Python's own chains on 100,000 seeded operand quadruples."""
    env = pkg.Environment()
    generator = random.Random(14)
    for _ in range(CHAIN_INPUTS):
        a, b, c, d = (chain_operand(generator) for _ in range(4))
        assert env.mixed_chains(a, b, c, d) == python_chains(a, b, c, d), (a, b, c, d)


# --------------------------------------------------------------------------- format specs against Python


def spec_grid() -> list[str]:
    """Specs of every shape the subset has (not every combination: a sample of each part)."""
    fills = ["", "<", ">", "^", "=", "*<", "0>", "x^", ":="]
    signs = ["", "+", "-", " "]
    rest = ["", "#", "0", "#0"]
    widths = ["", "1", "8", "12"]
    groupings = ["", ",", "_"]
    precisions = ["", ".0", ".2", ".10"]
    types = ["", "s", "d", "b", "o", "x", "X", "e", "E", "f", "F", "g", "G", "%"]
    chooser = random.Random(6)
    specs = {
        "".join(parts)
        for parts in itertools.product(fills[:1], signs, rest[:2], widths[:2], groupings, precisions[:2], types)
    }
    specs |= {"".join(parts) for parts in itertools.product(fills, widths, precisions, ["", "s"])}  # text's own
    while len(specs) < 1200:
        specs.add("".join(chooser.choice(part) for part in (fills, signs, rest, widths, groupings, precisions, types)))
    return sorted(specs)


SAMPLES = {
    "int": [0, 1, -1, 7, 255, -4096, 10**12, -(10**15) + 3],
    "float": [0.0, -0.0, 1.0, -2.5, 3.14159, 1e-7, 123456.789, -1e20, 2.0**60, 0.125],
    "str": ["", "a", "abc", "héllo wörld", "a long piece of text"],
}


@pytest.mark.parametrize("kind", ["int", "float", "str"])
def test_every_spec_the_checker_takes_works_in_python(kind: str) -> None:
    """`format_problem` lets a spec through only if Python formats every value of that
    type with it (and, for a float, an int a float variable may hold); it refuses a spec
    only where Python would fail, or a float would show differently by a precision."""
    taken = 0
    for spec in spec_grid():
        problem = ts.format_problem(spec, kind)
        values: list[Any] = SAMPLES[kind] + (SAMPLES["int"] if kind == "float" else [])
        failures = []
        for value in values:
            try:
                format(value, spec)
            except ValueError as error:
                failures.append(str(error))
        if not problem:
            taken += 1
            assert not failures, (spec, kind, failures)
        elif ts.FORMAT_SPEC.fullmatch(spec) and not failures and kind != "float":
            raise AssertionError(f"{spec!r} refused for {kind} ({problem}), yet Python formats every sample")
    assert taken > 200


def test_format_specs_are_pythons_format(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One tool per spec of the grid that fits each type; 100,000 seeded values through them."""
    tools, cases = [], []
    for index, spec in enumerate(spec_grid()):
        for kind in ("int", "float", "str"):
            if not ts.format_problem(spec, kind):
                name = f"show_{kind}_{index}"
                tools.append(f'tool {name}(v: {kind}) -> str:\n    return f"<{{v:{spec}}}>"\n')
                cases.append((name, kind, spec))
    text = 'environment spec_grid:\n    title "Format spec grid"\n\n' + "\n".join(tools)
    env = analyse(text, "specs/spec_grid.envspec")
    files = lower(env, "specs/spec_grid.envspec")
    result = check_packages([Package(env=env, name="spec_grid", files=files)], dynamic=False)["spec_grid"]
    assert result.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in result.findings[:10]]
    package = import_package(files, "envc_test_spec_grid", tmp_path_factory)
    instance = package.Environment()
    generator = random.Random(7)
    strings = "abcxyzé €😀-_. "
    for _ in range(100_000):
        name, kind, spec = generator.choice(cases)
        value: Any
        if kind == "int":
            value = generator.choice([generator.randint(-1000, 1000), generator.randint(-(10**18), 10**18)])
        elif kind == "float":
            value = generator.choice(
                [
                    generator.uniform(-1e4, 1e4),
                    generator.uniform(-1, 1) * 10 ** generator.randint(-20, 20),
                    float(generator.randint(-99, 99)),
                    generator.randint(-99, 99),
                ]
            )
        else:
            value = "".join(generator.choice(strings) for _ in range(generator.randrange(12)))
        assert getattr(instance, name)(value) == f"<{format(value, spec)}>", (spec, value)


def test_effects_see_inside_chains_and_format_specs() -> None:
    text = (
        'environment p:\n    title "p"\n\nstate:\n    limit: int = 10\n    label: str = "x"\n\n'
        "tool c(a: int) -> bool:\n    return 0 < a < limit\n\n"
        'tool s() -> str:\n    return f"{label:>8}|{limit:04d}"\n'
    )
    env = analyse(text, "p.envspec")
    tools = {t.name: t for t in env.tools}
    assert tools["c"].reads == ["limit"] and tools["c"].writes == []
    assert sorted(tools["s"].reads) == ["label", "limit"]
    dumped = env.model_dump_json()
    assert ir.Environment.model_validate_json(dumped) == env  # the new nodes round-trip through JSON
