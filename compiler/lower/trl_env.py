"""What the TRL adapter template (`templates/trl_env.py.jinja`) needs per tool.

TRL's `GRPOTrainer(environment_factory=...)` (trl 1.13.0, trl/trainer/grpo_trainer.py)
makes every public bound method of the environment a tool except `reset` and
`get_reward`, names each tool by the method's `__name__`, and asks transformers'
`get_json_schema` for its schema: parameter types from the type hints, `required` from
the parameters without a default, descriptions from the Google-style `Args:` section.
So the class gets one method per tool whose annotations are derived here from the
tool's JSON Schema in `openai_tools.json` (one source for both), and whose docstring
spells out what a type hint cannot say (limits, patterns, defaults).

A tool whose name is one TRL keeps for itself (`reset`, `get_reward`) gets a method
with another name, `RESET_tool`, whose `__name__` is the tool's own name: TRL calls it
and shows it to the model under the tool's name.
"""

from __future__ import annotations

import json
import keyword
from dataclasses import dataclass, replace
from typing import Any

from compiler.lower.literals import docstring

TRL_RESERVED = ("reset", "get_reward")
"""Method names TRL's trainer treats as the environment's own, never as tools."""
DESCRIBED_KEYWORDS = (
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "uniqueItems",
    "pattern",
    "format",
    "default",
)
"""Schema keywords a type hint cannot carry: written into the argument's description."""


@dataclass(frozen=True)
class TrlParam:
    name: str
    annotation: str
    required: bool
    description: str
    python: str  # the name in the method's signature: `name`, unless Python forbids it there

    @property
    def is_keyword(self) -> bool:
        """A Python keyword cannot even be a keyword argument: it is passed as `**{...}`."""
        return keyword.iskeyword(self.name)


def python_names(names: list[str]) -> dict[str, str]:
    """Parameter name -> the name the method's signature can carry: the parameter's own,
    or `NAME_` (more `_` until free) for a Python keyword and `self`. TRL derives the
    schema from the signature, so such a parameter reaches the model as `NAME_`; the
    adapter passes it on to the environment under its real name."""
    taken = set(names)
    result = {}
    for name in names:
        python = name
        if keyword.iskeyword(python) or python == "self":
            while python in taken or keyword.iskeyword(python) or python == "self":
                python += "_"
            taken.add(python)
        result[name] = python
    return result


@dataclass(frozen=True)
class TrlTool:
    name: str
    method: str  # the Python method name; equals `name` unless TRL reserves that name
    description: str
    params: tuple[TrlParam, ...]


def method_names(tools: list[str]) -> dict[str, str]:
    """Tool name -> method name: the tool's own name unless TRL reserves it, else
    `NAME_tool` (with more `_` until no tool has that name)."""
    taken = set(tools) | set(TRL_RESERVED)
    names = {}
    for tool in tools:
        method = tool
        if tool in TRL_RESERVED:
            method = f"{tool}_tool"
            while method in taken:
                method += "_"
            taken.add(method)
        names[tool] = method
    return names


def annotation(schema: Any) -> str:
    """The Python type hint whose `get_json_schema` rendering has the schema's types
    (`Any` for a shape no type hint can say, such as `[key, value]` pair lists)."""
    if not isinstance(schema, dict) or not schema:
        return "Any"
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if "anyOf" in schema:
        members = [annotation(m) for m in schema["anyOf"]]
        if "Any" in members:
            return "Any"
        return " | ".join(dict.fromkeys(members))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(dict.fromkeys(annotation({"type": k}) for k in kind))
    scalar = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
    if kind in scalar:
        return scalar[kind]
    if kind == "array":
        if "prefixItems" in schema:
            return "Any"
        return f"list[{annotation(schema.get('items', {}))}]"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict) and "properties" not in schema:
            return f"dict[str, {annotation(values)}]"
        return "dict[str, Any]"
    return "Any"


def describe(name: str, schema: dict[str, Any]) -> str:
    """The `Args:` text of a parameter: its description, then the rules its type hint
    cannot carry (schema keywords, as JSON)."""
    target = schema
    if "anyOf" in schema:
        target = schema["anyOf"][0]
    parts = [" ".join(str(schema.get("description", "")).split()) or f"The `{name}` argument."]
    rules = [f"{key} {json.dumps(target[key], ensure_ascii=False)}" for key in DESCRIBED_KEYWORDS if key in target]
    if "default" in schema and schema is not target:
        rules.append(f"default {json.dumps(schema['default'], ensure_ascii=False)}")
    if rules:
        parts.append("Rules: " + "; ".join(rules) + ".")
    return " ".join(parts)


def trl_tools(openai_tools: dict[str, Any]) -> list[TrlTool]:
    """The adapter's methods, from the package's `openai_tools.json` document."""
    functions = [entry["function"] for entry in openai_tools["tools"]]
    methods = method_names([f["name"] for f in functions])
    tools = []
    for function in functions:
        parameters = function["parameters"]
        required = set(parameters.get("required", []))
        python = python_names(list(parameters["properties"]))
        params = tuple(
            TrlParam(name, annotation(schema), name in required, describe(name, schema), python[name])
            for name, schema in parameters["properties"].items()
        )
        tools.append(TrlTool(function["name"], methods[function["name"]], function["description"], params))
    return tools


def template_context(openai_tools: dict[str, Any], header: str, environment: str) -> dict[str, Any]:
    tools = [
        TrlTool(
            t.name,
            t.method,
            docstring(t.description),
            tuple(replace(p, description=docstring(p.description)) for p in t.params),
        )
        for t in trl_tools(openai_tools)
    ]
    annotations = [p.annotation for t in tools for p in t.params]
    return {
        "header": header,
        "environment": environment,
        "tools": tools,
        "uses_literal": any("Literal[" in a for a in annotations),
        "renames": any(t.method != t.name for t in tools),
    }
