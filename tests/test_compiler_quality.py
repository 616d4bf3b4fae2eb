"""The compiler's own code, runtime helpers included (compiler/library/runtime.py is
copied into generated packages), passes mypy --strict and the project's ruff rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_compiler_passes_mypy_strict(tmp_path: Path) -> None:
    done = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))  # [tool.mypy] in pyproject.toml
    assert done.returncode == 0, done.stdout + done.stderr


def test_compiler_tests_and_benchmarks_pass_ruff() -> None:
    done = _run("ruff", "check", "--no-cache", "compiler", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr
    # tests/fixtures hold sources written as the AST rules' inputs, layout included.
    formatted = _run(
        "ruff", "format", "--check", "--no-cache", "--exclude", "tests/fixtures", "compiler", "tests", "benchmarks"
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
