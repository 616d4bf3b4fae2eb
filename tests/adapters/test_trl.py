"""The TRL adapter every package ships (trl_env.py, from templates/trl_env.py.jinja).

Tested against transformers' own `get_json_schema` (what TRL's trainer renders each tool
method's schema with) and against TRL 1.13.0's rules for an `environment_factory`
class, read from trl/trainer/grpo_trainer.py (TRL itself imports torch, which is not
installed here): tools are the public bound methods (`inspect.getmembers(instance,
inspect.ismethod)`) other than `reset` and `get_reward`, dispatched by `__name__`; `reset`
gets every column of the dataset row as keyword arguments; `get_reward()` takes nothing.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from shipped import package_dirs
from transformers.utils import get_json_schema

from compiler.build.packages import import_package
from compiler.lower.trl_env import method_names
from compiler.synth import export

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p for p in package_dirs().values() if (p / "trl_env.py").is_file())


def trl_tools(instance: object) -> dict[str, Any]:
    """The tool dict TRL's GRPOTrainer builds for one environment instance
    (grpo_trainer.py, `_sync_tool_dicts`)."""
    methods = [
        member
        for name, member in inspect.getmembers(instance, predicate=inspect.ismethod)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    return {method.__name__: method for method in methods}


def expected_shape(schema: dict[str, Any]) -> dict[str, Any]:
    """What `get_json_schema` can say of a parameter's openai_tools.json schema: its JSON
    types, item types, enum and nullability (limits and patterns live in the description)."""
    members = schema.get("anyOf", [schema])
    concrete = [m for m in members if m.get("type") != "null"]
    shape = _types(concrete[0]) if len(concrete) == 1 else {}
    if len(concrete) < len(members):
        shape["nullable"] = True
    return shape


def _types(schema: dict[str, Any]) -> dict[str, Any]:
    if "enum" in schema:
        return {"type": "string", "enum": schema["enum"]}
    kind = schema.get("type")
    if kind == "array" and "prefixItems" not in schema:
        return {"type": "array", "items": _types(schema.get("items", {}))}
    if kind == "object" and "properties" not in schema and isinstance(schema.get("additionalProperties"), dict):
        return {"type": "object", "additionalProperties": _types(schema["additionalProperties"])}
    return {"type": kind} if isinstance(kind, str) else {}


def derived_shape(schema: dict[str, Any]) -> dict[str, Any]:
    """A derived schema without its description; a record's `dict[str, Any]` hint gives
    `additionalProperties: {}` (any values), which says no more than `type: object`."""
    shape = {key: value for key, value in schema.items() if key != "description"}
    if shape.get("additionalProperties") == {}:
        del shape["additionalProperties"]
    for key in ("items", "additionalProperties"):
        if isinstance(shape.get(key), dict):
            shape[key] = derived_shape(shape[key])
    return shape


def check_schemas(package: Path, module: ModuleType) -> None:
    importlib.import_module(f"{module.__name__}.trl_env")
    openai = {
        t["function"]["name"]: t["function"] for t in json.loads((package / "openai_tools.json").read_text())["tools"]
    }
    tools = trl_tools(module.trl_env.TrlEnvironment())
    assert sorted(tools) == sorted(openai)
    for name, method in tools.items():
        derived = get_json_schema(method)["function"]
        want = openai[name]
        assert derived["name"] == name
        assert derived["description"] == (want["description"] or "No description.")
        parameters = want["parameters"]
        assert derived["parameters"].get("required", []) == parameters["required"], name
        assert list(derived["parameters"]["properties"]) == list(parameters["properties"]), name
        for param, schema in parameters["properties"].items():
            got = derived["parameters"]["properties"][param]
            assert derived_shape(got) == derived_shape(expected_shape(schema)), (name, param)
            said = " ".join(schema.get("description", f"The `{param}` argument.").split())
            assert got["description"].startswith(said), (name, param)


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_schemas_from_the_methods_are_the_packages_schemas(package: Path) -> None:
    check_schemas(package, import_package(package, f"_trl_test_{package.name}"))


def test_shipped_packages_have_the_adapter() -> None:
    assert len(PACKAGES) == len(package_dirs())


def test_tools_named_like_adapter_methods_stay_tools(lifecycle_dir: Path, lifecycle: ModuleType) -> None:
    check_schemas(lifecycle_dir, lifecycle)
    env = lifecycle.trl_env.TrlEnvironment()
    tools = trl_tools(env)
    assert sorted(tools) == ["close", "get_reward", "get_reward_tool", "reset", "score", "step", "switch"]
    assert tools["get_reward"].__func__ is type(env).get_reward_tool_  # the documented safe name
    assert tools["reset"].__func__ is type(env).reset_tool  # TRL's own reset stays the trainer's
    assert callable(env.reset) and callable(env.get_reward)


def test_method_names_avoid_trls_own_and_each_other() -> None:
    names = method_names(["reset", "reset_tool", "get_reward", "step", "score", "close"])
    assert names == {
        "reset": "reset_tool_",
        "reset_tool": "reset_tool",
        "get_reward": "get_reward_tool",
        "step": "step",
        "score": "score",
        "close": "close",
    }


def test_an_episode_through_trls_calls(lifecycle: ModuleType, lifecycle_task: dict[str, Any]) -> None:
    env = lifecycle.trl_env.TrlEnvironment()
    assert env.reset(**{**lifecycle_task, "prompt": [{"role": "user", "content": "x"}], "extra": 1}) is None
    tools = trl_tools(env)
    assert json.loads(tools["score"]()) == 0
    assert json.loads(tools["get_reward"](tags=["a", "b"])) == 2  # the tool, not the reward
    assert json.loads(tools["step"](amount=2)) == 5
    assert env.get_reward() == 1.0
    assert env.get_reward() == 1.0  # asked again: the same
    with pytest.raises(lifecycle.EpisodeError, match="over"):
        tools["step"]()
    env.reset(**lifecycle_task)  # the next rollout on the same instance starts afresh
    assert json.loads(trl_tools(env)["step"]()) == 4
    assert env.get_reward() == 0.0


def test_a_datasets_export_row_is_a_task(lifecycle: ModuleType, lifecycle_task: dict[str, Any]) -> None:
    env = lifecycle.trl_env.TrlEnvironment()
    env.reset(**export.datasets_row(lifecycle_task))
    env.step(amount=2)
    assert env.get_reward() == 1.0


def test_domain_errors_are_results_and_the_episode_goes_on(
    lifecycle: ModuleType, lifecycle_task: dict[str, Any]
) -> None:
    env = lifecycle.trl_env.TrlEnvironment()
    env.reset(**lifecycle_task)
    assert json.loads(env.step(amount=11))["error"]["kind"] == "invalid_argument"
    assert json.loads(env.switch(mode="idle")) == "ok"
    assert json.loads(env.step())["error"]["kind"] == "invalid_state"
    env.switch(mode="running")
    env.step(amount=2)
    assert env.get_reward() == 1.0


def test_the_turn_limit_ends_the_episode_unsuccessfully(lifecycle: ModuleType, lifecycle_task: dict[str, Any]) -> None:
    env = lifecycle.trl_env.TrlEnvironment()
    env.reset(**{**lifecycle_task, "max_turns": 1})
    assert json.loads(env.step(amount=2)) == 5  # the state would pass, but the limit is hit
    with pytest.raises(lifecycle.EpisodeError, match="turn_limit"):
        env.score()
    assert env.get_reward() == 0.0


def test_an_internal_error_is_not_scored_zero(
    lifecycle: ModuleType, lifecycle_task: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Any) -> int:
        raise ZeroDivisionError("broken")

    monkeypatch.setattr(lifecycle.Environment, "score", broken)
    env = lifecycle.trl_env.TrlEnvironment()
    env.reset(**lifecycle_task)
    assert json.loads(env.score())["error"]["kind"] == "internal"
    assert env.get_reward() is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"prompt": "hi"}, "not a task"),
        ({"envs": ["ticketing"]}, "for \\['ticketing'\\]"),
        ({"seed": "7"}, "seed"),
        ({"initial_state": None, "initial_state_json": "{not json"}, "not JSON"),
    ],
)
def test_rows_that_are_not_tasks_of_this_environment_are_refused(
    lifecycle: ModuleType, lifecycle_task: dict[str, Any], row: dict[str, Any], message: str
) -> None:
    env = lifecycle.trl_env.TrlEnvironment()
    base = {} if "prompt" in row else dict(lifecycle_task)
    if "initial_state_json" in row:
        del base["initial_state"]
        row = {"initial_state_json": row["initial_state_json"]}
    with pytest.raises(lifecycle.EpisodeError, match=message):
        env.reset(**{**base, **row})
    with pytest.raises(lifecycle.EpisodeError, match="never started"):
        env.get_reward()


def test_the_renamed_methods_pass_static_checks(lifecycle_dir: Path) -> None:
    """No shipped spec has a tool TRL keeps a name of, so `envc compile`'s static QC never
    sees the renaming branch of the template: check it here."""
    target = str(lifecycle_dir / "trl_env.py")
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", target], capture_output=True, text=True)
    assert ruff.returncode == 0, ruff.stdout
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", target],
        capture_output=True,
        text=True,
        cwd=lifecycle_dir.parent,
    )
    assert mypy.returncode == 0, mypy.stdout
