"""Rewrite the command samples of README.md and docs/*.md from real runs: the one way to update them.

    python tests/refresh_docs.py           # rerun every sample, rewrite those whose output changed
    python tests/refresh_docs.py --check   # write nothing; exit 1 if a sample differs from its run

A sample is a fenced block right after a `<!-- refresh -->` line (or `<!-- refresh: SETUP
-->`) whose `$ COMMAND` lines are each followed by what the command prints. It runs in a
fresh copy of this repository's project (`PROJECT_PARTS`, no `generated/` and no
`.envc-cache/`: a clone before its first compile), where `envc` is this tree's compiler:
SETUP first, silently, with bash (`$REPO` is this repository, for specs that only a
sample uses: tests/fixtures/docs/), then each command with bash, stdout and stderr in the
order a terminal shows them. The block is the real output.

Output is compared in every column that is the same on every run: everything but the
`time` column of `envc compile`'s table, whose widths follow from it. So a sample is
rewritten only when something besides the time changed, and a rewrite keeps the times
of that run. `tests/docs/test_command_samples.py` runs the same samples and compares them
the same way, so the test and the refresh can never disagree.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PARTS = ("pyproject.toml", "compiler", "templates", "grammar", "specs")
"""What a clone holds that `envc compile` reads: the project file, the compiler (so a
sample may edit it and see the fingerprint change), its data folders and the specs."""
SAMPLE = re.compile(r"^<!-- refresh(?:: (?P<setup>.*?))? -->\n```\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
TIME_COLUMN = "time"
TIME_SHOWN = "<time>"


@dataclass(frozen=True)
class Sample:
    """One marked block: where it is, its setup and its text as written."""

    path: Path
    setup: str
    body: str
    start: int  # offsets of the body in the file's text
    end: int

    @property
    def name(self) -> str:
        line = self.path.read_text(encoding="utf-8").count("\n", 0, self.start) + 1
        return f"{self.path.relative_to(ROOT).as_posix()}:{line}"

    @property
    def commands(self) -> list[str]:
        return [line[2:] for line in self.body.splitlines() if line.startswith("$ ")]


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def samples_of(path: Path) -> list[Sample]:
    text = path.read_text(encoding="utf-8")
    return [
        Sample(path, match["setup"] or "", match["body"], match.start("body"), match.end("body"))
        for match in SAMPLE.finditer(text)
    ]


def all_samples() -> list[Sample]:
    return [sample for path in documents() for sample in samples_of(path)]


def make_clone(folder: Path) -> dict[str, str]:
    """Copy the project into `folder` and give the environment its commands run with:
    `envc` on PATH runs the copy's compiler with this Python, `REPO` is this repository."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    for part in PROJECT_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, folder / part, ignore=ignore)
        else:
            shutil.copy2(source, folder / part)
    bin_folder = folder.parent / "bin"
    bin_folder.mkdir(exist_ok=True)
    shim = bin_folder / "envc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m compiler.cli "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}
    env.update(
        PATH=f"{bin_folder}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(folder),
        PYTHONUNBUFFERED="1",
        REPO=str(ROOT),
    )
    return env


def run_sample(sample: Sample) -> str:
    """The sample's commands run in a fresh clone, each followed by what it printed."""
    with tempfile.TemporaryDirectory(prefix="envc-sample-") as temporary:
        project = Path(temporary) / "project"
        project.mkdir()
        env = make_clone(project)
        if sample.setup:
            done = subprocess.run(["bash", "-ec", sample.setup], cwd=project, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{sample.name}: the setup `{sample.setup}` failed:\n{done.stdout}{done.stderr}")
        parts = []
        for command in sample.commands:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=project,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            parts.append(f"$ {command}\n{done.stdout}")
        return "".join(parts)


def cells(line: str) -> list[str]:
    """A row of `envc compile`'s table: its columns are separated by two spaces or more."""
    return re.split(r" {2,}", line.strip())


def comparable(text: str) -> list[str]:
    """`text`'s lines with each table's time column replaced by TIME_SHOWN and its
    padding dropped: what must match between a sample and its run."""
    lines: list[str] = []
    time_at: int | None = None
    width = 0
    for line in text.splitlines():
        row = cells(line)
        if row[0] == "spec" and TIME_COLUMN in row:
            time_at, width = row.index(TIME_COLUMN), len(row)
        elif time_at is not None and len(row) == width:
            row[time_at] = TIME_SHOWN
        else:
            time_at = None
            lines.append(line.rstrip())
            continue
        lines.append(" | ".join(row))
    return lines


def differs(sample: Sample, output: str) -> bool:
    return comparable(sample.body) != comparable(output)


def refresh(check_only: bool) -> list[str]:
    """Rerun every sample; rewrite (unless `check_only`) those that differ. Returns their names."""
    stale = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        rewritten = text
        for sample in reversed(samples_of(path)):  # from the end: earlier offsets stay valid
            output = run_sample(sample)
            if differs(sample, output):
                stale.append(sample.name)
                rewritten = rewritten[: sample.start] + output + rewritten[sample.end :]
        if rewritten != text and not check_only:
            path.write_text(rewritten, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a sample is stale")
    args = parser.parse_args(argv)
    stale = refresh(check_only=args.check)
    for name in stale:
        print(f"{'stale' if args.check else 'rewritten'}: {name}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
