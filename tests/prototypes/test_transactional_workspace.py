"""The transactional workspace archetype (paper archetype 1, "CRUD & Auth"), tested on the
generated `ticketing` package, the domain built on
`specs/prototypes/transactional_workspace.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`; every rule of the contract has a test: a
session-bound user handle gates every operation; a typed entity queue whose ids are
issued once and never change; a status that only moves forward (open -> in_progress ->
resolved -> closed), with reversions and a second closing refused; resolution only
through the tool that records the mandatory resolution text; selective field updates;
user-scoped filtered listing; CRUD argument validation from the tool schema; an
append-only audit log with one entry per mutation; atomic calls (a refused call leaves
the state byte-identical). Then the ticketing additions: categories and the queue count.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, put_on_path, spec_path

ROOT = Path(__file__).resolve().parents[2]
put_on_path()

from ticketing import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from ticketing.environment import WORLD  # noqa: E402

TOOLS_JSON = json.loads((package_dir("ticketing") / "tools.json").read_text())
SPEC = (spec_path("ticketing")).read_text()
PROTOTYPE = (ROOT / "specs" / "prototypes" / "transactional_workspace.envspec").read_text()

LIFECYCLE = ["open", "in_progress", "resolved", "closed"]
CLOCK = "2025-01-01T09:00:00"
"""The virtual clock of every scenario that sets none (the spec's header has no `clock`)."""
MONDAY = "2025-01-06T09:30:00"
"""The clock `help_desk_monday` sets: 09:30 on Monday 6 January."""
STAFF = ["alice", "bob", "carol", "dmitri", "marta", "martin", "sofia", "yusuf"]
"""Every user who can log in, in name order; `agents` are three of them."""
MONDAY_OPEN = [1, 4, 6, 7, 9, 12, 15, 16, 17, 19, 20, 22, 24, 25, 26, 27, 28, 29, 30, 32, 33, 34, 35, 36]
"""The open tickets of `help_desk_monday` (36 tickets, ids 1 to 36)."""

GOOD_ARGS: dict[str, dict[str, Any]] = {
    "logout": {},
    "create_ticket": {"title": "Printer jams"},
    "get_ticket": {"ticket_id": 1},
    "update_ticket": {"ticket_id": 1, "priority": 5},
    "assign_ticket": {"ticket_id": 1, "assignee": "bob"},
    "set_status": {"ticket_id": 1, "status": "in_progress"},
    "resolve_ticket": {"ticket_id": 1, "resolution": "Swapped the disk"},
    "close_ticket": {"ticket_id": 1},
    "list_tickets": {},
    "categorize_ticket": {"ticket_id": 1, "category": "network"},
    "queue_by_category": {},
}
"""Arguments every gated tool accepts on ticket 1 of `help_desk_monday` once signed in."""

SESSION_TOOLS = {"login", "whoami"}
"""The two tools that work without a session: starting one, and asking whether there is one."""


def ok(env: Environment, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = env.call(tool, args or {})
    assert not (isinstance(result, dict) and isinstance(result.get("error"), dict)), result
    return result


def refused(env: Environment, tool: str, args: dict[str, Any], kind: str, text: str = "") -> dict[str, Any]:
    """The call fails with this kind of domain error, naming `text`, and changes nothing."""
    before = env.state_json()
    result = env.call(tool, args)
    assert isinstance(result, dict) and isinstance(result.get("error"), dict), result
    error: dict[str, Any] = result["error"]
    assert error["kind"] == kind, error
    assert text in error["message"], error
    assert env.state_json() == before, f"refused {tool} changed the state"
    return error


def ticket(ticket_id: int, status: str = "open", created_by: str = "alice", **fields: Any) -> dict[str, Any]:
    stamp = f"2025-01-01T08:{ticket_id:02d}:00"
    return {
        "id": ticket_id,
        "title": f"Ticket {ticket_id}",
        "status": status,
        "created_by": created_by,
        "created_at": stamp,
        "updated_at": stamp,
        **fields,
    }


def one_ticket_in(status: str) -> Environment:
    """Alice is signed in; ticket 1 is in `status` (resolved and closed ones carry a resolution)."""
    resolution = "Fixed" if status in ("resolved", "closed") else None
    return Environment(
        {"current_user": "alice", "next_ticket_id": 2, "tickets": {1: ticket(1, status, resolution=resolution)}}
    )


def tickets(env: Environment) -> dict[str, dict[str, Any]]:
    return dict(env.state()["tickets"])


def actions(env: Environment) -> list[str]:
    return [entry["action"] for entry in env.state()["audit_log"]]


# --------------------------------------------------------------------------- session gate


@pytest.mark.parametrize("tool", sorted(GOOD_ARGS))
def test_every_tool_refuses_without_a_session(tool: str) -> None:
    env = Environment("help_desk_monday")
    ok(env, "logout")
    error = refused(env, tool, GOOD_ARGS[tool], "unauthenticated", "call login first")
    assert set(error) == {"kind", "message"}  # nothing about the queue leaks before login
    assert env.state()["audit_log"][-1]["action"] == "logout"


def test_the_gate_covers_every_tool_but_login_and_whoami() -> None:
    assert set(GOOD_ARGS) | SESSION_TOOLS == set(TOOL_SPECS)
    env = Environment()  # S0: nobody is signed in
    assert ok(env, "whoami") is None
    for tool, args in GOOD_ARGS.items():
        refused(env, tool, args, "unauthenticated")


def test_login_checks_user_and_password() -> None:
    env = Environment()
    error = refused(env, "login", {"username": "zed", "password": "x"}, "not_found", "unknown user zed")
    assert error["allowed"] == STAFF == sorted(WORLD["users"]) and error["field"] == "username"
    error = refused(env, "login", {"username": "alice", "password": "bob-pass"}, "unauthenticated", "wrong password")
    assert error["field"] == "password"
    refused(env, "login", {"username": "alice", "password": ""}, "invalid_argument", "min length")
    refused(env, "login", {"username": "", "password": "alice-pass"}, "invalid_argument", "min length")
    refused(env, "login", {"username": "alice"}, "invalid_argument", "needs the parameter `password`")
    assert ok(env, "login", {"username": "alice", "password": "alice-pass"}) is True
    assert ok(env, "whoami") == "alice" and env.state()["current_user"] == "alice"
    assert env.state()["audit_log"] == [
        {"seq": 1, "at": CLOCK, "tool": "login", "action": "login", "entity": "alice", "detail": ""}
    ]


def test_logout_ends_the_session_and_closes_the_gate_again() -> None:
    env = Environment("logged_in")
    ok(env, "create_ticket", {"title": "Before logout"})
    assert ok(env, "logout") is True
    assert ok(env, "whoami") is None and env.state()["current_user"] is None
    refused(env, "logout", {}, "unauthenticated")
    refused(env, "get_ticket", {"ticket_id": 1}, "unauthenticated")
    ok(env, "login", {"username": "bob", "password": "bob-pass"})
    assert ok(env, "get_ticket", {"ticket_id": 1})["created_by"] == "alice"
    assert actions(env) == ["create", "logout", "login"]
    assert [e["entity"] for e in env.state()["audit_log"]] == ["ticket 1", "alice", "bob"]


def test_the_session_user_owns_what_it_creates() -> None:
    env = Environment("help_desk_monday")
    ok(env, "login", {"username": "carol", "password": "carol-pass"})  # switching user needs no logout
    created = ok(env, "create_ticket", {"title": "Monitor flickers"})
    assert created["created_by"] == "carol"
    assert [t["id"] for t in ok(env, "list_tickets", {"mine_only": True})] == [4, 5, 14, 21, 28, 33, 34, 37]


def test_sessions_are_isolated_per_environment() -> None:
    first = Environment("help_desk_monday")
    second = Environment("help_desk_monday")
    ok(first, "logout")
    assert ok(second, "whoami") == "alice"
    ok(second, "close_ticket", {"ticket_id": 1})
    assert tickets(first)["1"]["status"] == "open"
    forked = second.fork()
    ok(forked, "logout")
    assert ok(second, "whoami") == "alice"


# --------------------------------------------------------------------------- typed entity queue, immutable ids


def test_creation_issues_the_next_id_and_starts_open() -> None:
    env = Environment("help_desk_monday")
    created = ok(env, "create_ticket", {"title": "Printer jams", "description": "Tray 2", "priority": 5})
    assert created == {
        "id": 37,
        "title": "Printer jams",
        "description": "Tray 2",
        "category": "other",
        "priority": 5,
        "status": "open",
        "created_by": "alice",
        "assignee": None,
        "resolution": None,
        "created_at": MONDAY,
        "updated_at": MONDAY,
    }
    assert tickets(env)["37"] == created and env.state()["next_ticket_id"] == 38
    defaults = ok(env, "create_ticket", {"title": "Defaults"})
    assert (defaults["id"], defaults["priority"], defaults["description"]) == (38, 3, "")
    assert ok(env, "get_ticket", {"ticket_id": 38}) == defaults


def test_ids_are_never_reissued_or_changed() -> None:
    env = Environment("help_desk_monday")
    refused(env, "create_ticket", {"title": ""}, "invalid_argument")
    assert ok(env, "create_ticket", {"title": "Thirty-seventh"})["id"] == 37  # a refused create uses no id
    for tool in TOOL_SPECS:
        assert "id" not in [p.name for p in TOOL_SPECS[tool].params], tool
    refused(env, "update_ticket", {"ticket_id": 37, "id": 9}, "invalid_argument", "no parameter `id`")
    steps: list[tuple[str, dict[str, Any]]] = [
        ("update_ticket", {"ticket_id": 37, "title": "Renamed"}),
        ("categorize_ticket", {"ticket_id": 37, "category": "hardware"}),
        ("assign_ticket", {"ticket_id": 37, "assignee": "bob"}),
        ("set_status", {"ticket_id": 37, "status": "in_progress"}),
        ("resolve_ticket", {"ticket_id": 37, "resolution": "Done"}),
        ("close_ticket", {"ticket_id": 37}),
    ]
    for step, args in steps:
        assert ok(env, step, args)["id"] == 37
    assert sorted(tickets(env), key=int) == [str(n) for n in range(1, 38)]
    assert all(int(key) == value["id"] for key, value in tickets(env).items())
    assert ok(env, "create_ticket", {"title": "Thirty-eighth"})["id"] == 38


def test_creating_never_replaces_an_existing_ticket() -> None:
    env = Environment({"current_user": "alice", "tickets": {1: ticket(1, created_by="bob", title="Keep me")}})
    created = env.call("create_ticket", {"title": "New"})
    assert tickets(env)["1"]["title"] == "Keep me"
    assert isinstance(created, dict) and created.get("id") != 1


def test_unknown_ids_are_refused_naming_the_ids_that_exist() -> None:
    env = Environment("help_desk_monday")
    for tool in ["get_ticket", "close_ticket", "update_ticket", "categorize_ticket"]:
        args = {**GOOD_ARGS[tool], "ticket_id": 42}
        error = refused(env, tool, args, "not_found", "ticket 42 does not exist")
        # the first twenty of the 36 ids
        assert error["allowed"] == list(range(1, 21)) and error["field"] == "ticket_id" and error["entity"] == "ticket"
    refused(env, "get_ticket", {"ticket_id": "1"}, "invalid_argument", "must be an integer")


def test_reads_return_detached_copies() -> None:
    env = Environment("help_desk_monday")
    before = env.state_json()
    got = ok(env, "get_ticket", {"ticket_id": 1})
    got["status"] = "closed"
    listed = ok(env, "list_tickets")
    listed[0]["title"] = "hijacked"
    assert env.state_json() == before


# --------------------------------------------------------------------------- one-way status


def _expected_set_status(current: str, target: str) -> tuple[str, str] | None:
    """The refusal (kind, text) the contract prescribes for set_status, or None if allowed."""
    if current == "closed":
        return ("invalid_state", "already closed")
    if target == "resolved":
        return ("invalid_argument", "resolve")
    if LIFECYCLE.index(target) <= LIFECYCLE.index(current):
        return ("invalid_state", f"cannot move from {current} back to {target}")
    return None


@pytest.mark.parametrize("current", LIFECYCLE)
@pytest.mark.parametrize("target", LIFECYCLE)
def test_set_status_moves_forward_only(current: str, target: str) -> None:
    env = one_ticket_in(current)
    expected = _expected_set_status(current, target)
    args = {"ticket_id": 1, "status": target}
    if expected is None:
        moved = ok(env, "set_status", args)
        assert moved["status"] == target == tickets(env)["1"]["status"]
        assert env.state()["audit_log"][-1] == {
            "seq": 1,
            "at": CLOCK,
            "tool": "set_status",
            "action": "status",
            "entity": "ticket 1",
            "detail": target,
        }
        return
    kind, text = expected
    error = refused(env, "set_status", args, kind, text)
    assert error["field"] == "status"
    if kind == "invalid_state":
        assert error["current"] == current
    if "back to" in text:  # a reversion names the moves that are still possible
        assert error["allowed"] == [
            s for s in ["in_progress", "closed"] if LIFECYCLE.index(s) > LIFECYCLE.index(current)
        ]


def test_the_whole_lifecycle_in_order() -> None:
    env = Environment("logged_in")
    ok(env, "create_ticket", {"title": "Laptop"})
    seen = [tickets(env)["1"]["status"]]
    ok(env, "set_status", {"ticket_id": 1, "status": "in_progress"})
    seen.append(tickets(env)["1"]["status"])
    ok(env, "resolve_ticket", {"ticket_id": 1, "resolution": "New battery"})
    seen.append(tickets(env)["1"]["status"])
    ok(env, "close_ticket", {"ticket_id": 1})
    seen.append(tickets(env)["1"]["status"])
    assert seen == LIFECYCLE
    assert actions(env) == ["create", "status", "resolve", "close"]
    for target in LIFECYCLE:
        refused(env, "set_status", {"ticket_id": 1, "status": target}, "invalid_state", "already closed")


def test_forward_moves_may_skip_stages() -> None:
    env = Environment("help_desk_monday")
    assert ok(env, "set_status", {"ticket_id": 1, "status": "closed"})["status"] == "closed"  # open -> closed
    assert ok(env, "resolve_ticket", {"ticket_id": 4, "resolution": "Reinstalled"})["status"] == "resolved"
    assert ok(env, "close_ticket", {"ticket_id": 2})["status"] == "closed"  # in_progress -> closed


def test_an_invalid_status_name_is_refused_with_the_alternatives() -> None:
    env = Environment("help_desk_monday")
    error = refused(env, "set_status", {"ticket_id": 1, "status": "done"}, "invalid_argument", "must be one of")
    assert error["allowed"] == LIFECYCLE


# --------------------------------------------------------------------------- closing is terminal


@pytest.mark.parametrize("current", ["open", "in_progress", "resolved"])
def test_closing_twice_is_refused(current: str) -> None:
    env = one_ticket_in(current)
    assert ok(env, "close_ticket", {"ticket_id": 1})["status"] == "closed"
    error = refused(env, "close_ticket", {"ticket_id": 1}, "invalid_state", "ticket 1 is already closed")
    assert (error["entity"], error["field"], error["current"]) == ("ticket", "status", "closed")
    assert actions(env) == ["close"]


def test_a_closed_ticket_refuses_every_change_but_stays_readable() -> None:
    env = one_ticket_in("closed")
    for tool in ["update_ticket", "assign_ticket", "set_status", "resolve_ticket", "close_ticket", "categorize_ticket"]:
        error = refused(env, tool, GOOD_ARGS[tool], "invalid_state", "closed")
        assert error["current"] == "closed", tool
    assert ok(env, "get_ticket", {"ticket_id": 1})["status"] == "closed"
    assert [t["id"] for t in ok(env, "list_tickets", {"status": "closed"})] == [1]
    assert env.state()["audit_log"] == []


# --------------------------------------------------------------------------- resolution needs its metadata


@pytest.mark.parametrize("current", ["open", "in_progress"])
def test_resolving_records_the_resolution(current: str) -> None:
    env = one_ticket_in(current)
    resolved = ok(env, "resolve_ticket", {"ticket_id": 1, "resolution": "Replaced the fan"})
    assert (resolved["status"], resolved["resolution"]) == ("resolved", "Replaced the fan")
    assert tickets(env)["1"] == resolved and actions(env) == ["resolve"]


def test_resolution_is_mandatory() -> None:
    env = Environment("help_desk_monday")
    error = refused(env, "resolve_ticket", {"ticket_id": 1, "resolution": ""}, "invalid_argument", "min length")
    assert error["field"] == "resolution"
    refused(env, "resolve_ticket", {"ticket_id": 1}, "invalid_argument", "needs the parameter `resolution`")
    refused(env, "resolve_ticket", {"ticket_id": 1, "resolution": None}, "invalid_argument", "must be a string")
    # set_status cannot be used to skip the resolution text
    refused(env, "set_status", {"ticket_id": 1, "status": "resolved"}, "invalid_argument", "resolve")
    refused(env, "set_status", {"ticket_id": 2, "status": "resolved"}, "invalid_argument", "resolve")
    assert [t["resolution"] for t in ok(env, "list_tickets", {"status": "resolved"})] == [
        "Reset by phone",
        "Unlocked the account and re-registered the MFA device",
        "Updated the docking station firmware and display drivers",
        "Re-enabled the badge in the access control system",
    ]


@pytest.mark.parametrize("current", ["resolved", "closed"])
def test_resolving_twice_is_refused(current: str) -> None:
    env = one_ticket_in(current)
    error = refused(
        env, "resolve_ticket", {"ticket_id": 1, "resolution": "Again"}, "invalid_state", f"already {current}"
    )
    assert error["current"] == current
    assert tickets(env)["1"]["resolution"] == "Fixed"


def test_the_set_status_refusal_names_a_tool_that_exists() -> None:
    """Renames do not reach strings: the hint must not name the prototype's `resolve_entity`."""
    env = Environment("help_desk_monday")
    error = refused(env, "set_status", {"ticket_id": 1, "status": "resolved"}, "invalid_argument")
    named = set(re.findall(r"\b[a-z]+_[a-z_]+\b", error["message"]))
    description = next(t["description"] for t in TOOLS_JSON["tools"] if t["name"] == "set_status")
    named |= set(re.findall(r"`([a-z_]+)`", description))
    assert named <= set(TOOL_SPECS), named - set(TOOL_SPECS)


def test_assigning_is_for_agents_and_unresolved_tickets() -> None:
    env = Environment("help_desk_monday")
    error = refused(env, "assign_ticket", {"ticket_id": 4, "assignee": "carol"}, "not_found", "carol is not an agent")
    assert error["allowed"] == WORLD["agents"] == ["alice", "bob", "dmitri"]
    assigned = ok(env, "assign_ticket", {"ticket_id": 4, "assignee": "alice"})
    assert (assigned["assignee"], assigned["status"]) == ("alice", "open")  # assigning does not move the status
    ok(env, "assign_ticket", {"ticket_id": 2, "assignee": "alice"})  # reassigning is fine
    refused(env, "assign_ticket", {"ticket_id": 3, "assignee": "alice"}, "invalid_state", "already resolved")
    assert [(e["action"], e["detail"]) for e in env.state()["audit_log"]] == [("assign", "alice"), ("assign", "alice")]


# --------------------------------------------------------------------------- selective updates


@pytest.mark.parametrize(
    "change",
    [
        {"title": "Laptop boots to a black screen"},
        {"description": "Since the update"},
        {"priority": 1},
        {"title": "T", "priority": 5},
        {"title": "T", "description": "D", "priority": 2},
    ],
    ids=lambda c: "+".join(c),
)
def test_updates_change_only_the_given_fields(change: dict[str, Any]) -> None:
    env = Environment("help_desk_monday")
    before = tickets(env)["1"]
    updated = ok(env, "update_ticket", {"ticket_id": 1, **change})
    assert updated == {**before, **change, "updated_at": MONDAY}
    assert tickets(env)["1"] == updated
    assert {k: v for k, v in tickets(env).items() if k != "1"} == {
        k: v for k, v in Environment("help_desk_monday").state()["tickets"].items() if k != "1"
    }
    assert actions(env) == ["update"]


def test_update_needs_a_field_and_refuses_bad_values() -> None:
    env = Environment("help_desk_monday")
    error = refused(env, "update_ticket", {"ticket_id": 1}, "invalid_argument", "at least one field")
    assert error["allowed"] == ["title", "description", "priority"]
    refused(env, "update_ticket", {"ticket_id": 1, "title": None, "priority": None}, "invalid_argument", "at least one")
    refused(env, "update_ticket", {"ticket_id": 1, "title": ""}, "invalid_argument", "title must not be empty")
    refused(env, "update_ticket", {"ticket_id": 1, "title": "", "priority": 5}, "invalid_argument", "title")
    refused(env, "update_ticket", {"ticket_id": 1, "priority": 6}, "invalid_argument", "max 5")
    refused(env, "update_ticket", {"ticket_id": 1, "status": "closed"}, "invalid_argument", "no parameter `status`")
    refused(env, "update_ticket", {"ticket_id": 1, "category": "access"}, "invalid_argument", "no parameter")
    assert ok(env, "update_ticket", {"ticket_id": 1, "description": ""})["description"] == ""  # empty text is a value


def test_update_keeps_the_title_limit_of_create() -> None:
    env = Environment("help_desk_monday")
    refused(env, "create_ticket", {"title": "x" * 121}, "invalid_argument", "max length")
    refused(env, "update_ticket", {"ticket_id": 1, "title": "x" * 121}, "invalid_argument", "max length")


# --------------------------------------------------------------------------- user-scoped listing


def ids(env: Environment, **args: Any) -> list[int]:
    return [t["id"] for t in ok(env, "list_tickets", args)]


def test_listing_filters_by_status_owner_and_limit_in_id_order() -> None:
    env = Environment("help_desk_monday")
    assert ids(env) == list(range(1, 37))
    assert ids(env, mine_only=True) == [1, 2]
    assert ids(env, status="open") == MONDAY_OPEN
    assert ids(env, status="open", mine_only=True) == [1]
    assert ids(env, status="in_progress") == [2, 8, 13, 14, 18, 31]
    assert ids(env, status="closed") == [11, 23]
    assert ids(env, limit=2) == [1, 2]
    assert ids(env, status="open", limit=3) == [1, 4, 6]
    assert ids(env, mine_only=True, limit=1) == [1]
    assert ids(env, status=None, mine_only=False, limit=500) == list(range(1, 37))
    assert ids(env) == ids(env, limit=50) != ids(env, limit=20)  # the default limit, 50, holds all 36
    ok(env, "login", {"username": "bob", "password": "bob-pass"})
    assert ids(env, mine_only=True) == [3, 31]
    assert ids(env, mine_only=True, status="open") == []


def test_listing_orders_by_id_whatever_the_insertion_order() -> None:
    env = Environment(
        {
            "current_user": "bob",
            "next_ticket_id": 20,
            "tickets": {12: ticket(12), 3: ticket(3, created_by="bob"), 7: ticket(7)},
        }
    )
    assert ids(env) == [3, 7, 12]
    assert ids(env, mine_only=True) == [3]


def test_listing_arguments_are_validated() -> None:
    env = Environment("help_desk_monday")
    refused(env, "list_tickets", {"limit": 0}, "invalid_argument", "min 1")
    refused(env, "list_tickets", {"limit": 501}, "invalid_argument", "max 500")
    refused(env, "list_tickets", {"mine_only": "yes"}, "invalid_argument", "true or false")
    error = refused(env, "list_tickets", {"status": "pending"}, "invalid_argument")
    assert error["allowed"] == LIFECYCLE


# --------------------------------------------------------------------------- append-only audit log


WRITE_TOOLS = sorted(t["name"] for t in TOOLS_JSON["tools"] if t["modifies_state"])


@pytest.mark.parametrize("tool", WRITE_TOOLS)
def test_every_successful_write_adds_exactly_one_entry(tool: str) -> None:
    env = Environment("help_desk_monday")
    args = GOOD_ARGS.get(tool, {"username": "bob", "password": "bob-pass"})
    before = env.state()["audit_log"]
    ok(env, tool, args)
    after = env.state()["audit_log"]
    assert after[: len(before)] == before and len(after) == len(before) + 1
    entry = after[-1]
    assert (entry["seq"], entry["tool"], entry["at"]) == (1, tool, MONDAY)


def test_the_log_records_every_mutation_in_order() -> None:
    env = Environment()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("login", {"username": "alice", "password": "alice-pass"}),
        ("create_ticket", {"title": "Projector"}),
        ("update_ticket", {"ticket_id": 1, "priority": 4}),
        ("categorize_ticket", {"ticket_id": 1, "category": "hardware"}),
        ("assign_ticket", {"ticket_id": 1, "assignee": "bob"}),
        ("set_status", {"ticket_id": 1, "status": "in_progress"}),
        ("resolve_ticket", {"ticket_id": 1, "resolution": "New bulb"}),
        ("close_ticket", {"ticket_id": 1}),
        ("logout", {}),
    ]
    for tool, args in calls:
        ok(env, tool, args)
    log = env.state()["audit_log"]
    assert [(e["seq"], e["tool"], e["action"], e["entity"], e["detail"]) for e in log] == [
        (1, "login", "login", "alice", ""),
        (2, "create_ticket", "create", "ticket 1", ""),
        (3, "update_ticket", "update", "ticket 1", ""),
        (4, "categorize_ticket", "categorize", "ticket 1", "hardware"),
        (5, "assign_ticket", "assign", "ticket 1", "bob"),
        (6, "set_status", "status", "ticket 1", "in_progress"),
        (7, "resolve_ticket", "resolve", "ticket 1", ""),
        (8, "close_ticket", "close", "ticket 1", ""),
        (9, "logout", "logout", "alice", ""),
    ]
    assert all(e["at"] == CLOCK for e in log)


def test_reads_and_refused_calls_add_nothing_and_earlier_entries_never_change() -> None:
    env = Environment("help_desk_monday")
    ok(env, "close_ticket", {"ticket_id": 4})
    first = env.state()["audit_log"]
    reads: list[tuple[str, dict[str, Any]]] = [
        ("whoami", {}),
        ("get_ticket", {"ticket_id": 1}),
        ("list_tickets", {"mine_only": True}),
        ("queue_by_category", {}),
    ]
    for tool, args in reads:
        ok(env, tool, args)
    refusals: list[tuple[str, dict[str, Any]]] = [
        ("close_ticket", {"ticket_id": 4}),
        ("set_status", {"ticket_id": 2, "status": "open"}),
        ("resolve_ticket", {"ticket_id": 1, "resolution": ""}),
        ("update_ticket", {"ticket_id": 1}),
        ("assign_ticket", {"ticket_id": 1, "assignee": "zed"}),
        ("login", {"username": "alice", "password": "nope"}),
        ("create_ticket", {"title": "x", "priority": 9}),
        ("no_such_tool", {}),
    ]
    for tool, args in refusals:
        env.call(tool, args)
    assert env.state()["audit_log"] == first
    for n in range(3):
        ok(env, "update_ticket", {"ticket_id": 1, "priority": n + 1})
        log = env.state()["audit_log"]
        assert log[: len(first)] == first and [e["seq"] for e in log] == list(range(1, len(log) + 1))


# --------------------------------------------------------------------------- argument validation (CRUD schema)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"title": ""}, "min length 1"),
        ({"title": "x" * 121}, "max length 120"),
        ({"title": "ok", "priority": 0}, "min 1"),
        ({"title": "ok", "priority": 6}, "max 5"),
        ({"title": "ok", "priority": "high"}, "must be an integer"),
        ({"title": "ok", "priority": 2.0}, "must be an integer"),
        ({"title": "ok", "priority": True}, "must be an integer"),
        ({"title": 7}, "must be a string"),
        ({"title": "ok", "description": None}, "must be a string"),
        ({"title": "ok", "owner": "bob"}, "no parameter `owner`"),
        ({}, "needs the parameter `title`"),
    ],
)
def test_create_validates_its_schema(args: dict[str, Any], text: str) -> None:
    env = Environment("help_desk_monday")
    error = refused(env, "create_ticket", args, "invalid_argument", text)
    assert "field" in error


@pytest.mark.parametrize(("title", "priority"), [("x", 1), ("x" * 120, 5), ("Ünïcödé ✓", 3)])
def test_create_accepts_the_bounds(title: str, priority: int) -> None:
    env = Environment("help_desk_monday")
    created = ok(env, "create_ticket", {"title": title, "priority": priority})
    assert (created["title"], created["priority"]) == (title, priority)


def test_the_schema_file_states_the_constraints() -> None:
    by_name = {t["name"]: t for t in TOOLS_JSON["tools"]}
    create = by_name["create_ticket"]["parameters"]
    assert create["properties"]["title"]["minLength"] == 1 and create["properties"]["title"]["maxLength"] == 120
    assert (create["properties"]["priority"]["minimum"], create["properties"]["priority"]["maximum"]) == (1, 5)
    assert create["required"] == ["title"]
    assert by_name["resolve_ticket"]["parameters"]["required"] == ["ticket_id", "resolution"]
    assert by_name["set_status"]["parameters"]["properties"]["status"]["enum"] == LIFECYCLE
    assert by_name["update_ticket"]["parameters"]["required"] == ["ticket_id"]


# --------------------------------------------------------------------------- atomicity


def test_arguments_that_are_not_an_object_are_refused() -> None:
    env = Environment("help_desk_monday")
    before = env.state_json()
    result = env.call("create_ticket", ["title"])  # type: ignore[arg-type, unused-ignore]
    assert result["error"]["kind"] == "invalid_argument"
    assert env.state_json() == before


def _random_call(rng: random.Random, env: Environment) -> tuple[str, dict[str, Any]]:
    """A random call, mostly on tickets that exist and mostly with a user signed in."""
    tool = rng.choice([*sorted(TOOL_SPECS), *sorted(set(GOOD_ARGS) - {"logout"}) * 2])
    ticket_id = rng.choice([*map(int, tickets(env)), 99])
    user = rng.choice(["alice", "bob", "zed"])
    options: dict[str, dict[str, Any]] = {
        "login": {
            "username": user,
            "password": rng.choice([f"{user}-pass", f"{user}-pass", "wrong"]),
        },
        "logout": {},
        "whoami": {},
        "create_ticket": {"title": rng.choice(["", "New", "x" * 121]), "priority": rng.randint(0, 6)},
        "get_ticket": {"ticket_id": ticket_id},
        "update_ticket": {
            "ticket_id": ticket_id,
            "title": rng.choice([None, "", "Retitled"]),
            "priority": rng.choice([None, 2]),
        },
        "assign_ticket": {"ticket_id": ticket_id, "assignee": rng.choice(["alice", "bob", "carol"])},
        "set_status": {"ticket_id": ticket_id, "status": rng.choice(LIFECYCLE)},
        "resolve_ticket": {"ticket_id": ticket_id, "resolution": rng.choice(["", "Fixed"])},
        "close_ticket": {"ticket_id": ticket_id},
        "list_tickets": {"status": rng.choice([None, *LIFECYCLE]), "mine_only": rng.choice([True, False])},
        "categorize_ticket": {"ticket_id": ticket_id, "category": rng.choice(["hardware", "access", "printers"])},
        "queue_by_category": {},
    }
    return tool, options[tool]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_refused_calls_leave_the_state_byte_identical_and_traces_repeat(seed: int) -> None:
    def run() -> list[Any]:
        rng = random.Random(seed)
        env = Environment("help_desk_monday")
        trace: list[Any] = []
        refusals = 0
        for _ in range(150):
            tool, args = _random_call(rng, env)
            before = env.state_json()
            result = env.call(tool, args)
            if isinstance(result, dict) and isinstance(result.get("error"), dict):
                refusals += 1
                assert result["error"]["kind"] != "internal", (tool, args, result)
                assert env.state_json() == before, (tool, args, result)
            elif not TOOL_SPECS[tool].writes:
                assert env.state_json() == before, f"read tool {tool} changed the state"
            trace.append(result)
        assert refusals > 20  # the walk exercises the refusals, not just the happy path
        state = env.state()
        for key, value in state["tickets"].items():
            assert int(key) == value["id"] < state["next_ticket_id"]
            assert value["status"] != "resolved" or value["resolution"]
        assert [e["seq"] for e in state["audit_log"]] == list(range(1, len(state["audit_log"]) + 1))
        trace.append(env.state_json())
        return trace

    assert run() == run()


# --------------------------------------------------------------------------- the ticketing domain


def test_categorising_files_a_ticket_and_is_audited() -> None:
    env = Environment("help_desk_monday")
    categorized = ok(env, "categorize_ticket", {"ticket_id": 4, "category": "hardware"})
    assert categorized["category"] == "hardware" == tickets(env)["4"]["category"]
    assert categorized["status"] == "open" and categorized["updated_at"] == MONDAY
    assert env.state()["audit_log"][-1]["detail"] == "hardware"
    error = refused(env, "categorize_ticket", {"ticket_id": 4, "category": "printers"}, "invalid_argument")
    assert error["allowed"] == ["hardware", "software", "network", "access", "other"]
    ok(env, "categorize_ticket", {"ticket_id": 3, "category": "other"})  # resolved is still open to filing
    ok(env, "close_ticket", {"ticket_id": 4})
    refused(env, "categorize_ticket", {"ticket_id": 4, "category": "other"}, "invalid_state", "ticket 4 is closed")
    refused(env, "categorize_ticket", {"ticket_id": 42, "category": "other"}, "not_found", "ticket 42")


def test_the_queue_counts_tickets_that_are_not_closed_per_category() -> None:
    env = Environment("help_desk_monday")
    # tickets 11 (other) and 23 (hardware) are closed and not counted
    assert ok(env, "queue_by_category") == {"hardware": 10, "software": 9, "network": 7, "access": 7, "other": 1}
    ok(env, "categorize_ticket", {"ticket_id": 4, "category": "hardware"})
    ok(env, "create_ticket", {"title": "Uncategorised"})
    assert ok(env, "queue_by_category") == {"hardware": 11, "software": 8, "network": 7, "access": 7, "other": 2}
    ok(env, "close_ticket", {"ticket_id": 1})
    ok(env, "close_ticket", {"ticket_id": 3})
    assert ok(env, "queue_by_category") == {"hardware": 10, "software": 8, "network": 7, "access": 6, "other": 2}
    ok(env, "close_ticket", {"ticket_id": 33})
    ok(env, "close_ticket", {"ticket_id": 37})
    assert ok(env, "queue_by_category") == {"hardware": 10, "software": 8, "network": 7, "access": 6}  # empty: absent
    assert ok(Environment("logged_in"), "queue_by_category") == {}


def test_messages_and_the_log_speak_the_domain_noun() -> None:
    assert WORLD["noun"] == "ticket"
    env = Environment("help_desk_monday")
    ok(env, "close_ticket", {"ticket_id": 1})
    error = refused(env, "close_ticket", {"ticket_id": 1}, "invalid_state", "ticket 1 is already closed")
    assert error["entity"] == "ticket"
    assert env.state()["audit_log"][0]["entity"] == "ticket 1"


def test_domain_users_log_in_but_only_agents_are_assigned() -> None:
    env = Environment("help_desk_monday")
    ok(env, "login", {"username": "carol", "password": "carol-pass"})
    assert ok(env, "whoami") == "carol"
    assert ids(env, mine_only=True) == [4, 5, 14, 21, 28, 33, 34]
    refused(env, "assign_ticket", {"ticket_id": 4, "assignee": "carol"}, "not_found", "not an agent")
    assert ok(env, "assign_ticket", {"ticket_id": 4, "assignee": "bob"})["assignee"] == "bob"


# --------------------------------------------------------------------------- schema, renames, task


def test_tool_schema_separates_read_and_write_tools() -> None:
    by_name = {t["name"]: t for t in TOOLS_JSON["tools"]}
    reads = {"whoami", "get_ticket", "list_tickets", "queue_by_category"}
    writes = {
        "login",
        "logout",
        "create_ticket",
        "update_ticket",
        "assign_ticket",
        "set_status",
        "resolve_ticket",
        "close_ticket",
        "categorize_ticket",
    }
    assert set(by_name) == reads | writes == set(TOOL_SPECS)
    for name in reads:
        assert by_name[name]["modifies_state"] is False and by_name[name]["state_fields_affected"] == [], name
    for name in writes:
        assert by_name[name]["modifies_state"] is True and "audit_log" in by_name[name]["state_fields_affected"], name
    assert by_name["create_ticket"]["state_fields_affected"] == ["audit_log", "next_ticket_id", "tickets"]
    assert by_name["login"]["state_fields_affected"] == ["audit_log", "current_user"]


def test_the_domain_speaks_its_own_vocabulary() -> None:
    assert not [name for name in TOOL_SPECS if "entit" in name]
    # rng_state: the runtime's random stream, there because the spec's families draw random values
    assert set(Environment().state()) == {
        "tickets",
        "next_ticket_id",
        "current_user",
        "audit_log",
        "clock",
        "rng_state",
    }
    assert {p.name for spec in TOOL_SPECS.values() for p in spec.params} >= {"ticket_id"}
    assert "entity_id" not in {p.name for spec in TOOL_SPECS.values() for p in spec.params}
    assert set(SCENARIOS) == {
        "logged_in",
        "busy_queue",
        "help_desk_monday",
        "help_desk_busy_week",
    }  # signed_in renamed, busy_queue kept
    prototype_tools = set(re.findall(r"^tool (\w+)", PROTOTYPE, re.M))
    assert len(prototype_tools) == 11 and len(TOOL_SPECS) == 13


def test_the_task_is_solvable_and_its_verifier_needs_both_steps() -> None:
    env = Environment("help_desk_monday")
    ok(env, "resolve_ticket", {"ticket_id": 2, "resolution": "Replaced the VPN concentrator"})
    assert tickets(env)["2"]["status"] != "closed"  # half the job does not pass `verify`
    ok(env, "close_ticket", {"ticket_id": 2})
    assert tickets(env)["2"]["status"] == "closed" and tickets(env)["2"]["resolution"] is not None
    closed_without = Environment("help_desk_monday")
    ok(closed_without, "close_ticket", {"ticket_id": 2})
    assert tickets(closed_without)["2"]["resolution"] is None  # closing alone leaves verify's second line false
    # the spec's own task requests (a family's request lines are templates, filled per draw)
    tasks = [b for b in re.split(r"\n(?=\S)", SPEC) if b.startswith("task ")]
    assert len([r for b in tasks for r in re.findall(r'request "([^"]*)"', b)]) == 1
