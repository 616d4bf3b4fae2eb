"""Recursive records and unions (issue 24): a record may hold itself through a list, a
map, an optional or an absent-able field. The file-tree fixture is lowered, checked with
its generated tests, and driven 10,000 levels deep: past the depth bound a change is a
rolled-back `limit_exceeded` and a deep argument or scenario is refused, while state(),
forks, snapshots, JSON round trips and the journal work and nothing meets Python's
recursion limit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lowered import imported_package, lowered_files

from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.ir.recursion import DEPTH_LIMIT

SPEC = Path(__file__).resolve().parents[1] / "fixtures" / "recursive" / "file_tree.envspec"
PAYMENTS = Path(__file__).resolve().parents[1] / "fixtures" / "shapes" / "retail_payments.envspec"
HEADER = 'environment trees:\n    title "Trees"\n\n'
LEVELS = 10_000


def codes(source: str) -> list[str]:
    return [d.code for d in analyse_source(HEADER + source, "t.envspec").diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(files, tmp_path_factory.mktemp("tree"), "file_tree", "environment") as imported:
        yield imported


def chain(levels: int) -> dict[str, Any]:
    """A directory `levels` directories deep, built without recursion."""
    top: dict[str, Any] = {"kind": "dir", "name": "d0", "children": {}}
    node = top
    for i in range(1, levels):
        child: dict[str, Any] = {"kind": "dir", "name": f"d{i}", "children": {}}
        node["children"][child["name"]] = child
        node = child
    return top


# --------------------------------------------------------------------------- analysis


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("record Node:\n    kids: list[Node]\n", []),
        ("record Node:\n    next: optional[Node]\n", []),
        ("record Node:\n    next?: Node\n", []),
        ("record Node:\n    next: Node\n", ["E3023"]),
        ("record A:\n    b: B\n\nrecord B:\n    a: A\n", ["E3023", "E3023"]),
        ("record A:\n    b: B\n\nrecord B:\n    a: map[str, A]\n", []),
    ],
)
def test_only_a_cycle_with_no_end_is_refused(source: str, expected: list[str]) -> None:
    assert codes(source) == expected


def test_the_fixture_analyses_cleanly() -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None and result.diagnostics == []
    mv = next(t for t in result.environment.tools if t.name == "mv")
    assert mv.writes == ["root"] and "cwd" in mv.reads


def chain_text(levels: int) -> str:
    """JSON text of `chain(levels)`, written without recursion (json.dumps would recurse)."""
    head = "".join(f'{{"kind": "dir", "name": "d{i}", "children": {{"d{i + 1}": ' for i in range(levels - 1))
    return head + f'{{"kind": "dir", "name": "d{levels - 1}", "children": {{}}}}' + "}}" * (levels - 1)


@pytest.mark.parametrize(("levels", "expected"), [(40, []), (60, ["E3001"]), (LEVELS, ["E0003"])])
def test_a_state_file_is_held_to_the_bound(tmp_path: Path, levels: int, expected: list[str]) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "root.json").write_text('{"name": "", "children": {"d0": ' + chain_text(levels) + "}}")
    spec = SPEC.read_text(encoding="utf-8")
    start = spec.index("    root: Dir = ")
    spec = spec[:start] + '    root: Dir from "data/root.json"\n' + spec[spec.index("\n", start) + 1 :]
    (tmp_path / "tree.envspec").write_text(spec, encoding="utf-8")
    diagnostics = analyse_file(tmp_path / "tree.envspec").diagnostics
    assert [d.code for d in diagnostics] == expected
    assert all("deeper than" in d.message or "recursion" in d.message for d in diagnostics)


# --------------------------------------------------------------------------- schemas


def test_recursive_types_are_refs_to_defs(files: dict[str, str]) -> None:
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    unpack = tools["unpack"]["parameters"]
    assert unpack["properties"]["tree"] == {"$ref": "#/$defs/Dir"}
    assert set(unpack["$defs"]) == {"Dir", "Node"}
    children = unpack["$defs"]["Dir"]["properties"]["children"]
    assert children == {"type": "object", "additionalProperties": {"$ref": "#/$defs/Node"}}
    assert tools["mkdir"]["returns"]["$ref"] == "#/$defs/Dir" and "$defs" in tools["mkdir"]["returns"]
    assert "$defs" not in tools["pwd"]["parameters"]
    openai = {t["function"]["name"]: t["function"] for t in json.loads(files["openai_tools.json"])["tools"]}
    assert openai["unpack"]["parameters"] == unpack


def test_schemas_without_recursive_records_keep_their_inline_form() -> None:
    text = lowered_files(PAYMENTS)["tools.json"]
    assert "$defs" not in text and "$ref" not in text


# --------------------------------------------------------------------------- the package


def test_the_fixture_passes_full_qc(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="file_tree", files=files)], dynamic=True)
    outcome = checked["file_tree"]
    assert outcome.findings == [], [f"{f.tool} {f.file}:{f.line} {f.message}" for f in outcome.findings]
    assert outcome.static_ok and outcome.dynamic_ok and outcome.tests_failed == 0


def test_building_ten_thousand_levels_stops_at_the_bound(package: ModuleType) -> None:
    env = package.Environment()
    refused: dict[str, Any] = {}
    for i in range(LEVELS):
        made = env.call("mkdir", {"name": f"d{i}"})
        if "error" in made:
            refused = made["error"]
            break
        env.call("cd", {"name": f"d{i}"})
    assert refused["kind"] == "limit_exceeded" and refused["limit"] == DEPTH_LIMIT
    depth = len(env.call("pwd", {}).split("/")) - 1
    assert DEPTH_LIMIT // 2 - 2 <= depth < DEPTH_LIMIT // 2
    before = env.state_json()
    assert env.call("touch", {"name": "f"})["error"]["kind"] == "limit_exceeded"
    assert env.state_json() == before  # the refused call is rolled back
    round_trip = package.Environment(json.loads(json.dumps(env.state())))
    assert round_trip.state_json() == before
    fork = env.fork()
    fork.call("cd", {"name": ".."})
    assert fork.call("rm", {"name": f"d{depth - 1}"}) == 1
    assert env.state_json() == before and fork.state_json() != before
    snapshot = env.snapshot()
    for _ in range(depth):
        env.call("cd", {"name": ".."})
    assert env.call("rm", {"name": "d0"}) == depth
    env.restore(snapshot)
    assert env.state_json() == before
    assert env.call("find", {"name": f"d{depth - 1}"}) == []  # below the current directory only
    env.call("cd", {"name": ".."})
    assert env.call("find", {"name": f"d{depth - 1}"}) == [f"/d{depth - 1}"]
    for _ in range(depth):
        env.call("cd", {"name": ".."})
    assert env.call("bytes", {"name": "d0"}) == env.call("du", {"name": "d0"}) == 0  # a recursive helper, 49 deep


def test_a_deep_argument_or_scenario_is_refused_before_anything_recurses(package: ModuleType) -> None:
    env = package.Environment()
    refused = env.call("unpack", {"tree": chain(LEVELS)})
    assert refused["error"]["kind"] == "invalid_argument" and refused["error"]["field"] == "tree"
    fits = env.call("unpack", {"tree": chain(DEPTH_LIMIT // 2 - 1)})
    assert fits == DEPTH_LIMIT // 2 - 2
    with pytest.raises(package.ScenarioError, match="deeper than"):
        package.Environment({"root": {"kind": "dir", "name": "", "children": {"d0": chain(LEVELS)}}})


def test_copying_a_directory_into_itself_is_refused(package: ModuleType) -> None:
    env = package.Environment()
    before = env.state_json()
    refused = env.call("cp", {"name": "docs", "into": "docs"})
    assert refused["error"]["kind"] == "invalid_argument" and "into itself" in refused["error"]["message"]
    assert env.state_json() == before
    assert env.call("cp", {"name": "b.txt", "into": "docs"})["children"]["b.txt"]["size"] == 7
    env.call("cd", {"name": "docs"})
    assert env.call("ls", {}) == ["a.txt", "b.txt"]
    env.call("cd", {"name": ".."})
    assert env.call("du", {}) == 19


# --------------------------------------------------------------------------- records holding themselves

THREADS = Path(__file__).resolve().parents[1] / "fixtures" / "recursive" / "threads.envspec"


def thread(levels: int) -> dict[str, Any]:
    """A comment with one reply, which has one reply, ... `levels` comments deep."""
    top: dict[str, Any] = {"author": "a", "text": "0", "replies": []}
    node = top
    for i in range(1, levels):
        child: dict[str, Any] = {"author": "a", "text": str(i), "replies": []}
        node["replies"].append(child)
        node = child
    return top


def test_records_holding_themselves_in_lists_and_optionals(tmp_path: Path) -> None:
    """A record holding itself directly (no union): its converters are named functions
    calling themselves, its sample arguments end, and it passes full QC."""
    files = lowered_files(THREADS)
    result = analyse_file(THREADS)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="threads", files=files)], dynamic=True)
    assert checked["threads"].static_ok and checked["threads"].dynamic_ok and checked["threads"].tests_failed == 0
    with imported_package(files, tmp_path, "threads", "environment") as threads:
        env = threads.Environment()
        assert env.call("post", {"comment": thread(LEVELS)})["error"]["kind"] == "invalid_argument"
        assert env.call("post", {"comment": thread(DEPTH_LIMIT // 2 - 5)}) == 1
        replies = env.call("replies", {"index": 0})
        assert replies[0]["text"] == "1"
        assert threads.Environment(env.saved_state()).state_json() == env.state_json()
        with pytest.raises(threads.ScenarioError, match="deeper than"):
            threads.Environment({"threads": [thread(LEVELS)]})
