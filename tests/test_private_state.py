"""Private state (issue 14): a state field or record field named `_name` is saved and
restored with the state (snapshot, fork, scenarios, `saved_state`, saved sessions) but
is not part of the public view `state()` / `state_json()` that checkers compare, and
tools.json does not tell the agent about it; result keys may start with `_`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from lowered import imported_package, lowered_files

from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package, write_tree
from compiler.library import builtins as bi
from compiler.synth import task_build
from compiler.synth.sample import load_env

SPEC = Path(__file__).resolve().parent / "fixtures" / "private" / "private_state.envspec"
HEADER = 'environment private_rules:\n    title "Private"\n\n'


def codes(body: str) -> list[str]:
    return [d.code for d in analyse_source(HEADER + body, "p.envspec").diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(files, tmp_path_factory.mktemp("private"), "private_state", "environment") as imported:
        yield imported


def test_which_names_are_private() -> None:
    assert bi.is_private("_seen") and not bi.is_private("__seen") and not bi.is_private("_")
    assert codes("state:\n    _seen: int = 0\n") == []
    assert codes("state:\n    __seen: int = 0\n") == ["E2014"]
    assert codes("world:\n    _seen: int = 0\n") == ["E2014"]  # world data has no hidden part
    assert codes("record R:\n    _note: str\n") == []


def test_full_qc_passes(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="private_state", files=files)], dynamic=True)
    outcome = checked["private_state"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings


def test_tools_json_does_not_name_private_fields(files: dict[str, str]) -> None:
    tools = {t["name"]: t for t in json.loads(files["tools.json"])["tools"]}
    add = tools["add_note"]
    assert add["state_fields_affected"] == ["notes"] and add["side_effect"] == "modifies notes"
    assert not any(name.startswith("_") for name in add["reads"])


def test_public_view_leaves_private_fields_out(package: ModuleType) -> None:
    env = package.Environment()
    assert env.call("add_note", {"text": "x"}) == {"count": 1, "_calls": 1}  # a result key may be private
    assert "_calls" not in env.state() and "_seen" not in json.loads(env.state_json())
    assert env.state()["notes"] == [{"text": "x", "_origin": "agent"}]  # a private record field is data
    saved = env.saved_state()
    assert saved["_calls"] == 1 and saved["_seen"] == ["x"]


def test_private_fields_are_saved_and_restored(package: ModuleType) -> None:
    env = package.Environment()
    env.call("add_note", {"text": "a"})
    snapshot = env.snapshot()
    env.call("add_note", {"text": "b"})
    assert env.saved_state()["_calls"] == 2
    env.restore(snapshot)
    assert env.saved_state()["_seen"] == ["a"]
    assert env.fork().saved_state() == env.saved_state()
    assert package.Environment(env.saved_state()).saved_state() == env.saved_state()
    assert package.Environment("busy").saved_state()["_calls"] == 5


def test_saved_sessions_keep_private_fields(package: ModuleType, tmp_path: Path) -> None:
    import private_state.sessions as sessions

    store = sessions.SessionStore()
    store.open("s1")
    store.call("s1", "add_note", {"text": "kept"})
    store.save(tmp_path)
    again = sessions.SessionStore()
    again.load(tmp_path)
    assert again.call("s1", "add_note", {"text": "more"}) == {"count": 2, "_calls": 2}
    assert "_calls" not in again.state("s1")


def test_a_task_start_keeps_the_private_fields_of_its_scenario(files: dict[str, str], tmp_path: Path) -> None:
    """The task audits open a start as trainers do (the package's `open_environment`): the
    changes go on top of the scenario's saved state, so its private fields stay as they were."""
    result = analyse_file(SPEC)
    assert result.environment is not None
    write_tree(tmp_path / "private_state", files)
    env = load_env(result.environment, tmp_path / "private_state")
    start = {"scenario": "busy", "changes": {"notes": [{"text": "n", "_origin": "seed"}]}}
    opened = task_build.open_session(env, start).saved_state()
    assert opened["_calls"] == 5 and opened["notes"] == [{"text": "n", "_origin": "seed"}]
    assert opened == env.package.open_environment("busy", start["changes"])[0].saved_state()
