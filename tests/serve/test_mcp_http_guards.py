"""`envc mcp --transport http` keeps `envc serve`'s trust rules (issue 23): a bearer token
(`--token-env`) on every request and required off loopback, header and body read
deadlines, the body limit, the agent limits on arguments and the call time limit. Run as
the command, on loopback, driven by the MCP SDK's client over streamable HTTP (and raw
sockets for the hostile requests). The `slow_body` fixture spec is lowered from the
templates as they are now, so its endless loop meets the current call clock."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from compiler.analyse import analyse_file
from compiler.check.package import write_tree
from compiler.cli.app import cli
from compiler.lower import lower
from compiler.lower.agent_limits import MAX_DEPTH
from compiler.serve.http import MAX_BODY_BYTES
from compiler.serve.mcp import episode_meta

from .conftest import ROOT

SLOW = ROOT / "tests" / "fixtures" / "serve" / "slow_body.envspec"
ENVC = str(Path(sys.executable).with_name("envc"))
ANNOUNCED = re.compile(r"at (http://\S+/) \(MCP streamable HTTP\)")
TOKEN = "mcp-test-token-0123456789abcdef"
LIMIT = 0.5
"""The call, header and body time limits the server is started with (seconds)."""


@pytest.fixture(scope="module")
def slow_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = analyse_file(SLOW)
    assert result.environment is not None, [d.message for d in result.diagnostics]
    folder = tmp_path_factory.mktemp("packages") / "slow_body"
    write_tree(folder, lower(result.environment, "tests/fixtures/serve/slow_body.envspec"))
    return folder


@pytest.fixture(scope="module")
def server(slow_dir: Path) -> Iterator[str]:
    """`envc mcp` over HTTP on a free loopback port, with a token and short limits: its URL."""
    limits = ["--call-timeout", str(LIMIT), "--header-timeout", str(LIMIT), "--body-timeout", str(LIMIT)]
    process = subprocess.Popen(
        [ENVC, "mcp", str(slow_dir), "--transport", "http", "--port", "0", "--episode", "e1", "--scenario", "fresh"]
        + ["--token-env", "MCP_TEST_TOKEN", *limits],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "MCP_TEST_TOKEN": TOKEN},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = ANNOUNCED.search(line)
        assert found, line
        yield found.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


def client(url: str, token: str | None = TOKEN) -> Client:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


def call(url: str, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    """One tool call on episode e1 through the SDK's client: its result and seconds."""

    async def main() -> tuple[Any, float]:
        async with client(url) as session:
            started = time.perf_counter()
            result = await session.call_tool(tool, arguments, meta=episode_meta("e1"))
            return result, time.perf_counter() - started

    return anyio.run(main)


def raw_exchange(url: str, data: bytes, wait: float = 5.0) -> tuple[bytes, float]:
    """Send `data` on a raw connection and read until the server closes it."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        started = time.perf_counter()
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer, time.perf_counter() - started


def test_a_request_without_the_token_is_refused(server: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = httpx.post(server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
        assert response.status_code == 401 and response.json()["error"]["kind"] == "unauthorized"

    async def refused() -> None:
        async with client(server, token=None) as session:
            await session.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK's own error for a 401, whichever it is
        anyio.run(refused)


def test_with_the_token_calls_act_on_the_episode(server: str) -> None:
    result, _ = call(server, "bump", {})
    assert result.is_error is False and result.structured_content == {"result": 1}


def test_an_endless_call_stops_at_the_call_timeout_and_changes_nothing(server: str) -> None:
    before, _ = call(server, "bump", {})
    result, seconds = call(server, "spin", {"rounds": 10**12})
    assert result.is_error is True and result.structured_content["error"]["kind"] == "timeout"
    assert LIMIT <= seconds < LIMIT + 1.5
    after, _ = call(server, "bump", {})
    assert after.structured_content["result"] == before.structured_content["result"] + 1, "spin changed nothing"


def test_arguments_past_the_agent_limits_are_invalid_arguments(server: str) -> None:
    nested: Any = 1
    for _ in range(MAX_DEPTH + 5):
        nested = [nested]
    before, _ = call(server, "bump", {})
    for hostile in (nested, 10**400):  # the SDK client cannot send a lone surrogate
        result, _ = call(server, "spin", {"rounds": hostile})
        assert result.is_error is True and result.structured_content["error"]["kind"] == "invalid_argument"
    after, _ = call(server, "bump", {})
    assert after.structured_content["result"] == before.structured_content["result"] + 1


def test_slow_headers_get_a_408_at_the_header_deadline(server: str) -> None:
    answer, seconds = raw_exchange(server, b"POST / HTTP/1.1\r\nHost: x\r\n")  # never finished
    assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer
    assert LIMIT <= seconds < LIMIT + 2


def test_a_slow_body_gets_a_408_at_the_body_deadline(server: str) -> None:
    head = f"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
    answer, seconds = raw_exchange(server, (head + "Content-Length: 100\r\n\r\n{").encode())
    assert b" 408 " in answer.split(b"\r\n")[0] and b"request_timeout" in answer
    assert LIMIT <= seconds < LIMIT + 2


def test_a_body_past_the_limit_gets_a_413(server: str) -> None:
    body = b"[" + b"0," * (MAX_BODY_BYTES // 2) + b"0]"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    response = httpx.post(server, content=body, headers=headers, timeout=30)
    assert response.status_code == 413 and response.json()["error"]["kind"] == "too_large"


def test_off_loopback_without_a_token_it_refuses_to_start(slow_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["mcp", str(slow_dir), "--transport", "http", "--host", "0.0.0.0"])
    assert result.exit_code == 2, result.output
    assert "reachable from other machines: give --token-env VAR" in result.stderr


def test_an_unset_token_variable_is_an_error(slow_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    result = CliRunner().invoke(cli, ["mcp", str(slow_dir), "--transport", "http", "--token-env", "MCP_TEST_UNSET"])
    assert result.exit_code == 2 and "$MCP_TEST_UNSET is not set" in result.stderr
