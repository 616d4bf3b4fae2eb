"""Per-call latency of a tool call through MCP against the in-process `Environment.call`.

    python benchmarks/mcp_latency.py                  # 100 rounds of 5 calls, 5 repetitions
    python benchmarks/mcp_latency.py --rounds 200 --reps 7
    python benchmarks/mcp_latency.py --package /tmp/out/ticketing

The package is generated/it_operations/ticketing from its `busy_queue` scenario (Alice signed in, three
tickets). One round is five calls, two of them writes and one refused: whoami,
get_ticket, update_ticket, list_tickets (limit 5), get_ticket of a missing ticket.

Measured in one run, side by side (each in a fresh episode):

- `env.call` in-process: the baseline, the generated package's harness entry point;
- `LocalBackend.call`: compiler/serve/mcp.py's in-memory backend (episode lookup, lock);
- MCP in-memory: the SDK's `Client` on the `Server` object itself (no transport, no
  JSON-RPC framing): the cost of the SDK's request handling and result validation;
- MCP streamable HTTP, protocol 2026-07-28 and 2025-11-25 (handshake era), against
  `envc mcp --transport http` running as its own process on loopback;
- MCP stdio, 2026-07-28, against `envc mcp` as a subprocess.

Every MCP call is a full SDK `call_tool`: the client stamps the episode into `_meta`,
the server validates and answers, and the client checks the structured content against
the tool's output schema. Reported: microseconds per call, the median and the min over
the repetitions, and both as a ratio to `env.call`'s. On a shared machine the min is the
stable figure; the client and the server share the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.serve import catalog  # noqa: E402
from compiler.serve.mcp import LocalBackend, episode_meta, mcp_server  # noqa: E402

SCENARIO = "busy_queue"
EPISODE = "bench"
ENVC = str(Path(sys.executable).with_name("envc"))
ANNOUNCED = re.compile(r"at (http://\S+/) \(MCP streamable HTTP\)")


def round_calls(index: int) -> list[tuple[str, dict[str, Any]]]:
    """One round of the mix; the write alternates so each round changes the state."""
    return [
        ("whoami", {}),
        ("get_ticket", {"ticket_id": 1}),
        ("update_ticket", {"ticket_id": 1, "priority": 2 + index % 2}),
        ("list_tickets", {"limit": 5}),
        ("get_ticket", {"ticket_id": 99}),  # refused: not_found
    ]


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}"
    )


# --------------------------------------------------------------------------- runners

SyncCall = Callable[[str, dict[str, Any]], Any]
AsyncCall = Callable[[str, dict[str, Any]], Awaitable[Any]]


def time_sync(call: SyncCall, rounds: int, reps: int) -> list[float]:
    """Microseconds per call, one figure per repetition (after one warm-up repetition)."""
    figures = []
    for rep in range(reps + 1):
        calls = [pair for index in range(rounds) for pair in round_calls(index)]
        start = time.perf_counter()
        for tool, args in calls:
            call(tool, args)
        if rep:
            figures.append((time.perf_counter() - start) / len(calls) * 1e6)
    return figures


async def time_async(call: AsyncCall, rounds: int, reps: int) -> list[float]:
    figures = []
    for rep in range(reps + 1):
        calls = [pair for index in range(rounds) for pair in round_calls(index)]
        start = time.perf_counter()
        for tool, args in calls:
            await call(tool, args)
        if rep:
            figures.append((time.perf_counter() - start) / len(calls) * 1e6)
    return figures


def client_call(client: Client, episode: str) -> AsyncCall:
    meta = episode_meta(episode)

    async def call(tool: str, args: dict[str, Any]) -> Any:
        return await client.call_tool(tool, args, meta=meta)

    return call


async def time_client(client: Client, episode: str, rounds: int, reps: int) -> list[float]:
    await client.list_tools()  # the client caches output schemas from the listing
    return await time_async(client_call(client, episode), rounds, reps)


@asynccontextmanager
async def http_server(package: Path) -> AsyncIterator[str]:
    """`envc mcp --transport http` on a free loopback port; its URL."""
    command = [ENVC, "mcp", str(package), "--transport", "http", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--scenario", SCENARIO, "--episode", EPISODE], stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = ANNOUNCED.search(line)
        if found is None:
            raise SystemExit(f"envc mcp did not start: {line}{process.stderr.read()}")
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


# --------------------------------------------------------------------------- the run


async def measure(package: Path, rounds: int, reps: int) -> dict[str, list[float]]:
    served = catalog.load_env(package)
    results: dict[str, list[float]] = {}

    env = served.package.Environment(SCENARIO)
    results["env.call in-process"] = time_sync(env.call, rounds, reps)

    backend = LocalBackend(served.package, list(served.entries))
    episode = backend.create(SCENARIO)
    results["LocalBackend.call"] = time_sync(lambda tool, args: backend.call(episode, tool, args), rounds, reps)

    backend = LocalBackend(served.package, list(served.entries))
    episode = backend.create(SCENARIO)
    async with Client(mcp_server(backend, served.name)) as client:
        results["MCP in-memory (SDK, no transport)"] = await time_client(client, episode, rounds, reps)

    async with http_server(package) as url:
        async with Client(url) as client:
            results["MCP streamable HTTP, 2026-07-28"] = await time_client(client, EPISODE, rounds, reps)
        async with Client(url, mode="legacy") as client:
            results["MCP streamable HTTP, 2025-11-25"] = await time_client(client, EPISODE, rounds, reps)

    stdio = StdioServerParameters(command=ENVC, args=["mcp", str(package), "--scenario", SCENARIO])
    async with Client(stdio) as client:
        results["MCP stdio, 2026-07-28"] = await time_client(client, "default", rounds, reps)
    return results


def report(results: dict[str, list[float]], rounds: int, reps: int) -> None:
    calls = rounds * len(round_calls(0))
    print(f"{machine()}\n{calls} calls per repetition, {reps} repetitions (after one warm-up)\n")
    base_median, base_min = statistics.median(results["env.call in-process"]), min(results["env.call in-process"])
    width = max(map(len, results))
    print(f"{'path':<{width}}  {'median us':>10}  {'min us':>9}  {'x median':>9}  {'x min':>8}")
    for name, figures in results.items():
        median, low = statistics.median(figures), min(figures)
        print(f"{name:<{width}}  {median:>10.1f}  {low:>9.1f}  {median / base_median:>9.1f}  {low / base_min:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT / "generated" / "it_operations" / "ticketing")
    parser.add_argument("--rounds", type=int, default=100, help="rounds of 5 calls per repetition")
    parser.add_argument("--reps", type=int, default=5)
    options = parser.parse_args()
    results = anyio.run(measure, options.package, options.rounds, options.reps)
    report(results, options.rounds, options.reps)


if __name__ == "__main__":
    main()
