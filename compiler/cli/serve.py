"""`envc serve PATHS...`: serve generated packages and task sets over HTTP + WebSocket
(OpenEnv's wire format) until interrupted. docs/serving.md#envc-serve-an-openenv-compatible-server.

Exit codes follow compiler/cli/common.py: 1 a data directory whose journals cannot be
trusted (the message names file and line), 2 usage or paths that are not packages, specs
with an up-to-date package, or task sets (before any port is opened), 3 an internal error.
"""

from __future__ import annotations

import gc
import socket
import sys
from pathlib import Path

import click

from compiler import project
from compiler.cli.common import EXIT_ERRORS, fail, plural
from compiler.cli.serving_options import no_limit, read_deadline_options
from compiler.serve.catalog import CatalogError, load_catalog
from compiler.serve.journal import JournalError
from compiler.serve.sessions import Limits, SessionManager
from compiler.serve.tokens import is_loopback as is_loopback
from compiler.serve.tokens import token_from

DEFAULTS = Limits()
UNGUARDED = (
    "no --trainer-token-env: the trainer's /sessions routes (create, score, reset, handles) "
    "are open to every process on this machine"
)


@click.command("serve")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0: any free port.")
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=DEFAULTS.max_sessions,
    show_default=True,
    help="Sessions the trainer opens (POST /sessions, forks) at most.",
)
@click.option(
    "--max-agent-sessions",
    type=click.IntRange(min=1),
    default=DEFAULTS.max_agent_sessions,
    show_default=True,
    help="Sessions the agent's channel opens (/reset, /ws) at most: a separate pool from the trainer's.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULTS.idle_timeout,
    show_default=True,
    help="Seconds without a request before a session is closed (0: never).",
)
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULTS.call_timeout,
    show_default=True,
    help="Seconds a tool call may take; past it the session is broken, an infrastructure error (0: no limit).",
)
@read_deadline_options()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Journal every session here, synced to disk before each answer; a restart on it restores them.",
)
@click.option(
    "--packages-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the environments tasks name are found (default: [tool.envc] output, else generated/).",
)
@click.option(
    "--trainer-token-env",
    metavar="VAR",
    default=None,
    help="Require `Authorization: Bearer $VAR` on the trainer's /sessions routes (needed off loopback).",
)
@click.option(
    "--mcp/--no-mcp", "mcp", default=None, help="Mount MCP at /mcp (default: when compiler.serve.mcp and `mcp` import)."
)
@click.option(
    "--ws-ping-interval",
    type=click.FloatRange(min=0.01),
    default=20.0,
    show_default=True,
    help="Seconds between the server's pings on each WebSocket.",
)
@click.option(
    "--ws-ping-timeout",
    type=click.FloatRange(min=0.01),
    default=20.0,
    show_default=True,
    help="A WebSocket that answers no ping within this is dropped (half-open) and its session closed.",
)
@click.option(
    "--ws-compression/--no-ws-compression",
    default=False,
    show_default=True,
    help="Offer permessage-deflate on /ws (off: replies are small, and deflating each costs both ends CPU).",
)
def serve_command(
    paths: tuple[Path, ...],
    host: str,
    port: int,
    max_sessions: int,
    max_agent_sessions: int,
    idle_timeout: float,
    call_timeout: float,
    header_timeout: float,
    body_timeout: float,
    data_dir: Path | None,
    packages_dir: Path | None,
    trainer_token_env: str | None,
    mcp: bool | None,
    ws_ping_interval: float,
    ws_ping_timeout: float,
    ws_compression: bool,
) -> None:
    """Serve generated packages (generated/NAME, or a spec compiled to one) and task sets (DIR with tasks.jsonl)."""
    import uvicorn

    from compiler.serve import http
    from compiler.serve.deadlines import server_config

    token = _trainer_token(trainer_token_env)
    if token is None and not is_loopback(host):
        fail(
            "serve",
            f"--host {host} is reachable from other machines: give --trainer-token-env VAR to guard the trainer's routes",
        )
    mount_mcp = http.mcp_available() if mcp is None else mcp
    if mount_mcp and not http.mcp_available():
        raise click.UsageError(f"--mcp needs {http.MCP_MODULE} and the `mcp` SDK (pip install mcp==2.3.0)")
    root = project.find_project_root(Path.cwd())
    try:
        catalog = load_catalog(paths, packages_dir or project.configured_output(root))
    except CatalogError as exc:
        fail("serve", str(exc))
    limits = Limits(max_sessions, no_limit(idle_timeout), no_limit(call_timeout), max_agent_sessions)
    try:
        manager = SessionManager(catalog, limits, data_dir)
    except JournalError as exc:
        fail("serve", f"{exc} (nothing was served)", EXIT_ERRORS)
    except OSError as exc:
        fail("serve", f"{data_dir}: {exc.strerror or exc}")
    app = http.build_app(
        manager,
        mount_mcp=mount_mcp,
        host=host,
        trainer_token=token,
        reap_every=_reap_every(limits),
        body_timeout=no_limit(body_timeout),
    )
    listener = _listen(host, port)
    gc.freeze()  # the imported packages and restored sessions: full collections skip them (shorter pauses)
    if token is None:  # loopback only (checked above): say what that leaves open
        click.echo(f"envc serve: {UNGUARDED}", err=True)
    _announce(listener, manager, mount_mcp)
    config = server_config(
        app,
        header_timeout=no_limit(header_timeout),
        log_level="warning",
        ws_ping_interval=ws_ping_interval,
        ws_ping_timeout=ws_ping_timeout,
        ws_per_message_deflate=ws_compression,
        timeout_graceful_shutdown=2,
    )
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        manager.close_all()


def _trainer_token(variable: str | None) -> str | None:
    try:
        return token_from(variable)
    except ValueError as exc:
        raise click.UsageError(f"--trainer-token-env: {exc}") from None


def _reap_every(limits: Limits) -> float:
    """Check for idle sessions a few times per idle timeout (at most every second)."""
    return 1.0 if limits.idle_timeout is None else max(0.05, min(1.0, limits.idle_timeout / 4))


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket. Made with `IPPROTO_TCP` named, because asyncio sets
    TCP_NODELAY only on sockets whose `proto` says TCP, and `socket.create_server`'s say
    0: without it every response waits ~40 ms for a delayed ACK (Nagle's algorithm)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(2048)
    except OSError:
        listener.close()
        raise
    return listener


def _listen(host: str, port: int) -> socket.socket:
    try:
        return listen(host, port)
    except OSError as exc:
        fail("serve", f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def _announce(listener: socket.socket, manager: SessionManager, mount_mcp: bool) -> None:
    host, port = listener.getsockname()[:2]
    catalog = manager.catalog
    for note in manager.recovery:
        click.echo(f"envc serve: recovered: {note}", err=True)
    restored = f", {plural(len(manager.ids()), 'session')} restored" if manager.data_dir is not None else ""
    mcp_note = "MCP at /mcp" if mount_mcp else "no /mcp (compiler.serve.mcp absent or --no-mcp)"
    click.echo(
        f"envc serve: {plural(len(catalog.envs), 'environment')} ({catalog.name}), "
        f"{plural(len(catalog.tasks), 'task')}{restored}; "
        f"{mcp_note}; listening on http://{host}:{port}",
        err=True,
    )
    sys.stderr.flush()
