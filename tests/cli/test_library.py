"""`envc library` on the shipped catalog, `envc compile` writing the library's nested
layout (specs/<domain>/x.envspec -> OUT/<domain>/<package>/); serving nested packages is
tests/serve/test_nested.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shipped import copy_spec

from .conftest import ROOT, run

SHELF = """\
environment {name}:
    title "Shelf"
    doc "A shelf of books."

state:
    books: int = 0

tool add_book() -> int:
    \"\"\"Put one more book on the shelf.\"\"\"
    books = books + 1
    return books

tool count() -> int:
    \"\"\"How many books are on the shelf.\"\"\"
    return books

test adds_one:
    expect add_book() == 1
    expect count() == 1
"""


def envc(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compiler.cli", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def shelf_project(tmp_path: Path, **specs: str) -> Path:
    """A project with one shelf spec per `relative path = environment name`."""
    (tmp_path / "pyproject.toml").write_text('[tool.envc]\noutput = "out"\n', encoding="utf-8")
    for relative, name in specs.items():
        path = tmp_path / "specs" / (relative.replace("__", "/") + ".envspec")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SHELF.format(name=name), encoding="utf-8")
    return tmp_path


def test_library_check_passes_on_the_shipped_catalog() -> None:
    result = run("library", "check")
    assert result.exit_code == 0, result.output
    assert "specs/catalog.yaml:" in result.output and ": ok" in result.output


def test_library_check_names_the_row_of_a_missing_spec(tmp_path: Path) -> None:
    project = shelf_project(tmp_path, commerce__shelf="shelf")
    (project / "specs" / "catalog.yaml").write_text(
        "general:\n  commerce:\n    title: Commerce\n    scenarios:\n"
        "      - name: shelf\n        title: Shelf\n        description: A shelf.\n"
        "        specs: [commerce/shelf.envspec, commerce/gone.envspec]\nclaw: {}\n",
        encoding="utf-8",
    )
    done = envc(project, "library", "check")
    assert done.returncode == 1
    assert "error: specs/catalog.yaml:5: scenario `shelf`: spec `commerce/gone.envspec` does not exist" in done.stderr


def test_a_missing_or_malformed_catalog_is_exit_2_naming_it(tmp_path: Path) -> None:
    project = shelf_project(tmp_path, commerce__shelf="shelf")
    for command in ("check", "show", "profiles"):
        done = envc(project, "library", command)
        assert done.returncode == 2 and "specs/catalog.yaml: cannot read the catalog" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    (project / "specs" / "catalog.yaml").write_text("general:\n  commerce: [\n", encoding="utf-8")
    done = envc(project, "library", "check")
    assert done.returncode == 2 and "envc library check: specs/catalog.yaml:3: not YAML" in done.stderr, done.stderr


def test_library_show_json_has_a_row_per_scenario_with_read_columns() -> None:
    result = run("library", "show", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    by_name = {row["scenario"]: row for row in rows}
    [calendar] = by_name["team_calendar"]["environments"]
    assert calendar["name"] == "team_calendar" and calendar["archetype"] == "temporal_scheduling"
    assert calendar["spec"] == "productivity/calendar.envspec" and calendar["families"]


def test_library_profiles_are_draft_batch_profiles(tmp_path: Path) -> None:
    from compiler.build import draft

    out = tmp_path / "profiles.jsonl"
    result = run("library", "profiles", "-o", out)
    assert result.exit_code == 0, result.output
    profiles, problems = draft.read_profiles(out)
    assert problems == [] and len(profiles) == len(out.read_text(encoding="utf-8").splitlines())
    calendar = next(p for p in profiles if p.name == "team_calendar")
    assert (calendar.domain, calendar.archetype) == ("Productivity", "temporal_scheduling")


def test_library_tasks_measures_each_environment_and_show_reads_it(tmp_path: Path) -> None:
    project = shelf_project(tmp_path)
    (project / "specs" / "productivity").mkdir(parents=True)
    copy_spec("ticketing", project / "specs" / "productivity")
    (project / "specs" / "catalog.yaml").write_text(
        "general:\n  productivity:\n    title: Productivity\n    scenarios:\n"
        "      - name: help_desk\n        title: Help desk\n        description: A desk.\n"
        "        specs: [productivity/ticketing.envspec]\nclaw: {}\n",
        encoding="utf-8",
    )
    done = envc(project, "library", "tasks", "-n", "5", "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "[1/1] ticketing: kept 5" in done.stderr
    measured = json.loads((project / "specs" / "library-tasks.json").read_text(encoding="utf-8"))
    assert measured["environments"]["ticketing"]["kept"] == 5 and measured["failed"] == {}
    assert "needs_lookup" in measured["environments"]["ticketing"]["quality"]
    shown = envc(project, "library", "show", "--format", "markdown")
    [line] = [line for line in shown.stdout.splitlines() if "| ticketing |" in line]
    assert "| transactional_workspace | 4/9 |" in line and line.endswith("| 5 |")


def test_library_tasks_remeasures_only_the_environments_named(tmp_path: Path) -> None:
    project = shelf_project(tmp_path)
    (project / "specs" / "productivity").mkdir(parents=True)
    for stem in ("ticketing", "calendar"):
        copy_spec(stem, project / "specs" / "productivity")  # with the data files their scenarios read
    (project / "specs" / "catalog.yaml").write_text(
        "general:\n  productivity:\n    title: Productivity\n    scenarios:\n"
        "      - name: help_desk\n        title: Help desk\n        description: A desk.\n"
        "        specs: [productivity/ticketing.envspec]\n"
        "      - name: calendar\n        title: Calendar\n        description: Rooms.\n"
        "        specs: [productivity/calendar.envspec]\nclaw: {}\n",
        encoding="utf-8",
    )
    measured_file = project / "specs" / "library-tasks.json"
    done = envc(project, "library", "tasks", "-n", "3", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(measured_file.read_text())["environments"]) == ["team_calendar", "ticketing"]
    marked = json.loads(measured_file.read_text())
    marked["environments"]["team_calendar"]["candidates"] = -7  # a value only the old entry holds
    marked["environments"]["ticketing"]["candidates"] = -7
    measured_file.write_text(json.dumps(marked))
    again = envc(project, "library", "tasks", "-n", "3", "--env", "ticketing")
    assert again.returncode == 0 and "[1/1] ticketing: kept 3" in again.stderr, again.stderr
    after = json.loads(measured_file.read_text())["environments"]
    assert after["team_calendar"]["candidates"] == -7 and after["ticketing"]["candidates"] > 0
    unknown = envc(project, "library", "tasks", "-n", "3", "--env", "tickets")
    assert unknown.returncode == 2 and "no catalog environment is called tickets" in unknown.stderr
    other_seed = envc(project, "library", "tasks", "-n", "3", "--seed", "9", "--env", "ticketing")
    assert other_seed.returncode == 2 and "other -n/--seed" in other_seed.stderr
    assert json.loads(measured_file.read_text())["environments"] == after, "a refused run writes nothing"


def test_compile_mirrors_the_specs_folder_and_skips_the_prototypes(tmp_path: Path) -> None:
    project = shelf_project(tmp_path, commerce__shelf="shelf", claw__files__desk="desk", top="top_shelf")
    (project / "specs" / "prototypes").mkdir()
    (project / "specs" / "prototypes" / "broken.envspec").write_text("not a spec\n", encoding="utf-8")
    done = envc(project, "compile", "--no-qc")
    assert done.returncode == 0, done.stderr
    assert (project / "out" / "commerce" / "shelf" / "environment.py").is_file()
    assert (project / "out" / "claw" / "files" / "desk" / "environment.py").is_file()
    assert (project / "out" / "top_shelf" / "environment.py").is_file()
    again = envc(project, "compile", "--no-qc", "specs/commerce/shelf.envspec")
    assert "up-to-date" in again.stdout, "the mirrored folder is where the fast path looks"
    assert envc(project, "compile", "--check").returncode == 0


def test_two_specs_of_one_environment_in_two_folders_are_an_error_naming_both(tmp_path: Path) -> None:
    project = shelf_project(tmp_path, commerce__shelf="shelf", travel__shelf="shelf")
    done = envc(project, "compile", "--no-qc")
    assert done.returncode == 1
    assert "specs/commerce/shelf.envspec, specs/travel/shelf.envspec all generate `shelf`" in done.stderr
