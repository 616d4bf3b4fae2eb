"""The layout of compiler/ (docs/pipeline.md, "How the code is laid out"): stages in
layers that import only downwards, checked by import-linter's contracts in pyproject.toml;
no import circle between any two modules; no module over 1,000 lines; no third-party
source copied into the repository."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPILER = ROOT / "compiler"
MAX_LINES = 1000
VENDORED_MARKERS = re.compile(r"Copyright \(c\)|Copyright \d{4}|Licensed under the|SPDX-License-Identifier", re.I)


def import_circles(package: str) -> list[list[str]]:
    """Groups of modules of `package` that import each other, directly or around a circle
    (every import counts: module level, inside functions, under TYPE_CHECKING)."""
    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_node(module)
        edges.add_edges_from((module, imported) for imported in graph.find_modules_directly_imported_by(module))
    return sorted(sorted(group) for group in nx.strongly_connected_components(edges) if len(group) > 1)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(script), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_import_contracts_hold() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_layers_contract_names_every_part_of_the_compiler() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    assert layers["exhaustive"] is True and layers["containers"] == ["compiler"]
    named = {part.strip() for layer in layers["layers"] for part in layer.split("|")}
    parts = {p.stem for p in COMPILER.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in COMPILER.iterdir() if (p / "__init__.py").is_file()}
    assert named == parts


def test_no_import_circle_in_the_compiler() -> None:
    assert import_circles("compiler") == []


def test_a_circle_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a package whose modules import each other is reported."""
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f() -> None:\n    from circled import b  # inside a function counts too\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled import a\n")
    (package / "c.py").write_text("from circled import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_circles("circled") == [["circled.a", "circled.b"]]


def test_a_broken_layer_is_reported(tmp_path: Path) -> None:
    """lint-imports with this project's kind of contract fails on an upward import."""
    package = tmp_path / "staged"
    (package / "low").mkdir(parents=True)
    (package / "high").mkdir()
    for init in (package / "__init__.py", package / "low" / "__init__.py", package / "high" / "__init__.py"):
        init.write_text("")
    (package / "low" / "part.py").write_text("def f() -> None:\n    from staged.high import __name__ as _\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_package = "staged"\n\n[[tool.importlinter.contracts]]\nname = "layers"\n'
        'type = "layers"\nlayers = ["high", "low"]\ncontainers = ["staged"]\n'
    )
    done = lint_imports(tmp_path)
    assert done.returncode == 1
    assert "staged.low is not allowed to import staged.high" in done.stdout


def test_no_module_of_the_compiler_is_over_1000_lines() -> None:
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in COMPILER.rglob("*.py")
    }
    assert {path: lines for path, lines in sizes.items() if lines > MAX_LINES} == {}


def test_no_third_party_source_is_copied_into_the_repository() -> None:
    """Upstream code is installed (pyproject.toml), never copied: no file of ours carries
    another project's licence header."""
    tracked = subprocess.run(
        ["git", "ls-files", "compiler", "tests", "benchmarks", "templates", "grammar"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not tracked:  # not a git checkout (an unpacked sdist): look at the files themselves
        tracked = [p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*") if p.is_file()]
    headed = [
        name
        for name in tracked
        if name != Path(__file__).relative_to(ROOT).as_posix()
        and (ROOT / name).is_file()
        and VENDORED_MARKERS.search((ROOT / name).read_text(encoding="utf-8", errors="replace")[:4000])
    ]
    assert headed == []
