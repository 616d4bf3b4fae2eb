"""VERL's multi-turn tool config for a compiled package or a task set.

VERL (volcengine/verl, verl/tools/tool_registry.py in 0.9.1) loads the file with
`OmegaConf.load`, and per entry of `tools` imports `class_name`, checks that
`config.type` is `native`, validates `tool_schema` as its `OpenAIFunctionToolSchema`
(verl/tools/schemas.py) and calls `tool_cls(config=..., tool_schema=...)`. That pydantic
model keeps only `type`, `description` and `enum` of each parameter (earlier releases
also need the `type` to be one string and `enum` strings): so each parameter here is
that projection, with what it drops (limits, item types, `null`) written into the
description, which every release accepts. The environment still checks every argument
against its full schema.

Every entry's `config` tells `compiler.serve.verl.EnvcTool` where the package is, the
environment and its own tool behind the name the agent sees (`env__tool` across
environments, as `envc export --format verl` names them in `tools_kwargs`), and, for a
task set, the tasks file its `calc_reward` scores against. The YAML is written by PyYAML
with fixed options: the same inputs give the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from compiler.build.packages import OPENAI_TOOLS_FILE, PackageError, package_in
from compiler.lower.trl_env import describe
from compiler.synth import export

TOOL_CLASS = "compiler.serve.verl.EnvcTool"
"""`class_name` of every entry (the adapter in compiler/serve/verl.py)."""
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object")


class ConfigError(ValueError):
    """A package or task set the config cannot be made from (the message says why)."""


@dataclass(frozen=True)
class Source:
    """Where the tools come from: the packages by environment name, and the tasks file."""

    packages: dict[str, Path]
    tasks: Path | None
    root: Path | None = None
    """The packages folder the tasks' environments were found in (any depth below it)."""


def verl_property(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """One parameter as VERL's `OpenAIFunctionPropertySchema` holds it."""
    members = schema.get("anyOf", [schema])
    concrete = [m for m in members if m.get("type") != "null"]
    target = concrete[0] if concrete else {}
    kind = target.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    notes = []
    if kind not in JSON_TYPES or len(concrete) > 1:
        kind, notes = "object", ["Any JSON value of the shapes the tool accepts."]
    if len(concrete) < len(members):
        notes.append("May be null.")
    if "items" in target:
        notes.append(f"Items: {json.dumps(target['items'], ensure_ascii=False, sort_keys=True)}.")
    prop: dict[str, Any] = {"type": kind, "description": " ".join([describe(name, schema), *notes])}
    enum = target.get("enum")
    if isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        prop["enum"] = list(enum)
    return prop


def verl_tool_schema(function: dict[str, Any], name: str) -> dict[str, Any]:
    """An OpenAI function schema as VERL's `OpenAIFunctionToolSchema`, named `name`."""
    parameters = function.get("parameters", {})
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": function.get("description") or name,
            "parameters": {
                "type": "object",
                "properties": {p: verl_property(p, s) for p, s in parameters.get("properties", {}).items()},
                "required": list(parameters.get("required", [])),
            },
        },
    }


def entry(source: Source, env: str, tool: str, name: str, function: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"type": "native", "package": source.packages[env].as_posix(), "env": env, "tool": tool}
    if source.tasks is not None:
        config["tasks"] = source.tasks.as_posix()
    if source.root is not None:
        config["packages"] = source.root.as_posix()
    return {"class_name": TOOL_CLASS, "config": config, "tool_schema": verl_tool_schema(function, name)}


def openai_functions(folder: Path) -> dict[str, dict[str, Any]]:
    """A package's tools by name, from its openai_tools.json."""
    path = folder / OPENAI_TOOLS_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return {t["function"]["name"]: t["function"] for t in document["tools"]}
    except OSError as exc:
        raise ConfigError(
            f"{folder} is not a compiled package: cannot read {path.name} ({exc.strerror or exc})"
        ) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not an openai_tools.json envc writes: {exc}") from exc


def package_config(folder: Path) -> dict[str, Any]:
    """The config for every tool of one package (no tasks: `calc_reward` cannot score)."""
    env = folder.name
    source = Source({env: folder}, None)
    return {"tools": [entry(source, env, n, n, f) for n, f in openai_functions(folder).items()]}


def tasks_config(tasks_file: Path, packages: Path) -> dict[str, Any]:
    """The config for every tool the tasks use, named as in the VERL export."""
    tasks = export.read_tasks(tasks_file)
    if not tasks:
        raise ConfigError(f"{tasks_file} holds no tasks")
    envs = sorted({env for task in tasks for env in task["envs"]})
    source = Source({env: _package(packages, env) for env in envs}, tasks_file, packages)
    functions = {env: openai_functions(source.packages[env]) for env in envs}
    seen: dict[str, dict[str, Any]] = {}
    for task in tasks:
        for name in export.tool_names(task):
            env, tool = export._env_tool(task, name)
            if tool not in functions[env]:
                raise ConfigError(f"task {task['id']}: {env} has no tool {tool!r} (recompile the package?)")
            made = entry(source, env, tool, name, functions[env][tool])
            if seen.setdefault(name, made) != made:
                raise ConfigError(f"tool {name!r} stands for two different tools across the tasks")
    return {"tools": [seen[name] for name in sorted(seen)]}


def _package(packages: Path, env: str) -> Path:
    """The package of `env` at any depth below the packages folder."""
    try:
        return package_in(packages, env)
    except PackageError as exc:
        raise ConfigError(str(exc)) from None


def tool_config(target: Path, packages: Path) -> dict[str, Any]:
    """From a package folder, a tasks file or a folder with tasks.jsonl."""
    if (target / OPENAI_TOOLS_FILE).is_file():
        return package_config(target)
    tasks_file = target / "tasks.jsonl" if target.is_dir() else target
    if not tasks_file.is_file():
        raise ConfigError(f"{target} is neither a compiled package nor a tasks file (nor a folder with tasks.jsonl)")
    return tasks_config(tasks_file, packages)


def to_yaml(config: dict[str, Any]) -> str:
    """Block-style YAML with fixed options (key order kept, Unicode as is)."""
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
