"""Per-call latency of `envc serve`: in-process against HTTP, WebSocket and MCP, as
ratios to the in-process call.

    python benchmarks/serve_latency.py                  # 2,000 calls per transport
    python benchmarks/serve_latency.py --calls 5000

One session of generated/it_operations/ticketing from the `help_desk_monday` scenario, a fixed mix of
read calls (whoami, get_ticket, list_tickets, queue_by_category) so the state does not
grow while it runs. Measured in one run, side by side:

- `in-process env.call`: the generated package's `Environment.call`, no server;
- `in-process SessionManager.call`: the server's session layer without a transport
  (worker thread, per-call time limit; `+journal`: with --data-dir, one fsynced record
  per call);
- `HTTP /step`: httpx with a kept-alive connection to `envc serve` in a subprocess
  (`+journal`: started with --data-dir in a temporary folder);
- `WebSocket /ws step`: a websockets client on one connection (`+journal` likewise);
- `MCP tools/call`: the MCP SDK's client over streamable HTTP at /mcp (when mounted).

Every call is timed alone (perf_counter around it); printed are the median and the 99th
percentile in microseconds, and the median's ratio to in-process `env.call` and to
in-process `SessionManager.call` (the session layer every transport goes through).
Client and server share the machine's cores; compare figures from one run, not across
runs. The `+journal` rows pay one fdatasync per call: their cost is the disk's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.serve.catalog import load_catalog  # noqa: E402
from compiler.serve.sessions import Limits, SessionManager, Start  # noqa: E402

PACKAGE = ROOT / "generated" / "it_operations" / "ticketing"
SCENARIO = "help_desk_monday"
MIX: list[tuple[str, dict[str, Any]]] = [
    ("whoami", {}),
    ("get_ticket", {"ticket_id": 2}),
    ("list_tickets", {"limit": 3}),
    ("queue_by_category", {}),
]
LISTENING = re.compile(r"listening on (http://\S+)")
MANY_TURNS = 10**9


def calls(n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    for i in range(n):
        yield MIX[i % len(MIX)]


def timed(n: int, one: Callable[[str, dict[str, Any]], Any]) -> list[float]:
    """Microseconds of each call."""
    for tool, args in calls(min(n, 50)):  # warm up
        one(tool, args)
    times = []
    for tool, args in calls(n):
        start = time.perf_counter()
        one(tool, args)
        times.append((time.perf_counter() - start) * 1e6)
    return times


@contextmanager
def serve_process(*args: str) -> Iterator[tuple[str, int]]:
    """`envc serve` of ticketing on a free loopback port, as a process of its own: (url, pid)."""
    command = [
        sys.executable,
        "-c",
        "from compiler.cli import main; main()",
        "serve",
        str(PACKAGE),
        "--port",
        "0",
        *args,
    ]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
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


def start_body() -> dict[str, Any]:
    return {"env": "ticketing", "scenario": SCENARIO, "max_turns": MANY_TURNS}


def trainer_session(client: httpx.Client) -> str:
    """A session the trainer opens (POST /sessions: only it sets `max_turns`); the handle
    the agent's channel plays it by."""
    response = client.post("/sessions", json=start_body())
    response.raise_for_status()
    handle: str = response.json()["handle"]
    return handle


def http_times(url: str, n: int) -> list[float]:
    with httpx.Client(base_url=url, timeout=30) as client:
        episode = trainer_session(client)

        def one(tool: str, args: dict[str, Any]) -> Any:
            response = client.post(
                "/step", json={"episode_id": episode, "action": {"tool_name": tool, "arguments": args}}
            )
            response.raise_for_status()
            return response.json()

        return timed(n, one)


def ws_times(url: str, n: int) -> list[float]:
    with httpx.Client(base_url=url, timeout=30) as client:
        handle = trainer_session(client)
    with connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"handle": handle}}))
        json.loads(ws.recv())

        def one(tool: str, args: dict[str, Any]) -> Any:
            ws.send(json.dumps({"type": "step", "data": {"tool_name": tool, "arguments": args}}))
            reply = json.loads(ws.recv())
            assert reply["type"] == "observation", reply
            return reply

        return timed(n, one)


def mcp_times(url: str, n: int) -> list[float] | None:
    try:
        from mcp import Client

        from compiler.serve.mcp import episode_meta
    except ImportError:
        return None
    with httpx.Client(base_url=url, timeout=30) as client:
        episode = trainer_session(client)

    async def run() -> list[float]:
        async with Client(f"{url}/mcp/") as mcp:
            times = []
            for i, (tool, args) in enumerate(calls(n + 50)):
                start = time.perf_counter()
                result = await mcp.call_tool(tool, args, meta=episode_meta(episode))
                assert not result.is_error, result
                if i >= 50:
                    times.append((time.perf_counter() - start) * 1e6)
            return times

    return asyncio.run(run())


def in_process(n: int, data_dir: Path | None) -> list[float]:
    manager = SessionManager(load_catalog([PACKAGE]), Limits(max_sessions=4), data_dir)
    session = manager.create(Start(envs=("ticketing",), scenario=SCENARIO, max_turns=MANY_TURNS))
    try:
        return timed(n, lambda tool, args: manager.call(session.episode_id, tool, args))
    finally:
        manager.close(session.episode_id)
        manager.close_all()


def env_call(n: int) -> list[float]:
    package = load_catalog([PACKAGE]).envs["ticketing"].package
    env = package.Environment(SCENARIO)
    return timed(n, env.call)


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    n = options.calls
    print(f"{platform.platform()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {n} calls per row")
    rows: list[tuple[str, list[float] | None]] = [("in-process env.call", env_call(n))]
    rows.append(("in-process SessionManager.call", in_process(n, None)))
    with tempfile.TemporaryDirectory() as data:
        rows.append(("in-process SessionManager.call +journal", in_process(n, Path(data))))
    with serve_process("--no-mcp") as (url, _):
        rows.append(("HTTP /step", http_times(url, n)))
        rows.append(("WebSocket /ws step", ws_times(url, n)))
    with tempfile.TemporaryDirectory() as data, serve_process("--no-mcp", "--data-dir", data) as (url, _):
        rows.append(("HTTP /step +journal", http_times(url, n)))
        rows.append(("WebSocket /ws step +journal", ws_times(url, n)))
    with serve_process("--mcp") as (url, _):
        rows.append(("MCP tools/call", mcp_times(url, n)))
    base = statistics.median(rows[0][1] or [1.0])
    layer = statistics.median(rows[1][1] or [1.0])
    print(f"{'transport':42} {'median µs':>10} {'p99 µs':>10} {'× env.call':>11} {'× manager':>10}")
    for name, times in rows:
        if times is None:
            print(f"{name:42} {'(compiler.serve.mcp or mcp not installed)':>33}")
            continue
        median = statistics.median(times)
        print(f"{name:42} {median:10.1f} {p99(times):10.1f} {median / base:11.1f} {median / layer:10.1f}")


if __name__ == "__main__":
    main()
