"""`envc sample`, `envc tasks`, `envc export` and `envc calibrate`: chains, the tasks
made of them, trainer datasets of tasks, and which tasks a policy passes sometimes
(docs/tasks.md; compiler/synth/ and compiler/run/calibrate.py). Exit codes:
compiler/cli/common.py."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from compiler import project
from compiler.cli.common import (
    EXIT_ERRORS,
    EXIT_USAGE,
    ProgressLine,
    executor_for,
    fail,
    llm_log,
    model_config,
    plural,
    prepared_or_exit,
    read_task_file,
    spec_files_or_exit,
    write_or_exit,
)

if TYPE_CHECKING:
    from compiler.run import calibrate as calibrate_types
    from compiler.synth import sample as sample_types

CALIBRATION_POLICIES = ("random", "gold", "nothing", "flaky-gold")
"""The names of compiler.run.calibrate.POLICIES (not imported here: it loads the sampler)."""


# --------------------------------------------------------------------------- envc sample


def parse_env_count(text: str) -> tuple[int, int]:
    """`--envs K` or `--envs A-B`."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not match:
        raise click.BadParameter(f"expected K or A-B, got {text!r}", param_hint="--envs")
    low = int(match.group(1))
    return low, int(match.group(2) or low)


@click.command("sample")
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
    files = spec_files_or_exit(specs)
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
            fail("sample", str(exc))
        rows, summary = _sample_with_progress(sampler, prepared.worker_specs)
    write_or_exit(output, sample.rows_to_jsonl(rows), "sample")
    _print_sample_summary(summary.to_json(), output)
    if summary.kept < chains:
        fail(
            "sample", f"kept {summary.kept} of {plural(chains, 'chain')} before the attempt budget ran out", EXIT_ERRORS
        )


def _edge_options(root: Path, offline: bool) -> Any:
    """How `--llm` commands get the tool edges a model proposed (compiler/synth/model_edges.py)."""
    from compiler.synth import model_edges as edges

    return edges.EdgeOptions(root=root, offline=offline, log=llm_log)


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


def _synthesise_with_progress(sampler: Any, options: Any, chains: Any, requests: Any) -> tuple[Any, Any]:
    """Audited tasks, with a progress bar of tasks kept on a terminal; silence when piped."""
    from compiler.synth import tasks

    if not sys.stderr.isatty():
        return tasks.synthesise(sampler, options, chains, requests=requests)
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        bar = progress.add_task("auditing tasks", total=options.tasks)
        return tasks.synthesise(
            sampler, options, chains, progress=lambda kept, _: progress.update(bar, completed=kept), requests=requests
        )


def _print_sample_summary(data: dict[str, Any], output: Path) -> None:
    rejected = ", ".join(f"{reason} {count}" for reason, count in data["rejected"].items()) or "none"
    lengths = ", ".join(f"{length}: {count}" for length, count in data["lengths"].items())
    click.echo(f"kept {plural(data['kept'], 'chain')} in {output}; rejected: {rejected}", err=True)
    coverage = f"tool coverage {data['tool_coverage']:.0%} (write tools {data['write_tool_coverage']:.0%})"
    click.echo(f"{coverage}; calls per chain: {lengths}", err=True)
    if data["tools_never_used"]:
        click.echo(f"never used: {', '.join(data['tools_never_used'])}", err=True)


# --------------------------------------------------------------------------- envc tasks


@click.command("tasks")
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
    type=click.Choice(CALIBRATION_POLICIES),
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
    files = spec_files_or_exit(specs)
    chains = _read_chains(chains_file) if chains_file is not None else None
    root = project.find_project_root(Path.cwd())
    with tempfile.TemporaryDirectory(prefix="envc-tasks-") as scratch:
        prepared = prepared_or_exit(files, root, Path(scratch))
        requests = _task_request_writer(root, offline) if use_llm else None
        try:
            sampler = tasks.sampler_for(prepared.envs, options, prepared.weights)
            sampled = None
            if chains is None:
                chains, sampled = _sample_with_progress(sampler, prepared.worker_specs)
            kept, report = _synthesise_with_progress(sampler, options, chains, requests)
            if sampled is not None:
                report.chains_rejected = dict(sampled.rejected)
        except tasks.ChainError as exc:
            fail("tasks", f"{chains_file}:{exc.number}: {exc.problem}")
        except sample.SampleError as exc:
            fail("tasks", str(exc))
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
    except OSError as exc:
        fail("tasks", f"cannot write {output}: {exc.strerror or exc}")
    write_or_exit(output / "tasks.jsonl", tasks.tasks_to_jsonl(kept), "tasks")
    write_or_exit(output / "report.json", json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n", "tasks")
    _print_task_summary(report.to_json(), output)
    if calibration is not None:
        _write_calibration(output, calibration, "tasks")
    if report.kept < count:
        fail("tasks", f"kept {report.kept} of {plural(count, 'task')}; the candidates ran out", EXIT_ERRORS)


def _task_request_writer(root: Path, offline: bool) -> Any:
    """The model that writes task requests for `envc tasks --llm` (compiler/synth/model_requests.py)."""
    from compiler.synth import model_requests as llm_tasks

    try:
        return llm_tasks.writer_for(root, offline, log=llm_log)
    except llm_tasks.LLMTaskError as exc:
        click.echo(str(exc), err=True)
        sys.exit(EXIT_USAGE)


def _read_chains(path: Path) -> list[dict[str, object]]:
    """Rows of a chains JSONL, one per line (so chain N is line N); a line that is not
    a JSON object ends the command (exit 2) naming `file:line`."""
    try:
        lines = path.read_bytes().decode("utf-8").splitlines()
    except OSError as exc:
        fail("tasks", f"cannot read {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail("tasks", f"{path}: byte {exc.start} is not valid UTF-8")
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError as exc:
            fail("tasks", f"{path}:{number}: not a JSON line: {exc}")
        if not isinstance(row, dict):
            fail("tasks", f"{path}:{number}: a chain is a JSON object")
        rows.append(row)
    return rows


def _print_task_summary(data: dict[str, Any], output: Path) -> None:
    rejected = ", ".join(f"{audit} {count}" for audit, count in data["rejected"].items()) or "none"
    click.echo(
        f"kept {data['kept']} of {plural(data['candidates'], 'candidate task')} in {output / 'tasks.jsonl'}; "
        f"rejected: {rejected}",
        err=True,
    )
    rates = ", ".join(f"{audit} {rate:.0%}" for audit, rate in data["audit_pass_rates"].items())
    click.echo(f"audit pass rates: {rates}; baseline mean reward {data['baseline_mean_reward']}", err=True)
    leading = sorted(data["rejected"].items(), key=lambda item: (-item[1], item[0]))[:3]
    for reason, count in leading:
        example = data["rejection_examples"].get(reason, "")
        click.echo(f"  {reason} ({count}): {example}", err=True)
    unsourced = sorted(reason for reason in data["chains_rejected"] if reason.startswith("no value source"))
    if unsourced:
        click.echo(f"left out of tasks for want of a value source: {'; '.join(unsourced)}", err=True)
    for name, count in data.get("families", {}).items():
        if not count["kept"]:
            click.echo(f"family {name} gave no task ({count['tried']} tried): {_family_trouble(count)}", err=True)
    quality = data["quality"]
    if quality:
        click.echo(
            f"needing a lookup {quality['needs_lookup']:.0%}, {quality['distinct_prompts']} distinct requests, "
            f"literal baseline {quality['literal_baseline_mean_reward']}; families: "
            + ", ".join(f"{family} {n}" for family, n in quality["tasks_per_family"].items()),
            err=True,
        )


def _family_trouble(count: dict[str, Any]) -> str:
    """Why a declared family gave no task: its note, or its leading discard or rejection."""
    reasons = [*(("discarded", r, n) for r, n in count["discarded"].items())]
    reasons += [("rejected by", r, n) for r, n in count["rejected"].items()]
    if count.get("note") or not reasons:
        return str(count.get("note") or "not drawn")
    what, reason, n = max(reasons, key=lambda item: item[2])
    return f"{what} {reason} ({n})"


# --------------------------------------------------------------------------- envc export and envc calibrate
# (docs/tasks.md: "Exports" and "Calibration"; compiler/synth/export.py and compiler/run/calibrate.py)


@click.command("export")
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
    rows = read_task_file(path, "export")
    if not rows:
        fail("export", f"{path} holds no tasks; nothing to export")
    parquet = fmt == "verl" or target.suffix == ".parquet"
    try:
        data = export.export(rows, fmt, parquet)
    except export.MissingDependency as exc:
        fail("export", str(exc))
    write_or_exit(target, data, "export")
    kind = f"{fmt} {'parquet' if parquet else 'JSONL'}"
    click.echo(f"exported {plural(len(rows), 'task')} from {path} to {target} ({kind}, {len(data)} bytes)", err=True)


def _calibrate_tasks(
    rows: list[dict[str, Any]], envs: dict[str, sample_types.SampleEnv], policy: str, runs: int, seed: int, where: str
) -> calibrate_types.Calibration:
    """`calibrate` with the named policy; tasks that do not fit the specs exit 2."""
    from compiler.run import calibrate

    try:
        calibrate.check_tasks(rows, envs, where)
        return calibrate.calibrate(rows, envs, calibrate.POLICIES[policy], runs, seed)
    except calibrate.CalibrationError as exc:
        fail("tasks", str(exc))


def _write_calibration(folder: Path, result: calibrate_types.Calibration, command: str) -> None:
    """DIR/calibrated.jsonl (kept), DIR/review.jsonl (0 of k) and DIR/calibration.json,
    each in one step, and a summary line."""
    from compiler.synth import tasks

    write_or_exit(folder / "calibrated.jsonl", tasks.tasks_to_jsonl(result.kept), command)
    write_or_exit(folder / "review.jsonl", tasks.tasks_to_jsonl(result.review), command)
    write_or_exit(folder / "calibration.json", json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n", command)
    data = result.to_json()
    click.echo(
        f"calibrated {plural(data['tasks'], 'task')} with the {data['policy']} policy, k={data['k']}: "
        f"kept {data['kept']} in {folder / 'calibrated.jsonl'}, too easy {data['too_easy']}, "
        f"review {data['review']} in {folder / 'review.jsonl'}; pass rate {data['pass_rate']:.0%}",
        err=True,
    )


@click.command("calibrate")
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
    calibrate_run(folder, specs, policy, runs, seed, model, base_url, temperature, max_tokens, concurrency, ray_address)


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

    files = spec_files_or_exit(specs)
    path = folder / "tasks.jsonl"
    rows = read_task_file(path, "calibrate")
    root = project.find_project_root(Path.cwd())
    chosen: calibrate.Policy
    if policy == "model":
        config = model_config(root, "calibrate", model, base_url, temperature, max_tokens)
        chosen, jobs = rollout.ModelPolicy(config), concurrency or config.concurrency
    elif any(value is not None for value in (model, base_url, temperature, max_tokens)):
        raise click.UsageError("--model, --base-url, --temperature and --max-tokens go with --policy model")
    else:
        chosen, jobs = calibrate.POLICIES[policy], concurrency or 1
    with tempfile.TemporaryDirectory(prefix="envc-calibrate-") as scratch:
        prepared = prepared_or_exit(files, root, Path(scratch))
        executor = executor_for(prepared.envs, ray_address, jobs, prepared.weights)
        progress = ProgressLine("calibrate", len(rows) * runs, "runs")
        try:
            calibrate.check_tasks(rows, prepared.envs, str(path))
            result = calibrate.calibrate(rows, prepared.envs, chosen, runs, seed, executor, progress)
        except calibrate.CalibrationError as exc:
            fail("calibrate", str(exc))
        except scale.ScaleError as exc:
            fail("calibrate", str(exc))
    _write_calibration(folder, result, "calibrate")
    if result.unscorable:
        first = next(iter(result.failures.items()))
        fail(
            "calibrate",
            f"{plural(len(result.unscorable), 'task')} had runs that failed for infrastructure reasons and "
            f"are not split (calibration.json: unscorable_ids), e.g. {first[0]}: {first[1][0]}",
        )
