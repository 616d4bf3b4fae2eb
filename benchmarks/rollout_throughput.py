"""Rollouts per second: `compiler.run.rollout` against the scripted loopback endpoint of
tests/test_rollout.py (it replays each task's gold calls), locally on 1 and N threads
and on a local Ray instance, side by side as ratios to the 1-thread run.

    python benchmarks/rollout_throughput.py                      # 20 tasks x k=4, delays 0 and 0.05 s
    python benchmarks/rollout_throughput.py --tasks 10 --k 2 --delay 0.02 --concurrency 16
    python benchmarks/rollout_throughput.py --no-ray

`--delay` is how long the endpoint waits before each reply, standing in for a model's
latency: with none, the figures are envc's own overhead per rollout (client, JSON,
environment, scorer); with some, they show how far concurrency hides the model's time.
The Ray figure includes only the runs, not starting Ray (started once, before timing);
it starts its own instance with --ray-cpus CPUs. Every configuration is timed --reps
times after one warm-up; the median and the min are printed. Results of every run are
compared with the first (timings left out): they must be the same.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted endpoint lives with the tests that use it

from test_rollout import ScriptedEndpoint, config_for  # noqa: E402

from compiler.analyse import analyse_file  # noqa: E402
from compiler.build.packages import package_in  # noqa: E402
from compiler.run import rollout, scale  # noqa: E402
from compiler.synth import task_build, tasks  # noqa: E402
from compiler.synth.sample import SampleEnv, load_env  # noqa: E402


def load(count: int) -> tuple[dict[str, SampleEnv], list[dict[str, Any]]]:
    env = analyse_file(ROOT / "specs" / "ticketing.envspec").environment
    assert env is not None
    envs = {env.header.name: load_env(env, package_in(ROOT / "generated", env.header.name))}
    options = task_build.TaskOptions(tasks=count, seed=1)
    rows, _ = tasks.synthesise(tasks.sampler_for(envs, options), options)
    return envs, rows


def timed(run: Callable[[], list[dict[str, Any]]], reps: int) -> tuple[list[float], str]:
    reference = rollout.to_jsonl(run(), timings=False)  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        rows = run()
        times.append(time.perf_counter() - start)
        if rollout.to_jsonl(rows, timings=False) != reference:
            raise SystemExit("a run gave other trajectories than the warm-up")
    return times, reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--delay", type=float, action="append", help="seconds per reply (repeatable; default 0 and 0.05)"
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ray-cpus", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    delays = args.delay or [0.0, 0.05]
    print(f"{platform.machine()} {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    envs, rows = load(args.tasks)
    total = len(rows) * args.k
    ray = None
    if not args.no_ray:
        import ray as ray_module

        ray = ray_module
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, log_to_driver=False)
    try:
        print(f"{len(rows)} tasks x k={args.k} = {total} rollouts of gold through the scripted endpoint")
        print(f"{'delay s':>8} {'executor':<24} {'median s':>9} {'min s':>8} {'rollouts/s':>11} {'ratio':>6}")
        for delay in delays:
            with ScriptedEndpoint(rows, delay=delay) as endpoint:
                config = config_for(endpoint, "gold")
                executors: list[tuple[str, scale.Executor]] = [
                    ("local, 1 thread", scale.LocalExecutor(envs, 1)),
                    (f"local, {args.concurrency} threads", scale.LocalExecutor(envs, args.concurrency)),
                ]
                if ray is not None:
                    executors.append(
                        (
                            f"Ray {args.ray_cpus} CPUs x {args.concurrency}",
                            scale.RayExecutor(envs, "auto", args.concurrency),
                        )
                    )
                base = 0.0
                references = set()
                for name, executor in executors:

                    def run(executor: scale.Executor = executor, config: Any = config) -> list[dict[str, Any]]:
                        return rollout.rollout(rows, envs, config, args.k, executor=executor)

                    times, reference = timed(run, args.reps)
                    references.add(reference)
                    median = statistics.median(times)
                    base = base or median
                    print(
                        f"{delay:>8.3f} {name:<24} {median:>9.3f} {min(times):>8.3f} {total / median:>11.1f} {base / median:>5.2f}x"
                    )
                if len(references) != 1:
                    raise SystemExit("the executors gave different trajectories")
        print("every executor gave the same trajectories (timings left out)")
    finally:
        if ray is not None:
            ray.shutdown()


if __name__ == "__main__":
    main()
