"""Shared fixtures of the `envc serve` tests: task sets made by `envc tasks`, and the
real server on a loopback port (uvicorn in a thread, or `envc serve` as a subprocess)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from shipped import GENERATED, package_dir, spec_path

from compiler.cli.app import cli
from compiler.cli.serve import listen
from compiler.serve.catalog import Catalog, load_catalog
from compiler.serve.deadlines import BODY_TIMEOUT, HEADER_TIMEOUT, server_config
from compiler.serve.http import build_app
from compiler.serve.sessions import Limits, SessionManager

ROOT = Path(__file__).resolve().parents[2]
TICKETING = package_dir("ticketing")
TRIAGE = spec_path("support_triage")
LISTENING = re.compile(r"listening on (http://\S+)")


def make_tasks(folder: Path, *args: str) -> Path:
    result = CliRunner().invoke(cli, ["tasks", *args, "--seed", "1", "-o", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="session")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six audited ticketing tasks."""
    return make_tasks(tmp_path_factory.mktemp("tasks"), str(spec_path("ticketing")), "-n", "6")


@pytest.fixture(scope="session")
def cross_task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tasks that span shop_orders and support_triage, which the shop's customers join (tools
    named `env__tool`)."""
    specs = [str(spec_path("orders_returns")), str(TRIAGE)]
    return make_tasks(tmp_path_factory.mktemp("cross"), *specs, "-n", "2", "--envs", "2")


@pytest.fixture(scope="session")
def catalog(task_dir: Path, cross_task_dir: Path) -> Catalog:
    return load_catalog([TICKETING, task_dir, cross_task_dir], GENERATED)


@dataclass
class LiveServer:
    """The app on 127.0.0.1:<free port>, served by uvicorn in a thread."""

    url: str
    manager: SessionManager
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kwargs)

    def open_session(self, client: httpx.Client, **start: Any) -> tuple[str, str]:
        """A session of the trainer's (POST /sessions): its episode id and the handle the
        agent's channel plays it by."""
        response = client.post("/sessions", json=start)
        assert response.status_code == 201, response.text
        return response.json()["info"]["episode_id"], response.json()["handle"]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.manager.close_all()


def start_server(
    manager: SessionManager,
    *,
    ping: float | None = None,
    trainer_token: str | None = None,
    mcp: bool = False,
    header_timeout: float | None = HEADER_TIMEOUT,
    body_timeout: float | None = BODY_TIMEOUT,
) -> LiveServer:
    """The app and uvicorn configured as `envc serve` configures them (server_config)."""
    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    app = build_app(manager, mount_mcp=mcp, trainer_token=trainer_token, reap_every=0.05, body_timeout=body_timeout)
    config = server_config(
        app, header_timeout=header_timeout, log_level="warning", ws_ping_interval=ping, ws_ping_timeout=ping
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    return LiveServer(f"http://127.0.0.1:{port}", manager, server, thread)


ServerFactory = Callable[..., LiveServer]
TEST_LIMITS = Limits(max_sessions=8, idle_timeout=None, call_timeout=5.0)


@pytest.fixture
def serve(catalog: Catalog) -> Iterator[ServerFactory]:
    """Start servers over the test catalog: `serve(limits=..., data_dir=..., ping=...)`."""
    started: list[LiveServer] = []

    def factory(
        limits: Limits = TEST_LIMITS,
        data_dir: Path | None = None,
        use: Catalog | None = None,
        **kwargs: Any,
    ) -> LiveServer:
        live = start_server(SessionManager(use or catalog, limits, data_dir), **kwargs)
        started.append(live)
        return live

    yield factory
    for live in started:
        live.stop()


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll `condition` (a fault test waits for the server to notice something)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.02)


def envc_command() -> list[str]:
    envc = Path(sys.executable).with_name("envc")
    return [str(envc)] if envc.exists() else [sys.executable, "-c", "from compiler.cli import main; main()"]


@dataclass
class ServeProcess:
    """`envc serve` as a subprocess (for SIGKILL)."""

    process: subprocess.Popen[str]
    url: str


def spawn_serve(*args: str) -> ServeProcess:
    """Start `envc serve ARGS --port 0` and wait for its `listening on` line."""
    process = subprocess.Popen(
        [*envc_command(), "serve", *args, "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        found = LISTENING.search(line)
        if found:  # keep draining stderr so the server never blocks on a full pipe
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return ServeProcess(process, found.group(1))
    process.wait(timeout=10)
    raise AssertionError(f"envc serve exited {process.returncode}: {''.join(lines)}")
