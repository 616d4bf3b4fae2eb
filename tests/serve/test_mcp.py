"""compiler/serve/mcp.py and `envc mcp`: a compiled environment as a real MCP server on
loopback (streamable HTTP under uvicorn, stdio and HTTP as `envc mcp` subprocesses),
driven by the MCP SDK's own client: the tool list with its schemas and hints, calls that
change state, domain errors as `isError` results, the generated tests' hostile arguments,
missing and unknown episodes, and a client that vanishes mid-call."""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import anyio
import jsonschema
import mcp.types as types
import pytest
import uvicorn
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from shipped import package_dir, package_dirs, spec_path
from starlette.applications import Starlette
from starlette.routing import Mount

from compiler.build.packages import import_package
from compiler.cli.app import cli
from compiler.cli.mcp import listen
from compiler.serve import catalog
from compiler.serve.mcp import EPISODE_META_KEY, LocalBackend, episode_meta, mcp_asgi_app, mcp_tool

ROOT = Path(__file__).resolve().parents[2]
TICKETING = package_dir("ticketing")
ENVC = str(Path(sys.executable).with_name("envc"))
ANNOUNCED = re.compile(r"at (http://\S+/) \(MCP streamable HTTP\)")
T = TypeVar("T")


def run(coro: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(coro)


async def refusal(call: Awaitable[Any]) -> MCPError:
    """The protocol error a call must end in (caught inside the client's context)."""
    try:
        answer = await call
    except MCPError as exc:
        return exc
    raise AssertionError(f"no protocol error: {answer}")


class GatedBackend(LocalBackend):
    """A LocalBackend that can hold one tool's calls until released: a call in flight
    when its client vanishes."""

    def __init__(self, package: ModuleType, tools: list[dict[str, Any]]) -> None:
        super().__init__(package, tools)
        self.gated: str | None = None
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.released_in_time = False

    def call(self, episode_id: str, tool: str, arguments: dict[str, Any]) -> Any:
        if tool != self.gated:
            return super().call(episode_id, tool, arguments)
        self.entered.set()
        self.released_in_time = self.release.wait(10)  # False: the server stalled while it held the call
        try:
            return super().call(episode_id, tool, arguments)
        finally:
            self.finished.set()


@dataclass
class Live:
    """The MCP app mounted at /mcp of a parent app (as `envc serve` mounts it), and an
    app at /cold whose lifespan nobody entered."""

    url: str
    backend: GatedBackend
    env: catalog.ServedEnv

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp/"


@pytest.fixture(scope="module")
def ticketing() -> catalog.ServedEnv:
    return catalog.load_env(TICKETING)


@pytest.fixture(scope="module")
def live(ticketing: catalog.ServedEnv) -> Iterator[Live]:
    backend = GatedBackend(ticketing.package, list(ticketing.entries))
    app = mcp_asgi_app(backend, ticketing.name, title=ticketing.title)
    cold = mcp_asgi_app(backend, "cold")
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_: Starlette) -> Any:
        async with app.lifespan():
            yield

    parent = Starlette(routes=[Mount("/mcp", app=app), Mount("/cold", app=cold)], lifespan=lifespan)
    sock = listen("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(parent, lifespan="on", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    yield Live(f"http://127.0.0.1:{sock.getsockname()[1]}", backend, ticketing)
    server.should_exit = True
    thread.join(timeout=10)


def bad_arguments(folder: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """The hostile-argument cases of the package's generated tests."""
    return list(generated_tests(folder).BAD_ARGUMENTS)


def generated_tests(folder: Path) -> ModuleType:
    alias = f"_mcp_test_{folder.name}"
    import_package(folder, alias)
    return importlib.import_module(f"{alias}.tests.test_environment")


# --------------------------------------------------------------------------- tools/list


def test_tools_list_has_the_schemas_and_hints_of_tools_json(live: Live) -> None:
    async def main() -> list[types.Tool]:
        async with Client(live.mcp) as client:
            return (await client.list_tools()).tools

    listed = {tool.name: tool for tool in run(main)}
    entries = {str(entry["name"]): entry for entry in live.env.entries}
    assert set(listed) == set(entries), "exactly the environment's tools: no scoring, no episode tools"
    for name, entry in entries.items():
        tool = listed[name]
        assert tool.input_schema == entry["parameters"]
        assert tool.description == entry["description"]
        assert tool.output_schema is not None and tool.output_schema["properties"]["result"] == entry["returns"]
        hints = tool.annotations
        assert hints is not None and hints.title == tool.title
        writes = entry["modifies_state"]
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            not writes,
            writes,
            not writes,
        ), name
    assert listed["whoami"].annotations is not None and listed["whoami"].annotations.read_only_hint is True
    assert listed["close_ticket"].annotations is not None and listed["close_ticket"].annotations.destructive_hint


# --------------------------------------------------------------------------- tools/call


def test_read_and_write_calls_act_on_the_named_episode(live: Live) -> None:
    episode = live.backend.create("busy_queue")
    other = live.backend.create("busy_queue")
    reference = live.env.package.Environment("busy_queue")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("create_ticket", {"title": "Printer on fire", "priority": 5}),
        ("get_ticket", {"ticket_id": 4}),
        ("set_status", {"ticket_id": 4, "status": "in_progress"}),
        ("list_tickets", {}),
    ]

    async def main() -> list[types.CallToolResult]:
        async with Client(live.mcp) as client:
            return [await client.call_tool(tool, args, meta=episode_meta(episode)) for tool, args in calls]

    results = run(main)
    for (tool, args), result in zip(calls, results):
        expected = reference.call(tool, args)
        assert result.is_error is False, (tool, result)
        assert result.structured_content == {"result": expected}, tool
        [block] = result.content
        assert isinstance(block, types.TextContent) and json.loads(block.text) == result.structured_content
    assert live.backend.state(episode) == reference.state(), "the episode went where the calls took it"
    assert live.backend.state(other) == live.env.package.Environment("busy_queue").state(), "no other episode moved"


def test_a_domain_error_is_an_is_error_result_and_changes_nothing(live: Live) -> None:
    episode = live.backend.create("busy_queue")
    before = live.backend.state(episode)

    async def main() -> list[types.CallToolResult]:
        async with Client(live.mcp) as client:
            missing = await client.call_tool("get_ticket", {"ticket_id": 999}, meta=episode_meta(episode))
            backwards = await client.call_tool(
                "set_status", {"ticket_id": 1, "status": "open"}, meta=episode_meta(episode)
            )
            return [missing, backwards]

    missing, backwards = run(main)
    assert missing.is_error is True
    assert missing.structured_content == live.env.package.Environment("busy_queue").call(
        "get_ticket", {"ticket_id": 999}
    )
    assert missing.structured_content["error"]["kind"] == "not_found"
    [block] = missing.content
    assert isinstance(block, types.TextContent) and json.loads(block.text) == missing.structured_content
    assert backwards.is_error is True and "error" in backwards.structured_content
    assert live.backend.state(episode) == before


def test_hostile_arguments_of_the_generated_tests_are_refused_and_change_nothing(live: Live) -> None:
    cases = bad_arguments(TICKETING)
    assert len(cases) > 20
    episode = live.backend.create("help_desk_monday")
    before = live.backend.state(episode)

    async def main() -> list[types.CallToolResult]:
        async with Client(live.mcp) as client:
            return [await client.call_tool(tool, args, meta=episode_meta(episode)) for tool, _, args in cases]

    for (tool, case, _), result in zip(cases, run(main)):
        assert result.is_error is True, (tool, case)
        assert result.structured_content["error"]["kind"] == "invalid_argument", (tool, case, result)
    assert live.backend.state(episode) == before


def post_raw(url: str, body: bytes) -> tuple[int, dict[str, Any] | None]:
    """A raw JSON-RPC POST (handshake-era, stateless): the status and the JSON answer."""
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read()
    return status, json.loads(text) if text else None


def oversized_status(url: str, size: int) -> int:
    """The status a POST announcing a `size`-byte body gets before any of it is sent."""
    parsed = urllib.parse.urlsplit(url)
    assert parsed.hostname is not None and parsed.port is not None
    with socket.create_connection((parsed.hostname, parsed.port), timeout=10) as conn:
        head = (
            f"POST {parsed.path} HTTP/1.1\r\nHost: {parsed.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {size}\r\n\r\n"
        )
        conn.sendall(head.encode())
        status_line = conn.makefile("rb").readline().decode()
    return int(status_line.split()[1])


def tools_call(arguments: Any, episode: str) -> bytes:
    params = {"name": "create_ticket", "arguments": arguments, "_meta": episode_meta(episode)}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()


def test_malformed_requests_get_protocol_errors_and_change_nothing(live: Live) -> None:
    """What an SDK client cannot even send: arguments that are no object, broken JSON,
    an oversized body. Clear JSON-RPC errors, no state change, the server still serves."""
    episode = live.backend.create("busy_queue")
    before = live.backend.state(episode)
    for arguments in ([1, 2], "title=x", 42):
        status, answer = post_raw(live.mcp, tools_call(arguments, episode))
        assert answer is not None and answer["error"]["code"] == types.INVALID_PARAMS, (arguments, status, answer)
    status, answer = post_raw(live.mcp, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {')
    assert answer is not None and answer["error"]["code"] == types.PARSE_ERROR, (status, answer)
    assert oversized_status(live.mcp, 5 * 1024 * 1024) == 413
    status, answer = post_raw(live.mcp, tools_call({"title": "fine"}, episode))
    assert status == 200 and answer is not None and answer["result"]["isError"] is False, answer
    assert len(live.backend.state(episode)["tickets"]) == len(before["tickets"]) + 1, "only the good call landed"


@pytest.mark.parametrize(
    ("tool", "call_meta", "message"),
    [
        ("no_such_tool", "EPISODE", "there is no tool `no_such_tool`"),
        ("whoami", None, 'needs the episode id in params._meta["envc/episode"]'),
        ("whoami", {}, "needs the episode id"),
        ("whoami", {EPISODE_META_KEY: 17}, "must be a non-empty string"),
        ("whoami", {EPISODE_META_KEY: ""}, "must be a non-empty string"),
        ("whoami", {EPISODE_META_KEY: "no-such-episode"}, "unknown episode 'no-such-episode'"),
        ("whoami", "CLOSED", "unknown episode"),
    ],
)
def test_unknown_tools_and_episodes_are_protocol_errors(live: Live, tool: str, call_meta: Any, message: str) -> None:
    episode = live.backend.create("busy_queue")
    if call_meta == "EPISODE":
        call_meta = episode_meta(episode)
    elif call_meta == "CLOSED":
        closed = live.backend.create()
        live.backend.close(closed)
        call_meta = episode_meta(closed)

    async def main() -> MCPError:
        async with Client(live.mcp) as client:
            return await refusal(client.call_tool(tool, {}, meta=call_meta))

    error = run(main)
    assert error.code == types.INVALID_PARAMS
    assert message in error.message


def test_an_internal_error_of_the_environment_is_a_protocol_error(ticketing: catalog.ServedEnv) -> None:
    """Infrastructure, not the agent's doing: never an `isError` result a rollout would
    score (the in-process client drives the same server object)."""

    class Faulty(ticketing.package.Environment):  # type: ignore[name-defined,misc]
        def whoami(self) -> str | None:
            raise RuntimeError("disk on fire")

    package = ModuleType("faulty_ticketing")
    package.Environment = Faulty  # type: ignore[attr-defined]
    backend = LocalBackend(package, list(ticketing.entries))
    episode = backend.create("busy_queue")
    app = mcp_asgi_app(backend, "faulty")

    async def main() -> MCPError:
        async with Client(app.server) as client:
            assert (await client.call_tool("logout", {}, meta=episode_meta(episode))).is_error is False
            return await refusal(client.call_tool("whoami", {}, meta=episode_meta(episode)))

    error = run(main)
    assert error.code == types.INTERNAL_ERROR
    assert error.data == ticketing.package.environment.INTERNAL_ERROR


def test_a_client_vanishing_mid_call_leaves_the_server_healthy(live: Live) -> None:
    episode = live.backend.create("busy_queue")
    tickets = len(live.backend.state(episode)["tickets"])
    live.backend.gated = "create_ticket"

    async def main() -> types.CallToolResult:
        doomed = anyio.CancelScope()

        async def call_and_vanish() -> None:
            with doomed:
                async with Client(live.mcp) as client:
                    await client.call_tool("create_ticket", {"title": "half-open"}, meta=episode_meta(episode))

        async with anyio.create_task_group() as group:
            group.start_soon(call_and_vanish)
            assert await anyio.to_thread.run_sync(live.backend.entered.wait, 10)
            doomed.cancel()  # the client closes its connection while the call runs
        assert not live.backend.finished.is_set(), "the call outlives its client"
        async with Client(live.mcp) as client:  # the server answers others meanwhile
            alive = await client.call_tool("whoami", {}, meta=episode_meta(episode))
        live.backend.release.set()
        assert await anyio.to_thread.run_sync(live.backend.finished.wait, 10)
        return alive

    try:
        alive = run(main)
    finally:
        live.backend.gated = None
        live.backend.release.set()
    assert alive.structured_content == {"result": "alice"}
    assert live.backend.released_in_time, "a held call stalled the server (backend.call ran on its event loop)"
    assert len(live.backend.state(episode)["tickets"]) == tickets + 1, "the call ran once, to its end"

    async def after() -> types.CallToolResult:
        async with Client(live.mcp) as client:
            return await client.call_tool("get_ticket", {"ticket_id": tickets + 1}, meta=episode_meta(episode))

    assert run(after).structured_content["result"]["title"] == "half-open"


def test_an_app_whose_lifespan_never_ran_says_so(live: Live) -> None:
    status, answer = post_raw(f"{live.url}/cold/", tools_call({"title": "x"}, "any"))
    assert status == 503
    assert answer is not None and "lifespan" in answer["error"]["message"]


def test_output_schemas_hold_for_every_generated_package() -> None:
    """A client validates structured content against `outputSchema`: every tool's
    result, from its sample arguments in every scenario, must fit."""
    folders = sorted(package_dirs().values())
    assert len(folders) >= 10
    checked = 0
    for folder in folders:
        served = catalog.load_env(folder)
        tests = generated_tests(folder)
        schemas = {str(entry["name"]): mcp_tool(entry).output_schema for entry in served.entries}
        backend = LocalBackend(served.package, list(served.entries))
        for scenario in tests.SCENARIO_NAMES:
            for tool, arguments in tests.SAMPLE_ARGUMENTS.items():
                value = backend.call(backend.create(scenario), tool, arguments)
                if not (isinstance(value, dict) and set(value) == {"error"}):
                    jsonschema.validate({"result": value}, schemas[tool])
                    checked += 1
    assert checked > 100


# --------------------------------------------------------------------------- envc mcp


def test_envc_mcp_stdio_serves_its_one_episode() -> None:
    server = StdioServerParameters(
        command=ENVC, args=["mcp", str(TICKETING), "--scenario", "busy_queue"], cwd=str(ROOT)
    )

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            seen["hints"] = {tool.name: tool.annotations.read_only_hint for tool in tools if tool.annotations}
            seen["before"] = (await client.call_tool("whoami", {})).structured_content
            seen["logout"] = (await client.call_tool("logout", {})).structured_content
            seen["explicit"] = (await client.call_tool("whoami", {}, meta=episode_meta("default"))).structured_content
            seen["refused"] = (await client.call_tool("get_ticket", {"ticket_id": "x"})).is_error
            seen["other"] = (await refusal(client.call_tool("whoami", {}, meta=episode_meta("another")))).message
        return seen

    seen = run(main)
    assert seen["hints"]["whoami"] is True and seen["hints"]["logout"] is False
    assert seen["before"] == {"result": "alice"}
    assert seen["logout"] == {"result": True}
    assert seen["explicit"] == {"result": None}, "the default episode is the one explicit calls name"
    assert seen["refused"] is True
    assert "unknown episode 'another'" in seen["other"]


def test_envc_mcp_http_needs_the_episode_id_in_every_call() -> None:
    process = subprocess.Popen(
        [ENVC, "mcp", str(TICKETING), "--transport", "http", "--port", "0", "--episode", "e1"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = ANNOUNCED.search(line)
        assert found, line

        async def main() -> tuple[Any, MCPError]:
            async with Client(found.group(1)) as client:
                created = await client.call_tool("create_ticket", {"title": "x"}, meta=episode_meta("e1"))
                return created, await refusal(client.call_tool("whoami", {}))

        created, error = run(main)
        assert created.is_error is True and created.structured_content["error"]["kind"] == "unauthenticated"
        assert "needs the episode id" in error.message
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generated/it_operations/ticketing", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["README.md"], "not a generated package folder nor a .envspec file"),
        (["no/such/folder"], "does not exist"),
        (["generated/it_operations/ticketing", "--episode", ""], "--episode: an episode id is a non-empty string"),
    ],
)
def test_envc_mcp_refuses_bad_input_without_a_traceback(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, ["mcp", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), "no traceback"


def test_envc_mcp_names_a_stale_spec_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec whose package is not compiled is refused with the command that fixes it."""
    spec = tmp_path / "ticketing.envspec"
    spec.write_text((spec_path("ticketing")).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.envc]\noutput = 'out'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["mcp", str(spec)])
    assert result.exit_code == 2, result.output
    assert f"run `envc compile {spec}` first" in result.stderr
