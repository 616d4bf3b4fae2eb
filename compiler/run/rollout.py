"""Stage 9, rollout: a model plays tasks through an OpenAI-compatible chat-completions
endpoint, k samples per task, and every sample becomes one trajectory row.

The loop is the paper's: the task's `prompt` is the user message and its `tools` the
tools; each tool call the model makes runs in a `calibrate.Episode` (fresh sessions from
the task's `initial_state`) and its JSON result goes back as a `tool` message, until the
model answers without a tool call (`done`: the package's `score` judges the final
states). A turn is one tool call, as in `calibrate.Episode` and the packages' `Episode`:
at most `max_turns` of them, within `timeout_s` seconds for the whole rollout. What ends
a rollout early:

- `invalid_call`: a tool the task does not offer, or arguments that are not a JSON
  object (reward 0; the agent's failure). A domain error is *not* one: it is the tool's
  result, and the model may recover;
- `turn_limit`: a call past `max_turns` (reward 0);
- `timeout`, `env_error` (an internal error of the environment or its scorer) and
  `endpoint_error` (the endpoint failed after its retries or sent no chat completion):
  infrastructure failures, `scorable: false` with no reward, so no trainer learns a 0
  from them.

The endpoint is reached as the LLM layer reaches it (`compiler.llm.provider`): the same
client construction, `[tool.envc.llm]` settings, key handling (the variable's name only;
the key goes to the HTTP client and nowhere else) and retry policy. Each sample's result
depends only on its task, index and seed, so runs on threads or on Ray (compiler/run/scale.py)
give the same trajectories; only `timings` differ, and they are kept in their own field.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.llm.config import LLMConfig
from compiler.llm.config import base_url as configured_base_url
from compiler.llm.provider import OpenAIProvider, ProviderError, retry_delay
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.run import calibrate, scale
from compiler.run.calibrate import Ending
from compiler.synth import sample

SCHEMA = "envc.rollout/1"
"""The `schema` of every trajectory row (docs/serving.md#envc-rollout)."""
SEED_RANGE = 2**31
"""Per-sample seeds sent to the endpoint are drawn below this (what servers accept)."""


# =========================================================================== the endpoint


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model sent it; `arguments` as sent (JSON text, if well formed)."""

    id: str
    name: str
    arguments: Any
    type: str = "function"


@dataclass(frozen=True)
class Reply:
    """The assistant message (as it is sent back in the next request) and its calls."""

    message: dict[str, Any]
    calls: tuple[ToolCall, ...]
    tries: int = 1


class OutOfTime(ProviderError):
    """The rollout's own deadline ran out while waiting for the endpoint."""

    def __init__(self, message: str, tries: int = 1) -> None:
        super().__init__("timeout", message, None, tries)


UNREACHABLE_TRIES = 3
"""Connection attempts to an endpoint that refuses connections before a rollout gives
up, UNREACHABLE_DELAY seconds apart: a dead endpoint is reported in about a second, not
after the whole retry policy meant for a busy one."""
UNREACHABLE_DELAY = 0.5


class Unreachable(ProviderError):
    """The endpoint refused the connection (nothing listens there, or no route)."""

    def __init__(self, message: str, tries: int = 1) -> None:
        super().__init__("connection", message, None, tries)


class ToolChat(OpenAIProvider):
    """`OpenAIProvider`'s client and retry policy, for requests that carry tools and
    replies that carry tool calls. A request waits no longer than the rollout has left.
    Once the endpoint refused connections before ever answering, every later rollout of
    the run fails at once (`unreachable`), so a dead endpoint stops the run early."""

    answered = False
    unreachable: str | None = None

    def reply(self, payload: Mapping[str, Any], deadline: float) -> Reply:
        """The model's next message; raises ProviderError after the retries, OutOfTime
        when the rollout's deadline passes first, Unreachable for a dead endpoint."""
        if self.unreachable is not None and not self.answered:
            raise Unreachable(f"not tried: {self.unreachable}")
        failed = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OutOfTime("the rollout's time ran out before the model replied", failed + 1)
            bounded = left < self.config.timeout
            try:
                reply = dataclasses.replace(self._reply_once(payload, min(left, self.config.timeout)), tries=failed + 1)
                self.answered = True
                return reply
            except Unreachable as exc:
                failed += 1
                if failed >= UNREACHABLE_TRIES or time.monotonic() + UNREACHABLE_DELAY >= deadline:
                    self.unreachable = f"{exc} (after {failed} tries)"
                    raise Unreachable(self.unreachable, failed) from None
                self.sleep(UNREACHABLE_DELAY)
            except ProviderError as exc:
                failed += 1
                if exc.kind == "timeout" and bounded:
                    raise OutOfTime("the rollout's time ran out while the model was replying", failed) from None
                delay = retry_delay(self.config, failed, exc.retry_after) if exc.retryable else None
                if delay is None or failed > self.config.retries or time.monotonic() + delay >= deadline:
                    message = str(exc) + (f" (after {failed} tries)" if failed > 1 else "")
                    raise ProviderError(exc.kind, message, exc.retry_after, failed) from None
                self.log(f"{exc}; retrying in {delay:g} s")
                self.sleep(delay)

    def _reply_once(self, payload: Mapping[str, Any], timeout: float) -> Reply:
        client = self._client_once()
        try:
            with self.openai_errors(timeout):
                return parse_reply(client.chat.completions.create(**payload, timeout=timeout))
        except ProviderError as exc:
            if exc.kind == "connection" and _refused(exc):
                raise Unreachable(f"the endpoint refused the connection ({exc})") from None
            raise


def _refused(error: BaseException) -> bool:
    """Whether a connection error began as a refused connection (httpx's ConnectError,
    which the openai client wraps), not as a connection dropped mid-reply."""
    seen: BaseException | None = error
    for _ in range(4):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return False
        if type(seen).__name__ == "ConnectError" or isinstance(seen, ConnectionRefusedError):
            return True
    return False


def parse_reply(response: Any) -> Reply:
    """The first choice of a chat completion as a `Reply`; ProviderError("malformed")
    when it is not one."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise ProviderError("malformed", "the reply holds no choices: is this a chat-completions endpoint?")
    message = choices[0].message
    content = message.content
    if content is not None and not isinstance(content, str):
        raise ProviderError("malformed", "the reply's content is not text")
    calls = []
    for raw in message.tool_calls or []:
        function = getattr(raw, "function", None)
        name = getattr(function, "name", None)
        calls.append(
            ToolCall(
                str(getattr(raw, "id", "") or ""),
                name if isinstance(name, str) else "",
                getattr(function, "arguments", None),
                str(getattr(raw, "type", "") or ""),
            )
        )
    sent: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        sent["tool_calls"] = [
            {"id": c.id, "type": c.type, "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    return Reply(sent, tuple(calls))


_CHATS: dict[tuple[LLMConfig, str], ToolChat] = {}
_CHATS_LOCK = threading.Lock()


def chat_for(config: LLMConfig) -> ToolChat:
    """One client per settings and endpoint per process (threads share it; a Ray worker
    makes its own). The endpoint is part of the key: `$OPENAI_BASE_URL` may change."""
    key = (config, configured_base_url(config))
    with _CHATS_LOCK:
        if key not in _CHATS:
            _CHATS[key] = ToolChat(config)
        return _CHATS[key]


def sampling(config: LLMConfig, seed: int | None) -> dict[str, Any]:
    """The sampling parameters of one sample's requests: the settings', with the sample's
    seed when there is one."""
    params = config.sampling()
    if seed is not None:
        params["seed"] = seed
    return params


def sample_seed(seed: int | None, task_id: str, index: int) -> int | None:
    """Sample `index` of a task's seed for the endpoint, from the run's `--seed` alone
    (none without one: the endpoint then samples as it likes)."""
    if seed is None:
        return None
    return random.Random(f"rollout:{seed}:{task_id}:{index}").randrange(SEED_RANGE)


# =========================================================================== the loop


@dataclass
class Transcript:
    """What one rollout said and did."""

    messages: list[dict[str, Any]]
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    requests: int = 0
    model_s: float = 0.0
    env_s: float = 0.0


def arguments_of(call: ToolCall) -> tuple[dict[str, Any] | None, str]:
    """The call's arguments as an object, or None and why they are not one."""
    if call.type != "function":
        return None, f"a `{call.type}` tool call, not a function call"
    if not isinstance(call.arguments, str):
        return None, f"the arguments of `{call.name}` are not JSON text"
    if not call.arguments.isascii() and _SURROGATE.search(call.arguments):
        return None, f"the arguments of `{call.name}` hold a lone surrogate, which is not text"
    try:
        value = json.loads(call.arguments, parse_constant=_no_constant) if call.arguments.strip() else {}
    except (ValueError, RecursionError) as exc:
        return None, f"the arguments of `{call.name}` are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"the arguments of `{call.name}` are a JSON {type(value).__name__}, not an object"
    return value, ""


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constant(name: str) -> Any:
    """NaN and Infinity are Python's extensions, not JSON: text holding them is refused."""
    raise ValueError(f"`{name}` is not JSON")


def play(
    task: Mapping[str, Any], episode: calibrate.Episode, chat: ToolChat, config: LLMConfig, seed: int | None
) -> tuple[Transcript, Ending]:
    """The agent loop of one rollout on `episode`: what happened, and how it ended."""
    transcript = Transcript(messages=[{"role": "user", "content": task["prompt"]}])
    base = {"model": config.model, "tools": list(task["tools"]), **sampling(config, seed)}
    while True:
        started = time.monotonic()
        try:
            reply = chat.reply({**base, "messages": transcript.messages}, episode.deadline)
        except OutOfTime as exc:
            return transcript, Ending("timeout", f"{exc} (timeout_s {task['timeout_s']})", False)
        except ProviderError as exc:
            return transcript, Ending("endpoint_error", f"{exc.kind}: {exc}", False)
        finally:
            transcript.model_s += time.monotonic() - started
        transcript.requests += 1
        transcript.messages.append(reply.message)
        if not reply.calls:
            return transcript, calibrate.FINISHED
        for call in reply.calls:
            ending = run_call(episode, call, transcript)
            if ending is not None:
                return transcript, ending


def run_call(episode: calibrate.Episode, call: ToolCall, transcript: Transcript) -> Ending | None:
    """Run one tool call into the transcript; the Ending it causes, if any."""
    if episode.turns >= episode.max_turns:
        return Ending("turn_limit", f"a call past the task's {episode.max_turns} calls", True)
    if time.monotonic() > episode.deadline:
        return Ending("timeout", "the rollout's time ran out before a call", False)
    if call.name not in episode.tools:
        name = call.name.encode("utf-8", "backslashreplace").decode("utf-8")[:200]
        return Ending("invalid_call", f"there is no tool `{name}` among the task's tools", True)
    arguments, problem = arguments_of(call)
    if arguments is None:
        return Ending("invalid_call", problem, True)
    started = time.monotonic()
    try:
        result = episode.call(call.name, arguments)  # stopped at the episode's call_timeout_s
    except Exception as exc:  # the package's call never raises; anything that does is its bug
        return Ending("env_error", f"the environment raised {type(exc).__name__}: {exc}", False)
    finally:
        transcript.env_s += time.monotonic() - started
    transcript.calls.append({"id": call.id, "tool": call.name, "arguments": arguments})
    transcript.results.append(result)
    transcript.messages.append({"role": "tool", "tool_call_id": call.id, "content": canonical(result)})
    if calibrate.is_internal_error(result):
        return Ending("env_error", f"`{call.name}` failed with an internal error of the environment", False)
    return None


def canonical(value: Any) -> str:
    """Sorted, compact JSON text. Text a model wrote may hold a lone surrogate, which
    UTF-8 cannot carry: such a value is written with `\\u` escapes (it reads back the same)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii() and _SURROGATE.search(text):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text


# =========================================================================== jobs


@dataclass(frozen=True)
class RolloutJob:
    """Sample `index` of a task: a job for a `compiler.run.scale` executor."""

    task: dict[str, Any]
    index: int
    config: LLMConfig
    seed: int | None = None
    call_timeout_s: float | None = CALL_TIMEOUT_S
    """Seconds one tool call may run (as `envc serve --call-timeout`): the package stops
    it then, or at the rollout's `timeout_s` if sooner, as the domain error `timeout`; the
    call changed nothing and the rollout goes on (a call the agent made run long is its
    own doing, not an infrastructure failure). None: only `timeout_s`."""


def run_job(envs: Mapping[str, sample.SampleEnv], job: RolloutJob) -> dict[str, Any]:
    """One rollout: its trajectory row."""
    started = time.monotonic()
    seed = sample_seed(job.seed, job.task["id"], job.index)
    try:
        episode = calibrate.Episode(job.task, envs, job.call_timeout_s)
    except Exception as exc:  # check_tasks lets only starting states the package takes through
        transcript = Transcript(messages=[{"role": "user", "content": job.task["prompt"]}])
        ending = Ending("env_error", f"the environment refused the start state: {type(exc).__name__}: {exc}", False)
        return trajectory(job, seed, transcript, ending, None, time.monotonic() - started)
    transcript, ending = play(job.task, episode, chat_for(job.config), job.config, seed)
    judged = calibrate.judge(episode, ending)
    return trajectory(job, seed, transcript, judged.ending, judged.score, time.monotonic() - started)


def trajectory(
    job: RolloutJob,
    seed: int | None,
    transcript: Transcript,
    ending: Ending,
    score: dict[str, Any] | None,
    total_s: float,
) -> dict[str, Any]:
    """The trajectory row (docs/serving.md#envc-rollout has the schema)."""
    reward = None if not ending.scorable else float(score["reward"]) if score is not None else 0.0
    return {
        "schema": SCHEMA,
        "task_id": job.task["id"],
        "sample": job.index,
        "model": job.config.model,
        "sampling": sampling(job.config, seed),
        "messages": transcript.messages,
        "calls": transcript.calls,
        "results": transcript.results,
        "turns": len(transcript.calls),
        "requests": transcript.requests,
        "ended": ending.ended,
        "reason": ending.reason,
        "scorable": ending.scorable,
        "reward": reward,
        "passed": bool(score is not None and ending.scorable and score["passed"]),
        "score": score,
        "timings": {
            "total_s": round(total_s, 6),
            "model_s": round(transcript.model_s, 6),
            "env_s": round(transcript.env_s, 6),
        },
    }


def rollout(
    tasks: Sequence[dict[str, Any]],
    envs: Mapping[str, sample.SampleEnv],
    config: LLMConfig,
    k: int,
    seed: int | None = None,
    executor: scale.Executor | None = None,
    progress: scale.Progress | None = None,
    sink: Callable[[dict[str, Any]], None] | None = None,
    call_timeout_s: float | None = CALL_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """k rollouts per task, rows in the tasks' order then by sample index. `sink`, on a
    local run, is given each row as soon as its rollout finishes (from its thread); each
    tool call may run `call_timeout_s` seconds."""
    if k < 1:
        raise calibrate.CalibrationError("k must be at least 1")
    calibrate.check_tasks(tasks, envs)
    jobs = [RolloutJob(dict(task), index, config, seed, call_timeout_s) for task in tasks for index in range(k)]
    run = run_job if sink is None else functools.partial(_run_into, sink)
    return (executor or scale.LocalExecutor(envs)).map(run, jobs, progress)


def _run_into(
    sink: Callable[[dict[str, Any]], None], envs: Mapping[str, sample.SampleEnv], job: RolloutJob
) -> dict[str, Any]:
    row = run_job(envs, job)
    sink(row)
    return row


class TrajectoryLog:
    """Trajectories appended to a file as their rollouts finish, one whole line per
    write and flushed, so a run that stops (a crash, Ctrl-C) keeps every finished one.
    The file is created at the first row, in finishing order; the command then writes
    the final file, in the tasks' order, over it."""

    def __init__(self, path: Path, timings: bool = True) -> None:
        self.path = path
        self.timings = timings
        self._lock = threading.Lock()
        self._fd = -1

    def __call__(self, row: Mapping[str, Any]) -> None:
        data = to_jsonl([row], self.timings).encode("utf-8")
        with self._lock:
            if self._fd < 0:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
            os.write(self._fd, data)  # O_APPEND: one write is one whole line

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def to_jsonl(rows: Sequence[Mapping[str, Any]], timings: bool = True) -> str:
    """One canonical JSON line per row; without `timings`, the only field that differs
    between two runs of the same deterministic endpoint is left out."""
    return "".join(canonical(dict(row) if timings else without_timings(row)) + "\n" for row in rows)


def without_timings(row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "timings"}


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts over trajectory rows: how they ended, and rewards of the scorable ones."""
    scorable = [row for row in rows if row["scorable"]]
    rewards = [float(row["reward"]) for row in scorable]
    return {
        "rollouts": len(rows),
        "scorable": len(scorable),
        "unscorable": len(rows) - len(scorable),
        "passed": sum(bool(row["passed"]) for row in rows),
        "mean_reward": round(sum(rewards) / len(rewards), 6) if rewards else None,
        "ended": dict(sorted(Counter(str(row["ended"]) for row in rows).items())),
    }


# =========================================================================== calibration


@dataclass(frozen=True)
class ModelPolicy:
    """The model as a calibration policy: the rollout loop on the calibration's episode,
    the endpoint's seed drawn from the run's generator."""

    config: LLMConfig
    name: str = "model"

    def play(self, task: Mapping[str, Any], episode: calibrate.Episode, rng: random.Random) -> Ending | None:
        _, ending = play(task, episode, chat_for(self.config), self.config, rng.randrange(SEED_RANGE))
        return ending
