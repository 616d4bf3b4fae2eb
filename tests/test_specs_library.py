"""The shipped library: every spec under specs/ compiles into a package whose own
generated tests pass, and `envc new` scaffolds compile for every archetype."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiler.analyse import analyse_file, prototypes_dir
from compiler.build import scaffold

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.envspec"))
PROTOTYPES = sorted(prototypes_dir().glob("*.envspec"))


def _package_of(spec: Path) -> Path:
    result = analyse_file(spec)
    assert result.environment is not None, [str(d) for d in result.diagnostics]
    return ROOT / "generated" / result.environment.header.name


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_generated_tests_of_each_spec_pass(spec: Path) -> None:
    package = _package_of(spec)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(package),
            str(package / "tests"),
        ],
        cwd=package.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout


@pytest.mark.parametrize("prototype", PROTOTYPES, ids=[p.stem for p in PROTOTYPES])
def test_prototypes_analyse_cleanly(prototype: Path) -> None:
    result = analyse_file(prototype)
    assert result.environment is not None, [str(d) for d in result.diagnostics]
    assert result.environment.header.archetype == prototype.stem


def test_every_archetype_has_a_prototype_and_a_domain_spec() -> None:
    archetypes = {p.stem for p in PROTOTYPES}
    assert len(archetypes) == 10
    extended = {analyse_file(s).environment.header.archetype for s in SPECS}  # type: ignore[union-attr]
    assert archetypes <= extended


@pytest.mark.parametrize("archetype", scaffold.available_archetypes())
def test_scaffold_compiles_as_it_stands(archetype: str, tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "my_domain.envspec"
    (tmp_path / "pyproject.toml").write_text('[tool.envc]\noutput = "out"\n', encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "new", "my_domain", "--archetype", archetype, "-o", str(spec)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    qc = [] if archetype in ("custom", "transactional_workspace") else ["--no-qc"]
    run = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", *qc, str(spec)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "out" / "my_domain" / "environment.py").is_file()
