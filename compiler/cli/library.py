"""`envc library`: the environment library's catalog (specs/catalog.yaml) as commands:
`check` it against the specs folder, `show` its table, turn it into draft `profiles`, and
measure the `tasks` each environment yields (compiler/run/library.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from compiler import project
from compiler.cli.common import EXIT_ERRORS, fail, plural, write_or_exit
from compiler.run import library


def _root() -> Path:
    return project.find_project_root(Path.cwd())


@click.group("library")
def library_command() -> None:
    """The environment library's catalog (specs/catalog.yaml): check, show, profiles, tasks."""


@library_command.command("check")
def check_command() -> None:
    """Every catalog spec exists, every library spec is listed once, names valid, packages unique."""
    root = _root()
    try:  # a catalog that cannot be read at all is bad input (exit 2), not a finding
        library.load(root)
    except library.CatalogError as exc:
        fail("library check", str(exc))
    problems = library.check(root)
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    if problems:
        sys.exit(EXIT_ERRORS)
    loaded = library.load(root)
    rows = list(loaded.catalog.rows())
    specs = sum(len(row.specs) for *_, row in rows)
    click.echo(
        f"{project.display_path(loaded.path, root)}: {plural(len(rows), 'scenario')}, {plural(specs, 'spec')}: ok"
    )


def _rows_or_exit(command: str) -> list[library.ShownRow]:
    try:
        return library.shown_rows(_root())
    except library.CatalogError as exc:
        fail(f"library {command}", str(exc))


@library_command.command("show")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    default=None,
    help="table (a terminal's default), markdown (docs/library.md) or json.",
)
def show_command(fmt: str | None) -> None:
    """The catalog's table: domain, scenario, description, environments, archetype, tools, scenarios, families, tasks kept."""
    rows = _rows_or_exit("show")
    chosen = fmt or ("table" if sys.stdout.isatty() else "markdown")
    if chosen == "json":
        click.echo(json.dumps([row.to_json() for row in rows], indent=2))
    elif chosen == "markdown":
        click.echo(library.markdown_table(rows), nl=False)
    else:
        _print_rich(rows)


def _print_rich(rows: list[library.ShownRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False)
    for column in library.COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*library.table_cells(row))
    Console().print(table)


@library_command.command("profiles")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write here (default: stdout).",
)
def profiles_command(output: Path | None) -> None:
    """The catalog as `envc draft --batch` profiles: one JSON line per scenario, with its row and archetype."""
    rows = _rows_or_exit("profiles")
    text = "".join(json.dumps(profile, sort_keys=True) + "\n" for profile in library.profiles(rows))
    if output is None:
        click.echo(text, nl=False)
        return
    write_or_exit(output, text, "library profiles")
    click.echo(f"wrote {output} ({plural(len(rows), 'profile')})", err=True)


@library_command.command("tasks")
@click.option(
    "-n", "count", type=click.IntRange(min=1), default=100, show_default=True, help="Tasks to ask of each environment."
)
@click.option("--seed", type=int, default=1, show_default=True, help="The seed `envc tasks` gets.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The JSON of kept counts (default: specs/library-tasks.json, which `show` reads).",
)
@click.option(
    "--env",
    "only",
    multiple=True,
    metavar="NAME",
    help="Measure only this environment (repeatable); the others keep their entries in the output file.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Environments measured at once, each in its own process (default: one per core).",
)
def tasks_command(count: int, seed: int, output: Path | None, only: tuple[str, ...], jobs: int | None) -> None:
    """Run `envc tasks` on every catalog environment and write the kept counts and quality measures."""
    from compiler.build import parallel

    root = _root()
    rows = _rows_or_exit("tasks")
    specs = {env.name: project.specs_folder(root) / env.spec for row in rows for env in row.environments if env.name}
    unknown = sorted(set(only) - set(specs))
    if unknown:
        fail("library tasks", f"no catalog environment is called {', '.join(unknown)}")
    target = output if output is not None else library.tasks_path(root)
    kept = _entries_kept(target, count, seed, set(only)) if only else {}
    chosen = [(name, spec) for name, spec in specs.items() if not only or name in only]
    measured, failed = _measure_all(chosen, count, seed, root, jobs or parallel.default_jobs())
    data = {"count": count, "seed": seed, "environments": {**kept, **measured}, "failed": failed}
    write_or_exit(target, json.dumps(data, indent=2, sort_keys=True) + "\n", "library tasks")
    click.echo(f"wrote {target}: {plural(len(measured), 'environment')} measured, {len(failed)} failed", err=True)
    if failed:
        sys.exit(EXIT_ERRORS)


def _entries_kept(target: Path, count: int, seed: int, only: set[str]) -> dict[str, Any]:
    """The entries of an earlier run with the same `-n` and seed, but those measured again.
    An output measured with other settings is not mixed in: that is an error."""
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        fail("library tasks", f"cannot read {target} to keep its other entries: {exc}")
    if not isinstance(data, dict) or (data.get("count"), data.get("seed")) != (count, seed):
        fail("library tasks", f"{target} was measured with other -n/--seed; measure every environment again (no --env)")
    return {name: entry for name, entry in (data.get("environments") or {}).items() if name not in only}


def _measure_all(
    specs: list[tuple[str, Path]], count: int, seed: int, root: Path, jobs: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each environment's entry, `jobs` at a time (each `envc tasks` is its own process),
    with a progress line as each finishes."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    measured: dict[str, Any] = {}
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_timed_measure, spec, count, seed, root): name for name, spec in specs}
        for number, future in enumerate(as_completed(futures), start=1):
            name = futures[future]
            entry, problem, took = future.result()
            if entry is not None:
                measured[name] = entry
            if problem:
                failed[name] = problem
            shown = f"kept {entry['kept']}" if entry is not None else "failed"
            tail = f": {problem}" if problem else ""
            click.echo(f"[{number}/{len(specs)}] {name}: {shown} ({took:.1f}s){tail}", err=True)
    return measured, failed


def _timed_measure(spec: Path, count: int, seed: int, root: Path) -> tuple[dict[str, Any] | None, str, float]:
    started = time.perf_counter()
    entry, problem = _measure(spec, count, seed, root)
    return entry, problem, time.perf_counter() - started


def _measure(spec: Path, count: int, seed: int, root: Path) -> tuple[dict[str, Any] | None, str]:
    """`envc tasks SPEC` in its own process (a crash in one environment stops no other):
    its report's kept count and quality measures, and what went wrong ("" when nothing)."""
    with tempfile.TemporaryDirectory(prefix="envc-library-tasks-") as scratch:
        command = [
            sys.executable,
            "-m",
            "compiler.cli",
            "tasks",
            str(spec),
            "-n",
            str(count),
            "--seed",
            str(seed),
            "-o",
            scratch,
        ]
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False, env=os.environ.copy())
        try:
            report = json.loads((Path(scratch) / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, _last_line(done.stderr) or f"exit {done.returncode}"
    entry = library.kept_summary(report)
    problem = "" if done.returncode == 0 else _last_line(done.stderr)
    return entry, problem


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
