"""The parse cache: parsed modules remembered by content, in this process and across
runs (`parse_cached`, what loading a spec and its prototypes calls).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from compiler import ir, project
from compiler.front.parse import ParseResult, gc_paused, parse_source

PARSE_CACHE_FORMAT = b"envc-parse-1"
PARSE_CACHE_FILES = 2000
"""Entries kept on disk; beyond that the oldest half is removed (specs edited in a loop
leave one entry per version)."""
PARSE_CACHE_IN_MEMORY_BYTES = 64 * 1024**2
"""JSON kept in memory for this run (a 5,000-line spec's IR is about 2 MB of it)."""


@dataclass
class ParseCache:
    """Parsed modules remembered by content, in this process and across runs.

    The key is a hash of the compiler's fingerprint (so an entry written by another
    version of envc is never found), the library versions the IR's JSON depends on, the
    spec's path (positions and `file` name it) and its text. An entry is the module's
    JSON (pydantic's own round trip: loading it gives fresh objects, which later stages
    may change in place) after a header and the payload's SHA-256: a truncated or
    corrupted file is a miss and is removed. Files are written to a temporary name and
    renamed, so readers never see half an entry. Only clean parses are kept; a spec
    with syntax errors is parsed every time (its diagnostics come from the parser).
    """

    folder: Path | None
    memory: dict[str, bytes] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def parse(self, source: str, path: str, remember: bool = True) -> ParseResult:
        """The text's module, from the cache or parsed. A clean parse is remembered if
        `remember` (a prototype's: parsed again for every spec that extends it) or if
        Lark made it (the fast parser refused the text; reading the JSON back is about
        five times faster). Otherwise it is not: writing a module's JSON costs as much
        as the fast parser took to build it (40 ms on the 5,000-line spec of
        `benchmarks/frontend.py`), and reading it back would save less than that."""
        key = self.key(source, path)
        payload = self.memory.get(key) or self._read(key)
        if payload is not None:
            with gc_paused():
                module = _module_from_json(payload)
            if module is not None:
                self.hits += 1
                self._remember(key, payload)
                return ParseResult(module, [])
            self._discard(key)
        self.misses += 1
        result = parse_source(source, path)
        if result.module is not None and not result.diagnostics and (remember or result.by_lark):
            payload = result.module.model_dump_json().encode("utf-8")
            self._remember(key, payload)
            self._write(key, payload)
        return result

    @staticmethod
    def key(source: str, path: str) -> str:
        digest = hashlib.sha256(PARSE_CACHE_FORMAT)
        for part in (project.compiler_fingerprint(), _library_versions(), path, source):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        return digest.hexdigest()

    def _remember(self, key: str, payload: bytes) -> None:
        self.memory.pop(key, None)
        self.memory[key] = payload  # the newest last: the oldest go first
        held = sum(len(kept) for kept in self.memory.values())
        while held > PARSE_CACHE_IN_MEMORY_BYTES and len(self.memory) > 1:
            held -= len(self.memory.pop(next(iter(self.memory))))

    def _entry(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}.json"

    def _read(self, key: str) -> bytes | None:
        entry = self._entry(key)
        if entry is None:
            return None
        try:
            data = entry.read_bytes()
        except OSError:
            return None
        header, _, payload = data.partition(b"\n")
        if header != PARSE_CACHE_FORMAT + b" " + hashlib.sha256(payload).hexdigest().encode():
            self._discard(key)
            return None
        return payload

    def _write(self, key: str, payload: bytes) -> None:
        entry = self._entry(key)
        if entry is None:
            return
        data = PARSE_CACHE_FORMAT + b" " + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        if store_entry(entry, data):
            self._prune(entry.parent)

    def _discard(self, key: str) -> None:
        self.memory.pop(key, None)
        entry = self._entry(key)
        if entry is not None:
            with contextlib.suppress(OSError):
                entry.unlink()

    @staticmethod
    def _prune(folder: Path) -> None:
        entries = list(folder.glob("*.json"))
        if len(entries) <= PARSE_CACHE_FILES:
            return
        aged: list[tuple[float, Path]] = []
        for entry in entries:
            with contextlib.suppress(OSError):  # another process may have removed it
                aged.append((entry.stat().st_mtime, entry))
        for _, entry in sorted(aged)[: len(aged) // 2]:
            with contextlib.suppress(OSError):
                entry.unlink()


def store_entry(entry: Path, data: bytes) -> bool:
    """Write a cache entry under a temporary name and rename it, so readers never see half
    of one; whether it was written. A cache only saves time: a folder that cannot be
    written leaves every result to be worked out again, the same."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
    except OSError:
        return False
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, entry)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    return True


def _module_from_json(payload: bytes) -> ir.Module | None:
    try:
        return ir.Module.model_validate_json(payload)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None


@functools.cache
def _library_versions() -> str:
    import lark
    import pydantic

    return f"lark {lark.__version__}, pydantic {pydantic.VERSION}"


def parse_cache_folder() -> Path | None:
    """`$XDG_CACHE_HOME/envc/parse` (`~/.cache/envc/parse`); `ENVC_PARSE_CACHE=0` keeps
    the cache in memory only."""
    if os.environ.get("ENVC_PARSE_CACHE", "1") == "0":
        return None
    return project.cache_folder() / "parse"


@functools.cache
def parse_cache() -> ParseCache:
    """The process's cache (the disk folder is fixed when first used)."""
    return ParseCache(parse_cache_folder())


def parse_cached(source: str, path: str, remember: bool = True) -> ParseResult:
    """`parse_source`, remembered by content (`ParseCache.parse` says when): many specs
    extending one prototype parse it once, in this run and the next."""
    return parse_cache().parse(source, path, remember)
