"""Stage 5, the static checks run by other tools: ruff (lint, with its default rules and
envc's selection, and format) and mypy --strict, each once over the whole check tree,
their findings sorted back to the package and file they are in. envc's own AST rules are
in `rules.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from compiler.check.package import Finding, Package
from compiler.lower.formatting import LINE_LENGTH, ruff_binary
from compiler.project import cache_folder

RUFF_RULES = "E,F,W,I,UP,B,C4"
"""envc's own rule selection, checked on top of ruff's default rule set (what `ruff check
--isolated` checks with no `--select`), so generated code is clean under either."""
RUFF_IGNORED = "E501,E741"  # long literals are fine; names like `l` are the spec author's choice


def _split(root: Path, path_text: str, packages: list[Package]) -> tuple[str, str] | None:
    try:
        relative = Path(path_text).resolve().relative_to(root.resolve())
    except ValueError:
        return None
    parts = relative.parts
    if not parts or parts[0] not in {p.name for p in packages}:
        return None
    return parts[0], "/".join(parts[1:])


def ruff_findings(root: Path, packages: list[Package]) -> Iterator[tuple[str, Finding]]:
    base = [ruff_binary(), "--quiet"]
    options = ["--isolated", "--line-length", str(LINE_LENGTH), "--target-version", "py311"]
    lint = subprocess.run(
        [
            *base[:1],
            "check",
            *options,
            "--extend-select",  # added to the defaults, not instead of them
            RUFF_RULES,
            "--ignore",
            RUFF_IGNORED,
            "--output-format",
            "json",
            str(root),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for item in json.loads(lint.stdout or "[]"):
        where = _split(root, item["filename"], packages)
        if where:
            yield where[0], Finding("ruff", where[1], item["location"]["row"], f"{item['code']} {item['message']}")
    fmt = subprocess.run(
        [*base[:1], "format", *options, "--check", str(root)], capture_output=True, text=True, check=False
    )
    for line in fmt.stdout.splitlines():
        if line.startswith("Would reformat: "):
            where = _split(root, line.removeprefix("Would reformat: ").strip(), packages)
            if where:
                yield where[0], Finding("ruff", where[1], 1, "not formatted as ruff format would")


def mypy_findings(root: Path, packages: list[Package]) -> Iterator[tuple[str, Finding]]:
    cache = cache_folder() / "mypy"
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-error-summary",
        "--show-absolute-path",
        "--no-color-output",
        "--cache-dir",
        str(cache),
        "--python-version",
        "3.11",
        *[str(root / p.name) for p in packages],
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=root)
    for line in result.stdout.splitlines():
        path_text, _, rest = line.partition(":")
        line_text, _, message = rest.partition(":")
        where = _split(root, path_text, packages)
        if where and line_text.strip().isdigit() and " note: " not in f" {message}":
            yield where[0], Finding("mypy", where[1], int(line_text), message.strip())
    if result.returncode not in (0, 1):
        yield packages[0].name, Finding("mypy", "", 0, f"mypy did not run: {result.stderr.strip()[:300]}")
