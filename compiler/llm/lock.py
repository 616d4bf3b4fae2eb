"""`envc.lock`: every accepted fill, so a build needs no model and is the same everywhere.

One JSON file beside the specs, committed. An entry is keyed by the spec (relative to
the lock's folder) and the declaration (`tool suggest_tags`, `fn score`, `draft`) and
records the sha256 of the first request envc would send for it (`request_sha`: model,
messages, every sampling parameter, attempt 0), the body the model wrote, which attempt
was accepted (and that request's own hash), and provenance. An entry is *current* when
the request envc would send now has the recorded hash: then the body is used as it is
and nothing is sent. A changed spec, prompt, model or sampling parameter changes the
hash, so a stale answer is never served. The key is never part of it.

The file is written atomically (temp file, then rename) and only when it changes, with
sorted keys and a trailing newline, so its diffs are small and reviewable.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostic

LOCK_NAME = "envc.lock"
VERSION = 1
DRAFT_DECL = "draft"
"""The declaration key of a spec written by `envc draft` (beside `tool NAME` keys of fills)."""
FILL_KINDS = ("tool", "fn")
"""The first word of a fill's declaration key (`tool NAME`, `fn NAME`). Other keys belong to
the lock's other users (`draft`, `edges`, `task request …`): `envc lock` leaves them alone."""


def is_fill(decl: str) -> bool:
    return decl.split(" ", 1)[0] in FILL_KINDS


@dataclass(frozen=True)
class AttemptRecord:
    """One request of a fill: its hash, and the stage its answer failed (or "")."""

    attempt: int
    request_sha: str
    failure: str = ""
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class LockEntry:
    request_sha: str
    body: str
    model: str
    attempt: int = 0
    accepted_request_sha: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Response model, finish reason, system fingerprint, usage, envc version, checks
    run, fill time and the attempts (`AttemptRecord`s) that led to the body."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: Any) -> LockEntry | None:
        if not isinstance(data, dict):
            return None
        try:
            request_sha, body, model = data["request_sha"], data["body"], data["model"]
            attempt, accepted = data.get("attempt", 0), data.get("accepted_request_sha", "")
            provenance = data.get("provenance", {})
        except KeyError:
            return None
        if not all(isinstance(v, str) for v in (request_sha, body, model, accepted)):
            return None
        if not isinstance(attempt, int) or not isinstance(provenance, dict):
            return None
        return LockEntry(request_sha, body, model, attempt, accepted, provenance)


@dataclass
class Lock:
    """The lock of one folder of specs; `entries[spec][declaration]`."""

    path: Path
    entries: dict[str, dict[str, LockEntry]] = field(default_factory=dict)
    guard: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def get(self, spec: str, decl: str) -> LockEntry | None:
        return self.entries.get(spec, {}).get(decl)

    def put(self, spec: str, decl: str, entry: LockEntry) -> None:
        with self.guard:
            self.entries.setdefault(spec, {})[decl] = entry

    def drop(self, spec: str, decl: str) -> None:
        with self.guard:
            self.entries.get(spec, {}).pop(decl, None)
            if spec in self.entries and not self.entries[spec]:
                del self.entries[spec]

    def dumps(self) -> str:
        data = {
            "version": VERSION,
            "note": "written by envc (docs/llm.md); commit it, edit it only with `envc lock --update`",
            "fills": {
                spec: {decl: entry.to_json() for decl, entry in sorted(decls.items())}
                for spec, decls in sorted(self.entries.items())
                if decls
            },
        }
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def lock_path(spec: Path) -> Path:
    """The lock beside a spec: one per folder of specs."""
    return spec.parent / LOCK_NAME


def spec_key(spec: Path, lock: Path) -> str:
    """How the lock names a spec: relative to the lock's folder, with forward slashes, so
    the key is the same on every machine."""
    try:
        return spec.resolve().relative_to(lock.parent.resolve()).as_posix()
    except ValueError:
        return spec.name


def read_lock(path: Path) -> tuple[Lock, list[Diagnostic]]:
    """The lock at `path` (empty when there is none), and E6106 when it cannot be read."""
    lock = Lock(path)
    if not path.exists():
        return lock, []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return lock, [Diagnostic("E6106", f"cannot read {path.name}: {exc}", str(path), 1, 1)]
    fills = data.get("fills") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(fills, dict):
        message = f"{path.name} is not an envc lock of version {VERSION}"
        return lock, [Diagnostic("E6106", message, str(path), 1, 1)]
    problems: list[Diagnostic] = []
    for spec, decls in fills.items():
        for decl, raw in decls.items() if isinstance(decls, dict) else []:
            entry = LockEntry.from_json(raw)
            if entry is None:
                problems.append(
                    Diagnostic("E6106", f"{path.name}: entry `{spec}` / `{decl}` is malformed", str(path), 1, 1)
                )
            else:
                lock.entries.setdefault(str(spec), {})[str(decl)] = entry
    return lock, problems


_WRITING = threading.Lock()
"""Held while a lock file is read, merged and replaced: drafts of a batch write from threads."""


def write_lock(lock: Lock, specs: set[str] | None = None) -> bool:
    """Write the lock if its text changed; whether it was written.

    The file on disk is read again first and only the entries of `specs` (all, when None)
    are taken from memory, so two runs filling different specs do not drop each other's."""
    with _WRITING, lock.guard:
        merged = Lock(lock.path)
        on_disk, _ = read_lock(lock.path)
        merged.entries = {spec: dict(decls) for spec, decls in on_disk.entries.items()}
        for spec in set(merged.entries) | set(lock.entries):
            if specs is None or spec in specs:
                if spec in lock.entries and lock.entries[spec]:
                    merged.entries[spec] = dict(lock.entries[spec])
                else:
                    merged.entries.pop(spec, None)
        text = merged.dumps()
        try:
            if lock.path.read_text(encoding="utf-8") == text:
                return False
        except OSError:
            pass
        if not merged.entries and not lock.path.exists():
            return False
        _write_atomically(lock.path, text)
        return True


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
