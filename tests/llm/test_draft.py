"""`envc draft`, one profile and the batch form, against a loopback model (compiler/build/draft.py).

The scripted model answers with the shipped example spec (renamed), with broken
variants of it, or with prose; each run ends with the spec written and locked, or with
nothing written, and the batch report says which profiles passed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from shipped import spec_path

from compiler.analyse import analyse_file
from compiler.build.draft import Profile, draft_messages, read_profiles

from .chat_server import ChatServer, Reply, fenced
from .conftest import envc, pyproject

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "compiler" / "llm" / "example.envspec").read_text(encoding="utf-8")


def spec_named(name: str) -> str:
    return EXAMPLE.replace("environment parcel_desk:", f"environment {name}:")


def broken(name: str) -> str:
    """A type error in one tool body: `len` of an int."""
    return spec_named(name).replace("return sorted(found, key=lambda p: p.id)", "return len(max_held)")


@pytest.fixture
def drafting(project: Path, server: ChatServer) -> Path:
    """The LLM project of conftest, without its spec."""
    (project / "specs" / "shelf.envspec").unlink()
    return project


def test_the_example_spec_compiles(tmp_path: Path) -> None:
    path = tmp_path / "parcel_desk.envspec"
    path.write_text(EXAMPLE, encoding="utf-8")
    result = analyse_file(path)
    assert result.environment is not None and result.diagnostics == []


def test_a_draft_is_healed_written_locked_and_compiled(drafting: Path, server: ChatServer) -> None:
    server.replies += [Reply(fenced(broken("mail_room"))), Reply(fenced(spec_named("mail_room")))]
    result = envc("draft", "mail_room", "--describe", "A mail room for residents.", "--domains", "logistics, mail")
    assert result.exit_code == 0, result.output
    assert "mail_room: accepted" in result.stdout
    assert "attempt 1: failed `types`" in result.stderr
    assert (drafting / "specs" / "mail_room.envspec").read_text(encoding="utf-8") == spec_named("mail_room")
    entry = json.loads((drafting / "specs" / "envc.lock").read_text())["fills"]["mail_room.envspec"]["draft"]
    assert entry["attempt"] == 2 and [a["failure"] for a in entry["provenance"]["attempts"]] == ["types", ""]
    assert (drafting / "out" / "mail_room" / "environment.py").is_file(), "and compiled"
    first = server.requests[0].body["messages"][1]["content"]
    assert "named `mail_room`" in first and "Domains: logistics, mail" in first and "A mail room" in first
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "E3006" in repair or "E3001" in repair
    assert "return len(max_held)" in repair, "the problem is shown with its line of the spec"
    assert "healing: 1 of 1" in result.stderr


def test_a_draft_with_a_python_body_is_refused_and_never_run(drafting: Path, server: ChatServer) -> None:
    """Python is trusted author code: a model's spec holding a `python` body fails
    `structure` (counted as such), and the body is never lowered or run."""
    marker = drafting / "ran"
    body = "    let found = [p for p in values(parcels) if p.recipient == recipient and p.status == Status.held]\n"
    body += "    return sorted(found, key=lambda p: p.id)\n"
    python = f'    python """\n    __import__("os").system("touch {marker}")\n    return []\n    """\n'
    assert body in spec_named("mail_room")
    server.replies += [
        Reply(fenced(spec_named("mail_room").replace(body, python))),
        Reply(fenced(spec_named("mail_room"))),
    ]
    result = envc("draft", "mail_room", "--describe", "A mail room for residents.")
    assert result.exit_code == 0, result.output
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "`waiting_for` has a python body: a model writes the body language only" in repair
    entry = json.loads((drafting / "specs" / "envc.lock").read_text())["fills"]["mail_room.envspec"]["draft"]
    assert [a["failure"] for a in entry["provenance"]["attempts"]] == ["structure", ""]
    assert not marker.exists()


def test_a_current_lock_entry_drafts_without_a_request(drafting: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(spec_named("mail_room"))))
    args = ("draft", "mail_room", "--describe", "A mail room.", "--no-qc", "--no-compile")
    assert envc(*args).exit_code == 0
    written = (drafting / "specs" / "mail_room.envspec").read_bytes()
    (drafting / "specs" / "mail_room.envspec").unlink()
    again = envc(*args)
    assert again.exit_code == 0 and "written from the lock" in again.stdout
    assert (drafting / "specs" / "mail_room.envspec").read_bytes() == written
    assert len(server.requests) == 1
    assert envc("lock").exit_code == 0, "a draft entry is no orphan"


def test_an_existing_spec_is_never_overwritten(drafting: Path, server: ChatServer) -> None:
    target = drafting / "specs" / "mail_room.envspec"
    target.write_text("# mine\n", encoding="utf-8")
    result = envc("draft", "mail_room", "--describe", "A mail room.")
    assert result.exit_code == 2 and "exists already" in result.stdout
    assert target.read_text() == "# mine\n" and server.requests == []


def test_a_draft_that_keeps_failing_writes_nothing(drafting: Path, server: ChatServer) -> None:
    server.replies += [
        Reply(fenced(spec_named("wrong_name"))),
        Reply("I'd rather describe it in words."),
        Reply(fenced(spec_named("mail_room").replace("    return parcel\n", '    return parcel\n    llm "x"\n', 1))),
    ]
    result = envc("draft", "mail_room", "--describe", "A mail room.", "--no-qc")
    assert result.exit_code == 1 and "mail_room: refused" in result.stdout
    assert "attempt 1: failed `structure`" in result.stderr and "attempt 2: failed `parse`" in result.stderr
    assert "must be `environment mail_room:`" in server.requests[1].body["messages"][-1]["content"]
    assert not (drafting / "specs" / "mail_room.envspec").exists() and not (drafting / "specs" / "envc.lock").exists()
    assert not (drafting / "out").exists()


def test_a_draft_extends_the_prototype_of_its_archetype(drafting: Path, server: ChatServer) -> None:
    ticketing = (spec_path("ticketing")).read_text(encoding="utf-8")
    ticketing = re.sub(r'\n    tickets = from "[^"]+"', "", ticketing)  # a draft is one file: no data beside it
    server.replies.append(Reply(fenced(ticketing.replace("environment ticketing:", "environment helpdesk:"))))
    result = envc(
        "draft", "helpdesk", "--describe", "An IT help desk.", "--archetype", "transactional_workspace", "--no-qc"
    )
    assert result.exit_code == 0, result.output
    prompt = server.requests[0].body["messages"][1]["content"]
    assert 'extends "transactional_workspace"' in prompt and "environment transactional_workspace" in prompt


def test_unknown_archetypes_and_names_are_usage_errors(drafting: Path, server: ChatServer) -> None:
    assert envc("draft", "mail_room", "--describe", "x", "--archetype", "nope").exit_code == 2
    assert envc("draft", "Mail Room", "--describe", "x").exit_code == 2
    assert envc("draft", "--describe", "x").exit_code == 2
    assert server.requests == []


# --------------------------------------------------------------------------- the batch form


def reply_by_profile(replies: dict[str, list[str]]) -> Any:
    """A scripted model that answers each profile from its own queue (requests come in any order)."""

    def respond(body: dict[str, Any]) -> Reply:
        asked = body["messages"][1]["content"]
        name = asked.split("named `", 1)[1].split("`", 1)[0]
        queue = replies[name]
        return Reply(fenced(queue.pop(0) if len(queue) > 1 else queue[0]))

    return respond


def write_profiles(path: Path, names: list[str]) -> None:
    rows = [
        {"name": n, "description": f"The {n} desk.", "domains": ["front office"], "world": {"opening": "09:00"}}
        for n in names
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_batch_drafts_concurrently_reports_and_resumes(drafting: Path, server: ChatServer) -> None:
    (drafting / "pyproject.toml").write_text(pyproject(server.url, concurrency=3), encoding="utf-8")
    batch = drafting / "profiles.jsonl"
    write_profiles(batch, ["desk_a", "desk_b", "desk_c"])
    server.respond = reply_by_profile(
        {
            "desk_a": [spec_named("desk_a")],
            "desk_b": [broken("desk_b")],
            "desk_c": [broken("desk_c"), spec_named("desk_c")],
        }
    )
    result = envc("draft", "--batch", str(batch), "--no-qc", "--no-compile")
    assert result.exit_code == 1, "one profile was refused"
    assert "drafted 2 of 3 environments (66.7% of those tried)" in result.stdout
    assert "[3/3]" in result.stderr
    report = json.loads((drafting / "profiles.report.json").read_text())
    assert {n: p["status"] for n, p in report["profiles"].items()} == {
        "desk_a": "accepted",
        "desk_b": "refused",
        "desk_c": "accepted",
    }
    assert report["summary"]["pass_rate"] == 0.6667
    assert report["summary"]["healing"]["accepted_at_attempt"] == {"1": 1, "2": 1}
    assert "opening" in server.requests[0].body["messages"][1]["content"], "the profile's world data"
    locked = json.loads((drafting / "specs" / "envc.lock").read_text())["fills"]
    assert sorted(locked) == ["desk_a.envspec", "desk_c.envspec"], "no concurrent write lost another's entry"
    asked = len(server.requests)
    assert asked == 1 + 3 + 2
    resumed = envc("draft", "--batch", str(batch), "--no-qc", "--no-compile")
    assert len(server.requests) == asked, "a finished batch asks nothing again"
    assert "drafted 2 of 3" in resumed.stdout
    server.respond = reply_by_profile({"desk_b": [spec_named("desk_b")]})
    retried = envc("draft", "--batch", str(batch), "--no-qc", "--no-compile", "--retry")
    assert retried.exit_code == 0 and "drafted 3 of 3 environments (100.0% of those tried)" in retried.stdout
    assert len(server.requests) == asked + 1


def test_profiles_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"name": "ok_one", "description": "fine", "domains": "a, b", "archetype_hint": "custom"}\n'
        "not json\n"
        '{"name": "Bad", "description": "x"}\n'
        '{"name": "ok_one", "description": "again"}\n',
        encoding="utf-8",
    )
    profiles, problems = read_profiles(path)
    assert profiles == [Profile("ok_one", "fine", ("a", "b"), "custom", None)]
    assert len(problems) == 3 and "not JSON" in problems[0] and "lower_snake_case" in problems[1]


def test_the_draft_prompt_has_both_references_and_the_example() -> None:
    system, user = draft_messages(Profile("mail_room", "A mail room."))
    assert "# The envspec body language" in system.content and "# envspec declarations" in system.content
    assert "environment parcel_desk:" in user.content and "archetype custom" in user.content
