"""Stage 8c, tasks: verifiable RL tasks from executable tool chains, audited before kept.

The run (`synthesise`): the specs' own tasks first (compiler/synth/declared_tasks.py), then
a task per sampled chain (compiler/synth/task_build.py; a file-workspace task for a share of
the chains of a file-workspace environment, compiler/synth/workspace.py) and, in
one-environment runs, draws of the task families the specs declare
(compiler/synth/families.py) among them, each kept only if every audit passes
(compiler/synth/audits.py). The report counts the candidates, what
each audit passed, why candidates were rejected (with an example of each reason) and what
the kept tasks ask of an agent (compiler/synth/task_quality.py) (DIR/report.json).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from compiler import ir
from compiler.synth import families, sample
from compiler.synth.audits import AUDITS, LLM_AUDITS, AuditFailed, audit, audit_rng, literal_calls
from compiler.synth.declared_tasks import declared_tasks
from compiler.synth.task_build import TaskOptions, build_task, is_workspace_env, score_calls, tool_of
from compiler.synth.task_quality import quality
from compiler.synth.wording import WordingError
from compiler.synth.workspace import workspace_task

CANDIDATES_PER_TASK = 8
"""At most this many chains are drawn per task asked for."""


WORKSPACE_SHARE = 0.5
"""Share of one-environment chains of a file-workspace environment that become workspace
tasks (the paper's four artifacts from a seeded plan); the rest stay chain tasks."""
FAMILY_SHARE = 0.25
"""Share of the candidates after the declared tasks that are draws of the specs' task
families (round-robin over every family of every environment), in one-environment runs;
the rest are sampled chains."""


@dataclass
class Report:
    """Audit pass rates over every candidate, and why candidates were rejected."""

    candidates: int = 0
    kept: int = 0
    passed: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    per_env: Counter[str] = field(default_factory=Counter)
    baseline_rewards: list[float] = field(default_factory=list)
    declared: dict[str, str] = field(default_factory=dict)
    """Each spec `task`: "kept", "rejected by AUDIT: why" or "not expressible: why"."""
    audits: tuple[str, ...] = AUDITS
    """The audits run: `AUDITS`, then `LLM_AUDITS` when a model writes the requests."""
    llm: dict[str, Any] = field(default_factory=dict)
    """With a model: requests asked and accepted per attempt, failures, answers from the lock."""
    examples: dict[str, str] = field(default_factory=dict)
    """One example (the first) of why candidates were rejected, per reason."""
    chains_rejected: dict[str, int] = field(default_factory=dict)
    """Why sampled chains were not kept, before any task was made of them: among them the
    write tools left out for want of a value source (`no value source for P of T`)."""
    quality: dict[str, Any] = field(default_factory=dict)
    """What the kept tasks ask of an agent (compiler/synth/task_quality.py)."""
    families: dict[str, FamilyCount] = field(default_factory=dict)
    """Per declared family (`env.family`): its draws and what became of them."""

    def reject(self, reason: str, example: str) -> None:
        self.rejected[reason] += 1
        self.examples.setdefault(reason, example)

    def leading_rejections(self, count: int = 3) -> list[tuple[str, int, str]]:
        """The most frequent rejection reasons, each with its example."""
        return [(reason, n, self.examples.get(reason, "")) for reason, n in self.rejected.most_common(count)]

    def to_json(self) -> dict[str, Any]:
        rates = {a: round(self.passed[a] / self.candidates, 4) if self.candidates else 0.0 for a in self.audits}
        floor = sum(self.baseline_rewards) / len(self.baseline_rewards) if self.baseline_rewards else 0.0
        return {
            "candidates": self.candidates,
            "kept": self.kept,
            "keep_rate": round(self.kept / self.candidates, 4) if self.candidates else 0.0,
            "audit_pass_rates": rates,
            "rejected": dict(sorted(self.rejected.items())),
            "tasks_per_env": dict(sorted(self.per_env.items())),
            "baseline_mean_reward": round(floor, 6),
            "declared": dict(sorted(self.declared.items())),
            "rejection_examples": dict(sorted(self.examples.items())),
            "chains_rejected": dict(sorted(self.chains_rejected.items())),
            "quality": self.quality,
            "families": {name: count.to_json() for name, count in sorted(self.families.items())},
            **({"llm": self.llm} if self.llm else {}),
        }


@dataclass
class FamilyCount:
    """What became of one family's draws: tried, discarded (no task: a `require` or the
    solution failed, by reason), rejected (by audit, or as a duplicate), kept."""

    kind: str
    tried: int = 0
    discarded: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    kept: int = 0
    note: str = ""
    """Why the family was not drawn at all (its package was compiled without it)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tried": self.tried,
            "discarded": dict(sorted(self.discarded.items())),
            "rejected": dict(sorted(self.rejected.items())),
            "kept": self.kept,
            **({"note": self.note} if self.note else {}),
        }


class RequestWriter(Protocol):
    """Writes a task's request with a model (compiler/synth/model_requests.py): the task with the new
    request, audited again, or `AuditFailed` (`llm_request`, `rubric`) with the reason."""

    def rewrite(self, task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> dict[str, Any]: ...

    def summary(self) -> dict[str, Any]:
        """What the report says about the model's requests (asked, accepted, from the lock)."""
        ...


class ChainError(ValueError):
    """A chain row given to `synthesise` that does not fit the environments: `number`
    counts the rows from 1 (the line of a chains file), `problem` says what is wrong."""

    def __init__(self, number: int, problem: str) -> None:
        super().__init__(f"chain {number}: {problem}")
        self.number = number
        self.problem = problem


def synthesise(
    sampler: sample.Sampler,
    options: TaskOptions,
    chains: Sequence[dict[str, Any]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    declared: bool = True,
    requests: RequestWriter | None = None,
) -> tuple[list[dict[str, Any]], Report]:
    """The specs' own tasks that pass the audits first (`declared`), then tasks from
    chains (given, or sampled with the sampler's options), each audited; stops at
    `options.tasks` kept. With `requests`, a model writes each sampled task's request
    (audited again, and graded by the rubric). Same inputs and seed, same tasks."""
    report = Report(audits=AUDITS + LLM_AUDITS if requests is not None else AUDITS)
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    problems: set[str] = set()
    single = options.envs[0] == 1  # the specs' tasks each use one environment
    for name, task, why in declared_tasks(sampler.envs, options) if declared and single else []:
        report.candidates += 1
        if task is None:
            report.declared[name] = f"not expressible: {why}"
            report.reject("not_expressible", f"task {name}: {why}")
            continue
        try:
            rewards = audit(task, sampler.envs, random.Random(f"audit:{name}"))
        except AuditFailed as failed:
            report.declared[name] = f"rejected by {failed.audit}: {failed.why}"
            report.reject(failed.audit, f"task {name}: {failed.why}")
            report.passed.update(AUDITS[: AUDITS.index(failed.audit)])
            continue
        report.declared[name] = "kept"
        report.passed.update(AUDITS)
        report.baseline_rewards.extend(rewards)
        if len(kept) < options.tasks:
            kept.append(task)
            seen.add(task["id"])
            report.kept += 1
            report.per_env.update(task["envs"])
    if chains is None:
        chains, summary = sample.sample(sampler)
        report.chains_rejected = dict(summary.rejected)
    drawn = family_draws(sampler.envs, report, options.seed) if single else []
    for number, chain in interleaved(chains, drawn):
        if report.kept >= options.tasks:
            break
        counted = report.families.get(f"{chain[0].name}.{chain[1].name}") if isinstance(chain, tuple) else None
        if isinstance(chain, tuple):
            assert counted is not None
            counted.tried += 1
            try:
                task = families.draw_family_task(*chain, options)
            except families.FamilyDiscarded as discarded:
                counted.discarded[discarded.reason] += 1
                continue
        else:
            check_chain(chain, sampler.envs, number)
            try:
                task = candidate_task(chain, sampler.envs, options)
            except WordingError as unworded:
                report.candidates += 1
                report.reject("wording", f"{chain['id']}: {unworded.reason}")
                continue
        report.candidates += 1
        if task["id"] in seen or problem_key(task) in problems:
            report.reject("duplicate", f"{task['id']}: the same start and verifier as a kept task")
            if counted is not None:
                counted.rejected["duplicate"] += 1
            continue
        try:
            rewards = audit(task, sampler.envs, audit_rng(task))
            if requests is not None:
                task = requests.rewrite(task, sampler.envs)
        except AuditFailed as failed:
            report.reject(failed.audit, f"{task['id']}: {failed.why}")
            report.passed.update(report.audits[: report.audits.index(failed.audit)])
            if counted is not None:
                counted.rejected[failed.audit] += 1
            continue
        if counted is not None:
            counted.kept += 1
        report.passed.update(report.audits)
        report.baseline_rewards.extend(rewards)
        seen.add(task["id"])
        problems.add(problem_key(task))
        kept.append(task)
        report.kept += 1
        report.per_env.update(task["envs"])
        if progress is not None:
            progress(report.kept, options.tasks)
        if report.kept >= options.tasks:
            break
    if requests is not None:
        report.llm = requests.summary()
    literal = [score_calls(sampler.envs, t, literal_calls(t))["reward"] for t in kept if "seed" in t["source"]]
    report.quality = quality(kept, sampler.envs, literal)
    return kept, report


FamilyDraw = tuple[sample.SampleEnv, ir.FamilyDecl, str]
"""One draw of a family: its environment, its declaration and the draw's seed."""


def family_draws(envs: dict[str, sample.SampleEnv], report: Report, seed: int) -> Iterator[FamilyDraw]:
    """Draws of every family of every environment, round-robin (so each gets tries), the
    draw's seed `SEED:ENV.FAMILY:ROUND`; families the compiled package lacks are noted in
    the report and not drawn."""
    drawable: list[tuple[sample.SampleEnv, ir.FamilyDecl]] = []
    for env in envs.values():
        can_run = {decl.name for decl in families.runnable(env)}
        for decl in env.model.families:
            count = report.families[f"{env.name}.{decl.name}"] = FamilyCount(kind=decl.kind)
            if decl.name in can_run:
                drawable.append((env, decl))
            else:
                count.note = "not in the compiled package (compile the spec again)"
    round_ = 0
    while drawable:
        for env, decl in drawable:
            yield env, decl, f"{seed}:{env.name}.{decl.name}:{round_}"
        round_ += 1


def interleaved(
    chains: Sequence[dict[str, Any]], draws: Iterable[FamilyDraw]
) -> Iterator[tuple[int, dict[str, Any] | FamilyDraw]]:
    """The candidates in order: each chain (numbered from 1, as its line), with family
    draws among them so that they make `FAMILY_SHARE` of all (none when there are none)."""
    stream = iter(draws)
    tries = 0
    for number, chain in enumerate(chains, 1):
        while tries < FAMILY_SHARE * (number + tries):
            draw = next(stream, None)
            if draw is None:
                break
            tries += 1
            yield number, draw
        yield number, chain


def problem_key(task: dict[str, Any]) -> str:
    """What makes two tasks the same problem, whatever their wording: the start and the
    verifier (two requests for one sign-in are one task)."""
    return json.dumps([task["initial_state"], task["verifier"]], sort_keys=True, default=str)


def candidate_task(chain: dict[str, Any], envs: dict[str, sample.SampleEnv], options: TaskOptions) -> dict[str, Any]:
    """The task of a chain: a workspace task (`workspace_task`) for a share of the
    one-environment chains of a file-workspace environment, else the chain's own task."""
    names = chain["envs"]
    if len(names) == 1 and is_workspace_env(envs[names[0]]):
        if random.Random(f"workspace-share:{chain['seed']}").random() < WORKSPACE_SHARE:
            task = workspace_task(envs[names[0]], chain, options)
            if task is not None:
                return task
    return build_task(chain, envs, options)


def check_chain(chain: dict[str, Any], envs: dict[str, sample.SampleEnv], number: int) -> None:
    """A chain row names environments and tools that exist, with the fields a row has."""
    keys = {"id", "seed", "envs", "scenarios", "calls"}
    if not isinstance(chain, dict) or not keys <= set(chain):
        raise ChainError(number, f"a row has {', '.join(sorted(keys))}")
    for name in chain["envs"]:
        if name not in envs:
            raise ChainError(number, f"environment `{name}` is not among the specs given")
    for call in chain["calls"]:
        env = envs.get(str(call.get("env"))) if isinstance(call, dict) else None
        if env is None or tool_of(call) not in env.tools or not isinstance(call.get("args"), dict):
            raise ChainError(number, f"call {call!r} names no tool of its environment")


def sampler_for(envs: dict[str, sample.SampleEnv], options: TaskOptions, weights: Any = None) -> sample.Sampler:
    """A sampler drawing enough chains for `options.tasks` audited tasks."""
    sample_options = sample.SampleOptions(
        chains=options.tasks * CANDIDATES_PER_TASK,
        seed=options.seed,
        envs=options.envs,
        min_len=options.min_len,
        max_len=options.max_len,
    )
    return (
        sample.Sampler(envs, sample_options, weights) if weights is not None else sample.Sampler(envs, sample_options)
    )


def tasks_to_jsonl(tasks: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(t, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for t in tasks)
