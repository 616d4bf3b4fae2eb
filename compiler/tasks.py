"""Stage 8c, tasks: verifiable RL tasks from executable tool chains, audited before kept.

Each task comes from one ground truth, a sampled chain (compiler/sample.py): its start
(a named scenario), its calls (the gold solution) and the state they leave. From it:

- the `prompt`, from seeded templates per tool that name every value a write call needs
  and the agent cannot look up (a value an earlier call returns is described, not named);
- the `verifier`, from the state difference the gold calls make: one check per changed
  path (`equals` its final value, or `absent`), and a collateral rule that nothing else
  may change;
- the OpenAI tool schemas of the environments involved, `max_turns` and `timeout_s`.

A candidate is kept only if every audit passes (`AUDITS`): gold scores 1, doing nothing
scores 0, perturbed gold fails, the prompt names what the checks expect and nothing the
environment computes, every check concerns a path a gold write changes and every gold
write is checked, no other arguments for the same tools pass, two replays agree, and
baseline "hacking" policies score 0. Scores come from the `scoring.py` every generated
package ships, so what is audited here is what trainers run.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler import ir, sample
from compiler.lower.schema import openai_tools

AUDITS = (
    "gold_scores_1",
    "nothing_scores_0",
    "perturbations_fail",
    "data_consistency",
    "information_separation",
    "objective_consistency",
    "answer_uniqueness",
    "determinism",
    "hacking_floor",
)
MAX_TURNS = 32
TIMEOUT_S = 300
UNIQUENESS_TRIES = 6
"""Other argument draws for the same tools tried by the uniqueness audit."""
RANDOM_CALLS = 8
"""Calls made by the random-valid-calls baseline."""
CANDIDATES_PER_TASK = 8
"""At most this many chains are drawn per task asked for."""
PARTIAL_FLOOR = 0.5
"""The most a baseline policy may earn on a partial-credit task (binary tasks: 0)."""


@dataclass(frozen=True)
class TaskOptions:
    tasks: int
    seed: int = 0
    envs: tuple[int, int] = (1, 1)
    min_len: int = 2
    max_len: int = 4
    max_turns: int = MAX_TURNS
    timeout_s: int = TIMEOUT_S


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

    def to_json(self) -> dict[str, Any]:
        rates = {a: round(self.passed[a] / self.candidates, 4) if self.candidates else 0.0 for a in AUDITS}
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
        }


class ChainError(ValueError):
    """A chain row given to `synthesise` that does not fit the environments."""


class AuditFailed(Exception):
    def __init__(self, audit: str, why: str) -> None:
        super().__init__(f"{audit}: {why}")
        self.audit = audit
        self.why = why


# =========================================================================== building a task


def build_task(
    chain: dict[str, Any],
    envs: dict[str, sample.SampleEnv],
    options: TaskOptions,
    request: str | None = None,
    checks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The task of one chain row (not yet audited); a declared task brings its own
    request and checks."""
    names: list[str] = chain["envs"]
    cross = len(names) > 1
    initial = {name: _start(envs[name], chain["scenarios"][name]) for name in names}
    gold = [{"env": c["env"], "tool": c["tool"], "args": c["args"]} for c in chain["calls"]]
    finals = replay(envs, {"initial_state": _initial_state(chain)}, gold, cross)[0]
    if checks is None:
        checks = [
            {"env": name, **check, "weight": 1.0}
            for name in names
            for check in expected_changes(initial[name], finals[name])
        ]
    allowed = {name: envs[name].package.scoring.changed_paths(initial[name], finals[name]) for name in names}
    rng = random.Random(chain["seed"])
    task: dict[str, Any] = {
        "envs": names,
        "initial_state": _initial_state(chain),
        "prompt": request if request is not None else prompt(chain, envs, initial, rng),
        "tools": [t for name in names for t in _tool_schemas(envs[name], cross)],
        "gold_calls": gold,
        "max_turns": options.max_turns,
        "timeout_s": options.timeout_s,
        "verifier": {"checks": checks, "collateral": {"allowed": allowed}},
        "reward": "partial" if any(envs[n].model.header.archetype == "file_workspace" for n in names) else "binary",
        "source": {"chain": chain["id"], "seed": chain["seed"]} if request is None else {"declared": chain["id"]},
    }
    digest = hashlib.sha256(json.dumps(task, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    return {"id": f"task-{digest}", **task}


def _initial_state(chain: dict[str, Any]) -> dict[str, Any]:
    """Per environment: the named scenario the chain starts from (None for S0) and the
    state fields set on top of it (none for sampled chains)."""
    return {name: {"scenario": chain["scenarios"][name], "changes": {}} for name in chain["envs"]}


def _start(env: sample.SampleEnv, scenario: str | None) -> dict[str, Any]:
    state: dict[str, Any] = env.package.Environment(scenario).state()
    return state


def _tool_schemas(env: sample.SampleEnv, cross: bool) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = openai_tools(env.model, env.model.path)["tools"]
    if not cross:
        return tools
    renamed = []
    for tool in tools:
        function = dict(tool["function"], name=f"{env.name}{sample.CROSS_SEPARATOR}{tool['function']['name']}")
        renamed.append({**tool, "function": function})
    return renamed


def expected_changes(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """One check per changed path: `equals` the final value, `absent` for a removed key;
    an appended list item is checked by its index. Runtime fields are not checked."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        checks: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            if not path and key in sample.BUILTIN_FIELDS:
                continue
            child = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key not in after:
                checks.append({"path": child, "op": "absent"})
            elif key not in before:
                checks.append({"path": child, "op": "equals", "expected": after[key]})
            else:
                checks.extend(expected_changes(before[key], after[key], child))
        return checks
    if isinstance(before, list) and isinstance(after, list):
        if len(before) == len(after):
            return [c for i, (b, a) in enumerate(zip(before, after)) for c in expected_changes(b, a, f"{path}/{i}")]
        if after[: len(before)] == before:
            return [
                {"path": f"{path}/{i}", "op": "equals", "expected": after[i]} for i in range(len(before), len(after))
            ]
    return [{"path": path or "/", "op": "equals", "expected": after}]


# --------------------------------------------------------------------------- prompts

OPENERS = ("Please", "Could you", "I need you to", "Go ahead and", "Kindly")
JOINERS = (", then ", ". After that, ", "; next, ", ", and then ")


def prompt(
    chain: dict[str, Any], envs: dict[str, sample.SampleEnv], initial: dict[str, Any], rng: random.Random
) -> str:
    """The user's request: each write call of the chain in words, its arguments named,
    except values an earlier call produced (described by where they come from)."""
    known = {name: _discoverable(envs[name], state) for name, state in initial.items()}
    produced: dict[Any, str] = {}
    phrases = []
    for call in chain["calls"]:
        env = envs[call["env"]]
        tool_name = call["tool"].split(sample.CROSS_SEPARATOR, 1)[-1]
        if env.tools[tool_name].writes:
            phrase = _phrase(tool_name, call["args"], known[call["env"]], produced)
            if len(chain["envs"]) > 1:
                phrase = f"in {env.model.header.title or env.name}, {phrase}"
            phrases.append(phrase)
            known[call["env"]] |= _scalars(list(call["args"].values()))  # named now
        for value in _scalars(call["result"]):
            produced.setdefault(value, _humane(tool_name))
    opener = rng.choice(OPENERS)
    text = phrases[0]
    for phrase in phrases[1:]:
        text += rng.choice(JOINERS) + phrase
    ending = "?" if opener == "Could you" else "."
    return f"{opener} {text}{ending}"


def _discoverable(env: sample.SampleEnv, state: Any) -> set[Any]:
    """Values an agent can find without being told: in the initial state, the world data,
    or the tools' schemas (enum members)."""
    members = {m for enum in env.model.enums for m in enum.members}
    return _scalars(state) | _scalars(env.world) | members


def _phrase(tool: str, args: dict[str, Any], known: set[Any], produced: dict[Any, str]) -> str:
    words = [_humane(tool)]
    for name, value in args.items():
        label = _humane(name[:-3] if name.endswith("_id") else name)
        scalar = isinstance(value, (str, int, float)) and not isinstance(value, bool)
        if scalar and value in produced and value not in known:
            words.append(f"{label}: the one the {produced[value]} step gave")
        else:
            words.append(f"{label} {_show(value)}")
    if len(words) == 1:
        return words[0]
    return f"{words[0]} ({', '.join(words[1:])})"


def _humane(name: str) -> str:
    return name.replace("_", " ").strip()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _scalars(value: Any) -> set[Any]:
    """Every scalar (not bool, not None) inside a JSON value, keys of objects included."""
    found: set[Any] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(k for k in item if isinstance(k, str))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            found.add(item)
    return found


# =========================================================================== running and scoring


def replay(
    envs: dict[str, sample.SampleEnv], task: dict[str, Any], calls: Sequence[dict[str, Any]], cross: bool = False
) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """Run calls on fresh sessions from the task's initial state: (final states, initial
    states, results)."""
    sessions = {}
    for name, start in task["initial_state"].items():
        session = envs[name].package.Environment(start["scenario"])
        if start.get("changes"):
            session = envs[name].package.Environment({**session.state(), **start["changes"]})
        sessions[name] = session
    initial = {name: s.state() for name, s in sessions.items()}
    results = [sessions[c["env"]].call(c["tool"].split(sample.CROSS_SEPARATOR, 1)[-1], c["args"]) for c in calls]
    return {name: s.state() for name, s in sessions.items()}, initial, results


def score_calls(
    envs: dict[str, sample.SampleEnv], task: dict[str, Any], calls: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    finals, initial, _ = replay(envs, task, calls)
    any_env = envs[task["envs"][0]]
    result: dict[str, Any] = any_env.package.scoring.score(task, finals, initial)
    return result


# =========================================================================== audits


def audit(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> list[float]:
    """Run every audit; raise AuditFailed at the first that fails. Returns the rewards the
    baseline policies got (all 0 for a kept binary task)."""
    gold = task["gold_calls"]
    first = score_calls(envs, task, gold)
    if not (first["passed"] and first["reward"] == 1.0):
        raise AuditFailed("gold_scores_1", first["failure_reason"] or f"gold scores {first['reward']}")
    nothing = score_calls(envs, task, [])
    if nothing["passed"] or nothing["reward"] != 0.0:
        raise AuditFailed("nothing_scores_0", f"doing nothing scores {nothing['reward']}")
    _perturbations_fail(task, envs, rng)
    _data_consistency(task, envs)
    _information_separation(task, envs)
    _objective_consistency(task, envs)
    _answer_uniqueness(task, envs, rng)
    second = score_calls(envs, task, gold)
    if second != first or replay(envs, task, gold)[0] != replay(envs, task, gold)[0]:
        raise AuditFailed("determinism", "two replays of gold differ")
    return _hacking_floor(task, envs, rng)


def _writes(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> list[int]:
    return [i for i, c in enumerate(task["gold_calls"]) if envs[c["env"]].tools[_tool(c)].writes]


def _tool(call: dict[str, Any]) -> str:
    return str(call["tool"]).split(sample.CROSS_SEPARATOR, 1)[-1]


def _must_fail(task: dict[str, Any], envs: dict[str, sample.SampleEnv], calls: list[dict[str, Any]], what: str) -> None:
    result = score_calls(envs, task, calls)
    if result["passed"] or result["reward"] >= 1.0:
        raise AuditFailed("perturbations_fail", f"{what} still passes")


def _perturbations_fail(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> None:
    gold = task["gold_calls"]
    writes = _writes(task, envs)
    last = writes[-1]
    _must_fail(task, envs, gold[:last] + gold[last + 1 :], "gold without its last write")
    for index in writes:
        changed = _other_argument(task, envs, index, rng)
        if changed is not None:
            _must_fail(task, envs, [*gold[:index], changed, *gold[index + 1 :]], f"call {index} with {changed['args']}")
        swapped = _swapped_write(task, envs, index, rng)
        if swapped is not None:
            _must_fail(task, envs, [*gold[:index], swapped, *gold[index + 1 :]], f"call {index} as {swapped['tool']}")


def _session_before(task: dict[str, Any], envs: dict[str, sample.SampleEnv], index: int) -> Any:
    """A live session of call `index`'s environment, with the gold calls before it made."""
    call = task["gold_calls"][index]
    start = task["initial_state"][call["env"]]
    session = envs[call["env"]].package.Environment(start["scenario"])
    for earlier in task["gold_calls"][:index]:
        if earlier["env"] == call["env"]:
            session.call(_tool(earlier), earlier["args"])
    return session


def _other_argument(
    task: dict[str, Any], envs: dict[str, sample.SampleEnv], index: int, rng: random.Random
) -> dict[str, Any] | None:
    """Call `index` with one argument drawn anew (a value the call accepts), if any."""
    call = task["gold_calls"][index]
    env = envs[call["env"]]
    tool = env.tools[_tool(call)]
    session = _session_before(task, envs, index)
    drawer = sample.ArgumentDrawer(env, rng, sample.Pool())
    undetermined = _undetermined_values(task, envs)
    for param in tool.params:
        value = call["args"].get(param.name)
        if param.name not in call["args"] or _scalars([value]) & undetermined:
            continue  # an argument the request leaves open may take any value
        for _ in range(4):
            args = dict(call["args"])
            args[param.name] = drawer.value(
                param, env.facts[tool.name].domains.get(param.name, []), session.view(), args
            )
            if args[param.name] != call["args"][param.name] and not sample.is_failure(
                session.fork().call(tool.name, args)
            ):
                return {**call, "args": args}
    return None


def _swapped_write(
    task: dict[str, Any], envs: dict[str, sample.SampleEnv], index: int, rng: random.Random
) -> dict[str, Any] | None:
    """Another write tool's call on the same entity (the same key argument), if one runs."""
    call = task["gold_calls"][index]
    env = envs[call["env"]]
    session = _session_before(task, envs, index)
    keys = {n: v for n, v in call["args"].items() if env.facts[_tool(call)].domains.get(n)}
    drawer = sample.ArgumentDrawer(env, rng, sample.Pool())
    for other in sorted(env.tools):
        tool = env.tools[other]
        if other == _tool(call) or not tool.writes or not keys or not set(keys) <= {p.name for p in tool.params}:
            continue
        args = {**drawer.draw(tool, session.view()), **keys}
        if not sample.is_failure(session.fork().call(other, args)):
            name = f"{call['env']}{sample.CROSS_SEPARATOR}{other}" if len(task["envs"]) > 1 else other
            return {"env": call["env"], "tool": name, "args": args}
    return None


def _data_consistency(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """Every value a check expects is named in the prompt, can be looked up by the agent,
    or is computed by the environment from those: no check expects a value that only an
    argument the request does not determine could bring in."""
    undetermined = _undetermined_values(task, envs)
    for check in task["verifier"]["checks"]:
        for value in _scalars(check.get("expected")) & undetermined:
            raise AuditFailed(
                "data_consistency", f"the check of {check['path']} expects {value!r}, which nothing shows"
            )


def _undetermined_values(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> set[Any]:
    """Argument values of gold calls the agent cannot know: not in the prompt, not in the
    initial state, world or schemas, not returned by an earlier call."""
    _, initial, results = replay(envs, task, task["gold_calls"])
    known = {name: _discoverable(envs[name], state) for name, state in initial.items()}
    found: set[Any] = set()
    for index, call in enumerate(task["gold_calls"]):
        earlier = set().union(*(_scalars(r) for r in results[:index])) if index else set()
        for value in _scalars(list(call["args"].values())):
            if not (_named(value, task["prompt"]) or value in known[call["env"]] or value in earlier):
                found.add(value)
    return found


def _information_separation(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """The prompt names no value only the environment computes (ids it issues, totals)."""
    _, initial, _ = replay(envs, task, task["gold_calls"])
    visible = set().union(*(_scalars(s) | _scalars(envs[n].world) for n, s in initial.items()))
    visible |= _scalars([list(c["args"].values()) for c in task["gold_calls"]])
    for check in task["verifier"]["checks"]:
        for value in _scalars(check.get("expected")) - visible:
            if _named(value, task["prompt"]) and len(str(value)) >= 3:
                raise AuditFailed("information_separation", f"the prompt gives away {value!r}")


def _named(value: Any, text: str) -> bool:
    if isinstance(value, str):
        return f'"{value}"' in text
    return re.search(rf"(?<![\w.]){re.escape(json.dumps(value))}(?![\w.])", text) is not None


def _objective_consistency(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> None:
    """Every gold write changes a path a check reads (checks on paths gold leaves alone
    are preservation checks: what must still hold)."""
    checked = [(c["env"], c["path"]) for c in task["verifier"]["checks"]]
    for index in _writes(task, envs):
        call = task["gold_calls"][index]
        before = replay(envs, task, task["gold_calls"][:index])[0][call["env"]]
        after = replay(envs, task, task["gold_calls"][: index + 1])[0][call["env"]]
        paths = envs[call["env"]].package.scoring.changed_paths(before, after)
        if not any(env == call["env"] and _related(path, p) for env, path in checked for p in paths):
            raise AuditFailed("objective_consistency", f"call {index} ({call['tool']}) changes nothing that is checked")


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _answer_uniqueness(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> None:
    """Other arguments for the same tools, from the same start, do not also pass."""
    gold = task["gold_calls"]
    for _ in range(UNIQUENESS_TRIES):
        other = [*gold]
        for index in _writes(task, envs):
            changed = _other_argument(task, envs, index, rng)
            if changed is not None:
                other[index] = changed
        if other != gold and score_calls(envs, task, other)["passed"]:
            raise AuditFailed("answer_uniqueness", f"other arguments also pass: {[c['args'] for c in other]}")


def _hacking_floor(task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random) -> list[float]:
    """Baseline policies score 0 (binary) or at most `PARTIAL_FLOOR`: every read tool; random valid calls; the last
    gold write alone (when gold has several writes: the others must matter); every write
    tool with random valid arguments."""
    rewards = []
    for name, calls in _baselines(task, envs, rng).items():
        result = score_calls(envs, task, calls)
        rewards.append(result["reward"])
        floor = 0.0 if task["reward"] == "binary" else PARTIAL_FLOOR
        if result["passed"] or result["reward"] > floor:
            raise AuditFailed("hacking_floor", f"the {name} baseline scores {result['reward']}")
    return rewards


def _baselines(
    task: dict[str, Any], envs: dict[str, sample.SampleEnv], rng: random.Random
) -> dict[str, list[dict[str, Any]]]:
    cross = len(task["envs"]) > 1
    reads: list[dict[str, Any]] = []
    writes: list[dict[str, Any]] = []
    randoms: list[dict[str, Any]] = []
    for name in task["envs"]:
        env = envs[name]
        live = env.package.Environment(task["initial_state"][name]["scenario"])
        drawer = sample.ArgumentDrawer(env, rng, sample.Pool())
        tool_names = sorted(env.tools)
        for tool_name in tool_names:
            call = _call(name, tool_name, drawer.draw(env.tools[tool_name], live.view()), cross)
            (writes if env.tools[tool_name].writes else reads).append(call)
        for _ in range(RANDOM_CALLS):
            tool_name = rng.choice(tool_names)
            randoms.append(_call(name, tool_name, drawer.draw(env.tools[tool_name], live.view()), cross))
            live.call(tool_name, randoms[-1]["args"])
    baselines = {"every read tool": reads, "random valid calls": randoms, "random writes": writes}
    gold_writes = _writes(task, envs)
    if len(gold_writes) > 1:
        baselines["last gold write alone"] = [task["gold_calls"][gold_writes[-1]]]
    return baselines


def _call(env: str, tool: str, args: dict[str, Any], cross: bool) -> dict[str, Any]:
    return {"env": env, "tool": f"{env}{sample.CROSS_SEPARATOR}{tool}" if cross else tool, "args": args}


# =========================================================================== the run


def synthesise(
    sampler: sample.Sampler,
    options: TaskOptions,
    chains: Sequence[dict[str, Any]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    declared: bool = True,
) -> tuple[list[dict[str, Any]], Report]:
    """The specs' own tasks that pass the audits first (`declared`), then tasks from
    chains (given, or sampled with the sampler's options), each audited; stops at
    `options.tasks` kept. Same inputs and seed, same tasks."""
    report = Report()
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    single = options.envs[0] == 1  # the specs' tasks each use one environment
    for name, task, why in declared_tasks(sampler.envs, options) if declared and single else []:
        report.candidates += 1
        if task is None:
            report.declared[name] = f"not expressible: {why}"
            report.rejected["not_expressible"] += 1
            continue
        try:
            rewards = audit(task, sampler.envs, random.Random(f"audit:{name}"))
        except AuditFailed as failed:
            report.declared[name] = f"rejected by {failed.audit}: {failed.why}"
            report.rejected[failed.audit] += 1
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
        chains, _ = sample.sample(sampler)
    for number, chain in enumerate(chains, 1):
        if report.kept >= options.tasks:
            break
        report.candidates += 1
        check_chain(chain, sampler.envs, number)
        task = build_task(chain, sampler.envs, options)
        if task["id"] in seen:
            report.rejected["duplicate"] += 1
            continue
        try:
            rewards = audit(task, sampler.envs, random.Random(f"audit:{chain['seed']}"))
        except AuditFailed as failed:
            report.rejected[failed.audit] += 1
            report.passed.update(AUDITS[: AUDITS.index(failed.audit)])
            continue
        report.passed.update(AUDITS)
        report.baseline_rewards.extend(rewards)
        seen.add(task["id"])
        kept.append(task)
        report.kept += 1
        report.per_env.update(task["envs"])
        if progress is not None:
            progress(report.kept, options.tasks)
        if report.kept >= options.tasks:
            break
    return kept, report


def check_chain(chain: dict[str, Any], envs: dict[str, sample.SampleEnv], number: int) -> None:
    """A chain row names environments and tools that exist, with the fields a row has."""
    keys = {"id", "seed", "envs", "scenarios", "calls"}
    if not isinstance(chain, dict) or not keys <= set(chain):
        raise ChainError(f"chain {number}: a row has {', '.join(sorted(keys))}")
    for name in chain["envs"]:
        if name not in envs:
            raise ChainError(f"chain {number}: environment `{name}` is not among the specs given")
    for call in chain["calls"]:
        env = envs.get(str(call.get("env"))) if isinstance(call, dict) else None
        if env is None or _tool(call) not in env.tools or not isinstance(call.get("args"), dict):
            raise ChainError(f"chain {number}: call {call!r} names no tool of its environment")


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


# =========================================================================== declared tasks


class NotExpressible(ValueError):
    """A `verify` line that is not a check on one path (a count over a comprehension...)."""


def declared_tasks(
    envs: dict[str, sample.SampleEnv], options: TaskOptions
) -> list[tuple[str, dict[str, Any] | None, str]]:
    """The spec's own `task` declarations in the task format: (name, task, "") or
    (name, None, why it cannot be). Their checks come from the `verify` lines, the
    prompt is the `request`, the gold calls the `solution`."""
    out: list[tuple[str, dict[str, Any] | None, str]] = []
    for env in envs.values():
        for decl in env.model.tasks:
            name = f"{env.name}.{decl.name}"
            try:
                out.append((name, _declared_task(env, decl, options), ""))
            except NotExpressible as why:
                out.append((name, None, str(why)))
    return out


def _declared_task(env: sample.SampleEnv, decl: Any, options: TaskOptions) -> dict[str, Any]:
    calls = []
    for step in decl.solution:
        if not (isinstance(step, ir.Call) and isinstance(step.func, ir.Name)):
            raise NotExpressible("a solution step is not a tool call")
        calls.append(
            {"env": env.name, "tool": step.func.id, "args": {kw.name: literal_json(kw.value) for kw in step.kwargs}}
        )
    session = env.package.Environment(decl.scenario or None)
    rows = [{**call, "result": session.call(call["tool"], call["args"])} for call in calls]
    chain = {
        "id": f"declared-{env.name}-{decl.name}",
        "seed": f"declared:{decl.name}",
        "envs": [env.name],
        "scenarios": {env.name: decl.scenario or None},
        "calls": rows,
    }
    checks = [{"env": env.name, **check, "weight": 1.0} for cond in decl.verify for check in verify_checks(cond)]
    return build_task(chain, {env.name: env}, options, request=decl.request, checks=checks)


def verify_checks(cond: ir.Expr) -> list[dict[str, Any]]:
    """Path checks a `verify` condition means: `a and b`, `path == literal`, `path is
    None` / `is not None`, `not path`, a boolean `path`, `key in path` / `not in`, and
    `len(path) == n`. Anything else is NotExpressible."""
    if isinstance(cond, ir.Binary) and cond.op == "and":
        return verify_checks(cond.left) + verify_checks(cond.right)
    if isinstance(cond, ir.Unary) and cond.op == "not":
        return [{"path": state_path(cond.operand), "op": "equals", "expected": False}]
    if isinstance(cond, ir.Binary) and cond.op in ("is", "is not") and _is_none(cond.right):
        path = state_path(cond.left)
        return [
            {"path": path, "op": "equals", "expected": None} if cond.op == "is" else {"path": path, "op": "not_null"}
        ]
    if isinstance(cond, ir.Binary) and cond.op in ("in", "not in") and isinstance(cond.left, ir.Const):
        container = cond.right.ty.name if cond.right.ty is not None else ""
        if container == "map":  # a key: a path below the map
            path = f"{state_path(cond.right)}/{_pointer(cond.left.value)}"
            return [{"path": path, "op": "present" if cond.op == "in" else "absent"}]
        if container in ("list", "set", "str"):
            op = "contains" if cond.op == "in" else "excludes"
            return [{"path": state_path(cond.right), "op": op, "expected": cond.left.value}]
    if isinstance(cond, ir.Binary) and cond.op == "==":
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            if _is_len(side):
                assert isinstance(side, ir.Call)
                return [{"path": state_path(side.args[0]), "op": "length", "expected": literal_json(other)}]
        for side, other in ((cond.left, cond.right), (cond.right, cond.left)):
            try:
                return [{"path": state_path(side), "op": "equals", "expected": literal_json(other)}]
            except NotExpressible:
                continue
    if cond.ty is not None and cond.ty.name == "bool":
        return [{"path": state_path(cond), "op": "equals", "expected": True}]
    raise NotExpressible("a verify line is not a check on one state path")


def state_path(expr: ir.Expr) -> str:
    """The JSON Pointer of a state place: a field, `[literal]` of it, `.field` of a record,
    `.get(literal)` of a map."""
    if isinstance(expr, ir.Name) and expr.ref == "state":
        return f"/{_pointer(expr.id)}"
    if (
        isinstance(expr, ir.Attr)
        and isinstance(expr.obj, ir.Name)
        and expr.obj.ref == "state"
        and expr.obj.id == "state"
    ):
        return f"/{_pointer(expr.name)}"
    if isinstance(expr, ir.Attr):
        return f"{state_path(expr.obj)}/{_pointer(expr.name)}"
    if isinstance(expr, ir.Index) and isinstance(expr.index, ir.Const):
        holder = expr.obj.ty
        if holder is not None and holder.name == "map" and holder.args and holder.args[0].name == "json":
            raise NotExpressible("a map with json keys is a list of [key, value] pairs in state()")
        return f"{state_path(expr.obj)}/{_pointer(expr.index.value)}"
    if (
        isinstance(expr, ir.Call)
        and isinstance(expr.func, ir.Attr)
        and expr.func.name == "get"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ir.Const)
    ):
        return f"{state_path(expr.func.obj)}/{_pointer(expr.args[0].value)}"
    raise NotExpressible("not a path into the state")


def literal_json(expr: ir.Expr) -> Any:
    """The JSON value of a literal of the body language (an enum member is its name)."""
    if isinstance(expr, ir.Const):
        return expr.value
    if isinstance(expr, ir.Unary) and expr.op == "-" and isinstance(expr.operand, ir.Const):
        number = expr.operand.value
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return -number
    if isinstance(expr, ir.Attr) and isinstance(expr.obj, ir.Name) and expr.obj.ref == "enum":
        return expr.name
    if isinstance(expr, ir.ListLit):
        return [literal_json(item) for item in expr.items]
    if isinstance(expr, ir.MapLit):
        return {str(literal_json(entry.key)): literal_json(entry.value) for entry in expr.entries}
    if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.ref == "record" and not expr.args:
        return {kw.name: literal_json(kw.value) for kw in expr.kwargs}
    raise NotExpressible("not a literal value")


def _is_none(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Const) and expr.value is None


def _is_len(expr: ir.Expr) -> bool:
    return (
        isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name) and expr.func.id == "len" and len(expr.args) == 1
    )


def _pointer(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")
