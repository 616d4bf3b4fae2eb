"""Compile + full QC of the whole library: where the time goes, before and after issue 15.

    python benchmarks/qc_library.py              # min of 3 runs of each variant
    python benchmarks/qc_library.py --runs 5

Every spec under specs/ (every spec but the prototypes) is analysed and lowered (timed), then the packages are
checked as `envc compile` checks them, warm (mypy's cache filled by an untimed warm-up
run). The variants run alternately in one process, so machine load hits both alike:

- generated tests: one pytest process per package (before) against one process for all
  packages (after), both with plugin autoload off, the 300 s limit and the memory cap;
- AST rules: every rule walking the file itself (before) against one shared walk per
  file (after, `check.nodes_of`);
- the whole check: ruff, mypy, AST rules, then the tests of each package (before)
  against `check.check_packages` (after: the tests of all packages in one pytest process
  running while ruff, mypy and the AST rules run).

Lowering (analysis, splicing, ruff format) is timed once per run and is the same in
both totals.

Then the whole command, as processes: `envc compile -o FRESH` (every spec analysed,
lowered, fully checked and written, mypy's cache warm) with the compiler of `--before
REV` (`compiler/`, `templates/` and `grammar/` as in REV, `git archive`) against the
working tree's, run with `--jobs 1` and `--jobs 2` (the default here: a worker per
core). Each
tree is a copy in a temporary project with its own cache folder (`XDG_CACHE_HOME`),
warmed by one untimed run; the three alternate, and every run writes into a fresh
output folder, so none takes the up-to-date fast path. Reported: wall time and CPU time
(user + system of the whole process tree: workers, ruff, mypy, pytest). On a shared
machine the CPU time is the steadier of the two, and on two idle cores a run takes at
least half of it. `--whole-only` skips the in-process part.

Figures are the min of N runs (the machine is shared: the min is the least disturbed).
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import platform
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a source checkout
    sys.path.insert(0, str(ROOT))

from compiler.analyse import analyse_file  # noqa: E402
from compiler.check import check_packages, check_tree  # noqa: E402
from compiler.check.dynamic import finish_tests_together, run_tests, start_tests_together  # noqa: E402
from compiler.check.package import CheckResult, Package, write_tree  # noqa: E402
from compiler.check.rules import (  # noqa: E402
    ast_rules,
    nodes_of,
    rule_declared_effects,
    rule_forbidden_calls,
    rule_imports,
    rule_no_bare_except,
    rule_state_copied,
    rule_tool_parity,
)
from compiler.lower import lower  # noqa: E402
from compiler.project import default_specs  # noqa: E402


def package_of(spec: Path) -> Package:
    analysis = analyse_file(spec)
    env = analysis.environment
    if env is None:
        raise SystemExit(f"{spec} does not analyse: {analysis.diagnostics[0].message}")
    files = lower(env, str(spec.relative_to(ROOT)))
    return Package(env=env, name=env.header.name, files=files)


def timed(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def tests_per_package(packages: list[Package]) -> None:
    with check_tree() as root:
        for package in packages:
            write_tree(root / package.name, package.files)
        for package in packages:
            result = CheckResult()
            run_tests(root, package, result)
            assert result.dynamic_ok, (package.name, [f.message for f in result.findings][:3])


def tests_together(packages: list[Package]) -> None:
    with check_tree() as root:
        for package in packages:
            write_tree(root / package.name, package.files)
        results = finish_tests_together(start_tests_together(root, packages), root, packages)
        assert results is not None and all(r.dynamic_ok for r in results.values())


def ast_rules_walking_each(packages: list[Package]) -> None:
    """The rules as before: `nodes_of` not shared, so each rule walks the file again."""
    for package in packages:
        for relative, text in package.files.items():
            if relative.endswith(".py"):
                tree = ast.parse(text)
                for rule in (rule_imports, rule_no_bare_except):
                    nodes_of.cache_clear()
                    rule(relative, tree)
                if relative == "environment.py":
                    for rule in (rule_forbidden_calls, rule_state_copied):
                        nodes_of.cache_clear()
                        rule(relative, tree)
                    rule_tool_parity(relative, tree, package.env)
                    rule_declared_effects(relative, tree, package.env)


def ast_rules_shared_walk(packages: list[Package]) -> None:
    for package in packages:
        ast_rules(package)


def static_checks(packages: list[Package]) -> None:
    check_packages(packages, dynamic=False)


def lower_all(specs: list[Path]) -> list[Package]:
    return [package_of(spec) for spec in specs]


def checks_one_after_another(packages: list[Package]) -> None:
    static_checks(packages)
    tests_per_package(packages)


def checks_as_compile_runs_them(packages: list[Package]) -> None:
    results = check_packages(packages, dynamic=True)
    assert all(r.static_ok and r.dynamic_ok for r in results.values())


COMPILER_PARTS = ("compiler", "templates", "grammar")
"""What `--before REV` takes from REV; the specs and pyproject.toml are the working tree's."""


def project(target: Path, revision: str | None) -> Path:
    """A copy of the project to compile in: the working tree, or its compiler from `revision`."""
    target.mkdir(parents=True)
    for name in ("specs", "pyproject.toml", *(() if revision else COMPILER_PARTS)):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    if revision:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", revision, *COMPILER_PARTS], cwd=ROOT, capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
    return target


def compile_once(tree: Path, output: Path, *flags: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its subprocesses included: workers, ruff, mypy,
    pytest) of `envc compile -o OUTPUT` in `tree` (a fresh OUTPUT: no fast path)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "XDG_CACHE_HOME": str(tree / ".cache"), "ENVC_PARSE_CACHE": "1"}
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "-o", str(output), *flags],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"envc compile failed in {tree}:\n{(done.stdout + done.stderr)[-3000:]}")
    return seconds, (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)


def whole_compile(runs: int, revision: str) -> None:
    with tempfile.TemporaryDirectory(prefix="envc-qc-library-") as scratch:
        base = Path(scratch)
        before, after = project(base / "before", revision), project(base / "after", None)
        variants = {
            f"before ({revision})": (before, ("--jobs", "1") if _has_jobs(before) else ()),
            "after, --jobs 1": (after, ("--jobs", "1")),
            "after, --jobs 2": (after, ("--jobs", "2")),
        }
        for tree in (before, after):  # untimed: mypy's cache and the parse cache filled
            compile_once(tree, base / "out")
            shutil.rmtree(base / "out")
        best: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for _ in range(runs):
            for name, (tree, flags) in variants.items():
                seconds, busy = compile_once(tree, base / "out", *flags)
                shutil.rmtree(base / "out")
                best[name] = min(best.get(name, float("inf")), seconds)
                cpu[name] = min(cpu.get(name, float("inf")), busy)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\nenvc compile (full QC, warm, written), min of {runs} runs; load average now {load}")
        print(f"{'':>40} {'wall s':>8} {'ratio':>6} {'CPU s':>8} {'ratio':>6}")
        first = next(iter(variants))
        for name in variants:
            wall, busy = best[name], cpu[name]
            print(f"{name:>40} {wall:8.2f} {wall / best[first]:6.2f} {busy:8.2f} {busy / cpu[first]:6.2f}")


def _has_jobs(tree: Path) -> bool:
    """Whether that compiler's command line has `--jobs` (cli.py then, the cli/ package now)."""
    sources = [tree / "compiler" / "cli.py"] if (tree / "compiler" / "cli.py").is_file() else []
    sources += sorted((tree / "compiler" / "cli").glob("*.py"))
    return any("--jobs" in path.read_text(encoding="utf-8") for path in sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default="HEAD", help="the revision whose compiler makes the 'before' tree")
    parser.add_argument("--whole-only", action="store_true", help="only the whole-command comparison")
    args = parser.parse_args(argv)
    print(f"{platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    if not args.whole_only:
        in_process(args.runs)
    whole_compile(args.runs, args.before)
    return 0


def in_process(runs: int) -> None:
    specs = default_specs(ROOT)
    packages = lower_all(specs)  # warm-up: imports, parse cache
    static_checks(packages)  # warm-up: mypy's cache
    best: dict[str, float] = {}

    def record(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds)

    for _ in range(runs):
        record("lower", timed(lambda: lower_all(specs)))
        record("AST rules, each rule walks", timed(lambda: ast_rules_walking_each(packages)))
        record("AST rules, one walk per file", timed(lambda: ast_rules_shared_walk(packages)))
        record("tests, one pytest per package", timed(lambda: tests_per_package(packages)))
        record("tests, one pytest for all", timed(lambda: tests_together(packages)))
        record("checks, one after another", timed(lambda: checks_one_after_another(packages)))
        record("checks, tests beside static", timed(lambda: checks_as_compile_runs_them(packages)))
    print(f"{len(packages)} packages; min of {runs} runs")
    pairs = [
        ("AST rules, each rule walks", "AST rules, one walk per file"),
        ("tests, one pytest per package", "tests, one pytest for all"),
        ("checks, one after another", "checks, tests beside static"),
    ]
    print(f"{'':>32} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for before, after in pairs:
        print(f"{after:>32} {best[before]:9.2f} {best[after]:9.2f} {best[after] / best[before]:13.2f}")
    lowering = best["lower"]
    total_before = lowering + best["checks, one after another"]
    total_after = lowering + best["checks, tests beside static"]
    print(f"{'analyse + lower (both)':>32} {lowering:9.2f} {lowering:9.2f}")
    print(f"{'compile + full QC, warm':>32} {total_before:9.2f} {total_after:9.2f} {total_after / total_before:13.2f}")


if __name__ == "__main__":
    sys.exit(main())
