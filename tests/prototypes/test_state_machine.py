"""The constraint-guided state machine archetype (paper archetype 5), tested on the
generated `loan_origination` package, the domain built on
`specs/prototypes/state_machine.envspec`.

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`. Every rule of the contract has a test:
machine definitions (named states with on-enter/on-exit hooks, initial and terminal
sets, transitions with source, target, trigger label and nested guards); entities
created at an initial state; transition by target with the three-way answer
(transitioned / blocked by guard / no such transition); guards with multi-field AND
semantics that fail closed on missing fields; hooks recorded on exit then enter;
visitation history and the move log; terminal entry completes the entity and blocks
further transitions; available-target enumeration; filtered inspection of entities,
transitions, moves and hook runs. Refused calls and non-moves change nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, put_on_path

ROOT = Path(__file__).resolve().parents[2]
put_on_path()

from loan_origination import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402

TOOLS_JSON = json.loads((package_dir("loan_origination") / "tools.json").read_text())


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


def move(env: Environment, loan_id: int, target: str) -> dict[str, Any]:
    result: dict[str, Any] = ok(env, "move_loan", {"loan_id": loan_id, "target": target})
    return result


def door_env() -> Environment:
    """A hand-built machine `equipment_lease` (the product `equipment_lease` walks it):
    closed (initial, hooks lock/unlock) -> open (hook beep) -> broken (terminal)."""
    env = Environment()
    ok(env, "create_machine", {"machine_id": "equipment_lease", "name": "Lease"})
    ok(
        env,
        "add_state",
        {
            "machine_id": "equipment_lease",
            "name": "closed",
            "initial": True,
            "on_enter": ["lock"],
            "on_exit": ["unlock"],
        },
    )
    ok(env, "add_state", {"machine_id": "equipment_lease", "name": "open", "on_enter": ["beep"]})
    ok(
        env,
        "add_state",
        {"machine_id": "equipment_lease", "name": "broken", "terminal": True, "on_enter": ["call_service"]},
    )
    return env


def lease(env: Environment, **extra: Any) -> dict[str, Any]:
    args = {"applicant": "cy", "product": "equipment_lease", "amount": 20000.0, **extra}
    result: dict[str, Any] = ok(env, "submit_application", args)
    return result


# --------------------------------------------------------------------------- machine tier


def test_machine_definition_with_hooks_and_initial_terminal_sets() -> None:
    env = door_env()
    machine = ok(env, "get_machine", {"machine_id": "equipment_lease"})
    assert [s["name"] for s in machine["states"]] == ["closed", "open", "broken"]
    assert [s["name"] for s in machine["states"] if s["initial"]] == ["closed"]
    assert [s["name"] for s in machine["states"] if s["terminal"]] == ["broken"]
    assert machine["states"][0]["on_enter"] == ["lock"] and machine["states"][0]["on_exit"] == ["unlock"]
    refused(env, "create_machine", {"machine_id": "equipment_lease", "name": "x"}, "already_exists")
    refused(
        env,
        "add_state",
        {"machine_id": "equipment_lease", "name": "open"},
        "already_exists",
        "already has a state open",
    )
    refused(env, "add_state", {"machine_id": "nope", "name": "x"}, "not_found", "machine nope")
    refused(
        env,
        "add_state",
        {"machine_id": "equipment_lease", "name": "x", "on_enter": [" "]},
        "invalid_argument",
        "hook actions",
    )


def test_transitions_carry_source_target_trigger_and_guards() -> None:
    env = door_env()
    edge = ok(
        env,
        "add_transition",
        {
            "machine_id": "equipment_lease",
            "source": "closed",
            "target": "open",
            "trigger": "event",
            "guards": {"badge": {"eq": True}, "level": {"gte": 2}},
        },
    )
    assert edge == {
        "id": 1,
        "source": "closed",
        "target": "open",
        "trigger": "event",
        "guards": {"badge": {"eq": True}, "level": {"gte": 2}},
    }
    default = ok(env, "add_transition", {"machine_id": "equipment_lease", "source": "open", "target": "closed"})
    assert default["id"] == 2 and default["trigger"] == "manual" and default["guards"] == {}
    refused(
        env,
        "add_transition",
        {
            "machine_id": "equipment_lease",
            "source": "closed",
            "target": "open",
            "trigger": "event",
            "guards": {"badge": {"eq": True}, "level": {"gte": 2}},
        },
        "already_exists",
        "already goes",
    )
    refused(
        env,
        "add_transition",
        {"machine_id": "equipment_lease", "source": "closed", "target": "ajar"},
        "not_found",
        "no state ajar",
    )
    refused(
        env,
        "add_transition",
        {"machine_id": "equipment_lease", "source": "nowhere", "target": "open"},
        "not_found",
        "no state nowhere",
    )
    refused(
        env,
        "add_transition",
        {"machine_id": "equipment_lease", "source": "closed", "target": "open", "trigger": "Not A Label"},
        "invalid_argument",
    )


@pytest.mark.parametrize(
    ("guards", "text"),
    [
        ({"x": {"approx": 1}}, "unknown guard operator approx"),
        ({"x": {}}, "no condition"),
        ({"x": {"in": "abc"}}, "needs a list"),
        ({"x": {"not_in": 3}}, "needs a list"),
        ({"x": {"matches": 5}}, "text pattern"),
    ],
)
def test_guards_are_validated_when_declared(guards: dict[str, Any], text: str) -> None:
    env = door_env()
    refused(
        env,
        "add_transition",
        {"machine_id": "equipment_lease", "source": "closed", "target": "open", "guards": guards},
        "invalid_argument",
        text,
    )
    refused(env, "evaluate_guards", {"guards": guards, "data": {}}, "invalid_argument", text)


def test_transition_table_inspection_filters() -> None:
    env = Environment("monday_pipeline")
    assert len(ok(env, "list_transitions", {"machine_id": "consumer_loan"})) == 11
    assert [
        t["id"] for t in ok(env, "list_transitions", {"machine_id": "consumer_loan", "source": "underwriting"})
    ] == [4, 5, 6, 7]
    assert [
        t["id"]
        for t in ok(
            env, "list_transitions", {"machine_id": "consumer_loan", "target": "declined", "trigger": "automatic"}
        )
    ] == [5, 6, 7]
    assert [t["id"] for t in ok(env, "list_transitions", {"machine_id": "consumer_loan", "trigger": "customer"})] == [
        9,
        10,
        11,
    ]
    refused(env, "list_transitions", {"machine_id": "truck"}, "not_found", "machine truck")
    assert [m["id"] for m in ok(env, "list_machines")] == ["consumer_loan"]


# --------------------------------------------------------------------------- entity tier


def test_entities_start_in_the_initial_state_with_its_enter_hooks() -> None:
    env = Environment()
    loan = ok(env, "submit_application", {"applicant": "ana", "product": "personal", "amount": 12000.0})
    assert loan["state"] == "application" and loan["history"] == ["application"] and not loan["completed"]
    assert loan["machine_id"] == "consumer_loan"
    hooks = env.state()["hook_log"]
    assert [(h["state"], h["phase"], h["action"]) for h in hooks] == [
        ("application", "on_enter", "send_acknowledgement")
    ]
    refused(
        env,
        "submit_application",
        {"applicant": "ana", "product": "personal", "amount": 12000.0, "start_state": "approved"},
        "invalid_argument",
        "not an initial state",
    )


def test_several_initial_states_need_an_explicit_start() -> None:
    env = door_env()
    ok(env, "add_state", {"machine_id": "equipment_lease", "name": "standby", "initial": True})
    refused(
        env,
        "submit_application",
        {"applicant": "cy", "product": "equipment_lease", "amount": 20000.0},
        "invalid_argument",
        "several initial states",
    )
    assert lease(env, start_state="standby")["state"] == "standby"
    assert lease(env, start_state="closed")["history"] == ["closed"]


def test_a_machine_without_initial_state_creates_nothing() -> None:
    env = Environment()
    ok(env, "create_machine", {"machine_id": "equipment_lease", "name": "Lease"})
    ok(env, "add_state", {"machine_id": "equipment_lease", "name": "draft"})
    refused(
        env,
        "submit_application",
        {"applicant": "cy", "product": "equipment_lease", "amount": 20000.0},
        "invalid_state",
        "no initial state",
    )


def test_an_initial_state_that_is_terminal_completes_at_once() -> None:
    env = Environment()
    ok(env, "create_machine", {"machine_id": "equipment_lease", "name": "Lease"})
    ok(env, "add_state", {"machine_id": "equipment_lease", "name": "sealed", "initial": True, "terminal": True})
    loan = lease(env)
    assert loan["completed"]
    refused(env, "move_loan", {"loan_id": loan["id"], "target": "sealed"}, "invalid_state", "completed")


def test_three_way_transition_result() -> None:
    env = Environment("monday_pipeline")
    before = env.state_json()
    none = move(env, 1, "approved")
    assert none["outcome"] == "no_such_transition" and none["transition_id"] is None
    assert none["available"] == ["document_review", "withdrawn"]
    assert env.state_json() == before, "no_such_transition changed the state"
    blocked = move(env, 2, "underwriting")
    assert blocked["outcome"] == "blocked_by_guard" and blocked["state"] == "document_review"
    assert [(f["field"], f["op"], f["reason"]) for f in blocked["failed_guards"]] == [
        ("documents_complete", "eq", "not satisfied")
    ]
    assert env.state_json() == before, "blocked_by_guard changed the state"
    moved = move(env, 1, "document_review")
    assert moved["outcome"] == "transitioned" and moved["transition_id"] == 1 and moved["trigger"] == "manual"
    assert (moved["source"], moved["state"], moved["completed"]) == ("application", "document_review", False)
    assert env.state()["loans"]["1"]["state"] == "document_review"
    refused(env, "move_loan", {"loan_id": 1, "target": "archived"}, "not_found", "no state archived")
    refused(env, "move_loan", {"loan_id": 99, "target": "approved"}, "not_found", "loan 99")


def test_guards_and_semantics_over_several_fields() -> None:
    env = Environment("monday_pipeline")
    # edge 4 needs credit_score >= 660 AND dti <= 0.43 AND bankruptcies == 0
    ok(env, "update_loan_data", {"loan_id": 3, "changes": {"dti": 0.5}})
    blocked = move(env, 3, "approved")
    assert [f["field"] for f in blocked["failed_guards"]] == ["dti"]
    ok(env, "update_loan_data", {"loan_id": 3, "changes": {"dti": 0.3, "bankruptcies": 2, "credit_score": 600}})
    blocked = move(env, 3, "approved")
    assert [f["field"] for f in blocked["failed_guards"]] == ["bankruptcies", "credit_score"]
    ok(env, "update_loan_data", {"loan_id": 3, "changes": {"bankruptcies": 0, "credit_score": 700}})
    assert move(env, 3, "approved")["outcome"] == "transitioned"


def test_guards_fail_closed_on_missing_fields() -> None:
    env = Environment("monday_pipeline")
    ok(env, "update_loan_data", {"loan_id": 3, "remove": ["dti", "credit_score"]})
    blocked = move(env, 3, "approved")
    failures = {(f["field"], f["reason"]) for f in blocked["failed_guards"]}
    assert failures == {("credit_score", "missing field"), ("dti", "missing field")}
    assert all(f["actual"] is None for f in blocked["failed_guards"])
    # ne and not_in fail closed too: a missing field never satisfies a guard
    check = ok(env, "evaluate_guards", {"guards": {"x": {"ne": 1}, "y": {"not_in": [1]}}, "data": {}})
    assert not check["passed"] and [f["reason"] for f in check["failures"]] == ["missing field", "missing field"]


def test_guard_that_compares_incomparable_values_fails_closed() -> None:
    env = Environment()
    check = ok(env, "evaluate_guards", {"guards": {"score": {"gte": 600}}, "data": {"score": "high"}})
    assert not check["passed"] and check["failures"][0]["reason"] == "not satisfied"
    assert check["failures"][0]["actual"] == "high"


@pytest.mark.parametrize(
    ("op", "expected", "actual", "holds"),
    [
        ("eq", 1, 1.0, True),
        ("eq", 1, True, False),
        ("eq", "a", "a", True),
        ("ne", "a", "b", True),
        ("ne", 2, 2, False),
        ("gt", 4, 5, True),
        ("gt", 4, 4, False),
        ("gte", 4, 4, True),
        ("lt", 3.5, 3, True),
        ("lte", 3.5, 4, False),
        ("gt", "2025-04-01", "2025-04-02", True),
        ("gt", 10, "9", False),
        ("in", ["card", "invoice"], "card", True),
        ("in", ["card"], "cash", False),
        ("not_in", ["card"], "cash", True),
        ("not_in", ["card"], "card", False),
        ("contains", "y", ["x", "y"], True),
        ("contains", "ell", "hello", True),
        ("contains", 5, 5, False),
        ("matches", "[A-Z][a-z]+", "Ann", True),
        ("matches", "[A-Z][a-z]+", "ann", False),
        ("matches", "([", "Ann", False),
    ],
)
def test_guard_operators(op: str, expected: Any, actual: Any, holds: bool) -> None:
    check = ok(Environment(), "evaluate_guards", {"guards": {"f": {op: expected}}, "data": {"f": actual}})
    assert check["passed"] is holds


def test_alternative_edges_to_one_target_are_tried_in_order() -> None:
    env = Environment("monday_pipeline")
    healthy = move(env, 3, "declined")
    assert healthy["outcome"] == "blocked_by_guard"
    assert [f["transition_id"] for f in healthy["failed_guards"]] == [5, 6, 7]
    low_score = move(env, 4, "declined")
    assert low_score["outcome"] == "transitioned" and low_score["transition_id"] == 5


def test_hooks_run_on_exit_then_on_enter_and_are_logged() -> None:
    env = Environment("monday_pipeline")
    result = move(env, 3, "approved")
    assert [(h["state"], h["phase"], h["action"]) for h in result["hooks"]] == [
        ("underwriting", "on_exit", "lock_credit_file"),
        ("approved", "on_enter", "issue_commitment_letter"),
    ]
    log = env.state()["hook_log"]
    assert [h["seq"] for h in log] == [1, 2] and all(h["entity_id"] == 3 for h in log)
    assert len(ok(env, "list_hook_runs", {"loan_id": 3, "phase": "on_exit"})) == 1
    assert len(ok(env, "list_hook_runs", {"action": "issue_commitment_letter"})) == 1
    move(env, 1, "approved")  # no such transition: no hooks
    assert len(env.state()["hook_log"]) == 2


def test_history_and_move_log_follow_every_successful_move() -> None:
    env = Environment("monday_pipeline")
    ok(env, "receive_document", {"loan_id": 2, "document": "payslip"})
    ok(env, "receive_document", {"loan_id": 2, "document": "vehicle_invoice"})
    move(env, 2, "underwriting")
    ok(env, "pull_credit_report", {"loan_id": 2})
    move(env, 2, "approved")  # blocked: score 610
    move(env, 2, "declined")
    loan = ok(env, "get_loan", {"loan_id": 2})
    assert loan["history"] == ["application", "document_review", "underwriting", "declined"]
    moves = ok(env, "list_moves", {"loan_id": 2})
    assert [(m["source"], m["target"], m["transition_id"], m["trigger"]) for m in moves] == [
        ("document_review", "underwriting", 2, "manual"),
        ("underwriting", "declined", 5, "automatic"),
    ]
    assert [m["seq"] for m in moves] == [1, 2]
    assert len(ok(env, "list_moves", {"trigger": "automatic"})) == 1
    assert len(ok(env, "list_moves", {"machine_id": "consumer_loan", "target": "underwriting"})) == 1


def test_terminal_entry_completes_and_blocks_everything_after() -> None:
    env = Environment("monday_pipeline")
    done = move(env, 5, "withdrawn")
    assert done["completed"] and done["available"] == []
    assert env.state()["loans"]["5"]["completed"]
    refused(
        env, "move_loan", {"loan_id": 5, "target": "funded"}, "invalid_state", "completed in terminal state withdrawn"
    )
    refused(env, "update_loan_data", {"loan_id": 5, "changes": {"x": 1}}, "invalid_state", "completed")
    refused(env, "receive_document", {"loan_id": 5, "document": "id"}, "invalid_state", "completed")
    refused(env, "pull_credit_report", {"loan_id": 5}, "invalid_state", "completed")
    assert ok(env, "available_moves", {"loan_id": 5}) == []


def test_available_targets_are_enumerated_with_readiness() -> None:
    env = Environment("monday_pipeline")
    options = ok(env, "available_moves", {"loan_id": 3})
    assert [(o["target"], o["transition_id"], o["ready"]) for o in options] == [
        ("approved", 4, True),
        ("declined", 5, False),
        ("declined", 6, False),
        ("declined", 7, False),
    ]
    assert options[1]["failed_guards"][0]["field"] == "credit_score"
    assert [o["target"] for o in ok(env, "available_moves", {"loan_id": 1, "trigger": "customer"})] == ["withdrawn"]
    refused(env, "available_moves", {"loan_id": 42}, "not_found")


def test_filtered_entity_inspection() -> None:
    env = Environment("monday_pipeline")
    ids = lambda args: [x["id"] for x in ok(env, "list_loans", args)]  # noqa: E731
    assert ids({}) == list(range(1, 31))
    assert ids({"in_state": "underwriting"}) == [3, 4, 10, 16, 24]
    assert ids({"completed": True}) == [6, 12, 14, 17, 19, 23, 28]
    assert ids({"completed": False, "machine_id": "consumer_loan"}) == [
        i for i in range(1, 31) if i not in {6, 12, 14, 17, 19, 23, 28}
    ]
    assert ids({"label_contains": "AUTO"}) == [2, 5, 7, 9, 11, 14, 17, 21, 24, 28]
    refused(env, "list_loans", {"machine_id": "nope"}, "not_found")


# --------------------------------------------------------------------------- domain


def test_domain_documents_and_credit_feed_the_guards() -> None:
    env = Environment("monday_pipeline")
    refused(env, "receive_document", {"loan_id": 2, "document": "id"}, "already_exists", "already has a id")
    refused(env, "receive_document", {"loan_id": 2, "document": "selfie"}, "invalid_argument", "unknown document type")
    ok(env, "receive_document", {"loan_id": 2, "document": "payslip"})
    assert env.state()["loans"]["2"]["data"]["documents_complete"] is False
    ok(env, "receive_document", {"loan_id": 2, "document": "vehicle_invoice"})
    assert env.state()["loans"]["2"]["data"]["documents_complete"] is True
    loan = ok(env, "pull_credit_report", {"loan_id": 1})
    assert loan["data"]["credit_score"] == 745 and loan["data"]["dti"] == 0.237
    refused(
        env,
        "submit_application",
        {"applicant": "ana", "product": "yacht", "amount": 1000.0},
        "not_found",
        "unknown loan product",
    )
    refused(
        env,
        "submit_application",
        {"applicant": "ana", "product": "personal", "amount": 60000.0},
        "invalid_argument",
        "50000",
    )


def test_funding_guard_uses_a_pattern_and_a_flag() -> None:
    env = Environment("monday_pipeline")
    ok(env, "update_loan_data", {"loan_id": 5, "changes": {"closing_signed": True, "funding_account": "not an iban"}})
    assert move(env, 5, "funded")["failed_guards"][0]["field"] == "funding_account"
    ok(env, "update_loan_data", {"loan_id": 5, "changes": {"funding_account": "GB33BUKB20201555555555"}})
    funded = move(env, 5, "funded")
    assert funded["outcome"] == "transitioned" and funded["completed"]
    assert [h["action"] for h in funded["hooks"]] == ["disburse_funds", "notify_servicing"]


# --------------------------------------------------------------------------- package


def test_read_and_write_tools_are_classified() -> None:
    kinds = {t["name"]: t["modifies_state"] for t in TOOLS_JSON["tools"]}
    for name in (
        "create_machine",
        "add_state",
        "add_transition",
        "submit_application",
        "move_loan",
        "update_loan_data",
    ):
        assert kinds[name], name
    for name in (
        "evaluate_guards",
        "available_moves",
        "get_loan",
        "list_loans",
        "list_transitions",
        "list_moves",
        "list_hook_runs",
    ):
        assert not kinds[name], name
    assert set(kinds) == set(TOOL_SPECS)
    assert "create_entity" not in kinds  # dropped by the domain in favour of submit_application


def test_scenarios_and_determinism() -> None:
    assert set(SCENARIOS) == {"monday_pipeline", "lease_design", "busy_desk"}
    runs = []
    for _ in range(2):
        env = Environment("monday_pipeline")
        move(env, 3, "approved")
        move(env, 4, "declined")
        runs.append(env.state_json())
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------- the prototype itself


def test_prototype_compiles_and_its_own_tests_pass(tmp_path: Path) -> None:
    """The prototype on its own (generic names, its own scenarios): it compiles, and the
    package it generates passes its tests, which state every rule of the contract."""
    spec = ROOT / "specs" / "prototypes" / "state_machine.envspec"
    compiled = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "--no-qc", "-o", str(tmp_path), str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    package = tmp_path / "prototypes" / "state_machine"  # the output mirrors specs/prototypes/
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(package),
            str(package / "tests"),
        ],
        cwd=package.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
