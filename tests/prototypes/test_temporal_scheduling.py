"""The multi-resource temporal scheduling archetype (paper archetype 6), tested on the
generated `team_calendar` package, the domain built on
`specs/prototypes/temporal_scheduling.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`; every rule of the contract has a test:
calendars with a timezone and working hours; events with ISO-8601 bounds and an integer
priority in one global list; eager pairwise overlap detection on every insert or move,
which marks both events conflicted, only within one calendar, only among live
(non-cancelled) events, over half-open intervals; the four resolution strategies
(reschedule, cancel, override with its cascade over strictly lower priorities, split
with a continuation that inherits the metadata); conflict inspection that lists each
pair once; filtered listing by calendar, status and date prefix; availability found by
a cursor over the day's sorted live events within working hours, with a minimum
duration. Then the team-calendar additions: room booking that refuses double booking,
and an attendee's agenda across calendars. Refused calls change nothing.
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

from team_calendar import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from team_calendar.environment import WORLD  # noqa: E402

TOOLS_JSON = json.loads((package_dir("team_calendar") / "tools.json").read_text())
SPEC = (spec_path("calendar")).read_text()

DAY = "2025-03-03"
STRATEGIES = ["reschedule", "cancel", "override", "split"]


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


def at(hhmm: str, day: str = DAY) -> str:
    return f"{day}T{hhmm}:00"


def schedule(env: Environment, start: str, end: str, calendar: str = "alice", **extra: Any) -> dict[str, Any]:
    args = {"calendar_id": calendar, "title": extra.pop("title", f"{start}-{end}"), "start": at(start), "end": at(end)}
    event: dict[str, Any] = ok(env, "schedule_event", {**args, **extra})
    return event


def statuses(env: Environment) -> dict[int, str]:
    return {e["id"]: e["status"] for e in env.state()["events"]}


def event(env: Environment, event_id: int) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in env.state()["events"] if e["id"] == event_id)
    return found


def office() -> Environment:
    """Two empty calendars: alice (09-17) and bob (07-15)."""
    return Environment("empty_office")


def pairs(env: Environment, calendar: str | None = None) -> list[tuple[int, int]]:
    args = {} if calendar is None else {"calendar_id": calendar}
    return [(c["event_id"], c["other_id"]) for c in ok(env, "list_conflicts", args)]


def overlapping(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a["start"] < b["end"] and b["start"] < a["end"])


def assert_conflicts_are_eager(env: Environment) -> None:
    """The invariant: a live event is conflicted iff it overlaps another live event of its calendar."""
    live = [e for e in env.state()["events"] if e["status"] != "cancelled"]
    for e in live:
        clash = any(o["id"] != e["id"] and o["calendar_id"] == e["calendar_id"] and overlapping(e, o) for o in live)
        assert e["status"] == ("conflicted" if clash else "scheduled"), e


# --------------------------------------------------------------------------- calendars


def test_calendars_carry_a_timezone_and_working_hours() -> None:
    env = office()
    created = ok(
        env,
        "create_calendar",
        {
            "calendar_id": "tokyo_desk",
            "owner": "Kenji",
            "timezone": "Asia/Tokyo",
            "work_start": "08:30:00",
            "work_end": "17:30:00",
        },
    )
    assert created == {
        "id": "tokyo_desk",
        "owner": "Kenji",
        "timezone": "Asia/Tokyo",
        "work_start": "08:30:00",
        "work_end": "17:30:00",
    }
    assert env.state()["calendars"]["tokyo_desk"] == created
    defaults = ok(env, "create_calendar", {"calendar_id": "dave", "owner": "Dave"})
    assert (defaults["timezone"], defaults["work_start"], defaults["work_end"]) == ("UTC", "09:00:00", "17:00:00")


def test_an_unknown_timezone_is_refused_with_the_known_ones() -> None:
    env = office()
    error = refused(
        env,
        "create_calendar",
        {"calendar_id": "mars", "owner": "M", "timezone": "Mars/Olympus"},
        "invalid_argument",
        "unknown timezone Mars/Olympus",
    )
    assert error["field"] == "timezone" and error["allowed"] == WORLD["timezones"]
    refused(env, "create_calendar", {"calendar_id": "cet", "owner": "C", "timezone": "CET"}, "invalid_argument")


@pytest.mark.parametrize(
    ("start", "end"), [("17:00:00", "09:00:00"), ("09:00:00", "09:00:00"), ("22:00:00", "06:00:00")]
)
def test_working_hours_must_end_after_they_start(start: str, end: str) -> None:
    env = office()
    error = refused(
        env,
        "create_calendar",
        {"calendar_id": "night", "owner": "Ops", "work_start": start, "work_end": end},
        "invalid_argument",
        "end after they start",
    )
    assert (error["field"], error["current"]) == ("work_end", start)


def test_calendar_ids_and_times_are_validated() -> None:
    env = office()
    refused(env, "create_calendar", {"calendar_id": "alice", "owner": "A"}, "already_exists", "calendar alice")
    for bad_id in ["x", "Alice", "9lives", "has space", "a" * 32]:
        refused(env, "create_calendar", {"calendar_id": bad_id, "owner": "A"}, "invalid_argument", "pattern")
    refused(env, "create_calendar", {"calendar_id": "zoe", "owner": ""}, "invalid_argument", "min length")
    for bad_time in ["9:00", "09:00", "25:00:00", "09:00:00Z"]:
        refused(
            env,
            "create_calendar",
            {"calendar_id": "zoe", "owner": "Z", "work_start": bad_time},
            "invalid_argument",
            "ISO-8601",
        )
    assert sorted(env.state()["calendars"]) == ["alice", "bob"]


# --------------------------------------------------------------------------- events


def test_events_have_iso_bounds_priority_and_ids_in_one_global_list() -> None:
    env = office()
    first = schedule(env, "10:00", "11:00", title="Planning", priority=5, attendees=["ann"], location="Room 1")
    assert first == {
        "id": 1,
        "calendar_id": "alice",
        "title": "Planning",
        "start": "2025-03-03T10:00:00",
        "end": "2025-03-03T11:00:00",
        "priority": 5,
        "status": "scheduled",
        "attendees": ["ann"],
        "location": "Room 1",
        "continued_from": None,
    }
    second = schedule(env, "10:00", "11:00", calendar="bob")
    assert (second["id"], second["priority"], second["attendees"]) == (2, 3, [])
    assert [e["id"] for e in env.state()["events"]] == [1, 2] and env.state()["next_event_id"] == 3


@pytest.mark.parametrize(
    ("change", "kind", "text"),
    [
        ({"end": at("09:00")}, "invalid_argument", "end after it starts"),
        ({"end": at("10:00")}, "invalid_argument", "end after it starts"),
        ({"start": "2025-03-03 10:00:00"}, "invalid_argument", "ISO-8601 datetime"),
        ({"start": "2025-03-03T10:00"}, "invalid_argument", "ISO-8601 datetime"),
        ({"start": "2025-02-30T10:00:00"}, "invalid_argument", "ISO-8601 datetime"),
        ({"end": "2025-03-03T11:00:00+01:00"}, "invalid_argument", "ISO-8601 datetime"),
        ({"priority": 0}, "invalid_argument", "min 1"),
        ({"priority": 6}, "invalid_argument", "max 5"),
        ({"priority": "high"}, "invalid_argument", "integer"),
        ({"title": ""}, "invalid_argument", "min length"),
        ({"title": "x" * 201}, "invalid_argument", "max length"),
        ({"attendees": ["a"] * 51}, "invalid_argument", "max items"),
        ({"attendees": "ann"}, "invalid_argument", "a list"),
        ({"calendar_id": "zed"}, "not_found", "calendar zed does not exist"),
    ],
)
def test_scheduling_validates_its_arguments(change: dict[str, Any], kind: str, text: str) -> None:
    env = office()
    args = {"calendar_id": "alice", "title": "Planning", "start": at("10:00"), "end": at("11:00"), **change}
    error = refused(env, "schedule_event", args, kind, text)
    if kind == "not_found":
        assert error["allowed"] == ["alice", "bob"]
    schedule(env, "10:00", "11:00")
    assert env.state()["events"][0]["id"] == 1  # the refusal used no id


# --------------------------------------------------------------------------- eager overlap detection


def test_an_overlapping_insert_marks_both_events_conflicted() -> None:
    env = office()
    first = schedule(env, "10:00", "11:00")
    assert first["status"] == "scheduled"
    second = schedule(env, "10:30", "11:30")
    assert second["status"] == "conflicted"
    assert statuses(env) == {1: "conflicted", 2: "conflicted"}
    assert ok(env, "list_conflicts") == [
        {"event_id": 1, "other_id": 2, "overlap_start": at("10:30"), "overlap_end": at("11:00")}
    ]


@pytest.mark.parametrize(
    ("a", "b", "clash"),
    [
        (("10:00", "11:00"), ("11:00", "12:00"), False),  # back to back: half-open
        (("11:00", "12:00"), ("10:00", "11:00"), False),
        (("10:00", "11:00"), ("10:59", "12:00"), True),
        (("10:00", "12:00"), ("10:30", "11:00"), True),  # contained
        (("10:30", "11:00"), ("10:00", "12:00"), True),  # containing
        (("10:00", "11:00"), ("10:00", "11:00"), True),  # identical
        (("10:00", "11:00"), ("09:00", "10:00"), False),
        (("10:00", "11:00"), ("12:00", "13:00"), False),
    ],
)
def test_overlap_is_over_half_open_intervals(a: tuple[str, str], b: tuple[str, str], clash: bool) -> None:
    env = office()
    schedule(env, *a)
    second = schedule(env, *b)
    expected = "conflicted" if clash else "scheduled"
    assert second["status"] == expected and statuses(env) == {1: expected, 2: expected}
    assert pairs(env) == ([(1, 2)] if clash else [])


def test_boundaries_are_compared_to_the_second() -> None:
    env = office()
    ok(
        env,
        "schedule_event",
        {"calendar_id": "alice", "title": "a", "start": at("10:00"), "end": "2025-03-03T11:00:01"},
    )
    second = schedule(env, "11:00", "12:00")
    assert second["status"] == "conflicted"


def test_a_lagging_id_counter_neither_reuses_ids_nor_hides_a_clash() -> None:
    env = Environment(
        {
            "calendars": {"alice": {"id": "alice", "owner": "A"}},
            "events": [{"id": 1, "calendar_id": "alice", "title": "Old", "start": at("10:00"), "end": at("11:00")}],
        }
    )
    result = env.call(
        "schedule_event", {"calendar_id": "alice", "title": "New", "start": at("10:00"), "end": at("11:00")}
    )
    ids = [e["id"] for e in env.state()["events"]]
    assert len(ids) == len(set(ids)), ids  # refused, or given a fresh id ...
    if "error" not in result:
        assert result["status"] == "conflicted" and len(pairs(env)) == 1  # ... and then seen to clash


def test_other_calendars_never_conflict() -> None:
    env = office()
    schedule(env, "10:00", "11:00", calendar="alice")
    other = schedule(env, "10:00", "11:00", calendar="bob")
    assert other["status"] == "scheduled" and statuses(env) == {1: "scheduled", 2: "scheduled"}
    assert pairs(env) == []


def test_cancelled_events_never_conflict() -> None:
    env = office()
    schedule(env, "10:00", "11:00")
    ok(env, "cancel_event", {"event_id": 1})
    fresh = schedule(env, "10:00", "11:00")
    assert fresh["status"] == "scheduled" and statuses(env) == {1: "cancelled", 2: "scheduled"}
    assert pairs(env) == []


def test_a_third_event_marks_every_event_it_overlaps() -> None:
    env = office()
    schedule(env, "09:00", "10:00")
    schedule(env, "11:00", "12:00")
    schedule(env, "13:00", "14:00")
    bridge = schedule(env, "09:30", "11:30")
    assert bridge["status"] == "conflicted"
    assert statuses(env) == {1: "conflicted", 2: "conflicted", 3: "scheduled", 4: "conflicted"}
    assert pairs(env) == [(1, 4), (2, 4)]


def test_cancelling_re_evaluates_the_calendar() -> None:
    env = office()
    schedule(env, "10:00", "11:00")
    schedule(env, "10:30", "11:30")
    schedule(env, "10:45", "12:00")
    assert pairs(env) == [(1, 2), (1, 3), (2, 3)]
    cancelled = ok(env, "cancel_event", {"event_id": 2})
    assert cancelled["status"] == "cancelled"
    assert statuses(env) == {1: "conflicted", 2: "cancelled", 3: "conflicted"}
    ok(env, "cancel_event", {"event_id": 3})
    assert statuses(env) == {1: "scheduled", 2: "cancelled", 3: "cancelled"}
    assert_conflicts_are_eager(env)


def test_list_conflicts_reports_each_pair_once_in_id_order() -> None:
    env = Environment("team_week")
    assert pairs(env) == [(2, 3)]
    schedule(env, "13:30", "14:00", calendar="room_a")
    schedule(env, "11:15", "11:20")
    assert pairs(env) == [(2, 3), (2, 6), (3, 6), (4, 5)]
    assert pairs(env, "room_a") == [(4, 5)]
    assert pairs(env, "alice") == [(2, 3), (2, 6), (3, 6)]
    conflict = ok(env, "list_conflicts", {"calendar_id": "room_a"})[0]
    assert (conflict["overlap_start"], conflict["overlap_end"]) == (at("13:30"), at("14:00"))
    error = refused(env, "list_conflicts", {"calendar_id": "nobody"}, "not_found", "calendar nobody")
    assert error["allowed"] == ["alice", "room_a"]


# --------------------------------------------------------------------------- resolution: common rules


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_only_conflicted_events_can_be_resolved(strategy: str) -> None:
    env = Environment("team_week")
    args = {"strategy": strategy, "new_start": at("14:00"), "new_end": at("15:00"), "split_at": at("09:10")}
    error = refused(env, "resolve_conflict", {"event_id": 1, **args}, "invalid_state", "event 1 is not in conflict")
    assert error["current"] == "scheduled"
    ok(env, "cancel_event", {"event_id": 3})
    error = refused(env, "resolve_conflict", {"event_id": 3, **args}, "invalid_state", "not in conflict")
    assert error["current"] == "cancelled"
    error = refused(env, "resolve_conflict", {"event_id": 99, **args}, "not_found", "event 99 does not exist")
    assert error["allowed"] == [1, 2, 3, 4]


def test_an_unknown_strategy_is_refused_with_the_four() -> None:
    env = Environment("team_week")
    error = refused(env, "resolve_conflict", {"event_id": 2, "strategy": "merge"}, "invalid_argument")
    assert error["allowed"] == STRATEGIES


# --------------------------------------------------------------------------- reschedule


def test_reschedule_needs_both_new_bounds_in_order() -> None:
    env = Environment("team_week")
    for args in [{}, {"new_start": at("14:00")}, {"new_end": at("14:45")}]:
        error = refused(
            env,
            "resolve_conflict",
            {"event_id": 3, "strategy": "reschedule", **args},
            "invalid_argument",
            "new_start and new_end",
        )
        assert error["field"] == "new_start"
    for end in [at("13:00"), at("14:00")]:
        refused(
            env,
            "resolve_conflict",
            {"event_id": 3, "strategy": "reschedule", "new_start": at("14:00"), "new_end": end},
            "invalid_argument",
            "end after it starts",
        )
    refused(
        env,
        "resolve_conflict",
        {"event_id": 3, "strategy": "reschedule", "new_start": "14:00", "new_end": at("14:45")},
        "invalid_argument",
        "ISO-8601",
    )


def test_reschedule_moves_the_event_and_re_detects() -> None:
    env = Environment("team_week")
    moved = ok(
        env,
        "resolve_conflict",
        {"event_id": 3, "strategy": "reschedule", "new_start": at("14:00"), "new_end": at("14:45")},
    )
    assert (moved["start"], moved["end"], moved["status"]) == (at("14:00"), at("14:45"), "scheduled")
    assert statuses(env) == {1: "scheduled", 2: "scheduled", 3: "scheduled", 4: "scheduled"}
    assert pairs(env) == []


def test_rescheduling_into_another_clash_stays_conflicted() -> None:
    env = Environment("team_week")
    moved = ok(
        env,
        "resolve_conflict",
        {"event_id": 3, "strategy": "reschedule", "new_start": at("09:10"), "new_end": at("09:40")},
    )
    assert moved["status"] == "conflicted"
    assert statuses(env) == {1: "conflicted", 2: "scheduled", 3: "conflicted", 4: "scheduled"}
    assert pairs(env) == [(1, 3)]


# --------------------------------------------------------------------------- cancel


def test_cancel_is_terminal() -> None:
    env = Environment("team_week")
    cancelled = ok(env, "resolve_conflict", {"event_id": 3, "strategy": "cancel"})
    assert cancelled["status"] == "cancelled"
    assert statuses(env) == {1: "scheduled", 2: "scheduled", 3: "cancelled", 4: "scheduled"}
    error = refused(env, "cancel_event", {"event_id": 3}, "invalid_state", "event 3 is cancelled")
    assert (error["field"], error["current"]) == ("status", "cancelled")
    refused(env, "resolve_conflict", {"event_id": 3, "strategy": "cancel"}, "invalid_state")
    # an event scheduled on top of the cancelled one does not revive it
    schedule(env, "11:00", "11:45")
    assert event(env, 3)["status"] == "cancelled"
    refused(env, "cancel_event", {"event_id": 77}, "not_found", "event 77")


def test_cancel_event_works_on_any_live_event() -> None:
    env = Environment("team_week")
    assert ok(env, "cancel_event", {"event_id": 1})["status"] == "cancelled"  # a scheduled one
    assert ok(env, "cancel_event", {"event_id": 2})["status"] == "cancelled"  # a conflicted one
    assert statuses(env) == {1: "cancelled", 2: "cancelled", 3: "scheduled", 4: "scheduled"}


# --------------------------------------------------------------------------- override


def test_override_cancels_strictly_lower_priority_clashes_and_promotes() -> None:
    env = Environment("team_week")
    kept = ok(env, "resolve_conflict", {"event_id": 2, "strategy": "override"})
    assert kept["status"] == "scheduled"
    assert statuses(env) == {1: "scheduled", 2: "scheduled", 3: "cancelled", 4: "scheduled"}


def test_override_is_refused_by_an_equal_priority_and_names_it() -> None:
    env = office()
    schedule(env, "10:00", "11:00", priority=3)
    schedule(env, "10:30", "11:30", priority=3)
    error = refused(env, "resolve_conflict", {"event_id": 1, "strategy": "override"}, "conflict", "equal or higher")
    assert (error["field"], error["current"], error["allowed"]) == ("priority", 3, [2])


def test_override_cascades_over_every_lower_clash_or_refuses_them_all() -> None:
    env = office()
    boss = schedule(env, "10:00", "12:00", priority=4, title="Board")
    schedule(env, "09:30", "10:30", priority=1)  # 2
    schedule(env, "11:00", "12:30", priority=3)  # 3
    schedule(env, "12:00", "13:00", priority=2)  # 4: back to back with 1, clashes with 3 only
    blocker = schedule(env, "11:50", "12:10", priority=5)  # 5: higher than the board
    error = refused(
        env, "resolve_conflict", {"event_id": boss["id"], "strategy": "override"}, "conflict", "event 1 (priority 4)"
    )
    assert error["allowed"] == [blocker["id"]]  # only the blocking ones are named
    ok(env, "cancel_event", {"event_id": blocker["id"]})
    ok(env, "resolve_conflict", {"event_id": boss["id"], "strategy": "override"})
    assert statuses(env) == {1: "scheduled", 2: "cancelled", 3: "cancelled", 4: "scheduled", 5: "cancelled"}
    assert_conflicts_are_eager(env)


def test_override_only_reaches_the_same_calendar() -> None:
    env = office()
    schedule(env, "10:00", "11:00", priority=5)
    schedule(env, "10:30", "11:30", priority=1)
    schedule(env, "10:00", "11:00", calendar="bob", priority=1)
    ok(env, "resolve_conflict", {"event_id": 1, "strategy": "override"})
    assert statuses(env) == {1: "scheduled", 2: "cancelled", 3: "scheduled"}


# --------------------------------------------------------------------------- split


def test_split_truncates_and_spawns_a_continuation_that_inherits_everything() -> None:
    env = office()
    original = schedule(env, "10:00", "12:00", title="Offsite", priority=4, attendees=["ann", "bo"], location="Loft")
    schedule(env, "11:00", "11:30", priority=2)
    first = ok(env, "resolve_conflict", {"event_id": original["id"], "strategy": "split", "split_at": at("11:00")})
    assert (first["start"], first["end"], first["status"]) == (at("10:00"), at("11:00"), "scheduled")
    rest = event(env, 3)
    assert rest == {
        "id": 3,
        "calendar_id": "alice",
        "title": "Offsite",
        "start": at("11:00"),
        "end": at("12:00"),
        "priority": 4,
        "status": "conflicted",  # it still overlaps event 2, and says so
        "attendees": ["ann", "bo"],
        "location": "Loft",
        "continued_from": 1,
    }
    assert env.state()["next_event_id"] == 4 and pairs(env) == [(2, 3)]
    live = env.view()["events"]
    assert live[0]["attendees"] is not live[2]["attendees"]  # the continuation's list is its own


@pytest.mark.parametrize(
    ("split_at", "text"),
    [
        (at("10:00"), "inside"),  # the start itself
        (at("11:30"), "inside"),  # the end itself
        (at("09:00"), "inside"),
        (at("12:00"), "inside"),
        (None, "split needs split_at"),
        ("11:00", "ISO-8601"),
    ],
)
def test_the_split_point_must_lie_strictly_inside(split_at: str | None, text: str) -> None:
    env = Environment("team_week")  # event 2 runs 10:00 .. 11:30
    args: dict[str, Any] = {"event_id": 2, "strategy": "split"}
    if split_at is not None:
        args["split_at"] = split_at
    error = refused(env, "resolve_conflict", args, "invalid_argument", text)
    assert error["field"] == "split_at"


def test_splitting_before_the_clash_resolves_the_first_half() -> None:
    env = Environment("team_week")
    ok(env, "resolve_conflict", {"event_id": 2, "strategy": "split", "split_at": at("10:45")})
    assert statuses(env) == {1: "scheduled", 2: "scheduled", 3: "conflicted", 4: "scheduled", 5: "conflicted"}
    assert pairs(env) == [(3, 5)]
    assert event(env, 5)["continued_from"] == 2


# --------------------------------------------------------------------------- listing


def test_listing_filters_by_calendar_status_and_date_prefix_in_start_order() -> None:
    env = Environment("team_week")
    ok(env, "schedule_event", {"calendar_id": "alice", "title": "Early", "start": at("08:00"), "end": at("08:30")})
    ok(
        env,
        "schedule_event",
        {"calendar_id": "alice", "title": "Tue", "start": at("09:00", "2025-03-04"), "end": at("10:00", "2025-03-04")},
    )
    ok(
        env,
        "schedule_event",
        {"calendar_id": "room_a", "title": "April", "start": "2025-04-01T09:00:00", "end": "2025-04-01T10:00:00"},
    )
    ok(env, "cancel_event", {"event_id": 1})

    def titles(**args: Any) -> list[str]:
        return [e["title"] for e in ok(env, "list_events", args)]

    assert titles() == ["Early", "Standup", "Design review", "1:1 with Carol", "Workshop", "Tue", "April"]
    assert titles(calendar_id="room_a") == ["Workshop", "April"]
    assert titles(status="conflicted") == ["Design review", "1:1 with Carol"]
    assert titles(status="cancelled") == ["Standup"]
    assert titles(date_prefix="2025-03") == ["Early", "Standup", "Design review", "1:1 with Carol", "Workshop", "Tue"]
    assert titles(date_prefix="2025-03-04") == ["Tue"]
    assert titles(date_prefix="2025-03-03T1") == ["Design review", "1:1 with Carol", "Workshop"]
    assert titles(calendar_id="alice", status="scheduled", date_prefix="2025-03-03") == ["Early"]
    assert titles(calendar_id="nobody") == []  # a filter, not a lookup
    error = refused(env, "list_events", {"status": "tentative"}, "invalid_argument")
    assert error["allowed"] == ["scheduled", "conflicted", "cancelled"]


# --------------------------------------------------------------------------- availability


def hand_built_day() -> Environment:
    """Calendar `lab` (09:00-17:00) with events stored out of order, two overlapping, one
    inside another, one cancelled, one on another calendar, one the day after, one that
    starts before the window and one that ends after it."""

    def ev(event_id: int, start: str, end: str, calendar: str = "lab", **fields: Any) -> dict[str, Any]:
        return {"id": event_id, "calendar_id": calendar, "title": f"E{event_id}", "start": start, "end": end, **fields}

    return Environment(
        {
            "calendars": {"lab": {"id": "lab", "owner": "Lab"}, "other": {"id": "other", "owner": "O"}},
            "events": [
                ev(6, at("13:00"), at("13:45")),
                ev(1, at("08:00"), at("09:30")),
                ev(3, at("10:15"), at("11:00"), status="conflicted"),
                ev(2, at("10:00"), at("10:20"), status="conflicted"),
                ev(4, at("11:00"), "2025-03-03T11:29:30"),
                ev(5, at("12:00"), at("16:00"), status="cancelled"),
                ev(7, at("14:00"), at("15:00"), calendar="other"),
                ev(8, at("16:40"), at("18:00")),
                ev(9, at("09:00", "2025-03-04"), at("17:00", "2025-03-04")),
                ev(10, at("13:05"), at("13:15"), status="conflicted"),
            ],
            "next_event_id": 11,
        }
    )


def slots(env: Environment, calendar: str, day: str, minimum: int) -> list[tuple[str, str, int]]:
    found = ok(env, "find_availability", {"calendar_id": calendar, "day": day, "min_minutes": minimum})
    return [(s["start"][11:], s["end"][11:], s["minutes"]) for s in found]


@pytest.mark.parametrize(
    ("minimum", "expected"),
    [
        (1, [("09:30:00", "10:00:00", 30), ("11:29:30", "13:00:00", 90), ("13:45:00", "16:40:00", 175)]),
        (30, [("09:30:00", "10:00:00", 30), ("11:29:30", "13:00:00", 90), ("13:45:00", "16:40:00", 175)]),
        (31, [("11:29:30", "13:00:00", 90), ("13:45:00", "16:40:00", 175)]),
        (91, [("13:45:00", "16:40:00", 175)]),
        (175, [("13:45:00", "16:40:00", 175)]),
        (176, []),
    ],
)
def test_availability_on_a_hand_built_day(minimum: int, expected: list[tuple[str, str, int]]) -> None:
    # 08:00-09:30 starts before the window (cursor 09:30); 10:00-10:20 and 10:15-11:00 overlap
    # (the cursor jumps to 11:00); 11:00 is back to back; 13:05-13:15 lies inside 13:00-13:45
    # (the cursor stays at 13:45, it never moves back); 11:29:30 -> 13:00 is
    # 90.5 minutes, counted as 90; the cancelled 12:00-16:00 and the other calendar's
    # 14:00-15:00 are ignored; 16:40-18:00 runs past 17:00, so there is no tail.
    env = hand_built_day()
    before = env.state_json()
    assert slots(env, "lab", DAY, minimum) == expected
    assert env.state_json() == before


def test_availability_of_empty_and_full_days() -> None:
    env = hand_built_day()
    assert slots(env, "lab", "2025-03-05", 30) == [("09:00:00", "17:00:00", 480)]
    assert slots(env, "lab", "2025-03-05", 480) == [("09:00:00", "17:00:00", 480)]
    assert slots(env, "lab", "2025-03-05", 481) == []
    assert slots(env, "lab", "2025-03-04", 1) == []  # booked for the whole window
    assert slots(env, "other", DAY, 30) == [("09:00:00", "14:00:00", 300), ("15:00:00", "17:00:00", 120)]


def test_availability_follows_each_calendars_working_hours() -> None:
    env = office()
    schedule(env, "12:00", "13:00", calendar="bob")
    schedule(env, "12:00", "13:00", calendar="alice")
    assert slots(env, "bob", DAY, 30) == [("07:00:00", "12:00:00", 300), ("13:00:00", "15:00:00", 120)]
    assert slots(env, "alice", DAY, 30) == [("09:00:00", "12:00:00", 180), ("13:00:00", "17:00:00", 240)]


def test_availability_counts_an_event_from_the_day_before() -> None:
    env = office()
    ok(
        env,
        "schedule_event",
        {"calendar_id": "alice", "title": "Night", "start": "2025-03-02T22:00:00", "end": at("10:00")},
    )
    assert slots(env, "alice", DAY, 30) == [("10:00:00", "17:00:00", 420)]


def test_availability_arguments_are_validated() -> None:
    env = Environment("team_week")
    refused(env, "find_availability", {"calendar_id": "nobody", "day": DAY}, "not_found", "calendar nobody")
    refused(
        env, "find_availability", {"calendar_id": "alice", "day": DAY, "min_minutes": 0}, "invalid_argument", "min 1"
    )
    refused(
        env,
        "find_availability",
        {"calendar_id": "alice", "day": DAY, "min_minutes": 1441},
        "invalid_argument",
        "max 1440",
    )
    refused(env, "find_availability", {"calendar_id": "alice", "day": at("09:00")}, "invalid_argument", "ISO-8601 date")
    free = ok(env, "find_availability", {"calendar_id": "alice", "day": DAY})  # min_minutes defaults to 30
    assert [(s["start"], s["minutes"]) for s in free] == [(at("09:15"), 45), (at("11:45"), 315)]


# --------------------------------------------------------------------------- the team-calendar domain


def test_rooms_are_never_double_booked() -> None:
    env = Environment("quiet_friday")
    retro = ok(
        env,
        "book_room",
        {
            "room": "room_b",
            "title": "Retro",
            "start": "2025-03-07T14:00:00",
            "end": "2025-03-07T15:00:00",
            "attendees": ["alice", "bob"],
        },
    )
    assert (retro["id"], retro["calendar_id"], retro["location"], retro["status"]) == (
        38,  # the scenario's 37 events hold ids 1..37
        "room_b",
        "room_b",
        "scheduled",
    )
    for start, end in [("14:30", "15:30"), ("13:00", "14:01"), ("14:00", "15:00"), ("13:00", "16:00")]:
        error = refused(
            env,
            "book_room",
            {"room": "room_b", "title": "Clash", "start": f"2025-03-07T{start}:00", "end": f"2025-03-07T{end}:00"},
            "conflict",
            "room_b is already booked then",
        )
        assert error["allowed"] == [38]
    ok(
        env,
        "book_room",
        {"room": "room_b", "title": "After", "start": "2025-03-07T15:00:00", "end": "2025-03-07T15:30:00"},
    )
    ok(
        env,
        "book_room",
        {"room": "room_b", "title": "Before", "start": "2025-03-07T13:00:00", "end": "2025-03-07T14:00:00"},
    )
    assert pairs(env, "room_b") == []
    ok(env, "cancel_event", {"event_id": 38})
    ok(
        env,
        "book_room",
        {"room": "room_b", "title": "Rebooked", "start": "2025-03-07T14:00:00", "end": "2025-03-07T15:00:00"},
    )


def test_booking_needs_a_bookable_room_with_a_calendar() -> None:
    env = Environment("quiet_friday")
    args = {"title": "x", "start": "2025-03-07T14:30:00", "end": "2025-03-07T15:30:00"}
    error = refused(env, "book_room", {"room": "roof", **args}, "not_found", "roof is not a bookable room")
    assert error["allowed"] == WORLD["rooms"]
    assert WORLD["rooms"] == [
        "room_a",
        "room_b",
        "room_c",
        "room_d",
        "boardroom",
        "training_room",
        "london_1",
        "london_2",
    ]
    refused(env, "book_room", {"room": "bob", **args}, "not_found", "bookable")  # a person's calendar is no room
    refused(env, "book_room", {"room": "room_a", **args}, "invalid_state", "room_a has no calendar yet")
    refused(
        env, "book_room", {**args, "room": "room_b", "end": args["start"]}, "invalid_argument", "end after it starts"
    )
    refused(env, "book_room", {**args, "room": "room_b", "title": ""}, "invalid_argument", "min length")
    ok(env, "create_calendar", {"calendar_id": "room_a", "owner": "Facilities"})
    ok(env, "book_room", {"room": "room_a", **args})


def test_the_agenda_spans_calendars_and_skips_cancelled_events() -> None:
    env = Environment("quiet_friday")
    ok(
        env,
        "book_room",
        {
            "room": "room_b",
            "title": "Retro",
            "start": "2025-03-07T16:30:00",
            "end": "2025-03-07T17:00:00",
            "attendees": ["alice", "bob"],
        },
    )
    ok(
        env,
        "schedule_event",
        {
            "calendar_id": "alice",
            "title": "Lunch",
            "start": "2025-03-07T12:00:00",
            "end": "2025-03-07T13:00:00",
            "attendees": ["alice"],
        },
    )
    ok(
        env,
        "schedule_event",
        {
            "calendar_id": "alice",
            "title": "Monday",
            "start": "2025-03-10T09:00:00",
            "end": "2025-03-10T10:00:00",
            "attendees": ["bob"],
        },
    )
    agenda = ok(env, "attendee_agenda", {"attendee": "bob", "day": "2025-03-07"})
    assert [(e["title"], e["calendar_id"]) for e in agenda] == [("Workshop", "bob"), ("Retro", "room_b")]
    assert [e["title"] for e in ok(env, "attendee_agenda", {"attendee": "alice", "day": "2025-03-07"})] == [
        "Lunch",
        "Retro",
    ]
    ok(env, "cancel_event", {"event_id": 1})
    assert [e["title"] for e in ok(env, "attendee_agenda", {"attendee": "bob", "day": "2025-03-07"})] == ["Retro"]
    assert ok(env, "attendee_agenda", {"attendee": "carol", "day": "2025-03-07"}) == []
    refused(env, "attendee_agenda", {"attendee": "", "day": "2025-03-07"}, "invalid_argument")
    refused(env, "attendee_agenda", {"attendee": "bob", "day": "Friday"}, "invalid_argument", "ISO-8601 date")


# --------------------------------------------------------------------------- schema, tasks, atomicity, determinism


def test_tool_schema_separates_read_and_write_tools() -> None:
    by_name = {t["name"]: t for t in TOOLS_JSON["tools"]}
    reads = {"list_conflicts", "list_events", "find_availability", "attendee_agenda"}
    writes = {"create_calendar", "schedule_event", "cancel_event", "resolve_conflict", "book_room"}
    assert set(by_name) == reads | writes == set(TOOL_SPECS)
    for name in reads:
        assert by_name[name]["modifies_state"] is False and by_name[name]["state_fields_affected"] == [], name
    for name in writes:
        assert by_name[name]["modifies_state"] is True, name
    assert by_name["create_calendar"]["state_fields_affected"] == ["calendars"]
    assert set(by_name["resolve_conflict"]["state_fields_affected"]) == {"events", "next_event_id"}
    assert by_name["resolve_conflict"]["parameters"]["properties"]["strategy"]["enum"] == STRATEGIES
    assert by_name["resolve_conflict"]["parameters"]["required"] == ["event_id", "strategy"]


def test_the_tasks_are_solvable_from_their_scenarios() -> None:
    env = Environment("team_week")
    ok(env, "resolve_conflict", {"event_id": 2, "strategy": "override"})
    assert (event(env, 2)["status"], event(env, 3)["status"]) == ("scheduled", "cancelled")
    wrong = Environment("team_week")
    ok(wrong, "resolve_conflict", {"event_id": 2, "strategy": "cancel"})  # drops the review instead
    assert event(wrong, 2)["status"] == "cancelled"
    env = Environment("quiet_friday")
    ok(
        env,
        "book_room",
        {"room": "room_b", "title": "Team retro", "start": "2025-03-07T16:30:00", "end": "2025-03-07T17:00:00"},
    )
    assert (
        len([e for e in env.state()["events"] if e["calendar_id"] == "room_b" and e["start"] == "2025-03-07T16:30:00"])
        == 1
    )
    # the spec's own tasks' requests (a family's request lines are templates, filled per draw)
    tasks = [b for b in re.split(r"\n(?=\S)", SPEC) if b.startswith("task ")]
    requests = [r for b in tasks for r in re.findall(r'request "([^"]*)"', b)]
    assert len(requests) == 2 and not re.search(r"\bevent \d|\bid\b", requests[0])  # the ids are found by inspection
    assert set(SCENARIOS) == {"team_week", "empty_office", "quiet_friday", "busy_week"}


def _random_call(rng: random.Random, env: Environment) -> tuple[str, dict[str, Any]]:
    """A random call, aimed mostly at events that exist and are conflicted, so that every
    strategy succeeds now and then and fails now and then."""
    hour = rng.randint(7, 17)
    start = f"{DAY}T{hour:02d}:{rng.choice(['00', '30'])}:00"
    end = f"{DAY}T{min(hour + rng.randint(0, 2), 23):02d}:{rng.choice(['00', '15', '45'])}:00"
    events = env.state()["events"]
    conflicted = [e for e in events if e["status"] == "conflicted"]
    target = rng.choice(conflicted or events) if events and rng.random() < 0.85 else None
    event_id = target["id"] if target else 99
    inside = target["start"][:14] + "10:00" if target else start  # 10 minutes past the start hour
    calendar = rng.choice(["alice", "alice", "room_a", "nobody"])
    options: dict[str, dict[str, Any]] = {
        "create_calendar": {"calendar_id": rng.choice(["room_b", "carol", "alice"]), "owner": "X"},
        "schedule_event": {
            "calendar_id": calendar,
            "title": "t",
            "start": start,
            "end": end,
            "priority": rng.randint(1, 5),
        },
        "cancel_event": {"event_id": event_id},
        "list_conflicts": {},
        "resolve_conflict": {
            "event_id": event_id,
            "strategy": rng.choice(STRATEGIES),
            "new_start": start,
            "new_end": end,
            "split_at": rng.choice([start, inside, inside]),
        },
        "list_events": {"calendar_id": calendar},
        "find_availability": {"calendar_id": calendar, "day": DAY, "min_minutes": rng.choice([15, 30, 60])},
        "attendee_agenda": {"attendee": "alice", "day": DAY},
        "book_room": {"room": rng.choice(["room_a", "room_b"]), "title": "b", "start": start, "end": end},
    }
    tool = rng.choice(sorted(options))
    return tool, options[tool]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_conflict_marks_stay_eager_refusals_change_nothing_and_traces_repeat(seed: int) -> None:
    def run() -> list[Any]:
        rng = random.Random(seed)
        env = Environment("team_week")
        trace: list[Any] = []
        refusals = 0
        for _ in range(200):
            tool, args = _random_call(rng, env)
            before = env.state_json()
            result = env.call(tool, args)
            if isinstance(result, dict) and isinstance(result.get("error"), dict):
                refusals += 1
                assert result["error"]["kind"] != "internal", (tool, args, result)
                assert env.state_json() == before, (tool, args, result)
            elif not TOOL_SPECS[tool].writes:
                assert env.state_json() == before, f"read tool {tool} changed the state"
            assert_conflicts_are_eager(env)
            trace.append(result)
        assert refusals > 20
        state = env.state()
        event_ids = [e["id"] for e in state["events"]]
        assert len(event_ids) == len(set(event_ids)) and max(event_ids) < state["next_event_id"]
        assert all(e["start"] < e["end"] for e in state["events"])
        trace.append(env.state_json())
        return trace

    assert run() == run()
