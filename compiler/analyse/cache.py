"""Analysis outcomes remembered by their inputs (what `envc check` prints of a spec): a
spec none of whose files changed since it was last checked is not analysed again.

An entry is kept per spec path (as given, from the working directory) and version of
envc. It records every input of the outcome with the SHA-256 of its bytes: the spec,
the prototypes it extends, the data files it reads (a missing one as missing), and the
places looked at for a prototype that were empty (a file appearing there would be
loaded instead). It is used only when every input still has those bytes, so editing,
adding or removing any of them analyses the spec again. A newer outcome replaces the
entry, so the folder holds one entry per spec checked. Entries are written to a
temporary name and renamed; one that cannot be read or parsed is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from compiler import project
from compiler.analyse import AnalysisResult, analyse_loaded
from compiler.diagnostics import Diagnostic
from compiler.front.cache import store_entry
from compiler.front.load import Loaded, load_file

CHECK_CACHE_FORMAT = "envc-check-1"
CHECK_CACHE_SWITCH = "ENVC_CHECK_CACHE"
"""`ENVC_CHECK_CACHE=0` analyses every spec every time and writes no entry."""


@dataclass(frozen=True)
class Checked:
    """What checking one spec found, and the text of the specs its diagnostics point into."""

    diagnostics: list[Diagnostic]
    sources: dict[str, str]


def check_file(path: Path) -> Checked:
    """The spec's diagnostics: remembered when its inputs are unchanged, else analysed
    (and remembered for next time)."""
    return recall(path) or analyse_and_remember(path)


def analyse_and_remember(path: Path) -> Checked:
    loaded = load_file(path)
    result = analyse_loaded(loaded)
    _write(_entry(path), _payload(loaded, result))
    return Checked(result.diagnostics, result.sources)


def recall(path: Path) -> Checked | None:
    """The remembered outcome, if there is one and every input is as it was."""
    entry = _entry(path)
    if entry is None:
        return None
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        inputs: dict[str, str | None] = data["inputs"]
        texts = {name: _current_bytes(name) for name in inputs}
        if any(_digest(texts[name]) != digest for name, digest in inputs.items()):
            return None
        if any(Path(place).is_file() for place in data["absent"]):
            return None
        diagnostics = [_diagnostic(item) for item in data["diagnostics"]]
        sources = {name: _text(texts[name]) for name in data["sources"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Checked(diagnostics, sources)


def _payload(loaded: Loaded, result: AnalysisResult) -> dict[str, Any]:
    read = {name: text.encode("utf-8", "surrogatepass") for name, text in loaded.sources.items()}
    names = sorted({*result.sources, *read, *loaded.data_files})
    return {
        "format": CHECK_CACHE_FORMAT,
        "inputs": {name: _digest(read[name] if name in read else _current_bytes(name)) for name in names},
        "absent": sorted(loaded.absent),
        "sources": sorted(result.sources),
        "diagnostics": [asdict(d) for d in result.diagnostics],
    }


def _entry(path: Path) -> Path | None:
    if os.environ.get(CHECK_CACHE_SWITCH, "1") == "0":
        return None
    digest = hashlib.sha256(CHECK_CACHE_FORMAT.encode())
    for part in (project.compiler_fingerprint(), os.getcwd(), str(path)):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return project.cache_folder() / "check" / f"{digest.hexdigest()}.json"


def _current_bytes(name: str) -> bytes | None:
    try:
        return Path(name).read_bytes()
    except OSError:
        return None


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _text(data: bytes | None) -> str:
    if data is None:
        raise ValueError("a source is missing")
    return data.decode("utf-8")


def _diagnostic(item: dict[str, Any]) -> Diagnostic:
    return Diagnostic(**{**item, "notes": tuple(item["notes"])})


def _write(entry: Path | None, payload: dict[str, Any]) -> None:
    if entry is not None:
        store_entry(entry, json.dumps(payload).encode("utf-8"))
