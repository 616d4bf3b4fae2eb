"""Values per second of each value source of task synthesis (compiler/synth/values.py).

    python benchmarks/value_sources.py [--values 5000] [--repeats 5] [--seed 0]

For every format of `compiler/library/sources.py`, with its default arguments, times
`draw_value` making `--values` values from one seeded rng, `--repeats` times, and prints
the median and best values per second; then a 20-value pool, ten distinct values of each
format (`draw_distinct`, a task's distractors) and the cost of creating a Faker instance,
which `values.py` therefore caches per thread and reseeds per draw.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from faker import Faker  # noqa: E402

from compiler.library.sources import FORMATS  # noqa: E402
from compiler.synth.values import draw_distinct, draw_value  # noqa: E402

CLOCK = "2025-01-13T10:20:00"
POOL = {"titles": [f"Ticket title {i}" for i in range(20)]}


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}"
    )


def rates(run: Callable[[], object], count: int, repeats: int) -> tuple[float, float]:
    """Median and best calls per second of `run`, called `count` times per repeat."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(count):
            run()
        seconds.append(time.perf_counter() - started)
    return count / statistics.median(seconds), count / min(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(machine())
    rng = random.Random(args.seed)
    print(f"{'source':<16}  {'values/s median':>15}  {'best':>9}  {'10 distinct/s':>13}")
    for name in [*FORMATS, "titles"]:
        median, best = rates(lambda name=name: draw_value(name, [], POOL, rng, CLOCK), args.values, args.repeats)
        distinct, _ = rates(
            lambda name=name: draw_distinct(name, [], POOL, rng, CLOCK, 10), args.values // 20, args.repeats
        )
        label = name if name in FORMATS else f"{name} (pool)"
        print(f"{label:<16}  {median:>15,.0f}  {best:>9,.0f}  {distinct:>13,.0f}")
    creations, _ = rates(lambda: Faker("en_US"), 50, args.repeats)
    print(f"Faker('en_US') created: {1000 / creations:.2f} ms each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
