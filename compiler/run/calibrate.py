"""Stage 8e, calibrate: run a policy k times per task and keep the tasks it sometimes
passes.

A task every run passes teaches a policy nothing, and so does one no run passes; the
paper runs a model 8 times per task and drops both. Here a `Policy` plays an `Episode`:
the task's environments opened from its `initial_state` (through the generated
packages' `Environment(...).call(...)`, tools named as the task's `tools` name them),
at most `max_turns` calls and `timeout_s` seconds; the package's `score` judges the
final states. `calibrate` splits the tasks by their binary pass counts: `kept`
(0 < passes < k), `too_easy` (k of k) and `review` (0 of k: a task no run solves may be
broken rather than hard, so it goes to a review list, not silently away).

The policies are a model (`compiler.run.rollout.ModelPolicy`: the agent loop against an
OpenAI-compatible endpoint) and the baselines: `gold` (replays the gold calls; an
oracle, so every task is too easy), `nothing`, `random` (valid calls drawn as the
sampler draws them) and `flaky-gold` (gold with each call skipped now and then: pass
rates between 0 and 1). Run `i` of a task draws from
`random.Random(f"calibrate:{seed}:{task id}:{i}")` alone, so counts do not depend on the
order (or the machine) runs are made in; the runs go through a `compiler.run.scale`
executor: threads here, or Ray. A run that fails for infrastructure reasons (the
endpoint, a timeout, an internal error of the environment) has no pass or fail: its task
is listed as `unscorable` and kept out of the split rather than counted as a failure.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from compiler.build import packages
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.run import scale
from compiler.synth import sample

K = 8
RANDOM_CALLS = 8
"""Calls the random policy makes per episode (fewer when `max_turns` is lower)."""
FLAKY_SKIP = 0.25
"""The chance that the flaky-gold policy skips a gold call."""


class CalibrationError(ValueError):
    """Tasks that do not fit the environments given (the message names the task)."""


@dataclass(frozen=True)
class Ending:
    """How a policy's episode ended when not by the agent finishing: `ended` is
    `invalid_call` or `turn_limit` (a failure of the agent, reward 0) or `timeout`,
    `env_error` or `endpoint_error` (infrastructure: `scorable` is False)."""

    ended: str
    reason: str
    scorable: bool

    @property
    def scored(self) -> bool:
        """Whether the scorer judges the final states (only when the agent finished)."""
        return self.ended == "done"


FINISHED = Ending("done", "", True)
UNSCORABLE_ENDINGS = frozenset({"timeout", "env_error", "endpoint_error"})


# =========================================================================== episodes


def turn_error(kind: str, message: str) -> dict[str, Any]:
    """A refused call, shaped like the generated packages' errors."""
    return {"error": {"kind": kind, "message": message}}


def is_internal_error(result: Any) -> bool:
    """The package's answer to an exception inside a tool: an environment bug, never the
    agent's fault."""
    return sample.is_failure(result) and isinstance(result["error"], dict) and result["error"].get("kind") == "internal"


class Episode:
    """One run of a task: fresh sessions from its initial state, calls by the tool names
    the task gives the agent, at most `max_turns` of them within `timeout_s` seconds, each
    call at most `call_timeout_s` (None: only the task's time), as in `envc serve`."""

    def __init__(
        self,
        task: Mapping[str, Any],
        envs: Mapping[str, sample.SampleEnv],
        call_timeout_s: float | None = CALL_TIMEOUT_S,
    ) -> None:
        self.task = task
        self.call_timeout_s = call_timeout_s
        self.envs = {name: envs[name] for name in task["envs"]}
        self.cross = len(task["envs"]) > 1
        self.sessions: dict[str, Any] = {}
        for name, start in task["initial_state"].items():
            self.sessions[name], _ = packages.open_at_start(self.envs[name].package, start)
        self.initial = {name: session.state() for name, session in self.sessions.items()}
        self.max_turns = int(task["max_turns"])
        self.deadline = time.monotonic() + float(task["timeout_s"])
        self.tools = [str(tool["function"]["name"]) for tool in task["tools"]]
        self.transcript: list[dict[str, Any]] = []

    @property
    def turns(self) -> int:
        return len(self.transcript)

    @property
    def over(self) -> bool:
        return self.turns >= self.max_turns or time.monotonic() > self.deadline

    def resolve(self, tool: str) -> tuple[str, str] | None:
        """The environment and its own tool name behind a tool of the task, if any."""
        if tool not in self.tools:
            return None
        if self.cross:
            env, _, own = tool.partition(sample.CROSS_SEPARATOR)
            return (env, own) if env in self.envs else None
        return self.task["envs"][0], tool

    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> Any:
        """Call a tool: its JSON result or JSON error. Past `max_turns` a call is refused;
        past `timeout_s`, or of a tool the task does not offer, it is refused and takes a
        turn. A call still running `call_timeout_s` seconds on, or at `timeout_s`, is
        stopped by the package (the domain error `timeout`, nothing changed)."""
        limit = self.call_timeout_s
        if self.turns >= self.max_turns:
            return turn_error("turn_limit", f"the task allows {self.max_turns} calls")
        if time.monotonic() > self.deadline:
            result: Any = turn_error("timeout", f"the task allows {self.task['timeout_s']} s")
        elif (target := self.resolve(tool)) is None:
            result = turn_error("not_found", f"there is no tool `{tool}`")
        else:
            stop = self.deadline if limit is None else min(self.deadline, time.monotonic() + limit)
            result, _ = self.sessions[target[0]].call_and_commit(
                target[1], dict(args or {}), None, lambda: time.monotonic() > stop
            )
        self.transcript.append({"tool": tool, "args": dict(args or {}), "result": result})
        return result

    def view(self, env: str) -> Any:
        """The live state of one environment, for reading (baseline policies draw
        arguments from it; a model sees only call results)."""
        return self.sessions[env].view()

    def score(self) -> dict[str, Any]:
        """The package's scorer on the final states."""
        finals = {name: session.state() for name, session in self.sessions.items()}
        scorer = self.envs[self.task["envs"][0]].package.scoring
        result: dict[str, Any] = scorer.score(self.task, finals, self.initial)
        return result


# =========================================================================== policies


class Policy(Protocol):
    """Plays one episode of a task through `episode.call`; returns None when the agent
    finished (the episode is then scored), or the `Ending` that cut it short. `rng` is
    the run's own seeded generator. Policies are pickled to Ray workers, so they hold
    plain settings, not clients."""

    @property
    def name(self) -> str: ...

    def play(self, task: Mapping[str, Any], episode: Episode, rng: random.Random) -> Ending | None: ...


@dataclass(frozen=True)
class DoNothing:
    name: str = "nothing"

    def play(self, task: Mapping[str, Any], episode: Episode, rng: random.Random) -> Ending | None:
        return None


@dataclass(frozen=True)
class Gold:
    """Replays the gold calls: an oracle (every audited task passes)."""

    name: str = "gold"

    def play(self, task: Mapping[str, Any], episode: Episode, rng: random.Random) -> Ending | None:
        for call in task["gold_calls"]:
            episode.call(call["tool"], call["args"])
        return None


@dataclass(frozen=True)
class FlakyGold:
    """Gold with each call skipped with probability `skip`."""

    skip: float = FLAKY_SKIP
    name: str = "flaky-gold"

    def play(self, task: Mapping[str, Any], episode: Episode, rng: random.Random) -> Ending | None:
        for call in task["gold_calls"]:
            if rng.random() >= self.skip:
                episode.call(call["tool"], call["args"])
        return None


@dataclass(frozen=True)
class RandomCalls:
    """Random valid calls: a tool of the task at random, arguments drawn from the live
    state, the world and earlier results as the sampler draws them (compiler/synth/sample.py),
    but never from the spec's value sources, which no agent sees."""

    calls: int = RANDOM_CALLS
    name: str = "random"

    def play(self, task: Mapping[str, Any], episode: Episode, rng: random.Random) -> Ending | None:
        pool = sample.Pool()
        drawers = {name: sample.ArgumentDrawer(env, rng, pool, sources=False) for name, env in episode.envs.items()}
        tools = sorted(episode.tools)
        for _ in range(min(self.calls, episode.max_turns) if tools else 0):
            tool = rng.choice(tools)
            target = episode.resolve(tool)
            if target is None or target[1] not in episode.envs[target[0]].tools:
                episode.call(tool, {})
                continue
            env, own = target
            result = episode.call(
                tool, drawers[env].draw(episode.envs[env].tools[own], episode.view(env), lenient=True)
            )
            if sample.is_failure(result):
                drawers[env].learn(own, result["error"])
            else:
                pool.add(result)
        return None


POLICIES: dict[str, Policy] = {p.name: p for p in (RandomCalls(), Gold(), DoNothing(), FlakyGold())}


# =========================================================================== calibration


@dataclass
class Calibration:
    """Pass counts per task and the split they give."""

    policy: str
    k: int
    seed: int
    passes: list[tuple[str, int]] = field(default_factory=list)
    """(task id, runs that passed), in the tasks' order."""
    kept: list[dict[str, Any]] = field(default_factory=list)
    too_easy: list[dict[str, Any]] = field(default_factory=list)
    review: list[dict[str, Any]] = field(default_factory=list)
    unscorable: list[dict[str, Any]] = field(default_factory=list)
    """Tasks with a run that failed for infrastructure reasons: not split, to rerun."""
    failures: dict[str, list[str]] = field(default_factory=dict)
    """Task id -> `ended: reason` of each of its unscorable runs."""
    rewards: list[float] = field(default_factory=list)
    """Rewards of the scorable runs."""

    def to_json(self) -> dict[str, Any]:
        histogram = {str(n): 0 for n in range(self.k + 1)}
        for _, count in self.passes:
            histogram[str(count)] += 1
        runs = len(self.rewards)
        return {
            "policy": self.policy,
            "k": self.k,
            "seed": self.seed,
            "tasks": len(self.passes),
            "kept": len(self.kept),
            "too_easy": len(self.too_easy),
            "review": len(self.review),
            "unscorable": len(self.unscorable),
            "pass_rate": round(sum(c for _, c in self.passes) / runs, 4) if runs else 0.0,
            "mean_reward": round(sum(self.rewards) / len(self.rewards), 6) if self.rewards else 0.0,
            "histogram": histogram,
            "passes": {task_id: count for task_id, count in self.passes},
            "too_easy_ids": [t["id"] for t in self.too_easy],
            "review_ids": [t["id"] for t in self.review],
            "unscorable_ids": [t["id"] for t in self.unscorable],
            "unscorable_runs": self.failures,
        }


def check_tasks(tasks: Sequence[Mapping[str, Any]], envs: Mapping[str, sample.SampleEnv], source: str = "") -> None:
    """Each task's environments, scenarios and gold tools exist among `envs` (so an
    episode can start); raises CalibrationError naming the task (and `source`, the file)."""
    for number, task in enumerate(tasks, 1):
        where = f"{source + ': ' if source else ''}task {number} ({task.get('id')})"
        for env_name in task["envs"]:
            env = envs.get(env_name)
            if env is None:
                given = ", ".join(sorted(envs)) or "none"
                raise CalibrationError(f"{where}: environment `{env_name}` is not among the specs given ({given})")
            scenario = task["initial_state"][env_name]["scenario"]
            if scenario not in env.scenarios():
                raise CalibrationError(f"{where}: `{env_name}` has no scenario `{scenario}`")
        episode_tools = {str(t["function"]["name"]) for t in task["tools"]}
        for call in task["gold_calls"]:
            own = str(call["tool"]).split(sample.CROSS_SEPARATOR, 1)[-1] if len(task["envs"]) > 1 else call["tool"]
            if call["tool"] not in episode_tools or own not in envs[call["env"]].tools:
                raise CalibrationError(f"{where}: gold call `{call['tool']}` is not a tool of the task")
        try:
            Episode(task, envs)
        except Exception as exc:  # the package refuses the start state (`changes` it does not have)
            raise CalibrationError(f"{where}: cannot start an episode: {exc}") from exc


@dataclass(frozen=True)
class Run:
    """One seeded run of a policy on a task: a job for a `compiler.run.scale` executor."""

    task: dict[str, Any]
    policy: Policy
    seed: int
    index: int


@dataclass(frozen=True)
class Judged:
    """How an episode ended and, when the agent finished, the scorer's result."""

    ending: Ending
    score: dict[str, Any] | None


def judge(episode: Episode, ending: Ending) -> Judged:
    """Score a finished episode; an internal error of the environment during it, or of
    its scorer, makes it unscorable instead."""
    if not ending.scored:
        return Judged(ending, None)
    if any(is_internal_error(turn["result"]) for turn in episode.transcript):
        return Judged(Ending("env_error", "a tool failed with an internal error of the environment", False), None)
    try:
        return Judged(ending, episode.score())
    except Exception as exc:  # the scorer catches malformed verifiers itself; this is its bug
        return Judged(Ending("env_error", f"the scorer raised {type(exc).__name__}: {exc}", False), None)


def run_once(
    task: Mapping[str, Any], envs: Mapping[str, sample.SampleEnv], policy: Policy, seed: int, run: int
) -> dict[str, Any]:
    """One seeded episode of `policy` on `task`: the scorer's result (reward 0 for an
    invalid call or the turn limit, None for an unscorable run) with `ended`, `reason`
    and `scorable`."""
    episode = Episode(task, envs)
    ending = policy.play(task, episode, random.Random(f"calibrate:{seed}:{task['id']}:{run}")) or FINISHED
    judged = judge(episode, ending)
    outcome = {"ended": judged.ending.ended, "reason": judged.ending.reason, "scorable": judged.ending.scorable}
    if judged.score is not None:
        return {**judged.score, **outcome}
    return {**outcome, "reward": 0.0 if judged.ending.scorable else None, "passed": False}


def play_run(envs: Mapping[str, sample.SampleEnv], run: Run) -> dict[str, Any]:
    """`run_once` of a `Run` (the executors' job function)."""
    return run_once(run.task, envs, run.policy, run.seed, run.index)


def calibrate(
    tasks: Sequence[dict[str, Any]],
    envs: Mapping[str, sample.SampleEnv],
    policy: Policy,
    k: int = K,
    seed: int = 0,
    executor: scale.Executor | None = None,
    progress: scale.Progress | None = None,
) -> Calibration:
    """Run `policy` k times per task (on `executor`, by default in this thread); split the
    tasks by how many runs passed."""
    if k < 1:
        raise CalibrationError("k must be at least 1")
    check_tasks(tasks, envs)
    runs = [Run(dict(task), policy, seed, index) for task in tasks for index in range(k)]
    outcomes = (executor or scale.LocalExecutor(envs)).map(play_run, runs, progress)
    result = Calibration(policy=policy.name, k=k, seed=seed)
    for number, task in enumerate(tasks):
        scores = outcomes[number * k : (number + 1) * k]
        scored = [s for s in scores if s["scorable"]]
        passes = sum(bool(s["passed"]) for s in scored)
        result.passes.append((task["id"], passes))
        result.rewards.extend(float(s["reward"]) for s in scored)
        if len(scored) < k:
            result.unscorable.append(task)
            result.failures[task["id"]] = [f"{s['ended']}: {s['reason']}" for s in scores if not s["scorable"]]
        else:
            (result.too_easy if passes == k else result.review if passes == 0 else result.kept).append(task)
    return result
