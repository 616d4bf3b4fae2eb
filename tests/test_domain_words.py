"""Tool descriptions in the domain's words (issue 14): `describe tool NAME:` replaces an
inherited tool's doc and param docs without rewriting its body, and no shipped domain
spec's tools.json speaks of the prototype's generic nouns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from refresh_golden import environment_name
from shipped import library_specs, package_dir

from compiler import ir
from compiler.analyse import analyse_file
from compiler.front.fmt import format_source
from compiler.front.load import load_file
from compiler.front.parse import parse_source
from compiler.lower import lower

ROOT = Path(__file__).resolve().parent.parent
SPECS = library_specs()
GENERIC = re.compile(r"\b(entit(y|ies)|supply-side|demand-side|supply/demand)\b", re.IGNORECASE)
"""The prototypes' placeholder nouns (transactional_workspace and state_machine say
"entity", bilateral_matching "supply/demand"), which a domain's agent should not read."""

DESK = """environment desk:
    title "Desk"
    extends "transactional_workspace"

rename tool create_entity as create_ticket

describe tool create_ticket:
    "Open a ticket owned by the logged-in user."
    param title "The ticket's one-line summary."
"""


def test_describe_parses() -> None:
    module = parse_source(DESK, "desk.envspec").module
    assert module is not None
    [describe] = module.describes
    assert describe.name == "create_ticket" and describe.doc == "Open a ticket owned by the logged-in user."
    assert describe.param_docs == {"title": "The ticket's one-line summary."}


def test_describe_replaces_words_not_the_body(tmp_path: Path) -> None:
    spec = tmp_path / "desk.envspec"
    spec.write_text(DESK, encoding="utf-8")
    plain = tmp_path / "plain.envspec"
    plain.write_text(DESK.split("describe")[0].replace("desk", "plain"), encoding="utf-8")
    described, inherited = (_tool(load_file(p).module, "create_ticket") for p in (spec, plain))
    assert described.doc == "Open a ticket owned by the logged-in user."
    assert "entity" in inherited.doc
    assert [s.model_dump() for s in described.body] == [s.model_dump() for s in inherited.body]
    result = analyse_file(spec)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    [tool] = [
        t
        for t in json.loads(lower(result.environment, "desk.envspec")["tools.json"])["tools"]
        if t["name"] == "create_ticket"
    ]
    assert tool["description"] == "Open a ticket owned by the logged-in user."
    assert tool["parameters"]["properties"]["title"]["description"] == "The ticket's one-line summary."


def _tool(module: ir.Module | None, name: str) -> ir.ToolDecl:
    assert module is not None
    return next(t for t in module.tools if t.name == name)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('describe tool nope:\n    "x"\n', "E2012"),
        ('describe tool get_entity:\n    param nope "x"\n', "E2023"),
        ('describe tool get_entity:\n    param entity_id "a"\n    param entity_id "b"\n', "E2017"),
    ],
)
def test_describe_errors(tmp_path: Path, text: str, code: str) -> None:
    spec = tmp_path / "desk.envspec"
    spec.write_text(DESK.split("rename")[0] + text, encoding="utf-8")
    assert code in {d.code for d in analyse_file(spec).diagnostics}


def test_fmt_keeps_describe() -> None:
    assert format_source(DESK, "desk.envspec").text == DESK


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_shipped_tools_speak_their_domain(spec: Path) -> None:
    """Descriptions and parameter docs of every shipped domain spec's tools.json (the
    committed one: tests/test_generated_up_to_date.py holds it to what lower() makes, so
    no spec is lowered again here)."""
    tools = json.loads((package_dir(environment_name(spec)) / "tools.json").read_text(encoding="utf-8"))["tools"]
    found = [
        f"{tool['name']}({where}): {text[:80]}"
        for tool in tools
        for where, text in [("", tool["description"])]
        + [(name, p.get("description", "")) for name, p in tool["parameters"]["properties"].items()]
        if GENERIC.search(text)
    ]
    assert not found, found
