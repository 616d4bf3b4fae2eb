"""`envc lock` and `envc draft`: the commands of the LLM layer (docs/llm.md). Exit
codes: compiler/cli/common.py."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from compiler import project
from compiler.build import pipeline
from compiler.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    exit_code,
    fail,
    llm_log,
    plural,
    print_compile_table,
    print_diagnostic,
    print_heal_summary,
    spec_files_or_exit,
)
from compiler.diagnostics import has_errors


@click.command("lock")
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--update", is_flag=True, help="Ask the model for every missing or stale fill; drop orphaned entries.")
@click.option("--all", "refill", is_flag=True, help="With --update: fill every llm body again, even current ones.")
@click.option("--no-qc", is_flag=True, help="Accept fills after analysis alone (no lowering, ruff, mypy or tests).")
def lock_command(specs: tuple[Path, ...], update: bool, refill: bool, no_qc: bool) -> None:
    """Show or refresh envc.lock, the committed fills of `llm` bodies (all specs/*.envspec by default)."""
    from compiler.llm import resolve
    from compiler.llm.stats import HealStats

    if refill and not update:
        raise click.UsageError("--all refills entries and needs --update")
    root = project.find_project_root(Path.cwd())
    files = spec_files_or_exit(specs) if specs else project.default_specs(root)
    mode: resolve.Mode = "refill" if refill else "update" if update else "status"
    stats = HealStats()
    options = resolve.FillOptions(root=root, mode=mode, qc=not no_qc, log=llm_log, stats=stats)
    run = resolve.lock_specs(files, options)
    for diagnostic in run.diagnostics:
        print_diagnostic(diagnostic, run.sources.get(diagnostic.path), err=True)
    if run.statuses:
        _print_lock_table(run.statuses)
    elif not has_errors(run.diagnostics):  # specs that could not be read or analysed say so themselves
        click.echo("no llm bodies in these specs", err=True)
    print_heal_summary(stats)
    for path in run.written:
        click.echo(f"wrote {project.display_path(path, root)}", err=True)
    unsettled = ("refused",) if update else ("stale", "missing", "orphan")
    failed = any(s.status in unsettled for s in run.statuses)
    sys.exit(exit_code(run.diagnostics) or (EXIT_ERRORS if failed else EXIT_OK))


def _print_lock_table(statuses: Iterable[Any]) -> None:
    """One row per `llm` body: spec, declaration, the state of its fill."""
    rows = [("spec", "declaration", "fill")] + [(s.spec, s.decl, s.status) for s in statuses]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


# --------------------------------------------------------------------------- envc draft


@click.command("draft")
@click.argument("name", required=False)
@click.option("--describe", "description", default="", help="What the environment is for, in prose.")
@click.option("--archetype", default="custom", show_default=True, help="A prototype to extend, or `custom`.")
@click.option("--domains", multiple=True, help='Application domains ("a, b" or the option repeated).')
@click.option(
    "--batch",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="A JSONL of profiles (name, description, domains, archetype, world) to draft instead of NAME.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="The spec to write (default specs/NAME.envspec); with --batch, the folder (default specs/).",
)
@click.option("--report", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Batch report JSON.")
@click.option("--retry", is_flag=True, help="With --batch: draft again the profiles the report says failed.")
@click.option("--no-qc", is_flag=True, help="Accept drafts after analysis alone (no lowering, ruff, mypy or tests).")
@click.option("--no-compile", is_flag=True, help="Write the spec only, not its generated package.")
def draft_command(
    name: str | None,
    description: str,
    archetype: str,
    domains: tuple[str, ...],
    batch: Path | None,
    output: Path | None,
    report: Path | None,
    retry: bool,
    no_qc: bool,
    no_compile: bool,
) -> None:
    """Have the model write a whole spec from a description; it is checked, healed and compiled."""
    from compiler.build import draft
    from compiler.llm.config import load_config
    from compiler.llm.provider import OpenAIProvider
    from compiler.llm.stats import HealStats

    root = project.find_project_root(Path.cwd())
    if (batch is None) == (name is None):
        raise click.UsageError("give NAME (with --describe) or --batch FILE, not both")
    profiles = _read_profiles(batch) if batch is not None else [_profile(name, description, domains, archetype)]
    config, config_problems = load_config(root)
    for diagnostic in config_problems:
        print_diagnostic(diagnostic, None, err=True)
    if has_errors(config_problems):
        sys.exit(EXIT_USAGE)
    if not config.configured:
        fail("draft", "no model configured: set `model` in [tool.envc.llm] of pyproject.toml")
    stats = HealStats()
    ctx = draft.DraftContext(config, OpenAIProvider(config, log=llm_log), stats, root, not no_qc, llm_log)
    if batch is not None:
        outcomes, settled = _draft_batch(profiles, batch, output or project.specs_folder(root), report, retry, ctx)
    else:
        outcomes = [draft.draft_one(profiles[0], output or project.specs_folder(root) / f"{name}.envspec", ctx)]
        settled = outcomes[0].status == "accepted"
        _print_outcome(outcomes[0])
    print_heal_summary(stats)
    accepted = [root / o.spec for o in outcomes if o.status == "accepted"]
    if accepted and not no_compile:
        options = pipeline.Options(output=project.configured_output(root).resolve(), project_root=root, qc=False)
        results = pipeline.compile_specs(accepted, options)
        print_compile_table(results)
    if batch is None and outcomes[0].status == "exists":
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK if settled else EXIT_ERRORS)


def _split_domains(values: Iterable[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _profile(name: str | None, description: str, domains: tuple[str, ...], archetype: str) -> Any:
    """The profile of `envc draft NAME`, or exit 2 saying what is wrong with it."""
    from compiler.build import draft

    assert name is not None
    profile = draft.Profile(name, description, tuple(_split_domains(domains)), archetype)
    problem = profile.problem()
    if problem:
        fail("draft", problem)
    return profile


def _read_profiles(batch: Path) -> list[Any]:
    """The profiles of `--batch FILE`, or exit 2 naming `file:line` of each bad row
    (before any model is configured or asked)."""
    from compiler.build import draft

    profiles, problems = draft.read_profiles(batch)
    for problem in problems:
        click.echo(f"envc draft: {problem}", err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    return profiles


def _print_outcome(outcome: Any) -> None:
    """What became of `envc draft NAME`, with the failed attempts' first problems."""
    click.echo(f"{outcome.name}: {outcome.status}" + (f" ({outcome.detail})" if outcome.detail else ""))
    for attempt in outcome.attempts:
        if attempt.failure:
            click.echo(f"  attempt {attempt.attempt}: failed `{attempt.failure}`", err=True)
            for line in attempt.problems[:5]:
                click.echo(f"    {line}", err=True)


def _draft_batch(
    profiles: list[Any], batch: Path, folder: Path, report_path: Path | None, retry: bool, ctx: Any
) -> tuple[list[Any], bool]:
    """`envc draft --batch`: every profile of the JSONL, resumable through the report;
    the outcomes of this run, and whether every profile of the report is accepted."""
    from compiler.build import draft

    report = draft.BatchReport.load(report_path or batch.with_suffix(".report.json"))

    def progress(done: int, total: int, outcome: Any) -> None:
        click.echo(
            f"[{done}/{total}] {outcome.name}: {outcome.status}" + (f" ({outcome.detail})" if outcome.detail else ""),
            err=True,
        )

    outcomes = draft.draft_batch(profiles, folder, report, ctx, retry, progress)
    summary = report.summary(ctx.stats)
    click.echo(
        f"drafted {summary['accepted']} of {plural(summary['profiles'], 'environment')} "
        f"({summary['pass_rate']:.1%} of those tried); report: {report.path}"
    )
    statuses = [report.outcomes.get(p.name, {}).get("status") for p in profiles]
    return outcomes, all(status == "accepted" for status in statuses)
