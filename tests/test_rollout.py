"""`envc rollout` (compiler/run/rollout.py, compiler/cli/rollout.py) against a real
OpenAI-compatible endpoint on loopback: a chat-completions server in a thread playing
scripted policies chosen by the request's `model` (gold, do-nothing, malformed tool
calls, a crash mid-episode, a slow reply, a domain error it recovers from, ...)."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from shipped import package_dir, spec_path

from compiler.analyse import analyse_file
from compiler.cli import app as cli_module
from compiler.llm.config import LLMConfig
from compiler.run import calibrate, rollout, scale
from compiler.synth import export, task_build, tasks
from compiler.synth.sample import SampleEnv, load_env

ROOT = Path(__file__).resolve().parent.parent
SPEC = spec_path("ticketing")
SECRET = "sk-rollout-test-secret-0123456789"


# --------------------------------------------------------------------------- the endpoint


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


HOSTILE_REPLIES: list[tuple[str, str]] = [
    ("login", '{"username": "\ud800", "password": "p"}'),  # a lone surrogate in the arguments' text
    ("get_ticket", '{"ticket_id": ' + deep(600) + "}"),  # parses; nested past MAX_DEPTH
    ("get_ticket", '{"ticket_id": NaN}'),  # not JSON
    ("get_ticket", '{"ticket_id": 1' + "0" * 4000 + "}"),  # parses; past MAX_INT
    ("", ""),  # no call: a text reply with a lone surrogate
]
"""The `hostile` script's first reply, per task (by the task's position)."""


class ScriptedEndpoint:
    """A chat-completions server on 127.0.0.1 whose `model` names the script it plays.

    Scripts see the conversation and answer with the next assistant message: `gold`
    replays the task's gold calls one per reply, then stops; `nothing` answers in text;
    `bad-json`, `unknown-tool`, `array-args` make one malformed call; `crash` (HTTP 500)
    and `drop` (connection closed) fail after the first gold call; `slow` waits past the
    task's timeout; `refuse` answers every request with HTTP 400 (quoting the key sent); `recover` makes a call the environment refuses, then plays gold;
    `loop` calls a read tool forever; `coin` plays gold when the request's seed is even
    and nothing otherwise. Every reply waits `delay` seconds first (benchmarks/
    rollout_throughput.py plays a model's latency so); every request body is kept in
    `requests`."""

    def __init__(self, task_rows: list[dict[str, Any]], delay: float = 0.0) -> None:
        self.delay = delay
        self.by_prompt = {t["prompt"]: t for t in task_rows}
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with endpoint.lock:
                    endpoint.requests.append(body)
                endpoint.answer(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body["messages"]
        task = self.by_prompt[messages[0]["content"]]
        done = sum(m["role"] == "tool" for m in messages)
        gold = [(c["tool"], json.dumps(c["args"])) for c in task["gold_calls"]]
        script = body["model"]
        if script == "refuse":  # echoing the key, as careless servers do
            message = f"this model does not take tools (you sent {handler.headers['Authorization']})"
            return self.send(handler, {"error": {"message": message}}, 400)
        if script == "crash" and done >= 1:
            return self.send(handler, {"error": {"message": "the model server fell over"}}, 500)
        if script == "drop" and done >= 1:
            handler.close_connection = True
            handler.connection.close()
            return None
        if script == "slow":
            self.stopping.wait(3.0)
        elif self.delay:
            self.stopping.wait(self.delay)
        call: tuple[str, Any] | None = None
        if script in ("gold", "crash", "drop", "slow") or (script == "coin" and body.get("seed", 1) % 2 == 0):
            call = gold[done] if done < len(gold) else None
        elif script == "recover":
            call = ("get_ticket", json.dumps({"ticket_id": 987654})) if done == 0 else (gold + [None])[done - 1]  # type: ignore[list-item]
        elif script == "loop":
            call = ("whoami", "{}")
        elif script == "hostile":  # per task: what a hostile model may write; then it stops
            index = list(self.by_prompt).index(messages[0]["content"])
            call = HOSTILE_REPLIES[index % len(HOSTILE_REPLIES)] if done == 0 else None
            if call is not None and call[0] == "":  # a text reply holding a lone surrogate
                call = None
        elif script in ("bad-json", "unknown-tool", "array-args"):
            call = {"bad-json": ("whoami", '{"oops"'), "unknown-tool": ("launch_rockets", "{}")}.get(
                script, ("whoami", "[1, 2]")
            )
        message: dict[str, Any] = {"role": "assistant", "content": "All done." if call is None else None}
        if script == "hostile" and call is None and done == 0:
            message["content"] = "All done \ud800."
        if call is not None:
            name, arguments = call
            message["tool_calls"] = [
                {"id": f"call_{done}", "type": "function", "function": {"name": name, "arguments": arguments}}
            ]
        choice = {"index": 0, "message": message, "finish_reason": "stop" if call is None else "tool_calls"}
        reply = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": script, "choices": [choice]}
        self.send(handler, reply, 200)

    def send(self, handler: BaseHTTPRequestHandler, payload: dict[str, Any], status: int) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:  # the client gave up (the slow script)
            pass


def config_for(endpoint: ScriptedEndpoint, model: str, **settings: Any) -> LLMConfig:
    return LLMConfig(model=model, base_url=endpoint.url, retries=1, backoff=0.01, timeout=10.0, **settings)


# --------------------------------------------------------------------------- fixtures


def ticketing_envs() -> dict[str, SampleEnv]:
    """The committed ticketing package, as calibration and rollouts load environments."""
    env = analyse_file(SPEC).environment
    assert env is not None
    return {env.header.name: load_env(env, package_dir(env.header.name))}


def ticketing_tasks(envs: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    """Five audited ticketing tasks with distinct prompts (the endpoint tells them apart by prompt)."""
    options = task_build.TaskOptions(tasks=5, seed=1)
    rows, report = tasks.synthesise(tasks.sampler_for(envs, options), options)
    assert report.kept == 5
    assert len({r["prompt"] for r in rows}) == 5
    return rows


@pytest.fixture(scope="module")
def envs() -> dict[str, SampleEnv]:
    return ticketing_envs()


@pytest.fixture(scope="module")
def task_rows(envs: dict[str, SampleEnv]) -> list[dict[str, Any]]:
    return ticketing_tasks(envs)


@pytest.fixture(scope="module")
def endpoint(task_rows: list[dict[str, Any]]) -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint(task_rows) as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def run_model(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint, model: str, k: int = 1
) -> list[dict[str, Any]]:
    return rollout.rollout(task_rows, envs, config_for(endpoint, model), k, executor=scale.LocalExecutor(envs, 4))


# --------------------------------------------------------------------------- policies


def test_gold_replayed_as_tool_calls_passes_every_task(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    rows = run_model(task_rows, envs, endpoint, "gold", k=2)
    assert [(r["task_id"], r["sample"]) for r in rows] == [(t["id"], i) for t in task_rows for i in range(2)]
    for row, task in zip(rows, [t for t in task_rows for _ in range(2)]):
        assert (row["ended"], row["scorable"], row["passed"], row["reward"]) == ("done", True, True, 1.0)
        assert [(c["tool"], c["arguments"]) for c in row["calls"]] == [
            (c["tool"], c["args"]) for c in task["gold_calls"]
        ]
        assert row["turns"] == len(task["gold_calls"]) and row["requests"] == row["turns"] + 1
        assert len(row["results"]) == row["turns"] and row["score"]["passed"] is True
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["user"] + ["assistant", "tool"] * row["turns"] + ["assistant"]
        assert row["messages"][0]["content"] == task["prompt"] and row["schema"] == rollout.SCHEMA
        assert json.loads(row["messages"][2]["content"]) == row["results"][0]
        assert set(row["timings"]) == {"total_s", "model_s", "env_s"}
    sent = next(r for r in endpoint.requests if r["messages"][0]["content"] == task_rows[0]["prompt"])
    assert sent["tools"] == task_rows[0]["tools"] and sent["model"] == "gold"


def test_doing_nothing_is_scored_and_fails(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    rows = run_model(task_rows, envs, endpoint, "nothing")
    assert {(r["ended"], r["scorable"], r["passed"], r["reward"], r["turns"]) for r in rows} == {
        ("done", True, False, 0.0, 0)
    }
    assert all(r["score"] is not None and r["messages"][-1]["content"] == "All done." for r in rows)


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        ("bad-json", "arguments of `whoami` are not valid JSON"),
        ("unknown-tool", "no tool `launch_rockets`"),
        ("array-args", "a JSON list, not an object"),
    ],
)
def test_a_malformed_tool_call_ends_the_rollout_unsuccessfully(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint, model: str, reason: str
) -> None:
    rows = run_model(task_rows[:2], envs, endpoint, model)
    for row in rows:
        assert (row["ended"], row["scorable"], row["passed"], row["reward"]) == ("invalid_call", True, False, 0.0)
        assert reason in row["reason"] and row["calls"] == [] and row["score"] is None
        assert row["messages"][-1]["tool_calls"][0]["function"]["name"] in ("whoami", "launch_rockets")


def test_a_domain_error_stays_in_the_trajectory_and_the_agent_recovers(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    rows = run_model(task_rows, envs, endpoint, "recover")
    for row in rows:
        # a refusal the agent can read (no such ticket, or not signed in yet), not an internal error
        assert row["results"][0]["error"]["kind"] in ("not_found", "unauthenticated")
        assert (row["ended"], row["scorable"], row["passed"]) == ("done", True, True)


@pytest.mark.parametrize("model", ["crash", "drop"])
def test_an_endpoint_failing_mid_episode_is_an_infrastructure_failure_not_a_zero(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint, model: str
) -> None:
    rows = run_model(task_rows[:2], envs, endpoint, model)
    for row in rows:
        assert (row["ended"], row["scorable"], row["passed"], row["reward"]) == ("endpoint_error", False, False, None)
        assert row["turns"] == 1 and row["requests"] == 1
        assert ("HTTP 500" in row["reason"]) if model == "crash" else ("connection" in row["reason"])
        assert "after 2 tries" in row["reason"]  # retried once (retries=1), as the LLM layer retries


def test_a_reply_slower_than_the_task_timeout_is_a_timeout(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    quick = [{**task_rows[0], "timeout_s": 0.5}]
    [row] = run_model(quick, envs, endpoint, "slow")
    assert (row["ended"], row["scorable"], row["reward"], row["turns"]) == ("timeout", False, None, 0)
    assert "timeout_s 0.5" in row["reason"]


def test_the_turn_limit_ends_a_rollout_that_never_stops(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    [row] = run_model([{**task_rows[0], "max_turns": 3}], envs, endpoint, "loop")
    assert (row["ended"], row["scorable"], row["reward"], row["turns"]) == ("turn_limit", True, 0.0, 3)
    assert row["requests"] == 4  # the fourth call is refused, not run


def test_an_internal_error_of_the_environment_is_unscorable(
    task_rows: list[dict[str, Any]],
    envs: dict[str, SampleEnv],
    endpoint: ScriptedEndpoint,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    package = envs["ticketing"].package
    internal = package.environment.INTERNAL_ERROR
    monkeypatch.setattr(package.Environment, "call", lambda self, tool, args=None, expired=None: internal)
    [row] = run_model(task_rows[:1], envs, endpoint, "gold")
    assert (row["ended"], row["scorable"], row["reward"], row["turns"]) == ("env_error", False, None, 1)
    assert row["results"] == [internal]


def test_sampling_seeds_are_per_sample_and_reproducible(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    config = config_for(endpoint, "coin", temperature=0.7)
    first = rollout.rollout(task_rows, envs, config, 4, seed=11)
    again = rollout.rollout(task_rows[::-1], envs, config, 4, seed=11, executor=scale.LocalExecutor(envs, 8))
    assert rollout.to_jsonl(first, timings=False) == rollout.to_jsonl(
        sorted(again, key=lambda r: [t["id"] for t in task_rows].index(r["task_id"])), timings=False
    )
    seeds = [r["sampling"]["seed"] for r in first]
    assert len(set(seeds)) == len(seeds) and all(r["sampling"]["temperature"] == 0.7 for r in first)
    assert {r["passed"] for r in first} == {True, False}  # the coin lands both ways
    unseeded = rollout.rollout(task_rows[:1], envs, config, 1)
    assert "seed" not in unseeded[0]["sampling"]


def test_the_key_is_never_written(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    rows = run_model(task_rows, envs, endpoint, "crash") + run_model(task_rows, envs, endpoint, "gold")
    assert SECRET not in rollout.to_jsonl(rows)


# --------------------------------------------------------------------------- calibration with the model


def test_calibrate_with_the_model_policy(
    task_rows: list[dict[str, Any]], envs: dict[str, SampleEnv], endpoint: ScriptedEndpoint
) -> None:
    def model(name: str) -> rollout.ModelPolicy:
        return rollout.ModelPolicy(config_for(endpoint, name))

    gold = calibrate.calibrate(task_rows, envs, model("gold"), k=2)
    assert gold.policy == "model" and [c for _, c in gold.passes] == [2] * 5 and gold.too_easy == task_rows
    nothing = calibrate.calibrate(task_rows, envs, model("nothing"), k=2)
    assert nothing.review == task_rows and nothing.to_json()["review_ids"] == [t["id"] for t in task_rows]
    coin = calibrate.calibrate(task_rows, envs, model("coin"), k=8, seed=3, executor=scale.LocalExecutor(envs, 4))
    assert coin.kept and coin.to_json() == calibrate.calibrate(task_rows, envs, model("coin"), k=8, seed=3).to_json()
    counts = dict(coin.passes)
    assert all(0 < counts[t["id"]] < 8 for t in coin.kept)
    crashed = calibrate.calibrate(task_rows[:2], envs, model("crash"), k=2)
    assert crashed.unscorable == task_rows[:2] and not (crashed.kept or crashed.review or crashed.too_easy)
    data = crashed.to_json()
    assert data["unscorable_ids"] == [t["id"] for t in task_rows[:2]] and data["pass_rate"] == 0.0
    assert all(reason.startswith("endpoint_error: ") for r in data["unscorable_runs"].values() for reason in r)


# --------------------------------------------------------------------------- the command


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli_module.cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def task_dir(tmp_path: Path, task_rows: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text(tasks.tasks_to_jsonl(task_rows), encoding="utf-8")
    return folder


def test_envc_rollout_writes_trajectories(
    task_dir: Path, endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run("rollout", task_dir, SPEC, "--model", "gold", "--base-url", endpoint.url, "-k", "2")
    assert result.exit_code == 0, result.stderr
    assert "wrote 10 trajectories" in result.stderr and "passed 10" in result.stderr
    assert "envc rollout: 10/10 rollouts done" in result.stderr
    rows = [json.loads(line) for line in (task_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["passed"] for r in rows] == [True] * 10
    monkeypatch.setenv("OPENAI_BASE_URL", endpoint.url)  # the endpoint as the LLM layer finds it without --base-url
    from_env = run("rollout", task_dir, SPEC, "--model", "nothing", "-o", task_dir / "nothing.jsonl")
    assert from_env.exit_code == 0 and "passed 0, mean reward 0.000 over 5 scorable" in from_env.stderr
    stable = task_dir / "stable.jsonl"
    args = ("rollout", task_dir / "tasks.jsonl", "--model", "coin", "--base-url", endpoint.url, "-k", "3")
    for concurrency in ("1", "6"):  # no SPEC: the project's spec defining `ticketing` is found
        flags = ("--seed", "5", "--no-timings", "--concurrency", concurrency, "-o", stable)
        assert run(*args, *flags).exit_code == 0
        text = stable.read_bytes()
        assert b'"timings"' not in text
        if concurrency == "1":
            first = text
    assert text == first
    digest = hashlib.sha256(text).hexdigest()
    assert digest == hashlib.sha256(rollout.to_jsonl([json.loads(x) for x in text.splitlines()]).encode()).hexdigest()


def test_envc_rollout_bad_input_exits_2_without_a_traceback(
    task_dir: Path, tmp_path: Path, endpoint: ScriptedEndpoint
) -> None:
    no_model = run("rollout", task_dir, SPEC)
    assert no_model.exit_code == 2 and "--model" in no_model.stderr
    missing = run("rollout", tmp_path / "nowhere.jsonl", SPEC, "--model", "gold")
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    (tmp_path / "bad.jsonl").write_text("{oops\n", encoding="utf-8")
    broken = run("rollout", tmp_path / "bad.jsonl", SPEC, "--model", "gold")
    assert broken.exit_code == 2 and "bad.jsonl:1: not a JSON line" in broken.stderr
    other = run("rollout", task_dir, spec_path("calendar"), "--model", "gold", "--base-url", endpoint.url)
    assert other.exit_code == 2 and "`ticketing` is not among the specs given" in other.stderr
    down = run("rollout", task_dir, SPEC, "--model", "refuse", "--base-url", endpoint.url)
    assert down.exit_code == 2 and "failed for infrastructure reasons" in down.stderr
    assert "request refused (HTTP 400)" in down.stderr and "[redacted]" in down.stderr
    rows = export.read_tasks(task_dir / "tasks.jsonl")
    written = [json.loads(x) for x in (task_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(written) == len(rows) and not any(r["scorable"] for r in written)
    assert all("[redacted]" in r["reason"] for r in written)
    for result in (no_model, missing, broken, other, down):
        assert "Traceback" not in result.stderr and SECRET not in result.stderr


def calibrate_via_command(folder: Path, policy: str, *options: Any, **settings: Any) -> Result:
    """`calibrate_run`, which `envc calibrate` calls, run as click runs it."""
    from compiler.cli.tasks import calibrate_run

    def callback() -> None:
        calibrate_run(folder, (SPEC,), policy, *options, **settings)

    return CliRunner().invoke(click.Command("calibrate", callback=callback), [], catch_exceptions=False)


def test_calibrate_command_with_the_model_policy(task_dir: Path, endpoint: ScriptedEndpoint) -> None:
    result = calibrate_via_command(task_dir, "model", 8, 3, model="coin", base_url=endpoint.url, concurrency=4)
    assert result.exit_code == 0, result.stderr
    assert "calibrated 5 tasks with the model policy, k=8" in result.stderr and "40/40 runs done" in result.stderr
    data = json.loads((task_dir / "calibration.json").read_text(encoding="utf-8"))
    assert data["kept"] == len(export.read_tasks(task_dir / "calibrated.jsonl")) > 0 and data["unscorable"] == 0
    crashed = calibrate_via_command(task_dir, "model", 2, 0, model="refuse", base_url=endpoint.url)
    assert crashed.exit_code == 2 and "5 tasks had runs that failed for infrastructure reasons" in crashed.stderr
    data = json.loads((task_dir / "calibration.json").read_text(encoding="utf-8"))
    assert data["unscorable"] == 5 and data["kept"] == data["review"] == data["too_easy"] == 0
    assert (task_dir / "calibrated.jsonl").read_text(encoding="utf-8") == ""
    mixed = calibrate_via_command(task_dir, "gold", 2, 0, model="coin")
    assert mixed.exit_code == 2 and "go with --policy model" in mixed.stderr
    baseline = calibrate_via_command(task_dir, "gold", 2, 0)
    assert baseline.exit_code == 0 and json.loads((task_dir / "calibration.json").read_text())["too_easy"] == 5
    for run_result in (result, crashed, mixed, baseline):
        assert "Traceback" not in run_result.stderr and SECRET not in run_result.stderr


# --------------------------------------------------------------------------- hostile replies, dead endpoints


def test_hostile_replies_are_calls_of_their_own_trajectory_and_every_trajectory_is_written(
    task_dir: Path, endpoint: ScriptedEndpoint, task_rows: list[dict[str, Any]]
) -> None:
    out = task_dir / "hostile.jsonl"
    result = run("rollout", task_dir, SPEC, "--model", "hostile", "--base-url", endpoint.url, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    data = out.read_bytes()
    data.decode("utf-8")  # strict UTF-8: a lone surrogate is written escaped
    rows = {row["task_id"]: row for row in map(json.loads, data.splitlines())}
    by_task = [rows[task["id"]] for task in task_rows]
    assert len(rows) == 5 and all(row["scorable"] for row in by_task)
    surrogate, nested, nan, huge, text = by_task
    assert (surrogate["ended"], surrogate["reward"]) == ("invalid_call", 0.0)
    assert "lone surrogate" in surrogate["reason"]
    assert surrogate["messages"][-1]["tool_calls"][0]["function"]["arguments"] == HOSTILE_REPLIES[0][1]
    assert (nan["ended"], nan["reward"]) == ("invalid_call", 0.0) and "not valid JSON" in nan["reason"]
    for row in (nested, huge):  # parsed, then refused by the package before the tool ran: the agent goes on
        assert row["ended"] == "done" and row["results"][0]["error"]["kind"] == "invalid_argument"
    assert nested["results"][0]["error"]["field"] == huge["results"][0]["error"]["field"] == "ticket_id"
    assert text["ended"] == "done" and text["messages"][-1]["content"] == "All done \ud800."


def test_trajectories_are_on_disk_as_they_finish(
    tmp_path: Path,
    task_rows: list[dict[str, Any]],
    envs: dict[str, SampleEnv],
    endpoint: ScriptedEndpoint,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = rollout.TrajectoryLog(tmp_path / "t.jsonl")
    finished = rollout.run_job

    def crash_on_the_third(envs: Any, job: rollout.RolloutJob) -> dict[str, Any]:
        if job.task["id"] == task_rows[2]["id"]:
            raise KeyboardInterrupt  # the run stops here
        return finished(envs, job)

    monkeypatch.setattr(rollout, "run_job", crash_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        rollout.rollout(task_rows, envs, config_for(endpoint, "gold"), 1, sink=log)
    log.close()
    lines = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == [t["id"] for t in task_rows[:2]]


def test_a_dead_endpoint_stops_the_run_early_with_a_clear_error(task_dir: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    started = time.monotonic()
    result = run("rollout", task_dir, SPEC, "--model", "gold", "--base-url", dead, "-k", "4", "--concurrency", "2")
    elapsed = time.monotonic() - started
    assert result.exit_code == 2
    assert "the endpoint cannot be reached" in result.stderr and "refused the connection" in result.stderr
    assert elapsed < 10, f"{elapsed:.1f} s before the first report"
    rows = [json.loads(x) for x in (task_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 20 and {r["ended"] for r in rows} == {"endpoint_error"}
    assert sum("not tried" in r["reason"] for r in rows) >= 16, "after the first failures, no rollout waits"
