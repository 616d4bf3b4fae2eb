"""Runtime scaling (issue 15): reset, fork and call cost of the generated ticketing
environment for states of 10^3 to 10^6 tickets, with the growth order of each.

    python benchmarks/runtime_scaling.py                      # 10^3, 10^4, 10^5, 10^6 tickets
    python benchmarks/runtime_scaling.py --sizes 1000 10000 100000
    python benchmarks/runtime_scaling.py --package /tmp/out/ticketing

Measured per size:

- reset: `Environment(mapping)` from a JSON-shaped mapping (string ticket ids; every
  field validated), and `restore(snapshot)` (a deep copy, the reset of a trainer that
  keeps the start state);
- fork: `fork()`, and a fork followed by its first write (journaled like any call: the
  fork shares the parent's containers, docs/generated-package.md "Forks");
- calls through `env.call`: `get_ticket`, `create_ticket`, `update_ticket`, a refused
  `get_ticket` (its error lists the first 20 ids), `list_tickets(status, limit=20)`,
  `queue_by_category`.

The growth order is the slope of log(time) against log(size) from the smallest to the
largest size: about 0 is constant, about 1 linear; "superlinear" above 1.15. Single
operations are timed as the min of a few runs (garbage collector on, a full collection
before each run; 2 runs at 10^6; one under a millisecond is run many times in a row per
run); calls as the median of 300 calls, on a fork of the large session taken every 100
calls (so the calls include what a fork adds: the family's lock and the journal record).
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fork_cost import SIZES, large_env, seconds_per_run  # noqa: E402
from reset import ROOT, load_generated, machine, ticket  # noqa: E402

CALLS = 300
BATCH = 100


def mapping_of(tickets: int) -> dict[str, Any]:
    """Scenario overrides as json.load gives them: ticket ids are strings."""
    return {
        "current_user": "alice",
        "next_ticket_id": tickets + 1,
        "tickets": {str(i): ticket(i) for i in range(1, tickets + 1)},
    }


def call_mix(tickets: int) -> list[tuple[str, str, dict[str, Any]]]:
    middle = tickets // 2
    return [
        ("get_ticket", "get_ticket", {"ticket_id": middle}),
        ("create_ticket", "create_ticket", {"title": "Printer jams"}),
        ("update_ticket", "update_ticket", {"ticket_id": middle, "priority": 5}),
        ("get_ticket, refused", "get_ticket", {"ticket_id": tickets + 100}),
        ("list_tickets(open, 20)", "list_tickets", {"status": "open", "limit": 20}),
        ("queue_by_category", "queue_by_category", {}),
    ]


def median_call(base: Any, tool: str, args: dict[str, Any]) -> float:
    """Median seconds of CALLS calls on forks of `base`, a new fork every BATCH calls."""
    clock = time.perf_counter
    spans = []
    env = base.fork()
    for index in range(CALLS):
        if index % BATCH == 0:
            env = base.fork()
        start = clock()
        env.call(tool, args)
        spans.append(clock() - start)
    return statistics.median(spans)


def reset_from_mapping(E: Any, size: int, reps: int) -> float:
    mapping = mapping_of(size)
    return seconds_per_run(lambda: E.Environment(mapping), reps)


def measure(E: Any, size: int, reps: int) -> dict[str, float]:
    """Seconds per operation at one size."""
    rows: dict[str, float] = {}
    few = reps if size < 10**6 else 2
    rows["reset: Environment(mapping)"] = reset_from_mapping(E, size, few)
    env = large_env(E, size)
    tickets = env.view()["tickets"]
    rows[REFERENCE] = seconds_per_run(lambda: sum(t["priority"] for t in tickets.values()), reps)
    saved = env.snapshot()
    rows["reset: restore(snapshot)"] = seconds_per_run(lambda: env.restore(saved), few)
    rows["fork()"] = seconds_per_run(lambda: env.fork(), reps)
    first_write: Callable[[], Any] = lambda: env.fork().call("update_ticket", {"ticket_id": 1, "priority": 5})  # noqa: E731
    rows["fork() + first write"] = seconds_per_run(first_write, few)
    gc.collect()
    for label, tool, args in call_mix(size):
        rows[f"call {label}"] = median_call(env, tool, args)
    return rows


REFERENCE = "reference: a loop over tickets"
"""`sum(t["priority"] for t in tickets.values())`: linear by construction, so its slope
shows what memory alone does to a linear pass as the state outgrows the caches."""


def slope_of(sizes: list[int], seconds: list[float]) -> float:
    return math.log(seconds[-1] / seconds[0]) / math.log(sizes[-1] / sizes[0])


def growth(slope: float, reference: float) -> str:
    """Constant, linear (no steeper than the reference loop, with a margin), or worse."""
    if slope < 0.2:
        return "constant"
    if slope <= max(1.0, reference) + 0.1:
        return "linear"
    return "SUPERLINEAR"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT / "generated" / "it_operations" / "ticketing")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="numbers of tickets")
    parser.add_argument("--reps", type=int, default=5, help="runs of each single operation (2 at 10^6)")
    args = parser.parse_args(argv)
    E = load_generated(args.package.resolve())
    sizes = sorted(args.sizes)

    table: dict[str, list[float]] = {}
    for size in sizes:
        for label, time_taken in measure(E, size, args.reps).items():
            table.setdefault(label, []).append(time_taken)
        gc.collect()

    print(f"machine: {machine()}")
    print(f"package: {args.package}; microseconds\n")
    header = "".join(f"{size:>13,}" for size in sizes)
    print(f"{'operation':<32}{header}{'slope':>8}  growth")
    reference = slope_of(sizes, table[REFERENCE]) if len(sizes) > 1 else 1.0
    for label, row in table.items():
        cells = "".join(f"{s * 1e6:13.1f}" for s in row)
        if len(sizes) > 1:
            slope = slope_of(sizes, row)
            print(f"{label:<32}{cells}{slope:8.2f}  {growth(slope, reference)}")
        else:
            print(f"{label:<32}{cells}")
    print(
        "\nslope: of log(time) against log(tickets), smallest to largest size; constant below 0.2,"
        f" linear up to max(1, the reference loop's {reference:.2f}) + 0.1"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
