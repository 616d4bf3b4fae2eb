"""A call as a session's history and its journal keep it (compiler/serve/sessions.py):
its record and journal bytes, the digest a replay compares, the label of a tool the agent
named, the kind of error a result is, and the quota a record may break."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from compiler.serve import journal


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


def call_record(tool: Any, arguments: Any, digest: str, stopped: bool = False) -> tuple[dict[str, Any], bytes]:
    """A call as history and the journal keep it, and its journal bytes. Arguments that
    JSON cannot carry (the package refused them, so the call changed nothing) are kept as
    `null`, with `refused: true`: a replay takes such a call as given instead of running it.
    A call `stopped` at its time limit is marked `timeout: true`: a replay does not run it
    again (it changed nothing)."""
    record: dict[str, Any] = {"tool": tool, "arguments": arguments, "digest": digest}
    if stopped:
        record["timeout"] = True
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
