"""Reset cost: copying, loading and forking a ticketing state with 10,000 tickets.

    python benchmarks/reset.py                  # 10,000 tickets, 7 repetitions
    python benchmarks/reset.py --tickets 50000 --reps 5
    python benchmarks/reset.py --audit 10000    # also put 10,000 entries in the audit log
    python benchmarks/reset.py --package /tmp/out/ticketing
    python benchmarks/reset.py --baseline /tmp/before/ticketing   # + (c) and (e) of an older build

An RL trainer resets an environment once per episode and often forks it (tree search,
best-of-n); this is what that costs when the state is large. Measured on the generated
ticketing package (generated/it_operations/ticketing by default):

  (a) `copy_state(state)`   -- the copier generated from the types
  (b) `copy.deepcopy(state)` -- the generic baseline everything is compared with
  (c) `env._load_scenario(mapping)` -- a JSON-shaped mapping (string ticket ids, as
      json.load gives them) validated record by record, then copied in
  (d) `snapshot()` and `restore(snapshot)`
  (e) `fork()` (copy on write: shares the state's fields), and a fork followed by its
      first write, `create_ticket`, which copies the fields that tool may change
  plus `state()` (the detached JSON snapshot a harness saves), for reference, and the
  cost of a few tool calls on the large state, generated against hand-written
  (benchmarks/handwritten_ticketing.py), to show which calls grow with the state.

Each figure is the median and the min of --reps timed runs, after one untimed warm-up;
the garbage collector runs as it would in a trainer (it is not switched off), and a full
collection precedes every run.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from handwritten_ticketing import TicketingAPI  # noqa: E402

STATUSES = ("open", "in_progress", "resolved", "closed")
CATEGORIES = ("hardware", "software", "network", "access", "other")


def load_generated(package: Path) -> Any:
    sys.path.insert(0, str(package.parent))
    return importlib.import_module(f"{package.name}.environment")


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}"
    )


def ticket(i: int) -> dict[str, Any]:
    minute = i % 60
    return {
        "id": i,
        "title": f"Ticket number {i}: something is broken",
        "description": "Steps to reproduce: open the app, click the button, watch it fail." if i % 3 else "",
        "category": CATEGORIES[i % len(CATEGORIES)],
        "priority": 1 + i % 5,
        "status": STATUSES[i % len(STATUSES)],
        "created_by": ("alice", "bob", "carol")[i % 3],
        "assignee": "bob" if i % 4 == 1 else None,
        "resolution": "Fixed on site" if STATUSES[i % 4] in ("resolved", "closed") else None,
        "created_at": f"2025-01-01T08:{minute:02d}:00",
        "updated_at": f"2025-01-01T09:{minute:02d}:00",
    }


def audit_entry(i: int) -> dict[str, Any]:
    return {
        "seq": i,
        "at": "2025-01-01T09:00:00",
        "tool": "create_ticket",
        "action": "create",
        "entity": f"ticket {i}",
        "detail": "",
    }


def build_mapping(tickets: int, audit: int) -> dict[str, Any]:
    """Scenario overrides as they would arrive from a JSON file: ticket ids are strings."""
    mapping: dict[str, Any] = {
        "current_user": "alice",
        "next_ticket_id": tickets + 1,
        "tickets": {str(i): ticket(i) for i in range(1, tickets + 1)},
    }
    if audit:
        mapping["audit_log"] = [audit_entry(i) for i in range(1, audit + 1)]
    return json.loads(json.dumps(mapping))


def timed(action: Callable[[], Any], reps: int) -> list[float]:
    action()  # warm-up
    seconds = []
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return seconds


def calls(tickets: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("get_ticket", {"ticket_id": tickets // 2}),
        ("get_ticket", {"ticket_id": tickets + 100}),  # refused: not_found
        ("create_ticket", {"title": "Printer jams"}),
        ("list_tickets", {"status": "open", "limit": 20}),
    ]


def hand_restore(hand: Any) -> Callable[[Any], None]:
    def restore(saved: Any) -> None:
        hand.state = copy.deepcopy(saved)

    return restore


def per_call(action: Callable[[], Any], save: Callable[[], Any], restore: Callable[[Any], None]) -> float:
    """Median microseconds of 1,000 calls; the state is put back (untimed) every 100
    calls, so a call that adds a ticket keeps meeting a state of the same size."""
    saved = save()
    clock = time.perf_counter_ns
    spans = []
    for index in range(1000):
        if index % 100 == 0:
            restore(saved)
        start = clock()
        action()
        spans.append(clock() - start)
    restore(saved)
    return statistics.median(spans) / 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT / "generated" / "it_operations" / "ticketing")
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--audit", type=int, default=0, help="audit log entries in the state (default none)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="another build (e.g. before a change): its (c) and (e) too")
    args = parser.parse_args(argv)

    E = load_generated(args.package.resolve())
    mapping = build_mapping(args.tickets, args.audit)
    env = E.Environment()
    env._load_scenario(mapping)
    state = env.view()
    assert len(state["tickets"]) == args.tickets and all(type(k) is int for k in state["tickets"])
    assert E.copy_state(state) == state == copy.deepcopy(state)
    snap = env.snapshot()
    size = len(json.dumps(E.to_json(state)))

    rows: list[tuple[str, list[float]]] = [
        ("(a) copy_state(state)", timed(lambda: E.copy_state(state), args.reps)),
        ("(b) copy.deepcopy(state)", timed(lambda: copy.deepcopy(state), args.reps)),
        ("(c) env._load_scenario(mapping)", timed(lambda: E.Environment()._load_scenario(mapping), args.reps)),
        ("(d) snapshot()", timed(env.snapshot, args.reps)),
        ("(d) restore(snapshot)", timed(lambda: env.restore(snap), args.reps)),
        ("(e) fork()", timed(env.fork, args.reps)),
        ("(e) fork() + create_ticket", timed(lambda: env.fork().call("create_ticket", {"title": "New"}), args.reps)),
        ("    state() (detached JSON)", timed(env.state, args.reps)),
    ]
    if args.baseline is not None:
        from call_overhead import load_baseline

        B = load_baseline(args.baseline.resolve())
        old = B.Environment()
        old._load_scenario(mapping)
        rows += [
            (
                "(c) baseline: _load_scenario(mapping)",
                timed(lambda: B.Environment()._load_scenario(mapping), args.reps),
            ),
            ("(e) baseline: fork()", timed(old.fork, args.reps)),
        ]
    deepcopy = statistics.median(rows[1][1])

    print(f"machine: {machine()}")
    print(f"package: {args.package}")
    print(
        f"state: {args.tickets:,} tickets, {args.audit:,} audit entries, {size / 1e6:.1f} MB as JSON; "
        f"{args.reps} repetitions after a warm-up\n"
    )
    print(f"{'operation':<40}{'median ms':>11}{'min ms':>9}{'us/ticket':>11}{'vs deepcopy':>13}")
    for label, seconds in rows:
        median = statistics.median(seconds)
        print(
            f"{label:<40}{median * 1e3:11.3f}{min(seconds) * 1e3:9.3f}"
            f"{median / args.tickets * 1e6:11.3f}{median / deepcopy:12.3f}x"
        )
    print("\n(c) includes building a fresh Environment (one copy_state of the empty S0).")

    print(f"\ntool calls on the {args.tickets:,}-ticket state (median of 1,000 timed calls, microseconds):")
    hand = TicketingAPI(E.copy_json(state))
    print(f"  {'call':<40}{'generated env.call':>20}{'handwritten call':>18}{'result, JSON bytes':>20}")
    for tool, call_args in calls(args.tickets):
        ours = per_call(lambda t=tool, a=call_args: env.call(t, a), env.snapshot, env.restore)
        theirs = per_call(
            lambda t=tool, a=call_args: hand.call(t, a), lambda: copy.deepcopy(hand.state), hand_restore(hand)
        )
        label = f"{tool}({', '.join(f'{k}={v!r}' for k, v in call_args.items())})"
        size = len(json.dumps(env.fork().call(tool, call_args)))
        print(f"  {label:<40}{ours:20.2f}{theirs:18.2f}{size:20,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
