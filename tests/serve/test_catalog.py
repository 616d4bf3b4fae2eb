"""What `envc serve` serves comes from the command line only (compiler/serve/catalog.py):
a task file names environments, and a row naming a path, or an environment that is not
served, is refused at its line before anything it names is imported."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from shipped import spec_path

from compiler.cli.app import cli
from compiler.serve.catalog import CatalogError, load_catalog

from .conftest import TICKETING

MARKER = "IMPORTED"


def task_row(env: str, task_id: str = "t1") -> dict[str, Any]:
    """The smallest row the task format accepts, for environment `env`."""
    return {
        "id": task_id,
        "envs": [env],
        "initial_state": {env: {"scenario": None, "changes": {}}},
        "prompt": "Do nothing.",
        "tools": [{"type": "function", "function": {"name": "list_tickets", "parameters": {}}}],
        "gold_calls": [],
        "max_turns": 4,
        "timeout_s": 60,
        "verifier": {"checks": [{"kind": "state", "env": env, "path": "tickets", "op": "exists"}]},
        "reward": "binary",
        "source": {},
    }


def hostile_layout(tmp_path: Path, env: str) -> tuple[Path, Path, Path]:
    """packages/ (the packages folder), elsewhere/evil_pkg (a package that leaves a
    marker when imported) and tasks/tasks.jsonl whose second row names `env`."""
    packages = tmp_path / "packages"
    shutil.copytree(TICKETING, packages / "ticketing")
    evil = tmp_path / "elsewhere" / "evil_pkg"
    shutil.copytree(TICKETING, evil)
    init = evil / "__init__.py"
    init.write_text(
        f"from pathlib import Path\nPath(__file__).with_name({MARKER!r}).write_text('ran')\n" + init.read_text("utf-8"),
        encoding="utf-8",
    )
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    rows = [task_row("ticketing", "fine"), task_row(env, "hostile")]
    (tasks / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return packages, evil, tasks


@pytest.mark.parametrize(
    "env", ["../elsewhere/evil_pkg", "ABSOLUTE", "evil_pkg/.", "ticketing/../../elsewhere/evil_pkg"]
)
def test_a_task_naming_a_path_is_refused_at_its_line_and_nothing_is_imported(tmp_path: Path, env: str) -> None:
    evil_path = str(tmp_path / "elsewhere" / "evil_pkg")
    env = evil_path if env == "ABSOLUTE" else env
    packages, evil, tasks = hostile_layout(tmp_path, env)
    before = set(sys.modules)
    result = CliRunner().invoke(cli, ["serve", str(tasks), "--packages-dir", str(packages), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert f"{tasks / 'tasks.jsonl'}:2:" in result.output, result.output
    assert "is not an environment name" in result.output and "Traceback" not in result.output
    assert not (evil / MARKER).exists()
    assert not any("evil" in name or "ticketing" in name for name in set(sys.modules) - before)


def test_a_task_naming_an_environment_not_served_is_refused_at_its_line(tmp_path: Path) -> None:
    packages, evil, tasks = hostile_layout(tmp_path, "evil_pkg")
    with pytest.raises(CatalogError) as refused:
        load_catalog([tasks], packages)
    message = str(refused.value)
    assert message.startswith(
        f"{tasks / 'tasks.jsonl'}:2: task hostile needs environment `evil_pkg`, which is not served"
    )
    assert not (evil / MARKER).exists()


def test_tasks_name_environments_of_the_packages_folder(tmp_path: Path) -> None:
    packages, _, tasks = hostile_layout(tmp_path, "ticketing")
    served = load_catalog([tasks], packages)
    assert list(served.envs) == ["ticketing"] and served.envs["ticketing"].folder == packages / "ticketing"
    assert set(served.tasks) == {"fine", "hostile"}


@pytest.mark.parametrize("command", ["rollout", "calibrate", "export"])
def test_rollout_calibrate_and_export_refuse_a_task_naming_a_path(tmp_path: Path, command: str) -> None:
    """The other readers of task files go through the same check (compiler/synth/export.py)."""
    _, evil, tasks = hostile_layout(tmp_path, "../elsewhere/evil_pkg")
    specs = [] if command == "export" else [str(spec_path("ticketing"))]
    result = CliRunner().invoke(cli, [command, str(tasks), *specs])
    assert result.exit_code == 2, result.output
    assert f"{tasks / 'tasks.jsonl'}:2:" in result.output and "is not an environment name" in result.output
    assert not (evil / MARKER).exists()
