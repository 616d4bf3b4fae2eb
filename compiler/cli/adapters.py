"""`envc adapters`: files trainers' own adapters read (docs/serving.md).

Exit codes as compiler/cli/__init__.py: 0 ok, 1 errors in the input, 2 usage or I/O errors.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from compiler.serve import verl_config
from compiler.synth import export


@click.group("adapters")
def adapters_command() -> None:
    """Configuration for trainers' adapters (VERL's tool config)."""


@adapters_command.command("verl-config")
@click.argument("target", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the YAML here (default: standard output).",
)
@click.option(
    "--packages",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("generated"),
    show_default=True,
    help="Where the compiled packages of a task set's environments are (DIR/<env>/).",
)
def verl_config_command(target: Path, output: Path | None, packages: Path) -> None:
    """VERL's multi-turn tool config for TARGET: a compiled package folder, a tasks.jsonl,
    or a folder holding one. Each tool's class is compiler.serve.verl.EnvcTool; for a
    task set every tool the tasks use, named as `envc export --format verl` names them, with
    the tasks file `calc_reward` scores against."""
    try:
        text = verl_config.to_yaml(verl_config.tool_config(target, packages))
    except (verl_config.ConfigError, export.TaskFileError) as exc:
        click.echo(f"envc adapters verl-config: {exc}", err=True)
        sys.exit(1)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        write_whole(output, text)
    except OSError as exc:
        click.echo(f"envc adapters verl-config: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    click.echo(f"wrote {output} ({text.count('class_name:')} tools)")


def write_whole(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder: the file appears whole or not at all."""
    handle, temporary = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
