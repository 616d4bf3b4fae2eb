"""`envc serve`'s command line (compiler/cli/serve.py): bad paths and options are usage
errors (exit 2) with a message, never a traceback; a spec stands for its compiled package."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from shipped import copy_spec

from compiler.cli.app import cli
from compiler.serve.catalog import load_catalog

from .conftest import TICKETING


def test_serve_is_an_envc_command() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0 and "--max-sessions" in result.output and "--data-dir" in result.output


def test_a_path_that_serves_nothing_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", str(tmp_path), "--port", "0"])
    assert result.exit_code == 2
    assert "neither a generated package" in result.output and "Traceback" not in result.output


def test_tasks_of_an_environment_not_found_name_it(tmp_path: Path, cross_task_dir: Path) -> None:
    """The cross tasks need shop_orders and support_triage too, and the packages folder
    given has neither."""
    args = ["serve", str(TICKETING), str(cross_task_dir), "--packages-dir", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert any(f"needs environment `{name}`" in result.output for name in ("shop_orders", "support_triage")), (
        result.output
    )


def test_a_trainer_token_variable_must_be_set() -> None:
    result = CliRunner().invoke(cli, ["serve", str(TICKETING), "--trainer-token-env", "ENVC_NO_SUCH_VARIABLE"])
    assert result.exit_code == 2 and "ENVC_NO_SUCH_VARIABLE" in result.output


def spec_project(tmp_path: Path) -> Path:
    """A project holding a copy of the ticketing spec, its packages to go in out/."""
    (tmp_path / "pyproject.toml").write_text("[tool.envc]\noutput = 'out'\n", encoding="utf-8")
    return copy_spec("ticketing", tmp_path)  # with the data files its scenarios read


def test_a_spec_without_a_current_package_is_refused_before_listening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`envc serve SPEC` as `envc mcp SPEC`: the spec stands for its package when that is up to date."""
    spec = spec_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["serve", str(spec), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert f"the package of {spec} is missing or out of date: run `envc compile {spec}` first" in result.stderr
    assert "Usage:" not in result.output


def test_a_spec_stands_for_its_compiled_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = spec_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    compiled = CliRunner().invoke(cli, ["compile", "--no-qc", str(spec)])
    assert compiled.exit_code == 0, compiled.output
    served = load_catalog([spec])
    assert list(served.envs) == ["ticketing"]
    assert served.envs["ticketing"].folder == tmp_path / "out" / "ticketing"
