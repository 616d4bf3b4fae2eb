"""`envc mcp PACKAGE_OR_SPEC`: one compiled environment as an MCP server, with one
episode (docs/serving.md#mcp).

stdio (the default) serves the one client that started the process, so a call without
an episode id goes to the process's episode. Over HTTP every call names it, as
`envc serve`'s /mcp requires: several clients may share a server there, and a default
would let them act on one state unawares. Many episodes behind one server: `envc serve`.

Over HTTP the trust rules are `envc serve`'s (docs/serving.md#threat-model): a bearer
token (`--token-env`) on every request, required off loopback; header and body read
deadlines; the body limit; and, as everywhere, the package refuses arguments past the
agent limits and stops a call at `--call-timeout`.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import anyio
import click
from starlette.types import ASGIApp

from compiler.cli import common
from compiler.cli.serving_options import no_limit, read_deadline_options
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.project import SPEC_SUFFIX
from compiler.serve import catalog
from compiler.serve.deadlines import BodyDeadline, server_config
from compiler.serve.http import MAX_BODY_BYTES
from compiler.serve.mcp import EPISODE_META_KEY, LocalBackend, mcp_asgi_app, serve_stdio
from compiler.serve.tokens import BearerToken, is_loopback, token_from

DEFAULT_EPISODE = "default"


def fail(message: str) -> NoReturn:
    """A usage or input error: one line, exit 2, no traceback."""
    common.fail("mcp", message)


def resolve_package(target: Path) -> Path:
    """A generated package folder as given, or the up-to-date package of a spec."""
    if not target.exists():
        fail(f"{target} does not exist")
    if not (target.is_dir() or target.suffix == SPEC_SUFFIX):
        fail(f"{target}: not a generated package folder nor a {SPEC_SUFFIX} file")
    try:
        return catalog.package_of(target)
    except catalog.CatalogError as exc:
        fail(str(exc))


def load_backend(
    target: Path, scenario: str | None, episode_id: str, call_timeout_s: float | None = CALL_TIMEOUT_S
) -> tuple[LocalBackend, catalog.ServedEnv]:
    """The package's backend holding the one episode, or a clear exit."""
    try:
        env = catalog.load_env(resolve_package(target))
    except catalog.CatalogError as exc:
        fail(str(exc))
    backend = LocalBackend(env.package, list(env.entries), call_timeout_s)
    try:
        backend.create(scenario, episode_id)
    except ValueError as exc:  # the package's ScenarioError, or an id unfit for _meta
        option = "--scenario" if scenario is not None and scenario not in env.scenarios else "--episode"
        fail(f"{option}: {exc}")
    return backend, env


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket (port 0: a free one), or a clear exit.

    TCP_NODELAY is set here because asyncio sets it only on sockets whose `proto` is
    IPPROTO_TCP, and `socket.create_server` leaves it 0: without it every response
    written in two parts waits for the client's delayed ACK, about 40 ms a call.
    Accepted connections inherit the option."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


@dataclass(frozen=True)
class HttpGuards:
    """What an HTTP request must pass before MCP reads it: the token (None: none asked
    for, loopback only), and the header and body read deadlines (None: none)."""

    token: str | None
    header_timeout: float | None
    body_timeout: float | None


async def serve_http(
    backend: LocalBackend, env: catalog.ServedEnv, host: str, sock: socket.socket, guards: HttpGuards
) -> None:
    import uvicorn

    app: ASGIApp = mcp_asgi_app(backend, env.name, host=host, title=env.title)
    app = BodyDeadline(app, guards.body_timeout, MAX_BODY_BYTES)
    if guards.token is not None:  # outermost: a request without it is not even read
        app = BearerToken(app, guards.token)
    config = server_config(
        app, header_timeout=guards.header_timeout, lifespan="on", log_level="warning", access_log=False
    )
    await uvicorn.Server(config).serve(sockets=[sock])


@click.command("mcp")
@click.argument("target", metavar="PACKAGE_OR_SPEC", type=click.Path(path_type=Path))
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True, help="How clients connect."
)
@click.option("--scenario", default=None, help="The episode's starting scenario (default: the initial state S0).")
@click.option(
    "--episode",
    "episode_id",
    default=DEFAULT_EPISODE,
    show_default=True,
    help=f'The episode\'s id, for params._meta["{EPISODE_META_KEY}"]; stdio calls may leave it out.',
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: the interface to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="HTTP: the port (0: a free one)."
)
@click.option(
    "--token-env",
    metavar="VAR",
    default=None,
    help="HTTP: require `Authorization: Bearer $VAR` on every request (needed off loopback).",
)
@read_deadline_options("HTTP: ")
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0),
    default=CALL_TIMEOUT_S,
    show_default=True,
    help="Seconds a tool call may run; past it the environment stops it, the domain error `timeout` (0: no limit).",
)
def mcp_command(
    target: Path,
    transport: str,
    scenario: str | None,
    episode_id: str,
    host: str,
    port: int,
    token_env: str | None,
    header_timeout: float,
    body_timeout: float,
    call_timeout: float,
) -> None:
    """Serve one compiled environment (a generated package or its spec) as an MCP server."""
    try:
        token = token_from(token_env)
    except ValueError as exc:
        fail(f"--token-env: {exc}")
    if transport == "http" and token is None and not is_loopback(host):
        fail(f"--host {host} is reachable from other machines: give --token-env VAR to guard the server")
    backend, env = load_backend(target, scenario, episode_id, no_limit(call_timeout))
    start = scenario or "S0"
    if transport == "stdio":
        click.echo(f"envc mcp: {env.name} on stdio, episode {episode_id!r} from {start}", err=True)
        try:
            anyio.run(lambda: serve_stdio(backend, env.name, default_episode=episode_id, title=env.title))
        except KeyboardInterrupt:
            pass  # the client's way of ending a stdio server, like closing stdin
        return
    sock = listen(host, port)
    bound = sock.getsockname()
    url_host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    click.echo(
        f"envc mcp: {env.name} at http://{url_host}:{bound[1]}/ (MCP streamable HTTP), episode {episode_id!r} from {start}",
        err=True,
    )
    try:
        guards = HttpGuards(token, no_limit(header_timeout), no_limit(body_timeout))
        anyio.run(serve_http, backend, env, host, sock, guards)
    except KeyboardInterrupt:
        pass  # uvicorn stopped on SIGINT and raised it again once it had shut down
