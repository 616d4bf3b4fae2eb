"""The in-process paths give each call the server's cooperative time limit (issue 23): an
endless loop in a tool body, called through the package's `Episode`, the TRL adapter and
the VERL tool, ends within the limit as the domain error `timeout`, the state unchanged,
and the episode goes on to be scored. The `slow_body` fixture spec is lowered from the
templates as they are now."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from verl.tools.tool_registry import initialize_tools_from_config

from compiler.analyse import analyse_file
from compiler.build.packages import import_package
from compiler.check.package import write_tree
from compiler.cli.adapters import adapters_command
from compiler.lower import lower
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.serve import verl
from compiler.synth import export

from .conftest import ROOT

SLOW = ROOT / "tests" / "fixtures" / "serve" / "slow_body.envspec"
LIMIT = 0.5
ENDLESS = {"rounds": 10**12}
"""`spin` loops this many times: for ever, as far as a test can tell."""


@pytest.fixture(scope="module")
def slow_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = analyse_file(SLOW)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    folder = tmp_path_factory.mktemp("packages") / "slow_body"
    write_tree(folder, lower(result.environment, "tests/fixtures/serve/slow_body.envspec"))
    (folder.parent / "tasks.jsonl").write_text(export.canonical(slow_task(folder)) + "\n")
    return folder


@pytest.fixture(scope="module")
def slow(slow_dir: Path) -> ModuleType:
    module = import_package(slow_dir, "_adapters_test_slow_body")
    __import__(f"{module.__name__}.trl_env")
    return module


def slow_task(folder: Path) -> dict[str, Any]:
    """Bump the counter once (the endless call before it must change nothing)."""
    return {
        "id": "slow-bump-once",
        "envs": ["slow_body"],
        "initial_state": {"slow_body": {"scenario": "fresh", "changes": {}}},
        "prompt": "Bump the counter once.",
        "tools": json.loads((folder / "openai_tools.json").read_text())["tools"],
        "gold_calls": [{"env": "slow_body", "tool": "bump", "args": {}}],
        "max_turns": 8,
        "timeout_s": 60,
        "verifier": {
            "checks": [{"env": "slow_body", "path": "/counter", "op": "equals", "expected": 1, "weight": 1.0}],
            "collateral": {"allowed": {"slow_body": ["/counter"]}},
        },
        "reward": "binary",
        "source": {"declared": "call-limit-fixture"},
    }


def stopped_in_time(call: Any) -> Any:
    """The call's answer, checked to come within the limit (and not before it)."""
    started = time.perf_counter()
    answer = call()
    assert LIMIT <= time.perf_counter() - started < LIMIT + 1.5
    return answer


def test_the_episode_stops_an_endless_call(slow: ModuleType, slow_dir: Path) -> None:
    assert slow.Episode().call_timeout_s == CALL_TIMEOUT_S  # the server's default
    episode = slow.Episode(call_timeout_s=LIMIT)
    episode.reset(task=slow_task(slow_dir))
    result, reward, terminated, truncated, info = stopped_in_time(
        lambda: episode.step({"name": "spin", "arguments": ENDLESS})
    )
    assert result["error"]["kind"] == "timeout" and info["domain_error"] and not (terminated or truncated)
    assert episode.state()["counter"] == 0, "the stopped call changed nothing"
    assert episode.step({"name": "bump", "arguments": {}})[0] == 1
    assert episode.step(None)[1] == 1.0
    with pytest.raises(slow.EpisodeError, match="above 0"):
        slow.Episode(call_timeout_s=0)


def test_the_trl_adapter_stops_an_endless_call(slow: ModuleType, slow_dir: Path) -> None:
    class Limited(slow.trl_env.TrlEnvironment):  # type: ignore[name-defined,misc]
        call_timeout_s = LIMIT

    assert slow.trl_env.TrlEnvironment.call_timeout_s == CALL_TIMEOUT_S
    env = Limited()  # as TRL makes it: no arguments
    env.reset(**slow_task(slow_dir))
    answer = json.loads(stopped_in_time(lambda: env.spin(**ENDLESS)))
    assert answer["error"]["kind"] == "timeout"
    assert json.loads(env.bump()) == 1, "the stopped call changed nothing"
    assert env.get_reward() == 1.0


def test_the_verl_tool_stops_an_endless_call(slow: ModuleType, slow_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "tool_config.yaml"
    tasks = slow_dir.parent / "tasks.jsonl"
    result = CliRunner().invoke(
        adapters_command, ["verl-config", str(tasks), "--packages", str(slow_dir.parent), "-o", str(config)]
    )
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(config.read_text())
    for entry in written["tools"]:
        entry["config"]["call_timeout_s"] = LIMIT
    config.write_text(yaml.safe_dump(written))
    tools = {tool.name: tool for tool in initialize_tools_from_config(str(config))}
    assert tools["spin"].call_timeout_s == LIMIT
    row = export.verl_row(slow_task(slow_dir), 0)

    def call(name: str, args: dict[str, Any]) -> Any:
        async def run() -> Any:
            kwargs = row["extra_info"]["tools_kwargs"].get(name, {})
            instance_id, _ = await tools[name].create(create_kwargs=kwargs.get("create_kwargs", {}))
            try:
                agent = SimpleNamespace(request_id="slow-rollout")
                return await tools[name].execute(instance_id, args, agent_data=agent)
            finally:
                await tools[name].release(instance_id)

        return asyncio.run(run())

    response, _, metrics = stopped_in_time(lambda: call("spin", ENDLESS))
    assert json.loads(response.text)["error"]["kind"] == "timeout" and metrics["domain_error"]
    assert json.loads(call("bump", {})[0].text) == 1, "the stopped call changed nothing"
    assert asyncio.run(tools["bump"].calc_reward("slow-rollout")) == 1.0
    verl.EnvcTool.finish_trajectory("slow-rollout")


@pytest.mark.parametrize("bad", [0, -1, "10", True])
def test_a_bad_verl_call_limit_is_refused(bad: Any) -> None:
    with pytest.raises(verl.ToolUseError, match="call_timeout_s"):
        verl.call_limit(bad)
    assert verl.call_limit(None) is None and verl.call_limit(2) == 2.0
