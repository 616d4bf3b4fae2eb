"""The whole environment library: compile + full QC, `envc check specs/` warm, and task
synthesis over every environment, each as the command a user runs.

    python benchmarks/library.py                 # all three, -j 2, 100 tasks per environment
    python benchmarks/library.py --tasks 30      # fewer tasks asked of each environment
    python benchmarks/library.py --skip-tasks    # compile and check only

- compile: `envc compile -j 2 -o FRESH` of every spec `envc compile` compiles by default,
  into a fresh output folder (so every spec is analysed, lowered and fully checked:
  ruff, mypy --strict, envc's AST rules and the generated tests), wall clock and the CPU
  time of the command and its children (mypy's cache is whatever this machine has).
- check: `envc check specs/`, once to warm the caches, then `--runs` times, each beside
  a run with the check cache off (`ENVC_CHECK_CACHE=0`: every spec analysed, the parse
  cache still warm), alternating so load hits both alike; the median wall clock (the
  target is under 2 s), CPU time (what a loaded machine cannot inflate) and the ratio.
- tasks: `envc library tasks -n N --seed 1 -j JOBS` (one `envc tasks` process per
  catalog environment, JOBS at once); kept tasks, CPU time, and kept tasks per CPU
  minute; `--tasks-output specs/library-tasks.json` keeps the counts it measured.

Figures in docs/benchmarks.md ("The library").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a source checkout
    sys.path.insert(0, str(ROOT))

from compiler.project import default_specs  # noqa: E402


@dataclass
class Timed:
    """One command: exit code, wall-clock seconds and CPU seconds (its own and its children's)."""

    returncode: int
    wall: float
    cpu: float
    stdout: str
    stderr: str


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def envc(*args: str, env: dict[str, str] | None = None) -> Timed:
    """`envc ARGS` from the repository root, timed (CPU from the children's rusage)."""
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args], cwd=ROOT, capture_output=True, text=True, check=False, env=env
    )
    return Timed(done.returncode, time.perf_counter() - started, children_cpu() - cpu, done.stdout, done.stderr)


def compile_library(jobs: int) -> Timed:
    with tempfile.TemporaryDirectory(prefix="envc-bench-library-") as out:
        return envc("compile", "-j", str(jobs), "-o", out)


def check_warm(runs: int) -> tuple[list[Timed], list[Timed]]:
    """`envc check specs/` with the check cache warm, and beside each run one with it off."""
    envc("check", "specs/")
    uncached_env = {**os.environ, "ENVC_CHECK_CACHE": "0"}
    cached, uncached = [], []
    for _ in range(runs):
        cached.append(envc("check", "specs/"))
        uncached.append(envc("check", "specs/", env=uncached_env))
    return cached, uncached


def synthesise(count: int, jobs: int, output: Path | None) -> tuple[dict[str, int], Timed]:
    """`envc library tasks -n COUNT --seed 1 -j JOBS`: kept tasks per environment, and the run."""
    with tempfile.TemporaryDirectory(prefix="envc-bench-tasks-") as scratch:
        target = output or Path(scratch) / "library-tasks.json"
        timed = envc("library", "tasks", "-n", str(count), "--seed", "1", "-j", str(jobs), "-o", str(target))
        try:
            measured = json.loads(target.read_text(encoding="utf-8"))["environments"]
        except (OSError, ValueError, KeyError):
            measured = {}
    return {name: int(entry["kept"]) for name, entry in measured.items()}, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=2, help="envc compile -j (default 2)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of envc check specs/")
    parser.add_argument("--tasks", type=int, default=100, help="tasks asked of each environment")
    parser.add_argument("--skip-tasks", action="store_true", help="compile and check only")
    parser.add_argument(
        "--tasks-output", type=Path, default=None, help="keep the measured counts here (specs/library-tasks.json)"
    )
    args = parser.parse_args()
    specs = default_specs(ROOT)
    print(f"library: {len(specs)} specs (every spec below specs/ but the prototypes)")

    compiled = compile_library(args.jobs)
    rows = sum(1 for line in compiled.stdout.splitlines() if line.startswith("specs/"))
    status = "ok" if compiled.returncode == 0 else f"exit {compiled.returncode}"
    print(
        f"compile + full QC, -j {args.jobs}: {compiled.wall:.1f} s wall, {compiled.cpu:.1f} s CPU, "
        f"{rows} specs ({status}); {compiled.wall / max(1, rows):.2f} s wall per spec"
    )
    if compiled.returncode != 0:
        print(compiled.stderr[-2000:])

    checks, uncached = check_warm(args.runs)
    for label, runs in (("warm", checks), ("check cache off", uncached)):
        walls, cpus = [c.wall for c in runs], [c.cpu for c in runs]
        print(
            f"envc check specs/ {label}: median {statistics.median(walls):.2f} s wall (min {min(walls):.2f} s), "
            f"median {statistics.median(cpus):.2f} s CPU, over {len(runs)} runs"
        )
    ratio = statistics.median(c.wall for c in uncached) / statistics.median(c.wall for c in checks)
    print(f"  the check cache: {ratio:.1f}x faster (medians of wall); target < 2 s wall warm")

    if not args.skip_tasks:
        kept, run = synthesise(args.tasks, args.jobs, args.tasks_output)
        total = sum(kept.values())
        rate = total / (run.cpu / 60) if run.cpu else 0.0
        print(
            f"envc library tasks -n {args.tasks} --seed 1 -j {args.jobs}: {total} kept tasks from {len(kept)} "
            f"environments in {run.cpu:.1f} s CPU ({run.wall:.1f} s wall): {rate:.0f} tasks per CPU minute"
        )
        short = sorted(name for name, found in kept.items() if found < args.tasks)
        print(f"  short of {args.tasks}: {', '.join(short) if short else 'none'}")
        if run.returncode != 0:
            print(run.stderr[-2000:])
    return 0 if compiled.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
