"""Persistence: a server killed with SIGKILL and restarted on the same --data-dir loses
no acknowledged call; damaged journals are detected and reported, never half-applied."""

from __future__ import annotations

import dataclasses
import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from compiler.serve import journal
from compiler.serve.catalog import Catalog
from compiler.serve.sessions import JournalUnavailable, Limits, SessionManager, Start

from .conftest import GENERATED, TICKETING, spawn_serve


def gold_task(catalog: Catalog) -> dict[str, Any]:
    return dict(next(t for t in catalog.tasks.values() if t["envs"] == ["ticketing"] and len(t["gold_calls"]) > 1))


def snapshot(client: httpx.Client) -> dict[str, Any]:
    return {
        s["episode_id"]: client.get(f"/sessions/{s['episode_id']}").json()
        for s in client.get("/sessions").json()["sessions"]
    }


def trainer_session(client: httpx.Client, **start: Any) -> str:
    """POST /sessions; the handle the agent plays it by."""
    response = client.post("/sessions", json=start)
    response.raise_for_status()
    handle: str = response.json()["handle"]
    return handle


def test_sigkill_and_restart_lose_no_acknowledged_call(tmp_path: Path, task_dir: Path, catalog: Catalog) -> None:
    task = gold_task(catalog)
    first, *rest = task["gold_calls"]
    data = tmp_path / "data"
    args = [str(TICKETING), str(task_dir), "--data-dir", str(data), "--packages-dir", str(GENERATED)]
    server = spawn_serve(*args)
    ws_url = server.url.replace("http://", "ws://") + "/ws"
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client, connect(ws_url, close_timeout=0.1) as socket:
            a = trainer_session(client, task_id=task["id"], episode_id="a", seed=4)
            client.post(
                "/step", json={"episode_id": a, "action": {"tool_name": first["tool"], "arguments": first["args"]}}
            )
            forked = client.post("/sessions/a/fork", json={"episode_id": "b"})
            forked.raise_for_status()
            b = forked.json()["handle"]
            c = trainer_session(client, env="ticketing", scenario="help_desk_monday", episode_id="c")
            client.post("/step", json={"episode_id": c, "action": {"tool_name": "whoami"}})
            client.post("/step", json={"episode_id": c, "action": {"tool_name": "nope"}})  # ends c: invalid call
            trainer_session(client, env="ticketing", episode_id="gone")
            client.delete("/sessions/gone").raise_for_status()
            socket.send(json.dumps({"type": "reset", "data": {"env": "ticketing"}}))
            w = json.loads(socket.recv(timeout=10))["data"]["observation"]["episode_id"]
            socket.send(json.dumps({"type": "step", "data": {"tool_name": "login", "arguments": {"username": "bob"}}}))
            assert json.loads(socket.recv(timeout=10))["data"]["observation"]["domain_error"] is True
            before = snapshot(client)
            server.process.send_signal(signal.SIGKILL)  # the WebSocket still open
            server.process.wait(timeout=10)
    finally:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=10)
    assert sorted(before) == sorted(["a", "b", "c", w])

    again = spawn_serve(*args)
    try:
        with httpx.Client(base_url=again.url, timeout=10) as client:
            assert snapshot(client) == before, "every acknowledged change came back, handles too"
            assert client.get("/sessions/c").json()["ended"] == "invalid_call"
            orphan = client.post("/step", json={"episode_id": w, "action": {"tool_name": "whoami"}})
            assert orphan.status_code == 404, "a WebSocket's session outlives its connection for the trainer only"
            for call in rest:
                client.post(
                    "/step", json={"episode_id": b, "action": {"tool_name": call["tool"], "arguments": call["args"]}}
                )
            assert client.post("/sessions/b/score").json()["reward"] == 1.0
            assert client.post("/sessions/a/score").json()["reward"] == 0.0
    finally:
        again.process.send_signal(signal.SIGKILL)
        again.process.wait(timeout=10)


def manager_with_calls(catalog: Catalog, data: Path) -> dict[str, Any]:
    manager = SessionManager(catalog, Limits(max_sessions=4), data)
    manager.create(Start(envs=("ticketing",), scenario="help_desk_monday"), "s")
    manager.call("s", "whoami", {})
    manager.call("s", "get_ticket", {"ticket_id": 2})
    state = manager.state("s")
    manager.close_all()
    return state


def test_a_torn_tail_is_cut_off_and_reported(tmp_path: Path, catalog: Catalog) -> None:
    state = manager_with_calls(catalog, tmp_path)
    path = tmp_path / f"s{journal.SUFFIX}"
    with path.open("ab") as file:
        file.write(journal.encode({"op": "call", "tool": "logout", "arguments": {}, "digest": "x"})[:25])
    manager = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    assert manager.state("s") == state, "the unacknowledged half-record was not applied"
    assert manager.recovery == [f"s{journal.SUFFIX}: cut off a torn last record (a call that was never acknowledged)"]
    assert path.read_bytes().endswith(b"\n")
    manager.close_all()


def assert_quarantined(catalog: Catalog, data: Path, episode_id: str, message: str) -> SessionManager:
    """The manager restarted on `data` serves the other sessions and sets `episode_id` aside."""
    manager = SessionManager(catalog, Limits(max_sessions=4), data)
    assert episode_id not in manager.ids()
    assert message in manager.quarantined[episode_id]
    assert not (data / f"{episode_id}{journal.SUFFIX}").exists()
    assert (data / journal.QUARANTINE / f"{episode_id}{journal.SUFFIX}").exists(), "kept for a person to read"
    assert any(note.startswith(f"{episode_id}{journal.SUFFIX}: quarantined") for note in manager.recovery)
    return manager


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: [lines[0], lines[1].replace(b"whoami", b"whoamu"), *lines[2:]], "checksum mismatch"),
        (lambda lines: [lines[0], b"garbage\n", *lines[2:]], "not a journal record"),
        (lambda lines: lines[1:], "not a start record"),
    ],
    ids=["a changed record", "a foreign line", "a missing start"],
)
def test_a_corrupt_journal_is_quarantined_whole(tmp_path: Path, catalog: Catalog, damage: Any, message: str) -> None:
    state = manager_with_calls(catalog, tmp_path)
    path = tmp_path / f"s{journal.SUFFIX}"
    (tmp_path / f"t{journal.SUFFIX}").write_bytes(path.read_bytes())  # a good twin
    path.write_bytes(b"".join(damage(path.read_bytes().splitlines(keepends=True))))
    manager = assert_quarantined(catalog, tmp_path, "s", message)
    assert str(path) in manager.quarantined["s"]
    assert {**manager.state("t"), "episode_id": "s"} == state, "the good session is served as it was"
    manager.close_all()


def test_a_replay_that_diverges_is_quarantined(tmp_path: Path, catalog: Catalog) -> None:
    manager_with_calls(catalog, tmp_path)
    path = tmp_path / f"s{journal.SUFFIX}"
    lines = path.read_bytes().splitlines(keepends=True)
    record = journal.decode(lines[2], "test")
    lines[2] = journal.encode({**record, "arguments": {"ticket_id": 3}})  # well-formed, but not what was acknowledged
    path.write_bytes(b"".join(lines))
    assert_quarantined(catalog, tmp_path, "s", ":3: replaying the call gave a different result").close_all()


def test_a_whole_last_record_without_its_line_end_is_kept_and_reported(tmp_path: Path, catalog: Catalog) -> None:
    manager_with_calls(catalog, tmp_path)
    path = tmp_path / f"s{journal.SUFFIX}"
    path.write_bytes(path.read_bytes()[:-1])  # the last acknowledged call, cut by its line end only
    manager = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    assert manager.state("s")["turns"] == 2, "the acknowledged call is kept"
    assert manager.recovery == [
        f"s{journal.SUFFIX}: the last record lacked only its line end and is whole, so it was kept "
        "(it may have been acknowledged)"
    ]
    assert path.read_bytes().endswith(b"\n")
    manager.close_all()


def test_envc_serve_starts_and_reports_the_quarantined_journal(tmp_path: Path, catalog: Catalog) -> None:
    manager_with_calls(catalog, tmp_path)
    path = tmp_path / f"s{journal.SUFFIX}"
    path.write_bytes(path.read_bytes().replace(b"get_ticket", b"get_tickex"))
    server = spawn_serve(str(TICKETING), "--data-dir", str(tmp_path))
    try:
        health = httpx.get(f"{server.url}/health", timeout=10).json()
        assert f"{path}:3: checksum mismatch" in health["quarantined"]["s"]
        assert any("quarantined" in note for note in health["recovery"])
    finally:
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=10)


def test_broken_and_forked_sessions_replay(tmp_path: Path, catalog: Catalog) -> None:
    manager = SessionManager(catalog, Limits(max_sessions=4, call_timeout=5.0), tmp_path)
    manager.create(Start(envs=("ticketing",), scenario="help_desk_monday", seed=2), "s")
    manager.call("s", "login", {"username": "bob", "password": "wrong"})
    manager.fork("s", "t")
    manager.call("t", "whoami", {})
    manager.reset("s", seed=7)
    before = {i: manager.state(i) for i in manager.ids()}
    manager.close_all()
    restored = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    assert {i: restored.state(i) for i in restored.ids()} == before
    assert before["s"]["turns"] == 0 and before["s"]["seed"] == 7 and before["t"]["turns"] == 2
    restored.close_all()
    with pytest.raises(journal.JournalError, match="more than --max-sessions 1"):
        SessionManager(catalog, Limits(max_sessions=1), tmp_path)


def test_a_data_directory_that_cannot_take_a_journal_refuses_the_session(tmp_path: Path, catalog: Catalog) -> None:
    data = tmp_path / "data"
    manager = SessionManager(catalog, Limits(max_sessions=4), data)
    data.rmdir()  # the volume went away under the server
    with pytest.raises(JournalUnavailable, match="cannot journal session s") as caught:
        manager.create(Start(envs=("ticketing",)), "s")
    assert caught.value.status == 503
    assert manager.count() == 0, "the refused session holds no slot"


def test_a_journal_of_a_rebuilt_environment_is_quarantined(tmp_path: Path, catalog: Catalog) -> None:
    manager_with_calls(catalog, tmp_path)
    rebuilt = dataclasses.replace(catalog.envs["ticketing"], digest="0" * 64)
    other = Catalog(envs={**catalog.envs, "ticketing": rebuilt}, tasks=catalog.tasks)
    assert_quarantined(other, tmp_path, "s", "`ticketing` was rebuilt since").close_all()


def test_a_call_whose_record_cannot_be_written_is_not_acknowledged(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    manager.create(Start(envs=("ticketing",), scenario="help_desk_monday"), "s")

    def full_disk(self: journal.Journal, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal.Journal, "write", full_disk)
    outcome = manager.call("s", "whoami", {})
    assert outcome.ended == "infrastructure" and "No space left on device" in (outcome.infrastructure_error or "")
    assert manager.score("s")["scorable"] is False
    monkeypatch.undo()
    manager.close_all()
    assert SessionManager(catalog, Limits(max_sessions=4), tmp_path).state("s")["turns"] == 0


def test_one_server_per_data_directory(tmp_path: Path, catalog: Catalog) -> None:
    first = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    with pytest.raises(journal.JournalError, match="in use by another envc serve"):
        SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    first.close_all()
    SessionManager(catalog, Limits(max_sessions=4), tmp_path).close_all()
