"""`envc check`, `envc fmt`, `envc compile` and `envc new`: the commands on spec files
(docs/compile.md). Exit codes: compiler/cli/common.py."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compiler import project
from compiler.build import pipeline
from compiler.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    IO_CODES,
    SPEC_PATHS,
    exit_code,
    expand_paths,
    fail,
    llm_log,
    plural,
    print_compile_table,
    print_diagnostic,
    print_heal_summary,
    read_spec,
    write_atomically,
)
from compiler.diagnostics import Diagnostic, has_errors, to_json

if TYPE_CHECKING:
    from compiler.analyse.cache import Checked

JOBS = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes for independent specs (default: one per core; 1: none). The output is the same.",
)


@click.command()
@SPEC_PATHS
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="How to print diagnostics.",
)
@click.option("--emit-ir", is_flag=True, help="Print the analysed environment as JSON on stdout (one spec only).")
@JOBS
@click.pass_context
def check(ctx: click.Context, files: tuple[Path, ...], fmt: str, emit_ir: bool, jobs: int | None) -> None:
    """Parse and analyse specs; directories mean every *.envspec below them."""
    from compiler.analyse import analyse_file

    paths, diagnostics = expand_paths(files)
    if emit_ir and len(paths) != 1:
        raise click.UsageError("--emit-ir takes exactly one spec file")
    sources: dict[str, str] = {}
    environment_json = ""
    if emit_ir:
        result = analyse_file(paths[0])
        diagnostics.extend(result.diagnostics)
        sources.update(result.sources)
        if result.environment is not None and not has_errors(result.diagnostics):
            environment_json = result.environment.model_dump_json(indent=2)
    else:
        for checked in _check_all(paths, _jobs(jobs)):
            diagnostics.extend(checked.diagnostics)
            sources.update(checked.sources)
    # With --emit-ir stdout carries only the IR, so diagnostics move to stderr. The text
    # summary follows the diagnostics on their stream, so `2>&1` never splits a line; with
    # --format json stdout holds only the JSON, and the summary goes to stderr.
    if fmt == "json":
        click.echo(to_json(diagnostics), err=emit_ir)
        click.echo(_summary(len(paths), diagnostics), err=True)
    else:
        for diagnostic in diagnostics:
            print_diagnostic(diagnostic, sources.get(diagnostic.path), err=emit_ir)
        click.echo(_summary(len(paths), diagnostics), err=emit_ir)
    if environment_json:
        click.echo(environment_json)
    ctx.exit(exit_code(diagnostics))


def _summary(files: int, diagnostics: Sequence[Diagnostic]) -> str:
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    tail = f", {plural(warnings, 'warning')}" if warnings else ""
    return f"checked {plural(files, 'file')}: {plural(errors, 'error')}{tail}"


def _check_all(paths: list[Path], jobs: int) -> list[Checked]:
    """Each spec's outcome, in order: remembered ones read here, the others analysed in
    workers (`compiler/analyse/cache.py`), so an unchanged library starts no worker."""
    from compiler.analyse.cache import analyse_and_remember, recall
    from compiler.build import parallel

    remembered = [recall(path) for path in paths]
    stale = [path for path, checked in zip(paths, remembered, strict=True) if checked is None]
    analysed = iter(parallel.map_in_workers(analyse_and_remember, stale, jobs, _lost_worker))
    return [checked or next(analysed) for checked in remembered]


def _jobs(jobs: int | None) -> int:
    from compiler.build import parallel

    return parallel.default_jobs() if jobs is None else jobs


def _lost_worker(message: str) -> None:
    click.echo(f"envc: {message}", err=True)


@click.command("fmt")
@SPEC_PATHS
@click.option("--check", "check_only", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.pass_context
def fmt_command(ctx: click.Context, files: tuple[Path, ...], check_only: bool) -> None:
    """Rewrite specs in the canonical layout, in place and only when changed."""
    paths, diagnostics = expand_paths(files)
    for problem in diagnostics:
        print_diagnostic(problem, None)
    outcomes: list[str] = []
    for path in paths:
        outcome, problems = _format_file(path, check_only)
        outcomes.append(outcome)
        diagnostics.extend(problems)
    summary = _fmt_summary(outcomes, check_only)
    if summary:
        click.echo(summary, err=True)
    code = exit_code(diagnostics)
    ctx.exit(EXIT_ERRORS if code == EXIT_OK and check_only and "changed" in outcomes else code)


def _fmt_summary(outcomes: list[str], check_only: bool) -> str:
    """`N files reformatted, M unchanged`, counting only the files read (a file that
    could not be read was neither); empty when none could be."""
    changed, unchanged, unread = (outcomes.count(kind) for kind in ("changed", "unchanged", "unread"))
    if unread == len(outcomes):
        return ""
    verb = "would be reformatted" if check_only else "reformatted"
    tail = f"; {plural(unread, 'file')} not read" if unread else ""
    return f"{plural(changed, 'file')} {verb}, {unchanged} unchanged{tail}"


def _format_file(path: Path, check_only: bool) -> tuple[str, list[Diagnostic]]:
    """Format one file: `changed` (or would be), `unchanged` or `unread`, and the
    diagnostics printed.

    A file with syntax errors is left untouched: the formatter returns no text for it.
    """
    from compiler.front.fmt import format_source

    source, problem = read_spec(path)
    if source is None:
        problems = [problem] if problem else []
        for diagnostic in problems:
            print_diagnostic(diagnostic, None)
        return "unread", problems
    result = format_source(source, str(path))
    for diagnostic in result.diagnostics:
        print_diagnostic(diagnostic, source)
    if result.text is None or result.text == source:
        return "unchanged", result.diagnostics
    if check_only:
        click.echo(f"would reformat {path}")
    else:
        write_atomically(path, result.text)
        click.echo(f"reformatted {path}")
    return "changed", result.diagnostics


@click.command("compile")
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Output root (default: [tool.envc] output in pyproject.toml, else generated/).",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 listing files when the output is stale or was edited by hand.",
)
@click.option("--no-qc", is_flag=True, help="Skip the static and dynamic checks (faster; for iterating on a spec).")
@click.option("--force", is_flag=True, help="Overwrite output folders even if files in them were changed by hand.")
@click.option(
    "--offline", is_flag=True, help="Ask no model: an llm body without a current fill in envc.lock is an error."
)
@JOBS
def compile_command(
    specs: tuple[Path, ...],
    output: Path | None,
    check_only: bool,
    no_qc: bool,
    force: bool,
    offline: bool,
    jobs: int | None,
) -> None:
    """Compile specs into checked Python packages (every spec below specs/ but the prototypes when none are given)."""
    root = project.find_project_root(Path.cwd())
    files, problems = expand_paths(specs) if specs else (project.default_specs(root), [])
    if not files and not problems:
        fail("compile", "no specs to compile (pass spec files, or add some under specs/)")
    options = pipeline.Options(
        output=(output if output is not None else project.configured_output(root)).resolve(),
        project_root=root,
        check_only=check_only,
        qc=not (no_qc or check_only),
        force=force,
        jobs=_jobs(jobs),
        on_lost_worker=_lost_worker,
        **_llm_options(offline),
    )
    results = _compile_with_progress(files, options)
    sources = _sources_of(results)
    diagnostics = [*problems, *(d for r in results for d in r.diagnostics)]
    for diagnostic in diagnostics:
        print_diagnostic(diagnostic, sources.get(diagnostic.path), err=True)
    print_compile_table(results)
    print_heal_summary(options.heal_stats)
    for result in results:
        if result.status == "stale":
            for name in result.stale_files:
                folder = pipeline.package_parent(result.spec, options) / result.name / name
                click.echo(f"stale: {project.display_path(folder, root)}", err=True)
    failed = [r for r in results if not r.ok]
    if problems and all(d.code in IO_CODES for d in problems):
        sys.exit(EXIT_USAGE)
    if any(d.code in IO_CODES or d.code == "E6007" for r in failed for d in r.diagnostics):
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_ERRORS if failed or problems else EXIT_OK)


def _llm_options(offline: bool) -> dict[str, Any]:
    """The LLM fields of `pipeline.Options` for `envc compile` (`stats` imports nothing heavy)."""
    from compiler.llm.stats import HealStats

    return {"offline": offline, "llm_log": llm_log, "heal_stats": HealStats()}


def _compile_with_progress(files: list[Path], options: pipeline.Options) -> list[pipeline.SpecResult]:
    """A progress line per spec on a terminal; silence when piped (CI logs stay clean)."""
    if not sys.stderr.isatty() or len(files) < 2:
        return list(pipeline.compile_specs(files, options))
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        task = progress.add_task("compiling", total=len(files))

        def advance(spec: str) -> None:
            progress.update(task, advance=1, description=f"compiling {spec}")

        return list(pipeline.compile_specs(files, options, advance))


def _sources_of(results: list[pipeline.SpecResult]) -> dict[str, str]:
    sources: dict[str, str] = {}
    for result in results:
        for diagnostic in result.diagnostics:
            if diagnostic.path not in sources:
                text, _ = read_spec(Path(diagnostic.path))
                if text is not None:
                    sources[diagnostic.path] = text
    return sources


@click.command("new")
@click.argument("name")
@click.option(
    "--archetype",
    "archetype",
    default="custom",
    show_default=True,
    help="A prototype to extend (see docs/prototypes/), or `custom`.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the spec (default: specs/NAME.envspec).",
)
def new_command(name: str, archetype: str, output: Path | None) -> None:
    """Scaffold a domain spec that compiles as it stands."""
    from compiler.build import scaffold

    root = project.find_project_root(Path.cwd())
    target = output if output is not None else project.specs_folder(root) / f"{name}.envspec"
    problem = scaffold.problem_with(name, archetype, target)
    if problem:
        fail("new", problem)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "x", encoding="utf-8") as handle:  # never overwrite an existing spec
        handle.write(scaffold.render(name, archetype))
    click.echo(f"wrote {target}; next: envc compile {target}")
