"""`envc rollout`: k rollouts per task of a model behind an OpenAI-compatible endpoint,
written as trajectories JSONL (compiler/run/rollout.py; docs/serving.md#envc-rollout).

Exit codes as compiler/cli/common.py's: 0 written, 2 usage or input errors (bad tasks file, specs the tasks
do not fit, no model, Ray unreachable, or an endpoint that failed every rollout), 3 an
internal error. Partial infrastructure failures still exit 0: each such row says
`scorable: false` and the summary counts them.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from compiler import project
from compiler.cli.common import (
    EXIT_USAGE,
    ProgressLine,
    executor_for,
    fail,
    model_config,
    plural,
    prepared_or_exit,
    read_task_file,
    spec_files_or_exit,
    write_or_exit,
)
from compiler.lower.agent_limits import CALL_TIMEOUT_S


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
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0),
    default=CALL_TIMEOUT_S,
    show_default=True,
    help="Seconds a tool call may run; past it the environment stops it, the domain error `timeout` (0: no limit).",
)
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
    call_timeout: float,
    concurrency: int | None,
    ray_address: str | None,
) -> None:
    """Run a model k times on each task of TASKS (DIR/tasks.jsonl or a tasks JSONL) through an
    OpenAI-compatible endpoint; write one trajectory per rollout. SPECs: the tasks' environments
    (default: the project's specs/ that define them)."""
    from compiler.run import calibrate, rollout, scale
    from compiler.synth import export

    root = project.find_project_root(Path.cwd())
    path = export.tasks_file(tasks_path)
    rows = read_task_file(path, "rollout")
    files = spec_files_or_exit(specs) if specs else specs_for_tasks(rows, root)
    config = model_config(root, "rollout", model, base_url, temperature, max_tokens)
    target = output if output is not None else default_output(tasks_path)
    with tempfile.TemporaryDirectory(prefix="envc-rollout-") as scratch:
        prepared = prepared_or_exit(files, root, Path(scratch))
        jobs = concurrency or config.concurrency
        executor = executor_for(prepared.envs, ray_address, jobs, prepared.weights)
        progress = ProgressLine("rollout", len(rows) * runs, "rollouts")
        log = None if ray_address else rollout.TrajectoryLog(target, timings=not no_timings)
        try:
            calibrate.check_tasks(rows, prepared.envs, str(path))
            limit = call_timeout or None  # 0: no limit
            trajectories = rollout.rollout(rows, prepared.envs, config, runs, seed, executor, progress, log, limit)
        except (calibrate.CalibrationError, scale.ScaleError) as exc:
            fail("rollout", str(exc))
        except OSError as exc:  # the log file: the rows written so far stay
            fail("rollout", f"cannot write {target}: {exc.strerror or exc}")
        finally:
            if log is not None:
                log.close()
    write_or_exit(target, rollout.to_jsonl(trajectories, timings=not no_timings), "rollout")
    report(rollout.summary(trajectories), trajectories, target)


def report(data: dict[str, Any], trajectories: list[dict[str, Any]], target: Path) -> None:
    """The summary line; exit 2 when no rollout could be scored (the endpoint is likely down)."""
    ended = ", ".join(f"{name} {count}" for name, count in data["ended"].items())
    mean = "n/a" if data["mean_reward"] is None else f"{data['mean_reward']:.3f}"
    click.echo(
        f"wrote {plural(data['rollouts'], 'trajectory', 'trajectories')} to {target}: passed {data['passed']}, mean reward {mean} "
        f"over {data['scorable']} scorable; ended: {ended}",
        err=True,
    )
    if data["unscorable"]:
        first = next(row for row in trajectories if not row["scorable"])
        click.echo(
            f"envc rollout: {plural(data['unscorable'], 'rollout')} failed for infrastructure reasons (scorable: false), "
            f"e.g. {first['task_id']} sample {first['sample']}: {first['ended']}: {first['reason']}",
            err=True,
        )
    unreachable = [
        row for row in trajectories if row["ended"] == "endpoint_error" and "refused the connection" in row["reason"]
    ]
    if unreachable and not data["scorable"]:
        click.echo(f"envc rollout: error: the endpoint cannot be reached: {unreachable[0]['reason']}", err=True)
    if trajectories and not data["scorable"]:
        sys.exit(EXIT_USAGE)
