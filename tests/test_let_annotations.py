"""`let NAME: T = value` keeps its declared type in the generated code (issue 14).

The bug: `let acc: float = 0` was lowered to `acc = 0`, so mypy took `int` from the value
and refused `acc += x` for a float `x` (E6001, "report this"). The class of it: an
annotation dropped where the value's own type is not the declared one, so mypy infers the
narrower type and refuses what the spec's type allows later. `SPEC` has one tool per
member of the class (an int into float, an int expression into float, an empty list or
map into list[T] / map[K, V], None and a plain value into optional[T], a record literal
and a constructor into a record or optional record, a value into json, a narrowed local
into its optional type, an enum member into an optional enum); each then does what only
the declared type allows. The package must pass mypy --strict and its tests; with the
fix switched off, mypy refuses the tools the fix is for (so the spec does test it).
"""

from __future__ import annotations

import pytest

from compiler import ir
from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.lower import lower
from compiler.lower.statements import StatementEmitter

SPEC_PATH = "specs/annotations.envspec"

SPEC = r'''
environment annotations:
    title "Declared types of locals"

enum Status:
    open, done

record Item:
    """An item."""
    id: int
    note: optional[str] = None

state:
    items: map[int, Item] = {1: {"id": 1}}
    status: Status = Status.open

tool int_literal_into_float(xs: list[float]) -> float:
    let acc: float = 0
    for x in xs:
        acc += x
    return acc

tool int_expression_into_float(n: int) -> float:
    let half: float = n
    half = half / 2
    let size: float = len(items)
    size += 0.5
    return half + size

tool empty_list_into_list(x: float) -> int:
    let ys: list[float] = []
    ys.append(x)
    let seen: set[str] = []
    seen.add("a")
    return len(ys) + len(seen)

tool empty_map_into_map(k: str) -> int:
    let m: map[str, float] = {}
    m[k] = 1.5
    return len(m)

tool none_into_optional(name: str) -> str:
    let who: optional[str] = None
    if len(name) > 0:
        who = name
    return who if who is not None else "-"

tool value_into_optional(name: str) -> str:
    let who: optional[str] = name
    if name == "nobody":
        who = None
    let found: optional[Item] = items[1]
    if name == "none":
        found = None
    let shown = who if who is not None else "-"
    let note = found.note if found is not None else None
    if note is not None:
        shown += note
    return shown

tool record_literal_into_record(id: int) -> int:
    let rec: Item = {"id": id}
    rec.note = "made"
    let maybe: optional[Item] = Item(id=id)
    maybe = None
    return rec.id + (0 if maybe is None else 1)

tool value_into_json(n: int) -> json:
    let j: json = n
    j = "text"
    let k: json = items
    k = [1, 2]
    return [j, k]

tool narrowed_into_optional(name: optional[str] = None) -> str:
    require name is not None else invalid_argument("name", field="name")
    let again: optional[str] = name
    again = None
    return name + ("" if again is None else again)

tool enum_into_optional() -> bool:
    let s: optional[Status] = status
    s = None
    return s is None
'''

FIXED = {
    "int_literal_into_float": "acc: float = 0",
    "int_expression_into_float": "half: float = n",
    "empty_list_into_list": "ys: list[float] = []",
    "empty_map_into_map": "m: dict[str, float] = {}",
    "none_into_optional": "who: str | None = None",
    "value_into_optional": "who: str | None = name",
    "record_literal_into_record": "rec: Item = {",
    "value_into_json": "j: Any = n",
    "narrowed_into_optional": "again: str | None = name",
    "enum_into_optional": "s: Status | None = state[",
}
"""The annotation each tool needs, as the lowering writes it."""
NEEDS_THE_FIX = {
    "int_literal_into_float",
    "int_expression_into_float",
    "value_into_optional",
    "value_into_json",
    "narrowed_into_optional",
}
"""The tools whose annotation the fix of issue 14 added (the others had theirs already)."""


@pytest.fixture(scope="module")
def environment() -> ir.Environment:
    result = analyse_source(SPEC, SPEC_PATH)
    assert result.environment is not None and result.diagnostics == [], result.diagnostics
    return result.environment


def method(files: dict[str, str], name: str) -> str:
    text = files["environment.py"]
    start = text.index(f"    def {name}(")
    end = text.find("\n    def ", start + 1)
    return text[start:end]


def test_each_let_keeps_its_declared_type(environment: ir.Environment) -> None:
    files = lower(environment, SPEC_PATH)
    for tool, annotation in FIXED.items():
        assert annotation in method(files, tool), tool


def test_the_package_passes_mypy_strict_and_its_tests(environment: ir.Environment) -> None:
    files = lower(environment, SPEC_PATH)
    result = check_packages([Package(env=environment, name="annotations", files=files)], dynamic=True)
    outcome = result["annotations"]
    assert outcome.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in outcome.findings]
    assert outcome.static_ok and outcome.dynamic_ok and outcome.tests_failed == 0


def test_without_the_fix_mypy_refuses_those_tools(environment: ir.Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    """The spec covers the bug: with annotations written as before issue 14, mypy fails on
    exactly the tools the fix is for."""
    monkeypatch.setattr(StatementEmitter, "_declared_differs", lambda self, declared, value: False)
    files = lower(environment, SPEC_PATH)
    result = check_packages([Package(env=environment, name="annotations", files=files)], dynamic=False)
    findings = [f for f in result["annotations"].findings if f.tool == "mypy"]
    text = files["environment.py"].splitlines()
    failing: set[str] = set()
    for finding in findings:
        above = [line for line in text[: finding.line] if line.startswith("    def ")]
        failing.add(above[-1].split("def ", 1)[1].split("(", 1)[0])
    assert failing == NEEDS_THE_FIX, [f"{f.line} {f.message}" for f in findings]


def test_a_let_of_the_values_own_type_stays_unannotated(environment: ir.Environment) -> None:
    text = 'environment p:\n    title "p"\n\ntool t(n: int, s: str) -> int:\n    let a: int = n\n    let b: str = s.lower()\n    let c = n + 1\n    return a + c + len(b)\n'
    result = analyse_source(text, "p.envspec")
    assert result.environment is not None
    body = method(lower(result.environment, "p.envspec"), "t")
    assert "a = n\n" in body and "b = s.lower()\n" in body and "c = n + 1\n" in body
