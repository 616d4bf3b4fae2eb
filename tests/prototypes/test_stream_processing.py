"""The fault-tolerant stream processing archetype (paper archetype 9), tested on the
generated `telemetry_bus` package, the domain built on
`specs/prototypes/stream_processing.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`; every rule of the contract has a test:
typed streams with schema contracts that every payload must satisfy; subscriptions with
a delivery mode (push, poll, batch), an exact-equality filter and a lifecycle (create,
change filter, unsubscribe); prioritised publication into an append-only history and
fan-out of the event id to every active matching subscription; acknowledgement as the
only way an event leaves a pending queue (at-least-once redelivery); backpressure as
queue depth; pending inspection and history queries. Refused calls change nothing.
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

from telemetry_bus import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from telemetry_bus.environment import WORLD  # noqa: E402

TOOLS_JSON = json.loads((package_dir("telemetry_bus") / "tools.json").read_text())
SPEC = (spec_path("telemetry_bus")).read_text()

TYPES = {"s": "str", "i": "int", "f": "float", "b": "bool", "l": "list", "m": "map"}
GOOD = {"s": "x", "i": 1, "f": 1.5, "b": True, "l": [1, "a"], "m": {"k": None}}
"""A stream with one field of every schema type, and a payload that satisfies it."""


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


def typed_bus() -> Environment:
    """S0 plus a stream `typed` whose schema uses every type name."""
    env = Environment()
    ok(env, "create_stream", {"name": "typed", "schema": TYPES})
    return env


def reading(device: str, site: str, celsius: float, door_open: bool = False) -> dict[str, Any]:
    return {"device": device, "site": site, "celsius": celsius, "door_open": door_open}


def pending(env: Environment, sub: int) -> list[int]:
    return list(env.state()["subscriptions"][str(sub)]["pending"])


# --------------------------------------------------------------------------- schema contracts


def test_streams_declare_a_schema_of_known_type_names() -> None:
    env = typed_bus()
    stream = env.state()["streams"]["typed"]
    assert stream["schema"] == TYPES and stream["history"] == []
    refused(env, "create_stream", {"name": "typed", "schema": {"x": "int"}}, "already_exists", "already exists")
    error = refused(
        env, "create_stream", {"name": "t2", "schema": {"x": "integer"}}, "invalid_argument", "unknown type"
    )
    assert error["allowed"] == ["str", "int", "float", "bool", "list", "map"]
    refused(env, "create_stream", {"name": "t2", "schema": {"bad name": "int"}}, "invalid_argument", "field name")
    refused(env, "create_stream", {"name": "t2", "schema": {"9lives": "int"}}, "invalid_argument", "field name")
    refused(env, "create_stream", {"name": "t2", "schema": {}}, "invalid_argument")
    refused(env, "create_stream", {"name": "T2 bad", "schema": {"x": "int"}}, "invalid_argument")
    refused(env, "create_stream", {"name": "t2", "schema": {"x": 1}}, "invalid_argument")


@pytest.mark.parametrize("field", sorted(TYPES))
def test_every_payload_field_must_have_its_declared_type(field: str) -> None:
    env = typed_bus()
    for wrong in ["text", 7, 7.5, False, [1], {"a": 1}, None]:
        payload = {**GOOD, field: wrong}
        fits = (type(wrong).__name__, TYPES[field]) in {
            ("str", "str"),
            ("int", "int"),
            ("float", "float"),
            ("bool", "bool"),
            ("list", "list"),
            ("dict", "map"),
            ("int", "float"),
        }
        if fits:
            continue
        error = refused(env, "ingest", {"stream": "typed", "payload": payload}, "invalid_argument", f"field {field}")
        assert error["field"] == field and error["allowed"] == [TYPES[field]]


def test_payload_must_carry_exactly_the_declared_fields() -> None:
    env = typed_bus()
    missing = {k: v for k, v in GOOD.items() if k != "m"}
    error = refused(env, "ingest", {"stream": "typed", "payload": missing}, "invalid_argument", "lacks field m")
    assert error["field"] == "m"
    error = refused(
        env, "ingest", {"stream": "typed", "payload": {**GOOD, "extra": 1}}, "invalid_argument", "no field extra"
    )
    assert sorted(error["allowed"]) == sorted(TYPES)
    refused(env, "ingest", {"stream": "ghost", "payload": GOOD}, "not_found", "stream ghost")
    refused(env, "ingest", {"stream": "typed", "payload": [1, 2]}, "invalid_argument")
    receipt = ok(env, "ingest", {"stream": "typed", "payload": {**GOOD, "f": 2}})
    assert env.state()["events"][str(receipt["event_id"])]["payload"]["f"] == 2


def test_int_satisfies_float_but_not_the_reverse_and_bool_is_not_a_number() -> None:
    env = typed_bus()
    ok(env, "ingest", {"stream": "typed", "payload": {**GOOD, "f": 3}})
    refused(
        env, "ingest", {"stream": "typed", "payload": {**GOOD, "i": 3.0}}, "invalid_argument", "must be int, got float"
    )
    refused(
        env, "ingest", {"stream": "typed", "payload": {**GOOD, "i": True}}, "invalid_argument", "must be int, got bool"
    )
    refused(
        env,
        "ingest",
        {"stream": "typed", "payload": {**GOOD, "f": False}},
        "invalid_argument",
        "must be float, got bool",
    )
    refused(env, "ingest", {"stream": "typed", "payload": {**GOOD, "s": None}}, "invalid_argument", "got null")


# --------------------------------------------------------------------------- publication


def test_publication_appends_to_an_append_only_history_with_offsets_and_tiers() -> None:
    env = typed_bus()
    receipts = [
        ok(env, "ingest", {"stream": "typed", "payload": GOOD}),
        ok(env, "ingest", {"stream": "typed", "payload": GOOD, "priority": "critical"}),
        ok(env, "ingest", {"stream": "typed", "payload": GOOD, "priority": "low"}),
    ]
    assert [r["offset"] for r in receipts] == [0, 1, 2]
    assert [r["priority"] for r in receipts] == ["normal", "critical", "low"]
    ids = [r["event_id"] for r in receipts]
    assert ids == sorted(ids) and len(set(ids)) == 3
    state = env.state()
    assert state["streams"]["typed"]["history"] == ids
    for offset, event_id in enumerate(ids):
        event = state["events"][str(event_id)]
        assert event["offset"] == offset and event["stream"] == "typed"
        assert event["published_at"] == state["clock"]
    refused(env, "ingest", {"stream": "typed", "payload": GOOD, "priority": "urgent"}, "invalid_argument")
    # consuming and acknowledging never touch the history
    sub = ok(env, "subscribe", {"stream": "typed", "consumer": "reader"})
    late = ok(env, "ingest", {"stream": "typed", "payload": GOOD})
    ok(env, "poll", {"subscription_id": sub["id"]})
    ok(env, "acknowledge", {"subscription_id": sub["id"], "event_ids": [late["event_id"]]})
    assert env.state()["streams"]["typed"]["history"] == [*ids, late["event_id"]]
    assert [e["id"] for e in ok(env, "stream_history", {"stream": "typed"})] == [*ids, late["event_id"]]


def test_fan_out_reaches_every_active_matching_subscription_only() -> None:
    env = Environment("cold_chain_incident")
    receipt = ok(env, "ingest", {"stream": "sensor.temperature", "payload": reading("t-301", "warehouse-3", -18.1)})
    event_id = receipt["event_id"]
    assert receipt["queued_for"] == [1, 2]  # warehouse-3 monitor + unfiltered dashboard
    assert receipt["pushed_to"] == [1]  # only the push subscription is handed it at once
    assert event_id in pending(env, 1) and event_id in pending(env, 2)
    assert event_id not in pending(env, 4)  # warehouse-5 filter
    assert event_id not in pending(env, 3)  # other stream
    subs = env.state()["subscriptions"]
    assert subs["1"]["deliveries"][str(event_id)] == 1
    assert str(event_id) not in subs["2"]["deliveries"]  # poll: not handed over yet


def test_late_subscribers_and_unsubscribed_handles_get_nothing_old_or_new() -> None:
    env = Environment("night_shift")
    late = ok(env, "subscribe", {"stream": "sensor.temperature", "consumer": "late"})
    assert late["pending"] == []
    receipt = ok(
        env,
        "ingest",
        {
            "stream": "device.status",
            "payload": {"device": "gw-3", "site": "warehouse-3", "online": True, "battery_pct": 90},
        },
    )
    assert receipt["queued_for"] == []  # the only subscription on device.status is unsubscribed
    assert pending(env, 4) == [6, 7]


# --------------------------------------------------------------------------- subscriptions


def test_subscriptions_choose_a_delivery_mode() -> None:
    env = Environment()
    push = ok(env, "subscribe", {"stream": "alerts", "consumer": "pager", "mode": "push"})
    poll = ok(env, "subscribe", {"stream": "alerts", "consumer": "board"})
    batch = ok(env, "subscribe", {"stream": "alerts", "consumer": "lake", "mode": "batch", "batch_size": 2})
    assert (push["mode"], poll["mode"], batch["mode"]) == ("push", "poll", "batch")
    refused(env, "subscribe", {"stream": "alerts", "consumer": "x", "mode": "stream"}, "invalid_argument")
    refused(
        env,
        "subscribe",
        {"stream": "alerts", "consumer": "x", "mode": "poll", "batch_size": 3},
        "invalid_argument",
        "batch mode only",
    )
    refused(
        env, "subscribe", {"stream": "alerts", "consumer": "x", "mode": "batch", "batch_size": 0}, "invalid_argument"
    )
    alert = ok(env, "raise_alert", {"device": "gw-3", "message": "test"})
    assert alert["pushed_to"] == [push["id"]]
    # batch hands over only full batches
    waiting = ok(env, "poll", {"subscription_id": batch["id"]})
    assert waiting["ready"] is False and waiting["events"] == [] and waiting["depth"] == 1
    ok(env, "raise_alert", {"device": "gw-3", "message": "test 2"})
    full = ok(env, "poll", {"subscription_id": batch["id"], "max_events": 1})
    assert full["ready"] is True and len(full["events"]) == 2
    polled = ok(env, "poll", {"subscription_id": poll["id"], "max_events": 1})
    assert len(polled["events"]) == 1 and polled["depth"] == 2


def test_subscription_filters_are_validated_against_the_schema() -> None:
    env = Environment("night_shift")
    args = {"stream": "sensor.temperature", "consumer": "probe"}
    refused(env, "subscribe", {**args, "filter": {"zone": "a"}}, "invalid_argument", "no field zone")
    refused(env, "subscribe", {**args, "filter": {"celsius": "cold"}}, "invalid_argument", "must be float, got str")
    refused(env, "subscribe", {**args, "filter": {"door_open": 1}}, "invalid_argument", "must be bool, got int")
    refused(env, "subscribe", {**args, "filter": {"site": None}}, "invalid_argument", "got null")
    refused(env, "subscribe", {**args, "stream": "sensor.nope"}, "not_found", "sensor.nope")
    error = refused(
        env,
        "subscribe",
        {"stream": "sensor.temperature", "consumer": "ops-dashboard"},
        "already_exists",
        "already has active subscription 1",
    )
    assert error["current"] == 1


@pytest.mark.parametrize(
    ("filter_", "payload_site", "payload_celsius", "door", "matched"),
    [
        ({}, "warehouse-3", -18.0, False, True),
        ({"site": "warehouse-3"}, "warehouse-3", -18.0, False, True),
        ({"site": "warehouse-3"}, "Warehouse-3", -18.0, False, False),
        ({"site": "warehouse-3"}, "warehouse-3 ", -18.0, False, False),
        ({"celsius": -18}, "warehouse-3", -18.0, False, True),
        ({"celsius": -18.0}, "warehouse-3", -18, False, True),
        ({"celsius": -18.5}, "warehouse-3", -18.0, False, False),
        ({"door_open": True}, "warehouse-3", -18.0, True, True),
        ({"door_open": False}, "warehouse-3", -18.0, True, False),
        ({"site": "warehouse-3", "door_open": True}, "warehouse-3", -18.0, False, False),
        ({"site": "warehouse-3", "door_open": True}, "warehouse-3", -18.0, True, True),
    ],
)
def test_filters_are_exact_equality_over_payload_fields(
    filter_: dict[str, Any], payload_site: str, payload_celsius: float, door: bool, matched: bool
) -> None:
    env = Environment()
    ok(env, "create_stream", {"name": "probe", "schema": {"site": "str", "celsius": "float", "door_open": "bool"}})
    sub = ok(env, "subscribe", {"stream": "probe", "consumer": "c", "filter": filter_})
    receipt = ok(
        env,
        "ingest",
        {"stream": "probe", "payload": {"site": payload_site, "celsius": payload_celsius, "door_open": door}},
    )
    assert (sub["id"] in receipt["queued_for"]) is matched


def test_list_and_map_values_match_only_when_equal_as_json() -> None:
    env = typed_bus()
    by_list = ok(env, "subscribe", {"stream": "typed", "consumer": "l", "filter": {"l": [1, "a"]}})
    by_map = ok(env, "subscribe", {"stream": "typed", "consumer": "m", "filter": {"m": {"k": None}}})
    by_bool = ok(env, "subscribe", {"stream": "typed", "consumer": "b", "filter": {"b": True}})
    first = ok(env, "ingest", {"stream": "typed", "payload": GOOD})
    assert first["queued_for"] == [by_list["id"], by_map["id"], by_bool["id"]]
    second = ok(env, "ingest", {"stream": "typed", "payload": {**GOOD, "l": ["a", 1], "m": {"k": 0}, "b": False}})
    assert second["queued_for"] == []


def test_changing_a_filter_affects_later_events_only() -> None:
    env = Environment("cold_chain_incident")
    before = pending(env, 1)
    ok(env, "change_filter", {"subscription_id": 1, "filter": {"site": "warehouse-5"}})
    assert pending(env, 1) == before  # already queued events stay until acknowledged
    wh3 = ok(env, "ingest", {"stream": "sensor.temperature", "payload": reading("t-301", "warehouse-3", -18.0)})
    wh5 = ok(env, "ingest", {"stream": "sensor.temperature", "payload": reading("t-501", "warehouse-5", -18.0)})
    assert 1 not in wh3["queued_for"] and 1 in wh5["queued_for"]
    refused(env, "change_filter", {"subscription_id": 1, "filter": {"site": 5}}, "invalid_argument", "must be str")
    refused(env, "change_filter", {"subscription_id": 99, "filter": {}}, "not_found", "subscription 99")
    ok(env, "unsubscribe", {"subscription_id": 1})
    refused(env, "change_filter", {"subscription_id": 1, "filter": {}}, "invalid_state", "unsubscribed")


def test_unsubscribing_stops_delivery_but_keeps_the_queue_for_acknowledgement() -> None:
    env = Environment("cold_chain_incident")
    sub = ok(env, "unsubscribe", {"subscription_id": 1})
    assert sub["status"] == "unsubscribed" and sub["pending"] == [3, 4, 5, 6, 8]
    receipt = ok(env, "ingest", {"stream": "sensor.temperature", "payload": reading("t-302", "warehouse-3", -17.0)})
    assert 1 not in receipt["queued_for"]
    refused(env, "unsubscribe", {"subscription_id": 1}, "invalid_state", "unsubscribed")
    refused(env, "poll", {"subscription_id": 1}, "invalid_state", "unsubscribed")
    assert ok(env, "pending_events", {"subscription_id": 1})["status"] == "unsubscribed"
    ok(env, "acknowledge", {"subscription_id": 1, "event_ids": [3, 4, 5, 6, 8]})
    assert pending(env, 1) == []
    active = [s["id"] for s in ok(env, "list_subscriptions", {})]
    everything = [s["id"] for s in ok(env, "list_subscriptions", {"include_unsubscribed": True})]
    assert 1 not in active and 1 in everything
    again = ok(env, "subscribe", {"stream": "sensor.temperature", "consumer": "cold-chain-monitor", "mode": "push"})
    assert again["id"] == 31 and again["pending"] == []


# --------------------------------------------------------------------------- acknowledgement and redelivery


def test_only_acknowledgement_removes_events_from_a_pending_queue() -> None:
    env = Environment("cold_chain_incident")
    queue = pending(env, 2)
    for tool, args in [
        ("poll", {"subscription_id": 2, "max_events": 100}),
        ("poll", {"subscription_id": 2}),
        ("pending_events", {"subscription_id": 2}),
        ("list_subscriptions", {}),
        ("stream_history", {"stream": "sensor.temperature"}),
        ("lagging_consumers", {}),
        ("change_filter", {"subscription_id": 2, "filter": {"site": "dock-1"}}),
        ("ingest", {"stream": "sensor.temperature", "payload": reading("t-301", "warehouse-3", -18.0)}),
    ]:
        ok(env, tool, args)
        assert pending(env, 2)[: len(queue)] == queue, tool
    receipt = ok(env, "acknowledge", {"subscription_id": 2, "event_ids": [6, 7]})
    assert receipt == {"subscription_id": 2, "acknowledged": [6, 7], "depth": 2}
    assert pending(env, 2) == [5, 8]
    assert env.state()["subscriptions"]["2"]["acknowledged"] == 6


def test_unacknowledged_events_are_redelivered_at_least_once() -> None:
    env = Environment("cold_chain_incident")
    attempts = []
    for _ in range(3):
        delivery = ok(env, "poll", {"subscription_id": 2, "max_events": 10})
        attempts.append({d["event"]["id"]: d["attempt"] for d in delivery["events"]})
    assert attempts[0] == {6: 1, 7: 1, 8: 1, 5: 2}
    assert attempts[2] == {6: 3, 7: 3, 8: 3, 5: 4}
    ok(env, "acknowledge", {"subscription_id": 2, "event_ids": [5]})
    assert [d["event"]["id"] for d in ok(env, "poll", {"subscription_id": 2})["events"]] == [6, 7, 8]
    # a push subscription's events were handed over at publication (attempt 1) and come back on poll
    pushed = ok(env, "ingest", {"stream": "sensor.temperature", "payload": reading("t-501", "warehouse-5", -18.0)})
    assert env.state()["subscriptions"]["4"]["deliveries"][str(pushed["event_id"])] == 1
    again = ok(env, "poll", {"subscription_id": 4})
    assert {d["event"]["id"]: d["attempt"] for d in again["events"]} == {7: 2, pushed["event_id"]: 2}


def test_acknowledgement_refusals_are_atomic() -> None:
    env = Environment("cold_chain_incident")
    error = refused(
        env,
        "acknowledge",
        {"subscription_id": 1, "event_ids": [4, 7]},
        "invalid_state",
        "event 7 is not pending for subscription 1",
    )
    assert error["allowed"] == [3, 4, 5, 6, 8]
    refused(env, "acknowledge", {"subscription_id": 1, "event_ids": [4, 4]}, "invalid_argument", "twice")
    refused(env, "acknowledge", {"subscription_id": 1, "event_ids": [4, 404]}, "not_found", "event 404")
    refused(env, "acknowledge", {"subscription_id": 1, "event_ids": []}, "invalid_argument")
    refused(env, "acknowledge", {"subscription_id": 99, "event_ids": [4]}, "not_found", "subscription 99")
    ok(env, "acknowledge", {"subscription_id": 1, "event_ids": [4]})
    refused(env, "acknowledge", {"subscription_id": 1, "event_ids": [4]}, "invalid_state", "not pending")
    assert pending(env, 2) == [5, 6, 7, 8]  # acknowledging on one subscription leaves the others alone


# --------------------------------------------------------------------------- backpressure


def test_backpressure_is_visible_as_queue_depth_and_nothing_is_dropped() -> None:
    env = Environment("cold_chain_incident")
    infos = {s["id"]: s for s in ok(env, "list_subscriptions", {})}
    assert infos[1]["depth"] == 5 and infos[1]["max_pending"] == 5 and infos[1]["backpressured"] is True
    assert infos[1]["oldest_pending"] == 3
    assert infos[2]["depth"] == 4 and infos[2]["backpressured"] is False
    assert [s["consumer"] for s in ok(env, "lagging_consumers", {})] == ["cold-chain-monitor"]
    for n in range(3):
        receipt = ok(
            env, "ingest", {"stream": "sensor.temperature", "payload": reading("t-301", "warehouse-3", -18.0 - n)}
        )
        assert 1 in receipt["queued_for"] and receipt["backpressured"] == [1]
    assert ok(env, "pending_events", {"subscription_id": 1})["depth"] == 8
    ok(env, "acknowledge", {"subscription_id": 1, "event_ids": pending(env, 1)})
    assert ok(env, "lagging_consumers", {}) == []
    assert ok(env, "list_subscriptions", {"consumer": "cold-chain-monitor"})[0]["oldest_pending"] is None


def test_lagging_consumers_are_ordered_by_depth() -> None:
    env = Environment("night_shift")
    ok(env, "subscribe", {"stream": "sensor.vibration", "consumer": "tiny", "max_pending": 1})
    ok(
        env,
        "ingest",
        {"stream": "sensor.vibration", "payload": {"device": "v-110", "site": "dock-1", "rms_mm_s": 3.0, "axis": "z"}},
    )
    assert [(s["consumer"], s["depth"]) for s in ok(env, "lagging_consumers", {})] == [
        ("ops-dashboard", 3),
        ("tiny", 1),
    ]
    refused(env, "lagging_consumers", {"stream": "nope"}, "not_found")


# --------------------------------------------------------------------------- inspection and history


def test_pending_inspection_orders_by_tier_then_publication_and_changes_nothing() -> None:
    env = Environment("cold_chain_incident")
    before = env.state_json()
    view = ok(env, "pending_events", {"subscription_id": 1})
    assert env.state_json() == before
    assert [d["event"]["id"] for d in view["events"]] == [4, 6, 3, 8, 5]
    assert [d["event"]["priority"] for d in view["events"]] == ["critical", "critical", "high", "high", "normal"]
    assert all(d["attempt"] == 1 for d in view["events"])
    assert view["depth"] == 5 and view["backpressured"] is True
    short = ok(env, "pending_events", {"subscription_id": 1, "limit": 2})
    assert len(short["events"]) == 2 and short["depth"] == 5
    refused(env, "pending_events", {"subscription_id": 77}, "not_found")
    refused(env, "pending_events", {"subscription_id": 1, "limit": 0}, "invalid_argument")


def test_history_queries() -> None:
    env = Environment("cold_chain_incident")

    def ids(**args: Any) -> list[int]:
        return [e["id"] for e in ok(env, "stream_history", {"stream": "sensor.temperature", **args})]

    assert ids() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert ids(from_offset=6) == [7, 8]
    assert ids(limit=2) == [1, 2]
    assert ids(min_priority="critical") == [4, 6, 7]
    assert ids(min_priority="high", filter={"site": "warehouse-5"}) == [7]
    assert ids(filter={"door_open": True, "device": "t-302"}) == [3, 4, 6]
    assert ids(from_offset=50) == []
    refused(
        env,
        "stream_history",
        {"stream": "sensor.temperature", "filter": {"zone": 1}},
        "invalid_argument",
        "no field zone",
    )
    refused(env, "stream_history", {"stream": "sensor.temperature", "from_offset": -1}, "invalid_argument")
    refused(env, "stream_history", {"stream": "nope"}, "not_found")
    latest = ok(env, "latest_reading", {"device": "t-302", "stream": "sensor.temperature"})
    assert latest["id"] == 8
    assert ok(env, "latest_reading", {"device": "h-301", "stream": "sensor.temperature"}) is None


# --------------------------------------------------------------------------- the telemetry domain


def test_domain_rules_on_devices_and_plausibility() -> None:
    env = Environment("night_shift")
    temperature = "sensor.temperature"
    refused(
        env,
        "ingest",
        {"stream": temperature, "payload": reading("t-000", "warehouse-3", -18.0)},
        "not_found",
        "not registered",
    )
    refused(
        env,
        "ingest",
        {"stream": "sensor.vibration", "payload": {"device": "v-111", "site": "dock-1", "rms_mm_s": 1.0, "axis": "x"}},
        "forbidden",
        "retired",
    )
    error = refused(
        env,
        "ingest",
        {"stream": temperature, "payload": reading("v-110", "dock-1", 20.0)},
        "invalid_argument",
        "vibration sensor",
    )
    assert error["allowed"] == ["t-301", "t-302", "t-501"]
    error = refused(
        env,
        "ingest",
        {"stream": temperature, "payload": reading("t-301", "dock-1", -18.0)},
        "invalid_argument",
        "installed at warehouse-3",
    )
    assert error["allowed"] == ["warehouse-3"]
    refused(
        env,
        "ingest",
        {"stream": temperature, "payload": reading("t-301", "warehouse-3", 81.0)},
        "invalid_argument",
        "plausible",
    )
    ok(env, "ingest", {"stream": temperature, "payload": reading("t-301", "warehouse-3", 80)})
    assert WORLD["devices"]["v-111"]["retired"] is True
    assert [d["id"] for d in ok(env, "list_devices", {"site": "dock-1", "include_retired": True})] == [
        "gw-d1",
        "v-110",
        "v-111",
    ]
    refused(env, "list_devices", {"site": "moon"}, "not_found")


def test_alerts_are_published_like_readings() -> None:
    env = Environment("cold_chain_incident")
    receipt = ok(env, "raise_alert", {"device": "t-302", "message": "Door still open", "priority": "critical"})
    event = env.state()["events"][str(receipt["event_id"])]
    assert event["stream"] == "alerts" and event["payload"] == {
        "device": "t-302",
        "site": "warehouse-3",
        "message": "Door still open",
    }
    assert receipt["pushed_to"] == [3] and pending(env, 3) == [9, receipt["event_id"]]
    refused(env, "raise_alert", {"device": "v-111", "message": "x"}, "forbidden")
    refused(env, "raise_alert", {"device": "t-302", "message": ""}, "invalid_argument")


# --------------------------------------------------------------------------- schema, tasks, determinism


def test_tool_schema_separates_read_and_write_tools() -> None:
    by_name = {t["name"]: t for t in TOOLS_JSON["tools"]}
    writes = {
        "create_stream",
        "subscribe",
        "change_filter",
        "unsubscribe",
        "ingest",
        "poll",
        "acknowledge",
        "raise_alert",
    }
    reads = {
        "list_streams",
        "list_subscriptions",
        "pending_events",
        "stream_history",
        "list_devices",
        "lagging_consumers",
        "latest_reading",
    }
    assert set(by_name) == writes | reads == set(TOOL_SPECS)
    for name in writes:
        assert by_name[name]["modifies_state"] is True, name
    for name in reads:
        assert by_name[name]["modifies_state"] is False and by_name[name]["state_fields_affected"] == [], name
    assert "subscriptions" in by_name["acknowledge"]["state_fields_affected"]
    assert set(by_name["ingest"]["parameters"]["properties"]["priority"]["enum"]) == {
        "low",
        "normal",
        "high",
        "critical",
    }


def test_tasks_are_solvable_and_their_requests_hide_the_answer() -> None:
    env = Environment("cold_chain_incident")
    ok(env, "acknowledge", {"subscription_id": 1, "event_ids": [4, 6]})
    state = env.state()
    assert state["subscriptions"]["1"]["pending"] == [3, 5, 8]
    criticals = [
        d["event"]["id"]
        for d in ok(Environment("cold_chain_incident"), "pending_events", {"subscription_id": 1})["events"]
        if d["event"]["priority"] == "critical"
    ]
    assert criticals == [4, 6]  # the answer is unique and found by inspection
    # the spec's own tasks' requests (a family's request lines are templates, filled per draw)
    tasks = [b for b in re.split(r"\n(?=\S)", SPEC) if b.startswith("task ")]
    requests = [r for b in tasks for r in re.findall(r'request "([^"]*)"', b)]
    assert len(requests) == 3
    assert not re.search(r"\b[468]\b", requests[0])  # no event ids in the request
    assert set(SCENARIOS) >= {"cold_chain_incident", "night_shift", "no_streams", "orders_flowing"}


def _random_trace(seed: int) -> list[Any]:
    rng = random.Random(seed)
    env = Environment("cold_chain_incident")
    trace: list[Any] = []
    for _ in range(60):
        choice = rng.randrange(5)
        if choice == 0:
            args = {
                "stream": "sensor.temperature",
                "payload": reading(
                    rng.choice(["t-301", "t-302", "t-501"]), rng.choice(["warehouse-3", "warehouse-5"]), -18.0
                ),
                "priority": rng.choice(["low", "normal", "high", "critical"]),
            }
            trace.append(env.call("ingest", args))
        elif choice == 1:
            trace.append(env.call("poll", {"subscription_id": rng.randint(1, 4)}))
        elif choice == 2:
            sub = rng.randint(1, 4)
            queue = pending(env, sub)
            trace.append(
                env.call("acknowledge", {"subscription_id": sub, "event_ids": queue[: rng.randint(0, 3)] or [999]})
            )
        elif choice == 3:
            trace.append(
                env.call(
                    "change_filter",
                    {"subscription_id": rng.randint(1, 4), "filter": rng.choice([{}, {"site": "warehouse-3"}])},
                )
            )
        else:
            trace.append(env.call("pending_events", {"subscription_id": rng.randint(1, 4)}))
    trace.append(env.state_json())
    return trace


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_calls_give_the_same_trace_and_queues_stay_consistent(seed: int) -> None:
    assert _random_trace(seed) == _random_trace(seed)
    state = json.loads(_random_trace(seed)[-1])
    for sub in state["subscriptions"].values():
        assert len(sub["pending"]) == len(set(sub["pending"]))
        for event_id in sub["pending"]:
            assert state["events"][str(event_id)]["stream"] == sub["stream"]
        assert set(sub["deliveries"]) <= {str(i) for i in sub["pending"]}
