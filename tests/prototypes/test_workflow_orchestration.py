"""The distributed workflow orchestration archetype (paper archetype 8), tested on the
generated `cicd_pipeline` package, the domain built on
`specs/prototypes/workflow_orchestration.envspec` (workers are CI runners).

The package is imported as a harness would (generated/ on sys.path, standard library
only) and driven through `Environment.call`. Every rule of the contract has a test:
workers with a role, capability tags and idle/busy state, deregistration refused while
busy; pipelines of stages with an action label, a dependency list, an assigned worker,
a failure policy (abort, skip, retry) and a retry cap; sequential mode (array order,
every pending stage whose dependencies are satisfied, halt on abort) and parallel mode
(every dependency-satisfied pending stage in one wave); failure handling per policy;
explicit retry up to the cap; rollback walking completed stages in reverse completion
order with logged compensating actions; result collection; inter-worker messaging.
Stage outcomes are deterministic (stage `fail_attempts`, world flaky/broken lists).
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

from cicd_pipeline import SCENARIOS, TOOL_SPECS, Environment  # noqa: E402
from cicd_pipeline.environment import WORLD  # noqa: E402

TOOLS_JSON = json.loads((package_dir("cicd_pipeline") / "tools.json").read_text())


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


def stage(sid: str, worker: str, deps: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "action": f"do_{sid}", "worker_id": worker, "depends_on": deps or [], **extra}


def define(env: Environment, pid: str, mode: str, stages: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = ok(
        env, "create_pipeline", {"pipeline_id": pid, "name": pid, "mode": mode, "stages": stages}
    )
    return result


def run(env: Environment, pid: str) -> dict[str, Any]:
    result: dict[str, Any] = ok(env, "run_pipeline", {"pipeline_id": pid})
    return result


def trace(report: dict[str, Any]) -> list[str]:
    return [f"{r['stage_id']}:{r['outcome']}@{r['wave']}" for r in report["executed"]]


def worker_state(env: Environment, worker: str) -> tuple[str, str | None]:
    runner = env.state()["runners"][worker]
    return runner["status"], runner["holding"]


def farm() -> Environment:
    """Runners from the main_branch scenario, no pipelines."""
    env = Environment("main_branch")
    return Environment({"runners": env.state()["runners"]})


# --------------------------------------------------------------------------- workers


def test_workers_register_with_role_and_capabilities_idle() -> None:
    env = Environment()
    w = ok(env, "register_runner", {"worker_id": "r1", "role": "builder", "capabilities": ["linux", "docker", "linux"]})
    assert (w["role"], w["capabilities"], w["status"], w["holding"]) == ("builder", ["linux", "docker"], "idle", None)
    refused(env, "register_runner", {"worker_id": "r1", "role": "x"}, "already_exists")
    ok(env, "register_runner", {"worker_id": "r2", "role": "tester", "capabilities": ["pytest"]})
    assert [r["id"] for r in ok(env, "list_runners", {"capability": "pytest"})] == ["r2"]
    assert [r["id"] for r in ok(env, "list_runners", {"role": "builder", "status": "idle"})] == ["r1"]
    ok(env, "deregister_runner", {"worker_id": "r2"})
    refused(env, "deregister_runner", {"worker_id": "r2"}, "not_found", "not registered")


def test_busy_worker_cannot_be_deregistered_and_goes_idle_again() -> None:
    env = farm()
    define(env, "p", "sequential", [stage("flaky", "linux-2", policy="retry", max_retries=1, fail_attempts=1)])
    assert worker_state(env, "linux-2") == ("idle", None)
    run(env, "p")
    assert worker_state(env, "linux-2") == ("busy", "p/flaky")
    refused(env, "deregister_runner", {"worker_id": "linux-2"}, "conflict", "busy with p/flaky")
    ok(env, "retry_stage", {"pipeline_id": "p", "stage_id": "flaky"})
    assert worker_state(env, "linux-2") == ("idle", None)
    ok(env, "deregister_runner", {"worker_id": "linux-2"})


def test_deregistering_an_idle_worker_unassigns_its_pending_stages() -> None:
    env = Environment("main_branch")
    ok(env, "deregister_runner", {"worker_id": "linux-1"})
    stages = env.state()["pipelines"]["standard-a1b2c3d"]["stages"]
    assert [s["id"] for s in stages if s["worker_id"] is None] == ["checkout", "build", "lint", "package"]
    report = run(env, "standard-a1b2c3d")
    assert report["executed"] == [] and report["waiting"]["checkout"] == "no worker assigned"


# --------------------------------------------------------------------------- definition and assignment


@pytest.mark.parametrize(
    ("stages", "kind", "text"),
    [
        ([stage("a", "linux-1"), stage("a", "linux-1")], "invalid_argument", "used twice"),
        ([stage("a", "linux-1", ["zz"])], "invalid_argument", "unknown stages zz"),
        ([stage("a", "linux-1", ["a"])], "invalid_argument", "depends on itself"),
        (
            [stage("a", "linux-1", ["b"]), stage("b", "linux-1", ["a"]), stage("c", "linux-1")],
            "invalid_argument",
            "a, b form a cycle",
        ),
        ([stage("a b", "linux-1")], "invalid_argument", "must match"),
        ([{"id": "a", "action": ""}], "invalid_argument", "action label"),
        ([stage("a", "linux-1", policy="retry", max_retries=99)], "invalid_argument", "max_retries"),
        ([stage("a", "linux-1", fail_attempts=-1)], "invalid_argument", "fail_attempts"),
        ([stage("a", "ghost")], "not_found", "worker ghost"),
        ([stage("a", "mac-1", requires="docker")], "invalid_argument", "lacks capability docker"),
        ([stage("a", "linux-1", policy="panic")], "invalid_argument", ""),
        ([], "invalid_argument", ""),
    ],
)
def test_pipeline_definitions_are_validated(stages: list[dict[str, Any]], kind: str, text: str) -> None:
    env = farm()
    refused(
        env, "create_pipeline", {"pipeline_id": "p", "name": "p", "mode": "sequential", "stages": stages}, kind, text
    )


def test_pipeline_definition_keeps_stage_fields() -> None:
    env = farm()
    p = define(
        env,
        "p",
        "parallel",
        [
            stage("b", "linux-2", ["a"], policy="retry", max_retries=3, requires="pytest"),
            stage("a", "linux-1", compensation="wipe"),
        ],
    )
    assert p["status"] == "pending" and p["mode"] == "parallel"
    b, a = p["stages"]
    assert (b["action"], b["depends_on"], b["worker_id"], b["policy"], b["max_retries"], b["requires"]) == (
        "do_b",
        ["a"],
        "linux-2",
        "retry",
        3,
        "pytest",
    )
    assert (b["status"], b["attempts"], b["retries"], b["compensation"]) == ("pending", 0, 0, "undo_do_b")
    assert a["compensation"] == "wipe" and a["policy"] == "abort" and a["max_retries"] == 0
    refused(
        env,
        "create_pipeline",
        {"pipeline_id": "p", "name": "again", "mode": "parallel", "stages": [stage("x", "linux-1")]},
        "already_exists",
    )


def test_stage_assignment_checks_capability_and_state() -> None:
    env = Environment("main_branch")
    refused(
        env,
        "assign_stage",
        {"pipeline_id": "standard-a1b2c3d", "stage_id": "build", "worker_id": "mac-1"},
        "invalid_argument",
        "lacks capability docker",
    )
    refused(
        env,
        "assign_stage",
        {"pipeline_id": "standard-a1b2c3d", "stage_id": "build", "worker_id": "nobody"},
        "not_found",
    )
    refused(
        env,
        "assign_stage",
        {"pipeline_id": "standard-a1b2c3d", "stage_id": "nope", "worker_id": "mac-1"},
        "not_found",
        "no stage nope",
    )
    assert (
        ok(env, "assign_stage", {"pipeline_id": "standard-a1b2c3d", "stage_id": "checkout", "worker_id": "mac-1"})[
            "worker_id"
        ]
        == "mac-1"
    )
    ok(env, "execute_stage", {"pipeline_id": "standard-a1b2c3d", "stage_id": "checkout"})
    refused(
        env,
        "assign_stage",
        {"pipeline_id": "standard-a1b2c3d", "stage_id": "checkout", "worker_id": "linux-1"},
        "invalid_state",
        "only pending stages",
    )


# --------------------------------------------------------------------------- execution modes


def test_sequential_mode_runs_stages_in_array_order() -> None:
    env = farm()
    # `late` comes first in the array but depends on `early`: the first pass skips it
    define(
        env, "p", "sequential", [stage("late", "linux-1", ["early"]), stage("early", "linux-2"), stage("free", "mac-1")]
    )
    report = run(env, "p")
    assert trace(report) == ["early:completed@0", "free:completed@0", "late:completed@0"]
    assert report["status"] == "completed"
    assert [r["seq"] for r in env.state()["run_log"]] == [1, 2, 3]


def test_sequential_mode_halts_on_an_abort_failure() -> None:
    env = farm()
    define(
        env,
        "p",
        "sequential",
        [
            stage("a", "linux-1"),
            stage("b", "linux-2", fail_attempts=1),
            stage("c", "mac-1"),
            stage("d", "deployer", ["c"]),
        ],
    )
    report = run(env, "p")
    assert trace(report) == ["a:completed@0", "b:failed@0"]
    assert report["status"] == "failed"
    assert report["waiting"] == {"c": "pipeline failed", "d": "pipeline failed; waiting for c"}
    assert env.state()["pipelines"]["p"]["stages"][2]["attempts"] == 0
    refused(env, "execute_stage", {"pipeline_id": "p", "stage_id": "c"}, "invalid_state", "is failed")
    refused(env, "run_pipeline", {"pipeline_id": "p"}, "invalid_state", "is failed")


def test_parallel_mode_executes_each_wave_of_ready_stages() -> None:
    env = Environment("main_branch")
    report = run(env, "standard-a1b2c3d")
    # lint waits for wave 3 because its runner (linux-1) builds in wave 2;
    # integration_tests waits for wave 4 because unit_tests holds linux-2 in wave 3
    assert trace(report) == [
        "checkout:completed@1",
        "build:completed@2",
        "unit_tests:completed@3",
        "lint:skipped@3",
        "integration_tests:retry_scheduled@4",
    ]
    assert report["awaiting_retry"] == ["integration_tests"]
    assert report["waiting"] == {"package": "waiting for integration_tests", "deploy_staging": "waiting for package"}
    assert env.state()["pipelines"]["standard-a1b2c3d"]["waves"] == 4


def test_parallel_wave_runs_every_member_even_when_one_aborts() -> None:
    env = farm()
    define(
        env,
        "p",
        "parallel",
        [
            stage("a", "linux-1", fail_attempts=1),
            stage("b", "linux-2"),
            stage("c", "mac-1"),
            stage("d", "deployer", ["b"]),
        ],
    )
    report = run(env, "p")
    assert trace(report) == ["a:failed@1", "b:completed@1", "c:completed@1"]
    assert report["status"] == "failed"
    assert all(r["status"] == "idle" for r in env.state()["runners"].values())


def test_single_stage_execution_enforces_the_dependency_contract() -> None:
    env = Environment("main_branch")
    refused(
        env,
        "execute_stage",
        {"pipeline_id": "standard-a1b2c3d", "stage_id": "package"},
        "invalid_state",
        "waits for unit_tests, integration_tests, lint",
    )
    first = ok(env, "execute_stage", {"pipeline_id": "standard-a1b2c3d", "stage_id": "checkout"})
    assert (first["outcome"], first["attempt"], first["wave"], first["worker_id"]) == ("completed", 1, 0, "linux-1")
    assert env.state()["pipelines"]["standard-a1b2c3d"]["status"] == "running"
    refused(
        env,
        "execute_stage",
        {"pipeline_id": "standard-a1b2c3d", "stage_id": "checkout"},
        "invalid_state",
        "is completed",
    )
    # lint's dependency (checkout) is satisfied: it may run before build
    assert ok(env, "execute_stage", {"pipeline_id": "standard-a1b2c3d", "stage_id": "lint"})["outcome"] == "skipped"


# --------------------------------------------------------------------------- failure policies


def test_skip_policy_marks_the_stage_skipped_and_dependents_continue() -> None:
    env = farm()
    define(
        env,
        "p",
        "sequential",
        [stage("opt", "linux-1", policy="skip", fail_attempts=1), stage("next", "linux-2", ["opt"])],
    )
    report = run(env, "p")
    assert trace(report) == ["opt:skipped@0", "next:completed@0"]
    results = ok(env, "collect_results", {"pipeline_id": "p"})
    assert results["status"] == "completed" and results["skipped"] == ["opt"] and results["completed"] == ["next"]


def test_retry_policy_waits_for_an_explicit_retry_until_the_cap() -> None:
    env = farm()
    define(
        env,
        "p",
        "sequential",
        [stage("call", "linux-2", policy="retry", max_retries=2, fail_attempts=5), stage("after", "linux-1", ["call"])],
    )
    report = run(env, "p")
    assert trace(report) == ["call:retry_scheduled@0"] and report["awaiting_retry"] == ["call"]
    s = env.state()["pipelines"]["p"]["stages"][0]
    assert (s["status"], s["retries"], s["attempts"]) == ("pending", 1, 1)
    assert run(env, "p")["executed"] == []  # run_pipeline never re-runs a stage awaiting retry
    refused(env, "execute_stage", {"pipeline_id": "p", "stage_id": "call"}, "invalid_state", "call retry_stage")
    second = ok(env, "retry_stage", {"pipeline_id": "p", "stage_id": "call"})
    assert (second["outcome"], second["attempt"]) == ("retry_scheduled", 2)
    third = ok(env, "retry_stage", {"pipeline_id": "p", "stage_id": "call"})
    assert (third["outcome"], third["attempt"]) == ("failed", 3)
    assert "retry cap 2 reached" in third["detail"]
    assert env.state()["pipelines"]["p"]["status"] == "failed"
    assert worker_state(env, "linux-2") == ("idle", None)
    refused(env, "retry_stage", {"pipeline_id": "p", "stage_id": "call"}, "invalid_state", "is failed")


def test_retry_succeeds_when_the_failures_run_out() -> None:
    env = farm()
    define(
        env,
        "p",
        "parallel",
        [stage("call", "linux-2", policy="retry", max_retries=1, fail_attempts=1), stage("after", "linux-1", ["call"])],
    )
    run(env, "p")
    refused(env, "retry_stage", {"pipeline_id": "p", "stage_id": "after"}, "invalid_state", "not awaiting a retry")
    assert ok(env, "retry_stage", {"pipeline_id": "p", "stage_id": "call"})["outcome"] == "completed"
    assert run(env, "p")["status"] == "completed"


def test_abort_policy_fails_the_pipeline_and_frees_its_workers() -> None:
    env = farm()
    define(
        env,
        "p",
        "parallel",
        [
            stage("slow", "linux-2", policy="retry", max_retries=3, fail_attempts=1),
            stage("boom", "linux-1", fail_attempts=1),
        ],
    )
    report = run(env, "p")
    assert trace(report) == ["slow:retry_scheduled@1", "boom:failed@1"]
    assert worker_state(env, "linux-2") == ("idle", None), "a failed pipeline holds no worker"


def test_outcomes_are_deterministic_from_world_data() -> None:
    assert WORLD["flaky_actions"]["integration_tests"] == 1
    env = farm()
    ok(env, "trigger_build", {"commit": "deadbee", "mode": "sequential"})
    report = run(env, "standard-deadbee")
    assert trace(report)[2] == "unit_tests:retry_scheduled@0"
    assert ok(env, "retry_stage", {"pipeline_id": "standard-deadbee", "stage_id": "unit_tests"})["outcome"] == "failed"
    traces = []
    for _ in range(2):
        again = Environment("main_branch")
        run(again, "standard-a1b2c3d")
        traces.append(again.state_json())
    assert traces[0] == traces[1]


# --------------------------------------------------------------------------- rollback and results


def test_rollback_compensates_completed_stages_in_reverse_completion_order() -> None:
    env = farm()
    define(
        env,
        "p",
        "sequential",
        [
            stage("late", "linux-1", ["early"], compensation="undo_late"),
            stage("early", "linux-2", compensation="undo_early"),
            stage("skip", "mac-1", policy="skip", fail_attempts=1),
            stage("mid", "deployer", ["early"], compensation="undo_mid"),
        ],
    )
    run(env, "p")
    order = [
        s["id"]
        for s in sorted(env.state()["pipelines"]["p"]["stages"], key=lambda s: s["completed_seq"])
        if s["completed_seq"]
    ]
    assert order == ["early", "mid", "late"]
    undone = ok(env, "rollback_pipeline", {"pipeline_id": "p"})
    assert [(c["stage_id"], c["action"], c["worker_id"]) for c in undone] == [
        ("late", "undo_late", "linux-1"),
        ("mid", "undo_mid", "deployer"),
        ("early", "undo_early", "linux-2"),
    ]
    assert [c["seq"] for c in ok(env, "list_compensations", {"pipeline_id": "p"})] == [1, 2, 3]
    results = ok(env, "collect_results", {"pipeline_id": "p"})
    assert (
        results["status"] == "rolled_back"
        and results["compensated"] == ["late", "early", "mid"]
        and results["skipped"] == ["skip"]
    )
    refused(env, "rollback_pipeline", {"pipeline_id": "p"}, "invalid_state", "already rolled back")


def test_rollback_of_a_stuck_release_releases_the_busy_worker() -> None:
    env = Environment("release_day")
    assert worker_state(env, "deployer") == ("busy", "release-9f8e7d6/deploy_prod")
    undone = ok(env, "rollback_pipeline", {"pipeline_id": "release-9f8e7d6"})
    assert [c["action"] for c in undone] == ["restore_db_snapshot", "discard_test_report", "delete_image"]
    assert worker_state(env, "deployer") == ("idle", None)
    refused(
        env,
        "retry_stage",
        {"pipeline_id": "release-9f8e7d6", "stage_id": "deploy_prod"},
        "invalid_state",
        "rolled_back",
    )
    env2 = farm()
    define(env2, "fresh", "sequential", [stage("a", "linux-1")])
    refused(env2, "rollback_pipeline", {"pipeline_id": "fresh"}, "invalid_state", "no completed stage")


def test_results_collect_outcomes_attempts_and_outputs() -> None:
    env = Environment("main_branch")
    run(env, "standard-a1b2c3d")
    mid = ok(env, "collect_results", {"pipeline_id": "standard-a1b2c3d"})
    assert mid["status"] == "running" and mid["awaiting_retry"] == ["integration_tests"]
    assert mid["outputs"]["build"] == "build_image passed on linux-1 at a1b2c3d"
    by_id = {s["id"]: s for s in mid["stages"]}
    assert (by_id["integration_tests"]["attempts"], by_id["integration_tests"]["last_error"]) == (
        1,
        "attempt 1 of integration_tests failed",
    )
    assert mid["pending"] == ["integration_tests", "package", "deploy_staging"]
    ok(env, "retry_stage", {"pipeline_id": "standard-a1b2c3d", "stage_id": "integration_tests"})
    run(env, "standard-a1b2c3d")
    done = ok(env, "collect_results", {"pipeline_id": "standard-a1b2c3d"})
    assert done["completed"] == ["checkout", "build", "unit_tests", "integration_tests", "package", "deploy_staging"]
    assert len(ok(env, "list_stage_runs", {"pipeline_id": "standard-a1b2c3d", "stage_id": "integration_tests"})) == 2
    refused(env, "collect_results", {"pipeline_id": "nope"}, "not_found")


# --------------------------------------------------------------------------- messaging and package


def test_workers_exchange_in_band_messages() -> None:
    env = Environment("release_day")
    m = ok(
        env,
        "send_message",
        {"sender": "deployer", "recipient": "linux-1", "body": "hold builds", "pipeline_id": "release-9f8e7d6"},
    )
    assert (m["id"], m["sent_at"]) == (1, "2025-06-10T09:00:00")
    ok(env, "send_message", {"sender": "linux-2", "recipient": "linux-1", "body": "ok"})
    refused(
        env, "send_message", {"sender": "linux-1", "recipient": "linux-1", "body": "echo"}, "invalid_argument", "itself"
    )
    refused(env, "send_message", {"sender": "ghost", "recipient": "linux-1", "body": "x"}, "not_found")
    refused(
        env,
        "send_message",
        {"sender": "linux-2", "recipient": "linux-1", "body": "x", "pipeline_id": "nope"},
        "not_found",
    )
    refused(env, "send_message", {"sender": "linux-2", "recipient": "linux-1", "body": ""}, "invalid_argument")
    assert [x["body"] for x in ok(env, "list_messages", {"recipient": "linux-1"})] == ["hold builds", "ok"]
    assert [x["id"] for x in ok(env, "list_messages", {"pipeline_id": "release-9f8e7d6"})] == [1]


def test_read_and_write_tools_are_classified() -> None:
    kinds = {t["name"]: t["modifies_state"] for t in TOOLS_JSON["tools"]}
    for name in (
        "register_runner",
        "deregister_runner",
        "create_pipeline",
        "assign_stage",
        "execute_stage",
        "run_pipeline",
        "retry_stage",
        "rollback_pipeline",
        "send_message",
        "trigger_build",
    ):
        assert kinds[name], name
    for name in (
        "list_runners",
        "collect_results",
        "get_pipeline",
        "list_pipelines",
        "list_stage_runs",
        "list_compensations",
        "list_messages",
        "pipelines_for_commit",
    ):
        assert not kinds[name], name
    assert set(kinds) == set(TOOL_SPECS)
    assert set(SCENARIOS) == {"main_branch", "release_day", "busy_farm"}


# --------------------------------------------------------------------------- the prototype itself


def test_prototype_compiles_and_its_own_tests_pass(tmp_path: Path) -> None:
    """The prototype on its own (generic names, its own scenarios): it compiles, and the
    package it generates passes its tests, which state every rule of the contract."""
    spec = ROOT / "specs" / "prototypes" / "workflow_orchestration.envspec"
    compiled = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "--no-qc", "-o", str(tmp_path), str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    package = tmp_path / "prototypes" / "workflow_orchestration"  # the output mirrors specs/prototypes/
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
