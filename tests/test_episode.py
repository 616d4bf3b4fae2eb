"""The Gymnasium-style episode every generated package ships (episode.py): tool calls
through `step`, the task's verifier when the agent is done, and the outcomes a trainer
must tell apart (success, failure, recoverable domain errors, infrastructure errors)."""

from __future__ import annotations

import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from shipped import spec_path

from compiler.analyse import analyse_file, analyse_source
from compiler.build.packages import import_package
from compiler.check.package import write_tree
from compiler.lower import lower
from compiler.synth import task_build, tasks
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent


def _package(tmp: Path, spec: Path | None = None, text: str = "", name: str = "") -> tuple[Any, ModuleType]:
    """A freshly lowered package (so these tests see the templates as they are now)."""
    result = analyse_file(spec) if spec is not None else analyse_source(text, str(tmp / f"{name}.envspec"))
    env = result.environment
    assert env is not None, [d.message for d in result.diagnostics]
    folder = tmp / f"{env.header.name}_episode"
    write_tree(folder, lower(env, f"{env.header.name}.envspec"))
    return env, import_package(folder, f"_episode_test_{env.header.name}_{abs(hash(str(tmp)))}")


@pytest.fixture(scope="module")
def ticketing(tmp_path_factory: pytest.TempPathFactory) -> tuple[SampleEnv, ModuleType]:
    tmp = tmp_path_factory.mktemp("episode")
    env, package = _package(tmp, spec_path("ticketing"))
    folder = tmp / "ticketing_episode"
    return load_env(env, folder), package


@pytest.fixture(scope="module")
def task(ticketing: tuple[SampleEnv, ModuleType]) -> dict[str, Any]:
    env, _ = ticketing
    options = task_build.TaskOptions(tasks=1, seed=3)
    kept, _ = tasks.synthesise(tasks.sampler_for({"ticketing": env}, options), options, declared=False)
    return kept[0]


def _play(package: ModuleType, task: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    episode = package.Episode()
    observation, _ = episode.reset(task=task)
    assert observation["prompt"] == task["prompt"] and "close_ticket" in observation["tools"]
    for call in calls:
        _, reward, terminated, truncated, info = episode.step({"name": call["tool"], "arguments": call["args"]})
        assert reward == 0.0 and not terminated and not truncated
    _, reward, terminated, truncated, info = episode.step(None)
    assert terminated and not truncated and info["scorable"]
    return reward, info


def test_gold_scores_1_and_nothing_0(ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]) -> None:
    _, package = ticketing
    reward, info = _play(package, task, task["gold_calls"])
    assert reward == 1.0 and info["score"]["passed"]
    assert _play(package, task, [])[0] == 0.0


def test_arguments_as_json_text_and_domain_errors_are_recoverable(
    ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]
) -> None:
    _, package = ticketing
    episode = package.Episode()
    episode.reset(task=task)
    observation, reward, terminated, _, info = episode.step({"name": "get_ticket", "arguments": '{"ticket_id": 999}'})
    assert observation["error"]["kind"] in ("not_found", "unauthenticated") and info["domain_error"] and not terminated
    for call in task["gold_calls"]:
        episode.step({"name": call["tool"], "arguments": call["args"]})
    assert episode.step(None)[1] == 1.0


@pytest.mark.parametrize(
    "call",
    [
        {"name": "no_such_tool", "arguments": {}},
        {"name": "get_ticket", "arguments": "{not json"},
        {"arguments": {}},
        42,
    ],
)
def test_an_invalid_call_ends_the_episode_unsuccessfully(
    call: Any, ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]
) -> None:
    _, package = ticketing
    episode = package.Episode()
    episode.reset(task=task)
    observation, reward, terminated, truncated, info = episode.step(call)
    assert (reward, terminated, truncated, info["ended"], info["scorable"]) == (0.0, True, False, "invalid_call", True)
    assert observation["error"]
    with pytest.raises(package.EpisodeError):
        episode.step(None)


def test_the_turn_limit_truncates(ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]) -> None:
    _, package = ticketing
    episode = package.Episode()
    episode.reset(task={**task, "max_turns": 2})
    episode.step({"name": "whoami", "arguments": {}})
    _, reward, terminated, truncated, info = episode.step({"name": "whoami", "arguments": {}})
    assert (reward, terminated, truncated, info["ended"]) == (0.0, False, True, "turn_limit")


def test_seed_reseeds_or_says_it_has_no_effect(tmp_path: Path, ticketing: tuple[SampleEnv, ModuleType]) -> None:
    _, package = ticketing
    # ticketing's task families draw random values, so the spec keeps rng_state: a seed reseeds it
    assert package.Episode().reset(scenario=None, seed=5)[1]["seed_effect"] == "reseeded"
    _, counter = _package(tmp_path, text=COUNTER, name="counter")
    assert counter.Episode().reset(seed=5)[1]["seed_effect"] == "none: this environment draws no random numbers"
    assert "seed_effect" not in counter.Episode().reset()[1]
    _, dice = _package(tmp_path, text=DICE, name="dice")
    rolls = []
    for seed in (1, 1, 2):
        episode = dice.Episode()
        _, info = episode.reset(seed=seed)
        assert info["seed_effect"] == "reseeded"
        rolls.append(episode.step({"name": "roll", "arguments": {}})[0])
    assert rolls[0] == rolls[1] != rolls[2]


def test_a_tool_may_be_called_step_or_score(tmp_path: Path) -> None:
    _, package = _package(tmp_path, text=DICE, name="dice")
    episode = package.Episode()
    episode.reset()
    assert episode.step({"name": "step", "arguments": {"n": 2}})[0] == 2
    assert episode.step({"name": "score", "arguments": {}})[0] == 2
    episode.close()
    with pytest.raises(package.EpisodeError):
        episode.step({"name": "step", "arguments": {"n": 1}})


COUNTER = """environment counter:
    title "Counter"

state:
    position: int = 0

tool step(n: int) -> int:
    position += n
    return position
"""


DICE = """environment dice:
    title "Dice"

state:
    position: int = 0

tool roll() -> int:
    return random_int(1, 1000000)

tool step(n: int) -> int:
    position += n
    return position

tool score() -> int:
    return position
"""


def test_a_task_of_several_environments_is_refused(
    ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]
) -> None:
    _, package = ticketing
    with pytest.raises(package.EpisodeError):
        package.Episode().reset(task={**task, "envs": ["ticketing", "team_calendar"]})
    with pytest.raises(package.EpisodeError):
        package.Episode().reset(task=task, scenario="help_desk_monday")


def test_a_task_takes_no_load_options(ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]) -> None:
    """A task's start is the one its verifier was shown to work from (as `envc serve`
    refuses `options` beside a task)."""
    _, package = ticketing
    with pytest.raises(package.EpisodeError, match="load options go with a scenario"):
        package.Episode().reset(task=task, options={"anything": 1})
    observation, _ = package.Episode().reset(task=task, options={})
    assert observation["prompt"] == task["prompt"]


def test_random_play_never_crashes(ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]) -> None:
    env, package = ticketing
    rng = random.Random(0)
    for _ in range(20):
        episode = package.Episode()
        episode.reset(task=task)
        for _ in range(5):
            tool = rng.choice(sorted(env.tools))
            _, _, terminated, truncated, _ = episode.step({"name": tool, "arguments": {"ticket_id": rng.randint(0, 5)}})
            if terminated or truncated:
                break
        else:
            assert 0.0 <= episode.step(None)[1] <= 1.0


def test_hostile_arguments_are_domain_errors_and_the_episode_scores(
    ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]
) -> None:
    _, package = ticketing
    episode = package.Episode()
    episode.reset(task=task)
    before = episode.state()
    deep: Any = []
    for _ in range(600):
        deep = [deep]
    for arguments in [
        {"title": "\ud800"},
        {"title": "t", "priority": float("nan")},
        {"title": deep},
        '{"ticket_id": 1' + "0" * 4000 + "}",
    ]:
        name = "get_ticket" if isinstance(arguments, str) else "create_ticket"
        observation, reward, terminated, truncated, info = episode.step({"name": name, "arguments": arguments})
        assert (reward, terminated, truncated, info["domain_error"]) == (0.0, False, False, True), observation
        assert observation["error"]["kind"] == "invalid_argument"
        assert episode.state() == before
    for call in task["gold_calls"]:
        episode.step({"name": call["tool"], "arguments": call["args"]})
    _, reward, terminated, _, info = episode.step(None)
    assert (reward, terminated, info["scorable"]) == (1.0, True, True)


def test_json_text_nested_past_the_parser_is_an_invalid_call(
    ticketing: tuple[SampleEnv, ModuleType], task: dict[str, Any]
) -> None:
    _, package = ticketing
    episode = package.Episode()
    episode.reset(task=task)
    _, reward, terminated, _, info = episode.step({"name": "whoami", "arguments": "[" * 100_000})
    assert (reward, terminated, info["ended"], info["scorable"]) == (0.0, True, "invalid_call", True)
