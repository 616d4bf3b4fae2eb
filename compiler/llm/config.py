"""`[tool.envc.llm]`: which model envc asks, where, and how patiently.

The table lives in the project's pyproject.toml, so every machine that builds the
project asks the same model with the same sampling parameters (they are part of each
request's hash, see `provider.ChatRequest.sha`). What differs per machine stays out of
it: the endpoint may come from `OPENAI_BASE_URL` and the key always comes from an
environment variable whose *name* the table gives. A key written into the table is
refused rather than used, so it cannot end up committed.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostic, did_you_mean

DEFAULT_BASE_URL = "https://api.openai.com/v1"
SECRET_KEYS = frozenset({"api_key", "key", "token", "secret", "password"})


@dataclass(frozen=True)
class LLMConfig:
    """The settings of `[tool.envc.llm]`; every field has a default except `model`."""

    model: str = ""
    base_url: str = ""
    """Empty: `OPENAI_BASE_URL`, else the OpenAI API."""
    api_key_env: str = "OPENAI_API_KEY"
    """The name of the environment variable holding the key, never the key."""
    temperature: float = 0.0
    max_tokens: int = 4096
    seed: int | None = None
    timeout: float = 120.0
    """Seconds for a whole request, streamed reply included."""
    retries: int = 3
    """Further tries after a failed request (429, 5xx, timeouts, dropped connections)."""
    backoff: float = 1.0
    """Seconds before the first retry; doubled for each next one (unless Retry-After says)."""
    max_backoff: float = 60.0
    """Longest wait between tries; a Retry-After beyond it gives up instead of waiting."""
    concurrency: int = 4
    """Requests in flight at once (holes of a spec, profiles of `envc draft --batch`)."""
    attempts: int = 3
    """Requests per hole or draft before a failing fill is given up (the first included)."""
    stream: bool = True
    """Stream replies, so the deadline also holds against a server that trickles."""

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def sampling(self) -> dict[str, Any]:
        """Every parameter that shapes what the model returns; sent and hashed."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.seed is not None:
            params["seed"] = self.seed
        return params


_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "base_url": (str,),
    "api_key_env": (str,),
    "temperature": (int, float),
    "max_tokens": (int,),
    "seed": (int,),
    "timeout": (int, float),
    "retries": (int,),
    "backoff": (int, float),
    "max_backoff": (int, float),
    "concurrency": (int,),
    "attempts": (int,),
    "stream": (bool,),
}
_AT_LEAST: dict[str, float] = {
    "temperature": 0,
    "max_tokens": 1,
    "timeout": 0.001,
    "retries": 0,
    "backoff": 0,
    "max_backoff": 0,
    "concurrency": 1,
    "attempts": 1,
}


def load_config(root: Path) -> tuple[LLMConfig, list[Diagnostic]]:
    """The project's `[tool.envc.llm]` (defaults when absent), and what is wrong with it."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return LLMConfig(), []
    try:
        text = pyproject.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return LLMConfig(), [Diagnostic("E6105", f"cannot read pyproject.toml: {exc}", str(pyproject), 1, 1)]
    table = data.get("tool", {}).get("envc", {}).get("llm", {})
    if not isinstance(table, dict):
        return LLMConfig(), [_problem(pyproject, text, "", "`[tool.envc.llm]` must be a table")]
    return parse_table(table, pyproject, text)


def parse_table(table: dict[str, Any], path: Path, text: str = "") -> tuple[LLMConfig, list[Diagnostic]]:
    """Check every key of the table; a bad value keeps its default and is reported."""
    problems: list[Diagnostic] = []
    values: dict[str, Any] = {}
    known = {f.name for f in fields(LLMConfig)}
    for key, value in table.items():
        if key in SECRET_KEYS:
            message = f"`{key}` would put a secret in pyproject.toml; envc never reads one from there"
            hint = "set `api_key_env` to the NAME of an environment variable holding the key"
            problems.append(_problem(path, text, key, message, hint))
        elif key not in known:
            hint = did_you_mean(key, sorted(known)) or f"known keys: {', '.join(sorted(known))}"
            problems.append(_problem(path, text, key, f"unknown key `{key}` in [tool.envc.llm]", hint))
        elif not _fits(key, value):
            wanted = " or ".join(t.__name__ for t in _TYPES[key])
            problems.append(_problem(path, text, key, f"`{key}` must be {wanted}, not {value!r}"))
        elif key in _AT_LEAST and value < _AT_LEAST[key]:
            problems.append(_problem(path, text, key, f"`{key}` must be at least {_AT_LEAST[key]:g}, not {value!r}"))
        elif key == "api_key_env" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            message = "`api_key_env` is the name of an environment variable (like OPENAI_API_KEY), not a key"
            problems.append(_problem(path, text, key, message))
        else:
            values[key] = float(value) if float in _TYPES[key] and not isinstance(value, bool) else value
    return LLMConfig(**values), problems


def _fits(key: str, value: Any) -> bool:
    if isinstance(value, bool) and bool not in _TYPES[key]:
        return False
    return isinstance(value, _TYPES[key])


def _problem(path: Path, text: str, key: str, message: str, hint: str = "") -> Diagnostic:
    """An E6105 at the line of `key` inside the table (or of the table header)."""
    line = 1
    lines = text.splitlines()
    header = next((i for i, raw in enumerate(lines) if raw.strip() == "[tool.envc.llm]"), None)
    if header is not None:
        line = header + 1
        for index in range(header + 1, len(lines)):
            stripped = lines[index].strip()
            if stripped.startswith("["):
                break
            if key and re.match(rf"{re.escape(key)}\s*=", stripped):
                line = index + 1
                break
    return Diagnostic("E6105", message, str(path), line, 1, hint=hint)


def base_url(config: LLMConfig) -> str:
    """The endpoint: the table's, else `OPENAI_BASE_URL`, else the OpenAI API."""
    return config.base_url or os.environ.get("OPENAI_BASE_URL", "") or DEFAULT_BASE_URL


def api_key(config: LLMConfig) -> str | None:
    """The key from the variable `api_key_env` names, falling back to `OPENAI_API_KEY`.

    None when neither is set: local servers (Ollama, llama.cpp, vLLM) need no key."""
    return os.environ.get(config.api_key_env) or os.environ.get("OPENAI_API_KEY") or None
