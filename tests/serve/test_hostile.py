"""Hostile agent input through the real server (HTTP, WebSocket, MCP): a lone surrogate,
NaN, nesting 600 deep, 10**4000 are refused as `invalid_argument` before the tool runs,
change nothing, keep the episode scorable and the journal replayable; a call whose
commit fails changes nothing; quotas; a data directory with one bad journal among ten
still serves the other nine."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostile import arguments
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from shipped import package_dir
from websockets.sync.client import connect

from compiler.serve import journal
from compiler.serve.catalog import Catalog, load_catalog
from compiler.serve.mcp import EPISODE_META_KEY
from compiler.serve.sessions import Limits, SessionManager, Start

from .conftest import GENERATED, TICKETING, ServerFactory, spawn_serve

BFCL = package_dir("bfcl_ticket")


def deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


HOSTILE_JSON: dict[str, Any] = {
    "a lone surrogate": "\ud800",
    "NaN in a map": {"a": float("nan")},
    "Infinity": float("inf"),
    "nesting 600 deep": deep(600),
    "10**4000": 10**4000,
}
"""Values for a `json` parameter (bfcl_ticket's `ticket_id`) and a `map[str, json]` one."""


@pytest.fixture(scope="module")
def bfcl() -> Catalog:
    return load_catalog([BFCL], GENERATED)


def body_text(body: Any) -> bytes:
    """JSON as a client may send it: Python's encoder writes NaN, Infinity and escaped
    lone surrogates, which httpx's own encoder would refuse to send."""
    return json.dumps(body).encode()


def step(client: httpx.Client, episode: str, tool: str, arguments: Any) -> dict[str, Any]:
    action = {"tool_name": tool, "arguments": arguments}
    response = client.post(
        "/step",
        content=body_text({"episode_id": episode, "action": action}),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    observation: dict[str, Any] = response.json()["observation"]
    return observation


@pytest.mark.parametrize("name", list(HOSTILE_JSON))
def test_hostile_json_over_http_is_refused_and_changes_nothing(
    serve: ServerFactory, bfcl: Catalog, tmp_path: Path, name: str
) -> None:
    hostile = HOSTILE_JSON[name]
    live = serve(use=bfcl, data_dir=tmp_path)
    with live.client() as client:
        _, handle = live.open_session(client, env="bfcl_ticket", scenario="it_help_desk", episode_id="h")
        before = client.get("/sessions/h").json()["states"]
        for tool, arguments in [
            ("get_ticket", {"ticket_id": hostile}),
            ("edit_ticket", {"ticket_id": 1, "updates": {"issue": hostile}}),
            ("edit_ticket", {"ticket_id": 1, "updates": hostile}),
        ]:
            observation = step(client, handle, tool, arguments)
            assert observation["infrastructure_error"] is None and observation["ended"] is None
            assert observation["domain_error"] is True
            assert observation["result"]["error"]["kind"] == "invalid_argument", observation
            assert "cannot be written" not in observation["result"]["error"]["message"], "decided before the tool"
            assert client.get("/sessions/h").json()["states"] == before, "a refused call changed the state"
        after = step(client, handle, "edit_ticket", {"ticket_id": 1, "updates": {"issue": "fixed"}})
        assert after["domain_error"] is False
        served = client.get("/sessions/h").json()
    live.stop()
    restarted = SessionManager(bfcl, Limits(max_sessions=4), tmp_path)
    assert restarted.state("h") == served, "the journal replays to what was served"
    assert restarted.quarantined == {}
    restarted.close_all()


def test_hostile_calls_over_ws_keep_the_socket_and_the_episode_scored(serve: ServerFactory, catalog: Catalog) -> None:
    task = next(t for t in catalog.tasks.values() if t["envs"] == ["ticketing"] and t["gold_calls"])
    live = serve()
    hostile_calls = [
        {"tool_name": "create_ticket", "arguments": {"title": "\ud800"}},
        {"tool_name": "get_ticket", "arguments": {"ticket_id": 10**4000}},
        {"tool_name": "create_ticket", "arguments": {"title": deep(600)}},
        {"tool_name": "create_ticket", "arguments": {"title": "t", "priority": float("nan")}},
    ]
    with connect(live.ws_url, max_size=2**24) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task_id": task["id"]}}))
        episode = json.loads(ws.recv(timeout=10))["data"]["observation"]["episode_id"]
        for call in [*hostile_calls, *({"tool_name": c["tool"], "arguments": c["args"]} for c in task["gold_calls"])]:
            ws.send(json.dumps({"type": "step", "data": call}))
            reply = json.loads(ws.recv(timeout=10))
            assert reply["type"] == "observation", reply
            assert reply["data"]["observation"]["infrastructure_error"] is None
        with live.client() as trainer:
            scored = trainer.post(f"/sessions/{episode}/score").json()
    assert scored["scorable"] is True and scored["reward"] == 1.0, scored


async def mcp_hostile(url: str, handle: str) -> list[Any]:
    async with Client(f"{url}/mcp/") as client:
        meta = {EPISODE_META_KEY: handle}
        return [
            await client.call_tool(
                "ticketing__get_ticket", {"ticket_id": deep(100)}, meta=meta
            ),  # the SDK sends no deeper
            await client.call_tool("ticketing__get_ticket", {"ticket_id": 10**4000}, meta=meta),
            await client.call_tool("ticketing__create_ticket", {"title": "t", "priority": 10**30}, meta=meta),
        ]


def test_hostile_calls_over_mcp_are_refused_results(serve: ServerFactory) -> None:
    live = serve(mcp=True)
    with live.client() as client:
        _, handle = live.open_session(client, env="ticketing", scenario="help_desk_monday", episode_id="m")
        before = client.get("/sessions/m").json()["states"]
        results = asyncio.run(mcp_hostile(live.url, handle))
        for result in results:
            assert result.is_error is True
            assert result.structured_content["error"]["kind"] == "invalid_argument"
        info = client.get("/sessions/m").json()
    assert info["states"] == before and info["turns"] == 3 and info["broken"] is None


# --------------------------------------------------------------------------- a failed call changes nothing


def test_a_call_whose_journal_record_fails_is_rolled_back_everywhere(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    manager.create(Start(envs=("ticketing",), scenario="busy_queue"), "s")
    manager.call("s", "login", {"username": "alice", "password": "alice-pass"})
    before = manager.state("s")
    path = tmp_path / f"s{journal.SUFFIX}"
    size = path.stat().st_size

    def failing_sync(fd: int) -> None:  # the record is written, then the disk fails to sync it
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(journal, "_sync_data", failing_sync)
    outcome = manager.call("s", "close_ticket", {"ticket_id": 1})
    assert outcome.ended == "infrastructure" and "was not made" in (outcome.infrastructure_error or "")
    monkeypatch.undo()
    assert manager.get("s").states() == before["states"], "the call's changes were rolled back"
    assert manager.get("s").turns == before["turns"]
    manager.close_all()
    assert path.stat().st_size == size, "the journal was cut back to before the record"
    restored = SessionManager(catalog, Limits(max_sessions=4), tmp_path)
    assert restored.state("s") == before
    restored.close_all()


# --------------------------------------------------------------------------- quotas


def test_the_session_quota_refuses_a_call_and_changes_nothing(tmp_path: Path, catalog: Catalog) -> None:
    manager = SessionManager(catalog, Limits(max_sessions=4, session_bytes=4000), tmp_path)
    manager.create(Start(envs=("ticketing",), scenario="busy_queue"), "s")
    manager.call("s", "login", {"username": "alice", "password": "alice-pass"})
    outcomes = [manager.call("s", "create_ticket", {"title": "t", "description": "x" * 900}) for _ in range(6)]
    refused = [o for o in outcomes if o.result.get("error", {}).get("kind") == "limit_exceeded"]
    assert refused and outcomes[0].domain_error is False
    kept = len(outcomes) - len(refused)
    state = manager.state("s")
    assert state["turns"] == 1 + kept, "a refused call is not a turn"
    assert len(state["states"]["ticketing"]["tickets"]) == 3 + kept, "nor a change"
    assert "quota of 4000 bytes" in refused[0].result["error"]["message"]
    assert refused[0].result["error"]["field"] == "session_bytes" and refused[0].result["error"]["limit"] == 4000
    assert manager.get("s").recorded_bytes <= 4000
    small = manager.call("s", "whoami", {})
    assert small.domain_error is False, "the episode goes on"
    used = manager.get("s").recorded_bytes
    assert manager.fork("s", "t").recorded_bytes == used, "a fork's copied history counts"
    manager.close("t")
    manager.close_all()
    restored = SessionManager(catalog, Limits(max_sessions=4, session_bytes=4000), tmp_path)
    assert restored.get("s").recorded_bytes == used, "a restart keeps what the quota counted"
    restored.close_all()
    assert sum(len(line) for line in (tmp_path / "s.jsonl").read_bytes().splitlines()[1:]) < 4000


def test_the_state_quota_counts_only_calls_that_change_state(catalog: Catalog) -> None:
    manager = SessionManager(catalog, Limits(max_sessions=4, state_bytes=3000))
    manager.create(Start(envs=("ticketing",), scenario="busy_queue", max_turns=100), "s")
    manager.call("s", "login", {"username": "alice", "password": "alice-pass"})
    for _ in range(40):  # reads do not count
        assert manager.call("s", "get_ticket", {"ticket_id": 1}).domain_error is False
    kinds = [
        manager.call("s", "create_ticket", {"title": "t", "description": "x" * 1000}).result.get("id", "refused")
        for _ in range(4)
    ]
    assert kinds[:2] != ["refused", "refused"] and kinds[-1] == "refused"
    manager.close_all()


# --------------------------------------------------------------------------- restart with a bad journal


def test_one_bad_journal_among_ten_leaves_nine_served_and_reports_it(tmp_path: Path, catalog: Catalog) -> None:
    manager = SessionManager(catalog, Limits(max_sessions=16), tmp_path)
    for number in range(10):
        manager.create(Start(envs=("ticketing",), scenario="busy_queue"), f"s{number}")
        manager.call(f"s{number}", "login", {"username": "alice", "password": "alice-pass"})
        manager.call(f"s{number}", "close_ticket", {"ticket_id": 1 + number % 3})
    manager.close_all()
    bad = tmp_path / f"s4{journal.SUFFIX}"
    lines = bad.read_bytes().splitlines(keepends=True)
    bad.write_bytes(lines[0] + lines[1].replace(b"alice", b"mallory") + lines[2])
    server = spawn_serve(str(TICKETING), "--data-dir", str(tmp_path), "--max-sessions", "16")
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            served = [s["episode_id"] for s in client.get("/sessions").json()["sessions"]]
            assert served == [f"s{n}" for n in range(10) if n != 4]
            health = client.get("/health").json()
            assert list(health["quarantined"]) == ["s4"] and "checksum mismatch" in health["quarantined"]["s4"]
            s3 = client.get("/sessions/s3").json()
            assert s3["turns"] == 2
            handle = s3["handle"]  # the trainer's session keeps its journaled handle
            assert (
                client.post("/step", json={"episode_id": handle, "action": {"tool_name": "whoami"}}).status_code == 200
            )
            assert client.get("/sessions/s4").status_code == 404
    finally:
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=10)
    assert (tmp_path / journal.QUARANTINE / f"s4{journal.SUFFIX}").exists()


# --------------------------------------------------------------------------- the property, served


def test_hostile_arguments_through_the_server_never_break_a_session(serve: ServerFactory, catalog: Catalog) -> None:
    live = serve()
    tools = {
        entry["name"]: [p for p in entry["parameters"]["properties"]] for entry in catalog.envs["ticketing"].entries
    }
    opened = iter(range(10**6))

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(sorted(tools)), label="tool")
        args = data.draw(arguments(tools[tool]), label="arguments")
        episode = f"p{next(opened)}"
        with live.client() as client:
            _, handle = live.open_session(client, env="ticketing", scenario="busy_queue", episode_id=episode)
            before = client.get(f"/sessions/{episode}").json()["states"]
            try:
                observation = step(client, handle, tool, args)
            except ValueError:  # an int past what Python writes as JSON text: not sendable
                return
            finally:
                after = client.get(f"/sessions/{episode}").json()
                client.delete(f"/sessions/{episode}")
            assert observation["infrastructure_error"] is None and after["broken"] is None
            if observation["domain_error"] or observation["ended"] == "invalid_call":
                assert after["states"] == before, f"a refused `{tool}` changed the state"

    check()
