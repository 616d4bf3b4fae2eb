"""File-workspace (Claw) tasks: the families `specs/claw/spreadsheets/claw_workspace.envspec` declares
(`monthly_scores`, `malformed_report_line`), drawn by `envc tasks` with the four artifacts
from one seeded plan: the construction script run on its own, the noise and distractors
of the plant folder, partial credit, the path and script audits with a broken fixture
each; and seeded `changes` on top of scenarios (whole fields or JSON Pointers), applied
by every package's scorer. The spec is compiled for the test (its families are part of
the package), so the tests follow the spec, not `generated/`."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.build import pipeline
from compiler.build.packages import package_in
from compiler.synth import audits, families, task_build, tasks
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent


def _load(spec: str, packages: Path | None = None) -> SampleEnv:
    env = analyse_file(spec_path(spec)).environment
    assert env is not None
    return load_env(env, package_in(packages, env.header.name) if packages else package_dir(env.header.name))


@pytest.fixture(scope="module")
def claw(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SampleEnv]:
    out = tmp_path_factory.mktemp("claw")
    options = pipeline.Options(output=out, project_root=ROOT, qc=False)
    [result] = pipeline.compile_specs([spec_path("claw_workspace")], options)
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    return {"claw_workspace": _load("claw_workspace", out)}


@pytest.fixture(scope="module")
def ticketing() -> dict[str, SampleEnv]:
    return {"ticketing": _load("ticketing")}


@pytest.fixture(scope="module")
def kept(claw: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    options = task_build.TaskOptions(tasks=24, seed=5)
    rows, report = tasks.synthesise(tasks.sampler_for(claw, options), options, declared=False)
    assert report.kept == 24
    return rows


def _drawn(kept: list[dict[str, Any]], family: str) -> list[dict[str, Any]]:
    return [t for t in kept if t["source"].get("family") == family]


@pytest.fixture(scope="module")
def workspace(kept: list[dict[str, Any]]) -> dict[str, Any]:
    return _drawn(kept, "monthly_scores")[0]


def _fails(task: dict[str, Any], envs: dict[str, SampleEnv], audit: str) -> str:
    with pytest.raises(audits.AuditFailed) as failed:
        audits.audit(task, envs, random.Random(0))
    assert failed.value.audit == audit, failed.value
    return failed.value.why


def _score(task: dict[str, Any], envs: dict[str, SampleEnv], calls: list[dict[str, Any]]) -> dict[str, Any]:
    return task_build.score_calls(envs, task, calls)


def _built(task: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    """The files the task's construction script prints, run alone in a fresh interpreter."""
    script = tmp_path / "build_workspace.py"
    script.write_text(task["workspace"]["script"], encoding="utf-8")
    printed = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, check=True).stdout
    files: dict[str, str] = json.loads(printed)
    return files


def test_both_claw_families_give_workspace_tasks_with_the_four_artifacts(kept: list[dict[str, Any]]) -> None:
    scores, repairs = _drawn(kept, "monthly_scores"), _drawn(kept, "malformed_report_line")
    assert scores and repairs and len(scores) + len(repairs) == len(kept)  # the file tools word no chores
    for task in scores + repairs:
        output = task["workspace"]["outputs"][0]
        assert task["reward"] == "partial" and f'"{output}"' in task["prompt"]
        assert task["gold_calls"][-1]["tool"] == "write" and task["gold_calls"][-1]["args"]["path"] == output
        assert {c["path"].split("/")[2] for c in task["verifier"]["checks"]} == {output.replace("/", "~1")}
        assert task["initial_state"]["claw_workspace"]["changes"]["files"]
        assert (
            task["source"]["kind"]
            == {"monthly_scores": "compute", "malformed_report_line": "symptom"}[task["source"]["family"]]
        )
    assert [c["tool"] for c in scores[0]["gold_calls"]] == ["ls", "read", "csv_preview", "csv_preview", "write"]
    assert [c["tool"] for c in repairs[0]["gold_calls"]] == ["read", "write"]


def test_the_construction_script_runs_alone_and_rebuilds_the_same_bytes(
    workspace: dict[str, Any], claw: dict[str, SampleEnv], tmp_path: Path
) -> None:
    built = _built(workspace, tmp_path)
    assert _built(workspace, tmp_path) == built
    start = workspace["initial_state"]["claw_workspace"]
    scenario = claw["claw_workspace"].package.Environment(start["scenario"]).state()["files"]
    added = {p: r["content"] for p, r in start["changes"]["files"].items() if scenario.get(p) != r}
    assert added == built
    script = tmp_path / "build_workspace.py"
    subprocess.run([sys.executable, "-I", str(script), str(tmp_path / "ws")], check=True)
    on_disk = {p.relative_to(tmp_path / "ws").as_posix(): p.read_text() for p in (tmp_path / "ws").rglob("*.*")}
    assert on_disk == built
    source = workspace["source"]
    assert families.family_script(source["seed"], "monthly_scores", built) == workspace["workspace"]["script"]
    answer = source["values"]["answer"]  # the plan's, computed from the files' text
    assert workspace["gold_calls"][-1]["args"]["content"] == answer  # the solution's, from what it read
    last = workspace["verifier"]["checks"][-1]
    assert last["op"] == "equals" and last["expected"] == answer


def test_the_plant_folder_has_distractors_and_noisy_records(workspace: dict[str, Any], tmp_path: Path) -> None:
    files = _built(workspace, tmp_path)
    values = workspace["source"]["values"]
    site, month = values["site"], values["month"]
    previous = f"2025-{values['month_number'] - 1:02d}"
    roster = files[values["roster_path"]].splitlines()[1:]
    ids = [line.split(",")[0] for line in roster]
    assert len(ids) > len(set(ids))  # repeated and conflicting lines
    assert any(",," in line for line in roster)  # a blank field
    ledger = files[values["ledger_path"]]
    assert ",void" in ledger and ",two," in ledger and f"{previous}-28" in ledger and ",-" in ledger
    assert "SUPERSEDED" in files[f"{site}/policy/scoring_rules_2024.md"]
    assert {f"{site}/hr/employee_roster_{previous}.csv", f"{site}/ledger/output_{month}_draft.csv"} <= set(files)
    assert {f"{site}/ledger/output_{previous}.csv", f"{site}/reports/scores_{previous}.csv"} <= set(files)
    assert values["output"] not in files


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


def test_the_broken_report_line_is_the_symptom_and_its_repair_the_fix(
    kept: list[dict[str, Any]], claw: dict[str, SampleEnv]
) -> None:
    task = _drawn(kept, "malformed_report_line")[0]
    values = task["source"]["values"]
    path = values["report_path"]
    start = task["initial_state"]["claw_workspace"]["changes"]["files"][path]["content"]
    assert values["bad_row"] in start and values["good_row"] not in start  # the seeded fault
    assert values["bad_row"].strip() not in task["prompt"] and "semicolon" not in task["prompt"]
    read, write = task["gold_calls"]
    assert write["args"]["content"] == values["fixed"] == start.replace(values["bad_row"], values["good_row"])
    untouched = {**write, "args": {**write["args"], "content": start}}
    assert _score(task, claw, [read, untouched])["reward"] == 0.0
    dropped = {**write, "args": {**write["args"], "content": start.replace(values["bad_row"], "\n")}}
    assert _score(task, claw, [read, dropped])["reward"] == pytest.approx(0.25)  # the broken line gone, no more


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
    workspace: dict[str, Any], kept: list[dict[str, Any]], claw: dict[str, SampleEnv]
) -> None:
    broken = copy.deepcopy(workspace)
    broken["workspace"]["script"] = _drawn(kept, "monthly_scores")[1]["workspace"]["script"]
    assert "the script is not what envc builds" in _fails(broken, claw, "workspace_script")
    broken["workspace"]["script"] = "raise SystemExit(3)\n"  # never run: only compared
    assert "the script is not what envc builds" in _fails(broken, claw, "workspace_script")
    broken = copy.deepcopy(workspace)
    files = broken["initial_state"]["claw_workspace"]["changes"]["files"]
    roster = workspace["source"]["values"]["roster_path"]
    files[roster] = {
        **files[roster],
        "content": files[roster]["content"] + "E0001,Stray Line,assembler,line-a,active,2020-01-01\n",
    }
    assert "the start is not what envc builds" in _fails(broken, claw, "workspace_script")
    broken = copy.deepcopy(workspace)
    del broken["source"]["family"]  # (no_placeholder then asks for origins first: audit it alone)
    with pytest.raises(audits.AuditFailed, match="no draw of a family"):
        audits._workspace_script(broken, claw)


def test_a_check_no_file_supports_is_rejected(workspace: dict[str, Any], claw: dict[str, SampleEnv]) -> None:
    broken = copy.deepcopy(workspace)
    content = next(c for c in broken["verifier"]["checks"] if c["op"] == "contains" and c["expected"].startswith("\n"))
    content["expected"] = content["expected"][:-2]  # still in the gold file, yet no row the rules give
    assert "the checks is not what envc builds" in _fails(broken, claw, "workspace_script")


def test_sampled_tasks_start_from_scenarios_with_seeded_changes(
    ticketing: dict[str, SampleEnv], tmp_path: Path
) -> None:
    options = task_build.TaskOptions(tasks=20, seed=2)
    rows, _ = tasks.synthesise(tasks.sampler_for(ticketing, options), options, declared=False)
    # the chains' seeded changes (a family draw's start is what its plan made: compiler/synth/families.py)
    changed = [t for t in rows if "chain" in t["source"] and t["initial_state"]["ticketing"]["changes"]]
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
    changes = [
        t["initial_state"]["ticketing"]["changes"]
        for t in rows
        if "chain" in t["source"] and t["initial_state"]["ticketing"]["changes"]
    ]
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
    claw: dict[str, SampleEnv], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(families, "WHOLE_FIELD_BYTES", 0)
    options = task_build.TaskOptions(tasks=8, seed=5)
    rows, report = tasks.synthesise(tasks.sampler_for(claw, options), options, declared=False)
    built = [t for t in rows if "workspace" in t]
    assert report.kept == 8 and built
    for task in built:
        changes = task["initial_state"]["claw_workspace"]["changes"]
        assert all(key.startswith("/files/") for key in changes)
        assert {key.removeprefix("/files/").replace("~1", "/") for key in changes} == set(_built(task, tmp_path))
