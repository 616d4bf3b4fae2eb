"""LLM-written task requests (compiler/synth/model_requests.py) against a real loopback chat server
with scripted replies: accepted requests pass every audit and are locked, a request that
fails an audit is healed or the task rejected with the reason, the rubric grades each
request, and a rerun from the lock sends nothing and gives the same bytes."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.build import pipeline
from compiler.build.packages import package_in
from compiler.llm.config import LLMConfig
from compiler.llm.lock import read_lock
from compiler.llm.provider import OpenAIProvider
from compiler.synth import audits, task_build, tasks
from compiler.synth import model_requests as llm_tasks
from compiler.synth.sample import SampleEnv, load_env

from .chat_server import ChatServer, Reply
from .conftest import SECRET

ROOT = Path(__file__).resolve().parent.parent.parent
GOOD_GRADE = json.dumps({"clarity": 5, "consistency": 5, "solvability": 4, "naturalness": 5, "reason": "clear"})
Respond = Callable[[dict[str, Any]], Reply]


@pytest.fixture(scope="module")
def ticketing() -> SampleEnv:
    env = analyse_file(spec_path("ticketing")).environment
    assert env is not None
    return load_env(env, package_dir("ticketing"))


@pytest.fixture
def envs(ticketing: SampleEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, SampleEnv]:
    """Ticketing, its spec path moved into tmp_path, so envc.lock is written there."""
    monkeypatch.setenv("ENVC_TEST_KEY", SECRET)
    model = ticketing.model.model_copy(update={"path": str(tmp_path / "ticketing.envspec")})
    return {"ticketing": dataclasses.replace(ticketing, model=model)}


@pytest.fixture
def computing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, SampleEnv]:
    """cicd_pipeline (its checks expect run ids and timestamps the environment computes),
    spec path in tmp_path."""
    monkeypatch.setenv("ENVC_TEST_KEY", SECRET)
    env = analyse_file(spec_path("cicd_pipeline")).environment
    assert env is not None
    loaded = load_env(env, package_dir("cicd_pipeline"))
    model = loaded.model.model_copy(update={"path": str(tmp_path / "cicd_pipeline.envspec")})
    return {"cicd_pipeline": dataclasses.replace(loaded, model=model)}


def config(url: str, **settings: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "model": "scripted-model",
        "base_url": url,
        "api_key_env": "ENVC_TEST_KEY",
        "timeout": 5.0,
        "retries": 0,
        "backoff": 0.01,
        "attempts": 3,
        "stream": False,
        **settings,
    }
    return LLMConfig(**values)


def brief(body: dict[str, Any]) -> dict[str, Any]:
    brief_json: dict[str, Any] = json.loads(body["messages"][1]["content"])
    return brief_json


def is_rubric(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == llm_tasks.RUBRIC_SYSTEM


def script(
    request: Callable[[dict[str, Any], int], str], grade: Callable[[int], str] = lambda _n: GOOD_GRADE
) -> Respond:
    """Replies by kind: requests from `request(brief, attempt)`, grades from `grade(attempt)`."""

    def respond(body: dict[str, Any]) -> Reply:
        attempt = (len(body["messages"]) - 2) // 2 + 1
        if is_rubric(body):
            return Reply(grade(attempt))
        return Reply(request(brief(body), attempt))

    return respond


def friendly(data: dict[str, Any], _attempt: int) -> str:
    return "Hello! " + data["goal"]


def run(
    envs: dict[str, SampleEnv], writer: llm_tasks.LLMRequests, count: int = 3, seed: int = 4
) -> tuple[list[dict[str, Any]], tasks.Report]:
    options = task_build.TaskOptions(tasks=count, seed=seed)
    return tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False, requests=writer)


@pytest.fixture
def served() -> Iterator[Callable[[Respond], ChatServer]]:
    servers: list[ChatServer] = []

    def start(respond: Respond) -> ChatServer:
        server = ChatServer(respond).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def test_accepted_requests_pass_the_audits_and_a_rerun_from_the_lock_is_offline(
    envs: dict[str, SampleEnv], served: Callable[[Respond], ChatServer], tmp_path: Path
) -> None:
    server = served(script(friendly))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    kept, report = run(envs, writer)
    assert len(kept) == 3 and all(t["prompt"].startswith("Hello! ") for t in kept)
    assert all(t["source"]["request"] == "llm:scripted-model" for t in kept)
    summary = report.to_json()
    assert summary["audit_pass_rates"]["rubric"] > 0 and summary["llm"]["accepted_per_attempt"] == {"1": 3}
    assert writer.write_locks() == [tmp_path / "envc.lock"]
    lock, problems = read_lock(tmp_path / "envc.lock")
    decls = lock.entries["ticketing.envspec"]
    assert not problems and len([d for d in decls if d.startswith(llm_tasks.REQUEST_DECL)]) == 3
    assert len([d for d in decls if d.startswith(llm_tasks.RUBRIC_DECL)]) == 3
    assert SECRET not in (tmp_path / "envc.lock").read_text(encoding="utf-8")
    sent = len(server.requests)
    again = llm_tasks.LLMRequests(config(server.url), None)  # offline: the lock or nothing
    rerun, _ = run(envs, again)
    assert tasks.tasks_to_jsonl(rerun) == tasks.tasks_to_jsonl(kept)
    assert len(server.requests) == sent and again.stats.from_lock == 3


def test_a_request_missing_a_value_is_healed_on_attempt_2(
    envs: dict[str, SampleEnv], served: Callable[[Respond], ChatServer], tmp_path: Path
) -> None:
    server = served(script(lambda data, n: "Please deal with the tickets." if n == 1 else friendly(data, n)))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    kept, _ = run(envs, writer, count=2)
    # a task with nothing to name (`logout`) passes at once; the others only when healed
    assert len(kept) == 2 and writer.stats.accepted.get(2, 0) >= 1
    assert writer.stats.failures == {"names_every_value": writer.stats.accepted[2]}
    healing = [r.body for r in server.requests if not is_rubric(r.body) and len(r.body["messages"]) == 4]
    assert healing and "names_every_value" in healing[0]["messages"][3]["content"]
    writer.write_locks()
    lock, _ = read_lock(tmp_path / "envc.lock")
    entries = [e for d, e in lock.entries["ticketing.envspec"].items() if d.startswith(llm_tasks.REQUEST_DECL)]
    entry = next(e for e in entries if e.attempt == 2)
    assert (
        entry.accepted_request_sha != entry.request_sha
        and entry.provenance["attempts"][0]["failure"] == "names_every_value"
    )


def test_a_request_holding_a_python_body_is_refused_and_counted(
    envs: dict[str, SampleEnv], served: Callable[[Respond], ChatServer]
) -> None:
    def escape(data: dict[str, Any], attempt: int) -> str:
        return 'python """\nimport os\n"""' if attempt == 1 else friendly(data, attempt)

    server = served(script(escape))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    kept, _ = run(envs, writer, count=2)
    assert len(kept) == 2 and writer.stats.failures == {"escape_hatch": 2} and writer.stats.accepted == {2: 2}
    healing = [r.body for r in server.requests if not is_rubric(r.body) and len(r.body["messages"]) == 4]
    assert "escape_hatch: the request holds a `python` body" in healing[0]["messages"][3]["content"]
    assert all("python" not in t["prompt"] for t in kept)


def test_a_request_that_gives_away_a_computed_value_is_rejected_with_the_reason(
    computing: dict[str, SampleEnv], served: Callable[[Respond], ChatServer]
) -> None:
    envs = computing

    def leak(data: dict[str, Any], _attempt: int) -> str:
        hidden = data["must_not_name"]
        extra = f" It will get {json.dumps(hidden[0])}." if hidden else ""
        return data["goal"] + extra

    server = served(script(leak))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    options = task_build.TaskOptions(tasks=20, seed=4)
    kept, report = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False, requests=writer)
    assert report.rejected["llm_request"] >= 1
    assert writer.stats.failures.get("information_separation", 0) >= 3  # every attempt of a rejected task
    assert all(not audits.computed_values(t, envs) for t in kept)  # kept: only tasks with nothing to give away


def test_a_low_rubric_grade_rejects_the_task_with_the_reason(
    envs: dict[str, SampleEnv], served: Callable[[Respond], ChatServer]
) -> None:
    low = json.dumps(
        {"clarity": 2, "consistency": 5, "solvability": 5, "naturalness": 5, "reason": "vague about which ticket"}
    )
    server = served(script(friendly, lambda _n: low))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    task = _one_audited_task(envs)
    with pytest.raises(audits.AuditFailed) as failed:
        writer.rewrite(task, envs)
    assert failed.value.audit == "rubric" and "graded 2 of 5" in failed.value.why and "vague" in failed.value.why


def test_malformed_replies_are_retried_then_rejected(
    envs: dict[str, SampleEnv], served: Callable[[Respond], ChatServer]
) -> None:
    server = served(script(lambda _data, _n: "", lambda _n: "looks fine to me"))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    task = _one_audited_task(envs)
    with pytest.raises(audits.AuditFailed) as failed:
        writer.rewrite(task, envs)
    assert failed.value.audit == "llm_request" and "malformed" in failed.value.why
    assert writer.stats.asked == {1: 1, 2: 1, 3: 1}
    grader = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    server.respond = script(friendly, lambda _n: "looks fine to me")
    with pytest.raises(audits.AuditFailed) as graded:
        grader.rewrite(task, envs)
    assert graded.value.audit == "rubric" and "no rubric grade in 3 replies" in graded.value.why


def test_offline_without_a_lock_entry_rejects_and_a_failing_endpoint_stops_the_run(
    envs: dict[str, SampleEnv], served: Callable[[Respond], ChatServer]
) -> None:
    task = _one_audited_task(envs)
    with pytest.raises(audits.AuditFailed) as failed:
        llm_tasks.LLMRequests(config("http://127.0.0.1:9/v1"), None).rewrite(task, envs)
    assert "not in envc.lock, and offline" in failed.value.why
    server = served(lambda _body: Reply(status=500, raw=b'{"error": {"message": "boom"}}'))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    with pytest.raises(llm_tasks.LLMTaskError, match="server"):
        writer.rewrite(task, envs)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('"Close ticket 2, please."', "Close ticket 2, please."),
        ("Sure:\n```text\nClose   ticket 2.\n```", "Close ticket 2."),
        ("", None),
        ("x" * 3000, None),
    ],
)
def test_extract_request(reply: str, expected: str | None) -> None:
    assert llm_tasks.extract_request(reply) == expected


def test_parse_grade_needs_four_scores_from_1_to_5() -> None:
    assert llm_tasks.parse_grade('{"clarity": 5, "consistency": 4, "solvability": 4}') is None  # no naturalness
    assert (
        llm_tasks.parse_grade('ok {"clarity": 5, "consistency": 4, "solvability": 4, "naturalness": 4}')["clarity"] == 5
    )  # type: ignore[index]
    assert llm_tasks.parse_grade('{"clarity": 6, "consistency": 4, "solvability": 4, "naturalness": 4}') is None
    assert llm_tasks.parse_grade('{"clarity": true, "consistency": 4, "solvability": 4, "naturalness": 4}') is None
    assert llm_tasks.parse_grade("[1, 2]") is None


def _one_audited_task(envs: dict[str, SampleEnv]) -> dict[str, Any]:
    options = task_build.TaskOptions(tasks=1, seed=4)
    kept, _ = tasks.synthesise(tasks.sampler_for(envs, options), options, declared=False)
    return kept[0]


def test_writer_for_reads_the_project_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .conftest import pyproject

    (tmp_path / "pyproject.toml").write_text(pyproject("http://127.0.0.1:9/v1"), encoding="utf-8")
    writer = llm_tasks.writer_for(tmp_path)
    assert writer.config.model == "scripted-model" and writer.provider is not None
    assert llm_tasks.writer_for(tmp_path, offline=True).provider is None
    assert writer.summary()["offline"] is False
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    with pytest.raises(llm_tasks.LLMTaskError, match="names no `model`"):
        llm_tasks.writer_for(tmp_path)


def test_a_workspace_task_request_must_name_its_output_path(
    tmp_path: Path, served: Callable[[Respond], ChatServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVC_TEST_KEY", SECRET)
    env = analyse_file(spec_path("claw_workspace")).environment
    assert env is not None
    out = tmp_path / "packages"  # compiled here: the spec's families are part of the package
    pipeline.compile_specs([spec_path("claw_workspace")], pipeline.Options(out, ROOT, qc=False))
    loaded = load_env(env, package_in(out, "claw_workspace"))  # out/claw/spreadsheets/, as specs/
    claw = {
        "claw_workspace": dataclasses.replace(
            loaded, model=loaded.model.model_copy(update={"path": str(tmp_path / "c.envspec")})
        )
    }
    options = task_build.TaskOptions(tasks=8, seed=5)
    task = next(
        t
        for t in tasks.synthesise(tasks.sampler_for(claw, options), options, declared=False)[0]
        if t["source"].get("family") == "monthly_scores"
    )
    output = task["workspace"]["outputs"][0]
    values = task["source"]["values"]
    named = f'Compute the {values["month_name"]} 2025 scores of the {values["plant"]} plant into "{output}".'
    server = served(script(lambda data, n: "Work out this month's scores." if n == 1 else named))
    writer = llm_tasks.LLMRequests(config(server.url), OpenAIProvider(config(server.url)))
    rewritten = writer.rewrite(task, claw)
    assert rewritten["prompt"] == named and rewritten["workspace"] == task["workspace"]
    assert writer.stats.failures == {"names_every_value": 1}  # the first reply named no output path
