"""What the checks take and give: a lowered package (`Package`), one problem found in one
of its files (`Finding`), and a package's verdict (`CheckResult`); and the package's files
written to a folder, as the checks (and tests, and sampling) run them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from compiler import ir


@dataclass
class Finding:
    """One problem in one generated file, before it is mapped to the spec."""

    tool: str  # "ruff", "mypy", "ast", "pytest"
    file: str  # relative to the package folder
    line: int
    message: str
    trace: list[int] = field(default_factory=list)
    """For a failed test: the lines of `file` its traceback passes through, outermost
    first (`at_failed_step` picks the one that names the failing spec step)."""


@dataclass
class CheckResult:
    static_ok: bool = True
    dynamic_ok: bool = True
    findings: list[Finding] = field(default_factory=list)
    tests_passed: int = 0
    tests_failed: int = 0


@dataclass
class Package:
    """A lowered environment: its IR and its files, ready to be checked or written."""

    env: ir.Environment
    name: str
    files: dict[str, str]
    inputs: list[str] = field(default_factory=list)  # every file the output depends on

    @property
    def has_python_bodies(self) -> bool:
        """Whether a spec author's Python is in the package (a `python` body): everything
        else in it is envc's own code."""
        return any(d.escape is not None and d.escape.kind == "python" for d in [*self.env.tools, *self.env.fns])


def write_tree(folder: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
