"""The request of a sampled task in words, and whether a request names a value.

A template request (`prompt`) names every value a write call needs and the agent cannot
look up; a value an earlier call returns is described by the step that gave it. The
audits (compiler/synth/audits.py) and the model-written requests
(compiler/synth/model_requests.py) judge any request with `is_named` and `discoverable`.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from compiler.synth import sample

OPENERS = ("Please", "Could you", "I need you to", "Go ahead and", "Kindly")
JOINERS = (", then ", ". After that, ", "; next, ", ", and then ")


def prompt(
    chain: dict[str, Any], envs: dict[str, sample.SampleEnv], initial: dict[str, Any], rng: random.Random
) -> str:
    """The user's request: each write call of the chain in words, its arguments named,
    except values an earlier call produced (described by where they come from)."""
    known = {name: discoverable(envs[name], state) for name, state in initial.items()}
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
            known[call["env"]] |= scalars(list(call["args"].values()))  # named now
        for value in scalars(call["result"]):
            produced.setdefault(value, _humane(tool_name))
    opener = rng.choice(OPENERS)
    text = phrases[0]
    for phrase in phrases[1:]:
        text += rng.choice(JOINERS) + phrase
    ending = "?" if opener == "Could you" else "."
    return f"{opener} {text}{ending}"


def discoverable(env: sample.SampleEnv, state: Any) -> set[Any]:
    """Values an agent can find without being told: in the initial state, the world data,
    or the tools' schemas (enum members)."""
    members = {m for enum in env.model.enums for m in enum.members}
    return scalars(state) | scalars(env.world) | members


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


def scalars(value: Any) -> set[Any]:
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


def is_named(value: Any, text: str) -> bool:
    """Whether a request names a value: a string quoted, or standing alone (not part of a
    longer word or path), so a hand-written or model-written request counts too; a number
    not inside a longer number."""
    if isinstance(value, str):
        if f'"{value}"' in text:
            return True
        return bool(value.strip()) and re.search(rf"(?<![\w/.-]){re.escape(value)}(?![\w/-]|\.\w)", text) is not None
    return re.search(rf"(?<![\w.]){re.escape(json.dumps(value))}(?![\w.])", text) is not None
