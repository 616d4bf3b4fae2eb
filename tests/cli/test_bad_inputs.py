"""Every `envc` command given a path that does not exist, and a malformed input file:
exit 2, one message naming the file (and `file:line` for a file of lines), no traceback,
no click `Usage:` block, nothing written (compiler/cli/common.py: one convention).

A spec with a syntax error is a finding (exit 1, `test_spec.py`); a malformed spec here
is one that is not UTF-8, which cannot be read at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from compiler.cli.app import cli

from .conftest import TICKETING

NOT_UTF8 = b'environment demo:\n    title "caf\xe9"\n'  # byte 32, on line 2


@dataclass(frozen=True)
class Malformed:
    """A malformed input made in a folder: the path to give the command, the file the
    message names, and the line it names (0: a file whose lines do not matter)."""

    given: Path
    named: Path
    line: int


@dataclass(frozen=True)
class Case:
    """The command line given an input path and the project folder, and how to make a
    malformed input for it."""

    args: Callable[[Path, Path], list[str]]
    malformed: Callable[[Path], Malformed]


def not_utf8_spec(folder: Path) -> Malformed:
    path = folder / "bad.envspec"
    path.write_bytes(NOT_UTF8)
    return Malformed(path, path, 2)


def bad_second_line(first: str = "", *, task_set: bool = False) -> Callable[[Path], Malformed]:
    """A JSONL file whose second line is not JSON (the first: `first`); with `task_set`,
    the folder holding it as tasks.jsonl is what the command is given."""

    def make(folder: Path) -> Malformed:
        path = folder / "tasks.jsonl"
        path.write_text(f"{first}\n{{oops\n", encoding="utf-8")
        return Malformed(folder if task_set else path, path, 2)

    return make


def broken_package(folder: Path) -> Malformed:
    """A folder that looks like a generated package, with a tools.json that is not JSON."""
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "tools.json").write_text("{oops", encoding="utf-8")
    return Malformed(folder, folder, 0)


SPEC = str(TICKETING)

CASES: dict[str, Case] = {
    "check": Case(lambda p, d: ["check", str(p)], not_utf8_spec),
    "fmt": Case(lambda p, d: ["fmt", str(p)], not_utf8_spec),
    "fix": Case(lambda p, d: ["fix", str(p)], not_utf8_spec),
    "compile": Case(lambda p, d: ["compile", "-o", str(d / "out"), str(p)], not_utf8_spec),
    "graph": Case(lambda p, d: ["graph", str(p), "-o", str(d / "graph.json")], not_utf8_spec),
    "lock": Case(lambda p, d: ["lock", str(p)], not_utf8_spec),
    "sample": Case(lambda p, d: ["sample", str(p), "--chains", "2", "-o", str(d / "c.jsonl")], not_utf8_spec),
    "tasks": Case(
        lambda p, d: ["tasks", SPEC, "-n", "1", "--chains", str(p), "-o", str(d / "out")], bad_second_line("{}")
    ),
    "export": Case(lambda p, d: ["export", str(p), "-o", str(d / "x.jsonl")], bad_second_line()),
    "calibrate": Case(lambda p, d: ["calibrate", str(p), SPEC], bad_second_line(task_set=True)),
    "rollout": Case(lambda p, d: ["rollout", str(p), SPEC, "-o", str(d / "t.jsonl")], bad_second_line()),
    "serve": Case(lambda p, d: ["serve", str(p), "--port", "0"], bad_second_line(task_set=True)),
    "mcp": Case(lambda p, d: ["mcp", str(p), "--transport", "http", "--port", "0"], broken_package),
    "adapters verl-config": Case(
        lambda p, d: ["adapters", "verl-config", str(p), "-o", str(d / "tools.yaml")], bad_second_line()
    ),
    "draft": Case(
        lambda p, d: ["draft", "--batch", str(p), "-o", str(d / "specs")],
        bad_second_line('{"name": "mail_room", "description": "Mail for a team."}'),
    ),
}
WITHOUT_INPUT_PATH = {"new", "library"}
"""`new` takes NAME and an output path only; `library` reads the project's
specs/catalog.yaml (its missing and malformed catalogs are tests/cli/test_library.py's)."""


def envc(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args)


def files_under(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def assert_one_clean_failure(result: Result, named: Path, where: str) -> None:
    output = result.output
    assert result.exit_code == 2, output
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert "Traceback" not in output and "Usage:" not in output, output
    assert str(named) in output and where in output, output


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder as the project: no pyproject.toml (so no model is configured),
    away from the repository's generated/."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_missing_path_is_exit_2_naming_it(name: str, project: Path) -> None:
    missing = project / "nowhere" / "input"
    before = files_under(project)
    result = envc(CASES[name].args(missing, project))
    assert_one_clean_failure(result, missing, str(missing))
    assert files_under(project) == before, "nothing is written"


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_malformed_file_is_exit_2_naming_its_line(name: str, project: Path) -> None:
    folder = project / "input"
    folder.mkdir()
    bad = CASES[name].malformed(folder)
    before = files_under(project)
    result = envc(CASES[name].args(bad.given, project))
    assert_one_clean_failure(result, bad.named, f"{bad.named}:{bad.line}" if bad.line else str(bad.named))
    assert files_under(project) == before, "nothing is written"


def test_every_command_is_covered() -> None:
    """A new command (or adapters subcommand) must come with its bad-input cases."""
    context = click.Context(cli)
    names = set(cli.list_commands(context)) - {"adapters"}
    adapters = cli.get_command(context, "adapters")
    assert isinstance(adapters, click.Group)
    names |= {f"adapters {sub}" for sub in adapters.list_commands(click.Context(adapters))}
    assert names == set(CASES) | WITHOUT_INPUT_PATH
