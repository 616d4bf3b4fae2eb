"""Loading lowered code in tests: `environment.py` text run as a module of its own, or a
fixture spec's whole package written to a folder and imported."""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

from compiler.analyse import analyse_file
from compiler.lower import lower


def environment_module(source: str, name: str) -> types.ModuleType:
    """`source` (a lowered environment.py) executed as module `name`; dataclasses look
    their module up in `sys.modules` while the class bodies run, so it is there meanwhile."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, "environment.py", "exec"), module.__dict__)  # noqa: S102 - our own output
    finally:
        del sys.modules[name]
    return module


def lowered_files(spec: Path) -> dict[str, str]:
    """The package `spec` lowers to, by file name (the test fails with the diagnostics
    when the spec does not analyse)."""
    result = analyse_file(spec)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    return lower(result.environment, spec.name)


@contextlib.contextmanager
def imported_package(files: dict[str, str], root: Path, name: str, module: str = "") -> Iterator[types.ModuleType]:
    """The lowered `files` written as package `name` under `root` and imported (its
    `module`, e.g. `environment`, when given); afterwards `root` leaves `sys.path` and the
    package's modules leave `sys.modules`, so the next test imports afresh."""
    for relative, text in files.items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(f"{name}.{module}" if module else name)
    finally:
        sys.path.remove(str(root))
        for loaded in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[loaded]
