"""LLM-written task requests and the rubric audit, through the LLM layer and its lock.

`envc tasks --llm` asks the configured model for each audited task's request: the goal
of the gold chain (given as the spec's words put it, with its family and the entities to
refer to by their attributes), in a user's words, naming every value the agent cannot look
up (`audits.required_values`) and none the environment computes (`audits.computed_values`). The task with that request runs every audit again; a request
that fails one goes back to the model with the audit's reason (bounded by `attempts`),
and a task whose requests all fail is rejected under `llm_request` with the last reason.
Then the model grades the request by the paper's rubric (clarity, consistency with the
tool chain, solvability) and its naturalness, 1 to 5 each; a grade below `RUBRIC_PASS` rejects the task
under `rubric` with the model's reason. Nothing falls back to the template request.

Both answers are recorded in `envc.lock` beside the spec of the task's first environment
(declarations `task request KEY` and `task rubric KEY`, KEY a hash of the task without
its request), keyed by the hash of the first request envc would send, so a rerun with the
same inputs, seed and configuration takes them from the lock, sends nothing and writes
the same bytes. With `offline`, a task whose answers are not in the lock is rejected.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compiler.llm.config import LLMConfig
from compiler.llm.fill import MODEL_WRITES_NO_PYTHON
from compiler.llm.lock import AttemptRecord, Lock, LockEntry, lock_path, read_lock, spec_key, write_lock
from compiler.llm.provider import ChatRequest, Completion, Message, Provider, ProviderError, make_request
from compiler.synth import audits, sample, task_build, task_prompt
from compiler.synth.task_quality import family_of

REQUEST_DECL = "task request"
RUBRIC_DECL = "task rubric"
DECL_PREFIX = "task "
"""Lock declarations of tasks start with this (so `envc lock` can tell them from fills)."""
RUBRIC = ("clarity", "consistency", "solvability", "naturalness")
RUBRIC_PASS = 4
"""The lowest grade (the least of the rubric's scores, 1 to 5) a kept task's request has."""
LONGEST_REQUEST = 2000

REQUEST_SYSTEM = """\
You write the request a user gives an AI assistant that has tools. You are shown the tool
calls that fulfil the request (the gold solution), the kind of problem it is, and the goal
as the spec's own words put it. Write the user's goal as the user would: one to three
natural sentences in the domain's words, no tool or function names, no call syntax, no
mention of the steps of the solution.
Rules:
- Name every value under must_name exactly as given; put free-text values in double quotes.
- Refer to each entity under refer_to by the attributes given (all of them, so it is the only
  one they fit), never by its identifier: the agent has to look it up.
- Never mention a value under must_not_name: the environment computes it.
- Name a value an earlier step produces by what it is ("the new ticket"), as the goal does.
Reply with the request only."""

RUBRIC_SYSTEM = """\
You grade the request of a tool-use training task by a rubric, each score from 1 (bad) to 5 (good):
clarity (the intent is unambiguous), consistency (it asks exactly for what the tool calls do),
solvability (it gives every value the agent cannot look up with its tools, and describes every
entity it refers to well enough to find it), naturalness (it reads as a real user's goal in the
domain's words, not as a list of calls).
Reply with one JSON object only: {"clarity": n, "consistency": n, "solvability": n, "naturalness": n, "reason": "..."}"""


class LLMTaskError(Exception):
    """The endpoint failed for good (after its retries): the run stops with this message."""


@dataclass
class RequestStats:
    """Per attempt index: how many requests were asked for and how many were accepted."""

    asked: dict[int, int] = field(default_factory=dict)
    accepted: dict[int, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    from_lock: int = 0
    graded: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "asked_per_attempt": {str(k): v for k, v in sorted(self.asked.items())},
            "accepted_per_attempt": {str(k): v for k, v in sorted(self.accepted.items())},
            "failures": dict(sorted(self.failures.items())),
            "from_lock": self.from_lock,
            "graded": self.graded,
        }


@dataclass
class LLMRequests:
    """Writes and grades task requests with a model, through `envc.lock` files."""

    config: LLMConfig
    provider: Provider | None
    """None: offline, answers come from the lock only."""
    locks: dict[Path, Lock] = field(default_factory=dict)
    stats: RequestStats = field(default_factory=RequestStats)
    log: Callable[[str], None] = lambda _message: None

    # ------------------------------------------------------------------ the hook of compiler.synth.tasks

    def rewrite(self, task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> dict[str, Any]:
        """The task with a model-written request that passes every audit and the rubric;
        raises `audits.AuditFailed` (`llm_request` or `rubric`) with the reason otherwise."""
        lock, spec = self._lock_for(task, envs)
        key = task_key(task)
        request_text = self._request(task, envs, lock, spec, key)
        rewritten = _with_prompt(task, request_text, self.config.model)
        self._grade(rewritten, envs, lock, spec, key)
        return rewritten

    def summary(self) -> dict[str, Any]:
        return {"model": self.config.model, "offline": self.provider is None, **self.stats.to_json()}

    def write_locks(self) -> list[Path]:
        """Write every lock that changed; the paths written."""
        written = []
        for path, lock in sorted(self.locks.items()):
            if write_lock(lock, set(lock.entries)):
                written.append(path)
        return written

    # ------------------------------------------------------------------ the request

    def _request(self, task: dict[str, Any], envs: dict[str, sample.SampleEnv], lock: Lock, spec: str, key: str) -> str:
        messages = [Message("system", REQUEST_SYSTEM), Message("user", request_brief(task, envs))]
        first = make_request(self.config, messages, 1)
        decl = f"{REQUEST_DECL} {key}"
        entry = lock.get(spec, decl)
        if entry is not None and entry.request_sha == first.sha():
            self.stats.from_lock += 1
            problem = check_request(task, envs, entry.body)
            if problem:
                raise audits.AuditFailed("llm_request", f"the locked request fails {problem}")
            return entry.body
        attempts: list[AttemptRecord] = []
        last_problem = ""
        for number in range(1, self.config.attempts + 1):
            request = make_request(self.config, messages, number)
            completion = self._complete(request, "llm_request")
            self.stats.asked[number] = self.stats.asked.get(number, 0) + 1
            text = extract_request(completion.text)
            problem = "malformed: the reply holds no request" if text is None else check_request(task, envs, text)
            if text is not None and not problem:
                self.stats.accepted[number] = self.stats.accepted.get(number, 0) + 1
                attempts.append(AttemptRecord(number, request.sha()))
                lock.put(spec, decl, _entry(first, request, self.config, text, attempts, completion))
                return text
            failure = problem.split(":", 1)[0]
            self.stats.failures[failure] = self.stats.failures.get(failure, 0) + 1
            attempts.append(AttemptRecord(number, request.sha(), failure, (problem,)))
            last_problem = problem
            messages += [
                Message("assistant", completion.text),
                Message("user", f"That request fails the audit {problem}. Write it again, fixing this."),
            ]
        raise audits.AuditFailed("llm_request", f"no request passed in {self.config.attempts} attempts: {last_problem}")

    # ------------------------------------------------------------------ the rubric

    def _grade(self, task: dict[str, Any], envs: dict[str, sample.SampleEnv], lock: Lock, spec: str, key: str) -> None:
        messages = [Message("system", RUBRIC_SYSTEM), Message("user", rubric_brief(task, envs))]
        first = make_request(self.config, messages, 1)
        decl = f"{RUBRIC_DECL} {key}"
        entry = lock.get(spec, decl)
        if entry is not None and entry.request_sha == first.sha():
            grade = parse_grade(entry.body)
            if grade is None:
                raise audits.AuditFailed("rubric", f"the locked grade `{decl}` is malformed")
        else:
            grade = None
            attempts: list[AttemptRecord] = []
            for number in range(1, self.config.attempts + 1):
                request = make_request(self.config, messages, number)
                completion = self._complete(request, "rubric")
                grade = parse_grade(completion.text)
                if grade is not None:
                    attempts.append(AttemptRecord(number, request.sha()))
                    body = json.dumps(grade, sort_keys=True)
                    lock.put(spec, decl, _entry(first, request, self.config, body, attempts, completion))
                    break
                attempts.append(AttemptRecord(number, request.sha(), "malformed", ("the reply is no rubric JSON",)))
                messages += [
                    Message("assistant", completion.text),
                    Message("user", "Reply with the JSON object only, each score an integer from 1 to 5."),
                ]
            if grade is None:
                raise audits.AuditFailed("rubric", f"no rubric grade in {self.config.attempts} replies")
        self.stats.graded += 1
        score = min(int(grade[name]) for name in RUBRIC)
        if score < RUBRIC_PASS:
            raise audits.AuditFailed("rubric", f"graded {score} of 5 (< {RUBRIC_PASS}): {grade.get('reason', '')}")

    # ------------------------------------------------------------------ plumbing

    def _complete(self, request: ChatRequest, audit: str) -> Completion:
        if self.provider is None:
            raise audits.AuditFailed(audit, "not in envc.lock, and offline")
        self.log(f"asking {self.config.model} ({audit}, attempt {request.attempt})")
        try:
            return self.provider.complete(request)
        except ProviderError as exc:
            raise LLMTaskError(f"envc tasks: the model endpoint failed: {exc.kind}: {exc}") from exc

    def _lock_for(self, task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> tuple[Lock, str]:
        spec = Path(envs[task["envs"][0]].model.path)
        path = lock_path(spec)
        if path not in self.locks:
            lock, problems = read_lock(path)
            if problems:
                raise LLMTaskError(f"envc tasks: {problems[0].message}")
            self.locks[path] = lock
        return self.locks[path], spec_key(spec, path)


def writer_for(root: Path, offline: bool = False, log: Callable[[str], None] | None = None) -> LLMRequests:
    """The request writer of a project: its `[tool.envc.llm]`, the openai provider (none
    when `offline`). Raises LLMTaskError when the configuration is wrong or names no model."""
    from compiler.llm.config import load_config
    from compiler.llm.provider import OpenAIProvider

    config, problems = load_config(root)
    if problems:
        raise LLMTaskError(f"envc tasks --llm: {problems[0].message}")
    if not config.configured:
        raise LLMTaskError("envc tasks --llm: [tool.envc.llm] names no `model` (docs/llm.md)")
    provider = None if offline else OpenAIProvider(config, log=log)
    return LLMRequests(config, provider, log=log or (lambda _message: None))


def task_key(task: dict[str, Any]) -> str:
    """What the request is written for: the task without its prompt, id and source."""
    body = {k: v for k, v in task.items() if k not in ("id", "prompt", "source")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def request_brief(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> str:
    """The user message asking for a request: environments, gold calls, the goal in the
    spec's words, the task's family, the entities to refer to by their attributes, and the
    values to name and never to name."""
    brief = {
        "environments": [
            {"name": n, "title": envs[n].model.header.title or n, "about": (envs[n].model.header.doc or "").strip()}
            for n in task["envs"]
        ],
        "gold_calls": [
            {**call, "changes_state": bool(envs[call["env"]].tools[task_build.tool_of(call)].writes)}
            for call in task["gold_calls"]
        ],
        "goal": task["prompt"],
        "family": family_of(task),
        "refer_to": [{"what": r["container"], "attributes": r["fields"]} for r in task["source"].get("references", [])],
        "must_name": sorted(audits.required_values(task, envs), key=repr),
        "must_not_name": sorted(audits.computed_values(task, envs), key=repr),
    }
    return json.dumps(brief, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def rubric_brief(task: dict[str, Any], envs: dict[str, sample.SampleEnv]) -> str:
    brief = {
        "request": task["prompt"],
        "gold_calls": task["gold_calls"],
        "tools": sorted(str(t["function"]["name"]) for t in task["tools"]),
        "values_the_agent_cannot_look_up": sorted(audits.required_values(task, envs), key=repr),
    }
    return json.dumps(brief, indent=2, sort_keys=True, ensure_ascii=False, default=str)


PYTHON_ESCAPE = re.compile(r'(?:^|\n)\s*python\s+"|\bpython\s+"""')
"""A spec's `python` escape line in model output."""


def check_request(task: dict[str, Any], envs: dict[str, sample.SampleEnv], text: str) -> str:
    """Why a request does not do ("AUDIT: why"), or "": it holds no `python` escape (a
    model's output never carries Python, docs/qc.md), names every required value, and the
    task with it passes every audit."""
    if PYTHON_ESCAPE.search(text):
        return f"escape_hatch: the request holds a `python` body; {MODEL_WRITES_NO_PYTHON}"
    candidate = _with_prompt(task, text, "")
    for value in sorted(audits.required_values(candidate, envs), key=repr):
        if not task_prompt.is_named(value, text):
            shown = f'"{value}"' if isinstance(value, str) else json.dumps(value)
            return f"names_every_value: the request must name {shown}"
    try:
        audits.audit(candidate, envs, audits.audit_rng(candidate))
    except audits.AuditFailed as failed:
        return f"{failed.audit}: {failed.why}"
    return ""


def extract_request(reply: str) -> str | None:
    """The request in a reply: a fenced block's text if there is one, else the reply,
    without surrounding quotes; None when empty or too long to be a request."""
    fenced = re.search(r"```[a-z]*\n(.*?)```", reply, re.DOTALL)
    text = (fenced.group(1) if fenced else reply).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and text.count(text[0]) == 2:
        text = text[1:-1].strip()
    text = " ".join(text.split())
    return text if 0 < len(text) <= LONGEST_REQUEST else None


def parse_grade(reply: str) -> dict[str, Any] | None:
    """The rubric's JSON object in a reply, its scores integers 1..5; None otherwise."""
    found = re.search(r"\{.*\}", reply, re.DOTALL)
    if found is None:
        return None
    try:
        grade = json.loads(found.group(0))
    except ValueError:
        return None
    if not isinstance(grade, dict):
        return None
    for name in RUBRIC:
        value = grade.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            return None
    reason = grade.get("reason", "")
    return {**{name: grade[name] for name in RUBRIC}, "reason": reason if isinstance(reason, str) else str(reason)}


def _with_prompt(task: dict[str, Any], text: str, model: str) -> dict[str, Any]:
    body = {k: v for k, v in task.items() if k != "id"}
    body["prompt"] = text
    if model:
        body["source"] = {**task["source"], "request": f"llm:{model}"}
    return task_build.with_id(body)


def _entry(
    first: ChatRequest,
    accepted: ChatRequest,
    config: LLMConfig,
    body: str,
    attempts: list[AttemptRecord],
    completion: Completion,
) -> LockEntry:
    provenance = {
        "attempts": [asdict(a) for a in attempts],
        "filled_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finish_reason": completion.finish_reason,
        "response_model": completion.model,
        "system_fingerprint": completion.system_fingerprint,
        "usage": dict(completion.usage),
    }
    return LockEntry(first.sha(), body, config.model, len(attempts), accepted.sha(), provenance)
