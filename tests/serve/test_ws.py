"""The /ws session protocol: OpenEnv's own client drives a task; raw WebSocket clients
check the errors, and clients that vanish (no close frame, half-open, idle) never keep a
session slot."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any

import pytest
from openenv.core.generic_client import GenericEnvClient
from websockets.sync.client import connect

from compiler.serve.catalog import Catalog
from compiler.serve.sessions import Limits

from .conftest import LiveServer, ServerFactory, wait_until


def single_env_task(catalog: Catalog) -> dict[str, Any]:
    return dict(next(t for t in catalog.tasks.values() if len(t["envs"]) == 1))


def test_openenv_generic_client_plays_a_task(serve: ServerFactory, catalog: Catalog) -> None:
    task = single_env_task(catalog)
    live = serve()
    with GenericEnvClient(base_url=live.url).sync() as env:
        first = env.reset(task_id=task["id"], seed=1)
        assert first.observation["prompt"] == task["prompt"] and first.done is False
        episode = first.observation["episode_id"]
        for call in task["gold_calls"]:
            result = env.step({"tool_name": call["tool"], "arguments": call["args"]})
            assert result.reward is None and result.observation["infrastructure_error"] is None
        state = env.state()
        assert state["episode_id"] == episode and state["step_count"] == len(task["gold_calls"])
        with live.client() as trainer:  # the trainer scores the live WebSocket session by id
            assert trainer.post(f"/sessions/{episode}/score").json()["reward"] == 1.0
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"tool": "not the action's shape"})
    wait_until(lambda: live.manager.count() == 0)


def send(ws: Any, message: Any) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return reply


def test_protocol_errors_are_error_messages(serve: ServerFactory) -> None:
    live = serve()
    with connect(live.ws_url) as ws:
        assert send(ws, "{nope")["data"]["code"] == "INVALID_JSON"
        assert send(ws, [1])["data"]["code"] == "INVALID_JSON"
        assert send(ws, "[" * 100_000)["data"]["code"] == "INVALID_JSON"
        assert send(ws, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        early = send(ws, {"type": "step", "data": {"tool_name": "whoami"}})
        assert early["type"] == "error" and "reset" in early["data"]["message"]
        assert send(ws, {"type": "reset", "data": {"sead": 1}})["data"]["code"] == "VALIDATION_ERROR"
        started = send(ws, {"type": "reset", "data": {"env": "ticketing", "scenario": "help_desk_monday"}})
        assert started["type"] == "observation"
        reply = send(ws, {"type": "step", "data": {"tool_name": "ticketing__whoami"}})
        assert reply["data"]["observation"]["result"] == "alice"
        assert send(ws, {"type": "state"})["data"]["step_count"] == 1
        again = send(ws, {"type": "reset", "data": {"env": "ticketing"}})
        assert again["data"]["observation"]["episode_id"] != started["data"]["observation"]["episode_id"]
        assert live.manager.count() == 1, "a second reset is a new session; the first is closed, never restarted"
        ws.send(json.dumps({"type": "close"}))
    wait_until(lambda: live.manager.count() == 0)


def test_capacity_is_reported_over_the_socket(serve: ServerFactory) -> None:
    live = serve(limits=Limits(max_sessions=1, idle_timeout=None, call_timeout=5.0, max_agent_sessions=1))
    with connect(live.ws_url) as first, connect(live.ws_url) as second:
        assert send(first, {"type": "reset", "data": {"env": "ticketing"}})["type"] == "observation"
        full = send(second, {"type": "reset", "data": {"env": "ticketing"}})
        assert full["data"]["code"] == "CAPACITY_REACHED" and full["data"]["max_sessions"] == 1
        assert full["data"]["pool"] == "agent"


# --------------------------------------------------------------------------- vanishing clients


def raw_websocket(live: LiveServer) -> socket.socket:
    """A WebSocket handshake by hand, so the test decides what the client never sends."""
    host, port = live.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def send_frame(sock: socket.socket, text: str) -> None:
    payload, mask = text.encode(), os.urandom(4)
    length = (
        bytes([0x80 | len(payload)]) if len(payload) < 126 else bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    )
    sock.sendall(b"\x81" + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            data += sock.recv(n - len(data))
        return data

    first, second = exactly(2)
    size = second & 0x7F
    if size == 126:
        size = struct.unpack("!H", exactly(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", exactly(8))[0]
    return exactly(size)


def open_raw_session(live: LiveServer) -> socket.socket:
    sock = raw_websocket(live)
    send_frame(sock, json.dumps({"type": "reset", "data": {"env": "ticketing"}}))
    assert json.loads(read_frame(sock))["type"] == "observation"
    assert live.manager.count() == 1
    return sock


def test_a_client_that_drops_the_connection_frees_its_slot(serve: ServerFactory) -> None:
    live = serve(limits=Limits(max_sessions=1, idle_timeout=None, call_timeout=5.0))
    sock = open_raw_session(live)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # a reset, no close frame: the process died
    wait_until(lambda: live.manager.count() == 0)
    with connect(live.ws_url) as ws:
        assert send(ws, {"type": "reset", "data": {"env": "ticketing"}})["type"] == "observation"


def test_a_half_open_client_is_dropped_by_ping_timeout(serve: ServerFactory) -> None:
    """The client's TCP connection stays open but it answers nothing (a frozen process, a
    dead NAT entry): the server's pings go unanswered and the slot comes back."""
    live = serve(limits=Limits(max_sessions=1, idle_timeout=None, call_timeout=5.0), ping=0.2)
    sock = open_raw_session(live)
    try:
        wait_until(lambda: live.manager.count() == 0)
    finally:
        sock.close()


def test_an_idle_client_loses_its_session_to_the_idle_timeout(serve: ServerFactory) -> None:
    live = serve(limits=Limits(max_sessions=1, idle_timeout=0.3, call_timeout=5.0))
    with connect(live.ws_url) as ws:
        assert send(ws, {"type": "reset", "data": {"env": "ticketing"}})["type"] == "observation"
        wait_until(lambda: live.manager.count() == 0)
        late = send(ws, {"type": "step", "data": {"tool_name": "ticketing__whoami"}})
        assert late["type"] == "error" and late["data"]["kind"] == "unknown_session"


def test_no_client_takes_over_another_clients_episode(serve: ServerFactory) -> None:
    live = serve()
    with connect(live.ws_url) as ws, live.client() as client:
        live.open_session(client, env="ticketing", episode_id="mine")
        taken = send(ws, {"type": "reset", "data": {"env": "ticketing", "episode_id": "mine"}})
        assert taken["type"] == "error" and taken["data"]["kind"] == "trainer_only"
        by_id = send(ws, {"type": "reset", "data": {"handle": "mine"}})
        assert by_id["type"] == "error" and by_id["data"]["kind"] == "unknown_session", "an id is not a handle"
        own = send(ws, {"type": "reset", "data": {"env": "ticketing"}})["data"]["observation"]["episode_id"]
        refused = client.post("/step", json={"episode_id": own, "action": {"tool_name": "ticketing__whoami"}})
        assert refused.status_code == 404 and refused.json()["error"]["kind"] == "unknown_session"
