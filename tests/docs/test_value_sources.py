"""docs/tasks.md lists the value sources of `compiler/library/sources.py`, row for row:
the table below its "Value sources" heading is rendered from `FORMATS` and must match."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compiler.library.sources import FORMATS, Format

TASKS_MD = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"
HEADER = "| Source | Arguments (default) | Type | Values |\n|---|---|---|---|\n"


def row(source: Format) -> str:
    arguments = ", ".join(f"`{arg.name}` ({json.dumps(arg.default)})" for arg in source.args)
    return f"| `{source.name}` | {arguments or '-'} | `{source.result}` | {source.doc} |\n"


def rendered_table() -> str:
    return HEADER + "".join(row(source) for source in FORMATS.values())


def documented_table() -> str:
    section = TASKS_MD.read_text(encoding="utf-8").split("\n## Value sources\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^\| Source \|.*?(?=^[^|])", section, re.MULTILINE | re.DOTALL)
    assert found, "docs/tasks.md's Value sources section has no table"
    return found[0]


def test_the_docs_list_every_value_source_as_the_table_defines_it() -> None:
    assert documented_table() == rendered_table(), (
        "docs/tasks.md's table is stale; it should read:\n" + rendered_table()
    )


def test_a_changed_format_changes_the_rendered_row() -> None:
    source = FORMATS["amount"]
    changed = Format(source.name, source.result, "Money.", source.args)
    assert row(changed) != row(source)
    assert row(source) == (
        "| `amount` | `low` (1.0), `high` (1000.0) | `float` | "
        "A sum of money with two decimals, between `low` and `high`: `129.90`. |\n"
    )
