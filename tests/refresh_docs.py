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
import shlex
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
GENERATED = re.compile(
    r"^<!-- generated: (?P<command>envc [^\n]*?) -->\n(?P<body>.*?)^<!-- /generated -->$", re.MULTILINE | re.DOTALL
)
"""A section of a document that is a command's output verbatim (markdown, not a fenced
sample), such as docs/library.md's table from `envc library show --format markdown`:
run in this repository (it reads the committed specs and measured task counts)."""
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


@dataclass(frozen=True)
class Section:
    """One generated section: the command and its text as written."""

    path: Path
    command: str
    body: str
    start: int
    end: int

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()} ({self.command})"


def sections_of(path: Path) -> list[Section]:
    text = path.read_text(encoding="utf-8")
    return [
        Section(path, match["command"], match["body"], match.start("body"), match.end("body"))
        for match in GENERATED.finditer(text)
    ]


def all_sections() -> list[Section]:
    return [section for path in documents() for section in sections_of(path)]


def run_section(section: Section) -> str:
    """What the section's command prints now, run with this tree's compiler."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "compiler.cli", *shlex.split(section.command)[1:]]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{section.path.name}: `{section.command}` failed:\n{done.stdout}{done.stderr}")
    return done.stdout


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


def differs(body: str, output: str) -> bool:
    """A sample is stale when more than `envc compile`'s time column changed."""
    return comparable(body) != comparable(output)


def section_differs(body: str, output: str) -> bool:
    """A generated section is stale when any byte changed."""
    return body != output


def refresh(check_only: bool) -> list[str]:
    """Rerun every sample; rewrite (unless `check_only`) those that differ. Returns their names."""
    stale = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        rewritten = text
        pieces = [(s.start, s.end, s.name, run_sample(s), differs) for s in samples_of(path)]
        pieces += [(s.start, s.end, s.name, run_section(s), section_differs) for s in sections_of(path)]
        for start, end, name, output, stale_if in sorted(pieces, key=lambda piece: -piece[0]):  # offsets stay valid
            if stale_if(text[start:end], output):
                stale.append(name)
                rewritten = rewritten[:start] + output + rewritten[end:]
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
