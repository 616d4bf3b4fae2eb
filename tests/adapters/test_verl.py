"""The VERL adapter (compiler/serve/verl.py) and its tool config (verl_config.py,
`envc adapters verl-config`).

Against the PyPI release of VERL installed without its dependencies (README), imported
without torch by conftest.py: its `BaseTool`, pydantic schemas and
`initialize_tools_from_config`, which loads the YAML with OmegaConf. Tool calls are made
the way VERL's agent loop makes them (tool_agent_loop.py `_call_tool`): create with the
row's create kwargs and no instance id, execute with `agent_data`, release, one instance
per call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from importlib.metadata import distribution
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from shipped import package_dirs
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.tools.tool_registry import initialize_tools_from_config

from compiler.cli.adapters import adapters_command
from compiler.serve import verl, verl_config
from compiler.synth import export


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


@pytest.fixture
def tools(lifecycle_dir: Path, lifecycle_tasks: Path, tmp_path: Path) -> dict[str, Any]:
    """VERL's tool objects from the config `envc adapters verl-config` writes."""
    config = tmp_path / "tool_config.yaml"
    result = CliRunner().invoke(
        adapters_command,
        ["verl-config", str(lifecycle_tasks), "--packages", str(lifecycle_dir.parent), "-o", str(config)],
    )
    assert result.exit_code == 0, result.output
    return {tool.name: tool for tool in initialize_tools_from_config(str(config))}


def call_tool(tools: dict[str, Any], row: dict[str, Any], name: str, args: dict[str, Any], request_id: str) -> Any:
    """One tool call as VERL's agent loop makes it (create, execute, release)."""

    async def call() -> Any:
        tool = tools[name]
        kwargs = row["extra_info"]["tools_kwargs"].get(name, {})
        instance_id, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
        try:
            return await tool.execute(instance_id, args, agent_data=SimpleNamespace(request_id=request_id))
        finally:
            await tool.release(instance_id)

    return run(call())


@pytest.fixture(autouse=True)
def empty_registry() -> Any:
    yield
    for key in list(verl.REGISTRY._trajectories):
        verl.REGISTRY.finish(key)


def test_the_tool_is_a_base_tool_of_the_installed_verl_release() -> None:
    """The interface is VERL's own files (pip's record of the release), not a copy."""
    files = {str(f) for f in distribution("verl").files or ()}
    assert issubclass(verl.EnvcTool, BaseTool) and verl.BaseTool is BaseTool
    for cls in (BaseTool, OpenAIFunctionToolSchema, verl.ToolResponse):
        source = Path(inspect.getfile(cls))
        assert f"verl/tools/{source.name}" in files and source.parent.parent.name == "verl"


def test_the_config_loads_as_verl_loads_it(tools: dict[str, Any], lifecycle_dir: Path) -> None:
    openai = json.loads((lifecycle_dir / "openai_tools.json").read_text())["tools"]
    assert sorted(tools) == sorted(t["function"]["name"] for t in openai)
    for name, tool in tools.items():
        assert isinstance(tool, verl.EnvcTool) and isinstance(tool.tool_schema, OpenAIFunctionToolSchema)
        function = next(t["function"] for t in openai if t["function"]["name"] == name)
        parameters = tool.tool_schema.function.parameters
        assert parameters.required == function["parameters"]["required"]
        assert list(parameters.properties) == list(function["parameters"]["properties"])
    step = tools["step"].tool_schema.function.parameters.properties
    assert step["amount"].type == "integer" and "maximum 10" in (step["amount"].description or "")
    assert step["note"].type == "string" and "May be null." in (step["note"].description or "")
    assert tools["switch"].tool_schema.function.parameters.properties["mode"].enum == ["idle", "running"]


def test_the_config_is_the_same_bytes_every_time(lifecycle_dir: Path, lifecycle_tasks: Path) -> None:
    texts = [verl_config.to_yaml(verl_config.tool_config(lifecycle_tasks, lifecycle_dir.parent)) for _ in range(2)]
    assert texts[0] == texts[1]
    document = yaml.safe_load(texts[0])
    assert [t["class_name"] for t in document["tools"]] == [verl_config.TOOL_CLASS] * len(document["tools"])
    assert document["tools"][0]["config"] == {
        "type": "native",
        "package": lifecycle_dir.as_posix(),
        "env": "lifecycle",
        "tool": document["tools"][0]["tool_schema"]["function"]["name"],
        "tasks": lifecycle_tasks.as_posix(),
        "packages": lifecycle_dir.parent.as_posix(),  # where the task's other environments are found, at any depth
    }


def test_a_package_alone_gives_every_tool_and_no_tasks(lifecycle_dir: Path) -> None:
    document = yaml.safe_load(verl_config.to_yaml(verl_config.tool_config(lifecycle_dir, Path("unused"))))
    assert {t["tool_schema"]["function"]["name"] for t in document["tools"]} == {
        "reset",
        "close",
        "step",
        "score",
        "switch",
        "get_reward",
        "get_reward_tool",
    }
    assert all("tasks" not in t["config"] for t in document["tools"])


def test_shipped_task_sets_across_environments(tmp_path: Path) -> None:
    """Every shipped package's tools pass VERL's schema model."""
    for folder in sorted(package_dirs().values()):
        for entry in verl_config.package_config(folder)["tools"]:
            OpenAIFunctionToolSchema.model_validate(entry["tool_schema"])


@pytest.mark.parametrize(
    ("target", "message"),
    [("nowhere", "neither a compiled package"), ("empty.jsonl", "holds no tasks"), ("bad.jsonl", "not a JSON line")],
)
def test_bad_targets_are_input_errors(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "bad.jsonl").write_text("{nope\n")
    out = tmp_path / "tool_config.yaml"
    result = CliRunner().invoke(adapters_command, ["verl-config", str(tmp_path / target), "-o", str(out)])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_task_naming_a_path_is_refused_at_its_line(tmp_path: Path, lifecycle_task: dict[str, Any]) -> None:
    """Task rows name environments, never folders (compiler/build/packages.py)."""
    env = lifecycle_task["envs"][0]
    hostile = json.loads(json.dumps(lifecycle_task).replace(json.dumps(env), json.dumps("../elsewhere/evil")))
    assert hostile["envs"] == ["../elsewhere/evil"]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(lifecycle_task) + "\n" + json.dumps(hostile) + "\n")
    out = tmp_path / "tool_config.yaml"
    result = CliRunner().invoke(
        adapters_command, ["verl-config", str(tasks), "--packages", str(tmp_path), "-o", str(out)]
    )
    assert result.exit_code == 2 and f"{tasks}:2:" in result.output and "is not an environment name" in result.output
    assert not out.exists()


def test_a_rollout_as_verls_agent_loop_makes_it(tools: dict[str, Any], lifecycle_task: dict[str, Any]) -> None:
    row = export.verl_row(lifecycle_task, 0)
    response, reward, metrics = call_tool(tools, row, "score", {}, "rollout-1")
    assert json.loads(response.text) == 0 and reward == 0.0
    response, _, metrics = call_tool(tools, row, "step", {"amount": 11}, "rollout-1")
    assert json.loads(response.text)["error"]["kind"] == "invalid_argument" and metrics["domain_error"]
    response, _, _ = call_tool(tools, row, "step", {"amount": 1}, "rollout-1")
    assert json.loads(response.text) == 4
    call_tool(tools, row, "step", {"amount": 1}, "rollout-2")  # another rollout of the same task
    response, _, _ = call_tool(tools, row, "step", {"amount": 1}, "rollout-1")
    assert json.loads(response.text) == 5  # the state lasted across instances
    assert run(tools["score"].calc_reward("rollout-1")) == 1.0
    assert run(tools["step"].calc_reward("rollout-2")) == 0.0  # 4 steps: not done
    assert verl.REGISTRY.counts() == (0, 2)  # every instance released; the rollouts stay
    verl.EnvcTool.finish_trajectory("rollout-1")
    verl.EnvcTool.finish_trajectory("rollout-2")
    assert verl.REGISTRY.counts() == (0, 0)


def test_an_instance_id_given_at_create_is_the_trajectory(
    tools: dict[str, Any], lifecycle_task: dict[str, Any]
) -> None:
    create = export.verl_row(lifecycle_task, 0)["extra_info"]["tools_kwargs"]["step"]["create_kwargs"]

    async def rollout() -> float:
        tool = tools["step"]
        instance_id, _ = await tool.create("traj-7", create_kwargs=create)
        assert instance_id == "traj-7" and verl.REGISTRY.counts() == (1, 1)
        await tool.execute(instance_id, {"amount": 2})
        reward = float(await tool.calc_reward(instance_id))
        await tool.release(instance_id)
        return reward

    assert run(rollout()) == 1.0
    assert verl.REGISTRY.counts() == (0, 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"env": "ticketing"}, "this tool is lifecycle.step"),
        ({"changes_json": "{oops"}, "not JSON text"),
        ({"changes_json": "[]"}, "not a JSON object"),
        ({"task_id": ""}, "task_id"),
        ({"scenario": "nowhere"}, "cannot open the initial state"),
    ],
)
def test_bad_create_kwargs_are_refused(
    tools: dict[str, Any], lifecycle_task: dict[str, Any], change: dict[str, Any], message: str
) -> None:
    create = export.verl_row(lifecycle_task, 0)["extra_info"]["tools_kwargs"]["step"]["create_kwargs"]
    with pytest.raises(verl.ToolUseError, match=message):
        run(tools["step"].create("traj-bad", create_kwargs={**create, **change}))
    assert verl.REGISTRY.counts() == (0, 0)


def test_unknown_instances_and_trajectories_are_refused(tools: dict[str, Any]) -> None:
    with pytest.raises(verl.ToolUseError, match="no instance"):
        run(tools["step"].execute("nobody", {}))
    with pytest.raises(verl.ToolUseError, match="no trajectory"):
        run(tools["step"].calc_reward("nobody"))


def test_an_internal_error_makes_the_trajectory_unscorable(
    tools: dict[str, Any], lifecycle_task: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Any) -> int:
        raise ZeroDivisionError("broken")

    monkeypatch.setattr(tools["score"].module.Environment, "score", broken)
    row = export.verl_row(lifecycle_task, 0)
    response, _, metrics = call_tool(tools, row, "score", {}, "rollout-x")
    assert json.loads(response.text)["error"]["kind"] == "internal" and metrics["infrastructure_error"]
    with pytest.raises(verl.InfrastructureError):
        run(tools["score"].calc_reward("rollout-x"))
    with pytest.raises(verl.InfrastructureError):
        call_tool(tools, row, "step", {}, "rollout-x")


def test_the_trajectory_limit_is_an_error_not_an_eviction(
    lifecycle_dir: Path, lifecycle_tasks: Path, lifecycle_task: dict[str, Any], tmp_path: Path
) -> None:
    document = verl_config.tool_config(lifecycle_tasks, lifecycle_dir.parent)
    for entry in document["tools"]:
        entry["config"]["max_trajectories"] = 1
    path = tmp_path / "small.yaml"
    path.write_text(verl_config.to_yaml(document))
    tools = {tool.name: tool for tool in initialize_tools_from_config(str(path))}
    row = export.verl_row(lifecycle_task, 0)
    call_tool(tools, row, "step", {}, "first")
    with pytest.raises(verl.ToolUseError, match="limit"):
        call_tool(tools, row, "step", {}, "second")
    assert json.loads(call_tool(tools, row, "step", {}, "first")[0].text) == 5


def test_a_trajectory_whose_start_cannot_open_is_not_kept(
    tools: dict[str, Any], lifecycle_task: dict[str, Any]
) -> None:
    create = export.verl_row(lifecycle_task, 0)["extra_info"]["tools_kwargs"]["step"]["create_kwargs"]

    async def rollout() -> None:
        tool = tools["step"]
        instance_id, _ = await tool.create(create_kwargs={**create, "scenario": "nowhere"})
        try:
            with pytest.raises(verl.ToolUseError, match="cannot open the initial state"):
                await tool.execute(instance_id, {}, agent_data=SimpleNamespace(request_id="r-bad"))
            assert verl.REGISTRY.counts() == (1, 0)
        finally:
            await tool.release(instance_id)

    run(rollout())
    assert verl.REGISTRY.counts() == (0, 0)


def test_hostile_arguments_are_domain_errors_and_the_rollout_scores(
    tools: dict[str, Any], lifecycle_task: dict[str, Any]
) -> None:
    row = export.verl_row(lifecycle_task, 0)
    for hostile in ("\ud800", float("nan"), 10**4000, [[[[]]]]):
        response, _, metrics = call_tool(tools, row, "step", {"amount": hostile}, "rollout-h")
        assert json.loads(response.text)["error"]["kind"] == "invalid_argument"
        assert metrics == {"domain_error": True, "infrastructure_error": False}
    for _ in range(2):
        call_tool(tools, row, "step", {"amount": 1}, "rollout-h")
    assert run(tools["score"].calc_reward("rollout-h")) == 1.0, "the refused calls changed nothing"
