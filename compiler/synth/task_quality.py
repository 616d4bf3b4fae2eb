"""How much of a problem a task set poses: the quality section of `report.json`.

A task carries training signal when its request states a goal rather than the calls
(`spelled_calls`, `tool_named`), its values mean something (`placeholders`) and the
agent has to find things out (`needs_lookup`, `hops`, `distractors`); the `literal`
baseline, which calls the gold tools with only what the request writes out, shows what
the request gives away. The same measures are what benchmarks/task_quality.py prints over
the shipped library.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from compiler import ir
from compiler.synth import sample
from compiler.synth.audits import needs_lookup, recipe_problem


def family_of(task: dict[str, Any]) -> str:
    """The kind of problem a task poses (tasks.md, "Task families"): a declared family's
    kind (`ir.FAMILY_KINDS`); else `declared` (a spec's own task), `compute` (a workspace
    task), `across` (a chain over several environments), `lookup` (a chain whose request
    refers to an entity by its attributes) or `act`."""
    kind = task["source"].get("kind")
    if "family" in task["source"] and kind in ir.FAMILY_KINDS:
        return str(kind)
    if "declared" in task["source"]:
        return "declared"
    if "workspace" in task:
        return "compute"
    if len(task["envs"]) > 1:
        return "across"
    return "lookup" if needs_lookup(task) else "act"


def declared_family(task: dict[str, Any]) -> str | None:
    """The declared family a task was drawn from (`env.family`), if any."""
    family = task["source"].get("family")
    return f"{task['envs'][0]}.{family}" if isinstance(family, str) else None


def names_a_tool(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> bool:
    """Whether the request names a tool in words (`resolve ticket` for `resolve_ticket`)."""
    text = task["prompt"].lower()
    for name in task["envs"]:
        for tool in envs[name].tools:
            words = tool.replace("_", " ")
            if " " in words and re.search(rf"(?<![\w]){re.escape(words)}(?![\w])", text):
                return True
    return False


def spells_calls(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> bool:
    names = {tool for name in task["envs"] for tool in envs[name].tools}
    return recipe_problem(task["prompt"], names) is not None


def has_placeholder(task: dict[str, Any]) -> bool:
    """A sampled argument made up from the type alone where it is text (never, since the
    sampler invents no text; this keeps it so)."""
    origins = task["source"].get("origins") or []
    return any(
        isinstance(value, str) and origin.get(name) == "type" and " " in value
        for call, origin in zip(task["gold_calls"], origins)
        for name, value in call["args"].items()
    )


def quality(
    tasks: Sequence[dict[str, Any]], envs: dict[str, sample.SampleEnv], literal_rewards: Sequence[float]
) -> dict[str, Any]:
    """The quality section of report.json over the kept tasks."""
    count = len(tasks)
    references = [r for task in tasks for r in task["source"].get("references", []) if not r.get("by_key", True)]
    lookups = [t for t in tasks if needs_lookup(t)]

    def share(hits: int) -> float:
        return round(hits / count, 4) if count else 0.0

    drawn: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        name = declared_family(task)
        if name is not None:
            drawn.setdefault(name, []).append(task)
    return {
        "tasks_per_family": dict(sorted(Counter(family_of(t) for t in tasks).items())),
        "declared_families": {
            name: {
                "kind": family_of(members[0]),
                "tasks": len(members),
                "distinct_prompts": len({t["prompt"] for t in members}),
                "distinct_requests": len({i for t in members for i in t["source"].get("intents", [])}),
            }
            for name, members in sorted(drawn.items())
        },
        "needs_lookup": share(len(lookups)),
        "hops_per_lookup_task": round(len(references) / len(lookups), 3) if lookups else 0.0,
        "distractors_per_reference": round(sum(r.get("distractors", 0) for r in references) / len(references), 3)
        if references
        else 0.0,
        "distinct_prompts": len({t["prompt"] for t in tasks}),
        "distinct_intents": len({i for t in tasks for i in t["source"].get("intents", [])}),
        "spelled_calls": share(sum(spells_calls(t, envs) for t in tasks)),
        "tool_named": share(sum(names_a_tool(t, envs) for t in tasks)),
        "placeholders": share(sum(has_placeholder(t) for t in tasks)),
        "literal_baseline_mean_reward": round(sum(literal_rewards) / len(literal_rewards), 6)
        if literal_rewards
        else 0.0,
    }
