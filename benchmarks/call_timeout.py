"""One call cannot hold `envc serve`: how long each probe takes, and the latency another
session sees meanwhile.

    python benchmarks/call_timeout.py                  # --call-timeout 1
    python benchmarks/call_timeout.py --limit 2

`envc serve` runs in a process of its own over tests/fixtures/serve/slow_body.envspec
(compiled here, into a temporary folder) and generated/automation_hub, with
`--call-timeout LIMIT`. A neighbour session (slow_body, `bump`) calls over HTTP on its own
thread and connection the whole time. One after another, the probes run on a session of
their own:

- `spin`, `nested`, `gather`, `fibonacci`: a loop, a loop in a loop, a comprehension and
  branching recursion the agent asks to run for ever; each must come back at the limit
  as the domain error `timeout`;
- `repeat`: `"ab" * 10**12`, refused before it is built (`limit_exceeded`);
- `(a+)+$`: automation_hub's regex condition against `a` * N + `!` (N = 40, 10,000,
  100,000): Python's `re` takes minutes at N = 40; the runtime's matcher answers at once.

Printed per probe: what it returned, how long it took, and the neighbour's calls in that
time with their median and 99th percentile latency; first the neighbour alone, as the
baseline. The machine's other load shows in every figure: compare within one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
SLOW_SPEC = ROOT / "tests" / "fixtures" / "serve" / "slow_body.envspec"
HUB = ROOT / "generated" / "home_and_mobility" / "automation_hub"
LISTENING = re.compile(r"listening on (http://\S+)")
ENVC = [sys.executable, "-c", "from compiler.cli import main; main()"]
RULE = {
    "name": "probe",
    "trigger": "email_received",
    "source_filter": "it_inbox",
    "condition": {"field": "subject", "op": "regex", "value": "(a+)+$"},
    "actions": [{"type": "notify", "params": {"channel": "#ops", "message": "matched"}}],
}


@contextmanager
def server(limit: float) -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        built = subprocess.run(
            [*ENVC, "compile", str(SLOW_SPEC), "-o", folder, "--no-qc"], cwd=ROOT, check=False, capture_output=True
        )
        if built.returncode != 0:
            raise SystemExit("slow_body did not compile")
        command = [*ENVC, "serve", str(Path(folder) / "slow_body"), str(HUB), "--port", "0"]
        command += ["--call-timeout", str(limit), "--max-sessions", "16"]
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
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def start(client: httpx.Client, env: str, scenario: str) -> str:
    body = {"env": env, "scenario": scenario, "max_turns": 10**6}
    return str(client.post("/reset", json=body).json()["observation"]["episode_id"])


def step(client: httpx.Client, episode: str, tool: str, arguments: dict[str, Any]) -> Any:
    body = {"episode_id": episode, "action": {"tool_name": tool, "arguments": arguments}}
    return client.post("/step", json=body).json()["observation"]


class Neighbour:
    """Another session's `bump` calls, each timed: (finished at, seconds, succeeded)."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=60)
        self.episode = start(self.client, "slow_body", "fresh")
        self.calls: list[tuple[float, float, bool]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.perf_counter()
            result = step(self.client, self.episode, "bump", {})["result"]
            done = time.perf_counter()
            self.calls.append((done, done - started, isinstance(result, int)))

    def between(self, start: float, end: float) -> list[tuple[float, float, bool]]:
        return [c for c in self.calls if start <= c[0] - c[1] and c[0] <= end]


def summary(calls: list[tuple[float, float, bool]]) -> str:
    if not calls:
        return "no call finished"
    seconds = sorted(c[1] for c in calls)
    p99 = seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))]
    failed = sum(not c[2] for c in calls)
    return f"{len(calls):>6} calls  p50 {statistics.median(seconds) * 1e3:7.2f} ms  p99 {p99 * 1e3:7.2f} ms  failed {failed}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=1.0, help="--call-timeout of the server, seconds")
    options = parser.parse_args()
    print(
        f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    print(f"# envc serve --call-timeout {options.limit}")
    with server(options.limit) as url, httpx.Client(base_url=url, timeout=60) as client:
        neighbour = Neighbour(url)
        neighbour.thread.start()
        time.sleep(0.5)  # warm
        started = time.perf_counter()
        time.sleep(2.0)
        print(f"{'neighbour alone':<34} {'':<22} {'':>8}  {summary(neighbour.between(started, time.perf_counter()))}")
        slow = start(client, "slow_body", "fresh")
        hub = start(client, "automation_hub", "office_hub")
        assert "error" not in step(client, hub, "create_automation", RULE)["result"]
        probes: list[tuple[str, str, dict[str, Any]]] = [
            ("spin(10**12)", "spin", {"rounds": 10**12}),
            ("nested(10**6)", "nested", {"rounds": 10**6}),
            ("gather(10**12)", "gather", {"rounds": 10**12}),
            ("fibonacci(80)", "fibonacci", {"n": 80}),
            ("repeat(10**12)", "repeat", {"times": 10**12}),
        ]
        for label, tool, arguments in probes:
            probe(neighbour, label, lambda t=tool, a=arguments: step(client, slow, t, a))
        for count in (40, 10_000, 100_000):
            payload = {"from": "eve@example.com", "subject": "a" * count + "!"}
            arguments = {"source_id": "it_inbox", "event_type": "email_received", "payload": payload}
            probe(neighbour, f"(a+)+$ on {count:,} a's + '!'", lambda a=arguments: step(client, hub, "inject_event", a))
        neighbour.stopping.set()
        neighbour.thread.join(timeout=60)


def probe(neighbour: Neighbour, label: str, run: Any) -> None:
    started = time.perf_counter()
    observation = run()
    took = time.perf_counter() - started
    result = observation["result"]
    said = result["error"]["kind"] if isinstance(result, dict) and "error" in result else "answered"
    time.sleep(0.05)
    print(f"{label:<34} {said:<22} {took:7.3f}s  {summary(neighbour.between(started, started + took))}")


if __name__ == "__main__":
    main()
