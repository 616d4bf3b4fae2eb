"""Facts about the project envc works in and about envc itself, shared by every stage:
where the project's root and output folder are, where envc keeps its cache, how a path is
shown, and the compiler's fingerprint (which parts of envc shape its output).

It sits below every stage (the parse cache keys on the fingerprint, the LLM layer and the
commands show paths), so it imports nothing of the compiler.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tomllib
from pathlib import Path

SPEC_SUFFIX = ".envspec"
"""How a spec file's name ends (`envc check DIR` and the default specs/ look for it)."""


def find_project_root(start: Path) -> Path:
    """The nearest folder upwards with a pyproject.toml, else `start`."""
    for folder in [start, *start.parents]:
        if (folder / "pyproject.toml").is_file():
            return folder
    return start


def configured_output(root: Path) -> Path:
    """`[tool.envc] output` from pyproject.toml, relative to it; `generated` by default."""
    pyproject = root / "pyproject.toml"
    output = "generated"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            data = {}
        value = data.get("tool", {}).get("envc", {}).get("output")
        if isinstance(value, str) and value:
            output = value
    return root / output


SPECS_FOLDER = "specs"
"""The project's specs folder, relative to its root: `envc compile` with no arguments
compiles what is below it, and a spec's place in it decides where its package goes."""
PROTOTYPES_FOLDER = "prototypes"
"""The folder of specs/ holding the archetype prototypes: specs other specs extend, never
compiled on their own."""


def specs_folder(root: Path) -> Path:
    """The project's specs folder (`specs/` under its root)."""
    return root / SPECS_FOLDER


def default_specs(root: Path) -> list[Path]:
    """Every spec below specs/, at any depth, except the prototypes and hidden folders:
    what `envc compile` compiles when given no spec."""
    folder = specs_folder(root)
    return sorted(
        path
        for path in folder.rglob(f"*{SPEC_SUFFIX}")
        if path.is_file() and _library_part(path.relative_to(folder).parts[:-1])
    )


def _library_part(parts: tuple[str, ...]) -> bool:
    """Whether a folder of specs/ (its parts below specs/) holds specs that are compiled."""
    return not (parts and parts[0] == PROTOTYPES_FOLDER) and not any(part.startswith(".") for part in parts)


def mirrored_output(spec: Path, root: Path, output: Path) -> Path:
    """The folder that holds `spec`'s package: the output root, mirrored by the spec's folder
    below the project's specs folder (`specs/commerce/x.envspec` -> `generated/commerce/`);
    the output root itself for a spec anywhere else."""
    try:
        relative = spec.resolve().parent.relative_to(specs_folder(root).resolve())
    except ValueError:
        return output
    return output.joinpath(*relative.parts)


def cache_folder() -> Path:
    """envc's cache, outside any project: `$XDG_CACHE_HOME/envc` (`~/.cache/envc`)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "envc"


FINGERPRINT_EXCLUDED = frozenset(
    {
        *("cli", "run", "serve"),
        *("front/fmt.py", "build/scaffold.py"),
    }
)
"""Modules (and subpackages) that cannot shape what `envc compile` writes or whether it
passes: the command line, the spec formatter, `envc new`, and the stages that run
compiled packages (calibration, rollouts, Ray, serving, trainer adapters). Nothing else
imports them (tests/test_pipeline.py checks it), so editing them leaves every manifest
valid."""
FINGERPRINT_FOLDERS = ("templates", "grammar")
"""Data folders that shape the output: inside the package in a wheel, beside it in a
source checkout. Both layouts give them the same keys (`templates/README.md.jinja`)."""


@functools.cache
def compiler_fingerprint() -> str:
    """A hash of every part of envc that shapes its output or its checks: changing one
    regenerates everything (see `fingerprint_files`)."""
    return fingerprint_of(Path(__file__).resolve().parent)


def fingerprint_of(package: Path) -> str:
    """The fingerprint of the compiler package at `package` (its folder)."""
    digest = hashlib.sha256()
    for key, path in sorted(fingerprint_files(package).items()):
        data = path.read_bytes()
        digest.update(f"{key}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def fingerprint_files(package: Path) -> dict[str, Path]:
    """Every file the fingerprint covers, keyed by its path relative to the package
    root, so a source checkout and a wheel agree: each module under the package,
    found recursively (new subpackages included) except `FINGERPRINT_EXCLUDED`, any
    data file there, and every file of `templates/` and `grammar/`. Left out: caches,
    hidden files, and the shipped prototypes (`prototypes/` in a wheel,
    `specs/prototypes/` in a checkout), which each manifest lists among its inputs
    when its spec extends them."""
    files: dict[str, Path] = {}
    for path in _folder_files(package):
        key = path.relative_to(package).as_posix()
        top = key.split("/", 1)[0]
        if key not in FINGERPRINT_EXCLUDED and top not in FINGERPRINT_EXCLUDED and top != "prototypes":
            files[key] = path
    for name in FINGERPRINT_FOLDERS:
        if not (package / name).is_dir():
            beside = package.parent / name
            files.update({f"{name}/{p.relative_to(beside).as_posix()}": p for p in _folder_files(beside)})
    return files


def _folder_files(folder: Path) -> list[Path]:
    """Files below `folder`, without caches, hidden files and editor backups."""
    if not folder.is_dir():
        return []
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file()
        and not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(folder).parts)
        and path.suffix not in (".pyc", ".pyo")
        and not path.name.endswith("~")
    )


def display_path(path: Path, root: Path) -> str:
    """How generated headers name a spec: relative to the project, with forward slashes."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
