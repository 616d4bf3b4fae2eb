"""The `envc` command line: `check`, `fmt`, `compile`, `new`, `graph`, `sample`, `tasks`,
`export` and `calibrate` (and the LLM layer's commands).

Why click: subcommands, `--help` and usage errors (exit 2) come for free. Exit codes are
part of the contract with CI scripts: 0 clean, 1 errors in a spec (or `fmt --check`
would change a file), 2 usage or I/O errors, 3 an internal error in envc itself. Bad
input never produces a Python traceback; only a bug does, and only with ENVC_DEBUG=1.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from compiler import project
from compiler.build import pipeline

if TYPE_CHECKING:
    from compiler import ir
    from compiler.synth import graph as graph_types
    from compiler.synth import sample as sample_types
from compiler.diagnostics import Diagnostic, has_errors, render_text, to_json

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
IO_CODES = frozenset({"E0001", "E0002"})
SPEC_SUFFIX = ".envspec"


# --------------------------------------------------------------------------- helpers


def expand_paths(paths: Iterable[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Files as given; directories become every `*.envspec` below them, sorted.

    Hidden directories (`.venv`, `.git`) are skipped. A directory without specs is an
    E0001 diagnostic rather than a silent success, so a typo in CI fails loudly.
    """
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(p for p in path.rglob(f"*{SPEC_SUFFIX}") if p.is_file() and not _hidden(p, path))
        if not found:
            message = f"no {SPEC_SUFFIX} files under {path}"
            problems.append(
                Diagnostic("E0001", message, str(path), 0, 0, hint="pass spec files or a directory holding some")
            )
        files.extend(found)
    return list(dict.fromkeys(files)), problems


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def exit_code(diagnostics: Sequence[Diagnostic]) -> int:
    """2 when a file could not be read, 1 for any other error, else 0."""
    if any(d.code in IO_CODES for d in diagnostics):
        return EXIT_USAGE
    return EXIT_ERRORS if has_errors(diagnostics) else EXIT_OK


def prepared_or_exit(files: list[Path], root: Path, scratch: Path, llm: Any = None) -> sample_types.Prepared:
    """`sample.prepare` for a command that runs generated packages: its diagnostics printed
    to stderr, and the command ends (exit 1, or 2 for unreadable files) on any error."""
    from compiler.synth import sample

    prepared = sample.prepare(files, root, scratch, llm)
    for diagnostic in prepared.diagnostics:
        print_diagnostic(diagnostic, prepared.sources.get(diagnostic.path), err=True)
    if has_errors(prepared.diagnostics):
        sys.exit(exit_code(prepared.diagnostics))
    return prepared


_HEAD = re.compile(r"^(?P<loc>\S+:\d+:\d+) - (?P<sev>error|warning) (?P<code>E\d{4}):")


def print_diagnostic(diagnostic: Diagnostic, source: str | None, *, err: bool = False) -> None:
    """Plain text when piped; colour (via rich) only when the stream is a terminal."""
    text = render_text(diagnostic, source)
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        click.echo(text, err=err)
        return
    from rich.console import Console
    from rich.text import Text

    styled = Text(text)
    match = _HEAD.match(text)
    if match:
        styled.stylize("bold", *match.span("loc"))
        styled.stylize("bold red" if match["sev"] == "error" else "bold yellow", match.start("sev"), match.end("code"))
    for hint in re.finditer(r"^  (hint|note):", text, re.MULTILINE):
        styled.stylize("cyan", *hint.span(1))
    Console(file=stream, highlight=False, soft_wrap=True).print(styled)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _summary(files: int, diagnostics: Sequence[Diagnostic]) -> str:
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    tail = f", {_plural(warnings, 'warning')}" if warnings else ""
    return f"checked {_plural(files, 'file')}: {_plural(errors, 'error')}{tail}"


def read_spec(path: Path) -> tuple[str | None, Diagnostic | None]:
    """The file's text, or the E0001/E0002 diagnostic saying why it cannot be had."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, Diagnostic("E0001", f"cannot read {path}: {exc.strerror or exc}", str(path), 0, 0)
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, Diagnostic("E0002", f"byte {exc.start} is not valid UTF-8", str(path), line, 1)


def write_atomically(path: Path, text: str | bytes) -> None:
    """Write or replace `path` in one step (temp file in the same directory, then
    os.replace), so an interrupted run never leaves a half-written file; an existing
    file keeps its mode, a new one gets the umask's."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- commands


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
        "Serve generated packages (generated/NAME) and task sets (DIR with tasks.jsonl).",
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


# Extension point: later stages register further subcommands on `cli` the same way,
# e.g. `@cli.command("compile")` (lower + static/dynamic checks) and `@cli.command("new")`
# (a spec from a prototype). Each command returns its exit code via `ctx.exit`.


SPEC_PATHS = click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
JOBS = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes for independent specs (default: one per core; 1: none). The output is the same.",
)


@cli.command()
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
    from compiler.build import parallel

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
        for found, texts in parallel.map_in_workers(_check_one, paths, _jobs(jobs), _lost_worker):
            diagnostics.extend(found)
            sources.update(texts)
    # With --emit-ir stdout carries only the IR, so diagnostics move to stderr.
    if fmt == "json":
        click.echo(to_json(diagnostics), err=emit_ir)
    else:
        for diagnostic in diagnostics:
            print_diagnostic(diagnostic, sources.get(diagnostic.path), err=emit_ir)
        click.echo(_summary(len(paths), diagnostics), err=True)
    if environment_json:
        click.echo(environment_json)
    ctx.exit(exit_code(diagnostics))


def _check_one(path: Path) -> tuple[list[Diagnostic], dict[str, str]]:
    """What `envc check` prints of one spec (in a worker process, when there are many)."""
    from compiler.analyse import analyse_file

    result = analyse_file(path)
    return result.diagnostics, result.sources


def _jobs(jobs: int | None) -> int:
    from compiler.build import parallel

    return parallel.default_jobs() if jobs is None else jobs


def _lost_worker(message: str) -> None:
    click.echo(f"envc: {message}", err=True)


@cli.command("fmt")
@SPEC_PATHS
@click.option("--check", "check_only", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.pass_context
def fmt_command(ctx: click.Context, files: tuple[Path, ...], check_only: bool) -> None:
    """Rewrite specs in the canonical layout, in place and only when changed."""
    paths, diagnostics = expand_paths(files)
    for problem in diagnostics:
        print_diagnostic(problem, None)
    changed = 0
    for path in paths:
        would_change, problems = _format_file(path, check_only)
        changed += would_change
        diagnostics.extend(problems)
    verb = "would be reformatted" if check_only else "reformatted"
    click.echo(f"{_plural(changed, 'file')} {verb}, {len(paths) - changed} unchanged", err=True)
    code = exit_code(diagnostics)
    ctx.exit(EXIT_ERRORS if code == EXIT_OK and check_only and changed else code)


def _format_file(path: Path, check_only: bool) -> tuple[bool, list[Diagnostic]]:
    """Format one file: whether it changes (or would), and the diagnostics printed.

    A file with syntax errors is left untouched: the formatter returns no text for it.
    """
    from compiler.front.fmt import format_source

    source, problem = read_spec(path)
    if source is None:
        problems = [problem] if problem else []
        for diagnostic in problems:
            print_diagnostic(diagnostic, None)
        return False, problems
    result = format_source(source, str(path))
    for diagnostic in result.diagnostics:
        print_diagnostic(diagnostic, source)
    if result.text is None or result.text == source:
        return False, result.diagnostics
    if check_only:
        click.echo(f"would reformat {path}")
    else:
        write_atomically(path, result.text)
        click.echo(f"reformatted {path}")
    return True, result.diagnostics


@cli.command("compile")
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
    """Compile specs into checked Python packages (all specs/*.envspec when none are given)."""
    root = project.find_project_root(Path.cwd())
    files, problems = expand_paths(specs) if specs else (project.default_specs(root), [])
    if not files and not problems:
        click.echo("envc: no specs to compile (pass spec files, or add some under specs/)", err=True)
        sys.exit(EXIT_USAGE)
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
    _print_compile_table(results)
    _print_heal_summary(options.heal_stats)
    for result in results:
        if result.status == "stale":
            for name in result.stale_files:
                click.echo(f"stale: {options.output.name}/{result.name}/{name}", err=True)
    failed = [r for r in results if not r.ok]
    if problems and all(d.code in IO_CODES for d in problems):
        sys.exit(EXIT_USAGE)
    if any(d.code in IO_CODES or d.code == "E6007" for r in failed for d in r.diagnostics):
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_ERRORS if failed or problems else EXIT_OK)


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


def _print_compile_table(rows: list[pipeline.SpecResult]) -> None:
    """One row per spec: tools (read/write), lines, static and dynamic check, time."""
    header = ("spec", "env", "tools r/w", "lines", "static", "dynamic", "tests", "time", "result")
    table = [header] + [
        (
            r.spec,
            r.name or "-",
            f"{r.read_tools}/{r.write_tools}" if r.name else "-",
            str(r.lines) if r.lines else "-",
            r.static,
            r.dynamic,
            r.tests or "-",
            f"{r.seconds:.2f}s",
            r.status,
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


@cli.command("new")
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
    target = output if output is not None else root / "specs" / f"{name}.envspec"
    problem = scaffold.problem_with(name, archetype, target)
    if problem:
        click.echo(f"envc new: {problem}", err=True)
        sys.exit(EXIT_USAGE)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "x", encoding="utf-8") as handle:  # never overwrite an existing spec
        handle.write(scaffold.render(name, archetype))
    click.echo(f"wrote {target}; next: envc compile {target}")


# --------------------------------------------------------------------------- envc lock (the LLM layer)


def _llm_log(message: str) -> None:
    """Progress of requests to the model, on stderr (never the key: see compiler/llm/provider.py)."""
    click.echo(f"envc: {message}", err=True)


def _llm_options(offline: bool) -> dict[str, Any]:
    """The LLM fields of `pipeline.Options` for `envc compile` (`stats` imports nothing heavy)."""
    from compiler.llm.stats import HealStats

    return {"offline": offline, "llm_log": _llm_log, "heal_stats": HealStats()}


def _print_heal_summary(stats: object) -> None:
    """Pass rates per attempt and stage, when the run asked a model for anything."""
    from compiler.llm.stats import HealStats

    if isinstance(stats, HealStats) and stats:
        for line in stats.render():
            click.echo(line, err=True)


@cli.command("lock")
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
    files, problems = expand_paths(specs) if specs else (project.default_specs(root), [])
    for problem in problems:
        print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    mode: resolve.Mode = "refill" if refill else "update" if update else "status"
    stats = HealStats()
    options = resolve.FillOptions(root=root, mode=mode, qc=not no_qc, log=_llm_log, stats=stats)
    run = resolve.lock_specs(files, options)
    for diagnostic in run.diagnostics:
        print_diagnostic(diagnostic, run.sources.get(diagnostic.path), err=True)
    rows = [("spec", "declaration", "fill")] + [(s.spec, s.decl, s.status) for s in run.statuses]
    if len(rows) > 1:
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    else:
        click.echo("no llm bodies in these specs", err=True)
    _print_heal_summary(stats)
    for path in run.written:
        click.echo(f"wrote {project.display_path(path, root)}", err=True)
    unsettled = ("refused",) if update else ("stale", "missing", "orphan")
    failed = any(s.status in unsettled for s in run.statuses)
    sys.exit(exit_code(run.diagnostics) or (EXIT_ERRORS if failed else EXIT_OK))


# --------------------------------------------------------------------------- envc draft (the LLM layer)


@cli.command("draft")
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
    config, config_problems = load_config(root)
    for diagnostic in config_problems:
        print_diagnostic(diagnostic, None, err=True)
    if has_errors(config_problems):
        sys.exit(EXIT_ERRORS)
    if not config.configured:
        click.echo("envc draft: no model configured: set `model` in [tool.envc.llm] of pyproject.toml", err=True)
        sys.exit(EXIT_USAGE)
    stats = HealStats()
    ctx = draft.DraftContext(config, OpenAIProvider(config, log=_llm_log), stats, root, not no_qc, _llm_log)
    if batch is not None:
        outcomes, settled = _draft_batch(batch, output or root / "specs", report, retry, ctx)
    else:
        assert name is not None
        profile = draft.Profile(name, description, tuple(_split_domains(domains)), archetype)
        problem = profile.problem()
        if problem:
            click.echo(f"envc draft: {problem}", err=True)
            sys.exit(EXIT_USAGE)
        outcomes = [draft.draft_one(profile, output or root / "specs" / f"{name}.envspec", ctx)]
        outcome = outcomes[0]
        settled = outcome.status == "accepted"
        click.echo(f"{outcome.name}: {outcome.status}" + (f" ({outcome.detail})" if outcome.detail else ""))
        for attempt in outcome.attempts:
            if attempt.failure:
                click.echo(f"  attempt {attempt.attempt}: failed `{attempt.failure}`", err=True)
                for line in attempt.problems[:5]:
                    click.echo(f"    {line}", err=True)
    _print_heal_summary(stats)
    accepted = [root / o.spec for o in outcomes if o.status == "accepted"]
    if accepted and not no_compile:
        options = pipeline.Options(output=project.configured_output(root).resolve(), project_root=root, qc=False)
        results = pipeline.compile_specs(accepted, options)
        _print_compile_table(results)
    if batch is None and outcomes[0].status == "exists":
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK if settled else EXIT_ERRORS)


def _split_domains(values: Iterable[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _draft_batch(batch: Path, folder: Path, report_path: Path | None, retry: bool, ctx: Any) -> tuple[list[Any], bool]:
    """`envc draft --batch`: every profile of the JSONL, resumable through the report;
    the outcomes of this run, and whether every profile of the report is accepted."""
    from compiler.build import draft

    profiles, problems = draft.read_profiles(batch)
    for problem in problems:
        click.echo(f"envc draft: {problem}", err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    report = draft.BatchReport.load(report_path or batch.with_suffix(".report.json"))

    def progress(done: int, total: int, outcome: Any) -> None:
        click.echo(
            f"[{done}/{total}] {outcome.name}: {outcome.status}" + (f" ({outcome.detail})" if outcome.detail else ""),
            err=True,
        )

    outcomes = draft.draft_batch(profiles, folder, report, ctx, retry, progress)
    summary = report.summary(ctx.stats)
    click.echo(
        f"drafted {summary['accepted']} of {summary['profiles']} environments "
        f"({summary['pass_rate']:.1%} of those tried); report: {report.path}"
    )
    statuses = [report.outcomes.get(p.name, {}).get("status") for p in profiles]
    return outcomes, all(status == "accepted" for status in statuses)


# --------------------------------------------------------------------------- envc graph


@cli.command("graph")
@SPEC_PATHS
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "dot", "svg", "png"]),
    default="json",
    show_default=True,
    help="JSON (networkx node-link data, every edge) or a picture (svg and png need graphviz's `dot`).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write to this file (replaced in one step) instead of stdout; png needs it on a terminal.",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=None,
    help="Pictures: each tool's K heaviest edges out (0: all; default 2).",
)
@click.option(
    "--min-weight", type=click.FloatRange(min=0), default=None, help="Pictures: leave out edges lighter than W."
)
@click.option(
    "--view",
    type=click.Choice(["all", "tools", "envs"]),
    default=None,
    help="Pictures: the tool graphs, the env graph (two or more specs), or both (default).",
)
@click.option(
    "--llm",
    "use_llm",
    is_flag=True,
    help="Merge the tool edges a model proposes, from envc.lock when current, else asked for and locked.",
)
@click.option("--offline", is_flag=True, help="With --llm: envc.lock only; a missing or stale entry is an error.")
@click.option("--refresh", is_flag=True, help="With --llm: ask the model again even where envc.lock is current.")
@click.pass_context
def graph_command(
    ctx: click.Context,
    files: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    top: int | None,
    min_weight: float | None,
    view: str | None,
    use_llm: bool,
    offline: bool,
    refresh: bool,
) -> None:
    """Tool dependency graphs of specs, and the env graph of two or more (docs/graph.md)."""
    from compiler.synth import graph, graph_render

    if (offline or refresh) and not use_llm:
        raise click.UsageError("--offline and --refresh are about the proposed edges of --llm")
    if offline and refresh:
        raise click.UsageError("--refresh asks the model again; --offline asks none")
    if fmt == "json" and (top, min_weight, view) != (None, None, None):
        raise click.UsageError("--top, --min-weight and --view shape pictures (dot, svg, png); JSON has every edge")
    if fmt == "png" and output is None and _stdout_is_terminal():
        raise click.UsageError("a PNG is not for a terminal: pass -o FILE or redirect stdout")
    paths, diagnostics = expand_paths(files)
    if view == "envs" and len(paths) < 2:
        raise click.UsageError("--view envs needs two or more specs")
    root = project.find_project_root(Path.cwd())
    try:
        weights = graph.load_weights(root)
    except graph.GraphConfigError as exc:
        click.echo(f"envc graph: {exc}", err=True)
        ctx.exit(EXIT_USAGE)
    envs, problems, sources = _analysed_environments(paths)
    diagnostics.extend(problems)
    for diagnostic in diagnostics:
        print_diagnostic(diagnostic, sources.get(diagnostic.path), err=True)
    if exit_code(diagnostics) != EXIT_OK:
        ctx.exit(exit_code(diagnostics))
    if use_llm:
        tool_graphs, problems = _llm_tool_graphs(envs, weights, root, offline, refresh)
        for diagnostic in problems:
            print_diagnostic(diagnostic, sources.get(diagnostic.path), err=True)
        if exit_code(problems) != EXIT_OK:
            ctx.exit(exit_code(problems))
    else:
        tool_graphs = {env.header.name: graph.tool_graph(env, weights) for env in envs}
    document = graph.GraphDocument(
        tools=tool_graphs,
        environments=graph.env_graph(envs, weights) if len(envs) > 1 else None,
    )
    try:
        data = _graph_bytes(document, fmt, top, min_weight, view)
    except graph_render.RenderError as exc:
        click.echo(f"envc graph: {exc}", err=True)
        ctx.exit(EXIT_USAGE)
    _write_graph(ctx, data, output)
    tools = sum(g.number_of_nodes() for g in document.tools.values())
    edges = sum(g.number_of_edges() for g in document.tools.values())
    where = f" to {output}" if output is not None else ""
    proposed = sum(graph_render.proposed_count(g) for g in document.tools.values())
    counted = f"{edges} tool edges" + (f" ({proposed} proposed)" if use_llm else "")
    click.echo(f"graph of {_plural(len(envs), 'environment')}: {tools} tools, {counted}{where}", err=True)


def _llm_tool_graphs(
    envs: list[ir.Environment], weights: graph_types.GraphWeights, root: Path, offline: bool, refresh: bool
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Tool graphs with the edges a model proposed (compiler/synth/model_edges.py), and the pass
    rates when a model was asked."""
    from compiler.llm.stats import HealStats
    from compiler.synth import model_edges as edges

    stats = HealStats()
    options = edges.EdgeOptions(root=root, offline=offline, refresh=refresh, log=_llm_log, stats=stats)
    built, diagnostics = edges.llm_tool_graphs(envs, weights, options)
    if stats:
        for line in stats.render("edge lists"):
            click.echo(line, err=True)
    return built, diagnostics


def _analysed_environments(paths: list[Path]) -> tuple[list[ir.Environment], list[Diagnostic], dict[str, str]]:
    """The environments of specs that analyse cleanly, each name once (E6005 for a name
    two specs define), their diagnostics and the texts read."""
    from compiler.analyse import analyse_file

    envs: list[ir.Environment] = []
    diagnostics: list[Diagnostic] = []
    sources: dict[str, str] = {}
    named: dict[str, Path] = {}  # environment name -> the spec that defines it
    for path in paths:
        result = analyse_file(path)
        diagnostics.extend(result.diagnostics)
        sources.update(result.sources)
        if result.environment is None or has_errors(result.diagnostics):
            continue
        name = result.environment.header.name
        if name in named:
            message = f"{named[name]} and {path} both define environment `{name}`"
            diagnostics.append(Diagnostic("E6005", message, str(path), 1, 1))
            continue
        envs.append(result.environment)
        named[name] = path
    return envs, diagnostics, sources


def _graph_bytes(
    document: graph_types.GraphDocument, fmt: str, top: int | None, min_weight: float | None, view: str | None
) -> bytes:
    """The document as stable JSON, or a picture drawn with the picture options given."""
    import json

    from compiler.synth import graph_render

    if fmt == "json":
        return (json.dumps(document.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    defaults = graph_render.PictureOptions()
    options = graph_render.PictureOptions(
        top=defaults.top if top is None else top,
        min_weight=defaults.min_weight if min_weight is None else min_weight,
        view=view or defaults.view,
    )
    return graph_render.render(graph_render.to_dot(document, options), fmt)


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _write_graph(ctx: click.Context, data: bytes, output: Path | None) -> None:
    """To stdout, or to `output` in one step (`write_atomically`)."""
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        write_atomically(output, data)
    except OSError as exc:
        click.echo(f"envc graph: cannot write {output}: {exc.strerror or exc}", err=True)
        ctx.exit(EXIT_USAGE)


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- envc sample


def parse_env_count(text: str) -> tuple[int, int]:
    """`--envs K` or `--envs A-B`."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not match:
        raise click.BadParameter(f"expected K or A-B, got {text!r}", param_hint="--envs")
    low = int(match.group(1))
    return low, int(match.group(2) or low)


@cli.command("sample")
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--chains", type=click.IntRange(min=1), required=True, help="How many distinct chains to keep.")
@click.option("--seed", type=int, default=0, show_default=True, help="Same specs and seed, same chains.")
@click.option(
    "--envs", "env_count", default="1", show_default=True, help="Environments per chain: K or A-B (2-5 to cross)."
)
@click.option(
    "--min-len", type=click.IntRange(min=1), default=2, show_default=True, help="Fewest calls per environment."
)
@click.option("--max-len", type=click.IntRange(min=1), default=5, show_default=True, help="Most calls per environment.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes (same output).")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="The chains, one JSON row each.")
@click.option(
    "--llm",
    "use_llm",
    is_flag=True,
    help="Walk the tool graphs with the edges a model proposed too (envc graph --llm; from envc.lock when current).",
)
@click.option("--offline", is_flag=True, help="With --llm: envc.lock only; a missing or stale entry is an error.")
def sample_command(
    specs: tuple[Path, ...],
    chains: int,
    seed: int,
    env_count: str,
    min_len: int,
    max_len: int,
    workers: int,
    output: Path,
    use_llm: bool,
    offline: bool,
) -> None:
    """Sample executable tool chains, each ending in a state-changing write, into JSONL."""
    from compiler.synth import sample

    if offline and not use_llm:
        raise click.UsageError("--offline is about the proposed edges of --llm")
    envs_range = parse_env_count(env_count)
    files, problems = expand_paths(specs)
    for problem in problems:
        print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    root = project.find_project_root(Path.cwd())
    options = sample.SampleOptions(chains, seed, envs_range, min_len, max_len, workers)
    with tempfile.TemporaryDirectory(prefix="envc-sample-") as scratch:
        prepared = prepared_or_exit(files, root, Path(scratch), _edge_options(root, offline) if use_llm else None)
        for spec in prepared.lowered:
            click.echo(
                f"envc sample: {spec} is not compiled or is stale; sampling a fresh, unchecked lowering", err=True
            )
        try:
            sampler = sample.Sampler(prepared.envs, options, prepared.weights, proposed=prepared.proposed)
        except sample.SampleError as exc:
            raise click.UsageError(str(exc)) from exc
        rows, summary = _sample_with_progress(sampler, prepared.worker_specs)
    try:
        write_atomically(output, sample.rows_to_jsonl(rows))
    except OSError as exc:
        click.echo(f"envc sample: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)
    _print_sample_summary(summary.to_json(), output)
    if summary.kept < chains:
        click.echo(f"envc sample: kept {summary.kept} of {chains} chains before the attempt budget ran out", err=True)
        sys.exit(EXIT_ERRORS)


def _edge_options(root: Path, offline: bool) -> Any:
    """How `--llm` commands get the tool edges a model proposed (compiler/synth/model_edges.py)."""
    from compiler.synth import model_edges as edges

    return edges.EdgeOptions(root=root, offline=offline, log=_llm_log)


def _sample_with_progress(
    sampler: sample_types.Sampler, worker_specs: list[tuple[str, str]]
) -> tuple[list[dict[str, object]], sample_types.Summary]:
    """A progress bar on a terminal; silence when piped."""
    from compiler.synth import sample

    if not sys.stderr.isatty():
        return sample.sample(sampler, worker_specs=worker_specs)
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        task = progress.add_task("sampling chains", total=sampler.options.chains)
        return sample.sample(sampler, lambda kept, _: progress.update(task, completed=kept), worker_specs)


def _print_sample_summary(data: dict[str, Any], output: Path) -> None:
    rejected = ", ".join(f"{reason} {count}" for reason, count in data["rejected"].items()) or "none"
    lengths = ", ".join(f"{length}: {count}" for length, count in data["lengths"].items())
    click.echo(f"kept {data['kept']} chains in {output}; rejected: {rejected}", err=True)
    coverage = f"tool coverage {data['tool_coverage']:.0%} (write tools {data['write_tool_coverage']:.0%})"
    click.echo(f"{coverage}; calls per chain: {lengths}", err=True)
    if data["tools_never_used"]:
        click.echo(f"never used: {', '.join(data['tools_never_used'])}", err=True)


# --------------------------------------------------------------------------- envc tasks


@cli.command("tasks")
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-n", "count", type=click.IntRange(min=1), required=True, help="How many audited tasks to keep.")
@click.option("--seed", type=int, default=0, show_default=True, help="Same specs and seed, same tasks.")
@click.option(
    "--chains",
    "chains_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Make tasks from these chains (envc sample's JSONL) instead of sampling.",
)
@click.option("--envs", "env_count", default="1", show_default=True, help="Environments per task: K or A-B.")
@click.option("--min-len", type=click.IntRange(min=1), default=2, show_default=True, help="Fewest calls per env.")
@click.option("--max-len", type=click.IntRange(min=1), default=4, show_default=True, help="Most calls per env.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path, file_okay=False), required=True, help="Folder to write."
)
@click.option(
    "--calibrate",
    "calibrate_policy",
    type=click.Choice(("random", "gold", "nothing", "flaky-gold")),  # CALIBRATION_POLICIES, defined below
    default=None,
    help="Then run this policy k times per task, as envc calibrate does (DIR/calibrated.jsonl, review.jsonl).",
)
@click.option(
    "-k", "runs", type=click.IntRange(min=1), default=8, show_default=True, help="Runs per task to calibrate."
)
@click.option(
    "--llm",
    "use_llm",
    is_flag=True,
    help="A model ([tool.envc.llm]) writes each sampled task's request; audited again, graded by the rubric, locked.",
)
@click.option("--offline", is_flag=True, help="With --llm: answers from envc.lock only; a task not in it is rejected.")
def tasks_command(
    specs: tuple[Path, ...],
    count: int,
    seed: int,
    chains_file: Path | None,
    env_count: str,
    min_len: int,
    max_len: int,
    output: Path,
    calibrate_policy: str | None,
    runs: int,
    use_llm: bool,
    offline: bool,
) -> None:
    """Verifiable tasks from executable chains, audited before kept: DIR/tasks.jsonl, DIR/report.json."""
    from compiler.synth import model_requests as llm_tasks
    from compiler.synth import sample, task_build, tasks

    if offline and not use_llm:
        raise click.UsageError("--offline is about the requests a model writes with --llm")

    options = task_build.TaskOptions(count, seed, parse_env_count(env_count), min_len, max_len)
    files, problems = expand_paths(specs)
    for problem in problems:
        print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    chains = _read_chains(chains_file) if chains_file is not None else None
    root = project.find_project_root(Path.cwd())
    with tempfile.TemporaryDirectory(prefix="envc-tasks-") as scratch:
        prepared = prepared_or_exit(files, root, Path(scratch))
        requests = _task_request_writer(root, offline) if use_llm else None
        try:
            sampler = tasks.sampler_for(prepared.envs, options, prepared.weights)
            kept, report = tasks.synthesise(sampler, options, chains, requests=requests)
        except (sample.SampleError, tasks.ChainError) as exc:
            raise click.UsageError(str(exc)) from exc
        except llm_tasks.LLMTaskError as exc:  # the endpoint failed for good while writing requests
            click.echo(str(exc), err=True)
            sys.exit(EXIT_ERRORS)
        if requests is not None:
            requests.write_locks()
        calibration = (
            _calibrate_tasks(kept, prepared.envs, calibrate_policy, runs, seed, "") if calibrate_policy else None
        )
    try:
        output.mkdir(parents=True, exist_ok=True)
        write_atomically(output / "tasks.jsonl", tasks.tasks_to_jsonl(kept))
        write_atomically(output / "report.json", json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        click.echo(f"envc tasks: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)
    _print_task_summary(report.to_json(), output)
    if calibration is not None:
        _write_calibration(output, calibration, "tasks")
    if report.kept < count:
        click.echo(f"envc tasks: kept {report.kept} of {count} tasks; the candidates ran out", err=True)
        sys.exit(EXIT_ERRORS)


def _task_request_writer(root: Path, offline: bool) -> Any:
    """The model that writes task requests for `envc tasks --llm` (compiler/synth/model_requests.py)."""
    from compiler.synth import model_requests as llm_tasks

    try:
        return llm_tasks.writer_for(root, offline, log=_llm_log)
    except llm_tasks.LLMTaskError as exc:
        click.echo(str(exc), err=True)
        sys.exit(EXIT_USAGE)


def _read_chains(path: Path) -> list[dict[str, object]]:
    """Rows of a chains JSONL; a line that is not a JSON object is a usage error naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"envc tasks: cannot read {path}: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise click.UsageError(f"{path}:{number}: not a JSON line: {exc}") from exc
        if not isinstance(row, dict):
            raise click.UsageError(f"{path}:{number}: a chain is a JSON object")
        rows.append(row)
    return rows


def _print_task_summary(data: dict[str, Any], output: Path) -> None:
    rejected = ", ".join(f"{audit} {count}" for audit, count in data["rejected"].items()) or "none"
    click.echo(
        f"kept {data['kept']} of {data['candidates']} candidate tasks in {output / 'tasks.jsonl'}; rejected: {rejected}",
        err=True,
    )
    rates = ", ".join(f"{audit} {rate:.0%}" for audit, rate in data["audit_pass_rates"].items())
    click.echo(f"audit pass rates: {rates}; baseline mean reward {data['baseline_mean_reward']}", err=True)


# --------------------------------------------------------------------------- envc export and envc calibrate
# (docs/tasks.md: "Exports" and "Calibration"; compiler/synth/export.py and compiler/run/calibrate.py)

CALIBRATION_POLICIES = ("random", "gold", "nothing", "flaky-gold")
"""The names of compiler.run.calibrate.POLICIES (not imported here: it loads the sampler)."""


def _read_task_file(path: Path, command: str) -> list[dict[str, Any]]:
    """The tasks of a tasks JSONL, or exit 2 naming the file and line of the first bad row."""
    from compiler.synth import export

    try:
        return export.read_tasks(path)
    except export.TaskFileError as exc:
        click.echo(f"envc {command}: {exc}", err=True)
        sys.exit(EXIT_USAGE)


@cli.command("export")
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["datasets", "verl"]),
    default="datasets",
    show_default=True,
    help="datasets: one row per task, nested parts as JSON text (JSONL, or parquet for -o *.parquet); "
    "verl: VERL's multi-turn tool fields (parquet).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File to write (default: beside the tasks, tasks.datasets.jsonl or tasks.verl.parquet).",
)
def export_command(source: Path, fmt: str, output: Path | None) -> None:
    """Tasks (DIR/tasks.jsonl, or a tasks JSONL file) as a trainer dataset with one fixed schema."""
    from compiler.synth import export

    path = export.tasks_file(source)
    target = output if output is not None else export.default_output(source, fmt)
    if fmt == "verl" and target.suffix != ".parquet":
        raise click.UsageError("VERL reads parquet files by their suffix: name the output FILE.parquet")
    rows = _read_task_file(path, "export")
    if not rows:
        click.echo(f"envc export: {path} holds no tasks; nothing to export", err=True)
        sys.exit(EXIT_USAGE)
    parquet = fmt == "verl" or target.suffix == ".parquet"
    try:
        data = export.export(rows, fmt, parquet)
    except export.MissingDependency as exc:
        click.echo(f"envc export: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        write_atomically(target, data)
    except OSError as exc:
        click.echo(f"envc export: cannot write {target}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)
    kind = f"{fmt} {'parquet' if parquet else 'JSONL'}"
    click.echo(f"exported {_plural(len(rows), 'task')} from {path} to {target} ({kind}, {len(data)} bytes)", err=True)


def _calibrate_tasks(
    rows: list[dict[str, Any]], envs: dict[str, sample_types.SampleEnv], policy: str, runs: int, seed: int, where: str
) -> calibrate_types.Calibration:
    """`calibrate` with the named policy; tasks that do not fit the specs exit 2."""
    from compiler.run import calibrate

    try:
        calibrate.check_tasks(rows, envs, where)
        return calibrate.calibrate(rows, envs, calibrate.POLICIES[policy], runs, seed)
    except calibrate.CalibrationError as exc:
        raise click.UsageError(str(exc)) from exc


def _write_calibration(folder: Path, result: calibrate_types.Calibration, command: str) -> None:
    """DIR/calibrated.jsonl (kept), DIR/review.jsonl (0 of k) and DIR/calibration.json,
    each in one step, and a summary line."""
    from compiler.synth import tasks

    try:
        write_atomically(folder / "calibrated.jsonl", tasks.tasks_to_jsonl(result.kept))
        write_atomically(folder / "review.jsonl", tasks.tasks_to_jsonl(result.review))
        write_atomically(folder / "calibration.json", json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        click.echo(f"envc {command}: cannot write {folder}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)
    data = result.to_json()
    click.echo(
        f"calibrated {_plural(data['tasks'], 'task')} with the {data['policy']} policy, k={data['k']}: "
        f"kept {data['kept']} in {folder / 'calibrated.jsonl'}, too easy {data['too_easy']}, "
        f"review {data['review']} in {folder / 'review.jsonl'}; pass rate {data['pass_rate']:.0%}",
        err=True,
    )


@cli.command("calibrate")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--policy",
    type=click.Choice((*CALIBRATION_POLICIES, "model")),
    default="random",
    show_default=True,
    help="A baseline policy, or `model`: the rollout loop against --model at --base-url.",
)
@click.option("-k", "runs", type=click.IntRange(min=1), default=8, show_default=True, help="Runs per task.")
@click.option("--seed", type=int, default=0, show_default=True, help="Same tasks and seed, same counts.")
@click.option("--model", default=None, help="With --policy model: the model to ask (default: [tool.envc.llm] model).")
@click.option(
    "--base-url",
    default=None,
    help="With --policy model: the OpenAI-compatible endpoint (default: [tool.envc.llm] base_url, else $OPENAI_BASE_URL).",
)
@click.option(
    "--temperature", type=click.FloatRange(min=0), default=None, help="With --policy model: sampling temperature."
)
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="With --policy model: longest reply.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Runs in flight at once (default: [tool.envc.llm] concurrency for the model, 1 for a baseline).",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS|auto",
    help="Run on a Ray cluster (`auto`: the one this machine belongs to); same counts as a local run.",
)
def calibrate_command(
    folder: Path,
    specs: tuple[Path, ...],
    policy: str,
    runs: int,
    seed: int,
    model: str | None,
    base_url: str | None,
    temperature: float | None,
    max_tokens: int | None,
    concurrency: int | None,
    ray_address: str | None,
) -> None:
    """Run a policy k times per task of DIR/tasks.jsonl; keep tasks passed sometimes, list 0-of-k ones for review."""
    from compiler.cli.rollout import calibrate_run

    calibrate_run(folder, specs, policy, runs, seed, model, base_url, temperature, max_tokens, concurrency, ray_address)


if TYPE_CHECKING:
    from compiler.run import calibrate as calibrate_types


# --------------------------------------------------------------------------- entry point


QUICK_EXIT_COMMANDS = frozenset({"check", "compile", "fmt", "graph", "new"})
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


if __name__ == "__main__":
    main()
