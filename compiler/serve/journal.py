"""An append-only journal per session, so a server killed at any instant (SIGKILL,
power loss) comes back with every acknowledged call.

A journal is one file, `<episode id>.jsonl`, one record per line: the CRC-32 of the
record's JSON (8 hex digits), a space, the JSON. The first record says how the session
started; each later one is a call, in order. A record is written and synced to disk
(fdatasync) before the server answers the request that made it, so an acknowledged call is on disk. Replaying
the records from the start state rebuilds the session exactly (the environments are
deterministic: generated code reads no clock).

Reading back tells apart the two ways a file can be damaged:
- a *torn tail*, the last line without its newline: a write the crash interrupted, whose
  request was therefore never answered; it is cut off and reported;
- a *corrupt record*, a whole line whose checksum or JSON is wrong: the file was changed
  behind the server's back; nothing of that session is restored (JournalError names the
  file and line), never half of it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUFFIX = ".jsonl"


class JournalError(ValueError):
    """A journal that cannot be trusted (corrupt record, unreadable file)."""


@dataclass(frozen=True)
class Recovered:
    """The records of one journal, and whether a torn tail was cut off."""

    path: Path
    records: list[dict[str, Any]]
    tail: str = ""
    """"" (the file ended with a whole record), `torn` (a cut-off last record, removed:
    never acknowledged, since a record is synced whole before its call is answered), or
    `unended` (a whole last record without its line end: kept, and the line ended)."""

    @property
    def torn_tail(self) -> bool:
        return self.tail == "torn"


_RECORD_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""Made once: `json.dumps` with options builds an encoder on every call."""


def encode(record: dict[str, Any]) -> bytes:
    """One record's line; ValueError for what JSON cannot carry (NaN, a lone surrogate)."""
    data = _RECORD_JSON.encode(record).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(data), data)


def decode(line: bytes, where: str) -> dict[str, Any]:
    """One whole line back to its record; JournalError if it is not what was written."""
    head, _, data = line.rstrip(b"\n").partition(b" ")
    try:
        expected = int(head, 16)
    except ValueError:
        raise JournalError(f"{where}: not a journal record (no checksum)") from None
    if len(head) != 8 or zlib.crc32(data) != expected:
        raise JournalError(f"{where}: checksum mismatch: the record was changed or damaged")
    try:
        record = json.loads(data)
    except ValueError as exc:
        raise JournalError(f"{where}: the record is not JSON: {exc}") from None
    if not isinstance(record, dict) or "op" not in record:
        raise JournalError(f"{where}: a record is an object with an `op`")
    return record


class Journal:
    """An open journal file, appended to and fsynced record by record."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def create(cls, path: Path, records: list[dict[str, Any]]) -> Journal:
        """A journal holding exactly `records`, replacing any file at `path` atomically
        (written beside it, fsynced, renamed, directory fsynced)."""
        temporary = path.with_name(f".{path.name}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"".join(encode(record) for record in records))
            os.fsync(fd)
            os.replace(temporary, path)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise
        os.close(fd)
        _fsync_directory(path.parent)
        return cls(path, os.open(path, os.O_WRONLY | os.O_APPEND))

    @classmethod
    def reopen(cls, path: Path) -> Journal:
        return cls(path, os.open(path, os.O_WRONLY | os.O_APPEND))

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and make it durable before returning."""
        self.write(encode(record))

    def write(self, data: bytes) -> None:
        """Write one encoded record and make it durable before returning. If that fails,
        the file is cut back to where it ended (the record is not in it, as the failed
        call is not in the session) and the OSError propagates."""
        end = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            written = os.write(self._fd, data)
            if written != len(data):  # a full disk: never leave half a record to be replayed
                raise OSError(f"{self.path}: short write ({written} of {len(data)} bytes)")
            _sync_data(self._fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, end)
            raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Close and remove the file (the session ended)."""
        self.close()
        self.path.unlink(missing_ok=True)
        _fsync_directory(self.path.parent)


class DirectoryLock:
    """One server per data directory: an exclusive flock on the directory itself (no
    file to leave behind; the kernel drops it when the process dies, SIGKILL included).
    Two servers appending to the same journals would interleave their records."""

    def __init__(self, directory: Path) -> None:
        self._fd = os.open(directory, os.O_RDONLY)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise JournalError(f"{directory} is in use by another envc serve") from None

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the lock
            self._fd = -1


def recover(path: Path) -> Recovered:
    """The records of a journal; a torn last line is cut off the file (and reported in
    the result), a corrupt whole line raises JournalError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"{path}: cannot read: {exc.strerror or exc}") from None
    records: list[dict[str, Any]] = []
    good = 0
    for number, line in enumerate(_lines(data), 1):
        if not line.endswith(b"\n"):
            whole = _whole_record(line, f"{path}:{number}")
            if whole is not None:
                records.append(whole)
                _end_line(path)
                return Recovered(path, records, tail="unended")
            if not records:
                raise JournalError(f"{path}:1: the start record is incomplete")
            _truncate(path, good)
            return Recovered(path, records, tail="torn")
        records.append(decode(line, f"{path}:{number}"))
        good += len(line)
    if not records:
        raise JournalError(f"{path}: empty journal (no start record)")
    return Recovered(path, records)


def _whole_record(line: bytes, where: str) -> dict[str, Any] | None:
    """The record of a last line that lacks only its line end, or None if it is cut off."""
    try:
        return decode(line, where)
    except JournalError:
        return None


def _end_line(path: Path) -> None:
    with path.open("ab") as file:
        file.write(b"\n")
        file.flush()
        os.fsync(file.fileno())


QUARANTINE = "quarantine"
"""The folder of a data directory where journals that cannot be replayed are set aside."""


def quarantine(path: Path) -> Path:
    """Move a journal that cannot be replayed out of the way (kept for a person to read,
    never replayed again); where it went."""
    folder = path.parent / QUARANTINE
    folder.mkdir(exist_ok=True)
    target = folder / path.name
    os.replace(path, target)
    _fsync_directory(path.parent)
    return target


def journal_paths(directory: Path) -> list[Path]:
    """The journals in a data directory, in name order (left-over temporaries of an
    interrupted create are removed: their session was never acknowledged)."""
    for temporary in directory.glob(f".*{SUFFIX}.tmp"):
        temporary.unlink()
    return sorted(directory.glob(f"*{SUFFIX}"))


def _lines(data: bytes) -> Iterator[bytes]:
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end + 1
        yield data[start:stop]
        start = stop


def _truncate(path: Path, size: int) -> None:
    with path.open("r+b") as file:
        file.truncate(size)
        file.flush()
        os.fsync(file.fileno())


def _sync_data(fd: int) -> None:
    """fdatasync where there is one: it flushes the appended bytes and the file's new
    size, all a replay needs, without the timestamps fsync also writes."""
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
