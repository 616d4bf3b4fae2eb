"""The catalog of the environment library (compiler/run/library.py): a catalog that fits
its specs folder has no problems, and every way one can disagree with the other is one
clear problem naming the file and the catalog row's line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from shipped import copy_spec, spec_path

from compiler.build import draft
from compiler.run import library

CATALOG = """\
general:
  commerce:
    title: Commerce
    scenarios:
      - name: help_desk
        title: Help desk
        description: A help-desk queue.
        specs: [commerce/ticketing.envspec]
  travel:
    title: Travel
    scenarios: []
claw:
  spreadsheets:
    title: Spreadsheets
    scenarios: []
"""
ROW_LINE = 5
"""The line of the help_desk row in CATALOG."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose catalog lists its one spec (the shipped ticketing spec, in commerce/)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (tmp_path / "specs" / "commerce").mkdir(parents=True)
    copy_spec("ticketing", tmp_path / "specs" / "commerce")  # with the data files its scenarios read
    write_catalog(tmp_path, CATALOG)
    return tmp_path


def write_catalog(root: Path, text: str) -> None:
    (root / "specs" / "catalog.yaml").write_text(text, encoding="utf-8")


def messages(root: Path) -> list[str]:
    return [str(problem) for problem in library.check(root)]


def test_a_catalog_that_fits_its_specs_has_no_problems(project: Path) -> None:
    assert messages(project) == []


def test_the_shipped_catalog_fits_the_shipped_specs() -> None:
    assert messages(Path(__file__).resolve().parents[2]) == []


def test_a_missing_spec_is_named_with_its_row(project: Path) -> None:
    write_catalog(project, CATALOG.replace("commerce/ticketing.envspec", "commerce/orders.envspec"))
    found = messages(project)
    assert (
        f"specs/catalog.yaml:{ROW_LINE}: scenario `help_desk`: spec `commerce/orders.envspec` does not exist"
        in found[0]
    )
    assert any("specs/commerce/ticketing.envspec:1: not in the catalog" in m for m in found)


def test_a_spec_listed_twice_is_named_with_both_rows(project: Path) -> None:
    twice = CATALOG.replace(
        "  travel:",
        "      - name: desk_again\n        title: Again\n        description: x\n"
        "        specs: [commerce/ticketing.envspec]\n  travel:",
    )
    write_catalog(project, twice)
    assert messages(project) == [
        f"specs/catalog.yaml:9: scenario `desk_again`: spec `commerce/ticketing.envspec` is listed twice "
        f"(first at line {ROW_LINE})"
    ]


def test_a_spec_in_a_folder_no_domain_has_is_an_unknown_domain(project: Path) -> None:
    (project / "specs" / "gardening").mkdir()
    shutil.copy(spec_path("calendar"), project / "specs" / "gardening" / "calendar.envspec")
    assert messages(project) == [
        "specs/gardening/calendar.envspec:1: unknown domain `gardening`: the catalog has no domain whose folder "
        "is specs/gardening/"
    ]


def test_a_spec_directly_in_specs_is_told_to_move_to_a_domain(project: Path) -> None:
    shutil.copy(spec_path("calendar"), project / "specs" / "calendar.envspec")
    assert messages(project) == [
        "specs/calendar.envspec:1: not in a domain's folder: move it to specs/<domain>/ and add a catalog row naming it"
    ]


def test_prototypes_and_ports_need_no_row(project: Path) -> None:
    for folder in ("prototypes", "ports"):
        (project / "specs" / folder).mkdir()
        shutil.copy(spec_path("calendar"), project / "specs" / folder / "calendar.envspec")
    assert messages(project) == []


def test_a_row_naming_a_spec_of_another_domain_is_refused(project: Path) -> None:
    (project / "specs" / "travel").mkdir()
    shutil.move(
        project / "specs" / "commerce" / "ticketing.envspec", project / "specs" / "travel" / "ticketing.envspec"
    )
    write_catalog(project, CATALOG.replace("commerce/ticketing.envspec", "travel/ticketing.envspec"))
    assert messages(project) == [
        f"specs/catalog.yaml:{ROW_LINE}: scenario `help_desk`: spec `travel/ticketing.envspec` is not in its "
        "domain's folder specs/commerce/"
    ]


def test_bad_names_and_a_scenario_named_twice_are_refused(project: Path) -> None:
    bad = CATALOG.replace("name: help_desk", "name: Help-Desk").replace("  travel:", "  Travel Desk:")
    write_catalog(project, bad)
    found = messages(project)
    assert "specs/catalog.yaml:9: domain `Travel Desk` is not a lower_snake_case name" in found
    assert f"specs/catalog.yaml:{ROW_LINE}: scenario `Help-Desk` is not a lower_snake_case name" in found


def test_two_specs_of_one_environment_are_refused_naming_both(project: Path) -> None:
    copy_spec("ticketing", project / "specs" / "commerce", "ticketing_copy.envspec")
    write_catalog(
        project,
        CATALOG.replace(
            "[commerce/ticketing.envspec]", "[commerce/ticketing.envspec, commerce/ticketing_copy.envspec]"
        ),
    )
    assert messages(project) == [
        f"specs/catalog.yaml:{ROW_LINE}: `commerce/ticketing_copy.envspec` and `commerce/ticketing.envspec` both "
        "define environment `ticketing`: packages must be unique"
    ]


def test_a_row_missing_a_column_is_an_error_at_its_line(project: Path) -> None:
    write_catalog(project, CATALOG.replace("        description: A help-desk queue.\n", ""))
    with pytest.raises(
        library.CatalogError, match=r"specs/catalog.yaml:5: general.commerce.scenarios.0.description: Field required"
    ):
        library.load(project)
    assert messages(project) == ["specs/catalog.yaml:5: general.commerce.scenarios.0.description: Field required"]


def test_show_reads_the_specs_and_the_measured_task_counts(project: Path) -> None:
    [row] = library.shown_rows(project)
    [env] = row.environments
    assert (row.domain_title, row.row.title, env.name, env.archetype) == (
        "Commerce",
        "Help desk",
        "ticketing",
        "transactional_workspace",
    )
    assert (env.read_tools, env.write_tools, env.tasks_kept) == (4, 9, None)
    assert env.families and len(env.scenarios) >= 2
    (project / "specs" / library.TASKS_FILE).write_text(json.dumps({"environments": {"ticketing": {"kept": 123}}}))
    [row] = library.shown_rows(project)
    assert row.environments[0].tasks_kept == 123
    assert (
        "| Commerce | Help desk | A help-desk queue. | ticketing | transactional_workspace | 4/9 |"
        in library.markdown_table([row])
    )


def test_profiles_carry_the_row_and_the_archetype_and_draft_reads_them(project: Path, tmp_path: Path) -> None:
    [profile] = library.profiles(library.shown_rows(project))
    assert profile["name"] == "help_desk" and profile["archetype"] == "transactional_workspace"
    assert (profile["domain"], profile["scenario"], profile["description"]) == (
        "Commerce",
        "Help desk",
        "A help-desk queue.",
    )
    path = tmp_path / "profiles.jsonl"
    path.write_text(json.dumps(profile) + "\n", encoding="utf-8")
    [read], problems = draft.read_profiles(path)
    assert problems == [] and (read.domain, read.scenario, read.archetype) == (
        "Commerce",
        "Help desk",
        "transactional_workspace",
    )
    prompt = draft.draft_messages(read)[1].content
    assert (
        "Library row: domain Commerce, scenario Help desk." in prompt and 'extends "transactional_workspace"' in prompt
    )


def test_an_old_profile_asks_what_it_asked_before(tmp_path: Path) -> None:
    """A profile without a row (written before the catalog) gets no library line: its
    request, and so its lock key, are unchanged."""
    old = draft.Profile(name="mail_room", description="A mail room.")
    assert "Library row" not in draft.draft_messages(old)[1].content


def test_kept_summary_keeps_counts_quality_and_families() -> None:
    report = {
        "kept": 7,
        "candidates": 10,
        "keep_rate": 0.7,
        "quality": {"needs_lookup": 0.5, "spelled_calls": 0.0, "tasks_per_family": {"x": 1}},
        "families": {"late_orders": {"kept": 3, "tried": 9}},
    }
    assert library.kept_summary(report) == {
        "kept": 7,
        "candidates": 10,
        "keep_rate": 0.7,
        "quality": {"needs_lookup": 0.5, "spelled_calls": 0.0},
        "families": {"late_orders": 3},
    }
