"""The asynchronous event triggering archetype (paper archetype 4, event-condition-action),
tested on the generated `automation_hub` package, the domain built on
`specs/prototypes/event_triggering.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`. Every rule of the contract has a test: the
fixed source taxonomy; rules with trigger type, optional source filter, condition and
ordered typed actions, with full CRUD; injection as the only trigger (validate, log,
match enabled rules on trigger and source filter, evaluate, dispatch in order); the
condition evaluator's fallbacks, checked against an independent reference over a grid
of payload values; filtered queries over the event and action logs.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shipped import put_on_path

put_on_path()

from automation_hub import TOOL_SPECS, Environment  # noqa: E402
from automation_hub.environment import WORLD  # noqa: E402

NOTIFY = [{"type": "notify", "params": {"channel": "#ops", "message": "{event.type} from {event.source}"}}]
MISSING = object()


def ok(env: Environment, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = env.call(tool, args or {})
    assert not (isinstance(result, dict) and isinstance(result.get("error"), dict)), result
    return result


def refused(env: Environment, tool: str, args: dict[str, Any], kind: str, text: str = "") -> dict[str, Any]:
    before = env.state()
    result = env.call(tool, args)
    assert isinstance(result, dict) and isinstance(result.get("error"), dict), result
    error: dict[str, Any] = result["error"]
    assert error["kind"] == kind and text in error["message"], error
    assert env.state() == before, f"refused {tool} changed the state"
    return error


def inject(env: Environment, source: str, event_type: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = ok(
        env, "inject_event", {"source_id": source, "event_type": event_type, "payload": payload or {}}
    )
    return result


# --------------------------------------------------------------------------- taxonomy and sources


def test_sources_belong_to_a_fixed_taxonomy() -> None:
    env = Environment()
    error = refused(env, "connect_source", {"source_id": "erp", "name": "ERP", "category": "erp"}, "invalid_argument")
    assert error["allowed"] == ["email", "calendar", "messaging", "storage", "iot", "monitoring", "webhook", "database"]
    source = ok(env, "connect_source", {"source_id": "billing_db", "name": "Billing DB", "category": "database"})
    assert source == {
        "id": "billing_db",
        "name": "Billing DB",
        "category": "database",
        "registered_at": "2025-05-05T08:00:00",
        "events_seen": 0,
    }
    refused(env, "connect_source", {"source_id": "billing_db", "name": "x", "category": "email"}, "already_exists")
    assert ok(env, "list_event_types", {"category": "database"}) == {"database": ["row_inserted", "row_updated"]}
    assert set(ok(env, "list_event_types")) == set(WORLD["event_types"])


# --------------------------------------------------------------------------- rule CRUD


def test_create_rule_with_full_specification() -> None:
    env = Environment()
    rule = ok(
        env,
        "create_automation",
        {
            "name": "disk alerts",
            "trigger": "alert_fired",
            "source_filter": "grafana",
            "condition": {"field": "labels.severity", "op": "equals", "value": "critical"},
            "actions": [
                {"type": "notify", "params": {"channel": "#oncall", "message": "{alertname}"}},
                {"type": "call_webhook", "params": {"url": "https://pager.example/hook"}},
            ],
        },
    )
    assert rule["id"] == 1 and rule["enabled"] is True and rule["fire_count"] == 0 and rule["last_fired_at"] is None
    assert [a["type"] for a in rule["actions"]] == ["notify", "call_webhook"]
    assert ok(env, "get_automation", {"automation_id": 1}) == rule


@pytest.mark.parametrize(
    ("changes", "kind", "text", "field"),
    [
        ({"trigger": "sunrise"}, "invalid_argument", "unknown trigger type", "trigger"),
        ({"source_filter": "nowhere"}, "not_found", "source nowhere", "source_id"),
        ({"source_filter": "it_inbox"}, "invalid_argument", "never emits reading", "trigger"),
        (
            {"condition": {"field": "", "op": "equals", "value": 1}},
            "invalid_argument",
            "needs a payload field",
            "condition.field",
        ),
        (
            {"condition": {"field": "a.", "op": "equals", "value": 1}},
            "invalid_argument",
            "bad field path",
            "condition.field",
        ),
        (
            {"condition": {"field": "t", "op": "lt", "value": "5"}},
            "invalid_argument",
            "lt compares numbers",
            "condition.value",
        ),
        (
            {"condition": {"field": "t", "op": "regex", "value": 5}},
            "invalid_argument",
            "regex needs a string value",
            "condition.value",
        ),
        ({"condition": {"field": "t", "op": "like", "value": "x"}}, "invalid_argument", "condition", "condition.op"),
        (
            {"actions": [{"type": "send_email", "params": {"subject": "s"}}]},
            "invalid_argument",
            "needs the parameter to",
            "actions[0].params.to",
        ),
        ({"actions": [{"type": "page", "params": {}}]}, "invalid_argument", "", "actions[0].type"),
        ({"actions": []}, "invalid_argument", "min items", "actions"),
        ({"name": "server room overheating"}, "already_exists", "already exists", "name"),
    ],
)
def test_create_rule_validation(changes: dict[str, Any], kind: str, text: str, field: str) -> None:
    env = Environment("office_hub")
    args = {"name": "new rule", "trigger": "reading", "actions": NOTIFY, **changes}
    error = refused(env, "create_automation", args, kind, text)
    assert error.get("field") == field


def test_list_rules_with_filters() -> None:
    env = Environment("office_hub")
    assert [r["id"] for r in ok(env, "list_automations")] == list(range(1, 31))
    assert [r["id"] for r in ok(env, "list_automations", {"enabled": False})] == [4, 29, 30]
    assert [r["id"] for r in ok(env, "list_automations", {"trigger": "door_opened"})] == [2, 5, 6, 9]
    ok(env, "create_automation", {"name": "any reading", "trigger": "reading", "actions": NOTIFY})
    assert [r["id"] for r in ok(env, "list_automations", {"source_id": "front_door"})] == [2, 31]


def test_update_is_partial_and_validated_as_a_whole() -> None:
    env = Environment("office_hub")
    refused(env, "update_automation", {"automation_id": 1}, "invalid_argument", "at least one change")
    refused(
        env,
        "update_automation",
        {"automation_id": 1, "trigger": "door_opened", "condition": {"field": "x", "op": "gt", "value": "y"}},
        "invalid_argument",
    )
    refused(
        env,
        "update_automation",
        {"automation_id": 1, "trigger": "email_received"},
        "invalid_argument",
        "never emits email_received",
    )
    refused(
        env,
        "update_automation",
        {"automation_id": 1, "clear_condition": True, "condition": {"field": "x", "op": "gt", "value": 1}},
        "invalid_argument",
        "not both",
    )
    refused(env, "update_automation", {"automation_id": 99, "name": "x"}, "not_found")
    rule = ok(
        env,
        "update_automation",
        {"automation_id": 1, "trigger": "door_opened", "clear_source_filter": True, "clear_condition": True},
    )
    assert (rule["trigger"], rule["source_filter"], rule["condition"]) == ("door_opened", None, None)
    assert rule["actions"] == Environment("office_hub").state()["automations"]["1"]["actions"]  # untouched parts stay
    rule = ok(env, "update_automation", {"automation_id": 1, "actions": NOTIFY, "name": "door watch"})
    assert rule["actions"] == NOTIFY and rule["name"] == "door watch"


def test_enable_disable_delete() -> None:
    env = Environment("office_hub")
    refused(env, "resume_automation", {"automation_id": 1}, "invalid_state", "already enabled")
    refused(env, "pause_automation", {"automation_id": 4}, "invalid_state", "already disabled")
    assert ok(env, "pause_automation", {"automation_id": 1})["enabled"] is False
    assert inject(env, "server_room", "reading", {"celsius": 40})["event"]["matched"] == []
    assert ok(env, "resume_automation", {"automation_id": 1})["enabled"] is True
    assert inject(env, "server_room", "reading", {"celsius": 40})["event"]["fired"] == [1]
    assert ok(env, "delete_automation", {"automation_id": 1})["id"] == 1
    gone = refused(env, "get_automation", {"automation_id": 1}, "not_found")
    assert gone["field"] == "automation_id" and gone["message"] == "automation 1 does not exist"
    paused = refused(env, "pause_automation", {"automation_id": 4}, "invalid_state")
    assert paused["message"] == "automation 4 is already disabled"
    assert [a["rule_id"] for a in ok(env, "search_action_log")] == [1, 1]  # the log keeps what the rule did
    assert inject(env, "server_room", "reading", {"celsius": 40})["event"]["matched"] == []


# --------------------------------------------------------------------------- injection


def test_injection_is_the_only_trigger() -> None:
    writers = {name for name, spec in TOOL_SPECS.items() if spec.writes & {"events", "action_log"}}
    assert writers == {"inject_event"}
    env = Environment("office_hub")
    for tool, args in [
        ("create_automation", {"name": "n", "trigger": "reading", "actions": NOTIFY}),
        ("resume_automation", {"automation_id": 4}),
        ("update_automation", {"automation_id": 1, "clear_condition": True}),
        ("evaluate_condition", {"condition": {"field": "a", "op": "equals", "value": 1}, "payload": {"a": 1}}),
    ]:
        ok(env, tool, args)
    assert env.state()["events"] == [] and env.state()["action_log"] == []


def test_injection_validates_then_logs() -> None:
    env = Environment("office_hub")
    refused(env, "inject_event", {"source_id": "ghost", "event_type": "reading", "payload": {}}, "not_found")
    error = refused(
        env,
        "inject_event",
        {"source_id": "it_inbox", "event_type": "reading", "payload": {}},
        "invalid_argument",
        "does not emit reading",
    )
    assert error["allowed"] == ["email_received", "email_bounced"]
    refused(
        env,
        "inject_event",
        {"source_id": "it_inbox", "event_type": "email_received", "payload": ["x"]},
        "invalid_argument",
        "must be an object",
    )
    refused(
        env,
        "inject_event",
        {"source_id": "it_inbox", "event_type": "email_received", "payload": None},
        "invalid_argument",
        "got null",
    )
    refused(
        env,
        "inject_event",
        {"source_id": "it_inbox", "event_type": "email_received"},
        "invalid_argument",
        "needs the parameter `payload`",
    )
    result = inject(env, "it_inbox", "email_bounced", {"to": "x@y"})
    assert result["event"] == {
        "id": 1, "source_id": "it_inbox", "category": "email", "type": "email_bounced", "payload": {"to": "x@y"},
        "at": "2025-05-05T08:00:01", "matched": [], "fired": [],
    }  # fmt: skip
    assert env.state()["events"] == [result["event"]] and env.state()["clock"] == "2025-05-05T08:00:01"
    assert env.state()["sources"]["it_inbox"]["events_seen"] == 1


def test_matching_order_and_dispatch_order() -> None:
    env = Environment("office_hub")
    ok(env, "create_automation", {"name": "every reading", "trigger": "reading", "actions": [
        {"type": "log_message", "params": {"message": "{event.id}:{celsius}"}},
        {"type": "create_task", "params": {"title": "look at {rule.name}"}},
    ]})  # fmt: skip
    ok(
        env,
        "create_automation",
        {"name": "hall only", "trigger": "reading", "source_filter": "front_door", "actions": NOTIFY},
    )
    result = inject(env, "server_room", "reading", {"celsius": 30.5})
    assert result["event"]["matched"] == [1, 31]  # rule 32 filters another source; in id order
    assert [e["rule_id"] for e in result["evaluations"]] == [1, 31]
    assert [(a["rule_id"], a["position"], a["type"]) for a in result["actions"]] == [
        (1, 1, "notify"), (1, 2, "create_task"), (31, 1, "log_message"), (31, 2, "create_task"),
    ]  # fmt: skip
    assert [a["id"] for a in result["actions"]] == [1, 2, 3, 4]
    assert result["actions"][0]["params"]["message"] == "Server room at 30.5 C"
    assert result["actions"][2]["params"] == {"message": "1:30.5"}
    assert result["actions"][3]["params"] == {"title": "look at every reading"}
    rules = env.state()["automations"]
    assert (rules["1"]["fire_count"], rules["1"]["last_fired_at"]) == (1, "2025-05-05T08:00:01")
    assert env.state()["action_log"] == result["actions"]


# --------------------------------------------------------------------------- the condition evaluator


def reference(op: str, actual: Any, wanted: Any) -> bool:
    """The evaluator's contract, independently: missing fields fail closed; equality is
    JSON equality with numbers by value (bools are not numbers); numeric comparisons
    need two numbers; contains (substring) and regex (search) need two strings."""
    if actual is MISSING:
        return False

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if op in ("equals", "not_equals"):
        same = (
            float(actual) == float(wanted)
            if number(actual) and number(wanted)
            else type(actual) is type(wanted) and actual == wanted
        )
        if number(actual) != number(wanted):
            same = False
        return same if op == "equals" else not same
    if op in ("gt", "gte", "lt", "lte"):
        if not (number(actual) and number(wanted)):
            return False
        return {"gt": actual > wanted, "gte": actual >= wanted, "lt": actual < wanted, "lte": actual <= wanted}[op]
    if not (isinstance(actual, str) and isinstance(wanted, str)):
        return False
    if op == "contains":
        return wanted in actual
    return re.search(wanted, actual) is not None


PAYLOAD_VALUES: list[Any] = [
    MISSING,
    None,
    True,
    False,
    0,
    1,
    1.0,
    2,
    -3.5,
    "",
    "1",
    "abc",
    "xabcx",
    "ABC",
    [1],
    ["abc"],
    {"a": 1},
]
CONDITION_VALUES = {
    "equals": [1, 1.0, True, None, "abc", "1", [1], {"a": 1}],
    "not_equals": [1, True, "abc", None],
    "gt": [0, 1, 1.5, -4],
    "gte": [1, 2.0],
    "lt": [1, 0],
    "lte": [1.0, -3.5],
    "contains": ["abc", "", "b", "1"],
    "regex": ["abc", "a.c", "^x?abcx?$", "^abc$", ".*", "^$", "B"],
}
GRID = [
    (op, value, wanted)
    for op, wanted_list in CONDITION_VALUES.items()
    for value, wanted in itertools.product(PAYLOAD_VALUES, wanted_list)
]


@pytest.mark.parametrize(("op", "actual", "wanted"), GRID)
def test_condition_matches_the_reference(op: str, actual: Any, wanted: Any) -> None:
    payload = {} if actual is MISSING else {"f": actual}
    verdict = ok(
        Environment(),
        "evaluate_condition",
        {"condition": {"field": "f", "op": op, "value": wanted}, "payload": payload},
    )
    assert verdict["satisfied"] is reference(op, actual, wanted), verdict


def valid(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


@pytest.mark.parametrize("pattern", ["(", "[a-", "?", "a{2,1}"])
def test_invalid_regexes_are_refused_up_front(pattern: str) -> None:
    assert not valid(pattern)
    env = Environment("office_hub")
    condition = {"field": "subject", "op": "regex", "value": pattern}
    error = refused(
        env, "evaluate_condition", {"condition": condition, "payload": {"subject": pattern}}, "invalid_argument"
    )
    assert error["field"] == "condition.value" and "not a valid regular expression" in error["message"]
    args = {"name": "r", "trigger": "email_received", "condition": condition, "actions": NOTIFY}
    refused(env, "create_automation", args, "invalid_argument", "not a valid regular expression")
    refused(env, "update_automation", {"automation_id": 3, "condition": condition}, "invalid_argument")


def test_an_invalid_stored_pattern_matches_nothing() -> None:
    env = Environment("with_history")  # automation 3 came from an older system with a broken pattern
    result = inject(env, "inbox", "email_received", {"subject": "TICKET-(["})
    assert result["event"]["matched"] == [2, 3] and result["event"]["fired"] == []
    assert result["evaluations"][1]["reason"] == "the pattern TICKET-([ is not a valid regular expression"


def test_fallback_reasons() -> None:
    env = Environment()

    def reason(op: str, payload: dict[str, Any], value: Any) -> str:
        verdict = ok(
            env, "evaluate_condition", {"condition": {"field": "a.b", "op": op, "value": value}, "payload": payload}
        )
        text: str = verdict["reason"]
        return text

    assert reason("equals", {}, 1) == "field a.b is missing"
    assert reason("equals", {"a": 5}, 1) == "field a.b is missing"  # a path through a non-object
    assert reason("gt", {"a": {"b": "7"}}, 1) == "a.b is str, not a number"
    assert reason("gt", {"a": {"b": True}}, 1) == "a.b is bool, not a number"
    assert reason("contains", {"a": {"b": 7}}, "7") == "a.b is int, not a string"
    assert reason("regex", {"a": {"b": ["x"]}}, "x") == "a.b is list, not a string"
    assert reason("gte", {"a": {"b": 2}}, 1.5) == "a.b (2) gte 1.5"


def test_fail_closed_paths_fire_nothing_in_the_hub() -> None:
    env = Environment("office_hub")
    for payload in [{}, {"celsius": "31"}, {"celsius": None}, {"celsius": True}, {"celsius": [31]}, {"temp": 40}]:
        result = inject(env, "server_room", "reading", payload)
        assert result["event"]["matched"] == [1] and result["event"]["fired"] == [] and result["actions"] == []
    assert env.state()["action_log"] == [] and env.state()["automations"]["1"]["fire_count"] == 0


# --------------------------------------------------------------------------- the two logs


def test_event_and_action_logs_are_filtered_and_traceable() -> None:
    env = Environment("overnight_log")
    inject(env, "server_room", "reading", {"celsius": 35})
    inject(env, "it_inbox", "email_received", {"from": "bob@bigclient.com", "subject": "hi"})
    events = ok(env, "search_event_log")
    actions = ok(env, "search_action_log")
    assert [e["id"] for e in events] == [1, 2, 3, 4, 5]
    by_id = {e["id"]: e for e in events}
    for action in actions:  # every action traces back to an event that fired its rule
        assert action["rule_id"] in by_id[action["event_id"]]["fired"]
    assert [e["id"] for e in ok(env, "search_event_log", {"source_id": "server_room"})] == [2, 4]
    assert [e["id"] for e in ok(env, "search_event_log", {"event_type": "reading", "fired_only": True})] == [4]
    assert [e["id"] for e in ok(env, "search_event_log", {"automation_id": 1})] == [2, 4]
    assert [e["id"] for e in ok(env, "search_event_log", {"category": "iot"})] == [1, 2, 4]
    assert [
        e["id"] for e in ok(env, "search_event_log", {"since": "2025-05-05T05:00:00", "until": "2025-05-05T07:30:01"})
    ] == [3, 4]
    assert [e["id"] for e in ok(env, "search_event_log", {"limit": 2})] == [4, 5]
    assert [a["id"] for a in ok(env, "search_action_log", {"automation_id": 1})] == [3, 4]
    assert [a["id"] for a in ok(env, "search_action_log", {"event_id": 1})] == [1, 2]
    assert [a["id"] for a in ok(env, "search_action_log", {"action_type": "create_task"})] == [4]
    refused(env, "search_event_log", {"limit": 0}, "invalid_argument")
    refused(env, "search_action_log", {"since": "yesterday"}, "invalid_argument")


# --------------------------------------------------------------------------- the domain's own additions


def test_stats_and_task_solution() -> None:
    env = Environment("overnight_log")
    stats = ok(env, "automation_stats")
    assert [(s["automation_id"], s["matched"], s["fired"], s["actions"]) for s in stats] == [
        (1, 1, 0, 0),
        (2, 1, 1, 2),
        (4, 0, 0, 0),
        *[(rule_id, 0, 0, 0) for rule_id in range(5, 31)],
    ]
    env = Environment("office_hub")
    ok(env, "create_automation", {
        "name": "critical alerts to on-call", "trigger": "alert_fired", "source_filter": "grafana",
        "condition": {"field": "severity", "op": "equals", "value": "critical"},
        "actions": [
            {"type": "notify", "params": {"channel": "#oncall", "message": "{alertname} is critical"}},
            {"type": "create_task", "params": {"title": "Investigate {alertname}"}},
        ],
    })  # fmt: skip
    warning = inject(env, "grafana", "alert_fired", {"alertname": "CPU", "severity": "warning"})
    assert warning["event"]["fired"] == [14]  # the warning digest, not the new on-call page
    critical = inject(env, "grafana", "alert_fired", {"alertname": "DiskFull", "severity": "critical"})
    assert [a["params"] for a in critical["actions"]] == [
        {"channel": "#oncall", "message": "DiskFull is critical"},
        {"title": "Investigate DiskFull"},
    ]


# --------------------------------------------------------------------------- the prototype on its own


def test_prototype_compiles_and_its_own_tests_pass(tmp_path: Path) -> None:
    """The prototype spec is a complete environment too: compiled on its own, its static
    and dynamic checks (its own tests, two scenarios, the generic invariants) pass."""
    root = Path(__file__).resolve().parents[2]
    spec = root / "specs" / "prototypes" / "event_triggering.envspec"
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", str(spec), "-o", str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "event_triggering.envspec" in line)
    columns = row.split()
    static, dynamic = columns[columns.index("pass")], columns[columns.index("pass") + 1]
    assert (static, dynamic) == ("pass", "pass") and "failed" not in row, row
