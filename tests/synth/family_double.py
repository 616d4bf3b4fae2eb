"""A hand-written double of the task-family contract a generated package exposes in
`environment.py` (`FAMILIES`, `Family`, `FamilyFailed`), over the real `ticketing` and
`claw_workspace` packages, with the `ir.FamilyDecl`s a spec's `family` blocks lower to,
built by hand: what compiler/synth/families.py runs, until the language side lands."""

from __future__ import annotations

import dataclasses
import random
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler import ir
from compiler.synth.sample import SampleEnv, is_failure


class FamilyFailed(Exception):
    """A plan `require` failed, or a solution call returned a domain error."""


@dataclass(frozen=True)
class Family:
    plan: Callable[[Any, int], dict[str, Any]]
    solve: Callable[[Any, Mapping[str, Any]], list[tuple[str, dict[str, Any], Any]]]


# --------------------------------------------------------------------------- IR by hand


def state(name: str) -> ir.Expr:
    return ir.Name(id=name, ref="state")


def value(name: str) -> ir.Expr:
    return ir.Name(id=name, ref="local")


def const(v: Any) -> ir.Expr:
    return ir.Const(value=v)


def enum(name: str, member: str) -> ir.Expr:
    return ir.Attr(obj=ir.Name(id=name, ref="enum"), name=member)


def attr(obj: ir.Expr, name: str) -> ir.Expr:
    return ir.Attr(obj=obj, name=name)


def index(obj: ir.Expr, key: ir.Expr) -> ir.Expr:
    return ir.Index(obj=obj, index=key)


def binary(op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr:
    return ir.Binary(op=op, left=left, right=right)


def count_of(field: str, var: str, cond: ir.Expr) -> ir.Expr:
    """`len([var for var in values(field) if cond])`."""
    values_of = ir.Call(func=ir.Name(id="values", ref="builtin"), args=[state(field)])
    comprehension = ir.Comprehension(elt=value(var), targets=[var], iter=values_of, cond=cond)
    return ir.Call(func=ir.Name(id="len", ref="builtin"), args=[comprehension])


def verify(cond: ir.Expr, weight: float = 1.0, each: str = "", over: ir.Expr | None = None) -> ir.VerifyLine:
    return ir.VerifyLine(cond=cond, weight=weight, each=each, over=over)


# --------------------------------------------------------------------------- ticketing

TITLES = (
    "Docking station drops the external display",
    "Shared calendar shows the wrong time zone",
    "Badge reader at the side door rejects my card",
    "Laptop fan is loud during video calls",
    "Cannot print to the plotter from the design room",
    "Password manager will not sync on my phone",
)
REQUESTERS = ("alice", "bob", "carol")


def _new_ticket(env: Any, title: str, by: str, status: str, **fields: Any) -> int:
    """A ticket the plan writes into the state directly (as a plan's state writes do)."""
    live = env.view()
    number = live["next_ticket_id"]
    live["next_ticket_id"] = number + 1
    stamp = "2025-01-06T12:00:00"
    live["tickets"][number] = {
        "id": number,
        "title": title,
        "description": "",
        "category": "other",
        "priority": 3,
        "status": status,
        "created_by": by,
        "assignee": None,
        "resolution": None,
        "created_at": stamp,
        "updated_at": stamp,
        **fields,
    }
    return int(number)


def _call(env: Any, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
    result = env.call(tool, args)
    if is_failure(result):
        raise FamilyFailed(str(result["error"]["message"]))
    return tool, args, result


def close_out_plan(env: Any, seed: int) -> dict[str, Any]:
    """Bulk: two or three resolved tickets of one requester, with near misses (the same
    requester's open ticket, another requester's resolved one)."""
    rng = random.Random(seed)
    who, other = rng.sample(REQUESTERS, 2)
    titles = rng.sample(TITLES, 5)
    for title in titles[: rng.randint(2, 3)]:
        _new_ticket(env, title, who, "resolved", resolution="Confirmed fixed by the requester")
    _new_ticket(env, titles[3], who, "open")
    _new_ticket(env, titles[4], other, "resolved", resolution="Confirmed fixed by the requester")
    return {"who": who}


def close_out_solve(env: Any, values: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    tickets = env.state()["tickets"]
    targets = sorted(
        int(k) for k, t in tickets.items() if t["created_by"] == values["who"] and t["status"] == "resolved"
    )
    return [_call(env, "close_ticket", {"ticket_id": number}) for number in targets]


def _resolved_of(who: ir.Expr, status: str) -> ir.Expr:
    cond = binary(
        "and",
        binary("==", attr(value("t"), "created_by"), who),
        binary("==", attr(value("t"), "status"), enum("Status", status)),
    )
    return count_of("tickets", "t", cond)


CLOSE_OUT = ir.FamilyDecl(
    name="close_out_confirmed",
    kind="bulk",
    scenario="help_desk_busy_week",
    plan=[],
    requests=[
        "{who} confirmed every fix we sent: close all of their resolved tickets.",
        "Every resolved ticket {who} filed can be closed now; they have checked the fixes.",
    ],
    verify=[verify(binary("==", _resolved_of(value("who"), "resolved"), const(0)))],
)


def triage_plan(env: Any, seed: int) -> dict[str, Any]:
    """Branch: a new ticket that is either still unassigned (give it to the agent on
    duty) or already with someone (raise its priority instead): the seed decides."""
    rng = random.Random(seed)
    title = rng.choice(TITLES)
    taken = rng.random() < 0.5
    fields = {"assignee": "bob"} if taken else {}
    number = _new_ticket(env, title, rng.choice(REQUESTERS), "in_progress" if taken else "open", **fields)
    return {
        "title": title,
        "ticket": number,
        "owner": "bob" if taken else "alice",
        "priority": 5 if taken else 3,
        "variant": "taken" if taken else "free",
    }


def triage_solve(env: Any, values: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    ticket = env.state()["tickets"][str(values["ticket"])]
    if ticket["assignee"] is None:
        return [_call(env, "assign_ticket", {"ticket_id": values["ticket"], "assignee": "alice"})]
    return [_call(env, "update_ticket", {"ticket_id": values["ticket"], "priority": 5})]


def _ticket(field: str) -> ir.Expr:
    return attr(index(state("tickets"), value("ticket")), field)


TRIAGE = ir.FamilyDecl(
    name="triage_new_ticket",
    kind="branch",
    scenario="help_desk_busy_week",
    requests=[
        'About the ticket "{title}": if nobody has picked it up yet, put it in alice\'s queue; '
        "if someone has, raise it to priority 5."
    ],
    verify=[
        verify(binary("==", _ticket("assignee"), value("owner"))),
        verify(binary("==", _ticket("priority"), value("priority"))),
    ],
)


def stuck_plan(env: Any, seed: int) -> dict[str, Any]:
    """Symptom: a ticket shows as in progress with nobody on it (the seeded fault)."""
    rng = random.Random(seed)
    title = rng.choice(TITLES)
    number = _new_ticket(env, title, rng.choice(REQUESTERS), "in_progress")
    return {"title": title, "ticket": number, "agent": rng.choice(("alice", "bob"))}


def stuck_solve(env: Any, values: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    return [_call(env, "assign_ticket", {"ticket_id": values["ticket"], "assignee": values["agent"]})]


STUCK = ir.FamilyDecl(
    name="stuck_in_progress",
    kind="symptom",
    scenario="help_desk_busy_week",
    requests=[
        'The ticket "{title}" has said "in progress" all morning, yet nobody seems to own it. '
        "{agent} is on shift: it should be in their queue."
    ],
    verify=[verify(binary("==", _ticket("assignee"), value("agent")))],
)


def refusing_plan(env: Any, seed: int) -> dict[str, Any]:
    """A plan whose `require` fails for every other seed (discarded draws)."""
    if seed % 2:
        raise FamilyFailed("require: no unassigned ticket to start from")
    return stuck_plan(env, seed)


REFUSING = STUCK.model_copy(update={"name": "sometimes_refused"})

NOTHING_NEEDED = STUCK.model_copy(
    update={"name": "already_true", "verify": [verify(binary("==", _ticket("title"), value("title")))]}
)
"""Broken: its verifier passes when nothing is done."""

FIRST_ONLY = CLOSE_OUT.model_copy(
    update={
        "name": "first_only",
        "verify": [verify(binary("==", _ticket("status"), enum("Status", "closed")))],
    }
)
"""Broken: its verifier checks only the first ticket gold closes, so a prefix passes."""


def first_only_plan(env: Any, seed: int) -> dict[str, Any]:
    values = close_out_plan(env, seed)
    tickets = env.state()["tickets"]
    first = min(int(k) for k, t in tickets.items() if t["created_by"] == values["who"] and t["status"] == "resolved")
    return {**values, "ticket": first}


TICKETING_FAMILIES = {
    "close_out_confirmed": Family(close_out_plan, close_out_solve),
    "triage_new_ticket": Family(triage_plan, triage_solve),
    "stuck_in_progress": Family(stuck_plan, stuck_solve),
    "sometimes_refused": Family(refusing_plan, stuck_solve),
    "already_true": Family(stuck_plan, stuck_solve),
    "first_only": Family(first_only_plan, close_out_solve),
}
GOOD_TICKETING = [CLOSE_OUT, TRIAGE, STUCK]
BROKEN_TICKETING = [NOTHING_NEEDED, FIRST_ONLY]


# --------------------------------------------------------------------------- file workspace

SITES = ("lyon", "porto", "gdansk", "turin")
ITEMS = ("safety gloves", "ear plugs", "cable ties", "label tape", "drill bits", "hi-vis vests")


def spend_plan(env: Any, seed: int) -> dict[str, Any]:
    """Compute: a month's purchase log (and last month's, a distractor); the request asks
    for the month's total spend, written to a report file."""
    rng = random.Random(seed)
    site = rng.choice(SITES)
    rows = [(rng.choice(ITEMS), rng.randint(1, 40) * 5) for _ in range(rng.randint(4, 7))]
    files = env.view()["files"]
    stamp = "2025-04-01T08:00:00"
    source = f"{site}/purchases/2025-04.csv"
    text = "item,amount\n" + "".join(f"{item},{amount}\n" for item, amount in rows)
    files[source] = {"content": text, "version": 1, "modified_at": stamp}
    stale = "item,amount\n" + "".join(f"{item},{amount + 5}\n" for item, amount in rows[:3])
    files[f"{site}/purchases/2025-03.csv"] = {"content": stale, "version": 1, "modified_at": stamp}
    return {"site": site, "source": source, "output": f"{site}/reports/spend_2025-04.txt"}


def spend_solve(env: Any, values: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    read = _call(env, "read", {"path": values["source"]})
    lines = env.state()["files"][values["source"]]["content"].splitlines()[1:]
    total = sum(int(line.split(",")[1]) for line in lines)
    return [read, _call(env, "write", {"path": values["output"], "content": f"{total}\n"})]


def spend_total(env: Any, values: Mapping[str, Any]) -> str:
    lines = env.state()["files"][values["source"]]["content"].splitlines()[1:]
    return f"{sum(int(line.split(',')[1]) for line in lines)}\n"


def _file(path: ir.Expr) -> ir.Expr:
    return index(state("files"), path)


SPEND = ir.FamilyDecl(
    name="monthly_spend",
    kind="compute",
    reward="partial",
    scenario="empty_workspace",
    requests=[
        'Work out what the {site} site spent in April 2025 from its purchase log and save the total as "{output}".'
    ],
    verify=[
        verify(binary("in", value("output"), state("files")), weight=1.0),
        verify(binary("==", attr(_file(value("output")), "content"), value("total")), weight=3.0),
    ],
)


def spend_plan_with_total(env: Any, seed: int) -> dict[str, Any]:
    values = spend_plan(env, seed)
    return {**values, "total": spend_total(env, values)}


CLAW_FAMILIES = {"monthly_spend": Family(spend_plan_with_total, spend_solve)}


# --------------------------------------------------------------------------- wiring


def with_families(env: SampleEnv, runners: dict[str, Family], decls: list[ir.FamilyDecl]) -> SampleEnv:
    """`env` whose spec declares `decls` and whose package exposes `runners` as
    `FAMILIES` (copies: the real package module is left alone)."""
    package = types.ModuleType(env.package.__name__)
    package.__dict__.update(vars(env.package))
    environment = types.ModuleType(env.package.environment.__name__)
    environment.__dict__.update(vars(env.package.environment))
    environment.FAMILIES = runners  # type: ignore[attr-defined]
    environment.FamilyFailed = FamilyFailed  # type: ignore[attr-defined]
    package.environment = environment  # type: ignore[attr-defined]
    model = env.model.model_copy(update={"families": decls})
    return dataclasses.replace(env, model=model, package=package)
