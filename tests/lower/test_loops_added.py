"""Loops added for ports (issue 24): `zip` over two or more lists, gone over by a `for`
or a comprehension (the language has no tuples). `SPEC` is lowered once and goes through
ruff, mypy --strict, envc's AST rules and its generated tests; its tools are then run
against Python's own `zip` on random lists, and their effects checked: a write through a
zipped list's item is a write of that list's field only, and is rolled back on refusal.
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
