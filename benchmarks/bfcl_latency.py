"""Per-call latency: the generated ports of BFCL classes against BFCL's own classes.

    python benchmarks/bfcl_latency.py                     # multi_turn_base, 50 loops, 7 repetitions
    python benchmarks/bfcl_latency.py --category all --loops 50 --reps 11
    python benchmarks/bfcl_latency.py --generated /tmp/out   # ports built somewhere else

The calls are BFCL's multi-turn ground truth, as `bfcl_replay.py` replays it, keeping only
the calls to ported classes (`bfcl_replay.PORTED`); a class's state depends only on the
calls made to it, so the other classes' calls are left out. Per task and ported class,
one "script": its initial config and its calls in order.

Measured, in one process and one run, side by side, like with like:

- BFCL: `getattr(instance, tool)(*args, **kwargs)` on the BFCL instance, plus BFCL's
  result formatting (`bfcl_replay.format_result`, or the "Error during execution" text);
- generated: `env.call(tool, kwargs)` on the generated `Environment`, plus the same
  formatting.

Method: the call strings are parsed, positional arguments named (from `TOOL_SPECS`) and
every argument deep-copied before the clock starts; instances are built (BFCL:
`_load_scenario` of a deep copy of the config; generated: `Environment(config)`) before
it too, one per script and loop. The clock is read around every call; the garbage
collector is off while timing (as in timeit). One repetition runs every script `--loops`
times per implementation, the two interleaved (and taking turns to go first) so that
drift in the machine's load hits both alike. Per class, a repetition gives the mean microseconds per call (less the cost
of reading the clock); reported are the median and the min over the repetitions and the
ratios generated / BFCL of both. Per tool, the median of every timed call.

Before timing, both run every script once and their result strings are compared; calls
whose results differ are counted and named (the work differs there), not fatal: fidelity
is `bfcl_replay.py`'s job.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bfcl_replay as replay  # noqa: E402

BFCL = "BFCL"
GENERATED = "generated"


@dataclass(frozen=True)
class Step:
    """One pre-parsed call: BFCL's arguments, and the generated env's keyword arguments."""

    call: replay.Call
    env_kwargs: Mapping[str, Any]


@dataclass(frozen=True)
class Script:
    """The calls one task makes to one ported class, with the class's initial config."""

    task_id: str
    class_name: str
    long_context: bool
    config: Mapping[str, Any]
    steps: tuple[Step, ...]


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}"
    )


def scripts_of(task: replay.Task, ports: Mapping[str, Any]) -> list[Script]:
    """Split a task's ground truth by ported class; ownership is BFCL's (a later class wins)."""
    owners = replay.pure_world(task).owners
    steps: dict[str, list[Step]] = {name: [] for name in task.ported}
    for text in (text for turn in task.turns for text in turn):
        call = replay.parse_call(text)
        owner = owners.get(call.name)
        if owner in steps:
            spec = ports[owner].TOOL_SPECS.get(call.name)
            params = spec.params if spec is not None else ()
            env_kwargs = replay.keyword_arguments(params, call.name, call.args, dict(call.kwargs))
            steps[owner].append(Step(call, env_kwargs))
    return [
        Script(task.id, name, task.long_context, task.initial_config.get(name, {}), tuple(calls))
        for name, calls in steps.items()
        if calls
    ]


# --------------------------------------------------------------------------- runners

Runner = Callable[[Script, Any, list[tuple[Any, ...]], list[int]], list[str]]


def new_bfcl(script: Script) -> Any:
    return replay.new_bfcl_instance(script.class_name, {script.class_name: script.config}, script.long_context)


def new_generated(ports: Mapping[str, Any]) -> Callable[[Script], Any]:
    def make(script: Script) -> Any:
        return ports[script.class_name].Environment(copy.deepcopy(script.config))

    return make


def bfcl_arguments(script: Script) -> list[tuple[Any, ...]]:
    return [(step.call.name, *copy.deepcopy((step.call.args, dict(step.call.kwargs)))) for step in script.steps]


def generated_arguments(script: Script) -> list[tuple[Any, ...]]:
    return [(step.call.name, copy.deepcopy(dict(step.env_kwargs))) for step in script.steps]


def run_bfcl(script: Script, instance: Any, arguments: list[tuple[Any, ...]], spans: list[int]) -> list[str]:
    """Every call of the script, timed: the method call plus BFCL's formatting."""
    clock, fmt, fail = time.perf_counter_ns, replay.format_result, replay.error_result
    results = []
    for tool, args, kwargs in arguments:
        start = clock()
        try:
            result = fmt(getattr(instance, tool)(*args, **kwargs))
        except Exception as error:
            result = fail(error)
        spans.append(clock() - start)
        results.append(result)
    return results


def run_generated(script: Script, env: Any, arguments: list[tuple[Any, ...]], spans: list[int]) -> list[str]:
    """Every call of the script, timed: env.call plus the same formatting."""
    clock, fmt, fail = time.perf_counter_ns, replay.format_result, replay.error_result
    results = []
    for tool, kwargs in arguments:
        start = clock()
        try:
            result = fmt(env.call(tool, kwargs))
        except Exception as error:
            result = fail(error)
        spans.append(clock() - start)
        results.append(result)
    return results


@dataclass(frozen=True)
class Variant:
    name: str
    make: Callable[[Script], Any]
    arguments: Callable[[Script], list[tuple[Any, ...]]]
    run: Runner


def variants(ports: Mapping[str, Any]) -> list[Variant]:
    return [
        Variant(BFCL, new_bfcl, bfcl_arguments, run_bfcl),
        Variant(GENERATED, new_generated(ports), generated_arguments, run_generated),
    ]


def with_gc_off(action: Callable[[], Any]) -> Any:
    gc.collect()
    gc.disable()  # as timeit does: a collection would land on whichever call is running
    try:
        return action()
    finally:
        gc.enable()


def one_pass(variant: Variant, scripts: list[Script], loops: int) -> tuple[list[list[int]], list[list[str]]]:
    """`loops` runs of every script on fresh instances: per script, the nanoseconds of every
    call (loop after loop), and the results of the first loop."""
    spans: list[list[int]] = [[] for _ in scripts]
    results: list[list[str]] = []
    for loop in range(loops):
        prepared = []
        for script in scripts:
            replay.reset_shared_defaults()  # see there: post_tweet's shared default lists
            prepared.append((variant.make(script), variant.arguments(script)))

        def timed(prepared: list[tuple[Any, list[tuple[Any, ...]]]] = prepared) -> list[list[str]]:
            return [variant.run(s, inst, args, spans[i]) for i, (s, (inst, args)) in enumerate(zip(scripts, prepared))]

        outcome = with_gc_off(timed)
        if loop == 0:
            results = outcome
    return spans, results


def clock_overhead_ns() -> float:
    clock = time.perf_counter_ns
    spans = []
    for _ in range(100_000):
        start = clock()
        spans.append(clock() - start)
    return statistics.median(spans)


def differing_results(scripts: list[Script], bfcl: list[list[str]], generated: list[list[str]]) -> list[str]:
    notes = []
    for script, ours, theirs in zip(scripts, generated, bfcl):
        for step, a, b in zip(script.steps, ours, theirs):
            if a != b:
                notes.append(f"{script.task_id} {step.call.text}")
    return notes


# --------------------------------------------------------------------------- report


def per_class_means(scripts: list[Script], spans: list[list[int]], clock_cost: float) -> dict[str, float]:
    """Microseconds per call, per class, over one repetition's spans."""
    totals: dict[str, list[float]] = {}
    for script, script_spans in zip(scripts, spans):
        totals.setdefault(script.class_name, []).extend(span - clock_cost for span in script_spans)
    totals["all"] = [span for name in list(totals) for span in totals[name]]
    return {name: statistics.fmean(values) / 1000 for name, values in totals.items()}


def per_tool_spans(scripts: list[Script], spans: list[list[int]], loops: int) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for script, script_spans in zip(scripts, spans):
        for index, step in enumerate(script.steps):
            samples = script_spans[index :: len(script.steps)]
            assert len(samples) == loops
            found.setdefault(f"{script.class_name}.{step.call.name}", []).extend(samples)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--category", choices=(*replay.CATEGORIES, "all"), default="base", help="which BFCL tasks")
    parser.add_argument("--loops", type=int, default=50, help="runs of every script per repetition")
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions; median and min are reported")
    parser.add_argument(
        "--generated", type=Path, default=replay.GENERATED, help="folder holding the generated packages"
    )
    args = parser.parse_args(argv)

    tasks = [task for category in replay.categories(args.category) for task in replay.load_tasks(category)]
    try:
        ports = replay.load_ports(sorted({name for task in tasks for name in task.ported}), args.generated.resolve())
    except replay.MissingPort as error:
        print(f"bfcl_latency: {error}", file=sys.stderr)
        return 2
    scripts = [script for task in tasks for script in scripts_of(task, ports)]
    runs = variants(ports)

    # Warm-up, and the check that both do the same work.
    warm = {variant.name: one_pass(variant, scripts, 1)[1] for variant in runs}
    differing = differing_results(scripts, warm[BFCL], warm[GENERATED])

    by_class: dict[str, dict[str, list[float]]] = {variant.name: {} for variant in runs}
    by_tool: dict[str, dict[str, list[int]]] = {variant.name: {} for variant in runs}
    clock_cost = with_gc_off(clock_overhead_ns)
    for rep in range(args.reps):
        for variant in runs if rep % 2 == 0 else runs[::-1]:  # alternate who goes first
            spans, _ = one_pass(variant, scripts, args.loops)
            for name, mean in per_class_means(scripts, spans, clock_cost).items():
                by_class[variant.name].setdefault(name, []).append(mean)
            for tool, samples in per_tool_spans(scripts, spans, args.loops).items():
                by_tool[variant.name].setdefault(tool, []).extend(samples)

    calls = {name: sum(len(s.steps) for s in scripts if s.class_name == name) for name in replay.PORTED}
    calls["all"] = sum(calls.values())
    print(f"machine: {machine()}")
    print(
        f"ports: {', '.join(f'{name} -> {package}' for name, package in replay.PORTED.items())} (in {args.generated})"
    )
    print(
        f"multi_turn_{args.category}: {calls['all']} calls to ported classes in {len(scripts)} scripts; "
        f"{args.loops} loops x {args.reps} repetitions; microseconds per call (clock reads deducted)\n"
    )
    print(
        f"{'class':<12}{'calls':>7}{'BFCL median':>13}{'min':>8}{'generated median':>18}{'min':>8}{'ratio':>8}{'(mins)':>8}"
    )
    for name in (*[n for n in replay.PORTED if calls[n]], "all"):
        bfcl, gen = by_class[BFCL][name], by_class[GENERATED][name]
        print(
            f"{name:<12}{calls[name]:>7}{statistics.median(bfcl):13.2f}{min(bfcl):8.2f}"
            f"{statistics.median(gen):18.2f}{min(gen):8.2f}"
            f"{statistics.median(gen) / statistics.median(bfcl):7.2f}x{min(gen) / min(bfcl):7.2f}x"
        )
    print("(ratio: generated / BFCL, of the medians and of the mins over the repetitions)")

    print(f"\nper tool: median of every timed call ({args.loops} loops x {args.reps} repetitions), microseconds")
    print(f"  {'tool':<36}{'calls':>6}{'BFCL':>9}{'generated':>11}{'ratio':>8}")
    for tool in sorted(by_tool[BFCL]):
        bfcl_us = (statistics.median(by_tool[BFCL][tool]) - clock_cost) / 1000
        gen_us = (statistics.median(by_tool[GENERATED][tool]) - clock_cost) / 1000
        count = len(by_tool[BFCL][tool]) // (args.loops * args.reps)
        print(f"  {tool:<36}{count:>6}{bfcl_us:9.2f}{gen_us:11.2f}{gen_us / bfcl_us:7.2f}x")
    if differing:
        print(f"\n{len(differing)} calls return a different result string on the port (see bfcl_replay.py):")
        for note in differing[:10]:
            print(f"  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
