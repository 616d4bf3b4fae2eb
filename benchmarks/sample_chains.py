"""Executable chains per second over the whole shipped library, one worker and two.

    python benchmarks/sample_chains.py [--chains 10000] [--seed 0]

Samples single-environment chains over every shipped spec at once (each chain picks
one environment), through the committed generated packages, and prints wall time,
kept chains per second and the rejection counts, for 1 and 2 worker processes side by
side (the rows must be the same bytes; the script checks it). Setup (analysis, tool
graphs, imports) is timed apart. The issue's target: 10,000 kept chains in under 60 s
on 2 cores.
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
from compiler.synth.sample import SampleOptions, Sampler, load_env, rows_to_jsonl, sample  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--envs", default="1", help="K or A-B environments per chain")
    args = parser.parse_args(argv)
    low, _, high = args.envs.partition("-")
    span = (int(low), int(high or low))

    started = time.perf_counter()
    envs, specs = {}, []
    for spec in default_specs(ROOT):
        env = analyse_file(spec).environment
        assert env is not None, spec
        folder = package_in(ROOT / "generated", env.header.name)
        envs[env.header.name] = load_env(env, folder)
        specs.append((env.model_dump_json(), str(folder)))
    setup = time.perf_counter() - started
    print(f"setup: {len(envs)} environments analysed, graphed and imported in {setup:.2f} s")
    print(f"{'workers':>7}  {'kept':>6}  {'wall s':>7}  {'chains/s':>9}  rejected")
    outputs = []
    for workers in (1, 2):
        options = SampleOptions(chains=args.chains, seed=args.seed, envs=span, workers=workers)
        started = time.perf_counter()
        rows, summary = sample(Sampler(envs, options), worker_specs=specs)
        wall = time.perf_counter() - started
        rejected = ", ".join(f"{reason} {count}" for reason, count in sorted(summary.rejected.items()))
        print(f"{workers:>7}  {summary.kept:>6}  {wall:>7.2f}  {summary.kept / wall:>9.0f}  {rejected}")
        outputs.append(rows_to_jsonl(rows))
    print("1 and 2 workers give the same bytes:", outputs[0] == outputs[1])
    return 0 if outputs[0] == outputs[1] else 1


if __name__ == "__main__":
    sys.exit(main())
