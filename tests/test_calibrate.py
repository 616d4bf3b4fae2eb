"""Calibration (compiler/run/calibrate.py, `envc calibrate`, `envc tasks --calibrate`): k
seeded runs of a policy per task; tasks passed k of k are too easy, 0 of k go to a
review list, the rest are kept. Checked with the baseline policies."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from shipped import package_dir

from compiler.analyse import analyse_file
from compiler.cli import app as cli_module
from compiler.cli import tasks as tasks_command
from compiler.run import calibrate, scale
from compiler.synth import export, task_build, tasks
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent
SPECS = ("specs/it_operations/ticketing.envspec", "specs/ports/bfcl_ticket.envspec")


@pytest.fixture(scope="module")
def library() -> dict[str, SampleEnv]:
    envs = {}
    for name in SPECS:
        env = analyse_file(ROOT / name).environment
        assert env is not None
        envs[env.header.name] = load_env(env, package_dir(env.header.name))
    return envs


@pytest.fixture(scope="module")
def task_set(library: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    kept = []
    for seed, span, count in ((4, (1, 1), 10), (5, (2, 2), 4)):
        options = task_build.TaskOptions(tasks=count, seed=seed, envs=span)
        rows, report = tasks.synthesise(tasks.sampler_for(library, options), options)
        assert report.kept == count, report.to_json()
        kept.extend(rows)
    return kept


@pytest.fixture
def task_dir(tmp_path: Path, task_set: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text(tasks.tasks_to_jsonl(task_set), encoding="utf-8")
    return folder


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli_module.cli, [str(a) for a in args], catch_exceptions=False)


# --------------------------------------------------------------------------- the baselines


def test_gold_passes_every_run_so_every_task_is_too_easy(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    result = calibrate.calibrate(task_set, library, calibrate.POLICIES["gold"], k=8, seed=1)
    assert [count for _, count in result.passes] == [8] * len(task_set)
    assert result.too_easy == task_set and result.kept == [] and result.review == []
    data = result.to_json()
    assert data["histogram"] == {**{str(n): 0 for n in range(8)}, "8": len(task_set)}
    assert data["pass_rate"] == 1.0 and data["too_easy_ids"] == [t["id"] for t in task_set]


def test_doing_nothing_passes_no_run_so_every_task_goes_to_review(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    result = calibrate.calibrate(task_set, library, calibrate.POLICIES["nothing"], k=8)
    assert [count for _, count in result.passes] == [0] * len(task_set)
    assert result.review == task_set and result.kept == [] and result.too_easy == []
    assert result.to_json()["review_ids"] == [t["id"] for t in task_set]


def test_random_calls_are_reproducible_for_a_seed(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    policy = calibrate.POLICIES["random"]
    first = calibrate.calibrate(task_set, library, policy, k=4, seed=7)
    again = calibrate.calibrate(task_set, library, policy, k=4, seed=7)
    backwards = calibrate.calibrate(task_set[::-1], library, policy, k=4, seed=7)
    assert first.passes == again.passes and dict(first.passes) == dict(backwards.passes)
    assert first.to_json() == again.to_json()

    def transcript(task: dict[str, Any], seed: int) -> list[dict[str, Any]]:
        episode = calibrate.Episode(task, library)
        policy.play(task, episode, random.Random(seed))
        return episode.transcript

    calls = [transcript(t, 3) for t in task_set]
    assert calls == [transcript(t, 3) for t in task_set]
    assert calls != [transcript(t, 4) for t in task_set]
    assert all(0 < len(c) <= calibrate.RANDOM_CALLS for c in calls)
    results = [c["result"] for episode in calls for c in episode]
    succeeded = [r for r in results if not (isinstance(r, dict) and set(r) == {"error"})]
    assert len(succeeded) > len(results) / 3  # valid calls, mostly, drawn as the sampler draws


def test_flaky_gold_gives_a_mix_and_the_split_follows_the_counts(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    result = calibrate.calibrate(task_set, library, calibrate.POLICIES["flaky-gold"], k=8, seed=2)
    counts = dict(result.passes)
    assert result.kept, "flaky gold keeps tasks it passes only sometimes"
    assert all(0 < counts[t["id"]] < 8 for t in result.kept)
    assert all(counts[t["id"]] == 8 for t in result.too_easy)
    assert all(counts[t["id"]] == 0 for t in result.review)
    assert len(result.kept) + len(result.too_easy) + len(result.review) == len(task_set)
    assert sum(result.to_json()["histogram"].values()) == len(task_set)


@dataclass(frozen=True)
class Coin:
    """A policy of the protocol's shape (what the rollout layer will plug in)."""

    name: str = "coin"

    def play(self, task: Mapping[str, Any], episode: calibrate.Episode, rng: random.Random) -> None:
        if rng.random() < 0.5:
            for call in task["gold_calls"]:
                episode.call(call["tool"], call["args"])


def test_any_policy_of_the_protocol_can_be_calibrated(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    result = calibrate.calibrate(task_set, library, Coin(), k=8, seed=0)
    assert result.policy == "coin" and result.kept
    assert result.passes == calibrate.calibrate(task_set, library, Coin(), k=8, seed=0).passes


def test_a_run_with_an_internal_error_is_unscorable_not_a_failure(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    package = library["ticketing"].package
    internal = package.environment.INTERNAL_ERROR
    monkeypatch.setattr(package.Environment, "call", lambda self, tool, args=None, expired=None: internal)
    single = [t for t in task_set if t["envs"] == ["ticketing"]][:3]
    result = calibrate.calibrate(single, library, calibrate.POLICIES["gold"], k=2)
    assert result.unscorable == single and not (result.kept or result.too_easy or result.review)
    data = result.to_json()
    assert (
        data["unscorable_ids"] == [t["id"] for t in single] and data["mean_reward"] == 0.0 and data["pass_rate"] == 0.0
    )
    assert all(
        r == ["env_error: a tool failed with an internal error of the environment"] * 2
        for r in data["unscorable_runs"].values()
    )
    run = calibrate.run_once(single[0], library, calibrate.POLICIES["gold"], 0, 0)
    assert (run["ended"], run["scorable"], run["reward"], run["passed"]) == ("env_error", False, None, False)
    nothing = calibrate.calibrate(single, library, calibrate.POLICIES["nothing"], k=2)  # no call, nothing failed
    assert nothing.review == single and nothing.unscorable == []


def test_runs_on_threads_give_the_same_counts(task_set: list[dict[str, Any]], library: dict[str, SampleEnv]) -> None:
    policy = calibrate.POLICIES["flaky-gold"]
    seen: list[int] = []
    threaded = calibrate.calibrate(
        task_set, library, policy, k=8, seed=2, executor=scale.LocalExecutor(library, 4), progress=seen.append
    )
    assert threaded.to_json() == calibrate.calibrate(task_set, library, policy, k=8, seed=2).to_json()
    assert sorted(seen) == list(range(1, 8 * len(task_set) + 1))


# --------------------------------------------------------------------------- episodes


def test_an_episode_respects_max_turns_and_offered_tools(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    task = next(t for t in task_set if len(t["gold_calls"]) >= 2)
    short = {**task, "max_turns": 1}
    episode = calibrate.Episode(short, library)
    calibrate.POLICIES["gold"].play(short, episode, random.Random(0))
    assert episode.turns == 1 and episode.over
    refused = episode.call(task["gold_calls"][1]["tool"], task["gold_calls"][1]["args"])
    assert refused["error"]["kind"] == "turn_limit" and episode.turns == 1
    result = calibrate.calibrate([short], library, calibrate.POLICIES["gold"], k=2)
    assert result.review == [short]  # gold cut short passes no run
    random_episode = calibrate.Episode(short, library)
    calibrate.POLICIES["random"].play(short, random_episode, random.Random(0))
    assert random_episode.turns == 1

    other = calibrate.Episode(task, library)
    assert other.call("no_such_tool", {})["error"]["kind"] == "not_found" and other.turns == 1
    other.deadline = 0.0
    assert other.call(task["gold_calls"][0]["tool"], {})["error"]["kind"] == "timeout"


def test_cross_environment_episodes_call_prefixed_tools(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    task = next(t for t in task_set if len(t["envs"]) == 2)
    episode = calibrate.Episode(task, library)
    assert all("__" in name for name in episode.tools)
    own = task["gold_calls"][0]["tool"].split("__", 1)[1]
    assert episode.call(own, {})["error"]["kind"] == "not_found"  # unprefixed names are not offered
    assert calibrate.run_once(task, library, calibrate.POLICIES["gold"], 0, 0)["passed"]


def test_tasks_that_do_not_fit_the_environments_are_refused(
    task_set: list[dict[str, Any]], library: dict[str, SampleEnv]
) -> None:
    task = task_set[0]
    env = task["envs"][0]
    nowhere = {**task, "initial_state": {env: {"scenario": "nowhere", "changes": {}}}}
    with pytest.raises(calibrate.CalibrationError, match="has no scenario `nowhere`"):
        calibrate.calibrate([nowhere], library, calibrate.POLICIES["gold"])
    odd = {**task, "gold_calls": [{"env": env, "tool": "no_such_tool", "args": {}}]}
    with pytest.raises(calibrate.CalibrationError, match="task 2 .*`no_such_tool` is not a tool"):
        calibrate.calibrate([task, odd], library, calibrate.POLICIES["gold"])
    changed = {**task, "initial_state": {env: {"scenario": None, "changes": {"no_such_field": 1}}}}
    with pytest.raises(calibrate.CalibrationError, match="cannot start an episode: .*no_such_field"):
        calibrate.calibrate([changed], library, calibrate.POLICIES["gold"])
    with pytest.raises(calibrate.CalibrationError, match="not among the specs given"):
        calibrate.calibrate([task], {}, calibrate.POLICIES["gold"])
    with pytest.raises(calibrate.CalibrationError, match="k must be at least 1"):
        calibrate.calibrate([task], library, calibrate.POLICIES["gold"], k=0)


# --------------------------------------------------------------------------- the commands


def test_the_commands_offer_every_policy() -> None:
    assert set(tasks_command.CALIBRATION_POLICIES) == set(calibrate.POLICIES)
    for command, extra in (("calibrate", {"model"}), ("tasks", set())):
        params = {p.name: p for p in cli_module.cli.commands[command].params}
        choice = params["policy" if command == "calibrate" else "calibrate_policy"].type
        assert isinstance(choice, click.Choice) and set(choice.choices) == set(calibrate.POLICIES) | extra


def test_envc_calibrate_writes_kept_review_and_counts(task_dir: Path, task_set: list[dict[str, Any]]) -> None:
    result = run("calibrate", task_dir, *SPECS, "--policy", "flaky-gold", "-k", "8", "--seed", "2")
    assert result.exit_code == 0, result.stderr
    assert "calibrated 14 tasks with the flaky-gold policy, k=8" in result.stderr
    data = json.loads((task_dir / "calibration.json").read_text(encoding="utf-8"))
    kept = export.read_tasks(task_dir / "calibrated.jsonl")
    review = export.read_tasks(task_dir / "review.jsonl")
    assert data["tasks"] == 14 and data["kept"] == len(kept) > 0 and data["review"] == len(review)
    assert data["kept"] + data["too_easy"] + data["review"] == 14
    assert all(0 < data["passes"][t["id"]] < 8 for t in kept)
    assert [t["id"] for t in review] == data["review_ids"]
    assert all(t in task_set for t in kept + review)  # rows are the tasks, unchanged
    first = {name: (task_dir / name).read_bytes() for name in ("calibrated.jsonl", "review.jsonl", "calibration.json")}
    assert run("calibrate", task_dir, *SPECS, "--policy", "flaky-gold", "--seed", "2").exit_code == 0
    assert first == {name: (task_dir / name).read_bytes() for name in first}


def test_envc_calibrate_with_gold_and_nothing(task_dir: Path) -> None:
    assert run("calibrate", task_dir, *SPECS, "--policy", "gold", "-k", "3").exit_code == 0
    data = json.loads((task_dir / "calibration.json").read_text(encoding="utf-8"))
    assert (data["kept"], data["too_easy"], data["review"], data["histogram"]["3"]) == (0, 14, 0, 14)
    assert (task_dir / "calibrated.jsonl").read_text(encoding="utf-8") == ""
    assert run("calibrate", task_dir, *SPECS, "--policy", "nothing", "-k", "3").exit_code == 0
    assert len(export.read_tasks(task_dir / "review.jsonl")) == 14


def test_envc_calibrate_bad_inputs_exit_2_with_a_reason(task_dir: Path, tmp_path: Path) -> None:
    lines = (task_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    missing = run("calibrate", tmp_path / "none", *SPECS)
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    (task_dir / "tasks.jsonl").write_text(lines[0] + "\n{oops\n", encoding="utf-8")
    broken = run("calibrate", task_dir, *SPECS)
    assert broken.exit_code == 2 and "tasks.jsonl:2: not a JSON line" in broken.stderr
    (task_dir / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    fewer = run("calibrate", task_dir, SPECS[0])
    assert fewer.exit_code == 2 and "`bfcl_ticket` is not among the specs given" in fewer.stderr
    first = json.loads(lines[0])
    first["initial_state"][first["envs"][0]]["scenario"] = "nowhere"
    (task_dir / "tasks.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    scenario = run("calibrate", task_dir, *SPECS)
    assert scenario.exit_code == 2 and "has no scenario `nowhere`" in scenario.stderr
    (task_dir / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    no_spec = run("calibrate", task_dir, tmp_path / "missing.envspec")
    assert no_spec.exit_code == 2
    for result in (missing, broken, fewer, scenario, no_spec):
        assert "Traceback" not in result.stderr and "Usage:" not in result.stderr
    assert not (task_dir / "calibration.json").exists()


def test_envc_tasks_calibrate(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("tasks", SPECS[0], "-n", "6", "--seed", "3", "-o", out, "--calibrate", "gold", "-k", "2")
    assert result.exit_code == 0, result.stderr
    data = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    assert data["policy"] == "gold" and data["k"] == 2 and data["too_easy"] == 6
    assert len(export.read_tasks(out / "tasks.jsonl")) == 6
    plain = run("tasks", SPECS[0], "-n", "6", "--seed", "3", "-o", tmp_path / "plain")
    assert plain.exit_code == 0 and not (tmp_path / "plain" / "calibration.json").exists()
