"""`envc rollout`: k rollouts per task of a model behind an OpenAI-compatible endpoint,
written as trajectories JSONL (compiler/run/rollout.py; docs/serving.md#envc-rollout).

Exit codes as cli.py's: 0 written, 2 usage or I/O errors (bad tasks file, specs the tasks
do not fit, no model, Ray unreachable, or an endpoint that failed every rollout), 3 an
internal error. Partial infrastructure failures still exit 0: each such row says
`scorable: false` and the summary counts them.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compiler import cli, project

if TYPE_CHECKING:
    from compiler.llm.config import LLMConfig
    from compiler.run import scale
    from compiler.synth import sample


def model_options(command: Any) -> Any:
    """--model, --base-url, --temperature, --max-tokens: the endpoint and sampling
    settings over `[tool.envc.llm]`."""
    for option in reversed(
        [
            click.option("--model", default=None, help="The model to ask (default: [tool.envc.llm] model)."),
            click.option(
                "--base-url",
                default=None,
                help="The OpenAI-compatible endpoint (default: [tool.envc.llm] base_url, else $OPENAI_BASE_URL).",
            ),
            click.option("--temperature", type=click.FloatRange(min=0), default=None, help="Sampling temperature."),
            click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Longest reply per request."),
        ]
    ):
        command = option(command)
    return command


def scale_options(command: Any) -> Any:
    """--concurrency and --ray."""
    command = click.option(
        "--ray",
        "ray_address",
        default=None,
        metavar="ADDRESS|auto",
        help="Run on a Ray cluster (`auto`: the one this machine belongs to); same results as a local run.",
    )(command)
    return click.option(
        "--concurrency",
        type=click.IntRange(min=1),
        default=None,
        help="Rollouts in flight at once (per Ray task with --ray; default: [tool.envc.llm] concurrency).",
    )(command)


def model_config(
    root: Path, command: str, model: str | None, base_url: str | None, temperature: float | None, max_tokens: int | None
) -> LLMConfig:
    """`[tool.envc.llm]` with the command line's overrides; exit 2 on a bad table or no model."""
    from compiler.llm.config import load_config

    config, problems = load_config(root)
    for problem in problems:
        cli.print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(cli.EXIT_USAGE)
    overrides: dict[str, Any] = {"model": model, "base_url": base_url, "temperature": temperature}
    overrides["max_tokens"] = max_tokens
    config = dataclasses.replace(config, **{key: value for key, value in overrides.items() if value is not None})
    if not config.model:
        raise click.UsageError(f"envc {command}: name the model with --model (or `model` in [tool.envc.llm])")
    return config


def executor_for(
    envs: dict[str, sample.SampleEnv], ray_address: str | None, concurrency: int, weights: Any
) -> scale.Executor:
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


def specs_for_tasks(rows: list[dict[str, Any]], root: Path) -> list[Path]:
    """The project's specs (specs/*.envspec) that define an environment the tasks use."""
    from compiler.analyse import analyse_file

    wanted = {name for row in rows for name in row["envs"]}
    found = []
    for spec in project.default_specs(root):
        env = analyse_file(spec).environment
        if env is not None and env.header.name in wanted:
            found.append(spec)
    return found


def default_output(source: Path) -> Path:
    folder, stem = (source, "") if source.is_dir() else (source.parent, source.stem + ".")
    return folder / f"{stem}trajectories.jsonl"


@click.command("rollout")
@click.argument("tasks_path", metavar="TASKS", type=click.Path(path_type=Path))
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@model_options
@click.option("-k", "runs", type=click.IntRange(min=1), default=1, show_default=True, help="Rollouts per task.")
@click.option(
    "--seed", type=int, default=None, help="Send each sample a seed derived from this (reproducible sampling)."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Trajectories JSONL to write (default: TASKS/trajectories.jsonl, or beside a tasks file).",
)
@click.option("--no-timings", is_flag=True, help="Leave out `timings`: the file is then the same on every run.")
@scale_options
def rollout_command(
    tasks_path: Path,
    specs: tuple[Path, ...],
    model: str | None,
    base_url: str | None,
    temperature: float | None,
    max_tokens: int | None,
    runs: int,
    seed: int | None,
    output: Path | None,
    no_timings: bool,
    concurrency: int | None,
    ray_address: str | None,
) -> None:
    """Run a model k times on each task of TASKS (DIR/tasks.jsonl or a tasks JSONL) through an
    OpenAI-compatible endpoint; write one trajectory per rollout. SPECs: the tasks' environments
    (default: the project's specs/ that define them)."""
    from compiler.run import calibrate, rollout, scale
    from compiler.synth import export

    root = project.find_project_root(Path.cwd())
    config = model_config(root, "rollout", model, base_url, temperature, max_tokens)
    path = export.tasks_file(tasks_path)
    rows = cli._read_task_file(path, "rollout")
    target = output if output is not None else default_output(tasks_path)
    files, problems = cli.expand_paths(specs) if specs else (specs_for_tasks(rows, root), [])
    for problem in problems:
        cli.print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(cli.EXIT_USAGE)
    with tempfile.TemporaryDirectory(prefix="envc-rollout-") as scratch:
        prepared = cli.prepared_or_exit(files, root, Path(scratch))
        jobs = concurrency or config.concurrency
        executor = executor_for(prepared.envs, ray_address, jobs, prepared.weights)
        progress = ProgressLine("rollout", len(rows) * runs, "rollouts")
        try:
            calibrate.check_tasks(rows, prepared.envs, str(path))
            trajectories = rollout.rollout(rows, prepared.envs, config, runs, seed, executor, progress)
        except calibrate.CalibrationError as exc:
            raise click.UsageError(str(exc)) from exc
        except scale.ScaleError as exc:
            click.echo(f"envc rollout: {exc}", err=True)
            sys.exit(cli.EXIT_USAGE)
    try:
        cli.write_atomically(target, rollout.to_jsonl(trajectories, timings=not no_timings))
    except OSError as exc:
        click.echo(f"envc rollout: cannot write {target}: {exc.strerror or exc}", err=True)
        sys.exit(cli.EXIT_USAGE)
    report(rollout.summary(trajectories), trajectories, target)


def report(data: dict[str, Any], trajectories: list[dict[str, Any]], target: Path) -> None:
    """The summary line; exit 2 when no rollout could be scored (the endpoint is likely down)."""
    ended = ", ".join(f"{name} {count}" for name, count in data["ended"].items())
    mean = "n/a" if data["mean_reward"] is None else f"{data['mean_reward']:.3f}"
    click.echo(
        f"wrote {data['rollouts']} trajectories to {target}: passed {data['passed']}, mean reward {mean} "
        f"over {data['scorable']} scorable; ended: {ended}",
        err=True,
    )
    if data["unscorable"]:
        first = next(row for row in trajectories if not row["scorable"])
        click.echo(
            f"envc rollout: {data['unscorable']} rollouts failed for infrastructure reasons (scorable: false), "
            f"e.g. {first['task_id']} sample {first['sample']}: {first['ended']}: {first['reason']}",
            err=True,
        )
    if trajectories and not data["scorable"]:
        sys.exit(cli.EXIT_USAGE)


# --------------------------------------------------------------------------- envc calibrate


def calibrate_run(
    folder: Path,
    specs: tuple[Path, ...],
    policy: str,
    runs: int,
    seed: int,
    model: str | None = None,
    base_url: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    concurrency: int | None = None,
    ray_address: str | None = None,
) -> None:
    """What `envc calibrate` does once click has parsed its options: a baseline policy or
    the model (`--policy model`), on threads or Ray. Writes DIR/calibrated.jsonl,
    review.jsonl and calibration.json; exits 2 when a run could not be scored (those
    tasks are in neither file, and calibration.json lists them), or on bad input."""
    from compiler.run import calibrate, rollout, scale

    files, problems = cli.expand_paths(specs)
    for problem in problems:
        cli.print_diagnostic(problem, None, err=True)
    if problems:
        sys.exit(cli.EXIT_USAGE)
    root = project.find_project_root(Path.cwd())
    chosen: calibrate.Policy
    if policy == "model":
        config = model_config(root, "calibrate", model, base_url, temperature, max_tokens)
        chosen, jobs = rollout.ModelPolicy(config), concurrency or config.concurrency
    elif any(value is not None for value in (model, base_url, temperature, max_tokens)):
        raise click.UsageError("--model, --base-url, --temperature and --max-tokens go with --policy model")
    else:
        chosen, jobs = calibrate.POLICIES[policy], concurrency or 1
    path = folder / "tasks.jsonl"
    rows = cli._read_task_file(path, "calibrate")
    with tempfile.TemporaryDirectory(prefix="envc-calibrate-") as scratch:
        prepared = cli.prepared_or_exit(files, root, Path(scratch))
        executor = executor_for(prepared.envs, ray_address, jobs, prepared.weights)
        progress = ProgressLine("calibrate", len(rows) * runs, "runs")
        try:
            calibrate.check_tasks(rows, prepared.envs, str(path))
            result = calibrate.calibrate(rows, prepared.envs, chosen, runs, seed, executor, progress)
        except calibrate.CalibrationError as exc:
            raise click.UsageError(str(exc)) from exc
        except scale.ScaleError as exc:
            click.echo(f"envc calibrate: {exc}", err=True)
            sys.exit(cli.EXIT_USAGE)
    cli._write_calibration(folder, result, "calibrate")
    if result.unscorable:
        first = next(iter(result.failures.items()))
        click.echo(
            f"envc calibrate: {len(result.unscorable)} tasks had runs that failed for infrastructure reasons and "
            f"are not split (calibration.json: unscorable_ids), e.g. {first[0]}: {first[1][0]}",
            err=True,
        )
        sys.exit(cli.EXIT_USAGE)
