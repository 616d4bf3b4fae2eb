"""`envc serve` against OpenEnv's own reference server, serving the same generated
environment, driven by OpenEnv's `GenericEnvClient` over WebSockets.

    python benchmarks/serve_vs_openenv.py                       # 1, 8 and 64 clients, 5 s each
    python benchmarks/serve_vs_openenv.py --clients 8 --seconds 10

The environment is generated/it_operations/ticketing from its `help_desk_monday` scenario. OpenEnv's
side is openenv-core's `create_app` (FastAPI) under uvicorn, over an `Environment`
subclass whose `step` is the package's `Environment.call` (what a port of a generated
package to OpenEnv by hand would be: no time limit, no journal); envc's side is
`envc serve generated/it_operations/ticketing` with its defaults (a 10 s call time limit, no journal).
Each server runs in a process of its own; the clients run in `--client-processes`
processes (asyncio, `GenericEnvClient` each, one WebSocket per client), every client
playing episodes of `EPISODE` calls of a fixed read mix (whoami, get_ticket,
list_tickets, queue_by_category), a reset between episodes.

Printed per client count: the median over `--rounds` rounds of envc's steps per second
divided by OpenEnv's, each round running both servers back to back (which goes first
alternates between rounds), so both see the same load of the machine; beside it the
median steps per second of each, the server process's CPU time per step (user + system,
from /proc/<pid>/stat) and the client processes' CPU time per step, and each round's
ratio. The load average is printed before and after. Clients and servers share the
machine's cores: compare figures of one run, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PACKAGE = ROOT / "generated" / "it_operations" / "ticketing"
SCENARIO = "help_desk_monday"
MIX: list[tuple[str, dict[str, Any]]] = [
    ("whoami", {}),
    ("get_ticket", {"ticket_id": 2}),
    ("list_tickets", {"limit": 3}),
    ("queue_by_category", {}),
]
EPISODE = 30
"""Calls per episode (under the 32 a scenario session allows); then a reset."""
LISTENING = re.compile(r"listening on (http://\S+)")


# =========================================================================== OpenEnv's server


def openenv_app() -> Any:
    """OpenEnv's reference app over the generated package: `create_app` with an
    `Environment` whose actions are `{tool_name, arguments}` and whose observations carry
    the package's JSON result."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    from compiler.build import packages

    package = packages.import_package(PACKAGE, packages.folder_alias("benchmark", "ticketing", PACKAGE))

    class ToolAction(Action):
        tool_name: str
        arguments: dict[str, Any] = {}

    class ToolObservation(Observation):
        result: Any = None
        episode_id: str | None = None

    class Ticketing(Environment[ToolAction, ToolObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.env = package.Environment(SCENARIO)
            self.steps = 0
            self.episode_id: str | None = None

        def reset(
            self, seed: int | None = None, episode_id: str | None = None, scenario: str = SCENARIO, **kwargs: Any
        ) -> ToolObservation:
            self.env = package.Environment(scenario)
            self.steps, self.episode_id = 0, episode_id
            return ToolObservation(episode_id=episode_id)

        def step(self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any) -> ToolObservation:
            self.steps += 1
            return ToolObservation(result=self.env.call(action.tool_name, action.arguments), episode_id=self.episode_id)

        @property
        def state(self) -> State:
            return State(episode_id=self.episode_id, step_count=self.steps)

    return create_app(Ticketing, ToolAction, ToolObservation, env_name="ticketing", max_concurrent_envs=1024)


def run_openenv(port: int) -> None:
    import uvicorn

    uvicorn.run(openenv_app(), host="127.0.0.1", port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def openenv_server(root: Path = ROOT) -> Iterator[tuple[str, int]]:
    """OpenEnv's server (`root`: unused, as `envc_server` takes it)."""
    port = free_port()
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-openenv", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("OpenEnv's server did not start") from None
            time.sleep(0.1)
    try:
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def envc_server(root: Path = ROOT) -> Iterator[tuple[str, int]]:
    """`envc serve` of the checkout at `root` (this one, or another to compare with)."""
    command = [
        sys.executable,
        "-c",
        "from compiler.cli import main; main()",
        "serve",
        str(root / PACKAGE.relative_to(ROOT)),
    ]
    command += ["--port", "0", "--max-sessions", "1024"]
    environment = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen(command, cwd=root, stderr=subprocess.PIPE, text=True, env=environment)
    assert process.stderr is not None
    url = None
    for line in process.stderr:
        if found := LISTENING.search(line):
            url = found.group(1)
            break
    if url is None:
        raise SystemExit(f"envc serve did not start (exit {process.wait()})")
    threading.Thread(target=process.stderr.read, daemon=True).start()
    try:
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# =========================================================================== clients


async def one_client(url: str, ready: Any, window: Any) -> int:
    """Steps one GenericEnvClient completes inside the window (`window[0]` to `window[1]`,
    set by the parent once every client has connected and reset)."""
    from openenv.core.generic_client import GenericEnvClient

    counted = 0
    async with GenericEnvClient(base_url=url) as env:
        await env.reset(env="ticketing", scenario=SCENARIO)
        ready.release()
        while window[0] == 0.0:
            await asyncio.sleep(0.01)
        start_at, end_at = window[0], window[1]
        calls = 0
        while (now := time.time()) < end_at:
            tool, args = MIX[calls % len(MIX)]
            result = await env.step({"tool_name": tool, "arguments": args})
            assert result.observation.get("domain_error") is not True, result.observation
            calls += 1
            counted += now >= start_at
            if calls % EPISODE == 0:
                await env.reset(env="ticketing", scenario=SCENARIO)
    return counted


def client_process(url: str, clients: int, ready: Any, window: Any, out: Any) -> None:
    async def run() -> int:
        return sum(await asyncio.gather(*(one_client(url, ready, window) for _ in range(clients))))

    out.put(asyncio.run(run()))


class Measured(NamedTuple):
    """One server's run at one client count."""

    steps_per_s: float
    server_us: float
    """Server CPU microseconds per step."""
    clients_us: float
    """Client processes' CPU microseconds per step."""


def measure(url: str, pid: int, clients: int, processes: int, seconds: float) -> Measured:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    ready = context.Semaphore(0)
    window = context.Array("d", [0.0, 0.0])
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    workers = [
        context.Process(target=client_process, args=(url, share, ready, window, out)) for share in shares if share
    ]
    for worker in workers:
        worker.start()
    for _ in range(clients):
        if not ready.acquire(timeout=120):
            raise SystemExit("the clients did not connect")
    start_at = time.time() + 0.5
    window[1], window[0] = start_at + seconds, start_at
    time.sleep(max(0.0, start_at - time.time()))
    pids = [pid] + [worker.pid for worker in workers if worker.pid is not None]
    before = [cpu_seconds(p) for p in pids]
    time.sleep(max(0.0, start_at + seconds - time.time()))
    after = [cpu_seconds(p) for p in pids]
    steps = sum(out.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(timeout=30)
    used = [b - a for a, b in zip(before, after, strict=True)]
    per_step = 1e6 / max(steps, 1)
    return Measured(steps / seconds, used[0] * per_step, sum(used[1:]) * per_step)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def median_of(runs: list[Measured], field: str) -> float:
    return statistics.median(getattr(run, field) for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of both servers; medians are printed")
    parser.add_argument(
        "--envc-root", type=Path, default=ROOT, help="the checkout whose envc serves (default: this one)"
    )
    parser.add_argument("--serve-openenv", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_openenv is not None:
        run_openenv(options.serve_openenv)
        return
    import openenv.core

    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores")
    print(
        f"# openenv-core {getattr(openenv.core, '__version__', '0.3.0')}; generated/it_operations/ticketing `{SCENARIO}`"
    )
    print(f"# load average before: {load_average()}; {options.rounds} rounds of {options.seconds:g} s, medians")
    header = f"{'clients':>7}  {'envc steps/s':>12}  {'OpenEnv steps/s':>15}  {'ratio':>5}"
    header += f"  {'server CPU µs/step envc':>23}  {'OpenEnv':>7}  {'client CPU µs/step envc':>23}  {'OpenEnv':>7}"
    print(header + "  ratio per round")
    root = options.envc_root.resolve()
    for clients in options.clients:
        processes = max(1, min(options.client_processes, clients))
        envc_runs: list[Measured] = []
        openenv_runs: list[Measured] = []
        for round_ in range(options.rounds):  # back to back, so both see the same load of the machine
            order = [(envc_server, envc_runs), (openenv_server, openenv_runs)]
            for server, runs in order if round_ % 2 == 0 else order[::-1]:
                with server(root) as (url, pid):
                    runs.append(measure(url, pid, clients, processes, options.seconds))
        ratios = [e.steps_per_s / o.steps_per_s for e, o in zip(envc_runs, openenv_runs, strict=True)]
        print(
            f"{clients:>7}  {median_of(envc_runs, 'steps_per_s'):>12.0f}  {median_of(openenv_runs, 'steps_per_s'):>15.0f}"
            f"  {statistics.median(ratios):>5.2f}"
            f"  {median_of(envc_runs, 'server_us'):>23.0f}  {median_of(openenv_runs, 'server_us'):>7.0f}"
            f"  {median_of(envc_runs, 'clients_us'):>23.0f}  {median_of(openenv_runs, 'clients_us'):>7.0f}"
            f"  {' '.join(f'{r:.2f}' for r in ratios)}",
            flush=True,
        )
    print(f"# load average after: {load_average()}")


if __name__ == "__main__":
    main()
