"""The runtime contract of the committed generated packages, tested from outside.

`generated/it_operations/ticketing` and `generated/productivity/team_calendar` are imported as an RL harness would
import them (the folder on sys.path, standard library only) and driven through `call`:
hostile arguments are refused as `invalid_argument` / `not_found` naming the parameter
and change nothing; an internal failure mid-call is rolled back and reported without
internals; domain errors carry entity / field / current / allowed; state snapshots are
canonical, JSON and detached; sessions stay apart under threads and survive save/load.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shipped import examples_per_package, package_dir, package_names, put_on_path

put_on_path()

import team_calendar  # noqa: E402
import team_calendar.environment  # noqa: E402
import ticketing  # noqa: E402
import ticketing.environment  # noqa: E402
import ticketing.sessions  # noqa: E402

INVALID = "invalid_argument"
OK_DATETIME = "2025-03-05T10:00:00"
BUSY = max(ticketing.SCENARIOS, key=lambda name: len(ticketing.SCENARIOS[name].get("tickets", {})))
"""The ticketing scenario with the most tickets; the facts below are read from it."""
BUSY_TICKETS: dict[str, dict[str, Any]] = ticketing.Environment(BUSY).state()["tickets"]
SIGNED_IN = next(
    n for n, fields in ticketing.SCENARIOS.items() if fields.get("current_user") and not fields.get("tickets")
)
"""A ticketing scenario with a user signed in and no tickets yet."""
WORLD: dict[str, Any] = ticketing.environment.WORLD


def ticket_with(status: str) -> int:
    return min(int(ticket["id"]) for ticket in BUSY_TICKETS.values() if ticket["status"] == status)


def enum_members(package: ModuleType, tool: str, param: str) -> list[str]:
    kind = next(p.kind for p in package.TOOL_SPECS[tool].params if p.name == param)
    while kind[0] == "optional":
        kind = kind[1]
    assert kind[0] == "enum"
    return list(kind[1])


def test_the_committed_packages_are_imported() -> None:
    for module in (ticketing, team_calendar):
        assert Path(module.__file__ or "").resolve().parent == package_dir(module.__name__)


def succeeded(result: Any) -> bool:
    return not (isinstance(result, dict) and "error" in result)


def nested(depth: int) -> list[Any]:
    root: list[Any] = []
    current = root
    for _ in range(depth):
        child: list[Any] = []
        current.append(child)
        current = child
    return root


def schedule(**changes: Any) -> dict[str, Any]:
    args = {"calendar_id": "alice", "title": "Sync", "start": OK_DATETIME, "end": "2025-03-05T11:00:00"}
    args.update(changes)
    return args


# (package, tool, arguments, expected kind, parameter the error must name or None)
HOSTILE: list[tuple[str, str, Any, str, str | None]] = [
    # wrong types at the top level
    ("ticketing", "create_ticket", {"title": 12345}, INVALID, "title"),
    ("ticketing", "create_ticket", {"title": None}, INVALID, "title"),
    ("ticketing", "create_ticket", {"title": ["a", "list"]}, INVALID, "title"),
    ("ticketing", "create_ticket", {"title": {"an": "object"}}, INVALID, "title"),
    ("ticketing", "get_ticket", {"ticket_id": "1"}, INVALID, "ticket_id"),
    ("ticketing", "get_ticket", {"ticket_id": 1.0}, INVALID, "ticket_id"),
    ("ticketing", "list_tickets", {"mine_only": 1}, INVALID, "mine_only"),
    ("ticketing", "list_tickets", {"mine_only": "true"}, INVALID, "mine_only"),
    # bools are not integers, NaN and infinities are not integers
    ("ticketing", "get_ticket", {"ticket_id": True}, INVALID, "ticket_id"),
    ("ticketing", "create_ticket", {"title": "t", "priority": False}, INVALID, "priority"),
    ("ticketing", "create_ticket", {"title": "t", "priority": float("nan")}, INVALID, "priority"),
    ("ticketing", "create_ticket", {"title": "t", "priority": float("inf")}, INVALID, "priority"),
    ("ticketing", "create_ticket", {"title": "t", "priority": float("-inf")}, INVALID, "priority"),
    ("ticketing", "list_tickets", {"limit": 10**40}, INVALID, "limit"),
    # huge strings against length limits; a huge id is simply not there, one past MAX_INT refused
    ("ticketing", "create_ticket", {"title": "x" * 1_000_000}, INVALID, "title"),
    ("ticketing", "login", {"username": "", "password": "p"}, INVALID, "username"),
    ("ticketing", "get_ticket", {"ticket_id": 10**30}, "not_found", "ticket_id"),
    ("ticketing", "get_ticket", {"ticket_id": 10**4000}, INVALID, "ticket_id"),
    ("ticketing", "get_ticket", {"ticket_id": -(10**300)}, INVALID, "ticket_id"),
    ("ticketing", "login", {"username": "\ud800", "password": "p"}, INVALID, "username"),
    ("ticketing", "get_ticket", {"\ud800": 1}, INVALID, "\\ud800"),
    # deeply nested junk (as deep as json.loads will hand over)
    ("ticketing", "create_ticket", {"title": nested(900)}, INVALID, "title"),
    ("team_calendar", "schedule_event", schedule(attendees=[nested(500)]), INVALID, "attendees"),  # past MAX_DEPTH
    # wrong types inside containers, containers of the wrong kind
    ("team_calendar", "schedule_event", schedule(attendees=["ok", 7]), INVALID, "attendees[1]"),
    ("team_calendar", "schedule_event", schedule(attendees="alice"), INVALID, "attendees"),
    ("team_calendar", "schedule_event", schedule(attendees={"alice": True}), INVALID, "attendees"),
    ("team_calendar", "schedule_event", schedule(attendees=["a"] * 51), INVALID, "attendees"),
    # out-of-enum values (case matters; so does the type)
    ("ticketing", "categorize_ticket", {"ticket_id": 1, "category": "HARDWARE"}, INVALID, "category"),
    ("ticketing", "set_status", {"ticket_id": 1, "status": "reopened"}, INVALID, "status"),
    ("ticketing", "list_tickets", {"status": 0}, INVALID, "status"),
    ("team_calendar", "resolve_conflict", {"event_id": 2, "strategy": "Split"}, INVALID, "strategy"),
    # malformed ISO-8601
    ("team_calendar", "schedule_event", schedule(start="2025-13-01T00:00:00"), INVALID, "start"),
    ("team_calendar", "schedule_event", schedule(start="2025-02-30T10:00:00"), INVALID, "start"),
    ("team_calendar", "schedule_event", schedule(start="2025-03-05 10:00:00"), INVALID, "start"),
    ("team_calendar", "schedule_event", schedule(start="2025-03-05T10:00:00+01:00"), INVALID, "start"),
    ("team_calendar", "schedule_event", schedule(start="2025-03-05"), INVALID, "start"),
    ("team_calendar", "schedule_event", schedule(end="2025-03-05T25:00:00"), INVALID, "end"),
    ("team_calendar", "schedule_event", schedule(end=20250305), INVALID, "end"),
    ("team_calendar", "find_availability", {"calendar_id": "alice", "day": "2025-3-3"}, INVALID, "day"),
    ("team_calendar", "find_availability", {"calendar_id": "alice", "day": OK_DATETIME}, INVALID, "day"),
    (
        "team_calendar",
        "create_calendar",
        {"calendar_id": "zed", "owner": "Z", "work_start": "24:00:00"},
        INVALID,
        "work_start",
    ),
    (
        "team_calendar",
        "resolve_conflict",
        {"event_id": 2, "strategy": "split", "split_at": "soon"},
        INVALID,
        "split_at",
    ),
    # patterns, item limits
    ("team_calendar", "create_calendar", {"calendar_id": "Bad Id", "owner": "Z"}, INVALID, "calendar_id"),
    ("team_calendar", "create_calendar", {"calendar_id": "zed\n", "owner": "Z"}, INVALID, "calendar_id"),
    # extra and missing parameters
    ("ticketing", "whoami", {"verbose": True}, INVALID, "verbose"),
    ("ticketing", "get_ticket", {"ticket_id": 1, "ticketId": 1}, INVALID, "ticketId"),
    ("ticketing", "get_ticket", {}, INVALID, "ticket_id"),
    ("ticketing", "get_ticket", None, INVALID, "ticket_id"),
    ("team_calendar", "schedule_event", {"calendar_id": "alice", "title": "t", "start": OK_DATETIME}, INVALID, "end"),
    # arguments that are not an object at all
    ("ticketing", "get_ticket", [1], INVALID, None),
    ("ticketing", "get_ticket", "ticket_id=1", INVALID, None),
    ("ticketing", "get_ticket", 1, INVALID, None),
    ("team_calendar", "list_events", [["calendar_id", "alice"]], INVALID, None),
    # unknown tools
    ("ticketing", "delete_everything", {}, "not_found", None),
    ("ticketing", "_audit", {"action": "x", "entity": "y", "detail": "z"}, "not_found", None),
    ("ticketing", "__init__", {}, "not_found", None),
    ("team_calendar", "", {}, "not_found", None),
]
SCENARIO = {"ticketing": BUSY, "team_calendar": "team_week"}
PACKAGES: dict[str, ModuleType] = {"ticketing": ticketing, "team_calendar": team_calendar}


def hostile_id(case: tuple[str, str, Any, str, str | None]) -> str:
    package, tool, args, _, field = case
    return f"{package}.{tool}:{field or type(args).__name__}"


@pytest.mark.parametrize("case", HOSTILE, ids=[hostile_id(c) for c in HOSTILE])
def test_hostile_arguments_are_refused_and_change_nothing(case: tuple[str, str, Any, str, str | None]) -> None:
    package, tool, args, kind, field = case
    env = PACKAGES[package].Environment(SCENARIO[package])
    before = env.state_json()
    result = env.call(tool, args)
    assert set(result) == {"error"}, result
    error = result["error"]
    assert error["kind"] == kind, error
    assert isinstance(error["message"], str) and error["message"]
    json.dumps(result, allow_nan=False)  # the refusal itself is plain JSON
    if field is not None:
        assert error["field"] == field, error
        if kind == INVALID:
            assert f"`{field.split('[')[0]}" in error["message"], error
    elif kind == INVALID:
        assert "JSON object" in error["message"]
        assert error["allowed"] == [p.name for p in PACKAGES[package].TOOL_SPECS[tool].params]
    else:
        assert error["allowed"] == sorted(PACKAGES[package].TOOL_SPECS)
    assert env.state_json() == before


def test_enum_refusals_list_the_members() -> None:
    env = ticketing.Environment(BUSY)
    error = env.call("set_status", {"ticket_id": 1, "status": "reopened"})["error"]
    assert error["allowed"] == enum_members(ticketing, "set_status", "status")
    assert error["allowed"][:2] == ["open", "in_progress"]
    calendar = team_calendar.Environment("team_week")
    error = calendar.call("resolve_conflict", {"event_id": 2, "strategy": "Split"})["error"]
    assert error["allowed"] == ["reschedule", "cancel", "override", "split"]


def test_limit_refusals_name_the_rule() -> None:
    error = ticketing.Environment(BUSY).call("create_ticket", {"title": "t", "priority": 9})["error"]
    assert (error["field"], error["rule"], error["limit"]) == ("priority", "max", 5)


def test_valid_values_at_the_edges_are_accepted() -> None:
    env = team_calendar.Environment("team_week")
    ok = env.call("schedule_event", schedule(start="2024-02-29T23:59:59", end="2024-03-01T00:00:00", attendees=[]))
    assert succeeded(ok) and ok["start"] == "2024-02-29T23:59:59"
    ticket_env = ticketing.Environment(SIGNED_IN)
    created = ticket_env.call("create_ticket", {"title": "x" * 120, "priority": 5})
    assert created["title"] == "x" * 120 and created["priority"] == 5


# --------------------------------------------------------------------------- internal errors

SECRET = "/srv/secret/envc/credentials.py"


def raise_after(original: Callable[..., Any]) -> Callable[..., Any]:
    """Do the real work (so state has changed), then fail like a bug would."""

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)
        raise KeyError(SECRET)

    return wrapper


def assert_generic_internal_error(result: Any, module: ModuleType) -> None:
    assert result == module.environment.INTERNAL_ERROR
    text = json.dumps(result)
    for leak in (SECRET, "KeyError", "Traceback", "File ", ".py", "line "):
        assert leak not in text


TICKETING_WRITES = [
    (SIGNED_IN, "create_ticket", {"title": "Printer jams", "priority": 4}),
    (BUSY, "update_ticket", {"ticket_id": ticket_with("open"), "title": "New", "description": "d", "priority": 5}),
    (BUSY, "assign_ticket", {"ticket_id": ticket_with("open"), "assignee": WORLD["agents"][-1]}),
    (BUSY, "set_status", {"ticket_id": ticket_with("open"), "status": "in_progress"}),
    (BUSY, "resolve_ticket", {"ticket_id": ticket_with("in_progress"), "resolution": "Replaced"}),
    (BUSY, "close_ticket", {"ticket_id": ticket_with("resolved")}),
    (None, "login", {"username": "alice", "password": WORLD["users"]["alice"]}),
    (SIGNED_IN, "logout", {}),
]


@pytest.mark.parametrize(("scenario", "tool", "args"), TICKETING_WRITES, ids=[t for _, t, _ in TICKETING_WRITES])
def test_internal_error_mid_call_rolls_back(
    scenario: str | None, tool: str, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = ticketing.Environment(scenario)
    assert succeeded(env.fork().call(tool, args)), "the call must succeed without the fault"
    before = env.state_json()
    # `_audit` runs after every change of these tools: fail right after it has appended.
    monkeypatch.setattr(ticketing.Environment, "_audit", raise_after(ticketing.Environment._audit))
    assert_generic_internal_error(env.call(tool, args), ticketing)
    assert env.state_json() == before
    monkeypatch.undo()
    assert succeeded(env.call(tool, args)), "the session stays usable after the rollback"


CALENDAR_WRITES = [
    ("empty_office", "schedule_event", schedule(title="Planning", attendees=["alice"])),
    ("team_week", "cancel_event", {"event_id": 1}),
    ("team_week", "resolve_conflict", {"event_id": 2, "strategy": "split", "split_at": "2025-03-03T11:00:00"}),
    ("team_week", "resolve_conflict", {"event_id": 2, "strategy": "override"}),
    (
        "team_week",
        "resolve_conflict",
        {"event_id": 3, "strategy": "reschedule", "new_start": "2025-03-03T14:00:00", "new_end": "2025-03-03T14:30:00"},
    ),
]


@pytest.mark.parametrize(("scenario", "tool", "args"), CALENDAR_WRITES, ids=[t for _, t, _ in CALENDAR_WRITES])
def test_internal_error_after_conflict_refresh_rolls_back(
    scenario: str, tool: str, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = team_calendar.Environment(scenario)
    probe = env.fork()
    assert succeeded(probe.call(tool, args)) and probe.state_json() != env.state_json()
    before = env.state_json()
    cls = team_calendar.Environment
    monkeypatch.setattr(cls, "_refresh_conflicts", raise_after(cls._refresh_conflicts))
    assert_generic_internal_error(env.call(tool, args), team_calendar)
    assert env.state_json() == before


def test_internal_error_in_a_read_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    env = ticketing.Environment(BUSY)
    before = env.state_json()

    def broken(self: Any, ticket_id: int) -> Any:
        raise KeyError(SECRET)

    monkeypatch.setattr(ticketing.Environment, "_find_ticket", broken)
    assert_generic_internal_error(env.call("get_ticket", {"ticket_id": 1}), ticketing)
    assert env.state_json() == before


def test_internal_error_result_is_a_fresh_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Any) -> Any:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(ticketing.Environment, "whoami", broken)
    env = ticketing.Environment()
    first = env.call("whoami", {})
    first["error"]["message"] = "changed by the caller"
    assert_generic_internal_error(env.call("whoami", {}), ticketing)


# --------------------------------------------------------------------------- domain errors


def error_of(env: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    before = env.state_json()
    result = env.call(tool, args)
    assert env.state_json() == before
    assert set(result) == {"error"}, result
    error: dict[str, Any] = result["error"]
    return error


def test_domain_errors_name_entity_field_current_and_allowed() -> None:
    env = ticketing.Environment(BUSY)
    missing = error_of(env, "get_ticket", {"ticket_id": 99})
    assert missing == {
        "kind": "not_found",
        "message": "ticket 99 does not exist",
        "entity": "ticket",
        "field": "ticket_id",
        "allowed": sorted(ticket["id"] for ticket in BUSY_TICKETS.values())[:20],  # the first 20 ids of 40
    }
    moved_back = error_of(env, "set_status", {"ticket_id": ticket_with("in_progress"), "status": "open"})
    assert moved_back["kind"] == "invalid_state" and moved_back["entity"]
    assert (moved_back["field"], moved_back["current"], moved_back["allowed"]) == ("status", "in_progress", ["closed"])
    outsider = next(user for user in WORLD["users"] if user not in WORLD["agents"])
    agent = error_of(env, "assign_ticket", {"ticket_id": ticket_with("open"), "assignee": outsider})
    assert (agent["kind"], agent["entity"], agent["field"], agent["allowed"]) == (
        "not_found",
        "agent",
        "assignee",
        WORLD["agents"],
    )
    closed = ticket_with("resolved")
    env.call("close_ticket", {"ticket_id": closed})
    again = error_of(env, "close_ticket", {"ticket_id": closed})
    assert (again["kind"], again["field"], again["current"]) == ("invalid_state", "status", "closed")
    user = error_of(ticketing.Environment(), "login", {"username": "zed", "password": "x"})
    assert (user["entity"], user["field"], user["allowed"]) == ("user", "username", sorted(WORLD["users"]))
    session = error_of(ticketing.Environment(), "create_ticket", {"title": "t"})
    assert session["kind"] == "unauthenticated" and "login" in session["message"]


def test_calendar_domain_errors_name_entity_field_current_and_allowed() -> None:
    env = team_calendar.Environment("team_week")
    override = error_of(env, "resolve_conflict", {"event_id": 3, "strategy": "override"})
    assert (override["kind"], override["entity"], override["field"], override["current"], override["allowed"]) == (
        "conflict",
        "event",
        "priority",
        2,
        [2],
    )
    missing = error_of(env, "cancel_event", {"event_id": 99})
    assert (missing["kind"], missing["entity"], missing["field"], missing["allowed"]) == (
        "not_found",
        "event",
        "event_id",
        [1, 2, 3, 4],
    )
    calendar = error_of(env, "list_conflicts", {"calendar_id": "nobody"})
    assert calendar["allowed"] == ["alice", "room_a"]
    backwards = error_of(env, "schedule_event", schedule(end="2025-03-05T09:00:00"))
    assert (backwards["kind"], backwards["field"], backwards["current"]) == (INVALID, "end", OK_DATETIME)


# --------------------------------------------------------------------------- state, snapshots


def all_states() -> Iterator[tuple[ModuleType, Any]]:
    for module in (ticketing, team_calendar):
        for scenario in [None, *sorted(module.SCENARIOS)]:
            yield module, module.Environment(scenario)


def test_state_is_canonical_detached_json() -> None:
    for _, env in all_states():
        state = env.state()
        text = env.state_json()
        assert json.loads(text) == state
        assert text == json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        json.dumps(state, allow_nan=False)
        assert all(isinstance(key, str) for key in state)
        state.clear()
        assert env.state_json() == text, "state() must be a detached copy"


def test_equal_states_give_equal_text() -> None:
    for module, env in all_states():
        state = env.state()
        reordered = {key: state[key] for key in reversed(list(state))}
        if "tickets" in reordered:
            reordered["tickets"] = dict(reversed(list(reordered["tickets"].items())))
        rebuilt = module.Environment(reordered)
        assert rebuilt.state_json() == env.state_json()
        assert rebuilt.state() == state


def test_results_are_detached_from_state() -> None:
    env = ticketing.Environment(BUSY)
    before = env.state_json()
    ticket = env.call("get_ticket", {"ticket_id": 1})
    ticket["title"] = "changed by the caller"
    listed = env.call("list_tickets", {})
    listed[0]["status"] = "closed"
    listed.clear()
    assert env.state_json() == before
    assert env.call("get_ticket", {"ticket_id": 1})["title"] == BUSY_TICKETS["1"]["title"]


def test_snapshot_restore_and_fork_are_independent() -> None:
    env = ticketing.Environment(BUSY)
    start = env.state_json()
    snapshot = env.snapshot()
    fork = env.fork()
    env.call("update_ticket", {"ticket_id": 1, "title": "Changed in env"})
    assert json.dumps(ticketing.environment.to_json(snapshot), sort_keys=True, separators=(",", ":")) == start
    assert fork.state_json() == start
    fork.call("close_ticket", {"ticket_id": 1})
    assert env.state()["tickets"]["1"]["status"] == BUSY_TICKETS["1"]["status"] != "closed"
    snapshot["tickets"][1]["title"] = "Changed in the snapshot"
    snapshot["audit_log"].append(dict(env.snapshot()["audit_log"][0]))
    assert env.state()["tickets"]["1"]["title"] == "Changed in env"
    env.restore(snapshot)
    assert env.state()["tickets"]["1"]["title"] == "Changed in the snapshot"
    env.call("update_ticket", {"ticket_id": 1, "title": "After restore"})
    assert snapshot["tickets"][1]["title"] == "Changed in the snapshot", "restore must copy"
    assert len(snapshot["audit_log"]) == 1


def test_calendar_fork_keeps_nested_lists_apart() -> None:
    """A fork's calls never show in its parent (forks share containers, journaled; changing
    `view()` by hand is outside that contract, docs/generated-package.md)."""
    env = team_calendar.Environment("team_week")
    fork = env.fork()
    fork.call("resolve_conflict", {"event_id": 2, "strategy": "split", "split_at": "2025-03-03T11:00:00"})
    assert env.state()["events"][1]["attendees"] == ["alice", "bob"]
    assert len(env.state()["events"]) == 4 and len(fork.state()["events"]) == 5


def test_scenarios_do_not_leak_between_sessions() -> None:
    first = ticketing.Environment(BUSY)
    first.view()["tickets"][1]["title"] = "mutated through view()"
    first.call("close_ticket", {"ticket_id": 2})
    assert ticketing.Environment(BUSY).state()["tickets"] == BUSY_TICKETS
    assert ticketing.DEFAULT_STATE["tickets"] == {} and ticketing.DEFAULT_STATE["audit_log"] == []


def test_unknown_scenario_is_refused() -> None:
    with pytest.raises(ticketing.ScenarioError):
        ticketing.Environment("no_such_scenario")
    with pytest.raises(ticketing.ScenarioError):
        ticketing.Environment({"no_such_field": 1})
    with pytest.raises(ticketing.ScenarioError):
        ticketing.Environment({"next_ticket_id": "seven"})


# --------------------------------------------------------------------------- sessions


def ticket_script(store: Any, session: str, count: int) -> None:
    for index in range(count):
        result = store.call(session, "create_ticket", {"title": f"{session} #{index}", "priority": 1 + index % 5})
        assert succeeded(result), result
    store.call(session, "update_ticket", {"ticket_id": 1, "priority": 5})


def run_threads(target: Callable[[int], None], count: int) -> None:
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            target(index)
        except BaseException as error:  # collected and re-raised in the test thread
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_many_sessions_on_threads_stay_apart() -> None:
    store = ticketing.SessionStore()
    reference = ticketing.SessionStore()
    reference.open("ref", SIGNED_IN)
    ticket_script(reference, "ref", 20)

    def work(index: int) -> None:
        session = f"s{index}"
        store.open(session, SIGNED_IN)
        ticket_script(store, session, 20)

    run_threads(work, 16)
    assert store.ids() == sorted(f"s{i}" for i in range(16))
    expected = reference.state("ref")
    for session in store.ids():
        state = store.state(session)
        titles = {t["title"].split(" #")[0] for t in state["tickets"].values()}
        assert titles == {session}
        assert json.dumps(state).replace(f'"{session} #', '"ref #') == json.dumps(expected)


def test_calls_on_one_session_are_serialised() -> None:
    store = ticketing.SessionStore()
    store.open("shared", SIGNED_IN)
    first = store.state("shared")["next_ticket_id"]
    run_threads(lambda index: ticket_script(store, "shared", 25), 8)
    state = store.state("shared")
    assert state["next_ticket_id"] == first + 200
    assert sorted(int(k) for k in state["tickets"]) == list(range(first, first + 200))
    assert [entry["seq"] for entry in state["audit_log"]] == list(range(1, len(state["audit_log"]) + 1))


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    store = team_calendar.SessionStore()
    store.open("week", "team_week")
    store.open("empty", "empty_office")
    store.open("blank")
    store.call("week", "resolve_conflict", {"event_id": 2, "strategy": "split", "split_at": "2025-03-03T11:00:00"})
    store.call("empty", "schedule_event", schedule(title="Ünïcödé ✓", attendees=["ß"]))
    store.fork("week", "week.copy")
    store.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{s}.json" for s in store.ids())
    loaded = team_calendar.SessionStore()
    loaded.load(tmp_path)
    assert loaded.ids() == store.ids()
    for session in store.ids():
        assert loaded.state(session) == store.state(session)
    # A loaded session behaves exactly like the original.
    args = {"calendar_id": "alice", "day": "2025-03-03"}
    assert loaded.call("week", "find_availability", args) == store.call("week", "find_availability", args)
    ticket_store = ticketing.SessionStore()
    ticket_store.open("t", BUSY)
    ticket_store.call("t", "close_ticket", {"ticket_id": 1})
    ticket_store.save(tmp_path / "tickets")
    reloaded = ticketing.SessionStore()
    reloaded.load(tmp_path / "tickets")
    assert reloaded.state("t") == ticket_store.state("t")
    assert reloaded.call("t", "get_ticket", {"ticket_id": 1})["status"] == "closed"


@pytest.mark.parametrize(
    "session_id", ["", "../x", "..", ".hidden", "a/b", "a\\b", "x" * 129, "sp ace", "nul\x00", "é"]
)
def test_invalid_session_ids_are_refused(session_id: str, tmp_path: Path) -> None:
    store = ticketing.SessionStore()
    with pytest.raises(ticketing.SessionError):
        store.open(session_id)
    store.open("source")
    with pytest.raises(ticketing.SessionError):
        store.fork("source", session_id)
    assert store.ids() == ["source"]
    store.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["source.json"]


def test_session_misuse_is_refused() -> None:
    store = ticketing.SessionStore()
    store.open("one")
    with pytest.raises(ticketing.SessionError):
        store.open("one")
    with pytest.raises(ticketing.SessionError):
        store.call("two", "whoami", {})
    with pytest.raises(ticketing.SessionError):
        store.close("two")
    with pytest.raises(ticketing.ScenarioError):
        store.open("three", "no_such_scenario")
    assert store.ids() == ["one"]
    store.close("one")
    assert store.ids() == []


@pytest.mark.parametrize(
    "content",
    [
        "{bad json",
        '{"tickets": 5}',
        '{"no_such_field": 1}',
        '{"clock": "2025-13-01T00:00:00"}',
        '{"tickets": {"x": {}}}',
        '{"next_ticket_id": true}',
        "\udcff",
    ],
)
def test_a_corrupt_saved_file_refuses_the_whole_load(content: str, tmp_path: Path) -> None:
    store = ticketing.SessionStore()
    store.open("a", BUSY)
    store.open("z", SIGNED_IN)
    store.save(tmp_path)
    (tmp_path / "m.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    target = ticketing.SessionStore()
    target.open("existing")
    with pytest.raises(ticketing.SessionError, match="'m'"):
        target.load(tmp_path)
    assert target.ids() == ["existing"], "a refused load adds no session at all"


def test_load_refuses_sessions_already_open(tmp_path: Path) -> None:
    store = ticketing.SessionStore()
    store.open("a")
    store.open("b")
    store.save(tmp_path)
    target = ticketing.SessionStore()
    target.open("b", BUSY)
    with pytest.raises(ticketing.SessionError, match="already open"):
        target.load(tmp_path)
    assert target.ids() == ["b"]
    assert target.state("b")["tickets"] == BUSY_TICKETS


def test_save_writes_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ticketing.SessionStore()
    store.open("a", BUSY)
    store.save(tmp_path)
    saved = (tmp_path / "a.json").read_bytes()
    store.call("a", "close_ticket", {"ticket_id": 1})

    def failing_replace(source: Any, target: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(ticketing.sessions.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        store.save(tmp_path)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"], "no temporary file is left behind"
    assert (tmp_path / "a.json").read_bytes() == saved, "the old file is intact"
    store.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    assert json.loads((tmp_path / "a.json").read_text(encoding="utf-8")) == store.state("a")


# --------------------------------------------------------------------------- per-tool callers

PACKAGE_NAMES = package_names()
CALLER_EXAMPLES = examples_per_package(2600)
"""200 per package for 13 packages, 57 for 45: the property's total stays bounded."""

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "alice", "open", "closed", "hardware", "2025-03-05T10:00:00", "é", "\ud800", "x" * 130]),
    st.text(max_size=4),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["a", "id"]), st.integers(0, 2), max_size=2),
)


CONFUSING: list[Any] = [
    True,
    False,
    0,
    1,
    1.0,
    -0.0,
    float("nan"),
    float("inf"),
    "1",
    "true",
    "",
    "é",
    "\ud800",
    None,
    [],
    {},
]
"""Values one type test or one limit away from being plain: a bool for an int, an int for
a float, text that is not ASCII or not text, an empty string, a container."""


def plausible(kind: tuple[Any, ...], limits: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values a caller's shortcut should take as they are: the kind's own type, mostly
    within its limits, and the values just outside them."""
    tag = kind[0]
    if tag == "optional":
        return st.none() | plausible(kind[1], limits)
    if tag == "enum":
        return st.sampled_from(list(kind[1]))
    if tag == "bool":
        return st.booleans()
    if tag in ("int", "float"):
        low, high = limits.get("min", -2), limits.get("max", 12)
        numbers = st.integers(int(low) - 1, int(high) + 1)
        return numbers if tag == "int" else numbers.map(float) | st.floats(low - 1, high + 1)
    if tag == "str":
        low, high = limits.get("min_length", 0), limits.get("max_length", 8)
        return st.text(alphabet="abz 1-", min_size=max(0, low - 1), max_size=min(high + 1, 130))
    return HOSTILE_VALUES


def full_path(module: ModuleType, env: Any, tool: str, args: Any) -> Any:
    """What `call` did before the per-tool callers: `check_arguments`, the method, the
    result converter, the error JSON."""
    spec = module.TOOL_SPECS[tool]
    try:
        value = getattr(env, tool)(**module.check_arguments(spec, args))
        return value if spec.result is None else spec.result(value)
    except module.DomainError as error:
        return error.to_json()
    except Exception:
        return module.copy_json(module.INTERNAL_ERROR)


@pytest.mark.parametrize("name", PACKAGE_NAMES)
def test_tool_callers_match_the_full_check(name: str) -> None:
    """`ToolSpec.call` takes a shortcut for plain arguments; on any arguments it must give
    what `check_arguments` + the method + the converter give, and leave the same state."""
    module = __import__(f"{name}.environment", fromlist=["environment"])
    tools = sorted(module.TOOL_SPECS)
    scenarios = [None, *module.SCENARIOS]

    @settings(max_examples=CALLER_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(tools))
        params = module.TOOL_SPECS[tool].params
        probe = data.draw(st.integers(0, len(params)))  # the one parameter given a confusing value
        args: dict[str, Any] = {}
        for index, param in enumerate(params):
            if index == probe:
                args[param.name] = data.draw(st.sampled_from(CONFUSING) | HOSTILE_VALUES)
            elif data.draw(st.integers(0, 9)) < 8:  # the others mostly present, and plain
                args[param.name] = data.draw(plausible(param.kind, dict(param.limits)))
        if data.draw(st.integers(0, 19)) == 0:
            args["unknown"] = 1
        scenario = data.draw(st.sampled_from(scenarios))
        fast, slow = module.Environment(scenario), module.Environment(scenario)
        assert fast.call(tool, args) == full_path(module, slow, tool, args)
        assert fast.state_json() == slow.state_json()

    check()


@pytest.mark.parametrize("name", PACKAGE_NAMES)
def test_tool_callers_match_the_full_check_on_each_confusing_value(name: str) -> None:
    """Every parameter of every tool, one at a time, given each confusing value (and left
    out), the others as in the package's own valid sample call, from the default start.
    Argument checks do not depend on the start state; the property test above draws
    scenarios, so this exhaustive pass keeps to one start and stays linear in the tools."""
    module = __import__(f"{name}.environment", fromlist=["environment"])
    samples = __import__(f"{name}.tests.test_environment", fromlist=["test_environment"]).SAMPLE_ARGUMENTS
    for scenario in [None]:
        for tool, spec in sorted(module.TOOL_SPECS.items()):
            base = dict(samples[tool])
            cases = [base, {**base, "unknown": 1}]
            for param in spec.params:
                cases.append({k: v for k, v in base.items() if k != param.name})
                cases += [{**base, param.name: value} for value in CONFUSING]
            for args in cases:
                fast, slow = module.Environment(scenario), module.Environment(scenario)
                assert fast.call(tool, args) == full_path(module, slow, tool, args), (tool, args)
                assert fast.state_json() == slow.state_json(), (tool, args)
