"""Compile times: every spec under specs/ (every spec but the prototypes), with and without the checks.

    python benchmarks/compile.py                    # 3 runs of each QC variant, 5 of the rest
    python benchmarks/compile.py --qc-reps 1 --reps 3   # quicker
    python benchmarks/compile.py --no-stages        # skip the per-check breakdown
    python benchmarks/compile.py --spec ticketing --spec calendar   # only these specs

Nothing in the repository is touched, and edits made to it during a run do not disturb
the run: compiler/, grammar/, templates/, specs/ (with specs/prototypes/) and
pyproject.toml are copied into a temporary project, the compiler is imported from there, output goes to temporary folders, the QC markers to
the temporary project's .envc-cache, and mypy's cache (normally ~/.cache/envc/mypy) to a
temporary XDG_CACHE_HOME.

Measured (in-process through compiler.build.pipeline.compile_specs unless said otherwise):

- per spec: parse + analyse alone (compiler.analyse.analyse_file); lowering alone
  (compiler.lower.lower, which formats every file with ruff); a compile with QC skipped
  (qc=False); a cold compile with full QC (ruff, mypy --strict, AST rules, the generated
  pytest suite) with an empty mypy cache; and the same with the mypy cache warm;
- the whole set in one compile_specs call (mypy runs once for all packages), cold and
  warm, and with QC skipped;
- the second run with nothing changed (the fast path: manifests and hashes only), both
  in-process (compile_specs with QC on, so the QC marker is consulted) and as a fresh
  process of the CLI, `python -m compiler.cli compile --check` and plain `compile`;
- per check, on the lowered packages of the whole set: ruff (lint + format --check), mypy
  cold and warm, the AST rules, pytest as QC runs it (one process per package), and two
  what-ifs: pytest with third-party plugin autoloading off, and one pytest process for
  all packages.

Every figure is the median and the min of the repetitions. The first in-process run pays
the imports (lark, libcst, jinja2, pydantic ...); one untimed warm-up compile happens
before anything is timed, so in-process figures exclude imports and CLI figures include
them.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ("compiler", "grammar", "templates", "specs", "pyproject.toml")

# Imported from the snapshot in main(), so that edits to the working tree during a run
# (other people work in it) change neither the code measured nor its fingerprint.
pipeline: Any = None
project_facts: Any = None
analyse_file: Any = None
lower: Any = None


def take_snapshot(project: Path) -> None:
    """Copy the compiler, its grammar and templates, the specs and pyproject.toml."""
    project.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.tmp", ".*")
    for name in SNAPSHOT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=ignore)
        elif source.is_file():
            shutil.copy(source, project / name)
    global pipeline, project_facts, analyse_file, lower
    sys.path.insert(0, str(project))
    from compiler import project as project_module
    from compiler.analyse import analyse_file as analyse_function
    from compiler.build import pipeline as pipeline_module
    from compiler.lower import lower as lower_function

    assert Path(pipeline_module.__file__).is_relative_to(project), pipeline_module.__file__
    pipeline, analyse_file, lower = pipeline_module, analyse_function, lower_function
    project_facts = project_module


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}"
    )


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Bench:
    """A scratch project plus helpers that hand out fresh output and cache folders."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.project = scratch / "project"
        take_snapshot(self.project)
        self.specs = project_facts.default_specs(self.project)
        self.failures: dict[str, str] = {}
        self._count = 0

    def fresh(self, prefix: str) -> Path:
        self._count += 1
        return self.scratch / f"{prefix}-{self._count}"

    def options(self, output: Path, qc: bool) -> pipeline.Options:
        return pipeline.Options(output=output.resolve(), project_root=self.project, qc=qc)

    def drop_broken(self) -> list[str]:
        """Specs that do not compile (work in progress) are left out, and named."""
        broken = []
        for spec in list(self.specs):
            results = pipeline.compile_specs([spec], self.options(self.fresh("out"), qc=False))
            if not all(r.ok for r in results):
                broken.append(spec.name)
                self.specs.remove(spec)
        return broken

    def clear_markers(self) -> None:
        shutil.rmtree(self.project / ".envc-cache", ignore_errors=True)

    def compile(self, specs: list[Path], output: Path, qc: bool) -> list[pipeline.SpecResult]:
        """Compile; a spec that fails (QC findings) is timed all the same, and noted."""
        results = pipeline.compile_specs(specs, self.options(output, qc))
        for result in results:
            if not result.ok:
                first = result.diagnostics[0].message if result.diagnostics else result.status
                self.failures.setdefault(Path(result.spec).name, f"{len(result.diagnostics)} findings, first: {first}")
        return results


@contextmanager
def environment_variable(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def cache_home(path: Path) -> Any:
    """Point XDG_CACHE_HOME (mypy's cache: $XDG_CACHE_HOME/envc/mypy) at `path`."""
    return environment_variable("XDG_CACHE_HOME", str(path))


def timed(action: Callable[[], Any], reps: int) -> list[float]:
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return seconds


def cell(seconds: list[float]) -> str:
    if not seconds:
        return "-"
    median = statistics.median(seconds)
    if median < 1:
        return f"{median * 1000:.0f} ms ({min(seconds) * 1000:.0f})"
    return f"{median:.2f} s ({min(seconds):.2f})"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --------------------------------------------------------------------------- measurements


def per_spec(bench: Bench, spec: Path, reps: int, qc_reps: int) -> dict[str, list[float]]:
    name = spec.name
    say(f"  {name}: parse + analyse, lower")
    analysed = analyse_file(spec)
    if analysed.environment is None:
        raise SystemExit(f"{name} does not analyse cleanly")
    display = project_facts.display_path(spec, bench.project)
    row = {
        "analyse": timed(lambda: analyse_file(spec), reps),
        "lower": timed(lambda: lower(analysed.environment, display), reps),  # type: ignore[arg-type]
    }
    say(f"  {name}: compile, QC skipped")
    row["no_qc"] = timed(lambda: bench.compile([spec], bench.fresh("out"), qc=False), reps)
    say(f"  {name}: compile with QC, cold mypy cache ({qc_reps}x)")
    cold = []
    for _ in range(qc_reps):
        bench.clear_markers()
        with cache_home(bench.fresh("cache")):
            cold += timed(lambda: bench.compile([spec], bench.fresh("out"), qc=True), 1)
    row["qc_cold"] = cold
    say(f"  {name}: compile with QC, warm mypy cache ({qc_reps}x)")
    warm_cache = bench.fresh("cache")
    with cache_home(warm_cache):
        bench.compile([spec], bench.fresh("out"), qc=True)  # fills the cache
        warm = []
        for _ in range(qc_reps):
            bench.clear_markers()
            warm += timed(lambda: bench.compile([spec], bench.fresh("out"), qc=True), 1)
    row["qc_warm"] = warm
    return row


def whole_set(bench: Bench, reps: int, qc_reps: int) -> dict[str, list[float]]:
    specs = [spec for spec in bench.specs if spec.name not in bench.failures]  # the fast path needs passing QC
    say("  whole set: QC skipped")
    row = {"no_qc": timed(lambda: bench.compile(specs, bench.fresh("out"), qc=False), reps)}
    say(f"  whole set: QC, cold mypy cache ({qc_reps}x)")
    cold = []
    for _ in range(qc_reps):
        bench.clear_markers()
        with cache_home(bench.fresh("cache")):
            cold += timed(lambda: bench.compile(specs, bench.fresh("out"), qc=True), 1)
    row["qc_cold"] = cold
    say(f"  whole set: QC, warm mypy cache ({qc_reps}x)")
    warm_cache = bench.fresh("cache")
    out = bench.fresh("out")
    with cache_home(warm_cache):
        bench.compile(specs, bench.fresh("out"), qc=True)
        warm = []
        for _ in range(qc_reps):
            bench.clear_markers()
            out = bench.fresh("out")
            warm += timed(lambda out=out: bench.compile(specs, out, qc=True), 1)

        say("  whole set: second run, nothing changed (in-process)")

        def again() -> None:
            project_facts.compiler_fingerprint.cache_clear()  # a new process would hash the compiler again
            results = bench.compile(specs, out, qc=True)
            assert all(r.status == "up-to-date" for r in results), [r.status for r in results]

        row["qc_warm"] = warm
        row["unchanged_inprocess"] = timed(again, max(reps, 7))
    say("  whole set: second run, nothing changed (CLI subprocess)")
    env = {**os.environ, "PYTHONPATH": str(bench.project), "XDG_CACHE_HOME": str(warm_cache)}
    names = [project_facts.display_path(spec, bench.project) for spec in specs]
    base = [sys.executable, "-m", "compiler.cli", "compile", *names, "-o", str(out)]

    def cli(*extra: str) -> None:
        run = subprocess.run([*base, *extra], cwd=bench.project, env=env, capture_output=True, text=True)
        if run.returncode != 0 or "up-to-date" not in run.stdout:
            raise SystemExit(f"CLI run failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")

    row["unchanged_cli_check"] = timed(lambda: cli("--check"), max(reps, 7))
    row["unchanged_cli_compile"] = timed(cli, max(reps, 7))
    row["python_startup"] = timed(
        lambda: subprocess.run([sys.executable, "-c", "pass"], env=env, check=True), max(reps, 7)
    )
    row["cli_import"] = timed(
        lambda: subprocess.run([sys.executable, "-c", "import compiler.cli"], cwd=bench.project, env=env, check=True),
        max(reps, 7),
    )
    return row


def stages(bench: Bench, reps: int) -> dict[str, list[float]]:
    """Each check alone, on the lowered packages of the whole set (uses the parts of
    compiler.check that its driver runs)."""
    from compiler.check.dynamic import run_tests
    from compiler.check.package import CheckResult, Package, write_tree
    from compiler.check.rules import ast_rules
    from compiler.check.static import mypy_findings, ruff_findings

    packages = []
    for spec in bench.specs:
        if spec.name in bench.failures:
            continue
        env = analyse_file(spec).environment
        assert env is not None
        packages.append(
            Package(env=env, name=env.header.name, files=lower(env, project_facts.display_path(spec, bench.project)))
        )
    root = bench.fresh("tree")
    for package in packages:
        write_tree(root / package.name, package.files)
    row: dict[str, list[float]] = {}
    say("  checks: ruff")
    row["ruff (check + format --check)"] = timed(lambda: list(ruff_findings(root, packages)), reps)
    say("  checks: mypy")
    cold = []
    for _ in range(min(reps, 3)):
        with cache_home(bench.fresh("cache")):
            cold += timed(lambda: list(mypy_findings(root, packages)), 1)
    row["mypy --strict, cold cache"] = cold
    with cache_home(bench.fresh("cache")):
        list(mypy_findings(root, packages))
        row["mypy --strict, warm cache"] = timed(lambda: list(mypy_findings(root, packages)), reps)
    say("  checks: AST rules")
    row["AST rules"] = timed(lambda: [ast_rules(p) for p in packages], reps)
    say("  checks: pytest")

    def each_package() -> None:
        for package in packages:
            result = CheckResult()
            run_tests(root, package, result)
            assert result.dynamic_ok, result.findings[:1]

    def one_process() -> None:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root)]
        command += [str(root / p.name / "tests") for p in packages]
        subprocess.run(command, cwd=root, capture_output=True, check=True)

    row[f"pytest, one process per package, as QC runs it ({len(packages)} packages)"] = timed(each_package, reps)
    with environment_variable("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"):
        row["what-if: the same with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"] = timed(each_package, reps)
        row["what-if: one pytest process for all packages, autoload off"] = timed(one_process, reps)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="runs of the cheap measurements")
    parser.add_argument("--qc-reps", type=int, default=3, help="runs of each compile with QC")
    parser.add_argument("--spec", action="append", default=[], help="only this spec (file name; repeatable)")
    parser.add_argument("--no-stages", action="store_true", help="skip the per-check breakdown")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="envc-bench-") as tmp:
        bench = Bench(Path(tmp))
        old_cwd = os.getcwd()
        os.chdir(bench.project)  # ruff and pytest leave caches in the working directory
        try:
            if args.spec:
                bench.specs = [spec for spec in bench.specs if spec.name in args.spec or spec.stem in args.spec]
            say(f"warm-up (imports) in {tmp}")
            broken = bench.drop_broken()
            bench.failures.clear()
            specs = {spec.name: per_spec(bench, spec, args.reps, args.qc_reps) for spec in bench.specs}
            everything = whole_set(bench, args.reps, args.qc_reps)
            checks = {} if args.no_stages else stages(bench, args.reps)
        finally:
            os.chdir(old_cwd)

    print(f"machine: {machine()}")
    print(
        f"specs: {', '.join(specs)} (specs/ (every spec but the prototypes); prototypes are compiled only as part of the specs extending them)"
    )
    if broken:
        print(f"left out, they do not compile now: {', '.join(broken)}")
    for name, why in bench.failures.items():
        print(f"QC failed for {name} (timed anyway; left out of the whole-set rows): {why[:160]}")
    print(f"figures: median (min) of {args.reps} runs, compiles with QC {args.qc_reps} runs\n")
    header = ("spec", "parse+analyse", "lower", "compile --no-qc", "compile, QC cold", "compile, QC warm")
    passing = [name for name in specs if name not in bench.failures]
    rows = [
        (
            name + (" (QC fails)" if name in bench.failures else ""),
            cell(r["analyse"]),
            cell(r["lower"]),
            cell(r["no_qc"]),
            cell(r["qc_cold"]),
            cell(r["qc_warm"]),
        )
        for name, r in specs.items()
    ]
    rows.append(
        (
            f"whole set ({len(passing)} passing specs), one call",
            "",
            "",
            cell(everything["no_qc"]),
            cell(everything["qc_cold"]),
            cell(everything["qc_warm"]),
        )
    )
    print(table(header, rows))
    print(
        "(cold: empty mypy cache; warm: mypy cache filled by an earlier run. Every run writes a fresh output folder.)\n"
    )

    print(
        table(
            (f"second run, nothing changed ({len(passing)} specs)", "time"),
            [
                ("in-process compile_specs (QC on, fast path)", cell(everything["unchanged_inprocess"])),
                ("CLI subprocess: compile --check", cell(everything["unchanged_cli_check"])),
                ("CLI subprocess: compile", cell(everything["unchanged_cli_compile"])),
                ("for reference: python -c pass", cell(everything["python_startup"])),
                ("for reference: python -c 'import compiler.cli'", cell(everything["cli_import"])),
            ],
        )
    )
    if checks:
        print()
        print(table(("check, whole set at once", "time"), [(name, cell(values)) for name, values in checks.items()]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
