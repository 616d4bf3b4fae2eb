"""`envc serve` over raw HTTP (httpx): OpenEnv's routes, the trainer's session routes,
multi-environment tasks, and clear errors for every kind of bad request."""

from __future__ import annotations

import importlib
import json
from typing import Any

import httpx
import pytest
from shipped import package_dir

from compiler.serve.catalog import Catalog, load_catalog
from compiler.serve.sessions import TASK_CHOICES, Limits

from .conftest import ServerFactory


def first_task(catalog: Catalog, envs: int = 1) -> dict[str, Any]:
    return dict(next(t for t in catalog.tasks.values() if len(t["envs"]) == envs))


def reset(client: httpx.Client, **body: Any) -> dict[str, Any]:
    response = client.post("/reset", json=body)
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    assert payload["reward"] is None and payload["done"] is False
    return payload["observation"]


def step(client: httpx.Client, episode_id: str, tool: str, arguments: Any = None) -> dict[str, Any]:
    action: dict[str, Any] = {"tool_name": tool}
    if arguments is not None:
        action["arguments"] = arguments
    response = client.post("/step", json={"episode_id": episode_id, "action": action})
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    assert payload["reward"] is None, "the agent's channel never carries a reward"
    return payload


def test_info_routes_speak_openenv(serve: ServerFactory, catalog: Catalog) -> None:
    live = serve()
    with live.client() as client:
        assert client.get("/health").json()["status"] == "healthy"
        metadata = client.get("/metadata").json()
        assert metadata["name"] == catalog.name and "Support ticketing" in metadata["description"]
        assert metadata["readme_content"] is None, "several environments: no one README"
        schema = client.get("/schema").json()
        assert set(schema) == {"action", "observation", "state"}
        assert "tool_name" in schema["action"]["required"]
        assert "ticketing__login" in schema["action"]["properties"]["tool_name"]["examples"]  # two envs served


def test_gold_calls_of_a_task_score_one_on_the_trainer_channel(serve: ServerFactory, catalog: Catalog) -> None:
    task = first_task(catalog)
    with serve().client() as client:
        observation = reset(client, task_id=task["id"], seed=5)
        assert observation["prompt"] == task["prompt"]
        assert [t["function"]["name"] for t in observation["tools"]] == [t["function"]["name"] for t in task["tools"]]
        episode = observation["episode_id"]
        for call in task["gold_calls"]:
            payload = step(client, episode, call["tool"], call["args"])
            assert payload["observation"]["infrastructure_error"] is None
        state = client.get("/state", params={"episode_id": episode}).json()
        assert state["episode_id"] == episode and state["step_count"] == len(task["gold_calls"])
        # ticketing's task families draw random values, so it keeps rng_state: the seed reseeds it
        assert state["seed_effect"] == {"ticketing": "reseeded"}
        score = client.post(f"/sessions/{episode}/score").json()
        assert score["scorable"] is True and score["reward"] == 1.0
        assert client.delete(f"/sessions/{episode}").json() == {"closed": episode}
        assert client.post(f"/sessions/{episode}/score").status_code == 404


def test_a_task_over_two_environments_routes_prefixed_tools(serve: ServerFactory, catalog: Catalog) -> None:
    task = first_task(catalog, envs=2)
    with serve().client() as client:
        episode = reset(client, task_id=task["id"])["episode_id"]
        for call in task["gold_calls"]:
            assert "__" in call["tool"]
            step(client, episode, call["tool"], call["args"])
        state = client.get(f"/sessions/{episode}").json()
        assert sorted(state["states"]) == sorted(task["envs"])
        assert client.post(f"/sessions/{episode}/score").json()["reward"] == 1.0
        unprefixed = call["tool"].split("__", 1)[1]
        payload = step(client, episode, unprefixed, call["args"])
        assert payload["done"] is True and payload["observation"]["ended"] == "invalid_call"


def test_an_inline_task_row_is_served_like_a_task_id(serve: ServerFactory, catalog: Catalog) -> None:
    """The trainer's POST /sessions takes a task row (the agent's /reset never does)."""
    task = first_task(catalog)
    live = serve()
    with live.client() as client:
        broken = {**task, "initial_state": {"ticketing": {"scenario": None, "changes": {"tickets": 7}}}}
        refused = client.post("/sessions", json={"task": broken})
        assert refused.status_code == 400 and "cannot start there" in refused.json()["error"]["message"]
        episode, handle = live.open_session(client, task=task)
        for call in task["gold_calls"]:
            step(client, handle, call["tool"], call["args"])
        assert client.post(f"/sessions/{episode}/score").json()["reward"] == 1.0


def test_fork_copies_the_state_and_diverges(serve: ServerFactory, catalog: Catalog) -> None:
    task = first_task(catalog)
    first, *rest = task["gold_calls"]
    live = serve()
    with live.client() as client:
        _, root = live.open_session(client, task_id=task["id"], episode_id="root")
        step(client, root, first["tool"], first["args"])
        forked = client.post("/sessions/root/fork", json={"episode_id": "branch"})
        assert forked.status_code == 201 and forked.json()["info"]["turns"] == 1
        assert forked.json()["handle"] not in (root, "branch"), "a fork gets its own handle"
        for call in rest:
            step(client, forked.json()["handle"], call["tool"], call["args"])
        assert client.post("/sessions/branch/score").json()["reward"] == 1.0
        assert client.post("/sessions/root/score").json()["reward"] == 0.0
        again = client.post("/sessions/root/fork", json={"episode_id": "branch"})
        assert again.status_code == 409 and again.json()["error"]["kind"] == "session_exists"


def test_reset_starts_over_and_reports_the_seed(serve: ServerFactory, catalog: Catalog) -> None:
    task = first_task(catalog)
    live = serve()
    with live.client() as client:
        episode, handle = live.open_session(client, task_id=task["id"])
        step(client, handle, task["gold_calls"][0]["tool"], task["gold_calls"][0]["args"])
        restarted = client.post(f"/sessions/{episode}/reset", json={"seed": 9}).json()
        assert restarted["info"]["turns"] == 0 and restarted["info"]["seed"] == 9
        assert restarted["info"]["handle"] == handle, "the trainer's reset keeps the handle it handed out"
        assert step(client, handle, "whoami")["observation"]["turns"] == 1


def test_scenario_sessions_have_no_score(serve: ServerFactory) -> None:
    with serve().client() as client:
        episode = reset(client, env="ticketing", scenario="help_desk_monday")["episode_id"]
        assert step(client, episode, "whoami")["observation"]["result"] == "alice"
        response = client.post(f"/sessions/{episode}/score")
        assert response.status_code == 409 and response.json()["error"]["kind"] == "no_task"


def test_load_options_reach_the_loader_and_the_journal(serve: ServerFactory, tmp_path: Any) -> None:
    """`options` on a scenario start is passed to the package's loader (bfcl_ticket takes
    BFCL's `long_context`), refused when ill-typed, and kept in the session's start, so a
    restarted server rebuilds the session with them."""
    from compiler.serve.catalog import load_catalog

    use = load_catalog([package_dir("bfcl_ticket")])
    live = serve(use=use, data_dir=tmp_path)
    with live.client() as client:
        episode = reset(client, env="bfcl_ticket", options={"long_context": True})["episode_id"]
        assert live.manager.get(episode).start.options == {"long_context": True}
        refused = client.post("/reset", json={"env": "bfcl_ticket", "options": {"long_context": "yes"}})
        assert refused.status_code == 400 and "long_context" in refused.json()["error"]["message"]
        task = {"task_id": "t", "options": {"long_context": True}}
        assert client.post("/reset", json=task).status_code in (400, 404)
    live.stop()
    again = serve(use=use, data_dir=tmp_path)
    assert again.manager.get(episode).start.options == {"long_context": True}


BAD_REQUESTS: list[tuple[str, str, Any, int, str]] = [
    ("/reset", "not JSON", b"{nope", 400, "malformed_request"),
    ("/reset", "JSON nested past the parser's depth", b"[" * 100_000, 400, "malformed_request"),
    ("/reset", "not UTF-8", b'{"env": "\xff"}', 400, "malformed_request"),
    ("/reset", "a misspelt seed", {"sead": 3}, 422, "invalid_request"),
    ("/reset", "a negative seed", {"seed": -1}, 422, "invalid_request"),
    ("/reset", "an unknown task", {"task_id": "task-none"}, 404, "unknown_task"),
    ("/reset", "an unknown environment", {"env": "nowhere"}, 400, "bad_request"),
    ("/reset", "an unknown scenario", {"env": "ticketing", "scenario": "nowhere"}, 400, "bad_request"),
    ("/sessions", "a bad episode id", {"env": "ticketing", "episode_id": "../etc/passwd"}, 400, "bad_request"),
    ("/sessions", "a task that is not a task", {"task": {"envs": "ticketing"}}, 400, "bad_request"),
    ("/sessions", "a task and a task id", {"task": {}, "task_id": "t"}, 400, "bad_request"),
    ("/sessions", "a handle of its own", {"env": "ticketing", "handle": "mine"}, 400, "bad_request"),
    ("/reset", "an inline task", {"task": {"envs": ["ticketing"]}}, 403, "trainer_only"),
    ("/reset", "a turn limit", {"env": "ticketing", "max_turns": 10**9}, 403, "trainer_only"),
    ("/reset", "an episode id", {"env": "ticketing", "episode_id": "mine"}, 403, "trainer_only"),
    ("/reset", "a handle beside a start", {"handle": "hd-x", "env": "ticketing"}, 400, "bad_request"),
    ("/reset", "an unknown handle", {"handle": "hd-x"}, 404, "unknown_session"),
    ("/reset", "an unknown load option", {"env": "ticketing", "options": {"wide": 1}}, 400, "bad_request"),
    ("/reset", "load options that are not an object", {"env": "ticketing", "options": [1]}, 422, "invalid_request"),
    ("/step", "no action", {"episode_id": "x"}, 422, "invalid_request"),
    ("/step", "no episode", {"action": {"tool_name": "whoami"}}, 422, "invalid_request"),
    ("/step", "an unknown episode", {"episode_id": "x", "action": {"tool_name": "whoami"}}, 404, "unknown_session"),
    ("/step", "an action of another shape", {"episode_id": "x", "action": {"tool": "whoami"}}, 422, "invalid_request"),
    ("/step", "a JSON list", [1, 2], 422, "invalid_request"),
    (
        "/step",
        "a time limit",
        {"episode_id": "x", "action": {"tool_name": "whoami"}, "timeout_s": 1e-9},
        403,
        "trainer_only",
    ),
    ("/sessions/x/fork", "an unknown episode", {}, 404, "unknown_session"),
    ("/sessions/x/score", "an unknown episode", {}, 404, "unknown_session"),
]


@pytest.mark.parametrize(("path", "case", "body", "status", "kind"), BAD_REQUESTS, ids=[c[1] for c in BAD_REQUESTS])
def test_bad_requests_get_clear_json_errors(
    serve: ServerFactory, path: str, case: str, body: Any, status: int, kind: str
) -> None:
    live = serve(limits=Limits(max_sessions=2, idle_timeout=None, call_timeout=5.0))
    with live.client() as client:
        sent = client.post(path, content=body) if isinstance(body, bytes) else client.post(path, json=body)
        assert sent.status_code == status, sent.text
        assert sent.json()["error"]["kind"] == kind
        assert sent.json()["error"]["message"]
        assert client.get("/health").json()["active_sessions"] == 0, "a refused request opened nothing"


def test_an_unknown_task_id_is_its_own_error_naming_the_served_tasks(serve: ServerFactory, catalog: Catalog) -> None:
    """Not `unknown_session`: the request named no session. The error names the id and the
    served task ids to choose from, on OpenEnv's /reset and on the trainer's /sessions."""
    with serve().client() as client:
        for path in ("/reset", "/sessions"):
            sent = client.post(path, json={"task_id": "task-none"})
            assert sent.status_code == 404, sent.text
            error = sent.json()["error"]
            assert error["kind"] == "unknown_task" and "`task-none`" in error["message"]
            assert error["task_id"] == "task-none" and error["served_tasks"] == len(catalog.tasks)
            assert error["choices"] == sorted(catalog.tasks) and all(t in error["message"] for t in catalog.tasks)
        assert client.get("/health").json()["active_sessions"] == 0, "a refused request opened nothing"


def test_an_unknown_task_id_among_many_lists_some_and_says_where_the_ids_are(
    serve: ServerFactory, catalog: Catalog
) -> None:
    task = first_task(catalog)
    many = Catalog(envs=catalog.envs, tasks={f"task-{n:02d}": {**task, "id": f"task-{n:02d}"} for n in range(25)})
    with serve(use=many).client() as client:
        error = client.post("/reset", json={"task_id": "task-99"}).json()["error"]
    assert error["kind"] == "unknown_task" and error["served_tasks"] == 25
    assert error["choices"] == [f"task-{n:02d}" for n in range(TASK_CHOICES)]
    assert "25 tasks" in error["message"] and "tasks.jsonl" in error["message"]
    assert "task-24" not in error["message"]


def test_a_server_without_task_sets_says_so_for_a_task_id(serve: ServerFactory, catalog: Catalog) -> None:
    with serve(use=Catalog(envs=catalog.envs)).client() as client:
        sent = client.post("/reset", json={"task_id": "task-none"})
    assert sent.status_code == 404 and sent.json()["error"]["choices"] == []
    assert "without a task set" in sent.json()["error"]["message"]


def test_state_without_an_episode_and_unknown_routes(serve: ServerFactory) -> None:
    with serve().client() as client:
        assert client.get("/state").status_code == 400
        missing = client.get("/no/such/route")
        assert missing.status_code == 404 and missing.json()["error"]["kind"] == "http"


def test_hostile_arguments_of_the_generated_tests_change_nothing(serve: ServerFactory, catalog: Catalog) -> None:
    package = catalog.envs["ticketing"].package
    cases = importlib.import_module(f"{package.__name__}.tests.test_environment").BAD_ARGUMENTS
    live = serve()
    with live.client() as client:
        episode, handle = live.open_session(client, env="ticketing", scenario="help_desk_monday", max_turns=10_000)
        before = client.get(f"/sessions/{episode}").json()["states"]
        for tool, case, args in cases:
            payload = step(client, handle, tool, args)
            result = payload["observation"]["result"]
            assert result["error"]["kind"] == "invalid_argument", f"{tool}: {case}: {result}"
            assert payload["done"] is False and payload["observation"]["domain_error"] is True
        assert client.get(f"/sessions/{episode}").json()["states"] == before


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ("{not json", "arguments that are not JSON"),
        ([1, 2], "arguments that are a list"),
        ("[1]", "JSON text of a list"),
    ],
)
def test_an_invalid_call_ends_the_episode_unsuccessfully(
    serve: ServerFactory, catalog: Catalog, arguments: Any, why: str
) -> None:
    task = first_task(catalog)
    with serve().client() as client:
        episode = reset(client, task_id=task["id"])["episode_id"]
        action = {"tool_name": "whoami", "arguments": arguments}
        response = client.post("/step", json={"episode_id": episode, "action": action})
        payload = response.json()  # a list too: the agent's call, not a malformed request
        assert payload["done"] is True and payload["observation"]["ended"] == "invalid_call", why
        refused = client.post("/step", json={"episode_id": episode, "action": {"tool_name": "whoami"}})
        assert refused.status_code == 409 and refused.json()["error"]["kind"] == "episode_over"
        assert client.post(f"/sessions/{episode}/score").json() == {
            "episode_id": episode,
            "turns": 1,
            "ended": "invalid_call",
            "scorable": True,
            "reward": 0.0,
        }


def test_the_turn_limit_truncates(serve: ServerFactory, catalog: Catalog) -> None:
    live = serve()
    with live.client() as client:
        _, handle = live.open_session(client, env="ticketing", max_turns=2)
        assert step(client, handle, "whoami")["done"] is False
        last = step(client, handle, "whoami")
        assert last["done"] is True and last["observation"]["ended"] == "turn_limit"


def test_capacity_full_is_a_503_with_its_reason(serve: ServerFactory) -> None:
    live = serve(limits=Limits(max_sessions=1, idle_timeout=None, call_timeout=5.0, max_agent_sessions=2))
    with live.client() as client:
        ids = [reset(client, env="ticketing")["episode_id"] for _ in range(2)]
        full = client.post("/reset", json={"env": "ticketing"})
        assert full.status_code == 503 and full.headers["retry-after"] == "1"
        error = full.json()["error"]
        assert error["kind"] == "capacity" and error["pool"] == "agent"
        assert error["max_sessions"] == 2 and error["active_sessions"] == 2
        client.delete(f"/sessions/{ids[0]}")
        assert client.post("/reset", json={"env": "ticketing"}).status_code == 200
        live.open_session(client, env="ticketing")
        trainer_full = client.post("/sessions", json={"env": "ticketing"})
        assert trainer_full.status_code == 503 and trainer_full.json()["error"]["pool"] == "trainer"
        health = client.get("/health").json()
        assert (health["agent_sessions"], health["trainer_sessions"], health["active_sessions"]) == (2, 1, 3)


def test_a_trainer_token_closes_the_session_routes(serve: ServerFactory, catalog: Catalog) -> None:
    live = serve(trainer_token="s3cret")
    with live.client() as client:
        episode = reset(client, env="ticketing")["episode_id"]
        denied = client.post(f"/sessions/{episode}/score")
        assert denied.status_code == 403 and denied.json()["error"]["kind"] == "forbidden"
        assert client.get("/sessions", headers={"Authorization": "Bearer wrong"}).status_code == 403
        allowed = client.get("/sessions", headers={"Authorization": "Bearer s3cret"})
        assert [s["episode_id"] for s in allowed.json()["sessions"]] == [episode]


def test_a_body_past_the_limit_is_refused_unread(serve: ServerFactory) -> None:
    from compiler.serve.http import MAX_BODY_BYTES

    with serve().client() as client:
        response = client.post("/reset", content=b"{" + b" " * MAX_BODY_BYTES + b"}")
        assert response.status_code == 413 and response.json()["error"]["kind"] == "too_large"


def test_the_reset_says_what_the_seed_did(serve: ServerFactory) -> None:
    """An environment with random state (ticketing's task families draw random values) is
    reseeded; one that draws no random numbers (bfcl_ticket) says the seed had no effect."""
    with serve().client() as client:
        observation = reset(client, env="ticketing", seed=11)
        assert observation["seed_effect"] == {"ticketing": "reseeded"}
        assert reset(client, env="ticketing")["seed_effect"] == {"ticketing": "no seed given"}
    plain = load_catalog([package_dir("bfcl_ticket")])
    with serve(use=plain).client() as client:
        observation = reset(client, env="bfcl_ticket", seed=11)
        assert observation["seed_effect"] == {"bfcl_ticket": "none: this environment draws no random numbers"}
        assert reset(client, env="bfcl_ticket")["seed_effect"] == {"bfcl_ticket": "no seed given"}


def test_the_agents_state_route_shows_no_environment_state(serve: ServerFactory, catalog: Catalog) -> None:
    task = first_task(catalog)
    with serve().client() as client:
        episode = reset(client, task_id=task["id"])["episode_id"]
        state = client.get("/state", params={"episode_id": episode}).json()
        assert "states" not in state and "gold_calls" not in json.dumps(state)
        assert set(client.get(f"/sessions/{episode}").json()["states"]) == {"ticketing"}


def test_one_served_environment_shows_its_readme(serve: ServerFactory, catalog: Catalog) -> None:
    only = Catalog(envs={"ticketing": catalog.envs["ticketing"]})
    with serve(use=only).client() as client:
        metadata = client.get("/metadata").json()
        assert metadata["name"] == "ticketing" and "ticketing" in (metadata["readme_content"] or "").lower()
        assert reset(client)["tools"], "one environment served: `env` may be left out"
