"""Compiled environments as MCP servers, through the official `mcp` SDK (docs/serving.md#mcp).

One MCP tool per tools.json entry: its `parameters` are the input schema, read tools
(`modifies_state` false) carry `readOnlyHint` and `idempotentHint`, write tools
`destructiveHint`; a result is structured content `{"result": ...}` (its JSON also as a
text block), a domain error the package's `{"error": {...}}` in an `isError` result, an
infrastructure failure a JSON-RPC error (never a result a rollout could score).

The episode travels in every `tools/call` as `params._meta["envc/episode"]`. The
2026-07-28 revision has no session to hold it, and an argument would put it where the
model writes: the agent could name another rollout's episode, and the schemas would no
longer be the tools.json ones the model is trained on. `_meta` is the protocol's place
for what the client (the harness) attaches and the model never sees. Episodes are made
by the trainer's channel (`LocalBackend.create`, or `envc serve`'s session routes);
nothing here creates, scores or closes one.

Who decides what:
- `EpisodeBackend`: the episodes. `LocalBackend` holds them in memory (`envc mcp`,
  tests); `envc serve`'s session manager is the other one.
- `mcp_server`: the lowlevel `mcp.server.Server` over a backend.
- `mcp_asgi_app`: streamable HTTP, stateless (no MCP session, no `Mcp-Session-Id`);
  mounted at `/mcp` by `envc serve`, served alone by `envc mcp --transport http`.
- `serve_stdio`: one client on stdin/stdout (`envc mcp`), where a call without the
  `_meta` key goes to the process's one episode.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Final, Protocol, TypeGuard, cast

import anyio
import mcp.types as types
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.serve.call_clock import expiry

EPISODE_META_KEY: Final = "envc/episode"
"""Where a `tools/call` names its episode: a key of `params._meta`. The project owns no
domain, so the prefix is its name (a valid `_meta` prefix outside MCP's reserved space)."""

MAX_EPISODE_ID_LENGTH: Final = 200
EPISODE_ID_RULE: Final = f"a non-empty string of at most {MAX_EPISODE_ID_LENGTH} characters"

TOOL_LIST_TTL_MS: Final = 3_600_000
"""The tool list never changes while a server runs: clients may cache it for an hour."""

LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")

INFRASTRUCTURE_ERROR_KINDS: Final = frozenset({"internal", "infrastructure"})
"""Error kinds that are no answer of the environment: the package's own internal error
(`INTERNAL_ERROR` in environment.py) and a serving failure (`envc serve`'s timeouts,
crashed sessions). They become protocol errors, never results an agent is scored on."""


class UnknownEpisode(LookupError):
    """A call named an episode the backend does not hold (never created, closed, expired)."""

    def __init__(self, episode_id: str) -> None:
        super().__init__(f"unknown episode {episode_id!r}: never created, closed or expired")
        self.episode_id = episode_id


class EpisodeBackend(Protocol):
    """The episodes an MCP server calls tools in.

    `call` runs in a worker thread (so a slow backend, a journal's fsync, never stalls
    the event loop): it must be thread-safe, also for two calls on one episode."""

    def tool_entries(self) -> list[dict[str, Any]]:
        """tools.json entries of the served environment(s)."""
        ...

    def call(self, episode_id: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's JSON result or the package's JSON error `{"error": {...}}` (kind
        "infrastructure" for a failure of the serving, not of the agent); raises
        `UnknownEpisode` for an episode it does not hold."""
        ...


# --------------------------------------------------------------------------- in-process backend


@dataclass
class _Episode:
    env: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


class LocalBackend:
    """Episodes of one generated package, in memory: `create` and `close` are the
    trainer's channel, `call` the agent's. A call still running `call_timeout_s` seconds
    on is stopped by the package (the domain error `timeout`, nothing changed), as in
    `envc serve`; None: no limit."""

    def __init__(
        self, package: ModuleType, tools: list[dict[str, Any]], call_timeout_s: float | None = CALL_TIMEOUT_S
    ) -> None:
        self.package = package
        self.call_timeout_s = call_timeout_s
        self._tools = [dict(entry) for entry in tools]
        self._episodes: dict[str, _Episode] = {}
        self._lock = threading.Lock()

    def create(self, scenario: str | None = None, episode_id: str | None = None) -> str:
        """A new episode from a named scenario (None: S0); its id (a fresh one unless given).

        Raises the package's ScenarioError (a ValueError) for an unknown scenario and
        ValueError for an id already in use or not fit for `_meta`."""
        new_id = uuid.uuid4().hex if episode_id is None else episode_id
        if not is_episode_id(new_id):
            raise ValueError(f"an episode id is {EPISODE_ID_RULE}")
        env = self.package.Environment(scenario)
        with self._lock:
            if new_id in self._episodes:
                raise ValueError(f"episode {new_id!r} already exists")
            self._episodes[new_id] = _Episode(env)
        return new_id

    def close(self, episode_id: str) -> None:
        with self._lock:
            if self._episodes.pop(episode_id, None) is None:
                raise UnknownEpisode(episode_id)

    def state(self, episode_id: str) -> dict[str, Any]:
        """A detached JSON snapshot of the episode's state (trainer's channel only)."""
        episode = self._episode(episode_id)
        with episode.lock:
            state: dict[str, Any] = episode.env.state()
            return state

    def tool_entries(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self._tools]

    def call(self, episode_id: str, tool: str, arguments: dict[str, Any]) -> Any:
        episode = self._episode(episode_id)
        with episode.lock:
            return episode.env.call(tool, arguments, expiry(self.call_timeout_s))

    def _episode(self, episode_id: str) -> _Episode:
        with self._lock:
            episode = self._episodes.get(episode_id)
        if episode is None:
            raise UnknownEpisode(episode_id)
        return episode


# --------------------------------------------------------------------------- tools and results


def tool_title(name: str) -> str:
    """tools.json has no per-tool title: `create_ticket` reads as "Create ticket"."""
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def mcp_tool(entry: Mapping[str, Any]) -> types.Tool:
    """The MCP tool of one tools.json entry: schemas, hints, title and description."""
    name = str(entry["name"])
    writes = bool(entry["modifies_state"])
    title = tool_title(name)
    return types.Tool(
        name=name,
        title=title,
        description=str(entry.get("description") or title),
        input_schema=dict(entry["parameters"]),
        output_schema={
            "type": "object",
            "properties": {"result": entry["returns"]},
            "required": ["result"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            title=title,
            read_only_hint=not writes,
            destructive_hint=writes,
            idempotent_hint=not writes,
            open_world_hint=False,
        ),
    )


def domain_error(value: Any) -> dict[str, Any] | None:
    """The error object of a package's JSON error `{"error": {...}}`, else None (the
    same test as the generated episode.py)."""
    if isinstance(value, dict) and set(value) == {"error"} and isinstance(value["error"], dict):
        error: dict[str, Any] = value["error"]
        return error
    return None


def tool_result(value: Any) -> types.CallToolResult:
    """A backend's answer as an MCP result: `{"result": ...}`, or the domain error as an
    `isError` result; an infrastructure failure (`INFRASTRUCTURE_ERROR_KINDS`) is a
    protocol error (INTERNAL_ERROR), never a result an agent could be scored on."""
    error = domain_error(value)
    if error is not None and error.get("kind") in INFRASTRUCTURE_ERROR_KINDS:
        raise MCPError(types.INTERNAL_ERROR, str(error.get("message", "internal error")), data=value)
    structured = value if error is not None else {"result": value}
    text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured, is_error=error is not None
    )


def episode_meta(episode_id: str) -> types.RequestParamsMeta:
    """The `_meta` a client sends with a `tools/call` in this episode:
    `client.call_tool(name, arguments, meta=episode_meta(episode_id))`."""
    return cast(types.RequestParamsMeta, {EPISODE_META_KEY: episode_id})


def episode_of(meta: Mapping[str, Any] | None, default: str | None) -> str:
    """The episode a call names in `_meta`, else `default`; a clear protocol error when
    there is neither or the id is not a non-empty string."""
    value = (meta or {}).get(EPISODE_META_KEY, default)
    if value is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f'tools/call needs the episode id in params._meta["{EPISODE_META_KEY}"] (this server has no default episode)',
            data={"meta_key": EPISODE_META_KEY},
        )
    if not is_episode_id(value):
        raise MCPError(
            types.INVALID_PARAMS,
            f'params._meta["{EPISODE_META_KEY}"] must be {EPISODE_ID_RULE}',
            data={"meta_key": EPISODE_META_KEY},
        )
    return value


def is_episode_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= MAX_EPISODE_ID_LENGTH


# --------------------------------------------------------------------------- the server


def mcp_server(
    backend: EpisodeBackend, name: str, *, default_episode: str | None = None, title: str | None = None
) -> Server[Any]:
    """The lowlevel MCP server of a backend: `tools/list` and `tools/call`, nothing else
    (no scoring, no episode creation: those are the trainer's)."""
    tools = {tool.name: tool for tool in map(mcp_tool, backend.tool_entries())}
    listing = types.ListToolsResult(tools=list(tools.values()))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in tools:
            raise MCPError(
                types.INVALID_PARAMS,
                f"there is no tool `{params.name}`; the tools are {', '.join(sorted(tools))}",
                data={"allowed": sorted(tools)},
            )
        episode = episode_of(params.meta, default_episode)
        arguments = params.arguments if params.arguments is not None else {}
        try:
            value = await anyio.to_thread.run_sync(backend.call, episode, params.name, arguments)
        except UnknownEpisode as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc), data={"episode": exc.episode_id}) from None
        return tool_result(value)

    def input_schema(tool: str) -> Mapping[str, Any] | None:
        found = tools.get(tool)
        return found.input_schema if found is not None else None

    return Server(
        name,
        title=title,
        instructions=f'Every tools/call names its episode in params._meta["{EPISODE_META_KEY}"].',
        cache_hints={"tools/list": CacheHint(ttl_ms=TOOL_LIST_TTL_MS, scope="public")},
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class McpAsgiApp:
    """Streamable HTTP at any path it is given (mount it, or serve it alone): stateless,
    JSON responses, both protocol eras (2026-07-28 per-request envelope and the
    handshake era without `Mcp-Session-Id`).

    Served alone (uvicorn), it runs its own lifespan. Mounted, the parent app must enter
    `lifespan()` in its own lifespan (Starlette does not run a mounted app's); until
    then a request gets a clear 503 rather than a traceback."""

    def __init__(self, server: Server[Any], security: TransportSecuritySettings) -> None:
        self.server = server
        self._manager = StreamableHTTPSessionManager(
            app=server, stateless=True, json_response=True, security_settings=security
        )
        self._running = False

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the SDK's request manager (once per app)."""
        async with self._manager.run():
            self._running = True
            try:
                yield
            finally:
                self._running = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
        elif not self._running:
            await _not_started(scope, receive, send)
        else:
            await self._manager.handle_request(scope, receive, send)

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol, for a server (uvicorn) running this app alone."""
        await receive()  # lifespan.startup
        phase = "startup"
        try:
            async with self.lifespan():
                await send({"type": "lifespan.startup.complete"})
                phase = "shutdown"
                await receive()  # lifespan.shutdown
        except Exception as exc:
            await send({"type": f"lifespan.{phase}.failed", "message": f"{type(exc).__name__}: {exc}"})
            return
        await send({"type": "lifespan.shutdown.complete"})


async def _not_started(scope: Scope, receive: Receive, send: Send) -> None:
    error = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": types.INTERNAL_ERROR,
            "message": "the MCP app is not running: a parent app must enter McpAsgiApp.lifespan() in its lifespan",
        },
    }
    await JSONResponse(error, status_code=503)(scope, receive, send)


def transport_security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback server, as the SDK sets it up; a server
    on another interface accepts the Host its clients use."""
    if host in LOOPBACK_HOSTS:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def mcp_asgi_app(
    backend: EpisodeBackend, name: str, *, host: str = "127.0.0.1", title: str | None = None
) -> McpAsgiApp:
    """The MCP streamable-HTTP app of a backend, serving at its root path; every call
    names its episode explicitly. `host`: the interface the server listens on."""
    return McpAsgiApp(mcp_server(backend, name, title=title), transport_security(host))


async def serve_stdio(backend: EpisodeBackend, name: str, *, default_episode: str, title: str | None = None) -> None:
    """Serve one client on stdin/stdout until it closes them. The process is the
    client's alone, so a call without the `_meta` episode key goes to `default_episode`
    (a call naming an episode is still honoured, and must name one the backend holds)."""
    server = mcp_server(backend, name, default_episode=default_episode, title=title)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
