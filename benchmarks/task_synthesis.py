"""Audited tasks per minute over the whole shipped library, and the audit pass rates.

    python benchmarks/task_synthesis.py [--tasks 10000] [--seed 0]

Samples chains over every shipped spec at once (each task in one environment drawn per
chain), builds a task from each and runs every audit on it, through the committed
generated packages; prints wall time, audited tasks per minute, the share of candidates
each audit passed (audits run in order, so a candidate rejected by one is not counted
for the later ones), the rejections and the baseline policies' mean reward. Setup
(analysis, graphs, imports) is timed apart. The issue's target: 10,000 audited tasks in
under 10 minutes on 2 cores. The machine may be shared: the process's CPU time is printed
beside the wall time (their ratio is the share of a core the run got), and so are the
kinds of kept tasks (file-workspace tasks, tasks that start from seeded changes).
"""

from __future__ import annotations

import argparse
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
from compiler.synth.sample import load_env  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    envs = {}
    for spec in default_specs(ROOT):
        env = analyse_file(spec).environment
        assert env is not None, spec
        envs[env.header.name] = load_env(env, package_in(ROOT / "generated", env.header.name))
    print(f"setup: {len(envs)} environments in {time.perf_counter() - started:.2f} s")
    options = task_build.TaskOptions(tasks=args.tasks, seed=args.seed)
    started, cpu_started = time.perf_counter(), time.process_time()
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    data = report.to_json()
    print(
        f"{len(kept)} audited tasks kept of {data['candidates']} candidates in {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"({len(kept) / wall * 60:,.0f} per wall minute, {len(kept) / cpu * 60:,.0f} per CPU minute; "
        f"CPU / wall {cpu / wall:.2f}; keep rate {data['keep_rate']:.1%})"
    )
    workspace = sum(1 for t in kept if "workspace" in t)
    changed = sum(1 for t in kept if any(s["changes"] for s in t["initial_state"].values()))
    print(f"kept: {workspace} file-workspace tasks, {changed} starting from seeded changes")
    print("audit pass rates: " + ", ".join(f"{a} {r:.1%}" for a, r in data["audit_pass_rates"].items()))
    print("rejected: " + ", ".join(f"{a} {n}" for a, n in data["rejected"].items()))
    print("tasks per env: " + ", ".join(f"{e} {n}" for e, n in data["tasks_per_env"].items()))
    print(f"baseline policies' mean reward: {data['baseline_mean_reward']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
