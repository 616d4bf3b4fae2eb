"""The generated sections of the docs (`<!-- generated: envc ... -->`, such as
docs/library.md's catalog table) are exactly what their commands print today; a stale one:
run `python tests/refresh_docs.py` and review the diff."""

from __future__ import annotations

import pytest
from refresh_docs import ROOT, Section, all_sections, run_section, section_differs


@pytest.mark.parametrize("section", all_sections(), ids=lambda section: section.name)
def test_the_section_is_what_its_command_prints(section: Section) -> None:
    assert run_section(section) == section.body, f"{section.name} is stale: run `python tests/refresh_docs.py`"


def test_the_library_doc_holds_the_catalog_table() -> None:
    [section] = [s for s in all_sections() if s.path == ROOT / "docs" / "library.md"]
    assert section.command == "envc library show --format markdown"
    assert "| domain | scenario | description |" in section.body


def test_a_section_is_stale_for_any_change() -> None:
    assert section_differs("| a |\n", "| a  |\n") and not section_differs("x\n", "x\n")
