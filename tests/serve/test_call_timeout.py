"""A call cannot hold the server (issue 23, finding 2): through the real server on
loopback, a body that loops for long is stopped at `--call-timeout` as the domain error
`timeout` (nothing changed, the episode goes on), a ReDoS pattern given to the
event-triggering environment answers at once, and another session keeps being served
meanwhile."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from shipped import package_dir

from compiler.cli.app import cli
from compiler.serve.call_clock import CALL_GRACE
from compiler.serve.catalog import Catalog, load_catalog
from compiler.serve.sessions import Limits

from .conftest import GENERATED, ROOT, ServerFactory

SLOW_SPEC = ROOT / "tests" / "fixtures" / "serve" / "slow_body.envspec"
LIMIT = 1.0
LIMITS = Limits(max_sessions=8, idle_timeout=None, call_timeout=LIMIT)
PROBE = {"name": "probe", "trigger": "email_received", "source_filter": "it_inbox"}
PROBE_ACTIONS = [{"type": "notify", "params": {"channel": "#ops", "message": "matched"}}]


@pytest.fixture(scope="module")
def slow_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """slow_body (compiled here) and the shipped automation_hub."""
    out = tmp_path_factory.mktemp("slow")
    result = CliRunner().invoke(cli, ["compile", str(SLOW_SPEC), "-o", str(out), "--no-qc"])
    assert result.exit_code == 0, result.output
    return load_catalog([out / "slow_body", package_dir("automation_hub")], GENERATED)


def start(client: httpx.Client, env: str, scenario: str) -> tuple[str, str]:
    """A session the trainer opens (POST /sessions: a turn limit is the trainer's): its
    episode id and the handle the agent's /step plays it by."""
    response = client.post("/sessions", json={"env": env, "scenario": scenario, "max_turns": 1000})
    assert response.status_code == 201, response.text
    return str(response.json()["info"]["episode_id"]), str(response.json()["handle"])


def step(client: httpx.Client, episode: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/step", json={"episode_id": episode, "action": {"tool_name": tool, "arguments": arguments}})
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


class Neighbour:
    """Another session calling `bump` on its own thread and connection while a probe
    runs: every call's latency, and every result."""

    def __init__(self, url: str, episode: str) -> None:
        self.url, self.episode = url, episode
        self.latencies: list[float] = []
        self.results: list[Any] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self.stop.is_set():
                started = time.perf_counter()
                payload = step(client, self.episode, "bump", {})
                self.latencies.append(time.perf_counter() - started)
                self.results.append(payload["observation"]["result"])

    def __enter__(self) -> Neighbour:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        deadline = time.monotonic() + 10
        while len(self.results) < 3 and time.monotonic() < deadline:  # a probe may be quicker than a call
            time.sleep(0.01)
        self.stop.set()
        self.thread.join(timeout=30)

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("spin", {"rounds": 10**12}),
        ("nested", {"rounds": 10**6}),
        ("gather", {"rounds": 10**12}),
        ("fibonacci", {"n": 80}),
    ],
)
def test_a_long_body_is_stopped_at_the_limit_while_others_are_served(
    serve: ServerFactory, slow_catalog: Catalog, tool: str, arguments: dict[str, Any]
) -> None:
    live = serve(limits=LIMITS, use=slow_catalog)
    with live.client() as client:
        _, probe = start(client, "slow_body", "fresh")
        _, other = start(client, "slow_body", "fresh")
        with Neighbour(live.url, other) as neighbour:
            time.sleep(0.05)
            started = time.perf_counter()
            payload = step(client, probe, tool, arguments)
            took = time.perf_counter() - started
        result = payload["observation"]["result"]
        assert result["error"]["kind"] == "timeout", result
        assert payload["done"] is False, "a timeout is a domain error: the episode goes on"
        assert LIMIT <= took < LIMIT + CALL_GRACE, took
        assert neighbour.results and all(isinstance(r, int) for r in neighbour.results)
        assert neighbour.results == list(range(1, len(neighbour.results) + 1))
        assert neighbour.p99() < 0.5, "the other session kept being served"
        # The stopped call changed nothing (the counter went up before the loop) and the
        # session takes calls again.
        assert step(client, probe, "bump", {})["observation"]["result"] == 1
        assert client.get("/health").status_code == 200


def test_a_huge_repetition_is_refused_at_once(serve: ServerFactory, slow_catalog: Catalog) -> None:
    live = serve(limits=LIMITS, use=slow_catalog)
    with live.client() as client:
        _, episode = start(client, "slow_body", "fresh")
        started = time.perf_counter()
        result = step(client, episode, "repeat", {"times": 10**12})["observation"]["result"]
        assert result["error"]["kind"] == "limit_exceeded" and time.perf_counter() - started < LIMIT
        assert step(client, episode, "bump", {})["observation"]["result"] == 1


def test_the_redos_probe_answers_at_once_through_automation_hub(serve: ServerFactory, slow_catalog: Catalog) -> None:
    """`(a+)+$` as an automation's regex condition, against 40+ `a`s and a `!`: Python's
    `re` would hold the interpreter for minutes; the runtime's matcher answers in ms."""
    live = serve(limits=LIMITS, use=slow_catalog)
    with live.client() as client:
        _, hub = start(client, "automation_hub", "office_hub")
        _, other = start(client, "slow_body", "fresh")
        condition = {"field": "subject", "op": "regex", "value": "(a+)+$"}
        made = step(client, hub, "create_automation", {**PROBE, "condition": condition, "actions": PROBE_ACTIONS})
        assert "error" not in made["observation"]["result"], made
        with Neighbour(live.url, other) as neighbour:
            for count in (40, 1_000, 100_000):
                payload = {"from": "eve@example.com", "subject": "a" * count + "!"}
                started = time.perf_counter()
                event = step(
                    client,
                    hub,
                    "inject_event",
                    {"source_id": "it_inbox", "event_type": "email_received", "payload": payload},
                )
                assert time.perf_counter() - started < LIMIT
                result = event["observation"]["result"]
                assert "error" not in result, result
                assert result["event"]["fired"] == []
        assert neighbour.results and all(isinstance(r, int) for r in neighbour.results)


def test_a_stopped_call_is_journaled_and_not_run_again_on_restart(
    serve: ServerFactory, slow_catalog: Catalog, tmp_path: Path
) -> None:
    live = serve(limits=LIMITS, use=slow_catalog, data_dir=tmp_path)
    with live.client() as client:
        episode, handle = start(client, "slow_body", "fresh")
        assert step(client, handle, "bump", {})["observation"]["result"] == 1
        assert step(client, handle, "spin", {"rounds": 10**12})["observation"]["result"]["error"]["kind"] == "timeout"
    live.stop()
    started = time.perf_counter()
    again = serve(limits=LIMITS, use=slow_catalog, data_dir=tmp_path)
    assert time.perf_counter() - started < 10 * LIMIT, "the stopped call was not run again (it would take hours)"
    with again.client() as client:
        assert step(client, handle, "bump", {})["observation"]["result"] == 2, "the handle survives the restart"
        info = client.get(f"/sessions/{episode}").json()
        assert info["turns"] == 3
