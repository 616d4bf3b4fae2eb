"""Sessions of served environments, keyed by episode id: create (from an environment and
a scenario, or from a task, with a seed), call a tool, read the state, fork, reset,
score, close.

One session is one episode of one task (or one scenario): the task's environments, each
a generated package's `Environment`, and the tools the task gives the agent, named as the
task's `tools` name them (`env__tool` when it spans several environments; see
compiler/run/calibrate.py's `Episode`, whose rules it keeps: the first environment's package
scores, `initial_state` is `{"scenario", "changes"}` per environment). The outcomes a
trainer must tell apart are the generated `Episode`'s (docs/serving.md): a domain error is
an observation; an invalid call or reaching `max_turns` ends the episode unsuccessfully;
an internal error of an environment, or a call past the per-call time limit, *breaks* the
session: an infrastructure failure, `scorable: false`, never reward 0.

The manager holds the limits (`max_sessions`, `idle_timeout`, `call_timeout`) and, given
a data directory, journals every change (compiler/serve/journal.py) before it returns.
It implements compiler.serve.mcp's `EpisodeBackend` (`tool_entries`, `call`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.build import packages
from compiler.serve import journal
from compiler.serve.catalog import Catalog, CatalogError, ServedEnv
from compiler.synth import sample

EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
"""Episode ids name journal files, so they keep to a safe alphabet."""
MAX_TURNS = 32
"""Calls per session started from a scenario (a task's own `max_turns` wins)."""
CALL_WORKERS = 32
"""Threads running tool calls; a call past its time limit keeps one until it returns."""


class SessionError(ValueError):
    """A request the sessions cannot honour; `status` is the HTTP status it maps to."""

    status = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details

    @property
    def kind(self) -> str:
        return "bad_request"

    def to_json(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind, "message": str(self), **self.details}}


class UnknownSession(SessionError):
    status = 404

    @property
    def kind(self) -> str:
        return "unknown_session"


class UnknownTask(SessionError):
    """A task id the served task sets do not hold (not a session: the request named no episode)."""

    status = 404

    @property
    def kind(self) -> str:
        return "unknown_task"


TASK_CHOICES = 10
"""An unknown-task error lists at most this many served task ids."""


def unknown_task(catalog: Catalog, task_id: str) -> UnknownTask:
    """The error for `task_id`: it names the id, how many tasks are served and some of their
    ids (the rest are the `id`s of the task sets the server was started with)."""
    served = sorted(catalog.tasks)
    shown = served[:TASK_CHOICES]
    where = "the `id` of each line of the tasks.jsonl files given to `envc serve`"
    if not served:
        message = f"no task `{task_id}` is served: this server was started without a task set"
    elif len(served) <= TASK_CHOICES:
        message = f"no task `{task_id}` is served; the served tasks are {', '.join(shown)}"
    else:
        message = f"no task `{task_id}` is served; {len(served)} tasks are, among them {', '.join(shown)} ({where})"
    return UnknownTask(message, task_id=task_id, served_tasks=len(served), choices=shown)


class SessionTaken(SessionError):
    status = 409

    @property
    def kind(self) -> str:
        return "session_exists"


class EpisodeOver(SessionError):
    status = 409

    @property
    def kind(self) -> str:
        return "episode_over"


class CapacityFull(SessionError):
    status = 503

    @property
    def kind(self) -> str:
        return "capacity"


class JournalUnavailable(SessionError):
    """The data directory cannot take a new journal (disk full, out of file handles)."""

    status = 503

    @property
    def kind(self) -> str:
        return "journal_unavailable"


class NotScorable(SessionError):
    status = 409

    @property
    def kind(self) -> str:
        return "no_task"


@dataclass(frozen=True)
class Limits:
    """The server's limits; None means no limit."""

    max_sessions: int = 64
    idle_timeout: float | None = 600.0
    """Seconds without a request after which a session is closed."""
    call_timeout: float | None = 10.0
    """Seconds one tool call may take before the session is reported broken."""
    session_bytes: int | None = 32 * 2**20
    """Bytes of one session's call records (its history, held in memory and journaled):
    a call that would pass it is rolled back and answered `limit_exceeded`."""
    state_bytes: int | None = 16 * 2**20
    """Bytes of the call records of the calls that changed one session's state (a cheap
    bound on how far the agent can grow the state): past it, `limit_exceeded`."""


@dataclass(frozen=True)
class Start:
    """How a session began: enough to rebuild it (the journal's first record)."""

    envs: tuple[str, ...]
    scenario: str | None = None
    options: Mapping[str, Any] | None = None
    """The spec's load options (a scenario start only: a task brings its start states)."""
    task_id: str | None = None
    task: Mapping[str, Any] | None = None
    """An inline task row (a task of a served task set is named by `task_id`)."""
    seed: int | None = None
    max_turns: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "envs": list(self.envs),
            "scenario": self.scenario,
            "options": dict(self.options) if self.options is not None else None,
            "task_id": self.task_id,
            "task": dict(self.task) if self.task is not None else None,
            "seed": self.seed,
            "max_turns": self.max_turns,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Start:
        return cls(
            envs=tuple(data["envs"]),
            scenario=data.get("scenario"),
            options=data.get("options"),
            task_id=data.get("task_id"),
            task=data.get("task"),
            seed=data.get("seed"),
            max_turns=data.get("max_turns"),
        )


Commit = Callable[[dict[str, Any], bytes, bool], None]
"""The last step of a call (`Session.run`): its record, the record's journal bytes, and
whether it changed state."""


@dataclass(frozen=True)
class Outcome:
    """What one call gave: the tool's JSON result (or JSON error) and how the episode
    stands. `infrastructure_error` set means the result is not the agent's doing."""

    result: Any
    turns: int
    done: bool = False
    ended: str | None = None
    """None while the episode goes on; `invalid_call`, `turn_limit` or `infrastructure`."""
    domain_error: bool = False
    infrastructure_error: str | None = None


def result_digest(result: Any) -> str:
    """A short digest of a call's result, journaled so a replay that diverges is caught."""
    text = json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text_digest(text)


def text_digest(text: str) -> str:
    """`result_digest` of a result whose canonical JSON text (the package's `result_text`) is known."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class QuotaExceeded(Exception):
    """A call that would take its session past `session_bytes` or `state_bytes`: rolled
    back, answered as the domain error `limit_exceeded` (docs/errors.md), neither counted
    nor journaled."""

    def __init__(self, message: str, quota: str, current: int, limit: int) -> None:
        super().__init__(message)
        self.details = {"field": quota, "current": current, "limit": limit}

    def to_json(self) -> dict[str, Any]:
        return {"error": {"kind": "limit_exceeded", "message": str(self), **self.details}}


def call_record(tool: Any, arguments: Any, digest: str) -> tuple[dict[str, Any], bytes]:
    """A call as history and the journal keep it, and its journal bytes. Arguments that
    JSON cannot carry (the package refused them, so the call changed nothing) are kept as
    `null`, with `refused: true`: a replay takes such a call as given instead of running it."""
    record = {"tool": tool, "arguments": arguments, "digest": digest}
    try:
        return record, journal.encode({"op": "call", **record})
    except (ValueError, RecursionError):  # a lone surrogate, NaN, nesting: never applied
        record = {"tool": tool, "arguments": None, "digest": digest, "refused": True}
        return record, journal.encode({"op": "call", **record})


def tool_label(tool: Any) -> str:
    """A tool name the agent sent, as an invalid call names it and the journal keeps it:
    text that encodes (a lone surrogate is escaped), at most 200 characters."""
    text = tool if isinstance(tool, str) else repr(tool)
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text[:200]


def error_kind(result: Any) -> str | None:
    """The kind of a package's JSON error, or None for a result."""
    if isinstance(result, dict) and set(result) == {"error"} and isinstance(result["error"], dict):
        return str(result["error"].get("kind"))
    return None


# =========================================================================== one session


@dataclass
class Session:
    """One episode: its environments, the agent's tools and where it stands."""

    episode_id: str
    start: Start
    served: dict[str, ServedEnv]
    task: Mapping[str, Any] | None
    envs: dict[str, Any]
    """Environment name -> the package's live `Environment`."""
    initial: dict[str, dict[str, Any]]
    routes: dict[str, tuple[str, str]]
    """Tool name as the agent calls it -> (environment, the environment's own tool)."""
    tools: list[dict[str, Any]]
    """The agent's tools as OpenAI function schemas."""
    max_turns: int
    owner: str = "http"
    """`http` (lives until closed or idle) or `ws` (lives as long as its connection; one
    restored from a journal after a restart is `http`: its connection died with the
    server, and it is reachable by id until closed or idle)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """The calls so far, as journaled: `{"tool", "arguments", "digest"}`."""
    ended: str | None = None
    broken: str | None = None
    last_active: float = 0.0
    busy: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Serialises the session's calls."""
    journal_lock: threading.Lock = field(default_factory=threading.Lock)
    """Orders journal records between a call's thread and its time limit."""
    abandoned: bool = False
    """No more journal records: a call passed its time limit, or the session was closed
    or replaced; whatever a call still running does later is not journaled."""
    log: journal.Journal | None = None
    seed_effect: dict[str, str] = field(default_factory=dict)
    recorded_bytes: int = 0
    """Journal bytes of the calls so far (`Limits.session_bytes`)."""
    written_bytes: int = 0
    """Argument bytes of the calls so far that changed state (`Limits.state_bytes`)."""

    @property
    def turns(self) -> int:
        return len(self.history)

    def observation(self) -> dict[str, Any]:
        """What the agent sees at the start: the prompt and its tools."""
        prompt = str(self.task.get("prompt", "")) if self.task is not None else ""
        return {"episode_id": self.episode_id, "prompt": prompt, "tools": self.tools}

    def states(self) -> dict[str, dict[str, Any]]:
        return {name: env.state() for name, env in self.envs.items()}

    def check_open(self) -> None:
        """EpisodeOver unless the session takes calls."""
        if self.broken is not None:
            raise EpisodeOver(f"session {self.episode_id} is broken: {self.broken}", infrastructure_error=self.broken)
        if self.ended is not None:
            raise EpisodeOver(f"the episode is over ({self.ended}): reset or close it", ended=self.ended)

    def run(self, tool: str, arguments: Any, commit: Commit | None = None) -> Outcome:
        """One call, under the session's lock. `commit(record, data, writes)` (journal it,
        check the quotas) runs before the call's changes stand; if it raises, the call is
        rolled back and the exception propagates, the history unchanged."""
        self.check_open()
        target = self.routes.get(tool) if isinstance(tool, str) else None
        parsed = _arguments(arguments)
        if target is None or parsed is None:
            label = tool_label(tool)
            problem = f"there is no tool {label!r}" if target is None else "the arguments are not a JSON object"
            result = {"error": {"kind": "invalid_call", "message": problem}}
            record, data = call_record(label, None, result_digest(result))  # replayed, None is invalid too
            if commit is not None:
                commit(record, data, False)
            self.recorded_bytes += len(data)
            return self._record(record, result, "invalid_call")
        env, own = target
        kept: list[tuple[dict[str, Any], bytes]] = []

        def keep(result: Any, text: str) -> None:
            record, data = call_record(tool, parsed, text_digest(text))
            writes = own in self.served[env].writers and error_kind(result) is None
            if commit is not None:
                commit(record, data, writes)
            self.recorded_bytes += len(data)
            self.written_bytes += len(data) if writes else 0
            kept.append((record, data))

        result, _ = self.envs[env].call_and_commit(own, parsed, keep)
        record = kept[0][0]
        kind = error_kind(result)
        if kind == "internal":
            self.broken = f"environment `{env}` failed in `{own}` (internal error)"
            return self._record(record, result, "infrastructure")
        ended = "turn_limit" if self.turns + 1 >= self.max_turns else None
        return self._record(record, result, ended, domain_error=kind is not None)

    def replay(self, record: Mapping[str, Any]) -> None:
        """A journaled call again: run it, unless it was refused for arguments JSON cannot
        carry (it changed nothing; its outcome is taken as journaled)."""
        if not record.get("refused"):
            self.run(record["tool"], record["arguments"])
            return
        self.check_open()
        kept, data = call_record(record["tool"], None, str(record["digest"]))
        kept["refused"] = True
        self.recorded_bytes += len(data)
        self._record(kept, None, "turn_limit" if self.turns + 1 >= self.max_turns else None)

    def _record(self, record: dict[str, Any], result: Any, ended: str | None, domain_error: bool = False) -> Outcome:
        self.history.append(record)
        if ended is not None and ended != "infrastructure":
            self.ended = ended
        return Outcome(
            result=result,
            turns=self.turns,
            done=ended is not None,
            ended=ended,
            domain_error=domain_error,
            infrastructure_error=self.broken if ended == "infrastructure" else None,
        )

    def score(self) -> dict[str, Any]:
        """The task's scorer on the final states (trainer channel only)."""
        base: dict[str, Any] = {"episode_id": self.episode_id, "turns": self.turns, "ended": self.ended}
        if self.broken is not None:
            return {**base, "scorable": False, "reward": None, "infrastructure_error": self.broken}
        if self.task is None:
            raise NotScorable(f"session {self.episode_id} started from a scenario: there is no task to score against")
        if self.ended in ("invalid_call", "turn_limit"):  # unsuccessful whatever the state, as Episode rules
            return {**base, "scorable": True, "reward": 0.0}
        scorer = self.served[self.start.envs[0]].package.score
        try:
            result = scorer(self.task, self.states(), self.initial)
            reward = float(result["reward"])
        except Exception as exc:  # the scorer itself failed: not the agent's doing
            return {**base, "scorable": False, "reward": None, "infrastructure_error": f"the scorer failed: {exc!r}"}
        return {**base, "scorable": True, "reward": reward, "score": result}

    def info(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "envs": list(self.start.envs),
            "task_id": self.start.task_id,
            "scenario": self.start.scenario,
            "seed": self.start.seed,
            "owner": self.owner,
            "turns": self.turns,
            "max_turns": self.max_turns,
            "ended": self.ended,
            "broken": self.broken,
            "seed_effect": self.seed_effect,
        }


def _arguments(arguments: Any) -> dict[str, Any] | None:
    """Arguments as OpenAI function calls carry them (an object or JSON text), or None."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return None
    return arguments if isinstance(arguments, dict) else None


def build_session(catalog: Catalog, episode_id: str, start: Start, owner: str) -> Session:
    """A fresh session from its start (raises SessionError for a start that does not fit)."""
    task = _task_of(catalog, start)
    try:
        served = {name: catalog.env(name) for name in start.envs}
    except CatalogError as exc:
        raise SessionError(str(exc)) from None
    if task is not None:
        starts = {name: dict(task["initial_state"][name]) for name in start.envs}
        offered = [dict(tool) for tool in task["tools"]]
        max_turns = int(start.max_turns or task.get("max_turns", MAX_TURNS))
    else:
        starts = {start.envs[0]: {"scenario": start.scenario, "changes": {}}}
        offered = [dict(tool) for tool in served[start.envs[0]].openai_tools]
        max_turns = start.max_turns or MAX_TURNS
    envs: dict[str, Any] = {}
    seed_effect: dict[str, str] = {}
    for name, spec in starts.items():
        envs[name], seed_effect[name] = _open_env(served[name], spec, start.seed, start.options)
    return Session(
        episode_id=episode_id,
        start=start,
        served=served,
        task=task,
        envs=envs,
        initial={name: env.state() for name, env in envs.items()},
        routes=_routes(offered, start.envs, served),
        tools=offered,
        max_turns=max_turns,
        owner=owner,
        seed_effect=seed_effect,
    )


def _task_of(catalog: Catalog, start: Start) -> Mapping[str, Any] | None:
    if start.task is not None:
        return start.task
    if start.task_id is None:
        return None
    try:
        return catalog.task(start.task_id)
    except CatalogError:
        raise unknown_task(catalog, start.task_id) from None


def _open_env(
    env: ServedEnv, spec: Mapping[str, Any], seed: int | None, options: Mapping[str, Any] | None = None
) -> tuple[Any, str]:
    """An environment from `{"scenario", "changes"}` and the load `options`, opened and
    reseeded by the package's own `open_environment`; the second value says what the seed did."""
    package = env.package
    try:
        live, effect = packages.open_at_start(package, spec, seed, options)
    except (package.ScenarioError, TypeError, ValueError) as exc:  # a start state the package refuses
        raise SessionError(f"`{env.name}` cannot start there: {exc}") from None
    return live, "no seed given" if effect is None else effect


def _routes(
    offered: list[dict[str, Any]], envs: tuple[str, ...], served: Mapping[str, ServedEnv]
) -> dict[str, tuple[str, str]]:
    """Each offered tool name to its environment and own name (calibrate.Episode.resolve's
    rule: `env__tool` when the task spans several environments). A one-environment
    session also answers to `env__tool`, the name MCP lists when several environments
    are served (SessionManager.tool_entries)."""
    routes: dict[str, tuple[str, str]] = {}
    for tool in offered:
        name = str(tool["function"]["name"])
        if len(envs) > 1:
            env, _, own = name.partition(sample.CROSS_SEPARATOR)
        else:
            env, own = envs[0], name
        if env in served and own in served[env].tool_names:
            routes[name] = (env, own)
            routes[f"{env}{sample.CROSS_SEPARATOR}{own}"] = (env, own)
    return routes


# =========================================================================== the manager


class SessionManager:
    """All sessions of a server: limits, journals, and the calls' worker threads."""

    def __init__(self, catalog: Catalog, limits: Limits = Limits(), data_dir: Path | None = None) -> None:
        self.catalog = catalog
        self.limits = limits
        self.data_dir = data_dir
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._reserved = 0
        self._executor = ThreadPoolExecutor(max_workers=CALL_WORKERS, thread_name_prefix="envc-call")
        self.recovery: list[str] = []
        """What restoring the data directory found (torn tails cut off), for /health."""
        self.quarantined: dict[str, str] = {}
        """Episode id -> why its journal could not be replayed (moved to `quarantine/`)."""
        self._directory_lock: journal.DirectoryLock | None = None
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            self._directory_lock = journal.DirectoryLock(data_dir)
            try:
                self._restore(data_dir)
            except BaseException:
                self._directory_lock.release()
                raise

    # ------------------------------------------------------------------ lifecycle

    def create(
        self, start: Start, episode_id: str | None = None, owner: str = "http", replace: bool = False
    ) -> Session:
        """A new session (or, with `replace`, one started over under the same id)."""
        episode_id = episode_id or new_episode_id()
        check_episode_id(episode_id)
        self._reserve(episode_id, replace, owner)
        try:
            session = build_session(self.catalog, episode_id, start, owner)
            self._journal_start(session, [])
        except BaseException:
            with self._lock:
                self._reserved -= 1
            raise
        self._install(session)
        return session

    def fork(self, source_id: str, episode_id: str | None = None) -> Session:
        """A copy of a session as it stands now, under a new id (a GRPO group's branch)."""
        source = self.get(source_id)
        episode_id = episode_id or new_episode_id()
        check_episode_id(episode_id)
        self._reserve(episode_id, False, "http")
        try:
            with source.lock:
                copy = Session(
                    episode_id=episode_id,
                    start=source.start,
                    served=source.served,
                    task=source.task,
                    envs={name: env.fork() for name, env in source.envs.items()},
                    initial=source.initial,
                    routes=source.routes,
                    tools=source.tools,
                    max_turns=source.max_turns,
                    owner="http",
                    history=list(source.history),
                    ended=source.ended,
                    broken=source.broken,
                    seed_effect=source.seed_effect,
                    recorded_bytes=source.recorded_bytes,  # the copied history counts against the quota
                    written_bytes=source.written_bytes,
                )
                self._journal_start(copy, copy.history)
        except BaseException:
            with self._lock:
                self._reserved -= 1
            raise
        self._install(copy)
        return copy

    def reset(self, episode_id: str, seed: int | None = None) -> Session:
        """The same session started over from its start (with a new seed if given)."""
        old = self.get(episode_id)
        start = old.start if seed is None else dataclasses.replace(old.start, seed=seed)
        return self.create(start, episode_id, owner=old.owner, replace=True)

    def close(self, episode_id: str) -> None:
        with self._lock:
            session = self._sessions.pop(episode_id, None)
        if session is None:
            raise UnknownSession(f"no session {episode_id!r}")
        _retire(session, delete=True)

    def close_all(self) -> None:
        """Forget every session (server shutdown); journals stay for the next start."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            _retire(session, delete=False)
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._directory_lock is not None:
            self._directory_lock.release()

    def reap(self, now: float | None = None) -> list[str]:
        """Close sessions idle longer than `idle_timeout`; their ids."""
        if self.limits.idle_timeout is None:
            return []
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [
                s.episode_id
                for s in self._sessions.values()
                if s.busy == 0 and now - s.last_active > self.limits.idle_timeout
            ]
        closed = []
        for episode_id in idle:
            try:
                self.close(episode_id)
                closed.append(episode_id)
            except UnknownSession:  # closed meanwhile
                pass
        return closed

    # ------------------------------------------------------------------ reading

    def get(self, episode_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(episode_id)
        if session is None:
            raise UnknownSession(f"no session {episode_id!r}")
        session.last_active = time.monotonic()
        return session

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._sessions)

    def infos(self) -> list[dict[str, Any]]:
        """Every session's summary, without counting as activity (idle timers go on)."""
        with self._lock:
            sessions = sorted(self._sessions.values(), key=lambda s: s.episode_id)
        return [session.info() for session in sessions]

    def count(self) -> int:
        with self._lock:
            return len(self._sessions) + self._reserved

    def state(self, episode_id: str) -> dict[str, Any]:
        session = self.get(episode_id)
        with self._locked(session):
            return {**session.info(), "states": session.states()}

    def score(self, episode_id: str) -> dict[str, Any]:
        session = self.get(episode_id)
        if session.broken is not None:  # no state is read: answer even while a stalled call holds the lock
            return session.score()
        with self._locked(session):
            return session.score()

    @contextlib.contextmanager
    def _locked(self, session: Session) -> Iterator[None]:
        """The session's lock, waited for at most `call_timeout` (a call that passed its
        limit may hold it for ever)."""
        if not session.lock.acquire(timeout=-1 if self.limits.call_timeout is None else self.limits.call_timeout):
            raise EpisodeOver(f"session {session.episode_id} is held by a call that passed its time limit")
        try:
            yield
        finally:
            session.lock.release()

    # ------------------------------------------------------------------ calls

    def submit(self, episode_id: str, tool: str, arguments: Any) -> tuple[Session, Future[Outcome]]:
        """Start a call on a worker thread (its journal record is fsynced before the
        future completes)."""
        session = self.get(episode_id)
        session.check_open()
        with self._lock:
            session.busy += 1
        return session, self._executor.submit(self._run_and_journal, session, tool, arguments)

    def call(self, episode_id: str, tool: str, arguments: Any) -> Outcome:
        """A call, waiting at most `call_timeout` seconds (blocking; for threads)."""
        session, future = self.submit(episode_id, tool, arguments)
        try:
            return future.result(timeout=self.limits.call_timeout)
        except FutureTimeout:
            return self.abandon(session, self.limits.call_timeout)
        finally:
            self._done(session)

    async def acall(self, episode_id: str, tool: str, arguments: Any, timeout: float | None = None) -> Outcome:
        """The same from the event loop, which stays free while the call runs; `timeout`
        can shorten the server's limit for one call, never lengthen it."""
        session, future = self.submit(episode_id, tool, arguments)
        limit = min((t for t in (timeout, self.limits.call_timeout) if t is not None), default=None)
        try:
            running = asyncio.wrap_future(future)
            done, _ = await asyncio.wait({running}, timeout=limit)
            if not done:
                running.add_done_callback(_ignore_outcome)
                return self.abandon(session, limit)
            return running.result()
        finally:
            self._done(session)

    def abandon(self, session: Session, seconds: float | None) -> Outcome:
        """A call past its time limit: Python cannot stop the thread, so the session is
        marked broken (journaled) and refuses further calls; the result is reported as an
        infrastructure error, not as anything the agent did. If the call finishes later,
        its result is dropped (not journaled: it was never acknowledged)."""
        reason = f"a tool call took longer than its limit of {seconds} s"
        with session.journal_lock:
            if session.broken is None:
                session.broken = reason
                session.abandoned = True
                if session.log is not None:
                    session.log.append({"op": "broken", "reason": reason})
        return Outcome(
            result={"error": {"kind": "timeout", "message": reason}},
            turns=session.turns,
            done=True,
            ended="infrastructure",
            infrastructure_error=session.broken,
        )

    def tool_entries(self) -> list[dict[str, Any]]:
        """tools.json entries of the served environments (EpisodeBackend): plain names
        when one environment is served, `env__tool` when several are."""
        if len(self.catalog.envs) == 1:
            return [dict(entry) for entry in next(iter(self.catalog.envs.values())).entries]
        return [
            {**entry, "name": f"{env.name}{sample.CROSS_SEPARATOR}{entry['name']}"}
            for env in self.catalog.envs.values()
            for entry in env.entries
        ]

    def _run_and_journal(self, session: Session, tool: str, arguments: Any) -> Outcome:
        with session.lock:
            try:
                outcome = session.run(tool, arguments, functools.partial(self._commit, session))
            except QuotaExceeded as exc:  # rolled back: the episode goes on
                return Outcome(result=exc.to_json(), turns=session.turns, domain_error=True)
            except OSError as exc:  # rolled back, and cut off the journal: neither holds the call
                return self._journal_failed(session, exc)
            if outcome.infrastructure_error is not None:
                with session.journal_lock, contextlib.suppress(OSError):  # a replay finds it broken again
                    if session.log is not None and not session.abandoned:
                        session.log.append({"op": "broken", "reason": outcome.infrastructure_error})
            return outcome

    def _commit(self, session: Session, record: dict[str, Any], data: bytes, writes: bool) -> None:
        """The last step of a call before its changes stand (Session.run's `commit`): the
        quotas, then the journal record, durable. Raising rolls the call back."""
        limits = self.limits
        if limits.session_bytes is not None and session.recorded_bytes + len(data) > limits.session_bytes:
            raise QuotaExceeded(
                f"this call would take the session past its quota of {limits.session_bytes} bytes of calls "
                f"({session.recorded_bytes} used, the call {len(data)}): nothing was changed",
                "session_bytes",
                session.recorded_bytes,
                limits.session_bytes,
            )
        if writes and limits.state_bytes is not None and session.written_bytes + len(data) > limits.state_bytes:
            raise QuotaExceeded(
                f"this call would bring the session's state past its quota of {limits.state_bytes} bytes "
                f"written ({session.written_bytes} used, the call {len(data)}): nothing was changed",
                "state_bytes",
                session.written_bytes,
                limits.state_bytes,
            )
        with session.journal_lock:
            if session.log is not None and not session.abandoned:
                session.log.write(data)

    @staticmethod
    def _journal_failed(session: Session, exc: OSError) -> Outcome:
        session.broken = f"the journal could not be written ({exc.strerror or exc}): the call was not made"
        session.abandoned = True
        return Outcome(
            result={"error": {"kind": "infrastructure", "message": session.broken}},
            turns=session.turns,
            done=True,
            ended="infrastructure",
            infrastructure_error=session.broken,
        )

    def _done(self, session: Session) -> None:
        with self._lock:
            session.busy -= 1
        session.last_active = time.monotonic()

    # ------------------------------------------------------------------ internals

    def _reserve(self, episode_id: str, replace: bool, owner: str) -> None:
        """Hold a slot for a session being built (or check the one it replaces)."""
        with self._lock:
            existing = self._sessions.get(episode_id)
            exists = existing is not None
            if existing is not None and (not replace or existing.owner != owner):
                why = "is already open" if existing.owner == owner else f"belongs to a {existing.owner} client"
                raise SessionTaken(f"session {episode_id!r} {why}")
            if not exists and len(self._sessions) + self._reserved >= self.limits.max_sessions:
                raise CapacityFull(
                    f"the server holds its maximum of {self.limits.max_sessions} sessions: close one or retry later",
                    active_sessions=len(self._sessions) + self._reserved,
                    max_sessions=self.limits.max_sessions,
                )
            self._reserved += 1

    def _install(self, session: Session) -> None:
        session.last_active = time.monotonic()
        with self._lock:
            self._reserved -= 1
            old = self._sessions.get(session.episode_id)
            self._sessions[session.episode_id] = session
        if old is not None:
            _retire(old, delete=False)  # replaced: the new journal took over its file

    def _journal_start(self, session: Session, history: list[dict[str, Any]]) -> None:
        if self.data_dir is None:
            return
        digests = {name: env.digest for name, env in session.served.items()}
        records = [{"op": "start", "start": session.start.to_json(), "packages": digests}]
        records += [{"op": "call", **call} for call in history]
        if session.broken is not None:
            records.append({"op": "broken", "reason": session.broken})
        try:
            session.log = journal.Journal.create(self.data_dir / f"{session.episode_id}{journal.SUFFIX}", records)
        except OSError as exc:
            raise JournalUnavailable(f"cannot journal session {session.episode_id}: {exc.strerror or exc}") from None

    def _restore(self, data_dir: Path) -> None:
        """Every journal in the directory replayed. A journal that cannot be trusted is
        quarantined (moved to `quarantine/`, reported in `recovery` and `quarantined`):
        never half a session, and never the other sessions down with it."""
        restored: dict[str, Session] = {}
        for path in journal.journal_paths(data_dir):
            episode_id = path.name.removesuffix(journal.SUFFIX)
            try:
                recovered = journal.recover(path)
                restored[episode_id] = self._replay(recovered)
            except journal.JournalError as exc:
                self._quarantine(path, str(exc))
                continue
            if recovered.tail == "torn":
                self.recovery.append(f"{path.name}: cut off a torn last record (a call that was never acknowledged)")
            elif recovered.tail == "unended":
                self.recovery.append(
                    f"{path.name}: the last record lacked only its line end and is whole, so it was kept "
                    "(it may have been acknowledged)"
                )
        if len(restored) > self.limits.max_sessions:
            raise journal.JournalError(
                f"{data_dir} holds {len(restored)} sessions, more than --max-sessions {self.limits.max_sessions}"
            )
        self._sessions = restored

    def _quarantine(self, path: Path, reason: str) -> None:
        """Set a journal that cannot be replayed aside, and say so."""
        episode_id = path.name.removesuffix(journal.SUFFIX)
        where = journal.quarantine(path)
        self.quarantined[episode_id] = reason
        self.recovery.append(f"{path.name}: quarantined to {where}, its session is not served: {reason}")

    def _replay(self, recovered: journal.Recovered) -> Session:
        path = recovered.path
        first, *rest = recovered.records
        if first["op"] != "start":
            raise journal.JournalError(f"{path}:1: the first record is not a start record")
        start = Start.from_json(first["start"])
        episode_id = path.name.removesuffix(journal.SUFFIX)
        for name, digest in first.get("packages", {}).items():
            served = self.catalog.envs.get(name)
            if served is None or served.digest != digest:
                why = "is not served" if served is None else "was rebuilt since (its package digest differs)"
                raise journal.JournalError(f"{path}: environment `{name}` {why}; its calls cannot be replayed")
        try:
            session = build_session(self.catalog, episode_id, start, "http")
        except SessionError as exc:
            raise journal.JournalError(f"{path}:1: {exc}") from None
        for number, record in enumerate(rest, 2):
            if record["op"] == "broken":
                session.broken = str(record["reason"])
            elif record["op"] == "call":
                self._replay_call(session, record, f"{path}:{number}")
            else:
                raise journal.JournalError(f"{path}:{number}: unknown record `{record['op']}`")
        session.log = journal.Journal.reopen(path)
        session.last_active = time.monotonic()
        return session

    @staticmethod
    def _replay_call(session: Session, record: Mapping[str, Any], where: str) -> None:
        try:
            session.replay(record)
        except EpisodeOver as exc:
            raise journal.JournalError(f"{where}: a call journaled after the episode ended: {exc}") from None
        if session.history[-1]["digest"] != record["digest"]:
            raise journal.JournalError(f"{where}: replaying the call gave a different result than the one acknowledged")


def _retire(session: Session, *, delete: bool) -> None:
    """Stop journaling a session that was closed or replaced. Under its journal lock, so
    a call still running on it can never write into a file descriptor that was closed
    (and maybe reused by another file) meanwhile: it sees `abandoned` and writes nothing."""
    with session.journal_lock:
        session.abandoned = True
        if session.log is not None:
            session.log.delete() if delete else session.log.close()


def _ignore_outcome(running: asyncio.Future[Outcome]) -> None:
    """Retrieve what an abandoned call ended with (it was reported as a timeout)."""
    if not running.cancelled():
        running.exception()


def new_episode_id() -> str:
    return f"ep-{secrets.token_hex(8)}"


def check_episode_id(episode_id: str) -> None:
    if not isinstance(episode_id, str) or not EPISODE_ID.fullmatch(episode_id):
        raise SessionError(
            f"invalid episode id {episode_id!r}: 1-128 letters, digits, '_', '.', '-', starting with a letter or digit"
        )
