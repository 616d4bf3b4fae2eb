"""What a request names and what an agent can find without being told.

The audits (compiler/synth/audits.py), the wording of sampled requests
(compiler/synth/wording.py) and the model-written requests
(compiler/synth/model_requests.py) judge any request with `is_named` and `discoverable`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from compiler.synth import sample


def discoverable(env: sample.SampleEnv, state: Any) -> set[Any]:
    """Values an agent can find without being told: in the initial state, the world data,
    or the tools' schemas (enum members)."""
    members = {m for enum in env.model.enums for m in enum.members}
    return scalars(state) | scalars(env.world) | members


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
        if "_" in value and not value.startswith("_") and _stands_alone(value.replace("_", " "), text):
            return True  # an identifier in words: `in_progress` as "in progress"
        return _stands_alone(value, text)
    forms = {json.dumps(value)} | ({f"{value:.2f}"} if isinstance(value, float) else set())  # 64.3 as "64.30"
    return any(re.search(rf"(?<![\w.]){re.escape(form)}(?![\w.])", text) is not None for form in forms)


def _stands_alone(value: str, text: str) -> bool:
    return bool(value.strip()) and re.search(rf"(?<![\w/.-]){re.escape(value)}(?![\w/-]|\.\w)", text) is not None
