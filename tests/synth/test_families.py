"""Task families (compiler/synth/families.py), run through the package contract with a
hand-written double (tests/synth/family_double.py) over the real ticketing and
claw_workspace packages: bulk, branch, symptom and compute families give audited tasks,
the same seed gives the same bytes, discarded draws and broken families are counted and
rejected by the audit named, and the report has the family sections."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.lower.formatting import ruff_binary
from compiler.synth import audits, families, tasks
from compiler.synth.sample import SampleEnv, load_env
from compiler.synth.task_build import TaskOptions, open_session, score_calls

from . import family_double as double

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = TaskOptions(tasks=1)


def _load(name: str) -> SampleEnv:
    env = analyse_file(spec_path(name)).environment
    assert env is not None
    return load_env(env, package_dir(name))


@pytest.fixture(scope="module")
def ticketing() -> SampleEnv:
    decls = double.GOOD_TICKETING + [double.REFUSING] + double.BROKEN_TICKETING
    return double.with_families(_load("ticketing"), double.TICKETING_FAMILIES, decls)


@pytest.fixture(scope="module")
def claw() -> SampleEnv:
    return double.with_families(_load("claw_workspace"), double.CLAW_FAMILIES, [double.SPEND])


def _decl(env: SampleEnv, name: str) -> Any:
    return next(d for d in env.model.families if d.name == name)


def _task(env: SampleEnv, name: str, seed: str) -> dict[str, Any]:
    return families.draw_family_task(env, _decl(env, name), seed, OPTIONS)


def _audited(task: dict[str, Any], env: SampleEnv) -> None:
    audits.audit(task, {env.name: env}, audits.audit_rng(task))


def _rejected_by(task: dict[str, Any], env: SampleEnv) -> str:
    with pytest.raises(audits.AuditFailed) as failed:
        _audited(task, env)
    return failed.value.audit


def test_a_bulk_family_acts_on_every_matching_entity_and_passes_every_audit(ticketing: SampleEnv) -> None:
    task = _task(ticketing, "close_out_confirmed", "1:a")
    who = task["source"]["values"]["who"]
    assert task["source"] == {
        "family": "close_out_confirmed",
        "kind": "bulk",
        "seed": "1:a",
        "values": {"who": who},
        "intents": task["source"]["intents"],
    }
    start = open_session(ticketing, task["initial_state"]["ticketing"]).state()["tickets"]
    matching = sorted(int(k) for k, t in start.items() if t["created_by"] == who and t["status"] == "resolved")
    assert [c["args"]["ticket_id"] for c in task["gold_calls"]] == matching and len(matching) >= 2
    assert task["verifier"]["checks"][0]["op"] == "count" and task["verifier"]["checks"][0]["expected"] == 0
    assert who in task["prompt"] and task["reward"] == "binary"
    _audited(task, ticketing)
    envs = {"ticketing": ticketing}
    for end in range(len(task["gold_calls"])):  # closing some of them is not enough
        assert not score_calls(envs, task, task["gold_calls"][:end])["passed"]


def test_a_branch_family_gives_both_variants_from_one_scenario(ticketing: SampleEnv) -> None:
    drawn = [_task(ticketing, "triage_new_ticket", f"1:{n}") for n in range(8)]
    variants = {t["source"]["values"]["variant"]: t for t in drawn}
    assert set(variants) == {"free", "taken"}
    assert {t["initial_state"]["ticketing"]["scenario"] for t in drawn} == {"help_desk_busy_week"}
    assert variants["free"]["gold_calls"][0]["tool"] == "assign_ticket"
    assert variants["taken"]["gold_calls"][0]["tool"] == "update_ticket"
    for task in variants.values():
        assert f'"{task["source"]["values"]["title"]}"' in task["prompt"]
        _audited(task, ticketing)


def test_a_symptom_family_seeds_a_fault_and_the_request_states_the_symptom(ticketing: SampleEnv) -> None:
    task = _task(ticketing, "stuck_in_progress", "2:a")
    values = task["source"]["values"]
    change = task["initial_state"]["ticketing"]["changes"]["tickets"][str(values["ticket"])]
    assert change["status"] == "in_progress" and change["assignee"] is None  # the seeded fault
    assert "in progress" in task["prompt"] and "assign" not in task["prompt"].lower()
    assert task["gold_calls"] == [
        {
            "env": "ticketing",
            "tool": "assign_ticket",
            "args": {"ticket_id": values["ticket"], "assignee": values["agent"]},
        }
    ]
    _audited(task, ticketing)


def test_a_compute_family_in_a_file_workspace_has_partial_credit_and_a_script(claw: SampleEnv, tmp_path: Path) -> None:
    task = _task(claw, "monthly_spend", "3:a")
    values = task["source"]["values"]
    assert task["reward"] == "partial"
    assert task["workspace"]["outputs"] == [values["output"]]
    assert [c["weight"] for c in task["verifier"]["checks"]] == [1.0, 3.0]
    _audited(task, claw)
    script = tmp_path / "build.py"
    script.write_text(task["workspace"]["script"], encoding="utf-8")
    printed = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, check=True).stdout
    files = json.loads(printed)
    added = task["initial_state"]["claw_workspace"]["changes"]["files"]  # the scenario has no files
    assert files == {path: record["content"] for path, record in added.items()}
    assert values["source"] in files and files[values["source"]].startswith("item,amount\n")
    subprocess.run([sys.executable, "-I", str(script), str(tmp_path / "ws")], check=True)
    assert (tmp_path / "ws" / values["source"]).read_text(encoding="utf-8") == files[values["source"]]
    envs = {"claw_workspace": claw}
    partial = [
        task["gold_calls"][0],
        {**task["gold_calls"][1], "args": {**task["gold_calls"][1]["args"], "content": "0\n"}},
    ]
    assert score_calls(envs, task, partial)["reward"] == pytest.approx(0.25)  # the file, not its total


def test_a_family_script_of_another_seed_is_rejected(claw: SampleEnv) -> None:
    task = _task(claw, "monthly_spend", "3:a")
    other = _task(claw, "monthly_spend", "3:b")
    broken = {**task, "workspace": {**task["workspace"], "script": other["workspace"]["script"]}}
    assert _rejected_by(broken, claw) == "workspace_script"


def test_the_same_seed_gives_byte_identical_rows(ticketing: SampleEnv, claw: SampleEnv) -> None:
    for env, name in ((ticketing, "close_out_confirmed"), (ticketing, "triage_new_ticket"), (claw, "monthly_spend")):
        first, again = _task(env, name, "7:x"), _task(env, name, "7:x")
        assert tasks.tasks_to_jsonl([first]) == tasks.tasks_to_jsonl([again])
        assert first["id"] != _task(env, name, "7:y")["id"]


def test_a_failing_require_discards_the_draw(ticketing: SampleEnv) -> None:
    outcomes = []
    for n in range(12):
        seed = f"4:{n}"
        decl = _decl(ticketing, "sometimes_refused")
        outcomes.append(families.family_task(ticketing, decl, seed, OPTIONS) is None)
        if families.plan_seed(seed) % 2:
            with pytest.raises(families.FamilyDiscarded, match="plan: require: no unassigned ticket"):
                families.draw_family_task(ticketing, decl, seed, OPTIONS)
    assert any(outcomes) and not all(outcomes)


def test_a_verifier_that_passes_on_doing_nothing_is_rejected(ticketing: SampleEnv) -> None:
    assert _rejected_by(_task(ticketing, "already_true", "5:a"), ticketing) == "nothing_scores_0"


def test_a_verifier_that_a_prefix_of_gold_passes_is_rejected(ticketing: SampleEnv) -> None:
    assert _rejected_by(_task(ticketing, "first_only", "5:a"), ticketing) == "every_prefix_fails"


def test_each_line_expands_once_per_item(ticketing: SampleEnv) -> None:
    line = double.verify(
        double.binary(
            "==",
            double.attr(double.index(double.state("tickets"), double.value("n")), "status"),
            double.enum("Status", "closed"),
        ),
        weight=2.0,
        each="n",
        over=double.value("numbers"),
    )
    decl = double.CLOSE_OUT.model_copy(update={"verify": [line]})
    checks = families.family_checks("ticketing", decl, {"numbers": [11, 12]}, {"tickets": {}})
    assert checks == [
        {"env": "ticketing", "path": f"/tickets/{n}/status", "op": "equals", "expected": "closed", "weight": 2.0}
        for n in (11, 12)
    ]


def test_synthesise_draws_every_family_and_reports_what_became_of_them(ticketing: SampleEnv) -> None:
    envs = {"ticketing": ticketing}
    options = TaskOptions(tasks=24, seed=5)
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False)
    again, _ = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False)
    assert tasks.tasks_to_jsonl(kept) == tasks.tasks_to_jsonl(again)
    data = report.to_json()
    counts = data["families"]
    assert set(counts) == {f"ticketing.{d.name}" for d in ticketing.model.families}
    for name in ("close_out_confirmed", "triage_new_ticket", "stuck_in_progress"):
        assert counts[f"ticketing.{name}"]["kept"] >= 1, counts
    assert counts["ticketing.sometimes_refused"]["discarded"]
    assert counts["ticketing.already_true"]["rejected"] == {
        "nothing_scores_0": counts["ticketing.already_true"]["tried"]
    }
    assert counts["ticketing.first_only"]["rejected"].get("every_prefix_fails")
    quality = data["quality"]
    assert {"bulk", "branch", "symptom"} <= set(quality["tasks_per_family"])
    drawn = quality["declared_families"]["ticketing.close_out_confirmed"]
    assert drawn["kind"] == "bulk" and drawn["tasks"] >= 1 and drawn["distinct_prompts"] >= 1
    assert report.kept == len(kept) == 24


def _template_scorer() -> Any:
    """The scorer as the next `envc compile` writes it (the template, its header filled)."""
    text = (ROOT / "templates" / "scoring.py.jinja").read_text(encoding="utf-8").replace("{{ header }}", "# test", 1)
    module = types.ModuleType("template_scoring")
    exec(compile(text, "scoring.py", "exec"), module.__dict__)
    return module


def test_a_list_field_holding_a_value_selects_items() -> None:
    item = double.value("o")
    cond = double.binary("in", double.value("wanted"), double.attr(item, "items"))
    count = double.count_of("orders", "o", cond)
    line = double.verify(double.binary("==", count, double.const(0)))
    decl = double.CLOSE_OUT.model_copy(update={"verify": [line]})
    checks = families.family_checks("shop", decl, {"wanted": "desk lamp"}, {"orders": {}})
    where = [{"path": "/items", "op": "contains", "expected": "desk lamp"}]
    assert checks == [{"env": "shop", "path": "/orders", "where": where, "op": "count", "expected": 0, "weight": 1.0}]
    scoring = _template_scorer()
    orders = {"1": {"items": ["desk lamp", "chair"]}, "2": {"items": ["chair"]}, "3": {"items": "desk lamp shade"}}
    state = {"shop": {"orders": orders}}
    for expected, reward in ((2, 1.0), (1, 0.0)):
        task = {"verifier": {"checks": [{**checks[0], "expected": expected}]}}
        assert scoring.score(task, state, state)["reward"] == reward


def test_the_changes_a_plan_makes_are_whole_fields_or_pointers_into_big_maps() -> None:
    big = {str(n): {"text": "x" * 200} for n in range(100)}  # over WHOLE_FIELD_BYTES
    before = {"small": {"a": 1}, "big": big, "audit_log": [], "rng_state": 1}
    after = {
        "small": {"a": 2},
        "big": {**big, "7": {"text": "changed"}, "new/one": {"text": "added"}},
        "audit_log": [{"tool": "plan"}],
        "rng_state": 99,
    }
    assert families.state_changes(before, after) == {
        "small": {"a": 2},
        "/big/7": {"text": "changed"},
        "/big/new~1one": {"text": "added"},
    }
    gone = {k: v for k, v in big.items() if k != "3"}
    assert families.state_changes(before, {**before, "big": gone}) == {"big": gone}  # a pointer cannot remove


def test_a_value_in_a_text_field_is_contains_and_not_in_is_excludes() -> None:
    content = double.attr(double.index(double.state("files"), double.const("notes.txt")), "content")
    lines = [
        double.verify(double.binary("in", double.value("word"), content)),
        double.verify(double.binary("not in", double.value("stale"), content), weight=0.5),
    ]
    decl = double.SPEND.model_copy(update={"verify": lines})
    final = {"files": {"notes.txt": {"content": "total 40"}}}
    checks = families.family_checks("claw", decl, {"word": "total", "stale": "draft"}, final)
    path = "/files/notes.txt/content"
    assert checks == [
        {"env": "claw", "path": path, "op": "contains", "expected": "total", "weight": 1.0},
        {"env": "claw", "path": path, "op": "excludes", "expected": "draft", "weight": 0.5},
    ]


def test_the_construction_script_passes_ruff_and_mypy_strict(claw: SampleEnv, tmp_path: Path) -> None:
    script = tmp_path / "build_workspace.py"
    script.write_text(_task(claw, "monthly_spend", "3:a")["workspace"]["script"], encoding="utf-8")
    ruff = subprocess.run(
        [ruff_binary(), "check", "--isolated", "--no-cache", str(script)], capture_output=True, text=True
    )
    assert ruff.returncode == 0, ruff.stdout
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)], capture_output=True, text=True
    )
    assert mypy.returncode == 0, mypy.stdout


def test_a_model_writing_the_request_must_name_the_values_the_request_line_states(ticketing: SampleEnv) -> None:
    task = _task(ticketing, "stuck_in_progress", "2:a")
    values = task["source"]["values"]
    assert audits.required_values(task, {"ticketing": ticketing}) == {values["title"], values["agent"]}
