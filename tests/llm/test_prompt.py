"""The prototype's contract in fill prompts (compiler/llm/prompt.py).

A hole in a spec that extends a prototype is shown what the prototype guarantees: its
own description of its behaviour, what the spec inherits and overrides, the prototype's
version of the hole in the spec's names, and the prototype's tests. Every expectation
is derived from the prototype as loaded (its header, its tests), not written here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import ir
from compiler.analyse import analyse_file
from compiler.front import load
from compiler.llm import fill, prompt, render

from .conftest import SPEC

PROTOTYPE = "transactional_workspace"
HELPDESK = f'''\
environment helpdesk:
    title "Help desk"
    extends "{PROTOTYPE}"
    doc "A help desk whose tickets are closed by hand."

rename record Entity as Ticket
rename state entities as tickets
rename tool close_entity as close_ticket
rename param entity_id as ticket_id

override tool close_ticket(ticket_id: int) -> Ticket:
    "Close a ticket for good; closing twice is refused."
    reads current_user, tickets
    writes tickets
    llm "Close the ticket; a closed ticket is refused with invalid_state."
'''


def user_message(spec: Path) -> tuple[ir.Environment, str]:
    result = analyse_file(spec)
    env = result.environment
    assert env is not None, result.diagnostics
    (hole,) = fill.find_holes(env)
    return env, prompt.fill_messages(env, fill.declaration(env, hole))[1].content


@pytest.fixture
def helpdesk(tmp_path: Path) -> Path:
    spec = tmp_path / "helpdesk.envspec"
    spec.write_text(HELPDESK, encoding="utf-8")
    return spec


def shipped_prototype() -> ir.Module:
    module = load.load_file(load.prototypes_dir() / f"{PROTOTYPE}.envspec").module
    assert module is not None and module.header is not None
    return module


def test_the_prototype_promises_are_in_the_prompt(helpdesk: Path) -> None:
    env, text = user_message(helpdesk)
    header = shipped_prototype().header
    assert header is not None and header.doc and env.header.doc != header.doc, "the spec's doc replaces it"
    contract = text.split("## The prototype's contract", 1)[1].split("## The tool to write", 1)[0]
    assert f'`helpdesk` extends the prototype `{PROTOTYPE}` (title "{header.title}", archetype {PROTOTYPE})' in (
        contract
    )
    assert header.doc in contract, "the prototype's own description of its behaviour"


def test_inherited_and_overridden_declarations_are_named(helpdesk: Path) -> None:
    env, text = user_message(helpdesk)
    inherited = [t.name for t in env.tools if t.name != "close_ticket"]
    assert "Inherited unchanged (shown above with their docs and effects): tools " + ", ".join(inherited) in text
    assert "helpers " + ", ".join(f.name for f in env.fns) + "." in text
    assert "Overridden by this spec: close_ticket." in text
    for tool in env.tools:
        assert render.callable_head(tool) in text, "each inherited tool with its signature, doc and effects"


def test_the_overridden_version_is_shown_in_the_spec_s_names(helpdesk: Path) -> None:
    _, text = user_message(helpdesk)
    original = next(t for t in shipped_prototype().tools if t.name == "close_entity")
    assert "`close_ticket` overrides the prototype's version" in text
    assert "tool close_ticket(ticket_id: int) -> Ticket:" in text and original.doc in text
    assert 'audit("close", entity=f"{noun} {ticket_id}")' in text, "its body, renamed as the spec renames"
    assert "entity_id" not in text.split("overrides the prototype's version", 1)[1].split("```", 2)[1]


def test_the_prototype_s_tests_are_in_the_prompt_once(helpdesk: Path) -> None:
    env, text = user_message(helpdesk)
    from_prototype = [t for t in env.tests if t.file != env.path]
    assert {t.name for t in from_prototype} == {t.name for t in shipped_prototype().tests}
    for test in from_prototype:
        assert text.count(f"test {test.name}:") == 1, test.name
        assert render.test_text(test) in text, "printed from the merged IR, in the spec's names"
    exercising, contract = text.split("## The prototype's contract", 1)
    assert "test closing_twice_is_refused:" in exercising, "tests calling the hole stay in their own section"


def test_a_hole_the_prototype_declares_says_so(tmp_path: Path) -> None:
    (tmp_path / "prototypes").mkdir()
    base = SPEC.replace("environment shelf:", "environment base:").replace('doc "A small', 'doc "A base')
    (tmp_path / "prototypes" / "base.envspec").write_text(base, encoding="utf-8")
    spec = tmp_path / "branch.envspec"
    spec.write_text('environment branch:\n    title "Branch"\n    extends "base"\n', encoding="utf-8")
    _, text = user_message(spec)
    assert "`count_books` is the prototype's own declaration; the prototype leaves its body to be written." in text
    assert "Inherited unchanged (shown above with their docs and effects): tools add_book, count_books." in text
    assert text.count("A base library shelf.") == 1 and "Its description, above, is the environment's." in text


def test_a_spec_without_a_prototype_has_no_contract(tmp_path: Path) -> None:
    spec = tmp_path / "shelf.envspec"
    spec.write_text(SPEC, encoding="utf-8")
    _, text = user_message(spec)
    assert "## The prototype's contract" not in text and "prototype" not in text


def test_the_contract_changes_the_request_when_the_prototype_changes(tmp_path: Path) -> None:
    """The prototype is part of the hole's meaning: editing its promise makes the lock stale."""
    (tmp_path / "prototypes").mkdir()
    spec = tmp_path / "branch.envspec"
    spec.write_text('environment branch:\n    title "Branch"\n    extends "base"\n', encoding="utf-8")
    texts = []
    for doc in ("A small library shelf.", "A library shelf that never loses a book."):
        base = SPEC.replace("environment shelf:", "environment base:").replace("A small library shelf.", doc)
        (tmp_path / "prototypes" / "base.envspec").write_text(base, encoding="utf-8")
        texts.append(user_message(spec)[1])
    assert texts[0] != texts[1] and "never loses a book" in texts[1]
