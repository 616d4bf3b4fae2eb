"""Infrastructure failures are reported as such, never as reward 0: a tool call past the
per-call time limit, and an environment that fails inside a tool. The faults are
injected into the real generated package (a subclass of its Environment), as the
generated tests inject theirs."""

from __future__ import annotations

import dataclasses
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest

from compiler.serve.catalog import Catalog
from compiler.serve.sessions import Limits

from .conftest import ServerFactory

RELEASE = threading.Event()
"""Holds the stalled tool until the test lets it finish."""


def faulty_catalog(catalog: Catalog) -> Catalog:
    """The test catalog, with ticketing's `whoami` stalling and `logout` crashing."""
    real = catalog.envs["ticketing"]
    package = types.ModuleType(f"{real.package.__name__}_faulty")
    vars(package).update(vars(real.package))

    class Faulty(real.package.Environment):  # type: ignore[name-defined,misc]
        def whoami(self) -> Any:
            RELEASE.wait(timeout=30)
            return super().whoami()

        def logout(self) -> Any:
            raise RuntimeError("the disk under the environment vanished")

    def open_environment(
        scenario: str | None, changes: Any = None, seed: int | None = None, options: Any = None
    ) -> tuple[Any, Any]:
        env, effect = real.package.open_environment(scenario, changes, seed, options)
        return Faulty(env.state()), effect

    package.Environment = Faulty  # type: ignore[attr-defined]
    package.open_environment = open_environment  # type: ignore[attr-defined]
    envs = {**catalog.envs, "ticketing": dataclasses.replace(real, package=package)}
    return Catalog(envs=envs, tasks=catalog.tasks)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    RELEASE.clear()
    yield RELEASE
    RELEASE.set()  # let the stalled worker thread finish


def task_of(catalog: Catalog) -> dict[str, Any]:
    return dict(next(t for t in catalog.tasks.values() if t["envs"] == ["ticketing"]))


def test_a_call_past_the_time_limit_is_an_infrastructure_error(
    serve: ServerFactory, catalog: Catalog, release: threading.Event
) -> None:
    live = serve(limits=Limits(max_sessions=4, idle_timeout=None, call_timeout=0.2), use=faulty_catalog(catalog))
    with live.client() as client:
        episode = client.post("/reset", json={"task_id": task_of(catalog)["id"]}).json()["observation"]["episode_id"]
        payload = client.post("/step", json={"episode_id": episode, "action": {"tool_name": "whoami"}}).json()
        observation = payload["observation"]
        assert payload["done"] is True and payload["reward"] is None
        assert observation["ended"] == "infrastructure" and "0.2 s" in observation["infrastructure_error"]
        assert observation["result"]["error"]["kind"] == "timeout"
        score = client.post(f"/sessions/{episode}/score").json()
        assert score["scorable"] is False and score["reward"] is None and score["infrastructure_error"]
        refused = client.post("/step", json={"episode_id": episode, "action": {"tool_name": "login"}})
        assert refused.status_code == 409 and refused.json()["error"]["infrastructure_error"]
        release.set()
        assert client.get("/health").json()["status"] == "healthy", "the server goes on serving"


def test_the_agent_cannot_shorten_a_calls_time_limit(
    serve: ServerFactory, catalog: Catalog, release: threading.Event
) -> None:
    """`timeout_s` on /step would let the agent break its own episode (unscorable instead
    of scored 0): it is refused, the call never runs, and the episode stays scorable."""
    live = serve(limits=Limits(max_sessions=4, idle_timeout=None, call_timeout=30.0), use=faulty_catalog(catalog))
    with live.client() as client:
        episode = client.post("/reset", json={"task_id": task_of(catalog)["id"]}).json()["observation"]["episode_id"]
        body = {"episode_id": episode, "action": {"tool_name": "whoami"}, "timeout_s": 0.1}
        refused = client.post("/step", json=body)
        assert refused.status_code == 403 and refused.json()["error"]["kind"] == "trainer_only"
        assert client.get(f"/sessions/{episode}").json()["turns"] == 0
        assert client.post(f"/sessions/{episode}/score").json()["scorable"] is True


def test_an_environment_failure_is_not_scored(serve: ServerFactory, catalog: Catalog) -> None:
    live = serve(use=faulty_catalog(catalog))
    with live.client() as client:
        episode = client.post("/reset", json={"task_id": task_of(catalog)["id"]}).json()["observation"]["episode_id"]
        payload = client.post("/step", json={"episode_id": episode, "action": {"tool_name": "logout"}}).json()
        assert payload["done"] is True and payload["observation"]["result"]["error"]["kind"] == "internal"
        assert "failed in `logout`" in payload["observation"]["infrastructure_error"]
        score = client.post(f"/sessions/{episode}/score").json()
        assert score == {
            "episode_id": episode,
            "turns": 1,
            "ended": None,
            "scorable": False,
            "reward": None,
            "infrastructure_error": payload["observation"]["infrastructure_error"],
        }


def test_the_idle_reaper_spares_a_session_in_a_call(
    serve: ServerFactory, catalog: Catalog, release: threading.Event
) -> None:
    live = serve(limits=Limits(max_sessions=4, idle_timeout=0.1, call_timeout=5.0), use=faulty_catalog(catalog))
    with live.client() as client:
        body = {"env": "ticketing", "scenario": "help_desk_monday"}
        episode = client.post("/reset", json=body).json()["observation"]["episode_id"]
        timer = threading.Timer(0.6, release.set)  # several reaper rounds while the call runs
        timer.start()
        payload = client.post("/step", json={"episode_id": episode, "action": {"tool_name": "whoami"}}).json()
        timer.join()
        assert payload["observation"]["result"] == "alice" and payload["observation"]["infrastructure_error"] is None
