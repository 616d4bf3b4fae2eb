"""The largest module and the largest functions of `compiler/`, at git revisions side by side.

    python benchmarks/code_size.py [REV ...]      # default: the commit before the
                                                  # front-end split, and the work tree

Lines are physical lines of the file or of the function's definition (decorators and
docstring included), as a reviewer meets them.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE_SPLIT = "27f160c"
WORK_TREE = "work tree"


def python_files(rev: str) -> dict[str, str]:
    """Path -> text of every .py file under compiler/ at `rev` (or in the work tree)."""
    if rev == WORK_TREE:
        return {
            p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in (ROOT / "compiler").rglob("*.py")
        }
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "compiler"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {
        name: subprocess.run(
            ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for name in names
        if name.endswith(".py")
    }


def functions(path: str, text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.append((node.end_lineno - first + 1, f"{path}:{node.name}"))
    return found


def report(rev: str) -> None:
    files = python_files(rev)
    sizes = sorted(((text.count("\n"), path) for path, text in files.items()), reverse=True)
    biggest = sorted((f for path, text in files.items() for f in functions(path, text)), reverse=True)
    total = sum(lines for lines, _ in sizes)
    print(f"== {rev}: {len(files)} modules, {total} lines")
    print("  largest modules:   " + ", ".join(f"{path} ({lines})" for lines, path in sizes[:3]))
    print("  largest functions: " + ", ".join(f"{name} ({lines})" for lines, name in biggest[:3]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revs", nargs="*", default=[BEFORE_SPLIT, WORK_TREE])
    for rev in parser.parse_args(argv).revs:
        report(rev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
