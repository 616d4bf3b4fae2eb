"""The `envc` program: the click group, the commands it registers (each lives in its
own module of compiler/cli/), `--version`, and `main`, which turns an unexpected
exception into exit 3.

Why click: subcommands, `--help` and usage errors (exit 2) come for free. The exit
codes, one convention for every command, are in compiler/cli/common.py. Bad input never
produces a Python traceback; only a bug does, and only with ENVC_DEBUG=1.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click

from compiler.cli import fix, graph, llm, spec, tasks
from compiler.cli.common import EXIT_INTERNAL


def _installed_version() -> str:
    """The package version; a plain source checkout (not installed) still runs."""
    from importlib import metadata  # about 15 ms: only for `--version`

    try:
        return metadata.version("envc")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`--version`, as click's version option prints it, looked up only when asked."""
    if value and not ctx.resilient_parsing:
        click.echo(f"envc, version {_installed_version()}")
        ctx.exit()


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives (`"module:attribute"`) and its one-line help, so `envc
    --help` lists it without importing its module (tests/test_cli.py checks the line
    against the command's own docstring)."""

    target: str
    help: str

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]


LAZY_COMMANDS: dict[str, LazyCommand] = {
    "serve": LazyCommand(
        "compiler.cli.serve:serve_command",
        "Serve generated packages (generated/NAME, or a spec compiled to one) and task sets (DIR with tasks.jsonl).",
    ),
    "mcp": LazyCommand(
        "compiler.cli.mcp:mcp_command",
        "Serve one compiled environment (a generated package or its spec) as an MCP server.",
    ),
    "rollout": LazyCommand(
        "compiler.cli.rollout:rollout_command",
        "Run a model k times on each task of TASKS (DIR/tasks.jsonl or a tasks JSONL) through an "
        "OpenAI-compatible endpoint; write one trajectory per rollout.",
    ),
    "library": LazyCommand(
        "compiler.cli.library:library_command",
        "The environment library's catalog (specs/catalog.yaml): check, show, profiles, tasks.",
    ),
    "adapters": LazyCommand(
        "compiler.cli.adapters:adapters_command",
        "Configuration for trainers' adapters (VERL's tool config).",
    ),
}
"""Commands that live in their own stage's module: the module is imported only when the
command runs (or its own help is shown), so `envc --help` and the other commands never
pay for a server, an MCP SDK or an HTTP client."""


class LazyGroup(click.Group):
    """A click group that imports the modules of `LAZY_COMMANDS` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        present = [name for name, lazy in LAZY_COMMANDS.items() if _module_exists(lazy.module)]
        return sorted([*super().list_commands(ctx), *present])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = LAZY_COMMANDS.get(cmd_name)
        if lazy is None or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        if not _module_exists(lazy.module):
            return None
        command = getattr(importlib.import_module(lazy.module), lazy.target.partition(":")[2])
        if not isinstance(command, click.Command):
            raise TypeError(f"{lazy.target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, with the lazy commands' help taken from the table."""
        names = [name for name in self.list_commands(ctx) if name in self.commands or name in LAZY_COMMANDS]
        shown = [name for name in names if name in LAZY_COMMANDS or not self.commands[name].hidden]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name in shown)
        rows = []
        for name in shown:
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
            else:
                rows.append((name, _shortened(LAZY_COMMANDS[name].help, limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _shortened(text: str, limit: int) -> str:
    """A help line cut as click cuts a command's short help."""
    return click.Command(None, help=text).get_short_help_str(limit)


def _module_exists(name: str) -> bool:
    """Whether a lazy command's module is present, from the files alone: finding a
    module's spec would import its parent package."""
    top, _, rest = name.partition(".")
    package = sys.modules.get(top)
    locations = list(getattr(package, "__path__", [])) if package is not None else []
    relative = Path(*rest.split(".")) if rest else Path()
    return any(
        (Path(location) / relative).with_suffix(".py").is_file()
        or (Path(location) / relative / "__init__.py").is_file()
        for location in locations
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """envc: compile .envspec files into sandbox environments for RL agents."""


for command in (
    spec.check,
    spec.fmt_command,
    fix.fix_command,
    spec.compile_command,
    spec.new_command,
    llm.lock_command,
    llm.draft_command,
    graph.graph_command,
    tasks.sample_command,
    tasks.tasks_command,
    tasks.export_command,
    tasks.calibrate_command,
):
    cli.add_command(command)


QUICK_EXIT_COMMANDS = frozenset({"check", "compile", "fix", "fmt", "graph", "new"})
"""Commands that are done when they return: no threads, servers, Ray or model sessions
are left for exit handlers, every file is written and closed. Their process ends at
once instead of Python tearing down its modules and the objects they hold (what mypy
does too): that teardown was 0.28 s of the 0.92 s of `envc check specs/ --jobs 1`."""


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry: run the CLI; turn any unexpected exception into exit 3.
    Called with no `argv` (as the `envc` program), a command of QUICK_EXIT_COMMANDS
    ends the process when it is done (`_end_process`)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        cli.main(args=args, prog_name="envc")
    except SystemExit as done:  # how click ends every command
        if argv is None and next((a for a in args if not a.startswith("-")), None) in QUICK_EXIT_COMMANDS:
            _end_process(done.code)
        raise
    except Exception as exc:  # the one place that catches everything
        if os.environ.get("ENVC_DEBUG") == "1":
            raise
        message = str(exc).splitlines()[0] if str(exc) else ""
        click.echo(
            f"envc: internal error: {type(exc).__name__}: {message} (set ENVC_DEBUG=1 for a traceback)", err=True
        )
        sys.exit(EXIT_INTERNAL)


def _end_process(code: object) -> NoReturn:
    """Exit with `code` as `sys.exit` would, output flushed, skipping the interpreter's
    teardown (`os._exit`)."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed stream
            stream.flush()
    os._exit(code or 0)
