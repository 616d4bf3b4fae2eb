"""Concurrent sessions held by one `envc serve` process on this machine's cores: per-call
latency (p50/p99) and memory per session, under a bounded loopback load.

    python benchmarks/serve_concurrency.py                       # 64, 256 and 1024 sessions
    python benchmarks/serve_concurrency.py --sessions 100 --sessions 2000 --rounds 5
    python benchmarks/serve_concurrency.py --transport http --journal   # HTTP /step, journaled sessions

For each count N: a fresh `envc serve generated/it_operations/ticketing --max-sessions N` subprocess;
the server's resident memory (VmRSS of /proc/PID/status) is read before any session
exists, then the trainer opens N sessions from `help_desk_monday` (POST /sessions) and N
WebSocket clients (one asyncio process, one connection each) each play one by its
handle (`reset` with `handle`) and hold it; memory is read again, and the difference
over N is the memory per session (the session, its environment's state, its socket).
Then every session makes `--rounds` rounds of the read-call mix of serve_latency.py,
with at most `--in-flight` calls outstanding at once across all sessions (the bounded
load: a trainer's rollout workers, not a flood); each call is timed from send to reply.
Printed per N: throughput, p50 and p99 latency in milliseconds, and memory per session.
`--transport http` holds the sessions over HTTP instead (called by `/step` with their
handles through a pool of `--in-flight` kept-alive connections); `--journal` starts the
server with `--data-dir` in a temporary folder (one fdatasync per call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from serve_latency import serve_process  # the same `envc serve` process, started the same way
from websockets.asyncio.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "generated" / "it_operations" / "ticketing"
MIX: list[tuple[str, dict[str, Any]]] = [
    ("whoami", {}),
    ("get_ticket", {"ticket_id": 2}),
    ("list_tickets", {"limit": 3}),
    ("queue_by_category", {}),
]


@contextmanager
def server(max_sessions: int, journal: bool) -> Iterator[tuple[str, int]]:
    with tempfile.TemporaryDirectory() as data:
        extra = ["--data-dir", data] if journal else []
        with serve_process("--no-mcp", "--max-sessions", str(max_sessions), *extra) as found:
            yield found


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS in /proc (Linux only)")


async def request(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    reply: dict[str, Any] = json.loads(await ws.recv())
    if reply["type"] == "error":
        raise SystemExit(f"server error: {reply['data']}")
    return reply


async def trainer_sessions(url: str, n: int) -> list[str]:
    """N sessions the trainer opens (only it sets `max_turns`): their handles."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        return [(await client.post("/sessions", json=START)).json()["handle"] for _ in range(n)]


async def open_sessions(url: str, n: int) -> list[ClientConnection]:
    sockets: list[ClientConnection] = []
    for handle in await trainer_sessions(url, n):
        ws = await connect(url.replace("http://", "ws://") + "/ws", max_size=None, ping_interval=None)
        await request(ws, {"type": "reset", "data": {"handle": handle}})
        sockets.append(ws)
    return sockets


async def load(sockets: list[ClientConnection], rounds: int, in_flight: int) -> tuple[list[float], float]:
    gate = asyncio.Semaphore(in_flight)
    times: list[float] = []

    async def play(ws: ClientConnection, offset: int) -> None:
        for i in range(rounds):
            tool, args = MIX[(offset + i) % len(MIX)]
            async with gate:
                began = time.perf_counter()
                await request(ws, {"type": "step", "data": {"tool_name": tool, "arguments": args}})
                times.append((time.perf_counter() - began) * 1000)

    began = time.perf_counter()
    await asyncio.gather(*(play(ws, k) for k, ws in enumerate(sockets)))
    return times, time.perf_counter() - began


START = {"env": "ticketing", "scenario": "help_desk_monday", "max_turns": 10**9}


async def http_load(url: str, n: int, rounds: int, in_flight: int, pid: int) -> tuple[list[float], float, int]:
    """The same over HTTP: the trainer's sessions, calls by /step on a bounded pool."""
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    episodes = await trainer_sessions(url, n)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        held = rss_kib(pid)
        gate = asyncio.Semaphore(in_flight)
        times: list[float] = []

        async def play(episode: str, offset: int) -> None:
            for i in range(rounds):
                tool, args = MIX[(offset + i) % len(MIX)]
                async with gate:
                    began = time.perf_counter()
                    body = {"episode_id": episode, "action": {"tool_name": tool, "arguments": args}}
                    (await client.post("/step", json=body)).raise_for_status()
                    times.append((time.perf_counter() - began) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(play(e, k) for k, e in enumerate(episodes)))
        return times, time.perf_counter() - began, held


async def measure(n: int, rounds: int, in_flight: int, transport: str, journal: bool) -> dict[str, float]:
    with server(n, journal) as (url, pid):
        await asyncio.sleep(0.5)
        before = rss_kib(pid)
        if transport == "http":
            times, elapsed, held = await http_load(url, n, rounds, in_flight, pid)
        else:
            sockets = await open_sessions(url, n)
            held = rss_kib(pid)
            times, elapsed = await load(sockets, rounds, in_flight)
            for ws in sockets:
                await ws.close()
    quantiles = statistics.quantiles(times, n=100)
    return {
        "calls_per_s": len(times) / elapsed,
        "p50_ms": statistics.median(times),
        "p99_ms": quantiles[98],
        "kib_per_session": (held - before) / n,
        "rss_mib": held / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, action="append", help="Session counts (repeatable).")
    parser.add_argument("--rounds", type=int, default=10, help="Calls per session.")
    parser.add_argument("--in-flight", type=int, default=32, help="Calls outstanding at once, over all sessions.")
    parser.add_argument("--transport", choices=["ws", "http"], default="ws")
    parser.add_argument("--journal", action="store_true", help="Serve with --data-dir (a temporary folder).")
    options = parser.parse_args()
    counts = options.sessions or [64, 256, 1024]
    print(
        f"{platform.platform()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {options.transport}"
        f"{' +journal' if options.journal else ''}, {options.rounds} calls per session, "
        f"at most {options.in_flight} in flight"
    )
    print(f"{'sessions':>8} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'KiB/session':>12} {'server RSS MiB':>15}")
    for n in counts:
        row = asyncio.run(measure(n, options.rounds, options.in_flight, options.transport, options.journal))
        print(
            f"{n:8d} {row['calls_per_s']:9.0f} {row['p50_ms']:8.2f} {row['p99_ms']:8.2f} "
            f"{row['kib_per_session']:12.1f} {row['rss_mib']:15.1f}"
        )


if __name__ == "__main__":
    main()
