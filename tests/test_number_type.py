"""`number` (issue 14): an int stays an int and a float a float, with Python's arithmetic.

Type rules (int and float widen to number; number op int/number is number, `/` float,
anything with a float a float; a number does not narrow to int or float by itself),
lowering (tools.json says "number", `call` checks ("number",) and keeps the value as
given), the generated behaviour, and a differential test: the generated code's operators
against Python's own on 120,000 seeded random int/float operands.
"""

from __future__ import annotations

import json
import math
import operator
import random
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lowered import environment_module, lowered_files

from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.diagnostics import Diagnostic

SPEC = Path(__file__).resolve().parent / "fixtures" / "numbers" / "number_ops.envspec"
HEADER = 'environment number_rules:\n    title "Numbers"\n\n'


def errors(body: str) -> list[Diagnostic]:
    return [d for d in analyse_source(HEADER + body, "n.envspec").diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def module(files: dict[str, str]) -> types.ModuleType:
    return environment_module(files["environment.py"], "number_ops_environment")


# --------------------------------------------------------------------------- type rules


@pytest.mark.parametrize(
    ("returns", "expr"),
    [
        ("number", "a + i"),
        ("number", "i - a"),
        ("number", "a * a"),
        ("number", "a // i"),
        ("number", "a % i"),
        ("number", "-a"),
        ("number", "round(a, 2)"),
        ("number", "max(a, i)"),
        ("number", "i"),
        ("number", "f"),
        ("float", "a / i"),
        ("float", "a + f"),
        ("float", "float(a)"),
        ("int", "int(a)"),
        ("int", "round(a)"),
        ("bool", "a < f and i <= a and a == 2"),
        ("str", 'f"{a} {a:.2f} {a:,}"'),
    ],
)
def test_number_expressions_type(returns: str, expr: str) -> None:
    assert not errors(f"tool t(a: number, i: int, f: float) -> {returns}:\n    return {expr}\n")


@pytest.mark.parametrize(("returns", "expr"), [("int", "a + i"), ("float", "a"), ("int", "a * 2")])
def test_a_number_does_not_narrow_by_itself(returns: str, expr: str) -> None:
    [found] = errors(f"tool t(a: number, i: int) -> {returns}:\n    return {expr}\n")
    assert found.code == "E3001" and f"`{returns}(...)`" in found.hint


def test_format_specs_for_ints_only_do_not_fit_a_number() -> None:
    [found] = errors('tool t(a: number) -> str:\n    return f"{a:x}"\n')
    assert found.code == "E3001"


def test_a_number_is_no_map_key() -> None:
    assert [d.code for d in errors("state:\n    m: map[number, int] = {}\n")] == ["E3003"]


def test_augmented_assignment_keeps_the_annotation() -> None:
    assert not errors(
        "tool t(xs: list[float]) -> number:\n    let acc: number = 0\n    for x in xs:\n        acc += x\n    return acc\n"
    )
    assert [d.code for d in errors("tool t(a: number) -> int:\n    let n = 0\n    n += a\n    return n\n")] == ["E3004"]


# --------------------------------------------------------------------------- lowering


def test_tools_json_says_number_and_keeps_int_defaults(files: dict[str, str]) -> None:
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    assert tools["arith"]["parameters"]["properties"]["a"] == {"type": "number"}
    assert tools["add"]["parameters"]["properties"]["amount"] == {"type": "number", "default": 1}
    assert '"default": 1.0' not in files["tools.json"]


def test_the_python_checks_number_and_annotates_float(files: dict[str, str]) -> None:
    source = files["environment.py"]
    assert 'Param("a", ("number",), True)' in source
    assert "def arith(self, a: float, b: float)" in source  # PEP 484: float takes an int too
    assert "acc: float = 0\n" in source  # the annotation survives lowering
    assert '"total": 0,' in source  # an int default stays an int


def test_full_qc_passes(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="number_ops", files=files)], dynamic=True)
    outcome = checked["number_ops"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


# --------------------------------------------------------------------------- generated behaviour


def test_values_are_kept_as_given(module: types.ModuleType) -> None:
    env = module.Environment()
    assert env.call("add", {"amount": 500}) == 500 and type(env.state()["total"]) is int
    assert json.dumps(env.call("add", {"amount": 20.5})) == "520.5"
    assert env.call("sum_all", {"xs": [1, 2, 3]}) == 6 and type(env.call("sum_all", {"xs": [1, 2]})) is int
    assert env.call("sum_all", {"xs": [1, 2.0]}) == 3.0 and type(env.call("sum_all", {"xs": [1, 2.0]})) is float
    assert env.state()["amounts"] == [500, 20.5]


def test_as_number_gives_json_numbers_as_given(module: types.ModuleType) -> None:
    env = module.Environment()
    three = env.call("from_json", {"value": 3})
    assert three == {"n": 3, "text": "3", "twice": 6, "half": 1.5} and type(three["n"]) is int
    assert type(three["twice"]) is int
    assert env.call("from_json", {"value": 2.5}) == {"n": 2.5, "text": "2.5", "twice": 5.0, "half": 1.25}
    big = 2**62 + 1  # as a float it would be 2**62
    assert env.call("from_json", {"value": big})["n"] == big
    for other in (True, "3", None, [3], {"n": 3}):
        assert env.call("from_json", {"value": other}) == {"n": None}


def test_as_number_is_typed_number() -> None:
    assert not errors("tool t(j: json) -> optional[number]:\n    return as_number(j)\n")
    [found] = errors("tool t(j: json) -> optional[float]:\n    return as_number(j)\n")
    assert found.code == "E3001"


@pytest.mark.parametrize("bad", [True, False, "1", None, [1], float("nan"), float("inf")])
def test_non_numbers_are_refused_and_change_nothing(module: types.ModuleType, bad: Any) -> None:
    env = module.Environment()
    before = env.state()
    error = env.call("add", {"amount": bad})["error"]
    assert error["kind"] == "invalid_argument" and error["field"] == "amount"
    assert env.state() == before


def test_scenarios_keep_numbers(module: types.ModuleType) -> None:
    assert module.Environment("halfway").state()["total"] == 2.5
    assert module.Environment({"total": 7}).state()["total"] == 7
    assert type(module.Environment({"total": 7}).state()["total"]) is int


# --------------------------------------------------------------------------- differential

OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "neg": lambda a, b: -a,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "round": lambda a, b: round(a, 1),
    "abs": lambda a, b: abs(a),
    "max": max,
    "text": lambda a, b: str(a),
}


def operand(rng: random.Random) -> int | float:
    """Ints and floats of every size the arithmetic treats differently."""
    pick = rng.randrange(6)
    if pick == 0:
        return rng.randint(-5, 5)
    if pick == 1:
        return rng.randint(-(10**12), 10**12)
    if pick == 2:
        return float(rng.randint(-100, 100))  # a float with an integral value stays a float
    if pick == 3:
        return rng.uniform(-1000.0, 1000.0)
    if pick == 4:
        return rng.choice([0.5, -0.5, 1e-300, 1e300, -2.5, 3])
    return round(rng.uniform(-50, 50), 2)


def expected(a: int | float, b: int | float) -> dict[str, Any] | None:
    """Python's own results; None when Python raises (the tool must then fail cleanly)."""
    if b == 0:
        return None
    try:
        return {name: op(a, b) for name, op in OPERATORS.items()}
    except OverflowError:
        return None


def same(got: Any, want: Any) -> bool:
    if type(got) is not type(want):
        return False
    if isinstance(want, float) and math.isnan(want):
        return math.isnan(got)
    return bool(got == want)


def test_the_generated_arithmetic_is_pythons(module: types.ModuleType) -> None:
    rng = random.Random(14)
    env = module.Environment()
    compared = 0
    for _ in range(60_000):
        a, b = operand(rng), operand(rng)
        want = expected(a, b)
        got = env.call("arith", {"a": a, "b": b})
        if want is None:
            assert "error" in got, (a, b, got)
            continue
        wrong = {k: (got[k], v) for k, v in want.items() if not same(got[k], v)}
        assert not wrong, (a, b, wrong)
        compared += 1
    for _ in range(60_000):
        a, i, f = operand(rng), rng.randint(-1000, 1000), rng.uniform(-1e6, 1e6)
        got = env.call("mixed", {"a": a, "i": i, "f": f})
        want = {"ai": a + i, "ia": i * a, "af": a + f, "fa": f - a, "sq": a * a, "gt": a > f, "ge": i >= a}
        wrong = {k: (got[k], v) for k, v in want.items() if not same(got[k], v)}
        assert not wrong, (a, i, f, wrong)
        compared += 1
    assert compared >= 100_000
