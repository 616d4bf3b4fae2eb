"""Only the trainer decides what is scored (issue 23, findings 1 and 5), through the real
server on loopback: the agent's channel (HTTP /reset /step /state, /ws, MCP) cannot bring
a task, a turn or time limit, restart or reach an episode it did not open, nor take the
trainer's session slots; slow requests are cut off; `envc serve` off loopback needs a
trainer token; OpenEnv's own client still plays an episode the trainer opened."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from openenv.core.generic_client import GenericEnvClient
from websockets.sync.client import connect

from compiler.cli.serve import UNGUARDED, is_loopback
from compiler.serve import journal
from compiler.serve.catalog import Catalog
from compiler.serve.mcp import EPISODE_META_KEY
from compiler.serve.sessions import Limits, SessionManager, Start, UnknownSession

from .conftest import LISTENING, ROOT, TICKETING, LiveServer, ServerFactory, envc_command


def gold_task(catalog: Catalog) -> dict[str, Any]:
    return dict(next(t for t in catalog.tasks.values() if t["envs"] == ["ticketing"] and len(t["gold_calls"]) > 1))


def other_task(catalog: Catalog, task: dict[str, Any]) -> dict[str, Any]:
    return dict(next(t for t in catalog.tasks.values() if t["envs"] == ["ticketing"] and t["id"] != task["id"]))


def send(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return reply


def step(client: httpx.Client, handle: str, tool: str, arguments: Any = None) -> httpx.Response:
    action = {"tool_name": tool, "arguments": arguments or {}}
    return client.post("/step", json={"episode_id": handle, "action": action})


def trainer_view(client: httpx.Client, episode: str) -> dict[str, Any]:
    """What the trainer sees of a session: states, turns, end, start."""
    view: dict[str, Any] = client.get(f"/sessions/{episode}").json()
    return view


# --------------------------------------------------------------------------- the agent's resets


def test_an_inline_task_on_the_agents_channel_is_refused(serve: ServerFactory, catalog: Catalog) -> None:
    """An inline task carries its own verifier: always true would score 1.0."""
    live = serve()
    rigged = {**gold_task(catalog), "id": "rigged"}
    with live.client() as client, connect(live.ws_url) as ws:
        refused = client.post("/reset", json={"task": rigged})
        assert refused.status_code == 403
        error = refused.json()["error"]
        assert error["kind"] == "trainer_only" and error["fields"] == ["task"] and "POST /sessions" in error["message"]
        over_ws = send(ws, {"type": "reset", "data": {"task": rigged}})
        assert over_ws["type"] == "error" and over_ws["data"]["kind"] == "trainer_only"
        assert client.get("/health").json()["active_sessions"] == 0, "nothing was opened"


@pytest.mark.parametrize(
    "attempt",
    [
        {"task_id": "OTHER"},
        {"max_turns": 10**9},
        {},  # a fresh start, after looking around (undo and retry)
        {"task": "RIGGED"},
    ],
    ids=["another task", "more turns", "a fresh start", "an inline task"],
)
def test_the_agent_cannot_rebuild_an_open_episode(
    serve: ServerFactory, catalog: Catalog, attempt: dict[str, Any]
) -> None:
    """Naming its open episode in /reset (its own over HTTP, the trainer's, or over /ws)
    never rebuilds it: refused, the state and turns as they were, the trainer's score
    the same."""
    task = gold_task(catalog)
    body = {key: other_task(catalog, task)["id"] if value == "OTHER" else value for key, value in attempt.items()}
    if body.get("task") == "RIGGED":
        body["task"] = {**task, "id": "rigged"}
    live = serve()
    with live.client() as client, connect(live.ws_url) as ws:
        trainers, handle = live.open_session(client, task_id=task["id"])
        own = client.post("/reset", json={"task_id": task["id"]}).json()["observation"]["episode_id"]
        for name in (handle, own):
            step(client, name, "whoami").raise_for_status()  # a look around: not the task's calls
        before = {episode: trainer_view(client, episode) for episode in (trainers, own)}
        scores = {episode: client.post(f"/sessions/{episode}/score").json() for episode in (trainers, own)}
        assert all(score["scorable"] and score["reward"] == 0.0 for score in scores.values())
        for name in (trainers, handle, own):
            refused = client.post("/reset", json={**body, "episode_id": name})
            assert refused.status_code == 403 and refused.json()["error"]["kind"] == "trainer_only", refused.text
            over_ws = send(ws, {"type": "reset", "data": {**body, "episode_id": name}})
            assert over_ws["type"] == "error" and over_ws["data"]["kind"] == "trainer_only"
        beside = client.post("/reset", json={**body, "handle": handle})
        if body:  # a handle comes alone: its start is the trainer's
            assert beside.status_code in (400, 403), beside.text
        else:  # the handle alone: the episode as it stands, nothing rebuilt
            assert beside.status_code == 200 and beside.json()["observation"]["turns"] == 1
        assert {episode: trainer_view(client, episode) for episode in (trainers, own)} == before
        assert {episode: client.post(f"/sessions/{episode}/score").json() for episode in (trainers, own)} == scores


def test_the_agents_time_limit_cannot_make_an_episode_unscorable(serve: ServerFactory, catalog: Catalog) -> None:
    task = gold_task(catalog)
    live = serve()
    with live.client() as client:
        episode, handle = live.open_session(client, task_id=task["id"])
        body = {"episode_id": handle, "action": {"tool_name": "whoami"}, "timeout_s": 1e-9}
        refused = client.post("/step", json=body)
        assert refused.status_code == 403 and refused.json()["error"]["kind"] == "trainer_only"
        assert "--call-timeout" in refused.json()["error"]["message"]
        assert trainer_view(client, episode)["turns"] == 0 and trainer_view(client, episode)["broken"] is None
        step(client, handle, "nope")  # a bad episode ends as an invalid call...
        assert client.post(f"/sessions/{episode}/score").json() == {
            "episode_id": episode,
            "turns": 1,
            "ended": "invalid_call",
            "scorable": True,
            "reward": 0.0,
        }, "...scored 0, never dropped"


# --------------------------------------------------------------------------- who reaches what


async def mcp_call(url: str, name: str) -> Any:
    """The call's result, or the MCPError it raised."""
    async with Client(f"{url}/mcp/") as client:
        try:
            return await client.call_tool("ticketing__whoami", {}, meta={EPISODE_META_KEY: name})
        except MCPError as exc:
            return exc


def test_http_and_mcp_cannot_reach_a_websockets_episode(serve: ServerFactory) -> None:
    live = serve(mcp=True)
    with live.client() as client, connect(live.ws_url) as ws:
        started = send(ws, {"type": "reset", "data": {"env": "ticketing", "scenario": "help_desk_monday"}})
        episode = started["data"]["observation"]["episode_id"]
        assert step(client, episode, "ticketing__whoami").status_code == 404
        assert client.get("/state", params={"episode_id": episode}).status_code == 404
        assert "unknown episode" in str(asyncio.run(mcp_call(live.url, episode)))
        assert trainer_view(client, episode)["turns"] == 0, "nothing reached it"
        assert send(ws, {"type": "step", "data": {"tool_name": "ticketing__whoami"}})["type"] == "observation"
        assert trainer_view(client, episode)["turns"] == 1, "its own connection does"


def test_the_trainers_episode_is_reached_by_its_handle_only(serve: ServerFactory) -> None:
    """By handle from any transport; never by the trainer's episode id; a WebSocket that
    played it leaves it open when it goes."""
    live = serve(mcp=True)
    with live.client() as client:
        episode, handle = live.open_session(client, env="ticketing", scenario="help_desk_monday", episode_id="t1")
        assert len(handle) >= 32 and handle != episode
        assert step(client, episode, "ticketing__whoami").status_code == 404
        assert "unknown episode" in str(asyncio.run(mcp_call(live.url, episode)))
        with connect(live.ws_url) as ws:
            by_id = send(ws, {"type": "reset", "data": {"handle": episode}})
            assert by_id["type"] == "error" and by_id["data"]["kind"] == "unknown_session"
            attached = send(ws, {"type": "reset", "data": {"handle": handle}})
            assert attached["data"]["observation"]["episode_id"] == handle
            send(ws, {"type": "step", "data": {"tool_name": "ticketing__whoami"}})
            new = send(ws, {"type": "reset", "data": {"env": "ticketing"}})  # the socket moves on: t1 stays
            assert new["data"]["observation"]["episode_id"] not in (episode, handle)
        step(client, handle, "ticketing__whoami").raise_for_status()
        assert asyncio.run(mcp_call(live.url, handle)).is_error is False
        assert trainer_view(client, episode)["turns"] == 3, "WebSocket, HTTP and MCP calls by the handle"
        assert live.manager.count("agent") == 0 and live.manager.count("trainer") == 1


def test_the_agents_channel_cannot_take_the_trainers_capacity(serve: ServerFactory) -> None:
    live = serve(limits=Limits(max_sessions=2, idle_timeout=None, call_timeout=5.0, max_agent_sessions=3))
    with live.client() as client, connect(live.ws_url) as first, connect(live.ws_url) as second:
        for _ in range(2):
            assert client.post("/reset", json={"env": "ticketing"}).status_code == 200
        assert send(first, {"type": "reset", "data": {"env": "ticketing"}})["type"] == "observation"
        full = send(second, {"type": "reset", "data": {"env": "ticketing"}})
        assert full["data"]["code"] == "CAPACITY_REACHED" and full["data"]["pool"] == "agent"
        refused = client.post("/reset", json={"env": "ticketing"})
        assert refused.status_code == 503 and refused.json()["error"]["pool"] == "agent"
        for _ in range(2):  # every agent slot is held, and the trainer still gets its sessions
            assert client.post("/sessions", json={"env": "ticketing"}).status_code == 201
        trainer_full = client.post("/sessions", json={"env": "ticketing"})
        assert trainer_full.status_code == 503 and trainer_full.json()["error"]["pool"] == "trainer"


def test_openenv_client_plays_the_trainers_episode_by_its_handle(serve: ServerFactory, catalog: Catalog) -> None:
    """OpenEnv 0.3.0's GenericEnvClient over /ws: `reset(handle=...)`, its steps, and the
    trainer scores; the client's going leaves the trainer's episode open."""
    task = gold_task(catalog)
    live = serve()
    with live.client() as trainer:
        episode, handle = live.open_session(trainer, task_id=task["id"], seed=3)
        with GenericEnvClient(base_url=live.url).sync() as env:
            first = env.reset(handle=handle)
            assert first.observation["prompt"] == task["prompt"] and first.observation["turns"] == 0
            for call in task["gold_calls"]:
                result = env.step({"tool_name": call["tool"], "arguments": call["args"]})
                assert result.reward is None and result.observation["infrastructure_error"] is None
            assert env.state()["step_count"] == len(task["gold_calls"])
        assert trainer.post(f"/sessions/{episode}/score").json()["reward"] == 1.0
        time.sleep(0.2)
        assert trainer.post(f"/sessions/{episode}/score").json()["reward"] == 1.0, "still open after the client left"


# --------------------------------------------------------------------------- read deadlines


def raw_connection(live: LiveServer) -> socket.socket:
    host, port = live.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


def trickle(sock: socket.socket, data: bytes, live: LiveServer) -> float:
    """Send `data` a byte every 50 ms (the server is asked for /health between bytes:
    it goes on serving); the seconds until the server cut the connection off."""
    began = time.monotonic()
    with live.client() as client:
        try:
            for byte in data * 10:
                sock.sendall(bytes([byte]))
                assert client.get("/health").status_code == 200
                time.sleep(0.05)
        except OSError:  # broken pipe, reset: cut off
            return time.monotonic() - began
    raise AssertionError("the trickling client was never cut off")


def test_slow_headers_are_cut_off(serve: ServerFactory) -> None:
    """A silent client, half a request's headers, and headers a byte at a time (slowloris):
    each is cut off after the header deadline, the first two with a 408 JSON error."""
    live = serve(header_timeout=0.5)
    request = b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    with raw_connection(live) as silent, raw_connection(live) as half, raw_connection(live) as slow:
        began = time.monotonic()
        half.sendall(request)
        assert trickle(slow, request, live) < 2
        answers = [read_until_closed(sock) for sock in (silent, half)]
        assert time.monotonic() - began < 3
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["kind"] == "request_timeout"


def test_a_slow_body_is_cut_off_on_every_route(serve: ServerFactory) -> None:
    live = serve(body_timeout=0.5, mcp=True)
    for path in ("/reset", "/mcp/"):
        with raw_connection(live) as sock:
            head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            sock.sendall(head.encode() + b'{"env"')
            began = time.monotonic()
            answer = read_until_closed(sock)
            assert time.monotonic() - began < 3
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["kind"] == "request_timeout"


# --------------------------------------------------------------------------- the command


def test_envc_serve_off_loopback_needs_a_trainer_token() -> None:
    done = subprocess.run(
        [*envc_command(), "serve", str(TICKETING), "--host", "0.0.0.0", "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--trainer-token-env" in lines[0] and "0.0.0.0" in lines[0], done.stderr


def test_envc_serve_on_loopback_without_a_token_says_what_is_open() -> None:
    process = subprocess.Popen(
        [*envc_command(), "serve", str(TICKETING), "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        lines = []
        for line in process.stderr:
            lines.append(line)
            if LISTENING.search(line):
                break
        assert LISTENING.search(lines[-1]), lines
        assert any(line.strip() == f"envc serve: {UNGUARDED}" for line in lines[:-1]), lines
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True)]
    + [("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("server.internal", False)],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


# --------------------------------------------------------------------------- handles across restarts


def test_handles_survive_a_restart_and_old_journals_get_one(tmp_path: Path, catalog: Catalog) -> None:
    """The trainer may have handed a handle out: a restarted server keeps it. A journal
    written before handles existed comes back as the trainer's, with a fresh handle that
    only the trainer sees (GET /sessions), so no guessable id becomes reachable."""
    manager = SessionManager(catalog, Limits(), tmp_path)
    kept = manager.create(Start(envs=("ticketing",)), "kept").handle
    manager.create(Start(envs=("ticketing",)), "old")
    agents = manager.create(Start(envs=("ticketing",)), None, "http").episode_id
    manager.close_all()
    path = tmp_path / f"old{journal.SUFFIX}"
    first, *rest = path.read_bytes().splitlines(keepends=True)
    legacy = {key: value for key, value in journal.decode(first, "test").items() if key not in ("owner", "handle")}
    path.write_bytes(b"".join([journal.encode(legacy), *rest]))
    restored = SessionManager(catalog, Limits(), tmp_path)
    try:
        assert restored.by_handle(str(kept)).episode_id == "kept"
        assert restored.by_handle(agents).owner == "http", "an agent's HTTP session: its id is its handle"
        old = restored.get("old")
        assert old.owner == "trainer" and old.handle and old.handle != "old"
        with pytest.raises(UnknownSession):
            restored.by_handle("old")
    finally:
        restored.close_all()
