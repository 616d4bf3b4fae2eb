"""Pass rates of healing: per attempt and stage, how many fills (or drafts) reached the
stage and how many passed it.

Kept apart from `heal` so that `envc compile` can collect them without importing the
front end: an up-to-date run loads none of the stages.
"""

from __future__ import annotations

import threading
from typing import Any

STAGES = ("reply", "parse", "structure", "types", "effects", "lower", "static", "dynamic")
"""Every check a fill or draft goes through, in order; a failure is classed by the first
it fails (docs/llm.md has what each checks)."""


class HealStats:
    """Pass counts per attempt and stage, over every fill (or draft) of a run."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, int, str], bool] = {}
        self._outcomes: dict[str, tuple[bool, int]] = {}
        self._guard = threading.Lock()

    def record(self, subject: str, attempt: int, stage: str, ok: bool) -> None:
        """`subject` (a hole or draft) reached `stage` at `attempt` and passed it or not;
        a stage checked again for the same attempt keeps the last verdict."""
        with self._guard:
            self._results[(subject, attempt, stage)] = ok

    def outcome(self, subject: str, accepted: bool, attempts: int) -> None:
        with self._guard:
            self._outcomes[subject] = (accepted, attempts)

    def merge(self, other: HealStats) -> None:
        with self._guard:
            self._results.update(other._results)
            self._outcomes.update(other._outcomes)

    def __bool__(self) -> bool:
        return bool(self._results or self._outcomes)

    def rates(self) -> dict[int, dict[str, tuple[int, int]]]:
        """{attempt: {stage: (passed, reached)}}, stages in pipeline order."""
        table: dict[int, dict[str, list[int]]] = {}
        for (_, attempt, stage), ok in sorted(self._results.items()):
            cell = table.setdefault(attempt, {}).setdefault(stage, [0, 0])
            cell[0] += ok
            cell[1] += 1
        order = {stage: i for i, stage in enumerate(STAGES)}
        return {
            attempt: {s: (c[0], c[1]) for s, c in sorted(stages.items(), key=lambda kv: order.get(kv[0], 99))}
            for attempt, stages in sorted(table.items())
        }

    def to_json(self) -> dict[str, Any]:
        accepted = [attempts for ok, attempts in self._outcomes.values() if ok]
        return {
            "subjects": len(self._outcomes),
            "accepted": len(accepted),
            "accepted_at_attempt": {str(n): accepted.count(n) for n in sorted(set(accepted))},
            "pass_rates": {
                str(attempt): {stage: {"passed": p, "reached": r} for stage, (p, r) in stages.items()}
                for attempt, stages in self.rates().items()
            },
        }

    def render(self, what: str = "fills") -> list[str]:
        """A summary line and a table: one row per attempt, `passed/reached` per stage."""
        data = self.to_json()
        at = ", ".join(f"{count} at attempt {n}" for n, count in data["accepted_at_attempt"].items())
        lines = [f"healing: {data['accepted']} of {data['subjects']} {what} accepted" + (f" ({at})" if at else "")]
        rates = self.rates()
        stages = [s for s in STAGES if any(s in row for row in rates.values())]
        if not stages:
            return lines
        rows = [["attempt", *stages]]
        for attempt, row in rates.items():
            rows.append([str(attempt), *(f"{row[s][0]}/{row[s][1]}" if s in row else "-" for s in stages)])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
        return lines
