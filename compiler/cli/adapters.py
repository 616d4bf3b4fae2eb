"""`envc adapters`: files trainers' own adapters read (docs/serving.md).

Exit codes as compiler/cli/common.py's: 0 ok, 2 usage or input errors (a missing or
malformed TARGET, tasks that name tools the packages lack, a file that cannot be written).
"""

from __future__ import annotations

from pathlib import Path

import click

from compiler.cli.common import fail, plural, write_or_exit
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
        fail("adapters verl-config", str(exc))
    if output is None:
        click.echo(text, nl=False)
        return
    write_or_exit(output, text, "adapters verl-config")
    click.echo(f"wrote {output} ({plural(text.count('class_name:'), 'tool')})")
