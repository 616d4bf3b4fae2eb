"""A load option and a state field may share a name (docs/language.md §10.1, issue 24):
in `on load:` the bare name is the option, the nearer name as a parameter's is, and
`state.NAME` is the field; everywhere else the name is the field. The generated loader
takes the option as a keyword and the state keeps the field, as BFCL's classes keep
`long_context` both ways (tests/fixtures/on_load/long_context_port.envspec)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from lowered import imported_package, lowered_files

from compiler import ir
from compiler.analyse import analyse_file, analyse_source
from compiler.check import check_packages
from compiler.check.package import Package
from compiler.ir.tree import walk

SPEC = Path(__file__).resolve().parent.parent / "fixtures" / "on_load" / "long_context_port.envspec"
HEADER = 'environment clash:\n    title "Clash"\n\nstate:\n    flag: bool = False\n\n'


def errors(body: str) -> list[tuple[str, str, str]]:
    result = analyse_source(HEADER + body, "clash.envspec")
    return [(d.code, d.message, d.hint) for d in result.diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return lowered_files(SPEC)


@pytest.fixture(scope="module")
def package(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with imported_package(files, tmp_path_factory.mktemp("long_context"), "long_context_port") as imported:
        yield imported


def references(body: list[ir.Stmt], name: str) -> list[str]:
    """What each bare use of `name` in a body refers to, and `state.NAME` as "state."."""
    found = []
    for node in walk(body):
        if isinstance(node, ir.Name) and node.id == name:
            found.append(node.ref)
        elif (
            isinstance(node, ir.Attr) and node.name == name and isinstance(node.obj, ir.Name) and node.obj.id == "state"
        ):
            found.append("state.")
    return found


def test_the_option_and_the_field_share_a_name_without_a_diagnostic() -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None and not result.diagnostics
    env = result.environment
    assert [o.name for o in env.load_options] == ["long_context"]
    assert "long_context" in {f.name for f in env.state}


def test_on_load_reads_the_option_bare_and_the_field_through_state() -> None:
    env = analyse_file(SPEC).environment
    assert env is not None and env.on_load is not None
    assert sorted(references(env.on_load.body, "long_context")) == ["param", "state.", "state."]
    assert "long_context" in env.on_load.writes and "long_context" in env.on_load.reads
    tool = next(t for t in env.tools if t.name == "is_long_context")
    assert references(tool.body, "long_context") == ["state"]


def test_assigning_the_option_is_refused_with_the_fields_spelling() -> None:
    found = errors("load options:\n    flag: bool = False\n\non load:\n    flag = True\n")
    assert [code for code, _, _ in found] == ["E4007"]
    _, message, hint = found[0]
    assert message == "load option `flag` cannot be reassigned" and "state.flag = …" in hint


def test_the_field_is_written_and_read_through_state_in_on_load() -> None:
    body = "load options:\n    flag: bool = False\n\non load:\n    if flag and not state.flag:\n        state.flag = flag\n"
    assert errors(body) == []


def test_a_world_field_still_may_not_share_an_options_name() -> None:
    found = errors("world:\n    limit: int = 3\n\nload options:\n    limit: int = 0\n")
    assert [code for code, _, _ in found] == ["E2031"] and "world field" in found[0][1]


def test_the_loader_keyword_and_the_state_field_both_exist(files: dict[str, str]) -> None:
    source = files["environment.py"]
    assert "long_context: bool = False" in source  # the keyword of Environment and _load_scenario
    assert "def _on_load(self, long_context: bool) -> None:" in source
    assert 'state["long_context"] = True' in source and 'if state["long_context"]:' in source


def test_the_option_sets_the_field_and_the_field_is_what_tools_read(package: ModuleType) -> None:
    env = package.environment.Environment
    plain = env()
    assert plain.state()["long_context"] is False and plain.state()["page_size"] == 5
    assert plain.invoke("is_long_context") is False
    long = env(long_context=True)
    assert long.state()["long_context"] is True and long.state()["page_size"] == 50
    assert long.invoke("is_long_context") is True
    loaded = env()
    loaded._load_scenario({"bookings": ["Oslo"]}, long_context=True)
    assert loaded.state()["long_context"] is True and loaded.state()["bookings"] == ["Oslo"]


def test_the_field_set_by_a_configuration_stands_without_the_option(package: ModuleType) -> None:
    env = package.environment.Environment
    assert env("already_long").invoke("is_long_context") is True
    assert env({"long_context": True}).state()["page_size"] == 50


def test_a_reload_with_the_default_option_keeps_the_field(package: ModuleType) -> None:
    env = package.environment.Environment
    long = env(long_context=True)
    assert env(long.state()).state() == long.state()
    assert env(long.saved_state()).invoke("is_long_context") is True


def test_full_qc_passes(files: dict[str, str]) -> None:
    result = analyse_file(SPEC)
    assert result.environment is not None
    checked = check_packages([Package(env=result.environment, name="long_context_port", files=files)], dynamic=True)
    outcome = checked["long_context_port"]
    assert outcome.static_ok and outcome.dynamic_ok and not outcome.findings, outcome.findings
