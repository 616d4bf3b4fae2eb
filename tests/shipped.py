"""Where the shipped library is, for tests: its specs below specs/ (a folder per domain)
and its packages below generated/ (the same folders), found the way `envc compile` and
`envc serve` find them (compiler/project.py, compiler/build/packages.py), so no test
spells a domain folder or puts a packages folder on sys.path by hand."""

from __future__ import annotations

import functools
import importlib
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

from compiler import project
from compiler.build import packages

ROOT = Path(__file__).resolve().parent.parent
SPECS = project.specs_folder(ROOT)
GENERATED = project.configured_output(ROOT)


def library_specs() -> list[Path]:
    """The specs `envc compile` compiles by default: every spec below specs/ but the prototypes."""
    return project.default_specs(ROOT)


def spec_path(stem: str) -> Path:
    """The shipped spec called `stem` (`ticketing` -> specs/it_operations/ticketing.envspec)."""
    found = [spec for spec in library_specs() if spec.stem == stem]
    assert len(found) == 1, f"{len(found)} shipped specs are called {stem}"
    return found[0]


DATA_READ = re.compile(r'\bfrom "([^"]+)"')
"""A state, world or scenario field read from a file beside the spec (`from "data/x.json"`)."""


def copy_spec(stem: str, folder: Path, name: str = "") -> Path:
    """Copy the shipped spec `stem` into `folder` (as `name`, else its own file name) with
    the data files it reads, at the same paths beside it: a spec whose scenarios live in
    JSON files does not analyse without them."""
    source = spec_path(stem)
    folder.mkdir(parents=True, exist_ok=True)
    copied = folder / (name or source.name)
    shutil.copy(source, copied)
    for relative in sorted(set(DATA_READ.findall(source.read_text(encoding="utf-8")))):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source.parent / relative, folder / relative)
    return copied


def spec_arg(stem: str) -> str:
    """The shipped spec called `stem` as a command line names it from the project root."""
    return spec_path(stem).relative_to(ROOT).as_posix()


@functools.cache
def package_dirs() -> dict[str, Path]:
    """Every shipped package folder by environment name."""
    return packages.find_packages(GENERATED)


def package_dir(name: str) -> Path:
    """The folder of the shipped package `name` (generated/<domain>/<name>/)."""
    return package_dirs()[name]


def package_names() -> list[str]:
    return sorted(package_dirs())


def package_parents() -> list[str]:
    """The folders holding shipped packages (generated/<domain>/), for sys.path."""
    return sorted({str(path.parent) for path in package_dirs().values()})


def put_on_path() -> None:
    """Every folder holding shipped packages on sys.path, so `import ticketing` finds one."""
    for folder in reversed(package_parents()):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def import_shipped(name: str) -> ModuleType:
    """The shipped package `name`, imported under its own name."""
    put_on_path()
    return importlib.import_module(name)


PROPERTY_FLOOR = 30
"""The fewest examples a property draws for one package, however large the library."""


def examples_per_package(total: int) -> int:
    """A property over every shipped package draws `total` examples in all, shared out
    (never fewer than PROPERTY_FLOOR each): the suite's time for it stays bounded as the
    library grows, instead of growing with the number of environments."""
    return max(PROPERTY_FLOOR, total // max(1, len(package_dirs())))
