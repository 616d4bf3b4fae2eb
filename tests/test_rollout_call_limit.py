"""`envc rollout`'s call path (compiler/run/rollout.py `run_call`) cannot be held by one
call either (issue 23, finding 2): a body that loops for long is stopped at the call
limit as the domain error `timeout` (nothing changed, the rollout goes on), and the
`(a+)+$` probe through automation_hub answers at once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.cli.app import cli
from compiler.run import calibrate, rollout
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


def episode_of(envs: dict[str, SampleEnv], env: str, scenario: str) -> calibrate.Episode:
    tools = [{"type": "function", "function": {"name": name}} for name in envs[env].package.TOOL_SPECS]
    task = {
        "envs": [env],
        "initial_state": {env: {"scenario": scenario, "changes": {}}},
        "max_turns": 10,
        "timeout_s": 60,
        "tools": tools,
    }
    return calibrate.Episode(task, envs)


def call(episode: calibrate.Episode, transcript: rollout.Transcript, tool: str, args: dict[str, Any]) -> Any:
    ending = rollout.run_call(episode, rollout.ToolCall("c", tool, json.dumps(args)), transcript)
    assert ending is None, ending
    return transcript.results[-1]


def test_a_long_call_is_stopped_and_the_rollout_goes_on(
    envs: dict[str, SampleEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rollout, "CALL_TIMEOUT", 0.5)
    episode = episode_of(envs, "slow_body", "fresh")
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
