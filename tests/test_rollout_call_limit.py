"""`envc rollout`'s call path (compiler/run/rollout.py `run_call`) cannot be held by one
call either (issue 23, finding 2): a body that loops for long is stopped at the call
limit as the domain error `timeout` (nothing changed, the rollout goes on), and the
`(a+)+$` probe through automation_hub answers at once. The limit is the episode's
`call_timeout_s` (`envc serve`'s default), given to `envc rollout` as `--call-timeout`:
the command is run against a loopback OpenAI-compatible endpoint whose model calls the
endless loop."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from shipped import package_dir, spec_path
from test_rollout import ScriptedEndpoint

from compiler.analyse import analyse_file
from compiler.cli.app import cli
from compiler.llm.config import LLMConfig
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.run import calibrate, rollout, scale
from compiler.synth import export
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent
SLOW_SPEC = ROOT / "tests" / "fixtures" / "serve" / "slow_body.envspec"
HUB_SPEC = spec_path("automation_hub")


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SampleEnv]:
    out = tmp_path_factory.mktemp("slow")
    result = CliRunner().invoke(cli, ["compile", str(SLOW_SPEC), "-o", str(out), "--no-qc"])
    assert result.exit_code == 0, result.output
    loaded = {}
    for spec, folder in ((SLOW_SPEC, out / "slow_body"), (HUB_SPEC, package_dir("automation_hub"))):
        env = analyse_file(spec).environment
        assert env is not None
        loaded[env.header.name] = load_env(env, folder)
    return loaded


def task_of(envs: dict[str, SampleEnv], env: str, scenario: str) -> dict[str, Any]:
    tools = [{"type": "function", "function": {"name": name}} for name in envs[env].package.TOOL_SPECS]
    return {
        "envs": [env],
        "initial_state": {env: {"scenario": scenario, "changes": {}}},
        "max_turns": 10,
        "timeout_s": 60,
        "tools": tools,
    }


def episode_of(
    envs: dict[str, SampleEnv], env: str, scenario: str, call_timeout_s: float | None = CALL_TIMEOUT_S
) -> calibrate.Episode:
    return calibrate.Episode(task_of(envs, env, scenario), envs, call_timeout_s)


def endless_task(envs: dict[str, SampleEnv]) -> dict[str, Any]:
    """A slow_body task whose model (the endpoint's `gold` script) first calls an endless
    loop, then `bump`: passed only if the stopped call changed nothing (counter 1)."""
    return {
        **task_of(envs, "slow_body", "fresh"),
        "id": "slow-endless-then-bump",
        "prompt": "Spin for ever, then bump the counter once.",
        "gold_calls": [
            {"env": "slow_body", "tool": "spin", "args": {"rounds": 10**12}},
            {"env": "slow_body", "tool": "bump", "args": {}},
        ],
        "verifier": {
            "checks": [{"env": "slow_body", "path": "/counter", "op": "equals", "expected": 1, "weight": 1.0}],
            "collateral": {"allowed": {"slow_body": ["/counter"]}},
        },
        "reward": "binary",
        "source": {"declared": "call-limit-fixture"},
    }


def call(episode: calibrate.Episode, transcript: rollout.Transcript, tool: str, args: dict[str, Any]) -> Any:
    ending = rollout.run_call(episode, rollout.ToolCall("c", tool, json.dumps(args)), transcript)
    assert ending is None, ending
    return transcript.results[-1]


def test_a_long_call_is_stopped_and_the_rollout_goes_on(envs: dict[str, SampleEnv]) -> None:
    episode = episode_of(envs, "slow_body", "fresh", 0.5)
    transcript = rollout.Transcript(messages=[])
    for tool, args in [("spin", {"rounds": 10**12}), ("gather", {"rounds": 10**12}), ("fibonacci", {"n": 80})]:
        started = time.perf_counter()
        assert call(episode, transcript, tool, args)["error"]["kind"] == "timeout"
        assert 0.5 <= time.perf_counter() - started < 1.5
    assert call(episode, transcript, "bump", {}) == 1, "the stopped calls changed nothing"


def test_the_redos_probe_answers_at_once(envs: dict[str, SampleEnv]) -> None:
    episode = episode_of(envs, "automation_hub", "office_hub")
    transcript = rollout.Transcript(messages=[])
    condition = {"field": "subject", "op": "regex", "value": "(a+)+$"}
    actions = [{"type": "notify", "params": {"channel": "#ops", "message": "matched"}}]
    rule = {"name": "probe", "trigger": "email_received", "source_filter": "it_inbox"}
    assert "error" not in call(
        episode, transcript, "create_automation", {**rule, "condition": condition, "actions": actions}
    )
    started = time.perf_counter()
    payload = {"from": "eve@example.com", "subject": "a" * 100_000 + "!"}
    event = call(
        episode,
        transcript,
        "inject_event",
        {"source_id": "it_inbox", "event_type": "email_received", "payload": payload},
    )
    assert event["event"]["fired"] == [] and time.perf_counter() - started < 0.5


def test_the_episode_takes_the_servers_limit_by_default(envs: dict[str, SampleEnv]) -> None:
    assert episode_of(envs, "slow_body", "fresh").call_timeout_s == CALL_TIMEOUT_S
    unlimited = episode_of(envs, "slow_body", "fresh", None)
    assert unlimited.call("spin", {"rounds": 1000}) == sum(i % 7 for i in range(1000))


def test_rollout_stops_an_endless_call_and_scores_the_episode(envs: dict[str, SampleEnv]) -> None:
    """Through the rollout loop and a real endpoint: the endless call is a `timeout` result
    in the trajectory, the model goes on, and the final state holds only the `bump`."""
    task = endless_task(envs)
    with ScriptedEndpoint([task]) as endpoint:
        config = LLMConfig(model="gold", base_url=endpoint.url, retries=1, backoff=0.01, timeout=10.0)
        rows = rollout.rollout([task], envs, config, 1, executor=scale.LocalExecutor(envs, 1), call_timeout_s=0.5)
    (row,) = rows
    assert 0.5 <= row["timings"]["env_s"] < 2.0, "the endless call was stopped at the limit"
    assert [result if not isinstance(result, dict) else result["error"]["kind"] for result in row["results"]] == [
        "timeout",
        1,
    ]
    assert (row["ended"], row["scorable"], row["passed"], row["reward"]) == ("done", True, True, 1.0)


def test_envc_rollout_takes_call_timeout(
    envs: dict[str, SampleEnv], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`envc rollout --call-timeout 0.5` with the slow_body spec: the endless call ends as
    the domain error `timeout` within the limit, and the task still passes."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    task = endless_task(envs)
    (tmp_path / "tasks.jsonl").write_text(export.canonical(task) + "\n")
    out = tmp_path / "trajectories.jsonl"
    with ScriptedEndpoint([task]) as endpoint:
        arguments = [str(tmp_path), str(SLOW_SPEC), "--model", "gold", "--base-url", endpoint.url]
        result = CliRunner().invoke(cli, ["rollout", *arguments, "--call-timeout", "0.5", "-o", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["results"][0]["error"]["kind"] == "timeout" and row["results"][1] == 1
    assert row["passed"] is True and 0.5 <= row["timings"]["env_s"] < 2.0
