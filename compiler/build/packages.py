"""The generated-package contract, as the stages that run packages see it.

A compiled package is a folder (generated/<name>/) holding the modules envc lowered, its
tool metadata (`tools.json`, `openai_tools.json`) and the manifest `envc compile` writes.
The sampler, the task audits, the server, rollouts and the trainer adapters all import it
from its folder under a private name and open its environment at a task's start through
here, so a package and a start mean the same to each of them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

MANIFEST = ".envc-manifest.json"
"""What `envc compile` writes into each output folder: the hash of every file and input."""
TOOLS_FILE = "tools.json"
OPENAI_TOOLS_FILE = "openai_tools.json"
DIGESTED_FILES = ("environment.py", "scoring.py", TOOLS_FILE)
"""The files whose bytes decide how a package behaves, with the data files the
environment reads (`data/`): a journal records their digest, so a restart never
replays calls against a different build of the environment."""


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What names an environment: a spec's NAME (grammar/envspec.lark). A task file's `envs`
hold such names, never paths, so no row of a file can make envc import a folder."""


class PackageError(ValueError):
    """A folder that is not an importable generated package (the message names it)."""


def env_name_problem(value: object) -> str:
    """Why `value` cannot name an environment, or "". Task rows come from files anyone may
    hand envc: a path in place of a name (`../../elsewhere/pkg`, `/abs/pkg`) is refused
    here, before any folder is looked at."""
    if isinstance(value, str) and ENV_NAME.fullmatch(value):
        return ""
    return f"environments are named, not given as paths: {json.dumps(value)} is not an environment name"


def package_in(folder: Path, name: str) -> Path:
    """The package of environment `name` in a packages folder (`--packages-dir`, or the
    folder of the packages given on the command line), at any depth below it
    (`generated/<domain>/<name>/`), only for a plain environment name. Raises
    PackageError naming the name or the folder looked in."""
    problem = env_name_problem(name)
    if problem:
        raise PackageError(problem)
    if is_package(folder / name):
        return folder / name
    found = find_packages(folder).get(name)
    if found is None:
        raise PackageError(f"no generated package of `{name}` in {folder}")
    return found


def find_packages(folder: Path) -> dict[str, Path]:
    """Every generated package below `folder`, at any depth, by environment name (its
    folder's name); hidden folders and a package's own subfolders are not searched. Two
    packages of one name are a PackageError naming both: a task names environments, so
    one name must mean one package."""
    found: dict[str, Path] = {}
    for current, subfolders, _ in os.walk(folder):
        path = Path(current)
        if is_package(path) and path != folder:
            if path.name in found:
                raise PackageError(f"two packages of `{path.name}` below {folder}: {found[path.name]} and {path}")
            found[path.name] = path
            subfolders.clear()
            continue
        subfolders[:] = sorted(s for s in subfolders if not s.startswith(".") and s != "__pycache__")
    return found


def is_package(path: Path) -> bool:
    """Whether `path` is a generated package folder (it has its tool metadata and `__init__.py`)."""
    return path.is_dir() and (path / TOOLS_FILE).is_file() and (path / "__init__.py").is_file()


def read_manifest(folder: Path) -> dict[str, object] | None:
    """The manifest of an output folder; None when it is missing or not a JSON object."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def package_digest(folder: Path) -> str:
    """The digest of `DIGESTED_FILES` and of every data file, each by its path."""
    digest = hashlib.sha256(b"".join((folder / name).read_bytes() for name in DIGESTED_FILES))
    for path in sorted((folder / "data").rglob("*.json")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def folder_alias(purpose: str, name: str, folder: Path) -> str:
    """A private module name for the package `name` in `folder`, per purpose, so two folders
    of one environment (or a package and its source checkout) never share a module."""
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:10]
    return f"_envc_{purpose}_{name}_{digest}"


def import_package(folder: Path, alias: str) -> ModuleType:
    """Import a generated package from its folder under a private name (so two
    environments, or a package and its source checkout, never collide); once per alias."""
    if alias in sys.modules:
        return sys.modules[alias]
    spec = importlib.util.spec_from_file_location(
        alias, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise PackageError(f"{folder} is not a generated package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[alias]
        raise PackageError(f"cannot import the generated package in {folder}: {exc}") from exc
    return module


def package_folder(package: ModuleType) -> Path:
    """The folder an imported generated package was loaded from."""
    return Path(str(package.__file__)).parent


def open_at_start(
    package: ModuleType,
    start: Mapping[str, Any],
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[Any, str | None]:
    """The package's environment at a task's start (`{"scenario", "changes"}`), opened by
    the package's own `open_environment` (load `options`, changes, a reseed with `seed`),
    and what the seed did (None without one). Raises the package's ScenarioError, or its
    scoring.VerifierError for a change with no place to go."""
    live, effect = package.open_environment(start.get("scenario"), start.get("changes"), seed, options)
    return live, effect
