"""The whole environment library: compile + full QC, `envc check specs/` warm, and task
synthesis over every environment, each as the command a user runs.

    python benchmarks/library.py                 # all three, -j 2, 100 tasks per environment
    python benchmarks/library.py --tasks 30      # fewer tasks asked of each environment
    python benchmarks/library.py --skip-tasks    # compile and check only

- compile: `envc compile -j 2 -o FRESH` of every spec `envc compile` compiles by default,
  into a fresh output folder (so every spec is analysed, lowered and fully checked:
  ruff, mypy --strict, envc's AST rules and the generated tests), wall clock and the CPU
  time of the command and its children (mypy's cache is whatever this machine has).
- check: `envc check specs/`, once to warm the parse cache, then `--runs` times; the
  median wall clock (the target is under 2 s) and CPU time (what a loaded machine cannot
  inflate).
- tasks: `envc tasks SPEC -n N --seed 1` per environment, one process each (as
  `envc library tasks` runs them); kept tasks, CPU time, and kept tasks per CPU minute.

Figures in docs/benchmarks.md ("The library").
"""

from __future__ import annotations

import argparse
import json
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


def envc(*args: str) -> Timed:
    """`envc ARGS` from the repository root, timed (CPU from the children's rusage)."""
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return Timed(done.returncode, time.perf_counter() - started, children_cpu() - cpu, done.stdout, done.stderr)


def compile_library(jobs: int) -> Timed:
    with tempfile.TemporaryDirectory(prefix="envc-bench-library-") as out:
        return envc("compile", "-j", str(jobs), "-o", out)


def check_warm(runs: int) -> list[Timed]:
    envc("check", "specs/")
    return [envc("check", "specs/") for _ in range(runs)]


def synthesise(specs: list[Path], count: int) -> tuple[int, float, float, list[str]]:
    """Kept tasks, CPU seconds, wall seconds over every spec; the specs that failed."""
    kept, cpu, wall, failed = 0, 0.0, 0.0, []
    for spec in specs:
        with tempfile.TemporaryDirectory(prefix="envc-bench-tasks-") as out:
            timed = envc("tasks", str(spec), "-n", str(count), "--seed", "1", "-o", out)
            try:
                found = int(json.loads((Path(out) / "report.json").read_text(encoding="utf-8"))["kept"])
            except (OSError, ValueError, KeyError):
                found = 0
        kept, cpu, wall = kept + found, cpu + timed.cpu, wall + timed.wall
        shown = spec.relative_to(ROOT).as_posix()
        print(f"  {shown:<60} kept {found:>4}  {timed.cpu:6.1f} s CPU", flush=True)
        if timed.returncode != 0:
            failed.append(shown)
    return kept, cpu, wall, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=2, help="envc compile -j (default 2)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of envc check specs/")
    parser.add_argument("--tasks", type=int, default=100, help="tasks asked of each environment")
    parser.add_argument("--skip-tasks", action="store_true", help="compile and check only")
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

    checks = check_warm(args.runs)
    walls, cpus = [c.wall for c in checks], [c.cpu for c in checks]
    print(
        f"envc check specs/ warm: median {statistics.median(walls):.2f} s wall (min {min(walls):.2f} s), "
        f"median {statistics.median(cpus):.2f} s CPU, over {len(checks)} runs (target < 2 s wall)"
    )

    if not args.skip_tasks:
        print(f"envc tasks -n {args.tasks} --seed 1, per environment:")
        kept, cpu, wall, failed = synthesise(specs, args.tasks)
        rate = kept / (cpu / 60) if cpu else 0.0
        print(
            f"task synthesis: {kept} kept tasks from {len(specs)} environments in {cpu:.1f} s CPU "
            f"({wall:.1f} s wall): {rate:.0f} tasks per CPU minute"
        )
        if failed:
            print(f"  short of {args.tasks} kept tasks or failed: {', '.join(failed)}")
    return 0 if compiled.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
