"""Slots filled into intents read as a person writes them (compiler/synth/wording.py):
`a` becomes `an` before a value that starts with a vowel sound we can tell from its
first letter, quoted or not; other text is left alone. An entity is described by fields
that say something."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import cast

import pytest
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.synth.sample import SampleEnv, load_env
from compiler.synth.wording import Entity, _fill, refer, request, system_name


@pytest.mark.parametrize(
    ("template", "words", "expected"),
    [
        ("start a {product} loan for {who}", {"product": "auto", "who": "bo"}, "start an auto loan for bo"),
        ("A {product} loan", {"product": "personal"}, "A personal loan"),
        ("A {title} ticket", {"title": '"orbit"'}, 'An "orbit" ticket'),
        ("open a {kind} account", {"kind": "user"}, "open a user account"),
        ("a table and a {thing}", {"thing": "ice bucket"}, "a table and an ice bucket"),
    ],
)
def test_the_article_before_a_slot_fits_the_value(template: str, words: dict[str, str], expected: str) -> None:
    assert _fill(template, words) == expected


def test_a_blank_field_is_never_how_an_entity_is_described() -> None:
    """A stream whose description is empty is named by its key, never as `the stream for ""`
    (the telemetry bus's scenarios leave some descriptions out)."""
    env = analyse_file(spec_path("telemetry_bus")).environment
    assert env is not None
    sample_env = load_env(env, package_dir("telemetry_bus"))
    record = next(r for r in env.records if r.name == "Stream")
    assert [r.field for r in record.refers] == ["description"]
    peers = [
        {"name": "sensor.temperature", "description": "Cold-room temperature, one reading per minute"},
        {"name": "sensor.humidity", "description": ""},
        {"name": "device.status", "description": "   "},
    ]
    for item in peers[1:]:
        text, reference = refer(
            sample_env, Entity("streams", item["name"], record, item, peers, "name"), random.Random(1)
        )
        assert text == f"stream {item['name']}" and reference.by_key, text
    text, reference = refer(
        sample_env, Entity("streams", "sensor.temperature", record, peers[0], peers, "name"), random.Random(1)
    )
    assert text == 'the stream for "Cold-room temperature, one reading per minute"' and not reference.by_key


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Online shop order desk: orders and returns", "the online shop order desk"),
        ("Receipts to an expense report (Claw)", "the receipts to an expense report"),
        ("CI/CD build farm", "the CI/CD build farm"),
        ("IoT telemetry bus", "the IoT telemetry bus"),
        ("", "team calendar"),
    ],
)
def test_a_cross_environment_request_names_each_system_as_a_user_does(title: str, expected: str) -> None:
    """ "In the online shop order desk, …", not "In Online shop order desk: orders and returns, …"."""
    env = SimpleNamespace(
        name="team_calendar", is_workspace=False, model=SimpleNamespace(header=SimpleNamespace(title=title))
    )
    assert system_name(cast(SampleEnv, env)) == expected
    workspace = SimpleNamespace(name="claw_contact_cleanup", is_workspace=True, model=env.model)
    assert system_name(cast(SampleEnv, workspace)) == "the shared files"  # a Claw title names a job


def test_an_id_made_in_one_environment_is_not_what_another_one_made() -> None:
    """The help desk's new ticket 41 and the calendar's new meeting 41 are two things:
    cancelling meeting 41 is "cancel the new meeting", not "the new ticket"."""
    envs = {}
    for name in ("ticketing", "team_calendar"):
        model = analyse_file(spec_path("calendar" if name == "team_calendar" else name)).environment
        assert model is not None
        envs[name] = load_env(model, package_dir(name))
    initial = {
        "ticketing": envs["ticketing"].package.environment.Environment("help_desk_monday")._state,
        "team_calendar": envs["team_calendar"].package.environment.Environment("quiet_friday")._state,
    }
    made = {"id": 41, "title": "Projector in room C shows no picture", "status": "open"}
    meeting = {"id": 41, "calendar_id": "alice", "title": "Design critique", "status": "confirmed"}
    chain = {
        "envs": ["ticketing", "team_calendar"],
        "calls": [
            {"env": "ticketing", "tool": "ticketing__create_ticket", "args": {"title": made["title"]}, "result": made},
            {
                "env": "team_calendar",
                "tool": "team_calendar__schedule_event",
                "args": {
                    "calendar_id": "alice",
                    "title": "Design critique",
                    "start": "2025-03-07T10:00:00",
                    "end": "2025-03-07T11:00:00",
                },
                "result": meeting,
            },
            {
                "env": "team_calendar",
                "tool": "team_calendar__cancel_event",
                "args": {"event_id": 41},
                "result": meeting,
            },
        ],
    }
    text = request(chain, envs, initial, random.Random(3)).text
    calendar_part = text.split("in the team calendar and room scheduling", 1)[1]
    assert "the new ticket" not in calendar_part and "the new meeting" in calendar_part, text
