"""The HTTP + WebSocket app of `envc serve`, speaking OpenEnv's wire format.

OpenEnv (openenv-core 0.3.0, openenv/core/env_server/http_server.py) defines the routes a
trainer's client uses: POST /reset and /step (`{"observation", "reward", "done"}`), GET
/state, /health, /schema, /metadata, and the /ws session protocol (`{"type": "reset" |
"step" | "state" | "close", "data"}` answered by `{"type": "observation" | "state" |
"error", "data"}`). Its own server does not fit here: its HTTP /reset and /step each build
and drop a fresh environment (no sessions by id), its sessions live only as long as a
WebSocket, and it has no fork, journal, scoring channel or per-call time limit. So this
app is Starlette with the same wire format, and OpenEnv's `GenericEnvClient` drives it
(tests/serve/).

Channels (docs/serving.md#threat-model): trainer creates, agent plays. The agent's channel
is /reset, /step, /state, /ws and /mcp: it starts an episode only from what the server
offers (a served task id or a scenario), never with a task, a turn or time limit or an
episode id of its own, and names a session only by its handle (the unguessable token
/reset returned, or that the trainer handed out); a WebSocket's own session is reached by
that connection alone. Its observations are tool results; `reward` there is always null.
Creating sessions with tasks and limits, scoring, forks and resets by id are the
trainer's /sessions routes, which `--trainer-token-env` closes to anyone without the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from compiler.serve.catalog import Catalog, CatalogError
from compiler.serve.deadlines import BODY_TIMEOUT, BodyDeadline
from compiler.serve.sessions import (
    TRAINER,
    CapacityFull,
    EpisodeOver,
    Outcome,
    Session,
    SessionError,
    SessionManager,
    Start,
    TrainerOnly,
    UnknownSession,
    unknown_task,
)
from compiler.serve.tokens import bearer_matches
from compiler.synth import export

if TYPE_CHECKING:
    from compiler.serve.mcp import McpAsgiApp

MCP_MODULE = "compiler.serve.mcp"
MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest request body (uvicorn's WebSocket frame limit is the same 16 MiB)."""
TRAINER_FIELDS = {
    "task": "an inline task (its verifier would decide the reward)",
    "max_turns": "a turn limit",
    "episode_id": "an episode id (the agent's channel never restarts, replaces or names another episode)",
}
"""Start fields only the trainer's POST /sessions takes, and why."""
WS_TYPES = frozenset({"reset", "step", "state", "close"})
"""The /ws message types OpenEnv's client sends (its `mcp` type is /mcp here)."""


# =========================================================================== wire models


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetBody(_Strict):
    """POST /reset, POST /sessions and the /ws `reset` data: where the episode starts.
    Unknown fields are refused, so a misspelt `seed` is never silently ignored."""

    episode_id: str | None = Field(
        default=None, max_length=128, description="The trainer's name for it (POST /sessions)"
    )
    handle: str | None = Field(
        default=None, max_length=200, description="Agent: play the episode the trainer started (its handle, alone)"
    )
    seed: int | None = Field(default=None, ge=0, description="Reseeds the environments' random numbers")
    task_id: str | None = Field(default=None, description="A task of a served task set")
    task: dict[str, Any] | None = Field(default=None, description="Trainer: an inline task row (docs/tasks.md)")
    env: str | None = Field(default=None, description="The environment, when several are served and no task is given")
    scenario: str | None = Field(default=None, description="A named scenario of `env` (default: S0)")
    options: dict[str, Any] | None = Field(default=None, description="The spec's load options, by name (with `env`)")
    max_turns: int | None = Field(
        default=None, ge=1, description="Trainer: calls allowed (default: the task's, else 32)"
    )


class ToolCall(_Strict):
    """The action: OpenEnv's `CallToolAction` shape."""

    type: Literal["call_tool"] = "call_tool"
    tool_name: str = Field(min_length=1)
    arguments: Any = Field(
        default_factory=dict,
        description="An object, or JSON text of one; anything else is an invalid call (the episode ends, reward 0)",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class StepBody(_Strict):
    """POST /step: OpenEnv's StepRequest plus the episode it is for."""

    action: dict[str, Any]
    episode_id: str = Field(min_length=1, description="The id /reset returned, or the handle the trainer handed out")
    timeout_s: float | None = Field(default=None, description="Refused (403): time limits are the trainer's")
    request_id: str | None = Field(default=None, max_length=255)


class ForkBody(_Strict):
    episode_id: str | None = Field(default=None, max_length=128)


class SessionResetBody(_Strict):
    seed: int | None = Field(default=None, ge=0)


class Observation(_Strict):
    """The observation of /reset and /step (the `observation` member)."""

    episode_id: str
    prompt: str | None = Field(default=None, description="At reset: the task's prompt")
    tools: list[dict[str, Any]] | None = Field(default=None, description="At reset: the agent's tools (OpenAI schemas)")
    result: Any = Field(default=None, description="After a call: the tool's JSON result or JSON error")
    turns: int = 0
    ended: str | None = Field(default=None, description="invalid_call, turn_limit or infrastructure")
    domain_error: bool = False
    infrastructure_error: str | None = Field(default=None, description="Not the agent's doing: drop, never score as 0")
    seed_effect: dict[str, str] | None = Field(default=None, description="At reset: what the seed did, per environment")


class StateModel(BaseModel):
    """GET /state: OpenEnv's State (`episode_id`, `step_count`) plus the session's info."""

    model_config = ConfigDict(extra="allow")
    episode_id: str | None = None
    step_count: int = 0


def refuse_trainer_fields(body: ResetBody) -> None:
    """The agent's channel starts only from what the server offers: a served task id or a
    scenario (with a seed and load options), or the handle of the trainer's episode, alone."""
    given = [name for name in TRAINER_FIELDS if getattr(body, name) is not None]
    if given:
        reasons = "; ".join(f"`{name}`: {TRAINER_FIELDS[name]}" for name in given)
        raise TrainerOnly(
            f"the agent's channel cannot set {reasons}. Only the trainer (POST /sessions) does; "
            "to play an episode the trainer started, reset with its `handle`",
            fields=given,
        )
    if body.handle is not None and body.model_fields_set - {"handle"}:
        raise SessionError("a `handle` names an episode the trainer started, which brings its own start: send it alone")


def start_of(body: ResetBody, manager: SessionManager) -> Start:
    """A session's start from a reset body (SessionError when it names nothing served)."""
    if body.task is not None and body.task_id is not None:
        raise SessionError("give `task_id` or `task`, not both")
    task: Mapping[str, Any] | None = body.task
    if body.task is not None and (problem := export.task_problem(body.task)):
        raise SessionError(f"`task` is not a task of the format (docs/tasks.md): {problem}")
    if body.task_id is not None:
        try:
            task = manager.catalog.task(body.task_id)
        except CatalogError:
            raise unknown_task(manager.catalog, body.task_id) from None
    if task is not None:
        if body.env is not None or body.scenario is not None or body.options is not None:
            raise SessionError("a task brings its environments and start states: drop `env`, `scenario` and `options`")
        return Start(
            envs=tuple(map(str, task["envs"])),
            task_id=body.task_id,
            task=body.task,
            seed=body.seed,
            max_turns=body.max_turns,
        )
    try:
        env = manager.catalog.env(body.env)
    except CatalogError as exc:
        raise SessionError(str(exc)) from None
    if body.scenario is not None and body.scenario not in env.scenarios:
        raise SessionError(
            f"`{env.name}` has no scenario `{body.scenario}` (it has: {', '.join(env.scenarios) or 'none'})"
        )
    return Start(
        envs=(env.name,), scenario=body.scenario, options=body.options, seed=body.seed, max_turns=body.max_turns
    )


def agent_name(session: Session) -> str:
    """The id the agent's channel shows for a session: its handle, or (a WebSocket's own
    session, which has none) its episode id, which only the trainer's routes take."""
    return session.handle or session.episode_id


_OBSERVATION: dict[str, Any] = {name: field.default for name, field in Observation.model_fields.items()}
"""Observation's fields in its order, with their defaults: a reply is built from it as a
plain dict, not through the model (whose validation copies the tools at every reset)."""
_RESULT_MARK = "\x00result\x00"
"""What a reply's result holds until the package's text of it is spliced in (no other
member of a reply can hold it: the ids are the server's, the rest is not text)."""


def observation(**fields: Any) -> dict[str, Any]:
    """An Observation as its JSON (what `Observation(**fields).model_dump()` gives)."""
    return {**_OBSERVATION, **fields}


def reply_text(payload: Any) -> str:
    """A reply's JSON text, compact (every step sends one)."""
    return json.dumps(payload, separators=(",", ":"))


def reset_payload(session: Session, name: str) -> dict[str, Any]:
    """The reset observation; `name` is the id shown (the agent's, or the trainer's)."""
    shown = observation(
        episode_id=name,
        prompt=session.observation()["prompt"],
        tools=session.tools,
        turns=session.turns,
        ended=session.ended,
        seed_effect=session.seed_effect,
    )
    done = session.ended is not None or session.broken is not None
    return {"observation": shown, "reward": None, "done": done}


def step_payload(session: Session, outcome: Outcome, result: Any = None) -> dict[str, Any]:
    """The step observation (`result`: what stands for the call's result, by default itself)."""
    shown = observation(
        episode_id=agent_name(session),
        result=outcome.result if result is None else result,
        turns=outcome.turns,
        ended=outcome.ended,
        domain_error=outcome.domain_error,
        infrastructure_error=outcome.infrastructure_error,
    )
    return {"observation": shown, "reward": None, "done": outcome.done}


def step_text(session: Session, outcome: Outcome, message: str | None = None) -> str:
    """`step_payload` as JSON text (as the `data` of a /ws message of type `message`),
    with the result spliced in as the package wrote it (`Outcome.text`): encoded once."""
    payload = step_payload(session, outcome, None if outcome.text is None else _RESULT_MARK)
    text = reply_text(payload if message is None else {"type": message, "data": payload})
    if outcome.text is None:
        return text
    return text.replace(json.dumps(_RESULT_MARK), outcome.text, 1)


def state_payload(session: Session) -> dict[str, Any]:
    """OpenEnv's State for the agent's channel: where the episode stands, not the
    environments' states (those are the trainer's: GET /sessions/{id}), so an agent that
    can reach the server learns nothing its tools would not tell it."""
    info = {**session.info(), "episode_id": agent_name(session)}
    return StateModel(step_count=info["turns"], **info).model_dump()


def parse_action(action: Mapping[str, Any]) -> ToolCall:
    return ToolCall.model_validate(action)


# =========================================================================== errors


def error_response(status: int, kind: str, message: str, **details: Any) -> JSONResponse:
    return JSONResponse({"error": {"kind": kind, "message": message, **details}}, status_code=status)


def session_error(exc: SessionError) -> JSONResponse:
    headers = {"Retry-After": "1"} if isinstance(exc, CapacityFull) else None
    return JSONResponse(exc.to_json(), status_code=exc.status, headers=headers)


def validation_error(exc: ValidationError) -> JSONResponse:
    errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
    return error_response(422, "invalid_request", "the request does not fit its schema (see `errors`)", errors=errors)


async def read_json(request: Request) -> Any:
    """The body as JSON; an empty body is `{}`. (BodyDeadline has read it already, at
    most MAX_BODY_BYTES within the body deadline.)"""
    body = await request.body()
    if not body.strip():
        return {}
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _BadRequest(f"the body is not JSON: {exc}") from None


class _BadRequest(Exception):
    pass


Handler = Callable[[Request], Awaitable[Response]]


def guarded(handler: Handler) -> Handler:
    """Every failure of a request as a JSON error with its status; never a traceback."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except _BadRequest as exc:
            return error_response(400, "malformed_request", str(exc))
        except ValidationError as exc:
            return validation_error(exc)
        except SessionError as exc:
            return session_error(exc)

    return run


# =========================================================================== the app


@dataclass
class _Connection:
    """The session one /ws connection plays, and whether it opened it (then it is closed
    with the connection) or reached the trainer's by its handle (then it is left open)."""

    episode_id: str | None = None
    owns: bool = False


class ServeApp:
    """Routes over one SessionManager."""

    def __init__(self, manager: SessionManager, trainer_token: str | None = None) -> None:
        self.manager = manager
        self.trainer_token = trainer_token

    # ------------------------------------------------------------------ OpenEnv routes

    async def health(self, request: Request) -> Response:
        limits = self.manager.limits
        return JSONResponse(
            {
                "status": "healthy",
                "active_sessions": self.manager.count(),
                "trainer_sessions": self.manager.count(TRAINER),
                "max_sessions": limits.max_sessions,
                "agent_sessions": self.manager.count("agent"),
                "max_agent_sessions": limits.max_agent_sessions,
                "recovery": self.manager.recovery,
                "quarantined": self.manager.quarantined,
            }
        )

    async def metadata(self, request: Request) -> Response:
        catalog = self.manager.catalog
        titles = "; ".join(f"{env.name}: {env.title}" for env in catalog.envs.values())
        return JSONResponse(
            {
                "name": catalog.name,
                "description": f"envc environments ({titles}); {len(catalog.tasks)} tasks",
                "readme_content": _readme(catalog),
                "version": None,
                "author": None,
                "documentation_url": None,
            }
        )

    async def schema(self, request: Request) -> Response:
        action = ToolCall.model_json_schema()
        names = sorted({entry["name"] for entry in self.manager.tool_entries()})
        action["properties"]["tool_name"]["examples"] = names
        return JSONResponse(
            {"action": action, "observation": Observation.model_json_schema(), "state": StateModel.model_json_schema()}
        )

    async def reset(self, request: Request) -> Response:
        """The agent's reset: a new session from what the server offers (its id is its
        handle), or the trainer's episode named by `handle` as it stands (nothing changes)."""
        body = ResetBody.model_validate(await read_json(request))
        refuse_trainer_fields(body)
        if body.handle is not None:
            session = self.manager.by_handle(body.handle)
        else:
            session = await asyncio.to_thread(self.manager.create, start_of(body, self.manager), None, "http")
        return JSONResponse(reset_payload(session, agent_name(session)))

    async def step(self, request: Request) -> Response:
        body = StepBody.model_validate(await read_json(request))
        if body.timeout_s is not None:
            raise TrainerOnly("`timeout_s` is the trainer's: a call's time limit is the server's --call-timeout")
        action = parse_action(body.action)
        session = self.manager.by_handle(body.episode_id)
        outcome = await self.manager.acall(session.episode_id, action.tool_name, action.arguments)
        return Response(step_text(session, outcome), media_type="application/json")

    async def state(self, request: Request) -> Response:
        handle = request.query_params.get("episode_id")
        if not handle:
            return error_response(400, "malformed_request", "GET /state needs ?episode_id=<the id /reset returned>")
        session = self.manager.by_handle(handle)
        return JSONResponse(await asyncio.to_thread(state_payload, session))

    # ------------------------------------------------------------------ the trainer's routes

    def _trainer(self, request: Request) -> None:
        if self.trainer_token is None:
            return
        if not bearer_matches(request.headers.get("authorization"), self.trainer_token):
            raise _Forbidden()

    async def sessions_create(self, request: Request) -> Response:
        """A session of the trainer's (its pool, its task and limits); the `handle` in the
        answer is what the trainer hands the agent to play it."""
        self._trainer(request)
        body = ResetBody.model_validate(await read_json(request))
        if body.handle is not None:
            raise SessionError("`handle` is minted by the server: leave it out")
        start = start_of(body, self.manager)
        session = await asyncio.to_thread(self.manager.create, start, body.episode_id, TRAINER)
        payload = reset_payload(session, session.episode_id)
        return JSONResponse({**payload, "handle": session.handle, "info": session.info()}, status_code=201)

    async def sessions_list(self, request: Request) -> Response:
        self._trainer(request)
        return JSONResponse({"sessions": self.manager.infos(), "max_sessions": self.manager.limits.max_sessions})

    async def session_show(self, request: Request) -> Response:
        self._trainer(request)
        return JSONResponse(await asyncio.to_thread(self.manager.state, request.path_params["episode_id"]))

    async def session_fork(self, request: Request) -> Response:
        self._trainer(request)
        body = ForkBody.model_validate(await read_json(request))
        copy = await asyncio.to_thread(self.manager.fork, request.path_params["episode_id"], body.episode_id)
        return JSONResponse(
            {"episode_id": copy.episode_id, "handle": copy.handle, "info": copy.info()}, status_code=201
        )

    async def session_reset(self, request: Request) -> Response:
        self._trainer(request)
        body = SessionResetBody.model_validate(await read_json(request))
        session = await asyncio.to_thread(self.manager.reset, request.path_params["episode_id"], body.seed)
        return JSONResponse({**reset_payload(session, session.episode_id), "info": session.info()})

    async def session_score(self, request: Request) -> Response:
        self._trainer(request)
        return JSONResponse(await asyncio.to_thread(self.manager.score, request.path_params["episode_id"]))

    async def session_close(self, request: Request) -> Response:
        self._trainer(request)
        episode_id = request.path_params["episode_id"]
        await asyncio.to_thread(self.manager.close, episode_id)
        return JSONResponse({"closed": episode_id})

    # ------------------------------------------------------------------ /ws

    async def websocket(self, websocket: WebSocket) -> None:
        """OpenEnv's session protocol. A connection plays one session at a time: one its
        `reset` opened (closed when the client sends `close`, disconnects, whether by a
        close frame, a dropped TCP connection or no pong to the server's pings, or stays
        idle past the idle timeout), or the trainer's, reached by its handle (left open)."""
        await websocket.accept()
        connection = _Connection()
        try:
            while True:
                try:
                    raw = await websocket.receive_text()
                except KeyError:  # a binary frame
                    await _ws_error(websocket, "INVALID_JSON", "send text frames of JSON")
                    continue
                reply = await self._ws_message(raw, connection)
                if reply is None:
                    break
                await websocket.send_text(reply if isinstance(reply, str) else reply_text(reply))
        except WebSocketDisconnect:
            pass
        finally:
            self._let_go(connection)
            with contextlib.suppress(RuntimeError):
                await websocket.close()

    async def _ws_message(self, raw: str, connection: _Connection) -> dict[str, Any] | str | None:
        """The reply to one message (as JSON, or already its text), or None to close."""
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            return _ws_reply_error("INVALID_JSON", f"Invalid JSON: {exc}")
        if not isinstance(message, dict):
            return _ws_reply_error("INVALID_JSON", "a message is a JSON object with a `type`")
        kind, data = message.get("type"), message.get("data", {})
        if kind not in WS_TYPES:
            return _ws_reply_error("UNKNOWN_TYPE", f"Unknown message type: {kind}")
        try:
            if kind == "close":
                return None
            if kind == "reset":
                session = await self._ws_reset(ResetBody.model_validate(data), connection)
                return {"type": "observation", "data": reset_payload(session, agent_name(session))}
            if connection.episode_id is None:
                raise SessionError("send `reset` first: it starts this connection's session")
            if kind == "step":
                action = parse_action(data if isinstance(data, dict) else {})
                outcome = await self.manager.acall(connection.episode_id, action.tool_name, action.arguments)
                return step_text(self.manager.get(connection.episode_id), outcome, "observation")
            session = self.manager.get(connection.episode_id)
            return {"type": "state", "data": await asyncio.to_thread(state_payload, session)}
        except ValidationError as exc:
            errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
            return _ws_reply_error("VALIDATION_ERROR", "Invalid message", errors=errors)
        except CapacityFull as exc:
            return _ws_reply_error("CAPACITY_REACHED", str(exc), **exc.details)
        except EpisodeOver as exc:
            return _ws_reply_error("EXECUTION_ERROR", str(exc), kind=exc.kind, **exc.details)
        except SessionError as exc:
            return _ws_reply_error("SESSION_ERROR", str(exc), kind=exc.kind, **exc.details)

    async def _ws_reset(self, body: ResetBody, connection: _Connection) -> Session:
        """A reset over /ws: the trainer's episode by its handle (as it stands), or a new
        session of the connection's own. The session the connection played before is let
        go first (closed if it was its own): a reset never restarts an episode."""
        refuse_trainer_fields(body)
        if body.handle is not None:
            session = self.manager.by_handle(body.handle)
            if session.episode_id != connection.episode_id:
                self._let_go(connection)
            connection.episode_id = session.episode_id
            return session
        start = start_of(body, self.manager)  # a start that does not fit keeps the current session
        self._let_go(connection)
        session = await asyncio.to_thread(self.manager.create, start, None, "ws")
        connection.episode_id, connection.owns = session.episode_id, True
        return session

    def _let_go(self, connection: _Connection) -> None:
        """The connection plays nothing now; its own session is closed."""
        if connection.owns and connection.episode_id is not None:
            with contextlib.suppress(UnknownSession):
                self.manager.close(connection.episode_id)
        connection.episode_id, connection.owns = None, False

    # ------------------------------------------------------------------ assembly

    def routes(self) -> list[BaseRoute]:
        trainer = [
            Route("/sessions", guarded(self.sessions_create), methods=["POST"]),
            Route("/sessions", guarded(self.sessions_list), methods=["GET"]),
            Route("/sessions/{episode_id}", guarded(self.session_show), methods=["GET"]),
            Route("/sessions/{episode_id}", guarded(self.session_close), methods=["DELETE"]),
            Route("/sessions/{episode_id}/fork", guarded(self.session_fork), methods=["POST"]),
            Route("/sessions/{episode_id}/reset", guarded(self.session_reset), methods=["POST"]),
            Route("/sessions/{episode_id}/score", guarded(self.session_score), methods=["POST"]),
        ]
        return [
            Route("/health", guarded(self.health), methods=["GET"]),
            Route("/metadata", guarded(self.metadata), methods=["GET"]),
            Route("/schema", guarded(self.schema), methods=["GET"]),
            Route("/reset", guarded(self.reset), methods=["POST"]),
            Route("/step", guarded(self.step), methods=["POST"]),
            Route("/state", guarded(self.state), methods=["GET"]),
            WebSocketRoute("/ws", self.websocket),
            *trainer,
        ]


def _readme(catalog: Catalog) -> str | None:
    """The package's README.md when one environment is served (OpenEnv shows it)."""
    if len(catalog.envs) != 1:
        return None
    try:
        return (next(iter(catalog.envs.values())).folder / "README.md").read_text(encoding="utf-8")
    except OSError:
        return None


class _Forbidden(Exception):
    pass


def _ws_reply_error(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **details}}


async def _ws_error(websocket: WebSocket, code: str, message: str) -> None:
    await websocket.send_text(reply_text(_ws_reply_error(code, message)))


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        return error_response(exc.status_code, "http", str(exc.detail))
    if isinstance(exc, _Forbidden):
        return error_response(403, "forbidden", "the trainer's routes need `Authorization: Bearer <token>`")
    return error_response(500, "internal", "the server failed on this request")


# =========================================================================== MCP and the app


class McpBackend:
    """compiler.serve.mcp's EpisodeBackend over the session manager: MCP tools/call is
    the agent's channel like /step, naming its session by handle in `_meta`. `call` runs on the MCP
    module's worker thread and waits for the session's call at most `call_timeout`."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    def tool_entries(self) -> list[dict[str, Any]]:
        return self.manager.tool_entries()

    def call(self, episode_id: str, tool: str, arguments: dict[str, Any]) -> Any:
        from compiler.serve import mcp

        try:  # the id in `_meta` is a handle, as on /step: a WebSocket's own session has none
            outcome = self.manager.call(self.manager.by_handle(episode_id).episode_id, tool, arguments)
        except UnknownSession:
            raise mcp.UnknownEpisode(episode_id) from None
        except EpisodeOver as exc:
            broken = exc.details.get("infrastructure_error")
            return infrastructure(broken) if broken is not None else exc.to_json()
        if outcome.infrastructure_error is not None:
            return infrastructure(outcome.infrastructure_error)
        return outcome.result


def infrastructure(reason: str) -> dict[str, Any]:
    """A failure of the serving, in the error kind compiler.serve.mcp reports as a
    JSON-RPC internal error (never an `isError` result a rollout could score as 0)."""
    return {"error": {"kind": "infrastructure", "message": reason}}


def mcp_available() -> bool:
    """Whether /mcp can be mounted: compiler/serve/mcp.py and the `mcp` SDK it imports."""
    return all(importlib.util.find_spec(name) is not None for name in (MCP_MODULE, "mcp"))


def mcp_app(manager: SessionManager, host: str) -> McpAsgiApp:
    """compiler.serve.mcp's ASGI app over this server's sessions, for /mcp."""
    from compiler.serve import mcp

    return mcp.mcp_asgi_app(McpBackend(manager), manager.catalog.name, host=host)


def build_app(
    manager: SessionManager,
    *,
    mount_mcp: bool,
    host: str = "127.0.0.1",
    trainer_token: str | None = None,
    reap_every: float = 1.0,
    body_timeout: float | None = BODY_TIMEOUT,
) -> Starlette:
    """The server's ASGI app; with `mount_mcp`, compiler.serve.mcp at /mcp (`host`: the
    interface served, for MCP's DNS-rebinding protection). Every request's body is read
    first, at most MAX_BODY_BYTES within `body_timeout` seconds (compiler/serve/deadlines.py)."""
    serve = ServeApp(manager, trainer_token)
    routes = serve.routes()
    mounted = mcp_app(manager, host) if mount_mcp else None
    if mounted is not None:
        routes.append(Mount("/mcp", app=mounted))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        reaper = asyncio.create_task(_reap_forever(manager, reap_every))
        async with contextlib.AsyncExitStack() as stack:
            if mounted is not None:  # Starlette runs no mounted app's lifespan: MCP's request manager
                await stack.enter_async_context(mounted.lifespan())
            try:
                yield
            finally:
                reaper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reaper

    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(BodyDeadline, seconds=body_timeout, max_bytes=MAX_BODY_BYTES)],
        exception_handlers={HTTPException: _http_error, _Forbidden: _http_error, Exception: _http_error},
    )


async def _reap_forever(manager: SessionManager, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        await asyncio.to_thread(manager.reap)
