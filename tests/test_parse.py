"""Stage 1, parse: spec text to IR, with positions on every node, or syntax diagnostics.

Positions are 1-based `line`/`col` with an exclusive `end_col`, as Lark reports them.
Malformed input never raises: `parse_source` returns diagnostics instead.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import ir
from compiler.front.grammar import INT64_MAX, MAX_NESTING, MAX_SYNTAX_ERRORS
from compiler.front.lark_builders import Collector, ToIR
from compiler.front.lark_parser import main_parser
from compiler.front.parse import parse_source

HEADER = 'environment shop:\n    title "Shop"\n\n'  # three lines: declarations start on line 4


def parse_ok(text: str) -> ir.Module:
    result = parse_source(text, "spec.envspec")
    assert result.diagnostics == [], [(d.code, d.line, d.col, d.message) for d in result.diagnostics]
    assert result.module is not None
    return result.module


def syntax_errors(text: str) -> list[tuple[str, int, int]]:
    result = parse_source(text, "spec.envspec")
    assert result.module is None
    return [(d.code, d.line, d.col) for d in result.diagnostics]


def tool_body(*lines: str, signature: str = "tool t(x: int, name: str) -> str:") -> list[Any]:
    """The statements of one tool whose body is `lines` (first body line is line 5)."""
    module = parse_ok(HEADER + signature + "\n" + "".join(f"    {line}\n" for line in lines))
    return module.tools[0].body


def expr_of(source: str) -> Any:
    """The expression of `return <source>` on line 5, starting at column 12."""
    statement = tool_body(f"return {source}")[0]
    assert isinstance(statement, ir.Return)
    return statement.value


def span(node: ir.Node) -> tuple[int, int, int, int]:
    return (node.line, node.col, node.end_line, node.end_col)


# --------------------------------------------------------------------------- declarations


def test_header_items() -> None:
    module = parse_ok(
        "# a comment first\n"
        "environment shop:\n"
        '    title "Shop"\n'
        "    archetype transactional_workspace\n"
        '    domains "retail", "payments"\n'
        '    doc """\n'
        "        First line.\n"
        "          Indented more.\n"
        '    """\n'
        '    extends "base"\n'
        "    seed 7\n"
        '    clock "2025-03-01T08:00:00"\n'
    )
    header = module.header
    assert header is not None
    assert (header.line, header.col) == (2, 1)
    assert header.name == "shop"
    assert header.title == "Shop"
    assert header.archetype == "transactional_workspace"
    assert header.domains == ["retail", "payments"]
    assert header.doc == "First line.\n  Indented more."
    assert (header.extends, header.seed, header.clock) == ("base", 7, "2025-03-01T08:00:00")


def test_declaration_positions_and_file() -> None:
    module = parse_ok(
        HEADER + "enum Color:\n"  # line 4
        "    red, green\n"
        "\n"
        "record Item:\n"  # line 7
        '    """An item."""\n'
        "    id: int\n"  # line 9
        "    color: Color = Color.red\n"
        "\n"
        "state:\n"  # line 12
        "    items: map[int, Item] = {}\n"
        "\n"
        "tool count() -> int:\n"  # line 15
        "    return len(items)\n"
    )
    assert (module.enums[0].line, module.enums[0].col) == (4, 1)
    assert module.enums[0].members == ["red", "green"]
    record = module.records[0]
    assert (record.line, record.col, record.doc) == (7, 1, "An item.")
    assert [(f.name, f.line, f.col) for f in record.fields] == [("id", 9, 5), ("color", 10, 5)]
    default = record.fields[1].default
    assert isinstance(default, ir.Attr) and span(default) == (10, 20, 10, 29)
    field_type = module.state[0].fields[0].type
    assert (field_type.name, [a.name for a in field_type.args]) == ("map", ["int", "Item"])
    assert span(field_type) == (13, 12, 13, 26)
    assert (module.tools[0].line, module.tools[0].col) == (15, 1)
    assert all(decl.file == "spec.envspec" for decl in [*module.enums, *module.records, *module.state, *module.tools])


def test_parameter_positions_defaults_and_constraints() -> None:
    line = 'tool greet(name: str min_length 1 pattern "^[a-z]+$", times: int = 2 min 1 max 9) -> str:'
    module = parse_ok(HEADER + line + "\n    return name\n")
    name, times = module.tools[0].params

    def col(fragment: str) -> int:
        return line.index(fragment) + 1

    assert span(name) == (4, col("name"), 4, col(", times"))
    assert [(c.kind, c.value.value) for c in name.constraints] == [("min_length", 1), ("pattern", "^[a-z]+$")]
    assert isinstance(times.default, ir.Const) and times.default.value == 2
    assert span(times.default) == (4, col("2 min"), 4, col("2 min") + 1)
    assert [(c.kind, c.value.value, c.col) for c in times.constraints] == [
        ("min", 1, col("min 1")),
        ("max", 9, col("max 9")),
    ]


def test_effects_escape_bodies_override_and_drop() -> None:
    module = parse_ok(
        HEADER + "override tool sync() -> bool:\n"
        "    reads items, owner\n"
        "    writes items\n"
        '    side_effect "talks to the warehouse"\n'
        '    python "return True"\n'
        "\n"
        "fn hint() -> str:\n"
        '    llm "Suggest a name."\n'
        "\n"
        "drop scenario busy\n"
    )
    sync = module.tools[0]
    assert sync.override and sync.body == []
    assert (sync.declared_reads, sync.declared_writes) == (["items", "owner"], ["items"])
    assert sync.side_effect == "talks to the warehouse"
    assert sync.escape is not None and (sync.escape.kind, sync.escape.text) == ("python", "return True")
    assert module.fns[0].escape is not None and module.fns[0].escape.kind == "llm"
    assert module.fns[0].declared_reads is None
    drop = module.drops[0]
    assert (drop.what, drop.name, drop.line, drop.col) == ("scenario", "busy", 13, 1)


def test_tests_and_tasks() -> None:
    module = parse_ok(
        HEADER + "test flow:\n"
        "    scenario busy\n"
        '    let t = make(name="a")\n'
        '    make(name="") raises invalid_argument "empty"\n'
        "    expect t.id == 1\n"
        "    ping()\n"
        "\n"
        "task tidy:\n"
        "    scenario busy\n"
        '    request "Tidy up."\n'
        "    solution:\n"
        '        make(name="b")\n'
        "        ping()\n"
        "    verify count == 2\n"
    )
    steps = module.tests[0].steps
    assert [s.kind for s in steps] == ["scenario", "let", "raises", "expect", "call"]
    assert [(s.line, s.col) for s in steps] == [(5, 5), (6, 5), (7, 5), (8, 5), (9, 5)]
    raises = steps[2]
    assert isinstance(raises, ir.ExpectRaises) and (raises.error, raises.message) == ("invalid_argument", "empty")
    task = module.tasks[0]
    assert (task.scenario, task.request) == ("busy", "Tidy up.")
    assert [call.func.id for call in task.solution] == ["make", "ping"]
    assert len(task.verify) == 1


# --------------------------------------------------------------------------- statements and expressions


def test_statement_kinds_and_positions() -> None:
    body = tool_body(
        "let n: int = x + 1",
        "n += 2",
        "del stock[name]",
        'require n > 0 else invalid_argument(f"bad {n}", field="x")',
        "if n > 5:",
        "    pass",
        "elif n > 3:",
        '    fail conflict("mid")',
        "else:",
        "    for key, value in stock:",
        "        continue",
        "return name",
    )
    assert [s.kind for s in body] == ["let", "assign", "delete", "require", "if", "return"]
    assert [(s.line, s.col) for s in body] == [(5, 5), (6, 5), (7, 5), (8, 5), (9, 5), (16, 5)]
    let, augmented, _, require, branch, _ = body
    assert let.type is not None and let.type.name == "int"
    assert augmented.op == "+="
    assert require.error.kind == "invalid_argument" and [k.name for k in require.error.fields] == ["field"]
    assert span(require.error) == (8, 24, 8, 63)
    assert [(b.line, b.col) for b in branch.branches] == [(9, 5), (11, 5)]
    loop = branch.orelse[0]
    assert isinstance(loop, ir.For) and loop.targets == ["key", "value"] and (loop.line, loop.col) == (14, 9)


@pytest.mark.parametrize(
    ("source", "kind", "expected_span"),
    [
        ("x", "name", (5, 12, 5, 13)),
        ("name.upper()", "call", (5, 12, 5, 24)),
        ("stock[name].qty", "attr", (5, 12, 5, 27)),
        ("items[1:n]", "slice", (5, 12, 5, 22)),
        ("-x", "unary", (5, 12, 5, 14)),
        ("a if c else b", "ternary", (5, 12, 5, 25)),
        ("[i for i in xs if i > 0]", "comprehension", (5, 12, 5, 36)),
        ('{"a": 1, "b": 2}', "map", (5, 12, 5, 28)),
        ("[1, 2.5, None, True]", "list", (5, 12, 5, 32)),
    ],
)
def test_expression_spans(source: str, kind: str, expected_span: tuple[int, int, int, int]) -> None:
    node = expr_of(source)
    assert node.kind == kind
    assert span(node) == expected_span


def test_operator_precedence() -> None:
    node = expr_of("not a and b or c + d * e > 3")
    assert (node.kind, node.op) == ("binary", "or")
    assert (node.left.op, node.left.left.kind, node.left.left.op) == ("and", "unary", "not")
    compare = node.right
    assert compare.op == ">" and compare.left.op == "+" and compare.left.right.op == "*"


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not"])
def test_comparison_operators(op: str) -> None:
    assert expr_of(f"a {op} b").op == op


def test_literals_and_calls() -> None:
    node = expr_of('f(1_000, -2, 3.5e2, "s", None, True, False, key=lambda t: t.id)')
    assert isinstance(node, ir.Call)
    assert [getattr(a, "value", None) for a in node.args] == [1000, None, 350.0, "s", None, True, False]
    assert node.args[1].kind == "unary"
    keyword = node.kwargs[0]
    assert keyword.name == "key" and isinstance(keyword.value, ir.Lambda) and keyword.value.params == ["t"]


def test_map_comprehension() -> None:
    node = expr_of("{k: v for k, v in stock if v > 1}")
    assert isinstance(node, ir.Comprehension)
    assert node.value is not None and node.targets == ["k", "v"] and node.cond is not None


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        (r'"tab\tnewline\n"', "tab\tnewline\n"),
        (r'"\u0041\u00e9"', "Aé"),
        (r'"say \"hi\""', 'say "hi"'),
        ('"""\n    two\n      lines\n    """', "two\n  lines"),
    ],
)
def test_string_escapes(literal: str, value: str) -> None:
    assert expr_of(literal).value == value


def test_integer_range() -> None:
    assert expr_of(str(INT64_MAX)).value == INT64_MAX
    assert syntax_errors(HEADER + f"tool t() -> int:\n    return {INT64_MAX + 1}\n") == [("E1007", 5, 12)]


# --------------------------------------------------------------------------- f-strings


def test_fstring_parts() -> None:
    node = expr_of(r'f"hi {name.upper()}, {{x}} {x + 1}!\n"')
    assert isinstance(node, ir.FString)
    literal_parts = [p for p in node.parts if isinstance(p, str)]
    assert literal_parts == ["hi ", ", {x} ", "!\n"]
    expressions = [p for p in node.parts if not isinstance(p, str)]
    assert [e.kind for e in expressions] == ["call", "binary"]


def test_fstring_expression_positions_are_file_positions() -> None:
    #               col 12: f, 13: ", 14: h, 15: i, 16: space, 17: {, 18: name
    node = expr_of('f"hi {name.upper()} and {x + 10}"')
    call, binary = [p for p in node.parts if not isinstance(p, str)]
    assert span(node) == (5, 12, 5, 45)
    assert span(call) == (5, 18, 5, 30)
    assert span(call.func.obj) == (5, 18, 5, 22)
    assert span(binary) == (5, 37, 5, 43)
    assert span(binary.right) == (5, 41, 5, 43)


def test_fstring_on_a_later_line_keeps_its_line() -> None:
    body = tool_body("let a = 1", "let b = 2", 'return f"{x}"')
    node = body[2].value
    assert span(node.parts[0]) == (7, 15, 7, 16)


@pytest.mark.parametrize(
    ("literal", "col"),
    [
        ('f"a {x"', 16),  # never closed
        ('f"a } b"', 16),  # single closing brace
        ('f"a {} b"', 17),  # empty hole
        ('f"a {x +} b"', 17),  # hole does not parse
        ('f"a {(x]} b"', 17),  # mismatched brackets
    ],
)
def test_malformed_fstrings(literal: str, col: int) -> None:
    assert syntax_errors(HEADER + f"tool t(x: int) -> str:\n    return {literal}\n") == [("E1005", 5, col)]


def test_fstring_hole_errors_point_into_the_string() -> None:
    big = INT64_MAX + 1
    assert syntax_errors(HEADER + f'tool t() -> str:\n    return f"n={{{big}}}"\n') == [("E1007", 5, 17)]


# --------------------------------------------------------------------------- syntax errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("enum Color:\n    red green\n", [("E1002", 5, 9)]),
        ("tool t() -> int\n    return 1\n", [("E1002", 4, 16)]),
        ("tool t() -> int:\n    return 1 $ 2\n", [("E1001", 5, 14)]),
        ('tool t() -> str:\n    return "abc\n', [("E1001", 5, 12)]),
        ("tool t() -> int:\n", [("E1003", 4, 1)]),
        ("tool t() -> int:\n    let a = 1\n        return a\n", [("E1004", 6, 9)]),
        ("tool t() -> int:\n    if True:\n            return 1\n      return 2\n", [("E1004", 7, 7)]),
        ('tool t() -> str:\n    return "a\\qb"\n', [("E1006", 5, 12)]),
    ],
)
def test_syntax_error_positions(text: str, expected: list[tuple[str, int, int]]) -> None:
    assert syntax_errors(HEADER + text) == expected


def test_errors_in_several_declarations_are_reported_in_one_run() -> None:
    text = (
        HEADER + "enum Color:\n    red green\n\n"  # line 5
        "record Item:\n    id int\n\n"  # line 8
        "state:\n    count: int = 0\n\n"  # fine
        "tool t() -> int:\n    return 1 +\n\n"  # line 14
        "test flow:\n    t() raises\n"  # line 17
    )
    assert syntax_errors(text) == [("E1002", 5, 9), ("E1002", 8, 8), ("E1002", 14, 15), ("E1002", 17, 15)]


def test_syntax_errors_are_capped() -> None:
    text = HEADER + "".join(f"enum E{i}:\n    a b\n\n" for i in range(3 * MAX_SYNTAX_ERRORS))
    errors = syntax_errors(text)
    assert MAX_SYNTAX_ERRORS <= len(errors) <= MAX_SYNTAX_ERRORS + 1
    assert errors[0] == ("E1002", 5, 7)


def test_declaration_keywords_inside_a_long_string_do_not_restart_parsing() -> None:
    text = 'environment shop:\n    doc """\ntool fake\nenum B\n    """\n\nenum A:\n    a b\n'
    assert syntax_errors(text) == [("E1002", 8, 7)]


@pytest.mark.parametrize(
    ("depth", "expected"),
    [(MAX_NESTING, []), (MAX_NESTING + 1, [("E1008", 5, 14 + MAX_NESTING)])],
)
def test_bracket_nesting_limit(depth: int, expected: list[tuple[str, int, int]]) -> None:
    text = HEADER + "state:\n    a: int = " + "(" * depth + "1" + ")" * depth + "\n"
    result = parse_source(text, "spec.envspec")
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == expected


def test_long_expression_chain_is_refused_not_crashing() -> None:
    errors = syntax_errors(HEADER + "tool t() -> int:\n    return " + " + ".join(["1"] * 500) + "\n")
    assert [code for code, _, _ in errors] == ["E1008"]


# --------------------------------------------------------------------------- NUL characters

NUL_CASES = [
    # (where, text after HEADER, line:col of the NUL): the lexer alone took the first two
    ("in_a_string", 'tool t() -> str:\n    return "ab\x00c"\n', (5, 15)),
    ("in_a_comment", "# a com\x00ment\ntool t() -> int:\n    return 1\n", (4, 8)),
    ("in_a_long_string", 'tool t() -> str:\n    """doc\n    more \x00"""\n    return "x"\n', (6, 10)),
    ("in_an_identifier", "tool t\x00u() -> int:\n    return 1\n", (4, 7)),
    ("after_a_value", "state:\n    n: int = 0\x00\n", (5, 15)),
]


@pytest.mark.parametrize(("text", "position"), [c[1:] for c in NUL_CASES], ids=[c[0] for c in NUL_CASES])
def test_a_nul_anywhere_is_e1001_at_its_position(text: str, position: tuple[int, int]) -> None:
    result = parse_source(HEADER + text, "spec.envspec")
    assert result.module is None
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("E1001", *position)]
    (diagnostic,) = result.diagnostics
    assert "NUL" in diagnostic.message and "U+0000" in diagnostic.message
    assert (diagnostic.end_line, diagnostic.end_col) == (position[0], position[1] + 1)


def test_every_nul_is_reported_and_nothing_else() -> None:
    text = HEADER + 'enum Color:\n    red green\x00\n# \x00\x00\ntool t() -> str:\n    return "\x00"\n'
    assert syntax_errors(text) == [("E1001", 5, 14), ("E1001", 6, 3), ("E1001", 6, 4), ("E1001", 8, 13)]


def test_nuls_are_capped() -> None:
    errors = syntax_errors(HEADER + "# \x00\n" * (3 * MAX_SYNTAX_ERRORS))
    assert len(errors) == MAX_SYNTAX_ERRORS + 1
    assert errors[0] == ("E1001", 4, 3)


def test_a_nul_is_found_after_a_bom_and_in_crlf_text() -> None:
    text = "\ufeff" + HEADER.replace("\n", "\r\n") + "# \x00\r\n"
    assert syntax_errors(text) == [("E1001", 4, 3)]


def test_an_escaped_nul_in_a_string_is_still_accepted() -> None:
    module = parse_ok(HEADER + 'tool t() -> str:\n    return "a\\u0000b"\n')
    statement = module.tools[0].body[0]
    assert isinstance(statement, ir.Return) and isinstance(statement.value, ir.Const)
    assert statement.value.value == "a\x00b"


# --------------------------------------------------------------------------- robustness

HOSTILE = [
    "",
    "\x00",
    "\ufeff",
    '"""',
    "environment",
    "environment x:\n" + "(" * 10_000,
    "environment x:\n    title " + '"' * 7,
    "environment x:\r    title 'x'\r",
    "\t\t\tenvironment x:\n",
    "environment x:\n" + "    " * 300 + "title 'x'\n",
    'environment x:\n    title "' + "x" * 200_000 + '"\n',
    "\n".join("tool t() -> int:" for _ in range(300)),
    "environment x:\n\x0c\x0b\x1b[31m\n",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_gives_diagnostics_not_exceptions(text: str) -> None:
    result = parse_source(text, "spec.envspec")
    assert all(d.line >= 1 and d.col >= 1 for d in result.diagnostics), result.diagnostics


SPEC_TOKENS = (
    "environment shop enum record state tool fn test task let return if else for in require fail not_found"
    ' ( ) [ ] { } : , . = += -> int str list map optional None 1 2.5 "s" x y and or not is lambda'
    " scenario expect raises override drop #c $ \\"
).split() + ['"""d"""', "\n", "\n    ", "\n        ", " ", "\t"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(SPEC_TOKENS), max_size=60))
def test_random_token_soup_never_raises(tokens: list[str]) -> None:
    result = parse_source(HEADER + " ".join(tokens), "spec.envspec")
    assert all(d.line >= 1 and d.col >= 1 for d in result.diagnostics)


def test_parsing_is_thread_safe() -> None:
    good = HEADER + "tool t(x: int) -> int:\n    return x + 1\n"
    bad = HEADER + "enum Color:\n    red green\n"
    texts = [good, bad] * 20
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda text: parse_source(text, "spec.envspec"), texts))
    for text, result in zip(texts, results):
        assert (result.module is None) == (text is bad)
        if text is bad:
            assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("E1002", 5, 9)]


def test_a_param_line_given_twice_is_e2017() -> None:
    text = 'environment e:\n    seed 1\n\ntool t(a: int) -> int:\n    param a "x"\n    param a "y"\n    return a\n'
    result = parse_source(text, "spec.envspec")
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("E2017", 6, 5)]


def test_excerpt_shows_control_characters_as_pictures() -> None:
    """The caret excerpt of a NUL sends no raw control byte to the terminal, and the
    caret still points at the character."""
    from compiler.diagnostics import render_text

    text = HEADER + 'tool t() -> str:\n    return "ab\x00c"\n'
    [error] = parse_source(text, "nul.envspec").diagnostics
    excerpt = render_text(error, text).splitlines()[1:3]
    assert "\x00" not in "".join(excerpt) and "\u2400" in excerpt[0]
    assert excerpt[0].index("\u2400") == excerpt[1].index("^")


# --------------------------------------------------------------------------- the inline parser

ROOT = Path(__file__).resolve().parent.parent
EVERY_SPEC = sorted(
    path
    for path in [*ROOT.glob("specs/**/*.envspec"), *ROOT.glob("tests/**/*.envspec")]
    if b"\0" not in path.read_bytes()  # NUL characters are refused before any parser runs
)


def _both_ways(text: str) -> tuple[tuple[Any, list[Any]], tuple[Any, list[Any]]]:
    """(IR, builder errors) from the inline parser and from the tree-first parse."""
    outcomes = []
    for way in (main_parser().parse, main_parser().parse_tree_first):
        collector = Collector("spec.envspec")
        try:
            built = way(text, "start", collector)
        except Exception as exc:  # noqa: BLE001 - a syntax error: both ways must raise alike
            outcomes.append((type(exc).__name__, []))
            continue
        dumped = [decl.model_dump_json() for decl in built]
        outcomes.append((dumped, [(e.code, e.message, e.line, e.col, e.end_line, e.end_col) for e in collector.errors]))
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("path", EVERY_SPEC, ids=lambda p: str(p.relative_to(ROOT)))
def test_inline_parser_builds_the_ir_of_the_tree_first_parse(path: Path) -> None:
    """The IR built during the parse (no parse tree) is the IR `ToIR` builds from Lark's
    tree, positions and builder errors included, for every spec and corpus file."""
    text = path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
    inline, tree_first = _both_ways(text if text.endswith("\n") else text + "\n")
    assert inline == tree_first


def test_both_parser_paths_build_state_fields_and_scenarios_from_files() -> None:
    """The `from "FILE"` forms of state fields and scenarios: the inline parser builds them
    itself (no fallback) and gets the IR of the tree-first parse."""
    text = (
        "environment shop:\n    seed 1\n\nstate:\n"
        '    users: map[int, str] from "data/users.json"\n    n: int = 0\n\n'
        'scenario big from "data/big.json"\n\nscenario some:\n    n = 1\n    users = from "data/some.json"\n'
    )
    builder = ToIR(Collector("spec.envspec"), main_parser().parse_expr)
    inline = main_parser().inline.parse(text, "start", builder)
    tree_first = main_parser().parse_tree_first(text, "start", Collector("spec.envspec"))
    assert [d.model_dump_json() for d in inline] == [d.model_dump_json() for d in tree_first]
    state = next(d for d in inline if isinstance(d, ir.StateDecl))
    assert [(f.name, f.source, f.default) for f in state.fields][0] == ("users", "data/users.json", None)
    scenario = next(d for d in inline if isinstance(d, ir.ScenarioDecl))
    assert (scenario.name, scenario.source, scenario.items, scenario.line) == ("big", "data/big.json", [], 8)
    some = [d for d in inline if isinstance(d, ir.ScenarioDecl)][1]
    assert [(i.name, i.source, i.value is None, i.line, i.col) for i in some.items][1] == (
        "users",
        "data/some.json",
        True,
        12,
        5,
    )


def test_inline_parser_positions_of_parenthesised_and_inlined_rules() -> None:
    """Lark's position rule for inlined `?rule`s: a parenthesised expression keeps its own
    span, and what is built around it starts at its `(`."""
    value = tool_body("return (x).bit + f(  (x)  )[0]")[0].value
    assert (value.col, value.left.line, value.left.col, value.left.end_col) == (12, 5, 12, 19)  # `(x).bit`
    assert (value.left.obj.col, value.left.obj.end_col) == (13, 14)  # `x` itself
    assert (value.right.col, value.right.end_col) == (22, 35)  # `f(  (x)  )[0]`
    assert value.right.obj.args[0].col == 27  # the argument `x`, inside its brackets
