"""Packages and tasks the adapter tests share: the `lifecycle` fixture spec (tools named
`step`, `score`, `get_reward`, `get_reward_tool`) lowered from the templates as they are
now, a hand-written task of it, and VERL's tool interface from the real release."""

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
from compiler.build.packages import import_package
from compiler.check.package import write_tree
from compiler.lower import lower
from compiler.synth import export

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE = ROOT / "tests" / "fixtures" / "adapters" / "lifecycle.envspec"
VERL_BARE_PACKAGES = ("verl", "verl.utils")
"""The VERL packages whose `__init__` imports torch (`verl` imports its `DataProto`,
`verl.utils` its torch helpers); the tool modules under them need only pydantic, Ray,
OmegaConf and transformers' `get_json_schema`."""


def register_verl_without_torch() -> None:
    """Make `verl.tools.*` importable from the release installed with `pip install --no-deps`.

    Each package of VERL_BARE_PACKAGES is registered as a module made from its own spec but
    not executed, so importing `verl.tools.base_tool` finds the real files under it without
    running the `__init__` that needs torch. With torch installed, VERL imports as it is.
    """
    if importlib.util.find_spec("torch") is not None:
        return
    for name in VERL_BARE_PACKAGES:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        assert spec is not None, f"{name} is not installed: pip install --no-deps verl==0.9.1 (README)"
        sys.modules[name] = importlib.util.module_from_spec(spec)


register_verl_without_torch()


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
