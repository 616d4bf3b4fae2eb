"""State from files is exact (docs/language.md §8.2): a value read from a data file is
converted as the same value given to `Environment(...)` is, so `Environment()` and
`Environment(env.state())` hold equal Python values, types and keys included (two
states with `1` and `"1"` as a map's key write the same `state()` JSON, so the live
values are compared, not the JSON)."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lowered import imported_package, lowered_files
from shipped import library_specs

from compiler.analyse import analyse_file

ROOT = Path(__file__).resolve().parent.parent.parent
SHAPES = ROOT / "tests" / "fixtures" / "state_files" / "every_shape.envspec"


def exact(value: Any) -> Any:
    """`value` with the type of every part kept, so `1 == 1.0` and `{1: x} == {"1": x}`
    compare unequal, and a set differs from a list."""
    if isinstance(value, dict):
        return ("dict", sorted(((exact(k), exact(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [exact(item) for item in value])
    if isinstance(value, (set, frozenset)):
        return ("set", sorted((exact(item) for item in value), key=repr))
    return (type(value).__name__, value)


def assert_reloads_exactly(module: types.ModuleType, scenario: str | None = None) -> None:
    """The state `scenario` (S0 for None) loads, given back as `state()` and as
    `saved_state()`, loads to the same live values."""
    env = module.Environment(scenario)
    live = exact(env.view())
    from_saved = module.Environment(env.saved_state())
    assert exact(from_saved.view()) == live, f"{scenario or 'S0'}: Environment(saved_state()) differs"
    from_public = module.Environment(env.state())
    assert from_public.state() == env.state(), f"{scenario or 'S0'}: Environment(state()) differs"
    if env.saved_state() == env.state():  # no private field the public view leaves out
        assert exact(from_public.view()) == live, f"{scenario or 'S0'}: Environment(state()) differs"
    restored = module.Environment()
    restored.restore(env.snapshot())
    assert exact(restored.view()) == live


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[types.ModuleType]:
    files = lowered_files(SHAPES)
    with imported_package(files, tmp_path_factory.mktemp("shapes"), "every_shape", "environment") as module:
        yield module


def test_every_shape_read_from_a_file_loads_as_from_a_mapping(shapes: types.ModuleType) -> None:
    for scenario in [None, *shapes.SCENARIOS]:
        assert_reloads_exactly(shapes, scenario)


def test_int_keys_inside_union_members_and_records_are_ints(shapes: types.ModuleType) -> None:
    state = shapes.Environment().view()
    crate = state["bays"]["a"]
    assert list(crate["boxes"]) == [7] and list(crate["boxes"][7]["counts"]) == [9]
    assert crate["weights"] == {1: 2.0, 2: 2.5} and type(crate["weights"][1]) is float
    assert crate["loose"] == {"1": ["text key"], 1: ["int key"]}  # map[json, …]: both keys kept
    assert list(state["loads"][0]["boxes"]) == [4]
    assert list(shapes.WORLD["catalogue"][1]["boxes"]) == [2]
    assert shapes.WORLD["catalogue"][1]["loose"] == {2: ["two"]}


def test_absent_fields_stay_absent_beside_maps_and_sets(shapes: types.ModuleType) -> None:
    boxes = shapes.Environment().view()["boxes"]
    assert "nickname" not in boxes[1] and "comment" not in boxes[1]
    assert boxes[2]["nickname"] == "atlas" and boxes[2]["comment"] is None
    assert boxes[1]["tags"] == {"a", "b"} and boxes[2]["counts"] == {} and boxes[3]["counts"] == {-3: 1}
    assert boxes[1]["notes"] == [{"text": "dusty", "on": "2025-03-01"}]


def test_nested_lists_enums_and_dates_come_through(shapes: types.ModuleType) -> None:
    state = shapes.Environment().view()
    assert state["shelves"] == {10: ["low", "high"], 11: []}
    assert state["opened"] == {5: "2025-02-28", 6: "2024-02-29"}
    assert [len(row) for row in state["grid"]] == [1, 0, 2]
    assert state["bays"]["b"]["levels"][0][0] == {"text": "top", "on": "2025-01-02"}


def test_scenarios_from_files_are_exact_too(shapes: types.ModuleType) -> None:
    assert list(shapes.Environment("emptied").view()["boxes"][8]["counts"]) == [1]
    assert list(shapes.Environment("one_bay").view()["bays"]["z"]["boxes"]) == [12]


def test_tools_answer_alike_on_the_file_state_and_on_its_reload(shapes: types.ModuleType) -> None:
    first = shapes.Environment()
    again = shapes.Environment(first.state())
    for env in (first, again):
        assert env.invoke("crate_boxes", {"bay": "a"}) == [7]
        assert env.invoke("box_count", {"box_id": 1}) == 4


def shipped_specs() -> list[Path]:
    """Every shipped spec and fixture that compiles on its own (a prototype or a
    deliberately broken fixture does not)."""
    found = [*library_specs(), *sorted((ROOT / "tests" / "fixtures").rglob("*.envspec"))]
    return [path for path in found if analyse_file(path).environment is not None]


SPECS = shipped_specs()


def test_there_are_specs_to_check() -> None:
    names = {path.stem for path in SPECS}
    assert len(SPECS) >= 25 and {"bfcl_message", "loading_port", "every_shape"} <= names


@pytest.mark.parametrize("spec", SPECS, ids=[str(p.relative_to(ROOT)) for p in SPECS])
def test_every_spec_reloads_its_own_state_exactly(spec: Path, tmp_path: Path) -> None:
    files = lowered_files(spec)
    with imported_package(files, tmp_path, f"reload_{spec.stem}", "environment") as module:
        for scenario in [None, *module.SCENARIOS]:
            assert_reloads_exactly(module, scenario)
