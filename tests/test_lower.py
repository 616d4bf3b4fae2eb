"""Lowering (`compiler/lower/`): what each construct of the body language becomes.

One spec (`CONSTRUCTS`) holds a tool per construct; it is lowered once, and each test
reads the method it is about from the generated `environment.py`. The same package then
goes through ruff, mypy --strict, envc's AST rules and its own generated tests. Small
expression cases are lowered on their own with the Emitter (no formatting involved).
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
import textwrap
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from compiler import ir
from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package, write_tree
from compiler.lower import lower
from compiler.lower.pycode import Emitter, Scope

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATH = str(ROOT / "specs" / "constructs.envspec")  # never written: the text is analysed as if it were there

CONSTRUCTS = r'''
environment constructs:
    title "Every construct"
    doc "Each tool exercises one statement or expression form of the body language."

enum Status:
    open, done

record Item:
    """An item; every field but id and title has a default."""
    id: int
    title: str
    status: Status = Status.open
    tags: list[str] = []
    note: optional[str] = None
    weight: float = 1.5

state:
    items: map[int, Item] = {}
    log: list[str] = []
    counts: map[str, int] = {"a": 1, "b": 0}
    visits: int = 0
    last: optional[str] = None

tool lets() -> int:
    """Locals with and without annotations."""
    let n = 1
    let names: list[str] = []
    let table = {"a": 1}
    let status = Status.open
    let maybe: optional[str] = None
    let item = Item(id=1, title="t")
    names.append("x")
    if status == Status.open and maybe is None:
        n += 1
    return n + len(names) + len(table) + len(item.tags)

tool requires(amount: int, who: optional[str] = None) -> int:
    """Each require is an if and a raise."""
    require amount > 0 else invalid_argument("amount must be positive", field="amount", current=amount)
    require who != None else invalid_argument("who is missing", field="who")
    require not (amount > 5 and amount < 7) else conflict("six is taken", field="amount")
    require amount in [1, 2, 3, 10] else invalid_argument("not allowed", field="amount", allowed=[1, 2, 3, 10])
    return amount

tool none_checks(a: optional[str] = None, b: optional[str] = None) -> bool:
    """Comparisons with None."""
    return a == None and b != None

tool walk_counts() -> list[str]:
    """Map iteration with one and with two targets."""
    let out: list[str] = []
    for name, count in counts:
        out.append(f"{name}={count}")
    for name in counts:
        out.append(name.upper())
    let positive = {k: v for k, v in counts if v > 0}
    return out + keys(positive)

tool describe(item_id: int) -> str:
    """f-strings with quotes and braces inside."""
    require item_id in items else not_found(f"item {item_id} is missing", entity="item", field="item_id", allowed=sorted(keys(items)))
    let item = items[item_id]
    return f"item \"{item.title}\" is {item.status} {{ok}}"

tool add_item(title: str min_length 1, tags: list[str] = [], extra: map[str, int] = {}) -> Item:
    """Mutations of state, journaled; of locals, not."""
    let item = Item(id=len(items) + 1, title=title, tags=tags)
    items[item.id] = item
    log.append(f"added {item.id}")
    visits += 1 + len(extra)
    last = title
    let local: list[str] = []
    local.append(title)
    return item

tool finish(item_id: int) -> Item:
    """Assign a field of a record in state, then drop a count."""
    require item_id in items else not_found(f"item {item_id} is missing", entity="item", field="item_id")
    let item = items[item_id]
    item.status = Status.done
    del counts["a"]
    return item

tool loops(limit: int = 3) -> int:
    """elif / else, break / continue, ternary, fail, slices, negatives, lambda keys."""
    let seen = 0
    for n in range(10):
        if n >= limit:
            break
        elif n % 2 == 0:
            continue
        else:
            seen += 1
    let ordered = sorted(values(items), key=lambda i: -i.id)
    let head = ordered[:2]
    if len(head) > 5:
        fail limit_exceeded("too many", field="limit")
    return seen if seen > 0 else -1

test lets_and_requires:
    expect lets() == 4
    expect requires(amount=2, who="me") == 2
    requires(amount=0, who="me") raises invalid_argument "positive"
    requires(amount=2) raises invalid_argument "who is missing"
    requires(amount=6, who="me") raises conflict "six"
    requires(amount=4, who="me") raises invalid_argument "not allowed"
    expect none_checks(b="x")
    expect not none_checks(a="x", b="y")

test state_changes:
    let item = add_item(title="Pen", tags=["office"])
    expect item.status == Status.open
    expect item.weight == 1.5
    expect item.note is None
    expect describe(item_id=1) == "item \"Pen\" is open {ok}"
    expect visits == 1
    expect last == "Pen"
    expect log == ["added 1"]
    finish(item_id=1)
    expect items[1].status == Status.done
    expect walk_counts() == ["b=0", "B"]
    finish(item_id=2) raises not_found "item 2"
    expect loops(limit=4) == 2
    describe(item_id=9) raises not_found "is missing"
'''


def analyse(text: str) -> ir.Environment:
    analysis = analyse_source(text, SPEC_PATH)
    assert analysis.environment is not None, [f"{d.line}:{d.col} {d.code} {d.message}" for d in analysis.diagnostics]
    return analysis.environment


@pytest.fixture(scope="module")
def env() -> ir.Environment:
    return analyse(CONSTRUCTS)


@pytest.fixture(scope="module")
def files(env: ir.Environment) -> dict[str, str]:
    return lower(env, "specs/constructs.envspec")


@pytest.fixture(scope="module")
def methods(files: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Each method of `Environment`: (signature, body), dedented; the docstring left out."""
    text = files["environment.py"]
    tree = ast.parse(text)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment")
    lines = text.splitlines()
    found = {}
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
        signature = " ".join(line.strip() for line in lines[node.lineno - 1 : node.body[0].lineno - 1])
        found[node.name] = (signature, textwrap.dedent("\n".join(lines[body[0].lineno - 1 : node.end_lineno])))
    return found


def body_lines(methods: dict[str, tuple[str, str]], name: str) -> list[str]:
    return [line.strip() for line in methods[name][1].splitlines()]


def body_tree(methods: dict[str, tuple[str, str]], name: str) -> ast.Module:
    return ast.parse(methods[name][1])


def all_bodies(methods: dict[str, tuple[str, str]]) -> str:
    return "\n".join(body for _, body in methods.values())


def in_order(lines: list[str], expected: list[str]) -> None:
    """Every expected line appears, in this order (other lines may sit between)."""
    position = 0
    for wanted in expected:
        assert wanted in lines[position:], f"{wanted!r} missing after line {position}:\n" + "\n".join(lines)
        position = lines.index(wanted, position) + 1


# --------------------------------------------------------------------------- statements


def test_let_annotates_only_where_mypy_needs_it(methods: dict[str, tuple[str, str]]) -> None:
    lines = body_lines(methods, "lets")
    in_order(
        lines,
        [
            "n = 1",
            "names: list[str] = []",
            'table: dict[str, int] = {"a": 1}',
            'status: Status = "open"',
            "maybe: str | None = None",
            "item: Item = {",
            'names.append("x")',
            'if status == "open" and maybe is None:',
            "n += 1",
            'return n + len(names) + len(table) + len(item["tags"])',
        ],
    )


def test_require_becomes_a_negated_if_and_a_raise(methods: dict[str, tuple[str, str]]) -> None:
    assert methods["requires"][0] == "def requires(self, amount: int, who: str | None = None) -> int:"
    lines = body_lines(methods, "requires")
    in_order(
        lines,
        [
            "if amount <= 0:",
            "raise DomainError(",
            "if who is None:",
            'raise DomainError("invalid_argument", "who is missing", field="who")',
            "if amount > 5 and amount < 7:",
            'raise DomainError("conflict", "six is taken", field="amount")',
            "if amount not in [1, 2, 3, 10]:",
            "return amount",
        ],
    )
    first = body_tree(methods, "requires").body[0]
    assert isinstance(first, ast.If) and isinstance(first.body[0], ast.Raise)
    raised = first.body[0].exc
    assert isinstance(raised, ast.Call)
    assert [ast.literal_eval(a) for a in raised.args] == ["invalid_argument", "amount must be positive"]
    assert [k.arg for k in raised.keywords] == ["field", "current"]
    assert not any(line.startswith("if not ") for line in lines), "negations are folded into the comparison"


def test_comparisons_with_none_become_is(methods: dict[str, tuple[str, str]]) -> None:
    assert body_lines(methods, "none_checks") == ["return a is None and b is not None"]
    assert "== None" not in all_bodies(methods) and "!= None" not in all_bodies(methods)


def test_map_iteration_with_two_targets_uses_items(methods: dict[str, tuple[str, str]]) -> None:
    in_order(
        body_lines(methods, "walk_counts"),
        [
            "state = self._state",
            "out: list[str] = []",
            'for name, count in self._count_each(state["counts"].items()):',
            'out.append(f"{name}={count}")',
            'for name in self._count_each(state["counts"]):',
            "positive: dict[str, int] = {",
            'k: v for k, v in self._count_each(state["counts"].items()) if v > 0',
            "}",
            "return out + list(positive)",
        ],
    )


def test_fstrings_with_quotes_and_braces(methods: dict[str, tuple[str, str]]) -> None:
    lines = body_lines(methods, "describe")
    assert lines[-1] == """return f'item "{item["title"]}" is {item["status"]} {{ok}}'"""
    assert 'f"item {item_id} is missing",' in lines
    value = ast.parse(lines[-1].removeprefix("return ")).body[0]
    assert isinstance(value, ast.Expr) and isinstance(value.value, ast.JoinedStr)


def test_record_constructor_fills_every_default_in_declaration_order(methods: dict[str, tuple[str, str]]) -> None:
    tree = body_tree(methods, "lets")
    literal = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "item"
    )
    assert isinstance(literal, ast.Dict)
    assert [ast.literal_eval(k) for k in literal.keys if k is not None] == [
        "id",
        "title",
        "status",
        "tags",
        "note",
        "weight",
    ]
    assert [ast.literal_eval(v) for v in literal.values] == [1, "t", "open", [], None, 1.5]


def test_enum_members_are_their_strings(methods: dict[str, tuple[str, str]], files: dict[str, str]) -> None:
    assert 'Status = Literal["open", "done"]' in files["environment.py"]
    assert 'item["status"] = "done"' in body_lines(methods, "finish")
    assert "Status." not in all_bodies(methods)


def test_state_mutations_are_journaled_and_local_ones_are_not(methods: dict[str, tuple[str, str]]) -> None:
    lines = body_lines(methods, "add_item")
    in_order(
        lines,
        [
            "undo_log = self._undo",  # bound once: the call stays on one journal
            'undo_log.tool = "add_item"',
            "try:",
            'undo_log.save(state["items"], item["id"])',
            'state["items"][item["id"]] = item',
            'undo_log.save_length(state["log"])',
            'state["log"].append(f"added {item[\'id\']}")',
            'undo_log.save(state, "visits")',
            'state["visits"] += 1 + len(extra)',
            'undo_log.save(state, "last")',
            'state["last"] = title',
            "local: list[str] = []",
            "local.append(title)",
            "return item",
            "except BaseException:",  # a failure anywhere undoes the call
            "undo_log.rollback()",
            "raise",
            "finally:",
            "undo_log.finish()",
        ],
    )
    assert not any("undo_log." in line and "local" in line for line in lines)
    in_order(
        body_lines(methods, "finish"),
        [
            'undo_log.save(item, "status")',
            'item["status"] = "done"',
            'undo_log.save_map(state["counts"])',  # the whole map: a rollback keeps the key order
            'del state["counts"]["a"]',
        ],
    )


@pytest.mark.parametrize("tool", ["lets", "requires", "none_checks", "walk_counts", "describe", "loops"])
def test_read_tools_have_no_journal(tool: str, methods: dict[str, tuple[str, str]], env: ir.Environment) -> None:
    assert next(t for t in env.tools if t.name == tool).writes == []
    assert "self._undo" not in methods[tool][1] and "undo_log" not in methods[tool][1]


STATE_CHANGE = re.compile(
    r"^(del state\[|state\[.*\] [+-]?= |item\[\"\w+\"\] = |state\[.*\]\.(append|extend|insert|pop|remove|clear)\()"
)
"""Lines of the constructs tools that change state (`item` is always a record in state)."""


def test_every_state_change_is_preceded_by_its_journal_entry(
    methods: dict[str, tuple[str, str]], env: ir.Environment
) -> None:
    changes = 0
    for tool in (t for t in env.tools if t.writes):
        lines = body_lines(methods, tool.name)
        for index, line in enumerate(lines):
            if STATE_CHANGE.match(line):
                changes += 1
                assert lines[index - 1].startswith("undo_log."), f"{tool.name}: {line!r} is not journaled"
    assert changes == 6


def test_container_defaults_use_a_none_sentinel(methods: dict[str, tuple[str, str]], files: dict[str, str]) -> None:
    signature = methods["add_item"][0]
    assert "tags: list[str] | None = None" in signature
    assert "extra: dict[str, int] | None = None" in signature
    assert "= []" not in signature and "= {}" not in signature
    lines = body_lines(methods, "add_item")
    assert lines[:4] == ["if tags is None:", "tags = []", "if extra is None:", "extra = {}"]
    schema = next(t for t in json.loads(files["tools.json"])["tools"] if t["name"] == "add_item")
    assert schema["parameters"]["properties"]["tags"]["default"] == []
    assert schema["parameters"]["properties"]["extra"]["default"] == {}
    assert schema["required"] == ["title"]


def test_control_flow(methods: dict[str, tuple[str, str]]) -> None:
    in_order(
        body_lines(methods, "loops"),
        [
            "for n in range(10):",  # a range of literals is not counted: the spec bounds it
            "if n >= limit:",
            "break",
            "elif n % 2 == 0:",
            "continue",
            "else:",
            "seen += 1",
            'ordered = sorted(state["items"].values(), key=lambda i: -i["id"])',
            "head = ordered[:2]",
            'raise DomainError("limit_exceeded", "too many", field="limit")',
            "return seen if seen > 0 else -1",
        ],
    )


# --------------------------------------------------------------------------- the package as a whole


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The lowered package, imported under a name of its own."""
    root = tmp_path_factory.mktemp("lowered")
    write_tree(root / "constructs_pkg", files)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("constructs_pkg")
    finally:
        sys.path.remove(str(root))


def test_container_defaults_are_not_shared_between_calls(package: ModuleType) -> None:
    env = package.Environment()
    first = env.add_item("Pen")
    first["tags"].append("leaked")
    second = env.add_item("Ink")
    assert second["tags"] == []
    assert env.call("add_item", {"title": "Pad"})["tags"] == []
    assert package.environment.TOOL_SPECS["add_item"].writes == frozenset({"items", "log", "visits", "last"})


def test_lowered_tools_behave(package: ModuleType) -> None:
    env = package.Environment()
    assert env.call("requires", {"amount": 3, "who": "me"}) == 3
    refused = env.call("requires", {"amount": 6, "who": "me"})["error"]
    assert (refused["kind"], refused["field"]) == ("conflict", "amount")
    env.call("add_item", {"title": "Pen"})
    assert env.call("describe", {"item_id": 1}) == 'item "Pen" is open {ok}'
    before = env.state_json()
    assert env.call("finish", {"item_id": 7})["error"]["kind"] == "not_found"
    assert env.state_json() == before


def test_every_construct_passes_ruff_mypy_strict_and_its_tests(env: ir.Environment, files: dict[str, str]) -> None:
    result = check_packages([Package(env=env, name="constructs", files=files)], dynamic=True)["constructs"]
    assert result.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in result.findings]
    assert result.static_ok and result.dynamic_ok
    assert result.tests_passed >= 30 and result.tests_failed == 0


# --------------------------------------------------------------------------- expressions, one at a time


EXPRESSIONS = [
    ("(a + b) * c", "(a + b) * c"),
    ("a - (b - c)", "a - (b - c)"),
    ("a - b - c", "a - b - c"),
    ("-(a + b)", "-(a + b)"),
    ("a // b % c", "a // b % c"),
    ("a * -b", "a * -b"),
    ("max(a, b) if a > b else -1", "max(a, b) if a > b else -1"),
    ("len([x for x in range(a) if x > b])", "len([x for x in self._count_each(range(a)) if x > b])"),
    ("sum(values(m))", "sum(m.values())"),
    ("len(keys(m))", "len(list(m))"),
]


def lowered_return(expression: str, returns: str = "int") -> str:
    spec = (
        'environment expr_probe:\n    title "Probe"\n\n'
        f"tool probe(a: int, b: int, c: int, flag: bool, m: map[str, int] = {{}}) -> {returns}:\n"
        f"    return {expression}\n"
    )
    env = analyse(spec)
    statement = env.tools[0].body[0]
    assert isinstance(statement, ir.Return) and statement.value is not None
    return Emitter(env, Scope(kind="tool")).expr(statement.value)


@pytest.mark.parametrize(("source", "python"), EXPRESSIONS, ids=[s for s, _ in EXPRESSIONS])
def test_expression_lowering(source: str, python: str) -> None:
    assert lowered_return(source) == python


@pytest.mark.parametrize(
    ("source", "python"),
    [
        ("not (flag or a > b)", "not (flag or a > b)"),
        ("not flag and a >= b", "not flag and a >= b"),
        ("flag or a > b and c > b", "flag or a > b and c > b"),
        ("flag or a > b and b > c", "flag or a > b > c"),  # one chained comparison (ruff's PLR1716)
        ("a < b and b <= c and c < 9", "a < b <= c < 9"),
        ("a < b and b > c", "a < b and b > c"),  # not one direction: no chain
        ("(flag or a > b) and b > c", "(flag or a > b) and b > c"),
        ('"x" in keys(m)', '"x" in m'),
    ],
)
def test_boolean_lowering(source: str, python: str) -> None:
    assert lowered_return(source, "bool") == python


def test_lowered_expressions_are_python() -> None:
    """Every expression case parses, and means what it says on sample values."""
    values: dict[str, Any] = {"a": 7, "b": 3, "c": 2, "flag": False, "m": {"x": 1, "y": 2}}
    values["self"] = types.SimpleNamespace(_count_each=lambda items: items)  # loops count their steps
    for source, python in EXPRESSIONS:
        expected = eval(source.replace("values(m)", "m.values()").replace("keys(m)", "list(m)"), dict(values))
        assert eval(python, dict(values)) == expected, source
