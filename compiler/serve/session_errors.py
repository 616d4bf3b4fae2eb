"""What a session request can fail with (compiler/serve/sessions.py): each a clear reason
the routes turn into an HTTP status and a JSON error body (docs/serving.md, "Routes")."""

from __future__ import annotations

from typing import Any

from compiler.serve.catalog import Catalog


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


class TrainerOnly(SessionError):
    """Something only the trainer decides, asked for on the agent's channel: a task of its
    own, a turn or time limit, an episode id (to restart, replace or reach a session)."""

    status = 403

    @property
    def kind(self) -> str:
        return "trainer_only"


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
