"""Start-up and whole-library commands as a user runs them: `envc --help`, `envc check
specs/` and a no-change `envc compile --check`, each a fresh process, before and after
the front-end work of issue 15.

    python benchmarks/cli_startup.py             # min of 5 runs of each
    python benchmarks/cli_startup.py --runs 9 --importtime
    python benchmarks/cli_startup.py --whole-tree --before 845d62e   # main then vs now

"After" is the working tree; "before" is the same tree with the files issue 15 changed
for speed (`CHANGED`) put back as they are at `--before REV` (default `HEAD`: run it on
an uncommitted front-end change; `git show`, which changes nothing). REV's versions of
those files must still fit the rest of the tree: the figures in docs/benchmarks.md §8
were taken with the issue-15 work uncommitted on top of 82e7249. With `--whole-tree`,
"before" is the whole snapshot (compiler, grammar, templates, specs) as it was at REV,
which always fits, when the tree has moved on too far for a mix. Both are copied into temporary projects first (compiler/, grammar/,
templates/, specs/, pyproject.toml), so edits made meanwhile do not disturb the run. The
commands alternate, so machine load hits both alike; each figure is the min of N wall
times (the machine is shared: the min is the least disturbed).

- `envc check specs/` after, cold: `ENVC_PARSE_CACHE=0` (parsed prototypes are still
  shared within the run); warm: the parse cache filled by an earlier run; `--jobs 1`:
  the whole check in one process, no workers.
- `envc compile --check --no-qc`: each tree's own output, compiled once untimed.
- `--importtime`: the slowest imports of `envc --help` after (`python -X importtime`).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ("compiler", "grammar", "templates", "specs", "pyproject.toml")
CHANGED = (
    "compiler/cli/__init__.py",
    "compiler/front/parse.py",
    "compiler/front/load.py",
    "compiler/check/__init__.py",
    "compiler/build/pipeline.py",
    "compiler/analyse/context.py",
    "compiler/analyse/symbols.py",
    "compiler/analyse/effects.py",
)


BEFORE = "HEAD"
"""Where the 'before' versions of `CHANGED` come from by default."""


def snapshot_of_revision(target: Path, revision: str) -> Path:
    """The snapshot's paths exactly as they are at `revision` (`git archive`)."""
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", revision, *SNAPSHOT], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def snapshot(target: Path, from_head: tuple[str, ...], revision: str = BEFORE) -> Path:
    for name in SNAPSHOT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    for relative in from_head:
        text = subprocess.run(
            ["git", "show", f"{revision}:{relative}"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        (target / relative).write_bytes(text)
    return target


def envc(project: Path, *args: str, cache: Path, parse_cache: bool = True) -> float:
    env = {**os.environ, "PYTHONPATH": str(project), "XDG_CACHE_HOME": str(cache)}
    if not parse_cache:
        env["ENVC_PARSE_CACHE"] = "0"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args], cwd=project, env=env, capture_output=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"envc {' '.join(args)} failed in {project}:\n{done.stdout.decode()[-2000:]}")
    return seconds


def importtime(project: Path, cache: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(project), "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "compiler.cli", "--help"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [line for line in done.stderr.splitlines() if line.startswith("import time:") and "cumulative" not in line]
    rows.sort(key=lambda line: int(line.split("|")[1]), reverse=True)
    return rows[:12]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--before", default=BEFORE, help="the revision whose front-end files make the 'before' tree")
    parser.add_argument("--whole-tree", action="store_true", help="'before' is the whole snapshot at --before")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="envc-startup-") as scratch:
        base = Path(scratch)
        if args.whole_tree:
            before = snapshot_of_revision(base / "before", args.before)
        else:
            before = snapshot(base / "before", CHANGED, args.before)
        after = snapshot(base / "after", ())
        caches = {before: base / "cache-before", after: base / "cache-after"}
        for project in (before, after):  # untimed: output for --check, caches filled
            envc(project, "compile", "--no-qc", cache=caches[project])
            envc(project, "check", "specs", cache=caches[project])
        commands: dict[str, tuple[tuple[str, ...], bool]] = {
            "envc --help": (("--help",), True),
            "envc check specs/ (parse cache cold)": (("check", "specs"), False),
            "envc check specs/ (parse cache warm)": (("check", "specs"), True),
            "envc check specs/ --jobs 1 (warm)": (("check", "specs", "--jobs", "1"), True),
            "envc compile --check (no change)": (("compile", "--check", "--no-qc"), True),
        }
        best: dict[tuple[str, Path], float] = {}
        for _ in range(args.runs):
            for name, (command, parse_cache) in commands.items():
                for project in (before, after):
                    seconds = envc(project, *command, cache=caches[project], parse_cache=parse_cache)
                    best[name, project] = min(best.get((name, project), float("inf")), seconds)
        specs = len(list((after / "specs").rglob("*.envspec")))
        print(f"{specs} spec files under specs/; {platform.python_version()}, {os.cpu_count()} cores")
        print(f"min of {args.runs} runs, wall seconds of a fresh process")
        print(f"{'':>40} {'before':>8} {'after':>8} {'after/before':>13}")
        for name in commands:
            old, new = best[name, before], best[name, after]
            print(f"{name:>40} {old:8.3f} {new:8.3f} {new / old:13.2f}")
        if args.importtime:
            print("\nslowest imports of `envc --help` after (self us | cumulative us | module):")
            print("\n".join(importtime(after, caches[after])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
