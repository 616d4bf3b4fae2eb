"""`EnvcTool`: a VERL `BaseTool` over a compiled package (needs VERL installed).

VERL makes one tool object per entry of its tool config (compiler/serve/verl_config.py
writes it) and, per tool call, `create`s an instance, `execute`s the call on it and
`release`s it (verl/experimental/agent_loop/tool_agent_loop.py, `_call_tool`): an
instance lives for one call. The episode's state must outlive it, so it lives in
`REGISTRY`, one per process, shared by the tools of every environment, keyed by the
trajectory:

- `create(instance_id, create_kwargs=...)` reads the create kwargs the VERL export writes
  (compiler/synth/export.py `create_kwargs`: task_id, env, tool, scenario, changes_json). Given an
  `instance_id`, that id is the trajectory and its session is opened at once. VERL's agent
  loop passes none: it gets a fresh id, and the trajectory is the `request_id` of the
  `agent_data` VERL passes to `execute`, so the calls of one rollout share one state.
- `execute` calls the tool on the trajectory's session of its environment (opened from the
  task's initial state on first use) and returns the JSON result as text; a domain error is
  such a result. An internal error of the environment marks the trajectory unscorable.
- `calc_reward` scores the trajectory's final state with the package's `score` against the
  task (from the tasks file in the tool's config); an unscorable trajectory raises
  `InfrastructureError` instead of giving 0.
- `release` frees the instance; a trajectory keyed by an instance id goes with it, one keyed
  by a request id stays until `finish_trajectory(request_id)` (VERL's tool loop has no
  end-of-rollout hook for tools). At most `max_trajectories` (config, default 4096) are open
  at once: opening another is refused with an error that says so, nothing is evicted.
- Each call may run `call_timeout_s` seconds (config, default `envc serve`'s
  `--call-timeout`; null for no limit): a call still running then is stopped by the
  environment, the domain error `timeout`, nothing changed.
"""

from __future__ import annotations

import importlib
import json
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from compiler.build import packages
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.serve.call_clock import expiry
from compiler.synth import export

try:
    _base_tool = importlib.import_module("verl.tools.base_tool")
    _schemas = importlib.import_module("verl.tools.schemas")
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "compiler.serve.verl needs VERL (`pip install verl`); `envc adapters verl-config` does not"
    ) from exc

BaseTool: Any = _base_tool.BaseTool
ToolResponse: Any = _schemas.ToolResponse
DEFAULT_MAX_TRAJECTORIES = 4096
CREATE_KEYS = ("task_id", "env", "tool", "scenario", "changes_json")
"""What compiler/synth/export.py `create_kwargs` writes per tool of a VERL row."""


class ToolUseError(ValueError):
    """The trainer used the tool wrongly (bad create kwargs, unknown instance, no tasks)."""


class InfrastructureError(RuntimeError):
    """The environment failed during the trajectory: drop it, do not train on 0."""


@dataclass(frozen=True)
class Opening:
    """An instance's create kwargs, checked."""

    task_id: str
    env: str
    tool: str
    scenario: str | None
    changes: dict[str, Any]


@dataclass
class Trajectory:
    task_id: str
    sessions: dict[str, Any] = field(default_factory=dict)  # env -> the package's Environment
    initial: dict[str, Any] = field(default_factory=dict)  # env -> state() when opened
    failure: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


class Registry:
    """Instances (one call each) and trajectories (one rollout each) of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._instances: dict[str, tuple[Opening, str | None]] = {}
        self._trajectories: dict[str, Trajectory] = {}

    def bind(self, instance_id: str, opening: Opening, key: str | None) -> None:
        with self._lock:
            if instance_id in self._instances:
                raise ToolUseError(f"instance {instance_id!r} exists already")
            self._instances[instance_id] = (opening, key)

    def instance(self, instance_id: str) -> tuple[Opening, str | None]:
        with self._lock:
            if instance_id not in self._instances:
                raise ToolUseError(f"no instance {instance_id!r}: call create first (or it was released)")
            return self._instances[instance_id]

    def trajectory(self, key: str, task_id: str, capacity: int) -> Trajectory:
        """The trajectory `key`, opened for `task_id` if new (within `capacity`)."""
        with self._lock:
            found = self._trajectories.get(key)
            if found is None:
                if len(self._trajectories) >= capacity:
                    raise ToolUseError(
                        f"{len(self._trajectories)} trajectories are open, the limit: finish or release finished ones"
                    )
                found = self._trajectories[key] = Trajectory(task_id)
            if found.task_id != task_id:
                raise ToolUseError(f"trajectory {key!r} is task {found.task_id!r}, not {task_id!r}")
            return found

    def find(self, key: str) -> Trajectory:
        with self._lock:
            if key not in self._trajectories:
                raise ToolUseError(f"no trajectory {key!r}: nothing was called in it, or it was finished")
            return self._trajectories[key]

    def release(self, instance_id: str) -> None:
        with self._lock:
            _, key = self._instances.pop(instance_id, (None, None))
            if key == instance_id:
                self._trajectories.pop(instance_id, None)

    def finish(self, key: str) -> None:
        with self._lock:
            self._trajectories.pop(key, None)

    def counts(self) -> tuple[int, int]:
        """(open instances, open trajectories): what a leak would grow."""
        with self._lock:
            return len(self._instances), len(self._trajectories)


REGISTRY = Registry()

_PACKAGES: dict[Path, ModuleType] = {}
_TASKS: dict[Path, dict[str, dict[str, Any]]] = {}
_LOADING = threading.Lock()


def package(folder: Path) -> ModuleType:
    """The generated package in `folder`, imported once per process."""
    resolved = folder.resolve()
    with _LOADING:
        if resolved not in _PACKAGES:
            alias = packages.folder_alias("verl", resolved.name, resolved)
            _PACKAGES[resolved] = packages.import_package(resolved, alias)
        return _PACKAGES[resolved]


def tasks_by_id(path: Path) -> dict[str, dict[str, Any]]:
    """The tasks of a tasks file by id, read once per process."""
    resolved = path.resolve()
    with _LOADING:
        if resolved not in _TASKS:
            _TASKS[resolved] = {task["id"]: task for task in export.read_tasks(resolved)}
        return _TASKS[resolved]


def opening(values: dict[str, Any], env: str, tool: str) -> Opening:
    """Checked create kwargs of a tool of `env` called `tool`."""
    missing = [key for key in CREATE_KEYS if key not in values]
    if missing:
        raise ToolUseError(f"create kwargs lack {', '.join(missing)} (envc export --format verl writes them)")
    if (values["env"], values["tool"]) != (env, tool):
        raise ToolUseError(f"create kwargs are for {values['env']}.{values['tool']}, this tool is {env}.{tool}")
    scenario, task_id = values["scenario"], values["task_id"]
    if not isinstance(task_id, str) or not task_id or not (scenario is None or isinstance(scenario, str)):
        raise ToolUseError("create kwargs: task_id must be a non-empty string, scenario a name or null")
    try:
        changes = json.loads(values["changes_json"])
    except (TypeError, ValueError) as exc:
        raise ToolUseError("create kwargs: changes_json is not JSON text") from exc
    if not isinstance(changes, dict):
        raise ToolUseError("create kwargs: changes_json is not a JSON object")
    return Opening(task_id, env, tool, scenario, changes)


def trajectory_key(instance_id: str, bound: str | None, kwargs: dict[str, Any]) -> str:
    """The trajectory of a call: the one bound at create, else VERL's request id, else the instance."""
    if bound is not None:
        return bound
    request_id = getattr(kwargs.get("agent_data"), "request_id", None)
    return request_id if isinstance(request_id, str) and request_id else instance_id


def open_session(module: ModuleType, scenario: str | None, changes: dict[str, Any]) -> Any:
    """A package's Environment at a task's initial state (as the generated Episode opens it)."""
    try:
        return packages.open_at_start(module, {"scenario": scenario, "changes": changes})[0]
    except (module.ScenarioError, module.scoring.VerifierError) as exc:
        raise ToolUseError(f"cannot open the initial state: {exc}") from exc


def call_limit(value: Any) -> float | None:
    """The config's `call_timeout_s`: seconds above 0, or None for no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ToolUseError(f"`call_timeout_s` is a number of seconds above 0, or null: got {value!r}")
    return float(value)


def is_internal(result: Any) -> bool:
    error = result.get("error") if isinstance(result, dict) and set(result) == {"error"} else None
    return isinstance(error, dict) and error.get("kind") == "internal"


class EnvcTool(BaseTool):  # type: ignore[misc]  # VERL ships no type information
    """One tool of a compiled environment, as VERL's agent loop calls tools."""

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        super().__init__(config, tool_schema)
        try:
            self.package_dir = Path(str(config["package"]))
            self.env, self.tool = str(config["env"]), str(config["tool"])
        except KeyError as exc:
            raise ToolUseError(
                f"the tool's config has no {exc.args[0]!r} (envc adapters verl-config writes it)"
            ) from exc
        self.tasks_path = Path(str(config["tasks"])) if config.get("tasks") else None
        self.packages_root = Path(str(config["packages"])) if config.get("packages") else self.package_dir.parent
        self.capacity = int(config.get("max_trajectories", DEFAULT_MAX_TRAJECTORIES))
        self.call_timeout_s = call_limit(config.get("call_timeout_s", CALL_TIMEOUT_S))
        self.module = package(self.package_dir)
        if self.tool not in self.module.TOOL_SPECS:
            raise ToolUseError(f"{self.package_dir} has no tool {self.tool!r}")

    async def create(
        self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> tuple[str, Any]:
        values = create_kwargs if create_kwargs is not None else kwargs
        checked = opening(dict(values), self.env, self.tool)
        if instance_id is None:
            REGISTRY.bind(new_id := uuid.uuid4().hex, checked, None)
            return new_id, ToolResponse()
        self._trajectory(instance_id, checked)
        REGISTRY.bind(instance_id, checked, instance_id)
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        checked, bound = REGISTRY.instance(instance_id)
        trajectory = self._trajectory(trajectory_key(instance_id, bound, kwargs), checked)
        with trajectory.lock:
            if trajectory.failure:
                raise InfrastructureError(f"the environment failed earlier in this trajectory: {trajectory.failure}")
            if not isinstance(parameters, dict):
                result: Any = {"error": {"kind": "invalid_argument", "message": "the arguments are not a JSON object"}}
            else:
                session = self._session(trajectory, checked)
                result, _ = session.call_and_commit(self.tool, parameters, None, expiry(self.call_timeout_s))
            if is_internal(result):
                trajectory.failure = f"{self.env}.{self.tool}: {result['error'].get('message', '')}"
        metrics = {
            "domain_error": isinstance(result, dict) and set(result) == {"error"},
            "infrastructure_error": is_internal(result),
        }
        return ToolResponse(text=json.dumps(result, ensure_ascii=False)), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The task's reward for the trajectory's final state (`instance_id` may be the
        trajectory's own key, e.g. VERL's request id)."""
        try:
            _, bound = REGISTRY.instance(instance_id)
        except ToolUseError:
            bound = instance_id
        trajectory = REGISTRY.find(trajectory_key(instance_id, bound, kwargs))
        if self.tasks_path is None:
            raise ToolUseError("the tool's config names no tasks file: make it with `envc adapters verl-config TASKS`")
        task = tasks_by_id(self.tasks_path).get(trajectory.task_id)
        if task is None:
            raise ToolUseError(f"task {trajectory.task_id!r} is not in {self.tasks_path}")
        with trajectory.lock:
            if trajectory.failure:
                raise InfrastructureError(f"not scorable: the environment failed ({trajectory.failure})")
            for env in task["envs"]:
                if env not in trajectory.sessions:
                    start = task["initial_state"][env]
                    module = self._package_of(env)
                    trajectory.sessions[env] = open_session(module, start["scenario"], start["changes"])
                    trajectory.initial[env] = trajectory.sessions[env].state()
            finals = {env: trajectory.sessions[env].state() for env in task["envs"]}
            result = self.module.score(task, finals, {env: trajectory.initial[env] for env in task["envs"]})
        return float(result["reward"])

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        REGISTRY.release(instance_id)

    @staticmethod
    def finish_trajectory(key: str) -> None:
        """Free a trajectory keyed by VERL's request id, once it is scored."""
        REGISTRY.finish(key)

    def _package_of(self, env: str) -> ModuleType:
        """Another environment of a task, from the packages folder the config names (else
        the folder beside this tool's package): a task names environments, never folders
        (build/packages.py checks the name)."""
        if env == self.env:
            return self.module
        try:
            return package(packages.package_in(self.packages_root, env))
        except packages.PackageError as exc:
            raise ToolUseError(f"the task needs environment `{env}`: {exc}") from None

    def _trajectory(self, key: str, checked: Opening) -> Trajectory:
        """The trajectory `key`, with this tool's environment opened in it: a new one whose
        initial state cannot be opened is not kept."""
        trajectory = REGISTRY.trajectory(key, checked.task_id, self.capacity)
        with trajectory.lock:
            try:
                self._session(trajectory, checked)
            except ToolUseError:
                if not trajectory.sessions:
                    REGISTRY.finish(key)
                raise
        return trajectory

    def _session(self, trajectory: Trajectory, checked: Opening) -> Any:
        if self.env not in trajectory.sessions:
            trajectory.sessions[self.env] = open_session(self.module, checked.scenario, checked.changes)
            trajectory.initial[self.env] = trajectory.sessions[self.env].state()
        return trajectory.sessions[self.env]
