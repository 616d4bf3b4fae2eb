"""How much of a problem the library's tasks pose: the figures of issue 22.

    python benchmarks/task_quality.py [--single 400] [--across 100] [--samples 5]

Over the shipped domain specs (specs/ (every spec but the prototypes); not the prototypes): `--single` tasks of
one environment (seed 31) and `--across` tasks spanning 2-3 environments (seed 32), made
and audited as `envc tasks` makes them. For each set it prints the quality section of
report.json (compiler/synth/task_quality.py): the share of requests that spell out calls,
carry placeholder values or name a tool in words, the share that needs a lookup, tasks per
family, hops, distractors, distinct wordings and the `literal` baseline's mean reward;
then a few requests drawn at random, to read.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compiler.analyse import analyse_file  # noqa: E402
from compiler.build.packages import package_in  # noqa: E402
from compiler.project import default_specs  # noqa: E402
from compiler.synth import task_build, tasks  # noqa: E402
from compiler.synth.sample import SampleEnv, load_env  # noqa: E402

TARGETS = {"spelled_calls": ("<=", 0.0), "placeholders": ("<=", 0.0), "tool_named": ("<=", 0.15)}
LOOKUP_TARGET = {"single": 0.6, "across": 0.8}


def library() -> dict[str, SampleEnv]:
    envs = {}
    for spec in default_specs(ROOT):
        env = analyse_file(spec).environment
        assert env is not None, spec
        envs[env.header.name] = load_env(env, package_in(ROOT / "generated", env.header.name))
    return envs


def run(envs: dict[str, SampleEnv], name: str, count: int, seed: int, span: tuple[int, int], samples: int) -> bool:
    options = task_build.TaskOptions(tasks=count, seed=seed, envs=span)
    started, cpu = time.perf_counter(), time.process_time()
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False)
    data = report.to_json()
    quality = data["quality"]
    print(
        f"\n{name}: {len(kept)} of {count} tasks kept from {data['candidates']} candidates "
        f"in {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU (seed {seed})"
    )
    met = len(kept) == count
    for key, (_, limit) in TARGETS.items():
        ok = quality[key] <= limit
        met &= ok
        print(f"  {key:<28} {quality[key]:6.1%}   (target <= {limit:.0%}) {'met' if ok else 'MISSED'}")
    ok = quality["needs_lookup"] >= LOOKUP_TARGET[name]
    met &= ok
    print(
        f"  {'needs_lookup':<28} {quality['needs_lookup']:6.1%}   (target >= {LOOKUP_TARGET[name]:.0%}) {'met' if ok else 'MISSED'}"
    )
    for key in ("hops_per_lookup_task", "distractors_per_reference", "distinct_prompts", "distinct_intents"):
        print(f"  {key:<28} {quality[key]}")
    print(f"  {'literal baseline mean':<28} {quality['literal_baseline_mean_reward']}")
    print("  tasks per family: " + ", ".join(f"{f} {n}" for f, n in quality["tasks_per_family"].items()))
    print("  rejected: " + ", ".join(f"{a} {n}" for a, n in data["rejected"].items()))
    for task in random.Random(seed).sample(kept, min(samples, len(kept))):
        print(f"  - [{', '.join(task['envs'])}] {task['prompt']}")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=400, help="tasks of one environment (0: none)")
    parser.add_argument("--across", type=int, default=100, help="tasks across 2-3 environments (0: none)")
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args(argv)
    envs = library()
    met = True
    if args.single > 0:  # 0 leaves a set out
        met &= run(envs, "single", args.single, 31, (1, 1), args.samples)
    if args.across > 0:
        met &= run(envs, "across", args.across, 32, (2, 3), args.samples)
    print("\nall targets met" if met else "\nsome targets missed")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
