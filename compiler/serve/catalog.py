"""What a server serves: generated packages (generated/<name>/) and task sets
(tasks.jsonl), loaded once at start so a bad path fails before the port opens."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from compiler import project
from compiler.build import packages, pipeline

TASKS_FILE = "tasks.jsonl"


class CatalogError(ValueError):
    """A path that is neither a generated package nor a task set, or tasks naming an
    environment that is not served (the message names the path)."""


@dataclass(frozen=True)
class ServedEnv:
    """One generated package, imported, with its tool metadata."""

    name: str
    folder: Path
    package: ModuleType
    title: str
    entries: tuple[dict[str, Any], ...]
    """tools.json's entries (parameters, modifies_state, errors)."""
    openai_tools: tuple[dict[str, Any], ...]
    digest: str

    @functools.cached_property
    def tool_names(self) -> frozenset[str]:
        """The package's tool names (read for every tool of every session opened)."""
        return frozenset(str(entry["name"]) for entry in self.entries)

    @functools.cached_property
    def writers(self) -> frozenset[str]:
        """The tools that may change state (tools.json's `modifies_state`)."""
        return frozenset(str(entry["name"]) for entry in self.entries if entry.get("modifies_state"))

    @property
    def scenarios(self) -> tuple[str, ...]:
        return tuple(sorted(self.package.SCENARIOS))


@dataclass(frozen=True)
class Catalog:
    """The served environments by name and the served tasks by id."""

    envs: Mapping[str, ServedEnv]
    tasks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return ", ".join(sorted(self.envs))

    def env(self, name: str | None) -> ServedEnv:
        """The environment called `name`; None means the only one served."""
        if name is None:
            if len(self.envs) != 1:
                raise CatalogError(f"several environments are served ({self.name}): name one with `env`")
            return next(iter(self.envs.values()))
        found = self.envs.get(name)
        if found is None:
            raise CatalogError(f"no environment `{name}` is served (served: {self.name})")
        return found

    def task(self, task_id: str) -> Mapping[str, Any]:
        found = self.tasks.get(task_id)
        if found is None:
            raise CatalogError(f"no task `{task_id}` is served ({len(self.tasks)} tasks)")
        return found


def load_catalog(paths: Iterable[Path], packages_dir: Path | None = None) -> Catalog:
    """Packages and task sets from `paths`; environments the tasks name that are not
    among the paths are looked up as `packages_dir/<name>`. A task names environments,
    never folders: every task is checked before anything a task names is imported."""
    envs: dict[str, ServedEnv] = {}
    rows: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        if not path.exists():
            raise CatalogError(f"{path} does not exist")
        if packages.is_package(path) or _is_spec(path):
            env = load_env(package_of(path))
            envs[env.name] = env
        elif (task_file := _task_file(path)) is not None:
            rows += [(f"{task_file}:{line}", row) for line, row in _read_tasks(task_file)]
        else:
            raise CatalogError(
                f"{path}: neither a generated package (no {packages.TOOLS_FILE}), a spec nor a task set (no {TASKS_FILE})"
            )
    wanted = {
        name: _package_for_task(name, row, where, packages_dir)
        for where, row in rows
        for name in row["envs"]
        if name not in envs
    }
    envs |= {name: load_env(folder) for name, folder in wanted.items()}
    if not envs:
        raise CatalogError("nothing to serve: give a generated package folder or a task set")
    return Catalog(envs=envs, tasks={str(row["id"]): row for _, row in rows})


def load_env(folder: Path) -> ServedEnv:
    """A generated package folder, imported under a private alias."""
    try:
        meta = json.loads((folder / packages.TOOLS_FILE).read_text(encoding="utf-8"))
        openai_tools = json.loads((folder / packages.OPENAI_TOOLS_FILE).read_text(encoding="utf-8"))["tools"]
        digest = packages.package_digest(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogError(f"{folder}: not a readable generated package: {exc}") from None
    name = str(meta["environment"])
    try:
        package = packages.import_package(folder, f"_envc_serve_{name}_{digest[:12]}")
    except packages.PackageError as exc:
        raise CatalogError(str(exc)) from None
    if not hasattr(package.Environment, "call_and_commit"):  # calls could not be rolled back after the tool
        raise CatalogError(f"{folder} was compiled by an older envc: run `envc compile` to serve it")
    return ServedEnv(
        name=name,
        folder=folder,
        package=package,
        title=str(meta.get("title", name)),
        entries=tuple(meta["tools"]),
        openai_tools=tuple(openai_tools),
        digest=digest,
    )


def package_of(target: Path) -> Path:
    """A generated package folder as given, or the up-to-date package of a spec file
    (compiler/build/pipeline.py decides what is up to date)."""
    if not _is_spec(target):
        return target
    spec = target.resolve()
    folder = pipeline.current_package(spec, project.find_project_root(spec.parent))
    if folder is None:
        raise CatalogError(f"the package of {target} is missing or out of date: run `envc compile {target}` first")
    return folder


def _is_spec(path: Path) -> bool:
    return path.is_file() and path.suffix == project.SPEC_SUFFIX


def _task_file(path: Path) -> Path | None:
    if path.is_dir() and (path / TASKS_FILE).is_file():
        return path / TASKS_FILE
    if path.is_file() and path.suffix == ".jsonl":
        return path
    return None


def _read_tasks(path: Path) -> list[tuple[int, dict[str, Any]]]:
    from compiler.synth import export

    try:
        return export.read_numbered_tasks(path)
    except export.TaskFileError as exc:
        raise CatalogError(str(exc)) from None


def _package_for_task(name: str, task: Mapping[str, Any], where: str, packages_dir: Path | None) -> Path:
    """The package folder of an environment a task names but the command line did not
    give: only `packages_dir/<name>` (build/packages.py refuses anything but a name)."""
    if packages_dir is None:
        raise CatalogError(f"{where}: task {task['id']} needs environment `{name}`: give its package folder")
    try:
        return packages.package_in(packages_dir, name)
    except packages.PackageError as exc:
        raise CatalogError(
            f"{where}: task {task['id']} needs environment `{name}`, which is not served ({exc})"
        ) from None
