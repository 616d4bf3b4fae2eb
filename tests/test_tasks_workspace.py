"""File-workspace (Claw) tasks: the four artifacts from one seeded ground truth, the
construction script run on its own, partial credit, the path and script audits with a
broken fixture each; and seeded `changes` on top of scenarios (whole fields or JSON
Pointers), applied by every package's scorer."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.analyse import analyse_file
from compiler.synth import audits, task_build, tasks
from compiler.synth import workspace as workspace_tasks
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent


def _load(spec: str) -> SampleEnv:
    env = analyse_file(ROOT / "specs" / f"{spec}.envspec").environment
    assert env is not None
    return load_env(env, ROOT / "generated" / env.header.name)


@pytest.fixture(scope="module")
def claw() -> dict[str, SampleEnv]:
    return {"claw_workspace": _load("claw_workspace")}


@pytest.fixture(scope="module")
def ticketing() -> dict[str, SampleEnv]:
    return {"ticketing": _load("ticketing")}


@pytest.fixture(scope="module")
def kept(claw: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    options = task_build.TaskOptions(tasks=24, seed=5)
    rows, report = tasks.synthesise(tasks.sampler_for(claw, options), options, declared=False)
    assert report.kept == 24
    return rows


@pytest.fixture(scope="module")
def workspace(kept: list[dict[str, Any]]) -> dict[str, Any]:
    return next(t for t in kept if "workspace" in t)


def _fails(task: dict[str, Any], envs: dict[str, SampleEnv], audit: str) -> str:
    with pytest.raises(audits.AuditFailed) as failed:
        audits.audit(task, envs, random.Random(0))
    assert failed.value.audit == audit, failed.value
    return failed.value.why


def _score(task: dict[str, Any], envs: dict[str, SampleEnv], calls: list[dict[str, Any]]) -> dict[str, Any]:
    return task_build.score_calls(envs, task, calls)


def test_a_share_of_claw_tasks_are_workspace_tasks_with_the_four_artifacts(kept: list[dict[str, Any]]) -> None:
    built = [t for t in kept if "workspace" in t]
    assert 0 < len(built) < len(kept)
    for task in built:
        output = task["workspace"]["outputs"][0]
        assert task["reward"] == "partial" and f'"{output}"' in task["prompt"]
        assert task["gold_calls"][-1]["args"]["path"] == output
        assert {c["path"].split("/")[2] for c in task["verifier"]["checks"]} == {output.replace("/", "~1")}
        assert task["initial_state"]["claw_workspace"]["changes"]["files"]


def test_the_construction_script_runs_alone_and_rebuilds_the_same_bytes(
    workspace: dict[str, Any], claw: dict[str, SampleEnv], tmp_path: Path
) -> None:
    script = tmp_path / "build_workspace.py"
    script.write_text(workspace["workspace"]["script"], encoding="utf-8")
    runs = [subprocess.run([sys.executable, "-I", str(script)], capture_output=True, check=True) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout
    built = json.loads(runs[0].stdout)
    start = workspace["initial_state"]["claw_workspace"]
    scenario = claw["claw_workspace"].package.Environment(start["scenario"]).state()["files"]
    added = {p: r["content"] for p, r in start["changes"]["files"].items() if scenario.get(p) != r}
    assert added == built
    subprocess.run([sys.executable, "-I", str(script), str(tmp_path / "ws")], check=True)
    on_disk = {p.relative_to(tmp_path / "ws").as_posix(): p.read_text() for p in (tmp_path / "ws").rglob("*.*")}
    assert on_disk == built
    assert workspace_tasks.workspace_script(workspace["source"]["seed"]) == workspace["workspace"]["script"]
    probe = "import json, runpy, sys; ns = runpy.run_path(sys.argv[1]); print(ns['answer'](ns['build']()), end='')"
    answer = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(script)], capture_output=True, text=True, check=True
    )
    with_scenario = {**{p: r["content"] for p, r in scenario.items()}, **built}
    assert answer.stdout == workspace_tasks.build_workspace(workspace["source"]["seed"]).answer(with_scenario)
    assert answer.stdout == workspace["gold_calls"][-1]["args"]["content"]


def test_the_workspace_has_distractors_and_noisy_records(workspace: dict[str, Any]) -> None:
    files = workspace_tasks.build_workspace(workspace["source"]["seed"]).files
    plan = workspace_tasks.workspace_plan(workspace["source"]["seed"])
    paths = workspace_tasks.workspace_paths(plan)
    roster = files[paths["roster"]].splitlines()[1:]
    ids = [line.split(",")[0] for line in roster]
    assert len(ids) > len(set(ids))  # repeated and conflicting lines
    assert any(",," in line for line in roster)  # a blank field
    ledger = files[paths["ledger"]]
    assert ",void" in ledger and ",two," in ledger and f"{plan['previous']}-28" in ledger
    assert "SUPERSEDED" in files[paths["stale_rules"]] and paths["stale_roster"] in files
    assert paths["output"] not in files


def test_partial_credit_follows_the_degree_of_completion(workspace: dict[str, Any], claw: dict[str, SampleEnv]) -> None:
    gold = workspace["gold_calls"]
    write = gold[-1]
    header, *rows = write["args"]["content"].splitlines()
    half = "\n".join([header, *rows[: len(rows) // 2]]) + "\n"
    rewards = []
    for content in ("", header + "\n", half, write["args"]["content"]):
        result = _score(workspace, claw, [*gold[:-1], {**write, "args": {**write["args"], "content": content}}])
        rewards.append(result["reward"])
        assert result["passed"] == (content == write["args"]["content"])
    assert rewards == sorted(rewards) and rewards[-1] == 1.0
    assert 0 < rewards[1] <= audits.PARTIAL_FLOOR and rewards[1] < rewards[2] < 1.0
    elsewhere = {**write, "args": {**write["args"], "path": write["args"]["path"].replace("reports", "drafts")}}
    assert _score(workspace, claw, [*gold[:-1], elsewhere])["reward"] == 0.0  # collateral: not the named file


def test_a_verifier_inspecting_another_path_than_the_request_names_is_rejected(
    workspace: dict[str, Any], claw: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(workspace)
    output = broken["workspace"]["outputs"][0]
    broken["prompt"] = broken["prompt"].replace(output, output.replace("scores_", "score_"))
    assert "the request does not name" in _fails(broken, claw, "path_consistency")


def test_an_output_the_request_names_but_no_check_inspects_is_rejected(
    workspace: dict[str, Any], claw: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(workspace)
    notes = workspace["workspace"]["outputs"][0].replace("reports/scores_", "reports/notes_")
    broken["gold_calls"].append({"env": "claw_workspace", "tool": "write", "args": {"path": notes, "content": "done"}})
    broken["prompt"] += f' Also leave a note in "{notes}".'
    broken["verifier"]["collateral"]["allowed"]["claw_workspace"].append("/files/" + notes.replace("/", "~1"))
    with pytest.raises(audits.AuditFailed) as failed:  # the prefix without the note passes too: audit it alone
        audits._path_consistency(broken, claw)
    assert failed.value.audit == "path_consistency" and "which no check inspects" in failed.value.why
    assert _fails(broken, claw, "every_prefix_fails")


def test_a_script_that_does_not_build_the_start_is_rejected(
    workspace: dict[str, Any], claw: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(workspace)
    broken["workspace"]["script"] = workspace_tasks.workspace_script("another seed")
    assert "is not the one envc builds" in _fails(broken, claw, "workspace_script")
    broken["workspace"]["script"] = "raise SystemExit(3)\n"  # never run: only compared
    assert "is not the one envc builds" in _fails(broken, claw, "workspace_script")
    broken = copy.deepcopy(workspace)
    files = broken["initial_state"]["claw_workspace"]["changes"]["files"]
    roster = workspace_tasks.workspace_paths(workspace_tasks.workspace_plan(workspace["source"]["seed"]))["roster"]
    files[roster] = {
        **files[roster],
        "content": files[roster]["content"] + "E0001,Stray Line,assembler,line-a,active,2020-01-01\n",
    }
    assert "does not build the start" in _fails(broken, claw, "workspace_script")


def test_a_check_no_file_supports_is_rejected(workspace: dict[str, Any], claw: dict[str, SampleEnv]) -> None:
    broken = copy.deepcopy(workspace)
    content = next(c for c in broken["verifier"]["checks"] if c["op"] == "contains" and c["expected"].startswith("\n"))
    content["expected"] = content["expected"][:-2]  # still in the gold file, yet no row the rules give
    assert "does not follow from the files" in _fails(broken, claw, "workspace_script")


def test_sampled_tasks_start_from_scenarios_with_seeded_changes(
    ticketing: dict[str, SampleEnv], tmp_path: Path
) -> None:
    options = task_build.TaskOptions(tasks=20, seed=2)
    rows, _ = tasks.synthesise(tasks.sampler_for(ticketing, options), options, declared=False)
    changed = [t for t in rows if t["initial_state"]["ticketing"]["changes"]]
    assert changed
    env = ticketing["ticketing"]
    for task in changed:
        start = task["initial_state"]["ticketing"]
        scenario = env.package.Environment(start["scenario"]).state()
        after = env.package.scoring.apply_changes(scenario, start["changes"])
        differ = env.package.scoring.changed_paths(scenario, after)
        assert len(differ) == 1  # one attribute of one record
        named = {json.dumps(v) for c in task["gold_calls"] for v in c["args"].values()}
        assert differ[0].split("/")[2] not in named  # a record the chain never names


def test_a_big_field_is_changed_by_json_pointer(
    ticketing: dict[str, SampleEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_build, "WHOLE_FIELD_BYTES", 0)
    options = task_build.TaskOptions(tasks=10, seed=2)
    rows, report = tasks.synthesise(tasks.sampler_for(ticketing, options), options, declared=False)
    assert report.kept == 10
    changes = [t["initial_state"]["ticketing"]["changes"] for t in rows if t["initial_state"]["ticketing"]["changes"]]
    assert changes and all(len(c) == 1 and next(iter(c)).startswith("/") for c in changes)
    assert all(len(json.dumps(c)) < 200 for c in changes)


def test_apply_changes(ticketing: dict[str, SampleEnv]) -> None:
    apply = ticketing["ticketing"].package.scoring.apply_changes
    error = ticketing["ticketing"].package.scoring.VerifierError
    state = {"a": {"b": [1, 2], "c~d": {"e/f": 0}}, "top": 1}
    changed = apply(state, {"/a/b/2": 3, "/a/c~0d/e~1f": 9, "top": 2, "/a/b/0": 7})
    assert changed == {"a": {"b": [7, 2, 3], "c~d": {"e/f": 9}}, "top": 2}
    assert state == {"a": {"b": [1, 2], "c~d": {"e/f": 0}}, "top": 1}  # the input is not touched
    assert apply(state, {"a": {}, "/a/x": 1}) == {"a": {"x": 1}, "top": 1}  # whole fields first
    for bad in ({"/a/b/5": 1}, {"/nowhere/x": 1}, {"/": 1}, {"": 1}):
        with pytest.raises(error):
            apply(state, bad)


def test_a_big_workspace_gets_its_files_by_json_pointer(
    claw: dict[str, SampleEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_tasks, "WHOLE_FIELD_BYTES", 0)
    options = task_build.TaskOptions(tasks=8, seed=5)
    rows, report = tasks.synthesise(tasks.sampler_for(claw, options), options, declared=False)
    built = [t for t in rows if "workspace" in t]
    assert report.kept == 8 and built
    for task in built:
        changes = task["initial_state"]["claw_workspace"]["changes"]
        assert all(key.startswith("/files/") for key in changes)
        assert len(changes) == len(workspace_tasks.build_workspace(task["source"]["seed"]).files)
