"""Packages and tasks the adapter tests share: the `lifecycle` fixture spec (tools named
`step`, `score`, `get_reward`, `get_reward_tool`) lowered from the templates as they are
now, a hand-written task of it, and where VERL's interface comes from."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from compiler.analyse import analyse_file
from compiler.check.package import write_tree
from compiler.lower import lower
from compiler.synth import export
from compiler.synth.sample import import_package

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE = ROOT / "tests" / "fixtures" / "adapters" / "lifecycle.envspec"
FAKE_VERL = Path(__file__).resolve().parent / "fake_verl"
VERL_SOURCE = "VERL itself" if importlib.util.find_spec("verl") else "the copy of VERL's interface in fake_verl/"
"""VERL needs torch and Ray: without it installed, its interface comes from fake_verl/."""
if importlib.util.find_spec("verl") is None:
    sys.path.insert(0, str(FAKE_VERL))


def task_of(folder: Path) -> dict[str, Any]:
    """A task of `lifecycle` (package in `folder`): from the running scenario, make 2 steps
    (steps 3 -> 5)."""
    tools = json.loads((folder / "openai_tools.json").read_text())["tools"]
    task = {
        "id": "lifecycle-two-steps",
        "envs": ["lifecycle"],
        "initial_state": {"lifecycle": {"scenario": "running", "changes": {}}},
        "prompt": "Advance the machine by two steps.",
        "tools": tools,
        "gold_calls": [{"env": "lifecycle", "tool": "step", "args": {"amount": 2}}],
        "max_turns": 8,
        "timeout_s": 60,
        "verifier": {
            "checks": [{"env": "lifecycle", "path": "/steps", "op": "equals", "expected": 5, "weight": 1.0}],
            "collateral": {"allowed": {"lifecycle": ["/steps", "/total"]}},
        },
        "reward": "binary",
        "source": {"declared": "adapters-fixture"},
    }
    return task


@pytest.fixture(scope="session")
def lifecycle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """generated-style folder holding the lowered `lifecycle` package (packages/lifecycle/)."""
    result = analyse_file(LIFECYCLE)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    folder = tmp_path_factory.mktemp("packages") / "lifecycle"
    write_tree(folder, lower(result.environment, "tests/fixtures/adapters/lifecycle.envspec"))
    (folder.parent / "tasks.jsonl").write_text(export.canonical(task_of(folder)) + "\n")
    return folder


@pytest.fixture(scope="session")
def lifecycle(lifecycle_dir: Path) -> ModuleType:
    module = import_package(lifecycle_dir, "_adapters_test_lifecycle")
    importlib.import_module(f"{module.__name__}.trl_env")
    return module


@pytest.fixture(scope="session")
def lifecycle_tasks(lifecycle_dir: Path) -> Path:
    return lifecycle_dir.parent / "tasks.jsonl"


@pytest.fixture
def lifecycle_task(lifecycle_dir: Path) -> dict[str, Any]:
    return task_of(lifecycle_dir)
