"""The step and reset replies are built without pydantic and with the result's text
spliced in as the package wrote it: they must say exactly what the Observation model
says, for results, domain errors, invalid calls and hostile text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.serve.catalog import load_catalog
from compiler.serve.http import Observation, reset_payload, step_payload, step_text
from compiler.serve.sessions import Limits, Session, SessionManager, Start

from .conftest import GENERATED, TICKETING

CALLS: list[tuple[Any, Any]] = [
    ("whoami", {}),
    ("get_ticket", {"ticket_id": 2}),
    ("list_tickets", {"limit": 3}),
    ("get_ticket", {"ticket_id": 999}),  # a domain error
    ("create_ticket", {"title": 'caf\u00e9 \u2603 "quoted" \\ back', "description": "line\nbreak"}),
    ("get_ticket", {"ticket_id": "\ud800"}),  # a lone surrogate: refused before the tool runs
    ("no_such_tool", {}),  # an invalid call: ends the episode
]


@pytest.fixture
def session() -> tuple[SessionManager, Session]:
    manager = SessionManager(load_catalog([TICKETING], GENERATED), Limits())
    return manager, manager.create(Start(envs=("ticketing",), scenario="busy_queue"), None, "ws")


def test_step_text_is_the_models_observation(session: tuple[SessionManager, Session]) -> None:
    manager, opened = session
    spliced = 0
    for tool, arguments in CALLS:
        outcome = manager.call(opened.episode_id, tool, arguments)
        spliced += outcome.text is not None
        expected = Observation(
            episode_id=opened.episode_id,
            result=outcome.result,
            turns=outcome.turns,
            ended=outcome.ended,
            domain_error=outcome.domain_error,
            infrastructure_error=outcome.infrastructure_error,
        ).model_dump()
        reply = json.loads(step_text(opened, outcome, "observation"))
        assert reply == {"type": "observation", "data": {"observation": expected, "reward": None, "done": outcome.done}}
        assert json.loads(step_text(opened, outcome)) == step_payload(opened, outcome) == reply["data"]
        assert list(reply["data"]["observation"]) == list(Observation.model_fields)  # the model's order
    assert spliced == len(CALLS) - 1  # every call the package answered; the invalid call is the server's


def test_reset_payload_is_the_models_observation(session: tuple[SessionManager, Session]) -> None:
    _, opened = session
    expected = Observation(episode_id="h", prompt="", tools=opened.tools, seed_effect=opened.seed_effect).model_dump()
    assert reset_payload(opened, "h") == {"observation": expected, "reward": None, "done": False}


def test_no_digest_without_a_journal(session: tuple[SessionManager, Session], tmp_path: Path) -> None:
    """The digest only a journal's replay compares is not computed for a session without one."""
    manager, opened = session
    manager.call(opened.episode_id, "whoami", {})
    assert opened.history[-1]["digest"] == ""
    journaled = SessionManager(load_catalog([TICKETING], GENERATED), Limits(), tmp_path)
    try:
        kept = journaled.create(Start(envs=("ticketing",), scenario="busy_queue"))
        journaled.call(kept.episode_id, "whoami", {})
        assert len(kept.history[-1]["digest"]) == 16
    finally:
        journaled.close_all()
