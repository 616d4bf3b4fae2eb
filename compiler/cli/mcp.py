"""`envc mcp PACKAGE_OR_SPEC`: one compiled environment as an MCP server, with one
episode (docs/serving.md#mcp).

stdio (the default) serves the one client that started the process, so a call without
an episode id goes to the process's episode. Over HTTP every call names it, as
`envc serve`'s /mcp requires: several clients may share a server there, and a default
would let them act on one state unawares. Many episodes behind one server: `envc serve`.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import NoReturn

import anyio
import click

from compiler.cli import common
from compiler.project import SPEC_SUFFIX
from compiler.serve import catalog
from compiler.serve.mcp import EPISODE_META_KEY, LocalBackend, mcp_asgi_app, serve_stdio

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


def load_backend(target: Path, scenario: str | None, episode_id: str) -> tuple[LocalBackend, catalog.ServedEnv]:
    """The package's backend holding the one episode, or a clear exit."""
    try:
        env = catalog.load_env(resolve_package(target))
    except catalog.CatalogError as exc:
        fail(str(exc))
    backend = LocalBackend(env.package, list(env.entries))
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


async def serve_http(backend: LocalBackend, env: catalog.ServedEnv, host: str, sock: socket.socket) -> None:
    import uvicorn

    app = mcp_asgi_app(backend, env.name, host=host, title=env.title)
    config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False)
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
def mcp_command(target: Path, transport: str, scenario: str | None, episode_id: str, host: str, port: int) -> None:
    """Serve one compiled environment (a generated package or its spec) as an MCP server."""
    backend, env = load_backend(target, scenario, episode_id)
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
        anyio.run(serve_http, backend, env, host, sock)
    except KeyboardInterrupt:
        pass  # uvicorn stopped on SIGINT and raised it again once it had shut down
