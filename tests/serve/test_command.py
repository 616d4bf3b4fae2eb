"""`envc serve`'s command line: bad paths and options are usage errors (exit 2) with a
message, never a traceback."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from compiler.cli.app import cli

from .conftest import TICKETING


def test_serve_is_an_envc_command() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0 and "--max-sessions" in result.output and "--data-dir" in result.output


def test_a_path_that_serves_nothing_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", str(tmp_path), "--port", "0"])
    assert result.exit_code == 2
    assert "neither a generated package" in result.output and "Traceback" not in result.output


def test_tasks_of_an_environment_not_found_name_it(tmp_path: Path, cross_task_dir: Path) -> None:
    """The cross tasks need support_triage too, and the packages folder given has none."""
    args = ["serve", str(TICKETING), str(cross_task_dir), "--packages-dir", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "needs environment `support_triage`" in result.output, result.output


def test_a_trainer_token_variable_must_be_set() -> None:
    result = CliRunner().invoke(cli, ["serve", str(TICKETING), "--trainer-token-env", "ENVC_NO_SUCH_VARIABLE"])
    assert result.exit_code == 2 and "ENVC_NO_SUCH_VARIABLE" in result.output
