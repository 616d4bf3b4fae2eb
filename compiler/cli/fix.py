"""`envc fix`: rewrite specs written for an earlier version of the language, in place, by
the rewrites of compiler/analyse/upgrade.py (CHANGELOG.md lists them)."""

from __future__ import annotations

from pathlib import Path

import click

from compiler.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    SPEC_PATHS,
    exit_code,
    expand_paths,
    plural,
    print_diagnostic,
    read_spec,
    write_atomically,
)
from compiler.diagnostics import Diagnostic


@click.command("fix")
@SPEC_PATHS
@click.option("--check", "check_only", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.pass_context
def fix_command(ctx: click.Context, files: tuple[Path, ...], check_only: bool) -> None:
    """Carry specs across incompatible changes of the language (see CHANGELOG.md)."""
    paths, problems = expand_paths(files)
    for problem in problems:
        print_diagnostic(problem, None)
    changed = 0
    for path in paths:
        changed += _fix_file(path, check_only, problems)
    verb = "would be fixed" if check_only else "fixed"
    click.echo(f"{plural(changed, 'file')} {verb}, {len(paths) - changed} unchanged")
    code = exit_code(problems)
    ctx.exit(EXIT_ERRORS if code == EXIT_OK and check_only and changed else code)


def _fix_file(path: Path, check_only: bool, problems: list[Diagnostic]) -> int:
    """1 when the file changed (or would), else 0; a file that cannot be read is a problem."""
    from compiler.analyse.upgrade import fix_source

    source, problem = read_spec(path)
    if source is None:
        if problem is not None:
            print_diagnostic(problem, None)
            problems.append(problem)
        return 0
    fixed = fix_source(source, str(path))
    if not fixed.applied:
        return 0
    if not check_only:
        write_atomically(path, fixed.text)
    click.echo(f"{'would fix' if check_only else 'fixed'} {path}: {'; '.join(fixed.applied)}")
    return 1
