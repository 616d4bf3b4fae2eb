"""Tasks (compiler/synth/tasks.py and the parts it drives: task_build, audits,
declared_tasks) and the scorer every package ships (scoring.py): kept tasks
pass every audit, re-checked from the written JSONL through the generated packages
alone; one deliberately broken task per audit is rejected by that audit."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from refresh_golden import environment_name
from shipped import library_specs, package_dir, package_parents

from compiler.analyse import analyse_file
from compiler.synth import audits, declared_tasks, task_build, task_prompt, tasks
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent
SPECS = library_specs()

RECHECK = textwrap.dedent(
    """
    import importlib, json, os, sys
    sys.path[:0] = sys.argv[1].split(os.pathsep)
    bad = []
    for line in open(sys.argv[2], encoding="utf-8"):
        task = json.loads(line)
        packages = {n: importlib.import_module(n) for n in task["envs"]}
        def run(calls):
            sessions = {}
            for n in task["envs"]:
                start = task["initial_state"][n]
                session = packages[n].Environment(start["scenario"])
                if start["changes"]:
                    session = packages[n].Environment(packages[n].scoring.apply_changes(session.state(), start["changes"]))
                sessions[n] = session
            initial = {n: s.state() for n, s in sessions.items()}
            for c in calls:
                tool = c["tool"].split("__", 1)[1] if len(task["envs"]) > 1 else c["tool"]
                sessions[c["env"]].call(tool, c["args"])
            return packages[task["envs"][0]].score(task, {n: s.state() for n, s in sessions.items()}, initial)
        gold = task["gold_calls"]
        first, again, nothing = run(gold), run(gold), run([])
        if not (first["passed"] and first["reward"] == 1.0):
            bad.append((task["id"], "gold", first["failure_reason"]))
        if nothing["passed"] or nothing["reward"] != 0.0:
            bad.append((task["id"], "nothing"))
        if first != again:
            bad.append((task["id"], "determinism"))
        if run(gold[:-1])["passed"]:
            bad.append((task["id"], "without the last call"))
    print(json.dumps(bad))
    """
)


@pytest.fixture(scope="module")
def library() -> dict[str, SampleEnv]:
    envs = {}
    for spec in SPECS:
        env = analyse_file(spec).environment
        assert env is not None
        envs[env.header.name] = load_env(env, package_dir(env.header.name))
    return envs


def _tasks(
    envs: dict[str, SampleEnv], count: int, seed: int = 1, span: tuple[int, int] = (1, 1), declared: bool = False
) -> list[dict[str, Any]]:
    """Sampled tasks (the specs' own `task`s too with `declared`)."""
    options = task_build.TaskOptions(tasks=count, seed=seed, envs=span)
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=declared)
    assert report.kept == len(kept) == count, report.to_json()
    return kept


def _recheck_outside_envc(kept: list[dict[str, Any]], tmp_path: Path) -> list[Any]:
    path = tmp_path / "tasks.jsonl"
    path.write_text(tasks.tasks_to_jsonl(kept), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-c", RECHECK, os.pathsep.join(package_parents()), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: list[Any] = json.loads(done.stdout)
    return result


TASKS_PER_SPEC = 6
"""Tasks drawn from each shipped spec here (`envc library tasks` asks 100 of each)."""


@pytest.fixture(scope="module")
def shipped_tasks(library: dict[str, SampleEnv], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """TASKS_PER_SPEC audited tasks of every shipped spec, and what the recheck outside
    envc found wrong with each spec's tasks: ONE recheck process for the library (a
    process per spec cost an interpreter start and every package's import per spec)."""
    kept = {name: _tasks({name: env}, TASKS_PER_SPEC, declared=True) for name, env in library.items()}
    bad = _recheck_outside_envc(
        [task for tasks_ in kept.values() for task in tasks_], tmp_path_factory.mktemp("recheck")
    )
    ids = {name: {task["id"] for task in tasks_} for name, tasks_ in kept.items()}
    return {name: [tasks_, [problem for problem in bad if problem[0] in ids[name]]] for name, tasks_ in kept.items()}


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_every_shipped_spec_gives_audited_tasks(
    spec: Path, library: dict[str, SampleEnv], shipped_tasks: dict[str, list[Any]]
) -> None:
    name = environment_name(spec)
    kept, bad = shipped_tasks[name]
    model = library[name].model
    declared = {family.name: family.reward for family in model.families}
    chains = "partial" if model.header.archetype == "file_workspace" else "binary"
    assert len(kept) == TASKS_PER_SPEC
    for task in kept:
        assert task["max_turns"] == 32 and task["timeout_s"] == 300 and task["tools"]
        assert task["verifier"]["checks"] and task["prompt"]
        family = task["source"].get("family")
        assert task["reward"] == (declared[family] if family else chains), task["source"]
    assert bad == []


def test_cross_environment_tasks_are_scored_across_states(library: dict[str, SampleEnv], tmp_path: Path) -> None:
    envs = {n: library[n] for n in ("hr_leave_payroll", "team_calendar", "expense_claims")}
    kept = _tasks(envs, 15, seed=3, span=(2, 3))
    for task in kept:
        assert len(task["envs"]) >= 2
        assert {c["env"] for c in task["verifier"]["checks"]} == set(task["envs"])
        assert all(c["tool"].startswith(c["env"] + "__") for c in task["gold_calls"])
        assert all(t["function"]["name"].split("__")[0] in task["envs"] for t in task["tools"])
    assert _recheck_outside_envc(kept, tmp_path) == []


def test_same_seed_same_bytes(library: dict[str, SampleEnv]) -> None:
    envs = {"ticketing": library["ticketing"]}
    one = tasks.tasks_to_jsonl(_tasks(envs, 10, seed=8))
    assert tasks.tasks_to_jsonl(_tasks(envs, 10, seed=8)) == one
    assert tasks.tasks_to_jsonl(_tasks(envs, 10, seed=9)) != one


def test_prompt_names_write_arguments_but_not_generated_values(library: dict[str, SampleEnv]) -> None:
    envs = {"ticketing": library["ticketing"]}
    for task in _tasks(envs, 30, seed=4):
        for call in task["gold_calls"]:
            if call["tool"] in ("resolve_ticket", "assign_ticket") and "resolution" in call["args"]:
                # a chain's request quotes the free text; a family's is the spec's own wording
                written = (
                    call["args"]["resolution"] if "family" in task["source"] else f'"{call["args"]["resolution"]}"'
                )
                assert written in task["prompt"]
        assert "scenario" not in task["prompt"] and "verifier" not in task["prompt"]


def test_declared_tasks_come_out_in_the_same_format(library: dict[str, SampleEnv]) -> None:
    """A spec `task`: its request is the prompt, its solution the gold calls, its verify
    lines the checks; it is audited like the others, and the report says what became of it."""
    envs = {"ticketing": library["ticketing"]}
    options = task_build.TaskOptions(tasks=3, seed=1)
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options)
    declared = kept[0]
    assert report.declared == {"ticketing.close_vpn_ticket": "kept"}
    assert declared["source"] == {"declared": "declared-ticketing-close_vpn_ticket"}
    assert declared["prompt"].startswith("The VPN issue has been fixed by Bob.")
    assert [c["tool"] for c in declared["gold_calls"]] == ["resolve_ticket", "close_ticket"]
    assert declared["verifier"]["checks"] == [
        {"env": "ticketing", "path": "/tickets/2/status", "op": "equals", "expected": "closed", "weight": 1.0},
        {"env": "ticketing", "path": "/tickets/2/resolution", "op": "not_null", "weight": 1.0},
    ]


def test_declared_tasks_the_audits_reject_are_reported(library: dict[str, SampleEnv]) -> None:
    envs = {"bfcl_ticket": library["bfcl_ticket"], "cicd_pipeline": library["cicd_pipeline"]}
    options = task_build.TaskOptions(tasks=2, seed=1)
    _, report = tasks.synthesise(tasks.sampler_for(envs, options), options)
    assert report.declared["bfcl_ticket.close_string_id_ticket"] == "kept"
    assert report.declared["bfcl_ticket.log_and_resolve"].startswith("rejected by perturbations_fail")
    assert report.declared["cicd_pipeline.ship_commit_a1b2c3d"].startswith("rejected by objective_consistency")
    # kept: among the 30 pipelines of its scenario, random calls no longer roll this release
    # back by chance (with the 6 of the old inline data they did: rejected by hacking_floor)
    assert report.declared["cicd_pipeline.roll_back_release"] == "kept"


VERIFY_PROBE = """environment verify_probe:
    title "Verify probe"

enum Status:
    open, closed

record Ticket:
    status: Status = Status.open
    assignee: optional[str] = None

state:
    tickets: map[int, Ticket] = {2: {"status": "open"}}
    on_call: list[str] = []
    flag: bool = True

tool close_ticket(ticket_id: int) -> bool:
    require ticket_id in tickets else not_found("no such ticket")
    tickets[ticket_id].status = Status.closed
    return True

task probe:
    request "Close ticket 2."
    solution:
        close_ticket(ticket_id=2)
    verify CONDITION
"""


@pytest.mark.parametrize(
    ("condition", "checks"),
    [
        ("tickets[2].status == Status.closed", [{"path": "/tickets/2/status", "op": "equals", "expected": "closed"}]),
        ("tickets[2].assignee is None", [{"path": "/tickets/2/assignee", "op": "equals", "expected": None}]),
        ("tickets[2].assignee is not None", [{"path": "/tickets/2/assignee", "op": "not_null"}]),
        ("len(tickets) == 1", [{"path": "/tickets", "op": "length", "expected": 1}]),
        (
            "2 in tickets and 9 not in tickets",
            [{"path": "/tickets/2", "op": "present"}, {"path": "/tickets/9", "op": "absent"}],
        ),
        ('"alice" in on_call', [{"path": "/on_call", "op": "contains", "expected": "alice"}]),
        ("not flag", [{"path": "/flag", "op": "equals", "expected": False}]),
        ("flag", [{"path": "/flag", "op": "equals", "expected": True}]),
        (
            'len([t for t in values(tickets) if t.status == Status.closed and t.assignee != "bob"]) == 1',
            [
                {
                    "path": "/tickets",
                    "where": [
                        {"path": "/status", "op": "equals", "expected": "closed"},
                        {"path": "/assignee", "op": "not_equals", "expected": "bob"},
                    ],
                    "op": "count",
                    "expected": 1,
                }
            ],
        ),
        (
            "[t.status for t in values(tickets)] == [Status.closed]",
            [
                {
                    "path": "/tickets",
                    "where": [],
                    "op": "select",
                    "select": "/status",
                    "sorted": False,
                    "expected": ["closed"],
                }
            ],
        ),
        (
            'sorted([p for p in on_call if p.startswith("a")]) == ["alice"]',
            [
                {
                    "path": "/on_call",
                    "where": [{"path": "", "op": "starts_with", "expected": "a"}],
                    "op": "select",
                    "select": "",
                    "sorted": True,
                    "expected": ["alice"],
                }
            ],
        ),
        (
            "len([k for k in keys(tickets) if k == 2]) == 1",
            [
                {
                    "path": "/tickets",
                    "where": [{"path": "", "op": "equals", "expected": 2}],
                    "over": "keys",
                    "op": "count",
                    "expected": 1,
                }
            ],
        ),
        (
            "[tickets[2].status] == [Status.closed]",
            [
                {"path": "/tickets/2/status", "op": "equals", "expected": "closed"},
            ],
        ),
    ],
)
def test_verify_lines_become_path_checks(condition: str, checks: list[dict[str, Any]]) -> None:
    from compiler.analyse import analyse_source

    result = analyse_source(VERIFY_PROBE.replace("CONDITION", condition), "verify_probe.envspec")
    assert result.environment is not None, [d.message for d in result.diagnostics]
    assert declared_tasks.verify_checks(result.environment.tasks[0].verify[0]) == checks


def test_verify_lines_that_are_no_path_check_are_not_expressible(library: dict[str, SampleEnv]) -> None:
    report = next(t for t in library["claw_workspace"].model.tasks if t.name == "march_scores_report")
    with pytest.raises(declared_tasks.NotExpressible):
        declared_tasks.verify_checks(report.verify[1])  # a comprehension over the lines of a file's text
    door = next(t for t in library["telemetry_bus"].model.tasks if t.name == "report_door_left_open")
    with pytest.raises(declared_tasks.NotExpressible):
        declared_tasks.verify_checks(door.verify[1])  # an index computed from the state, with no final state given
    final = {"streams": {"sensor.temperature": {"history": [1, 2, 3, 7]}}}
    assert declared_tasks.verify_checks(door.verify[1], final)[0]["path"] == "/events/7/payload/device"


def test_checks_over_collections(library: dict[str, SampleEnv]) -> None:
    scoring = _scorer(library)
    state = {"e": {"m": {"1": {"s": "open", "n": "b"}, "2": {"s": "done", "n": "a"}, "3": {"s": "done", "n": "c"}}}}
    done = [{"path": "/s", "op": "equals", "expected": "done"}]

    def reward(**check: Any) -> float:
        task = {"verifier": {"checks": [{"env": "e", "path": "/m", "weight": 1.0, **check}]}}
        result: dict[str, Any] = scoring.score(task, state, state)
        return float(result["reward"])

    assert reward(op="count", where=done, expected=2) == 1.0
    assert reward(op="count", where=done, expected=3) == 0.0
    assert (
        reward(op="count", over="keys", where=[{"path": "", "op": "starts_with", "expected": "1"}], expected=1) == 1.0
    )
    assert reward(op="select", select="/n", where=done, expected=["a", "c"]) == 1.0
    assert reward(op="select", select="/n", expected=["a", "b", "c"]) == 0.0
    assert reward(op="select", select="/n", sorted=True, expected=["a", "b", "c"]) == 1.0
    assert reward(op="select", select="/missing", expected=[None, None, None]) == 0.0  # a missing field never matches
    assert reward(op="starts_with", path="/m/1/n", expected="b") == 1.0


# --------------------------------------------------------------------------- one broken task per audit


@pytest.fixture(scope="module")
def good(library: dict[str, SampleEnv]) -> dict[str, Any]:
    """A kept ticketing task from a sampled chain (not a family draw) with two writes,
    the second on the same ticket."""
    envs = {"ticketing": library["ticketing"]}
    for task in _tasks(envs, 40, seed=6):
        if "chain" not in task["source"]:
            continue
        writes = [c for c in task["gold_calls"] if library["ticketing"].tools[c["tool"]].writes]
        if len(writes) >= 2 and all("ticket_id" in c["args"] for c in writes):
            return task
    raise AssertionError("no two-write ticketing task among 40")


def _fails(task: dict[str, Any], library: dict[str, SampleEnv], audit: str) -> None:
    with pytest.raises(audits.AuditFailed) as failed:
        audits.audit(task, {"ticketing": library["ticketing"]}, random.Random(0))
    assert failed.value.audit == audit, failed.value


def test_the_good_task_passes(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    assert audits.audit(good, {"ticketing": library["ticketing"]}, random.Random(0)) is not None


def test_gold_that_does_not_pass_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    broken = copy.deepcopy(good)
    broken["verifier"]["checks"][0]["op"] = "absent"
    _fails(broken, library, "gold_scores_1")


def test_a_verifier_doing_nothing_passes_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    broken = copy.deepcopy(good)
    broken["verifier"]["checks"] = [{"env": "ticketing", "path": "/tickets", "op": "absent", "weight": 1.0}]
    broken["verifier"]["checks"][0]["op"] = "equals"
    start = task_build.open_session(library["ticketing"], good["initial_state"]["ticketing"]).state()
    broken["verifier"]["checks"][0]["expected"] = start["tickets"]
    broken["gold_calls"] = []  # gold is doing nothing too: it scores 1, and so does nothing
    broken["verifier"]["collateral"]["allowed"] = {"ticketing": []}
    _fails(broken, library, "nothing_scores_0")


def test_a_verifier_that_ignores_the_last_write_is_rejected(
    good: dict[str, Any], library: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(good)
    last = audits._writes(broken, {"ticketing": library["ticketing"]})[-1]
    finals, initial, _ = task_build.replay({"ticketing": library["ticketing"]}, broken, broken["gold_calls"][:last])
    # only what the writes before the last one change is checked, and everything may change
    broken["verifier"]["checks"] = [
        {"env": "ticketing", **c, "weight": 1.0}
        for c in task_build.expected_changes(initial["ticketing"], finals["ticketing"])
    ]
    broken["verifier"]["collateral"]["allowed"] = {"ticketing": ["/tickets", "/current_user", "/next_ticket_id"]}
    _fails(broken, library, "every_prefix_fails")  # the calls before the last write already pass
    with pytest.raises(audits.AuditFailed) as failed:  # and without it, perturbing gold shows the same
        audits._perturbations_fail(broken, {"ticketing": library["ticketing"]}, random.Random(0))
    assert failed.value.audit == "perturbations_fail"


def test_a_check_expecting_a_value_nothing_shows_is_rejected(
    good: dict[str, Any], library: dict[str, SampleEnv]
) -> None:
    """Ids, enum members and world values can be looked up; a free text the prompt does
    not name cannot, so no check may expect it."""
    envs = {"ticketing": library["ticketing"]}
    audits._data_consistency(good, envs)
    broken = copy.deepcopy(good)
    broken["gold_calls"][-1]["args"]["resolution"] = "a value nobody mentions"
    audits._data_consistency(broken, envs)  # an argument the request leaves open is fine ...
    broken["verifier"]["checks"].append(
        {"env": "ticketing", "path": "/tickets/1/resolution", "op": "equals", "expected": "a value nobody mentions"}
    )
    with pytest.raises(audits.AuditFailed) as failed:  # ... as long as no check expects it
        audits._data_consistency(broken, envs)
    assert failed.value.audit == "data_consistency" and "a value nobody mentions" in failed.value.why


def test_a_prompt_that_gives_away_a_computed_value_is_rejected(
    good: dict[str, Any], library: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(good)
    broken["verifier"]["checks"].append(
        {"env": "ticketing", "path": "/tickets/1/title", "op": "equals", "expected": "computed-value-42", "weight": 1.0}
    )
    broken["prompt"] += ' The answer is "computed-value-42".'
    with pytest.raises(audits.AuditFailed) as failed:
        audits._information_separation(broken, {"ticketing": library["ticketing"]})
    assert failed.value.audit == "information_separation"


def test_a_gold_write_no_check_reads_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    envs = {"ticketing": library["ticketing"]}
    broken = copy.deepcopy(good)
    first = audits._writes(broken, envs)[0]
    finals, initial, _ = task_build.replay(envs, broken, broken["gold_calls"][: first + 1])
    touched = library["ticketing"].package.scoring.changed_paths(initial["ticketing"], finals["ticketing"])
    broken["verifier"]["checks"] = [
        c for c in broken["verifier"]["checks"] if not any(audits._related(c["path"], p) for p in touched)
    ]
    with pytest.raises(audits.AuditFailed) as failed:
        audits._objective_consistency(broken, envs)
    assert failed.value.audit == "objective_consistency" and f"call {first}" in failed.value.why


def test_a_verifier_other_arguments_also_pass_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    broken = copy.deepcopy(good)
    broken["verifier"]["checks"] = [c for c in broken["verifier"]["checks"] if c["path"].endswith("/updated_at")]
    broken["verifier"]["collateral"]["allowed"] = {"ticketing": ["/tickets"]}
    with pytest.raises(audits.AuditFailed) as failed:
        audits._answer_uniqueness(broken, {"ticketing": library["ticketing"]}, random.Random(0))
    assert failed.value.audit == "answer_uniqueness"


def test_replays_that_differ_are_rejected(
    good: dict[str, Any], library: dict[str, SampleEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = task_build.replay
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        """Each replay ends in another audit log (which no check reads, so scores agree)."""
        finals, initial, results = original(*args, **kwargs)
        calls["n"] += 1
        return {n: {**s, "audit_log": [calls["n"]]} for n, s in finals.items()}, initial, results

    monkeypatch.setattr(audits, "replay", flaky)
    _fails(copy.deepcopy(good), library, "determinism")


def test_a_task_a_baseline_passes_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    broken = copy.deepcopy(good)
    broken["verifier"]["checks"] = [c for c in broken["verifier"]["checks"] if c["path"].endswith("/updated_at")]
    broken["verifier"]["collateral"]["allowed"] = {"ticketing": ["/tickets", "/current_user", "/next_ticket_id"]}
    with pytest.raises(audits.AuditFailed) as failed:
        audits._hacking_floor(broken, {"ticketing": library["ticketing"]}, random.Random(0))
    assert failed.value.audit == "hacking_floor"


def test_a_request_that_spells_out_calls_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    for recipe in (
        'Please resolve ticket (ticket 2, resolution "river echo").',
        "Call resolve_ticket on the printer ticket.",
        "Close the ticket, the one the create ticket step gave.",
    ):
        _fails(dict(copy.deepcopy(good), prompt=recipe), library, "no_recipe")


def _no_placeholder_fails(task: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    with pytest.raises(audits.AuditFailed) as failed:
        audits._no_placeholder(task, {"ticketing": library["ticketing"]})
    assert failed.value.audit == "no_placeholder"


def test_an_argument_from_nowhere_is_rejected(good: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    unrecorded = copy.deepcopy(good)
    del unrecorded["source"]["origins"]
    _fails(unrecorded, library, "no_placeholder")
    invented = copy.deepcopy(good)
    first = invented["source"]["origins"][0]
    name = next(iter(invented["gold_calls"][0]["args"]), None)
    if name is not None:
        first[name] = "invented"
        _fails(invented, library, "no_placeholder")
    pool, values = next(iter(library["ticketing"].model.value_pools.items()))
    claimed = copy.deepcopy(good)
    call = next(c for c in claimed["gold_calls"] if any(isinstance(v, str) for v in c["args"].values()))
    index = claimed["gold_calls"].index(call)
    param = next(n for n, v in call["args"].items() if isinstance(v, str))
    call["args"][param] = "harbor lumen"  # not in the pool it claims
    claimed["source"]["origins"][index][param] = f"pool:{pool}"
    assert "harbor lumen" not in values
    _no_placeholder_fails(claimed, library)  # (gold itself may now fail: the audit is run alone)


def test_a_reference_two_entities_fit_is_rejected(library: dict[str, SampleEnv]) -> None:
    envs = {"ticketing": library["ticketing"]}
    task = next(
        t
        for t in _tasks(envs, 40, seed=6)
        if "chain" in t["source"] and any(not r["by_key"] for r in t["source"]["references"])
    )
    reference = next(r for r in task["source"]["references"] if not r["by_key"])
    broken = copy.deepcopy(task)
    broken_reference = next(r for r in broken["source"]["references"] if r == reference)
    broken_reference["fields"] = {}  # selects every ticket
    _fails(broken, library, "referents_unique")
    elsewhere = copy.deepcopy(task)
    other = next(r for r in elsewhere["source"]["references"] if r == reference)
    state = task_build.open_session(library["ticketing"], task["initial_state"]["ticketing"]).state()
    other["key"] = next(k for k in state[other["container"]] if k != reference["key"])
    _fails(elsewhere, library, "referents_unique")


def test_a_solution_whose_prefix_already_passes_is_rejected(
    good: dict[str, Any], library: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(good)
    read = {"env": "ticketing", "tool": "list_tickets", "args": {}}
    broken["gold_calls"] = [*broken["gold_calls"], read]
    broken["source"]["origins"] = [*broken["source"]["origins"], {}]
    _fails(broken, library, "every_prefix_fails")


def test_requests_state_goals_in_the_specs_words(library: dict[str, SampleEnv]) -> None:
    envs = {"ticketing": library["ticketing"]}
    kept = _tasks(envs, 30, seed=31)
    intents = {i for tool in library["ticketing"].model.tools for i in tool.intents}
    requests = {f.name: set(f.requests) for f in library["ticketing"].model.families}
    for task in kept:
        assert audits.recipe_problem(task["prompt"], set(library["ticketing"].tools)) is None
        if "family" in task["source"]:  # a family draw is worded by one of its family's requests
            assert set(task["source"]["intents"]) <= requests[task["source"]["family"]]
            continue
        assert set(task["source"]["intents"]) <= intents
        for reference in task["source"]["references"]:
            for value in reference["fields"].values():
                assert task_prompt.is_named(value, task["prompt"]), (value, task["prompt"])
    assert sum(audits.needs_lookup(t) for t in kept) >= len(kept) // 2
    assert len({t["prompt"] for t in kept}) == len(kept)


def test_no_two_kept_tasks_are_the_same_problem(library: dict[str, SampleEnv]) -> None:
    envs = {"ticketing": library["ticketing"]}
    kept = _tasks(envs, 40, seed=12)
    assert len({tasks.problem_key(t) for t in kept}) == len(kept)


# --------------------------------------------------------------------------- the scorer


def _scorer(library: dict[str, SampleEnv]) -> Any:
    return library["ticketing"].package.scoring


def test_scoring_checks_and_collateral(library: dict[str, SampleEnv]) -> None:
    scoring = _scorer(library)
    task = {
        "reward": "binary",
        "verifier": {
            "checks": [{"env": "e", "path": "/a/b", "op": "equals", "expected": 2, "weight": 1.0}],
            "collateral": {"allowed": {"e": ["/a/b"]}},
        },
    }
    start = {"e": {"a": {"b": 1}, "c": 0, "audit_log": []}}
    assert scoring.score(task, {"e": {"a": {"b": 2}, "c": 0, "audit_log": [1]}}, start)["reward"] == 1.0
    damaged = scoring.score(task, {"e": {"a": {"b": 2}, "c": 9, "audit_log": []}}, start)
    assert damaged["reward"] == 0.0 and damaged["failure_reason"].startswith("collateral: e/c")
    partial = {**task, "reward": "partial"}
    partial["verifier"] = {
        **task["verifier"],
        "checks": [*task["verifier"]["checks"], {**task["verifier"]["checks"][0], "path": "/c", "expected": 5}],
    }
    partial["verifier"]["collateral"] = {"allowed": {"e": ["/a/b", "/c"]}}
    assert scoring.score(partial, {"e": {"a": {"b": 2}, "c": 0}}, start)["reward"] == 0.5


@pytest.mark.parametrize(
    "task",
    [
        {},
        {"verifier": None},
        {"verifier": {"checks": []}},
        {"verifier": {"checks": [{"env": "e", "path": "a", "op": "equals"}]}},
        {"verifier": {"checks": [{"env": "e", "path": "/a", "op": "matches"}]}},
        {"verifier": {"checks": [{"env": "e", "path": "/a", "op": "equals", "weight": float("nan")}]}},
        {"verifier": {"checks": [{"env": "e", "path": "/a", "op": "equals"}]}, "reward": "lottery"},
        {"verifier": {"checks": [{"env": "e", "path": "/a", "op": "equals"}], "collateral": {"allowed": []}}},
        {"verifier": {"checks": [{"env": "e", "path": "/m", "op": "count", "where": {"path": "/s"}}]}},
        {"verifier": {"checks": [{"env": "e", "path": "/m", "op": "count", "where": [{"path": "/s", "op": "like"}]}]}},
        {"verifier": {"checks": [{"env": "e", "path": "/m", "op": "count", "over": "items"}]}},
        {"verifier": {"checks": [{"env": "e", "path": "/m", "op": "select", "select": "s"}]}},
    ],
)
def test_malformed_verifiers_score_0_with_a_reason(task: dict[str, Any], library: dict[str, SampleEnv]) -> None:
    result = _scorer(library).score(task, {"e": {"a": 1, "m": {"x": {"s": 1}}}}, {"e": {"a": 0, "m": {"x": {"s": 1}}}})
    assert result["reward"] == 0.0 and not result["passed"] and result["failure_reason"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(task=json_values, final=json_values, start=json_values)
def test_the_scorer_never_raises_and_stays_in_0_1(
    task: Any, final: Any, start: Any, library: dict[str, SampleEnv]
) -> None:
    result = _scorer(library).score(task if isinstance(task, dict) else {"verifier": task}, {"e": final}, {"e": start})
    assert 0.0 <= result["reward"] <= 1.0 and isinstance(result["passed"], bool)


# --------------------------------------------------------------------------- the command


def _envc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_envc_tasks_writes_tasks_and_a_report(tmp_path: Path) -> None:
    done = _envc(
        "tasks", "specs/it_operations/ticketing.envspec", "-n", "12", "--seed", "5", "-o", str(tmp_path / "out")
    )
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "out" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert len(rows) == 12 == report["kept"] and set(report["audit_pass_rates"]) == set(audits.AUDITS)
    assert "kept 12 of" in done.stderr and "audit pass rates" in done.stderr


UNSOURCED = """environment notebook:
    title "Notebook"

record Note:
    id: int
    title: str
    body: str

state:
    notes: map[int, Note] = {}
    next_id: int = 1

values titles = ["Groceries for the weekend", "Call the plumber about the leak", "Book the dentist"]

describe tool add_note:
    intent "jot down a note called {title}"
    param title from titles

describe tool annotate:
    intent "add {body} to the note {note_id}"

tool add_note(title: str) -> int:
    let id = state.next_id
    state.next_id = id + 1
    state.notes[id] = Note(id=id, title=title, body="")
    return id

tool annotate(note_id: int, body: str) -> None:
    require note_id in state.notes else not_found("no such note")
    state.notes[note_id].body = body
"""


def test_a_write_tool_without_a_value_source_is_left_out_and_reported(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.envc]\noutput = "out"\n')
    spec = tmp_path / "notebook.envspec"
    spec.write_text(UNSOURCED)
    checked = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "check", str(spec)], cwd=tmp_path, capture_output=True, text=True
    )
    assert "E2039" in checked.stdout + checked.stderr and "`body` of `annotate`" in checked.stdout + checked.stderr
    done = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "tasks", str(spec), "-n", "3", "--seed", "2", "-o", str(tmp_path / "t")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads((tmp_path / "t" / "report.json").read_text(encoding="utf-8"))
    assert any(reason == "no value source for `body` of `annotate`" for reason in report["chains_rejected"])
    assert "left out of tasks for want of a value source: no value source for `body` of `annotate`" in done.stderr
    rows = [json.loads(line) for line in (tmp_path / "t" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows and all(c["tool"] != "annotate" for row in rows for c in row["gold_calls"])


def test_envc_tasks_from_chains_and_bad_chain_files(tmp_path: Path) -> None:
    chains = tmp_path / "chains.jsonl"
    assert _envc("sample", "specs/it_operations/ticketing.envspec", "--chains", "30", "-o", str(chains)).returncode == 0
    done = _envc(
        "tasks", "specs/it_operations/ticketing.envspec", "-n", "5", "--chains", str(chains), "-o", str(tmp_path / "a")
    )
    assert done.returncode == 0, done.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": 1}\nnot json\n', encoding="utf-8")
    bad = _envc(
        "tasks", "specs/it_operations/ticketing.envspec", "-n", "5", "--chains", str(broken), "-o", str(tmp_path / "b")
    )
    assert bad.returncode == 2 and "broken.jsonl:2: not a JSON line" in bad.stderr
    assert not (tmp_path / "b").exists()
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "seed": "0:0", "envs": ["nowhere"], "scenarios": {}, "calls": []}) + "\n")
    wrong = _envc(
        "tasks", "specs/it_operations/ticketing.envspec", "-n", "5", "--chains", str(other), "-o", str(tmp_path / "c")
    )
    assert wrong.returncode == 2 and "`nowhere` is not among the specs" in wrong.stderr
    assert f"envc tasks: {other}:1: environment `nowhere`" in wrong.stderr, "one line naming file:line"
    assert all("Usage:" not in result.stderr for result in (bad, wrong))


def test_envc_tasks_offline_needs_llm(tmp_path: Path) -> None:
    done = _envc("tasks", "specs/it_operations/ticketing.envspec", "-n", "2", "--offline", "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and "--offline is about the requests a model writes" in done.stderr
    assert not (tmp_path / "out").exists()
