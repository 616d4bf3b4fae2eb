"""Stage 8d, export: a tasks file as trainer datasets with one fixed schema.

`tasks.jsonl` rows hold values whose shape differs from row to row (a check's
`expected` is a string in one task and a record in the next, every tool has its own
`args`), so a columnar reader cannot infer one schema that fits every file. The
exports here have a schema that depends on nothing in the tasks:

- `datasets`: one row per task; scalar fields as they are, the nested parts as JSON
  text columns (`*_json`); as JSONL or parquet. `task_from_row` turns a row back into
  the task it came from, exactly.
- `verl`: the fields VERL's multi-turn tool recipe reads (`data_source`, `agent_name`,
  `prompt` as chat messages, `ability`, `reward_model` {style, ground_truth},
  `extra_info` {index, tools_kwargs: {tool: {create_kwargs}}, interaction_kwargs...}),
  as parquet. Followed: volcengine/verl 0.8.0.dev,
  examples/data_preprocess/gsm8k_multiturn_w_tool.py and gsm8k_tool_agent_loop.py, read
  by verl/utils/dataset/rl_dataset.py and verl/experimental/agent_loop/tool_agent_loop.py.

Every row carries `content_hash`, the SHA-256 of the task's canonical JSON (the
tasks.jsonl line as envc writes it). The same tasks give the same bytes: rows keep the
file's order, JSON is canonical, and the parquet writer's options are fixed (with the
same pyarrow version). pyarrow is needed for parquet only, and imported only then.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compiler.build import packages

EXPORT_VERSION = "1"
FORMATS = ("datasets", "verl")
TASK_KEYS = (
    "id",
    "envs",
    "initial_state",
    "prompt",
    "tools",
    "gold_calls",
    "max_turns",
    "timeout_s",
    "verifier",
    "reward",
    "source",
)
"""The keys of a task (docs/tasks.md); any other key is carried in `extra_json`."""

DATASETS_COLUMNS = (
    ("id", "string"),
    ("content_hash", "string"),
    ("envs", "list<string>"),
    ("prompt", "string"),
    ("reward", "string"),
    ("max_turns", "int64"),
    ("timeout_s", "int64"),
    ("initial_state_json", "string"),
    ("tools_json", "string"),
    ("gold_calls_json", "string"),
    ("verifier_json", "string"),
    ("source_json", "string"),
    ("extra_json", "string"),
)
"""The `datasets` export's columns, in order, with their Arrow types."""
JSON_COLUMNS = {f"{key}_json": key for key in ("initial_state", "tools", "gold_calls", "verifier", "source")}

VERL_DATA_SOURCE = "envc"
VERL_ABILITY = "tool_use"
VERL_AGENT = "tool_agent"
"""VERL's registered agent loop for tool calling (verl/experimental/agent_loop)."""
VERL_INTERACTION = "envc"
SYSTEM_PROMPT = (
    "Carry out the user's request by calling the tools provided. You have at most {max_turns} turns. "
    "The result is judged by the final state of the environment, so change nothing you were not asked to."
)

PARQUET_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 9,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "data_page_size": 1 << 20,
    "row_group_size": 4096,
    "use_compliant_nested_type": True,
    "write_page_index": False,
    "write_page_checksum": False,
    "store_schema": True,
}
"""Fixed writer options (pyarrow's defaults may change between versions): the same
table gives the same bytes."""


class TaskFileError(ValueError):
    """A tasks file that cannot be read, or a row that is not a task (the message names
    the file and line)."""


class MissingDependency(RuntimeError):
    """pyarrow, needed for parquet, is not installed."""


# =========================================================================== reading tasks


def canonical(value: Any) -> str:
    """JSON text with sorted keys and no spaces: equal values, equal text (what
    `tasks_to_jsonl` writes)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def content_hash(task: dict[str, Any]) -> str:
    """SHA-256 (hex) of the task's canonical JSON."""
    return hashlib.sha256(canonical(task).encode("utf-8")).hexdigest()


def read_tasks(path: Path) -> list[dict[str, Any]]:
    """The tasks of a JSONL file, each checked against the format; blank lines are
    skipped. Raises TaskFileError naming `path:line` for the first bad row."""
    return [row for _, row in read_numbered_tasks(path)]


def parse_tasks(text: str, name: str) -> list[dict[str, Any]]:
    return [row for _, row in numbered_tasks(text, name)]


def read_numbered_tasks(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """`read_tasks` with each task's line, for errors that name it (a task naming an
    environment that is not served)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise TaskFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: byte {exc.start} is not valid UTF-8") from exc
    return numbered_tasks(text, str(path))


def numbered_tasks(text: str, name: str) -> list[tuple[int, dict[str, Any]]]:
    tasks: list[tuple[int, dict[str, Any]]] = []
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise TaskFileError(f"{where}: not a JSON line: {exc}") from exc
        problem = task_problem(row)
        if problem:
            raise TaskFileError(f"{where}: {problem}")
        if row["id"] in lines:
            raise TaskFileError(f"{where}: task id {row['id']!r} repeats line {lines[row['id']]}")
        lines[row["id"]] = number
        tasks.append((number, row))
    return tasks


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def task_problem(row: Any) -> str:
    """What keeps a JSON value from being a task of the format, or "" (the checks
    the exports and calibration rely on; the scorer checks the verifier itself)."""
    if not isinstance(row, dict):
        return f"a task is a JSON object, not {type(row).__name__}"
    missing = [key for key in TASK_KEYS if key not in row]
    if missing:
        return f"missing {', '.join(missing)} (a task has {', '.join(TASK_KEYS)})"
    envs = row["envs"]
    if not isinstance(row["id"], str) or not row["id"]:
        return "`id` must be a non-empty string"
    if not isinstance(envs, list) or not envs or not all(isinstance(e, str) and e for e in envs):
        return "`envs` must be a non-empty list of environment names"
    named = next((problem for problem in map(packages.env_name_problem, envs) if problem), "")
    if named:
        return f"`envs`: {named}"
    if len(set(envs)) != len(envs):
        return "`envs` names an environment twice"
    initial = row["initial_state"]
    if not isinstance(initial, dict) or set(initial) != set(envs):
        return "`initial_state` must have one entry per environment of `envs`"
    for env, start in initial.items():
        if not isinstance(start, dict) or set(start) != {"scenario", "changes"}:
            return f"`initial_state.{env}` must be {{scenario, changes}}"
        if start["scenario"] is not None and not isinstance(start["scenario"], str):
            return f"`initial_state.{env}.scenario` must be a scenario name or null"
        if not isinstance(start["changes"], dict):
            return f"`initial_state.{env}.changes` must be an object of state fields"
    if not isinstance(row["prompt"], str) or not row["prompt"].strip():
        return "`prompt` must be a non-empty string"
    tools = row["tools"]
    if not isinstance(tools, list) or not tools:
        return "`tools` must be a non-empty list of OpenAI function schemas"
    for number, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            return f"`tools[{number}]` is not a function schema with a name"
    gold = row["gold_calls"]
    if not isinstance(gold, list):
        return "`gold_calls` must be a list of calls"
    for number, call in enumerate(gold):
        if (
            not isinstance(call, dict)
            or call.get("env") not in envs
            or not isinstance(call.get("tool"), str)
            or not isinstance(call.get("args"), dict)
        ):
            return f"`gold_calls[{number}]` must be {{env (one of `envs`), tool, args (an object)}}"
    for key in ("max_turns", "timeout_s"):
        if not _is_int(row[key]) or row[key] < 1:
            return f"`{key}` must be a whole number >= 1"
    verifier = row["verifier"]
    if not isinstance(verifier, dict) or not isinstance(verifier.get("checks"), list) or not verifier["checks"]:
        return "`verifier.checks` must be a non-empty list"
    if row["reward"] not in ("binary", "partial"):
        return "`reward` must be `binary` or `partial`"
    if not isinstance(row["source"], dict):
        return "`source` must be an object"
    try:
        canonical(row)
    except ValueError as exc:  # NaN or infinity: not JSON
        return f"not JSON data: {exc}"
    return ""


def tool_names(task: dict[str, Any]) -> list[str]:
    """The names of the task's tools, as the agent sees them (`env__tool` across envs)."""
    return [str(tool["function"]["name"]) for tool in task["tools"]]


# =========================================================================== the datasets export


def datasets_row(task: dict[str, Any]) -> dict[str, Any]:
    """One row of the `datasets` export (columns `DATASETS_COLUMNS`)."""
    extra = {key: value for key, value in task.items() if key not in TASK_KEYS}
    return {
        "id": task["id"],
        "content_hash": content_hash(task),
        "envs": list(task["envs"]),
        "prompt": task["prompt"],
        "reward": task["reward"],
        "max_turns": task["max_turns"],
        "timeout_s": task["timeout_s"],
        **{column: canonical(task[key]) for column, key in JSON_COLUMNS.items()},
        "extra_json": canonical(extra),
    }


def task_from_row(row: dict[str, Any]) -> dict[str, Any]:
    """The task a `datasets` row came from (its content hash checked)."""
    task: dict[str, Any] = {
        "id": row["id"],
        "envs": list(row["envs"]),
        "prompt": row["prompt"],
        "reward": row["reward"],
        "max_turns": row["max_turns"],
        "timeout_s": row["timeout_s"],
        **{key: json.loads(row[column]) for column, key in JSON_COLUMNS.items()},
        **json.loads(row["extra_json"]),
    }
    if content_hash(task) != row["content_hash"]:
        raise ValueError(f"row {row['id']}: the content hash does not match the row")
    return task


def datasets_jsonl(tasks: Sequence[dict[str, Any]]) -> str:
    """The `datasets` export as JSONL (keys in column order)."""
    return "".join(json.dumps(datasets_row(t), ensure_ascii=False, separators=(",", ":")) + "\n" for t in tasks)


# =========================================================================== the VERL export


def ground_truth(task: dict[str, Any]) -> str:
    """`reward_model.ground_truth`: the canonical JSON of what `score(task, final_states,
    initial_states)` reads, so a reward function can pass `json.loads(ground_truth)` as
    the task."""
    return canonical({key: task[key] for key in ("id", "envs", "initial_state", "verifier", "reward")})


def create_kwargs(task: dict[str, Any], env: str, tool: str) -> dict[str, Any]:
    """What a VERL tool needs to open (or find) the episode's session of `env`."""
    start = task["initial_state"][env]
    return {
        "task_id": task["id"],
        "env": env,
        "tool": tool,
        "scenario": start["scenario"],
        "changes_json": canonical(start["changes"]),
    }


def _env_tool(task: dict[str, Any], name: str) -> tuple[str, str]:
    """The environment and its own tool name behind a tool the agent sees."""
    if len(task["envs"]) > 1 and "__" in name:
        env, tool = name.split("__", 1)
        if env in task["envs"]:
            return env, tool
    return task["envs"][0], name


def verl_row(task: dict[str, Any], index: int) -> dict[str, Any]:
    """One row of the VERL export (tools_kwargs holds only the task's own tools)."""
    tools_kwargs = {}
    for name in sorted(set(tool_names(task))):
        env, tool = _env_tool(task, name)
        tools_kwargs[name] = {"create_kwargs": create_kwargs(task, env, tool)}
    return {
        "data_source": f"{VERL_DATA_SOURCE}/{'+'.join(task['envs'])}",
        "agent_name": VERL_AGENT,
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT.format(max_turns=task["max_turns"])},
            {"role": "user", "content": task["prompt"]},
        ],
        "ability": VERL_ABILITY,
        "reward_model": {"style": "rule", "ground_truth": ground_truth(task)},
        "extra_info": {
            "split": "train",
            "index": index,
            "task_id": task["id"],
            "content_hash": content_hash(task),
            "envs": list(task["envs"]),
            "max_turns": task["max_turns"],
            "timeout_s": task["timeout_s"],
            "need_tools_kwargs": True,
            "tools_kwargs": tools_kwargs,
            "interaction_kwargs": {"name": VERL_INTERACTION, "task_id": task["id"]},
            "tools_json": canonical(task["tools"]),
            "gold_calls_json": canonical(task["gold_calls"]),
        },
    }


# =========================================================================== parquet


def _pyarrow() -> Any:
    try:  # imported by name: pyarrow ships no type information, and is optional
        pyarrow = importlib.import_module("pyarrow")
        importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise MissingDependency(
            "writing parquet needs pyarrow: pip install 'envc[export]' (or pyarrow); "
            "`--format datasets` to a .jsonl file does not"
        ) from exc
    return pyarrow


def datasets_schema() -> Any:
    pa = _pyarrow()
    types = {"string": pa.string(), "int64": pa.int64(), "list<string>": pa.list_(pa.string())}
    fields = [pa.field(name, types[kind], nullable=False) for name, kind in DATASETS_COLUMNS]
    return pa.schema(fields, metadata={"envc.export": "datasets", "envc.export_version": EXPORT_VERSION})


def verl_schema(names: Sequence[str]) -> Any:
    """The VERL export's schema: fixed, but for one `tools_kwargs` field per tool name in
    the export (a struct, so VERL's `tools_kwargs.get(name)` works after `datasets` reads
    it; a task's row leaves the other tools' fields null)."""
    pa = _pyarrow()
    text = pa.string()
    create = pa.struct(
        [
            pa.field("task_id", text),
            pa.field("env", text),
            pa.field("tool", text),
            pa.field("scenario", text),
            pa.field("changes_json", text),
        ]
    )
    tools_kwargs = pa.struct([pa.field(name, pa.struct([pa.field("create_kwargs", create)])) for name in names])
    extra_info = pa.struct(
        [
            pa.field("split", text),
            pa.field("index", pa.int64()),
            pa.field("task_id", text),
            pa.field("content_hash", text),
            pa.field("envs", pa.list_(text)),
            pa.field("max_turns", pa.int64()),
            pa.field("timeout_s", pa.int64()),
            pa.field("need_tools_kwargs", pa.bool_()),
            pa.field("tools_kwargs", tools_kwargs),
            pa.field("interaction_kwargs", pa.struct([pa.field("name", text), pa.field("task_id", text)])),
            pa.field("tools_json", text),
            pa.field("gold_calls_json", text),
        ]
    )
    fields = [
        pa.field("data_source", text),
        pa.field("agent_name", text),
        pa.field("prompt", pa.list_(pa.struct([pa.field("role", text), pa.field("content", text)]))),
        pa.field("ability", text),
        pa.field("reward_model", pa.struct([pa.field("style", text), pa.field("ground_truth", text)])),
        pa.field("extra_info", extra_info),
    ]
    return pa.schema(fields, metadata={"envc.export": "verl", "envc.export_version": EXPORT_VERSION})


def parquet_bytes(rows: Sequence[dict[str, Any]], schema: Any) -> bytes:
    """Rows written as parquet with `PARQUET_OPTIONS`, in memory."""
    pa = _pyarrow()
    table = pa.Table.from_pylist(list(rows), schema=schema)
    sink = io.BytesIO()
    pa.parquet.write_table(table, sink, **PARQUET_OPTIONS)
    return sink.getvalue()


# =========================================================================== the export


def export(tasks: Sequence[dict[str, Any]], fmt: str, parquet: bool) -> bytes:
    """The bytes of an export: `datasets` (JSONL, or parquet) or `verl` (parquet)."""
    if fmt == "datasets":
        if not parquet:
            return datasets_jsonl(tasks).encode("utf-8")
        return parquet_bytes([datasets_row(t) for t in tasks], datasets_schema())
    if fmt == "verl":
        names = sorted({name for task in tasks for name in tool_names(task)})
        return parquet_bytes([verl_row(t, i) for i, t in enumerate(tasks)], verl_schema(names))
    raise ValueError(f"unknown export format {fmt!r}; the formats are {', '.join(FORMATS)}")


def default_output(source: Path, fmt: str) -> Path:
    """Where `envc export` writes without -o: beside the tasks file."""
    folder, stem = (source, "tasks") if source.is_dir() else (source.parent, source.stem)
    return folder / (f"{stem}.datasets.jsonl" if fmt == "datasets" else f"{stem}.verl.parquet")


def tasks_file(source: Path) -> Path:
    """A folder means its tasks.jsonl; a file is itself."""
    return source / "tasks.jsonl" if source.is_dir() else source
