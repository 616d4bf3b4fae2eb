"""What every `envc` command shares: the exit codes, reading spec and task files,
printing diagnostics and one-line failures, writing files in one step, plurals.

The exit codes are a contract with CI scripts: 0 ok, 1 findings (errors in a spec,
`fmt --check` would change a file, audits or runs that failed), 2 usage or input errors
(a missing path, a malformed input file: one line naming `file:line` where there is a
line, never click's `Usage:` block), 3 an internal error in envc itself (`app.main`).
Only the command modules of compiler/cli/ import this one.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from compiler.diagnostics import Diagnostic, has_errors, render_text
from compiler.project import SPEC_SUFFIX

if TYPE_CHECKING:
    from compiler.build import pipeline
    from compiler.llm.config import LLMConfig
    from compiler.run import scale
    from compiler.synth import sample as sample_types

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
IO_CODES = frozenset({"E0001", "E0002"})
"""The diagnostics of a file that could not be read (missing, not UTF-8): exit 2."""

SPEC_PATHS = click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
"""The FILES argument of the commands that read specs: files, or folders of them."""


# --------------------------------------------------------------------------- failing


def fail(command: str, message: str, code: int = EXIT_USAGE) -> NoReturn:
    """End the command with one line on stderr, `envc COMMAND: MESSAGE`, and `code`."""
    click.echo(f"envc {command}: {message}", err=True)
    sys.exit(code)


def plural(count: int, word: str, many: str = "") -> str:
    """`1 file`, `2 files`; `many` for a word whose plural is not WORD + s."""
    return f"{count} {word if count == 1 else many or word + 's'}"


# --------------------------------------------------------------------------- spec files


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


def spec_files_or_exit(paths: Iterable[Path]) -> list[Path]:
    """`expand_paths` for a command that goes on to run its specs: a folder without
    specs is printed and ends the command (exit 2)."""
    files, problems = expand_paths(paths)
    for problem in problems:
        print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    return files


def exit_code(diagnostics: Sequence[Diagnostic]) -> int:
    """2 when a file could not be read, 1 for any other error, else 0."""
    if any(d.code in IO_CODES for d in diagnostics):
        return EXIT_USAGE
    return EXIT_ERRORS if has_errors(diagnostics) else EXIT_OK


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


# --------------------------------------------------------------------------- task files


def read_task_file(path: Path, command: str) -> list[dict[str, Any]]:
    """The tasks of a tasks JSONL, or exit 2 naming the file and line of the first bad row."""
    from compiler.synth import export

    try:
        return export.read_tasks(path)
    except export.TaskFileError as exc:
        fail(command, str(exc))


# --------------------------------------------------------------------------- writing


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


def write_or_exit(path: Path, text: str | bytes, command: str) -> None:
    """`write_atomically`, or exit 2 naming the file that could not be written."""
    try:
        write_atomically(path, text)
    except OSError as exc:
        fail(command, f"cannot write {path}: {exc.strerror or exc}")


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- compile and model output


def llm_log(message: str) -> None:
    """Progress of requests to the model, on stderr (never the key: see compiler/llm/provider.py)."""
    click.echo(f"envc: {message}", err=True)


def print_heal_summary(stats: object) -> None:
    """Pass rates per attempt and stage, when the run asked a model for anything."""
    from compiler.llm.stats import HealStats

    if isinstance(stats, HealStats) and stats:
        for line in stats.render():
            click.echo(line, err=True)


def print_compile_table(rows: Iterable[pipeline.SpecResult]) -> None:
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


# --------------------------------------------------------------------------- running a model or a policy


def model_config(
    root: Path, command: str, model: str | None, base_url: str | None, temperature: float | None, max_tokens: int | None
) -> LLMConfig:
    """`[tool.envc.llm]` with the command line's overrides; exit 2 on a bad table or no model."""
    from compiler.llm.config import load_config

    config, problems = load_config(root)
    for problem in problems:
        print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    overrides: dict[str, Any] = {"model": model, "base_url": base_url, "temperature": temperature}
    overrides["max_tokens"] = max_tokens
    config = dataclasses.replace(config, **{key: value for key, value in overrides.items() if value is not None})
    if not config.model:
        fail(command, "name the model with --model (or `model` in [tool.envc.llm])")
    return config


def executor_for(
    envs: dict[str, sample_types.SampleEnv], ray_address: str | None, concurrency: int, weights: Any
) -> scale.Executor:
    """Where runs happen: threads here, or Ray tasks on a cluster (`--ray`)."""
    from compiler.run import scale

    if ray_address is None:
        return scale.LocalExecutor(envs, concurrency)
    return scale.RayExecutor(envs, ray_address, concurrency, weights)


class ProgressLine:
    """`envc NAME: done/total ...` on stderr, at most every `every` seconds and at the end."""

    def __init__(self, command: str, total: int, noun: str, every: float = 2.0) -> None:
        import time

        self.clock = time.monotonic
        self.command, self.total, self.noun, self.every = command, total, noun, every
        self.last = self.clock()

    def __call__(self, done: int) -> None:
        now = self.clock()
        if done == self.total or now - self.last >= self.every:
            self.last = now
            click.echo(f"envc {self.command}: {done}/{self.total} {self.noun} done", err=True)
