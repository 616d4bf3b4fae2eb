"""A task from one ground truth, a sampled chain (compiler/synth/sample.py), not yet audited.

From the chain's start (a named scenario, with seeded changes on top), its calls (the
gold solution) and the state they leave:

- the `prompt`, the user's goal in the spec's words (compiler/synth/wording.py);
- the `verifier`, from the state difference the gold calls make: one check per changed
  path (`equals` its final value, or `absent`), and a collateral rule that nothing else
  may change;
- the OpenAI tool schemas of the environments involved, `max_turns` and `timeout_s`.

Replaying calls from a task's start and scoring them with the `scoring.py` every
generated package ships is here too: the audits and the task families build on it.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compiler.build import packages
from compiler.lower.schema import openai_tools
from compiler.synth import sample, wording
from compiler.synth.task_prompt import scalars

MAX_TURNS = 32
TIMEOUT_S = 300


CHANGE_TRIES = 4
"""Seeded changes tried on a sampled task's start before it keeps the scenario as it is."""
WHOLE_FIELD_BYTES = 16_384
"""A changed top-level field up to this size (JSON) is set whole; a bigger one by JSON Pointer."""
FILES_FIELD = "files"
"""The state field of a file-workspace environment: path -> file record."""
PATH_ARGUMENTS = ("path", "source", "destination")
"""Arguments of file-workspace tools that name a path of the workspace."""


@dataclass(frozen=True)
class TaskOptions:
    tasks: int
    seed: int = 0
    envs: tuple[int, int] = (1, 1)
    min_len: int = 2
    max_len: int = 4
    max_turns: int = MAX_TURNS
    timeout_s: int = TIMEOUT_S


def build_task(
    chain: dict[str, Any],
    envs: dict[str, sample.SampleEnv],
    options: TaskOptions,
    request: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    initial_state: dict[str, Any] | None = None,
    workspace: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
    reward: str | None = None,
) -> dict[str, Any]:
    """The task of one chain row (not yet audited). A declared task brings its own
    request and checks; a workspace task its start (`initial_state`) and its script; a
    family task (compiler/synth/families.py) also its `source` and `reward`."""
    names: list[str] = chain["envs"]
    cross = len(names) > 1
    if initial_state is None:
        initial_state = _initial_state(chain, envs) if request is None else _initial_state(chain)
    gold = [{"env": c["env"], "tool": c["tool"], "args": c["args"]} for c in chain["calls"]]
    finals, initial, _ = replay(envs, {"initial_state": initial_state}, gold, cross)
    if checks is None:
        checks = [
            {"env": name, **check, "weight": 1.0}
            for name in names
            for check in expected_changes(initial[name], finals[name])
        ]
    allowed = {name: envs[name].package.scoring.changed_paths(initial[name], finals[name]) for name in names}
    if request is None:
        worded = wording.request(chain, envs, initial, random.Random(chain["seed"]))
        request = worded.text
        source = {
            "chain": chain["id"],
            "seed": chain["seed"],
            "origins": [c.get("origins", {}) for c in chain["calls"]],
            "references": [r.to_json() for r in worded.references],
            "intents": worded.intents,
        }
    elif source is None:
        source = {"chain": chain["id"], "seed": chain["seed"]} if workspace is not None else {"declared": chain["id"]}
    if reward is None:
        reward = "partial" if any(envs[n].is_workspace for n in names) else "binary"
    task: dict[str, Any] = {
        "envs": names,
        "initial_state": initial_state,
        "prompt": request,
        "tools": [t for name in names for t in _tool_schemas(envs[name], cross)],
        "gold_calls": gold,
        "max_turns": options.max_turns,
        "timeout_s": options.timeout_s,
        "verifier": {"checks": checks, "collateral": {"allowed": allowed}},
        "reward": reward,
        "source": source,
    }
    if workspace is not None:
        task["workspace"] = workspace
    return with_id(task)


def with_id(task: dict[str, Any]) -> dict[str, Any]:
    """The task with its id first: a hash of the rest (equal tasks, equal ids)."""
    digest = hashlib.sha256(json.dumps(task, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    return {"id": f"task-{digest}", **task}


def _initial_state(chain: dict[str, Any], envs: dict[str, sample.SampleEnv] | None = None) -> dict[str, Any]:
    """Per environment: the named scenario the chain starts from (None for S0) and the
    seeded changes set on top of it (`seeded_changes`; none without `envs`)."""
    starts: dict[str, Any] = {}
    for name in chain["envs"]:
        scenario = chain["scenarios"][name]
        changes = seeded_changes(envs[name], scenario, chain) if envs is not None else {}
        starts[name] = {"scenario": scenario, "changes": changes}
    return starts


def open_session(env: sample.SampleEnv, start: dict[str, Any]) -> Any:
    """A live session at a task's start for one environment (its scenario, then its changes),
    opened as every harness opens it, so what is audited is the start trainers get."""
    return packages.open_at_start(env.package, start)[0]


# --------------------------------------------------------------------------- seeded changes


def seeded_changes(env: sample.SampleEnv, scenario: str | None, chain: dict[str, Any]) -> dict[str, Any]:
    """A small seeded change to the start, so tasks vary beyond the shipped scenarios: one
    field of one record the chain never names, set to a value the same field has in
    another record. Kept only if the chain still runs the same from the changed start (no
    call fails that succeeded; every write returns what it returned); after `CHANGE_TRIES`
    misses the task starts from the scenario as it is. A field up to `WHOLE_FIELD_BYTES`
    is set whole (what every consumer of `changes` applies), a bigger one by JSON Pointer."""
    rng = random.Random(f"changes:{chain['seed']}:{env.name}")
    state = env.package.Environment(scenario).state()
    calls = [c for c in chain["calls"] if c["env"] == env.name]
    named = scalars([[c["args"], c["result"]] for c in calls])
    options = _change_options(state, named)
    for _ in range(min(CHANGE_TRIES, len(options))):
        field_name, key, attribute, values = options.pop(rng.randrange(len(options)))
        value = rng.choice(values)
        record = dict(state[field_name][key], **{attribute: value})
        if len(json.dumps(state[field_name], default=str)) <= WHOLE_FIELD_BYTES:
            changes = {field_name: {**state[field_name], key: record}}
        else:
            changes = {f"/{pointer(field_name)}/{pointer(key)}/{pointer(attribute)}": value}
        if _runs_the_same(env, scenario, changes, calls):
            return changes
    return {}


def _change_options(state: dict[str, Any], named: set[Any]) -> list[tuple[str, str, str, list[Any]]]:
    """(field, key, attribute, other values) for each scalar attribute of a record in a map
    field that the chain does not name and that another record holds differently."""
    options = []
    named_keys = {str(value) for value in named}  # state() keys are text; arguments may be numbers
    for field_name in sorted(state):
        records = state[field_name]
        if field_name in sample.BUILTIN_FIELDS or not isinstance(records, dict) or len(records) < 2:
            continue
        if not all(isinstance(r, dict) for r in records.values()):
            continue
        for key in sorted(records):
            if str(key) in named_keys:
                continue
            for attribute, current in sorted(records[key].items()):
                if attribute == "id" or current == key:
                    continue  # a record's identity is not a detail to vary
                if not isinstance(current, (str, int, float)) or isinstance(current, bool):
                    continue
                others = sorted(
                    {r.get(attribute) for r in records.values() if type(r.get(attribute)) is type(current)} - {current},
                    key=repr,
                )
                if others and not scalars(others) & named:
                    options.append((field_name, key, attribute, others))
    return options


def _runs_the_same(
    env: sample.SampleEnv, scenario: str | None, changes: dict[str, Any], calls: list[dict[str, Any]]
) -> bool:
    try:
        session = open_session(env, {"scenario": scenario, "changes": changes})
    except Exception:  # the package refuses the changed state: this change does not fit
        return False
    for call in calls:
        result = session.call(tool_of(call), call["args"])
        if sample.is_failure(result) != sample.is_failure(call["result"]):
            return False
        if env.tools[tool_of(call)].writes and result != call["result"]:
            return False
    return True


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


def replay(
    envs: dict[str, sample.SampleEnv], task: dict[str, Any], calls: Sequence[dict[str, Any]], cross: bool = False
) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """Run calls on fresh sessions from the task's initial state: (final states, initial
    states, results)."""
    sessions = {name: open_session(envs[name], start) for name, start in task["initial_state"].items()}
    initial = {name: s.state() for name, s in sessions.items()}
    results = [sessions[c["env"]].call(c["tool"].split(sample.CROSS_SEPARATOR, 1)[-1], c["args"]) for c in calls]
    return {name: s.state() for name, s in sessions.items()}, initial, results


def score_calls(
    envs: dict[str, sample.SampleEnv], task: dict[str, Any], calls: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """What the package's own scorer gives `calls` made from the task's start (as trainers score)."""
    finals, initial, _ = replay(envs, task, calls)
    any_env = envs[task["envs"][0]]
    result: dict[str, Any] = any_env.package.scoring.score(task, finals, initial)
    return result


def tool_of(call: dict[str, Any]) -> str:
    """A call's tool as its environment names it (`env__tool` across environments)."""
    return str(call["tool"]).split(sample.CROSS_SEPARATOR, 1)[-1]


def pointer(key: Any) -> str:
    """A key as one segment of a JSON Pointer (`~` and `/` escaped)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def unpointer(part: str) -> str:
    """A segment of a JSON Pointer as the key it stands for."""
    return part.replace("~1", "/").replace("~0", "~")
