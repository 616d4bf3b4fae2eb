"""Loops added for ports (issue 24): `zip` over two or more lists, gone over by a `for`
or a comprehension (the language has no tuples), and the bounded `while`. `SPEC` is
lowered once and goes through ruff, mypy --strict, envc's AST rules and its generated
tests; its tools are then run against Python's own `zip` and `while` on random inputs,
and their effects checked: a write through a zipped list's item is a write of that list's
field only; a `while` past its bound is a `limit_exceeded` that names the loop and leaves
state as it was; its rounds count against the call's time limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lowered import imported_package

from compiler.analyse import analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.lower import lower

SPEC = '''
environment loops_added:
    title "Loops added"

state:
    rows: list[list[int]] = [[1], [2], [3]]
    marks: list[int] = [10, 20, 30]
    labels: list[str] = ["a", "b"]

tool pairs(names: list[str], counts: list[int]) -> list[str]:
    let out: list[str] = []
    for name, count in zip(names, counts):
        out.append(f"{name}={count}")
    return out

tool weighted(xs: list[int], ys: list[int], zs: list[int]) -> int:
    let total = 0
    for x, y, z in zip(xs, ys, zs):
        total += x * y - z
    return total

tool differences(xs: list[int], ys: list[int]) -> list[int]:
    return [b - a for a, b in zip(xs, ys)]

tool keyed(xs: list[int], ys: list[int]) -> map[str, int]:
    return {str(a): b for a, b in zip(xs, ys) if a <= b}

tool stamp_rows(fail_after: bool) -> int:
    """Appends each mark to its row through the zip's loop variable: a write of `rows`."""
    for row, mark in zip(rows, marks):
        row.append(mark)
    require not fail_after else invalid_state("refused after the writes")
    return len(rows)

tool read_labels() -> list[str]:
    return [f"{label}{mark}" for label, mark in zip(labels, marks)]

fn collatz(n: int, bound: int) -> int:
    let x = n
    let steps = 0
    while x != 1 max 500:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
        if steps >= bound:
            break
    return steps

tool collatz_steps(n: int min 1, bound: int) -> int:
    return collatz(n, bound)

tool drain(until: int) -> int:
    """Pops marks until the last is `until`: a write of `marks` in the loop, refused (and
    undone) past the default bound or when `until` is negative."""
    while len(marks) > 0 and marks[-1] != until:
        marks.pop()
    require until >= 0 else invalid_argument("until is negative", field="until")
    return len(marks)

tool grow_marks(rounds: int) -> int:
    """Appends to `marks` `rounds` times; 10,000 rounds is the default bound."""
    let n = 0
    while n < rounds:
        marks.append(n)
        n += 1
    return len(marks)

tool alias_in_while(k: int) -> int:
    """A local rebound in the body to state: the earlier `append` writes `rows` on the next round."""
    let target: list[int] = []
    let i = 0
    while i < k max 10:
        target.append(i)
        target = rows[0]
        i += 1
    return i

tool pop_while() -> int:
    let n = 0
    while marks.pop() > 10 max 1:
        n += 1
    return n
'''
HEADER = 'environment t:\n    title "T"\n\nstate:\n    xs: list[int] = []\n    words: list[str] = []\n\n'


def codes(body: str) -> list[str]:
    result = analyse_source(HEADER + body, "t.envspec")
    return [d.code for d in result.diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def analysed() -> object:
    result = analyse_source(SPEC, "loops_added.envspec")
    assert result.environment is not None, [d.message for d in result.diagnostics]
    return result.environment


@pytest.fixture(scope="module")
def files(analysed: object) -> dict[str, str]:
    return lower(analysed, "loops_added.envspec")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(files, tmp_path_factory.mktemp("loops"), "loops_added", "environment") as imported:
        yield imported


def test_the_lowered_package_passes_every_check(analysed: object, files: dict[str, str]) -> None:
    env = analysed
    result = check_packages([Package(env=env, name="loops_added", files=files)], dynamic=True)["loops_added"]  # type: ignore[arg-type]
    assert result.findings == [], result.findings
    assert result.tests_failed == 0 and result.tests_passed > 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(max_size=3), max_size=8),
    st.lists(st.integers(-(2**40), 2**40), max_size=8),
    st.lists(st.integers(-1000, 1000), max_size=8),
)
def test_zip_goes_as_pythons_zip(package: ModuleType, names: list[str], counts: list[int], zs: list[int]) -> None:
    env = package.Environment()
    assert env.call("pairs", {"names": names, "counts": counts}) == [f"{n}={c}" for n, c in zip(names, counts)]
    expected = sum(x * y - z for x, y, z in zip(counts, list(reversed(counts)), zs))
    assert env.call("weighted", {"xs": counts, "ys": list(reversed(counts)), "zs": zs}) == expected
    assert env.call("differences", {"xs": zs, "ys": counts}) == [b - a for a, b in zip(zs, counts)]
    assert env.call("keyed", {"xs": zs, "ys": counts}) == {str(a): b for a, b in zip(zs, counts) if a <= b}


def test_a_write_through_a_zipped_item_is_a_write_of_its_list_only(analysed: object) -> None:
    tools = {t.name: t for t in analysed.tools}  # type: ignore[attr-defined]
    assert tools["stamp_rows"].writes == ["rows"]
    assert sorted(tools["stamp_rows"].reads) == ["marks", "rows"]
    assert tools["read_labels"].writes == []


def test_a_refused_call_rolls_the_zipped_writes_back(package: ModuleType) -> None:
    env = package.Environment()
    refused = env.call("stamp_rows", {"fail_after": True})
    assert refused["error"]["kind"] == "invalid_state"
    assert env.state()["rows"] == [[1], [2], [3]]
    assert env.call("stamp_rows", {"fail_after": False}) == 3
    assert env.state()["rows"] == [[1, 10], [2, 20], [3, 30]]
    fork = env.fork()
    fork.call("stamp_rows", {"fail_after": False})
    assert env.state()["rows"] == [[1, 10], [2, 20], [3, 30]]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("tool t() -> int:\n    let z = zip(xs, xs)\n    return 0\n", ["E3006"]),
        ("tool t() -> int:\n    return len(sorted(zip(xs, xs)))\n", ["E3006"]),
        ("tool t() -> int:\n    for a in zip(xs, words):\n        pass\n    return 0\n", ["E3006"]),
        ("tool t() -> int:\n    for a, b, c in zip(xs, words):\n        pass\n    return 0\n", ["E3006"]),
        ("tool t() -> int:\n    for a in zip(xs):\n        pass\n    return 0\n", ["E3006"]),
        ("tool t(s: set[int]) -> int:\n    for a, b in zip(xs, s):\n        pass\n    return 0\n", ["E3004"]),
        ("tool t(m: map[str, int]) -> int:\n    for a, b, c in m:\n        pass\n    return 0\n", ["E3006"]),
        ("tool t() -> list[int]:\n    return [a for a, b in zip(xs, [b for a, b in zip(xs, words)])]\n", []),
        ("tool t() -> int:\n    for a, w in zip(xs, words):\n        let n: int = a + len(w)\n    return 0\n", []),
    ],
)
def test_zip_type_rules(body: str, expected: list[str]) -> None:
    assert codes(body) == expected


def _collatz(n: int, bound: int) -> int | str:
    """The Python loop `collatz` is: its step count, or the refusal past 500 rounds."""
    x, steps, rounds = n, 0, 0
    while x != 1:
        rounds += 1
        if rounds > 500:
            return "limit_exceeded"
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
        if steps >= bound:
            break
    return steps


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 10**12), st.integers(-5, 1000))
def test_while_runs_as_pythons_while_up_to_its_bound(package: ModuleType, n: int, bound: int) -> None:
    result = package.Environment().call("collatz_steps", {"n": n, "bound": bound})
    expected = _collatz(n, bound)
    if expected == "limit_exceeded":
        assert result["error"] == {
            "kind": "limit_exceeded",
            "message": "the `while` loop at line 42 reached its bound of 500 rounds",
            "limit": 500,
        }
    else:
        assert result == expected


def test_a_while_past_its_default_bound_is_refused_and_rolled_back(package: ModuleType) -> None:
    env = package.Environment()
    assert env.call("grow_marks", {"rounds": 10_000}) == 10_003
    env = package.Environment()
    refused = env.call("grow_marks", {"rounds": 10_001})
    assert refused["error"]["kind"] == "limit_exceeded" and refused["error"]["limit"] == 10_000
    assert env.state()["marks"] == [10, 20, 30]


def test_writes_in_a_while_are_journaled(package: ModuleType) -> None:
    env = package.Environment()
    assert env.call("drain", {"until": -1})["error"]["kind"] == "invalid_argument"
    assert env.state()["marks"] == [10, 20, 30]
    assert env.call("drain", {"until": 10}) == 1
    assert env.state()["marks"] == [10]
    env = package.Environment()
    refused = env.call("pop_while", {})  # its condition pops twice before the bound (1) is passed
    assert refused["error"]["kind"] == "limit_exceeded" and refused["error"]["limit"] == 1
    assert env.state()["marks"] == [10, 20, 30]
    env.call("drain", {"until": 20})
    assert env.call("pop_while", {}) == 1 and env.state()["marks"] == []


def test_a_while_counts_its_rounds_against_the_call_clock(package: ModuleType) -> None:
    """A call whose clock has run out stops inside the loop with `timeout`, rolled back."""
    env = package.Environment()
    result = env.call("grow_marks", {"rounds": 9_000}, lambda: True)
    assert result["error"]["kind"] == "timeout"
    assert env.state()["marks"] == [10, 20, 30]


def test_while_effects_are_walked_again_as_a_loop_widens_an_alias(analysed: object) -> None:
    tools = {t.name: t for t in analysed.tools}  # type: ignore[attr-defined]
    assert tools["alias_in_while"].writes == ["rows"]
    assert tools["drain"].writes == ["marks"] and tools["pop_while"].writes == ["marks"]
    assert tools["collatz_steps"].writes == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("tool t() -> int:\n    while 1 max 3:\n        pass\n    return 0\n", ["E3010"]),
        ("tool t() -> int:\n    while True max 0:\n        pass\n    return 0\n", ["E3035"]),
        ("tool t() -> int:\n    while True max 10_000_001:\n        break\n    return 0\n", ["E3035"]),
        ("tool t() -> int:\n    while True max 10_000_000:\n        break\n    return 0\n", []),
        ("tool t(o: optional[int]) -> int:\n    while o is not None:\n        return o + 1\n    return 0\n", []),
        ("tool t() -> int:\n    while len(xs) < 3:\n        continue\n    break\n", ["E3017"]),
        ("tool t(while: int) -> int:\n    return 0\n", ["E2014"]),
    ],
)
def test_while_rules(body: str, expected: list[str]) -> None:
    assert codes(body) == expected
