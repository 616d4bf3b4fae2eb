"""Fork cost against state size (issue 12): journaled forks (one shared state dict per
family, each member keeping the records of its calls) against another build, by default
the field-level copy-on-write forks that came before.

    cp -r generated/it_operations/ticketing /tmp/fork_before/      # before a change: keep the old build
    python benchmarks/fork_cost.py --baseline /tmp/fork_before/ticketing   # 10^3 .. 10^6 tickets
    python benchmarks/fork_cost.py --baseline /tmp/fork_before/ticketing --sizes 1000 10000 --reps 9
    python benchmarks/fork_cost.py                   # this build alone

For each size, on the generated ticketing package, each build side by side in one run:

  fork()                        -- what a GRPO group pays per member up front
  fork() + get_ticket           -- a read on the fork
  fork() + create_ticket        -- the fork's first write: the copy-on-write build copies
                                   the fields it may change (tickets, audit_log) here
  fork() + close_ticket         -- a first write that changes an existing ticket
  GRPO group of 8               -- fork 8 members, then 3 rounds in which each member in
                                   turn creates a ticket, renames one and reads it back
                                   (72 calls, 48 writes, a switch of member at every call)
  deep copy (the first fork)    -- `copy_state(state)`, what `fork()` did before either

Each figure is the min of --reps runs after a warm-up (on a shared machine other load only
adds time), garbage collector on (as in a trainer), a full collection before each run; the
time includes freeing what the run made. An operation that takes under a millisecond is
timed many times in a row per run (a collection right before each would time cold
caches). The ratios are this build's time over the baseline's.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from call_overhead import load_baseline  # noqa: E402
from reset import ROOT, load_generated, machine, ticket  # noqa: E402

SIZES = (1_000, 10_000, 100_000, 1_000_000)
GROUP = 8
ROUNDS = 3
QUICK_SECONDS = 1e-3
"""An operation faster than this is timed in a row, about 50 ms per run."""


def large_env(E: Any, tickets: int) -> Any:
    """A signed-in session holding `tickets` tickets (built directly: validation is not
    what is measured here)."""
    env = E.Environment()
    env.restore(
        {
            **E.copy_state(E.DEFAULT_STATE),
            "current_user": "alice",
            "next_ticket_id": tickets + 1,
            "tickets": {i: ticket(i) for i in range(1, tickets + 1)},
        }
    )
    return env


def grpo_group(env: Any) -> list[Any]:
    """Fork a group and run it interleaved, as a trainer stepping its rollouts does."""
    members = [env.fork() for _ in range(GROUP)]
    for step in range(ROUNDS):
        for n, member in enumerate(members):
            created = member.call("create_ticket", {"title": f"Member {n}, round {step}"})
            assert "error" not in created, created
            member.call("update_ticket", {"ticket_id": 1 + n, "title": f"Renamed by {n}"})
            member.call("get_ticket", {"ticket_id": created["id"]})
    return members


def seconds_per_run(action: Callable[[], Any], reps: int) -> float:
    """The min over `reps` runs after a warm-up; a quick action runs many times per run."""
    start = time.perf_counter()
    action()
    first = time.perf_counter() - start
    number = 1 if first >= QUICK_SECONDS else max(1, min(1000, int(0.05 / max(first, 1e-7))))
    spans = []
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        for _ in range(number):
            action()
        spans.append((time.perf_counter() - start) / number)
    return min(spans)


def operations(E: Any, env: Any) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("fork()", lambda: env.fork()),
        ("fork() + get_ticket", lambda: env.fork().call("get_ticket", {"ticket_id": 1})),
        ("fork() + create_ticket", lambda: env.fork().call("create_ticket", {"title": "New"})),
        ("fork() + close_ticket", lambda: env.fork().call("close_ticket", {"ticket_id": 2})),
        (f"GRPO group of {GROUP}", lambda: grpo_group(env)),
        ("deep copy (the first fork)", lambda: E.copy_state(env.view())),
    ]


def measure(E: Any, sizes: list[int], reps: int) -> dict[str, list[float]]:
    table: dict[str, list[float]] = {}
    for size in sizes:
        env = large_env(E, size)
        for label, action in operations(E, env):
            table.setdefault(label, []).append(seconds_per_run(action, reps if size < 10**6 else min(reps, 3)))
        del env
        gc.collect()
    return table


def show(title: str, table: dict[str, list[float]], sizes: list[int]) -> None:
    print(f"{title:<34}" + "".join(f"{size:>14,}" for size in sizes))
    for label, row in table.items():
        print(f"{label:<34}" + "".join(f"{s * 1e3:14.4f}" for s in row))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT / "generated" / "it_operations" / "ticketing")
    parser.add_argument("--baseline", type=Path, help="another build of ticketing, e.g. before a change")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="numbers of tickets")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    after = load_generated(args.package.resolve())

    print(f"machine: {machine()}")
    print(f"package: {args.package}; baseline: {args.baseline}")
    print(f"min of {args.reps} runs (3 at 10^6 tickets), milliseconds per operation\n")
    builds = [("this build", after)]
    if args.baseline is not None:
        builds.insert(0, ("baseline", load_baseline(args.baseline.resolve())))
    tables = {name: measure(E, args.sizes, args.reps) for name, E in builds}
    for name, table in tables.items():
        show(name, table, args.sizes)
        print()
    if args.baseline is not None:
        print("ratio, this build / baseline:")
        before, now = tables["baseline"], tables["this build"]
        for label, row in now.items():
            cells = "".join(f"{s / b:13.5f}x" for s, b in zip(row, before[label], strict=True))
            print(f"{label:<34}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
