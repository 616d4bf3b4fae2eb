"""`envc fmt` (compiler/front/fmt.py): one canonical style, comments kept, meaning kept.

Three properties carry the formatter: the output parses to the same IR as the input
(positions aside), formatting the output again changes nothing, and no comment is lost.
The unit tests pin the canonical style on the tricky constructs; the Hypothesis tests
check the properties on generated specs and on damaged copies of a real spec.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from shipped import SPECS as SPECS_DIR
from strategies import COMMENT_MARK_RE, TICKETING, expressions, mutated_specs, specs

from compiler import ir
from compiler.front.fmt import format_module, format_source, strip_positions
from compiler.front.parse import parse_source

PATH = "t.envspec"


def fmt(text: str) -> str:
    result = format_source(text, PATH)
    assert result.text is not None, result.diagnostics
    assert result.diagnostics == []
    return result.text


def ir_of(text: str) -> dict[str, object]:
    parsed = parse_source(text, PATH)
    assert parsed.module is not None, parsed.diagnostics
    return strip_positions(parsed.module)


def assert_canonical(text: str) -> str:
    """Format `text`; check meaning, idempotence and comments; return the output."""
    out = fmt(text)
    assert ir_of(out) == ir_of(text), out
    assert fmt(out) == out
    assert sorted(COMMENT_MARK_RE.findall(out)) == sorted(COMMENT_MARK_RE.findall(text))
    return out


def body(*lines: str) -> str:
    """A fn whose body is `lines`, for statement and expression cases."""
    return "fn f() -> int:\n" + "".join(f"    {line}\n" if line else "\n" for line in lines)


def expr_out(source: str) -> str:
    """How `return <source>` comes out."""
    out = assert_canonical(body(f"return {source}"))
    return out.split("\n")[1].removeprefix("    return ")


# --------------------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("(a * b) + c", "a * b + c"),
        ("a * (b + c)", "a * (b + c)"),
        ("a // (b % c)", "a // (b % c)"),
        ("-(a + b)", "-(a + b)"),
        ("(-a).b", "(-a).b"),
        ("-(a.b)", "-a.b"),
        ("- - a", "--a"),
        ("a - (-b)", "a - -b"),
        ("not (a and b)", "not (a and b)"),
        ("(not a) == b", "(not a) == b"),
        ("not (a == b)", "not (a == b)"),  # readable parentheses are kept where written
        ("not a == b", "not a == b"),  # and not added
        ("not ((a == b))", "not (a == b)"),
        ("not (0 < a < b)", "not (0 < a < b)"),
        ("not (a.b)", "not a.b"),
        ("not (not a)", "not not a"),
        ("(a < b) == c", "(a < b) == c"),
        ("a == (b < c)", "a == (b < c)"),
        ("(a + b) < (c * d)", "a + b < c * d"),
        ("a or (b or c)", "a or (b or c)"),
        ("(a or b) or c", "a or b or c"),
        ("(a and b) or c", "(a and b) or c"),
        ("a and b or c", "a and b or c"),
        ("a or (b and c)", "a or (b and c)"),
        ("a or b and c", "a or b and c"),
        ("(a and b) and c", "a and b and c"),
        ("c and (a == b)", "c and a == b"),
        ("a and (b or c)", "a and (b or c)"),
        ("(a or b) and c", "(a or b) and c"),
        ("a if (b if c else d) else e", "a if (b if c else d) else e"),
        ("(a if b else c) if d else e", "(a if b else c) if d else e"),
        ("a if b else (c if d else e)", "a if b else c if d else e"),
        ("a if b else (lambda x: x)", "a if b else (lambda x: x)"),
        ("(lambda x, y: x + y)(1, 2)", "(lambda x, y: x + y)(1, 2)"),
        ("sorted(xs, key=(lambda t: t.id))", "sorted(xs, key=lambda t: t.id)"),
        ("lambda x: (lambda y: x)", "lambda x: lambda y: x"),
        ("(a if b else c).d", "(a if b else c).d"),
        ("xs[(a + b)]", "xs[a + b]"),
        ("xs[:n]", "xs[:n]"),
        ("xs[ 1 : ]", "xs[1:]"),
        ("xs[:]", "xs[:]"),
        ("xs[(a if b else c):(n)]", "xs[a if b else c:n]"),
        ("sorted(found, key=lambda t: t.id)[:limit]", "sorted(found, key=lambda t: t.id)[:limit]"),
        ("[t for t in xs if (t.a or t.b)]", "[t for t in xs if t.a or t.b]"),
        ("[t for t in (a if b else c)]", "[t for t in (a if b else c)]"),
        ("[t for t in xs if (a if b else c)]", "[t for t in xs if (a if b else c)]"),
        ("{k: v for k, v in items(m) if v > 0}", "{k: v for k, v in items(m) if v > 0}"),
        ("[x for x in xs]", "[x for x in xs]"),
        ("a not in b", "a not in b"),
        ("a is not None", "a is not None"),
        ("not (a in b)", "not (a in b)"),
        ("not (a not in b)", "not (a not in b)"),
        ("(a is b) is c", "(a is b) is c"),
        ("f(a, b,)", "f(a, b)"),
        ("f(x = 1, y=2)", "f(x=1, y=2)"),
        ("f(x=1, 2)", "f(2, x=1)"),
        ("[1, 2, 3,]", "[1, 2, 3]"),
        ("{ 'a' : 1 }".replace("'", '"'), '{"a": 1}'),
        ("{}", "{}"),
        ("[]", "[]"),
        ("1_000_000", "1000000"),
        ("1.50", "1.5"),
        ("2e3", "2000.0"),
        ("1e999", "1e999"),
        ("1.0e-7", "1e-07"),
        ("((((a))))", "a"),
        ("True and None", "True and None"),
    ],
)
def test_expression_style(source: str, expected: str) -> None:
    assert expr_out(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r'"plain"', r'"plain"'),
        (r'"say \"hi\""', r'"say \"hi\""'),
        (r'"\u0041\u00e9"', '"Aé"'),
        (r'"tab\there"', r'"tab\there"'),
        (r'"new\nline"', r'"new\nline"'),
        (r'"\r\0"', r'"\r\0"'),
        (r'"\{braces\}"', '"{braces}"'),
        (r'"\u2028"', r'"\u2028"'),
        (r'"\u0007"', r'"\u0007"'),
        ('"# not a comment"', '"# not a comment"'),
        ('"😀"', '"😀"'),
        (r'"a\u005cb"', r'"a\\b"'),
        (r'"a\\b"', r'"a\\b"'),
        ('"""long\n   string"""', r'"long\nstring"'),
    ],
)
def test_string_escapes(source: str, expected: str) -> None:
    assert expr_out(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('f"{{lit}} {x}"', 'f"{{lit}} {x}"'),
        ('f"{x}}}"', 'f"{x}}}"'),
        ('f"{ {1: 2}[k] }"', 'f"{ {1: 2}[k]}"'),
        ('f"{ {k: v for k, v in m} }"', 'f"{ {k: v for k, v in m}}"'),
        ('f"{(a + b) * c}"', 'f"{(a + b) * c}"'),
        ('f"{lambda x: x}"', 'f"{lambda x: x}"'),
        (r'f"quote \" and \u0041 and \n"', r'f"quote \" and A and \n"'),
        (r'f"\{x\}"', 'f"{{x}}"'),
        ('f"no fields"', 'f"no fields"'),
        ('f""', 'f""'),
        ('f"ticket {ticket.id}"', 'f"ticket {ticket.id}"'),
    ],
)
def test_fstrings(source: str, expected: str) -> None:
    assert expr_out(source) == expected


def test_fstring_with_backslashes() -> None:
    assert_canonical(body(r'return f"\\{x}\\"'))


# --------------------------------------------------------------------------- statements


def test_statement_spacing() -> None:
    out = assert_canonical(
        body(
            "let x:int=1",
            "x+=2",
            "x -= 1",
            "xs[i]=x",
            "t.a = -x",
            "del xs[0]",
            'require x>0 else invalid_argument("bad", field = "x", allowed=[1,2,],)',
            "fail not_found()",
            'fail not_found(entity="x")',
            "return",
        )
    )
    assert out == body(
        "let x: int = 1",
        "x += 2",
        "x -= 1",
        "xs[i] = x",
        "t.a = -x",
        "del xs[0]",
        'require x > 0 else invalid_argument("bad", field="x", allowed=[1, 2])',
        "fail not_found()",
        'fail not_found(entity="x")',
        "return",
    )


def test_blocks_reindent_to_four_spaces() -> None:
    source = "fn f(xs: list[int]) -> int:\n  for i, x in enumerate(xs):\n      if x > 1:\n          pass\n      elif x:\n          break\n      else:\n          continue\n  return 0\n"
    assert assert_canonical(source) == (
        "fn f(xs: list[int]) -> int:\n"
        "    for i, x in enumerate(xs):\n"
        "        if x > 1:\n"
        "            pass\n"
        "        elif x:\n"
        "            break\n"
        "        else:\n"
        "            continue\n"
        "    return 0\n"
    )


def test_tabs_and_line_continuations() -> None:
    out = assert_canonical("fn f() -> int:\n\tlet x = 1 + \\\n\t\t2\n\treturn x\n")
    assert out == body("let x = 1 + 2", "return x")


def test_blank_lines_inside_blocks_collapse_to_one() -> None:
    out = assert_canonical(body("let a = 1", "", "", "let b = 2", "return a"))
    assert out == body("let a = 1", "", "let b = 2", "return a")
    # ...but never right after a block header.
    assert assert_canonical("fn f() -> int:\n\n    return 1\n") == body("return 1")


# --------------------------------------------------------------------------- declarations


def test_header_items_in_fixed_order_without_defaults() -> None:
    source = (
        "environment demo:\n"
        '    clock "2025-01-01T09:00:00"\n'
        "    seed 0\n"
        '    extends "base.envspec"\n'
        '    doc "One line."\n'
        '    domains "a" , "b"\n'
        "    archetype transactional_workspace\n"
        '    title "Demo"\n'
    )
    assert assert_canonical(source) == (
        "environment demo:\n"
        '    title "Demo"\n'
        "    archetype transactional_workspace\n"
        '    domains "a", "b"\n'
        '    doc "One line."\n'
        '    extends "base.envspec"\n'
    )


def test_header_keeps_non_default_seed_and_clock() -> None:
    out = assert_canonical('environment demo:\n    clock ""\n    seed 7\n')
    assert out == 'environment demo:\n    seed 7\n    clock ""\n'


def test_header_with_only_defaults_keeps_one_item() -> None:
    assert assert_canonical("environment demo:\n    seed 0\n") == "environment demo:\n    seed 0\n"


def test_header_comes_first_and_declarations_keep_source_order() -> None:
    source = "enum B:\n    x\n# about the header\nenvironment demo:\n    seed 1\nrecord A:\n    y: int\n"
    assert assert_canonical(source) == (
        "# about the header\nenvironment demo:\n    seed 1\n\nenum B:\n    x\n\nrecord A:\n    y: int\n"
    )


def test_enum_members_one_per_line() -> None:
    out = assert_canonical("enum Category:\n    hardware, software,network\n    other\n")
    assert out == "enum Category:\n    hardware\n    software\n    network\n    other\n"


def test_docs_short_plain_long_or_multiline_as_blocks() -> None:
    long_doc = "word " * 20 + "end"
    source = (
        f'record A:\n    """Short."""\n    x: int\n\nrecord B:\n    "{long_doc}"\n    x: int\n\n'
        'record C:\n    """\n        First line.\n          indented\n\n        Last.\n    """\n    x: int\n'
    )
    assert assert_canonical(source) == (
        'record A:\n    "Short."\n    x: int\n\n'
        f'record B:\n    """\n    {long_doc}\n    """\n    x: int\n\n'
        'record C:\n    """\n    First line.\n      indented\n\n    Last.\n    """\n    x: int\n'
    )


def test_docs_that_a_block_cannot_hold_stay_quoted() -> None:
    # Whitespace-only lines and edge whitespace would be lost to the parser's dedent.
    out = assert_canonical('record A:\n    "a\\n   \\nb"\n    x: int\n\nrecord B:\n    "  lead\\nx"\n    x: int\n')
    assert '"a\\n   \\nb"' in out and '"  lead\\nx"' in out


def test_block_strings_escape_quote_runs() -> None:
    out = assert_canonical('fn f() -> int:\n    python "s = \\"\\"\\"doc\\"\\"\\"\\nreturn 1"\n')
    assert out == 'fn f() -> int:\n    python """\n    s = \\"\\"\\"doc\\"\\"\\"\n    return 1\n    """\n'


def test_tool_header_params_constraints_effects() -> None:
    source = (
        "override tool create(title: str min_length 1 max_length 120, priority: int = 3 min 1 max 5,) -> Ticket:\n"
        '    side_effect "sends mail"\n'
        "    writes tickets, next_id\n"
        "    reads nothing\n"
        "    return make(title=title)\n"
    )
    assert assert_canonical(source) == (
        "override tool create(title: str min_length 1 max_length 120, priority: int = 3 min 1 max 5) -> Ticket:\n"
        "    reads nothing\n"
        "    writes tickets, next_id\n"
        '    side_effect "sends mail"\n'
        "    return make(title=title)\n"
    )


def test_escape_bodies() -> None:
    source = 'fn f() -> int:\n    reads a\n    python """\n        if a:\n            return 1\n        return 2\n    """\n\ntool g() -> str:\n    reads a\n    llm "Answer."\n'
    assert assert_canonical(source) == (
        'fn f() -> int:\n    reads a\n    python """\n    if a:\n        return 1\n    return 2\n    """\n\n'
        'tool g() -> str:\n    reads a\n    llm "Answer."\n'
    )


def test_data_declarations() -> None:
    source = (
        "state:\n    tickets: map[int,Ticket] = {}\n    user: optional[str]=None\n\n"
        'world:\n    users: map[str, str] = {"a": "b"}\n    big: json from "big.json"\n\n'
        'scenario s:\n    user = "alice"\n'
    )
    assert assert_canonical(source) == (
        "state:\n    tickets: map[int, Ticket] = {}\n    user: optional[str] = None\n\n"
        'world:\n    users: map[str, str] = {"a": "b"}\n    big: json from "big.json"\n\n'
        'scenario s:\n    user = "alice"\n'
    )


def test_state_fields_and_scenarios_from_files() -> None:
    source = (
        'state:\n    users: map[int,User]   from  "data/users.json"\n    n: int = 0\n\n'
        'scenario big  from "data/big.json"  # a comment\nscenario s:\n    n = 1\n    users =from"u.json"\n'
    )
    assert assert_canonical(source) == (
        'state:\n    users: map[int, User] from "data/users.json"\n    n: int = 0\n\n'
        'scenario big from "data/big.json"  # a comment\n\nscenario s:\n    n = 1\n    users = from "u.json"\n'
    )


def test_literals_written_over_lines_print_one_entry_per_line() -> None:
    source = 'scenario s:\n    t = {1: {"a": 1}, 2: [\n        1, 2,\n    ],\n    }\n    u = [1,\n         2]\n    v = {1: 2}\n    w = [\n    ]\n'
    assert assert_canonical(source) == (
        "scenario s:\n"
        "    t = {\n"
        '        1: {"a": 1},\n'
        "        2: [\n"
        "            1,\n"
        "            2\n"
        "        ]\n"
        "    }\n"
        "    u = [\n"
        "        1,\n"
        "        2\n"
        "    ]\n"
        "    v = {1: 2}\n"
        "    w = []\n"
    )


def test_tests_raises_and_expect() -> None:
    source = (
        "test t:\n    scenario s\n    let x = f(a=1,)\n    g(x=1)\n"
        '    g(x=2) raises invalid_state "already closed"\n    g(x=3) raises not_found\n'
        '    g(x=4) raises not_found ""\n    expect x.id==1\n'
    )
    assert assert_canonical(source) == (
        "test t:\n    scenario s\n    let x = f(a=1)\n    g(x=1)\n"
        '    g(x=2) raises invalid_state "already closed"\n    g(x=3) raises not_found\n'
        "    g(x=4) raises not_found\n    expect x.id == 1\n"
    )


def test_task_items_in_fixed_order_and_solution_blocks_merge() -> None:
    source = (
        'task fix:\n    verify a.done\n    solution:\n        f(x=1)\n    request "Fix it."\n'
        "    solution:\n        g()\n    scenario busy\n    verify b\n"
    )
    assert assert_canonical(source) == (
        'task fix:\n    scenario busy\n    request "Fix it."\n    solution:\n        f(x=1)\n        g()\n'
        "    verify a.done\n    verify b\n"
    )


def test_task_with_only_an_empty_request_keeps_it() -> None:
    assert assert_canonical('task t:\n    request ""\n') == 'task t:\n    request ""\n'


def test_describe_keeps_its_param_lines_and_an_empty_doc() -> None:
    """A `describe` block of nothing but an empty doc stays a block (`""`), and moving
    param lines is layout, not meaning (`param_lines`, `param_cols`)."""
    assert assert_canonical('describe tool t:\n  ""\n') == 'describe tool t:\n    ""\n'
    out = assert_canonical('describe tool t:\n  """a\n  b"""\n  param x "the x"\n')
    assert out == 'describe tool t:\n    """\n    a\n    b\n    """\n    param x "the x"\n'


def test_drop_and_rename() -> None:
    source = "drop  tool old_tool\nrename   tool create_entity as create_ticket\n"
    assert assert_canonical(source) == "drop tool old_tool\n\nrename tool create_entity as create_ticket\n"


# --------------------------------------------------------------------------- comments


COMMENTED = """\
# ¤1 file comment

# ¤2 second paragraph
environment demo:  # ¤3 on the header
    # ¤4 before title
    title "Demo"  # ¤5 on title
    seed 0  # ¤6 on an omitted item
    # ¤7 end of header

enum Color:  # ¤8
    red, green  # ¤9 after green
    # ¤10 before blue
    blue

record R:
    b: map[str, list[int]] = {
        "x": [1, 2],  # ¤11 entry
        # ¤12 before y
        "y": [3,
              4],
        # ¤13 after the last entry
    }  # ¤14 on the closer
    c: int = f(1,  # ¤15 inside a call
        # ¤16 full line inside a call
        2)

tool t() -> int:
    # ¤17 before the first statement
    if a:  # ¤18 on if
        x = 1
        # ¤19 end of if body
    # ¤20 before else
    else:
        for k in ks:
            continue
            # ¤21 end of for body
        # ¤22 end of else body
    # ¤23 end of tool body
    return f"{x} # ¤ not a comment"

  # ¤24 indented after the tool

task k:
    solution:
        # ¤25 first step
        f()  # ¤26
    verify x
# ¤27 end of file
"""


def test_comments_survive_in_place() -> None:
    out = assert_canonical(COMMENTED)
    assert (
        out
        == """\
# ¤1 file comment

# ¤2 second paragraph
environment demo:  # ¤3 on the header
    # ¤4 before title
    title "Demo"  # ¤5 on title  # ¤6 on an omitted item
    # ¤7 end of header

enum Color:  # ¤8
    red
    green  # ¤9 after green
    # ¤10 before blue
    blue

record R:
    b: map[str, list[int]] = {
        "x": [1, 2],  # ¤11 entry
        # ¤12 before y
        "y": [
            3,
            4
        ]
        # ¤13 after the last entry
    }  # ¤14 on the closer
    # ¤16 full line inside a call
    c: int = f(1, 2)  # ¤15 inside a call

tool t() -> int:
    # ¤17 before the first statement
    if a:  # ¤18 on if
        x = 1
        # ¤19 end of if body
    # ¤20 before else
    else:
        for k in ks:
            continue
            # ¤21 end of for body
        # ¤22 end of else body
    # ¤23 end of tool body
    return f"{x} # ¤ not a comment"

    # ¤24 indented after the tool

task k:
    solution:
        # ¤25 first step
        f()  # ¤26
    verify x

# ¤27 end of file
"""
    )


def test_comment_only_and_empty_files() -> None:
    assert fmt("") == ""
    assert fmt("\n\n") == ""
    assert fmt("# ¤1 a\n\n\n   # ¤2 b") == "# ¤1 a\n\n# ¤2 b\n"


def test_hash_inside_strings_is_not_a_comment() -> None:
    source = 'record R:\n    """Doc # not\n    a comment"""\n    x: str = "#no"  # ¤1 yes\n    y: str = f"{a}#no"\n'
    out = assert_canonical(source)
    assert out.count("#") == source.count("#")


def test_crlf_input() -> None:
    out = assert_canonical('# ¤1 c\r\nenvironment e:\r\n    title "t"  # ¤2\r\n')
    assert out == '# ¤1 c\nenvironment e:\n    title "t"  # ¤2\n'


# --------------------------------------------------------------------------- errors and API


def test_syntax_error_returns_parser_diagnostics() -> None:
    source = 'environment demo:\n    title "Demo"\n\nenum Color:\n    red green\n'
    result = format_source(source, PATH)
    assert result.text is None
    assert result.diagnostics == parse_source(source, PATH).diagnostics
    assert [d.code for d in result.diagnostics] == ["E1002"]


def test_format_module_without_source_prints_code_only() -> None:
    module = parse_source(COMMENTED, PATH).module
    assert module is not None
    out = format_module(module)
    assert "#" not in out.replace('"{x} # ¤ not a comment"', "")
    assert ir_of(out) == ir_of(COMMENTED)


def test_format_module_on_hand_built_ir() -> None:
    call = ir.Call(func=ir.Name(id="f"), args=[ir.Const(value=-1)])
    tool = ir.ToolDecl(
        name="t", params=[], returns=ir.TypeRef(name="int"), body=[ir.Return(value=ir.Attr(obj=call, name="x"))]
    )
    module = ir.Module(path=PATH, tools=[tool], header=ir.EnvHeader(name="demo", title="T"))
    assert format_module(module) == 'environment demo:\n    title "T"\n\ntool t() -> int:\n    return f(-1).x\n'


def test_nesting_at_the_parser_limits() -> None:
    depth = 90
    nested = (
        ["fn f() -> int:"] + ["    " * (i + 1) + "if a:" for i in range(depth)] + ["    " * (depth + 1) + "return 1"]
    )
    assert_canonical("\n".join(nested) + "\n")
    assert_canonical(body("return " + "-" * 110 + "1"))
    assert_canonical(body("return " + "(" * 95 + "1" + " + 1)" * 95))
    assert_canonical(body('return f"{' + "-" * 110 + '1}"'))


# --------------------------------------------------------------------------- the real spec


def test_ticketing_is_idempotent_and_meaning_preserving() -> None:
    source = TICKETING.read_text(encoding="utf-8")
    out = assert_canonical(source)
    assert out.count("#") == source.count("#")
    assert out.startswith("# Support ticketing")
    assert '    tickets = from "data/ticketing/help_desk_monday_tickets.json"\n' in out  # read from a file, as written
    prototype = (SPECS_DIR / "prototypes" / "transactional_workspace.envspec").read_text(encoding="utf-8")
    assert "    entities = {\n        1: {" in assert_canonical(prototype)  # a scenario's map stays one entity per line


SHIPPED = sorted(SPECS_DIR.rglob("*.envspec"))
"""Every shipped spec: specs/ and specs/prototypes/."""


@pytest.mark.parametrize("spec", SHIPPED, ids=[s.stem for s in SHIPPED])
def test_every_shipped_spec_is_fmt_canonical(spec: Path) -> None:
    """`envc fmt --check specs/` passes: the library reads in the one canonical layout."""
    source = spec.read_text(encoding="utf-8")
    assert format_source(source, str(spec)).text == source, f"run `envc fmt {spec}`"


# --------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(specs())
def test_generated_specs_round_trip(spec: str) -> None:
    assert_canonical(spec)


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_generated_expressions_round_trip(source: str) -> None:
    assert_canonical(body(f"return {source}"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_mutated_specs_never_raise(text: str) -> None:
    started = time.monotonic()
    parsed = parse_source(text, PATH)
    result = format_source(text, PATH)
    assert time.monotonic() - started < 10
    assert (result.text is None) == (parsed.module is None)
    if result.text is None:
        assert result.diagnostics
        return
    assert parsed.module is not None
    assert ir_of(result.text) == strip_positions(parsed.module)
    assert fmt(result.text) == result.text


def test_param_lines_follow_the_other_block_lines_and_keep_their_text() -> None:
    source = (
        "tool add(a: int, b: int = 1) -> int:\n"
        '    param b "The second \\"addend\\"."\n'
        "    writes nothing\n"
        '    param a "The first one."  # said once\n'
        "    return a + b\n"
    )
    out = assert_canonical(source)
    assert out.index("writes nothing") < out.index('param a "The first one."') < out.index('param b "The second')
    assert '\\"addend\\"' in out


TASK_WORDS = """environment desk:
    title "Desk"

values titles = ["VPN drops", "Printer jams"]  # trailing
values streets from "streets.json"
values counts = [
    1,  # one
    -2
]

# who asks
persona "I run the help desk."

describe tool add:
    "Add one."
    param title from titles  # the pool
    intent "open {title}"
    param who   "Who asks"   from person_name
    intent "log {{braces}} {title}"
    param budget from amount(50, 5000.5)

describe record Ticket:
    field title from titles
    refer title before "{}"
    noun "ticket"
"""


def test_fmt_prints_values_personas_and_describes_canonically() -> None:
    out = assert_canonical(TASK_WORDS)
    assert 'values titles = ["VPN drops", "Printer jams"]  # trailing\n' in out
    assert "values counts = [\n    1,  # one\n    -2\n]\n" in out
    assert "# who asks\npersona" in out
    tool_block = out[out.index("describe tool add:") : out.index("describe record")]
    assert tool_block.splitlines()[1:6] == [
        '    "Add one."',
        '    intent "open {title}"',
        '    intent "log {{braces}} {title}"',
        "    param title from titles  # the pool",
        '    param who "Who asks" from person_name',
    ]
    assert out.endswith(
        'describe record Ticket:\n    noun "ticket"\n    refer title before "{}"\n    field title from titles\n'
    )
