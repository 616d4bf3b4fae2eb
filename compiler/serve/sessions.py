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
an internal error of an environment, or a call that runs on past the per-call time limit,
*breaks* the session: an infrastructure failure, `scorable: false`, never reward 0. A
generated body stops itself at the limit instead: the domain error `timeout`, nothing
changed, the episode goes on (only a python body, which counts no steps, runs on).

Who may reach a session (docs/serving.md#threat-model): the trainer makes sessions and
names them by episode id; the agent's channel names a session only by its `handle`, an
unguessable token the server mints (the trainer hands it out), and a WebSocket's own
session has none: only its connection reaches it. Sessions the agent's channel opens
(`owner` "http" or "ws") and the trainer's (`owner` "trainer") are counted against
separate limits, so agents can never take the trainer's capacity.

The manager holds the limits (`max_sessions`, `max_agent_sessions`, `idle_timeout`,
`call_timeout`) and, given a data directory, journals every change
(compiler/serve/journal.py) before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.build import packages
from compiler.lower.agent_limits import CALL_TIMEOUT_S
from compiler.serve import journal
from compiler.serve.call_clock import CALL_GRACE, INLINE_SLICE, MoveToWorker, expiry, inline_clock
from compiler.serve.catalog import Catalog, CatalogError, ServedEnv
from compiler.serve.records import QuotaExceeded as QuotaExceeded
from compiler.serve.records import call_record as call_record
from compiler.serve.records import error_kind as error_kind
from compiler.serve.records import result_digest as result_digest
from compiler.serve.records import text_digest as text_digest
from compiler.serve.records import tool_label as tool_label
from compiler.serve.session_errors import TASK_CHOICES as TASK_CHOICES
from compiler.serve.session_errors import CapacityFull as CapacityFull
from compiler.serve.session_errors import EpisodeOver as EpisodeOver
from compiler.serve.session_errors import JournalUnavailable as JournalUnavailable
from compiler.serve.session_errors import NotScorable as NotScorable
from compiler.serve.session_errors import SessionError as SessionError
from compiler.serve.session_errors import SessionTaken as SessionTaken
from compiler.serve.session_errors import TrainerOnly as TrainerOnly
from compiler.serve.session_errors import UnknownSession as UnknownSession
from compiler.serve.session_errors import UnknownTask as UnknownTask
from compiler.serve.session_errors import unknown_task as unknown_task
from compiler.synth import sample

EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
"""Episode ids name journal files, so they keep to a safe alphabet."""
MAX_TURNS = 32
"""Calls per session started from a scenario (a task's own `max_turns` wins)."""
CALL_WORKERS = 32
"""Threads running tool calls; a call past its time limit keeps one until it returns."""
TRAINER = "trainer"
"""The owner of sessions the trainer makes (POST /sessions, forks, in-process `create`)."""
AGENT_OWNERS = frozenset({"http", "ws"})
"""Owners of sessions the agent's channel opens: HTTP /reset, and a WebSocket's `reset`."""


@dataclass(frozen=True)
class Limits:
    """The server's limits; None means no limit."""

    max_sessions: int = 64
    """Sessions the trainer makes (POST /sessions, forks)."""
    idle_timeout: float | None = 600.0
    """Seconds without a request after which a session is closed."""
    call_timeout: float | None = CALL_TIMEOUT_S
    """Seconds one tool call may take before the session is reported broken."""
    max_agent_sessions: int = 64
    """Sessions the agent's channel opens (/reset, /ws): a separate pool, so agents holding
    all of theirs never refuse the trainer a session."""

    def limit_of(self, pool: str) -> int:
        """The limit of a pool (`trainer`, or the agent channel's: `agent`, `http`, `ws`)."""
        return self.max_sessions if pool == TRAINER else self.max_agent_sessions

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
    text: str | None = None
    """The result's JSON text as the package wrote it (`result_text`), when it did: a
    reply splices it in instead of encoding the result again."""


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
    owner: str = TRAINER
    """Who opened it: `trainer`, or the agent's channel, `http` (lives until closed or
    idle) or `ws` (lives as long as its connection; one restored from a journal after a
    restart has none: only the trainer reaches it, until closed or idle)."""
    handle: str | None = None
    """The token the agent's channel names this session by (None: no agent reaches it by
    name, as a WebSocket's own session). Unguessable, minted by the server."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """The calls so far, as journaled: `{"tool", "arguments", "digest"}` (no digest when
    the session has no journal; `"timeout": true` on a call stopped at its time limit)."""
    journaled: bool = True
    """Whether calls get a result digest: a journal replay compares them."""
    forked: bool = False
    """Whether it shares state containers with a fork (one lock for them all, which a call
    on the event loop must never wait for)."""
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

    @functools.cached_property
    def steps_counted(self) -> bool:
        """Whether every environment's bodies count their steps (no python body, and the
        class is the generated one, not a harness's subclass), so a call can be stopped,
        or moved off the event loop, wherever it is."""
        modules = (sys.modules.get(type(env).__module__) for env in self.envs.values())
        return all(getattr(module, "STEPS_COUNTED", False) is True for module in modules)

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

    def run(
        self, tool: str, arguments: Any, commit: Commit | None = None, expired: Callable[[], bool] | None = None
    ) -> Outcome:
        """One call, under the session's lock. `commit(record, data, writes)` (journal it,
        check the quotas) runs before the call's changes stand; if it raises, the call is
        rolled back and the exception propagates, the history unchanged. `expired` is the
        call's clock: the package stops a call still running when it says so (`timeout`)."""
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
            digest = text_digest(text) if self.journaled else ""  # only a journal's replay compares it
            record, data = call_record(tool, parsed, digest, stopped=error_kind(result) == "timeout")
            writes = own in self.served[env].writers and error_kind(result) is None
            if commit is not None:
                commit(record, data, writes)
            self.recorded_bytes += len(data)
            self.written_bytes += len(data) if writes else 0
            kept.append((record, data))

        result, text = self.envs[env].call_and_commit(own, parsed, keep, expired)
        record = kept[0][0]
        kind = error_kind(result)
        if kind == "internal":
            self.broken = f"environment `{env}` failed in `{own}` (internal error)"
            return self._record(record, result, "infrastructure")
        ended = "turn_limit" if self.turns + 1 >= self.max_turns else None
        return self._record(record, result, ended, domain_error=kind is not None, text=text)

    def replay_stopped(self, record: Mapping[str, Any]) -> None:
        """A journaled call that was stopped at its time limit: it changed nothing, and is
        not run again (with no limit it would run on, to some other end)."""
        self.check_open()
        kept, data = call_record(record["tool"], record["arguments"], str(record["digest"]), stopped=True)
        self.recorded_bytes += len(data)
        self._record(kept, None, "turn_limit" if self.turns + 1 >= self.max_turns else None)

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

    def _record(
        self,
        record: dict[str, Any],
        result: Any,
        ended: str | None,
        domain_error: bool = False,
        text: str | None = None,
    ) -> Outcome:
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
            text=text,
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
            "handle": self.handle,
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


def build_session(catalog: Catalog, episode_id: str, start: Start, owner: str = TRAINER) -> Session:
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
        initial={name: env.state() for name, env in envs.items()} if task is not None else {},
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
        self._handles: dict[str, str] = {}
        """Handle -> episode id, for the agent's channel."""
        self._reserved = {TRAINER: 0, "agent": 0}
        """Slots held by sessions being built, per pool."""
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

    def create(self, start: Start, episode_id: str | None = None, owner: str = TRAINER) -> Session:
        """A new session. The trainer's get a fresh handle to hand out; one the agent's
        channel opens is named by the server (`episode_id` must be None): over HTTP its id
        is its handle, a WebSocket's has none (only its connection reaches it)."""
        if owner != TRAINER and episode_id is not None:
            raise TrainerOnly("`episode_id` is the trainer's: the server names the sessions the agent opens")
        episode_id = episode_id or (new_handle() if owner == "http" else new_episode_id())
        handle = new_handle() if owner == TRAINER else episode_id if owner == "http" else None
        return self._open(start, episode_id, owner, handle, replace=False)

    def _open(self, start: Start, episode_id: str, owner: str, handle: str | None, replace: bool) -> Session:
        """Build, journal and install a session (with `replace`, over the one of that id)."""
        check_episode_id(episode_id)
        self._reserve(episode_id, replace, owner)
        try:
            session = build_session(self.catalog, episode_id, start, owner)
            session.handle = handle
            session.journaled = self.data_dir is not None
            self._journal_start(session, [])
        except BaseException:
            self._unreserve(owner)
            raise
        self._install(session)
        return session

    def fork(self, source_id: str, episode_id: str | None = None) -> Session:
        """A copy of a session as it stands now, under a new id (a GRPO group's branch)."""
        source = self.get(source_id)
        episode_id = episode_id or new_episode_id()
        check_episode_id(episode_id)
        self._reserve(episode_id, False, TRAINER)
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
                    owner=TRAINER,
                    handle=new_handle(),
                    history=list(source.history),
                    journaled=source.journaled,
                    forked=True,
                    ended=source.ended,
                    broken=source.broken,
                    seed_effect=source.seed_effect,
                    recorded_bytes=source.recorded_bytes,  # the copied history counts against the quota
                    written_bytes=source.written_bytes,
                )
                source.forked = True
                self._journal_start(copy, copy.history)
        except BaseException:
            self._unreserve(TRAINER)
            raise
        self._install(copy)
        return copy

    def reset(self, episode_id: str, seed: int | None = None) -> Session:
        """The same session started over from its start (with a new seed if given), under
        the same id and handle: the trainer's decision, never the agent's."""
        old = self.get(episode_id)
        start = old.start if seed is None else dataclasses.replace(old.start, seed=seed)
        return self._open(start, episode_id, old.owner, old.handle, replace=True)

    def close(self, episode_id: str) -> None:
        with self._lock:
            session = self._sessions.pop(episode_id, None)
            if session is not None and session.handle is not None:
                self._handles.pop(session.handle, None)
        if session is None:
            raise UnknownSession(f"no session {episode_id!r}")
        _retire(session, delete=True)

    def close_all(self) -> None:
        """Forget every session (server shutdown); journals stay for the next start."""
        with self._lock:
            sessions, self._sessions, self._handles = list(self._sessions.values()), {}, {}
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

    def by_handle(self, handle: str) -> Session:
        """The session the agent's channel names by `handle`. A session no agent may name
        (a WebSocket's own) is unknown here, as one that does not exist."""
        with self._lock:
            episode_id = self._handles.get(handle) if isinstance(handle, str) else None
        if episode_id is None:
            raise UnknownSession(f"no session {handle!r}")
        return self.get(episode_id)

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._sessions)

    def infos(self) -> list[dict[str, Any]]:
        """Every session's summary, without counting as activity (idle timers go on)."""
        with self._lock:
            sessions = sorted(self._sessions.values(), key=lambda s: s.episode_id)
        return [session.info() for session in sessions]

    def count(self, pool: str | None = None) -> int:
        """Sessions open (and being built): all, or those of one pool (`trainer`, `agent`)."""
        with self._lock:
            if pool is None:
                return len(self._sessions) + sum(self._reserved.values())
            return self._held(pool)

    def _held(self, pool: str) -> int:
        """Under `_lock`: the sessions of `pool` open or being built."""
        open_ = sum(1 for s in self._sessions.values() if _pool(s.owner) == pool)
        return open_ + self._reserved[pool]

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

    def submit(
        self, episode_id: str, tool: str, arguments: Any, limit: float | None = None
    ) -> tuple[Session, Future[Outcome]]:
        """Start a call on a worker thread (its journal record is fsynced before the
        future completes); the package stops it `limit` seconds from now."""
        session = self.get(episode_id)
        session.check_open()
        with self._lock:
            session.busy += 1
        return session, self._executor.submit(self._run_and_journal, session, tool, arguments, expiry(limit))

    def call(self, episode_id: str, tool: str, arguments: Any) -> Outcome:
        """A call, stopped at `call_timeout` seconds (blocking; for threads)."""
        limit = self.limits.call_timeout
        session, future = self.submit(episode_id, tool, arguments, limit)
        try:
            return future.result(timeout=None if limit is None else limit + CALL_GRACE)
        except FutureTimeout:
            return self.abandon(session, limit)
        finally:
            self._done(session)

    async def acall(self, episode_id: str, tool: str, arguments: Any, timeout: float | None = None) -> Outcome:
        """The same from the event loop, which stays free while the call runs; `timeout`
        can shorten the server's limit for one call, never lengthen it. The call stops
        itself at the limit; one still running `CALL_GRACE` later gives its session up.
        A call first runs on the loop itself (`inline`); one that takes longer than
        `INLINE_SLICE` goes to a worker thread."""
        limit = min((t for t in (timeout, self.limits.call_timeout) if t is not None), default=None)
        done = self.inline(episode_id, tool, arguments)
        if done is not None:
            return done
        session, future = self.submit(episode_id, tool, arguments, limit)
        try:
            running = asyncio.wrap_future(future)
            if limit is None:
                return await running
            overdue = asyncio.get_running_loop().call_later(limit + CALL_GRACE, running.cancel)
            try:
                return await running
            except asyncio.CancelledError:
                if overdue.when() <= asyncio.get_running_loop().time():  # our own timer gave up on it
                    return self.abandon(session, limit)
                raise  # the client went away
            finally:
                overdue.cancel()
        finally:
            self._done(session)

    def inline(self, episode_id: str, tool: str, arguments: Any) -> Outcome | None:
        """Run a call right here (on the event loop) if it can be moved away: its bodies
        count their steps, it has no journal to fsync and its session is free. Past
        `INLINE_SLICE` the package rolls it back (`MoveToWorker`): None, as for a call
        that cannot run here; the caller then runs it on a worker thread."""
        session = self.get(episode_id)
        session.check_open()
        if session.log is not None or session.forked or not session.steps_counted:
            return None
        if not session.lock.acquire(blocking=False):
            return None
        try:
            commit = functools.partial(self._commit, session)
            outcome = session.run(tool, arguments, commit, inline_clock(time.monotonic() + INLINE_SLICE))
        except MoveToWorker:
            return None
        except QuotaExceeded as exc:  # rolled back: the episode goes on
            outcome = Outcome(result=exc.to_json(), turns=session.turns, domain_error=True)
        finally:
            session.lock.release()
        session.last_active = time.monotonic()
        return outcome

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

    def _run_and_journal(
        self, session: Session, tool: str, arguments: Any, expired: Callable[[], bool] | None
    ) -> Outcome:
        with session.lock:
            try:
                outcome = session.run(tool, arguments, functools.partial(self._commit, session), expired)
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
        """Hold a slot of the owner's pool for a session being built (or check the one it
        replaces): the trainer's and the agent's channel have separate limits."""
        pool, limit = _pool(owner), self.limits.limit_of(owner)
        with self._lock:
            existing = self._sessions.get(episode_id)
            if existing is not None and not replace:
                raise SessionTaken(f"session {episode_id!r} is already open")
            held = self._held(pool)
            if existing is None and held >= limit:
                who = "the trainer's" if pool == TRAINER else "the agent channel's"
                raise CapacityFull(
                    f"the server holds {who} maximum of {limit} sessions: close one or retry later",
                    pool=pool,
                    active_sessions=held,
                    max_sessions=limit,
                )
            self._reserved[pool] += 1

    def _unreserve(self, owner: str) -> None:
        with self._lock:
            self._reserved[_pool(owner)] -= 1

    def _install(self, session: Session) -> None:
        session.last_active = time.monotonic()
        with self._lock:
            self._reserved[_pool(session.owner)] -= 1
            old = self._sessions.get(session.episode_id)
            self._sessions[session.episode_id] = session
            if session.handle is not None:
                self._handles[session.handle] = session.episode_id
        if old is not None:
            _retire(old, delete=False)  # replaced: the new journal took over its file

    def _journal_start(self, session: Session, history: list[dict[str, Any]]) -> None:
        if self.data_dir is None:
            return
        digests = {name: env.digest for name, env in session.served.items()}
        start = {"op": "start", "start": session.start.to_json(), "packages": digests}
        records = [{**start, "owner": session.owner, "handle": session.handle}]
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
        for pool, flag in ((TRAINER, "--max-sessions"), ("agent", "--max-agent-sessions")):
            held, limit = sum(1 for s in restored.values() if _pool(s.owner) == pool), self.limits.limit_of(pool)
            if held > limit:
                raise journal.JournalError(f"{data_dir} holds {held} {pool} sessions, more than {flag} {limit}")
        self._sessions = restored
        self._handles = {s.handle: s.episode_id for s in restored.values() if s.handle is not None}

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
            session = build_session(self.catalog, episode_id, start, str(first.get("owner", TRAINER)))
        except SessionError as exc:
            raise journal.JournalError(f"{path}:1: {exc}") from None
        session.handle = _restored_handle(first, session.owner)
        for number, record in enumerate(rest, 2):
            if record["op"] == "broken":
                session.broken = str(record["reason"])
            elif record["op"] == "call" and record.get("timeout") is True:
                session.replay_stopped(record)
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


def _pool(owner: str) -> str:
    """The capacity pool of a session's owner: the trainer's, or the agent channel's."""
    return TRAINER if owner == TRAINER else "agent"


def _restored_handle(first: Mapping[str, Any], owner: str) -> str | None:
    """A restored session's handle: the journaled one (the trainer may have handed it
    out). A WebSocket's session has none (its connection died with the server); a
    journal from before handles existed gets a fresh one, shown to the trainer only."""
    if owner == "ws":
        return None
    handle = first.get("handle")
    return str(handle) if handle else new_handle()


def new_episode_id() -> str:
    return f"ep-{secrets.token_hex(8)}"


def new_handle() -> str:
    """An unguessable name for the agent's channel (128 random bits), also a valid episode id."""
    return f"hd-{secrets.token_hex(16)}"


def check_episode_id(episode_id: str) -> None:
    if not isinstance(episode_id, str) or not EPISODE_ID.fullmatch(episode_id):
        raise SessionError(
            f"invalid episode id {episode_id!r}: 1-128 letters, digits, '_', '.', '-', starting with a letter or digit"
        )
